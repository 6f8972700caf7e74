/*
 * settings_load.c - muster's settings file, checked key by key against one
 * table; every complaint names the file and line of the node at fault.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cfg_internal.h"

enum kind {
    K_STRING,   /* any string */
    K_HOSTPORT, /* host:port */
    K_LIST,     /* a list of non-empty strings */
    K_DURATION, /* "20s", in milliseconds */
    K_SIZE,     /* "32Mi" or bytes */
    K_COUNT,    /* a whole number */
    K_BOOL,
    K_MILLI, /* a number such as 0.5, in thousandths */
    K_ENUM, /* one of names, stored as its index */
    K_MAP,  /* sub: its own keys, offsets relative to off */
};

#define F_EMPTY_OK 1u  /* a string may be "" */
#define F_NOT_EMPTY 2u /* a list needs an entry */

struct field {
    const char *key;
    enum kind kind;
    size_t off;
    unsigned flags;
    const struct field *sub;
    const char *const *names;
    int64_t min, max;
};

#define MS_DAY (INT64_C(24) * 3600 * 1000)
#define DURATION(k, type, m)                                                                       \
    {                                                                                              \
        k, K_DURATION, offsetof(type, m), 0, NULL, NULL, 1, MS_DAY                                 \
    }

static const struct field tls_fields[] = {
    {"certFile", K_STRING, offsetof(struct cfg_tls, cert_file), 0, NULL, NULL, 0, 0},
    {"keyFile", K_STRING, offsetof(struct cfg_tls, key_file), 0, NULL, NULL, 0, 0},
    {"clientCAFile", K_STRING, offsetof(struct cfg_tls, client_ca_file), 0, NULL, NULL, 0, 0},
    {NULL, 0, 0, 0, NULL, NULL, 0, 0},
};

#define SV struct cfg_server
#define MiB (INT64_C(1) << 20)
static const struct field server_fields[] = {
    {"maxConnections", K_COUNT, offsetof(SV, max_connections), 0, NULL, NULL, 16, 1000000},
    {"maxConnectionsPerClient", K_COUNT, offsetof(SV, max_per_client), 0, NULL, NULL, 0, 1000000},
    {"idleTimeout", K_DURATION, offsetof(SV, idle_timeout_ms), 0, NULL, NULL, 1000, 3600 * 1000},
    {"workers", K_COUNT, offsetof(SV, workers), 0, NULL, NULL, 1, 256},
    {"maxBufferedBytes", K_SIZE, offsetof(SV, max_buffered), 0, NULL, NULL, MiB, 16384 * MiB},
    {"decodeBudget", K_SIZE, offsetof(SV, decode_budget), 0, NULL, NULL, MiB, 65536 * MiB},
    {"largeBodyDecodes", K_COUNT, offsetof(SV, large_decodes), 0, NULL, NULL, 1, 64},
    {NULL, 0, 0, 0, NULL, NULL, 0, 0},
};
#undef MiB
#undef SV

static const struct field log_fields[] = {
    {"format", K_ENUM, offsetof(struct cfg_log, format), 0, NULL, cfg__log_format_names, 0, 0},
    {"level", K_ENUM, offsetof(struct cfg_log, level), 0, NULL, cfg__log_level_names, 0, 0},
    {NULL, 0, 0, 0, NULL, NULL, 0, 0},
};

#define GS struct cfg_gpu_sharing
static const struct field gpu_sharing_fields[] = {
    {"reservations", K_BOOL, offsetof(GS, reservations), 0, NULL, NULL, 0, 0},
    {"reservationNamespace", K_STRING, offsetof(GS, reservation_namespace), 0, NULL, NULL, 0, 0},
    {"reservationImage", K_STRING, offsetof(GS, reservation_image), 0, NULL, NULL, 0, 0},
    DURATION("reservationTimeout", GS, reservation_timeout_ms),
    {"runtimeClassName", K_STRING, offsetof(GS, runtime_class_name), F_EMPTY_OK, NULL, NULL, 0, 0},
    {"webhookListen", K_HOSTPORT, offsetof(GS, webhook_listen), F_EMPTY_OK, NULL, NULL, 0, 0},
    {"webhookTLS", K_MAP, offsetof(GS, webhook_tls), 0, tls_fields, NULL, 0, 0},
    {NULL, 0, 0, 0, NULL, NULL, 0, 0},
};
#undef GS

