/*
 * bench_queues.c - the queue model at scale, printed, never asserted (issue 9):
 *
 *   fairshare  every queue's fair share and demand recomputed: 500 queues in 5 levels,
 *              50,000 running pods on 5,000 nodes of 8 GPUs
 *   reclaim    one reclaim decision on that cluster, full: a gang of 8 one-GPU pods in a
 *              queue below its fair share, victims chosen, dry run, room held
 *
 *   bench_queues [--nodes N] [--pods N] [--reps N]
 *
 * Each is measured three times: fair over time off (today's), on (muster's defaults: every
 * queue has used something lately, so the division weighs usage at every level, and the share
 * without usage is computed too), and on with the entry penalty (every gang was just admitted:
 * each bound pod's penalty is counted at every refresh). Also the cost of taking usage anew
 * (policy_usage_sample at a refresh: every queue's integral over the window), once a minute.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "policy.h"

#define GiB (1LL << 30)
#define HOUR_MS (INT64_C(3600) * 1000)
#define LEVELS 5

static double now_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;

    return x < y ? -1 : x > y;
}

static double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof(*v), cmp_double);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

static uint64_t rng_state = 7;

static uint32_t rng(void)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return (uint32_t)(rng_state >> 11);
}

/* 4 + 16 + 64 + 128 + 288 = 500 queues; the last level holds the gangs. */
static const int per_level[LEVELS] = {4, 16, 64, 128, 288};

static int add_queues(struct policy_cluster *c, char leaves[][32], int max_leaves)
{
    char prev[300][32], cur[300][32];
    int nprev = 0, nleaves = 0;

    for (int level = 0; level < LEVELS; level++) {
        int n = per_level[level];

        for (int i = 0; i < n; i++) {
            struct policy_queue_spec q = {.name = cur[i],
                                          .parent = level ? prev[i % nprev] : NULL,
                                          .priority = (int32_t)(rng() % 3)};

            snprintf(cur[i], sizeof(cur[i]), "q%d-%d", level, i);
            for (int r = 0; r < POLICY_RES_COUNT; r++) {
                q.quota.v[r] = r == POLICY_RES_GPU ? (int64_t)(rng() % 64) * 1000 : -1;
                q.limit.v[r] = -1;
                q.over_quota_weight.v[r] = 1000 * (1 + (int64_t)(rng() % 4));
            }
            policy_queue_upsert(c, &q);
        }
        memcpy(prev, cur, sizeof(cur[0]) * (size_t)n);
        nprev = n;
    }
    for (int i = 0; i < nprev && nleaves < max_leaves; i++)
        snprintf(leaves[nleaves++], 32, "%s", prev[i]);
    return nleaves;
}

static void add_node(struct policy_cluster *c, int i)
{
    char name[32];
    struct policy_node_spec n = {.name = name, .cpu_milli = 96000, .memory_bytes = 1024 * GiB,
                                 .pods = 110, .gpus = 8};

    snprintf(name, sizeof(name), "node-%05d", i);
    policy_node_upsert(c, &n);
}

/* A running gang of `members` pods, each on a node with room, as the watch reports them. */
static void add_running(struct policy_cluster *c, int g, int members, const char *queue,
                        int nodes, int *node_gpus)
{
    char gang[32], name[48], uid[48], node[32];
    struct policy_gang_spec gs = {.key = gang, .min_members = members, .queue = queue};

    snprintf(gang, sizeof(gang), "bench/g%d", g);
    policy_gang_upsert(c, &gs);
    for (int m = 0; m < members; m++) {
        int gpus = m % 10 < 2 ? 0 : 1; /* a CPU head and worker, GPU workers: the GPUs all taken */
        int n = (int)(rng() % (uint32_t)nodes);
        struct policy_pod_spec p;

        /* GPU workers fill the nodes in turn; the rest land anywhere. */
        if (gpus) {
            n = *node_gpus / 8 % nodes;
            (*node_gpus)++;
        }
        snprintf(name, sizeof(name), "g%d-%d", g, m);
        snprintf(uid, sizeof(uid), "u-g%d-%d", g, m);
        snprintf(node, sizeof(node), "node-%05d", n);
        p = (struct policy_pod_spec){.namespace_ = "bench", .name = name, .uid = uid,
                                     .cpu_milli = 1000, .memory_bytes = 4 * GiB, .gpus = gpus,
                                     .gang = gang, .gang_head = m == 0, .queue = queue,
                                     .managed = true, .node = node};
        policy_pod_upsert(c, &p, 0);
    }
}

