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
    /* KAI-Scheduler's Queues, for clusters moving from KAI (KubeRay's kai-scheduler name):
     * the same engine queues, read only; a muster.dev Queue of the same name is the same queue. */
    [CACHE_QUEUES_KAI] = {"queues.scheduling.run.ai", "/apis/scheduling.run.ai/v2/queues", true},
    [CACHE_PODGROUPS_X] = {"podgroups.scheduling.x-k8s.io",
                           "/apis/scheduling.x-k8s.io/v1alpha1/podgroups", true},
    [CACHE_PODGROUPS_VOLCANO] = {"podgroups.scheduling.volcano.sh",
                                 "/apis/scheduling.volcano.sh/v1beta1/podgroups", true},
    [CACHE_PODGROUPS_KAI] = {"podgroups.scheduling.run.ai",
                             "/apis/scheduling.run.ai/v2alpha2/podgroups", true},
    [CACHE_PRIORITYCLASSES] = {"priorityclasses", "/apis/scheduling.k8s.io/v1/priorityclasses",
                               true},
    /* The Workload API is alpha (1.36) or beta and off by default (1.37): absent is normal. */
    [CACHE_WORKLOADS_V1ALPHA2] = {"workloads.v1alpha2",
                                  "/apis/scheduling.k8s.io/v1alpha2/workloads", true},
    [CACHE_WA_PODGROUPS_V1ALPHA2] = {"podgroups.scheduling.k8s.io.v1alpha2",
                                     "/apis/scheduling.k8s.io/v1alpha2/podgroups", true},
    [CACHE_WORKLOADS_V1BETA1] = {"workloads.v1beta1", "/apis/scheduling.k8s.io/v1beta1/workloads",
                                 true},
    [CACHE_WA_PODGROUPS_V1BETA1] = {"podgroups.scheduling.k8s.io.v1beta1",
                                    "/apis/scheduling.k8s.io/v1beta1/podgroups", true},
};

static bool is_podgroup(enum cache_source src)
{
    return src == CACHE_PODGROUPS_X || src == CACHE_PODGROUPS_VOLCANO || src == CACHE_PODGROUPS_KAI;
}

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

