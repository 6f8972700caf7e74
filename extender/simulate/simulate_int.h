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
};

/* simulate_main with hooks; a run with hooks prints no result. */
int sim_main(int argc, char **argv, const struct sim_hooks *hooks);

/* Prints the result of a finished run on out. */
void sim_report_json(struct sim_run *r, FILE *out);
void sim_report_table(struct sim_run *r, FILE *out);
/* A self-contained page (report_html.c); -1, nothing printed, when out of memory. */
int sim_report_html(struct sim_run *r, FILE *out);

#endif
