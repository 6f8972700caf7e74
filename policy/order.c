/*
 * order.c - who goes first, and never idle.
 *
 * Waiting gangs are ordered as KAI orders them (plugins/proportion/queue_order):
 * between two queues, at the level of the tree where their paths part —
 * queues not over their fair share first, then queues that stay within quota
 * with their next gang, then queue priority, then no use of a resource the
 * queue has no share of, then the lowest dominant share (used with its next
 * gang / what the queue may hold), then without it, then the smaller
 * allocatable share, then the older queue; inside one queue by gang priority,
 * then arrival. A queue's next gang is the first waiting gang in it or below
 * it (KAI compares queues with their next job): were each gang compared with
 * its own ask, a small gang of queue A could go before a big one of queue B,
 * that one before an older big one of A, and that one before the small one —
 * three gangs each turned away for the next, and the room idle.
 * Every gang's minimum comes before any member beyond a minimum, and those
 * extras take turns: a gang's k-th extra after every other gang's (k-1)-th.
 *
 * muster answers kube-scheduler one pod at a time, so the order is kept by a
 * check rather than by a cycle: a placement is turned away only when a gang
 * ahead of it waits, could run without it, and could not with it (a
 * sequential dry run of the gangs ahead, in order, once without and once with
 * the placement). Anything nobody ahead can use is given out: work conserving.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

#define ORDER_MAX_AHEAD 16 /* gangs ahead dry-run per placement */

/* ---- comparing queues, KAI's way --------------------------------------------- */

static bool over_fair_share(const struct pqueue *q)
{
    for (int r = 0; r < POLICY_RES_COUNT; r++)
        if (q->fair_share.v[r] >= pqueue_used(q, r))
            return false;
    return true;
}

static bool within_quota_with(const struct pqueue *q, const struct policy_resources *need)
{
    for (int r = 0; r < POLICY_RES_COUNT; r++)
        if (q->quota.v[r] >= 0 && pqueue_used(q, r) + need->v[r] > q->quota.v[r])
            return false;
    return true;
}

static bool uses_without_share(const struct pqueue *q, const struct policy_resources *need)
{
    for (int r = 0; r < POLICY_RES_COUNT; r++)
        if (pqueue_allocatable(q, r) == 0 && pqueue_used(q, r) + need->v[r] > 0) /* -1: no cap */
            return true;
    return false;
}

static double dominant_share(const struct pqueue *q, const struct policy_resources *need)
{
    double most = 0;

    for (int r = 0; r < POLICY_RES_COUNT; r++) {
        int64_t a = pqueue_allocatable(q, r), u = pqueue_used(q, r) + (need ? need->v[r] : 0);
        double s = a < 0 ? 0 : a > 0 ? (double)u / (double)a : (double)u * 1e9;

        most = s > most ? s : most;
    }
    return most;
}

/* a's allocatable share is smaller than b's in one resource and not larger in any (an
 * unlimited one, -1, is larger than any). */
static bool smaller_share(const struct pqueue *a, const struct pqueue *b)
{
    bool less = false;

    for (int r = 0; r < POLICY_RES_COUNT; r++) {
        int64_t x = pqueue_allocatable(a, r), y = pqueue_allocatable(b, r);

        x = x < 0 ? INT64_MAX : x;
        y = y < 0 ? INT64_MAX : y;
        if (x > y)
            return false;
        less |= x < y;
    }
    return less;
}

#define FIRST_IF(cond_a, cond_b)                                                                   \
    do {                                                                                           \
        bool ca_ = (cond_a), cb_ = (cond_b);                                                       \
        if (ca_ != cb_)                                                                            \
            return ca_ ? -1 : 1;                                                                   \
    } while (0)

