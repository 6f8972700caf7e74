/* canned_api.c - the fake Kubernetes API server of the Check tests; see canned_api.h. */
#include "canned_api.h"

#include <check.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "fixture.h"

#define MAX_RECORDS 8192 /* more are answered, not recorded */

/* What a request no route matches gets. */
static const char not_found_body[] =
    "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"status\":\"Failure\","
    "\"message\":\"no canned route\",\"reason\":\"NotFound\","
    "\"code\":404}";

static void pause_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};

    nanosleep(&ts, NULL);
}

static void send_all(int fd, const char *p, size_t n)
{
    while (n > 0) {
        ssize_t w = send(fd, p, n, MSG_NOSIGNAL);

        if (w <= 0)
            return;
        p += w;
        n -= (size_t)w;
    }
}

static const char *header_value(const char *headers, const char *name)
{
    size_t n = strlen(name);

    for (const char *p = headers; p && *p; p = strstr(p, "\r\n") ? strstr(p, "\r\n") + 2 : NULL)
        if (strncasecmp(p, name, n) == 0 && p[n] == ':')
            return p + n + 1 + strspn(p + n + 1, " ");
    return NULL;
}

static char *header_dup(const char *headers, const char *name)
{
    const char *v = header_value(headers, name);

    return v ? strndup(v, strcspn(v, "\r\n")) : NULL;
}

/* A target matches a pattern with each '*' standing for any run of characters. */
static bool target_matches(const char *pattern, const char *target)
{
    for (; *pattern && *pattern != '*'; pattern++, target++)
        if (*pattern != *target)
            return false;
    if (*pattern == '\0')
        return *target == '\0';
    for (const char *rest = target;; rest++) {
        if (target_matches(pattern + 1, rest))
            return true;
        if (*rest == '\0')
            return false;
    }
}

/* The method and target of a record ("METHOD TARGET\n..."). */
static bool record_matches(const char *rec, const char *method, const char *target)
{
    size_t m = strlen(method);
    const char *eol = strchr(rec, '\n');
    char *t;
    bool ok;

    if (strncmp(rec, method, m) != 0 || rec[m] != ' ' || !eol)
        return false;
    t = strndup(rec + m + 1, (size_t)(eol - rec - m - 1));
    ok = t && target_matches(target, t);
    free(t);
    return ok;
}

/* Read one request; its record, malloc'd, or NULL when the client sent none. */
static char *read_request(int fd)
{
    char buf[65536], *end, *auth, *ctype, *accept, *clen, *rec, *acc = NULL;
    size_t n = 0, want;
    ssize_t r;

    while (n < sizeof(buf) - 1 && (r = recv(fd, buf + n, sizeof(buf) - 1 - n, 0)) > 0) {
        n += (size_t)r;
        buf[n] = '\0';
        end = strstr(buf, "\r\n\r\n");
        if (!end)
            continue;
        clen = header_dup(strstr(buf, "\r\n") + 2, "Content-Length");
        want = (size_t)(end + 4 - buf) + (clen ? strtoul(clen, NULL, 10) : 0);
        free(clen);
        if (n >= want)
            break;
    }
    buf[n] = '\0';
    end = strstr(buf, "\r\n\r\n");
    if (!end || !strstr(buf, " HTTP/1.1"))
        return NULL;
    *end = '\0';
    auth = header_dup(strstr(buf, "\r\n") + 2, "Authorization");
    ctype = header_dup(strstr(buf, "\r\n") + 2, "Content-Type");
    accept = header_dup(strstr(buf, "\r\n") + 2, "Accept");
    /* Accept is recorded only when it asks for more than JSON (a protobuf watch, say). */
    if (accept && strcmp(accept, "application/json") != 0)
        ck_assert(asprintf(&acc, "Accept: %s\n", accept) > 0);
    *strstr(buf, " HTTP/1.1") = '\0';
    ck_assert(asprintf(&rec, "%s\n%s%s%s%s%s%s%s\n%s%s", buf, acc ? acc : "",
                       auth ? "Authorization: " : "", auth ? auth : "", auth ? "\n" : "",
                       ctype ? "Content-Type: " : "", ctype ? ctype : "", ctype ? "\n" : "",
                       end + 4, end[4] ? "\n" : "") > 0);
    free(auth);
    free(ctype);
    free(accept);
    free(acc);
    return rec;
}

