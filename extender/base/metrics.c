/* metrics.c - a Prometheus registry rendered in the text exposition format. */
#include "base.h"

#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define METRICS_MAX_LABELS 8
#define METRICS_MAX_BUCKETS 64
#define METRICS_MAX_COLLECTORS 16
#define METRICS_MAX_RENDER ((size_t)64 << 20)

const double ext_metrics_latency_buckets[] = {0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05,
                                              0.1,    0.25,  0.5,    1,     2.5,  5,     10};
const size_t ext_metrics_latency_nbuckets =
    sizeof(ext_metrics_latency_buckets) / sizeof(ext_metrics_latency_buckets[0]);

enum metric_type {
    METRIC_COUNTER,
    METRIC_GAUGE,
    METRIC_HISTOGRAM,
};

static const char *const type_names[] = {"counter", "gauge", "histogram"};

struct ext_series {
    struct ext_series *next;
    struct ext_metric *family;
    char **values;     /* one per label */
    double value;      /* counter, gauge; histogram sum */
    uint64_t count;    /* histogram */
    uint64_t *buckets; /* histogram, per bound, not cumulative */
};

struct ext_metric {
    struct ext_metric *next;
    enum metric_type type;
    char *name;
    char *help;
    size_t nlabels;
    char *labels[METRICS_MAX_LABELS];
    size_t nbounds;
    double *bounds;
    pthread_mutex_t lock; /* the series list and every value in it */
    struct ext_series *series, **tail;
};

struct collector {
    void (*fn)(struct ext_metrics *r, void *ctx);
    void *ctx;
};

struct ext_metrics {
    pthread_mutex_t lock; /* the family list and the collectors */
    struct ext_metric *families, **tail;
    size_t ncollectors;
    struct collector collectors[METRICS_MAX_COLLECTORS];
};

struct ext_metrics *ext_metrics_new(void)
{
    struct ext_metrics *r = calloc(1, sizeof(*r));

    if (r == NULL)
        return NULL;
    pthread_mutex_init(&r->lock, NULL);
    r->tail = &r->families;
    return r;
}

static void series_free(struct ext_series *s, size_t nlabels)
{
    size_t i;

    for (i = 0; i < nlabels; i++)
        free(s->values[i]);
    free(s->values);
    free(s->buckets);
    free(s);
}

static void family_free(struct ext_metric *m)
{
    size_t i;

    ext_metric_clear(m);
    for (i = 0; i < m->nlabels; i++)
        free(m->labels[i]);
    pthread_mutex_destroy(&m->lock);
    free(m->bounds);
    free(m->name);
    free(m->help);
    free(m);
}

void ext_metrics_free(struct ext_metrics *r)
{
    struct ext_metric *m, *next;

    if (r == NULL)
        return;
    for (m = r->families; m != NULL; m = next) {
        next = m->next;
        family_free(m);
    }
    pthread_mutex_destroy(&r->lock);
    free(r);
}

/* Prometheus names: [a-zA-Z_:][a-zA-Z0-9_:]*; labels the same without ':'. */
static bool valid_name(const char *s, size_t len, bool colon)
{
    size_t i;

    if (len == 0)
        return false;
    for (i = 0; i < len; i++) {
        char c = s[i];
        bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' ||
                  (colon && c == ':') || (i > 0 && c >= '0' && c <= '9');

        if (!ok)
            return false;
    }
    return true;
}

/* Split "verb,code" into m->labels. */
static bool parse_labels(struct ext_metric *m, const char *labels)
{
    const char *p = labels != NULL ? labels : "";

    while (*p != '\0') {
        size_t len = strcspn(p, ",");

        if (m->nlabels == METRICS_MAX_LABELS || !valid_name(p, len, false) ||
            (len == 2 && memcmp(p, "le", 2) == 0 && m->type == METRIC_HISTOGRAM))
            return false;
        m->labels[m->nlabels] = strndup(p, len);
        if (m->labels[m->nlabels++] == NULL)
            return false;
        p += len;
        if (*p == ',')
            p++;
    }
    return true;
}

