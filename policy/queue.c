/*
 * queue.c - may a gang's ask be charged to its queue?
 *
 * Limits are hard: the ask must fit under `limit` in the queue and every
 * ancestor. Usage up to `quota` is in quota. Beyond quota the gang is over
 * quota, allowed only when (a) no gang of another queue waits, in quota, for
 * capacity, and (b) its queue's over-quota usage stays within its share of
 * the surplus by overQuotaWeight among sibling queues that want more, unless
 * none of those siblings waits. docs/quota.md has the arithmetic.
 */
#include <stdio.h>
#include <string.h>

#include "internal.h"

static int64_t used(const struct pqueue *q, int r)
{
    return q->allocated.v[r] + q->reserved.v[r];
}

static void amount_text(int r, int64_t v, char *buf, size_t len)
{
    if (r == POLICY_RES_GPU && v % POLICY_GPU_MILLI == 0)
        snprintf(buf, len, "%lld", (long long)(v / POLICY_GPU_MILLI));
    else if (r == POLICY_RES_GPU)
        snprintf(buf, len, "%lld.%03lld", (long long)(v / POLICY_GPU_MILLI),
                 (long long)(v % POLICY_GPU_MILLI));
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

static bool over_limit(const struct pqueue *q, const struct policy_resources *need, int *res)
{
    for (int r = 0; r < POLICY_RES_COUNT; r++) {
        if (q->limit.v[r] >= 0 && need->v[r] > 0 && used(q, r) + need->v[r] > q->limit.v[r]) {
            *res = r;
            return true;
        }
    }
    return false;
}

static bool over_quota(const struct pqueue *q, const struct policy_resources *need, int *res)
{
    for (int r = 0; r < POLICY_RES_COUNT; r++) {
        if (q->quota.v[r] >= 0 && need->v[r] > 0 && used(q, r) + need->v[r] > q->quota.v[r]) {
            *res = r;
            return true;
        }
    }
    return false;
}

/* Is some gang of another queue waiting for capacity while inside its quota? */
static const struct pgang *waiting_in_quota(const struct policy_cluster *c, const char *queue)
{
    for (size_t i = 0; i < c->gangs.n; i++) {
        const struct pgang *g = c->gangs.items[i];
        const struct pqueue *q;
        const char *gq;
        int res;

        if (!g || g->planned || g->admitted || g->reason_kind != PREASON_CAPACITY)
            continue;
        gq = pgang_queue(c, g);
        if (strcmp(gq, queue) == 0 || !(q = pqueue_find(c, gq)))
            continue;
        /* Its ask is unknown until planned; one member's worth stands for it. */
        {
            struct policy_resources need = {{0}};

            for (size_t m = 0; m < g->nmembers; m++) {
                const struct ppod *p = ppod_at(c, g->members[m]);
                struct policy_resources r;

                if (!p || p->phase == POLICY_POD_BOUND)
                    continue;
                ppod_charge_resources(p, p->share, &r);
                for (int k = 0; k < POLICY_RES_COUNT; k++)
                    need.v[k] += r.v[k];
            }
            if (!over_quota(q, &need, &res))
                return g;
        }
    }
    return NULL;
}

static int64_t cluster_total(const struct policy_cluster *c, int r)
{
    int64_t total = 0;

    for (size_t i = 0; i < c->nodes.n; i++) {
        const struct pnode *n = c->nodes.items[i];

        if (!n)
            continue;
        total += r == POLICY_RES_CPU      ? n->cpu
                 : r == POLICY_RES_MEMORY ? n->memory
                                          : n->gpus * POLICY_GPU_MILLI;
    }
    return total;
}

static bool same_parent(const struct pqueue *a, const struct pqueue *b)
{
    if (!a->parent || !b->parent)
        return a->parent == b->parent;
    return strcmp(a->parent, b->parent) == 0;
}

static bool queue_has_waiting_gang(const struct policy_cluster *c, const struct pqueue *q)
{
    for (size_t i = 0; i < c->gangs.n; i++) {
        const struct pgang *g = c->gangs.items[i];

        if (g && !g->planned && !g->admitted && g->reason_kind != PREASON_MEMBERS &&
            g->nmembers > 0 && strcmp(pgang_queue(c, g), q->name) == 0)
            return true;
    }
    return false;
}

/*
 * The surplus (capacity of the level minus what siblings use within quota) is
 * shared among siblings that want more, by weight. True if q may take `need`
 * more of resource r over its quota.
 */
static bool within_fair_share(const struct policy_cluster *c, const struct pqueue *q, int r,
                              int64_t need, char *why, size_t len)
{
    const struct pqueue *parent = pqueue_parent(c, q);
    int64_t capacity = parent && parent->limit.v[r] >= 0 ? parent->limit.v[r] : cluster_total(c, r);
    int64_t in_quota = 0, weights = 0, my_over;
    bool rival_waits = false;

    for (size_t i = 0; i < c->queues.n; i++) {
        const struct pqueue *s = c->queues.items[i];
        int64_t u, quota;

        if (!s || !same_parent(s, q))
            continue;
        u = used(s, r);
        quota = s->quota.v[r] < 0 ? u : s->quota.v[r];
        in_quota += u < quota ? u : quota;
        if (s == q || u > quota || queue_has_waiting_gang(c, s)) {
            weights += s->weight.v[r] > 0 ? s->weight.v[r] : 0;
            if (s != q && queue_has_waiting_gang(c, s))
                rival_waits = true;
        }
    }
    if (!rival_waits || weights <= 0)
        return true;
    my_over = used(q, r) + need - (q->quota.v[r] < 0 ? 0 : q->quota.v[r]);
    if (q->weight.v[r] > 0 && my_over * weights <= (capacity - in_quota) * q->weight.v[r])
        return true;
    {
        char a[32];

        amount_text(r, my_over, a, sizeof(a));
        snprintf(why, len,
                 "queue %s: over quota for %s by %s, beyond its overQuotaWeight share while "
                 "other queues wait",
                 q->name, policy_resource_name(r), a);
    }
    return false;
}

int pqueue_admit(struct policy_cluster *c, const struct pgang *g, const char *queue,
                 const struct policy_resources *need, enum preason_kind *kind, char *why,
                 size_t len)
{
    const struct pqueue *leaf = pqueue_find(c, queue);
    const struct pqueue *q;
    const struct pgang *rival;
    int r, depth;

    if (!leaf) {
        *kind = PREASON_QUEUE;
        snprintf(why, len, "queue %s does not exist", queue);
        return -1;
    }
    for (q = leaf, depth = 0; q && depth < POLICY_MAX_QUEUE_DEPTH; q = pqueue_parent(c, q), depth++) {
        if (over_limit(q, need, &r)) {
            char l[32], u[32], n[32];

            amount_text(r, q->limit.v[r], l, sizeof(l));
            amount_text(r, used(q, r), u, sizeof(u));
            amount_text(r, need->v[r], n, sizeof(n));
            *kind = PREASON_QUEUE;
            snprintf(why, len, "queue %s: %s limit %s, in use %s, %s needs %s", q->name,
                     policy_resource_name(r), l, u, g && !g->singleton ? "gang" : "pod", n);
            return -1;
        }
    }
    for (q = leaf, depth = 0; q && depth < POLICY_MAX_QUEUE_DEPTH; q = pqueue_parent(c, q), depth++) {
        if (!over_quota(q, need, &r))
            continue;
        rival = waiting_in_quota(c, queue);
        if (rival) {
            *kind = PREASON_OVERQUOTA;
            snprintf(why, len,
                     "queue %s: over its %s quota, and gang %s of queue %s waits within quota",
                     q->name, policy_resource_name(r), rival->key, pgang_queue(c, rival));
            return -1;
        }
        if (!within_fair_share(c, q, r, need->v[r], why, len)) {
            *kind = PREASON_OVERQUOTA;
            return -1;
        }
    }
    return 0;
}
