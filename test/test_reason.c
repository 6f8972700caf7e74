/*
 * test_reason.c - the reason checker (reason_check.h), both ways:
 *
 * - planted: a true reason the engine gave, each of its figures changed in turn into a lie,
 *   must be caught (and the true one must pass), so a wrong reason fails a test;
 * - cases: every case table of test/cases (those test_cases.sh runs through `muster simulate`)
 *   run in-process, every filter's answer and, at the end, every pod's and gang's reason
 *   checked against the engine's state. It prints how many reasons it checked.
 */
#include <check.h>
#include <glob.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "reason_check.h"
#include "simulate_int.h"

#define GiB (INT64_C(1) << 30)

/* ---- planted lies ------------------------------------------------------------------------ */

static struct policy_cluster *C;

static void add_node(const char *name, int64_t cpu, int64_t gpus,
                     const struct policy_taint *taint)
{
    struct policy_node_spec n = {.name = name,
                                 .taints = taint,
                                 .ntaints = taint ? 1 : 0,
                                 .cpu_milli = cpu * 1000,
                                 .memory_bytes = 64 * GiB,
                                 .pods = 110,
                                 .gpus = gpus};

    ck_assert_int_eq(policy_node_upsert(C, &n), POLICY_OK);
}

static void add_pod(const char *gang, const char *name, int64_t cpu, int64_t gpus,
                    const char *queue, const char *node)
{
    struct policy_pod_spec p = {.namespace_ = "lab",
                                .name = name,
                                .uid = name,
                                .cpu_milli = cpu * 1000,
                                .memory_bytes = GiB,
                                .gpus = gpus,
                                .gang = gang,
                                .queue = queue,
                                .managed = true,
                                .node = node};

    ck_assert_int_eq(policy_pod_upsert(C, &p, 1000), POLICY_OK);
}

static void add_weighted_queue(const char *name, int64_t gpu_quota, int64_t gpu_limit,
                               int64_t weight)
{
    struct policy_queue_spec q = {.name = name};

    for (int r = 0; r < POLICY_RES_COUNT; r++) {
        q.quota.v[r] = r == POLICY_RES_GPU ? gpu_quota : -1;
        q.limit.v[r] = r == POLICY_RES_GPU ? gpu_limit : -1;
        q.over_quota_weight.v[r] = weight;
    }
    ck_assert_int_eq(policy_queue_upsert(C, &q), POLICY_OK);
}

static void add_queue(const char *name, int64_t gpu_quota, int64_t gpu_limit)
{
    add_weighted_queue(name, gpu_quota, gpu_limit, 1000);
}

static void add_gang(const char *key, int32_t min, const char *queue)
{
    struct policy_gang_spec g = {.key = key, .min_members = min, .queue = queue};

    ck_assert_int_eq(policy_gang_upsert(C, &g), POLICY_OK);
}

/* Each scene leaves one pod whose filter is refused for the kind named. */
static const struct policy_taint gpu_taint = {"gpu", "yes", POLICY_TAINT_NO_SCHEDULE};

static void scene_no_node(void)
{
    add_node("n1", 32, 2, NULL);
    add_node("n2", 32, 4, &gpu_taint);
    add_pod(NULL, "busy", 1, 1, NULL, "n1");
    add_pod(NULL, "p", 1, 2, NULL, NULL); /* 1 free on n1, n2 tainted */
}

static void scene_gang_short(void)
{
    add_node("n1", 32, 2, NULL);
    add_gang("lab/g", 3, NULL);
    for (int i = 0; i < 3; i++) {
        char name[16];

        snprintf(name, sizeof(name), "p%d", i);
        add_pod("lab/g", name, 1, 1, NULL, NULL);
    }
}

static void scene_gang_together(void)
{
    add_node("n1", 32, 2, NULL);
    add_node("n2", 32, 2, NULL);
    add_gang("lab/g", 2, NULL);
    add_pod("lab/g", "p", 1, 3, NULL, NULL); /* 4 free in all, 2 on a node */
    add_pod("lab/g", "q", 1, 1, NULL, NULL);
}

static void scene_queue(void)
{
    add_node("n1", 32, 8, NULL);
    add_queue("team", 2000, 2000);
    add_pod(NULL, "busy", 1, 1, "team", "n1");
    add_pod(NULL, "p", 1, 2, "team", NULL);
}

static void scene_members(void)
{
    add_node("n1", 32, 8, NULL);
    add_gang("lab/g", 3, NULL);
    add_pod("lab/g", "p", 1, 1, NULL, NULL);
}

