/*
 * test_oom.c - running out of memory at every allocation in turn: each
 * failure is handled and reported as what it is, and nothing is half done.
 *
 * malloc, calloc, realloc and strdup are wrapped for this executable
 * (-Wl,--wrap, test/CMakeLists.txt): while armed, the k-th call fails. Each
 * case runs once per k until a run sees no failure at all.
 *   - the engine: a pod whose toleration key could not be copied must not
 *     read as "tolerates every taint"; a node whose taint key could not be
 *     copied must not be taken half; a pod taken while the waiting index
 *     could not grow still waits in order;
 *   - the cache: a key that could not be recorded is still forgotten by the
 *     next list that no longer has its object;
 *   - protobuf (kube/proto.c): a Pod list read with any allocation failing is
 *     either whole or refused, never a Pod with a field left out (cJSON's own
 *     allocations go through the same failing malloc, cJSON_InitHooks).
 */
#include <check.h>
#include <execinfo.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cache.h"
#include "config.h"
#include "fixture.h"
#include "kube_client_int.h"
#include "policy.h"

/* ---- the failing allocator --------------------------------------------------------- */

void *__real_malloc(size_t n);
void *__real_calloc(size_t n, size_t size);
void *__real_realloc(void *p, size_t n);
char *__real_strdup(const char *s);
void *__wrap_malloc(size_t n);
void *__wrap_calloc(size_t n, size_t size);
void *__wrap_realloc(void *p, size_t n);
char *__wrap_strdup(const char *s);

static long countdown = -1; /* -1: disarmed; 0: this call fails */
static long failures, armed_k, trace_k = -1;

/* OOM_TRACE=k prints where the k-th allocation is made, when a case stops there. */
static bool fail_now(void)
{
    if (countdown < 0)
        return false;
    if (countdown-- > 0)
        return false;
    failures++;
    if (armed_k == trace_k) {
        void *frames[16];

        backtrace_symbols_fd(frames, backtrace(frames, 16), 2);
    }
    return true;
}

void *__wrap_malloc(size_t n)
{
    return fail_now() ? NULL : __real_malloc(n);
}

void *__wrap_calloc(size_t n, size_t size)
{
    return fail_now() ? NULL : __real_calloc(n, size);
}

void *__wrap_realloc(void *p, size_t n)
{
    return fail_now() ? NULL : __real_realloc(p, n);
}

char *__wrap_strdup(const char *s)
{
    return fail_now() ? NULL : __real_strdup(s);
}

/* Fail the k-th allocation from now (0-based); returns whether one failed since arming. */
static void arm(long k)
{
    failures = 0;
    armed_k = k;
    countdown = k;
}

static bool disarm(void)
{
    countdown = -1;
    return failures > 0;
}

#define MAX_STEPS 400

/* ---- the engine ------------------------------------------------------------------------ */

static const struct policy_taint taint_b = {"dedicated", "b", POLICY_TAINT_NO_SCHEDULE};
static const struct policy_toleration tolerate_a = {"dedicated", POLICY_TOLERATE_EQUAL, "a", -1};

static struct policy_node_spec tainted_node(void)
{
    return (struct policy_node_spec){.name = "n1",
                                     .taints = &taint_b,
                                     .ntaints = 1,
                                     .cpu_milli = 8000,
                                     .memory_bytes = INT64_C(32) << 30,
                                     .pods = 110};
}

static struct policy_pod_spec tolerating_pod(void)
{
    return (struct policy_pod_spec){.namespace_ = "lab",
                                    .name = "p",
                                    .uid = "uid-p",
                                    .cpu_milli = 100,
                                    .tolerations = &tolerate_a,
                                    .ntolerations = 1,
                                    .managed = true};
}

/* The pod tolerates dedicated=a only: the node tainted dedicated=b must refuse it. */
START_TEST(test_toleration_copy)
{
    const char *nodes[] = {"n1"};
    bool failed = true;

    for (long k = 0; failed && k < MAX_STEPS; k++) {
        struct policy_cluster *c = policy_cluster_new(NULL);
        struct policy_node_spec n = tainted_node();
        struct policy_pod_spec p = tolerating_pod();
        struct policy_filter_result r;
        int rc;

        ck_assert_ptr_nonnull(c);
        ck_assert_int_eq(policy_node_upsert(c, &n), POLICY_OK);
        arm(k);
        rc = policy_pod_upsert(c, &p, 0);
        failed = disarm();
        ck_assert_msg(rc == POLICY_OK || rc == POLICY_ENOMEM, "k=%ld: rc %d", k, rc);
        if (rc == POLICY_OK) {
            ck_assert_int_eq(policy_filter(c, "lab", "p", nodes, 1, 0, &r), POLICY_OK);
            ck_assert_msg(r.verdicts[0].fit != POLICY_FITS,
                          "k=%ld: the pod fits a node whose taint it does not tolerate", k);
            policy_filter_result_cleanup(&r);
        }
        policy_cluster_free(c);
    }
    ck_assert_msg(!failed, "still failing after %d allocations", MAX_STEPS);
}
END_TEST

