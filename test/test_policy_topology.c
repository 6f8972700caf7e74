/*
 * test_policy_topology.c - a gang that declares a topology key (a Workload-API PodGroup's
 * schedulingConstraints.topology[0].key) is planned in one domain, and kube-scheduler's
 * per-placement gang cycle (Kubernetes 1.37, TopologyAwareWorkloadScheduling: every member
 * filtered once per candidate domain, the losers thrown away unannounced,
 * pkg/scheduler/schedule_one_podgroup.go podGroupSchedulingPlacementAlgorithm) is answered
 * from the plan: one placement feasible, the Bindings where muster planned, nothing reserved
 * anywhere else.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "policy.h"
#include "reason_check.h"

#define GiB (1LL << 30)
#define RACK "topology.kubernetes.io/rack"

static struct policy_cluster *C;
static struct rc_stats REASONS;

/* Every reason a filter gives is true of the state it is given in (reason_check.h). */
static void check_reason(const struct policy_filter_result *fr, const char *const *names,
                         size_t n)
{
    rc_check(C, fr->why, fr->reason, names, n, &REASONS);
    ck_assert_msg(REASONS.violations == 0, "a false reason: %s", REASONS.first);
}
static const int64_t NOW = 1000000;

static void setup(void)
{
    struct policy_options o = {.strategy = POLICY_BINPACK};

    C = policy_cluster_new(&o);
    ck_assert_ptr_nonnull(C);
}

static void teardown(void)
{
    policy_cluster_free(C);
    C = NULL;
}

/* rack NULL: a node without the label */
static void add_node(const char *name, const char *rack, int64_t gpus)
{
    struct policy_label labels[] = {{RACK, rack}};
    struct policy_node_spec n = {.name = name, .labels = labels, .nlabels = rack ? 1 : 0,
                                 .cpu_milli = 32000, .memory_bytes = 128 * GiB, .pods = 110,
                                 .gpus = gpus};

    ck_assert_int_eq(policy_node_upsert(C, &n), POLICY_OK);
}

static void add_gang(const char *key, int32_t min, const char *topology)
{
    struct policy_gang_spec g = {.key = key, .min_members = min,
                                 .source = POLICY_GANG_WORKLOAD_API, .topology_key = topology};

    ck_assert_int_eq(policy_gang_upsert(C, &g), POLICY_OK);
}

static void add_pods(const char *gang, const char *prefix, int n, int64_t gpus)
{
    for (int i = 0; i < n; i++) {
        char name[64], uid[80];
        struct policy_pod_spec p = {.namespace_ = "ml", .name = name, .uid = uid,
                                    .cpu_milli = 1000, .memory_bytes = GiB, .gpus = gpus,
                                    .gang = gang, .managed = true};

        snprintf(name, sizeof(name), "%s-%d", prefix, i);
        snprintf(uid, sizeof(uid), "uid-%s", name);
        ck_assert_int_eq(policy_pod_upsert(C, &p, NOW), POLICY_OK);
    }
}

/* The nodes of one rack ("" = every node), as one of kube-scheduler's placements offers them. */
static const char *const NODES[] = {"a1", "a2", "b1", "b2", "c1", "c2"};

static size_t placement(const char *rack, const char **out)
{
    size_t n = 0;

    for (size_t i = 0; i < sizeof(NODES) / sizeof(NODES[0]); i++)
        if (!*rack || NODES[i][0] == rack[0])
            out[n++] = NODES[i];
    return n;
}

static void three_racks(int64_t a, int64_t b, int64_t c)
{
    add_node("a1", "a", a);
    add_node("a2", "a", a);
    add_node("b1", "b", b);
    add_node("b2", "b", b);
    add_node("c1", "c", c);
    add_node("c2", "c", c);
}

static const char *node_of(const char *name)
{
    struct policy_pod_view v;

    ck_assert(policy_pod_view_get(C, "ml", name, &v));
    return v.node;
}

/* Every pod of prefix-0..n-1 holds a place, all in one rack: which one ('a', 'b', 'c'). */
static char one_rack(const char *prefix, int n)
{
    char rack = 0;

    for (int i = 0; i < n; i++) {
        char name[64];
        const char *node;

        snprintf(name, sizeof(name), "%s-%d", prefix, i);
        node = node_of(name);
        ck_assert_msg(node != NULL, "%s holds no place", name);
        if (!rack)
            rack = node[0];
        ck_assert_msg(node[0] == rack, "%s on %s, outside rack %c", name, node, rack);
    }
    return rack;
}

