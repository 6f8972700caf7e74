/* test_policy.c - the scheduling engine, driven as kube-scheduler drives it. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "policy.h"
#include "xorshift.h"
#include "reason_check.h"

#define GiB (1LL << 30)

/* ---- fixtures: a small cluster built in memory --------------------------- */

static struct policy_cluster *C;
static int64_t NOW;
static enum policy_strategy STRATEGY;
/* Every reason a filter gives in these tests is checked against the state it is given in
 * (reason_check.h); a false one fails the test. */
static struct rc_stats REASONS;

static void check_reason(const struct policy_filter_result *fr, const char *const *names,
                         size_t n)
{
    size_t fits = 0;

    rc_check(C, fr->why, fr->reason, names, n, &REASONS);
    ck_assert_msg(REASONS.violations == 0, "a false reason: %s", REASONS.first);
    /* The shipped KubeSchedulerConfiguration has no prioritizeVerb because of this: with one
     * node left after the filters, kube-scheduler skips scoring (docs/bench.md, issue 26). */
    for (size_t i = 0; i < fr->n; i++)
        fits += fr->verdicts[i].fit == POLICY_FITS;
    ck_assert_msg(fits <= 1, "a filter passed %zu nodes: muster's filter passes the planned node "
                  "alone", fits);
}

/* ... and every reason the engine shows now: each pod's and each gang's view. */
static void check_views(void)
{
    rc_check_views(C, &REASONS);
    ck_assert_msg(REASONS.violations == 0, "a false reason shown: %s", REASONS.first);
}

static void setup_with(enum policy_strategy s)
{
    struct policy_options o = {.strategy = s, .plan_ttl_ms = 60000};

    STRATEGY = s;
    C = policy_cluster_new(&o);
    ck_assert_ptr_nonnull(C);
    NOW = 1000;
}

static void setup(void)
{
    setup_with(POLICY_BINPACK);
}

static void setup_fragmentation(void)
{
    setup_with(POLICY_FRAGMENTATION);
}

static void teardown(void)
{
    policy_cluster_free(C);
    C = NULL;
}

static void add_node(const char *name, int64_t cpu, int64_t gpus)
{
    static const struct policy_label labels[] = {{"nvidia.com/gpu.memory", "81920"}};
    struct policy_node_spec n = {.name = name,
                                 .labels = labels,
                                 .nlabels = 1,
                                 .cpu_milli = cpu * 1000,
                                 .memory_bytes = 512 * GiB,
                                 .pods = 110,
                                 .gpus = gpus,
                                 .gpu_memory_mib = 81920};

    ck_assert_int_eq(policy_node_upsert(C, &n), POLICY_OK);
}

static void add_queue(const char *name, const char *parent, int64_t gpu_quota, int64_t gpu_limit)
{
    struct policy_queue_spec q = {.name = name, .parent = parent};

    for (int r = 0; r < POLICY_RES_COUNT; r++) {
        q.quota.v[r] = -1;
        q.limit.v[r] = -1;
        q.over_quota_weight.v[r] = 1;
    }
    q.quota.v[POLICY_RES_GPU] = gpu_quota;
    q.limit.v[POLICY_RES_GPU] = gpu_limit;
    ck_assert_int_eq(policy_queue_upsert(C, &q), POLICY_OK);
}

struct pod_ask {
    const char *name;
    int64_t cpu;   /* cores */
    int64_t gpus;  /* whole */
    int32_t share; /* milli */
    bool head;
    const char *sub;  /* its subgroup */
    int32_t priority;
};

static void add_pod(const char *ns, const char *gang, const char *queue, struct pod_ask a)
{
    char uid[128];
    struct policy_pod_spec p = {.namespace_ = ns,
                                .name = a.name,
                                .uid = uid,
                                .cpu_milli = a.cpu * 1000,
                                .memory_bytes = 4 * GiB,
                                .gpus = a.gpus,
                                .gpu_share_milli = a.share,
                                .gang = gang,
                                .gang_head = a.head,
                                .subgroup = a.sub,
                                .priority = a.priority,
                                .queue = queue,
                                .managed = true};

    snprintf(uid, sizeof(uid), "uid-%s-%s", ns, a.name);
    ck_assert_int_eq(policy_pod_upsert(C, &p, NOW), POLICY_OK);
}

/* A RayCluster's composition: subgroups "name=min" in subs. */
static void add_composed_gang(const char *key, enum policy_gang_source src, const char *queue,
                              const struct policy_subgroup_spec *subs, size_t n)
{
    struct policy_gang_spec g = {
        .key = key, .subgroups = subs, .nsubgroups = n, .queue = queue, .source = src};

    for (size_t i = 0; i < n; i++)
        g.min_members += subs[i].min_members;
    ck_assert_int_eq(policy_gang_upsert(C, &g), POLICY_OK);
}

static void add_gang(const char *key, int32_t min, const char *queue)
{
    struct policy_gang_spec g = {.key = key, .min_members = min, .queue = queue};

    ck_assert_int_eq(policy_gang_upsert(C, &g), POLICY_OK);
}

/* All node names, as kube-scheduler would offer them. */
struct names_ctx {
    const char **out;
    size_t n, max;
};

static void collect_name(const struct policy_node_view *v, void *p)
{
    struct names_ctx *x = p;

    if (x->n < x->max)
        x->out[x->n++] = v->name;
}

static size_t node_names(const char **out, size_t max)
{
    struct names_ctx ctx = {out, 0, max};

    policy_each_node(C, collect_name, &ctx);
    return ctx.n;
}

/* kube-scheduler's cycle for one pod: filter, pick, bind. Returns the outcome. */
static enum policy_bind_outcome schedule(const char *ns, const char *name, char *why, size_t len)
{
    const char *names[64];
    size_t n = node_names(names, 64);
    struct policy_filter_result fr;
    struct policy_bind_result br;
    const char *chosen = NULL;
    enum policy_bind_outcome out;

    ck_assert_int_eq(policy_filter(C, ns, name, names, n, NOW, &fr), POLICY_OK);
    check_reason(&fr, names, n);
    for (size_t i = 0; i < n && !chosen; i++)
        if (fr.verdicts[i].fit == POLICY_FITS)
            chosen = names[i];
    if (!chosen) {
        snprintf(why, len, "%s", fr.reason ? fr.reason : "");
        policy_filter_result_cleanup(&fr);
        return POLICY_BIND_REJECT;
    }
    policy_filter_result_cleanup(&fr);
    ck_assert_int_eq(policy_bind(C, ns, name, chosen, NOW, &br), POLICY_OK);
    out = br.outcome;
    snprintf(why, len, "%s", br.reason ? br.reason : "");
    for (size_t i = 0; out == POLICY_BIND_COMMIT && i < br.n; i++)
        ck_assert_int_eq(policy_bind_done(C, br.members[i].namespace_, br.members[i].name, true,
                                          NULL),
                         POLICY_OK);
    policy_bind_result_cleanup(&br);
    return out;
}

static enum policy_pod_phase phase_of(const char *ns, const char *name)
{
    struct policy_pod_view v;

    ck_assert(policy_pod_view_get(C, ns, name, &v));
    return v.phase;
}

static const char *node_of(const char *ns, const char *name)
{
    struct policy_pod_view v;

    ck_assert(policy_pod_view_get(C, ns, name, &v));
    return v.node;
}

/* ---- invariants over the whole engine ------------------------------------ */

/* What the pods that stay (not being evicted) hold on one node. */
struct node_use {
    const char *node;
    int64_t cpu, memory, pods, whole;
    int32_t group_used[64];
};

static void add_pod_use(const struct policy_pod_view *v, void *ctx)
{
    struct node_use *u = ctx;
    const char *g;

    if (!v->node || strcmp(v->node, u->node) != 0 || v->phase == POLICY_POD_EVICTING)
        return;
    u->cpu += v->cpu_milli;
    u->memory += v->memory_bytes;
    u->pods++;
    u->whole += v->gpus;
    for (g = v->gpu_groups; g && *g;) {
        int id = atoi(g + 1);

        ck_assert_int_lt(id, 64);
        u->group_used[id] += v->gpu_share_milli;
        g = strchr(g, ',');
        g = g ? g + 1 : NULL;
    }
}

/* Evicted pods keep their node until they are gone, and the gang they make room for is
 * planned on top of them: a node is checked on what stays. */
static void check_node(const struct policy_node_view *v, void *ctx)
{
    struct node_use u = {.node = v->name};
    int64_t shared = 0;

    policy_each_pod(C, add_pod_use, &u);
    ck_assert_int_le(u.cpu, v->cpu_milli);
    ck_assert_int_le(u.memory, v->memory_bytes);
    ck_assert_int_le(u.pods, v->pods);
    for (size_t i = 0; i < 64; i++) {
        ck_assert_int_le(u.group_used[i], POLICY_GPU_MILLI);
        shared += u.group_used[i] > 0;
    }
    ck_assert_int_le(u.whole + shared, v->gpus);
    (void)ctx;
}

static void dump_member(const struct policy_pod_view *v, void *ctx)
{
    if (strcmp(v->gang, (const char *)ctx) == 0)
        fprintf(stderr, "  %s %s node=%s reason=%s\n", v->name, policy_pod_phase_name(v->phase),
                v->node ? v->node : "-", v->reason ? v->reason : "-");
}

static void check_gang(const struct policy_gang_view *v, void *ctx)
{
    if (v->bound != 0 && v->bound < v->min_members) {
        fprintf(stderr, "gang %s partly bound:\n", v->key);
        policy_each_pod(C, dump_member, (void *)v->key);
    }
    /* No gang partly bound: either none, or at least its minimum. */
    ck_assert_msg(v->bound == 0 || v->bound >= v->min_members,
                  "gang %s partly bound: %d of %d", v->key, v->bound, v->min_members);
    /* No subgroup below its minimum while its gang counts as placed. */
    for (size_t s = 0; v->state != POLICY_GANG_PENDING && s < v->nsubgroups; s++)
        ck_assert_msg(v->subgroups[s].placed >= v->subgroups[s].min_members,
                      "gang %s is %s with subgroup %s at %d of %d", v->key,
                      policy_gang_state_name(v->state), v->subgroups[s].name,
                      v->subgroups[s].placed, v->subgroups[s].min_members);
    (void)ctx;
}

static void check_queue(const struct policy_queue_view *v, void *ctx)
{
    for (int r = 0; r < POLICY_RES_COUNT; r++)
        if (v->limit.v[r] >= 0)
            ck_assert_int_le(v->allocated.v[r] + v->reserved.v[r], v->limit.v[r]);
    (void)ctx;
}

static void check_invariants(void)
{
    policy_each_node(C, check_node, NULL);
    policy_each_gang(C, check_gang, NULL);
    policy_each_queue(C, check_queue, NULL);
}

/* ---- the walkthrough's experiments --------------------------------------- */

START_TEST(walkthrough_demo_three_pods_one_node)
{
    char why[512];

    add_node("gpu-lab-worker", 32, 8);
    add_gang("kuberay-lab/demo", 3, NULL);
    add_pod("kuberay-lab", "kuberay-lab/demo", NULL, (struct pod_ask){"demo-head", 2, 0, 0, true});
    add_pod("kuberay-lab", "kuberay-lab/demo", NULL, (struct pod_ask){"demo-workers-worker-0", 2, 1});
    add_pod("kuberay-lab", "kuberay-lab/demo", NULL, (struct pod_ask){"demo-workers-worker-1", 2, 1});

    ck_assert_int_eq(schedule("kuberay-lab", "demo-head", why, sizeof(why)), POLICY_BIND_WAIT);
    ck_assert_str_eq(why, "gang kuberay-lab/demo: 1 of 3 members at bind or bound; waiting for "
                          "demo-workers-worker-0, demo-workers-worker-1");
    ck_assert_int_eq(schedule("kuberay-lab", "demo-workers-worker-0", why, sizeof(why)),
                     POLICY_BIND_WAIT);
    ck_assert_int_eq(phase_of("kuberay-lab", "demo-head"), POLICY_POD_WAITING);
    ck_assert_int_eq(schedule("kuberay-lab", "demo-workers-worker-1", why, sizeof(why)),
                     POLICY_BIND_COMMIT);
    ck_assert_int_eq(phase_of("kuberay-lab", "demo-head"), POLICY_POD_BOUND);
    ck_assert_int_eq(phase_of("kuberay-lab", "demo-workers-worker-0"), POLICY_POD_BOUND);
    ck_assert_str_eq(node_of("kuberay-lab", "demo-workers-worker-1"), "gpu-lab-worker");
    check_invariants();
}
END_TEST

static void fractional_gang(void)
{
    add_node("gpu-lab-worker", 32, 8);
    add_gang("lab/frac", 5, "team-a");
    add_pod("lab", "lab/frac", "team-a", (struct pod_ask){"frac-head", 1, 1, 0, true});
    for (int i = 0; i < 4; i++) {
        char name[32];

        snprintf(name, sizeof(name), "frac-workers-worker-%d", i);
        add_pod("lab", "lab/frac", "team-a", (struct pod_ask){name, 1, 0, 500});
    }
}

START_TEST(walkthrough_gang_bigger_than_its_queue_waits_whole)
{
    struct policy_gang_view g;
    char why[512];

    add_queue("team-a", NULL, 2000, 2000);
    fractional_gang();
    ck_assert_int_eq(schedule("lab", "frac-head", why, sizeof(why)), POLICY_BIND_REJECT);
    ck_assert_str_eq(why, "queue team-a: limit 2 GPUs, 0 GPUs in use, the gang needs 3 GPUs; "
                          "never: more than the limit");
    ck_assert(policy_gang_view_get(C, "lab/frac", &g));
    ck_assert_int_eq(g.state, POLICY_GANG_PENDING);
    ck_assert_int_eq(g.bound, 0);
    ck_assert_int_eq(phase_of("lab", "frac-workers-worker-3"), POLICY_POD_PENDING);
    check_invariants();
}
END_TEST

static void count_devices(const struct policy_node_view *v, void *ctx)
{
    *(int64_t *)ctx += v->gpus_whole_used + (int64_t)v->ngroups;
}

START_TEST(walkthrough_gang_fits_on_exactly_three_devices)
{
    char why[512];
    int64_t devices = 0;
    const char *order[] = {"frac-head", "frac-workers-worker-0", "frac-workers-worker-1",
                           "frac-workers-worker-2", "frac-workers-worker-3"};

    add_queue("team-a", NULL, 3000, 3000);
    fractional_gang();
    for (int i = 0; i < 5; i++)
        ck_assert_int_eq(schedule("lab", order[i], why, sizeof(why)),
                         i < 4 ? POLICY_BIND_WAIT : POLICY_BIND_COMMIT);
    policy_each_node(C, count_devices, &devices);
    ck_assert_int_eq(devices, 3);
    check_invariants();
}
END_TEST

START_TEST(walkthrough_two_gangs_of_six_on_eight_gpus)
{
    char why[512], name[32];
    struct policy_gang_view a, b;

    add_node("gpu-lab-worker", 64, 8);
    add_gang("lab/a", 6, NULL);
    add_gang("lab/b", 6, NULL);
    for (int i = 0; i < 6; i++) {
        snprintf(name, sizeof(name), "a-%d", i);
        add_pod("lab", "lab/a", NULL, (struct pod_ask){name, 1, 1, 0, i == 0});
        snprintf(name, sizeof(name), "b-%d", i);
        add_pod("lab", "lab/b", NULL, (struct pod_ask){name, 1, 1, 0, i == 0});
    }
    /* Interleaved as kube-scheduler might pull them from its queue. */
    for (int i = 0; i < 6; i++) {
        snprintf(name, sizeof(name), "a-%d", i);
        schedule("lab", name, why, sizeof(why));
        snprintf(name, sizeof(name), "b-%d", i);
        ck_assert_int_eq(schedule("lab", name, why, sizeof(why)), POLICY_BIND_REJECT);
        check_invariants();
    }
    /* What b misses, against what is free (issue 21: not "no node has a free GPU" of a member
     * the trial plan ran out of room for, with 2 GPUs free). */
    ck_assert_str_eq(why, "gang lab/b: the 6 members its minimum misses ask 6 GPUs together, the "
                          "nodes they may use have 2 GPUs free");
    ck_assert(policy_gang_view_get(C, "lab/a", &a));
    ck_assert(policy_gang_view_get(C, "lab/b", &b));
    ck_assert_int_eq(a.bound, 6);
    ck_assert_int_eq(b.bound, 0);
    ck_assert_int_eq(b.state, POLICY_GANG_PENDING);

    /* Delete the first: the second binds whole. */
    for (int i = 0; i < 6; i++) {
        snprintf(name, sizeof(name), "a-%d", i);
        ck_assert_int_eq(policy_pod_forget(C, "lab", name), POLICY_OK);
    }
    for (int i = 0; i < 6; i++) {
        snprintf(name, sizeof(name), "b-%d", i);
        schedule("lab", name, why, sizeof(why));
    }
    ck_assert(policy_gang_view_get(C, "lab/b", &b));
    ck_assert_int_eq(b.bound, 6);
    check_invariants();
}
END_TEST

/* ---- GPU accounting in milli-units --------------------------------------- */

static const struct {
    int32_t shares[4];
    int n;
    int64_t devices; /* on a 1-GPU node; -1: the last does not fit */
} share_cases[] = {
    {{333, 333, 333}, 3, 1},
    {{500, 500, 1}, 3, -1},
    {{500, 500}, 2, 1},
    {{999, 1}, 2, 1},
    {{700, 400}, 2, -1},
    {{250, 250, 250, 250}, 4, 1},
};

START_TEST(shares_are_exact_milli_units)
{
    char why[512], name[16];
    int64_t devices = 0;
    int last = share_cases[_i].n - 1;

    add_node("n1", 32, 1);
    for (int k = 0; k < share_cases[_i].n; k++) {
        snprintf(name, sizeof(name), "p%d", k);
        add_pod("ns", NULL, NULL, (struct pod_ask){name, 1, 0, share_cases[_i].shares[k]});
        ck_assert_int_eq(schedule("ns", name, why, sizeof(why)),
                         k == last && share_cases[_i].devices < 0 ? POLICY_BIND_REJECT
                                                                  : POLICY_BIND_COMMIT);
    }
    policy_each_node(C, count_devices, &devices);
    ck_assert_int_eq(devices, 1);
    check_invariants();
}
END_TEST

START_TEST(whole_gpus_take_free_devices_only)
{
    char why[512];

    add_node("n1", 32, 2);
    add_pod("ns", NULL, NULL, (struct pod_ask){"half", 1, 0, 500});
    ck_assert_int_eq(schedule("ns", "half", why, sizeof(why)), POLICY_BIND_COMMIT);
    add_pod("ns", NULL, NULL, (struct pod_ask){"two", 1, 2, 0});
    ck_assert_int_eq(schedule("ns", "two", why, sizeof(why)), POLICY_BIND_REJECT);
    /* Issue 21: the node has a free GPU, not the two it asks. */
    ck_assert_str_eq(why, "member two (2 GPUs): no node has 2 GPUs free (at most 1 GPU on a node "
                          "it may use)");
    add_pod("ns", NULL, NULL, (struct pod_ask){"one", 1, 1, 0});
    ck_assert_int_eq(schedule("ns", "one", why, sizeof(why)), POLICY_BIND_COMMIT);
    check_invariants();
}
END_TEST

/* ---- invalid asks -------------------------------------------------------- */

static const struct {
    int64_t gpus;
    int32_t share;
    const char *invalid;
    const char *why;
} invalid_cases[] = {
    {1, 500, NULL, "asks both whole GPUs (nvidia.com/gpu: 1) and a GPU share"},
    {0, 1500, NULL, "gpu-fraction 1.500 is outside (0, 1)"},
    {0, 1000, NULL, "gpu-fraction 1.000 is outside (0, 1)"},
    {0, 0, "gpu-fraction \"abc\" is not a number", "gpu-fraction \"abc\" is not a number"},
};

START_TEST(invalid_asks_say_why_and_are_unresolvable)
{
    struct policy_pod_spec p = {.namespace_ = "ns",
                                .name = "bad",
                                .uid = "u1",
                                .gpus = invalid_cases[_i].gpus,
                                .gpu_share_milli = invalid_cases[_i].share,
                                .invalid = invalid_cases[_i].invalid,
                                .managed = true};
    const char *names[] = {"n1"};
    struct policy_filter_result fr;

    add_node("n1", 32, 8);
    ck_assert_int_eq(policy_pod_upsert(C, &p, NOW), POLICY_OK);
    ck_assert_int_eq(policy_filter(C, "ns", "bad", names, 1, NOW, &fr), POLICY_OK);
    ck_assert_int_eq(fr.verdicts[0].fit, POLICY_UNRESOLVABLE);
    ck_assert_str_eq(fr.reason, invalid_cases[_i].why);
    policy_filter_result_cleanup(&fr);
}
END_TEST

/* ---- gangs: members, barrier, expiry ------------------------------------- */

/* KubeRay writes a scheduler-plugins PodGroup once; the RayCluster is the fresher word. */
START_TEST(workload_wins_over_a_podgroup_count_and_the_mismatch_is_said)
{
    struct policy_gang_spec pg = {.key = "lab/sp", .min_members = 3, .source = POLICY_GANG_PODGROUP};
    struct policy_gang_view g;
    char why[512];

    add_node("n1", 32, 8);
    ck_assert_int_eq(policy_gang_upsert(C, &pg), POLICY_OK);
    ck_assert(policy_gang_view_get(C, "lab/sp", &g));
    ck_assert_int_eq(g.min_members, 3);
    ck_assert_ptr_null(g.conflict);
    add_gang("lab/sp", 2, NULL); /* the RayCluster */
    ck_assert(policy_gang_view_get(C, "lab/sp", &g));
    ck_assert_int_eq(g.min_members, 2);
    ck_assert_str_eq(g.conflict,
                     "PodGroup lab/sp 3 disagrees with RayCluster lab/sp 2, which muster follows");
    add_pod("lab", "lab/sp", NULL, (struct pod_ask){"sp-head", 1, 0, 0, true});
    ck_assert_int_eq(schedule("lab", "sp-head", why, sizeof(why)), POLICY_BIND_REJECT);
    ck_assert_str_eq(why, "gang lab/sp: 1 of 2 members exist");
    /* The RayCluster goes: the PodGroup's count applies again. */
    ck_assert_int_eq(policy_gang_forget(C, "lab/sp", POLICY_GANG_WORKLOAD), POLICY_OK);
    ck_assert(policy_gang_view_get(C, "lab/sp", &g));
    ck_assert_int_eq(g.min_members, 3);
    ck_assert_ptr_null(g.conflict);
}
END_TEST

/*
 * docs/gangs.md, "Precedence": a composition beats a count, whichever source gives it; between
 * counts a Workload's (Kubernetes' own gang object) beats a PodGroup's bare minMember. The
 * order the declarations arrive in does not matter, the other one is checked against it, and
 * when the Workload goes the PodGroup's count applies again.
 */
static const struct policy_subgroup_spec driver_workers[] = {{"driver", 1}, {"workers", 3}};

static const struct precedence_case {
    const char *name;
    int32_t podgroup, workload; /* their counts; a workload of 0 gives driver_workers */
    bool workload_first;
    int32_t min;
    const char *conflict;
} precedence_cases[] = {
    {"counts: the Workload's", 2, 3, false, 3,
     "PodGroup lab/w 2 disagrees with Workload lab/w 3, which muster follows"},
    {"counts, the Workload first", 2, 3, true, 3,
     "PodGroup lab/w 2 disagrees with Workload lab/w 3, which muster follows"},
    {"counts that agree", 4, 4, false, 4, NULL},
    {"the Workload's templates over a count", 5, 0, false, 4,
     "PodGroup lab/w 5 disagrees with Workload lab/w 4 (driver 1, workers 3), which muster "
     "follows"},
};

START_TEST(a_workload_beats_a_podgroup_count)
{
    const struct precedence_case *t = &precedence_cases[_i];
    struct policy_gang_spec pg = {.key = "lab/w", .min_members = t->podgroup,
                                  .source = POLICY_GANG_PODGROUP};
    struct policy_gang_spec wl = {.key = "lab/w", .min_members = t->workload,
                                  .source = POLICY_GANG_WORKLOAD_API};
    struct policy_gang_view g;

    if (t->workload == 0) {
        wl.subgroups = driver_workers;
        wl.nsubgroups = 2;
        wl.min_members = 4;
    }
    ck_assert_int_eq(policy_gang_upsert(C, t->workload_first ? &wl : &pg), POLICY_OK);
    ck_assert_int_eq(policy_gang_upsert(C, t->workload_first ? &pg : &wl), POLICY_OK);
    ck_assert(policy_gang_view_get(C, "lab/w", &g));
    ck_assert_msg(g.min_members == t->min, "%s: minimum %d, not %d", t->name, g.min_members,
                  t->min);
    ck_assert_int_eq(g.nsubgroups, t->workload == 0 ? 2 : 0);
    if (t->conflict)
        ck_assert_msg(g.conflict && strcmp(g.conflict, t->conflict) == 0, "%s: conflict %s",
                      t->name, g.conflict);
    else
        ck_assert_msg(g.conflict == NULL, "%s: conflict %s", t->name, g.conflict);
    ck_assert_int_eq(policy_gang_forget(C, "lab/w", POLICY_GANG_WORKLOAD_API), POLICY_OK);
    ck_assert(policy_gang_view_get(C, "lab/w", &g));
    ck_assert_int_eq(g.min_members, t->podgroup);
    ck_assert_ptr_null(g.conflict);
}
END_TEST

