/*
 * fuzz_engine.c - the engine (policy.h) driven by random sequences of what
 * the cluster and kube-scheduler do: nodes, queues, gangs and pods upserted
 * and forgotten, pods seen bound by the watch, filters over subsets of the
 * nodes, binds (to the planned node or another), cancels, Binding outcomes,
 * sharing paused, time passing. After every step the invariants hold:
 *
 *   - the books balance: each node's counted use is the sum of the pods on it;
 *   - no partial gang: a commit binds at least the gang's minimum (with what
 *     is bound already);
 *   - no node over allocatable where the engine placed a pod this step;
 *   - no shared GPU over one whole device;
 *   - no queue or ancestor over its limit where the engine reserved this step
 *     (FUZZ_ENGINE_NO_QUEUE_LIMITS=1 waives it, to fuzz on past a finding
 *     whose fix is pending);
 *   - no overflow (UBSan), no negative use, every reason a string.
 *
 * Nodes have GPUs of 16, 24, 40 or 80 GiB (or no memory label), so a
 * gpu-memory pod's share differs from node to node, and GPU limits come in
 * halves of a GPU. Each step takes an opcode byte and a few argument bytes
 * from the input.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "policy.h"

#define NODES 4
#define QUEUES 3
#define GANGS 4
#define PODS 12
#define MAX_STEPS 400
#define MAX_FLIGHT 64

static struct policy_cluster *dumped; /* the engine dumped on a violation */
static int tracing = -1; /* FUZZ_ENGINE_TRACE=1: each step's opcode, for a crash file */

static void dump_pod(const struct policy_pod_view *v, void *ctx)
{
    (void)ctx;
    fprintf(stderr,
            "  pod %s gang %s queue %s phase %s node %s cpu %lld gpus %lld share %d x%d%s%s\n",
            v->name, v->gang, v->queue, policy_pod_phase_name(v->phase), v->node ? v->node : "-",
            (long long)v->cpu_milli, (long long)v->gpus, v->gpu_share_milli, v->gpu_devices,
            v->reason ? " reason: " : "", v->reason ? v->reason : "");
}

static void dump_queue(const struct policy_queue_view *v, void *ctx)
{
    (void)ctx;
    fprintf(stderr, "  queue %s parent %s", v->name, v->parent ? v->parent : "-");
    for (int r = 0; r < POLICY_RES_COUNT; r++)
        fprintf(stderr, " %s[limit %lld alloc %lld res %lld]", policy_resource_name(r),
                (long long)v->limit.v[r], (long long)v->allocated.v[r],
                (long long)v->reserved.v[r]);
    fprintf(stderr, "\n");
}

static void dump_node(const struct policy_node_view *v, void *ctx)
{
    (void)ctx;
    fprintf(stderr, "  node %s gpus %lld mem/gpu %lld whole %lld groups %zu:", v->name,
            (long long)v->gpus, (long long)v->gpu_memory_mib, (long long)v->gpus_whole_used,
            v->ngroups);
    for (size_t g = 0; g < v->ngroups; g++)
        fprintf(stderr, " %s=%d", v->groups[g].id, v->groups[g].used_milli);
    fprintf(stderr, "\n");
}

static void require(bool ok, const char *what, int step)
{
    if (ok)
        return;
    fprintf(stderr, "fuzz: property violated at step %d: %s\n", step, what);
    if (dumped && getenv("FUZZ_ENGINE_TRACE")) {
        policy_each_node(dumped, dump_node, NULL);
        policy_each_queue(dumped, dump_queue, NULL);
        policy_each_pod(dumped, dump_pod, NULL);
    }
    abort();
}

/* ---- the input ----------------------------------------------------------------------- */

struct input {
    const uint8_t *p;
    size_t n;
};

static unsigned take(struct input *in, unsigned mod)
{
    unsigned v;

    if (in->n == 0)
        return 0;
    v = *in->p++;
    in->n--;
    return mod ? v % mod : v;
}

/* Amounts the fuzzer reaches: mostly small, sometimes at or past the engine's caps. */
static int64_t amount(struct input *in, int64_t unit, int64_t cap)
{
    unsigned k = take(in, 32);

    if (k == 31)
        return INT64_MAX;
    if (k == 30)
        return cap;
    if (k == 29)
        return cap + 1;
    if (k == 28)
        return -unit;
    return (int64_t)k * unit;
}

