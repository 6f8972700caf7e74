/* test_policy_frag.c - the fragmentation strategy: where a pod goes given the pods seen. */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "policy.h"
#include "reason_check.h"

#define GiB (1LL << 30)
#define MODEL "nvidia.com/gpu.product"

static struct policy_cluster *C;
static struct rc_stats REASONS;

/* Every reason a filter gives is true of the state it is given in (reason_check.h). */
static void check_reason(const struct policy_filter_result *fr, const char *const *names,
                         size_t n)
{
    rc_check(C, fr->why, fr->reason, names, n, &REASONS);
    ck_assert_msg(REASONS.violations == 0, "a false reason: %s", REASONS.first);
}
static int64_t NOW;
static int SEQ; /* names for pods seen once */

static void setup(void)
{
    struct policy_options o = {.strategy = POLICY_FRAGMENTATION};

    C = policy_cluster_new(&o);
    ck_assert_ptr_nonnull(C);
    NOW = 1000;
    SEQ = 0;
}

static void teardown(void)
{
    policy_cluster_free(C);
    C = NULL;
}

static void add_node(const char *name, int64_t gpus, const char *model)
{
    struct policy_label labels[] = {{MODEL, model}};
    struct policy_node_spec n = {.name = name, .labels = labels, .nlabels = model ? 1 : 0,
                                 .cpu_milli = 64000, .memory_bytes = 512 * GiB, .pods = 110,
                                 .gpus = gpus};

    ck_assert_int_eq(policy_node_upsert(C, &n), POLICY_OK);
}

/* A GPU ask; model: required by nodeSelector, models: by affinity (In). */
struct ask {
    int64_t gpus;
    int32_t share;
    const char *model;
    const char *const *models;
    size_t nmodels;
};

/* A pod spec for the ask; sel and term must outlive its use. */
static struct policy_pod_spec pod_spec(const char *name, const struct ask *a,
                                       struct policy_label *sel, struct policy_selector_req *req,
                                       struct policy_selector_term *term)
{
    struct policy_pod_spec p = {.namespace_ = "ns", .name = name, .uid = name,
                                .cpu_milli = 1000, .memory_bytes = 4 * GiB, .gpus = a->gpus,
                                .gpu_share_milli = a->share, .managed = true};

    if (a->model) {
        *sel = (struct policy_label){MODEL, a->model};
        p.node_selector = sel;
        p.nnode_selector = 1;
    }
    if (a->nmodels) {
        *req = (struct policy_selector_req){MODEL, POLICY_SELECT_IN, a->models, a->nmodels};
        *term = (struct policy_selector_term){req, 1};
        p.affinity = term;
        p.naffinity = 1;
    }
    return p;
}

static void add_pod(const char *name, struct ask a)
{
    struct policy_label sel;
    struct policy_selector_req req;
    struct policy_selector_term term;
    struct policy_pod_spec p = pod_spec(name, &a, &sel, &req, &term);

    ck_assert_int_eq(policy_pod_upsert(C, &p, NOW), POLICY_OK);
}

/* Pods of this shape came and went: only the histogram remembers them. */
static void seen(struct ask a, int times)
{
    for (int i = 0; i < times; i++) {
        char name[32];

        snprintf(name, sizeof(name), "seen-%d", SEQ++);
        add_pod(name, a);
        ck_assert_int_eq(policy_pod_forget(C, "ns", name), POLICY_OK);
    }
}

/* A pod already running on node, holding groups ("g0") when it shares. */
static void running(const char *name, const char *node, struct ask a, const char *groups)
{
    struct policy_label sel;
    struct policy_selector_req req;
    struct policy_selector_term term;
    struct policy_pod_spec p = pod_spec(name, &a, &sel, &req, &term);

    p.node = node;
    p.gpu_groups = groups;
    ck_assert_int_eq(policy_pod_upsert(C, &p, NOW), POLICY_OK);
}

struct names_ctx {
    const char *v[16];
    size_t n;
};

