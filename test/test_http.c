/*
 * test_http.c - the HTTP shell over loopback, driven by libcurl, with stub
 * handlers defined here (the engine behind them is tested elsewhere); and the
 * metrics registry's text format.
 */
#include <arpa/inet.h>
#include <check.h>
#include <curl/curl.h>
#include <gnutls/gnutls.h>
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "wire.h"
#include "fixture.h"
#include "base.h"

#define WAIT_MS 10000 /* every wait in this file is bounded by this */

/* ---- stub handlers ----------------------------------------------------------------- */

/* A bind for node "hold" blocks until released, the server stops, or WAIT_MS. */
static struct {
    pthread_mutex_t lock;
    pthread_cond_t cond;
    int held;
    bool released;
    bool stopping;
    bool ignore_stop;
    bool ready;
} stub = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0, false, false, false, true};

static struct timespec deadline_in(int ms)
{
    struct timespec t;

    clock_gettime(CLOCK_REALTIME, &t);
    t.tv_sec += ms / 1000;
    t.tv_nsec += (long)(ms % 1000) * 1000000;
    if (t.tv_nsec >= 1000000000) {
        t.tv_sec++;
        t.tv_nsec -= 1000000000;
    }
    return t;
}

static const char *pod_name(const cJSON *pod)
{
    return cJSON_GetStringValue(ext_json_get(ext_json_get(pod, "metadata"), "name"));
}

/* Filters run by the event loop (args.no_wait) and by a worker, counted. */
static struct {
    pthread_mutex_t lock;
    int on_loop, on_worker;
} filters = {PTHREAD_MUTEX_INITIALIZER, 0, 0};

/* Names ending in "-3" fail; a pod named "explode" is muster's own failure; one named "wait"
 * would have to wait (as for a lock held elsewhere): EXT_EBUSY on the event loop. */
static int stub_filter(void *ctx, const struct ext_filter_args *a, struct ext_filter_answer *ans)
{
    const char *name = pod_name(a->pod);
    size_t i;

    pthread_mutex_lock(&filters.lock);
    if (a->no_wait)
        filters.on_loop++;
    else
        filters.on_worker++;
    pthread_mutex_unlock(&filters.lock);
    if (name != NULL && strcmp(name, "wait") == 0 && a->no_wait)
        return EXT_EBUSY;
    if (name != NULL && strcmp(name, "explode") == 0)
        return EXT_ENOMEM;
    for (i = 0; i < a->n; i++) {
        size_t len = strlen(a->names[i]);

        if (len >= 2 && strcmp(a->names[i] + len - 2, "-3") == 0) {
            ans->verdicts[i].verdict = EXT_NODE_FAILS;
            ans->verdicts[i].reason = ext_arena_strdup(ans->pool, "stub: no room");
        }
    }
    return EXT_OK;
}

static int stub_prioritize(void *ctx, const struct ext_filter_args *a,
                           struct ext_priority_answer *ans)
{
    size_t i;

    for (i = 0; i < a->n; i++)
        ans->scores[i] = (int)(i % 11);
    return EXT_OK;
}

/* Binds for node "later" are deferred: the test answers them (stub.later). */
#define STUB_LATER_MAX 256
static struct {
    pthread_mutex_t lock;
    pthread_cond_t cond;
    struct ext_deferred *d[STUB_LATER_MAX];
    int n;
} later = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, {NULL}, 0};

static int stub_bind(void *ctx, const struct ext_bind_args *a, struct ext_bind_answer *ans)
{
    struct timespec deadline = deadline_in(WAIT_MS);
    int rc = EXT_OK;

    if (strcmp(a->node, "later") == 0 || strcmp(a->node, "later-now") == 0) {
        struct ext_deferred *d = ext_bind_defer(ans);

        ck_assert_ptr_nonnull(d);
        ck_assert_ptr_null(ext_bind_defer(ans)); /* taken once */
        if (strcmp(a->node, "later-now") == 0) {
            ext_deferred_bind_answer(d, EXT_OK, "answered before the handler returned");
            return EXT_OK;
        }
        pthread_mutex_lock(&later.lock);
        later.d[later.n++] = d;
        pthread_cond_broadcast(&later.cond);
        pthread_mutex_unlock(&later.lock);
        return EXT_OK;
    }

    if (strcmp(a->pod_name, "reject") == 0) {
        ans->error = "gang team-a/rc-a: 1 of 3 members at bind";
        return EXT_OK;
    }
    if (strcmp(a->node, "hold") != 0)
        return EXT_OK;
    pthread_mutex_lock(&stub.lock);
    stub.held++;
    pthread_cond_broadcast(&stub.cond);
    while (!stub.released && !(stub.stopping && !stub.ignore_stop) && rc == EXT_OK)
        if (pthread_cond_timedwait(&stub.cond, &stub.lock, &deadline) == ETIMEDOUT)
            rc = EXT_ETIMEOUT;
    if (rc == EXT_OK && !stub.released)
        rc = EXT_ESTOPPED;
    stub.held--;
    pthread_mutex_unlock(&stub.lock);
    return rc;
}

/* Every node stays a candidate with its victims as they came. */
static int stub_preempt(void *ctx, const struct ext_preempt_args *a, struct ext_preempt_answer *ans)
{
    struct ext_meta_victims *nodes = ext_arena_calloc(ans->pool, a->n, sizeof(*nodes));
    size_t i;

    if (nodes == NULL && a->n > 0)
        return EXT_ENOMEM;
    for (i = 0; i < a->n; i++) {
        nodes[i].node = a->nodes[i].node;
        nodes[i].npods = a->nodes[i].npods;
        nodes[i].uids = a->nodes[i].uids;
        nodes[i].num_pdb_violations = a->nodes[i].num_pdb_violations;
    }
    ans->n = a->n;
    ans->nodes = nodes;
    return EXT_OK;
}

static bool stub_ready(void *ctx, char *why, size_t len)
{
    bool ready;

    pthread_mutex_lock(&stub.lock);
    ready = stub.ready;
    pthread_mutex_unlock(&stub.lock);
    if (!ready)
        snprintf(why, len, "cache not synced");
    return ready;
}

static int stub_debug_state(void *ctx, char **json, size_t *len)
{
    *json = strdup("{\"gangs\":[]}");
    *len = strlen(*json);
    return EXT_OK;
}

static void stub_stopping(void *ctx)
{
    pthread_mutex_lock(&stub.lock);
    stub.stopping = true;
    pthread_cond_broadcast(&stub.cond);
    pthread_mutex_unlock(&stub.lock);
    pthread_mutex_lock(&later.lock);
    while (later.n > 0)
        ext_deferred_bind_answer(later.d[--later.n], EXT_ESTOPPED, "shutting down");
    pthread_mutex_unlock(&later.lock);
}

/* Wait until n binds are deferred; false after WAIT_MS. */
static bool later_wait(int n)
{
    struct timespec deadline = deadline_in(WAIT_MS);
    bool ok = true;

    pthread_mutex_lock(&later.lock);
    while (later.n < n && ok)
        ok = pthread_cond_timedwait(&later.cond, &later.lock, &deadline) != ETIMEDOUT;
    ok = later.n >= n;
    pthread_mutex_unlock(&later.lock);
    return ok;
}

static const struct ext_http_handlers stub_handlers = {
    .filter = stub_filter,
    .prioritize = stub_prioritize,
    .bind = stub_bind,
    .preempt = stub_preempt,
    .ready = stub_ready,
    .debug_state = stub_debug_state,
    .stopping = stub_stopping,
};

static void stub_release(void)
{
    pthread_mutex_lock(&stub.lock);
    stub.released = true;
    pthread_cond_broadcast(&stub.cond);
    pthread_mutex_unlock(&stub.lock);
}

/* Wait until n binds are held; false after WAIT_MS. */
static bool stub_wait_held(int n)
{
    struct timespec deadline = deadline_in(WAIT_MS);
    bool ok = true;

    pthread_mutex_lock(&stub.lock);
    while (stub.held < n && ok)
        ok = pthread_cond_timedwait(&stub.cond, &stub.lock, &deadline) != ETIMEDOUT;
    ok = stub.held >= n;
    pthread_mutex_unlock(&stub.lock);
    return ok;
}