START_TEST(gang_without_its_raycluster_is_not_planned)
{
    char why[512];

    /* Pods carry ray.io/cluster before muster has seen the RayCluster (its
     * watch may lag): planning the members that exist would place it in part. */
    add_node("n1", 32, 8);
    add_pod("lab", "lab/early", NULL, (struct pod_ask){"early-head", 1, 0, 0, true});
    add_pod("lab", "lab/early", NULL, (struct pod_ask){"early-w-0", 1, 1});
    ck_assert_int_eq(schedule("lab", "early-head", why, sizeof(why)), POLICY_BIND_REJECT);
    ck_assert_str_eq(why, "gang lab/early: its RayCluster or PodGroup is not known yet");
    add_gang("lab/early", 2, NULL);
    ck_assert_int_eq(schedule("lab", "early-head", why, sizeof(why)), POLICY_BIND_WAIT);
    ck_assert_int_eq(schedule("lab", "early-w-0", why, sizeof(why)), POLICY_BIND_COMMIT);
}
END_TEST

START_TEST(gang_waits_until_every_member_exists)
{
    char why[512];

    add_node("n1", 32, 8);
    add_gang("lab/demo", 5, NULL);
    add_pod("lab", "lab/demo", NULL, (struct pod_ask){"demo-head", 1, 0, 0, true});
    add_pod("lab", "lab/demo", NULL, (struct pod_ask){"demo-w-0", 1, 1});
    add_pod("lab", "lab/demo", NULL, (struct pod_ask){"demo-w-1", 1, 1});
    ck_assert_int_eq(schedule("lab", "demo-head", why, sizeof(why)), POLICY_BIND_REJECT);
    ck_assert_str_eq(why, "gang lab/demo: 3 of 5 members exist");
}
END_TEST

START_TEST(bind_wait_cancel_keeps_nothing_bound)
{
    char why[512];
    struct policy_gang_view g;

    add_node("n1", 32, 8);
    add_gang("lab/demo", 2, NULL);
    add_pod("lab", "lab/demo", NULL, (struct pod_ask){"demo-head", 1, 0, 0, true});
    add_pod("lab", "lab/demo", NULL, (struct pod_ask){"demo-w-0", 1, 1});
    ck_assert_int_eq(schedule("lab", "demo-head", why, sizeof(why)), POLICY_BIND_WAIT);
    ck_assert_int_eq(policy_bind_cancel(C, "lab", "demo-head", why, sizeof(why)), POLICY_OK);
    ck_assert_str_eq(why, "gang lab/demo: 1 of 2 members at bind or bound; waiting for "
                          "demo-w-0");
    ck_assert_int_eq(phase_of("lab", "demo-head"), POLICY_POD_PLANNED);
    ck_assert(policy_gang_view_get(C, "lab/demo", &g));
    ck_assert_int_eq(g.bound, 0);
    ck_assert_int_eq(g.state, POLICY_GANG_PLANNED);
    /* kube-scheduler retries: the plan still holds, and now the gang commits. */
    ck_assert_int_eq(schedule("lab", "demo-head", why, sizeof(why)), POLICY_BIND_WAIT);
    ck_assert_int_eq(schedule("lab", "demo-w-0", why, sizeof(why)), POLICY_BIND_COMMIT);
    ck_assert(policy_gang_view_get(C, "lab/demo", &g));
    ck_assert_int_eq(g.state, POLICY_GANG_BOUND);
}
END_TEST

START_TEST(gang_since_is_its_earliest_member_first_seen)
{
    struct policy_gang_view g;

    add_node("n1", 32, 8);
    add_gang("lab/demo", 2, NULL);
    ck_assert(policy_gang_view_get(C, "lab/demo", &g));
    ck_assert_int_eq(g.since, 0); /* declared, no member yet */
    NOW = 5000;
    add_pod("lab", "lab/demo", NULL, (struct pod_ask){"demo-w-0", 1, 1});
    NOW = 7000;
    add_pod("lab", "lab/demo", NULL, (struct pod_ask){"demo-head", 1, 0, 0, true});
    ck_assert(policy_gang_view_get(C, "lab/demo", &g));
    ck_assert_int_eq(g.since, 5000);
    /* An update of the same pod is not a new sighting. */
    NOW = 9000;
    add_pod("lab", "lab/demo", NULL, (struct pod_ask){"demo-w-0", 1, 1});
    ck_assert(policy_gang_view_get(C, "lab/demo", &g));
    ck_assert_int_eq(g.since, 5000);
    /* The earliest member gone, the gang waits since the next one. */
    ck_assert_int_eq(policy_pod_forget(C, "lab", "demo-w-0"), POLICY_OK);
    ck_assert(policy_gang_view_get(C, "lab/demo", &g));
    ck_assert_int_eq(g.since, 7000);
}
END_TEST

START_TEST(unbound_plan_is_released_after_its_ttl)
{
    const char *names[] = {"n1"};
    struct policy_filter_result fr;
    struct policy_gang_view g;

    add_node("n1", 32, 8);
    add_gang("lab/demo", 2, NULL);
    add_pod("lab", "lab/demo", NULL, (struct pod_ask){"demo-head", 1, 0, 0, true});
    add_pod("lab", "lab/demo", NULL, (struct pod_ask){"demo-w-0", 1, 8});
    ck_assert_int_eq(policy_filter(C, "lab", "demo-head", names, 1, NOW, &fr), POLICY_OK);
    policy_filter_result_cleanup(&fr);
    ck_assert_int_eq(phase_of("lab", "demo-w-0"), POLICY_POD_PLANNED);
    policy_expire(C, NOW + 59999);
    ck_assert_int_eq(phase_of("lab", "demo-w-0"), POLICY_POD_PLANNED);
    policy_expire(C, NOW + 60001);
    ck_assert_int_eq(phase_of("lab", "demo-w-0"), POLICY_POD_PENDING);
    ck_assert(policy_gang_view_get(C, "lab/demo", &g));
    ck_assert_int_eq(g.state, POLICY_GANG_PENDING);
}
END_TEST

START_TEST(bind_already_bound_succeeds)
{
    char why[512];
    struct policy_bind_result br;

    add_node("n1", 32, 8);
    add_pod("ns", NULL, NULL, (struct pod_ask){"p", 1, 1});
    ck_assert_int_eq(schedule("ns", "p", why, sizeof(why)), POLICY_BIND_COMMIT);
    ck_assert_int_eq(policy_bind(C, "ns", "p", "n1", NOW, &br), POLICY_OK);
    ck_assert_int_eq(br.outcome, POLICY_BIND_ALREADY);
    policy_bind_result_cleanup(&br);
}
END_TEST

START_TEST(planned_node_not_offered_is_replanned_within_offer)
{
    const char *offer[] = {"n2"};
    struct policy_filter_result fr;

    add_node("n1", 32, 8);
    add_node("n2", 32, 8);
    add_pod("ns", NULL, NULL, (struct pod_ask){"p", 1, 1});
    ck_assert_int_eq(policy_filter(C, "ns", "p", offer, 1, NOW, &fr), POLICY_OK);
    ck_assert_int_eq(fr.verdicts[0].fit, POLICY_FITS);
    policy_filter_result_cleanup(&fr);
    ck_assert_str_eq(node_of("ns", "p"), "n2");
}
END_TEST

START_TEST(failed_binding_releases_the_member)
{
    const char *names[] = {"n1"};
    struct policy_filter_result fr;
    struct policy_bind_result br;
    struct policy_node_view;
    int64_t devices = 0;

    add_node("n1", 32, 8);
    add_pod("ns", NULL, NULL, (struct pod_ask){"p", 1, 1});
    ck_assert_int_eq(policy_filter(C, "ns", "p", names, 1, NOW, &fr), POLICY_OK);
    policy_filter_result_cleanup(&fr);
    ck_assert_int_eq(policy_bind(C, "ns", "p", "n1", NOW, &br), POLICY_OK);
    ck_assert_int_eq(br.outcome, POLICY_BIND_COMMIT);
    policy_bind_result_cleanup(&br);
    ck_assert_int_eq(policy_bind_done(C, "ns", "p", false, "pods \"p\" not found"), POLICY_OK);
    ck_assert_int_eq(phase_of("ns", "p"), POLICY_POD_PENDING);
    policy_each_node(C, count_devices, &devices);
    ck_assert_int_eq(devices, 0);
}
END_TEST

/* ---- placement ----------------------------------------------------------- */

START_TEST(binpack_fills_the_fullest_node_spread_the_emptiest)
{
    char why[512];

    teardown();
    setup_with(_i == 0 ? POLICY_BINPACK : POLICY_SPREAD);
    add_node("n1", 32, 8);
    add_node("n2", 32, 8);
    add_pod("ns", NULL, NULL, (struct pod_ask){"first", 1, 1});
    ck_assert_int_eq(schedule("ns", "first", why, sizeof(why)), POLICY_BIND_COMMIT);
    add_pod("ns", NULL, NULL, (struct pod_ask){"second", 1, 1});
    ck_assert_int_eq(schedule("ns", "second", why, sizeof(why)), POLICY_BIND_COMMIT);
    if (_i == 0)
        ck_assert_str_eq(node_of("ns", "first"), node_of("ns", "second"));
    else
        ck_assert_str_ne(node_of("ns", "first"), node_of("ns", "second"));
}
END_TEST

START_TEST(binpack_shares_the_fullest_group_spread_opens_new)
{
    char why[512];
    int64_t devices = 0;

    teardown();
    setup_with(_i == 0 ? POLICY_BINPACK : POLICY_SPREAD);
    add_node("n1", 32, 4);
    add_pod("ns", NULL, NULL, (struct pod_ask){"a", 1, 0, 600});
    add_pod("ns", NULL, NULL, (struct pod_ask){"b", 1, 0, 300});
    add_pod("ns", NULL, NULL, (struct pod_ask){"c", 1, 0, 100});
    schedule("ns", "a", why, sizeof(why));
    schedule("ns", "b", why, sizeof(why));
    schedule("ns", "c", why, sizeof(why));
    policy_each_node(C, count_devices, &devices);
    ck_assert_int_eq(devices, _i == 0 ? 1 : 3);
    check_invariants();
}
END_TEST

START_TEST(selectors_taints_and_affinity_decide_the_node)
{
    static const struct policy_label gpu_label[] = {{"pool", "gpu"}};
    static const struct policy_taint taint[] = {{"nvidia.com/gpu", "present", POLICY_TAINT_NO_SCHEDULE}};
    static const struct policy_toleration tol[] = {
        {"nvidia.com/gpu", POLICY_TOLERATE_EXISTS, NULL, -1}};
    static const char *const in_values[] = {"gpu"};
    static const struct policy_selector_req req[] = {{"pool", POLICY_SELECT_IN, in_values, 1}};
    static const struct policy_selector_term term[] = {{req, 1}};
    struct policy_node_spec tainted = {.name = "tainted", .labels = gpu_label, .nlabels = 1,
                                       .taints = taint, .ntaints = 1, .cpu_milli = 8000,
                                       .memory_bytes = 64 * GiB, .pods = 10, .gpus = 8};
    struct policy_node_spec plain = {.name = "plain", .cpu_milli = 8000,
                                     .memory_bytes = 64 * GiB, .pods = 10, .gpus = 8};
    struct policy_pod_spec p = {.namespace_ = "ns", .name = "p", .uid = "u", .cpu_milli = 100,
                                .gpus = 1, .managed = true};
    const char *names[] = {"tainted", "plain"};
    struct policy_filter_result fr;

    ck_assert_int_eq(policy_node_upsert(C, &tainted), POLICY_OK);
    ck_assert_int_eq(policy_node_upsert(C, &plain), POLICY_OK);
    if (_i == 0) { /* affinity to a tainted node without toleration: nothing fits */
        p.affinity = term;
        p.naffinity = 1;
    } else if (_i == 1) { /* tolerated and required */
        p.affinity = term;
        p.naffinity = 1;
        p.tolerations = tol;
        p.ntolerations = 1;
    } else { /* no constraints: the untainted node */
    }
    ck_assert_int_eq(policy_pod_upsert(C, &p, NOW), POLICY_OK);
    ck_assert_int_eq(policy_filter(C, "ns", "p", names, 2, NOW, &fr), POLICY_OK);
    if (_i == 0) {
        ck_assert_ptr_nonnull(fr.reason);
        ck_assert_str_eq(fr.reason, "member p (1 GPU): 0 of 2 nodes fit: 1 not matching its "
                                    "required node affinity; 1 with a taint it does not "
                                    "tolerate; never: no node takes it even empty");
    } else {
        ck_assert_int_eq(fr.verdicts[_i == 1 ? 0 : 1].fit, POLICY_FITS);
        ck_assert_int_ne(fr.verdicts[_i == 1 ? 1 : 0].fit, POLICY_FITS);
    }
    policy_filter_result_cleanup(&fr);
}
END_TEST

/* ---- queues -------------------------------------------------------------- */

START_TEST(ancestor_limit_binds_children)
{
    char why[512];

    add_node("n1", 32, 8);
    add_queue("org", NULL, 2000, 2000);
    add_queue("team-a", "org", 4000, 4000);
    add_pod("ns", NULL, "team-a", (struct pod_ask){"p1", 1, 2});
    ck_assert_int_eq(schedule("ns", "p1", why, sizeof(why)), POLICY_BIND_COMMIT);
    add_pod("ns", NULL, "team-a", (struct pod_ask){"p2", 1, 1});
    ck_assert_int_eq(schedule("ns", "p2", why, sizeof(why)), POLICY_BIND_REJECT);
    ck_assert_str_eq(why, "queue org: limit 2 GPUs, 2 GPUs in use, the pod needs 1 GPU");
    check_invariants();
}
END_TEST

START_TEST(unknown_queue_waits_with_reason)
{
    char why[512];

    add_node("n1", 32, 8);
    add_pod("ns", NULL, "nope", (struct pod_ask){"p1", 1, 1});
    ck_assert_int_eq(schedule("ns", "p1", why, sizeof(why)), POLICY_BIND_REJECT);
    ck_assert_str_eq(why, "queue nope does not exist");
}
END_TEST

START_TEST(shares_are_charged_as_shares)
{
    char why[512];

    add_node("n1", 32, 8);
    add_queue("team-a", NULL, 1000, 1000);
    add_pod("ns", NULL, "team-a", (struct pod_ask){"a", 1, 0, 500});
    add_pod("ns", NULL, "team-a", (struct pod_ask){"b", 1, 0, 500});
    add_pod("ns", NULL, "team-a", (struct pod_ask){"c", 1, 0, 100});
    ck_assert_int_eq(schedule("ns", "a", why, sizeof(why)), POLICY_BIND_COMMIT);
    ck_assert_int_eq(schedule("ns", "b", why, sizeof(why)), POLICY_BIND_COMMIT);
    ck_assert_int_eq(schedule("ns", "c", why, sizeof(why)), POLICY_BIND_REJECT);
    ck_assert_str_eq(why, "queue team-a: limit 1 GPU, 1 GPU in use, the pod needs 0.1 GPU");
}
END_TEST

/* KAI's queue order: b (within quota with the gang) before a (over quota). b-big
 * cannot fit the 2 GPUs left, so it is no rival; b-small can, and a2 would take
 * its room. */
START_TEST(over_quota_yields_to_a_waiting_in_quota_gang)
{
    char why[512];

    add_node("n1", 32, 4);
    add_queue("a", NULL, 2000, -1);
    add_queue("b", NULL, 4000, -1);
    /* b's gang needs 3 GPUs but only 2 remain: it waits in quota for capacity. */
    add_pod("ns", NULL, "a", (struct pod_ask){"a1", 1, 2});
    ck_assert_int_eq(schedule("ns", "a1", why, sizeof(why)), POLICY_BIND_COMMIT);
    add_pod("ns", NULL, "b", (struct pod_ask){"b-big", 1, 3});
    ck_assert_int_eq(schedule("ns", "b-big", why, sizeof(why)), POLICY_BIND_REJECT);
    add_pod("ns", NULL, "b", (struct pod_ask){"b-small", 1, 2});
    /* a asking over its quota may not take what b, in quota, waits for. */
    add_pod("ns", NULL, "a", (struct pod_ask){"a2", 1, 1});
    ck_assert_int_eq(schedule("ns", "a2", why, sizeof(why)), POLICY_BIND_REJECT);
    ck_assert_str_eq(why, "waits: gang ns/b-small of queue b is ahead");
    ck_assert_int_eq(schedule("ns", "b-small", why, sizeof(why)), POLICY_BIND_COMMIT);
}
END_TEST

START_TEST(over_quota_allowed_when_nobody_waits)
{
    char why[512];

    add_node("n1", 32, 8);
    add_queue("a", NULL, 1000, -1);
    add_queue("b", NULL, 1000, -1);
    add_pod("ns", NULL, "a", (struct pod_ask){"a1", 1, 4});
    ck_assert_int_eq(schedule("ns", "a1", why, sizeof(why)), POLICY_BIND_COMMIT);
}
END_TEST

/* ---- preemption and restarts --------------------------------------------- */

START_TEST(preemption_takes_whole_gangs_or_none)
{
    char why[512];
    const char *victims[] = {"lab/g-1"};
    char **out = NULL;
    size_t n = 0;
    struct policy_pod_spec hi = {.namespace_ = "lab", .name = "urgent", .uid = "u-urgent",
                                 .priority = _i == 0 ? 1000 : -5, .gpus = 1, .managed = true};

    add_node("n1", 32, 8);
    add_gang("lab/g", 2, NULL);
    add_pod("lab", "lab/g", NULL, (struct pod_ask){"g-0", 1, 4, 0, true});
    add_pod("lab", "lab/g", NULL, (struct pod_ask){"g-1", 1, 4});
    schedule("lab", "g-0", why, sizeof(why));
    schedule("lab", "g-1", why, sizeof(why));
    ck_assert_int_eq(policy_pod_upsert(C, &hi, NOW), POLICY_OK);
    if (_i == 0) {
        ck_assert(policy_preempt_victims(C, "lab", "urgent", victims, 1, &out, &n));
        ck_assert_int_eq(n, 2);
        ck_assert_str_eq(out[0], "lab/g-0");
        ck_assert_str_eq(out[1], "lab/g-1");
        for (size_t i = 0; i < n; i++)
            free(out[i]);
        free(out);
    } else {
        ck_assert(!policy_preempt_victims(C, "lab", "urgent", victims, 1, &out, &n));
    }
}
END_TEST

START_TEST(restart_completes_a_partly_bound_gang_first)
{
    struct policy_pod_spec head = {.namespace_ = "lab", .name = "g-head", .uid = "u0",
                                   .cpu_milli = 1000, .gpus = 4, .gang = "lab/g",
                                   .gang_head = true, .managed = true, .node = "n1"};
    char why[512];
    struct policy_gang_view g;

    /* As rebuilt after kill -9 mid-commit: the head bound, the worker not. */
    add_node("n1", 32, 8);
    add_gang("lab/g", 2, NULL);
    ck_assert_int_eq(policy_pod_upsert(C, &head, NOW), POLICY_OK);
    add_pod("lab", "lab/g", NULL, (struct pod_ask){"g-w", 1, 4});
    add_gang("lab/other", 1, NULL);
    add_pod("lab", "lab/other", NULL, (struct pod_ask){"other", 1, 4, 0, true});
    /* Another gang arrives first: the partial gang still gets its room. */
    ck_assert_int_eq(schedule("lab", "other", why, sizeof(why)), POLICY_BIND_REJECT);
    ck_assert_int_eq(schedule("lab", "g-w", why, sizeof(why)), POLICY_BIND_COMMIT);
    ck_assert(policy_gang_view_get(C, "lab/g", &g));
    ck_assert_int_eq(g.bound, 2);
    check_invariants();
}
END_TEST

START_TEST(pods_listed_before_their_node_are_charged_when_it_arrives)
{
    struct policy_pod_spec a = {.namespace_ = "ns", .name = "a", .uid = "ua", .gpu_share_milli = 600,
                                .managed = true, .node = "n1", .gpu_groups = "g0"};
    struct policy_pod_spec w = {.namespace_ = "ns", .name = "w", .uid = "uw", .gpus = 7,
                                .managed = true, .node = "n1"};
    char why[512];
    int64_t devices = 0;

    /* After a restart the pod list may come before the node list. */
    ck_assert_int_eq(policy_pod_upsert(C, &a, NOW), POLICY_OK);
    ck_assert_int_eq(policy_pod_upsert(C, &w, NOW), POLICY_OK);
    add_node("n1", 32, 8);
    policy_each_node(C, count_devices, &devices);
    ck_assert_int_eq(devices, 8);
    /* g0 holds 0.6: another 0.5 must not be booked onto it, nor onto a new device. */
    add_pod("ns", NULL, NULL, (struct pod_ask){"late", 1, 0, 500});
    ck_assert_int_eq(schedule("ns", "late", why, sizeof(why)), POLICY_BIND_REJECT);
    add_pod("ns", NULL, NULL, (struct pod_ask){"small", 1, 0, 400});
    ck_assert_int_eq(schedule("ns", "small", why, sizeof(why)), POLICY_BIND_COMMIT);
    ck_assert_str_eq(node_of("ns", "small"), "n1");
    check_invariants();
}
END_TEST

START_TEST(bound_pods_rebuild_groups_from_annotations)
{
    struct policy_pod_spec p = {.namespace_ = "ns", .name = "a", .uid = "ua", .gpu_share_milli = 500,
                                .managed = true, .node = "n1", .gpu_groups = "g3"};
    struct policy_pod_view v;

    add_node("n1", 32, 8);
    ck_assert_int_eq(policy_pod_upsert(C, &p, NOW), POLICY_OK);
    ck_assert(policy_pod_view_get(C, "ns", "a", &v));
    ck_assert_str_eq(v.gpu_groups, "g3");
    ck_assert_int_eq(v.phase, POLICY_POD_BOUND);
}
END_TEST

START_TEST(paused_sharing_opens_no_new_group_until_its_time)
{
    char why[512];

    add_node("n1", 32, 2);
    add_pod("ns", NULL, NULL, (struct pod_ask){"a", 1, 0, 500});
    ck_assert_int_eq(schedule("ns", "a", why, sizeof(why)), POLICY_BIND_COMMIT);
    ck_assert_int_eq(policy_node_pause_sharing(C, "n1", NOW + 5000), POLICY_OK);
    /* The open group still takes a share; a new group may not be opened. */
    add_pod("ns", NULL, NULL, (struct pod_ask){"b", 1, 0, 500});
    ck_assert_int_eq(schedule("ns", "b", why, sizeof(why)), POLICY_BIND_COMMIT);
    add_pod("ns", NULL, NULL, (struct pod_ask){"c", 1, 0, 500});
    ck_assert_int_eq(schedule("ns", "c", why, sizeof(why)), POLICY_BIND_REJECT);
    ck_assert_str_eq(why, "member c (0.5 GPU): no node may open a shared GPU now (sharing paused: "
                          "a reservation pod did not report its device)");
    NOW += 5001;
    ck_assert_int_eq(schedule("ns", "c", why, sizeof(why)), POLICY_BIND_COMMIT);
    check_invariants();
}
END_TEST

/* ---- found in review: lifecycles around a commit ---------------------------- */

START_TEST(queue_updated_in_place_keeps_its_usage)
{
    char why[512];
    struct policy_pod_view v;

    add_node("n1", 32, 8);
    add_queue("team-a", NULL, 2000, 2000);
    add_pod("ns", NULL, "team-a", (struct pod_ask){"p", 1, 2});
    ck_assert_int_eq(schedule("ns", "p", why, sizeof(why)), POLICY_BIND_COMMIT);
    add_queue("team-a", NULL, 2000, 3000); /* the limit raised: the same queue, updated */
    add_queue("team-a", NULL, 2000, 3000);
    add_pod("ns", NULL, "team-a", (struct pod_ask){"q", 1, 1});
    ck_assert_int_eq(schedule("ns", "q", why, sizeof(why)), POLICY_BIND_COMMIT);
    add_pod("ns", NULL, "team-a", (struct pod_ask){"r", 1, 1});
    ck_assert_int_eq(schedule("ns", "r", why, sizeof(why)), POLICY_BIND_REJECT);
    ck_assert_str_eq(why, "queue team-a: limit 3 GPUs, 3 GPUs in use, the pod needs 1 GPU");
    ck_assert(policy_pod_view_get(C, "ns", "q", &v));
    check_invariants();
}
END_TEST

