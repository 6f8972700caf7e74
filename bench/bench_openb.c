/*
 * bench_openb.c - the FGD paper's headline experiment (Weng et al., ATC'23), replayed through
 * the engine's public API, printed beside the published figures. Nothing is asserted.
 *
 *   bench_openb [--trace openb|frac|multi|spec33|all] [--seeds N] [--strategy a,b,...]
 *               [--dir /work/shared/traces/openb] [--csv]
 *
 * The experiment, as the FGD simulator (hkust-adsl/kubernetes-scheduler-simulator) runs it:
 * seed the generator, sort the trace's pods by name and shuffle them; then draw pods from the
 * name-sorted list with replacement and append them until the next draw would push the GPU
 * requested past 130% of the cluster's. Pods arrive one at a time and never leave; one that
 * does not fit stays unplaced. Each arrival goes through the engine as kube-scheduler drives an
 * extender (filter over every node, prioritize the fitting ones, highest score, bind,
 * bind_done). The metric at arrival level L% is GPU allocated / GPU capacity, averaged over the
 * arrivals whose requested GPU rounds to L% of capacity (the simulator's
 * merge_alloc_discrete.py).
 *
 * Where this differs from the simulator: the generator is xoshiro256** seeded with 42..51, not
 * Go's math/rand, so the streams are statistically alike but not the same pods; the stop rule
 * uses the drawn pod's whole GPU ask (the simulator compares the per-GPU milli of a multi-GPU
 * pod); cpu and memory are the trace's requests as written (the simulator's in-tree filter does
 * the same; its FGD score rounds a zero cpu request up to 100m).
 *
 * Synthetic traces (same nodes, pods derived from the default trace with a fixed seed 7):
 *   frac    every pod is one of the trace's GPU-share pods (all fractional)
 *   multi   8 of 10 GPU pods ask 2, 4 or 8 whole GPUs (cpu and memory scaled per GPU)
 *   spec33  33% of GPU pods are tied to one GPU model (a third of those accept a second one),
 *           models drawn by their share of the cluster's GPUs among nodes that could host the pod
 */
#include <malloc.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include "policy.h"

#define MiB (1LL << 20)
#define MODEL_LABEL "alibabacloud.com/gpu-card-model"
#define MAX_SEEDS 64
#define NLEVELS 4

static const int levels[NLEVELS] = {100, 110, 120, 130};

/* ---- the trace ------------------------------------------------------------ */

struct tnode {
    char name[32];
    int64_t cpu, mem_mib;
    int32_t gpus;
    char model[24];
};

struct tpod {
    char name[40];
    int64_t cpu, mem_mib;
    int32_t num_gpu, gpu_milli; /* gpu_milli: per GPU, 1000 for whole GPUs */
    char spec[64];              /* "" = any model; "A|B" = one of these */
};

struct trace {
    const char *name;
    struct tnode *nodes;
    size_t nnodes;
    struct tpod *pods;
    size_t npods;
    int64_t gpu_capacity_milli;
};

static int64_t pod_gpu_milli(const struct tpod *p)
{
    return p->num_gpu == 1 ? p->gpu_milli : (int64_t)p->num_gpu * 1000;
}

/* Splits a CSV line in place (the trace has no quoted fields). */
static size_t csv_split(char *line, char **f, size_t max)
{
    size_t n = 0;

    line[strcspn(line, "\r\n")] = '\0';
    while (n < max) {
        f[n++] = line;
        line = strchr(line, ',');
        if (!line)
            break;
        *line++ = '\0';
    }
    return n;
}

static void *grow(void *v, size_t n, size_t *cap, size_t size)
{
    if (n < *cap)
        return v;
    *cap = *cap ? *cap * 2 : 1024;
    v = realloc(v, *cap * size);
    if (!v) {
        fprintf(stderr, "out of memory\n");
        exit(1);
    }
    return v;
}

