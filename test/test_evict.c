/*
 * test_evict.c - the evictor: the engine's evictions carried out through the
 * Eviction API, a victim gang all or nothing.
 *
 * A fake source hands the evictor a victim gang (so nothing here depends on
 * the engine deciding to evict) and records what it is told back. A loopback
 * server inside the test answers with canned replies from
 * fixtures/evict/NAME.http, chosen by method and target, and records every
 * request; the evictor's requests are compared with the exact transcript in
 * fixtures/evict/NAME.req (Events, from their own thread, are checked apart).
 *
 * The server is a small local copy of the pattern in test_kube_client.c: the
 * shared canned API server (test/canned_api.h, branch daemontests) is not on
 * main yet. Its fixture and transcript formats are the same, so moving over
 * is a change of calls only.
 */
#include <check.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "base.h"
#include "cache.h"
#include "evict.h"
#include "events.h"
#include "fixture.h"
#include "kube.h"

#define N(a) (sizeof(a) / sizeof((a)[0]))
#define DIR_ "evict"
#define MAX_REQS 128
#define MAX_REPLIES 4
#define WAIT_MS 10000

/* ---- a canned API server, routed by method and target ---------------------------------- */

struct route {
    const char *method;
    const char *target;               /* exact, or a prefix when it ends in '*' */
    const char *replies[MAX_REPLIES]; /* fixtures in the order asked; the last repeats */
};

struct api {
    int lfd, port, wake[2];
    pthread_t thread;
    pthread_mutex_t lock;
    const struct route *routes;
    size_t nroutes, asked[16];
    char *reqs[MAX_REQS];
    size_t nreq;
};

static void send_all(int fd, const char *p, size_t n)
{
    for (ssize_t w; n > 0 && (w = send(fd, p, n, MSG_NOSIGNAL)) > 0; p += w, n -= (size_t)w)
        ;
}

static char *header(const char *head, const char *name)
{
    size_t n = strlen(name);

    for (const char *p = strstr(head, "\r\n"); p; p = strstr(p + 2, "\r\n"))
        if (strncasecmp(p + 2, name, n) == 0 && p[2 + n] == ':') {
            const char *v = p + 3 + n + strspn(p + 3 + n, " ");

            return strndup(v, strcspn(v, "\r\n"));
        }
    return NULL;
}

/* One request as "METHOD TARGET\nAuthorization..\nContent-Type..\n\nbody\n"; NULL if cut off. */
static char *read_request(int fd, char *target, size_t tlen)
{
    char buf[65536], *end = NULL, *auth, *ctype, *clen, *rec;
    size_t n = 0;
    ssize_t r;

    while (n < sizeof(buf) - 1 && (r = recv(fd, buf + n, sizeof(buf) - 1 - n, 0)) > 0) {
        buf[n += (size_t)r] = '\0';
        if (!(end = strstr(buf, "\r\n\r\n")))
            continue;
        clen = header(buf, "Content-Length");
        r = (ssize_t)(end + 4 - buf) + (clen ? atol(clen) : 0);
        free(clen);
        if ((ssize_t)n >= r)
            break;
    }
    if (!end)
        return NULL;
    *end = '\0';
    auth = header(buf, "Authorization");
    ctype = header(buf, "Content-Type");
    *strstr(buf, " HTTP/1.1") = '\0';
    snprintf(target, tlen, "%s", buf);
    ck_assert(asprintf(&rec, "%s\n%s%s%s%s%s%s\n%s%s", buf, auth ? "Authorization: " : "",
                       auth ? auth : "", auth ? "\n" : "", ctype ? "Content-Type: " : "",
                       ctype ? ctype : "", ctype ? "\n" : "", end + 4, end[4] ? "\n" : "") > 0);
    free(auth);
    free(ctype);
    return rec;
}

static bool route_matches(const struct route *r, const char *line)
{
    size_t m = strlen(r->method), t = strlen(r->target);

    if (strncmp(line, r->method, m) != 0 || line[m] != ' ')
        return false;
    line += m + 1;
    if (t > 0 && r->target[t - 1] == '*')
        return strncmp(line, r->target, t - 1) == 0;
    return strcmp(line, r->target) == 0;
}