/* Under the lock: keep the record, and pick its reply (NULL: no route matched). */
static const char *record_and_pick(struct canned_api *s, char *rec)
{
    const char *name = NULL;

    if (s->script) {
        name = s->script[s->next < s->nscript ? s->next : s->nscript - 1];
        s->next++;
    }
    for (size_t i = 0; !s->script && i < s->nroutes; i++) {
        const struct canned_route *r = &s->routes[i];
        size_t k = s->route_next[i], last = 0;

        if (!record_matches(rec, r->method, r->target))
            continue;
        while (last + 1 < CANNED_MAX_REPLIES && r->replies[last + 1])
            last++;
        name = r->replies[k < last ? k : last];
        s->route_next[i]++;
        break;
    }
    s->unmatched += !name;
    s->arrived++;
    if (s->nreq == s->cap && s->cap < MAX_RECORDS) {
        s->cap = s->cap ? s->cap * 2 : 64;
        s->reqs = realloc(s->reqs, s->cap * sizeof(*s->reqs));
        ck_assert_ptr_nonnull(s->reqs);
    }
    if (s->nreq < s->cap)
        s->reqs[s->nreq++] = rec;
    else
        free(rec);
    pthread_cond_broadcast(&s->changed);
    return name;
}

static void reply_hang(struct canned_api *s, int fd)
{
    static const char head[] = "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                               "Transfer-Encoding: chunked\r\n\r\n";
    struct pollfd p[3] = {{.fd = fd, .events = POLLIN},
                          {.fd = s->wake[0], .events = POLLIN},
                          {.fd = s->release[0], .events = POLLIN}};
    char junk[256];

    send_all(fd, head, strlen(head));
    while (poll(p, 3, -1) >= 0 && !p[1].revents && !p[2].revents)
        if (p[0].revents && recv(fd, junk, sizeof(junk), 0) <= 0)
            break; /* the client hung up */
}

/*
 * A binary body (header "X-Canned-Body: FILE", a file beside the fixture), sent chunked in
 * pieces of "X-Canned-Split: N" bytes with a pause between them (default: whole).
 */
static void reply_binary(const struct canned_api *s, int fd, const char *file, size_t split)
{
    size_t len, off = 0;
    char *body = fixture_read(s->dir, file, &len), *out;

    while (off < len) {
        size_t n = split && len - off > split ? split : len - off;

        ck_assert(asprintf(&out, "%zx\r\n", n) > 0);
        send_all(fd, out, strlen(out));
        free(out);
        send_all(fd, body + off, n);
        send_all(fd, "\r\n", 2);
        off += n;
        if (off < len && split)
            pause_ms(5);
    }
    send_all(fd, "0\r\n\r\n", 5);
    free(body);
}

/* Send fixture name: its status and headers, the body in <<SPLIT>> pieces with a pause. */
/* The Connection header of a reply: kept open for the next request in keep-alive mode. */
static const char *connection_header(const struct canned_api *s)
{
    return s->keep_alive ? "Connection: keep-alive\r\n\r\n" : "Connection: close\r\n\r\n";
}

