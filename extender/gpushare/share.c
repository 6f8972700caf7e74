/* gpu_share.c - reservation pods and the device hand-off at bind time. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base.h"
#include "gpushare.h"
#include "reservation.h"

#define POLL_MS 200
#define PAUSE_SHARING_MS 300000 /* after a reservation pod fails to report */
#define REAP_GRACE_S 10         /* a fresh reservation pod may be a commit in flight */

static const char *annotation(const cJSON *obj, const char *key)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(
        cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(obj, "metadata"),
                                         "annotations"),
        key);

    return cJSON_IsString(v) ? v->valuestring : NULL;
}

static bool terminating(const cJSON *obj)
{
    return cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(obj, "metadata"),
                                            "deletionTimestamp") != NULL;
}

/* Create the group's reservation pod unless it exists. */
static int ensure_reservation(struct gpushare *d, const char *node, const char *group,
                              const char *name, char *err, size_t errlen)
{
    char path[512];
    cJSON *pod;
    int rc;

    snprintf(path, sizeof(path), "/api/v1/namespaces/%s/pods", d->settings->reservation_namespace);
    pod = reservation_pod_new(d->settings, node, group, err, errlen);
    if (!pod)
        return EXT_EINVAL;
    rc = kube_create(d->kube, path, pod, NULL, err, errlen);
    cJSON_Delete(pod);
    if (rc == EXT_ECONFLICT)
        return EXT_OK; /* the group's pod is there already */
    if (rc == EXT_OK)
        ext_log_info("reservation pod created", "pod", name, "node", node, "gpuGroup", group);
    return rc;
}

/*
 * Wait, until the commit's deadline, for the reservation pod to report the
 * device it holds; one that went away meanwhile (an old pod of the same group)
 * is made again. NULL with *stopped set when muster is shutting down: that is
 * no verdict on the node.
 */
static char *await_device(struct gpushare *d, const char *node, const char *group, const char *name,
                          int64_t deadline, bool *stopped, char *err, size_t errlen)
{
    char path[512];

    snprintf(path, sizeof(path), "/api/v1/namespaces/%s/pods/%s",
             d->settings->reservation_namespace, name);
    do {
        cJSON *pod = NULL;
        long status = 0;

        int rc = kube_request(d->kube, "GET", path, NULL, NULL, &status, &pod, err, errlen);

        if (rc == EXT_ENOTFOUND)
            ensure_reservation(d, node, group, name, err, errlen);
        if (rc == EXT_OK) {
            const char *device = annotation(pod, EXT_ANNOTATION_GPU_DEVICE);
            char *copy = device && !terminating(pod) ? strdup(device) : NULL;

            cJSON_Delete(pod);
            if (copy)
                return copy;
        }
        ext_sleep_ms(POLL_MS);
    } while (ext_now_ms() < deadline && !*d->stopping);
    if ((*stopped = *d->stopping)) {
        snprintf(err, errlen, "muster is shutting down; kube-scheduler will retry");
        return NULL;
    }
    snprintf(err, errlen,
             "reservation pod %s/%s did not report its GPU within %lld ms (image pull failure or "
             "device plugin down?); sharing on that node is paused and the gang requeued",
             d->settings->reservation_namespace, name,
             (long long)d->settings->reservation_timeout_ms);
    return NULL;
}

static void give_up_on(struct gpushare *d, const char *node, const char *name)
{
    char path[512], err[256];

    ext_series_add(ext_metric_with(d->reservation_timeouts, (const char *[]){node}), 1);
    snprintf(path, sizeof(path), "/api/v1/namespaces/%s/pods/%s",
             d->settings->reservation_namespace, name);
    kube_delete(d->kube, path, err, sizeof(err));
    pthread_mutex_lock(d->engine_lock);
    policy_node_pause_sharing(d->engine, node, ext_now_ms() + PAUSE_SHARING_MS);
    pthread_mutex_unlock(d->engine_lock);
}

/* The member's ConfigMap, when the webhook gave it a share id. */
static int write_configmap(struct gpushare *d, const struct policy_assignment *m,
                           const char *devices, char *err, size_t errlen)
{
    char path[600], name[128];
    cJSON *pod = NULL, *cm;
    long status = 0;
    int rc;

    snprintf(path, sizeof(path), "/api/v1/namespaces/%s/pods/%s", m->namespace_, m->name);
    rc = kube_request(d->kube, "GET", path, NULL, NULL, &status, &pod, err, errlen);
    if (rc != EXT_OK)
        return rc;
    rc = gpu_share_configmap_name_of(pod, name, sizeof(name));
    cJSON_Delete(pod);
    if (rc != EXT_OK) {
        ext_log_debug("no gpu-share-id label (webhook not installed?): no ConfigMap", "pod",
                      m->name);
        return EXT_OK;
    }
    cm = gpu_share_configmap_new(m->namespace_, name, devices, m->gpu_share_milli, m->name, m->uid,
                                 err, errlen);
    if (!cm)
        return EXT_EINVAL;
    snprintf(path, sizeof(path), "/api/v1/namespaces/%s/configmaps", m->namespace_);
    rc = kube_create(d->kube, path, cm, NULL, err, errlen);
    if (rc == EXT_ECONFLICT) {
        snprintf(path, sizeof(path), "/api/v1/namespaces/%s/configmaps/%s", m->namespace_, name);
        rc = kube_patch_merge(d->kube, path, cm, NULL, err, errlen);
    }
    cJSON_Delete(cm);
    return rc;
}

