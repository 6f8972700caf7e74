/*
 * test_barrier.c - bind, all or nothing (daemon/barrier.c), against the canned
 * API server: a gang of three (fixtures/daemon/gang3.json) planned on n1,
 * its members' binds made from threads of their own as kube-scheduler's
 * goroutines make them, and the Bindings the API server sees compared with
 * fixtures/daemon/NAME.req in any order.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon_test.h"
#include "events.h"
#include "engine_fault.h"

#define DIR "daemon"
#define NS "lab"
#define GANG 3

static const char *const members[GANG] = {"w-0", "w-1", "w-2"};
static const char *const uids[GANG] = {"00000000-0000-4000-8000-000000000000",
                                       "00000000-0000-4000-8000-000000000001",
                                       "00000000-0000-4000-8000-000000000002"};

/* The gang of fixture file on the engine, planned whole by its first member's filter. */
static void gang_planned_from(struct ext_daemon *d, const char *file)
{
    const char *nodes[] = {"n1"};
    struct policy_filter_result r;

    daemon_test_load(&d->cache, DIR, file, "ADDED");
    pthread_mutex_lock(&d->cache.lock);
    ck_assert_int_eq(policy_filter(d->cache.engine, NS, "w-0", nodes, 1, ext_now_ms(), &r),
                     POLICY_OK);
    pthread_mutex_unlock(&d->cache.lock);
    ck_assert_msg(r.reason == NULL, "the gang was not planned: %s", r.reason);
    policy_filter_result_cleanup(&r);
    for (int i = 0; i < GANG; i++)
        ck_assert_int_eq(daemon_test_phase(d, NS, members[i]), POLICY_POD_PLANNED);
}

/* gang3.json: a count-only PodGroup of three. */
static void gang_planned(struct ext_daemon *d)
{
    gang_planned_from(d, "gang3.json");
}

/* One member's bind call, as one HTTP connection makes it. */
struct binder {
    struct ext_daemon *d;
    pthread_barrier_t *start; /* NULL: go at once */
    int member;
    int rc;
    char *error; /* the answer's Error, NULL when bound */
    pthread_t thread;
};

static void *bind_member(void *arg)
{
    struct binder *b = arg;
    struct ext_bind_args a = {.pod_name = members[b->member],
                              .pod_namespace = NS,
                              .pod_uid = uids[b->member],
                              .node = "n1"};
    struct ext_bind_answer ans = {.pool = ext_arena_new()};

    ck_assert_ptr_nonnull(ans.pool);
    if (b->start)
        pthread_barrier_wait(b->start);
    b->rc = ext_daemon_bind(b->d, &a, &ans);
    b->error = ans.error && *ans.error ? strdup(ans.error) : NULL;
    ext_arena_free(ans.pool);
    return NULL;
}

/* Bind members which[0..n) at the same moment; join them all. */
static void bind_together(struct ext_daemon *d, struct binder *b, const int *which, size_t n)
{
    pthread_barrier_t start;

    pthread_barrier_init(&start, NULL, (unsigned)n);
    for (size_t i = 0; i < n; i++) {
        b[i] = (struct binder){.d = d, .start = &start, .member = which[i]};
        ck_assert_int_eq(pthread_create(&b[i].thread, NULL, bind_member, &b[i]), 0);
    }
    for (size_t i = 0; i < n; i++) {
        pthread_join(b[i].thread, NULL);
        ck_assert_int_eq(b[i].rc, EXT_OK);
    }
    pthread_barrier_destroy(&start);
}

static void binders_free(struct binder *b, size_t n)
{
    for (size_t i = 0; i < n; i++)
        free(b[i].error);
}

/* ---- the whole gang at once ---------------------------------------------------------------- */

static const struct canned_route bindings_ok[] = {
    {"POST", "/api/v1/namespaces/lab/pods/*/binding", {"created.http"}},
};

