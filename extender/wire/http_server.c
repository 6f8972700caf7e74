/*
 * http_server.c - the event loop's side of the HTTP server (libmicrohttpd,
 * epoll, one internal thread): connections and their limits, framing,
 * bodies and their budget, handing requests to the workers, sending
 * replies, metrics, start and graceful stop.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <gnutls/gnutls.h>
#include <inttypes.h>
#include <netdb.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/resource.h>
#include <unistd.h>

#include "http_int.h"

#define HTTP_DEFAULT_LISTEN "127.0.0.1:8888"
#define HTTP_PROBE_TIMEOUT_S 2u /* a connection beyond the limit that says nothing */
#define HTTP_FD_RESERVE 128     /* descriptors kept for the API client, files, logs */
/* A body declared over the cap but within this many caps is read and dropped before the 413
 * (Go's net/http drains a rejected body likewise): a connection closed while the client still
 * sends reads as a broken pipe there, not as the answer. Beyond it, the connection is closed. */
#define HTTP_DRAIN_CAPS 4u

/* A connection's own state: libmicrohttpd's socket context. */
struct conn {
    bool probe;         /* beyond max_connections: probes only */
    bool peer_verified; /* mutual TLS: its certificate was checked */
};

void ext_http_config_init(struct ext_http_config *cfg)
{
    memset(cfg, 0, sizeof(*cfg));
    cfg->listen = HTTP_DEFAULT_LISTEN;
    cfg->limits = ext_proto_limits_default;
    cfg->max_connections = EXT_HTTP_MAX_CONNECTIONS_DEFAULT;
    cfg->idle_timeout_s = EXT_HTTP_IDLE_TIMEOUT_S_DEFAULT;
    cfg->workers = EXT_HTTP_WORKERS_DEFAULT;
    cfg->max_buffered = EXT_HTTP_MAX_BUFFERED_DEFAULT;
    cfg->large_decodes = EXT_HTTP_LARGE_DECODES_DEFAULT;
}

static double seconds_since(const struct timespec *t0)
{
    struct timespec now;

    clock_gettime(CLOCK_MONOTONIC, &now);
    return (double)(now.tv_sec - t0->tv_sec) + (double)(now.tv_nsec - t0->tv_nsec) / 1e9;
}

/* ---- replies and their accounting ------------------------------------------------------ */

/*
 * Record a request once: when its answer is queued, before a byte of it is
 * sent (so a client that reads the answer then scrapes /metrics sees it), or
 * at completion for one that was never answered.
 */
static void request_account(struct ext_http_server *s, struct request *req)
{
    const struct route_metrics *rm = &s->rm[req->route];
    const char *verb = req->route != ROUTE_UNKNOWN ? http_routes[req->route].name : "unknown";
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

/* Queue a reply; its body is handed to libmicrohttpd. */
static enum MHD_Result send_reply(struct ext_http_server *s, struct MHD_Connection *c,
                                  struct request *req, struct reply *out)
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
        out->body = NULL;
        return MHD_NO;
    }
    out->body = NULL;
    if (out->content_type != NULL)
        MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, out->content_type);
    if (out->allow != NULL)
        MHD_add_response_header(resp, MHD_HTTP_HEADER_ALLOW, out->allow);
    if (out->close || req->probe)
        MHD_add_response_header(resp, MHD_HTTP_HEADER_CONNECTION, "close");
    ret = MHD_queue_response(c, out->status, resp);
    MHD_destroy_response(resp);
    if (ret == MHD_YES) {
        req->status = out->status;
        request_account(s, req);
    }
    return ret;
}

/* An answer decided before the body was read: the connection closes after it, so
 * whatever was pipelined behind it is refused, not lost. */
static enum MHD_Result answer_now(struct ext_http_server *s, struct MHD_Connection *c,
                                  struct request *req, unsigned status, const char *why)
{
    struct reply out = {0};

    http_reply_route_error(&out, req, status, why);
    out.close = true;
    return send_reply(s, c, req, &out);
}

/* An answer decided from the headers, sent once the body is read (the connection stays). */
static enum MHD_Result answer_after_body(struct request *req, unsigned status, const char *why,
                                         const char *allow)
{
    http_reply_route_error(&req->early, req, status, why);
    req->early.allow = allow;
    req->has_early = true;
    req->discard = true;
    return MHD_YES;
}

/* ---- connections ------------------------------------------------------------------------- */

