/*
 * fairshare.c - the fair share of every queue, for one resource: KAI's
 * resource division (pkg/scheduler/plugins/proportion/resource_division),
 * exact in integer units. The only place this arithmetic lives; docs/quota.md
 * has the rule in words and a worked example.
 *
 * Per level of the tree (the cluster's capacity at the top, a parent's fair
 * share below it):
 *   1. every queue gets its deserved part, min(quota, demand, limit);
 *   2. the rest goes to queues that still want more, highest priority first;
 *      within one priority by overQuotaWeight, water-filling: no queue above
 *      min(demand, limit), and what one cannot take is divided again.
 * With usage (fair over time, usage.c), step 2 within one priority is KAI's rounds of
 * calcShareWeights instead (over_time_fill); quota (step 1) is untouched.
 * Two places where muster differs from KAI on purpose: over-quota amounts are
 * not rounded down to whole units (every share is within one unit of the
 * real-valued water-filling, so equal weights end within one unit of each
 * other), and when the quotas of a level
 * add up to more than its capacity, the capacity is divided in proportion to
 * the quotas instead of promising each its whole quota.
 */
#include <stdlib.h>
#include <string.h>

#include "arith.h"
#include "internal.h"

/* What a queue can use at most: its demand, under its limit. */
static int64_t want_of(const struct policy_share_queue *q)
{
    int64_t d = q->demand > 0 ? q->demand : 0;

    return q->limit >= 0 && q->limit < d ? q->limit : d;
}

/*
 * Water-fill amount over queues 0..n) by weight, never above want[i]; fs[i]
 * is added to and what is left returned. Exact: the water level is found by
 * giving whole to the queues whose room is below their weighted share (in
 * order of room / weight), and the rest get amount x weight / total weight,
 * rounded down, the units left over one each by the largest remainder. Every
 * share is within one unit of the real-valued one.
 */
struct fill {
    int64_t weight, room;
    size_t i;
};

static int cmp_room_per_weight(const void *a_, const void *b_)
{
    const struct fill *a = a_, *b = b_;
    __int128 x = (__int128)a->room * b->weight, y = (__int128)b->room * a->weight;

    if (x != y)
        return x < y ? -1 : 1;
    return a->i < b->i ? -1 : a->i > b->i;
}

static int64_t water_fill(int64_t amount, const int64_t *weights, const int64_t *want, int64_t *fs,
                          size_t n)
{
    struct fill *f = malloc((n ? n : 1) * sizeof(*f));
    __int128 total = 0, *rem = NULL;
    size_t k = 0, first;

    if (!f)
        return amount;
    for (size_t i = 0; i < n; i++) {
        if (weights[i] > 0 && want[i] > fs[i]) {
            f[k] = (struct fill){weights[i], want[i] - fs[i], i};
            total += weights[i];
            k++;
        }
    }
    qsort(f, k, sizeof(*f), cmp_room_per_weight);
    /* Queues whose room is under their share at this level take all of it. */
    for (first = 0; first < k && amount > 0; first++) {
        if ((__int128)f[first].room * total > (__int128)amount * f[first].weight)
            break;
        fs[f[first].i] += f[first].room;
        amount -= f[first].room;
        total -= f[first].weight;
    }
    if (first < k && amount > 0 && total > 0 &&
        (rem = malloc((k - first) * sizeof(*rem)))) {
        int64_t given = 0;

        for (size_t j = first; j < k; j++) {
            __int128 share = (__int128)amount * f[j].weight;

            fs[f[j].i] += (int64_t)(share / total);
            given += (int64_t)(share / total);
            rem[j - first] = share % total;
        }
        amount -= given;
        /* Fewer units than queues are left: largest remainder first. */
        while (amount > 0) {
            size_t best = k;

            for (size_t j = first; j < k; j++)
                if (rem[j - first] >= 0 && (best == k || rem[j - first] > rem[best - first]))
                    best = j;
            if (best == k)
                break;
            fs[f[best].i]++;
            rem[best - first] = -1;
            amount--;
        }
    }
    free(rem);
    free(f);
    return amount;
}

/*
 * KAI's calcShareWeights (resource_division.go) for the queues still asking, in integers:
 *     shareWeight = max(0, w' + k (w' - U')),  w' = W / S,  S = their weights' sum
 * times the common factor S x 1000 x POLICY_USAGE_UNIT (only ratios matter):
 *     max(0, (1000 + K) W UNIT - K U S),  K = k x 1000, U = U' x UNIT,
 * then scaled down alike to at most 2^40, so water-filling's products stay in 128 bits.
 * Returns their sum.
 */
