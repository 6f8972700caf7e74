/*
 * why.c - `muster why NAMESPACE/NAME`: find the RayCluster, PodGroup, Pod,
 * RayJob or RayService (the gang of its cluster), its gang and the gang's pods; count them with the engine muster runs; the
 * Events about them; the gang's queue; and, when asked, muster's own state.
 * why_report.c writes it out.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "why.h"

/* Where each kind an object named in `why` may be is found, in the order tried. */
static const struct {
    const char *kind;
    const char *path; /* namespace, name */
} why_kinds[] = {
    {"RayCluster", "/apis/ray.io/v1/namespaces/%s/rayclusters/%s"},
    {"PodGroup", "/apis/scheduling.x-k8s.io/v1alpha1/namespaces/%s/podgroups/%s"},
    {"PodGroup", "/apis/scheduling.volcano.sh/v1beta1/namespaces/%s/podgroups/%s"},
    {"Pod", "/api/v1/namespaces/%s/pods/%s"},
    {"RayJob", "/apis/ray.io/v1/namespaces/%s/rayjobs/%s"},
    {"RayService", "/apis/ray.io/v1/namespaces/%s/rayservices/%s"},
};

#define WHY_GANG_KINDS 3 /* the first three declare gangs */

/*
 * GET an object that may well not be there: EXT_ENOTFOUND for a 404 (no
 * object, no CRD) and for a 403 (this user may not read that kind), which
 * leave the next kind to try.
 */
static int get_maybe(struct why *w, const char *path, cJSON **out)
{
    long status = 0;
    cJSON *reply = NULL;
    int rc = kube_request(w->kube, "GET", path, NULL, NULL, &status, &reply, w->err, w->errlen);

    if (rc == EXT_OK && !cJSON_IsObject(reply))
        rc = ext_errf(w->err, w->errlen, EXT_EPROTO, "GET %s: not an object", path);
    if (rc != EXT_OK) {
        cJSON_Delete(reply);
        return rc == EXT_ENOTFOUND || status == 403 ? EXT_ENOTFOUND : rc;
    }
    *out = reply;
    return EXT_OK;
}

/* The first of why_kinds[from..to) named ns/name; *kind says which. */
static int find_kind(struct why *w, size_t from, size_t to, const char *name, cJSON **out,
                     const char **kind)
{
    char path[1024];
    int rc = EXT_ENOTFOUND;

    for (size_t i = from; i < to && rc == EXT_ENOTFOUND; i++) {
        snprintf(path, sizeof(path), why_kinds[i].path, w->ns, name);
        rc = get_maybe(w, path, out);
        *kind = why_kinds[i].kind;
    }
    return rc;
}