START_TEST(node_deleted_while_its_binding_is_in_flight)
{
    const char *names[] = {"n1"};
    struct policy_filter_result fr;
    struct policy_bind_result br;
    struct policy_pod_view v;

    add_node("n1", 32, 8);
    add_pod("ns", NULL, NULL, (struct pod_ask){"p", 1, 1});
    ck_assert_int_eq(policy_filter(C, "ns", "p", names, 1, NOW, &fr), POLICY_OK);
    policy_filter_result_cleanup(&fr);
    ck_assert_int_eq(policy_bind(C, "ns", "p", "n1", NOW, &br), POLICY_OK);
    ck_assert_int_eq(br.outcome, POLICY_BIND_COMMIT);
    policy_bind_result_cleanup(&br);
    ck_assert_int_eq(policy_node_forget(C, "n1"), POLICY_OK);
    /* kube-scheduler filters it again meanwhile: no place to move to, no crash. */
    ck_assert_int_eq(policy_filter(C, "ns", "p", names, 1, NOW, &fr), POLICY_OK);
    ck_assert_int_eq(fr.verdicts[0].fit, POLICY_UNSCHEDULABLE);
    policy_filter_result_cleanup(&fr);
    ck_assert_int_eq(policy_bind_done(C, "ns", "p", true, NULL), POLICY_OK);
    ck_assert(policy_pod_view_get(C, "ns", "p", &v));
    ck_assert_int_eq(v.phase, POLICY_POD_BOUND);
    ck_assert_str_eq(v.node, "n1");
}
END_TEST

START_TEST(recreated_gang_is_placed_whole_again)
{
    char why[512], name[16];
    struct policy_gang_view g;

    add_node("n1", 32, 4);
    add_gang("lab/g", 3, NULL);
    for (int i = 0; i < 3; i++) {
        snprintf(name, sizeof(name), "a-%d", i);
        add_pod("lab", "lab/g", NULL, (struct pod_ask){name, 1, 1, 0, i == 0});
    }
    for (int i = 0; i < 3; i++) {
        snprintf(name, sizeof(name), "a-%d", i);
        schedule("lab", name, why, sizeof(why));
    }
    ck_assert(policy_gang_view_get(C, "lab/g", &g));
    ck_assert_int_eq(g.bound, 3);
    /* Suspended: every pod goes. Something else takes two GPUs meanwhile. */
    for (int i = 0; i < 3; i++) {
        snprintf(name, sizeof(name), "a-%d", i);
        policy_pod_forget(C, "lab", name);
    }
    add_pod("ns", NULL, NULL, (struct pod_ask){"other", 1, 2});
    ck_assert_int_eq(schedule("ns", "other", why, sizeof(why)), POLICY_BIND_COMMIT);
    /* Resumed: three new pods and room for two. The gang waits whole. */
    for (int i = 0; i < 3; i++) {
        snprintf(name, sizeof(name), "b-%d", i);
        add_pod("lab", "lab/g", NULL, (struct pod_ask){name, 1, 1, 0, i == 0});
    }
    for (int i = 0; i < 3; i++) {
        snprintf(name, sizeof(name), "b-%d", i);
        ck_assert_int_eq(schedule("lab", name, why, sizeof(why)), POLICY_BIND_REJECT);
    }
    ck_assert(policy_gang_view_get(C, "lab/g", &g));
    ck_assert_int_eq(g.bound, 0);
    check_invariants();
}
END_TEST

START_TEST(failed_commit_leaves_the_gang_pending)
{
    char why[512];
    struct policy_bind_result br;
    struct policy_gang_view g;

    add_node("n1", 32, 8);
    add_gang("lab/g", 2, NULL);
    add_pod("lab", "lab/g", NULL, (struct pod_ask){"h", 1, 0, 0, true});
    add_pod("lab", "lab/g", NULL, (struct pod_ask){"w", 1, 0, 500});
    ck_assert_int_eq(schedule("lab", "h", why, sizeof(why)), POLICY_BIND_WAIT);
    {
        const char *names[] = {"n1"};
        struct policy_filter_result fr;

        ck_assert_int_eq(policy_filter(C, "lab", "w", names, 1, NOW, &fr), POLICY_OK);
        policy_filter_result_cleanup(&fr);
    }
    ck_assert_int_eq(policy_bind(C, "lab", "w", "n1", NOW, &br), POLICY_OK);
    ck_assert_int_eq(br.outcome, POLICY_BIND_COMMIT);
    ck_assert_int_eq(br.n, 2);
    /* The reservation pod never reported: the whole commit is refused. */
    for (size_t i = 0; i < br.n; i++)
        policy_bind_done(C, br.members[i].namespace_, br.members[i].name, false, "no device");
    policy_bind_result_cleanup(&br);
    ck_assert(policy_gang_view_get(C, "lab/g", &g));
    ck_assert_int_eq(g.state, POLICY_GANG_PENDING);
    ck_assert_int_eq(g.bound, 0);
    check_invariants();
}
END_TEST

/* ---- randomized tests' generator (the tests are at the end) ------------ */


/* ---- expiry: a min-heap of deadlines ------------------------------------- */

static void plan_gang_of_two(const char *key, const char *head, const char *worker, int64_t at)
{
    const char *names[] = {"n1"};
    struct policy_filter_result fr;

    add_gang(key, 2, NULL);
    add_pod("lab", key, NULL, (struct pod_ask){head, 1, 0, 0, true});
    add_pod("lab", key, NULL, (struct pod_ask){worker, 1, 1});
    ck_assert_int_eq(policy_filter(C, "lab", head, names, 1, at, &fr), POLICY_OK);
    ck_assert_ptr_null(fr.reason);
    policy_filter_result_cleanup(&fr);
}

START_TEST(plans_expire_in_deadline_order_not_gang_order)
{
    add_node("n1", 32, 8);
    plan_gang_of_two("lab/c", "c-head", "c-w", NOW + 2000);
    plan_gang_of_two("lab/a", "a-head", "a-w", NOW);
    plan_gang_of_two("lab/b", "b-head", "b-w", NOW + 1000);
    policy_expire(C, NOW + 60001);
    ck_assert_int_eq(phase_of("lab", "a-w"), POLICY_POD_PENDING);
    ck_assert_int_eq(phase_of("lab", "b-w"), POLICY_POD_PLANNED);
    ck_assert_int_eq(phase_of("lab", "c-w"), POLICY_POD_PLANNED);
    policy_expire(C, NOW + 61001);
    ck_assert_int_eq(phase_of("lab", "b-w"), POLICY_POD_PENDING);
    ck_assert_int_eq(phase_of("lab", "c-w"), POLICY_POD_PLANNED);
    policy_expire(C, NOW + 62001);
    ck_assert_int_eq(phase_of("lab", "c-w"), POLICY_POD_PENDING);
}
END_TEST

START_TEST(held_bind_keeps_an_expired_plan_until_it_leaves)
{
    struct policy_bind_result br;
    char why[256];

    add_node("n1", 32, 8);
    plan_gang_of_two("lab/demo", "demo-head", "demo-w", NOW);
    ck_assert_int_eq(policy_bind(C, "lab", "demo-head", "n1", NOW, &br), POLICY_OK);
    ck_assert_int_eq(br.outcome, POLICY_BIND_WAIT);
    policy_bind_result_cleanup(&br);
    policy_expire(C, NOW + 70000);
    ck_assert_int_eq(phase_of("lab", "demo-w"), POLICY_POD_PLANNED);
    policy_expire(C, NOW + 70001);
    ck_assert_int_eq(phase_of("lab", "demo-w"), POLICY_POD_PLANNED);
    ck_assert_int_eq(policy_bind_cancel(C, "lab", "demo-head", why, sizeof(why)), POLICY_OK);
    policy_expire(C, NOW + 70002);
    ck_assert_int_eq(phase_of("lab", "demo-w"), POLICY_POD_PENDING);
    ck_assert_int_eq(phase_of("lab", "demo-head"), POLICY_POD_PENDING);
}
END_TEST

START_TEST(forgotten_gangs_leave_no_deadline_behind)
{
    char why[256];

    add_node("n1", 64, 64);
    for (int i = 0; i < 40; i++) {
        char name[32];

        snprintf(name, sizeof(name), "p-%02d", i);
        add_pod("lab", NULL, NULL, (struct pod_ask){name, 1, 1});
        ck_assert_int_eq(schedule("lab", name, why, sizeof(why)), POLICY_BIND_COMMIT);
        NOW += 10;
    }
    for (int i = 0; i < 40; i += 3) {
        char name[32];

        snprintf(name, sizeof(name), "p-%02d", i);
        ck_assert_int_eq(policy_pod_forget(C, "lab", name), POLICY_OK);
    }
    plan_gang_of_two("lab/late", "late-head", "late-w", NOW);
    policy_expire(C, NOW + 60001);
    ck_assert_int_eq(phase_of("lab", "late-w"), POLICY_POD_PENDING);
    ck_assert_int_eq(phase_of("lab", "p-01"), POLICY_POD_BOUND);
    check_invariants();
}
END_TEST

/* ---- gangs as compositions (issue 10) ------------------------------------ */

/* kube-scheduler's cycle for every pending pod, in arrival order, until nothing moves. */
struct pending_list {
    char *ns[512], *name[512];
    size_t n;
};

static void collect_pending(const struct policy_pod_view *v, void *ctx)
{
    struct pending_list *l = ctx;

    if (v->managed && (v->phase == POLICY_POD_PENDING || v->phase == POLICY_POD_PLANNED) &&
        l->n < 512) {
        l->ns[l->n] = strdup(v->namespace_);
        l->name[l->n++] = strdup(v->name);
    }
}

/* A hash of every pod's phase and reason: what kube-scheduler would see change. */
static void hash_pod(const struct policy_pod_view *v, void *ctx)
{
    uint64_t *h = ctx;

    for (const char *r = v->reason ? v->reason : ""; *r; r++)
        *h = (*h ^ (unsigned char)*r) * 1099511628211ULL;
    *h = (*h ^ (uint64_t)v->phase) * 1099511628211ULL;
}

/* kube-scheduler retries every pending pod until a pass binds nothing and tells no pod
 * anything new (a reason that changed is a retry kube-scheduler would get from muster). */
static void settle(void)
{
    char why[512];
    uint64_t last = 0;

    for (int pass = 0; pass < 64; pass++) {
        struct pending_list l = {.n = 0};
        bool moved = false;
        uint64_t h = 1469598103934665603ULL;

        policy_each_pod(C, collect_pending, &l);
        for (size_t i = 0; i < l.n; i++) {
            enum policy_bind_outcome o = schedule(l.ns[i], l.name[i], why, sizeof(why));

            moved |= o == POLICY_BIND_COMMIT;
            free(l.ns[i]);
            free(l.name[i]);
        }
        policy_each_pod(C, hash_pod, &h);
        if (!moved && h == last)
            break;
        last = h;
    }
}

static int count_placed(const char *ns, const char *prefix, int n)
{
    char name[64];
    int placed = 0;

    for (int i = 0; i < n; i++) {
        snprintf(name, sizeof(name), "%s%d", prefix, i);
        placed += node_of(ns, name) != NULL;
    }
    return placed;
}

static void add_workers(const char *gang, const char *queue, const char *sub, int n,
                        int64_t cpu, int64_t gpus)
{
    char name[64];

    for (int i = 0; i < n; i++) {
        snprintf(name, sizeof(name), "rc-%s-worker-%d", sub, i);
        add_pod("lab", gang, queue, (struct pod_ask){name, cpu, gpus, 0, false, sub});
    }
}

/* Issue 10's autoscaling RayCluster: CPU group minReplicas 2 of 6, GPU group 3 of 4, on a
 * node with exactly 3 GPUs. Its minimum is admitted whole; the extras follow; the 4th GPU
 * worker waits alone. */
START_TEST(autoscaling_raycluster_admits_its_minimum_then_extras)
{
    static const struct policy_subgroup_spec subs[] = {{"head", 1}, {"cpu", 2}, {"gpu", 3}};
    struct policy_gang_view g;

    add_node("n1", 64, 3);
    add_composed_gang("lab/rc", POLICY_GANG_WORKLOAD, NULL, subs, 3);
    add_pod("lab", "lab/rc", NULL, (struct pod_ask){"rc-head", 2, 0, 0, true, "head"});
    add_workers("lab/rc", NULL, "cpu", 6, 1, 0);
    add_workers("lab/rc", NULL, "gpu", 4, 1, 1);
    settle();
    ck_assert_ptr_nonnull(node_of("lab", "rc-head"));
    ck_assert_int_eq(count_placed("lab", "rc-cpu-worker-", 6), 6);
    ck_assert_int_eq(count_placed("lab", "rc-gpu-worker-", 4), 3);
    ck_assert(policy_gang_view_get(C, "lab/rc", &g));
    ck_assert_int_eq(g.state, POLICY_GANG_BOUND);
    ck_assert_int_eq(g.nsubgroups, 3);
    ck_assert_str_eq(g.composition, "head 1/1, cpu 2/2 (+4 extra), gpu 3/3 (+1 extra waiting: "
                                    "member rc-gpu-worker-3 (1 GPU): no node has a free GPU)");
    check_invariants();
}
END_TEST

/* Seen end to end (e2e 05b): kube-scheduler asked about a CPU worker that came last, so it
 * was planned in the minimum and the workers before it became extras. The composition says
 * what the gang holds, whoever came first: a subgroup never shows more than its minimum
 * placed. */
START_TEST(composition_counts_the_minimum_whoever_was_asked_first)
{
    static const struct policy_subgroup_spec subs[] = {{"head", 1}, {"cpu", 1}};
    struct policy_gang_view g;
    char why[512];

    add_node("n1", 64, 0);
    add_composed_gang("lab/rc", POLICY_GANG_WORKLOAD, NULL, subs, 2);
    add_pod("lab", "lab/rc", NULL, (struct pod_ask){"rc-head", 2, 0, 0, true, "head"});
    add_workers("lab/rc", NULL, "cpu", 3, 1, 0);
    /* the last CPU worker first: it is the minimum, the two before it are extras */
    ck_assert_int_eq(schedule("lab", "rc-cpu-worker-2", why, sizeof(why)), POLICY_BIND_WAIT);
    ck_assert_int_eq(schedule("lab", "rc-head", why, sizeof(why)), POLICY_BIND_COMMIT);
    settle();
    ck_assert_int_eq(count_placed("lab", "rc-cpu-worker-", 3), 3);
    ck_assert(policy_gang_view_get(C, "lab/rc", &g));
    ck_assert_int_eq(g.state, POLICY_GANG_BOUND);
    ck_assert_str_eq(g.composition, "head 1/1, cpu 1/1 (+2 extra)");
    ck_assert_int_eq(g.subgroups[1].placed, 1);
    ck_assert_int_eq(g.subgroups[1].extras_placed, 2);
    check_invariants();
}
END_TEST

/* The barrier says whom it waits for: the members planned for the minimum, not the extras
 * (seen end to end, e2e 05b: "1 of 6 members at bind; waiting for" four names, two of them
 * extra CPU workers). */
START_TEST(barrier_names_the_minimum_it_waits_for)
{
    static const struct policy_subgroup_spec subs[] = {{"head", 1}, {"cpu", 1}};
    char why[512];

    add_node("n1", 64, 0);
    add_composed_gang("lab/rc", POLICY_GANG_WORKLOAD, NULL, subs, 2);
    add_pod("lab", "lab/rc", NULL, (struct pod_ask){"rc-head", 2, 0, 0, true, "head"});
    add_workers("lab/rc", NULL, "cpu", 3, 1, 0);
    ck_assert_int_eq(schedule("lab", "rc-cpu-worker-2", why, sizeof(why)), POLICY_BIND_WAIT);
    ck_assert_str_eq(why, "gang lab/rc: 1 of 2 members at bind or bound; waiting for rc-head");
}
END_TEST

/* Seen end to end (e2e 05b): a gang that waited (every member told "worker group gpu needs 3
 * x 1 GPU, 2 free") is admitted once the node has a third GPU; its fourth GPU worker, which
 * kube-scheduler's own filter now turns away before asking muster, must not keep the words of
 * a gang that no longer waits. */
START_TEST(an_extra_does_not_keep_its_gangs_old_reason)
{
    static const struct policy_subgroup_spec subs[] = {{"head", 1}, {"gpu", 3}};
    struct policy_gang_view g;
    char why[512];

    add_node("n1", 64, 2);
    add_composed_gang("lab/rc", POLICY_GANG_WORKLOAD, NULL, subs, 2);
    add_pod("lab", "lab/rc", NULL, (struct pod_ask){"rc-head", 2, 0, 0, true, "head"});
    add_workers("lab/rc", NULL, "gpu", 4, 1, 1);
    settle();
    ck_assert_int_eq(count_placed("lab", "rc-gpu-worker-", 4), 0);
    ck_assert(policy_gang_view_get(C, "lab/rc", &g));
    ck_assert_msg(g.reason && strstr(g.reason, "ask 3 GPUs together, the nodes they may use have 2 "
                                               "GPUs free (worker group gpu needs 3 more x 1 GPU)"),
                  "%s", g.reason);
    add_node("n1", 64, 3);
    /* kube-scheduler tries the head and three workers; the fourth no longer fits in its eyes */
    ck_assert_int_eq(schedule("lab", "rc-head", why, sizeof(why)), POLICY_BIND_WAIT);
    for (int i = 0; i < 2; i++) {
        char name[32];

        snprintf(name, sizeof(name), "rc-gpu-worker-%d", i);
        ck_assert_int_eq(schedule("lab", name, why, sizeof(why)), POLICY_BIND_WAIT);
    }
    ck_assert_int_eq(schedule("lab", "rc-gpu-worker-2", why, sizeof(why)), POLICY_BIND_COMMIT);
    ck_assert(policy_gang_view_get(C, "lab/rc", &g));
    ck_assert_int_eq(g.state, POLICY_GANG_BOUND);
    ck_assert_str_eq(g.composition, "head 1/1, gpu 3/3 (+1 extra waiting)");
    ck_assert_ptr_null(g.subgroups[1].extra_reason);
    check_invariants();
}
END_TEST

/* kuberay#4656: a count of 5 that a head and four CPU workers could meet, while the GPU
 * group cannot. A composition is never met by the wrong members. */
START_TEST(count_met_by_the_wrong_members_is_never_admitted)
{
    static const struct policy_subgroup_spec subs[] = {{"head", 1}, {"cpu", 2}, {"gpu", 2}};
    struct policy_gang_spec pg = {.key = "lab/rc", .min_members = 5, .source = POLICY_GANG_PODGROUP};
    struct policy_gang_view g;
    char why[512];

    add_node("n1", 64, 1);
    ck_assert_int_eq(policy_gang_upsert(C, &pg), POLICY_OK);
    add_composed_gang("lab/rc", POLICY_GANG_WORKLOAD, NULL, subs, 3);
    add_pod("lab", "lab/rc", NULL, (struct pod_ask){"rc-head", 2, 0, 0, true, "head"});
    add_workers("lab/rc", NULL, "cpu", 4, 1, 0);
    add_workers("lab/rc", NULL, "gpu", 2, 1, 1);
    ck_assert_int_eq(schedule("lab", "rc-head", why, sizeof(why)), POLICY_BIND_REJECT);
    ck_assert_str_eq(why, "gang lab/rc: the 5 members its minimum misses ask 2 GPUs together, the "
                          "nodes they may use have 1 GPU free (worker group gpu needs 2 more x 1 "
                          "GPU); never: not even on empty nodes");
    settle();
    ck_assert_int_eq(count_placed("lab", "rc-cpu-worker-", 4), 0);
    ck_assert_ptr_null(node_of("lab", "rc-head"));
    ck_assert(policy_gang_view_get(C, "lab/rc", &g));
    ck_assert_int_eq(g.state, POLICY_GANG_PENDING);
    ck_assert_ptr_null(g.conflict); /* 5 = 1 + 2 + 2: they agree */
}
END_TEST

/* A missing subgroup member keeps the gang out, and says which subgroup. */
START_TEST(a_subgroup_short_of_pods_says_so)
{
    static const struct policy_subgroup_spec subs[] = {{"head", 1}, {"gpu", 2}};
    char why[512];

    add_node("n1", 64, 8);
    add_composed_gang("lab/rc", POLICY_GANG_WORKLOAD, NULL, subs, 2);
    add_pod("lab", "lab/rc", NULL, (struct pod_ask){"rc-head", 2, 0, 0, true, "head"});
    add_workers("lab/rc", NULL, "gpu", 1, 1, 1);
    ck_assert_int_eq(schedule("lab", "rc-head", why, sizeof(why)), POLICY_BIND_REJECT);
    ck_assert_str_eq(why, "gang lab/rc: worker group gpu has 1 of 2 pods");
}
END_TEST

/* A suspended worker group (minimum 0): its pods are extras, placed once the rest is bound. */
START_TEST(a_subgroup_with_no_minimum_only_has_extras)
{
    static const struct policy_subgroup_spec subs[] = {{"head", 1}, {"gpu", 0}};
    struct policy_gang_view g;

    add_node("n1", 64, 8);
    add_composed_gang("lab/rc", POLICY_GANG_WORKLOAD, NULL, subs, 2);
    add_pod("lab", "lab/rc", NULL, (struct pod_ask){"rc-head", 2, 0, 0, true, "head"});
    add_workers("lab/rc", NULL, "gpu", 2, 1, 1);
    settle();
    ck_assert(policy_gang_view_get(C, "lab/rc", &g));
    ck_assert_int_eq(g.min_members, 1);
    ck_assert_str_eq(g.composition, "head 1/1, gpu 0/0 (+2 extra)");
}
END_TEST

/* KAI's "Allocate 2 elastic jobs - both partial allocate" (allocateElastic_test.go): two
 * gangs of minimum 1 with 4 one-GPU pods each on 5 GPUs end 3 + 2, not 4 + 1, whichever
 * gang kube-scheduler happens to try first. */
START_TEST(elastic_gangs_share_extras_in_turn)
{
    char name[32];
    int a = 0, b = 0;

    add_node("n1", 64, 5);
    add_gang("lab/a", 1, NULL);
    add_gang("lab/b", 1, NULL);
    for (int i = 0; i < 4; i++) {
        snprintf(name, sizeof(name), "a-%d", i);
        add_pod("lab", "lab/a", NULL, (struct pod_ask){name, 1, 1});
    }
    for (int i = 0; i < 4; i++) {
        snprintf(name, sizeof(name), "b-%d", i);
        add_pod("lab", "lab/b", NULL, (struct pod_ask){name, 1, 1});
    }
    settle();
    a = count_placed("lab", "a-", 4);
    b = count_placed("lab", "b-", 4);
    ck_assert_int_eq(a + b, 5);
    ck_assert_int_eq(a, 3);
    ck_assert_int_eq(b, 2);
}
END_TEST

/* KAI's own PodGroup subgroups (v2alpha2 subGroups[]{name, minMember}) plan the same way. */
START_TEST(kai_podgroup_subgroups_compose_the_gang)
{
    static const struct policy_subgroup_spec subs[] = {{"decode", 2}, {"prefill", 1}};
    struct policy_gang_view g;
    char why[512];

    add_node("n1", 64, 2);
    add_composed_gang("lab/rc", POLICY_GANG_PODGROUP, NULL, subs, 2);
    add_workers("lab/rc", NULL, "decode", 2, 1, 1);
    add_workers("lab/rc", NULL, "prefill", 1, 1, 1);
    ck_assert_int_eq(schedule("lab", "rc-decode-worker-0", why, sizeof(why)), POLICY_BIND_REJECT);
    ck_assert_str_eq(why, "gang lab/rc: the 3 members its minimum misses ask 3 GPUs together, the "
                          "nodes they may use have 2 GPUs free (subgroup prefill needs 1 more x 1 "
                          "GPU); never: not even on empty nodes");
    add_node("n2", 64, 1);
    settle();
    ck_assert(policy_gang_view_get(C, "lab/rc", &g));
    ck_assert_int_eq(g.state, POLICY_GANG_BOUND);
    ck_assert_str_eq(g.composition, "decode 2/2, prefill 1/1");
}
END_TEST

/* ---- queue order, reclaim and preemption (issue 9) ------------------------- */

