/*
 * reason.c - a reason's figures as JSON: the same data policy_reason_text makes words of,
 * for tools that read /debug/state and `muster simulate -o json`.
 */
#include <string.h>

#include "kube.h"

void kube_resource_format(int r, int64_t v, char *buf, size_t len)
{
    kube_quantity_format(v,
                         r == POLICY_RES_CPU      ? KUBE_QUANTITY_MILLI
                         : r == POLICY_RES_MEMORY ? KUBE_QUANTITY_BINARY
                                                  : KUBE_QUANTITY_DECIMAL,
                         buf, len);
}

static void add_amount(cJSON *o, const char *key, int r, int64_t v)
{
    char text[64];

    kube_resource_format(r, v, text, sizeof(text));
    cJSON_AddStringToObject(o, key, text);
}

static void add_text(cJSON *o, const char *key, const char *text)
{
    if (text)
        cJSON_AddStringToObject(o, key, text);
}

static void add_resources(cJSON *o, const char *key, const struct policy_resources *v)
{
    cJSON *m = cJSON_AddObjectToObject(o, key);

    for (int r = 0; m && r < POLICY_RES_COUNT; r++)
        add_amount(m, policy_resource_name(r), r, v->v[r]);
}

static void add_ask(cJSON *o, const struct policy_ask *a)
{
    cJSON *m = cJSON_AddObjectToObject(o, "ask");

    if (!m)
        return;
    add_amount(m, "cpu", POLICY_RES_CPU, a->cpu_milli);
    add_amount(m, "memory", POLICY_RES_MEMORY, a->memory_bytes);
    if (a->gpus > 0)
        add_amount(m, "gpu", POLICY_RES_GPU, a->gpus * POLICY_GPU_MILLI);
    if (a->gpu_share_milli > 0)
        add_amount(m, "gpuFraction", POLICY_RES_GPU, a->gpu_share_milli);
    if (a->gpu_memory_mib > 0)
        add_amount(m, "gpuMemory", POLICY_RES_MEMORY, a->gpu_memory_mib * (INT64_C(1) << 20));
    if (a->gpu_share_milli > 0 || a->gpu_memory_mib > 0)
        cJSON_AddNumberToObject(m, "gpuDevices", a->gpu_devices);
}

/* How many nodes failed each check; the most free on one node it may use. */
static void add_nodes(cJSON *o, const struct policy_reason *r)
{
    cJSON *failing;

    cJSON_AddNumberToObject(o, "nodes", r->nodes);
    cJSON_AddBoolToObject(o, "offered", r->offered);
    failing = cJSON_AddObjectToObject(o, "failing");
    for (int k = 1; failing && k < POLICY_CHECKS; k++)
        if (r->failing[k])
            cJSON_AddNumberToObject(failing, policy_check_name(k), r->failing[k]);
    add_resources(o, "mostFree", &r->most_free);
    if (r->ask.gpu_share_milli > 0 || r->ask.gpu_memory_mib > 0)
        add_amount(o, "mostDeviceRoom", POLICY_RES_GPU, r->most_device_room);
}

/* A queue's cap (limit or quota) of res, what it uses and what was asked of it. */
static void add_queue_figures(cJSON *o, const struct policy_reason *r, int res, bool limit)
{
    add_text(o, "queue", r->queue);
    if (res < 0 || res >= POLICY_RES_COUNT)
        return;
    cJSON_AddStringToObject(o, "resource", policy_resource_name(res));
    add_amount(o, limit ? "limit" : "quota", res, r->cap);
    add_amount(o, "used", res, r->used);
    add_amount(o, "asked", res, r->asked);
}

static void add_queue(cJSON *o, const struct policy_reason *r)
{
    add_queue_figures(o, r, r->resource, r->kind == POLICY_REASON_QUEUE_LIMIT);
}

static void add_evicted(cJSON *o, const struct policy_reason *r)
{
    bool preempt = r->eviction == POLICY_EVICT_PREEMPT;

    cJSON_AddStringToObject(o, "eviction", preempt ? "preempt" : "reclaim");
    if (preempt) {
        cJSON_AddNumberToObject(o, "priority", r->priority);
        cJSON_AddNumberToObject(o, "otherPriority", r->other_priority);
        return;
    }
    add_text(o, "queue", r->queue);
    if (r->resource < 0 || r->resource >= POLICY_RES_COUNT)
        return;
    cJSON_AddStringToObject(o, "resource", policy_resource_name(r->resource));
    add_amount(o, "used", r->resource, r->used);
    add_amount(o, r->quota_mark ? "quota" : "fairShare", r->resource, r->cap);
}

/* GANG_ROOM: a heavier choice its queue's limit turned away. */
static void add_over_limit(cJSON *o, const struct policy_reason *r)
{
    int res = r->limit_resource;
    cJSON *l;

    if (!r->queue || res < 0 || res >= POLICY_RES_COUNT ||
        !(l = cJSON_AddObjectToObject(o, "overLimit")))
        return;
    add_queue_figures(l, r, res, true);
}