static int note(struct why *w, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* The gang's spec from the object that declares it. */
static int read_spec(struct why *w, const cJSON *obj, const char *kind)
{
    int rc = strcmp(kind, "RayCluster") == 0
                 ? kube_raycluster_gang(obj, NULL, w->a, &w->spec, w->err, w->errlen, NULL)
                 : kube_podgroup_gang(obj, NULL, w->a, &w->spec, w->err, w->errlen, NULL);

    if (rc != EXT_OK)
        return rc;
    w->has_spec = true;
    w->gang_kind = kind;
    w->gang_name = cli__str(cJSON_GetObjectItemCaseSensitive(obj, "metadata"), "name");
    w->key = w->spec.key;
    if (w->spec.owner_kind == POLICY_OWNER_RAYJOB && w->rayjob_key == NULL)
        w->rayjob_key = w->spec.owner; /* its submitter is a member too */
    if (w->spec.owner != NULL && w->owner == NULL) {
        char owner[600];

        snprintf(owner, sizeof(owner), "%s %s", policy_owner_kind_name(w->spec.owner_kind),
                 w->spec.owner);
        w->owner = ext_arena_strdup(w->a, owner);
        return note(w, "made by %s", owner);
    }
    return EXT_OK;
}

/* A line about the owner, for the report. */
static int note(struct why *w, const char *fmt, ...)
{
    char text[600];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(text, sizeof(text), fmt, ap);
    va_end(ap);
    if ((w->notes == NULL && (w->notes = cJSON_CreateArray()) == NULL) ||
        !cJSON_AddItemToArray(w->notes, cJSON_CreateString(text)))
        return ext_errf(w->err, w->errlen, EXT_ENOMEM, "out of memory");
    return EXT_OK;
}

/* The cluster a RayJob runs on (its own, or clusterSelector's; NULL when it has none), with
 * lines on its mode, its submitter and its state. */
static int rayjob_cluster(struct why *w, const char **cluster)
{
    struct kube_rayjob j;
    char err[256];
    int rc = kube_rayjob_decode(w->object, NULL, w->a, &j, err, sizeof(err), NULL);

    if (rc != EXT_OK)
        return ext_errf(w->err, w->errlen, rc, "RayJob %s/%s: %s", w->ns, w->name, err);
    w->rayjob_key = j.key;
    note(w, "RayJob %s (%s)%s%s%s%s", j.key, kube_rayjob_mode_name(j.mode),
         j.cluster ? (j.existing_cluster ? ": runs on cluster " : ": its cluster ") : "",
         j.cluster ? j.cluster : "", *j.deployment ? ", " : "", j.deployment);
    if (j.suspend)
        note(w, "suspended: muster plans nothing for it until spec.suspend is false");
    else if (j.finished)
        note(w, "finished: %s",
             j.shutdown_after_finish
                 ? "KubeRay deletes its cluster (shutdownAfterJobFinishes), and with it what muster "
                   "charged"
                 : "its cluster idles on (no shutdownAfterJobFinishes): muster charges it to its "
                   "queue as the running cluster it is until it is deleted");
    else if (j.cluster == NULL)
        note(w, "KubeRay has not made its cluster yet");
    else if (j.holds)
        note(w, "its submitter (%lldm cpu) is made once the cluster is ready: muster holds its "
                "room with the cluster's",
             (long long)j.hold.cpu_milli);
    *cluster = j.cluster;
    return w->notes != NULL ? EXT_OK : ext_errf(w->err, w->errlen, EXT_ENOMEM, "out of memory");
}

/* The cluster of a RayService muster looks at: its pending one (an upgrade) while there is
 * one, else its active one. */
static int rayservice_cluster(struct why *w, const char **cluster)
{
    struct kube_rayservice rs;
    char err[256];
    int rc = kube_rayservice_decode(w->object, w->a, &rs, err, sizeof(err), NULL);

    if (rc != EXT_OK)
        return ext_errf(w->err, w->errlen, rc, "RayService %s/%s: %s", w->ns, w->name, err);
    note(w, "RayService %s (%s): active cluster %s, pending cluster %s", rs.key, rs.strategy,
         rs.active ? rs.active : "none", rs.pending ? rs.pending : "none");
    if (rs.active && rs.pending)
        note(w, "shown: the pending cluster, its upgrade (the active one serves until it is "
                "ready; muster never evicts the active one for it)");
    *cluster = rs.pending ? rs.pending : rs.active;
    return w->notes != NULL ? EXT_OK : ext_errf(w->err, w->errlen, EXT_ENOMEM, "out of memory");
}

/* A RayJob or RayService: the gang is its cluster's, as a RayCluster declares it. */
static int find_owned(struct why *w)
{
    const char *cluster = NULL;
    char path[1024], key[600];
    int rc = strcmp(w->kind, "RayJob") == 0 ? rayjob_cluster(w, &cluster)
                                            : rayservice_cluster(w, &cluster);

    if (rc != EXT_OK)
        return rc;
    snprintf(key, sizeof(key), "%s %s/%s", w->kind, w->ns, w->name);
    w->owner = ext_arena_strdup(w->a, key);
    if (cluster == NULL) { /* nothing to look at: no gang, no pods */
        snprintf(key, sizeof(key), "%s/%s", w->ns, w->name);
        w->key = ext_arena_strdup(w->a, key);
        return w->key != NULL ? EXT_OK : EXT_ENOMEM;
    }
    snprintf(path, sizeof(path), why_kinds[0].path, w->ns, cluster);
    rc = get_maybe(w, path, &w->declarer);
    if (rc == EXT_ENOTFOUND) {
        note(w, "its cluster %s/%s does not exist (yet)", w->ns, cluster);
        snprintf(key, sizeof(key), "%s/%s", w->ns, cluster);
        w->key = ext_arena_strdup(w->a, key);
        return w->key != NULL ? EXT_OK : EXT_ENOMEM;
    }
    return rc == EXT_OK ? read_spec(w, w->declarer, "RayCluster") : rc;
}

/* What the object is, and which gang it stands for. */
static int find_gang(struct why *w)
{
    const char *kind;
    int rc = find_kind(w, 0, sizeof(why_kinds) / sizeof(why_kinds[0]), w->name, &w->object, &kind);

    if (rc == EXT_ENOTFOUND)
        return ext_errf(w->err, w->errlen, EXT_ENOTFOUND,
                        "no RayCluster, PodGroup, Pod, RayJob or RayService named %s/%s", w->ns,
                        w->name);
    if (rc != EXT_OK)
        return rc;
    w->kind = kind;
    if (strcmp(kind, "RayJob") == 0 || strcmp(kind, "RayService") == 0)
        return find_owned(w);
    if (strcmp(kind, "Pod") != 0)
        return read_spec(w, w->object, kind);
    w->key = kube_pod_gang_key(w->object, w->a);
    if (w->key == NULL) { /* a gang of one, keyed as muster keys it: namespace/pod */
        char key[600];

        w->lone = true;
        snprintf(key, sizeof(key), "%s/%s", w->ns, w->name);
        w->key = ext_arena_strdup(w->a, key);
        return w->key != NULL ? EXT_OK : EXT_ENOMEM;
    }
    /* A pod of a gang: the gang's own object, if there is one, declares its size. */
    rc = find_kind(w, 0, WHY_GANG_KINDS, strchr(w->key, '/') + 1, &w->declarer, &kind);
    if (rc == EXT_OK)
        return read_spec(w, w->declarer, kind);
    return rc == EXT_ENOTFOUND ? EXT_OK : rc;
}

static bool is_head(const cJSON *pod)
{
    const char *type = cli__str(cJSON_GetObjectItemCaseSensitive(
                                    cJSON_GetObjectItemCaseSensitive(pod, "metadata"), "labels"),
                                EXT_LABEL_RAY_NODE_TYPE);

    return type != NULL && strcmp(type, "head") == 0;
}

static const char *pod_name(const cJSON *pod)
{
    const char *n = cli__str(cJSON_GetObjectItemCaseSensitive(pod, "metadata"), "name");

    return n != NULL ? n : "";
}

static int pod_order(const void *x, const void *y)
{
    const cJSON *a = *(const cJSON *const *)x, *b = *(const cJSON *const *)y;

    if (is_head(a) != is_head(b))
        return is_head(a) ? -1 : 1;
    return strcmp(pod_name(a), pod_name(b));
}

/* Is this pod (not finished) one of the gang's, or the pod asked about? */
static bool is_member(struct why *w, const cJSON *pod)
{
    const char *key;

    char rayjob[600];

    if (kube_pod_is_terminal(pod))
        return false;
    if (w->lone)
        return strcmp(pod_name(pod), w->name) == 0;
    /* A RayJob's submitter joins its cluster's gang. */
    if (w->rayjob_key != NULL && kube_pod_rayjob(pod, rayjob, sizeof(rayjob)))
        return strcmp(rayjob, w->rayjob_key) == 0;
    key = kube_pod_gang_key(pod, w->a);
    return key != NULL && strcmp(key, w->key) == 0;
}

/* The gang's pods, from the namespace's (paged), heads first, then by name. */
static int find_pods(struct why *w)
{
    char path[512];
    cJSON *all = NULL, *pod, **v;
    bool truncated;
    size_t n = 0;
    int rc;

    snprintf(path, sizeof(path), "/api/v1/namespaces/%s/pods", w->ns);
    rc = cli__list(w->kube, path, &all, &truncated, w->err, w->errlen);
    if (rc != EXT_OK)
        return rc;
    w->pods_cut = truncated;
    v = calloc((size_t)cJSON_GetArraySize(all) + 1, sizeof(*v));
    w->pods = cJSON_CreateArray();
    if (v == NULL || w->pods == NULL) {
        free(v);
        cJSON_Delete(all);
        return ext_errf(w->err, w->errlen, EXT_ENOMEM, "out of memory");
    }
    while ((pod = cJSON_DetachItemFromArray(all, 0)) != NULL) {
        if (is_member(w, pod))
            v[n++] = pod;
        else
            cJSON_Delete(pod);
    }
    qsort(v, n, sizeof(*v), pod_order);
    for (size_t i = 0; i < n; i++)
        cJSON_AddItemToArray(w->pods, v[i]);
    free(v);
    cJSON_Delete(all);
    return EXT_OK;
}

/*
 * Where muster placed a pod it has not bound (planned, held at the barrier,
 * its Binding in flight), from /debug/state. The lens counts such a pod as if
 * bound there, so the composition counts it placed, as muster's does.
 */
static const char *placed_by_muster(const struct why *w, const cJSON *pod)
{
    const cJSON *e = why_pod_entry(w, pod);
    const char *phase = cli__str(e, "phase");

    if (phase == NULL || (strcmp(phase, "Planned") != 0 && strcmp(phase, "Waiting") != 0 &&
                          strcmp(phase, "Binding") != 0))
        return NULL;
    return cli__str(e, "node");
}

/* The gang's view, kept past the visit (policy_gang_view_get has no composition). */
static void keep_view(const struct policy_gang_view *v, void *ctx)
{
    struct why *w = ctx;

    if (w->have_view || strcmp(v->key, w->key) != 0)
        return;
    w->view = *v;
    w->view.key = w->key;
    w->view.queue = ext_arena_strdup(w->a, v->queue);
    w->view.reason = ext_arena_strdup(w->a, v->reason);
    w->view.composition = ext_arena_strdup(w->a, v->composition);
    w->view.conflict = ext_arena_strdup(w->a, v->conflict);
    w->view.topology = ext_arena_strdup(w->a, v->topology);
    w->view.topology_key = ext_arena_strdup(w->a, v->topology_key);
    w->view.domain = NULL; /* no nodes here: muster's /debug/state says where */
    w->view.subgroups = NULL;
    w->view.nsubgroups = 0;
    w->have_view = true;
}

/* The members in an engine of their own, so they are counted as muster counts them. */
static int count_members(struct why *w)
{
    struct policy_options po = {0};
    struct policy_pod_view pv;
    const cJSON *pod;
    char err[256];

    w->engine = policy_cluster_new(&po);
    if (w->engine == NULL)
        return ext_errf(w->err, w->errlen, EXT_ENOMEM, "out of memory");
    if (w->has_spec && policy_gang_upsert(w->engine, &w->spec) == POLICY_ENOMEM)
        return ext_errf(w->err, w->errlen, EXT_ENOMEM, "out of memory");
    cJSON_ArrayForEach(pod, w->pods)
    {
        struct policy_pod_spec s;

        if (kube_pod_decode(pod, &kube_decode_defaults, w->a, &s, err, sizeof(err), NULL) != EXT_OK)
            continue;     /* muster cannot read it either: it shows as pending */
        s.managed = true; /* the lens counts every member, whoever schedules it */
        w->bound += s.node != NULL;
        if (s.node == NULL)
            s.node = placed_by_muster(w, pod);
        if (policy_pod_upsert(w->engine, &s, 0) == POLICY_ENOMEM)
            return ext_errf(w->err, w->errlen, EXT_ENOMEM, "out of memory");
    }
    if (w->lone && policy_pod_view_get(w->engine, w->ns, w->name, &pv))
        w->key = ext_arena_strdup(w->a, pv.gang);
    if (w->key != NULL)
        policy_each_gang(w->engine, keep_view, w);
    return EXT_OK;
}

/* ---- Events ------------------------------------------------------------------------ */

int64_t why_event_time(const cJSON *e)
{
    static const char *const keys[] = {"lastTimestamp", "eventTime", "firstTimestamp"};
    const cJSON *series = cJSON_GetObjectItemCaseSensitive(e, "series");
    int64_t t = cli__time(cli__str(series, "lastObservedTime"));

    for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]) && t < 0; i++)
        t = cli__time(cli__str(e, keys[i]));
    if (t < 0)
        t = cli__time(
            cli__str(cJSON_GetObjectItemCaseSensitive(e, "metadata"), "creationTimestamp"));
    return t;
}

