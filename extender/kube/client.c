/* kube_client.c - thread-safe requests to the Kubernetes API server. */
#include "kube.h"

#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "base.h"
#include "kube_client_int.h"

#define KUBE_CONNECTIONS_DEFAULT 64 /* requests in flight at once, each on its own connection */
#define KUBE_TOKEN_MAX (64 << 10) /* a JWT is a few KiB */
#define KUBE_TOKEN_REREAD_SEC 60  /* re-read even if the file looks unchanged */
#define KUBE_EVENT_MESSAGE_MAX 1024

#ifndef MUSTER_VERSION
#define MUSTER_VERSION "dev"
#endif

struct kube_token {
    pthread_mutex_t lock;
    char *value; /* current token, or NULL before the first read */
    char *file;  /* NULL for a fixed token */
    struct stat st;
    struct timespec read_at;
};

struct kube_client {
    struct kube_conn conn; /* a deep copy */
    struct kube_client_opts opts;
    char *user_agent;
    struct kube_token token;
    struct ext_metric *requests;    /* NULL: not counted */
    struct ext_metric *connections; /* NULL: not counted */
    pthread_mutex_t pool_lock;
    pthread_cond_t pool_returned; /* a handle came back to the pool */
    CURL **pool;    /* idle handles, each keeping its connection open */
    size_t npool;   /* in pool[] */
    size_t handles; /* made, idle or lent; opts.max_connections at most */
};

static pthread_once_t curl_once = PTHREAD_ONCE_INIT;
static CURLcode curl_init_result;

static void curl_init_once(void)
{
    curl_init_result = curl_global_init(CURL_GLOBAL_DEFAULT);
}

/* ---- bounded buffer ------------------------------------------------------------------------ */

void kube__buf_init(struct kube_buf *b, size_t max)
{
    memset(b, 0, sizeof(*b));
    b->max = max;
}

void kube__buf_cleanup(struct kube_buf *b)
{
    free(b->data);
    kube__buf_init(b, b->max);
}

void kube__buf_reset(struct kube_buf *b)
{
    b->len = 0;
    b->overflow = 0;
    if (b->data)
        b->data[0] = '\0';
}

int kube__buf_add(struct kube_buf *b, const void *data, size_t len)
{
    if (len > b->max - b->len) {
        b->overflow = 1;
        return EXT_ETOOBIG;
    }
    if (b->len + len + 1 > b->alloc) {
        size_t want = b->alloc ? b->alloc : 4096;
        char *p;

        while (want < b->len + len + 1)
            want *= 2;
        p = realloc(b->data, want);
        if (!p)
            return EXT_ENOMEM;
        b->data = p;
        b->alloc = want;
    }
    memcpy(b->data + b->len, data, len);
    b->len += len;
    b->data[b->len] = '\0';
    return EXT_OK;
}

static size_t buf_write_cb(char *ptr, size_t size, size_t nmemb, void *userdata)
{
    struct kube_buf *b = userdata;

    return kube__buf_add(b, ptr, size * nmemb) == EXT_OK ? size * nmemb : 0;
}

/* ---- client -------------------------------------------------------------------------------- */

static int dup_str(char **dst, const char *src)
{
    *dst = NULL;
    if (!src)
        return 0;
    *dst = strdup(src);
    return *dst ? 0 : -1;
}

static int dup_mem(char **dst, const char *src, size_t len)
{
    *dst = NULL;
    if (!src)
        return 0;
    *dst = malloc(len + 1);
    if (!*dst)
        return -1;
    memcpy(*dst, src, len);
    (*dst)[len] = '\0';
    return 0;
}

static int conn_copy(struct kube_conn *dst, const struct kube_conn *src)
{
    int bad = 0;

    kube_conn_init(dst);
    bad |= dup_str(&dst->server, src->server);
    bad |= dup_str(&dst->token, src->token);
    bad |= dup_str(&dst->token_file, src->token_file);
    bad |= dup_str(&dst->ca_file, src->ca_file);
    bad |= dup_mem(&dst->ca_data, src->ca_data, src->ca_len);
    bad |= dup_str(&dst->cert_file, src->cert_file);
    bad |= dup_mem(&dst->cert_data, src->cert_data, src->cert_len);
    bad |= dup_str(&dst->key_file, src->key_file);
    bad |= dup_mem(&dst->key_data, src->key_data, src->key_len);
    bad |= dup_str(&dst->ns, src->ns);
    dst->ca_len = src->ca_len;
    dst->cert_len = src->cert_len;
    dst->key_len = src->key_len;
    dst->insecure = src->insecure;
    return bad ? EXT_ENOMEM : EXT_OK;
}

