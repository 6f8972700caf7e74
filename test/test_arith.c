/*
 * test_arith.c - the engine's sums of quantities: what one pod may ask is
 * capped, sums of many saturate instead of wrapping, and a saturated sum is
 * counted again as its parts leave, so it never drifts (policy/arith.h).
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "policy.h"

#define GiB (INT64_C(1) << 30)
#define EiB (INT64_C(1) << 60)

static struct policy_cluster *C;

static void setup(void)
{
    struct policy_node_spec n = {
        .name = "n1", .cpu_milli = 32000, .memory_bytes = 512 * GiB, .pods = 100000, .gpus = 8};

    C = policy_cluster_new(NULL);
    ck_assert_ptr_nonnull(C);
    ck_assert_int_eq(policy_node_upsert(C, &n), POLICY_OK);
}

static void teardown(void)
{
    policy_cluster_free(C);
    C = NULL;
}

/* A managed pod of queue (NULL: the default); bound to node when node is set. */
static int upsert_in(const char *name, int64_t cpu_milli, int64_t memory, const char *node,
                     const char *queue)
{
    char uid[64];
    struct policy_pod_spec p = {.namespace_ = "lab",
                                .name = name,
                                .uid = uid,
                                .cpu_milli = cpu_milli,
                                .memory_bytes = memory,
                                .node = node,
                                .queue = queue,
                                .managed = true};

    snprintf(uid, sizeof(uid), "uid-%s", name);
    return policy_pod_upsert(C, &p, 0);
}

static int upsert(const char *name, int64_t cpu_milli, int64_t memory, const char *node)
{
    return upsert_in(name, cpu_milli, memory, node, NULL);
}

static void add_queue(const char *name)
{
    struct policy_queue_spec q = {.name = name};

    for (int r = 0; r < POLICY_RES_COUNT; r++) {
        q.quota.v[r] = -1;
        q.limit.v[r] = -1;
        q.over_quota_weight.v[r] = 1;
    }
    ck_assert_int_eq(policy_queue_upsert(C, &q), POLICY_OK);
}

static enum policy_fit fit_on_n1(const char *name, char *why, size_t len)
{
    const char *nodes[] = {"n1"};
    struct policy_filter_result r;
    enum policy_fit fit;

    ck_assert_int_eq(policy_filter(C, "lab", name, nodes, 1, 0, &r), POLICY_OK);
    fit = r.verdicts[0].fit;
    snprintf(why, len, "%s", r.verdicts[0].reason ? r.verdicts[0].reason : "");
    policy_filter_result_cleanup(&r);
    return fit;
}

static void node_use(const struct policy_node_view *v, void *ctx)
{
    *(struct policy_node_view *)ctx = *v;
}

static struct policy_node_view n1(void)
{
    struct policy_node_view v = {0};

    policy_each_node(C, node_use, &v);
    return v;
}

static void queue_use(const struct policy_queue_view *v, void *ctx)
{
    if (strcmp(v->name, "default") == 0)
        *(struct policy_queue_view *)ctx = *v;
}

static struct policy_queue_view default_queue(void)
{
    struct policy_queue_view v = {0};

    policy_each_queue(C, queue_use, &v);
    return v;
}

struct queue_probe {
    const char *name;
    struct policy_queue_view v;
};

static void queue_named(const struct policy_queue_view *v, void *ctx)
{
    struct queue_probe *p = ctx;

    if (strcmp(v->name, p->name) == 0)
        p->v = *v;
}

/* Queue name as its view shows it (fair shares brought up to date). */
static struct policy_queue_view queue_view(const char *name)
{
    struct queue_probe p = {name, {0}};

    policy_each_queue(C, queue_named, &p);
    ck_assert_ptr_nonnull(p.v.name);
    return p.v;
}

/* Two bound pods of 5Ei each: facts, counted without wrapping, and the node is full. */
START_TEST(two_pods_of_five_exbibytes)
{
    char why[256];

    ck_assert_int_eq(upsert("big-0", 1000, 5 * EiB, "n1"), POLICY_OK);
    ck_assert_int_eq(upsert("big-1", 1000, 5 * EiB, "n1"), POLICY_OK);
    ck_assert_int_ge(n1().memory_used, 512 * GiB);
    ck_assert_int_ge(default_queue().allocated.v[POLICY_RES_MEMORY], 512 * GiB);
    ck_assert_int_eq(upsert("small", 100, GiB, NULL), POLICY_OK);
    ck_assert_int_ne(fit_on_n1("small", why, sizeof(why)), POLICY_FITS);
    ck_assert_int_eq(policy_pod_forget(C, "lab", "big-0"), POLICY_OK);
    ck_assert_int_ge(n1().memory_used, 512 * GiB);
    ck_assert_int_ne(fit_on_n1("small", why, sizeof(why)), POLICY_FITS);
    ck_assert_int_eq(policy_pod_forget(C, "lab", "big-1"), POLICY_OK);
    ck_assert_int_eq(n1().memory_used, 0);
    ck_assert_int_eq(default_queue().allocated.v[POLICY_RES_MEMORY], 0);
    ck_assert_int_eq(fit_on_n1("small", why, sizeof(why)), POLICY_FITS);
}
END_TEST

