/*
 * test_cache.c - the reflectors into the engine (daemon/cache.c). The
 * reflectors list and watch the canned API server at once (nodes and pods
 * answer, every CRD is absent), so their requests are compared with
 * fixtures/daemon/NAME.req in any order; what the engine then holds is the
 * outcome. Which objects are workloads and which changes nudge
 * kube-scheduler are asked through cache_apply.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "daemon_test.h"
#include "engine_fault.h"

#define DIR "daemon"
#define PODS_WATCH "/api/v1/pods?watch=1*"

/* ---- list, then watch ---------------------------------------------------------------------- */

struct pod_want {
    const char *ns, *name;
    int phase; /* -1: the engine does not know it */
};

static const struct reflect_case {
    const char *name;
    const char *pods_list[3];  /* replies to GET /api/v1/pods?limit=500, in turn */
    const char *pods_watch[3]; /* replies to the pods watch, in turn; the last one hangs */
    size_t watches;            /* pods watches made once the last reply is reached */
    const char *req;
    struct pod_want pods[5];
    int64_t node_cpu_used; /* n1: bound and planned pods, in millicores */
} reflect_cases[] = {
    {"list then events add, modify and delete",
     {"cache_pods_list.http"},
     {"cache_pods_events.http", CANNED_HANG},
     2,
     "cache_events.req",
     {{"lab", "w-0", POLICY_POD_BOUND},
      {"lab", "w-1", -1},
      {"lab", "w-2", POLICY_POD_PENDING},
      {"muster-system", "gpu-reservation-n1-g0", -1}}, /* not a workload */
     1000},
    {"a relist after 410 Gone forgets what vanished meanwhile",
     {"cache_pods_list.http", "cache_pods_relist.http"},
     {"status_410.http", CANNED_HANG},
     2,
     "cache_relist.req",
     {{"lab", "w-0", POLICY_POD_PENDING}, {"lab", "w-1", -1}},
     0},
    {"a pod that finished is forgotten",
     {"cache_pods_list.http"},
     {"cache_pods_done.http", CANNED_HANG},
     2,
     "cache_done.req",
     {{"lab", "w-0", POLICY_POD_PENDING}, {"lab", "w-1", -1}},
     0},
};

static void wait_ready(struct cache *c)
{
    struct timespec pause = {0, 2000000};
    char why[128] = "";

    for (int i = 0; i < 5000 && !cache_ready(c, why, sizeof(why)); i++)
        nanosleep(&pause, NULL);
    ck_assert_msg(cache_ready(c, why, sizeof(why)), "cache not ready: %s", why);
}

static void node_used(const struct policy_node_view *v, void *ctx)
{
    if (strcmp(v->name, "n1") == 0)
        *(int64_t *)ctx = v->cpu_used;
}

START_TEST(test_reflect)
{
    const struct reflect_case *t = &reflect_cases[_i];
    struct canned_route routes[] = {
        {"GET", "/api/v1/nodes?limit=500", {"cache_nodes_list.http"}},
        {"GET", "/api/v1/nodes?watch=1*", {CANNED_HANG}},
        {"GET", "/api/v1/pods?limit=500", {t->pods_list[0], t->pods_list[1], t->pods_list[2]}},
        {"GET", PODS_WATCH, {t->pods_watch[0], t->pods_watch[1], t->pods_watch[2]}},
        {"GET", "/apis/*", {"status_404.http"}}, /* no CRD is installed */
    };
    struct cfg_settings s;
    struct canned_api api;
    struct kube_client *kube;
    struct cache c;
    char err[256] = "";
    int64_t used = -1;

    canned_api_start_routes(&api, DIR, routes, sizeof(routes) / sizeof(routes[0]));
    kube = canned_api_client(&api, NULL);
    ck_assert_int_eq(cfg_settings_init(&s), CFG_OK);
    ck_assert_int_eq(cache_init(&c, &s, kube, err, sizeof(err)), EXT_OK);
    ck_assert_int_eq(cache_start(&c, err, sizeof(err)), EXT_OK);
    /* The pods watch that hangs is made after every earlier event was applied. */
    canned_api_wait_hits(&api, "GET", PODS_WATCH, t->watches);
    canned_api_expect_unordered(&api, t->req);
    wait_ready(&c);
    pthread_mutex_lock(&c.lock);
    for (size_t i = 0; i < 5 && t->pods[i].name; i++) {
        const struct pod_want *w = &t->pods[i];
        struct policy_pod_view v;
        bool known = policy_pod_view_get(c.engine, w->ns, w->name, &v);

        ck_assert_msg(known == (w->phase >= 0), "%s: %s/%s %s", t->name, w->ns, w->name,
                      known ? "is known" : "is unknown");
        if (known)
            ck_assert_msg((int)v.phase == w->phase, "%s: %s/%s is %s", t->name, w->ns, w->name,
                          policy_pod_phase_name(v.phase));
    }
    policy_each_node(c.engine, node_used, &used);
    pthread_mutex_unlock(&c.lock);
    ck_assert_int_eq(used, t->node_cpu_used);
    cache_cleanup(&c);
    kube_client_free(kube);
    cfg_settings_cleanup(&s);
    canned_api_stop(&api);
}
END_TEST