/* The fixture's reply; false when it ends its connection (a binary body: Connection: close). */
static bool reply_fixture(const struct canned_api *s, int fd, const char *name)
{
    char *text = fixture_read(s->dir, name, NULL), *body, *piece, *split, *out, *save = NULL;
    char *binary = NULL, *pieces = NULL;
    int chunked;

    body = strstr(text, "\n\n");
    ck_assert_msg(body != NULL, "%s: no blank line after the headers", name);
    *body = '\0';
    body += 2;
    chunked = strstr(text, "Transfer-Encoding: chunked") != NULL;
    for (char *line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
        if (strncmp(line, "X-Canned-Body: ", 15) == 0) {
            binary = line + 15;
            continue;
        }
        if (strncmp(line, "X-Canned-Split: ", 16) == 0) {
            pieces = line + 16;
            continue;
        }
        send_all(fd, line, strlen(line)); /* the fixture's LF lines go out as CRLF */
        send_all(fd, "\r\n", 2);
    }
    if (binary) {
        send_all(fd, "Transfer-Encoding: chunked\r\nConnection: close\r\n\r\n", 49);
        reply_binary(s, fd, binary, pieces ? strtoul(pieces, NULL, 10) : 0);
        free(text);
        return false;
    }
    if (!chunked) {
        size_t len = strlen(body);

        for (char *p = strstr(body, "<<SPLIT>>"); p; p = strstr(p + 9, "<<SPLIT>>"))
            len -= 9;
        ck_assert(asprintf(&out, "Content-Length: %zu\r\n", len) > 0);
        send_all(fd, out, strlen(out));
        free(out);
    }
    send_all(fd, connection_header(s), strlen(connection_header(s)));
    for (piece = body; piece; piece = split ? split + 9 : NULL) {
        split = strstr(piece, "<<SPLIT>>");
        size_t n = split ? (size_t)(split - piece) : strlen(piece);

        if (chunked && n) {
            ck_assert(asprintf(&out, "%zx\r\n", n) > 0);
            send_all(fd, out, strlen(out));
            free(out);
        }
        send_all(fd, piece, n);
        if (chunked && n)
            send_all(fd, "\r\n", 2);
        if (split)
            pause_ms(20); /* let the client see a separate read */
    }
    if (chunked)
        send_all(fd, "0\r\n\r\n", 5);
    free(text);
    return true;
}

static void reply_not_found(int fd)
{
    char *head;

    ck_assert(asprintf(&head,
                       "HTTP/1.1 404 Not Found\r\nContent-Type: application/json\r\n"
                       "Content-Length: %zu\r\nConnection: close\r\n\r\n",
                       strlen(not_found_body)) > 0);
    send_all(fd, head, strlen(head));
    send_all(fd, not_found_body, strlen(not_found_body));
    free(head);
}

struct connection {
    struct canned_api *s;
    int fd;
};

static bool wait_until(struct canned_api *s, bool (*done)(const struct canned_api *, const void *),
                       const void *arg);

static bool arrived_at_least(const struct canned_api *s, const void *arg)
{
    return s->arrived >= *(const size_t *)arg;
}

/* Keep-alive mode: wait for the client's next request; false when it hung up or on stop. */
static bool next_request_comes(const struct canned_api *s, int fd)
{
    struct pollfd p[2] = {{.fd = fd, .events = POLLIN}, {.fd = s->wake[0], .events = POLLIN}};

    return poll(p, 2, -1) > 0 && !p[1].revents && p[0].revents;
}

/* One request and its reply; false when there was none or the connection ends after it. */
static bool serve_request(struct canned_api *s, int fd)
{
    char *rec = read_request(fd);
    const char *name = NULL;
    bool matched, keep;

    if (!rec)
        return false;
    pthread_mutex_lock(&s->lock);
    name = record_and_pick(s, rec);
    matched = name != NULL;
    keep = s->keep_alive;
    if (s->together > 1) { /* answer the batch this request belongs to all at once */
        size_t goal = (s->arrived + s->together - 1) / s->together * s->together;

        (void)wait_until(s, arrived_at_least, &goal); /* a short batch is answered late */
    }
    pthread_mutex_unlock(&s->lock);
    if (!matched) {
        reply_not_found(fd);
        return false;
    }
    if (strcmp(name, CANNED_HANG) == 0) {
        reply_hang(s, fd);
        return false;
    }
    return reply_fixture(s, fd, name) && keep;
}