/* Queues qa and qb (no quota, one weight: a fair share of 1 GPU each, both asking 2); qb's pod
 * holds n1's 2 GPUs, qa's p asks 2: no node has them, qb is over its fair share, and qa would
 * end over its own with p (victim rule 1): the own-share clause. */
static void scene_own_share(void)
{
    add_node("n1", 32, 2, NULL);
    add_queue("qa", 0, -1);
    add_queue("qb", 0, -1);
    add_pod(NULL, "busy", 1, 2, "qb", "n1");
    add_pod(NULL, "p", 1, 2, "qa", NULL);
}

/* The same queues on n1's 4 GPUs: qb holds 3 (over its fair share of 2), qa's gang of two
 * 1-GPU pods waits with 1 GPU free. qa would end at its fair share, not over it: the engine
 * says no own-share clause, and one planted is a lie. */
static void scene_own_share_fits(void)
{
    add_node("n1", 32, 4, NULL);
    add_queue("qa", 0, -1);
    add_queue("qb", 0, -1);
    add_pod(NULL, "busy", 1, 3, "qb", "n1");
    add_gang("lab/g", 2, "qa");
    add_pod("lab/g", "p0", 1, 1, "qa", NULL);
    add_pod("lab/g", "p1", 1, 1, "qa", NULL);
}

/* qb (quota 1 GPU, over-quota weight 0) holds a GPU on each of n1 and n2 (2 GPUs each): over
 * its fair share (its quota), by 1 GPU; qa (quota 0) asks 2 on one node, within its fair share
 * (2) but over its quota: victim rule 3 lets only qb's 1 GPU over its quota go, less than p
 * asks. No node has 2 free: the own-quota clause. */
static void scene_own_quota(void)
{
    add_node("n1", 32, 2, NULL);
    add_node("n2", 32, 2, NULL);
    add_queue("qa", 0, -1);
    add_weighted_queue("qb", 1000, -1, 0);
    add_pod(NULL, "busy1", 1, 1, "qb", "n1");
    add_pod(NULL, "busy2", 1, 1, "qb", "n2");
    add_pod(NULL, "p", 1, 2, "qa", NULL);
}

/* A lie told of a true reason: one figure changed. */
typedef void (*lie_fn)(struct policy_reason *r);

static void more_nodes(struct policy_reason *r) { r->nodes++; }
static void gpu_check_to_cpu(struct policy_reason *r)
{
    r->failing[POLICY_CHECK_CPU] += r->failing[POLICY_CHECK_GPU];
    r->failing[POLICY_CHECK_GPU] = 0;
}
static void more_free(struct policy_reason *r) { r->most_free.v[POLICY_RES_GPU] += 1000; }
static void says_never(struct policy_reason *r) { r->never = !r->never; }
static void more_free_room(struct policy_reason *r) { r->free.v[POLICY_RES_GPU] += 2000; }
static void needs_less(struct policy_reason *r) { r->need.v[POLICY_RES_GPU] = 1000; }
static void misses_more(struct policy_reason *r) { r->want++; }
static void used_less(struct policy_reason *r) { r->used -= 1000; }
static void asks_less(struct policy_reason *r) { r->asked = 1000; }
static void cap_more(struct policy_reason *r) { r->cap += 1000; }
static void have_more(struct policy_reason *r) { r->have++; }
static void other_queue(struct policy_reason *r) { r->queue = "elsewhere"; }
static void own_asks_less(struct policy_reason *r) { r->own_asked = 500; }
static void own_is_holder(struct policy_reason *r) { r->own_queue = "qb"; }
static void own_uses_more(struct policy_reason *r) { r->own_used += 1000; }
static void own_over_when_not(struct policy_reason *r)
{
    r->own_queue = "qa";
    r->own_resource = POLICY_RES_GPU;
    r->own_used = 0;
    r->own_fair = 2000;
    r->own_asked = 3000;
}

static void quota_asks_less(struct policy_reason *r) { r->quota_asked = 0; }
static void quota_is_holder(struct policy_reason *r) { r->quota_queue = "qb"; }
static void quota_uses_more(struct policy_reason *r) { r->quota_used += 1000; }
static void quota_over_when_not(struct policy_reason *r)
{
    r->quota_queue = "qa";
    r->quota_used = 0;
    r->quota_of = 4000;
    r->quota_asked = 3000;
}

