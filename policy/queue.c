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

void pamount_text(int r, int64_t v, char *buf, size_t len)
{
    if (r == POLICY_RES_GPU && v % POLICY_GPU_MILLI == 0)
        snprintf(buf, len, "%lld", (long long)(v / POLICY_GPU_MILLI));
    else if (r == POLICY_RES_GPU)
        snprintf(buf, len, "%lld.%03lld", (long long)(v / POLICY_GPU_MILLI),
                 (long long)(v % POLICY_GPU_MILLI < 0 ? -(v % POLICY_GPU_MILLI)
                                                      : v % POLICY_GPU_MILLI));
    else if (r == POLICY_RES_CPU && v % 1000 == 0)
        snprintf(buf, len, "%lld", (long long)(v / 1000));
    else if (r == POLICY_RES_CPU)
        snprintf(buf, len, "%lldm", (long long)v);
    else if (v % (1LL << 30) == 0)
        snprintf(buf, len, "%lldGi", (long long)(v >> 30));
    else if (v % (1LL << 20) == 0)
        snprintf(buf, len, "%lldMi", (long long)(v >> 20));
    else
        snprintf(buf, len, "%lld", (long long)v);
    /* Trim trailing zeros of a fractional GPU amount: 1.500 -> 1.5 */
    if (r == POLICY_RES_GPU && strchr(buf, '.')) {
        size_t n = strlen(buf);

        while (buf[n - 1] == '0')
            buf[--n] = '\0';
    }
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

static int refuse(const char *what, const struct pqueue *q, int r, int64_t cap, int64_t have,
                  const struct pgang *g, const struct policy_resources *need,
                  enum preason_kind *kind, char *why, size_t len)
{
    char l[32], u[32], n[32];

    pamount_text(r, cap, l, sizeof(l));
    pamount_text(r, have, u, sizeof(u));
    pamount_text(r, need->v[r], n, sizeof(n));
    *kind = PREASON_QUEUE;
    snprintf(why, len, "queue %s: %s %s %s, in use %s, %s needs %s", q->name,
             policy_resource_name(r), what, l, u, g && !g->singleton ? "gang" : "pod", n);
    return -1;
}

int pqueue_room(const struct policy_cluster *c, const struct pgang *g, const char *queue,
                const struct policy_resources *need, enum preason_kind *kind, char *why,
                size_t len)
{
    const struct pqueue *leaf = pqueue_find(c, queue);
    const struct pqueue *q;
    int depth, r;

    if (!leaf) {
        *kind = PREASON_QUEUE;
        snprintf(why, len, "queue %s does not exist", queue);
        return -1;
    }
    for (q = leaf, depth = 0; q && depth < POLICY_MAX_QUEUE_DEPTH;
         q = pqueue_parent(c, q), depth++) {
        struct policy_resources used;

        for (int k = 0; k < POLICY_RES_COUNT; k++)
            used.v[k] = pqueue_used(q, k);
        if ((r = over(&q->limit, &used, need)) >= 0)
            return refuse("limit", q, r, q->limit.v[r], used.v[r], g, need, kind, why, len);
        if (g && !g->preemptible && (r = over(&q->quota, &q->nonpreemptible, need)) >= 0)
            return refuse("quota (non-preemptible work stays within it)", q, r, q->quota.v[r],
                          q->nonpreemptible.v[r], g, need, kind, why, len);
    }
    return 0;
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