static void *serve_connection(void *arg)
{
    struct connection *c = arg;
    struct canned_api *s = c->s;

    while (serve_request(s, c->fd) && next_request_comes(s, c->fd))
        ;
    shutdown(c->fd, SHUT_WR);
    close(c->fd);
    free(c);
    pthread_mutex_lock(&s->lock);
    s->live--;
    pthread_cond_broadcast(&s->changed);
    pthread_mutex_unlock(&s->lock);
    return NULL;
}

static void *accept_loop(void *arg)
{
    struct canned_api *s = arg;
    struct pollfd p[2] = {{.fd = s->lfd, .events = POLLIN}, {.fd = s->wake[0], .events = POLLIN}};

    while (poll(p, 2, -1) >= 0 && !p[1].revents) {
        struct connection *c;
        pthread_attr_t attr;
        pthread_t t;
        int fd = accept(s->lfd, NULL, NULL);

        if (fd < 0)
            continue;
        c = malloc(sizeof(*c));
        ck_assert_ptr_nonnull(c);
        *c = (struct connection){s, fd};
        pthread_mutex_lock(&s->lock);
        s->live++;
        s->connections++;
        pthread_mutex_unlock(&s->lock);
        pthread_attr_init(&attr);
        pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
        ck_assert_int_eq(pthread_create(&t, &attr, serve_connection, c), 0);
        pthread_attr_destroy(&attr);
    }
    return NULL;
}

static void start(struct canned_api *s, const char *dir)
{
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t alen = sizeof(a);
    pthread_condattr_t ca;

    s->dir = dir;
    pthread_mutex_init(&s->lock, NULL);
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&s->changed, &ca);
    pthread_condattr_destroy(&ca);
    ck_assert_int_eq(pipe(s->wake), 0);
    ck_assert_int_eq(pipe(s->release), 0);
    s->lfd = socket(AF_INET, SOCK_STREAM, 0);
    ck_assert_int_ge(s->lfd, 0);
    ck_assert_int_eq(bind(s->lfd, (struct sockaddr *)&a, sizeof(a)), 0);
    ck_assert_int_eq(listen(s->lfd, 128), 0);
    ck_assert_int_eq(getsockname(s->lfd, (struct sockaddr *)&a, &alen), 0);
    s->port = ntohs(a.sin_port);
    ck_assert_int_eq(pthread_create(&s->thread, NULL, accept_loop, s), 0);
}

void canned_api_start(struct canned_api *s, const char *dir, const char *const *script,
                      size_t nscript)
{
    ck_assert_uint_gt(nscript, 0);
    memset(s, 0, sizeof(*s));
    s->script = script;
    s->nscript = nscript;
    start(s, dir);
}

void canned_api_start_routes(struct canned_api *s, const char *dir,
                             const struct canned_route *routes, size_t nroutes)
{
    memset(s, 0, sizeof(*s));
    s->routes = routes;
    s->nroutes = nroutes;
    s->route_next = calloc(nroutes ? nroutes : 1, sizeof(*s->route_next));
    ck_assert_ptr_nonnull(s->route_next);
    start(s, dir);
}

/* One of the server's counts, read under its lock. */
static size_t read_locked(struct canned_api *s, const size_t *count)
{
    size_t n;

    pthread_mutex_lock(&s->lock);
    n = *count;
    pthread_mutex_unlock(&s->lock);
    return n;
}

void canned_api_keep_alive(struct canned_api *s, size_t together)
{
    pthread_mutex_lock(&s->lock);
    s->keep_alive = true;
    s->together = together;
    pthread_mutex_unlock(&s->lock);
}

size_t canned_api_connections(struct canned_api *s)
{
    return read_locked(s, &s->connections);
}

void canned_api_release(struct canned_api *s)
{
    ck_assert_int_eq(write(s->release[1], "x", 1), 1);
}