/*
 * A past for fair over time: every leaf ran a share of the cluster over the last day, so every
 * queue's U' is above 0 and the division weighs usage at every level; the running gangs are
 * sampled for an hour. With penalties, every running gang was admitted by muster a minute ago
 * (planned, then bound): at each refresh each of their pods counts its entry penalty.
 * sample[] gets the cost of taking usage anew at a refresh.
 */
/*
 * Gang g again as muster admits one: its pods leave and come back pending, the first one's
 * filter plans the gang, every member binds where it was planned, and the watch sees it bound:
 * muster admitted it at `now`, so its entry penalty counts.
 */
static void readmit(struct policy_cluster *c, int g, int members, char **names, int nodes,
                    int64_t now)
{
    char gang[32], name[48];
    struct policy_pod_view v;
    struct policy_filter_result fr;

    snprintf(gang, sizeof(gang), "bench/g%d", g);
    for (int m = 0; m < members; m++) {
        struct policy_pod_view was;
        struct policy_pod_spec p;
        char uid[48];

        snprintf(name, sizeof(name), "g%d-%d", g, m);
        snprintf(uid, sizeof(uid), "u2-g%d-%d", g, m);
        if (!policy_pod_view_get(c, "bench", name, &was))
            continue;
        p = (struct policy_pod_spec){.namespace_ = "bench", .name = name, .uid = uid,
                                     .cpu_milli = was.cpu_milli, .memory_bytes = was.memory_bytes,
                                     .gpus = was.gpus, .gang = gang, .gang_head = m == 0,
                                     .queue = was.queue, .managed = true};
        policy_pod_forget(c, "bench", name);
        policy_pod_upsert(c, &p, now);
    }
    snprintf(name, sizeof(name), "g%d-0", g);
    policy_filter(c, "bench", name, (const char *const *)names, (size_t)nodes, now, &fr);
    policy_filter_result_cleanup(&fr);
    for (int m = 0; m < members; m++) {
        struct policy_bind_result b = {0};

        snprintf(name, sizeof(name), "g%d-%d", g, m);
        if (!policy_pod_view_get(c, "bench", name, &v) || !v.node)
            continue;
        policy_bind(c, "bench", name, v.node, now, &b);
        if (b.outcome == POLICY_BIND_COMMIT)
            for (size_t i = 0; i < b.n; i++) {
                struct policy_pod_view w;

                policy_bind_done(c, b.members[i].namespace_, b.members[i].name, true, NULL);
                if (policy_pod_view_get(c, "bench", b.members[i].name, &w)) {
                    struct policy_pod_spec p = {
                        .namespace_ = "bench", .name = b.members[i].name, .uid = b.members[i].uid,
                        .cpu_milli = w.cpu_milli, .memory_bytes = w.memory_bytes, .gpus = w.gpus,
                        .gang = gang, .queue = w.queue, .managed = true, .node = b.members[i].node};

                    policy_pod_upsert(c, &p, now);
                }
            }
        policy_bind_result_cleanup(&b);
    }
}

static void count_bound(const struct policy_pod_view *v, void *ctx)
{
    *(size_t *)ctx += v->phase == POLICY_POD_BOUND;
}

static void used_lately(struct policy_cluster *c, char leaves[][32], int nleaves, int gangs,
                        int members, bool admitted, double *sample, int reps, char **names,
                        int nodes)
{
    double share[POLICY_RES_COUNT];
    int64_t t = 24 * HOUR_MS;

    for (int i = 0; i < nleaves; i++) {
        for (int r = 0; r < POLICY_RES_COUNT; r++)
            share[r] = (double)(1 + rng() % 100) / 100.0 / nleaves;
        policy_queue_usage_seed(c, leaves[i], share, t - HOUR_MS);
    }
    policy_usage_sample(c, t);
    for (int r = 0; r < reps; r++) {
        double t0 = now_ms();

        t += 60 * 1000;
        policy_usage_sample(c, t);
        sample[r] = now_ms() - t0;
    }
    if (admitted) {
        size_t bound = 0;

        for (int g = 0; g < gangs; g++)
            readmit(c, g, members, names, nodes, t + 1);
        policy_each_pod(c, count_bound, &bound);
        printf("admitted again by muster (filter, bind): %d gangs, %zu pods bound\n", gangs,
               bound);
    }
}

static void noop_queue(const struct policy_queue_view *v, void *ctx)
{
    (void)v;
    (void)ctx;
}


struct mode {
    const char *name;
    struct policy_fairness fairness;
};