static int64_t reserved_gpus(void);

/* kube-scheduler's gang cycle with TopologyAwareWorkloadScheduling: each pod filtered in each
 * placement (a rack), the placement feasible only when every pod found a node. Returns the
 * feasible racks as a string ("b"); fills chosen[i] with pod i's node in the last feasible one. */
static void placement_cycle(const char *prefix, int n, const char *racks, char *feasible,
                            const char **chosen, int *filters)
{
    size_t f = 0;

    for (const char *r = racks; *r; r++) {
        const char *names[8], *pick[16];
        char rack[2] = {*r, 0};
        size_t nn = placement(rack, names);
        bool ok = true;

        for (int i = 0; i < n && ok; i++) {
            struct policy_filter_result fr;
            char name[64];

            snprintf(name, sizeof(name), "%s-%d", prefix, i);
            ck_assert_int_eq(policy_filter(C, "ml", name, names, nn, NOW, &fr), POLICY_OK);
            check_reason(&fr, names, nn);
            (*filters)++;
            pick[i] = NULL;
            for (size_t k = 0; k < nn; k++)
                if (fr.verdicts[k].fit == POLICY_FITS)
                    pick[i] = names[k];
            ok = pick[i] != NULL;
            policy_filter_result_cleanup(&fr);
        }
        if (!ok)
            continue;
        feasible[f++] = *r;
        for (int i = 0; i < n; i++)
            chosen[i] = pick[i];
    }
    feasible[f] = '\0';
}

static void bind_all(const char *prefix, int n, const char **nodes)
{
    for (int i = 0; i < n; i++) {
        struct policy_bind_result br;
        char name[64];

        snprintf(name, sizeof(name), "%s-%d", prefix, i);
        ck_assert_int_eq(policy_bind(C, "ml", name, nodes[i], NOW, &br), POLICY_OK);
        ck_assert_int_eq(br.outcome, i + 1 < n ? POLICY_BIND_WAIT : POLICY_BIND_COMMIT);
        for (size_t k = 0; br.outcome == POLICY_BIND_COMMIT && k < br.n; k++)
            ck_assert_int_eq(policy_bind_done(C, "ml", br.members[k].name, true, NULL), POLICY_OK);
        policy_bind_result_cleanup(&br);
    }
}

/* Racks a and c have 2 x 2 GPUs, b has 2 x 4: a gang of six 1-GPU pods fits b alone. Whatever
 * order kube-scheduler tries the racks in, one placement is feasible, the one muster planned;
 * binding there commits the gang whole in b, and no GPU stays reserved anywhere. */
static const char *const orders[] = {"abc", "cba", "bac", "cab"};

START_TEST(a_gang_with_a_topology_key_is_planned_and_bound_in_one_domain)
{
    char feasible[8];
    const char *chosen[6];
    int filters = 0;
    struct policy_gang_view g;

    three_racks(2, 4, 2);
    add_gang("ml/tas", 6, RACK);
    add_pods("ml/tas", "tas", 6, 1);
    placement_cycle("tas", 6, orders[_i], feasible, chosen, &filters);
    ck_assert_msg(strcmp(feasible, "b") == 0, "order %s: feasible placements \"%s\"", orders[_i],
                  feasible);
    ck_assert_int_eq(one_rack("tas", 6), 'b');
    ck_assert(policy_gang_view_get(C, "ml/tas", &g));
    ck_assert_str_eq(g.topology_key, RACK);
    ck_assert_str_eq(g.domain, "b");
    bind_all("tas", 6, chosen);
    ck_assert(policy_gang_view_get(C, "ml/tas", &g));
    ck_assert_int_eq(g.state, POLICY_GANG_BOUND);
    ck_assert_int_eq(g.bound, 6);
    ck_assert_int_eq(one_rack("tas", 6), 'b');
    ck_assert_int_eq(reserved_gpus(), 0);
}
END_TEST

/* A placement without the plan's rack is answered from the plan: the reason names both
 * domains, and the engine is as it was (the same node for every member, the same reserved). */