/* Issue 9: two 3-CPU pods of two queues on a 4-CPU node: one runs, never neither. */
START_TEST(capacity_never_sits_idle_between_two_queues)
{
    struct policy_queue_spec q = {.name = "a"};

    add_node("n1", 4, 0);
    for (int r = 0; r < POLICY_RES_COUNT; r++) {
        q.quota.v[r] = 0;
        q.limit.v[r] = -1;
        q.over_quota_weight.v[r] = 1;
    }
    ck_assert_int_eq(policy_queue_upsert(C, &q), POLICY_OK);
    q.name = "b";
    ck_assert_int_eq(policy_queue_upsert(C, &q), POLICY_OK);
    add_pod("ns", NULL, "a", (struct pod_ask){"a", 3, 0});
    add_pod("ns", NULL, "b", (struct pod_ask){"b", 3, 0});
    settle();
    ck_assert((node_of("ns", "a") != NULL) != (node_of("ns", "b") != NULL));
}
END_TEST

/*
 * Queues are compared with their next gang, not with each gang that asks. Queue a (priority
 * 0, GPU quota 0) has an older pod asking a GPU and a younger one asking none; queue b
 * (priority 1, GPU quota 0) one asking a GPU; each needs 3 of the node's 4 CPUs. Compared
 * with its own ask, a's young pod (within quota) went before b's, b's before a's old one
 * (queue priority), and a's old one before its young queue-mate (arrival): each was turned
 * away for the next, and the node stayed empty. Found by random_queues_keep_every_promise.
 */
START_TEST(three_gangs_of_two_queues_never_wait_for_each_other_in_a_ring)
{
    struct policy_queue_spec q = {.name = "a"};
    struct policy_pod_view b;
    char why[256];

    add_node("n1", 4, 8);
    for (int r = 0; r < POLICY_RES_COUNT; r++) {
        q.quota.v[r] = r == POLICY_RES_GPU ? 0 : -1;
        q.limit.v[r] = -1;
        q.over_quota_weight.v[r] = 1;
    }
    ck_assert_int_eq(policy_queue_upsert(C, &q), POLICY_OK);
    q.name = "b";
    q.priority = 1;
    ck_assert_int_eq(policy_queue_upsert(C, &q), POLICY_OK);
    add_pod("ns", NULL, "a", (struct pod_ask){"a-old", 3, 1});
    add_pod("ns", NULL, "a", (struct pod_ask){"a-young", 3, 0});
    add_pod("ns", NULL, "b", (struct pod_ask){"b", 3, 1});
    settle();
    /* Queue a's next gang is a-old, outside quota like b's: b's queue priority puts it first. */
    ck_assert(policy_pod_view_get(C, "ns", "b", &b));
    ck_assert_msg(b.node, "the node stays empty; b: %s", b.reason ? b.reason : "-");
    ck_assert_ptr_null(node_of("ns", "a-old"));
    ck_assert_ptr_null(node_of("ns", "a-young"));
    ck_assert_int_eq(schedule("ns", "a-young", why, sizeof(why)), POLICY_BIND_REJECT);
    ck_assert_msg(strstr(why, "no node has 3 cpu free"), "a-young: %s", why);
}
END_TEST

/* Carry out every eviction the engine decided: the pod goes (the watch's DELETED), and
 * KubeRay makes it again, pending. A pod gone since, or made again under its name, is what
 * the API server answers 404 or 409 for: refused, as the daemon reports it. Returns how many
 * were evicted. */
static int evict_all(void)
{
    struct policy_eviction *ev;
    size_t n;
    int evicted = 0;

    ck_assert_int_eq(policy_evictions_take(C, &ev, &n), POLICY_OK);
    for (size_t i = 0; i < n; i++) {
        struct policy_pod_view v;
        char self[256], *gang, *queue, *subgroup;

        if (!policy_pod_view_get(C, ev[i].namespace_, ev[i].name, &v) ||
            strcmp(v.uid, ev[i].uid) != 0) {
            policy_eviction_done(C, ev[i].namespace_, ev[i].name, false, "gone", NOW);
            continue;
        }
        ck_assert_int_eq(v.phase, POLICY_POD_EVICTING);
        evicted++;
        snprintf(self, sizeof(self), "%s/%s", ev[i].namespace_, ev[i].name);
        gang = strcmp(v.gang, self) != 0 ? strdup(v.gang) : NULL;
        queue = strdup(v.queue);
        subgroup = v.subgroup ? strdup(v.subgroup) : NULL; /* the view goes with the pod */
        {
            struct policy_pod_spec again = {.namespace_ = ev[i].namespace_,
                                            .name = ev[i].name,
                                            .uid = "again",
                                            .cpu_milli = v.cpu_milli,
                                            .memory_bytes = v.memory_bytes,
                                            .gpus = v.gpus,
                                            .gang = gang,
                                            .gang_head = v.gang_head,
                                            .subgroup = subgroup,
                                            .priority = v.priority,
                                            .queue = queue,
                                            .managed = true};

            ck_assert_int_eq(
                policy_eviction_done(C, ev[i].namespace_, ev[i].name, true, NULL, NOW), POLICY_OK);
            ck_assert_int_eq(policy_pod_forget(C, ev[i].namespace_, ev[i].name), POLICY_OK);
            ck_assert_int_eq(policy_pod_upsert(C, &again, NOW), POLICY_OK);
        }
        free(gang);
        free(queue);
        free(subgroup);
    }
    policy_evictions_free(ev, n);
    return evicted;
}

static void gpu_queue(const char *name, int64_t quota_milli)
{
    struct policy_queue_spec q = {.name = name};

    for (int r = 0; r < POLICY_RES_COUNT; r++) {
        q.quota.v[r] = r == POLICY_RES_GPU ? quota_milli : -1;
        q.limit.v[r] = -1;
        q.over_quota_weight.v[r] = 1;
    }
    ck_assert_int_eq(policy_queue_upsert(C, &q), POLICY_OK);
}

static void add_gpu_gang(const char *gang, const char *queue, int n)
{
    char key[64], name[64];

    snprintf(key, sizeof(key), "lab/%s", gang);
    add_gang(key, n, queue);
    for (int i = 0; i < n; i++) {
        snprintf(name, sizeof(name), "%s-%d", gang, i);
        add_pod("lab", key, queue, (struct pod_ask){name, 1, 1});
    }
}

struct queue_probe {
    const char *name;
    int64_t allocated, fair;
};

static void probe_queue(const struct policy_queue_view *v, void *ctx)
{
    struct queue_probe *p = ctx;

    if (strcmp(v->name, p->name) == 0) {
        p->allocated = v->allocated.v[POLICY_RES_GPU] + v->reserved.v[POLICY_RES_GPU];
        p->fair = v->fair_share.v[POLICY_RES_GPU];
    }
}

static struct queue_probe probe(const char *name)
{
    struct queue_probe p = {name, -1, -1};

    policy_each_queue(C, probe_queue, &p);
    return p;
}

/*
 * KubeRay's --batch-scheduler=volcano writes a PodGroup ray-<cluster>-pg owned by the RayCluster,
 * and Volcano's CRD defaults its spec.queue to "default" when the RayCluster has no
 * volcano.sh/queue-name label to copy (e2e 04d). The RayCluster's own label (muster.dev/queue)
 * names the gang's queue whichever source spoke last: the queue follows the sources' order,
 * not the order of their watch events, and a repeated declaration is no change. When the
 * RayCluster goes, the PodGroup's queue is the one left.
 */
static const struct queue_order_case {
    const char *name;
    enum policy_gang_source first, second;
} queue_order_cases[] = {
    {"RayCluster then PodGroup", POLICY_GANG_WORKLOAD, POLICY_GANG_PODGROUP},
    {"PodGroup then RayCluster", POLICY_GANG_PODGROUP, POLICY_GANG_WORKLOAD},
};

START_TEST(a_rayclusters_queue_beats_its_podgroups_defaulted_one_in_any_order)
{
    const struct queue_order_case *t = &queue_order_cases[_i];
    struct policy_gang_spec rc = {
        .key = "lab/vc", .min_members = 2, .queue = "team-b", .source = POLICY_GANG_WORKLOAD};
    struct policy_gang_spec pg = {
        .key = "lab/vc", .min_members = 2, .queue = "default", .source = POLICY_GANG_PODGROUP};
    struct policy_gang_spec *first = t->first == POLICY_GANG_WORKLOAD ? &rc : &pg;
    struct policy_gang_spec *second = first == &rc ? &pg : &rc;
    struct policy_gang_view g;
    char why[512];

    add_node("n1", 32, 8);
    add_queue("team-b", NULL, -1, -1);
    ck_assert_int_eq(policy_gang_upsert(C, first), POLICY_OK);
    ck_assert_int_eq(policy_gang_upsert(C, second), POLICY_OK);
    add_pod("lab", "lab/vc", NULL, (struct pod_ask){"vc-head", 1, 0, 0, true});
    add_pod("lab", "lab/vc", NULL, (struct pod_ask){"vc-w", 1, 1, 0, false});
    ck_assert_int_eq(schedule("lab", "vc-head", why, sizeof(why)), POLICY_BIND_WAIT);
    ck_assert_int_eq(schedule("lab", "vc-w", why, sizeof(why)), POLICY_BIND_COMMIT);
    ck_assert(policy_gang_view_get(C, "lab/vc", &g));
    ck_assert_msg(strcmp(g.queue, "team-b") == 0, "%s: queue %s", t->name, g.queue);
    ck_assert_int_eq(probe("team-b").allocated, 1 * POLICY_GPU_MILLI);
    ck_assert_int_eq(probe("default").allocated, 0);
    /* Status updates of either object declare the same again: no change, no move. */
    ck_assert(!policy_gang_changes(C, &rc));
    ck_assert(!policy_gang_changes(C, &pg));
    ck_assert_int_eq(policy_gang_upsert(C, &pg), POLICY_OK);
    ck_assert(policy_gang_view_get(C, "lab/vc", &g));
    ck_assert_str_eq(g.queue, "team-b");
    ck_assert_int_eq(probe("team-b").allocated, 1 * POLICY_GPU_MILLI);
    /* The RayCluster goes (its label with it): the PodGroup's queue is what names one now. */
    ck_assert_int_eq(policy_gang_forget(C, "lab/vc", POLICY_GANG_WORKLOAD), POLICY_OK);
    ck_assert(policy_gang_view_get(C, "lab/vc", &g));
    ck_assert_str_eq(g.queue, "default");
    ck_assert_int_eq(probe("team-b").allocated, 0);
    ck_assert_int_eq(probe("default").allocated, 1 * POLICY_GPU_MILLI);
}
END_TEST

/* Issue 9's end-to-end scenario in the engine: team-a (quota 0) borrows all 8 GPUs; team-b
 * (quota 8) submits 6: team-a's gang is evicted whole, team-b's runs whole, and team-a's
 * re-created gang waits whole and never reclaims back: its 8 GPUs are more than team-a's fair
 * share (2) allows. (When the victims' gangs would fit their share, what stops them is the
 * victim rule: reclaim_is_never_taken_straight_back_however_often_the_victims_ask.) */
START_TEST(reclaim_takes_a_borrowing_gang_back_whole_and_never_thrashes)
{
    struct queue_probe a, b;
    struct policy_gang_view g;

    add_node("n1", 64, 8);
    gpu_queue("team-a", 0);
    gpu_queue("team-b", 8000);
    add_gpu_gang("a", "team-a", 8);
    settle();
    ck_assert_int_eq(count_placed("lab", "a-", 8), 8);
    add_gpu_gang("b", "team-b", 6);
    settle();
    ck_assert_int_eq(evict_all(), 8); /* whole, never 6 of 8 */
    settle();
    ck_assert_int_eq(count_placed("lab", "b-", 6), 6);
    ck_assert_int_eq(count_placed("lab", "a-", 8), 0);
    ck_assert(policy_gang_view_get(C, "lab/a", &g));
    ck_assert_int_eq(g.state, POLICY_GANG_PENDING);
    a = probe("team-a");
    b = probe("team-b");
    ck_assert_int_eq(b.allocated, 6000);
    ck_assert_int_le(b.allocated, b.fair);  /* the reclaimer at or below its fair share */
    ck_assert_int_eq(a.fair, 2000);         /* what team-a may still have */
    /* Alternate: time passes, kube-scheduler keeps retrying both; nothing moves again. */
    for (int round = 0; round < 20; round++) {
        NOW += 1000;
        settle();
        ck_assert_int_eq(evict_all(), 0);
    }
    ck_assert_int_eq(count_placed("lab", "b-", 6), 6);
    check_invariants();
}
END_TEST

static void reclaim_queue(const char *name, int64_t quota_milli, int64_t weight,
                          int64_t min_runtime_ms)
{
    struct policy_queue_spec q = {.name = name, .reclaim_min_runtime_ms = min_runtime_ms};

    for (int r = 0; r < POLICY_RES_COUNT; r++) {
        q.quota.v[r] = r == POLICY_RES_GPU ? quota_milli : -1;
        q.limit.v[r] = -1;
        q.over_quota_weight.v[r] = weight;
    }
    ck_assert_int_eq(policy_queue_upsert(C, &q), POLICY_OK);
}

/* Nothing was decided for eviction: the victims did not take their room straight back. */
static void nothing_evicted(int round)
{
    struct policy_eviction *ev;
    size_t n;

    ck_assert_int_eq(policy_evictions_take(C, &ev, &n), POLICY_OK);
    ck_assert_msg(n == 0, "round %d: %s/%s evicted for %s: %s", round, n ? ev[0].namespace_ : "",
                  n ? ev[0].name : "", n ? ev[0].by : "", n ? ev[0].reason : "");
    policy_evictions_free(ev, n);
}

/*
 * No thrash, alternating. team-v (quota 0, weight 1) holds 4 GPUs in two gangs of 2, within
 * its fair share (4); team-x (quota 0, weight 0) holds the other 4, over its share but
 * protected by its reclaimMinRuntime; team-r (quota 4) submits 4. team-r is within its quota,
 * so it takes team-v's room above team-v's quota (KAI's GuaranteeDeservedQuota): both gangs,
 * whole. What holds after: team-r at its quota and its fair share; team-v below its fair
 * share by both gangs (not only by the last one taken: it was never over its share), at its
 * quota, and each of its gangs would keep it within its fair share, so it asks to reclaim.
 * It must find nothing to take: team-r holds no more than its quota and its fair share, and
 * team-v's gang would take team-v over its quota. Then, round after round, team-v's gangs
 * are filtered and looked at unasked, and nothing is evicted.
 */
START_TEST(reclaim_is_never_taken_straight_back_however_often_the_victims_ask)
{
    struct queue_probe r, v;
    char why[256], name[32];
    size_t decided;

    add_node("n1", 64, 8);
    reclaim_queue("team-r", 4000, 1, 0);
    reclaim_queue("team-v", 0, 1, 0);
    reclaim_queue("team-x", 0, 0, 3600 * 1000);
    add_gpu_gang("x", "team-x", 4);
    settle();
    add_gpu_gang("v1", "team-v", 2);
    NOW += 10;
    settle();
    add_gpu_gang("v2", "team-v", 2);
    NOW += 10;
    settle();
    ck_assert_int_eq(count_placed("lab", "x-", 4) + count_placed("lab", "v1-", 2) +
                         count_placed("lab", "v2-", 2),
                     8);
    v = probe("team-v");
    ck_assert_int_eq(v.allocated, 4000);
    ck_assert_int_eq(v.fair, 4000); /* within its fair share before the reclaim */
    add_gpu_gang("r", "team-r", 4);
    settle();
    ck_assert_int_eq(evict_all(), 4); /* v1 and v2, whole; x is protected */
    settle(); /* team-r binds; team-v's gangs, back pending, are filtered after it */
    nothing_evicted(0);
    ck_assert_int_eq(count_placed("lab", "r-", 4), 4);
    ck_assert_int_eq(count_placed("lab", "x-", 4), 4);
    r = probe("team-r");
    v = probe("team-v");
    ck_assert_int_eq(r.allocated, 4000);
    ck_assert_int_le(r.allocated, r.fair); /* the reclaimer: within its fair share ... */
    ck_assert_int_le(r.allocated, 4000);   /* ... and its quota */
    ck_assert_int_eq(v.allocated, 0);      /* the victim: not below its quota (0) ... */
    ck_assert_int_eq(v.fair, 4000);        /* ... but below its fair share by both gangs */
    ck_assert_int_le(v.allocated + 2000, v.fair); /* so each gang of it may ask to reclaim */
    for (int round = 0; round < 20; round++) {
        NOW += 1000;
        for (int i = 0; i < 2; i++) {
            snprintf(name, sizeof(name), "v%d-0", 1 + (round + i) % 2);
            ck_assert_int_eq(schedule("lab", name, why, sizeof(why)), POLICY_BIND_REJECT);
            ck_assert_msg(!strstr(why, "evicted"), "round %d: %s: %s", round, name, why);
        }
        ck_assert_int_eq(policy_evict_unasked(C, NOW, 500, 16, &decided), POLICY_OK);
        ck_assert_uint_eq(decided, 0);
        nothing_evicted(round);
        settle();
        nothing_evicted(round);
    }
    ck_assert_int_eq(count_placed("lab", "r-", 4), 4);
    ck_assert_int_eq(count_placed("lab", "v1-", 2) + count_placed("lab", "v2-", 2), 0);
    check_invariants();
}
END_TEST

/* A young gang is protected by its queue's reclaimMinRuntime. */
START_TEST(reclaim_min_runtime_protects_a_young_gang)
{
    struct policy_queue_spec q = {.name = "team-a", .reclaim_min_runtime_ms = 60000};

    add_node("n1", 64, 8);
    for (int r = 0; r < POLICY_RES_COUNT; r++) {
        q.quota.v[r] = r == POLICY_RES_GPU ? 0 : -1;
        q.limit.v[r] = -1;
        q.over_quota_weight.v[r] = 1;
    }
    ck_assert_int_eq(policy_queue_upsert(C, &q), POLICY_OK);
    gpu_queue("team-b", 8000);
    add_gpu_gang("a", "team-a", 8);
    settle();
    add_gpu_gang("b", "team-b", 6);
    NOW += 30000;
    settle();
    ck_assert_int_eq(evict_all(), 0);
    NOW += 31000;
    settle();
    ck_assert_int_eq(evict_all(), 8);
}
END_TEST

/*
 * A restarted engine learns a running gang from its pods, already bound: team-a's gang of 8
 * GPUs, on a queue with a reclaimMinRuntime of an hour, is seen at NOW. Its pods say when they
 * were bound (the decoder reads the PodScheduled condition); the runtime counts from the
 * latest of those, so a gang bound 50 minutes ago is team-b's to reclaim 10 minutes later,
 * not an hour later. A pod that does not say, or says a time the engine has not reached (a
 * skewed clock), leaves the count at NOW, as before.
 */
static const struct restart_case {
    int64_t bound_ago[8]; /* ms before NOW each member was bound; INT64_MIN: not said */
    int64_t running_ago;  /* the gang's running_since, before NOW */
    bool reclaimed;       /* at NOW + 11 minutes */
} restart_cases[] = {
    {{50 * 60000, 50 * 60000, 51 * 60000, 50 * 60000, 52 * 60000, 50 * 60000, 50 * 60000,
      50 * 60000},
     50 * 60000,
     true},
    {{50 * 60000, 50 * 60000, 50 * 60000, 50 * 60000, 50 * 60000, 50 * 60000, 50 * 60000,
      INT64_MIN},
     0,
     false},
    {{50 * 60000, 50 * 60000, 50 * 60000, 50 * 60000, 50 * 60000, 50 * 60000, 50 * 60000,
      -5 * 60000},
     0,
     false},
    {{45 * 60000, 50 * 60000, 50 * 60000, 50 * 60000, 50 * 60000, 50 * 60000, 50 * 60000,
      50 * 60000},
     45 * 60000,
     false}, /* the last member was bound 45 minutes ago: 15 to go */
};

START_TEST(restart_counts_min_runtime_from_when_the_pods_were_bound)
{
    const struct restart_case *t = &restart_cases[_i];
    struct policy_queue_spec q = {.name = "team-a", .reclaim_min_runtime_ms = 60 * 60000};
    struct policy_gang_view g;
    char name[32];

    NOW = 24 * 3600 * 1000LL;
    add_node("n1", 64, 8);
    for (int r = 0; r < POLICY_RES_COUNT; r++) {
        q.quota.v[r] = r == POLICY_RES_GPU ? 0 : -1;
        q.limit.v[r] = -1;
        q.over_quota_weight.v[r] = 1;
    }
    ck_assert_int_eq(policy_queue_upsert(C, &q), POLICY_OK);
    gpu_queue("team-b", 8000);
    add_gang("lab/a", 8, "team-a");
    for (int i = 0; i < 8; i++) {
        struct policy_pod_spec p = {.namespace_ = "lab", .name = name, .uid = name,
                                    .cpu_milli = 1000, .memory_bytes = GiB, .gpus = 1,
                                    .gang = "lab/a", .queue = "team-a", .managed = true,
                                    .node = "n1"};

        snprintf(name, sizeof(name), "a-%d", i);
        p.bound_at = t->bound_ago[i] == INT64_MIN ? 0 : NOW - t->bound_ago[i];
        ck_assert_int_eq(policy_pod_upsert(C, &p, NOW), POLICY_OK);
    }
    ck_assert(policy_gang_view_get(C, "lab/a", &g));
    ck_assert_int_eq(g.state, POLICY_GANG_BOUND);
    ck_assert_int_eq(g.running_since, NOW - t->running_ago);
    add_gpu_gang("b", "team-b", 6);
    NOW += 5 * 60000;
    settle();
    ck_assert_int_eq(evict_all(), 0); /* 55 minutes at most: protected either way */
    NOW += 6 * 60000;
    settle();
    ck_assert_int_eq(evict_all(), t->reclaimed ? 8 : 0);
}
END_TEST

/* kube-scheduler never asks muster about a GPU pod no node has a free GPU for (its own
 * filter rejects every node first), so the reclaim a filter would decide is decided by
 * policy_evict_unasked: team-a (quota 0) holds all 8 GPUs with single pods; team-b (quota 8)
 * submits one 1-GPU pod that is never filtered. KAI's scale test does the same ("reclaim of a
 * single-GPU job", test/e2e/scale); muster's answer is one victim, not the whole queue. */
START_TEST(reclaim_for_a_pod_kube_scheduler_never_asks_about)
{
    struct policy_eviction *ev;
    size_t n, decided;
    char name[32];

    add_node("n1", 64, 8);
    gpu_queue("team-a", 0);
    gpu_queue("team-b", 8000);
    for (int i = 0; i < 8; i++) {
        snprintf(name, sizeof(name), "a-%d", i);
        add_pod("lab", NULL, "team-a", (struct pod_ask){name, 1, 1});
        NOW += 10;
    }
    settle();
    ck_assert_int_eq(count_placed("lab", "a-", 8), 8);
    add_pod("lab", NULL, "team-b", (struct pod_ask){"solo", 1, 1});
    /* Known for less than the quiet time: kube-scheduler may yet ask. */
    NOW += 9999;
    ck_assert_int_eq(policy_evict_unasked(C, NOW, 10000, 16, &decided), POLICY_OK);
    ck_assert_uint_eq(decided, 0);
    NOW += 1;
    ck_assert_int_eq(policy_evict_unasked(C, NOW, 10000, 16, &decided), POLICY_OK);
    ck_assert_uint_eq(decided, 1);
    ck_assert_int_eq(policy_evictions_take(C, &ev, &n), POLICY_OK);
    ck_assert_uint_eq(n, 1);
    ck_assert_str_eq(ev[0].queue, "team-a");
    ck_assert_str_eq(ev[0].by, "lab/solo");
    ck_assert_str_eq(ev[0].name, "a-7"); /* the youngest */
    policy_evictions_free(ev, n);
    /* Awaiting its victim: not looked at again, nothing more decided. */
    NOW += 20000;
    ck_assert_int_eq(policy_evict_unasked(C, NOW, 10000, 16, &decided), POLICY_OK);
    ck_assert_uint_eq(decided, 0);
    ck_assert_int_eq(policy_eviction_done(C, "lab", "a-7", true, NULL, NOW), POLICY_OK);
    ck_assert_int_eq(policy_pod_forget(C, "lab", "a-7"), POLICY_OK);
    settle();
    ck_assert_ptr_nonnull(node_of("lab", "solo"));
    /* team-a's pod back (re-created) stays pending for good: within its fair share, no loop. */
    add_pod("lab", NULL, "team-a", (struct pod_ask){"a-7", 1, 1});
    for (int round = 0; round < 5; round++) {
        NOW += 11000;
        ck_assert_int_eq(policy_evict_unasked(C, NOW, 10000, 16, &decided), POLICY_OK);
        ck_assert_uint_eq(decided, 0);
        ck_assert_int_eq(policy_evictions_take(C, &ev, &n), POLICY_OK);
        ck_assert_uint_eq(n, 0);
        policy_evictions_free(ev, n);
    }
    ck_assert_ptr_null(node_of("lab", "a-7"));
    check_invariants();
}
END_TEST

