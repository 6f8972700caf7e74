/* internal.h - the engine's private model. Not for use outside policy/. */
#ifndef MUSTER_POLICY_INTERNAL_H
#define MUSTER_POLICY_INTERNAL_H

#include "policy.h"

#define POLICY_MAX_DEVICES 16 /* gpu-fraction-num-devices cap */
#define POLICY_MAX_QUEUE_DEPTH 16
#define POLICY_OWED_MAX 64 /* gangs whose evicted pods are counted until made again */
#define POLICY_REASON_LEN 256

/* ---- name index: string -> id, keys borrowed from the objects ----------- */

struct pidx_slot {
    const char *key;
    uint32_t hash;
    int32_t id; /* -1 = empty */
};

struct pidx {
    struct pidx_slot *slots;
    size_t cap; /* power of two */
    size_t n;
};

void pidx_init(struct pidx *ix);
void pidx_cleanup(struct pidx *ix);
int32_t pidx_get(const struct pidx *ix, const char *key);
int pidx_put(struct pidx *ix, const char *key, int32_t id);
void pidx_del(struct pidx *ix, const char *key);

/* ---- copies of selectors and labels ------------------------------------- */

struct pselector {
    struct policy_label *node_selector;
    size_t nnode_selector;
    struct policy_selector_term *affinity;
    size_t naffinity;
    struct policy_toleration *tolerations;
    size_t ntolerations;
};

/* ---- objects ------------------------------------------------------------- */

struct pgroup {
    int32_t id;   /* "g<id>", unique per node */
    int32_t used; /* milli-devices */
    int32_t pods;
};

struct pnode {
    char *name;
    struct policy_label *labels;
    size_t nlabels;
    struct policy_taint *taints;
    size_t ntaints;
    bool unschedulable;
    int64_t cpu, memory, pods, gpus, gpu_memory_mib; /* allocatable */
    int64_t cpu_used, memory_used, pods_used, whole_used; /* saturated (arith.h) */
    __int128 cpu_exact, memory_exact, pods_exact, whole_exact; /* charge.c's sums behind them */
    int64_t sharing_paused_until; /* no new GPU group before this */
    bool sharing_paused;
    struct pgroup *groups;
    size_t ngroups, groups_cap;
};

/* Where a pod sits (or would sit): node and, for a share, its groups. */
struct pplace {
    int32_t node;  /* -1 = nowhere */
    int32_t share; /* per device, milli; resolved for gpu-memory */
    int32_t ngroups;
    int32_t groups[POLICY_MAX_DEVICES];
};

/* What the engine's own decisions read of a reason (policy_reason_kind is what it says). */
enum preason_kind {
    PREASON_NONE,
    PREASON_MEMBERS,   /* not every member exists yet */
    PREASON_INVALID,   /* a member's ask cannot be met by any cluster */
    PREASON_QUEUE,     /* its queue's limit (or quota, for a non-preemptible gang) */
    PREASON_AHEAD,     /* a gang ahead of it in queue order could use the room */
    PREASON_CAPACITY,  /* no room on the nodes */
    PREASON_EVICTING,  /* room is being made for it: its victims are leaving */
};

/* A topology constraint as a source gave it (policy_topology_constraint), copied. */
struct ptopo_want {
    char *topology, *required, *preferred, *dialect, *invalid;
    int32_t required_tier, preferred_tier;
};

/* A gang's subgroup: the head, a worker group, a KAI subgroup, a Volcano task. */
struct psubgroup {
    char *name;
    int32_t min;
    struct ptopo_want want;
    struct ptopo_want other; /* another dialect's, in the same object */
};

/* What one source says about a gang. */
struct pdecl {
    bool on;
    enum policy_owner_kind owner_kind;
    char *owner; /* the RayJob's or RayService's "ns/name" this source names; NULL: none */
    char *queue; /* the queue this source names; NULL: none */
    struct ptopo_want want;  /* where the whole gang goes */
    struct ptopo_want other; /* another dialect's word on it, in the same object */
    int32_t min;
    struct psubgroup *subs;
    size_t nsubs;
    bool has_priority;
    int32_t priority;
    enum policy_preemptible preemptible;
};

struct ppod {
    char *ns, *name, *uid, *key; /* key: "ns/name" */
    int32_t priority;
    uint64_t arrival;
    int64_t seen; /* the `now` of its first upsert (this incarnation) */
    int64_t cpu, memory, gpus, gpu_memory_mib;
    int32_t share, devices;
    char *invalid;
    struct pselector sel;
    char *queue; /* resolved name; never NULL */
    int32_t queue_id;      /* ppod_queue's cache, valid for queue_epoch */
    uint64_t queue_epoch;
    char *gang_key;
    int32_t gang; /* id in c->gangs */
    char *subgroup; /* its subgroup's name, or NULL */
    int32_t sub;    /* index in its gang's subgroups, -1 = none */
    char *replica;  /* its multi-host replica's name, or NULL */
    bool head, managed;
    bool nominated; /* kube-scheduler's preemption makes room for it */
    bool refused;   /* muster's last filter answer turned every offered node away */
    bool parked_hint; /* refused only from its PodScheduled condition: told once, then not */
    uint64_t refusal; /* c->refusals of the answer that refused it (policy_pod_handed_back) */
    enum policy_preemptible preemptible;
    bool extra;     /* placed beyond its gang's minimum */
    /* A stand-in for a member that does not exist yet (phold): it is planned and charged like
     * a member, but never filtered, bound or evicted, and not one of the pods views list. */
    bool held;
    uint64_t placed_epoch; /* pmodel_outside_epoch when the engine last placed it; 0 = not by it */
    int32_t evict_by;    /* EVICTING: the gang it makes room for */

    enum policy_pod_phase phase;
    char *gpu_groups_hint; /* the muster.dev/gpu-group annotation */
    char *bound_node;      /* spec.nodeName, kept even when the node is unknown */
    int64_t bound_at;      /* when it was bound, as its spec said; 0 = not known */
    struct pplace place;   /* charged placement; node -1 when nothing charged */
    char *groups_text;     /* "g0,g3" while it holds GPU groups; NULL otherwise */
    struct pwhy *why;      /* why it waits (reason.c); NULL: none of its own */
};

