/*
 * test_usage.c - fair over time (policy/usage.c and policy_fair_share_k), against brute-force
 * references written independently of the engine, in seeded random histories and trees:
 *
 *   - the usage integral: every span's closed-form decayed integral over the window, summed
 *     span by span in long double (the engine keeps buckets and chains their decay); they may
 *     differ only in the bucket the window's edge cuts, which the engine prorates, by at most
 *     that bucket's whole weight;
 *   - the division: KAI's divideUpToFairShare rounds with calcShareWeights in long double,
 *     without KAI's rounding down (the engine rounds each round's parts down and divides the
 *     last round exactly), each share within one unit per round;
 *   - the engine: queues, nodes and bound pods changing at random times, sampled at each
 *     change: its published U' against the reference integral of what was bound, rolled up;
 *     a restart seeded from the status against the engine that kept running.
 */
#include <check.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "policy.h"
#include "xorshift.h"

#define HOUR (INT64_C(3600) * 1000)
#define DAY (24 * HOUR)


static double unit(void)
{
    return (double)rng() / 4294967296.0; /* [0, 1) */
}

/* log-uniform in [lo, hi] */
static int64_t log_between(int64_t lo, int64_t hi)
{
    return (int64_t)exp(log((double)lo) + unit() * (log((double)hi) - log((double)lo)));
}

/* ---- the integral ----------------------------------------------------------------------- */

struct span {
    int64_t from, to;
    double amount;
};

/* Sum over spans of amount x integral over [from, to] within (now - window, now] of
 * 0.5^((now - s) / halfLife) ds, each in closed form. */
static long double reference_integral(const struct span *h, size_t n, int64_t now,
                                      const struct policy_fairness *f)
{
    long double total = 0, hl = (long double)f->half_life_ms;

    for (size_t i = 0; i < n; i++) {
        int64_t lo = h[i].from > now - f->window_ms ? h[i].from : now - f->window_ms;
        int64_t hi = h[i].to < now ? h[i].to : now;

        if (hi <= lo)
            continue;
        total += (long double)h[i].amount * hl / logl(2.0L) *
                 (exp2l(-(long double)(now - hi) / hl) - exp2l(-(long double)(now - lo) / hl));
    }
    return total;
}

/* What the engine may differ by: the whole weight of the bucket the window's edge cuts. */
static double edge_bound(const struct policy_usage *u, const struct policy_fairness *f,
                         double max_amount)
{
    double w = (double)u->bucket_ms;

    return max_amount * w * exp2(-((double)f->window_ms - w) / (double)f->half_life_ms);
}

static void random_settings(struct policy_fairness *f)
{
    memset(f, 0, sizeof(*f));
    f->window_ms = log_between(60 * 1000, 30 * DAY);
    /* from far below the window (the edge does not matter) to far above (it is all that does) */
    f->half_life_ms = log_between(1000, 10 * f->window_ms);
}

START_TEST(integral_matches_the_brute_force_in_random_histories)
{
    struct span h[200];
    struct policy_fairness f;
    struct policy_usage u;

    rng_state = 0xC0FFEE1234567ULL + (uint64_t)_i;
    for (int round = 0; round < 400; round++) {
        size_t n = 1 + rng() % 200;
        int64_t t = (int64_t)(rng() % 2000000) - 1000000; /* negative times too */
        double max_amount = 0;

        random_settings(&f);
        policy_usage_init(&u, &f);
        for (size_t i = 0; i < n; i++) {
            /* Spans as a sampler sees them: one after another, some gaps, some zero. */
            t += rng() % 3 == 0 ? log_between(1, 2 * f.window_ms) : 0;
            h[i].from = t;
            h[i].to = t + log_between(1, f.window_ms / 4 + 2);
            h[i].amount = rng() % 5 == 0 ? 0 : unit() * 1e6;
            max_amount = h[i].amount > max_amount ? h[i].amount : max_amount;
            policy_usage_add(&u, &f, h[i].from, h[i].to, h[i].amount);
            t = h[i].to;
        }
        for (int q = 0; q < 8; q++) {
            int64_t now = t + (q == 0 ? 0 : log_between(1, 2 * f.window_ms));
            long double ref = reference_integral(h, n, now, &f);
            double got = policy_usage_at(&u, &f, now);
            double slack = edge_bound(&u, &f, max_amount) + 1e-9 * (double)ref + 1e-6;

            ck_assert_msg(fabs(got - (double)ref) <= slack,
                          "round %d: halfLife %lld ms, window %lld ms, now %lld: engine %.9g, "
                          "reference %.9Lg, allowed %.3g",
                          round, (long long)f.half_life_ms, (long long)f.window_ms,
                          (long long)now, got, ref, slack);
        }
    }
}
END_TEST

