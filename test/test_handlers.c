/*
 * test_handlers.c - kube-scheduler's questions answered from the engine
 * (daemon/handlers.c), through the same handler table the HTTP server calls.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon_test.h"
#include "events.h"
#include "engine_fault.h"

#define DIR "daemon"

static cJSON *fixture_object(const char *file, const char *name)
{
    char *text = fixture_read(DIR, file, NULL);
    cJSON *doc = cJSON_Parse(text), *items, *obj, *found = NULL;

    ck_assert_ptr_nonnull(doc);
    items = cJSON_GetObjectItemCaseSensitive(doc, "items");
    if (!items)
        found = cJSON_Duplicate(doc, true);
    cJSON_ArrayForEach(obj, items)
    {
        const cJSON *meta = cJSON_GetObjectItemCaseSensitive(obj, "metadata");
        const char *n = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(meta, "name"));

        if (n && strcmp(n, name) == 0)
            found = cJSON_Duplicate(obj, true);
    }
    ck_assert_msg(found != NULL, "no %s in %s", name, file);
    cJSON_Delete(doc);
    free(text);
    return found;
}

/* ---- a deleted pod stays deleted ------------------------------------------------------------ */

/*
 * Seen end to end (e2e 05b run twice): a RayCluster's pending pods were deleted while
 * kube-scheduler was retrying one of them; its filter came after the watch's DELETED and put
 * the pod back into the engine, where nothing took it out again. The RayCluster made anew (the
 * same gang) planned that ghost into its minimum and its barrier waited for it for good. A
 * pod the watch said is gone is refused by UID; one made anew under the same name (a new UID)
 * is taken.
 */
START_TEST(test_deleted_pod_is_not_brought_back)
{
    struct ext_daemon d;
    struct policy_pod_view v;
    cJSON *old = fixture_object("ghost_cluster.json", "rc-gpu-worker-old");
    cJSON *anew = fixture_object("ghost_pod_recreated.json", "rc-gpu-worker-old");
    char *error;

    daemon_test_up(&d, NULL);
    daemon_test_load(&d.cache, DIR, "ghost_cluster.json", "ADDED");
    ck_assert_int_eq(daemon_test_phase(&d, "lab", "rc-gpu-worker-old"), POLICY_POD_PENDING);
    daemon_test_apply(&d.cache, "DELETED", old);
    ck_assert_int_eq(daemon_test_phase(&d, "lab", "rc-gpu-worker-old"), -1);

    error = daemon_test_filter(&d, old); /* kube-scheduler's cycle begun before the delete */
    ck_assert_msg(error && strstr(error, "pod lab/rc-gpu-worker-old was deleted"), "error: %s",
                  error);
    free(error);
    ck_assert_msg(daemon_test_phase(&d, "lab", "rc-gpu-worker-old") == -1,
                  "the filter brought the deleted pod back");

    error = daemon_test_filter(&d, anew); /* the same name, a new pod */
    ck_assert_msg(error == NULL, "error: %s", error);
    pthread_mutex_lock(&d.cache.lock);
    ck_assert(policy_pod_view_get(d.cache.engine, "lab", "rc-gpu-worker-old", &v));
    ck_assert_str_eq(v.uid, "uid-of-new");
    pthread_mutex_unlock(&d.cache.lock);
    cJSON_Delete(old);
    cJSON_Delete(anew);
    daemon_test_down(&d);
}
END_TEST

/* ---- on the HTTP event loop: answered at once, or handed to a worker ------------------------ */

/*
 * A small filter is run by the HTTP server's event loop first (issue 26): it must not wait
 * there for the cache's lock (a watch batch being applied, an eviction search), or /healthz
 * and every other connection would wait with it. Held elsewhere: EXT_EBUSY, nothing decided
 * (the worker that runs it then decides); free: the same answer a worker gives.
 */