/* ---- the server under test ----------------------------------------------------------- */

#define TEST_MAX_BODY (256u << 10)

static struct ext_http_server *server;
static struct ext_metrics *metrics;
static char base_url[64];

/* Mutual TLS for the next server started: the CA its clients' certificates must be signed by. */
static const char *server_client_ca;
/* The next server's server.maxConnectionsPerClient, server.idleTimeout and server.workers;
 * 0: the defaults. */
static unsigned server_max_per_client, server_idle_timeout_s, server_workers;

static void server_start_with(const char *cert, const char *key)
{
    struct ext_http_config cfg;
    char err[256] = "";

    ext_http_config_init(&cfg);
    cfg.listen = "127.0.0.1:0";
    cfg.limits.max_body = TEST_MAX_BODY;
    cfg.tls_cert_pem = cert;
    cfg.tls_key_pem = key;
    cfg.tls_client_ca_pem = server_client_ca;
    cfg.max_per_client = server_max_per_client;
    if (server_idle_timeout_s)
        cfg.idle_timeout_s = server_idle_timeout_s;
    if (server_workers)
        cfg.workers = server_workers;
    metrics = ext_metrics_new();
    ck_assert_ptr_nonnull(metrics);
    ck_assert_msg(ext_http_server_new(&cfg, &stub_handlers, NULL, metrics, &server, err,
                                      sizeof(err)) == EXT_OK,
                  "start: %s", err);
    ck_assert_uint_ne(ext_http_server_port(server), 0);
    snprintf(base_url, sizeof(base_url), "%s://127.0.0.1:%u", cert != NULL ? "https" : "http",
             ext_http_server_port(server));
}

static void server_setup(void)
{
    pthread_mutex_lock(&stub.lock);
    stub.held = 0;
    stub.released = stub.stopping = stub.ignore_stop = false;
    stub.ready = true;
    pthread_mutex_unlock(&stub.lock);
    server_max_per_client = server_idle_timeout_s = server_workers = 0;
    pthread_mutex_lock(&filters.lock);
    filters.on_loop = filters.on_worker = 0;
    pthread_mutex_unlock(&filters.lock);
    server_start_with(NULL, NULL);
}

static void server_teardown(void)
{
    stub_release();
    ext_http_server_free(server);
    server = NULL;
    ext_metrics_free(metrics);
    metrics = NULL;
}

/* ---- a libcurl client ------------------------------------------------------------------ */

struct response {
    long status;
    CURLcode curl;
    char body[1 << 16];
    size_t len;
    char allow[64];
    char content_type[128];
};

static size_t on_data(char *data, size_t size, size_t n, void *arg)
{
    struct response *r = arg;
    size_t take = size * n;

    if (take > sizeof(r->body) - 1 - r->len)
        take = sizeof(r->body) - 1 - r->len;
    memcpy(r->body + r->len, data, take);
    r->len += take;
    r->body[r->len] = '\0';
    return size * n;
}

static void header_value(const char *line, size_t n, const char *name, char *out, size_t outlen)
{
    size_t nl = strlen(name);

    if (n <= nl + 1 || strncasecmp(line, name, nl) != 0 || line[nl] != ':')
        return;
    line += nl + 1;
    n -= nl + 1;
    while (n > 0 && *line == ' ')
        line++, n--;
    while (n > 0 && (line[n - 1] == '\r' || line[n - 1] == '\n'))
        n--;
    snprintf(out, outlen, "%.*s", (int)n, line);
}

static size_t on_header(char *line, size_t size, size_t n, void *arg)
{
    struct response *r = arg;

    header_value(line, size * n, "Allow", r->allow, sizeof(r->allow));
    header_value(line, size * n, "Content-Type", r->content_type, sizeof(r->content_type));
    return size * n;
}

/* The client's own certificate and key (paths), for mutual TLS; NULL: none. */
static const char *client_cert, *client_key;

/* chunked: send the body without Content-Length. */
static void http_do(const char *method, const char *path, const char *body, size_t len,
                    bool chunked, struct response *r)
{
    CURL *c = curl_easy_init();
    struct curl_slist *hdrs = NULL;
    char url[256];

    ck_assert_ptr_nonnull(c);
    memset(r, 0, sizeof(*r));
    snprintf(url, sizeof(url), "%s%s", base_url, path);
    hdrs = curl_slist_append(hdrs, "Content-Type: application/json");
    hdrs = curl_slist_append(hdrs, "Expect:");
    if (chunked)
        hdrs = curl_slist_append(hdrs, "Transfer-Encoding: chunked");
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, method);
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, hdrs);
    if (body != NULL) {
        curl_easy_setopt(c, CURLOPT_POSTFIELDS, body);
        if (!chunked)
            curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)len);
    }
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_data);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, r);
    curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, on_header);
    curl_easy_setopt(c, CURLOPT_HEADERDATA, r);
    curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, (long)WAIT_MS * 2);
    curl_easy_setopt(c, CURLOPT_SSL_VERIFYPEER, 0L);
    curl_easy_setopt(c, CURLOPT_SSL_VERIFYHOST, 0L);
    if (client_cert != NULL) {
        curl_easy_setopt(c, CURLOPT_SSLCERT, client_cert);
        curl_easy_setopt(c, CURLOPT_SSLKEY, client_key);
    }
    curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
    r->curl = curl_easy_perform(c);
    curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &r->status);
    curl_slist_free_all(hdrs);
    curl_easy_cleanup(c);
}

static void http(const char *method, const char *path, const char *body, struct response *r)
{
    http_do(method, path, body, body != NULL ? strlen(body) : 0, false, r);
}

static char *read_fixture(const char *name)
{
    return fixture_read("extender", name, NULL);
}

/* ---- routes: one request, one exact answer ---------------------------------------------- */