/* With a half-life well below the window the edge weighs nothing: exact to rounding. */
START_TEST(integral_is_exact_when_the_window_is_long)
{
    struct policy_fairness f = {.half_life_ms = 4 * HOUR, .window_ms = 7 * DAY};
    struct policy_usage u;
    struct span h[64];
    int64_t t = 0;

    rng_state = 99;
    policy_usage_init(&u, &f);
    for (size_t i = 0; i < 64; i++) {
        h[i] = (struct span){t, t + log_between(1000, 6 * HOUR), unit() * 16000};
        policy_usage_add(&u, &f, h[i].from, h[i].to, h[i].amount);
        t = h[i].to;
    }
    for (int64_t now = t; now < t + 3 * DAY; now += 7 * HOUR + 13) {
        long double ref = reference_integral(h, 64, now, &f);

        ck_assert_double_eq_tol(policy_usage_at(&u, &f, now), (double)ref,
                                1e-12 * (double)ref + 1e-9);
    }
    /* A constant holding for the whole window: h / ln2 x (1 - 0.5^(window / h)) per unit. */
    policy_usage_init(&u, &f);
    policy_usage_add(&u, &f, 0, 30 * DAY, 1.0);
    ck_assert_double_eq_tol(policy_usage_at(&u, &f, 30 * DAY),
                            4.0 * HOUR / M_LN2 * (1 - exp2(-7 * 24 / 4.0)), 1e-3);
}
END_TEST

START_TEST(a_mass_decays_from_its_instant_and_leaves_with_the_window)
{
    struct policy_fairness f = {.half_life_ms = HOUR, .window_ms = DAY};
    struct policy_usage u;

    policy_usage_init(&u, &f);
    policy_usage_add_mass(&u, &f, 10 * HOUR, 1000.0);
    ck_assert_double_eq_tol(policy_usage_at(&u, &f, 10 * HOUR), 1000.0, 1e-9);
    ck_assert_double_eq_tol(policy_usage_at(&u, &f, 12 * HOUR), 250.0, 1e-9);
    /* Added after the mass, in the same bucket: both decay alike. */
    policy_usage_add(&u, &f, 12 * HOUR, 13 * HOUR, 2.0);
    ck_assert_double_eq_tol(policy_usage_at(&u, &f, 13 * HOUR),
                            125.0 + 2.0 * HOUR / M_LN2 * 0.5, 1e-6);
    /* A mass alone, once its bucket is out of the window, is gone. */
    policy_usage_init(&u, &f);
    policy_usage_add_mass(&u, &f, 10 * HOUR, 1000.0);
    ck_assert_double_gt(policy_usage_at(&u, &f, 10 * HOUR + DAY - u.bucket_ms), 0.0);
    ck_assert_double_eq(policy_usage_at(&u, &f, 10 * HOUR + DAY + u.bucket_ms), 0.0);
}
END_TEST

/* Held evenly, the bucket the edge cuts is prorated exactly: without decay, amount x window. */
START_TEST(an_even_holding_is_counted_over_the_window_exactly)
{
    struct policy_fairness f = {.half_life_ms = INT64_C(1) << 50, .window_ms = 7 * DAY + 12345};
    struct policy_usage u;

    for (int64_t now = 10 * DAY; now < 20 * DAY; now += 3 * HOUR + 17) {
        policy_usage_init(&u, &f);
        policy_usage_add(&u, &f, -3 * DAY, now, 3.0);
        ck_assert_double_eq_tol(policy_usage_at(&u, &f, now), 3.0 * (double)f.window_ms,
                                1e-6 * 3.0 * (double)f.window_ms);
    }
}
END_TEST

START_TEST(off_keeps_nothing)
{
    struct policy_fairness f = {.half_life_ms = 0, .window_ms = DAY};
    struct policy_usage u;

    policy_usage_init(&u, &f);
    policy_usage_add(&u, &f, 0, HOUR, 5.0);
    policy_usage_add_mass(&u, &f, 0, 5.0);
    ck_assert_double_eq(policy_usage_at(&u, &f, HOUR), 0.0);
}
END_TEST

/* ---- the division ------------------------------------------------------------------------ */

#define MAXQ 24

static int64_t want_of(const struct policy_share_queue *q)
{
    int64_t d = q->demand > 0 ? q->demand : 0;

    return q->limit >= 0 && q->limit < d ? q->limit : d;
}

static int64_t deserved_of(const struct policy_share_queue *q)
{
    int64_t w = want_of(q);

    return q->quota >= 0 && q->quota < w ? q->quota : w;
}

