/*
 * unasked.c - evictions for waiting gangs kube-scheduler does not ask about.
 *
 * kube-scheduler calls an extender only with the nodes its own filters pass. When no node has
 * room for a pod in kube-scheduler's own count (every GPU taken), the pod is never filtered, so
 * the evictions policy_filter decides (reclaim for a queue below its fair share, preemption
 * inside one) never run for it: a queue within its quota would wait for good behind another
 * queue's borrowed GPUs. Here the engine asks for them: a waiting gang nobody filtered for a
 * while is planned on every node as a filter would plan it; if it fits, nothing is done (it
 * waits on kube-scheduler, not on room, and nothing is held for it); if it does not, it gets
 * the same eviction search. Once its victims are gone kube-scheduler sees the room itself.
 * A gang looked at in vain is looked at again after twice as long each time (up to 16 times
 * the quiet time), so a long queue of waiting gangs costs little.
 */
#include <stdlib.h>

#include "internal.h"

/* Its first pending pod muster schedules, with an ask it could place; NULL = none. */
static struct ppod *first_pending(const struct policy_cluster *c, const struct pgang *g)
{
    for (size_t i = 0; i < g->nmembers; i++) {
        struct ppod *p = ppod_at(c, g->members[i]);

        if (p && p->managed && p->phase == POLICY_POD_PENDING && ppod_ask_valid(p, NULL, 0))
            return p;
    }
    return NULL;
}

/* kube-scheduler's own preemption is making room for one of its pods (nominatedNodeName). */
static bool nominated(const struct policy_cluster *c, const struct pgang *g)
{
    for (size_t i = 0; i < g->nmembers; i++) {
        const struct ppod *p = ppod_at(c, g->members[i]);

        if (p && p->nominated && p->phase == POLICY_POD_PENDING)
            return true;
    }
    return false;
}

/* Waiting (its minimum, or a member beyond the minimum of a gang bound whole), not filtered
 * nor looked at for quiet_ms, its pod known that long, and not being preempted for by
 * kube-scheduler itself (which would then evict twice). */
static bool quiet(const struct policy_cluster *c, const struct pgang *g, int64_t now,
                  int64_t quiet_ms)
{
    const struct ppod *p;

    if (g->awaiting > 0 || g->unasked_next > now || (g->asked && now - g->asked < quiet_ms) ||
        nominated(c, g))
        return false;
    if ((!pgang_waits(c, g) && !g->admitted) || !(p = first_pending(c, g)))
        return false;
    return now - p->seen >= quiet_ms;
}

static int cmp_gangs(const void *a, const void *b, void *c)
{
    return porder_gangs(c, *(struct pgang *const *)a, *(struct pgang *const *)b);
}

/* Plan g on every node, as its filter would, and undo it; true = evictions were decided. A
 * gang bound whole is looked at for its next member beyond the minimum, on its own. */
static bool look(struct policy_cluster *c, struct pgang *g, int64_t now)
{
    struct pstatement st = {0};
    struct preason why;
    enum preason_kind kind = PREASON_NONE;
    struct ppod *p = first_pending(c, g);
    struct pgang *first;
    int rc;

    if (g->admitted && !g->singleton) {
        rc = pplan_one_try(c, p, NULL, 0, &st, &why);
        pstatement_discard(c, &st);
        kind = rc == 0 ? PREASON_NONE : preason_class(why.r.kind);
        if (rc == 0 || (kind != PREASON_CAPACITY && kind != PREASON_QUEUE) ||
            pevict_for(c, g, p, now, &first) != 0)
            return false;
        pgang_note_awaiting(c, g);
        return true;
    }
    if (g->singleton) {
        rc = pplan_one_try(c, p, NULL, 0, &st, &why);
        if (rc != 0)
            kind = preason_class(why.r.kind);
    } else {
        rc = pplan_gang_try(c, g, NULL, &st, &kind, &why);
    }
    pstatement_discard(c, &st);
    if (rc == 0)
        return false;
    pgang_waits_for(c, g, &why);
    g->reason_kind = kind;
    if ((kind != PREASON_CAPACITY && kind != PREASON_QUEUE) ||
        pevict_for(c, g, NULL, now, &first) != 0) {
        /* No eviction makes room: say who holds what it waits for. */
        preason_holders(c, g, &why);
        if (why.r.holder) {
            pgang_waits_for(c, g, &why);
            g->reason_kind = kind;
        }
        return false;
    }
    pgang_note_awaiting(c, g);
    return true;
}

int policy_evict_unasked(struct policy_cluster *c, int64_t now, int64_t quiet_ms, size_t max,
                         size_t *decided)
{
    struct pgang **found;
    size_t n = 0;

    *decided = 0;
    if (now > c->clock)
        c->clock = now;
    pgang_waiting_refill(c);
    if ((c->opts.no_reclaim && c->opts.no_preemption) || c->waiting.n == 0 || max == 0)
        return POLICY_OK;
    policy_expire(c, now);
    if (!(found = malloc(max * sizeof(*found))))
        return POLICY_ENOMEM;
    pfair_refresh(c);
    porder_refresh(c);
    for (size_t i = 0; i < c->waiting.n; i++) {
        struct pgang *g = pgang_at(c, c->waiting.v[i]);

        if (g && quiet(c, g, now, quiet_ms))
            porder_keep_first(found, &n, max, sizeof(*found), &g, cmp_gangs, c);
    }
    for (size_t i = 0; i < n; i++) {
        struct pgang *g = found[i];
        int64_t wait = g->unasked_backoff > quiet_ms ? g->unasked_backoff : quiet_ms;

        if (look(c, g, now)) {
            ++*decided;
            wait = quiet_ms;
            g->unasked_backoff = quiet_ms;
        } else {
            g->unasked_backoff = wait < quiet_ms * 8 ? wait * 2 : quiet_ms * 16;
        }
        g->unasked_next = now + wait;
    }
    free(found);
    return POLICY_OK;
}
