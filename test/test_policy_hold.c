/*
 * test_policy_hold.c - room held in a gang for a member that does not exist yet (a RayJob's
 * submitter, made by KubeRay only once the cluster is ready: policy_hold_spec), and what a
 * gang's owner changes (a RayJob named in its reasons; a RayService's upgrade that waits for
 * its queue, never taking the running cluster's room).
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "policy.h"

#define GiB (1LL << 30)
#define MiB (1LL << 20)

static struct policy_cluster *C;
static int64_t NOW;

static void setup(void)
{
    struct policy_options o = {.strategy = POLICY_BINPACK, .plan_ttl_ms = 60000};

    C = policy_cluster_new(&o);
    ck_assert_ptr_nonnull(C);
    NOW = 1000000;
}

static void teardown(void)
{
    policy_cluster_free(C);
    C = NULL;
}

static void add_node(const char *name, int64_t cpu_milli, int64_t gpus)
{
    struct policy_node_spec n = {.name = name, .cpu_milli = cpu_milli, .memory_bytes = 64 * GiB,
                                 .pods = 110, .gpus = gpus};

    ck_assert_int_eq(policy_node_upsert(C, &n), POLICY_OK);
}

/* quota of every resource (0, or -1: unlimited), cpu and gpu limits (-1: none); burst: a
 * RayService upgrade may go over them. */
static void add_queue(const char *name, int64_t quota, int64_t cpu_limit, int64_t gpu_limit,
                      bool burst)
{
    struct policy_queue_spec q = {.name = name, .upgrade_burst = burst};

    for (int r = 0; r < POLICY_RES_COUNT; r++) {
        q.quota.v[r] = quota;
        q.limit.v[r] = -1;
        q.over_quota_weight.v[r] = 1;
    }
    q.limit.v[POLICY_RES_CPU] = cpu_limit;
    q.limit.v[POLICY_RES_GPU] = gpu_limit;
    ck_assert_int_eq(policy_queue_upsert(C, &q), POLICY_OK);
}

/* A RayCluster's gang: head 1, workers n; made by owner (kind NONE: nobody's). */
static void add_cluster(const char *key, const char *queue, int32_t workers,
                        enum policy_owner_kind kind, const char *owner)
{
    struct policy_subgroup_spec subs[] = {{"head", 1}, {"workers", workers}};
    struct policy_gang_spec g = {.key = key, .min_members = 1 + workers, .subgroups = subs,
                                 .nsubgroups = 2, .queue = queue,
                                 .source = POLICY_GANG_WORKLOAD, .owner_kind = kind,
                                 .owner = owner};

    ck_assert_int_eq(policy_gang_upsert(C, &g), POLICY_OK);
}

static void add_pod(const char *name, const char *gang, const char *sub, int64_t cpu_milli,
                    int64_t gpus, int32_t priority)
{
    char uid[96];
    struct policy_pod_spec p = {.namespace_ = "lab", .name = name, .uid = uid,
                                .cpu_milli = cpu_milli, .memory_bytes = GiB, .gpus = gpus,
                                .gang = gang, .subgroup = sub, .priority = priority,
                                .gang_head = sub && strcmp(sub, "head") == 0, .managed = true};

    snprintf(uid, sizeof(uid), "uid-%s", name);
    ck_assert_int_eq(policy_pod_upsert(C, &p, NOW), POLICY_OK);
}

/* The cluster lab/<job> of RayJob lab/<job>: a head (1 cpu) and `workers` workers of 1 GPU. */
static void rayjob_cluster(const char *job, const char *queue, int32_t workers)
{
    char key[64], owner[64], name[80];

    snprintf(key, sizeof(key), "lab/%s-c", job);
    snprintf(owner, sizeof(owner), "lab/%s", job);
    add_cluster(key, queue, workers, POLICY_OWNER_RAYJOB, owner);
    snprintf(name, sizeof(name), "%s-c-head", job);
    add_pod(name, key, "head", 1000, 0, 0);
    for (int i = 0; i < workers; i++) {
        snprintf(name, sizeof(name), "%s-c-workers-worker-%d", job, i);
        add_pod(name, key, "workers", 1000, 1, 0);
    }
}

