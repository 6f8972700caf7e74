/*
 * queue.c - a Queue object as both commands show it: its spec through the
 * decoder muster itself uses, its status as muster wrote it (allocated,
 * reserved, pendingGangs, and fairShare where muster writes one).
 */
#include <stdio.h>
#include <string.h>

#include "cli_int.h"

/*
 * status.<key>: a mapping of quantities of 0 or more, as muster writes them.
 * *any: it holds one. false, and why, when one cannot be read: muster never
 * writes a negative, a fraction of a millicore, or a number past int64.
 */
static bool status_amounts(const cJSON *status, const char *key, struct policy_resources *out,
                           bool *any, char *why, size_t len)
{
    const cJSON *m = cJSON_GetObjectItemCaseSensitive(status, key);

    *any = false;
    if (m == NULL || cJSON_IsNull(m))
        return true;
    if (!cJSON_IsObject(m)) {
        snprintf(why, len, "status.%s: must be a mapping", key);
        return false;
    }
    for (int r = 0; r < POLICY_RES_COUNT; r++) {
        const char *name = policy_resource_name((enum policy_resource)r);
        const cJSON *v = cJSON_GetObjectItemCaseSensitive(m, name);

        out->v[r] = 0;
        if (v == NULL)
            continue;
        if (!cli__amount_parse(v, (enum policy_resource)r, &out->v[r]) || out->v[r] < 0) {
            if (cJSON_IsNumber(v))
                snprintf(why, len, "status.%s.%s: %g is not a quantity of 0 or more", key, name,
                         v->valuedouble);
            else
                snprintf(why, len, "status.%s.%s: \"%.64s\" is not a quantity of 0 or more", key,
                         name, cJSON_IsString(v) ? v->valuestring : "?");
            return false;
        }
        *any = true;
    }
    return true;
}

/* status.pendingGangs: a whole number from 0 to INT32_MAX (a double out of that range has no
 * int32_t: converting it is undefined). */
static bool status_count(const cJSON *v, int32_t *out, char *why, size_t len)
{
    double d = cJSON_IsNumber(v) ? v->valuedouble : -1;

    if (!(d >= 0 && d <= INT32_MAX) || d != (double)(int32_t)d) {
        if (cJSON_IsNumber(v))
            snprintf(why, len, "status.pendingGangs: %g is not a whole number from 0 to %d", d,
                     INT32_MAX);
        else
            snprintf(why, len, "status.pendingGangs: must be a number");
        return false;
    }
    *out = (int32_t)d;
    return true;
}

/*
 * Fair over time: status.recentUsage (numbers, 0..10) with status.fairShareWithoutRecentUsage,
 * both or neither; either unreadable, neither (the rest of the status stands).
 */
static void recent_usage(const cJSON *status, struct cli_queue *q)
{
    const cJSON *u = cJSON_GetObjectItemCaseSensitive(status, "recentUsage");
    struct policy_resources plain;
    double v[POLICY_RES_COUNT];
    bool any = false;
    char why[320];

    if (!cJSON_IsObject(u) ||
        !status_amounts(status, "fairShareWithoutRecentUsage", &plain, &any, why, sizeof(why)) ||
        !any)
        return;
    for (int r = 0; r < POLICY_RES_COUNT; r++) {
        const cJSON *n =
            cJSON_GetObjectItemCaseSensitive(u, policy_resource_name((enum policy_resource)r));

        if (n != NULL && (!cJSON_IsNumber(n) || !(n->valuedouble >= 0 && n->valuedouble <= 10)))
            return;
        v[r] = n != NULL ? n->valuedouble : 0;
    }
    memcpy(q->recent_usage, v, sizeof(v));
    q->fair_share_plain = plain;
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

/* What muster wrote in the status; a status that cannot be read is none, and q says why. */
static void read_status(const cJSON *obj, struct ext_arena *a, struct cli_queue *q)
{
    const cJSON *status = cJSON_GetObjectItemCaseSensitive(obj, "status");
    const cJSON *pending = cJSON_GetObjectItemCaseSensitive(status, "pendingGangs");
    bool allocated = false, reserved = false, fair = false, ok;
    char why[320] = "";

    if (status == NULL || cJSON_IsNull(status))
        return;
    ok = cJSON_IsObject(status);
    if (!ok)
        snprintf(why, sizeof(why), "status: must be a mapping");
    ok = ok && status_amounts(status, "allocated", &q->allocated, &allocated, why, sizeof(why));
    ok = ok && status_amounts(status, "reserved", &q->reserved, &reserved, why, sizeof(why));
    ok = ok && status_amounts(status, "fairShare", &q->fair_share, &fair, why, sizeof(why));
    ok = ok && (pending == NULL || status_count(pending, &q->pending_gangs, why, sizeof(why)));
    if (!ok) {
        memset(&q->allocated, 0, sizeof(q->allocated));
        memset(&q->reserved, 0, sizeof(q->reserved));
        memset(&q->fair_share, 0, sizeof(q->fair_share));
        q->pending_gangs = 0;
        cfg_one_line(why);
        q->status_err = ext_arena_strdup(a, why);
        return;
    }
    q->has_status = allocated || pending != NULL;
    q->has_fair_share = fair;
    recent_usage(status, q);
}

int cli__queue_read(const cJSON *obj, struct ext_arena *a, struct cli_queue *q, char *err,
                    size_t errlen)
{
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
    read_status(obj, a, q);
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
