/*
 * test_evict.c - the evictor: the engine's evictions carried out through the
 * Eviction API, a victim gang all or nothing.
 *
 * A fake source hands the evictor a victim gang (so nothing here depends on
 * the engine deciding to evict) and records what it is told back. The
 * evictor talks to one canned API server (canned_api.h): replies from
 * fixtures/evict/NAME.http by method and target, its requests compared with
 * the exact transcript fixtures/evict/NAME.req. Events go to a second one,
 * since they come from the events worker's own thread, in their own order.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base.h"
#include "cache.h"
#include "canned_api.h"
#include "evict.h"
#include "events.h"
#include "fixture.h"
#include "kube.h"

#define N(a) (sizeof(a) / sizeof((a)[0]))
#define DIR_ "evict"
#define WAIT_MS 10000

/* Does this line start a transcript record ("METHOD /path")? */
static bool record_start(const char *line)
{
    static const char *const methods[] = {"GET /", "POST /", "PATCH /", "PUT /", "DELETE /"};

    for (size_t i = 0; i < N(methods); i++)
        if (strncmp(line, methods[i], strlen(methods[i])) == 0)
            return true;
    return false;
}

/* The evictor's requests, in order, are exactly the fixture's (NULL: none at all). */
static void expect_requests(struct canned_api *s, const char *req)
{
    char *want = req ? fixture_read(DIR_, req, NULL) : NULL;
    size_t n = want && record_start(want);

    for (const char *p = want; p && (p = strchr(p, '\n')); p++)
        n += record_start(p + 1);
    free(want);
    if (req)
        canned_api_expect(s, req, n);
    ck_assert_uint_eq(canned_api_nreq(s), n);
}

/* Events posted with this reason and type on this pod whose message holds text. */
static size_t events_posted(struct canned_api *s, const char *pod, const char *reason,
                            const char *type, const char *text)
{
    size_t n = 0;
    char *rec;

    for (size_t i = 0; (rec = canned_api_request(s, i)); i++) {
        const char *body = strstr(rec, "\n\n");
        cJSON *ev = body ? cJSON_Parse(body + 2) : NULL;
        const cJSON *obj = cJSON_GetObjectItemCaseSensitive(ev, "involvedObject");
        const char *name = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(obj, "name"));
        const char *r = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(ev, "reason"));
        const char *t = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(ev, "type"));
        const char *m = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(ev, "message"));

        n += name && r && t && m && strcmp(name, pod) == 0 && strcmp(r, reason) == 0 &&
             strcmp(t, type) == 0 && strstr(m, text) != NULL;
        cJSON_Delete(ev);
        free(rec);
    }
    return n;
}

/* ---- a fake source of evictions ---------------------------------------------------------- */

#define REASON "evicted for gang lab/b of queue team-b: queue team-a is 2 GPUs over its fair share"

struct fake {
    const char *const *pods; /* victims for gang lab/b: of gang lab/a ... */
    size_t npods;
    size_t from_c; /* ... and from this index on, of gang lab/c (0: none) */
    int takes;
    char *told[8]; /* "ns/name ok" or "ns/name refused: why" */
    size_t ntold;
};

static int fake_take(void *ctx, struct policy_eviction **out, size_t *n)
{
    struct fake *f = ctx;
    struct policy_eviction *v = NULL;
    char uid[64];

    if (f->takes++ == 0 && f->npods > 0) {
        ck_assert_ptr_nonnull(v = calloc(f->npods, sizeof(*v)));
        for (size_t i = 0; i < f->npods; i++) {
            snprintf(uid, sizeof(uid), "uid-%s", f->pods[i]);
            v[i] = (struct policy_eviction){.namespace_ = strdup("lab"),
                                            .name = strdup(f->pods[i]),
                                            .uid = strdup(uid),
                                            .gang = strdup(f->from_c && i >= f->from_c
                                                               ? "lab/c"
                                                               : "lab/a"),
                                            .queue = strdup("team-a"),
                                            .by = strdup("lab/b"),
                                            .by_queue = strdup("team-b"),
                                            .kind = POLICY_EVICT_RECLAIM,
                                            .reason = strdup(REASON)};
        }
    }
    *out = v;
    *n = v ? f->npods : 0;
    return POLICY_OK;
}