struct kube_client *kube_client_new(const struct kube_conn *conn,
                                    const struct kube_client_opts *opts, char *err, size_t errlen)
{
    pthread_condattr_t ca;
    struct kube_client *c;

    pthread_once(&curl_once, curl_init_once);
    if (curl_init_result != CURLE_OK) {
        (void)ext_errf(err, errlen, EXT_OK, "curl_global_init: %s",
                       curl_easy_strerror(curl_init_result));
        return NULL;
    }
    if (!conn || !conn->server || !conn->server[0]) {
        (void)ext_errf(err, errlen, EXT_OK, "kube client: no API server URL");
        return NULL;
    }
    c = calloc(1, sizeof(*c));
    if (!c)
        goto nomem;
    if (opts)
        c->opts = *opts;
    if (c->opts.connect_timeout_ms <= 0)
        c->opts.connect_timeout_ms = 5000;
    if (c->opts.timeout_ms <= 0)
        c->opts.timeout_ms = 30000;
    if (c->opts.max_reply == 0)
        c->opts.max_reply = (size_t)64 << 20;
    if (c->opts.max_connections == 0)
        c->opts.max_connections = KUBE_CONNECTIONS_DEFAULT;
    c->user_agent = strdup(opts && opts->user_agent ? opts->user_agent : "muster/" MUSTER_VERSION);
    c->opts.user_agent = NULL;
    pthread_mutex_init(&c->pool_lock, NULL);
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC); /* ext_deadline_in's clock */
    pthread_cond_init(&c->pool_returned, &ca);
    pthread_condattr_destroy(&ca);
    pthread_mutex_init(&c->token.lock, NULL);
    c->pool = calloc(c->opts.max_connections, sizeof(*c->pool));
    if (!c->user_agent || !c->pool || conn_copy(&c->conn, conn) != EXT_OK)
        goto nomem_free;
    if (c->conn.token && !(c->token.value = strdup(c->conn.token)))
        goto nomem_free;
    if (!c->conn.token && c->conn.token_file && !(c->token.file = strdup(c->conn.token_file)))
        goto nomem_free;
    return c;
nomem_free:
    kube_client_free(c);
nomem:
    (void)ext_errf(err, errlen, EXT_OK, "kube client: out of memory");
    return NULL;
}

void kube_client_free(struct kube_client *c)
{
    if (!c)
        return;
    for (size_t i = 0; i < c->npool; i++)
        curl_easy_cleanup(c->pool[i]);
    free(c->pool);
    pthread_cond_destroy(&c->pool_returned);
    pthread_mutex_destroy(&c->pool_lock);
    pthread_mutex_destroy(&c->token.lock);
    free(c->token.value);
    free(c->token.file);
    free(c->user_agent);
    kube_conn_cleanup(&c->conn);
    free(c);
}

const char *kube_client_server(const struct kube_client *c)
{
    return c->conn.server;
}

size_t kube__max_reply(const struct kube_client *c)
{
    return c->opts.max_reply;
}

/* Up to max '/'-separated segments of path before its query, as pointers and lengths. */
static size_t path_segments(const char *path, const char **seg, size_t *len, size_t max)
{
    size_t n = 0;
    const char *p = path;

    while (*p && *p != '?' && n < max) {
        const char *start;

        while (*p == '/')
            p++;
        start = p;
        while (*p && *p != '/' && *p != '?')
            p++;
        if (p > start) {
            seg[n] = start;
            len[n++] = (size_t)(p - start);
        }
    }
    return n;
}

static bool segment_is(const char *seg, size_t len, const char *word)
{
    return strlen(word) == len && strncmp(seg, word, len) == 0;
}

void kube_request_labels(const char *method, const char *path, char *verb, size_t verblen,
                         char *resource, size_t reslen)
{
    const char *seg[8], *query = strchr(path, '?');
    size_t len[8], n = path_segments(path, seg, len, 8), i = 0;
    bool named;

    if (n > 0 && segment_is(seg[0], len[0], "api"))
        i = 2;
    else if (n > 0 && segment_is(seg[0], len[0], "apis"))
        i = 3;
    else
        n = 0;
    if (n >= i + 3 && segment_is(seg[i], len[i], "namespaces"))
        i += 2;
    if (n <= i) {
        snprintf(resource, reslen, "other");
        named = true;
    } else if (n > i + 2) {
        snprintf(resource, reslen, "%.*s/%.*s", (int)len[i], seg[i], (int)len[i + 2], seg[i + 2]);
        named = true;
    } else {
        snprintf(resource, reslen, "%.*s", (int)len[i], seg[i]);
        named = n > i + 1;
    }
    if (strcmp(method, "GET") == 0)
        snprintf(verb, verblen, "%s",
                 named ? "GET"
                 : query && (strstr(query, "watch=1") || strstr(query, "watch=true")) ? "WATCH"
                                                                                       : "LIST");
    else if (strcmp(method, "POST") == 0)
        snprintf(verb, verblen, "CREATE");
    else if (strcmp(method, "PUT") == 0)
        snprintf(verb, verblen, "UPDATE");
    else
        snprintf(verb, verblen, "%s", method);
}