/* An ask over the engine's cap is a verdict with the reason, not a sum to overflow. */
static const struct {
    int64_t cpu_milli, memory;
    const char *word;
} over_caps[] = {
    {POLICY_MAX_CPU_MILLI + 1, GiB, "cpu"},
    {1000, POLICY_MAX_MEMORY_BYTES + 1, "memory"},
    {1000, 5 * EiB, "memory"},
    {INT64_MAX, INT64_MAX, "cpu"},
};

START_TEST(an_ask_over_the_cap_is_refused_with_a_reason)
{
    char why[256];

    ck_assert_int_eq(upsert("huge", over_caps[_i].cpu_milli, over_caps[_i].memory, NULL),
                     POLICY_OK);
    ck_assert_int_eq(fit_on_n1("huge", why, sizeof(why)), POLICY_UNRESOLVABLE);
    ck_assert_msg(strstr(why, over_caps[_i].word) && strstr(why, "cap"), "%s", why);
}
END_TEST

/*
 * 10,000 bound pods at the memory cap saturate the node's sum; it comes back
 * exactly as they leave. (Split over two queues, each queue's sum stays exact;
 * a_saturated_queue_does_not_drift saturates one.)
 */
START_TEST(a_saturated_sum_does_not_drift)
{
    char name[32], why[256];

    add_queue("qa");
    add_queue("qb");
    for (int i = 0; i < 10000; i++) {
        snprintf(name, sizeof(name), "cap-%d", i);
        ck_assert_int_eq(upsert_in(name, 1, POLICY_MAX_MEMORY_BYTES, "n1", i % 2 ? "qb" : "qa"),
                         POLICY_OK);
    }
    ck_assert_int_eq(n1().memory_used, INT64_MAX);
    ck_assert_int_eq(upsert("small", 100, GiB, NULL), POLICY_OK);
    for (int i = 0; i < 9999; i++) {
        snprintf(name, sizeof(name), "cap-%d", i);
        ck_assert_int_eq(policy_pod_forget(C, "lab", name), POLICY_OK);
        if (i % 97 == 0)
            ck_assert_int_ne(fit_on_n1("small", why, sizeof(why)), POLICY_FITS);
    }
    ck_assert_int_eq(n1().memory_used, POLICY_MAX_MEMORY_BYTES);
    ck_assert_int_eq(policy_pod_forget(C, "lab", "cap-9999"), POLICY_OK);
    ck_assert_int_eq(n1().memory_used, 0);
    ck_assert_int_eq(fit_on_n1("small", why, sizeof(why)), POLICY_FITS);
}
END_TEST

/*
 * The same 10,000 pods in one queue: its usage and its demand (fairshare.c's sums, rolled up
 * to the parent) saturate instead of wrapping, its fair share stays within what the cluster
 * has, and its usage comes back exactly as they leave.
 */
