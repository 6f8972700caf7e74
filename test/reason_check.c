/*
 * reason_check.c - every reason kind's predicate over the engine's state (reason_check.h).
 *
 * It reads the engine's objects (policy/internal.h) for what the cluster holds - nodes and
 * their labels, taints and allocatable, pods with their asks, selectors, phases and places,
 * queues with their quotas and limits - and does its own arithmetic on them: what each node
 * has in use, what each queue holds, which checks a node fails. Only fair shares are read
 * from the engine's view (docs/quota.md's arithmetic is tested on its own).
 */
#include <stdarg.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "arith.h"
#include "internal.h"
#include "reason_check.h"

#define RC_MAX_GROUPS 64
#define RC_SEARCH_BUDGET 200000

/* What a node has in use, from the pods placed on it. */
struct use {
    int64_t cpu, memory, pods, whole;
    int32_t ngroups;
    int32_t group[RC_MAX_GROUPS], used[RC_MAX_GROUPS];
    bool overflow; /* more groups than the checker keeps */
};

struct rc {
    struct policy_cluster *c;
    const struct policy_reason *r;
    struct rc_stats *st;
    struct use *use; /* per node id */
    const char *const *offered;
    size_t noffered;
    char why[768];
};

enum verdict { RC_TRUE, RC_FALSE, RC_UNDECIDED };

