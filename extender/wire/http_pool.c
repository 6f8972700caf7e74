/*
 * http_pool.c - the workers that run handlers, the large-body gate, and
 * deferred answers.
 *
 * The event loop suspends a request's connection and queues it here. A
 * worker (`workers` of them, started with the server) runs its route, frees its body
 * and, unless the handler deferred the answer, marks it ready and resumes the
 * connection. A deferred answer resumes it when it comes. Resuming is always
 * the last thing done with a request: the event loop may free it right after.
 */
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "http_int.h"

int http_pool_init(struct ext_http_server *s, unsigned max)
{
    struct http_pool *p = &s->pool;

    memset(p, 0, sizeof(*p));
    p->max = max > 0 ? max : 1;
    p->threads = calloc(p->max, sizeof(*p->threads));
    if (p->threads == NULL)
        return EXT_ENOMEM;
    pthread_cond_init(&p->work, NULL);
    return EXT_OK;
}

static void *worker(void *arg);

/* Every worker at once: a thread count that does not move with load is one a soak can read. */
int http_pool_start(struct ext_http_server *s)
{
    struct http_pool *p = &s->pool;
    int rc = EXT_OK;

    pthread_mutex_lock(&s->lock);
    while (p->nthreads < p->max && rc == EXT_OK) {
        if (pthread_create(&p->threads[p->nthreads], NULL, worker, s) == 0)
            p->nthreads++;
        else
            rc = EXT_ENOMEM;
    }
    pthread_mutex_unlock(&s->lock);
    return rc;
}

void http_pool_cleanup(struct ext_http_server *s)
{
    if (s->pool.threads == NULL)
        return;
    pthread_cond_destroy(&s->pool.work);
    free(s->pool.threads);
    s->pool.threads = NULL;
}

void http_request_drop_body(struct ext_http_server *s, struct request *req)
{
    free(req->body);
    req->body = NULL;
    req->len = req->cap = 0;
    s->buffered -= req->reserved;
    req->reserved = 0;
}

static void waiting_add(struct ext_http_server *s, struct request *req)
{
    req->prev = NULL;
    req->next = s->waiting;
    if (s->waiting != NULL)
        s->waiting->prev = req;
    s->waiting = req;
}

static void waiting_remove(struct ext_http_server *s, struct request *req)
{
    if (req->prev != NULL)
        req->prev->next = req->next;
    else
        s->waiting = req->next;
    if (req->next != NULL)
        req->next->prev = req->prev;
    req->next = req->prev = NULL;
}

bool http_request_ready(struct ext_http_server *s, struct request *req)
{
    if (req->state == REQ_WAITING)
        waiting_remove(s, req);
    req->state = REQ_READY;
    return true;
}

/* Bodies of 64 KiB or more are decoded at most large_decodes at a time: smaller ones
 * cannot parse into more than about 40 times their size (2.5 MiB). */
static bool gate_enter(struct ext_http_server *s, const struct request *req)
{
    if (req->len < HTTP_LARGE_BODY)
        return false;
    pthread_mutex_lock(&s->lock);
    while (s->large_active >= s->large_decodes)
        pthread_cond_wait(&s->large_free, &s->lock);
    s->large_active++;
    pthread_mutex_unlock(&s->lock);
    return true;
}

static void run(struct ext_http_server *s, struct request *req)
{
    bool large = gate_enter(s, req), resume = false, trim = false;
    bool huge = req->len >= HTTP_TRIM_BODY;
    struct reply out = {0};

    http_routes[req->route].serve(s, req, &out);
    pthread_mutex_lock(&s->lock);
    http_request_drop_body(s, req);
    if (large) {
        s->large_active--;
        pthread_cond_signal(&s->large_free);
        trim = huge && s->large_active == 0;
    }
    if (!req->deferred) {
        req->reply = out;
        resume = http_request_ready(s, req);
    } else if (req->answered) {
        resume = http_request_ready(s, req);
    } else {
        req->state = REQ_WAITING;
        waiting_add(s, req);
    }
    pthread_mutex_unlock(&s->lock);
    /* What a huge body's parse took goes back to the system once no large one is decoding. */
    if (trim)
        malloc_trim(0);
    if (resume)
        MHD_resume_connection(req->conn);
}

