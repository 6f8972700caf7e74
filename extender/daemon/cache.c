/* cache.c - reflectors into the engine. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cache.h"
#include "base.h"
#include "kube.h"

static const struct {
    const char *name;
    const char *path;
    bool optional;
} sources[CACHE_SOURCE_COUNT] = {
    [CACHE_NODES] = {"nodes", "/api/v1/nodes", false},
    [CACHE_PODS] = {"pods", "/api/v1/pods", false},
    [CACHE_RAYCLUSTERS] = {"rayclusters", "/apis/ray.io/v1/rayclusters", true},
    [CACHE_QUEUES] = {"queues", "/apis/muster.dev/v1alpha1/queues", true},
    [CACHE_PODGROUPS_X] = {"podgroups.scheduling.x-k8s.io",
                           "/apis/scheduling.x-k8s.io/v1alpha1/podgroups", true},
    [CACHE_PODGROUPS_VOLCANO] = {"podgroups.scheduling.volcano.sh",
                                 "/apis/scheduling.volcano.sh/v1beta1/podgroups", true},
};

const char *cache_source_name(enum cache_source src)
{
    return sources[src].name;
}

/* ---- sorted key sets: what each source has told the engine --------------- */

static size_t keys_find(const struct cache_keys *k, const char *key, bool *found)
{
    size_t lo = 0, hi = k->n;

    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        int c = strcmp(k->v[mid], key);

        if (c == 0) {
            *found = true;
            return mid;
        }
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    *found = false;
    return lo;
}

/* False when out of memory: the key is not recorded. */
static bool keys_add(struct cache_keys *k, const char *key)
{
    bool found;
    size_t at = keys_find(k, key, &found);
    char *copy;

    if (found)
        return true;
    if (k->n == k->cap) {
        size_t cap = k->cap ? k->cap * 2 : 64;
        char **v = realloc(k->v, cap * sizeof(*v));

        if (!v)
            return false;
        k->v = v;
        k->cap = cap;
    }
    if (!(copy = strdup(key)))
        return false;
    memmove(&k->v[at + 1], &k->v[at], (k->n - at) * sizeof(*k->v));
    k->v[at] = copy;
    k->n++;
    return true;
}

static void keys_remove(struct cache_keys *k, const char *key)
{
    bool found;
    size_t at = keys_find(k, key, &found);

    if (!found)
        return;
    free(k->v[at]);
    memmove(&k->v[at], &k->v[at + 1], (k->n - at - 1) * sizeof(*k->v));
    k->n--;
}

static void keys_cleanup(struct cache_keys *k)
{
    for (size_t i = 0; i < k->n; i++)
        free(k->v[i]);
    free(k->v);
    memset(k, 0, sizeof(*k));
}

/* ---- one object in ------------------------------------------------------- */

static const char *meta_string(const cJSON *obj, const char *key)
{
    const cJSON *v =
        cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(obj, "metadata"), key);

    return cJSON_IsString(v) ? v->valuestring : NULL;
}

/* A PodGroup's gang key names its RayCluster when KubeRay owns it (Volcano's
 * ray-<cluster>-pg), so what it declares and what it forgets meet the pods. */
static bool podgroup_key(const struct cache *c, const cJSON *obj, char *buf, size_t len)
{
    struct ext_arena *a = ext_arena_new();
    struct policy_gang_spec s;
    char err[128];
    bool ok = a && kube_podgroup_gang(obj, &c->opts, a, &s, err, sizeof(err), NULL) == EXT_OK;

    if (ok)
        snprintf(buf, len, "%s", s.key);
    ext_arena_free(a);
    return ok;
}

/* "ns/name" for namespaced objects, "name" for cluster-scoped ones. */
static bool object_key(const struct cache *c, enum cache_source src, const cJSON *obj, char *buf,
                       size_t len)
{
    const char *ns = meta_string(obj, "namespace");
    const char *name = meta_string(obj, "name");

    if (!name)
        return false;
    if (src == CACHE_PODGROUPS_X || src == CACHE_PODGROUPS_VOLCANO)
        return podgroup_key(c, obj, buf, len);
    if (src == CACHE_NODES || src == CACHE_QUEUES || !ns)
        snprintf(buf, len, "%s", name);
    else
        snprintf(buf, len, "%s/%s", ns, name);
    return true;
}

bool cache_is_reservation_pod(const struct cache *c, const cJSON *pod)
{
    const cJSON *labels = cJSON_GetObjectItemCaseSensitive(
        cJSON_GetObjectItemCaseSensitive(pod, "metadata"), "labels");
    const cJSON *app = cJSON_GetObjectItemCaseSensitive(labels, EXT_LABEL_APP_NAME);
    const char *ns = meta_string(pod, "namespace");

    return cJSON_IsString(app) && strcmp(app->valuestring, EXT_RESERVATION_APP) == 0 && ns &&
           c->reservation_namespace && strcmp(ns, c->reservation_namespace) == 0;
}