START_TEST(a_placement_elsewhere_is_answered_from_the_plan_without_planning_again)
{
    const char *names[8], *before[4];
    struct policy_filter_result fr;
    char elsewhere[2] = "", want[128];
    size_t n;

    three_racks(2, 4, 2);
    add_gang("ml/tas", 4, RACK);
    add_pods("ml/tas", "tas", 4, 1);
    n = placement("", names);
    ck_assert_int_eq(policy_filter(C, "ml", "tas-0", names, n, NOW, &fr), POLICY_OK);
    check_reason(&fr, names, n);
    policy_filter_result_cleanup(&fr);
    elsewhere[0] = one_rack("tas", 4) == 'c' ? 'b' : 'c';
    for (int i = 0; i < 4; i++) {
        char name[16];

        snprintf(name, sizeof(name), "tas-%d", i);
        before[i] = node_of(name);
    }
    snprintf(want, sizeof(want), "gang ml/tas is planned in " RACK "=%c; the nodes offered are in "
             RACK "=%s", one_rack("tas", 4), elsewhere);
    n = placement(elsewhere, names);
    for (int i = 0; i < 4; i++) {
        char name[16];

        snprintf(name, sizeof(name), "tas-%d", i);
        ck_assert_int_eq(policy_filter(C, "ml", name, names, n, NOW, &fr), POLICY_OK);
        check_reason(&fr, names, n);
        for (size_t k = 0; k < n; k++)
            ck_assert_int_eq(fr.verdicts[k].fit, POLICY_UNSCHEDULABLE);
        ck_assert_str_eq(fr.reason, want);
        policy_filter_result_cleanup(&fr);
        ck_assert_str_eq(node_of(name), before[i]);
    }
    ck_assert_int_eq(reserved_gpus(), 4 * 1000);
}
END_TEST

/* Without a key nothing changes: a member whose node is not offered moves within the offer
 * (the rest of the plan kept), rack or not. */
START_TEST(without_a_topology_key_a_member_still_moves_within_the_offer)
{
    const char *names[8];
    struct policy_filter_result fr;
    size_t n;

    three_racks(2, 4, 2);
    add_gang("ml/plain", 2, NULL);
    add_pods("ml/plain", "plain", 2, 1);
    n = placement("b", names);
    ck_assert_int_eq(policy_filter(C, "ml", "plain-0", names, n, NOW, &fr), POLICY_OK);
    check_reason(&fr, names, n);
    policy_filter_result_cleanup(&fr);
    n = placement("c", names);
    ck_assert_int_eq(policy_filter(C, "ml", "plain-1", names, n, NOW, &fr), POLICY_OK);
    check_reason(&fr, names, n);
    ck_assert_ptr_null(fr.reason);
    policy_filter_result_cleanup(&fr);
    ck_assert_int_eq(node_of("plain-1")[0], 'c');
}
END_TEST

/* A member whose planned node kube-scheduler's own filters turned away moves, but only within
 * its gang's rack: the gang stays in one domain. */
START_TEST(a_member_moves_only_within_its_gangs_domain)
{
    const char *names[8], *others[8];
    struct policy_filter_result fr;
    const char *planned;
    size_t n, k = 0;

    three_racks(4, 4, 4);
    add_gang("ml/tas", 2, RACK);
    add_pods("ml/tas", "tas", 2, 1);
    n = placement("", names);
    ck_assert_int_eq(policy_filter(C, "ml", "tas-0", names, n, NOW, &fr), POLICY_OK);
    check_reason(&fr, names, n);
    policy_filter_result_cleanup(&fr);
    planned = node_of("tas-1");
    /* every node but tas-1's: its rack's other node, and the other racks' */
    for (size_t i = 0; i < n; i++)
        if (strcmp(names[i], planned) != 0)
            others[k++] = names[i];
    ck_assert_int_eq(policy_filter(C, "ml", "tas-1", others, k, NOW, &fr), POLICY_OK);
    check_reason(&fr, others, k);
    ck_assert_ptr_null(fr.reason);
    policy_filter_result_cleanup(&fr);
    ck_assert_str_ne(node_of("tas-1"), planned);
    ck_assert_int_eq(node_of("tas-1")[0], planned[0]);
}
END_TEST

