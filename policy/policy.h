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

/* Who may be evicted for another gang (KAI's preemptibility). */
enum policy_preemptible {
    POLICY_PREEMPTIBLE_BY_PRIORITY = 0, /* priority < POLICY_NONPREEMPTIBLE_PRIORITY */
    POLICY_PREEMPTIBLE_NO,
    POLICY_PREEMPTIBLE_YES,
};

/* KAI's line: priority classes at or above it (build 100, inference 125) are
 * not preemptible, which also keeps them within their queue's quota. */
#define POLICY_NONPREEMPTIBLE_PRIORITY 100

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
    /* Which of its gang's subgroups it belongs to: "head", a worker group's
     * name, a KAI subgroup, a Volcano task. NULL = none (a count-only gang). */
    const char *subgroup;
    /* Its multi-host replica within the subgroup (KubeRay's ray.io/worker-group-replica-name):
     * a replica's pods keep to one domain (policy_subgroup_spec.topology). NULL: none. */
    const char *replica;
    const char *queue; /* NULL = the default queue */
    bool managed;      /* scheduled by muster; others only take capacity */
    /* May muster evict it for another gang? POLICY_PREEMPTIBLE_BY_PRIORITY
     * follows KAI: priority below 100 is preemptible. Its gang's spec wins. */
    enum policy_preemptible preemptible;

    /* Where it already runs (spec.nodeName); NULL = not bound. */
    const char *node;
    /* When it was bound there, on the clock of `now`; 0 = not known. A gang's minimum runtime
     * (reclaimMinRuntime, preemptMinRuntime) counts from the latest of its bound members'
     * times, so a restarted engine does not start the clocks again; without one it counts
     * from when the engine saw the gang bound. A time after the engine's latest `now` is not
     * believed. Read only with node. */
    int64_t bound_at;
    /* status.nominatedNodeName is set: kube-scheduler's own preemption is making room for it,
     * so muster does not evict for it unasked (policy_evict_unasked). */
    bool nominated;
    /* Its PodScheduled condition is False with reason Unschedulable: kube-scheduler turned it
     * away and parked it. Read for a pod first seen (a restarted muster did not answer it
     * itself), so a spec change hands it back (policy_pod_view.refused). */
    bool unschedulable;
    /* GPU groups it holds on that node, "g0" or "g0,g3"; NULL = none. */
    const char *gpu_groups;
};

struct policy_queue_spec {
    const char *name;
    const char *parent; /* NULL = top level */
    int32_t priority;
    struct policy_resources quota;  /* -1 = unlimited */
    struct policy_resources limit;  /* -1 = unlimited */
    /* A RayService's upgrade (its pending cluster, while the active one runs) may go over this
     * queue's limit (and, for a non-preemptible gang, its quota) by what the active cluster
     * holds: both run until the operator deletes the old one (docs/gangs.md, "RayService"). */
    bool upgrade_burst;
    /* Only ratios matter; the decoders give thousandths (1000 = weight 1), so fractional
     * weights keep their ratio. Capped at POLICY_MAX_WEIGHT. */
    struct policy_resources over_quota_weight;
    int64_t reclaim_min_runtime_ms; /* a gang running less long is not reclaimed from it */
    int64_t preempt_min_runtime_ms; /* ... nor preempted inside it */
};

#define POLICY_MAX_WEIGHT 1000000

/*
 * What one pod may ask and one node may offer: a pod asking more is invalid
 * (unschedulable, with the reason), and counts at the cap where it runs; a
 * node offering more is taken at the cap. A queue's quota or limit over
 * POLICY_MAX_QUEUE_AMOUNT is taken at it. Sums of up to 8,191 capped asks are
 * exact in int64; beyond, the engine's sums saturate (never wrap) and are
 * counted again as their parts leave.
 */
#define POLICY_MAX_CPU_MILLI (INT64_C(1) << 40)      /* about 1.1e9 cores */
#define POLICY_MAX_MEMORY_BYTES (INT64_C(1) << 50)   /* 1 PiB */
#define POLICY_MAX_GPUS (INT64_C(1) << 20)           /* whole devices */
#define POLICY_MAX_GPU_MEMORY_MIB (INT64_C(1) << 30) /* of one device: 1 PiB */
#define POLICY_MAX_PODS (INT64_C(1) << 20)           /* a node's pod capacity */
#define POLICY_MAX_QUEUE_AMOUNT (INT64_C(1) << 62)

/*
 * Who declares a gang. A composition (subgroups) wins over a count: a
 * RayCluster's head and worker groups over a PodGroup's bare minMember, whose
 * total is then only checked against it (a mismatch shows in the gang's view).
 * Where two sources give compositions, the first listed here wins and they
 * must agree; between two counts a Workload's wins over a PodGroup's.
 */
enum policy_gang_source {
    POLICY_GANG_WORKLOAD,     /* a RayCluster */
    POLICY_GANG_PODGROUP,     /* a PodGroup: scheduler-plugins, Volcano or KAI */
    POLICY_GANG_WORKLOAD_API, /* a Kubernetes Workload (scheduling.k8s.io, KEP-4671) */
    POLICY_GANG_SOURCES
};