static void forget(struct cache *c, enum cache_source src, const char *key)
{
    char ns[256];
    const char *slash = strchr(key, '/');

    switch (src) {
    case CACHE_NODES:
        policy_node_forget(c->engine, key);
        break;
    case CACHE_QUEUES:
        policy_queue_forget(c->engine, key);
        break;
    case CACHE_PODS:
        if (slash && (size_t)(slash - key) < sizeof(ns)) {
            memcpy(ns, key, (size_t)(slash - key));
            ns[slash - key] = '\0';
            policy_pod_forget(c->engine, ns, slash + 1);
        }
        break;
    default:
        policy_gang_forget(c->engine, key,
                           src == CACHE_RAYCLUSTERS ? POLICY_GANG_WORKLOAD : POLICY_GANG_PODGROUP);
        break;
    }
    keys_remove(&c->known[src], key);
}

/* The engine's refusal as the shell's code, with the engine's words in err. */
static int engine_rc(int prc, char *err, size_t errlen)
{
    int code = prc == POLICY_ENOMEM   ? EXT_ENOMEM
               : prc == POLICY_ENOENT ? EXT_ENOTFOUND
               : prc == POLICY_ELIMIT ? EXT_ETOOBIG
                                      : EXT_EINVAL;

    if (prc == POLICY_OK)
        return EXT_OK;
    return ext_errf(err, errlen, code, "the engine refused it: %s", policy_strerror(prc));
}

/* Decode and upsert; false if the object is not one to keep. */
static bool upsert(struct cache *c, enum cache_source src, const cJSON *obj, const char *key)
{
    struct ext_arena *a = ext_arena_new();
    char err[256] = "";
    int rc = EXT_EINVAL;

    if (!a)
        return false;
    switch (src) {
    case CACHE_NODES: {
        struct policy_node_spec s;

        if ((rc = kube_node_decode(obj, a, &s, err, sizeof(err), NULL)) == EXT_OK)
            rc = engine_rc(policy_node_upsert(c->engine, &s), err, sizeof(err));
        break;
    }
    case CACHE_PODS: {
        struct policy_pod_spec s;

        if (kube_pod_is_terminal(obj) || cache_is_reservation_pod(c, obj)) {
            ext_arena_free(a);
            return false;
        }
        if ((rc = kube_pod_decode(obj, &c->opts, a, &s, err, sizeof(err), NULL)) == EXT_OK)
            rc = engine_rc(policy_pod_upsert(c->engine, &s, ext_now_ms()), err, sizeof(err));
        break;
    }
    case CACHE_QUEUES: {
        struct policy_queue_spec s;

        if ((rc = kube_queue_decode(obj, a, &s, err, sizeof(err), NULL)) == EXT_OK &&
            policy_queue_changes(c->engine, &s)) {
            rc = engine_rc(policy_queue_upsert(c->engine, &s), err, sizeof(err));
            c->nudge = true;
        }
        break;
    }
    case CACHE_RAYCLUSTERS:
    case CACHE_PODGROUPS_X:
    case CACHE_PODGROUPS_VOLCANO: {
        struct policy_gang_spec s;

        rc = src == CACHE_RAYCLUSTERS
                 ? kube_raycluster_gang(obj, &c->opts, a, &s, err, sizeof(err), NULL)
                 : kube_podgroup_gang(obj, &c->opts, a, &s, err, sizeof(err), NULL);
        if (rc == EXT_OK && policy_gang_changes(c->engine, &s)) {
            rc = engine_rc(policy_gang_upsert(c->engine, &s), err, sizeof(err));
            c->nudge = true;
        }
        break;
    }
    default:
        break;
    }
    ext_arena_free(a);
    if (rc != EXT_OK) {
        ext_log_warn("object skipped", "resource", sources[src].name, "object", key, "error",
                     *err ? err : ext_strerror(rc));
        return false;
    }
    return true;
}

/* The engine holds an object whose key could not be recorded: the next list reconciles. */
static void key_lost(struct cache *c, enum cache_source src, const char *key)
{
    c->keys_lost[src] = true;
    ext_log_error("out of memory recording an object's key; the next list of its resource "
                  "forgets what is gone against the engine itself",
                  "resource", sources[src].name, "object", key);
}

void cache_apply(struct cache *c, enum cache_source src, const char *type, const cJSON *obj)
{
    char key[512];

    if (!object_key(c, src, obj, key, sizeof(key)))
        return;
    pthread_mutex_lock(&c->lock);
    if (strcmp(type, "DELETED") == 0 || !upsert(c, src, obj, key)) {
        if (strcmp(type, "DELETED") == 0 || (src == CACHE_PODS && kube_pod_is_terminal(obj)))
            forget(c, src, key);
    } else if (!keys_add(&c->known[src], key)) {
        key_lost(c, src, key);
    }
    pthread_mutex_unlock(&c->lock);
}

