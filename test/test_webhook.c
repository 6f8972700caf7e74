/*
 * test_webhook.c - GPU sharing on the node: the admission webhook's decision
 * (fixtures/webhook/NAME.json in, NAME.want.json the expected verdict), the
 * reservation Pod and share ConfigMap builders, and reserve's device check.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base.h"
#include "kube.h"
#include "reservation.h"
#include "gpushare.h"
#include "fixture.h"

static char *read_file(const char *name, size_t *len)
{
    return fixture_read("webhook", name, len);
}

static cJSON *load_json(const char *name)
{
    size_t len;
    char *buf = read_file(name, &len);
    cJSON *j = cJSON_Parse(buf);

    free(buf);
    ck_assert_msg(j != NULL, "%s is not JSON", name);
    return j;
}

static const char *str_at(const cJSON *obj, const char *key)
{
    const cJSON *item = cJSON_GetObjectItemCaseSensitive(obj, key);

    return cJSON_IsString(item) ? item->valuestring : NULL;
}

/* ---- webhook decisions: the case table -------------------------------------- */

struct review_case {
    const char *name;   /* fixtures/webhook/NAME.json and NAME.want.json */
    bool memory_labels; /* the cluster has nvidia.com/gpu.memory labels */
};

static const struct review_case review_cases[] = {
    {"kuberay_worker", false},
    {"no_labels_no_env", false},
    {"empty_env_list", false},
    {"container_name", false},
    {"default_is_first_container", false},
    {"keeps_runtime_class", false},
    {"replaces_existing_env", false},
    {"keeps_share_label", false},
    {"bad_share_label_replaced", false},
    {"gpu_memory", true},
    {"num_devices", false},
    {"v1beta1", false},
    {"odd_uid_hashed", false},
    {"uppercase_uid_lowered", false},
    {"no_annotations", false},
    {"other_annotations", false},
    {"update_ignored", false},
    {"not_a_pod", false},
    {"subresource_ignored", false},
    {"fraction_too_big", false},
    {"fraction_one", false},
    {"fraction_zero", false},
    {"fraction_negative", false},
    {"fraction_rounds_to_one", false},
    {"fraction_not_number", false},
    {"fraction_with_suffix", false},
    {"fraction_empty", false},
    {"whole_gpu_limits", false},
    {"whole_gpu_requests_memory", true},
    {"whole_gpu_init_container", false},
    {"fraction_and_memory", true},
    {"memory_not_number", true},
    {"memory_zero", true},
    {"memory_without_labels", false},
    {"devices_zero", false},
    {"devices_text", false},
    {"devices_too_many", false},
    {"devices_negative", false},
    {"container_name_unknown", false},
    {"no_containers", false},
};

static void check_patch(const cJSON *resp, const cJSON *want_patch, const char *name)
{
    const char *b64 = str_at(resp, "patch");
    char *raw;
    size_t rawlen;
    cJSON *got;

    if (want_patch == NULL) {
        ck_assert_msg(b64 == NULL && str_at(resp, "patchType") == NULL, "%s: unexpected patch",
                      name);
        return;
    }
    ck_assert_msg(b64 != NULL, "%s: no patch", name);
    ck_assert_str_eq(str_at(resp, "patchType"), "JSONPatch");
    ck_assert_int_eq(kube_base64_decode(b64, &raw, &rawlen), EXT_OK);
    got = cJSON_Parse(raw);
    ck_assert_msg(got != NULL, "%s: patch is not JSON: %s", name, raw);
    if (!cJSON_Compare(got, want_patch, 1)) {
        char *w = cJSON_PrintUnformatted(want_patch);

        ck_abort_msg("%s: patch\n got %s\nwant %s", name, raw, w);
    }
    cJSON_Delete(got);
    free(raw);
}

