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
 * the gangs that could evict it at once are asked, with the placement
 * charged, whether their own eviction search would take it. If one would, the
 * placement is turned away and that gang goes first ("waits: gang X of queue Q
 * would evict it at once"). A gang protected by its queue's minimum runtime is
 * never taken at once, so it is never turned away for that.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

#define STABLE_MAX_ASKED 8 /* gangs whose search is run per placement */

/* A gang whose search could take u, and for which member (NULL: its minimum). */
struct evictor {
    struct pgang *w;
    struct ppod *wx;
    bool after_minimum; /* w waits whole: wx is asked about once its minimum would be placed */
    enum policy_eviction_kind kind;
};

/* Its first pending member beyond the minimum of a gang bound whole, if any. */
static struct ppod *pending_extra(const struct policy_cluster *c, const struct pgang *w)
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

/* Does w wait for u, following who each gang was last turned away for (at most 16 steps)? */
static bool waits_for(const struct policy_cluster *c, const struct pgang *w, const struct pgang *u)
{
    for (int k = 0; w && k < 16; k++) {
        if (w->waits_for < 0)
            return false;
        if (w->waits_for == u->id)
            return true;
        w = pgang_at(c, w->waits_for);
    }
    return w != NULL; /* a chain that long: do not add to it */
}

/* w, were it asked now: its minimum if it waits (and, once that would be placed, its next
 * member beyond it), else its next member beyond the minimum of a gang bound or planned whole
 * (an extra placed once its gang binds). */
static void consider(struct policy_cluster *c, struct pgang *w, const struct pgang *u,
                     struct evictor *found, size_t *n)
{
    struct evictor e = {.w = w};

    /* One that waits, through others, for u itself is not going first: u yielding to it
     * would leave them waiting for each other. */
    if (!w || w == u || waits_for(c, w, u))
        return;
    /* One whose victims are still leaving is planned on their room: its minimum is placed
     * already, its members beyond it come next. */
    if (w->awaiting > 0 && !w->planned)
        return;
    if (pgang_waits(c, w)) {
        if (!pgang_could_run(c, w))
            return;
    } else if ((!w->admitted && !w->planned) || !(e.wx = pending_extra(c, w))) {
        return;
    }
    if (!preclaim_could_take(c, w, u, &e.kind))
        return;
    porder_keep_first(found, n, STABLE_MAX_ASKED, sizeof(*found), &e, cmp_evictors, c);
    if (!e.wx && pgang_min(c, w) < (int32_t)w->nmembers) {
        e.after_minimum = true;
        porder_keep_first(found, n, STABLE_MAX_ASKED, sizeof(*found), &e, cmp_evictors, c);
    }
}

/* Would w's next member beyond its minimum take u, once w's minimum is placed (dry)? */
static bool extra_would_take(struct policy_cluster *c, struct pgang *w, struct pgang *u,
                             enum policy_eviction_kind kind, int64_t now)
{
    char why[POLICY_REASON_LEN];
    enum preason_kind rk;
    struct pstatement st = {0};
    struct ppod *x;
    bool was = w->planned, takes = false;

    if (pplan_gang_try(c, w, NULL, &st, &rk, why, sizeof(why)) == 0 &&
        (x = pending_extra(c, w))) {
        w->planned = true; /* as it would be: its extras are asked about next */
        takes = preclaim_would_take(c, w, x, u, kind, now);
        w->planned = was;
    }
    pstatement_discard(c, &st);
    return takes;
}

struct pgang *pstable_evictor(struct policy_cluster *c, struct pgang *u, int64_t now)
{
    struct evictor found[STABLE_MAX_ASKED];
    size_t n = 0;

    if ((c->opts.no_reclaim && c->opts.no_preemption) || !pgang_preemptible(c, u))
        return NULL;
    pgang_waiting_refill(c);
    for (size_t i = 0; i < c->waiting.n; i++)
        consider(c, pgang_at(c, c->waiting.v[i]), u, found, &n);
    /* Gangs planned whole are not waiting, but their extras will be once they bind. */
    for (size_t i = 0; i < c->expiry.n; i++) {
        struct pgang *w = c->expiry.v[i].gang;

        if (w->planned && !w->admitted && !w->waiting)
            consider(c, w, u, found, &n);
    }
    for (size_t i = 0; i < n; i++)
        if (found[i].after_minimum
                ? extra_would_take(c, found[i].w, u, found[i].kind, now)
                : preclaim_would_take(c, found[i].w, found[i].wx, u, found[i].kind, now))
            return found[i].w;
    return NULL;
}

int pevict_for(struct policy_cluster *c, struct pgang *g, struct ppod *x, int64_t now,
               struct pgang **first)
{
    struct psearch *s = preclaim_choose(c, g, x, now);
    struct pgang *w;

    *first = NULL;
    if (!s)
        return -1;
    /* g stands on its victims' room now: would anyone evict it at once? */
    if ((w = pstable_evictor(c, g, now))) {
        preclaim_abort(s);
        *first = w;
        return -1;
    }
    return preclaim_decide(s) == POLICY_OK ? 0 : -1;
}
