/*
 * policy.h - muster's scheduling core.
 *
 * A pure engine: it links libc and libm only, reads no clock, file, socket or
 * environment, and logs nothing. Time comes in as a parameter (milliseconds on
 * any monotonic scale the caller chooses); explanations go out as data.
 *
 * The caller feeds it what the cluster holds (nodes, queues, gangs, pods) and
 * asks it the four questions kube-scheduler asks an extender: filter,
 * prioritize, bind and forget. The engine is not thread-safe: one lock around
 * every call is the caller's job.
 *
 * Specs passed in are borrowed; the engine copies what it keeps.
 */
#ifndef MUSTER_POLICY_H
#define MUSTER_POLICY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* ---- errors -------------------------------------------------------------- */

enum policy_err {
    POLICY_OK = 0,
    POLICY_ENOMEM = -1,  /* out of memory */
    POLICY_EINVAL = -2,  /* a spec that cannot be taken (missing name, ...) */
    POLICY_ENOENT = -3,  /* no such pod / node / gang / queue */
    POLICY_ELIMIT = -4,  /* a hard cap of the engine was reached */
};

const char *policy_strerror(int err);

/* ---- resources ----------------------------------------------------------- */

/* One whole GPU in the engine's GPU unit. Shares are integer milli-devices. */
#define POLICY_GPU_MILLI 1000

enum policy_resource {
    POLICY_RES_CPU,    /* millicores */
    POLICY_RES_MEMORY, /* bytes */
    POLICY_RES_GPU,    /* milli-devices: 1000 = one device, a 0.5 share = 500 */
    POLICY_RES_COUNT
};

struct policy_resources {
    int64_t v[POLICY_RES_COUNT];
};

/* "cpu", "memory", "gpu" */
const char *policy_resource_name(enum policy_resource r);

/* ---- the model: what the caller feeds in --------------------------------- */

struct policy_label {
    const char *key;
    const char *value;
};

enum policy_taint_effect {
    POLICY_TAINT_NO_SCHEDULE,
    POLICY_TAINT_PREFER_NO_SCHEDULE,
    POLICY_TAINT_NO_EXECUTE,
};

struct policy_taint {
    const char *key;
    const char *value; /* may be NULL */
    enum policy_taint_effect effect;
};

enum policy_toleration_op {
    POLICY_TOLERATE_EQUAL,
    POLICY_TOLERATE_EXISTS,
};

struct policy_toleration {
    const char *key;   /* NULL or "" with EXISTS: tolerates every taint */
    enum policy_toleration_op op;
    const char *value; /* for EQUAL */
    int effect;        /* an enum policy_taint_effect, or -1 for every effect */
};

enum policy_selector_op {
    POLICY_SELECT_IN,
    POLICY_SELECT_NOT_IN,
    POLICY_SELECT_EXISTS,
    POLICY_SELECT_DOES_NOT_EXIST,
};

struct policy_selector_req {
    const char *key;
    enum policy_selector_op op;
    const char *const *values;
    size_t nvalues;
};

/* One nodeSelectorTerm: every requirement must hold. Terms are ORed. */
struct policy_selector_term {
    const struct policy_selector_req *reqs;
    size_t nreqs;
};

struct policy_node_spec {
    const char *name;
    const struct policy_label *labels;
    size_t nlabels;
    const struct policy_taint *taints;
    size_t ntaints;
    bool unschedulable;
    int64_t cpu_milli;      /* allocatable */
    int64_t memory_bytes;
    int64_t pods;
    int64_t gpus;           /* nvidia.com/gpu devices */
    int64_t gpu_memory_mib; /* per device, label nvidia.com/gpu.memory; 0 = unknown */
};

struct policy_pod_spec {
    const char *namespace_;
    const char *name;
    const char *uid;
    int32_t priority;
    int64_t cpu_milli;    /* effective requests, computed as Kubernetes does */
    int64_t memory_bytes;

