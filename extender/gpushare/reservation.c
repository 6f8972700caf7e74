/* reservation.c - reservation Pods and per-Pod GPU share ConfigMaps, as cJSON. */
#include "reservation.h"

#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "base.h"
#include "kube.h"

#define RESERVATION_NAME_PREFIX "gpu-reservation-"
#define RESERVATION_NAME_MAX 63
#define RESERVATION_GROUP_MAX 20
#define LABEL_VALUE_MAX 63

/* FNV-1a: a short stable tag for a name that had to be shortened. */
static uint32_t name_hash(const char *s)
{
    uint32_t h = 2166136261u;

    for (; *s != '\0'; s++)
        h = (h ^ (unsigned char)*s) * 16777619u;
    return h;
}

static bool is_alnum_lower(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
}

/* s lowercased with every character outside [a-z0-9-] made '-'; true if nothing changed. */
static bool dns_label_chars(const char *s, char *out, size_t n)
{
    bool same = true;
    size_t i;

    for (i = 0; s[i] != '\0' && i + 1 < n; i++) {
        char c = s[i];

        if (c >= 'A' && c <= 'Z')
            c = (char)(c - 'A' + 'a');
        if (!is_alnum_lower(c) && c != '-')
            c = '-';
        same = same && c == s[i];
        out[i] = c;
    }
    out[i] = '\0';
    return same && s[i] == '\0';
}

int reservation_pod_name(const char *node, const char *group_id, char *buf, size_t len)
{
    char group[RESERVATION_GROUP_MAX + 1], sane[RESERVATION_NAME_MAX + 1];
    size_t room, glen;

    if (node == NULL || group_id == NULL || *node == '\0' || *group_id == '\0' ||
        strlen(group_id) > RESERVATION_GROUP_MAX || len < RESERVATION_NAME_MAX + 1)
        return EXT_EINVAL;
    dns_label_chars(group_id, group, sizeof(group));
    glen = strlen(group);
    if (!is_alnum_lower(group[glen - 1]))
        return EXT_EINVAL;
    room = RESERVATION_NAME_MAX - strlen(RESERVATION_NAME_PREFIX) - 1 - glen;
    if (dns_label_chars(node, sane, sizeof(sane)) && strlen(node) <= room) {
        snprintf(buf, len, RESERVATION_NAME_PREFIX "%s-%s", sane, group);
        return EXT_OK;
    }
    /* Cut or changed: keep what fits and add a hash of the real name. */
    sane[room - 10] = '\0';
    snprintf(buf, len, RESERVATION_NAME_PREFIX "%s-%08x-%s", sane, (unsigned)name_hash(node),
             group);
    return EXT_OK;
}

/* A label value: the node name when it is one, else a cut version with its hash. */
static void label_value(const char *s, char *out, size_t n)
{
    size_t len = strlen(s), i;
    bool ok = len <= LABEL_VALUE_MAX;

    for (i = 0; ok && i < len; i++)
        ok = strchr("-_.", s[i]) != NULL || is_alnum_lower(s[i]) || (s[i] >= 'A' && s[i] <= 'Z');
    if (ok) {
        snprintf(out, n, "%s", s);
        return;
    }
    snprintf(out, n, "%.*s-%08x", LABEL_VALUE_MAX - 9 - 1, s, (unsigned)name_hash(s));
    dns_label_chars(out, out, n);
    out[0] = is_alnum_lower(out[0]) ? out[0] : 'x';
}

static cJSON *add_object(cJSON *parent, const char *key)
{
    return parent ? cJSON_AddObjectToObject(parent, key) : NULL;
}

static bool add_string(cJSON *obj, const char *key, const char *value)
{
    return obj != NULL && cJSON_AddStringToObject(obj, key, value) != NULL;
}

/* requests and limits both: a Guaranteed pod, last in line for eviction. */
static bool add_resources(cJSON *container)
{
    cJSON *res = add_object(container, "resources");
    const char *which[] = {"requests", "limits"};

    for (size_t i = 0; i < 2; i++) {
        cJSON *r = add_object(res, which[i]);

        if (!add_string(r, EXT_RESOURCE_GPU, "1") || !add_string(r, "cpu", "10m") ||
            !add_string(r, "memory", "16Mi"))
            return false;
    }
    return true;
}