static enum verdict fail(struct rc *k, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static enum verdict fail(struct rc *k, const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(k->why, sizeof(k->why), fmt, ap);
    va_end(ap);
    return RC_FALSE;
}

/* ---- the cluster, counted again ------------------------------------------------------ */

static void count_use(struct rc *k)
{
    struct policy_cluster *c = k->c;

    for (size_t i = 0; i < c->pods.n; i++) {
        const struct ppod *p = c->pods.items[i];
        struct use *u;

        if (!p || p->place.node < 0 || (size_t)p->place.node >= c->nodes.n)
            continue;
        u = &k->use[p->place.node];
        u->cpu += p->cpu;
        u->memory += p->memory;
        u->pods++;
        u->whole += p->gpus;
        for (int32_t g = 0; g < p->place.ngroups; g++) {
            int32_t at = 0;

            while (at < u->ngroups && u->group[at] != p->place.groups[g])
                at++;
            if (at == u->ngroups) {
                if (u->ngroups == RC_MAX_GROUPS) {
                    u->overflow = true;
                    continue;
                }
                u->group[u->ngroups] = p->place.groups[g];
                u->used[u->ngroups++] = 0;
            }
            u->used[at] += p->place.share;
        }
    }
}

static const char *label_of(const struct pnode *n, const char *key)
{
    for (size_t i = 0; i < n->nlabels; i++)
        if (strcmp(n->labels[i].key, key) == 0)
            return n->labels[i].value;
    return NULL;
}

static bool requirement_holds(const struct pnode *n, const struct policy_selector_req *q)
{
    const char *v = label_of(n, q->key);
    bool listed = false;

    for (size_t i = 0; v && i < q->nvalues; i++)
        listed = listed || strcmp(q->values[i], v) == 0;
    switch (q->op) {
    case POLICY_SELECT_IN: return listed;
    case POLICY_SELECT_NOT_IN: return !listed;
    case POLICY_SELECT_EXISTS: return v != NULL;
    case POLICY_SELECT_DOES_NOT_EXIST: return v == NULL;
    }
    return false;
}

static bool tolerated(const struct pselector *s, const struct policy_taint *t)
{
    for (size_t i = 0; i < s->ntolerations; i++) {
        const struct policy_toleration *o = &s->tolerations[i];
        bool any_key = !o->key || !*o->key;

        if (o->effect >= 0 && o->effect != (int)t->effect)
            continue;
        if (any_key ? o->op == POLICY_TOLERATE_EXISTS
                    : strcmp(o->key, t->key) == 0 &&
                          (o->op == POLICY_TOLERATE_EXISTS ||
                           strcmp(o->value ? o->value : "", t->value ? t->value : "") == 0))
            return true;
    }
    return false;
}

/* The pod's own checks of node n: the first failed, or POLICY_CHECK_OK. */
static int own_checks(const struct pnode *n, const struct ppod *p, bool cordon)
{
    const struct pselector *s = &p->sel;
    bool any = s->naffinity == 0;

    if (cordon && n->unschedulable)
        return POLICY_CHECK_CORDONED;
    for (size_t i = 0; i < s->nnode_selector; i++) {
        const char *v = label_of(n, s->node_selector[i].key);

        if (!v || strcmp(v, s->node_selector[i].value) != 0)
            return POLICY_CHECK_SELECTOR;
    }
    for (size_t t = 0; t < s->naffinity && !any; t++) {
        bool all = true;

        for (size_t q = 0; q < s->affinity[t].nreqs && all; q++)
            all = requirement_holds(n, &s->affinity[t].reqs[q]);
        any = all;
    }
    if (!any)
        return POLICY_CHECK_AFFINITY;
    for (size_t i = 0; i < n->ntaints; i++)
        if (n->taints[i].effect != POLICY_TAINT_PREFER_NO_SCHEDULE &&
            !tolerated(s, &n->taints[i]))
            return POLICY_CHECK_TAINT;
    return POLICY_CHECK_OK;
}

/* The share p takes of each device on n: >= 0, or minus the check it fails there. */
static int32_t share_on(const struct pnode *n, const struct ppod *p)
{
    int64_t milli;

    if (p->share > 0)
        return p->share;
    if (p->gpu_memory_mib <= 0)
        return 0;
    if (n->gpu_memory_mib <= 0)
        return -POLICY_CHECK_GPU_MEMORY_UNKNOWN;
    if (p->gpu_memory_mib > n->gpu_memory_mib)
        return -POLICY_CHECK_GPU_MEMORY_TOO_BIG;
    milli = (p->gpu_memory_mib * 1000 + n->gpu_memory_mib - 1) / n->gpu_memory_mib;
    return (int32_t)(milli < 1000 ? milli : 1000);
}

static int64_t free_devices(const struct pnode *n, const struct use *u)
{
    return n->gpus - u->whole - u->ngroups;
}

/* Room on n as it is used: the first check p fails, or POLICY_CHECK_OK. */
static int room_checks(const struct pnode *n, const struct use *u, const struct ppod *p)
{
    int32_t share = share_on(n, p), devices = p->devices ? p->devices : 1, fit = 0;

    if (share < 0)
        return -share;
    if (u->cpu + p->cpu > n->cpu)
        return POLICY_CHECK_CPU;
    if (u->memory + p->memory > n->memory)
        return POLICY_CHECK_MEMORY;
    if (u->pods + 1 > n->pods)
        return POLICY_CHECK_PODS;
    if (p->gpus > 0 && free_devices(n, u) < p->gpus)
        return POLICY_CHECK_GPU;
    if (share == 0)
        return POLICY_CHECK_OK;
    for (int32_t g = 0; g < u->ngroups; g++)
        fit += u->used[g] + share <= 1000;
    if (fit + (n->sharing_paused ? 0 : free_devices(n, u)) >= devices)
        return POLICY_CHECK_OK;
    return n->sharing_paused && free_devices(n, u) > 0 ? POLICY_CHECK_SHARING_PAUSED
                                                       : POLICY_CHECK_GPU_SHARE;
}

/* Would p go on n were n empty (a cordon or a paused GPU sharing aside: they are lifted as
 * easily as set)? */
static bool fits_empty(const struct pnode *n, const struct ppod *p)
{
    int32_t share = share_on(n, p);

    return own_checks(n, p, false) == POLICY_CHECK_OK && share >= 0 && p->cpu <= n->cpu &&
           p->memory <= n->memory && n->pods >= 1 && p->gpus <= n->gpus &&
           (share == 0 || n->gpus >= (p->devices ? p->devices : 1));
}

/* ---- finding what a reason names ----------------------------------------------------- */

static struct pgang *gang_named(const struct policy_cluster *c, const char *key)
{
    struct pgang *g = key ? pgang_at(c, pidx_get(&c->gang_ix, key)) : NULL;
    const struct ppod *p;

    if (g || !key)
        return g;
    p = ppod_at(c, pidx_get(&c->pod_ix, key));
    return p ? ppod_gang(c, p) : NULL;
}

/* The member named: "name" in the gang's namespace, or a "namespace/name" key. */
static struct ppod *pod_named(const struct policy_cluster *c, const struct policy_reason *r,
                              const char *name)
{
    const char *slash;
    char ns[256];

    if (!name)
        return NULL;
    if (strchr(name, '/'))
        return ppod_at(c, pidx_get(&c->pod_ix, name));
    slash = r->gang ? strchr(r->gang, '/') : NULL;
    if (!slash || (size_t)(slash - r->gang) >= sizeof(ns))
        return NULL;
    memcpy(ns, r->gang, (size_t)(slash - r->gang));
    ns[slash - r->gang] = '\0';
    return ppod_find(c, ns, name);
}

static int32_t members_in(const struct policy_cluster *c, const struct pgang *g, int32_t sub,
                          bool placed_only)
{
    int32_t n = 0;

    for (size_t i = 0; i < g->nmembers; i++) {
        const struct ppod *p = ppod_at(c, g->members[i]);

        if (!p || p->phase == POLICY_POD_EVICTING || (sub >= 0 && p->sub != sub))
            continue;
        n += !placed_only || p->phase != POLICY_POD_PENDING;
    }
    return n;
}

/* The subgroup a reason's words name ("worker group gpu"), -1 when none does. */
static int32_t sub_named(const struct pgang *g, const char *label)
{
    char text[160];

    for (size_t s = 0; label && s < g->nsubs; s++) {
        pgang_sub_label(g, (int32_t)s, text, sizeof(text));
        if (strcmp(text, label) == 0)
            return (int32_t)s;
    }
    return -1;
}

/* The nodes a reason speaks of: the offered ones, or every node; within its domain either
 * way. */
static size_t node_set(const struct rc *k, int32_t *out)
{
    const struct policy_cluster *c = k->c;
    const struct policy_reason *r = k->r;
    bool offered = r->offered && k->offered;
    size_t n = 0, all = offered ? k->noffered : c->nodes.n;

    for (size_t i = 0; i < all; i++) {
        int32_t id = offered ? pidx_get(&c->node_ix, k->offered[i]) : (int32_t)i;
        const struct pnode *node = id >= 0 ? c->nodes.items[id] : NULL;
        const char *v;

        if (!node)
            continue;
        if (r->topology && r->domain &&
            (!(v = label_of(node, r->topology)) || strcmp(v, r->domain) != 0))
            continue;
        out[n++] = id;
    }
    return n;
}

static int64_t node_free(const struct pnode *n, const struct use *u, int res, bool shares)
{
    int64_t f = res == POLICY_RES_CPU      ? n->cpu - u->cpu
                : res == POLICY_RES_MEMORY ? n->memory - u->memory
                                           : free_devices(n, u) * 1000;

    for (int32_t g = 0; shares && res == POLICY_RES_GPU && g < u->ngroups; g++)
        f += 1000 - u->used[g];
    return f;
}

/* ---- no-node, and a gang member that fits nowhere ---------------------------------------- */

static enum verdict check_nodes(struct rc *k, const struct ppod *p)
{
    const struct policy_reason *r = k->r;
    int32_t *set = malloc((k->c->nodes.n + 1) * sizeof(*set));
    int32_t failing[POLICY_CHECKS] = {0};
    struct policy_resources most = {{0}};
    int32_t most_room = 0;
    bool never = true;
    size_t n;

    if (!set)
        return RC_UNDECIDED;
    n = node_set(k, set);
    for (size_t i = 0; i < n; i++) {
        const struct pnode *node = pnode_at(k->c, set[i]);
        const struct use *u = &k->use[set[i]];
        int w = own_checks(node, p, true);

        if (w == POLICY_CHECK_OK) {
            for (int res = 0; res < POLICY_RES_COUNT; res++) {
                int64_t f = node_free(node, u, res, false);

                most.v[res] = f > most.v[res] ? f : most.v[res];
            }
            if (free_devices(node, u) > 0 && most_room < 1000)
                most_room = 1000;
            for (int32_t g = 0; g < u->ngroups; g++)
                most_room = 1000 - u->used[g] > most_room ? 1000 - u->used[g] : most_room;
            w = room_checks(node, u, p);
        }
        if (w == POLICY_CHECK_OK) {
            free(set);
            return fail(k, "node %s takes %s", node->name, p->key);
        }
        failing[w]++;
    }
    for (size_t i = 0; i < k->c->nodes.n; i++)
        if (k->c->nodes.items[i] && fits_empty(k->c->nodes.items[i], p))
            never = false;
    free(set);
    if ((size_t)r->nodes != n)
        return fail(k, "%d nodes looked at, %zu there", r->nodes, n);
    for (int w = 1; w < POLICY_CHECKS; w++)
        if (failing[w] != r->failing[w])
            return fail(k, "%d nodes failed %s, not %d", failing[w], policy_check_name(w),
                        r->failing[w]);
    if (memcmp(&most, &r->most_free, sizeof(most)) != 0 || most_room != r->most_device_room)
        return fail(k, "the most free on a node %s may use is %lld cpu, %lld memory, %lld GPU",
                    p->key, (long long)most.v[0], (long long)most.v[1], (long long)most.v[2]);
    if (!r->domain && never != r->never)
        return fail(k, "never is %s, the nodes say %s", r->never ? "said" : "not said",
                    never ? "never" : "it fits one empty");
    return RC_TRUE;
}

/* ---- the queue holding what a gang waits for -------------------------------------------- */

/* Is queue q the pod's queue or one of its ancestors? */
static bool under(const struct policy_cluster *c, const struct ppod *p, const struct pqueue *q)
{
    const struct pqueue *at = pqueue_find(c, p->queue);

    for (int d = 0; at && d < POLICY_MAX_QUEUE_DEPTH; d++, at = pqueue_parent(c, at))
        if (at == q)
            return true;
    return false;
}

static int64_t charge_of(const struct ppod *p, int res)
{
    return res == POLICY_RES_CPU      ? p->cpu
           : res == POLICY_RES_MEMORY ? p->memory
                                      : p->gpus * 1000 + (int64_t)p->place.share * p->devices;
}

/* The most a pending pod can ask of res: a gpu-memory ask is at most a device each. */
static int64_t ask_at_most(const struct ppod *p, int res)
{
    int64_t devices = p->devices ? p->devices : 1;

    if (res != POLICY_RES_GPU)
        return charge_of(p, res);
    return p->gpus * 1000 + (p->share > 0            ? p->share * devices
                             : p->gpu_memory_mib > 0 ? 1000 * devices
                                                     : 0);
}

/* What q and the queues below it hold of res: every placed pod (bound only: bound). */
static int64_t queue_holds(const struct policy_cluster *c, const struct pqueue *q, int res,
                           bool bound, bool nonpreemptible_only)
{
    int64_t sum = 0;

    for (size_t i = 0; i < c->pods.n; i++) {
        const struct ppod *p = c->pods.items[i];
        const struct pgang *g;

        if (!p || !p->managed || p->place.node < 0 || p->phase == POLICY_POD_EVICTING ||
            (bound && p->phase != POLICY_POD_BOUND) || !under(c, p, q))
            continue;
        g = ppod_gang(c, p);
        if (nonpreemptible_only && (!g || pgang_preemptible(c, g)))
            continue;
        sum += charge_of(p, res);
    }
    return sum;
}

struct fair_of {
    const char *name;
    int res;
    int64_t fair;
};

static void find_fair(const struct policy_queue_view *v, void *ctx)
{
    struct fair_of *f = ctx;

    if (strcmp(v->name, f->name) == 0)
        f->fair = v->fair_share.v[f->res];
}

/* Is q at or above leaf? */
static bool at_or_above(const struct policy_cluster *c, const struct pqueue *q,
                        const struct pqueue *leaf)
{
    for (const struct pqueue *at = leaf; at; at = pqueue_parent(c, at))
        if (at == q)
            return true;
    return false;
}

/* The least a pending pod asks of res: a gpu-memory ask as a share of the largest device. */
static int64_t ask_at_least(const struct policy_cluster *c, const struct ppod *p, int res)
{
    int64_t devices = p->devices ? p->devices : 1, mib = 0;

    if (res != POLICY_RES_GPU)
        return charge_of(p, res);
    if (p->share > 0 || p->gpu_memory_mib <= 0)
        return p->gpus * 1000 + p->share * devices;
    for (size_t i = 0; i < c->nodes.n; i++) {
        const struct pnode *n = c->nodes.items[i];

        if (n && n->gpu_memory_mib > mib)
            mib = n->gpu_memory_mib;
    }
    if (mib <= 0 || p->gpu_memory_mib >= mib)
        return p->gpus * 1000 + 1000 * devices;
    return p->gpus * 1000 + (p->gpu_memory_mib * 1000 + mib - 1) / mib * devices;
}

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;

    return x < y ? -1 : x > y;
}

