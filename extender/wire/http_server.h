/*
 * http_server.h - the HTTP shell kube-scheduler talks to (libmicrohttpd).
 *
 * The server knows the wire, not the policy. It decodes each verb's request
 * (extender_proto.h), hands the decoded args to a handler given at start,
 * encodes the answer the handler filled, and keeps per-verb metrics. Routes:
 *
 *   POST /filter /prioritize /bind /preempt    the extender verbs
 *   GET  /healthz                              200 while the process serves
 *   GET  /readyz                               handlers->ready, 503 with why
 *   GET  /metrics                              the ext_metrics registry
 *   GET  /debug/state                          handlers->debug_state JSON
 *   POST /mutate-pods                          handlers->admission (the GPU-sharing webhook)
 *
 * Errors on the wire: unknown path 404 {"Error":"unknown path /x"}, wrong
 * method 405 with Allow, a body over the cap 413, a request that does not
 * decode 400 — the verbs answer in their own shape with Error set.
 *
 * One thread per connection (capped): a bind held for seconds at the gang
 * barrier blocks only its own connection, and kube-scheduler opens another
 * for the next call. Handlers therefore run concurrently and must be
 * thread-safe.
 */
#ifndef MUSTER_HTTP_SERVER_H
#define MUSTER_HTTP_SERVER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ext_err.h"
#include "extender_proto.h"
#include "metrics.h"

/*
 * Each verb handler reads its args and fills its answer; memory the answer
 * points at comes from ans->pool (or is handed to it with ext_pool_defer).
 * A verdict is data: a bind refused by the gang barrier sets ans->error and
 * returns EXT_OK, which answers 200 with Error set. Any other return is a
 * failure of muster itself: 503 for EXT_ESTOPPED, 500 otherwise, with Error
 * set to ext_strerror(rc) unless the answer's error says more.
 * A NULL verb handler answers 404 for that route.
 */
struct ext_http_handlers {
    int (*filter)(void *ctx, const struct ext_filter_args *a, struct ext_filter_answer *ans);
    int (*prioritize)(void *ctx, const struct ext_filter_args *a, struct ext_priority_answer *ans);
    int (*bind)(void *ctx, const struct ext_bind_args *a, struct ext_bind_answer *ans);
    int (*preempt)(void *ctx, const struct ext_preempt_args *a, struct ext_preempt_answer *ans);

    /* /readyz: NULL means always ready; false writes a one-line why. */
    bool (*ready)(void *ctx, char *why, size_t len);
    /* /debug/state: a malloc'd JSON document; NULL handler answers {}. */
    int (*debug_state)(void *ctx, char **json, size_t *len);
    /* The server began to stop: wake held calls so they answer now. */
    void (*stopping)(void *ctx);
    /* POST /mutate-pods: an AdmissionReview in, one out (malloc'd); NULL hides the route.
     * EXT_EINVAL answers 400 and EXT_ETOOBIG 413, with err. */
    int (*admission)(void *ctx, const char *body, size_t len, char **out, size_t *outlen,
                     char *err, size_t errlen);
};

struct ext_http_config {
    const char *listen;       /* "host:port", "[v6]:port", ":port"; port 0 = any free */
    const char *tls_cert_pem; /* PEM text (not a path); NULL = plain HTTP */
    const char *tls_key_pem;
    struct ext_proto_limits limits;
    unsigned max_connections; /* 0 = 1024; each held bind keeps one */
    unsigned idle_timeout_s;  /* an idle keep-alive connection closes; 0 = 120 */
};

/* The defaults above, with ext_proto_limits_default and listen 127.0.0.1:8888. */
void ext_http_config_init(struct ext_http_config *cfg);

struct ext_http_server;

/*
 * Start serving. handlers and ctx are borrowed for the server's life; so is
 * metrics (NULL: no /metrics, no accounting), where the server registers
 * muster_extender_requests_total{verb,code},
 * muster_extender_request_duration_seconds{verb} and
 * muster_extender_requests_in_flight{verb}.
 */
int ext_http_server_new(const struct ext_http_config *cfg, const struct ext_http_handlers *h,
                        void *ctx, struct ext_metrics *metrics, struct ext_http_server **out,
                        char *err, size_t errlen);

/* The port bound, useful after listening on port 0. */
uint16_t ext_http_server_port(const struct ext_http_server *s);

/* Requests being served right now. */
unsigned ext_http_server_in_flight(struct ext_http_server *s);

/*
 * Stop gracefully: no new connections, new requests on open ones get 503,
 * handlers->stopping is called, and in-flight requests get up to timeout_ms
 * to finish. EXT_ETIMEOUT if some had not finished (they are cut off when
 * the server is freed, after their handler returns). Idempotent.
 */
int ext_http_server_stop(struct ext_http_server *s, int64_t timeout_ms);

/* Stop (without waiting) if still running, and free. NULL is a no-op. */
void ext_http_server_free(struct ext_http_server *s);

#endif