/* Room held in a gang for a member to come (policy_hold_spec): while WAITING its stand-in
 * (a held ppod, in subgroup sub) is a member of the gang. */
struct phold {
    char *sub;
    char *owner;
    enum policy_hold_state state;
    int32_t pod;      /* the stand-in while WAITING; -1 otherwise */
    int64_t asked_at; /* its pod was asked for then; 0: not yet */
};

struct pgang {
    char *key;                       /* a gang of one borrows its pod's key */
    int32_t id;                      /* in c->gangs */
    bool singleton;                  /* a gang of one, not in the gang index */
    struct pdecl *decl; /* [POLICY_GANG_SOURCES]; NULL until a source declares it (not a gang of one) */
    /* The composition in force (pgang_compose): subgroups and the whole minimum. */
    struct psubgroup *subs;
    size_t nsubs;
    int32_t min;
    enum policy_gang_source composed_by;
    char *conflict; /* its sources disagree: how */
    char *queue;    /* from the spec; NULL = its members' */
    enum policy_owner_kind owner_kind; /* from the first source naming one (hold.c) */
    char *owner;
    struct phold *holds; /* room held for members to come (hold.c) */
    size_t nholds;
    int topo_source; /* the source whose constraint is in force (topology.c); -1: none */
    char *topo_conflict; /* its sources (or one object's dialects) disagree on where it goes */
    bool topo_seen;      /* its shape joined the gang shapes (topology.c) */
    uint64_t arrival;
    int32_t priority;  /* cached: pgang_refresh */
    bool preemptible;  /* cached: pgang_refresh */
    bool admitted; /* its minimum was bound once */
    bool planned;
    bool waiting;  /* in c->waiting */
    int64_t deadline;      /* plan released after this */
    uint32_t expiry_slot;  /* 1 + its place in c->expiry; 0 = not scheduled */
    int64_t running_since; /* when its minimum was last bound whole (pgang_note_bound) */
    /* muster admitted it (planned it, then its minimum bound) at entered_at: the entry penalty
     * counts from then. false for a gang found running. */
    bool entered;
    int64_t entered_at;
    double penalty_left;    /* pusage_penalize's factor, computed for the clock below */
    int64_t penalty_clock;
    int64_t refused_until; /* an eviction of it was refused: no victim before then */
    int32_t awaiting;      /* its victims still leaving */
    int64_t asked;         /* the last filter of one of its members; 0 = never */
    int64_t in_turn_since; /* an extra first turned away for a subgroup ahead; 0 = none */
    int32_t yields_to;     /* turned away last for this gang, which would evict it at once
                            * (stable.c): that gang does not wait for it; -1 = none */
    int32_t waits_for;     /* turned away last for this gang (ahead, or yielded to); -1 */
    int64_t unasked_next;  /* policy_evict_unasked looks at it again from then */
    /* Its last plan failed at unplaceable_at (0: no such verdict kept), with the room, node and
     * change epochs then: unplaceable.c answers from that verdict while they hold. */
    int64_t unplaceable_at;
    uint64_t unplaceable_room, unplaceable_nodes, unplaceable_change, unplaceable_charge;
    int64_t unasked_backoff; /* ... after this long, doubled by each look that decided nothing */
    bool could_run;             /* pgang_could_run, valid for could_run_epoch */
    uint64_t could_run_epoch;
    enum preason_kind reason_kind; /* preason_class of why's kind */
    struct pwhy *why;              /* why it waits (reason.c) */
    int32_t *members; /* &first until a second member comes */
    int32_t first;
    size_t nmembers, members_cap;
};

/* A queue's usage over time (usage.c); carried across upserts of its spec. */
struct pqueue_usage {
    struct policy_usage used[POLICY_RES_COUNT]; /* its allocated (rolled up), integrated */
    bool sampled;                               /* used[] runs up to the cluster's usage_clock */
    bool seeded;                                /* a restored U' waits for the first sample */
    int64_t seed_at;
    double seed[POLICY_RES_COUNT];
    double recent[POLICY_RES_COUNT]; /* U' as last published */
    bool published;
};

struct pqueue {
    char *name;
    char *parent;
    int32_t priority;
    bool implicit; /* the default queue, made because nobody defined it */
    uint64_t arrival;
    int32_t parent_id;      /* pqueue_parent's cache, valid for parent_epoch */
    uint64_t parent_epoch;
    struct policy_resources quota, limit, weight;
    int64_t reclaim_min_runtime, preempt_min_runtime;
    bool upgrade_burst; /* a RayService's upgrade may go over its limit by the running cluster */
    struct policy_resources allocated, reserved; /* rolled up; saturated (arith.h) */
    struct policy_resources nonpreemptible;      /* of allocated + reserved, rolled up */
    /* charge.c's exact sums behind the three above */
    __int128 allocated_exact[POLICY_RES_COUNT], reserved_exact[POLICY_RES_COUNT];
    __int128 nonpreemptible_exact[POLICY_RES_COUNT];
    struct policy_resources demand, fair_share;  /* pfair_refresh */
    struct policy_resources fair_share_plain;    /* ... as if usage did not count */
    struct pqueue_usage *usage;                  /* NULL: nothing sampled or seeded yet */
    double penalty[POLICY_RES_COUNT];            /* pfair_refresh: entry penalties, rolled up */
    int32_t pending_gangs;                       /* refreshed by views */
    /* What the minimum of the first waiting gang in it or below it asks: queues are compared
     * with their next gang, not with each gang that asks (porder_refresh). */
    struct policy_resources next_need;
};

/* When each gang's plan is next looked at: a min-heap on `at`, so expiry costs what expires. */
struct pexpiry_entry {
    int64_t at;
    struct pgang *gang;
};

struct pexpiry {
    struct pexpiry_entry *v;
    size_t n, cap;
    bool lost; /* out of memory once: some gang may be missing; look at every gang */
};

/* A growable table of heap objects with free slots; ids are stable. */
struct ptable {
    void **items;
    size_t n, cap;
    size_t nfree;      /* NULL slots below n */
    int32_t *free_ids; /* the NULL slots, as a stack (capacity cap) */
};