static __int128 share_weights(const int64_t *weight, const int64_t *usage, const bool *asking,
                              int64_t k_milli, int64_t *sw, size_t n)
{
    __int128 s = 0, top = 0, sum = 0, *raw = malloc((n ? n : 1) * sizeof(*raw));
    int shift = 0;

    if (!raw)
        return 0;
    for (size_t i = 0; i < n; i++)
        s += asking[i] ? weight[i] : 0;
    for (size_t i = 0; i < n; i++) {
        __int128 u = usage[i] < 0 ? 0 : usage[i] > 10 * POLICY_USAGE_UNIT ? 10 * POLICY_USAGE_UNIT
                                                                        : usage[i];

        raw[i] = 0;
        if (asking[i])
            raw[i] = (__int128)(1000 + k_milli) * weight[i] * POLICY_USAGE_UNIT - k_milli * u * s;
        if (raw[i] < 0)
            raw[i] = 0;
        top = raw[i] > top ? raw[i] : top;
    }
    while ((top >> shift) >= ((__int128)1 << 40))
        shift++;
    for (size_t i = 0; i < n; i++) {
        sw[i] = (int64_t)(raw[i] >> shift);
        sum += sw[i];
    }
    free(raw);
    return sum;
}

/*
 * KAI's divideUpToFairShare with usage, exact: in each round every queue still asking is
 * offered amount x shareWeight / sum; one whose room is within that takes its room, the
 * others take their part (rounded down; the units left stay in amount), and what was not
 * taken is offered again in the next round with the weights taken anew over the queues
 * still asking. A round where nobody's room is within its part is the last: the amount is
 * divided exactly by shareWeight (water_fill, largest remainder). What is left when every
 * queue still asking weighs 0 is returned (it goes to the next priority, as in KAI).
 */
static int64_t over_time_fill(int64_t amount, int64_t k_milli, const int64_t *weight,
                              const int64_t *usage, const int64_t *want, int64_t *fs, size_t n)
{
    int64_t *sw = malloc((n ? n : 1) * sizeof(*sw));
    bool *asking = malloc((n ? n : 1) * sizeof(*asking));

    if (!sw || !asking)
        goto out;
    for (size_t i = 0; i < n; i++)
        asking[i] = weight[i] > 0 && want[i] > fs[i];
    while (amount > 0) {
        __int128 sum = share_weights(weight, usage, asking, k_milli, sw, n);
        bool covered = false;
        int64_t given = 0;

        if (sum <= 0)
            break;
        for (size_t i = 0; i < n && !covered; i++)
            covered = asking[i] && (__int128)(want[i] - fs[i]) * sum <= (__int128)amount * sw[i];
        if (!covered) {
            amount = water_fill(amount, sw, want, fs, n);
            break;
        }
        for (size_t i = 0; i < n; i++) {
            __int128 part = (__int128)amount * sw[i] / sum;
            int64_t room = want[i] - fs[i];

            if (!asking[i] || sw[i] == 0)
                continue;
            if (room <= part) {
                fs[i] += room;
                given += room;
                asking[i] = false;
            } else {
                fs[i] += (int64_t)part;
                given += (int64_t)part;
            }
        }
        amount -= given;
    }
out:
    free(sw);
    free(asking);
    return amount;
}

/* Does any queue of ids[lo..hi) weigh usage? If none does, KAI's weights are the plain ones. */
static bool any_usage(const struct policy_share_queue *q, const int32_t *ids, size_t lo, size_t hi)
{
    for (size_t i = lo; i < hi; i++)
        if (q[ids[i]].usage > 0)
            return true;
    return false;
}

static int cmp_priority_desc(const void *a, const void *b, void *q_)
{
    const struct policy_share_queue *q = q_;
    int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;

    if (q[x].priority != q[y].priority)
        return q[x].priority > q[y].priority ? -1 : 1;
    return x - y;
}