static const struct lie_case {
    const char *what;
    void (*scene)(void);
    const char *pod;
    enum policy_reason_kind kind;
    lie_fn lie;
} lie_cases[] = {
    {"no-node: a node more", scene_no_node, "p", POLICY_REASON_NO_NODE, more_nodes},
    {"no-node: GPU said cpu", scene_no_node, "p", POLICY_REASON_NO_NODE, gpu_check_to_cpu},
    {"no-node: more free", scene_no_node, "p", POLICY_REASON_NO_NODE, more_free},
    {"no-node: never", scene_no_node, "p", POLICY_REASON_NO_NODE, says_never},
    {"gang-room: more free", scene_gang_short, "p0", POLICY_REASON_GANG_ROOM, more_free_room},
    {"gang-room: needs less", scene_gang_short, "p0", POLICY_REASON_GANG_ROOM, needs_less},
    {"gang-room: misses more", scene_gang_short, "p0", POLICY_REASON_GANG_ROOM, misses_more},
    {"gang-room: never", scene_gang_short, "p0", POLICY_REASON_GANG_ROOM, says_never},
    {"gang-room: together, never", scene_gang_together, "p", POLICY_REASON_GANG_ROOM, says_never},
    {"queue-limit: used less", scene_queue, "p", POLICY_REASON_QUEUE_LIMIT, used_less},
    {"queue-limit: asks less", scene_queue, "p", POLICY_REASON_QUEUE_LIMIT, asks_less},
    {"queue-limit: limit more", scene_queue, "p", POLICY_REASON_QUEUE_LIMIT, cap_more},
    {"queue-limit: never", scene_queue, "p", POLICY_REASON_QUEUE_LIMIT, says_never},
    {"queue-limit: another queue", scene_queue, "p", POLICY_REASON_QUEUE_LIMIT, other_queue},
    {"members: one more", scene_members, "p", POLICY_REASON_MEMBERS, have_more},
    {"own share: asks less", scene_own_share, "p", POLICY_REASON_NO_NODE, own_asks_less},
    {"own share: the holder", scene_own_share, "p", POLICY_REASON_NO_NODE, own_is_holder},
    {"own share: uses more", scene_own_share, "p", POLICY_REASON_NO_NODE, own_uses_more},
    {"own share: said, fits", scene_own_share_fits, "p0", POLICY_REASON_GANG_ROOM,
     own_over_when_not},
    {"own quota: asks less", scene_own_quota, "p", POLICY_REASON_NO_NODE, quota_asks_less},
    {"own quota: the holder", scene_own_quota, "p", POLICY_REASON_NO_NODE, quota_is_holder},
    {"own quota: uses more", scene_own_quota, "p", POLICY_REASON_NO_NODE, quota_uses_more},
    {"own quota: said, within", scene_own_share_fits, "p0", POLICY_REASON_GANG_ROOM,
     quota_over_when_not},
};

static void lie_setup(void)
{
    struct policy_options o = {.strategy = POLICY_BINPACK, .no_reclaim = true,
                               .no_preemption = true};

    C = policy_cluster_new(&o);
    ck_assert_ptr_nonnull(C);
}

static void lie_teardown(void)
{
    policy_cluster_free(C);
    C = NULL;
}

START_TEST(a_true_reason_passes_and_each_lie_is_caught)
{
    const struct lie_case *t = &lie_cases[_i];
    const char *names[] = {"n1", "n2"};
    struct policy_filter_result fr;
    struct rc_stats truth = {0}, lie = {0}, words = {0};
    struct policy_reason told;

    t->scene();
    ck_assert_int_eq(policy_filter(C, "lab", t->pod, names, policy_node_known(C, "n2") ? 2 : 1,
                                   2000, &fr),
                     POLICY_OK);
    ck_assert_msg(fr.why && fr.why->kind == t->kind, "%s: %s", t->what,
                  fr.reason ? fr.reason : "fits");
    ck_assert_msg(t->scene != scene_own_quota ||
                      (fr.why->quota_queue && !fr.why->own_queue &&
                       strstr(fr.reason, "but queue qa would end over its quota of 0 GPUs (0 GPUs "
                                         "in use, 2 GPUs asked): only what queue qb holds over "
                                         "its quota (1 GPU) may be taken")),
                  "%s: no own-quota clause: %s", t->what, fr.reason);
    rc_check(C, fr.why, fr.reason, NULL, 0, &truth);
    ck_assert_msg(truth.checked == 1 && truth.violations == 0, "%s: the truth fails: %s", t->what,
                  truth.first);
    told = *fr.why;
    t->lie(&told);
    rc_check(C, &told, NULL, NULL, 0, &lie);
    ck_assert_msg(lie.violations == 1, "%s: the lie passes: %s", t->what, fr.reason);
    /* words that are not the figures' are a lie too */
    rc_check(C, fr.why, "no node has a free GPU", NULL, 0, &words);
    ck_assert_uint_eq(words.violations, 1);
    policy_filter_result_cleanup(&fr);
}
END_TEST