/*
 * KAI's divideUpToFairShare in long double without its rounding down: each round, among the
 * queues still asking (weight > 0, room left), shareWeight = max(0, w' + k (w' - U')); a queue
 * whose part covers its room takes its room, the others their part; a round where nobody was
 * covered is the last. Returns what nobody took; *rounds counts the rounds.
 */
static long double kai_rounds(long double amount, long double k, const long double *w,
                              const long double *u, long double *room, long double *got, int n,
                              int *rounds)
{
    bool asking[MAXQ];

    for (int i = 0; i < n; i++) {
        asking[i] = w[i] > 0 && room[i] > 0;
        got[i] = 0;
    }
    for (*rounds = 0; amount > 0; ++*rounds) {
        long double s = 0, sw[MAXQ], sum = 0, given = 0;
        bool covered = false;

        for (int i = 0; i < n; i++)
            s += asking[i] ? w[i] : 0;
        if (s <= 0)
            break;
        for (int i = 0; i < n; i++) {
            long double wn = w[i] / s;

            sw[i] = asking[i] ? fmaxl(0, wn + k * (wn - u[i])) : 0;
            sum += sw[i];
        }
        if (sum <= 0)
            break;
        for (int i = 0; i < n; i++) {
            long double part = amount * sw[i] / sum;

            if (!asking[i] || sw[i] == 0)
                continue;
            if (room[i] <= part) {
                got[i] += room[i];
                given += room[i];
                room[i] = 0;
                asking[i] = false;
                covered = true;
            } else {
                got[i] += part;
                room[i] -= part;
                given += part;
            }
        }
        amount -= given;
        if (!covered) {
            amount = 0;
            ++*rounds;
            break;
        }
    }
    return amount;
}

/* One level, as KAI divides it: deserved first (or the capacity in proportion to it when it
 * is promised over), then each priority from the highest by kai_rounds. */
static void reference_level(long double cap, long double k, const struct policy_share_queue *q,
                            const int *ids, int n, long double *fs, int *rounds)
{
    long double total = 0, d[MAXQ];

    *rounds = 0;
    for (int i = 0; i < n; i++) {
        d[i] = (long double)deserved_of(&q[ids[i]]);
        total += d[i];
    }
    if (total > cap) {
        for (int i = 0; i < n; i++)
            fs[ids[i]] = total > 0 ? cap * d[i] / total : 0;
        return;
    }
    cap -= total;
    for (int i = 0; i < n; i++)
        fs[ids[i]] = d[i];
    for (int prio = 200; prio >= 0 && cap > 0; prio--) {
        long double w[MAXQ], u[MAXQ], room[MAXQ], got[MAXQ];
        int sel[MAXQ], m = 0, r;

        for (int i = 0; i < n; i++) {
            if (q[ids[i]].priority != prio)
                continue;
            sel[m] = ids[i];
            w[m] = (long double)q[ids[i]].weight;
            u[m] = (long double)q[ids[i]].usage / POLICY_USAGE_UNIT;
            room[m] = (long double)want_of(&q[ids[i]]) - fs[ids[i]];
            m++;
        }
        if (m == 0)
            continue;
        cap = kai_rounds(cap, k, w, u, room, got, m, &r);
        *rounds += r;
        for (int i = 0; i < m; i++)
            fs[sel[i]] += got[i];
    }
}

static void check_levels(int64_t capacity, int64_t k_milli, const struct policy_share_queue *q,
                         int n, int round)
{
    long double ref[MAXQ];
    int64_t children[MAXQ] = {0};

    for (int i = 0; i < n; i++)
        if (q[i].parent >= 0)
            children[q[i].parent] += q[i].demand;
    for (int parent = -1; parent < n; parent++) {
        int ids[MAXQ], m = 0, rounds;
        long double cap = (long double)capacity;

        for (int i = 0; i < n; i++)
            if (q[i].parent == parent)
                ids[m++] = i;
        if (m == 0)
            continue;
        if (parent >= 0) {
            int64_t own = q[parent].demand - children[parent];

            cap = (long double)(q[parent].fair_share - (own > 0 ? own : 0));
        }
        reference_level(cap < 0 ? 0 : cap, (long double)k_milli / 1000, q, ids, m, ref, &rounds);
        for (int i = 0; i < m; i++)
            ck_assert_msg(fabsl((long double)q[ids[i]].fair_share - ref[ids[i]]) <= rounds + 1.0L,
                          "round %d, k %lld, queue %d: engine %lld, KAI's rounds %.3Lf (%d rounds)",
                          round, (long long)k_milli, ids[i], (long long)q[ids[i]].fair_share,
                          ref[ids[i]], rounds);
    }
}