/* No rack holds the gang: one reason naming the key and the first rack tried, nothing held. */
START_TEST(a_gang_no_domain_holds_waits_whole_with_the_reason)
{
    const char *names[8];
    struct policy_filter_result fr;
    size_t n;

    three_racks(2, 2, 2);
    add_gang("ml/big", 5, RACK);
    add_pods("ml/big", "big", 5, 1);
    n = placement("", names);
    ck_assert_int_eq(policy_filter(C, "ml", "big-0", names, n, NOW, &fr), POLICY_OK);
    check_reason(&fr, names, n);
    ck_assert_ptr_nonnull(fr.reason);
    ck_assert_msg(strstr(fr.reason, "gang ml/big: no " RACK " domain holds it (3 tried); in " RACK
                                    "=") == fr.reason,
                  "%s", fr.reason);
    policy_filter_result_cleanup(&fr);
    ck_assert_ptr_null(node_of("big-0"));
    ck_assert_int_eq(reserved_gpus(), 0);
}
END_TEST

/* Members already bound pin the domain: the rest of the gang goes there or waits, although
 * another rack could hold all of them (a restart, or extras of a bound gang's minimum). */
START_TEST(bound_members_pin_the_gangs_domain)
{
    const char *names[8];
    struct policy_filter_result fr;
    struct policy_pod_spec bound = {.namespace_ = "ml", .name = "pin-0", .uid = "uid-pin-0",
                                    .cpu_milli = 1000, .memory_bytes = GiB, .gpus = 1,
                                    .gang = "ml/pin", .managed = true, .node = "c1"};
    size_t n;

    three_racks(2, 4, 2);
    add_gang("ml/pin", 3, RACK);
    ck_assert_int_eq(policy_pod_upsert(C, &bound, NOW), POLICY_OK);
    add_pods("ml/pin", "pinx", 2, 1);
    n = placement("", names);
    ck_assert_int_eq(policy_filter(C, "ml", "pinx-0", names, n, NOW, &fr), POLICY_OK);
    check_reason(&fr, names, n);
    ck_assert_ptr_null(fr.reason);
    policy_filter_result_cleanup(&fr);
    ck_assert_int_eq(node_of("pinx-0")[0], 'c');
    ck_assert_int_eq(node_of("pinx-1")[0], 'c');
}
END_TEST

/* A member beyond the minimum of a gang bound in one rack goes to that rack too, although
 * binpack would take a fuller node of another rack (kube-scheduler without the topology gate
 * offers every node). */
START_TEST(an_extra_of_a_bound_gang_goes_to_its_domain)
{
    const char *names[8];
    struct policy_filter_result fr;
    char why[256];
    size_t n;

    three_racks(2, 4, 2);
    add_gang("ml/tas", 2, RACK);
    for (int i = 0; i < 2; i++) {
        char name[16], uid[32];
        struct policy_pod_spec b = {.namespace_ = "ml", .name = name, .uid = uid,
                                    .cpu_milli = 1000, .memory_bytes = GiB, .gpus = 1,
                                    .gang = "ml/tas", .managed = true, .node = "a1"};

        snprintf(name, sizeof(name), "tas-%d", i);
        snprintf(uid, sizeof(uid), "uid-tas-%d", i);
        ck_assert_int_eq(policy_pod_upsert(C, &b, NOW), POLICY_OK);
    }
    {   /* b1 the fullest node with room: binpack's first choice without the domain */
        struct policy_pod_spec f = {.namespace_ = "ml", .name = "filler", .uid = "uid-filler",
                                    .cpu_milli = 1000, .memory_bytes = GiB, .gpus = 3,
                                    .managed = true, .node = "b1"};

        ck_assert_int_eq(policy_pod_upsert(C, &f, NOW), POLICY_OK);
    }
    add_pods("ml/tas", "extra", 1, 1);
    n = placement("", names);
    ck_assert_int_eq(policy_filter(C, "ml", "extra-0", names, n, NOW, &fr), POLICY_OK);
    check_reason(&fr, names, n);
    snprintf(why, sizeof(why), "%s", fr.reason ? fr.reason : "");
    policy_filter_result_cleanup(&fr);
    ck_assert_msg(node_of("extra-0") != NULL, "extra-0 not placed: %s", why);
    ck_assert_str_eq(node_of("extra-0"), "a2");
}
END_TEST