/* The sum of the k least of v[0..n) (all of them when fewer). */
static int64_t least_sum(int64_t *v, size_t n, int32_t k)
{
    int64_t sum = 0;

    qsort(v, n, sizeof(*v), cmp_i64);
    for (size_t i = 0; i < n && (int32_t)i < k; i++)
        sum += v[i];
    return sum;
}

/* The least g's reason asks of res, by this file's own count: the member named (no-node); or
 * (gang-room) each subgroup's missing count from its least-asking pending members, the rest of
 * the want from the least-asking of all (a member may count twice: only lower). -1: not
 * known. */
static int64_t least_ask(const struct rc *k, const struct pgang *g, int res)
{
    const struct policy_reason *r = k->r;
    int64_t each[256], sum = 0;
    int32_t left = r->want;
    size_t n;

    for (size_t i = 0; r->kind == POLICY_REASON_NO_NODE && i < g->nmembers; i++) {
        const struct ppod *p = ppod_at(k->c, g->members[i]);

        if (p && r->pod && strcmp(p->name, r->pod) == 0)
            return ask_at_least(k->c, p, res);
    }
    if (r->kind != POLICY_REASON_GANG_ROOM || g->nmembers > 256)
        return -1;
    for (size_t sub = 0; sub < g->nsubs; sub++) {
        int32_t placed = 0, missing;

        n = 0;
        for (size_t i = 0; i < g->nmembers; i++) {
            const struct ppod *p = ppod_at(k->c, g->members[i]);

            if (!p || p->sub != (int32_t)sub)
                continue;
            if (p->phase == POLICY_POD_PENDING)
                each[n++] = ask_at_least(k->c, p, res);
            else if (p->place.node >= 0 && p->phase != POLICY_POD_EVICTING)
                placed++;
        }
        missing = g->subs[sub].min > placed ? g->subs[sub].min - placed : 0;
        sum += least_sum(each, n, missing);
        left -= missing < (int32_t)n ? missing : (int32_t)n;
    }
    n = 0;
    for (size_t i = 0; i < g->nmembers; i++) {
        const struct ppod *p = ppod_at(k->c, g->members[i]);

        if (p && p->phase == POLICY_POD_PENDING)
            each[n++] = ask_at_least(k->c, p, res);
    }
    return left > 0 ? sum + least_sum(each, n, left) : sum;
}

/* The least-asking pod of pool not taken yet (of subgroup sub; -2: any), priced at the most it
 * could ask; n when none. */
static size_t cheapest(const struct ppod *const *pool, size_t n, const bool *taken, int32_t sub,
                       int res)
{
    size_t best = n;

    for (size_t i = 0; i < n; i++)
        if (!taken[i] && (sub == -2 || pool[i]->sub == sub) &&
            (best == n || ask_at_most(pool[i], res) < ask_at_most(pool[best], res)))
            best = i;
    return best;
}

/* What one valid choice of g's pending members asks of res at most (gang-room): each
 * subgroup's missing count from its least-asking pods, then the rest of the want from the
 * least-asking of those left, no pod twice, each priced at the most it could ask. A choice
 * the gang could make: when even it fits the fair share, "would end over it" is false. -1:
 * too few pods to choose from. */