/*
 * What made a gang's object (a RayCluster's ray.io/originated-from-crd and -cr-name labels).
 * A RayJob's cluster is one gang with the job's submitter (policy_hold_spec); of a RayService's
 * clusters, one that waits while another runs is its upgrade: it is never given the running
 * one's room by eviction, and its reason says "upgrade of RayService ns/name waits: ...".
 */
enum policy_owner_kind {
    POLICY_OWNER_NONE,
    POLICY_OWNER_RAYJOB,
    POLICY_OWNER_RAYSERVICE,
};

/* "RayJob", "RayService"; "" for none. */
const char *policy_owner_kind_name(enum policy_owner_kind k);

/* ---- topology: where nodes sit, and where a gang wants its members ------- */

#define POLICY_MAX_TOPOLOGY_LEVELS 16 /* KAI's and Kueue's Topology allow as many */

struct policy_topology_level {
    const char *node_label;
    const char *alias; /* NULL or "": none */
};

/* A named hierarchy of node labels, coarsest first (KAI's and Kueue's Topology): a domain of a
 * level is the nodes sharing one value of its label and of every coarser level's. */
struct policy_topology_spec {
    const char *name;
    const struct policy_topology_level *levels;
    size_t nlevels;
};

/*
 * Where a gang, or one of its subgroups, goes (docs/topology.md): within one domain of its
 * required level, never across two; within one domain of its preferred level when one holds
 * it, else of the next coarser level, up to the required one (the whole cluster without one).
 * A level is named by its node label or its alias, a Volcano tier by its number (1: the finest
 * level of the topology above the nodes themselves). Nothing named: no constraint.
 */
struct policy_topology_constraint {
    /* The Topology the levels belong to; NULL: the first (by name) whose levels include the
     * named label, else that label alone as a topology of one level. */
    const char *topology;
    const char *required;
    const char *preferred;
    int32_t required_tier;  /* Volcano: 0 none */
    int32_t preferred_tier;
    const char *dialect;    /* who asked: "KAI", "Kueue", "Volcano", "Workload API" (for text) */
    /* The decoder's verdict on a constraint it could not read (a tier that is not a number):
     * the gang waits, saying so, rather than run where it was not meant to. NULL: none. */
    const char *invalid;
};

/* One part of a gang with its own minimum: the head, a worker group. */
struct policy_subgroup_spec {
    const char *name;
    int32_t min_members; /* 0: all of its pods are extras */
    /* Its own place within the gang's (KAI's per-group annotations, a PodGroup's subGroups[]).
     * Its multi-host replicas (policy_pod_spec.replica) each keep to one domain of its finest
     * level (else the gang's). */
    struct policy_topology_constraint topology;
    /* Another dialect's word on it in the same object (Kueue's beside KAI's): the engine says
     * where it disagrees with topology, which it follows. */
    struct policy_topology_constraint topology_other;
};

struct policy_gang_spec {
    const char *key;     /* "namespace/name" */
    int32_t min_members; /* the whole gang's; with subgroups at least their sum. 0 = no gang */
    const struct policy_subgroup_spec *subgroups; /* NULL: a count only */
    size_t nsubgroups;
    const char *queue;   /* NULL: taken from its members */
    bool has_priority;   /* priority below is the gang's (a PriorityClass it names) */
    int32_t priority;
    enum policy_preemptible preemptible;
    enum policy_gang_source source;
    /* Where the whole gang goes (a Workload-API PodGroup's schedulingConstraints.topology[0].key
     * as required, KAI's annotations or topologyConstraint, Volcano's networkTopology). */
    struct policy_topology_constraint topology;
    /* Another dialect's word on the whole gang in the same object (Volcano's labels beside
     * KAI's annotations): where it disagrees with topology, which is followed, the gang's
     * conflict says so. */
    struct policy_topology_constraint topology_other;
    enum policy_owner_kind owner_kind; /* what made it; NONE: nothing the engine knows */
    const char *owner;                 /* that object's "namespace/name" */
};

enum policy_strategy {
    POLICY_BINPACK,       /* fullest node first, tightest GPU group */
    POLICY_SPREAD,        /* emptiest node first, a new GPU group first */
    POLICY_FRAGMENTATION, /* least expected fragmentation for the pods seen (frag.c) */
};

/* Among the domains of a level that hold a gang, which one it goes to. */
enum policy_domain_choice {
    POLICY_DOMAIN_LEAST_STRANDED, /* the one whose use strands the least for the gangs seen */
    POLICY_DOMAIN_FULLEST,        /* KAI's: the fullest that fits (for comparison) */
};

/*
 * Fair over time (docs/quota.md, "Fair over time"): KAI-Scheduler's time-based fair share,
 * kept in the engine. Each queue's usage, decayed and normalised by the cluster's capacity
 * over the same time (U'), moves the split of what is left over quota: KAI's
 * shareWeight = max(0, w' + k (w' - U')), w' the queue's overQuotaWeight over those of the
 * queues still asking at its priority. Quota is untouched.
 */
