/*
 * test_order.c - porder_keep_first (policy/order.c), the bounded selection both the queue order
 * (the units ahead of a gang) and the unasked look (the first waiting gangs) use: for seeded
 * random streams with many ties, what it keeps is exactly the first max of a stable sort of
 * the whole stream, and ties keep their arrival order.
 */
#include <check.h>
#include <stdlib.h>

#include "internal.h"

struct item {
    int key;
    int seq; /* place in the stream */
};

static uint64_t rng_state;

static uint32_t rng(void)
{
    rng_state = rng_state * 6364136223846793005ULL + 1442695040888963407ULL;
    return (uint32_t)(rng_state >> 33);
}

static int by_key(const void *a, const void *b, void *ctx)
{
    const struct item *x = a, *y = b;

    (void)ctx;
    return (x->key > y->key) - (x->key < y->key);
}

static int by_key_then_seq(const void *a, const void *b)
{
    const struct item *x = a, *y = b;

    if (x->key != y->key)
        return (x->key > y->key) - (x->key < y->key);
    return (x->seq > y->seq) - (x->seq < y->seq);
}

START_TEST(keeps_a_stable_sorts_prefix)
{
    enum { STREAM = 300 };
    struct item stream[STREAM], sorted[STREAM], kept[32];

    rng_state = 0x5eed + (uint64_t)_i;
    for (int round = 0; round < 200; round++) {
        size_t len = rng() % STREAM, max = 1 + rng() % 32, n = 0;
        int spread = 1 + (int)(rng() % 40);

        for (size_t i = 0; i < len; i++)
            stream[i] = (struct item){(int)(rng() % (uint32_t)spread), (int)i};
        for (size_t i = 0; i < len; i++)
            porder_keep_first(kept, &n, max, sizeof(*kept), &stream[i], by_key, NULL);
        for (size_t i = 0; i < len; i++)
            sorted[i] = stream[i];
        qsort(sorted, len, sizeof(*sorted), by_key_then_seq);
        ck_assert_uint_eq(n, len < max ? len : max);
        for (size_t i = 0; i < n; i++) {
            ck_assert_int_eq(kept[i].key, sorted[i].key);
            ck_assert_int_eq(kept[i].seq, sorted[i].seq);
        }
    }
}
END_TEST

int main(void)
{
    Suite *s = suite_create("order");
    TCase *tc = tcase_create("keep_first");
    SRunner *sr;
    int failed;

    tcase_add_loop_test(tc, keeps_a_stable_sorts_prefix, 0, 8);
    suite_add_tcase(s, tc);
    sr = srunner_create(s);
    srunner_run_all(sr, CK_ENV);
    failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
