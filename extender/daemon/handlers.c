/*
 * handlers.c - kube-scheduler's questions answered from the engine:
 * filter, prioritize and preempt, plus /readyz and /debug/state. Bind, the
 * barrier, lives in barrier.c.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon_int.h"
#include "base.h"
#include "kube.h"

/*
 * Decode the request's Pod and hand its spec to the engine: it may be fresher
 * than the watch's copy. Only the watch (or --offline files) says what is
 * bound and where: the body's spec.nodeName and GPU record are dropped, and a
 * pod the engine holds at the barrier, binding or bound is not touched.
 */
static int observe_pod(struct ext_daemon *d, const cJSON *pod, struct ext_arena *a,
                       struct policy_pod_spec *spec, char *err, size_t errlen)
{
    int rc = kube_pod_decode(pod, &d->cache.opts, a, spec, err, errlen, NULL);
    struct policy_pod_view known;

    if (rc != EXT_OK)
        return rc;
    spec->node = NULL;
    spec->gpu_groups = NULL;
    if (!spec->managed)
        return EXT_OK;
    if (cache_pod_gone(&d->cache, spec->uid))
        return ext_errf(err, errlen, EXT_ENOTFOUND, "pod %s/%s was deleted", spec->namespace_,
                        spec->name);
    if (policy_pod_view_get(d->cache.engine, spec->namespace_, spec->name, &known) &&
        known.phase >= POLICY_POD_WAITING)
        return EXT_OK;
    return cache_engine_rc(policy_pod_upsert(d->cache.engine, spec, ext_now_ms()),
                           "the engine refused the pod", err, errlen);
}

/* Full Node objects (nodeCacheCapable: false) teach the engine nodes it has not seen. */
static void observe_nodes(struct ext_daemon *d, const struct ext_filter_args *a)
{
    for (size_t i = 0; a->form == EXT_NODES_FULL && i < a->n; i++) {
        struct ext_arena *arena;
        struct policy_node_spec s;
        char err[256];

        if (policy_node_known(d->cache.engine, a->names[i]))
            continue;
        arena = ext_arena_new();
        if (arena && kube_node_decode(a->nodes[i], arena, &s, err, sizeof(err), NULL) == EXT_OK)
            policy_node_upsert(d->cache.engine, &s);
        ext_arena_free(arena);
    }
}

void ext_daemon_gang_composition(struct ext_daemon *d, const char *gang, char *buf, size_t len)
{
    struct policy_gang_view v;

    if (len > 0)
        buf[0] = '\0';
    if (gang && policy_gang_view_get(d->cache.engine, gang, &v) && v.composition)
        snprintf(buf, len, "%s", v.composition);
}

/*
 * Under the lock: is this reason one to keep to ourselves for now? "Its RayCluster or PodGroup
 * is not known yet" for a gang first seen less than EXT_UNDECLARED_GRACE_MS ago: KubeRay makes
 * the pods after the RayCluster exists, so that reason is mostly muster's own watch running
 * behind, and would be false a moment later. kube-scheduler's FailedScheduling still carries it;
 * a gang whose object is really missing has its Event at the first refusal after the grace.
 */
static bool reason_held(struct ext_daemon *d, const struct policy_filter_result *r, int64_t now)
{
    struct policy_gang_view v;

    return r->why && r->why->kind == POLICY_REASON_UNDECLARED && r->why->gang &&
           policy_gang_view_get(d->cache.engine, r->why->gang, &v) && v.since > 0 &&
           now - v.since < EXT_UNDECLARED_GRACE_MS;
}

static enum ext_verdict verdict_of(enum policy_fit f)
{
    return f == POLICY_FITS           ? EXT_NODE_PASSES
           : f == POLICY_UNRESOLVABLE ? EXT_NODE_UNRESOLVABLE
                                      : EXT_NODE_FAILS;
}