START_TEST(test_filter_on_the_event_loop_never_waits)
{
    struct ext_daemon d;
    cJSON *pod = fixture_object("ghost_cluster.json", "rc-gpu-worker-old");
    char *error;
    int rc;

    daemon_test_up(&d, NULL);
    daemon_test_load(&d.cache, DIR, "ghost_cluster.json", "ADDED");
    pthread_mutex_lock(&d.cache.lock); /* as the watch holds it while it applies a batch */
    error = daemon_test_filter_with(&d, pod, true, &rc);
    pthread_mutex_unlock(&d.cache.lock);
    ck_assert_msg(rc == EXT_EBUSY, "on the event loop with the lock held: %s", ext_strerror(rc));
    ck_assert_ptr_null(error);
    ck_assert_int_eq(daemon_test_phase(&d, "lab", "rc-gpu-worker-old"), POLICY_POD_PENDING);
    error = daemon_test_filter_with(&d, pod, true, &rc); /* the lock is free: answered there */
    ck_assert_msg(rc == EXT_OK, "on the event loop, the lock free: %s", ext_strerror(rc));
    free(error);
    cJSON_Delete(pod);
    daemon_test_down(&d);
}
END_TEST

/* ---- GangWaiting carries the composition, once per change ---------------------------------- */

static const struct canned_route events_ok[] = {
    {"POST", "/api/v1/namespaces/lab/events", {"created.http"}},
    {"PATCH", "/api/v1/namespaces/lab/events/*", {"patched.http"}},
};

static int64_t events_clock(void)
{
    return 1000; /* a minute never passes: only a new message is posted again */
}

/*
 * Event request i on the events server (malloc'd): a POST as "pod: reason: message", a PATCH
 * of an Event as "again pod: message"; *name (malloc'd) is the Event's name either way.
 */
static char *event_at(struct canned_api *api, size_t i, char **name)
{
    static const char patch[] = "PATCH /api/v1/namespaces/lab/events/";
    char *rec = canned_api_request(api, i), *body, *out;
    cJSON *ev, *obj;
    size_t len;

    ck_assert_ptr_nonnull(rec);
    body = strstr(rec, "\n\n");
    ck_assert_ptr_nonnull(body);
    ev = cJSON_Parse(body + 2);
    ck_assert_ptr_nonnull(ev);
    obj = cJSON_GetObjectItemCaseSensitive(ev, "involvedObject");
    len = strlen(rec) + 64;
    out = malloc(len);
    if (strncmp(rec, patch, strlen(patch)) == 0) {
        *name = strndup(rec + strlen(patch), strcspn(rec + strlen(patch), "\n"));
        snprintf(out, len, "again %.*s: %s", (int)(strrchr(*name, '.') - *name), *name,
                 cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(ev, "message")));
    } else {
        *name = strdup(cJSON_GetStringValue(
            cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(ev, "metadata"),
                                             "name")));
        snprintf(out, len, "%s: %s: %s",
                 cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(obj, "name")),
                 cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(ev, "reason")),
                 cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(ev, "message")));
    }
    cJSON_Delete(ev);
    free(rec);
    return out;
}

/* The watch says the pod is bound to n1, as it would once its Binding went through. */
static void watch_bound(struct ext_daemon *d, const char *name)
{
    cJSON *pod = fixture_object("composition_cluster.json", name);

    ck_assert_int_eq(daemon_test_phase(d, "lab", name), POLICY_POD_PLANNED);
    cJSON_AddStringToObject(cJSON_GetObjectItemCaseSensitive(pod, "spec"), "nodeName", "n1");
    daemon_test_apply(&d->cache, "MODIFIED", pod);
    ck_assert_int_eq(daemon_test_phase(d, "lab", name), POLICY_POD_BOUND);
    cJSON_Delete(pod);
}

/* kube-scheduler binds the pod to n1 (offline: the Binding goes nowhere); it must go through. */
static void bind_on_n1(struct ext_daemon *d, const cJSON *pod)
{
    const cJSON *meta = cJSON_GetObjectItemCaseSensitive(pod, "metadata");
    struct ext_bind_args a = {
        .pod_name = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(meta, "name")),
        .pod_namespace = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(meta, "namespace")),
        .pod_uid = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(meta, "uid")),
        .node = "n1"};
    struct ext_bind_answer ans = {.pool = ext_arena_new()};

    ck_assert_int_eq(ext_daemon_bind(d, &a, &ans), EXT_OK);
    ck_assert_msg(ans.error == NULL || !*ans.error, "bind: %s", ans.error);
    ck_assert_int_eq(daemon_test_phase(d, "lab", a.pod_name), POLICY_POD_BOUND);
    ext_arena_free(ans.pool);
}