static const cJSON *find_pod(const struct why *w, const char *name)
{
    const cJSON *pod;

    cJSON_ArrayForEach(pod, w->pods)
    {
        if (strcmp(pod_name(pod), name) == 0)
            return pod;
    }
    return NULL;
}

/* About one of its pods, the object asked about, or its gang's object? */
static bool is_about(const struct why *w, const cJSON *e)
{
    const cJSON *io = cJSON_GetObjectItemCaseSensitive(e, "involvedObject");
    const char *kind = cli__str(io, "kind"), *name = cli__str(io, "name");

    if (kind == NULL || name == NULL)
        return false;
    if (strcmp(kind, "Pod") == 0)
        return find_pod(w, name) != NULL;
    return (strcmp(kind, w->kind) == 0 && strcmp(name, w->name) == 0) ||
           (w->gang_kind != NULL && strcmp(kind, w->gang_kind) == 0 && w->gang_name != NULL &&
            strcmp(name, w->gang_name) == 0);
}

static int event_order(const void *x, const void *y)
{
    const cJSON *ex = *(const cJSON *const *)x, *ey = *(const cJSON *const *)y;
    int64_t a = why_event_time(ex), b = why_event_time(ey);
    const char *nx = cli__str(cJSON_GetObjectItemCaseSensitive(ex, "metadata"), "name");
    const char *ny = cli__str(cJSON_GetObjectItemCaseSensitive(ey, "metadata"), "name");

    if (a != b)
        return a < b ? -1 : 1;
    /* Within one second (lastTimestamp has no fraction): eventTime's microseconds, where both
     * have one (muster's Events do, and kube-scheduler's); else the name, which is no order. */
    a = ext_time_us(cli__str(ex, "eventTime"));
    b = ext_time_us(cli__str(ey, "eventTime"));
    if (a >= 0 && b >= 0 && a != b)
        return a < b ? -1 : 1;
    return strcmp(nx != NULL ? nx : "", ny != NULL ? ny : "");
}

