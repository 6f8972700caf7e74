/* cache.c - reflectors into the engine. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cache.h"
#include "base.h"
#include "kube.h"

/* ---- the watched kinds ---------------------------------------------------- */

struct decoded;
struct engine_keys;

/*
 * What an event of one kind does. decode runs outside the cache lock (the options are fixed
 * at start, the lookups take refs_lock for themselves), apply and forget under it. held lists
 * what the engine holds of the kind, for the reconcile after a key was lost; NULL where the
 * kind's objects are not the engine's to list (the refs store holds them). key: NULL for
 * "ns/name" ("name" for a cluster-scoped kind).
 */
struct cache_ops {
    void (*decode)(const struct cache *c, const cJSON *obj, struct ext_arena *a,
                   struct decoded *d);
    int (*apply)(struct cache *c, struct decoded *d);
    void (*forget)(struct cache *c, enum cache_source src, const char *key);
    void (*held)(const struct cache *c, enum cache_source src, struct engine_keys *e);
    bool (*key)(const struct cache *c, const cJSON *obj, char *buf, size_t len);
};

/* Kinds of one family declare the same engine objects: any PodGroup flavour declares its
 * gang as a PodGroup, either Queue group the same queue. */
enum cache_family { FAMILY_NONE, FAMILY_QUEUES, FAMILY_PODGROUPS };

struct cache_kind {
    const char *name;        /* in logs and the watch-restart metric */
    const char *api_version; /* group/version, as the objects carry it */
    const char *kind;
    const char *path;        /* listed and watched */
    bool optional;           /* a CRD or an API that may be off: absent, watched for it to appear */
    bool cluster_scoped;
    enum cache_family family;
    enum policy_gang_source gang; /* what a gang kind declares */
    const struct cache_ops *ops;
    bool protobuf; /* read as protobuf when watchProtobuf is on: the kinds proto.c knows */
};

static const struct cache_ops node_ops, pod_ops, queue_ops, raycluster_ops, podgroup_ops,
    priority_class_ops, workload_ops, wa_podgroup_ops, rayjob_ops, rayservice_ops, topology_ops,
    kueue_topology_ops;

/* One row per watched kind: a new kind is a row (and its cache_source). */
static const struct cache_kind kinds[CACHE_SOURCE_COUNT] = {
    [CACHE_NODES] = {"nodes", "v1", "Node", "/api/v1/nodes", false, true, FAMILY_NONE, 0,
                     &node_ops, true},
    [CACHE_PODS] = {"pods", "v1", "Pod", "/api/v1/pods", false, false, FAMILY_NONE, 0, &pod_ops,
                    true},
    [CACHE_RAYCLUSTERS] = {"rayclusters", "ray.io/v1", "RayCluster", "/apis/ray.io/v1/rayclusters",
                           true, false, FAMILY_NONE, POLICY_GANG_WORKLOAD, &raycluster_ops},
    [CACHE_QUEUES] = {"queues", "muster.dev/v1alpha1", "Queue", "/apis/muster.dev/v1alpha1/queues",
                      true, true, FAMILY_QUEUES, 0, &queue_ops},
    /* KAI-Scheduler's Queues, for clusters moving from KAI (KubeRay's kai-scheduler name):
     * the same engine queues, read only; a muster.dev Queue of the same name is the same queue. */
    [CACHE_QUEUES_KAI] = {"queues.scheduling.run.ai", "scheduling.run.ai/v2", "Queue",
                          "/apis/scheduling.run.ai/v2/queues", true, true, FAMILY_QUEUES, 0,
                          &queue_ops},
    [CACHE_PODGROUPS_X] = {"podgroups.scheduling.x-k8s.io", "scheduling.x-k8s.io/v1alpha1",
                           "PodGroup", "/apis/scheduling.x-k8s.io/v1alpha1/podgroups", true, false,
                           FAMILY_PODGROUPS, POLICY_GANG_PODGROUP, &podgroup_ops},
    [CACHE_PODGROUPS_VOLCANO] = {"podgroups.scheduling.volcano.sh",
                                 "scheduling.volcano.sh/v1beta1", "PodGroup",
                                 "/apis/scheduling.volcano.sh/v1beta1/podgroups", true, false,
                                 FAMILY_PODGROUPS, POLICY_GANG_PODGROUP, &podgroup_ops},
    [CACHE_PODGROUPS_KAI] = {"podgroups.scheduling.run.ai", "scheduling.run.ai/v2alpha2",
                             "PodGroup", "/apis/scheduling.run.ai/v2alpha2/podgroups", true, false,
                             FAMILY_PODGROUPS, POLICY_GANG_PODGROUP, &podgroup_ops},
    [CACHE_PRIORITYCLASSES] = {"priorityclasses", "scheduling.k8s.io/v1", "PriorityClass",
                               "/apis/scheduling.k8s.io/v1/priorityclasses", true, true,
                               FAMILY_NONE, 0, &priority_class_ops},
    /* The Workload API is alpha (1.36) or beta and off by default (1.37): absent is normal. */
    [CACHE_WORKLOADS_V1ALPHA2] = {"workloads.v1alpha2", "scheduling.k8s.io/v1alpha2", "Workload",
                                  "/apis/scheduling.k8s.io/v1alpha2/workloads", true, false,
                                  FAMILY_NONE, 0, &workload_ops},
    [CACHE_WA_PODGROUPS_V1ALPHA2] = {"podgroups.scheduling.k8s.io.v1alpha2",
                                     "scheduling.k8s.io/v1alpha2", "PodGroup",
                                     "/apis/scheduling.k8s.io/v1alpha2/podgroups", true, false,
                                     FAMILY_NONE, 0, &wa_podgroup_ops},
    [CACHE_WORKLOADS_V1BETA1] = {"workloads.v1beta1", "scheduling.k8s.io/v1beta1", "Workload",
                                 "/apis/scheduling.k8s.io/v1beta1/workloads", true, false,
                                 FAMILY_NONE, 0, &workload_ops},
    [CACHE_WA_PODGROUPS_V1BETA1] = {"podgroups.scheduling.k8s.io.v1beta1",
                                    "scheduling.k8s.io/v1beta1", "PodGroup",
                                    "/apis/scheduling.k8s.io/v1beta1/podgroups", true, false,
                                    FAMILY_NONE, 0, &wa_podgroup_ops},
    /* KubeRay's other two: a RayJob's submitter joins its cluster's gang, its room held until
     * it comes; a RayService's clusters are gangs of their own (RayClusters). */
    [CACHE_RAYJOBS] = {"rayjobs", "ray.io/v1", "RayJob", "/apis/ray.io/v1/rayjobs", true, false,
                       FAMILY_NONE, 0, &rayjob_ops},
    [CACHE_RAYSERVICES] = {"rayservices", "ray.io/v1", "RayService", "/apis/ray.io/v1/rayservices",
                           true, false, FAMILY_NONE, 0, &rayservice_ops},
    /* Where nodes sit (docs/topology.md): KAI's Topology, named by KAI's constraints, and
     * Kueue's, whose levels Kueue's annotations name. */
    [CACHE_TOPOLOGIES_KAI] = {"topologies.kai.scheduler", "kai.scheduler/v1alpha1", "Topology",
                              "/apis/kai.scheduler/v1alpha1/topologies", true, true, FAMILY_NONE,
                              0, &topology_ops},
    [CACHE_TOPOLOGIES_KUEUE] = {"topologies.kueue.x-k8s.io", "kueue.x-k8s.io/v1beta2", "Topology",
                                "/apis/kueue.x-k8s.io/v1beta2/topologies", true, true,
                                FAMILY_NONE, 0, &kueue_topology_ops},
};