/* Send fixture name: its status line and headers (LF lines go out as CRLF), then the body. */
static void reply(int fd, const char *name)
{
    char *text = fixture_read(DIR_, name, NULL), *body = strstr(text, "\n\n"), *line, *save;
    char *out;

    ck_assert_msg(body != NULL, "%s: no blank line after the headers", name);
    *body = '\0';
    body += 2;
    for (line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
        send_all(fd, line, strlen(line));
        send_all(fd, "\r\n", 2);
    }
    ck_assert(asprintf(&out, "Content-Length: %zu\r\nConnection: close\r\n\r\n", strlen(body)) > 0);
    send_all(fd, out, strlen(out));
    send_all(fd, body, strlen(body));
    free(out);
    free(text);
}

static void *api_main(void *arg)
{
    struct api *s = arg;
    struct pollfd p[2] = {{.fd = s->lfd, .events = POLLIN}, {.fd = s->wake[0], .events = POLLIN}};

    while (poll(p, 2, -1) >= 0 && !p[1].revents) {
        const char *name = "not_found.http";
        char line[1024] = "", *rec;
        int fd = accept(s->lfd, NULL, NULL);

        if (fd < 0)
            continue;
        rec = read_request(fd, line, sizeof(line));
        pthread_mutex_lock(&s->lock);
        for (size_t i = 0; rec && i < s->nroutes; i++) {
            const struct route *r = &s->routes[i];
            size_t k;

            if (!route_matches(r, line))
                continue;
            for (k = 0; k + 1 < MAX_REPLIES && r->replies[k + 1]; k++)
                ;
            name = r->replies[s->asked[i] < k ? s->asked[i] : k];
            s->asked[i]++;
            break;
        }
        if (rec && s->nreq < MAX_REQS)
            s->reqs[s->nreq++] = rec;
        else
            free(rec);
        pthread_mutex_unlock(&s->lock);
        reply(fd, name);
        shutdown(fd, SHUT_WR);
        close(fd);
    }
    return NULL;
}

static void api_start(struct api *s, const struct route *routes, size_t nroutes)
{
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t alen = sizeof(a);

    memset(s, 0, sizeof(*s));
    ck_assert_uint_le(nroutes, N(s->asked));
    s->routes = routes;
    s->nroutes = nroutes;
    pthread_mutex_init(&s->lock, NULL);
    ck_assert_int_eq(pipe(s->wake), 0);
    ck_assert_int_ge(s->lfd = socket(AF_INET, SOCK_STREAM, 0), 0);
    ck_assert_int_eq(bind(s->lfd, (struct sockaddr *)&a, sizeof(a)), 0);
    ck_assert_int_eq(listen(s->lfd, 64), 0);
    ck_assert_int_eq(getsockname(s->lfd, (struct sockaddr *)&a, &alen), 0);
    s->port = ntohs(a.sin_port);
    ck_assert_int_eq(pthread_create(&s->thread, NULL, api_main, s), 0);
}

static void api_stop(struct api *s)
{
    ck_assert_int_eq(write(s->wake[1], "x", 1), 1);
    pthread_join(s->thread, NULL);
    close(s->lfd);
    close(s->wake[0]);
    close(s->wake[1]);
    for (size_t i = 0; i < s->nreq; i++)
        free(s->reqs[i]);
    pthread_mutex_destroy(&s->lock);
}

/* The requests not about Events, in order, must read exactly like fixture req. */
static void api_expect(struct api *s, const char *req)
{
    char *want = req ? fixture_read(DIR_, req, NULL) : strdup(""), *got = strdup("");

    pthread_mutex_lock(&s->lock);
    for (size_t i = 0; i < s->nreq; i++) {
        char *joined;

        if (strstr(s->reqs[i], "/events\n"))
            continue;
        ck_assert(asprintf(&joined, "%s%s", got, s->reqs[i]) > 0);
        free(got);
        got = joined;
    }
    pthread_mutex_unlock(&s->lock);
    ck_assert_msg(strcmp(got, want) == 0, "requests differ from %s:\n--- got\n%s--- want\n%s",
                  req ? req : "(none)", got, want);
    free(got);
    free(want);
}