void canned_api_stop(struct canned_api *s)
{
    ck_assert_int_eq(write(s->wake[1], "x", 1), 1);
    pthread_join(s->thread, NULL);
    close(s->lfd);
    pthread_mutex_lock(&s->lock);
    while (s->live > 0)
        pthread_cond_wait(&s->changed, &s->lock);
    pthread_mutex_unlock(&s->lock);
    close(s->wake[0]);
    close(s->wake[1]);
    close(s->release[0]);
    close(s->release[1]);
    for (size_t i = 0; i < s->nreq; i++)
        free(s->reqs[i]);
    free(s->reqs);
    free(s->route_next);
    pthread_cond_destroy(&s->changed);
    pthread_mutex_destroy(&s->lock);
}

struct kube_client *canned_api_client(const struct canned_api *s,
                                      const struct kube_client_opts *opts)
{
    struct kube_conn conn;
    struct kube_client *c;
    char err[256] = "";

    kube_conn_init(&conn);
    ck_assert(asprintf(&conn.server, "http://127.0.0.1:%d", s->port) > 0);
    conn.token = strdup("t0ken");
    c = kube_client_new(&conn, opts, err, sizeof(err));
    ck_assert_msg(c != NULL, "kube_client_new: %s", err);
    kube_conn_cleanup(&conn);
    return c;
}

/* ---- reading the record -------------------------------------------------------------------- */

size_t canned_api_nreq(struct canned_api *s)
{
    return read_locked(s, &s->nreq);
}

static size_t hits_locked(const struct canned_api *s, const char *method, const char *target)
{
    size_t n = 0;

    for (size_t i = 0; i < s->nreq; i++)
        n += record_matches(s->reqs[i], method, target);
    return n;
}

size_t canned_api_hits(struct canned_api *s, const char *method, const char *target)
{
    size_t n;

    pthread_mutex_lock(&s->lock);
    n = hits_locked(s, method, target);
    pthread_mutex_unlock(&s->lock);
    return n;
}

size_t canned_api_unmatched(struct canned_api *s)
{
    return read_locked(s, &s->unmatched);
}

char *canned_api_request(struct canned_api *s, size_t i)
{
    char *copy = NULL;

    pthread_mutex_lock(&s->lock);
    if (i < s->nreq)
        copy = strdup(s->reqs[i]);
    pthread_mutex_unlock(&s->lock);
    return copy;
}

/* Wait under the lock until done(s) holds; false after CANNED_WAIT_SEC. */
static bool wait_until(struct canned_api *s, bool (*done)(const struct canned_api *, const void *),
                       const void *arg)
{
    struct timespec deadline;
    int rc = 0;

    clock_gettime(CLOCK_MONOTONIC, &deadline);
    deadline.tv_sec += CANNED_WAIT_SEC;
    while (!done(s, arg) && rc != ETIMEDOUT)
        rc = pthread_cond_timedwait(&s->changed, &s->lock, &deadline);
    return done(s, arg);
}

static bool enough_requests(const struct canned_api *s, const void *arg)
{
    return s->nreq >= *(const size_t *)arg;
}

void canned_api_wait_requests(struct canned_api *s, size_t n)
{
    bool ok;
    size_t got;

    pthread_mutex_lock(&s->lock);
    ok = wait_until(s, enough_requests, &n);
    got = s->nreq;
    pthread_mutex_unlock(&s->lock);
    ck_assert_msg(ok, "waited %ds for %zu requests, got %zu", CANNED_WAIT_SEC, n, got);
}

struct hits_wanted {
    const char *method, *target;
    size_t n;
};

static bool enough_hits(const struct canned_api *s, const void *arg)
{
    const struct hits_wanted *w = arg;

    return hits_locked(s, w->method, w->target) >= w->n;
}