static const struct {
    const char *method, *path;
    const char *fixture; /* body from a fixture file, or */
    const char *body;    /* an inline body */
    long status;
    const char *answer; /* exact, or with a leading '~' a substring */
    const char *allow;
} route_cases[] = {
    {"POST", "/filter", "filter_names.json", NULL, 200,
     "{\"Nodes\":null,\"NodeNames\":[\"gpu-1\",\"gpu-2\"],\"FailedNodes\":{\"gpu-3\":\"stub: no "
     "room\"},\"FailedAndUnresolvableNodes\":{},\"Error\":\"\"}",
     NULL},
    {"POST", "/filter", "filter_nodes.json", NULL, 200,
     "~{\"Nodes\":{\"metadata\":{},\"items\":[{\"metadata\":{\"name\":\"gpu-1\"", NULL},
    {"POST", "/filter", "filter_lowercase.json", NULL, 200, "~\"NodeNames\":[\"gpu-1\",\"gpu-2\"]",
     NULL},
    {"POST", "/prioritize", "prioritize_names.json", NULL, 200,
     "[{\"Host\":\"gpu-1\",\"Score\":0},{\"Host\":\"gpu-2\",\"Score\":1}]", NULL},
    {"POST", "/bind", "bind.json", NULL, 200, "{\"Error\":\"\"}", NULL},
    {"POST", "/bind", NULL,
     "{\"PodName\":\"reject\",\"PodNamespace\":\"team-a\",\"PodUID\":\"u\",\"Node\":\"n1\"}", 200,
     "{\"Error\":\"gang team-a/rc-a: 1 of 3 members at bind\"}", NULL},
    {"POST", "/preempt", "preempt_meta.json", NULL, 200,
     "{\"NodeNameToMetaVictims\":{\"gpu-1\":{\"Pods\":[{\"UID\":\"uid-low-1\"},{\"UID\":\"uid-low-"
     "2\"}],\"NumPDBViolations\":1},\"gpu-2\":{\"Pods\":[{\"UID\":\"uid-low-3\"}],"
     "\"NumPDBViolations\":0}}}",
     NULL},
    {"POST", "/preempt", "preempt_full.json", NULL, 200,
     "{\"NodeNameToMetaVictims\":{\"gpu-1\":{\"Pods\":[{\"UID\":\"uid-low-1\"}],"
     "\"NumPDBViolations\":0}}}",
     NULL},
    {"GET", "/healthz", NULL, NULL, 200, "ok\n", NULL},
    {"GET", "/readyz", NULL, NULL, 200, "ok\n", NULL},
    {"GET", "/debug/state", NULL, NULL, 200, "{\"gangs\":[]}", NULL},
    {"GET", "/metrics", NULL, NULL, 200, "~# TYPE muster_extender_requests_total counter\n", NULL},
    {"GET", "/x", NULL, NULL, 404, "{\"Error\":\"unknown path /x\"}", NULL},
    {"POST", "/filter/extra", NULL, "{}", 404, "{\"Error\":\"unknown path /filter/extra\"}", NULL},
    {"GET", "/filter", NULL, NULL, 405,
     "{\"Nodes\":null,\"NodeNames\":null,\"FailedNodes\":{},\"FailedAndUnresolvableNodes\":{},"
     "\"Error\":\"method GET not allowed on /filter; use POST\"}",
     "POST"},
    {"PUT", "/bind", NULL, "{}", 405, "~not allowed on /bind", "POST"},
    {"POST", "/healthz", NULL, "{}", 405,
     "{\"Error\":\"method POST not allowed on /healthz; use GET\"}", "GET"},
    {"POST", "/filter", "bad_malformed.json", NULL, 400,
     "{\"Nodes\":null,\"NodeNames\":null,\"FailedNodes\":{},\"FailedAndUnresolvableNodes\":{},"
     "\"Error\":\"malformed JSON at byte 50\"}",
     NULL},
    {"POST", "/filter", "bad_missing_pod.json", NULL, 400, "~\"Error\":\"missing Pod\"}", NULL},
    {"POST", "/filter", "bad_pod_not_object.json", NULL, 400,
     "~\"Error\":\"Pod is not an object\"}", NULL},
    {"POST", "/filter", "bad_nodenames_not_array.json", NULL, 400,
     "~\"Error\":\"NodeNames is not an array\"}", NULL},
    {"POST", "/filter", NULL, "", 400, "~\"Error\":\"empty body: expected ExtenderArgs JSON\"}",
     NULL},
    {"POST", "/prioritize", "bad_missing_pod.json", NULL, 400, "{\"Error\":\"missing Pod\"}", NULL},
    {"POST", "/bind", "bad_bind_missing_node.json", NULL, 400, "{\"Error\":\"missing Node\"}",
     NULL},
    {"POST", "/preempt", "bad_missing_pod.json", NULL, 400,
     "{\"NodeNameToMetaVictims\":null,\"Error\":\"missing Pod\"}", NULL},
    {"POST", "/filter", "bad_depth_bomb.json", NULL, 413,
     "~\"Error\":\"JSON nested deeper than 64 levels at byte 81\"}", NULL},
    {"POST", "/filter", NULL, "{\"Pod\":{\"metadata\":{\"name\":\"explode\"}},\"NodeNames\":[]}",
     500, "~\"Error\":\"out of memory\"}", NULL},
};

START_TEST(test_route)
{
    char *fixture = route_cases[_i].fixture ? read_fixture(route_cases[_i].fixture) : NULL;
    const char *body = fixture != NULL ? fixture : route_cases[_i].body;
    const char *want = route_cases[_i].answer;
    struct response r;

    http(route_cases[_i].method, route_cases[_i].path, body, &r);
    ck_assert_int_eq(r.curl, CURLE_OK);
    ck_assert_int_eq(r.status, route_cases[_i].status);
    if (want[0] == '~')
        ck_assert_msg(strstr(r.body, want + 1) != NULL, "%s not in %s", want + 1, r.body);
    else
        ck_assert_str_eq(r.body, want);
    if (route_cases[_i].allow != NULL)
        ck_assert_str_eq(r.allow, route_cases[_i].allow);
    if (strcmp(route_cases[_i].path, "/metrics") != 0 && strcmp(route_cases[_i].path, "/healthz") &&
        strcmp(route_cases[_i].path, "/readyz"))
        ck_assert_str_eq(r.content_type, "application/json");
    free(fixture);
}
END_TEST

START_TEST(test_readyz)
{
    struct response r;

    pthread_mutex_lock(&stub.lock);
    stub.ready = false;
    pthread_mutex_unlock(&stub.lock);
    http("GET", "/readyz", NULL, &r);
    ck_assert_int_eq(r.status, 503);
    ck_assert_str_eq(r.body, "not ready: cache not synced\n");
    http("GET", "/healthz", NULL, &r);
    ck_assert_int_eq(r.status, 200);
}
END_TEST

/* ---- caps ------------------------------------------------------------------------------ */

static char *big_body(size_t len)
{
    char *b = malloc(len + 1);

    ck_assert_ptr_nonnull(b);
    memset(b, ' ', len);
    memcpy(b, "{\"Pod\":{},\"NodeNames\":[]}", 25);
    b[len] = '\0';
    return b;
}

static const struct {
    size_t len;
    bool chunked;
    long status;
} cap_cases[] = {
    {TEST_MAX_BODY, false, 200},     /* at the cap: served */
    {TEST_MAX_BODY + 1, false, 413}, /* rejected from Content-Length */
    {TEST_MAX_BODY * 4, false, 413}, {TEST_MAX_BODY, true, 200},
    {TEST_MAX_BODY + 1, true, 413}, /* rejected while accumulating */
    {TEST_MAX_BODY * 4, true, 413},
};

START_TEST(test_body_cap)
{
    char *body = big_body(cap_cases[_i].len);
    struct response r;

    http_do("POST", "/filter", body, cap_cases[_i].len, cap_cases[_i].chunked, &r);
    ck_assert_int_eq(r.curl, CURLE_OK);
    ck_assert_int_eq(r.status, cap_cases[_i].status);
    if (r.status == 413 && cap_cases[_i].chunked)
        ck_assert_str_eq(r.body, "{\"Nodes\":null,\"NodeNames\":null,\"FailedNodes\":{},"
                                 "\"FailedAndUnresolvableNodes\":{},"
                                 "\"Error\":\"body is over the cap of 262144 bytes\"}");
    if (r.status == 413 && !cap_cases[_i].chunked) {
        char want[256];

        snprintf(want, sizeof(want),
                 "{\"Nodes\":null,\"NodeNames\":null,\"FailedNodes\":{},"
                 "\"FailedAndUnresolvableNodes\":{},"
                 "\"Error\":\"body of %zu bytes is over the cap of 262144\"}",
                 cap_cases[_i].len);
        ck_assert_str_eq(r.body, want);
    }
    free(body);
    /* The server keeps serving. */
    http("GET", "/healthz", NULL, &r);
    ck_assert_int_eq(r.status, 200);
}
END_TEST

/* ---- concurrency: a held bind blocks nobody else ----------------------------------------- */

struct call {
    pthread_t thread;
    const char *path, *body;
    struct response r;
};

static void *call_run(void *arg)
{
    struct call *c = arg;

    http("POST", c->path, c->body, &c->r);
    return NULL;
}

static const char held_bind[] =
    "{\"PodName\":\"w1\",\"PodNamespace\":\"team-a\",\"PodUID\":\"u1\",\"Node\":\"hold\"}";

START_TEST(test_held_bind_does_not_block)
{
    static struct call binds[4];
    char *filter = read_fixture("filter_names.json");
    struct response r;
    int i;

    for (i = 0; i < 4; i++) {
        binds[i] = (struct call){.path = "/bind", .body = held_bind};
        ck_assert_int_eq(pthread_create(&binds[i].thread, NULL, call_run, &binds[i]), 0);
    }
    ck_assert_msg(stub_wait_held(4), "the binds never reached the handler");
    for (i = 0; i < 50; i++) {
        http("POST", "/filter", filter, &r);
        ck_assert_int_eq(r.status, 200);
    }
    http("GET", "/metrics", NULL, &r);
    ck_assert_msg(strstr(r.body, "muster_extender_requests_in_flight{verb=\"bind\"} 4\n") != NULL,
                  "%s", r.body);
    stub_release();
    for (i = 0; i < 4; i++) {
        pthread_join(binds[i].thread, NULL);
        ck_assert_int_eq(binds[i].r.status, 200);
        ck_assert_str_eq(binds[i].r.body, "{\"Error\":\"\"}");
    }
    free(filter);
}
END_TEST

