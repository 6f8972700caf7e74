/* webhook.c - the GPU-sharing admission decision: AdmissionReview in, AdmissionReview out. */
#include "gpushare.h"

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base.h"
#include "kube.h"
#include "reservation.h"

#define WEBHOOK_UID_MAX 128
#define WEBHOOK_MSG_MAX 512

/* What the decision needs from the request; everything borrowed from the parsed review. */
struct webhook__pod {
    const cJSON *pod, *meta, *labels, *spec, *containers;
    const char *fraction, *memory, *devices, *container;
};

/* The verdict: a rejection (code != 0) or a JSONPatch (ops may stay empty). */
struct webhook__verdict {
    int code;
    char message[WEBHOOK_MSG_MAX];
    cJSON *ops;
};

static void reject(struct webhook__verdict *v, int code, const char *fmt, ...)
{
    va_list ap;

    v->code = code;
    va_start(ap, fmt);
    vsnprintf(v->message, sizeof(v->message), fmt, ap);
    va_end(ap);
}

static const cJSON *get(const cJSON *obj, const char *key)
{
    const cJSON *item = cJSON_GetObjectItemCaseSensitive(obj, key);

    return cJSON_IsNull(item) ? NULL : item;
}

static const char *get_string(const cJSON *obj, const char *key)
{
    const cJSON *item = get(obj, key);

    return cJSON_IsString(item) ? item->valuestring : NULL;
}

/* ---- the request ----------------------------------------------------------- */

static int parse_review(const char *body, size_t len, const struct webhook_opts *o, cJSON **out,
                        char *err, size_t errlen)
{
    struct ext_proto_limits lim = {WEBHOOK_MAX_BODY_DEFAULT, EXT_PROTO_MAX_DEPTH_DEFAULT,
                                   EXT_PROTO_MAX_NAMES_DEFAULT, EXT_PROTO_MAX_STRING_DEFAULT};
    const char *api, *kind, *uid;
    const cJSON *req;
    cJSON *doc;
    int rc;

    if (o->limits != NULL)
        lim = *o->limits;
    if (body == NULL || len == 0)
        return ext_errf(err, errlen, EXT_EINVAL, "AdmissionReview: empty body");
    rc = ext_json_precheck(body, len, &lim, err, errlen);
    if (rc != EXT_OK)
        return rc;
    doc = cJSON_ParseWithLength(body, len);
    if (doc == NULL)
        return ext_errf(err, errlen, EXT_EINVAL, "AdmissionReview: body is not JSON");
    api = get_string(doc, "apiVersion");
    kind = get_string(doc, "kind");
    req = get(doc, "request");
    uid = get_string(req, "uid");
    if (api == NULL || kind == NULL || strcmp(kind, "AdmissionReview") != 0 ||
        (strcmp(api, "admission.k8s.io/v1") != 0 && strcmp(api, "admission.k8s.io/v1beta1") != 0))
        rc = ext_errf(err, errlen, EXT_EINVAL, "not an admission.k8s.io/v1 AdmissionReview");
    else if (!cJSON_IsObject(req) || uid == NULL || *uid == '\0' || strlen(uid) > WEBHOOK_UID_MAX)
        rc = ext_errf(err, errlen, EXT_EINVAL,
                      "AdmissionReview without a request.uid (1 to %d bytes)", WEBHOOK_UID_MAX);
    if (rc != EXT_OK) {
        cJSON_Delete(doc);
        return rc;
    }
    *out = doc;
    return EXT_OK;
}

/* A Pod being created (not a subresource, not an update). */
static bool is_pod_create(const cJSON *req)
{
    const cJSON *kind = get(req, "kind");
    const char *group = get_string(kind, "group");
    const char *k = get_string(kind, "kind");
    const char *op = get_string(req, "operation");
    const char *sub = get_string(req, "subResource");

    return k != NULL && strcmp(k, "Pod") == 0 && (group == NULL || *group == '\0') && op != NULL &&
           strcmp(op, "CREATE") == 0 && (sub == NULL || *sub == '\0');
}

