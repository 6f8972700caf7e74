/* http_server.c - libmicrohttpd glue: routes, bodies, caps, metrics, graceful stop. */
#include "wire.h"

#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <microhttpd.h>
#include <netdb.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define HTTP_DEFAULT_LISTEN "127.0.0.1:8888"
#define HTTP_DEFAULT_MAX_CONNECTIONS 1024
#define HTTP_DEFAULT_IDLE_TIMEOUT_S 120
#define HTTP_ERRLEN 512

#define CONTENT_JSON "application/json"
#define CONTENT_TEXT "text/plain; charset=utf-8"
#define CONTENT_METRICS "text/plain; version=0.0.4; charset=utf-8"

struct reply {
    unsigned status;
    const char *content_type;
    const char *allow; /* 405 only */
    char *body;        /* malloc'd; NULL = empty */
    size_t len;
};

struct request;

struct route {
    const char *path;
    const char *method;
    const char *name; /* the verb label of the metrics */
    int verb;         /* an enum ext_verb, or -1: the shape of its error replies */
    void (*serve)(struct ext_http_server *s, const struct request *r, struct reply *out);
};

enum server_state {
    SERVER_RUNNING,
    SERVER_DRAINING,
    SERVER_STOPPED,
};

struct route_metrics {
    struct ext_metric *calls; /* shared families, kept here for the hot path */
    struct ext_series *latency;
    struct ext_series *in_flight;
};

static void serve_filter(struct ext_http_server *s, const struct request *r, struct reply *out);
static void serve_prioritize(struct ext_http_server *s, const struct request *r, struct reply *out);
static void serve_bind(struct ext_http_server *s, const struct request *r, struct reply *out);
static void serve_preempt(struct ext_http_server *s, const struct request *r, struct reply *out);
static void serve_healthz(struct ext_http_server *s, const struct request *r, struct reply *out);
static void serve_readyz(struct ext_http_server *s, const struct request *r, struct reply *out);
static void serve_metrics(struct ext_http_server *s, const struct request *r, struct reply *out);
static void serve_debug_state(struct ext_http_server *s, const struct request *r,
                              struct reply *out);
static void serve_admission(struct ext_http_server *s, const struct request *r, struct reply *out);

static const struct route routes[] = {
    {"/filter", "POST", "filter", EXT_VERB_FILTER, serve_filter},
    {"/prioritize", "POST", "prioritize", EXT_VERB_PRIORITIZE, serve_prioritize},
    {"/bind", "POST", "bind", EXT_VERB_BIND, serve_bind},
    {"/preempt", "POST", "preempt", EXT_VERB_PREEMPT, serve_preempt},
    {"/healthz", "GET", "healthz", -1, serve_healthz},
    {"/readyz", "GET", "readyz", -1, serve_readyz},
    {"/metrics", "GET", "metrics", -1, serve_metrics},
    {"/debug/state", "GET", "debug_state", -1, serve_debug_state},
    {"/mutate-pods", "POST", "mutate_pods", -1, serve_admission},
};

#define ROUTE_COUNT (sizeof(routes) / sizeof(routes[0]))
#define ROUTE_UNKNOWN ROUTE_COUNT /* metrics slot for 404s */

struct ext_http_server {
    struct MHD_Daemon *daemon;
    const struct ext_http_handlers *h;
    void *ctx;
    struct ext_proto_limits limits;
    struct ext_metrics *metrics;
    struct route_metrics rm[ROUTE_COUNT + 1];
    uint16_t port;

    pthread_mutex_t lock; /* state and in_flight */
    pthread_cond_t idle;  /* signalled when in_flight drops to 0 */
    enum server_state state;
    unsigned in_flight;
    char *start_err; /* libmicrohttpd's complaint while starting */
    size_t start_errlen;
};

/* One request's state, libmicrohttpd's *con_cls. */
struct request {
    size_t route; /* index into routes, or ROUTE_UNKNOWN */
    struct timespec start;
    unsigned status; /* what was answered; 0 until then */
    bool too_big;
    bool accounted; /* its metrics are recorded */
    char *body;
    size_t len, cap;
};

