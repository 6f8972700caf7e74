/* test_kube_decode.c - Kubernetes objects into the engine's specs. */
#include <check.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base.h"
#include "kube.h"
#include "fixture.h"
#include "kube_client_int.h"

static cJSON *load_fixture(const char *name)
{
    char *buf = fixture_read("decode", name, NULL);
    cJSON *j = cJSON_Parse(buf);

    free(buf);
    ck_assert_msg(j != NULL, "decode/%s is not JSON", name);
    return j;
}

/* A lookup that knows KAI's default classes and one of Volcano's harness. */
struct known_classes {
    struct kube_refs *refs;
    struct kube_lookup lookup;
    struct kube_decode_opts opts;
};

static void known_classes_init(struct known_classes *k)
{
    static const struct kube_priority_class classes[] = {
        {"train", 50, true},
        {"build", 100, false},
        {"inference", 125, false},
        {"high-priority", 100000, false},
    };

    k->refs = kube_refs_new();
    ck_assert_ptr_nonnull(k->refs);
    for (size_t i = 0; i < sizeof(classes) / sizeof(classes[0]); i++)
        ck_assert_int_eq(kube_refs_priority_class(k->refs, &classes[i]), EXT_OK);
    k->lookup = kube_refs_lookup(k->refs);
    k->opts = kube_decode_defaults;
    k->opts.lookup = &k->lookup;
}

/* ---- quantities ---------------------------------------------------------- */

struct quantity_case {
    const char *in;
    int64_t scale;
    int rc;
    int64_t want;
};

static const struct quantity_case quantity_cases[] = {
    {"2", 1000, EXT_OK, 2000},
    {"500m", 1000, EXT_OK, 500},
    {"0.5", 1000, EXT_OK, 500},
    {".5", 1000, EXT_OK, 500},
    {"5.", 1000, EXT_OK, 5000},
    {"1.5", 1, EXT_OK, 2}, /* whole units round up */
    {"1.0001", 1000, EXT_OK, 1001},
    {"100m", 1, EXT_OK, 1},
    {"1m", 1000, EXT_OK, 1},
    {"1500u", 1000, EXT_OK, 2}, /* 1.5 milli rounds up */
    {"1n", 1000, EXT_OK, 1},
    {"0", 1, EXT_OK, 0},
    {"0.000", 1000, EXT_OK, 0},
    {"000123", 1, EXT_OK, 123},
    {"+3", 1, EXT_OK, 3},
    {"-1", 1000, EXT_OK, -1000},
    {"-0.5", 1, EXT_OK, -1}, /* magnitude rounds up, as Kubernetes does */
    {"4Gi", 1, EXT_OK, 4294967296},
    {"4G", 1, EXT_OK, 4000000000},
    {"65740800Ki", 1, EXT_OK, 67318579200},
    {"1.5Gi", 1, EXT_OK, 1610612736},
    {"0.1Ki", 1, EXT_OK, 103}, /* 102.4 */
    {"1k", 1, EXT_OK, 1000},
    {"2M", 1, EXT_OK, 2000000},
    {"3T", 1, EXT_OK, 3000000000000},
    {"1P", 1, EXT_OK, 1000000000000000},
    {"1E", 1, EXT_OK, 1000000000000000000},
    {"7Ei", 1, EXT_OK, 8070450532247928832},
    {"8Ei", 1, EXT_ETOOBIG, 0},
    {"9223372036854775807", 1, EXT_OK, INT64_MAX},
    {"9223372036854775808", 1, EXT_ETOOBIG, 0},
    {"9223372036854775807", 1000, EXT_ETOOBIG, 0},
    {"9223372036854775.807", 1000, EXT_OK, INT64_MAX},
    {"1e3", 1, EXT_OK, 1000},
    {"1E3", 1, EXT_OK, 1000},
    {"1e-3", 1000, EXT_OK, 1},
    {"1e+2", 1, EXT_OK, 100},
    {"25e-1", 1, EXT_OK, 3},
    {"1e18", 1, EXT_OK, 1000000000000000000},
    {"1e19", 1, EXT_ETOOBIG, 0},
    {"1e999999999", 1, EXT_ETOOBIG, 0},
    {"0e999999999", 1, EXT_OK, 0},
    {"1e-999999999", 1, EXT_OK, 1},
    {"0.000000000000000000000000000001", 1, EXT_OK, 1},
    {"100000000000000000000000000000e-20", 1, EXT_OK, 1000000000},
    {"", 1, EXT_EINVAL, 0},
    {"m", 1000, EXT_EINVAL, 0},
    {".", 1, EXT_EINVAL, 0},
    {"-", 1, EXT_EINVAL, 0},
    {"1.2.3", 1, EXT_EINVAL, 0},
    {"1K", 1, EXT_EINVAL, 0},
    {"1ki", 1, EXT_EINVAL, 0},
    {"1KiB", 1, EXT_EINVAL, 0},
    {"1Mi ", 1, EXT_EINVAL, 0},
    {" 1", 1, EXT_EINVAL, 0},
    {"1e", 1, EXT_EINVAL, 0},
    {"1e+", 1, EXT_EINVAL, 0},
    {"1e3.5", 1, EXT_EINVAL, 0},
    {"0x10", 1, EXT_EINVAL, 0},
    {"+-1", 1, EXT_EINVAL, 0},
    {"abc", 1, EXT_EINVAL, 0},
    {"two", 1, EXT_EINVAL, 0},
    {"1 Gi", 1, EXT_EINVAL, 0},
    {"12345678901234567890123456789012345678901234567890123456789012345", 1, EXT_EINVAL, 0},
    {"1", 3, EXT_EINVAL, 0}, /* scale must be a power of ten */
};

START_TEST(test_quantity_parse)
{
    const struct quantity_case *c = &quantity_cases[_i];
    int64_t got = -42;
    int rc = kube_quantity_parse(c->in, c->scale, &got);

    ck_assert_msg(rc == c->rc, "\"%s\": rc %d, want %d", c->in, rc, c->rc);
    if (c->rc == EXT_OK)
        ck_assert_msg(got == c->want, "\"%s\" x%lld: got %lld, want %lld", c->in,
                      (long long)c->scale, (long long)got, (long long)c->want);
    else
        ck_assert_int_eq(got, -42);
}
END_TEST

struct format_case {
    int64_t v;
    enum kube_quantity_style style;
    const char *want;
};

static const struct format_case format_cases[] = {
    {2000, KUBE_QUANTITY_MILLI, "2"},      {500, KUBE_QUANTITY_MILLI, "500m"},
    {0, KUBE_QUANTITY_MILLI, "0"},         {4294967296, KUBE_QUANTITY_BINARY, "4Gi"},
    {3072, KUBE_QUANTITY_BINARY, "3Ki"},   {1000, KUBE_QUANTITY_BINARY, "1k"},
    {0, KUBE_QUANTITY_BINARY, "0"},        {1610612736, KUBE_QUANTITY_BINARY, "1536Mi"},
    {2000000000, KUBE_QUANTITY_BINARY, "2G"},  {1001, KUBE_QUANTITY_BINARY, "1001"},
    {500, KUBE_QUANTITY_DECIMAL, "0.5"},   {2000, KUBE_QUANTITY_DECIMAL, "2"},
    {2250, KUBE_QUANTITY_DECIMAL, "2.25"}, {1, KUBE_QUANTITY_DECIMAL, "0.001"},
    {0, KUBE_QUANTITY_DECIMAL, "0"},       {-500, KUBE_QUANTITY_DECIMAL, "-0.5"},
};

START_TEST(test_quantity_format)
{
    char buf[64];

    kube_quantity_format(format_cases[_i].v, format_cases[_i].style, buf, sizeof(buf));
    ck_assert_str_eq(buf, format_cases[_i].want);
}
END_TEST

struct fraction_case {
    const char *in;
    int rc;
    int32_t want;
};

static const struct fraction_case fraction_cases[] = {
    {"0.5", EXT_OK, 500},     {"0.333", EXT_OK, 333},   {"0.3333", EXT_OK, 334},
    {".25", EXT_OK, 250},     {"5e-1", EXT_OK, 500},    {"1", EXT_OK, 1000},
    {"-0.5", EXT_OK, -500},   {"0.0001", EXT_OK, 1},    {"abc", EXT_EINVAL, 0},
    {"500m", EXT_EINVAL, 0},  {"1E", EXT_EINVAL, 0},    {"", EXT_EINVAL, 0},
    {"0.5Gi", EXT_EINVAL, 0}, {"1e12", EXT_ETOOBIG, 0},
};

START_TEST(test_fraction_parse)
{
    const struct fraction_case *c = &fraction_cases[_i];
    int32_t got = -42;
    int rc = kube_fraction_parse(c->in, &got);

    ck_assert_msg(rc == c->rc, "\"%s\": rc %d, want %d", c->in, rc, c->rc);
    if (rc == EXT_OK)
        ck_assert_int_eq(got, c->want);
}
END_TEST

/* ---- arena --------------------------------------------------------------- */

START_TEST(test_arena)
{
    struct ext_arena *a = ext_arena_new();
    char *big, *s;
    int i;

    ck_assert_ptr_nonnull(a);
    for (i = 0; i < 10000; i++) {
        long *p = ext_arena_alloc(a, sizeof(long) * (size_t)(1 + i % 7));

        ck_assert_ptr_nonnull(p);
        ck_assert_int_eq((uintptr_t)p % _Alignof(max_align_t), 0);
        ck_assert_int_eq(p[0], 0);
        p[0] = i;
    }
    big = ext_arena_alloc(a, 100000);
    ck_assert_ptr_nonnull(big);
    memset(big, 'x', 100000);
    s = ext_arena_strdup(a, "ray.io/cluster");
    ck_assert_str_eq(s, "ray.io/cluster");
    ck_assert_ptr_null(ext_arena_strdup(a, NULL));
    ext_arena_free(a);
    ext_arena_free(NULL);
}
END_TEST

/* ---- pods ---------------------------------------------------------------- */

static const char *label_value(const struct policy_label *l, size_t n, const char *key)
{
    for (size_t i = 0; i < n; i++) {
        if (strcmp(l[i].key, key) == 0)
            return l[i].value;
    }
    return NULL;
}

START_TEST(test_pod_kuberay_head)
{
    cJSON *j = load_fixture("head_pod.json");
    struct ext_arena *a = ext_arena_new();
    struct policy_pod_spec s;
    char err[256];

    ck_assert_int_eq(kube_pod_decode(j, &kube_decode_defaults, a, &s, err, sizeof(err), NULL),
                     EXT_OK);
    ck_assert_str_eq(s.namespace_, "kuberay-lab");
    ck_assert_str_eq(s.name, "demo-head-ds6ld");
    ck_assert_str_eq(s.uid, "3b0d7f52-6a0e-4d53-9c5e-1f2f4f8a9e01");
    ck_assert_int_eq(s.cpu_milli, 2000);
    ck_assert_int_eq(s.memory_bytes, 4LL << 30);
    ck_assert_int_eq(s.gpus, 0);
    ck_assert_int_eq(s.gpu_share_milli, 0);
    ck_assert_str_eq(s.gang, "kuberay-lab/demo");
    ck_assert(s.gang_head);
    ck_assert_str_eq(s.queue, "team-a");
    ck_assert(s.managed);
    ck_assert_ptr_null(s.node);
    ck_assert_ptr_null(s.invalid);
    ck_assert_int_eq(s.ntolerations, 2);
    ck_assert_int_eq(s.tolerations[0].op, POLICY_TOLERATE_EXISTS);
    ck_assert_int_eq(s.tolerations[0].effect, POLICY_TAINT_NO_EXECUTE);
    ck_assert(!kube_pod_is_terminal(j));
    ck_assert(!s.nominated);
    /* kube-scheduler's preemption nominated a node for it. */
    cJSON_DeleteItemFromObject(j, "status");
    cJSON_AddStringToObject(cJSON_AddObjectToObject(j, "status"), "nominatedNodeName", "n7");
    ck_assert_int_eq(kube_pod_decode(j, &kube_decode_defaults, a, &s, err, sizeof(err), NULL),
                     EXT_OK);
    ck_assert(s.nominated);
    ck_assert(!s.unschedulable);
    /* kube-scheduler turned it away and parked it (PodScheduled False, Unschedulable); a
     * condition of another type, or PodScheduled for another reason, is not that. */
    {
        cJSON *conds = cJSON_AddArrayToObject(cJSON_GetObjectItem(j, "status"), "conditions");
        cJSON *ready = cJSON_Parse("{\"type\":\"Ready\",\"status\":\"False\","
                                   "\"reason\":\"Unschedulable\"}");
        cJSON *sched = cJSON_Parse("{\"type\":\"PodScheduled\",\"status\":\"False\","
                                   "\"reason\":\"SchedulerError\"}");

        cJSON_AddItemToArray(conds, ready);
        cJSON_AddItemToArray(conds, sched);
        ck_assert_int_eq(kube_pod_decode(j, &kube_decode_defaults, a, &s, err, sizeof(err), NULL),
                         EXT_OK);
        ck_assert(!s.unschedulable);
        cJSON_ReplaceItemInObject(sched, "reason", cJSON_CreateString("Unschedulable"));
        ck_assert_int_eq(kube_pod_decode(j, &kube_decode_defaults, a, &s, err, sizeof(err), NULL),
                         EXT_OK);
        ck_assert(s.unschedulable);
    }
    ext_arena_free(a);
    cJSON_Delete(j);
}
END_TEST

START_TEST(test_pod_kuberay_worker)
{
    cJSON *j = load_fixture("worker_pod.json");
    struct ext_arena *a = ext_arena_new();
    struct policy_pod_spec s;

    ck_assert_int_eq(kube_pod_decode(j, NULL, a, &s, NULL, 0, NULL), EXT_OK);
    ck_assert_int_eq(s.gpus, 1); /* a limit with no request is the request */
    ck_assert_int_eq(s.priority, 100);
    ck_assert(!s.gang_head);
    ck_assert_str_eq(s.node, "gpu-lab-worker");
    ck_assert_str_eq(s.gpu_groups, "g3");
    ck_assert_str_eq(kube_pod_gang_key(j, a), "kuberay-lab/demo");
    ext_arena_free(a);
    cJSON_Delete(j);
}
END_TEST

/* When a bound pod was bound (Unix ms), for its minimum runtime across a restart: its
 * PodScheduled condition's turn to True, else status.startTime; 0 when neither says, or the
 * pod is not bound. */
static const struct bound_at_case {
    const char *status; /* the Pod's status, JSON */
    bool bound;         /* spec.nodeName set */
    int64_t bound_at;
} bound_at_cases[] = {
    {"{\"phase\":\"Running\"}", true, 0},
    {"{\"conditions\":[{\"type\":\"Ready\",\"status\":\"True\","
     "\"lastTransitionTime\":\"2025-12-01T11:30:00Z\"},{\"type\":\"PodScheduled\","
     "\"status\":\"True\",\"lastTransitionTime\":\"2025-12-01T11:00:00Z\"}],"
     "\"startTime\":\"2025-12-01T11:00:02Z\"}",
     true, 1764586800000},
    {"{\"startTime\":\"2025-12-01T11:00:02.5Z\"}", true, 1764586802500},
    {"{\"conditions\":[{\"type\":\"PodScheduled\",\"status\":\"False\","
     "\"lastTransitionTime\":\"2025-12-01T10:00:00Z\"}],\"startTime\":\"2025-12-01T11:00:02Z\"}",
     true, 1764586802000},
    {"{\"conditions\":[{\"type\":\"PodScheduled\",\"status\":\"True\","
     "\"lastTransitionTime\":\"yesterday\"}]}",
     true, 0},
    {"{\"conditions\":{\"type\":\"PodScheduled\"},\"startTime\":7}", true, 0},
    {"{\"conditions\":[{\"type\":\"PodScheduled\",\"status\":\"True\","
     "\"lastTransitionTime\":\"2025-12-01T11:00:00Z\"}]}",
     false, 0},
};

START_TEST(test_pod_bound_at)
{
    const struct bound_at_case *t = &bound_at_cases[_i];
    cJSON *j = load_fixture("worker_pod.json");
    struct ext_arena *a = ext_arena_new();
    struct policy_pod_spec s;
    char err[256];

    cJSON_ReplaceItemInObject(j, "status", cJSON_Parse(t->status));
    if (!t->bound)
        cJSON_DeleteItemFromObject(cJSON_GetObjectItem(j, "spec"), "nodeName");
    ck_assert_int_eq(kube_pod_decode(j, NULL, a, &s, err, sizeof(err), NULL), EXT_OK);
    ck_assert_int_eq(s.bound_at, t->bound_at);
    ext_arena_free(a);
    cJSON_Delete(j);
}
END_TEST

START_TEST(test_pod_init_and_overhead)
{
    cJSON *j = load_fixture("init_overhead_pod.json");
    struct ext_arena *a = ext_arena_new();
    struct policy_pod_spec s;

    ck_assert_int_eq(kube_pod_decode(j, NULL, a, &s, NULL, 0, NULL), EXT_OK);
    /* containers 750m + sidecar 100m = 850m < init 2 + sidecar 100m; + 100m overhead */
    ck_assert_int_eq(s.cpu_milli, 2200);
    /* 1Gi + 512Mi + sidecar 64Mi = 1600Mi > 256Mi + 64Mi; + 128Mi overhead */
    ck_assert_int_eq(s.memory_bytes, 1728LL << 20);
    ck_assert_str_eq(s.namespace_, "default");
    ck_assert_str_eq(s.uid, "");
    ck_assert_ptr_null(s.gang);
    ck_assert_str_eq(s.queue, "batch");
    ck_assert(!s.managed);
    ck_assert(kube_pod_is_terminal(j));
    ext_arena_free(a);
    cJSON_Delete(j);
}
END_TEST

