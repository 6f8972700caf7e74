/*
 * bench_policy.c - the engine's speed and packing, printed, never asserted.
 *
 *   plan    a gang of 1, 64 and 512 members on 100..10,000 nodes of 8 GPUs
 *   filter  one pod over 5,000 nodes
 *   packing 10,000 pods of mixed shares and whole GPUs: devices used / lower bound
 *   backlog single pods filtered live or from a held backlog (bench_policy backlog)
 *   unasked the evictor's look at waiting gangs nobody filtered (bench_policy unasked)
 *
 * Each for binpack; plan, filter and packing again for fragmentation (and packing for spread).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "policy.h"

#define GiB (1LL << 30)

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

static struct policy_cluster *cluster(int nodes, char ***names, enum policy_strategy s)
{
    struct policy_options o = {.strategy = s};
    struct policy_cluster *c = policy_cluster_new(&o);
    static const struct policy_label labels[] = {{"nvidia.com/gpu.memory", "81920"},
                                                 {"node.kubernetes.io/instance-type", "gpu-8x"}};

    *names = calloc((size_t)nodes, sizeof(**names));
    for (int i = 0; i < nodes; i++) {
        char name[32];
        struct policy_node_spec n = {.name = name, .labels = labels, .nlabels = 2,
                                     .cpu_milli = 96000, .memory_bytes = 1024 * GiB, .pods = 110,
                                     .gpus = 8, .gpu_memory_mib = 81920};

        snprintf(name, sizeof(name), "node-%05d", i);
        (*names)[i] = strdup(name);
        policy_node_upsert(c, &n);
    }
    return c;
}

static void free_names(char **names, int n)
{
    for (int i = 0; i < n; i++)
        free(names[i]);
    free(names);
}

static void add_member(struct policy_cluster *c, const char *gang, int rep, int i, int64_t gpus,
                       int32_t share)
{
    char name[64], uid[64];
    struct policy_pod_spec p = {.namespace_ = "bench", .name = name, .uid = uid,
                                .cpu_milli = 1000, .memory_bytes = 4 * GiB, .gpus = gpus,
                                .gpu_share_milli = share, .gang = gang, .gang_head = i == 0,
                                .managed = true};

    snprintf(name, sizeof(name), "r%d-m%d", rep, i);
    snprintf(uid, sizeof(uid), "u-r%d-m%d", rep, i);
    policy_pod_upsert(c, &p, 0);
}

static const char *strategy_name(enum policy_strategy s)
{
    return s == POLICY_BINPACK ? "binpack" : s == POLICY_SPREAD ? "spread " : "frag   ";
}

static void bench_plan(enum policy_strategy s, int nodes, int members, int reps)
{
    char **names;
    struct policy_cluster *c = cluster(nodes, &names, s);
    double *t = calloc((size_t)reps, sizeof(*t));
    int placed = 0;

    for (int r = 0; r < reps; r++) {
        char gang[32], head[32];
        struct policy_gang_spec g = {.key = gang, .min_members = members};
        struct policy_filter_result fr;
        double t0;

        snprintf(gang, sizeof(gang), "bench/g%d", r);
        snprintf(head, sizeof(head), "r%d-m0", r);
        policy_gang_upsert(c, &g);
        for (int i = 0; i < members; i++)
            add_member(c, gang, r, i, 1, 0);
        t0 = now_ms();
        policy_filter(c, "bench", head, (const char *const *)names, (size_t)nodes, 0, &fr);
        t[r] = now_ms() - t0;
        placed += fr.reason == NULL;
        policy_filter_result_cleanup(&fr);
        for (int i = 0; i < members; i++) {
            char name[32];

            snprintf(name, sizeof(name), "r%d-m%d", r, i);
            policy_pod_forget(c, "bench", name);
        }
        policy_gang_forget(c, gang, POLICY_GANG_WORKLOAD);
    }
    printf("plan    %s gang of %3d on %5d nodes: median %8.3f ms  (%d reps, %d planned)\n",
           strategy_name(s), members, nodes, median(t, reps), reps, placed);
    free(t);
    free_names(names, nodes);
    policy_cluster_free(c);
}

static void bench_filter(enum policy_strategy s, int nodes, int reps)
{
    char **names;
    struct policy_cluster *c = cluster(nodes, &names, s);
    double *t = calloc((size_t)reps, sizeof(*t));

    for (int r = 0; r < reps; r++) {
        char name[32];
        struct policy_filter_result fr;
        double t0;

        add_member(c, NULL, r, 0, 1, 0);
        snprintf(name, sizeof(name), "r%d-m0", r);
        t0 = now_ms();
        policy_filter(c, "bench", name, (const char *const *)names, (size_t)nodes, 0, &fr);
        t[r] = now_ms() - t0;
        policy_filter_result_cleanup(&fr);
        policy_pod_forget(c, "bench", name);
    }
    printf("filter  %s one pod over %5d nodes:   median %8.3f ms  (%d reps)\n",
           strategy_name(s), nodes, median(t, reps), reps);
    free(t);
    free_names(names, nodes);
    policy_cluster_free(c);
}

static uint64_t rng_state = 42;

static uint32_t rng(void)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return (uint32_t)(rng_state >> 11);
}

/* A pod of one of 64 shapes: 1-2 whole GPUs or a share, and a cpu ask by shape. */
static struct policy_pod_spec mixed_pod(char *name, char *uid, int shape, const char *node,
                                        char *groups)
{
    struct policy_pod_spec p = {.namespace_ = "bench", .name = name, .uid = uid,
                                .cpu_milli = 500 + 250 * shape, .memory_bytes = 4 * GiB,
                                .managed = true, .node = node};

    if (shape % 4 == 0)
        p.gpus = 1 + shape % 8 / 4;
    else
        p.gpu_share_milli = 100 + 13 * shape;
    if (node && p.gpu_share_milli)
        p.gpu_groups = groups;
    return p;
}