/* Every Event about it, oldest first (o->events of them are shown). Not being able to list them is
 * not fatal. */
static int find_events(struct why *w)
{
    char path[512], err[256];
    cJSON *e, **v;
    bool truncated;
    size_t n = 0;
    int rc;

    w->events = cJSON_CreateArray();
    if (w->events == NULL)
        return ext_errf(w->err, w->errlen, EXT_ENOMEM, "out of memory");
    snprintf(path, sizeof(path), "/api/v1/namespaces/%s/events", w->ns);
    rc = cli__list(w->kube, path, &w->events_all, &truncated, err, sizeof(err));
    w->events_cut = truncated;
    if (rc != EXT_OK) {
        snprintf(w->events_err, sizeof(w->events_err), "%s", err);
        return cli__unreachable(rc) ? ext_errf(w->err, w->errlen, rc, "%s", err) : EXT_OK;
    }
    v = calloc((size_t)cJSON_GetArraySize(w->events_all) + 1, sizeof(*v));
    if (v == NULL)
        return ext_errf(w->err, w->errlen, EXT_ENOMEM, "out of memory");
    cJSON_ArrayForEach(e, w->events_all)
    {
        if (is_about(w, e))
            v[n++] = e;
    }
    qsort(v, n, sizeof(*v), event_order);
    for (size_t i = 0; i < n; i++)
        cJSON_AddItemReferenceToArray(w->events, v[i]);
    free(v);
    return EXT_OK;
}

