/*
 * canned_api.h - a fake Kubernetes API server inside a Check test, curl style.
 *
 * It listens on a loopback port and answers with canned replies, fixture
 * files FIXTURES/<dir>/NAME.http: the status line and headers, a blank line,
 * the body (LF lines, sent as CRLF; "<<SPLIT>>" in the body sends the parts
 * in separate writes with a pause; Content-Length is added unless the reply
 * is chunked). A binary body (protobuf) is a file of its own, named by the
 * header "X-Canned-Body: FILE" and sent chunked, in pieces of
 * "X-Canned-Split: N" bytes when that is given (neither header is sent).
 * Every request is recorded as
 *
 *     METHOD TARGET
 *     Accept: ...             (when it is not application/json)
 *     Authorization: ...      (when sent)
 *     Content-Type: ...       (when sent)
 *     <blank line>
 *     body                    (when there is one, then a newline)
 *
 * and compared with an exact transcript, FIXTURES/<dir>/NAME.req: the records
 * one after another.
 *
 * Which reply a request gets is chosen one of two ways:
 *
 *   - a script: replies in the order the requests arrive, the last one
 *     repeated. For one client on one thread, where that order is the test's.
 *
 *   - routes: the reply is chosen by method and target, for code that sends
 *     from several threads at once (the bind barrier's Bindings, reflectors,
 *     the events worker), where the order requests arrive in is not the
 *     test's. Each route has its own reply sequence (the last repeated); a
 *     request no route matches is answered 404 and still recorded, so the
 *     transcript shows it. Compare such transcripts with
 *     canned_api_expect_unordered(), which sorts both sides.
 *
 * Each connection is served on its own thread and closed after its reply
 * (keep-alive never spans two requests), unless canned_api_keep_alive() was
 * called: then it serves request after request until the client hangs up. A reply named CANNED_HANG sends 200
 * with chunked headers and then nothing until canned_api_release() or
 * canned_api_stop(): a watch that stays open, or an API server that stalls.
 */
#ifndef MUSTER_TEST_CANNED_API_H
#define MUSTER_TEST_CANNED_API_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>

#include "kube.h"

#define CANNED_HANG "hang"
#define CANNED_MAX_REPLIES 8
#define CANNED_WAIT_SEC 10 /* how long the waits below wait before they fail the test */

struct canned_route {
    const char *method;
    const char *target; /* the path with its query; each '*' matches any run of characters */
    const char *replies[CANNED_MAX_REPLIES]; /* in the order this route is asked; last repeats */
};

struct canned_api {
    int lfd;
    int port;
    int wake[2];    /* written by stop: every thread ends */
    int release[2]; /* written by release: hanging replies end */
    pthread_t thread;
    pthread_mutex_t lock;
    pthread_cond_t changed; /* a request recorded, a connection thread ended */
    unsigned live;          /* connection threads running */
    const char *dir;
    const char *const *script;
    size_t nscript, next;
    const struct canned_route *routes;
    size_t nroutes;
    size_t *route_next; /* per route: replies given so far */
    size_t unmatched;   /* requests no route matched */
    size_t arrived;     /* requests read, recorded or not */
    size_t connections; /* connections accepted */
    bool keep_alive;    /* canned_api_keep_alive() */
    size_t together;
    char **reqs;
    size_t nreq, cap;
};

/* Serve replies from FIXTURES/dir in script order. */
void canned_api_start(struct canned_api *s, const char *dir, const char *const *script,
                      size_t nscript);
/* Serve replies from FIXTURES/dir by route; routes are tried in order, the first match wins. */
void canned_api_start_routes(struct canned_api *s, const char *dir,
                             const struct canned_route *routes, size_t nroutes);
/* End hanging replies (this one and any later one), close the port, join every thread. */
void canned_api_stop(struct canned_api *s);
/*
 * From now on keep each connection open for the client's next request (replies say
 * "Connection: keep-alive"; a binary or hanging reply still ends its connection), and when
 * together > 1, hold each reply until the together requests of its batch (the 1st to the
 * together-th request read, the next together, ...) have all arrived: that many callers in
 * flight at once, each on a connection of its own. A short batch is answered after
 * CANNED_WAIT_SEC. canned_api_stop() ends the connections left idle.
 */
void canned_api_keep_alive(struct canned_api *s, size_t together);
/* Connections accepted so far. */
size_t canned_api_connections(struct canned_api *s);
/* End hanging replies now and answer later hangs at once; the server keeps serving. */
void canned_api_release(struct canned_api *s);

/* A client for the server, bearer token "t0ken"; opts may be NULL. */
struct kube_client *canned_api_client(const struct canned_api *s,
                                      const struct kube_client_opts *opts);

size_t canned_api_nreq(struct canned_api *s);
/* Wait until at least n requests were recorded (fails the test after CANNED_WAIT_SEC). */
void canned_api_wait_requests(struct canned_api *s, size_t n);
/* Record i (malloc'd copy), or NULL when there is none yet. */
char *canned_api_request(struct canned_api *s, size_t i);
/* Requests recorded whose method and target match (target may hold '*', as in routes). */
size_t canned_api_hits(struct canned_api *s, const char *method, const char *target);
/* Wait until canned_api_hits() reaches n. */
void canned_api_wait_hits(struct canned_api *s, const char *method, const char *target, size_t n);
size_t canned_api_unmatched(struct canned_api *s);

/* The first n requests, in order, must read exactly like FIXTURES/dir/req (waits for n). */
void canned_api_expect(struct canned_api *s, const char *req, size_t n);
/*
 * The requests recorded so far, in any order, must be exactly the records of
 * FIXTURES/dir/req (waits until there are as many). A record starts at a line
 * "METHOD /..." with METHOD one of GET, POST, PUT, PATCH, DELETE.
 */
void canned_api_expect_unordered(struct canned_api *s, const char *req);

#endif