static void pod_read(const cJSON *pod, struct webhook__pod *p)
{
    const cJSON *ann;

    memset(p, 0, sizeof(*p));
    p->pod = pod;
    p->meta = get(pod, "metadata");
    p->labels = get(p->meta, "labels");
    p->spec = get(pod, "spec");
    p->containers = get(p->spec, "containers");
    ann = get(p->meta, "annotations");
    p->fraction = get_string(ann, EXT_ANNOTATION_GPU_FRACTION);
    p->memory = get_string(ann, EXT_ANNOTATION_GPU_MEMORY);
    p->devices = get_string(ann, EXT_ANNOTATION_GPU_DEVICES);
    p->container = get_string(ann, EXT_ANNOTATION_GPU_CONTAINER);
}

/* ---- the checks ------------------------------------------------------------ */

/* The first container (or init container) naming nvidia.com/gpu in requests or limits. */
static const char *whole_gpu_container(const struct webhook__pod *p)
{
    const char *lists[] = {"containers", "initContainers"};
    const char *which[] = {"requests", "limits"};
    const cJSON *c;

    for (size_t l = 0; l < 2; l++) {
        cJSON_ArrayForEach(c, get(p->spec, lists[l]))
        {
            const cJSON *res = get(c, "resources");

            for (size_t w = 0; w < 2; w++)
                if (get(get(res, which[w]), EXT_RESOURCE_GPU) != NULL) {
                    const char *name = get_string(c, "name");

                    return name != NULL ? name : "(unnamed)";
                }
        }
    }
    return NULL;
}

/* A decimal integer in [1, max], or -1. */
static long parse_count(const char *s, long max)
{
    long v = 0;

    if (s == NULL || *s == '\0')
        return -1;
    for (; *s != '\0'; s++) {
        if (*s < '0' || *s > '9' || v > (max - (*s - '0')) / 10)
            return -1;
        v = v * 10 + (*s - '0');
    }
    return v >= 1 ? v : -1;
}

static void check_fraction(const char *s, struct webhook__verdict *v)
{
    int32_t milli;

    if (kube_fraction_parse(s, &milli) != EXT_OK)
        reject(v, 400, "gpu-fraction \"%.32s\" is not a number: write a decimal such as \"0.5\"",
               s);
    else if (milli <= 0)
        reject(v, 400, "gpu-fraction %.32s is outside (0, 1): a share must be more than 0", s);
    else if (milli >= 1000 && strtod(s, NULL) < 1.0)
        reject(v, 400,
               "gpu-fraction %.32s rounds up to a whole GPU (shares are counted in "
               "thousandths): use at most 0.999, or nvidia.com/gpu for whole GPUs",
               s);
    else if (milli >= 1000)
        reject(v, 400, "gpu-fraction %.32s is outside (0, 1): use nvidia.com/gpu for whole GPUs",
               s);
}

static void check_memory(const char *s, const struct webhook_opts *o, struct webhook__verdict *v)
{
    bool labels = o->has_gpu_memory_labels ? o->has_gpu_memory_labels(o->ctx)
                                           : o->cluster_has_gpu_memory_labels;

    if (parse_count(s, INT32_MAX) < 0)
        reject(v, 400,
               "gpu-memory \"%.32s\" is not a whole number of MiB above 0: write e.g. "
               "\"8192\" for 8 GiB",
               s);
    else if (!labels)
        reject(v, 403,
               "gpu-memory needs to know each GPU's memory and no node carries the "
               "label " EXT_LABEL_GPU_MEMORY ": use gpu-fraction, or label the GPU nodes "
               "(NVIDIA GPU feature discovery does)");
}

/* The target container's index, or -1 with the verdict set. */
static int target_container(const struct webhook__pod *p, struct webhook__verdict *v)
{
    const cJSON *c;
    int i = 0;

    if (cJSON_GetArraySize(p->containers) == 0) {
        reject(v, 400, "the pod has no containers to give the GPU share to");
        return -1;
    }
    if (p->container == NULL)
        return 0;
    cJSON_ArrayForEach(c, p->containers)
    {
        const char *name = get_string(c, "name");

        if (name != NULL && strcmp(name, p->container) == 0)
            return i;
        i++;
    }
    reject(v, 400, EXT_ANNOTATION_GPU_CONTAINER " \"%.64s\" names no container of this pod",
           p->container);
    return -1;
}

