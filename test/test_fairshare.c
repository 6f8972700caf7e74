/*
 * test_fairshare.c - policy_fair_share against a brute-force reference, on
 * thousands of seeded random queue trees, and KAI's own division table
 * (pkg/scheduler/plugins/proportion/resource_division/resource_division_test.go).
 *
 * The reference divides in real numbers, independently of the engine: every
 * queue its deserved part (min(quota, demand, limit)), or the level's capacity
 * in proportion to those when they add up to more; then, highest priority
 * first, iterative proportional filling by weight, capped at each queue's want.
 * The engine's integer shares must each be within one unit of it.
 */
#include <check.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "policy.h"
#include "xorshift.h"

#define MAXQ 24


static int64_t want_of(const struct policy_share_queue *q)
{
    return q->limit >= 0 && q->limit < q->demand ? q->limit : q->demand;
}

static int64_t deserved_of(const struct policy_share_queue *q)
{
    int64_t w = want_of(q);

    return q->quota >= 0 && q->quota < w ? q->quota : w;
}

/* Iterative proportional filling in real numbers: give each queue that wants more
 * its weighted part of what is left, capped at its room, until nothing moves. */
static double fill_real(double amount, const double *w, const double *room_in, double *got, int n)
{
    double room[MAXQ];

    for (int i = 0; i < n; i++) {
        room[i] = room_in[i];
        got[i] = 0;
    }
    for (int round = 0; round <= n && amount > 1e-9; round++) {
        double total = 0, given = 0;

        for (int i = 0; i < n; i++)
            if (w[i] > 0 && room[i] > 1e-9)
                total += w[i];
        if (total <= 0)
            break;
        for (int i = 0; i < n; i++) {
            double g;

            if (w[i] <= 0 || room[i] <= 1e-9)
                continue;
            g = amount * w[i] / total;
            g = g > room[i] ? room[i] : g;
            got[i] += g;
            room[i] -= g;
            given += g;
        }
        amount -= given;
    }
    return amount;
}

/* The real-valued division of one level, written independently of the engine. */
static void reference_level(double cap, const struct policy_share_queue *q, const int *ids, int n,
                            double *fs)
{
    double d[MAXQ], w[MAXQ], room[MAXQ], got[MAXQ], total = 0;

    for (int i = 0; i < n; i++) {
        d[i] = (double)deserved_of(&q[ids[i]]);
        total += d[i];
    }
    if (total > cap) {
        fill_real(cap, d, d, got, n);
        for (int i = 0; i < n; i++)
            fs[ids[i]] = got[i];
        return;
    }
    cap -= total;
    for (int i = 0; i < n; i++)
        fs[ids[i]] = d[i];
    for (int prio = 1000; prio >= 0 && cap > 1e-9; prio--) {
        int k = 0, sel[MAXQ];

        for (int i = 0; i < n; i++) {
            if (q[ids[i]].priority != prio)
                continue;
            sel[k] = ids[i];
            w[k] = (double)q[ids[i]].weight;
            room[k] = (double)want_of(&q[ids[i]]) - fs[ids[i]];
            k++;
        }
        if (k == 0)
            continue;
        cap = fill_real(cap, w, room, got, k);
        for (int i = 0; i < k; i++)
            fs[sel[i]] += got[i];
    }
}

/* Level by level, each from the engine's own share of the parent: every share
 * must be within one unit of the real-valued one. */
