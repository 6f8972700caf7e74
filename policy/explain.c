/*
 * explain.c - the figures a refusal names, read from the cluster as it stands (never from a
 * trial's placements: what a reason says must be true of the state it is shown with, and
 * test/reason_check.c checks that it is).
 */
#include <string.h>

#include "arith.h"
#include "internal.h"

/* Could p go on n were n empty (its own checks, and room on an empty node)? */
static bool fits_empty(const struct pnode *n, const struct ppod *p)
{
    struct pnode open = *n;
    enum pfit_why w;
    int32_t share;

    open.unschedulable = false; /* a cordon is lifted as easily as it is set: not "never" */
    if (!pfit_static(&open, p, &w) || p->cpu > n->cpu || p->memory > n->memory || n->pods < 1 ||
        p->gpus > n->gpus)
        return false;
    share = pfit_share_on(n, p);
    return share >= 0 && (share == 0 || n->gpus >= (p->devices ? p->devices : 1));
}

bool preason_fits_nowhere(const struct policy_cluster *c, const struct ppod *p,
                          const int32_t *order, size_t n)
{
    if (!order) {
        for (size_t i = 0; i < c->nodes.n; i++)
            if (c->nodes.items[i] && fits_empty(c->nodes.items[i], p))
                return false;
        return true;
    }
    for (size_t i = 0; i < n; i++)
        if (fits_empty(pnode_at(c, order[i]), p))
            return false;
    return true;
}

/* The most room on one device of n: a free device, else its emptiest group. */
static int32_t device_room(const struct pnode *n)
{
    int32_t most = pnode_free_devices(n) > 0 ? POLICY_GPU_MILLI : 0;

    for (size_t g = 0; g < n->ngroups; g++)
        if (POLICY_GPU_MILLI - n->groups[g].used > most)
            most = POLICY_GPU_MILLI - n->groups[g].used;
    return most;
}

/* What n has free: cpu, memory, whole GPUs (milli), and with shares the room on its groups. */
static void node_free(const struct pnode *n, bool shares, struct policy_resources *f)
{
    int64_t devices = pnode_free_devices(n);

    f->v[POLICY_RES_CPU] = parith_sub(n->cpu, n->cpu_used);
    f->v[POLICY_RES_MEMORY] = parith_sub(n->memory, n->memory_used);
    f->v[POLICY_RES_GPU] = parith_mul(devices > 0 ? devices : 0, POLICY_GPU_MILLI);
    for (size_t g = 0; shares && g < n->ngroups; g++)
        f->v[POLICY_RES_GPU] += POLICY_GPU_MILLI - n->groups[g].used;
}

static void keep_most(struct policy_resources *most, const struct policy_resources *f)
{
    for (int k = 0; k < POLICY_RES_COUNT; k++)
        if (f->v[k] > most->v[k])
            most->v[k] = f->v[k];
}

bool preason_nodes(const struct policy_cluster *c, const struct ppod *p, const int32_t *order,
                   size_t n, struct policy_reason *r)
{
    bool any = false;

    r->pod = p->name;
    preason_ask(&r->ask, p);
    r->nodes = (int32_t)n;
    memset(r->failing, 0, sizeof(r->failing));
    memset(&r->most_free, 0, sizeof(r->most_free));
    r->most_device_room = 0;
    for (size_t i = 0; i < n; i++) {
        const struct pnode *node = pnode_at(c, order[i]);
        struct policy_resources f;
        enum pfit_why w;
        struct pplace pl;
        int32_t room;

        if (!pfit_static(node, p, &w)) {
            r->failing[w]++;
            continue;
        }
        node_free(node, false, &f);
        keep_most(&r->most_free, &f);
        room = device_room(node);
        r->most_device_room = room > r->most_device_room ? room : r->most_device_room;
        if (pfit_resources(node, p, c->opts.strategy, &pl, &w))
            any = true;
        else
            r->failing[w]++;
    }
    return any;
}

/* Does p ask any part of a GPU device (a fraction, or gpu-memory)? */
static bool asks_share(const struct ppod *p)
{
    return p->share > 0 || p->gpu_memory_mib > 0;
}

/* The nodes of order some member of pool may use (its own checks pass): free summed, the most
 * on one, and what they offer empty. */
static void pool_room(const struct policy_cluster *c, struct ppod *const *pool, size_t npool,
                      const int32_t *order, size_t n, struct policy_reason *r,
                      struct policy_resources *capacity)
{
    bool shares = false;

