/*
 * decode_queue.c - a Queue: quota, limit and weight per resource, parent,
 * priority and the minimum runtimes, in the units of its apiVersion.
 *
 * KAI's scheduling.run.ai/v2 (pkg/apis/scheduling/v2/queue_types.go,
 * resources.go) writes float64s: cpu in millicores, memory in MB (10^6 bytes,
 * proportion.go multiplies by 1000*1000), GPUs in devices; a field left out is
 * Go's zero (limit 0 too: nothing of that resource) and priority defaults to
 * 100 (commonconstants.DefaultQueuePriority). muster.dev/v1alpha1 takes
 * Kubernetes quantities ("8", "500m", "32Gi", "0.5") with muster's defaults:
 * limit -1, weight 1, priority 0. In both, -1 is unlimited.
 */
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "kube_internal.h"

/* How one apiVersion writes a Queue. */
struct kube__queue_units {
    const char *api_version; /* exact; NULL: muster's, also when absent */
    const char *unit[POLICY_RES_COUNT];
    int64_t scale[POLICY_RES_COUNT]; /* engine units per written unit */
    bool numbers;                    /* plain numbers (KAI's float64), no suffixes */
    int64_t limit_default, weight_default;
    int32_t priority_default;
};

static const struct kube__queue_units kube__queue_kai = {
    .api_version = "scheduling.run.ai/v2",
    .unit = {"millicores", "MB", "devices"},
    .scale = {1, 1000000, POLICY_GPU_MILLI},
    .numbers = true,
    .limit_default = 0,
    .weight_default = 0,
    .priority_default = 100,
};

static const struct kube__queue_units kube__queue_muster = {
    .api_version = NULL,
    .unit = {"quantity", "quantity", "quantity"},
    .scale = {1000, 1, POLICY_GPU_MILLI},
    .numbers = false,
    .limit_default = -1,
    .weight_default = 1,
    .priority_default = 0,
};

static const char *const kube__queue_resource_names[POLICY_RES_COUNT] = {"cpu", "memory", "gpu"};

/* One decode of one Queue: the object's name goes in front of every complaint. */
struct kube__queue_ctx {
    struct kube__ctx c;
    const char *name;
    const struct kube__queue_units *u;
};

