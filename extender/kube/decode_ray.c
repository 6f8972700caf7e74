/*
 * decode_ray.c - KubeRay's RayJob and RayService as muster follows them (KubeRay v1.7.0,
 * ray-operator/apis/ray/v1 and controllers/ray/).
 *
 * A RayJob makes a RayCluster named status.rayClusterName (<job>-<5 random characters>),
 * labelled ray.io/originated-from-crd: RayJob and ray.io/originated-from-cr-name: <job>, with
 * the RayJob's own labels copied on (so its queue and priority labels reach the cluster's
 * gang). In K8sJobMode (the default) it then makes a batch/v1 Job named <job>, whose pod (the
 * submitter) carries the same two labels, once the cluster is ready: muster holds its room in
 * the cluster's gang from the start (policy_hold_spec). spec.clusterSelector names a cluster it
 * did not make (ray.io/cluster: <name>): then only the submitter is the RayJob's, a pod of its
 * own in the RayJob's queue. Suspended (spec.suspend), KubeRay deletes the cluster and the Job;
 * finished, it deletes the cluster when shutdownAfterJobFinishes says so, else the cluster idles
 * on (muster charges it as running: it runs pods).
 */
#include <stdio.h>
#include <string.h>

#include "base.h"
#include "kube.h"
#include "kube_internal.h"

/* KubeRay's default submitter container (common/job.go, GetDefaultSubmitterContainer). */
#define KUBE_SUBMITTER_CPU_MILLI 500
#define KUBE_SUBMITTER_MEMORY (200LL << 20)

static const char *const kube__modes[] = {
    [KUBE_RAYJOB_K8S_JOB] = "K8sJobMode",
    [KUBE_RAYJOB_SIDECAR] = "SidecarMode",
    [KUBE_RAYJOB_HTTP] = "HTTPMode",
    [KUBE_RAYJOB_INTERACTIVE] = "InteractiveMode",
};

const char *kube_rayjob_mode_name(enum kube_rayjob_mode m)
{
    return m <= KUBE_RAYJOB_INTERACTIVE ? kube__modes[m] : "?";
}

static int kube__rayjob_mode(struct kube__ctx *c, const cJSON *spec, enum kube_rayjob_mode *out)
{
    const char *m = NULL;
    int rc = kube__string(c, spec, "submissionMode", "spec.submissionMode", KUBE_MAX_NAME, &m);

    *out = KUBE_RAYJOB_K8S_JOB;
    if (rc != EXT_OK || m == NULL || *m == '\0')
        return rc;
    for (size_t i = 0; i < sizeof(kube__modes) / sizeof(kube__modes[0]); i++) {
        if (strcmp(m, kube__modes[i]) == 0) {
            *out = (enum kube_rayjob_mode)i;
            return EXT_OK;
        }
    }
    return kube__fail(c, EXT_EINVAL, kube__get(spec, "submissionMode"),
                      "spec.submissionMode: \"%.64s\" is not K8sJobMode, SidecarMode, HTTPMode "
                      "or InteractiveMode",
                      m);
}

/* Is node in tree (tree itself or below it)? */
static bool kube__within(const cJSON *tree, const cJSON *node)
{
    const cJSON *c;

    if (tree == node)
        return node != NULL;
    cJSON_ArrayForEach(c, tree)
    {
        if (kube__within(c, node))
            return true;
    }
    return false;
}

/* What the submitter pod asks: its template decoded as a pod (requests as Kubernetes computes
 * them, nodeSelector, tolerations), else KubeRay's default container. */
static int kube__submitter_ask(struct kube__ctx *c, const cJSON *spec, const char *ns,
                               const struct kube_decode_opts *o, struct policy_hold_spec *h)
{
    const cJSON *tpl = kube__get(kube__get(spec, "submitterPodTemplate"), "spec");
    cJSON *pod, *meta;
    const cJSON *where = NULL;
    struct policy_pod_spec ps;
    int rc;

    if (tpl == NULL || cJSON_IsNull(tpl)) {
        h->cpu_milli = KUBE_SUBMITTER_CPU_MILLI;
        h->memory_bytes = KUBE_SUBMITTER_MEMORY;
        return EXT_OK;
    }
    if (!cJSON_IsObject(tpl))
        return kube__fail(c, EXT_EINVAL, tpl, "spec.submitterPodTemplate.spec must be a mapping");
    /* A pod around the template's spec (borrowed, not copied). */
    pod = cJSON_CreateObject();
    meta = pod ? cJSON_AddObjectToObject(pod, "metadata") : NULL;
    if (!meta || !cJSON_AddStringToObject(meta, "name", "submitter") ||
        !cJSON_AddStringToObject(meta, "namespace", ns) ||
        !cJSON_AddItemReferenceToObject(pod, "spec", (cJSON *)tpl)) {
        cJSON_Delete(pod);
        return kube__fail(c, EXT_ENOMEM, tpl, "out of memory");
    }
    rc = kube_pod_decode(pod, o, c->a, &ps, c->err, c->errlen, &where);
    cJSON_Delete(pod);
    if (rc != EXT_OK) {
        /* Where in the template's spec, not in the pod made around it (freed now). */
        char inner[256];

        snprintf(inner, sizeof(inner), "%s", c->err ? c->err : "");
        return kube__fail(c, rc, kube__within(tpl, where) ? where : tpl,
                          "spec.submitterPodTemplate: %s", inner);
    }
    h->cpu_milli = ps.cpu_milli;
    h->memory_bytes = ps.memory_bytes;
    h->gpus = ps.gpus;
    h->node_selector = ps.node_selector;
    h->nnode_selector = ps.nnode_selector;
    h->tolerations = ps.tolerations;
    h->ntolerations = ps.ntolerations;
    return EXT_OK;
}

