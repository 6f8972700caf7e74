/* gang.c - a gang: its members, its minimum, its queue, its state and its plan. */
#include <stdio.h>
#include <string.h>

#include "internal.h"

struct pgang *ppod_gang(const struct policy_cluster *c, const struct ppod *p)
{
    return pgang_at(c, p->gang);
}

bool pgang_declared(const struct pgang *g)
{
    return g->declared[POLICY_GANG_WORKLOAD] || g->declared[POLICY_GANG_PODGROUP];
}

/* A PodGroup's minMember, else the workload's count, else every member it has. */
int32_t pgang_min(const struct policy_cluster *c, const struct pgang *g)
{
    for (int s = POLICY_GANG_SOURCES - 1; s >= 0; s--)
        if (g->declared[s] && g->declared_min[s] > 0)
            return g->declared_min[s];
    return g->nmembers > 0 ? (int32_t)g->nmembers : 1;
}

const char *pgang_queue(const struct policy_cluster *c, const struct pgang *g)
{
    const struct ppod *p;

    if (g->queue)
        return g->queue;
    p = g->nmembers ? ppod_at(c, g->members[0]) : NULL;
    return p ? p->queue : c->default_queue;
}

void pgang_counts(const struct policy_cluster *c, const struct pgang *g, int32_t *members,
                  int32_t *bound, int32_t *holding, int32_t *waiting)
{
    int32_t m = 0, b = 0, h = 0, w = 0;

    for (size_t i = 0; i < g->nmembers; i++) {
        const struct ppod *p = ppod_at(c, g->members[i]);

        if (!p)
            continue;
        m++;
        if (p->phase == POLICY_POD_BOUND)
            b++;
        else if (p->phase != POLICY_POD_PENDING)
            h++;
        if (p->phase == POLICY_POD_WAITING)
            w++;
    }
    if (members)
        *members = m;
    if (bound)
        *bound = b;
    if (holding)
        *holding = h;
    if (waiting)
        *waiting = w;
}

/*
 * After members leave a place: a gang holding no place is no longer planned,
 * and one with nothing bound or binding is no longer admitted, so a resumed or
 * re-created RayCluster is placed whole again, not one pod at a time.
 */
void pgang_settle(struct policy_cluster *c, struct pgang *g)
{
    int32_t bound, holding;

    pgang_counts(c, g, NULL, &bound, &holding, NULL);
    if (holding == 0)
        g->planned = false;
    if (bound == 0 && holding == 0)
        g->admitted = false;
}

void pgang_set_reason(struct pgang *g, enum preason_kind kind, const char *text)
{
    g->reason_kind = kind;
    pset_str(&g->reason, text);
}

void pplan_release(struct policy_cluster *c, struct pgang *g)
{
    for (size_t i = 0; i < g->nmembers; i++) {
        struct ppod *p = ppod_at(c, g->members[i]);

        if (p && p->phase == POLICY_POD_PLANNED) {
            puncharge(c, p);
            p->phase = POLICY_POD_PENDING;
        }
    }
    g->planned = false;
}

void pgang_note_bound(struct policy_cluster *c, struct pgang *g)
{
    int32_t bound;

    if (!g)
        return;
    pgang_counts(c, g, NULL, &bound, NULL, NULL);
    if (bound >= pgang_min(c, g)) {
        g->admitted = true;
        g->planned = false;
        pgang_set_reason(g, PREASON_NONE, NULL);
    } else if (!g->admitted && bound > 0) {
        c->maybe_partial = true;
    }
}
