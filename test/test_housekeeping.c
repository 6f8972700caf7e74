/*
 * test_housekeeping.c - the daemon's periodic writer (daemon/housekeeping.c),
 * one period at a time (housekeeping_tick) against the canned API server:
 * Queue status written only when it changed, waiting pods handed back to
 * kube-scheduler after a change, and reservation pods reaped when their GPU
 * group holds no pod. One thread calls, so transcripts (fixtures/daemon/
 * NAME.req) are compared in order. The reaper runs on ticks 0, 3, 6...:
 * tests of the other two use the ticks between.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "daemon_test.h"
#include "housekeeping.h"

#define DIR "daemon"
#define QUEUE_STATUS "/apis/muster.dev/v1alpha1/queues/team-a/status"
#define RESERVATIONS                                                                               \
    "/api/v1/namespaces/muster-system/pods?labelSelector=app.kubernetes.io/name%3D"                \
    "muster-gpu-reservation"

struct rig {
    struct canned_api api;
    struct ext_daemon d;
    struct housekeeping *hk;
};

static void rig_up(struct rig *r, const struct canned_route *routes, size_t nroutes,
                   const char *cluster)
{
    canned_api_start_routes(&r->api, DIR, routes, nroutes);
    daemon_test_up(&r->d, &r->api);
    daemon_test_load(&r->d.cache, DIR, cluster, "ADDED");
    r->hk = housekeeping_new(&r->d);
    ck_assert_ptr_nonnull(r->hk);
}

static void rig_down(struct rig *r)
{
    ck_assert_uint_eq(canned_api_unmatched(&r->api), 0);
    housekeeping_free(r->hk);
    daemon_test_down(&r->d);
    canned_api_stop(&r->api);
}

/* ---- Queue status -------------------------------------------------------------------------- */

static const struct status_case {
    const char *name;
    const char *replies[3]; /* to the status PATCH, in turn */
    const char *req;
} status_cases[] = {
    /* Written at the first period, not again until the usage changes. */
    {"written when changed", {"patched.http"}, "housekeeping_status.req"},
    /* A write the API server refused is not taken as written. */
    {"a refused write is tried again",
     {"status_500.http", "patched.http"},
     "housekeeping_status_retry.req"},
};

START_TEST(test_queue_status)
{
    const struct status_case *t = &status_cases[_i];
    const struct canned_route routes[] = {
        {"PATCH", QUEUE_STATUS, {t->replies[0], t->replies[1], t->replies[2]}},
    };
    struct rig r;

    rig_up(&r, routes, 1, "queue_cluster.json");
    r.d.cache.nudge = false; /* the Queue was just added: no pod waits, nothing to hand back */
    housekeeping_tick(r.hk, 1);
    housekeeping_tick(r.hk, 2);
    daemon_test_load(&r.d.cache, DIR, "queue_a1_pod.json", "ADDED"); /* team-a uses more */
    housekeeping_tick(r.hk, 4);
    housekeeping_tick(r.hk, 5);
    canned_api_expect(&r.api, t->req, canned_api_nreq(&r.api));
    rig_down(&r);
}
END_TEST

/*
 * A restarted muster reads each muster Queue's recentUsage back (what it wrote before it
 * stopped, 2 hours ago here): the engine starts from it, decayed since (halfLife 4h), and the
 * next status says so with its time. A KAI Queue's status is KAI's: muster reads nothing there.
 */
static cJSON *queue_with_usage(const char *api, const char *name, double gpu, int64_t ago_ms)
{
    char at[32], text[1024];
    time_t t = (time_t)((ext_wall_ms() - ago_ms) / 1000);
    struct tm tm;

    gmtime_r(&t, &tm);
    strftime(at, sizeof(at), "%Y-%m-%dT%H:%M:%SZ", &tm);
    snprintf(text, sizeof(text),
             "{\"apiVersion\": \"%s\", \"kind\": \"Queue\", \"metadata\": {\"name\": \"%s\"},"
             " \"spec\": {\"resources\": {\"gpu\": {\"quota\": 0, \"limit\": -1}}},"
             " \"status\": {\"recentUsage\": {\"cpu\": 0, \"memory\": 0, \"gpu\": %g},"
             " \"recentUsageAt\": \"%s\"}}",
             api, name, gpu, at);
    return cJSON_Parse(text);
}