static int filter(void *ctx, const struct ext_filter_args *a, struct ext_filter_answer *ans)
{
    struct ext_daemon *d = ctx;
    struct ext_arena *arena = ext_arena_new();
    struct policy_pod_spec spec;
    struct policy_filter_result r;
    char err[512], key[512], composition[512] = "", message[1024];
    const char *chosen = NULL;
    struct policy_gang_view before;
    bool turned_away, held = false;
    int64_t now;
    int rc;

    if (!arena)
        return EXT_ENOMEM;
    ans->omit_failed = true; /* a planned pod's answer is its node alone */
    /* On the HTTP event loop (a small body): answer now or not at all, a worker runs it then.
     * Nothing below waits but on this lock: the engine, the Event queue and the nudges are
     * memory. */
    if (a->no_wait && pthread_mutex_trylock(&d->cache.lock) != 0) {
        ext_arena_free(arena);
        return EXT_EBUSY;
    }
    if (!a->no_wait)
        pthread_mutex_lock(&d->cache.lock);
    observe_nodes(d, a);
    rc = observe_pod(d, a->pod, arena, &spec, err, sizeof(err));
    if (rc != EXT_OK || !spec.managed) {
        pthread_mutex_unlock(&d->cache.lock);
        if (rc != EXT_OK)
            ans->error = ext_arena_strdup(ans->pool, err);
        ext_arena_free(arena);
        /* A Pod that does not decode: 400 with why. One the watch saw deleted is no bad
         * request: the why in a 200, as for any pod that cannot go. Not ours: every node
         * passes. */
        return rc == EXT_ENOTFOUND ? EXT_OK : rc;
    }
    /* A gang that waits with a reason has had members turned away (kube-scheduler parked
     * them); a gang planned at its first filter has not, and needs no nudge. */
    turned_away = spec.gang && policy_gang_view_get(d->cache.engine, spec.gang, &before) &&
                  before.state == POLICY_GANG_PENDING && before.reason;
    now = ext_now_ms();
    rc = policy_filter(d->cache.engine, spec.namespace_, spec.name, a->names, a->n, now, &r);
    if (rc == POLICY_OK && r.reason) {
        ext_daemon_gang_composition(d, spec.gang, composition, sizeof(composition));
        held = reason_held(d, &r, now);
    }
    /* Hand-backs are decided under this one lock (the event loop takes it once, if free):
     * a gang ahead of this one could use the room and kube-scheduler may not retry it on its
     * own (its pods were turned away before); or this gang was planned now and its other
     * members were turned away before the plan. */
    if (rc == POLICY_OK && r.reason && r.ahead)
        cache_nudge_gang(&d->cache, r.ahead);
    else if (rc == POLICY_OK && !r.reason && turned_away)
        cache_nudge_gang(&d->cache, spec.gang);
    pthread_mutex_unlock(&d->cache.lock);
    snprintf(key, sizeof(key), "%s/%s", spec.namespace_, spec.name);
    if (rc != POLICY_OK) {
        ext_arena_free(arena);
        ans->error = ext_arena_strdup(ans->pool, policy_strerror(rc));
        return EXT_OK;
    }
    for (size_t i = 0; i < a->n; i++) {
        const char *reason = r.verdicts[i].reason;

        ans->verdicts[i].verdict = verdict_of(r.verdicts[i].fit);
        /* Most candidates share one reason: copy it once, point at the copy. */
        if (i > 0 && reason == r.verdicts[i - 1].reason)
            ans->verdicts[i].reason = ans->verdicts[i - 1].reason;
        else
            ans->verdicts[i].reason = reason ? ext_arena_strdup(ans->pool, reason) : NULL;
        if (r.verdicts[i].fit == POLICY_FITS)
            chosen = a->names[i];
    }
    if (r.reason) {
        ext_log_info("filter", "pod", key, "gang", spec.gang, "verdict", "waits", "reason",
                     r.reason);
        ext_events_gang_message(message, sizeof(message), r.reason, composition);
        if (!held)
            ext_events_waiting(d->events, spec.namespace_, spec.name, spec.uid,
                               r.why ? r.why->gang : spec.gang, message);
    } else {
        ext_log_info("filter", "pod", key, "gang", spec.gang, "verdict", "planned", "node", chosen);
    }
    /* Victims were chosen for this gang: the evictor carries them out off this path. */
    if (r.evictions)
        evictor_kick(d->evictor);
    policy_filter_result_cleanup(&r);
    ext_arena_free(arena);
    return EXT_OK;
}