START_TEST(test_review_case)
{
    const struct review_case *c = &review_cases[_i];
    struct webhook_opts o = {.runtime_class_name = "nvidia",
                             .cluster_has_gpu_memory_labels = c->memory_labels};
    char in_name[128], want_name[128], err[256] = "", *out = NULL;
    size_t len, rlen = 0;
    char *body;
    cJSON *in, *want, *got, *resp, *status;

    snprintf(in_name, sizeof(in_name), "%s.json", c->name);
    snprintf(want_name, sizeof(want_name), "%s.want.json", c->name);
    body = read_file(in_name, &len);
    in = cJSON_Parse(body);
    want = load_json(want_name);
    ck_assert_msg(webhook_review(body, len, &o, &out, &rlen, err, sizeof(err)) == EXT_OK, "%s: %s",
                  c->name, err);
    ck_assert_uint_eq(rlen, strlen(out));
    got = cJSON_Parse(out);
    ck_assert_ptr_nonnull(got);
    /* The envelope echoes the request. */
    ck_assert_str_eq(str_at(got, "apiVersion"), str_at(in, "apiVersion"));
    ck_assert_str_eq(str_at(got, "kind"), "AdmissionReview");
    resp = cJSON_GetObjectItemCaseSensitive(got, "response");
    ck_assert_str_eq(str_at(resp, "uid"),
                     str_at(cJSON_GetObjectItemCaseSensitive(in, "request"), "uid"));
    ck_assert_msg(cJSON_IsBool(cJSON_GetObjectItemCaseSensitive(resp, "allowed")) &&
                      cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(resp, "allowed")) ==
                          cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(want, "allowed")),
                  "%s: allowed is not what was expected: %s", c->name, out);
    status = cJSON_GetObjectItemCaseSensitive(resp, "status");
    if (cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(want, "allowed"))) {
        ck_assert_msg(status == NULL, "%s: status on an allowed pod", c->name);
        check_patch(resp, cJSON_GetObjectItemCaseSensitive(want, "patch"), c->name);
    } else {
        ck_assert_int_eq(cJSON_GetObjectItemCaseSensitive(status, "code")->valueint,
                         cJSON_GetObjectItemCaseSensitive(want, "code")->valueint);
        ck_assert_str_eq(str_at(status, "message"), str_at(want, "message"));
        ck_assert_ptr_null(str_at(resp, "patch"));
    }
    cJSON_Delete(got);
    cJSON_Delete(want);
    cJSON_Delete(in);
    free(out);
    free(body);
}
END_TEST

static bool labels_yes(void *ctx)
{
    (*(int *)ctx)++;
    return true;
}

/* The callback, when set, is asked instead of the flag. */
START_TEST(test_review_memory_callback)
{
    int calls = 0;
    struct webhook_opts o = {
        .runtime_class_name = "nvidia", .has_gpu_memory_labels = labels_yes, .ctx = &calls};
    size_t len, rlen;
    char *body = read_file("gpu_memory.json", &len), *out = NULL;

    ck_assert_int_eq(webhook_review(body, len, &o, &out, &rlen, NULL, 0), EXT_OK);
    ck_assert_int_eq(calls, 1);
    ck_assert_ptr_nonnull(strstr(out, "\"allowed\":true"));
    free(out);
    free(body);
}
END_TEST

/* Without a runtime class configured, runtimeClassName is left alone. */
START_TEST(test_review_no_runtime_class)
{
    struct webhook_opts o = {.runtime_class_name = ""};
    size_t len, rlen, rawlen;
    char *body = read_file("kuberay_worker.json", &len), *out = NULL, *raw;
    cJSON *got;

    ck_assert_int_eq(webhook_review(body, len, &o, &out, &rlen, NULL, 0), EXT_OK);
    got = cJSON_Parse(out);
    ck_assert_int_eq(
        kube_base64_decode(str_at(cJSON_GetObjectItem(got, "response"), "patch"), &raw, &rawlen),
        EXT_OK);
    ck_assert_ptr_null(strstr(raw, "runtimeClassName"));
    ck_assert_ptr_nonnull(strstr(raw, "NVIDIA_VISIBLE_DEVICES"));
    free(raw);
    cJSON_Delete(got);
    free(out);
    free(body);
}
END_TEST

/* ---- webhook: bodies that are not a review ---------------------------------- */

struct bad_body_case {
    const char *body;
    int rc;
    const char *err; /* a part of the message */
};