static bool add_downward_env(cJSON *env, const char *name, const char *field)
{
    cJSON *e = cJSON_CreateObject();
    cJSON *ref;

    if (e == NULL || !cJSON_AddItemToArray(env, e))
        return cJSON_Delete(e), false;
    ref = add_object(add_object(e, "valueFrom"), "fieldRef");
    return add_string(e, "name", name) && add_string(ref, "fieldPath", field);
}

static bool add_container(cJSON *spec, const char *image)
{
    cJSON *list = cJSON_AddArrayToObject(spec, "containers");
    cJSON *c = cJSON_CreateObject();
    cJSON *cmd, *env, *sc;
    const char *argv[] = {"muster", "reserve"};

    if (list == NULL || c == NULL || !cJSON_AddItemToArray(list, c))
        return cJSON_Delete(c), false;
    cmd = cJSON_CreateStringArray(argv, 2);
    if (cmd == NULL || !cJSON_AddItemToObject(c, "command", cmd))
        return cJSON_Delete(cmd), false;
    env = cJSON_AddArrayToObject(c, "env");
    sc = add_object(c, "securityContext");
    return add_string(c, "name", RESERVATION_CONTAINER) && add_string(c, "image", image) &&
           env != NULL && add_downward_env(env, "POD_NAME", "metadata.name") &&
           add_downward_env(env, "POD_NAMESPACE", "metadata.namespace") && add_resources(c) &&
           cJSON_AddBoolToObject(sc, "allowPrivilegeEscalation", 0) &&
           cJSON_AddBoolToObject(sc, "readOnlyRootFilesystem", 1) &&
           cJSON_AddBoolToObject(sc, "runAsNonRoot", 1) &&
           cJSON_AddNumberToObject(sc, "runAsUser", 65532);
}

static bool add_tolerate_all(cJSON *spec)
{
    cJSON *list = cJSON_AddArrayToObject(spec, "tolerations");
    cJSON *t = cJSON_CreateObject();

    if (list == NULL || t == NULL || !cJSON_AddItemToArray(list, t))
        return cJSON_Delete(t), false;
    return add_string(t, "operator", "Exists");
}

static bool add_pod_spec(cJSON *pod, const struct cfg_gpu_sharing *o, const char *node)
{
    cJSON *spec = add_object(pod, "spec");

    return add_string(spec, "nodeName", node) &&
           add_string(spec, "priorityClassName", RESERVATION_PRIORITY_CLASS) &&
           add_string(spec, "serviceAccountName", RESERVATION_SERVICE_ACCOUNT) &&
           add_string(spec, "restartPolicy", "Always") &&
           cJSON_AddNumberToObject(spec, "terminationGracePeriodSeconds", 5) &&
           cJSON_AddBoolToObject(spec, "automountServiceAccountToken", 1) &&
           add_tolerate_all(spec) && add_container(spec, o->reservation_image);
}

cJSON *reservation_pod_new(const struct cfg_gpu_sharing *o, const char *node, const char *group_id,
                           char *err, size_t errlen)
{
    char name[RESERVATION_NAME_MAX + 1], nodelabel[LABEL_VALUE_MAX + 1];
    cJSON *pod, *meta, *labels;

    if (reservation_pod_name(node, group_id, name, sizeof(name)) != EXT_OK) {
        (void)ext_errf(
            err, errlen, EXT_OK,
            "reservation pod for node \"%.64s\" group \"%.32s\": the node and "
            "the group need a name (group at most %d characters, ending in a letter or digit)",
            node ? node : "", group_id ? group_id : "", RESERVATION_GROUP_MAX);
        return NULL;
    }
    label_value(node, nodelabel, sizeof(nodelabel));
    pod = cJSON_CreateObject();
    meta = add_object(pod, "metadata");
    labels = add_object(meta, "labels");
    if (!add_string(pod, "apiVersion", "v1") || !add_string(pod, "kind", "Pod") ||
        !add_string(meta, "name", name) ||
        !add_string(meta, "namespace", o->reservation_namespace) ||
        !add_string(labels, EXT_LABEL_APP_NAME, EXT_RESERVATION_APP) ||
        !add_string(labels, EXT_LABEL_RESERVATION_GROUP, group_id) ||
        !add_string(labels, EXT_LABEL_RESERVATION_NODE, nodelabel) || !add_pod_spec(pod, o, node)) {
        cJSON_Delete(pod);
        (void)ext_errf(err, errlen, EXT_OK, "reservation pod %s: out of memory", name);
        return NULL;
    }
    return pod;
}