static int fake_done(void *ctx, const char *ns, const char *name, bool ok, const char *why)
{
    struct fake *f = ctx;

    ck_assert_uint_lt(f->ntold, N(f->told));
    ck_assert(asprintf(&f->told[f->ntold++], "%s/%s %s%s", ns, name,
                       ok ? "ok" : "refused: ", ok ? "" : why) > 0);
    return POLICY_OK;
}

/* ---- the evictor in a test ---------------------------------------------------------------- */

struct rig {
    struct canned_api api, events_api;
    struct kube_client *kube, *events_kube;
    struct cfg_settings settings;
    struct cache cache;
    struct ext_events *events;
    struct ext_metrics *metrics;
    struct ext_metric *evictions;
    struct fake fake;
    struct evictor *evictor;
};

static const char *const victims[] = {"a-head", "a-worker"};

/* The hand-backs' clock, moved by the test only. */
static int64_t fake_ms;

static int64_t fake_now(void)
{
    return __atomic_load_n(&fake_ms, __ATOMIC_SEQ_CST);
}

/* The reclaimer's two pods, known to the engine, so they get their Event. */
static void add_reclaimer(struct cache *c)
{
    static const char *const names[] = {"b-head", "b-worker"};

    for (size_t i = 0; i < N(names); i++) {
        struct policy_pod_spec s = {.namespace_ = "lab",
                                    .name = names[i],
                                    .uid = names[i],
                                    .gang = "lab/b",
                                    .queue = "team-b",
                                    .managed = true,
                                    .cpu_milli = 1000};

        ck_assert_int_eq(policy_pod_upsert(c->engine, &s, 1), POLICY_OK);
    }
}

static const struct canned_route events_routes[] = {
    {"POST", "/api/v1/namespaces/lab/events", {"created.http"}}};

static void rig_start_opts(struct rig *r, const struct canned_route *routes, size_t nroutes,
                           const struct kube_client_opts *opts)
{
    char err[256];

    memset(r, 0, sizeof(*r));
    canned_api_start_routes(&r->api, DIR_, routes, nroutes);
    canned_api_start_routes(&r->events_api, DIR_, events_routes, N(events_routes));
    r->kube = canned_api_client(&r->api, opts);
    r->events_kube = canned_api_client(&r->events_api, NULL);
    ck_assert_int_eq(cfg_settings_init(&r->settings), CFG_OK);
    ck_assert_int_eq(cache_init(&r->cache, &r->settings, NULL, err, sizeof(err)), EXT_OK);
    add_reclaimer(&r->cache);
    ck_assert_ptr_nonnull(r->events = ext_events_new(r->events_kube));
    ck_assert_ptr_nonnull(r->metrics = ext_metrics_new());
    r->evictions = ext_metrics_counter(r->metrics, "muster_evictions_total", "test", "kind,result");
    r->fake = (struct fake){.pods = victims, .npods = N(victims)};
    r->evictor = evictor_start(
        &(struct evictor_config){.kube = r->kube,
                                 .cache = &r->cache,
                                 .source = {.take = fake_take, .done = fake_done, .ctx = &r->fake},
                                 .events = r->events,
                                 .evictions = r->evictions,
                                 .retry_ms = 1,
                                 .retry_refused_ms = 1000,
                                 .now = fake_now});
    ck_assert_ptr_nonnull(r->evictor);
}

static void rig_start(struct rig *r, const struct canned_route *routes, size_t nroutes)
{
    rig_start_opts(r, routes, nroutes, NULL);
}

/* Wait until the evictor has handled at least n wake-ups. */
static void rig_wait_passes(struct rig *r, unsigned long n)
{
    for (int waited = 0; evictor_passes(r->evictor) < n; waited++) {
        ck_assert_msg(waited < WAIT_MS, "the evictor handled %lu wake-ups, want %lu",
                      evictor_passes(r->evictor), n);
        ext_sleep_ms(1);
    }
}

/* Stop the evictor, then send every queued Event: what the server saw is complete. */
static void rig_settle(struct rig *r)
{
    evictor_stop(r->evictor);
    r->evictor = NULL;
    ext_events_free(r->events);
    r->events = NULL;
}

static double counted(struct rig *r, const char *result)
{
    return ext_series_value(ext_metric_with(r->evictions, (const char *[]){"reclaim", result}));
}