struct recent {
    const char *name;
    bool has;
    double gpu;
};

static void see_recent(const struct policy_queue_view *v, void *ctx)
{
    struct recent *r = ctx;

    if (strcmp(v->name, r->name) == 0) {
        r->has = v->has_recent_usage;
        r->gpu = (double)v->recent_usage.v[POLICY_RES_GPU] / POLICY_USAGE_UNIT;
    }
}

START_TEST(test_recent_usage_read_back)
{
    const struct canned_route routes[] = {
        {"PATCH", "/apis/muster.dev/v1alpha1/queues/*", {"patched.http"}},
    };
    cJSON *mine = queue_with_usage("muster.dev/v1alpha1", "team-g", 0.25, 2 * 3600 * 1000);
    cJSON *kais = queue_with_usage("scheduling.run.ai/v2", "kai-q", 0.25, 2 * 3600 * 1000);
    cJSON *node = cJSON_Parse("{\"apiVersion\": \"v1\", \"kind\": \"Node\", \"metadata\": "
                              "{\"name\": \"g1\"}, \"status\": {\"allocatable\": {\"cpu\": "
                              "\"8\", \"memory\": \"32Gi\", \"pods\": \"110\", "
                              "\"nvidia.com/gpu\": \"8\"}}}");
    struct recent a = {.name = "team-g"}, k = {.name = "kai-q"};
    struct rig r;

    rig_up(&r, routes, 1, "queue_cluster.json");
    cache_apply(&r.d.cache, CACHE_NODES, "ADDED", node);
    cache_apply(&r.d.cache, CACHE_QUEUES, "ADDED", mine);
    cache_apply(&r.d.cache, CACHE_QUEUES_KAI, "ADDED", kais);
    housekeeping_tick(r.hk, 1);
    pthread_mutex_lock(&r.d.cache.lock);
    policy_each_queue(r.d.cache.engine, see_recent, &a);
    policy_each_queue(r.d.cache.engine, see_recent, &k);
    pthread_mutex_unlock(&r.d.cache.lock);
    ck_assert(a.has && k.has);
    /* 0.25 two hours ago, halfLife 4h: 0.25 x 0.5^(1/2); the status's second is all it lost */
    ck_assert_double_eq_tol(a.gpu, 0.25 * 0.70710678, 2e-4);
    ck_assert_double_eq(k.gpu, 0);
    /* Read once: a status written later (by this muster) does not seed again. */
    cJSON_Delete(mine);
    mine = queue_with_usage("muster.dev/v1alpha1", "team-g", 0.9, 0);
    cache_apply(&r.d.cache, CACHE_QUEUES, "MODIFIED", mine);
    housekeeping_tick(r.hk, 2);
    pthread_mutex_lock(&r.d.cache.lock);
    policy_each_queue(r.d.cache.engine, see_recent, &a);
    pthread_mutex_unlock(&r.d.cache.lock);
    ck_assert_double_eq_tol(a.gpu, 0.25 * 0.70710678, 2e-4);
    /* team-g's first status carries it, with its time; KAI's Queue gets none. */
    for (size_t i = 0, found = 0; !found; i++) {
        char *req = canned_api_request(&r.api, i);

        ck_assert_msg(req != NULL, "no status written for team-g");
        found = strstr(req, "/queues/team-g/status") != NULL;
        ck_assert(strstr(req, "/queues/kai-q/") == NULL);
        if (found) {
            ck_assert_ptr_nonnull(strstr(req, "\"recentUsageAt\""));
            ck_assert_ptr_nonnull(strstr(req, "\"gpu\":0.1768"));
        }
        free(req);
    }
    cJSON_Delete(mine);
    cJSON_Delete(kais);
    cJSON_Delete(node);
    rig_down(&r);
}
END_TEST

/* ---- handing waiting pods back ------------------------------------------------------------- */