/* ---- which pods are workloads -------------------------------------------------------------- */

static const struct reservation_case {
    const char *pod;
    bool reservation;
} reservation_cases[] = {
    {"{\"metadata\":{\"name\":\"r\",\"namespace\":\"muster-system\",\"labels\":"
     "{\"app.kubernetes.io/name\":\"muster-gpu-reservation\"}}}",
     true},
    /* The label alone, outside the reservation namespace, is anybody's pod. */
    {"{\"metadata\":{\"name\":\"r\",\"namespace\":\"lab\",\"labels\":"
     "{\"app.kubernetes.io/name\":\"muster-gpu-reservation\"}}}",
     false},
    {"{\"metadata\":{\"name\":\"r\",\"namespace\":\"muster-system\",\"labels\":"
     "{\"app.kubernetes.io/name\":\"muster\"}}}",
     false},
    {"{\"metadata\":{\"name\":\"r\",\"namespace\":\"muster-system\"}}", false},
    {"{\"metadata\":{\"name\":\"r\",\"labels\":"
     "{\"app.kubernetes.io/name\":\"muster-gpu-reservation\"}}}",
     false},
};

START_TEST(test_reservation_pod)
{
    const struct reservation_case *t = &reservation_cases[_i];
    struct cfg_settings s;
    struct cache c;
    char err[256];
    cJSON *pod = cJSON_Parse(t->pod);

    ck_assert_ptr_nonnull(pod);
    ck_assert_int_eq(cfg_settings_init(&s), CFG_OK);
    ck_assert_int_eq(cache_init(&c, &s, NULL, err, sizeof(err)), EXT_OK);
    ck_assert_int_eq(cache_is_reservation_pod(&c, pod), t->reservation);
    cJSON_Delete(pod);
    cache_cleanup(&c);
    cfg_settings_cleanup(&s);
}
END_TEST

/* ---- what nudges kube-scheduler ------------------------------------------------------------ */

static const struct nudge_case {
    const char *first; /* applied ADDED, then the flags are cleared */
    const char *then;  /* applied MODIFIED (ADDED when it is another object) */
    const char *type;
    bool nudge;        /* every refused pod is handed back */
    const char *gang;  /* else only this gang's members are (NULL: none) */
} nudge_cases[] = {
    {"queue_team_a.json", "queue_team_a_status.json", "MODIFIED", false},
    {"queue_team_a.json", "queue_team_a.json", "MODIFIED", false},
    {"queue_team_a.json", "queue_team_a_limit.json", "MODIFIED", true},
    {"queue_team_a.json", "queue_team_b.json", "ADDED", true},
    {"pg_trainers.json", "pg_trainers_status.json", "MODIFIED", false},
    /* A gang no pod has joined yet (a RayCluster or PodGroup made before its pods) changes
     * nothing anyone else waits for: its own members, if any came meanwhile, are handed back */
    {"pg_trainers.json", "pg_trainers_min4.json", "MODIFIED", false, "lab/trainers"},
    {"gang3.json", "pg_trainers_min4.json", "MODIFIED", true},
    /* kube-scheduler retries on its own Node event, maybe before muster saw the node (e2e 04c:
     * the node grown from 1 GPU to 8, the gang still told "1 free"): more room nudges,
     * kwok's and kubelets' heartbeats do not */
    {"node_n1.json", "node_n1_heartbeat.json", "MODIFIED", false},
    {"node_n1.json", "node_n1_gpus8.json", "MODIFIED", true},
    {"node_n1.json", "node_n2.json", "ADDED", true},
};