/* Every rule a sharing pod must meet; the first broken one is the verdict. */
static int check_pod(const struct webhook__pod *p, const struct webhook_opts *o,
                     struct webhook__verdict *v)
{
    const char *whole = whole_gpu_container(p);

    if (whole != NULL)
        reject(v, 400,
               "container \"%.64s\" asks for " EXT_RESOURCE_GPU " and the pod asks for "
               "a GPU share (%s): ask for whole GPUs or for a share, not both",
               whole, p->fraction ? EXT_ANNOTATION_GPU_FRACTION : EXT_ANNOTATION_GPU_MEMORY);
    else if (p->fraction != NULL && p->memory != NULL)
        reject(v, 400, "the pod sets both gpu-fraction and gpu-memory: give one of them");
    else if (p->fraction != NULL)
        check_fraction(p->fraction, v);
    else
        check_memory(p->memory, o, v);
    if (v->code == 0 && p->devices != NULL && parse_count(p->devices, WEBHOOK_MAX_DEVICES) < 0)
        reject(v, 400, EXT_ANNOTATION_GPU_DEVICES " \"%.32s\" is not a whole number from 1 to %d",
               p->devices, WEBHOOK_MAX_DEVICES);
    return v->code == 0 ? target_container(p, v) : -1;
}

/* ---- the patch ------------------------------------------------------------- */

/* Adds {"op", "path", "value"} to ops; value is taken over (freed on failure). */
static bool op_add(cJSON *ops, const char *op, const char *path, cJSON *value)
{
    cJSON *o = cJSON_CreateObject();

    if (o == NULL || value == NULL || !cJSON_AddItemToArray(ops, o)) {
        cJSON_Delete(o);
        cJSON_Delete(value);
        return false;
    }
    if (!cJSON_AddStringToObject(o, "op", op) || !cJSON_AddStringToObject(o, "path", path)) {
        cJSON_Delete(value);
        return false;
    }
    return cJSON_AddItemToObject(o, "value", value);
}

/* RFC 6901: '~' is "~0" and '/' is "~1" inside a reference token. */
static void pointer_escape(const char *key, char *out, size_t n)
{
    size_t j = 0;

    for (; *key != '\0' && j + 3 < n; key++) {
        if (*key == '~' || *key == '/') {
            out[j++] = '~';
            out[j++] = *key == '~' ? '0' : '1';
        } else {
            out[j++] = *key;
        }
    }
    out[j] = '\0';
}

/* The request uid as a share id; a uid unfit for a name is replaced by its hash. */
static void share_id_from_uid(const char *uid, char *out, size_t n)
{
    uint64_t h = 14695981039346656037ull;
    size_t i;

    for (i = 0; uid[i] != '\0' && i + 1 < n; i++)
        out[i] = (uid[i] >= 'A' && uid[i] <= 'Z') ? (char)(uid[i] - 'A' + 'a') : uid[i];
    out[i] = '\0';
    if (uid[i] == '\0' && gpu_share_id_valid(out))
        return;
    for (i = 0; uid[i] != '\0'; i++)
        h = (h ^ (unsigned char)uid[i]) * 1099511628211ull;
    snprintf(out, n, "%016llx", (unsigned long long)h);
}

/* Label the pod with its share id (kept if it already has a valid one). */
static bool patch_label(const struct webhook__pod *p, const char *uid, char *id, size_t idlen,
                        cJSON *ops)
{
    const char *have = get_string(p->labels, EXT_LABEL_GPU_SHARE_ID);
    char key[64], path[96];
    cJSON *labels;

    if (have != NULL && gpu_share_id_valid(have)) {
        snprintf(id, idlen, "%s", have);
        return true;
    }
    share_id_from_uid(uid, id, idlen);
    if (!cJSON_IsObject(p->labels)) {
        labels = cJSON_CreateObject();
        if (labels == NULL || !cJSON_AddStringToObject(labels, EXT_LABEL_GPU_SHARE_ID, id))
            return cJSON_Delete(labels), false;
        return op_add(ops, "add", "/metadata/labels", labels);
    }
    pointer_escape(EXT_LABEL_GPU_SHARE_ID, key, sizeof(key));
    snprintf(path, sizeof(path), "/metadata/labels/%s", key);
    return op_add(ops, have != NULL ? "replace" : "add", path, cJSON_CreateString(id));
}