void ext_http_config_init(struct ext_http_config *cfg)
{
    memset(cfg, 0, sizeof(*cfg));
    cfg->listen = HTTP_DEFAULT_LISTEN;
    cfg->limits = ext_proto_limits_default;
    cfg->max_connections = HTTP_DEFAULT_MAX_CONNECTIONS;
    cfg->idle_timeout_s = HTTP_DEFAULT_IDLE_TIMEOUT_S;
}

static double seconds_since(const struct timespec *t0)
{
    struct timespec now;

    clock_gettime(CLOCK_MONOTONIC, &now);
    return (double)(now.tv_sec - t0->tv_sec) + (double)(now.tv_nsec - t0->tv_nsec) / 1e9;
}

/* ---- replies ------------------------------------------------------------------- */

static void reply_text(struct reply *out, unsigned status, const char *text)
{
    out->status = status;
    out->content_type = CONTENT_TEXT;
    out->body = strdup(text);
    out->len = out->body != NULL ? strlen(out->body) : 0;
}

/* {"Error":"..."} for routes that are not verbs. */
static void reply_json_error(struct reply *out, unsigned status, const char *error)
{
    out->status = status;
    out->content_type = CONTENT_JSON;
    if (ext_error_encode(EXT_VERB_BIND, error, &out->body, &out->len) != EXT_OK)
        out->body = NULL;
}

/* A verb's failure, in the verb's shape. */
static void reply_verb_error(struct reply *out, enum ext_verb verb, unsigned status,
                             const char *error)
{
    out->status = status;
    out->content_type = CONTENT_JSON;
    if (ext_error_encode(verb, error, &out->body, &out->len) != EXT_OK)
        out->body = NULL;
}

static unsigned decode_status(int rc)
{
    if (rc == EXT_ETOOBIG)
        return MHD_HTTP_CONTENT_TOO_LARGE;
    if (rc == EXT_ENOMEM)
        return MHD_HTTP_INTERNAL_SERVER_ERROR;
    return MHD_HTTP_BAD_REQUEST;
}

static unsigned handler_status(int rc)
{
    return rc == EXT_ESTOPPED ? MHD_HTTP_SERVICE_UNAVAILABLE : MHD_HTTP_INTERNAL_SERVER_ERROR;
}

/* The end of every verb: a handler failure or the encoded answer. */
static void reply_verb(struct reply *out, enum ext_verb verb, int handler_rc,
                       const char *handler_error, int encode_rc)
{
    if (handler_rc != EXT_OK) {
        const char *why = handler_error != NULL && handler_error[0] != '\0'
                              ? handler_error
                              : ext_strerror(handler_rc);

        free(out->body);
        out->body = NULL;
        reply_verb_error(out, verb, handler_status(handler_rc), why);
        return;
    }
    if (encode_rc != EXT_OK) {
        reply_verb_error(out, verb, MHD_HTTP_INTERNAL_SERVER_ERROR, ext_strerror(encode_rc));
        return;
    }
    out->status = MHD_HTTP_OK;
    out->content_type = CONTENT_JSON;
}

/* ---- the verbs ------------------------------------------------------------------ */

static void serve_filter(struct ext_http_server *s, const struct request *r, struct reply *out)
{
    struct ext_filter_answer ans = {0};
    struct ext_filter_args a;
    char err[HTTP_ERRLEN];
    int rc, enc = EXT_ENOMEM;

    rc = ext_filter_args_decode(r->body, r->len, &s->limits, &a, err, sizeof(err));
    if (rc != EXT_OK) {
        reply_verb_error(out, EXT_VERB_FILTER, decode_status(rc), err);
        return;
    }
    ans.pool = ext_arena_new();
    ans.verdicts = ans.pool != NULL ? ext_arena_calloc(ans.pool, a.n, sizeof(*ans.verdicts)) : NULL;
    rc = ans.verdicts != NULL ? s->h->filter(s->ctx, &a, &ans) : EXT_ENOMEM;
    if (rc == EXT_OK)
        enc = ext_filter_result_encode(&a, &ans, &out->body, &out->len);
    reply_verb(out, EXT_VERB_FILTER, rc, ans.error, enc);
    ext_arena_free(ans.pool);
    ext_filter_args_cleanup(&a);
}

