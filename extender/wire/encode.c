/* encode.c - kube-scheduler's replies, written straight into a capped buffer. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "wire.h"

/* Replies are bounded by what came in; this cap only stops a runaway. */
#define EXT_PROTO_MAX_REPLY ((size_t)512 << 20)

/* A growable output buffer with a hard cap; the first failure sticks. */
struct jw {
    char *buf;
    size_t len, cap, max;
    int err;
};

static void jw_init(struct jw *w, size_t hint)
{
    w->max = EXT_PROTO_MAX_REPLY;
    w->cap = hint < 64 ? 64 : hint;
    w->len = 0;
    w->buf = malloc(w->cap);
    w->err = w->buf != NULL ? EXT_OK : EXT_ENOMEM;
}

static bool jw_reserve(struct jw *w, size_t more)
{
    size_t need, cap;
    char *grown;

    if (w->err != EXT_OK)
        return false;
    need = w->len + more + 1;
    if (need <= w->cap)
        return true;
    if (need > w->max || need < w->len) {
        w->err = EXT_ETOOBIG;
        return false;
    }
    for (cap = w->cap; cap < need; cap *= 2)
        ;
    if (cap > w->max)
        cap = w->max;
    grown = realloc(w->buf, cap);
    if (grown == NULL) {
        w->err = EXT_ENOMEM;
        return false;
    }
    w->buf = grown;
    w->cap = cap;
    return true;
}

static void jw_raw(struct jw *w, const char *s, size_t n)
{
    if (!jw_reserve(w, n))
        return;
    memcpy(w->buf + w->len, s, n);
    w->len += n;
}

static void jw_lit(struct jw *w, const char *s)
{
    jw_raw(w, s, strlen(s));
}

static void jw_int(struct jw *w, int64_t v)
{
    char num[24];
    int n = snprintf(num, sizeof(num), "%lld", (long long)v);

    jw_raw(w, num, (size_t)n);
}

/* A JSON string literal; bytes >= 0x80 pass through as UTF-8. */
static void jw_str(struct jw *w, const char *s)
{
    static const char hex[] = "0123456789abcdef";
    const unsigned char *p = (const unsigned char *)(s != NULL ? s : "");
    const unsigned char *run = p;
    size_t plain = 0;

    /* Most strings (node names) need no escape: one copy. */
    while (p[plain] >= 0x20 && p[plain] != '"' && p[plain] != '\\')
        plain++;
    if (p[plain] == '\0') {
        if (jw_reserve(w, plain + 2)) {
            w->buf[w->len] = '"';
            memcpy(w->buf + w->len + 1, p, plain);
            w->buf[w->len + plain + 1] = '"';
            w->len += plain + 2;
        }
        return;
    }
    jw_raw(w, "\"", 1);
    for (; *p != '\0'; p++) {
        char esc[6] = {'\\', 0, 0, 0, 0, 0};
        size_t elen = 2;

        if (*p >= 0x20 && *p != '"' && *p != '\\')
            continue;
        jw_raw(w, (const char *)run, (size_t)(p - run));
        run = p + 1;
        switch (*p) {
        case '"':
            esc[1] = '"';
            break;
        case '\\':
            esc[1] = '\\';
            break;
        case '\n':
            esc[1] = 'n';
            break;
        case '\r':
            esc[1] = 'r';
            break;
        case '\t':
            esc[1] = 't';
            break;
        case '\b':
            esc[1] = 'b';
            break;
        case '\f':
            esc[1] = 'f';
            break;
        default:
            memcpy(esc + 1, "u00", 3);
            esc[4] = hex[*p >> 4];
            esc[5] = hex[*p & 15];
            elen = 6;
        }
        jw_raw(w, esc, elen);
    }
    jw_raw(w, (const char *)run, (size_t)(p - run));
    jw_raw(w, "\"", 1);
}

static void jw_json(struct jw *w, const cJSON *item)
{
    char *text = cJSON_PrintUnformatted(item);

    if (text == NULL) {
        if (w->err == EXT_OK)
            w->err = EXT_ENOMEM;
        return;
    }
    jw_lit(w, text);
    cJSON_free(text);
}

static int jw_finish(struct jw *w, char **out, size_t *len)
{
    if (w->err != EXT_OK) {
        free(w->buf);
        return w->err;
    }
    w->buf[w->len] = '\0';
    *out = w->buf;
    *len = w->len;
    return EXT_OK;
}

/* "Key":{"n2":"reason",...} for the candidates with that verdict. */
static void jw_failed_map(struct jw *w, const char *key, const struct ext_filter_args *a,
                          const struct ext_filter_answer *ans, enum ext_verdict which)
{
    bool first = true;
    const char *last = NULL; /* most nodes share one reason: escape it once */
    size_t i, last_off = 0, last_len = 0;

    jw_str(w, key);
    jw_raw(w, ":{", 2);
    for (i = 0; i < a->n; i++) {
        const char *reason = ans->verdicts[i].reason;

        if (ans->verdicts[i].verdict != which)
            continue;
        if (!first)
            jw_raw(w, ",", 1);
        first = false;
        jw_str(w, a->names[i]);
        jw_raw(w, ":", 1);
        if (reason != NULL && reason == last) {
            if (jw_reserve(w, last_len)) {
                memcpy(w->buf + w->len, w->buf + last_off, last_len);
                w->len += last_len;
            }
            continue;
        }
        last = reason;
        last_off = w->len;
        jw_str(w, reason);
        last_len = w->len - last_off;
    }
    jw_raw(w, "}", 1);
}