START_TEST(test_nudge)
{
    const struct nudge_case *t = &nudge_cases[_i];
    struct cfg_settings s;
    struct cache c;
    char err[256];

    ck_assert_int_eq(cfg_settings_init(&s), CFG_OK);
    ck_assert_int_eq(cache_init(&c, &s, NULL, err, sizeof(err)), EXT_OK);
    daemon_test_load(&c, DIR, t->first, "ADDED");
    ck_assert_msg(c.nudge || c.nnudge_gangs > 0, "%s: a new object must nudge", t->first);
    cache_nudges_clear(&c);
    daemon_test_load(&c, DIR, t->then, t->type);
    ck_assert_msg(c.nudge == t->nudge, "%s after %s: nudge %d", t->then, t->first, c.nudge);
    ck_assert_uint_eq(c.nnudge_gangs, t->gang ? 1 : 0);
    if (t->gang) {
        ck_assert_str_eq(c.nudge_gangs[0].gang, t->gang);
        ck_assert(c.nudge_gangs[0].refused);
    }
    cache_cleanup(&c);
    cfg_settings_cleanup(&s);
}
END_TEST

/* ---- a Queue under both API groups -------------------------------------------------------- */

static void queue_seen(const struct policy_queue_view *v, void *ctx)
{
    if (strcmp(v->name, "team-a") == 0)
        *(bool *)ctx = true;
}

static bool engine_has_team_a(struct cache *c)
{
    bool seen = false;

    policy_each_queue(c->engine, queue_seen, &seen);
    return seen;
}

/* KAI's scheduling.run.ai/v2 Queue and muster's own of the same name are one engine queue,
 * which stays while either exists; only muster's own is the one status is written to. */
START_TEST(test_queue_both_groups)
{
    struct cfg_settings s;
    struct cache c;
    char err[256];

    ck_assert_int_eq(cfg_settings_init(&s), CFG_OK);
    ck_assert_int_eq(cache_init(&c, &s, NULL, err, sizeof(err)), EXT_OK);
    daemon_test_load(&c, DIR, "queue_team_a_kai.json", "ADDED");
    ck_assert(engine_has_team_a(&c));
    ck_assert(!cache_queue_defined(&c, "team-a"));
    daemon_test_load(&c, DIR, "queue_team_a.json", "ADDED");
    ck_assert(cache_queue_defined(&c, "team-a"));
    daemon_test_load(&c, DIR, "queue_team_a_kai.json", "DELETED");
    ck_assert_msg(engine_has_team_a(&c), "the muster.dev Queue still defines team-a");
    daemon_test_load(&c, DIR, "queue_team_a.json", "DELETED");
    ck_assert_msg(!engine_has_team_a(&c), "neither Queue is left");
    cache_cleanup(&c);
    cfg_settings_cleanup(&s);
}
END_TEST

/* KAI's and Kueue's Topologies go to the engine (Kueue's as kueue/<name>, so a KAI Topology of
 * the same name is another one) and leave it when deleted; a new one hands waiting pods back. */
struct topology_names {
    int n;
    char names[4][64];
};

static void topology_seen(const struct policy_topology_view *v, void *ctx)
{
    struct topology_names *t = ctx;

    if (t->n < 4)
        snprintf(t->names[t->n], sizeof(t->names[t->n]), "%s/%zu", v->name, v->nlevels);
    t->n++;
}

static struct topology_names topologies(struct cache *c)
{
    struct topology_names t = {0};

    policy_each_topology(c->engine, topology_seen, &t);
    if (t.n == 2 && strcmp(t.names[0], t.names[1]) > 0) {
        char tmp[64];

        memcpy(tmp, t.names[0], sizeof(tmp));
        memcpy(t.names[0], t.names[1], sizeof(tmp));
        memcpy(t.names[1], tmp, sizeof(tmp));
    }
    return t;
}