void gpu_share_reserve_early(struct gpushare *d, const char *node, const char *groups)
{
    char *copy, *save = NULL, name[128], err[256];

    if (!groups || !node || !d->kube || !d->settings->reservations || !(copy = strdup(groups)))
        return;
    for (char *g = strtok_r(copy, ",", &save); g; g = strtok_r(NULL, ",", &save))
        if (reservation_pod_name(node, g, name, sizeof(name)) == EXT_OK &&
            ensure_reservation(d, node, g, name, err, sizeof(err)) != EXT_OK)
            ext_log_warn("reservation pod not created", "pod", name, "error", err);
    free(copy);
}

int gpu_share_prepare(struct gpushare *d, const struct policy_assignment *m, int64_t deadline,
                      char *err, size_t errlen)
{
    char devices[1024] = "", *groups, *save = NULL;
    size_t off = 0;
    int rc = EXT_OK;

    if (!m->gpu_groups || !d->kube || !d->settings->reservations)
        return EXT_OK;
    if (!(groups = strdup(m->gpu_groups)))
        return EXT_ENOMEM;
    for (char *g = strtok_r(groups, ",", &save); g && rc == EXT_OK;
         g = strtok_r(NULL, ",", &save)) {
        char name[128], *device;

        if ((rc = reservation_pod_name(m->node, g, name, sizeof(name))) != EXT_OK ||
            (rc = ensure_reservation(d, m->node, g, name, err, errlen)) != EXT_OK)
            break;
        bool stopped = false;

        if (!(device = await_device(d, m->node, g, name, deadline, &stopped, err, errlen))) {
            if (!stopped) /* on shutdown the pod stays, to be adopted after the restart */
                give_up_on(d, m->node, name);
            rc = stopped ? EXT_ESTOPPED : EXT_ETIMEOUT;
            break;
        }
        off +=
            (size_t)snprintf(devices + off, sizeof(devices) - off, "%s%s", off ? "," : "", device);
        free(device);
    }
    free(groups);
    if (rc == EXT_OK)
        rc = write_configmap(d, m, devices, err, errlen);
    return rc;
}

/* ---- the reaper -------------------------------------------------------------- */

struct group_ref {
    const char *node, *group;
    bool found;
};

static void find_group(const struct policy_node_view *v, void *ctx)
{
    struct group_ref *ref = ctx;

    if (strcmp(v->name, ref->node) != 0)
        return;
    for (size_t i = 0; i < v->ngroups; i++)
        ref->found |= strcmp(v->groups[i].id, ref->group) == 0;
}

static const char *label(const cJSON *obj, const char *key)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(
        cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(obj, "metadata"),
                                         "labels"),
        key);

    return cJSON_IsString(v) ? v->valuestring : NULL;
}

static const char *pinned_node(const cJSON *pod)
{
    const cJSON *v =
        cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(pod, "spec"), "nodeName");

    return cJSON_IsString(v) ? v->valuestring : NULL;
}

static bool old_enough(const cJSON *pod)
{
    const cJSON *ts = cJSON_GetObjectItemCaseSensitive(
        cJSON_GetObjectItemCaseSensitive(pod, "metadata"), "creationTimestamp");
    struct tm tm = {0};

    if (!cJSON_IsString(ts) || !strptime(ts->valuestring, "%Y-%m-%dT%H:%M:%SZ", &tm))
        return true;
    return time(NULL) - timegm(&tm) > REAP_GRACE_S;
}

void gpu_share_reap(struct gpushare *d)
{
    char path[512], err[256];
    cJSON *list = NULL, *pod;
    long status = 0;

    if (!d->kube || !d->settings->reservations)
        return;
    snprintf(path, sizeof(path),
             "/api/v1/namespaces/%s/pods?labelSelector=" EXT_LABEL_APP_NAME
             "%%3D" EXT_RESERVATION_APP,
             d->settings->reservation_namespace);
    if (kube_request(d->kube, "GET", path, NULL, NULL, &status, &list, err, sizeof(err)) != EXT_OK)
        return;
    cJSON_ArrayForEach(pod, cJSON_GetObjectItemCaseSensitive(list, "items"))
    {
        /* Its node is spec.nodeName: the node label is cut for names over 63 characters. */
        struct group_ref ref = {pinned_node(pod), label(pod, EXT_LABEL_RESERVATION_GROUP), false};
        const cJSON *name = cJSON_GetObjectItemCaseSensitive(
            cJSON_GetObjectItemCaseSensitive(pod, "metadata"), "name");

        if (!ref.node || !ref.group || !cJSON_IsString(name) || terminating(pod) ||
            !old_enough(pod))
            continue;
        pthread_mutex_lock(d->engine_lock);
        policy_each_node(d->engine, find_group, &ref);
        pthread_mutex_unlock(d->engine_lock);
        if (ref.found)
            continue;
        snprintf(path, sizeof(path), "/api/v1/namespaces/%s/pods/%s",
                 d->settings->reservation_namespace, name->valuestring);
        if (kube_delete(d->kube, path, err, sizeof(err)) == EXT_OK)
            ext_log_info("reservation pod deleted: its GPU group holds no pod", "pod",
                         name->valuestring, "node", ref.node, "gpuGroup", ref.group);
    }
    cJSON_Delete(list);
}