static void rig_stop(struct rig *r)
{
    evictor_stop(r->evictor);
    ext_events_free(r->events);
    cache_cleanup(&r->cache);
    cfg_settings_cleanup(&r->settings);
    ext_metrics_free(r->metrics);
    kube_client_free(r->kube);
    kube_client_free(r->events_kube);
    canned_api_stop(&r->api);
    canned_api_stop(&r->events_api);
    for (size_t i = 0; i < r->fake.ntold; i++)
        free(r->fake.told[i]);
}

/* Lead, let one pass run, and settle. */
static void rig_run(struct rig *r, bool leading)
{
    evictor_lead(r->evictor, leading);
    rig_wait_passes(r, 1);
    rig_settle(r);
}

/* ---- cases -------------------------------------------------------------------------- */

START_TEST(test_dry_run_then_real)
{
    const struct canned_route routes[] = {
        {"GET", "/apis/policy/v1/namespaces/lab/poddisruptionbudgets", {"pdb_none.http"}},
        {"POST", "/api/v1/namespaces/lab/pods/*", {"created.http"}}};
    struct rig r;

    rig_start(&r, routes, N(routes));
    rig_run(&r, true);
    expect_requests(&r.api, "dry_run_then_real.req");
    ck_assert_uint_eq(r.fake.ntold, 2);
    ck_assert_str_eq(r.fake.told[0], "lab/a-head ok");
    ck_assert_str_eq(r.fake.told[1], "lab/a-worker ok");
    ck_assert_double_eq(counted(&r, "evicted"), 2);
    ck_assert_double_eq(counted(&r, "refused"), 0);
    /* Both sides told: the engine's reason on each victim, the victims on the reclaimer. */
    ck_assert_uint_eq(events_posted(&r.events_api, "a-head", "Reclaimed", "Warning", REASON), 1);
    ck_assert_uint_eq(events_posted(&r.events_api, "a-worker", "Reclaimed", "Warning", REASON), 1);
    for (int i = 0; i < 2; i++)
        ck_assert_uint_eq(events_posted(&r.events_api, i ? "b-worker" : "b-head", "Reclaimed",
                                        "Normal",
                                        "evicted gang lab/a of queue team-a (2 of 2 pods) for this "
                                        "gang: queue team-a is 2 GPUs over its fair share"),
                          1);
    rig_stop(&r);
}
END_TEST

START_TEST(test_dry_run_refused)
{
    /* The second pod's dry run meets a PodDisruptionBudget: 429. */
    const struct canned_route routes[] = {
        {"GET", "/apis/policy/v1/namespaces/lab/poddisruptionbudgets", {"pdb_none.http"}},
        {"POST", "/api/v1/namespaces/lab/pods/a-worker/eviction", {"too_many.http"}},
        {"POST", "/api/v1/namespaces/lab/pods/*", {"created.http"}}};
    static const char why[] = "refused: dry run refused, nothing of the gang evicted: pod "
                              "lab/a-worker: HTTP 429 TooManyRequests: Cannot evict pod as it "
                              "would violate the pod's disruption budget.";
    char want[512];
    struct rig r;

    rig_start(&r, routes, N(routes));
    rig_run(&r, true);
    /* Nothing of the gang evicted: no real eviction was posted, not even the first pod's. */
    expect_requests(&r.api, "dry_run_refused.req");
    ck_assert_uint_eq(r.fake.ntold, 2);
    snprintf(want, sizeof(want), "lab/a-head %s", why);
    ck_assert_str_eq(r.fake.told[0], want);
    snprintf(want, sizeof(want), "lab/a-worker %s", why);
    ck_assert_str_eq(r.fake.told[1], want);
    ck_assert_double_eq(counted(&r, "evicted"), 0);
    ck_assert_double_eq(counted(&r, "refused"), 2);
    ck_assert_uint_eq(events_posted(&r.events_api, "a-head", "Reclaimed", "Warning", ""), 0);
    ck_assert_uint_eq(events_posted(&r.events_api, "b-head", "EvictionRefused", "Warning",
                                    "gang lab/a of queue team-a was not evicted for this gang: dry "
                                    "run refused"),
                      1);
    rig_stop(&r);
}
END_TEST