START_TEST(test_topologies)
{
    struct cfg_settings s;
    struct cache c;
    struct topology_names t;
    char err[256];

    ck_assert_int_eq(cfg_settings_init(&s), CFG_OK);
    ck_assert_int_eq(cache_init(&c, &s, NULL, err, sizeof(err)), EXT_OK);
    c.nudge = false;
    daemon_test_load(&c, DIR, "topology_kai.json", "ADDED");
    ck_assert(c.nudge);
    daemon_test_load(&c, DIR, "topology_kueue.json", "ADDED");
    t = topologies(&c);
    ck_assert_int_eq(t.n, 2);
    ck_assert_str_eq(t.names[0], "cluster-topology/3");
    ck_assert_str_eq(t.names[1], "kueue/default/2");
    daemon_test_load(&c, DIR, "topology_kueue.json", "DELETED");
    t = topologies(&c);
    ck_assert_int_eq(t.n, 1);
    ck_assert_str_eq(t.names[0], "cluster-topology/3");
    daemon_test_load(&c, DIR, "topology_kai.json", "DELETED");
    ck_assert_int_eq(topologies(&c).n, 0);
    cache_cleanup(&c);
    cfg_settings_cleanup(&s);
}
END_TEST

/* ---- Workload-API pods seen before their PodGroup or Workload ------------------------------- */

/*
 * Separate watches deliver in any order, and after a restart the lists of pods, Workloads and
 * PodGroups race: pods already bound (wa_pods_bound.json: a driver and four workers of Workload
 * lab/train, templates driver 1 and workers 4) may come before the objects that name their
 * gang. Whatever the order, they end in gang lab/train, each in its template's subgroup, and
 * no gang named after a PodGroup is left behind.
 */
static const struct wa_order_case {
    const char *files[3];
} wa_order_cases[] = {
    {{"wa_workload.json", "wa_podgroups.json", "wa_pods_bound.json"}},
    {{"wa_pods_bound.json", "wa_podgroups.json", "wa_workload.json"}},
    {{"wa_pods_bound.json", "wa_workload.json", "wa_podgroups.json"}},
    {{"wa_podgroups.json", "wa_pods_bound.json", "wa_workload.json"}},
};

struct wa_gangs {
    int n;
    char keys[4][64];
    struct policy_subgroup_view train[4];
    size_t ntrain;
    int32_t bound;
};

static void wa_gang(const struct policy_gang_view *v, void *ctx)
{
    struct wa_gangs *w = ctx;

    if (w->n < 4)
        snprintf(w->keys[w->n], sizeof(w->keys[w->n]), "%s", v->key);
    w->n++;
    if (strcmp(v->key, "lab/train") != 0)
        return;
    w->bound = v->bound;
    for (w->ntrain = 0; w->ntrain < v->nsubgroups && w->ntrain < 4; w->ntrain++)
        w->train[w->ntrain] = v->subgroups[w->ntrain];
}

START_TEST(test_wa_order)
{
    const struct wa_order_case *t = &wa_order_cases[_i];
    struct cfg_settings s;
    struct cache c;
    struct wa_gangs w = {0};
    struct policy_pod_view v;
    char err[256];

    ck_assert_int_eq(cfg_settings_init(&s), CFG_OK);
    ck_assert_int_eq(cache_init(&c, &s, NULL, err, sizeof(err)), EXT_OK);
    for (int i = 0; i < 3; i++)
        daemon_test_load(&c, DIR, t->files[i], "ADDED");
    pthread_mutex_lock(&c.lock);
    policy_each_gang(c.engine, wa_gang, &w);
    ck_assert_msg(w.n == 1, "%s first: %d gangs (%s, %s, %s)", t->files[0], w.n, w.keys[0],
                  w.n > 1 ? w.keys[1] : "", w.n > 2 ? w.keys[2] : "");
    ck_assert_str_eq(w.keys[0], "lab/train");
    ck_assert_int_eq(w.bound, 5);
    ck_assert_uint_eq(w.ntrain, 2);
    ck_assert_str_eq(w.train[0].name, "driver");
    ck_assert_int_eq(w.train[0].placed, 1);
    ck_assert_str_eq(w.train[1].name, "workers");
    ck_assert_int_eq(w.train[1].placed, 4);
    ck_assert(policy_pod_view_get(c.engine, "lab", "train-workers-3", &v));
    ck_assert_str_eq(v.gang, "lab/train");
    ck_assert_int_eq(v.phase, POLICY_POD_BOUND);
    pthread_mutex_unlock(&c.lock);
    cache_cleanup(&c);
    cfg_settings_cleanup(&s);
}
END_TEST

