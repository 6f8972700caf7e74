/*
 * queue.c - a Queue object as both commands show it: its spec through the
 * decoder muster itself uses, its status as muster wrote it (allocated,
 * reserved, pendingGangs, and fairShare where muster writes one).
 */
#include <stdio.h>
#include <string.h>

#include "cli_int.h"

/* status.<key>: a mapping of quantities; false when absent or unreadable. */
static bool status_amounts(const cJSON *status, const char *key, struct policy_resources *out)
{
    const cJSON *m = cJSON_GetObjectItemCaseSensitive(status, key);
    bool any = false;

    if (!cJSON_IsObject(m))
        return false;
    for (int r = 0; r < POLICY_RES_COUNT; r++) {
        const cJSON *v = cJSON_GetObjectItemCaseSensitive(m, policy_resource_name(r));

        out->v[r] = 0;
        if (v != NULL && cli__amount_parse(v, r, &out->v[r]))
            any = true;
    }
    return any;
}

/* status.recentUsage (numbers) with status.fairShareWithoutRecentUsage: both or neither. */
static void recent_usage(const cJSON *status, struct cli_queue *q)
{
    const cJSON *u = cJSON_GetObjectItemCaseSensitive(status, "recentUsage");

    if (!cJSON_IsObject(u) ||
        !status_amounts(status, "fairShareWithoutRecentUsage", &q->fair_share_plain))
        return;
    for (int r = 0; r < POLICY_RES_COUNT; r++) {
        const cJSON *v = cJSON_GetObjectItemCaseSensitive(u, policy_resource_name(r));

        q->recent_usage[r] = cJSON_IsNumber(v) && v->valuedouble > 0 ? v->valuedouble : 0;
    }
    q->has_recent_usage = true;
}

void cli__usage_text(double u, char *buf, size_t len)
{
    if (u > 0 && u < 0.001)
        snprintf(buf, len, "<0.1%%");
    else if (u < 0.1)
        snprintf(buf, len, "%.1f%%", u * 100);
    else
        snprintf(buf, len, "%.0f%%", u * 100);
}

int cli__queue_read(const cJSON *obj, struct ext_arena *a, struct cli_queue *q, char *err,
                    size_t errlen)
{
    const cJSON *status = cJSON_GetObjectItemCaseSensitive(obj, "status");
    const cJSON *pending = cJSON_GetObjectItemCaseSensitive(status, "pendingGangs");
    struct policy_queue_spec spec;
    int rc;

    rc = kube_queue_decode(obj, a, &spec, err, errlen, NULL);
    if (rc != EXT_OK)
        return rc;
    memset(q, 0, sizeof(*q));
    /* The decoder's strings may point into obj: q outlives it. */
    q->name = ext_arena_strdup(a, spec.name);
    q->parent =
        spec.parent != NULL && *spec.parent != '\0' ? ext_arena_strdup(a, spec.parent) : NULL;
    if (q->name == NULL || (spec.parent != NULL && *spec.parent != '\0' && q->parent == NULL))
        return ext_errf(err, errlen, EXT_ENOMEM, "out of memory");
    q->priority = spec.priority;
    q->quota = spec.quota;
    q->limit = spec.limit;
    q->has_status = status_amounts(status, "allocated", &q->allocated);
    status_amounts(status, "reserved", &q->reserved);
    q->has_fair_share = status_amounts(status, "fairShare", &q->fair_share);
    if (cJSON_IsNumber(pending))
        q->pending_gangs = (int32_t)pending->valuedouble;
    q->has_status = q->has_status || cJSON_IsNumber(pending);
    recent_usage(status, q);
    return EXT_OK;
}

static cJSON *amount_json(int64_t v, enum policy_resource r, bool known)
{
    char text[64];

    if (!known)
        return cJSON_CreateNull();
    if (v < 0)
        return cJSON_CreateString("-1");
    cli__amount(v, r, text, sizeof(text));
    return cJSON_CreateString(text);
}

cJSON *cli__queue_amounts_json(const struct cli_queue *q, enum policy_resource r)
{
    cJSON *o = cJSON_CreateObject();

    cJSON_AddItemToObject(o, "quota", amount_json(q->quota.v[r], r, true));
    cJSON_AddItemToObject(o, "limit", amount_json(q->limit.v[r], r, true));
    cJSON_AddItemToObject(o, "fairShare", amount_json(q->fair_share.v[r], r, q->has_fair_share));
    cJSON_AddItemToObject(o, "allocated", amount_json(q->allocated.v[r], r, q->has_status));
    cJSON_AddItemToObject(o, "reserved", amount_json(q->reserved.v[r], r, q->has_status));
    if (q->has_recent_usage)
        cJSON_AddNumberToObject(o, "recentUsage", q->recent_usage[r]);
    else
        cJSON_AddNullToObject(o, "recentUsage");
    cJSON_AddItemToObject(o, "fairShareWithoutRecentUsage",
                          amount_json(q->fair_share_plain.v[r], r, q->has_recent_usage));
    return o;
}