struct policy_fairness {
    int64_t half_life_ms;     /* usage counts half after this long; 0: off (no usage kept) */
    int64_t window_ms;        /* usage older than this does not count; 0 = 7 days */
    int64_t k_milli;          /* KAI's kValue in thousandths (1000 = 1); 0: usage moves nothing */
    int64_t entry_penalty_ms; /* Kueue's entry penalty: a gang muster admits counts at once
                               * as if it had already run this long (settled as it runs); 0: none */
    int64_t refresh_ms;       /* how often the division takes the usage anew; 0 = 60 s */
};

struct policy_options {
    enum policy_strategy strategy;
    enum policy_domain_choice domain_choice;
    int64_t plan_ttl_ms;       /* unbound plans are released after this; 0 = 60 s */
    const char *default_queue; /* NULL = "default" */
    bool no_reclaim;           /* never evict between queues */
    bool no_preemption;        /* never evict inside a queue */
    /* A victim gang whose eviction was refused is not chosen again for this long
     * (a PodDisruptionBudget rarely changes within seconds); 0 = 30 s. */
    int64_t refused_victim_ms;
    struct policy_fairness fairness; /* all 0: off */
};

struct policy_cluster;

struct policy_cluster *policy_cluster_new(const struct policy_options *opts);
void policy_cluster_free(struct policy_cluster *c);

int policy_node_upsert(struct policy_cluster *c, const struct policy_node_spec *spec);
int policy_queue_upsert(struct policy_cluster *c, const struct policy_queue_spec *spec);
int policy_gang_upsert(struct policy_cluster *c, const struct policy_gang_spec *spec);
/* A Topology came or changed; forget: it went. Gangs naming it wait while it is unknown. */
int policy_topology_upsert(struct policy_cluster *c, const struct policy_topology_spec *spec);
int policy_topology_forget(struct policy_cluster *c, const char *name);
/* Would this spec change what the engine knows? (Status-only updates do not.) */
bool policy_queue_changes(const struct policy_cluster *c, const struct policy_queue_spec *spec);
/* Changes whenever what a node offers changes (a node comes, or its allocatable, labels,
 * taints or cordon change) or a queue's limits do: kube-scheduler may have asked about a
 * waiting pod on its own node event before muster saw the node. */
uint64_t policy_offer_epoch(const struct policy_cluster *c);
bool policy_gang_changes(const struct policy_cluster *c, const struct policy_gang_spec *spec);

/*
 * Room held in a gang for a member that does not exist yet: a RayJob's submitter, which KubeRay
 * makes only once the cluster is ready. It is planned with the gang's minimum (in subgroup
 * `subgroup`, of minimum 1 while held), counted against the queue and kept on a node; the bind
 * barrier never waits for it, and a gang evicted takes it along. A pod of that subgroup
 * arriving takes the room (its own ask charged there when it fits); forgotten (the RayJob
 * ended or was suspended), the room goes. Once `asked` (the operator made the submitter's
 * Job), its pod comes within planTTL or the room goes. Its ask counts whole GPUs, cpu and
 * memory; GPU shares are not held.
 */
struct policy_hold_spec {
    const char *gang;     /* "namespace/name" of the gang it belongs to */
    const char *subgroup; /* the subgroup its pod will carry: "submitter" */
    const char *owner;    /* who holds it, in words: "RayJob lab/train" */
    int64_t cpu_milli, memory_bytes, gpus;
    const struct policy_label *node_selector;
    size_t nnode_selector;
    const struct policy_toleration *tolerations;
    size_t ntolerations;
    bool asked;
};

/* A hold kept as it was (nothing changed) is no change. */
int policy_hold_upsert(struct policy_cluster *c, const struct policy_hold_spec *spec, int64_t now);
int policy_hold_forget(struct policy_cluster *c, const char *gang, const char *subgroup);

/* A pod seen for the first time gets the next arrival number, and `now` as when it was seen. */
int policy_pod_upsert(struct policy_cluster *c, const struct policy_pod_spec *spec, int64_t now);

/* forget: the object disappeared. Its reservations are released. */
int policy_node_forget(struct policy_cluster *c, const char *name);
int policy_queue_forget(struct policy_cluster *c, const char *name);
/* That source no longer declares the gang (its RayCluster or PodGroup was deleted). */
int policy_gang_forget(struct policy_cluster *c, const char *key, enum policy_gang_source source);
int policy_pod_forget(struct policy_cluster *c, const char *namespace_, const char *name);
/* The pods refused only by their PodScheduled condition (policy_pod_spec.unschedulable) have
 * been handed back: from now on only muster's own answers mark a pod refused. */
void policy_parked_hints_spent(struct policy_cluster *c);
/* The pod was handed back to kube-scheduler after the answer that refused it (its view's
 * refusal): kube-scheduler asks again, so it is refused no more until an answer says so. A
 * newer refusal than the one handed back stands. */
void policy_pod_handed_back(struct policy_cluster *c, const char *namespace_, const char *name,
                            uint64_t refusal);

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

/* ---- fair share: the arithmetic alone ------------------------------------ */

/* U' of a queue that used the whole capacity over the whole window: usage is in billionths. */
#define POLICY_USAGE_UNIT INT64_C(1000000000)