static const struct canned_route pod_patches[] = {
    {"PATCH", "/api/v1/namespaces/lab/pods/*", {"patched.http"}},
};

static void add_pod(struct rig *r, const char *name, const char *group);

/* What loading the cluster listed is handed back to nobody: the test's own changes follow. */
static void nudges_clear(struct rig *r)
{
    pthread_mutex_lock(&r->d.cache.lock);
    cache_nudges_clear(&r->d.cache);
    pthread_mutex_unlock(&r->d.cache.lock);
}

/* kube-scheduler asks about the pod with the nodes in `nodes` and muster turns it away. */
static void turn_away(struct rig *r, const char *name, const char *node)
{
    const char *nodes[] = {node};
    struct policy_filter_result fr;

    pthread_mutex_lock(&r->d.cache.lock);
    ck_assert_int_eq(policy_filter(r->d.cache.engine, "lab", name, nodes, 1, ext_now_ms(), &fr),
                     POLICY_OK);
    pthread_mutex_unlock(&r->d.cache.lock);
    ck_assert_msg(fr.reason != NULL, "%s was not turned away", name);
    policy_filter_result_cleanup(&fr);
}

/*
 * Pending pods muster turned away are touched after a Queue or gang spec changed, once per
 * refusal: one handed back and not asked about since is on its way back already, whatever
 * changes meanwhile. Others' pods and bound pods never are; nor is anyone for a gang that no
 * pod has joined yet (nudge_cluster.json's PodGroup, and its new minimum).
 */
START_TEST(test_nudge_after_change)
{
    struct rig r;

    rig_up(&r, pod_patches, 1, "nudge_cluster.json");
    daemon_test_load(&r.d.cache, DIR, "node_n1.json", "MODIFIED");
    nudges_clear(&r); /* the node was news before anyone was turned away */
    turn_away(&r, "p-0", "a-node-muster-does-not-know");
    turn_away(&r, "p-1", "a-node-muster-does-not-know");
    daemon_test_load(&r.d.cache, DIR, "pg_trainers_min4.json", "MODIFIED");
    housekeeping_tick(r.hk, 2);
    ck_assert_uint_eq(canned_api_nreq(&r.api), 0);
    daemon_test_load(&r.d.cache, DIR, "node_n1_heartbeat.json", "MODIFIED");
    housekeeping_tick(r.hk, 4); /* a heartbeat changes nothing */
    ck_assert_uint_eq(canned_api_nreq(&r.api), 0);
    daemon_test_load(&r.d.cache, DIR, "node_n1_gpus8.json", "MODIFIED"); /* more room */
    housekeeping_tick(r.hk, 5); /* p-0 and p-1, once */
    housekeeping_tick(r.hk, 7); /* nothing changed since */
    ck_assert_uint_eq(canned_api_nreq(&r.api), 2);
    daemon_test_load(&r.d.cache, DIR, "node_n2.json", "ADDED");
    housekeeping_tick(r.hk, 8); /* neither was asked about since it was handed back */
    ck_assert_uint_eq(canned_api_nreq(&r.api), 2);
    turn_away(&r, "p-0", "a-node-muster-does-not-know"); /* kube-scheduler asked: no again */
    daemon_test_load(&r.d.cache, DIR, "node_n1.json", "MODIFIED");
    housekeeping_tick(r.hk, 10); /* p-0 alone */
    housekeeping_tick(r.hk, 11);
    canned_api_expect(&r.api, "housekeeping_nudge.req", 3);
    ck_assert_uint_eq(canned_api_nreq(&r.api), 3);
    rig_down(&r);
}
END_TEST

static const struct canned_route pod_patches_fail_first[] = {
    {"PATCH", "/api/v1/namespaces/lab/pods/p-0", {"status_500.http", "patched.http"}},
    {"PATCH", "/api/v1/namespaces/lab/pods/*", {"patched.http"}},
};

/* A hand-back the API server refused is no hand-back: that pod is handed back at the next
 * change, the one that went through is not. */