/* ---- a small filter is answered by the event loop (issue 26) ------------------------------- */

static void filters_seen(int *on_loop, int *on_worker)
{
    pthread_mutex_lock(&filters.lock);
    *on_loop = filters.on_loop;
    *on_worker = filters.on_worker;
    pthread_mutex_unlock(&filters.lock);
}

static void assert_loop_answers(int n)
{
    struct response r;
    char want[128];

    http("GET", "/metrics", NULL, &r);
    snprintf(want, sizeof(want), "muster_extender_event_loop_answers_total{verb=\"filter\"} %d\n",
             n);
    ck_assert_msg(strstr(r.body, want) != NULL || (n == 0 && !strstr(r.body, "answers_total{verb=\"filter\"}")),
                  "want %s in %s", want, r.body);
}

/* Every worker held by a bind: a small filter is still answered, by the event loop. */
START_TEST(test_small_filter_answered_by_the_event_loop)
{
    static struct call binds[2];
    char *filter = read_fixture("filter_names.json");
    struct response r;
    int on_loop, on_worker;

    server_teardown(); /* again with two workers */
    pthread_mutex_lock(&stub.lock);
    stub.held = 0;
    stub.released = stub.stopping = false;
    pthread_mutex_unlock(&stub.lock);
    server_workers = 2;
    server_start_with(NULL, NULL);
    for (int i = 0; i < 2; i++) {
        binds[i] = (struct call){.path = "/bind", .body = held_bind};
        ck_assert_int_eq(pthread_create(&binds[i].thread, NULL, call_run, &binds[i]), 0);
    }
    ck_assert_msg(stub_wait_held(2), "the binds never reached the handler");
    http("POST", "/filter", filter, &r);
    ck_assert_int_eq(r.status, 200);
    ck_assert_str_eq(r.body, route_cases[0].answer); /* the same answer a worker gives */
    filters_seen(&on_loop, &on_worker);
    ck_assert_int_eq(on_loop, 1);
    ck_assert_int_eq(on_worker, 0);
    pthread_mutex_lock(&stub.lock);
    ck_assert_msg(!stub.released && stub.held == 2, "the binds were let go before the filter");
    pthread_mutex_unlock(&stub.lock);
    stub_release();
    for (int i = 0; i < 2; i++) {
        pthread_join(binds[i].thread, NULL);
        ck_assert_int_eq(binds[i].r.status, 200);
    }
    assert_loop_answers(1);
    free(filter);
}
END_TEST

/* A handler that would wait on the event loop says so: a worker runs it, and answers. */
START_TEST(test_filter_that_would_wait_goes_to_a_worker)
{
    char *filter = read_fixture("filter_names.json"), *name = strstr(filter, "rc-a-gpu-worker-x7k2p");
    struct response r;
    int on_loop, on_worker;

    ck_assert_ptr_nonnull(name);
    memmove(name, "wait\"", 5); /* "name":"wait" followed by the rest of the pod */
    memmove(name + 5, name + strlen("rc-a-gpu-worker-x7k2p\""),
            strlen(name + strlen("rc-a-gpu-worker-x7k2p\"")) + 1);
    http("POST", "/filter", filter, &r);
    ck_assert_int_eq(r.status, 200);
    ck_assert_str_eq(r.body, route_cases[0].answer);
    filters_seen(&on_loop, &on_worker);
    ck_assert_int_eq(on_loop, 1);   /* tried there first */
    ck_assert_int_eq(on_worker, 1); /* then answered by a worker */
    assert_loop_answers(0);
    free(filter);
}
END_TEST

/* A body of 64 KiB or more (full Nodes, or thousands of names) is never decoded by the
 * event loop: a worker does it, through the large-body gate. */
START_TEST(test_large_filter_goes_to_a_worker)
{
    char *filter = read_fixture("filter_names.json"), *names = strstr(filter, "\"NodeNames\":[");
    size_t cap = 80 << 10, len;
    char *body = malloc(cap);
    struct response r;
    int on_loop, on_worker;

    ck_assert_ptr_nonnull(names);
    ck_assert_ptr_nonnull(body);
    len = (size_t)(names - filter);
    memcpy(body, filter, len);
    len += (size_t)snprintf(body + len, cap - len, "\"NodeNames\":[\"gpu-1\"");
    for (int i = 0; len < (68u << 10); i++)
        len += (size_t)snprintf(body + len, cap - len, ",\"node-%06d\"", i);
    len += (size_t)snprintf(body + len, cap - len, "]}");
    http_do("POST", "/filter", body, len, false, &r);
    ck_assert_int_eq(r.status, 200);
    filters_seen(&on_loop, &on_worker);
    ck_assert_int_eq(on_loop, 0);
    ck_assert_int_eq(on_worker, 1);
    assert_loop_answers(0);
    free(body);
    free(filter);
}
END_TEST

/* ---- deferred answers ------------------------------------------------------------------ */

#define DEFERRED 64

static const char later_bind[] =
    "{\"PodName\":\"w1\",\"PodNamespace\":\"team-a\",\"PodUID\":\"u1\",\"Node\":\"later\"}";

/* Deferred binds wait without a worker each: more of them than workers, all answered later. */
START_TEST(test_deferred_binds)
{
    static struct call binds[DEFERRED];
    struct response r;
    int i;

    for (i = 0; i < DEFERRED; i++) {
        binds[i] = (struct call){.path = "/bind", .body = later_bind};
        ck_assert_int_eq(pthread_create(&binds[i].thread, NULL, call_run, &binds[i]), 0);
    }
    ck_assert_msg(later_wait(DEFERRED), "the binds were never deferred");
    ck_assert_uint_eq(ext_http_server_in_flight(server), DEFERRED);
    http("GET", "/healthz", NULL, &r);
    ck_assert_int_eq(r.status, 200);
    pthread_mutex_lock(&later.lock);
    for (i = 0; i < DEFERRED; i++)
        ext_deferred_bind_answer(later.d[i], EXT_OK, i % 2 ? "gang team-a/rc-a: timed out" : NULL);
    later.n = 0;
    pthread_mutex_unlock(&later.lock);
    for (i = 0; i < DEFERRED; i++)
        pthread_join(binds[i].thread, NULL);
    for (i = 0; i < DEFERRED; i++) {
        ck_assert_int_eq(binds[i].r.status, 200);
        ck_assert_msg(strcmp(binds[i].r.body, "{\"Error\":\"\"}") == 0 ||
                          strcmp(binds[i].r.body, "{\"Error\":\"gang team-a/rc-a: timed out\"}") ==
                              0,
                      "%s", binds[i].r.body);
    }
}
END_TEST

/* An answer given before the handler returns is sent once the handler is done. */
START_TEST(test_deferred_early)
{
    struct response r;

    http("POST", "/bind", "{\"PodName\":\"w1\",\"PodNamespace\":\"team-a\",\"Node\":\"later-now\"}",
         &r);
    ck_assert_int_eq(r.status, 200);
    ck_assert_str_eq(r.body, "{\"Error\":\"answered before the handler returned\"}");
}
END_TEST

/* Stopping: the handlers' stopping callback gives the deferred answers. */
START_TEST(test_deferred_stop)
{
    static struct call bind = {.path = "/bind", .body = later_bind};

    ck_assert_int_eq(pthread_create(&bind.thread, NULL, call_run, &bind), 0);
    ck_assert(later_wait(1));
    ck_assert_int_eq(ext_http_server_stop(server, WAIT_MS), EXT_OK);
    pthread_join(bind.thread, NULL);
    ck_assert_int_eq(bind.r.status, 503);
    ck_assert_str_eq(bind.r.body, "{\"Error\":\"shutting down\"}");
}
END_TEST

/* ---- connections: per client, and idle ---------------------------------------------------- */

