/*
 * test_outside_epoch.c - which changes count as "from outside" for the rule that what the engine
 * placed since the last one is no victim (policy/model.c, pmodel_outside_epoch; docs/quota.md
 * "No thrash"). A pod made again in place of one the engine evicted is not such a change: its
 * gang's controller answers the engine's own decision. One more than were evicted, one made
 * bound to a node, one of a gang owed nothing, and one whose gang fell off the bounded list of
 * gangs owed are changes; a refused eviction owes nothing. The debt is taken when the eviction
 * is decided, so a replacement made while the victim terminates pays it. (The behaviour this protects is checked end to end by the eviction
 * model, seed 60165 of test_eviction_model; this checks the bookkeeping.)
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>

#include "internal.h"

#define GiB (INT64_C(1) << 30)

static struct policy_cluster *C;

static void pod(const char *gang, const char *name, const char *uid, const char *node);

static void setup(void)
{
    struct policy_options o = {.strategy = POLICY_BINPACK};
    struct policy_node_spec n = {.name = "n1", .cpu_milli = 512000, .memory_bytes = 1024 * GiB,
                                 .pods = 1000, .gpus = 0};

    C = policy_cluster_new(&o);
    ck_assert_ptr_nonnull(C);
    ck_assert_int_eq(policy_node_upsert(C, &n), POLICY_OK);
    pod(NULL, "taker", "t0", NULL);
}

static void teardown(void)
{
    policy_cluster_free(C);
    C = NULL;
}

/* Pod name of gang (NULL: a pod alone), uid, bound to node (NULL: pending). */
static void pod(const char *gang, const char *name, const char *uid, const char *node)
{
    struct policy_pod_spec p = {.namespace_ = "lab",
                                .name = name,
                                .uid = uid,
                                .cpu_milli = 100,
                                .memory_bytes = GiB,
                                .gang = gang,
                                .managed = true,
                                .node = node};

    ck_assert_int_eq(policy_pod_upsert(C, &p, 1000), POLICY_OK);
}

/* The engine's eviction of it decided (pevict_queue, for the pending pod "taker", made by
 * setup so that its making is no change inside a test). */
static void evicting(const char *name)
{
    struct ppod *p = ppod_find(C, "lab", name), *by;
    struct policy_eviction *ev;
    struct preason r;
    struct pwhy *w;
    size_t n;

    by = ppod_find(C, "lab", "taker");
    ck_assert_ptr_nonnull(p);
    ck_assert_ptr_nonnull(by);
    preason_init(&r, POLICY_REASON_EVICTED, "lab/taker");
    ck_assert_ptr_nonnull(w = pwhy_new(&r));
    ck_assert_int_eq(pevict_queue(C, p, ppod_gang(C, by), POLICY_EVICT_PREEMPT, w), POLICY_OK);
    pwhy_drop(w);
    ck_assert_int_eq(p->phase, POLICY_POD_EVICTING);
    ck_assert_int_eq(policy_evictions_take(C, &ev, &n), POLICY_OK);
    policy_evictions_free(ev, n);
}

/* ... and gone, as the watch sees it. */
static void evicted(const char *name)
{
    evicting(name);
    ck_assert_int_eq(policy_pod_forget(C, "lab", name), POLICY_OK);
}

START_TEST(a_pod_made_again_is_no_change_from_outside)
{
    uint64_t e;

    pod("lab/g", "g-0", "u0", "n1");
    pod("lab/g", "g-1", "u1", "n1");
    e = pmodel_outside_epoch(C);
    evicted("g-0"); /* the engine's own decision carried out */
    ck_assert_uint_eq(pmodel_outside_epoch(C), e);
    pod("lab/g", "g-2", "u2", NULL); /* made again: no change */
    ck_assert_uint_eq(pmodel_outside_epoch(C), e);
    pod("lab/g", "g-3", "u3", NULL); /* one more than was evicted: a change */
    ck_assert_uint_eq(pmodel_outside_epoch(C), e + 1);
}
END_TEST

START_TEST(a_pod_made_bound_or_of_another_gang_is_a_change)
{
    uint64_t e;

    pod("lab/g", "g-0", "u0", "n1");
    pod("lab/h", "h-0", "h0", "n1");
    evicted("g-0");
    e = pmodel_outside_epoch(C);
    pod("lab/g", "g-1", "u1", "n1"); /* made bound: someone else placed it */
    ck_assert_uint_eq(pmodel_outside_epoch(C), e + 1);
    evicted("h-0");
    pod("lab/k", "k-0", "k0", NULL); /* a gang owed nothing */
    ck_assert_uint_eq(pmodel_outside_epoch(C), e + 2);
    pod("lab/h", "h-1", "h1", NULL); /* h's is still owed */
    ck_assert_uint_eq(pmodel_outside_epoch(C), e + 2);
}
END_TEST

