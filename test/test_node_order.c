/*
 * test_node_order.c - the kept node order (policy/node_order.c) is always the order a fresh sort
 * gives: after every step of a seeded random run of pods bound and forgotten, plans made and
 * abandoned, nodes added, changed and forgotten (ids reused), for binpack and spread, every node
 * (pnode_order_every), every node as candidates and a few candidates (pnode_order) are compared
 * with a sort from scratch by the same key (fill score, then id).
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

#define GiB (1LL << 30)
#define NODES 120
#define STEPS 1500

static uint64_t rng_state;

static uint32_t rng(void)
{
    rng_state = rng_state * 6364136223846793005ULL + 1442695040888963407ULL;
    return (uint32_t)(rng_state >> 33);
}

static enum policy_strategy strategy;

static int cmp_fresh(const void *a, const void *b, void *ctx)
{
    const struct policy_cluster *c = ctx;
    int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
    int64_t sx = pnode_fill_score(pnode_at(c, x)), sy = pnode_fill_score(pnode_at(c, y));

    if (strategy == POLICY_SPREAD) {
        sx = -sx;
        sy = -sy;
    }
    if (sx != sy)
        return sx > sy ? -1 : 1;
    return x < y ? -1 : x > y;
}

/* Every known node id, sorted from scratch. */
static size_t fresh(struct policy_cluster *c, int32_t *out)
{
    size_t n = 0;

    for (size_t i = 0; i < c->nodes.n; i++)
        if (c->nodes.items[i])
            out[n++] = (int32_t)i;
    qsort_r(out, n, sizeof(*out), cmp_fresh, c);
    return n;
}

static void check_orders(struct policy_cluster *c, int step)
{
    int32_t want[NODES * 2], got[NODES * 2], few[8], few_want[8];
    size_t n = fresh(c, want), m = 0, nfew = 0;
    int32_t *every = pnode_order_every(c, &m);

    ck_assert_ptr_nonnull(every);
    ck_assert_uint_eq(m, n);
    for (size_t i = 0; i < n; i++)
        ck_assert_msg(every[i] == want[i], "step %d: every node, position %zu: %d, want %d", step,
                      i, every[i], want[i]);
    free(every);
    /* Every node as candidates, given in id order. */
    {
        int32_t ids[NODES * 2];
        size_t k = 0;

        for (size_t i = 0; i < c->nodes.n; i++)
            if (c->nodes.items[i])
                ids[k++] = (int32_t)i;
        pnode_order(c, ids, k, got);
        for (size_t i = 0; i < n; i++)
            ck_assert_msg(got[i] == want[i], "step %d: all candidates, position %zu", step, i);
    }
    /* A few candidates: the same relative order. */
    for (size_t i = 0; i < n && nfew < 8; i += 1 + rng() % 20)
        few[nfew++] = want[i];
    memcpy(few_want, few, sizeof(few));
    for (size_t i = nfew; i-- > 1;) { /* shuffle what is given */
        size_t j = rng() % (i + 1);
        int32_t t = few[i];

        few[i] = few[j];
        few[j] = t;
    }
    pnode_order(c, few, nfew, got);
    for (size_t i = 0; i < nfew; i++)
        ck_assert_msg(got[i] == few_want[i], "step %d: few candidates, position %zu", step, i);
}

static void upsert_node(struct policy_cluster *c, int i)
{
    char name[32];
    struct policy_node_spec n = {.name = name,
                                 .cpu_milli = (8 + rng() % 4 * 8) * 1000,
                                 .memory_bytes = (int64_t)(32 + rng() % 3 * 32) * GiB,
                                 .pods = 110,
                                 .gpus = rng() % 3 == 0 ? 0 : 4 + rng() % 2 * 4};

    snprintf(name, sizeof(name), "n%03d", i);
    ck_assert_int_eq(policy_node_upsert(c, &n), POLICY_OK);
}

static void add_pod(struct policy_cluster *c, int i, const char *node, const char *gang)
{
    char name[32], uid[32];
    bool shared = rng() % 3 == 0;
    struct policy_pod_spec p = {.namespace_ = "ns",
                                .name = name,
                                .uid = uid,
                                .cpu_milli = (1 + rng() % 4) * 1000,
                                .memory_bytes = (int64_t)(1 + rng() % 8) * GiB,
                                .gpus = shared ? 0 : rng() % 3,
                                .gpu_share_milli = shared ? (int32_t)(100 * (1 + rng() % 9)) : 0,
                                .gang = gang,
                                .node = node,
                                .managed = true};

    snprintf(name, sizeof(name), "p%05d", i);
    snprintf(uid, sizeof(uid), "u%05d", i);
    ck_assert_int_eq(policy_pod_upsert(c, &p, 0), POLICY_OK);
}

