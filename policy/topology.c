/*
 * topology.c - a gang in one topology domain.
 *
 * A Workload-API PodGroup may ask that all of its pods share one value of a
 * node label (spec.schedulingConstraints.topology[0].key, Kubernetes 1.37's
 * TopologyAwareWorkloadScheduling): the gang declares that key, and muster
 * plans its minimum within one domain, the first of the strategy's node order
 * that holds it, or the one its placed members already hold.
 *
 * With that gate, kube-scheduler's gang cycle tries every candidate placement,
 * one per domain (pkg/scheduler/schedule_one_podgroup.go), and calls the
 * extender per pod per placement, offering only that placement's nodes; it
 * keeps the best feasible placement and throws the others away unannounced.
 * A planned member asked about a placement that lacks its plan's domain is
 * answered from the plan, without planning again (ptopo_elsewhere): that
 * placement cannot hold the gang as muster placed it. So the only feasible
 * placement is the plan's, the Bindings that follow land where muster
 * planned, and no discarded placement leaves a reservation behind.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

void ptopo_refresh(struct pgang *g)
{
    const char *key = NULL;

    for (int s = 0; s < POLICY_GANG_SOURCES && !key; s++)
        if (pgang_decl(g, s)->on)
            key = pgang_decl(g, s)->topology;
    if ((key == NULL) == (g->topology == NULL) && (!key || strcmp(key, g->topology) == 0))
        return;
    pset_str(&g->topology, key);
}

const char *ptopo_value(const struct pnode *n, const char *key)
{
    if (!n || !key)
        return NULL;
    for (size_t i = 0; i < n->nlabels; i++)
        if (strcmp(n->labels[i].key, key) == 0)
            return n->labels[i].value;
    return NULL;
}

/* The node a member holds room on or is bound to; NULL: none (or a node muster does not know). */
static const struct pnode *member_node(const struct policy_cluster *c, const struct ppod *p)
{
    if (p->phase == POLICY_POD_PENDING || p->phase == POLICY_POD_EVICTING)
        return NULL;
    if (p->place.node >= 0)
        return pnode_at(c, p->place.node);
    return p->bound_node ? pnode_at(c, pidx_get(&c->node_ix, p->bound_node)) : NULL;
}

const char *ptopo_domain(const struct policy_cluster *c, const struct pgang *g)
{
    if (!g->topology)
        return NULL;
    for (size_t i = 0; i < g->nmembers; i++) {
        const struct ppod *p = ppod_at(c, g->members[i]);
        const char *v = p ? ptopo_value(member_node(c, p), g->topology) : NULL;

        if (v)
            return v;
    }
    return NULL;
}

/* The domains of order's nodes, each once, in the order their first node comes. */
static size_t domains_of(const struct policy_cluster *c, const char *key, const char *pinned,
                         const int32_t *order, size_t norder, const char **out)
{
    size_t n = 0;

    for (size_t i = 0; i < norder; i++) {
        const char *v = ptopo_value(pnode_at(c, order[i]), key);
        bool seen = false;

        if (!v || (pinned && strcmp(v, pinned) != 0))
            continue;
        for (size_t k = n; k-- > 0 && !seen;)
            seen = strcmp(out[k], v) == 0;
        if (!seen)
            out[n++] = v;
    }
    return n;
}

int ptopo_place(struct policy_cluster *c, struct pgang *g, const int32_t *order, size_t norder,
                struct pstatement *st, pplace_fn place, void *ctx, struct preason *why)
{
    const char *pinned, **domains;
    int32_t *sub;
    struct preason attempt;
    bool first = true;
    size_t nd, mark = st->n;

    if (!g->topology)
        return place(c, order, norder, st, why, ctx);
    pinned = ptopo_domain(c, g);
    domains = malloc((norder ? norder : 1) * sizeof(*domains));
    sub = malloc((norder ? norder : 1) * sizeof(*sub));
    if (!domains || !sub) {
        free(domains);
        free(sub);
        return -1;
    }
    nd = domains_of(c, g->topology, pinned, order, norder, domains);
    for (size_t d = 0; d < nd; d++) {
        size_t ns = 0;

        for (size_t i = 0; i < norder; i++) {
            const char *v = ptopo_value(pnode_at(c, order[i]), g->topology);

            if (v && strcmp(v, domains[d]) == 0)
                sub[ns++] = order[i];
        }
        if (place(c, sub, ns, st, why && first ? why : (why ? &attempt : NULL), ctx) == 0) {
            free(domains);
            free(sub);
            return 0;
        }
        pstatement_rollback(c, st, mark);
        if (why && first) {
            /* The first domain's reason is the gang's, said of that domain (its values
             * borrowed from the nodes' labels). */
            why->r.topology = g->topology;
            why->r.domain = domains[d];
        }
        first = false;
    }
    if (why && nd == 0) {
        preason_init(why, POLICY_REASON_NO_DOMAIN, g->key);
        why->r.topology = g->topology;
        why->r.domain = pinned;
    } else if (why && !pinned) {
        why->r.domains = (int32_t)nd;
    }
    free(domains);
    free(sub);
    return -1;
}

bool ptopo_elsewhere(const struct policy_cluster *c, const struct pgang *g, const struct ppod *p,
                     const char *const *cands, size_t n, struct preason *why)
{
    const char *mine = g->topology ? ptopo_value(member_node(c, p), g->topology) : NULL;
    const char *offered = NULL;

    if (!mine)
        return false;
    for (size_t i = 0; i < n; i++) {
        const char *v = ptopo_value(pnode_at(c, pidx_get(&c->node_ix, cands[i])), g->topology);

        if (v && strcmp(v, mine) == 0)
            return false;
        offered = offered ? offered : v;
    }
    preason_init(why, POLICY_REASON_ELSEWHERE, g->key);
    why->r.pod = p->name;
    why->r.topology = g->topology;
    why->r.domain = mine;
    why->r.other = offered;
    return true;
}

size_t ptopo_within(const struct policy_cluster *c, const struct pgang *g, const struct ppod *p,
                    const char *const *cands, size_t n, const char **out)
{
    const char *mine = g->topology ? ptopo_value(member_node(c, p), g->topology) : NULL;
    size_t k = 0;

    if (!mine)
        mine = ptopo_domain(c, g);
    for (size_t i = 0; i < n; i++) {
        const char *v = mine ? ptopo_value(pnode_at(c, pidx_get(&c->node_ix, cands[i])),
                                           g->topology)
                             : NULL;

        if (!mine || (v && strcmp(v, mine) == 0))
            out[k++] = cands[i];
    }
    return k;
}