/* A Job's controller makes the new pod while the old one terminates: that is the pod made
 * again, and the old one going after it owes nothing more. */
START_TEST(a_pod_made_again_before_the_victim_goes_is_no_change)
{
    uint64_t e;

    pod("lab/g", "g-0", "u0", "n1");
    evicting("g-0");
    e = pmodel_outside_epoch(C);
    pod("lab/g", "g-1", "u1", NULL);
    ck_assert_uint_eq(pmodel_outside_epoch(C), e);
    ck_assert_int_eq(policy_pod_forget(C, "lab", "g-0"), POLICY_OK);
    pod("lab/g", "g-2", "u2", NULL); /* a pod more: a change */
    ck_assert_uint_eq(pmodel_outside_epoch(C), e + 1);
}
END_TEST

/* An eviction refused (a budget): the victim stays, nothing is owed. */
START_TEST(a_refused_eviction_owes_nothing)
{
    uint64_t e;

    pod("lab/g", "g-0", "u0", "n1");
    evicting("g-0");
    ck_assert_int_eq(policy_eviction_done(C, "lab", "g-0", false, "a budget", 2000), POLICY_OK);
    ck_assert_int_eq(ppod_find(C, "lab", "g-0")->phase, POLICY_POD_BOUND);
    e = pmodel_outside_epoch(C);
    pod("lab/g", "g-1", "u1", NULL);
    ck_assert_uint_eq(pmodel_outside_epoch(C), e + 1);
}
END_TEST

/* Made again under the same name while the evicted one is still leaving (a new uid): the old one
 * goes as an evicted pod, the new one is its replacement. A pod alone is its own gang. */
START_TEST(the_same_name_made_again_while_leaving_is_no_change)
{
    uint64_t e;

    pod(NULL, "solo", "s0", "n1");
    evicting("solo");
    e = pmodel_outside_epoch(C);
    pod(NULL, "solo", "s1", NULL);
    ck_assert_uint_eq(pmodel_outside_epoch(C), e);
    ck_assert_int_eq(ppod_find(C, "lab", "solo")->phase, POLICY_POD_PENDING);
}
END_TEST

/* POLICY_OWED_MAX gangs are owed at most: one more drops the oldest, whose pod made again is a
 * change then; the others are still owed. */
START_TEST(the_oldest_owed_gang_goes_past_the_bound)
{
    char gang[32], name[32], uid[32];
    uint64_t e;

    for (int i = 0; i <= POLICY_OWED_MAX; i++) {
        snprintf(gang, sizeof(gang), "lab/g%d", i);
        snprintf(name, sizeof(name), "g%d-0", i);
        snprintf(uid, sizeof(uid), "u%d", i);
        pod(gang, name, uid, "n1");
    }
    for (int i = 0; i <= POLICY_OWED_MAX; i++) {
        snprintf(name, sizeof(name), "g%d-0", i);
        evicted(name);
    }
    e = pmodel_outside_epoch(C);
    pod("lab/g1", "g1-1", "again1", NULL);
    ck_assert_uint_eq(pmodel_outside_epoch(C), e);
    pod("lab/g0", "g0-1", "again0", NULL); /* dropped: a change */
    ck_assert_uint_eq(pmodel_outside_epoch(C), e + 1);
    snprintf(gang, sizeof(gang), "lab/g%d", POLICY_OWED_MAX);
    pod(gang, "last-1", "again-last", NULL);
    ck_assert_uint_eq(pmodel_outside_epoch(C), e + 1);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("outside_epoch");
    TCase *tc = tcase_create("made_again");
    SRunner *sr;
    int failed;

    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, a_pod_made_again_is_no_change_from_outside);
    tcase_add_test(tc, a_pod_made_bound_or_of_another_gang_is_a_change);
    tcase_add_test(tc, a_pod_made_again_before_the_victim_goes_is_no_change);
    tcase_add_test(tc, a_refused_eviction_owes_nothing);
    tcase_add_test(tc, the_same_name_made_again_while_leaving_is_no_change);
    tcase_add_test(tc, the_oldest_owed_gang_goes_past_the_bound);
    suite_add_tcase(s, tc);
    sr = srunner_create(s);
    srunner_run_all(sr, CK_ENV);
    failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