/* Events posted with this reason on this pod whose message holds text. */
static size_t api_events(struct api *s, const char *pod, const char *reason, const char *type,
                         const char *text)
{
    size_t n = 0;

    pthread_mutex_lock(&s->lock);
    for (size_t i = 0; i < s->nreq; i++) {
        const char *body = strstr(s->reqs[i], "\n\n");
        cJSON *ev = body && strstr(s->reqs[i], "/events\n") ? cJSON_Parse(body + 2) : NULL;
        const cJSON *obj = cJSON_GetObjectItemCaseSensitive(ev, "involvedObject");
        const char *name = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(obj, "name"));
        const char *r = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(ev, "reason"));
        const char *t = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(ev, "type"));
        const char *m = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(ev, "message"));

        n += name && r && t && m && strcmp(name, pod) == 0 && strcmp(r, reason) == 0 &&
             strcmp(t, type) == 0 && strstr(m, text) != NULL;
        cJSON_Delete(ev);
    }
    pthread_mutex_unlock(&s->lock);
    return n;
}

static struct kube_client *api_client(const struct api *s)
{
    struct kube_conn conn;
    struct kube_client *c;
    char err[256] = "";

    kube_conn_init(&conn);
    ck_assert(asprintf(&conn.server, "http://127.0.0.1:%d", s->port) > 0);
    conn.token = strdup("t0ken");
    c = kube_client_new(&conn, NULL, err, sizeof(err));
    ck_assert_msg(c != NULL, "kube_client_new: %s", err);
    kube_conn_cleanup(&conn);
    return c;
}

/* ---- a fake source of evictions ---------------------------------------------------------- */

#define REASON "evicted for gang lab/b of queue team-b: queue team-a is 2 GPUs over its fair share"

struct fake {
    const char *const *pods; /* victims of gang lab/a, for gang lab/b */
    size_t npods;
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
                                            .gang = strdup("lab/a"),
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
    struct api api;
    struct kube_client *kube;
    struct cfg_settings settings;
    struct cache cache;
    struct ext_events *events;
    struct ext_metrics *metrics;
    struct ext_metric *evictions;
    struct fake fake;
    struct evictor *evictor;
};

static const char *const victims[] = {"a-head", "a-worker"};

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

