/*
 * wire.h - the wire kube-scheduler talks: the extender protocol
 * (k8s.io/kube-scheduler/extender/v1) in and out of C, and the HTTP server
 * that carries it.
 *
 * The wire knows neither the engine nor the API server: a handler table given
 * at start decides, the wire decodes, encodes and counts.
 */
#ifndef MUSTER_WIRE_H
#define MUSTER_WIRE_H

#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base.h"

/* ---- the extender protocol ----------------------------------------------- */
/*
 * The extender wire format of kube-scheduler
 * (k8s.io/kube-scheduler/extender/v1) in and out of C.
 *
 * Decoders take a request body as received from the network and either fill
 * an args struct or return an ext_err code with a one-line reason in err. The
 * body is never trusted: its size, nesting depth, string lengths and list
 * lengths are capped before anything is built from it.
 *
 * kube-scheduler sends PascalCase keys (the Go structs carry no json tags) and
 * Go's encoding/json reads keys case-insensitively, preferring an exact match.
 * The decoders do the same: "Pod" first, then any spelling of it ("pod").
 *
 * Encoders produce exactly the shape kube-scheduler expects, into a heap
 * buffer (malloc; the caller frees it, or hands it to the HTTP layer).
 *
 * Answers are filled by the caller's handlers. Whatever they point at must
 * outlive encoding; the per-request arena (ext_arena, base.h) is the place for it.
 */

/* ---- caps on network input ------------------------------------------------ */

struct ext_proto_limits {
    size_t max_body;      /* bytes of one request body */
    size_t max_depth;     /* nesting of arrays and objects */
    size_t max_names;     /* node names (or Nodes items), victim nodes, victims per node */
    size_t max_string;    /* bytes of one JSON string, escapes counted as written */
    size_t decode_budget; /* heap one body's parse may take (estimated before it); 0 = none */
};

#define EXT_PROTO_MAX_BODY_DEFAULT (64u << 20) /* 5,000 full Node objects fit */
#define EXT_PROTO_MAX_DEPTH_DEFAULT 64
#define EXT_PROTO_MAX_NAMES_DEFAULT 20000
#define EXT_PROTO_MAX_STRING_DEFAULT (256u << 10) /* annotations may be large */
/* 5,000 full Node objects of a real cluster (about 30 MiB) parse in about 210 MiB. */
#define EXT_PROTO_DECODE_BUDGET_DEFAULT ((size_t)256 << 20)

/* The defaults above. */
extern const struct ext_proto_limits ext_proto_limits_default;

/* ---- requests -------------------------------------------------------------- */

/* How the node candidates came: names (nodeCacheCapable) or full Node objects. */
enum ext_node_form {
    EXT_NODES_BY_NAME, /* {"NodeNames":[...],"Nodes":null} */
    EXT_NODES_FULL,    /* {"Nodes":{"items":[<Node>...]},"NodeNames":null} */
};

/* ExtenderArgs: the request of filter and prioritize. */
struct ext_filter_args {
    cJSON *doc;            /* owned: the parsed body */
    struct ext_arena *mem; /* owned: the arrays below */
    const cJSON *pod;      /* the Pod object, inside doc */
    enum ext_node_form form;
    size_t n;            /* candidates */
    const char **names;  /* n node names, strings inside doc or mem */
    const cJSON **nodes; /* EXT_NODES_FULL: the n Node objects; else NULL */
    /* Set by the HTTP server when the event loop itself runs the handler (filter, small
     * bodies): the handler must not wait (a lock held elsewhere, I/O); it returns EXT_EBUSY
     * instead and a worker runs it again. */
    bool no_wait;
};

int ext_filter_args_decode(const char *body, size_t len, const struct ext_proto_limits *lim,
                           struct ext_filter_args *out, char *err, size_t errlen);
void ext_filter_args_cleanup(struct ext_filter_args *a);
/*
 * The same decoder without the NodeNames fast path (every name a cJSON item):
 * the reference the fast path must match, for tests and fuzz targets only.
 */
int ext_filter_args_decode_reference(const char *body, size_t len,
                                     const struct ext_proto_limits *lim,
                                     struct ext_filter_args *out, char *err, size_t errlen);

/* ExtenderBindingArgs. Every string points into doc; uid may be "". */
struct ext_bind_args {
    cJSON *doc;
    const char *pod_name;
    const char *pod_namespace;
    const char *pod_uid;
    const char *node;
};

int ext_bind_args_decode(const char *body, size_t len, const struct ext_proto_limits *lim,
                         struct ext_bind_args *out, char *err, size_t errlen);
void ext_bind_args_cleanup(struct ext_bind_args *a);

/* The pods the scheduler would evict on one node for the preemptor. */
struct ext_victims {
    const char *node;
    size_t npods;
    const char **uids;  /* Pods[].UID (meta form) or Pods[].metadata.uid (full form) */
    const cJSON **pods; /* full form: the Pod objects; meta form: NULL */
    int64_t num_pdb_violations;
};