/*
 * v1beta1 lets a controller change a PodGroup's gang.minCount after creation, and
 * kube-scheduler's gang cycle enforces the PodGroup's own. The gang muster declares for the
 * Workload follows it: workers' PodGroup lowered to 3 makes the gang driver 1, workers 3; its
 * deletion gives the template's 4 back. Status-only updates change nothing.
 */
struct wa_min {
    int32_t min, workers;
};

static void wa_min_of(const struct policy_gang_view *v, void *ctx)
{
    struct wa_min *m = ctx;

    if (strcmp(v->key, "lab/train") != 0)
        return;
    m->min = v->min_members;
    for (size_t i = 0; i < v->nsubgroups; i++)
        if (strcmp(v->subgroups[i].name, "workers") == 0)
            m->workers = v->subgroups[i].min_members;
}

static struct wa_min wa_min_now(struct cache *c)
{
    struct wa_min m = {-1, -1};

    pthread_mutex_lock(&c->lock);
    policy_each_gang(c->engine, wa_min_of, &m);
    pthread_mutex_unlock(&c->lock);
    return m;
}

START_TEST(test_wa_min_count_followed)
{
#define WA_PG(name, tpl, min)                                                                       \
    "{\"apiVersion\": \"scheduling.k8s.io/v1beta1\", \"kind\": \"PodGroup\", \"metadata\": "          \
    "{\"name\": \"" name "\", \"namespace\": \"lab\"}, \"spec\": {\"workloadRef\": "                 \
    "{\"workloadName\": \"train\", \"templateName\": \"" tpl "\"}, \"schedulingPolicy\": "           \
    "{\"gang\": {\"minCount\": " min "}}}}"
    static const char *workload =
        "{\"apiVersion\": \"scheduling.k8s.io/v1beta1\", \"kind\": \"Workload\", \"metadata\": "
        "{\"name\": \"train\", \"namespace\": \"lab\"}, \"spec\": {\"podGroupTemplates\": ["
        "{\"name\": \"driver\", \"schedulingPolicy\": {\"gang\": {\"minCount\": 1}}}, "
        "{\"name\": \"workers\", \"schedulingPolicy\": {\"gang\": {\"minCount\": 4}}}]}}";
    static const char *texts[] = {WA_PG("train-driver", "driver", "1"),
                                  WA_PG("train-workers", "workers", "4"),
                                  WA_PG("train-workers", "workers", "3")};
#undef WA_PG
    struct cfg_settings s;
    struct cache c;
    struct wa_min m;
    cJSON *wl = cJSON_Parse(workload), *driver = cJSON_Parse(texts[0]);
    cJSON *workers4 = cJSON_Parse(texts[1]), *workers3 = cJSON_Parse(texts[2]);
    char err[256];

    ck_assert_ptr_nonnull(wl);
    ck_assert_ptr_nonnull(workers3);
    ck_assert_int_eq(cfg_settings_init(&s), CFG_OK);
    ck_assert_int_eq(cache_init(&c, &s, NULL, err, sizeof(err)), EXT_OK);
    daemon_test_apply(&c, "ADDED", wl);
    m = wa_min_now(&c);
    ck_assert_int_eq(m.min, 5);
    ck_assert_int_eq(m.workers, 4);
    daemon_test_apply(&c, "ADDED", driver);
    daemon_test_apply(&c, "ADDED", workers4);
    m = wa_min_now(&c);
    ck_assert_int_eq(m.workers, 4);
    daemon_test_apply(&c, "MODIFIED", workers3); /* minCount lowered after creation */
    m = wa_min_now(&c);
    ck_assert_int_eq(m.min, 4);
    ck_assert_int_eq(m.workers, 3);
    /* the Workload again (a label or status change): its PodGroups still count */
    daemon_test_apply(&c, "MODIFIED", wl);
    m = wa_min_now(&c);
    ck_assert_int_eq(m.workers, 3);
    daemon_test_apply(&c, "DELETED", workers3);
    m = wa_min_now(&c);
    ck_assert_int_eq(m.min, 5);
    ck_assert_int_eq(m.workers, 4);
    cJSON_Delete(wl);
    cJSON_Delete(driver);
    cJSON_Delete(workers4);
    cJSON_Delete(workers3);
    cache_cleanup(&c);
    cfg_settings_cleanup(&s);
}
END_TEST