static void serve_prioritize(struct ext_http_server *s, const struct request *r, struct reply *out)
{
    struct ext_priority_answer ans = {0};
    struct ext_filter_args a;
    char err[HTTP_ERRLEN];
    int rc, enc = EXT_ENOMEM;

    rc = ext_filter_args_decode(r->body, r->len, &s->limits, &a, err, sizeof(err));
    if (rc != EXT_OK) {
        reply_verb_error(out, EXT_VERB_PRIORITIZE, decode_status(rc), err);
        return;
    }
    ans.pool = ext_arena_new();
    ans.scores = ans.pool != NULL ? ext_arena_calloc(ans.pool, a.n, sizeof(*ans.scores)) : NULL;
    rc = ans.scores != NULL ? s->h->prioritize(s->ctx, &a, &ans) : EXT_ENOMEM;
    if (rc == EXT_OK)
        enc = ext_priority_list_encode(&a, &ans, &out->body, &out->len);
    reply_verb(out, EXT_VERB_PRIORITIZE, rc, NULL, enc);
    ext_arena_free(ans.pool);
    ext_filter_args_cleanup(&a);
}

static void serve_bind(struct ext_http_server *s, const struct request *r, struct reply *out)
{
    struct ext_bind_answer ans = {0};
    struct ext_bind_args a;
    char err[HTTP_ERRLEN];
    int rc, enc = EXT_ENOMEM;

    rc = ext_bind_args_decode(r->body, r->len, &s->limits, &a, err, sizeof(err));
    if (rc != EXT_OK) {
        reply_verb_error(out, EXT_VERB_BIND, decode_status(rc), err);
        return;
    }
    ans.pool = ext_arena_new();
    rc = ans.pool != NULL ? s->h->bind(s->ctx, &a, &ans) : EXT_ENOMEM;
    if (rc == EXT_OK)
        enc = ext_binding_result_encode(&ans, &out->body, &out->len);
    reply_verb(out, EXT_VERB_BIND, rc, ans.error, enc);
    ext_arena_free(ans.pool);
    ext_bind_args_cleanup(&a);
}

static void serve_preempt(struct ext_http_server *s, const struct request *r, struct reply *out)
{
    struct ext_preempt_answer ans = {0};
    struct ext_preempt_args a;
    char err[HTTP_ERRLEN];
    int rc, enc = EXT_ENOMEM;

    rc = ext_preempt_args_decode(r->body, r->len, &s->limits, &a, err, sizeof(err));
    if (rc != EXT_OK) {
        reply_verb_error(out, EXT_VERB_PREEMPT, decode_status(rc), err);
        return;
    }
    ans.pool = ext_arena_new();
    rc = ans.pool != NULL ? s->h->preempt(s->ctx, &a, &ans) : EXT_ENOMEM;
    if (rc == EXT_OK)
        enc = ext_preemption_result_encode(&ans, &out->body, &out->len);
    reply_verb(out, EXT_VERB_PREEMPT, rc, NULL, enc);
    ext_arena_free(ans.pool);
    ext_preempt_args_cleanup(&a);
}

/* ---- the other routes -------------------------------------------------------------- */

static void serve_healthz(struct ext_http_server *s, const struct request *r, struct reply *out)
{
    reply_text(out, MHD_HTTP_OK, "ok\n");
}

static void serve_readyz(struct ext_http_server *s, const struct request *r, struct reply *out)
{
    char why[HTTP_ERRLEN] = "not ready";
    char text[HTTP_ERRLEN + 16];

    if (s->h->ready == NULL || s->h->ready(s->ctx, why, sizeof(why))) {
        reply_text(out, MHD_HTTP_OK, "ok\n");
        return;
    }
    snprintf(text, sizeof(text), "not ready: %s\n", why);
    reply_text(out, MHD_HTTP_SERVICE_UNAVAILABLE, text);
}