START_TEST(test_commit_whole)
{
    static const int all[GANG] = {0, 1, 2};
    struct binder b[GANG];
    struct canned_api api;
    struct ext_daemon d;

    canned_api_start_routes(&api, DIR, bindings_ok, 1);
    daemon_test_up(&d, &api);
    d.settings.bind_wait_ms = 30000; /* never reached: the third bind commits */
    gang_planned(&d);
    bind_together(&d, b, all, GANG);
    for (int i = 0; i < GANG; i++) {
        ck_assert_msg(b[i].error == NULL, "%s: %s", members[i], b[i].error);
        ck_assert_int_eq(daemon_test_phase(&d, NS, members[i]), POLICY_POD_BOUND);
    }
    canned_api_expect_unordered(&api, "barrier_commit.req"); /* each Binding exactly once */
    ck_assert_uint_eq(canned_api_nreq(&api), GANG);
    ck_assert_double_eq(daemon_test_metric(d.bind_outcomes, "commit"), 1);
    ck_assert_double_eq(daemon_test_metric(d.bindings, "bound"), GANG);
    binders_free(b, GANG);
    daemon_test_down(&d);
    canned_api_stop(&api);
}
END_TEST

/* ---- a wait that runs out ------------------------------------------------------------------ */

static const struct timeout_case {
    const char *name;
    int held[GANG];
    size_t nheld;
    /* Each held member's answer must hold every one of these. */
    const char *want[3];
} timeout_cases[] = {
    {"one member of three",
     {0},
     1,
     {"gang lab/trainers: 1 of 3 members at bind or bound; waiting for w-1, w-2"}},
    /* Whichever gives up first still counts the other as at bind. */
    {"two members of three", {0, 1}, 2, {"gang lab/trainers: ", "members at bind", "w-2"}},
};

START_TEST(test_bind_wait_runs_out)
{
    const struct timeout_case *t = &timeout_cases[_i];
    struct binder b[GANG];
    struct canned_api api;
    struct ext_daemon d;

    canned_api_start_routes(&api, DIR, bindings_ok, 1);
    daemon_test_up(&d, &api);
    d.settings.bind_wait_ms = 100;
    gang_planned(&d);
    bind_together(&d, b, t->held, t->nheld);
    for (size_t i = 0; i < t->nheld; i++) {
        const char *who = members[t->held[i]];

        ck_assert_msg(b[i].error != NULL, "%s: %s was bound", t->name, who);
        for (size_t k = 0; k < 3 && t->want[k]; k++)
            ck_assert_msg(strstr(b[i].error, t->want[k]), "%s: %s answered \"%s\", not \"%s\"",
                          t->name, who, b[i].error, t->want[k]);
        /* It left the barrier; its place in the plan stays. */
        ck_assert_int_eq(daemon_test_phase(&d, NS, who), POLICY_POD_PLANNED);
    }
    ck_assert_uint_eq(canned_api_nreq(&api), 0); /* nothing of the gang was posted */
    ck_assert_double_eq(daemon_test_metric(d.bind_outcomes, "timeout"), t->nheld);
    binders_free(b, t->nheld);
    daemon_test_down(&d);
    canned_api_stop(&api);
}
END_TEST

/* ---- a Binding the API server refuses ------------------------------------------------------ */

static const struct canned_route w1_refused[] = {
    {"POST", "/api/v1/namespaces/lab/pods/w-1/binding", {"binding_409.http"}},
    {"POST", "/api/v1/namespaces/lab/pods/*/binding", {"created.http"}},
};

START_TEST(test_binding_refused)
{
    static const int all[GANG] = {0, 1, 2};
    struct binder b[GANG];
    struct canned_api api;
    struct ext_daemon d;

    canned_api_start_routes(&api, DIR, w1_refused, 2);
    daemon_test_up(&d, &api);
    d.settings.bind_wait_ms = 30000;
    gang_planned(&d);
    bind_together(&d, b, all, GANG);
    ck_assert_msg(b[0].error == NULL, "w-0: %s", b[0].error);
    ck_assert_msg(b[2].error == NULL, "w-2: %s", b[2].error);
    ck_assert_ptr_nonnull(b[1].error);
    ck_assert_str_eq(b[1].error, "POST /api/v1/namespaces/lab/pods/w-1/binding: HTTP 409 Conflict: "
                                 "Operation cannot be fulfilled on pods/binding \"w-1\": pod w-1 "
                                 "is already assigned to node \"n9\"");
    /* The refused member is un-committed: no longer BINDING, its place given back. */
    ck_assert_int_eq(daemon_test_phase(&d, NS, "w-1"), POLICY_POD_PENDING);
    ck_assert_int_eq(daemon_test_phase(&d, NS, "w-0"), POLICY_POD_BOUND);
    ck_assert_int_eq(daemon_test_phase(&d, NS, "w-2"), POLICY_POD_BOUND);
    canned_api_expect_unordered(&api, "barrier_commit.req"); /* each tried once */
    ck_assert_double_eq(daemon_test_metric(d.bindings, "bound"), 2);
    ck_assert_double_eq(daemon_test_metric(d.bindings, "refused"), 1);
    binders_free(b, GANG);
    daemon_test_down(&d);
    canned_api_stop(&api);
}
END_TEST