START_TEST(test_pod_fraction_and_placement)
{
    cJSON *j = load_fixture("fraction_pod.json");
    struct ext_arena *a = ext_arena_new();
    struct policy_pod_spec s;

    ck_assert_int_eq(kube_pod_decode(j, NULL, a, &s, NULL, 0, NULL), EXT_OK);
    ck_assert_ptr_null(s.invalid);
    ck_assert_int_eq(s.gpu_share_milli, 500);
    ck_assert_int_eq(s.gpu_devices, 2);
    ck_assert_int_eq(s.gpus, 0);
    ck_assert_int_eq(s.memory_bytes, 2000000000);
    ck_assert_str_eq(s.gang, "lab/trainers");
    ck_assert_str_eq(s.queue, "research");
    ck_assert_int_eq(s.nnode_selector, 1);
    ck_assert_str_eq(label_value(s.node_selector, 1, "nvidia.com/gpu.present"), "true");
    /* the empty middle term matches no node and is dropped */
    ck_assert_int_eq(s.naffinity, 2);
    ck_assert_int_eq(s.affinity[0].nreqs, 2);
    ck_assert_int_eq(s.affinity[0].reqs[0].op, POLICY_SELECT_IN);
    ck_assert_int_eq(s.affinity[0].reqs[0].nvalues, 2);
    ck_assert_str_eq(s.affinity[0].reqs[0].values[1], "b");
    ck_assert_int_eq(s.affinity[0].reqs[1].op, POLICY_SELECT_NOT_IN);
    ck_assert_int_eq(s.affinity[1].reqs[0].op, POLICY_SELECT_EXISTS);
    ck_assert_int_eq(s.affinity[1].reqs[1].op, POLICY_SELECT_DOES_NOT_EXIST);
    ck_assert_int_eq(s.affinity[1].reqs[1].nvalues, 0);
    ck_assert_int_eq(s.ntolerations, 3);
    ck_assert_int_eq(s.tolerations[1].op, POLICY_TOLERATE_EQUAL);
    ck_assert_str_eq(s.tolerations[1].value, "lab");
    ck_assert_int_eq(s.tolerations[1].effect, -1);
    ck_assert_ptr_null(s.tolerations[2].key);
    ext_arena_free(a);
    cJSON_Delete(j);
}
END_TEST

START_TEST(test_pod_volcano_group_and_gpu_memory)
{
    cJSON *j = load_fixture("volcano_pod.json");
    struct ext_arena *a = ext_arena_new();
    struct policy_pod_spec s;

    ck_assert_int_eq(kube_pod_decode(j, NULL, a, &s, NULL, 0, NULL), EXT_OK);
    ck_assert_str_eq(s.gang, "ml/ray-demo-pg");
    ck_assert_int_eq(s.gpu_memory_mib, 8192);
    ck_assert(!s.managed);
    ck_assert_int_eq(s.cpu_milli, 0);
    ext_arena_free(a);
    cJSON_Delete(j);
}
END_TEST

/* A pod around one varying piece: annotations, a resources block, a spec tail. */
struct invalid_case {
    const char *annotations;
    const char *resources;
    const char *spec_extra;
    const char *want; /* substring of s.invalid */
};

static const struct invalid_case invalid_cases[] = {
    {"{\"gpu-fraction\": \"abc\"}", "{}", "", "gpu-fraction \"abc\" is not a number"},
    {"{\"gpu-fraction\": \"-0.5\"}", "{}", "", "share outside (0, 1)"},
    {"{\"gpu-fraction\": \"1.5\"}", "{}", "", "share outside (0, 1)"},
    {"{\"gpu-fraction\": \"0\"}", "{}", "", "share outside (0, 1)"},
    {"{\"gpu-fraction\": \"1\"}", "{}", "", "share outside (0, 1)"},
    {"{\"gpu-fraction\": \"\"}", "{}", "", "is not a number"},
    {"{\"gpu-fraction\": \"half\"}", "{}", "", "is not a number"},
    {"{\"gpu-memory\": \"-100\"}", "{}", "", "gpu-memory"},
    {"{\"gpu-memory\": \"4Gi\"}", "{}", "", "gpu-memory"},
    {"{\"gpu-fraction\": \"0.5\", \"gpu-memory\": \"100\"}", "{}", "", "both gpu-fraction and"},
    {"{\"gpu-fraction\": \"0.5\", \"gpu-fraction-num-devices\": \"0\"}", "{}", "",
     "gpu-fraction-num-devices"},
    {"{\"gpu-fraction-num-devices\": \"x\"}", "{}", "", "gpu-fraction-num-devices"},
    {"{}", "{\"requests\": {\"cpu\": \"-1\"}}", "", "cpu is negative"},
    {"{}", "{\"limits\": {\"nvidia.com/gpu\": \"0.5\"}}", "", "whole number of devices"},
    {"{}", "{\"requests\": {\"nvidia.com/gpu\": \"-2\"}}", "", "nvidia.com/gpu is negative"},
    {"{}", "{}",
     ", \"affinity\": {\"nodeAffinity\": {\"requiredDuringSchedulingIgnoredDuringExecution\": "
     "{\"nodeSelectorTerms\": [{\"matchExpressions\": [{\"key\": \"gen\", \"operator\": \"Gt\", "
     "\"values\": [\"3\"]}]}]}}}",
     "unsupported operator Gt"},
    {"{}", "{}",
     ", \"affinity\": {\"nodeAffinity\": {\"requiredDuringSchedulingIgnoredDuringExecution\": "
     "{\"nodeSelectorTerms\": [{\"matchFields\": [{\"key\": \"metadata.name\", \"operator\": "
     "\"In\", \"values\": [\"n1\"]}]}]}}}",
     "matchFields unsupported"},
    {"{}", "{}",
     ", \"affinity\": {\"nodeAffinity\": {\"requiredDuringSchedulingIgnoredDuringExecution\": "
     "{\"nodeSelectorTerms\": [{}]}}}",
     "no nodeSelectorTerm can match"},
    {"{}", "{}", ", \"tolerations\": [{\"key\": \"k\", \"operator\": \"Lt\", \"value\": \"3\"}]",
     "toleration: unsupported operator Lt"},
};

START_TEST(test_pod_invalid_asks)
{
    const struct invalid_case *c = &invalid_cases[_i];
    struct ext_arena *a = ext_arena_new();
    struct policy_pod_spec s;
    char json[2048], err[256] = "";
    cJSON *j;

    snprintf(json, sizeof(json),
             "{\"metadata\": {\"name\": \"p\", \"namespace\": \"lab\", \"annotations\": %s},"
             " \"spec\": {\"schedulerName\": \"muster\", \"containers\": [{\"name\": \"c\","
             " \"resources\": %s}]%s}}",
             c->annotations, c->resources, c->spec_extra);
    j = cJSON_Parse(json);
    ck_assert_msg(j != NULL, "bad case JSON %s", json);
    ck_assert_int_eq(kube_pod_decode(j, NULL, a, &s, err, sizeof(err), NULL), EXT_OK);
    ck_assert_msg(s.invalid != NULL && strstr(s.invalid, c->want) != NULL,
                  "case %d: invalid = %s, want %s", _i, s.invalid ? s.invalid : "(null)", c->want);
    ext_arena_free(a);
    cJSON_Delete(j);
}
END_TEST

/* Malformed objects fail with a reason and point at the node. */
struct malformed_case {
    const char *json;
    const char *want;
};

static const struct malformed_case malformed_cases[] = {
    {"{\"metadata\": {}}", "metadata.name missing"},
    {"[]", "not an object"},
    {"{\"metadata\": {\"name\": 7}}", "metadata.name: must be a string"},
    {"{\"metadata\": {\"name\": \"p\"}, \"spec\": {\"containers\": [{\"name\": \"c\", "
     "\"resources\": {\"requests\": {\"cpu\": \"2x\"}}}]}}",
     "containers[c].resources.requests.cpu: \"2x\" is not a quantity"},
    {"{\"metadata\": {\"name\": \"p\"}, \"spec\": {\"containers\": [{\"name\": \"c\", "
     "\"resources\": {\"requests\": {\"memory\": \"99999999999Ei\"}}}]}}",
     "overflows"},
    {"{\"metadata\": {\"name\": \"p\"}, \"spec\": {\"containers\": [{\"resources\": {\"requests\": "
     "{\"cpu\": \"9000000000000000\"}}}, {\"resources\": {\"requests\": {\"cpu\": "
     "\"9000000000000000\"}}}]}}",
     "cpu requests overflow"},
    {"{\"metadata\": {\"name\": \"p\"}, \"spec\": {\"priority\": 1.5}}", "spec.priority"},
    {"{\"metadata\": {\"name\": \"p\", \"labels\": {\"a\": 1}}}", "value must be a string"},
    {"{\"metadata\": {\"name\": \"p\"}, \"spec\": {\"containers\": {}}}", "must be a list"},
    /* Names as Kubernetes checks them: the request's copy of a pod is not the API server's. */
    {"{\"metadata\": {\"name\": \"Upper\"}}",
     "metadata.name \"Upper\" is not a DNS-1123 subdomain"},
    {"{\"metadata\": {\"name\": \"a/b\"}}", "metadata.name \"a/b\" is not a DNS-1123 subdomain"},
    {"{\"metadata\": {\"name\": \"a..b\"}}", "is not a DNS-1123 subdomain"},
    {"{\"metadata\": {\"name\": \"-a\"}}", "is not a DNS-1123 subdomain"},
    {"{\"metadata\": {\"name\": \"caf\u00e9\"}}", "is not a DNS-1123 subdomain"},
    {"{\"metadata\": {\"name\": \"p\", \"namespace\": \"a.b\"}}",
     "metadata.namespace \"a.b\" is not a DNS-1123 label"},
    {"{\"metadata\": {\"name\": \"p\", \"namespace\": "
     "\"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\"}}",
     "is not a DNS-1123 label"},
    {"{\"metadata\": {\"name\": \"p\", \"labels\": {\"ray.io/cluster\": \"x/y\"}}}",
     "gang name \"x/y\" is neither"},
    {"{\"metadata\": {\"name\": \"p\", \"labels\": {\"muster.dev/queue\": \"a b\"}}}",
     "queue \"a b\" is neither"},
    /* a Volcano task is an annotation, which the API server does not check */
    {"{\"metadata\": {\"name\": \"p\", \"annotations\": {\"scheduling.k8s.io/group-name\": "
     "\"pg\", \"volcano.sh/task-spec\": \"a task\"}}}",
     "subgroup \"a task\" is neither"},
};

START_TEST(test_pod_malformed)
{
    struct ext_arena *a = ext_arena_new();
    struct policy_pod_spec s = {.name = "untouched"};
    const cJSON *where = NULL;
    char err[256] = "";
    cJSON *j = cJSON_Parse(malformed_cases[_i].json);

    ck_assert_ptr_nonnull(j);
    ck_assert_int_eq(kube_pod_decode(j, NULL, a, &s, err, sizeof(err), &where), EXT_EINVAL);
    ck_assert_msg(strstr(err, malformed_cases[_i].want) != NULL, "case %d: err = %s", _i, err);
    ck_assert_ptr_nonnull(where);
    ck_assert_str_eq(s.name, "untouched");
    ext_arena_free(a);
    cJSON_Delete(j);
}
END_TEST

START_TEST(test_pod_caps)
{
    struct ext_arena *a = ext_arena_new();
    struct policy_pod_spec s;
    char name[300], err[256] = "";
    cJSON *j, *meta, *labels, *ctrs;
    int i;

    /* a name of 254 characters */
    memset(name, 'n', 254);
    name[254] = '\0';
    j = cJSON_CreateObject();
    meta = cJSON_AddObjectToObject(j, "metadata");
    cJSON_AddStringToObject(meta, "name", name);
    ck_assert_int_eq(kube_pod_decode(j, NULL, a, &s, err, sizeof(err), NULL), EXT_EINVAL);
    ck_assert_ptr_nonnull(strstr(err, "longer than 253"));
    cJSON_ReplaceItemInObject(meta, "name", cJSON_CreateString("p"));

    /* 257 labels */
    labels = cJSON_AddObjectToObject(meta, "labels");
    for (i = 0; i < 257; i++) {
        snprintf(name, sizeof(name), "l%d", i);
        cJSON_AddStringToObject(labels, name, "v");
    }
    ck_assert_int_eq(kube_pod_decode(j, NULL, a, &s, err, sizeof(err), NULL), EXT_EINVAL);
    ck_assert_ptr_nonnull(strstr(err, "over the cap of 256"));
    cJSON_DeleteItemFromObject(meta, "labels");

    /* 65 containers */
    ctrs = cJSON_AddArrayToObject(cJSON_AddObjectToObject(j, "spec"), "containers");
    for (i = 0; i < 65; i++)
        cJSON_AddItemToArray(ctrs, cJSON_CreateObject());
    ck_assert_int_eq(kube_pod_decode(j, NULL, a, &s, err, sizeof(err), NULL), EXT_EINVAL);
    ck_assert_ptr_nonnull(strstr(err, "over the cap of 64"));
    ext_arena_free(a);
    cJSON_Delete(j);
}
END_TEST

START_TEST(test_pod_options)
{
    static const char *const keys[] = {"team"};
    static const char *const scheds[] = {"muster", "kai-scheduler"};
    const struct kube_decode_opts o = {keys, 1, scheds, 2};
    struct ext_arena *a = ext_arena_new();
    struct policy_pod_spec s;
    cJSON *j = cJSON_Parse("{\"metadata\": {\"name\": \"p\", \"labels\": {\"team\": \"x\", "
                           "\"muster.dev/queue\": \"y\"}}, \"spec\": {\"schedulerName\": "
                           "\"kai-scheduler\"}}");

    ck_assert_int_eq(kube_pod_decode(j, &o, a, &s, NULL, 0, NULL), EXT_OK);
    ck_assert_str_eq(s.queue, "x");
    ck_assert(s.managed);
    ck_assert_int_eq(kube_pod_decode(j, NULL, a, &s, NULL, 0, NULL), EXT_OK);
    ck_assert_str_eq(s.queue, "y");
    ck_assert(!s.managed);
    ext_arena_free(a);
    cJSON_Delete(j);
}
END_TEST

/* Which part of its gang a pod is, and whether it may be evicted. */
struct pod_member_case {
    const char *file;
    const char *gang, *subgroup;
    enum policy_preemptible preemptible;
    int32_t priority; /* with the known classes */
};

static const struct pod_member_case pod_member_cases[] = {
    {"head_pod.json", "kuberay-lab/demo", "head", POLICY_PREEMPTIBLE_BY_PRIORITY, 0},
    {"worker_pod.json", "kuberay-lab/demo", "workers", POLICY_PREEMPTIBLE_BY_PRIORITY, 100},
    /* KAI: annotation pod-group-name, label subgroup-name; KAI's label beats Volcano's */
    {"pod_kai_member.json", "test/pending-job0", "sub1", POLICY_PREEMPTIBLE_NO, 100},
    /* Volcano: the task annotation; spec.priority beats the class it names */
    {"pod_volcano_task.json", "c1/pg1", "master", POLICY_PREEMPTIBLE_NO, 7},
    /* no class named: the globalDefault one (train, 50) */
    {"volcano_pod.json", "ml/ray-demo-pg", NULL, POLICY_PREEMPTIBLE_BY_PRIORITY, 50},
    /* the Workload API: spec.schedulingGroup names a PodGroup the lookup does not know */
    {"pod_workload.json", "ml/training-workers-0", NULL, POLICY_PREEMPTIBLE_BY_PRIORITY, 50},
};

START_TEST(test_pod_membership)
{
    const struct pod_member_case *c = &pod_member_cases[_i];
    cJSON *j = load_fixture(c->file);
    struct ext_arena *a = ext_arena_new();
    struct known_classes k;
    struct policy_pod_spec s;
    char err[256] = "";

    known_classes_init(&k);
    ck_assert_msg(kube_pod_decode(j, &k.opts, a, &s, err, sizeof(err), NULL) == EXT_OK, "%s: %s",
                  c->file, err);
    ck_assert_ptr_null(s.invalid);
    ck_assert_str_eq(s.gang, c->gang);
    if (c->subgroup == NULL)
        ck_assert_ptr_null(s.subgroup);
    else
        ck_assert_str_eq(s.subgroup, c->subgroup);
    ck_assert_int_eq(s.preemptible, c->preemptible);
    ck_assert_int_eq(s.priority, c->priority);
    kube_refs_free(k.refs);
    ext_arena_free(a);
    cJSON_Delete(j);
}
END_TEST

/* Without a lookup a class is unknown: priority 0, as Kubernetes leaves it without the plugin. */
START_TEST(test_pod_priority_without_lookup)
{
    cJSON *j = load_fixture("pod_kai_member.json");
    struct ext_arena *a = ext_arena_new();
    struct policy_pod_spec s;

    ck_assert_int_eq(kube_pod_decode(j, NULL, a, &s, NULL, 0, NULL), EXT_OK);
    ck_assert_int_eq(s.priority, 0);
    ck_assert_str_eq(kube_pod_gang_key(j, a), "test/pending-job0");
    ck_assert_ptr_null(kube_pod_scheduling_group(j)); /* its gang is KAI's, not a Workload's */
    ext_arena_free(a);
    cJSON_Delete(j);
}
END_TEST