/* Divide cap among the queues ids[0..n) of one level; scratch holds 4 x n. */
static void divide_level(int64_t cap, int64_t k_milli, struct policy_share_queue *q, int32_t *ids,
                         size_t n, int64_t *scratch)
{
    int64_t *want = scratch, *weight = scratch + n, *fs = scratch + 2 * n, *usage = scratch + 3 * n;
    __int128 deserved = 0;
    int64_t rest;

    if (cap < 0)
        cap = 0;
    for (size_t i = 0; i < n; i++) {
        const struct policy_share_queue *s = &q[ids[i]];

        want[i] = want_of(s);
        fs[i] = s->quota >= 0 && s->quota < want[i] ? s->quota : want[i];
        deserved += fs[i];
    }
    if (deserved > cap) {
        /* Over-promised quotas: the capacity in proportion to what each deserves. */
        for (size_t i = 0; i < n; i++) {
            want[i] = fs[i];
            weight[i] = fs[i];
            fs[i] = 0;
        }
        water_fill(cap, weight, want, fs, n);
        goto out;
    }
    rest = cap - (int64_t)deserved;
    qsort_r(ids, n, sizeof(*ids), cmp_priority_desc, q);
    for (size_t i = 0; i < n; i++) {
        want[i] = want_of(&q[ids[i]]);
        fs[i] = q[ids[i]].quota >= 0 && q[ids[i]].quota < want[i] ? q[ids[i]].quota : want[i];
        weight[i] = q[ids[i]].weight > POLICY_MAX_WEIGHT ? POLICY_MAX_WEIGHT : q[ids[i]].weight;
        usage[i] = q[ids[i]].usage;
    }
    for (size_t lo = 0; lo < n && rest > 0;) {
        size_t hi = lo;

        while (hi < n && q[ids[hi]].priority == q[ids[lo]].priority)
            hi++;
        if (k_milli > 0 && any_usage(q, ids, lo, hi))
            rest = over_time_fill(rest, k_milli, weight + lo, usage + lo, want + lo, fs + lo,
                                  hi - lo);
        else
            rest = water_fill(rest, weight + lo, want + lo, fs + lo, hi - lo);
        lo = hi;
    }
out:
    for (size_t i = 0; i < n; i++)
        q[ids[i]].fair_share = fs[i];
}

void policy_fair_share(int64_t capacity, struct policy_share_queue *q, size_t n)
{
    policy_fair_share_k(capacity, 0, q, n);
}

void policy_fair_share_k(int64_t capacity, int64_t k_milli, struct policy_share_queue *q,
                         size_t n)
{
    /* Children grouped by parent (slot 0 for the top, slot p + 1 for queue p). */
    size_t *start = calloc(n + 2, sizeof(*start));
    int32_t *ids = malloc((n ? n : 1) * sizeof(*ids));
    int32_t *parent_of = malloc((n ? n : 1) * sizeof(*parent_of));
    int64_t *scratch = malloc((n ? n : 1) * 4 * sizeof(*scratch));
    int64_t *children_demand = calloc(n ? n : 1, sizeof(*children_demand));

    for (size_t i = 0; i < n; i++)
        q[i].fair_share = 0;
    if (!start || !ids || !parent_of || !scratch || !children_demand)
        goto out;
    for (size_t i = 0; i < n; i++) {
        bool child = q[i].parent >= 0 && (size_t)q[i].parent < i;

        /* An unknown or later parent: taken as the top. */
        parent_of[i] = child ? q[i].parent : -1;
        start[(size_t)(parent_of[i] + 1) + 1]++;
        if (child)
            children_demand[q[i].parent] =
                parith_add(children_demand[q[i].parent], q[i].demand > 0 ? q[i].demand : 0);
    }
    for (size_t p = 1; p <= n + 1; p++)
        start[p] += start[p - 1];
    {
        size_t *fill = malloc((n + 1) * sizeof(*fill));

        if (!fill)
            goto out;
        memcpy(fill, start, (n + 1) * sizeof(*fill));
        for (size_t i = 0; i < n; i++)
            ids[fill[parent_of[i] + 1]++] = (int32_t)i;
        free(fill);
    }
    /* Level by level: the top, then the children of each queue in array order
     * (parents come first, so a parent's share is known before its children's). */
    for (int64_t parent = -1; parent < (int64_t)n; parent++) {
        size_t lo = start[parent + 1], k = start[parent + 2] - lo;
        int64_t cap = capacity;

        if (k == 0)
            continue;
        if (parent >= 0) {
            /* A parent's own gangs are served from its share before its children. */
            int64_t own = parith_sub(q[parent].demand, children_demand[parent]);

            cap = q[parent].fair_share - (own > 0 ? own : 0);
        }
        divide_level(cap, k_milli < 0 ? 0 : k_milli, q, ids + lo, k, scratch);
    }
out:
    free(start);
    free(ids);
    free(parent_of);
    free(scratch);
    free(children_demand);
}

