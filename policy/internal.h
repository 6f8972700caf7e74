/* internal.h - the engine's private model. Not for use outside policy/. */
#ifndef MUSTER_POLICY_INTERNAL_H
#define MUSTER_POLICY_INTERNAL_H

#include "policy.h"

#define POLICY_MAX_DEVICES 16   /* gpu-fraction-num-devices cap */
#define POLICY_MAX_QUEUE_DEPTH 16
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
    int64_t cpu_used, memory_used, pods_used, whole_used;
    int64_t sharing_paused_until; /* no new GPU group before this */
    bool sharing_paused;
    struct pgroup *groups;
    size_t ngroups, groups_cap;
};

/* Where a pod sits (or would sit): node and, for a share, its groups. */
struct pplace {
    int32_t node;            /* -1 = nowhere */
    int32_t share;           /* per device, milli; resolved for gpu-memory */
    int32_t ngroups;
    int32_t groups[POLICY_MAX_DEVICES];
};

enum preason_kind {
    PREASON_NONE,
    PREASON_MEMBERS,   /* not every member exists yet */
    PREASON_INVALID,   /* a member's ask cannot be met by any cluster */
    PREASON_QUEUE,     /* its queue's limit */
    PREASON_OVERQUOTA, /* over quota, and others wait in quota */
    PREASON_CAPACITY,  /* no room on the nodes */
    PREASON_BARRIER,   /* its bind waits for others */
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
    char *gang_key;
    int32_t gang; /* id in c->gangs */
    bool head, managed;

    enum policy_pod_phase phase;
    char *gpu_groups_hint; /* the muster.dev/gpu-group annotation */
    char *bound_node; /* spec.nodeName, kept even when the node is unknown */
    struct pplace place; /* charged placement; node -1 when nothing charged */
    char groups_text[POLICY_MAX_DEVICES * 12];
    char *reason;
};

struct pgang {
    char *key;
    bool singleton;     /* a gang of one, not in the gang index */
    bool declared[POLICY_GANG_SOURCES];     /* by a RayCluster, by a PodGroup */
    int32_t declared_min[POLICY_GANG_SOURCES];
    char *queue;        /* from the spec; NULL = its members' */
    bool admitted;      /* its minimum was bound once */
    bool planned;
    int64_t deadline;   /* plan released after this */
    enum preason_kind reason_kind;
    char *reason;
    int32_t *members;
    size_t nmembers, members_cap;
};

struct pqueue {
    char *name;
    char *parent;
    int32_t priority;
    bool implicit; /* the default queue, made because nobody defined it */
    struct policy_resources quota, limit, weight;
    struct policy_resources allocated, reserved; /* rolled up */
    int32_t pending_gangs;                       /* refreshed by views */
};

/* A growable table of heap objects with free slots; ids are stable. */
struct ptable {
    void **items;
    size_t n, cap;
    size_t nfree; /* NULL slots below n */
};

struct policy_cluster {
    struct policy_options opts;
    char *default_queue;
    struct ptable nodes, pods, gangs, queues;
    struct pidx node_ix, pod_ix, uid_ix, gang_ix, queue_ix;
    uint64_t next_arrival;
    bool maybe_partial; /* a gang may be bound below its minimum */
    size_t bound_unplaced; /* bound pods whose node is not known yet */
    size_t paused_nodes;   /* nodes where GPU sharing is paused */
    char scratch[POLICY_REASON_LEN];
};

/* ---- table helpers (table.c) -------------------------------------------- */

int32_t ptable_add(struct ptable *t, void *item);
void ptable_remove(struct ptable *t, int32_t id);
void ptable_cleanup(struct ptable *t);
#define PTABLE_AT(t, type, i) ((type *)(t)->items[(i)])

char *pstrdup(const char *s);
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
const char *pfit_text(enum pfit_why why);
const char *pfit_summary_text(enum pfit_why why);
int32_t pfit_share_on(const struct pnode *n, const struct ppod *p);
bool ppod_same_shape(const struct ppod *a, const struct ppod *b);
void ppod_ask_text(const struct ppod *p, char *buf, size_t len);

/* ---- charge.c: capacity, groups and queues ------------------------------ */

void pcharge(struct policy_cluster *c, struct ppod *p, const struct pplace *pl);
void puncharge(struct policy_cluster *c, struct ppod *p);
/* Move a pod's queue charge between reserved and allocated. */
void pcharge_mark_bound(struct policy_cluster *c, struct ppod *p, bool bound);
void pqueue_account(struct policy_cluster *c, const char *queue, const struct policy_resources *r,
                    bool bound, int sign);
void ppod_charge_resources(const struct ppod *p, int32_t share, struct policy_resources *out);
void ppod_groups_text(const struct pnode *n, struct ppod *p);
int32_t pnode_group_find(const struct pnode *n, int32_t id);

/* ---- queue.c: quota, limit, over-quota share ---------------------------- */

int pqueue_admit(struct policy_cluster *c, const struct pgang *g, const char *queue,
                 const struct policy_resources *need, enum preason_kind *kind, char *why,
                 size_t len);

/* ---- plan.c: all or nothing --------------------------------------------- */

/* Plan every missing minimum member of a gang; the rest of the cluster's
 * reservations are taken. On failure nothing changes and why says why. */
int pplan_gang(struct policy_cluster *c, struct pgang *g, const struct ppod *must, int64_t now);
/* Place one pod on its own (plan a single member) within candidates. */
int pplan_one(struct policy_cluster *c, struct ppod *p, const char *const *candidates,
              size_t ncandidates, char *why, size_t len);
void pplan_release(struct policy_cluster *c, struct pgang *g);
struct pgang *ppod_gang(const struct policy_cluster *c, const struct ppod *p);
void pgang_counts(const struct policy_cluster *c, const struct pgang *g, int32_t *members,
                  int32_t *bound, int32_t *holding, int32_t *waiting);
int32_t pgang_min(const struct policy_cluster *c, const struct pgang *g);
bool pgang_declared(const struct pgang *g);
const char *pgang_queue(const struct policy_cluster *c, const struct pgang *g);
void pgang_set_reason(struct pgang *g, enum preason_kind kind, const char *text);
void pgang_settle(struct policy_cluster *c, struct pgang *g);
void pqueue_recount(struct policy_cluster *c);
int pplace_bound(struct policy_cluster *c, struct ppod *p, int32_t node);
void pgang_note_bound(struct policy_cluster *c, struct pgang *g);
void pnode_order(const struct policy_cluster *c, const int32_t *ids, size_t n, int32_t *out);
int64_t pnode_fill_score(const struct pnode *n);

#endif