/* A random tree with usage: parents before children, demand and usage rolled up. */
static int random_tree(struct policy_share_queue *q, int64_t *capacity)
{
    int n = 1 + (int)(rng() % MAXQ);
    int64_t top = 0;

    *capacity = 1 + rng() % 30000;
    for (int i = 0; i < n; i++) {
        q[i] = (struct policy_share_queue){
            .parent = i > 0 && rng() % 3 == 0 ? (int32_t)(rng() % i) : -1,
            .priority = (int32_t)(rng() % 3) * 50,
            .quota = rng() % 4 == 0 ? -1 : (int64_t)(rng() % 8000),
            .limit = rng() % 3 == 0 ? (int64_t)(rng() % 15000) : -1,
            .weight = rng() % 5 == 0 ? 0 : 1 + rng() % 4000,
            .demand = rng() % 4 == 0 ? 0 : (int64_t)(rng() % 15000),
            .usage = rng() % 3 == 0 ? 0 : (int64_t)(unit() * 0.6 * POLICY_USAGE_UNIT),
        };
    }
    for (int i = n - 1; i >= 0; i--)
        if (q[i].parent >= 0) {
            q[q[i].parent].demand += q[i].demand;
            q[q[i].parent].usage += q[i].usage;
        }
    /* What a cluster can show: the top level's usage adds up to at most its whole capacity. */
    for (int i = 0; i < n; i++)
        top += q[i].parent < 0 ? q[i].usage : 0;
    for (int i = 0; top > POLICY_USAGE_UNIT && i < n; i++)
        q[i].usage = (int64_t)((__int128)q[i].usage * POLICY_USAGE_UNIT / top);
    return n;
}

static const int64_t ks[] = {500, 1000, 2000, 10000, 10000000};

START_TEST(random_trees_match_kais_rounds)
{
    struct policy_share_queue q[MAXQ];
    int64_t capacity;

    rng_state = 0x51ED270B27AB1ULL + (uint64_t)_i;
    for (int round = 0; round < 1500; round++) {
        int n = random_tree(q, &capacity);
        int64_t k = ks[rng() % 5];

        policy_fair_share_k(capacity, k, q, (size_t)n);
        check_levels(capacity, k, q, n, round);
    }
}
END_TEST

/* k = 0, or no usage at all, is today's split to the unit. */
START_TEST(k_zero_or_no_usage_is_todays_split)
{
    struct policy_share_queue q[MAXQ], plain[MAXQ];
    int64_t capacity;

    rng_state = 77 + (uint64_t)_i;
    for (int round = 0; round < 1000; round++) {
        int n = random_tree(q, &capacity);

        memcpy(plain, q, sizeof(q));
        policy_fair_share(capacity, plain, (size_t)n);
        policy_fair_share_k(capacity, 0, q, (size_t)n);
        for (int i = 0; i < n; i++)
            ck_assert_int_eq(q[i].fair_share, plain[i].fair_share);
        for (int i = 0; i < n; i++)
            q[i].usage = 0;
        policy_fair_share_k(capacity, 1000, q, (size_t)n);
        for (int i = 0; i < n; i++)
            ck_assert_int_eq(q[i].fair_share, plain[i].fair_share);
    }
}
END_TEST

/* Usage moves only what is over quota: a level whose quotas fit gives each its deserved part
 * whatever the usage, and the level's total is what it was. */
START_TEST(quota_is_untouched)
{
    struct policy_share_queue q[MAXQ], plain[MAXQ];
    int64_t capacity;

    rng_state = 31337 + (uint64_t)_i;
    for (int round = 0; round < 1000; round++) {
        int n = random_tree(q, &capacity);
        int64_t deserved = 0, with = 0, without = 0;

        memcpy(plain, q, sizeof(q));
        policy_fair_share(capacity, plain, (size_t)n);
        policy_fair_share_k(capacity, 2000, q, (size_t)n);
        for (int i = 0; i < n; i++) {
            if (q[i].parent >= 0)
                continue;
            deserved += deserved_of(&q[i]);
            with += q[i].fair_share;
            without += plain[i].fair_share;
        }
        if (deserved > capacity)
            continue;
        for (int i = 0; i < n; i++)
            if (q[i].parent < 0)
                ck_assert_int_ge(q[i].fair_share, deserved_of(&q[i]));
        /* Nothing lost: what today's split gives out, usage gives out too, unless every queue
         * still asking weighs 0 (KAI leaves that; with U' below 1 it cannot happen here). */
        ck_assert_int_eq(with, without);
    }
}
END_TEST

