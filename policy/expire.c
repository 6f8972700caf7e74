/*
 * expire.c - every deadline of the engine in one place: a gang's plan is kept
 * for planTTL after it was made or last used, GPU sharing paused on a node
 * resumes at its time, and a gang whose room went unused is not looked at by
 * the unasked look (unasked.c) for a while.
 *
 * Deadlines wait in a min-heap (c->expiry), at most one entry per gang, so a
 * call pays for the plans that run out, not for every gang the engine tracks
 * (most are pods of their own, bound long ago).
 */
#include <stdio.h>
#include <stdlib.h>

#include "internal.h"

int policy_node_pause_sharing(struct policy_cluster *c, const char *name, int64_t until)
{
    struct pnode *n = pnode_at(c, pidx_get(&c->node_ix, name));

    if (!n)
        return POLICY_ENOENT;
    n->sharing_paused_until = until;
    c->paused_nodes += !n->sharing_paused;
    n->sharing_paused = true;
    return POLICY_OK;
}

/* ---- the heap ------------------------------------------------------------ */

static void heap_place(struct pexpiry *e, size_t i, struct pexpiry_entry entry)
{
    e->v[i] = entry;
    entry.gang->expiry_slot = (uint32_t)i + 1;
}

static void heap_up(struct pexpiry *e, size_t i)
{
    struct pexpiry_entry entry = e->v[i];

    while (i > 0 && e->v[(i - 1) / 2].at > entry.at) {
        heap_place(e, i, e->v[(i - 1) / 2]);
        i = (i - 1) / 2;
    }
    heap_place(e, i, entry);
}

static void heap_down(struct pexpiry *e, size_t i)
{
    struct pexpiry_entry entry = e->v[i];

    for (;;) {
        size_t child = 2 * i + 1;

        if (child >= e->n)
            break;
        if (child + 1 < e->n && e->v[child + 1].at < e->v[child].at)
            child++;
        if (e->v[child].at >= entry.at)
            break;
        heap_place(e, i, e->v[child]);
        i = child;
    }
    heap_place(e, i, entry);
}

/* Take entry i out: its gang is no longer scheduled. */
static void heap_remove(struct pexpiry *e, size_t i)
{
    struct pexpiry_entry last = e->v[--e->n];

    e->v[i].gang->expiry_slot = 0;
    if (i == e->n)
        return;
    heap_place(e, i, last);
    heap_up(e, i);
    heap_down(e, last.gang->expiry_slot - 1);
}

/* Look at g again at `at`, earlier or later than planned before. */
static void schedule(struct pexpiry *e, struct pgang *g, int64_t at)
{
    if (g->expiry_slot) {
        e->v[g->expiry_slot - 1].at = at;
        heap_up(e, g->expiry_slot - 1);
        heap_down(e, g->expiry_slot - 1);
        return;
    }
    if (e->n == e->cap) {
        size_t cap = e->cap ? e->cap * 2 : 256;
        struct pexpiry_entry *v = realloc(e->v, cap * sizeof(*v));

        if (!v) {
            e->lost = true;
            return;
        }
        e->v = v;
        e->cap = cap;
    }
    e->v[e->n] = (struct pexpiry_entry){at, g};
    heap_up(e, e->n++);
}

void pgang_expiry_cancel(struct policy_cluster *c, struct pgang *g)
{
    if (g->expiry_slot)
        heap_remove(&c->expiry, g->expiry_slot - 1);
}

void pexpiry_cleanup(struct pexpiry *e)
{
    free(e->v);
    *e = (struct pexpiry){0};
}

/* ---- what running out means ---------------------------------------------- */

static void resume_sharing(struct policy_cluster *c, int64_t now)
{
    for (size_t i = 0; c->paused_nodes > 0 && i < c->nodes.n; i++) {
        struct pnode *n = c->nodes.items[i];

        if (n && n->sharing_paused && now >= n->sharing_paused_until) {
            n->sharing_paused = false;
            c->paused_nodes--;
        }
    }
}

/* g's plan ran out. False: victims are leaving, or a member's bind is held or in flight, so
 * ask again later. */
static bool plan_ran_out(struct policy_cluster *c, struct pgang *g)
{
    int32_t holding, waiting, bound;

    if (g->awaiting > 0)
        return false; /* its victims are still leaving: the plan waits for them */
    pgang_counts(c, g, NULL, &bound, &holding, &waiting);
    if (holding == 0) {
        pgang_settle(c, g);
        return true;
    }
    for (size_t m = 0; m < g->nmembers; m++) {
        const struct ppod *p = ppod_at(c, g->members[m]);

        if (p && p->phase == POLICY_POD_BINDING)
            return false;
    }
    if (waiting > 0)
        return false;
    pplan_release(c, g);
    /* kube-scheduler did not bind what muster planned (a constraint muster does not model,
     * say): the unasked look must not make room for it again at once. */
    pgang_pause_look(c, g, c->clock);
    if (!g->admitted) {
        struct preason why;

        preason_init(&why, POLICY_REASON_PLAN_EXPIRED, g->key);
        pgang_waits_for(c, g, &why);
    }
    return true;
}

void pgang_pause_look(struct policy_cluster *c, struct pgang *g, int64_t now)
{
    g->unasked_next = now + c->opts.refused_victim_ms;
    g->unasked_backoff = c->opts.refused_victim_ms;
}

/* After running out of memory once: every gang with a deadline goes back in the heap. */
static void reschedule_all(struct policy_cluster *c)
{
    c->expiry.lost = false;
    for (size_t i = 0; i < c->gangs.n; i++) {
        struct pgang *g = c->gangs.items[i];

        if (g && !g->expiry_slot && g->deadline > 0)
            schedule(&c->expiry, g, g->deadline);
    }
}

void policy_expire(struct policy_cluster *c, int64_t now)
{
    struct pexpiry *e = &c->expiry;

    resume_sharing(c, now);
    phold_expire(c, now);
    if (e->lost)
        reschedule_all(c);
    /* A gang asked again is scheduled at now, which this loop does not take again. */
    while (e->n > 0 && e->v[0].at < now) {
        struct pgang *g = e->v[0].gang;

        if (now <= g->deadline)
            schedule(e, g, g->deadline);
        else if (plan_ran_out(c, g))
            heap_remove(e, 0);
        else
            schedule(e, g, now);
    }
}

/* The gang's plan is in use now: keep it for another planTTL. */
void pgang_plan_renew(struct policy_cluster *c, struct pgang *g, int64_t now)
{
    if (g->deadline < now + c->opts.plan_ttl_ms)
        g->deadline = now + c->opts.plan_ttl_ms;
    schedule(&c->expiry, g, g->deadline);
}