void kube__count(const struct kube_client *c, CURL *h, const char *method, const char *path,
                 long code)
{
    char verb[16], resource[128], status[16];
    long connects = 0;

    if (c->connections && curl_easy_getinfo(h, CURLINFO_NUM_CONNECTS, &connects) == CURLE_OK &&
        connects > 0)
        ext_series_add(ext_metric_with(c->connections, NULL), (double)connects);
    if (!c->requests)
        return;
    kube_request_labels(method, path, verb, sizeof(verb), resource, sizeof(resource));
    if (code > 0)
        snprintf(status, sizeof(status), "%ld", code);
    else
        snprintf(status, sizeof(status), "error");
    ext_series_add(ext_metric_with(c->requests, (const char *[]){verb, resource, status}), 1);
}

void kube_client_count_requests(struct kube_client *c, struct ext_metric *counter)
{
    c->requests = counter;
}

void kube_client_count_connections(struct kube_client *c, struct ext_metric *counter)
{
    c->connections = counter;
}

char *kube__url(const struct kube_client *c, const char *path)
{
    char *url;

    if (asprintf(&url, "%s%s", c->conn.server, path) < 0)
        return NULL;
    return url;
}

static void blob_set(CURL *h, CURLoption opt, const char *data, size_t len)
{
    struct curl_blob blob = {.data = (void *)data, .len = len, .flags = CURL_BLOB_COPY};

    curl_easy_setopt(h, opt, &blob);
}

int kube__easy_setup(struct kube_client *c, CURL *h)
{
    const struct kube_conn *k = &c->conn;

    curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, "http,https");
    curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, c->opts.connect_timeout_ms);
    curl_easy_setopt(h, CURLOPT_USERAGENT, c->user_agent);
    curl_easy_setopt(h, CURLOPT_TCP_KEEPALIVE, 1L);
    curl_easy_setopt(h, CURLOPT_TCP_KEEPIDLE, 30L);
    curl_easy_setopt(h, CURLOPT_TCP_KEEPINTVL, 10L);
    if (k->ca_data)
        blob_set(h, CURLOPT_CAINFO_BLOB, k->ca_data, k->ca_len);
    else if (k->ca_file)
        curl_easy_setopt(h, CURLOPT_CAINFO, k->ca_file);
    if (k->insecure) {
        curl_easy_setopt(h, CURLOPT_SSL_VERIFYPEER, 0L);
        curl_easy_setopt(h, CURLOPT_SSL_VERIFYHOST, 0L);
    }
    if (k->cert_data)
        blob_set(h, CURLOPT_SSLCERT_BLOB, k->cert_data, k->cert_len);
    else if (k->cert_file)
        curl_easy_setopt(h, CURLOPT_SSLCERT, k->cert_file);
    if (k->key_data)
        blob_set(h, CURLOPT_SSLKEY_BLOB, k->key_data, k->key_len);
    else if (k->key_file)
        curl_easy_setopt(h, CURLOPT_SSLKEY, k->key_file);
    if (k->cert_data || k->cert_file)
        curl_easy_setopt(h, CURLOPT_SSLCERTTYPE, "PEM");
    return EXT_OK;
}

CURL *kube__easy_new(struct kube_client *c)
{
    CURL *h = curl_easy_init();

    if (h)
        kube__easy_setup(c, h);
    return h;
}

/*
 * A handle for one request: an idle one with its open connection, else a new one while fewer
 * than opts.max_connections exist, else wait for one to come back, until the request's own
 * timeout (EXT_ETIMEOUT; *waited_ms says how long it waited either way). So the client never
 * holds more connections than that, and keeps every one it opened: a burst of requests does
 * not close connections the next burst opens again, each a TLS handshake on both sides. No
 * caller holds a handle while it waits for another, so the wait ends when a request does.
 */