static void *worker(void *arg)
{
    struct ext_http_server *s = arg;
    struct http_pool *p = &s->pool;
    struct request *req;

    pthread_mutex_lock(&s->lock);
    for (;;) {
        while (!p->stopping && p->head == NULL) {
            p->idle++;
            pthread_cond_wait(&p->work, &s->lock);
            p->idle--;
        }
        if (p->stopping)
            break;
        req = p->head;
        p->head = req->next;
        if (p->head == NULL)
            p->tail = NULL;
        req->next = NULL;
        req->state = REQ_RUNNING;
        pthread_mutex_unlock(&s->lock);
        run(s, req);
        pthread_mutex_lock(&s->lock);
    }
    pthread_mutex_unlock(&s->lock);
    return NULL;
}

int http_pool_push(struct ext_http_server *s, struct request *req)
{
    struct http_pool *p = &s->pool;

    if (p->stopping)
        return EXT_ESTOPPED;
    if (p->nthreads == 0)
        return EXT_ENOMEM;
    req->state = REQ_QUEUED;
    req->next = NULL;
    if (p->tail != NULL)
        p->tail->next = req;
    else
        p->head = req;
    p->tail = req;
    pthread_cond_signal(&p->work);
    return EXT_OK;
}

/* Answer 503 to each request of a detached list, and resume it. */
static void refuse_all(struct request *list)
{
    while (list != NULL) {
        struct request *req = list;

        list = req->next;
        req->next = req->prev = NULL;
        MHD_resume_connection(req->conn);
    }
}

static struct request *take_with_503(struct ext_http_server *s, struct request **head)
{
    struct request *list = *head, *req;

    for (req = list; req != NULL; req = req->next) {
        http_request_drop_body(s, req);
        free(req->reply.body);
        memset(&req->reply, 0, sizeof(req->reply));
        http_reply_route_error(&req->reply, req, MHD_HTTP_SERVICE_UNAVAILABLE, "shutting down");
        req->reply.close = true;
        req->answered = true;
        req->state = REQ_READY;
    }
    *head = NULL;
    return list;
}

void http_pool_stop(struct ext_http_server *s)
{
    struct http_pool *p = &s->pool;
    struct request *queued, *waiting;
    unsigned i, n;

    pthread_mutex_lock(&s->lock);
    p->stopping = true;
    pthread_cond_broadcast(&p->work);
    queued = take_with_503(s, &p->head);
    p->tail = NULL;
    n = p->nthreads;
    pthread_mutex_unlock(&s->lock);
    refuse_all(queued);
    for (i = 0; i < n; i++)
        pthread_join(p->threads[i], NULL);
    pthread_mutex_lock(&s->lock);
    p->nthreads = 0;
    waiting = take_with_503(s, &s->waiting);
    pthread_mutex_unlock(&s->lock);
    refuse_all(waiting);
}

/* ---- deferred answers ------------------------------------------------------------- */

struct ext_deferred *ext_bind_defer(struct ext_bind_answer *ans)
{
    struct request *req = (struct request *)ans->later_;

    if (req == NULL)
        return NULL;
    ans->later_ = NULL;
    req->deferred = true; /* only its worker reads it before the answer */
    return (struct ext_deferred *)req;
}

void ext_deferred_bind_answer(struct ext_deferred *d, int rc, const char *error)
{
    struct request *req = (struct request *)d;
    struct ext_http_server *s = req->server;
    struct reply out;
    bool resume = false;

    http_reply_bind(&out, rc, error);
    pthread_mutex_lock(&s->lock);
    if (req->answered) {
        pthread_mutex_unlock(&s->lock);
        free(out.body); /* answered already (at shutdown): the first answer stands */
        return;
    }
    req->answered = true;
    req->reply = out;
    if (req->state == REQ_WAITING)
        resume = http_request_ready(s, req);
    pthread_mutex_unlock(&s->lock);
    if (resume)
        MHD_resume_connection(req->conn);
}