/* Preemptibility values that are neither: the pod waits with that reason. */
START_TEST(test_pod_preemptibility_invalid)
{
    static const char *const cases[][2] = {
        {"{\"labels\": {\"kai.scheduler/preemptibility\": \"yes\"}}",
         "label kai.scheduler/preemptibility \"yes\" is not preemptible or non-preemptible"},
        {"{\"annotations\": {\"volcano.sh/preemptable\": \"maybe\"}}",
         "annotation volcano.sh/preemptable \"maybe\" is not true or false"},
    };
    struct ext_arena *a = ext_arena_new();
    struct policy_pod_spec s;
    char json[512];

    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        cJSON *j, *meta;

        snprintf(json, sizeof(json), "{\"metadata\": %s}", cases[i][0]);
        j = cJSON_Parse(json);
        meta = cJSON_GetObjectItem(j, "metadata");
        cJSON_AddStringToObject(meta, "name", "p");
        ck_assert_int_eq(kube_pod_decode(j, NULL, a, &s, NULL, 0, NULL), EXT_OK);
        ck_assert_msg(s.invalid != NULL && strcmp(s.invalid, cases[i][1]) == 0, "invalid = %s",
                      s.invalid ? s.invalid : "(null)");
        cJSON_Delete(j);
    }
    ext_arena_free(a);
}
END_TEST

/*
 * The store behind the lookups: a Workload-API pod joins its Workload's gang,
 * in its template's subgroup when the Workload has several; a standalone
 * PodGroup is its own gang; forgetting says which gang was declared.
 */
START_TEST(test_refs_workload_members)
{
    struct ext_arena *a = ext_arena_new();
    struct known_classes k;
    struct policy_gang_spec wl;
    struct kube_pod_group pg;
    struct policy_pod_spec s;
    char gang[128];
    cJSON *wj = load_fixture("wl_v1alpha2_multi.json"), *pgj = load_fixture("wapg_v1alpha2.json");
    cJSON *pod = load_fixture("pod_workload.json");

    known_classes_init(&k);
    ck_assert_str_eq(kube_pod_scheduling_group(pod), "training-workers-0");
    ck_assert(!kube_refs_pod_group_known(k.refs, "ml", "training-workers-0"));
    /* the PodGroup alone: its pods join the Workload's key, no subgroup yet */
    ck_assert_int_eq(kube_pod_group_decode(pgj, &k.opts, a, &pg, NULL, 0, NULL), EXT_OK);
    ck_assert_int_eq(kube_refs_pod_group(k.refs, &pg), EXT_OK);
    ck_assert_int_eq(kube_pod_decode(pod, &k.opts, a, &s, NULL, 0, NULL), EXT_OK);
    ck_assert_str_eq(s.gang, "ml/training");
    ck_assert_ptr_null(s.subgroup);
    ck_assert_msg(!kube_refs_pod_group_known(k.refs, "ml", "training-workers-0"),
                  "its Workload is not known yet: the subgroup may still change");
    /* with its Workload of three templates: the subgroup is the template */
    ck_assert_int_eq(kube_workload_gang(wj, &k.opts, a, &wl, NULL, 0, NULL), EXT_OK);
    ck_assert_int_eq(kube_refs_workload(k.refs, "ml", "training", &wl, NULL), EXT_OK);
    ck_assert(kube_refs_pod_group_known(k.refs, "ml", "training-workers-0"));
    ck_assert(!kube_refs_pod_group_known(k.refs, "lab", "training-workers-0"));
    ck_assert_int_eq(kube_pod_decode(pod, &k.opts, a, &s, NULL, 0, NULL), EXT_OK);
    ck_assert_str_eq(s.gang, "ml/training");
    ck_assert_str_eq(s.subgroup, "workers");
    /* a Workload of one template is a count: no subgroup */
    wl.nsubgroups = 0;
    wl.subgroups = NULL;
    ck_assert_int_eq(kube_refs_workload(k.refs, "ml", "training", &wl, "workers"), EXT_OK);
    ck_assert_int_eq(kube_pod_decode(pod, &k.opts, a, &s, NULL, 0, NULL), EXT_OK);
    ck_assert_ptr_null(s.subgroup);
    /* forgetting: the Workload declared ml/training, the PodGroup nothing */
    ck_assert(kube_refs_forget(k.refs, KUBE_REF_WORKLOAD, "ml/training", gang, sizeof(gang)));
    ck_assert_str_eq(gang, "ml/training");
    ck_assert(
        kube_refs_forget(k.refs, KUBE_REF_POD_GROUP, "ml/training-workers-0", gang, sizeof(gang)));
    ck_assert_str_eq(gang, "");
    ck_assert(
        !kube_refs_forget(k.refs, KUBE_REF_POD_GROUP, "ml/training-workers-0", gang, sizeof(gang)));
    ck_assert_int_eq(kube_pod_decode(pod, &k.opts, a, &s, NULL, 0, NULL), EXT_OK);
    ck_assert_str_eq(s.gang, "ml/training-workers-0");
    kube_refs_free(k.refs);
    kube_refs_free(NULL);
    ext_arena_free(a);
    cJSON_Delete(wj);
    cJSON_Delete(pgj);
    cJSON_Delete(pod);
}
END_TEST

/*
 * kube-scheduler's gang cycle enforces each PodGroup's own gang.minCount, which v1beta1 lets a
 * controller change after creation (k8s.io/api v0.37.2 scheduling/v1beta1 GangSchedulingPolicy:
 * "mutable to support workload scaling"). The Workload's gang muster declares follows it: a
 * template's minimum is the sum of its PodGroups' minCounts, the template's own while none is
 * known, and again once the last one goes.
 */
static cJSON *wapg_v1beta1(const char *name, const char *workload, const char *tpl, int min)
{
    char json[512];

    snprintf(json, sizeof(json),
             "{\"metadata\": {\"name\": \"%s\", \"namespace\": \"ml\"}, \"spec\": "
             "{\"workloadRef\": {\"workloadName\": \"%s\", \"templateName\": \"%s\"}, "
             "\"schedulingPolicy\": {\"gang\": {\"minCount\": %d}}}}",
             name, workload, tpl, min);
    return cJSON_Parse(json);
}

static void record_pg(struct kube_refs *r, struct ext_arena *a, const char *name,
                      const char *workload, const char *tpl, int min)
{
    cJSON *j = wapg_v1beta1(name, workload, tpl, min);
    struct kube_pod_group pg;

    ck_assert_int_eq(kube_pod_group_decode(j, NULL, a, &pg, NULL, 0, NULL), EXT_OK);
    ck_assert_int_eq(pg.min_count, min);
    ck_assert_int_eq(kube_refs_pod_group(r, &pg), EXT_OK);
    cJSON_Delete(j);
}

START_TEST(test_refs_workload_follows_its_pod_groups_min_counts)
{
    struct ext_arena *a = ext_arena_new();
    struct kube_refs *r = kube_refs_new();
    struct policy_gang_spec wl, g;
    cJSON *multi = load_fixture("wl_v1beta1_composite.json");
    cJSON *one = cJSON_Parse("{\"metadata\": {\"name\": \"infer\", \"namespace\": \"ml\"}, "
                             "\"spec\": {\"podGroupTemplates\": [{\"name\": \"replicas\", "
                             "\"schedulingPolicy\": {\"gang\": {\"minCount\": 4}}}]}}");

    /* a Workload of one template: a count, the template's until a PodGroup says otherwise */
    ck_assert_str_eq(kube_workload_single_template(one), "replicas");
    ck_assert_int_eq(kube_workload_gang(one, NULL, a, &wl, NULL, 0, NULL), EXT_OK);
    ck_assert_int_eq(kube_refs_workload(r, "ml", "infer", &wl, "replicas"), EXT_OK);
    ck_assert(!kube_refs_workload_gang(r, "ml/nothing", a, &g));
    ck_assert(kube_refs_workload_gang(r, "ml/infer", a, &g));
    ck_assert_str_eq(g.key, "ml/infer");
    ck_assert_int_eq(g.min_members, 4);
    ck_assert_int_eq(g.nsubgroups, 0);
    record_pg(r, a, "infer-0", "infer", "replicas", 4);
    ck_assert(kube_refs_workload_gang(r, "ml/infer", a, &g));
    ck_assert_int_eq(g.min_members, 4);
    record_pg(r, a, "infer-0", "infer", "replicas", 3); /* minCount lowered after creation */
    ck_assert(kube_refs_workload_gang(r, "ml/infer", a, &g));
    ck_assert_int_eq(g.min_members, 3);
    record_pg(r, a, "other-0", "other", "replicas", 9); /* another Workload's: not counted */
    ck_assert(kube_refs_workload_gang(r, "ml/infer", a, &g));
    ck_assert_int_eq(g.min_members, 3);
    ck_assert(kube_refs_forget(r, KUBE_REF_POD_GROUP, "ml/infer-0", NULL, 0));
    ck_assert(kube_refs_workload_gang(r, "ml/infer", a, &g));
    ck_assert_int_eq(g.min_members, 4);
    /* subgroups: each template its PodGroups' sum; the others keep the template's */
    ck_assert_int_eq(kube_workload_gang(multi, NULL, a, &wl, NULL, 0, NULL), EXT_OK);
    ck_assert_int_eq(kube_refs_workload(r, "ml", "jobset", &wl, NULL), EXT_OK);
    record_pg(r, a, "jobset-slice-a-0", "jobset", "slice-a", 3);
    record_pg(r, a, "jobset-slice-a-1", "jobset", "slice-a", 2);
    ck_assert(kube_refs_workload_gang(r, "ml/jobset", a, &g));
    ck_assert_int_eq(g.nsubgroups, 3);
    ck_assert_str_eq(g.subgroups[0].name, "leader");
    ck_assert_int_eq(g.subgroups[0].min_members, 1);
    ck_assert_str_eq(g.subgroups[1].name, "slice-a");
    ck_assert_int_eq(g.subgroups[1].min_members, 5);
    ck_assert_str_eq(g.subgroups[2].name, "slice-b");
    ck_assert_int_eq(g.subgroups[2].min_members, 2);
    ck_assert_int_eq(g.min_members, 8);
    kube_refs_free(r);
    ext_arena_free(a);
    cJSON_Delete(multi);
    cJSON_Delete(one);
}
END_TEST

/* Kubernetes 1.37's TopologyAwareWorkloadScheduling: a PodGroup's (or its template's)
 * schedulingConstraints.topology[0].key is the gang's topology key; a PodGroup's beats its
 * Workload's template's; a key that is not a string, or empty, is refused. */
START_TEST(test_pod_group_topology_key)
{
    static const char *const cases[][3] = {
        /* spec fragment, key, error */
        {"\"schedulingConstraints\": {\"topology\": [{\"key\": \"topology.kubernetes.io/rack\"}]}",
         "topology.kubernetes.io/rack", NULL},
        {"\"schedulingConstraints\": {\"topology\": []}", NULL, NULL},
        {"\"schedulingConstraints\": {}", NULL, NULL},
        {"\"schedulingConstraints\": {\"topology\": [{\"key\": \"\"}]}", NULL,
         "schedulingConstraints.topology: key missing"},
        {"\"schedulingConstraints\": {\"topology\": [{\"key\": 7}]}", NULL,
         "schedulingConstraints.topology key: must be a string"},
    };
    struct ext_arena *a = ext_arena_new();

    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        char json[512], err[256] = "";
        struct kube_pod_group pg;
        cJSON *j;
        int rc;

        snprintf(json, sizeof(json),
                 "{\"metadata\": {\"name\": \"pg\", \"namespace\": \"ml\"}, \"spec\": "
                 "{\"schedulingPolicy\": {\"gang\": {\"minCount\": 2}}, %s}}",
                 cases[i][0]);
        j = cJSON_Parse(json);
        ck_assert_ptr_nonnull(j);
        rc = kube_pod_group_decode(j, NULL, a, &pg, err, sizeof(err), NULL);
        if (cases[i][2]) {
            ck_assert_int_eq(rc, EXT_EINVAL);
            ck_assert_msg(strstr(err, cases[i][2]) != NULL, "case %zu: %s", i, err);
        } else {
            ck_assert_int_eq(rc, EXT_OK);
            if (cases[i][1]) {
                ck_assert_str_eq(pg.topology_key, cases[i][1]);
                ck_assert_str_eq(pg.spec.topology.required, cases[i][1]); /* standalone: its own */
            } else {
                ck_assert_ptr_null(pg.topology_key);
                ck_assert_ptr_null(pg.spec.topology.required);
            }
        }
        cJSON_Delete(j);
    }
    ext_arena_free(a);
}
END_TEST

START_TEST(test_refs_workload_topology_key)
{
    struct ext_arena *a = ext_arena_new();
    struct kube_refs *r = kube_refs_new();
    struct policy_gang_spec wl, g;
    struct kube_pod_group pg;
    cJSON *w = cJSON_Parse(
        "{\"metadata\": {\"name\": \"infer\", \"namespace\": \"ml\"}, \"spec\": "
        "{\"podGroupTemplates\": [{\"name\": \"replicas\", \"schedulingPolicy\": {\"gang\": "
        "{\"minCount\": 4}}, \"schedulingConstraints\": {\"topology\": [{\"key\": \"zone\"}]}}]}}");
    cJSON *p = cJSON_Parse(
        "{\"metadata\": {\"name\": \"infer-0\", \"namespace\": \"ml\"}, \"spec\": "
        "{\"workloadRef\": {\"workloadName\": \"infer\", \"templateName\": \"replicas\"}, "
        "\"schedulingPolicy\": {\"gang\": {\"minCount\": 4}}, \"schedulingConstraints\": "
        "{\"topology\": [{\"key\": \"rack\"}]}}}");

    ck_assert_int_eq(kube_workload_gang(w, NULL, a, &wl, NULL, 0, NULL), EXT_OK);
    ck_assert_str_eq(wl.topology.required, "zone");
    ck_assert_int_eq(kube_refs_workload(r, "ml", "infer", &wl, "replicas"), EXT_OK);
    ck_assert(kube_refs_workload_gang(r, "ml/infer", a, &g));
    ck_assert_str_eq(g.topology.required, "zone");
    ck_assert_int_eq(kube_pod_group_decode(p, NULL, a, &pg, NULL, 0, NULL), EXT_OK);
    ck_assert_ptr_null(pg.spec.key); /* made from the Workload: it declares nothing itself */
    ck_assert_int_eq(kube_refs_pod_group(r, &pg), EXT_OK);
    ck_assert(kube_refs_workload_gang(r, "ml/infer", a, &g));
    ck_assert_str_eq(g.topology.required, "rack");
    kube_refs_free(r);
    ext_arena_free(a);
    cJSON_Delete(w);
    cJSON_Delete(p);
}
END_TEST

/* KAI's and Kueue's Topology: levels coarsest first with aliases; Kueue's kept as kueue/<name>;
 * what a Topology may not be is refused with the field. */
START_TEST(test_topology_decode)
{
    static const char *const bad[][2] = {
        {"{\"metadata\": {\"name\": \"t\"}, \"spec\": {\"levels\": []}}", "spec.levels empty"},
        {"{\"metadata\": {\"name\": \"t\"}, \"spec\": {\"levels\": [{\"alias\": \"x\"}]}}",
         "spec.levels[0]: nodeLabel missing"},
        {"{\"metadata\": {\"name\": \"t\"}, \"spec\": {\"levels\": [{\"nodeLabel\": \"a\"}, "
         "{\"nodeLabel\": \"a\"}]}}",
         "spec.levels: nodeLabel a twice"},
        {"{\"metadata\": {\"name\": \"t\"}, \"spec\": {\"levels\": [7]}}",
         "spec.levels: an item is not a mapping"},
    };
    struct ext_arena *a = ext_arena_new();
    struct policy_topology_spec t;
    char err[256];
    cJSON *j = load_fixture("topology_kai.json");

    ck_assert_int_eq(kube_topology_decode(j, a, &t, err, sizeof(err), NULL), EXT_OK);
    ck_assert_str_eq(t.name, "cluster-topology");
    ck_assert_int_eq(t.nlevels, 3);
    ck_assert_str_eq(t.levels[0].node_label, "cloud.provider.com/topology-block");
    ck_assert_str_eq(t.levels[0].alias, "block");
    ck_assert_str_eq(t.levels[2].node_label, "kubernetes.io/hostname");
    ck_assert_ptr_null(t.levels[2].alias);
    cJSON_Delete(j);
    j = load_fixture("topology_kueue.json");
    ck_assert_int_eq(kube_topology_decode(j, a, &t, err, sizeof(err), NULL), EXT_OK);
    ck_assert_str_eq(t.name, "kueue/default");
    ck_assert_int_eq(t.nlevels, 2);
    cJSON_Delete(j);
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        j = cJSON_Parse(bad[i][0]);
        ck_assert_int_eq(kube_topology_decode(j, a, &t, err, sizeof(err), NULL), EXT_EINVAL);
        ck_assert_msg(strstr(err, bad[i][1]) != NULL, "case %zu: %s", i, err);
        cJSON_Delete(j);
    }
    ext_arena_free(a);
}
END_TEST

/* A RayCluster in three dialects: KAI's annotations for the gang (Volcano's labels beside
 * them), a worker group's template KAI's (Kueue's beside), another's Kueue's alone. */
