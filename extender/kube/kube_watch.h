/*
 * kube_watch.h - a reflector: LIST then WATCH one resource, forever, in its
 * own thread, handing every object to a consumer's callbacks.
 *
 * The thread lists (paged with limit/continue) and calls replace() once with
 * the complete set, so the consumer can drop what vanished while it was not
 * watching; then it watches from the list's resourceVersion with bookmarks,
 * calling event() for ADDED / MODIFIED / DELETED in order. A 410 Gone (HTTP
 * status or ERROR event) relists; other failures reconnect from the last
 * resourceVersion with exponential backoff and jitter; a 404 on the list
 * (CRD not installed) calls absent() and retries slowly, so a CRD installed
 * later is picked up.
 *
 * Callbacks run on the watch thread, one at a time. The cJSON they get is
 * borrowed and valid only during the call: copy what you keep.
 */
#ifndef MUSTER_KUBE_WATCH_H
#define MUSTER_KUBE_WATCH_H

#include <cjson/cJSON.h>
#include <stddef.h>
#include <stdint.h>

#include "kube_client.h"

struct kube_watch;

struct kube_watch_handler {
    /* The full current set (a JSON array of objects) after each (re)list. */
    void (*replace)(void *ctx, const cJSON *items);
    /* type is "ADDED", "MODIFIED" or "DELETED". */
    void (*event)(void *ctx, const char *type, const cJSON *object);
    /* Optional: the list answered 404, the resource does not exist; treat the set as empty. */
    void (*absent)(void *ctx);
    /* Optional: a failure the reflector is recovering from (for the log). */
    void (*error)(void *ctx, int code, const char *message);
};

struct kube_watch_opts {
    unsigned page_limit;      /* LIST page size; default 500 */
    unsigned timeout_seconds; /* WATCH timeoutSeconds; default 300 */
    long backoff_min_ms;      /* first reconnect delay; default 200 */
    long backoff_max_ms;      /* delay cap; default 10000 */
    long absent_retry_ms;     /* list retry while the resource is absent; default 10000 */
    size_t max_event;         /* one watch event's size cap; default 16 MiB */
};

/*
 * Start reflecting list_path (a collection, e.g. "/api/v1/pods" or
 * "/apis/ray.io/v1/rayclusters", optionally with a "?labelSelector=..."
 * query). The client, handler and ctx are borrowed and must outlive the
 * watch. opts may be NULL for the defaults. NULL on failure.
 */
struct kube_watch *kube_watch_start(struct kube_client *c, const char *list_path,
                                    const struct kube_watch_handler *h, void *ctx,
                                    const struct kube_watch_opts *opts);

/* Abort any transfer in flight, join the thread, free the watch. NULL is a no-op. */
void kube_watch_stop(struct kube_watch *w);

/* True once the first full list has been handed to replace(). */
int kube_watch_synced(const struct kube_watch *w);
/* True while the resource answers 404 (CRD not installed). */
int kube_watch_absent(const struct kube_watch *w);
/* Reconnects after a failure (for a Prometheus counter). */
uint64_t kube_watch_restarts(const struct kube_watch *w);
/* Lists after the first one (410 Gone and friends). */
uint64_t kube_watch_relists(const struct kube_watch *w);

#endif