static bool same_shape(const struct ext_metric *a, const struct ext_metric *b)
{
    size_t i;

    if (a->type != b->type || a->nlabels != b->nlabels || a->nbounds != b->nbounds)
        return false;
    for (i = 0; i < a->nlabels; i++)
        if (strcmp(a->labels[i], b->labels[i]) != 0)
            return false;
    for (i = 0; i < a->nbounds; i++)
        if (a->bounds[i] != b->bounds[i])
            return false;
    return true;
}

static bool set_bounds(struct ext_metric *m, const double *bounds, size_t nbounds)
{
    size_t i;

    if (nbounds == 0 || nbounds > METRICS_MAX_BUCKETS)
        return false;
    for (i = 0; i < nbounds; i++)
        if (!isfinite(bounds[i]) || (i > 0 && bounds[i] <= bounds[i - 1]))
            return false;
    m->bounds = malloc(nbounds * sizeof(*bounds));
    if (m->bounds == NULL)
        return false;
    memcpy(m->bounds, bounds, nbounds * sizeof(*bounds));
    m->nbounds = nbounds;
    return true;
}

static struct ext_metric *family_register(struct ext_metrics *r, enum metric_type type,
                                          const char *name, const char *help, const char *labels,
                                          const double *bounds, size_t nbounds)
{
    struct ext_metric *m, *old;

    if (r == NULL || name == NULL || !valid_name(name, strlen(name), true))
        return NULL;
    m = calloc(1, sizeof(*m));
    if (m == NULL)
        return NULL;
    m->type = type;
    pthread_mutex_init(&m->lock, NULL);
    m->tail = &m->series;
    m->name = strdup(name);
    m->help = strdup(help != NULL ? help : "");
    if (m->name == NULL || m->help == NULL || !parse_labels(m, labels) ||
        (type == METRIC_HISTOGRAM && !set_bounds(m, bounds, nbounds)))
        goto out_free;

    pthread_mutex_lock(&r->lock);
    for (old = r->families; old != NULL; old = old->next)
        if (strcmp(old->name, name) == 0)
            break;
    if (old == NULL) {
        *r->tail = m;
        r->tail = &m->next;
    }
    pthread_mutex_unlock(&r->lock);
    if (old == NULL)
        return m;
    /* Already registered: the same family, or a clash. */
    old = same_shape(old, m) ? old : NULL;
    family_free(m);
    return old;

out_free:
    family_free(m);
    return NULL;
}

struct ext_metric *ext_metrics_counter(struct ext_metrics *r, const char *name, const char *help,
                                       const char *labels)
{
    return family_register(r, METRIC_COUNTER, name, help, labels, NULL, 0);
}

struct ext_metric *ext_metrics_gauge(struct ext_metrics *r, const char *name, const char *help,
                                     const char *labels)
{
    return family_register(r, METRIC_GAUGE, name, help, labels, NULL, 0);
}

struct ext_metric *ext_metrics_histogram(struct ext_metrics *r, const char *name, const char *help,
                                         const char *labels, const double *bounds, size_t nbounds)
{
    return family_register(r, METRIC_HISTOGRAM, name, help, labels, bounds, nbounds);
}

static bool series_matches(const struct ext_series *s, const char *const *values, size_t n)
{
    size_t i;

    for (i = 0; i < n; i++)
        if (strcmp(s->values[i], values[i] != NULL ? values[i] : "") != 0)
            return false;
    return true;
}

static struct ext_series *series_new(struct ext_metric *m, const char *const *values)
{
    struct ext_series *s = calloc(1, sizeof(*s));
    size_t i;

    if (s == NULL)
        return NULL;
    s->family = m;
    s->values = calloc(m->nlabels + 1, sizeof(*s->values));
    if (m->type == METRIC_HISTOGRAM)
        s->buckets = calloc(m->nbounds, sizeof(*s->buckets));
    if (s->values == NULL || (m->type == METRIC_HISTOGRAM && s->buckets == NULL))
        goto out_free;
    for (i = 0; i < m->nlabels; i++) {
        s->values[i] = strdup(values[i] != NULL ? values[i] : "");
        if (s->values[i] == NULL)
            goto out_free;
    }
    return s;

out_free:
    series_free(s, m->nlabels);
    return NULL;
}

struct ext_series *ext_metric_with(struct ext_metric *m, const char *const *values)
{
    struct ext_series *s;