    for (size_t i = 0; i < npool; i++)
        shares = shares || asks_share(pool[i]);
    memset(&r->free, 0, sizeof(r->free));
    memset(&r->most_free, 0, sizeof(r->most_free));
    memset(capacity, 0, sizeof(*capacity));
    for (size_t i = 0; i < n; i++) {
        const struct pnode *node = pnode_at(c, order[i]);
        struct policy_resources f;
        bool usable = false;

        for (size_t k = 0; k < npool && !usable; k++) {
            enum pfit_why w;

            if (k > 0 && pselector_equal(&pool[k]->sel, &pool[k - 1]->sel))
                continue; /* the same checks as the one before */
            usable = pfit_static(node, pool[k], &w);
        }
        if (!usable)
            continue;
        node_free(node, shares, &f);
        keep_most(&r->most_free, &f);
        for (int k = 0; k < POLICY_RES_COUNT; k++)
            r->free.v[k] = parith_add(r->free.v[k], f.v[k] > 0 ? f.v[k] : 0);
        capacity->v[POLICY_RES_CPU] = parith_add(capacity->v[POLICY_RES_CPU], node->cpu);
        capacity->v[POLICY_RES_MEMORY] = parith_add(capacity->v[POLICY_RES_MEMORY], node->memory);
        capacity->v[POLICY_RES_GPU] =
            parith_add(capacity->v[POLICY_RES_GPU], parith_mul(node->gpus, POLICY_GPU_MILLI));
    }
}

void preason_gang_room(const struct policy_cluster *c, const struct pgang *g,
                       struct ppod *const *pool, size_t npool, const int32_t *missing_sub,
                       int32_t total, const struct ppod *failed, int32_t sub,
                       const int32_t *order, size_t n, struct preason *why)
{
    static const int by_weight[] = {POLICY_RES_GPU, POLICY_RES_CPU, POLICY_RES_MEMORY};
    struct policy_reason *r = &why->r;
    struct policy_resources capacity;
    bool domain = ptopo_constrained(g) || c->topo_fence;

    preason_init(why, POLICY_REASON_GANG_ROOM, g->key);
    r->want = total;
    if (sub >= 0 && (size_t)sub < g->nsubs) {
        pgang_sub_label(g, sub, why->sub, sizeof(why->sub));
        r->have = missing_sub[sub];
    }
    pgang_least_need(c, g, (const struct ppod *const *)pool, npool, missing_sub, total, &r->need);
    if (failed && !preason_nodes(c, failed, order, n, r)) {
        /* It fits no node alone: that is the reason, whatever the others ask. */
        r->never = !domain && preason_fits_nowhere(c, failed, order, n);
        return;
    }
    memset(r->failing, 0, sizeof(r->failing));
    r->nodes = (int32_t)n;
    pool_room(c, pool, npool, order, n, r, &capacity);
    for (size_t k = 0; k < sizeof(by_weight) / sizeof(by_weight[0]) && r->resource < 0; k++)
        if (r->need.v[by_weight[k]] > r->free.v[by_weight[k]])
            r->resource = by_weight[k];
    for (int k = 0; k < POLICY_RES_COUNT && !domain; k++)
        r->never = r->never || r->need.v[k] > capacity.v[k];
}

/* ---- who holds what a gang waits for, when no eviction makes room ---------------- */

/* Is q on the path from queue name `leaf` to the top (itself or an ancestor)? */
static bool on_path(const struct policy_cluster *c, const char *leaf, const struct pqueue *q)
{
    const struct pqueue *at = pqueue_find(c, leaf);

    for (int d = 0; at && d < POLICY_MAX_QUEUE_DEPTH; d++, at = pqueue_parent(c, at))
        if (at == q)
            return true;
    return false;
}

static bool is_parent(const struct policy_cluster *c, const struct pqueue *q)
{
    for (size_t i = 0; i < c->queues.n; i++) {
        const struct pqueue *o = c->queues.items[i];

        if (o && o->parent && strcmp(o->parent, q->name) == 0)
            return true;
    }
    return false;
}

/* The resource a refusal is short of: what the nodes lacked, else the gang's main ask. */
static int short_resource(const struct policy_reason *r)
{
    if (r->resource >= 0)
        return r->resource;
    if (r->failing[POLICY_CHECK_GPU] || r->failing[POLICY_CHECK_GPU_SHARE] ||
        r->need.v[POLICY_RES_GPU] > 0 || r->ask.gpus > 0 || r->ask.gpu_share_milli > 0)
        return POLICY_RES_GPU;
    if (r->failing[POLICY_CHECK_MEMORY])
        return POLICY_RES_MEMORY;
    if (r->failing[POLICY_CHECK_CPU] || r->need.v[POLICY_RES_CPU] > 0)
        return POLICY_RES_CPU;
    return -1;
}

/* The least g asks of resource res for the reason's member (NO_NODE), or its missing members
 * together (GANG_ROOM); -1: not known. */