/* kube-scheduler's own preemption nominated a node for the pod (it outranks a pod there):
 * kube-scheduler is making room, so muster does not evict for it too; once the nomination
 * goes, muster looks as before. */
START_TEST(unasked_leaves_a_nominated_pod_to_kube_scheduler)
{
    struct policy_pod_spec solo = {.namespace_ = "lab", .name = "solo", .uid = "uid-solo",
                                   .cpu_milli = 1000, .memory_bytes = 4 * GiB, .gpus = 1,
                                   .queue = "team-b", .managed = true, .nominated = true};
    size_t decided;
    char name[32];

    add_node("n1", 64, 8);
    gpu_queue("team-a", 0);
    gpu_queue("team-b", 8000);
    for (int i = 0; i < 8; i++) {
        snprintf(name, sizeof(name), "a-%d", i);
        add_pod("lab", NULL, "team-a", (struct pod_ask){name, 1, 1});
    }
    settle();
    ck_assert_int_eq(policy_pod_upsert(C, &solo, NOW), POLICY_OK);
    NOW += 60000;
    ck_assert_int_eq(policy_evict_unasked(C, NOW, 1000, 16, &decided), POLICY_OK);
    ck_assert_uint_eq(decided, 0);
    solo.nominated = false; /* the watch: its nomination cleared */
    ck_assert_int_eq(policy_pod_upsert(C, &solo, NOW), POLICY_OK);
    ck_assert_int_eq(policy_evict_unasked(C, NOW, 1000, 16, &decided), POLICY_OK);
    ck_assert_uint_eq(decided, 1);
}
END_TEST

/* What a pod was last told, and whether muster's last answer parked it in kube-scheduler. */
static bool refused_with(const char *ns, const char *name, const char *reason_part)
{
    struct policy_pod_view v;

    ck_assert(policy_pod_view_get(C, ns, name, &v));
    return v.refused && v.reason && strstr(v.reason, reason_part);
}

/* The e2e's helm upgrade (12) in the engine: gang "big" (3 GPUs) waits on team-a's GPU limit
 * of 2; the limit is raised to 3. kube-scheduler does not watch Queues, so the daemon hands
 * the parked pods back, and it knows them by their refused mark. The unasked look that now
 * finds the gang fits is a trial: it must leave that mark and the pods' words alone, or no
 * pod is handed back and the gang waits for good (the bug that failed CI on 2026-12-01). */
START_TEST(a_trial_plan_leaves_a_parked_gang_marked_for_its_nudge)
{
    struct policy_queue_spec q = {.name = "team-a"};
    struct policy_pod_view v;
    char why[512];
    size_t decided;

    add_node("n1", 64, 8);
    for (int r = 0; r < POLICY_RES_COUNT; r++) {
        q.quota.v[r] = r == POLICY_RES_GPU ? 2000 : -1;
        q.limit.v[r] = r == POLICY_RES_GPU ? 2000 : -1;
        q.over_quota_weight.v[r] = 1;
    }
    ck_assert_int_eq(policy_queue_upsert(C, &q), POLICY_OK);
    add_gpu_gang("big", "team-a", 3);
    ck_assert_int_eq(schedule("lab", "big-0", why, sizeof(why)), POLICY_BIND_REJECT);
    ck_assert_ptr_nonnull(strstr(why, "limit 2 GPUs"));
    ck_assert_int_eq(schedule("lab", "big-1", why, sizeof(why)), POLICY_BIND_REJECT);
    ck_assert(refused_with("lab", "big-0", "limit 2 GPUs"));
    ck_assert(refused_with("lab", "big-1", "limit 2 GPUs"));
    /* big-2 was never answered: kube-scheduler did not park it on muster's word. */
    ck_assert(!refused_with("lab", "big-2", ""));
    q.limit.v[POLICY_RES_GPU] = 3000;
    ck_assert_int_eq(policy_queue_upsert(C, &q), POLICY_OK);
    NOW += 10000;
    ck_assert_int_eq(policy_evict_unasked(C, NOW, 500, 16, &decided), POLICY_OK);
    ck_assert_uint_eq(decided, 0);
    ck_assert(refused_with("lab", "big-0", "limit 2 GPUs"));
    ck_assert(refused_with("lab", "big-1", "limit 2 GPUs"));
    ck_assert_int_eq(count_placed("lab", "big-", 3), 0); /* nothing held by the look */
    /* Handed back, kube-scheduler asks again: planned, the mark and the words go. */
    ck_assert_int_eq(schedule("lab", "big-0", why, sizeof(why)), POLICY_BIND_WAIT);
    ck_assert(!refused_with("lab", "big-0", ""));
    ck_assert(policy_pod_view_get(C, "lab", "big-1", &v));
    ck_assert(!v.refused);
    ck_assert_ptr_null(v.reason);
    settle();
    ck_assert_int_eq(count_placed("lab", "big-", 3), 3);
    check_invariants();
}
END_TEST

/* A restarted muster meets pods kube-scheduler parked on its predecessor's word (PodScheduled
 * False, Unschedulable): they count as refused, so the first spec change hands them back, and
 * only once; a pod this muster turned away itself stays refused after that. */
START_TEST(a_pod_parked_before_a_restart_is_handed_back_once)
{
    struct policy_pod_spec parked = {.namespace_ = "lab", .name = "parked", .uid = "u-parked",
                                     .cpu_milli = 1000, .memory_bytes = GiB, .gpus = 1,
                                     .queue = "team-a", .managed = true, .unschedulable = true};
    struct policy_pod_view v;
    char why[512];

    add_node("n1", 64, 0);
    gpu_queue("team-a", 8000);
    ck_assert_int_eq(policy_pod_upsert(C, &parked, NOW), POLICY_OK);
    add_pod("lab", NULL, "team-a", (struct pod_ask){"mine", 1, 1});
    ck_assert(policy_pod_view_get(C, "lab", "parked", &v) && v.refused);
    ck_assert(policy_pod_view_get(C, "lab", "mine", &v) && !v.refused);
    ck_assert_int_eq(schedule("lab", "mine", why, sizeof(why)), POLICY_BIND_REJECT); /* no GPU */
    ck_assert(policy_pod_view_get(C, "lab", "mine", &v) && v.refused);
    /* An update of the parked pod (its condition is still there) does not mark it again. */
    ck_assert_int_eq(policy_pod_upsert(C, &parked, NOW), POLICY_OK);
    policy_parked_hints_spent(C);
    ck_assert(policy_pod_view_get(C, "lab", "parked", &v) && !v.refused);
    ck_assert(policy_pod_view_get(C, "lab", "mine", &v) && v.refused);
    ck_assert_int_eq(policy_pod_upsert(C, &parked, NOW), POLICY_OK);
    ck_assert(policy_pod_view_get(C, "lab", "parked", &v) && !v.refused);
}
END_TEST

/* muster is making room for gang b by evictions: kube-scheduler's own preemption for one of
 * b's pods is refused on every node, or a second set would go for the same room. */
START_TEST(kube_scheduler_preemption_waits_while_muster_evicts_for_the_gang)
{
    const char *victims[] = {"lab/x-0"};
    struct policy_eviction *ev;
    char why[512], **out = NULL;
    size_t n, nout = 0;

    add_node("n1", 64, 8);
    gpu_queue("team-a", 0);
    gpu_queue("team-b", 8000);
    add_gpu_gang("a", "team-a", 6);
    settle();
    add_pod("lab", NULL, "team-a", (struct pod_ask){"x-0", 1, 1});
    add_pod("lab", NULL, "team-a", (struct pod_ask){"x-1", 1, 1});
    settle();
    add_gpu_gang("b", "team-b", 4);
    ck_assert(policy_preempt_victims(C, "lab", "b-0", victims, 1, &out, &nout));
    for (size_t i = 0; i < nout; i++)
        free(out[i]);
    free(out);
    ck_assert_int_eq(schedule("lab", "b-0", why, sizeof(why)), POLICY_BIND_REJECT);
    ck_assert_int_eq(policy_evictions_take(C, &ev, &n), POLICY_OK);
    ck_assert_uint_gt(n, 0);
    policy_evictions_free(ev, n);
    ck_assert(!policy_preempt_victims(C, "lab", "b-1", victims, 1, &out, &nout));
}
END_TEST

/* Reclaim for gang b (4 GPUs) takes two 2-GPU gangs of team-a; one goes, the other's eviction
 * is refused (a PodDisruptionBudget). While the first one's pods still leave, nothing more is
 * decided for b, neither by its filter nor by the unasked look (which also waits as long as
 * the refused victim is spared): b waits for the room on its way, and its count of victims
 * leaving stays right. Once they are gone b plans again and takes the next victim. */
START_TEST(a_refused_eviction_decides_no_more_while_victims_leave)
{
    struct policy_options o = {.strategy = POLICY_BINPACK, .plan_ttl_ms = 60000,
                               .refused_victim_ms = 30000};
    struct policy_eviction *ev;
    char why[512], left[64] = "", spared[64] = "";
    size_t n, decided;

    policy_cluster_free(C);
    C = policy_cluster_new(&o);
    add_node("n1", 64, 8);
    gpu_queue("team-a", 0);
    gpu_queue("team-b", 8000);
    for (int g = 1; g <= 4; g++) {
        char name[16];

        snprintf(name, sizeof(name), "a%d", g);
        add_gpu_gang(name, "team-a", 2);
        settle();
        NOW += 1000;
    }
    ck_assert_int_eq(count_placed("lab", "a4-", 2), 2);
    add_gpu_gang("b", "team-b", 4);
    ck_assert_int_eq(schedule("lab", "b-0", why, sizeof(why)), POLICY_BIND_REJECT);
    ck_assert_int_eq(policy_evictions_take(C, &ev, &n), POLICY_OK);
    ck_assert_uint_eq(n, 4); /* two gangs of two */
    snprintf(left, sizeof(left), "%s", ev[0].gang);
    for (size_t i = 0; i < n; i++)
        if (strcmp(ev[i].gang, left) != 0)
            snprintf(spared, sizeof(spared), "%s", ev[i].gang);
    ck_assert_str_ne(spared, "");
    for (size_t i = 0; i < n; i++) {
        bool goes = strcmp(ev[i].gang, left) == 0;

        ck_assert_int_eq(policy_eviction_done(C, ev[i].namespace_, ev[i].name, goes,
                                              goes ? NULL : "the budget allows 0 disruptions", NOW),
                         POLICY_OK);
    }
    policy_evictions_free(ev, n);
    /* The left gang's pods are still terminating: no new victim. */
    NOW += 1000;
    ck_assert_int_eq(schedule("lab", "b-1", why, sizeof(why)), POLICY_BIND_REJECT);
    ck_assert_ptr_nonnull(strstr(why, "evicted pod"));
    ck_assert_int_eq(policy_evict_unasked(C, NOW + 5000, 500, 16, &decided), POLICY_OK);
    ck_assert_uint_eq(decided, 0);
    ck_assert_int_eq(policy_evictions_take(C, &ev, &n), POLICY_OK);
    ck_assert_uint_eq(n, 0);
    policy_evictions_free(ev, n);
    /* Gone: b plans again, 2 GPUs short, and takes the next victim (not the spared one). */
    for (int i = 0; i < 2; i++) {
        char name[32];

        snprintf(name, sizeof(name), "%s-%d", left + strlen("lab/"), i);
        ck_assert_int_eq(policy_pod_forget(C, "lab", name), POLICY_OK);
    }
    NOW += 1000;
    ck_assert_int_eq(schedule("lab", "b-0", why, sizeof(why)), POLICY_BIND_REJECT);
    ck_assert_int_eq(policy_evictions_take(C, &ev, &n), POLICY_OK);
    ck_assert_uint_eq(n, 2);
    for (size_t i = 0; i < n; i++) {
        ck_assert_str_ne(ev[i].gang, spared);
        ck_assert_str_ne(ev[i].gang, left);
    }
    policy_evictions_free(ev, n);
    check_invariants();
}
END_TEST

/* A gang of GPU pods only (no CPU head for kube-scheduler to pass to muster) never asked
 * about: the borrowing gang goes whole. And a waiting pod that fits is left alone: nothing is
 * planned or held for it until kube-scheduler asks. */
START_TEST(unasked_gang_reclaims_whole_and_a_fitting_pod_is_left_alone)
{
    struct policy_eviction *ev;
    size_t n, decided;
    struct queue_probe b;

    add_node("n1", 64, 8);
    add_node("n2", 64, 0);
    gpu_queue("team-a", 0);
    gpu_queue("team-b", 8000);
    add_gpu_gang("a", "team-a", 8);
    settle();
    ck_assert_int_eq(count_placed("lab", "a-", 8), 8);
    add_gpu_gang("b", "team-b", 2);
    add_pod("lab", NULL, "team-b", (struct pod_ask){"cpu-only", 2, 0});
    NOW += 10000;
    ck_assert_int_eq(policy_evict_unasked(C, NOW, 10000, 16, &decided), POLICY_OK);
    ck_assert_uint_eq(decided, 1);
    ck_assert_int_eq(policy_evictions_take(C, &ev, &n), POLICY_OK);
    ck_assert_uint_eq(n, 8); /* a gang is a victim whole */
    for (size_t i = 0; i < n; i++)
        ck_assert_str_eq(ev[i].by, "lab/b");
    policy_evictions_free(ev, n);
    ck_assert_ptr_null(node_of("lab", "cpu-only"));
    b = probe("team-b");
    ck_assert_int_eq(b.allocated, 2000); /* b's room held on its victims, nothing for cpu-only */
    check_invariants();
}
END_TEST

/* A young gang is protected by its queue's preemptMinRuntime too. */
START_TEST(preempt_min_runtime_protects_a_young_gang)
{
    struct policy_queue_spec q = {.name = "q", .preempt_min_runtime_ms = 60000};

    add_node("n1", 64, 2);
    for (int r = 0; r < POLICY_RES_COUNT; r++) {
        q.quota.v[r] = -1;
        q.limit.v[r] = -1;
        q.over_quota_weight.v[r] = 1;
    }
    ck_assert_int_eq(policy_queue_upsert(C, &q), POLICY_OK);
    add_gang("lab/low", 2, "q");
    add_pod("lab", "lab/low", "q", (struct pod_ask){"low-0", 1, 1, 0, false, NULL, 50});
    add_pod("lab", "lab/low", "q", (struct pod_ask){"low-1", 1, 1, 0, false, NULL, 50});
    settle();
    add_gang("lab/high", 1, "q");
    add_pod("lab", "lab/high", "q", (struct pod_ask){"high-0", 1, 2, 0, false, NULL, 75});
    NOW += 59000;
    settle();
    ck_assert_int_eq(evict_all(), 0);
    NOW += 2000;
    settle();
    ck_assert_int_eq(evict_all(), 2);
}
END_TEST

/* Preemption inside a queue: a higher-priority gang evicts a lower one whole; an equal one
 * never does. */
START_TEST(preemption_takes_lower_priority_gangs_whole)
{
    char why[512];

    add_node("n1", 64, 4);
    gpu_queue("q", -1);
    add_gang("lab/low", 4, "q");
    for (int i = 0; i < 4; i++) {
        char name[16];

        snprintf(name, sizeof(name), "low-%d", i);
        add_pod("lab", "lab/low", "q", (struct pod_ask){name, 1, 1, 0, false, NULL, 50});
    }
    settle();
    ck_assert_int_eq(count_placed("lab", "low-", 4), 4);
    add_gang("lab/same", 2, "q");
    add_pod("lab", "lab/same", "q", (struct pod_ask){"same-0", 1, 1, 0, false, NULL, 50});
    add_pod("lab", "lab/same", "q", (struct pod_ask){"same-1", 1, 1, 0, false, NULL, 50});
    settle();
    ck_assert_int_eq(evict_all(), 0);
    add_gang("lab/high", 2, "q");
    add_pod("lab", "lab/high", "q", (struct pod_ask){"high-0", 1, 1, 0, false, NULL, 75});
    add_pod("lab", "lab/high", "q", (struct pod_ask){"high-1", 1, 1, 0, false, NULL, 75});
    ck_assert_int_eq(schedule("lab", "high-0", why, sizeof(why)), POLICY_BIND_REJECT);
    ck_assert_str_eq(why, "gang lab/high: waits for 4 evicted pods to leave (its room is held)");
    ck_assert_int_eq(evict_all(), 4);
    settle();
    ck_assert_ptr_nonnull(node_of("lab", "high-0"));
    ck_assert_ptr_nonnull(node_of("lab", "high-1"));
    check_invariants();
}
END_TEST

/* A refused eviction (a PodDisruptionBudget) leaves the victim running and the plan made on
 * its room abandoned with a reason: nothing half done. */
START_TEST(a_refused_eviction_abandons_the_plan)
{
    struct policy_eviction *ev;
    struct policy_gang_view g;
    size_t n;
    char why[512];

    add_node("n1", 64, 8);
    gpu_queue("team-a", 0);
    gpu_queue("team-b", 8000);
    add_gpu_gang("a", "team-a", 8);
    settle();
    add_gpu_gang("b", "team-b", 6);
    ck_assert_int_eq(schedule("lab", "b-0", why, sizeof(why)), POLICY_BIND_REJECT);
    ck_assert_int_eq(policy_evictions_take(C, &ev, &n), POLICY_OK);
    ck_assert_int_eq(n, 8);
    for (size_t i = 0; i < n; i++)
        ck_assert_int_eq(policy_eviction_done(C, ev[i].namespace_, ev[i].name, false,
                                              "Cannot evict pod as it would violate the pod's "
                                              "disruption budget.",
                                              NOW),
                         POLICY_OK);
    policy_evictions_free(ev, n);
    ck_assert_int_eq(count_placed("lab", "a-", 8), 8);
    ck_assert(policy_gang_view_get(C, "lab/a", &g));
    ck_assert_int_eq(g.state, POLICY_GANG_BOUND);
    ck_assert(policy_gang_view_get(C, "lab/b", &g));
    ck_assert_int_eq(g.state, POLICY_GANG_PENDING);
    ck_assert_msg(strncmp(g.reason, "gang lab/b: room was being made for it, but evicting lab/a-",
                          59) == 0 &&
                      strstr(g.reason, " was refused: Cannot evict pod as it would violate the "
                                       "pod's disruption budget."),
                  "%s", g.reason);
    check_invariants();
    /* The refused gang is no victim again for refusedVictimWait (30 s by default): asked a
     * second later, the engine evicts nothing; 30 s after the refusal, it tries again. */
    NOW += 1000;
    ck_assert_int_eq(schedule("lab", "b-0", why, sizeof(why)), POLICY_BIND_REJECT);
    ck_assert_int_eq(policy_evictions_take(C, &ev, &n), POLICY_OK);
    ck_assert_int_eq(n, 0);
    policy_evictions_free(ev, n);
    NOW += 29000;
    ck_assert_int_eq(schedule("lab", "b-0", why, sizeof(why)), POLICY_BIND_REJECT);
    ck_assert_int_eq(policy_evictions_take(C, &ev, &n), POLICY_OK);
    ck_assert_int_eq(n, 8);
    policy_evictions_free(ev, n);
    check_invariants();
}
END_TEST


/* ---- members beyond a minimum: reclaiming for one, waiting for a subgroup ahead ---- */

static const char *filter_offer(const char *name, const char *const *offer, size_t n, char *why,
                                size_t len);

/* 8b37105: an extra reclaims one GPU; its victim's eviction is refused (a PDB). The victim
 * stays bound: the extra must not keep a plan on the same room. */
START_TEST(refused_eviction_for_an_extra_abandons_its_plan)
{
    struct policy_eviction *ev;
    enum policy_bind_outcome o;
    size_t n;
    char why[512], name[32];

    add_node("n1", 64, 8);
    gpu_queue("team-a", 0);
    gpu_queue("team-b", 8000);
    add_gang("lab/b", 1, "team-b");
    add_pod("lab", "lab/b", "team-b", (struct pod_ask){"b-0", 1, 1});
    settle();
    ck_assert_ptr_nonnull(node_of("lab", "b-0"));
    add_gang("lab/a", 1, "team-a");
    for (int i = 0; i < 7; i++) {
        snprintf(name, sizeof(name), "a-%d", i);
        add_pod("lab", "lab/a", "team-a", (struct pod_ask){name, 1, 1});
    }
    settle();
    ck_assert_int_eq(count_placed("lab", "a-", 7), 7);
    NOW += 1000;
    add_pod("lab", "lab/b", "team-b", (struct pod_ask){"b-1", 1, 1});
    ck_assert_int_eq(schedule("lab", "b-1", why, sizeof(why)), POLICY_BIND_REJECT);
    ck_assert_int_eq(policy_evictions_take(C, &ev, &n), POLICY_OK);
    ck_assert_int_eq(n, 1); /* one extra of lab/a */
    ck_assert_int_eq(policy_eviction_done(C, ev[0].namespace_, ev[0].name, false,
                                          "Cannot evict pod as it would violate the pod's "
                                          "disruption budget.",
                                          NOW),
                     POLICY_OK);
    policy_evictions_free(ev, n);
    ck_assert_int_eq(count_placed("lab", "a-", 7), 7);
    /* The evictor hands b's planned pods back; kube-scheduler asks about b-1 again. 7 of
     * lab/a + b-0 stay on n1's 8 GPUs: b-1 has no room. */
    o = schedule("lab", "b-1", why, sizeof(why));
    ck_assert_msg(o == POLICY_BIND_REJECT, "b-1 %s on %s next to the refused victim",
                  o == POLICY_BIND_COMMIT ? "bound" : "held", node_of("lab", "b-1"));
    check_invariants();
}
END_TEST

/* The same with GPU shares, which kube-scheduler does not count: the device is given out
 * twice (b-0 0.5 + a-0 0.25 + a-1 0.25 + b-1 0.25 on one GPU). */
START_TEST(refused_eviction_for_an_extra_does_not_double_book_a_shared_gpu)
{
    struct policy_eviction *ev;
    enum policy_bind_outcome o;
    size_t n;
    char why[512];

    add_node("n1", 64, 1);
    gpu_queue("team-a", 0);
    gpu_queue("team-b", 1000);
    add_gang("lab/b", 1, "team-b");
    add_pod("lab", "lab/b", "team-b", (struct pod_ask){"b-0", 1, 0, 500});
    settle();
    add_gang("lab/a", 1, "team-a");
    add_pod("lab", "lab/a", "team-a", (struct pod_ask){"a-0", 1, 0, 250});
    add_pod("lab", "lab/a", "team-a", (struct pod_ask){"a-1", 1, 0, 250});
    settle();
    ck_assert_int_eq(count_placed("lab", "a-", 2), 2);
    NOW += 1000;
    add_pod("lab", "lab/b", "team-b", (struct pod_ask){"b-1", 1, 0, 250});
    ck_assert_int_eq(schedule("lab", "b-1", why, sizeof(why)), POLICY_BIND_REJECT);
    ck_assert_int_eq(policy_evictions_take(C, &ev, &n), POLICY_OK);
    ck_assert_int_eq(n, 1);
    policy_eviction_done(C, ev[0].namespace_, ev[0].name, false, "PDB", NOW);
    policy_evictions_free(ev, n);
    o = schedule("lab", "b-1", why, sizeof(why));
    ck_assert_msg(o == POLICY_BIND_REJECT, "b-1 %s on %s", o == POLICY_BIND_COMMIT ? "bound" : "held",
                  node_of("lab", "b-1"));
    check_invariants();
}
END_TEST

/* Eviction model seed 8114: a running gang's two extras reclaim a GPU each, on two nodes. The
 * first victim leaves and is made again; the second is refused (a PDB). Only the plan on the
 * refused victim's node goes: the first extra keeps the room its victim left, or that victim,
 * made again, takes it back, to be evicted for the same extra once the pause ends. */