    if (m == NULL || (m->nlabels > 0 && values == NULL))
        return NULL;
    pthread_mutex_lock(&m->lock);
    for (s = m->series; s != NULL; s = s->next)
        if (series_matches(s, values, m->nlabels))
            break;
    if (s == NULL) {
        s = series_new(m, values);
        if (s != NULL) {
            *m->tail = s;
            m->tail = &s->next;
        }
    }
    pthread_mutex_unlock(&m->lock);
    return s;
}

void ext_metric_clear(struct ext_metric *m)
{
    struct ext_series *s, *next;

    if (m == NULL)
        return;
    pthread_mutex_lock(&m->lock);
    for (s = m->series; s != NULL; s = next) {
        next = s->next;
        series_free(s, m->nlabels);
    }
    m->series = NULL;
    m->tail = &m->series;
    pthread_mutex_unlock(&m->lock);
}

void ext_series_add(struct ext_series *s, double v)
{
    if (s == NULL || s->family->type == METRIC_HISTOGRAM)
        return;
    if (s->family->type == METRIC_COUNTER && !(v >= 0))
        return;
    pthread_mutex_lock(&s->family->lock);
    s->value += v;
    pthread_mutex_unlock(&s->family->lock);
}

void ext_series_set(struct ext_series *s, double v)
{
    if (s == NULL || s->family->type != METRIC_GAUGE)
        return;
    pthread_mutex_lock(&s->family->lock);
    s->value = v;
    pthread_mutex_unlock(&s->family->lock);
}

void ext_series_observe(struct ext_series *s, double v)
{
    const struct ext_metric *m;
    size_t i;

    if (s == NULL || s->family->type != METRIC_HISTOGRAM || isnan(v))
        return;
    m = s->family;
    for (i = 0; i < m->nbounds && v > m->bounds[i]; i++)
        ;
    pthread_mutex_lock(&s->family->lock);
    if (i < m->nbounds)
        s->buckets[i]++;
    s->count++;
    s->value += v;
    pthread_mutex_unlock(&s->family->lock);
}

double ext_series_value(struct ext_series *s)
{
    double v;

    if (s == NULL)
        return 0;
    pthread_mutex_lock(&s->family->lock);
    v = s->family->type == METRIC_HISTOGRAM ? (double)s->count : s->value;
    pthread_mutex_unlock(&s->family->lock);
    return v;
}

int ext_metrics_on_collect(struct ext_metrics *r, void (*fn)(struct ext_metrics *r, void *ctx),
                           void *ctx)
{
    int rc = EXT_OK;

    pthread_mutex_lock(&r->lock);
    if (r->ncollectors == METRICS_MAX_COLLECTORS)
        rc = EXT_ETOOBIG;
    else
        r->collectors[r->ncollectors++] = (struct collector){fn, ctx};
    pthread_mutex_unlock(&r->lock);
    return rc;
}

/* ---- the text format ---------------------------------------------------------- */

struct sbuf {
    char *buf;
    size_t len, cap;
    int err;
};

static void sb_raw(struct sbuf *b, const char *s, size_t n)
{
    size_t cap;
    char *grown;

    if (b->err != EXT_OK)
        return;
    if (b->len + n + 1 > b->cap) {
        for (cap = b->cap ? b->cap : 4096; cap < b->len + n + 1; cap *= 2)
            ;
        if (cap > METRICS_MAX_RENDER) {
            b->err = EXT_ETOOBIG;
            return;
        }
        grown = realloc(b->buf, cap);
        if (grown == NULL) {
            b->err = EXT_ENOMEM;
            return;
        }
        b->buf = grown;
        b->cap = cap;
    }
    memcpy(b->buf + b->len, s, n);
    b->len += n;
}

static void sb_str(struct sbuf *b, const char *s)
{
    sb_raw(b, s, strlen(s));
}

/* HELP text escapes \ and newline; label values also escape ". */
static void sb_escaped(struct sbuf *b, const char *s, bool quote)
{
    for (; *s != '\0'; s++) {
        if (*s == '\\')
            sb_str(b, "\\\\");
        else if (*s == '\n')
            sb_str(b, "\\n");
        else if (*s == '"' && quote)
            sb_str(b, "\\\"");
        else
            sb_raw(b, s, 1);
    }
}