/* ---- reconciling with the engine after a key was lost --------------------- */

struct engine_keys {
    struct cache_keys *out;
    enum cache_source src;
    bool lost;
};

static void engine_key(struct engine_keys *e, const char *key)
{
    e->lost |= !keys_add(e->out, key);
}

static void engine_node(const struct policy_node_view *v, void *ctx)
{
    engine_key(ctx, v->name);
}

static void engine_pod(const struct policy_pod_view *v, void *ctx)
{
    char key[512];

    snprintf(key, sizeof(key), "%s/%s", v->namespace_, v->name);
    engine_key(ctx, key);
}

static void engine_queue(const struct policy_queue_view *v, void *ctx)
{
    if (!v->implicit)
        engine_key(ctx, v->name);
}

static void engine_gang(const struct policy_gang_view *v, void *ctx)
{
    struct engine_keys *e = ctx;

    if (v->declared[e->src == CACHE_RAYCLUSTERS ? POLICY_GANG_WORKLOAD : POLICY_GANG_PODGROUP])
        engine_key(e, v->key);
}

/* What the engine holds from this source; false if even that could not be listed. */
static bool engine_keys(struct cache *c, enum cache_source src, struct cache_keys *out)
{
    struct engine_keys e = {out, src, false};

    switch (src) {
    case CACHE_NODES:
        policy_each_node(c->engine, engine_node, &e);
        break;
    case CACHE_PODS:
        policy_each_pod(c->engine, engine_pod, &e);
        break;
    case CACHE_QUEUES:
        policy_each_queue(c->engine, engine_queue, &e);
        break;
    default:
        policy_each_gang(c->engine, engine_gang, &e);
        break;
    }
    return !e.lost;
}

/*
 * A list after a key was lost: what the engine holds from this source but
 * the list no longer has is forgotten. (The other PodGroup flavour's keys
 * are kept: both declare gangs as PodGroups.)
 */
static bool reconcile(struct cache *c, enum cache_source src, const struct cache_keys *fresh)
{
    struct cache_keys held = {0};
    bool found, ok = engine_keys(c, src, &held);
    enum cache_source twin = src == CACHE_PODGROUPS_X         ? CACHE_PODGROUPS_VOLCANO
                             : src == CACHE_PODGROUPS_VOLCANO ? CACHE_PODGROUPS_X
                                                              : src;

    for (size_t i = 0; ok && i < held.n; i++) {
        keys_find(fresh, held.v[i], &found);
        if (!found && twin != src)
            keys_find(&c->known[twin], held.v[i], &found);
        if (!found)
            forget(c, src, held.v[i]);
    }
    keys_cleanup(&held);
    return ok;
}

/* ---- reflector callbacks ------------------------------------------------- */

/* The full set after a (re)list: upsert all, forget what vanished meanwhile. */
void cache_replace(struct cache *c, enum cache_source src, const cJSON *items)
{
    struct cache_reflector one = {c, src}, *sc = &one;
    struct cache_keys fresh = {0};
    const cJSON *obj;
    char key[512];
    bool lost = false;

    pthread_mutex_lock(&c->lock);
    cJSON_ArrayForEach(obj, items)
    {
        if (object_key(c, sc->src, obj, key, sizeof(key)) && upsert(c, sc->src, obj, key) &&
            !keys_add(&fresh, key)) {
            key_lost(c, sc->src, key);
            lost = true;
        }
    }
    for (size_t i = c->known[sc->src].n; !lost && i-- > 0;) {
        bool found;
        char *old = c->known[sc->src].v[i];

        keys_find(&fresh, old, &found);
        if (!found) {
            snprintf(key, sizeof(key), "%s", old);
            forget(c, sc->src, key);
        }
    }
    /* A key lost earlier is known only to the engine: reconcile against it. With a key
     * lost in this very list, nothing is forgotten now (fresh is not the whole list). */
    if (!lost && c->keys_lost[sc->src] && reconcile(c, sc->src, &fresh))
        c->keys_lost[sc->src] = false;
    keys_cleanup(&c->known[sc->src]);
    c->known[sc->src] = fresh;
    pthread_mutex_unlock(&c->lock);
    ext_log_info("listed", "resource", sources[sc->src].name);
}

static void on_replace(void *ctx, const cJSON *items)
{
    struct cache_reflector *sc = ctx;

    cache_replace(sc->cache, sc->src, items);
}

static void on_event(void *ctx, const char *type, const cJSON *obj)
{
    struct cache_reflector *sc = ctx;

    cache_apply(sc->cache, sc->src, type, obj);
}

