/*
 * http_int.h - what the HTTP server's files share; not for other folders.
 *
 *   http_server.c  the event loop's side: libmicrohttpd callbacks, connections,
 *                  framing, bodies and their budget, start and stop
 *   http_routes.c  the routes: decode, call the handler, encode, error replies
 *   http_pool.c    the workers that run handlers, the large-body gate, deferred answers
 *
 * A request lives from its URI (libmicrohttpd's URI callback makes it) to
 * its completion (NOTIFY_COMPLETED frees it). Its connection is suspended
 * while a worker runs its handler and while its answer is deferred; the one
 * who finishes the answer resumes it, and the event loop sends the reply.
 */
#ifndef MUSTER_HTTP_INT_H
#define MUSTER_HTTP_INT_H

#include <microhttpd.h>
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <time.h>

#include "wire.h"

#define HTTP_ERRLEN 512
#define HTTP_LARGE_BODY ((size_t)64 << 10) /* bodies from here on pass the large-body gate */
/* After a body this big the heap is trimmed at once: kube-scheduler's own calls (5,000 names
 * are 70 KiB) stay below it, since a trim walks the whole heap and, with 100,000 pods cached,
 * stalled a filter 50 ms; the daemon trims every 10 s anyway. */
#define HTTP_TRIM_BODY ((size_t)1 << 20)

struct reply {
    unsigned status;
    const char *content_type;
    const char *allow; /* 405 only */
    bool close;        /* Connection: close */
    bool later;        /* ROUTE_LOOP_FIRST on the event loop: it would wait, run it on a worker */
    char *body;        /* malloc'd; NULL = empty */
    size_t len;
};

struct ext_http_server;
struct request;

/* Where a request's work is done. */
enum route_where {
    ROUTE_INLINE, /* by the event loop: cheap and must answer while workers are busy */
    ROUTE_WORKER, /* by a worker */
    ROUTE_LOOP_FIRST, /* a body under HTTP_LARGE_BODY: by the event loop unless its handler
                       * would wait (reply.later); then, and for larger bodies, by a worker */
};

struct route {
    const char *path;
    const char *method;
    const char *name; /* the verb label of the metrics */
    int verb;         /* an enum ext_verb, or -1: the shape of its error replies */
    enum route_where where;
    bool probe; /* served on the connections beyond max_connections */
    void (*serve)(struct ext_http_server *s, struct request *r, struct reply *out);
};

extern const struct route http_routes[];
extern const size_t http_nroutes;
#define ROUTE_UNKNOWN http_nroutes /* the metrics slot of 404s */

enum request_state {
    REQ_READING, /* headers and body coming in */
    REQ_QUEUED,  /* suspended, waiting for a worker */
    REQ_RUNNING, /* a worker runs its handler */
    REQ_WAITING, /* its handler deferred the answer */
    REQ_READY,   /* reply filled; resumed, the event loop sends it */
};

/* One request: libmicrohttpd's *con_cls. */
struct request {
    struct ext_http_server *server;
    struct MHD_Connection *conn;
    void *cx;     /* its connection's state (http_server.c) */
    size_t route; /* index into http_routes, or ROUTE_UNKNOWN */
    char url[416];
    struct timespec start;
    bool began;         /* its headers were seen */
    bool probe;         /* on a connection beyond max_connections */
    bool discard;       /* its body is read and dropped */
    bool too_big;       /* dropped: over max_body */
    bool busy;          /* dropped: over max_buffered */
    bool accounted;     /* its metrics are recorded */
    bool on_loop;       /* being served by the event loop (ROUTE_LOOP_FIRST): must not wait */
    unsigned status;    /* what was answered; 0 until then */
    struct reply early; /* an error decided from the headers, sent after the body */
    bool has_early;
    char *body;
    size_t len, cap;
    size_t reserved; /* bytes of max_buffered it holds */

    /* Guarded by the server's lock from REQ_QUEUED on. */
    enum request_state state;
    bool deferred; /* ext_bind_defer was called */
    bool answered; /* the deferred answer was given */
    struct reply reply;
    struct request *next; /* the work queue; the list of deferred answers */
    struct request *prev;
};

struct route_metrics {
    struct ext_metric *calls; /* shared families, kept here for the hot path */
    struct ext_series *latency;
    struct ext_series *in_flight;
    struct ext_series *on_loop; /* answered by the event loop (ROUTE_LOOP_FIRST) */
};

enum server_state {
    SERVER_RUNNING,
    SERVER_DRAINING,
    SERVER_STOPPED,
};

struct http_pool {
    pthread_t *threads;
    unsigned nthreads, max, idle;
    pthread_cond_t work; /* the queue has work, or the pool stops */
    struct request *head, *tail;
    bool stopping;
};

struct ext_http_server {
    struct MHD_Daemon *daemon;
    const struct ext_http_handlers *h;
    void *ctx;
    struct ext_proto_limits limits;
    struct ext_metrics *metrics;
    struct route_metrics *rm; /* http_nroutes + 1 */
    uint16_t port;
    unsigned max_connections;
    size_t max_buffered;
    unsigned large_decodes;
    bool mtls; /* every client must present a certificate the client CA signed */

    pthread_mutex_t lock; /* everything below */
    pthread_cond_t idle;  /* in_flight dropped to 0 */
    enum server_state state;
    unsigned in_flight;
    unsigned connections;
    size_t buffered;
    struct http_pool pool;
    struct request *waiting; /* deferred answers not given yet */
    unsigned large_active;
    pthread_cond_t large_free;
    char *start_err; /* libmicrohttpd's complaint while starting */
    size_t start_errlen;
};

/* ---- http_routes.c ------------------------------------------------------------ */

size_t http_route_find(const char *path, size_t len);
bool http_route_enabled(const struct ext_http_server *s, size_t i);
void http_reply_text(struct reply *out, unsigned status, const char *text);
void http_reply_json_error(struct reply *out, unsigned status, const char *error);
/* An error on the request's route: a verb answers in its own shape. */
void http_reply_route_error(struct reply *out, const struct request *req, unsigned status,
                            const char *why);
/* A deferred bind's answer, encoded. */
void http_reply_bind(struct reply *out, int rc, const char *error);

/* ---- http_pool.c -------------------------------------------------------------- */

int http_pool_init(struct ext_http_server *s, unsigned max);
/* Start every worker. */
int http_pool_start(struct ext_http_server *s);
/* Under the lock: hand a suspended request to a worker. */
int http_pool_push(struct ext_http_server *s, struct request *req);
/* Stop taking work, answer what is queued with 503, join the workers, then
 * answer every deferred answer still missing with 503. Unlocked. */
void http_pool_stop(struct ext_http_server *s);
void http_pool_cleanup(struct ext_http_server *s);
/* Under the lock: the reply is filled; returns true if the caller must resume. */
bool http_request_ready(struct ext_http_server *s, struct request *req);
/* Free the body and give back its share of max_buffered. Under the lock. */
void http_request_drop_body(struct ext_http_server *s, struct request *req);

#endif