/* The shortest text that reads back as v; integers without a fraction. */
static void sb_number(struct sbuf *b, double v)
{
    char num[40];
    int prec;

    if (isnan(v)) {
        sb_str(b, "NaN");
        return;
    }
    if (isinf(v)) {
        sb_str(b, v > 0 ? "+Inf" : "-Inf");
        return;
    }
    if (v == floor(v) && fabs(v) < 1e15) {
        snprintf(num, sizeof(num), "%.0f", v);
        sb_str(b, num);
        return;
    }
    for (prec = 1; prec <= 17; prec++) {
        snprintf(num, sizeof(num), "%.*g", prec, v);
        if (strtod(num, NULL) == v)
            break;
    }
    sb_str(b, num);
}

/* name{l1="v1",l2="v2",le="0.5"} with an optional extra label. */
static void sb_sample_name(struct sbuf *b, const struct ext_metric *m, const char *suffix,
                           const struct ext_series *s, const double *le)
{
    size_t i;

    sb_str(b, m->name);
    sb_str(b, suffix);
    if (m->nlabels == 0 && le == NULL)
        return;
    sb_raw(b, "{", 1);
    for (i = 0; i < m->nlabels; i++) {
        if (i > 0)
            sb_raw(b, ",", 1);
        sb_str(b, m->labels[i]);
        sb_str(b, "=\"");
        sb_escaped(b, s->values[i], true);
        sb_raw(b, "\"", 1);
    }
    if (le != NULL) {
        sb_str(b, m->nlabels > 0 ? ",le=\"" : "le=\"");
        sb_number(b, *le);
        sb_raw(b, "\"", 1);
    }
    sb_raw(b, "}", 1);
}

static void sb_sample(struct sbuf *b, const struct ext_metric *m, const char *suffix,
                      const struct ext_series *s, const double *le, double v)
{
    sb_sample_name(b, m, suffix, s, le);
    sb_raw(b, " ", 1);
    sb_number(b, v);
    sb_raw(b, "\n", 1);
}

static void render_histogram(struct sbuf *b, const struct ext_metric *m, const struct ext_series *s)
{
    const double inf = INFINITY;
    uint64_t cumulative = 0;
    size_t i;

    for (i = 0; i < m->nbounds; i++) {
        cumulative += s->buckets[i];
        sb_sample(b, m, "_bucket", s, &m->bounds[i], (double)cumulative);
    }
    sb_sample(b, m, "_bucket", s, &inf, (double)s->count);
    sb_sample(b, m, "_sum", s, NULL, s->value);
    sb_sample(b, m, "_count", s, NULL, (double)s->count);
}

static void render_family(struct sbuf *b, struct ext_metric *m)
{
    struct ext_series *s;

    sb_str(b, "# HELP ");
    sb_str(b, m->name);
    sb_raw(b, " ", 1);
    sb_escaped(b, m->help, false);
    sb_str(b, "\n# TYPE ");
    sb_str(b, m->name);
    sb_raw(b, " ", 1);
    sb_str(b, type_names[m->type]);
    sb_raw(b, "\n", 1);
    pthread_mutex_lock(&m->lock);
    for (s = m->series; s != NULL; s = s->next) {
        if (m->type == METRIC_HISTOGRAM)
            render_histogram(b, m, s);
        else
            sb_sample(b, m, "", s, NULL, s->value);
    }
    pthread_mutex_unlock(&m->lock);
}

int ext_metrics_render(struct ext_metrics *r, char **out, size_t *len)
{
    struct collector collectors[METRICS_MAX_COLLECTORS];
    struct sbuf b = {0};
    struct ext_metric *m;
    size_t i, n;

    pthread_mutex_lock(&r->lock);
    n = r->ncollectors;
    memcpy(collectors, r->collectors, n * sizeof(collectors[0]));
    pthread_mutex_unlock(&r->lock);
    for (i = 0; i < n; i++)
        collectors[i].fn(r, collectors[i].ctx);

    sb_raw(&b, "", 0);
    pthread_mutex_lock(&r->lock);
    for (m = r->families; m != NULL; m = m->next)
        render_family(&b, m);
    pthread_mutex_unlock(&r->lock);
    if (b.err != EXT_OK) {
        free(b.buf);
        return b.err;
    }
    b.buf[b.len] = '\0';
    *out = b.buf;
    *len = b.len;
    return EXT_OK;
}