/* A TCP connection to the server from the loopback address `from` (127.0.0.x). */
static int connect_from(const char *from)
{
    struct sockaddr_in self = {.sin_family = AF_INET}, to = {.sin_family = AF_INET};
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

    ck_assert_int_ge(fd, 0);
    ck_assert_int_eq(inet_pton(AF_INET, from, &self.sin_addr), 1);
    ck_assert_int_eq(inet_pton(AF_INET, "127.0.0.1", &to.sin_addr), 1);
    to.sin_port = htons(ext_http_server_port(server));
    ck_assert_msg(bind(fd, (struct sockaddr *)&self, sizeof(self)) == 0, "bind %s: %s", from,
                  strerror(errno));
    ck_assert_msg(connect(fd, (struct sockaddr *)&to, sizeof(to)) == 0, "connect: %s",
                  strerror(errno));
    return fd;
}

/* Wait up to ms for fd to be readable or closed; true if it was. */
static bool readable(int fd, int ms)
{
    struct pollfd p = {.fd = fd, .events = POLLIN};

    return poll(&p, 1, ms) == 1;
}

/* The server closed fd (an end of file or a reset, nothing else to read) within ms. */
static bool closed_within(int fd, int ms)
{
    char c;

    return readable(fd, ms) && recv(fd, &c, 1, MSG_DONTWAIT) <= 0;
}

/* A GET of /healthz on fd, keeping the connection: true when it is answered 200. */
static bool healthz_on(int fd)
{
    static const char get[] = "GET /healthz HTTP/1.1\r\nHost: muster\r\n\r\n";
    char buf[1024];
    size_t n = 0;

    if (send(fd, get, sizeof(get) - 1, MSG_NOSIGNAL) != (ssize_t)(sizeof(get) - 1))
        return false;
    /* The answer is short: its head and body come before the connection could be idle. */
    while (n < sizeof(buf) - 1 && readable(fd, WAIT_MS)) {
        ssize_t k = recv(fd, buf + n, sizeof(buf) - 1 - n, 0);

        if (k <= 0)
            break;
        n += (size_t)k;
        buf[n] = '\0';
        if (strstr(buf, "\r\n\r\n") && strstr(buf, "ok"))
            break;
    }
    buf[n] = '\0';
    return strncmp(buf, "HTTP/1.1 200", 12) == 0;
}

/*
 * server.maxConnectionsPerClient: a client holding its cap of connections is refused another
 * (closed unanswered), while a client from another address is served; once it closes one, it
 * is served again.
 */
START_TEST(test_per_client_cap)
{
    int held[2], fd = -1;
    bool served = false;

    server_teardown();
    server_max_per_client = 2;
    server_start_with(NULL, NULL);
    for (int i = 0; i < 2; i++) {
        held[i] = connect_from("127.0.0.1");
        ck_assert_msg(healthz_on(held[i]), "connection %d of the cap was not served", i + 1);
    }
    fd = connect_from("127.0.0.1");
    ck_assert_msg(!healthz_on(fd), "a connection over the client's cap was served");
    close(fd);
    fd = connect_from("127.0.0.2");
    ck_assert_msg(healthz_on(fd), "another client was refused");
    close(fd);
    close(held[0]);
    for (int i = 0; i < WAIT_MS / 50 && !served; i++) {
        fd = connect_from("127.0.0.1");
        served = healthz_on(fd);
        close(fd);
        if (!served)
            usleep(50000); /* until the server has seen the close */
    }
    ck_assert_msg(served, "the client was still refused with one connection left");
    close(held[1]);
}
END_TEST

/*
 * server.idleTimeout (2 s here): a connection that never says anything, one idle after its
 * answer and one whose body stopped coming are all closed once it runs out, none of them at
 * once; a held bind is no idle connection and is answered after it.
 */
START_TEST(test_idle_timeout)
{
    static struct call bind = {.path = "/bind", .body = later_bind};
    static const char partial[] = "POST /filter HTTP/1.1\r\nHost: muster\r\n"
                                  "Content-Length: 100\r\n\r\n{\"Pod\":";
    int fd[3];

    server_teardown();
    server_idle_timeout_s = 2;
    server_start_with(NULL, NULL);
    ck_assert_int_eq(pthread_create(&bind.thread, NULL, call_run, &bind), 0);
    ck_assert(later_wait(1));
    fd[0] = connect_from("127.0.0.1");
    fd[1] = connect_from("127.0.0.1");
    ck_assert(healthz_on(fd[1]));
    fd[2] = connect_from("127.0.0.1");
    ck_assert_int_eq(send(fd[2], partial, sizeof(partial) - 1, MSG_NOSIGNAL),
                     (ssize_t)(sizeof(partial) - 1));
    for (int i = 0; i < 3; i++)
        ck_assert_msg(!closed_within(fd[i], i == 0 ? 300 : 0), "connection %d closed at once", i);
    for (int i = 0; i < 3; i++) {
        ck_assert_msg(closed_within(fd[i], WAIT_MS), "connection %d still open after %d ms", i,
                      WAIT_MS);
        close(fd[i]);
    }
    /* Every idle connection is gone, more than the timeout later: the held bind is answered. */
    pthread_mutex_lock(&later.lock);
    ext_deferred_bind_answer(later.d[--later.n], EXT_OK, NULL);
    pthread_mutex_unlock(&later.lock);
    pthread_join(bind.thread, NULL);
    ck_assert_int_eq(bind.r.curl, CURLE_OK);
    ck_assert_int_eq(bind.r.status, 200);
    ck_assert_str_eq(bind.r.body, "{\"Error\":\"\"}");
}
END_TEST

/* ---- pipelining ------------------------------------------------------------------------------ */

/* Everything the server sends on fd until it closes it or is silent for ms; NUL-terminated. */
static size_t read_all_of(int fd, char *buf, size_t cap, int ms)
{
    size_t n = 0;

    while (n < cap - 1 && readable(fd, ms)) {
        ssize_t k = recv(fd, buf + n, cap - 1 - n, 0);

        if (k <= 0)
            break;
        n += (size_t)k;
    }
    buf[n] = '\0';
    return n;
}

/* How the first request of a pipeline is answered. */
enum first_answer {
    AT_ONCE, /* inline, or by a worker as soon as it runs */
    HELD,    /* a bind whose worker blocks until released */
    LATER,   /* a bind answered later, off the worker (ext_deferred_bind_answer) */
};

/*
 * Requests in one write on a keep-alive connection (HTTP/1.1 pipelining, RFC 9112 9.3.2): the
 * first answered inline, by a worker, or later, its connection suspended meanwhile with the
 * others in its read buffer. libmicrohttpd reads the next request only once an answer is sent
 * and keeps a suspended connection's buffer: so every one is answered, in order, and the
 * connection still serves (issue 21 asked for this or a clean close after the first).
 */
static const struct {
    const char *paths[3]; /* "/bad": a filter with a body that is no JSON; NULL: fewer */
    enum first_answer first;
    const char *status[3]; /* each answer's status line */
} pipeline_cases[] = {
    {{"/filter", "/healthz"}, AT_ONCE, {"200 OK", "200 OK"}},
    {{"/filter", "/filter", "/filter"}, AT_ONCE, {"200 OK", "200 OK", "200 OK"}},
    {{"/healthz", "/filter"}, AT_ONCE, {"200 OK", "200 OK"}},
    {{"/healthz", "/readyz", "/healthz"}, AT_ONCE, {"200 OK", "200 OK", "200 OK"}},
    {{"/metrics", "/healthz"}, AT_ONCE, {"200 OK", "200 OK"}},
    {{"/nope", "/healthz"}, AT_ONCE, {"404 Not Found", "200 OK"}},
    {{"/bad", "/filter"}, AT_ONCE, {"400 Bad Request", "200 OK"}},
    {{"/bind", "/healthz"}, HELD, {"200 OK", "200 OK"}},
    {{"/bind", "/filter", "/healthz"}, HELD, {"200 OK", "200 OK", "200 OK"}},
    {{"/bind", "/healthz"}, LATER, {"200 OK", "200 OK"}},
    {{"/bind", "/filter"}, LATER, {"200 OK", "200 OK"}},
};

static int append_request(char *buf, size_t len, const char *path, const char *body)
{
    if (strcmp(path, "/healthz") == 0 || strcmp(path, "/readyz") == 0 ||
        strcmp(path, "/metrics") == 0)
        return snprintf(buf, len, "GET %s HTTP/1.1\r\nHost: muster\r\n\r\n", path);
    if (strcmp(path, "/bad") == 0)
        body = "{bad!";
    return snprintf(buf, len,
                    "POST %s HTTP/1.1\r\nHost: muster\r\nContent-Type: application/json\r\n"
                    "Content-Length: %zu\r\n\r\n%s",
                    strcmp(path, "/bad") == 0 ? "/filter" : path, strlen(body), body);
}