static void add_holder(cJSON *o, const struct policy_reason *r)
{
    int res = r->held_resource;
    cJSON *h;

    if (!r->holder || res < 0 || res >= POLICY_RES_COUNT ||
        !(h = cJSON_AddObjectToObject(o, "holder")))
        return;
    cJSON_AddStringToObject(h, "queue", r->holder);
    cJSON_AddStringToObject(h, "resource", policy_resource_name(res));
    add_amount(h, "holds", res, r->held);
    if (r->holder_quota >= 0)
        add_amount(h, "quota", res, r->holder_quota);
    add_amount(h, "fairShare", res, r->holder_fair);
    if (r->quotas >= 0)
        add_amount(h, "quotas", res, r->quotas);
    add_amount(h, "capacity", res, r->capacity);
    if (r->own_queue && r->own_resource >= 0 && r->own_resource < POLICY_RES_COUNT &&
        (h = cJSON_AddObjectToObject(o, "ownOverFairShare"))) {
        cJSON_AddStringToObject(h, "queue", r->own_queue);
        cJSON_AddStringToObject(h, "resource", policy_resource_name(r->own_resource));
        add_amount(h, "used", r->own_resource, r->own_used);
        add_amount(h, "asked", r->own_resource, r->own_asked);
        add_amount(h, "fairShare", r->own_resource, r->own_fair);
    } else if (r->quota_queue && r->holder_quota >= 0 &&
               (h = cJSON_AddObjectToObject(o, "ownOverQuota"))) {
        cJSON_AddStringToObject(h, "queue", r->quota_queue);
        cJSON_AddStringToObject(h, "resource", policy_resource_name(res));
        add_amount(h, "used", res, r->quota_used);
        add_amount(h, "asked", res, r->quota_asked);
        add_amount(h, "quota", res, r->quota_of);
        add_amount(h, "takeable", res, policy_reason_takeable(r));
    }
}

/* The figures each kind names (docs/why.md). */
static void add_figures(cJSON *o, const struct policy_reason *r)
{
    switch (r->kind) {
    case POLICY_REASON_MEMBERS:
    case POLICY_REASON_AT_BIND:
    case POLICY_REASON_VICTIMS:
        cJSON_AddNumberToObject(o, "want", r->want);
        cJSON_AddNumberToObject(o, "have", r->have);
        return;
    case POLICY_REASON_NO_QUEUE:
    case POLICY_REASON_QUEUE_LIMIT:
    case POLICY_REASON_QUEUE_QUOTA: add_queue(o, r); return;
    case POLICY_REASON_NO_NODE:
        add_ask(o, &r->ask);
        add_nodes(o, r);
        add_holder(o, r);
        return;
    case POLICY_REASON_GANG_ROOM:
        cJSON_AddNumberToObject(o, "missing", r->want);
        if (r->subgroup)
            cJSON_AddNumberToObject(o, "subgroupMissing", r->have);
        if (r->pod)
            add_ask(o, &r->ask);
        add_nodes(o, r);
        add_resources(o, "need", &r->need);
        add_resources(o, "free", &r->free);
        if (r->resource >= 0 && r->resource < POLICY_RES_COUNT)
            cJSON_AddStringToObject(o, "short", policy_resource_name(r->resource));
        add_over_limit(o, r);
        add_holder(o, r);
        return;
    case POLICY_REASON_EVICTED: add_evicted(o, r); return;
    default: return;
    }
}

cJSON *kube_reason_json(const struct policy_reason *r)
{
    cJSON *o = cJSON_CreateObject();

    if (!o || !r)
        return o;
    cJSON_AddStringToObject(o, "kind", policy_reason_kind_name(r->kind));
    if (r->never)
        cJSON_AddTrueToObject(o, "never");
    add_text(o, "gang", r->gang);
    add_text(o, "pod", r->pod);
    add_text(o, "subgroup", r->subgroup);
    add_text(o, "other", r->other);
    add_text(o, "otherQueue", r->other_queue);
    add_text(o, "detail", r->detail);
    add_text(o, "topologyKey", r->topology);
    add_text(o, "domain", r->domain);
    if (r->domains > 0)
        cJSON_AddNumberToObject(o, "domains", r->domains);
    if (r->owner) { /* "owner": "RayJob lab/train"; "upgrade": a RayService's waiting cluster */
        char owner[600];

        snprintf(owner, sizeof(owner), "%s %s", policy_owner_kind_name(r->owner_kind), r->owner);
        add_text(o, "owner", owner);
        if (r->upgrade)
            cJSON_AddTrueToObject(o, "upgrade");
    }
    add_figures(o, r);
    return o;
}