static const struct bad_body_case bad_body_cases[] = {
    {"", EXT_EINVAL, "empty body"},
    {"{", EXT_EINVAL, "not JSON"},
    {"[]", EXT_EINVAL, "not an admission.k8s.io/v1 AdmissionReview"},
    {"{\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":\"Pod\",\"request\":{\"uid\":\"a\"}}",
     EXT_EINVAL, "not an admission.k8s.io/v1 AdmissionReview"},
    {"{\"apiVersion\":\"v1\",\"kind\":\"AdmissionReview\",\"request\":{\"uid\":\"a\"}}", EXT_EINVAL,
     "not an admission.k8s.io/v1 AdmissionReview"},
    {"{\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":\"AdmissionReview\"}", EXT_EINVAL,
     "without a request.uid"},
    {"{\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":\"AdmissionReview\",\"request\":{}}",
     EXT_EINVAL, "without a request.uid"},
    {"{\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":\"AdmissionReview\","
     "\"request\":{\"uid\":\"\"}}",
     EXT_EINVAL, "without a request.uid"},
    {"{\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":\"AdmissionReview\","
     "\"request\":{\"uid\":7}}",
     EXT_EINVAL, "without a request.uid"},
    {"{\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":\"AdmissionReview\",\"request\":{\"uid\":"
     "\"0123456789012345678901234567890123456789012345678901234567890123456789012345678901234567"
     "8901234567890123456789012345678901234567890\"}}",
     EXT_EINVAL, "without a request.uid"},
    {"{\"a\":[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[]]]]]]]]]]]]]]]]]]"
     "]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]}",
     EXT_ETOOBIG, "nested deeper"},
};

START_TEST(test_bad_body)
{
    const struct bad_body_case *c = &bad_body_cases[_i];
    struct webhook_opts o = {.runtime_class_name = "nvidia"};
    char err[256] = "", *out = (char *)"untouched";
    size_t rlen = 12345;

    ck_assert_int_eq(webhook_review(c->body, strlen(c->body), &o, &out, &rlen, err, sizeof(err)),
                     c->rc);
    ck_assert_msg(strstr(err, c->err) != NULL, "case %d: err \"%s\" lacks \"%s\"", _i, err, c->err);
    ck_assert_str_eq(out, "untouched"); /* out-parameters are written only on success */
    ck_assert_uint_eq(rlen, 12345);
}
END_TEST

/* A body over the cap is refused before it is parsed; so is an over-long string. */
START_TEST(test_oversized_body)
{
    struct ext_proto_limits lim = {4096, 64, 100, 1024};
    struct webhook_opts o = {.runtime_class_name = "nvidia", .limits = &lim};
    char err[256], *out = NULL;
    size_t len, rlen;
    char *body = read_file("kuberay_worker.json", &len);
    char *big;

    ck_assert_uint_gt(len, 1024);
    ck_assert_int_eq(webhook_review(body, len, &o, &out, &rlen, err, sizeof(err)), EXT_OK);
    free(out);
    lim.max_body = len - 1;
    ck_assert_int_eq(webhook_review(body, len, &o, &out, &rlen, err, sizeof(err)), EXT_ETOOBIG);
    ck_assert_ptr_nonnull(strstr(err, "over the cap"));

    lim.max_body = 1 << 20;
    big = malloc(4096);
    ck_assert_ptr_nonnull(big);
    memset(big, 'x', 4096);
    memcpy(big, "{\"apiVersion\":\"", 15);
    memcpy(big + 4000, "\"}", 3);
    ck_assert_int_eq(webhook_review(big, strlen(big), &o, &out, &rlen, err, sizeof(err)),
                     EXT_ETOOBIG);
    ck_assert_ptr_nonnull(strstr(err, "longer than the cap"));
    free(big);
    free(body);
}
END_TEST

/* The default cap is WEBHOOK_MAX_BODY_DEFAULT. */
START_TEST(test_default_cap)
{
    struct webhook_opts o = {0};
    size_t n = WEBHOOK_MAX_BODY_DEFAULT + 1;
    char err[256], *out = NULL, *body = malloc(n);
    size_t rlen;

    ck_assert_ptr_nonnull(body);
    memset(body, ' ', n);
    ck_assert_int_eq(webhook_review(body, n, &o, &out, &rlen, err, sizeof(err)), EXT_ETOOBIG);
    free(body);
}
END_TEST