static int pool_get(struct kube_client *c, CURL **out, int64_t *waited_ms)
{
    int64_t start = ext_now_ms();
    struct timespec deadline;
    CURL *h = NULL;
    int rc = 0;

    ext_deadline_in(&deadline, c->opts.timeout_ms);
    pthread_mutex_lock(&c->pool_lock);
    while (c->npool == 0 && c->handles >= c->opts.max_connections && rc != ETIMEDOUT)
        rc = pthread_cond_timedwait(&c->pool_returned, &c->pool_lock, &deadline);
    if (c->npool > 0)
        h = c->pool[--c->npool];
    else if (c->handles < c->opts.max_connections)
        c->handles++; /* made below */
    else
        rc = ETIMEDOUT;
    pthread_mutex_unlock(&c->pool_lock);
    *waited_ms = ext_now_ms() - start;
    *out = NULL;
    if (!h && rc == ETIMEDOUT)
        return EXT_ETIMEOUT;
    if (h) {
        curl_easy_reset(h); /* keeps its connections, drops the last request's options */
        kube__easy_setup(c, h);
    } else if (!(h = kube__easy_new(c))) {
        pthread_mutex_lock(&c->pool_lock);
        c->handles--;
        pthread_cond_signal(&c->pool_returned);
        pthread_mutex_unlock(&c->pool_lock);
        return EXT_ENOMEM;
    }
    *out = h;
    return EXT_OK;
}

static void pool_put(struct kube_client *c, CURL *h)
{
    pthread_mutex_lock(&c->pool_lock);
    c->pool[c->npool++] = h; /* room for every handle made */
    pthread_cond_signal(&c->pool_returned);
    pthread_mutex_unlock(&c->pool_lock);
}

/* ---- bearer token -------------------------------------------------------------------------- */

static int token_file_changed(const struct kube_token *t, const struct stat *st)
{
    struct timespec now;

    clock_gettime(CLOCK_MONOTONIC, &now);
    return st->st_ino != t->st.st_ino || st->st_dev != t->st.st_dev ||
           st->st_size != t->st.st_size || st->st_mtim.tv_sec != t->st.st_mtim.tv_sec ||
           st->st_mtim.tv_nsec != t->st.st_mtim.tv_nsec ||
           now.tv_sec - t->read_at.tv_sec >= KUBE_TOKEN_REREAD_SEC;
}

static int token_read(struct kube_token *t, const struct stat *st, char *err, size_t errlen)
{
    FILE *f = fopen(t->file, "rb");
    char *buf;
    size_t n;

    if (!f) {
        return ext_errf(err, errlen, EXT_EIO, "token file %s: cannot open", t->file);
    }
    buf = malloc(KUBE_TOKEN_MAX + 1);
    if (!buf) {
        fclose(f);
        return EXT_ENOMEM;
    }
    n = fread(buf, 1, KUBE_TOKEN_MAX, f);
    fclose(f);
    while (n && strchr(" \t\r\n", buf[n - 1]))
        n--;
    buf[n] = '\0';
    if (n == 0 || strpbrk(buf, "\r\n")) {
        free(buf);
        return ext_errf(err, errlen, EXT_EINVAL, "token file %s: empty or not one line", t->file);
    }
    free(t->value);
    t->value = buf;
    t->st = *st;
    clock_gettime(CLOCK_MONOTONIC, &t->read_at);
    return EXT_OK;
}

/* "Authorization: Bearer ..." into *hdr (caller frees), or *hdr = NULL without a token. */
static int token_header(struct kube_client *c, char **hdr, char *err, size_t errlen)
{
    struct kube_token *t = &c->token;
    struct stat st;
    int rc = EXT_OK;

    *hdr = NULL;
    pthread_mutex_lock(&t->lock);
    if (t->file) {
        if (stat(t->file, &st) != 0) {
            if (!t->value) {
                (void)ext_errf(err, errlen, EXT_OK, "token file %s: cannot stat", t->file);
                rc = EXT_EIO;
            } /* else keep the token we have: the file may be mid-rotation */
        } else if (!t->value || token_file_changed(t, &st)) {
            rc = token_read(t, &st, err, errlen);
            if (rc != EXT_OK && t->value)
                rc = EXT_OK;
        }
    }
    if (rc == EXT_OK && t->value && asprintf(hdr, "Authorization: Bearer %s", t->value) < 0) {
        *hdr = NULL;
        rc = EXT_ENOMEM;
    }
    pthread_mutex_unlock(&t->lock);
    return rc;
}

int kube__headers(struct kube_client *c, const char *accept, const char *content_type,
                  struct curl_slist **out, char *err, size_t errlen)
{
    struct curl_slist *list = NULL, *l;
    char *auth = NULL, *ctype = NULL, *acc = NULL;
    int rc = token_header(c, &auth, err, errlen);