/* ---- what the engine refuses -------------------------------------------------------------- */

/* What the daemon logs (warnings and up) while the cache applies obj; malloc'd. */
static char *apply_logged(struct cache *c, const cJSON *obj)
{
    FILE *log = tmpfile();
    int saved = dup(STDERR_FILENO);
    char *text;
    long n;

    ck_assert_ptr_nonnull(log);
    ck_assert_int_ge(saved, 0);
    fflush(stderr);
    ck_assert_int_ge(dup2(fileno(log), STDERR_FILENO), 0);
    ext_log_setup(CFG_LOG_PLAIN, CFG_LOG_WARN);
    daemon_test_apply(c, "ADDED", obj);
    ext_log_setup(CFG_LOG_PLAIN, CFG_LOG_ERROR); /* as main set it */
    fflush(stderr);
    ck_assert_int_ge(dup2(saved, STDERR_FILENO), 0);
    close(saved);
    ck_assert_int_eq(fseek(log, 0, SEEK_END), 0);
    n = ftell(log);
    rewind(log);
    text = calloc(1, (size_t)n + 1);
    ck_assert_ptr_nonnull(text);
    ck_assert_uint_eq(fread(text, 1, (size_t)n, log), (size_t)n);
    fclose(log);
    return text;
}

/* A Node the engine refuses is logged with the refusal as it is (every refusal was logged as
 * "out of memory"), and taken when it comes again. */
START_TEST(test_engine_refusal_as_it_is)
{
    struct cfg_settings s;
    struct cache c;
    char err[256], want[128], *log;
    cJSON *node = cJSON_Parse("{\"apiVersion\":\"v1\",\"kind\":\"Node\",\"metadata\":"
                              "{\"name\":\"n9\"},\"status\":{\"allocatable\":{\"cpu\":\"8\","
                              "\"memory\":\"32Gi\",\"pods\":\"110\"}}}");

    ck_assert_ptr_nonnull(node);
    ck_assert_int_eq(cfg_settings_init(&s), CFG_OK);
    ck_assert_int_eq(cache_init(&c, &s, NULL, err, sizeof(err)), EXT_OK);
    engine_fault_arm(ENGINE_FAULT_NODE_UPSERT, engine_faults[_i].policy_rc);
    log = apply_logged(&c, node);
    snprintf(want, sizeof(want), "error=\"the engine refused it: %s\"", engine_faults[_i].words);
    ck_assert_msg(strstr(log, "object skipped") && strstr(log, want), "logged: %s", log);
    ck_assert_msg(engine_faults[_i].policy_rc == POLICY_ENOMEM || !strstr(log, "out of memory"),
                  "logged: %s", log);
    ck_assert(!policy_node_known(c.engine, "n9"));
    daemon_test_apply(&c, "ADDED", node);
    ck_assert(policy_node_known(c.engine, "n9"));
    free(log);
    cJSON_Delete(node);
    cache_cleanup(&c);
    cfg_settings_cleanup(&s);
}
END_TEST

/* ---- a restart: pods bound long ago ------------------------------------------------------- */

static void gang_running_since(const struct policy_gang_view *v, void *ctx)
{
    if (strcmp(v->key, "lab/old") == 0)
        *(int64_t *)ctx = v->running_since;
}

#define OLD_POD                                                                                    \
    "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"old\",\"namespace\":"   \
    "\"lab\",\"uid\":\"u-old\"},\"spec\":{\"nodeName\":\"n1\",\"containers\":[{\"name\":\"c\","   \
    "\"resources\":{\"requests\":{\"cpu\":\"1\"}}}]},\"status\":{\"phase\":\"Running\","         \
    "\"conditions\":[{\"type\":\"PodScheduled\",\"status\":\"True\","                          \
    "\"lastTransitionTime\":\"%s\"}]}}"