#define LE struct cfg_leader_election
static const struct field leader_election_fields[] = {
    {"enabled", K_BOOL, offsetof(LE, enabled), 0, NULL, NULL, 0, 0},
    {"leaseName", K_STRING, offsetof(LE, lease_name), 0, NULL, NULL, 0, 0},
    {"leaseNamespace", K_STRING, offsetof(LE, lease_namespace), 0, NULL, NULL, 0, 0},
    {"identity", K_STRING, offsetof(LE, identity), F_EMPTY_OK, NULL, NULL, 0, 0},
    {NULL, 0, 0, 0, NULL, NULL, 0, 0},
};
#undef LE

#define EV struct cfg_evictions
static const struct field evictions_fields[] = {
    {"reclaim", K_BOOL, offsetof(EV, reclaim), 0, NULL, NULL, 0, 0},
    {"preemption", K_BOOL, offsetof(EV, preemption), 0, NULL, NULL, 0, 0},
    DURATION("refusedVictimWait", EV, refused_victim_wait_ms),
    DURATION("unaskedWait", EV, unasked_wait_ms),
    {NULL, 0, 0, 0, NULL, NULL, 0, 0},
};
#undef EV

#define FA struct cfg_fairness
#define MS_YEAR (366 * MS_DAY)
static const struct field fairness_fields[] = {
    {"halfLife", K_DURATION, offsetof(FA, half_life_ms), 0, NULL, NULL, 0, MS_YEAR},
    {"window", K_DURATION, offsetof(FA, window_ms), 0, NULL, NULL, 60 * 1000, MS_YEAR},
    {"k", K_MILLI, offsetof(FA, k_milli), 0, NULL, NULL, 0, 10000 * 1000},
    {"entryPenalty", K_DURATION, offsetof(FA, entry_penalty_ms), 0, NULL, NULL, 0, MS_DAY},
    {NULL, 0, 0, 0, NULL, NULL, 0, 0},
};
#undef MS_YEAR
#undef FA

#define S struct cfg_settings
static const struct field settings_fields[] = {
    {"listen", K_HOSTPORT, offsetof(S, listen), 0, NULL, NULL, 0, 0},
    {"tls", K_MAP, offsetof(S, tls), 0, tls_fields, NULL, 0, 0},
    {"kubeconfig", K_STRING, offsetof(S, kubeconfig), F_EMPTY_OK, NULL, NULL, 0, 0},
    {"schedulerNames", K_LIST, offsetof(S, scheduler_names), F_NOT_EMPTY, NULL, NULL, 0, 0},
    {"queueLabelKeys", K_LIST, offsetof(S, queue_label_keys), 0, NULL, NULL, 0, 0},
    {"defaultQueue", K_STRING, offsetof(S, default_queue), 0, NULL, NULL, 0, 0},
    {"strategy", K_ENUM, offsetof(S, strategy), 0, NULL, cfg__strategy_names, 0, 0},
    DURATION("planTTL", S, plan_ttl_ms),
    DURATION("bindWait", S, bind_wait_ms),
    {"maxBodyBytes", K_SIZE, offsetof(S, max_body_bytes), 0, NULL, NULL, 1024, INT64_C(1) << 30},
    {"maxNodeNames", K_COUNT, offsetof(S, max_node_names), 0, NULL, NULL, 1, 1000000},
    {"server", K_MAP, offsetof(S, server), 0, server_fields, NULL, 0, 0},
    {"log", K_MAP, offsetof(S, log), 0, log_fields, NULL, 0, 0},
    {"gpuSharing", K_MAP, offsetof(S, gpu_sharing), 0, gpu_sharing_fields, NULL, 0, 0},
    {"leaderElection", K_MAP, offsetof(S, leader_election), 0, leader_election_fields, NULL, 0, 0},
    {"evictions", K_MAP, offsetof(S, evictions), 0, evictions_fields, NULL, 0, 0},
    {"fairness", K_MAP, offsetof(S, fairness), 0, fairness_fields, NULL, 0, 0},
    {"watchProtobuf", K_BOOL, offsetof(S, watch_protobuf), 0, NULL, NULL, 0, 0},
    {NULL, 0, 0, 0, NULL, NULL, 0, 0},
};
#undef S