    /* The GPU ask: whole devices, or a share on gpu_devices devices. */
    int64_t gpus;           /* nvidia.com/gpu */
    int32_t gpu_share_milli; /* gpu-fraction in milli-devices; 0 = none */
    int64_t gpu_memory_mib; /* gpu-memory; becomes a share per node */
    int32_t gpu_devices;    /* gpu-fraction-num-devices; 0 means 1 */
    const char *invalid;    /* the decoder's verdict on an ask it could not read */

    const struct policy_label *node_selector;
    size_t nnode_selector;
    const struct policy_selector_term *affinity; /* required; NULL = none */
    size_t naffinity;
    const struct policy_toleration *tolerations;
    size_t ntolerations;

    const char *gang;  /* "namespace/name" of its gang; NULL = a gang of one */
    bool gang_head;    /* planned first within its gang */
    const char *queue; /* NULL = the default queue */
    bool managed;      /* scheduled by muster; others only take capacity */

    /* Where it already runs (spec.nodeName); NULL = not bound. */
    const char *node;
    /* GPU groups it holds on that node, "g0" or "g0,g3"; NULL = none. */
    const char *gpu_groups;
};

struct policy_queue_spec {
    const char *name;
    const char *parent; /* NULL = top level */
    int32_t priority;
    struct policy_resources quota;  /* -1 = unlimited */
    struct policy_resources limit;  /* -1 = unlimited */
    struct policy_resources over_quota_weight;
};

/* Who declares a gang's minimum. A PodGroup's minMember wins over the
 * workload's own count while both exist (KubeRay writes the PodGroup once). */
enum policy_gang_source {
    POLICY_GANG_WORKLOAD, /* a RayCluster */
    POLICY_GANG_PODGROUP, /* a PodGroup of scheduler-plugins or Volcano */
    POLICY_GANG_SOURCES
};

struct policy_gang_spec {
    const char *key;     /* "namespace/name" */
    int32_t min_members; /* computed by the caller from RayCluster/PodGroup */
    const char *queue;   /* NULL: taken from its members */
    enum policy_gang_source source;
};

enum policy_strategy {
    POLICY_BINPACK,
    POLICY_SPREAD,
};

struct policy_options {
    enum policy_strategy strategy;
    int64_t plan_ttl_ms;       /* unbound plans are released after this; 0 = 60 s */
    const char *default_queue; /* NULL = "default" */
};

struct policy_cluster;

struct policy_cluster *policy_cluster_new(const struct policy_options *opts);
void policy_cluster_free(struct policy_cluster *c);

int policy_node_upsert(struct policy_cluster *c, const struct policy_node_spec *spec);
int policy_queue_upsert(struct policy_cluster *c, const struct policy_queue_spec *spec);
int policy_gang_upsert(struct policy_cluster *c, const struct policy_gang_spec *spec);
/* Would this spec change what the engine knows? (Status-only updates do not.) */
bool policy_queue_changes(const struct policy_cluster *c, const struct policy_queue_spec *spec);
bool policy_gang_changes(const struct policy_cluster *c, const struct policy_gang_spec *spec);

/* A pod seen for the first time gets the next arrival number, and `now` as when it was seen. */
int policy_pod_upsert(struct policy_cluster *c, const struct policy_pod_spec *spec, int64_t now);

/* forget: the object disappeared. Its reservations are released. */
int policy_node_forget(struct policy_cluster *c, const char *name);
int policy_queue_forget(struct policy_cluster *c, const char *name);
/* That source no longer declares the gang (its RayCluster or PodGroup was deleted). */
int policy_gang_forget(struct policy_cluster *c, const char *key, enum policy_gang_source source);
int policy_pod_forget(struct policy_cluster *c, const char *namespace_, const char *name);

/*
 * GPU sharing failed on this node (a reservation pod never reported its
 * device): open no new GPU group there until `until`. Groups already open
 * stay usable.
 */