static void hold(const char *gang, const char *owner, int64_t cpu_milli, bool asked)
{
    struct policy_hold_spec h = {.gang = gang, .subgroup = "submitter", .owner = owner,
                                 .cpu_milli = cpu_milli, .memory_bytes = 200 * MiB,
                                 .asked = asked};

    ck_assert_int_eq(policy_hold_upsert(C, &h, NOW), POLICY_OK);
}

static size_t all_nodes(const char **out)
{
    static const char *const names[] = {"n1", "n2", "n3"};
    size_t n = 0;

    for (size_t i = 0; i < 3; i++)
        if (policy_node_known(C, names[i]))
            out[n++] = names[i];
    return n;
}

/* kube-scheduler's cycle for one pod: filter over every node, bind the first that fits. */
static enum policy_bind_outcome schedule(const char *name, char *why, size_t len)
{
    const char *names[3];
    size_t n = all_nodes(names);
    struct policy_filter_result fr;
    struct policy_bind_result br;
    const char *chosen = NULL;
    enum policy_bind_outcome out;

    ck_assert_int_eq(policy_filter(C, "lab", name, names, n, NOW, &fr), POLICY_OK);
    for (size_t i = 0; i < n && !chosen; i++)
        if (fr.verdicts[i].fit == POLICY_FITS)
            chosen = names[i];
    snprintf(why, len, "%s", fr.reason ? fr.reason : "");
    policy_filter_result_cleanup(&fr);
    if (!chosen)
        return POLICY_BIND_REJECT;
    ck_assert_int_eq(policy_bind(C, "lab", name, chosen, NOW, &br), POLICY_OK);
    out = br.outcome;
    for (size_t i = 0; out == POLICY_BIND_COMMIT && i < br.n; i++)
        ck_assert_int_eq(
            policy_bind_done(C, br.members[i].namespace_, br.members[i].name, true, NULL),
            POLICY_OK);
    policy_bind_result_cleanup(&br);
    return out;
}

/* Schedule the cluster of `job` with `workers` workers: head first. */
static void schedule_cluster(const char *job, int32_t workers)
{
    char name[80], why[512];

    snprintf(name, sizeof(name), "%s-c-head", job);
    ck_assert_int_eq(schedule(name, why, sizeof(why)),
                     workers ? POLICY_BIND_WAIT : POLICY_BIND_COMMIT);
    for (int i = 0; i < workers; i++) {
        snprintf(name, sizeof(name), "%s-c-workers-worker-%d", job, i);
        ck_assert_msg(schedule(name, why, sizeof(why)) ==
                          (i + 1 == workers ? POLICY_BIND_COMMIT : POLICY_BIND_WAIT),
                      "%s: %s", name, why);
    }
}

static struct policy_gang_view gang(const char *key)
{
    struct policy_gang_view v;

    ck_assert_msg(policy_gang_view_get(C, key, &v), "no gang %s", key);
    return v;
}

static enum policy_pod_phase phase_of(const char *name)
{
    struct policy_pod_view v;

    ck_assert_msg(policy_pod_view_get(C, "lab", name, &v), "no pod %s", name);
    return v.phase;
}

static const char *node_of(const char *name)
{
    struct policy_pod_view v;

    ck_assert(policy_pod_view_get(C, "lab", name, &v));
    return v.node;
}

struct node_use {
    const char *name;
    int64_t cpu;
};

static void find_node(const struct policy_node_view *v, void *ctx)
{
    struct node_use *u = ctx;

    if (strcmp(v->name, u->name) == 0)
        u->cpu = v->cpu_used;
}

static int64_t cpu_used(const char *node)
{
    struct node_use u = {node, -1};

    policy_each_node(C, find_node, &u);
    return u.cpu;
}

struct queue_use {
    const char *name;
    struct policy_resources allocated, reserved;
};

static void find_queue(const struct policy_queue_view *v, void *ctx)
{
    struct queue_use *u = ctx;

    if (strcmp(v->name, u->name) == 0) {
        u->allocated = v->allocated;
        u->reserved = v->reserved;
    }
}

static struct queue_use queue_use(const char *name)
{
    struct queue_use u = {.name = name};

    policy_each_queue(C, find_queue, &u);
    return u;
}

