/* node_names.c - NodeNames decoded straight from the raw body into the request's arena. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "wire_int.h"

/*
 * kube-scheduler in nodeCacheCapable mode sends thousands of node names; as a
 * cJSON tree each is an item and a string, two mallocs and two frees. The fast
 * path finds the array ext_json_get(root, "NodeNames") would pick in the raw
 * body, decodes its strings straight into the pool, and hands cJSON a copy of
 * the body with the array's bytes overwritten by `null` and spaces (the same
 * length, so every byte offset in an error stays put). Anything it does not
 * read exactly as cJSON would (an escaped or odd key, a non-string element,
 * control bytes, \u0000, a lone surrogate, a bad escape, odd whitespace) sends
 * the whole body down the cJSON path, which gives the answer it always gave.
 */

static bool is_ws(char c)
{
    return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

static size_t skip_ws(const char *b, size_t len, size_t i)
{
    while (i < len && is_ws(b[i]))
        i++;
    return i;
}

/* Four hex digits at p, or -1. */
static long hex4(const char *p)
{
    long v = 0;
    int k;

    for (k = 0; k < 4; k++) {
        char c = p[k];

        if (c >= '0' && c <= '9')
            v = v * 16 + (c - '0');
        else if (c >= 'a' && c <= 'f')
            v = v * 16 + (c - 'a' + 10);
        else if (c >= 'A' && c <= 'F')
            v = v * 16 + (c - 'A' + 10);
        else
            return -1;
    }
    return v;
}

/*
 * The JSON string whose opening quote is b[i], decoded into out unless out is
 * NULL (as many bytes as written between the quotes always suffice). Returns
 * the index after the closing quote and the decoded length in *n, or 0 for
 * anything the cJSON path should judge.
 */
static size_t fast_string(const char *b, size_t len, size_t i, char *out, size_t *n)
{
    size_t o = 0;

    for (i++; i < len;) {
        unsigned char c = (unsigned char)b[i];
        long cp, lo;
        int k;

        if (c == '"') {
            *n = o;
            return i + 1;
        }
        if (c < 0x20)
            return 0;
        if (c != '\\') {
            if (out != NULL)
                out[o] = (char)c;
            o++;
            i++;
            continue;
        }
        if (len - i < 2)
            return 0;
        switch (b[i + 1]) {
        case '"':
        case '\\':
        case '/':
            c = (unsigned char)b[i + 1];
            break;
        case 'b':
            c = '\b';
            break;
        case 'f':
            c = '\f';
            break;
        case 'n':
            c = '\n';
            break;
        case 'r':
            c = '\r';
            break;
        case 't':
            c = '\t';
            break;
        case 'u':
            if (len - i < 6 || (cp = hex4(b + i + 2)) <= 0 || (cp >= 0xDC00 && cp <= 0xDFFF))
                return 0;
            if (cp >= 0xD800 && cp <= 0xDBFF) {
                if (len - i < 12 || b[i + 6] != '\\' || b[i + 7] != 'u')
                    return 0;
                lo = hex4(b + i + 8);
                if (lo < 0xDC00 || lo > 0xDFFF)
                    return 0;
                cp = 0x10000 + (((cp & 0x3FF) << 10) | (lo & 0x3FF));
                i += 12;
            } else {
                i += 6;
            }
            if (out == NULL) {
                o += cp < 0x80 ? 1 : cp < 0x800 ? 2 : cp < 0x10000 ? 3 : 4;
                continue;
            }
            if (cp < 0x80) {
                out[o++] = (char)cp;
            } else {
                k = cp < 0x800 ? 2 : cp < 0x10000 ? 3 : 4;
                out[o] = (char)((k == 2 ? 0xC0 : k == 3 ? 0xE0 : 0xF0) | (cp >> (6 * (k - 1))));
                for (int j = 1; j < k; j++)
                    out[o + j] = (char)(0x80 | ((cp >> (6 * (k - 1 - j))) & 0x3F));
                o += (size_t)k;
            }
            continue;
        default:
            return 0;
        }
        if (out != NULL)
            out[o] = (char)c;
        o++;
        i += 2;
    }
    return 0;
}

/* The index after the value at b[i], nested values skipped whole; 0 when unsure. */
static size_t skip_value(const char *b, size_t len, size_t i)
{
    size_t depth = 0, start = i;

    if (b[i] == '"') {
        i = wire_string_end(b, len, i);
        return i < len ? i + 1 : 0;
    }
    if (b[i] != '{' && b[i] != '[') { /* a number or literal: cJSON judges it */
        while (i < len && !is_ws(b[i]) && strchr(",:{}[]\"", b[i]) == NULL && b[i] != '\0')
            i++;
        return i > start ? i : 0;
    }
    for (; i < len; i++) {
        switch (b[i]) {
        case '"':
            i = wire_string_end(b, len, i);
            if (i >= len)
                return 0;
            break;
        case '{':
        case '[':
            depth++;
            break;
        case '}':
        case ']':
            if (--depth == 0)
                return i + 1;
            break;
        }
    }
    return 0;
}

/*
 * The bytes [*vs, *ve) of the value of the top-level member ext_json_get(root,
 * "NodeNames") would return: the first key "NodeNames", else the first key
 * equal to it ignoring case. False when there is none or the body is unusual.
 */
bool wire_find_names_value(const char *b, size_t len, size_t *vs, size_t *ve)
{
    size_t i = skip_ws(b, len, 0), ks, ke, s, e, k;
    size_t exact_s = 0, exact_e = 0, icase_s = 0, icase_e = 0;
    bool exact = false, icase = false;

    if (i >= len || b[i] != '{')
        return false;
    i = skip_ws(b, len, i + 1);
    for (;;) {
        if (i >= len || b[i] != '"')
            return false;
        ks = i + 1;
        ke = wire_string_end(b, len, i);
        if (ke >= len)
            return false;
        for (k = ks; k < ke; k++) /* cJSON decodes these: let it match them */
            if ((unsigned char)b[k] < 0x20 || b[k] == '\\')
                return false;
        i = skip_ws(b, len, ke + 1);
        if (i >= len || b[i] != ':')
            return false;
        s = skip_ws(b, len, i + 1);
        if (s >= len || (e = skip_value(b, len, s)) == 0)
            return false;
        if (ke - ks == 9 && !exact && memcmp(b + ks, "NodeNames", 9) == 0) {
            exact = true;
            exact_s = s;
            exact_e = e;
        }
        if (ke - ks == 9 && !icase && strncasecmp(b + ks, "NodeNames", 9) == 0) {
            icase = true;
            icase_s = s;
            icase_e = e;
        }
        i = skip_ws(b, len, e);
        if (i < len && b[i] == ',') {
            i = skip_ws(b, len, i + 1);
            continue;
        }
        if (i < len && b[i] == '}')
            break;
        return false;
    }
    if (!exact && !icase)
        return false;
    *vs = exact ? exact_s : icase_s;
    *ve = exact ? exact_e : icase_e;
    return true;
}

/*
 * The array of strings b[s..e) into a->names and a->n, in the pool. WIRE_FAST_NO
 * leaves a untouched; WIRE_FAST_TOO_MANY only counts, into *count.
 */
enum wire_fast_names wire_fast_names(const char *b, size_t s, size_t e,
                                     const struct ext_proto_limits *lim, struct ext_filter_args *a,
                                     size_t *count)
{
    size_t n = 0, bytes = 0, i, dl, k;
    const char **names;
    char *buf;

    if (e - s < 4 || b[s] != '[') /* "[]" has no room for "null" */
        return WIRE_FAST_NO;
    i = skip_ws(b, e, s + 1);
    if (i < e && b[i] != ']') {
        for (;;) {
            if (i >= e || b[i] != '"' || (i = fast_string(b, e, i, NULL, &dl)) == 0)
                return WIRE_FAST_NO;
            n++;
            bytes += dl + 1;
            i = skip_ws(b, e, i);
            if (i < e && b[i] == ',') {
                i = skip_ws(b, e, i + 1);
                continue;
            }
            break;
        }
    }
    if (i + 1 != e || b[i] != ']')
        return WIRE_FAST_NO;
    *count = n;
    if (n > lim->max_names)
        return WIRE_FAST_TOO_MANY;
    names = ext_arena_calloc(a->mem, n, sizeof(*names));
    buf = ext_arena_alloc(a->mem, bytes);
    if (names == NULL || buf == NULL)
        return WIRE_FAST_NO;
    i = skip_ws(b, e, s + 1);
    for (k = 0; k < n; k++) {
        i = fast_string(b, e, i, buf, &dl);
        buf[dl] = '\0';
        names[k] = buf;
        buf += dl + 1;
        i = skip_ws(b, e, i);
        i = skip_ws(b, e, i + 1); /* the comma, or the closing bracket */
    }
    a->names = names;
    a->n = n;
    return WIRE_FAST_OK;
}
