/*
 * gpu_share.h - making a planned share real on the node, before its Binding
 * (docs/gpu-sharing.md).
 *
 * For each GPU group a committed member uses, the group's reservation pod
 * must exist on the node and have reported the device it holds; then the
 * member's ConfigMap (named after the label the admission webhook put on it)
 * is written with that device and the share. Every wait is bounded by
 * gpuSharing.reservationTimeout: a reservation pod that never reports is
 * deleted, sharing on that node is paused, and the commit fails with a reason
 * so the gang is requeued whole.
 */
#ifndef MUSTER_GPU_SHARE_H
#define MUSTER_GPU_SHARE_H

#include <stddef.h>

#include "policy.h"

struct ext_daemon;

/*
 * Create the reservation pods of a member's groups now, without waiting, so
 * their devices are reported by the time the whole gang reaches bind. groups
 * is "g0" or "g0,g3"; NULL does nothing.
 */
void gpu_share_reserve_early(struct ext_daemon *d, const char *node, const char *groups);

/*
 * EXT_OK when the member may be bound; otherwise err says why: EXT_ETIMEOUT
 * when a reservation pod did not report by the commit's deadline (it is
 * deleted and sharing on the node paused), EXT_ESTOPPED when muster is
 * shutting down (nothing is undone: a restarted muster adopts the pod).
 */
int gpu_share_prepare(struct ext_daemon *d, const struct policy_assignment *m, int64_t deadline,
                      char *err, size_t errlen);

/* Delete reservation pods whose group no longer holds any pod (and orphans). */
void gpu_share_reap(struct ext_daemon *d);

#endif