/* What the views list as pods never includes a stand-in. */
static void no_standin(const struct policy_pod_view *v, void *ctx)
{
    ck_assert_msg(strstr(v->name, " of ") == NULL, "a stand-in listed as pod %s", v->name);
    (void)ctx;
}

/* ---- a RayJob's cluster and submitter are one gang ------------------------------ */

/*
 * n1 has room for the cluster (head 1 cpu, 2 x 1 cpu + 1 GPU) and the submitter (500m):
 * 3500m. The cluster binds whole without its submitter; the submitter's room stays held on
 * n1; a pod of another job that fits only there waits; the submitter, arriving, takes it.
 */
START_TEST(submitter_room_is_held_until_it_arrives)
{
    struct policy_gang_view g;
    char why[512];

    add_node("n1", 3500, 2);
    rayjob_cluster("train", NULL, 2);
    hold("lab/train-c", "RayJob lab/train", 500, false);
    g = gang("lab/train-c");
    ck_assert_int_eq(g.min_members, 4);
    ck_assert_int_eq(g.members, 3); /* the stand-in is no pod that exists */
    ck_assert_int_eq(g.nholds, 1);
    ck_assert_int_eq(g.holds[0].state, POLICY_HOLD_WAITING);
    ck_assert_ptr_null(g.holds[0].node);

    schedule_cluster("train", 2);
    g = gang("lab/train-c");
    ck_assert_int_eq(g.state, POLICY_GANG_BOUND);
    ck_assert_int_eq(g.bound, 3);
    ck_assert_str_eq(g.holds[0].node, "n1");
    ck_assert_str_eq(g.composition, "head 1/1, workers 2/2, submitter 1/1 held");
    ck_assert_int_eq(cpu_used("n1"), 3500);
    policy_each_pod(C, no_standin, NULL);

    /* Another job's pod of 500m: n1's last 500m is the submitter's. */
    add_pod("other", NULL, NULL, 500, 0, 0);
    ck_assert_int_eq(schedule("other", why, sizeof(why)), POLICY_BIND_REJECT);
    ck_assert_int_eq(phase_of("other"), POLICY_POD_PENDING);

    /* KubeRay makes the submitter once the cluster is ready: it takes the held room. */
    add_pod("train-abcde", "lab/train-c", "submitter", 500, 0, 0);
    ck_assert_int_eq(phase_of("train-abcde"), POLICY_POD_PLANNED);
    ck_assert_str_eq(node_of("train-abcde"), "n1");
    ck_assert_int_eq(cpu_used("n1"), 3500); /* not twice */
    ck_assert_int_eq(schedule("train-abcde", why, sizeof(why)), POLICY_BIND_COMMIT);
    ck_assert_int_eq(phase_of("train-abcde"), POLICY_POD_BOUND);
    g = gang("lab/train-c");
    ck_assert_int_eq(g.holds[0].state, POLICY_HOLD_ARRIVED);
    ck_assert_str_eq(g.composition, "head 1/1, workers 2/2, submitter 0/0 (+1 extra)");

    /* The submitter finished (a Job's pod Succeeds): nothing of it stays, the gang runs. */
    ck_assert_int_eq(policy_pod_forget(C, "lab", "train-abcde"), POLICY_OK);
    ck_assert_int_eq(cpu_used("n1"), 3000);
    ck_assert_int_eq(gang("lab/train-c").state, POLICY_GANG_BOUND);
    ck_assert_int_eq(schedule("other", why, sizeof(why)), POLICY_BIND_COMMIT);
}
END_TEST

/* The held room is counted against the queue: another job of the queue cannot take it. */
START_TEST(held_room_counts_against_the_queue)
{
    struct queue_use u;
    char why[512];

    add_node("n1", 16000, 8);
    add_queue("team-a", 0, 3500, -1, false);
    rayjob_cluster("train", "team-a", 2);
    hold("lab/train-c", "RayJob lab/train", 500, false);
    schedule_cluster("train", 2);
    u = queue_use("team-a");
    ck_assert_int_eq(u.allocated.v[POLICY_RES_CPU], 3000);
    ck_assert_int_eq(u.reserved.v[POLICY_RES_CPU], 500);
    ck_assert_int_eq(u.reserved.v[POLICY_RES_MEMORY], 200 * MiB);

    add_pod("other", NULL, NULL, 500, 0, 0);
    {
        struct policy_pod_spec p = {.namespace_ = "lab", .name = "other-q", .uid = "uid-oq",
                                    .cpu_milli = 500, .memory_bytes = GiB, .queue = "team-a",
                                    .managed = true};

        ck_assert_int_eq(policy_pod_upsert(C, &p, NOW), POLICY_OK);
    }
    ck_assert_int_eq(schedule("other-q", why, sizeof(why)), POLICY_BIND_REJECT);
    ck_assert_str_eq(why, "queue team-a: limit 3500m cpu, 3500m cpu in use, the pod needs 500m cpu");
    /* Outside the queue there is room. */
    ck_assert_int_eq(schedule("other", why, sizeof(why)), POLICY_BIND_COMMIT);
}
END_TEST