/* A pod the API server bound 50 minutes ago (its PodScheduled condition says so, in wall-clock
 * time) runs, on the engine's monotonic clock, since 50 minutes before now: a restarted
 * muster's reclaimMinRuntime and preemptMinRuntime go on from there. */
START_TEST(test_pod_bound_before_a_restart)
{
    struct cfg_settings s;
    struct cache c;
    char err[256], when[32], *text;
    time_t bound = time(NULL) - 50 * 60;
    int64_t since = -1, expect;
    cJSON *pod;

    strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%SZ", gmtime(&bound));
    ck_assert(asprintf(&text, OLD_POD, when) > 0);
    pod = cJSON_Parse(text);
    ck_assert_ptr_nonnull(pod);
    ck_assert_int_eq(cfg_settings_init(&s), CFG_OK);
    ck_assert_int_eq(cache_init(&c, &s, NULL, err, sizeof(err)), EXT_OK);
    daemon_test_apply(&c, "ADDED", pod);
    expect = ext_now_ms() - 50 * 60 * 1000;
    pthread_mutex_lock(&c.lock);
    policy_each_gang(c.engine, gang_running_since, &since);
    pthread_mutex_unlock(&c.lock);
    /* Whole seconds on the wall clock, and a little time between the two clocks' reads. */
    ck_assert_msg(since > expect - 2000 && since <= expect + 1000,
                  "running since %lld, expected about %lld", (long long)since, (long long)expect);
    cJSON_Delete(pod);
    free(text);
    cache_cleanup(&c);
    cfg_settings_cleanup(&s);
}
END_TEST

/*
 * A RayJob's cluster, the RayJob and its submitter pod come on three watches in any order
 * (and after a restart their lists race): whatever the order, the submitter ends in the
 * cluster's gang, in subgroup submitter, the room held for it taken; the RayJob deleted, its
 * hold goes.
 */
static const struct rj_order_case {
    const char *files[3];
} rj_order_cases[] = {
    {{"rj_cluster.json", "rj_rayjob.json", "rj_submitter.json"}},
    {{"rj_submitter.json", "rj_cluster.json", "rj_rayjob.json"}},
    {{"rj_rayjob.json", "rj_submitter.json", "rj_cluster.json"}},
    {{"rj_cluster.json", "rj_submitter.json", "rj_rayjob.json"}},
};

struct rj_gang {
    int gangs;
    size_t nholds;
    enum policy_hold_state state;
    const char *hold_node;
    char node[32];
    enum policy_gang_state gang_state;
};

static void rj_gang_of(const struct policy_gang_view *v, void *ctx)
{
    struct rj_gang *r = ctx;

    r->gangs++;
    if (strcmp(v->key, "lab/train-x7k2p") != 0)
        return;
    r->nholds = v->nholds;
    r->gang_state = v->state;
    if (v->nholds) {
        r->state = v->holds[0].state;
        snprintf(r->node, sizeof(r->node), "%s", v->holds[0].node ? v->holds[0].node : "");
    }
}

static struct rj_gang rj_now(struct cache *c)
{
    struct rj_gang r = {0};

    pthread_mutex_lock(&c->lock);
    policy_each_gang(c->engine, rj_gang_of, &r);
    pthread_mutex_unlock(&c->lock);
    return r;
}