static int cmp_queues(const struct pqueue *a, const struct policy_resources *na,
                      const struct pqueue *b, const struct policy_resources *nb)
{
    double da, db;

    FIRST_IF(!over_fair_share(a), !over_fair_share(b));
    FIRST_IF(within_quota_with(a, na), within_quota_with(b, nb));
    if (a->priority != b->priority)
        return a->priority > b->priority ? -1 : 1;
    FIRST_IF(!uses_without_share(a, na), !uses_without_share(b, nb));
    da = dominant_share(a, na);
    db = dominant_share(b, nb);
    if (da != db)
        return da < db ? -1 : 1;
    da = dominant_share(a, NULL);
    db = dominant_share(b, NULL);
    if (da != db)
        return da < db ? -1 : 1;
    FIRST_IF(smaller_share(a, b), smaller_share(b, a));
    return a->arrival < b->arrival ? -1 : a->arrival > b->arrival;
}

/* The two gangs' queues where their paths part, each with its next gang (porder_refresh). */
static int cmp_queue_standing(struct policy_cluster *c, const struct pgang *a,
                              const struct pgang *b)
{
    const char *qa = pgang_queue(c, a), *qb = pgang_queue(c, b);
    const struct pqueue *la, *lb;

    if (qa == qb || strcmp(qa, qb) == 0) /* one queue: nothing between them to compare */
        return 0;
    pqueue_leveled(c, qa, qb, &la, &lb);
    if (la && lb && la != lb)
        return cmp_queues(la, &la->next_need, lb, &lb->next_need);
    return 0;
}

static int cmp_in_queue(struct policy_cluster *c, const struct pgang *a, const struct pgang *b)
{
    if (pgang_priority(c, a) != pgang_priority(c, b))
        return pgang_priority(c, a) > pgang_priority(c, b) ? -1 : 1;
    return a->arrival < b->arrival ? -1 : a->arrival > b->arrival;
}

int porder_gangs(struct policy_cluster *c, struct pgang *a, struct pgang *b)
{
    int r = cmp_queue_standing(c, a, b);

    return r ? r : cmp_in_queue(c, a, b);
}

/* ---- each queue's next gang ---------------------------------------------------- */

/* A waiting gang that offers its minimum (units_of's test). */
static bool waits_for_minimum(struct policy_cluster *c, const struct pgang *g)
{
    bool no_minimum = !g->singleton && pgang_declared(g) && pgang_min(c, g) == 0;

    return pgang_waits(c, g) && !no_minimum && pgang_could_run(c, (struct pgang *)g);
}

/* One queue's contest for its next gang: the gang, and the child queue it came from
 * (-1: the queue's own gang). */
struct next_gang {
    struct pgang *g;
    int32_t via;
    int32_t depth;
};

static int32_t queue_depth(const struct policy_cluster *c, const struct pqueue *q)
{
    int32_t d = 0;

    while ((q = pqueue_parent(c, q)) && d < POLICY_MAX_QUEUE_DEPTH)
        d++;
    return d;
}

/* Does the subtree head of queue id `child` go before parent p's current next gang? */
static bool goes_first(struct policy_cluster *c, const struct next_gang *next, int32_t child,
                       const struct next_gang *p)
{
    const struct pqueue *a, *b;

    if (!p->g)
        return true;
    if (p->via < 0) /* the parent's own gang: the two meet inside one queue */
        return cmp_in_queue(c, next[child].g, p->g) < 0;
    a = pqueue_at(c, child);
    b = pqueue_at(c, p->via);
    return cmp_queues(a, &a->next_need, b, &b->next_need) < 0;
}

/*
 * Each queue's next gang, bottom up: a leaf's is its first waiting gang (gang priority, then
 * arrival); a parent's is the first of its own gang and its children's next gangs, the
 * children compared as queues with theirs. Out of memory, every queue is compared without a
 * gang: still an order.
 */