/* ---- the cluster's inputs: capacity and demand ---------------------------- */

/* Could this member run on some node of an empty cluster? */
static bool member_could_run(const struct policy_cluster *c, const struct ppod *p)
{
    for (size_t i = 0; i < c->nodes.n; i++) {
        const struct pnode *n = c->nodes.items[i];
        enum pfit_why why;
        int32_t share;

        if (!n || !pfit_static(n, p, &why) || p->cpu > n->cpu || p->memory > n->memory ||
            n->pods < 1 || p->gpus > n->gpus)
            continue;
        share = pfit_share_on(n, p);
        if (share < 0 || (share > 0 && n->gpus < p->devices))
            continue;
        return true;
    }
    return false;
}

/*
 * Is the gang demand: every member's ask valid and each able to run on some
 * node of an empty cluster, and its minimum within its queues' limits? A gang
 * that can never run is nobody's rival. Cached until a node's offer changes.
 */
bool pgang_could_run(struct policy_cluster *c, struct pgang *g)
{
    const struct ppod *prev = NULL;
    struct policy_resources need = {{0}};
    const struct pqueue *q;
    bool ok = true;

    if (g->could_run_epoch == c->nodes_epoch + 1)
        return g->could_run;
    for (size_t i = 0; ok && i < g->nmembers; i++) {
        const struct ppod *p = ppod_at(c, g->members[i]);
        struct policy_resources r;

        if (!p || p->phase == POLICY_POD_EVICTING)
            continue;
        ok = ppod_ask_valid(p, NULL, 0) &&
             ((prev && ppod_same_shape(prev, p)) || member_could_run(c, p));
        prev = p;
        ppod_charge_resources(p, ppod_share_asked(c, p), &r);
        for (int k = 0; k < POLICY_RES_COUNT && i < (size_t)pgang_min(c, g); k++)
            need.v[k] = parith_add(need.v[k], r.v[k]);
    }
    q = pqueue_find(c, pgang_queue(c, g));
    for (int depth = 0; ok && q && depth < POLICY_MAX_QUEUE_DEPTH; depth++) {
        for (int r = 0; r < POLICY_RES_COUNT; r++)
            ok = ok && (q->limit.v[r] < 0 || need.v[r] <= q->limit.v[r]);
        q = pqueue_parent(c, q);
    }
    g->could_run = ok;
    g->could_run_epoch = c->nodes_epoch + 1;
    return g->could_run;
}

/* The cluster's allocatable; what other schedulers' pods hold comes off in add_demand. */
static void capacity_of(const struct policy_cluster *c, struct policy_resources *cap)
{
    memset(cap, 0, sizeof(*cap));
    for (size_t i = 0; i < c->nodes.n; i++) {
        const struct pnode *n = c->nodes.items[i];

        if (!n || n->unschedulable)
            continue;
        /* Capped offers; a sum past int64 saturates (arith.h). */
        cap->v[POLICY_RES_CPU] = parith_add(cap->v[POLICY_RES_CPU], n->cpu);
        cap->v[POLICY_RES_MEMORY] = parith_add(cap->v[POLICY_RES_MEMORY], n->memory);
        cap->v[POLICY_RES_GPU] =
            parith_add(cap->v[POLICY_RES_GPU], parith_mul(n->gpus, POLICY_GPU_MILLI));
    }
}

/* A queue's place in the tree, parents first. */
static int32_t depth_of(const struct policy_cluster *c, const struct pqueue *q)
{
    int32_t d = 0;

    for (q = pqueue_parent(c, q); q && d < POLICY_MAX_QUEUE_DEPTH; q = pqueue_parent(c, q))
        d++;
    return d;
}

struct qorder {
    struct pqueue *q;
    int32_t depth;
};

static int cmp_depth(const void *a, const void *b)
{
    const struct qorder *x = a, *y = b;

    if (x->depth != y->depth)
        return x->depth - y->depth;
    return x->q->arrival < y->q->arrival ? -1 : x->q->arrival > y->q->arrival;
}