static const struct mode modes[] = {
    {"fair over time off", {.half_life_ms = 0}},
    {"fair over time on", {.half_life_ms = 4 * HOUR_MS, .window_ms = 168 * HOUR_MS,
                           .k_milli = 1000}},
    {"on, entry penalty 5m", {.half_life_ms = 4 * HOUR_MS, .window_ms = 168 * HOUR_MS,
                              .k_milli = 1000, .entry_penalty_ms = 5 * 60 * 1000}},
};

static void run(const struct mode *mode, int nodes, int pods, int reps, int members,
                double *fair_out, double *fair_waiting_out);

int main(int argc, char **argv)
{
    int nodes = 5000, pods = 50000, reps = 15, members = 10;
    double fair[3], waiting[3];

    for (int i = 1; i + 1 < argc; i += 2) {
        if (strcmp(argv[i], "--nodes") == 0)
            nodes = atoi(argv[i + 1]);
        else if (strcmp(argv[i], "--pods") == 0)
            pods = atoi(argv[i + 1]);
        else if (strcmp(argv[i], "--reps") == 0)
            reps = atoi(argv[i + 1]) > 64 ? 64 : atoi(argv[i + 1]);
    }
    for (size_t i = 0; i < sizeof(modes) / sizeof(modes[0]); i++)
        run(&modes[i], nodes, pods, reps, members, &fair[i], &waiting[i]);
    printf("\nfair-share refresh, fair over time on / off: %.2f (on), %.2f (with entry "
           "penalties); with a gang waiting in every leaf %.2f, %.2f\n",
           fair[1] / fair[0], fair[2] / fair[0], waiting[1] / waiting[0], waiting[2] / waiting[0]);
    return 0;
}

/* Queues whose fair share usage moved (it differs from the share without usage). */
static void count_moved(const struct policy_queue_view *v, void *ctx)
{
    *(int *)ctx += memcmp(&v->fair_share, &v->fair_share_without_usage, sizeof(v->fair_share)) != 0;
}

/*
 * The running gangs fill the cluster exactly: nothing is divided over quota. A gang of eight
 * 8-GPU pods waiting in every leaf (18,432 GPUs more than the 40,000 there are) makes the levels
 * divide what is over quota, by usage when fair over time is on: every fair share recomputed,
 * as above, reps times; then they go.
 */
static double measure_waiting(struct policy_cluster *c, char leaves[][32], int nleaves, int reps,
                              int *moved)
{
    double fair[64];

    for (int l = 0; l < nleaves; l++) {
        char gang[32], name[48], uid[48];
        struct policy_gang_spec gs = {.key = gang, .min_members = 8, .queue = leaves[l]};

        snprintf(gang, sizeof(gang), "bench/waits-%d", l);
        policy_gang_upsert(c, &gs);
        for (int m = 0; m < 8; m++) {
            snprintf(name, sizeof(name), "w%d-%d", l, m);
            snprintf(uid, sizeof(uid), "u-w%d-%d", l, m);
            policy_pod_upsert(c,
                              &(struct policy_pod_spec){.namespace_ = "bench", .name = name,
                                                        .uid = uid, .cpu_milli = 1000,
                                                        .memory_bytes = 4 * GiB, .gpus = 8,
                                                        .gang = gang, .queue = leaves[l],
                                                        .managed = true},
                              0);
        }
    }
    for (int r = 0; r < reps; r++) {
        double t0;

        policy_node_upsert(c, &(struct policy_node_spec){.name = "extra", .cpu_milli = 1000 + r,
                                                         .memory_bytes = GiB, .pods = 1});
        t0 = now_ms();
        policy_each_queue(c, noop_queue, NULL);
        fair[r] = now_ms() - t0;
        policy_node_forget(c, "extra");
    }
    *moved = 0;
    policy_each_queue(c, count_moved, moved);
    for (int l = 0; l < nleaves; l++) {
        char gang[32], name[48];

        for (int m = 0; m < 8; m++) {
            snprintf(name, sizeof(name), "w%d-%d", l, m);
            policy_pod_forget(c, "bench", name);
        }
        snprintf(gang, sizeof(gang), "bench/waits-%d", l);
        policy_gang_forget(c, gang, POLICY_GANG_WORKLOAD);
    }
    return median(fair, reps);
}