/* One queue of a tree, for one resource. */
struct policy_share_queue {
    int32_t parent;   /* index of its parent in the array, -1 at the top; parents come first */
    int32_t priority;
    int64_t quota;    /* -1 = unlimited */
    int64_t limit;    /* -1 = unlimited */
    int64_t weight;   /* overQuotaWeight, 0..POLICY_MAX_WEIGHT */
    int64_t demand;   /* what it and its children ask, rolled up */
    /* U': its decayed usage over the cluster's decayed capacity, in POLICY_USAGE_UNITs,
     * 0..10 units (more is taken as 10). Read by policy_fair_share_k only. */
    int64_t usage;
    int64_t fair_share; /* out */
};

/*
 * KAI's division, exact: at each level of the tree (capacity at the top, a
 * parent's fair share below it) every queue first gets min(quota, demand,
 * limit); the rest is given to queues that still want more, highest priority
 * first, within one priority by weight, water-filling so no queue gets more
 * than its demand or its limit and what one cannot use goes to the others.
 * Integer units; equal weights end within one unit of each other.
 */
void policy_fair_share(int64_t capacity, struct policy_share_queue *q, size_t n);

/*
 * The same with each queue's usage weighed (KAI's calcShareWeights): within one priority,
 * what is left over quota goes in KAI's rounds to the queues still asking, each round by
 * shareWeight = max(0, w' + k (w' - U')), w' = weight / the weights of the queues still
 * asking; a queue whose part covers what it still wants takes that, and what it leaves is
 * divided again the same way, weights taken anew. k in thousandths (KAI's kValue x 1000).
 * k 0, or no usage at a priority, is policy_fair_share exactly. Deserved parts (quota) are
 * untouched. When every queue still asking has shareWeight 0 the rest goes to the next
 * priority, as in KAI.
 */
void policy_fair_share_k(int64_t capacity, int64_t k_milli, struct policy_share_queue *q,
                         size_t n);

/* ---- fair over time: the usage integral alone ----------------------------- */

#define POLICY_USAGE_BUCKETS 32

/*
 * One resource's use over time, as its decayed integral
 *     U(now) = integral over s in (now - window, now] of held(s) x 0.5^((now - s) / halfLife) ds
 * (unit x ms), kept in POLICY_USAGE_BUCKETS buckets of window / POLICY_USAGE_BUCKETS: each
 * bucket holds the exact decayed integral of what was added to it, so decay is exact; only
 * the oldest bucket, which the window's edge cuts, is taken as if used evenly across it.
 * A value type: copy it as a whole.
 */
struct policy_usage_slot {
    int64_t bucket; /* its number: bucket b covers [b w, (b + 1) w); INT64_MIN = empty */
    int64_t at;     /* sum is decayed to this time */
    double sum;
};

struct policy_usage {
    int64_t bucket_ms;
    struct policy_usage_slot slot[POLICY_USAGE_BUCKETS + 2];
};

/* Empty, for settings f (half_life_ms 0: every call below does nothing, and at() is 0). */
void policy_usage_init(struct policy_usage *u, const struct policy_fairness *f);
/* `amount` was held from `from` to `to` (ms). Spans may come in any order within the window;
 * what is older than the oldest bucket kept is dropped. */
void policy_usage_add(struct policy_usage *u, const struct policy_fairness *f, int64_t from,
                      int64_t to, double amount);
/* A decayed integral taken at `at` (a restored usage), as one amount at that instant. */
void policy_usage_add_mass(struct policy_usage *u, const struct policy_fairness *f, int64_t at,
                           double mass);
/* U(now). A pure function of what was added and now. */
double policy_usage_at(const struct policy_usage *u, const struct policy_fairness *f,
                       int64_t now);

/*
 * The engine's usage: what every queue holds bound (allocated, rolled up to its parents) and
 * what the cluster offers, integrated since the last call, as seen at `now`. The daemon calls
 * it every few seconds; simulate before every change of its timeline. Every refresh_ms the
 * division takes each queue's U' anew (and fair shares move). Does nothing when fairness is
 * off, or before the cluster offers anything. Time the engine has seen pass without a call is
 * counted at what is held now.
 */
int policy_usage_sample(struct policy_cluster *c, int64_t now);

/*
 * A queue's U' as written in its status before a restart (share[r], 0..10, of the cluster's
 * capacity over the window), taken at `at` on the engine's clock. Applied at the queue's first
 * sample, as if the cluster had offered what it offers then over the whole window, and the
 * queue had held what it holds then from `at` on; ignored for a queue already sampled, and
 * when fairness is off. POLICY_ENOENT: no such queue.
 */
int policy_queue_usage_seed(struct policy_cluster *c, const char *name,
                            const double share[POLICY_RES_COUNT], int64_t at);

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

struct policy_reason;

