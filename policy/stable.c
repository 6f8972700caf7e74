/*
 * stable.c - a placement is not undone by the engine's next decision.
 *
 * muster places one gang at a time, and a waiting gang behind it in the order
 * (an extra of a higher-priority gang behind a lower-priority minimum, say) or
 * one the order never saw (a gang in a queue below its fair share, while this
 * one preempted inside its own over-share queue) could evict it the moment it
 * is bound. Nothing in the cluster would have changed in between: the engine
 * would be undoing its own decision, at the price of a killed job. So before
 * a placement stands (a plan that fits, or a plan on evicted victims' room),
 * the gangs that could evict it are asked, with the placement charged,
 * whether their own eviction search would take it. If one would, and could go
 * now were the placement not made (fit the room, or find victims of its own),
 * the placement is turned away and that gang goes first ("waits: gang X of
 * queue Q goes first: it would evict this one at once"). A gang that waits
 * whole, through others, for the one being placed is not asked: the two would
 * only wait for each other (a running gang's extra on such a chain is asked,
 * and goes first if the order lets it, or once the units ahead of it have gone:
 * goes_now; order.c's yields_to_u keeps those units from waiting for the
 * placement turned away). An extra is asked as things stand, and
 * again once the units the order puts ahead of it have gone (porder_place_ahead).
 *
 * This keeps placements out of harm's way; reclaim.c holds the line: what the
 * engine placed since the last change from outside is no victim at all.
 */
#include <stdlib.h>
#include <string.h>

#include "internal.h"

#define STABLE_MAX_ASKED 8   /* evictors asked per placement (two searches each at most) */
#define STABLE_MEMBER_ASKS 4 /* distinct asks of one gang's pending extras asked about */

/* A gang whose search could take u, and for which member (NULL: its minimum). */
struct evictor {
    struct pgang *w;
    struct ppod *wx;
    bool after_minimum; /* w waits whole: wx is asked about once its minimum would be placed */
    bool chained;       /* w was turned away last, through others, for u: see consider */
    enum policy_eviction_kind kind;
};

/* Its first pending member that could run, if any. */
static struct ppod *pending_member(const struct policy_cluster *c, const struct pgang *w)
{
    struct ppod *best = NULL;

    for (size_t i = 0; i < w->nmembers; i++) {
        struct ppod *p = ppod_at(c, w->members[i]);

        if (p && p->managed && p->phase == POLICY_POD_PENDING && ppod_ask_valid(p, NULL, 0) &&
            (!best || p->arrival < best->arrival))
            best = p;
    }
    return best;
}

static int cmp_evictors(const void *a, const void *b, void *c)
{
    return porder_gangs(c, ((const struct evictor *)a)->w, ((const struct evictor *)b)->w);
}

static bool same_ask(const struct ppod *a, const struct ppod *b)
{
    return a->cpu == b->cpu && a->memory == b->memory && a->gpus == b->gpus &&
           a->share == b->share && a->gpu_memory_mib == b->gpu_memory_mib;
}

/* The pending members of w beyond its minimum, one per ask (STABLE_MEMBER_ASKS at most):
 * any of them may be filtered next, and one that never fits must not hide one that does. */
static size_t pending_asks(const struct policy_cluster *c, const struct pgang *w,
                           struct ppod **out)
{
    size_t n = 0;

    for (size_t i = 0; i < w->nmembers && n < STABLE_MEMBER_ASKS; i++) {
        struct ppod *p = ppod_at(c, w->members[i]);
        size_t k;

        if (!p || !p->managed || p->phase != POLICY_POD_PENDING || !ppod_ask_valid(p, NULL, 0))
            continue;
        for (k = 0; k < n && !same_ask(out[k], p); k++)
            ;
        if (k == n)
            out[n++] = p;
    }
    return n;
}

/* w, were it asked now: its minimum if it waits (and, once that would be placed, its next
 * member beyond it), else each pending member beyond the minimum of a gang bound or planned
 * whole (one whose victims are still leaving is planned on their room). */