START_TEST(test_raycluster_topology)
{
    struct ext_arena *a = ext_arena_new();
    struct policy_gang_spec g;
    char err[256] = "";
    cJSON *j = load_fixture("raycluster_topology.json");

    ck_assert_msg(kube_raycluster_gang(j, NULL, a, &g, err, sizeof(err), NULL) == EXT_OK, "%s",
                  err);
    ck_assert_str_eq(g.topology.dialect, "KAI");
    ck_assert_str_eq(g.topology.topology, "cluster-topology");
    ck_assert_str_eq(g.topology.required, "block");
    ck_assert_ptr_null(g.topology.preferred);
    ck_assert_str_eq(g.topology_other.dialect, "Volcano");
    ck_assert_int_eq(g.topology_other.required_tier, 2);
    ck_assert_int_eq(g.topology_other.preferred_tier, 1);
    ck_assert_int_eq(g.nsubgroups, 3);
    ck_assert_ptr_null(g.subgroups[0].topology.required); /* the head: nothing */
    ck_assert_ptr_null(g.subgroups[0].topology.preferred);
    ck_assert_str_eq(g.subgroups[1].name, "gpu");
    ck_assert_int_eq(g.subgroups[1].min_members, 4);
    ck_assert_str_eq(g.subgroups[1].topology.preferred, "rack");
    ck_assert_str_eq(g.subgroups[1].topology.dialect, "KAI");
    ck_assert_str_eq(g.subgroups[1].topology_other.required, "cloud.provider.com/topology-rack");
    ck_assert_str_eq(g.subgroups[1].topology_other.dialect, "Kueue");
    ck_assert_str_eq(g.subgroups[2].topology.preferred, "cloud.provider.com/topology-block");
    ck_assert_str_eq(g.subgroups[2].topology.dialect, "Kueue");
    ck_assert_ptr_null(g.subgroups[2].topology_other.dialect);
    cJSON_Delete(j);
    ext_arena_free(a);
}
END_TEST

/* Volcano's labels as KubeRay reads them: what each means, and what muster cannot read
 * (the gang then waits, saying so: its composition still counts). */
static const struct volcano_case {
    const char *mode, *tier;
    int32_t required_tier, preferred_tier;
    const char *invalid;
} volcano_cases[] = {
    {"hard", "1", 1, 1, NULL},
    {"hard", "3", 3, 1, NULL},
    {"hard", NULL, 0, 1, NULL}, /* no tier: not hard in Volcano's scheduler */
    {"soft", "2", 0, 1, NULL},
    {NULL, "2", 0, 0, NULL}, /* no mode: KubeRay writes no networkTopology */
    {"hardd", "1", 0, 0, "label volcano.sh/network-topology-mode: \"hardd\" is not hard or soft"},
    {"hard", "two", 0, 0,
     "label volcano.sh/network-topology-highest-tier-allowed: \"two\" is not a tier (1, 2, ...)"},
    {"hard", "0", 0, 0,
     "label volcano.sh/network-topology-highest-tier-allowed: \"0\" is not a tier (1, 2, ...)"},
};

START_TEST(test_raycluster_volcano_labels)
{
    const struct volcano_case *c = &volcano_cases[_i];
    struct ext_arena *a = ext_arena_new();
    struct policy_gang_spec g;
    cJSON *j = cJSON_Parse("{\"metadata\": {\"name\": \"rc\", \"namespace\": \"ml\", "
                           "\"labels\": {}}, \"spec\": {}}");
    cJSON *labels = cJSON_GetObjectItem(cJSON_GetObjectItem(j, "metadata"), "labels");

    if (c->mode)
        cJSON_AddStringToObject(labels, "volcano.sh/network-topology-mode", c->mode);
    if (c->tier)
        cJSON_AddStringToObject(labels, "volcano.sh/network-topology-highest-tier-allowed",
                                c->tier);
    ck_assert_int_eq(kube_raycluster_gang(j, NULL, a, &g, NULL, 0, NULL), EXT_OK);
    ck_assert_int_eq(g.topology.required_tier, c->required_tier);
    ck_assert_int_eq(g.topology.preferred_tier, c->preferred_tier);
    if (c->invalid)
        ck_assert_str_eq(g.topology.invalid, c->invalid);
    else
        ck_assert_ptr_null(g.topology.invalid);
    ck_assert_int_eq(g.min_members, 1); /* the head: the composition stands */
    cJSON_Delete(j);
    ext_arena_free(a);
}
END_TEST

/* KAI's PodGroup: spec.topologyConstraint for the gang, each leaf's for its subgroup; Volcano's
 * PodGroup: spec.networkTopology. */
START_TEST(test_podgroup_topology)
{
    struct ext_arena *a = ext_arena_new();
    struct policy_gang_spec g;
    char err[256] = "";
    cJSON *j = load_fixture("pg_kai_topology.json");

    ck_assert_msg(kube_podgroup_gang(j, NULL, a, &g, err, sizeof(err), NULL) == EXT_OK, "%s", err);
    ck_assert_str_eq(g.topology.topology, "cluster-topology");
    ck_assert_str_eq(g.topology.required, "zone");
    ck_assert_int_eq(g.nsubgroups, 2);
    ck_assert_str_eq(g.subgroups[0].topology.required, "rack");
    ck_assert_str_eq(g.subgroups[0].topology.preferred, "kubernetes.io/hostname");
    ck_assert_ptr_null(g.subgroups[1].topology.required);
    cJSON_Delete(j);
    j = load_fixture("pg_volcano_topology.json");
    ck_assert_msg(kube_podgroup_gang(j, NULL, a, &g, err, sizeof(err), NULL) == EXT_OK, "%s", err);
    ck_assert_str_eq(g.topology.dialect, "Volcano");
    ck_assert_int_eq(g.topology.required_tier, 2);
    ck_assert_int_eq(g.topology.preferred_tier, 1);
    cJSON_Delete(j);
    ext_arena_free(a);
}
END_TEST

/* KubeRay's multi-host replica label names a worker's replica. */
START_TEST(test_pod_replica)
{
    struct ext_arena *a = ext_arena_new();
    struct policy_pod_spec s;
    cJSON *j = load_fixture("worker_pod.json");
    cJSON *labels = cJSON_GetObjectItem(cJSON_GetObjectItem(j, "metadata"), "labels");

    ck_assert_int_eq(kube_pod_decode(j, NULL, a, &s, NULL, 0, NULL), EXT_OK);
    ck_assert_ptr_null(s.replica);
    cJSON_AddStringToObject(labels, "ray.io/worker-group-replica-name", "gpu-0-abcde");
    ck_assert_int_eq(kube_pod_decode(j, NULL, a, &s, NULL, 0, NULL), EXT_OK);
    ck_assert_str_eq(s.replica, "gpu-0-abcde");
    cJSON_Delete(j);
    ext_arena_free(a);
}
END_TEST

START_TEST(test_refs_priority_classes)
{
    struct kube_refs *r = kube_refs_new();
    struct kube_lookup l = kube_refs_lookup(r);
    const struct kube_priority_class a = {"a", 7, false}, b = {"b", 9, true};
    int32_t v = -1;

    ck_assert(l.priority_class(l.ctx, "system-node-critical", &v));
    ck_assert_int_eq(v, 2000001000);
    ck_assert(!l.priority_class(l.ctx, NULL, &v)); /* no globalDefault yet */
    ck_assert_int_eq(kube_refs_priority_class(r, &a), EXT_OK);
    ck_assert_int_eq(kube_refs_priority_class(r, &b), EXT_OK);
    ck_assert(l.priority_class(l.ctx, NULL, &v));
    ck_assert_int_eq(v, 9);
    ck_assert(l.priority_class(l.ctx, "a", &v));
    ck_assert_int_eq(v, 7);
    ck_assert(kube_refs_forget(r, KUBE_REF_PRIORITY_CLASS, "b", NULL, 0));
    ck_assert(!l.priority_class(l.ctx, NULL, &v));
    ck_assert(!l.priority_class(l.ctx, "b", &v));
    kube_refs_free(r);
}
END_TEST

/* ---- nodes --------------------------------------------------------------- */

START_TEST(test_node_gpu_lab_worker)
{
    cJSON *j = load_fixture("gpu_lab_worker_node.json");
    struct ext_arena *a = ext_arena_new();
    struct policy_node_spec s;

    ck_assert_int_eq(kube_node_decode(j, a, &s, NULL, 0, NULL), EXT_OK);
    ck_assert_str_eq(s.name, "gpu-lab-worker");
    ck_assert_int_eq(s.cpu_milli, 15800);
    ck_assert_int_eq(s.memory_bytes, 65740800LL * 1024);
    ck_assert_int_eq(s.pods, 110);
    ck_assert_int_eq(s.gpus, 8);
    ck_assert_int_eq(s.gpu_memory_mib, 11441);
    ck_assert(!s.unschedulable);
    ck_assert_int_eq(s.nlabels, 7);
    ck_assert_str_eq(label_value(s.labels, s.nlabels, "nvidia.com/gpu.present"), "true");
    ck_assert_int_eq(s.ntaints, 2);
    ck_assert_str_eq(s.taints[0].value, "present");
    ck_assert_int_eq(s.taints[0].effect, POLICY_TAINT_NO_SCHEDULE);
    ck_assert_ptr_null(s.taints[1].value);
    ck_assert_int_eq(s.taints[1].effect, POLICY_TAINT_PREFER_NO_SCHEDULE);
    ext_arena_free(a);
    cJSON_Delete(j);
}
END_TEST

START_TEST(test_node_cordoned_numbers)
{
    cJSON *j = load_fixture("cordoned_node.json");
    struct ext_arena *a = ext_arena_new();
    struct policy_node_spec s;

    ck_assert_int_eq(kube_node_decode(j, a, &s, NULL, 0, NULL), EXT_OK);
    ck_assert(s.unschedulable);
    ck_assert_int_eq(s.cpu_milli, 4000);
    ck_assert_int_eq(s.memory_bytes, 8LL << 30);
    ck_assert_int_eq(s.gpus, 0);
    ck_assert_int_eq(s.gpu_memory_mib, 0);
    ext_arena_free(a);
    cJSON_Delete(j);
}
END_TEST

START_TEST(test_node_malformed)
{
    static const char *const cases[][2] = {
        {"{\"metadata\": {\"name\": \"n\"}, \"status\": {\"allocatable\": {\"cpu\": \"lots\"}}}",
         "status.allocatable.cpu"},
        {"{\"metadata\": {\"name\": \"n\"}, \"spec\": {\"taints\": [{\"key\": \"k\", \"effect\": "
         "\"Sometimes\"}]}}",
         "effect \"Sometimes\" unknown"},
        {"{\"metadata\": {\"name\": \"n\", \"labels\": {\"nvidia.com/gpu.memory\": \"big\"}}}",
         "nvidia.com/gpu.memory"},
        {"{\"metadata\": {\"name\": \"n\"}, \"status\": {\"allocatable\": {\"nvidia.com/gpu\": "
         "\"-1\"}}}",
         "negative"},
    };
    struct ext_arena *a = ext_arena_new();
    struct policy_node_spec s;
    char err[256];

    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        cJSON *j = cJSON_Parse(cases[i][0]);

        ck_assert_int_eq(kube_node_decode(j, a, &s, err, sizeof(err), NULL), EXT_EINVAL);
        ck_assert_msg(strstr(err, cases[i][1]) != NULL, "err = %s", err);
        cJSON_Delete(j);
    }
    ext_arena_free(a);
}
END_TEST

/* ---- queues -------------------------------------------------------------- */

START_TEST(test_queue_full)
{
    cJSON *j = load_fixture("queue_team_a.json");
    struct ext_arena *a = ext_arena_new();
    struct policy_queue_spec q;

    ck_assert_int_eq(kube_queue_decode(j, a, &q, NULL, 0, NULL), EXT_OK);
    ck_assert_str_eq(q.name, "team-a");
    ck_assert_str_eq(q.parent, "research");
    ck_assert_int_eq(q.priority, 50);
    ck_assert_int_eq(q.quota.v[POLICY_RES_CPU], 8000);
    ck_assert_int_eq(q.limit.v[POLICY_RES_CPU], -1);
    ck_assert_int_eq(q.over_quota_weight.v[POLICY_RES_CPU], 2000); /* weights in thousandths */
    ck_assert_int_eq(q.quota.v[POLICY_RES_MEMORY], 32LL << 30);
    ck_assert_int_eq(q.limit.v[POLICY_RES_MEMORY], 64LL << 30);
    ck_assert_int_eq(q.over_quota_weight.v[POLICY_RES_MEMORY], 1000);
    ck_assert_int_eq(q.quota.v[POLICY_RES_GPU], 2000);
    ck_assert_int_eq(q.limit.v[POLICY_RES_GPU], 3000);
    ck_assert_int_eq(q.over_quota_weight.v[POLICY_RES_GPU], 1500); /* 1.5 kept exactly */
    ext_arena_free(a);
    cJSON_Delete(j);
}
END_TEST

START_TEST(test_queue_defaults)
{
    cJSON *j = load_fixture("queue_defaults.json");
    struct ext_arena *a = ext_arena_new();
    struct policy_queue_spec q;

    ck_assert_int_eq(kube_queue_decode(j, a, &q, NULL, 0, NULL), EXT_OK);
    ck_assert_ptr_null(q.parent);
    ck_assert_int_eq(q.priority, 0);
    ck_assert_int_eq(q.quota.v[POLICY_RES_GPU], 500);
    for (int r = 0; r < POLICY_RES_COUNT; r++) {
        ck_assert_int_eq(q.limit.v[r], -1);
        ck_assert_int_eq(q.over_quota_weight.v[r], 1000); /* weight 1, in thousandths */
    }
    ck_assert_int_eq(q.quota.v[POLICY_RES_CPU], 0);
    cJSON_Delete(j);

    j = load_fixture("queue_bad_limit.json");
    char err[256];
    ck_assert_int_eq(kube_queue_decode(j, a, &q, err, sizeof(err), NULL), EXT_EINVAL);
    ck_assert_str_eq(err,
                     "Queue bad: spec.resources.gpu.limit: must be -1 (unlimited) or at least 0");
    ext_arena_free(a);
    cJSON_Delete(j);
}
END_TEST

START_TEST(test_queue_kai_units)
{
    cJSON *j = load_fixture("queue_kai.json");
    struct ext_arena *a = ext_arena_new();
    struct policy_queue_spec q;
    char err[256] = "";

    ck_assert_msg(kube_queue_decode(j, a, &q, err, sizeof(err), NULL) == EXT_OK, "%s", err);
    ck_assert_str_eq(q.name, "team-kai");
    ck_assert_str_eq(q.parent, "research");
    ck_assert_int_eq(q.priority, 100); /* KAI's DefaultQueuePriority */
    /* cpu in millicores: 8000 is 8 cores */
    ck_assert_int_eq(q.quota.v[POLICY_RES_CPU], 8000);
    ck_assert_int_eq(q.limit.v[POLICY_RES_CPU], 16000);
    ck_assert_int_eq(q.over_quota_weight.v[POLICY_RES_CPU], 2000); /* weights in thousandths */
    /* memory in MB: 16000 is 16e9 bytes */
    ck_assert_int_eq(q.quota.v[POLICY_RES_MEMORY], 16000000000LL);
    ck_assert_int_eq(q.limit.v[POLICY_RES_MEMORY], -1);
    /* GPUs in devices, fractions allowed */
    ck_assert_int_eq(q.quota.v[POLICY_RES_GPU], 2500);
    ck_assert_int_eq(q.limit.v[POLICY_RES_GPU], -1);
    ck_assert_int_eq(q.over_quota_weight.v[POLICY_RES_GPU], 500); /* 0.5 kept exactly */
    ck_assert_int_eq(q.reclaim_min_runtime_ms, 600000);
    ck_assert_int_eq(q.preempt_min_runtime_ms, 90000);
    ext_arena_free(a);
    cJSON_Delete(j);
}
END_TEST

/* What an absent field is: Go's zero for KAI's apiVersion, muster's defaults for its own. */
START_TEST(test_queue_defaults_per_api)
{
    cJSON *j = load_fixture("queue_kai_defaults.json");
    struct ext_arena *a = ext_arena_new();
    struct policy_queue_spec q;

    ck_assert_int_eq(kube_queue_decode(j, a, &q, NULL, 0, NULL), EXT_OK);
    ck_assert_int_eq(q.priority, 100);
    ck_assert_int_eq(q.quota.v[POLICY_RES_GPU], 4000);
    for (int r = 0; r < POLICY_RES_COUNT; r++) {
        ck_assert_int_eq(q.limit.v[r], 0);
        ck_assert_int_eq(q.over_quota_weight.v[r], 0);
    }
    ck_assert_int_eq(q.quota.v[POLICY_RES_CPU], 0);
    ck_assert_int_eq(q.reclaim_min_runtime_ms, 0);
    ck_assert_int_eq(q.preempt_min_runtime_ms, 0);
    cJSON_Delete(j);

    /* the same object as muster's own apiVersion */
    j = load_fixture("queue_kai_defaults.json");
    cJSON_ReplaceItemInObject(j, "apiVersion", cJSON_CreateString("muster.dev/v1alpha1"));
    ck_assert_int_eq(kube_queue_decode(j, a, &q, NULL, 0, NULL), EXT_OK);
    ck_assert_int_eq(q.priority, 0);
    ck_assert_int_eq(q.quota.v[POLICY_RES_GPU], 4000); /* "4" devices as a quantity */
    for (int r = 0; r < POLICY_RES_COUNT; r++) {
        ck_assert_int_eq(q.limit.v[r], -1);
        ck_assert_int_eq(q.over_quota_weight.v[r], 1000); /* weight 1, in thousandths */
    }
    ext_arena_free(a);
    cJSON_Delete(j);
}
END_TEST

