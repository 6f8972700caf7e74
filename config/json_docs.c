/*
 * json_docs.c - a stream of JSON values into cfg_docs, as kubectl reads a
 * file that starts with '{' (a JSON decoder, not YAML): tab indentation,
 * values one after another ("jq -c" output), keys of any length. Typed and
 * indexed as the YAML reader does it: numbers keep their text, every node its
 * line, a duplicate key or a NUL in a string is refused.
 */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cfg_internal.h"

struct jreader {
    struct cfg_docs *d;
    const char *p, *end;
    unsigned line;
    int depth;
    char *err;
    size_t errlen;
};

static int jfail(struct jreader *r, int rc, unsigned line, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static int jfail(struct jreader *r, int rc, unsigned line, const char *fmt, ...)
{
    va_list ap;
    int n;

    if (r->err == NULL || r->errlen == 0)
        return rc;
    n = snprintf(r->err, r->errlen, "%s:%u: ", r->d->name, line);
    if (n >= 0 && (size_t)n < r->errlen) {
        va_start(ap, fmt);
        vsnprintf(r->err + n, r->errlen - (size_t)n, fmt, ap);
        va_end(ap);
        cfg_one_line(r->err);
    }
    return rc;
}

/*
 * What was found where something else was expected. Flow-style YAML ("{a: 1}")
 * ends up here too, so the message says why this was read as JSON.
 */
static int unexpected(struct jreader *r, const char *wanted)
{
    static const char why[] = "input starting with '{' is JSON, as kubectl reads it";

    if (r->p == r->end)
        return jfail(r, CFG_ESYNTAX, r->line, "JSON: expected %s, found the end of the input (%s)",
                     wanted, why);
    if ((unsigned char)*r->p < 0x20 || (unsigned char)*r->p >= 0x7f)
        return jfail(r, CFG_ESYNTAX, r->line, "JSON: expected %s, found byte 0x%02x (%s)", wanted,
                     (unsigned char)*r->p, why);
    return jfail(r, CFG_ESYNTAX, r->line, "JSON: expected %s, found '%c' (%s)", wanted, *r->p, why);
}

static void skip_space(struct jreader *r)
{
    for (; r->p < r->end; r->p++) {
        if (*r->p == '\n')
            r->line++;
        else if (*r->p != ' ' && *r->p != '\t' && *r->p != '\r')
            return;
    }
}

bool cfg__json_looks(const char *buf, size_t len)
{
    for (size_t i = 0; i < len; i++) {
        if (buf[i] != ' ' && buf[i] != '\t' && buf[i] != '\r' && buf[i] != '\n' && buf[i] != '\f' &&
            buf[i] != '\v')
            return buf[i] == '{';
    }
    return false;
}

static int remember(struct jreader *r, cJSON *node, unsigned line, const char *text, size_t len)
{
    if (cfg__index_put(r->d->index, node, line, text, len) == CFG_OK)
        return CFG_OK;
    cJSON_Delete(node);
    return jfail(r, CFG_ENOMEM, line, "out of memory");
}

/* ---- strings ------------------------------------------------------------- */

/* The length of the valid UTF-8 sequence at p, or 0. */
static size_t utf8_length(const unsigned char *p, const unsigned char *end)
{
    size_t n;

    if (*p < 0x80)
        return 1;
    if (*p >= 0xc2 && *p <= 0xdf)
        n = 2;
    else if ((*p & 0xf0) == 0xe0)
        n = 3;
    else if (*p >= 0xf0 && *p <= 0xf4)
        n = 4;
    else
        return 0;
    if ((size_t)(end - p) < n)
        return 0;
    for (size_t i = 1; i < n; i++) {
        if ((p[i] & 0xc0) != 0x80)
            return 0;
    }
    if ((n == 3 && *p == 0xe0 && p[1] < 0xa0) || (n == 3 && *p == 0xed && p[1] >= 0xa0) ||
        (n == 4 && *p == 0xf0 && p[1] < 0x90) || (n == 4 && *p == 0xf4 && p[1] >= 0x90))
        return 0; /* overlong, a surrogate, or past U+10FFFF */
    return n;
}

static size_t utf8_put(char *out, unsigned long cp)
{
    if (cp < 0x80) {
        out[0] = (char)cp;
        return 1;
    }
    if (cp < 0x800) {
        out[0] = (char)(0xc0 | (cp >> 6));
        out[1] = (char)(0x80 | (cp & 0x3f));
        return 2;
    }
    if (cp < 0x10000) {
        out[0] = (char)(0xe0 | (cp >> 12));
        out[1] = (char)(0x80 | ((cp >> 6) & 0x3f));
        out[2] = (char)(0x80 | (cp & 0x3f));
        return 3;
    }
    out[0] = (char)(0xf0 | (cp >> 18));
    out[1] = (char)(0x80 | ((cp >> 12) & 0x3f));
    out[2] = (char)(0x80 | ((cp >> 6) & 0x3f));
    out[3] = (char)(0x80 | (cp & 0x3f));
    return 4;
}

static bool hex4(const char *p, const char *end, unsigned long *v)
{
    *v = 0;
    if (end - p < 4)
        return false;
    for (int i = 0; i < 4; i++) {
        char c = p[i];
        int d = c >= '0' && c <= '9'   ? c - '0'
                : c >= 'a' && c <= 'f' ? c - 'a' + 10
                : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                       : -1;

        if (d < 0)
            return false;
        *v = *v * 16 + (unsigned long)d;
    }
    return true;
}

/* \uXXXX, with a surrogate pair as one character; a lone surrogate is U+FFFD, as Go reads it. */
static int escape_u(struct jreader *r, unsigned long *cp)
{
    unsigned long lo;

    if (!hex4(r->p, r->end, cp))
        return jfail(r, CFG_ESYNTAX, r->line, "JSON: \\u needs four hex digits");
    r->p += 4;
    if (*cp < 0xd800 || *cp > 0xdfff)
        return CFG_OK;
    if (*cp <= 0xdbff && r->end - r->p >= 6 && r->p[0] == '\\' && r->p[1] == 'u' &&
        hex4(r->p + 2, r->end, &lo) && lo >= 0xdc00 && lo <= 0xdfff) {
        r->p += 6;
        *cp = 0x10000 + ((*cp - 0xd800) << 10) + (lo - 0xdc00);
        return CFG_OK;
    }
    *cp = 0xfffd;
    return CFG_OK;
}

/* One escape after the backslash, written to out (at most 4 bytes). */
static int escape(struct jreader *r, char *out, size_t *n)
{
    static const char from[] = "\"\\/bfnrt", to[] = "\"\\/\b\f\n\r\t";
    const char *at = r->p < r->end ? memchr(from, *r->p, sizeof(from) - 1) : NULL;
    unsigned long cp;
    int rc;

    if (at != NULL) {
        out[0] = to[at - from];
        *n = 1;
        r->p++;
        return CFG_OK;
    }
    if (r->p == r->end || *r->p != 'u')
        return jfail(r, CFG_ESYNTAX, r->line, "JSON: unknown escape \\%c in a string",
                     r->p < r->end && (unsigned char)*r->p >= 0x20 ? *r->p : '?');
    r->p++;
    rc = escape_u(r, &cp);
    if (rc != CFG_OK)
        return rc;
    if (cp == 0)
        return jfail(r, CFG_EINVAL, r->line, "a string holding a NUL character");
    *n = utf8_put(out, cp);
    return CFG_OK;
}

/* One character of a string at r->p, into out (at most 4 bytes). */
static int string_char(struct jreader *r, char *out, size_t *n)
{
    size_t len;

    if (*r->p == '\\') {
        r->p++;
        return escape(r, out, n);
    }
    if ((unsigned char)*r->p < 0x20)
        return jfail(r, CFG_ESYNTAX, r->line, "JSON: a control character in a string");
    len = utf8_length((const unsigned char *)r->p, (const unsigned char *)r->end);
    if (len == 0)
        return jfail(r, CFG_ESYNTAX, r->line, "JSON: invalid UTF-8 in a string");
    memcpy(out, r->p, len);
    r->p += len;
    *n = len;
    return CFG_OK;
}

/* The string at r->p (its opening quote) into a new NUL-terminated buffer. */
static int string_text(struct jreader *r, char **out)
{
    size_t cap = 64, n = 0, len = 0;
    char *s = malloc(cap), *grown;
    int rc = CFG_OK;

    if (s == NULL)
        return jfail(r, CFG_ENOMEM, r->line, "out of memory");
    for (r->p++; rc == CFG_OK; n += len) {
        if (r->p == r->end) {
            rc = jfail(r, CFG_ESYNTAX, r->line, "JSON: a string is not closed");
            break;
        }
        if (*r->p == '"')
            break;
        if (cap - n < 8) {
            grown = realloc(s, cap * 2);
            if (grown == NULL) {
                rc = jfail(r, CFG_ENOMEM, r->line, "out of memory");
                break;
            }
            s = grown;
            cap *= 2;
        }
        len = 0;
        rc = string_char(r, s + n, &len);
    }
    if (rc != CFG_OK) {
        free(s);
        return rc;
    }
    r->p++; /* the closing quote */
    s[n] = '\0';
    *out = s;
    return CFG_OK;
}

/* ---- scalars ------------------------------------------------------------- */

static const char *digits(const char *p, const char *end)
{
    while (p < end && *p >= '0' && *p <= '9')
        p++;
    return p;
}

/* -?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)? */
static const char *number_end(const char *p, const char *end)
{
    const char *q;

    if (p < end && *p == '-')
        p++;
    if (p < end && *p == '0')
        p++;
    else if ((q = digits(p, end)) > p)
        p = q;
    else
        return NULL;
    if (p < end && *p == '.') {
        q = digits(p + 1, end);
        if (q == p + 1)
            return NULL;
        p = q;
    }
    if (p < end && (*p == 'e' || *p == 'E')) {
        p++;
        if (p < end && (*p == '+' || *p == '-'))
            p++;
        q = digits(p, end);
        if (q == p)
            return NULL;
        p = q;
    }
    return p;
}

static int number(struct jreader *r, unsigned line, cJSON **out)
{
    const char *start = r->p, *end = number_end(r->p, r->end);
    char text[512];
    double v;

    if (end == NULL)
        return unexpected(r, "a value");
    if ((size_t)(end - start) >= sizeof(text))
        return jfail(r, CFG_EINVAL, r->line, "JSON: a number of more than %zu digits",
                     sizeof(text) - 1);
    memcpy(text, start, (size_t)(end - start));
    text[end - start] = '\0';
    v = strtod(text, NULL);
    if (!isfinite(v))
        return jfail(r, CFG_EINVAL, r->line, "JSON: %.40s is out of range", text);
    r->p = end;
    *out = cJSON_CreateNumber(v);
    if (*out == NULL)
        return jfail(r, CFG_ENOMEM, line, "out of memory");
    return remember(r, *out, line, text, strlen(text));
}

static int literal(struct jreader *r, unsigned line, cJSON **out)
{
    static const char *const words[] = {"true", "false", "null"};

    for (int i = 0; i < 3; i++) {
        size_t n = strlen(words[i]);

        if ((size_t)(r->end - r->p) < n || memcmp(r->p, words[i], n) != 0)
            continue;
        r->p += n;
        *out = i == 0 ? cJSON_CreateTrue() : i == 1 ? cJSON_CreateFalse() : cJSON_CreateNull();
        if (*out == NULL)
            return jfail(r, CFG_ENOMEM, line, "out of memory");
        return remember(r, *out, line, words[i], n);
    }
    return unexpected(r, "a value");
}

static int string(struct jreader *r, unsigned line, cJSON **out)
{
    char *text;
    int rc = string_text(r, &text);

    if (rc != CFG_OK)
        return rc;
    *out = cJSON_CreateString(text);
    free(text);
    if (*out == NULL)
        return jfail(r, CFG_ENOMEM, line, "out of memory");
    return remember(r, *out, line, NULL, 0);
}

/* ---- collections --------------------------------------------------------- */

static int value(struct jreader *r, unsigned line, cJSON **out);

/* One "key": value into obj. */
static int member(struct jreader *r, cJSON *obj)
{
    unsigned line = r->line;
    const cJSON *twin;
    cJSON *val = NULL;
    char *key;
    int rc;

    if (r->p == r->end || *r->p != '"')
        return unexpected(r, "a string key");
    rc = string_text(r, &key);
    if (rc != CFG_OK)
        return rc;
    twin = cJSON_GetObjectItemCaseSensitive(obj, key);
    skip_space(r);
    if (twin != NULL)
        rc = jfail(r, CFG_EINVAL, line, "duplicate key \"%s\" (first at line %u)", key,
                   cfg__index_get(r->d->index, twin)->line);
    else if (r->p == r->end || *r->p != ':')
        rc = unexpected(r, "':' after a key");
    if (rc == CFG_OK) {
        r->p++;
        skip_space(r);
        rc = value(r, line, &val);
    }
    if (rc == CFG_OK && !cJSON_AddItemToObject(obj, key, val)) {
        cJSON_Delete(val);
        rc = jfail(r, CFG_ENOMEM, line, "out of memory");
    }
    free(key);
    return rc;
}

/* The items or members up to close, separated by commas. */
static int items(struct jreader *r, cJSON *node, char close)
{
    cJSON *item;
    int rc;

    r->p++;
    skip_space(r);
    if (r->p < r->end && *r->p == close) {
        r->p++;
        return CFG_OK;
    }
    for (;;) {
        item = NULL;
        if (close == '}')
            rc = member(r, node);
        else if ((rc = value(r, 0, &item)) == CFG_OK)
            cJSON_AddItemToArray(node, item);
        if (rc != CFG_OK)
            return rc;
        skip_space(r);
        if (r->p < r->end && *r->p == close) {
            r->p++;
            return CFG_OK;
        }
        if (r->p == r->end || *r->p != ',')
            return unexpected(r, close == '}' ? "',' or '}'" : "',' or ']'");
        r->p++;
        skip_space(r);
    }
}

static int collection(struct jreader *r, unsigned line, cJSON **out)
{
    bool is_map = *r->p == '{';
    cJSON *node;
    int rc;

    if (r->depth >= CFG_DOCS_MAX_DEPTH)
        return jfail(r, CFG_ETOOBIG, r->line, "nested deeper than %d levels", CFG_DOCS_MAX_DEPTH);
    node = is_map ? cJSON_CreateObject() : cJSON_CreateArray();
    if (node == NULL)
        return jfail(r, CFG_ENOMEM, line, "out of memory");
    rc = remember(r, node, line, NULL, 0);
    if (rc != CFG_OK)
        return rc;
    r->depth++;
    rc = items(r, node, is_map ? '}' : ']');
    r->depth--;
    if (rc != CFG_OK) {
        cJSON_Delete(node);
        return rc;
    }
    *out = node;
    return CFG_OK;
}

/* The value at r->p; line 0 means its own line, else the line of its key. */
static int value(struct jreader *r, unsigned line, cJSON **out)
{
    if (line == 0)
        line = r->line;
    if (r->p == r->end)
        return unexpected(r, "a value");
    if (*r->p == '{' || *r->p == '[')
        return collection(r, line, out);
    if (*r->p == '"')
        return string(r, line, out);
    if (*r->p == '-' || (*r->p >= '0' && *r->p <= '9'))
        return number(r, line, out);
    return literal(r, line, out);
}

static int append(struct jreader *r, cJSON *root, size_t *cap)
{
    struct cfg_docs *d = r->d;
    cJSON **docs;

    if (d->n == *cap) {
        docs = realloc(d->docs, (*cap ? *cap * 2 : 4) * sizeof(*docs));
        if (docs == NULL) {
            cJSON_Delete(root);
            return jfail(r, CFG_ENOMEM, r->line, "out of memory");
        }
        d->docs = docs;
        *cap = *cap ? *cap * 2 : 4;
    }
    d->docs[d->n++] = root;
    return CFG_OK;
}

int cfg__json_parse(struct cfg_docs *d, const char *buf, size_t len, char *err, size_t errlen)
{
    struct jreader r = {
        .d = d, .p = buf, .end = buf + len, .line = 1, .err = err, .errlen = errlen};
    size_t cap = 0;
    cJSON *root;
    int rc;

    for (skip_space(&r); r.p < r.end; skip_space(&r)) {
        root = NULL;
        rc = value(&r, 0, &root);
        if (rc != CFG_OK)
            return rc;
        if (cJSON_IsNull(root)) { /* an empty document, as in YAML */
            cfg__index_forget(d->index, root);
            cJSON_Delete(root);
            continue;
        }
        rc = append(&r, root, &cap);
        if (rc != CFG_OK)
            return rc;
    }
    return CFG_OK;
}