    if (rc != EXT_OK)
        return rc;
    if (content_type && asprintf(&ctype, "Content-Type: %s", content_type) < 0) {
        ctype = NULL;
        rc = EXT_ENOMEM;
        goto out;
    }
    rc = EXT_ENOMEM;
    if (asprintf(&acc, "Accept: %s", accept ? accept : "application/json") < 0) {
        acc = NULL;
        goto out;
    }
    if (!(l = curl_slist_append(list, acc)))
        goto out;
    list = l;
    if (!(l = curl_slist_append(list, "Expect:"))) /* no 100-continue round trip */
        goto out;
    list = l;
    if (auth && !(l = curl_slist_append(list, auth)))
        goto out;
    list = l;
    if (ctype && !(l = curl_slist_append(list, ctype)))
        goto out;
    list = l;
    *out = list;
    list = NULL;
    rc = EXT_OK;
out:
    curl_slist_free_all(list);
    free(auth);
    free(ctype);
    free(acc);
    if (rc == EXT_ENOMEM)
        (void)ext_errf(err, errlen, EXT_OK, "kube request: out of memory");
    return rc;
}

/* ---- errors -------------------------------------------------------------------------------- */

static const struct {
    long status;
    int code;
} status_codes[] = {
    {404, EXT_ENOTFOUND},
    {409, EXT_ECONFLICT},
    {410, EXT_EGONE},
};

int kube__status_error(const char *method, const char *path, long status, const char *body,
                       size_t len, char *err, size_t errlen)
{
    cJSON *st = body && len ? cJSON_ParseWithLength(body, len) : NULL;
    const char *msg = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(st, "message"));
    const char *reason = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(st, "reason"));
    int code = EXT_EHTTP;

    for (size_t i = 0; i < sizeof(status_codes) / sizeof(status_codes[0]); i++)
        if (status_codes[i].status == status)
            code = status_codes[i].code;
    (void)ext_errf(err, errlen, EXT_OK, "%s %s: HTTP %ld%s%s: %s", method, path, status,
                   reason ? " " : "", reason ? reason : "", msg ? msg : "(no Status message)");
    cJSON_Delete(st);
    return code;
}

int kube__curl_error(const char *method, const char *path, CURLcode cc, const char *errbuf,
                     char *err, size_t errlen)
{
    int code = EXT_EIO;

    if (cc == CURLE_OPERATION_TIMEDOUT)
        code = EXT_ETIMEOUT;
    else if (cc == CURLE_ABORTED_BY_CALLBACK)
        code = EXT_ESTOPPED;
    return ext_errf(err, errlen, code, "%s %s: %s", method, path,
                    errbuf && errbuf[0] ? errbuf : curl_easy_strerror(cc));
}

/* ---- requests ------------------------------------------------------------------------------ */

static void set_method(CURL *h, const char *method, const char *body)
{
    if (strcmp(method, "GET") == 0) {
        curl_easy_setopt(h, CURLOPT_HTTPGET, 1L);
        return;
    }
    if (strcmp(method, "POST") != 0)
        curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, method);
    if (body || strcmp(method, "POST") == 0) {
        curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)(body ? strlen(body) : 0));
        curl_easy_setopt(h, CURLOPT_POSTFIELDS, body ? body : "");
    }
}

static int reply_parse(const char *method, const char *path, const struct kube_buf *b,
                       cJSON **reply, char *err, size_t errlen)
{
    cJSON *json;

    if (!reply)
        return EXT_OK;
    if (b->len == 0) {
        *reply = NULL;
        return EXT_OK;
    }
    json = cJSON_ParseWithLength(b->data, b->len);
    if (!json) {
        return ext_errf(err, errlen, EXT_EPROTO, "%s %s: reply is not JSON", method, path);
    }
    *reply = json;
    return EXT_OK;
}