static void on_absent(void *ctx)
{
    struct cache_reflector *sc = ctx;
    cJSON *none = cJSON_CreateArray();

    on_replace(ctx, none);
    cJSON_Delete(none);
    ext_log_info("resource absent; watching for it to appear", "resource", sources[sc->src].name);
}

static void on_error(void *ctx, int code, const char *message)
{
    struct cache_reflector *sc = ctx;

    ext_log_warn("watch failed; reconnecting", "resource", sources[sc->src].name, "error",
                 message ? message : ext_strerror(code));
}

static const struct kube_watch_handler handler = {
    .replace = on_replace, .event = on_event, .absent = on_absent, .error = on_error};

/* ---- lifecycle ----------------------------------------------------------- */

int cache_init(struct cache *c, const struct cfg_settings *s, struct kube_client *kube, char *err,
               size_t errlen)
{
    struct policy_options po = {
        .strategy = s->strategy, .plan_ttl_ms = s->plan_ttl_ms, .default_queue = s->default_queue};

    memset(c, 0, sizeof(*c));
    pthread_mutex_init(&c->lock, NULL);
    c->engine = policy_cluster_new(&po);
    if (!c->engine) {
        snprintf(err, errlen, "out of memory");
        return EXT_ENOMEM;
    }
    c->opts.queue_label_keys = (const char *const *)s->queue_label_keys.v;
    c->opts.nqueue_label_keys = s->queue_label_keys.n;
    c->opts.scheduler_names = (const char *const *)s->scheduler_names.v;
    c->opts.nscheduler_names = s->scheduler_names.n;
    c->reservation_namespace = s->gpu_sharing.reservation_namespace;
    c->kube = kube;
    return EXT_OK;
}

int cache_start(struct cache *c, char *err, size_t errlen)
{
    for (int i = 0; c->kube && i < CACHE_SOURCE_COUNT; i++) {
        c->reflectors[i] = (struct cache_reflector){c, (enum cache_source)i};
        c->watches[i] =
            kube_watch_start(c->kube, sources[i].path, &handler, &c->reflectors[i], NULL);
        if (!c->watches[i]) {
            snprintf(err, errlen, "cannot start the %s reflector", sources[i].name);
            return EXT_ENOMEM;
        }
    }
    return EXT_OK;
}

void cache_cleanup(struct cache *c)
{
    for (int i = 0; i < CACHE_SOURCE_COUNT; i++) {
        kube_watch_stop(c->watches[i]);
        c->watches[i] = NULL;
        keys_cleanup(&c->known[i]);
    }
    cache_nudges_clear(c);
    free(c->nudge_gangs);
    c->nudge_gangs = NULL;
    c->nudge_gangs_cap = 0;
    policy_cluster_free(c->engine);
    c->engine = NULL;
    pthread_mutex_destroy(&c->lock);
}

bool cache_ready(struct cache *c, char *why, size_t len)
{
    for (int i = 0; i < CACHE_SOURCE_COUNT; i++) {
        if (!c->watches[i])
            continue;
        if (kube_watch_synced(c->watches[i]) ||
            (sources[i].optional && kube_watch_absent(c->watches[i])))
            continue;
        snprintf(why, len, "%s not listed yet", sources[i].name);
        return false;
    }
    return true;
}

void cache_nudge_gang(struct cache *c, const char *key)
{
    char *copy;

    for (size_t i = 0; i < c->nnudge_gangs; i++)
        if (strcmp(c->nudge_gangs[i], key) == 0)
            return;
    if (c->nnudge_gangs == c->nudge_gangs_cap) {
        size_t cap = c->nudge_gangs_cap ? c->nudge_gangs_cap * 2 : 16;
        char **v = realloc(c->nudge_gangs, cap * sizeof(*v));

        if (!v) {
            c->nudge_planned = true; /* every planned pod, then: nothing is forgotten */
            return;
        }
        c->nudge_gangs = v;
        c->nudge_gangs_cap = cap;
    }
    copy = strdup(key);
    if (!copy) {
        c->nudge_planned = true;
        return;
    }
    c->nudge_gangs[c->nnudge_gangs++] = copy;
}

void cache_nudges_clear(struct cache *c)
{
    for (size_t i = 0; i < c->nnudge_gangs; i++)
        free(c->nudge_gangs[i]);
    c->nnudge_gangs = 0;
    c->nudge = false;
    c->nudge_planned = false;
}

bool cache_queue_defined(const struct cache *c, const char *name)
{
    bool found;

    keys_find(&c->known[CACHE_QUEUES], name, &found);
    return found;
}

uint64_t cache_watch_restarts(const struct cache *c, enum cache_source src)
{
    return c->watches[src] ? kube_watch_restarts(c->watches[src]) : 0;
}
