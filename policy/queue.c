/*
 * queue.c - what a queue allows: its limit, hard, through every ancestor, and
 * for a non-preemptible gang its quota (KAI: non-preemptible work runs only
 * within quota). Fair shares (fairshare.c) do not refuse anything here: they
 * order gangs (order.c) and decide who is reclaimed from (reclaim.c).
 */
#include <stdio.h>
#include <string.h>

#include "arith.h"
#include "internal.h"

int64_t pqueue_used(const struct pqueue *q, int r)
{
    return parith_add(q->allocated.v[r], q->reserved.v[r]);
}

/* The resource of need that goes over cap (cap -1 = none) on top of have, or -1. */
static int over(const struct policy_resources *cap, const struct policy_resources *have,
                const struct policy_resources *need)
{
    for (int r = 0; r < POLICY_RES_COUNT; r++)
        if (cap->v[r] >= 0 && need->v[r] > 0 && parith_add(have->v[r], need->v[r]) > cap->v[r])
            return r;
    return -1;
}

/* Refused by q's cap of resource r (its limit, or for non-preemptible work its quota). */
static int refuse(enum policy_reason_kind kind, const struct pqueue *q, int r, int64_t cap,
                  int64_t have, const struct pgang *g, const struct policy_resources *need,
                  struct preason *why)
{
    if (!why)
        return -1;
    preason_init(why, kind, g ? g->key : NULL);
    why->r.queue = q->name;
    why->r.resource = r;
    why->r.cap = cap;
    why->r.used = have;
    why->r.asked = need->v[r];
    why->r.never = need->v[r] > cap;
    /* A gang of one is its pod. */
    if (g && g->singleton && g->nmembers)
        why->r.pod = g->key;
    return -1;
}

/* An upgrade's burst (hold.c) raises what it may hold: never only beyond that. */
static int refuse_burst(int rc, const struct policy_resources *cap, int r,
                        const struct policy_resources *need, struct preason *why)
{
    if (why)
        why->r.never = cap->v[r] >= 0 && need->v[r] > cap->v[r];
    return rc;
}

int pqueue_room(const struct policy_cluster *c, const struct pgang *g, const char *queue,
                const struct policy_resources *need, struct preason *why)
{
    const struct pqueue *leaf = pqueue_find(c, queue);
    const struct pqueue *q;
    int depth, r;

    if (!leaf) {
        if (why) {
            preason_init(why, POLICY_REASON_NO_QUEUE, g ? g->key : NULL);
            why->r.queue = queue;
        }
        return -1;
    }
    for (q = leaf, depth = 0; q && depth < POLICY_MAX_QUEUE_DEPTH;
         q = pqueue_parent(c, q), depth++) {
        struct policy_resources used, burst, limit, quota;

        /* A RayService's upgrade, where the queue lets it, goes over by what the running
         * cluster holds (hold.c): counted off what is in use. */
        powner_burst(c, g, q, &burst);
        for (int k = 0; k < POLICY_RES_COUNT; k++) {
            used.v[k] = pqueue_used(q, k);
            limit.v[k] = q->limit.v[k] < 0 ? -1 : parith_add(q->limit.v[k], burst.v[k]);
            quota.v[k] = q->quota.v[k] < 0 ? -1 : parith_add(q->quota.v[k], burst.v[k]);
        }
        if ((r = over(&limit, &used, need)) >= 0)
            return refuse_burst(refuse(POLICY_REASON_QUEUE_LIMIT, q, r, q->limit.v[r], used.v[r],
                                       g, need, why),
                                &limit, r, need, why);
        if (g && !g->preemptible && (r = over(&quota, &q->nonpreemptible, need)) >= 0)
            return refuse_burst(refuse(POLICY_REASON_QUEUE_QUOTA, q, r, q->quota.v[r],
                                       q->nonpreemptible.v[r], g, need, why),
                                &quota, r, need, why);
    }
    return 0;
}

void pqueue_reason_settle(const struct policy_cluster *c, struct preason *why)
{
    struct policy_reason *r = &why->r;
    const struct pqueue *q = pqueue_find(c, r->queue);
    int64_t now;

    if (!q || r->resource < 0 ||
        (r->kind != POLICY_REASON_QUEUE_LIMIT && r->kind != POLICY_REASON_QUEUE_QUOTA))
        return;
    now = r->kind == POLICY_REASON_QUEUE_LIMIT ? pqueue_used(q, r->resource)
                                               : q->nonpreemptible.v[r->resource];
    r->asked = r->asked + r->used - now;
    r->used = now;
    r->never = r->asked > r->cap;
}

/* What it may hold at most: max(quota, fair share), under its limit; with an unlimited quota
 * what its limit allows, -1 when that is unlimited too (KAI's GetAllocatableShare). */
int64_t pqueue_allocatable(const struct pqueue *q, int r)
{
    int64_t a;

    if (q->quota.v[r] < 0)
        return q->limit.v[r];
    a = q->quota.v[r] > q->fair_share.v[r] ? q->quota.v[r] : q->fair_share.v[r];

    if (q->limit.v[r] >= 0 && q->limit.v[r] < a)
        a = q->limit.v[r];
    return a;
}

/* used / fair share, the most of any resource it uses; a use with no share is infinite. */
double pqueue_saturation(const struct pqueue *q, const struct policy_resources *used)
{
    double most = 0;

    for (int r = 0; r < POLICY_RES_COUNT; r++) {
        double s;

        if (used->v[r] <= 0)
            continue;
        s = q->fair_share.v[r] > 0 ? (double)used->v[r] / (double)q->fair_share.v[r] : 1e300;
        if (s > most)
            most = s;
    }
    return most;
}
