/*
 * kube_watch.c - LIST + WATCH reflector, one thread per resource. With opts.protobuf it asks
 * for protobuf first (Pods and Nodes, proto.c) and reads whichever form the API server answers
 * in, by the reply's Content-Type: a resource it serves only as JSON (a CRD) is read as JSON.
 */
#include "kube.h"

#include <openssl/ssl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base.h"
#include "kube_client_int.h"

#define WATCH_MAX_ITEMS (1u << 20) /* objects in one list, all pages together */
#define WATCH_ERRBODY_MAX (64 << 10)

struct kube_watch {
    struct kube_client *client;
    const struct kube_watch_handler *h;
    void *ctx;
    struct kube_watch_opts opts;
    char *list_path;
    char sep; /* '?' or '&': what joins our query to list_path */
    pthread_t thread;
    CURL *curl;

    pthread_mutex_t lock; /* guards the stop condition variable */
    pthread_cond_t cond;
    atomic_int stopping;
    atomic_int synced;
    atomic_int absent;
    atomic_uint_fast64_t restarts;
    atomic_uint_fast64_t relists;

    /* Watch-thread state. */
    char rv[128]; /* empty: must list */
    unsigned failures;
    unsigned seed;
    struct kube_lines lines;
    struct kube_frames frames; /* the same, for a protobuf watch */
    bool protobuf;             /* the reply under way is protobuf (its Content-Type) */
    bool proto_failed;         /* a protobuf reply did not decode: read JSON from now on */
    atomic_bool reading_protobuf; /* the last 200 reply was protobuf (kube_watch_protobuf) */
    struct kube_buf errbody;
    struct kube_buf listbody; /* one buffer for every page of a list, freed when it ends */
    long status;
    int stream_rc;    /* why we aborted a watch from inside the write callback */
    unsigned nevents; /* lines handled on the current watch */
    bool list_begun;  /* list_begin was called for the list under way */
    char err[512];
};

/* ---- line splitter ------------------------------------------------------------------------- */

void kube__lines_init(struct kube_lines *s, size_t max,
                      int (*on_line)(void *arg, const char *line, size_t len), void *arg)
{
    kube__buf_init(&s->line, max);
    s->on_line = on_line;
    s->arg = arg;
}

void kube__lines_cleanup(struct kube_lines *s)
{
    kube__buf_cleanup(&s->line);
}

int kube__lines_feed(struct kube_lines *s, const char *data, size_t len)
{
    while (len > 0) {
        const char *nl = memchr(data, '\n', len);
        size_t take = nl ? (size_t)(nl - data) : len;
        int rc = kube__buf_add(&s->line, data, take);

        if (rc != EXT_OK)
            return rc;
        data += take;
        len -= take;
        if (!nl)
            break;
        data++; /* the newline */
        len--;
        rc = s->line.len ? s->on_line(s->arg, s->line.data, s->line.len) : EXT_OK;
        kube__buf_reset(&s->line);
        if (rc != EXT_OK)
            return rc;
    }
    return EXT_OK;
}

/* ---- small helpers ------------------------------------------------------------------------- */

static void watch_fail(struct kube_watch *w, int code)
{
    if (w->h->error)
        w->h->error(w->ctx, code, w->err);
}

/* Sleep ms unless stopped first; returns non-zero when stopping. */
static int watch_sleep(struct kube_watch *w, long ms)
{
    struct timespec until;

    ext_deadline_in(&until, ms);
    pthread_mutex_lock(&w->lock);
    while (!atomic_load(&w->stopping))
        if (pthread_cond_timedwait(&w->cond, &w->lock, &until) != 0)
            break;
    pthread_mutex_unlock(&w->lock);
    return atomic_load(&w->stopping);
}