int policy_node_pause_sharing(struct policy_cluster *c, const char *name, int64_t until);

/* Release plans whose time ran out. Filter and bind call it too. */
void policy_expire(struct policy_cluster *c, int64_t now);

/* Check a pod's ask on its own; writes a one-line reason when invalid. */
bool policy_pod_spec_valid(const struct policy_pod_spec *spec, char *why, size_t len);

/* ---- the four questions -------------------------------------------------- */

enum policy_fit {
    POLICY_FITS,
    POLICY_UNSCHEDULABLE, /* not now; retry on cluster events */
    POLICY_UNRESOLVABLE,  /* retrying this node cannot help */
};

struct policy_node_verdict {
    enum policy_fit fit;
    const char *reason; /* NULL when it fits; points into the result */
};

struct policy_filter_result {
    size_t n;                            /* = number of candidates */
    struct policy_node_verdict *verdicts; /* in candidate order */
    char *reason;                        /* why nothing fits; NULL if something does */
    char *detail_;                       /* owned text the verdicts point into */
};

/* Which candidates may this pod go to? The pod must have been upserted. */
int policy_filter(struct policy_cluster *c, const char *namespace_, const char *name,
                  const char *const *candidates, size_t n, int64_t now,
                  struct policy_filter_result *out);
void policy_filter_result_cleanup(struct policy_filter_result *r);

#define POLICY_MAX_SCORE 10

/* Scores 0..POLICY_MAX_SCORE for each candidate, into scores[n]. */
int policy_prioritize(struct policy_cluster *c, const char *namespace_, const char *name,
                      const char *const *candidates, size_t n, int64_t now, int *scores);

enum policy_bind_outcome {
    POLICY_BIND_WAIT,    /* held: other members have not reached bind yet */
    POLICY_BIND_COMMIT,  /* bind every member listed, now */
    POLICY_BIND_ALREADY, /* already bound to that node: answer success */
    POLICY_BIND_REJECT,  /* answer an error with the reason */
};

struct policy_assignment {
    char *namespace_;
    char *name;
    char *uid;
    char *node;
    int64_t gpus;           /* whole devices */
    int32_t gpu_share_milli; /* per device, for a shared pod */
    char *gpu_groups;       /* "g0" or "g0,g3" for a shared pod; NULL otherwise */
};

struct policy_bind_result {
    enum policy_bind_outcome outcome;
    char *reason; /* REJECT: why; WAIT: who is missing */
    size_t n;     /* COMMIT: the members to bind, this pod among them */
    struct policy_assignment *members;
};

int policy_bind(struct policy_cluster *c, const char *namespace_, const char *name,
                const char *node, int64_t now, struct policy_bind_result *out);
void policy_bind_result_cleanup(struct policy_bind_result *r);

/*
 * A held bind gave up (its wait ran out, or the client went away): the pod
 * leaves the barrier, its place in the plan stays. Writes who is still
 * missing into why.
 */
int policy_bind_cancel(struct policy_cluster *c, const char *namespace_, const char *name,
                       char *why, size_t len);

/* The outcome of posting one committed member's Binding. */
int policy_bind_done(struct policy_cluster *c, const char *namespace_, const char *name,
                     bool ok, const char *why);

/*
 * Preemption keeps gangs whole. victims are "namespace/name" of pods the
 * scheduler would evict on one node for the preemptor. Returns true if the
 * node may stay; *out (heap, caller frees each and the array) is then the
 * victim list to answer, grown to whole gangs where that is allowed.
 */
bool policy_preempt_victims(struct policy_cluster *c, const char *namespace_, const char *name,
                            const char *const *victims, size_t n, char ***out, size_t *nout);

/* Does the engine know this node? */
bool policy_node_known(const struct policy_cluster *c, const char *name);

/* Look a pod up by uid; writes "namespace/name" into buf. */
bool policy_pod_by_uid(const struct policy_cluster *c, const char *uid, char *buf, size_t len);