/* ---- a retry while the commit is in flight ------------------------------------------------- */

static const struct canned_route w2_stalls[] = {
    {"POST", "/api/v1/namespaces/lab/pods/w-2/binding", {CANNED_HANG}},
    {"POST", "/api/v1/namespaces/lab/pods/*/binding", {"created.http"}},
};

/* Binds of key held at the barrier now. */
static int held(struct ext_daemon *d, const char *key)
{
    int n = 0;

    pthread_mutex_lock(&d->cache.lock);
    for (const struct held_bind *h = d->held; h; h = h->next)
        n += !h->done && strcmp(h->key, key) == 0;
    pthread_mutex_unlock(&d->cache.lock);
    return n;
}

/*
 * kube-scheduler gives up on a slow bind and retries it while its Binding is
 * in flight: the retry joins the commit and answers with its outcome, here
 * the API server hanging up on that Binding.
 */
START_TEST(test_retry_joins_commit)
{
    static const int all[GANG] = {0, 1, 2};
    struct timespec pause = {0, 2000000};
    struct binder b[GANG], retry = {0};
    pthread_barrier_t start;
    int held_before;
    struct canned_api api;
    struct ext_daemon d;

    canned_api_start_routes(&api, DIR, w2_stalls, 2);
    daemon_test_up(&d, &api);
    d.settings.bind_wait_ms = 30000;
    gang_planned(&d);
    pthread_barrier_init(&start, NULL, GANG);
    for (int i = 0; i < GANG; i++) {
        b[i] = (struct binder){.d = &d, .start = &start, .member = all[i]};
        ck_assert_int_eq(pthread_create(&b[i].thread, NULL, bind_member, &b[i]), 0);
    }
    /* The commit is under way: whoever commits is posting, the other two are held. */
    canned_api_wait_hits(&api, "POST", "/api/v1/namespaces/lab/pods/w-2/binding", 1);
    ck_assert_int_eq(daemon_test_phase(&d, NS, "w-2"), POLICY_POD_BINDING);
    held_before = held(&d, "lab/w-2"); /* 1 unless w-2's own bind is the one committing */
    retry = (struct binder){.d = &d, .member = 2};
    ck_assert_int_eq(pthread_create(&retry.thread, NULL, bind_member, &retry), 0);
    while (held(&d, "lab/w-2") < held_before + 1)
        nanosleep(&pause, NULL);
    canned_api_release(&api);
    for (int i = 0; i < GANG; i++) {
        pthread_join(b[i].thread, NULL);
        ck_assert_int_eq(b[i].rc, EXT_OK);
    }
    pthread_join(retry.thread, NULL);
    pthread_barrier_destroy(&start);
    ck_assert_msg(b[0].error == NULL && b[1].error == NULL, "w-0: %s, w-1: %s", b[0].error,
                  b[1].error);
    ck_assert_ptr_nonnull(b[2].error);
    ck_assert_msg(strncmp(b[2].error, "POST /api/v1/namespaces/lab/pods/w-2/binding: ", 46) == 0,
                  "%s", b[2].error);
    ck_assert_ptr_nonnull(retry.error);
    ck_assert_str_eq(retry.error, b[2].error);
    ck_assert_int_eq(daemon_test_phase(&d, NS, "w-2"), POLICY_POD_PENDING);
    canned_api_expect_unordered(&api, "barrier_commit.req"); /* the retry posted nothing */
    binders_free(b, GANG);
    binders_free(&retry, 1);
    daemon_test_down(&d);
    canned_api_stop(&api);
}
END_TEST

/* ---- the engine's own failure -------------------------------------------------------------- */