/* Exponential backoff with "equal jitter": half the delay fixed, half random. */
static int watch_backoff(struct kube_watch *w)
{
    long delay = w->opts.backoff_min_ms;

    for (unsigned i = 0; i < w->failures && delay < w->opts.backoff_max_ms; i++)
        delay *= 2;
    if (delay > w->opts.backoff_max_ms)
        delay = w->opts.backoff_max_ms;
    if (w->failures < 64)
        w->failures++;
    delay = delay / 2 + (long)(rand_r(&w->seed) % (unsigned)(delay / 2 + 1));
    return watch_sleep(w, delay);
}

static void query_escape(const char *s, char *out, size_t outlen)
{
    static const char hex[] = "0123456789ABCDEF";
    size_t n = 0;

    for (; *s && n + 4 < outlen; s++) {
        unsigned char ch = (unsigned char)*s;

        if ((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
            strchr("-._~", ch)) {
            out[n++] = (char)ch;
        } else {
            out[n++] = '%';
            out[n++] = hex[ch >> 4];
            out[n++] = hex[ch & 15];
        }
    }
    out[n] = '\0';
}

/* Keep obj's metadata.resourceVersion as the point to resume from. */
static int watch_take_rv(struct kube_watch *w, const cJSON *obj)
{
    const cJSON *meta = cJSON_GetObjectItemCaseSensitive(obj, "metadata");
    const char *rv =
        cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(meta, "resourceVersion"));

    if (!rv || !rv[0])
        return EXT_OK; /* nothing to advance to */
    if (strlen(rv) >= sizeof(w->rv)) {
        snprintf(w->err, sizeof(w->err), "watch %s: resourceVersion over %zu bytes", w->list_path,
                 sizeof(w->rv) - 1);
        return EXT_ETOOBIG;
    }
    strcpy(w->rv, rv);
    return EXT_OK;
}

/* ---- one transfer -------------------------------------------------------------------------- */

/* Once the reply's headers are in: is it protobuf? */
static void reply_form(struct kube_watch *w)
{
    char *ctype = NULL;

    curl_easy_getinfo(w->curl, CURLINFO_CONTENT_TYPE, &ctype);
    w->protobuf = ctype && strncmp(ctype, KUBE_PROTOBUF, strlen(KUBE_PROTOBUF)) == 0;
    if (w->status == 200)
        atomic_store(&w->reading_protobuf, w->protobuf);
}

/* A non-200 reply: its Status (JSON, or protobuf turned into JSON) says why. */
static int watch_status_error(struct kube_watch *w, const char *path, const struct kube_buf *body)
{
    char *text = NULL, why[128];
    cJSON *st = NULL;
    int rc;

    if (w->protobuf && body->len && (st = kube__proto_body(body->data, body->len, why, sizeof(why))))
        text = cJSON_PrintUnformatted(st);
    rc = kube__status_error("GET", path, w->status, text ? text : w->protobuf ? NULL : body->data,
                            text ? strlen(text) : w->protobuf ? 0 : body->len, w->err,
                            sizeof(w->err));
    cJSON_free(text);
    cJSON_Delete(st);
    return rc;
}

static int xferinfo_cb(void *userdata, curl_off_t dltotal, curl_off_t dlnow, curl_off_t ultotal,
                       curl_off_t ulnow)
{
    struct kube_watch *w = userdata;

    return atomic_load(&w->stopping) ? 1 : 0;
}

/*
 * curl asks OpenSSL to free a connection's TLS read buffer each time it is drained
 * (SSL_MODE_RELEASE_BUFFERS), and to allocate it again for the next record: right for a
 * request, but a watch reads all day, a few events at a time, so every read was a 16 KiB
 * malloc and free, and glibc consolidating its heap for each (5% of muster's CPU under a burst
 * of pods). A watch keeps its buffers; they are the connection's, a few dozen KiB for each of
 * the dozen watches. Only with OpenSSL, whose SSL_CTX the callback is given.
 */
static CURLcode keep_tls_buffers(CURL *h, void *ssl_ctx, void *data)
{
    (void)h;
    (void)data;
    SSL_CTX_clear_mode((SSL_CTX *)ssl_ctx, SSL_MODE_RELEASE_BUFFERS);
    return CURLE_OK;
}