static void consider(struct policy_cluster *c, struct pgang *w, const struct pgang *u,
                     struct evictor *found, size_t *n)
{
    struct evictor e = {.w = w};
    struct ppod *asks[STABLE_MEMBER_ASKS];
    size_t nasks;

    if (!w || w == u || (w->awaiting > 0 && !w->planned))
        return;
    e.chained = pgang_waits_on(c, w, u) != 0; /* a chain too long: do not add to it */
    if (pgang_waits(c, w)) {
        if (e.chained)
            return;
        if (!pgang_could_run(c, w) || !preclaim_could_take(c, w, u, &e.kind))
            return;
        porder_keep_first(found, n, STABLE_MAX_ASKED, sizeof(*found), &e, cmp_evictors, c);
        if (pgang_min(c, w) < (int32_t)w->nmembers) {
            e.after_minimum = true;
            porder_keep_first(found, n, STABLE_MAX_ASKED, sizeof(*found), &e, cmp_evictors, c);
        }
        return;
    }
    if ((!w->admitted && !w->planned) || !(nasks = pending_asks(c, w, asks)) ||
        !preclaim_could_take(c, w, u, &e.kind))
        return;
    for (size_t i = 0; i < nasks; i++) {
        e.wx = asks[i];
        porder_keep_first(found, n, STABLE_MAX_ASKED, sizeof(*found), &e, cmp_evictors, c);
    }
}

/* Place w's minimum dry into st (for an after_minimum evictor): the member asked about next,
 * or NULL when the minimum does not fit. w counts as planned until *was is put back. */
static struct ppod *minimum_placed(struct policy_cluster *c, struct pgang *w,
                                   struct pstatement *st, bool *was)
{
    enum preason_kind rk;
    struct ppod *x;

    *was = w->planned;
    if (pplan_gang_try(c, w, NULL, st, &rk, NULL) != 0 ||
        !(x = pending_member(c, w)))
        return NULL;
    w->planned = true;
    return x;
}

/* Would e's search take u, as it stands (u's placement charged)? */
static bool takes(struct policy_cluster *c, const struct evictor *e, struct pgang *u,
                  int64_t now)
{
    struct pstatement st = {0};
    struct ppod *x = e->wx;
    bool was = e->w->planned, yes = false;

    if (e->after_minimum)
        x = minimum_placed(c, e->w, &st, &was);
    if (!e->after_minimum || x)
        yes = preclaim_would_take(c, e->w, x, u, e->kind, now);
    /* A member beyond a running gang's minimum is asked again as it will stand once the units
     * the order puts ahead of it have gone: room it would fit now may be theirs (another
     * queue's extra, say), and then it takes u after all. */
    if (!yes && x && !e->after_minimum) {
        porder_place_ahead(c, e->w, x, u, &st);
        yes = preclaim_would_take(c, e->w, x, u, e->kind, now);
    }
    e->w->planned = was;
    pstatement_discard(c, &st);
    return yes;
}

/* The gangs that could take u, their cheap test passed, the first in queue order. */
static size_t candidates(struct policy_cluster *c, struct pgang *u, struct evictor *found)
{
    size_t n = 0;

    if ((c->opts.no_reclaim && c->opts.no_preemption) || !pgang_preemptible(c, u))
        return 0;
    pgang_waiting_refill(c);
    for (size_t i = 0; i < c->waiting.n; i++)
        consider(c, pgang_at(c, c->waiting.v[i]), u, found, &n);
    /* Gangs planned whole are not waiting, but their extras will be once they bind. */
    for (size_t i = 0; i < c->expiry.n; i++) {
        struct pgang *w = c->expiry.v[i].gang;

        if (w->planned && !w->admitted && !w->waiting)
            consider(c, w, u, found, &n);
    }
    return n;
}

/* The first gang, in queue order, whose search would take g at once (NULL: none). */
static struct pgang *first_taker(struct policy_cluster *c, struct pgang *g, int64_t now)
{
    struct evictor found[STABLE_MAX_ASKED];
    size_t n = candidates(c, g, found);

    for (size_t i = 0; i < n; i++)
        if (takes(c, &found[i], g, now))
            return found[i].w;
    return NULL;
}