#define NO_GPU "member rc-gpu-worker-1 (1 GPU): no node has a free GPU"
#define AFTER_BOUND                                                                                \
    "gang lab/rc: this pod is beyond the gang's minimum and is placed once the gang is bound"

/*
 * Issue 10: Events show each subgroup. An autoscaling RayCluster (head, cpu 1 of 2, gpu 1 of
 * 2) on a node with one GPU: its minimum is planned and bound, the second GPU worker waits.
 * Each GangWaiting Event carries the gang's composition; kube-scheduler's retries with nothing
 * changed post nothing more, and each change (the minimum bound, the extra CPU worker placed)
 * writes it once again, not once per retry: into the same Event (issue 21: the new reason
 * replaces the old one; a pod has one GangWaiting Event, not one per reason it was given).
 */
START_TEST(test_waiting_event_shows_the_composition_once_per_change)
{
    static const struct {
        bool bound;        /* the watch reports the pod bound, instead of a filter */
        const char *pod;
        const char *event; /* the Event this filter posts, NULL: none */
        bool bind;         /* then kube-scheduler binds it (through the barrier) */
    } steps[] = {
        {false, "rc-head", NULL}, /* plans the minimum: head, a CPU and a GPU worker */
        {false, "rc-gpu-worker-1",
         "rc-gpu-worker-1: GangWaiting: " AFTER_BOUND "; composition: head 1/1, cpu 1/1 (+1 "
         "extra waiting), gpu 1/1 (+1 extra waiting: " AFTER_BOUND ")"},
        {false, "rc-gpu-worker-1", NULL}, /* retried, nothing changed */
        {true, "rc-head", NULL},
        {true, "rc-cpu-worker-0", NULL},
        {true, "rc-gpu-worker-0", NULL},
        {false, "rc-gpu-worker-1",
         "again rc-gpu-worker-1: " NO_GPU "; composition: head 1/1, cpu 1/1 (+1 extra "
         "waiting), gpu 1/1 (+1 extra waiting: " NO_GPU ")"},
        {false, "rc-gpu-worker-1", NULL},
        {false, "rc-gpu-worker-1", NULL},
        /* The extra CPU worker fits, and is bound after its gang: it never waited, and its
         * bind takes nothing away from the GPU worker that still waits (issue 21: no
         * withdrawal of the gang's Events, which would have been a DELETE here). */
        {false, "rc-cpu-worker-1", NULL, true},
        {false, "rc-gpu-worker-1",
         "again rc-gpu-worker-1: " NO_GPU "; composition: head 1/1, cpu 1/1 (+1 extra), "
         "gpu 1/1 (+1 extra waiting: " NO_GPU ")"},
        {false, "rc-gpu-worker-1", NULL},
    };
    struct canned_api api;
    struct kube_client *kube;
    struct ext_daemon d;
    size_t posted = 0;
    char *first = NULL;

    canned_api_start_routes(&api, DIR, events_ok, 2);
    kube = canned_api_client(&api, NULL);
    daemon_test_up(&d, NULL);
    ck_assert_ptr_nonnull(d.events = ext_events_new(kube));
    ext_events_set_clock(d.events, events_clock);
    daemon_test_load(&d.cache, DIR, "composition_cluster.json", "ADDED");
    for (size_t i = 0; i < sizeof(steps) / sizeof(steps[0]); i++) {
        cJSON *pod = fixture_object("composition_cluster.json", steps[i].pod);
        char *error = steps[i].bound ? NULL : daemon_test_filter(&d, pod), *ev, *name;

        if (steps[i].bound)
            watch_bound(&d, steps[i].pod);
        ck_assert_msg(error == NULL, "%s: %s", steps[i].pod, error);
        if (steps[i].bind)
            bind_on_n1(&d, pod);
        cJSON_Delete(pod);
        if (!steps[i].event)
            continue;
        canned_api_wait_requests(&api, ++posted);
        ev = event_at(&api, posted - 1, &name);
        ck_assert_msg(strcmp(ev, steps[i].event) == 0, "step %zu posted\n  %s\nnot\n  %s", i, ev,
                      steps[i].event);
        if (first) /* one Event, named by muster, written again */
            ck_assert_str_eq(name, first);
        else
            first = strdup(name);
        free(name);
        free(ev);
    }
    free(first);
    ext_events_free(d.events); /* sends what is still queued */
    d.events = NULL;
    ck_assert_uint_eq(canned_api_nreq(&api), posted);
    daemon_test_down(&d);
    kube_client_free(kube);
    canned_api_stop(&api);
}
END_TEST