/* A gang that fits is not said not to fit together: the checker's own search places it. */
START_TEST(a_gang_that_fits_is_not_said_not_to)
{
    struct policy_reason r = {.kind = POLICY_REASON_GANG_ROOM, .gang = "lab/g", .want = 2,
                              .resource = -1, .held_resource = -1, .limit_resource = -1,
                              .holder_quota = -1, .quotas = -1};
    struct rc_stats st = {0};

    add_node("n1", 32, 4, NULL);
    add_gang("lab/g", 2, NULL);
    add_pod("lab/g", "p0", 1, 1, NULL, NULL);
    add_pod("lab/g", "p1", 1, 1, NULL, NULL);
    r.nodes = 1;
    r.need.v[POLICY_RES_CPU] = 2000;
    r.need.v[POLICY_RES_MEMORY] = 2 * GiB;
    r.need.v[POLICY_RES_GPU] = 2000;
    r.free = (struct policy_resources){{32000, 64 * GiB, 4000}};
    rc_check(C, &r, NULL, NULL, 0, &st);
    ck_assert_msg(st.violations == 1 && strstr(st.first, "its minimum fits"), "%s", st.first);
}
END_TEST

/* Queue team (GPU limit `limit`) holds 1 GPU on n1 (4 GPUs); gang lab/g of minMember 2 waits
 * with pods of 1, 1 and 2 GPUs. r gets the figures of its gang-room reason as the engine
 * gives them (the two least members, the free room of n1). */
static void count_gang_beside_busy(int64_t limit, struct policy_reason *r)
{
    add_node("n1", 32, 4, NULL);
    add_queue("team", -1, limit);
    add_pod(NULL, "busy", 1, 1, "team", "n1");
    add_gang("lab/g", 2, "team");
    add_pod("lab/g", "p0", 1, 1, "team", NULL);
    add_pod("lab/g", "p1", 1, 1, "team", NULL);
    add_pod("lab/g", "p2", 1, 2, "team", NULL);
    r->nodes = 1;
    r->need.v[POLICY_RES_CPU] = 2000;
    r->need.v[POLICY_RES_MEMORY] = 2 * GiB;
    r->need.v[POLICY_RES_GPU] = 2000;
    r->free = (struct policy_resources){{31000, 63 * GiB, 3000}};
}

/* Within its queue's limit the checker's search still places a gang that fits (limit 3: the
 * two 1-GPU members beside the 1 GPU in use); a way its queue's limit refuses is no way
 * (limit 2: any two members ask 2 GPUs or more on top of the 1 in use), so "do not fit
 * together" is true there (bench_eviction_model seed 17154 once said otherwise). */
START_TEST(a_way_over_the_queue_limit_is_no_way)
{
    int64_t limit = _i ? 2000 : 3000;
    struct policy_reason r = {.kind = POLICY_REASON_GANG_ROOM, .gang = "lab/g", .want = 2,
                              .resource = -1, .held_resource = -1, .limit_resource = -1,
                              .holder_quota = -1, .quotas = -1};
    struct rc_stats st = {0};

    count_gang_beside_busy(limit, &r);
    rc_check(C, &r, NULL, NULL, 0, &st);
    if (limit == 3000)
        ck_assert_msg(st.violations == 1 && strstr(st.first, "its minimum fits"), "%s",
                      st.first);
    else
        ck_assert_msg(st.checked == 1 && st.violations == 0 && st.undecided == 0, "%s",
                      st.first);
}
END_TEST

/* The gang-room reason's "a heavier choice ... over queue team's limit" is checked too: true
 * as the engine says it (3 GPUs on top of 1 in use, limit 2); a choice that would fit under
 * the limit, or a limit the queue does not have, is caught. */
START_TEST(an_over_limit_clause_is_checked)
{
    struct policy_reason r = {.kind = POLICY_REASON_GANG_ROOM, .gang = "lab/g", .want = 2,
                              .resource = -1, .held_resource = -1, .holder_quota = -1,
                              .quotas = -1, .queue = "team", .limit_resource = POLICY_RES_GPU,
                              .cap = _i == 2 ? 3000 : 2000, .used = 1000,
                              .asked = _i == 1 ? 1000 : 3000};
    struct rc_stats st = {0};

    count_gang_beside_busy(2000, &r);
    rc_check(C, &r, NULL, NULL, 0, &st);
    if (_i == 0)
        ck_assert_msg(st.checked == 1 && st.violations == 0 && st.undecided == 0, "%s",
                      st.first);
    else
        ck_assert_msg(st.violations == 1 && strstr(st.first, _i == 1 ? "has room for 1000 more" : "limit 2"),
                      "%s", st.first);
}
END_TEST

