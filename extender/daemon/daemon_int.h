/*
 * daemon_int.h - what `muster serve` holds together: settings, the API client,
 * the cluster cache (engine + reflectors), the bind barrier, events and
 * metrics. The HTTP handlers (handlers.c, barrier.c) work on it.
 */
#ifndef MUSTER_DAEMON_INT_H
#define MUSTER_DAEMON_INT_H

#include <pthread.h>
#include <stdbool.h>

#include "cache.h"
#include "config.h"
#include "evict.h"
#include "events.h"
#include "gpushare.h"
#include "wire.h"
#include "kube.h"
#include "base.h"

/*
 * A bind held at its gang's barrier, waiting for the commit or its deadline.
 * Through the HTTP server its answer is deferred (reply): the connection
 * waits without a thread. A caller that cannot defer (a test calling the
 * handler) waits in hold() until done. Whoever settles it unlinks it and
 * answers it, under cache.lock.
 */
struct held_bind {
    char *key; /* "ns/name" */
    char *namespace_, *name, *uid;
    char *node;                 /* the node this bind asked for */
    struct ext_deferred *reply; /* NULL: its caller waits for done */
    int64_t started, deadline;  /* ext_now_ms */
    bool done;                  /* without a reply: answered, error holds the answer */
    char *error;
    struct held_bind *next;
};

struct ext_daemon {
    struct cfg_settings settings;
    struct kube_client *kube; /* NULL: no API server (tests of the HTTP face) */
    struct cache cache;
    struct ext_events *events;
    struct ext_metrics *metrics;
    struct ext_http_server *http;
    struct ext_http_server *webhook; /* gpuSharing.webhookListen, HTTPS */
    struct gpushare share;           /* the GPU-sharing hand-off, borrowing the above */
    /* Reclaim and preemption carried out (evict.h); NULL offline. */
    struct evictor *evictor;

    /* The barrier: guarded by cache.lock. Its timer thread answers held binds
     * whose bindWait ran out; barrier_changed wakes it for an earlier deadline. */
    pthread_cond_t barrier_changed;
    struct held_bind *held;
    int64_t barrier_next; /* the deadline the timer sleeps until */
    pthread_t barrier_timer;
    bool barrier_timer_running, barrier_quit;
    bool stopping;

    struct ext_metric *bind_outcomes; /* {outcome} */
    struct ext_metric *bind_wait_seconds;
    struct ext_metric *bindings;             /* {result} */
    struct ext_metric *gangs;                /* {state} */
    struct ext_metric *queue_usage;          /* {queue,resource,kind} */
    struct ext_metric *queue_pending;        /* {queue} */
    struct ext_metric *watch_restarts;       /* {resource} */
    struct ext_metric *watch_protobuf;       /* {resource} */
    struct ext_metric *leader;               /* 1 while housekeeping is active (lease.h) */
    struct ext_metric *ready;                /* 1 once every watch listed (/readyz) */
    struct ext_metric *queue_quota;          /* {queue,resource}; no series = unlimited */
    struct ext_metric *queue_limit;          /* {queue,resource}; no series = unlimited */
    struct ext_metric *queue_oldest_pending; /* {queue}, seconds */
    struct ext_metric *gang_time_to_bind;    /* histogram, seconds */
    struct ext_metric *gpu_groups;           /* {node} */
    struct ext_metric *gpu_group_shares;     /* {node}, GPUs */
    struct ext_metric *gpu_group_pods;       /* {node} */
    struct ext_metric *reservation_timeouts; /* {node} */

    /* Reclaim and preemption: {kind,result} (evict.h); fair share and demand {queue,resource}. */
    struct ext_metric *evictions;
    struct ext_metric *kube_requests;
    struct ext_metric *kube_connections;
    struct ext_metric *queue_fair_share;
    struct ext_metric *queue_demand;
    struct ext_metric *queue_recent_usage; /* {queue,resource}: U', fair over time */
};

extern const struct ext_http_handlers ext_daemon_handlers;

/*
 * The daemon without its threads: the barrier's condition variable, the
 * metrics, the cache (reflectors not started) and the GPU-sharing hand-off.
 * The caller has filled d->settings and d->kube (NULL: no API server), which
 * ext_daemon_cleanup releases with the rest. serve.c then starts events,
 * reflectors, housekeeping and the HTTP servers; tests call the parts.
 */
int ext_daemon_init(struct ext_daemon *d, char *err, size_t errlen);
/* Stop and free whatever of the daemon was started, and its settings. */
void ext_daemon_cleanup(struct ext_daemon *d);

int ext_daemon_bind(void *ctx, const struct ext_bind_args *a, struct ext_bind_answer *ans);
void ext_daemon_stopping(void *ctx);

/* The barrier's timer thread (barrier_changed must be initialised first). */
int ext_barrier_start(struct ext_daemon *d);
void ext_barrier_stop(struct ext_daemon *d);

/* Under cache.lock: the gang's composition ("head 1/1, gpu 3/3 (+1 extra)") copied out of
 * the engine's view into buf; "" for a gang without subgroups or one the engine does not know. */
void ext_daemon_gang_composition(struct ext_daemon *d, const char *gang, char *buf, size_t len);

/* Write one committed member's GPU record and post its Binding. */
int ext_commit_member(struct ext_daemon *d, const struct policy_assignment *m, char *err,
                      size_t errlen);

#endif