/* ---- reservation Pod ---------------------------------------------------------- */

static const struct cfg_gpu_sharing sharing = {
    .reservation_namespace = "muster-system",
    .reservation_image = "ghcr.io/muster/muster:0.1.0",
    .reservation_timeout_ms = 30000,
    .runtime_class_name = "nvidia",
};

static const cJSON *at(const cJSON *j, const char *path)
{
    char key[128];
    const char *dot;

    while (j != NULL && *path != '\0') {
        dot = strchr(path, '|');
        snprintf(key, sizeof(key), "%.*s", dot ? (int)(dot - path) : (int)strlen(path), path);
        if (cJSON_IsArray(j))
            j = cJSON_GetArrayItem(j, atoi(key));
        else
            j = cJSON_GetObjectItemCaseSensitive(j, key);
        path = dot ? dot + 1 : "";
    }
    return j;
}

static const char *sat(const cJSON *j, const char *path)
{
    const cJSON *v = at(j, path);

    ck_assert_msg(cJSON_IsString(v), "%s is not a string", path);
    return v->valuestring;
}

START_TEST(test_reservation_pod_fields)
{
    char err[256];
    cJSON *pod = reservation_pod_new(&sharing, "gpu-node-1", "g0", err, sizeof(err));

    ck_assert_msg(pod != NULL, "%s", err);
    ck_assert_str_eq(sat(pod, "apiVersion"), "v1");
    ck_assert_str_eq(sat(pod, "kind"), "Pod");
    ck_assert_str_eq(sat(pod, "metadata|name"), "gpu-reservation-gpu-node-1-g0");
    ck_assert_str_eq(sat(pod, "metadata|namespace"), "muster-system");
    ck_assert_str_eq(sat(pod, "metadata|labels|app.kubernetes.io/name"), "muster-gpu-reservation");
    ck_assert_str_eq(sat(pod, "metadata|labels|muster.dev/gpu-group"), "g0");
    ck_assert_str_eq(sat(pod, "metadata|labels|muster.dev/node"), "gpu-node-1");
    ck_assert_int_eq(cJSON_GetArraySize(at(pod, "metadata|labels")), 3);
    ck_assert_str_eq(sat(pod, "spec|nodeName"), "gpu-node-1");
    ck_assert_str_eq(sat(pod, "spec|priorityClassName"), "muster-gpu-reservation");
    ck_assert_str_eq(sat(pod, "spec|serviceAccountName"), "muster-reserve");
    ck_assert_int_eq(at(pod, "spec|terminationGracePeriodSeconds")->valueint, 5);
    ck_assert_int_eq(cJSON_GetArraySize(at(pod, "spec|tolerations")), 1);
    ck_assert_str_eq(sat(pod, "spec|tolerations|0|operator"), "Exists");
    ck_assert_int_eq(cJSON_GetArraySize(at(pod, "spec|tolerations|0")), 1); /* no key, no effect */
    ck_assert_int_eq(cJSON_GetArraySize(at(pod, "spec|containers")), 1);
    ck_assert_str_eq(sat(pod, "spec|containers|0|image"), "ghcr.io/muster/muster:0.1.0");
    ck_assert_str_eq(sat(pod, "spec|containers|0|command|0"), "muster");
    ck_assert_str_eq(sat(pod, "spec|containers|0|command|1"), "reserve");
    ck_assert_int_eq(cJSON_GetArraySize(at(pod, "spec|containers|0|command")), 2);
    for (int i = 0; i < 2; i++) {
        const char *r = i ? "limits" : "requests";
        char p[128];

        snprintf(p, sizeof(p), "spec|containers|0|resources|%s|nvidia.com/gpu", r);
        ck_assert_str_eq(sat(pod, p), "1");
        snprintf(p, sizeof(p), "spec|containers|0|resources|%s|cpu", r);
        ck_assert_str_eq(sat(pod, p), "10m");
        snprintf(p, sizeof(p), "spec|containers|0|resources|%s|memory", r);
        ck_assert_str_eq(sat(pod, p), "16Mi");
    }
    ck_assert_str_eq(sat(pod, "spec|containers|0|env|0|name"), "POD_NAME");
    ck_assert_str_eq(sat(pod, "spec|containers|0|env|0|valueFrom|fieldRef|fieldPath"),
                     "metadata.name");
    ck_assert_str_eq(sat(pod, "spec|containers|0|env|1|name"), "POD_NAMESPACE");
    ck_assert_str_eq(sat(pod, "spec|containers|0|env|1|valueFrom|fieldRef|fieldPath"),
                     "metadata.namespace");
    /* It must not hand itself a share: no runtime class of its own, no gpu-fraction. */
    ck_assert_ptr_null(at(pod, "spec|runtimeClassName"));
    ck_assert_ptr_null(at(pod, "metadata|annotations"));
    cJSON_Delete(pod);
}
END_TEST