/*
 * One new pod over 5,000 nodes that are all in different states, of a shape
 * other than the last: nothing priced before can be reused.
 */
static void bench_filter_mixed(enum policy_strategy s, int nodes, int reps)
{
    char **names;
    struct policy_cluster *c = cluster(nodes, &names, s);
    double *t = calloc((size_t)reps, sizeof(*t));

    rng_state = 7;
    for (int i = 0; i < nodes; i++) {
        int busy = (int)(rng() % 5); /* at most 8 devices taken */

        for (int k = 0; k < busy; k++) {
            char name[32], uid[32], groups[8];
            struct policy_pod_spec p;

            snprintf(name, sizeof(name), "run-%d-%d", i, k);
            snprintf(uid, sizeof(uid), "u-run-%d-%d", i, k);
            snprintf(groups, sizeof(groups), "g%d", k);
            p = mixed_pod(name, uid, (int)(rng() % 64), names[i], groups);
            policy_pod_upsert(c, &p, 0);
        }
    }
    for (int r = 0; r < reps; r++) {
        char name[32], uid[32];
        struct policy_filter_result fr;
        struct policy_pod_spec p;
        double t0;

        snprintf(name, sizeof(name), "new-%d", r);
        snprintf(uid, sizeof(uid), "u-new-%d", r);
        p = mixed_pod(name, uid, r % 64, NULL, NULL);
        policy_pod_upsert(c, &p, 0);
        t0 = now_ms();
        policy_filter(c, "bench", name, (const char *const *)names, (size_t)nodes, 0, &fr);
        t[r] = now_ms() - t0;
        policy_filter_result_cleanup(&fr);
        policy_pod_forget(c, "bench", name);
    }
    printf("filter  %s one pod over %5d nodes, all different, a new shape each time: median "
           "%8.3f ms  (%d reps)\n",
           strategy_name(s), nodes, median(t, reps), reps);
    free(t);
    free_names(names, nodes);
    policy_cluster_free(c);
}

static void count_devices(const struct policy_node_view *v, void *ctx)
{
    *(int64_t *)ctx += v->gpus_whole_used + (int64_t)v->ngroups;
}

/* One pod as kube-scheduler would: filter over every node, bind the fit. */
static void schedule_one(struct policy_cluster *c, const char *name, char **names, int nodes)
{
    struct policy_filter_result fr;
    struct policy_bind_result br;

    policy_filter(c, "bench", name, (const char *const *)names, (size_t)nodes, 0, &fr);
    for (size_t i = 0; i < fr.n; i++) {
        if (fr.verdicts[i].fit != POLICY_FITS)
            continue;
        policy_bind(c, "bench", name, names[i], 0, &br);
        for (size_t k = 0; br.outcome == POLICY_BIND_COMMIT && k < br.n; k++)
            policy_bind_done(c, "bench", br.members[k].name, true, NULL);
        policy_bind_result_cleanup(&br);
        break;
    }
    policy_filter_result_cleanup(&fr);
}

