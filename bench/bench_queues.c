/*
 * bench_queues.c - the queue model at scale, printed, never asserted (issue 9):
 *
 *   fairshare  every queue's fair share and demand recomputed: 500 queues in 5 levels,
 *              50,000 running pods on 5,000 nodes of 8 GPUs
 *   reclaim    one reclaim decision on that cluster, full: a gang of 8 one-GPU pods in a
 *              queue below its fair share, victims chosen, dry run, room held
 *
 *   bench_queues [--nodes N] [--pods N] [--reps N]
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "policy.h"

#define GiB (1LL << 30)
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

static void noop_queue(const struct policy_queue_view *v, void *ctx)
{
    (void)v;
    (void)ctx;
}

int main(int argc, char **argv)
{
    int nodes = 5000, pods = 50000, reps = 15, members = 10;
    static char leaves[300][32];
    struct policy_options o = {.strategy = POLICY_BINPACK};
    struct policy_cluster *c;
    int gpus_placed = 0, nleaves, gangs;
    double t0, fair[64], decide[64];
    char **names;

    for (int i = 1; i + 1 < argc; i += 2) {
        if (strcmp(argv[i], "--nodes") == 0)
            nodes = atoi(argv[i + 1]);
        else if (strcmp(argv[i], "--pods") == 0)
            pods = atoi(argv[i + 1]);
        else if (strcmp(argv[i], "--reps") == 0)
            reps = atoi(argv[i + 1]) > 64 ? 64 : atoi(argv[i + 1]);
    }
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
    printf("cluster: %d nodes, %d queues in %d levels, %d running pods in %d gangs (%.0f ms)\n",
           nodes, 500, LEVELS, gangs * members, gangs, now_ms() - t0);
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
    printf("fair share, 500 queues, %d pods: median %.3f ms over %d runs\n", gangs * members,
           median(fair, reps), reps);
    printf("reclaim decision (filter of the reclaimer's first member): median %.3f ms over %d "
           "runs (target < 20 ms)\n",
           median(decide, reps), reps);
    for (int i = 0; i < nodes; i++)
        free(names[i]);
    free(names);
    policy_cluster_free(c);
    return 0;
}