void porder_refresh(struct policy_cluster *c)
{
    size_t nq = c->queues.n;
    struct next_gang *next = calloc(nq ? nq : 1, sizeof(*next));
    int32_t deepest = 0;

    for (size_t i = 0; i < nq; i++) {
        struct pqueue *q = pqueue_at(c, (int32_t)i);

        if (!q)
            continue;
        memset(&q->next_need, 0, sizeof(q->next_need));
        if (next) {
            next[i] = (struct next_gang){.via = -1, .depth = queue_depth(c, q)};
            deepest = next[i].depth > deepest ? next[i].depth : deepest;
        }
    }
    if (!next)
        return;
    for (size_t i = 0; i < c->waiting.n; i++) {
        struct pgang *g = pgang_at(c, c->waiting.v[i]);
        int32_t q = g ? pidx_get(&c->queue_ix, pgang_queue(c, g)) : -1;

        if (q >= 0 && (size_t)q < nq && waits_for_minimum(c, g) &&
            (!next[q].g || cmp_in_queue(c, g, next[q].g) < 0))
            next[q].g = g;
    }
    /* Deepest first: a queue's next gang is settled before it meets its siblings'. */
    for (int32_t d = deepest; d >= 0; d--) {
        for (size_t i = 0; i < nq; i++) {
            struct pqueue *q = pqueue_at(c, (int32_t)i), *parent;
            int32_t pid;

            if (!q || next[i].depth != d || !next[i].g)
                continue;
            pgang_minimum_need(c, next[i].g, &q->next_need);
            if (!(parent = pqueue_parent(c, q)) || (pid = q->parent_id) < 0 ||
                (size_t)pid >= nq)
                continue;
            if (goes_first(c, next, (int32_t)i, &next[pid])) {
                next[pid].g = next[i].g;
                next[pid].via = (int32_t)i;
            }
        }
    }
    free(next);
}

/* ---- units: a gang's minimum, or its next member beyond it ---------------------- */

struct unit {
    struct pgang *g;
    bool extra;         /* one member beyond its minimum; else the minimum */
    int32_t rank;       /* extras: how many of its gang's extras have a place before it */
};

static int cmp_units(const void *x_, const void *y_, void *c_)
{
    const struct unit *x = x_, *y = y_;
    struct policy_cluster *c = c_;
    int r;

    if (x->extra != y->extra)
        return x->extra ? 1 : -1;
    if (x->extra && x->rank != y->rank)
        return x->rank < y->rank ? -1 : 1;
    r = cmp_queue_standing(c, x->g, y->g);
    return r ? r : cmp_in_queue(c, x->g, y->g);
}

/* The first pending managed member of an admitted gang, and its rank. */
static struct ppod *next_extra(const struct policy_cluster *c, const struct pgang *g,
                               int32_t *rank)
{
    struct ppod *best = NULL;

    for (size_t i = 0; i < g->nmembers; i++) {
        struct ppod *p = ppod_at(c, g->members[i]);

        if (p && p->managed && p->phase == POLICY_POD_PENDING && ppod_ask_valid(p, NULL, 0) &&
            (!best || p->arrival < best->arrival))
            best = p;
    }
    *rank = pgang_tally(c, g, PGANG_PLACED, NULL) - pgang_min(c, g);
    return best;
}

/* Pending members beyond what its minimum still needs. */
static int32_t pending_extras(const struct policy_cluster *c, const struct pgang *g)
{
    int32_t members, bound, holding, missing;

    pgang_counts(c, g, &members, &bound, &holding, NULL);
    missing = g->admitted ? 0 : pgang_min(c, g) - bound - holding;
    return members - bound - holding - (missing > 0 ? missing : 0);
}

/*
 * The units a waiting gang offers, ahead of `self`: its minimum (if it waits
 * for one) and then its extras, one per rank, up to self's rank when self is
 * an extra. A gang that offers none leaves the waiting set.
 */
static size_t units_of(struct policy_cluster *c, struct pgang *g, const struct unit *self,
                       struct unit *out, size_t max)
{
    /* A declared minimum of nothing (Volcano's minMember 0) has only extras. */
    bool no_minimum = !g->singleton && pgang_declared(g) && pgang_min(c, g) == 0;
    bool minimum = pgang_waits(c, g) && !no_minimum;
    int32_t rank, extras = 0;
    struct ppod *x = NULL;
    size_t n = 0;