static void jw_passing(struct jw *w, const struct ext_filter_args *a,
                       const struct ext_filter_answer *ans)
{
    bool first = true;
    size_t i;

    for (i = 0; i < a->n; i++) {
        if (ans->verdicts[i].verdict != EXT_NODE_PASSES)
            continue;
        if (!first)
            jw_raw(w, ",", 1);
        first = false;
        if (a->form == EXT_NODES_FULL)
            jw_json(w, a->nodes[i]);
        else
            jw_str(w, a->names[i]);
    }
}

static bool any_passes(const struct ext_filter_args *a, const struct ext_filter_answer *ans)
{
    for (size_t i = 0; i < a->n; i++)
        if (ans->verdicts[i].verdict == EXT_NODE_PASSES)
            return true;
    return false;
}

int ext_filter_result_encode(const struct ext_filter_args *a, const struct ext_filter_answer *ans,
                             char **out, size_t *len)
{
    struct jw w;

    if (ans->error != NULL && ans->error[0] != '\0')
        return ext_error_encode(EXT_VERB_FILTER, ans->error, out, len);
    jw_init(&w, 128 + a->n * 48);
    if (a->form == EXT_NODES_FULL) {
        jw_lit(&w, "{\"Nodes\":{\"metadata\":{},\"items\":[");
        jw_passing(&w, a, ans);
        jw_lit(&w, "]},\"NodeNames\":null,");
    } else {
        jw_lit(&w, "{\"Nodes\":null,\"NodeNames\":[");
        jw_passing(&w, a, ans);
        jw_lit(&w, "],");
    }
    if (ans->omit_failed && any_passes(a, ans)) {
        jw_lit(&w, "\"FailedNodes\":{},\"FailedAndUnresolvableNodes\":{},\"Error\":\"\"}");
        return jw_finish(&w, out, len);
    }
    jw_failed_map(&w, "FailedNodes", a, ans, EXT_NODE_FAILS);
    jw_raw(&w, ",", 1);
    jw_failed_map(&w, "FailedAndUnresolvableNodes", a, ans, EXT_NODE_UNRESOLVABLE);
    jw_lit(&w, ",\"Error\":\"\"}");
    return jw_finish(&w, out, len);
}

int ext_priority_list_encode(const struct ext_filter_args *a, const struct ext_priority_answer *ans,
                             char **out, size_t *len)
{
    struct jw w;
    size_t i;

    bool first = true;

    jw_init(&w, 16 + (ans->omit_zero ? 64 : a->n * 40));
    jw_raw(&w, "[", 1);
    for (i = 0; i < a->n; i++) {
        int score = ans->scores[i];

        if (score < 0)
            score = 0;
        if (score > 10)
            score = 10;
        if (score == 0 && ans->omit_zero)
            continue;
        jw_lit(&w, first ? "{\"Host\":" : ",{\"Host\":");
        first = false;
        jw_str(&w, a->names[i]);
        jw_lit(&w, ",\"Score\":");
        jw_int(&w, score);
        jw_raw(&w, "}", 1);
    }
    jw_raw(&w, "]", 1);
    return jw_finish(&w, out, len);
}

int ext_binding_result_encode(const struct ext_bind_answer *ans, char **out, size_t *len)
{
    struct jw w;

    jw_init(&w, 64);
    jw_lit(&w, "{\"Error\":");
    jw_str(&w, ans->error);
    jw_raw(&w, "}", 1);
    return jw_finish(&w, out, len);
}

int ext_preemption_result_encode(const struct ext_preempt_answer *ans, char **out, size_t *len)
{
    struct jw w;
    size_t i, j;

    jw_init(&w, 64 + ans->n * 96);
    jw_lit(&w, "{\"NodeNameToMetaVictims\":{");
    for (i = 0; i < ans->n; i++) {
        const struct ext_meta_victims *v = &ans->nodes[i];

        if (i > 0)
            jw_raw(&w, ",", 1);
        jw_str(&w, v->node);
        jw_lit(&w, ":{\"Pods\":[");
        for (j = 0; j < v->npods; j++) {
            jw_lit(&w, j == 0 ? "{\"UID\":" : ",{\"UID\":");
            jw_str(&w, v->uids[j]);
            jw_raw(&w, "}", 1);
        }
        jw_lit(&w, "],\"NumPDBViolations\":");
        jw_int(&w, v->num_pdb_violations);
        jw_raw(&w, "}", 1);
    }
    jw_lit(&w, "}}");
    return jw_finish(&w, out, len);
}

static const char *const verb_names[EXT_VERB_COUNT] = {
    [EXT_VERB_FILTER] = "filter",
    [EXT_VERB_PRIORITIZE] = "prioritize",
    [EXT_VERB_BIND] = "bind",
    [EXT_VERB_PREEMPT] = "preempt",
};

const char *ext_verb_name(enum ext_verb v)
{
    return (unsigned)v < EXT_VERB_COUNT ? verb_names[v] : "unknown";
}

int ext_error_encode(enum ext_verb v, const char *error, char **out, size_t *len)
{
    static const char *const prefix[EXT_VERB_COUNT] = {
        [EXT_VERB_FILTER] = "{\"Nodes\":null,\"NodeNames\":null,\"FailedNodes\":{},"
                            "\"FailedAndUnresolvableNodes\":{},\"Error\":",
        [EXT_VERB_PRIORITIZE] = "{\"Error\":",
        [EXT_VERB_BIND] = "{\"Error\":",
        [EXT_VERB_PREEMPT] = "{\"NodeNameToMetaVictims\":null,\"Error\":",
    };
    struct jw w;

    jw_init(&w, 128);
    jw_lit(&w, (unsigned)v < EXT_VERB_COUNT ? prefix[v] : "{\"Error\":");
    jw_str(&w, error);
    jw_raw(&w, "}", 1);
    return jw_finish(&w, out, len);
}