/* A Queue's fields, one at a time, and what they come to (or the complaint). */
struct queue_field_case {
    const char *api;
    const char *spec; /* JSON of spec */
    const char *want; /* the error, or NULL */
    int64_t cpu_quota, mem_limit, gpu_weight, reclaim_ms;
};

static const struct queue_field_case queue_field_cases[] = {
    {"scheduling.run.ai/v2", "{\"resources\": {\"cpu\": {\"quota\": 1500.5}}}", NULL, 1501, 0, 0,
     0},
    {"scheduling.run.ai/v2", "{\"resources\": {\"cpu\": {\"quota\": \"250\"}}}", NULL, 250, 0, 0,
     0},
    {"scheduling.run.ai/v2", "{\"resources\": {\"memory\": {\"limit\": 0.5}}}", NULL, 0, 500000, 0,
     0},
    {"scheduling.run.ai/v2", "{\"resources\": {\"gpu\": {\"overQuotaWeight\": 1e12}}}", NULL, 0, 0,
     POLICY_MAX_WEIGHT, 0},
    {"muster.dev/v1alpha1", "{\"resources\": {\"gpu\": {\"overQuotaWeight\": 5000000}}}", NULL, 0,
     -1, POLICY_MAX_WEIGHT, 0},
    {"muster.dev/v1alpha1", "{\"reclaimMinRuntime\": \"1h30m\"}", NULL, 0, -1, 1000, 5400000},
    /* KAI's fractional weights keep their ratio: 0.5 is half of 1. */
    {"scheduling.run.ai/v2", "{\"resources\": {\"gpu\": {\"overQuotaWeight\": 0.5}}}", NULL, 0, 0,
     500, 0},
    {"scheduling.run.ai/v2", "{\"reclaimMinRuntime\": \"2s\"}", NULL, 0, 0, 0, 2000},
    {"scheduling.run.ai/v2", "{\"resources\": {\"memory\": {\"quota\": \"16Gi\"}}}",
     "Queue q: spec.resources.memory.quota: must be a number (MB)", 0, 0, 0, 0},
    {"scheduling.run.ai/v2", "{\"resources\": {\"cpu\": {\"limit\": \"2\"}}}", NULL, 0, 0, 0, 0},
    {"scheduling.run.ai/v2", "{\"resources\": {\"gpu\": {\"limit\": -2}}}",
     "Queue q: spec.resources.gpu.limit: must be -1 (unlimited) or at least 0", 0, 0, 0, 0},
    {"scheduling.run.ai/v2", "{\"resources\": {\"gpu\": {\"overQuotaWeight\": -1}}}",
     "Queue q: spec.resources.gpu.overQuotaWeight: negative", 0, 0, 0, 0},
    {"muster.dev/v1alpha1", "{\"resources\": {\"cpu\": {\"quota\": \"2x\"}}}",
     "Queue q: spec.resources.cpu.quota: \"2x\" is not a quantity", 0, 0, 0, 0},
    {"scheduling.run.ai/v2", "{\"preemptMinRuntime\": \"ten minutes\"}",
     "Queue q: spec.preemptMinRuntime: \"ten minutes\" is not a duration", 0, 0, 0, 0},
    {"scheduling.run.ai/v2", "{\"reclaimMinRuntime\": 600}",
     "Queue q: spec.reclaimMinRuntime: must be a duration", 0, 0, 0, 0},
    {"scheduling.run.ai/v2", "{\"reclaimMinRuntime\": \"-5m\"}",
     "Queue q: spec.reclaimMinRuntime: \"-5m\" is not a duration", 0, 0, 0, 0},
    {"scheduling.run.ai/v2", "{\"priority\": \"high\"}",
     "Queue q: spec.priority: must be an integer", 0, 0, 0, 0},
    {"scheduling.run.ai/v1", "{}", "Queue q: apiVersion scheduling.run.ai/v1: want", 0, 0, 0, 0},
};

START_TEST(test_queue_fields)
{
    const struct queue_field_case *c = &queue_field_cases[_i];
    struct ext_arena *a = ext_arena_new();
    struct policy_queue_spec q = {.name = "untouched"};
    const cJSON *where = NULL;
    char json[1024], err[256] = "";
    cJSON *j;
    int rc;

    snprintf(json, sizeof(json),
             "{\"apiVersion\": \"%s\", \"kind\": \"Queue\", \"metadata\": {\"name\": \"q\"}, "
             "\"spec\": %s}",
             c->api, c->spec);
    j = cJSON_Parse(json);
    ck_assert_msg(j != NULL, "bad case JSON %s", json);
    rc = kube_queue_decode(j, a, &q, err, sizeof(err), &where);
    if (c->want != NULL) {
        ck_assert_int_eq(rc, EXT_EINVAL);
        ck_assert_msg(strstr(err, c->want) == err, "case %d: err = %s, want %s", _i, err, c->want);
        ck_assert_ptr_nonnull(where);
        ck_assert_str_eq(q.name, "untouched");
    } else {
        ck_assert_msg(rc == EXT_OK, "case %d: %s", _i, err);
        ck_assert_int_eq(q.quota.v[POLICY_RES_CPU], c->cpu_quota);
        ck_assert_int_eq(q.limit.v[POLICY_RES_MEMORY], c->mem_limit);
        ck_assert_int_eq(q.over_quota_weight.v[POLICY_RES_GPU], c->gpu_weight);
        ck_assert_int_eq(q.reclaim_min_runtime_ms, c->reclaim_ms);
    }
    ext_arena_free(a);
    cJSON_Delete(j);
}
END_TEST

/* ---- gangs --------------------------------------------------------------- */

struct gang_case {
    const char *file;
    bool podgroup;
    const char *key;
    int32_t min;
    const char *queue;
};

static const struct gang_case gang_cases[] = {
    {"rc_demo.json", false, "kuberay-lab/demo", 3, "team-a"},
    {"rc_suspend.json", false, "default/half", 3, NULL},
    {"rc_autoscale.json", false, "ml/auto", 10, NULL},
    {"rc_hosts.json", false, "default/multi", 14, NULL},
    {"pg_owned.json", true, "kuberay-lab/demo", 3, "team-a"},
    {"pg_plain.json", true, "lab/trainers", 4, "research"},
};

START_TEST(test_gangs)
{
    const struct gang_case *c = &gang_cases[_i];
    cJSON *j = load_fixture(c->file);
    struct ext_arena *a = ext_arena_new();
    struct policy_gang_spec g;
    char err[256] = "";
    int rc;

    if (c->podgroup)
        rc = kube_podgroup_gang(j, NULL, a, &g, err, sizeof(err), NULL);
    else
        rc = kube_raycluster_gang(j, NULL, a, &g, err, sizeof(err), NULL);
    ck_assert_msg(rc == EXT_OK, "%s: %s", c->file, err);
    ck_assert_str_eq(g.key, c->key);
    ck_assert_int_eq(g.min_members, c->min);
    if (c->queue == NULL)
        ck_assert_ptr_null(g.queue);
    else
        ck_assert_str_eq(g.queue, c->queue);
    ext_arena_free(a);
    cJSON_Delete(j);
}
END_TEST

struct replicas_case {
    const char *json;
    bool autoscaling;
    int32_t desired, gang_min;
};

static const struct replicas_case replicas_cases[] = {
    {"{\"replicas\": 2}", false, 2, 2},
    {"{}", false, 0, 0},
    {"{\"minReplicas\": 2}", false, 2, 2},
    {"{\"replicas\": 9, \"maxReplicas\": 4}", false, 4, 4},
    {"{\"replicas\": 1, \"minReplicas\": 6, \"maxReplicas\": 3}", false, 3, 3},
    {"{\"replicas\": 2, \"numOfHosts\": 4}", false, 8, 8},
    {"{\"replicas\": 3, \"minReplicas\": 1, \"suspend\": true}", true, 0, 0},
    {"{\"replicas\": 3, \"minReplicas\": 1, \"maxReplicas\": 5}", true, 3, 1},
    {"{\"replicas\": 3, \"minReplicas\": 1, \"numOfHosts\": 2}", true, 6, 2},
};

START_TEST(test_worker_group_replicas)
{
    const struct replicas_case *c = &replicas_cases[_i];
    cJSON *j = cJSON_Parse(c->json);
    int32_t desired = -1, gmin = -1;

    ck_assert_int_eq(kube_worker_group_replicas(j, c->autoscaling, &desired, &gmin, NULL, 0, NULL),
                     EXT_OK);
    ck_assert_int_eq(desired, c->desired);
    ck_assert_int_eq(gmin, c->gang_min);
    cJSON_Delete(j);
}
END_TEST

/* ---- compositions -------------------------------------------------------- */

/* "head:1,cpu:2,gpu:3" */
static void subgroups_string(const struct policy_gang_spec *g, char *buf, size_t len)
{
    size_t at = 0;

    buf[0] = '\0';
    for (size_t i = 0; i < g->nsubgroups && at < len; i++)
        at += (size_t)snprintf(buf + at, len - at, "%s%s:%d", i ? "," : "", g->subgroups[i].name,
                               g->subgroups[i].min_members);
}

enum gang_kind { GANG_RC, GANG_PG, GANG_WL };

struct composition_case {
    const char *file;
    enum gang_kind kind;
    const char *key;
    int32_t min;
    const char *subgroups; /* NULL: a count only */
    const char *queue;
    int32_t priority; /* -1: none */
    enum policy_preemptible preemptible;
    enum policy_gang_source source;
};

static const struct composition_case composition_cases[] = {
    /* issue 10's autoscaling RayCluster: minReplicas count, not replicas */
    {"rc_issue10.json", GANG_RC, "lab/rc", 6, "head:1,cpu:2,gpu:3", "team-a", 50,
     POLICY_PREEMPTIBLE_NO, POLICY_GANG_WORKLOAD},
    /* numOfHosts 2 doubles a group; a suspended group counts 0 */
    {"rc_hosts_suspended.json", GANG_RC, "lab/tpu", 7, "head:1,slice:6,spare:0", NULL, -1,
     POLICY_PREEMPTIBLE_BY_PRIORITY, POLICY_GANG_WORKLOAD},
    {"rc_demo.json", GANG_RC, "kuberay-lab/demo", 3, "head:1,workers:2", "team-a", -1,
     POLICY_PREEMPTIBLE_BY_PRIORITY, POLICY_GANG_WORKLOAD},
    {"rc_autoscale.json", GANG_RC, "ml/auto", 10, "head:1,gpu:1,tpu:8", NULL, -1,
     POLICY_PREEMPTIBLE_BY_PRIORITY, POLICY_GANG_WORKLOAD},
    /* KAI's v2alpha2: with subGroups the leaves' minimums are the gang's */
    {"pg_kai_subgroups.json", GANG_PG, "test/pending-job0", 3, "sub0:1,sub1:2", "queue0", 100,
     POLICY_PREEMPTIBLE_YES, POLICY_GANG_PODGROUP},
    /* ... leaves only, and KAI's Ray grouper's headgroup is the RayCluster's head */
    {"pg_kai_ray.json", GANG_PG, "lab/rc", 6, "head:1,cpu:2,gpu:3", "team-a", -1,
     POLICY_PREEMPTIBLE_BY_PRIORITY, POLICY_GANG_PODGROUP},
    /* Volcano's minTaskMember; minMember 3 is more than the tasks' 2 */
    {"pg_volcano_tasks.json", GANG_PG, "c1/pg1", 3, "master:1,worker:1", "c1", 100000,
     POLICY_PREEMPTIBLE_YES, POLICY_GANG_PODGROUP},
    /* minMember 0: Volcano's "no gang", the tasks say nothing then */
    {"pg_volcano_nogang.json", GANG_PG, "c1/elastic", 0, NULL, "c1", -1,
     POLICY_PREEMPTIBLE_BY_PRIORITY, POLICY_GANG_PODGROUP},
    /* ... and KAI's: minMember 0 without subGroups is no gang either */
    {"pg_kai_nogang.json", GANG_PG, "test/job", 0, NULL, "queue0", -1,
     POLICY_PREEMPTIBLE_BY_PRIORITY, POLICY_GANG_PODGROUP},
    /* scheduler-plugins: a total only */
    {"pg_plain.json", GANG_PG, "lab/trainers", 4, NULL, "research", -1,
     POLICY_PREEMPTIBLE_BY_PRIORITY, POLICY_GANG_PODGROUP},
    {"pg_owned.json", GANG_PG, "kuberay-lab/demo", 3, NULL, "team-a", -1,
     POLICY_PREEMPTIBLE_BY_PRIORITY, POLICY_GANG_PODGROUP},
    /* the Workload API: KubeRay 1.7's one template "cluster" is a count, keyed by the cluster */
    {"wl_v1alpha2_kuberay.json", GANG_WL, "lab/rc", 6, NULL, NULL, -1,
     POLICY_PREEMPTIBLE_BY_PRIORITY, POLICY_GANG_WORKLOAD_API},
    /* several templates are subgroups; basic is 0; the highest template priority is the gang's */
    {"wl_v1alpha2_multi.json", GANG_WL, "ml/training", 5, "driver:1,workers:4,sidecars:0",
     "research", 100, POLICY_PREEMPTIBLE_BY_PRIORITY, POLICY_GANG_WORKLOAD_API},
    /* only basic templates: no gang, as one template (a count of 0) or several (each 0) */
    {"wl_v1alpha2_basic_one.json", GANG_WL, "lab/solo", 0, NULL, NULL, -1,
     POLICY_PREEMPTIBLE_BY_PRIORITY, POLICY_GANG_WORKLOAD_API},
    {"wl_v1alpha2_basic.json", GANG_WL, "lab/pair", 0, "driver:0,workers:0", NULL, -1,
     POLICY_PREEMPTIBLE_BY_PRIORITY, POLICY_GANG_WORKLOAD_API},
    /* v1beta1: a composite template's pod group templates are flattened */
    {"wl_v1beta1_composite.json", GANG_WL, "ml/jobset", 5, "leader:1,slice-a:2,slice-b:2", NULL, -1,
     POLICY_PREEMPTIBLE_BY_PRIORITY, POLICY_GANG_WORKLOAD_API},
};

START_TEST(test_compositions)
{
    const struct composition_case *c = &composition_cases[_i];
    cJSON *j = load_fixture(c->file);
    struct ext_arena *a = ext_arena_new();
    struct known_classes k;
    struct policy_gang_spec g;
    char err[256] = "", subs[256];
    int rc;

    known_classes_init(&k);
    rc = c->kind == GANG_RC   ? kube_raycluster_gang(j, &k.opts, a, &g, err, sizeof(err), NULL)
         : c->kind == GANG_PG ? kube_podgroup_gang(j, &k.opts, a, &g, err, sizeof(err), NULL)
                              : kube_workload_gang(j, &k.opts, a, &g, err, sizeof(err), NULL);
    ck_assert_msg(rc == EXT_OK, "%s: %s", c->file, err);
    ck_assert_str_eq(g.key, c->key);
    ck_assert_int_eq(g.min_members, c->min);
    subgroups_string(&g, subs, sizeof(subs));
    if (c->subgroups == NULL) {
        ck_assert_msg(g.nsubgroups == 0 && g.subgroups == NULL, "%s: subgroups %s", c->file, subs);
    } else {
        ck_assert_msg(strcmp(subs, c->subgroups) == 0, "%s: subgroups %s, want %s", c->file, subs,
                      c->subgroups);
    }
    if (c->queue == NULL)
        ck_assert_ptr_null(g.queue);
    else
        ck_assert_str_eq(g.queue, c->queue);
    ck_assert_int_eq(g.has_priority, c->priority >= 0);
    if (c->priority >= 0)
        ck_assert_int_eq(g.priority, c->priority);
    ck_assert_int_eq(g.preemptible, c->preemptible);
    ck_assert_int_eq(g.source, c->source);
    kube_refs_free(k.refs);
    ext_arena_free(a);
    cJSON_Delete(j);
}
END_TEST

/* Objects a gang decoder refuses, each with the field it names. */
struct gang_reject_case {
    enum gang_kind kind;
    const char *json;
    const char *want;
};