    if (minimum && !pgang_could_run(c, g))
        return 0;
    if (minimum) {
        out[n] = (struct unit){.g = g};
        if (cmp_units(&out[n], self, c) < 0 && n < max)
            n++;
        rank = 0;
        extras = pending_extras(c, g);
    } else if ((g->admitted || no_minimum) && (x = next_extra(c, g, &rank))) {
        extras = pending_extras(c, g);
    } else {
        pgang_unmark_waiting(c, g);
        return 0;
    }
    for (int32_t k = 0; self->extra && k < extras && n < max; k++, rank++) {
        struct unit u = {.g = g, .extra = true, .rank = rank};

        if (cmp_units(&u, self, c) >= 0)
            break;
        out[n++] = u;
    }
    return n;
}

void porder_keep_first(void *best, size_t *n, size_t max, size_t size, const void *x,
                       int (*cmp)(const void *, const void *, void *), void *ctx)
{
    char *b = best;
    size_t slot, i;

    if (max == 0)
        return;
    if (*n == max && cmp(x, b + (max - 1) * size, ctx) >= 0)
        return;
    slot = *n < max ? (*n)++ : max - 1; /* full: the last one goes */
    for (i = slot; i > 0 && cmp(x, b + (i - 1) * size, ctx) < 0; i--)
        ;
    memmove(b + (i + 1) * size, b + i * size, (slot - i) * size);
    memcpy(b + i * size, x, size);
}

/* The units ahead of `self`, in order, at most ORDER_MAX_AHEAD: the first of a selection, not
 * a sort of every waiting gang's (a backlog of thousands is asked about on every filter). */
static size_t units_ahead(struct policy_cluster *c, const struct unit *self,
                          const struct pgang *skip, struct unit *out)
{
    struct unit mine[ORDER_MAX_AHEAD];
    size_t n = 0;

    for (size_t i = c->waiting.n; i-- > 0;) {
        struct pgang *g = pgang_at(c, c->waiting.v[i]);
        size_t k;

        if (!g) {
            c->waiting.v[i] = c->waiting.v[--c->waiting.n];
            continue;
        }
        if (g == self->g || g == skip) /* skip's placement is charged: not a unit now */
            continue;
        k = units_of(c, g, self, mine, ORDER_MAX_AHEAD);
        for (size_t j = 0; j < k; j++)
            porder_keep_first(out, &n, ORDER_MAX_AHEAD, sizeof(*out), &mine[j], cmp_units, c);
    }
    return n;
}

/* Dry-run the units in order, each on what the ones before left; ok[i] = it fits. */
static void dry_run(struct policy_cluster *c, const struct unit *units, size_t n, bool *ok,
                    struct pstatement *st)
{
    enum preason_kind kind;

    for (size_t i = 0; i < n; i++) {
        struct pgang *g = units[i].g;
        struct ppod *x;
        int32_t rank;

        if (!units[i].extra) {
            ok[i] = pplan_gang_try(c, g, NULL, st, &kind, NULL) == 0;
            continue;
        }
        /* An extra runs only once its gang's minimum has a place (here or for real). */
        ok[i] = (g->admitted || pgang_satisfied(c, g, PGANG_PLACED)) &&
                (x = next_extra(c, g, &rank)) &&
                pplan_one_try(c, x, NULL, 0, st, NULL) == 0;
    }
}

/* Does a unit the dry run placed (a) sit on a node one of lifted's pods held? */
static bool touches(const struct pstatement *a, const struct pstatement *lifted)
{
    for (size_t i = 0; i < a->n; i++)
        for (size_t k = 0; k < lifted->n; k++)
            if (a->steps[i].pod->place.node == lifted->steps[k].place.node)
                return true;
    return false;
}

/* Take the pods u_placed placed off again, into lifted (rolled back to put them back). */
static bool lift_placed(struct policy_cluster *c, const struct pstatement *u_placed,
                        struct pstatement *lifted)
{
    for (size_t i = 0; i < u_placed->n; i++) {
        struct ppod *p = u_placed->steps[i].pod;

        if (u_placed->steps[i].placed &&
            pstatement_lift(c, lifted, p, POLICY_POD_PENDING) != POLICY_OK) {
            pstatement_discard(c, lifted);
            return false;
        }
    }
    return true;
}