/*
 * "Its RayCluster or PodGroup is not known yet" is mostly the watch running behind (KubeRay
 * makes the pods after the RayCluster exists): within EXT_UNDECLARED_GRACE_MS of the gang's
 * first pod no GangWaiting says it (it would be false a moment later); after it, one does.
 */
static const struct {
    int64_t age_ms; /* how long before the filter its pods were first seen */
    bool posted;
} undeclared_cases[] = {
    {0, false},
    {EXT_UNDECLARED_GRACE_MS / 2, false},
    {EXT_UNDECLARED_GRACE_MS + 1000, true},
};

START_TEST(test_not_known_yet_waits_for_the_watch)
{
    struct canned_api api;
    struct kube_client *kube;
    struct ext_daemon d;
    char *text = fixture_read(DIR, "composition_cluster.json", NULL), *error, *name;
    cJSON *doc = cJSON_Parse(text), *obj, *head = NULL;
    int64_t seen = ext_now_ms() - undeclared_cases[_i].age_ms;

    canned_api_start_routes(&api, DIR, events_ok, 2);
    kube = canned_api_client(&api, NULL);
    daemon_test_up(&d, NULL);
    ck_assert_ptr_nonnull(d.events = ext_events_new(kube));
    cJSON_ArrayForEach(obj, cJSON_GetObjectItemCaseSensitive(doc, "items"))
    {
        const char *kind = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(obj, "kind"));
        struct ext_arena *a = ext_arena_new();
        struct policy_pod_spec spec;
        char err[256];

        if (strcmp(kind, "Node") == 0)
            daemon_test_apply(&d.cache, "ADDED", obj);
        if (strcmp(kind, "Pod") != 0) { /* no RayCluster: the watch has not seen it */
            ext_arena_free(a);
            continue;
        }
        head = head ? head : obj;
        ck_assert_int_eq(kube_pod_decode(obj, &d.cache.opts, a, &spec, err, sizeof(err), NULL),
                         EXT_OK);
        pthread_mutex_lock(&d.cache.lock);
        ck_assert_int_eq(policy_pod_upsert(d.cache.engine, &spec, seen), POLICY_OK);
        pthread_mutex_unlock(&d.cache.lock);
        ext_arena_free(a);
    }
    error = daemon_test_filter(&d, head);
    ck_assert_ptr_null(error);
    ext_events_free(d.events); /* sends what is queued */
    d.events = NULL;
    ck_assert_uint_eq(canned_api_nreq(&api), undeclared_cases[_i].posted ? 1 : 0);
    if (undeclared_cases[_i].posted) {
        error = event_at(&api, 0, &name);
        ck_assert_msg(strstr(error, "rc-head: GangWaiting: gang lab/rc: its RayCluster or "
                                    "PodGroup is not known yet") == error,
                      "%s", error);
        free(name);
        free(error);
    }
    cJSON_Delete(doc);
    free(text);
    daemon_test_down(&d);
    kube_client_free(kube);
    canned_api_stop(&api);
}
END_TEST

/* ---- the engine's own failure ---------------------------------------------------------------- */

/* A pod the engine refuses is answered with the refusal as it is, in words and code (it was
 * always "out of memory" before issue 11; then anything but that was "invalid input"). */
START_TEST(test_engine_failure_as_it_is)
{
    struct ext_daemon d;
    cJSON *pod = fixture_object("ghost_cluster.json", "rc-gpu-worker-old");
    char want[128], *error;
    /* Not found is said in a 200, as for a pod the watch saw deleted. */
    int rc, code = engine_faults[_i].ext_rc == EXT_ENOTFOUND ? EXT_OK : engine_faults[_i].ext_rc;

    daemon_test_up(&d, NULL);
    daemon_test_load(&d.cache, DIR, "ghost_cluster.json", "ADDED");
    engine_fault_arm(ENGINE_FAULT_POD_UPSERT, engine_faults[_i].policy_rc);
    error = daemon_test_filter_rc(&d, pod, &rc);
    snprintf(want, sizeof(want), "the engine refused the pod: %s", engine_faults[_i].words);
    ck_assert_msg(rc == code, "%s: answered %s", want, ext_strerror(rc));
    ck_assert_msg(error && strcmp(error, want) == 0, "answered \"%s\", not \"%s\"", error, want);
    free(error);
    /* The next filter reaches the engine again. */
    error = daemon_test_filter(&d, pod);
    ck_assert_msg(error == NULL, "error: %s", error);
    cJSON_Delete(pod);
    daemon_test_down(&d);
}
END_TEST