/*
 * One decision, two victim gangs: lab/a's dry runs pass, lab/c's is refused by a budget.
 * Nothing is evicted, not even lab/a: its room alone is of no use to lab/b, whose plan is
 * abandoned, and a job killed for nothing is the costliest mistake (before, lab/a went).
 */
START_TEST(test_decision_all_or_nothing)
{
    static const char *const two_gangs[] = {"a-head", "a-worker", "c-0"};
    const struct canned_route routes[] = {
        {"GET", "/apis/policy/v1/namespaces/lab/poddisruptionbudgets", {"pdb_none.http"}},
        {"POST", "/api/v1/namespaces/lab/pods/c-0/eviction", {"too_many.http"}},
        {"POST", "/api/v1/namespaces/lab/pods/*", {"created.http"}}};
    struct rig r;
    char *rec;
    size_t posts = 0, real = 0;

    rig_start(&r, routes, N(routes));
    r.fake.pods = two_gangs;
    r.fake.npods = N(two_gangs);
    r.fake.from_c = 2;
    rig_run(&r, true);
    for (size_t i = 0; (rec = canned_api_request(&r.api, i)); i++) {
        posts += strncmp(rec, "POST ", 5) == 0;
        real += strncmp(rec, "POST ", 5) == 0 && !strstr(rec, "\"dryRun\"");
        free(rec);
    }
    ck_assert_uint_eq(posts, 3); /* the three dry runs */
    ck_assert_uint_eq(real, 0);
    ck_assert_uint_eq(r.fake.ntold, 3);
    ck_assert_msg(strstr(r.fake.told[0], "lab/a-head refused: gang lab/c, another victim of the "
                                         "same decision, was refused: dry run refused") != NULL,
                  "%s", r.fake.told[0]);
    ck_assert_ptr_nonnull(strstr(r.fake.told[2], "lab/c-0 refused: dry run refused"));
    ck_assert_double_eq(counted(&r, "evicted"), 0);
    ck_assert_double_eq(counted(&r, "refused"), 3);
    ck_assert_uint_eq(events_posted(&r.events_api, "a-head", "Reclaimed", "Warning", ""), 0);
    ck_assert_uint_eq(events_posted(&r.events_api, "b-head", "EvictionRefused", "Warning",
                                    "gang lab/a of queue team-a was not evicted for this gang"),
                      1);
    rig_stop(&r);
}
END_TEST

START_TEST(test_refused_then_handed_back)
{
    /* Refused: the engine abandons its plan, and kube-scheduler would not try lab/b again until
     * something it watches changes. A while later its pending pods are handed back. */
    const struct canned_route routes[] = {
        {"GET", "/apis/policy/v1/namespaces/lab/poddisruptionbudgets", {"pdb_none.http"}},
        {"POST", "/api/v1/namespaces/lab/pods/a-worker/eviction", {"too_many.http"}},
        {"POST", "/api/v1/namespaces/lab/pods/*", {"created.http"}},
        {"PATCH", "/api/v1/namespaces/lab/pods/b-*", {"patched.http"}}};
    struct rig r;

    __atomic_store_n(&fake_ms, 0, __ATOMIC_SEQ_CST);
    rig_start(&r, routes, N(routes));
    evictor_lead(r.evictor, true);
    rig_wait_passes(&r, 1);
    evictor_kick(r.evictor); /* before the first pause (1 s here) is over: nothing */
    rig_wait_passes(&r, 2);
    ck_assert_uint_eq(canned_api_nreq(&r.api), 3);
    __atomic_store_n(&fake_ms, 1000, __ATOMIC_SEQ_CST);
    evictor_kick(r.evictor);
    rig_wait_passes(&r, 3);
    __atomic_store_n(&fake_ms, 2999, __ATOMIC_SEQ_CST); /* the next pause is 2 s */
    evictor_kick(r.evictor);
    rig_wait_passes(&r, 4);
    rig_settle(&r);
    expect_requests(&r.api, "refused_handed_back.req");
    ck_assert_int_eq(r.fake.takes, 4); /* the later passes found nothing new to evict */
    rig_stop(&r);
}
END_TEST