static const struct gang_reject_case gang_reject_cases[] = {
    {GANG_RC,
     "{\"metadata\": {\"name\": \"r\"}, \"spec\": {\"workerGroupSpecs\": [{\"replicas\": 1}]}}",
     "spec.workerGroupSpecs[0].groupName missing"},
    {GANG_RC,
     "{\"metadata\": {\"name\": \"r\"}, \"spec\": {\"workerGroupSpecs\": [{\"groupName\": "
     "\"w\"}, {\"groupName\": \"w\"}]}}",
     "spec.workerGroupSpecs: w named twice"},
    {GANG_RC,
     "{\"metadata\": {\"name\": \"r\"}, \"spec\": {\"workerGroupSpecs\": [{\"groupName\": "
     "\"head\"}]}}",
     "spec.workerGroupSpecs[0].groupName: \"head\" is the head's subgroup"},
    {GANG_RC,
     "{\"metadata\": {\"name\": \"r\", \"labels\": {\"kai.scheduler/preemptibility\": "
     "\"maybe\"}}}",
     "label kai.scheduler/preemptibility: \"maybe\" is not preemptible or non-preemptible"},
    {GANG_PG, "{\"metadata\": {\"name\": \"p\"}, \"spec\": {\"preemptibility\": \"sometimes\"}}",
     "spec.preemptibility: \"sometimes\""},
    {GANG_PG, "{\"metadata\": {\"name\": \"p\"}, \"spec\": {\"minTaskMember\": {\"a\": -1}}}",
     "spec.minTaskMember.a: must be a whole number >= 0"},
    {GANG_PG, "{\"metadata\": {\"name\": \"p\"}, \"spec\": {\"minTaskMember\": [1]}}",
     "spec.minTaskMember: must be a mapping"},
    {GANG_PG,
     "{\"metadata\": {\"name\": \"p\"}, \"spec\": {\"subGroups\": [{\"name\": \"a\"}, "
     "{\"name\": \"a\"}]}}",
     "spec.subGroups: a named twice"},
    {GANG_PG, "{\"metadata\": {\"name\": \"p\"}, \"spec\": {\"subGroups\": [{\"minMember\": 1}]}}",
     "spec.subGroups: a subgroup needs a name"},
    {GANG_PG,
     "{\"metadata\": {\"name\": \"p\"}, \"spec\": {\"subGroups\": [{\"name\": \"a\"}], "
     "\"minTaskMember\": {\"a\": 1}}}",
     "spec: both minTaskMember and subGroups"},
    /* KAI's subgroup graph, as its webhook refuses it (KAI-Scheduler
     * pkg/apis/scheduling/v2alpha2/podgroup_webhook_test.go, TestValidateSubGroups): they were
     * accepted silently, a loop's members dropped as parents (issue 21). "Self-parent subgroup
     * (cycle of length 1)": */
    {GANG_PG,
     "{\"metadata\": {\"name\": \"p\"}, \"spec\": {\"subGroups\": [{\"name\": \"x\", "
     "\"minMember\": 1}, {\"name\": \"a\", \"parent\": \"a\", \"minMember\": 1}]}}",
     "spec.subGroups[1].parent: \"a\" forms a cycle (a -> a)"},
    /* "Cycle in graph (a -> b -> c -> a)" */
    {GANG_PG,
     "{\"metadata\": {\"name\": \"p\"}, \"spec\": {\"subGroups\": [{\"name\": \"a\", "
     "\"parent\": \"c\", \"minMember\": 1}, {\"name\": \"b\", \"parent\": \"a\", "
     "\"minMember\": 1}, {\"name\": \"c\", \"parent\": \"b\", \"minMember\": 1}]}}",
     "spec.subGroups[0].parent: \"c\" forms a cycle (a -> c -> b -> a)"},
    /* "Multiple disjoint cycles": the first is named; a leaf under a loop does not hide it */
    {GANG_PG,
     "{\"metadata\": {\"name\": \"p\"}, \"spec\": {\"subGroups\": [{\"name\": \"leaf\", "
     "\"parent\": \"c\", \"minMember\": 1}, {\"name\": \"a\", \"parent\": \"b\"}, "
     "{\"name\": \"b\", \"parent\": \"a\"}, {\"name\": \"c\", \"parent\": \"d\"}, "
     "{\"name\": \"d\", \"parent\": \"c\"}]}}",
     "spec.subGroups[1].parent: \"b\" forms a cycle (a -> b -> a)"},
    /* "Missing parent" */
    {GANG_PG,
     "{\"metadata\": {\"name\": \"p\"}, \"spec\": {\"subGroups\": [{\"name\": \"a\", "
     "\"minMember\": 1}, {\"name\": \"b\", \"parent\": \"x\", \"minMember\": 1}]}}",
     "spec.subGroups[1].parent: \"x\" names no subgroup of spec.subGroups"},
    {GANG_PG,
     "{\"metadata\": {\"name\": \"p\"}, \"spec\": {\"subGroups\": [{\"name\": \"a\", "
     "\"parent\": 7}]}}",
     "spec.subGroups parent: must be a string"},
    {GANG_WL, "{\"metadata\": {\"name\": \"w\"}}", "Workload: spec missing"},
    {GANG_WL, "{\"metadata\": {\"name\": \"w\"}, \"spec\": {\"podGroupTemplates\": []}}",
     "Workload: spec.podGroupTemplates: none"},
    {GANG_WL,
     "{\"metadata\": {\"name\": \"w\"}, \"spec\": {\"podGroupTemplates\": [{\"name\": \"a\", "
     "\"schedulingPolicy\": {\"basic\": {}, \"gang\": {\"minCount\": 2}}}]}}",
     "spec.podGroupTemplates.schedulingPolicy: needs exactly one of basic and gang"},
    {GANG_WL,
     "{\"metadata\": {\"name\": \"w\"}, \"spec\": {\"podGroupTemplates\": [{\"name\": \"a\", "
     "\"schedulingPolicy\": {\"gang\": {\"minCount\": 0}}}]}}",
     "schedulingPolicy.gang.minCount: 0 outside [1, 2147483647]"},
    {GANG_WL,
     "{\"metadata\": {\"name\": \"w\"}, \"spec\": {\"podGroupTemplates\": [{"
     "\"schedulingPolicy\": {\"gang\": {\"minCount\": 1}}}]}}",
     "spec.podGroupTemplates: a subgroup needs a name"},
};

START_TEST(test_gang_rejects)
{
    const struct gang_reject_case *c = &gang_reject_cases[_i];
    struct ext_arena *a = ext_arena_new();
    struct policy_gang_spec g = {.key = "untouched"};
    const cJSON *where = NULL;
    char err[256] = "";
    cJSON *j = cJSON_Parse(c->json);
    int rc;

    ck_assert_msg(j != NULL, "bad case JSON %s", c->json);
    rc = c->kind == GANG_RC   ? kube_raycluster_gang(j, NULL, a, &g, err, sizeof(err), &where)
         : c->kind == GANG_PG ? kube_podgroup_gang(j, NULL, a, &g, err, sizeof(err), &where)
                              : kube_workload_gang(j, NULL, a, &g, err, sizeof(err), &where);
    ck_assert_int_eq(rc, EXT_EINVAL);
    ck_assert_msg(strstr(err, c->want) != NULL, "case %d: err = %s, want %s", _i, err, c->want);
    ck_assert_ptr_nonnull(where);
    ck_assert_str_eq(g.key, "untouched");
    ext_arena_free(a);
    cJSON_Delete(j);
}
END_TEST

/* A Workload-API PodGroup: a member of its Workload's gang, or a gang of its own. */
START_TEST(test_pod_group_decode)
{
    struct ext_arena *a = ext_arena_new();
    struct known_classes k;
    struct kube_pod_group g;
    char err[256] = "";
    cJSON *j;

    known_classes_init(&k);
    j = load_fixture("wapg_v1alpha2.json"); /* spec.podGroupTemplateRef.workload */
    ck_assert_msg(kube_pod_group_decode(j, &k.opts, a, &g, err, sizeof(err), NULL) == EXT_OK, "%s",
                  err);
    ck_assert_str_eq(g.namespace_, "ml");
    ck_assert_str_eq(g.name, "training-workers-0");
    ck_assert_str_eq(g.workload, "training");
    ck_assert_str_eq(g.template_, "workers");
    ck_assert_str_eq(g.gang, "ml/training");
    ck_assert_ptr_null(g.spec.key); /* the Workload declares the gang */
    cJSON_Delete(j);

    j = load_fixture("wapg_v1beta1.json"); /* spec.workloadRef */
    ck_assert_int_eq(kube_pod_group_decode(j, &k.opts, a, &g, NULL, 0, NULL), EXT_OK);
    ck_assert_str_eq(g.workload, "jobset");
    ck_assert_str_eq(g.template_, "slice-a");
    ck_assert_str_eq(g.gang, "ml/jobset");
    ck_assert_ptr_null(g.spec.key);
    cJSON_Delete(j);

    j = load_fixture("wapg_standalone.json");
    ck_assert_int_eq(kube_pod_group_decode(j, &k.opts, a, &g, NULL, 0, NULL), EXT_OK);
    ck_assert_ptr_null(g.workload);
    ck_assert_str_eq(g.gang, "ml/solo");
    ck_assert_str_eq(g.spec.key, "ml/solo");
    ck_assert_int_eq(g.spec.min_members, 3);
    ck_assert_int_eq(g.spec.nsubgroups, 0);
    ck_assert_str_eq(g.spec.queue, "batch");
    ck_assert(g.spec.has_priority);
    ck_assert_int_eq(g.spec.priority, 125);
    ck_assert_int_eq(g.spec.source, POLICY_GANG_WORKLOAD_API);
    cJSON_Delete(j);

    j = cJSON_Parse("{\"metadata\": {\"name\": \"x\"}, \"spec\": {\"workloadRef\": "
                    "{\"workloadName\": \"w\"}, \"schedulingPolicy\": {\"basic\": {}}}}");
    ck_assert_int_eq(kube_pod_group_decode(j, NULL, a, &g, err, sizeof(err), NULL), EXT_EINVAL);
    ck_assert_str_eq(err, "spec.workloadRef: needs the workload's name and its template's");
    kube_refs_free(k.refs);
    ext_arena_free(a);
    cJSON_Delete(j);
}
END_TEST

START_TEST(test_priority_class)
{
    cJSON *j = load_fixture("pc_default.json");
    struct kube_priority_class pc;
    char err[256] = "";

    ck_assert_int_eq(kube_priority_class_decode(j, &pc, err, sizeof(err), NULL), EXT_OK);
    ck_assert_str_eq(pc.name, "train");
    ck_assert_int_eq(pc.value, 50);
    ck_assert(pc.global_default);
    cJSON_Delete(j);
    j = cJSON_Parse("{\"metadata\": {\"name\": \"x\"}}");
    ck_assert_int_eq(kube_priority_class_decode(j, &pc, err, sizeof(err), NULL), EXT_EINVAL);
    ck_assert_str_eq(err, "PriorityClass x: value missing");
    cJSON_Delete(j);
    j = cJSON_Parse("{\"metadata\": {\"name\": \"x\"}, \"value\": 3000000000}");
    ck_assert_int_eq(kube_priority_class_decode(j, &pc, err, sizeof(err), NULL), EXT_EINVAL);
    ck_assert_msg(strstr(err, "value: 3000000000 outside") != NULL, "%s", err);
    cJSON_Delete(j);
}
END_TEST

START_TEST(test_gang_malformed)
{
    cJSON *j = load_fixture("rc_bad_replicas.json");
    struct ext_arena *a = ext_arena_new();
    struct policy_gang_spec g;
    const cJSON *where = NULL;
    char err[256];

    ck_assert_int_eq(kube_raycluster_gang(j, NULL, a, &g, err, sizeof(err), &where), EXT_EINVAL);
    ck_assert_str_eq(err, "replicas: must be an integer");
    ck_assert(cJSON_IsString(where));
    ext_arena_free(a);
    cJSON_Delete(j);
}
END_TEST

/* ---- protobuf: the same objects as JSON ------------------------------------------------------ */
/*
 * fixtures/proto: Pods and Nodes read back from a real API server (capture.sh, Kubernetes
 * v1.37.2) in both forms. Decoded from protobuf (proto.c's JSON of the fields muster reads) and
 * from the API server's own JSON, each must give the engine the same spec, field by field.
 */

static cJSON *proto_list(const char *name)
{
    size_t len;
    char *buf = fixture_read("proto", name, &len), err[256] = "";
    cJSON *j = kube__proto_body(buf, len, err, sizeof(err));

    free(buf);
    ck_assert_msg(j != NULL, "proto/%s: %s", name, err);
    return j;
}

static cJSON *json_list(const char *name)
{
    char *buf = fixture_read("proto", name, NULL);
    cJSON *j = cJSON_Parse(buf);

    free(buf);
    ck_assert_msg(j != NULL, "proto/%s is not JSON", name);
    return j;
}

#define OUT(...) (off += (size_t)snprintf(buf + off, off < len ? len - off : 0, __VA_ARGS__))
#define S(x) ((x) ? (x) : "(null)")

static void labels_text(char *buf, size_t len, size_t *o, const char *what,
                        const struct policy_label *l, size_t n)
{
    size_t off = *o;

    OUT(" %s{", what);
    for (size_t i = 0; i < n; i++)
        OUT("%s=%s;", S(l[i].key), S(l[i].value));
    OUT("}");
    *o = off;
}

/* Every field of a decoded Pod, as text: two specs are the same when their texts are. */
static void pod_text(const struct policy_pod_spec *s, char *buf, size_t len)
{
    size_t off = 0;

    OUT("%s/%s uid=%s prio=%d cpu=%lld mem=%lld gpus=%lld share=%d gpumem=%lld devs=%d inv=%s",
        S(s->namespace_), S(s->name), S(s->uid), s->priority, (long long)s->cpu_milli,
        (long long)s->memory_bytes, (long long)s->gpus, s->gpu_share_milli,
        (long long)s->gpu_memory_mib, s->gpu_devices, S(s->invalid));
    labels_text(buf, len, &off, "sel", s->node_selector, s->nnode_selector);
    for (size_t t = 0; t < s->naffinity; t++) {
        OUT(" term{");
        for (size_t r = 0; r < s->affinity[t].nreqs; r++) {
            const struct policy_selector_req *q = &s->affinity[t].reqs[r];

            OUT("%s %d [", S(q->key), (int)q->op);
            for (size_t v = 0; v < q->nvalues; v++)
                OUT("%s,", q->values[v]);
            OUT("];");
        }
        OUT("}");
    }
    for (size_t t = 0; t < s->ntolerations; t++)
        OUT(" tol{%s %d %s %d}", S(s->tolerations[t].key), (int)s->tolerations[t].op,
            S(s->tolerations[t].value), s->tolerations[t].effect);
    OUT(" gang=%s head=%d sub=%s queue=%s managed=%d preempt=%d node=%s bound=%lld nom=%d "
        "unsched=%d groups=%s",
        S(s->gang), s->gang_head, S(s->subgroup), S(s->queue), s->managed, (int)s->preemptible,
        S(s->node), (long long)s->bound_at, s->nominated, s->unschedulable, S(s->gpu_groups));
}

static void node_text(const struct policy_node_spec *s, char *buf, size_t len)
{
    size_t off = 0;

    OUT("%s unsched=%d cpu=%lld mem=%lld pods=%lld gpus=%lld gpumem=%lld", S(s->name),
        s->unschedulable, (long long)s->cpu_milli, (long long)s->memory_bytes, (long long)s->pods,
        (long long)s->gpus, (long long)s->gpu_memory_mib);
    labels_text(buf, len, &off, "labels", s->labels, s->nlabels);
    for (size_t t = 0; t < s->ntaints; t++)
        OUT(" taint{%s=%s:%d}", S(s->taints[t].key), S(s->taints[t].value),
            (int)s->taints[t].effect);
}
#undef S
#undef OUT

START_TEST(test_proto_pods_as_json)
{
    cJSON *pj = proto_list("pods.pb"), *jj = json_list("pods.json");
    const cJSON *pi = cJSON_GetObjectItem(pj, "items"), *ji = cJSON_GetObjectItem(jj, "items");
    struct ext_arena *a = ext_arena_new();
    struct known_classes k;
    int n = cJSON_GetArraySize(ji), seen_affinity = 0, seen_bound = 0, seen_parked = 0;

    known_classes_init(&k);
    ck_assert_int_eq(n, 4);
    ck_assert_int_eq(cJSON_GetArraySize(pi), n);
    for (int i = 0; i < n; i++) {
        const cJSON *p = cJSON_GetArrayItem(pi, i), *j = cJSON_GetArrayItem(ji, i);
        struct policy_pod_spec from_pb, from_json;
        char tp[4096], tj[4096], err[256];

        ck_assert_msg(kube_pod_decode(j, &k.opts, a, &from_json, err, sizeof(err), NULL) == EXT_OK,
                      "%s", err);
        ck_assert_msg(kube_pod_decode(p, &k.opts, a, &from_pb, err, sizeof(err), NULL) == EXT_OK,
                      "%s", err);
        pod_text(&from_json, tj, sizeof(tj));
        pod_text(&from_pb, tp, sizeof(tp));
        ck_assert_str_eq(tp, tj);
        ck_assert_int_eq(kube_pod_is_terminal(p), kube_pod_is_terminal(j));
        ck_assert_pstr_eq(kube_pod_gang_key(p, a), kube_pod_gang_key(j, a));
        ck_assert_pstr_eq(kube_pod_scheduling_group(p), kube_pod_scheduling_group(j));
        ck_assert_pstr_eq(
            cJSON_GetStringValue(cJSON_GetObjectItem(cJSON_GetObjectItem(p, "metadata"),
                                                     "deletionTimestamp")),
            cJSON_GetStringValue(cJSON_GetObjectItem(cJSON_GetObjectItem(j, "metadata"),
                                                     "deletionTimestamp")));
        ck_assert_str_eq(
            cJSON_GetStringValue(cJSON_GetObjectItem(cJSON_GetObjectItem(p, "metadata"),
                                                     "resourceVersion")),
            cJSON_GetStringValue(cJSON_GetObjectItem(cJSON_GetObjectItem(j, "metadata"),
                                                     "resourceVersion")));
        seen_affinity += from_json.naffinity > 0 && from_json.ntolerations > 0;
        seen_bound += from_json.node != NULL && from_json.gpu_groups != NULL &&
                      from_json.bound_at > 0;
        seen_parked += from_json.unschedulable && from_json.nominated;
    }
    /* The fixture holds what the comparison is about, so equal cannot mean empty. */
    ck_assert_int_eq(seen_affinity, 1);
    ck_assert_int_eq(seen_bound, 1);
    ck_assert_int_eq(seen_parked, 1);
    ck_assert_str_eq(cJSON_GetStringValue(cJSON_GetObjectItem(cJSON_GetObjectItem(pj, "metadata"),
                                                              "resourceVersion")),
                     cJSON_GetStringValue(cJSON_GetObjectItem(cJSON_GetObjectItem(jj, "metadata"),
                                                              "resourceVersion")));
    kube_refs_free(k.refs);
    ext_arena_free(a);
    cJSON_Delete(pj);
    cJSON_Delete(jj);
}
END_TEST