/* spec.clusterSelector: a cluster the RayJob did not make (its ray.io/cluster names it). */
static int kube__cluster_selector(struct kube__ctx *c, const cJSON *spec, struct kube_rayjob *j)
{
    const cJSON *sel = kube__get(spec, "clusterSelector");
    const struct policy_label *l;
    size_t n;
    int rc = kube__labels(c, sel, "spec.clusterSelector", &l, &n);

    if (rc != EXT_OK || n == 0)
        return rc;
    j->existing_cluster = true;
    j->cluster = kube__map_value(sel, EXT_LABEL_RAY_CLUSTER);
    return EXT_OK;
}

/* Which deployment statuses mean what (rayjob_controller.go's state machine). */
static bool kube__status_is(const char *s, const char *const *set)
{
    for (; *set; set++)
        if (strcmp(s, *set) == 0)
            return true;
    return false;
}

static int kube__rayjob_status(struct kube__ctx *c, const cJSON *status, struct kube_rayjob *j)
{
    static const char *const finished[] = {"Complete", "Failed", "ValidationFailed", NULL};
    /* Suspending and Retrying delete the cluster and the Job; Suspended has none. */
    static const char *const releasing[] = {"Suspending", "Suspended", "Retrying", NULL};
    const char *cluster = NULL;
    int rc;

    rc = kube__string(c, status, "jobDeploymentStatus", "status.jobDeploymentStatus",
                      KUBE_MAX_NAME, &j->deployment);
    if (rc == EXT_OK)
        rc = kube__string(c, status, "rayClusterName", "status.rayClusterName", KUBE_MAX_NAME,
                          &cluster);
    if (rc != EXT_OK)
        return rc;
    if (j->deployment == NULL)
        j->deployment = "";
    j->finished = kube__status_is(j->deployment, finished);
    if (cluster != NULL && *cluster != '\0' && j->cluster == NULL)
        j->cluster = cluster;
    if (j->cluster != NULL && !kube__object_ref_valid(j->cluster))
        return kube__fail(c, EXT_EINVAL, status, "RayJob: cluster name \"%.80s\" is not a name",
                          j->cluster);
    j->holds = j->mode == KUBE_RAYJOB_K8S_JOB && !j->suspend && !j->existing_cluster &&
               j->cluster != NULL && !j->finished && !kube__status_is(j->deployment, releasing);
    /* Running: the operator made the submitter's Job (it does so just before). */
    j->hold.asked = strcmp(j->deployment, "Running") == 0;
    return EXT_OK;
}

int kube_rayjob_decode(const cJSON *rj, const struct kube_decode_opts *o, struct ext_arena *a,
                       struct kube_rayjob *out, char *err, size_t errlen, const cJSON **where)
{
    struct kube__ctx c = {a, err, errlen, where};
    struct kube_rayjob j = {0};
    const cJSON *meta = kube__get(rj, "metadata"), *spec = kube__get(rj, "spec");
    const struct policy_label *l;
    char owner[2 * KUBE_MAX_NAME + 16];
    size_t nl;
    int rc;