static int prioritize(void *ctx, const struct ext_filter_args *a, struct ext_priority_answer *ans)
{
    struct ext_daemon *d = ctx;
    struct ext_arena *arena = ext_arena_new();
    struct policy_pod_spec spec;
    char err[512];

    if (!arena)
        return EXT_ENOMEM;
    ans->omit_zero = true;
    pthread_mutex_lock(&d->cache.lock);
    if (kube_pod_decode(a->pod, &d->cache.opts, arena, &spec, err, sizeof(err), NULL) == EXT_OK &&
        spec.managed)
        policy_prioritize(d->cache.engine, spec.namespace_, spec.name, a->names, a->n, ext_now_ms(),
                          ans->scores);
    pthread_mutex_unlock(&d->cache.lock);
    ext_arena_free(arena);
    return EXT_OK;
}

/* One node's victims, grown to whole gangs, or dropped (false). */
static bool preempt_node(struct ext_daemon *d, const struct policy_pod_spec *pre,
                         const struct ext_victims *v, struct ext_arena *pool,
                         struct ext_meta_victims *out)
{
    const char **keys = ext_arena_calloc(pool, v->npods ? v->npods : 1, sizeof(*keys));
    char **grown = NULL, buf[512];
    size_t ngrown = 0, k = 0;
    const char **uids;

    if (!keys)
        return false;
    for (size_t i = 0; i < v->npods; i++)
        if (policy_pod_by_uid(d->cache.engine, v->uids[i], buf, sizeof(buf)))
            keys[k++] = ext_arena_strdup(pool, buf);
    if (!policy_preempt_victims(d->cache.engine, pre->namespace_, pre->name, keys, k, &grown,
                                &ngrown))
        return false;
    uids = ext_arena_calloc(pool, ngrown + v->npods + 1, sizeof(*uids));
    k = 0;
    for (size_t i = 0; uids && i < ngrown; i++) {
        struct policy_pod_view pv;
        char *slash = strchr(grown[i], '/');

        *slash = '\0';
        if (policy_pod_view_get(d->cache.engine, grown[i], slash + 1, &pv))
            uids[k++] = ext_arena_strdup(pool, pv.uid);
    }
    /* Victims the engine does not know (not muster's pods) stay as asked. */
    for (size_t i = 0; uids && i < v->npods; i++)
        if (!policy_pod_by_uid(d->cache.engine, v->uids[i], buf, sizeof(buf)))
            uids[k++] = v->uids[i];
    for (size_t i = 0; i < ngrown; i++)
        free(grown[i]);
    free(grown);
    *out = (struct ext_meta_victims){v->node, k, uids, v->num_pdb_violations};
    return uids && k > 0;
}

static int preempt(void *ctx, const struct ext_preempt_args *a, struct ext_preempt_answer *ans)
{
    struct ext_daemon *d = ctx;
    struct ext_arena *arena = ext_arena_new();
    struct policy_pod_spec spec;
    struct ext_meta_victims *nodes = ext_arena_calloc(ans->pool, a->n ? a->n : 1, sizeof(*nodes));
    char err[512];
    size_t kept = 0;

    if (!arena || !nodes) {
        ext_arena_free(arena);
        return EXT_ENOMEM;
    }
    pthread_mutex_lock(&d->cache.lock);
    if (kube_pod_decode(a->pod, &d->cache.opts, arena, &spec, err, sizeof(err), NULL) == EXT_OK &&
        !cache_pod_gone(&d->cache, spec.uid)) {
        struct policy_pod_view known;

        spec.managed = true; /* known to the engine so its priority is compared */
        spec.node = NULL;    /* the watch says where pods run, not the request */
        spec.gpu_groups = NULL;
        if (!policy_pod_view_get(d->cache.engine, spec.namespace_, spec.name, &known) ||
            known.phase < POLICY_POD_WAITING)
            policy_pod_upsert(d->cache.engine, &spec, ext_now_ms());
        for (size_t i = 0; i < a->n; i++)
            kept += preempt_node(d, &spec, &a->nodes[i], ans->pool, &nodes[kept]);
    }
    pthread_mutex_unlock(&d->cache.lock);
    ans->n = kept;
    ans->nodes = nodes;
    ext_arena_free(arena);
    return EXT_OK;
}