/* K_ENUM stores through an int. */
_Static_assert(sizeof(enum policy_strategy) == sizeof(int), "enum size");
_Static_assert(sizeof(enum cfg_log_format) == sizeof(int), "enum size");
_Static_assert(sizeof(enum cfg_log_level) == sizeof(int), "enum size");

struct walk {
    const struct cfg_docs *d;
    char *err;
    size_t errlen;
};

#define fail(w, rc, node, ...) cfg__node_error((w)->d, node, (w)->err, (w)->errlen, rc, __VA_ARGS__)

static const char *type_name(const cJSON *node)
{
    if (cJSON_IsString(node))
        return "a string";
    if (cJSON_IsNumber(node))
        return "a number";
    if (cJSON_IsBool(node))
        return "a boolean";
    if (cJSON_IsArray(node))
        return "a list";
    if (cJSON_IsObject(node))
        return "a mapping";
    return "null";
}

static int wrong_type(const struct walk *w, const cJSON *node, const char *path, const char *want)
{
    return fail(w, CFG_EINVAL, node, "%s: expected %s, got %s", path, want, type_name(node));
}

static int set_string(const struct walk *w, char **dst, const cJSON *node, const char *path)
{
    char *v = strdup(node->valuestring);

    if (v == NULL)
        return fail(w, CFG_ENOMEM, node, "%s: out of memory", path);
    free(*dst);
    *dst = v;
    return CFG_OK;
}

static int apply_string(const struct walk *w, const struct field *f, void *at, const cJSON *node,
                        const char *path)
{
    const char *v = node->valuestring;
    unsigned port;
    int rc;

    if (!cJSON_IsString(node))
        return wrong_type(w, node, path, "a string");
    if (*v == '\0' && !(f->flags & F_EMPTY_OK))
        return fail(w, CFG_EINVAL, node, "%s: must not be empty", path);
    if (f->kind == K_HOSTPORT && *v != '\0') {
        rc = cfg_hostport_parse(v, NULL, 0, &port);
        if (rc == CFG_ERANGE)
            return fail(w, rc, node, "%s: \"%.300s\" has a port outside 1..65535", path, v);
        if (rc == CFG_ETOOBIG)
            return fail(w, rc, node, "%s: a host of %zu characters is longer than %d", path,
                        strcspn(v[0] == '[' ? v + 1 : v, v[0] == '[' ? "]" : ":"), CFG_HOST_MAX);
        if (rc != CFG_OK)
            return fail(w, rc, node,
                        "%s: \"%.300s\" is not host:port (e.g. 127.0.0.1:8888, [::1]:8888)", path,
                        v);
    }
    return set_string(w, at, node, path);
}

static int apply_list(const struct walk *w, const struct field *f, void *at, const cJSON *node,
                      const char *path)
{
    const char **v;
    const cJSON *item;
    size_t n = 0;
    int rc = CFG_OK;

    if (!cJSON_IsArray(node))
        return wrong_type(w, node, path, "a list of strings");
    if (cJSON_GetArraySize(node) == 0 && (f->flags & F_NOT_EMPTY))
        return fail(w, CFG_EINVAL, node, "%s: needs at least one entry", path);
    v = calloc((size_t)cJSON_GetArraySize(node) + 1, sizeof(*v));
    if (v == NULL)
        return fail(w, CFG_ENOMEM, node, "%s: out of memory", path);
    cJSON_ArrayForEach(item, node)
    {
        if (!cJSON_IsString(item))
            rc = fail(w, CFG_EINVAL, item, "%s[%zu]: expected a string, got %s", path, n,
                      type_name(item));
        else if (item->valuestring[0] == '\0')
            rc = fail(w, CFG_EINVAL, item, "%s[%zu]: must not be empty", path, n);
        if (rc != CFG_OK)
            break;
        v[n++] = item->valuestring;
    }
    if (rc == CFG_OK && cfg__strings_copy(at, v, n) != CFG_OK)
        rc = fail(w, CFG_ENOMEM, node, "%s: out of memory", path);
    free(v);
    return rc;
}

/* 1500 -> "1.5", 2000 -> "2". */
static void milli_format(int64_t v, char *buf, size_t len)
{
    char frac[8];
    size_t n;

    snprintf(frac, sizeof(frac), "%03" PRId64, v % 1000);
    for (n = strlen(frac); n > 0 && frac[n - 1] == '0'; n--)
        frac[n - 1] = '\0';
    snprintf(buf, len, "%" PRId64 "%s%s", v / 1000, n ? "." : "", frac);
}