static int64_t a_choice_asks(const struct rc *k, const struct pgang *g, int res)
{
    const struct ppod *pool[256];
    bool taken[256] = {false};
    int64_t sum = 0;
    int32_t left = k->r->want;
    size_t n = 0, best;

    for (size_t i = 0; i < g->nmembers && n < 256; i++) {
        const struct ppod *p = ppod_at(k->c, g->members[i]);

        if (p && p->phase == POLICY_POD_PENDING)
            pool[n++] = p;
    }
    for (size_t sub = 0; sub < g->nsubs; sub++) {
        int32_t placed = 0, missing;

        for (size_t i = 0; i < g->nmembers; i++) {
            const struct ppod *p = ppod_at(k->c, g->members[i]);

            placed += p && p->sub == (int32_t)sub && p->place.node >= 0 &&
                      p->phase != POLICY_POD_EVICTING;
        }
        for (missing = g->subs[sub].min - placed; missing > 0; missing--, left--) {
            if ((best = cheapest(pool, n, taken, (int32_t)sub, res)) == n)
                return -1;
            taken[best] = true;
            sum += ask_at_most(pool[best], res);
        }
    }
    for (; left > 0; left--) {
        if ((best = cheapest(pool, n, taken, -2, res)) == n)
            return -1;
        taken[best] = true;
        sum += ask_at_most(pool[best], res);
    }
    return sum;
}

/* "but queue Q would end over its own fair share of F (U in use, A asked)": the holder is over
 * its fair share, Q is on the gang's own path below where it parts from the holder's, uses U,
 * has fair share F, and the gang asks at least A, U + A > F. */
static enum verdict check_own_share(struct rc *k, const struct pgang *g,
                                    const struct pqueue *mine, const struct pqueue *holder,
                                    bool holder_over)
{
    const struct policy_reason *r = k->r;
    const struct pqueue *q = pqueue_find(k->c, r->own_queue);
    int res = r->own_resource;
    struct fair_of fair = {.name = r->own_queue, .res = res, .fair = -1};
    int64_t used, least;

    if (!q || res < 0 || res >= POLICY_RES_COUNT)
        return fail(k, "own-share clause names %s, no queue", r->own_queue);
    if (!holder_over)
        return fail(k, "own-share clause, but holder %s is within its fair share", holder->name);
    if (!at_or_above(k->c, q, mine) || at_or_above(k->c, q, holder))
        return fail(k, "queue %s is not on the gang's own path below where it parts from %s",
                    q->name, holder->name);
    used = queue_holds(k->c, q, res, false, false);
    policy_each_queue(k->c, find_fair, &fair);
    if (used != r->own_used || fair.fair != r->own_fair)
        return fail(k, "queue %s uses %lld of fair share %lld, not %lld of %lld", q->name,
                    (long long)used, (long long)fair.fair, (long long)r->own_used,
                    (long long)r->own_fair);
    if (used + r->own_asked <= fair.fair)
        return fail(k, "queue %s would end within its fair share (%lld + %lld <= %lld)",
                    q->name, (long long)used, (long long)r->own_asked, (long long)fair.fair);
    if (r->kind == POLICY_REASON_GANG_ROOM) {
        int64_t choice = a_choice_asks(k, g, res);

        if (choice >= 0 && used + choice <= fair.fair)
            return fail(k, "queue %s would end within its fair share with members asking %lld "
                        "(%lld + %lld <= %lld)", q->name, (long long)choice, (long long)used,
                        (long long)choice, (long long)fair.fair);
    }
    least = least_ask(k, g, res);
    if (r->kind == POLICY_REASON_NO_NODE && least != r->own_asked)
        return fail(k, "member %s asks %lld, not %lld", r->pod ? r->pod : "?", (long long)least,
                    (long long)r->own_asked);
    if (least < 0)
        return RC_UNDECIDED;
    /* A member counted for its subgroup may count again here: lower than the engine's, or equal. */
    return used + least > fair.fair ? RC_TRUE : RC_UNDECIDED;
}

/* "but queue Q would end over its quota of X (U in use, A asked): only what queue H holds over
 * its quota (E) may be taken": H is over its fair share, Q is on the gang's own path below
 * where it parts from H, uses U, has quota X, and the gang asks at least A, U + A > X (victim
 * rule 3); E is H's use over its quota (checked with H's figures). */
static enum verdict check_own_quota(struct rc *k, const struct pgang *g,
                                    const struct pqueue *mine, const struct pqueue *holder,
                                    bool holder_over, int64_t held)
{
    const struct policy_reason *r = k->r;
    const struct pqueue *q = pqueue_find(k->c, r->quota_queue);
    int res = r->held_resource;
    int64_t used, least, quota, excess;

    if (!q)
        return fail(k, "own-quota clause names %s, no queue", r->quota_queue);
    if (!holder_over)
        return fail(k, "own-quota clause, but holder %s is within its fair share", holder->name);
    if (!at_or_above(k->c, q, mine) || at_or_above(k->c, q, holder))
        return fail(k, "queue %s is not on the gang's own path below where it parts from %s",
                    q->name, holder->name);
    used = queue_holds(k->c, q, res, false, false);
    quota = q->quota.v[res];
    if (used != r->quota_used || quota != r->quota_of)
        return fail(k, "queue %s uses %lld of quota %lld, not %lld of %lld", q->name,
                    (long long)used, (long long)quota, (long long)r->quota_used,
                    (long long)r->quota_of);
    if (quota < 0 || parith_add(used, r->quota_asked) <= quota)
        return fail(k, "queue %s would end within its quota (%lld + %lld, quota %lld)", q->name,
                    (long long)used, (long long)r->quota_asked, (long long)quota);
    /* "only what H holds over its quota (E) may be taken": said because E is not enough */
    excess = held > holder->quota.v[res] ? held - holder->quota.v[res] : 0;
    if (holder->quota.v[res] < 0 || excess >= r->quota_asked)
        return fail(k, "holder %s holds %lld over its quota, not less than the %lld asked",
                    holder->name, (long long)excess, (long long)r->quota_asked);
    if (r->kind == POLICY_REASON_GANG_ROOM) {
        int64_t choice = a_choice_asks(k, g, res);

        if (choice >= 0 && parith_add(used, choice) <= quota)
            return fail(k, "queue %s would end within its quota with members asking %lld "
                        "(%lld + %lld <= %lld)", q->name, (long long)choice, (long long)used,
                        (long long)choice, (long long)quota);
        if (choice >= 0 && excess >= choice)
            return fail(k, "holder %s holds %lld over its quota, enough for members asking %lld",
                        holder->name, (long long)excess, (long long)choice);
    }
    least = least_ask(k, g, res);
    if (r->kind == POLICY_REASON_NO_NODE && least != r->quota_asked)
        return fail(k, "member %s asks %lld, not %lld", r->pod ? r->pod : "?", (long long)least,
                    (long long)r->quota_asked);
    if (least < 0)
        return RC_UNDECIDED;
    return parith_add(used, least) > quota && excess < least ? RC_TRUE : RC_UNDECIDED;
}

static enum verdict check_holder(struct rc *k, const struct pgang *g)
{
    const struct policy_reason *r = k->r;
    const struct pqueue *h = r->holder ? pqueue_find(k->c, r->holder) : NULL;
    const struct pqueue *mine = pqueue_find(k->c, pgang_queue(k->c, g));
    struct fair_of fair = {.name = r->holder, .res = r->held_resource, .fair = -1};
    int64_t quotas = 0, capacity = 0, held;
    int res = r->held_resource;