/* ---- /debug/state names a RayJob's gang and the room held for its submitter ------------- */

START_TEST(test_debug_state_shows_the_rayjob)
{
    struct ext_daemon d;
    char *json = NULL;
    size_t len = 0;
    cJSON *root, *g, *gang = NULL, *held;

    daemon_test_up(&d, NULL);
    daemon_test_load(&d.cache, DIR, "queue_team_a.json", "ADDED");
    daemon_test_load(&d.cache, DIR, "rj_cluster.json", "ADDED");
    daemon_test_load(&d.cache, DIR, "rj_rayjob.json", "ADDED");
    ck_assert_int_eq(ext_daemon_handlers.debug_state(&d, &json, &len), EXT_OK);
    ck_assert_ptr_nonnull(root = cJSON_Parse(json));
    cJSON_ArrayForEach(g, cJSON_GetObjectItem(root, "gangs"))
    {
        if (strcmp(cJSON_GetStringValue(cJSON_GetObjectItem(g, "gang")), "lab/train-x7k2p") == 0)
            gang = g;
    }
    ck_assert_ptr_nonnull(gang);
    ck_assert_str_eq(cJSON_GetStringValue(cJSON_GetObjectItem(cJSON_GetObjectItem(gang, "owner"),
                                                              "kind")),
                     "RayJob");
    ck_assert_str_eq(cJSON_GetStringValue(cJSON_GetObjectItem(cJSON_GetObjectItem(gang, "owner"),
                                                              "name")),
                     "lab/train");
    ck_assert(cJSON_IsNull(cJSON_GetObjectItem(gang, "upgradeOf")));
    held = cJSON_GetArrayItem(cJSON_GetObjectItem(gang, "held"), 0);
    ck_assert_ptr_nonnull(held);
    ck_assert_str_eq(cJSON_GetStringValue(cJSON_GetObjectItem(held, "subgroup")), "submitter");
    ck_assert_str_eq(cJSON_GetStringValue(cJSON_GetObjectItem(held, "for")), "RayJob lab/train");
    ck_assert_str_eq(cJSON_GetStringValue(cJSON_GetObjectItem(held, "state")), "Waiting");
    ck_assert_str_eq(cJSON_GetStringValue(cJSON_GetObjectItem(held, "node")), "n1");
    ck_assert_str_eq(
        cJSON_GetStringValue(cJSON_GetObjectItem(cJSON_GetObjectItem(held, "ask"), "cpu")),
        "500m");
    ck_assert_str_eq(cJSON_GetStringValue(cJSON_GetObjectItem(gang, "composition")),
                     "head 1/1, workers 1/1, submitter 1/1 held");
    cJSON_Delete(root);
    free(json);
    daemon_test_down(&d);
}
END_TEST

static Suite *handlers_suite(void)
{
    Suite *s = suite_create("handlers");
    TCase *tc = tcase_create("filter");

    tcase_add_test(tc, test_deleted_pod_is_not_brought_back);
    tcase_add_test(tc, test_filter_on_the_event_loop_never_waits);
    tcase_add_loop_test(tc, test_engine_failure_as_it_is, 0, ENGINE_FAULTS);
    suite_add_tcase(s, tc);
    tc = tcase_create("state");
    tcase_add_test(tc, test_debug_state_shows_the_rayjob);
    suite_add_tcase(s, tc);
    tc = tcase_create("events");
    tcase_add_test(tc, test_waiting_event_shows_the_composition_once_per_change);
    tcase_add_loop_test(tc, test_not_known_yet_waits_for_the_watch, 0,
                        sizeof(undeclared_cases) / sizeof(undeclared_cases[0]));
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(handlers_suite());
    int failed;

    ext_log_setup(CFG_LOG_PLAIN, CFG_LOG_ERROR);
    srunner_run_all(sr, CK_ENV);
    failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