static void run(enum policy_strategy s, uint64_t seed)
{
    struct policy_options o = {.strategy = s};
    struct policy_cluster *c = policy_cluster_new(&o);
    char names[NODES][32];
    const char *all[NODES];
    int pods = 0;

    ck_assert_ptr_nonnull(c);
    strategy = s;
    rng_state = seed;
    for (int i = 0; i < NODES; i++) {
        snprintf(names[i], sizeof(names[i]), "n%03d", i);
        all[i] = names[i];
        if (i < NODES / 2)
            upsert_node(c, i);
    }
    check_orders(c, -1);
    for (int step = 0; step < STEPS; step++) {
        int op = (int)(rng() % 10), i = (int)(rng() % NODES);
        char name[32];

        if (op <= 3) { /* a pod filtered on every node and bound where it fits */
            struct policy_filter_result fr;
            struct policy_bind_result br;

            add_pod(c, pods, NULL, NULL);
            snprintf(name, sizeof(name), "p%05d", pods++);
            ck_assert_int_eq(policy_filter(c, "ns", name, all, NODES, 0, &fr), POLICY_OK);
            for (size_t k = 0; k < fr.n; k++) {
                if (fr.verdicts[k].fit != POLICY_FITS)
                    continue;
                ck_assert_int_eq(policy_bind(c, "ns", name, all[k], 0, &br), POLICY_OK);
                for (size_t m = 0; br.outcome == POLICY_BIND_COMMIT && m < br.n; m++)
                    policy_bind_done(c, "ns", br.members[m].name, true, NULL);
                policy_bind_result_cleanup(&br);
                break;
            }
            policy_filter_result_cleanup(&fr);
        } else if (op == 4 && pods > 0) { /* a pod goes */
            snprintf(name, sizeof(name), "p%05d", (int)(rng() % (uint32_t)pods));
            policy_pod_forget(c, "ns", name);
        } else if (op == 5) { /* a pod already bound, seen by the watch */
            if (policy_node_known(c, names[i]))
                add_pod(c, pods++, names[i], NULL);
        } else if (op == 6) { /* a gang of three planned whole (its plan expires or binds) */
            char gang[32];
            struct policy_gang_spec g = {.key = gang, .min_members = 3};
            struct policy_filter_result fr;

            snprintf(gang, sizeof(gang), "ns/g%05d", pods);
            ck_assert_int_eq(policy_gang_upsert(c, &g), POLICY_OK);
            for (int m = 0; m < 3; m++)
                add_pod(c, pods + m, NULL, gang);
            snprintf(name, sizeof(name), "p%05d", pods);
            pods += 3;
            ck_assert_int_eq(policy_filter(c, "ns", name, all, NODES, 0, &fr), POLICY_OK);
            policy_filter_result_cleanup(&fr);
            if (rng() % 2)
                policy_expire(c, 1000000); /* abandoned: every member released */
        } else if (op == 7) { /* a node comes or changes */
            upsert_node(c, i);
        } else if (op == 8) { /* a node goes; a new one may take its id */
            policy_node_forget(c, names[i]);
        }
        check_orders(c, step);
    }
    policy_cluster_free(c);
}

START_TEST(kept_order_is_a_fresh_sort_binpack)
{
    run(POLICY_BINPACK, 1 + (uint64_t)_i);
}
END_TEST

START_TEST(kept_order_is_a_fresh_sort_spread)
{
    run(POLICY_SPREAD, 101 + (uint64_t)_i);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("node_order");
    TCase *tc = tcase_create("fresh_sort");
    SRunner *sr;
    int failed;

    tcase_add_loop_test(tc, kept_order_is_a_fresh_sort_binpack, 0, 4);
    tcase_add_loop_test(tc, kept_order_is_a_fresh_sort_spread, 0, 2);
    tcase_set_timeout(tc, 120);
    suite_add_tcase(s, tc);
    sr = srunner_create(s);
    srunner_run_all(sr, CK_ENV);
    failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