/* ---- the world -------------------------------------------------------------------------- */

static const char *const node_names[NODES] = {"n0", "n1", "n2", "n3"};
static const char *const queue_names[QUEUES] = {"q0", "q1", "q2"};
static const char *const gang_keys[GANGS] = {"lab/g0", "lab/g1", "lab/g2", "lab/g3"};
static const char *const pod_names[PODS] = {"p0", "p1", "p2", "p3", "p4",  "p5",
                                            "p6", "p7", "p8", "p9", "p10", "p11"};

struct flight {
    int pod;
    int node; /* index into node_names */
};

struct world {
    struct policy_cluster *c;
    int64_t now;
    int step;
    struct flight flight[MAX_FLIGHT]; /* committed members whose Binding is not answered */
    int nflight;
    /* Each pod's last spec, as the watch would send it again (its strings are static names,
     * its uid in uids). */
    struct policy_pod_spec spec[PODS];
    char uids[PODS][16];
    bool known[PODS];
};

/* GPU memory per device, by bits 4 and 5 of a node's flags (bit 0: labelled at all). */
static const struct {
    int64_t mib;
    struct policy_label label[1];
} gpu_sizes[4] = {
    {40960, {{"nvidia.com/gpu.memory", "40960"}}},
    {16384, {{"nvidia.com/gpu.memory", "16384"}}},
    {81920, {{"nvidia.com/gpu.memory", "81920"}}},
    {24576, {{"nvidia.com/gpu.memory", "24576"}}},
};

static void upsert_node(struct world *w, struct input *in)
{
    static const struct policy_taint taint = {"dedicated", "x", POLICY_TAINT_NO_SCHEDULE};
    unsigned flags = take(in, 0), size = (flags >> 4) & 3;
    struct policy_node_spec s = {.name = node_names[take(in, NODES)],
                                 .cpu_milli = amount(in, 1000, POLICY_MAX_CPU_MILLI),
                                 .memory_bytes =
                                     amount(in, INT64_C(1) << 30, POLICY_MAX_MEMORY_BYTES),
                                 .pods = (int64_t)take(in, 8),
                                 .gpus = (int64_t)take(in, 5),
                                 .gpu_memory_mib = flags & 1 ? gpu_sizes[size].mib : 0,
                                 .labels = flags & 1 ? gpu_sizes[size].label : NULL,
                                 .nlabels = flags & 1 ? 1 : 0,
                                 .taints = flags & 2 ? &taint : NULL,
                                 .ntaints = flags & 2 ? 1 : 0,
                                 .unschedulable = (flags & 12) == 12};

    if (tracing > 0)
        fprintf(stderr, "  upsert node %s -> %d\n", s.name, policy_node_upsert(w->c, &s));
    else
        policy_node_upsert(w->c, &s);
}

static void upsert_queue(struct world *w, struct input *in)
{
    unsigned q = take(in, QUEUES), parent = take(in, QUEUES + 1);
    struct policy_queue_spec s = {.name = queue_names[q],
                                  .parent =
                                      parent < QUEUES && parent != q ? queue_names[parent] : NULL,
                                  .priority = (int32_t)take(in, 3)};

    for (int r = 0; r < POLICY_RES_COUNT; r++) {
        unsigned k = take(in, 8);

        s.quota.v[r] = k == 0 ? -1 : k == 7 ? INT64_MAX : (int64_t)(k - 1) * 1000;
        k = take(in, 8);
        /* GPU limits in halves of a GPU: 0.5 is issue 11's queue that held 1.6. */
        s.limit.v[r] = k < 2    ? -1
                       : k == 7 ? INT64_MAX
                                : (int64_t)(k - 1) * (r == POLICY_RES_GPU ? 500 : 1000);
        k = take(in, 8);
        s.over_quota_weight.v[r] = k == 7 ? INT64_MAX : (int64_t)k;
    }
    policy_queue_upsert(w->c, &s);
}

static void upsert_gang(struct world *w, struct input *in)
{
    unsigned g = take(in, GANGS), q = take(in, QUEUES + 1);
    struct policy_gang_spec s = {.key = gang_keys[g],
                                 .min_members = (int32_t)take(in, 5),
                                 .queue = q < QUEUES ? queue_names[q] : NULL,
                                 .source = (enum policy_gang_source)take(in, POLICY_GANG_SOURCES)};

    policy_gang_upsert(w->c, &s);
}