static void serve_metrics(struct ext_http_server *s, const struct request *r, struct reply *out)
{
    int rc;

    if (s->metrics == NULL) {
        reply_json_error(out, MHD_HTTP_NOT_FOUND, "metrics are not enabled");
        return;
    }
    rc = ext_metrics_render(s->metrics, &out->body, &out->len);
    if (rc != EXT_OK) {
        reply_json_error(out, MHD_HTTP_INTERNAL_SERVER_ERROR, ext_strerror(rc));
        return;
    }
    out->status = MHD_HTTP_OK;
    out->content_type = CONTENT_METRICS;
}

static void serve_debug_state(struct ext_http_server *s, const struct request *r, struct reply *out)
{
    int rc;

    out->status = MHD_HTTP_OK;
    out->content_type = CONTENT_JSON;
    if (s->h->debug_state == NULL) {
        out->body = strdup("{}");
        out->len = out->body != NULL ? 2 : 0;
        return;
    }
    rc = s->h->debug_state(s->ctx, &out->body, &out->len);
    if (rc != EXT_OK) {
        out->body = NULL;
        reply_json_error(out, MHD_HTTP_INTERNAL_SERVER_ERROR, ext_strerror(rc));
    }
}

/* The admission webhook: the handler answers the AdmissionReview itself. */
static void serve_admission(struct ext_http_server *s, const struct request *r, struct reply *out)
{
    char err[512] = "";
    int rc;

    out->status = MHD_HTTP_OK;
    out->content_type = CONTENT_JSON;
    rc = s->h->admission(s->ctx, r->body, r->len, &out->body, &out->len, err, sizeof(err));
    if (rc == EXT_OK)
        return;
    out->body = NULL;
    reply_json_error(out, rc == EXT_ETOOBIG ? MHD_HTTP_CONTENT_TOO_LARGE : MHD_HTTP_BAD_REQUEST,
                     *err ? err : ext_strerror(rc));
}

/* ---- libmicrohttpd callbacks ---------------------------------------------------------- */

static size_t route_find(const char *url)
{
    size_t i;

    for (i = 0; i < ROUTE_COUNT; i++)
        if (strcmp(routes[i].path, url) == 0)
            return i;
    return ROUTE_UNKNOWN;
}

/* A NULL verb handler hides its route. */
static bool route_enabled(const struct ext_http_server *s, size_t i)
{
    const struct ext_http_handlers *h = s->h;

    if (i == ROUTE_UNKNOWN)
        return false;
    if (routes[i].serve == serve_admission)
        return h->admission != NULL;
    switch (routes[i].verb) {
    case EXT_VERB_FILTER:
        return h->filter != NULL;
    case EXT_VERB_PRIORITIZE:
        return h->prioritize != NULL;
    case EXT_VERB_BIND:
        return h->bind != NULL;
    case EXT_VERB_PREEMPT:
        return h->preempt != NULL;
    }
    return true;
}

/* An error on a route: a verb answers in its own shape, the rest {"Error":...}. */
static void reply_route_error(struct reply *out, const struct request *req, unsigned status,
                              const char *why)
{
    int verb = req->route != ROUTE_UNKNOWN ? routes[req->route].verb : -1;

    if (verb >= 0)
        reply_verb_error(out, (enum ext_verb)verb, status, why);
    else
        reply_json_error(out, status, why);
}

static enum MHD_Result send_reply(struct MHD_Connection *c, struct request *req, struct reply *out,
                                  bool close)
{
    struct MHD_Response *resp;
    enum MHD_Result ret;

    if (out->body == NULL && out->status != MHD_HTTP_OK) {
        out->len = 0;
        out->content_type = NULL;
    }
    resp = MHD_create_response_from_buffer(out->len, out->body != NULL ? out->body : "",
                                           out->body != NULL ? MHD_RESPMEM_MUST_FREE
                                                             : MHD_RESPMEM_PERSISTENT);
    if (resp == NULL) {
        free(out->body);
        return MHD_NO;
    }
    if (out->content_type != NULL)
        MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, out->content_type);
    if (out->allow != NULL)
        MHD_add_response_header(resp, MHD_HTTP_HEADER_ALLOW, out->allow);
    if (close)
        MHD_add_response_header(resp, MHD_HTTP_HEADER_CONNECTION, "close");
    ret = MHD_queue_response(c, out->status, resp);
    MHD_destroy_response(resp);
    if (ret == MHD_YES)
        req->status = out->status;
    return ret;
}