static bool tls_is_openssl(void)
{
    const curl_version_info_data *v = curl_version_info(CURLVERSION_NOW);

    return v && v->ssl_version && strncmp(v->ssl_version, "OpenSSL/", 8) == 0;
}

/*
 * GET path on the watch's own handle, so kube_watch_stop() can abort it.
 * The body goes to write_cb; w->status gets the HTTP status.
 */
static int watch_get(struct kube_watch *w, const char *path, curl_write_callback write_cb,
                     void *userdata, long timeout_ms)
{
    char errbuf[CURL_ERROR_SIZE] = "";
    struct curl_slist *headers = NULL;
    char *url = kube__url(w->client, path);
    CURLcode cc;
    int rc;

    w->status = 0;
    w->protobuf = false;
    if (!url) {
        snprintf(w->err, sizeof(w->err), "GET %s: out of memory", path);
        return EXT_ENOMEM;
    }
    rc = kube__headers(w->client, w->opts.protobuf ? KUBE_PROTOBUF ", application/json" : NULL,
                       NULL, &headers, w->err, sizeof(w->err));
    if (rc != EXT_OK)
        goto out;
    curl_easy_reset(w->curl);
    kube__easy_setup(w->client, w->curl);
    if (tls_is_openssl())
        curl_easy_setopt(w->curl, CURLOPT_SSL_CTX_FUNCTION, keep_tls_buffers);
    curl_easy_setopt(w->curl, CURLOPT_URL, url);
    curl_easy_setopt(w->curl, CURLOPT_HTTPHEADER, headers);
    curl_easy_setopt(w->curl, CURLOPT_TIMEOUT_MS, timeout_ms);
    curl_easy_setopt(w->curl, CURLOPT_ERRORBUFFER, errbuf);
    curl_easy_setopt(w->curl, CURLOPT_WRITEFUNCTION, write_cb);
    curl_easy_setopt(w->curl, CURLOPT_WRITEDATA, userdata);
    curl_easy_setopt(w->curl, CURLOPT_NOPROGRESS, 0L);
    curl_easy_setopt(w->curl, CURLOPT_XFERINFOFUNCTION, xferinfo_cb);
    curl_easy_setopt(w->curl, CURLOPT_XFERINFODATA, w);
    cc = curl_easy_perform(w->curl);
    curl_easy_setopt(w->curl, CURLOPT_ERRORBUFFER, NULL);
    curl_easy_getinfo(w->curl, CURLINFO_RESPONSE_CODE, &w->status);
    reply_form(w);
    rc = EXT_OK;
    if (atomic_load(&w->stopping)) {
        rc = EXT_ESTOPPED; /* not counted: not a failure, this muster is stopping */
        goto out;
    }
    kube__count(w->client, w->curl, "GET", path, w->status);
    if (cc != CURLE_OK && cc != CURLE_WRITE_ERROR)
        rc = kube__curl_error("GET", path, cc, errbuf, w->err, sizeof(w->err));
    else if (cc == CURLE_WRITE_ERROR)
        rc = EXT_EIO; /* the write callback says why */
out:
    curl_slist_free_all(headers);
    free(url);
    return rc;
}

/* ---- LIST ---------------------------------------------------------------------------------- */

static size_t list_write_cb(char *ptr, size_t size, size_t nmemb, void *userdata)
{
    return kube__buf_add(userdata, ptr, size * nmemb) == EXT_OK ? size * nmemb : 0;
}

/* A page-wise handler hears of a list once its first page has come. */
static void list_begin(struct kube_watch *w)
{
    if (!w->list_begun && w->h->list_begin)
        w->h->list_begin(w->ctx);
    w->list_begun = true;
}

/* One page: its items appended to all (*nall counts them), *cont set to the next page's token
 * (or ""). */