struct name_case {
    const char *node, *group;
    const char *want; /* NULL: refused */
};

static const struct name_case name_cases[] = {
    {"gpu-node-1", "g0", "gpu-reservation-gpu-node-1-g0"},
    {"n", "g12", "gpu-reservation-n-g12"},
    /* a dot would be lost: hashed so that a.b and a-b never meet */
    {"ip-10-0-1-5.ec2.internal", "g0", "gpu-reservation-ip-10-0-1-5-ec2-internal-"},
    {"a-very-long-node-name-from-a-cloud-provider-with-many-parts-0001", "g3",
     "gpu-reservation-a-very-long-node-name-from-a-"},
    {"Upper", "g0", "gpu-reservation-upper-"},
    {"", "g0", NULL},
    {"node", "", NULL},
    {"node", "g-", NULL},
    {"node", "group-id-longer-than-twenty", NULL},
};

START_TEST(test_reservation_pod_name)
{
    const struct name_case *c = &name_cases[_i];
    char buf[128];
    int rc = reservation_pod_name(c->node, c->group, buf, sizeof(buf));
    size_t n;

    if (c->want == NULL) {
        ck_assert_int_eq(rc, EXT_EINVAL);
        ck_assert_ptr_null(reservation_pod_new(&sharing, c->node, c->group, NULL, 0));
        return;
    }
    ck_assert_int_eq(rc, EXT_OK);
    n = strlen(buf);
    ck_assert_uint_le(n, 63);
    ck_assert_msg(strncmp(buf, c->want, strlen(c->want)) == 0, "%s, want %s...", buf, c->want);
    ck_assert_uint_eq(strspn(buf, "abcdefghijklmnopqrstuvwxyz0123456789-"), n);
    ck_assert_msg(buf[n - strlen(c->group) - 1] == '-' &&
                      strcmp(buf + n - strlen(c->group), c->group) == 0,
                  "%s does not end with -%s", buf, c->group);
}
END_TEST

START_TEST(test_reservation_names_distinct)
{
    char a[64], b[64];

    ck_assert_int_eq(reservation_pod_name("a.b", "g0", a, sizeof(a)), EXT_OK);
    ck_assert_int_eq(reservation_pod_name("a-b", "g0", b, sizeof(b)), EXT_OK);
    ck_assert_str_ne(a, b);
    ck_assert_int_eq(
        reservation_pod_name("x-long-node-name-from-a-cloud-provider-with-many-parts-0001", "g0", a,
                             sizeof(a)),
        EXT_OK);
    ck_assert_int_eq(
        reservation_pod_name("x-long-node-name-from-a-cloud-provider-with-many-parts-0002", "g0", b,
                             sizeof(b)),
        EXT_OK);
    ck_assert_str_ne(a, b);
}
END_TEST

/* A node name too long for a label value still gives a valid one. */
START_TEST(test_reservation_node_label)
{
    char node[200];
    cJSON *pod;
    const char *v;

    memset(node, 'n', sizeof(node) - 1);
    node[sizeof(node) - 1] = '\0';
    memcpy(node + 50, ".example", 8);
    pod = reservation_pod_new(&sharing, node, "g1", NULL, 0);
    ck_assert_ptr_nonnull(pod);
    ck_assert_str_eq(sat(pod, "spec|nodeName"), node);
    v = sat(pod, "metadata|labels|muster.dev/node");
    ck_assert_uint_le(strlen(v), 63);
    ck_assert_uint_eq(strspn(v, "abcdefghijklmnopqrstuvwxyz0123456789-_."), strlen(v));
    cJSON_Delete(pod);
}
END_TEST

