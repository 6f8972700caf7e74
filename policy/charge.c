/* charge.c - what a placed pod takes from its node, its GPU groups and its queues. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "arith.h"
#include "internal.h"

void ppod_charge_resources(const struct ppod *p, int32_t share, struct policy_resources *out)
{
    out->v[POLICY_RES_CPU] = p->cpu;
    out->v[POLICY_RES_MEMORY] = p->memory;
    out->v[POLICY_RES_GPU] = parith_add(parith_mul(p->gpus, POLICY_GPU_MILLI),
                                        parith_mul(share, p->devices));
}

int32_t ppod_share_asked(const struct policy_cluster *c, const struct ppod *p)
{
    struct policy_cluster *m = (struct policy_cluster *)c;

    if (p->share > 0 || p->gpu_memory_mib <= 0)
        return p->share;
    if (m->gpu_mib_epoch != c->nodes_epoch + 1) {
        m->gpu_mib_max = 0;
        for (size_t i = 0; i < c->nodes.n; i++) {
            const struct pnode *n = c->nodes.items[i];

            if (n && n->gpu_memory_mib > m->gpu_mib_max)
                m->gpu_mib_max = n->gpu_memory_mib;
        }
        m->gpu_mib_epoch = c->nodes_epoch + 1;
    }
    if (c->gpu_mib_max <= 0 || p->gpu_memory_mib >= c->gpu_mib_max)
        return POLICY_GPU_MILLI;
    return (int32_t)((p->gpu_memory_mib * POLICY_GPU_MILLI + c->gpu_mib_max - 1) / c->gpu_mib_max);
}

/* Add sign * r to an exact sum and its saturated counter. */
static void sums_add(__int128 *exact, struct policy_resources *counter,
                     const struct policy_resources *r, int sign)
{
    for (int i = 0; i < POLICY_RES_COUNT; i++) {
        exact[i] += (__int128)sign * r->v[i];
        counter->v[i] = parith_sat(exact[i]);
    }
}

/*
 * The queue and its ancestors, each once: Queues that name each other as
 * parents (a cycle in the cluster's objects) must not count a pod twice.
 */
static int queue_chain(struct policy_cluster *c, struct pqueue *q,
                       struct pqueue *chain[POLICY_MAX_QUEUE_DEPTH])
{
    int n = 0;

    while (q && n < POLICY_MAX_QUEUE_DEPTH) {
        for (int i = 0; i < n; i++)
            if (chain[i] == q)
                return n;
        chain[n++] = q;
        q = pqueue_parent(c, q);
    }
    return n;
}

void pqueue_account(struct policy_cluster *c, struct pqueue *q, const struct policy_resources *r,
                    bool bound, int sign)
{
    struct pqueue *chain[POLICY_MAX_QUEUE_DEPTH];
    int n = queue_chain(c, q, chain);

    for (int i = 0; i < n; i++) {
        if (bound)
            sums_add(chain[i]->allocated_exact, &chain[i]->allocated, r, sign);
        else
            sums_add(chain[i]->reserved_exact, &chain[i]->reserved, r, sign);
    }
}

/* A pod's part in its queues: managed, not leaving, in phase `bound` or not. */
static void pod_account(struct policy_cluster *c, struct ppod *p, bool bound, int sign)
{
    const struct pgang *g = ppod_gang(c, p);
    struct policy_resources r;

    if (!p->managed || p->phase == POLICY_POD_EVICTING)
        return;
    ppod_charge_resources(p, p->place.share, &r);
    pqueue_account(c, ppod_queue(c, p), &r, bound, sign);
    if (g && !g->preemptible) {
        struct pqueue *chain[POLICY_MAX_QUEUE_DEPTH];
        int n = queue_chain(c, ppod_queue(c, p), chain);

        for (int i = 0; i < n; i++)
            sums_add(chain[i]->nonpreemptible_exact, &chain[i]->nonpreemptible, &r, sign);
    }
}