static void collect_name(const struct policy_node_view *v, void *ctx)
{
    struct names_ctx *x = ctx;

    if (x->n < 16)
        x->v[x->n++] = v->name;
}

/* kube-scheduler's cycle: filter over every node, bind where it fits. NULL if nowhere. */
static const char *schedule(const char *name)
{
    struct names_ctx nodes = {0};
    struct policy_filter_result fr;
    struct policy_bind_result br;
    struct policy_pod_view v;
    const char *at = NULL;

    policy_each_node(C, collect_name, &nodes);
    ck_assert_int_eq(policy_filter(C, "ns", name, nodes.v, nodes.n, NOW, &fr), POLICY_OK);
    check_reason(&fr, nodes.v, nodes.n);
    for (size_t i = 0; i < fr.n && !at; i++)
        if (fr.verdicts[i].fit == POLICY_FITS)
            at = nodes.v[i];
    policy_filter_result_cleanup(&fr);
    if (!at)
        return NULL;
    ck_assert_int_eq(policy_bind(C, "ns", name, at, NOW, &br), POLICY_OK);
    for (size_t i = 0; br.outcome == POLICY_BIND_COMMIT && i < br.n; i++)
        ck_assert_int_eq(policy_bind_done(C, "ns", br.members[i].name, true, NULL), POLICY_OK);
    policy_bind_result_cleanup(&br);
    ck_assert(policy_pod_view_get(C, "ns", name, &v));
    return v.node;
}

/* ---- a share and the device a whole-GPU pod needs next -------------------- */

static const struct history_case {
    const char *what;
    struct ask seen;
    const char *want;
} history_cases[] = {
    /* a's last free device stays whole: the share completes b's */
    {"whole GPUs seen", {.gpus = 1}, "b"},
    /* nothing lost either way: the fuller node, as binpack */
    {"0.1 shares seen", {.share = 100}, "a"},
};

START_TEST(share_splits_no_device_the_pods_seen_need)
{
    const struct history_case *k = &history_cases[_i];

    add_node("a", 2, NULL); /* g0 full with two halves, one device free */
    add_node("b", 1, NULL); /* g0 holds 0.4 */
    running("half-1", "a", (struct ask){.share = 500}, "g0");
    running("half-2", "a", (struct ask){.share = 500}, "g0");
    running("forty", "b", (struct ask){.share = 400}, "g0");
    seen(k->seen, 30);
    add_pod("p", (struct ask){.share = 500});
    ck_assert_msg(strcmp(schedule("p"), k->want) == 0, "%s: want %s", k->what, k->want);
}
END_TEST

/* ---- GPU model constraints ------------------------------------------------ */

static const char *const a100_only[] = {"A100"};

static const struct model_case {
    const char *what;
    struct ask seen;   /* the pods seen before; .gpus 0: none */
    struct ask pod;
    const char *want;  /* NULL: no node fits */
} model_cases[] = {
    {"nodeSelector names the H100s", {0}, {.gpus = 1, .model = "H100"}, "h100"},
    {"affinity names the A100s", {0}, {.gpus = 1, .models = a100_only, .nmodels = 1}, "a100"},
    /* h100 is fuller (binpack's choice), but the pods seen can only use H100s */
    {"H100-tied pods seen", {.gpus = 1, .model = "H100"}, {.gpus = 1}, "a100"},
    {"the H100s are full", {0}, {.gpus = 3, .model = "H100"}, NULL},
};

START_TEST(gpu_models_are_honoured_and_kept_for_who_needs_them)
{
    const struct model_case *k = &model_cases[_i];
    const char *at;

    add_node("a100", 4, "A100");
    add_node("h100", 4, "H100");
    running("busy", "h100", (struct ask){.gpus = 2, .model = "H100"}, NULL);
    if (k->seen.gpus)
        seen(k->seen, 30);
    add_pod("p", k->pod);
    at = schedule("p");
    if (!k->want)
        ck_assert_msg(at == NULL, "%s: placed on %s", k->what, at ? at : "");
    else
        ck_assert_msg(at && strcmp(at, k->want) == 0, "%s: want %s, got %s", k->what, k->want,
                      at ? at : "nothing");
}
END_TEST