/* A growable array of ids. */
struct pids {
    int32_t *v;
    size_t n, cap;
};

struct policy_cluster {
    struct policy_options opts;
    char *default_queue;
    struct ptable nodes, pods, gangs, queues;
    struct pidx node_ix, pod_ix, uid_ix, gang_ix, queue_ix;
    struct pexpiry expiry;
    uint64_t next_arrival;
    int64_t clock;        /* the latest time a caller told the engine */
    bool fair_dirty;      /* fair shares need pfair_refresh */
    /* Fair over time (usage.c): the capacity the top of the tree divides (pfair_refresh), and
     * its integral; the time usage runs up to; when U' was last published and the capacity's
     * decayed integral then (what penalties are weighed against). */
    struct policy_resources capacity;
    struct policy_usage capacity_used[POLICY_RES_COUNT];
    bool usage_started, usage_published_once;
    int64_t usage_clock;
    int64_t usage_published;
    double usage_total[POLICY_RES_COUNT];
    uint64_t nodes_epoch; /* bumped when what a node offers changes */
    int64_t gpu_mib_max;  /* the largest labelled device memory, valid for gpu_mib_epoch */
    uint64_t gpu_mib_epoch;
    uint64_t room_epoch;  /* bumped when a charge is given back (puncharge) */
    uint64_t charge_epoch; /* bumped when a charge is taken or leaves a queue: what a reason
                            * says of free room and who holds it changes */
    uint64_t queues_epoch; /* bumped when a queue comes or goes: names resolve again */
    /* Bumped by every change from outside the engine (a pod made or gone, a node, queue or gang
     * changed), never by its own decisions: what it placed since the last one is no victim
     * (reclaim.c), since no decision of its own may undo another. Starts at 1. */
    uint64_t change_epoch;
    /* Of those bumps, the pods made again in place of pods the engine evicted (a gang's
     * controller answering its own decision, not a change from outside): pmodel_outside_epoch.
     * owed: per gang, the pods it evicted that have gone and are not made again yet. */
    uint64_t remade;
    struct powed {
        char *gang;
        int32_t n;
    } owed[POLICY_OWED_MAX];
    size_t nowed;
    uint64_t refusals; /* filter answers that turned a pod away, counted */
    struct pids waiting;  /* gangs that may wait (a superset; checked when read) */
    struct pids owned;    /* gangs with an owner (a RayJob, a RayService): hold.c's siblings */
    struct pids holding;  /* gangs with holds (hold.c) */
    bool waiting_lost;    /* out of memory once: a gang may be missing from waiting */
    struct policy_eviction *evictions; /* decided, not yet taken */
    size_t nevictions, evictions_cap;
    /* What policy_gang_view_get's subgroup views point into, until the next call. */
    struct policy_subgroup_view *view_subs;
    size_t view_subs_cap;
    char view_text[POLICY_REASON_LEN * 2];
    struct policy_hold_view view_holds[4];
    char view_domain[POLICY_REASON_LEN * 4], view_topology[POLICY_REASON_LEN * 4];
    char view_conflict[POLICY_REASON_LEN * 4];
    bool maybe_partial;    /* a gang may be bound below its minimum */
    size_t bound_unplaced; /* bound pods whose node is not known yet */
    size_t paused_nodes;   /* nodes where GPU sharing is paused */
    struct pfrag *frag;    /* the workload's shapes, per-node fragmentation (frag.c) */
    struct pnode_order *order; /* every node in the strategy's order, kept (node_order.c) */
    struct ptable topologies;  /* struct ptopology */
    struct pidx topology_ix;
    struct ptopo_shapes *gang_shapes; /* the gangs seen, as domains are priced (topology.c) */
    /* While set, gangs are planned only on the nodes it marks (per node id): reclaim looks
     * for victims one domain at a time. */
    const uint8_t *topo_fence;
    size_t topo_fence_n;
    char scratch[POLICY_REASON_LEN];
};

/* ---- reason.c, explain.c: why a gang or pod waits, as data ---------------- */

/* A reason being made: its figures, strings borrowed from the engine's objects (they must
 * outlive it until it is kept or shown), and buffers for the words it makes itself. */
struct preason {
    struct policy_reason r;   /* r.detail and r.subgroup come from the buffers when set */
    char detail[POLICY_REASON_LEN];
    char sub[128];
};

/* A reason kept: counted, its figures, copies of their strings and its line in one block. */
struct pwhy {
    uint32_t refs;
    struct policy_reason r;
    char *text; /* policy_reason_text of r */
};