int kube_request(struct kube_client *c, const char *method, const char *path,
                 const char *content_type, const char *body, long *status, cJSON **reply, char *err,
                 size_t errlen)
{
    char errbuf[CURL_ERROR_SIZE] = "";
    struct curl_slist *headers = NULL;
    struct kube_buf buf;
    char *url = NULL;
    int64_t waited = 0;
    long code = 0;
    CURLcode cc;
    CURL *h = NULL;
    int result;

    if (!path || path[0] != '/') {
        return ext_errf(err, errlen, EXT_EINVAL, "%s %s: path must start with /", method,
                        path ? path : "(null)");
    }
    if (body && !content_type)
        content_type = "application/json";
    kube__buf_init(&buf, c->opts.max_reply);
    result = kube__headers(c, NULL, body ? content_type : NULL, &headers, err, errlen);
    if (result != EXT_OK)
        return result;
    result = EXT_ENOMEM;
    url = kube__url(c, path);
    if (!url) {
        (void)ext_errf(err, errlen, EXT_OK, "%s %s: out of memory", method, path);
        goto out;
    }
    result = pool_get(c, &h, &waited);
    if (result == EXT_ETIMEOUT) {
        (void)ext_errf(err, errlen, EXT_OK,
                       "%s %s: all %zu connections to the API server stayed busy for %ld ms",
                       method, path, c->opts.max_connections, c->opts.timeout_ms);
        goto out;
    }
    if (result != EXT_OK) {
        (void)ext_errf(err, errlen, EXT_OK, "%s %s: out of memory", method, path);
        goto out;
    }
    curl_easy_setopt(h, CURLOPT_URL, url);
    curl_easy_setopt(h, CURLOPT_HTTPHEADER, headers);
    /* The wait for a connection is part of the request's time. */
    curl_easy_setopt(h, CURLOPT_TIMEOUT_MS,
                     c->opts.timeout_ms - waited > 1 ? c->opts.timeout_ms - waited : 1L);
    curl_easy_setopt(h, CURLOPT_ERRORBUFFER, errbuf);
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, buf_write_cb);
    curl_easy_setopt(h, CURLOPT_WRITEDATA, &buf);
    set_method(h, method, body);
    cc = curl_easy_perform(h);
    curl_easy_setopt(h, CURLOPT_ERRORBUFFER, NULL);
    curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &code); /* 0 without a response */
    kube__count(c, h, method, path, code);
    if (cc == CURLE_WRITE_ERROR && buf.overflow) {
        (void)ext_errf(err, errlen, EXT_OK, "%s %s: reply over %zu bytes", method, path, buf.max);
        result = EXT_ETOOBIG;
        goto out;
    }
    if (cc != CURLE_OK) {
        result = kube__curl_error(method, path, cc, errbuf, err, errlen);
        goto out;
    }
    if (status)
        *status = code;
    if (code < 200 || code > 299)
        result = kube__status_error(method, path, code, buf.data, buf.len, err, errlen);
    else
        result = reply_parse(method, path, &buf, reply, err, errlen);
out:
    if (h)
        pool_put(c, h);
    curl_slist_free_all(headers);
    free(url);
    kube__buf_cleanup(&buf);
    return result;
}

/* ---- helpers ------------------------------------------------------------------------------- */

int kube_name_valid(const char *name)
{
    size_t n = name ? strlen(name) : 0;

    if (n == 0 || n > 253)
        return 0;
    return strspn(name, "abcdefghijklmnopqrstuvwxyz0123456789.-") == n && name[0] != '.';
}

/* Serialise obj and send it; the common tail of every JSON-bodied helper. */
static int request_json(struct kube_client *c, const char *method, const char *path,
                        const char *content_type, const cJSON *obj, cJSON **reply, char *err,
                        size_t errlen)
{
    char *body = cJSON_PrintUnformatted(obj);
    int rc;

    if (!body) {
        return ext_errf(err, errlen, EXT_ENOMEM, "%s %s: out of memory", method, path);
    }
    rc = kube_request(c, method, path, content_type, body, NULL, reply, err, errlen);
    free(body);
    return rc;
}

static int names_valid(const char *ns, const char *name, char *err, size_t errlen)
{
    if (kube_name_valid(ns) && kube_name_valid(name))
        return EXT_OK;
    return ext_errf(err, errlen, EXT_EINVAL, "invalid namespace/name \"%s/%s\"", ns ? ns : "",
                    name ? name : "");
}

int kube_post_binding(struct kube_client *c, const char *ns, const char *name, const char *uid,
                      const char *node, const cJSON *annotations, char *err, size_t errlen)
{
    cJSON *b = NULL, *meta, *target;
    char path[600];
    int rc = names_valid(ns, name, err, errlen);

    if (rc == EXT_OK && (!node || !node[0])) {
        (void)ext_errf(err, errlen, EXT_OK, "binding %s/%s: no node", ns, name);
        rc = EXT_EINVAL;
    }
    if (rc != EXT_OK)
        return rc;
    b = cJSON_CreateObject();
    if (!b) {
        return ext_errf(err, errlen, EXT_ENOMEM, "binding %s/%s: out of memory", ns, name);
    }
    cJSON_AddStringToObject(b, "apiVersion", "v1");
    cJSON_AddStringToObject(b, "kind", "Binding");
    meta = cJSON_AddObjectToObject(b, "metadata");
    cJSON_AddStringToObject(meta, "name", name);
    cJSON_AddStringToObject(meta, "namespace", ns);
    if (uid && uid[0])
        cJSON_AddStringToObject(meta, "uid", uid);
    if (annotations && !cJSON_AddItemReferenceToObject(meta, "annotations", (cJSON *)annotations)) {
        cJSON_Delete(b);
        return ext_errf(err, errlen, EXT_ENOMEM, "binding %s/%s: out of memory", ns, name);
    }
    target = cJSON_AddObjectToObject(b, "target");
    cJSON_AddStringToObject(target, "apiVersion", "v1");
    cJSON_AddStringToObject(target, "kind", "Node");
    cJSON_AddStringToObject(target, "name", node);
    snprintf(path, sizeof(path), "/api/v1/namespaces/%s/pods/%s/binding", ns, name);
    rc = request_json(c, "POST", path, "application/json", b, NULL, err, errlen);
    cJSON_Delete(b);
    return rc;
}