static int64_t least_asked(const struct policy_cluster *c, const struct pgang *g,
                           const struct policy_reason *r, int res)
{
    if (r->kind == POLICY_REASON_GANG_ROOM)
        return r->need.v[res];
    for (size_t i = 0; r->pod && i < g->nmembers; i++) {
        const struct ppod *p = ppod_at(c, g->members[i]);
        struct policy_resources a;

        if (p && strcmp(p->name, r->pod) == 0) {
            ppod_charge_resources(p, ppod_share_asked(c, p), &a);
            return a.v[res];
        }
    }
    return -1;
}

/* The holder over its fair share: is there a queue on g's own path, below where the two
 * paths part, that would end over its fair share with what g asks (victim rule 1)? The held
 * resource first, then the others. */
static void own_over_share(const struct policy_cluster *c, const struct pgang *g,
                           const struct pqueue *holder, struct policy_reason *r)
{
    const struct pqueue *leaf = pqueue_find(c, pgang_queue(c, g));

    for (int k = 0; k < POLICY_RES_COUNT; k++) {
        int res = k == 0 ? r->held_resource : k <= r->held_resource ? k - 1 : k;
        int64_t asked = least_asked(c, g, r, res);

        if (asked <= 0)
            continue;
        for (const struct pqueue *q = leaf; q && !on_path(c, holder->name, q);
             q = pqueue_parent(c, q)) {
            int64_t used = pqueue_used(q, res);

            if (parith_add(used, asked) > q->fair_share.v[res]) {
                r->own_queue = q->name;
                r->own_resource = res;
                r->own_used = used;
                r->own_fair = q->fair_share.v[res];
                r->own_asked = asked;
                return;
            }
        }
    }
}

/* The holder over its fair share, no own-share clause: is there a queue on g's
 * own path, below where the two paths part, that would end over its quota in the held
 * resource with what g asks, while the holder's excess over its quota is less than that ask?
 * Then victim rule 3 lets only that excess go, and it is not enough. */
static void own_over_quota(const struct policy_cluster *c, const struct pgang *g,
                           const struct pqueue *holder, struct policy_reason *r)
{
    const struct pqueue *leaf = pqueue_find(c, pgang_queue(c, g));
    int res = r->held_resource;
    int64_t asked = least_asked(c, g, r, res);

    if (asked <= 0 || r->holder_quota < 0 ||
        policy_reason_takeable(r) >= asked)
        return;
    for (const struct pqueue *q = leaf; q && !on_path(c, holder->name, q);
         q = pqueue_parent(c, q)) {
        int64_t used = pqueue_used(q, res), quota = q->quota.v[res];

        if (quota >= 0 && parith_add(used, asked) > quota) {
            r->quota_queue = q->name;
            r->quota_used = used;
            r->quota_of = quota;
            r->quota_asked = asked;
            return;
        }
    }
}

void preason_holders(struct policy_cluster *c, const struct pgang *g, struct preason *why)
{
    struct policy_reason *r = &why->r;
    const char *mine = pgang_queue(c, g);
    const struct pqueue *best = NULL;
    int res = short_resource(r);
    int64_t quotas = 0, capacity = 0;

    if (res < 0 || r->never ||
        (r->kind != POLICY_REASON_NO_NODE && r->kind != POLICY_REASON_GANG_ROOM))
        return;
    pfair_refresh(c);
    for (size_t i = 0; i < c->queues.n; i++) {
        const struct pqueue *q = c->queues.items[i];

        if (!q)
            continue;
        if (!pqueue_parent(c, q) && !q->implicit) /* the default queue nobody defined: none */
            quotas = quotas < 0 || q->quota.v[res] < 0 ? -1 : parith_add(quotas, q->quota.v[res]);
        if (on_path(c, mine, q) || is_parent(c, q) || pqueue_used(q, res) <= 0)
            continue;
        if (!best || pqueue_used(q, res) > pqueue_used(best, res))
            best = q;
    }
    if (!best)
        return;
    for (size_t i = 0; i < c->nodes.n; i++) {
        const struct pnode *n = c->nodes.items[i];

        if (n && !n->unschedulable)
            capacity = parith_add(capacity, res == POLICY_RES_CPU      ? n->cpu
                                            : res == POLICY_RES_MEMORY ? n->memory
                                                                       : n->gpus * POLICY_GPU_MILLI);
    }
    r->held_resource = res;
    r->holder = best->name;
    r->held = pqueue_used(best, res);
    r->holder_quota = best->quota.v[res];
    r->holder_fair = best->fair_share.v[res];
    r->quotas = quotas;
    r->capacity = capacity;
    if (r->held > r->holder_fair)
        own_over_share(c, g, best, r);
    if (r->held > r->holder_fair && !r->own_queue)
        own_over_quota(c, g, best, r);
}