static void check_against_reference(int64_t capacity, const struct policy_share_queue *q, int n,
                                    int round)
{
    double ref[MAXQ];
    int64_t children[MAXQ] = {0};

    for (int i = 0; i < n; i++)
        if (q[i].parent >= 0)
            children[q[i].parent] += q[i].demand;
    for (int parent = -1; parent < n; parent++) {
        int ids[MAXQ], k = 0;
        double cap = (double)capacity;

        for (int i = 0; i < n; i++)
            if (q[i].parent == parent)
                ids[k++] = i;
        if (k == 0)
            continue;
        if (parent >= 0) {
            int64_t own = q[parent].demand - children[parent];

            cap = (double)(q[parent].fair_share - (own > 0 ? own : 0));
        }
        reference_level(cap < 0 ? 0 : cap, q, ids, k, ref);
        for (int i = 0; i < k; i++)
            ck_assert_msg(fabs((double)q[ids[i]].fair_share - ref[ids[i]]) < 1.0 + 1e-6,
                          "round %d queue %d: engine %lld, real-valued %.3f", round, ids[i],
                          (long long)q[ids[i]].fair_share, ref[ids[i]]);
    }
}

/* A random tree: parents before children, demand rolled up. */
static int random_tree(struct policy_share_queue *q, int64_t *capacity)
{
    int n = 1 + (int)(rng() % MAXQ);

    *capacity = 1 + rng() % 3000;
    for (int i = 0; i < n; i++) {
        q[i] = (struct policy_share_queue){
            .parent = i > 0 && rng() % 3 == 0 ? (int32_t)(rng() % i) : -1,
            .priority = (int32_t)(rng() % 3) * 50,
            .quota = rng() % 4 == 0 ? -1 : (int64_t)(rng() % 800),
            .limit = rng() % 3 == 0 ? (int64_t)(rng() % 1500) : -1,
            .weight = rng() % 5 == 0 ? 0 : 1 + rng() % 4,
            .demand = rng() % 4 == 0 ? 0 : (int64_t)(rng() % 1500),
        };
    }
    /* Leaves hold the gangs; a parent's demand is its children's (plus a little of its own). */
    for (int i = n - 1; i >= 0; i--)
        if (q[i].parent >= 0)
            q[q[i].parent].demand += q[i].demand;
    return n;
}

START_TEST(random_trees_match_the_reference_within_one_unit)
{
    struct policy_share_queue q[MAXQ];
    int64_t capacity;

    rng_state = 0x2545F4914F6CDD1DULL + (uint64_t)_i;
    for (int round = 0; round < 1000; round++) {
        int n = random_tree(q, &capacity);

        policy_fair_share(capacity, q, (size_t)n);
        check_against_reference(capacity, q, n, round);
    }
}
END_TEST

START_TEST(random_trees_keep_the_promises)
{
    struct policy_share_queue q[MAXQ];
    int64_t capacity;

    rng_state = 0x9E3779B97F4A7C15ULL + (uint64_t)_i;
    for (int round = 0; round < 1000; round++) {
        int n = random_tree(q, &capacity);
        int64_t top = 0, top_want = 0, top_fs = 0;

        policy_fair_share(capacity, q, (size_t)n);
        for (int i = 0; i < n; i++) {
            /* Never above demand, never above limit. */
            ck_assert_int_le(q[i].fair_share, q[i].demand > 0 ? q[i].demand : 0);
            if (q[i].limit >= 0)
                ck_assert_int_le(q[i].fair_share, q[i].limit);
            ck_assert_int_ge(q[i].fair_share, 0);
            if (q[i].parent < 0) {
                top++;
                top_want += want_of(&q[i]);
                top_fs += q[i].fair_share;
            }
        }
        /* The top level never gives out more than there is, and all of it while
         * the queues that may take more want it (any weight > 0 or unsatisfied deserved). */
        ck_assert_int_le(top_fs, capacity);
        if (top_want >= capacity) {
            bool all_weightless = true;

            for (int i = 0; i < n; i++)
                if (q[i].parent < 0 && q[i].weight > 0 && q[i].fair_share < want_of(&q[i]))
                    all_weightless = false;
            if (!all_weightless)
                ck_assert_int_eq(top_fs, capacity);
        }
        (void)top;
    }
}
END_TEST