/* What a pod takes from its node's cpu, memory, pods and whole devices, exactly. */
static void node_add(struct pnode *n, const struct ppod *p, int sign)
{
    n->cpu_exact += (__int128)sign * p->cpu;
    n->memory_exact += (__int128)sign * p->memory;
    n->pods_exact += sign;
    n->whole_exact += (__int128)sign * p->gpus;
    n->cpu_used = parith_sat(n->cpu_exact);
    n->memory_used = parith_sat(n->memory_exact);
    n->pods_used = parith_sat(n->pods_exact);
    n->whole_used = parith_sat(n->whole_exact);
}

void pcharge(struct policy_cluster *c, struct ppod *p, const struct pplace *pl)
{
    struct pnode *n = pnode_at(c, pl->node);

    if (!n)
        return;
    p->place = *pl;
    c->charge_epoch++;
    node_add(n, p, +1);
    for (int32_t i = 0; i < pl->ngroups; i++) {
        struct pgroup *g = pgroup_get(n, pl->groups[i]);

        if (g) {
            g->used += pl->share;
            g->pods++;
        }
    }
    ppod_groups_text(n, p);
    pfrag_node_charged(c, pl->node);
    pnode_order_touch(c, pl->node);
    pod_account(c, p, p->phase == POLICY_POD_BOUND, +1);
    if (!p->managed)
        c->fair_dirty = true; /* what other schedulers hold is not capacity */
}

void puncharge(struct policy_cluster *c, struct ppod *p)
{
    struct pnode *n = pnode_at(c, p->place.node);

    if (!n) {
        p->place = (struct pplace){.node = -1};
        return;
    }
    c->room_epoch++;
    node_add(n, p, -1);
    for (int32_t i = 0; i < p->place.ngroups; i++) {
        int32_t gi = pnode_group_find(n, p->place.groups[i]);

        if (gi >= 0) {
            n->groups[gi].used -= p->place.share;
            n->groups[gi].pods--;
        }
    }
    pgroup_drop_empty(n);
    pfrag_node_charged(c, p->place.node);
    pnode_order_touch(c, p->place.node);
    pod_account(c, p, p->phase == POLICY_POD_BOUND, -1);
    if (!p->managed)
        c->fair_dirty = true;
    p->place = (struct pplace){.node = -1};
    pset_str(&p->groups_text, NULL);
}

void pcharge_mark_bound(struct policy_cluster *c, struct ppod *p, bool bound)
{
    bool was = p->phase == POLICY_POD_BOUND;

    if (was == bound || p->place.node < 0)
        return;
    pod_account(c, p, was, -1);
    pod_account(c, p, bound, +1);
}

/* The pod leaves its queues but keeps its node: it is being evicted. */
void pcharge_mark_evicting(struct policy_cluster *c, struct ppod *p)
{
    c->charge_epoch++;
    if (p->place.node >= 0)
        pod_account(c, p, p->phase == POLICY_POD_BOUND, -1);
    p->phase = POLICY_POD_EVICTING;
}

/* An eviction was refused: the pod is bound again and counts in its queues. */
void pcharge_mark_staying(struct policy_cluster *c, struct ppod *p)
{
    c->charge_epoch++;
    p->phase = POLICY_POD_BOUND;
    if (p->place.node >= 0)
        pod_account(c, p, true, +1);
}

/* Usage is rolled up along parents; when the tree changes, count it again. */
void pqueue_recount(struct policy_cluster *c)
{
    for (size_t i = 0; i < c->queues.n; i++) {
        struct pqueue *q = c->queues.items[i];

        if (q) {
            memset(&q->allocated, 0, sizeof(q->allocated));
            memset(&q->reserved, 0, sizeof(q->reserved));
            memset(&q->nonpreemptible, 0, sizeof(q->nonpreemptible));
            memset(q->allocated_exact, 0, sizeof(q->allocated_exact));
            memset(q->reserved_exact, 0, sizeof(q->reserved_exact));
            memset(q->nonpreemptible_exact, 0, sizeof(q->nonpreemptible_exact));
        }
    }
    for (size_t i = 0; i < c->pods.n; i++) {
        struct ppod *p = c->pods.items[i];

        if (p && p->place.node >= 0)
            pod_account(c, p, p->phase == POLICY_POD_BOUND, +1);
    }
}