/* ---- share ConfigMap ------------------------------------------------------------ */

START_TEST(test_share_configmap_fields)
{
    char err[256];
    cJSON *cm =
        gpu_share_configmap_new("ml", "muster-gpu-705ab4f5", "GPU-5f3c", 500,
                                "raycluster-gpu-group-worker-x7k2p", "uid-123", err, sizeof(err));

    ck_assert_msg(cm != NULL, "%s", err);
    ck_assert_str_eq(sat(cm, "apiVersion"), "v1");
    ck_assert_str_eq(sat(cm, "kind"), "ConfigMap");
    ck_assert_str_eq(sat(cm, "metadata|name"), "muster-gpu-705ab4f5");
    ck_assert_str_eq(sat(cm, "metadata|namespace"), "ml");
    ck_assert_str_eq(sat(cm, "data|NVIDIA_VISIBLE_DEVICES"), "GPU-5f3c");
    ck_assert_str_eq(sat(cm, "data|GPU_FRACTION"), "0.5");
    ck_assert_int_eq(cJSON_GetArraySize(at(cm, "data")), 2);
    ck_assert_int_eq(cJSON_GetArraySize(at(cm, "metadata|ownerReferences")), 1);
    ck_assert_str_eq(sat(cm, "metadata|ownerReferences|0|apiVersion"), "v1");
    ck_assert_str_eq(sat(cm, "metadata|ownerReferences|0|kind"), "Pod");
    ck_assert_str_eq(sat(cm, "metadata|ownerReferences|0|name"),
                     "raycluster-gpu-group-worker-x7k2p");
    ck_assert_str_eq(sat(cm, "metadata|ownerReferences|0|uid"), "uid-123");
    cJSON_Delete(cm);

    cm = gpu_share_configmap_new("ml", "muster-gpu-a", "GPU-a,GPU-b", 125, "p", "u", NULL, 0);
    ck_assert_str_eq(sat(cm, "data|NVIDIA_VISIBLE_DEVICES"), "GPU-a,GPU-b");
    ck_assert_str_eq(sat(cm, "data|GPU_FRACTION"), "0.125");
    cJSON_Delete(cm);
    /* A gpu-memory ask of a whole device's memory: the whole device. */
    cm = gpu_share_configmap_new("ml", "muster-gpu-b", "GPU-a", 1000, "p", "u", NULL, 0);
    ck_assert_str_eq(sat(cm, "data|GPU_FRACTION"), "1");
    cJSON_Delete(cm);
}
END_TEST

START_TEST(test_share_configmap_refused)
{
    char err[256] = "";

    ck_assert_ptr_null(
        gpu_share_configmap_new("ml", "cm", "GPU-a", 1001, "p", "u", err, sizeof(err)));
    ck_assert_ptr_nonnull(strstr(err, "share in (0, 1]"));
    ck_assert_ptr_null(gpu_share_configmap_new("ml", "cm", "GPU-a", 0, "p", "u", NULL, 0));
    ck_assert_ptr_null(gpu_share_configmap_new("ml", "cm", "", 500, "p", "u", NULL, 0));
    ck_assert_ptr_null(gpu_share_configmap_new("ml", "cm", "GPU-a", 500, "p", "", NULL, 0));
    ck_assert_ptr_null(gpu_share_configmap_new("ML", "cm", "GPU-a", 500, "p", "u", NULL, 0));
    ck_assert_ptr_null(gpu_share_configmap_new("ml", NULL, "GPU-a", 500, "p", "u", NULL, 0));
}
END_TEST