/* A pod; bound != 0 says the watch saw it bound to node bound - 1. */
static void upsert_pod(struct world *w, struct input *in, bool seen_bound)
{
    static const struct policy_toleration tol = {"dedicated", POLICY_TOLERATE_EQUAL, "x", -1};
    unsigned i = take(in, PODS), g = take(in, GANGS + 1), q = take(in, QUEUES + 1);
    unsigned kind = take(in, 4), flags = take(in, 0);
    char uid[16];
    struct policy_pod_spec s = {.namespace_ = "lab",
                                .name = pod_names[i],
                                .uid = uid,
                                .cpu_milli = amount(in, 500, POLICY_MAX_CPU_MILLI),
                                .memory_bytes =
                                    amount(in, INT64_C(1) << 30, POLICY_MAX_MEMORY_BYTES),
                                .gang = g < GANGS ? gang_keys[g] : NULL,
                                .gang_head = flags & 1,
                                .queue = q < QUEUES ? queue_names[q] : NULL,
                                .managed = (flags & 6) != 6,
                                .tolerations = flags & 8 ? &tol : NULL,
                                .ntolerations = flags & 8 ? 1 : 0,
                                .priority = flags & 16 ? 100 : 0};

    snprintf(uid, sizeof(uid), "u%u-%u", i, (flags >> 5) & 1);
    if (kind == 1)
        s.gpus = (int64_t)take(in, 3);
    else if (kind == 2)
        s.gpu_share_milli = (int32_t)(take(in, 10) * 100);
    else if (kind == 3)
        s.gpu_memory_mib = (int64_t)take(in, 9) * 10240; /* up to 80 GiB */
    if (seen_bound)
        s.node = node_names[take(in, NODES)];
    w->spec[i] = s;
    memcpy(w->uids[i], uid, sizeof(uid));
    w->spec[i].uid = w->uids[i];
    w->spec[i].node = NULL;
    w->known[i] = true;
    if (tracing > 0)
        fprintf(stderr, "  upsert pod %s uid %s gang %s node %s cpu %lld -> %d\n", s.name, uid,
                s.gang ? s.gang : "-", s.node ? s.node : "-", (long long)s.cpu_milli,
                policy_pod_upsert(w->c, &s, w->now));
    else
        policy_pod_upsert(w->c, &s, w->now);
}

/* ---- the invariants ----------------------------------------------------------------------- */

struct use {
    __int128 cpu, memory, pods, whole;
};

/* What a step leaves of a pod: no pointer into the engine outlives the step. */
struct pod_seen {
    enum policy_pod_phase phase;
    int node; /* index into node_names; -1: none, or a node the world does not know */
    int64_t cpu, memory, gpus;
};

struct snapshot {
    struct use node_sum[NODES];     /* recounted from the pods */
    struct use node_staying[NODES]; /* the same without pods being evicted */
    bool node_evicting[NODES];      /* a pod on it is being evicted: its room is promised */
    struct policy_node_view node[NODES];
    bool node_known[NODES];
    struct pod_seen pod[PODS];
    bool pod_known[PODS];
    struct policy_queue_view queue[QUEUES];
    bool queue_known[QUEUES];
    int step;
};

static int index_of(const char *const *names, int n, const char *name)
{
    for (int i = 0; name && i < n; i++)
        if (strcmp(names[i], name) == 0)
            return i;
    return -1;
}

static void see_node(const struct policy_node_view *v, void *ctx)
{
    struct snapshot *s = ctx;
    int i = index_of(node_names, NODES, v->name);

    require(i >= 0, "a node the world never made", s->step);
    s->node[i] = *v;
    s->node[i].name = NULL;
    s->node[i].groups = NULL;
    s->node_known[i] = true;
    for (size_t g = 0; g < v->ngroups; g++)
        require(v->groups[g].used_milli >= 0 && v->groups[g].used_milli <= POLICY_GPU_MILLI,
                "a shared GPU holds at most one device's worth", s->step);
    require(v->cpu_used >= 0 && v->memory_used >= 0 && v->pods_used >= 0 && v->gpus_whole_used >= 0,
            "no node's use is negative", s->step);
}

static void see_pod(const struct policy_pod_view *v, void *ctx)
{
    struct snapshot *s = ctx;
    int i = index_of(pod_names, PODS, v->name);

    require(i >= 0, "a pod the world never made", s->step);
    s->pod[i] = (struct pod_seen){v->phase, index_of(node_names, NODES, v->node), v->cpu_milli,
                                  v->memory_bytes, v->gpus};
    s->pod_known[i] = true;
    if (v->reason)
        (void)strlen(v->reason);
}