static void rig_start(struct rig *r, const struct route *routes, size_t nroutes)
{
    char err[256];

    memset(r, 0, sizeof(*r));
    api_start(&r->api, routes, nroutes);
    r->kube = api_client(&r->api);
    ck_assert_int_eq(cfg_settings_init(&r->settings), CFG_OK);
    ck_assert_int_eq(cache_init(&r->cache, &r->settings, NULL, err, sizeof(err)), EXT_OK);
    add_reclaimer(&r->cache);
    ck_assert_ptr_nonnull(r->events = ext_events_new(r->kube));
    ck_assert_ptr_nonnull(r->metrics = ext_metrics_new());
    r->evictions = ext_metrics_counter(r->metrics, "muster_evictions_total", "test", "kind,result");
    r->fake = (struct fake){.pods = victims, .npods = N(victims)};
    r->evictor = evictor_start(
        &(struct evictor_config){.kube = r->kube,
                                 .cache = &r->cache,
                                 .source = {.take = fake_take, .done = fake_done, .ctx = &r->fake},
                                 .events = r->events,
                                 .evictions = r->evictions,
                                 .retry_ms = 1});
    ck_assert_ptr_nonnull(r->evictor);
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
    api_stop(&r->api);
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

static const struct route events_route = {
    "POST", "/api/v1/namespaces/lab/events", {"created.http"}};

/* ---- cases ------------------------------------------------------------------------------------
 */

START_TEST(test_dry_run_then_real)
{
    const struct route routes[] = {
        {"GET", "/apis/policy/v1/namespaces/lab/poddisruptionbudgets", {"pdb_none.http"}},
        {"POST", "/api/v1/namespaces/lab/pods/*", {"created.http"}},
        events_route};
    struct rig r;

    rig_start(&r, routes, N(routes));
    rig_run(&r, true);
    api_expect(&r.api, "dry_run_then_real.req");
    ck_assert_uint_eq(r.fake.ntold, 2);
    ck_assert_str_eq(r.fake.told[0], "lab/a-head ok");
    ck_assert_str_eq(r.fake.told[1], "lab/a-worker ok");
    ck_assert_double_eq(counted(&r, "evicted"), 2);
    ck_assert_double_eq(counted(&r, "refused"), 0);
    /* Both sides told: the engine's reason on each victim, the victims on the reclaimer. */
    ck_assert_uint_eq(api_events(&r.api, "a-head", "Reclaimed", "Warning", REASON), 1);
    ck_assert_uint_eq(api_events(&r.api, "a-worker", "Reclaimed", "Warning", REASON), 1);
    for (int i = 0; i < 2; i++)
        ck_assert_uint_eq(api_events(&r.api, i ? "b-worker" : "b-head", "Reclaimed", "Normal",
                                     "evicted gang lab/a of queue team-a (2 of 2 pods) for this "
                                     "gang: queue team-a is 2 GPUs over its fair share"),
                          1);
    rig_stop(&r);
}
END_TEST

START_TEST(test_dry_run_refused)
{
    /* The second pod's dry run meets a PodDisruptionBudget: 429. */
    const struct route routes[] = {
        {"GET", "/apis/policy/v1/namespaces/lab/poddisruptionbudgets", {"pdb_none.http"}},
        {"POST", "/api/v1/namespaces/lab/pods/a-worker/eviction", {"too_many.http"}},
        {"POST", "/api/v1/namespaces/lab/pods/*", {"created.http"}},
        events_route};
    static const char why[] = "refused: dry run refused, nothing of the gang evicted: pod "
                              "lab/a-worker: HTTP 429 TooManyRequests: Cannot evict pod as it "
                              "would violate the pod's disruption budget.";
    char want[512];
    struct rig r;

    rig_start(&r, routes, N(routes));
    rig_run(&r, true);
    /* Nothing of the gang evicted: no real eviction was posted, not even the first pod's. */
    api_expect(&r.api, "dry_run_refused.req");
    ck_assert_uint_eq(r.fake.ntold, 2);
    snprintf(want, sizeof(want), "lab/a-head %s", why);
    ck_assert_str_eq(r.fake.told[0], want);
    snprintf(want, sizeof(want), "lab/a-worker %s", why);
    ck_assert_str_eq(r.fake.told[1], want);
    ck_assert_double_eq(counted(&r, "evicted"), 0);
    ck_assert_double_eq(counted(&r, "refused"), 2);
    ck_assert_uint_eq(api_events(&r.api, "a-head", "Reclaimed", "Warning", ""), 0);
    ck_assert_uint_eq(api_events(&r.api, "b-head", "EvictionRefused", "Warning",
                                 "gang lab/a of queue team-a was not evicted for this gang: dry "
                                 "run refused"),
                      1);
    rig_stop(&r);
}
END_TEST

START_TEST(test_budget_refuses)
{
    /* Each dry run would pass (a dry run spends nothing), but the budget allows one disruption
     * for the gang's two running pods: nothing is even dry-run. */
    const struct route routes[] = {
        {"GET", "/apis/policy/v1/namespaces/lab/poddisruptionbudgets", {"pdb_one.http"}},
        {"GET", "/api/v1/namespaces/lab/pods", {"pods_a.http"}},
        {"POST", "/api/v1/namespaces/lab/pods/*", {"created.http"}},
        events_route};
    struct rig r;

    rig_start(&r, routes, N(routes));
    rig_run(&r, true);
    api_expect(&r.api, "budget_refuses.req");
    ck_assert_uint_eq(r.fake.ntold, 2);
    ck_assert_str_eq(r.fake.told[1], "lab/a-worker refused: PodDisruptionBudget lab/a-pdb allows "
                                     "1 disruptions, and 2 of the gang's running pods are under "
                                     "it");
    ck_assert_double_eq(counted(&r, "refused"), 2);
    rig_stop(&r);
}
END_TEST

START_TEST(test_budget_allows)
{
    const struct route routes[] = {
        {"GET", "/apis/policy/v1/namespaces/lab/poddisruptionbudgets", {"pdb_roomy.http"}},
        {"GET", "/api/v1/namespaces/lab/pods", {"pods_a.http"}},
        {"POST", "/api/v1/namespaces/lab/pods/*", {"created.http"}},
        events_route};
    struct rig r;

    rig_start(&r, routes, N(routes));
    rig_run(&r, true);
    api_expect(&r.api, "budget_allows.req");
    ck_assert_double_eq(counted(&r, "evicted"), 2);
    rig_stop(&r);
}
END_TEST

START_TEST(test_real_retried)
{
    /* a-worker: its dry run passes, its real eviction fails once, then goes through. */
    const struct route routes[] = {
        {"GET", "/apis/policy/v1/namespaces/lab/poddisruptionbudgets", {"pdb_none.http"}},
        {"POST",
         "/api/v1/namespaces/lab/pods/a-worker/eviction",
         {"created.http", "status_500.http", "created.http"}},
        {"POST", "/api/v1/namespaces/lab/pods/*", {"created.http"}},
        events_route};
    struct rig r;

    rig_start(&r, routes, N(routes));
    rig_run(&r, true);
    api_expect(&r.api, "real_retried.req");
    ck_assert_str_eq(r.fake.told[1], "lab/a-worker ok");
    ck_assert_double_eq(counted(&r, "evicted"), 2);
    rig_stop(&r);
}
END_TEST

START_TEST(test_real_fails)
{
    /* a-worker's real eviction keeps failing: a-head is gone, a-worker reported failed. */
    const struct route routes[] = {
        {"GET", "/apis/policy/v1/namespaces/lab/poddisruptionbudgets", {"pdb_none.http"}},
        {"POST",
         "/api/v1/namespaces/lab/pods/a-worker/eviction",
         {"created.http", "status_500.http"}},
        {"POST", "/api/v1/namespaces/lab/pods/*", {"created.http"}},
        events_route};
    struct rig r;

    rig_start(&r, routes, N(routes));
    rig_run(&r, true);
    ck_assert_str_eq(r.fake.told[0], "lab/a-head ok");
    ck_assert_str_eq(r.fake.told[1], "lab/a-worker refused: pod lab/a-worker: HTTP 500 "
                                     "InternalError: etcdserver: request timed out");
    ck_assert_double_eq(counted(&r, "evicted"), 1);
    ck_assert_double_eq(counted(&r, "failed"), 1);
    ck_assert_uint_eq(api_events(&r.api, "b-head", "Reclaimed", "Normal", "(1 of 2 pods)"), 1);
    rig_stop(&r);
}
END_TEST

START_TEST(test_only_the_leader_evicts)
{
    const struct route routes[] = {{"POST", "/api/v1/namespaces/lab/pods/*", {"created.http"}},
                                   events_route};
    struct rig r;

    rig_start(&r, routes, N(routes));
    rig_run(&r, false);
    /* Nothing on the wire but Events; the engine is told, so it frees the room it held. */
    api_expect(&r.api, NULL);
    ck_assert_uint_eq(r.fake.ntold, 2);
    ck_assert_str_eq(r.fake.told[0], "lab/a-head refused: this replica's kube-scheduler does not "
                                     "hold the Lease; only the leader evicts");
    ck_assert_double_eq(counted(&r, "evicted"), 0);
    rig_stop(&r);
}
END_TEST

START_TEST(test_waits_for_the_lease)
{
    const struct route routes[] = {{"POST", "/api/v1/namespaces/lab/pods/*", {"created.http"}},
                                   events_route};
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
    tcase_add_test(tc, test_real_retried);
    tcase_add_test(tc, test_real_fails);
    suite_add_tcase(s, tc);
    tc = tcase_create("budget");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, test_budget_refuses);
    tcase_add_test(tc, test_budget_allows);
    tcase_add_loop_test(tc, test_selector, 0, N(selector_cases));
    suite_add_tcase(s, tc);
    tc = tcase_create("leader");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, test_only_the_leader_evicts);
    tcase_add_test(tc, test_waits_for_the_lease);
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