/* The job ends (KubeRay deletes the cluster; or the RayJob is suspended or deleted): the
 * hold is forgotten and nothing of it stays charged. */
START_TEST(forgotten_hold_frees_its_room)
{
    struct queue_use u;

    add_node("n1", 16000, 8);
    add_queue("team-a", 0, -1, -1, false);
    rayjob_cluster("train", "team-a", 2);
    hold("lab/train-c", "RayJob lab/train", 500, false);
    schedule_cluster("train", 2);
    ck_assert_int_eq(cpu_used("n1"), 3500);
    ck_assert_int_eq(policy_hold_forget(C, "lab/train-c", "submitter"), POLICY_OK);
    ck_assert_int_eq(cpu_used("n1"), 3000);
    u = queue_use("team-a");
    ck_assert_int_eq(u.reserved.v[POLICY_RES_CPU], 0);
    ck_assert_str_eq(gang("lab/train-c").composition, "head 1/1, workers 2/2");
    ck_assert_int_eq(policy_hold_forget(C, "lab/train-c", "submitter"), POLICY_ENOENT);

    /* The cluster deleted (shutdownAfterJobFinishes): its pods go, and so does the gang. */
    ck_assert_int_eq(policy_gang_forget(C, "lab/train-c", POLICY_GANG_WORKLOAD), POLICY_OK);
    ck_assert_int_eq(policy_pod_forget(C, "lab", "train-c-head"), POLICY_OK);
    ck_assert_int_eq(policy_pod_forget(C, "lab", "train-c-workers-worker-0"), POLICY_OK);
    ck_assert_int_eq(policy_pod_forget(C, "lab", "train-c-workers-worker-1"), POLICY_OK);
    ck_assert_int_eq(cpu_used("n1"), 0);
    u = queue_use("team-a");
    for (int r = 0; r < POLICY_RES_COUNT; r++)
        ck_assert_int_eq(u.allocated.v[r] + u.reserved.v[r], 0);
}
END_TEST

/* Asked for (KubeRay made the submitter's Job), a pod that never comes gives the room back
 * after planTTL; a hold told again keeps its state. */
START_TEST(asked_submitter_that_never_comes_expires)
{
    add_node("n1", 16000, 8);
    rayjob_cluster("train", NULL, 1);
    hold("lab/train-c", "RayJob lab/train", 500, false);
    schedule_cluster("train", 1);
    ck_assert_int_eq(cpu_used("n1"), 2500);
    hold("lab/train-c", "RayJob lab/train", 500, true);
    NOW += 30000;
    policy_expire(C, NOW);
    ck_assert_int_eq(gang("lab/train-c").holds[0].state, POLICY_HOLD_WAITING);
    NOW += 31000;
    policy_expire(C, NOW);
    ck_assert_int_eq(gang("lab/train-c").holds[0].state, POLICY_HOLD_EXPIRED);
    ck_assert_int_eq(cpu_used("n1"), 2000);
    hold("lab/train-c", "RayJob lab/train", 500, true);
    ck_assert_int_eq(gang("lab/train-c").holds[0].state, POLICY_HOLD_EXPIRED);
    ck_assert_int_eq(cpu_used("n1"), 2000);
}
END_TEST

/* The cluster's minimum is planned with the submitter's room: with room for the cluster but
 * not for the submitter too, nothing is placed, and the reason names the RayJob. */