/* ---- what the engine knows: views for logs, metrics, status and tests ---- */

enum policy_pod_phase {
    POLICY_POD_PENDING,   /* no place yet */
    POLICY_POD_PLANNED,   /* a place is reserved for it */
    POLICY_POD_WAITING,   /* its bind is held at the gang's barrier */
    POLICY_POD_BINDING,   /* committed, Binding in flight */
    POLICY_POD_BOUND,     /* runs on its node */
};

const char *policy_pod_phase_name(enum policy_pod_phase p);

struct policy_pod_view {
    const char *namespace_;
    const char *name;
    const char *uid;
    const char *gang;  /* "namespace/name"; for a gang of one "namespace/pod" */
    const char *queue;
    bool managed;
    enum policy_pod_phase phase;
    const char *node;  /* bound or planned node; NULL when pending */
    int64_t cpu_milli;
    int64_t memory_bytes;
    int64_t gpus;
    int32_t gpu_share_milli;  /* per device; resolved for gpu-memory asks once placed */
    int32_t gpu_devices;
    const char *gpu_groups;   /* NULL unless shared */
    const char *reason;       /* why it waits; NULL otherwise */
    uint64_t arrival;
};

enum policy_gang_state {
    POLICY_GANG_PENDING, /* waits whole; reason says why */
    POLICY_GANG_PLANNED, /* every minimum member has a reserved place */
    POLICY_GANG_BOUND,   /* at least its minimum is bound */
};

const char *policy_gang_state_name(enum policy_gang_state s);

struct policy_gang_view {
    const char *key;
    const char *queue;
    enum policy_gang_state state;
    int32_t min_members;
    int32_t members;  /* pods that exist */
    int32_t bound;
    int32_t waiting;  /* held at the bind barrier */
    const char *reason;
    int64_t since;    /* first upsert's `now` of its earliest present member; 0: none */
};

struct policy_queue_view {
    const char *name;
    bool implicit; /* the default queue, there because no Queue defines it */
    const char *parent;
    int32_t priority;
    struct policy_resources quota;
    struct policy_resources limit;
    struct policy_resources over_quota_weight;
    struct policy_resources allocated; /* bound, rolled up from children */
    struct policy_resources reserved;  /* planned but not bound, rolled up */
    int32_t pending_gangs;
};

struct policy_gpu_group_view {
    const char *id;
    int32_t used_milli;
    int32_t pods;
};

struct policy_node_view {
    const char *name;
    int64_t cpu_milli, memory_bytes, pods, gpus;           /* allocatable */
    int64_t gpu_memory_mib;                                /* per device; 0 = unknown */
    int64_t cpu_used, memory_used, pods_used, gpus_whole_used; /* bound + planned */
    size_t ngroups;
    const struct policy_gpu_group_view *groups;
};

typedef void (*policy_pod_fn)(const struct policy_pod_view *v, void *ctx);
typedef void (*policy_gang_fn)(const struct policy_gang_view *v, void *ctx);
typedef void (*policy_queue_fn)(const struct policy_queue_view *v, void *ctx);
typedef void (*policy_node_fn)(const struct policy_node_view *v, void *ctx);

/* Visit in arrival order (pods), key order (gangs), name order (queues, nodes). */
void policy_each_pod(const struct policy_cluster *c, policy_pod_fn fn, void *ctx);
void policy_each_gang(const struct policy_cluster *c, policy_gang_fn fn, void *ctx);
void policy_each_queue(const struct policy_cluster *c, policy_queue_fn fn, void *ctx);
void policy_each_node(const struct policy_cluster *c, policy_node_fn fn, void *ctx);

bool policy_pod_view_get(const struct policy_cluster *c, const char *namespace_, const char *name,
                         struct policy_pod_view *out);
bool policy_gang_view_get(const struct policy_cluster *c, const char *key,
                          struct policy_gang_view *out);

#endif