static void on_connection(void *cls, struct MHD_Connection *c, void **socket_context,
                          enum MHD_ConnectionNotificationCode code)
{
    struct ext_http_server *s = cls;
    struct conn *cx;
    bool probe;

    if (code != MHD_CONNECTION_NOTIFY_STARTED) {
        free(*socket_context);
        *socket_context = NULL;
        pthread_mutex_lock(&s->lock);
        s->connections--;
        pthread_mutex_unlock(&s->lock);
        return;
    }
    pthread_mutex_lock(&s->lock);
    probe = ++s->connections > s->max_connections;
    pthread_mutex_unlock(&s->lock);
    cx = calloc(1, sizeof(*cx));
    *socket_context = cx;
    if (cx == NULL || !probe)
        return; /* without its state, a connection is an ordinary one */
    /* Beyond the limit: probes only, and not for long. */
    cx->probe = true;
    MHD_set_connection_option(c, MHD_CONNECTION_OPTION_TIMEOUT, HTTP_PROBE_TIMEOUT_S);
}

/* libmicrohttpd's URI callback: the request begins, with its path as sent. */
static void *on_uri(void *cls, const char *uri, struct MHD_Connection *c)
{
    struct ext_http_server *s = cls;
    struct request *req = calloc(1, sizeof(*req));
    const union MHD_ConnectionInfo *info;
    size_t n;

    if (req == NULL)
        return NULL;
    req->server = s;
    req->conn = c;
    clock_gettime(CLOCK_MONOTONIC, &req->start);
    n = strcspn(uri, "?");
    req->route = http_route_find(uri, n);
    if (!http_route_enabled(s, req->route))
        req->route = ROUTE_UNKNOWN;
    snprintf(req->url, sizeof(req->url), "%.*s", (int)(n < 400 ? n : 400), uri);
    info = MHD_get_connection_info(c, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
    req->cx = info != NULL ? info->socket_context : NULL;
    req->probe = req->cx != NULL && ((struct conn *)req->cx)->probe;
    pthread_mutex_lock(&s->lock);
    s->in_flight++;
    pthread_mutex_unlock(&s->lock);
    ext_series_add(s->rm[req->route].in_flight, 1);
    return req;
}

/*
 * Mutual TLS: libmicrohttpd asks for a client certificate (MHD_OPTION_HTTPS_MEM_TRUST)
 * but does not require one; each connection's is checked once, here.
 */
static bool peer_trusted(struct MHD_Connection *c, struct conn *cx)
{
    const union MHD_ConnectionInfo *info;
    unsigned status = 0, n = 0;
    gnutls_session_t tls;

    if (cx != NULL && cx->peer_verified)
        return true;
    info = MHD_get_connection_info(c, MHD_CONNECTION_INFO_GNUTLS_SESSION);
    if (info == NULL || info->tls_session == NULL)
        return false;
    tls = (gnutls_session_t)info->tls_session;
    if (gnutls_certificate_type_get(tls) != GNUTLS_CRT_X509 ||
        gnutls_certificate_get_peers(tls, &n) == NULL || n == 0 ||
        gnutls_certificate_verify_peers2(tls, &status) != GNUTLS_E_SUCCESS || status != 0)
        return false;
    if (cx != NULL)
        cx->peer_verified = true;
    return true;
}

/* ---- framing ------------------------------------------------------------------------------- */

struct framing {
    unsigned content_lengths;
    bool transfer_encoding;
};

static enum MHD_Result count_framing(void *cls, enum MHD_ValueKind kind, const char *key,
                                     const char *value)
{
    struct framing *f = cls;

    if (strcasecmp(key, MHD_HTTP_HEADER_CONTENT_LENGTH) == 0)
        f->content_lengths++;
    else if (strcasecmp(key, MHD_HTTP_HEADER_TRANSFER_ENCODING) == 0)
        f->transfer_encoding = true;
    (void)kind;
    (void)value;
    return MHD_YES;
}

/* Ambiguous framing is refused (RFC 9112 6.3): the connection cannot be trusted after it. */
static const char *framing_error(struct MHD_Connection *c)
{
    struct framing f = {0};

    MHD_get_connection_values(c, MHD_HEADER_KIND, count_framing, &f);
    if (f.content_lengths > 1)
        return "more than one Content-Length header";
    if (f.content_lengths == 1 && f.transfer_encoding)
        return "both Content-Length and Transfer-Encoding";
    return NULL;
}

/* ---- bodies ---------------------------------------------------------------------------------- */

/* Take n more bytes of the buffered-body budget; false when it is spent. Under the lock. */
static bool budget_take(struct ext_http_server *s, struct request *req, size_t n)
{
    if (n > s->max_buffered - s->buffered)
        return false;
    s->buffered += n;
    req->reserved += n;
    return true;
}

static void body_drop(struct ext_http_server *s, struct request *req)
{
    pthread_mutex_lock(&s->lock);
    http_request_drop_body(s, req);
    pthread_mutex_unlock(&s->lock);
}

/* Append a chunk; past a cap the rest is read and dropped, and the answer says why. */
static void on_body(struct ext_http_server *s, struct request *req, const char *data, size_t n)
{
    size_t cap;
    char *grown;
    bool ok;

    if (req->discard || req->too_big || req->busy)
        return;
    if (n > s->limits.max_body - req->len) {
        req->too_big = true;
        body_drop(s, req);
        return;
    }
    if (req->len + n > req->cap) {
        cap = req->cap ? req->cap : 16384;
        while (cap < req->len + n)
            cap *= 2;
        if (req->reserved >= req->len + n && req->reserved > cap)
            cap = req->reserved; /* its Content-Length, taken whole */
        if (cap > s->limits.max_body)
            cap = s->limits.max_body;
        pthread_mutex_lock(&s->lock);
        ok = cap <= req->reserved || budget_take(s, req, cap - req->reserved);
        pthread_mutex_unlock(&s->lock);
        grown = ok ? realloc(req->body, cap + 1) : NULL;
        if (grown == NULL) {
            req->busy = true; /* out of memory reads as busy: still an answer */
            body_drop(s, req);
            return;
        }
        req->body = grown;
        req->cap = cap;
    }
    memcpy(req->body + req->len, data, n);
    req->len += n;
}

/* ---- the access handler ---------------------------------------------------------------------- */

/* The first call: headers only. Refuse what must be refused before a body is read. */
static enum MHD_Result on_headers(struct ext_http_server *s, struct MHD_Connection *c,
                                  struct request *req, const char *method)
{
    const struct route *rt = req->route != ROUTE_UNKNOWN ? &http_routes[req->route] : NULL;
    const char *clen, *framing;
    unsigned long long declared = 0;
    char why[HTTP_ERRLEN];
    bool draining, room;

    pthread_mutex_lock(&s->lock);
    draining = s->state != SERVER_RUNNING;
    pthread_mutex_unlock(&s->lock);
    if (draining)
        return answer_now(s, c, req, MHD_HTTP_SERVICE_UNAVAILABLE, "shutting down");
    if (s->mtls && !peer_trusted(c, req->cx))
        return answer_now(s, c, req, MHD_HTTP_FORBIDDEN,
                          "a client certificate signed by the configured client CA is required");
    framing = framing_error(c);
    if (framing != NULL) {
        snprintf(why, sizeof(why), "ambiguous request framing: %s", framing);
        return answer_now(s, c, req, MHD_HTTP_BAD_REQUEST, why);
    }
    if (req->probe && (rt == NULL || !rt->probe)) {
        snprintf(why, sizeof(why),
                 "connection limit of %u reached; beyond it only /healthz, /readyz and "
                 "/metrics are served",
                 s->max_connections);
        return answer_now(s, c, req, MHD_HTTP_SERVICE_UNAVAILABLE, why);
    }
    clen = MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_LENGTH);
    if (clen != NULL)
        declared = strtoull(clen, NULL, 10);
    if (declared > s->limits.max_body) {
        snprintf(why, sizeof(why), "body of %.40s bytes is over the cap of %zu", clen,
                 s->limits.max_body);
        if (declared / HTTP_DRAIN_CAPS <= s->limits.max_body)
            return answer_after_body(req, MHD_HTTP_CONTENT_TOO_LARGE, why, NULL);
        return answer_now(s, c, req, MHD_HTTP_CONTENT_TOO_LARGE, why);
    }
    if (rt == NULL) {
        snprintf(why, sizeof(why), "unknown path %s", req->url);
        return answer_after_body(req, MHD_HTTP_NOT_FOUND, why, NULL);
    }
    if (strcmp(method, rt->method) != 0) {
        snprintf(why, sizeof(why), "method %.100s not allowed on %s; use %s", method, rt->path,
                 rt->method);
        return answer_after_body(req, MHD_HTTP_METHOD_NOT_ALLOWED, why, rt->method);
    }
    pthread_mutex_lock(&s->lock);
    room = budget_take(s, req, (size_t)declared);
    pthread_mutex_unlock(&s->lock);
    if (!room) {
        /* Read and dropped, then answered: the client is still sending, and a connection
         * closed under it would read as a broken pipe, not as this answer. */
        snprintf(why, sizeof(why),
                 "busy: %zu MiB of request bodies are being received already; retry",
                 s->max_buffered >> 20);
        return answer_after_body(req, MHD_HTTP_SERVICE_UNAVAILABLE, why, NULL);
    }
    return MHD_YES;
}