int gpu_share_id_valid(const char *id)
{
    size_t n = id ? strlen(id) : 0;

    if (n == 0 || n > GPU_SHARE_ID_MAX || !is_alnum_lower(id[0]) || !is_alnum_lower(id[n - 1]))
        return 0;
    return strspn(id, "abcdefghijklmnopqrstuvwxyz0123456789-") == n;
}

int gpu_share_configmap_name(const char *share_id, char *buf, size_t len)
{
    if (!gpu_share_id_valid(share_id) ||
        len < sizeof(GPU_SHARE_CONFIGMAP_PREFIX) + strlen(share_id))
        return EXT_EINVAL;
    snprintf(buf, len, GPU_SHARE_CONFIGMAP_PREFIX "%s", share_id);
    return EXT_OK;
}

int gpu_share_configmap_name_of(const cJSON *pod, char *buf, size_t len)
{
    const cJSON *meta = cJSON_GetObjectItemCaseSensitive(pod, "metadata");
    const cJSON *labels = cJSON_GetObjectItemCaseSensitive(meta, "labels");
    const cJSON *id = cJSON_GetObjectItemCaseSensitive(labels, EXT_LABEL_GPU_SHARE_ID);

    if (!cJSON_IsString(id))
        return EXT_ENOTFOUND;
    return gpu_share_configmap_name(id->valuestring, buf, len);
}

static bool add_owner(cJSON *meta, const char *name, const char *uid)
{
    cJSON *list = cJSON_AddArrayToObject(meta, "ownerReferences");
    cJSON *ref = cJSON_CreateObject();

    if (list == NULL || ref == NULL || !cJSON_AddItemToArray(list, ref))
        return cJSON_Delete(ref), false;
    return add_string(ref, "apiVersion", "v1") && add_string(ref, "kind", "Pod") &&
           add_string(ref, "name", name) && add_string(ref, "uid", uid);
}

cJSON *gpu_share_configmap_new(const char *ns, const char *name, const char *devices,
                               int32_t fraction_milli, const char *owner_name,
                               const char *owner_uid, char *err, size_t errlen)
{
    char frac[32];
    cJSON *cm, *meta, *labels, *data;

    if (!kube_name_valid(ns) || !kube_name_valid(name) || devices == NULL || *devices == '\0' ||
        owner_name == NULL || owner_uid == NULL || *owner_uid == '\0' || fraction_milli <= 0 ||
        fraction_milli > 1000) {
        /* 1000: a gpu-memory ask of a whole device's memory takes the whole device. */
        (void)ext_errf(err, errlen, EXT_OK,
                       "GPU share ConfigMap %.64s/%.64s: needs a namespace, a name, the "
                       "devices, the owner pod's name and uid, and a share in (0, 1]",
                       ns ? ns : "", name ? name : "");
        return NULL;
    }
    kube_quantity_format(fraction_milli, KUBE_QUANTITY_DECIMAL, frac, sizeof(frac));
    cm = cJSON_CreateObject();
    meta = add_object(cm, "metadata");
    labels = add_object(meta, "labels");
    data = add_object(cm, "data");
    if (!add_string(cm, "apiVersion", "v1") || !add_string(cm, "kind", "ConfigMap") ||
        !add_string(meta, "name", name) || !add_string(meta, "namespace", ns) ||
        !add_string(labels, EXT_LABEL_APP_NAME, "muster-gpu-share") ||
        !add_owner(meta, owner_name, owner_uid) ||
        !add_string(data, GPU_SHARE_KEY_DEVICES, devices) ||
        !add_string(data, GPU_SHARE_KEY_FRACTION, frac)) {
        cJSON_Delete(cm);
        (void)ext_errf(err, errlen, EXT_OK, "GPU share ConfigMap %s/%s: out of memory", ns, name);
        return NULL;
    }
    return cm;
}