static void see_queue(const struct policy_queue_view *v, void *ctx)
{
    struct snapshot *s = ctx;
    int i = index_of(queue_names, QUEUES, v->name);

    if (i < 0)
        return; /* the default queue */
    s->queue[i] = *v;
    s->queue[i].name = s->queue[i].parent = NULL;
    s->queue_known[i] = true;
    for (int r = 0; r < POLICY_RES_COUNT; r++)
        require(v->allocated.v[r] >= 0 && v->reserved.v[r] >= 0, "no queue's use is negative",
                s->step);
}

static void snapshot(struct world *w, struct snapshot *s)
{
    memset(s, 0, sizeof(*s));
    s->step = w->step;
    policy_each_node(w->c, see_node, s);
    policy_each_pod(w->c, see_pod, s);
    policy_each_queue(w->c, see_queue, s);
    for (int i = 0; i < PODS; i++) {
        const struct pod_seen *p = &s->pod[i];
        int n = p->node;

        if (!s->pod_known[i] || p->phase == POLICY_POD_PENDING || n < 0 || !s->node_known[n])
            continue;
        s->node_sum[n].cpu += p->cpu;
        s->node_sum[n].memory += p->memory;
        s->node_sum[n].pods += 1;
        s->node_sum[n].whole += p->gpus;
        if (p->phase == POLICY_POD_EVICTING) {
            s->node_evicting[n] = true;
            continue;
        }
        s->node_staying[n].cpu += p->cpu;
        s->node_staying[n].memory += p->memory;
        s->node_staying[n].pods += 1;
        s->node_staying[n].whole += p->gpus;
    }
}

static int64_t sat(__int128 v)
{
    return v > INT64_MAX ? INT64_MAX : v < INT64_MIN ? INT64_MIN : (int64_t)v;
}

/* The pod was placed by the engine in this step: a new node, or a new place. */
static bool newly_placed(const struct snapshot *before, const struct snapshot *after, int i)
{
    const struct pod_seen *a = &after->pod[i], *b = &before->pod[i];

    if (!after->pod_known[i] || (a->phase != POLICY_POD_PLANNED && a->phase != POLICY_POD_WAITING))
        return false;
    return !before->pod_known[i] || b->phase == POLICY_POD_PENDING || b->node != a->node;
}

/*
 * placing: this step was one where the engine places (a filter or a bind). A
 * spec change (a queue's limit lowered, a gang moved to another queue) moves
 * or keeps what is reserved; it does not reserve anew.
 */