struct policy_filter_result {
    size_t n;                            /* = number of candidates */
    struct policy_node_verdict *verdicts; /* in candidate order */
    char *reason;                        /* why nothing fits; NULL if something does */
    const struct policy_reason *why;     /* the same as data (policy_reason_text made reason) */
    /* A gang ahead of this one in queue order that could use the room and
     * waits: hand its pods back to kube-scheduler. NULL = none. */
    char *ahead;
    /* Evictions were decided for this pod's gang: take them with
     * policy_evictions_take and carry them out. */
    bool evictions;
    char *detail_;                       /* owned text the verdicts point into */
    void *why_;                          /* holds why */
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

/* ---- evictions: reclaim between queues, preemption inside one ------------ */

enum policy_eviction_kind {
    POLICY_EVICT_RECLAIM, /* for a gang of another queue below its fair share */
    POLICY_EVICT_PREEMPT, /* for a gang of higher priority in the same queue */
};

/*
 * One pod to evict. Victims are whole gangs (or an elastic gang's members
 * beyond its minimum), chosen only when a dry run shows the waiting gang then
 * fits whole; their room is held for that gang until they are gone.
 */
struct policy_eviction {
    char *namespace_, *name, *uid;
    char *gang;     /* the victim's gang */
    char *queue;    /* the victim's queue */
    char *by;       /* the gang it makes room for */
    char *by_queue;
    enum policy_eviction_kind kind;
    char *reason;   /* one line: "evicted for gang lab/b of queue team-b: queue team-a is 2 GPUs over its fair share" */
    const struct policy_reason *why; /* the same as data (kind POLICY_REASON_EVICTED) */
    void *why_;                      /* holds why */
};

/*
 * Waiting gangs kube-scheduler does not ask about. It calls an extender only
 * with the nodes its own filters pass, so a pod no node has room for in its
 * count (every GPU taken) is never filtered and never gets the evictions
 * policy_filter decides. This looks at up to max waiting gangs with a pending
 * pod muster schedules, in queue order, that no filter asked about for
 * quiet_ms (nor this call): a gang whose minimum fits is left alone, nothing
 * held for it; one that does not fit gets the eviction search its filter
 * would give it. *decided: how many gangs got evictions (policy_evictions_take).
 */
int policy_evict_unasked(struct policy_cluster *c, int64_t now, int64_t quiet_ms, size_t max,
                         size_t *decided);

/* The evictions decided since the last call, to carry out; *out is heap (policy_evictions_free). */
int policy_evictions_take(struct policy_cluster *c, struct policy_eviction **out, size_t *n);
void policy_evictions_free(struct policy_eviction *v, size_t n);

/*
 * How one eviction went. ok: the pod is leaving (its deletion, seen by the
 * watch, forgets it). Refused (a PodDisruptionBudget, the pod gone): the
 * victim's gang keeps running, the plan made on its room is abandoned with a
 * reason, and the gang is no victim again until now + refused_victim_ms.
 */
int policy_eviction_done(struct policy_cluster *c, const char *namespace_, const char *name,
                         bool ok, const char *why, int64_t now);
/* ---- reasons: why a gang or pod waits, as data (docs/why.md) -------------- */

/* The checks a node is put to for a pod. A node that fails is counted at the first check it
 * fails, in this order: cordon, nodeSelector, affinity, taints (the pod's own checks), then
 * gpu-memory label and size, cpu, memory, pods, whole GPUs, a GPU share (room). */
enum policy_node_check {
    POLICY_CHECK_OK,
    POLICY_CHECK_CORDONED,
    POLICY_CHECK_SELECTOR,
    POLICY_CHECK_AFFINITY,
    POLICY_CHECK_TAINT,
    POLICY_CHECK_CPU,
    POLICY_CHECK_MEMORY,
    POLICY_CHECK_PODS,
    POLICY_CHECK_GPU,
    POLICY_CHECK_GPU_SHARE,
    POLICY_CHECK_SHARING_PAUSED,
    POLICY_CHECK_GPU_MEMORY_UNKNOWN,
    POLICY_CHECK_GPU_MEMORY_TOO_BIG,
    POLICY_CHECKS
};

/* "selector", "cpu", "gpu-share", ...: a check's name in JSON. */
const char *policy_check_name(enum policy_node_check k);

/* What one pod asks, in the engine's units. */
struct policy_ask {
    int64_t cpu_milli, memory_bytes;
    int64_t gpus;            /* whole devices */
    int32_t gpu_share_milli; /* a share of each of gpu_devices devices */
    int32_t gpu_devices;
    int64_t gpu_memory_mib;  /* a gpu-memory ask (its share depends on the node) */
};

/*
 * Every reason muster gives, with the figures it names (docs/why.md has the table: what each
 * means and what to do). "pod" below is the member the reason names, "gang" the gang that waits.
 */
enum policy_reason_kind {
    POLICY_REASON_NONE,
    POLICY_REASON_UNDECLARED,  /* gang: its RayCluster or PodGroup is not known yet */
    POLICY_REASON_MEMBERS,     /* gang: have of want pods exist (of subgroup; whole gang: NULL) */
    POLICY_REASON_INVALID,     /* pod: its ask cannot be met by any cluster (detail) */
    POLICY_REASON_NO_QUEUE,    /* queue does not exist */
    POLICY_REASON_QUEUE_LIMIT, /* queue's limit of resource: cap, used in it, the gang asks asked */
    POLICY_REASON_QUEUE_QUOTA, /* the same for a non-preemptible gang and the queue's quota */
    POLICY_REASON_NO_NODE,     /* pod: no node takes its ask (nodes, failing, most_free) */
    POLICY_REASON_GANG_ROOM,   /* gang: the want members its minimum misses do not fit at once */
    POLICY_REASON_TOPOLOGY,    /* gang: no domain it asks for holds it, in topology.c's words
                                * (detail); its figures are not kept (yet) */
    POLICY_REASON_AHEAD,       /* gang: gang other (of other_queue) is ahead and could use the room */
    POLICY_REASON_YIELD,       /* gang: gang other would evict it at once, so other goes first */
    POLICY_REASON_NO_VICTIMS,  /* gang: gang other would evict it at once were it placed on
                                * victims' room, so nothing is evicted for it */
    POLICY_REASON_IN_TURN,     /* pod beyond the minimum: pod other of subgroup goes first */
    POLICY_REASON_EXTRA,       /* pod beyond the minimum: placed once the gang is bound */
    POLICY_REASON_VICTIMS,     /* gang: waits for have evicted pods to leave; its room is held */
    POLICY_REASON_ROOM_TAKEN,  /* gang: the room freed for it went to gang other */
    POLICY_REASON_VICTIM_REFUSED, /* gang: evicting pod other for it was refused (detail) */
    POLICY_REASON_PLAN_EXPIRED,   /* gang: its plan ran out before kube-scheduler bound it */
    POLICY_REASON_EVICTED,     /* gang (or pod): evicted for gang other; waits to be placed again */
    POLICY_REASON_AT_BIND,     /* pod held at the barrier: have of want members at bind or bound */
    POLICY_REASON_BIND_FAILED, /* pod: its Binding failed (detail) */
    POLICY_REASON_NOT_OFFERED, /* pod: planned on node other, not offered; no offered node takes
                                * it (detail: why) */
    POLICY_REASON_NO_MEMORY,   /* the engine ran out of memory while planning it */
    POLICY_REASON_KINDS
};

/* "queue-limit", "no-node", ...: a kind's name in JSON. */
const char *policy_reason_kind_name(enum policy_reason_kind k);

struct policy_reason {
    enum policy_reason_kind kind;
    /* Nothing the cluster's use can change helps: the ask does not fit the nodes it may use even
     * empty, or it is more than the queue's limit (non-preemptible: its quota). */
    bool never;
    const char *gang;     /* the gang ("namespace/name"; a lone pod's own key) */
    const char *pod;      /* the member named (its name), NULL: none */
    const char *subgroup; /* its subgroup as words ("worker group gpu"), NULL: the whole gang */
    int32_t want, have;   /* counts: see the kind */
    struct policy_ask ask; /* the named member's ask */