static void keys_add(struct cache_keys *k, const char *key)
{
    bool found;
    size_t at = keys_find(k, key, &found);
    char *copy;

    if (found)
        return;
    if (k->n == k->cap) {
        size_t cap = k->cap ? k->cap * 2 : 64;
        char **v = realloc(k->v, cap * sizeof(*v));

        if (!v)
            return;
        k->v = v;
        k->cap = cap;
    }
    if (!(copy = strdup(key)))
        return;
    memmove(&k->v[at + 1], &k->v[at], (k->n - at) * sizeof(*k->v));
    k->v[at] = copy;
    k->n++;
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

/* ---- Workload-API pods that came before their PodGroup or Workload -------- */

#define CACHE_EARLY_MAX 10000 /* pods kept; past it a pod waits for its next update */

static void early_drop(struct cache_early *e, const char *key)
{
    bool found;
    size_t at = keys_find(&e->keys, key, &found), after;

    if (!found)
        return;
    after = e->keys.n - at - 1;
    free(e->keys.v[at]);
    cJSON_Delete(e->pods[at]);
    memmove(&e->keys.v[at], &e->keys.v[at + 1], after * sizeof(*e->keys.v));
    memmove(&e->pods[at], &e->pods[at + 1], after * sizeof(*e->pods));
    e->keys.n--;
}

static bool early_grow(struct cache_early *e)
{
    size_t cap = e->cap ? e->cap * 2 : 16;
    char **keys = realloc(e->keys.v, cap * sizeof(*keys));
    cJSON **pods;

    if (!keys)
        return false;
    e->keys.v = keys;
    pods = realloc(e->pods, cap * sizeof(*pods));
    if (!pods)
        return false;
    e->pods = pods;
    e->cap = e->keys.cap = cap;
    return true;
}

/* Keep a copy of pod under key, replacing an older one; false if it cannot be kept. */
static bool early_put(struct cache_early *e, const char *key, const cJSON *pod)
{
    bool found;
    size_t at = keys_find(&e->keys, key, &found);
    cJSON *copy;
    char *name;

    if (!found && (e->keys.n == CACHE_EARLY_MAX || (e->keys.n == e->cap && !early_grow(e))))
        return false;
    if (!(copy = cJSON_Duplicate(pod, true)))
        return false;
    if (found) {
        cJSON_Delete(e->pods[at]);
        e->pods[at] = copy;
        return true;
    }
    if (!(name = strdup(key))) {
        cJSON_Delete(copy);
        return false;
    }
    memmove(&e->keys.v[at + 1], &e->keys.v[at], (e->keys.n - at) * sizeof(*e->keys.v));
    memmove(&e->pods[at + 1], &e->pods[at], (e->keys.n - at) * sizeof(*e->pods));
    e->keys.v[at] = name;
    e->pods[at] = copy;
    e->keys.n++;
    return true;
}

static void early_cleanup(struct cache_early *e)
{
    for (size_t i = 0; i < e->keys.n; i++)
        cJSON_Delete(e->pods[i]);
    free(e->pods);
    keys_cleanup(&e->keys);
    memset(e, 0, sizeof(*e));
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
    struct kube_decode_opts o = c->opts;
    struct policy_gang_spec s;
    char err[128];
    bool ok;

    o.lookup = NULL; /* called outside the lock: the key needs no lookup */
    ok = a && kube_podgroup_gang(obj, &o, a, &s, err, sizeof(err), NULL) == EXT_OK;

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
    if (is_podgroup(src))
        return podgroup_key(c, obj, buf, len);
    if (src == CACHE_NODES || src == CACHE_QUEUES || src == CACHE_QUEUES_KAI ||
        src == CACHE_PRIORITYCLASSES || !ns)
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

static bool upsert(struct cache *c, enum cache_source src, const cJSON *obj, const char *key);

static void gone_add(struct cache *c, const char *uid)
{
    char *copy;

    if (!uid || !*uid || !(copy = strdup(uid)))
        return;
    free(c->gone[c->gone_next]);
    c->gone[c->gone_next] = copy;
    c->gone_next = (c->gone_next + 1) % CACHE_GONE;
}

bool cache_pod_gone(const struct cache *c, const char *uid)
{
    for (size_t i = 0; uid && *uid && i < CACHE_GONE && c->gone[i]; i++)
        if (strcmp(c->gone[i], uid) == 0)
            return true;
    return false;
}

/* A pod told to the engine: kept for later if its PodGroup or Workload is not known yet. */
static void early_note(struct cache *c, const char *key, const cJSON *pod)
{
    const char *group = kube_pod_scheduling_group(pod);
    const char *ns = meta_string(pod, "namespace");

    if (group && !kube_refs_pod_group_known(c->refs, ns ? ns : "default", group)) {
        if (!early_put(&c->early, key, pod))
            ext_log_warn("pod kept in the gang its PodGroup's name gives until it changes", "pod",
                         key, "podGroup", group);
        return;
    }
    early_drop(&c->early, key);
}

/* A Workload or Workload-API PodGroup of namespace ns arrived: the pods kept for it are
 * decoded again, now into the gang and subgroup it gives them. */
static void early_resolve(struct cache *c, const char *ns)
{
    size_t nl = ns ? strlen(ns) : 0;

    for (size_t i = c->early.keys.n; nl && i-- > 0;) {
        cJSON *pod = c->early.pods[i];
        char key[512];

        if (strncmp(c->early.keys.v[i], ns, nl) != 0 || c->early.keys.v[i][nl] != '/' ||
            !kube_refs_pod_group_known(c->refs, ns, kube_pod_scheduling_group(pod)))
            continue;
        snprintf(key, sizeof(key), "%s", c->early.keys.v[i]);
        c->early.pods[i] = NULL; /* ours now; early_drop frees the key only */
        early_drop(&c->early, key);
        upsert(c, CACHE_PODS, pod, key);
        cJSON_Delete(pod);
    }
}

/* A Workload or Workload-API PodGroup is gone: so is the gang it declared. */
static void forget_ref(struct cache *c, enum kube_ref_kind kind, const char *key)
{
    char gang[512];

    if (kube_refs_forget(c->refs, kind, key, gang, sizeof(gang)) && *gang)
        policy_gang_forget(c->engine, gang, POLICY_GANG_WORKLOAD_API);
}

static void forget(struct cache *c, enum cache_source src, const char *key)
{
    char ns[256];
    const char *slash = strchr(key, '/');

    switch (src) {
    case CACHE_PRIORITYCLASSES:
        kube_refs_forget(c->refs, KUBE_REF_PRIORITY_CLASS, key, NULL, 0);
        break;
    case CACHE_WORKLOADS_V1ALPHA2:
    case CACHE_WORKLOADS_V1BETA1:
        forget_ref(c, KUBE_REF_WORKLOAD, key);
        break;
    case CACHE_WA_PODGROUPS_V1ALPHA2:
    case CACHE_WA_PODGROUPS_V1BETA1:
        forget_ref(c, KUBE_REF_POD_GROUP, key);
        break;
    case CACHE_NODES:
        policy_node_forget(c->engine, key);
        break;
    case CACHE_QUEUES:
    case CACHE_QUEUES_KAI: {
        /* The same name under the other API group is the same queue: it stays while one does. */
        bool other;

        keys_find(&c->known[src == CACHE_QUEUES ? CACHE_QUEUES_KAI : CACHE_QUEUES], key, &other);
        if (!other)
            policy_queue_forget(c->engine, key);
        break;
    }
    case CACHE_PODS:
        early_drop(&c->early, key);
        if (slash && (size_t)(slash - key) < sizeof(ns)) {
            struct policy_pod_view v;

            memcpy(ns, key, (size_t)(slash - key));
            ns[slash - key] = '\0';
            if (policy_pod_view_get(c->engine, ns, slash + 1, &v))
                gone_add(c, v.uid);
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

/* The gang a spec declares, told to the engine when it changes anything. */
static int gang_upsert(struct cache *c, const struct policy_gang_spec *s, char *err, size_t errlen)
{
    if (!policy_gang_changes(c->engine, s))
        return EXT_OK;
    c->nudge = true;
    return engine_rc(policy_gang_upsert(c->engine, s), err, errlen);
}

/* A Workload-API object recorded under key; a gang it declared before under another key goes. */
static int ref_upsert(struct cache *c, enum kube_ref_kind kind, const char *key,
                      const struct policy_gang_spec *s, const void *obj, char *err, size_t errlen)
{
    char old[512];
    int rc;

    kube_refs_forget(c->refs, kind, key, old, sizeof(old));
    if (*old && (s->key == NULL || strcmp(old, s->key) != 0))
        policy_gang_forget(c->engine, old, POLICY_GANG_WORKLOAD_API);
    if (kind == KUBE_REF_WORKLOAD) {
        const char *slash = strchr(key, '/');
        char ns[256];

        if (!slash || (size_t)(slash - key) >= sizeof(ns))
            return EXT_EINVAL;
        memcpy(ns, key, (size_t)(slash - key));
        ns[slash - key] = '\0';
        rc = kube_refs_workload(c->refs, ns, slash + 1, s);
    } else {
        rc = kube_refs_pod_group(c->refs, obj);
    }
    if (rc == EXT_OK && s->key != NULL)
        rc = gang_upsert(c, s, err, errlen);
    return rc;
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
        if (rc == EXT_OK)
            early_note(c, key, obj);
        break;
    }
    case CACHE_QUEUES:
    case CACHE_QUEUES_KAI: {
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
    case CACHE_PODGROUPS_VOLCANO:
    case CACHE_PODGROUPS_KAI: {
        struct policy_gang_spec s;

        rc = src == CACHE_RAYCLUSTERS
                 ? kube_raycluster_gang(obj, &c->opts, a, &s, err, sizeof(err), NULL)
                 : kube_podgroup_gang(obj, &c->opts, a, &s, err, sizeof(err), NULL);
        if (rc == EXT_OK)
            rc = gang_upsert(c, &s, err, sizeof(err));
        break;
    }
    case CACHE_PRIORITYCLASSES: {
        struct kube_priority_class pc;

        if ((rc = kube_priority_class_decode(obj, &pc, err, sizeof(err), NULL)) == EXT_OK)
            rc = kube_refs_priority_class(c->refs, &pc);
        break;
    }
    case CACHE_WORKLOADS_V1ALPHA2:
    case CACHE_WORKLOADS_V1BETA1: {
        struct policy_gang_spec s;

        if ((rc = kube_workload_gang(obj, &c->opts, a, &s, err, sizeof(err), NULL)) == EXT_OK)
            rc = ref_upsert(c, KUBE_REF_WORKLOAD, key, &s, NULL, err, sizeof(err));
        if (rc == EXT_OK)
            early_resolve(c, meta_string(obj, "namespace"));
        break;
    }
    case CACHE_WA_PODGROUPS_V1ALPHA2:
    case CACHE_WA_PODGROUPS_V1BETA1: {
        struct kube_pod_group g;

        if ((rc = kube_pod_group_decode(obj, &c->opts, a, &g, err, sizeof(err), NULL)) == EXT_OK)
            rc = ref_upsert(c, KUBE_REF_POD_GROUP, key, &g.spec, &g, err, sizeof(err));
        if (rc == EXT_OK)
            early_resolve(c, g.namespace_);
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

void cache_apply(struct cache *c, enum cache_source src, const char *type, const cJSON *obj)
{
    char key[512];

    if (!object_key(c, src, obj, key, sizeof(key)))
        return;
    pthread_mutex_lock(&c->lock);
    if (strcmp(type, "DELETED") == 0 || !upsert(c, src, obj, key)) {
        if (strcmp(type, "DELETED") == 0 || (src == CACHE_PODS && kube_pod_is_terminal(obj)))
            forget(c, src, key);
    } else {
        keys_add(&c->known[src], key);
    }
    pthread_mutex_unlock(&c->lock);
}

/* ---- reflector callbacks ------------------------------------------------- */

/* The full set after a (re)list: upsert all, forget what vanished meanwhile. */
static void on_replace(void *ctx, const cJSON *items)
{
    struct cache_reflector *sc = ctx;
    struct cache *c = sc->cache;
    struct cache_keys fresh = {0};
    const cJSON *obj;
    char key[512];

    pthread_mutex_lock(&c->lock);
    cJSON_ArrayForEach(obj, items)
    {
        if (object_key(c, sc->src, obj, key, sizeof(key)) && upsert(c, sc->src, obj, key))
            keys_add(&fresh, key);
    }
    for (size_t i = c->known[sc->src].n; i-- > 0;) {
        bool found;
        char *old = c->known[sc->src].v[i];

        keys_find(&fresh, old, &found);
        if (!found) {
            snprintf(key, sizeof(key), "%s", old);
            forget(c, sc->src, key);
        }
    }
    keys_cleanup(&c->known[sc->src]);
    c->known[sc->src] = fresh;
    pthread_mutex_unlock(&c->lock);
    ext_log_info("listed", "resource", sources[sc->src].name);
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
    c->refs = kube_refs_new();
    if (!c->refs) {
        snprintf(err, errlen, "out of memory");
        return EXT_ENOMEM;
    }
    c->lookup = kube_refs_lookup(c->refs);
    c->opts.lookup = &c->lookup;
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
    early_cleanup(&c->early);
    for (size_t i = 0; i < CACHE_GONE; i++) {
        free(c->gone[i]);
        c->gone[i] = NULL;
    }
    for (size_t i = 0; i < c->nnudge_gangs; i++)
        free(c->nudge_gangs[i]);
    c->nnudge_gangs = 0;
    policy_cluster_free(c->engine);
    c->engine = NULL;
    kube_refs_free(c->refs);
    c->refs = NULL;
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
    for (size_t i = 0; i < c->nnudge_gangs; i++)
        if (strcmp(c->nudge_gangs[i], key) == 0)
            return;
    if (c->nnudge_gangs < sizeof(c->nudge_gangs) / sizeof(c->nudge_gangs[0]) &&
        (c->nudge_gangs[c->nnudge_gangs] = strdup(key)))
        c->nnudge_gangs++;
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