/* Issue 21: an extra of a gang bound in rack a, offered every node, when rack a is full: the
 * reason names the rack and counts its nodes only; it does not say "no node offered has 1
 * GPU free" with 4 free in rack b (found by random_reasons_are_true_of_the_state). */
START_TEST(an_extra_whose_domain_is_full_is_told_of_its_domain)
{
    const char *names[8];
    struct policy_filter_result fr;
    size_t n;

    three_racks(1, 4, 0);
    add_gang("ml/tas", 2, RACK);
    for (int i = 0; i < 2; i++) {
        char name[16], uid[32], node[4];
        struct policy_pod_spec b = {.namespace_ = "ml", .name = name, .uid = uid,
                                    .cpu_milli = 1000, .memory_bytes = GiB, .gpus = 1,
                                    .gang = "ml/tas", .managed = true, .node = node};

        snprintf(name, sizeof(name), "tas-%d", i);
        snprintf(uid, sizeof(uid), "uid-tas-%d", i);
        snprintf(node, sizeof(node), "a%d", i + 1);
        ck_assert_int_eq(policy_pod_upsert(C, &b, NOW), POLICY_OK);
    }
    add_pods("ml/tas", "extra", 1, 1);
    n = placement("", names);
    ck_assert_int_eq(policy_filter(C, "ml", "extra-0", names, n, NOW, &fr), POLICY_OK);
    check_reason(&fr, names, n);
    ck_assert_ptr_nonnull(fr.why);
    ck_assert_int_eq(fr.why->kind, POLICY_REASON_NO_NODE);
    ck_assert_int_eq(fr.why->nodes, 2);
    ck_assert_str_eq(fr.reason, "gang ml/tas: in " RACK "=a: member extra-0 (1 GPU): no node "
                                "offered has a free GPU");
    policy_filter_result_cleanup(&fr);
    ck_assert_ptr_null(node_of("extra-0"));
}
END_TEST

/* A node without the label is in no domain: never planned for a gang with a key. */
START_TEST(a_node_without_the_label_is_in_no_domain)
{
    const char *names[8] = {"bare"};
    struct policy_filter_result fr;

    add_node("bare", NULL, 8);
    add_node("a1", "a", 1);
    add_gang("ml/tas", 2, RACK);
    add_pods("ml/tas", "tas", 2, 1);
    ck_assert_int_eq(policy_filter(C, "ml", "tas-0", names, 1, NOW, &fr), POLICY_OK);
    check_reason(&fr, names, 1);
    ck_assert_ptr_nonnull(fr.reason);
    ck_assert_msg(strstr(fr.reason, "no " RACK " domain holds it (1 tried") != NULL, "%s",
                  fr.reason);
    policy_filter_result_cleanup(&fr);
}
END_TEST

/* kube-scheduler asks about a gang no rack holds once per rack in one cycle: the same answer
 * each time (unplaceable.c answers from the first); and the moment room is given back, a node
 * changes or the gang does, it is planned again and fits. */
static const char *unplaceable_changes[] = {"a pod gone", "a node grown", "the gang's minimum lowered"};

START_TEST(a_gang_no_placement_holds_is_answered_the_same_until_something_changes)
{
    const char *names[8];
    struct policy_filter_result fr;
    char first[512];
    const int64_t now = NOW;
    size_t n;

    three_racks(2, 4, 2);
    /* b1 is full with a pod of nobody's gang: no rack has 5 free */
    {
        struct policy_pod_spec f = {.namespace_ = "ml", .name = "filler", .uid = "uid-filler",
                                    .cpu_milli = 1000, .memory_bytes = GiB, .gpus = 4,
                                    .managed = true, .node = "b1"};

        ck_assert_int_eq(policy_pod_upsert(C, &f, NOW), POLICY_OK);
    }
    add_gang("ml/big", 5, RACK);
    add_pods("ml/big", "big", 5, 1);
    for (const char *r = "abc"; *r; r++) {
        char rack[2] = {*r, 0};

        n = placement(rack, names);
        ck_assert_int_eq(policy_filter(C, "ml", "big-0", names, n, now, &fr), POLICY_OK);
        ck_assert_ptr_nonnull(fr.reason);
        if (*r == 'a')
            snprintf(first, sizeof(first), "%s", fr.reason);
        ck_assert_str_eq(fr.reason, first);
        policy_filter_result_cleanup(&fr);
        ck_assert_ptr_null(node_of("big-0"));
    }
    switch (_i) {
    case 0:
        ck_assert_int_eq(policy_pod_forget(C, "ml", "filler"), POLICY_OK);
        break;
    case 1:
        add_node("c2", "c", 3); /* rack c: 2 + 3 */
        break;
    default:
        add_gang("ml/big", 4, RACK); /* and rack b's 4 free hold it */
        break;
    }
    n = placement("", names);
    ck_assert_int_eq(policy_filter(C, "ml", "big-0", names, n, now, &fr), POLICY_OK);
    ck_assert_msg(fr.reason == NULL, "%s: still %s", unplaceable_changes[_i], fr.reason);
    policy_filter_result_cleanup(&fr);
    ck_assert_ptr_nonnull(node_of("big-0"));
}
END_TEST

