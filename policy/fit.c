/* fit.c - may this pod go to this node: predicates, room, and GPU groups. */
#include <stdio.h>
#include <string.h>

#include "arith.h"
#include "internal.h"

/* A node's check failed: does retrying it help (room may come), or not (its labels, taints,
 * cordon and device memory stay)? The reasons name these checks by the public enum. */
static const bool unresolvable[PFIT_COUNT] = {
    [PFIT_UNSCHEDULABLE_NODE] = true, [PFIT_SELECTOR] = true,
    [PFIT_AFFINITY] = true,           [PFIT_TAINT] = true,
    [PFIT_GPU_MEMORY_UNKNOWN] = true, [PFIT_GPU_MEMORY_TOO_BIG] = true,
};

_Static_assert(PFIT_COUNT == (int)POLICY_CHECKS && PFIT_TAINT == (int)POLICY_CHECK_TAINT &&
                   PFIT_GPU == (int)POLICY_CHECK_GPU &&
                   PFIT_GPU_MEMORY_TOO_BIG == (int)POLICY_CHECK_GPU_MEMORY_TOO_BIG &&
                   PFIT_UNSCHEDULABLE_NODE == (int)POLICY_CHECK_CORDONED &&
                   PFIT_SHARING_PAUSED == (int)POLICY_CHECK_SHARING_PAUSED,
               "enum pfit_why follows enum policy_node_check");

bool pfit_unresolvable(enum pfit_why why)
{
    return unresolvable[why];
}

static const char *label_get(const struct pnode *n, const char *key)
{
    for (size_t i = 0; i < n->nlabels; i++)
        if (strcmp(n->labels[i].key, key) == 0)
            return n->labels[i].value;
    return NULL;
}

static bool req_matches(const struct pnode *n, const struct policy_selector_req *r)
{
    const char *v = label_get(n, r->key);
    bool in = false;

    switch (r->op) {
    case POLICY_SELECT_EXISTS:
        return v != NULL;
    case POLICY_SELECT_DOES_NOT_EXIST:
        return v == NULL;
    case POLICY_SELECT_IN:
    case POLICY_SELECT_NOT_IN:
        for (size_t i = 0; v && i < r->nvalues; i++)
            if (strcmp(r->values[i], v) == 0)
                in = true;
        return r->op == POLICY_SELECT_IN ? in : !in;
    }
    return false;
}

static bool term_matches(const struct pnode *n, const struct policy_selector_term *t)
{
    for (size_t i = 0; i < t->nreqs; i++)
        if (!req_matches(n, &t->reqs[i]))
            return false;
    return true;
}

static bool tolerates(const struct pselector *s, const struct policy_taint *t)
{
    for (size_t i = 0; i < s->ntolerations; i++) {
        const struct policy_toleration *o = &s->tolerations[i];

        if (o->effect >= 0 && o->effect != (int)t->effect)
            continue;
        if (!o->key || !*o->key) {
            if (o->op == POLICY_TOLERATE_EXISTS)
                return true;
            continue;
        }
        if (strcmp(o->key, t->key) != 0)
            continue;
        if (o->op == POLICY_TOLERATE_EXISTS)
            return true;
        if (strcmp(o->value ? o->value : "", t->value ? t->value : "") == 0)
            return true;
    }
    return false;
}

bool pfit_static(const struct pnode *n, const struct ppod *p, enum pfit_why *why)
{
    const struct pselector *s = &p->sel;

    *why = PFIT_OK;
    if (n->unschedulable) {
        *why = PFIT_UNSCHEDULABLE_NODE;
        return false;
    }
    for (size_t i = 0; i < s->nnode_selector; i++) {
        const char *v = label_get(n, s->node_selector[i].key);

        if (!v || strcmp(v, s->node_selector[i].value) != 0) {
            *why = PFIT_SELECTOR;
            return false;
        }
    }
    if (s->naffinity) {
        bool any = false;

        for (size_t i = 0; i < s->naffinity && !any; i++)
            any = term_matches(n, &s->affinity[i]);
        if (!any) {
            *why = PFIT_AFFINITY;
            return false;
        }
    }
    for (size_t i = 0; i < n->ntaints; i++) {
        if (n->taints[i].effect == POLICY_TAINT_PREFER_NO_SCHEDULE)
            continue;
        if (!tolerates(s, &n->taints[i])) {
            *why = PFIT_TAINT;
            return false;
        }
    }
    return true;
}

/*
 * The share a pod takes per device on this node; 0 if it asks none, <0 if it cannot. A
 * gpu-memory ask is its MiB over the device's, rounded up to a milli-device; an ask of a whole
 * device's memory (or within a milli-device of it) takes the whole device, as a share of
 * 1000 nobody else fits beside; more than a device has cannot be placed there.
 */
int32_t pfit_share_on(const struct pnode *n, const struct ppod *p)
{
    int64_t milli;

    if (p->share > 0)
        return p->share;
    if (p->gpu_memory_mib <= 0)
        return 0;
    if (n->gpu_memory_mib <= 0)
        return -PFIT_GPU_MEMORY_UNKNOWN;
    if (p->gpu_memory_mib > n->gpu_memory_mib)
        return -PFIT_GPU_MEMORY_TOO_BIG;
    milli = parith_add(parith_mul(p->gpu_memory_mib, POLICY_GPU_MILLI), n->gpu_memory_mib - 1) /
            n->gpu_memory_mib;
    return (int32_t)(milli < POLICY_GPU_MILLI ? milli : POLICY_GPU_MILLI);
}

bool pfit_resources(const struct pnode *n, const struct ppod *p, enum policy_strategy s,
                    struct pplace *out, enum pfit_why *why)
{
    struct pplace pl = {.node = -1};
    int32_t share = pfit_share_on(n, p);

    if (share < 0) {
        *why = (enum pfit_why)(-share);
        return false;
    }
    if (parith_add(n->cpu_used, p->cpu) > n->cpu) {
        *why = PFIT_CPU;
        return false;
    }
    if (parith_add(n->memory_used, p->memory) > n->memory) {
        *why = PFIT_MEMORY;
        return false;
    }
    if (parith_add(n->pods_used, 1) > n->pods) {
        *why = PFIT_PODS;
        return false;
    }
    if (p->gpus > 0 && pnode_free_devices(n) < p->gpus) {
        *why = PFIT_GPU;
        return false;
    }
    pl.share = share;
    if (share > 0 && !pgroups_pick(n, share, p->devices, s, &pl)) {
        *why =
            n->sharing_paused && pnode_free_devices(n) > 0 ? PFIT_SHARING_PAUSED : PFIT_GPU_SHARE;
        return false;
    }
    *why = PFIT_OK;
    *out = pl;
    return true;
}