static void check(struct world *w, const struct snapshot *before, const struct snapshot *after,
                  bool placing)
{
    static int waive_queues = -1;
    bool gained[NODES] = {false}, reserved_more[QUEUES] = {false};

    if (waive_queues < 0)
        waive_queues = getenv("FUZZ_ENGINE_NO_QUEUE_LIMITS") != NULL;
    for (int n = 0; n < NODES; n++) {
        const struct policy_node_view *v = &after->node[n];

        if (!after->node_known[n])
            continue;
        if (tracing > 0 && (v->cpu_used != sat(after->node_sum[n].cpu) ||
                            v->pods_used != sat(after->node_sum[n].pods)))
            fprintf(
                stderr, "  node %s counts cpu %lld pods %lld; its pods sum to cpu %lld pods %lld\n",
                node_names[n], (long long)v->cpu_used, (long long)v->pods_used,
                (long long)sat(after->node_sum[n].cpu), (long long)sat(after->node_sum[n].pods));
        require(v->cpu_used == sat(after->node_sum[n].cpu) &&
                    v->memory_used == sat(after->node_sum[n].memory) &&
                    v->pods_used == sat(after->node_sum[n].pods) &&
                    v->gpus_whole_used == sat(after->node_sum[n].whole),
                "a node's counted use is the sum of the pods on it", w->step);
    }
    for (int i = 0; i < PODS; i++) {
        int n = newly_placed(before, after, i) ? after->pod[i].node : -1;

        if (n >= 0 && placing)
            gained[n] = true;
    }
    for (int n = 0; n < NODES; n++) {
        const struct policy_node_view *v = &after->node[n];

        const struct use *a = &after->node_staying[n], *b = &before->node_staying[n];
        bool had = before->node_known[n];

        if (!gained[n])
            continue;
            /* Within allocatable once the pods being evicted are gone, unless pods seen bound
             * had it over already and nothing grew. */
#define WITHIN(field, alloc) (a->field <= v->alloc || (had && a->field <= b->field))
        require(WITHIN(cpu, cpu_milli) && WITHIN(memory, memory_bytes) && WITHIN(pods, pods),
                "a node the engine placed a pod on is within its allocatable", w->step);
#undef WITHIN
        require(after->node_evicting[n] || a->whole + (__int128)v->ngroups <= v->gpus ||
                    (had && a->whole <= b->whole && v->ngroups <= before->node[n].ngroups),
                "whole and shared devices placed are devices the node has", w->step);
    }
    for (int q = 0; q < QUEUES; q++)
        for (int r = 0; r < POLICY_RES_COUNT; r++)
            reserved_more[q] |= placing && after->queue_known[q] &&
                                after->queue[q].reserved.v[r] >
                                    (before->queue_known[q] ? before->queue[q].reserved.v[r] : 0);
    for (int q = 0; q < QUEUES && !waive_queues; q++) {
        const struct policy_queue_view *v = &after->queue[q];

        if (!reserved_more[q])
            continue;
        for (int r = 0; r < POLICY_RES_COUNT; r++) {
            __int128 used = (__int128)v->allocated.v[r] + v->reserved.v[r];
            __int128 had = before->queue_known[q] ? (__int128)before->queue[q].allocated.v[r] +
                                                        before->queue[q].reserved.v[r]
                                                  : 0;

            /* Over the limit only if it was already (bound pods are facts) and did not grow. */
            require(v->limit.v[r] < 0 || used <= v->limit.v[r] || used <= had,
                    "a queue the engine reserved in stays within its limit", w->step);
        }
    }
}

/* ---- the steps ---------------------------------------------------------------------------- */

static void filter(struct world *w, struct input *in, bool prioritize)
{
    const char *cand[NODES];
    unsigned mask = take(in, 16), i = take(in, PODS);
    struct policy_filter_result r;
    int scores[NODES];
    size_t n = 0;

    for (int k = 0; k < NODES; k++)
        if (mask & (1u << k) || mask == 0)
            cand[n++] = node_names[k];
    if (prioritize) {
        memset(scores, 0, sizeof(scores)); /* as the server presets them */
        policy_prioritize(w->c, "lab", pod_names[i], cand, n, w->now, scores);
        for (size_t k = 0; k < n; k++)
            require(scores[k] >= 0 && scores[k] <= POLICY_MAX_SCORE, "scores are 0..10", w->step);
        return;
    }
    if (policy_filter(w->c, "lab", pod_names[i], cand, n, w->now, &r) != POLICY_OK)
        return;
    require(r.n == n, "a verdict per candidate", w->step);
    for (size_t k = 0; k < r.n; k++)
        if (r.verdicts[k].reason)
            (void)strlen(r.verdicts[k].reason);
    policy_filter_result_cleanup(&r);
}

static void gang_view_of(struct world *w, int pod, struct policy_gang_view *g, bool *known)
{
    struct policy_pod_view pv;

    *known = policy_pod_view_get(w->c, "lab", pod_names[pod], &pv) &&
             policy_gang_view_get(w->c, pv.gang, g);
}

static void bind(struct world *w, struct input *in)
{
    unsigned i = take(in, PODS), k = take(in, NODES + 1);
    struct policy_pod_view pv;
    struct policy_gang_view g;
    struct policy_bind_result r;
    const char *node;
    bool known;

    if (!policy_pod_view_get(w->c, "lab", pod_names[i], &pv))
        pv.node = NULL;
    node = k < NODES ? node_names[k] : pv.node ? pv.node : node_names[0];
    gang_view_of(w, (int)i, &g, &known);
    if (policy_bind(w->c, "lab", pod_names[i], node, w->now, &r) != POLICY_OK) {
        policy_bind_result_cleanup(&r);
        return;
    }
    if (r.outcome == POLICY_BIND_COMMIT) {
        /* Gang keys are "ns/name"; a pod's own gang of one is "ns/pod". */
        if (known && g.state != POLICY_GANG_BOUND && strchr(g.key, '/') &&
            strcmp(strchr(g.key, '/') + 1, pod_names[i]) != 0)
            require((int32_t)r.n + g.bound >= g.min_members,
                    "a commit binds the gang's minimum, with what is bound already", w->step);
        for (size_t m = 0; m < r.n && w->nflight < MAX_FLIGHT; m++) {
            int p = index_of(pod_names, PODS, r.members[m].name);

            require(p >= 0 && r.members[m].node != NULL, "a commit names pods and nodes", w->step);
            w->flight[w->nflight++] =
                (struct flight){p, index_of(node_names, NODES, r.members[m].node)};
            require(w->flight[w->nflight - 1].node >= 0, "a commit names a known node", w->step);
        }
    }
    if (r.reason)
        (void)strlen(r.reason);
    policy_bind_result_cleanup(&r);
}