/* ---- the histogram -------------------------------------------------------- */

struct shapes_ctx {
    int n;
    double total, heaviest;
    int64_t heaviest_cpu;
};

static void count_shape(const struct policy_shape_view *v, void *ctx)
{
    struct shapes_ctx *x = ctx;

    if (x->n++ == 0) {
        x->heaviest = v->weight;
        x->heaviest_cpu = v->cpu_milli;
    }
    ck_assert(v->weight <= x->heaviest);
    x->total += v->weight;
}

START_TEST(histogram_stays_bounded_and_keeps_the_common_shape)
{
    struct shapes_ctx x = {0};

    add_node("n", 8, NULL);
    for (int i = 0; i < 2000; i++) {
        char name[32];
        struct policy_pod_spec p = {.namespace_ = "ns", .name = name, .uid = name,
                                    .cpu_milli = 2000 + i, .memory_bytes = GiB,
                                    .gpu_share_milli = 100 + i % 800};

        snprintf(name, sizeof(name), "once-%d", i);
        ck_assert_int_eq(policy_pod_upsert(C, &p, NOW), POLICY_OK); /* a shape seen once */
        ck_assert_int_eq(policy_pod_forget(C, "ns", name), POLICY_OK);
        if (i % 4 == 0)
            seen((struct ask){.gpus = 1}, 1); /* the shape that keeps coming back */
    }
    policy_each_shape(C, count_shape, &x);
    ck_assert_int_le(x.n, 64);
    ck_assert_int_gt(x.n, 1);
    ck_assert_int_eq(x.heaviest_cpu, 1000);
    ck_assert(fabs(x.total - 1.0) < 1e-9);
}
END_TEST

START_TEST(cpu_only_pods_leave_the_histogram_alone)
{
    struct shapes_ctx x = {0};

    seen((struct ask){0}, 10);
    policy_each_shape(C, count_shape, &x);
    ck_assert_int_eq(x.n, 0);
    ck_assert(policy_gpu_fragmentation(C) == 0);
}
END_TEST

/* ---- gangs and the measure ------------------------------------------------ */

START_TEST(gang_members_share_one_device_and_leave_the_other_whole)
{
    struct policy_gang_spec g = {.key = "ns/g", .min_members = 3};
    struct policy_pod_spec head = {.namespace_ = "ns", .name = "head", .uid = "head",
                                   .cpu_milli = 1000, .memory_bytes = GiB, .gang = "ns/g",
                                   .gang_head = true, .managed = true};
    add_node("n", 2, NULL);
    seen((struct ask){.gpus = 1}, 30);
    ck_assert_int_eq(policy_gang_upsert(C, &g), POLICY_OK);
    ck_assert_int_eq(policy_pod_upsert(C, &head, NOW), POLICY_OK);
    for (int i = 0; i < 2; i++) {
        char name[16];
        struct policy_pod_spec w = {.namespace_ = "ns", .name = name, .uid = name,
                                    .cpu_milli = 1000, .memory_bytes = GiB,
                                    .gpu_share_milli = 500, .gang = "ns/g", .managed = true};

        snprintf(name, sizeof(name), "w%d", i);
        ck_assert_int_eq(policy_pod_upsert(C, &w, NOW), POLICY_OK);
    }
    ck_assert_str_eq(schedule("head"), "n");
    ck_assert_str_eq(schedule("w0"), "n");
    ck_assert_str_eq(schedule("w1"), "n");
    /* both halves on one device: the other is whole, so nothing is lost */
    ck_assert(fabs(policy_gpu_fragmentation(C)) < 1e-3);
}
END_TEST