START_TEST(test_rayjob_order)
{
    const struct rj_order_case *t = &rj_order_cases[_i];
    struct cfg_settings s;
    struct cache c;
    struct policy_pod_view v;
    struct rj_gang r;
    char err[256];

    ck_assert_int_eq(cfg_settings_init(&s), CFG_OK);
    ck_assert_int_eq(cache_init(&c, &s, NULL, err, sizeof(err)), EXT_OK);
    daemon_test_load(&c, DIR, "queue_team_a.json", "ADDED");
    for (int i = 0; i < 3; i++)
        daemon_test_load(&c, DIR, t->files[i], "ADDED");
    r = rj_now(&c);
    ck_assert_msg(r.gangs == 1, "%s first: %d gangs", t->files[0], r.gangs);
    ck_assert_uint_eq(r.nholds, 1);
    ck_assert_int_eq(r.state, POLICY_HOLD_ARRIVED);
    ck_assert_int_eq(r.gang_state, POLICY_GANG_BOUND);
    pthread_mutex_lock(&c.lock);
    ck_assert(policy_pod_view_get(c.engine, "lab", "train-9fz2q", &v));
    ck_assert_str_eq(v.gang, "lab/train-x7k2p");
    ck_assert_str_eq(v.subgroup, "submitter");
    ck_assert_str_eq(v.queue, "team-a");
    pthread_mutex_unlock(&c.lock);
    daemon_test_load(&c, DIR, "rj_rayjob.json", "DELETED");
    ck_assert_uint_eq(rj_now(&c).nholds, 0);
    cache_cleanup(&c);
    cfg_settings_cleanup(&s);
}
END_TEST

static void cpu_used_n1(const struct policy_node_view *v, void *ctx)
{
    *(int64_t *)ctx = v->cpu_used;
}

/* The cluster runs, the submitter not made yet: its room is held on the node; the RayJob
 * done (Complete), the room goes, the cluster (idle, not shut down) stays charged. */
START_TEST(test_rayjob_hold_until_done)
{
    struct cfg_settings s;
    struct cache c;
    struct rj_gang r;
    int64_t cpu = -1;
    char err[256];

    ck_assert_int_eq(cfg_settings_init(&s), CFG_OK);
    ck_assert_int_eq(cache_init(&c, &s, NULL, err, sizeof(err)), EXT_OK);
    daemon_test_load(&c, DIR, "queue_team_a.json", "ADDED");
    daemon_test_load(&c, DIR, "rj_cluster.json", "ADDED");
    daemon_test_load(&c, DIR, "rj_rayjob.json", "ADDED");
    r = rj_now(&c);
    ck_assert_int_eq(r.state, POLICY_HOLD_WAITING);
    ck_assert_str_eq(r.node, "n1");
    ck_assert_int_eq(r.gang_state, POLICY_GANG_BOUND);
    pthread_mutex_lock(&c.lock);
    policy_each_node(c.engine, cpu_used_n1, &cpu);
    pthread_mutex_unlock(&c.lock);
    ck_assert_int_eq(cpu, 2500);
    daemon_test_load(&c, DIR, "rj_rayjob_complete.json", "MODIFIED");
    ck_assert_uint_eq(rj_now(&c).nholds, 0);
    pthread_mutex_lock(&c.lock);
    policy_each_node(c.engine, cpu_used_n1, &cpu);
    pthread_mutex_unlock(&c.lock);
    ck_assert_int_eq(cpu, 2000);
    cache_cleanup(&c);
    cfg_settings_cleanup(&s);
}
END_TEST

static Suite *cache_suite(void)
{
    Suite *s = suite_create("cache");
    TCase *tc;

#define N(a) (int)(sizeof(a) / sizeof((a)[0]))
    tc = tcase_create("reflect");
    tcase_set_timeout(tc, 30);
    tcase_add_loop_test(tc, test_reflect, 0, N(reflect_cases));
    suite_add_tcase(s, tc);

    tc = tcase_create("objects");
    tcase_add_loop_test(tc, test_reservation_pod, 0, N(reservation_cases));
    tcase_add_loop_test(tc, test_nudge, 0, N(nudge_cases));
    tcase_add_test(tc, test_queue_both_groups);
    tcase_add_test(tc, test_topologies);
    tcase_add_loop_test(tc, test_wa_order, 0, N(wa_order_cases));
    tcase_add_test(tc, test_wa_min_count_followed);
    tcase_add_loop_test(tc, test_engine_refusal_as_it_is, 0, ENGINE_FAULTS);
    tcase_add_test(tc, test_pod_bound_before_a_restart);
    tcase_add_loop_test(tc, test_rayjob_order, 0, N(rj_order_cases));
    tcase_add_test(tc, test_rayjob_hold_until_done);
    suite_add_tcase(s, tc);
#undef N
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(cache_suite());
    int failed;

    ext_log_setup(CFG_LOG_PLAIN, CFG_LOG_ERROR);
    srunner_run_all(sr, CK_ENV);
    failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