/* What each request's answer holds, to tell the answers apart. */
static const char *mark_of(const char *path)
{
    static const struct {
        const char *path, *mark;
    } marks[] = {
        {"/filter", "\"NodeNames\":[\"gpu-1\""}, {"/bad", "malformed JSON"},
        {"/bind", "{\"Error\":\"\"}"},             {"/nope", "unknown path /nope"},
        {"/metrics", "muster_extender_requests_total"}, {"/healthz", "\r\n\r\nok"},
        {"/readyz", "\r\n\r\nok"},
    };

    for (size_t i = 0; i < sizeof(marks) / sizeof(marks[0]); i++) {
        if (strcmp(marks[i].path, path) == 0)
            return marks[i].mark;
    }
    return path;
}

START_TEST(test_pipelined)
{
    char *filter = read_fixture("filter_names.json"), req[8192], *reply = malloc(1 << 20), *at;
    const char *const *paths = pipeline_cases[_i].paths;
    enum first_answer first = pipeline_cases[_i].first;
    size_t n = 0, k;
    int fd;

    ck_assert_ptr_nonnull(reply);
    for (k = 0; k < 3 && paths[k] != NULL; k++) {
        const char *body = strcmp(paths[k], "/bind") != 0 ? filter
                           : first == HELD                ? held_bind
                                                          : later_bind;

        n += (size_t)append_request(req + n, sizeof(req) - n, paths[k], body);
    }
    fd = connect_from("127.0.0.1");
    ck_assert_int_eq(send(fd, req, n, MSG_NOSIGNAL), (ssize_t)n); /* one write */
    if (first == HELD) {
        ck_assert(stub_wait_held(1));
        stub_release();
    } else if (first == LATER) {
        ck_assert(later_wait(1));
        pthread_mutex_lock(&later.lock);
        ext_deferred_bind_answer(later.d[--later.n], EXT_OK, NULL);
        pthread_mutex_unlock(&later.lock);
    }
    read_all_of(fd, reply, 1 << 20, 1000);
    at = reply;
    for (size_t i = 0; i < k; i++) { /* in order: each answer its request's */
        char want[64], *next;

        snprintf(want, sizeof(want), "HTTP/1.1 %s\r\n", pipeline_cases[_i].status[i]);
        ck_assert_msg(at != NULL && strncmp(at, want, strlen(want)) == 0,
                      "answer %zu of %zu is not \"%s\":\n%.2000s", i + 1, k,
                      pipeline_cases[_i].status[i], reply);
        next = strstr(at + 1, "HTTP/1.1 ");
        ck_assert_msg(memmem(at, next != NULL ? (size_t)(next - at) : strlen(at),
                             mark_of(paths[i]), strlen(mark_of(paths[i]))) != NULL,
                      "answer %zu is not %s's:\n%.2000s", i + 1, paths[i], reply);
        at = next;
    }
    ck_assert_msg(at == NULL, "more answers than requests:\n%.2000s", reply);
    ck_assert_msg(healthz_on(fd), "the connection no longer serves");
    close(fd);
    free(reply);
    free(filter);
}
END_TEST

/* A TLS connection to the server (its certificate not checked: a test's own), its descriptor. */
static int tls_connect(gnutls_session_t *sess, gnutls_certificate_credentials_t *cred)
{
    int fd = connect_from("127.0.0.1"), rc;

    ck_assert_int_eq(gnutls_certificate_allocate_credentials(cred), GNUTLS_E_SUCCESS);
    ck_assert_int_eq(gnutls_init(sess, GNUTLS_CLIENT), GNUTLS_E_SUCCESS);
    ck_assert_int_eq(gnutls_set_default_priority(*sess), GNUTLS_E_SUCCESS);
    gnutls_credentials_set(*sess, GNUTLS_CRD_CERTIFICATE, *cred);
    gnutls_transport_set_int(*sess, fd);
    do
        rc = gnutls_handshake(*sess);
    while (rc < 0 && !gnutls_error_is_fatal(rc));
    ck_assert_msg(rc == GNUTLS_E_SUCCESS, "TLS handshake: %s", gnutls_strerror(rc));
    return fd;
}

/*
 * The same over TLS, where the requests arrive in one record: what gnutls has decrypted but not
 * yet handed over makes no event on the socket, so an edge-triggered loop that stopped reading
 * would leave the rest unanswered.
 */
START_TEST(test_pipelined_tls)
{
    char *cert = read_fixture("tls_cert.pem"), *key = read_fixture("tls_key.pem");
    char *filter = read_fixture("filter_names.json"), req[8192], reply[1 << 16];
    const char *health;
    gnutls_certificate_credentials_t cred;
    gnutls_session_t sess;
    size_t n = 0, got = 0;
    int fd;

    server_teardown();
    server_start_with(cert, key);
    n += (size_t)append_request(req + n, sizeof(req) - n, "/filter", filter);
    n += (size_t)append_request(req + n, sizeof(req) - n, "/healthz", NULL);
    n += (size_t)append_request(req + n, sizeof(req) - n, "/filter", filter);
    fd = tls_connect(&sess, &cred);
    ck_assert_int_eq(gnutls_record_send(sess, req, n), (ssize_t)n);
    while (got < sizeof(reply) - 1 &&
           (gnutls_record_check_pending(sess) > 0 || readable(fd, 1000))) {
        ssize_t k = gnutls_record_recv(sess, reply + got, sizeof(reply) - 1 - got);

        if (k <= 0)
            break;
        got += (size_t)k;
    }
    reply[got] = '\0';
    /* The filter's answer, the health check's, the filter's. */
    health = strstr(reply, "\r\n\r\nok");
    ck_assert_msg(health != NULL && strstr(reply, "NodeNames") != NULL &&
                      strstr(reply, "NodeNames") < health && strstr(health, "NodeNames") != NULL,
                  "three answers, in order, wanted:\n%s", reply);
    gnutls_deinit(sess);
    gnutls_certificate_free_credentials(cred);
    close(fd);
    free(cert);
    free(key);
    free(filter);
}
END_TEST

/* ---- metrics over HTTP -------------------------------------------------------------------- */

/* Every line is a comment or "name{labels} value"; returns the sample named, or -1. */
static double scrape(const char *text, const char *sample)
{
    double found = -1;
    const char *line = text;

    while (*line != '\0') {
        const char *eol = strchr(line, '\n');
        const char *sp;
        char *end;
        double v;

        ck_assert_msg(eol != NULL, "unterminated line");
        if (line[0] != '#') {
            sp = memrchr(line, ' ', (size_t)(eol - line));
            ck_assert_msg(sp != NULL, "no value: %.*s", (int)(eol - line), line);
            v = strtod(sp + 1, &end);
            ck_assert_msg(end == eol || strncmp(sp + 1, "+Inf", 4) == 0, "bad value: %.*s",
                          (int)(eol - line), line);
            ck_assert_msg(line[0] == '_' || (line[0] >= 'a' && line[0] <= 'z'), "bad name");
            if ((size_t)(sp - line) == strlen(sample) && strncmp(line, sample, strlen(sample)) == 0)
                found = v;
        } else {
            ck_assert(strncmp(line, "# HELP ", 7) == 0 || strncmp(line, "# TYPE ", 7) == 0);
        }
        line = eol + 1;
    }
    return found;
}