static FILE *open_in(const char *dir, const char *file)
{
    char path[1024];
    FILE *f;

    snprintf(path, sizeof(path), "%s/%s", dir, file);
    f = fopen(path, "r");
    if (!f) {
        perror(path);
        exit(2);
    }
    return f;
}

static void load_nodes(struct trace *t, const char *dir)
{
    FILE *f = open_in(dir, "openb_node_list_gpu_node.csv");
    char line[512], *fl[8];
    size_t cap = 0;

    if (!fgets(line, sizeof(line), f))
        exit(2);
    while (fgets(line, sizeof(line), f)) {
        struct tnode *n;

        if (csv_split(line, fl, 8) < 5)
            continue;
        t->nodes = grow(t->nodes, t->nnodes, &cap, sizeof(*t->nodes));
        n = &t->nodes[t->nnodes++];
        snprintf(n->name, sizeof(n->name), "%s", fl[0]);
        n->cpu = atoll(fl[1]);
        n->mem_mib = atoll(fl[2]);
        n->gpus = atoi(fl[3]);
        snprintf(n->model, sizeof(n->model), "%s", fl[4]);
        t->gpu_capacity_milli += (int64_t)n->gpus * 1000;
    }
    fclose(f);
}

static int cmp_pod_name(const void *a, const void *b)
{
    return strcmp(((const struct tpod *)a)->name, ((const struct tpod *)b)->name);
}

static void load_pods(struct trace *t, const char *dir)
{
    FILE *f = open_in(dir, "openb_pod_list_default.csv");
    char line[1024], *fl[16];
    size_t cap = 0;

    if (!fgets(line, sizeof(line), f))
        exit(2);
    while (fgets(line, sizeof(line), f)) {
        struct tpod *p;

        if (csv_split(line, fl, 16) < 6)
            continue;
        t->pods = grow(t->pods, t->npods, &cap, sizeof(*t->pods));
        p = &t->pods[t->npods++];
        snprintf(p->name, sizeof(p->name), "%s", fl[0]);
        p->cpu = atoll(fl[1]);
        p->mem_mib = atoll(fl[2]);
        p->num_gpu = atoi(fl[3]);
        p->gpu_milli = p->num_gpu > 1 ? 1000 : atoi(fl[4]);
        if (p->num_gpu == 0)
            p->gpu_milli = 0;
        snprintf(p->spec, sizeof(p->spec), "%s", fl[5]);
    }
    fclose(f);
    qsort(t->pods, t->npods, sizeof(*t->pods), cmp_pod_name);
}

/* ---- a seeded generator: xoshiro256** ------------------------------------ */

struct rng {
    uint64_t s[4];
};

