/*
 * bench_topology.c - topology-aware gangs (docs/topology.md), measured through the engine's
 * public API and printed; nothing is asserted. Three experiments, each run with muster's domain
 * choice (the domain that strands the least for the gangs seen) beside KAI's fullest-that-fits,
 * on the same stream:
 *
 *   bench_topology [--synthetic N] [--openb DIR] [--plan N] [--seed S] [--csv]
 *
 * synthetic  8 blocks x 8 racks x 8 nodes x 8 GPUs (4,096 GPUs). N gangs arrive, one a step, of
 *            1 to 256 GPUs (8-GPU members from 8 GPUs up): up to 8 GPUs preferring a rack; 16 to
 *            64 required in a block (half of them in a rack) and preferring a rack; 128 and 256
 *            required in a block, preferring a rack. Each lives an exponential number of steps
 *            (mean set so the offered load is 95% of the GPUs); a gang that does not fit waits,
 *            and the waiting are tried again each step, oldest first. Printed: gangs placed, in
 *            their preferred level (all members in one rack), mean wait in steps; GPU in use;
 *            GPUs stranded per rack (free GPUs on nodes partly used, mean over samples every 100
 *            steps); racks wholly free.
 * openb      the FGD paper's production trace (1,213 nodes, 6,212 GPUs), its nodes in racks of 8
 *            and blocks of 8 racks by node order; its GPU pods drawn with replacement (seeded, as
 *            bench_openb) and grouped into gangs of 1, 2, 4 or 8 copies of the pod drawn (weights
 *            4:2:1:1); a gang of more than one prefers a rack, of 4 or more is required in a
 *            block. They arrive until 100% of the GPUs are asked and never leave. Printed: GPU
 *            allocated, gangs placed, in their preferred level, GPUs stranded per rack.
 * plan       5,000 nodes of 8 GPUs in racks of 8 and blocks of 64; half the blocks partly full
 *            (random pods), half empty; a gang of 512 one-GPU members required in a block,
 *            preferring a rack. The time of the filter call that plans it whole (median and p90
 *            of N runs, each a new gang on the same cluster, released after).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "policy.h"

#define GiB (1LL << 30)
#define BLOCK_LABEL "bench/block"
#define RACK_LABEL "bench/rack"
#define HOST_LABEL "kubernetes.io/hostname"
#define MAX_MEMBERS 512

/* ---- a seeded generator (splitmix64) --------------------------------------------------- */

static uint64_t rng_state;