/* {"name": key, "valueFrom": {"configMapKeyRef": {"name": cm, "key": key}}} */
static cJSON *env_from_configmap(const char *key, const char *cm)
{
    cJSON *e = cJSON_CreateObject();
    cJSON *ref = NULL;

    if (cJSON_AddStringToObject(e, "name", key) != NULL)
        ref = cJSON_AddObjectToObject(cJSON_AddObjectToObject(e, "valueFrom"), "configMapKeyRef");
    if (!cJSON_AddStringToObject(ref, "name", cm) || !cJSON_AddStringToObject(ref, "key", key)) {
        cJSON_Delete(e);
        return NULL;
    }
    return e;
}

/* Index of the env entry called name, or -1. */
static int env_index(const cJSON *env, const char *name)
{
    const cJSON *e;
    int i = 0;

    cJSON_ArrayForEach(e, env)
    {
        const char *n = get_string(e, "name");

        if (n != NULL && strcmp(n, name) == 0)
            return i;
        i++;
    }
    return -1;
}

/* The two variables into container ci: a new env list, or each added or replaced in place. */
static bool patch_env(const struct webhook__pod *p, int ci, const char *cm, cJSON *ops)
{
    const char *keys[] = {GPU_SHARE_KEY_DEVICES, GPU_SHARE_KEY_FRACTION};
    const cJSON *env = get(cJSON_GetArrayItem(p->containers, ci), "env");
    char path[96];

    if (!cJSON_IsArray(env)) {
        cJSON *list = cJSON_CreateArray();

        for (size_t k = 0; k < 2; k++)
            if (list == NULL || !cJSON_AddItemToArray(list, env_from_configmap(keys[k], cm)))
                return cJSON_Delete(list), false;
        snprintf(path, sizeof(path), "/spec/containers/%d/env", ci);
        return op_add(ops, "add", path, list);
    }
    for (size_t k = 0; k < 2; k++) {
        int at = env_index(env, keys[k]);

        if (at < 0)
            snprintf(path, sizeof(path), "/spec/containers/%d/env/-", ci);
        else
            snprintf(path, sizeof(path), "/spec/containers/%d/env/%d", ci, at);
        if (!op_add(ops, at < 0 ? "add" : "replace", path, env_from_configmap(keys[k], cm)))
            return false;
    }
    return true;
}

static bool patch_runtime_class(const struct webhook__pod *p, const struct webhook_opts *o,
                                cJSON *ops)
{
    const char *have = get_string(p->spec, "runtimeClassName");

    if (o->runtime_class_name == NULL || *o->runtime_class_name == '\0' ||
        (have != NULL && *have != '\0'))
        return true;
    return op_add(ops, "add", "/spec/runtimeClassName", cJSON_CreateString(o->runtime_class_name));
}

static int decide(const cJSON *req, const struct webhook_opts *o, struct webhook__verdict *v)
{
    struct webhook__pod p;
    char id[GPU_SHARE_ID_MAX + 1], cm[GPU_SHARE_ID_MAX + sizeof(GPU_SHARE_CONFIGMAP_PREFIX)];
    int ci;

    if (!is_pod_create(req))
        return EXT_OK;
    pod_read(get(req, "object"), &p);
    if (p.fraction == NULL && p.memory == NULL)
        return EXT_OK;
    if (!cJSON_IsObject(p.meta) || !cJSON_IsObject(p.spec)) {
        reject(v, 400, "request.object is not a Pod with metadata and spec");
        return EXT_OK;
    }
    ci = check_pod(&p, o, v);
    if (ci < 0)
        return EXT_OK;
    v->ops = cJSON_CreateArray();
    if (v->ops == NULL || !patch_label(&p, get_string(req, "uid"), id, sizeof(id), v->ops) ||
        gpu_share_configmap_name(id, cm, sizeof(cm)) != EXT_OK || !patch_env(&p, ci, cm, v->ops) ||
        !patch_runtime_class(&p, o, v->ops))
        return EXT_ENOMEM;
    return EXT_OK;
}

