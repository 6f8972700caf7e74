/*
 * kube_raycluster.c - gang sizes from RayClusters and PodGroups.
 *
 * The numbers follow KubeRay's utils/util.go so that muster waits for
 * exactly the pods the operator will create: the CRD defaults (replicas 0,
 * minReplicas 0, maxReplicas MaxInt32, numOfHosts 1) apply when a field is
 * absent, minReplicas > maxReplicas yields maxReplicas, and a suspended
 * group counts 0.
 */
#include <stdio.h>
#include <string.h>

#include "base.h"
#include "kube.h"
#include "kube_internal.h"

int kube_worker_group_replicas(const cJSON *group, bool autoscaling, int32_t *desired,
                               int32_t *gang_min, char *err, size_t errlen, const cJSON **where)
{
    struct kube__ctx c = {NULL, err, errlen, where};
    int64_t replicas = 0, min = 0, max = INT32_MAX, hosts = 1, d;
    bool suspend = false;
    int rc;

    if (!cJSON_IsObject(group))
        return kube__fail(&c, EXT_EINVAL, group, "workerGroupSpecs: an item is not a mapping");
    rc = kube__int64(&c, group, "replicas", "replicas", 0, INT32_MAX, &replicas);
    if (rc == EXT_OK)
        rc = kube__int64(&c, group, "minReplicas", "minReplicas", 0, INT32_MAX, &min);
    if (rc == EXT_OK)
        rc = kube__int64(&c, group, "maxReplicas", "maxReplicas", 0, INT32_MAX, &max);
    if (rc == EXT_OK)
        rc = kube__int64(&c, group, "numOfHosts", "numOfHosts", 1, INT32_MAX, &hosts);
    if (rc == EXT_OK)
        rc = kube__bool(&c, group, "suspend", "suspend", &suspend);
    if (rc != EXT_OK)
        return rc;
    if (suspend) {
        *desired = 0;
        *gang_min = 0;
        return EXT_OK;
    }
    if (min > max)
        d = max;
    else if (replicas < min)
        d = min;
    else if (replicas > max)
        d = max;
    else
        d = replicas;
    /* The clamp keeps both below 2^31, their product below 2^62. */
    if (d * hosts > INT32_MAX || min * hosts > INT32_MAX)
        return kube__fail(&c, EXT_EINVAL, group,
                          "workerGroupSpecs: replicas x numOfHosts "
                          "overflows");
    *desired = (int32_t)(d * hosts);
    *gang_min = autoscaling ? (int32_t)(min * hosts) : *desired;
    return EXT_OK;
}

static int kube__raycluster_min(struct kube__ctx *c, const cJSON *spec, int32_t *min)
{
    const cJSON *groups = kube__get(spec, "workerGroupSpecs"), *g;
    bool autoscaling = false;
    int64_t total = 1; /* the head */
    int32_t desired, part;
    int rc;

    rc = kube__bool(c, spec, "enableInTreeAutoscaling", "spec.enableInTreeAutoscaling",
                    &autoscaling);
    if (rc != EXT_OK)
        return rc;
    if (groups != NULL && !cJSON_IsNull(groups) && !cJSON_IsArray(groups))
        return kube__fail(c, EXT_EINVAL, groups, "spec.workerGroupSpecs: must be a list");
    if (cJSON_GetArraySize(groups) > KUBE_MAX_GROUPS)
        return kube__fail(c, EXT_EINVAL, groups, "spec.workerGroupSpecs: over the cap of %d",
                          KUBE_MAX_GROUPS);
    cJSON_ArrayForEach(g, groups)
    {
        rc = kube_worker_group_replicas(g, autoscaling, &desired, &part, c->err, c->errlen,
                                        c->where);
        if (rc != EXT_OK)
            return rc;
        total += part;
        if (total > INT32_MAX)
            return kube__fail(c, EXT_EINVAL, groups, "spec.workerGroupSpecs: gang overflows");
    }
    *min = (int32_t)total;
    return EXT_OK;
}

int kube_raycluster_gang(const cJSON *rc_obj, const struct kube_decode_opts *o, struct ext_arena *a,
                         struct policy_gang_spec *out, char *err, size_t errlen,
                         const cJSON **where)
{
    struct kube__ctx c = {a, err, errlen, where};
    struct policy_gang_spec s = {0};
    const char *ns, *name;
    int rc;

    if (o == NULL)
        o = &kube_decode_defaults;
    rc = kube__meta(&c, rc_obj, "RayCluster", &ns, &name);
    if (rc == EXT_OK)
        rc = kube__raycluster_min(&c, kube__get(rc_obj, "spec"), &s.min_members);
    if (rc != EXT_OK)
        return rc;
    s.key = kube__key(a, ns, name);
    if (s.key == NULL)
        return kube__fail(&c, EXT_ENOMEM, rc_obj, "out of memory");
    s.queue = kube__queue_label(kube__get(kube__get(rc_obj, "metadata"), "labels"), o);
    *out = s;
    return EXT_OK;
}

/* The RayCluster that owns a PodGroup, or NULL. */
static const char *kube__owner_raycluster(const cJSON *meta)
{
    const cJSON *e;

    cJSON_ArrayForEach(e, kube__get(meta, "ownerReferences"))
    {
        const char *kind = kube__map_value(e, "kind");
        const char *name = kube__map_value(e, "name");

        if (kind != NULL && strcmp(kind, "RayCluster") == 0 && name != NULL && *name != '\0' &&
            strlen(name) <= KUBE_MAX_NAME)
            return name;
    }
    return NULL;
}

int kube_podgroup_gang(const cJSON *pg, const struct kube_decode_opts *o, struct ext_arena *a,
                       struct policy_gang_spec *out, char *err, size_t errlen, const cJSON **where)
{
    struct kube__ctx c = {a, err, errlen, where};
    struct policy_gang_spec s = {0};
    const cJSON *meta = kube__get(pg, "metadata"), *spec = kube__get(pg, "spec");
    const char *ns, *name, *owner, *queue = NULL;
    int64_t min = 1;
    int rc;

    if (o == NULL)
        o = &kube_decode_defaults;
    rc = kube__meta(&c, pg, "PodGroup", &ns, &name);
    if (rc == EXT_OK)
        rc = kube__int64(&c, spec, "minMember", "spec.minMember", 0, INT32_MAX, &min);
    if (rc == EXT_OK)
        rc = kube__string(&c, spec, "queue", "spec.queue", KUBE_MAX_NAME, &queue);
    if (rc != EXT_OK)
        return rc;
    /* KubeRay names a Volcano group ray-<cluster>-pg but labels its pods with
     * the cluster: key the gang by the cluster so pods and group meet. */
    owner = kube__owner_raycluster(meta);
    s.key = kube__key(a, ns, owner != NULL ? owner : name);
    if (s.key == NULL)
        return kube__fail(&c, EXT_ENOMEM, pg, "out of memory");
    s.min_members = (int32_t)min;
    s.source = POLICY_GANG_PODGROUP;
    s.queue = kube__queue_label(kube__get(meta, "labels"), o);
    if (s.queue == NULL && queue != NULL && *queue != '\0')
        s.queue = queue;
    *out = s;
    return EXT_OK;
}