/* A pod of one asking one GPU, of this priority. */
static struct policy_pod_spec gpu_pod(const char *name, int32_t priority)
{
    return (struct policy_pod_spec){.namespace_ = "lab",
                                    .name = name,
                                    .uid = name,
                                    .priority = priority,
                                    .cpu_milli = 100,
                                    .gpus = 1,
                                    .managed = true};
}

/*
 * A pod taken while the waiting index could not grow still waits in order: "first"
 * (priority 100) is taken with one allocation failing, then "second" (priority 0) asks for
 * the node's only GPU and must be turned away for it. (The index left out a gang whose
 * entry could not be added, silently: "second" took the GPU.)
 */
START_TEST(test_waiting_gang_kept)
{
    const char *nodes[] = {"n1"};
    bool failed = true;
    int kept = 0;

    for (long k = 0; failed && k < MAX_STEPS; k++) {
        struct policy_cluster *c = policy_cluster_new(NULL);
        struct policy_node_spec n = {.name = "n1",
                                     .cpu_milli = 8000,
                                     .memory_bytes = INT64_C(32) << 30,
                                     .pods = 110,
                                     .gpus = 1};
        struct policy_pod_spec first = gpu_pod("first", 100), second = gpu_pod("second", 0);
        struct policy_filter_result r;
        int rc;

        ck_assert_ptr_nonnull(c);
        ck_assert_int_eq(policy_node_upsert(c, &n), POLICY_OK);
        arm(k);
        rc = policy_pod_upsert(c, &first, 0);
        failed = disarm();
        ck_assert_msg(rc == POLICY_OK || rc == POLICY_ENOMEM, "k=%ld: rc %d", k, rc);
        kept += failed && rc == POLICY_OK;
        ck_assert_int_eq(policy_pod_upsert(c, &second, 0), POLICY_OK);
        ck_assert_int_eq(policy_filter(c, "lab", "second", nodes, 1, 0, &r), POLICY_OK);
        if (rc == POLICY_OK)
            ck_assert_msg(r.reason && strstr(r.reason, "gang lab/first of queue default is ahead"),
                          "k=%ld: the pod waiting first was passed over: %s", k,
                          r.reason ? r.reason : "second fits");
        else
            ck_assert_ptr_null(r.reason); /* first is not there: second takes the GPU */
        policy_filter_result_cleanup(&r);
        policy_cluster_free(c);
    }
    ck_assert_msg(!failed, "still failing after %d allocations", MAX_STEPS);
    ck_assert_msg(kept > 0, "no run took the pod past a failure: the case proves nothing");
}
END_TEST

/* A node whose taint could not be copied is not taken at all, or taken whole. */
START_TEST(test_taint_copy)
{
    const char *nodes[] = {"n1"};
    bool failed = true;

    for (long k = 0; failed && k < MAX_STEPS; k++) {
        struct policy_cluster *c = policy_cluster_new(NULL);
        struct policy_node_spec n = tainted_node();
        struct policy_pod_spec p = tolerating_pod();
        struct policy_filter_result r;
        int rc;

        ck_assert_ptr_nonnull(c);
        p.tolerations = NULL;
        p.ntolerations = 0;
        ck_assert_int_eq(policy_pod_upsert(c, &p, 0), POLICY_OK);
        arm(k);
        rc = policy_node_upsert(c, &n);
        failed = disarm();
        ck_assert_msg(rc == POLICY_OK || rc == POLICY_ENOMEM, "k=%ld: rc %d", k, rc);
        if (failed && rc == POLICY_OK)
            fprintf(stderr, "test_oom: node upsert: allocation %ld failed and was done without\n",
                    k);
        ck_assert_int_eq(policy_node_known(c, "n1"), rc == POLICY_OK);
        if (rc == POLICY_OK) {
            ck_assert_int_eq(policy_filter(c, "lab", "p", nodes, 1, 0, &r), POLICY_OK);
            ck_assert_msg(r.verdicts[0].fit != POLICY_FITS, "k=%ld: the taint was lost", k);
            policy_filter_result_cleanup(&r);
        }
        policy_cluster_free(c);
    }
    ck_assert_msg(!failed, "still failing after %d allocations", MAX_STEPS);
}
END_TEST