START_TEST(refused_eviction_keeps_an_extras_plan_on_another_node)
{
    struct policy_eviction *ev;
    size_t n;
    const char *first;
    char why[512];

    add_node("n1", 64, 1);
    add_node("n2", 64, 1);
    add_node("n3", 64, 1);
    gpu_queue("team-a", 0);
    gpu_queue("team-b", 3000);
    add_gang("lab/b", 1, "team-b");
    add_pod("lab", "lab/b", "team-b", (struct pod_ask){"b-0", 1, 1});
    settle();
    add_pod("lab", NULL, "team-a", (struct pod_ask){"a", 1, 1});
    add_pod("lab", NULL, "team-a", (struct pod_ask){"c", 1, 1});
    settle();
    ck_assert_ptr_nonnull(node_of("lab", "a"));
    ck_assert_ptr_nonnull(node_of("lab", "c"));
    NOW += 1000;
    add_pod("lab", "lab/b", "team-b", (struct pod_ask){"b-1", 1, 1});
    ck_assert_int_eq(schedule("lab", "b-1", why, sizeof(why)), POLICY_BIND_REJECT);
    ck_assert_ptr_nonnull(node_of("lab", "b-1")); /* planned on its victim's room */
    first = strcmp(node_of("lab", "a"), node_of("lab", "b-1")) == 0 ? "a" : "c";
    ck_assert_int_eq(evict_all(), 1); /* it leaves, and is made again, pending */
    add_pod("lab", "lab/b", "team-b", (struct pod_ask){"b-2", 1, 1});
    ck_assert_int_eq(schedule("lab", "b-2", why, sizeof(why)), POLICY_BIND_REJECT);
    ck_assert_int_eq(policy_evictions_take(C, &ev, &n), POLICY_OK);
    ck_assert_int_eq(n, 1);
    ck_assert_str_ne(ev[0].name, first);
    policy_eviction_done(C, ev[0].namespace_, ev[0].name, false, "PDB", NOW);
    policy_evictions_free(ev, n);
    ck_assert_ptr_null(node_of("lab", "b-2"));
    ck_assert_msg(node_of("lab", "b-1"), "b-1 lost the room its victim left");
    ck_assert_int_eq(schedule("lab", first, why, sizeof(why)), POLICY_BIND_REJECT);
    ck_assert_int_eq(schedule("lab", "b-1", why, sizeof(why)), POLICY_BIND_COMMIT);
    check_invariants();
}
END_TEST

/* The same refusal under an ancestor's limit: dept (limit 2 GPUs) holds a (team-a, on n1) and
 * b-0 (team-b, on n2). b's extra b-1 fits n2's free GPU but not dept's limit, so a, on another
 * node, is its victim. a's eviction is refused: a stays, and b-1's plan on n2 must go too, or
 * dept holds 3 GPUs under a limit of 2. */
START_TEST(refused_eviction_under_a_limit_takes_back_a_plan_on_another_node)
{
    struct policy_eviction *ev;
    size_t n;
    char why[512];

    add_queue("dept", NULL, 2000, 2000);
    add_queue("team-a", "dept", 0, -1);
    add_queue("team-b", "dept", 2000, -1);
    add_node("n1", 64, 1);
    add_pod("lab", NULL, "team-a", (struct pod_ask){"a", 1, 1});
    settle();
    ck_assert_str_eq(node_of("lab", "a"), "n1");
    add_node("n2", 64, 2);
    add_gang("lab/b", 1, "team-b");
    add_pod("lab", "lab/b", "team-b", (struct pod_ask){"b-0", 1, 1});
    settle();
    ck_assert_str_eq(node_of("lab", "b-0"), "n2");
    NOW += 1000;
    add_pod("lab", "lab/b", "team-b", (struct pod_ask){"b-1", 1, 1});
    ck_assert_int_eq(schedule("lab", "b-1", why, sizeof(why)), POLICY_BIND_REJECT);
    ck_assert_int_eq(policy_evictions_take(C, &ev, &n), POLICY_OK);
    ck_assert_int_eq(n, 1);
    ck_assert_str_eq(ev[0].name, "a");
    ck_assert_msg(node_of("lab", "b-1") && strcmp(node_of("lab", "b-1"), "n2") == 0,
                  "b-1 planned on %s", node_of("lab", "b-1") ? node_of("lab", "b-1") : "nothing");
    policy_eviction_done(C, ev[0].namespace_, ev[0].name, false, "PDB", NOW);
    policy_evictions_free(ev, n);
    ck_assert_msg(!node_of("lab", "b-1"), "b-1 kept its plan on %s with a staying",
                  node_of("lab", "b-1"));
    check_invariants();
}
END_TEST

/* 440f7a4: subgroups a and b (minimum 1 each) are bound; a-1 and b-1 are extras. The last
 * free GPU is on n3, which kube-scheduler never offers a-1 (a constraint muster does not
 * model: pod anti-affinity, a volume's zone). b-1 must not wait forever for a-1. */
START_TEST(an_extra_does_not_wait_forever_for_a_member_kube_scheduler_never_places)
{
    static const struct policy_subgroup_spec subs[] = {{"a", 1}, {"b", 1}};
    static const char *const a_offer[] = {"n1", "n2"};
    char why[512];
    bool placed = false;

    add_node("n1", 64, 1);
    add_node("n2", 64, 1);
    add_composed_gang("lab/rc", POLICY_GANG_PODGROUP, NULL, subs, 2);
    add_workers("lab/rc", NULL, "a", 1, 1, 1);
    add_workers("lab/rc", NULL, "b", 1, 1, 1);
    settle();
    ck_assert_ptr_nonnull(node_of("lab", "rc-a-worker-0"));
    ck_assert_ptr_nonnull(node_of("lab", "rc-b-worker-0"));
    add_node("n3", 64, 1);
    add_pod("lab", "lab/rc", NULL, (struct pod_ask){"rc-a-worker-1", 1, 1, 0, false, "a"});
    add_pod("lab", "lab/rc", NULL, (struct pod_ask){"rc-b-worker-1", 1, 1, 0, false, "b"});
    for (int round = 0; round < 20 && !placed; round++) {
        NOW += 30000; /* two plan TTLs over the rounds, and more */
        ck_assert_ptr_null(filter_offer("rc-a-worker-1", a_offer, 2, why, sizeof(why)));
        placed = schedule("lab", "rc-b-worker-1", why, sizeof(why)) == POLICY_BIND_COMMIT;
    }
    ck_assert_msg(placed, "rc-b-worker-1 still waits after 10 minutes: %s", why);
    check_invariants();
}
END_TEST

/* An extra that does not fit its offer but fits a node kube-scheduler did not offer it:
 * preclaim finds it needs no victim and still "decides": a plan outside the offer. */
START_TEST(an_extra_outside_its_offer_is_not_planned_by_a_reclaim_of_nothing)
{
    static const char *const offer[] = {"n1"};
    struct policy_pod_view v;
    char why[512];

    add_node("n1", 64, 2);
    gpu_queue("team-r", 2000);
    gpu_queue("team-v", 0);
    add_gang("lab/rc", 1, "team-r");
    add_pod("lab", "lab/rc", "team-r", (struct pod_ask){"rc-0", 1, 1});
    add_pod("lab", NULL, "team-v", (struct pod_ask){"v", 1, 1});
    settle();
    ck_assert_ptr_nonnull(node_of("lab", "rc-0"));
    ck_assert_ptr_nonnull(node_of("lab", "v"));
    add_node("n2", 64, 1);
    NOW += 1000;
    add_pod("lab", "lab/rc", "team-r", (struct pod_ask){"rc-1", 1, 1});
    ck_assert_ptr_null(filter_offer("rc-1", offer, 1, why, sizeof(why)));
    ck_assert(policy_pod_view_get(C, "lab", "rc-1", &v));
    ck_assert_msg(v.phase == POLICY_POD_PENDING, "rc-1 %s on %s: %s",
                  policy_pod_phase_name(v.phase), v.node, why);
}
END_TEST

/* ---- queue limits through every placement path (issue 11) ---------------- */

/* A node with gpus devices of mib MiB each (the nvidia.com/gpu.memory label). */
static void add_memory_node(const char *name, int64_t gpus, int64_t mib)
{
    char value[24];
    const struct policy_label labels[] = {{"nvidia.com/gpu.memory", value}};
    struct policy_node_spec n = {.name = name,
                                 .labels = labels,
                                 .nlabels = 1,
                                 .cpu_milli = 64000,
                                 .memory_bytes = 512 * GiB,
                                 .pods = 110,
                                 .gpus = gpus,
                                 .gpu_memory_mib = mib};

    snprintf(value, sizeof(value), "%lld", (long long)mib);
    ck_assert_int_eq(policy_node_upsert(C, &n), POLICY_OK);
}

/* A pod of lab asking mib MiB of one GPU (gpu-memory): its share is known only on a node. */
static void add_memory_pod(const char *gang, const char *queue, const char *name, int64_t mib,
                           bool head)
{
    char uid[128];
    struct policy_pod_spec p = {.namespace_ = "lab",
                                .name = name,
                                .uid = uid,
                                .cpu_milli = 1000,
                                .memory_bytes = 4 * GiB,
                                .gpu_memory_mib = mib,
                                .gang = gang,
                                .gang_head = head,
                                .queue = queue,
                                .managed = true};

    snprintf(uid, sizeof(uid), "uid-lab-%s", name);
    ck_assert_int_eq(policy_pod_upsert(C, &p, NOW), POLICY_OK);
}

/* kube-scheduler's filter of lab/name offering these nodes: the node that fits, or NULL with
 * the reason in why. */
static const char *filter_offer(const char *name, const char *const *offer, size_t n, char *why,
                                size_t len)
{
    struct policy_filter_result fr;
    const char *fits = NULL, *reason;

    ck_assert_int_eq(policy_filter(C, "lab", name, offer, n, NOW, &fr), POLICY_OK);
    check_reason(&fr, offer, n);
    for (size_t i = 0; i < n && !fits; i++)
        if (fr.verdicts[i].fit == POLICY_FITS)
            fits = offer[i];
    reason = fr.reason ? fr.reason : n > 0 ? fr.verdicts[0].reason : NULL;
    snprintf(why, len, "%s", !fits && reason ? reason : "");
    policy_filter_result_cleanup(&fr);
    return fits;
}

/* A bind of lab/name to node; a commit's Bindings all succeed. */
static enum policy_bind_outcome bind_to(const char *name, const char *node, char *why, size_t len)
{
    struct policy_bind_result br;
    enum policy_bind_outcome out;

    ck_assert_int_eq(policy_bind(C, "lab", name, node, NOW, &br), POLICY_OK);
    out = br.outcome;
    snprintf(why, len, "%s", br.reason ? br.reason : "");
    for (size_t i = 0; out == POLICY_BIND_COMMIT && i < br.n; i++)
        ck_assert_int_eq(policy_bind_done(C, br.members[i].namespace_, br.members[i].name, true,
                                          NULL),
                         POLICY_OK);
    policy_bind_result_cleanup(&br);
    return out;
}

/*
 * Issue 11: 8 GiB of a 10 GiB GPU is 0.8 of it, but a gpu-memory pod's share is known only on
 * its node, and the queue was asked with a share of 0: a queue limited to 0.5 GPU held 1.6.
 * Each member is now checked with its share on the node it would take.
 */
static const struct {
    const char *parent; /* the limit is the parent's; NULL: team-a's own */
    bool gang;          /* one gang of two, or two pods of their own */
    const char *why;    /* what the first pod asked is told */
} memory_limit_cases[] = {
    {NULL, true,
     "queue team-a: limit 0.5 GPU, 0 GPUs in use, the gang needs 1.6 GPUs; never: more than the "
     "limit"},
    {NULL, false,
     "queue team-a: limit 0.5 GPU, 0 GPUs in use, the pod needs 0.8 GPU; never: more than the "
     "limit"},
    {"org", true,
     "queue org: limit 0.5 GPU, 0 GPUs in use, the gang needs 1.6 GPUs; never: more than the "
     "limit"},
};

START_TEST(gpu_memory_asks_are_checked_with_their_share_on_the_node)
{
    const char *offer[] = {"n1"};
    const char *parent = memory_limit_cases[_i].parent;
    const char *gang = memory_limit_cases[_i].gang ? "lab/mem" : NULL;
    char why[512];

    if (parent)
        add_queue(parent, NULL, -1, 500);
    add_queue("team-a", parent, -1, parent ? -1 : 500);
    add_memory_node("n1", 4, 10240);
    if (gang)
        add_gang(gang, 2, "team-a");
    add_memory_pod(gang, "team-a", "mem-0", 8192, true);
    add_memory_pod(gang, "team-a", "mem-1", 8192, false);
    for (int i = 0; i < 2; i++) {
        ck_assert_ptr_null(filter_offer(i ? "mem-1" : "mem-0", offer, 1, why, sizeof(why)));
        if (i == 0)
            ck_assert_str_eq(why, memory_limit_cases[_i].why);
        ck_assert_int_eq(probe("team-a").allocated, 0);
        check_invariants();
    }
    ck_assert_int_eq(phase_of("lab", "mem-0"), POLICY_POD_PENDING);
    ck_assert_int_eq(phase_of("lab", "mem-1"), POLICY_POD_PENDING);
}
END_TEST

/*
 * Issue 11: a gang planned on 80 GiB GPUs (32 GiB is 0.4 of one) under a limit of 1; then
 * kube-scheduler offers only a node of 40 GiB GPUs (0.8 there): a re-filter moved one member
 * within the offer and a bind to that node moved the other, and the queue held 1.6. Now each
 * move is checked against the queue with the share on the node it moves to: under a limit of
 * 1.2 the first move fits (0.4 + 0.8) and the second does not; under 1, neither.
 */
static const struct {
    int64_t limit;
    bool first_moves; /* the re-filter offering only the small node moves mem-0 there */
} offer_limit_cases[] = {
    {1000, false},
    {1200, true},
};

START_TEST(members_moved_within_the_offer_keep_their_queue_limit)
{
    const char *big[] = {"big"}, *small[] = {"small"};
    bool moves = offer_limit_cases[_i].first_moves;
    char why[512], limit[64];
    const char *fits;

    add_queue("team-a", NULL, -1, offer_limit_cases[_i].limit);
    snprintf(limit, sizeof(limit), "queue team-a: limit %s, ", moves ? "1.2 GPUs" : "1 GPU");
    add_memory_node("big", 4, 81920);
    add_gang("lab/mem", 2, "team-a");
    add_memory_pod("lab/mem", "team-a", "mem-0", 32768, true);
    add_memory_pod("lab/mem", "team-a", "mem-1", 32768, false);
    ck_assert_ptr_nonnull(filter_offer("mem-0", big, 1, why, sizeof(why)));
    ck_assert_int_eq(probe("team-a").allocated, 800);
    add_memory_node("small", 4, 40960);

    /* The re-filter: filter.c's move_within. */
    fits = filter_offer("mem-0", small, 1, why, sizeof(why));
    ck_assert_msg(moves ? fits != NULL : fits == NULL && strstr(why, limit), "fits %s: %s",
                  fits ? fits : "none", why);
    ck_assert_str_eq(node_of("lab", "mem-0"), moves ? "small" : "big");
    ck_assert_int_eq(probe("team-a").allocated, moves ? 1200 : 800);
    check_invariants();

    /* A bind to a node other than the planned one: bind.c's hold_on. */
    ck_assert_int_eq(bind_to("mem-1", "small", why, sizeof(why)), POLICY_BIND_REJECT);
    ck_assert_msg(strstr(why, limit), "%s", why);
    ck_assert_str_eq(node_of("lab", "mem-1"), "big");
    ck_assert_int_eq(probe("team-a").allocated, moves ? 1200 : 800);
    check_invariants();

    /* Where each was placed, the gang binds whole and within its limit. */
    ck_assert_int_eq(bind_to("mem-0", moves ? "small" : "big", why, sizeof(why)),
                     POLICY_BIND_WAIT);
    ck_assert_int_eq(bind_to("mem-1", "big", why, sizeof(why)), POLICY_BIND_COMMIT);
    ck_assert_int_eq(phase_of("lab", "mem-0"), POLICY_POD_BOUND);
    ck_assert_int_eq(probe("team-a").allocated, moves ? 1200 : 800);
    check_invariants();
}
END_TEST

/* ---- randomized: gpu-memory gangs, GPUs of three sizes, offers of a few nodes ---- */

#define MEM_GANGS 24
#define MEM_MEMBERS 4

static const char *const mem_nodes[] = {"gpu16-0", "gpu16-1", "gpu40-0",
                                        "gpu40-1", "gpu80-0", "gpu80-1"};
#define MEM_NODES ((int)(sizeof(mem_nodes) / sizeof(mem_nodes[0])))

/* What the cluster holds of each gang, to make an evicted member again as it was. */
struct mem_world {
    int members[MEM_GANGS]; /* 0: no such gang now */
    bool alone[MEM_GANGS];  /* a pod of its own, not a gang */
    const char *queue[MEM_GANGS];
    int64_t mib[MEM_GANGS][MEM_MEMBERS];
    int refused, moved, elsewhere, committed;
};

static void mem_pod_add(struct mem_world *w, int g, int m)
{
    char key[32], name[32];

    snprintf(key, sizeof(key), "lab/m%d", g);
    snprintf(name, sizeof(name), "m%d-%d", g, m);
    add_memory_pod(w->alone[g] ? NULL : key, w->queue[g], name, w->mib[g][m], m == 0);
}

static void mem_gang_arrives(struct mem_world *w, int g)
{
    static const int64_t asks[] = {4096, 8192, 12288, 16384, 20480, 32768};
    static const char *const queues[] = {"mem-a", "mem-b1", "mem-b2"};
    char key[32];

    w->members[g] = 1 + (int)(rng() % MEM_MEMBERS);
    w->alone[g] = w->members[g] == 1 && rng() % 2 == 0;
    w->queue[g] = queues[rng() % 3];
    snprintf(key, sizeof(key), "lab/m%d", g);
    if (!w->alone[g])
        add_gang(key, w->members[g], w->queue[g]);
    for (int m = 0; m < w->members[g]; m++) {
        w->mib[g][m] = asks[rng() % 6];
        mem_pod_add(w, g, m);
    }
}

static void mem_gang_leaves(struct mem_world *w, int g)
{
    char key[32], name[32];

    for (int m = 0; m < w->members[g]; m++) {
        snprintf(name, sizeof(name), "m%d-%d", g, m);
        ck_assert_int_eq(policy_pod_forget(C, "lab", name), POLICY_OK);
    }
    snprintf(key, sizeof(key), "lab/m%d", g);
    if (!w->alone[g])
        policy_gang_forget(C, key, POLICY_GANG_WORKLOAD);
    w->members[g] = 0;
}

/* Evictions decided for a waiting gang: each victim goes, and is made again, pending. */
static void mem_evictions(struct mem_world *w)
{
    struct policy_eviction *ev;
    size_t n;

    ck_assert_int_eq(policy_evictions_take(C, &ev, &n), POLICY_OK);
    for (size_t i = 0; i < n; i++) {
        int g = -1, m = -1;

        ck_assert_int_eq(sscanf(ev[i].name, "m%d-%d", &g, &m), 2);
        ck_assert_int_eq(policy_eviction_done(C, "lab", ev[i].name, true, NULL, NOW), POLICY_OK);
        ck_assert_int_eq(policy_pod_forget(C, "lab", ev[i].name), POLICY_OK);
        mem_pod_add(w, g, m);
    }
    policy_evictions_free(ev, n);
}

/* A bind of a member to target: held (and now and then given up), committed, or refused. */
static void mem_bind(struct mem_world *w, const char *name, const char *target)
{
    struct policy_bind_result br;

    ck_assert_int_eq(policy_bind(C, "lab", name, target, NOW, &br), POLICY_OK);
    w->refused += br.outcome == POLICY_BIND_REJECT && strncmp(br.reason, "queue ", 6) == 0;
    w->committed += br.outcome == POLICY_BIND_COMMIT;
    for (size_t i = 0; br.outcome == POLICY_BIND_COMMIT && i < br.n; i++)
        ck_assert_int_eq(policy_bind_done(C, "lab", br.members[i].name, true, NULL), POLICY_OK);
    if (br.outcome == POLICY_BIND_WAIT && rng() % 4 == 0)
        ck_assert_int_eq(policy_bind_cancel(C, "lab", name, NULL, 0), POLICY_OK);
    policy_bind_result_cleanup(&br);
}

/* kube-scheduler offers a member a few nodes, and sometimes binds it to one of them that is
 * not the one muster answered. */
static void mem_offer(struct mem_world *w, int g)
{
    const char *offer[MEM_NODES], *fits, *before;
    char name[32], why[512], was[32] = "";
    size_t n = 0;
    unsigned mask = 1 + rng() % ((1u << MEM_NODES) - 1);

    snprintf(name, sizeof(name), "m%d-%d", g, (int)(rng() % w->members[g]));
    if (phase_of("lab", name) == POLICY_POD_BOUND)
        return;
    if ((before = node_of("lab", name)))
        snprintf(was, sizeof(was), "%s", before);
    for (int k = 0; k < MEM_NODES; k++)
        if (mask & (1u << k))
            offer[n++] = mem_nodes[k];
    fits = filter_offer(name, offer, n, why, sizeof(why));
    w->refused += !fits && strstr(why, "queue ") != NULL;
    w->moved += fits && *was && strcmp(was, fits) != 0;
    if (rng() % 2 == 0) {
        const char *other = offer[rng() % n], *target = rng() % 3 == 0 || !fits ? other : fits;

        w->elsewhere += !fits || strcmp(target, fits) != 0;
        mem_bind(w, name, target);
    }
}

/*
 * Gangs of gpu-memory pods (4 to 32 GiB) on GPUs of 16, 40 and 80 GiB, in three queues under
 * limits (one a child of a limited parent). kube-scheduler offers each filter a random subset
 * of the nodes and binds now and then to an offered node muster did not answer. After every
 * step: no queue or ancestor over its limit, no GPU shared past one device, no node over
 * its allocatable, no gang partly bound.
 */
START_TEST(random_offers_of_gpu_memory_keep_queue_limits)
{
    static const int64_t mib[] = {16384, 40960, 81920};
    struct mem_world w = {0};

    rng_state = 0x2545F4914F6CDD1DULL + (uint64_t)_i;
    for (int n = 0; n < MEM_NODES; n++)
        add_memory_node(mem_nodes[n], 2, mib[n / 2]);
    add_queue("mem-a", NULL, -1, 1500);
    add_queue("mem-b", NULL, -1, 2000);
    add_queue("mem-b1", "mem-b", -1, 1000);
    add_queue("mem-b2", "mem-b", -1, -1);
    for (int step = 0; step < 2000; step++) {
        int g = (int)(rng() % MEM_GANGS);

        if (w.members[g] && rng() % 8 == 0)
            mem_gang_leaves(&w, g);
        else if (!w.members[g])
            mem_gang_arrives(&w, g);
        else
            mem_offer(&w, g);
        mem_evictions(&w);
        NOW += rng() % 40 == 0 ? 61000 : 100; /* now and then stale plans expire */
        check_invariants();
    }
    /* The paths under test were taken: refusals by a queue, moves, binds elsewhere. */
    ck_assert_int_gt(w.refused, 0);
    ck_assert_int_gt(w.moved, 0);
    ck_assert_int_gt(w.elsewhere, 0);
    ck_assert_int_gt(w.committed, 0);
}
END_TEST

/* ---- randomized: every promise, every step --------------------------------- */

static void random_queue(const char *name, const char *parent, int64_t gpu_quota,
                         int64_t gpu_limit, int32_t priority)
{
    struct policy_queue_spec q = {.name = name, .parent = parent, .priority = priority};

    for (int r = 0; r < POLICY_RES_COUNT; r++) {
        q.quota.v[r] = r == POLICY_RES_GPU ? gpu_quota : -1;
        q.limit.v[r] = r == POLICY_RES_GPU ? gpu_limit : -1;
        q.over_quota_weight.v[r] = 1 + (int64_t)(rng() % 3);
    }
    ck_assert_int_eq(policy_queue_upsert(C, &q), POLICY_OK);
}

static void random_cluster(void)
{
    char name[32];

    for (int n = 0; n < 4; n++) {
        snprintf(name, sizeof(name), "node-%d", n);
        add_node(name, 32, 8);
    }
    random_queue("q0", NULL, 8000, 24000, 0);
    random_queue("q1", NULL, 8000, -1, 0);
    random_queue("q1-child", "q1", 4000, 12000, 0);
    random_queue("q2", NULL, 0, -1, 1);
}

/* The nodes and queues of one engine, as they are, in another. */
static void copy_node(const struct policy_node_view *v, void *ctx)
{
    static const struct policy_label labels[] = {{"nvidia.com/gpu.memory", "81920"}};
    struct policy_node_spec n = {.name = v->name, .labels = labels, .nlabels = 1,
                                 .cpu_milli = v->cpu_milli, .memory_bytes = v->memory_bytes,
                                 .pods = v->pods, .gpus = v->gpus,
                                 .gpu_memory_mib = v->gpu_memory_mib};

    ck_assert_int_eq(policy_node_upsert(ctx, &n), POLICY_OK);
}

static void copy_queue(const struct policy_queue_view *v, void *ctx)
{
    struct policy_queue_spec q = {.name = v->name, .parent = v->parent, .priority = v->priority,
                                  .quota = v->quota, .limit = v->limit,
                                  .over_quota_weight = v->over_quota_weight,
                                  .reclaim_min_runtime_ms = v->reclaim_min_runtime_ms,
                                  .preempt_min_runtime_ms = v->preempt_min_runtime_ms};

    if (!v->implicit)
        ck_assert_int_eq(policy_queue_upsert(ctx, &q), POLICY_OK);
}