/* More usage never buys more: one queue's usage up, its share not up. */
START_TEST(more_usage_never_gets_more)
{
    struct policy_share_queue q[8];

    rng_state = 4242 + (uint64_t)_i;
    for (int round = 0; round < 2000; round++) {
        int n = 2 + (int)(rng() % 7), who = (int)(rng() % (uint32_t)n);
        int64_t cap = 1 + rng() % 100000, before;

        for (int i = 0; i < n; i++)
            q[i] = (struct policy_share_queue){
                .parent = -1, .quota = rng() % 2 ? 0 : (int64_t)(rng() % 2000), .limit = -1,
                .weight = 1 + rng() % 5, .demand = (int64_t)(rng() % 60000),
                .usage = (int64_t)(unit() * 0.4 * POLICY_USAGE_UNIT)};
        policy_fair_share_k(cap, 1000, q, (size_t)n);
        before = q[who].fair_share;
        q[who].usage += (int64_t)(unit() * 0.5 * POLICY_USAGE_UNIT);
        policy_fair_share_k(cap, 1000, q, (size_t)n);
        ck_assert_int_le(q[who].fair_share, before + n); /* a unit per round of rounding */
    }
}
END_TEST

/*
 * KAI's design (docs/developer/designs/time-based-fairshare): P_i = max(W'_i + k (W'_i - U'_i), 0).
 * Two queues of equal weight, no quota, 12 GPUs over quota, k = 1: U' 0 and 0.5 give 1 and 0.5,
 * so 8 and 4; U' 0 and 1 give 1 and 0, so all 12 to the light one; and KAI's rounds: a light
 * queue that wants only 2 leaves 6 of its 8, offered again at weights 1 : 0.5 of one queue.
 */
START_TEST(kai_design_examples)
{
    struct policy_share_queue q[3] = {
        {.parent = -1, .quota = 0, .limit = -1, .weight = 1000, .demand = 100000},
        {.parent = -1, .quota = 0, .limit = -1, .weight = 1000, .demand = 100000,
         .usage = POLICY_USAGE_UNIT / 2},
    };

    policy_fair_share_k(12000, 1000, q, 2);
    ck_assert_int_eq(q[0].fair_share, 8000);
    ck_assert_int_eq(q[1].fair_share, 4000);
    q[1].usage = POLICY_USAGE_UNIT;
    policy_fair_share_k(12000, 1000, q, 2);
    ck_assert_int_eq(q[0].fair_share, 12000);
    ck_assert_int_eq(q[1].fair_share, 0);
    /* Three queues, U' 0, 0.5, 0; the third wants 1 GPU. Round 1 (w' 1/3): weights 2/3, 1/6,
     * 2/3 of 12: 16/3, 4/3, covered 1 (room 1 < 16/3). Round 2 offers the 13/3 it left to
     * the two still asking (w' 1/2): weights 1 and 0.5: 26/9 and 13/9. */
    q[1].usage = POLICY_USAGE_UNIT / 2;
    q[2] = (struct policy_share_queue){.parent = -1, .quota = 0, .limit = -1, .weight = 1000,
                                       .demand = 1000};
    policy_fair_share_k(12000, 1000, q, 3);
    ck_assert_int_eq(q[2].fair_share, 1000);
    ck_assert_int_le(llabs(q[0].fair_share - (16000 * 9 + 26000 * 3) / 27), 1);
    ck_assert_int_le(llabs(q[1].fair_share - (4000 * 9 + 13000 * 3) / 27), 1);
    ck_assert_int_eq(q[0].fair_share + q[1].fair_share + q[2].fair_share, 12000);
}
END_TEST

/* ---- the engine ------------------------------------------------------------------------------ */

struct world {
    struct policy_cluster *c;
    struct policy_fairness f;
    int nqueues;
    /* The history the reference integrates: what each queue held (rolled up) and what the
     * cluster offered, per resource GPU, between two changes. */
    struct span held[6][400], offered[400];
    size_t nheld[6], noffered;
    int64_t gpus[6];  /* each queue's own bound GPUs (milli) */
    int64_t capacity; /* milli-GPU */
    int64_t last;
};

static const char *const qnames[] = {"dept", "team-a", "team-b", "solo", "team-c", "spare"};
static const int qparent[] = {-1, 0, 0, -1, 0, -1};

static int64_t rolled(const struct world *w, int q)
{
    int64_t sum = w->gpus[q];

    for (int i = 0; i < w->nqueues; i++)
        if (qparent[i] == q)
            sum += rolled(w, i);
    return sum;
}

