/*
 * test_hold_model.c - room held for members to come (policy_hold_spec, a RayJob's submitter),
 * checked on random scenarios: RayJob-like gangs (a head, workers, a held submitter), plain
 * gangs and pods of their own arrive in queues that lend and reclaim; kube-scheduler's cycles
 * (filter, bind) run in random order; evictions are carried out and the victims made again;
 * submitters arrive once their cluster is bound (or never, once asked for); jobs end; nodes go
 * and come back; time passes plans' and holds' deadlines.
 *
 * After every step, by this checker's own arithmetic from the engine's views:
 *   - never double counted: each node's cpu, memory and pods in use are exactly its pods'
 *     (placed, at bind, bound, leaving) plus the room held on it; each queue's allocated and
 *     reserved exactly its placed pods' plus its gangs' held room;
 *   - never given to another gang: no node holds more than it has, held room included, and a
 *     submitter arriving while its room is held is planned on that very node;
 *   - the barrier never waits for a member that cannot exist yet (no held stand-in named in a
 *     WAIT), no stand-in is ever an eviction, and a running gang's room for its submitter is
 *     held somewhere or given up, never left pending.
 *
 * HOLD_MODEL_SCENARIOS (default 2000) scenarios from HOLD_MODEL_SEED (default 1); HM_DEBUG=1
 * prints the pods when evictions are taken, and each eviction.
 */
#include <check.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "policy.h"

#define HM_NODES 4
#define HM_JOBS 14
#define HM_PODS_PER_JOB 6
#define HM_STEPS 220
#define GiB (1LL << 30)
#define MiB (1LL << 20)
#define NS "ns"

enum hm_kind { HM_RAYJOB, HM_GANG, HM_SINGLE };

struct hm_pod {
    char name[24];
    int64_t cpu, gpus;
    const char *sub;
    bool exists;
    int generation;
};

struct hm_job {
    enum hm_kind kind;
    bool live;
    char key[24];
    const char *queue;
    int32_t prio;
    int npods;
    struct hm_pod pods[HM_PODS_PER_JOB];
    int32_t workers;
    /* RayJob: its submitter, asked for (the operator made the Job) or made */
    int64_t submitter_cpu;
    bool asked, submitter_made;
    struct hm_pod submitter;
};

struct hm {
    uint64_t rng;
    struct policy_cluster *c;
    int64_t now;
    int nnodes;
    bool node_gone[HM_NODES];
    int64_t node_cpu[HM_NODES];
    int64_t node_gpus[HM_NODES];
    struct hm_job j[HM_JOBS];
    int njobs;
    char failure[512];
    uint64_t checks, arrivals_checked, evictions, commits, expired;
};