START_TEST(cluster_waits_when_its_submitter_has_no_room)
{
    char why[512];

    add_node("n1", 3000, 2);
    rayjob_cluster("train", NULL, 2);
    hold("lab/train-c", "RayJob lab/train", 500, false);
    ck_assert_int_eq(schedule("train-c-head", why, sizeof(why)), POLICY_BIND_REJECT);
    ck_assert_str_eq(why, "RayJob lab/train: gang lab/train-c: the 4 members its minimum misses "
                          "ask 3500m cpu together, the nodes they may use have 3 cpu free "
                          "(submitter needs 1 more x 500m cpu, 200Mi memory); never: not even on "
                          "empty nodes");
    ck_assert_int_eq(gang("lab/train-c").state, POLICY_GANG_PENDING);
    ck_assert_int_eq(cpu_used("n1"), 0);
}
END_TEST

/* A RayJob bigger than its queue: nothing placed, the reason names the RayJob. */
START_TEST(rayjob_bigger_than_its_queue_says_so)
{
    char why[512];

    add_node("n1", 16000, 8);
    add_queue("team-a", 0, -1, 2000, false);
    rayjob_cluster("big", "team-a", 3);
    hold("lab/big-c", "RayJob lab/big", 500, false);
    ck_assert_int_eq(schedule("big-c-head", why, sizeof(why)), POLICY_BIND_REJECT);
    ck_assert_str_eq(why, "RayJob lab/big: queue team-a: limit 2 GPUs, 0 GPUs in use, the gang needs 3 GPUs; "
                          "never: more than the limit");
    ck_assert_str_eq(gang("lab/big-c").reason, why);
    ck_assert_int_eq(cpu_used("n1"), 0);
}
END_TEST

/* A plan that runs out before the cluster binds takes the held room along; planned again,
 * it holds it again. */
START_TEST(expired_plan_releases_the_held_room_too)
{
    char why[512];

    add_node("n1", 16000, 8);
    rayjob_cluster("train", NULL, 1);
    hold("lab/train-c", "RayJob lab/train", 500, false);
    ck_assert_int_eq(schedule("train-c-head", why, sizeof(why)), POLICY_BIND_WAIT);
    ck_assert_int_eq(cpu_used("n1"), 2500);
    NOW += 61000 + 20000;
    policy_expire(C, NOW);
    /* the head's bind is held: it stays; cancelled, the plan goes whole */
    ck_assert_int_eq(policy_bind_cancel(C, "lab", "train-c-head", why, sizeof(why)), POLICY_OK);
    NOW += 61000;
    policy_expire(C, NOW);
    ck_assert_int_eq(cpu_used("n1"), 0);
    ck_assert_ptr_null(gang("lab/train-c").holds[0].node);
    schedule_cluster("train", 1);
    ck_assert_int_eq(cpu_used("n1"), 2500);
}
END_TEST

/* After a restart the cluster's pods are seen bound before the RayJob: the hold told then
 * is placed at once (room allowing), and the gang counts as bound whole. */
START_TEST(hold_told_after_the_cluster_runs)
{
    struct policy_pod_spec p = {.namespace_ = "lab", .uid = "u", .cpu_milli = 1000,
                                .memory_bytes = GiB, .gang = "lab/train-c", .managed = true,
                                .node = "n1"};
    struct policy_gang_view g;

    add_node("n1", 16000, 8);
    add_cluster("lab/train-c", NULL, 1, POLICY_OWNER_RAYJOB, "lab/train");
    p.name = "train-c-head", p.subgroup = "head", p.uid = "u1";
    ck_assert_int_eq(policy_pod_upsert(C, &p, NOW), POLICY_OK);
    p.name = "train-c-workers-worker-0", p.subgroup = "workers", p.uid = "u2", p.gpus = 1;
    ck_assert_int_eq(policy_pod_upsert(C, &p, NOW), POLICY_OK);
    ck_assert_int_eq(gang("lab/train-c").state, POLICY_GANG_BOUND);
    hold("lab/train-c", "RayJob lab/train", 500, false);
    g = gang("lab/train-c");
    ck_assert_int_eq(g.state, POLICY_GANG_BOUND);
    ck_assert_str_eq(g.holds[0].node, "n1");
    ck_assert_int_eq(cpu_used("n1"), 2500);
}
END_TEST