/* A bind the engine fails is answered with that failure as it is (it was always "out of
 * memory"): a spec it cannot take, an object it lacks, a limit it reached. The member keeps
 * its place and nothing is posted. */
START_TEST(test_engine_failure_as_it_is)
{
    struct binder b = {0};
    struct canned_api api;
    struct ext_daemon d;
    char want[128];

    canned_api_start_routes(&api, DIR, bindings_ok, 1);
    daemon_test_up(&d, &api);
    gang_planned(&d);
    engine_fault_arm(ENGINE_FAULT_BIND, engine_faults[_i].policy_rc);
    b.d = &d;
    bind_member(&b);
    snprintf(want, sizeof(want), "the engine could not bind the pod: %s",
             engine_faults[_i].words);
    ck_assert_msg(b.rc == engine_faults[_i].ext_rc, "%s: answered %s", want, ext_strerror(b.rc));
    ck_assert_msg(b.error && strcmp(b.error, want) == 0, "answered \"%s\", not \"%s\"", b.error,
                  want);
    ck_assert_int_eq(daemon_test_phase(&d, NS, members[0]), POLICY_POD_PLANNED);
    ck_assert_uint_eq(canned_api_nreq(&api), 0);
    binders_free(&b, 1);
    daemon_test_down(&d);
    canned_api_stop(&api);
}
END_TEST

/* ---- pods muster does not schedule, and no API server -------------------------------------- */

/* A pod the engine does not manage is bound as asked, at once. */
START_TEST(test_bind_plain)
{
    struct ext_bind_args a = {
        .pod_name = "web-0", .pod_namespace = "lab", .pod_uid = "uid-web-0", .node = "n1"};
    struct ext_bind_answer ans = {.pool = ext_arena_new()};
    struct canned_api api;
    struct ext_daemon d;

    canned_api_start_routes(&api, DIR, bindings_ok, 1);
    daemon_test_up(&d, &api);
    ck_assert_int_eq(ext_daemon_bind(&d, &a, &ans), EXT_OK);
    ck_assert_ptr_null(ans.error);
    canned_api_expect(&api, "barrier_plain.req", 1);
    ck_assert_uint_eq(canned_api_nreq(&api), 1);
    ext_arena_free(ans.pool);
    daemon_test_down(&d);
    canned_api_stop(&api);
}
END_TEST

/* --offline: the gang commits in the engine and nothing is posted anywhere. */
START_TEST(test_commit_offline)
{
    static const int all[GANG] = {0, 1, 2};
    struct binder b[GANG];
    struct ext_daemon d;

    daemon_test_up(&d, NULL);
    d.settings.bind_wait_ms = 30000;
    gang_planned(&d);
    bind_together(&d, b, all, GANG);
    for (int i = 0; i < GANG; i++) {
        ck_assert_msg(b[i].error == NULL, "%s: %s", members[i], b[i].error);
        ck_assert_int_eq(daemon_test_phase(&d, NS, members[i]), POLICY_POD_BOUND);
    }
    binders_free(b, GANG);
    daemon_test_down(&d);
}
END_TEST

/* ---- the GangBound Event ------------------------------------------------------------------- */

static const struct canned_route events_ok[] = {
    {"POST", "/api/v1/namespaces/lab/events", {"created.http"}},
};

#define COMMITTED "gang lab/trainers committed whole: 3 members bound at once"

/* One GangBound Event per gang committed whole, not one per member (kube-scheduler writes each
 * member's Scheduled Event with its node): on its head where it has one, whichever member's bind
 * completed it, else on its first member. For a composed gang (a RayCluster: head and a worker
 * group) it ends with the composition the commit completes, as GangWaiting's do; a count has
 * none. */
static const struct bound_event_case {
    const char *fixture, *pod, *message;
} bound_event_cases[] = {
    {"gang3_composed.json", "w-0", COMMITTED "; composition: head 1/1, workers 2/2"},
    {"gang3_head_last.json", "w-2", COMMITTED "; composition: head 1/1, workers 2/2"},
    {"gang3.json", "w-0", COMMITTED},
};

