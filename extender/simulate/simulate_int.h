/* simulate_int.h - what simulate.c and simulate_report.c share. */
#ifndef MUSTER_SIMULATE_INT_H
#define MUSTER_SIMULATE_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "config.h"
#include "kube.h"
#include "policy.h"

#define SIM_MAX_FILES 64
#define SIM_MAX_OBJECTS 100000 /* pods, nodes, queues, gangs: each */

enum sim_output {
    SIM_OUTPUT_JSON,
    SIM_OUTPUT_TABLE,
    SIM_OUTPUT_HTML,
};

struct sim_pod {
    struct policy_pod_spec spec; /* points into the run's arena */
    bool bound;
    bool waiting;     /* its bind is held at the gang's barrier */
    bool evicted;     /* evicted for another gang: gone (KubeRay would re-create it) */
    const char *node; /* where it runs, once bound */
    const char *gpu_groups;
    const char *reason; /* why it waits (arena) */
    const cJSON *why;   /* evicted: the eviction's figures (its struct sim_eviction's) */
    /* The timeline (timeline.c): when it comes (ms from the start), how long it runs once
     * bound (-1: to the end), whether it is there yet, when it was bound, whether it ended. */
    int64_t arrival_ms, duration_ms;
    bool arrived, done;
    int64_t bound_ms;
};

/* When a gang's declarer (RayCluster, PodGroup) says its pods come and how long they run. */
struct sim_times {
    const char *gang; /* "namespace/name" */
    int64_t arrival_ms, duration_ms;
};

/* One gang's life on the timeline, for the report. */
struct sim_life {
    const char *gang, *queue;
    int64_t waiting_since; /* -1: not waiting (not come yet, running, or finished) */
    int64_t wait_ms;       /* waited in all, each time it waited */
    int64_t gpu_ms;        /* milli-GPU x ms it held */
    int runs, evictions;
    bool finished;
};

struct sim_event {
    int64_t at;
    const char *gang, *queue, *what; /* "arrived", "started", "finished", "evicted" */
};

/* Per queue: what it held bound over the run (rolled up, as its usage), for the report. */
struct sim_queue_time {
    const char *name;
    double gpu_ms; /* milli-GPU x ms */
};

/* One pod evicted by reclaim or preemption, as printed (arena strings). */
struct sim_eviction {
    const char *ns, *name, *gang, *by, *reason;
    cJSON *why; /* the reason's figures (kube_reason_json), owned */
};

/* What a caller may watch of a run (test/test_reason.c checks every reason given): each
 * filter's answer with the nodes it was offered, and the cluster once the run is over. */
struct sim_hooks {
    void (*filtered)(void *ctx, struct policy_cluster *c, const struct policy_filter_result *f,
                     const char *const *nodes, size_t n);
    void (*finished)(void *ctx, struct policy_cluster *c);
    void *ctx;
};

/* A RayJob whose submitter KubeRay makes once its cluster is ready (K8sJobMode). */
struct sim_rayjob {
    const struct cfg_docs *d;
    const cJSON *doc;
    struct kube_rayjob job;  /* points into the run's arena and doc */
    const char *cluster_key; /* the gang whose being bound makes the submitter; NULL: none */
    bool made;               /* its submitter pod was made */
};

struct sim_run {
    const struct sim_hooks *hooks; /* NULL: none */
    struct cfg_docs docs[SIM_MAX_FILES];
    size_t ndocs;
    struct ext_arena *arena;
    struct policy_cluster *cluster;
    int64_t now;
    struct kube_refs *refs;       /* PriorityClasses, Workloads, Workload-API PodGroups */
    struct kube_lookup lookup;    /* reads refs */
    struct kube_decode_opts opts; /* the defaults, simulate's scheduler, the lookup */

    struct sim_pod *pods;
    size_t npods, cappods;
    const char **nodes; /* node names, the candidates of every filter */
    size_t nnodes, capnodes;
    const char **queues; /* queue names, to find duplicates */
    size_t nqueues, capqueues;
    const char **gangs; /* "<kind> <key>" declared by RayClusters, PodGroups, Workloads */
    size_t ngangs, capgangs;
    const char **named; /* "<kind> <name>" of the objects only referred to (PriorityClass) */
    size_t nnamed, capnamed;
    struct sim_eviction *evictions; /* in the order they were decided */
    size_t nevictions, capevictions;
    struct sim_rayjob *rayjobs; /* whose submitters are still to be made */
    size_t nrayjobs, caprayjobs;
    cJSON *holder; /* owns the documents the run makes (a RayJob's submitter pod) */

    /* The timeline: on when any object says when it comes or how long it runs, or --until. */
    bool timeline;
    int64_t tick_ms, until_ms; /* until_ms -1: until nothing more happens */
    int64_t end_ms;            /* the step the run is at; at the end, where it stopped */
    /* Fair over time on: how long without a change before fair shares stop mattering
     * (a window and two half-lives); 0: off, no ticks. */
    int64_t fair_settle_ms;
    size_t nevents_seen;
    struct sim_times *times;
    size_t ntimes, captimes;
    struct sim_life *lives;
    size_t nlives, caplives;
    struct sim_event *events;
    size_t nevents, capevents;
    struct sim_queue_time *qtimes;
    size_t nqtimes, capqtimes;
};

/* simulate_main with hooks; a run with hooks prints no result. */
int sim_main(int argc, char **argv, const struct sim_hooks *hooks);

bool sim_grow(void **items, size_t *cap, size_t n, size_t size);
struct sim_pod *sim_find_pod(struct sim_run *r, const char *ns, const char *name);
const char *sim_keep(struct sim_run *r, const char *s);
/* Passes over the pending pods until one changes nothing (simulate.c). */
int sim_schedule(struct sim_run *r);

/* The timeline (timeline.c): the run, step by step, from arrival to arrival, end to end; and
 * what a gang's pod said when it was bound or evicted. */
int sim_timeline_run(struct sim_run *r);
void sim_timeline_bound(struct sim_run *r, struct sim_pod *p);
void sim_timeline_evicted(struct sim_run *r, struct sim_pod *p);
/* The timeline's part of the JSON report: {"end", "queues", "events"}. */
cJSON *sim_timeline_json(struct sim_run *r);
void sim_timeline_table(struct sim_run *r, FILE *out);

/* Prints the result of a finished run on out. */
void sim_report_json(struct sim_run *r, FILE *out);
void sim_report_table(struct sim_run *r, FILE *out);
/* A self-contained page (report_html.c); -1, nothing printed, when out of memory. */
int sim_report_html(struct sim_run *r, FILE *out);

#endif