/* ExtenderPreemptionArgs, from NodeNameToMetaVictims or NodeNameToVictims. */
struct ext_preempt_args {
    cJSON *doc;
    struct ext_arena *mem;
    const cJSON *pod;
    bool meta; /* the victims came as NodeNameToMetaVictims */
    size_t n;
    struct ext_victims *nodes; /* in request order */
};

int ext_preempt_args_decode(const char *body, size_t len, const struct ext_proto_limits *lim,
                            struct ext_preempt_args *out, char *err, size_t errlen);
void ext_preempt_args_cleanup(struct ext_preempt_args *a);

/*
 * The cheap pre-parse check every decoder runs, over the raw bytes (strings
 * and escapes honoured) before cJSON builds anything: depth and string length
 * caps, valid UTF-8 (RFC 8259) and no \u0000 (a C string would end there, so
 * "a\u0000b" would read as "a"), and the heap the parse would take, estimated
 * from the values and strings counted, within decode_budget (EXT_ETOOBIG).
 * Exposed for the fuzz targets and for other JSON inputs.
 */
int ext_json_precheck(const char *body, size_t len, const struct ext_proto_limits *lim, char *err,
                      size_t errlen);

/* Go's encoding/json key match: the exact key, else a case-insensitive one. */
const cJSON *ext_json_get(const cJSON *obj, const char *key);

/* ---- answers ---------------------------------------------------------------- */

enum ext_verdict {
    EXT_NODE_PASSES,
    EXT_NODE_FAILS,        /* FailedNodes: retried on cluster events */
    EXT_NODE_UNRESOLVABLE, /* FailedAndUnresolvableNodes */
};

struct ext_node_verdict {
    enum ext_verdict verdict;
    const char *reason; /* for FAILS / UNRESOLVABLE; NULL reads as "" */
};

/* ExtenderFilterResult. The server presets every verdict to PASSES. */
struct ext_filter_answer {
    struct ext_arena *pool;
    struct ext_node_verdict *verdicts; /* one per candidate, in request order */
    const char *error;                 /* set: answer only Error, no nodes */
    /* Leave the failing candidates out when a node passes: kube-scheduler reads why a node
     * failed only when none passes (for its FitError and preemption), so thousands of
     * reasons would be written, sent and decoded for nothing. */
    bool omit_failed;
};

/* HostPriorityList. The server presets every score to 0; 0..10 are sent. */
struct ext_priority_answer {
    struct ext_arena *pool;
    int *scores; /* one per candidate */
    /* Leave hosts scoring 0 out: kube-scheduler adds nothing for a host it is not told of. */
    bool omit_zero;
};

/* ExtenderBindingResult. */
struct ext_bind_answer {
    struct ext_arena *pool;
    const char *error;           /* NULL or "": bound */
    struct ext_deferred *later_; /* the server's; taken by ext_bind_defer */
};

/*
 * A bind answered later. A bind handler that must wait (the gang barrier)
 * calls ext_bind_defer, keeps the handle and returns EXT_OK at once: the
 * connection waits without a thread, and the answer is given from any thread
 * with ext_deferred_bind_answer, exactly once. NULL when the caller cannot
 * wait (no server behind the answer): answer now instead.
 *
 * Every deferred answer must be given before the server is freed; the
 * handlers' stopping callback is the place to give the last ones.
 */
struct ext_deferred;

struct ext_deferred *ext_bind_defer(struct ext_bind_answer *ans);
/* rc EXT_OK answers 200 with error as ExtenderBindingResult.Error (NULL or "":
 * bound); any other rc is a failure of muster (503 for EXT_ESTOPPED, else 500). */
void ext_deferred_bind_answer(struct ext_deferred *d, int rc, const char *error);

struct ext_meta_victims {
    const char *node;
    size_t npods;
    const char *const *uids;
    int64_t num_pdb_violations;
};

/* ExtenderPreemptionResult: the nodes that may stay candidates, with victims. */
struct ext_preempt_answer {
    struct ext_arena *pool;
    size_t n;
    const struct ext_meta_victims *nodes;
};

/*
 * Each encoder writes a malloc'd, NUL-terminated buffer into *out and its
 * length (without the NUL) into *len. Filter answers in the form it was asked.
 */
int ext_filter_result_encode(const struct ext_filter_args *a, const struct ext_filter_answer *ans,
                             char **out, size_t *len);
int ext_priority_list_encode(const struct ext_filter_args *a, const struct ext_priority_answer *ans,
                             char **out, size_t *len);
int ext_binding_result_encode(const struct ext_bind_answer *ans, char **out, size_t *len);
int ext_preemption_result_encode(const struct ext_preempt_answer *ans, char **out, size_t *len);