int kube_patch_merge(struct kube_client *c, const char *path, const cJSON *patch, cJSON **reply,
                     char *err, size_t errlen)
{
    return request_json(c, "PATCH", path, "application/merge-patch+json", patch, reply, err,
                        errlen);
}

int kube_patch_status(struct kube_client *c, const char *object_path, const cJSON *patch,
                      cJSON **reply, char *err, size_t errlen)
{
    char *path;
    int rc;

    if (asprintf(&path, "%s/status", object_path) < 0) {
        return ext_errf(err, errlen, EXT_ENOMEM, "PATCH %s/status: out of memory", object_path);
    }
    rc = kube_patch_merge(c, path, patch, reply, err, errlen);
    free(path);
    return rc;
}

int kube_create(struct kube_client *c, const char *collection_path, const cJSON *obj, cJSON **reply,
                char *err, size_t errlen)
{
    return request_json(c, "POST", collection_path, "application/json", obj, reply, err, errlen);
}

int kube_delete(struct kube_client *c, const char *path, char *err, size_t errlen)
{
    return kube_request(c, "DELETE", path, NULL, NULL, NULL, NULL, err, errlen);
}

static void event_now(char *now, size_t nlen, char *micro, size_t mlen)
{
    struct timespec ts;
    struct tm tm;

    clock_gettime(CLOCK_REALTIME, &ts);
    gmtime_r(&ts.tv_sec, &tm);
    strftime(now, nlen, "%Y-%m-%dT%H:%M:%SZ", &tm);
    /* eventTime, a MicroTime: Events posted within one second keep their order (lastTimestamp
     * has whole seconds only). The API server then wants reportingInstance and action too. */
    strftime(micro, mlen, "%Y-%m-%dT%H:%M:%S", &tm);
    snprintf(micro + strlen(micro), mlen - strlen(micro), ".%06ldZ", (long)(ts.tv_nsec / 1000));
}

static cJSON *event_new(const struct kube_event *e)
{
    const char *ns = e->ns, *pod_name = e->pod, *pod_uid = e->pod_uid, *reason = e->reason;
    const char *message = e->message, *type = e->type;
    char now[32], micro[40], gen[300], msg[KUBE_EVENT_MESSAGE_MAX + 1], host[65] = "";
    cJSON *ev = cJSON_CreateObject(), *meta, *obj, *src;

    if (!ev)
        return NULL;
    event_now(now, sizeof(now), micro, sizeof(micro));
    if (gethostname(host, sizeof(host) - 1) != 0 || host[0] == '\0')
        snprintf(host, sizeof(host), "muster");
    snprintf(gen, sizeof(gen), "%s.", pod_name);
    snprintf(msg, sizeof(msg), "%s", message ? message : "");
    cJSON_AddStringToObject(ev, "apiVersion", "v1");
    cJSON_AddStringToObject(ev, "kind", "Event");
    meta = cJSON_AddObjectToObject(ev, "metadata");
    if (e->name)
        cJSON_AddStringToObject(meta, "name", e->name);
    else
        cJSON_AddStringToObject(meta, "generateName", gen);
    cJSON_AddStringToObject(meta, "namespace", ns);
    if (e->gang_id)
        cJSON_AddStringToObject(cJSON_AddObjectToObject(meta, "labels"), KUBE_EVENT_GANG_LABEL,
                                e->gang_id);
    obj = cJSON_AddObjectToObject(ev, "involvedObject");
    cJSON_AddStringToObject(obj, "apiVersion", "v1");
    cJSON_AddStringToObject(obj, "kind", "Pod");
    cJSON_AddStringToObject(obj, "namespace", ns);
    cJSON_AddStringToObject(obj, "name", pod_name);
    if (pod_uid && pod_uid[0])
        cJSON_AddStringToObject(obj, "uid", pod_uid);
    cJSON_AddStringToObject(ev, "reason", reason);
    cJSON_AddStringToObject(ev, "message", msg);
    cJSON_AddStringToObject(ev, "type", type && type[0] ? type : "Normal");
    src = cJSON_AddObjectToObject(ev, "source");
    cJSON_AddStringToObject(src, "component", KUBE_EVENT_COMPONENT);
    cJSON_AddStringToObject(ev, "reportingComponent", KUBE_EVENT_COMPONENT);
    cJSON_AddStringToObject(ev, "reportingInstance", host);
    cJSON_AddStringToObject(ev, "action", "Scheduling");
    cJSON_AddStringToObject(ev, "eventTime", micro);
    cJSON_AddStringToObject(ev, "firstTimestamp", now);
    cJSON_AddStringToObject(ev, "lastTimestamp", now);
    cJSON_AddNumberToObject(ev, "count", 1);
    return ev;
}