    if (!r->holder)
        return RC_TRUE;
    if (!h || res < 0 || res >= POLICY_RES_COUNT)
        return fail(k, "holder %s is no queue", r->holder);
    for (const struct pqueue *at = mine; at; at = pqueue_parent(k->c, at))
        if (at == h)
            return fail(k, "holder %s is on the gang's own path", h->name);
    held = queue_holds(k->c, h, res, false, false);
    policy_each_queue(k->c, find_fair, &fair);
    if (held != r->held || h->quota.v[res] != r->holder_quota || fair.fair != r->holder_fair)
        return fail(k, "holder %s holds %lld (quota %lld, fair share %lld), not %lld", h->name,
                    (long long)held, (long long)h->quota.v[res], (long long)fair.fair,
                    (long long)r->held);
    for (size_t i = 0; i < k->c->queues.n; i++) {
        const struct pqueue *q = k->c->queues.items[i];

        if (q && !pqueue_parent(k->c, q) && !q->implicit)
            quotas = quotas < 0 || q->quota.v[res] < 0 ? -1 : quotas + q->quota.v[res];
    }
    for (size_t i = 0; i < k->c->nodes.n; i++) {
        const struct pnode *n = k->c->nodes.items[i];

        if (n && !n->unschedulable)
            capacity += res == POLICY_RES_CPU      ? n->cpu
                        : res == POLICY_RES_MEMORY ? n->memory
                                                   : n->gpus * 1000;
    }
    if (quotas != r->quotas || capacity != r->capacity)
        return fail(k, "quotas add up to %lld and the cluster has %lld, not %lld and %lld",
                    (long long)quotas, (long long)capacity, (long long)r->quotas,
                    (long long)r->capacity);
    if (r->own_queue && r->quota_queue)
        return fail(k, "both an own-share and an own-quota clause");
    if (r->own_queue)
        return check_own_share(k, g, mine, h, held > fair.fair);
    return r->quota_queue ? check_own_quota(k, g, mine, h, held > fair.fair, held) : RC_TRUE;
}

/* ---- gang-room --------------------------------------------------------------------------- */

/*
 * A gang's minimum, placed by the checker's own search: is there a way?
 *
 * A way is one the engine may take: each member on a node that passes its own checks and has
 * room beside what the search placed before it, and within its queue's limit and every
 * ancestor's (for a non-preemptible gang, their quotas too, over the non-preemptible work they
 * hold), counting what the search placed before it. The engine checks each member it plans
 * against its queues (plan.c's queue_admits): a member that has room but that its queue's
 * limit refuses is no way in (seed 17154 of bench_eviction_model: a 2-GPU member fits the one
 * node with room, but its queue, 2.125 GPUs of a 4-GPU limit in use, may not take it beside
 * the others; without the queue the checker "placed" the minimum and called a true "do not
 * fit together" false). An upgrade's burst over its queue's limit (hold.c) is not counted:
 * there the checker is stricter than the engine, so it may miss a false reason, never call a
 * true one false.
 */
struct qroom {
    const struct pqueue *q;
    int64_t held[POLICY_RES_COUNT];    /* what its subtree's placed pods take */
    int64_t held_np[POLICY_RES_COUNT]; /* ... those of non-preemptible gangs */
    int64_t added[POLICY_RES_COUNT];   /* what the search placed so far */
};

struct search {
    struct rc *k;
    const struct pgang *g;
    struct ppod **pool;
    size_t npool;
    int32_t *set;
    size_t nset;
    int32_t *missing; /* per subgroup */
    int32_t slack, total;
    long budget;
    struct qroom *qs; /* the queues on the pending members' paths */
    size_t nq;
    bool nonpreemptible;
};

static bool search_from(struct search *s, size_t i);

static struct qroom *qroom_of(struct search *s, const struct pqueue *q)
{
    for (size_t i = 0; i < s->nq; i++)
        if (s->qs[i].q == q)
            return &s->qs[i];
    return NULL;
}

/* What p takes of its queues with share on its devices. */
static void member_charge(const struct ppod *p, int32_t share, int64_t *charge)
{
    charge[POLICY_RES_CPU] = p->cpu;
    charge[POLICY_RES_MEMORY] = p->memory;
    charge[POLICY_RES_GPU] = p->gpus * 1000 + (int64_t)share * p->devices;
}

/* Do p's queue and its ancestors take p (share on its devices) on top of what they hold and
 * what the search placed (pqueue_room's rule: limits, and for a non-preemptible gang quotas)? */
static bool queues_take(struct search *s, const struct ppod *p, int32_t share)
{
    const struct policy_cluster *c = s->k->c;
    const struct pqueue *at = pqueue_find(c, p->queue);
    int64_t charge[POLICY_RES_COUNT];

    if (!p->managed)
        return true;
    member_charge(p, share, charge);
    for (int d = 0; at && d < POLICY_MAX_QUEUE_DEPTH; d++, at = pqueue_parent(c, at)) {
        const struct qroom *r = qroom_of(s, at);

        for (int res = 0; r && res < POLICY_RES_COUNT; res++) {
            int64_t after = r->added[res] + charge[res];

            if (charge[res] > 0 &&
                ((at->limit.v[res] >= 0 && r->held[res] + after > at->limit.v[res]) ||
                 (s->nonpreemptible && at->quota.v[res] >= 0 &&
                  r->held_np[res] + after > at->quota.v[res])))
                return false;
        }
    }
    return pqueue_find(c, p->queue) != NULL;
}

/* Count p (share on its devices) into what the search placed in its queues, or (sign -1)
 * take it off again. */
static void queues_charge(struct search *s, const struct ppod *p, int32_t share, int sign)
{
    const struct policy_cluster *c = s->k->c;
    const struct pqueue *at = pqueue_find(c, p->queue);
    int64_t charge[POLICY_RES_COUNT];

    if (!p->managed)
        return;
    member_charge(p, share, charge);
    for (int d = 0; at && d < POLICY_MAX_QUEUE_DEPTH; d++, at = pqueue_parent(c, at)) {
        struct qroom *r = qroom_of(s, at);

        for (int res = 0; r && res < POLICY_RES_COUNT; res++)
            r->added[res] += sign * charge[res];
    }
}

/* The queues on the pending members' paths, with what they hold now; false: out of memory. */
static bool queues_counted(struct search *s)
{
    const struct policy_cluster *c = s->k->c;

    s->qs = calloc(s->npool * POLICY_MAX_QUEUE_DEPTH + 1, sizeof(*s->qs));
    if (!s->qs)
        return false;
    for (size_t i = 0; i < s->npool; i++) {
        const struct pqueue *at = pqueue_find(c, s->pool[i]->queue);

        for (int d = 0; at && d < POLICY_MAX_QUEUE_DEPTH; d++, at = pqueue_parent(c, at)) {
            struct qroom *r;

            if (qroom_of(s, at))
                continue;
            r = &s->qs[s->nq++];
            r->q = at;
            for (int res = 0; res < POLICY_RES_COUNT; res++) {
                r->held[res] = queue_holds(c, at, res, false, false);
                r->held_np[res] = queue_holds(c, at, res, false, true);
            }
        }
    }
    return true;
}