static uint64_t rnd64(void)
{
    uint64_t z = (rng_state += 0x9e3779b97f4a7c15ULL);

    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

static double rnd01(void)
{
    return (double)(rnd64() >> 11) / 9007199254740992.0;
}

static uint32_t rnd(uint32_t n)
{
    return (uint32_t)(rnd64() % n);
}

static double now_ms(void)
{
    struct timespec t;

    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
}

/* ---- the cluster ------------------------------------------------------------------------ */

struct node {
    char name[40];
    int block, rack; /* rack: global index */
    int64_t gpus;
};

struct world {
    struct policy_cluster *c;
    struct node *nodes;
    size_t nnodes;
    int nracks;
    const char **names;
};

static void add_topology(struct policy_cluster *c)
{
    struct policy_topology_level lv[] = {{BLOCK_LABEL, "block"}, {RACK_LABEL, "rack"},
                                         {HOST_LABEL, NULL}};
    struct policy_topology_spec t = {.name = "bench", .levels = lv, .nlevels = 3};

    if (policy_topology_upsert(c, &t) != POLICY_OK)
        exit(1);
}

static void add_node(struct world *w, const char *name, int block, int rack, int64_t gpus,
                     int64_t cpu_milli, int64_t mem)
{
    char b[16], r[24];
    struct policy_label labels[3];
    struct policy_node_spec n = {.name = name, .labels = labels, .nlabels = 3,
                                 .cpu_milli = cpu_milli, .memory_bytes = mem, .pods = 256,
                                 .gpus = gpus};
    struct node *x = &w->nodes[w->nnodes++];

    snprintf(b, sizeof(b), "b%02d", block);
    snprintf(r, sizeof(r), "r%02d", rack);
    labels[0] = (struct policy_label){BLOCK_LABEL, b};
    labels[1] = (struct policy_label){RACK_LABEL, r};
    labels[2] = (struct policy_label){HOST_LABEL, name};
    if (policy_node_upsert(w->c, &n) != POLICY_OK)
        exit(1);
    snprintf(x->name, sizeof(x->name), "%s", name);
    x->block = block;
    x->rack = rack;
    x->gpus = gpus;
}

static struct world world_new(enum policy_domain_choice choice, size_t cap)
{
    struct policy_options o = {.strategy = POLICY_BINPACK, .domain_choice = choice};
    struct world w = {.c = policy_cluster_new(&o), .nodes = calloc(cap, sizeof(struct node)),
                      .names = calloc(cap, sizeof(char *))};

    if (!w.c || !w.nodes || !w.names)
        exit(1);
    add_topology(w.c);
    return w;
}

static void world_free(struct world *w)
{
    policy_cluster_free(w->c);
    free(w->nodes);
    free(w->names);
}

static void world_names(struct world *w)
{
    for (size_t i = 0; i < w->nnodes; i++)
        w->names[i] = w->nodes[i].name;
}

/* ---- gangs -------------------------------------------------------------------------------- */

struct gang {
    char key[32];
    int members;
    int64_t gpus_each, cpu_each, mem_each;
    const char *required, *preferred;
    bool placed, waiting;
    long arrived, placed_at, leaves;
};

static void pod_name(const struct gang *g, int i, char *buf, size_t len)
{
    snprintf(buf, len, "%s-%d", g->key + 2, i);
}

static void gang_add(struct world *w, struct gang *g, int64_t now)
{
    struct policy_gang_spec s = {
        .key = g->key, .min_members = g->members, .source = POLICY_GANG_PODGROUP,
        .topology = {.topology = "bench", .required = g->required, .preferred = g->preferred,
                     .dialect = "KAI"}};

    if (policy_gang_upsert(w->c, &s) != POLICY_OK)
        exit(1);
    for (int i = 0; i < g->members; i++) {
        char name[48], uid[64];
        struct policy_pod_spec p = {.namespace_ = "b", .name = name, .uid = uid,
                                    .cpu_milli = g->cpu_each, .memory_bytes = g->mem_each,
                                    .gpus = g->gpus_each, .gang = g->key, .managed = true};

        pod_name(g, i, name, sizeof(name));
        snprintf(uid, sizeof(uid), "u-%s", name);
        if (policy_pod_upsert(w->c, &p, now) != POLICY_OK)
            exit(1);
    }
}

static void gang_forget(struct world *w, struct gang *g)
{
    for (int i = 0; i < g->members; i++) {
        char name[48];

        pod_name(g, i, name, sizeof(name));
        policy_pod_forget(w->c, "b", name);
    }
    policy_gang_forget(w->c, g->key, POLICY_GANG_PODGROUP);
}

/* Plan the gang (its first member's filter over every node) and bind it whole as the daemon
 * would, the pods then seen bound. True when placed. */
static bool gang_try(struct world *w, struct gang *g, int64_t now)
{
    struct policy_filter_result fr;
    char name[48];
    bool ok;

    pod_name(g, 0, name, sizeof(name));
    if (policy_filter(w->c, "b", name, w->names, w->nnodes, now, &fr) != POLICY_OK)
        exit(1);
    ok = fr.reason == NULL;
    policy_filter_result_cleanup(&fr);
    if (!ok)
        return false;
    for (int i = 0; i < g->members; i++) {
        struct policy_pod_view v;
        struct policy_bind_result br;

        pod_name(g, i, name, sizeof(name));
        if (!policy_pod_view_get(w->c, "b", name, &v) || !v.node)
            return false;
        if (policy_bind(w->c, "b", name, v.node, now, &br) != POLICY_OK)
            exit(1);
        for (size_t k = 0; br.outcome == POLICY_BIND_COMMIT && k < br.n; k++) {
            struct policy_pod_spec p = {.namespace_ = "b", .name = br.members[k].name,
                                        .uid = br.members[k].uid, .cpu_milli = g->cpu_each,
                                        .memory_bytes = g->mem_each, .gpus = g->gpus_each,
                                        .gang = g->key, .managed = true,
                                        .node = br.members[k].node};

            policy_bind_done(w->c, "b", br.members[k].name, true, NULL);
            policy_pod_upsert(w->c, &p, now);
        }
        policy_bind_result_cleanup(&br);
    }
    return true;
}

/* All members in one rack? */
static bool in_one_rack(const struct world *w, const struct gang *g, char *nodes_seen)
{
    int rack = -1;

    for (int i = 0; i < g->members; i++) {
        char name[48];
        struct policy_pod_view v;

        pod_name(g, i, name, sizeof(name));
        if (!policy_pod_view_get(w->c, "b", name, &v) || !v.node)
            return false;
        for (size_t k = 0; k < w->nnodes; k++)
            if (strcmp(w->nodes[k].name, v.node) == 0) {
                if (rack >= 0 && w->nodes[k].rack != rack)
                    return false;
                rack = w->nodes[k].rack;
                break;
            }
    }
    (void)nodes_seen;
    return true;
}

/* ---- what is stranded --------------------------------------------------------------------- */

struct usage {
    const struct world *w;
    int64_t *free_of; /* per node index: free devices */
};

static void node_seen(const struct policy_node_view *v, void *ctx)
{
    struct usage *u = ctx;

    for (size_t i = 0; i < u->w->nnodes; i++)
        if (strcmp(u->w->nodes[i].name, v->name) == 0) {
            u->free_of[i] = v->gpus - v->gpus_whole_used - (int64_t)v->ngroups;
            return;
        }
}

/* Free GPUs on partly used nodes per rack, racks wholly free, GPUs in use. */
static void sample(const struct world *w, double *stranded_per_rack, int *free_racks,
                   int64_t *used)
{
    int64_t *free_of = calloc(w->nnodes, sizeof(int64_t));
    int64_t *rack_free = calloc((size_t)w->nracks, sizeof(int64_t));
    int64_t *rack_cap = calloc((size_t)w->nracks, sizeof(int64_t));
    struct usage u = {w, free_of};
    int64_t stranded = 0;

    policy_each_node(w->c, node_seen, &u);
    *used = 0;
    *free_racks = 0;
    for (size_t i = 0; i < w->nnodes; i++) {
        const struct node *n = &w->nodes[i];

        *used += n->gpus - free_of[i];
        rack_free[n->rack] += free_of[i];
        rack_cap[n->rack] += n->gpus;
        if (free_of[i] > 0 && free_of[i] < n->gpus)
            stranded += free_of[i];
    }
    for (int r = 0; r < w->nracks; r++)
        *free_racks += rack_cap[r] > 0 && rack_free[r] == rack_cap[r];
    *stranded_per_rack = (double)stranded / w->nracks;
    free(free_of);
    free(rack_free);
    free(rack_cap);
}

/* ---- synthetic ---------------------------------------------------------------------------- */

struct result {
    long arrived, placed, preferred_asked, preferred_met;
    double wait_sum, stranded_sum, used_sum;
    int samples, free_racks_sum;
    long big_placed, big_arrived;
    double big_wait_sum;
    int64_t capacity;
    double ms;
};

static void draw_gang(struct gang *g, long id)
{
    static const int sizes[] = {1, 2, 4, 8, 16, 32, 64, 128, 256};
    static const double weight[] = {10, 8, 8, 10, 6, 4, 3, 1.5, 0.7};
    double total = 0, x;
    int k = 0;

    for (int i = 0; i < 9; i++)
        total += weight[i];
    x = rnd01() * total;
    while (k < 8 && x >= weight[k])
        x -= weight[k++];
    memset(g, 0, sizeof(*g));
    snprintf(g->key, sizeof(g->key), "b/g%ld", id);
    g->members = sizes[k] < 8 ? 1 : sizes[k] / 8;
    g->gpus_each = sizes[k] < 8 ? sizes[k] : 8;
    g->cpu_each = 4000 * g->gpus_each;
    g->mem_each = 16 * GiB * g->gpus_each;
    g->preferred = "rack";
    if (sizes[k] >= 16)
        g->required = sizes[k] <= 64 && rnd(2) ? "rack" : "block";
}

static int gang_gpus(const struct gang *g)
{
    return (int)(g->members * g->gpus_each);
}

static struct result run_synthetic(enum policy_domain_choice choice, long n, uint64_t seed)
{
    struct world w = world_new(choice, 512);
    struct gang *gs = calloc((size_t)n, sizeof(*gs));
    long *waiting = calloc((size_t)n, sizeof(long)), nwait = 0;
    struct result r = {0};
    double mean_gpus = 0, t0;

    rng_state = seed;
    for (int b = 0; b < 8; b++)
        for (int rk = 0; rk < 8; rk++)
            for (int i = 0; i < 8; i++) {
                char name[40];

                snprintf(name, sizeof(name), "b%02d-r%d-n%d", b, rk, i);
                add_node(&w, name, b, b * 8 + rk, 8, 128000, 1024 * GiB);
            }
    w.nracks = 64;
    world_names(&w);
    r.capacity = 4096;
    for (long i = 0; i < 4096; i++) { /* the mean gang, to set lifetimes */
        struct gang g;

        draw_gang(&g, i);
        mean_gpus += gang_gpus(&g) / 4096.0;
    }
    rng_state = seed;
    t0 = now_ms();
    for (long step = 0; step < n; step++) {
        struct gang *g = &gs[step];
        long keep = 0;

        for (long i = 0; i < step; i++) /* departures */
            if (gs[i].placed && gs[i].leaves == step) {
                gang_forget(&w, &gs[i]);
                gs[i].placed = false;
            }
        draw_gang(g, step);
        g->arrived = step;
        g->leaves = -1;
        r.arrived++;
        r.big_arrived += gang_gpus(g) >= 128;
        gang_add(&w, g, step + 1);
        waiting[nwait++] = step;
        for (long k = 0; k < nwait; k++) { /* the waiting, oldest first */
            struct gang *x = &gs[waiting[k]];

            if (!gang_try(&w, x, step + 1)) {
                waiting[keep++] = waiting[k];
                continue;
            }
            x->placed = true;
            x->placed_at = step;
            x->leaves = step + 1 + (long)(-log(1.0 - rnd01()) * 4096 * 0.95 / mean_gpus);
            r.placed++;
            r.wait_sum += (double)(step - x->arrived);
            if (gang_gpus(x) >= 128) {
                r.big_placed++;
                r.big_wait_sum += (double)(step - x->arrived);
            }
            if (x->preferred) {
                r.preferred_asked++;
                r.preferred_met += in_one_rack(&w, x, NULL);
            }
        }
        nwait = keep;
        if (step % 100 == 99) {
            double s;
            int fr;
            int64_t used;

            sample(&w, &s, &fr, &used);
            r.stranded_sum += s;
            r.free_racks_sum += fr;
            r.used_sum += (double)used;
            r.samples++;
        }
    }
    r.ms = now_ms() - t0;
    free(gs);
    free(waiting);
    world_free(&w);
    return r;
}

static const char *choice_name(enum policy_domain_choice c)
{
    return c == POLICY_DOMAIN_FULLEST ? "fullest-that-fits (KAI)" : "least-stranded (muster)";
}

static void print_synthetic(enum policy_domain_choice c, const struct result *r, bool csv)
{
    double placed = r->placed ? (double)r->placed : 1;

    if (csv) {
        printf("synthetic,%s,%ld,%ld,%.2f,%.2f,%.2f,%.2f,%.2f,%.2f,%.0f\n", choice_name(c),
               r->arrived, r->placed, 100.0 * r->preferred_met / (r->preferred_asked ? r->preferred_asked : 1),
               r->wait_sum / placed, r->big_placed ? r->big_wait_sum / r->big_placed : 0,
               100.0 * r->used_sum / r->samples / r->capacity, r->stranded_sum / r->samples,
               (double)r->free_racks_sum / r->samples, r->ms);
        return;
    }
    printf("  %-25s placed %ld/%ld, in their preferred rack %.1f%%, wait %.1f steps (128+ GPUs: "
           "%.1f), GPU in use %.1f%%, stranded %.2f GPUs/rack, racks wholly free %.1f (%.0f ms)\n",
           choice_name(c), r->placed, r->arrived,
           100.0 * r->preferred_met / (r->preferred_asked ? r->preferred_asked : 1),
           r->wait_sum / placed, r->big_placed ? r->big_wait_sum / r->big_placed : 0,
           100.0 * r->used_sum / r->samples / r->capacity, r->stranded_sum / r->samples,
           (double)r->free_racks_sum / r->samples, r->ms);
}

/* ---- openb with racks --------------------------------------------------------------------- */

struct opod {
    char name[40];
    int64_t cpu, mem_mib;
    int gpus; /* whole GPUs (shares left out: they are not gang members here) */
};

static char *field(char **line)
{
    char *f = *line, *comma = f ? strchr(f, ',') : NULL;

    if (comma) {
        *comma = '\0';
        *line = comma + 1;
    } else {
        *line = NULL;
    }
    return f ? f : (char *)"";
}

static int cmp_opod(const void *a, const void *b)
{
    return strcmp(((const struct opod *)a)->name, ((const struct opod *)b)->name);
}

static struct result run_openb(enum policy_domain_choice choice, const char *dir, uint64_t seed,
                               bool *ok)
{
    char path[1024], line[1024];
    struct world w = world_new(choice, 2048);
    struct opod *pods = NULL;
    size_t npods = 0, cap = 0;
    struct result r = {0};
    int64_t asked = 0;
    double t0;
    FILE *f;
    long id = 0;

    *ok = false;
    snprintf(path, sizeof(path), "%s/openb_node_list_gpu_node.csv", dir);
    if (!(f = fopen(path, "r")))
        return r;
    if (!fgets(line, sizeof(line), f)) {
        fclose(f);
        return r;
    }
    while (fgets(line, sizeof(line), f) && w.nnodes < 2048) {
        char *p = line, *name = field(&p), *cpu = field(&p), *mem = field(&p), *gpu = field(&p);
        int idx = (int)w.nnodes;

        add_node(&w, name, idx / 64, idx / 8, atoll(gpu), atoll(cpu), atoll(mem) * (1LL << 20));
        r.capacity += atoll(gpu);
    }
    fclose(f);
    w.nracks = ((int)w.nnodes + 7) / 8;
    world_names(&w);
    snprintf(path, sizeof(path), "%s/openb_pod_list_default.csv", dir);
    if (!(f = fopen(path, "r")))
        return r;
    if (!fgets(line, sizeof(line), f)) {
        fclose(f);
        return r;
    }
    while (fgets(line, sizeof(line), f)) {
        char *p = line, *name = field(&p), *cpu = field(&p), *mem = field(&p);
        char *ngpu = field(&p), *milli = field(&p);

        if (atoi(ngpu) < 1 || (atoi(ngpu) == 1 && atoi(milli) < 1000))
            continue; /* whole-GPU pods only */
        if (npods == cap) {
            cap = cap ? cap * 2 : 1024;
            pods = realloc(pods, cap * sizeof(*pods));
            if (!pods)
                exit(1);
        }
        snprintf(pods[npods].name, sizeof(pods[npods].name), "%s", name);
        pods[npods].cpu = atoll(cpu);
        pods[npods].mem_mib = atoll(mem);
        pods[npods].gpus = atoi(ngpu);
        npods++;
    }
    fclose(f);
    qsort(pods, npods, sizeof(*pods), cmp_opod);
    rng_state = seed;
    t0 = now_ms();
    while (npods > 0 && asked < r.capacity) {
        static const int copies[] = {1, 1, 1, 1, 2, 2, 4, 8};
        const struct opod *o = &pods[rnd((uint32_t)npods)];
        struct gang g = {0};

        snprintf(g.key, sizeof(g.key), "b/o%ld", id++);
        g.members = copies[rnd(8)];
        g.gpus_each = o->gpus;
        g.cpu_each = o->cpu;
        g.mem_each = o->mem_mib * (1LL << 20);
        g.preferred = g.members > 1 ? "rack" : NULL;
        g.required = g.members >= 4 ? "block" : NULL;
        asked += (int64_t)g.members * g.gpus_each;
        r.arrived++;
        gang_add(&w, &g, id);
        if (gang_try(&w, &g, id)) {
            r.placed++;
            if (g.preferred) {
                r.preferred_asked++;
                r.preferred_met += in_one_rack(&w, &g, NULL);
            }
        } else {
            gang_forget(&w, &g); /* never placed: it asked, and left (FGD's experiment) */
        }
    }
    r.ms = now_ms() - t0;
    {
        double s;
        int fr;
        int64_t used;

        sample(&w, &s, &fr, &used);
        r.stranded_sum = s;
        r.free_racks_sum = fr;
        r.used_sum = (double)used;
        r.samples = 1;
    }
    free(pods);
    world_free(&w);
    *ok = true;
    return r;
}

static void print_openb(enum policy_domain_choice c, const struct result *r, bool csv)
{
    if (csv) {
        printf("openb,%s,%ld,%ld,%.2f,%.2f,%.2f,%d,%.0f\n", choice_name(c), r->arrived, r->placed,
               100.0 * r->preferred_met / (r->preferred_asked ? r->preferred_asked : 1),
               100.0 * r->used_sum / r->capacity, r->stranded_sum, r->free_racks_sum, r->ms);
        return;
    }
    printf("  %-25s GPU allocated %.2f%%, gangs placed %ld/%ld, in their preferred rack %.1f%%, "
           "stranded %.2f GPUs/rack, racks wholly free %d (%.0f ms)\n",
           choice_name(c), 100.0 * r->used_sum / r->capacity, r->placed, r->arrived,
           100.0 * r->preferred_met / (r->preferred_asked ? r->preferred_asked : 1),
           r->stranded_sum, r->free_racks_sum, r->ms);
}

/* ---- plan time ----------------------------------------------------------------------------- */

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;

    return x < y ? -1 : x > y;
}