/* ---- the cache --------------------------------------------------------------------------- */

static cJSON *node_object(const char *name)
{
    char json[256];

    snprintf(json, sizeof(json),
             "{\"apiVersion\":\"v1\",\"kind\":\"Node\",\"metadata\":{\"name\":\"%s\"},"
             "\"status\":{\"allocatable\":{\"cpu\":\"8\",\"memory\":\"32Gi\",\"pods\":\"110\"}}}",
             name);
    return cJSON_Parse(json);
}

/* A node added while its key could not be recorded is forgotten by the list without it. */
START_TEST(test_lost_key_forgotten_on_relist)
{
    bool failed = true;
    int lost = 0;

    for (long k = 0; failed && k < MAX_STEPS; k++) {
        struct cfg_settings s;
        struct cache c;
        char err[256];
        cJSON *n = node_object("n-lost"), *keep = node_object("n-kept"), *list;

        ck_assert_int_eq(cfg_settings_init(&s), CFG_OK);
        ck_assert_int_eq(cache_init(&c, &s, NULL, err, sizeof(err)), EXT_OK);
        arm(k);
        cache_apply(&c, CACHE_NODES, "ADDED", n);
        failed = disarm();
        if (policy_node_known(c.engine, "n-lost"))
            lost += failed;
        /* The node is deleted while no watch event says so; the next list lacks it. */
        list = cJSON_CreateArray();
        cJSON_AddItemToArray(list, keep);
        cache_replace(&c, CACHE_NODES, list);
        ck_assert_msg(!policy_node_known(c.engine, "n-lost"),
                      "k=%ld: a node gone from the list is still in the engine", k);
        ck_assert(policy_node_known(c.engine, "n-kept"));
        cJSON_Delete(list);
        cJSON_Delete(n);
        cache_cleanup(&c);
        cfg_settings_cleanup(&s);
    }
    ck_assert_msg(!failed, "still failing after %d allocations", MAX_STEPS);
    ck_assert_msg(lost > 0, "no run lost the key: the case proves nothing");
}
END_TEST

/* ---- protobuf -------------------------------------------------------------------------- */

START_TEST(test_proto_whole_or_refused)
{
    size_t len;
    char *pb = fixture_read("proto", "pods.pb", &len), err[256];
    cJSON *want = kube__proto_body(pb, len, err, sizeof(err)), *got;
    cJSON_Hooks hooks = {__wrap_malloc, free};
    bool failed = true;
    int refused = 0;

    ck_assert_msg(want != NULL, "%s", err);
    cJSON_InitHooks(&hooks); /* cJSON (a shared library) allocates through the failing malloc */
    for (long k = 0; failed && k < MAX_STEPS * 10; k++) {
        err[0] = '\0';
        arm(k);
        got = kube__proto_body(pb, len, err, sizeof(err));
        failed = disarm();
        if (got) {
            ck_assert_msg(cJSON_Compare(got, want, true), "k=%ld: a list unlike the whole one", k);
        } else {
            ck_assert_msg(failed && err[0], "k=%ld: refused without a failure or a reason", k);
            refused++;
        }
        cJSON_Delete(got);
    }
    cJSON_InitHooks(NULL);
    ck_assert_msg(!failed, "still failing after %d allocations", MAX_STEPS * 10);
    ck_assert_int_gt(refused, 0);
    cJSON_Delete(want);
    free(pb);
}
END_TEST

static Suite *oom_suite(void)
{
    Suite *s = suite_create("oom");
    TCase *tc = tcase_create("every_allocation");

    tcase_add_test(tc, test_toleration_copy);
    tcase_add_test(tc, test_taint_copy);
    tcase_add_test(tc, test_waiting_gang_kept);
    tcase_add_test(tc, test_lost_key_forgotten_on_relist);
    tcase_add_test(tc, test_proto_whole_or_refused);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(oom_suite());
    const char *trace = getenv("OOM_TRACE");
    int failed;

    trace_k = trace ? atol(trace) : -1;
    ext_log_setup(CFG_LOG_PLAIN, CFG_LOG_ERROR + 1);
    srunner_run_all(sr, CK_ENV);
    failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