static void bench_packing(enum policy_strategy s, int pods, int nodes)
{
    char **names;
    struct policy_cluster *c = cluster(nodes, &names, s);
    int64_t milli = 0, used = 0;
    double t0 = now_ms();

    rng_state = 42;
    for (int i = 0; i < pods; i++) {
        char name[32];
        bool whole = rng() % 5 == 0;
        int64_t gpus = whole ? 1 + rng() % 2 : 0;
        int32_t share = whole ? 0 : (int32_t)(100 + rng() % 801);
        struct policy_pod_view v;

        add_member(c, NULL, 0, i, gpus, share);
        snprintf(name, sizeof(name), "r0-m%d", i);
        schedule_one(c, name, names, nodes);
        if (policy_pod_view_get(c, "bench", name, &v) && v.phase == POLICY_POD_BOUND)
            milli += gpus * 1000 + share;
    }
    policy_each_node(c, count_devices, &used);
    printf("packing %s: %d pods on %d nodes: %lld devices used, lower bound %lld, "
           "ratio %.4f  (%.0f ms)\n",
           strategy_name(s), pods, nodes, (long long)used,
           (long long)((milli + 999) / 1000), (double)used / (double)((milli + 999) / 1000),
           now_ms() - t0);
    free_names(names, nodes);
    policy_cluster_free(c);
}

/*
 * Single 1-GPU pods scheduled one at a time over every node, as kube-scheduler does: "live",
 * each pod known only just before it is filtered (pods arrive as fast as they bind), and
 * "held", all of them known (pending) before the first is filtered, then filtered in an order
 * other than their arrival (kube-scheduler's queue is not muster's): e2e_throughput's held runs.
 */
static void bench_backlog(enum policy_strategy s, int pods, int nodes)
{
    double ms[2];

    for (int held = 0; held < 2; held++) {
        char **names;
        struct policy_cluster *c = cluster(nodes, &names, s);
        double t0;

        if (held)
            for (int i = 0; i < pods; i++)
                add_member(c, NULL, 0, i, 1, 0);
        t0 = now_ms();
        for (int k = 0; k < pods; k++) {
            int i = held ? (int)(((long)k * 7919) % pods) : k; /* a fixed permutation */
            char name[32];

            if (!held)
                add_member(c, NULL, 0, i, 1, 0);
            snprintf(name, sizeof(name), "r0-m%d", i);
            schedule_one(c, name, names, nodes);
        }
        ms[held] = (now_ms() - t0) / pods;
        free_names(names, nodes);
        policy_cluster_free(c);
    }
    printf("backlog %s: %d single pods on %d nodes: live %.3f ms/pod, held %.3f ms/pod, "
           "held/live %.2f\n",
           strategy_name(s), pods, nodes, ms[0], ms[1], ms[1] / ms[0]);
}

static void gpu_queue(struct policy_cluster *c, const char *name, int64_t quota_gpus)
{
    struct policy_queue_spec q = {.name = name};

    for (int r = 0; r < POLICY_RES_COUNT; r++) {
        q.quota.v[r] = r == POLICY_RES_GPU ? quota_gpus * 1000 : -1;
        q.limit.v[r] = -1;
        q.over_quota_weight.v[r] = 1000;
    }
    policy_queue_upsert(c, &q);
}

/* A gang of n one-GPU pods (no head) in queue, declared by its RayCluster. */
static void add_gpu_gang(struct policy_cluster *c, const char *queue, int g, int n)
{
    char key[64];
    struct policy_gang_spec gs = {.key = key, .min_members = n, .queue = queue,
                                  .source = POLICY_GANG_WORKLOAD};

    snprintf(key, sizeof(key), "bench/%s-%d", queue, g);
    policy_gang_upsert(c, &gs);
    for (int i = 0; i < n; i++) {
        char name[64], uid[64];
        struct policy_pod_spec p = {.namespace_ = "bench", .name = name, .uid = uid,
                                    .cpu_milli = 1000, .memory_bytes = 4 * GiB, .gpus = 1,
                                    .gang = key, .queue = queue, .managed = true};

        snprintf(name, sizeof(name), "%s-%d-%d", queue, g, i);
        snprintf(uid, sizeof(uid), "u-%s", name);
        policy_pod_upsert(c, &p, 0);
    }
}

