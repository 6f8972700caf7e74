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
 * Two places where muster differs from KAI on purpose: over-quota amounts are
 * not rounded down to whole units (the last units go one each, so equal
 * weights end within one unit of each other), and when the quotas of a level
 * add up to more than its capacity, the capacity is divided in proportion to
 * the quotas instead of promising each its whole quota.
 */
#include <stdlib.h>
#include <string.h>

#include "internal.h"

/* What a queue can use at most: its demand, under its limit. */
static int64_t want_of(const struct policy_share_queue *q)
{
    int64_t d = q->demand > 0 ? q->demand : 0;

    return q->limit >= 0 && q->limit < d ? q->limit : d;
}

/*
 * Water-fill amount over the queues ids[0..n) by weight w(i) (weights[i]),
 * never above want[i]; returns what is left. fs[i] is added to.
 */
static int64_t water_fill(int64_t amount, const int64_t *weights, const int64_t *want, int64_t *fs,
                          size_t n)
{
    while (amount > 0) {
        __int128 total = 0;
        int64_t given = 0;

        for (size_t i = 0; i < n; i++)
            if (fs[i] < want[i] && weights[i] > 0)
                total += weights[i];
        if (total == 0)
            break;
        for (size_t i = 0; i < n; i++) {
            int64_t room = want[i] - fs[i], g;

            if (room <= 0 || weights[i] <= 0)
                continue;
            g = (int64_t)((__int128)amount * weights[i] / total);
            if (g > room)
                g = room;
            fs[i] += g;
            given += g;
        }
        if (given > 0) {
            amount -= given;
            continue;
        }
        /* Less than one unit each is left: one unit at a time, heaviest first. */
        for (bool any = true; amount > 0 && any;) {
            size_t best = n;

            any = false;
            for (size_t i = 0; i < n; i++)
                if (fs[i] < want[i] && weights[i] > 0 && (best == n || weights[i] > weights[best]))
                    best = i;
            if (best == n)
                break;
            /* Every queue of that weight gets one before any gets two. */
            for (size_t i = best; i < n && amount > 0; i++) {
                if (fs[i] < want[i] && weights[i] == weights[best]) {
                    fs[i]++;
                    amount--;
                    any = true;
                }
            }
        }
        break;
    }
    return amount;
}

static int cmp_priority_desc(const void *a, const void *b, void *q_)
{
    const struct policy_share_queue *q = q_;
    int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;

    if (q[x].priority != q[y].priority)
        return q[x].priority > q[y].priority ? -1 : 1;
    return x - y;
}

/* Divide cap among the queues ids[0..n) of one level. */
static void divide_level(int64_t cap, struct policy_share_queue *q, int32_t *ids, size_t n,
                         int64_t *want, int64_t *weight, int64_t *fs)
{
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
    }
    for (size_t lo = 0; lo < n && rest > 0;) {
        size_t hi = lo;

        while (hi < n && q[ids[hi]].priority == q[ids[lo]].priority)
            hi++;
        rest = water_fill(rest, weight + lo, want + lo, fs + lo, hi - lo);
        lo = hi;
    }
out:
    for (size_t i = 0; i < n; i++)
        q[ids[i]].fair_share = fs[i];
}

void policy_fair_share(int64_t capacity, struct policy_share_queue *q, size_t n)
{
    int32_t *ids = malloc((n ? n : 1) * sizeof(*ids));
    int64_t *scratch = malloc((n ? n : 1) * 3 * sizeof(*scratch));
    int64_t *children_demand = calloc(n ? n : 1, sizeof(*children_demand));

    for (size_t i = 0; i < n; i++)
        q[i].fair_share = 0;
    if (!ids || !scratch || !children_demand)
        goto out;
    for (size_t i = 0; i < n; i++)
        if (q[i].parent >= 0 && (size_t)q[i].parent < n)
            children_demand[q[i].parent] += q[i].demand > 0 ? q[i].demand : 0;
    /* Level by level: the top, then the children of each queue in array order
     * (parents come first, so a parent's share is known before its children's). */
    for (int64_t parent = -1; parent < (int64_t)n; parent++) {
        int64_t cap = capacity;
        size_t k = 0;

        for (size_t i = 0; i < n; i++)
            if (q[i].parent == parent)
                ids[k++] = (int32_t)i;
        if (k == 0)
            continue;
        if (parent >= 0) {
            /* A parent's own gangs are served from its share before its children. */
            int64_t own = q[parent].demand - children_demand[parent];

            cap = q[parent].fair_share - (own > 0 ? own : 0);
        }
        divide_level(cap, q, ids, k, scratch, scratch + n, scratch + 2 * n);
    }
out:
    free(ids);
    free(scratch);
    free(children_demand);
}