    if (o == NULL)
        o = &kube_decode_defaults;
    rc = kube__meta(&c, rj, "RayJob", &j.namespace_, &j.name);
    if (rc == EXT_OK)
        rc = kube__string(&c, meta, "uid", "metadata.uid", KUBE_MAX_NAME, &j.uid);
    if (rc == EXT_OK)
        rc = kube__labels(&c, kube__get(meta, "labels"), "metadata.labels", &l, &nl);
    if (rc == EXT_OK && spec != NULL && !cJSON_IsNull(spec) && !cJSON_IsObject(spec))
        rc = kube__fail(&c, EXT_EINVAL, spec, "RayJob: spec must be a mapping");
    if (rc == EXT_OK)
        rc = kube__rayjob_mode(&c, spec, &j.mode);
    if (rc == EXT_OK)
        rc = kube__bool(&c, spec, "suspend", "spec.suspend", &j.suspend);
    if (rc == EXT_OK)
        rc = kube__bool(&c, spec, "shutdownAfterJobFinishes", "spec.shutdownAfterJobFinishes",
                        &j.shutdown_after_finish);
    if (rc == EXT_OK)
        rc = kube__cluster_selector(&c, spec, &j);
    if (rc == EXT_OK && j.mode == KUBE_RAYJOB_K8S_JOB)
        rc = kube__submitter_ask(&c, spec, j.namespace_, o, &j.hold);
    if (rc == EXT_OK)
        rc = kube__rayjob_status(&c, kube__get(rj, "status"), &j);
    if (rc != EXT_OK)
        return rc;
    j.queue = kube__queue_label(kube__get(meta, "labels"), o);
    if (j.queue != NULL && !kube__object_ref_valid(j.queue))
        return kube__fail(&c, EXT_EINVAL, kube__get(meta, "labels"),
                          "RayJob: queue \"%.80s\" is neither a label value nor a DNS-1123 "
                          "subdomain",
                          j.queue);
    j.key = kube__key(a, j.namespace_, j.name);
    snprintf(owner, sizeof(owner), "RayJob %s/%s", j.namespace_, j.name);
    j.hold.owner = ext_arena_strdup(a, owner);
    if (j.cluster != NULL && !j.existing_cluster)
        j.submitter_gang = kube__key(a, j.namespace_, j.cluster);
    if (j.key == NULL || j.hold.owner == NULL ||
        (j.cluster != NULL && !j.existing_cluster && j.submitter_gang == NULL))
        return kube__fail(&c, EXT_ENOMEM, rj, "out of memory");
    j.hold.gang = j.submitter_gang;
    j.hold.subgroup = KUBE_SUBGROUP_SUBMITTER;
    if (j.uid == NULL)
        j.uid = "";
    *out = j;
    return EXT_OK;
}

/* ---- RayService ---------------------------------------------------------------- */

int kube_rayservice_decode(const cJSON *rs, struct ext_arena *a, struct kube_rayservice *out,
                           char *err, size_t errlen, const cJSON **where)
{
    struct kube__ctx c = {a, err, errlen, where};
    struct kube_rayservice s = {0};
    const cJSON *meta = kube__get(rs, "metadata"), *status = kube__get(rs, "status");
    int rc;

    rc = kube__meta(&c, rs, "RayService", &s.namespace_, &s.name);
    if (rc == EXT_OK)
        rc = kube__string(&c, meta, "uid", "metadata.uid", KUBE_MAX_NAME, &s.uid);
    if (rc == EXT_OK)
        rc = kube__string(&c, kube__get(kube__get(rs, "spec"), "upgradeStrategy"), "type",
                          "spec.upgradeStrategy.type", KUBE_MAX_NAME, &s.strategy);
    if (rc == EXT_OK)
        rc = kube__string(&c, kube__get(status, "activeServiceStatus"), "rayClusterName",
                          "status.activeServiceStatus.rayClusterName", KUBE_MAX_NAME, &s.active);
    if (rc == EXT_OK)
        rc = kube__string(&c, kube__get(status, "pendingServiceStatus"), "rayClusterName",
                          "status.pendingServiceStatus.rayClusterName", KUBE_MAX_NAME,
                          &s.pending);
    if (rc != EXT_OK)
        return rc;
    if (s.active != NULL && *s.active == '\0')
        s.active = NULL;
    if (s.pending != NULL && *s.pending == '\0')
        s.pending = NULL;
    if (s.strategy == NULL || *s.strategy == '\0')
        s.strategy = "NewCluster";
    if (s.uid == NULL)
        s.uid = "";
    s.key = kube__key(a, s.namespace_, s.name);
    if (s.key == NULL)
        return kube__fail(&c, EXT_ENOMEM, rs, "out of memory");
    *out = s;
    return EXT_OK;
}

/* ---- a RayJob's submitter pod --------------------------------------------------- */

bool kube_pod_rayjob(const cJSON *pod, char *buf, size_t len)
{
    const cJSON *meta = kube__get(pod, "metadata"), *labels = kube__get(meta, "labels");
    const char *kind = kube__map_value(labels, EXT_LABEL_RAY_ORIGIN_KIND);
    const char *name = kube__map_value(labels, EXT_LABEL_RAY_ORIGIN_NAME);
    const char *ns = kube__map_value(meta, "namespace");
    const char *ray = kube__map_value(labels, EXT_LABEL_RAY_CLUSTER);

    if (kind == NULL || strcmp(kind, "RayJob") != 0 || name == NULL || *name == '\0' ||
        (ray != NULL && *ray != '\0') || strlen(name) > KUBE_MAX_NAME ||
        (kube__map_value(labels, EXT_LABEL_JOB_NAME) == NULL &&
         kube__map_value(labels, EXT_LABEL_JOB_NAME_LEGACY) == NULL))
        return false;
    return snprintf(buf, len, "%s/%s", ns != NULL && *ns != '\0' ? ns : "default", name) <
           (int)len;
}