START_TEST(test_bound_event_once_per_gang)
{
    static const int all[GANG] = {0, 1, 2};
    const struct bound_event_case *t = &bound_event_cases[_i];
    struct binder b[GANG];
    struct canned_api events_api;
    struct kube_client *events_kube;
    struct ext_daemon d;
    char *rec;
    cJSON *ev;
    const cJSON *obj;

    canned_api_start_routes(&events_api, DIR, events_ok, 1);
    events_kube = canned_api_client(&events_api, NULL);
    daemon_test_up(&d, NULL); /* offline: the Bindings go nowhere, the Events to events_api */
    ck_assert_ptr_nonnull(d.events = ext_events_new(events_kube));
    d.settings.bind_wait_ms = 30000;
    gang_planned_from(&d, t->fixture);
    bind_together(&d, b, all, GANG);
    ext_events_free(d.events); /* sends what is queued */
    d.events = NULL;
    ck_assert_uint_eq(canned_api_nreq(&events_api), 1);
    rec = canned_api_request(&events_api, 0);
    ev = cJSON_Parse(strstr(rec, "\n\n") + 2);
    obj = cJSON_GetObjectItemCaseSensitive(ev, "involvedObject");
    ck_assert_str_eq(cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(ev, "reason")),
                     "GangBound");
    ck_assert_str_eq(cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(ev, "message")),
                     t->message);
    ck_assert_str_eq(cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(obj, "name")), t->pod);
    cJSON_Delete(ev);
    free(rec);
    binders_free(b, GANG);
    daemon_test_down(&d);
    kube_client_free(events_kube);
    canned_api_stop(&events_api);
}
END_TEST

/* gang3.json's objects but pod missing, which is kept in *late; *first: a copy of w-0. */
static void gang_missing(struct ext_daemon *d, const char *missing, cJSON **late, cJSON **first)
{
    char *text = fixture_read(DIR, "gang3.json", NULL);
    cJSON *doc = cJSON_Parse(text), *obj;

    cJSON_ArrayForEach(obj, cJSON_GetObjectItemCaseSensitive(doc, "items"))
    {
        const char *name = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(
            cJSON_GetObjectItemCaseSensitive(obj, "metadata"), "name"));

        if (strcmp(name, "w-0") == 0)
            *first = cJSON_Duplicate(obj, true);
        if (strcmp(name, missing) == 0)
            *late = cJSON_Duplicate(obj, true);
        else
            daemon_test_apply(&d->cache, "ADDED", obj);
    }
    cJSON_Delete(doc);
    free(text);
}

static const struct canned_route events_all[] = {
    {"POST", "/api/v1/namespaces/lab/events", {"created.http"}},
    {"PATCH", "/api/v1/namespaces/lab/events/*", {"patched.http"}},
    {"DELETE", "/api/v1/namespaces/lab/events?*", {"patched.http"}},
};

/* The gang label of Event request i ("" for none): a POST of reason, or the withdrawal. */
static void label_of(struct canned_api *api, size_t i, const char *reason, char *label, size_t len)
{
    char *rec = canned_api_request(api, i);
    const char *sel = strstr(rec, "labelSelector=muster.dev%2Fgang-id%3D");
    cJSON *ev = NULL, *labels;

    label[0] = '\0';
    if (strncmp(rec, "DELETE ", 7) == 0) {
        ck_assert_ptr_nonnull(sel);
        sel += strlen("labelSelector=muster.dev%2Fgang-id%3D");
        snprintf(label, len, "%.*s", (int)strcspn(sel, "&\n"), sel);
        ck_assert_ptr_nonnull(
            strstr(rec, "&fieldSelector=reason%3DGangWaiting%2Csource%3Dmuster\n"));
    } else {
        ck_assert_msg(strncmp(rec, "POST ", 5) == 0, "%s", rec);
        ev = cJSON_Parse(strstr(rec, "\n\n") + 2);
        ck_assert_str_eq(cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(ev, "reason")),
                         reason);
        labels = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(ev, "metadata"),
                                                  "labels");
        if (labels)
            snprintf(label, len, "%s",
                     cJSON_GetStringValue(
                         cJSON_GetObjectItemCaseSensitive(labels, "muster.dev/gang-id")));
    }
    cJSON_Delete(ev);
    free(rec);
}

/*
 * Issue 21: a gang that waited (a member missing: GangWaiting on the pod its filter turned
 * away) and is then bound withdraws what its pods were told, so no stale reason stays the
 * newest Event on a bound pod: one deletecollection for the gang, by the label its GangWaiting
 * Events carry, after its GangBound. test_bound_event_once_per_gang: a gang that never waited
 * costs no such request. Failed before: the GangWaiting stayed.
 */
