/* decode_queue.c - a Queue (muster.dev/v1alpha1, or KAI's shape): quota, limit, weight. */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "kube_internal.h"

/* ---- Queue --------------------------------------------------------------- */

struct kube__queue_resource {
    const char *name;
    enum policy_resource r;
    int64_t scale;
};

static const struct kube__queue_resource kube__queue_resources[] = {
    {"cpu", POLICY_RES_CPU, 1000},
    {"memory", POLICY_RES_MEMORY, 1},
    {"gpu", POLICY_RES_GPU, POLICY_GPU_MILLI},
};

/* quota or limit: a quantity >= 0, or -1 for unlimited. */
static int kube__queue_amount(struct kube__ctx *c, const cJSON *res, const char *key,
                              const struct kube__queue_resource *qr, int64_t *out)
{
    const cJSON *n = kube__get(res, key);
    char what[64];
    int64_t v;
    int rc;

    if (n == NULL || cJSON_IsNull(n))
        return EXT_OK;
    snprintf(what, sizeof(what), "spec.resources.%s.%s", qr->name, key);
    rc = kube__quantity(c, n, qr->scale, what, &v);
    if (rc != EXT_OK)
        return rc;
    if (v == -qr->scale)
        v = -1;
    else if (v < 0)
        return kube__fail(c, EXT_EINVAL, n, "%s: must be -1 (unlimited) or at least 0", what);
    *out = v;
    return EXT_OK;
}

static int kube__queue_resource(struct kube__ctx *c, const cJSON *res,
                                const struct kube__queue_resource *qr, struct policy_queue_spec *s)
{
    const cJSON *w = kube__get(res, "overQuotaWeight");
    char what[64];
    int rc;

    if (res != NULL && !cJSON_IsNull(res) && !cJSON_IsObject(res))
        return kube__fail(c, EXT_EINVAL, res, "spec.resources.%s: must be a mapping", qr->name);
    rc = kube__queue_amount(c, res, "quota", qr, &s->quota.v[qr->r]);
    if (rc == EXT_OK)
        rc = kube__queue_amount(c, res, "limit", qr, &s->limit.v[qr->r]);
    if (rc != EXT_OK || w == NULL || cJSON_IsNull(w))
        return rc;
    /* Weights are ratios; a fractional one rounds up to a whole weight. */
    snprintf(what, sizeof(what), "spec.resources.%s.overQuotaWeight", qr->name);
    rc = kube__quantity(c, w, 1, what, &s->over_quota_weight.v[qr->r]);
    if (rc == EXT_OK && s->over_quota_weight.v[qr->r] < 0)
        return kube__fail(c, EXT_EINVAL, w, "%s: negative", what);
    return rc;
}

int kube_queue_decode(const cJSON *queue, struct ext_arena *a, struct policy_queue_spec *out,
                      char *err, size_t errlen, const cJSON **where)
{
    struct kube__ctx c = {a, err, errlen, where};
    struct policy_queue_spec s = {0};
    const cJSON *spec, *res;
    int64_t prio = 0;
    size_t i;
    int rc;

    rc = kube__meta(&c, queue, "queue", NULL, &s.name);
    if (rc != EXT_OK)
        return rc;
    spec = kube__get(queue, "spec");
    res = kube__get(spec, "resources");
    rc = kube__string(&c, spec, "parentQueue", "spec.parentQueue", KUBE_MAX_NAME, &s.parent);
    if (rc == EXT_OK)
        rc = kube__int64(&c, spec, "priority", "spec.priority", INT32_MIN, INT32_MAX, &prio);
    if (rc != EXT_OK)
        return rc;
    if (s.parent != NULL && *s.parent == '\0')
        s.parent = NULL;
    if (res != NULL && !cJSON_IsNull(res) && !cJSON_IsObject(res))
        return kube__fail(&c, EXT_EINVAL, res, "spec.resources: must be a mapping");
    /* KAI's defaults: no quota, no limit, weight 1. */
    for (i = 0; i < POLICY_RES_COUNT; i++) {
        s.quota.v[i] = 0;
        s.limit.v[i] = -1;
        s.over_quota_weight.v[i] = 1;
    }
    for (i = 0; i < sizeof(kube__queue_resources) / sizeof(kube__queue_resources[0]); i++) {
        const struct kube__queue_resource *qr = &kube__queue_resources[i];

        rc = kube__queue_resource(&c, kube__get(res, qr->name), qr, &s);
        if (rc != EXT_OK)
            return rc;
    }
    s.priority = (int32_t)prio;
    *out = s;
    return EXT_OK;
}