/* ---- every case table ------------------------------------------------------------------- */

struct case_run {
    struct rc_stats st;
    const char *name;
    char first[1200]; /* the first case and violation */
};

static void on_filter(void *ctx, struct policy_cluster *c, const struct policy_filter_result *f,
                      const char *const *nodes, size_t n)
{
    struct case_run *run = ctx;
    uint64_t before = run->st.violations;

    rc_check(c, f->why, f->reason, nodes, n, &run->st);
    if (run->st.violations > before && !run->first[0])
        snprintf(run->first, sizeof(run->first), "%s: %s", run->name, run->st.first);
}

static void on_finish(void *ctx, struct policy_cluster *c)
{
    struct case_run *run = ctx;
    uint64_t before = run->st.violations;

    rc_check_views(c, &run->st);
    if (run->st.violations > before && !run->first[0])
        snprintf(run->first, sizeof(run->first), "%s (at the end): %s", run->name,
                 run->st.first);
}

/* The case's `# args:` and `# skip:` header lines. */
static bool case_args(const char *path, char *args, size_t len)
{
    FILE *f = fopen(path, "r");
    char line[512];
    bool skip = false;

    args[0] = '\0';
    while (f && fgets(line, sizeof(line), f) && line[0] == '#') {
        line[strcspn(line, "\n")] = '\0';
        if (strncmp(line, "# args: ", 8) == 0)
            snprintf(args + strlen(args), len - strlen(args), " %s", line + 8);
        skip = skip || strncmp(line, "# skip:", 7) == 0;
    }
    if (f)
        fclose(f);
    return !skip;
}

static int run_case(const char *path, struct case_run *run)
{
    struct sim_hooks hooks = {on_filter, on_finish, run};
    char args[512], *argv[32] = {"simulate", "-f", (char *)path}, *save = NULL;
    int argc = 3;

    if (!case_args(path, args, sizeof(args)))
        return -1;
    for (char *a = strtok_r(args, " ", &save); a && argc < 31; a = strtok_r(NULL, " ", &save))
        argv[argc++] = a;
    argv[argc] = NULL;
    run->name = path + strlen(CASES) + 1;
    return sim_main(argc, argv, &hooks);
}

START_TEST(every_reason_of_every_case_is_true)
{
    static const char *const patterns[] = {CASES "/*/*.yaml", CASES "/*/*/*.yaml"};
    struct case_run run = {0};
    size_t cases = 0, skipped = 0;

    for (size_t p = 0; p < sizeof(patterns) / sizeof(patterns[0]); p++) {
        glob_t g;

        if (glob(patterns[p], 0, NULL, &g) != 0)
            continue;
        for (size_t i = 0; i < g.gl_pathc; i++) {
            int rc = run_case(g.gl_pathv[i], &run);

            if (rc < 0) {
                skipped++;
                continue;
            }
            ck_assert_msg(rc == 0, "%s: muster simulate exits %d", g.gl_pathv[i], rc);
            cases++;
        }
        globfree(&g);
    }
    printf("test_reason: %zu cases (%zu skipped): ", cases, skipped);
    rc_print(&run.st, stdout);
    ck_assert_uint_gt(cases, 100);
    ck_assert_uint_gt(run.st.checked, 500);
    ck_assert_msg(run.st.violations == 0, "%llu violations; first: %s",
                  (unsigned long long)run.st.violations, run.first);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("reason");
    TCase *planted = tcase_create("planted"), *cases = tcase_create("cases");
    SRunner *sr;
    int failed;

    tcase_add_checked_fixture(planted, lie_setup, lie_teardown);
    tcase_add_loop_test(planted, a_true_reason_passes_and_each_lie_is_caught, 0,
                        sizeof(lie_cases) / sizeof(lie_cases[0]));
    tcase_add_test(planted, a_gang_that_fits_is_not_said_not_to);
    tcase_add_loop_test(planted, a_way_over_the_queue_limit_is_no_way, 0, 2);
    tcase_add_loop_test(planted, an_over_limit_clause_is_checked, 0, 3);
    suite_add_tcase(s, planted);
    tcase_set_timeout(cases, 600);
    tcase_add_test(cases, every_reason_of_every_case_is_true);
    suite_add_tcase(s, cases);
    sr = srunner_create(s);
    srunner_run_all(sr, CK_ENV);
    failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