START_TEST(test_bound_gang_withdraws_its_waiting)
{
    static const int all[GANG] = {0, 1, 2};
    struct binder b[GANG];
    struct canned_api events_api;
    struct kube_client *events_kube;
    struct ext_daemon d;
    cJSON *late = NULL, *first = NULL;
    char *error, waiting[32], bound[32], withdrawn[32];

    canned_api_start_routes(&events_api, DIR, events_all, 3);
    events_kube = canned_api_client(&events_api, NULL);
    daemon_test_up(&d, NULL);
    ck_assert_ptr_nonnull(d.events = ext_events_new(events_kube));
    d.settings.bind_wait_ms = 30000;
    gang_missing(&d, "w-2", &late, &first);
    ck_assert_ptr_nonnull(late);
    ck_assert_ptr_nonnull(first);
    error = daemon_test_filter(&d, first); /* w-2 is not known to the watch yet: 2 of 3 */
    ck_assert_ptr_null(error);
    cJSON_Delete(first);
    daemon_test_apply(&d.cache, "ADDED", late);
    cJSON_Delete(late);
    gang_planned_from(&d, "gang3.json");
    bind_together(&d, b, all, GANG);
    ext_events_free(d.events); /* sends what is queued, in order */
    d.events = NULL;
    ck_assert_uint_eq(canned_api_nreq(&events_api), 3);
    label_of(&events_api, 0, "GangWaiting", waiting, sizeof(waiting));
    label_of(&events_api, 1, "GangBound", bound, sizeof(bound));
    label_of(&events_api, 2, NULL, withdrawn, sizeof(withdrawn));
    ck_assert_uint_eq(strlen(waiting), 16);
    ck_assert_str_eq(bound, ""); /* GangBound stays */
    ck_assert_str_eq(withdrawn, waiting);
    binders_free(b, GANG);
    daemon_test_down(&d);
    kube_client_free(events_kube);
    canned_api_stop(&events_api);
}
END_TEST

/* ---- a gang on a shared GPU ---------------------------------------------------------------- */

#define RES_PODS "/api/v1/namespaces/muster-system/pods"
#define RES_G0 RES_PODS "/gpu-reservation-n1-g0"

static const char *const sharers[2] = {"sh-0", "sh-1"};

/* Two half-GPU members planned onto n1's one device: GPU group g0. */
static void sharers_planned(struct ext_daemon *d)
{
    const char *nodes[] = {"n1"};
    struct policy_filter_result r;
    struct policy_pod_view v;

    daemon_test_load(&d->cache, DIR, "gang_shared.json", "ADDED");
    pthread_mutex_lock(&d->cache.lock);
    ck_assert_int_eq(policy_filter(d->cache.engine, NS, "sh-0", nodes, 1, ext_now_ms(), &r),
                     POLICY_OK);
    ck_assert_msg(r.reason == NULL, "the gang was not planned: %s", r.reason);
    for (int i = 0; i < 2; i++) {
        ck_assert(policy_pod_view_get(d->cache.engine, NS, sharers[i], &v));
        ck_assert_int_eq(v.phase, POLICY_POD_PLANNED);
        ck_assert_str_eq(v.gpu_groups, "g0");
    }
    pthread_mutex_unlock(&d->cache.lock);
    policy_filter_result_cleanup(&r);
}

static void *bind_sharer(void *arg)
{
    struct binder *b = arg;
    struct ext_bind_args a = {
        .pod_name = sharers[b->member], .pod_namespace = NS, .pod_uid = "", .node = "n1"};
    struct ext_bind_answer ans = {.pool = ext_arena_new()};

    ck_assert_ptr_nonnull(ans.pool);
    pthread_barrier_wait(b->start);
    b->rc = ext_daemon_bind(b->d, &a, &ans);
    b->error = ans.error && *ans.error ? strdup(ans.error) : NULL;
    ext_arena_free(ans.pool);
    return NULL;
}