/*
 * The unasked look (policy_evict_unasked, every 500 ms under the cache lock in the daemon):
 * queue "lender" (quota 0) holds every GPU of NODES nodes with gangs of 8; queue "owner"
 * (quota: all of them) has WAITING gangs of 8 nobody filtered. Each call looks at 16 of them:
 * the first decides evictions for 16 (an eviction search each), the next ones find the rest
 * waiting behind them. How long one call holds the lock.
 */
static void bench_unasked(int nodes, int waiting, size_t per_call)
{
    char **names;
    struct policy_cluster *c = cluster(nodes, &names, POLICY_BINPACK);
    double ms[4], longest = 0;
    size_t decided[4];

    gpu_queue(c, "lender", 0);
    gpu_queue(c, "owner", (int64_t)nodes * 8);
    for (int g = 0; g < nodes; g++) {
        char name[64];

        add_gpu_gang(c, "lender", g, 8);
        snprintf(name, sizeof(name), "lender-%d-0", g);
        schedule_one(c, name, names, nodes);
        for (int i = 1; i < 8; i++) {
            snprintf(name, sizeof(name), "lender-%d-%d", g, i);
            schedule_one(c, name, names, nodes);
        }
    }
    for (int g = 0; g < waiting; g++)
        add_gpu_gang(c, "owner", g, 8);
    /* One look of 16 gangs, as the daemon makes it: per_call at a time, the lock released in
     * between (per_call 16: one hold). */
    for (int k = 0; k < 4; k++) {
        struct policy_eviction *ev;
        size_t n;
        double t0 = now_ms();

        decided[k] = 0;
        for (size_t done = 0; done < 16; done += per_call) {
            double t1 = now_ms();
            size_t one;

            policy_evict_unasked(c, 10000 + k * 1000, 500, per_call, &one);
            decided[k] += one;
            if (now_ms() - t1 > longest)
                longest = now_ms() - t1;
        }
        ms[k] = now_ms() - t0;
        policy_evictions_take(c, &ev, &n);
        policy_evictions_free(ev, n);
    }
    printf("unasked binpack: %d waiting gangs of 8 on %d full nodes, %zu per hold: look %.2f ms "
           "(%zu decided), then %.2f, %.2f, %.2f ms (%zu, %zu, %zu); longest hold %.2f ms\n",
           waiting, nodes, per_call, ms[0], decided[0], ms[1], ms[2], ms[3], decided[1],
           decided[2], decided[3], longest);
    free_names(names, nodes);
    policy_cluster_free(c);
}

int main(int argc, char **argv)
{
    static const int node_counts[] = {100, 1000, 5000, 10000};
    static const int gang_sizes[] = {1, 64, 512};
    bool quick = argc > 1 && strcmp(argv[1], "--quick") == 0;

    if (argc > 1 && strcmp(argv[1], "backlog") == 0) { /* that one alone */
        bench_backlog(POLICY_BINPACK, 2000, 1000);
        return 0;
    }
    if (argc > 1 && strcmp(argv[1], "unasked") == 0) {
        bench_unasked(1000, 64, 16);
        bench_unasked(1000, 64, 1);
        bench_unasked(1000, 1000, 16);
        bench_unasked(1000, 1000, 1);
        return 0;
    }

    for (size_t g = 0; g < 3; g++)
        for (size_t n = 0; n < 4; n++)
            bench_plan(POLICY_BINPACK, node_counts[n], gang_sizes[g], quick ? 3 : 15);
    bench_filter(POLICY_BINPACK, 5000, quick ? 20 : 200);
    bench_filter_mixed(POLICY_BINPACK, 5000, quick ? 20 : 200);
    bench_packing(POLICY_BINPACK, 10000, 1000);
    bench_packing(POLICY_SPREAD, 10000, 1000);
    bench_backlog(POLICY_BINPACK, 2000, 1000);
    bench_unasked(1000, 64, 1);
    for (size_t g = 0; g < 3; g++)
        bench_plan(POLICY_FRAGMENTATION, 5000, gang_sizes[g], quick ? 3 : 15);
    bench_plan(POLICY_FRAGMENTATION, 10000, 512, quick ? 3 : 15);
    bench_filter(POLICY_FRAGMENTATION, 5000, quick ? 20 : 200);
    bench_filter_mixed(POLICY_FRAGMENTATION, 5000, quick ? 20 : 200);
    bench_packing(POLICY_FRAGMENTATION, 10000, 1000);
    return 0;
}