const char *cache_source_name(enum cache_source src)
{
    return kinds[src].name;
}

enum cache_source cache_source_of(const char *api_version, const char *kind)
{
    for (int i = 0; api_version && kind && i < CACHE_SOURCE_COUNT; i++)
        if (strcmp(kinds[i].api_version, api_version) == 0 && strcmp(kinds[i].kind, kind) == 0)
            return (enum cache_source)i;
    return CACHE_SOURCE_COUNT;
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

/* Room for one more key; false when out of memory. */
static bool keys_grow(struct cache_keys *k)
{
    size_t cap = k->cap ? k->cap * 2 : 64;
    char **v = realloc(k->v, cap * sizeof(*v));

    if (!v)
        return false;
    k->v = v;
    k->cap = cap;
    return true;
}

/* False when out of memory: the key is not recorded. */
static bool keys_add(struct cache_keys *k, const char *key)
{
    bool found;
    size_t at = keys_find(k, key, &found);
    char *copy;

    if (found)
        return true;
    if (k->n == k->cap && !keys_grow(k))
        return false;
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

/* "ns/name" for namespaced objects, "name" for cluster-scoped ones, or the kind's own key. */
static bool object_key(const struct cache *c, enum cache_source src, const cJSON *obj, char *buf,
                       size_t len)
{
    const char *ns = meta_string(obj, "namespace");
    const char *name = meta_string(obj, "name");

    if (!name)
        return false;
    if (kinds[src].ops->key)
        return kinds[src].ops->key(c, obj, buf, len);
    if (kinds[src].cluster_scoped || !ns)
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

static void reapply_pod(struct cache *c, const cJSON *pod, const char *key);

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

/* Does the pod decode as it will stay: the Workload-API PodGroup (and Workload) it names, or
 * the RayJob whose submitter it is, known? */
static bool pod_refs_known(struct cache *c, const cJSON *pod)
{
    const char *group = kube_pod_scheduling_group(pod);
    const char *ns = meta_string(pod, "namespace");
    char rayjob[600];
    bool known = true;

    pthread_mutex_lock(&c->refs_lock);
    if (group)
        known = kube_refs_pod_group_known(c->refs, ns ? ns : "default", group);
    if (known && kube_pod_rayjob(pod, rayjob, sizeof(rayjob)))
        known = kube_refs_known(c->refs, KUBE_REF_RAYJOB, rayjob);
    pthread_mutex_unlock(&c->refs_lock);
    return known;
}

/* A pod told to the engine: kept for later if its PodGroup, Workload or RayJob is not known
 * yet. */
static void early_note(struct cache *c, const char *key, const cJSON *pod)
{
    if (!pod_refs_known(c, pod)) {
        if (!early_put(&c->early, key, pod))
            ext_log_warn("pod kept in the gang its labels give until it changes", "pod", key);
        return;
    }
    early_drop(&c->early, key);
}

/* A Workload, Workload-API PodGroup or RayJob of namespace ns arrived: the pods kept for it
 * are decoded again, now into the gang and subgroup it gives them. */
static void early_resolve(struct cache *c, const char *ns)
{
    size_t nl = ns ? strlen(ns) : 0;

    for (size_t i = c->early.keys.n; nl && i-- > 0;) {
        cJSON *pod = c->early.pods[i];
        char key[512];

        if (strncmp(c->early.keys.v[i], ns, nl) != 0 || c->early.keys.v[i][nl] != '/')
            continue;
        if (!pod_refs_known(c, pod))
            continue;
        snprintf(key, sizeof(key), "%s", c->early.keys.v[i]);
        c->early.pods[i] = NULL; /* ours now; early_drop frees the key only */
        early_drop(&c->early, key);
        reapply_pod(c, pod, key);
        cJSON_Delete(pod);
    }
}

static int gang_upsert(struct cache *c, const struct policy_gang_spec *s, char *err,
                       size_t errlen);

/*
 * Under refs_lock: declare Workload wl's gang as muster follows it, its PodGroups' minCounts
 * counted in (kube_refs_workload_gang); nothing when the Workload is not known yet. Its
 * strings live in the refs store, so it is told to the engine before the lock goes.
 */
static int workload_declare(struct cache *c, const char *wl, char *err, size_t errlen)
{
    struct ext_arena *a = ext_arena_new();
    struct policy_gang_spec s;
    int rc = EXT_OK;

    if (a == NULL)
        return ext_errf(err, errlen, EXT_ENOMEM, "out of memory");
    if (kube_refs_workload_gang(c->refs, wl, a, &s))
        rc = gang_upsert(c, &s, err, errlen);
    ext_arena_free(a);
    return rc;
}

/* A Workload or Workload-API PodGroup is gone: so is the gang it declared; a PodGroup's
 * Workload counts it no more. */
static void forget_ref(struct cache *c, enum kube_ref_kind kind, const char *key)
{
    char gang[512], wl[600] = "", err[256];
    bool had;

    pthread_mutex_lock(&c->refs_lock);
    if (kind == KUBE_REF_POD_GROUP && !kube_refs_pod_group_workload(c->refs, key, wl, sizeof(wl)))
        wl[0] = '\0';
    had = kube_refs_forget(c->refs, kind, key, gang, sizeof(gang));
    if (had && *wl && workload_declare(c, wl, err, sizeof(err)) != EXT_OK)
        ext_log_warn("object skipped", "resource", "workloads", "object", wl, "error", err);
    pthread_mutex_unlock(&c->refs_lock);
    if (had && *gang)
        policy_gang_forget(c->engine, gang, POLICY_GANG_WORKLOAD_API);
}

/* ---- what each kind's delete does: the engine (or the refs) forgets the object; the
 * source's key set is the caller's business ---------------------------------------------- */

static void priority_class_forget(struct cache *c, enum cache_source src, const char *key)
{
    pthread_mutex_lock(&c->refs_lock);
    kube_refs_forget(c->refs, KUBE_REF_PRIORITY_CLASS, key, NULL, 0);
    pthread_mutex_unlock(&c->refs_lock);
}

static void workload_forget(struct cache *c, enum cache_source src, const char *key)
{
    forget_ref(c, KUBE_REF_WORKLOAD, key);
}

static void wa_podgroup_forget(struct cache *c, enum cache_source src, const char *key)
{
    forget_ref(c, KUBE_REF_POD_GROUP, key);
}

static void topology_forget(struct cache *c, enum cache_source src, const char *key)
{
    policy_topology_forget(c->engine, key);
}

/* A Kueue Topology is the engine's "kueue/<name>" (kube_topology_decode). */
static bool kueue_topology_key(const struct cache *c, const cJSON *obj, char *buf, size_t len)
{
    const char *name = meta_string(obj, "name");

    (void)c;
    if (!name)
        return false;
    snprintf(buf, len, "kueue/%s", name);
    return true;
}

static void node_forget(struct cache *c, enum cache_source src, const char *key)
{
    policy_node_forget(c->engine, key);
}

/* Is key told to the engine by another kind of src's family? */
static bool family_holds(const struct cache *c, enum cache_source src, const char *key)
{
    bool found = false;

    for (int s = 0; !found && s < CACHE_SOURCE_COUNT; s++)
        if (s != (int)src && kinds[src].family != FAMILY_NONE &&
            kinds[s].family == kinds[src].family)
            keys_find(&c->known[s], key, &found);
    return found;
}

/* The same name under the other API group is the same queue: it stays while one does. */
static void queue_forget(struct cache *c, enum cache_source src, const char *key)
{
    if (!family_holds(c, src, key))
        policy_queue_forget(c->engine, key);
}

static void pod_forget(struct cache *c, enum cache_source src, const char *key)
{
    const char *slash = strchr(key, '/');
    struct policy_pod_view v;
    char ns[256];

    early_drop(&c->early, key);
    if (!slash || (size_t)(slash - key) >= sizeof(ns))
        return;
    memcpy(ns, key, (size_t)(slash - key));
    ns[slash - key] = '\0';
    if (policy_pod_view_get(c->engine, ns, slash + 1, &v))
        gone_add(c, v.uid);
    policy_pod_forget(c->engine, ns, slash + 1);
}

/* A RayCluster or PodGroup: what it declared of its gang. */
static void gang_forget(struct cache *c, enum cache_source src, const char *key)
{
    policy_gang_forget(c->engine, key, kinds[src].gang);
}

static void forget_engine(struct cache *c, enum cache_source src, const char *key)
{
    kinds[src].ops->forget(c, src, key);
}

static void forget(struct cache *c, enum cache_source src, const char *key)
{
    forget_engine(c, src, key);
    keys_remove(&c->known[src], key);
}

int cache_engine_rc(int prc, const char *what, char *err, size_t errlen)
{
    int code = prc == POLICY_ENOMEM   ? EXT_ENOMEM
               : prc == POLICY_ENOENT ? EXT_ENOTFOUND
               : prc == POLICY_ELIMIT ? EXT_ETOOBIG
                                      : EXT_EINVAL;

    if (prc == POLICY_OK)
        return EXT_OK;
    return ext_errf(err, errlen, code, "%s: %s", what, policy_strerror(prc));
}

/* The engine's refusal of a watched object. */
static int engine_rc(int prc, char *err, size_t errlen)
{
    return cache_engine_rc(prc, "the engine refused it", err, errlen);
}

/*
 * The gang a spec declares, told to the engine when it changes anything. Pods turned away
 * may fit now: kube-scheduler does not watch these kinds, so they are handed back. A gang
 * declared before any member of it came (a RayCluster before its pods) changes nothing
 * anyone else waits for: only its own members (any that come meanwhile) are handed back.
 */
static int gang_upsert(struct cache *c, const struct policy_gang_spec *s, char *err, size_t errlen)
{
    struct policy_gang_view v;

    if (!policy_gang_changes(c->engine, s))
        return EXT_OK;
    if (s->key && (!policy_gang_view_get(c->engine, s->key, &v) || v.members == 0))
        cache_nudge_gang_members(c, s->key);
    else
        c->nudge = true;
    return engine_rc(policy_gang_upsert(c->engine, s), err, errlen);
}

/* Under refs_lock: record a Workload-API object (obj: the Workload's JSON, or the decoded
 * PodGroup); the gang it declared before goes into old. */
static int ref_record(struct cache *c, enum kube_ref_kind kind, const char *key,
                      const struct policy_gang_spec *s, const void *obj, char *old, size_t oldlen)
{
    kube_refs_forget(c->refs, kind, key, old, oldlen);
    if (kind == KUBE_REF_WORKLOAD) {
        const char *slash = strchr(key, '/');
        char ns[256];

        if (!slash || (size_t)(slash - key) >= sizeof(ns))
            return EXT_EINVAL;
        memcpy(ns, key, (size_t)(slash - key));
        ns[slash - key] = '\0';
        return kube_refs_workload(c->refs, ns, slash + 1, s, kube_workload_single_template(obj));
    }
    return kube_refs_pod_group(c->refs, obj);
}

/* A Workload-API object recorded under key; a gang it declared before under another key goes. */
static int ref_upsert(struct cache *c, enum kube_ref_kind kind, const char *key,
                      const struct policy_gang_spec *s, const void *obj, char *err, size_t errlen)
{
    char old[512], wl[600] = "";
    int rc;

    pthread_mutex_lock(&c->refs_lock);
    rc = ref_record(c, kind, key, s, obj, old, sizeof(old));
    if (*old && (s->key == NULL || strcmp(old, s->key) != 0))
        policy_gang_forget(c->engine, old, POLICY_GANG_WORKLOAD_API);
    /* A Workload declares its gang with its PodGroups counted in; a PodGroup made from one
     * changes what its Workload declares; a standalone PodGroup declares its own. */
    if (rc == EXT_OK && kind == KUBE_REF_WORKLOAD)
        rc = workload_declare(c, key, err, errlen);
    else if (rc == EXT_OK && kube_refs_pod_group_workload(c->refs, key, wl, sizeof(wl)))
        rc = workload_declare(c, wl, err, errlen);
    else if (rc == EXT_OK && s->key != NULL)
        rc = gang_upsert(c, s, err, errlen);
    pthread_mutex_unlock(&c->refs_lock);
    return rc;
}


/*
 * One object on its way into the engine. Decoding takes no cache lock (the
 * options are fixed at start, and the lookups take refs_lock for themselves);
 * only applying it does, so filter and bind calls wait for the engine's part of
 * a watch event or a relist, not for the JSON.
 */
struct decoded {
    enum cache_source src;
    const cJSON *obj; /* what was decoded, alive while the decoded is applied */
    char key[512];
    int rc;        /* of the decode; EXT_OK: spec below is filled */
    bool skip;     /* not a workload (a reservation pod, a finished pod): not kept, no word */
    bool terminal; /* a finished pod: forgotten */
    char err[256];
    union {
        struct policy_node_spec node;
        struct policy_pod_spec pod;
        struct policy_queue_spec queue;
        struct policy_gang_spec gang;
        struct kube_priority_class pc;
        struct kube_pod_group pg;
        struct kube_rayjob rj;
        struct kube_rayservice rs;
        struct policy_topology_spec topology;
    } spec;
};

/* ---- what each kind's decode does (outside the lock; strings in the arena) ---------- */

#define DECODE_ARGS d->err, sizeof(d->err), NULL

static void node_decode(const struct cache *c, const cJSON *obj, struct ext_arena *a,
                        struct decoded *d)
{
    d->rc = kube_node_decode(obj, a, &d->spec.node, DECODE_ARGS);
}

static void pod_decode(const struct cache *c, const cJSON *obj, struct ext_arena *a,
                       struct decoded *d)
{
    d->terminal = kube_pod_is_terminal(obj);
    d->skip = d->terminal || cache_is_reservation_pod(c, obj);
    d->rc = d->skip ? EXT_OK : kube_pod_decode(obj, &c->opts, a, &d->spec.pod, DECODE_ARGS);
}

static void queue_decode(const struct cache *c, const cJSON *obj, struct ext_arena *a,
                         struct decoded *d)
{
    d->rc = kube_queue_decode(obj, a, &d->spec.queue, DECODE_ARGS);
}

static void raycluster_decode(const struct cache *c, const cJSON *obj, struct ext_arena *a,
                              struct decoded *d)
{
    d->rc = kube_raycluster_gang(obj, &c->opts, a, &d->spec.gang, DECODE_ARGS);
}

static void podgroup_decode(const struct cache *c, const cJSON *obj, struct ext_arena *a,
                            struct decoded *d)
{
    d->rc = kube_podgroup_gang(obj, &c->opts, a, &d->spec.gang, DECODE_ARGS);
}

static void priority_class_decode(const struct cache *c, const cJSON *obj, struct ext_arena *a,
                                  struct decoded *d)
{
    d->rc = kube_priority_class_decode(obj, &d->spec.pc, DECODE_ARGS);
}

static void workload_decode(const struct cache *c, const cJSON *obj, struct ext_arena *a,
                            struct decoded *d)
{
    d->rc = kube_workload_gang(obj, &c->opts, a, &d->spec.gang, DECODE_ARGS);
}

static void wa_podgroup_decode(const struct cache *c, const cJSON *obj, struct ext_arena *a,
                               struct decoded *d)
{
    d->rc = kube_pod_group_decode(obj, &c->opts, a, &d->spec.pg, DECODE_ARGS);
}

static void rayjob_decode(const struct cache *c, const cJSON *obj, struct ext_arena *a,
                          struct decoded *d)
{
    d->rc = kube_rayjob_decode(obj, &c->opts, a, &d->spec.rj, DECODE_ARGS);
}

static void rayservice_decode(const struct cache *c, const cJSON *obj, struct ext_arena *a,
                              struct decoded *d)
{
    d->rc = kube_rayservice_decode(obj, a, &d->spec.rs, DECODE_ARGS);
}

static void topology_decode(const struct cache *c, const cJSON *obj, struct ext_arena *a,
                            struct decoded *d)
{
    d->rc = kube_topology_decode(obj, a, &d->spec.topology, DECODE_ARGS);
}

/* Decode obj into d (strings in arena a). d->rc says whether it is one to keep. */
static void decode(const struct cache *c, enum cache_source src, const cJSON *obj,
                   struct ext_arena *a, struct decoded *d)
{
    d->src = src;
    d->obj = obj;
    d->err[0] = '\0';
    d->skip = d->terminal = false;
    if (!a) {
        d->rc = EXT_ENOMEM;
        return;
    }
    kinds[src].ops->decode(c, obj, a, d);
}

/* A Pod's bind time (Unix ms, from the decoder) on the engine's clock: as long before now as it
 * was before the wall clock's now. 0 stays "not known". */
static int64_t bound_on_engine_clock(int64_t bound_at_unix, int64_t now)
{
    int64_t t;

    if (bound_at_unix == 0)
        return 0;
    t = now - (ext_wall_ms() - bound_at_unix);
    return t != 0 ? t : -1;
}

/* ---- what each kind's add or update does (under the lock) ---------------------------- */

static int node_apply(struct cache *c, struct decoded *d)
{
    uint64_t offer = policy_offer_epoch(c->engine);
    int rc = engine_rc(policy_node_upsert(c->engine, &d->spec.node), d->err, sizeof(d->err));

    /* kube-scheduler retries the pods it parked on its own event for this node, maybe
     * before this one arrived: hand them back once more (heartbeats change nothing). */
    if (rc == EXT_OK && policy_offer_epoch(c->engine) != offer)
        c->nudge = true;
    return rc;
}

static int pod_apply(struct cache *c, struct decoded *d)
{
    int64_t now = ext_now_ms();
    int rc;

    d->spec.pod.bound_at = bound_on_engine_clock(d->spec.pod.bound_at, now);
    rc = engine_rc(policy_pod_upsert(c->engine, &d->spec.pod, now), d->err, sizeof(d->err));
    if (rc == EXT_OK)
        early_note(c, d->key, d->obj);
    return rc;
}

/* A muster Queue's status says what it used lately, as muster wrote it before a restart: the
 * engine takes it until it has sampled the queue itself (policy_queue_usage_seed). KAI's
 * Queues' status is KAI's. */
static void seed_usage(struct cache *c, const struct decoded *d)
{
    double share[POLICY_RES_COUNT];
    int64_t at;

    if (d->src != CACHE_QUEUES || !kube_queue_recent_usage(d->obj, share, &at))
        return;
    policy_queue_usage_seed(c->engine, d->spec.queue.name, share,
                            bound_on_engine_clock(at, ext_now_ms()));
}

static int queue_apply(struct cache *c, struct decoded *d)
{
    int rc = EXT_OK;

    if (policy_queue_changes(c->engine, &d->spec.queue)) {
        c->nudge = true;
        rc = engine_rc(policy_queue_upsert(c->engine, &d->spec.queue), d->err, sizeof(d->err));
    }
    if (rc == EXT_OK)
        seed_usage(c, d);
    return rc;
}

static int priority_class_apply(struct cache *c, struct decoded *d)
{
    int rc;

    pthread_mutex_lock(&c->refs_lock);
    rc = kube_refs_priority_class(c->refs, &d->spec.pc);
    pthread_mutex_unlock(&c->refs_lock);
    return rc;
}

static int workload_apply(struct cache *c, struct decoded *d)
{
    int rc = ref_upsert(c, KUBE_REF_WORKLOAD, d->key, &d->spec.gang, d->obj, d->err,
                        sizeof(d->err));

    if (rc == EXT_OK)
        early_resolve(c, meta_string(d->obj, "namespace"));
    return rc;
}

static int wa_podgroup_apply(struct cache *c, struct decoded *d)
{
    int rc = ref_upsert(c, KUBE_REF_POD_GROUP, d->key, &d->spec.pg.spec, &d->spec.pg, d->err,
                        sizeof(d->err));

    if (rc == EXT_OK)
        early_resolve(c, d->spec.pg.namespace_);
    return rc;
}

/*
 * A RayJob: its submitter pods decode into the gang it names (kept for later ones decoded
 * again); the room held for its submitter moves with its cluster and goes when it ends.
 */
static int rayjob_apply(struct cache *c, struct decoded *d)
{
    const struct kube_rayjob *j = &d->spec.rj;
    char old[512];
    int rc;

    pthread_mutex_lock(&c->refs_lock);
    rc = kube_refs_rayjob(c->refs, j, old, sizeof(old));
    pthread_mutex_unlock(&c->refs_lock);
    if (rc != EXT_OK)
        return ext_errf(d->err, sizeof(d->err), rc, "RayJob %s not recorded", j->key);
    if (*old && (!j->holds || strcmp(old, j->hold.gang) != 0))
        policy_hold_forget(c->engine, old, KUBE_RAYJOB_SUBMITTER);
    if (j->holds)
        rc = engine_rc(policy_hold_upsert(c->engine, &j->hold, ext_now_ms()), d->err,
                       sizeof(d->err));
    early_resolve(c, j->namespace_);
    return rc;
}

static void rayjob_forget(struct cache *c, enum cache_source src, const char *key)
{
    char held[512];

    pthread_mutex_lock(&c->refs_lock);
    kube_refs_forget(c->refs, KUBE_REF_RAYJOB, key, held, sizeof(held));
    pthread_mutex_unlock(&c->refs_lock);
    if (*held)
        policy_hold_forget(c->engine, held, KUBE_RAYJOB_SUBMITTER);
}

static int rayservice_apply(struct cache *c, struct decoded *d)
{
    int rc;

    pthread_mutex_lock(&c->refs_lock);
    rc = kube_refs_rayservice(c->refs, &d->spec.rs);
    pthread_mutex_unlock(&c->refs_lock);
    return rc;
}

static void rayservice_forget(struct cache *c, enum cache_source src, const char *key)
{
    pthread_mutex_lock(&c->refs_lock);
    kube_refs_forget(c->refs, KUBE_REF_RAYSERVICE, key, NULL, 0);
    pthread_mutex_unlock(&c->refs_lock);
}

/* A Topology: gangs waiting for it, or for room its domains now give, are asked about again. */
static int topology_apply(struct cache *c, struct decoded *d)
{
    int rc = engine_rc(policy_topology_upsert(c->engine, &d->spec.topology), d->err,
                       sizeof(d->err));

    c->nudge |= rc == EXT_OK;
    return rc;
}

/* A RayCluster or PodGroup: the gang it declares. */
static int gang_apply(struct cache *c, struct decoded *d)
{
    return gang_upsert(c, &d->spec.gang, d->err, sizeof(d->err));
}

/* Under the lock: hand a decoded object to the engine (or the refs); false if it is not one to
 * keep. */
static bool apply(struct cache *c, struct decoded *d)
{
    int rc = d->rc;

    if (d->skip)
        return false;
    if (rc == EXT_OK)
        rc = kinds[d->src].ops->apply(c, d);
    if (rc != EXT_OK)
        ext_log_warn("object skipped", "resource", kinds[d->src].name, "object", d->key, "error",
                     *d->err ? d->err : ext_strerror(rc));
    return rc == EXT_OK;
}

/* The engine holds an object whose key could not be recorded: the next list reconciles. */
static void key_lost(struct cache *c, enum cache_source src, const char *key)
{
    c->keys_lost[src] = true;
    ext_log_error("out of memory recording an object's key; the next list of its resource "
                  "forgets what is gone against the engine itself",
                  "resource", kinds[src].name, "object", key);
}

/* A pod early_note kept, decoded and applied again now that its gang is known (lock held). */
static void reapply_pod(struct cache *c, const cJSON *pod, const char *key)
{
    struct ext_arena *a = ext_arena_new();
    struct decoded *d = malloc(sizeof(*d));

    if (d && a) {
        snprintf(d->key, sizeof(d->key), "%s", key);
        decode(c, CACHE_PODS, pod, a, d);
        if (apply(c, d) && !keys_add(&c->known[CACHE_PODS], d->key))
            key_lost(c, CACHE_PODS, d->key);
    } else {
        ext_log_error("out of memory decoding a pod again for its gang; it keeps the gang its "
                      "PodGroup's name gives until it changes",
                      "pod", key);
    }
    free(d);
    ext_arena_free(a);
}

void cache_apply(struct cache *c, enum cache_source src, const char *type, const cJSON *obj)
{
    bool deleted = strcmp(type, "DELETED") == 0;
    struct ext_arena *a = NULL;
    struct decoded d;

    if (!object_key(c, src, obj, d.key, sizeof(d.key)))
        return;
    if (!deleted)
        decode(c, src, obj, a = ext_arena_new(), &d);
    pthread_mutex_lock(&c->lock);
    if (deleted || !apply(c, &d)) {
        if (deleted || d.terminal)
            forget(c, src, d.key);
    } else if (!keys_add(&c->known[src], d.key)) {
        key_lost(c, src, d.key);
    }
    pthread_mutex_unlock(&c->lock);
    ext_arena_free(a);
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

    if (v->declared[kinds[e->src].gang])
        engine_key(e, v->key);
}

/* ---- what the engine holds of each kind ------------------------------------ */

static void node_held(const struct cache *c, enum cache_source src, struct engine_keys *e)
{
    policy_each_node(c->engine, engine_node, e);
}

static void pod_held(const struct cache *c, enum cache_source src, struct engine_keys *e)
{
    policy_each_pod(c->engine, engine_pod, e);
}

static void queue_held(const struct cache *c, enum cache_source src, struct engine_keys *e)
{
    policy_each_queue(c->engine, engine_queue, e);
}

static void gang_held(const struct cache *c, enum cache_source src, struct engine_keys *e)
{
    policy_each_gang(c->engine, engine_gang, e);
}

/* Topologies of one kind: Kueue's are "kueue/<name>", KAI's the rest. */
static void engine_topology(const struct policy_topology_view *v, void *ctx)
{
    struct engine_keys *e = ctx;
    bool kueue = strncmp(v->name, "kueue/", 6) == 0;

    if (kueue == (e->src == CACHE_TOPOLOGIES_KUEUE))
        engine_key(e, v->name);
}

static void topology_held(const struct cache *c, enum cache_source src, struct engine_keys *e)
{
    policy_each_topology(c->engine, engine_topology, e);
}

/*
 * What the engine holds from this source; false if even that could not be
 * listed, or if the source's objects are not the engine's to list
 * (PriorityClasses and the Workload API's objects live in the refs store).
 */
static bool engine_keys(struct cache *c, enum cache_source src, struct cache_keys *out)
{
    struct engine_keys e = {out, src, false};

    if (!kinds[src].ops->held)
        return false;
    kinds[src].ops->held(c, src, &e);
    return !e.lost;
}

/*
 * A list after a key was lost: what the engine holds from this source but
 * the list no longer has is forgotten. (Keys another source of the same kind
 * holds are kept: every PodGroup flavour declares gangs as PodGroups, and
 * either Queue group declares the same queues.)
 */
static bool reconcile(struct cache *c, enum cache_source src, const struct cache_keys *fresh)
{
    struct cache_keys held = {0};
    bool found, ok = engine_keys(c, src, &held);

    for (size_t i = 0; ok && i < held.n; i++) {
        keys_find(fresh, held.v[i], &found);
        if (!found && !family_holds(c, src, held.v[i]))
            forget(c, src, held.v[i]);
    }
    keys_cleanup(&held);
    return ok;
}

/* ---- the kinds' operations, as the table above names them -------------------- */

static const struct cache_ops node_ops = {node_decode, node_apply, node_forget, node_held, NULL};
static const struct cache_ops pod_ops = {pod_decode, pod_apply, pod_forget, pod_held, NULL};
static const struct cache_ops queue_ops = {queue_decode, queue_apply, queue_forget, queue_held,
                                           NULL};
static const struct cache_ops raycluster_ops = {raycluster_decode, gang_apply, gang_forget,
                                                gang_held, NULL};
/* Keyed by the RayCluster that owns it, when one does (podgroup_key). */
static const struct cache_ops podgroup_ops = {podgroup_decode, gang_apply, gang_forget, gang_held,
                                              podgroup_key};
static const struct cache_ops priority_class_ops = {priority_class_decode, priority_class_apply,
                                                    priority_class_forget, NULL, NULL};
static const struct cache_ops workload_ops = {workload_decode, workload_apply, workload_forget,
                                              NULL, NULL};
static const struct cache_ops wa_podgroup_ops = {wa_podgroup_decode, wa_podgroup_apply,
                                                 wa_podgroup_forget, NULL, NULL};
static const struct cache_ops rayjob_ops = {rayjob_decode, rayjob_apply, rayjob_forget, NULL,
                                            NULL};
static const struct cache_ops rayservice_ops = {rayservice_decode, rayservice_apply,
                                                rayservice_forget, NULL, NULL};
static const struct cache_ops topology_ops = {topology_decode, topology_apply, topology_forget,
                                              topology_held, NULL};
/* Keyed as the engine keeps it, "kueue/<name>" (kueue_topology_key). */
static const struct cache_ops kueue_topology_ops = {topology_decode, topology_apply,
                                                    topology_forget, topology_held,
                                                    kueue_topology_key};

/* ---- reflector callbacks ------------------------------------------------- */

#define RELIST_BATCH 64 /* objects decoded outside the lock, then applied under it */

static int cmp_key(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The keys gathered in any order: sorted, each once. */
static void keys_settle(struct cache_keys *k)
{
    size_t n = 0;

    if (k->n > 1) /* an empty list has no array: qsort may not be given NULL */
        qsort(k->v, k->n, sizeof(*k->v), cmp_key);
    for (size_t i = 0; i < k->n; i++) {
        if (n > 0 && strcmp(k->v[n - 1], k->v[i]) == 0)
            free(k->v[i]);
        else
            k->v[n++] = k->v[i];
    }
    k->n = n;
}

/* False when out of memory: the key is not recorded. */
static bool keys_append(struct cache_keys *k, const char *key)
{
    char *copy;

    if (k->n == k->cap && !keys_grow(k))
        return false;
    if (!(copy = strdup(key)))
        return false;
    k->v[k->n++] = copy;
    return true;
}

/* Decode up to max objects from obj on, then apply them under one lock. */
static const cJSON *replace_batch(struct cache_reflector *sc, const cJSON *obj,
                                  struct decoded *batch, size_t max)
{
    struct cache *c = sc->cache;
    struct ext_arena *a = ext_arena_new();
    size_t n = 0;

    for (; obj && n < max; obj = obj->next)
        if (object_key(c, sc->src, obj, batch[n].key, sizeof(batch[n].key)))
            decode(c, sc->src, obj, a, &batch[n++]);
    pthread_mutex_lock(&c->lock);
    for (size_t i = 0; i < n; i++) {
        if (apply(c, &batch[i]) && !keys_append(&sc->listed, batch[i].key)) {
            key_lost(c, sc->src, batch[i].key);
            sc->lost = true;
        }
    }
    pthread_mutex_unlock(&c->lock);
    ext_arena_free(a);
    return obj;
}

/*
 * A (re)list, page by page: every object is upserted as its page arrives (the lock
 * is held per batch, so kube-scheduler's calls are answered during a relist of any
 * size), and at the end what vanished meanwhile is forgotten. What vanished is found
 * outside the lock (only this reflector's thread changes its key set) and costs
 * n log n, however the list is ordered.
 */
static void on_list_begin(void *ctx)
{
    struct cache_reflector *sc = ctx;

    keys_cleanup(&sc->listed);
    sc->lost = false;
}

static void on_list_page(void *ctx, const cJSON *items)
{
    struct cache_reflector *sc = ctx;
    struct decoded one, *batch = malloc(RELIST_BATCH * sizeof(*batch));
    const cJSON *obj = items ? items->child : NULL;

    /* Out of memory for a batch: one object at a time, rather than skip the page. */
    while (obj)
        obj = batch ? replace_batch(sc, obj, batch, RELIST_BATCH) : replace_batch(sc, obj, &one, 1);
    free(batch);
}

static void on_list_end(void *ctx, bool ok)
{
    struct cache_reflector *sc = ctx;
    struct cache *c = sc->cache;
    struct cache_keys *known = &c->known[sc->src], gone = {0};
    const char *dropped = NULL; /* a vanished key not recorded in gone */
    bool lost = sc->lost;

    sc->lost = false;
    if (!ok) { /* the next list starts over; what was upserted is still true */
        keys_cleanup(&sc->listed);
        return;
    }
    keys_settle(&sc->listed);
    /* With a key lost in this very list, nothing is forgotten now (listed is not the whole
     * list); keys_lost has the next list reconcile against the engine. */
    for (size_t i = 0; !lost && i < known->n; i++) {
        bool found;

        keys_find(&sc->listed, known->v[i], &found);
        if (!found && !keys_append(&gone, known->v[i]))
            dropped = known->v[i];
    }
    pthread_mutex_lock(&c->lock);
    for (size_t i = 0; i < gone.n; i++)
        forget_engine(c, sc->src, gone.v[i]);
    if (dropped)
        key_lost(c, sc->src, dropped);
    /* A key lost earlier is known only to the engine: reconcile against it. */
    if (!lost && c->keys_lost[sc->src] && reconcile(c, sc->src, &sc->listed))
        c->keys_lost[sc->src] = false;
    keys_cleanup(known);
    *known = sc->listed;
    pthread_mutex_unlock(&c->lock);
    memset(&sc->listed, 0, sizeof(sc->listed));
    keys_cleanup(&gone);
    ext_log_info("listed", "resource", kinds[sc->src].name);
}

/* The full set at once: a list of one page. */
static void on_replace(void *ctx, const cJSON *items)
{
    on_list_begin(ctx);
    on_list_page(ctx, items);
    on_list_end(ctx, true);
}

void cache_replace(struct cache *c, enum cache_source src, const cJSON *items)
{
    struct cache_reflector one = {c, src, {0}, false};

    on_replace(&one, items);
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
    ext_log_info("resource absent; watching for it to appear", "resource", kinds[sc->src].name);
}

static void on_error(void *ctx, int code, const char *message)
{
    struct cache_reflector *sc = ctx;

    ext_log_warn("watch failed; reconnecting", "resource", kinds[sc->src].name, "error",
                 message ? message : ext_strerror(code));
}

static const struct kube_watch_handler handler = {.replace = on_replace,
                                                  .event = on_event,
                                                  .absent = on_absent,
                                                  .error = on_error,
                                                  .list_begin = on_list_begin,
                                                  .list_page = on_list_page,
                                                  .list_end = on_list_end};

/* ---- lifecycle ----------------------------------------------------------- */

/* The decoders' lookups, safe outside the cache lock: refs has a lock of its own. */
static bool locked_priority_class(void *ctx, const char *name, int32_t *value)
{
    struct cache *c = ctx;
    bool ok;

    pthread_mutex_lock(&c->refs_lock);
    ok = c->lookup.priority_class && c->lookup.priority_class(c->lookup.ctx, name, value);
    pthread_mutex_unlock(&c->refs_lock);
    return ok;
}

/*
 * refs' answers point into refs, which a writer may change once the lock is let go: they are
 * copied, under it, into this thread's buffers, which the decoder copies into its arena at once.
 */
static bool locked_pod_group(void *ctx, const char *ns, const char *name, const char **gang,
                             const char **subgroup)
{
    static _Thread_local char gang_copy[520], sub_copy[260];
    struct cache *c = ctx;
    const char *g = NULL, *sg = NULL;
    bool ok;

    pthread_mutex_lock(&c->refs_lock);
    ok = c->lookup.pod_group && c->lookup.pod_group(c->lookup.ctx, ns, name, &g, &sg);
    if (ok && g)
        snprintf(gang_copy, sizeof(gang_copy), "%s", g);
    if (ok && sg)
        snprintf(sub_copy, sizeof(sub_copy), "%s", sg);
    pthread_mutex_unlock(&c->refs_lock);
    if (!ok)
        return false;
    *gang = g ? gang_copy : NULL;
    *subgroup = sg ? sub_copy : NULL;
    return true;
}

static bool locked_rayjob(void *ctx, const char *ns, const char *name, const char **gang,
                          const char **queue)
{
    static _Thread_local char gang_copy[520], queue_copy[260];
    struct cache *c = ctx;
    const char *g = NULL, *q = NULL;
    bool ok;

    pthread_mutex_lock(&c->refs_lock);
    ok = c->lookup.rayjob && c->lookup.rayjob(c->lookup.ctx, ns, name, &g, &q);
    if (ok && g)
        snprintf(gang_copy, sizeof(gang_copy), "%s", g);
    if (ok && q)
        snprintf(queue_copy, sizeof(queue_copy), "%s", q);
    pthread_mutex_unlock(&c->refs_lock);
    if (!ok)
        return false;
    *gang = g ? gang_copy : NULL;
    *queue = q ? queue_copy : NULL;
    return true;
}

int cache_init(struct cache *c, const struct cfg_settings *s, struct kube_client *kube, char *err,
               size_t errlen)
{
    struct policy_options po = {.strategy = s->strategy,
                                .plan_ttl_ms = s->plan_ttl_ms,
                                .default_queue = s->default_queue,
                                .no_reclaim = !s->evictions.reclaim,
                                .no_preemption = !s->evictions.preemption,
                                .refused_victim_ms = s->evictions.refused_victim_wait_ms,
                                .fairness = {.half_life_ms = s->fairness.half_life_ms,
                                             .window_ms = s->fairness.window_ms,
                                             .k_milli = s->fairness.k_milli,
                                             .entry_penalty_ms = s->fairness.entry_penalty_ms}};

    memset(c, 0, sizeof(*c));
    pthread_mutex_init(&c->lock, NULL);
    pthread_mutex_init(&c->refs_lock, NULL);
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
    c->locked_lookup = (struct kube_lookup){.priority_class = locked_priority_class,
                                            .pod_group = locked_pod_group,
                                            .rayjob = locked_rayjob,
                                            .ctx = c};
    c->opts.lookup = &c->locked_lookup;
    c->reservation_namespace = s->gpu_sharing.reservation_namespace;
    c->kube = kube;
    c->watch_protobuf = s->watch_protobuf;
    return EXT_OK;
}

#define NODES_FIRST_MS 10000

int cache_start(struct cache *c, char *err, size_t errlen)
{
    for (int i = 0; c->kube && i < CACHE_SOURCE_COUNT; i++) {
        /* Pods and Nodes as protobuf, as kube-scheduler's informers read them (watchProtobuf) */
        struct kube_watch_opts o = {.protobuf = c->watch_protobuf && kinds[i].protobuf};

        c->reflectors[i] = (struct cache_reflector){c, (enum cache_source)i, {0}};
        c->watches[i] = kube_watch_start(c->kube, kinds[i].path, &handler, &c->reflectors[i], &o);
        if (!c->watches[i]) {
            snprintf(err, errlen, "cannot start the %s reflector", kinds[i].name);
            return EXT_ENOMEM;
        }
        /* Nodes first (for a while): a bound pod listed before its node is charged when the
         * node comes, and each node that comes then looks at every such pod. */
        for (int64_t until = ext_now_ms() + NODES_FIRST_MS;
             i == CACHE_NODES && !kube_watch_synced(c->watches[i]) && ext_now_ms() < until;)
            nanosleep(&(struct timespec){0, 20 * 1000 * 1000}, NULL);
    }
    return EXT_OK;
}

void cache_cleanup(struct cache *c)
{
    for (int i = 0; i < CACHE_SOURCE_COUNT; i++) {
        kube_watch_stop(c->watches[i]);
        c->watches[i] = NULL;
        keys_cleanup(&c->known[i]);
        keys_cleanup(&c->reflectors[i].listed);
    }
    early_cleanup(&c->early);
    for (size_t i = 0; i < CACHE_GONE; i++) {
        free(c->gone[i]);
        c->gone[i] = NULL;
    }
    cache_nudges_clear(c);
    free(c->nudge_gangs);
    c->nudge_gangs = NULL;
    c->nudge_gangs_cap = 0;
    policy_cluster_free(c->engine);
    c->engine = NULL;
    kube_refs_free(c->refs);
    c->refs = NULL;
    pthread_mutex_destroy(&c->refs_lock);
    pthread_mutex_destroy(&c->lock);
}

bool cache_ready(struct cache *c, char *why, size_t len)
{
    for (int i = 0; i < CACHE_SOURCE_COUNT; i++) {
        if (!c->watches[i])
            continue;
        if (kube_watch_synced(c->watches[i]) ||
            (kinds[i].optional && kube_watch_absent(c->watches[i])))
            continue;
        snprintf(why, len, "%s not listed yet", kinds[i].name);
        return false;
    }
    return true;
}

static void nudge_gang(struct cache *c, const char *key, bool refused)
{
    char *copy;

    for (size_t i = 0; i < c->nnudge_gangs; i++) {
        if (strcmp(c->nudge_gangs[i].gang, key) == 0) {
            c->nudge_gangs[i].refused |= refused;
            return;
        }
    }
    if (c->nnudge_gangs == c->nudge_gangs_cap) {
        size_t cap = c->nudge_gangs_cap ? c->nudge_gangs_cap * 2 : 16;
        struct cache_nudge *v = realloc(c->nudge_gangs, cap * sizeof(*v));

        if (!v) {
            c->nudge_planned = true; /* every planned pod, then: nothing is forgotten */
            c->nudge |= refused;
            return;
        }
        c->nudge_gangs = v;
        c->nudge_gangs_cap = cap;
    }
    copy = strdup(key);
    if (!copy) {
        c->nudge_planned = true;
        c->nudge |= refused;
        return;
    }
    c->nudge_gangs[c->nnudge_gangs++] = (struct cache_nudge){copy, refused};
}

void cache_nudge_gang(struct cache *c, const char *key)
{
    nudge_gang(c, key, false);
}

void cache_nudge_gang_members(struct cache *c, const char *key)
{
    nudge_gang(c, key, true);
}

void cache_nudges_clear(struct cache *c)
{
    for (size_t i = 0; i < c->nnudge_gangs; i++)
        free(c->nudge_gangs[i].gang);
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

bool cache_watch_protobuf(const struct cache *c, enum cache_source src)
{
    return c->watches[src] && kube_watch_protobuf(c->watches[src]);
}