/* ---- the queue, muster's state, the reason ------------------------------------------- */

static const cJSON *state_entry(const cJSON *list, const char *key, const char *value)
{
    const cJSON *e;

    cJSON_ArrayForEach(e, list)
    {
        const char *v = cli__str(e, key);

        if (v != NULL && strcmp(v, value) == 0)
            return e;
    }
    return NULL;
}

/* muster's /debug/state, when asked for: failing to get it is said, not fatal. */
static void ask_muster(struct why *w)
{
    char err[256];

    if (w->o->muster == NULL)
        return;
    if (cli__get(w->o->muster, "/debug/state", &w->state, err, sizeof(err)) != EXT_OK) {
        snprintf(w->state_err, sizeof(w->state_err), "%s", err);
        w->state = NULL;
        return;
    }
    w->state_gang =
        state_entry(cJSON_GetObjectItemCaseSensitive(w->state, "gangs"), "gang", w->key);
}

static int find_queue(struct why *w)
{
    const char *q = cli__str(w->state_gang, "queue");
    char path[512], err[256];
    cJSON *obj = NULL;
    int rc;

    if (q == NULL && w->have_view)
        q = w->view.queue;
    if (q == NULL)
        q = w->spec.queue != NULL ? w->spec.queue : "default";
    w->queue_name = q;
    /* muster's Queue, else KAI's of that name (the engine keeps one queue for both). */
    snprintf(path, sizeof(path), "/apis/muster.dev/v1alpha1/queues/%s", q);
    rc = cli__get(w->kube, path, &obj, err, sizeof(err));
    if (rc == EXT_ENOTFOUND) {
        snprintf(path, sizeof(path), "/apis/scheduling.run.ai/v2/queues/%s", q);
        rc = cli__get(w->kube, path, &obj, err, sizeof(err));
    }
    if (rc == EXT_OK) {
        rc = cli__queue_read(obj, w->a, &w->queue, err, sizeof(err));
        w->have_queue = rc == EXT_OK;
    }
    cJSON_Delete(obj);
    if (rc != EXT_OK && rc != EXT_ENOTFOUND)
        snprintf(w->queue_err, sizeof(w->queue_err), "%s", err);
    return cli__unreachable(rc) ? ext_errf(w->err, w->errlen, rc, "%s", err) : EXT_OK;
}