static uint64_t splitmix(uint64_t *x)
{
    uint64_t z = (*x += 0x9e3779b97f4a7c15ULL);

    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

static void rng_seed(struct rng *r, uint64_t seed)
{
    for (int i = 0; i < 4; i++)
        r->s[i] = splitmix(&seed);
}

static uint64_t rotl(uint64_t x, int k)
{
    return (x << k) | (x >> (64 - k));
}

static uint64_t rng_next(struct rng *r)
{
    uint64_t *s = r->s, out = rotl(s[1] * 5, 7) * 9, t = s[1] << 17;

    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = rotl(s[3], 45);
    return out;
}

static size_t rng_below(struct rng *r, size_t n)
{
    return (size_t)(rng_next(r) % n);
}

static double rng_unit(struct rng *r)
{
    return (double)(rng_next(r) >> 11) / 9007199254740992.0;
}

/* ---- synthetic traces ----------------------------------------------------- */

static struct trace derive(const struct trace *base, const char *name)
{
    struct trace t = *base;

    t.name = name;
    t.pods = calloc(base->npods, sizeof(*t.pods));
    t.npods = 0;
    return t;
}

static struct trace trace_frac(const struct trace *base)
{
    struct trace t = derive(base, "frac");

    for (size_t i = 0; i < base->npods; i++)
        if (base->pods[i].num_gpu == 1 && base->pods[i].gpu_milli < 1000)
            t.pods[t.npods++] = base->pods[i];
    return t;
}

static struct trace trace_multi(const struct trace *base)
{
    struct trace t = derive(base, "multi");
    struct rng r;

    rng_seed(&r, 7);
    for (size_t i = 0; i < base->npods; i++) {
        struct tpod p = base->pods[i];

        if (p.num_gpu > 0 && rng_unit(&r) < 0.8) {
            double u = rng_unit(&r);
            int k = u < 0.5 ? 2 : u < 0.8 ? 4 : 8;
            int64_t per_cpu = p.cpu / p.num_gpu, per_mem = p.mem_mib / p.num_gpu;

            if (p.num_gpu == 1) {
                per_cpu = p.cpu;
                per_mem = p.mem_mib;
            }
            p.num_gpu = k;
            p.gpu_milli = 1000;
            p.cpu = per_cpu * k > 96000 ? 96000 : per_cpu * k;
            p.mem_mib = per_mem * k > 393216 ? 393216 : per_mem * k;
        }
        t.pods[t.npods++] = p;
    }
    return t;
}

static bool node_could_host(const struct tnode *n, const struct tpod *p)
{
    return n->gpus >= p->num_gpu && n->cpu >= p->cpu && n->mem_mib >= p->mem_mib;
}

/* A model drawn by its share of the GPUs on nodes that could host p; "" if none. */
static const char *draw_model(const struct trace *t, const struct tpod *p, struct rng *r,
                              const char *other)
{
    int64_t total = 0, pick;

    for (size_t i = 0; i < t->nnodes; i++)
        if (node_could_host(&t->nodes[i], p) && strcmp(t->nodes[i].model, other) != 0)
            total += t->nodes[i].gpus;
    if (total == 0)
        return "";
    pick = (int64_t)rng_below(r, (size_t)total);
    for (size_t i = 0; i < t->nnodes; i++) {
        if (!node_could_host(&t->nodes[i], p) || strcmp(t->nodes[i].model, other) == 0)
            continue;
        pick -= t->nodes[i].gpus;
        if (pick < 0)
            return t->nodes[i].model;
    }
    return "";
}

static struct trace trace_spec33(const struct trace *base)
{
    struct trace t = derive(base, "spec33");
    struct rng r;

    rng_seed(&r, 7);
    for (size_t i = 0; i < base->npods; i++) {
        struct tpod p = base->pods[i];

        if (p.num_gpu > 0 && rng_unit(&r) < 0.33) {
            const char *a = draw_model(base, &p, &r, "");
            const char *b = rng_unit(&r) < 1.0 / 3 ? draw_model(base, &p, &r, a) : "";

            snprintf(p.spec, sizeof(p.spec), "%s%s%s", a, *b ? "|" : "", b);
        }
        t.pods[t.npods++] = p;
    }
    return t;
}

/* ---- the arrival stream --------------------------------------------------- */

/* The trace shuffled, then draws with replacement up to tune x capacity. */
static size_t make_stream(const struct trace *t, uint64_t seed, double tune, size_t **out)
{
    struct rng r;
    size_t cap = t->npods + 1024, n = t->npods;
    size_t *s = malloc(cap * sizeof(*s));
    int64_t asked = 0, target = (int64_t)(tune * (double)t->gpu_capacity_milli);

    rng_seed(&r, seed);
    for (size_t i = 0; i < n; i++) {
        s[i] = i;
        asked += pod_gpu_milli(&t->pods[i]);
    }
    for (size_t i = n; i > 1; i--) {
        size_t j = rng_below(&r, i), x = s[i - 1];

        s[i - 1] = s[j];
        s[j] = x;
    }
    while (asked < target) {
        size_t k = rng_below(&r, t->npods);

        if (asked + pod_gpu_milli(&t->pods[k]) > target)
            break;
        s = grow(s, n, &cap, sizeof(*s));
        s[n++] = k;
        asked += pod_gpu_milli(&t->pods[k]);
    }
    *out = s;
    return n;
}

/* ---- one run through the engine ------------------------------------------ */

struct result {
    double alloc[NLEVELS];     /* % of GPU capacity */
    double unplaced[NLEVELS];  /* pods that found no place, by then */
    double final_alloc;        /* % at the end of the stream */
    double gpus_unallocated;   /* at the end */
    double frag_gpus;          /* the engine's fragmentation measure at the end */
    double idle[3];            /* free GPU at the end: whole devices, slivers < 0.2, other shared */
    double us_per_pod;
    double heap_mib;           /* engine heap in use at the end */
    size_t pods;
};

static void add_nodes(struct policy_cluster *c, const struct trace *t, const char **names)
{
    for (size_t i = 0; i < t->nnodes; i++) {
        const struct tnode *n = &t->nodes[i];
        struct policy_label labels[] = {{MODEL_LABEL, n->model}};
        struct policy_node_spec s = {.name = n->name, .labels = labels, .nlabels = 1,
                                     .cpu_milli = n->cpu, .memory_bytes = n->mem_mib * MiB,
                                     .pods = 1001, .gpus = n->gpus};

        if (policy_node_upsert(c, &s) != POLICY_OK) {
            fprintf(stderr, "node %s refused\n", n->name);
            exit(1);
        }
        names[i] = n->name;
    }
}

/* The model constraint as a pod would carry it: nodeSelector for one, affinity for several. */
struct model_ask {
    struct policy_label sel;
    const char *values[8];
    char buf[64];
    struct policy_selector_req req;
    struct policy_selector_term term;
};

static void model_ask_fill(struct model_ask *m, const char *spec, struct policy_pod_spec *s)
{
    size_t n = 0;
    char *tok, *save = NULL;

    if (!*spec)
        return;
    snprintf(m->buf, sizeof(m->buf), "%s", spec);
    for (tok = strtok_r(m->buf, "|", &save); tok && n < 8; tok = strtok_r(NULL, "|", &save))
        if (*tok)
            m->values[n++] = tok;
    if (n == 1) {
        m->sel = (struct policy_label){MODEL_LABEL, m->values[0]};
        s->node_selector = &m->sel;
        s->nnode_selector = 1;
        return;
    }
    m->req = (struct policy_selector_req){MODEL_LABEL, POLICY_SELECT_IN, m->values, n};
    m->term = (struct policy_selector_term){&m->req, 1};
    s->affinity = &m->term;
    s->naffinity = 1;
}

static double now_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

/* kube-scheduler's cycle for one pod; returns whether it was bound. */
static bool place(struct policy_cluster *c, const char *name, const char **nodes, size_t nn,
                  const char **fit, int *scores)
{
    struct policy_filter_result fr;
    struct policy_bind_result br;
    size_t n = 0, best = 0;
    bool bound = false;

    if (policy_filter(c, "openb", name, nodes, nn, 0, &fr) != POLICY_OK)
        return false;
    for (size_t i = 0; i < fr.n; i++)
        if (fr.verdicts[i].fit == POLICY_FITS)
            fit[n++] = nodes[i];
    policy_filter_result_cleanup(&fr);
    if (n == 0 || policy_prioritize(c, "openb", name, fit, n, 0, scores) != POLICY_OK)
        return false;
    for (size_t i = 1; i < n; i++)
        if (scores[i] > scores[best])
            best = i;
    if (policy_bind(c, "openb", name, fit[best], 0, &br) != POLICY_OK)
        return false;
    for (size_t k = 0; br.outcome == POLICY_BIND_COMMIT && k < br.n; k++) {
        policy_bind_done(c, "openb", br.members[k].name, true, NULL);
        bound = true;
    }
    policy_bind_result_cleanup(&br);
    return bound;
}

/* Where the free GPU is at the end: whole devices, slivers under 0.2, the rest of shared ones. */
static void count_idle(const struct policy_node_view *v, void *ctx)
{
    double *idle = ctx;

    idle[0] += (double)(v->gpus - v->gpus_whole_used - (int64_t)v->ngroups);
    for (size_t i = 0; i < v->ngroups; i++) {
        int32_t left = 1000 - v->groups[i].used_milli;

        idle[left < 200 ? 1 : 2] += left / 1000.0;
    }
}

static void run(const struct trace *t, enum policy_strategy strategy, uint64_t seed, double tune,
                struct result *res)
{
    struct policy_options o = {.strategy = strategy};
    struct policy_cluster *c = policy_cluster_new(&o);
    const char **nodes = calloc(t->nnodes, sizeof(*nodes));
    const char **fit = calloc(t->nnodes, sizeof(*fit));
    int *scores = calloc(t->nnodes, sizeof(*scores));
    double sum[NLEVELS] = {0}, t0;
    size_t cnt[NLEVELS] = {0}, *stream, n, unplaced = 0;
    int64_t arrived = 0, allocated = 0;

    memset(res, 0, sizeof(*res));
    add_nodes(c, t, nodes);
    n = make_stream(t, seed, tune, &stream);
    t0 = now_ms();
    for (size_t i = 0; i < n; i++) {
        const struct tpod *tp = &t->pods[stream[i]];
        struct model_ask m = {0};
        char name[64], uid[64];
        struct policy_pod_spec s = {.namespace_ = "openb", .name = name, .uid = uid,
                                    .cpu_milli = tp->cpu, .memory_bytes = tp->mem_mib * MiB,
                                    .managed = true};
        double ratio;
        long level;

        snprintf(name, sizeof(name), "%s-%zu", tp->name, i);
        snprintf(uid, sizeof(uid), "u%zu", i);
        if (tp->num_gpu == 1 && tp->gpu_milli < 1000)
            s.gpu_share_milli = tp->gpu_milli;
        else
            s.gpus = tp->num_gpu;
        model_ask_fill(&m, tp->spec, &s);
        policy_pod_upsert(c, &s, 0);
        arrived += pod_gpu_milli(tp);
        if (place(c, name, nodes, t->nnodes, fit, scores)) {
            allocated += pod_gpu_milli(tp);
        } else {
            unplaced++;
            policy_pod_forget(c, "openb", name); /* it never comes back */
        }
        ratio = 100.0 * (double)arrived / (double)t->gpu_capacity_milli;
        level = lround(ratio);
        for (int l = 0; l < NLEVELS; l++) {
            if (level != levels[l])
                continue;
            sum[l] += 100.0 * (double)allocated / (double)t->gpu_capacity_milli;
            cnt[l]++;
            res->unplaced[l] = (double)unplaced;
        }
    }
    res->us_per_pod = (now_ms() - t0) * 1000.0 / (double)n;
    res->pods = n;
    for (int l = 0; l < NLEVELS; l++)
        res->alloc[l] = cnt[l] ? sum[l] / (double)cnt[l] : NAN;
    res->final_alloc = 100.0 * (double)allocated / (double)t->gpu_capacity_milli;
    res->gpus_unallocated = (double)(t->gpu_capacity_milli - allocated) / 1000.0;
    res->frag_gpus = policy_gpu_fragmentation(c) / 1000.0;
    policy_each_node(c, count_idle, res->idle);
    res->heap_mib = (double)mallinfo2().uordblks / (double)MiB;
    free(stream);
    free(nodes);
    free(fit);
    free(scores);
    policy_cluster_free(c);
}

/* ---- the table ------------------------------------------------------------ */

static const struct {
    const char *name;
    double mean[NLEVELS], std[NLEVELS];
} paper[] = {
    {"Random", {86.30, 86.88, 87.28, 87.47}, {0.32, 0.33, 0.30, 0.30}},
    {"DotProd", {90.62, 90.70, 90.77, 90.85}, {0.18, 0.19, 0.19, 0.19}},
    {"GpuClustering", {91.65, 91.73, 91.80, 91.88}, {0.58, 0.59, 0.59, 0.59}},
    {"GpuPacking", {91.78, 91.86, 91.92, 92.00}, {0.51, 0.52, 0.52, 0.52}},
    {"BestFit", {92.86, 92.94, 93.00, 93.08}, {0.14, 0.13, 0.13, 0.13}},
    {"FGD", {95.23, 95.30, 95.35, 95.39}, {0.10, 0.10, 0.09, 0.08}},
};

static const char *strategy_name(enum policy_strategy s)
{
    static const char *const names[] = {"binpack", "spread", "fragmentation"};

    return (unsigned)s < 3 ? names[s] : "?";
}

static void mean_std(const double *v, int n, double *mean, double *std)
{
    double m = 0, q = 0;

    for (int i = 0; i < n; i++)
        m += v[i];
    m /= n;
    for (int i = 0; i < n; i++)
        q += (v[i] - m) * (v[i] - m);
    *mean = m;
    *std = n > 1 ? sqrt(q / (n - 1)) : 0;
}

/* Mean and deviation over the seeds of the double at offset off in each result. */
static double seed_mean(const struct result *r, int n, size_t off, double *std)
{
    double v[MAX_SEEDS], m;

    for (int k = 0; k < n; k++)
        v[k] = *(const double *)((const char *)&r[k] + off);
    mean_std(v, n, &m, std);
    return m;
}

static void print_row(const char *who, const struct result *r, int nseeds, bool csv,
                      const char *trace)
{
    double s;

    if (csv) {
        for (int k = 0; k < nseeds; k++)
            printf("%s,%s,%d,%.3f,%.3f,%.3f,%.3f,%.0f,%.0f,%.0f,%.0f,%.2f,%.2f,%.2f,%.2f,%.2f,"
                   "%.1f,%.1f\n",
                   trace, who, 42 + k, r[k].alloc[0], r[k].alloc[1], r[k].alloc[2],
                   r[k].alloc[3], r[k].unplaced[0], r[k].unplaced[1], r[k].unplaced[2],
                   r[k].unplaced[3], r[k].gpus_unallocated, r[k].frag_gpus, r[k].idle[0],
                   r[k].idle[1], r[k].idle[2], r[k].us_per_pod, r[k].heap_mib);
        return;
    }
    printf("muster %-14s", who);
    for (int l = 0; l < NLEVELS; l++) {
        double m = seed_mean(r, nseeds, offsetof(struct result, alloc[l]), &s);

        printf(" %6.2f ± %4.2f", m, s);
    }
    printf("  ");
    for (int l = 0; l < NLEVELS; l++)
        printf(" %5.0f", seed_mean(r, nseeds, offsetof(struct result, unplaced[l]), &s));
    printf("   %6.1f", seed_mean(r, nseeds, offsetof(struct result, gpus_unallocated), &s));
    printf(" %5.0f/%3.0f/%3.0f", seed_mean(r, nseeds, offsetof(struct result, idle[0]), &s),
           seed_mean(r, nseeds, offsetof(struct result, idle[1]), &s),
           seed_mean(r, nseeds, offsetof(struct result, idle[2]), &s));
    printf("  %6.1f", seed_mean(r, nseeds, offsetof(struct result, frag_gpus), &s));
    printf("  %7.1f", seed_mean(r, nseeds, offsetof(struct result, us_per_pod), &s));
    printf("  %6.1f\n", seed_mean(r, nseeds, offsetof(struct result, heap_mib), &s));
}

static void print_header(const struct trace *t, int nseeds, size_t pods)
{
    printf("\ntrace %s: %zu nodes, %lld GPUs, %zu pods in the trace, ~%zu arrivals; %d seeds "
           "(%d..%d)\n",
           t->name, t->nnodes, (long long)(t->gpu_capacity_milli / 1000), t->npods, pods,
           nseeds, 42, 41 + nseeds);
    printf("%-21s %-13s  %-13s  %-13s  %-13s   %-23s  %-7s %-13s  %-6s  %-7s  %s\n", "",
           "alloc @100%", "@110%", "@120%", "@130%", "unplaced pods @100..130", "GPUs",
           "where free", "frag", "us/pod", "heap");
    printf("%-21s %-60s   %-23s  %-7s %-13s  %-6s  %-7s  %s\n", "",
           "(GPU allocated / capacity, %)", "", "unalloc", "whole/<.2/rest", "GPUs", "", "MiB");
    if (strcmp(t->name, "openb") != 0)
        return;
    for (size_t i = 0; i < sizeof(paper) / sizeof(paper[0]); i++) {
        printf("paper  %-14s", paper[i].name);
        for (int l = 0; l < NLEVELS; l++)
            printf(" %6.2f ± %4.2f", paper[i].mean[l], paper[i].std[l]);
        printf("  %23s   %6.1f\n", "", 6212.0 * (1.0 - paper[i].mean[3] / 100.0));
    }
}

int main(int argc, char **argv)
{
    const char *dir = "/work/shared/traces/openb", *which = "openb";
    const char *strategies = "binpack,spread,fragmentation";
    int nseeds = 10;
    bool csv = false;
    struct trace base = {.name = "openb"}, traces[4];
    size_t ntraces = 0;
    struct rusage ru;

    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--trace") == 0 && i + 1 < argc)
            which = argv[++i];
        else if (strcmp(argv[i], "--seeds") == 0 && i + 1 < argc)
            nseeds = atoi(argv[++i]);
        else if (strcmp(argv[i], "--strategy") == 0 && i + 1 < argc)
            strategies = argv[++i];
        else if (strcmp(argv[i], "--dir") == 0 && i + 1 < argc)
            dir = argv[++i];
        else if (strcmp(argv[i], "--csv") == 0)
            csv = true;
        else {
            fprintf(stderr, "usage: %s [--trace openb|frac|multi|spec33|all] [--seeds N] "
                            "[--strategy binpack,spread,fragmentation] [--dir DIR] [--csv]\n",
                    argv[0]);
            return 2;
        }
    }
    if (nseeds < 1 || nseeds > MAX_SEEDS)
        nseeds = 10;
    load_nodes(&base, dir);
    load_pods(&base, dir);
    if (strcmp(which, "openb") == 0 || strcmp(which, "all") == 0)
        traces[ntraces++] = base;
    if (strcmp(which, "frac") == 0 || strcmp(which, "all") == 0)
        traces[ntraces++] = trace_frac(&base);
    if (strcmp(which, "multi") == 0 || strcmp(which, "all") == 0)
        traces[ntraces++] = trace_multi(&base);
    if (strcmp(which, "spec33") == 0 || strcmp(which, "all") == 0)
        traces[ntraces++] = trace_spec33(&base);
    if (csv)
        printf("trace,strategy,seed,alloc100,alloc110,alloc120,alloc130,unplaced100,"
               "unplaced110,unplaced120,unplaced130,gpus_unallocated,frag_gpus,idle_whole,"
               "idle_sliver,idle_shared,us_per_pod,heap_mib\n");
    for (size_t k = 0; k < ntraces; k++) {
        struct result res[MAX_SEEDS];
        bool header = false;

        for (enum policy_strategy s = POLICY_BINPACK; s <= POLICY_FRAGMENTATION; s++) {
            if (!strstr(strategies, strategy_name(s)))
                continue;
            for (int seed = 0; seed < nseeds; seed++)
                run(&traces[k], s, 42 + (uint64_t)seed, 1.3, &res[seed]);
            if (!csv && !header) {
                print_header(&traces[k], nseeds, res[0].pods);
                header = true;
            }
            print_row(strategy_name(s), res, nseeds, csv, traces[k].name);
            fflush(stdout);
        }
    }
    getrusage(RUSAGE_SELF, &ru);
    if (!csv)
        printf("\npeak RSS of the whole bench: %.1f MiB\n", (double)ru.ru_maxrss / 1024.0);
    for (size_t k = 0; k < ntraces; k++)
        if (traces[k].pods != base.pods)
            free(traces[k].pods);
    free(base.pods);
    free(base.nodes);
    return 0;
}