static int kube__queue_fail(struct kube__queue_ctx *q, const cJSON *where, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static int kube__queue_fail(struct kube__queue_ctx *q, const cJSON *where, const char *fmt, ...)
{
    char why[384];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(why, sizeof(why), fmt, ap);
    va_end(ap);
    return kube__fail(&q->c, EXT_EINVAL, where, "Queue %.253s: %s", q->name, why);
}

/* KAI's float64: a JSON number, or a string that is one whole number (no suffix). */
static bool kube__plain_number(const cJSON *n, char *buf, size_t len)
{
    const char *text;
    char *end;
    double d;

    if (cJSON_IsNumber(n)) {
        snprintf(buf, len, "%.15g", n->valuedouble);
        return isfinite(n->valuedouble);
    }
    if (!cJSON_IsString(n) || strlen(n->valuestring) >= len)
        return false;
    text = n->valuestring;
    d = strtod(text, &end);
    if (end == text || *end != '\0' || !isfinite(d) || strpbrk(text, "xXpPnNiI") != NULL)
        return false;
    snprintf(buf, len, "%s", text);
    return true;
}

/* A number of the Queue's units at scale, into *out; "-1" is -scale. */
static int kube__queue_number(struct kube__queue_ctx *q, const cJSON *n, int64_t scale,
                              const char *what, const char *unit, int64_t *out)
{
    char text[64];
    int rc;

    if (!q->u->numbers) {
        rc = kube__quantity(&q->c, n, scale, what, out);
        if (rc != EXT_OK)
            return kube__queue_fail(q, n, "%s", q->c.err != NULL ? q->c.err : what);
        return EXT_OK;
    }
    if (!kube__plain_number(n, text, sizeof(text)))
        return kube__queue_fail(q, n, "%s: must be a number (%s)", what, unit);
    rc = kube_quantity_parse(text, scale, out);
    if (rc == EXT_ETOOBIG)
        return kube__queue_fail(q, n, "%s: %s %s overflows", what, text, unit);
    if (rc != EXT_OK)
        return kube__queue_fail(q, n, "%s: \"%.64s\" is not a number", what, text);
    return EXT_OK;
}

/* quota or limit: at least 0, or -1 for unlimited. */
static int kube__queue_amount(struct kube__queue_ctx *q, const cJSON *res, const char *key,
                              enum policy_resource r, int64_t *out)
{
    const cJSON *n = kube__get(res, key);
    char what[64];
    int64_t v;
    int rc;

    if (n == NULL || cJSON_IsNull(n))
        return EXT_OK;
    snprintf(what, sizeof(what), "spec.resources.%s.%s", kube__queue_resource_names[r], key);
    rc = kube__queue_number(q, n, q->u->scale[r], what, q->u->unit[r], &v);
    if (rc != EXT_OK)
        return rc;
    if (v == -q->u->scale[r])
        v = -1;
    else if (v < 0)
        return kube__queue_fail(q, n, "%s: must be -1 (unlimited) or at least 0", what);
    *out = v;
    return EXT_OK;
}

/* A weight is a ratio, kept in thousandths so KAI's 0.5 against 1 stays 1:2; capped at the
 * engine's. */
static int kube__queue_weight(struct kube__queue_ctx *q, const cJSON *res, enum policy_resource r,
                              int64_t *out)
{
    const cJSON *w = kube__get(res, "overQuotaWeight");
    char what[64];
    int64_t v;
    int rc;

    if (w == NULL || cJSON_IsNull(w))
        return EXT_OK;
    snprintf(what, sizeof(what), "spec.resources.%s.overQuotaWeight",
             kube__queue_resource_names[r]);
    rc = kube__queue_number(q, w, 1000, what, "a ratio", &v);
    if (rc != EXT_OK)
        return rc;
    if (v < 0)
        return kube__queue_fail(q, w, "%s: negative", what);
    *out = v > POLICY_MAX_WEIGHT ? POLICY_MAX_WEIGHT : v;
    return EXT_OK;
}

static int kube__queue_resource(struct kube__queue_ctx *q, const cJSON *res, enum policy_resource r,
                                struct policy_queue_spec *s)
{
    int rc;

    if (res != NULL && !cJSON_IsNull(res) && !cJSON_IsObject(res))
        return kube__queue_fail(q, res, "spec.resources.%s: must be a mapping",
                                kube__queue_resource_names[r]);
    rc = kube__queue_amount(q, res, "quota", r, &s->quota.v[r]);
    if (rc == EXT_OK)
        rc = kube__queue_amount(q, res, "limit", r, &s->limit.v[r]);
    if (rc == EXT_OK)
        rc = kube__queue_weight(q, res, r, &s->over_quota_weight.v[r]);
    return rc;
}

/* A Go duration (metav1.Duration: "10m", "1h30m", "90s") in milliseconds; absent: 0. */
static int kube__queue_duration(struct kube__queue_ctx *q, const cJSON *spec, const char *key,
                                int64_t *ms)
{
    const cJSON *n = kube__get(spec, key);
    int rc;

    *ms = 0;
    if (n == NULL || cJSON_IsNull(n))
        return EXT_OK;
    if (!cJSON_IsString(n))
        return kube__queue_fail(q, n, "spec.%s: must be a duration such as \"10m\"", key);
    rc = cfg_duration_parse(n->valuestring, ms);
    if (rc != CFG_OK || *ms < 0)
        return kube__queue_fail(q, n,
                                "spec.%s: \"%.64s\" is not a duration in whole milliseconds "
                                "(e.g. 90s, 10m, 1h30m)",
                                key, n->valuestring);
    return EXT_OK;
}

/* The units of the Queue's apiVersion, or NULL for one muster does not read. */
static const struct kube__queue_units *kube__queue_units_of(const cJSON *queue, const char **api)
{
    *api = kube__map_value(queue, "apiVersion");
    if (*api == NULL || strncmp(*api, "muster.dev/", strlen("muster.dev/")) == 0)
        return &kube__queue_muster;
    if (strcmp(*api, kube__queue_kai.api_version) == 0)
        return &kube__queue_kai;
    return NULL;
}

static int kube__queue_spec(struct kube__queue_ctx *q, const cJSON *spec,
                            struct policy_queue_spec *s)
{
    const cJSON *res = kube__get(spec, "resources");
    int64_t prio = q->u->priority_default;
    int rc;

    if (spec != NULL && !cJSON_IsNull(spec) && !cJSON_IsObject(spec))
        return kube__queue_fail(q, spec, "spec: must be a mapping");
    rc = kube__string(&q->c, spec, "parentQueue", "spec.parentQueue", KUBE_MAX_NAME, &s->parent);
    if (rc == EXT_OK)
        rc = kube__int64(&q->c, spec, "priority", "spec.priority", INT32_MIN, INT32_MAX, &prio);
    if (rc != EXT_OK)
        return kube__queue_fail(q, *q->c.where, "%s", q->c.err);
    if (s->parent != NULL && *s->parent == '\0')
        s->parent = NULL;
    s->priority = (int32_t)prio;
    if (res != NULL && !cJSON_IsNull(res) && !cJSON_IsObject(res))
        return kube__queue_fail(q, res, "spec.resources: must be a mapping");
    for (int r = 0; r < POLICY_RES_COUNT; r++) {
        s->quota.v[r] = 0;
        s->limit.v[r] = q->u->limit_default;
        s->over_quota_weight.v[r] = q->u->weight_default * 1000;
        rc = kube__queue_resource(q, kube__get(res, kube__queue_resource_names[r]), r, s);
        if (rc != EXT_OK)
            return rc;
    }
    rc = kube__queue_duration(q, spec, "reclaimMinRuntime", &s->reclaim_min_runtime_ms);
    if (rc == EXT_OK)
        rc = kube__queue_duration(q, spec, "preemptMinRuntime", &s->preempt_min_runtime_ms);
    if (rc == EXT_OK &&
        kube__bool(&q->c, spec, "upgradeBurst", "spec.upgradeBurst", &s->upgrade_burst) != EXT_OK)
        rc = kube__queue_fail(q, *q->c.where, "%s", q->c.err);
    return rc;
}

int kube_queue_decode(const cJSON *queue, struct ext_arena *a, struct policy_queue_spec *out,
                      char *err, size_t errlen, const cJSON **where)
{
    char own[384];
    const cJSON *at = NULL;
    struct kube__queue_ctx q = {{a, own, sizeof(own), &at}, NULL, NULL};
    struct policy_queue_spec s = {0};
    struct kube__ctx outer = {a, err, errlen, where};
    const char *api;
    int rc;

    rc = kube__meta(&q.c, queue, "Queue", NULL, &q.name);
    if (rc != EXT_OK)
        return kube__fail(&outer, rc, at, "Queue: %s", own);
    s.name = q.name;
    q.u = kube__queue_units_of(queue, &api);
    if (q.u == NULL)
        return kube__fail(&outer, EXT_EINVAL, kube__get(queue, "apiVersion"),
                          "Queue %.253s: apiVersion %.64s: want muster.dev/v1alpha1 or "
                          "scheduling.run.ai/v2",
                          q.name, api);
    rc = kube__queue_spec(&q, kube__get(queue, "spec"), &s);
    if (rc != EXT_OK)
        return kube__fail(&outer, rc, at, "%s", own);
    *out = s;
    return EXT_OK;
}

/* ---- fair over time, in the status ------------------------------------------------------- */

bool kube_queue_recent_usage(const cJSON *queue, double share[POLICY_RES_COUNT],
                             int64_t *at_unix_ms)
{
    const cJSON *status = kube__get(queue, "status");
    const cJSON *usage = kube__get(status, "recentUsage");
    const cJSON *at = kube__get(status, "recentUsageAt");
    double v[POLICY_RES_COUNT];
    int64_t us;

    if (!cJSON_IsObject(usage) || !cJSON_IsString(at) || (us = ext_time_us(at->valuestring)) < 0)
        return false;
    for (int r = 0; r < POLICY_RES_COUNT; r++) {
        const cJSON *n = kube__get(usage, policy_resource_name(r));

        if (n == NULL) {
            v[r] = 0;
            continue;
        }
        if (!cJSON_IsNumber(n) || !(n->valuedouble >= 0 && n->valuedouble <= 10))
            return false;
        v[r] = n->valuedouble;
    }
    memcpy(share, v, sizeof(v));
    *at_unix_ms = us / 1000;
    return true;
}

cJSON *kube_recent_usage_json(const struct policy_resources *usage)
{
    cJSON *o = cJSON_CreateObject();

    for (int r = 0; o && r < POLICY_RES_COUNT; r++)
        cJSON_AddNumberToObject(o, policy_resource_name(r),
                                round((double)usage->v[r] / (double)(POLICY_USAGE_UNIT / 10000)) /
                                    10000.0);
    return o;
}