static bool is_reason(const cJSON *e, const char *reason)
{
    const char *r = cli__str(e, "reason");

    return r != NULL && strcmp(r, reason) == 0;
}

const char *why_event_writer(const cJSON *e)
{
    const char *who = cli__str(e, "reportingComponent");

    if (who == NULL || *who == '\0')
        who = cli__str(cJSON_GetObjectItemCaseSensitive(e, "source"), "component");
    return who != NULL && *who != '\0' ? who : NULL;
}

static bool is_text(const char *s, const char *want)
{
    return s != NULL && strcmp(s, want) == 0;
}

/*
 * Did muster write it? muster (kube/client.c) writes source.component and
 * reportingComponent KUBE_EVENT_COMPONENT and reportingInstance its host's
 * name; an Event that says less is someone else's. kube-scheduler's profile
 * named muster reports as "muster" too, with its own reason, FailedScheduling.
 * Events are not signed: this keeps out what does not claim to be muster's as
 * muster writes it, not whoever may create Events and copies all three.
 */
static bool by_muster(const cJSON *e)
{
    const char *instance = cli__str(e, "reportingInstance");

    return is_text(cli__str(cJSON_GetObjectItemCaseSensitive(e, "source"), "component"),
                   KUBE_EVENT_COMPONENT) &&
           is_text(cli__str(e, "reportingComponent"), KUBE_EVENT_COMPONENT) && instance != NULL &&
           *instance != '\0' && !is_reason(e, "FailedScheduling");
}

/* kube-scheduler's FailedScheduling on one of the gang's pods, written under the name of that
 * pod's scheduler (its profile's schedulerName, "default-scheduler" when the pod names none). */
static bool by_scheduler(const struct why *w, const cJSON *e)
{
    const cJSON *io = cJSON_GetObjectItemCaseSensitive(e, "involvedObject");
    const char *name = cli__str(io, "name");
    const cJSON *pod = is_text(cli__str(io, "kind"), "Pod") && name != NULL ? find_pod(w, name)
                                                                            : NULL;
    const char *sched = cli__str(cJSON_GetObjectItemCaseSensitive(pod, "spec"), "schedulerName");

    if (pod == NULL || !is_reason(e, "FailedScheduling"))
        return false;
    if (sched == NULL || *sched == '\0')
        sched = "default-scheduler";
    return is_text(why_event_writer(e), sched);
}

