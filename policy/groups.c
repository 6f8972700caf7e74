/*
 * groups.c - a node's GPU groups: one shared physical device each. Finding
 * them, choosing which a share goes to (binpack or spread), opening and
 * dropping them, and the "g0,g3" text pods carry.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "arith.h"
#include "internal.h"

int32_t pnode_group_find(const struct pnode *n, int32_t id)
{
    for (size_t i = 0; i < n->ngroups; i++)
        if (n->groups[i].id == id)
            return (int32_t)i;
    return -1;
}

struct pgroup *pgroup_get(struct pnode *n, int32_t id)
{
    int32_t i = pnode_group_find(n, id);

    if (i >= 0)
        return &n->groups[i];
    if (n->ngroups == n->groups_cap) {
        size_t cap = n->groups_cap ? n->groups_cap * 2 : 8;
        struct pgroup *g = realloc(n->groups, cap * sizeof(*g));

        if (!g)
            return NULL;
        n->groups = g;
        n->groups_cap = cap;
    }
    n->groups[n->ngroups] = (struct pgroup){.id = id};
    return &n->groups[n->ngroups++];
}

void pgroup_drop_empty(struct pnode *n)
{
    size_t j = 0;

    for (size_t i = 0; i < n->ngroups; i++)
        if (n->groups[i].pods > 0)
            n->groups[j++] = n->groups[i];
    n->ngroups = j;
}

/* Kept on the heap, and only while the pod holds groups: most pods never do. */
void ppod_groups_text(const struct pnode *n, struct ppod *p)
{
    char text[POLICY_MAX_DEVICES * 12];
    size_t off = 0;

    text[0] = '\0';
    for (int32_t i = 0; i < p->place.ngroups; i++)
        off += (size_t)snprintf(text + off, sizeof(text) - off, "%sg%d", i ? "," : "",
                                p->place.groups[i]);
    pset_str(&p->groups_text, p->place.ngroups ? text : NULL);
    (void)n;
}

int64_t pnode_free_devices(const struct pnode *n)
{
    return parith_sub(parith_sub(n->gpus, n->whole_used), (int64_t)n->ngroups);
}

/*
 * Pick `devices` distinct GPU groups for a share. binpack: the group with the
 * least free share that still fits, a new group only when none fits. spread:
 * a new group first, else the group with the most free share. (fragmentation
 * starts from binpack's choice and prices the others: frag.c.)
 */
bool pgroups_pick(const struct pnode *n, int32_t share, int32_t devices, enum policy_strategy s,
                  struct pplace *out)
{
    int64_t fresh = n->sharing_paused ? 0 : pnode_free_devices(n);
    int32_t next_new = 0;

    out->ngroups = 0;
    for (int32_t d = 0; d < devices; d++) {
        int32_t best = -1;

        for (size_t i = 0; i < n->ngroups; i++) {
            const struct pgroup *g = &n->groups[i];
            bool taken = false;

            if (g->used + share > POLICY_GPU_MILLI)
                continue;
            for (int32_t k = 0; k < out->ngroups; k++)
                taken |= out->groups[k] == g->id;
            if (taken)
                continue;
            if (best < 0 || (s != POLICY_SPREAD ? g->used > n->groups[best].used
                                                : g->used < n->groups[best].used))
                best = (int32_t)i;
        }
        if (best >= 0 && !(s == POLICY_SPREAD && fresh > 0)) {
            out->groups[out->ngroups++] = n->groups[best].id;
            continue;
        }
        if (fresh <= 0)
            return false;
        /* A new group: the lowest id not in use on this node nor picked. */
        for (;; next_new++) {
            bool used = pnode_group_find(n, next_new) >= 0;

            for (int32_t k = 0; k < out->ngroups; k++)
                used |= out->groups[k] == next_new;
            if (!used)
                break;
        }
        out->groups[out->ngroups++] = next_new++;
        fresh--;
    }
    return true;
}

/* Groups named in "g0,g3", as the pod's annotation carries them. */
int32_t pgroups_parse(const char *text, int32_t *out, int32_t max)
{
    int32_t n = 0;

    while (text && *text && n < max) {
        char *end;
        long v;

        if (*text == 'g')
            text++;
        v = strtol(text, &end, 10);
        if (end == text || v < 0 || v > 1000000)
            return -1;
        out[n++] = (int32_t)v;
        text = *end == ',' ? end + 1 : end;
        if (*end && *end != ',')
            return -1;
    }
    return n;
}