static bool ready(void *ctx, char *why, size_t len)
{
    struct ext_daemon *d = ctx;

    return cache_ready(&d->cache, why, len);
}

/* ---- /debug/state ---------------------------------------------------------- */

static void add_resources(cJSON *parent, const char *name, const struct policy_resources *r)
{
    cJSON *o = cJSON_AddObjectToObject(parent, name);

    for (int i = 0; i < POLICY_RES_COUNT; i++) {
        char text[64];

        kube_resource_format(i, r->v[i], text, sizeof(text));
        cJSON_AddStringToObject(o, policy_resource_name(i), text);
    }
}

/* A string, or null: the key is always there. */
static void add_text(cJSON *o, const char *key, const char *text)
{
    if (text)
        cJSON_AddStringToObject(o, key, text);
    else
        cJSON_AddNullToObject(o, key);
}

/* A reason's figures (kube_reason_json), or null: the key is always there. */
static void add_why(cJSON *o, const char *key, const struct policy_reason *why)
{
    if (why)
        cJSON_AddItemToObject(o, key, kube_reason_json(why));
    else
        cJSON_AddNullToObject(o, key);
}

static void add_subgroups(cJSON *g, const struct policy_gang_view *v)
{
    cJSON *list = cJSON_AddArrayToObject(g, "subgroups");

    for (size_t i = 0; list && i < v->nsubgroups; i++) {
        const struct policy_subgroup_view *sg = &v->subgroups[i];
        cJSON *o = cJSON_CreateObject();

        cJSON_AddStringToObject(o, "name", sg->name ? sg->name : "");
        cJSON_AddNumberToObject(o, "minMembers", sg->min_members);
        cJSON_AddNumberToObject(o, "members", sg->members);
        cJSON_AddNumberToObject(o, "placed", sg->placed);
        cJSON_AddNumberToObject(o, "extrasPlaced", sg->extras_placed);
        cJSON_AddNumberToObject(o, "extrasWaiting", sg->extras_waiting);
        add_text(o, "extraReason", sg->extra_reason);
        add_why(o, "extraWhy", sg->extra_why);
        cJSON_AddItemToArray(list, o);
    }
}

/* The RayJob or RayService that made it ({"kind", "name"} or null), the running cluster it is
 * an upgrade of, and the room held for members to come (a RayJob's submitter). */
static void add_owner(cJSON *g, const struct policy_gang_view *v)
{
    cJSON *owner, *held;

    if (v->owner_kind != POLICY_OWNER_NONE && v->owner &&
        (owner = cJSON_AddObjectToObject(g, "owner"))) {
        cJSON_AddStringToObject(owner, "kind", policy_owner_kind_name(v->owner_kind));
        cJSON_AddStringToObject(owner, "name", v->owner);
    } else {
        cJSON_AddNullToObject(g, "owner");
    }
    add_text(g, "upgradeOf", v->upgrade_of);
    held = cJSON_AddArrayToObject(g, "held");
    for (size_t i = 0; held && i < v->nholds; i++) {
        const struct policy_hold_view *h = &v->holds[i];
        cJSON *o = cJSON_CreateObject();
        struct policy_resources ask = {{h->cpu_milli, h->memory_bytes, h->gpus * POLICY_GPU_MILLI}};

        cJSON_AddStringToObject(o, "subgroup", h->subgroup);
        add_text(o, "for", h->owner);
        cJSON_AddStringToObject(o, "state", policy_hold_state_name(h->state));
        add_text(o, "node", h->node);
        add_resources(o, "ask", &ask);
        cJSON_AddBoolToObject(o, "asked", h->asked);
        cJSON_AddItemToArray(held, o);
    }
}