static void bind_done(struct world *w, struct input *in)
{
    int k;

    if (w->nflight == 0)
        return;
    struct flight f;
    bool ok;

    k = (int)take(in, (unsigned)w->nflight);
    f = w->flight[k];
    ok = take(in, 4) != 0;
    policy_bind_done(w->c, "lab", pod_names[f.pod], ok, "the API server refused it");
    w->flight[k] = w->flight[--w->nflight];
    if (ok && w->known[f.pod] && take(in, 4) != 0) {
        /* The watch sees the Binding: the same pod, now with its node. */
        struct policy_pod_spec s = w->spec[f.pod];

        s.node = node_names[f.node];
        policy_pod_upsert(w->c, &s, w->now);
    }
}

/* One step; true when it was one where the engine places pods. */
static bool step(struct world *w, struct input *in)
{
    char why[256];
    unsigned op = take(in, 16);

    if (tracing < 0)
        tracing = getenv("FUZZ_ENGINE_TRACE") != NULL;
    if (tracing)
        fprintf(stderr, "step %d: op %u\n", w->step, op);
    switch (op) {
    case 0:
        upsert_node(w, in);
        break;
    case 1: {
        const char *n = node_names[take(in, NODES)];
        int rc = policy_node_forget(w->c, n);

        if (tracing > 0)
            fprintf(stderr, "  forget node %s -> %d\n", n, rc);
        break;
    }
    case 2:
        upsert_queue(w, in);
        break;
    case 3:
        policy_queue_forget(w->c, queue_names[take(in, QUEUES)]);
        break;
    case 4:
        upsert_gang(w, in);
        break;
    case 5:
        policy_gang_forget(w->c, gang_keys[take(in, GANGS)],
                           (enum policy_gang_source)take(in, POLICY_GANG_SOURCES));
        break;
    case 6:
    case 7:
        upsert_pod(w, in, false);
        break;
    case 8:
        upsert_pod(w, in, true);
        break;
    case 9: {
        unsigned i = take(in, PODS);

        policy_pod_forget(w->c, "lab", pod_names[i]);
        w->known[i] = false;
        break;
    }
    case 10:
    case 11:
        filter(w, in, false);
        break;
    case 12:
        filter(w, in, true);
        break;
    case 13:
        bind(w, in);
        break;
    case 14:
        if (take(in, 2))
            bind_done(w, in);
        else
            policy_bind_cancel(w->c, "lab", pod_names[take(in, PODS)], why, sizeof(why));
        break;
    case 15:
        if (take(in, 2))
            policy_node_pause_sharing(w->c, node_names[take(in, NODES)], w->now + 5000);
        w->now += (int64_t)take(in, 0) * 1000;
        policy_expire(w->c, w->now);
        break;
    }
    return op == 10 || op == 11 || op == 13;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct policy_options o = {.strategy = size > 0 && data[0] & 1 ? POLICY_SPREAD : POLICY_BINPACK,
                               .plan_ttl_ms = 30000};
    struct world w = {.c = policy_cluster_new(&o), .now = 1000};
    struct input in = {data, size};
    struct snapshot *before = malloc(sizeof(*before)), *after = malloc(sizeof(*after)), *t;

    if (!w.c || !before || !after)
        abort();
    dumped = w.c;
    snapshot(&w, before);
    for (w.step = 0; in.n > 0 && w.step < MAX_STEPS; w.step++) {
        bool placing = step(&w, &in);

        w.now += 10;
        snapshot(&w, after);
        check(&w, before, after, placing);
        t = before;
        before = after;
        after = t;
    }
    free(before);
    free(after);
    policy_cluster_free(w.c);
    return 0;
}