static uint64_t rnd(struct hm *m)
{
    uint64_t z = (m->rng += 0x9e3779b97f4a7c15ULL);

    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

static int pick(struct hm *m, int n)
{
    return (int)(rnd(m) % (uint64_t)n);
}

static bool chance(struct hm *m, int percent)
{
    return pick(m, 100) < percent;
}

static void hm_fail(struct hm *m, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void hm_fail(struct hm *m, const char *fmt, ...)
{
    va_list ap;

    if (m->failure[0])
        return;
    va_start(ap, fmt);
    vsnprintf(m->failure, sizeof(m->failure), fmt, ap);
    va_end(ap);
}

/* ---- the world --------------------------------------------------------------------- */

static void node_up(struct hm *m, int i)
{
    char name[8];
    struct policy_node_spec s = {.name = name, .cpu_milli = m->node_cpu[i],
                                 .memory_bytes = 256 * GiB, .pods = 110, .gpus = m->node_gpus[i]};

    snprintf(name, sizeof(name), "n%d", i);
    policy_node_upsert(m->c, &s);
    m->node_gone[i] = false;
}

static void queues(struct hm *m)
{
    /* qa lends (quota 0: all it runs can be reclaimed), qb is owed everything, qc is limited. */
    static const char *const names[] = {"qa", "qb", "qc"};

    for (int i = 0; i < 3; i++) {
        struct policy_queue_spec q = {.name = names[i]};

        for (int r = 0; r < POLICY_RES_COUNT; r++) {
            q.quota.v[r] = i == 1 ? -1 : 0;
            q.limit.v[r] = -1;
            q.over_quota_weight.v[r] = 1;
        }
        if (i == 2)
            q.limit.v[POLICY_RES_CPU] = 6000;
        policy_queue_upsert(m->c, &q);
    }
}

static void pod_upsert(struct hm *m, struct hm_job *j, struct hm_pod *p, bool fresh)
{
    char uid[40];
    struct policy_pod_spec s = {.namespace_ = NS, .name = p->name, .uid = uid,
                                .priority = j->prio, .cpu_milli = p->cpu,
                                .memory_bytes = 200 * MiB, .gpus = p->gpus,
                                .gang = j->kind == HM_SINGLE ? NULL : j->key,
                                .subgroup = p->sub, .gang_head = p->sub && !strcmp(p->sub, "head"),
                                .queue = j->queue, .managed = true};

    if (fresh)
        p->generation++;
    snprintf(uid, sizeof(uid), "%s-%d", p->name, p->generation);
    policy_pod_upsert(m->c, &s, m->now);
    p->exists = true;
}

static void hold(struct hm *m, struct hm_job *j)
{
    struct policy_hold_spec h = {.gang = j->key, .subgroup = "submitter", .owner = "RayJob ns/x",
                                 .cpu_milli = j->submitter_cpu, .memory_bytes = 200 * MiB,
                                 .asked = j->asked};

    if (policy_hold_upsert(m->c, &h, m->now) != POLICY_OK)
        hm_fail(m, "hold on %s refused", j->key);
}

static void arrive(struct hm *m)
{
    static const char *const qs[] = {"qa", "qb", "qc"};
    struct hm_job *j;
    int id;

    if (m->njobs == HM_JOBS)
        return;
    id = m->njobs++;
    j = &m->j[id];
    memset(j, 0, sizeof(*j));
    j->live = true;
    j->kind = pick(m, 10) < 5 ? HM_RAYJOB : pick(m, 2) ? HM_GANG : HM_SINGLE;
    j->queue = qs[pick(m, 3)];
    j->prio = pick(m, 3) * 40;
    snprintf(j->key, sizeof(j->key), NS "/j%d", id);
    if (j->kind == HM_SINGLE) {
        j->npods = 1;
        snprintf(j->pods[0].name, sizeof(j->pods[0].name), "j%d", id);
        snprintf(j->key, sizeof(j->key), NS "/j%d", id);
        j->pods[0].cpu = (1 + pick(m, 4)) * 500;
        j->pods[0].gpus = pick(m, 2);
    } else {
        j->workers = 1 + pick(m, 3);
        j->npods = 1 + j->workers;
        for (int i = 0; i < j->npods; i++) {
            struct hm_pod *p = &j->pods[i];

            snprintf(p->name, sizeof(p->name), "j%d-%d", id, i);
            p->cpu = (1 + pick(m, 4)) * 500;
            p->gpus = i == 0 ? 0 : pick(m, 2);
            p->sub = j->kind == HM_RAYJOB ? (i == 0 ? "head" : "workers") : NULL;
        }
    }
    if (j->kind == HM_RAYJOB) {
        struct policy_subgroup_spec subs[] = {{"head", 1}, {"workers", j->workers}};
        struct policy_gang_spec g = {.key = j->key, .min_members = 1 + j->workers,
                                     .subgroups = subs, .nsubgroups = 2, .queue = j->queue,
                                     .source = POLICY_GANG_WORKLOAD,
                                     .owner_kind = POLICY_OWNER_RAYJOB, .owner = j->key};

        j->submitter_cpu = (1 + pick(m, 3)) * 250;
        snprintf(j->submitter.name, sizeof(j->submitter.name), "j%d-sub", id);
        j->submitter.cpu = j->submitter_cpu;
        j->submitter.sub = "submitter";
        policy_gang_upsert(m->c, &g);
        /* The RayJob comes before or after its cluster's pods (separate watches). */
        if (chance(m, 50))
            hold(m, j);
        for (int i = 0; i < j->npods; i++)
            pod_upsert(m, j, &j->pods[i], true);
        hold(m, j);
        return;
    }
    if (j->kind == HM_GANG) {
        struct policy_gang_spec g = {.key = j->key, .min_members = j->npods, .queue = j->queue,
                                     .source = POLICY_GANG_PODGROUP};

        policy_gang_upsert(m->c, &g);
    }
    for (int i = 0; i < j->npods; i++)
        pod_upsert(m, j, &j->pods[i], true);
}

static void end_job(struct hm *m, struct hm_job *j)
{
    if (j->kind == HM_RAYJOB)
        policy_hold_forget(m->c, j->key, "submitter");
    for (int i = 0; i < j->npods; i++)
        if (j->pods[i].exists)
            policy_pod_forget(m->c, NS, j->pods[i].name);
    if (j->submitter.exists)
        policy_pod_forget(m->c, NS, j->submitter.name);
    if (j->kind != HM_SINGLE)
        policy_gang_forget(m->c, j->key,
                           j->kind == HM_RAYJOB ? POLICY_GANG_WORKLOAD : POLICY_GANG_PODGROUP);
    j->live = false;
}

/* ---- the checks -------------------------------------------------------------------------- */

struct use {
    int64_t cpu[HM_NODES], mem[HM_NODES], pods[HM_NODES];
    int64_t stays[HM_NODES]; /* cpu of what stays (not leaving): at most the node's */
    struct policy_resources queue[3];
};

static int node_of(const char *name)
{
    return name && name[0] == 'n' ? atoi(name + 1) : -1;
}

static int queue_of(const char *name)
{
    return name && name[0] == 'q' ? name[1] - 'a' : -1;
}

struct check_ctx {
    struct hm *m;
    struct use u;
};

static void add_pod(const struct policy_pod_view *v, void *ctx)
{
    struct check_ctx *x = ctx;
    int n = node_of(v->node), q = queue_of(v->queue);

    /* A pod bound to a node that went holds nothing until the node comes back. */
    if (v->phase == POLICY_POD_PENDING || n < 0 || x->m->node_gone[n])
        return;
    x->u.cpu[n] += v->cpu_milli;
    x->u.mem[n] += v->memory_bytes;
    x->u.pods[n]++;
    x->u.stays[n] += v->phase != POLICY_POD_EVICTING ? v->cpu_milli : 0;
    /* Leaving pods are out of their queues (they hold their node until they are gone). */
    if (q >= 0 && v->phase != POLICY_POD_EVICTING) {
        x->u.queue[q].v[POLICY_RES_CPU] += v->cpu_milli;
        x->u.queue[q].v[POLICY_RES_MEMORY] += v->memory_bytes;
        x->u.queue[q].v[POLICY_RES_GPU] += v->gpus * POLICY_GPU_MILLI;
    }
}

static void add_gang(const struct policy_gang_view *v, void *ctx)
{
    struct check_ctx *x = ctx;
    int32_t held = 0;

    for (size_t i = 0; i < v->nholds; i++) {
        const struct policy_hold_view *h = &v->holds[i];
        int n = node_of(h->node), q = queue_of(v->queue);

        if (h->state != POLICY_HOLD_WAITING) {
            if (h->node)
                hm_fail(x->m, "gang %s: a %s hold still on node %s", v->key,
                     policy_hold_state_name(h->state), h->node);
            continue;
        }
        if (n < 0) {
            if (v->state == POLICY_GANG_BOUND)
                hm_fail(x->m, "gang %s runs with its submitter's room held nowhere", v->key);
            continue;
        }
        held++;
        x->u.stays[n] += h->cpu_milli;
        x->u.cpu[n] += h->cpu_milli;
        x->u.mem[n] += h->memory_bytes;
        x->u.pods[n]++;
        if (q >= 0) {
            x->u.queue[q].v[POLICY_RES_CPU] += h->cpu_milli;
            x->u.queue[q].v[POLICY_RES_MEMORY] += h->memory_bytes;
        }
    }
    /* No gang partly bound: none of it, or its minimum (the held room standing in). */
    if (v->bound > 0 && v->bound + held < v->min_members && v->state != POLICY_GANG_BOUND)
        hm_fail(x->m, "gang %s partly bound: %d (+%d held) of %d", v->key, v->bound, held,
             v->min_members);
}

static void check_node(const struct policy_node_view *v, void *ctx)
{
    struct check_ctx *x = ctx;
    int n = node_of(v->name);

    if (n < 0)
        return;
    if (v->cpu_used != x->u.cpu[n] || v->memory_used != x->u.mem[n] || v->pods_used != x->u.pods[n])
        hm_fail(x->m, "node %s counts cpu %lld, memory %lld, pods %lld; its pods and held room are "
                   "%lld, %lld, %lld",
             v->name, (long long)v->cpu_used, (long long)v->memory_used, (long long)v->pods_used,
             (long long)x->u.cpu[n], (long long)x->u.mem[n], (long long)x->u.pods[n]);
    /* Leaving pods hold their node while the gang they make room for is planned there. */
    if (x->u.stays[n] > v->cpu_milli)
        hm_fail(x->m, "node %s over-booked: cpu %lld of %lld stays", v->name,
                (long long)x->u.stays[n], (long long)v->cpu_milli);
}

static void check_queue(const struct policy_queue_view *v, void *ctx)
{
    struct check_ctx *x = ctx;
    int q = queue_of(v->name);

    for (int r = 0; q >= 0 && r < POLICY_RES_COUNT; r++)
        if (v->allocated.v[r] + v->reserved.v[r] != x->u.queue[q].v[r])
            hm_fail(x->m, "queue %s counts %s %lld; its pods and held room are %lld", v->name,
                 policy_resource_name(r), (long long)(v->allocated.v[r] + v->reserved.v[r]),
                 (long long)x->u.queue[q].v[r]);
}

static void check(struct hm *m, const char *after)
{
    struct check_ctx x = {.m = m};
    char was[sizeof(m->failure)];

    m->checks++;
    snprintf(was, sizeof(was), "%s", m->failure);
    policy_each_pod(m->c, add_pod, &x);
    policy_each_gang(m->c, add_gang, &x);
    policy_each_node(m->c, check_node, &x);
    policy_each_queue(m->c, check_queue, &x);
    if (!was[0] && m->failure[0]) {
        char more[sizeof(m->failure)];

        snprintf(more, sizeof(more), "%s (after %s)", m->failure, after);
        snprintf(m->failure, sizeof(m->failure), "%s", more);
    }
}

/* ---- kube-scheduler, the evictor, the operator ---------------------------------------- */

/* HM_DEBUG: what the engine shows when evictions are taken, and every eviction. */
static void dbg_pod(const struct policy_pod_view *v, void *ctx)
{
    (void)ctx;
    fprintf(stderr, "  %s gang %s sub %s %s node %s: %s\n", v->name, v->gang,
            v->subgroup ? v->subgroup : "-", policy_pod_phase_name(v->phase),
            v->node ? v->node : "-", v->reason ? v->reason : "");
}

static void carry_out_evictions(struct hm *m)
{
    struct policy_eviction *ev = NULL;
    size_t n = 0;

    if (policy_evictions_take(m->c, &ev, &n) != POLICY_OK)
        return;
    if (getenv("HM_DEBUG") && n)
        policy_each_pod(m->c, dbg_pod, NULL);
    for (size_t i = 0; i < n; i++) {
        if (strstr(ev[i].name, " of "))
            hm_fail(m, "a stand-in evicted: %s", ev[i].name);
        m->evictions++;
        if (getenv("HM_DEBUG"))
            fprintf(stderr, "evict %s of %s for %s: %s\n", ev[i].name, ev[i].gang, ev[i].by,
                    ev[i].reason);
        policy_eviction_done(m->c, ev[i].namespace_, ev[i].name, true, NULL, m->now);
        policy_pod_forget(m->c, ev[i].namespace_, ev[i].name);
    }
    check(m, "evictions");
    /* The operator (or the Job controller) makes them again. */
    for (size_t i = 0; i < n; i++)
        for (int k = 0; k < m->njobs; k++)
            for (int p = 0; p < m->j[k].npods; p++)
                if (m->j[k].live && strcmp(m->j[k].pods[p].name, ev[i].name) == 0)
                    pod_upsert(m, &m->j[k], &m->j[k].pods[p], true);
    policy_evictions_free(ev, n);
}

static void cycle(struct hm *m, const char *pod)
{
    const char *names[HM_NODES];
    char buf[HM_NODES][8];
    size_t n = 0;
    struct policy_filter_result fr;
    struct policy_bind_result br;
    const char *chosen = NULL;

    for (int i = 0; i < m->nnodes; i++)
        if (!m->node_gone[i]) {
            snprintf(buf[n], sizeof(buf[n]), "n%d", i);
            names[n] = buf[n];
            n++;
        }
    if (policy_filter(m->c, NS, pod, names, n, m->now, &fr) != POLICY_OK)
        return;
    for (size_t i = 0; i < n && !chosen; i++)
        if (fr.verdicts[i].fit == POLICY_FITS)
            chosen = names[i];
    if (fr.evictions) {
        check(m, "an eviction decision");
        carry_out_evictions(m);
    }
    if (chosen && policy_bind(m->c, NS, pod, chosen, m->now, &br) == POLICY_OK) {
        if (br.outcome == POLICY_BIND_WAIT && br.reason && strstr(br.reason, " of RayJob"))
            hm_fail(m, "the barrier waits for a stand-in: %s", br.reason);
        for (size_t i = 0; br.outcome == POLICY_BIND_COMMIT && i < br.n; i++) {
            policy_bind_done(m->c, br.members[i].namespace_, br.members[i].name, true, NULL);
            m->commits++;
        }
        policy_bind_result_cleanup(&br);
    }
    policy_filter_result_cleanup(&fr);
    check(m, "a cycle");
}

/* A pending or planned pod at random, for kube-scheduler to ask about. */
static const char *some_pod(struct hm *m)
{
    for (int tries = 0; tries < 8; tries++) {
        struct hm_job *j = &m->j[pick(m, m->njobs)];
        struct hm_pod *p;
        struct policy_pod_view v;

        if (!j->live)
            continue;
        p = j->submitter_made && chance(m, 30) ? &j->submitter : &j->pods[pick(m, j->npods)];
        if (p->exists && policy_pod_view_get(m->c, NS, p->name, &v) &&
            (v.phase == POLICY_POD_PENDING || v.phase == POLICY_POD_PLANNED))
            return p->name;
    }
    return NULL;
}

/* The operator makes a bound cluster's submitter: it takes the room held for it. */
static void submitter_arrives(struct hm *m, struct hm_job *j)
{
    struct policy_gang_view g;
    struct policy_pod_view v;
    char held_on[16] = "";

    if (!policy_gang_view_get(m->c, j->key, &g) || g.state != POLICY_GANG_BOUND)
        return;
    if (g.nholds == 1 && g.holds[0].state == POLICY_HOLD_WAITING && g.holds[0].node)
        snprintf(held_on, sizeof(held_on), "%s", g.holds[0].node);
    j->submitter_made = true;
    pod_upsert(m, j, &j->submitter, true);
    check(m, "a submitter's arrival");
    if (!*held_on)
        return;
    m->arrivals_checked++;
    if (!policy_pod_view_get(m->c, NS, j->submitter.name, &v) || v.phase != POLICY_POD_PLANNED ||
        !v.node || strcmp(v.node, held_on) != 0)
        hm_fail(m, "submitter %s arrived to room held on %s: it is %s on %s", j->submitter.name,
             held_on, policy_pod_phase_name(v.phase), v.node ? v.node : "no node");
}

/* A node deleted: the pod garbage collector deletes the pods bound there, their controller
 * makes them again (a submitter's Job too). */
static void pods_of_gone_node(struct hm *m, const char *node)
{
    for (int k = 0; k < m->njobs; k++) {
        struct hm_job *j = &m->j[k];

        for (int i = 0; j->live && i <= j->npods; i++) {
            struct hm_pod *p = i < j->npods ? &j->pods[i] : &j->submitter;
            struct policy_pod_view v;

            if (!p->exists || !policy_pod_view_get(m->c, NS, p->name, &v) ||
                v.phase != POLICY_POD_BOUND || !v.node || strcmp(v.node, node) != 0)
                continue;
            policy_pod_forget(m->c, NS, p->name);
            pod_upsert(m, j, p, true);
        }
    }
}

static void step(struct hm *m)
{
    int r = pick(m, 100);
    struct hm_job *j = m->njobs ? &m->j[pick(m, m->njobs)] : NULL;
    const char *pod;

    if (r < 8 || !j) {
        arrive(m);
        check(m, "an arrival");
    } else if (r < 65) {
        if ((pod = some_pod(m)))
            cycle(m, pod);
    } else if (r < 75) {
        if (j->live && j->kind == HM_RAYJOB && !j->submitter_made && !j->asked)
            submitter_arrives(m, j);
    } else if (r < 78) {
        /* Asked for, never made (a restart that missed it, a submitter another scheduler ran). */
        if (j->live && j->kind == HM_RAYJOB && !j->submitter_made) {
            j->asked = true;
            hold(m, j);
            check(m, "a hold asked for");
        }
    } else if (r < 84) {
        if (j->live) {
            end_job(m, j);
            check(m, "a job's end");
        }
    } else if (r < 86) {
        int n = pick(m, m->nnodes);
        char name[8];

        snprintf(name, sizeof(name), "n%d", n);
        if (m->node_gone[n]) {
            node_up(m, n);
        } else {
            policy_node_forget(m->c, name);
            m->node_gone[n] = true;
            pods_of_gone_node(m, name);
        }
        check(m, "a node's change");
    } else if (r < 90) {
        size_t decided = 0;

        policy_evict_unasked(m->c, m->now, 500, 2, &decided);
        check(m, "a look at gangs nobody asked about");
        carry_out_evictions(m);
    } else {
        m->now += chance(m, 20) ? 70000 : 1000;
        policy_expire(m->c, m->now);
        check(m, "time passing");
    }
}

static void run(uint64_t seed, struct hm *m)
{
    struct policy_options o = {.strategy = (enum policy_strategy)(seed % 3), .plan_ttl_ms = 60000};

    memset(m, 0, sizeof(*m));
    m->rng = seed * 0x2545F4914F6CDD1DULL + 7;
    m->now = 5000000;
    m->c = policy_cluster_new(&o);
    ck_assert_ptr_nonnull(m->c);
    m->nnodes = 2 + pick(m, HM_NODES - 1);
    for (int i = 0; i < m->nnodes; i++) {
        m->node_cpu[i] = (4 + pick(m, 9)) * 1000;
        m->node_gpus[i] = 2 + pick(m, 3);
        node_up(m, i);
    }
    queues(m);
    for (int s = 0; s < HM_STEPS && !m->failure[0]; s++)
        step(m);
}

static uint64_t env_or(const char *name, uint64_t fallback)
{
    const char *v = getenv(name);

    return v && *v ? strtoull(v, NULL, 10) : fallback;
}

START_TEST(held_room_never_given_away_nor_counted_twice)
{
    uint64_t n = env_or("HOLD_MODEL_SCENARIOS", 2000), seed = env_or("HOLD_MODEL_SEED", 1);
    uint64_t checks = 0, arrivals = 0, evictions = 0, commits = 0;
    struct hm *m = malloc(sizeof(*m));

    ck_assert_ptr_nonnull(m);
    for (uint64_t i = 0; i < n; i++) {
        run(seed + i, m);
        checks += m->checks;
        arrivals += m->arrivals_checked;
        evictions += m->evictions;
        commits += m->commits;
        policy_cluster_free(m->c);
        ck_assert_msg(!m->failure[0], "seed %llu: %s", (unsigned long long)(seed + i),
                      m->failure);
    }
    printf("hold model: %llu scenarios, %llu checks, %llu gang commits, %llu submitters arrived "
           "to held room, %llu evictions\n",
           (unsigned long long)n, (unsigned long long)checks, (unsigned long long)commits,
           (unsigned long long)arrivals, (unsigned long long)evictions);
    /* The runs exercised what they check. */
    ck_assert_uint_gt(arrivals, 0);
    ck_assert_uint_gt(evictions, 0);
    free(m);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("hold_model");
    TCase *tc = tcase_create("randomized");
    SRunner *sr;
    int failed;

    tcase_set_timeout(tc, 300);
    tcase_add_test(tc, held_room_never_given_away_nor_counted_twice);
    suite_add_tcase(s, tc);
    sr = srunner_create(s);
    srunner_run_all(sr, CK_ENV);
    failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