    /* NO_NODE, GANG_ROOM: the nodes looked at (the offered ones when offered; those of
     * topology=domain when domain is set), and for NO_NODE how many failed each check. */
    int32_t nodes;
    bool offered;
    int32_t failing[POLICY_CHECKS];
    /* NO_NODE: the most free of each resource on one node that passes the pod's own checks
     * (cordon, selector, affinity, taints): cpu, memory, whole GPUs (milli); and the most room
     * on one GPU device there, for a share (milli). */
    struct policy_resources most_free;
    int32_t most_device_room;
    /* GANG_ROOM: what the missing members ask together (at least), and what is free on the
     * nodes any of them may use, summed (at most); resource is one need exceeds, or -1 when
     * none does (they do not fit together, one node at a time). */
    struct policy_resources need, free;
    /* QUEUE_LIMIT, QUEUE_QUOTA: the queue and resource; EVICTED: the victim's queue. GANG_ROOM,
     * NO_NODE: the resource short, -1 for none. */
    const char *queue;
    int resource;
    int64_t cap, used, asked; /* QUEUE_*: limit or quota, used, what the gang asks */
    /* GANG_ROOM: a heavier choice of members (one that a count lets stand for the minimum)
     * was refused by queue's limit in limit_resource (cap, used, asked as for QUEUE_LIMIT);
     * -1: none. */
    int limit_resource;

    const char *other;       /* a gang, or a pod (IN_TURN, VICTIM_REFUSED), or a node */
    const char *other_queue;
    const char *detail;      /* INVALID, VICTIM_REFUSED, BIND_FAILED, NOT_OFFERED: words */
    const char *topology;    /* the topology key it was looked at within, NULL: none */
    const char *domain;      /* ... and the domain (the first tried) */
    int32_t domains;         /* domains tried */

    /* EVICTED: reclaim (the victim's queue held used of resource over cap, its fair share, or
     * its quota when quota_mark) or preemption (priority other_priority above priority). */
    int eviction;            /* an enum policy_eviction_kind */
    bool quota_mark;
    int32_t priority, other_priority;

