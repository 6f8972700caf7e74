/*
 * mismatch.h - a gang whose sources disagree (a PodGroup's minMember against
 * its RayCluster's head and worker groups, say) is told about once: a Warning
 * Event GangSpecMismatch with the engine's words on each of its pods, again
 * only when the words change, or after the disagreement went away and came
 * back. Housekeeping runs it on the leader.
 */
#ifndef MUSTER_MISMATCH_H
#define MUSTER_MISMATCH_H

#include "cache.h"
#include "events.h"

struct gang_mismatch;

struct gang_mismatch *gang_mismatch_new(void);
void gang_mismatch_free(struct gang_mismatch *m); /* NULL is a no-op */

/* Look at every gang (takes the cache lock) and post what is new. Returns the Events posted. */
size_t gang_mismatch_report(struct gang_mismatch *m, struct cache *c, struct ext_events *ev);

#endif