START_TEST(test_proto_nodes_as_json)
{
    cJSON *pj = proto_list("nodes.pb"), *jj = json_list("nodes.json");
    const cJSON *pi = cJSON_GetObjectItem(pj, "items"), *ji = cJSON_GetObjectItem(jj, "items");
    struct ext_arena *a = ext_arena_new();
    int n = cJSON_GetArraySize(ji), seen_tainted = 0;

    ck_assert_int_eq(n, 2);
    ck_assert_int_eq(cJSON_GetArraySize(pi), n);
    for (int i = 0; i < n; i++) {
        struct policy_node_spec from_pb, from_json;
        char tp[4096], tj[4096], err[256];

        ck_assert_int_eq(kube_node_decode(cJSON_GetArrayItem(ji, i), a, &from_json, err,
                                          sizeof(err), NULL),
                         EXT_OK);
        ck_assert_int_eq(kube_node_decode(cJSON_GetArrayItem(pi, i), a, &from_pb, err, sizeof(err),
                                          NULL),
                         EXT_OK);
        node_text(&from_json, tj, sizeof(tj));
        node_text(&from_pb, tp, sizeof(tp));
        ck_assert_str_eq(tp, tj);
        seen_tainted += from_json.ntaints == 3 && from_json.unschedulable &&
                        from_json.gpu_memory_mib == 81920 && from_json.gpus == 8;
    }
    ck_assert_int_eq(seen_tainted, 1);
    ext_arena_free(a);
    cJSON_Delete(pj);
    cJSON_Delete(jj);
}
END_TEST

/* Paged: the continue token and the resourceVersion come through. */
START_TEST(test_proto_list_pages)
{
    cJSON *p1 = proto_list("pods_p1.pb"), *p2 = proto_list("pods_p2.pb");
    const cJSON *m1 = cJSON_GetObjectItem(p1, "metadata"), *m2 = cJSON_GetObjectItem(p2, "metadata");

    ck_assert_int_eq(cJSON_GetArraySize(cJSON_GetObjectItem(p1, "items")), 2);
    ck_assert_int_eq(cJSON_GetArraySize(cJSON_GetObjectItem(p2, "items")), 2);
    ck_assert(strlen(cJSON_GetStringValue(cJSON_GetObjectItem(m1, "continue"))) > 10);
    ck_assert_ptr_null(cJSON_GetObjectItem(m2, "continue"));
    ck_assert_str_eq(cJSON_GetStringValue(cJSON_GetObjectItem(m1, "resourceVersion")),
                     cJSON_GetStringValue(cJSON_GetObjectItem(m2, "resourceVersion")));
    cJSON_Delete(p1);
    cJSON_Delete(p2);
}
END_TEST

/* What is not a Pod, Node, their lists or a Status is refused with why, not guessed at. */
static const struct proto_bad_case {
    const char *bytes;
    size_t len;
    const char *err;
} proto_bad_cases[] = {
#define B(s) s, sizeof(s) - 1
    {B("{\"kind\":\"Pod\"}"), "protobuf reply without its \"k8s\\0\" envelope"},
    /* Unknown{typeMeta{apiVersion "v1", kind "Event"}} */
    {B("k8s\0\x0a\x0b\x0a\x02v1\x12\x05"
       "Event"),
     "protobuf Event: not one muster reads, or malformed"},
    /* typeMeta says 7 bytes, 6 follow */
    {B("k8s\0\x0a\x07\x0a\x02v1\x12\x01"), "protobuf reply does not unpack"},
    /* raw alone, no typeMeta */
    {B("k8s\0\x12\x02\x0a\x00"), "protobuf object without a kind: not one muster reads, or malformed"},
    /* a Pod whose metadata says 9 bytes, 2 follow */
    {B("k8s\0\x0a\x09\x0a\x02v1\x12\x03Pod\x12\x04\x0a\x09\x0a\x01"),
     "protobuf Pod: not one muster reads, or malformed"},
#undef B
};

START_TEST(test_proto_refused)
{
    const struct proto_bad_case *t = &proto_bad_cases[_i];
    char err[256] = "";

    ck_assert_ptr_null(kube__proto_body(t->bytes, t->len, err, sizeof(err)));
    ck_assert_str_eq(err, t->err);
}
END_TEST

/* Memory: 100,000 empty Pods (2 bytes each on the wire, a protobuf-c message each unpacked) ask
 * for some 57 times their bytes, past the 32 times one unpack may take: refused as malformed,
 * so the watch reads JSON. The same count of Pods with a name each (some 21 times) is not: the
 * cap is for hostile bytes, not for real lists (real Pods and Nodes take 4 to 5 times). */
static size_t put_varint(unsigned char *p, size_t v)
{
    size_t n = 0;

    for (; v >= 0x80; v >>= 7)
        p[n++] = (unsigned char)(v | 0x80);
    p[n++] = (unsigned char)v;
    return n;
}

static size_t pod_list_bytes(unsigned char *buf, size_t nitems, const char *item, size_t itemlen)
{
    static const unsigned char head[] = "k8s\0\x0a\x0d\x0a\x02v1\x12\x07PodList";
    size_t off = sizeof(head) - 1;

    memcpy(buf, head, off);
    buf[off++] = 0x12; /* Unknown.raw */
    off += put_varint(buf + off, nitems * itemlen);
    for (size_t i = 0; i < nitems; i++, off += itemlen)
        memcpy(buf + off, item, itemlen);
    return off;
}

START_TEST(test_proto_memory_budget)
{
    enum { N = 100000 };
    unsigned char *buf = malloc(N * 12 + 64);
    char err[256] = "", want[256];
    size_t len = pod_list_bytes(buf, N, "\x12\x00", 2);
    cJSON *j;

    ck_assert_ptr_null(kube__proto_body(buf, len, err, sizeof(err)));
    snprintf(want, sizeof(want), "protobuf reply of %zu bytes: over %zu bytes unpacked", len,
             len * 32 + 65536);
    ck_assert_str_eq(err, want);
    /* items{metadata{name "p-0001"}}: 12 bytes each */
    len = pod_list_bytes(buf, N, "\x12\x0a\x0a\x08\x0a\x06p-0001", 12);
    j = kube__proto_body(buf, len, err, sizeof(err));
    ck_assert_msg(j != NULL, "%s", err);
    ck_assert_int_eq(cJSON_GetArraySize(cJSON_GetObjectItem(j, "items")), N);
    cJSON_Delete(j);
    free(buf);
}
END_TEST

/* A length-delimited field (wire type 2) of number num: its key, length and bytes. */
static size_t put_field(unsigned char *buf, unsigned num, const void *data, size_t len)
{
    size_t off = put_varint(buf, (uint64_t)num << 3 | 2);

    off += put_varint(buf + off, len);
    memcpy(buf + off, data, len);
    return off + len;
}

/*
 * A watch frame (a WatchEvent, no envelope) of an ADDED Pod ml/big with nann annotations
 * "a-<i>" whose values are vlen bytes of 'v' each: in the form the API server writes, so the
 * event decoder's blocks outgrow one chunk of PROTO_CHUNK (many small blocks, or one large).
 */
static unsigned char *pod_event_bytes(size_t nann, size_t vlen, size_t *len)
{
    size_t cap = nann * (vlen + 32) + 256, m = 0, n;
    unsigned char *meta = malloc(cap), *a = malloc(cap), *b = malloc(cap), *ev = malloc(cap);
    char *value = malloc(vlen + 1), key[32];

    memset(value, 'v', vlen);
    m += put_field(meta + m, 1, "big", 3); /* ObjectMeta.name */
    m += put_field(meta + m, 3, "ml", 2);  /* namespace */
    for (size_t i = 0; i < nann; i++) {
        size_t klen = (size_t)snprintf(key, sizeof(key), "a-%zu", i);
        size_t e = put_field(a, 1, key, klen); /* StringEntry.key */

        e += put_field(a + e, 2, value, vlen); /* StringEntry.value */
        m += put_field(meta + m, 12, a, e); /* annotations */
    }
    n = put_field(a, 1, meta, m);                                   /* Pod.metadata */
    m = put_field(b, 1, "\x0a\x02v1\x12\x03Pod", 9);                  /* Unknown.typeMeta */
    m += put_field(b + m, 2, a, n);                                 /* Unknown.raw */
    memcpy(a, "k8s", 4);                                            /* the envelope */
    memcpy(a + 4, b, m);
    n = put_field(b, 1, a, m + 4);                                  /* RawExtension.raw */
    m = put_field(ev, 1, "ADDED", 5);                               /* WatchEvent.type */
    m += put_field(ev + m, 2, b, n);                                /* WatchEvent.object */
    free(meta);
    free(a);
    free(b);
    free(value);
    *len = m;
    return ev;
}

/* A watch event's blocks come from chunks kept between events (proto.c): one block larger
 * than a chunk, thousands of blocks over several chunks, and the same event again on the
 * chunk kept from the last, each decoded whole. */
START_TEST(test_proto_event_chunks)
{
    static const struct {
        size_t nann, vlen;
    } shapes[] = {{1, 200000}, {3000, 20}, {3000, 20}, {1, 10}};

    for (size_t k = 0; k < sizeof(shapes) / sizeof(shapes[0]); k++) {
        size_t len;
        unsigned char *frame = pod_event_bytes(shapes[k].nann, shapes[k].vlen, &len);
        char err[256] = "", key[32];
        cJSON *ev = kube__proto_event(frame, len, err, sizeof(err));
        const cJSON *obj = cJSON_GetObjectItem(ev, "object");
        const cJSON *meta = cJSON_GetObjectItem(obj, "metadata");
        const cJSON *ann = cJSON_GetObjectItem(meta, "annotations");
        const char *v;

        ck_assert_msg(ev != NULL, "shape %zu: %s", k, err);
        ck_assert_str_eq(cJSON_GetStringValue(cJSON_GetObjectItem(ev, "type")), "ADDED");
        ck_assert_str_eq(cJSON_GetStringValue(cJSON_GetObjectItem(meta, "name")), "big");
        ck_assert_str_eq(cJSON_GetStringValue(cJSON_GetObjectItem(meta, "namespace")), "ml");
        ck_assert_int_eq(cJSON_GetArraySize(ann), (int)shapes[k].nann);
        snprintf(key, sizeof(key), "a-%zu", shapes[k].nann - 1);
        v = cJSON_GetStringValue(cJSON_GetObjectItem(ann, key));
        ck_assert_ptr_nonnull(v);
        ck_assert_uint_eq(strlen(v), shapes[k].vlen);
        ck_assert_uint_eq(strspn(v, "v"), shapes[k].vlen);
        cJSON_Delete(ev);
        free(frame);
    }
}
END_TEST

/* ---- RayJob and RayService (KubeRay v1.7.0) ------------------------------------ */

/* A RayJob as the operator leaves it: {meta} replaced by what each case sets. */
#define RJ(spec, status)                                                                           \
    "{\"apiVersion\":\"ray.io/v1\",\"kind\":\"RayJob\",\"metadata\":{\"name\":\"train\","        \
    "\"namespace\":\"lab\",\"uid\":\"u-rj\",\"labels\":{\"muster.dev/queue\":\"team-a\"}},"       \
    "\"spec\":{\"entrypoint\":\"python x.py\"," spec "},\"status\":{" status "}}"

static const struct rayjob_case {
    const char *name, *json;
    int rc;
    const char *err; /* a part of it */
    enum kube_rayjob_mode mode;
    const char *gang; /* the submitter's */
    bool holds, asked;
    int64_t cpu, memory, gpus;
    size_t nnode_selector;
} rayjob_cases[] = {
    {"K8sJobMode by default, cluster named: the default submitter held",
     RJ("\"rayClusterSpec\":{}", "\"rayClusterName\":\"train-x7k2p\","
                                 "\"jobDeploymentStatus\":\"Initializing\""),
     EXT_OK, NULL, KUBE_RAYJOB_K8S_JOB, "lab/train-x7k2p", true, false, 500, 200LL << 20, 0, 0},
    {"no cluster named yet: nothing held, nothing to join",
     RJ("\"rayClusterSpec\":{}", ""), EXT_OK, NULL, KUBE_RAYJOB_K8S_JOB, NULL, false, false, 500,
     200LL << 20, 0, 0},
    {"Running: the submitter's Job was made (asked)",
     RJ("\"submissionMode\":\"K8sJobMode\"", "\"rayClusterName\":\"train-x7k2p\","
                                             "\"jobDeploymentStatus\":\"Running\""),
     EXT_OK, NULL, KUBE_RAYJOB_K8S_JOB, "lab/train-x7k2p", true, true, 500, 200LL << 20, 0, 0},
    {"submitterPodTemplate: its requests (limits stand in), nodeSelector",
     RJ("\"submitterPodTemplate\":{\"spec\":{\"nodeSelector\":{\"pool\":\"cpu\"},"
        "\"restartPolicy\":\"Never\",\"containers\":[{\"name\":\"ray-job-submitter\","
        "\"resources\":{\"limits\":{\"cpu\":\"1\",\"memory\":\"1Gi\"}}}]}}",
        "\"rayClusterName\":\"train-x7k2p\""),
     EXT_OK, NULL, KUBE_RAYJOB_K8S_JOB, "lab/train-x7k2p", true, false, 1000, 1LL << 30, 0, 1},
    {"clusterSelector: a cluster it did not make, the submitter on its own",
     RJ("\"clusterSelector\":{\"ray.io/cluster\":\"shared\"}", "\"rayClusterName\":\"shared\""),
     EXT_OK, NULL, KUBE_RAYJOB_K8S_JOB, NULL, false, false, 500, 200LL << 20, 0, 0},
    {"suspended: nothing held",
     RJ("\"suspend\":true", "\"rayClusterName\":\"train-x7k2p\","
                            "\"jobDeploymentStatus\":\"Suspended\""),
     EXT_OK, NULL, KUBE_RAYJOB_K8S_JOB, "lab/train-x7k2p", false, false, 500, 200LL << 20, 0, 0},
    {"Complete: nothing held",
     RJ("\"shutdownAfterJobFinishes\":false", "\"rayClusterName\":\"train-x7k2p\","
                                              "\"jobDeploymentStatus\":\"Complete\""),
     EXT_OK, NULL, KUBE_RAYJOB_K8S_JOB, "lab/train-x7k2p", false, false, 500, 200LL << 20, 0, 0},
    {"Retrying: the cluster and Job are being deleted",
     RJ("\"rayClusterSpec\":{}", "\"rayClusterName\":\"train-x7k2p\","
                                 "\"jobDeploymentStatus\":\"Retrying\""),
     EXT_OK, NULL, KUBE_RAYJOB_K8S_JOB, "lab/train-x7k2p", false, false, 500, 200LL << 20, 0, 0},
    {"SidecarMode: the submitter is the head's container",
     RJ("\"submissionMode\":\"SidecarMode\"", "\"rayClusterName\":\"train-x7k2p\""), EXT_OK,
     NULL, KUBE_RAYJOB_SIDECAR, "lab/train-x7k2p", false, false, 0, 0, 0, 0},
    {"HTTPMode: no submitter",
     RJ("\"submissionMode\":\"HTTPMode\"", "\"rayClusterName\":\"train-x7k2p\""), EXT_OK, NULL,
     KUBE_RAYJOB_HTTP, "lab/train-x7k2p", false, false, 0, 0, 0, 0},
    {"InteractiveMode: no submitter",
     RJ("\"submissionMode\":\"InteractiveMode\"", "\"rayClusterName\":\"train-x7k2p\""), EXT_OK,
     NULL, KUBE_RAYJOB_INTERACTIVE, "lab/train-x7k2p", false, false, 0, 0, 0, 0},
    {"an unknown mode is refused, named",
     RJ("\"submissionMode\":\"Batch\"", ""), EXT_EINVAL,
     "spec.submissionMode: \"Batch\" is not K8sJobMode", 0, NULL, false, false, 0, 0, 0, 0},
    {"a submitter template that does not decode is refused, named",
     RJ("\"submitterPodTemplate\":{\"spec\":{\"containers\":[{\"name\":\"s\",\"resources\":"
        "{\"requests\":{\"cpu\":\"lots\"}}}]}}",
        ""),
     EXT_EINVAL, "spec.submitterPodTemplate: ", 0, NULL, false, false, 0, 0, 0, 0},
};

