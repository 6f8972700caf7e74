/*
 * http_routes.c - the routes: each verb decoded, handed to its handler,
 * encoded; the probes and the debug routes; error replies in each verb's shape.
 * Runs on a worker, or on the event loop for the routes marked ROUTE_INLINE (and a small
 * filter first, ROUTE_LOOP_FIRST).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "http_int.h"

#define CONTENT_JSON "application/json"
#define CONTENT_TEXT "text/plain; charset=utf-8"
#define CONTENT_METRICS "text/plain; version=0.0.4; charset=utf-8"

static void serve_filter(struct ext_http_server *s, struct request *r, struct reply *out);
static void serve_prioritize(struct ext_http_server *s, struct request *r, struct reply *out);
static void serve_bind(struct ext_http_server *s, struct request *r, struct reply *out);
static void serve_preempt(struct ext_http_server *s, struct request *r, struct reply *out);
static void serve_healthz(struct ext_http_server *s, struct request *r, struct reply *out);
static void serve_readyz(struct ext_http_server *s, struct request *r, struct reply *out);
static void serve_metrics(struct ext_http_server *s, struct request *r, struct reply *out);
static void serve_debug_state(struct ext_http_server *s, struct request *r, struct reply *out);
static void serve_admission(struct ext_http_server *s, struct request *r, struct reply *out);

const struct route http_routes[] = {
    {"/filter", "POST", "filter", EXT_VERB_FILTER, ROUTE_LOOP_FIRST, false, serve_filter},
    {"/prioritize", "POST", "prioritize", EXT_VERB_PRIORITIZE, ROUTE_WORKER, false,
     serve_prioritize},
    {"/bind", "POST", "bind", EXT_VERB_BIND, ROUTE_WORKER, false, serve_bind},
    {"/preempt", "POST", "preempt", EXT_VERB_PREEMPT, ROUTE_WORKER, false, serve_preempt},
    {"/healthz", "GET", "healthz", -1, ROUTE_INLINE, true, serve_healthz},
    {"/readyz", "GET", "readyz", -1, ROUTE_INLINE, true, serve_readyz},
    {"/metrics", "GET", "metrics", -1, ROUTE_WORKER, true, serve_metrics},
    {"/debug/state", "GET", "debug_state", -1, ROUTE_WORKER, false, serve_debug_state},
    {"/mutate-pods", "POST", "mutate_pods", -1, ROUTE_WORKER, false, serve_admission},
};

const size_t http_nroutes = sizeof(http_routes) / sizeof(http_routes[0]);

/* ---- replies ------------------------------------------------------------------- */

void http_reply_text(struct reply *out, unsigned status, const char *text)
{
    out->status = status;
    out->content_type = CONTENT_TEXT;
    out->body = strdup(text);
    out->len = out->body != NULL ? strlen(out->body) : 0;
}

/* {"Error":"..."} for routes that are not verbs. */
void http_reply_json_error(struct reply *out, unsigned status, const char *error)
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
    switch (rc) {
    case EXT_ESTOPPED:
        return MHD_HTTP_SERVICE_UNAVAILABLE;
    case EXT_EINVAL:
        return MHD_HTTP_BAD_REQUEST; /* the request's objects do not decode */
    case EXT_ETOOBIG:
        return MHD_HTTP_CONTENT_TOO_LARGE;
    }
    return MHD_HTTP_INTERNAL_SERVER_ERROR;
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

static void serve_filter(struct ext_http_server *s, struct request *r, struct reply *out)
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
    a.no_wait = r->on_loop;
    ans.pool = ext_arena_new();
    ans.verdicts = ans.pool != NULL ? ext_arena_calloc(ans.pool, a.n, sizeof(*ans.verdicts)) : NULL;
    rc = ans.verdicts != NULL ? s->h->filter(s->ctx, &a, &ans) : EXT_ENOMEM;
    if (rc == EXT_EBUSY && r->on_loop)
        out->later = true; /* a worker runs it again, decoding included */
    else if (rc == EXT_OK)
        enc = ext_filter_result_encode(&a, &ans, &out->body, &out->len);
    if (!out->later)
        reply_verb(out, EXT_VERB_FILTER, rc, ans.error, enc);
    ext_arena_free(ans.pool);
    ext_filter_args_cleanup(&a);
}

static void serve_prioritize(struct ext_http_server *s, struct request *r, struct reply *out)
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