/* The last call (the body is in), or the call after a worker resumed the connection. */
static enum MHD_Result on_request_end(struct ext_http_server *s, struct MHD_Connection *c,
                                      struct request *req)
{
    struct reply out = {0};
    char why[HTTP_ERRLEN];
    enum request_state state;
    int rc;

    pthread_mutex_lock(&s->lock);
    state = req->state;
    pthread_mutex_unlock(&s->lock);
    if (state == REQ_READY)
        return send_reply(s, c, req, &req->reply);
    if (state != REQ_READING)
        return MHD_YES; /* not ours to answer yet */
    if (req->has_early)
        return send_reply(s, c, req, &req->early);
    if (req->too_big) {
        snprintf(why, sizeof(why), "body is over the cap of %zu bytes", s->limits.max_body);
        http_reply_route_error(&out, req, MHD_HTTP_CONTENT_TOO_LARGE, why);
        return send_reply(s, c, req, &out);
    }
    if (req->busy) {
        snprintf(why, sizeof(why),
                 "busy: %zu MiB of request bodies are being received already; retry",
                 s->max_buffered >> 20);
        http_reply_route_error(&out, req, MHD_HTTP_SERVICE_UNAVAILABLE, why);
        return send_reply(s, c, req, &out);
    }
    if (http_routes[req->route].where == ROUTE_INLINE) {
        http_routes[req->route].serve(s, req, &out);
        body_drop(s, req);
        return send_reply(s, c, req, &out);
    }
    /* A small filter answered from memory here saves two thread hand-offs (to a worker and
     * back), most of its time on a busy machine; one that would wait goes to a worker. */
    if (http_routes[req->route].where == ROUTE_LOOP_FIRST && req->len < HTTP_LARGE_BODY) {
        req->on_loop = true;
        http_routes[req->route].serve(s, req, &out);
        req->on_loop = false;
        if (!out.later) {
            ext_series_add(s->rm[req->route].on_loop, 1);
            body_drop(s, req);
            return send_reply(s, c, req, &out);
        }
    }
    MHD_suspend_connection(c);
    pthread_mutex_lock(&s->lock);
    rc = http_pool_push(s, req);
    pthread_mutex_unlock(&s->lock);
    if (rc == EXT_OK)
        return MHD_YES;
    MHD_resume_connection(c);
    http_reply_route_error(&out, req, MHD_HTTP_SERVICE_UNAVAILABLE,
                           rc == EXT_ESTOPPED ? "shutting down" : ext_strerror(rc));
    out.close = true;
    return send_reply(s, c, req, &out);
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *c, const char *url,
                                  const char *method, const char *version, const char *upload_data,
                                  size_t *upload_data_size, void **con_cls)
{
    struct ext_http_server *s = cls;
    struct request *req = *con_cls;

    (void)url; /* routes match the path as sent, seen by on_uri */
    (void)version;
    if (req == NULL)
        return MHD_NO; /* out of memory in on_uri */
    if (!req->began) {
        req->began = true;
        return on_headers(s, c, req, method);
    }
    if (*upload_data_size > 0) {
        on_body(s, req, upload_data, *upload_data_size);
        *upload_data_size = 0;
        return MHD_YES;
    }
    if (req->status != 0)
        return MHD_YES; /* answered already */
    return on_request_end(s, c, req);
}