START_TEST(test_nudge_refused_patch_kept)
{
    struct rig r;

    rig_up(&r, pod_patches_fail_first, 2, "nudge_cluster.json");
    nudges_clear(&r);
    turn_away(&r, "p-0", "a-node-muster-does-not-know");
    turn_away(&r, "p-1", "a-node-muster-does-not-know");
    daemon_test_load(&r.d.cache, DIR, "node_n1_gpus8.json", "MODIFIED");
    housekeeping_tick(r.hk, 1);
    ck_assert_uint_eq(canned_api_nreq(&r.api), 2);
    daemon_test_load(&r.d.cache, DIR, "node_n2.json", "ADDED");
    housekeeping_tick(r.hk, 2);
    ck_assert_uint_eq(canned_api_nreq(&r.api), 3);
    ck_assert_uint_eq(canned_api_hits(&r.api, "PATCH", "/api/v1/namespaces/lab/pods/p-0"), 2);
    ck_assert_uint_eq(canned_api_hits(&r.api, "PATCH", "/api/v1/namespaces/lab/pods/p-1"), 1);
    rig_down(&r);
}
END_TEST

/* A gang declared before any of its pods came, then pods that were turned away under it
 * (before the gang's spec was known to the engine, as a Workload-API pod kept aside): they,
 * and only they, are handed back; p-0, refused for its own reasons, is not. */
START_TEST(test_nudge_new_gang_own_members)
{
    struct rig r;

    rig_up(&r, pod_patches, 1, "nudge_cluster.json");
    nudges_clear(&r);
    turn_away(&r, "p-0", "a-node-muster-does-not-know");
    add_pod(&r, "w-0", "trainers");
    turn_away(&r, "w-0", "n1"); /* 1 of 3 members */
    pthread_mutex_lock(&r.d.cache.lock);
    cache_nudge_gang_members(&r.d.cache, "lab/trainers");
    pthread_mutex_unlock(&r.d.cache.lock);
    housekeeping_tick(r.hk, 2);
    ck_assert_uint_eq(canned_api_nreq(&r.api), 1);
    ck_assert_uint_eq(canned_api_hits(&r.api, "PATCH", "/api/v1/namespaces/lab/pods/w-0"), 1);
    rig_down(&r);
}
END_TEST

/* A gang planned after kube-scheduler turned some members away: those members are touched. */
START_TEST(test_nudge_gang)
{
    const char *nodes[] = {"n1"};
    struct policy_filter_result fr;
    struct rig r;

    rig_up(&r, pod_patches, 1, "gang3.json");
    r.d.cache.nudge = false;
    pthread_mutex_lock(&r.d.cache.lock);
    ck_assert_int_eq(policy_filter(r.d.cache.engine, "lab", "w-1", nodes, 1, ext_now_ms(), &fr),
                     POLICY_OK);
    cache_nudge_gang(&r.d.cache, "lab/trainers");
    pthread_mutex_unlock(&r.d.cache.lock);
    ck_assert_ptr_null(fr.reason);
    policy_filter_result_cleanup(&fr);
    housekeeping_tick(r.hk, 1);
    housekeeping_tick(r.hk, 2);
    canned_api_expect(&r.api, "housekeeping_nudge_gang.req", 3);
    ck_assert_uint_eq(canned_api_nreq(&r.api), 3);
    rig_down(&r);
}
END_TEST

/* ---- nothing dropped: more waiting pods and gangs than any fixed cap ------------------------ */

static cJSON *object(const char *json)
{
    cJSON *o = cJSON_Parse(json);

    ck_assert_ptr_nonnull(o);
    return o;
}

static void apply(struct rig *r, const char *json)
{
    cJSON *o = object(json);

    daemon_test_apply(&r->d.cache, "ADDED", o);
    cJSON_Delete(o);
}

static void add_node(struct rig *r)
{
    apply(r,
          "{\"apiVersion\":\"v1\",\"kind\":\"Node\",\"metadata\":{\"name\":\"n1\"},"
          "\"status\":{\"allocatable\":{\"cpu\":\"1000\",\"memory\":\"1Ti\",\"pods\":\"5000\"}}}");
}