/* Every pod that holds room, as a bound pod of its own in a fresh engine. */
static void copy_held(const struct policy_pod_view *v, void *ctx)
{
    struct policy_cluster *dst = ctx;
    struct policy_pod_spec s;
    char uid[160];

    if (!v->node || v->phase == POLICY_POD_PENDING)
        return;
    snprintf(uid, sizeof(uid), "held-%s-%s", v->namespace_, v->name);
    s = (struct policy_pod_spec){.namespace_ = v->namespace_, .name = v->name, .uid = uid,
                                 .cpu_milli = v->cpu_milli, .memory_bytes = v->memory_bytes,
                                 .gpus = v->gpus, .gpu_share_milli = v->gpu_share_milli,
                                 .queue = v->queue, .managed = v->phase != POLICY_POD_EVICTING,
                                 .node = v->node, .gpu_groups = v->gpu_groups,
                                 .priority = v->priority};
    ck_assert_int_eq(policy_pod_upsert(dst, &s, NOW), POLICY_OK);
}

struct gang_copy {
    const char *gang;
    struct policy_cluster *dst;
    char first[64];
};

static void copy_pending_members(const struct policy_pod_view *v, void *ctx)
{
    struct gang_copy *g = ctx;
    struct policy_pod_spec s;

    if (strcmp(v->gang, g->gang) != 0 || v->phase != POLICY_POD_PENDING)
        return;
    s = (struct policy_pod_spec){.namespace_ = v->namespace_, .name = v->name, .uid = v->uid,
                                 .cpu_milli = v->cpu_milli, .memory_bytes = v->memory_bytes,
                                 .gpus = v->gpus, .gpu_share_milli = v->gpu_share_milli,
                                 .gang = g->gang, .gang_head = v->gang_head,
                                 .queue = v->queue, .managed = true,
                                 .priority = v->priority, .subgroup = v->subgroup};
    ck_assert_int_eq(policy_pod_upsert(g->dst, &s, NOW), POLICY_OK);
    if (!g->first[0])
        snprintf(g->first, sizeof(g->first), "%s", v->name);
}

/*
 * Would this waiting gang's minimum fit the room nobody holds, within its queue's and its
 * ancestors' limits, were it the only one waiting? Asked of a copy: the same nodes and
 * queues, every pod that holds room bound, and the gang's pending members.
 */
static bool fits_alone(const struct policy_gang_view *gv)
{
    struct policy_cluster *orig = C;
    struct gang_copy g = {.gang = gv->key};
    struct policy_gang_spec spec = {.key = gv->key, .min_members = gv->min_members};
    struct policy_subgroup_spec subs[8];
    const char *names[64];
    struct policy_filter_result fr;
    struct policy_gang_view planned;
    size_t n;
    bool fits = false;

    for (size_t i = 0; i < gv->nsubgroups && i < 8; i++)
        subs[i] = (struct policy_subgroup_spec){gv->subgroups[i].name,
                                                gv->subgroups[i].min_members};
    spec.subgroups = gv->nsubgroups ? subs : NULL;
    spec.nsubgroups = gv->nsubgroups < 8 ? gv->nsubgroups : 8;
    /* The free room only: a copy that evicted for the gang would say it fits. */
    C = policy_cluster_new(&(struct policy_options){.strategy = STRATEGY,
                                                     .plan_ttl_ms = 60000,
                                                     .no_reclaim = true,
                                                     .no_preemption = true});
    ck_assert_ptr_nonnull(C);
    g.dst = C;
    policy_each_node(orig, copy_node, C);
    policy_each_queue(orig, copy_queue, C);
    policy_each_pod(orig, copy_held, C);
    ck_assert_int_eq(policy_gang_upsert(C, &spec), POLICY_OK);
    policy_each_pod(orig, copy_pending_members, &g);
    n = node_names(names, 64);
    /* The first member filtered plans the gang's minimum; it may itself be beyond the
     * minimum and told to wait for the gang, so the gang's state says whether it fit. */
    if (g.first[0] && policy_filter(C, "ns", g.first, names, n, NOW, &fr) == POLICY_OK) {
        policy_filter_result_cleanup(&fr);
        fits = policy_gang_view_get(C, gv->key, &planned) &&
               planned.state != POLICY_GANG_PENDING;
    }
    policy_cluster_free(C);
    C = orig;
    return fits;
}

struct waiting_check {
    int pending, conserving;
};

/* The gang a reason says is ahead ("waits: gang X of queue Y is ahead"), or false. */
static bool ahead_in(const char *reason, char *key, size_t len)
{
    char fmt[32];

    if (!reason || strncmp(reason, "waits: gang ", 12) != 0)
        return false;
    snprintf(fmt, sizeof(fmt), "%%%zus", len - 1);
    return sscanf(reason + 12, fmt, key) == 1;
}

/*
 * A gang turned away for a gang ahead: the excuse holds only while that gang waits whole
 * (pending, every minimum member there) and could itself use the room now free, within its
 * queue's limits: otherwise it blocks nobody and the room sits idle. Following the excuses
 * from gang to gang must end: two gangs that each wait for the other, both able to run,
 * leave the room idle as surely as a gang with no excuse.
 */
static void check_excuse(const char *waiting, const char *first_ahead)
{
    char seen[32][128], key[128];
    size_t nseen = 0;

    snprintf(key, sizeof(key), "%s", first_ahead);
    snprintf(seen[nseen++], sizeof(seen[0]), "%s", waiting);
    for (;;) {
        struct policy_gang_view ahead;

        for (size_t i = 0; i < nseen; i++)
            ck_assert_msg(strcmp(seen[i], key) != 0,
                          "%s waits for %s, which waits (through others) for %s", waiting,
                          first_ahead, key);
        ck_assert_msg(nseen < 32, "%s: the gangs ahead wait for one another past 32", waiting);
        snprintf(seen[nseen++], sizeof(seen[0]), "%s", key);
        ck_assert_msg(policy_gang_view_get(C, key, &ahead), "%s waits for %s, which is gone",
                      waiting, key);
        ck_assert_msg(ahead.state == POLICY_GANG_PENDING, "%s waits for %s, which is %s", waiting,
                      key, policy_gang_state_name(ahead.state));
        ck_assert_msg(ahead.members >= ahead.min_members,
                      "%s waits for %s, which has %d of its %d members", waiting, key,
                      ahead.members, ahead.min_members);
        ck_assert_msg(fits_alone(&ahead),
                      "%s waits for %s, which could not use the free room either (%s)", waiting,
                      key, ahead.reason ? ahead.reason : "no reason");
        if (!ahead_in(ahead.reason, key, sizeof(key)))
            return;
    }
}

static void check_conserving(const struct policy_gang_view *v, void *ctx)
{
    struct waiting_check *w = ctx;
    char ahead[128], self[128];

    if (v->state != POLICY_GANG_PENDING || v->members < v->min_members || !v->reason)
        return;
    w->pending++;
    if (ahead_in(v->reason, ahead, sizeof(ahead))) {
        /* An excuse keeps room idle only for a gang the free room holds. One that needs
         * victims may wait for a gang that cannot go either: that one would evict it the
         * moment its victims were gone (stable.c, pevict_for), so none are taken. */
        snprintf(self, sizeof(self), "%s", v->key);
        if (fits_alone(v))
            check_excuse(self, ahead);
        return;
    }
    /* Otherwise nothing ahead holds it back: the room must really be missing. */
    ck_assert_msg(!fits_alone(v), "gang %s waits (%s) though it fits the free room", v->key,
                  v->reason);
    w->conserving++;
}

START_TEST(random_arrivals_keep_every_invariant)
{
    char why[512], gang[32], name[48];
    int live_gangs[64] = {0};
    struct waiting_check w = {0};

    rng_state = 0x9e3779b97f4a7c15ULL + (uint64_t)_i;
    for (int n = 0; n < 4; n++) {
        snprintf(name, sizeof(name), "node-%d", n);
        add_node(name, 32, 8);
    }
    add_queue("q0", NULL, 8000, 12000);
    add_queue("q1", NULL, 8000, 16000);
    add_queue("q1-child", "q1", 4000, 6000);
    for (int step = 0; step < 1500; step++) {
        int g = (int)(rng() % 64);
        const char *queues[] = {"q0", "q1", "q1-child"};

        if (live_gangs[g] && rng() % 3 == 0) { /* the gang finishes and goes away */
            for (int m = 0; m < live_gangs[g]; m++) {
                snprintf(name, sizeof(name), "g%d-%d", g, m);
                policy_pod_forget(C, "ns", name);
            }
            snprintf(gang, sizeof(gang), "ns/g%d", g);
            policy_gang_forget(C, gang, POLICY_GANG_WORKLOAD);
            live_gangs[g] = 0;
        } else if (!live_gangs[g]) { /* a new gang arrives */
            int members = 1 + (int)(rng() % 6);
            const char *q = queues[rng() % 3];

            snprintf(gang, sizeof(gang), "ns/g%d", g);
            add_gang(gang, members, q);
            for (int m = 0; m < members; m++) {
                uint32_t kind = rng() % 3;

                snprintf(name, sizeof(name), "g%d-%d", g, m);
                add_pod("ns", gang, q,
                        (struct pod_ask){name, 1 + rng() % 4, kind == 0 ? rng() % 3 : 0,
                                         kind == 1 ? (int32_t)(100 + rng() % 800) : 0, m == 0});
            }
            live_gangs[g] = members;
        } else { /* kube-scheduler retries one member */
            snprintf(name, sizeof(name), "g%d-%d", g, (int)(rng() % live_gangs[g]));
            if (phase_of("ns", name) != POLICY_POD_BOUND)
                schedule("ns", name, why, sizeof(why));
        }
        if (rng() % 50 == 0)
            NOW += 61000; /* let stale plans expire now and then */
        evict_all(); /* the evictor carries out what a filter decided */
        check_invariants();
    }
    /* Work conservation is a promise about the state once everything pending has been
     * retried, so it is not checked after each step here: kube-scheduler retries one member
     * per step, a gang that fits the room a finished gang left may not have been asked about
     * since, and a gang held at the barrier keeps room for members not yet bound. Only now,
     * with every pending pod retried until nothing moves (random_queues_keep_every_promise
     * does that after every step). */
    settle();
    while (evict_all() > 0)
        settle();
    check_invariants();
    check_views();
    policy_each_gang(C, check_conserving, &w);
    ck_assert_int_gt(w.pending, 0);
}
END_TEST

/*
 * Gangs of three queue trees arrive with random sizes, asks and priorities, finish, are
 * retried, reclaimed and preempted (victims go and come back pending, as KubeRay makes
 * them again), while time passes. Each step ends with kube-scheduler retrying everything
 * until nothing moves; then: no gang partly bound, no node over what stays on it, no queue
 * or ancestor over its limit, and no gang waits on room it could use unless a gang ahead,
 * waiting whole and able to use that room, waits for it (work conservation).
 */
START_TEST(random_queues_keep_every_promise)
{
    char gang[32], name[48];
    int live[48] = {0};
    struct waiting_check w = {0};

    rng_state = 0xD1B54A32D192ED03ULL + (uint64_t)_i;
    random_cluster();
    for (int step = 0; step < 300; step++) {
        int g = (int)(rng() % 48);
        const char *queues[] = {"q0", "q1-child", "q2"};

        if (live[g] && rng() % 4 == 0) {
            for (int m = 0; m < live[g]; m++) {
                snprintf(name, sizeof(name), "g%d-%d", g, m);
                policy_pod_forget(C, "ns", name);
            }
            snprintf(gang, sizeof(gang), "ns/g%d", g);
            policy_gang_forget(C, gang, POLICY_GANG_WORKLOAD);
            live[g] = 0;
        } else if (!live[g]) {
            int members = 1 + (int)(rng() % 5);
            const char *q = queues[rng() % 3];
            int32_t priority = (int32_t)(rng() % 3) * 50;
            struct policy_gang_spec spec = {.key = gang, .min_members = members, .queue = q};
            struct policy_subgroup_spec subs[2] = {{"head", 1}, {"workers", 0}};
            bool composed = members > 1 && rng() % 3 == 0;

            snprintf(gang, sizeof(gang), "ns/g%d", g);
            if (rng() % 3 == 0)
                spec.min_members = 1 + (int32_t)(rng() % members); /* elastic */
            if (composed) {
                /* A head and a worker group, whose minimum may be below its size. */
                subs[1].min_members = (int32_t)(rng() % members);
                spec.subgroups = subs;
                spec.nsubgroups = 2;
                spec.min_members = 1 + subs[1].min_members;
            }
            ck_assert_int_eq(policy_gang_upsert(C, &spec), POLICY_OK);
            for (int m = 0; m < members; m++) {
                snprintf(name, sizeof(name), "g%d-%d", g, m);
                add_pod("ns", gang, q,
                        (struct pod_ask){name, 1 + rng() % 8, rng() % 3, 0, m == 0,
                                         composed ? (m == 0 ? "head" : "workers") : NULL,
                                         priority});
            }
            live[g] = members;
        }
        NOW += 1000 + rng() % 5000;
        settle();
        while (evict_all() > 0)
            settle();
        check_invariants();
        check_views();
        policy_each_gang(C, check_conserving, &w);
    }
    ck_assert_int_gt(w.conserving, 0); /* the test saw gangs wait */
}
END_TEST

/* ---- randomized: compositions of several worker groups -------------------- */

/* One random gang: a head and 2-3 worker groups; the first group CPU-only, the second GPU. */
struct random_gang {
    int ngroups;
    struct policy_subgroup_spec subs[4]; /* [0] is the head */
    char names[4][16];
    int members[4];    /* its pods per subgroup: the minimum and its extras */
    int64_t cpu[4], gpus[4];
    int32_t priority;
    enum policy_gang_source source;  /* the composition's */
    int count_source;                /* a count-only declaration beside it, or -1 */
};

static struct random_gang rgangs[24];

static void random_gang_pod(int g, int sub, int i, char *name, size_t len)
{
    snprintf(name, len, "g%d-%s-%d", g, rgangs[g].names[sub], i);
}

static void random_gang_arrives(int g)
{
    struct random_gang *r = &rgangs[g];
    char key[32], name[48];
    struct policy_gang_spec spec = {.key = key};
    int32_t min = 0;

    snprintf(key, sizeof(key), "ns/g%d", g);
    memset(r, 0, sizeof(*r));
    r->ngroups = 2 + (int)(rng() % 2);
    r->priority = (int32_t)(rng() % 3) * 50;
    snprintf(r->names[0], sizeof(r->names[0]), "head");
    r->subs[0] = (struct policy_subgroup_spec){r->names[0], 1};
    r->members[0] = 1;
    r->cpu[0] = 1;
    for (int k = 1; k <= r->ngroups; k++) {
        bool gpu = k == 2 || (k == 3 && rng() % 2);

        snprintf(r->names[k], sizeof(r->names[k]), "%s%d", gpu ? "gpu" : "cpu", k);
        /* CPU groups larger than GPU ones: a head and its CPU workers could meet a bare count */
        r->subs[k] = (struct policy_subgroup_spec){r->names[k],
                                                   (int32_t)(rng() % (gpu ? 4 : 5))};
        r->members[k] = r->subs[k].min_members + (int)(rng() % 3);
        r->cpu[k] = gpu ? 1 : 1 + (int64_t)(rng() % 3);
        r->gpus[k] = gpu ? 1 + (int64_t)(rng() % 2) : 0;
    }
    for (int k = 0; k <= r->ngroups; k++)
        min += r->subs[k].min_members;
    r->source = (enum policy_gang_source)(rng() % POLICY_GANG_SOURCES);
    spec.subgroups = r->subs;
    spec.nsubgroups = (size_t)r->ngroups + 1;
    spec.min_members = min;
    spec.source = r->source;
    ck_assert_int_eq(policy_gang_upsert(C, &spec), POLICY_OK);
    r->count_source = -1;
    if (rng() % 2) {
        /* kuberay#4656's shape: a bare count beside it, that the head and the CPU workers of
         * the first group could meet while a GPU group cannot (or one that agrees) */
        struct policy_gang_spec count = {.key = key, .min_members = 1 + r->members[1]};

        if (rng() % 3 == 0)
            count.min_members = min;
        r->count_source = r->source == POLICY_GANG_PODGROUP ? POLICY_GANG_WORKLOAD_API
                                                            : POLICY_GANG_PODGROUP;
        count.source = (enum policy_gang_source)r->count_source;
        ck_assert_int_eq(policy_gang_upsert(C, &count), POLICY_OK);
    }
    for (int k = 0; k <= r->ngroups; k++)
        for (int i = 0; i < r->members[k]; i++) {
            random_gang_pod(g, k, i, name, sizeof(name));
            add_pod("ns", key, NULL,
                    (struct pod_ask){name, r->cpu[k], r->gpus[k], 0, k == 0, r->names[k],
                                     r->priority});
        }
}

static void random_gang_leaves(int g)
{
    struct random_gang *r = &rgangs[g];
    char key[32], name[48];

    for (int k = 0; k <= r->ngroups; k++)
        for (int i = 0; i < r->members[k]; i++) {
            random_gang_pod(g, k, i, name, sizeof(name));
            policy_pod_forget(C, "ns", name);
        }
    snprintf(key, sizeof(key), "ns/g%d", g);
    if (r->count_source >= 0)
        policy_gang_forget(C, key, (enum policy_gang_source)r->count_source);
    policy_gang_forget(C, key, r->source);
    r->ngroups = 0;
}

/* What each subgroup holds, counted from the pods themselves, not from the gang's view. */
struct subgroup_count {
    const char *gang, *sub;
    int placed, bound;
};

static void count_subgroup(const struct policy_pod_view *v, void *ctx)
{
    struct subgroup_count *n = ctx;

    if (strcmp(v->gang, n->gang) != 0 || !v->subgroup || strcmp(v->subgroup, n->sub) != 0)
        return;
    n->placed += v->phase != POLICY_POD_PENDING && v->phase != POLICY_POD_EVICTING;
    n->bound += v->phase == POLICY_POD_BOUND;
}

struct composition_seen {
    int placed, waiting, extras_placed;
};

/*
 * No subgroup below its minimum while its gang counts as placed (planned or bound), nor below
 * it in bound pods while its gang counts as bound. The minimums are the ones the gang was
 * declared with, and the pods are counted one by one: a gang that lost its composition to a
 * bare count, or a view that counts wrong, does not hide a gang placed short.
 */
static void check_minimums(struct composition_seen *seen)
{
    for (int g = 0; g < 24; g++) {
        const struct random_gang *r = &rgangs[g];
        struct policy_gang_view v;
        char key[32];

        if (!r->ngroups)
            continue;
        snprintf(key, sizeof(key), "ns/g%d", g);
        ck_assert(policy_gang_view_get(C, key, &v));
        if (v.state == POLICY_GANG_PENDING) {
            seen->waiting++;
            continue;
        }
        seen->placed++;
        for (int k = 0; k <= r->ngroups; k++) {
            struct subgroup_count n = {.gang = key, .sub = r->names[k]};

            policy_each_pod(C, count_subgroup, &n);
            seen->extras_placed += n.placed > r->subs[k].min_members;
            ck_assert_msg(n.placed >= r->subs[k].min_members,
                          "gang %s is %s with %s placed %d of %d", key,
                          policy_gang_state_name(v.state), r->names[k], n.placed,
                          r->subs[k].min_members);
            ck_assert_msg(v.state != POLICY_GANG_BOUND || n.bound >= r->subs[k].min_members,
                          "gang %s is Bound with %s bound %d of %d", key, r->names[k], n.bound,
                          r->subs[k].min_members);
        }
    }
}

/*
 * Gangs of a head and 2-3 worker groups of different shapes (CPU-only and GPU groups, minimums
 * 0-4, extras 0-2), declared by a RayCluster, a KAI PodGroup or a Workload, half of them with a
 * bare count beside it that the head and CPU workers alone could meet (kuberay#4656), arrive on
 * a CPU node and two 4-GPU nodes, finish, are retried one member at a time as kube-scheduler
 * does, preempted whole and made again, while plans expire. After every step: no subgroup
 * below its minimum while its gang counts as placed, and the invariants of every gang, node
 * and queue.
 */
START_TEST(random_compositions_keep_every_minimum)
{
    struct composition_seen seen = {0};
    char name[48];

    rng_state = 0xA0761D6478BD642FULL + (uint64_t)_i;
    memset(rgangs, 0, sizeof(rgangs));
    add_node("cpu-0", 16, 0);
    add_node("gpu-0", 8, 4);
    add_node("gpu-1", 8, 4);
    for (int step = 0; step < 600; step++) {
        int g = (int)(rng() % 24);
        struct random_gang *r = &rgangs[g];

        if (r->ngroups && rng() % 6 == 0) {
            random_gang_leaves(g);
        } else if (!r->ngroups) {
            random_gang_arrives(g);
        } else if (rng() % 4 == 0) {
            settle();
        } else { /* kube-scheduler retries one member */
            int k = (int)(rng() % (uint32_t)(r->ngroups + 1));
            char why[512];

            if (r->members[k] > 0) {
                random_gang_pod(g, k, (int)(rng() % (uint32_t)r->members[k]), name,
                                sizeof(name));
                if (phase_of("ns", name) != POLICY_POD_BOUND)
                    schedule("ns", name, why, sizeof(why));
            }
        }
        if (rng() % 40 == 0)
            NOW += 61000; /* unbound plans expire */
        else
            NOW += 100 + rng() % 900;
        evict_all();
        check_invariants();
        check_minimums(&seen);
    }
    /* the test saw gangs placed, with extras, and gangs wait */
    ck_assert_int_gt(seen.placed, 0);
    ck_assert_int_gt(seen.extras_placed, 0);
    ck_assert_int_gt(seen.waiting, 0);
}
END_TEST

/* ---- reasons (issue 21): each true of the state it is given in ------------------- */

/* The pending pod's reason, as data and as words. */
static struct policy_pod_view waiting_view(const char *ns, const char *name)
{
    struct policy_pod_view v;

    ck_assert(policy_pod_view_get(C, ns, name, &v));
    ck_assert_msg(v.why && v.reason, "%s/%s has no reason", ns, name);
    return v;
}

/* The trial plan put the 2-GPU member on the idle node first: the 1-GPU member is not told
 * "no node has a free GPU" of a node with 2 free; the gang is told what it misses. */
START_TEST(a_member_the_trial_ran_out_for_is_not_told_the_nodes_are_full)
{
    char why[512];

    add_node("n1", 32, 2);
    add_gang("lab/g", 2, NULL);
    add_pod("lab", "lab/g", NULL, (struct pod_ask){"big", 1, 2});
    add_pod("lab", "lab/g", NULL, (struct pod_ask){"small", 1, 1});
    ck_assert_int_eq(schedule("lab", "small", why, sizeof(why)), POLICY_BIND_REJECT);
    ck_assert_str_eq(why, "gang lab/g: the 2 members its minimum misses ask 3 GPUs together, the "
                          "nodes they may use have 2 GPUs free; never: not even on empty nodes");
    ck_assert_int_eq(waiting_view("lab", "small").why->kind, POLICY_REASON_GANG_ROOM);
}
END_TEST

/* A head no node tolerates, on a node with 32 free cpus: the taint is named, not "0 free". */
START_TEST(a_taint_is_named_not_room)
{
    static const struct policy_subgroup_spec subs[] = {{"head", 1}};
    static const struct policy_taint taint = {"dedicated", "infra", POLICY_TAINT_NO_SCHEDULE};
    struct policy_node_spec n = {.name = "n1", .taints = &taint, .ntaints = 1,
                                 .cpu_milli = 32000, .memory_bytes = 64 * GiB, .pods = 110};
    char why[512];

    ck_assert_int_eq(policy_node_upsert(C, &n), POLICY_OK);
    add_composed_gang("lab/rc", POLICY_GANG_WORKLOAD, NULL, subs, 1);
    add_pod("lab", "lab/rc", NULL, (struct pod_ask){"rc-head", 1, 0, 0, true, "head"});
    ck_assert_int_eq(schedule("lab", "rc-head", why, sizeof(why)), POLICY_BIND_REJECT);
    ck_assert_str_eq(why, "gang lab/rc: head needs 1 more x 1 cpu, 4Gi memory; member rc-head: "
                          "every node has a taint it does not tolerate; never: no node takes it "
                          "even empty");
}
END_TEST