/* When muster last bound the gang: its newest GangBound Event; -1: never seen. */
static int64_t bound_at(const struct why *w)
{
    const cJSON *e;
    int64_t t = -1;

    cJSON_ArrayForEach(e, w->events)
    {
        if (is_reason(e, "GangBound") && by_muster(e) && why_event_time(e) > t)
            t = why_event_time(e);
    }
    return t;
}

/*
 * The newest Warning about it that muster posted itself (GangWaiting,
 * GangIncomplete, ...), else kube-scheduler's FailedScheduling, whose message
 * carries what muster answered its filter. Events from anyone else give no
 * reason, whatever their reason says; nor any from before the gang was last
 * bound (muster withdraws its own then; kube-scheduler's stay): a reason given
 * before the bind is not why it waits now.
 */
static const cJSON *newest_warning(const struct why *w, bool scheduler)
{
    const cJSON *e, *found = NULL;
    int64_t bound = bound_at(w);

    cJSON_ArrayForEach(e, w->events)
    {
        if (!is_text(cli__str(e, "type"), "Warning") || cli__str(e, "message") == NULL ||
            why_event_time(e) <= bound)
            continue;
        if (scheduler ? by_scheduler(w, e) : by_muster(e))
            found = e;
    }
    return found;
}

/* "muster's Event GangWaiting on Pod lab/demo-head, 12s ago" */
static const char *event_said(struct why *w, const cJSON *e)
{
    const cJSON *io = cJSON_GetObjectItemCaseSensitive(e, "involvedObject");
    const char *kind = cli__str(io, "kind"), *name = cli__str(io, "name");
    char age[32], text[600];

    cli__age(w->o->now, why_event_time(e), age, sizeof(age));
    snprintf(text, sizeof(text), "%s Event %s on %s %s, %s ago",
             is_reason(e, "FailedScheduling") ? "kube-scheduler's" : "muster's",
             cli__str(e, "reason"), kind != NULL ? kind : "object", name != NULL ? name : "?", age);
    return ext_arena_strdup(w->a, text);
}

/* muster's gang Events end with the gang's composition, which has a line of its own: the reason
 * is what comes before it. */
static const char *event_reason(struct why *w, const cJSON *e)
{
    const char *message = cli__str(e, "message");
    const char *cut = message != NULL ? strstr(message, EXT_EVENT_COMPOSITION) : NULL;
    char *reason;

    if (cut == NULL)
        return message;
    reason = ext_arena_strdup(w->a, message);
    if (reason != NULL)
        reason[cut - message] = '\0';
    return reason;
}

/* Why it waits, in muster's words where muster said them: its state, its Events, kube-scheduler's.
 */
static void find_reason(struct why *w)
{
    const cJSON *e;
    char text[512];

    if (w->state_gang != NULL) {
        w->reason = cli__str(w->state_gang, "reason");
        w->reason_from = w->reason != NULL ? "muster's /debug/state" : NULL;
        return;
    }
    if (w->have_view && w->view.state == POLICY_GANG_BOUND)
        return; /* bound: old Events do not say why it waits now */
    e = newest_warning(w, false);
    if (e == NULL)
        e = newest_warning(w, true);
    if (e != NULL) {
        w->reason = event_reason(w, e);
        w->reason_from = event_said(w, e);
        return;
    }
    if (w->have_view && !w->lone && w->view.members < w->view.min_members) {
        snprintf(text, sizeof(text), "gang %s: %d of %d members exist", w->key, w->view.members,
                 w->view.min_members);
        w->reason = ext_arena_strdup(w->a, text);
        w->reason_from = "its pods";
    }
}

const cJSON *why_pod_entry(const struct why *w, const cJSON *pod)
{
    char key[600];

    snprintf(key, sizeof(key), "%s/%s", w->ns, pod_name(pod));
    return state_entry(cJSON_GetObjectItemCaseSensitive(w->state, "pods"), "pod", key);
}

const char *why_pod_state(const struct why *w, const cJSON *pod)
{
    const char *phase = cli__str(why_pod_entry(w, pod), "phase");

    if (phase != NULL)
        return phase;
    return cli__str(cJSON_GetObjectItemCaseSensitive(pod, "spec"), "nodeName") != NULL ? "Bound"
                                                                                       : "Pending";
}