static void serve_bind(struct ext_http_server *s, struct request *r, struct reply *out)
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
    ans.later_ = (struct ext_deferred *)r;
    rc = ans.pool != NULL ? s->h->bind(s->ctx, &a, &ans) : EXT_ENOMEM;
    if (!r->deferred && rc == EXT_OK)
        enc = ext_binding_result_encode(&ans, &out->body, &out->len);
    if (!r->deferred)
        reply_verb(out, EXT_VERB_BIND, rc, ans.error, enc);
    ext_arena_free(ans.pool);
    ext_bind_args_cleanup(&a);
}

void http_reply_bind(struct reply *out, int rc, const char *error)
{
    struct ext_bind_answer ans = {.error = error};
    int enc = EXT_ENOMEM;

    memset(out, 0, sizeof(*out));
    if (rc == EXT_OK)
        enc = ext_binding_result_encode(&ans, &out->body, &out->len);
    reply_verb(out, EXT_VERB_BIND, rc, error, enc);
}

static void serve_preempt(struct ext_http_server *s, struct request *r, struct reply *out)
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

static void serve_healthz(struct ext_http_server *s, struct request *r, struct reply *out)
{
    http_reply_text(out, MHD_HTTP_OK, "ok\n");
}

static void serve_readyz(struct ext_http_server *s, struct request *r, struct reply *out)
{
    char why[HTTP_ERRLEN] = "not ready";
    char text[HTTP_ERRLEN + 16];

    if (s->h->ready == NULL || s->h->ready(s->ctx, why, sizeof(why))) {
        http_reply_text(out, MHD_HTTP_OK, "ok\n");
        return;
    }
    snprintf(text, sizeof(text), "not ready: %s\n", why);
    http_reply_text(out, MHD_HTTP_SERVICE_UNAVAILABLE, text);
}

static void serve_metrics(struct ext_http_server *s, struct request *r, struct reply *out)
{
    int rc;

    if (s->metrics == NULL) {
        http_reply_json_error(out, MHD_HTTP_NOT_FOUND, "metrics are not enabled");
        return;
    }
    rc = ext_metrics_render(s->metrics, &out->body, &out->len);
    if (rc != EXT_OK) {
        http_reply_json_error(out, MHD_HTTP_INTERNAL_SERVER_ERROR, ext_strerror(rc));
        return;
    }
    out->status = MHD_HTTP_OK;
    out->content_type = CONTENT_METRICS;
}

static void serve_debug_state(struct ext_http_server *s, struct request *r, struct reply *out)
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
        http_reply_json_error(out, MHD_HTTP_INTERNAL_SERVER_ERROR, ext_strerror(rc));
    }
}

/* The admission webhook: the handler answers the AdmissionReview itself. */
static void serve_admission(struct ext_http_server *s, struct request *r, struct reply *out)
{
    char err[512] = "";
    int rc;

    out->status = MHD_HTTP_OK;
    out->content_type = CONTENT_JSON;
    rc = s->h->admission(s->ctx, r->body, r->len, &out->body, &out->len, err, sizeof(err));
    if (rc == EXT_OK)
        return;
    out->body = NULL;
    http_reply_json_error(out,
                          rc == EXT_ETOOBIG ? MHD_HTTP_CONTENT_TOO_LARGE : MHD_HTTP_BAD_REQUEST,
                          *err ? err : ext_strerror(rc));
}

/* The route of a path as sent: no percent-decoding, so "/healthz%00/x" is no route. */
size_t http_route_find(const char *path, size_t len)
{
    size_t i;

    for (i = 0; i < http_nroutes; i++)
        if (strlen(http_routes[i].path) == len && memcmp(http_routes[i].path, path, len) == 0)
            return i;
    return ROUTE_UNKNOWN;
}

/* A NULL verb handler hides its route. */
bool http_route_enabled(const struct ext_http_server *s, size_t i)
{
    const struct ext_http_handlers *h = s->h;

    if (i == ROUTE_UNKNOWN)
        return false;
    if (http_routes[i].serve == serve_admission)
        return h->admission != NULL;
    switch (http_routes[i].verb) {
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
void http_reply_route_error(struct reply *out, const struct request *req, unsigned status,
                            const char *why)
{
    int verb = req->route != ROUTE_UNKNOWN ? http_routes[req->route].verb : -1;

    if (verb >= 0)
        reply_verb_error(out, (enum ext_verb)verb, status, why);
    else
        http_reply_json_error(out, status, why);
}