/*
 * Record a request once: when its answer is queued, before a byte of it is
 * sent (so a client that reads the answer then scrapes /metrics sees it), or
 * at completion for one that was never answered.
 */
static void request_account(struct ext_http_server *s, struct request *req)
{
    const struct route_metrics *rm = &s->rm[req->route];
    const char *verb = req->route != ROUTE_UNKNOWN ? routes[req->route].name : "unknown";
    char code[16];

    if (req->accounted)
        return;
    req->accounted = true;
    if (req->status != 0)
        snprintf(code, sizeof(code), "%u", req->status);
    else
        snprintf(code, sizeof(code), "aborted");
    ext_series_add(ext_metric_with(rm->calls, (const char *const[]){verb, code}), 1);
    ext_series_observe(rm->latency, seconds_since(&req->start));
    ext_series_add(rm->in_flight, -1);
}

static enum MHD_Result answer(struct ext_http_server *s, struct MHD_Connection *c,
                              struct request *req, struct reply *out, bool close)
{
    enum MHD_Result ret = send_reply(c, req, out, close);

    if (ret == MHD_YES)
        request_account(s, req);
    return ret;
}

static struct request *request_begin(struct ext_http_server *s, const char *url)
{
    struct request *req = calloc(1, sizeof(*req));

    if (req == NULL)
        return NULL;
    clock_gettime(CLOCK_MONOTONIC, &req->start);
    req->route = route_find(url);
    if (!route_enabled(s, req->route))
        req->route = ROUTE_UNKNOWN;
    pthread_mutex_lock(&s->lock);
    s->in_flight++;
    pthread_mutex_unlock(&s->lock);
    ext_series_add(s->rm[req->route].in_flight, 1);
    return req;
}

/* The first call: headers only. Answer what can be answered without a body. */
static enum MHD_Result on_headers(struct ext_http_server *s, struct MHD_Connection *c,
                                  struct request *req, const char *url, const char *method)
{
    const struct route *rt = req->route != ROUTE_UNKNOWN ? &routes[req->route] : NULL;
    struct reply out = {0};
    const char *clen;
    char why[HTTP_ERRLEN];
    bool draining;

    pthread_mutex_lock(&s->lock);
    draining = s->state != SERVER_RUNNING;
    pthread_mutex_unlock(&s->lock);
    if (draining) {
        reply_route_error(&out, req, MHD_HTTP_SERVICE_UNAVAILABLE, "shutting down");
        return answer(s, c, req, &out, true);
    }
    if (rt == NULL) {
        snprintf(why, sizeof(why), "unknown path %.400s", url);
        reply_json_error(&out, MHD_HTTP_NOT_FOUND, why);
        return answer(s, c, req, &out, false);
    }
    if (strcmp(method, rt->method) != 0) {
        snprintf(why, sizeof(why), "method %.100s not allowed on %s; use %s", method, rt->path,
                 rt->method);
        reply_route_error(&out, req, MHD_HTTP_METHOD_NOT_ALLOWED, why);
        out.allow = rt->method;
        return answer(s, c, req, &out, false);
    }
    clen = MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_LENGTH);
    if (clen != NULL && strtoull(clen, NULL, 10) > s->limits.max_body) {
        snprintf(why, sizeof(why), "body of %.40s bytes is over the cap of %zu", clen,
                 s->limits.max_body);
        reply_route_error(&out, req, MHD_HTTP_CONTENT_TOO_LARGE, why);
        return answer(s, c, req, &out, true);
    }
    return MHD_YES;
}