static void read_queue(const struct policy_queue_view *v, void *ctx)
{
    (void)v;
    (void)ctx;
}

/* The daemon reads the queues (their status, /debug/state) between any two calls: reading
 * brings the fair shares up to date, and must not hide that a member was made since the last
 * verdict. Found end to end: a RayCluster's eighth worker, made after kube-scheduler's first
 * filter of the gang, was answered "7 of 8 pods" from the verdict, and the gang waited for
 * minutes (kube-scheduler had seen that pod made before it asked). */
START_TEST(a_member_made_after_the_verdict_is_planned_whatever_was_read_in_between)
{
    const char *names[8];
    struct policy_filter_result fr;
    size_t n = placement("", names);

    three_racks(2, 4, 2);
    add_gang("ml/grow", 3, NULL);
    add_pods("ml/grow", "grow", 2, 1);
    ck_assert_int_eq(policy_filter(C, "ml", "grow-0", names, n, NOW, &fr), POLICY_OK);
    check_reason(&fr, names, n);
    ck_assert_ptr_nonnull(fr.reason);
    policy_filter_result_cleanup(&fr);
    add_pods("ml/grow", "grow", 3, 1); /* grow-2 is new */
    policy_each_queue(C, read_queue, NULL);
    ck_assert_int_eq(policy_filter(C, "ml", "grow-2", names, n, NOW, &fr), POLICY_OK);
    check_reason(&fr, names, n);
    ck_assert_msg(fr.reason == NULL, "still %s", fr.reason);
    policy_filter_result_cleanup(&fr);
    ck_assert_ptr_nonnull(node_of("grow-2"));
}
END_TEST

static void add_reserved(const struct policy_queue_view *v, void *ctx)
{
    if (v->parent == NULL)
        *(int64_t *)ctx += v->reserved.v[POLICY_RES_GPU];
}

static int64_t reserved_gpus(void)
{
    int64_t r = 0;

    policy_each_queue(C, add_reserved, &r);
    return r;
}

static Suite *suite(void)
{
    Suite *s = suite_create("policy_topology");
    TCase *tc = tcase_create("topology");

    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_loop_test(tc, a_gang_with_a_topology_key_is_planned_and_bound_in_one_domain, 0,
                        sizeof(orders) / sizeof(orders[0]));
    tcase_add_test(tc, a_placement_elsewhere_is_answered_from_the_plan_without_planning_again);
    tcase_add_test(tc, without_a_topology_key_a_member_still_moves_within_the_offer);
    tcase_add_test(tc, a_member_moves_only_within_its_gangs_domain);
    tcase_add_test(tc, a_gang_no_domain_holds_waits_whole_with_the_reason);
    tcase_add_test(tc, bound_members_pin_the_gangs_domain);
    tcase_add_test(tc, a_node_without_the_label_is_in_no_domain);
    tcase_add_test(tc, an_extra_of_a_bound_gang_goes_to_its_domain);
    tcase_add_test(tc, an_extra_whose_domain_is_full_is_told_of_its_domain);
    tcase_add_loop_test(tc, a_gang_no_placement_holds_is_answered_the_same_until_something_changes,
                        0, sizeof(unplaceable_changes) / sizeof(unplaceable_changes[0]));
    tcase_add_test(tc, a_member_made_after_the_verdict_is_planned_whatever_was_read_in_between);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *r = srunner_create(suite());
    int failed;

    srunner_run_all(r, CK_ENV);
    failed = srunner_ntests_failed(r);
    srunner_free(r);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