    /* NO_NODE, GANG_ROOM after no eviction could make room: the queue holding the most of
     * held_resource (a leaf off its own queue's path), what it holds (bound and planned), its
     * quota (-1: none) and fair share; the top-level quotas summed (but the default queue
     * nobody defined) and the cluster's capacity of it (quotas -1: some queue has no quota). */
    const char *holder;
    int held_resource;
    int64_t held, holder_quota, holder_fair, quotas, capacity;
    /* ... and when the holder is over its fair share: a queue on the gang's own path, below
     * where it parts from the holder's, that would end over its own fair share in
     * own_resource were the gang's ask placed (victim rule 1 refuses the holder's victims): its
     * name, what it uses, its fair share, and the least the gang asks (own_queue NULL: none). */
    const char *own_queue;
    int own_resource;
    int64_t own_used, own_fair, own_asked;
    /* ... or, no such queue, one that would end over its quota in held_resource (victim rule
     * 3: only what the holder holds over its own quota may be taken), while that excess is
     * less than the gang asks: its name, what it uses, its quota, the least the gang asks
     * (quota_queue NULL: none). */
    const char *quota_queue;
    int64_t quota_used, quota_of, quota_asked;

    /* Any kind: the gang is a RayJob's or RayService's cluster (owner "namespace/name", NULL:
     * none), said first ("RayJob lab/train: ..."); upgrade: a RayService's cluster waiting while
     * another of its clusters runs ("upgrade of RayService lab/svc waits: ..."). */
    const char *owner;
    enum policy_owner_kind owner_kind;
    bool upgrade;
};

/*
 * The one place a reason becomes words: one line into buf (cut to fit, always terminated).
 * Returns the length the whole line needs, as snprintf does. Quantities are written as a
 * person writes them: GPUs, cores or millicores, Gi/Mi/G/M.
 */
size_t policy_reason_text(const struct policy_reason *r, char *buf, size_t len);
/* What the holder holds over its quota in held_resource, 0 when within it (holder_quota >= 0):
 * under victim rule 3, the most that may be taken from it (the own-quota clause). */
int64_t policy_reason_takeable(const struct policy_reason *r);

/* A quantity of resource r in those units: "2 GPUs", "0.5 GPU", "4 cpu", "1500m cpu",
 * "1Gi memory". */
void policy_amount_text(int r, int64_t v, char *buf, size_t len);
/* Bytes as a Kubernetes quantity, with the suffix (binary or decimal) that keeps the number
 * smallest and exact: 1G, 4Gi, 1536Mi, 3Ki; without one, plain bytes. */
void policy_memory_text(int64_t bytes, char *buf, size_t len);

/*
 * The cluster's GPU fragmentation for the workload seen so far, in milli-GPU:
 * summed over nodes, the free GPU that pods of each shape seen could not use if
 * they filled the node, averaged over the shapes by the GPU each brought
 * (docs/gpu-sharing.md). 0 on an empty or a full cluster.
 */
double policy_gpu_fragmentation(const struct policy_cluster *c);

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
    POLICY_POD_EVICTING,  /* bound, and evicted for another gang: leaving */
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
    const struct policy_reason *why; /* the same as data */
    bool refused;             /* muster's last filter answer for it was no: kube-scheduler
                               * parked it and retries it only on events it watches */
    uint64_t refusal;         /* which answer that was (policy_pod_handed_back) */
    uint64_t arrival;
    int32_t priority;
    const char *subgroup; /* NULL = none */
    bool gang_head;       /* planned first within its gang (policy_pod_spec.gang_head) */
};

enum policy_gang_state {
    POLICY_GANG_PENDING, /* waits whole; reason says why */
    POLICY_GANG_PLANNED, /* every minimum member has a reserved place */
    POLICY_GANG_BOUND,   /* at least its minimum is bound */
};

const char *policy_gang_state_name(enum policy_gang_state s);

/* One subgroup of a gang: its minimum, and its members beyond it (extras). */
struct policy_subgroup_view {
    const char *name;
    int32_t min_members;
    int32_t members;        /* its pods that exist */
    int32_t placed;         /* of its minimum: bound, at bind or planned */
    int32_t extras_placed;  /* beyond the minimum, with a place */
    int32_t extras_waiting; /* beyond the minimum, waiting */
    const char *extra_reason; /* why the first waiting extra waits; NULL if none */
    const struct policy_reason *extra_why;
};

enum policy_hold_state {
    POLICY_HOLD_WAITING, /* its pod has not come: the room is held (node set once placed) */
    POLICY_HOLD_ARRIVED, /* its pod came and took the room */
    POLICY_HOLD_EXPIRED, /* asked for, its pod did not come within planTTL: the room went */
    POLICY_HOLD_LOST,    /* its node went, with no room elsewhere: its pod is placed on arrival */
};

const char *policy_hold_state_name(enum policy_hold_state s);

/* Room held in a gang for a member to come. */
struct policy_hold_view {
    const char *subgroup;
    const char *owner;
    enum policy_hold_state state;
    const char *node; /* where it is held; NULL while not placed */
    int64_t cpu_milli, memory_bytes, gpus;
    bool asked;
};