START_TEST(test_budget_refuses)
{
    /* Each dry run would pass (a dry run spends nothing), but the budget allows one disruption
     * for the gang's two running pods: nothing is even dry-run. */
    const struct canned_route routes[] = {
        {"GET", "/apis/policy/v1/namespaces/lab/poddisruptionbudgets", {"pdb_one.http"}},
        {"GET", "/api/v1/namespaces/lab/pods", {"pods_a.http"}},
        {"POST", "/api/v1/namespaces/lab/pods/*", {"created.http"}}};
    struct rig r;

    rig_start(&r, routes, N(routes));
    rig_run(&r, true);
    expect_requests(&r.api, "budget_refuses.req");
    ck_assert_uint_eq(r.fake.ntold, 2);
    ck_assert_str_eq(r.fake.told[1], "lab/a-worker refused: PodDisruptionBudget lab/a-pdb allows "
                                     "1 disruptions, and 2 of the gang's running pods are under "
                                     "it");
    ck_assert_double_eq(counted(&r, "refused"), 2);
    rig_stop(&r);
}
END_TEST

/*
 * What cannot be read refuses: a budget list or a pod list that fails (500, 429, a reply with
 * no items, one over the client's reply cap) evicts nothing of the gang, not even a dry run
 * (before, a failed read let the evictions go ahead: with a budget allowing 1 disruption and a
 * 2-pod gang, "evicted 1 of 2, failed 1"). Counted as unchecked; the reclaimer is told.
 */
static const struct {
    const char *budgets, *pods; /* replies to the two lists (pods NULL: not asked) */
    size_t max_reply;           /* the client's reply cap; 0 = default */
    const char *req;            /* the transcript */
    const char *why;            /* in the refusal */
} unread_cases[] = {
    {"status_500.http", NULL, 0, "budgets_unread.req",
     "the PodDisruptionBudgets of namespace lab could not be read, so nothing of the gang is "
     "evicted now: GET /apis/policy/v1/namespaces/lab/poddisruptionbudgets: HTTP 500 "
     "InternalError: etcdserver: request timed out"},
    {"too_many.http", NULL, 0, "budgets_unread.req",
     "the PodDisruptionBudgets of namespace lab could not be read"},
    {"not_a_list.http", NULL, 0, "budgets_unread.req",
     "the PodDisruptionBudgets of namespace lab could not be read, so nothing of the gang is "
     "evicted now: GET /apis/policy/v1/namespaces/lab/poddisruptionbudgets: the reply has no "
     "items list"},
    {"pdb_one.http", "status_500.http", 0, "budget_refuses.req",
     "the pods of namespace lab could not be read to count them under its "
     "PodDisruptionBudgets, so nothing of the gang is evicted now: GET "
     "/api/v1/namespaces/lab/pods: HTTP 500 InternalError: etcdserver: request timed out"},
    {"pdb_one.http", "pods_big.http", 4096, "budget_refuses.req",
     "the pods of namespace lab could not be read to count them under its "
     "PodDisruptionBudgets"},
};

START_TEST(test_budget_unread_refuses)
{
    const struct canned_route routes[] = {
        {"GET", "/apis/policy/v1/namespaces/lab/poddisruptionbudgets", {unread_cases[_i].budgets}},
        {"GET",
         "/api/v1/namespaces/lab/pods",
         {unread_cases[_i].pods ? unread_cases[_i].pods : "status_500.http"}},
        {"POST", "/api/v1/namespaces/lab/pods/*", {"created.http"}}};
    struct kube_client_opts opts = {.max_reply = unread_cases[_i].max_reply};
    struct rig r;

    rig_start_opts(&r, routes, N(routes), unread_cases[_i].max_reply ? &opts : NULL);
    rig_run(&r, true);
    expect_requests(&r.api, unread_cases[_i].req);
    ck_assert_uint_eq(r.fake.ntold, 2);
    for (size_t i = 0; i < 2; i++)
        ck_assert_msg(strstr(r.fake.told[i], unread_cases[_i].why) &&
                          strstr(r.fake.told[i], " refused: "),
                      "told %s; want a refusal with: %s", r.fake.told[i], unread_cases[_i].why);
    ck_assert_double_eq(counted(&r, "evicted"), 0);
    ck_assert_double_eq(counted(&r, "unchecked"), 2);
    ck_assert_uint_eq(events_posted(&r.events_api, "b-head", "EvictionRefused", "Warning",
                                    "could not be read"),
                      1);
    rig_stop(&r);
}
END_TEST