START_TEST(test_share_configmap_name)
{
    char buf[64];
    cJSON *pod = cJSON_Parse("{\"metadata\":{\"labels\":{\"muster.dev/gpu-share-id\":"
                             "\"705ab4f5-6393-11e8-b7cc-42010a800002\"}}}");

    ck_assert_int_eq(gpu_share_configmap_name("abc", buf, sizeof(buf)), EXT_OK);
    ck_assert_str_eq(buf, "muster-gpu-abc");
    ck_assert_int_eq(gpu_share_configmap_name("abc", buf, 14), EXT_EINVAL); /* no room */
    ck_assert_int_eq(gpu_share_configmap_name("Abc", buf, sizeof(buf)), EXT_EINVAL);
    ck_assert_int_eq(gpu_share_configmap_name("-abc", buf, sizeof(buf)), EXT_EINVAL);
    ck_assert_int_eq(gpu_share_configmap_name("", buf, sizeof(buf)), EXT_EINVAL);
    ck_assert_int_eq(gpu_share_configmap_name_of(pod, buf, sizeof(buf)), EXT_OK);
    ck_assert_str_eq(buf, "muster-gpu-705ab4f5-6393-11e8-b7cc-42010a800002");
    cJSON_Delete(pod);
    pod = cJSON_Parse("{\"metadata\":{\"labels\":{}}}");
    ck_assert_int_eq(gpu_share_configmap_name_of(pod, buf, sizeof(buf)), EXT_ENOTFOUND);
    cJSON_Delete(pod);
}
END_TEST

/* ---- reserve: which NVIDIA_VISIBLE_DEVICES values name one device ---------------- */

struct device_case {
    const char *value;
    int rc;
    const char *err;
};

static const struct device_case device_cases[] = {
    {"GPU-5f3c9a2e-8d1b-4c7a-9e21-0b6f4d2a1c3e", EXT_OK, ""},
    {"3", EXT_OK, ""},
    {"MIG-1b2c3d4e-aaaa-bbbb-cccc-111122223333", EXT_OK, ""},
    {NULL, EXT_EINVAL, "is not set"},
    {"", EXT_EINVAL, "is empty"},
    {"  ", EXT_EINVAL, "is empty"},
    {"all", EXT_EINVAL, "did not allocate"},
    {"ALL", EXT_EINVAL, "did not allocate"},
    {"none", EXT_EINVAL, "was given no GPU"},
    {"void", EXT_EINVAL, "was given no GPU"},
    {"0,1", EXT_EINVAL, "several devices"},
    {"/var/run/nvidia-container-devices", EXT_EINVAL, "volume mounts"},
    {"GPU-1 $(id)", EXT_EINVAL, "neither a GPU UUID"},
};

START_TEST(test_device_check)
{
    const struct device_case *c = &device_cases[_i];
    char err[512] = "";

    ck_assert_int_eq(reserve_device_check(c->value, err, sizeof(err)), c->rc);
    ck_assert_msg(strstr(err, c->err) != NULL, "\"%s\": err \"%s\" lacks \"%s\"",
                  c->value ? c->value : "(unset)", err, c->err);
}
END_TEST

#define N(a) ((int)(sizeof(a) / sizeof((a)[0])))

static Suite *webhook_suite(void)
{
    Suite *s = suite_create("webhook");
    TCase *tc;

    tc = tcase_create("review");
    tcase_add_loop_test(tc, test_review_case, 0, N(review_cases));
    tcase_add_test(tc, test_review_memory_callback);
    tcase_add_test(tc, test_review_no_runtime_class);
    suite_add_tcase(s, tc);
    tc = tcase_create("bad_body");
    tcase_add_loop_test(tc, test_bad_body, 0, N(bad_body_cases));
    tcase_add_test(tc, test_oversized_body);
    tcase_add_test(tc, test_default_cap);
    suite_add_tcase(s, tc);
    tc = tcase_create("reservation_pod");
    tcase_add_test(tc, test_reservation_pod_fields);
    tcase_add_loop_test(tc, test_reservation_pod_name, 0, N(name_cases));
    tcase_add_test(tc, test_reservation_names_distinct);
    tcase_add_test(tc, test_reservation_node_label);
    suite_add_tcase(s, tc);
    tc = tcase_create("share_configmap");
    tcase_add_test(tc, test_share_configmap_fields);
    tcase_add_test(tc, test_share_configmap_refused);
    tcase_add_test(tc, test_share_configmap_name);
    suite_add_tcase(s, tc);
    tc = tcase_create("reserve_device");
    tcase_add_loop_test(tc, test_device_check, 0, N(device_cases));
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(webhook_suite());
    int failed;

    srunner_run_all(sr, CK_ENV);
    failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
