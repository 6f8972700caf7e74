/* eviction_model.c - the eviction model checker; see eviction_model.h. */
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "eviction_model.h"
#include "policy.h"
#include "reason_check.h"

#define EM_NODES 5
#define EM_QUEUES 8
#define EM_GANGS 48
#define EM_PODS 320
#define EM_SUBS 3
#define EM_EPOCHS 2
#define EM_QUIET_ROUNDS 2
#define EM_PASSES 24
#define GiB (1LL << 30)
#define NS "ns"

enum gang_kind { KIND_SINGLE, KIND_COUNT, KIND_COMPOSED };

struct em_node {
    char name[8];
    int64_t cpu, mem, gpus, gpu_mib; /* gpu_mib 0: no nvidia.com/gpu.memory label */
    char mib_text[16];
};

struct em_queue {
    char name[8];
    int parent; /* -1 at the top */
    int32_t prio;
    struct policy_resources quota, limit, weight;
    int64_t reclaim_min, preempt_min;
};

struct em_pod {
    char name[16];
    int gang, sub; /* sub -1: none */
    bool head;
    int64_t cpu, mem, gpus, gpu_mib;
    int32_t share;
    enum policy_preemptible preemptible;
    bool exists;  /* known to the engine */
    bool evicted; /* evicted: made again at the next round */
    int generation;
    int placed_round; /* the round it was last bound; -1 */
    int evicted_epoch; /* the epoch it was last evicted in; -1 */
};

struct em_gang {
    char key[24];
    enum gang_kind kind;
    int queue;
    int32_t prio;
    bool live;
    int32_t min;
    int nsubs;
    char subname[EM_SUBS][8];
    int32_t submin[EM_SUBS];
    int first, npods;
    int bound_round; /* the round it last became bound whole; -1 */
    int evicted_epoch; /* the epoch it was last evicted whole in; -1 */
    int evicted_by;    /* the gang it was last evicted for; -1 */
    int by_lost;       /* how many times that gang had lost pods then */
    int lost;          /* how many times it lost pods to evictions */
};

struct em {
    uint64_t seed, rng;
    struct em_stats *st;
    struct policy_cluster *c;
    int64_t now;
    int round, epoch;
    uint64_t reasons_hash;
    bool full_offers; /* kube-scheduler offers every node its own count passes */
    int nnodes, nqueues, ngangs, npods;
    struct em_node nodes[EM_NODES];
    struct em_queue q[EM_QUEUES];
    struct em_gang g[EM_GANGS];
    struct em_pod p[EM_PODS];
};

/* What the engine showed before a call: the state a decision is judged against. */
struct em_snap {
    struct policy_resources used[EM_QUEUES], fair[EM_QUEUES];
    enum policy_pod_phase phase[EM_PODS];
    int64_t running_since[EM_GANGS];
    bool preemptible[EM_GANGS];
    int32_t prio[EM_GANGS];
    int64_t now;
};

static const char *const kind_names[EM_KINDS] = {
    "partial", "victim-rule", "bind-evict", "fits-waits", "twice", "over-booked", "reason"};

const char *em_violation_name(enum em_violation v)
{
    return v < EM_KINDS ? kind_names[v] : "?";
}