static void add_pod(struct rig *r, const char *name, const char *group)
{
    char json[1024];

    snprintf(
        json, sizeof(json),
        "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"%s\","
        "\"namespace\":\"lab\",\"uid\":\"uid-%s\",\"labels\":{%s%s%s}},"
        "\"spec\":{\"schedulerName\":\"muster\",\"containers\":[{\"name\":\"c\","
        "\"resources\":{\"requests\":{\"cpu\":\"100m\"}}}]},\"status\":{\"phase\":\"Pending\"}}",
        name, name, group ? "\"scheduling.x-k8s.io/pod-group\":\"" : "", group ? group : "",
        group ? "\"" : "");
    apply(r, json);
}

/* A pod kube-scheduler parked before this muster started (PodScheduled False, Unschedulable)
 * is handed back at the first change, and not at the next: that one was its predecessor's
 * word, and kube-scheduler asks this muster once the pod is back in its queue. */
START_TEST(test_nudge_parked_before_start_once)
{
    struct rig r;

    rig_up(&r, pod_patches, 1, "empty_cluster.json");
    add_node(&r);
    apply(&r, "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"parked\","
              "\"namespace\":\"lab\",\"uid\":\"uid-parked\"},\"spec\":{\"schedulerName\":"
              "\"muster\",\"containers\":[{\"name\":\"c\",\"resources\":{\"requests\":"
              "{\"cpu\":\"100m\"}}}]},\"status\":{\"phase\":\"Pending\",\"conditions\":"
              "[{\"type\":\"PodScheduled\",\"status\":\"False\",\"reason\":"
              "\"Unschedulable\"}]}}");
    add_pod(&r, "fresh", NULL);
    r.d.cache.nudge = true;
    housekeeping_tick(r.hk, 1);
    ck_assert_uint_eq(canned_api_nreq(&r.api), 1);
    r.d.cache.nudge = true;
    housekeeping_tick(r.hk, 2);
    ck_assert_uint_eq(canned_api_nreq(&r.api), 1);
    rig_down(&r);
}
END_TEST

/* 600 pending pods muster turned away, after a change: every one is handed back, none past
 * a cap. 50 pending pods muster never answered are not: kube-scheduler did not park them on
 * muster's word (issue 14: a Queue made while 4,000 pods waited for kube-scheduler patched
 * all 4,000). */
START_TEST(test_nudge_many_pending)
{
    char name[64];
    struct rig r;

    rig_up(&r, pod_patches, 1, "empty_cluster.json");
    add_node(&r);
    for (int i = 0; i < 650; i++) {
        snprintf(name, sizeof(name), "p-%d", i);
        add_pod(&r, name, NULL);
        if (i < 600)
            turn_away(&r, name, "a-node-muster-does-not-know");
    }
    r.d.cache.nudge = true;
    housekeeping_tick(r.hk, 1);
    ck_assert_uint_eq(canned_api_nreq(&r.api), 600);
    housekeeping_tick(r.hk, 2); /* nothing changed since */
    ck_assert_uint_eq(canned_api_nreq(&r.api), 600);
    rig_down(&r);
}
END_TEST

/* 100 gangs planned after members were turned away: all their members are handed back. */
START_TEST(test_nudge_many_gangs)
{
    char json[512], name[64], gang[64], key[80];
    const char *nodes[] = {"n1"};
    struct rig r;

    rig_up(&r, pod_patches, 1, "empty_cluster.json");
    add_node(&r);
    for (int g = 0; g < 100; g++) {
        snprintf(gang, sizeof(gang), "g%d", g);
        snprintf(json, sizeof(json),
                 "{\"apiVersion\":\"scheduling.x-k8s.io/v1alpha1\",\"kind\":\"PodGroup\","
                 "\"metadata\":{\"name\":\"%s\",\"namespace\":\"lab\"},\"spec\":{\"minMember\":2}}",
                 gang);
        apply(&r, json);
        for (int m = 0; m < 2; m++) {
            snprintf(name, sizeof(name), "%s-%d", gang, m);
            add_pod(&r, name, gang);
        }
    }
    housekeeping_tick(r.hk, 1); /* the PodGroups were news, but no pod was turned away yet */
    r.d.cache.nudge = false;
    ck_assert_uint_eq(canned_api_nreq(&r.api), 0);
    pthread_mutex_lock(&r.d.cache.lock);
    for (int g = 0; g < 100; g++) {
        struct policy_filter_result fr;

        snprintf(name, sizeof(name), "g%d-0", g);
        ck_assert_int_eq(policy_filter(r.d.cache.engine, "lab", name, nodes, 1, ext_now_ms(), &fr),
                         POLICY_OK);
        ck_assert_msg(fr.reason == NULL, "%s: %s", name, fr.reason);
        policy_filter_result_cleanup(&fr);
        snprintf(key, sizeof(key), "lab/g%d", g);
        cache_nudge_gang(&r.d.cache, key);
    }
    pthread_mutex_unlock(&r.d.cache.lock);
    housekeeping_tick(r.hk, 2);
    ck_assert_uint_eq(canned_api_nreq(&r.api), 200);
    rig_down(&r);
}
END_TEST

