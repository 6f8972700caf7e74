/* charge.c - what a placed pod takes from its node, its GPU groups and its queues. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

void ppod_charge_resources(const struct ppod *p, int32_t share, struct policy_resources *out)
{
    out->v[POLICY_RES_CPU] = p->cpu;
    out->v[POLICY_RES_MEMORY] = p->memory;
    out->v[POLICY_RES_GPU] = p->gpus * POLICY_GPU_MILLI + (int64_t)share * p->devices;
}

void pqueue_account(struct policy_cluster *c, struct pqueue *q, const struct policy_resources *r,
                    bool bound, int sign)
{
    for (int depth = 0; q && depth < POLICY_MAX_QUEUE_DEPTH; depth++) {
        struct policy_resources *dst = bound ? &q->allocated : &q->reserved;

        for (int i = 0; i < POLICY_RES_COUNT; i++)
            dst->v[i] += sign * r->v[i];
        q = pqueue_parent(c, q);
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
        struct pqueue *q = ppod_queue(c, p);

        for (int depth = 0; q && depth < POLICY_MAX_QUEUE_DEPTH; depth++) {
            for (int i = 0; i < POLICY_RES_COUNT; i++)
                q->nonpreemptible.v[i] += sign * r.v[i];
            q = pqueue_parent(c, q);
        }
    }
}

void pcharge(struct policy_cluster *c, struct ppod *p, const struct pplace *pl)
{
    struct pnode *n = pnode_at(c, pl->node);

    if (!n)
        return;
    p->place = *pl;
    n->cpu_used += p->cpu;
    n->memory_used += p->memory;
    n->pods_used += 1;
    n->whole_used += p->gpus;
    for (int32_t i = 0; i < pl->ngroups; i++) {
        struct pgroup *g = pgroup_get(n, pl->groups[i]);

        if (g) {
            g->used += pl->share;
            g->pods++;
        }
    }
    ppod_groups_text(n, p);
    pfrag_node_charged(c, pl->node);
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
    n->cpu_used -= p->cpu;
    n->memory_used -= p->memory;
    n->pods_used -= 1;
    n->whole_used -= p->gpus;
    for (int32_t i = 0; i < p->place.ngroups; i++) {
        int32_t gi = pnode_group_find(n, p->place.groups[i]);

        if (gi >= 0) {
            n->groups[gi].used -= p->place.share;
            n->groups[gi].pods--;
        }
    }
    pgroup_drop_empty(n);
    pfrag_node_charged(c, p->place.node);
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
    if (p->place.node >= 0)
        pod_account(c, p, p->phase == POLICY_POD_BOUND, -1);
    p->phase = POLICY_POD_EVICTING;
}

/* An eviction was refused: the pod is bound again and counts in its queues. */
void pcharge_mark_staying(struct policy_cluster *c, struct ppod *p)
{
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
        }
    }
    for (size_t i = 0; i < c->pods.n; i++) {
        struct ppod *p = c->pods.items[i];

        if (p && p->place.node >= 0)
            pod_account(c, p, p->phase == POLICY_POD_BOUND, +1);
    }
}