static int list_page(struct kube_watch *w, const char *cont, cJSON *all, size_t *nall, char *next,
                     size_t nextlen)
{
    char path[4096], esc[1024] = "";
    struct kube_buf *body = &w->listbody;
    cJSON *page = NULL, *items, *item;
    const cJSON *meta;
    int rc;

    if (cont[0])
        query_escape(cont, esc, sizeof(esc));
    snprintf(path, sizeof(path), "%s%climit=%u%s%s", w->list_path, w->sep, w->opts.page_limit,
             cont[0] ? "&continue=" : "", esc);
    /* Kept from page to page: freeing a megabyte every page makes malloc consolidate the
     * page's thousands of small cJSON chunks, and a relist of a big cluster then spends most
     * of its time in malloc. */
    kube__buf_reset(body);
    rc = watch_get(w, path, list_write_cb, body, 30000 + 1000L * w->opts.timeout_seconds);
    if (rc == EXT_EIO && body->overflow) {
        snprintf(w->err, sizeof(w->err), "GET %s: reply over %zu bytes", w->list_path, body->max);
        rc = EXT_ETOOBIG;
    }
    if (rc != EXT_OK)
        goto out;
    if (w->status != 200) {
        rc = watch_status_error(w, path, body);
        goto out;
    }
    if (w->protobuf && body->len) {
        char why[200];

        if (!(page = kube__proto_body(body->data, body->len, why, sizeof(why)))) {
            w->proto_failed = true; /* reflect_once: the list again, in JSON */
            snprintf(w->err, sizeof(w->err), "GET %s: %s", w->list_path, why);
            rc = EXT_EIO;
            goto out;
        }
    } else {
        page = body->len ? cJSON_ParseWithLength(body->data, body->len) : NULL;
    }
    items = cJSON_GetObjectItemCaseSensitive(page, "items");
    if (!cJSON_IsObject(page) || (items && !cJSON_IsArray(items) && !cJSON_IsNull(items))) {
        snprintf(w->err, sizeof(w->err), "GET %s: reply is not a list", w->list_path);
        rc = EXT_EIO;
        goto out;
    }
    if (w->h->list_page && cJSON_IsArray(items)) {
        *nall += (size_t)cJSON_GetArraySize(items);
        if (*nall > WATCH_MAX_ITEMS) {
            snprintf(w->err, sizeof(w->err), "GET %s: over %u items", w->list_path,
                     WATCH_MAX_ITEMS);
            rc = EXT_ETOOBIG;
            goto out;
        }
        list_begin(w);
        w->h->list_page(w->ctx, items);
    }
    /* Counted here, not with cJSON_GetArraySize, which walks the whole list every time. */
    while (!w->h->list_page && cJSON_IsArray(items) &&
           (item = cJSON_DetachItemFromArray(items, 0)) != NULL) {
        if (*nall >= WATCH_MAX_ITEMS) {
            cJSON_Delete(item);
            snprintf(w->err, sizeof(w->err), "GET %s: over %u items", w->list_path,
                     WATCH_MAX_ITEMS);
            rc = EXT_ETOOBIG;
            goto out;
        }
        cJSON_AddItemToArray(all, item);
        (*nall)++;
    }
    meta = cJSON_GetObjectItemCaseSensitive(page, "metadata");
    rc = watch_take_rv(w, page);
    snprintf(next, nextlen, "%s",
             cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(meta, "continue"))
                 ? cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(meta, "continue"))
                 : "");
out:
    cJSON_Delete(page);
    return rc;
}