static int check_range(const struct walk *w, const struct field *f, const cJSON *node,
                       const char *path, int64_t v)
{
    char lo[32], hi[32];

    if (v >= f->min && v <= f->max)
        return CFG_OK;
    if (f->kind == K_DURATION) {
        cfg_duration_format(f->min, lo, sizeof(lo));
        cfg_duration_format(f->max, hi, sizeof(hi));
    } else if (f->kind == K_MILLI) {
        milli_format(f->min, lo, sizeof(lo));
        milli_format(f->max, hi, sizeof(hi));
    } else {
        snprintf(lo, sizeof(lo), "%" PRId64, f->min);
        snprintf(hi, sizeof(hi), "%" PRId64, f->max);
    }
    return fail(w, CFG_ERANGE, node, "%s: %s is not in %s..%s", path,
                cfg_docs_scalar_text(w->d, node), lo, hi);
}

static int apply_duration(const struct walk *w, const struct field *f, int64_t *at,
                          const cJSON *node, const char *path)
{
    int64_t ms;
    int rc;

    /* A bare 0 needs no unit: it turns off what may be 0 (fairness.halfLife). */
    if (cJSON_IsNumber(node) && f->min == 0 && cfg_docs_int64(w->d, node, &ms) == CFG_OK &&
        ms == 0) {
        *at = 0;
        return CFG_OK;
    }
    if (!cJSON_IsString(node))
        return wrong_type(w, node, path, "a duration such as \"20s\"");
    rc = cfg_duration_parse(node->valuestring, &ms);
    if (rc == CFG_ERANGE)
        return fail(w, rc, node, "%s: \"%s\" is too long", path, node->valuestring);
    if (rc != CFG_OK)
        return fail(
            w, rc, node,
            "%s: \"%s\" is not a duration in whole milliseconds (e.g. 500ms, 20s, 1m30s, 2h)", path,
            node->valuestring);
    rc = check_range(w, f, node, path, ms);
    if (rc == CFG_OK)
        *at = ms;
    return rc;
}

/* K_SIZE takes "32Mi" or a number of bytes; K_COUNT only a number. */
static int apply_integer(const struct walk *w, const struct field *f, int64_t *at,
                         const cJSON *node, const char *path)
{
    const char *want =
        f->kind == K_SIZE ? "a size such as \"32Mi\" or a number of bytes" : "a whole number";
    int64_t v;
    int rc;

    if (cJSON_IsString(node) && f->kind == K_SIZE)
        rc = cfg_size_parse(node->valuestring, &v);
    else if (cJSON_IsNumber(node))
        rc = cfg_docs_int64(w->d, node, &v);
    else
        return wrong_type(w, node, path, want);
    if (rc == CFG_ERANGE)
        return fail(w, rc, node, "%s: %s is too large", path, cfg_docs_scalar_text(w->d, node));
    if (rc != CFG_OK)
        return fail(w, rc, node, "%s: %s is not %s", path, cfg_docs_scalar_text(w->d, node), want);
    rc = check_range(w, f, node, path, v);
    if (rc == CFG_OK)
        *at = v;
    return rc;
}

/* K_MILLI: a number as written ("1", "0.5"), exact to a thousandth. */
static int apply_milli(const struct walk *w, const struct field *f, int64_t *at, const cJSON *node,
                       const char *path)
{
    const char *text = cfg_docs_scalar_text(w->d, node);
    int64_t v;
    int rc;

    if (!cJSON_IsNumber(node) || text == NULL)
        return wrong_type(w, node, path, "a number such as 1 or 0.5");
    rc = cfg_milli_parse(text, &v);
    if (rc == CFG_ERANGE)
        return fail(w, rc, node, "%s: %s is too large", path, text);
    if (rc != CFG_OK)
        return fail(w, rc, node, "%s: %s is not a number of at most three decimals (e.g. 1, 0.5)",
                    path, text);
    rc = check_range(w, f, node, path, v);
    if (rc == CFG_OK)
        *at = v;
    return rc;
}

static int apply_enum(const struct walk *w, const struct field *f, int *at, const cJSON *node,
                      const char *path)
{
    char list[128] = "";

    if (!cJSON_IsString(node))
        return wrong_type(w, node, path, "a string");
    for (int i = 0; f->names[i] != NULL; i++) {
        if (strcmp(f->names[i], node->valuestring) == 0) {
            *at = i;
            return CFG_OK;
        }
        snprintf(list + strlen(list), sizeof(list) - strlen(list), "%s%s", i ? ", " : "",
                 f->names[i]);
    }
    return fail(w, CFG_EINVAL, node, "%s: \"%s\" is not one of %s", path, node->valuestring, list);
}