/* Sample, then record the span that ended: exactly what the engine integrated. */
static void tick(struct world *w, int64_t now)
{
    ck_assert_int_eq(policy_usage_sample(w->c, now), POLICY_OK);
    if (now > w->last) {
        w->offered[w->noffered++] = (struct span){w->last, now, (double)w->capacity};
        for (int q = 0; q < w->nqueues; q++)
            w->held[q][w->nheld[q]++] = (struct span){w->last, now, (double)rolled(w, q)};
    }
    w->last = now;
}

/* The queues (a department of three teams, two queues on their own) and one 64-GPU node. */
static void world_new(struct world *w, const struct policy_fairness *f)
{
    struct policy_options o = {.strategy = POLICY_BINPACK, .fairness = *f};

    memset(w, 0, sizeof(*w));
    w->f = *f;
    w->c = policy_cluster_new(&o);
    w->nqueues = 6;
    for (int i = 0; i < w->nqueues; i++) {
        struct policy_queue_spec s = {.name = qnames[i],
                                      .parent = qparent[i] >= 0 ? qnames[qparent[i]] : NULL};

        for (int r = 0; r < POLICY_RES_COUNT; r++) {
            s.quota.v[r] = 0;
            s.limit.v[r] = -1;
            s.over_quota_weight.v[r] = 1000;
        }
        ck_assert_int_eq(policy_queue_upsert(w->c, &s), POLICY_OK);
    }
    ck_assert_int_eq(policy_node_upsert(w->c, &(struct policy_node_spec){
                                                  .name = "n0", .cpu_milli = 1000000,
                                                  .memory_bytes = INT64_C(1) << 40,
                                                  .pods = 1000, .gpus = 64}),
                     POLICY_OK);
    w->capacity = 64000;
}

static void world_init(struct world *w, const struct policy_fairness *f, int64_t start)
{
    world_new(w, f);
    w->last = start;
    tick(w, start);
    /* The engine takes the offer as there the whole window before its first sample. */
    w->offered[w->noffered++] = (struct span){start - f->window_ms, start, (double)w->capacity};
}

static void bind_pod(struct world *w, int q, int id, int64_t gpus, int64_t now)
{
    char name[32], uid[32];
    struct policy_pod_spec p = {.namespace_ = "lab", .name = name, .uid = uid, .cpu_milli = 100,
                                .memory_bytes = 1 << 20, .gpus = gpus, .queue = qnames[q],
                                .managed = true, .node = "n0"};

    snprintf(name, sizeof(name), "p%d", id);
    snprintf(uid, sizeof(uid), "u%d", id);
    ck_assert_int_eq(policy_pod_upsert(w->c, &p, now), POLICY_OK);
    w->gpus[q] += gpus * 1000;
}

struct seen {
    int64_t recent[6];
    bool has[6];
    struct policy_resources fair[6];
};

static void see_queue(const struct policy_queue_view *v, void *ctx)
{
    struct seen *s = ctx;

    for (int q = 0; q < 6; q++)
        if (strcmp(v->name, qnames[q]) == 0) {
            s->recent[q] = v->recent_usage.v[POLICY_RES_GPU];
            s->has[q] = v->has_recent_usage;
            s->fair[q] = v->fair_share;
        }
}

START_TEST(engine_usage_matches_the_brute_force)
{
    rng_state = 0xFA1E + (uint64_t)_i;
    for (int round = 0; round < 12; round++) {
        struct policy_fairness f = {.refresh_ms = 1};
        struct world w;
        struct seen s = {{0}};
        int64_t now = (int64_t)(rng() % 100000), gpus_out[64] = {0};
        int out_q[64], live = 0;

        f.window_ms = log_between(HOUR, 10 * DAY);
        f.half_life_ms = log_between(HOUR / 4, 2 * f.window_ms);
        world_init(&w, &f, now);
        for (int step = 0; step < 300; step++) {
            now += log_between(1000, f.window_ms / 8 + 1001);
            tick(&w, now);
            /* A pod binds (the watch sees it bound) or one leaves. */
            if (live < 64 && (live == 0 || rng() % 2)) {
                int q = 1 + (int)(rng() % 5);
                int64_t g = 1 + rng() % 4;

                if (rolled(&w, 0) + rolled(&w, 3) + rolled(&w, 5) + g * 1000 > w.capacity)
                    continue;
                bind_pod(&w, q, live, g, now);
                out_q[live] = q;
                gpus_out[live] = g;
                live++;
            } else {
                char name[32];

                live--;
                snprintf(name, sizeof(name), "p%d", live);
                ck_assert_int_eq(policy_pod_forget(w.c, "lab", name), POLICY_OK);
                w.gpus[out_q[live]] -= gpus_out[live] * 1000;
            }
        }
        now += 1 + (int64_t)(unit() * (double)(f.window_ms / 4));
        tick(&w, now);
        policy_each_queue(w.c, see_queue, &s);
        for (int q = 0; q < w.nqueues; q++) {
            long double total = reference_integral(w.offered, w.noffered, now, &f);
            long double used = reference_integral(w.held[q], w.nheld[q], now, &f);
            struct policy_usage probe;
            double slack;

            policy_usage_init(&probe, &f);
            slack = (edge_bound(&probe, &f, 64000) / (double)total + 1e-9) * POLICY_USAGE_UNIT;
            ck_assert(s.has[q]);
            ck_assert_msg(fabsl((long double)s.recent[q] - used / total * POLICY_USAGE_UNIT) <=
                              slack + 1,
                          "round %d queue %s: U' %lld ppb, reference %.1Lf (halfLife %lld, "
                          "window %lld)",
                          round, qnames[q], (long long)s.recent[q],
                          used / total * POLICY_USAGE_UNIT, (long long)f.half_life_ms,
                          (long long)f.window_ms);
        }
        policy_cluster_free(w.c);
    }
}
END_TEST