static int watch_list(struct kube_watch *w)
{
    char cont[1024] = "", next[1024];
    cJSON *all = cJSON_CreateArray();
    size_t nall = 0;
    int rc = EXT_OK;

    if (!all)
        return EXT_ENOMEM;
    w->rv[0] = '\0';
    w->list_begun = false;
    do {
        rc = list_page(w, cont, all, &nall, next, sizeof(next));
        memcpy(cont, next, sizeof(cont));
    } while (rc == EXT_OK && cont[0]);
    if (rc == EXT_OK && !w->rv[0]) {
        snprintf(w->err, sizeof(w->err), "GET %s: list has no resourceVersion", w->list_path);
        rc = EXT_EIO;
    }
    kube__buf_cleanup(&w->listbody);
    if (w->h->list_page && rc == EXT_OK)
        list_begin(w); /* an empty list without items is a list too */
    if (w->h->list_page && w->list_begun && w->h->list_end)
        w->h->list_end(w->ctx, rc == EXT_OK);
    if (rc == EXT_OK) {
        atomic_store(&w->absent, 0);
        if (!w->h->list_page)
            w->h->replace(w->ctx, all);
        atomic_store(&w->synced, 1);
    } else {
        w->rv[0] = '\0';
    }
    cJSON_Delete(all);
    return rc;
}

/* ---- WATCH --------------------------------------------------------------------------------- */

static int watch_error_event(struct kube_watch *w, const cJSON *status)
{
    const cJSON *code = cJSON_GetObjectItemCaseSensitive(status, "code");
    const char *msg = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(status, "message"));

    snprintf(w->err, sizeof(w->err), "watch %s: ERROR event %d: %s", w->list_path,
             cJSON_IsNumber(code) ? code->valueint : 0, msg ? msg : "(no message)");
    return cJSON_IsNumber(code) && code->valueint == 410 ? EXT_EGONE : EXT_EHTTP;
}

/* One event, JSON or protobuf turned into JSON; ev is taken. */
static int watch_event(struct kube_watch *w, cJSON *ev)
{
    static const char *const delivered[] = {"ADDED", "MODIFIED", "DELETED"};
    const char *type = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(ev, "type"));
    const cJSON *obj = cJSON_GetObjectItemCaseSensitive(ev, "object");
    int rc = EXT_OK;

    w->nevents++;
    if (!type || !cJSON_IsObject(obj)) {
        snprintf(w->err, sizeof(w->err), "watch %s: malformed event", w->list_path);
        rc = EXT_EIO;
    } else if (strcmp(type, "ERROR") == 0) {
        rc = watch_error_event(w, obj);
    } else if (strcmp(type, "BOOKMARK") == 0) {
        rc = watch_take_rv(w, obj);
    } else {
        for (size_t i = 0; i < sizeof(delivered) / sizeof(delivered[0]); i++) {
            if (strcmp(type, delivered[i]) != 0)
                continue;
            rc = watch_take_rv(w, obj);
            if (rc == EXT_OK)
                w->h->event(w->ctx, delivered[i], obj);
        }
    }
    cJSON_Delete(ev);
    return rc;
}

static int watch_line(void *arg, const char *line, size_t len)
{
    return watch_event(arg, cJSON_ParseWithLength(line, len));
}

static int watch_frame(void *arg, const void *frame, size_t len)
{
    struct kube_watch *w = arg;
    char why[256];
    cJSON *ev = kube__proto_event(frame, len, why, sizeof(why));

    if (!ev) {
        w->proto_failed = true; /* reflect_once: the watch again from the same version, in JSON */
        snprintf(w->err, sizeof(w->err), "watch %s: %s", w->list_path, why);
        return EXT_EIO;
    }
    return watch_event(w, ev);
}

static size_t watch_write_cb(char *ptr, size_t size, size_t nmemb, void *userdata)
{
    struct kube_watch *w = userdata;
    size_t n = size * nmemb;
    int rc;

    if (!w->status) {
        curl_easy_getinfo(w->curl, CURLINFO_RESPONSE_CODE, &w->status);
        reply_form(w);
    }
    if (w->status != 200) /* a Status to report, not a stream */
        return kube__buf_add(&w->errbody, ptr, n) == EXT_OK ? n : 0;
    rc = w->protobuf ? kube__frames_feed(&w->frames, ptr, n) : kube__lines_feed(&w->lines, ptr, n);
    if (rc == EXT_ETOOBIG)
        snprintf(w->err, sizeof(w->err), "watch %s: event over %zu bytes", w->list_path,
                 w->lines.line.max);
    w->stream_rc = rc;
    return rc == EXT_OK ? n : 0;
}