/* Equal weights and equal wants: equal shares within one unit, whatever the capacity. */
START_TEST(equal_weights_get_equal_shares)
{
    struct policy_share_queue q[7];

    rng_state = 42 + (uint64_t)_i;
    for (int round = 0; round < 2000; round++) {
        int n = 2 + (int)(rng() % 6);
        int64_t cap = rng() % 10007, lo = INT64_MAX, hi = INT64_MIN;

        for (int i = 0; i < n; i++)
            q[i] = (struct policy_share_queue){.parent = -1, .quota = 0, .limit = -1,
                                               .weight = 3, .demand = 1000000};
        policy_fair_share(cap, q, (size_t)n);
        for (int i = 0; i < n; i++) {
            lo = q[i].fair_share < lo ? q[i].fair_share : lo;
            hi = q[i].fair_share > hi ? q[i].fair_share : hi;
        }
        ck_assert_int_le(hi - lo, 1);
    }
}
END_TEST

/* A higher priority is served whole before a lower one gets anything over quota. */
START_TEST(priority_buckets_are_served_in_order)
{
    struct policy_share_queue q[3] = {
        {.parent = -1, .priority = 0, .quota = 1000, .limit = -1, .weight = 9, .demand = 5000},
        {.parent = -1, .priority = 100, .quota = 0, .limit = -1, .weight = 1, .demand = 2500},
        {.parent = -1, .priority = 50, .quota = 0, .limit = -1, .weight = 1, .demand = 5000},
    };

    policy_fair_share(4000, q, 3);
    ck_assert_int_eq(q[0].fair_share, 1000); /* its quota, nothing over: others rank first */
    ck_assert_int_eq(q[1].fair_share, 2500); /* the highest priority, all it wants */
    ck_assert_int_eq(q[2].fair_share, 500);  /* what is left */
}
END_TEST

/*
 * KAI-Scheduler resource_division_test.go, "two queues" table, in GPUs as
 * milli-units. Each row: capacity; for both queues quota, limit, weight,
 * priority, request; the fair shares KAI expects. Where KAI rounds over-quota
 * shares to whole GPUs and hands out what is left one GPU at a time, muster is
 * exact: those rows carry muster's value and say so.
 */
static const struct kai_row {
    const char *entry;
    int64_t capacity;
    struct policy_share_queue a, b;
    int64_t want_a, want_b;
} kai_rows[] = {
    {"allocates GPUs proportionally", 8000,
     {.parent = -1, .quota = 2000, .limit = -1, .weight = 1, .demand = 3000},
     {.parent = -1, .quota = 2000, .limit = -1, .weight = 1, .demand = 6000}, 3000, 5000},
    {"allocates many available gpus", 100000,
     {.parent = -1, .quota = 2000, .limit = -1, .weight = 1, .demand = 6000},
     {.parent = -1, .quota = 2000, .limit = -1, .weight = 1, .demand = 6000}, 6000, 6000},
    {"doesn't allocate more than allowed", 12000,
     {.parent = -1, .quota = 2000, .limit = 5000, .weight = 1, .demand = 6000},
     {.parent = -1, .quota = 2000, .limit = -1, .weight = 1, .demand = 6000}, 5000, 6000},
    {"priority doesn't affect deserved", 4000,
     {.parent = -1, .priority = 1, .quota = 2000, .limit = -1, .weight = 1, .demand = 2000},
     {.parent = -1, .priority = 2, .quota = 2000, .limit = -1, .weight = 1, .demand = 2000},
     2000, 2000},
    {"priority does affect over-quota", 6000,
     {.parent = -1, .priority = 1, .quota = 2000, .limit = -1, .weight = 1, .demand = 4000},
     {.parent = -1, .priority = 2, .quota = 2000, .limit = -1, .weight = 1, .demand = 4000},
     2000, 4000},
    /* KAI: 5 and 6 (the remainder by creation time); muster divides the odd GPU exactly. */
    {"distributes remainder between queues based on creation time (muster: exact)", 11000,
     {.parent = -1, .quota = 2000, .limit = -1, .weight = 1, .demand = 8000},
     {.parent = -1, .quota = 2000, .limit = -1, .weight = 1, .demand = 8000}, 5500, 5500},
};