/* Append a chunk of the body; past the cap the rest is read and dropped. */
static void on_body(struct ext_http_server *s, struct request *req, const char *data, size_t n)
{
    size_t cap;
    char *grown;

    if (req->too_big)
        return;
    if (n > s->limits.max_body - req->len) {
        req->too_big = true;
        free(req->body);
        req->body = NULL;
        req->len = req->cap = 0;
        return;
    }
    if (req->len + n > req->cap) {
        for (cap = req->cap ? req->cap : 16384; cap < req->len + n; cap *= 2)
            ;
        if (cap > s->limits.max_body)
            cap = s->limits.max_body;
        grown = realloc(req->body, cap + 1);
        if (grown == NULL) {
            req->too_big = true; /* out of memory reads as too big: still an answer */
            return;
        }
        req->body = grown;
        req->cap = cap;
    }
    memcpy(req->body + req->len, data, n);
    req->len += n;
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *c, const char *url,
                                  const char *method, const char *version, const char *upload_data,
                                  size_t *upload_data_size, void **con_cls)
{
    struct ext_http_server *s = cls;
    struct request *req = *con_cls;
    struct reply out = {0};
    char why[HTTP_ERRLEN];

    if (req == NULL) {
        req = request_begin(s, url);
        if (req == NULL)
            return MHD_NO;
        *con_cls = req;
        return on_headers(s, c, req, url, method);
    }
    if (*upload_data_size > 0) {
        on_body(s, req, upload_data, *upload_data_size);
        *upload_data_size = 0;
        return MHD_YES;
    }
    if (req->status != 0)
        return MHD_YES; /* answered from the headers */
    if (req->too_big) {
        snprintf(why, sizeof(why), "body is over the cap of %zu bytes", s->limits.max_body);
        reply_route_error(&out, req, MHD_HTTP_CONTENT_TOO_LARGE, why);
        return answer(s, c, req, &out, true);
    }
    routes[req->route].serve(s, req, &out);
    return answer(s, c, req, &out, false);
}

static void on_completed(void *cls, struct MHD_Connection *c, void **con_cls,
                         enum MHD_RequestTerminationCode toe)
{
    struct ext_http_server *s = cls;
    struct request *req = *con_cls;

    if (req == NULL)
        return;
    *con_cls = NULL;
    request_account(s, req);
    free(req->body);
    free(req);

    pthread_mutex_lock(&s->lock);
    if (--s->in_flight == 0)
        pthread_cond_broadcast(&s->idle);
    pthread_mutex_unlock(&s->lock);
}

static void on_log(void *cls, const char *fmt, va_list ap)
{
    struct ext_http_server *s = cls;
    char line[HTTP_ERRLEN];
    size_t n;

    vsnprintf(line, sizeof(line), fmt, ap);
    n = strcspn(line, "\n");
    line[n] = '\0';
    if (s->start_err != NULL) {
        if (s->start_err[0] == '\0') /* the first complaint is the cause */
            snprintf(s->start_err, s->start_errlen, "%s", line);
        return;
    }
    fprintf(stderr, "muster: http: %s\n", line);
}

/* ---- start and stop ------------------------------------------------------------------ */

static int register_metrics(struct ext_http_server *s)
{
    struct ext_metric *calls, *latency, *in_flight;
    size_t i;

    if (s->metrics == NULL)
        return EXT_OK;
    calls = ext_metrics_counter(s->metrics, "muster_extender_requests_total",
                                "HTTP requests served, by route and status code.", "verb,code");
    latency = ext_metrics_histogram(s->metrics, "muster_extender_request_duration_seconds",
                                    "Time from request headers to the answer sent.", "verb",
                                    ext_metrics_latency_buckets, ext_metrics_latency_nbuckets);
    in_flight = ext_metrics_gauge(s->metrics, "muster_extender_requests_in_flight",
                                  "Requests being served now, held binds included.", "verb");
    if (calls == NULL || latency == NULL || in_flight == NULL)
        return EXT_EINVAL;
    for (i = 0; i <= ROUTE_COUNT; i++) {
        const char *name = i < ROUTE_COUNT ? routes[i].name : "unknown";
        const char *const labels[] = {name};

        s->rm[i].calls = calls;
        s->rm[i].latency = ext_metric_with(latency, labels);
        s->rm[i].in_flight = ext_metric_with(in_flight, labels);
    }
    return EXT_OK;
}