static void state_gang(const struct policy_gang_view *v, void *ctx)
{
    cJSON *g = cJSON_CreateObject();

    cJSON_AddStringToObject(g, "gang", v->key);
    cJSON_AddStringToObject(g, "queue", v->queue);
    cJSON_AddStringToObject(g, "state", policy_gang_state_name(v->state));
    cJSON_AddNumberToObject(g, "minMembers", v->min_members);
    cJSON_AddNumberToObject(g, "members", v->members);
    cJSON_AddNumberToObject(g, "bound", v->bound);
    cJSON_AddNumberToObject(g, "waitingAtBind", v->waiting);
    add_text(g, "reason", v->reason);
    add_why(g, "why", v->why);
    cJSON_AddNumberToObject(g, "priority", v->priority);
    cJSON_AddBoolToObject(g, "preemptible", v->preemptible);
    add_text(g, "composition", v->composition);
    add_text(g, "conflict", v->conflict);
    add_text(g, "topologyKey", v->topology_key);
    add_text(g, "topology", v->topology);
    add_text(g, "domain", v->domain);
    add_subgroups(g, v);
    add_owner(g, v);
    cJSON_AddItemToArray(ctx, g);
}

static void state_pod(const struct policy_pod_view *v, void *ctx)
{
    cJSON *p;
    char key[512];

    if (!v->managed)
        return;
    p = cJSON_CreateObject();
    snprintf(key, sizeof(key), "%s/%s", v->namespace_, v->name);
    cJSON_AddStringToObject(p, "pod", key);
    cJSON_AddStringToObject(p, "gang", v->gang);
    cJSON_AddStringToObject(p, "phase", policy_pod_phase_name(v->phase));
    if (v->node)
        cJSON_AddStringToObject(p, "node", v->node);
    if (v->gpu_groups)
        cJSON_AddStringToObject(p, "gpuGroups", v->gpu_groups);
    if (v->reason) {
        cJSON_AddStringToObject(p, "reason", v->reason);
        add_why(p, "why", v->why);
    }
    if (v->refused)
        cJSON_AddTrueToObject(p, "refused");
    cJSON_AddItemToArray(ctx, p);
}

static void state_queue(const struct policy_queue_view *v, void *ctx)
{
    cJSON *q = cJSON_CreateObject();

    cJSON_AddStringToObject(q, "name", v->name);
    if (v->parent)
        cJSON_AddStringToObject(q, "parent", v->parent);
    else
        cJSON_AddNullToObject(q, "parent");
    add_resources(q, "allocated", &v->allocated);
    add_resources(q, "reserved", &v->reserved);
    add_resources(q, "fairShare", &v->fair_share);
    add_resources(q, "demand", &v->demand);
    cJSON_AddNumberToObject(q, "pendingGangs", v->pending_gangs);
    if (v->has_recent_usage) {
        cJSON_AddItemToObject(q, "recentUsage", kube_recent_usage_json(&v->recent_usage));
        add_resources(q, "fairShareWithoutRecentUsage", &v->fair_share_without_usage);
    }
    cJSON_AddItemToArray(ctx, q);
}

static int debug_state(void *ctx, char **json, size_t *len)
{
    struct ext_daemon *d = ctx;
    cJSON *root = cJSON_CreateObject();

    if (!root)
        return EXT_ENOMEM;
    pthread_mutex_lock(&d->cache.lock);
    policy_each_gang(d->cache.engine, state_gang, cJSON_AddArrayToObject(root, "gangs"));
    policy_each_queue(d->cache.engine, state_queue, cJSON_AddArrayToObject(root, "queues"));
    policy_each_pod(d->cache.engine, state_pod, cJSON_AddArrayToObject(root, "pods"));
    pthread_mutex_unlock(&d->cache.lock);
    /* The evictor's last outcomes (its own lock). */
    evictor_debug(d->evictor, cJSON_AddArrayToObject(root, "evictions"));
    *json = cJSON_PrintUnformatted(root);
    cJSON_Delete(root);
    if (!*json)
        return EXT_ENOMEM;
    *len = strlen(*json);
    return EXT_OK;
}

const struct ext_http_handlers ext_daemon_handlers = {
    .filter = filter,
    .prioritize = prioritize,
    .bind = ext_daemon_bind,
    .preempt = preempt,
    .ready = ready,
    .debug_state = debug_state,
    .stopping = ext_daemon_stopping,
};