static int walk_map(const struct walk *w, const struct field *fields, char *base, const cJSON *obj,
                    const char *path);

static int apply(const struct walk *w, const struct field *f, char *base, const cJSON *node,
                 const char *path)
{
    void *at = base + f->off;

    switch (f->kind) {
    case K_STRING:
    case K_HOSTPORT:
        return apply_string(w, f, at, node, path);
    case K_LIST:
        return apply_list(w, f, at, node, path);
    case K_DURATION:
        return apply_duration(w, f, at, node, path);
    case K_SIZE:
    case K_COUNT:
        return apply_integer(w, f, at, node, path);
    case K_BOOL:
        if (!cJSON_IsBool(node))
            return wrong_type(w, node, path, "true or false");
        *(bool *)at = cJSON_IsTrue(node);
        return CFG_OK;
    case K_MILLI:
        return apply_milli(w, f, at, node, path);
    case K_ENUM:
        return apply_enum(w, f, at, node, path);
    case K_MAP:
        if (!cJSON_IsObject(node))
            return wrong_type(w, node, path, "a mapping");
        return walk_map(w, f->sub, at, node, path);
    }
    return CFG_EINVAL;
}

static int unknown_key(const struct walk *w, const struct field *fields, const cJSON *node,
                       const char *path)
{
    const char *near = cfg__suggest(node->string, &fields[0].key, sizeof(fields[0]));
    char in[96] = "", hint[96] = "";

    if (*path != '\0')
        snprintf(in, sizeof(in), " in %s", path);
    if (near != NULL)
        snprintf(hint, sizeof(hint), " (did you mean \"%s\"?)", near);
    return fail(w, CFG_EINVAL, node, "unknown key \"%s\"%s%s", node->string, in, hint);
}

/* Every key of obj must be one of fields; a null value keeps the default. */
static int walk_map(const struct walk *w, const struct field *fields, char *base, const cJSON *obj,
                    const char *path)
{
    const struct field *f;
    const cJSON *node;
    char sub[256];
    int rc;

    cJSON_ArrayForEach(node, obj)
    {
        for (f = fields; f->key != NULL && strcmp(f->key, node->string) != 0; f++)
            ;
        if (f->key == NULL)
            return unknown_key(w, fields, node, path);
        if (cJSON_IsNull(node))
            continue;
        snprintf(sub, sizeof(sub), "%s%s%s", path, *path ? "." : "", f->key);
        rc = apply(w, f, base, node, sub);
        if (rc != CFG_OK)
            return rc;
    }
    return CFG_OK;
}

int cfg_settings_from_doc(struct cfg_settings *s, const struct cfg_docs *d, const cJSON *root,
                          char *err, size_t errlen)
{
    struct walk w = {d, err, errlen};
    struct cfg_settings next;
    int result;

    result = cfg_settings_init(&next);
    if (result != CFG_OK)
        return fail(&w, result, root, "out of memory");
    if (root != NULL && !cJSON_IsObject(root))
        result = wrong_type(&w, root, "settings", "a mapping");
    if (result == CFG_OK && root != NULL)
        result = walk_map(&w, settings_fields, (char *)&next, root, "");
    if (result == CFG_OK)
        result = cfg__settings_check(&next, d, root, err, errlen);
    if (result != CFG_OK)
        goto out;
    cfg_settings_cleanup(s);
    *s = next;
    return CFG_OK;
out:
    cfg_settings_cleanup(&next);
    return result;
}

int cfg_settings_load(struct cfg_settings *s, const char *path, char *err, size_t errlen)
{
    struct cfg_docs d;
    int result;

    result = cfg_docs_load_file(&d, path, err, errlen);
    if (result != CFG_OK)
        return result;
    if (d.n > 1)
        result = cfg__node_error(&d, d.docs[1], err, errlen, CFG_EINVAL,
                                 "a second document; settings are one YAML document");
    else
        result = cfg_settings_from_doc(s, &d, d.n ? d.docs[0] : NULL, err, errlen);
    cfg_docs_cleanup(&d);
    return result;
}