/* What its pods not yet bound ask, per resource (a gpu-memory ask, whose share depends on the
 * node, counts nothing). */
static void pending_need(struct why *w, struct policy_resources *need)
{
    const cJSON *pod;

    memset(need, 0, sizeof(*need));
    cJSON_ArrayForEach(pod, w->pods)
    {
        struct policy_pod_spec s;
        char err[128];

        if (cli__str(cJSON_GetObjectItemCaseSensitive(pod, "spec"), "nodeName") != NULL ||
            kube_pod_decode(pod, &kube_decode_defaults, w->a, &s, err, sizeof(err), NULL) !=
                EXT_OK)
            continue;
        need->v[POLICY_RES_CPU] += s.cpu_milli;
        need->v[POLICY_RES_MEMORY] += s.memory_bytes;
        need->v[POLICY_RES_GPU] +=
            s.gpus * 1000 + (int64_t)s.gpu_share_milli * (s.gpu_devices > 1 ? s.gpu_devices : 1);
    }
}

/*
 * Does it wait because its queue used more lately (docs/quota.md, "Fair over time")? When, in
 * some resource it asks, what the queue holds plus what the gang still needs is over the fair
 * share muster wrote, and within the share the queue would have if usage did not count: queues
 * that used less go first, and may take room back.
 */
static void find_used_lately(struct why *w)
{
    const struct cli_queue *q = &w->queue;
    struct policy_resources need;

    w->used_lately = -1;
    if (!w->have_queue || !q->has_recent_usage || !q->has_fair_share || !q->has_status ||
        strcmp(cli__str(w->state_gang, "state") ? cli__str(w->state_gang, "state")
               : w->have_view && w->view.state == POLICY_GANG_BOUND ? "Bound"
                                                                    : "Pending",
               "Bound") == 0)
        return;
    pending_need(w, &need);
    for (int r = POLICY_RES_COUNT - 1; r >= 0; r--) {
        int64_t with = q->allocated.v[r] + need.v[r];

        if (need.v[r] > 0 && with > q->fair_share.v[r] && with <= q->fair_share_plain.v[r]) {
            w->used_lately = r;
            w->need = need.v[r];
            return;
        }
    }
}

/* ---- the command ----------------------------------------------------------------- */

static void why_cleanup(struct why *w)
{
    policy_cluster_free(w->engine);
    cJSON_Delete(w->object);
    cJSON_Delete(w->declarer);
    cJSON_Delete(w->pods);
    cJSON_Delete(w->events);
    cJSON_Delete(w->events_all);
    cJSON_Delete(w->state);
    cJSON_Delete(w->notes);
    ext_arena_free(w->a);
}

int cli_why(struct kube_client *kube, const struct cli_opts *o, const char *ns, const char *name,
            FILE *out, char *err, size_t errlen)
{
    struct why w = {.kube = kube, .o = o, .ns = ns, .name = name, .err = err, .errlen = errlen};
    int rc = EXT_ENOMEM;
    bool partial;

    w.a = ext_arena_new();
    if (w.a == NULL) {
        ext_errf(err, errlen, rc, "out of memory");
        return CLI_EXIT_NOMEM;
    }
    rc = find_gang(&w);
    if (rc == EXT_OK)
        rc = find_pods(&w);
    if (rc == EXT_OK) {
        ask_muster(&w);
        rc = count_members(&w);
    }
    if (rc == EXT_OK)
        rc = find_events(&w);
    if (rc == EXT_OK)
        rc = find_queue(&w);
    if (rc == EXT_OK) {
        find_reason(&w);
        find_used_lately(&w);
        if (!why_report(&w, out))
            rc = ext_errf(err, errlen, EXT_ENOMEM, "out of memory");
    }
    /* Printed whole but for the gang's Queue: said in the report, and by the exit status. */
    partial = rc == EXT_OK && (w.queue_err[0] || (w.have_queue && w.queue.status_err != NULL));
    if (partial)
        ext_errf(err, errlen, EXT_OK, "Queue %s could not be read whole (see Queue: above)",
                 w.queue_name);
    why_cleanup(&w);
    return partial ? CLI_EXIT_PARTIAL : cli__exit_of(rc);
}