START_TEST(test_metrics_count)
{
    const char *ok = "muster_extender_requests_total{verb=\"filter\",code=\"200\"}";
    const char *bad = "muster_extender_requests_total{verb=\"filter\",code=\"400\"}";
    const char *lat = "muster_extender_request_duration_seconds_count{verb=\"filter\"}";
    const char *inf =
        "muster_extender_request_duration_seconds_bucket{verb=\"filter\",le=\"+Inf\"}";
    char *filter = read_fixture("filter_names.json");
    struct response r;

    http("POST", "/filter", filter, &r);
    http("GET", "/metrics", NULL, &r);
    ck_assert_str_eq(r.content_type, "text/plain; version=0.0.4; charset=utf-8");
    ck_assert(scrape(r.body, ok) == 1);
    ck_assert(scrape(r.body, lat) == 1);
    ck_assert(scrape(r.body, inf) == 1);
    ck_assert(scrape(r.body, bad) == -1);
    http("POST", "/filter", filter, &r);
    http("POST", "/filter", "{", &r);
    http("GET", "/nope", NULL, &r);
    http("GET", "/metrics", NULL, &r);
    ck_assert(scrape(r.body, ok) == 2);
    ck_assert(scrape(r.body, bad) == 1);
    ck_assert(scrape(r.body, lat) == 3);
    ck_assert(scrape(r.body, "muster_extender_requests_total{verb=\"unknown\",code=\"404\"}") == 1);
    ck_assert(scrape(r.body, "muster_extender_requests_total{verb=\"metrics\",code=\"200\"}") == 1);
    /* This very request is in flight while it is rendered. */
    ck_assert(scrape(r.body, "muster_extender_requests_in_flight{verb=\"metrics\"}") == 1);
    ck_assert(scrape(r.body, "muster_extender_requests_in_flight{verb=\"filter\"}") == 0);
    free(filter);
}
END_TEST

/* ---- graceful stop ------------------------------------------------------------------------- */

START_TEST(test_stop_wakes_held)
{
    static struct call bind = {.path = "/bind", .body = held_bind};
    struct response r;

    ck_assert_int_eq(pthread_create(&bind.thread, NULL, call_run, &bind), 0);
    ck_assert(stub_wait_held(1));
    /* stopping() wakes the held bind: it answers 503, then the server stops. */
    ck_assert_int_eq(ext_http_server_stop(server, WAIT_MS), EXT_OK);
    pthread_join(bind.thread, NULL);
    ck_assert_int_eq(bind.r.status, 503);
    ck_assert_str_eq(bind.r.body, "{\"Error\":\"shutting down\"}");
    ck_assert_int_eq(ext_http_server_stop(server, 0), EXT_OK); /* idempotent */
    http("GET", "/healthz", NULL, &r);
    ck_assert_int_eq(r.curl, CURLE_COULDNT_CONNECT);
}
END_TEST

START_TEST(test_stop_deadline)
{
    static struct call bind = {.path = "/bind", .body = held_bind};

    pthread_mutex_lock(&stub.lock);
    stub.ignore_stop = true;
    pthread_mutex_unlock(&stub.lock);
    ck_assert_int_eq(pthread_create(&bind.thread, NULL, call_run, &bind), 0);
    ck_assert(stub_wait_held(1));
    ck_assert_int_eq(ext_http_server_stop(server, 50), EXT_ETIMEOUT);
    ck_assert_uint_eq(ext_http_server_in_flight(server), 1);
    stub_release();
    ck_assert_int_eq(ext_http_server_stop(server, WAIT_MS), EXT_OK);
    pthread_join(bind.thread, NULL);
    ck_assert_int_eq(bind.r.status, 200);
}
END_TEST

/* ---- start-up ---------------------------------------------------------------------------- */

static const struct {
    const char *listen;
    int rc;
    const char *err;
} listen_cases[] = {
    {"nonsense", EXT_EINVAL, "listen \"nonsense\" is not host:port"},
    {"127.0.0.1:", EXT_EINVAL, "listen \"127.0.0.1:\" is not host:port"},
    {"127.0.0.1:http", EXT_EINVAL, "listen \"127.0.0.1:http\": "},
    {"[::1]:0", EXT_OK, NULL},
    {"localhost:0", EXT_OK, NULL},
};

START_TEST(test_listen)
{
    struct ext_http_config cfg;
    struct ext_http_server *s = NULL;
    char err[256] = "";

    ext_http_config_init(&cfg);
    cfg.listen = listen_cases[_i].listen;
    ck_assert_int_eq(ext_http_server_new(&cfg, &stub_handlers, NULL, NULL, &s, err, sizeof(err)),
                     listen_cases[_i].rc);
    if (listen_cases[_i].err != NULL)
        ck_assert_msg(strncmp(err, listen_cases[_i].err, strlen(listen_cases[_i].err)) == 0, "%s",
                      err);
    ext_http_server_free(s);
}
END_TEST

START_TEST(test_port_in_use)
{
    struct ext_http_config cfg;
    struct ext_http_server *s = NULL;
    char listen[64], err[256] = "";

    ext_http_config_init(&cfg);
    snprintf(listen, sizeof(listen), "127.0.0.1:%u", ext_http_server_port(server));
    cfg.listen = listen;
    ck_assert_int_eq(ext_http_server_new(&cfg, &stub_handlers, NULL, NULL, &s, err, sizeof(err)),
                     EXT_EIO);
    ck_assert_msg(strstr(err, "cannot serve on 127.0.0.1:") != NULL, "%s", err);
    ck_assert_ptr_null(s);
}
END_TEST

/* A verb without a handler is not served: kube-scheduler is configured without it. */
START_TEST(test_verb_without_handler)
{
    static const struct ext_http_handlers filter_only = {.filter = stub_filter};
    struct ext_http_config cfg;
    struct ext_http_server *s = NULL;
    struct response r;
    char err[256] = "";

    ext_http_config_init(&cfg);
    cfg.listen = "127.0.0.1:0";
    ck_assert_int_eq(ext_http_server_new(&cfg, &filter_only, NULL, NULL, &s, err, sizeof(err)),
                     EXT_OK);
    snprintf(base_url, sizeof(base_url), "http://127.0.0.1:%u", ext_http_server_port(s));
    http("POST", "/preempt", "{}", &r);
    ck_assert_int_eq(r.status, 404);
    ck_assert_str_eq(r.body, "{\"Error\":\"unknown path /preempt\"}");
    http("GET", "/metrics", NULL, &r);
    ck_assert_int_eq(r.status, 404);
    http("GET", "/readyz", NULL, &r);
    ck_assert_int_eq(r.status, 200);
    ck_assert_int_eq(ext_http_server_stop(s, WAIT_MS), EXT_OK);
    ext_http_server_free(s);
}
END_TEST

static char *read_pem(const char *name)
{
    return read_fixture(name);
}

START_TEST(test_tls)
{
    char *cert = read_pem("tls_cert.pem"), *key = read_pem("tls_key.pem");
    char *filter = read_fixture("filter_names.json");
    struct response r;

    server_teardown();
    server_start_with(cert, key);
    http("POST", "/filter", filter, &r);
    ck_assert_int_eq(r.curl, CURLE_OK);
    ck_assert_int_eq(r.status, 200);
    ck_assert(strstr(r.body, "\"NodeNames\":[\"gpu-1\",\"gpu-2\"]") != NULL);
    free(cert);
    free(key);
    free(filter);
}
END_TEST

/* ---- the registry's text format ------------------------------------------------------------ */

/* tls_client_ca_pem: a client without a certificate that CA signed gets 403, with one 200. */
static const struct {
    const char *cert, *key;
    long status;
} mtls_cases[] = {
    {NULL, NULL, 403},
    {"stranger.pem", "stranger.key", 403},
    {"client.pem", "client.key", 200},
};

START_TEST(test_mtls)
{
    char *cert = read_pem("tls_cert.pem"), *key = read_pem("tls_key.pem");
    char *ca = read_pem("clients-ca.pem"), *filter = read_fixture("filter_names.json");
    char cert_path[512], key_path[512];
    struct response r;

    server_teardown();
    server_client_ca = ca;
    server_start_with(cert, key);
    server_client_ca = NULL;
    if (mtls_cases[_i].cert != NULL) {
        snprintf(cert_path, sizeof(cert_path), "%s/extender/%s", FIXTURES, mtls_cases[_i].cert);
        snprintf(key_path, sizeof(key_path), "%s/extender/%s", FIXTURES, mtls_cases[_i].key);
        client_cert = cert_path;
        client_key = key_path;
    }
    http("POST", "/filter", filter, &r);
    client_cert = client_key = NULL;
    ck_assert_msg(r.curl == CURLE_OK, "curl: %s", curl_easy_strerror(r.curl));
    ck_assert_int_eq(r.status, mtls_cases[_i].status);
    if (r.status == 403)
        ck_assert(strstr(r.body, "client certificate") != NULL);
    free(cert);
    free(key);
    free(ca);
    free(filter);
}
END_TEST

