/* json_in.c - untrusted JSON in: the byte-level precheck, Go's key match, parsing to an object. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "wire_int.h"

const struct ext_proto_limits ext_proto_limits_default = {
    .max_body = EXT_PROTO_MAX_BODY_DEFAULT,
    .max_depth = EXT_PROTO_MAX_DEPTH_DEFAULT,
    .max_names = EXT_PROTO_MAX_NAMES_DEFAULT,
    .max_string = EXT_PROTO_MAX_STRING_DEFAULT,
    .decode_budget = EXT_PROTO_DECODE_BUDGET_DEFAULT,
};

/* The index of the quote that closes the string opened at start, or len. */
size_t wire_string_end(const char *body, size_t len, size_t start)
{
    size_t i = start + 1, slashes;
    const char *quote;

    while (i < len) {
        quote = memchr(body + i, '"', len - i);
        if (quote == NULL)
            return len;
        i = (size_t)(quote - body);
        /* Escaped when an odd run of backslashes precedes it. */
        for (slashes = 0; i - slashes > start + 1 && body[i - slashes - 1] == '\\'; slashes++)
            ;
        if (slashes % 2 == 0)
            return i;
        i++;
    }
    return len;
}

/*
 * What cJSON takes from the heap, as glibc's malloc rounds it: an item of
 * 64 bytes in an 80-byte chunk for every value, and a chunk of its own for
 * every string (value or key), at least 32 bytes.
 */
#define JSON_ITEM_COST 80u

static size_t string_cost(size_t n)
{
    size_t chunk = (n + 1 + 8 + 15) & ~(size_t)15;

    return chunk < 32 ? 32 : chunk;
}

/*
 * The string whose opening quote is body[start]: its closing quote's index
 * (len if none), after checking it is UTF-8 and holds no \u0000.
 */
static int scan_string(const char *body, size_t len, size_t start, size_t *end, char *err,
                       size_t errlen)
{
    const unsigned char *b = (const unsigned char *)body;
    size_t i = start + 1, k;

    while (i < len && b[i] != '"') {
        if (b[i] == '\\') {
            if (i + 5 < len && b[i + 1] == 'u' && memcmp(body + i + 2, "0000", 4) == 0)
                return ext_errf(err, errlen, EXT_EINVAL,
                                "JSON string at byte %zu holds a NUL character (\\u0000)", start);
            i += 2;
            continue;
        }
        if (b[i] < 0x80) {
            i++;
            continue;
        }
        k = cfg_utf8_len(b + i, len - i);
        if (k == 0)
            return ext_errf(err, errlen, EXT_EINVAL, "invalid UTF-8 at byte %zu", i);
        i += k;
    }
    *end = i < len ? i : len;
    return EXT_OK;
}

static bool is_scalar_byte(char c)
{
    return c == '-' || c == '+' || c == '.' || (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') ||
           c == 'E';
}

/* Is the string that ends at body[end] a member's key (a ':' follows)? */
static bool is_key(const char *body, size_t len, size_t end)
{
    size_t i = end + 1;

    while (i < len && (body[i] == ' ' || body[i] == '\t' || body[i] == '\n' || body[i] == '\r'))
        i++;
    return i < len && body[i] == ':';
}

int ext_json_precheck(const char *body, size_t len, const struct ext_proto_limits *lim, char *err,
                      size_t errlen)
{
    size_t depth = 0, i, end = 0, cost = 0;
    bool in_scalar = false;
    int rc;

    if (len > lim->max_body)
        return ext_errf(err, errlen, EXT_ETOOBIG, "body of %zu bytes is over the cap of %zu", len,
                        lim->max_body);
    for (i = 0; i < len; i++) {
        char c = body[i];

        if (is_scalar_byte(c)) {
            cost += in_scalar ? 0 : JSON_ITEM_COST;
            in_scalar = true;
            continue;
        }
        in_scalar = false;
        switch (c) {
        case '"':
            rc = scan_string(body, len, i, &end, err, errlen);
            if (rc != EXT_OK)
                return rc;
            if (end - i - 1 > lim->max_string) /* the bytes between the quotes, as written */
                return ext_errf(err, errlen, EXT_ETOOBIG,
                                "JSON string at byte %zu is longer than the cap of %zu bytes", i,
                                lim->max_string);
            cost += string_cost(end - i - 1) + (is_key(body, len, end) ? 0 : JSON_ITEM_COST);
            i = end;
            break;
        case '[':
        case '{':
            cost += JSON_ITEM_COST;
            if (++depth > lim->max_depth)
                return ext_errf(err, errlen, EXT_ETOOBIG,
                                "JSON nested deeper than %zu levels at byte %zu", lim->max_depth,
                                i);
            break;
        case ']':
        case '}':
            if (depth > 0)
                depth--;
            break;
        }
    }
    if (lim->decode_budget > 0 && cost > lim->decode_budget)
        return ext_errf(err, errlen, EXT_ETOOBIG,
                        "parsing this body would take about %zu MiB, over the per-request "
                        "decode budget of %zu MiB",
                        (cost + (1u << 20) - 1) >> 20, lim->decode_budget >> 20);
    return EXT_OK;
}

const cJSON *ext_json_get(const cJSON *obj, const char *key)
{
    const cJSON *item;

    if (!cJSON_IsObject(obj))
        return NULL;
    for (item = obj->child; item != NULL; item = item->next)
        if (item->string != NULL && strcmp(item->string, key) == 0)
            return item;
    for (item = obj->child; item != NULL; item = item->next)
        if (item->string != NULL && strcasecmp(item->string, key) == 0)
            return item;
    return NULL;
}

/* The member key, or NULL when it is absent or JSON null. */
const cJSON *wire_get_set(const cJSON *obj, const char *key)
{
    const cJSON *item = ext_json_get(obj, key);

    return cJSON_IsNull(item) ? NULL : item;
}

size_t wire_count_children(const cJSON *c)
{
    size_t n = 0;

    for (c = c->child; c != NULL; c = c->next)
        n++;
    return n;
}

/* Parse a prechecked body into a JSON object. */
int wire_parse_checked(const char *body, size_t len, const char *what, cJSON **out, char *err,
                       size_t errlen)
{
    const char *end = NULL;
    cJSON *doc;

    if (len == 0)
        return ext_errf(err, errlen, EXT_EINVAL, "empty body: expected %s JSON", what);
    doc = cJSON_ParseWithLengthOpts(body, len, &end, false);
    if (doc == NULL) {
        size_t at = end != NULL && end >= body ? (size_t)(end - body) : 0;

        return ext_errf(err, errlen, EXT_EINVAL, "malformed JSON at byte %zu", at);
    }
    while (end < body + len && (*end == ' ' || *end == '\t' || *end == '\n' || *end == '\r'))
        end++;
    if (end < body + len) {
        cJSON_Delete(doc);
        return ext_errf(err, errlen, EXT_EINVAL, "trailing data after the JSON value at byte %zu",
                        (size_t)(end - body));
    }
    if (!cJSON_IsObject(doc)) {
        cJSON_Delete(doc);
        return ext_errf(err, errlen, EXT_EINVAL, "%s must be a JSON object", what);
    }
    *out = doc;
    return EXT_OK;
}

/* Precheck and parse a body into a JSON object. */
int wire_parse_object(const char *body, size_t len, const struct ext_proto_limits *lim,
                      const char *what, cJSON **out, char *err, size_t errlen)
{
    int rc = ext_json_precheck(body, len, lim, err, errlen);

    if (rc != EXT_OK)
        return rc;
    return wire_parse_checked(body, len, what, out, err, errlen);
}