/* The held room's node goes: held elsewhere; with no room elsewhere, lost (the gang runs). */
START_TEST(held_room_moves_when_its_node_goes)
{
    struct policy_pod_spec p = {.namespace_ = "lab", .cpu_milli = 1000, .memory_bytes = GiB,
                                .gang = "lab/train-c", .managed = true, .node = "n1"};

    add_node("n1", 2000, 8);
    add_node("n2", 1000, 0);
    add_node("n3", 1000, 0);
    add_cluster("lab/train-c", NULL, 1, POLICY_OWNER_RAYJOB, "lab/train");
    p.name = "train-c-head", p.subgroup = "head", p.uid = "u1";
    ck_assert_int_eq(policy_pod_upsert(C, &p, NOW), POLICY_OK);
    p.name = "train-c-workers-worker-0", p.subgroup = "workers", p.uid = "u2", p.gpus = 1;
    ck_assert_int_eq(policy_pod_upsert(C, &p, NOW), POLICY_OK);
    hold("lab/train-c", "RayJob lab/train", 500, false);
    ck_assert_str_eq(gang("lab/train-c").holds[0].node, "n2"); /* n1 is full */
    ck_assert_int_eq(policy_node_forget(C, "n2"), POLICY_OK);
    ck_assert_str_eq(gang("lab/train-c").holds[0].node, "n3");
    ck_assert_int_eq(policy_node_forget(C, "n3"), POLICY_OK);
    ck_assert_int_eq(gang("lab/train-c").holds[0].state, POLICY_HOLD_LOST);
    ck_assert_int_eq(gang("lab/train-c").state, POLICY_GANG_BOUND);
    ck_assert_str_eq(gang("lab/train-c").composition, "head 1/1, workers 1/1, submitter 0/0");
}
END_TEST

/* Reclaim takes a RayJob whole, the room held for its submitter with it: the victims are its
 * pods (no stand-in is evicted), and the room is counted once. */
START_TEST(reclaimed_rayjob_takes_its_held_room_along)
{
    struct policy_eviction *ev;
    size_t n;
    char why[512];

    add_node("n1", 3500, 2);
    add_queue("team-a", 0, -1, -1, false);  /* all it runs is over its quota */
    add_queue("team-b", -1, -1, -1, false); /* all it asks is within */
    rayjob_cluster("train", "team-a", 2);
    hold("lab/train-c", "RayJob lab/train", 500, false);
    schedule_cluster("train", 2);
    ck_assert_int_eq(cpu_used("n1"), 3500);
    /* team-b (quota everything) wants the whole node for 3 cpu and 2 GPUs. */
    add_cluster("lab/b", "team-b", 1, POLICY_OWNER_NONE, NULL);
    add_pod("b-head", "lab/b", "head", 2000, 1, 0);
    add_pod("b-w", "lab/b", "workers", 1000, 1, 0);
    ck_assert_int_eq(schedule("b-head", why, sizeof(why)), POLICY_BIND_REJECT);
    ck_assert_int_eq(policy_evictions_take(C, &ev, &n), POLICY_OK);
    ck_assert_int_eq(n, 3);
    for (size_t i = 0; i < n; i++) {
        ck_assert_str_eq(ev[i].gang, "lab/train-c");
        ck_assert_ptr_null(strstr(ev[i].name, " of "));
    }
    /* The cluster's room is held for lab/b until its pods are gone; the submitter's is free. */
    ck_assert_ptr_null(gang("lab/train-c").holds[0].node);
    for (size_t i = 0; i < n; i++) {
        ck_assert_int_eq(policy_eviction_done(C, ev[i].namespace_, ev[i].name, true, NULL, NOW),
                         POLICY_OK);
        ck_assert_int_eq(policy_pod_forget(C, ev[i].namespace_, ev[i].name), POLICY_OK);
    }
    policy_evictions_free(ev, n);
    ck_assert_int_eq(schedule("b-head", why, sizeof(why)), POLICY_BIND_WAIT);
    ck_assert_int_eq(schedule("b-w", why, sizeof(why)), POLICY_BIND_COMMIT);
    ck_assert_int_eq(cpu_used("n1"), 3000);
    ck_assert_int_eq(gang("lab/train-c").holds[0].state, POLICY_HOLD_WAITING);
}
END_TEST

/* ---- a RayService's upgrade --------------------------------------------------- */