/* "host:port", "[v6]:port", ":port" into a socket address. */
static int resolve_listen(const char *listen, struct sockaddr_storage *addr, char *err,
                          size_t errlen)
{
    struct addrinfo hints = {0}, *res = NULL;
    char host[256];
    const char *colon = listen != NULL ? strrchr(listen, ':') : NULL;
    const char *h = listen;
    size_t hlen;
    int rc;

    if (colon == NULL || colon[1] == '\0')
        return ext_errf(err, errlen, EXT_EINVAL, "listen \"%s\" is not host:port",
                        listen != NULL ? listen : "");
    hlen = (size_t)(colon - listen);
    if (hlen >= 2 && h[0] == '[' && h[hlen - 1] == ']') {
        h++;
        hlen -= 2;
    }
    if (hlen >= sizeof(host))
        return ext_errf(err, errlen, EXT_EINVAL, "listen host is too long");
    memcpy(host, h, hlen);
    host[hlen] = '\0';
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
    rc = getaddrinfo(hlen > 0 && strcmp(host, "*") != 0 ? host : NULL, colon + 1, &hints, &res);
    if (rc != 0)
        return ext_errf(err, errlen, EXT_EINVAL, "listen \"%s\": %s", listen, gai_strerror(rc));
    memcpy(addr, res->ai_addr, res->ai_addrlen);
    freeaddrinfo(res);
    return EXT_OK;
}

static int daemon_start(struct ext_http_server *s, const struct ext_http_config *cfg,
                        const struct sockaddr_storage *addr, char *err, size_t errlen)
{
    unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_THREAD_PER_CONNECTION |
                     MHD_USE_POLL | MHD_USE_ITC | MHD_USE_ERROR_LOG;
    bool tls = cfg->tls_cert_pem != NULL;
    struct MHD_OptionItem tls_options[] = {
        {MHD_OPTION_HTTPS_MEM_CERT, 0, (void *)cfg->tls_cert_pem},
        {MHD_OPTION_HTTPS_MEM_KEY, 0, (void *)cfg->tls_key_pem},
        {MHD_OPTION_END, 0, NULL},
    };
    const union MHD_DaemonInfo *info;
    char why[HTTP_ERRLEN] = "";

    if (tls && cfg->tls_key_pem == NULL)
        return ext_errf(err, errlen, EXT_EINVAL, "a TLS certificate needs its key");
    if (tls && MHD_is_feature_supported(MHD_FEATURE_TLS) != MHD_YES)
        return ext_errf(err, errlen, EXT_EINVAL, "libmicrohttpd was built without TLS");
    if (tls)
        flags |= MHD_USE_TLS;
    else
        tls_options[0].option = MHD_OPTION_END;
    if (addr->ss_family == AF_INET6)
        flags |= MHD_USE_IPv6;
    s->start_err = why;
    s->start_errlen = sizeof(why);
    s->daemon = MHD_start_daemon(
        flags, 0, NULL, NULL, on_request, s, MHD_OPTION_SOCK_ADDR, (const struct sockaddr *)addr,
        MHD_OPTION_CONNECTION_LIMIT,
        (unsigned)(cfg->max_connections ? cfg->max_connections : HTTP_DEFAULT_MAX_CONNECTIONS),
        MHD_OPTION_CONNECTION_TIMEOUT,
        (unsigned)(cfg->idle_timeout_s ? cfg->idle_timeout_s : HTTP_DEFAULT_IDLE_TIMEOUT_S),
        MHD_OPTION_NOTIFY_COMPLETED, on_completed, s, MHD_OPTION_EXTERNAL_LOGGER, on_log, s,
        MHD_OPTION_ARRAY, tls_options, MHD_OPTION_END);
    s->start_err = NULL;
    if (s->daemon == NULL)
        return ext_errf(err, errlen, EXT_EIO, "cannot serve on %s%s%s", cfg->listen,
                        why[0] != '\0' ? ": " : "", why);
    info = MHD_get_daemon_info(s->daemon, MHD_DAEMON_INFO_BIND_PORT);
    s->port = info != NULL ? info->port : 0;
    return EXT_OK;
}