/* Clear r to kind about gang (borrowed). */
void preason_init(struct preason *r, enum policy_reason_kind kind, const char *gang);
void preason_detail(struct preason *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void preason_ask(struct policy_ask *a, const struct ppod *p);
enum preason_kind preason_class(enum policy_reason_kind k);
size_t preason_text(const struct preason *r, char *buf, size_t len);
/* Kept (refs 1); NULL when out of memory. */
struct pwhy *pwhy_new(const struct preason *r);
struct pwhy *pwhy_hold(struct pwhy *w);
void pwhy_drop(struct pwhy *w);
/* *slot holds w (a reference taken) instead of what it held. */
void pwhy_set(struct pwhy **slot, struct pwhy *w);
/* A reason kept for p alone (NULL: it has none of its own). */
void ppod_say(struct ppod *p, const struct preason *r);

/* Which nodes of order take p, as the cluster stands: r's pod, ask, nodes, failing and
 * most_free; true when some node takes it. */
bool preason_nodes(const struct policy_cluster *c, const struct ppod *p, const int32_t *order,
                   size_t n, struct policy_reason *r);
/* p fits no node of order (NULL: of the cluster) even empty. */
bool preason_fits_nowhere(const struct policy_cluster *c, const struct ppod *p,
                          const int32_t *order, size_t n);
/* The members g's minimum misses (missing_sub per subgroup, total in all, from pool) do not fit
 * on the nodes of order: failed (of subgroup sub, -1: none) fits none alone, or what they ask
 * together exceeds what is free, or they do not fit together. Into why, as the cluster stands. */
void preason_gang_room(const struct policy_cluster *c, const struct pgang *g,
                       struct ppod *const *pool, size_t npool, const int32_t *missing_sub,
                       int32_t total, const struct ppod *failed, int32_t sub,
                       const int32_t *order, size_t n, struct preason *why);
/* No eviction made room for g: name the queue holding most of what it is short of. */
void preason_holders(struct policy_cluster *c, const struct pgang *g, struct preason *why);

/* ---- table.c: object tables, lookups, owned strings, selector copies ---- */

int32_t ptable_add(struct ptable *t, void *item);
void ptable_remove(struct ptable *t, int32_t id);
void ptable_cleanup(struct ptable *t);
#define PTABLE_AT(t, type, i) ((type *)(t)->items[(i)])

char *pstrdup(const char *s);
/* A copy was made: there was nothing to copy (src NULL), or copy holds it. */
bool pcopied(const char *src, const char *copy);
char *pstrfmt(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void pset_str(char **dst, const char *text);
int pselector_copy(struct pselector *dst, const struct policy_label *ns, size_t nns,
                   const struct policy_selector_term *aff, size_t naff,
                   const struct policy_toleration *tol, size_t ntol);
void pselector_cleanup(struct pselector *s);
bool pselector_equal(const struct pselector *a, const struct pselector *b);

struct pnode *pnode_at(const struct policy_cluster *c, int32_t id);
struct ppod *ppod_at(const struct policy_cluster *c, int32_t id);
struct pgang *pgang_at(const struct policy_cluster *c, int32_t id);
struct pqueue *pqueue_at(const struct policy_cluster *c, int32_t id);
struct ppod *ppod_find(const struct policy_cluster *c, const char *ns, const char *name);
struct pqueue *pqueue_find(const struct policy_cluster *c, const char *name);
struct pqueue *pqueue_parent(const struct policy_cluster *c, const struct pqueue *q);
/* The queues of a and b where their paths from the top part (the first queues below their
 * deepest common ancestor); *la or *lb is NULL when that path is a prefix of the other. */
void pqueue_leveled(const struct policy_cluster *c, const char *qa, const char *qb,
                    const struct pqueue **la, const struct pqueue **lb);
/* The pod's gang (a gang of one included). */
struct pgang *ppod_gang(const struct policy_cluster *c, const struct ppod *p);
/* The pod's queue (NULL while no such queue exists), without a name lookup each time. */
struct pqueue *ppod_queue(const struct policy_cluster *c, const struct ppod *p);

int pids_add(struct pids *s, int32_t id);
void pids_remove(struct pids *s, int32_t id);
void pids_cleanup(struct pids *s);

/* ---- ask.c: what a pod asks for, on its own ------------------------------ */

/* An ask the engine does not count as given (negative, or over a cap of policy.h), in words. */
bool pask_uncountable(const struct policy_pod_spec *s, char *why, size_t len);
/* What the engine counts of an asked amount: within [0, cap]. */
int64_t pask_counted(int64_t v, int64_t cap);
/* policy_pod_spec_valid on the pod's copy of its ask. */
bool ppod_ask_valid(const struct ppod *p, char *why, size_t len);
bool ppod_same_shape(const struct ppod *a, const struct ppod *b);

/* ---- fit.c: may this pod go to this node? ------------------------------- */

enum pfit_why {
    PFIT_OK,
    PFIT_UNSCHEDULABLE_NODE,
    PFIT_SELECTOR,
    PFIT_AFFINITY,
    PFIT_TAINT,
    PFIT_CPU,
    PFIT_MEMORY,
    PFIT_PODS,
    PFIT_GPU,
    PFIT_GPU_SHARE,
    PFIT_SHARING_PAUSED,
    PFIT_GPU_MEMORY_UNKNOWN,
    PFIT_GPU_MEMORY_TOO_BIG,
    PFIT_COUNT
};

bool pfit_static(const struct pnode *n, const struct ppod *p, enum pfit_why *why);
bool pfit_resources(const struct pnode *n, const struct ppod *p, enum policy_strategy s,
                    struct pplace *out, enum pfit_why *why);
bool pfit_unresolvable(enum pfit_why why);
int32_t pfit_share_on(const struct pnode *n, const struct ppod *p);

/* ---- groups.c: a node's GPU groups (shared devices) ---------------------- */

int32_t pnode_group_find(const struct pnode *n, int32_t id);
/* Devices neither taken whole nor opened as a group. */
int64_t pnode_free_devices(const struct pnode *n);
/* Choose `devices` distinct groups for a share (opening new ones as needed) into out. */
bool pgroups_pick(const struct pnode *n, int32_t share, int32_t devices, enum policy_strategy s,
                  struct pplace *out);
struct pgroup *pgroup_get(struct pnode *n, int32_t id); /* opens it if new; NULL on ENOMEM */
void pgroup_drop_empty(struct pnode *n);
void ppod_groups_text(const struct pnode *n, struct ppod *p);
/* Groups named in "g0,g3" into out (at most max); -1 if the text is not such a list. */
int32_t pgroups_parse(const char *text, int32_t *out, int32_t max);

/* ---- charge.c: what a placed pod takes from its node and its queues ------ */

void pcharge(struct policy_cluster *c, struct ppod *p, const struct pplace *pl);
void puncharge(struct policy_cluster *c, struct ppod *p);
/* Move a pod's queue charge between reserved and allocated. */
void pcharge_mark_bound(struct policy_cluster *c, struct ppod *p, bool bound);
/* Phase EVICTING: out of its queues, still on its node; and back to BOUND. */
void pcharge_mark_evicting(struct policy_cluster *c, struct ppod *p);
void pcharge_mark_staying(struct policy_cluster *c, struct ppod *p);
void pqueue_account(struct policy_cluster *c, struct pqueue *q, const struct policy_resources *r,
                    bool bound, int sign);
/* Usage is rolled up along parents; when the tree changes, count it again. */
void pqueue_recount(struct policy_cluster *c);
void ppod_charge_resources(const struct ppod *p, int32_t share, struct policy_resources *out);
/* The share a pod asks per device before it has a node: its gpu-fraction, or for a gpu-memory
 * ask the least it would take (on the largest labelled device); 0 for none. */
int32_t ppod_share_asked(const struct policy_cluster *c, const struct ppod *p);

/* ---- gang.c: composition, members, minimum, queue, state ---------------- */

/* Which members a tally counts. */
enum pgang_count {
    PGANG_BOUND,   /* bound */
    PGANG_AT_BIND, /* bound, held at the barrier or binding */
    PGANG_PLACED,  /* any of those, or planned */
};

bool pgang_declared(const struct pgang *g);
/* What source s declares of g (all off when nothing ever did). */
const struct pdecl *pgang_decl(const struct pgang *g, int s);
int32_t pgang_min(const struct policy_cluster *c, const struct pgang *g);
const char *pgang_queue(const struct policy_cluster *c, const struct pgang *g);
int32_t pgang_priority(const struct policy_cluster *c, const struct pgang *g);
bool pgang_preemptible(const struct policy_cluster *c, const struct pgang *g);
void pgang_refresh(struct policy_cluster *c, struct pgang *g);
/* Recompute the composition in force from the sources, and each member's subgroup. */
int pgang_compose(struct policy_cluster *c, struct pgang *g);
int32_t pgang_sub_of(const struct pgang *g, const char *name);
void pgang_sub_label(const struct pgang *g, int32_t sub, char *buf, size_t len);
void psubs_free(struct psubgroup *subs, size_t n);
void pgang_counts(const struct policy_cluster *c, const struct pgang *g, int32_t *members,
                  int32_t *bound, int32_t *holding, int32_t *waiting);
int32_t pgang_tally(const struct policy_cluster *c, const struct pgang *g, enum pgang_count what,
                    int32_t *per_sub);
/* What g's minimum still asks: pending members up to it, with the shares they ask. */
void pgang_minimum_need(const struct policy_cluster *c, const struct pgang *g,
                        struct policy_resources *need);
/* The k smallest of v[0..n) (sorted in place), summed saturating. */
int64_t pleast_sum(int64_t *v, size_t n, int32_t k);
/* The least pool's members could ask, per resource, to fill missing_sub[s] of each subgroup
 * and total in all (each resource on its own: a lower bound of any choice). */
void pgang_least_need(const struct policy_cluster *c, const struct pgang *g,
                      const struct ppod *const *pool, size_t npool, const int32_t *missing_sub,
                      int32_t total, struct policy_resources *need);
bool pgang_satisfied(const struct policy_cluster *c, const struct pgang *g, enum pgang_count what);
bool pgang_waits(const struct policy_cluster *c, const struct pgang *g);
void pgang_mark_waiting(struct policy_cluster *c, struct pgang *g);
void pgang_unmark_waiting(struct policy_cluster *c, struct pgang *g);
/* Before c->waiting is read: after running out of memory marking a gang, every gang with a
 * pending member goes back in (and the next read tries again if that runs out too). */
void pgang_waiting_refill(struct policy_cluster *c);
/* g waits for r (NULL: it no longer waits for anything); the reason it keeps, or NULL. */
struct pwhy *pgang_set_reason(struct pgang *g, const struct preason *r);
/* Every pending member of g is told why it waits (NULL: that it no longer waits for it). */
void pgang_tell_pending(struct policy_cluster *c, struct pgang *g, struct pwhy *why);
/* g waits for r, and so do its pending members. */
void pgang_waits_for(struct policy_cluster *c, struct pgang *g, const struct preason *r);
/* Does w wait for u, following whom each gang was last turned away for (waits_for)? 1 yes,
 * 0 no, -1 a chain of 16 steps or more (or a loop that does not pass u). */
int pgang_waits_on(const struct policy_cluster *c, const struct pgang *w, const struct pgang *u);
/* Evictions were decided for g: it and its pending members say they wait for the victims. */
void pgang_note_awaiting(struct policy_cluster *c, struct pgang *g);
void pgang_settle(struct policy_cluster *c, struct pgang *g);
void pgang_note_bound(struct policy_cluster *c, struct pgang *g);
/* Every planned (not yet at bind) member gives its place back. */
void pplan_release(struct policy_cluster *c, struct pgang *g);
/* The plans of g's members on node only (-1: every node, and g is planned no more). */
void pplan_release_on(struct policy_cluster *c, struct pgang *g, int32_t node);

/* ---- hold.c: room held for members to come; owners -------------------------- */

/* The owner in force: the first source's (in source order) that names one; g joins or leaves
 * c->owned. */
int powner_refresh(struct policy_cluster *c, struct pgang *g);
/* A RayService's cluster that runs while g (another of its clusters) waits: g is its upgrade.
 * NULL: g is no upgrade. */
struct pgang *powner_upgrade_of(const struct policy_cluster *c, const struct pgang *g);
/* Are a and b clusters of one RayService (the one never evicted for the other)? */
bool powner_siblings(const struct pgang *a, const struct pgang *b);
/* Names a waiting gang's owner in why (NULL: nothing), which its text then starts with:
 * "upgrade of RayService lab/s waits: ", "RayJob lab/j: " (reason.c). */
void powner_explain(const struct policy_cluster *c, const struct pgang *g, struct preason *why);
/* What g's upgrade may go over queue q's limit by: what its running sibling holds under q, when
 * q lets upgrades burst (policy_queue_spec.upgrade_burst); else nothing. */
void powner_burst(const struct policy_cluster *c, const struct pgang *g, const struct pqueue *q,
                  struct policy_resources *extra);
/* Each hold's subgroup joins the composition: minimum 1 while its stand-in waits. */
int phold_compose(struct pgang *g, struct psubgroup **subs, size_t *nsubs, int32_t *min);
/* A pod of a held subgroup arrived in g: it takes the stand-in's room, if it fits there. */
void phold_arrive(struct policy_cluster *c, struct pgang *g, struct ppod *p, int64_t now);
/* g runs but for its holds (its real minimum bound): a stand-in without a place (its node
 * went, or the hold came after the gang was bound) is placed on its own, or the room is lost.
 * True when a stand-in changed. */
bool phold_settle_gang(struct policy_cluster *c, struct pgang *g);
/* The same for every gang with holds, each then admitted if that was all it missed. */
void phold_settle(struct policy_cluster *c);
/* g neither runs nor is planned: its stand-ins give their room back (planned with it again). */
void phold_release(struct policy_cluster *c, struct pgang *g);
/* Holds whose pods were asked for longer than planTTL ago give their room back. */
void phold_expire(struct policy_cluster *c, int64_t now);
void phold_free_all(struct pgang *g);

/* ---- expire.c: every deadline ------------------------------------------- */

/* The gang's plan is in use at now: it is kept for another planTTL. */
void pgang_plan_renew(struct policy_cluster *c, struct pgang *g, int64_t now);
/* Room made for g went unused (a victim refused, or its plan ran out unbound): the unasked
 * look (unasked.c) leaves it alone for refusedVictimWait, as long as a refused victim is
 * spared. */
void pgang_pause_look(struct policy_cluster *c, struct pgang *g, int64_t now);
/* The gang is going away: nothing is scheduled for it any more. */
void pgang_expiry_cancel(struct policy_cluster *c, struct pgang *g);
void pexpiry_cleanup(struct pexpiry *e);

/* ---- queue.c: what a queue allows -------------------------------------- */

int64_t pqueue_used(const struct pqueue *q, int r);
/* May `need` more be charged to queue (limits through every ancestor; quota
 * for a non-preemptible gang g)? On refusal kind and why say why. */
int pqueue_room(const struct policy_cluster *c, const struct pgang *g, const char *queue,
                const struct policy_resources *need, struct preason *why);
int64_t pqueue_allocatable(const struct pqueue *q, int r);
double pqueue_saturation(const struct pqueue *q, const struct policy_resources *used);
/* A queue refusal made while a trial held placements: its use and ask as the cluster stands
 * (the trial rolled back), what the trial had charged counted into the ask. */
void pqueue_reason_settle(const struct policy_cluster *c, struct preason *why);

/* ---- fairshare.c: every queue's fair share ------------------------------- */

/* Recompute demand and fair share of every queue if anything changed. */
void pfair_refresh(struct policy_cluster *c);
/* Could the gang ever run (valid asks, nodes big enough, within limits)? Cached. */
bool pgang_could_run(struct policy_cluster *c, struct pgang *g);

/* ---- usage.c: fair over time -------------------------------------------- */

/* The settings with their defaults filled in (window 7 days, refresh 60 s). */
void pusage_settings(struct policy_fairness *f);
bool pusage_on(const struct policy_cluster *c);
/* U' of q for resource r as the division weighs it now: published, plus its entry penalties
 * (pfair_refresh's), in POLICY_USAGE_UNITs. */
int64_t pusage_weighed(const struct policy_cluster *c, const struct pqueue *q, int r);
/* The entry penalty a bound pod of gang g adds to its queues at the engine's clock, into
 * q->penalty (before the roll-up). */
void pusage_penalize(const struct policy_cluster *c, struct pgang *g,
                     const struct policy_resources *ask, struct pqueue *q);
void pqueue_usage_free(struct pqueue_usage *u);

/* ---- statement.c: trial changes, kept or rolled back (KAI's Statement) ---- */

/* One change: the pod's state before it (its place, phase and extra flag). */
struct pstep {
    struct ppod *pod;
    struct pplace place; /* node -1: it held nothing */
    enum policy_pod_phase phase;
    bool extra;
    uint64_t placed_epoch;
    bool placed; /* the step placed it (else it lifted it) */
};

struct pstatement {
    struct pstep *steps;
    size_t n, cap;
};

/* Charge p at pl, planned. ENOMEM: nothing changed. */
int pstatement_place(struct policy_cluster *c, struct pstatement *st, struct ppod *p,
                     const struct pplace *pl);
/* Take p's charge away; it is in phase `after` until rolled back. ENOMEM: nothing changed. */
int pstatement_lift(struct policy_cluster *c, struct pstatement *st, struct ppod *p,
                    enum policy_pod_phase after);
/* Undo the steps after mark (st->n when it was taken), last first: each pod as it was. */
void pstatement_rollback(struct policy_cluster *c, struct pstatement *st, size_t mark);
/* Undo every step and free the statement. */
void pstatement_discard(struct policy_cluster *c, struct pstatement *st);
/* The changes stand: what the pods it placed were told while they waited is no longer so;
 * frees the statement. */
void pstatement_keep(struct pstatement *st);

/* ---- plan.c: all or nothing --------------------------------------------- */


/* ---- unplaceable.c: a gang that cannot be planned, asked again at once ------- */

/* Keep g's failed plan as its verdict (g->reason), as the cluster stands at now. */
void punplaceable_note(struct policy_cluster *c, struct pgang *g, int64_t now);
/* Does that verdict still hold: nothing given back, no node or queue or gang changed, within
 * PUNPLACEABLE_MS of it? */
bool punplaceable_known(const struct policy_cluster *c, const struct pgang *g, int64_t now);

/* ---- topology.c, topo_place.c: gangs in domains ---------------------------- */

/* A Topology: node labels, coarsest first. */
struct ptopology {
    char *name;
    size_t nlevels;
    char **labels, **aliases; /* alias NULL: none */
};

/* What a gang's minimum still misses: per subgroup, and the rest any member may fill. */
struct pmissing {
    int32_t *sub;  /* per subgroup */
    int32_t slack; /* beyond the subgroups' minimums, up to the whole one */
    int32_t total;
};

/* Which pending members one placement pass may take. */
struct pplace_filter {
    const char *replica;   /* only this multi-host replica's; NULL: any (see unreplicated) */
    bool unreplicated;     /* only members of no replica */
    const bool *skip_sub;  /* per subgroup: none of its members (placed apart); NULL: none */
};

bool pplace_filter_takes(const struct pplace_filter *f, const struct ppod *p);

/* A way to place a gang's pending members on the nodes of order, into st, taking what m
 * misses (and counting it off); -1 with why when it cannot (the caller rolls st back). */
typedef int (*pplace_fn)(struct policy_cluster *c, const int32_t *order, size_t norder,
                         struct pmissing *m, const struct pplace_filter *f,
                         struct pstatement *st, char *why, size_t len, void *ctx);

int ptopo_want_copy(struct ptopo_want *dst, const struct policy_topology_constraint *src);
void ptopo_want_free(struct ptopo_want *w);
bool ptopo_want_same(const struct ptopo_want *w, const struct policy_topology_constraint *s);
bool ptopo_want_set(const struct ptopo_want *w);
void ptopo_topologies_free(struct policy_cluster *c);
/* Every gang's disagreement again: a Topology came, changed or went. */
void ptopo_refresh_all(struct policy_cluster *c);
/* The constraint in force (the first source, in source order, that names one) and what the
 * sources say against it; call after pgang_compose. */
void ptopo_refresh(struct policy_cluster *c, struct pgang *g);
/* Does g (or a subgroup of it) ask for any topology? */
bool ptopo_constrained(const struct pgang *g);
/* Node n's value of label key; NULL: none. */
const char *ptopo_value(const struct pnode *n, const char *key);
/* g's shape (its minimum's GPUs) joins the gangs seen, once per gang. */
void ptopo_observe(struct policy_cluster *c, struct pgang *g);
void ptopo_shapes_free(struct policy_cluster *c);

/* Place pool's members within the domains g and its subgroups ask for (topo_place.c): the most
 * local level with a domain that holds them, the domain that strands the least; without a
 * constraint, place over all of order. */
int ptopo_place(struct policy_cluster *c, struct pgang *g, struct ppod *const *pool,
                size_t npool, const struct pmissing *m, const int32_t *order, size_t norder,
                struct pstatement *st, pplace_fn place, void *ctx, char *why, size_t len);
/* Is member p, placed, asked about candidates none of which is in the domain its gang must
 * keep to (one of kube-scheduler's placements)? Then why says so. */
bool ptopo_elsewhere(const struct policy_cluster *c, const struct pgang *g, const struct ppod *p,
                     const char *const *cands, size_t n, char *why, size_t len);
/* The candidates in the domains p must keep to (its gang's required one, its subgroup's and
 * its replica's, as its placed fellows hold them), into out (n slots); with prefer, only those
 * in its preferred ones too. All without a constraint. */
size_t ptopo_within(const struct policy_cluster *c, const struct pgang *g, const struct ppod *p,
                    const char *const *cands, size_t n, bool prefer, const char **out);
/* The gang's domain in words ("rack=r07") into buf; false: none. */
bool ptopo_domain_text(const struct policy_cluster *c, const struct pgang *g, char *buf,
                       size_t len);
/* What it asks, in words, into buf; false: nothing. *key: its required level's label. */
bool ptopo_want_text(const struct policy_cluster *c, const struct pgang *g, char *buf,
                     size_t len, const char **key);
/* The domains of g's required level that a victim search may try, each as a node mask (heap,
 * c->nodes.n bytes), best first, at most max; 0 when g has no required level. */
size_t ptopo_search_fences(struct policy_cluster *c, struct pgang *g, uint8_t **out, size_t max);

/* Plan every missing minimum member of a gang into st; the rest of the
 * cluster's reservations are taken. On failure nothing of it stays in st and
 * kind/why say why (why NULL: not wanted, the figures cost a look at every node).
 * The gang's own state is not touched. */
int pplan_gang_try(struct policy_cluster *c, struct pgang *g, const struct ppod *must,
                   struct pstatement *st, enum preason_kind *kind, struct preason *why);
/* The same, made the gang's plan (or its reason). */
int pplan_gang(struct policy_cluster *c, struct pgang *g, const struct ppod *must, int64_t now);
/* Place one pod on its own within candidates (NULL: every node), into st. */
int pplan_one_try(struct policy_cluster *c, struct ppod *p, const char *const *candidates,
                  size_t ncandidates, struct pstatement *st, struct preason *why);
/* Move p (pending, or planned elsewhere) onto one of the candidates, its queue checked with
 * its share there; it keeps its phase (a pending pod is planned). On failure it stays as it
 * was and why says why. */
int pplan_move(struct policy_cluster *c, struct ppod *p, const char *const *candidates,
               size_t ncandidates, struct preason *why);
/* What members ask together: with their planned shares, or the shares they ask. */
void pmembers_need(const struct policy_cluster *c, const struct ppod *const *members, size_t n,
                   bool placed, struct policy_resources *need);

/* ---- node_order.c: nodes in the strategy's order ------------------------- */

/* ids (known nodes) in the order the strategy tries them, into out[n]. */
void pnode_order(struct policy_cluster *c, const int32_t *ids, size_t n, int32_t *out);
/* Every node in that order (heap; NULL when out of memory). */
int32_t *pnode_order_every(struct policy_cluster *c, size_t *n);
/* Node id's fill changed (charged, released, updated, gone): the kept order moves it. */
void pnode_order_touch(struct policy_cluster *c, int32_t id);
void pnode_order_cleanup(struct policy_cluster *c);
int64_t pnode_fill_score(const struct pnode *n);

/* ---- order.c: who goes first --------------------------------------------- */

/* Each queue's next gang (its next_need), from the waiting gangs as they are now: called
 * before gangs are ordered, after pfair_refresh. */
void porder_refresh(struct policy_cluster *c);
/* KAI's order between two waiting gangs' minimums: < 0 when a goes first. */
int porder_gangs(struct policy_cluster *c, struct pgang *a, struct pgang *b);
/* Keep *x among best[0..*n), the first max elements of a stream in cmp's order: a bounded
 * selection, not a sort (when full, the last one goes). Elements of size bytes, as qsort_r. */
void porder_keep_first(void *best, size_t *n, size_t max, size_t size, const void *x,
                       int (*cmp)(const void *, const void *, void *), void *ctx);
/*
 * With u's placement (the gang's minimum, or extra pod x of it) charged: is
 * there a waiting gang ahead of it in order that could run without u's
 * placement and not with it? That gang, or NULL.
 */
struct pgang *porder_blocker(struct policy_cluster *c, struct pgang *u, struct ppod *x,
                             struct pstatement *u_placed, int64_t now);
/* Dry-place into st the units the order puts ahead of g (x: its member beyond the minimum;
 * NULL: its minimum), each that fits on what those before it left, but skip (one whose
 * placement is charged already): the room g (x) will find once they have gone first. */
void porder_place_ahead(struct policy_cluster *c, struct pgang *g, struct ppod *x,
                        const struct pgang *skip, struct pstatement *st);
/*
 * Extras of one gang go to its subgroups in KAI's subgroup order (a subgroup
 * below its minimum first, then the lowest placed / minimum, a minimum of 0
 * last, then the order declared). With extra x's placement charged: is there a
 * pending member of a subgroup ahead of x's that could be placed without it
 * and not with it? That member, or NULL.
 */
struct ppod *porder_subgroup_first(struct policy_cluster *c, struct pgang *g, struct ppod *x,
                                   struct pstatement *x_placed);

/* ---- reclaim.c: taking room back ----------------------------------------- */

/* An eviction search that found victims: they are taken off their nodes and the waiting gang
 * is planned on their room, until it is decided or aborted. */
struct psearch;

/*
 * g waits for capacity (or for room under a queue's limit): would evictions (reclaim from
 * queues holding more than they may, by the victim rule; then preemption inside its own)
 * make it fit whole? The chosen search, or NULL. With x, a pending member beyond the minimum
 * of g (bound whole), the same for x alone.
 */
struct psearch *preclaim_choose(struct policy_cluster *c, struct pgang *g, struct ppod *x,
                                int64_t now);
/* Decided: the victims are queued for eviction (a plan in transit is handed over), the gang
 * (or x) stays planned on their room and awaits them. Frees s. */
int preclaim_decide(struct psearch *s);
/* Nothing decided: everything as it was. Frees s. */
void preclaim_abort(struct psearch *s);
/* Could w's search take u at all, and of which kind? The cheap part of the rule: the same
 * queue and a strictly higher priority (preemption), or another queue's line where u's own
 * queue holds more than it may (reclaim). u is asked about as it will stand once its minimum
 * runtime is over. */
bool preclaim_could_take(const struct policy_cluster *c, const struct pgang *w,
                         const struct pgang *u, enum policy_eviction_kind *kind);
/* Would w's search of this kind (for its minimum, or for its member wx) take gang u, were u
 * running since now with its placed members bound? Nothing changes. */
bool preclaim_would_take(struct policy_cluster *c, struct pgang *w, struct ppod *wx,
                         struct pgang *u, enum policy_eviction_kind kind, int64_t now);

/* ---- stable.c: a placement is not undone by the engine's next decision ----- */

/* With u's placement charged: a waiting gang (or a gang with a pending member beyond its
 * minimum) whose eviction search would take u at once. That gang, or NULL. */
struct pgang *pstable_evictor(struct policy_cluster *c, struct pgang *u, int64_t now);
/* Evictions for g (or its member x): chosen, kept only if nobody would evict g at once, and
 * decided. 0 when decided; else -1, with *first the gang that should go first, if any. */
int pevict_for(struct policy_cluster *c, struct pgang *g, struct ppod *x, int64_t now,
               struct pgang **first);

/* ---- evict.c: evictions handed out and their outcomes -------------------- */

/* Queue the eviction of victim for gang by, with its reason (a reference is taken). */
int pevict_queue(struct policy_cluster *c, struct ppod *victim, struct pgang *by,
                 enum policy_eviction_kind kind, struct pwhy *why);
/* An evicting pod is gone: its reclaimer awaits one fewer. */
void pevict_gone(struct policy_cluster *c, struct ppod *p);

/* ---- model.c: upsert and forget ----------------------------------------- */

/* The gang of this key, made (undeclared) if it is not known; NULL when out of memory. */
struct pgang *pmodel_gang(struct policy_cluster *c, const char *key);
/* A stand-in member of g (held), from s: in the pods table but in no name index. */
int pmodel_standin(struct policy_cluster *c, struct pgang *g, const struct policy_pod_spec *s,
                   int64_t now, int32_t *id);
/* A pod (a stand-in) leaves the engine: its charge is given back, its gang settles. */
void pmodel_pod_remove(struct policy_cluster *c, int32_t id);
/* An undeclared gang with no member left (nor a hold still waiting) goes. */
void pmodel_gang_drop_if_empty(struct policy_cluster *c, struct pgang *g);
/* The epoch of changes from outside: change_epoch less the pods made again in place of pods
 * the engine evicted. What the engine placed in it is no victim (reclaim.c). */
uint64_t pmodel_outside_epoch(const struct policy_cluster *c);
/* An eviction of a pod of gang was decided: the gang is owed one pod made again. Out of memory,
 * or more gangs than POLICY_OWED_MAX (the oldest goes), its replacement counts as a change. */
void pmodel_owe_remake(struct policy_cluster *c, const char *gang);
/* A pod of gang made (or an eviction of one refused): was one owed? Pays it. */
bool pmodel_take_remake(struct policy_cluster *c, const char *gang);

/* Charge a pod seen running on node_id, on the GPU groups it records. */
int pplace_bound(struct policy_cluster *c, struct ppod *p, int32_t node_id);
/* ---- shapes.c, frag.c: fragmentation-aware placement -------------------- */

int pfrag_init(struct policy_cluster *c);
void pfrag_cleanup(struct policy_cluster *c);
/* A pod seen for the first time: its shape joins the workload histogram. */
void pfrag_observe(struct policy_cluster *c, const struct ppod *p);
/* A node's labels or capacity changed (upsert), or what is charged on it. */
void pfrag_node_upserted(struct policy_cluster *c, int32_t node);
void pfrag_node_charged(struct policy_cluster *c, int32_t node);
/* The node of order where p adds the least expected fragmentation, groups chosen alike. */
bool pfrag_find_place(const struct policy_cluster *c, const struct ppod *p, const int32_t *order,
                      size_t n, struct pplace *out);
/* For prioritize: higher is better; PSCORE_NONE when p does not fit the node (prioritize
 * scores such a node 0, outside the range it spreads the others over). */
#define PSCORE_NONE INT64_MIN
int64_t pfrag_node_score(const struct policy_cluster *c, const struct ppod *p,
                         const struct pnode *n);

#endif