START_TEST(test_budget_allows)
{
    const struct canned_route routes[] = {
        {"GET", "/apis/policy/v1/namespaces/lab/poddisruptionbudgets", {"pdb_roomy.http"}},
        {"GET", "/api/v1/namespaces/lab/pods", {"pods_a.http"}},
        {"POST", "/api/v1/namespaces/lab/pods/*", {"created.http"}}};
    struct rig r;

    rig_start(&r, routes, N(routes));
    rig_run(&r, true);
    expect_requests(&r.api, "budget_allows.req");
    ck_assert_double_eq(counted(&r, "evicted"), 2);
    rig_stop(&r);
}
END_TEST

START_TEST(test_real_retried)
{
    /* a-worker: its dry run passes, its real eviction fails once, then goes through. */
    const struct canned_route routes[] = {
        {"GET", "/apis/policy/v1/namespaces/lab/poddisruptionbudgets", {"pdb_none.http"}},
        {"POST",
         "/api/v1/namespaces/lab/pods/a-worker/eviction",
         {"created.http", "status_500.http", "created.http"}},
        {"POST", "/api/v1/namespaces/lab/pods/*", {"created.http"}}};
    struct rig r;

    rig_start(&r, routes, N(routes));
    rig_run(&r, true);
    expect_requests(&r.api, "real_retried.req");
    ck_assert_str_eq(r.fake.told[1], "lab/a-worker ok");
    ck_assert_double_eq(counted(&r, "evicted"), 2);
    rig_stop(&r);
}
END_TEST

START_TEST(test_real_fails)
{
    /* a-worker's real eviction keeps failing: a-head is gone, a-worker reported failed. */
    const struct canned_route routes[] = {
        {"GET", "/apis/policy/v1/namespaces/lab/poddisruptionbudgets", {"pdb_none.http"}},
        {"POST",
         "/api/v1/namespaces/lab/pods/a-worker/eviction",
         {"created.http", "status_500.http"}},
        {"POST", "/api/v1/namespaces/lab/pods/*", {"created.http"}}};
    struct rig r;

    rig_start(&r, routes, N(routes));
    rig_run(&r, true);
    ck_assert_str_eq(r.fake.told[0], "lab/a-head ok");
    ck_assert_str_eq(r.fake.told[1], "lab/a-worker refused: pod lab/a-worker: HTTP 500 "
                                     "InternalError: etcdserver: request timed out");
    ck_assert_double_eq(counted(&r, "evicted"), 1);
    ck_assert_double_eq(counted(&r, "failed"), 1);
    ck_assert_uint_eq(
        events_posted(&r.events_api, "b-head", "Reclaimed", "Normal", "(1 of 2 pods)"), 1);
    /* The pod that stayed is told the gang is broken and what muster does about it. */
    ck_assert_uint_eq(events_posted(&r.events_api, "a-worker", "EvictionIncomplete", "Warning",
                                    "gang lab/a was partly evicted for gang lab/b (1 of 2 pods)"),
                      1);
    ck_assert_uint_eq(events_posted(&r.events_api, "a-head", "EvictionIncomplete", "Warning", ""),
                      0);
    rig_stop(&r);
}
END_TEST

START_TEST(test_only_the_leader_evicts)
{
    const struct canned_route routes[] = {
        {"POST", "/api/v1/namespaces/lab/pods/*", {"created.http"}}};
    struct rig r;

    rig_start(&r, routes, N(routes));
    rig_run(&r, false);
    /* Nothing on the wire but Events; the engine is told, so it frees the room it held. */
    expect_requests(&r.api, NULL);
    ck_assert_uint_eq(r.fake.ntold, 2);
    ck_assert_str_eq(r.fake.told[0], "lab/a-head refused: this replica's kube-scheduler does not "
                                     "hold the Lease; only the leader evicts");
    ck_assert_double_eq(counted(&r, "evicted"), 0);
    rig_stop(&r);
}
END_TEST