int ext_http_server_new(const struct ext_http_config *cfg, const struct ext_http_handlers *h,
                        void *ctx, struct ext_metrics *metrics, struct ext_http_server **out,
                        char *err, size_t errlen)
{
    struct sockaddr_storage addr = {0};
    struct ext_http_server *s;
    pthread_condattr_t attr;
    int rc;

    rc = resolve_listen(cfg->listen, &addr, err, errlen);
    if (rc != EXT_OK)
        return rc;
    s = calloc(1, sizeof(*s));
    if (s == NULL)
        return ext_errf(err, errlen, EXT_ENOMEM, "out of memory");
    s->h = h;
    s->ctx = ctx;
    s->limits = cfg->limits;
    s->metrics = metrics;
    pthread_mutex_init(&s->lock, NULL);
    pthread_condattr_init(&attr);
    pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
    pthread_cond_init(&s->idle, &attr);
    pthread_condattr_destroy(&attr);
    rc = register_metrics(s);
    if (rc != EXT_OK) {
        ext_errf(err, errlen, rc, "cannot register the HTTP metrics (a name clash?)");
        goto out_free;
    }
    rc = daemon_start(s, cfg, &addr, err, errlen);
    if (rc != EXT_OK)
        goto out_free;
    *out = s;
    return EXT_OK;

out_free:
    s->state = SERVER_STOPPED;
    ext_http_server_free(s);
    return rc;
}

uint16_t ext_http_server_port(const struct ext_http_server *s)
{
    return s->port;
}

unsigned ext_http_server_in_flight(struct ext_http_server *s)
{
    unsigned n;

    pthread_mutex_lock(&s->lock);
    n = s->in_flight;
    pthread_mutex_unlock(&s->lock);
    return n;
}

/* Wait for in_flight to reach 0 until the deadline; true if it did. */
static bool wait_idle(struct ext_http_server *s, int64_t timeout_ms)
{
    struct timespec deadline;
    bool idle;

    ext_deadline_in(&deadline, timeout_ms);
    pthread_mutex_lock(&s->lock);
    while (s->in_flight > 0)
        if (pthread_cond_timedwait(&s->idle, &s->lock, &deadline) == ETIMEDOUT)
            break;
    idle = s->in_flight == 0;
    pthread_mutex_unlock(&s->lock);
    return idle;
}

int ext_http_server_stop(struct ext_http_server *s, int64_t timeout_ms)
{
    enum server_state was;
    MHD_socket fd;

    pthread_mutex_lock(&s->lock);
    was = s->state;
    if (was == SERVER_RUNNING)
        s->state = SERVER_DRAINING;
    pthread_mutex_unlock(&s->lock);
    if (was == SERVER_STOPPED)
        return EXT_OK;
    if (was == SERVER_RUNNING) {
        fd = MHD_quiesce_daemon(s->daemon);
        if (fd != MHD_INVALID_SOCKET)
            close(fd);
        if (s->h->stopping != NULL)
            s->h->stopping(s->ctx);
    }
    if (!wait_idle(s, timeout_ms < 0 ? 0 : timeout_ms))
        return EXT_ETIMEOUT;
    MHD_stop_daemon(s->daemon);
    s->daemon = NULL;
    pthread_mutex_lock(&s->lock);
    s->state = SERVER_STOPPED;
    pthread_mutex_unlock(&s->lock);
    return EXT_OK;
}

void ext_http_server_free(struct ext_http_server *s)
{
    if (s == NULL)
        return;
    if (s->daemon != NULL) {
        ext_http_server_stop(s, 0);
        /* Cut off what is left; joins the connection threads. */
        if (s->daemon != NULL)
            MHD_stop_daemon(s->daemon);
    }
    pthread_cond_destroy(&s->idle);
    pthread_mutex_destroy(&s->lock);
    free(s);
}