/* Could e's gang go now, u not placed: fit the room as it is, or evict victims of its own now
 * (victims chosen and no gang that would evict it at once on their room: pevict_for's own
 * test)? Else u yielding would leave both waiting. A gang turned away last, through others,
 * for u (its member x behind a chain that ends at u) must also get past the order with u not
 * placed: the order lets it go now, or it fits once the units the order puts ahead of it have
 * gone (seed 78249: the gang ahead waited for u; with u turned away for x's gang it no longer
 * does, order.c yields_to_u). A gang waiting whole on such a chain is not asked at all
 * (consider); a running gang's members beyond its minimum are asked one by one, and the chain
 * was recorded for one of them. */
static bool goes_now(struct policy_cluster *c, const struct evictor *e, const struct pgang *u,
                     int64_t now)
{
    enum preason_kind rk;
    struct pstatement st = {0};
    struct psearch *s;
    struct ppod *x = e->wx;
    bool was = e->w->planned, ok = false;
    size_t mark;

    if (e->after_minimum && !(x = minimum_placed(c, e->w, &st, &was)))
        goto out;
    mark = st.n;
    ok = x ? pplan_one_try(c, x, NULL, 0, &st, NULL) == 0
           : pplan_gang_try(c, e->w, NULL, &st, &rk, NULL) == 0;
    /* On a chain, x goes now if the order lets it, or once the units it puts ahead of x have
     * gone: they do not wait for u, which yields to x's gang (porder_blocker). */
    if (ok && e->chained && porder_blocker(c, e->w, x, &st, now)) {
        pstatement_rollback(c, &st, mark);
        porder_place_ahead(c, e->w, x, u, &st);
        ok = x && pplan_one_try(c, x, NULL, 0, &st, NULL) == 0;
    }
    pstatement_rollback(c, &st, mark);
    if (!ok && (s = preclaim_choose(c, e->w, x, now))) {
        ok = first_taker(c, e->w, now) == NULL;
        preclaim_abort(s);
    }
out:
    e->w->planned = was;
    pstatement_discard(c, &st);
    return ok;
}

/* Lift what u was just planned with (its PLANNED members) into lifted. */
static bool lift_plan(struct policy_cluster *c, struct pgang *u, struct pstatement *lifted)
{
    for (size_t i = 0; i < u->nmembers; i++) {
        struct ppod *p = ppod_at(c, u->members[i]);

        if (p && p->phase == POLICY_POD_PLANNED && p->place.node >= 0 &&
            pstatement_lift(c, lifted, p, POLICY_POD_PENDING) != POLICY_OK)
            return false;
    }
    return true;
}

struct pgang *pstable_evictor(struct policy_cluster *c, struct pgang *u, int64_t now)
{
    struct evictor found[STABLE_MAX_ASKED];
    size_t n = candidates(c, u, found);

    for (size_t i = 0; i < n; i++) {
        struct pstatement lifted = {0};
        bool goes;

        if (!takes(c, &found[i], u, now))
            continue;
        goes = lift_plan(c, u, &lifted) && goes_now(c, &found[i], u, now);
        pstatement_discard(c, &lifted);
        if (goes)
            return found[i].w;
    }
    return NULL;
}

int pevict_for(struct policy_cluster *c, struct pgang *g, struct ppod *x, int64_t now,
               struct pgang **first)
{
    struct psearch *s = preclaim_choose(c, g, x, now);

    *first = NULL;
    if (!s)
        return -1;
    /* g stands on its victims' room now: would anyone evict it at once? Then nothing is
     * evicted for g, whether that one can go now or not: the victims would die to hand their
     * room, through g, to a gang the rules did not let take it (an extra of a higher-priority
     * gang in g's queue that may preempt g but may not reclaim, say, because the room would
     * put its queue over its fair share). g waits for it, as the order says it should. */
    if ((*first = first_taker(c, g, now))) {
        preclaim_abort(s);
        return -1;
    }
    return preclaim_decide(s) == POLICY_OK ? 0 : -1;
}
