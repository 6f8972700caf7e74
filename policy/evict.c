/*
 * evict.c - evictions decided by reclaim and preemption, handed to the caller
 * and their outcomes taken back.
 */
#include <stdlib.h>
#include <string.h>

#include "internal.h"

void policy_evictions_free(struct policy_eviction *v, size_t n)
{
    for (size_t i = 0; v && i < n; i++) {
        free(v[i].namespace_);
        free(v[i].name);
        free(v[i].uid);
        free(v[i].gang);
        free(v[i].queue);
        free(v[i].by);
        free(v[i].by_queue);
        free(v[i].reason);
    }
    free(v);
}

int policy_evictions_take(struct policy_cluster *c, struct policy_eviction **out, size_t *n)
{
    (void)c;
    *out = NULL;
    *n = 0;
    return POLICY_OK;
}

int policy_eviction_done(struct policy_cluster *c, const char *ns, const char *name, bool ok,
                         const char *why)
{
    (void)ok;
    (void)why;
    return ppod_find(c, ns, name) ? POLICY_OK : POLICY_ENOENT;
}