START_TEST(kai_two_queue_table)
{
    const struct kai_row *row = &kai_rows[_i];
    struct policy_share_queue q[2] = {row->a, row->b};

    policy_fair_share(row->capacity, q, 2);
    ck_assert_msg(q[0].fair_share == row->want_a && q[1].fair_share == row->want_b,
                  "%s: got %lld and %lld", row->entry, (long long)q[0].fair_share,
                  (long long)q[1].fair_share);
}
END_TEST

/* A child divides its parent's fair share, not the cluster's. */
START_TEST(children_divide_their_parents_share)
{
    struct policy_share_queue q[4] = {
        {.parent = -1, .quota = 6000, .limit = -1, .weight = 1, .demand = 10000},
        {.parent = -1, .quota = 2000, .limit = -1, .weight = 1, .demand = 2000},
        {.parent = 0, .quota = 1000, .limit = -1, .weight = 1, .demand = 7000},
        {.parent = 0, .quota = 1000, .limit = -1, .weight = 3, .demand = 3000},
    };

    policy_fair_share(8000, q, 4);
    ck_assert_int_eq(q[0].fair_share, 6000);
    ck_assert_int_eq(q[1].fair_share, 2000);
    /* 6000 among the children: 1000 + 1000 deserved, 4000 over by 1:3, capped at 3000. */
    ck_assert_int_eq(q[3].fair_share, 3000);
    ck_assert_int_eq(q[2].fair_share, 3000);
}
END_TEST

/* docs/quota.md's worked example, so the page cannot drift from the code. */
START_TEST(docs_worked_example)
{
    struct policy_share_queue q[3] = {
        {.parent = -1, .quota = 4000, .limit = -1, .weight = 1, .demand = 10000}, /* research */
        {.parent = -1, .quota = 4000, .limit = -1, .weight = 2, .demand = 8000},  /* prod */
        {.parent = -1, .quota = 0, .limit = -1, .weight = 1, .demand = 6000},     /* batch */
    };

    policy_fair_share(16000, q, 3);
    ck_assert_int_eq(q[0].fair_share, 6000);
    ck_assert_int_eq(q[1].fair_share, 8000);
    ck_assert_int_eq(q[2].fair_share, 2000);
    q[1].priority = 1;
    policy_fair_share(16000, q, 3);
    ck_assert_int_eq(q[0].fair_share, 6000);
    ck_assert_int_eq(q[1].fair_share, 8000);
    ck_assert_int_eq(q[2].fair_share, 2000);
    q[1].demand = 12000;
    policy_fair_share(16000, q, 3);
    ck_assert_int_eq(q[0].fair_share, 4000);
    ck_assert_int_eq(q[1].fair_share, 12000);
    ck_assert_int_eq(q[2].fair_share, 0);
}
END_TEST

static Suite *fairshare_suite(void)
{
    Suite *s = suite_create("fairshare");
    TCase *tc = tcase_create("property");

    tcase_add_loop_test(tc, random_trees_match_the_reference_within_one_unit, 0, 4);
    tcase_add_loop_test(tc, random_trees_keep_the_promises, 0, 4);
    tcase_add_loop_test(tc, equal_weights_get_equal_shares, 0, 2);
    suite_add_tcase(s, tc);
    tc = tcase_create("table");
    tcase_add_test(tc, priority_buckets_are_served_in_order);
    tcase_add_loop_test(tc, kai_two_queue_table, 0, sizeof(kai_rows) / sizeof(kai_rows[0]));
    tcase_add_test(tc, children_divide_their_parents_share);
    tcase_add_test(tc, docs_worked_example);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(fairshare_suite());
    int failed;

    srunner_run_all(sr, CK_ENV);
    failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