static void run(const struct mode *mode, int nodes, int pods, int reps, int members,
                double *fair_out, double *fair_waiting_out)
{
    int moved;
    static char leaves[300][32];
    struct policy_options o = {.strategy = POLICY_BINPACK, .fairness = mode->fairness};
    struct policy_cluster *c;
    int gpus_placed = 0, nleaves, gangs;
    double t0, fair[64], decide[64], sample[64];
    char **names;

    rng_state = 7;
    c = policy_cluster_new(&o);
    names = calloc((size_t)nodes, sizeof(*names));
    for (int i = 0; i < nodes; i++) {
        char name[32];

        add_node(c, i);
        snprintf(name, sizeof(name), "node-%05d", i);
        names[i] = strdup(name);
    }
    nleaves = add_queues(c, leaves, 300);
    gangs = pods / members;
    t0 = now_ms();
    /* The first leaves borrow everything: they are far over their fair share. */
    for (int g = 0; g < gangs; g++)
        add_running(c, g, members, leaves[g % 8], nodes, &gpus_placed);
    printf("\n%s\ncluster: %d nodes, %d queues in %d levels, %d running pods in %d gangs "
           "(%.0f ms)\n",
           mode->name, nodes, 500, LEVELS, gangs * members, gangs, now_ms() - t0);
    if (mode->fairness.half_life_ms > 0)
        used_lately(c, leaves, nleaves, gangs, members, mode->fairness.entry_penalty_ms > 0, sample,
                    reps, names, nodes);
    *fair_waiting_out = measure_waiting(c, leaves, nleaves, reps, &moved);
    printf("fair share, a gang of 8 x 8 GPUs waiting in each of the %d leaves: median %.3f "
           "ms over %d runs; usage moved the fair share of %d queues\n",
           nleaves, *fair_waiting_out, reps, moved);
    /* The reclaimer: a queue that runs nothing but is owed a share. */
    for (int r = 0; r < reps; r++) {
        char gang[32], name[48], uid[48];
        struct policy_gang_spec gs = {.key = gang, .min_members = 8, .queue = leaves[nleaves - 1]};
        struct policy_filter_result fr;
        struct policy_eviction *ev;
        size_t nev;

        /* A state change, then every fair share again. */
        policy_node_upsert(c, &(struct policy_node_spec){.name = "extra", .cpu_milli = 1000 + r,
                                                         .memory_bytes = GiB, .pods = 1});
        t0 = now_ms();
        policy_each_queue(c, noop_queue, NULL);
        fair[r] = now_ms() - t0;
        policy_node_forget(c, "extra");

        snprintf(gang, sizeof(gang), "bench/reclaimer-%d", r);
        policy_gang_upsert(c, &gs);
        for (int m = 0; m < 8; m++) {
            struct policy_pod_spec p;

            snprintf(name, sizeof(name), "rc%d-%d", r, m);
            snprintf(uid, sizeof(uid), "u-rc%d-%d", r, m);
            p = (struct policy_pod_spec){.namespace_ = "bench", .name = name, .uid = uid,
                                         .cpu_milli = 1000, .memory_bytes = 4 * GiB, .gpus = 1,
                                         .gang = gang, .queue = leaves[nleaves - 1],
                                         .managed = true};
            policy_pod_upsert(c, &p, 0);
        }
        snprintf(name, sizeof(name), "rc%d-0", r);
        t0 = now_ms();
        policy_filter(c, "bench", name, (const char *const *)names, (size_t)nodes, 1000 + r, &fr);
        decide[r] = now_ms() - t0;
        policy_filter_result_cleanup(&fr);
        policy_evictions_take(c, &ev, &nev);
        if (r == 0)
            printf("reclaim decided %zu evictions for %s%s\n", nev, gang,
                   nev ? "" : " (none: the bench's cluster did not need any)");
        /* Refuse them all: the victims stay, the plan is abandoned; the next rep starts alike. */
        for (size_t i = 0; i < nev; i++)
            policy_eviction_done(c, ev[i].namespace_, ev[i].name, false, "bench", -1000000);
        policy_evictions_free(ev, nev);
        for (int m = 0; m < 8; m++) {
            snprintf(name, sizeof(name), "rc%d-%d", r, m);
            policy_pod_forget(c, "bench", name);
        }
        policy_gang_forget(c, gang, POLICY_GANG_WORKLOAD);
    }
    *fair_out = median(fair, reps);
    printf("fair share, 500 queues, %d pods: median %.3f ms over %d runs\n", gangs * members,
           *fair_out, reps);
    printf("reclaim decision (filter of the reclaimer's first member): median %.3f ms over %d "
           "runs (target < 20 ms)\n",
           median(decide, reps), reps);
    if (mode->fairness.half_life_ms > 0)
        printf("usage taken anew (policy_usage_sample at a refresh, once a minute): median %.3f "
               "ms over %d runs\n",
               median(sample, reps), reps);
    for (int i = 0; i < nodes; i++)
        free(names[i]);
    free(names);
    policy_cluster_free(c);
}