/*
 * A restart: the status holds each queue's U' and when it was taken; the new engine, seeded
 * from it, sampling what is bound when it starts, must see what the engine that kept running
 * sees, when nothing changed meanwhile (the capacity over the window was what it is now, and
 * each queue held through the restart what it holds after).
 */
START_TEST(a_restart_seeded_from_the_status_sees_what_the_running_engine_sees)
{
    struct policy_fairness f = {.half_life_ms = 4 * HOUR, .window_ms = 7 * DAY, .k_milli = 1000,
                                .refresh_ms = 1};
    struct world a, b;
    struct seen sa = {{0}}, sb = {{0}}, before = {{0}};
    int64_t t = 1000, taken;
    double share[POLICY_RES_COUNT];

    world_init(&a, &f, t);
    bind_pod(&a, 1, 0, 40, t);
    tick(&a, t += 10 * HOUR);
    bind_pod(&a, 2, 1, 8, t);
    tick(&a, t += 3 * HOUR);
    policy_each_queue(a.c, see_queue, &before);
    taken = t;
    /* muster stops here; it starts again 90 s later with the same pods bound, and reads
     * each Queue's status (4 decimals) before its first sample. */
    world_new(&b, &f);
    for (int i = 0; i < 6; i++) {
        for (int r = 0; r < POLICY_RES_COUNT; r++)
            share[r] = r == POLICY_RES_GPU
                           ? round((double)before.recent[i] / POLICY_USAGE_UNIT * 1e4) / 1e4
                           : 0;
        ck_assert_int_eq(policy_queue_usage_seed(b.c, qnames[i], share, taken), POLICY_OK);
    }
    bind_pod(&b, 1, 0, 40, t);
    bind_pod(&b, 2, 1, 8, t);
    ck_assert_int_eq(policy_usage_sample(b.c, t + 90000), POLICY_OK);
    tick(&a, t + 90000);
    ck_assert_int_eq(policy_usage_sample(b.c, t + 3 * HOUR), POLICY_OK);
    tick(&a, t + 3 * HOUR);
    policy_each_queue(a.c, see_queue, &sa);
    policy_each_queue(b.c, see_queue, &sb);
    for (int q = 0; q < 6; q++) {
        /* The status keeps 4 decimals; nothing else is lost here. */
        ck_assert_msg(llabs(sa.recent[q] - sb.recent[q]) <= POLICY_USAGE_UNIT / 10000,
                      "%s: running %lld, restarted %lld", qnames[q], (long long)sa.recent[q],
                      (long long)sb.recent[q]);
        for (int r = 0; r < POLICY_RES_COUNT; r++)
            ck_assert_int_le(llabs(sa.fair[q].v[r] - sb.fair[q].v[r]), 10);
    }
    ck_assert_int_gt(sa.recent[1], sa.recent[2]); /* the one that ran 40 GPUs longer */
    policy_cluster_free(a.c);
    policy_cluster_free(b.c);
}
END_TEST

