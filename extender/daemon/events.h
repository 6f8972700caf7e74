/*
 * events.h - Kubernetes Events on pods, sent from a worker thread.
 *
 * Handlers must not wait on the API server to tell a person why a gang
 * waits, so events are queued and posted in the background. The same
 * (pod, reason, message) is sent at most once a minute, and the queue is
 * bounded: when it is full the newest event is dropped and counted. The
 * waiting reason follows the gang: replaced in place while it waits,
 * withdrawn when it is bound.
 */
#ifndef MUSTER_EVENTS_H
#define MUSTER_EVENTS_H

#include <stdint.h>

#include "kube.h"

struct ext_events;

struct ext_events *ext_events_new(struct kube_client *kube);
/* Queue one; type is "Normal" or "Warning". */
void ext_events_post(struct ext_events *e, const char *ns, const char *pod, const char *uid,
                     const char *reason, const char *type, const char *message);
/*
 * Why a gang's pod waits, as the pod's GangWaiting Event: one object per pod (a series, as
 * client-go's EventSeries), created the first time and then patched in place: a new reason
 * replaces the old one (message, count, lastTimestamp), at once; the same one is written again
 * once a minute. Labelled with its gang (the pod's own key for a gang of one) so that
 * ext_events_withdraw finds it.
 */
#define EXT_UNDECLARED_GRACE_MS 10000 /* "not known yet" kept back this long (handlers.c) */
void ext_events_waiting(struct ext_events *e, const char *ns, const char *pod, const char *uid,
                        const char *gang, const char *message);
/*
 * The gang is bound: its pods' GangWaiting Events say what is no longer true. Deleted with one
 * request (a deletecollection by label), and only when this process queued one for the gang;
 * a gang bound without waiting costs nothing.
 */
void ext_events_withdraw(struct ext_events *e, const char *ns, const char *gang);
/*
 * One pod bound after its gang was (a member beyond the minimum): its own GangWaiting Event
 * only, deleted by name, when this process wrote one it has not withdrawn (the gang's others
 * may still wait, and say why).
 */
void ext_events_withdraw_pod(struct ext_events *e, const char *ns, const char *pod,
                             const char *uid);
/*
 * An Event's message about a gang: text, then EXT_EVENT_COMPOSITION and its
 * subgroups ("head 1/1, gpu 3/3 (+1 extra waiting: ...)") when it has any
 * (composition NULL or ""). A count that changes is another message: posted
 * once per change, and again once a minute while it stays.
 */
void ext_events_gang_message(char *buf, size_t len, const char *text, const char *composition);
uint64_t ext_events_dropped(const struct ext_events *e);
/* The clock the once-a-minute rule reads: ext_now_ms, unless a test sets its own. */
void ext_events_set_clock(struct ext_events *e, int64_t (*now_ms)(void));
/* Send what is queued (bounded), stop the thread, free. NULL is a no-op. */
void ext_events_free(struct ext_events *e);

#endif