/* The active cluster runs (4 GPUs of queue serve's limit 4); the upgrade's cluster waits,
 * in those words, and nothing evicts the active one for it: not even a higher priority. */
START_TEST(upgrade_waits_for_its_queue_and_never_evicts_the_active_cluster)
{
    struct policy_eviction *ev;
    size_t n;
    char why[512];

    add_node("n1", 32000, 8);
    add_queue("serve", 0, -1, 4000, false);
    add_cluster("lab/svc-a", "serve", 3, POLICY_OWNER_RAYSERVICE, "lab/svc");
    add_pod("svc-a-head", "lab/svc-a", "head", 1000, 1, 0);
    for (int i = 0; i < 3; i++) {
        char name[64];

        snprintf(name, sizeof(name), "svc-a-workers-worker-%d", i);
        add_pod(name, "lab/svc-a", "workers", 1000, 1, 0);
    }
    ck_assert_int_eq(schedule("svc-a-head", why, sizeof(why)), POLICY_BIND_WAIT);
    ck_assert_int_eq(schedule("svc-a-workers-worker-0", why, sizeof(why)), POLICY_BIND_WAIT);
    ck_assert_int_eq(schedule("svc-a-workers-worker-1", why, sizeof(why)), POLICY_BIND_WAIT);
    ck_assert_int_eq(schedule("svc-a-workers-worker-2", why, sizeof(why)), POLICY_BIND_COMMIT);

    /* The upgrade: a new cluster of the same RayService, at a higher priority even. */
    add_cluster("lab/svc-b", "serve", 3, POLICY_OWNER_RAYSERVICE, "lab/svc");
    add_pod("svc-b-head", "lab/svc-b", "head", 1000, 1, 90);
    for (int i = 0; i < 3; i++) {
        char name[64];

        snprintf(name, sizeof(name), "svc-b-workers-worker-%d", i);
        add_pod(name, "lab/svc-b", "workers", 1000, 1, 90);
    }
    ck_assert_int_eq(schedule("svc-b-head", why, sizeof(why)), POLICY_BIND_REJECT);
    ck_assert_str_eq(why, "upgrade of RayService lab/svc waits: queue serve: limit 4 GPUs, 4 GPUs "
                          "in use, the gang needs 4 GPUs");
    ck_assert_str_eq(gang("lab/svc-b").upgrade_of, "lab/svc-a");
    ck_assert_ptr_null(gang("lab/svc-a").upgrade_of);
    ck_assert_int_eq(policy_evictions_take(C, &ev, &n), POLICY_OK);
    ck_assert_int_eq(n, 0);
    policy_evictions_free(ev, n);
    ck_assert_int_eq(phase_of("svc-a-head"), POLICY_POD_BOUND);

    /* KubeRay deletes the old cluster once the new one serves; here the user gives up on it:
     * the upgrade then goes. */
    ck_assert_int_eq(policy_gang_forget(C, "lab/svc-a", POLICY_GANG_WORKLOAD), POLICY_OK);
    ck_assert_int_eq(policy_pod_forget(C, "lab", "svc-a-head"), POLICY_OK);
    for (int i = 0; i < 3; i++) {
        char name[64];

        snprintf(name, sizeof(name), "svc-a-workers-worker-%d", i);
        ck_assert_int_eq(policy_pod_forget(C, "lab", name), POLICY_OK);
    }
    ck_assert_ptr_null(gang("lab/svc-b").upgrade_of);
    ck_assert_int_eq(schedule("svc-b-head", why, sizeof(why)), POLICY_BIND_WAIT);
}
END_TEST

/* A queue that lets upgrades burst: the new cluster runs beside the old one, over the limit
 * by what the old one holds and no more. */
