/* engine_fault.c - the wrapped engine calls of engine_fault.h. */
#include <stdatomic.h>

#include "engine_fault.h"

int __real_policy_node_upsert(struct policy_cluster *c, const struct policy_node_spec *s);
int __real_policy_pod_upsert(struct policy_cluster *c, const struct policy_pod_spec *s,
                             int64_t now);
int __real_policy_bind(struct policy_cluster *c, const char *ns, const char *name,
                       const char *node, int64_t now, struct policy_bind_result *out);
int __wrap_policy_node_upsert(struct policy_cluster *c, const struct policy_node_spec *s);
int __wrap_policy_pod_upsert(struct policy_cluster *c, const struct policy_pod_spec *s,
                             int64_t now);
int __wrap_policy_bind(struct policy_cluster *c, const char *ns, const char *name,
                       const char *node, int64_t now, struct policy_bind_result *out);

static atomic_int armed[ENGINE_FAULT_CALLS]; /* the next call's failure; POLICY_OK: none */

void engine_fault_arm(enum engine_fault_call call, int rc)
{
    atomic_store(&armed[call], rc);
}

static int take(enum engine_fault_call call)
{
    return atomic_exchange(&armed[call], POLICY_OK);
}

int __wrap_policy_node_upsert(struct policy_cluster *c, const struct policy_node_spec *s)
{
    int rc = take(ENGINE_FAULT_NODE_UPSERT);

    return rc != POLICY_OK ? rc : __real_policy_node_upsert(c, s);
}

int __wrap_policy_pod_upsert(struct policy_cluster *c, const struct policy_pod_spec *s,
                             int64_t now)
{
    int rc = take(ENGINE_FAULT_POD_UPSERT);

    return rc != POLICY_OK ? rc : __real_policy_pod_upsert(c, s, now);
}

int __wrap_policy_bind(struct policy_cluster *c, const char *ns, const char *name,
                       const char *node, int64_t now, struct policy_bind_result *out)
{
    int rc = take(ENGINE_FAULT_BIND);

    if (rc == POLICY_OK)
        return __real_policy_bind(c, ns, name, node, now, out);
    *out = (struct policy_bind_result){0}; /* what the engine leaves on failure: nothing */
    return rc;
}