static int watch_stream(struct kube_watch *w)
{
    char path[4096], rv[400];
    int rc;

    query_escape(w->rv, rv, sizeof(rv));
    snprintf(path, sizeof(path),
             "%s%cwatch=1&resourceVersion=%s&allowWatchBookmarks=true&timeoutSeconds=%u",
             w->list_path, w->sep, rv, w->opts.timeout_seconds);
    kube__buf_reset(&w->lines.line);
    kube__frames_reset(&w->frames);
    kube__buf_reset(&w->errbody);
    w->stream_rc = EXT_OK;
    w->nevents = 0;
    rc = watch_get(w, path, watch_write_cb, w, 60000 + 1000L * w->opts.timeout_seconds);
    if (rc == EXT_ESTOPPED)
        return rc;
    if (w->status != 0 && w->status != 200)
        return watch_status_error(w, path, &w->errbody);
    if (w->stream_rc != EXT_OK)
        return w->stream_rc;
    return rc;
}

/* ---- the reflector loop -------------------------------------------------------------------- */

/*
 * A protobuf reply that did not decode (a field muster's k8s.proto does not expect, a kind it
 * does not read): this watch reads JSON from now on, at once and from where it was (a list is
 * listed again, a watch resumes at the last version it delivered), and says so once.
 */
static bool proto_fallback(struct kube_watch *w, int rc)
{
    size_t n;

    if (!w->proto_failed)
        return false;
    w->proto_failed = false;
    w->opts.protobuf = false;
    atomic_store(&w->reading_protobuf, false);
    atomic_fetch_add(&w->restarts, 1);
    n = strlen(w->err);
    snprintf(w->err + n, sizeof(w->err) - n, "; reading JSON from now on");
    watch_fail(w, rc);
    return true;
}

static void reflect_once(struct kube_watch *w)
{
    int rc;

    if (!w->rv[0]) {
        rc = watch_list(w);
        if (rc != EXT_OK && rc != EXT_ESTOPPED && proto_fallback(w, rc))
            return;
        if (rc == EXT_OK) {
            w->failures = 0;
        } else if (rc == EXT_ENOTFOUND) {
            if (!atomic_exchange(&w->absent, 1) && w->h->absent)
                w->h->absent(w->ctx);
            watch_sleep(w, w->opts.absent_retry_ms);
        } else if (rc != EXT_ESTOPPED) {
            atomic_fetch_add(&w->restarts, 1);
            watch_fail(w, rc);
            watch_backoff(w);
        }
        return;
    }
    rc = watch_stream(w);
    if (rc != EXT_OK && rc != EXT_ESTOPPED && proto_fallback(w, rc))
        return;
    if (rc == EXT_OK) { /* the server ended the watch (timeoutSeconds): resume */
        if (w->nevents)
            w->failures = 0;
        else
            watch_sleep(w, w->opts.backoff_min_ms); /* never spin on empty watches */
    } else if (rc == EXT_EGONE || rc == EXT_ENOTFOUND || rc == EXT_ETOOBIG) {
        /* Too old, gone, or an event we cannot take: only a fresh list recovers. */
        w->rv[0] = '\0';
        atomic_fetch_add(&w->relists, 1);
        watch_fail(w, rc);
    } else if (rc != EXT_ESTOPPED) {
        atomic_fetch_add(&w->restarts, 1);
        watch_fail(w, rc);
        if (w->nevents)
            w->failures = 0;
        watch_backoff(w);
    }
}

static void *watch_main(void *arg)
{
    struct kube_watch *w = arg;

    while (!atomic_load(&w->stopping))
        reflect_once(w);
    return NULL;
}