START_TEST(upgrade_burst_lets_both_run)
{
    char why[512];

    add_node("n1", 32000, 8);
    add_queue("serve", 0, -1, 4000, true);
    add_cluster("lab/svc-a", "serve", 3, POLICY_OWNER_RAYSERVICE, "lab/svc");
    add_pod("svc-a-head", "lab/svc-a", "head", 1000, 1, 0);
    for (int i = 0; i < 3; i++) {
        char name[64];

        snprintf(name, sizeof(name), "svc-a-workers-worker-%d", i);
        add_pod(name, "lab/svc-a", "workers", 1000, 1, 0);
    }
    schedule("svc-a-head", why, sizeof(why));
    schedule("svc-a-workers-worker-0", why, sizeof(why));
    schedule("svc-a-workers-worker-1", why, sizeof(why));
    ck_assert_int_eq(schedule("svc-a-workers-worker-2", why, sizeof(why)), POLICY_BIND_COMMIT);
    /* An upgrade one GPU bigger than the burst allows waits... */
    add_cluster("lab/svc-b", "serve", 4, POLICY_OWNER_RAYSERVICE, "lab/svc");
    add_pod("svc-b-head", "lab/svc-b", "head", 1000, 1, 0);
    for (int i = 0; i < 4; i++) {
        char name[64];

        snprintf(name, sizeof(name), "svc-b-workers-worker-%d", i);
        add_pod(name, "lab/svc-b", "workers", 1000, 1, 0);
    }
    ck_assert_int_eq(schedule("svc-b-head", why, sizeof(why)), POLICY_BIND_REJECT);
    ck_assert_str_eq(why, "upgrade of RayService lab/svc waits: queue serve: limit 4 GPUs, 4 GPUs "
                          "in use, the gang needs 5 GPUs");
    /* ... one of the old size runs beside it. */
    add_cluster("lab/svc-b", "serve", 3, POLICY_OWNER_RAYSERVICE, "lab/svc");
    ck_assert_int_eq(policy_pod_forget(C, "lab", "svc-b-workers-worker-3"), POLICY_OK);
    ck_assert_int_eq(schedule("svc-b-head", why, sizeof(why)), POLICY_BIND_WAIT);
    ck_assert_int_eq(schedule("svc-b-workers-worker-0", why, sizeof(why)), POLICY_BIND_WAIT);
    ck_assert_int_eq(schedule("svc-b-workers-worker-1", why, sizeof(why)), POLICY_BIND_WAIT);
    ck_assert_int_eq(schedule("svc-b-workers-worker-2", why, sizeof(why)), POLICY_BIND_COMMIT);
    ck_assert_int_eq(queue_use("serve").allocated.v[POLICY_RES_GPU], 8000);
    /* Another gang of the queue gets no part of the burst. */
    add_pod("other", NULL, NULL, 1000, 0, 0);
    {
        struct policy_pod_spec p = {.namespace_ = "lab", .name = "x", .uid = "ux",
                                    .cpu_milli = 100, .memory_bytes = GiB, .gpus = 0,
                                    .queue = "serve", .managed = true};

        ck_assert_int_eq(policy_pod_upsert(C, &p, NOW), POLICY_OK);
        p.name = "y", p.uid = "uy", p.gpus = 1;
        ck_assert_int_eq(policy_pod_upsert(C, &p, NOW), POLICY_OK);
    }
    ck_assert_int_eq(schedule("x", why, sizeof(why)), POLICY_BIND_COMMIT); /* no GPU */
    ck_assert_int_eq(schedule("y", why, sizeof(why)), POLICY_BIND_REJECT);
}
END_TEST

static Suite *hold_suite(void)
{
    Suite *s = suite_create("policy_hold");
    TCase *tc = tcase_create("rayjob");

    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, submitter_room_is_held_until_it_arrives);
    tcase_add_test(tc, held_room_counts_against_the_queue);
    tcase_add_test(tc, forgotten_hold_frees_its_room);
    tcase_add_test(tc, asked_submitter_that_never_comes_expires);
    tcase_add_test(tc, cluster_waits_when_its_submitter_has_no_room);
    tcase_add_test(tc, rayjob_bigger_than_its_queue_says_so);
    tcase_add_test(tc, expired_plan_releases_the_held_room_too);
    tcase_add_test(tc, hold_told_after_the_cluster_runs);
    tcase_add_test(tc, held_room_moves_when_its_node_goes);
    tcase_add_test(tc, reclaimed_rayjob_takes_its_held_room_along);
    suite_add_tcase(s, tc);
    tc = tcase_create("rayservice");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, upgrade_waits_for_its_queue_and_never_evicts_the_active_cluster);
    tcase_add_test(tc, upgrade_burst_lets_both_run);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(hold_suite());
    int failed;

    srunner_run_all(sr, CK_ENV);
    failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