static uint64_t rnd(struct em *e)
{
    uint64_t z = (e->rng += 0x9e3779b97f4a7c15ULL);

    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

static int pick(struct em *e, int n)
{
    return (int)(rnd(e) % (uint64_t)n);
}

static bool chance(struct em *e, int percent)
{
    return pick(e, 100) < percent;
}

static void violation(struct em *e, enum em_violation k, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void dump_pod(const struct policy_pod_view *v, void *ctx)
{
    (void)ctx;
    fprintf(stderr, "  pod %s prio %d gang %s queue %s %s node %s cpu %lld gpus %lld share %d groups %s: %s\n", v->name, v->priority,
            v->gang, v->queue, policy_pod_phase_name(v->phase), v->node ? v->node : "-",
            (long long)v->cpu_milli, (long long)v->gpus, v->gpu_share_milli,
            v->gpu_groups ? v->gpu_groups : "-", v->reason ? v->reason : "");
}

static void dump_node(const struct policy_node_view *v, void *ctx)
{
    (void)ctx;
    fprintf(stderr, "  node %s cpu %lld/%lld gpus %lld whole used %lld groups %zu mib %lld\n",
            v->name, (long long)v->cpu_used, (long long)v->cpu_milli, (long long)v->gpus,
            (long long)v->gpus_whole_used, v->ngroups, (long long)v->gpu_memory_mib);
}

static void dump_queue(const struct policy_queue_view *v, void *ctx)
{
    (void)ctx;
    fprintf(stderr, "  queue %s parent %s gpu quota %lld limit %lld alloc %lld resv %lld fair %lld demand %lld"
            " min runtime reclaim %lld preempt %lld\n",
            v->name, v->parent ? v->parent : "-", (long long)v->quota.v[2], (long long)v->limit.v[2],
            (long long)v->allocated.v[2], (long long)v->reserved.v[2], (long long)v->fair_share.v[2],
            (long long)v->demand.v[2], (long long)v->reclaim_min_runtime_ms,
            (long long)v->preempt_min_runtime_ms);
}

static void violation(struct em *e, enum em_violation k, const char *fmt, ...)
{
    va_list ap;
    int n;
    const char *dbg = getenv("EM_DEBUG");

    if (dbg && atoi(dbg) == (int)k && e->st->violations[k] == 0) {
        fprintf(stderr, "state before the first %s violation (seed %llu):\n", kind_names[k],
                (unsigned long long)e->seed);
        policy_each_node(e->c, dump_node, NULL);
        policy_each_queue(e->c, dump_queue, NULL);
        policy_each_pod(e->c, dump_pod, NULL);
    }
    if (getenv("EM_ALL")) {
        va_start(ap, fmt);
        fprintf(stderr, "%s seed %llu round %d: ", kind_names[k], (unsigned long long)e->seed,
                e->round);
        vfprintf(stderr, fmt, ap);
        fprintf(stderr, "\n");
        va_end(ap);
    }
    if (e->st->violations[k]++ > 0)
        return;
    n = snprintf(e->st->first[k], sizeof(e->st->first[k]), "seed %llu round %d: ",
                 (unsigned long long)e->seed, e->round);
    va_start(ap, fmt);
    vsnprintf(e->st->first[k] + n, sizeof(e->st->first[k]) - (size_t)n, fmt, ap);
    va_end(ap);
}

/* ---- lookups ------------------------------------------------------------------------ */

static int queue_index(const struct em *e, const char *name)
{
    for (int i = 0; name && i < e->nqueues; i++)
        if (strcmp(e->q[i].name, name) == 0)
            return i;
    return -1;
}

static int gang_index(const struct em *e, const char *key)
{
    for (int i = 0; key && i < e->ngangs; i++)
        if (strcmp(e->g[i].key, key) == 0)
            return i;
    return -1;
}

static int pod_index(const struct em *e, const char *name)
{
    for (int i = 0; name && i < e->npods; i++)
        if (strcmp(e->p[i].name, name) == 0)
            return i;
    return -1;
}

static int node_index(const struct em *e, const char *name)
{
    for (int i = 0; name && i < e->nnodes; i++)
        if (strcmp(e->nodes[i].name, name) == 0)
            return i;
    return -1;
}

static bool view(const struct em *e, int pod, struct policy_pod_view *v)
{
    return e->p[pod].exists && policy_pod_view_get(e->c, NS, e->p[pod].name, v);
}

/* The share a pod takes per device on a node, by this checker's own arithmetic: gpu-memory
 * over the device's memory rounded up, a whole device at or above it, and a whole device
 * where the node does not say its memory (docs/gpu-sharing.md). */
static int64_t share_on(const struct em *e, const struct em_pod *p, int node)
{
    int64_t dev;

    if (p->share > 0)
        return p->share;
    if (p->gpu_mib <= 0)
        return 0;
    dev = node >= 0 ? e->nodes[node].gpu_mib : 0;
    if (dev <= 0)
        return 1000;
    return (p->gpu_mib * 1000 + dev - 1) / dev > 1000 ? 1000 : (p->gpu_mib * 1000 + dev - 1) / dev;
}

/* What a pod charges its queues on a node: cpu, memory, milli-GPUs. */
static void charge_of(const struct em *e, const struct em_pod *p, int node,
                      struct policy_resources *out)
{
    out->v[POLICY_RES_CPU] = p->cpu;
    out->v[POLICY_RES_MEMORY] = p->mem;
    out->v[POLICY_RES_GPU] = p->gpus * 1000 + share_on(e, p, node);
}

/* The least a pod asks on any node: a gpu-memory ask as a share of the largest device. */
static void least_charge(const struct em *e, const struct em_pod *p, struct policy_resources *out)
{
    int best = -1;

    for (int k = 0; k < e->nnodes; k++)
        if (best < 0 || e->nodes[k].gpu_mib > e->nodes[best].gpu_mib)
            best = k;
    charge_of(e, p, best, out);
}

/* Queues from q up to the top, q first. */
static int path_up(const struct em *e, int q, int *out)
{
    int n = 0;

    for (; q >= 0 && n < EM_QUEUES; q = e->q[q].parent)
        out[n++] = q;
    return n;
}

/* Where the paths of a and b part: the first queues below their deepest common ancestor
 * (-1 when one path is a prefix of the other). */
static void leveled(const struct em *e, int a, int b, int *la, int *lb)
{
    int pa[EM_QUEUES], pb[EM_QUEUES], na = path_up(e, a, pa), nb = path_up(e, b, pb);
    int i = 0;

    while (i < na && i < nb && pa[na - 1 - i] == pb[nb - 1 - i])
        i++;
    *la = i < na ? pa[na - 1 - i] : -1;
    *lb = i < nb ? pb[nb - 1 - i] : -1;
}

/* ---- the world, fed to the engine ---------------------------------------------------- */

static void upsert_node(struct em *e, int i)
{
    struct em_node *n = &e->nodes[i];
    struct policy_label label = {"nvidia.com/gpu.memory", n->mib_text};
    struct policy_node_spec s = {.name = n->name, .labels = n->gpu_mib ? &label : NULL,
                                 .nlabels = n->gpu_mib ? 1 : 0, .cpu_milli = n->cpu,
                                 .memory_bytes = n->mem, .pods = 110, .gpus = n->gpus,
                                 .gpu_memory_mib = n->gpu_mib};

    policy_node_upsert(e->c, &s);
}

static void upsert_queue(struct em *e, int i)
{
    struct em_queue *q = &e->q[i];
    struct policy_queue_spec s = {.name = q->name, .parent = q->parent >= 0 ? e->q[q->parent].name
                                                                             : NULL,
                                  .priority = q->prio, .quota = q->quota, .limit = q->limit,
                                  .over_quota_weight = q->weight,
                                  .reclaim_min_runtime_ms = q->reclaim_min,
                                  .preempt_min_runtime_ms = q->preempt_min};

    policy_queue_upsert(e->c, &s);
}

static void upsert_gang(struct em *e, int gi)
{
    struct em_gang *g = &e->g[gi];
    struct policy_subgroup_spec subs[EM_SUBS];
    struct policy_gang_spec s = {.key = g->key, .min_members = g->min,
                                 .queue = e->q[g->queue].name,
                                 .source = g->kind == KIND_COMPOSED ? POLICY_GANG_WORKLOAD
                                                                    : POLICY_GANG_PODGROUP};

    if (g->kind == KIND_SINGLE)
        return;
    for (int k = 0; k < g->nsubs; k++)
        subs[k] = (struct policy_subgroup_spec){g->subname[k], g->submin[k]};
    s.subgroups = g->nsubs ? subs : NULL;
    s.nsubgroups = (size_t)g->nsubs;
    policy_gang_upsert(e->c, &s);
}

/* A pod made (again): pending, or running on node with its GPU groups since bound_at. */
static void upsert_pod_at(struct em *e, int pi, const char *node, const char *groups,
                          int64_t bound_at)
{
    struct em_pod *p = &e->p[pi];
    struct em_gang *g = &e->g[p->gang];
    char uid[40];
    struct policy_pod_spec s = {.namespace_ = NS, .name = p->name, .uid = uid,
                                .priority = g->prio, .cpu_milli = p->cpu, .memory_bytes = p->mem,
                                .gpus = p->gpus, .gpu_share_milli = p->share,
                                .gpu_memory_mib = p->gpu_mib, .gang_head = p->head,
                                .gang = g->kind == KIND_SINGLE ? NULL : g->key,
                                .subgroup = p->sub >= 0 ? g->subname[p->sub] : NULL,
                                .queue = e->q[g->queue].name, .managed = true,
                                .preemptible = p->preemptible, .node = node,
                                .bound_at = node ? bound_at : 0, .gpu_groups = groups};

    /* A new uid when it is made again; the same when the watch sees it bound. */
    if (!node || !p->exists)
        p->generation++;
    snprintf(uid, sizeof(uid), "%s-%d", p->name, p->generation);
    policy_pod_upsert(e->c, &s, e->now);
    p->exists = true;
    p->evicted = false;
    p->placed_round = node ? e->round : -1;
}

static void upsert_pod(struct em *e, int pi, const char *node, const char *groups)
{
    upsert_pod_at(e, pi, node, groups, e->now);
}

/* ---- random scenarios ------------------------------------------------------------------ */

static void make_nodes(struct em *e)
{
    static const int64_t gpus[] = {2, 4, 8}, cores[] = {16, 32, 64};

    e->nnodes = 2 + pick(e, EM_NODES - 1);
    for (int i = 0; i < e->nnodes; i++) {
        struct em_node *n = &e->nodes[i];
        int mem = pick(e, 4);

        snprintf(n->name, sizeof(n->name), "n%d", i);
        n->gpus = gpus[pick(e, 3)];
        n->cpu = cores[pick(e, 3)] * 1000;
        n->mem = 256 * GiB;
        n->gpu_mib = mem == 0 ? 0 : mem == 1 ? 40960 : 81920;
        snprintf(n->mib_text, sizeof(n->mib_text), "%lld", (long long)n->gpu_mib);
        upsert_node(e, i);
    }
}

static int64_t total_gpus(const struct em *e)
{
    int64_t t = 0;

    for (int i = 0; i < e->nnodes; i++)
        t += e->nodes[i].gpus;
    return t;
}

static void make_queue(struct em *e, int parent, int64_t gpus)
{
    struct em_queue *q = &e->q[e->nqueues];
    int r = pick(e, 8);

    snprintf(q->name, sizeof(q->name), "q%d", e->nqueues);
    q->parent = parent;
    q->prio = chance(e, 25) ? 1 : 0;
    for (int k = 0; k < POLICY_RES_COUNT; k++) {
        q->quota.v[k] = chance(e, 50) ? -1 : 0;
        q->limit.v[k] = -1;
        q->weight.v[k] = chance(e, 10) ? 0 : 1 + pick(e, 3);
    }
    q->quota.v[POLICY_RES_GPU] = r == 0   ? -1
                                 : r <= 2 ? 0
                                          : (1 + pick(e, (int)(gpus / 2 > 1 ? gpus / 2 : 1))) * 1000;
    if (chance(e, 30))
        q->limit.v[POLICY_RES_GPU] =
            (q->quota.v[POLICY_RES_GPU] > 0 ? q->quota.v[POLICY_RES_GPU] : 0) +
            (1 + pick(e, (int)gpus)) * 1000;
    q->reclaim_min = chance(e, 15) ? 5000 : 0;
    q->preempt_min = chance(e, 15) ? 5000 : 0;
    e->nqueues++;
    upsert_queue(e, e->nqueues - 1);
}

static void make_queues(struct em *e)
{
    int64_t gpus = total_gpus(e);
    int top = 2 + pick(e, 2);

    for (int i = 0; i < top; i++) {
        int id = e->nqueues;

        make_queue(e, -1, gpus);
        if (i == 0 && chance(e, 50))
            for (int k = 0; k < 2 + pick(e, 2) && e->nqueues < EM_QUEUES; k++)
                make_queue(e, id, gpus);
    }
}

/* Leaf queues only take gangs. */
static int pick_leaf(struct em *e)
{
    int leaves[EM_QUEUES], n = 0;

    for (int i = 0; i < e->nqueues; i++) {
        bool parent = false;

        for (int k = 0; k < e->nqueues; k++)
            parent |= e->q[k].parent == i;
        if (!parent)
            leaves[n++] = i;
    }
    return leaves[pick(e, n)];
}

static void make_pod(struct em *e, int gi, int sub, bool head)
{
    static const int32_t shares[] = {250, 500, 750};
    static const int64_t mibs[] = {10240, 20480, 40960, 81920};
    struct em_pod *p = &e->p[e->npods];
    int kind = pick(e, 10);

    *p = (struct em_pod){.gang = gi, .sub = sub, .head = head, .placed_round = -1,
                         .evicted_epoch = -1};
    snprintf(p->name, sizeof(p->name), "p%d", e->npods);
    p->cpu = (1 + pick(e, 4)) * 1000;
    p->mem = (2 + pick(e, 14)) * GiB;
    if (head && chance(e, 50))
        ; /* a CPU-only head */
    else if (kind < 5)
        p->gpus = 1 + pick(e, 2);
    else if (kind < 8)
        p->share = shares[pick(e, 3)];
    else
        p->gpu_mib = mibs[pick(e, 4)];
    if (chance(e, 8))
        p->preemptible = POLICY_PREEMPTIBLE_NO;
    e->npods++;
    e->g[gi].npods++;
}

static int make_gang(struct em *e)
{
    static const int32_t prios[] = {0, 10, 50, 90};
    int gi = e->ngangs++;
    struct em_gang *g = &e->g[gi];
    int r = pick(e, 10);

    *g = (struct em_gang){.queue = pick_leaf(e), .live = true, .first = e->npods,
                          .bound_round = -1, .evicted_epoch = -1, .evicted_by = -1};
    g->prio = chance(e, 8) ? 110 : prios[pick(e, 4)];
    g->kind = r < 3 ? KIND_SINGLE : r < 6 ? KIND_COUNT : KIND_COMPOSED;
    if (g->kind == KIND_SINGLE) {
        make_pod(e, gi, -1, false);
        snprintf(g->key, sizeof(g->key), NS "/p%d", g->first);
        g->min = 1;
    } else if (g->kind == KIND_COUNT) {
        int n = 2 + pick(e, 3);

        snprintf(g->key, sizeof(g->key), NS "/g%d", gi);
        for (int i = 0; i < n; i++)
            make_pod(e, gi, -1, false);
        g->min = 1 + pick(e, n);
    } else {
        snprintf(g->key, sizeof(g->key), NS "/g%d", gi);
        g->nsubs = 2 + pick(e, 2);
        snprintf(g->subname[0], sizeof(g->subname[0]), "head");
        g->submin[0] = 1;
        make_pod(e, gi, 0, true);
        g->min = 1;
        for (int k = 1; k < g->nsubs; k++) {
            int n = 1 + pick(e, 3);

            snprintf(g->subname[k], sizeof(g->subname[k]), "w%d", k);
            for (int i = 0; i < n; i++)
                make_pod(e, gi, k, false);
            g->submin[k] = pick(e, n + 1);
            g->min += g->submin[k];
        }
    }
    upsert_gang(e, gi);
    return gi;
}

/* ---- the checker's own account of the room ------------------------------------------- */

struct em_room {
    int64_t cpu[EM_NODES], mem[EM_NODES], pods[EM_NODES], whole[EM_NODES];
    int32_t group[EM_NODES][64]; /* milli used per GPU group id; -1 = not open */
};

static void room_init(struct em_room *r)
{
    memset(r, 0, sizeof(*r));
    memset(r->group, 0xff, sizeof(r->group));
}

static int open_groups(const struct em_room *r, int n)
{
    int k = 0;

    for (int g = 0; g < 64; g++)
        k += r->group[n][g] >= 0;
    return k;
}

static int64_t free_devices(const struct em *e, const struct em_room *r, int n)
{
    return e->nodes[n].gpus - r->whole[n] - open_groups(r, n);
}

/* Parse "g0,g3" into ids; the count, -1 when malformed. */
static int parse_groups(const char *t, int *ids, int max)
{
    int n = 0;

    while (t && *t && n < max) {
        char *end;
        long v;

        if (*t == 'g')
            t++;
        v = strtol(t, &end, 10);
        if (end == t || v < 0 || v >= 64)
            return -1;
        ids[n++] = (int)v;
        t = *end == ',' ? end + 1 : end;
    }
    return n;
}

/* Every pod that holds room (placed, at bind, bound, leaving), charged by this checker. */
static bool room_now(struct em *e, struct em_room *r, bool check)
{
    bool ok = true;

    room_init(r);
    for (int i = 0; i < e->npods; i++) {
        struct policy_pod_view v;
        int n, ids[16], k;
        int64_t share;

        if (!view(e, i, &v) || v.phase == POLICY_POD_PENDING || !v.node)
            continue;
        n = node_index(e, v.node);
        if (n < 0)
            continue;
        r->cpu[n] += e->p[i].cpu;
        r->mem[n] += e->p[i].mem;
        r->pods[n]++;
        r->whole[n] += e->p[i].gpus;
        share = share_on(e, &e->p[i], n);
        if (share <= 0)
            continue;
        k = parse_groups(v.gpu_groups, ids, 16);
        if (k < 1) {
            if (check)
                violation(e, EM_OVER_BOOKED,
                          "pod %s holds a GPU share of %lld on node %s with no device (groups %s)",
                          e->p[i].name, (long long)share, v.node,
                          v.gpu_groups ? v.gpu_groups : "none");
            ok = false;
            continue;
        }
        for (int j = 0; j < k; j++)
            r->group[n][ids[j]] = (r->group[n][ids[j]] < 0 ? 0 : r->group[n][ids[j]]) +
                                  (int32_t)share;
    }
    return ok;
}

struct groups_ctx {
    struct em *e;
    int32_t used[EM_NODES][64];
    bool bad;
};

static void engine_groups(const struct policy_node_view *v, void *ctx)
{
    struct groups_ctx *g = ctx;
    int n = node_index(g->e, v->name);

    for (size_t k = 0; n >= 0 && k < v->ngroups; k++) {
        int id = atoi(v->groups[k].id + (v->groups[k].id[0] == 'g'));

        if (id >= 0 && id < 64 && g->used[n][id] != v->groups[k].used_milli) {
            fprintf(stderr, "  engine group %s/%s used %d, its pods hold %d\n", v->name,
                    v->groups[k].id, v->groups[k].used_milli, g->used[n][id]);
            g->bad = true;
        }
    }
}

/* Debug: do the engine's GPU groups hold what its pods say they hold? */
static void check_groups(struct em *e, const char *where)
{
    struct groups_ctx g = {.e = e};

    for (int i = 0; i < e->npods; i++) {
        struct policy_pod_view v;
        int ids[16], k, n;

        if (!view(e, i, &v) || !v.node || v.phase == POLICY_POD_PENDING)
            continue;
        n = node_index(e, v.node);
        k = parse_groups(v.gpu_groups, ids, 16);
        for (int j = 0; n >= 0 && j < k; j++)
            g.used[n][ids[j]] += v.gpu_share_milli;
    }
    policy_each_node(e->c, engine_groups, &g);
    if (g.bad) {
        fprintf(stderr, "groups out of step after %s (seed %llu round %d)\n", where,
                (unsigned long long)e->seed, e->round);
        exit(3);
    }
}

static void check_room(struct em *e)
{
    if (getenv("EM_GROUPS")) {
        check_groups(e, "a step");
        for (int i = 0; i < e->npods; i++) {
            struct policy_pod_view v;

            if (view(e, i, &v) && v.phase != POLICY_POD_PENDING && !v.node) {
                fprintf(stderr, "pod %s is %s with no node\n", e->p[i].name,
                        policy_pod_phase_name(v.phase));
                exit(4);
            }
        }
    }
    struct em_room r;

    room_now(e, &r, true);
    for (int n = 0; n < e->nnodes; n++) {
        const struct em_node *node = &e->nodes[n];

        if (r.cpu[n] > node->cpu || r.mem[n] > node->mem || r.pods[n] > 110)
            violation(e, EM_OVER_BOOKED, "node %s: cpu %lld of %lld, memory %lld of %lld",
                      node->name, (long long)r.cpu[n], (long long)node->cpu, (long long)r.mem[n],
                      (long long)node->mem);
        if (free_devices(e, &r, n) < 0)
            violation(e, EM_OVER_BOOKED, "node %s: %lld whole GPUs and %d shared ones on %lld",
                      node->name, (long long)r.whole[n], open_groups(&r, n),
                      (long long)node->gpus);
        for (int g = 0; g < 64; g++)
            if (r.group[n][g] > 1000)
                violation(e, EM_OVER_BOOKED, "node %s: GPU g%d booked %d.%03d times", node->name,
                          g, r.group[n][g] / 1000, r.group[n][g] % 1000);
    }
}

/* ---- does a waiting gang fit the free room? (exact, for small gangs) ------------------- */

struct fit_try {
    struct em *e;
    struct em_room room;
    const int *pods;
    int n;
    struct policy_resources ask; /* queue charges of the pods placed so far */
    const struct em_snap *snap;
    int queue;
    bool nonpreemptible; /* the gang runs only within quota */
    struct policy_resources held_np[EM_QUEUES]; /* non-preemptible usage, rolled up */
};

/* Within the queue's and every ancestor's limit (and quota, for non-preemptible work)? */
static bool limits_hold(const struct fit_try *t)
{
    int path[EM_QUEUES], n = path_up(t->e, t->queue, path);

    for (int i = 0; i < n; i++)
        for (int r = 0; r < POLICY_RES_COUNT; r++) {
            int64_t lim = t->e->q[path[i]].limit.v[r], quota = t->e->q[path[i]].quota.v[r];

            if (lim >= 0 && t->snap->used[path[i]].v[r] + t->ask.v[r] > lim)
                return false;
            if (t->nonpreemptible && quota >= 0 &&
                t->held_np[path[i]].v[r] + t->ask.v[r] > quota)
                return false;
        }
    return true;
}

/* What non-preemptible gangs hold in each queue, rolled up. */
static void nonpreemptible_usage(struct em *e, struct policy_resources *out)
{
    memset(out, 0, sizeof(*out) * EM_QUEUES);
    for (int gi = 0; gi < e->ngangs; gi++) {
        struct policy_gang_view gv;
        int path[EM_QUEUES], np;

        if (!e->g[gi].live || !policy_gang_view_get(e->c, e->g[gi].key, &gv) || gv.preemptible)
            continue;
        np = path_up(e, e->g[gi].queue, path);
        for (int i = e->g[gi].first; i < e->g[gi].first + e->g[gi].npods; i++) {
            struct policy_pod_view v;
            struct policy_resources c;

            if (!view(e, i, &v) || !v.node || v.phase == POLICY_POD_PENDING ||
                v.phase == POLICY_POD_EVICTING)
                continue;
            charge_of(e, &e->p[i], node_index(e, v.node), &c);
            for (int k = 0; k < np; k++)
                for (int r = 0; r < POLICY_RES_COUNT; r++)
                    out[path[k]].v[r] += c.v[r];
        }
    }
}

static bool place_rest(struct fit_try *t, int k)
{
    struct em *e = t->e;

    if (k == t->n)
        return limits_hold(t);
    for (int n = 0; n < e->nnodes; n++) {
        const struct em_pod *p = &e->p[t->pods[k]];
        int64_t share = share_on(e, p, n);
        struct policy_resources c;
        bool ok;

        if (t->room.cpu[n] + p->cpu > e->nodes[n].cpu ||
            t->room.mem[n] + p->mem > e->nodes[n].mem || t->room.pods[n] + 1 > 110)
            continue;
        if (p->gpu_mib > 0 && e->nodes[n].gpu_mib > 0 && p->gpu_mib > e->nodes[n].gpu_mib)
            continue; /* more memory than one device has */
        if (p->gpu_mib > 0 && e->nodes[n].gpu_mib <= 0)
            continue; /* a gpu-memory ask needs the label */
        if (p->gpus > 0 && free_devices(e, &t->room, n) < p->gpus)
            continue;
        charge_of(e, p, n, &c);
        for (int r = 0; r < POLICY_RES_COUNT; r++)
            t->ask.v[r] += c.v[r];
        t->room.cpu[n] += p->cpu;
        t->room.mem[n] += p->mem;
        t->room.pods[n]++;
        ok = false;
        if (share > 0) {
            /* Every open group it fits, and a fresh device. */
            for (int g = 0; g < 64 && !ok; g++) {
                bool fresh = t->room.group[n][g] < 0;

                if (fresh ? free_devices(e, &t->room, n) < 1 : t->room.group[n][g] + share > 1000)
                    continue;
                t->room.group[n][g] = (int32_t)((fresh ? 0 : t->room.group[n][g]) + share);
                ok = place_rest(t, k + 1);
                t->room.group[n][g] = fresh ? -1 : (int32_t)(t->room.group[n][g] - share);
                if (fresh)
                    break; /* one fresh device is as good as another */
            }
        } else {
            t->room.whole[n] += p->gpus;
            ok = place_rest(t, k + 1);
            t->room.whole[n] -= p->gpus;
        }
        t->room.cpu[n] -= p->cpu;
        t->room.mem[n] -= p->mem;
        t->room.pods[n]--;
        for (int r = 0; r < POLICY_RES_COUNT; r++)
            t->ask.v[r] -= c.v[r];
        if (ok)
            return true;
    }
    return false;
}

/* Its minimum's missing members: some choice of its pending pods, per subgroup and in all,
 * placed in the room nobody holds within its queues' limits. -1: too big to tell. */
static int fits_free_room(struct em *e, int gi, const struct em_snap *snap)
{
    struct em_gang *g = &e->g[gi];
    int pending[16], np = 0, placed_sub[EM_SUBS] = {0}, placed = 0;
    struct fit_try t = {.e = e, .snap = snap, .queue = g->queue};
    int chosen[16];

    for (int i = g->first; i < g->first + g->npods; i++) {
        struct policy_pod_view v;

        if (!view(e, i, &v))
            return 0; /* not every member exists */
        if (v.phase == POLICY_POD_PENDING) {
            if (np == 16)
                return -1;
            pending[np++] = i;
        } else if (v.phase != POLICY_POD_EVICTING) {
            placed++;
            if (e->p[i].sub >= 0)
                placed_sub[e->p[i].sub]++;
        }
    }
    if (np > 10)
        return -1;
    room_now(e, &t.room, false);
    {
        struct policy_gang_view gv;

        t.nonpreemptible = policy_gang_view_get(e->c, g->key, &gv) && !gv.preemptible;
        if (t.nonpreemptible)
            nonpreemptible_usage(e, t.held_np);
    }
    for (uint32_t mask = 1; mask < (1u << np); mask++) {
        int count = 0, per[EM_SUBS] = {0};
        bool enough = true;

        for (int i = 0; i < np; i++)
            if (mask & (1u << i)) {
                chosen[count++] = pending[i];
                if (e->p[pending[i]].sub >= 0)
                    per[e->p[pending[i]].sub]++;
            }
        if (placed + count != g->min)
            continue; /* exactly the minimum: extras are not needed */
        for (int k = 0; k < g->nsubs; k++)
            enough &= placed_sub[k] + per[k] >= g->submin[k];
        if (!enough)
            continue;
        t.pods = chosen;
        t.n = count;
        memset(&t.ask, 0, sizeof(t.ask));
        if (place_rest(&t, 0))
            return 1;
    }
    return 0;
}

/* Has gang gi a pending member (one beyond its minimum, the gang being bound whole)? */
static bool has_pending_member(struct em *e, int gi)
{
    const struct em_gang *g = &e->g[gi];

    for (int i = g->first; i < g->first + g->npods; i++) {
        struct policy_pod_view v;

        if (view(e, i, &v) && v.phase == POLICY_POD_PENDING)
            return true;
    }
    return false;
}

/* ---- snapshots ------------------------------------------------------------------------- */

struct snap_ctx {
    struct em *e;
    struct em_snap *s;
};

static void snap_queue(const struct policy_queue_view *v, void *ctx)
{
    struct snap_ctx *x = ctx;
    int i = queue_index(x->e, v->name);

    if (i < 0)
        return;
    for (int r = 0; r < POLICY_RES_COUNT; r++)
        x->s->used[i].v[r] = v->allocated.v[r] + v->reserved.v[r];
    x->s->fair[i] = v->fair_share;
}

static void snapshot(struct em *e, struct em_snap *s)
{
    struct snap_ctx x = {e, s};

    memset(s, 0, sizeof(*s));
    s->now = e->now;
    policy_each_queue(e->c, snap_queue, &x);
    for (int i = 0; i < e->npods; i++) {
        struct policy_pod_view v;

        s->phase[i] = view(e, i, &v) ? v.phase : POLICY_POD_PENDING;
    }
    for (int i = 0; i < e->ngangs; i++) {
        struct policy_gang_view gv;

        if (e->g[i].live && policy_gang_view_get(e->c, e->g[i].key, &gv)) {
            s->running_since[i] = gv.running_since;
            s->preemptible[i] = gv.preemptible;
            s->prio[i] = gv.priority;
        }
    }
}

/* ---- checking a decision against the victim rule (docs/quota.md) ------------------------ */

struct decision {
    int by;                            /* the reclaimer's gang */
    enum policy_eviction_kind kind;
    struct policy_resources need;      /* what it was planned with, on its victims' room */
    struct policy_resources taken[EM_QUEUES]; /* what the victims free, rolled up */
};

static int64_t allocatable(const struct em *e, const struct em_snap *s, int q, int r)
{
    int64_t quota = e->q[q].quota.v[r], lim = e->q[q].limit.v[r], a;

    if (quota < 0)
        return lim; /* unlimited quota: what its limit allows (KAI) */
    a = quota > s->fair[q].v[r] ? quota : s->fair[q].v[r];
    return lim >= 0 && lim < a ? lim : a;
}

static bool over(int64_t used, int64_t mark)
{
    return mark >= 0 && used > mark;
}

/* What a queue on the reclaimer's path ends with: what it used, less the victims under it,
 * with the reclaimer's ask. */
static int64_t end_of(const struct em_snap *s, const struct decision *d, int q, int k)
{
    return s->used[q].v[k] - d->taken[q].v[k] + d->need.v[k];
}

/* r and its ancestors below lr: within quota (ending with the ask) in res (-1: every one)? */
static bool within_quota(const struct em *e, const struct em_snap *s, const struct decision *d,
                         int r, int lr, int res)
{
    for (int q = r; q >= 0; q = e->q[q].parent) {
        for (int k = 0; k < POLICY_RES_COUNT; k++)
            if ((res < 0 || res == k) && over(end_of(s, d, q, k), e->q[q].quota.v[k]))
                return false;
        if (q == lr)
            break;
    }
    return true;
}

/* What queue q ends with over its fair share, the most of any resource it uses (what the
 * decision takes under it gone, the reclaimer's ask added where it is on its path). */
static double saturation_end(const struct em_snap *s, const struct decision *d, int q, bool mine)
{
    double most = 0;

    for (int k = 0; k < POLICY_RES_COUNT; k++) {
        int64_t used = s->used[q].v[k] - d->taken[q].v[k] + (mine ? d->need.v[k] : 0);
        double x;

        if (used <= 0)
            continue;
        x = s->fair[q].v[k] > 0 ? (double)used / (double)s->fair[q].v[k] : 1e300;
        most = x > most ? x : most;
    }
    return most;
}

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;

    return x < y ? -1 : x > y;
}

/* 5. taken for the reclaimer's fair share (not its quota), a victim that could come back
 * within its queue's fair share where the paths part (asking `back`) leaves that queue no
 * less saturated than the reclaimer's. */
static void check_order(struct em *e, const struct em_snap *s, const struct decision *d, int vg,
                        int lr, int lv, const struct policy_resources *back)
{
    bool returns = true;

    for (int k = 0; k < POLICY_RES_COUNT; k++)
        returns &= s->used[lv].v[k] - d->taken[lv].v[k] + back->v[k] <= s->fair[lv].v[k];
    if (returns && saturation_end(s, d, lr, true) > saturation_end(s, d, lv, false))
        violation(e, EM_VICTIM_RULE,
                  "%s reclaimed %s: queue %s would end more saturated than queue %s (%.3f > "
                  "%.3f), which %s would run within its fair share again",
                  e->g[d->by].key, e->g[vg].key, e->q[lr].name, e->q[lv].name,
                  saturation_end(s, d, lr, true), saturation_end(s, d, lv, false),
                  e->g[vg].key);
}

/* Rule 5 for vg's evicted pods: taken whole, the least its minimum asks (each resource from
 * its smallest members); taken as members beyond its minimum, each one. */
static void check_orders(struct em *e, const struct em_snap *s, const struct decision *d, int vg,
                         int lr, int lv, const struct policy_eviction *ev, size_t n)
{
    struct policy_resources c[EM_PODS], back = {{0}};
    int64_t each[EM_PODS];
    int csub[EM_PODS], m = 0, bound = 0;

    for (size_t i = 0; i < n && m < EM_PODS; i++) {
        int pi = pod_index(e, ev[i].name);
        struct policy_pod_view v;

        if (pi >= 0 && e->p[pi].gang == vg && view(e, pi, &v))
            charge_of(e, &e->p[pi], node_index(e, v.node), &c[m++]);
    }
    for (int k = e->g[vg].first; k < e->g[vg].first + e->g[vg].npods; k++)
        bound += s->phase[k] == POLICY_POD_BOUND;
    if (m < bound) {
        for (int i = 0; i < m; i++)
            check_order(e, s, d, vg, lr, lv, &c[i]);
        return;
    }
    /* Whole: made again, its minimum met by any of its pods, pending ones too, each
     * subgroup's from its own least asking, the rest from the least asking of all. */
    m = 0;
    for (int k = e->g[vg].first; k < e->g[vg].first + e->g[vg].npods && m < EM_PODS; k++)
        if (e->p[k].exists) {
            csub[m] = e->p[k].sub;
            least_charge(e, &e->p[k], &c[m++]);
        }
    for (int r = 0; r < POLICY_RES_COUNT; r++) {
        int32_t left = e->g[vg].min;

        for (int sub = 0; sub < e->g[vg].nsubs; sub++) {
            int ns = 0;

            for (int i = 0; i < m; i++)
                if (csub[i] == sub)
                    each[ns++] = c[i].v[r];
            qsort(each, (size_t)ns, sizeof(*each), cmp_i64);
            for (int i = 0; i < ns && i < e->g[vg].submin[sub]; i++)
                back.v[r] += each[i];
            left -= e->g[vg].submin[sub] < ns ? e->g[vg].submin[sub] : ns;
        }
        for (int i = 0; i < m; i++)
            each[i] = c[i].v[r];
        qsort(each, (size_t)m, sizeof(*each), cmp_i64);
        for (int i = 0; i < m && i < left; i++)
            back.v[r] += each[i];
    }
    check_order(e, s, d, vg, lr, lv, &back);
}

static void check_reclaim_victim(struct em *e, const struct em_snap *s, const struct decision *d,
                                 int vg, const struct policy_eviction *ev, size_t n)
{
    int r = e->g[d->by].queue, v = e->g[vg].queue, lr, lv;

    leveled(e, r, v, &lr, &lv);
    if (lr < 0 || lv < 0) {
        violation(e, EM_VICTIM_RULE, "%s reclaimed %s of its own queue line (%s, %s)",
                  e->g[d->by].key, e->g[vg].key, e->q[r].name, e->q[v].name);
        return;
    }
    /* 1. the reclaimer ends within its fair share, at every level up to where paths meet */
    for (int q = r;; q = e->q[q].parent) {
        for (int k = 0; k < POLICY_RES_COUNT; k++)
            if (end_of(s, d, q, k) > s->fair[q].v[k])
                violation(e, EM_VICTIM_RULE,
                          "%s reclaimed %s: queue %s would end above its fair share in %s "
                          "(%lld - %lld + %lld > %lld)",
                          e->g[d->by].key, e->g[vg].key, e->q[q].name, policy_resource_name(k),
                          (long long)s->used[q].v[k], (long long)d->taken[q].v[k],
                          (long long)d->need.v[k], (long long)s->fair[q].v[k]);
        if (q == lr)
            break;
    }
    /* 2. every queue on the victim's path holds more than it may; 3. none is taken below its
     * quota in a resource the reclaimer is over its own quota in */
    for (int q = v;; q = e->q[q].parent) {
        bool more = false, guarantee = within_quota(e, s, d, r, lr, -1);

        for (int k = 0; k < POLICY_RES_COUNT; k++) {
            more |= over(s->used[q].v[k], allocatable(e, s, q, k));
            more |= guarantee && over(s->used[q].v[k], e->q[q].quota.v[k]);
        }
        if (!more)
            violation(e, EM_VICTIM_RULE,
                      "%s reclaimed %s: queue %s holds no more than it may (gpu used %lld, "
                      "quota %lld, fair share %lld)",
                      e->g[d->by].key, e->g[vg].key, e->q[q].name,
                      (long long)s->used[q].v[POLICY_RES_GPU],
                      (long long)e->q[q].quota.v[POLICY_RES_GPU],
                      (long long)s->fair[q].v[POLICY_RES_GPU]);
        for (int k = 0; k < POLICY_RES_COUNT; k++) {
            int64_t quota = e->q[q].quota.v[k], used = s->used[q].v[k];
            int64_t floor = quota < 0 || used < quota ? used : quota;

            if (d->taken[q].v[k] > 0 && !within_quota(e, s, d, r, lr, k) &&
                used - d->taken[q].v[k] < floor)
                violation(e, EM_VICTIM_RULE,
                          "%s (over its quota in %s) reclaimed %s: queue %s taken below its "
                          "quota (%lld - %lld < %lld)",
                          e->g[d->by].key, policy_resource_name(k), e->g[vg].key, e->q[q].name,
                          (long long)used, (long long)d->taken[q].v[k], (long long)floor);
        }
        if (q == lv)
            break;
    }
    if (!within_quota(e, s, d, r, lr, -1))
        check_orders(e, s, d, vg, lr, lv, ev, n);
}

/* "2", "1.5" GPUs; "4", "500m" cpu; "4Gi", "16Mi", bytes of memory: in the engine's units. */
/* An eviction's reason, as data, is true of the state it was decided in, and its words are
 * what the one renderer makes of it. */
static void check_reason(struct em *e, const struct em_snap *s, const struct decision *d, int vg,
                         const struct policy_eviction *ev)
{
    const struct policy_reason *w = ev->why;
    char text[512];
    int qi, r;
    int64_t mark;

    if (!w || w->kind != POLICY_REASON_EVICTED || (policy_reason_text(w, text, sizeof(text)),
                                                   strcmp(text, ev->reason) != 0)) {
        violation(e, EM_REASON, "victim %s: \"%s\" is not the text of its figures", e->g[vg].key,
                  ev->reason);
        return;
    }
    if (strcmp(w->other, e->g[d->by].key) != 0 ||
        strcmp(w->other_queue, e->q[e->g[d->by].queue].name) != 0 || w->eviction != (int)d->kind) {
        violation(e, EM_REASON, "victim %s: \"%s\" names the wrong gang", e->g[vg].key,
                  ev->reason);
        return;
    }
    if (d->kind == POLICY_EVICT_PREEMPT) {
        if (w->other_priority != s->prio[d->by] || w->priority != s->prio[vg] ||
            w->other_priority <= w->priority)
            violation(e, EM_REASON, "victim %s: \"%s\" (priorities %d and %d)", e->g[vg].key,
                      ev->reason, s->prio[d->by], s->prio[vg]);
        return;
    }
    qi = w->queue ? queue_index(e, w->queue) : -1;
    r = w->resource;
    if (qi < 0 || r < 0 || r >= POLICY_RES_COUNT) {
        violation(e, EM_REASON, "victim %s: \"%s\": no such queue or amount", e->g[vg].key,
                  ev->reason);
        return;
    }
    mark = w->quota_mark ? e->q[qi].quota.v[r] : s->fair[qi].v[r];
    if (w->used != s->used[qi].v[r] || w->cap != mark || w->used <= w->cap)
        violation(e, EM_REASON, "victim %s: \"%s\", but queue %s holds %lld of %lld", e->g[vg].key,
                  ev->reason, w->queue, (long long)s->used[qi].v[r], (long long)mark);
}

static void check_decision(struct em *e, const struct em_snap *s, struct decision *d,
                           const struct policy_eviction *ev, size_t n, bool refused)
{
    bool seen[EM_GANGS] = {false};

    /* what it was planned with: its pods pending before the call and planned now */
    for (int i = e->g[d->by].first; i < e->g[d->by].first + e->g[d->by].npods; i++) {
        struct policy_pod_view v;
        struct policy_resources c;

        if (s->phase[i] != POLICY_POD_PENDING || !view(e, i, &v) ||
            v.phase == POLICY_POD_PENDING || !v.node)
            continue;
        charge_of(e, &e->p[i], node_index(e, v.node), &c);
        for (int r = 0; r < POLICY_RES_COUNT; r++)
            d->need.v[r] += c.v[r];
    }
    for (size_t i = 0; i < n; i++) {
        int pi = pod_index(e, ev[i].name), path[EM_QUEUES], np;
        struct policy_pod_view v;
        struct policy_resources c;

        if (pi < 0 || !view(e, pi, &v))
            continue;
        charge_of(e, &e->p[pi], node_index(e, v.node), &c);
        np = path_up(e, e->g[e->p[pi].gang].queue, path);
        for (int k = 0; k < np; k++)
            for (int r = 0; r < POLICY_RES_COUNT; r++)
                d->taken[path[k]].v[r] += c.v[r];
    }
    for (size_t i = 0; i < n; i++) {
        int pi = pod_index(e, ev[i].name), vg = pi >= 0 ? e->p[pi].gang : -1;
        const struct em_queue *vq;
        int64_t min_runtime;

        if (vg < 0 || seen[vg])
            continue;
        seen[vg] = true;
        e->st->victim_gangs++;
        vq = &e->q[e->g[vg].queue];
        if (!s->preemptible[vg])
            violation(e, EM_VICTIM_RULE, "%s took %s, which is not preemptible", e->g[d->by].key,
                      e->g[vg].key);
        min_runtime = d->kind == POLICY_EVICT_RECLAIM ? vq->reclaim_min : vq->preempt_min;
        if (min_runtime > 0 && s->running_since[vg] + min_runtime > s->now)
            violation(e, EM_VICTIM_RULE, "%s took %s, which ran %lld ms of its %lld",
                      e->g[d->by].key, e->g[vg].key, (long long)(s->now - s->running_since[vg]),
                      (long long)min_runtime);
        if (d->kind == POLICY_EVICT_PREEMPT) {
            if (e->g[vg].queue != e->g[d->by].queue || s->prio[vg] >= s->prio[d->by])
                violation(e, EM_VICTIM_RULE, "%s (queue %s, priority %d) preempted %s (queue %s, "
                          "priority %d)", e->g[d->by].key, e->q[e->g[d->by].queue].name,
                          s->prio[d->by], e->g[vg].key, vq->name, s->prio[vg]);
        } else {
            check_reclaim_victim(e, s, d, vg, ev, n);
        }
        check_reason(e, s, d, vg, &ev[i]);
    }
    /* A pod placed in this round, evicted in it: nothing changed from outside in between. */
    for (size_t i = 0; i < n; i++) {
        int pi = pod_index(e, ev[i].name);

        if (pi >= 0 && e->p[pi].placed_round == e->round)
            violation(e, EM_BIND_EVICT, "pod %s of %s was placed in this round and evicted for %s",
                      e->p[pi].name, e->g[e->p[pi].gang].key, e->g[d->by].key);
    }
    /* Thrash: two gangs evicting each other, or one gang evicting the same victim twice, in
     * one epoch. A gang evicted whole again by another gang after a change let that one claim
     * its room (a cascade) is counted, not a violation: docs/quota.md, "No thrash". A refused
     * decision evicted nothing: it is checked above, and is not an eviction here. */
    if (refused)
        return;
    memset(seen, 0, sizeof(seen));
    for (size_t i = 0; i < n; i++) {
        int pi = pod_index(e, ev[i].name), vg = pi >= 0 ? e->p[pi].gang : -1, bound = 0, gone = 0;

        if (vg < 0 || seen[vg])
            continue;
        seen[vg] = true;
        for (int k = e->g[vg].first; k < e->g[vg].first + e->g[vg].npods; k++)
            bound += s->phase[k] == POLICY_POD_BOUND;
        for (size_t j = 0; j < n; j++) {
            int pj = pod_index(e, ev[j].name);

            gone += pj >= 0 && e->p[pj].gang == vg;
        }
        if (gone == bound && e->g[vg].evicted_epoch == e->epoch) {
            /* The same gang again, having lost none of its own since: thrash. Having lost some
             * (a third gang took them), it asks again for what it lost: a cascade. */
            if (e->g[vg].evicted_by == d->by && e->g[vg].by_lost == e->g[d->by].lost)
                violation(e, EM_TWICE, "%s evicted whole again for %s in one epoch",
                          e->g[vg].key, e->g[d->by].key);
            else
                e->st->cascades++;
        }
        if (e->g[d->by].evicted_epoch == e->epoch && e->g[d->by].evicted_by == vg)
            violation(e, EM_TWICE, "%s evicted %s, which had evicted it in this epoch",
                      e->g[d->by].key, e->g[vg].key);
        if (gone == bound)
            e->g[vg].evicted_epoch = e->epoch;
        e->g[vg].evicted_by = d->by;
        e->g[vg].by_lost = e->g[d->by].lost;
        e->g[vg].lost++;
    }
}

/* ---- the evictor ------------------------------------------------------------------------ */

static int cmp_by(const void *a, const void *b)
{
    const struct policy_eviction *x = a, *y = b;
    int r = strcmp(x->by, y->by);

    return r ? r : strcmp(x->gang, y->gang);
}

/* Take what was decided, check it, and carry it out: a victim gang goes whole or is refused
 * whole (a PodDisruptionBudget, an API error). */
static bool carry_out(struct em *e, const struct em_snap *s)
{
    struct policy_eviction *ev = NULL;
    size_t n = 0;

    policy_evictions_take(e->c, &ev, &n);
    if (n == 0) {
        policy_evictions_free(ev, n);
        return false;
    }
    qsort(ev, n, sizeof(*ev), cmp_by);
    if (getenv("EM_TRACE") && atoi(getenv("EM_TRACE")) >= 2) {
        fprintf(stderr, "queues when round %d decided evictions:\n", e->round);
        policy_each_queue(e->c, dump_queue, NULL);
    }
    for (size_t i = 0; i < n;) {
        size_t j = i;
        bool refuse;
        struct decision d = {.by = gang_index(e, ev[i].by), .kind = ev[i].kind};

        while (j < n && strcmp(ev[j].by, ev[i].by) == 0)
            j++;
        /* The evictor checks every victim of a decision before it evicts any (budgets, dry
         * runs): a refusal refuses them all. */
        refuse = chance(e, 15);
        if (d.by >= 0)
            check_decision(e, s, &d, ev + i, j - i, refuse);
        for (size_t k = i; k < j;) {
            size_t end = k;

            while (end < j && strcmp(ev[end].gang, ev[k].gang) == 0)
                end++;
            e->st->refused += refuse;
            if (getenv("EM_TRACE"))
                fprintf(stderr, "round %d: evict %s (gang %s) for %s%s: %s\n", e->round,
                        ev[k].name, ev[k].gang, ev[k].by, refuse ? " REFUSED" : "", ev[k].reason);
            for (size_t m = k; m < end; m++) {
                int pi = pod_index(e, ev[m].name);

                policy_eviction_done(e->c, ev[m].namespace_, ev[m].name, !refuse,
                                     refuse ? "refused by a PodDisruptionBudget" : NULL, e->now);
                if (refuse || pi < 0)
                    continue;
                e->st->evictions++;
                policy_pod_forget(e->c, NS, ev[m].name);
                e->p[pi].exists = false;
                e->p[pi].evicted = true;
                e->g[e->p[pi].gang].bound_round = -1;
            }
            k = end;
        }
        i = j;
    }
    policy_evictions_free(ev, n);
    return true;
}

/* ---- partial gangs ------------------------------------------------------------------------ */

static void check_gangs(struct em *e)
{
    for (int gi = 0; gi < e->ngangs; gi++) {
        struct em_gang *g = &e->g[gi];
        int bound = 0, per[EM_SUBS] = {0};
        bool short_sub = false;

        if (!g->live)
            continue;
        for (int i = g->first; i < g->first + g->npods; i++) {
            struct policy_pod_view v;

            if (view(e, i, &v) && v.phase == POLICY_POD_BOUND) {
                bound++;
                if (e->p[i].sub >= 0)
                    per[e->p[i].sub]++;
            }
        }
        for (int k = 0; k < g->nsubs; k++)
            short_sub |= per[k] < g->submin[k];
        if (bound > 0 && (bound < g->min || short_sub))
            violation(e, EM_PARTIAL, "gang %s: %d bound of its minimum %d", g->key, bound, g->min);
    }
}

/* ---- kube-scheduler ----------------------------------------------------------------------- */

/* The nodes kube-scheduler's own filters pass: its count of requests (whole GPUs only; a
 * share is an annotation it does not count) against allocatable. */
static int offered(struct em *e, int pi, const char **names)
{
    int64_t cpu[EM_NODES] = {0}, mem[EM_NODES] = {0}, gpus[EM_NODES] = {0};
    int n = 0;

    for (int i = 0; i < e->npods; i++) {
        struct policy_pod_view v;
        int k;

        if (!view(e, i, &v) || !v.node ||
            (v.phase != POLICY_POD_BOUND && v.phase != POLICY_POD_WAITING &&
             v.phase != POLICY_POD_BINDING && v.phase != POLICY_POD_EVICTING) ||
            (k = node_index(e, v.node)) < 0)
            continue;
        cpu[k] += e->p[i].cpu;
        mem[k] += e->p[i].mem;
        gpus[k] += e->p[i].gpus;
    }
    for (int k = 0; k < e->nnodes; k++) {
        const struct em_pod *p = &e->p[pi];

        if (cpu[k] + p->cpu <= e->nodes[k].cpu && mem[k] + p->mem <= e->nodes[k].mem &&
            gpus[k] + p->gpus <= e->nodes[k].gpus && (n == 0 || e->full_offers || !chance(e, 10)))
            names[n++] = e->nodes[k].name;
    }
    return n;
}

static void note_bound(struct em *e, const struct policy_bind_result *b)
{
    for (size_t i = 0; i < b->n; i++) {
        const struct policy_assignment *m = &b->members[i];
        int pi = pod_index(e, m->name);
        struct policy_gang_view gv;

        policy_bind_done(e->c, m->namespace_, m->name, true, NULL);
        if (getenv("EM_TRACE"))
            fprintf(stderr, "round %d: bound %s on %s\n", e->round, m->name, m->node);
        if (pi < 0)
            continue;
        upsert_pod(e, pi, m->node, m->gpu_groups);
        e->st->placements++;
        if (e->g[e->p[pi].gang].bound_round < 0 &&
            policy_gang_view_get(e->c, e->g[e->p[pi].gang].key, &gv) &&
            gv.state == POLICY_GANG_BOUND)
            e->g[e->p[pi].gang].bound_round = e->round;
    }
}

/* The reason a filter gave, true of the state it was given in (before its evictions run). */
static void check_waiting_reason(struct em *e, int pi, const struct policy_filter_result *f,
                                 const char *const *names, int n)
{
    uint64_t before = e->st->reasons.violations;

    rc_check(e->c, f->why, f->reason, names, (size_t)n, &e->st->reasons);
    if (e->st->reasons.violations > before)
        violation(e, EM_REASON, "pod %s: %s", e->p[pi].name, e->st->reasons.first);
}

/* One scheduling cycle of one pending pod. True if anything moved. */
static bool cycle(struct em *e, int pi)
{
    const char *names[EM_NODES];
    struct policy_filter_result f = {0};
    struct policy_bind_result b = {0};
    struct em_snap s;
    const char *best = NULL;
    int n = offered(e, pi, names), scores[EM_NODES], top = -1;
    bool moved = false;

    if (n == 0)
        return false; /* not asked: the look has to find it */
    snapshot(e, &s);
    e->st->filters++;
    if (policy_filter(e->c, NS, e->p[pi].name, names, (size_t)n, e->now, &f) != POLICY_OK)
        return false;
    if (getenv("EM_TRACE"))
        fprintf(stderr, "filter %s (%d offered): %s\n", e->p[pi].name, n, f.reason ? f.reason : "fits");
    check_waiting_reason(e, pi, &f, names, n);
    if (f.evictions)
        moved |= carry_out(e, &s);
    for (int k = 0; k < n; k++)
        if (f.verdicts[k].fit == POLICY_FITS)
            names[++top] = names[k];
    policy_filter_result_cleanup(&f);
    if (top >= 0 &&
        policy_prioritize(e->c, NS, e->p[pi].name, names, (size_t)top + 1, e->now, scores) ==
            POLICY_OK) {
        int bi = 0;

        for (int k = 1; k <= top; k++)
            bi = scores[k] > scores[bi] ? k : bi;
        best = names[bi];
    }
    if (best && policy_bind(e->c, NS, e->p[pi].name, best, e->now, &b) == POLICY_OK &&
        getenv("EM_TRACE"))
        fprintf(stderr, "bind %s -> %s: %d %s\n", e->p[pi].name, best, b.outcome, b.reason ? b.reason : "");
    if (best && b.outcome == POLICY_BIND_COMMIT) {
        note_bound(e, &b);
        moved = true;
    }
    policy_bind_result_cleanup(&b);
    check_gangs(e);
    check_room(e);
    return moved;
}

/* The evictor's look at gangs nobody asked about: one gang per call, as the daemon does it
 * (each decision judged against the state it was made in). */
static bool look(struct em *e)
{
    struct em_snap s;
    bool moved = false;

    for (int k = 0; k < 16; k++) {
        size_t decided = 0;

        snapshot(e, &s);
        e->st->looks++;
        if (policy_evict_unasked(e->c, e->now, 500, 1, &decided) == POLICY_OK && decided)
            moved |= carry_out(e, &s);
        check_gangs(e);
        check_room(e);
    }
    return moved;
}

static void cancel_waits(struct em *e)
{
    char why[512];

    for (int i = 0; i < e->npods; i++) {
        struct policy_pod_view v;

        if (view(e, i, &v) && v.phase == POLICY_POD_WAITING)
            policy_bind_cancel(e->c, NS, e->p[i].name, why, sizeof(why));
    }
}

/* Did any pod's reason change since the last call (a hash of them all)? */
static bool reasons_changed(struct em *e)
{
    uint64_t h = 1469598103934665603ULL;

    for (int i = 0; i < e->npods; i++) {
        struct policy_pod_view v;

        if (!view(e, i, &v))
            continue;
        for (const char *r = v.reason ? v.reason : ""; *r; r++)
            h = (h ^ (unsigned char)*r) * 1099511628211ULL;
        h = (h ^ (uint64_t)v.phase) * 1099511628211ULL;
    }
    if (h == e->reasons_hash)
        return false;
    e->reasons_hash = h;
    return true;
}

static void settle(struct em *e)
{
    int order[EM_PODS];

    for (int pass = 0; pass < EM_PASSES; pass++) {
        bool moved = false;
        int n = 0;

        for (int i = 0; i < e->npods; i++) {
            struct policy_pod_view v;

            if (view(e, i, &v) && (v.phase == POLICY_POD_PENDING || v.phase == POLICY_POD_PLANNED))
                order[n++] = i;
        }
        for (int i = n - 1; i > 0; i--) {
            int j = pick(e, i + 1), t = order[i];

            order[i] = order[j];
            order[j] = t;
        }
        for (int i = 0; i < n; i++) {
            struct policy_pod_view v;

            if (view(e, order[i], &v) &&
                (v.phase == POLICY_POD_PENDING || v.phase == POLICY_POD_PLANNED))
                moved |= cycle(e, order[i]);
        }
        e->now += 300;
        if (chance(e, 50))
            moved |= look(e);
        /* kube-scheduler keeps retrying while anything a pod waits for still changes: done
         * when a pass moved nothing and told no pod anything new, and one more pass offering
         * every node its count passes (a node left out of a sample) did not either. */
        if (!moved && !reasons_changed(e) && pass > 2) {
            if (e->full_offers)
                break;
            e->full_offers = true;
        } else {
            e->full_offers = false;
        }
    }
    e->full_offers = false;
    cancel_waits(e);
}

/* ---- rounds ------------------------------------------------------------------------------ */

/* After a round: a gang whose minimum fits the free room within its limits does not wait,
 * unless it names a waiting gang ahead of it (which is checked the same way), or yields to
 * the pending members of a gang bound whole. */
static void check_waiting(struct em *e)
{
    struct em_snap s;

    snapshot(e, &s);
    for (int gi = 0; gi < e->ngangs; gi++) {
        struct policy_gang_view gv;
        char ahead[64];
        int fits, ai;

        if (!e->g[gi].live || !policy_gang_view_get(e->c, e->g[gi].key, &gv) ||
            gv.state != POLICY_GANG_PENDING)
            continue;
        if (gv.why &&
            (gv.why->kind == POLICY_REASON_AHEAD || gv.why->kind == POLICY_REASON_YIELD ||
             gv.why->kind == POLICY_REASON_NO_VICTIMS) &&
            snprintf(ahead, sizeof(ahead), "%s", gv.why->other) > 0 &&
            (ai = gang_index(e, ahead)) >= 0 && e->g[ai].live) {
            struct policy_gang_view av;

            if (policy_gang_view_get(e->c, ahead, &av) && av.state == POLICY_GANG_PENDING)
                continue;
            /* Yielded to a gang bound whole for its members beyond the minimum, which would
             * evict this one at once and can go now (stable.c runs both searches): they go
             * when kube-scheduler asks them again, which may be a round later (seed 66720). */
            if (gv.why->kind == POLICY_REASON_YIELD && has_pending_member(e, ai))
                continue;
        }
        fits = fits_free_room(e, gi, &s);
        e->st->checked_waiting += fits >= 0;
        if (fits == 1)
            violation(e, EM_FITS_WAITS, "gang %s waits (%s) though it fits the free room",
                      e->g[gi].key, gv.reason ? gv.reason : "no reason");
    }
}

static void depart(struct em *e)
{
    for (int gi = 0; gi < e->ngangs; gi++) {
        struct em_gang *g = &e->g[gi];
        struct policy_gang_view gv;

        if (!g->live || !policy_gang_view_get(e->c, g->key, &gv) ||
            !chance(e, gv.state == POLICY_GANG_BOUND ? 30 : 8))
            continue;
        for (int i = g->first; i < g->first + g->npods; i++) {
            if (e->p[i].exists)
                policy_pod_forget(e->c, NS, e->p[i].name);
            e->p[i].exists = e->p[i].evicted = false;
        }
        if (g->kind != KIND_SINGLE)
            policy_gang_forget(e->c, g->key,
                               g->kind == KIND_COMPOSED ? POLICY_GANG_WORKLOAD
                                                        : POLICY_GANG_PODGROUP);
        g->live = false;
    }
}

static void arrive(struct em *e, int n)
{
    for (int k = 0; k < n && e->ngangs < EM_GANGS && e->npods + 8 < EM_PODS; k++) {
        int gi = make_gang(e);

        for (int i = e->g[gi].first; i < e->g[gi].first + e->g[gi].npods; i++)
            upsert_pod(e, i, NULL, NULL);
    }
}

static void round_(struct em *e, bool change)
{
    e->round++;
    e->st->rounds++;
    e->now += 2000;
    if (change) {
        depart(e);
        arrive(e, 1 + pick(e, 4));
    }
    for (int i = 0; i < e->npods; i++)
        if (e->p[i].evicted && e->g[e->p[i].gang].live)
            upsert_pod(e, i, NULL, NULL); /* made again, as KubeRay does */
    settle(e);
    check_gangs(e);
    check_room(e);
    check_waiting(e);
}

/* Some gangs run already when the scenario starts (a restarted muster lists them bound),
 * placed first fit by this checker's own account, groups and all. */
static void start_running(struct em *e)
{
    struct em_room r;

    room_init(&r);
    for (int k = 0; k < 3; k++) {
        int gi = make_gang(e), node[16], group[16];
        struct em_gang *g = &e->g[gi];
        bool ok = true;
        struct em_room before = r;

        for (int i = 0; i < g->npods && ok; i++) {
            const struct em_pod *p = &e->p[g->first + i];

            ok = false;
            for (int n = 0; n < e->nnodes && !ok; n++) {
                int64_t share = share_on(e, p, n);

                if (r.cpu[n] + p->cpu > e->nodes[n].cpu || r.mem[n] + p->mem > e->nodes[n].mem ||
                    (p->gpus && free_devices(e, &r, n) < p->gpus))
                    continue;
                group[i] = -1;
                if (share > 0) {
                    for (int gid = 0; gid < 64 && group[i] < 0; gid++)
                        if (r.group[n][gid] >= 0 ? r.group[n][gid] + share <= 1000
                                                 : free_devices(e, &r, n) >= 1)
                            group[i] = gid;
                    if (group[i] < 0)
                        continue;
                    r.group[n][group[i]] = (int32_t)((r.group[n][group[i]] < 0 ? 0
                                                                               : r.group[n][group[i]]) +
                                                     share);
                }
                r.cpu[n] += p->cpu;
                r.mem[n] += p->mem;
                r.whole[n] += p->gpus;
                node[i] = n;
                ok = true;
            }
        }
        if (!ok) {
            r = before;
            for (int i = g->first; i < g->first + g->npods; i++)
                upsert_pod(e, i, NULL, NULL);
            continue;
        }
        for (int i = 0; i < g->npods; i++) {
            char groups[8];

            snprintf(groups, sizeof(groups), "g%d", group[i]);
            upsert_pod_at(e, g->first + i, e->nodes[node[i]].name, group[i] >= 0 ? groups : NULL,
                          e->now - 3600000);
        }
        g->bound_round = -1; /* found running: placed before the checker's rounds */
        for (int i = g->first; i < g->first + g->npods; i++)
            e->p[i].placed_round = -1;
    }
}

void em_run(uint64_t seed, struct em_stats *st)
{
    struct policy_options o = {.strategy = (enum policy_strategy)(seed % 3),
                               .plan_ttl_ms = 60000};
    struct em *e = calloc(1, sizeof(*e));

    if (!e)
        return;
    e->seed = seed;
    e->rng = seed * 0x2545F4914F6CDD1DULL + 1;
    e->st = st;
    e->now = 10000000;
    e->c = policy_cluster_new(&o);
    if (!e->c) {
        free(e);
        return;
    }
    st->scenarios++;
    make_nodes(e);
    make_queues(e);
    start_running(e);
    for (e->epoch = 0; e->epoch < EM_EPOCHS; e->epoch++) {
        round_(e, true);
        for (int q = 0; q < EM_QUIET_ROUNDS; q++)
            round_(e, false);
    }
    policy_cluster_free(e->c);
    free(e);
}

uint64_t em_total_violations(const struct em_stats *st)
{
    uint64_t t = 0;

    for (int k = 0; k < EM_KINDS; k++)
        t += st->violations[k];
    return t;
}

void em_print(const struct em_stats *st, FILE *f)
{
    fprintf(f,
            "eviction model: %llu scenarios, %llu rounds, %llu filters, %llu looks, %llu pods "
            "placed, %llu pods evicted (%llu victim gangs, %llu refused whole), %llu waiting "
            "gangs checked against the free room, %llu cascades\n",
            (unsigned long long)st->scenarios, (unsigned long long)st->rounds,
            (unsigned long long)st->filters, (unsigned long long)st->looks,
            (unsigned long long)st->placements, (unsigned long long)st->evictions,
            (unsigned long long)st->victim_gangs, (unsigned long long)st->refused,
            (unsigned long long)st->checked_waiting, (unsigned long long)st->cascades);
    rc_print(&st->reasons, f);
    fprintf(f, "violations:");
    for (int k = 0; k < EM_KINDS; k++)
        fprintf(f, " %s %llu%s", kind_names[k], (unsigned long long)st->violations[k],
                k + 1 < EM_KINDS ? "," : "\n");
    for (int k = 0; k < EM_KINDS; k++)
        if (st->violations[k])
            fprintf(f, "  first %s: %s\n", kind_names[k], st->first[k]);
}