void canned_api_wait_hits(struct canned_api *s, const char *method, const char *target, size_t n)
{
    struct hits_wanted w = {method, target, n};
    bool ok;
    size_t got;

    pthread_mutex_lock(&s->lock);
    ok = wait_until(s, enough_hits, &w);
    got = hits_locked(s, method, target);
    pthread_mutex_unlock(&s->lock);
    ck_assert_msg(ok, "waited %ds for %zu requests %s %s, got %zu", CANNED_WAIT_SEC, n, method,
                  target, got);
}

/* ---- comparing with transcripts ------------------------------------------------------------ */

static char *joined(char *const *recs, size_t n)
{
    size_t len = 1;
    char *out;

    for (size_t i = 0; i < n; i++)
        len += strlen(recs[i]);
    out = malloc(len);
    ck_assert_ptr_nonnull(out);
    *out = '\0';
    for (size_t i = 0; i < n; i++)
        strcat(out, recs[i]);
    return out;
}

/*
 * Check carries a failure message of a few KiB at most: the whole of both
 * transcripts goes to stderr, the message says where they part.
 */
static void expect_same(const char *req, const char *how, const char *got, const char *want)
{
    size_t at = 0;

    if (strcmp(got, want) == 0)
        return;
    while (got[at] && got[at] == want[at])
        at++;
    fprintf(stderr, "requests differ from %s%s:\n--- got\n%s--- want\n%s", req, how, got, want);
    ck_abort_msg("requests differ from %s%s at byte %zu:\n--- got\n%.600s\n--- want\n%.600s", req,
                 how, at, got + (at > 200 ? at - 200 : 0), want + (at > 200 ? at - 200 : 0));
}

void canned_api_expect(struct canned_api *s, const char *req, size_t n)
{
    char *want = fixture_read(s->dir, req, NULL), *got;

    canned_api_wait_requests(s, n);
    pthread_mutex_lock(&s->lock);
    got = joined(s->reqs, n);
    pthread_mutex_unlock(&s->lock);
    expect_same(req, "", got, want);
    free(got);
    free(want);
}

static bool starts_record(const char *line)
{
    static const char *const methods[] = {"GET /", "POST /", "PUT /", "PATCH /", "DELETE /"};

    for (size_t i = 0; i < sizeof(methods) / sizeof(methods[0]); i++)
        if (strncmp(line, methods[i], strlen(methods[i])) == 0)
            return true;
    return false;
}

/* A transcript cut into its records (each malloc'd); their count. */
static size_t split_records(const char *text, char ***out)
{
    char **v = NULL;
    size_t n = 0;
    const char *start = text;

    for (const char *p = text; *p;) {
        const char *next = strchr(p, '\n');

        next = next ? next + 1 : p + strlen(p);
        if (*next == '\0' || starts_record(next)) {
            v = realloc(v, (n + 1) * sizeof(*v));
            ck_assert_ptr_nonnull(v);
            v[n++] = strndup(start, (size_t)(next - start));
            start = next;
        }
        p = next;
    }
    *out = v;
    return n;
}

static int by_text(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

void canned_api_expect_unordered(struct canned_api *s, const char *req)
{
    char *text = fixture_read(s->dir, req, NULL), **want, **got, *got_text, *want_text;
    size_t nwant = split_records(text, &want), ngot;

    canned_api_wait_requests(s, nwant);
    pthread_mutex_lock(&s->lock);
    ngot = s->nreq;
    got = malloc((ngot ? ngot : 1) * sizeof(*got));
    ck_assert_ptr_nonnull(got);
    memcpy(got, s->reqs, ngot * sizeof(*got));
    qsort(got, ngot, sizeof(*got), by_text);
    got_text = joined(got, ngot);
    pthread_mutex_unlock(&s->lock);
    qsort(want, nwant, sizeof(*want), by_text);
    want_text = joined(want, nwant);
    expect_same(req, " (both sorted)", got_text, want_text);
    for (size_t i = 0; i < nwant; i++)
        free(want[i]);
    free(want);
    free(got);
    free(got_text);
    free(want_text);
    free(text);
}