int kube_event_post(struct kube_client *c, const struct kube_event *e, char *err, size_t errlen)
{
    char path[300];
    cJSON *ev;
    int rc = names_valid(e->ns, e->pod, err, errlen);

    if (rc == EXT_OK && e->name && !kube_name_valid(e->name))
        rc = ext_errf(err, errlen, EXT_EINVAL, "event for %s/%s: invalid name \"%s\"", e->ns,
                      e->pod, e->name);
    if (rc != EXT_OK)
        return rc;
    if (!e->reason || !e->reason[0]) {
        return ext_errf(err, errlen, EXT_EINVAL, "event for %s/%s: no reason", e->ns, e->pod);
    }
    ev = event_new(e);
    if (!ev) {
        return ext_errf(err, errlen, EXT_ENOMEM, "event for %s/%s: out of memory", e->ns, e->pod);
    }
    snprintf(path, sizeof(path), "/api/v1/namespaces/%s/events", e->ns);
    rc = request_json(c, "POST", path, "application/json", ev, NULL, err, errlen);
    cJSON_Delete(ev);
    return rc;
}

int kube_event_create(struct kube_client *c, const char *ns, const char *pod_name,
                      const char *pod_uid, const char *reason, const char *message,
                      const char *type, char *err, size_t errlen)
{
    struct kube_event e = {.ns = ns, .pod = pod_name, .pod_uid = pod_uid, .reason = reason,
                           .message = message, .type = type};

    return kube_event_post(c, &e, err, errlen);
}

int kube_event_repeat(struct kube_client *c, const char *ns, const char *name,
                      const char *message, int32_t count, char *err, size_t errlen)
{
    char now[32], micro[40], path[600], msg[KUBE_EVENT_MESSAGE_MAX + 1];
    cJSON *patch;
    int rc = names_valid(ns, name, err, errlen);

    if (rc != EXT_OK)
        return rc;
    patch = cJSON_CreateObject();
    if (!patch)
        return ext_errf(err, errlen, EXT_ENOMEM, "event %s/%s: out of memory", ns, name);
    event_now(now, sizeof(now), micro, sizeof(micro));
    snprintf(msg, sizeof(msg), "%s", message ? message : "");
    cJSON_AddStringToObject(patch, "message", msg);
    cJSON_AddStringToObject(patch, "lastTimestamp", now);
    if (count > 0)
        cJSON_AddNumberToObject(patch, "count", count);
    snprintf(path, sizeof(path), "/api/v1/namespaces/%s/events/%s", ns, name);
    rc = kube_patch_merge(c, path, patch, NULL, err, errlen);
    cJSON_Delete(patch);
    return rc;
}

int kube_event_delete(struct kube_client *c, const char *ns, const char *name, char *err,
                      size_t errlen)
{
    char path[600];
    int rc;

    if (!kube_name_valid(ns) || !kube_name_valid(name))
        return ext_errf(err, errlen, EXT_EINVAL, "deleting Event \"%s/%s\": bad name",
                        ns ? ns : "", name ? name : "");
    snprintf(path, sizeof(path), "/api/v1/namespaces/%s/events/%s", ns, name);
    rc = kube_delete(c, path, err, errlen);
    return rc == EXT_ENOTFOUND ? EXT_OK : rc;
}

int kube_events_withdraw(struct kube_client *c, const char *ns, const char *gang_id,
                         const char *reason, char *err, size_t errlen)
{
    char path[600];

    if (!kube_name_valid(ns) || !gang_id || !gang_id[0] || strspn(gang_id, "0123456789abcdef") !=
                                                                 strlen(gang_id) ||
        !reason || strspn(reason, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz") !=
                       strlen(reason))
        return ext_errf(err, errlen, EXT_EINVAL, "withdrawing Events in \"%s\": bad selector",
                        ns ? ns : "");
    /* One deletecollection: the label says which gang, the fields that muster wrote it. */
    snprintf(path, sizeof(path),
             "/api/v1/namespaces/%s/events?labelSelector=%s%%3D%s"
             "&fieldSelector=reason%%3D%s%%2Csource%%3D%s",
             ns, KUBE_EVENT_GANG_LABEL_Q, gang_id, reason, KUBE_EVENT_COMPONENT);
    return kube_delete(c, path, err, errlen);
}
