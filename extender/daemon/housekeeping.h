/*
 * housekeeping.h - the daemon's periodic writer. Every two seconds it writes
 * each Queue's usage to its status subresource (only what changed), so
 * `kubectl get queues` shows allocated GPUs and pending gangs; after a Queue,
 * RayCluster or PodGroup changed it hands waiting pods back to kube-scheduler;
 * every few periods it deletes reservation pods whose GPU group holds no pod.
 * With leaderElection.enabled it does all this only while this replica's
 * kube-scheduler holds the Lease (lease.h); gauge muster_leader says which.
 */
#ifndef MUSTER_HOUSEKEEPING_H
#define MUSTER_HOUSEKEEPING_H

struct ext_daemon;
struct housekeeping;

struct housekeeping *housekeeping_start(struct ext_daemon *d);
void housekeeping_stop(struct housekeeping *qs);

/*
 * The same without the thread, for tests: housekeeping_new makes one whose
 * periods the caller runs, housekeeping_tick runs period number tick (the
 * reaper runs on every third, from 0), housekeeping_free frees it.
 */
struct housekeeping *housekeeping_new(struct ext_daemon *d);
void housekeeping_tick(struct housekeeping *qs, unsigned tick);
void housekeeping_free(struct housekeeping *qs);

#endif