static void run_plan(enum policy_domain_choice choice, int runs, uint64_t seed, bool csv)
{
    struct world w = world_new(choice, 5000);
    double *ms = calloc((size_t)runs, sizeof(double));
    int placed = 0;

    rng_state = seed;
    for (int i = 0; i < 5000; i++) {
        char name[40];

        snprintf(name, sizeof(name), "n%04d", i);
        add_node(&w, name, i / 64, i / 8, 8, 128000, 1024 * GiB);
    }
    w.nracks = 625;
    world_names(&w);
    /* Half the blocks partly full: a pod of 1 to 8 GPUs on three nodes of four. */
    for (int i = 0; i < 5000; i++) {
        if ((i / 64) % 2 == 1 || rnd(4) == 0)
            continue;
        {
            char name[48];
            struct policy_pod_spec p = {.namespace_ = "fill", .name = name, .uid = name,
                                        .cpu_milli = 1000, .memory_bytes = GiB,
                                        .gpus = 1 + rnd(8), .managed = true,
                                        .node = w.nodes[i].name};

            snprintf(name, sizeof(name), "fill-%d", i);
            policy_pod_upsert(w.c, &p, 1);
        }
    }
    for (int k = 0; k < runs; k++) {
        struct gang g = {.members = 512, .gpus_each = 1, .cpu_each = 1000, .mem_each = GiB,
                         .required = "block", .preferred = "rack"};
        struct policy_filter_result fr;
        char name[48];
        double t0;

        snprintf(g.key, sizeof(g.key), "b/p%d", k);
        gang_add(&w, &g, 2 + k);
        pod_name(&g, 0, name, sizeof(name));
        t0 = now_ms();
        if (policy_filter(w.c, "b", name, w.names, w.nnodes, 2 + k, &fr) != POLICY_OK)
            exit(1);
        ms[k] = now_ms() - t0;
        placed += fr.reason == NULL;
        policy_filter_result_cleanup(&fr);
        gang_forget(&w, &g);
    }
    qsort(ms, (size_t)runs, sizeof(double), cmp_double);
    if (csv)
        printf("plan,%s,%d,%d,%.3f,%.3f\n", choice_name(choice), runs, placed, ms[runs / 2],
               ms[runs * 9 / 10]);
    else
        printf("  %-25s %d of %d planned whole; plan time median %.3f ms, p90 %.3f ms\n",
               choice_name(choice), placed, runs, ms[runs / 2], ms[runs * 9 / 10]);
    free(ms);
    world_free(&w);
}

