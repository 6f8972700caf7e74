/*
 * expire.c - every deadline of the engine in one place: a gang's plan is kept
 * for planTTL after it was made or last used, and GPU sharing paused on a node
 * resumes at its time.
 */
#include <stdio.h>

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

void policy_expire(struct policy_cluster *c, int64_t now)
{
    for (size_t i = 0; c->paused_nodes > 0 && i < c->nodes.n; i++) {
        struct pnode *n = c->nodes.items[i];

        if (n && n->sharing_paused && now >= n->sharing_paused_until) {
            n->sharing_paused = false;
            c->paused_nodes--;
        }
    }
    for (size_t i = 0; i < c->gangs.n; i++) {
        struct pgang *g = c->gangs.items[i];
        int32_t holding, waiting, bound;
        bool binding = false;

        if (!g || now <= g->deadline || g->awaiting > 0)
            continue;
        pgang_counts(c, g, NULL, &bound, &holding, &waiting);
        if (holding == 0) {
            pgang_settle(c, g);
            continue;
        }
        for (size_t m = 0; m < g->nmembers; m++) {
            const struct ppod *p = ppod_at(c, g->members[m]);

            binding |= p && p->phase == POLICY_POD_BINDING;
        }
        if (waiting > 0 || binding)
            continue;
        pplan_release(c, g);
        if (!g->admitted)
            pgang_set_reason(g, PREASON_CAPACITY,
                             "its plan expired before kube-scheduler bound it; planning again");
    }
}

/* The gang's plan is in use now: keep it for another planTTL. */
void pgang_plan_renew(struct policy_cluster *c, struct pgang *g, int64_t now)
{
    if (g->deadline < now + c->opts.plan_ttl_ms)
        g->deadline = now + c->opts.plan_ttl_ms;
}
