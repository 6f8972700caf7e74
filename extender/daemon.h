/*
 * daemon.h - what `muster serve` holds together: settings, the API client,
 * the cluster cache (engine + reflectors), the bind barrier, events and
 * metrics. The HTTP handlers (handlers.c, barrier.c) work on it.
 */
#ifndef MUSTER_DAEMON_H
#define MUSTER_DAEMON_H

#include <pthread.h>
#include <stdbool.h>

#include "cache.h"
#include "config.h"
#include "events.h"
#include "http_server.h"
#include "kube_client.h"
#include "metrics.h"

/* A bind held at its gang's barrier, waiting for the commit or its deadline. */
struct held_bind {
    char *key; /* "ns/name" */
    bool done, ok;
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

    /* The barrier: guarded by cache.lock. */
    pthread_cond_t barrier_changed;
    struct held_bind *held;
    bool stopping;

    struct ext_metric *bind_outcomes; /* {outcome} */
    struct ext_metric *bind_wait_seconds;
    struct ext_metric *bindings;       /* {result} */
    struct ext_metric *gangs;          /* {state} */
    struct ext_metric *queue_usage;    /* {queue,resource,kind} */
    struct ext_metric *queue_pending;  /* {queue} */
    struct ext_metric *watch_restarts; /* {resource} */
    struct ext_metric *leader;         /* 1 while housekeeping is active (lease.h) */
    struct ext_metric *ready;          /* 1 once every watch listed (/readyz) */
    struct ext_metric *queue_quota;    /* {queue,resource}; no series = unlimited */
    struct ext_metric *queue_limit;    /* {queue,resource}; no series = unlimited */
    struct ext_metric *queue_oldest_pending; /* {queue}, seconds */
    struct ext_metric *gang_time_to_bind;    /* histogram, seconds */
    struct ext_metric *gpu_groups;           /* {node} */
    struct ext_metric *gpu_group_shares;     /* {node}, GPUs */
    struct ext_metric *gpu_group_pods;       /* {node} */
    struct ext_metric *reservation_timeouts; /* {node} */
};

extern const struct ext_http_handlers ext_daemon_handlers;

int ext_daemon_bind(void *ctx, const struct ext_bind_args *a, struct ext_bind_answer *ans);
void ext_daemon_stopping(void *ctx);

/* Write one committed member's GPU record and post its Binding. */
int ext_commit_member(struct ext_daemon *d, const struct policy_assignment *m, char *err,
                      size_t errlen);

#endif