/* Place pool[i] on node set[j] (best-fit GPU groups), go on, and take it off again. */
static bool search_on(struct search *s, size_t i, size_t j, bool for_sub)
{
    const struct ppod *p = s->pool[i];
    const struct pnode *n = pnode_at(s->k->c, s->set[j]);
    struct use *u = &s->k->use[s->set[j]], before = *u;
    int32_t share = share_on(n, p), devices = p->devices ? p->devices : 1;
    bool ok;

    if (--s->budget <= 0 || own_checks(n, p, true) != POLICY_CHECK_OK ||
        room_checks(n, u, p) != POLICY_CHECK_OK || !queues_take(s, p, share))
        return false;
    queues_charge(s, p, share, 1);
    u->cpu += p->cpu;
    u->memory += p->memory;
    u->pods++;
    u->whole += p->gpus;
    for (int32_t d = 0; share > 0 && d < devices; d++) {
        int32_t best = -1;

        for (int32_t g = 0; g < u->ngroups; g++)
            if (u->used[g] + share <= 1000 && (best < 0 || u->used[g] > u->used[best]))
                best = g;
        if (best < 0 && u->ngroups < RC_MAX_GROUPS) {
            u->group[u->ngroups] = -1 - d;
            u->used[best = u->ngroups++] = 0;
        }
        if (best >= 0)
            u->used[best] += share + 1001; /* taken by this pod: no second device of it */
    }
    for (int32_t g = 0; g < u->ngroups; g++)
        if (u->used[g] > 1000)
            u->used[g] -= 1001;
    if (for_sub)
        s->missing[p->sub]--;
    else
        s->slack--;
    s->total--;
    ok = search_from(s, i + 1);
    if (for_sub)
        s->missing[p->sub]++;
    else
        s->slack++;
    s->total++;
    queues_charge(s, p, share, -1);
    *u = before;
    return ok;
}

static bool search_from(struct search *s, size_t i)
{
    const struct ppod *p;
    bool for_sub;

    if (s->total <= 0)
        return true;
    if (i >= s->npool || s->budget <= 0 || (int32_t)(s->npool - i) < s->total)
        return false;
    p = s->pool[i];
    for_sub = p->sub >= 0 && (size_t)p->sub < s->g->nsubs && s->missing[p->sub] > 0;
    if (for_sub || s->slack > 0)
        for (size_t j = 0; j < s->nset; j++)
            if (search_on(s, i, j, for_sub))
                return true;
    return search_from(s, i + 1);
}

/* Can the members the gang's minimum misses be placed on the nodes of the set as they are?
 * RC_TRUE: no way found (the claim holds), RC_FALSE: a way, RC_UNDECIDED: out of budget. */
static enum verdict fits_together(struct rc *k, const struct pgang *g, struct ppod **pool,
                                  size_t npool, int32_t *set, size_t nset)
{
    int32_t missing[64] = {0}, subs = 0;
    struct search s = {.k = k, .g = g, .pool = pool, .npool = npool, .set = set, .nset = nset,
                       .missing = missing, .budget = RC_SEARCH_BUDGET,
                       .nonpreemptible = !pgang_preemptible(k->c, g)};
    bool found;

    if (g->nsubs > 64 || !queues_counted(&s)) {
        free(s.qs);
        return RC_UNDECIDED;
    }
    for (size_t sub = 0; sub < g->nsubs; sub++) {
        int32_t placed = members_in(k->c, g, (int32_t)sub, true);

        missing[sub] = g->subs[sub].min > placed ? g->subs[sub].min - placed : 0;
        subs += missing[sub];
    }
    s.total = pgang_min(k->c, g) - members_in(k->c, g, -1, true);
    s.slack = s.total - subs;
    found = search_from(&s, 0);
    free(s.qs);
    if (found)
        return fail(k, "its minimum fits: the checker placed it");
    return s.budget <= 0 ? RC_UNDECIDED : RC_TRUE;
}

/* Queue q's limit (or quota, non-preemptible use) and use are as said, and asked does not
 * fit under it: what QUEUE_LIMIT, QUEUE_QUOTA and gang-room's heavier choice all say. */
static enum verdict queue_refuses(struct rc *k, const struct pqueue *q, bool limit, int res,
                                  int64_t cap_said, int64_t used_said, int64_t asked)
{
    int64_t cap = limit ? q->limit.v[res] : q->quota.v[res];
    int64_t used = queue_holds(k->c, q, res, false, !limit);

    if (cap != cap_said || used != used_said)
        return fail(k, "queue %s: %s %lld, %lld in use", q->name, limit ? "limit" : "quota",
                    (long long)cap, (long long)used);
    if (cap < 0 || used + asked <= cap || asked <= 0)
        return fail(k, "queue %s has room for %lld more", q->name, (long long)(cap - used));
    return RC_TRUE;
}

/* A heavier choice over a queue's limit: refused there, and asking at least the minimum. */
static enum verdict check_over_limit(struct rc *k)
{
    const struct policy_reason *r = k->r;
    const struct pqueue *q;
    int res = r->limit_resource;
    enum verdict v;

    if (res < 0)
        return RC_TRUE;
    if (res >= POLICY_RES_COUNT || !(q = pqueue_find(k->c, r->queue)))
        return fail(k, "over the limit of no queue %s", r->queue ? r->queue : "?");
    if ((v = queue_refuses(k, q, true, res, r->cap, r->used, r->asked)) != RC_TRUE)
        return v;
    if (r->asked < r->need.v[res])
        return fail(k, "a heavier choice asks %lld, less than the minimum (%lld)",
                    (long long)r->asked, (long long)r->need.v[res]);
    return RC_TRUE;
}

static enum verdict check_gang_room(struct rc *k)
{
    const struct policy_reason *r = k->r;
    struct pgang *g = gang_named(k->c, r->gang);
    int32_t *set = malloc((k->c->nodes.n + 1) * sizeof(*set)), placed;
    struct ppod **pool = NULL;
    struct policy_resources fr = {{0}}, cap = {{0}}, asks = {{0}};
    size_t nset, npool = 0;
    bool shares = false, never = false;
    enum verdict v = RC_TRUE;