/*
 * Is the unit ahead one u (or its member x) would evict the moment it ran? Then it is not
 * ahead of u: the order agrees with preemption (a higher-priority gang's extra is not queued
 * behind a lower-priority gang's minimum of its own queue) and with reclaim, and neither
 * waits for the other while the room stays idle (stable.c turns the other way round away).
 * Asked with u's placement lifted and the unit placed alone.
 */
static bool u_would_evict(struct policy_cluster *c, struct pgang *u, struct ppod *x,
                          const struct unit *ahead, const struct pstatement *u_placed,
                          int64_t now)
{
    enum policy_eviction_kind kind;
    enum preason_kind rk;
    struct pstatement lifted = {0}, sim = {0};
    struct ppod *y;
    int32_t rank;
    bool placed, takes = false;

    if (!lift_placed(c, u_placed, &lifted))
        return false;
    if (!ahead->extra)
        placed = pplan_gang_try(c, ahead->g, NULL, &sim, &rk, NULL) == 0;
    else
        placed = (y = next_extra(c, ahead->g, &rank)) &&
                 pplan_one_try(c, y, NULL, 0, &sim, NULL) == 0;
    /* The cheap part of the rule first, with the unit placed (its queue's usage counts). */
    if (placed && preclaim_could_take(c, u, ahead->g, &kind))
        takes = preclaim_would_take(c, u, x, ahead->g, kind, now);
    pstatement_discard(c, &sim);
    pstatement_discard(c, &lifted);
    return takes;
}

/* Was a turned away last for u, or for a gang that waits, through others, for u (stable.c:
 * an extra that goes once the units ahead of it have gone, u among them)? Then a waits for u
 * and is not ahead of it: the two would wait for each other. */
static bool yields_to_u(const struct policy_cluster *c, const struct pgang *a,
                        const struct pgang *u)
{
    return a->yields_to >= 0 &&
           (a->yields_to == u->id || pgang_waits_on(c, pgang_at(c, a->yields_to), u) == 1);
}

/* The units ahead of u (x: its member beyond the minimum), skip left out, the order fresh. */
static size_t order_ahead(struct policy_cluster *c, struct pgang *u, struct ppod *x,
                          const struct pgang *skip, struct unit *ahead)
{
    struct unit self = {.g = u, .extra = x != NULL};

    pfair_refresh(c);
    porder_refresh(c);
    if (x)
        next_extra(c, u, &self.rank);
    return units_ahead(c, &self, skip, ahead);
}

struct pgang *porder_blocker(struct policy_cluster *c, struct pgang *u, struct ppod *x,
                             struct pstatement *u_placed, int64_t now)
{
    struct unit ahead[ORDER_MAX_AHEAD] = {{0}};
    bool before[ORDER_MAX_AHEAD] = {0}, after[ORDER_MAX_AHEAD] = {0}, any = false;
    struct pstatement sim = {0}, lifted = {0};
    struct pgang *blocker = NULL;
    size_t n;

    pgang_waiting_refill(c);
    if (c->waiting.n == 0 || (c->waiting.n == 1 && c->waiting.v[0] == u->id))
        return NULL;
    /* Order and dry runs see the cluster without u's placement. */
    if (!lift_placed(c, u_placed, &lifted))
        return NULL;
    n = order_ahead(c, u, x, NULL, ahead);
    dry_run(c, ahead, n, before, &sim);
    for (size_t i = 0; i < n; i++)
        any |= before[i];
    /* u's placement can only hurt a unit that ran, on a node u uses. */
    any = any && touches(&sim, &lifted);
    pstatement_rollback(c, &sim, 0);
    pstatement_discard(c, &lifted);
    if (any) {
        dry_run(c, ahead, n, after, &sim);
        pstatement_rollback(c, &sim, 0);
        for (size_t i = 0; i < n && !blocker; i++)
            if (before[i] && !after[i] && !yields_to_u(c, ahead[i].g, u) &&
                !u_would_evict(c, u, x, &ahead[i], u_placed, now))
                blocker = ahead[i].g;
    }
    pstatement_discard(c, &sim);
    return blocker;
}