int main(int argc, char **argv)
{
    long synthetic = 20000;
    int plan = 20;
    uint64_t seed = 42;
    const char *openb = "/work/shared/traces/openb";
    bool csv = false;
    static const enum policy_domain_choice choices[] = {POLICY_DOMAIN_LEAST_STRANDED,
                                                        POLICY_DOMAIN_FULLEST};

    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--synthetic") == 0 && i + 1 < argc)
            synthetic = atol(argv[++i]);
        else if (strcmp(argv[i], "--openb") == 0 && i + 1 < argc)
            openb = argv[++i];
        else if (strcmp(argv[i], "--plan") == 0 && i + 1 < argc)
            plan = atoi(argv[++i]);
        else if (strcmp(argv[i], "--seed") == 0 && i + 1 < argc)
            seed = strtoull(argv[++i], NULL, 10);
        else if (strcmp(argv[i], "--csv") == 0)
            csv = true;
        else {
            fprintf(stderr, "usage: bench_topology [--synthetic N] [--openb DIR] [--plan N] "
                            "[--seed S] [--csv]\n");
            return 2;
        }
    }
    if (synthetic > 0) {
        if (!csv)
            printf("synthetic: 8 blocks x 8 racks x 8 nodes x 8 GPUs, %ld gangs of 1-256 GPUs, "
                   "seed %llu\n",
                   synthetic, (unsigned long long)seed);
        for (int c = 0; c < 2; c++) {
            struct result r = run_synthetic(choices[c], synthetic, seed);

            print_synthetic(choices[c], &r, csv);
        }
    }
    if (openb && *openb) {
        if (!csv)
            printf("openb with racks of 8 nodes, blocks of 8 racks; gangs of 1-8 copies of a "
                   "drawn pod until 100%% of the GPUs are asked, seed %llu\n",
                   (unsigned long long)seed);
        for (int c = 0; c < 2; c++) {
            bool ok;
            struct result r = run_openb(choices[c], openb, seed, &ok);

            if (!ok) {
                fprintf(stderr, "openb: cannot read %s\n", openb);
                break;
            }
            print_openb(choices[c], &r, csv);
        }
    }
    if (plan > 0) {
        if (!csv)
            printf("plan: a 512-member gang (1 GPU each) required in a block, preferring a rack, "
                   "on 5,000 nodes (half the blocks partly full)\n");
        for (int c = 0; c < 2; c++)
            run_plan(choices[c], plan, seed, csv);
    }
    return 0;
}