/* A PodGroup's count: the gang is told what its minimum misses, not one member's detail. */
START_TEST(a_podgroup_gang_gets_a_gang_level_reason)
{
    struct policy_gang_spec g = {.key = "lab/pg", .min_members = 3,
                                 .source = POLICY_GANG_PODGROUP};
    struct policy_gang_view v;
    char why[512];

    add_node("n1", 32, 2);
    ck_assert_int_eq(policy_gang_upsert(C, &g), POLICY_OK);
    for (int i = 0; i < 3; i++) {
        char name[16];

        snprintf(name, sizeof(name), "pg-%d", i);
        add_pod("lab", "lab/pg", NULL, (struct pod_ask){name, 1, 1});
    }
    ck_assert_int_eq(schedule("lab", "pg-0", why, sizeof(why)), POLICY_BIND_REJECT);
    ck_assert(policy_gang_view_get(C, "lab/pg", &v));
    ck_assert_int_eq(v.state, POLICY_GANG_PENDING);
    ck_assert_str_eq(v.reason, "gang lab/pg: the 3 members its minimum misses ask 3 GPUs "
                               "together, the nodes they may use have 2 GPUs free; never: not "
                               "even on empty nodes");
    ck_assert_int_eq(v.why->want, 3);
    ck_assert_int_eq(v.why->need.v[POLICY_RES_GPU], 3000);
    ck_assert_int_eq(v.why->free.v[POLICY_RES_GPU], 2000);
}
END_TEST

/* The gang waiting for its victims says so, and the evicted gang says why it waits again. */
START_TEST(victims_leaving_and_evicted_gangs_say_why)
{
    struct policy_gang_view v;
    char why[512];

    add_node("n1", 32, 2);
    gpu_queue("a", 0);
    gpu_queue("b", 2000);
    add_gpu_gang("old", "a", 2);
    settle();
    NOW += 10;
    add_gpu_gang("new", "b", 2);
    ck_assert_int_eq(schedule("lab", "new-0", why, sizeof(why)), POLICY_BIND_REJECT);
    ck_assert(policy_gang_view_get(C, "lab/new", &v));
    ck_assert_msg(v.why && v.why->kind == POLICY_REASON_VICTIMS && v.why->have == 2, "%s",
                  v.reason ? v.reason : "no reason");
    ck_assert_str_eq(v.reason, "gang lab/new: waits for 2 evicted pods to leave (its room is held)");
    ck_assert(policy_gang_view_get(C, "lab/old", &v));
    ck_assert_int_eq(v.state, POLICY_GANG_PENDING);
    ck_assert_str_eq(v.reason, "evicted for gang lab/new of queue b: queue a is 2 GPUs over its "
                               "fair share");
    ck_assert_int_eq(evict_all(), 2);
    /* KubeRay made its pods again: they wait, and say why, until they are filtered */
    ck_assert_int_eq(waiting_view("lab", "old-0").why->kind, POLICY_REASON_EVICTED);
}
END_TEST

/* What holds the GPUs, within its quota, and quotas that add up to more than the cluster. */
START_TEST(a_queue_waiting_on_others_quotas_is_told_who_holds_them)
{
    struct policy_pod_view v;
    char why[512];

    add_node("n1", 32, 2);
    gpu_queue("a", 2000);
    gpu_queue("b", 2000);
    add_gang("lab/a", 2, "a");
    add_pod("lab", "lab/a", "a", (struct pod_ask){"a-0", 1, 1, 0, false, NULL, 100});
    add_pod("lab", "lab/a", "a", (struct pod_ask){"a-1", 1, 1, 0, false, NULL, 100});
    settle();
    add_gpu_gang("b", "b", 1);
    ck_assert_int_eq(schedule("lab", "b-0", why, sizeof(why)), POLICY_BIND_REJECT);
    v = waiting_view("lab", "b-0");
    ck_assert_str_eq(v.reason, "gang lab/b: its minimum needs 1 more x 1 GPU; member b-0: no node "
                               "has a free GPU; no eviction may make room for it: queue a holds 2 "
                               "GPUs, within its quota of 2 GPUs and over its fair share of 1.333 "
                               "GPUs, but queue b would end over its own fair share of 0.667 GPU "
                               "(0 GPUs in use, 1 GPU asked); the queues' quotas add up to 4 GPUs, "
                               "more than the cluster's 2 GPUs");
}
END_TEST

/* minMember 0 (each pod on its own): its only pod waits, so the gang is not Bound. */
START_TEST(a_gang_of_minimum_zero_waits_while_its_only_pod_does)
{
    struct policy_gang_view v;
    char why[512];

    add_node("n1", 32, 0);
    add_gang("lab/zero", 0, NULL);
    add_pod("lab", "lab/zero", NULL, (struct pod_ask){"zero-0", 1, 1});
    ck_assert_int_eq(schedule("lab", "zero-0", why, sizeof(why)), POLICY_BIND_REJECT);
    ck_assert(policy_gang_view_get(C, "lab/zero", &v));
    ck_assert_int_eq(v.state, POLICY_GANG_PENDING);
    ck_assert_str_eq(v.reason, why);
}
END_TEST

/* 100 cores and 1G of memory, written as a person writes them. */
START_TEST(quantities_are_written_in_a_persons_units)
{
    struct policy_pod_spec p = {.namespace_ = "lab", .name = "big", .uid = "u-big",
                                .cpu_milli = 100000, .memory_bytes = 1000000000,
                                .managed = true};
    char why[512];

    add_node("n1", 64, 0);
    ck_assert_int_eq(policy_pod_upsert(C, &p, NOW), POLICY_OK);
    ck_assert_int_eq(schedule("lab", "big", why, sizeof(why)), POLICY_BIND_REJECT);
    ck_assert_str_eq(why, "member big (100 cpu, 1G memory): no node has 100 cpu free (at most 64 "
                          "cpu on a node it may use); never: no node takes it even empty");
}
END_TEST

/* ---- randomized: every reason true of the state (issue 21) --------------------------- */

#define RR_GANGS 32
#define RR_NODES 4

static const char *const rr_nodes[RR_NODES] = {"small", "mid", "big", "cpu"};
static int rr_members[RR_GANGS];
static enum policy_gang_source rr_source[RR_GANGS];

/*
 * Nodes of four shapes: small (8 cpu, 2 GPUs, pool=small), mid (16 cpu, 4 GPUs), big (32 cpu,
 * 8 GPUs, tainted dedicated=gpu), cpu (16 cpu, no GPU, pool=cpu); small and mid in rack a, big
 * in rack b, cpu in no rack. Queues whose quotas add up to more than the cluster's 14 GPUs,
 * one limit below what some gangs ask.
 */
static void rr_cluster(void)
{
    static const struct policy_label small[] = {{"nvidia.com/gpu.memory", "81920"},
                                                {"pool", "small"}, {"rack", "a"}};
    static const struct policy_label mid[] = {{"nvidia.com/gpu.memory", "81920"}, {"rack", "a"}};
    static const struct policy_label big[] = {{"nvidia.com/gpu.memory", "81920"}, {"rack", "b"}};
    static const struct policy_label cpu[] = {{"pool", "cpu"}};
    static const struct policy_taint taint = {"dedicated", "gpu", POLICY_TAINT_NO_SCHEDULE};
    const struct policy_node_spec nodes[RR_NODES] = {
        {.name = "small", .labels = small, .nlabels = 3, .cpu_milli = 8000, .gpus = 2},
        {.name = "mid", .labels = mid, .nlabels = 2, .cpu_milli = 16000, .gpus = 4},
        {.name = "big", .labels = big, .nlabels = 2, .taints = &taint, .ntaints = 1,
         .cpu_milli = 32000, .gpus = 8},
        {.name = "cpu", .labels = cpu, .nlabels = 1, .cpu_milli = 16000},
    };

    for (int i = 0; i < RR_NODES; i++) {
        struct policy_node_spec n = nodes[i];

        n.memory_bytes = 128 * GiB;
        n.pods = 110;
        n.gpu_memory_mib = n.gpus ? 81920 : 0;
        ck_assert_int_eq(policy_node_upsert(C, &n), POLICY_OK);
    }
    random_queue("r0", NULL, 4000, 3000, 0);
    random_queue("r1", NULL, 8000, -1, 0);
    random_queue("r1-child", "r1", 2000, 6000, 0);
    random_queue("r2", NULL, 6000, -1, 1);
}

/* One pod of gang g: an ask that now and then no node holds even empty, a toleration of the
 * big node's taint or not, now and then a selector (one no node matches among them). */
static void rr_pod(int g, int m, const char *gang, const char *queue, const char *sub,
                   int32_t priority)
{
    static const struct policy_toleration tolerate = {"dedicated", POLICY_TOLERATE_EQUAL, "gpu",
                                                      -1};
    static const struct policy_label selectors[] = {{"pool", "small"}, {"pool", "cpu"},
                                                    {"pool", "none"}};
    char name[48], uid[64];
    struct policy_pod_spec p = {.namespace_ = "ns", .name = name, .uid = uid,
                                .memory_bytes = (1 + (int64_t)(rng() % 8)) * GiB,
                                .gang = gang, .gang_head = m == 0, .subgroup = sub,
                                .queue = queue, .priority = priority, .managed = true};
    uint32_t shape = rng() % 20;

    snprintf(name, sizeof(name), "g%d-%d", g, m);
    snprintf(uid, sizeof(uid), "uid-%d-%d-%u", g, m, rng());
    p.cpu_milli = shape == 0 ? 40000 : (int64_t)(500 + rng() % 6000);
    if (shape == 1)
        p.gpus = 9; /* more than any node has */
    else if (shape < 6)
        p.gpu_share_milli = (int32_t)(100 + rng() % 800);
    else if (shape < 14)
        p.gpus = rng() % 4;
    if (rng() % 3 == 0) {
        p.tolerations = &tolerate;
        p.ntolerations = 1;
    }
    if (rng() % 6 == 0) {
        p.node_selector = &selectors[rng() % 3];
        p.nnode_selector = 1;
    }
    ck_assert_int_eq(policy_pod_upsert(C, &p, NOW), POLICY_OK);
}

/* Gang g arrives: declared by a RayCluster (head and workers, now and then), a PodGroup or a
 * Workload (now and then sharing a rack, or a label no node has); minimum 0 now and then
 * (each pod on its own), elastic now and then; a queue now and then that does not exist. */
static void rr_arrives(int g)
{
    static const char *const queues[] = {"r0", "r1-child", "r2", "r1-child", "r0", "nope"};
    struct policy_subgroup_spec subs[2] = {{"head", 1}, {"workers", 0}};
    char key[32];
    int members = 1 + (int)(rng() % 5);
    const char *q = queues[rng() % 6];
    int32_t priority = (int32_t)(rng() % 3) * 50; /* 100: not preemptible */
    struct policy_gang_spec spec = {.key = key, .min_members = members, .queue = q,
                                    .source = (enum policy_gang_source)(rng() % 3)};
    bool composed = false;

    snprintf(key, sizeof(key), "ns/g%d", g);
    if (spec.source == POLICY_GANG_WORKLOAD && members > 1 && rng() % 2 == 0) {
        composed = true;
        subs[1].min_members = (int32_t)(rng() % members);
        spec.subgroups = subs;
        spec.nsubgroups = 2;
        spec.min_members = 1 + subs[1].min_members;
    } else if (rng() % 6 == 0) {
        spec.min_members = 0;
    } else if (rng() % 4 == 0) {
        spec.min_members = 1 + (int32_t)(rng() % members);
    }
    if (spec.source == POLICY_GANG_WORKLOAD_API && rng() % 3 == 0)
        spec.topology.required = rng() % 4 == 0 ? "zone" : "rack";
    ck_assert_int_eq(policy_gang_upsert(C, &spec), POLICY_OK);
    for (int m = 0; m < members; m++)
        rr_pod(g, m, key, q, composed ? (m == 0 ? "head" : "workers") : NULL, priority);
    rr_members[g] = members;
    rr_source[g] = spec.source;
}

static void rr_leaves(int g)
{
    char key[32], name[48];

    for (int m = 0; m < rr_members[g]; m++) {
        snprintf(name, sizeof(name), "g%d-%d", g, m);
        policy_pod_forget(C, "ns", name);
    }
    snprintf(key, sizeof(key), "ns/g%d", g);
    policy_gang_forget(C, key, rr_source[g]);
    rr_members[g] = 0;
}

/* kube-scheduler filters one member with the nodes its own filters passed (a random subset),
 * and binds it to the first that fits. */
static void rr_offer(int g)
{
    const char *offer[RR_NODES];
    char name[48];
    size_t n = 0;
    struct policy_filter_result fr;
    const char *chosen = NULL;

    snprintf(name, sizeof(name), "g%d-%d", g, (int)(rng() % (uint32_t)rr_members[g]));
    if (phase_of("ns", name) == POLICY_POD_BOUND)
        return;
    for (int i = 0; i < RR_NODES; i++)
        if (rng() % 3 != 0)
            offer[n++] = rr_nodes[i];
    ck_assert_int_eq(policy_filter(C, "ns", name, offer, n, NOW, &fr), POLICY_OK);
    check_reason(&fr, offer, n);
    for (size_t i = 0; i < n && !chosen; i++)
        if (fr.verdicts[i].fit == POLICY_FITS)
            chosen = offer[i];
    policy_filter_result_cleanup(&fr);
    if (chosen) {
        struct policy_bind_result br;

        ck_assert_int_eq(policy_bind(C, "ns", name, chosen, NOW, &br), POLICY_OK);
        for (size_t i = 0; br.outcome == POLICY_BIND_COMMIT && i < br.n; i++)
            ck_assert_int_eq(policy_bind_done(C, br.members[i].namespace_, br.members[i].name,
                                              true, NULL),
                             POLICY_OK);
        policy_bind_result_cleanup(&br);
    }
}

/*
 * Gangs arrive on rr_cluster's nodes and queues, finish, are offered a few nodes at a time as
 * kube-scheduler offers what its own filters passed, are reclaimed and preempted (victims come
 * back pending), while plans expire. Every reason a filter gives is checked as it is given
 * (check_reason), and after every settled step every reason the engine shows, each pod's and
 * each gang's (check_views): each must be true of the state, by the checker's own arithmetic
 * (reason_check.h). The kinds that matter to issue 21 must have been given, so a run that
 * gave none cannot pass; the counts are printed.
 */
START_TEST(random_reasons_are_true_of_the_state)
{
    static const enum policy_reason_kind seen[] = {
        POLICY_REASON_NO_QUEUE, POLICY_REASON_QUEUE_LIMIT, POLICY_REASON_NO_NODE,
        POLICY_REASON_GANG_ROOM,
    };
    rng_state = 0x8BB84B93962EACC9ULL + (uint64_t)_i;
    memset(rr_members, 0, sizeof(rr_members));
    memset(&REASONS, 0, sizeof(REASONS));
    rr_cluster();
    for (int step = 0; step < 400; step++) {
        int g = (int)(rng() % RR_GANGS);

        if (rr_members[g] && rng() % 5 == 0)
            rr_leaves(g);
        else if (!rr_members[g])
            rr_arrives(g);
        else
            rr_offer(g);
        NOW += rng() % 30 == 0 ? 61000 : 100 + rng() % 2000; /* now and then plans expire */
        evict_all();
        check_invariants();
        if (rng() % 4 == 0) { /* kube-scheduler retries everything until nothing moves */
            settle();
            while (evict_all() > 0)
                settle();
            check_views();
        }
    }
    settle();
    while (evict_all() > 0)
        settle();
    check_views();
    for (size_t k = 0; k < sizeof(seen) / sizeof(seen[0]); k++)
        ck_assert_msg(REASONS.by_kind[seen[k]] > 0, "no %s reason was given",
                      policy_reason_kind_name(seen[k]));
    printf("random_reasons_are_true_of_the_state seed %d: ", _i);
    rc_print(&REASONS, stdout);
    fflush(stdout);
}
END_TEST

static Suite *policy_suite(void)
{
    Suite *s = suite_create("policy");
    TCase *tc;

#define CASE(name, ...)                                                                            \
    tc = tcase_create(#name);                                                                      \
    tcase_add_checked_fixture(tc, setup, teardown);                                                \
    __VA_ARGS__;                                                                                   \
    suite_add_tcase(s, tc)

    CASE(reasons, tcase_add_test(tc, a_member_the_trial_ran_out_for_is_not_told_the_nodes_are_full);
         tcase_add_test(tc, a_taint_is_named_not_room);
         tcase_add_test(tc, a_podgroup_gang_gets_a_gang_level_reason);
         tcase_add_test(tc, victims_leaving_and_evicted_gangs_say_why);
         tcase_add_test(tc, a_queue_waiting_on_others_quotas_is_told_who_holds_them);
         tcase_add_test(tc, a_gang_of_minimum_zero_waits_while_its_only_pod_does);
         tcase_add_test(tc, quantities_are_written_in_a_persons_units));
    CASE(walkthrough, tcase_add_test(tc, walkthrough_demo_three_pods_one_node);
         tcase_add_test(tc, walkthrough_gang_bigger_than_its_queue_waits_whole);
         tcase_add_test(tc, walkthrough_gang_fits_on_exactly_three_devices);
         tcase_add_test(tc, walkthrough_two_gangs_of_six_on_eight_gpus));
    CASE(gpu_accounting,
         tcase_add_loop_test(tc, shares_are_exact_milli_units, 0,
                             sizeof(share_cases) / sizeof(share_cases[0]));
         tcase_add_test(tc, whole_gpus_take_free_devices_only);
         tcase_add_test(tc, paused_sharing_opens_no_new_group_until_its_time));
    CASE(invalid_asks, tcase_add_loop_test(tc, invalid_asks_say_why_and_are_unresolvable, 0,
                                           sizeof(invalid_cases) / sizeof(invalid_cases[0])));
    CASE(gangs, tcase_add_test(tc, gang_waits_until_every_member_exists);
         tcase_add_test(tc, workload_wins_over_a_podgroup_count_and_the_mismatch_is_said);
         tcase_add_loop_test(tc, a_rayclusters_queue_beats_its_podgroups_defaulted_one_in_any_order,
                             0, sizeof(queue_order_cases) / sizeof(queue_order_cases[0]));
         tcase_add_loop_test(tc, a_workload_beats_a_podgroup_count, 0,
                             sizeof(precedence_cases) / sizeof(precedence_cases[0]));
         tcase_add_test(tc, gang_without_its_raycluster_is_not_planned);
         tcase_add_test(tc, bind_wait_cancel_keeps_nothing_bound);
         tcase_add_test(tc, gang_since_is_its_earliest_member_first_seen);
         tcase_add_test(tc, unbound_plan_is_released_after_its_ttl);
         tcase_add_test(tc, bind_already_bound_succeeds);
         tcase_add_test(tc, planned_node_not_offered_is_replanned_within_offer);
         tcase_add_test(tc, failed_binding_releases_the_member));
    CASE(placement, tcase_add_loop_test(tc, binpack_fills_the_fullest_node_spread_the_emptiest, 0, 2);
         tcase_add_loop_test(tc, binpack_shares_the_fullest_group_spread_opens_new, 0, 2);
         tcase_add_loop_test(tc, selectors_taints_and_affinity_decide_the_node, 0, 3));
    CASE(queues, tcase_add_test(tc, ancestor_limit_binds_children);
         tcase_add_test(tc, unknown_queue_waits_with_reason);
         tcase_add_test(tc, shares_are_charged_as_shares);
         tcase_add_test(tc, over_quota_yields_to_a_waiting_in_quota_gang);
         tcase_add_test(tc, over_quota_allowed_when_nobody_waits);
         tcase_add_loop_test(tc, gpu_memory_asks_are_checked_with_their_share_on_the_node, 0,
                             sizeof(memory_limit_cases) / sizeof(memory_limit_cases[0]));
         tcase_add_loop_test(tc, members_moved_within_the_offer_keep_their_queue_limit, 0,
                             sizeof(offer_limit_cases) / sizeof(offer_limit_cases[0])));
    CASE(preempt_and_restart, tcase_add_loop_test(tc, preemption_takes_whole_gangs_or_none, 0, 2);
         tcase_add_test(tc, restart_completes_a_partly_bound_gang_first);
         tcase_add_test(tc, bound_pods_rebuild_groups_from_annotations);
         tcase_add_test(tc, pods_listed_before_their_node_are_charged_when_it_arrives));
    CASE(review, tcase_add_test(tc, queue_updated_in_place_keeps_its_usage);
         tcase_add_test(tc, node_deleted_while_its_binding_is_in_flight);
         tcase_add_test(tc, recreated_gang_is_placed_whole_again);
         tcase_add_test(tc, failed_commit_leaves_the_gang_pending));
    CASE(composition, tcase_add_test(tc, autoscaling_raycluster_admits_its_minimum_then_extras);
         tcase_add_test(tc, composition_counts_the_minimum_whoever_was_asked_first);
         tcase_add_test(tc, an_extra_does_not_keep_its_gangs_old_reason);
         tcase_add_test(tc, barrier_names_the_minimum_it_waits_for);
         tcase_add_test(tc, count_met_by_the_wrong_members_is_never_admitted);
         tcase_add_test(tc, a_subgroup_short_of_pods_says_so);
         tcase_add_test(tc, a_subgroup_with_no_minimum_only_has_extras);
         tcase_add_test(tc, elastic_gangs_share_extras_in_turn);
         tcase_add_test(tc, kai_podgroup_subgroups_compose_the_gang));
    CASE(reclaim, tcase_add_test(tc, capacity_never_sits_idle_between_two_queues);
         tcase_add_test(tc, three_gangs_of_two_queues_never_wait_for_each_other_in_a_ring);
         tcase_add_test(tc, reclaim_takes_a_borrowing_gang_back_whole_and_never_thrashes);
         tcase_add_test(tc, reclaim_is_never_taken_straight_back_however_often_the_victims_ask);
         tcase_add_test(tc, reclaim_min_runtime_protects_a_young_gang);
         tcase_add_loop_test(tc, restart_counts_min_runtime_from_when_the_pods_were_bound, 0,
                             sizeof(restart_cases) / sizeof(restart_cases[0]));
         tcase_add_test(tc, reclaim_for_a_pod_kube_scheduler_never_asks_about);
         tcase_add_test(tc, unasked_gang_reclaims_whole_and_a_fitting_pod_is_left_alone);
         tcase_add_test(tc, unasked_leaves_a_nominated_pod_to_kube_scheduler);
         tcase_add_test(tc, a_trial_plan_leaves_a_parked_gang_marked_for_its_nudge);
         tcase_add_test(tc, a_refused_eviction_decides_no_more_while_victims_leave);
         tcase_add_test(tc, a_pod_parked_before_a_restart_is_handed_back_once);
         tcase_add_test(tc, kube_scheduler_preemption_waits_while_muster_evicts_for_the_gang);
         tcase_add_test(tc, preemption_takes_lower_priority_gangs_whole);
         tcase_add_test(tc, preempt_min_runtime_protects_a_young_gang);
         tcase_add_test(tc, a_refused_eviction_abandons_the_plan);
         tcase_add_test(tc, refused_eviction_for_an_extra_abandons_its_plan);
         tcase_add_test(tc, an_extra_outside_its_offer_is_not_planned_by_a_reclaim_of_nothing);
         tcase_add_test(tc, refused_eviction_for_an_extra_does_not_double_book_a_shared_gpu);
         tcase_add_test(tc, refused_eviction_keeps_an_extras_plan_on_another_node);
         tcase_add_test(tc, refused_eviction_under_a_limit_takes_back_a_plan_on_another_node);
         tcase_add_test(tc, an_extra_does_not_wait_forever_for_a_member_kube_scheduler_never_places));
    CASE(expiry, tcase_add_test(tc, plans_expire_in_deadline_order_not_gang_order);
         tcase_add_test(tc, held_bind_keeps_an_expired_plan_until_it_leaves);
         tcase_add_test(tc, forgotten_gangs_leave_no_deadline_behind));
    CASE(randomized, tcase_add_loop_test(tc, random_arrivals_keep_every_invariant, 0, 4);
         tcase_add_loop_test(tc, random_queues_keep_every_promise, 0, 3);
         tcase_set_timeout(tc, 300));
#undef CASE
    tc = tcase_create("randomized_fragmentation");
    tcase_add_checked_fixture(tc, setup_fragmentation, teardown);
    tcase_add_loop_test(tc, random_arrivals_keep_every_invariant, 0, 4);
    tcase_set_timeout(tc, 300);
    suite_add_tcase(s, tc);
    tc = tcase_create("randomized_reasons");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_loop_test(tc, random_reasons_are_true_of_the_state, 0, 4);
    tcase_set_timeout(tc, 300);
    suite_add_tcase(s, tc);
    tc = tcase_create("randomized_compositions");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_loop_test(tc, random_compositions_keep_every_minimum, 0, 4);
    tcase_set_timeout(tc, 300);
    suite_add_tcase(s, tc);
    tc = tcase_create("randomized_gpu_memory");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_loop_test(tc, random_offers_of_gpu_memory_keep_queue_limits, 0, 4);
    tcase_set_timeout(tc, 300);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(policy_suite());
    int failed;

    srunner_run_all(sr, CK_ENV);
    failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