START_TEST(share_on_two_devices_completes_the_open_groups)
{
    struct policy_pod_spec p = {.namespace_ = "ns", .name = "p", .uid = "p", .cpu_milli = 1000,
                                .memory_bytes = GiB, .gpu_share_milli = 500, .gpu_devices = 2,
                                .managed = true};
    struct policy_pod_view v;

    add_node("n", 4, NULL);
    running("half-1", "n", (struct ask){.share = 500}, "g0");
    running("half-2", "n", (struct ask){.share = 500}, "g1");
    seen((struct ask){.gpus = 1}, 30);
    ck_assert_int_eq(policy_pod_upsert(C, &p, NOW), POLICY_OK);
    ck_assert_str_eq(schedule("p"), "n");
    ck_assert(policy_pod_view_get(C, "ns", "p", &v));
    ck_assert_str_eq(v.gpu_groups, "g0,g1"); /* two devices left whole, none split */
    ck_assert(fabs(policy_gpu_fragmentation(C)) < 1e-3);
}
END_TEST

START_TEST(fragmentation_counts_the_half_device_whole_pods_cannot_use)
{
    add_node("n", 2, NULL);
    seen((struct ask){.gpus = 1}, 1000);
    running("half", "n", (struct ask){.share = 500}, "g0");
    /* nearly all the GPU seen asked whole devices: the free half is lost to them */
    ck_assert(fabs(policy_gpu_fragmentation(C) - 500.0) < 1.0);
}
END_TEST

/* kube-scheduler may offer prioritize a node the pod no longer fits: it scores 0 and the
 * nodes that fit keep their order (the old arithmetic spread them over a range 2^62 wide
 * and overflowed: the best node came out 1 of 10, the full one 0, and UBSan aborted). */
START_TEST(prioritize_ranks_the_nodes_that_fit_and_scores_the_full_one_zero)
{
    const char *cands[] = {"full", "split", "whole"};
    int scores[3];

    add_node("full", 1, NULL);
    add_node("split", 2, NULL);
    add_node("whole", 2, NULL);
    running("busy", "full", (struct ask){.gpus = 1}, NULL);
    running("forty", "split", (struct ask){.share = 400}, "g0");
    seen((struct ask){.gpus = 1}, 30);
    add_pod("p", (struct ask){.share = 500});
    ck_assert_int_eq(policy_prioritize(C, "ns", "p", cands, 3, NOW, scores), POLICY_OK);
    ck_assert_int_eq(scores[0], 0);
    /* the share completes split's open device; on whole it would split a device */
    ck_assert_int_eq(scores[1], POLICY_MAX_SCORE - 1);
    ck_assert_int_lt(scores[2], scores[1]);
}
END_TEST

static Suite *frag_suite(void)
{
    Suite *s = suite_create("policy_frag");
    TCase *tc;

#define CASE(name, ...)                                                                            \
    tc = tcase_create(#name);                                                                      \
    tcase_add_checked_fixture(tc, setup, teardown);                                                \
    __VA_ARGS__;                                                                                   \
    suite_add_tcase(s, tc)

    CASE(history, tcase_add_loop_test(tc, share_splits_no_device_the_pods_seen_need, 0,
                                      sizeof(history_cases) / sizeof(history_cases[0])));
    CASE(gpu_models, tcase_add_loop_test(tc, gpu_models_are_honoured_and_kept_for_who_needs_them,
                                         0, sizeof(model_cases) / sizeof(model_cases[0])));
    CASE(histogram, tcase_add_test(tc, histogram_stays_bounded_and_keeps_the_common_shape);
         tcase_add_test(tc, cpu_only_pods_leave_the_histogram_alone));
    CASE(gangs_and_measure, tcase_add_test(tc, gang_members_share_one_device_and_leave_the_other_whole);
         tcase_add_test(tc, share_on_two_devices_completes_the_open_groups);
         tcase_add_test(tc, fragmentation_counts_the_half_device_whole_pods_cannot_use);
         tcase_add_test(tc, prioritize_ranks_the_nodes_that_fit_and_scores_the_full_one_zero));
#undef CASE
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(frag_suite());
    int failed;

    srunner_run_all(sr, CK_ENV);
    failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