/* ---- the response ---------------------------------------------------------- */

static char *base64_encode(const char *in, size_t n)
{
    static const char tab[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    const unsigned char *s = (const unsigned char *)in;
    char *out = malloc((n + 2) / 3 * 4 + 1), *d = out;
    size_t i;

    if (out == NULL)
        return NULL;
    for (i = 0; i + 2 < n; i += 3, d += 4) {
        d[0] = tab[s[i] >> 2];
        d[1] = tab[((s[i] & 3) << 4) | (s[i + 1] >> 4)];
        d[2] = tab[((s[i + 1] & 15) << 2) | (s[i + 2] >> 6)];
        d[3] = tab[s[i + 2] & 63];
    }
    if (i < n) {
        d[0] = tab[s[i] >> 2];
        d[1] = tab[((s[i] & 3) << 4) | (i + 1 < n ? s[i + 1] >> 4 : 0)];
        d[2] = i + 1 < n ? tab[(s[i + 1] & 15) << 2] : '=';
        d[3] = '=';
        d += 4;
    }
    *d = '\0';
    return out;
}

static bool add_verdict(cJSON *resp, const struct webhook__verdict *v)
{
    cJSON *status;
    char *ops, *b64;
    bool ok;

    if (v->code != 0) {
        status = cJSON_AddObjectToObject(resp, "status");
        return cJSON_AddFalseToObject(resp, "allowed") &&
               cJSON_AddNumberToObject(status, "code", v->code) &&
               cJSON_AddStringToObject(status, "reason",
                                       v->code == 403 ? "Forbidden" : "BadRequest") &&
               cJSON_AddStringToObject(status, "message", v->message);
    }
    if (!cJSON_AddTrueToObject(resp, "allowed"))
        return false;
    if (cJSON_GetArraySize(v->ops) == 0)
        return true;
    ops = cJSON_PrintUnformatted(v->ops);
    b64 = ops ? base64_encode(ops, strlen(ops)) : NULL;
    ok = b64 != NULL && cJSON_AddStringToObject(resp, "patchType", "JSONPatch") &&
         cJSON_AddStringToObject(resp, "patch", b64);
    free(b64);
    free(ops);
    return ok;
}

static int encode_response(const cJSON *review, const struct webhook__verdict *v, char **out,
                           size_t *outlen)
{
    cJSON *doc = cJSON_CreateObject();
    cJSON *resp = cJSON_AddObjectToObject(doc, "response");
    const cJSON *req = get(review, "request");
    int rc = EXT_ENOMEM;
    char *s;

    if (!cJSON_AddStringToObject(doc, "apiVersion", get_string(review, "apiVersion")) ||
        !cJSON_AddStringToObject(doc, "kind", "AdmissionReview") ||
        !cJSON_AddStringToObject(resp, "uid", get_string(req, "uid")) || !add_verdict(resp, v))
        goto out;
    s = cJSON_PrintUnformatted(doc);
    if (s == NULL)
        goto out;
    *out = s;
    *outlen = strlen(s);
    rc = EXT_OK;
out:
    cJSON_Delete(doc);
    return rc;
}

int webhook_review(const char *body, size_t len, const struct webhook_opts *o, char **response_json,
                   size_t *rlen, char *err, size_t errlen)
{
    struct webhook__verdict v = {0};
    cJSON *review = NULL;
    int rc;

    rc = parse_review(body, len, o, &review, err, errlen);
    if (rc != EXT_OK)
        return rc;
    rc = decide(get(review, "request"), o, &v);
    if (rc == EXT_OK)
        rc = encode_response(review, &v, response_json, rlen);
    if (rc != EXT_OK)
        ext_errf(err, errlen, rc, "AdmissionReview: %s", ext_strerror(rc));
    cJSON_Delete(v.ops);
    cJSON_Delete(review);
    return rc;
}