static void bind_sharers(struct ext_daemon *d, struct binder *b)
{
    pthread_barrier_t start;

    pthread_barrier_init(&start, NULL, 2);
    for (int i = 0; i < 2; i++) {
        b[i] = (struct binder){.d = d, .start = &start, .member = i};
        ck_assert_int_eq(pthread_create(&b[i].thread, NULL, bind_sharer, &b[i]), 0);
    }
    for (int i = 0; i < 2; i++) {
        pthread_join(b[i].thread, NULL);
        ck_assert_int_eq(b[i].rc, EXT_OK);
    }
    pthread_barrier_destroy(&start);
}

/* Every ConfigMap is written before the first Binding is posted. */
static void expect_shares_before_bindings(struct canned_api *api)
{
    size_t n = canned_api_nreq(api), last_share = 0, first_binding = n;

    for (size_t i = 0; i < n; i++) {
        char *rec = canned_api_request(api, i);

        if (strncmp(rec, "POST /api/v1/namespaces/lab/configmaps\n", 39) == 0)
            last_share = i;
        if (first_binding == n && strncmp(rec, "POST ", 5) == 0 &&
            strstr(strtok(rec, "\n"), "/binding"))
            first_binding = i;
        free(rec);
    }
    ck_assert_msg(last_share < first_binding, "a Binding (request %zu) before a ConfigMap (%zu)",
                  first_binding, last_share);
}

static const struct canned_route shared_ok[] = {
    {"POST", RES_PODS, {"created.http"}}, /* early at each bind, then at the commit */
    {"GET", RES_G0, {"share_res_g0_reported.http"}},
    {"GET", "/api/v1/namespaces/lab/pods/sh-0", {"share_sh0.http"}},
    {"GET", "/api/v1/namespaces/lab/pods/sh-1", {"share_sh1.http"}},
    {"POST", "/api/v1/namespaces/lab/configmaps", {"created.http"}},
    {"PATCH", "/api/v1/namespaces/lab/pods/*", {"patched.http"}}, /* answered, never expected */
    {"POST", "/api/v1/namespaces/lab/pods/*/binding", {"created.http"}},
};

/*
 * The commit makes each share real before any Binding: the group's
 * reservation pod reports its device, each member's ConfigMap names it, then
 * each member is bound by one write, its Binding carrying its group and share
 * as annotations (the API server sets them with nodeName): no PATCH.
 */
START_TEST(test_commit_shared)
{
    struct binder b[2];
    struct canned_api api;
    struct ext_daemon d;

    canned_api_start_routes(&api, DIR, shared_ok, sizeof(shared_ok) / sizeof(shared_ok[0]));
    daemon_test_up(&d, &api);
    d.settings.bind_wait_ms = 30000;
    free(d.settings.gpu_sharing.reservation_image); /* the default names muster's version */
    d.settings.gpu_sharing.reservation_image = strdup("registry.example/muster:test");
    sharers_planned(&d);
    bind_sharers(&d, b);
    for (int i = 0; i < 2; i++) {
        ck_assert_msg(b[i].error == NULL, "%s: %s", sharers[i], b[i].error);
        ck_assert_int_eq(daemon_test_phase(&d, NS, sharers[i]), POLICY_POD_BOUND);
    }
    canned_api_expect_unordered(&api, "barrier_shared.req");
    ck_assert_uint_eq(canned_api_unmatched(&api), 0);
    ck_assert_uint_eq(canned_api_hits(&api, "PATCH", "*"), 0);
    ck_assert_uint_eq(canned_api_hits(&api, "POST", "*/binding"), 2);
    expect_shares_before_bindings(&api);
    binders_free(b, 2);
    daemon_test_down(&d);
    canned_api_stop(&api);
}
END_TEST

static const struct canned_route shared_never_reports[] = {
    {"POST", RES_PODS, {"created.http"}},
    {"GET", RES_G0, {"share_res_g0_pending.http"}},
    {"DELETE", RES_G0, {"patched.http"}},
};

