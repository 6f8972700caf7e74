/*
 * evict.c - evictions decided by reclaim and preemption (reclaim.c): the
 * victims' queue usage is given up at once, their node usage is kept until
 * they are gone (the reclaiming gang's plan sits on top of it, so nobody else
 * takes that room), and the caller is handed each eviction to carry out.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

void policy_evictions_free(struct policy_eviction *v, size_t n)
{
    for (size_t i = 0; v && i < n; i++) {
        free(v[i].namespace_);
        free(v[i].name);
        free(v[i].uid);
        free(v[i].gang);
        free(v[i].queue);
        free(v[i].by);
        free(v[i].by_queue);
        free(v[i].reason);
        pwhy_drop(v[i].why_);
    }
    free(v);
}

int pevict_queue(struct policy_cluster *c, struct ppod *victim, struct pgang *by,
                 enum policy_eviction_kind kind, struct pwhy *why)
{
    const struct pgang *vg = ppod_gang(c, victim);
    struct policy_eviction *e;

    if (c->nevictions == c->evictions_cap) {
        size_t cap = c->evictions_cap ? c->evictions_cap * 2 : 16;
        struct policy_eviction *v = realloc(c->evictions, cap * sizeof(*v));

        if (!v)
            return POLICY_ENOMEM;
        c->evictions = v;
        c->evictions_cap = cap;
    }
    e = &c->evictions[c->nevictions];
    *e = (struct policy_eviction){.namespace_ = pstrdup(victim->ns),
                                  .name = pstrdup(victim->name),
                                  .uid = pstrdup(victim->uid),
                                  .gang = pstrdup(vg ? vg->key : victim->key),
                                  .queue = pstrdup(victim->queue),
                                  .by = pstrdup(by->key),
                                  .by_queue = pstrdup(pgang_queue(c, by)),
                                  .kind = kind,
                                  .reason = pstrdup(why->text),
                                  .why = &why->r,
                                  .why_ = why};
    if (!e->namespace_ || !e->name || !e->uid || !e->gang || !e->queue || !e->by || !e->by_queue ||
        !e->reason) {
        free(e->namespace_);
        free(e->name);
        free(e->uid);
        free(e->gang);
        free(e->queue);
        free(e->by);
        free(e->by_queue);
        free(e->reason);
        return POLICY_ENOMEM;
    }
    c->nevictions++;
    pwhy_hold(why);
    pcharge_mark_evicting(c, victim);
    pmodel_owe_remake(c, e->gang); /* its pod made again is no change */
    victim->evict_by = by->id;
    pwhy_set(&victim->why, why);
    by->awaiting++;
    return POLICY_OK;
}

int policy_evictions_take(struct policy_cluster *c, struct policy_eviction **out, size_t *n)
{
    *out = c->evictions;
    *n = c->nevictions;
    c->evictions = NULL;
    c->nevictions = c->evictions_cap = 0;
    return POLICY_OK;
}

/* The victim will not leave, or has left: its reclaimer awaits one fewer. */
static struct pgang *release_reclaimer(struct policy_cluster *c, struct ppod *p)
{
    struct pgang *by = pgang_at(c, p->evict_by);

    p->evict_by = -1;
    if (by && by->awaiting > 0)
        by->awaiting--;
    return by;
}

/* Does q or a queue above it hold more than its limit in any resource? */
static bool over_a_limit(const struct policy_cluster *c, const struct pqueue *q)
{
    for (int d = 0; q && d < POLICY_MAX_QUEUE_DEPTH; d++, q = pqueue_parent(c, q))
        for (int r = 0; r < POLICY_RES_COUNT; r++)
            if (q->limit.v[r] >= 0 && pqueue_used(q, r) > q->limit.v[r])
                return true;
    return false;
}

void pevict_gone(struct policy_cluster *c, struct ppod *p)
{
    release_reclaimer(c, p);
    c->fair_dirty = true;
}

int policy_eviction_done(struct policy_cluster *c, const char *ns, const char *name, bool ok,
                         const char *why, int64_t now)
{
    struct ppod *p = ppod_find(c, ns, name);
    struct pgang *by, *g;
    struct preason text;
    int32_t node;

    if (!p)
        return POLICY_ENOENT;
    if (ok || p->phase != POLICY_POD_EVICTING)
        return POLICY_OK; /* it leaves; the watch tells when it is gone */
    /* Refused: it stays, and the plan made on its room is abandoned. */
    node = p->place.node;
    by = release_reclaimer(c, p);
    pcharge_mark_staying(c, p);
    g = ppod_gang(c, p);
    pmodel_take_remake(c, g ? g->key : p->key); /* nothing to make again */
    pwhy_set(&p->why, NULL);
    if (g) {
        pgang_note_bound(c, g);
        g->refused_until = now + c->opts.refused_victim_ms;
    }
    if (by)
        pgang_pause_look(c, by, now); /* or the look would choose the next victim at once */
    /* A gang's minimum, or a member beyond a bound gang's minimum (preclaim with x), was
     * planned on the victim's room: that plan goes. */
    if (by && (by->planned || by->admitted)) {
        struct pwhy *w;

        /* A running gang's members beyond its minimum are planned one at a time, each on
         * victims of its own node: those on the refused victim's node give their room back;
         * those elsewhere did not count on it and keep theirs (releasing them would hand the
         * room their victims already left to the next pod that fits, often one of those
         * victims made again, to be evicted for the same member once the pause ends). Unless
         * the victim staying puts the gang's queues over a limit: a victim elsewhere may have
         * been taken for room under an ancestor's limit. Then every plan goes. */
        if (by->admitted) {
            pplan_release_on(c, by, node);
            if (over_a_limit(c, pqueue_find(c, pgang_queue(c, by))))
                pplan_release(c, by);
        } else {
            pplan_release(c, by);
        }
        preason_init(&text, POLICY_REASON_VICTIM_REFUSED, by->key);
        text.r.other = p->key;
        if (why && *why)
            preason_detail(&text, "%s", why);
        w = pwhy_new(&text);
        if (!by->admitted)
            pgang_set_reason(by, &text);
        pgang_tell_pending(c, by, w);
        pwhy_drop(w);
    }
    c->fair_dirty = true;
    return POLICY_OK;
}