/* A seed for a queue already sampled, or from before the window, changes nothing. */
START_TEST(late_or_stale_seeds_change_nothing)
{
    struct policy_fairness f = {.half_life_ms = HOUR, .window_ms = DAY, .refresh_ms = 1};
    struct world w;
    struct seen s = {{0}};
    double share[POLICY_RES_COUNT] = {0, 0, 0.9};

    world_init(&w, &f, 5 * DAY);
    ck_assert_int_eq(policy_queue_usage_seed(w.c, "team-a", share, 5 * DAY), POLICY_OK);
    ck_assert_int_eq(policy_queue_usage_seed(w.c, "nobody", share, 5 * DAY), POLICY_ENOENT);
    tick(&w, 5 * DAY + HOUR);
    policy_each_queue(w.c, see_queue, &s);
    ck_assert_int_eq(s.recent[1], 0);
    policy_cluster_free(w.c);
}
END_TEST

struct published {
    int64_t at;
};

static void see_published(const struct policy_queue_view *v, void *ctx)
{
    if (strcmp(v->name, "team-a") == 0)
        ((struct published *)ctx)->at = v->has_recent_usage ? v->recent_usage_at : -1;
}

/* U' is taken anew every refresh_ms (KAI's fetchInterval), from the first sample on, time 0
 * included: samples between integrate, but publish nothing. */
START_TEST(usage_is_published_every_refresh)
{
    struct policy_fairness f = {.half_life_ms = HOUR, .window_ms = DAY, .k_milli = 1000};
    struct world w;
    struct published p = {-7};

    world_init(&w, &f, 0);
    policy_each_queue(w.c, see_published, &p);
    ck_assert_int_eq(p.at, 0);
    tick(&w, 8000);
    /* A queue that comes between two publications has its U' (0) from its first sample. */
    {
        struct policy_queue_spec late = {.name = "team-a"};
        struct published q = {-7};

        policy_queue_forget(w.c, "team-a");
        policy_each_queue(w.c, see_published, &q);
        ck_assert_int_eq(q.at, -7); /* gone */
        policy_queue_upsert(w.c, &late);
        policy_each_queue(w.c, see_published, &q);
        ck_assert_int_eq(q.at, -1); /* there, not sampled yet */
        tick(&w, 9000);
        policy_each_queue(w.c, see_published, &q);
        ck_assert_int_eq(q.at, 0); /* its U' is there, the publication's time unchanged */
    }
    tick(&w, 59999);
    policy_each_queue(w.c, see_published, &p);
    ck_assert_int_eq(p.at, 0);
    tick(&w, 60000);
    policy_each_queue(w.c, see_published, &p);
    ck_assert_int_eq(p.at, 60000);
    policy_cluster_free(w.c);
}
END_TEST

/* Off: nothing published, fair shares as today whatever was bound. */
START_TEST(off_publishes_nothing)
{
    struct policy_fairness f = {.half_life_ms = 0, .window_ms = DAY, .k_milli = 1000};
    struct world w;
    struct seen s = {{0}};

    world_init(&w, &f, 0);
    bind_pod(&w, 1, 0, 32, 0);
    tick(&w, 10 * HOUR);
    policy_each_queue(w.c, see_queue, &s);
    for (int q = 0; q < 6; q++)
        ck_assert(!s.has[q]);
    policy_cluster_free(w.c);
}
END_TEST

static Suite *usage_suite(void)
{
    Suite *s = suite_create("usage");
    TCase *tc = tcase_create("integral");

    tcase_add_loop_test(tc, integral_matches_the_brute_force_in_random_histories, 0, 4);
    tcase_add_test(tc, integral_is_exact_when_the_window_is_long);
    tcase_add_test(tc, a_mass_decays_from_its_instant_and_leaves_with_the_window);
    tcase_add_test(tc, an_even_holding_is_counted_over_the_window_exactly);
    tcase_add_test(tc, off_keeps_nothing);
    suite_add_tcase(s, tc);
    tc = tcase_create("division");
    tcase_add_loop_test(tc, random_trees_match_kais_rounds, 0, 4);
    tcase_add_loop_test(tc, k_zero_or_no_usage_is_todays_split, 0, 2);
    tcase_add_loop_test(tc, quota_is_untouched, 0, 2);
    tcase_add_loop_test(tc, more_usage_never_gets_more, 0, 2);
    tcase_add_test(tc, kai_design_examples);
    suite_add_tcase(s, tc);
    tc = tcase_create("engine");
    tcase_add_loop_test(tc, engine_usage_matches_the_brute_force, 0, 3);
    tcase_add_test(tc, a_restart_seeded_from_the_status_sees_what_the_running_engine_sees);
    tcase_add_test(tc, late_or_stale_seeds_change_nothing);
    tcase_add_test(tc, usage_is_published_every_refresh);
    tcase_add_test(tc, off_publishes_nothing);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(usage_suite());
    int failed;

    srunner_run_all(sr, CK_ENV);
    failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