/* A share that cannot be made real binds nobody: the whole gang goes back to wait. */
START_TEST(test_commit_shared_fails_whole)
{
    static const char why[] =
        "reservation pod muster-system/gpu-reservation-n1-g0 did not report its GPU within 300 "
        "ms (image pull failure or device plugin down?); sharing on that node is paused and the "
        "gang requeued";
    struct binder b[2];
    struct canned_api api;
    struct ext_daemon d;

    canned_api_start_routes(&api, DIR, shared_never_reports,
                            sizeof(shared_never_reports) / sizeof(shared_never_reports[0]));
    daemon_test_up(&d, &api);
    d.settings.bind_wait_ms = 30000;
    d.settings.gpu_sharing.reservation_timeout_ms = 300;
    sharers_planned(&d);
    bind_sharers(&d, b);
    for (int i = 0; i < 2; i++) {
        ck_assert_msg(b[i].error != NULL, "%s was bound", sharers[i]);
        ck_assert_str_eq(b[i].error, why);
        ck_assert_int_eq(daemon_test_phase(&d, NS, sharers[i]), POLICY_POD_PENDING);
    }
    ck_assert_uint_eq(canned_api_hits(&api, "POST", "*/binding"), 0);
    ck_assert_uint_eq(canned_api_hits(&api, "PATCH", "*"), 0);
    ck_assert_uint_eq(canned_api_hits(&api, "POST", "*/configmaps"), 0);
    ck_assert_uint_eq(canned_api_hits(&api, "DELETE", RES_G0), 1);
    ck_assert_uint_eq(canned_api_unmatched(&api), 0);
    binders_free(b, 2);
    daemon_test_down(&d);
    canned_api_stop(&api);
}
END_TEST

/* ---- shutdown ------------------------------------------------------------------------------ */

START_TEST(test_shutdown_wakes_held)
{
    struct binder b[2] = {{0}};
    struct canned_api api;
    struct ext_daemon d;
    struct timespec pause = {0, 2000000};

    canned_api_start_routes(&api, DIR, bindings_ok, 1);
    daemon_test_up(&d, &api);
    d.settings.bind_wait_ms = 600000; /* only the shutdown can end these waits in time */
    gang_planned(&d);
    for (int i = 0; i < 2; i++) {
        b[i] = (struct binder){.d = &d, .member = i};
        ck_assert_int_eq(pthread_create(&b[i].thread, NULL, bind_member, &b[i]), 0);
    }
    /* A member seen WAITING under the lock is inside its condition wait (it holds
     * the lock from policy_bind until the wait releases it). */
    for (int i = 0; i < 2; i++)
        while (daemon_test_phase(&d, NS, members[i]) != POLICY_POD_WAITING)
            nanosleep(&pause, NULL);
    ext_daemon_stopping(&d);
    for (int i = 0; i < 2; i++) {
        pthread_join(b[i].thread, NULL);
        ck_assert_int_eq(b[i].rc, EXT_OK);
        ck_assert_ptr_nonnull(b[i].error);
        ck_assert_str_eq(b[i].error, "muster is shutting down; kube-scheduler will retry");
    }
    ck_assert_uint_eq(canned_api_nreq(&api), 0);
    binders_free(b, 2);
    daemon_test_down(&d);
    canned_api_stop(&api);
}
END_TEST

static Suite *barrier_suite(void)
{
    Suite *s = suite_create("barrier");
    TCase *tc;

    tc = tcase_create("commit");
    tcase_set_timeout(tc, 30);
    tcase_add_test(tc, test_commit_whole);
    tcase_add_test(tc, test_binding_refused);
    tcase_add_test(tc, test_retry_joins_commit);
    tcase_add_test(tc, test_bind_plain);
    tcase_add_test(tc, test_commit_offline);
    tcase_add_test(tc, test_commit_shared);
    tcase_add_test(tc, test_commit_shared_fails_whole);
    tcase_add_loop_test(tc, test_bound_event_once_per_gang, 0,
                        sizeof(bound_event_cases) / sizeof(bound_event_cases[0]));
    tcase_add_test(tc, test_bound_gang_withdraws_its_waiting);
    tcase_add_loop_test(tc, test_engine_failure_as_it_is, 0, ENGINE_FAULTS);
    suite_add_tcase(s, tc);

    tc = tcase_create("wait");
    tcase_set_timeout(tc, 30);
    tcase_add_loop_test(tc, test_bind_wait_runs_out, 0,
                        (int)(sizeof(timeout_cases) / sizeof(timeout_cases[0])));
    tcase_add_test(tc, test_shutdown_wakes_held);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(barrier_suite());
    int failed;

    ext_log_setup(CFG_LOG_PLAIN, CFG_LOG_ERROR);
    srunner_run_all(sr, CK_ENV);
    failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