/* The routes kube-scheduler calls, for error replies in each verb's shape. */
enum ext_verb {
    EXT_VERB_FILTER,
    EXT_VERB_PRIORITIZE,
    EXT_VERB_BIND,
    EXT_VERB_PREEMPT,
    EXT_VERB_COUNT
};

const char *ext_verb_name(enum ext_verb v);

/*
 * A failed call's body, in the verb's shape with Error set so kube-scheduler
 * can log it. Prioritize and preempt replies have no Error field in Go;
 * kube-scheduler ignores unknown keys and any status but 200 is an error to it
 * anyway: prioritize gets {"Error":...}, preempt
 * {"NodeNameToMetaVictims":null,"Error":...}.
 */
int ext_error_encode(enum ext_verb v, const char *error, char **out, size_t *len);

/* ---- the HTTP server ----------------------------------------------------- */
/*
 * The HTTP shell kube-scheduler talks to (libmicrohttpd).
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
 * Connections cost no thread while they wait: one event loop (epoll) reads
 * and writes every connection, and a small pool of worker threads (`workers`,
 * started with the server) runs the handlers, so handlers run concurrently and
 * must be thread-safe. A bind held at the gang barrier is deferred
 * (ext_bind_defer): its connection is suspended until the answer comes.
 * /healthz and /readyz are answered by the event loop itself, so they answer
 * while every worker is busy. So is a filter whose body is under 64 KiB (the
 * ones kube-scheduler sends in nodeCacheCapable mode): its handler is run with
 * args.no_wait and answers from memory at once, or returns EXT_EBUSY and a
 * worker runs it (the hand-off to a worker and back costs more than a filter
 * answered from state; docs/bench.md, issue 26); and beyond max_connections a few more
 * connections are accepted for /healthz, /readyz and /metrics only (a verb
 * there gets 503), so probes answer while the limit is reached.
 *
 * Memory per request is bounded: bodies over limits.max_body get 413, bodies
 * being received are capped at max_buffered bytes in all (503 beyond), the
 * decoders refuse a body whose parse would take more than
 * limits.decode_budget (413), and at most large_decodes bodies of 64 KiB or
 * more are decoded at once.
 *
 * HTTP/1.1 framing is strict: two Content-Length headers, or Content-Length
 * with Transfer-Encoding, get 400 and the connection closes; routes match the
 * path as sent (no percent-decoding); an answer given before a body was read
 * says Connection: close, so pipelined requests behind it are refused, not
 * lost. Otherwise pipelined requests are answered in order on the connection:
 * libmicrohttpd reads the next one only after an answer is sent, and a
 * connection suspended while a worker (or a deferred bind) answers keeps
 * what it has read for when it is resumed (test_http's pipelining cases).
 */

/*
 * Each verb handler reads its args and fills its answer; memory the answer
 * points at comes from ans->pool (or is handed to it with ext_arena_defer).
 * A verdict is data: a bind refused by the gang barrier sets ans->error and
 * returns EXT_OK, which answers 200 with Error set. EXT_EINVAL answers 400
 * (an object in the request does not decode) and EXT_ETOOBIG 413; any other
 * return is a failure of muster itself: 503 for EXT_ESTOPPED, 500 otherwise.
 * Error is ext_strerror(rc) unless the answer's error says more.
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
    int (*admission)(void *ctx, const char *body, size_t len, char **out, size_t *outlen, char *err,
                     size_t errlen);
};

struct ext_http_config {
    const char *listen;       /* "host:port", "[v6]:port", ":port"; port 0 = any free */
    const char *tls_cert_pem; /* PEM text (not a path); NULL = plain HTTP */
    const char *tls_key_pem;
    const char *tls_client_ca_pem; /* set: every client must present a certificate it signed */
    struct ext_proto_limits limits;
    unsigned max_connections; /* open at once; each held bind keeps one */
    unsigned max_per_client;  /* from one IP address; 0 = no cap */
    unsigned idle_timeout_s;  /* an idle keep-alive connection closes */
    unsigned workers;         /* handler threads */
    size_t max_buffered;      /* bytes of request bodies being received, in all */
    unsigned large_decodes;   /* bodies of 64 KiB or more decoded at once */
};

#define EXT_HTTP_MAX_CONNECTIONS_DEFAULT 10000
#define EXT_HTTP_IDLE_TIMEOUT_S_DEFAULT 120
#define EXT_HTTP_WORKERS_DEFAULT 16
#define EXT_HTTP_MAX_BUFFERED_DEFAULT ((size_t)128 << 20)
#define EXT_HTTP_LARGE_DECODES_DEFAULT 2
/* Connections accepted beyond max_connections, for /healthz, /readyz and /metrics. */
#define EXT_HTTP_PROBE_CONNECTIONS 32

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