START_TEST(test_waits_for_the_lease)
{
    const struct canned_route routes[] = {
        {"GET", "/apis/policy/v1/namespaces/lab/poddisruptionbudgets", {"pdb_none.http"}},
        {"POST", "/api/v1/namespaces/lab/pods/*", {"created.http"}}};
    struct rig r;

    rig_start(&r, routes, N(routes));
    /* A filter's kick before housekeeping has asked the Lease: the evictions stay in the engine. */
    evictor_kick(r.evictor);
    rig_wait_passes(&r, 1);
    ck_assert_int_eq(r.fake.takes, 0);
    evictor_lead(r.evictor, true);
    rig_wait_passes(&r, 2);
    ck_assert_int_eq(r.fake.takes, 1);
    rig_settle(&r);
    ck_assert_uint_eq(r.fake.ntold, 2);
    ck_assert_str_eq(r.fake.told[1], "lab/a-worker ok");
    rig_stop(&r);
}
END_TEST

/* ---- the engine's own look at gangs nobody asks about ---------------------------------- */

static void gpu_queue(struct cache *c, const char *name, int64_t quota_milli)
{
    struct policy_queue_spec q = {.name = name};

    for (int r = 0; r < POLICY_RES_COUNT; r++) {
        q.quota.v[r] = r == POLICY_RES_GPU ? quota_milli : -1;
        q.limit.v[r] = -1;
        q.over_quota_weight.v[r] = 1;
    }
    ck_assert_int_eq(policy_queue_upsert(c->engine, &q), POLICY_OK);
}

static void gpu_pod(struct cache *c, const char *name, const char *queue, const char *node)
{
    struct policy_pod_spec s = {.namespace_ = "lab", .name = name, .uid = name, .queue = queue,
                                .managed = true, .cpu_milli = 1000, .gpus = 1, .node = node};

    ck_assert_int_eq(policy_pod_upsert(c->engine, &s, ext_now_ms()), POLICY_OK);
}

/* Has the API server seen a request starting with this line? */
static bool requested(struct canned_api *s, const char *line)
{
    bool found = false;
    char *rec;

    for (size_t i = 0; !found && (rec = canned_api_request(s, i)); i++) {
        found = strncmp(rec, line, strlen(line)) == 0;
        free(rec);
    }
    return found;
}

/*
 * team-a (GPU quota 0) holds both GPUs of n1; team-b's pending 1-GPU pod b-0 is never filtered
 * (kube-scheduler's own filter finds no free GPU). With the engine as its source the evictor
 * looks on its own, once b-0 has waited evictions.unaskedWait, and evicts team-a's younger pod
 * for it through the Eviction API; none before that wait.
 */
START_TEST(test_look_reclaims_for_an_unasked_pod)
{
    const struct canned_route routes[] = {
        {"GET", "/apis/policy/v1/namespaces/lab/poddisruptionbudgets", {"pdb_none.http"}},
        {"POST", "/api/v1/namespaces/lab/pods/*", {"created.http"}}};
    struct policy_node_spec n1 = {.name = "n1", .cpu_milli = 8000, .memory_bytes = 1LL << 35,
                                  .pods = 110, .gpus = 2};
    const char *evict = "POST /api/v1/namespaces/lab/pods/a-1/eviction";
    struct evictor_config ec;
    struct rig r;

    rig_start(&r, routes, N(routes));
    evictor_stop(r.evictor); /* this one is the fake's */
    ck_assert_int_eq(policy_node_upsert(r.cache.engine, &n1), POLICY_OK);
    gpu_queue(&r.cache, "team-a", 0);
    gpu_queue(&r.cache, "team-b", 2000);
    gpu_pod(&r.cache, "a-0", "team-a", "n1");
    gpu_pod(&r.cache, "a-1", "team-a", "n1");
    gpu_pod(&r.cache, "b-0", "team-b", NULL);
    ec = (struct evictor_config){.kube = r.kube,
                                 .cache = &r.cache,
                                 .source = evict_engine_source(&r.cache),
                                 .events = r.events,
                                 .evictions = r.evictions,
                                 .retry_ms = 1,
                                 .unasked_wait_ms = 1500};
    ck_assert_ptr_nonnull(r.evictor = evictor_start(&ec));
    evictor_lead(r.evictor, true);
    ext_sleep_ms(700); /* a look or more, all before the wait is over */
    ck_assert(!requested(&r.api, evict));
    ck_assert_double_eq(counted(&r, "evicted"), 0);
    for (int waited = 0; counted(&r, "evicted") < 1; waited += 10) {
        ck_assert_msg(waited < WAIT_MS, "no eviction for the unasked pod");
        ext_sleep_ms(10);
    }
    rig_settle(&r);
    ck_assert(requested(&r.api, evict));
    ck_assert(!requested(&r.api, "POST /api/v1/namespaces/lab/pods/a-0/eviction"));
    ck_assert_double_eq(counted(&r, "evicted"), 1);
    ck_assert_uint_eq(events_posted(&r.events_api, "a-1", "Reclaimed", "Warning",
                                    "evicted for gang lab/b-0 of queue team-b"),
                      1);
    rig_stop(&r);
}
END_TEST