void porder_place_ahead(struct policy_cluster *c, struct pgang *g, struct ppod *x,
                        const struct pgang *skip, struct pstatement *st)
{
    struct unit ahead[ORDER_MAX_AHEAD] = {{0}};
    bool ok[ORDER_MAX_AHEAD];
    size_t n;

    pgang_waiting_refill(c);
    n = order_ahead(c, g, x, skip, ahead);
    dry_run(c, ahead, n, ok, st);
}

/* ---- extras of one gang, among its subgroups -------------------------------- */

/* KAI's subgrouporder, with placed counts: < 0 when subgroup a goes first. */
static int cmp_subgroups(const struct pgang *g, const int32_t *placed, int32_t a, int32_t b)
{
    int32_t ma = g->subs[a].min, mb = g->subs[b].min;
    bool below_a = placed[a] < ma, below_b = placed[b] < mb;
    int64_t l, r;

    if (below_a != below_b)
        return below_a ? -1 : 1;
    if (!below_a && (ma == 0) != (mb == 0))
        return ma == 0 ? 1 : -1; /* optional subgroups last */
    if (!below_a && ma > 0 && mb > 0) {
        l = (int64_t)placed[a] * mb; /* placed[a] / ma against placed[b] / mb */
        r = (int64_t)placed[b] * ma;
        if (l != r)
            return l < r ? -1 : 1;
    }
    return a < b ? -1 : a > b; /* the order declared */
}

/* The first pending member of the subgroup that goes first among those with one, if it is
 * ahead of x's subgroup; placed counts without x. */
static struct ppod *subgroup_ahead(const struct policy_cluster *c, const struct pgang *g,
                                   const struct ppod *x, int32_t *placed)
{
    struct ppod *best = NULL;

    pgang_tally(c, g, PGANG_PLACED, placed);
    placed[x->sub]--; /* x is charged: the order is as it was before x */
    for (size_t i = 0; i < g->nmembers; i++) {
        struct ppod *p = ppod_at(c, g->members[i]);

        if (!p || p == x || p->sub < 0 || (size_t)p->sub >= g->nsubs || !p->managed ||
            p->phase != POLICY_POD_PENDING || !ppod_ask_valid(p, NULL, 0))
            continue;
        if (!best || cmp_subgroups(g, placed, p->sub, best->sub) < 0 ||
            (p->sub == best->sub && p->arrival < best->arrival))
            best = p;
    }
    return best && cmp_subgroups(g, placed, best->sub, x->sub) < 0 ? best : NULL;
}

struct ppod *porder_subgroup_first(struct policy_cluster *c, struct pgang *g, struct ppod *x,
                                   struct pstatement *x_placed)
{
    int32_t stack[16], *placed;
    struct pstatement sim = {0}, lifted = {0};
    struct ppod *y;
    bool with, without = false;

    if (g->singleton || g->nsubs < 2 || x->sub < 0 || (size_t)x->sub >= g->nsubs ||
        x_placed->n != 1 || x_placed->steps[0].pod != x)
        return NULL;
    placed = g->nsubs <= 16 ? stack : malloc(g->nsubs * sizeof(*placed));
    if (!placed)
        return NULL;
    y = subgroup_ahead(c, g, x, placed);
    if (placed != stack)
        free(placed);
    if (!y)
        return NULL;
    /* Work conserving: both fit, or y fits nowhere even without x, and x goes. */
    with = pplan_one_try(c, y, NULL, 0, &sim, NULL) == 0;
    pstatement_rollback(c, &sim, 0);
    if (!with && lift_placed(c, x_placed, &lifted)) {
        without = pplan_one_try(c, y, NULL, 0, &sim, NULL) == 0;
        pstatement_rollback(c, &sim, 0);
        pstatement_discard(c, &lifted);
    }
    pstatement_discard(c, &sim);
    return without ? y : NULL;
}