START_TEST(a_saturated_queue_does_not_drift)
{
    char name[32], why[256];
    struct policy_queue_spec child = {.name = "qa", .parent = "org"};
    struct policy_queue_view v;

    add_queue("org");
    for (int r = 0; r < POLICY_RES_COUNT; r++) {
        child.quota.v[r] = child.limit.v[r] = -1;
        child.over_quota_weight.v[r] = 1;
    }
    ck_assert_int_eq(policy_queue_upsert(C, &child), POLICY_OK);
    for (int i = 0; i < 10000; i++) {
        snprintf(name, sizeof(name), "cap-%d", i);
        ck_assert_int_eq(upsert_in(name, 1, POLICY_MAX_MEMORY_BYTES, "n1", "qa"), POLICY_OK);
    }
    ck_assert_int_eq(upsert_in("small", 100, GiB, NULL, "qa"), POLICY_OK);
    ck_assert_int_ne(fit_on_n1("small", why, sizeof(why)), POLICY_FITS);
    for (int q = 0; q < 2; q++) {
        v = queue_view(q ? "org" : "qa");
        ck_assert_int_eq(v.allocated.v[POLICY_RES_MEMORY], INT64_MAX);
        ck_assert_int_eq(v.demand.v[POLICY_RES_MEMORY], INT64_MAX);
        ck_assert_int_ge(v.fair_share.v[POLICY_RES_MEMORY], 0);
        ck_assert_int_le(v.fair_share.v[POLICY_RES_MEMORY], 512 * GiB);
    }
    for (int i = 0; i < 9999; i++) {
        snprintf(name, sizeof(name), "cap-%d", i);
        ck_assert_int_eq(policy_pod_forget(C, "lab", name), POLICY_OK);
        if (i % 97 == 0) {
            v = queue_view("qa");
            ck_assert_int_ge(v.allocated.v[POLICY_RES_MEMORY], 512 * GiB);
            ck_assert_int_le(v.fair_share.v[POLICY_RES_MEMORY], 512 * GiB);
        }
    }
    ck_assert_int_eq(queue_view("qa").allocated.v[POLICY_RES_MEMORY], POLICY_MAX_MEMORY_BYTES);
    ck_assert_int_eq(queue_view("org").allocated.v[POLICY_RES_MEMORY], POLICY_MAX_MEMORY_BYTES);
    ck_assert_int_eq(policy_pod_forget(C, "lab", "cap-9999"), POLICY_OK);
    ck_assert_int_eq(queue_view("qa").allocated.v[POLICY_RES_MEMORY], 0);
    ck_assert_int_eq(queue_view("org").allocated.v[POLICY_RES_MEMORY], 0);
    ck_assert_int_eq(fit_on_n1("small", why, sizeof(why)), POLICY_FITS);
    ck_assert_int_eq(queue_view("qa").reserved.v[POLICY_RES_MEMORY], GiB);
}
END_TEST

/* A node or a queue that declares more than the engine counts is taken at the cap. */
START_TEST(node_and_queue_amounts_are_capped)
{
    struct policy_node_spec n = {.name = "n1",
                                 .cpu_milli = INT64_MAX,
                                 .memory_bytes = INT64_MAX,
                                 .pods = INT64_MAX,
                                 .gpus = INT64_MAX,
                                 .gpu_memory_mib = INT64_MAX};
    struct policy_queue_spec q = {.name = "default"};
    struct policy_queue_view qv;
    struct policy_node_view nv;

    for (int r = 0; r < POLICY_RES_COUNT; r++) {
        q.quota.v[r] = INT64_MAX;
        q.limit.v[r] = INT64_MAX;
        q.over_quota_weight.v[r] = INT64_MAX;
    }
    ck_assert_int_eq(policy_node_upsert(C, &n), POLICY_OK);
    ck_assert_int_eq(policy_queue_upsert(C, &q), POLICY_OK);
    nv = n1();
    ck_assert_int_eq(nv.cpu_milli, POLICY_MAX_CPU_MILLI);
    ck_assert_int_eq(nv.memory_bytes, POLICY_MAX_MEMORY_BYTES);
    ck_assert_int_eq(nv.gpus, POLICY_MAX_GPUS);
    ck_assert_int_eq(nv.gpu_memory_mib, POLICY_MAX_GPU_MEMORY_MIB);
    qv = default_queue();
    ck_assert_int_eq(qv.quota.v[POLICY_RES_MEMORY], POLICY_MAX_QUEUE_AMOUNT);
    ck_assert_int_eq(qv.limit.v[POLICY_RES_CPU], POLICY_MAX_QUEUE_AMOUNT);
    ck_assert_int_eq(qv.over_quota_weight.v[POLICY_RES_GPU], POLICY_MAX_WEIGHT);
    ck_assert_int_eq(upsert("p", 1000, GiB, NULL), POLICY_OK);
    {
        char why[256];

        ck_assert_int_eq(fit_on_n1("p", why, sizeof(why)), POLICY_FITS);
    }
}
END_TEST

static Suite *arith_suite(void)
{
    Suite *s = suite_create("arith");
    TCase *tc = tcase_create("sums");

    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, two_pods_of_five_exbibytes);
    tcase_add_loop_test(tc, an_ask_over_the_cap_is_refused_with_a_reason, 0,
                        (int)(sizeof(over_caps) / sizeof(over_caps[0])));
    tcase_add_test(tc, a_saturated_sum_does_not_drift);
    tcase_add_test(tc, a_saturated_queue_does_not_drift);
    tcase_add_test(tc, node_and_queue_amounts_are_capped);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(arith_suite());
    int failed;

    srunner_run_all(sr, CK_ENV);
    failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
