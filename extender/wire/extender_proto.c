/* extender_proto.c - ExtenderArgs and friends in, kube-scheduler's replies out. */
#include "wire.h"
#include "config.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

const struct ext_proto_limits ext_proto_limits_default = {
    .max_body = EXT_PROTO_MAX_BODY_DEFAULT,
    .max_depth = EXT_PROTO_MAX_DEPTH_DEFAULT,
    .max_names = EXT_PROTO_MAX_NAMES_DEFAULT,
    .max_string = EXT_PROTO_MAX_STRING_DEFAULT,
};

/* Replies are bounded by what came in; this cap only stops a runaway. */
#define EXT_PROTO_MAX_REPLY ((size_t)512 << 20)

/* ---- JSON in ---------------------------------------------------------------- */

/* The index of the quote that closes the string opened at start, or len. */
static size_t string_end(const char *body, size_t len, size_t start)
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

int ext_json_precheck(const char *body, size_t len, const struct ext_proto_limits *lim, char *err,
                      size_t errlen)
{
    size_t depth = 0, i, end;

    if (len > lim->max_body)
        return ext_errf(err, errlen, EXT_ETOOBIG, "body of %zu bytes is over the cap of %zu", len,
                    lim->max_body);
    for (i = 0; i < len; i++) {
        switch (body[i]) {
        case '"':
            end = string_end(body, len, i);
            if (end - i - 1 > lim->max_string) /* the bytes between the quotes, as written */
                return ext_errf(err, errlen, EXT_ETOOBIG,
                            "JSON string at byte %zu is longer than the cap of %zu bytes", i,
                            lim->max_string);
            i = end;
            break;
        case '[':
        case '{':
            if (++depth > lim->max_depth)
                return ext_errf(err, errlen, EXT_ETOOBIG,
                            "JSON nested deeper than %zu levels at byte %zu", lim->max_depth, i);
            break;
        case ']':
        case '}':
            if (depth > 0)
                depth--;
            break;
        }
    }
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
static const cJSON *get_set(const cJSON *obj, const char *key)
{
    const cJSON *item = ext_json_get(obj, key);

    return cJSON_IsNull(item) ? NULL : item;
}

static size_t count_children(const cJSON *c)
{
    size_t n = 0;

    for (c = c->child; c != NULL; c = c->next)
        n++;
    return n;
}

/* Parse a prechecked body into a JSON object. */
static int parse_checked(const char *body, size_t len, const char *what, cJSON **out, char *err,
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
static int parse_object(const char *body, size_t len, const struct ext_proto_limits *lim,
                        const char *what, cJSON **out, char *err, size_t errlen)
{
    int rc = ext_json_precheck(body, len, lim, err, errlen);

    if (rc != EXT_OK)
        return rc;
    return parse_checked(body, len, what, out, err, errlen);
}

static int get_pod(const cJSON *root, const cJSON **pod, char *err, size_t errlen)
{
    const cJSON *p = get_set(root, "Pod");

    if (p == NULL)
        return ext_errf(err, errlen, EXT_EINVAL, "missing Pod");
    if (!cJSON_IsObject(p))
        return ext_errf(err, errlen, EXT_EINVAL, "Pod is not an object");
    *pod = p;
    return EXT_OK;
}

/* metadata.<key> of a Kubernetes object as a string, or NULL. */
static const char *meta_string(const cJSON *obj, const char *key)
{
    const cJSON *v = ext_json_get(ext_json_get(obj, "metadata"), key);

    return cJSON_IsString(v) ? v->valuestring : NULL;
}

static int decode_node_names(const cJSON *list, const struct ext_proto_limits *lim,
                             struct ext_filter_args *a, char *err, size_t errlen)
{
    const cJSON *item;
    size_t i = 0;

    if (!cJSON_IsArray(list))
        return ext_errf(err, errlen, EXT_EINVAL, "NodeNames is not an array");
    a->n = count_children(list);
    if (a->n > lim->max_names)
        return ext_errf(err, errlen, EXT_ETOOBIG, "%zu node names, over the cap of %zu", a->n,
                    lim->max_names);
    a->names = ext_arena_calloc(a->mem, a->n, sizeof(*a->names));
    if (a->names == NULL && a->n > 0)
        return ext_errf(err, errlen, EXT_ENOMEM, "out of memory");
    for (item = list->child; item != NULL; item = item->next, i++) {
        if (!cJSON_IsString(item))
            return ext_errf(err, errlen, EXT_EINVAL, "NodeNames[%zu] is not a string", i);
        a->names[i] = item->valuestring;
    }
    a->form = EXT_NODES_BY_NAME;
    return EXT_OK;
}

static int decode_node_list(const cJSON *list, const struct ext_proto_limits *lim,
                            struct ext_filter_args *a, char *err, size_t errlen)
{
    const cJSON *items, *item;
    size_t i = 0;

    if (!cJSON_IsObject(list))
        return ext_errf(err, errlen, EXT_EINVAL, "Nodes is not an object (a NodeList)");
    a->form = EXT_NODES_FULL;
    items = get_set(list, "items");
    if (items == NULL)
        return EXT_OK;
    if (!cJSON_IsArray(items))
        return ext_errf(err, errlen, EXT_EINVAL, "Nodes.items is not an array");
    a->n = count_children(items);
    if (a->n > lim->max_names)
        return ext_errf(err, errlen, EXT_ETOOBIG, "%zu nodes, over the cap of %zu", a->n,
                    lim->max_names);
    a->names = ext_arena_calloc(a->mem, a->n, sizeof(*a->names));
    a->nodes = ext_arena_calloc(a->mem, a->n, sizeof(*a->nodes));
    if ((a->names == NULL || a->nodes == NULL) && a->n > 0)
        return ext_errf(err, errlen, EXT_ENOMEM, "out of memory");
    for (item = items->child; item != NULL; item = item->next, i++) {
        const char *name = meta_string(item, "name");

        if (!cJSON_IsObject(item) || name == NULL)
            return ext_errf(err, errlen, EXT_EINVAL, "Nodes.items[%zu] has no metadata.name", i);
        a->names[i] = name;
        a->nodes[i] = item;
    }
    return EXT_OK;
}

static int decode_candidates(const cJSON *root, const struct ext_proto_limits *lim,
                             struct ext_filter_args *a, char *err, size_t errlen)
{
    const cJSON *names = get_set(root, "NodeNames");
    const cJSON *nodes = get_set(root, "Nodes");

    if (names != NULL)
        return decode_node_names(names, lim, a, err, errlen);
    if (nodes != NULL)
        return decode_node_list(nodes, lim, a, err, errlen);
    return ext_errf(err, errlen, EXT_EINVAL, "neither NodeNames nor Nodes is set");
}

/* ---- NodeNames without a cJSON item per name ---------------------------------- */

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

enum fast_names { FAST_NO, FAST_OK, FAST_TOO_MANY };

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
        i = string_end(b, len, i);
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
            i = string_end(b, len, i);
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
static bool find_names_value(const char *b, size_t len, size_t *vs, size_t *ve)
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
        ke = string_end(b, len, i);
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
 * The array of strings b[s..e) into a->names and a->n, in the pool. FAST_NO
 * leaves a untouched; FAST_TOO_MANY only counts, into *count.
 */
static enum fast_names fast_names(const char *b, size_t s, size_t e,
                                  const struct ext_proto_limits *lim, struct ext_filter_args *a,
                                  size_t *count)
{
    size_t n = 0, bytes = 0, i, dl, k;
    const char **names;
    char *buf;

    if (e - s < 4 || b[s] != '[') /* "[]" has no room for "null" */
        return FAST_NO;
    i = skip_ws(b, e, s + 1);
    if (i < e && b[i] != ']') {
        for (;;) {
            if (i >= e || b[i] != '"' || (i = fast_string(b, e, i, NULL, &dl)) == 0)
                return FAST_NO;
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
        return FAST_NO;
    *count = n;
    if (n > lim->max_names)
        return FAST_TOO_MANY;
    names = ext_arena_calloc(a->mem, n, sizeof(*names));
    buf = ext_arena_alloc(a->mem, bytes);
    if (names == NULL || buf == NULL)
        return FAST_NO;
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
    return FAST_OK;
}

static int filter_args_decode(const char *body, size_t len, const struct ext_proto_limits *lim,
                              bool fast, struct ext_filter_args *out, char *err, size_t errlen)
{
    struct ext_filter_args a = {0};
    enum fast_names got = FAST_NO;
    size_t vs, ve, count = 0;
    char *copy = NULL;
    int rc;

    rc = ext_json_precheck(body, len, lim, err, errlen);
    if (rc != EXT_OK)
        return rc;
    a.mem = ext_arena_new();
    if (a.mem == NULL)
        return ext_errf(err, errlen, EXT_ENOMEM, "out of memory");
    if (fast && find_names_value(body, len, &vs, &ve))
        got = fast_names(body, vs, ve, lim, &a, &count);
    if (got != FAST_NO) {
        copy = malloc(len);
        if (copy == NULL) {
            rc = ext_errf(err, errlen, EXT_ENOMEM, "out of memory");
            goto out_cleanup;
        }
        memcpy(copy, body, len);
        memcpy(copy + vs, "null", 4);
        memset(copy + vs + 4, ' ', ve - vs - 4);
    }
    rc = parse_checked(copy != NULL ? copy : body, len, "ExtenderArgs", &a.doc, err, errlen);
    free(copy);
    if (rc != EXT_OK)
        goto out_cleanup;
    rc = get_pod(a.doc, &a.pod, err, errlen);
    if (rc != EXT_OK)
        goto out_cleanup;
    if (got == FAST_TOO_MANY) {
        rc = ext_errf(err, errlen, EXT_ETOOBIG, "%zu node names, over the cap of %zu", count,
                  lim->max_names);
        goto out_cleanup;
    }
    if (got == FAST_OK)
        a.form = EXT_NODES_BY_NAME;
    else
        rc = decode_candidates(a.doc, lim, &a, err, errlen);
    if (rc != EXT_OK)
        goto out_cleanup;
    *out = a;
    return EXT_OK;

out_cleanup:
    ext_filter_args_cleanup(&a);
    return rc;
}

int ext_filter_args_decode(const char *body, size_t len, const struct ext_proto_limits *lim,
                           struct ext_filter_args *out, char *err, size_t errlen)
{
    return filter_args_decode(body, len, lim, true, out, err, errlen);
}

int ext_filter_args_decode_reference(const char *body, size_t len,
                                     const struct ext_proto_limits *lim,
                                     struct ext_filter_args *out, char *err, size_t errlen)
{
    return filter_args_decode(body, len, lim, false, out, err, errlen);
}

void ext_filter_args_cleanup(struct ext_filter_args *a)
{
    cJSON_Delete(a->doc);
    ext_arena_free(a->mem);
    memset(a, 0, sizeof(*a));
}

/* A required, non-empty string member. */
static int get_string(const cJSON *root, const char *key, bool required, const char **out,
                      char *err, size_t errlen)
{
    const cJSON *v = get_set(root, key);

    if (v == NULL && !required) {
        *out = "";
        return EXT_OK;
    }
    if (v == NULL)
        return ext_errf(err, errlen, EXT_EINVAL, "missing %s", key);
    if (!cJSON_IsString(v))
        return ext_errf(err, errlen, EXT_EINVAL, "%s is not a string", key);
    if (required && v->valuestring[0] == '\0')
        return ext_errf(err, errlen, EXT_EINVAL, "%s is empty", key);
    *out = v->valuestring;
    return EXT_OK;
}

int ext_bind_args_decode(const char *body, size_t len, const struct ext_proto_limits *lim,
                         struct ext_bind_args *out, char *err, size_t errlen)
{
    static const struct {
        const char *key;
        bool required;
        size_t offset;
    } fields[] = {
        {"PodName", true, offsetof(struct ext_bind_args, pod_name)},
        {"PodNamespace", true, offsetof(struct ext_bind_args, pod_namespace)},
        {"PodUID", false, offsetof(struct ext_bind_args, pod_uid)},
        {"Node", true, offsetof(struct ext_bind_args, node)},
    };
    struct ext_bind_args a = {0};
    size_t i;
    int rc;

    rc = parse_object(body, len, lim, "ExtenderBindingArgs", &a.doc, err, errlen);
    if (rc != EXT_OK)
        return rc;
    for (i = 0; i < sizeof(fields) / sizeof(fields[0]); i++) {
        const char **slot = (const char **)((char *)&a + fields[i].offset);

        rc = get_string(a.doc, fields[i].key, fields[i].required, slot, err, errlen);
        if (rc != EXT_OK) {
            ext_bind_args_cleanup(&a);
            return rc;
        }
    }
    *out = a;
    return EXT_OK;
}

void ext_bind_args_cleanup(struct ext_bind_args *a)
{
    cJSON_Delete(a->doc);
    memset(a, 0, sizeof(*a));
}

/* One node's Victims / MetaVictims: {"Pods":[...],"NumPDBViolations":n}. */
static int decode_victims(const cJSON *entry, bool meta, const struct ext_proto_limits *lim,
                          struct ext_arena *mem, struct ext_victims *v, char *err, size_t errlen)
{
    const cJSON *pods, *pdb, *pod;
    size_t i = 0;

    if (!cJSON_IsObject(entry))
        return ext_errf(err, errlen, EXT_EINVAL, "victims of node %s are not an object", v->node);
    pdb = get_set(entry, "NumPDBViolations");
    if (pdb != NULL && !cJSON_IsNumber(pdb))
        return ext_errf(err, errlen, EXT_EINVAL, "NumPDBViolations of node %s is not a number",
                    v->node);
    if (pdb != NULL && !(pdb->valuedouble >= 0 && pdb->valuedouble <= 1e15 &&
                         pdb->valuedouble == (double)(int64_t)pdb->valuedouble))
        return ext_errf(err, errlen, EXT_EINVAL,
                    "NumPDBViolations of node %s is not a whole number from 0 to 1e15", v->node);
    v->num_pdb_violations = pdb != NULL ? (int64_t)pdb->valuedouble : 0;
    pods = get_set(entry, "Pods");
    if (pods == NULL)
        return EXT_OK;
    if (!cJSON_IsArray(pods))
        return ext_errf(err, errlen, EXT_EINVAL, "Pods of node %s is not an array", v->node);
    v->npods = count_children(pods);
    if (v->npods > lim->max_names)
        return ext_errf(err, errlen, EXT_ETOOBIG, "%zu victims on node %s, over the cap of %zu",
                    v->npods, v->node, lim->max_names);
    v->uids = ext_arena_calloc(mem, v->npods, sizeof(*v->uids));
    v->pods = meta ? NULL : ext_arena_calloc(mem, v->npods, sizeof(*v->pods));
    if ((v->uids == NULL || (!meta && v->pods == NULL)) && v->npods > 0)
        return ext_errf(err, errlen, EXT_ENOMEM, "out of memory");
    for (pod = pods->child; pod != NULL; pod = pod->next, i++) {
        const cJSON *uid = meta ? get_set(pod, "UID") : NULL;

        if (!cJSON_IsObject(pod))
            return ext_errf(err, errlen, EXT_EINVAL, "victim %zu on node %s is not an object", i,
                        v->node);
        if (meta && !cJSON_IsString(uid))
            return ext_errf(err, errlen, EXT_EINVAL, "victim %zu on node %s has no UID", i, v->node);
        if (meta) {
            v->uids[i] = uid->valuestring;
        } else {
            const char *u = meta_string(pod, "uid");

            v->uids[i] = u != NULL ? u : "";
            v->pods[i] = pod;
        }
    }
    return EXT_OK;
}

static int decode_victim_map(const cJSON *map, const struct ext_proto_limits *lim,
                             struct ext_preempt_args *a, char *err, size_t errlen)
{
    const char *key = a->meta ? "NodeNameToMetaVictims" : "NodeNameToVictims";
    const cJSON *entry;
    size_t i = 0;
    int rc;

    if (!cJSON_IsObject(map))
        return ext_errf(err, errlen, EXT_EINVAL, "%s is not an object", key);
    a->n = count_children(map);
    if (a->n > lim->max_names)
        return ext_errf(err, errlen, EXT_ETOOBIG, "%zu nodes in %s, over the cap of %zu", a->n, key,
                    lim->max_names);
    a->nodes = ext_arena_calloc(a->mem, a->n, sizeof(*a->nodes));
    if (a->nodes == NULL && a->n > 0)
        return ext_errf(err, errlen, EXT_ENOMEM, "out of memory");
    for (entry = map->child; entry != NULL; entry = entry->next, i++) {
        a->nodes[i].node = entry->string;
        rc = decode_victims(entry, a->meta, lim, a->mem, &a->nodes[i], err, errlen);
        if (rc != EXT_OK)
            return rc;
    }
    return EXT_OK;
}

int ext_preempt_args_decode(const char *body, size_t len, const struct ext_proto_limits *lim,
                            struct ext_preempt_args *out, char *err, size_t errlen)
{
    struct ext_preempt_args a = {0};
    const cJSON *map;
    int rc;

    rc = parse_object(body, len, lim, "ExtenderPreemptionArgs", &a.doc, err, errlen);
    if (rc != EXT_OK)
        return rc;
    a.mem = ext_arena_new();
    if (a.mem == NULL) {
        rc = ext_errf(err, errlen, EXT_ENOMEM, "out of memory");
        goto out_cleanup;
    }
    rc = get_pod(a.doc, &a.pod, err, errlen);
    if (rc != EXT_OK)
        goto out_cleanup;
    map = get_set(a.doc, "NodeNameToMetaVictims");
    a.meta = map != NULL;
    if (map == NULL)
        map = get_set(a.doc, "NodeNameToVictims");
    if (map != NULL) {
        rc = decode_victim_map(map, lim, &a, err, errlen);
        if (rc != EXT_OK)
            goto out_cleanup;
    }
    *out = a;
    return EXT_OK;

out_cleanup:
    ext_preempt_args_cleanup(&a);
    return rc;
}

void ext_preempt_args_cleanup(struct ext_preempt_args *a)
{
    cJSON_Delete(a->doc);
    ext_arena_free(a->mem);
    memset(a, 0, sizeof(*a));
}

/* ---- JSON out ----------------------------------------------------------------- */

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

    jw_init(&w, 16 + a->n * 40);
    jw_raw(&w, "[", 1);
    for (i = 0; i < a->n; i++) {
        int score = ans->scores[i];

        if (score < 0)
            score = 0;
        if (score > 10)
            score = 10;
        jw_lit(&w, i == 0 ? "{\"Host\":" : ",{\"Host\":");
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