static void on_completed(void *cls, struct MHD_Connection *c, void **con_cls,
                         enum MHD_RequestTerminationCode toe)
{
    struct ext_http_server *s = cls;
    struct request *req = *con_cls;

    (void)c;
    (void)toe;
    if (req == NULL)
        return;
    *con_cls = NULL;
    request_account(s, req);
    free(req->early.body);
    free(req->reply.body);
    pthread_mutex_lock(&s->lock);
    http_request_drop_body(s, req);
    if (--s->in_flight == 0)
        pthread_cond_broadcast(&s->idle);
    pthread_mutex_unlock(&s->lock);
    free(req);
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
    struct ext_metric *calls, *latency, *in_flight, *on_loop;
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
    on_loop = ext_metrics_counter(s->metrics, "muster_extender_event_loop_answers_total",
                                  "Requests answered by the event loop without a worker "
                                  "(small filters that did not have to wait).",
                                  "verb");
    if (calls == NULL || latency == NULL || in_flight == NULL || on_loop == NULL)
        return EXT_EINVAL;
    for (i = 0; i <= http_nroutes; i++) {
        const char *name = i < http_nroutes ? http_routes[i].name : "unknown";
        const char *const labels[] = {name};

        s->rm[i].calls = calls;
        s->rm[i].latency = ext_metric_with(latency, labels);
        s->rm[i].in_flight = ext_metric_with(in_flight, labels);
        s->rm[i].on_loop = ext_metric_with(on_loop, labels);
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
        return ext_errf(err, errlen, EXT_EINVAL, "listen \"%.300s\" is not host:port",
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
        return ext_errf(err, errlen, EXT_EINVAL, "listen \"%.300s\": %s", listen, gai_strerror(rc));
    memcpy(addr, res->ai_addr, res->ai_addrlen);
    freeaddrinfo(res);
    return EXT_OK;
}

/* Connections need descriptors: fewer than the process may open would fail at accept. */
static unsigned fit_to_descriptors(unsigned wanted)
{
    struct rlimit rl;
    rlim_t room;

    if (getrlimit(RLIMIT_NOFILE, &rl) != 0 || rl.rlim_cur == RLIM_INFINITY)
        return wanted;
    room = rl.rlim_cur > HTTP_FD_RESERVE + EXT_HTTP_PROBE_CONNECTIONS
               ? rl.rlim_cur - HTTP_FD_RESERVE - EXT_HTTP_PROBE_CONNECTIONS
               : 16;
    if (wanted <= room)
        return wanted;
    fprintf(stderr,
            "muster: http: maxConnections %u is more than the %llu file descriptors allow; "
            "serving %llu\n",
            wanted, (unsigned long long)rl.rlim_cur, (unsigned long long)room);
    return (unsigned)room;
}

static int daemon_start(struct ext_http_server *s, const struct ext_http_config *cfg,
                        const struct sockaddr_storage *addr, char *err, size_t errlen)
{
    unsigned flags =
        MHD_USE_EPOLL_INTERNAL_THREAD | MHD_ALLOW_SUSPEND_RESUME | MHD_USE_ITC | MHD_USE_ERROR_LOG;
    bool tls = cfg->tls_cert_pem != NULL;
    struct MHD_OptionItem tls_options[] = {
        {MHD_OPTION_HTTPS_MEM_CERT, 0, (void *)cfg->tls_cert_pem},
        {MHD_OPTION_HTTPS_MEM_KEY, 0, (void *)cfg->tls_key_pem},
        {MHD_OPTION_HTTPS_MEM_TRUST, 0, (void *)cfg->tls_client_ca_pem},
        {MHD_OPTION_END, 0, NULL},
    };
    const union MHD_DaemonInfo *info;
    char why[HTTP_ERRLEN] = "";

    if (tls && cfg->tls_key_pem == NULL)
        return ext_errf(err, errlen, EXT_EINVAL, "a TLS certificate needs its key");
    if (cfg->tls_client_ca_pem != NULL && !tls)
        return ext_errf(err, errlen, EXT_EINVAL, "client certificates need TLS (a certificate)");
    if (tls && MHD_is_feature_supported(MHD_FEATURE_TLS) != MHD_YES)
        return ext_errf(err, errlen, EXT_EINVAL, "libmicrohttpd was built without TLS");
    if (tls)
        flags |= MHD_USE_TLS;
    else
        tls_options[0].option = MHD_OPTION_END;
    if (cfg->tls_client_ca_pem == NULL)
        tls_options[2].option = MHD_OPTION_END;
    if (addr->ss_family == AF_INET6)
        flags |= MHD_USE_IPv6;
    s->start_err = why;
    s->start_errlen = sizeof(why);
    s->daemon = MHD_start_daemon(
        flags, 0, NULL, NULL, on_request, s, MHD_OPTION_EXTERNAL_LOGGER, on_log, s,
        MHD_OPTION_SOCK_ADDR, (const struct sockaddr *)addr, MHD_OPTION_CONNECTION_LIMIT,
        s->max_connections + EXT_HTTP_PROBE_CONNECTIONS, MHD_OPTION_PER_IP_CONNECTION_LIMIT,
        cfg->max_per_client, MHD_OPTION_CONNECTION_TIMEOUT, cfg->idle_timeout_s,
        MHD_OPTION_URI_LOG_CALLBACK, on_uri, s, MHD_OPTION_NOTIFY_CONNECTION, on_connection, s,
        MHD_OPTION_NOTIFY_COMPLETED, on_completed, s, MHD_OPTION_ARRAY, tls_options,
        MHD_OPTION_END);
    s->start_err = NULL;
    if (s->daemon == NULL)
        return ext_errf(err, errlen, EXT_EIO, "cannot serve on %.300s%s%s", cfg->listen,
                        why[0] != '\0' ? ": " : "", why);
    info = MHD_get_daemon_info(s->daemon, MHD_DAEMON_INFO_BIND_PORT);
    s->port = info != NULL ? info->port : 0;
    return EXT_OK;
}

static struct ext_http_server *server_alloc(const struct ext_http_config *cfg,
                                            const struct ext_http_handlers *h, void *ctx,
                                            struct ext_metrics *metrics)
{
    struct ext_http_server *s = calloc(1, sizeof(*s));
    pthread_condattr_t attr;

    if (s == NULL)
        return NULL;
    s->rm = calloc(http_nroutes + 1, sizeof(*s->rm));
    if (s->rm == NULL || http_pool_init(s, cfg->workers) != EXT_OK) {
        free(s->rm);
        free(s);
        return NULL;
    }
    s->h = h;
    s->ctx = ctx;
    s->limits = cfg->limits;
    s->metrics = metrics;
    s->max_connections = fit_to_descriptors(cfg->max_connections ? cfg->max_connections : 1);
    s->max_buffered =
        cfg->max_buffered > s->limits.max_body ? cfg->max_buffered : s->limits.max_body;
    s->large_decodes = cfg->large_decodes > 0 ? cfg->large_decodes : 1;
    s->mtls = cfg->tls_client_ca_pem != NULL;
    pthread_mutex_init(&s->lock, NULL);
    pthread_condattr_init(&attr);
    pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
    pthread_cond_init(&s->idle, &attr);
    pthread_condattr_destroy(&attr);
    pthread_cond_init(&s->large_free, NULL);
    return s;
}

int ext_http_server_new(const struct ext_http_config *cfg, const struct ext_http_handlers *h,
                        void *ctx, struct ext_metrics *metrics, struct ext_http_server **out,
                        char *err, size_t errlen)
{
    struct sockaddr_storage addr = {0};
    struct ext_http_server *s;
    int rc;

    rc = resolve_listen(cfg->listen, &addr, err, errlen);
    if (rc != EXT_OK)
        return rc;
    s = server_alloc(cfg, h, ctx, metrics);
    if (s == NULL)
        return ext_errf(err, errlen, EXT_ENOMEM, "out of memory");
    rc = register_metrics(s);
    if (rc != EXT_OK) {
        ext_errf(err, errlen, rc, "cannot register the HTTP metrics (a name clash?)");
        goto out_free;
    }
    rc = http_pool_start(s);
    if (rc != EXT_OK) {
        ext_errf(err, errlen, rc, "cannot start the HTTP workers");
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

/* Workers joined, every suspended connection resumed, then libmicrohttpd stops. */
static void daemon_halt(struct ext_http_server *s)
{
    http_pool_stop(s);
    MHD_stop_daemon(s->daemon);
    s->daemon = NULL;
    pthread_mutex_lock(&s->lock);
    s->state = SERVER_STOPPED;
    pthread_mutex_unlock(&s->lock);
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
    daemon_halt(s);
    return EXT_OK;
}

void ext_http_server_free(struct ext_http_server *s)
{
    if (s == NULL)
        return;
    if (s->daemon != NULL) {
        ext_http_server_stop(s, 0);
        /* Cut off what is left: queued and deferred requests answer 503. */
        if (s->daemon != NULL)
            daemon_halt(s);
    }
    http_pool_stop(s); /* the workers of a server that never started serving */
    http_pool_cleanup(s);
    pthread_cond_destroy(&s->large_free);
    pthread_cond_destroy(&s->idle);
    pthread_mutex_destroy(&s->lock);
    free(s->rm);
    free(s);
}