START_TEST(test_metrics_text)
{
    static const double bounds[] = {0.5, 1, 2.5};
    struct ext_metrics *m = ext_metrics_new();
    struct ext_metric *gangs, *waits, *restarts;
    char *out;
    size_t len;

    gangs = ext_metrics_gauge(m, "muster_gangs", "Gangs by state.", "state");
    waits = ext_metrics_histogram(m, "muster_bind_wait_seconds", "Held binds.\nSecond line \\.",
                                  NULL, bounds, 3);
    restarts = ext_metrics_counter(m, "muster_watch_restarts_total", "Watch restarts.", "kind");
    ck_assert_ptr_nonnull(gangs);
    ck_assert_ptr_nonnull(waits);
    ck_assert_ptr_nonnull(restarts);
    ck_assert_ptr_eq(ext_metrics_gauge(m, "muster_gangs", "again", "state"), gangs);
    ck_assert_ptr_null(ext_metrics_counter(m, "muster_gangs", "clash", "state"));
    ck_assert_ptr_null(ext_metrics_gauge(m, "muster_gangs", "clash", "queue"));
    ck_assert_ptr_null(ext_metrics_gauge(m, "9bad", "", NULL));
    ck_assert_ptr_null(ext_metrics_gauge(m, "bad-name", "", NULL));
    ck_assert_ptr_null(ext_metrics_gauge(m, "ok_name", "", "bad label"));
    ck_assert_ptr_null(ext_metrics_histogram(m, "h", "", "le", bounds, 3));

    ext_series_set(ext_metric_with(gangs, (const char *const[]){"pending"}), 3);
    ext_series_set(ext_metric_with(gangs, (const char *const[]){"bound"}), 12);
    ext_series_add(ext_metric_with(gangs, (const char *const[]){"pending"}), -1);
    ext_series_observe(ext_metric_with(waits, NULL), 0.25);
    ext_series_observe(ext_metric_with(waits, NULL), 1);
    ext_series_observe(ext_metric_with(waits, NULL), 20);
    ext_series_add(ext_metric_with(restarts, (const char *const[]){"pods \"a\"\\\n"}), 2);
    ext_series_add(ext_metric_with(restarts, (const char *const[]){"pods \"a\"\\\n"}), -5);
    ck_assert_int_eq(ext_metrics_render(m, &out, &len), EXT_OK);
    ck_assert_str_eq(out, "# HELP muster_gangs Gangs by state.\n"
                          "# TYPE muster_gangs gauge\n"
                          "muster_gangs{state=\"pending\"} 2\n"
                          "muster_gangs{state=\"bound\"} 12\n"
                          "# HELP muster_bind_wait_seconds Held binds.\\nSecond line \\\\.\n"
                          "# TYPE muster_bind_wait_seconds histogram\n"
                          "muster_bind_wait_seconds_bucket{le=\"0.5\"} 1\n"
                          "muster_bind_wait_seconds_bucket{le=\"1\"} 2\n"
                          "muster_bind_wait_seconds_bucket{le=\"2.5\"} 2\n"
                          "muster_bind_wait_seconds_bucket{le=\"+Inf\"} 3\n"
                          "muster_bind_wait_seconds_sum 21.25\n"
                          "muster_bind_wait_seconds_count 3\n"
                          "# HELP muster_watch_restarts_total Watch restarts.\n"
                          "# TYPE muster_watch_restarts_total counter\n"
                          "muster_watch_restarts_total{kind=\"pods \\\"a\\\"\\\\\\n\"} 2\n");
    ck_assert_uint_eq(len, strlen(out));
    free(out);
    ext_metric_clear(gangs);
    ck_assert_int_eq(ext_metrics_render(m, &out, &len), EXT_OK);
    ck_assert(strstr(out, "# TYPE muster_gangs gauge\n# HELP muster_bind_wait") != NULL);
    free(out);
    ext_metrics_free(m);
    ext_metrics_free(NULL);
}
END_TEST

static void collect_queues(struct ext_metrics *r, void *ctx)
{
    struct ext_metric *q = ext_metrics_gauge(r, "muster_queue_allocated_gpus", "GPUs.", "queue");

    (*(int *)ctx)++;
    ext_metric_clear(q);
    ext_series_set(ext_metric_with(q, (const char *const[]){"team-a"}), *(int *)ctx * 0.5);
}

START_TEST(test_metrics_collect)
{
    struct ext_metrics *m = ext_metrics_new();
    int calls = 0;
    char *out;
    size_t len;

    ck_assert_int_eq(ext_metrics_on_collect(m, collect_queues, &calls), EXT_OK);
    ck_assert_int_eq(ext_metrics_render(m, &out, &len), EXT_OK);
    free(out);
    ck_assert_int_eq(ext_metrics_render(m, &out, &len), EXT_OK);
    ck_assert_int_eq(calls, 2);
    ck_assert_str_eq(out, "# HELP muster_queue_allocated_gpus GPUs.\n"
                          "# TYPE muster_queue_allocated_gpus gauge\n"
                          "muster_queue_allocated_gpus{queue=\"team-a\"} 1\n");
    free(out);
    ext_metrics_free(m);
}
END_TEST

#define N(table) ((int)(sizeof(table) / sizeof((table)[0])))

static Suite *http_suite(void)
{
    Suite *s = suite_create("http");
    TCase *tc;

    tc = tcase_create("routes");
    tcase_add_checked_fixture(tc, server_setup, server_teardown);
    tcase_add_loop_test(tc, test_route, 0, N(route_cases));
    tcase_add_test(tc, test_readyz);
    suite_add_tcase(s, tc);

    tc = tcase_create("caps");
    tcase_add_checked_fixture(tc, server_setup, server_teardown);
    tcase_add_loop_test(tc, test_body_cap, 0, N(cap_cases));
    suite_add_tcase(s, tc);

    tc = tcase_create("concurrency");
    tcase_add_checked_fixture(tc, server_setup, server_teardown);
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, test_held_bind_does_not_block);
    tcase_add_test(tc, test_small_filter_answered_by_the_event_loop);
    tcase_add_test(tc, test_filter_that_would_wait_goes_to_a_worker);
    tcase_add_test(tc, test_large_filter_goes_to_a_worker);
    tcase_add_test(tc, test_deferred_binds);
    tcase_add_test(tc, test_deferred_early);
    tcase_add_test(tc, test_deferred_stop);
    suite_add_tcase(s, tc);

    tc = tcase_create("connections");
    tcase_add_checked_fixture(tc, server_setup, server_teardown);
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, test_per_client_cap);
    tcase_add_test(tc, test_idle_timeout);
    suite_add_tcase(s, tc);

    tc = tcase_create("pipelining");
    tcase_add_checked_fixture(tc, server_setup, server_teardown);
    tcase_add_loop_test(tc, test_pipelined, 0, N(pipeline_cases));
    tcase_add_test(tc, test_pipelined_tls);
    suite_add_tcase(s, tc);

    tc = tcase_create("metrics");
    tcase_add_checked_fixture(tc, server_setup, server_teardown);
    tcase_add_test(tc, test_metrics_count);
    tcase_add_test(tc, test_metrics_text);
    tcase_add_test(tc, test_metrics_collect);
    suite_add_tcase(s, tc);

    tc = tcase_create("lifecycle");
    tcase_add_checked_fixture(tc, server_setup, server_teardown);
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, test_stop_wakes_held);
    tcase_add_test(tc, test_stop_deadline);
    tcase_add_loop_test(tc, test_listen, 0, N(listen_cases));
    tcase_add_test(tc, test_port_in_use);
    tcase_add_test(tc, test_verb_without_handler);
    tcase_add_test(tc, test_tls);
    tcase_add_loop_test(tc, test_mtls, 0, (int)(sizeof(mtls_cases) / sizeof(mtls_cases[0])));
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr;
    int failed;

    curl_global_init(CURL_GLOBAL_DEFAULT);
    sr = srunner_create(http_suite());
    srunner_run_all(sr, CK_ENV);
    failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    curl_global_cleanup();
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