/* ---- label selectors, as a PodDisruptionBudget's -------------------------------------------- */

static const struct {
    const char *selector; /* JSON; NULL: none */
    bool matches;
} selector_cases[] = {
    {NULL, false},
    {"{}", true},
    {"{\"matchLabels\":{\"ray.io/cluster\":\"a\"}}", true},
    {"{\"matchLabels\":{\"ray.io/cluster\":\"b\"}}", false},
    {"{\"matchLabels\":{\"ray.io/cluster\":\"a\",\"tier\":\"gpu\"}}", false},
    {"{\"matchExpressions\":[{\"key\":\"ray.io/cluster\",\"operator\":\"In\",\"values\":[\"b\","
     "\"a\"]}]}",
     true},
    {"{\"matchExpressions\":[{\"key\":\"ray.io/cluster\",\"operator\":\"NotIn\",\"values\":"
     "[\"a\"]}]}",
     false},
    {"{\"matchExpressions\":[{\"key\":\"tier\",\"operator\":\"NotIn\",\"values\":[\"a\"]}]}", true},
    {"{\"matchExpressions\":[{\"key\":\"ray.io/node-type\",\"operator\":\"Exists\"}]}", true},
    {"{\"matchExpressions\":[{\"key\":\"ray.io/node-type\",\"operator\":\"DoesNotExist\"}]}",
     false},
    {"{\"matchExpressions\":[{\"key\":\"tier\",\"operator\":\"Gt\",\"values\":[\"1\"]}]}", false},
    {"{\"matchLabels\":{\"ray.io/cluster\":\"a\"},\"matchExpressions\":[{\"key\":\"tier\","
     "\"operator\":\"DoesNotExist\"}]}",
     true},
};

START_TEST(test_selector)
{
    cJSON *labels = cJSON_Parse("{\"ray.io/cluster\":\"a\",\"ray.io/node-type\":\"head\"}");
    cJSON *sel = selector_cases[_i].selector ? cJSON_Parse(selector_cases[_i].selector) : NULL;

    ck_assert(!selector_cases[_i].selector || sel);
    ck_assert_msg(evict_selector_matches(sel, labels) == selector_cases[_i].matches, "%s",
                  selector_cases[_i].selector ? selector_cases[_i].selector : "(null)");
    cJSON_Delete(sel);
    cJSON_Delete(labels);
}
END_TEST

static Suite *evict_suite(void)
{
    Suite *s = suite_create("evict");
    TCase *tc = tcase_create("gang");

    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, test_dry_run_then_real);
    tcase_add_test(tc, test_dry_run_refused);
    tcase_add_test(tc, test_decision_all_or_nothing);
    tcase_add_test(tc, test_refused_then_handed_back);
    tcase_add_test(tc, test_real_retried);
    tcase_add_test(tc, test_real_fails);
    suite_add_tcase(s, tc);
    tc = tcase_create("budget");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, test_budget_refuses);
    tcase_add_test(tc, test_budget_allows);
    tcase_add_loop_test(tc, test_budget_unread_refuses, 0, N(unread_cases));
    tcase_add_loop_test(tc, test_selector, 0, N(selector_cases));
    suite_add_tcase(s, tc);
    tc = tcase_create("leader");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, test_only_the_leader_evicts);
    tcase_add_test(tc, test_waits_for_the_lease);
    tcase_add_test(tc, test_look_reclaims_for_an_unasked_pod);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(evict_suite());
    int failed;

    srunner_run_all(sr, CK_ENV);
    failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