/* One pass over the pods: each managed pod's part in its queue's demand (rolled up
 * later), and what other schedulers' pods hold off the capacity. */
static void add_demand(struct policy_cluster *c, struct policy_resources *cap)
{
    bool penalties = pusage_on(c) && c->opts.fairness.entry_penalty_ms > 0;

    for (size_t i = 0; i < c->pods.n; i++) {
        struct ppod *p = c->pods.items[i];
        struct pgang *g;
        struct pqueue *q;
        struct policy_resources r;

        if (!p || p->phase == POLICY_POD_EVICTING)
            continue;
        if (!p->managed) {
            if (p->place.node < 0)
                continue;
            ppod_charge_resources(p, p->place.share, &r);
            for (int k = 0; k < POLICY_RES_COUNT; k++)
                cap->v[k] = parith_sub(cap->v[k], r.v[k]);
            continue;
        }
        if (p->phase == POLICY_POD_PENDING && (!(g = ppod_gang(c, p)) || !pgang_could_run(c, g)))
            continue;
        if (!(q = ppod_queue(c, p)))
            continue;
        ppod_charge_resources(p, p->place.node >= 0 ? p->place.share : ppod_share_asked(c, p),
                              &r);
        for (int k = 0; k < POLICY_RES_COUNT; k++)
            q->demand.v[k] = parith_add(q->demand.v[k], r.v[k]);
        if (penalties && p->phase == POLICY_POD_BOUND)
            pusage_penalize(c, ppod_gang(c, p), &r, q);
    }
}

void pfair_refresh(struct policy_cluster *c)
{
    size_t n = 0;
    struct qorder *order = malloc((c->queues.n ? c->queues.n : 1) * sizeof(*order));
    struct policy_share_queue *sq = malloc((c->queues.n ? c->queues.n : 1) * sizeof(*sq));
    struct policy_resources cap;

    if (!c->fair_dirty)
        goto out;
    if (!order || !sq)
        goto out;
    for (size_t i = 0; i < c->queues.n; i++) {
        struct pqueue *q = c->queues.items[i];

        if (!q)
            continue;
        memset(&q->demand, 0, sizeof(q->demand));
        memset(q->penalty, 0, sizeof(q->penalty));
        order[n++] = (struct qorder){q, depth_of(c, q)};
    }
    qsort(order, n, sizeof(*order), cmp_depth);
    capacity_of(c, &cap);
    add_demand(c, &cap);
    c->capacity = cap;
    /* Roll demand (and entry penalties) up, deepest first. */
    for (size_t i = n; i-- > 0;) {
        struct pqueue *parent = pqueue_parent(c, order[i].q);

        for (int k = 0; parent && order[i].depth > 0 && k < POLICY_RES_COUNT; k++) {
            parent->demand.v[k] = parith_add(parent->demand.v[k], order[i].q->demand.v[k]);
            parent->penalty[k] += order[i].q->penalty[k];
        }
    }
    for (int r = 0; r < POLICY_RES_COUNT; r++) {
        for (size_t i = 0; i < n; i++) {
            const struct pqueue *q = order[i].q, *parent = pqueue_parent(c, q);
            int32_t pi = -1;

            for (size_t k = 0; parent && order[i].depth > 0 && k < i && pi < 0; k++)
                if (order[k].q == parent)
                    pi = (int32_t)k;
            sq[i] = (struct policy_share_queue){.parent = pi,
                                                .priority = q->priority,
                                                .quota = q->quota.v[r],
                                                .limit = q->limit.v[r],
                                                .weight = q->weight.v[r],
                                                .demand = q->demand.v[r],
                                                .usage = pusage_weighed(c, q, r)};
        }
        policy_fair_share_k(cap.v[r], pusage_on(c) ? c->opts.fairness.k_milli : 0, sq, n);
        for (size_t i = 0; i < n; i++)
            order[i].q->fair_share.v[r] = order[i].q->fair_share_plain.v[r] = sq[i].fair_share;
        if (!pusage_on(c) || c->opts.fairness.k_milli == 0)
            continue;
        /* What it would be if usage did not count: for `muster why` and the Queue's status. */
        policy_fair_share(cap.v[r], sq, n);
        for (size_t i = 0; i < n; i++)
            order[i].q->fair_share_plain.v[r] = sq[i].fair_share;
    }
    c->fair_dirty = false;
out:
    free(order);
    free(sq);
}