    if (!g || !set || !(pool = malloc((g->nmembers + 1) * sizeof(*pool)))) {
        free(set);
        return g ? RC_UNDECIDED : fail(k, "no gang %s", r->gang ? r->gang : "?");
    }
    placed = members_in(k->c, g, -1, true);
    if (r->want != pgang_min(k->c, g) - placed) {
        v = fail(k, "its minimum misses %d, not %d", pgang_min(k->c, g) - placed, r->want);
        goto out;
    }
    for (size_t i = 0; i < g->nmembers; i++) {
        struct ppod *p = ppod_at(k->c, g->members[i]);

        if (p && p->phase == POLICY_POD_PENDING) {
            pool[npool++] = p;
            shares = shares || p->share > 0 || p->gpu_memory_mib > 0;
            for (int res = 0; res < POLICY_RES_COUNT; res++)
                asks.v[res] += ask_at_most(p, res);
        }
    }
    nset = node_set(k, set);
    for (size_t i = 0; i < nset; i++) {
        const struct pnode *n = pnode_at(k->c, set[i]);
        bool usable = false;

        for (size_t m = 0; m < npool && !usable; m++)
            usable = own_checks(n, pool[m], true) == POLICY_CHECK_OK;
        for (int res = 0; usable && res < POLICY_RES_COUNT; res++) {
            int64_t f = node_free(n, &k->use[set[i]], res, shares);

            fr.v[res] += f > 0 ? f : 0;
            cap.v[res] += res == POLICY_RES_CPU      ? n->cpu
                          : res == POLICY_RES_MEMORY ? n->memory
                                                     : n->gpus * 1000;
        }
    }
    for (int res = 0; res < POLICY_RES_COUNT; res++) {
        never = never || r->need.v[res] > cap.v[res];
        if (r->need.v[res] > asks.v[res] && r->need.v[res] > 0) {
            v = fail(k, "its minimum needs at least %lld of %s, more than its members ask (%lld)",
                     (long long)r->need.v[res], policy_resource_name(res),
                     (long long)asks.v[res]);
            goto out;
        }
    }
    if (r->pod && r->nodes > 0) {
        int32_t failed = 0;

        for (int w = 1; w < POLICY_CHECKS; w++)
            failed += r->failing[w];
        if (failed >= r->nodes) { /* the member named fits no node alone */
            struct ppod *p = pod_named(k->c, r, r->pod);

            v = p ? check_nodes(k, p) : fail(k, "no member %s", r->pod);
            goto out;
        }
    }
    if (memcmp(&fr, &r->free, sizeof(fr)) != 0) {
        v = fail(k, "the nodes it may use have %lld cpu, %lld memory, %lld GPU free",
                 (long long)fr.v[0], (long long)fr.v[1], (long long)fr.v[2]);
        goto out;
    }
    if (r->resource >= 0 && r->resource < POLICY_RES_COUNT) {
        if (r->need.v[r->resource] <= fr.v[r->resource])
            v = fail(k, "%lld of %s free on the nodes it may use, it needs %lld",
                     (long long)fr.v[r->resource], policy_resource_name(r->resource),
                     (long long)r->need.v[r->resource]);
    } else {
        v = fits_together(k, g, pool, npool, set, nset);
    }
    if (v == RC_TRUE && !r->domain && never != r->never)
        v = fail(k, "never is %s; what it needs against the nodes empty says %s",
                 r->never ? "said" : "not said", never ? "never" : "it fits");
    if (v == RC_TRUE)
        v = check_over_limit(k);
out:
    if (v == RC_TRUE)
        v = check_holder(k, g);
    free(set);
    free(pool);
    return v;
}

/* ---- queues ---------------------------------------------------------------------------- */

static enum verdict check_queue(struct rc *k)
{
    const struct policy_reason *r = k->r;
    const struct pqueue *q = pqueue_find(k->c, r->queue);
    bool limit = r->kind == POLICY_REASON_QUEUE_LIMIT;
    int res = r->resource;
    enum verdict v;

    if (!q || res < 0 || res >= POLICY_RES_COUNT)
        return fail(k, "no queue %s or resource", r->queue ? r->queue : "?");
    if ((v = queue_refuses(k, q, limit, res, r->cap, r->used, r->asked)) != RC_TRUE)
        return v;
    if (r->never != (r->asked > r->cap))
        return fail(k, "never is %s for %lld against %lld", r->never ? "said" : "not said",
                    (long long)r->asked, (long long)r->cap);
    return RC_TRUE;
}

/* ---- the other kinds ------------------------------------------------------------------- */

static enum verdict check_members(struct rc *k, const struct pgang *g)
{
    const struct policy_reason *r = k->r;
    int32_t sub = sub_named(g, r->subgroup), have, want;

    if (r->subgroup && sub < 0)
        return fail(k, "gang %s has no %s", g->key, r->subgroup);
    have = members_in(k->c, g, sub, false);
    want = sub >= 0 ? g->subs[sub].min : pgang_min(k->c, g);
    if (have != r->have || want != r->want || have >= want)
        return fail(k, "%d of %d pods exist", have, want);
    return RC_TRUE;
}

static int32_t leaving_for(const struct policy_cluster *c, const struct pgang *g)
{
    int32_t n = 0;

    for (size_t i = 0; i < c->pods.n; i++) {
        const struct ppod *p = c->pods.items[i];

        n += p && p->phase == POLICY_POD_EVICTING && p->evict_by == g->id;
    }
    return n;
}

static int32_t at_bind(const struct policy_cluster *c, const struct pgang *g)
{
    int32_t n = 0;

    for (size_t i = 0; i < g->nmembers; i++) {
        const struct ppod *p = ppod_at(c, g->members[i]);

        n += p && (p->phase == POLICY_POD_WAITING || p->phase == POLICY_POD_BINDING ||
                   p->phase == POLICY_POD_BOUND);
    }
    return n;
}

static bool has_pending(const struct policy_cluster *c, const struct pgang *g)
{
    for (size_t i = 0; i < g->nmembers; i++) {
        const struct ppod *p = ppod_at(c, g->members[i]);

        if (p && p->phase == POLICY_POD_PENDING)
            return true;
    }
    return false;
}

static enum verdict check_other_gang(struct rc *k, bool waits)
{
    const struct pgang *o = gang_named(k->c, k->r->other);

    if (!o)
        return fail(k, "no gang %s", k->r->other ? k->r->other : "?");
    if (!k->r->other_queue || strcmp(pgang_queue(k->c, o), k->r->other_queue) != 0)
        return fail(k, "gang %s is of queue %s", o->key, pgang_queue(k->c, o));
    if (waits && !has_pending(k->c, o))
        return fail(k, "gang %s waits for nothing", o->key);
    return RC_TRUE;
}

static enum verdict check_gang_kind(struct rc *k, struct pgang *g)
{
    const struct policy_reason *r = k->r;
    const struct ppod *p;