START_TEST(test_rayjob)
{
    const struct rayjob_case *c = &rayjob_cases[_i];
    cJSON *j = cJSON_Parse(c->json);
    struct ext_arena *a = ext_arena_new();
    struct kube_rayjob rj;
    char err[256] = "";
    int rc;

    ck_assert_msg(j != NULL, "%s: not JSON", c->name);
    rc = kube_rayjob_decode(j, NULL, a, &rj, err, sizeof(err), NULL);
    ck_assert_msg(rc == c->rc, "%s: rc %d (%s)", c->name, rc, err);
    if (rc != EXT_OK) {
        ck_assert_msg(strstr(err, c->err) != NULL, "%s: %s", c->name, err);
        goto out;
    }
    ck_assert_str_eq(rj.key, "lab/train");
    ck_assert_str_eq(rj.uid, "u-rj");
    ck_assert_str_eq(rj.queue, "team-a");
    ck_assert_int_eq(rj.mode, c->mode);
    if (c->gang)
        ck_assert_str_eq(rj.submitter_gang, c->gang);
    else
        ck_assert_ptr_null(rj.submitter_gang);
    ck_assert_msg(rj.holds == c->holds, "%s: holds %d", c->name, rj.holds);
    ck_assert_msg(rj.hold.asked == c->asked, "%s: asked %d", c->name, rj.hold.asked);
    if (c->holds) {
        ck_assert_str_eq(rj.hold.gang, c->gang);
        ck_assert_str_eq(rj.hold.subgroup, KUBE_RAYJOB_SUBMITTER);
        ck_assert_str_eq(rj.hold.owner, "RayJob lab/train");
    }
    ck_assert_int_eq(rj.hold.cpu_milli, c->cpu);
    ck_assert_int_eq(rj.hold.memory_bytes, c->memory);
    ck_assert_int_eq(rj.hold.gpus, c->gpus);
    ck_assert_uint_eq(rj.hold.nnode_selector, c->nnode_selector);
out:
    ext_arena_free(a);
    cJSON_Delete(j);
}
END_TEST

/* The RayJob's RayCluster names its owner; a RayService's too; a kind muster does not follow
 * is nobody. */
static const struct owner_case {
    const char *labels;
    enum policy_owner_kind kind;
    const char *owner;
} owner_cases[] = {
    {"{\"ray.io/originated-from-crd\":\"RayJob\",\"ray.io/originated-from-cr-name\":\"train\","
     "\"ray.io/job-submission-mode\":\"K8sJobMode\"}",
     POLICY_OWNER_RAYJOB, "lab/train"},
    {"{\"ray.io/originated-from-crd\":\"RayService\",\"ray.io/originated-from-cr-name\":\"svc\"}",
     POLICY_OWNER_RAYSERVICE, "lab/svc"},
    {"{\"ray.io/originated-from-crd\":\"RayCronJob\",\"ray.io/originated-from-cr-name\":\"c\"}",
     POLICY_OWNER_NONE, NULL},
    {"{}", POLICY_OWNER_NONE, NULL},
};

START_TEST(test_raycluster_owner)
{
    const struct owner_case *c = &owner_cases[_i];
    char json[1024];
    cJSON *j;
    struct ext_arena *a = ext_arena_new();
    struct policy_gang_spec g;
    char err[256] = "";

    snprintf(json, sizeof(json),
             "{\"apiVersion\":\"ray.io/v1\",\"kind\":\"RayCluster\",\"metadata\":{\"name\":"
             "\"train-x7k2p\",\"namespace\":\"lab\",\"labels\":%s},\"spec\":{}}",
             c->labels);
    ck_assert_ptr_nonnull(j = cJSON_Parse(json));
    ck_assert_msg(kube_raycluster_gang(j, NULL, a, &g, err, sizeof(err), NULL) == EXT_OK, "%s",
                  err);
    ck_assert_str_eq(g.key, "lab/train-x7k2p");
    ck_assert_int_eq(g.owner_kind, c->kind);
    if (c->owner)
        ck_assert_str_eq(g.owner, c->owner);
    else
        ck_assert_ptr_null(g.owner);
    ext_arena_free(a);
    cJSON_Delete(j);
}
END_TEST

START_TEST(test_rayservice)
{
    cJSON *j = cJSON_Parse(
        "{\"apiVersion\":\"ray.io/v1\",\"kind\":\"RayService\",\"metadata\":{\"name\":\"svc\","
        "\"namespace\":\"lab\",\"uid\":\"u-rs\"},\"spec\":{\"rayClusterConfig\":{}},"
        "\"status\":{\"activeServiceStatus\":{\"rayClusterName\":\"svc-abcde\"},"
        "\"pendingServiceStatus\":{\"rayClusterName\":\"svc-fghij\"}}}");
    struct ext_arena *a = ext_arena_new();
    struct kube_rayservice rs;
    char err[256] = "";

    ck_assert_int_eq(kube_rayservice_decode(j, a, &rs, err, sizeof(err), NULL), EXT_OK);
    ck_assert_str_eq(rs.key, "lab/svc");
    ck_assert_str_eq(rs.uid, "u-rs");
    ck_assert_str_eq(rs.active, "svc-abcde");
    ck_assert_str_eq(rs.pending, "svc-fghij");
    ck_assert_str_eq(rs.strategy, "NewCluster");
    ext_arena_free(a);
    cJSON_Delete(j);
}
END_TEST

/* The submitter, as the Job controller makes it: into its RayJob's cluster's gang, subgroup
 * submitter, the RayJob's queue; before the RayJob is known, a pod of its own. */
START_TEST(test_submitter_pod)
{
    static const char *pod_json =
        "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"train-9fz2q\","
        "\"namespace\":\"lab\",\"uid\":\"u-sub\",\"labels\":{"
        "\"app.kubernetes.io/created-by\":\"kuberay-operator\","
        "\"batch.kubernetes.io/job-name\":\"train\",\"job-name\":\"train\","
        "\"ray.io/originated-from-cr-name\":\"train\",\"ray.io/originated-from-crd\":\"RayJob\"}},"
        "\"spec\":{\"schedulerName\":\"muster\",\"containers\":[{\"name\":\"ray-job-submitter\","
        "\"resources\":{\"requests\":{\"cpu\":\"500m\",\"memory\":\"200Mi\"}}}]}}";
    cJSON *pod = cJSON_Parse(pod_json);
    cJSON *rj = cJSON_Parse(RJ("\"rayClusterSpec\":{}", "\"rayClusterName\":\"train-x7k2p\""));
    struct known_classes k;
    struct ext_arena *a = ext_arena_new();
    struct policy_pod_spec ps;
    struct kube_rayjob j;
    char err[256] = "", key[128], old[128];

    known_classes_init(&k);
    ck_assert(kube_pod_rayjob(pod, key, sizeof(key)));
    ck_assert_str_eq(key, "lab/train");
    ck_assert_int_eq(kube_pod_decode(pod, &k.opts, a, &ps, err, sizeof(err), NULL), EXT_OK);
    ck_assert_ptr_null(ps.gang); /* the RayJob is not known yet */
    ck_assert_int_eq(kube_rayjob_decode(rj, &k.opts, a, &j, err, sizeof(err), NULL), EXT_OK);
    ck_assert_int_eq(kube_refs_rayjob(k.refs, &j, old, sizeof(old)), EXT_OK);
    ck_assert_str_eq(old, "");
    ck_assert(kube_refs_known(k.refs, KUBE_REF_RAYJOB, "lab/train"));
    ck_assert_str_eq(kube_refs_owner_uid(k.refs, KUBE_REF_RAYJOB, "lab/train"), "u-rj");
    ck_assert_int_eq(kube_pod_decode(pod, &k.opts, a, &ps, err, sizeof(err), NULL), EXT_OK);
    ck_assert_str_eq(ps.gang, "lab/train-x7k2p");
    ck_assert_str_eq(ps.subgroup, KUBE_RAYJOB_SUBMITTER);
    ck_assert_str_eq(ps.queue, "team-a");
    ck_assert_int_eq(ps.cpu_milli, 500);
    /* Told again, the record says where it held room; forgotten, so does forget. */
    ck_assert_int_eq(kube_refs_rayjob(k.refs, &j, old, sizeof(old)), EXT_OK);
    ck_assert_str_eq(old, "lab/train-x7k2p");
    ck_assert(kube_refs_forget(k.refs, KUBE_REF_RAYJOB, "lab/train", old, sizeof(old)));
    ck_assert_str_eq(old, "lab/train-x7k2p");
    /* A Ray node of the cluster is no submitter, whatever its labels. */
    cJSON_AddStringToObject(
        cJSON_GetObjectItem(cJSON_GetObjectItem(pod, "metadata"), "labels"), "ray.io/cluster",
        "train-x7k2p");
    ck_assert(!kube_pod_rayjob(pod, key, sizeof(key)));
    kube_refs_free(k.refs);
    ext_arena_free(a);
    cJSON_Delete(pod);
    cJSON_Delete(rj);
}
END_TEST

/* A no-node reason whose holder is over its fair share while the gang's own queue would end
 * over its own: both figures in the JSON /why and the Events carry (docs/why.md). */
START_TEST(test_reason_json_own_over_fair_share)
{
    struct policy_reason r = {.kind = POLICY_REASON_NO_NODE, .gang = "lab/b", .pod = "b-0",
                              .resource = -1, .limit_resource = -1,
                              .held_resource = POLICY_RES_GPU, .holder = "a", .held = 2000,
                              .holder_quota = 2000, .holder_fair = 1333, .quotas = 4000,
                              .capacity = 2000, .own_queue = "b",
                              .own_resource = POLICY_RES_GPU, .own_used = 0,
                              .own_fair = 667, .own_asked = 1000};
    cJSON *j = kube_reason_json(&r), *o, *h;

    ck_assert_ptr_nonnull(j);
    h = cJSON_GetObjectItem(j, "holder");
    o = cJSON_GetObjectItem(j, "ownOverFairShare");
    ck_assert_ptr_nonnull(h);
    ck_assert_ptr_nonnull(o);
    ck_assert_str_eq(cJSON_GetObjectItem(h, "queue")->valuestring, "a");
    ck_assert_str_eq(cJSON_GetObjectItem(o, "queue")->valuestring, "b");
    ck_assert_str_eq(cJSON_GetObjectItem(o, "resource")->valuestring, "gpu");
    ck_assert_str_eq(cJSON_GetObjectItem(o, "asked")->valuestring, "1");
    ck_assert_str_eq(cJSON_GetObjectItem(o, "used")->valuestring, "0");
    ck_assert_str_eq(cJSON_GetObjectItem(o, "fairShare")->valuestring, "0.667");
    cJSON_Delete(j);
    r.own_queue = NULL; /* none: no object */
    j = kube_reason_json(&r);
    ck_assert_ptr_null(cJSON_GetObjectItem(j, "ownOverFairShare"));
    ck_assert_ptr_nonnull(cJSON_GetObjectItem(j, "holder"));
    cJSON_Delete(j);
}
END_TEST

/* Victim rule 3 named (explain.c own_over_quota): the waiting gang's queue would end over its
 * quota, and only what the holder holds over its own may be taken: ownOverQuota, with what may
 * be taken; none when an own-share clause is said instead, or no clause. */
START_TEST(test_reason_json_own_over_quota)
{
    struct policy_reason r = {.kind = POLICY_REASON_NO_NODE, .gang = "lab/p", .pod = "p",
                              .resource = -1, .limit_resource = -1, .own_resource = -1,
                              .held_resource = POLICY_RES_GPU, .holder = "qb", .held = 2000,
                              .holder_quota = 1000, .holder_fair = 1000, .quotas = 1000,
                              .capacity = 4000, .quota_queue = "qa", .quota_used = 0,
                              .quota_of = 0, .quota_asked = 2000};
    cJSON *j = kube_reason_json(&r), *o;

    ck_assert_ptr_nonnull(j);
    o = cJSON_GetObjectItem(j, "ownOverQuota");
    ck_assert_ptr_nonnull(o);
    ck_assert_str_eq(cJSON_GetObjectItem(o, "queue")->valuestring, "qa");
    ck_assert_str_eq(cJSON_GetObjectItem(o, "resource")->valuestring, "gpu");
    ck_assert_str_eq(cJSON_GetObjectItem(o, "used")->valuestring, "0");
    ck_assert_str_eq(cJSON_GetObjectItem(o, "asked")->valuestring, "2");
    ck_assert_str_eq(cJSON_GetObjectItem(o, "quota")->valuestring, "0");
    ck_assert_str_eq(cJSON_GetObjectItem(o, "takeable")->valuestring, "1");
    ck_assert_ptr_null(cJSON_GetObjectItem(j, "ownOverFairShare"));
    cJSON_Delete(j);
    r.own_queue = "qa"; /* the own-share clause goes first: rule 1 refuses every victim */
    r.own_resource = POLICY_RES_GPU;
    j = kube_reason_json(&r);
    ck_assert_ptr_nonnull(cJSON_GetObjectItem(j, "ownOverFairShare"));
    ck_assert_ptr_null(cJSON_GetObjectItem(j, "ownOverQuota"));
    cJSON_Delete(j);
    r.own_queue = r.quota_queue = NULL;
    j = kube_reason_json(&r);
    ck_assert_ptr_null(cJSON_GetObjectItem(j, "ownOverQuota"));
    cJSON_Delete(j);
}
END_TEST

static Suite *kube_decode_suite(void)
{
    Suite *s = suite_create("kube_decode");
    TCase *tc;

#define N(a) ((int)(sizeof(a) / sizeof((a)[0])))
    tc = tcase_create("quantity");
    tcase_add_loop_test(tc, test_quantity_parse, 0, N(quantity_cases));
    tcase_add_loop_test(tc, test_quantity_format, 0, N(format_cases));
    tcase_add_loop_test(tc, test_fraction_parse, 0, N(fraction_cases));
    suite_add_tcase(s, tc);

    tc = tcase_create("arena");
    tcase_add_test(tc, test_arena);
    suite_add_tcase(s, tc);

    tc = tcase_create("pod");
    tcase_add_test(tc, test_pod_kuberay_head);
    tcase_add_test(tc, test_pod_kuberay_worker);
    tcase_add_loop_test(tc, test_pod_bound_at, 0, N(bound_at_cases));
    tcase_add_test(tc, test_pod_init_and_overhead);
    tcase_add_test(tc, test_pod_fraction_and_placement);
    tcase_add_test(tc, test_pod_volcano_group_and_gpu_memory);
    tcase_add_test(tc, test_pod_options);
    tcase_add_test(tc, test_pod_caps);
    tcase_add_loop_test(tc, test_pod_membership, 0, N(pod_member_cases));
    tcase_add_test(tc, test_pod_priority_without_lookup);
    tcase_add_test(tc, test_pod_preemptibility_invalid);
    tcase_add_loop_test(tc, test_pod_invalid_asks, 0, N(invalid_cases));
    tcase_add_loop_test(tc, test_pod_malformed, 0, N(malformed_cases));
    suite_add_tcase(s, tc);

    tc = tcase_create("node");
    tcase_add_test(tc, test_node_gpu_lab_worker);
    tcase_add_test(tc, test_node_cordoned_numbers);
    tcase_add_test(tc, test_node_malformed);
    suite_add_tcase(s, tc);

    tc = tcase_create("queue");
    tcase_add_test(tc, test_queue_full);
    tcase_add_test(tc, test_queue_defaults);
    tcase_add_test(tc, test_queue_kai_units);
    tcase_add_test(tc, test_queue_defaults_per_api);
    tcase_add_loop_test(tc, test_queue_fields, 0, N(queue_field_cases));
    suite_add_tcase(s, tc);

    tc = tcase_create("gang");
    tcase_add_loop_test(tc, test_gangs, 0, N(gang_cases));
    tcase_add_loop_test(tc, test_worker_group_replicas, 0, N(replicas_cases));
    tcase_add_test(tc, test_gang_malformed);
    tcase_add_loop_test(tc, test_compositions, 0, N(composition_cases));
    tcase_add_loop_test(tc, test_gang_rejects, 0, N(gang_reject_cases));
    tcase_add_test(tc, test_pod_group_decode);
    tcase_add_test(tc, test_priority_class);
    suite_add_tcase(s, tc);

    tc = tcase_create("protobuf");
    tcase_add_test(tc, test_proto_pods_as_json);
    tcase_add_test(tc, test_proto_nodes_as_json);
    tcase_add_test(tc, test_proto_list_pages);
    tcase_add_loop_test(tc, test_proto_refused, 0, N(proto_bad_cases));
    tcase_add_test(tc, test_proto_memory_budget);
    tcase_add_test(tc, test_proto_event_chunks);
    suite_add_tcase(s, tc);

    tc = tcase_create("kuberay");
    tcase_add_loop_test(tc, test_rayjob, 0, N(rayjob_cases));
    tcase_add_loop_test(tc, test_raycluster_owner, 0, N(owner_cases));
    tcase_add_test(tc, test_rayservice);
    tcase_add_test(tc, test_submitter_pod);
    suite_add_tcase(s, tc);

    tc = tcase_create("refs");
    tcase_add_test(tc, test_refs_workload_members);
    tcase_add_test(tc, test_refs_workload_follows_its_pod_groups_min_counts);
    tcase_add_test(tc, test_pod_group_topology_key);
    tcase_add_test(tc, test_refs_workload_topology_key);
    tcase_add_test(tc, test_topology_decode);
    tcase_add_test(tc, test_raycluster_topology);
    tcase_add_loop_test(tc, test_raycluster_volcano_labels, 0,
                        sizeof(volcano_cases) / sizeof(volcano_cases[0]));
    tcase_add_test(tc, test_podgroup_topology);
    tcase_add_test(tc, test_pod_replica);
    tcase_add_test(tc, test_refs_priority_classes);
    tcase_add_test(tc, test_reason_json_own_over_fair_share);
    tcase_add_test(tc, test_reason_json_own_over_quota);
    suite_add_tcase(s, tc);
#undef N
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(kube_decode_suite());
    int failed;

    srunner_run_all(sr, CK_ENV);
    failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