static void watch_free(struct kube_watch *w)
{
    if (w->curl)
        curl_easy_cleanup(w->curl);
    kube__lines_cleanup(&w->lines);
    kube__frames_cleanup(&w->frames);
    kube__buf_cleanup(&w->errbody);
    kube__buf_cleanup(&w->listbody);
    pthread_cond_destroy(&w->cond);
    pthread_mutex_destroy(&w->lock);
    free(w->list_path);
    free(w);
}

static void opts_defaults(struct kube_watch_opts *o, const struct kube_watch_opts *given)
{
    static const struct kube_watch_opts defaults = {
        .page_limit = 500,
        .timeout_seconds = 300,
        .backoff_min_ms = 200,
        .backoff_max_ms = 10000,
        .absent_retry_ms = 10000,
        .max_event = (size_t)16 << 20,
    };

    *o = given ? *given : defaults;
    if (!o->page_limit)
        o->page_limit = defaults.page_limit;
    if (!o->timeout_seconds)
        o->timeout_seconds = defaults.timeout_seconds;
    if (o->backoff_min_ms <= 0)
        o->backoff_min_ms = defaults.backoff_min_ms;
    if (o->backoff_max_ms < o->backoff_min_ms)
        o->backoff_max_ms = o->backoff_min_ms;
    if (o->absent_retry_ms <= 0)
        o->absent_retry_ms = defaults.absent_retry_ms;
    if (!o->max_event)
        o->max_event = defaults.max_event;
}

struct kube_watch *kube_watch_start(struct kube_client *c, const char *list_path,
                                    const struct kube_watch_handler *h, void *ctx,
                                    const struct kube_watch_opts *opts)
{
    pthread_condattr_t ca;
    struct kube_watch *w;

    if (!c || !list_path || list_path[0] != '/' || !h || (!h->replace && !h->list_page) ||
        !h->event)
        return NULL;
    w = calloc(1, sizeof(*w));
    if (!w)
        return NULL;
    w->client = c;
    w->h = h;
    w->ctx = ctx;
    opts_defaults(&w->opts, opts);
    w->sep = strchr(list_path, '?') ? '&' : '?';
    w->seed = (unsigned)time(NULL) ^ (unsigned)(uintptr_t)w;
    pthread_mutex_init(&w->lock, NULL);
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&w->cond, &ca);
    pthread_condattr_destroy(&ca);
    kube__lines_init(&w->lines, w->opts.max_event, watch_line, w);
    kube__frames_init(&w->frames, w->opts.max_event, watch_frame, w);
    kube__buf_init(&w->errbody, WATCH_ERRBODY_MAX);
    kube__buf_init(&w->listbody, kube__max_reply(c));
    w->list_path = strdup(list_path);
    w->curl = kube__easy_new(c);
    if (!w->list_path || !w->curl || pthread_create(&w->thread, NULL, watch_main, w) != 0) {
        watch_free(w);
        return NULL;
    }
    return w;
}

void kube_watch_stop(struct kube_watch *w)
{
    if (!w)
        return;
    pthread_mutex_lock(&w->lock);
    atomic_store(&w->stopping, 1);
    pthread_cond_broadcast(&w->cond);
    pthread_mutex_unlock(&w->lock);
    pthread_join(w->thread, NULL);
    watch_free(w);
}

int kube_watch_synced(const struct kube_watch *w)
{
    return atomic_load(&((struct kube_watch *)w)->synced);
}

int kube_watch_absent(const struct kube_watch *w)
{
    return atomic_load(&((struct kube_watch *)w)->absent);
}

uint64_t kube_watch_restarts(const struct kube_watch *w)
{
    return atomic_load(&((struct kube_watch *)w)->restarts);
}

bool kube_watch_protobuf(const struct kube_watch *w)
{
    return atomic_load(&((struct kube_watch *)w)->reading_protobuf);
}

uint64_t kube_watch_relists(const struct kube_watch *w)
{
    return atomic_load(&((struct kube_watch *)w)->relists);
}
