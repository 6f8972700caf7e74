/*
 * preempt.c - preemption keeps gangs whole. A node whose victims include a
 * member of a bound gang stays only if the whole gang may go: every member
 * has a lower priority than the preemptor. Then every bound member is listed.
 */
#include <stdlib.h>
#include <string.h>

#include "internal.h"

static bool gang_may_go(const struct policy_cluster *c, const struct pgang *g, int32_t priority)
{
    for (size_t i = 0; i < g->nmembers; i++) {
        const struct ppod *m = ppod_at(c, g->members[i]);

        if (m && m->priority >= priority)
            return false;
    }
    return true;
}

static int add_victim(char ***out, size_t *n, size_t *cap, const char *key)
{
    for (size_t i = 0; i < *n; i++)
        if (strcmp((*out)[i], key) == 0)
            return POLICY_OK;
    if (*n == *cap) {
        size_t ncap = *cap ? *cap * 2 : 8;
        char **v = realloc(*out, ncap * sizeof(*v));

        if (!v)
            return POLICY_ENOMEM;
        *out = v;
        *cap = ncap;
    }
    (*out)[*n] = pstrdup(key);
    return (*out)[(*n)++] ? POLICY_OK : POLICY_ENOMEM;
}

static void victims_free(char **v, size_t n)
{
    for (size_t i = 0; i < n; i++)
        free(v[i]);
    free(v);
}

/* The victims' node is in the domains the preemptor's gang keeps to (its placed members'). */
static bool in_its_domain(const struct policy_cluster *c, const struct ppod *pre,
                          const char *victim)
{
    const struct pgang *g = ppod_gang(c, pre);
    const struct ppod *v = ppod_at(c, pidx_get(&c->pod_ix, victim));
    const struct pnode *node = v && v->place.node >= 0 ? pnode_at(c, v->place.node) : NULL;
    const char *name, *kept;

    if (!g || g->singleton || !node || !ptopo_constrained(g))
        return true;
    name = node->name;
    return ptopo_within(c, g, pre, &name, 1, false, &kept) == 1;
}

bool policy_preempt_victims(struct policy_cluster *c, const char *ns, const char *name,
                            const char *const *victims, size_t n, char ***out, size_t *nout)
{
    const struct ppod *pre = ppod_find(c, ns, name);
    char **list = NULL;
    size_t k = 0, cap = 0;

    if (!pre)
        return false;
    /* muster is already making room for the preemptor's gang (its victims are leaving):
     * kube-scheduler's preemption would evict a second set for the same room. */
    if (ppod_gang(c, pre) && ppod_gang(c, pre)->awaiting > 0)
        return false;
    if (n > 0 && !in_its_domain(c, pre, victims[0]))
        return false;
    for (size_t i = 0; i < n; i++) {
        const struct ppod *v = ppod_at(c, pidx_get(&c->pod_ix, victims[i]));
        const struct pgang *g = v ? ppod_gang(c, v) : NULL;

        if (!g || g->singleton || pgang_min(c, g) <= 1) {
            if (add_victim(&list, &k, &cap, victims[i]) != POLICY_OK)
                goto drop;
            continue;
        }
        if (g == ppod_gang(c, pre) || !gang_may_go(c, g, pre->priority))
            goto drop;
        for (size_t m = 0; m < g->nmembers; m++) {
            const struct ppod *member = ppod_at(c, g->members[m]);

            if (member && member->phase == POLICY_POD_BOUND &&
                add_victim(&list, &k, &cap, member->key) != POLICY_OK)
                goto drop;
        }
    }
    *out = list;
    *nout = k;
    return true;
drop:
    victims_free(list, k);
    return false;
}