/* ---- the reaper ---------------------------------------------------------------------------- */

static const struct reaper_case {
    const char *name;
    const char *cluster;
    const char *list; /* the reservation pods the API server lists */
    const char *req;
    size_t nreq;
} reaper_cases[] = {
    /*
     * Of reaper_list.http only the pods of a group that holds no pod (n1/g1)
     * or of a node the engine does not know (n2) go; one in use (n1/g0), one
     * already terminating, one created moments ago (a commit may be in flight)
     * and one without its labels stay.
     */
    {"only groups that hold no pod", "reaper_cluster.json", "reaper_list.http",
     "housekeeping_reaper.req", 3},
    /*
     * A node name over 63 characters is no label value: the reservation pod's
     * muster.dev/node label holds a cut name with a hash. Its group is in use.
     */
    {"a node name too long for a label", "reaper_long_cluster.json", "reaper_long_list.http",
     "housekeeping_reaper_long.req", 1},
};

START_TEST(test_reaper)
{
    const struct reaper_case *t = &reaper_cases[_i];
    const struct canned_route routes[] = {
        {"GET", RESERVATIONS, {t->list}},
        {"DELETE", "/api/v1/namespaces/muster-system/pods/*", {"patched.http"}},
    };
    struct rig r;

    rig_up(&r, routes, 2, t->cluster);
    housekeeping_tick(r.hk, 0);
    housekeeping_tick(r.hk, 1); /* not a reaping period */
    housekeeping_tick(r.hk, 2);
    canned_api_expect(&r.api, t->req, t->nreq);
    ck_assert_msg(canned_api_nreq(&r.api) == t->nreq, "%s: %zu requests", t->name,
                  canned_api_nreq(&r.api));
    rig_down(&r);
}
END_TEST

static Suite *housekeeping_suite(void)
{
    Suite *s = suite_create("housekeeping");
    TCase *tc;

    tc = tcase_create("queue_status");
    tcase_add_loop_test(tc, test_queue_status, 0,
                        (int)(sizeof(status_cases) / sizeof(status_cases[0])));
    tcase_add_test(tc, test_recent_usage_read_back);
    suite_add_tcase(s, tc);

    tc = tcase_create("nudge");
    tcase_add_test(tc, test_nudge_after_change);
    tcase_add_test(tc, test_nudge_refused_patch_kept);
    tcase_add_test(tc, test_nudge_new_gang_own_members);
    tcase_add_test(tc, test_nudge_gang);
    tcase_add_test(tc, test_nudge_many_pending);
    tcase_add_test(tc, test_nudge_parked_before_start_once);
    tcase_add_test(tc, test_nudge_many_gangs);
    suite_add_tcase(s, tc);

    tc = tcase_create("reaper");
    tcase_add_loop_test(tc, test_reaper, 0, (int)(sizeof(reaper_cases) / sizeof(reaper_cases[0])));
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(housekeeping_suite());
    int failed;

    ext_log_setup(CFG_LOG_PLAIN, CFG_LOG_ERROR);
    srunner_run_all(sr, CK_ENV);
    failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