struct policy_gang_view {
    const char *key;
    const char *queue;
    enum policy_gang_state state;
    int32_t min_members;
    int32_t members;  /* pods that exist */
    int32_t bound;
    int32_t waiting;  /* held at the bind barrier */
    const char *reason;
    const struct policy_reason *why; /* the same as data */
    int64_t since;    /* first upsert's `now` of its earliest present member; 0: none */
    int32_t priority;
    bool preemptible;
    int64_t running_since; /* when its minimum was last bound whole; 0 = not running */
    size_t nsubgroups;     /* 0 for a count-only gang */
    const struct policy_subgroup_view *subgroups;
    /* "head 1/1, cpu 2/2 (+4 extra), gpu 3/3 (+1 extra waiting: no free GPU)" */
    const char *composition;
    /* Its sources disagree: "PodGroup lab/rc 5 disagrees with RayCluster lab/rc 6 (head 1, gpu 5),
     * which muster follows". */
    const char *conflict;
    bool declared[POLICY_GANG_SOURCES]; /* by a RayCluster, by a PodGroup */
    /* The node label of its required level (a Workload-API key); NULL: none. */
    const char *topology_key;
    /* What it asks, in words: "required block, preferred rack (Topology cluster, KAI)"; NULL:
     * nothing (neither it nor a subgroup). */
    const char *topology;
    /* The domain its placed members share at the finest of its levels that holds them all,
     * "rack=r07" (the level's alias, else its label); NULL: none placed, or no constraint. */
    const char *domain;
    enum policy_owner_kind owner_kind;
    const char *owner;      /* the RayJob's or RayService's "namespace/name"; NULL: none */
    const char *upgrade_of; /* a RayService's cluster that waits while this one runs; NULL */
    size_t nholds;          /* room held for members to come (policy_hold_spec) */
    const struct policy_hold_view *holds;
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
    /* What its bound and waiting gangs ask (gangs that could ever run), and its
     * exact fair share of the level's capacity (docs/quota.md). */
    struct policy_resources demand;
    struct policy_resources fair_share;
    int64_t reclaim_min_runtime_ms, preempt_min_runtime_ms;
    int32_t pending_gangs;
    /* Fair over time: its U' as last published (POLICY_USAGE_UNITs; the entry penalty is not
     * in it), when that was (has_recent_usage false: never), and the fair share it would have
     * if usage did not count (equal to fair_share when fairness is off). */
    bool has_recent_usage;
    struct policy_resources recent_usage;
    int64_t recent_usage_at;
    struct policy_resources fair_share_without_usage;
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
    const struct policy_label *labels; /* its labels (a simulate report groups by domain) */
    size_t nlabels;
};

/* One shape of the GPU pods seen, as the fragmentation strategy weighs them. */
struct policy_shape_view {
    int64_t cpu_milli, memory_bytes;
    int64_t gpus;            /* whole devices */
    int32_t gpu_share_milli; /* per device, for a share */
    int64_t gpu_memory_mib;  /* for a gpu-memory ask */
    int32_t gpu_devices;     /* for a share */
    bool constrained;        /* carries a nodeSelector, affinity or tolerations */
    double weight;           /* its part of the GPU asked by the pods seen (decayed), 0..1 */
};

typedef void (*policy_pod_fn)(const struct policy_pod_view *v, void *ctx);
typedef void (*policy_gang_fn)(const struct policy_gang_view *v, void *ctx);
typedef void (*policy_queue_fn)(const struct policy_queue_view *v, void *ctx);
typedef void (*policy_node_fn)(const struct policy_node_view *v, void *ctx);
typedef void (*policy_shape_fn)(const struct policy_shape_view *v, void *ctx);

/* A Topology the engine knows: its name and levels (borrowed). */
struct policy_topology_view {
    const char *name;
    size_t nlevels;
    const char *const *labels;  /* coarsest first */
    const char *const *aliases; /* NULL: none */
};

typedef void (*policy_topology_fn)(const struct policy_topology_view *v, void *ctx);
/* Visit every Topology, in no set order. */
void policy_each_topology(const struct policy_cluster *c, policy_topology_fn fn, void *ctx);

/* Visit in arrival order (pods), key order (gangs), name order (queues, nodes). */
void policy_each_pod(const struct policy_cluster *c, policy_pod_fn fn, void *ctx);
void policy_each_gang(const struct policy_cluster *c, policy_gang_fn fn, void *ctx);
/* Only the gangs whose sources disagree (conflict set), in no set order: what a periodic
 * check can afford when a hundred thousand gangs of one would each be sorted and described. */
void policy_each_conflicting_gang(const struct policy_cluster *c, policy_gang_fn fn, void *ctx);
void policy_each_queue(const struct policy_cluster *c, policy_queue_fn fn, void *ctx);
void policy_each_node(const struct policy_cluster *c, policy_node_fn fn, void *ctx);
/* The workload histogram (at most 64 shapes), heaviest first. */
void policy_each_shape(const struct policy_cluster *c, policy_shape_fn fn, void *ctx);

bool policy_pod_view_get(const struct policy_cluster *c, const char *namespace_, const char *name,
                         struct policy_pod_view *out);
/* Its subgroup views and composition text stay valid until the next call. */
bool policy_gang_view_get(const struct policy_cluster *c, const char *key,
                          struct policy_gang_view *out);

#endif