    switch (r->kind) {
    case POLICY_REASON_UNDECLARED:
        return !g->singleton && !pgang_declared(g) ? RC_TRUE
                                                   : fail(k, "gang %s is declared", g->key);
    case POLICY_REASON_MEMBERS: return check_members(k, g);
    case POLICY_REASON_INVALID:
        for (size_t i = 0; i < g->nmembers; i++)
            if ((p = ppod_at(k->c, g->members[i])) && (!r->pod || strcmp(p->name, r->pod) == 0) &&
                !ppod_ask_valid(p, NULL, 0))
                return RC_TRUE;
        return fail(k, "no member of %s asks what cannot be met", g->key);
    case POLICY_REASON_AHEAD: return check_other_gang(k, true);
    case POLICY_REASON_YIELD:
    case POLICY_REASON_NO_VICTIMS: return check_other_gang(k, false);
    case POLICY_REASON_IN_TURN:
        p = pod_named(k->c, r, r->other);
        return p && ppod_gang(k->c, p) == g && p->phase == POLICY_POD_PENDING
                   ? RC_TRUE
                   : fail(k, "%s is no pending member of %s", r->other ? r->other : "?", g->key);
    case POLICY_REASON_EXTRA:
        return !g->admitted ? RC_TRUE : fail(k, "gang %s is bound", g->key);
    case POLICY_REASON_VICTIMS:
        return leaving_for(k->c, g) == r->have && r->have > 0
                   ? RC_TRUE
                   : fail(k, "%d pods leave for %s", leaving_for(k->c, g), g->key);
    case POLICY_REASON_AT_BIND:
        return at_bind(k->c, g) == r->have && r->want == pgang_min(k->c, g) && r->have < r->want
                   ? RC_TRUE
                   : fail(k, "%d of %d at bind or bound", at_bind(k->c, g), pgang_min(k->c, g));
    case POLICY_REASON_PLAN_EXPIRED:
    case POLICY_REASON_ROOM_TAKEN:
        return !g->planned ? RC_TRUE : fail(k, "gang %s holds a plan", g->key);
    case POLICY_REASON_VICTIM_REFUSED:
        p = ppod_at(k->c, pidx_get(&k->c->pod_ix, r->other ? r->other : ""));
        return !p || p->phase != POLICY_POD_EVICTING
                   ? RC_TRUE
                   : fail(k, "%s is still leaving", p->key);
    case POLICY_REASON_BIND_FAILED:
        p = pod_named(k->c, r, r->pod);
        return p && p->phase == POLICY_POD_PENDING ? RC_TRUE
                                                   : fail(k, "%s is not pending", r->pod);
    case POLICY_REASON_NOT_OFFERED:
        p = pod_named(k->c, r, r->pod);
        return p && pnode_at(k->c, p->place.node) &&
                       strcmp(pnode_at(k->c, p->place.node)->name, r->other) == 0
                   ? RC_TRUE
                   : fail(k, "%s is not planned on %s", r->pod, r->other);
    default: return RC_UNDECIDED;
    }
}

static enum verdict check_kind(struct rc *k)
{
    const struct policy_reason *r = k->r;
    struct pgang *g = gang_named(k->c, r->gang);
    struct ppod *p;

    switch (r->kind) {
    case POLICY_REASON_NO_QUEUE:
        return !pqueue_find(k->c, r->queue) ? RC_TRUE : fail(k, "queue %s exists", r->queue);
    case POLICY_REASON_QUEUE_LIMIT:
    case POLICY_REASON_QUEUE_QUOTA: return check_queue(k);
    case POLICY_REASON_NO_NODE: {
        enum verdict v;

        if (!(p = pod_named(k->c, r, r->pod)))
            return fail(k, "no pod %s", r->pod ? r->pod : "?");
        /* Said of the domains its gang keeps to (topology.c's, in words): not counted here. */
        if (r->domain && !r->topology)
            return RC_UNDECIDED;
        v = check_nodes(k, p);
        return v == RC_TRUE && g ? check_holder(k, g) : v;
    }
    case POLICY_REASON_GANG_ROOM: return check_gang_room(k);
    case POLICY_REASON_TOPOLOGY:
        /* topology.c's words: only that the gang asks for a topology is checked */
        if (!g)
            return fail(k, "no gang %s", r->gang ? r->gang : "?");
        return ptopo_constrained(g) || k->c->topo_fence ? RC_TRUE
                                                       : fail(k, "gang %s asks no topology", g->key);
    case POLICY_REASON_EVICTED:
        return r->other && r->other_queue && (r->eviction == POLICY_EVICT_RECLAIM ||
                                              r->eviction == POLICY_EVICT_PREEMPT)
                   ? RC_TRUE
                   : fail(k, "an eviction names no gang");
    default:
        if (!g)
            return fail(k, "no gang %s", r->gang ? r->gang : "?");
        return check_gang_kind(k, g);
    }
}

/* ---- entry points ---------------------------------------------------------------------- */

void rc_check(struct policy_cluster *c, const struct policy_reason *why, const char *text,
              const char *const *offered, size_t noffered, struct rc_stats *st)
{
    struct rc k = {.c = c, .r = why, .st = st, .offered = offered, .noffered = noffered};
    char words[2048];
    enum verdict v;

    if (!why || why->kind <= POLICY_REASON_NONE || why->kind >= POLICY_REASON_KINDS)
        return;
    policy_reason_text(why, words, sizeof(words));
    if (text && strcmp(words, text) != 0) {
        v = fail(&k, "its words are not its figures': \"%s\"", words);
    } else if (!(k.use = calloc(c->nodes.n + 1, sizeof(*k.use)))) {
        v = RC_UNDECIDED;
    } else {
        count_use(&k);
        v = check_kind(&k);
        free(k.use);
    }
    if (v == RC_UNDECIDED) {
        st->undecided++;
        return;
    }
    st->checked++;
    st->by_kind[why->kind]++;
    if (v == RC_TRUE)
        return;
    if (st->violations++ == 0)
        snprintf(st->first, sizeof(st->first), "\"%s\" (%s): %s", text ? text : words,
                 policy_reason_kind_name(why->kind), k.why);
}

struct views {
    struct policy_cluster *c;
    struct rc_stats *st;
};

static void check_pod(const struct policy_pod_view *v, void *ctx)
{
    struct views *w = ctx;

    if (v->why)
        rc_check(w->c, v->why, v->reason, NULL, 0, w->st);
}

static void check_gang(const struct policy_gang_view *v, void *ctx)
{
    struct views *w = ctx;

    if (v->why)
        rc_check(w->c, v->why, v->reason, NULL, 0, w->st);
}

void rc_check_views(struct policy_cluster *c, struct rc_stats *st)
{
    struct views w = {c, st};

    policy_each_pod(c, check_pod, &w);
    policy_each_gang(c, check_gang, &w);
}

void rc_print(const struct rc_stats *st, FILE *f)
{
    const char *sep = " (";

    fprintf(f, "reasons checked %llu", (unsigned long long)st->checked);
    for (int k = 1; k < POLICY_REASON_KINDS; k++) {
        if (!st->by_kind[k])
            continue;
        fprintf(f, "%s%s %llu", sep, policy_reason_kind_name(k),
                (unsigned long long)st->by_kind[k]);
        sep = ", ";
    }
    fprintf(f, "%s, undecided %llu, violations %llu\n", *sep == ',' ? ")" : "",
            (unsigned long long)st->undecided, (unsigned long long)st->violations);
    if (st->violations)
        fprintf(f, "first violation: %s\n", st->first);
}
