/*
 * decode.c - what the decoders of Pods, Nodes, Queues and gangs share.
 *
 * Two kinds of wrong: an object that is malformed (a name missing, a
 * quantity that does not parse, a list over its cap) fails with EXT_EINVAL
 * and points at the node; a pod whose GPU ask cannot be honoured (a share
 * that is not a number, a negative request, an affinity operator muster does
 * not evaluate) decodes fine and carries the verdict in spec->invalid, so the
 * engine can answer "unschedulable: why" instead of the caller dropping it.
 */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "config.h"
#include "kube_internal.h"

static const char *const kube__default_queue_keys[] = {EXT_LABEL_QUEUE_MUSTER, EXT_LABEL_QUEUE_KAI,
                                                       EXT_LABEL_QUEUE_VOLCANO};
static const char *const kube__default_schedulers[] = {"muster"};

const struct kube_decode_opts kube_decode_defaults = {
    .queue_label_keys = kube__default_queue_keys,
    .nqueue_label_keys = sizeof(kube__default_queue_keys) / sizeof(kube__default_queue_keys[0]),
    .scheduler_names = kube__default_schedulers,
    .nscheduler_names = 1,
};

/* ---- shared helpers ------------------------------------------------------ */

int kube__fail(struct kube__ctx *c, int code, const cJSON *where, const char *fmt, ...)
{
    va_list ap;

    if (c->err != NULL && c->errlen > 0) {
        va_start(ap, fmt);
        vsnprintf(c->err, c->errlen, fmt, ap);
        va_end(ap);
        cfg_one_line(c->err);
    }
    if (c->where != NULL)
        *c->where = where;
    return code;
}

const cJSON *kube__get(const cJSON *obj, const char *key)
{
    if (!cJSON_IsObject(obj))
        return NULL;
    return cJSON_GetObjectItemCaseSensitive(obj, key);
}

int kube__string(struct kube__ctx *c, const cJSON *obj, const char *key, const char *what,
                 size_t max, const char **out)
{
    const cJSON *n = kube__get(obj, key);

    *out = NULL;
    if (n == NULL || cJSON_IsNull(n))
        return EXT_OK;
    if (!cJSON_IsString(n))
        return kube__fail(c, EXT_EINVAL, n, "%s: must be a string", what);
    if (strlen(n->valuestring) > max)
        return kube__fail(c, EXT_EINVAL, n, "%s: longer than %zu characters", what, max);
    *out = n->valuestring;
    return EXT_OK;
}

int kube__name(struct kube__ctx *c, const cJSON *where, const char *value, enum ext_name_kind kind,
               const char *what)
{
    int rc = ext_name_check(value, kind, what, c->err, c->errlen);

    if (rc != EXT_OK && c->where != NULL)
        *c->where = where;
    return rc;
}

bool kube__object_ref_valid(const char *name)
{
    return ext_name_valid(name, EXT_NAME_LABEL_VALUE) || ext_name_valid(name, EXT_NAME_SUBDOMAIN);
}

int kube__meta(struct kube__ctx *c, const cJSON *obj, const char *kind, const char **ns,
               const char **name)
{
    const cJSON *meta = kube__get(obj, "metadata");
    int rc;

    if (!cJSON_IsObject(obj))
        return kube__fail(c, EXT_EINVAL, obj, "%s: not an object", kind);
    if (meta != NULL && !cJSON_IsObject(meta))
        return kube__fail(c, EXT_EINVAL, meta, "metadata must be a mapping");
    rc = kube__string(c, meta, "name", "metadata.name", KUBE_MAX_NAME, name);
    if (rc != EXT_OK)
        return rc;
    if (*name == NULL || **name == '\0')
        return kube__fail(c, EXT_EINVAL, meta != NULL ? meta : obj, "metadata.name missing");
    rc = kube__name(c, kube__get(meta, "name"), *name, EXT_NAME_SUBDOMAIN, "metadata.name");
    if (rc != EXT_OK || ns == NULL)
        return rc;
    rc = kube__string(c, meta, "namespace", "metadata.namespace", KUBE_MAX_NAME, ns);
    if (rc == EXT_OK && (*ns == NULL || **ns == '\0'))
        *ns = "default";
    if (rc == EXT_OK)
        rc = kube__name(c, kube__get(meta, "namespace"), *ns, EXT_NAME_LABEL, "metadata.namespace");
    return rc;
}

int kube__int64(struct kube__ctx *c, const cJSON *obj, const char *key, const char *what,
                int64_t min, int64_t max, int64_t *out)
{
    const cJSON *n = kube__get(obj, key);
    double d;

    if (n == NULL || cJSON_IsNull(n))
        return EXT_OK;
    if (!cJSON_IsNumber(n))
        return kube__fail(c, EXT_EINVAL, n, "%s: must be an integer", what);
    d = n->valuedouble;
    /* The range first: casting a double beyond int64 is undefined. The bounds
     * the callers use are far inside 2^53, where doubles are exact. */
    if (!(d >= (double)min && d <= (double)max))
        return kube__fail(c, EXT_EINVAL, n, "%s: %.*g outside [%" PRId64 ", %" PRId64 "]", what,
                          d > -1e15 && d < 1e15 ? 15 : 6, d, min, max);
    if (d != (double)(int64_t)d)
        return kube__fail(c, EXT_EINVAL, n, "%s: must be an integer", what);
    *out = (int64_t)d;
    return EXT_OK;
}

int kube__bool(struct kube__ctx *c, const cJSON *obj, const char *key, const char *what, bool *out)
{
    const cJSON *n = kube__get(obj, key);

    *out = false;
    if (n == NULL || cJSON_IsNull(n))
        return EXT_OK;
    if (!cJSON_IsBool(n))
        return kube__fail(c, EXT_EINVAL, n, "%s: must be true or false", what);
    *out = cJSON_IsTrue(n);
    return EXT_OK;
}

int kube__quantity(struct kube__ctx *c, const cJSON *node, int64_t scale, const char *what,
                   int64_t *out)
{
    char num[64];
    const char *text;
    int rc;

    if (cJSON_IsString(node)) {
        text = node->valuestring;
    } else if (cJSON_IsNumber(node)) {
        /* A JSON number lost its text; 15 digits give back what was written. */
        snprintf(num, sizeof(num), "%.15g", node->valuedouble);
        text = num;
    } else {
        return kube__fail(c, EXT_EINVAL, node, "%s: must be a quantity", what);
    }
    rc = kube_quantity_parse(text, scale, out);
    if (rc == EXT_ETOOBIG)
        return kube__fail(c, EXT_EINVAL, node, "%s: quantity \"%.64s\" overflows", what, text);
    if (rc != EXT_OK)
        return kube__fail(c, EXT_EINVAL, node, "%s: \"%.64s\" is not a quantity", what, text);
    return EXT_OK;
}

int kube__labels(struct kube__ctx *c, const cJSON *map, const char *what,
                 const struct policy_label **out, size_t *n)
{
    struct policy_label *l;
    const cJSON *e;
    size_t count = 0, i = 0;

    *out = NULL;
    *n = 0;
    if (map == NULL || cJSON_IsNull(map))
        return EXT_OK;
    if (!cJSON_IsObject(map))
        return kube__fail(c, EXT_EINVAL, map, "%s: must be a mapping", what);
    cJSON_ArrayForEach(e, map) count++;
    if (count > KUBE_MAX_LABELS)
        return kube__fail(c, EXT_EINVAL, map, "%s: %zu entries, over the cap of %d", what, count,
                          KUBE_MAX_LABELS);
    if (count == 0)
        return EXT_OK;
    l = ext_arena_alloc(c->a, count * sizeof(*l));
    if (l == NULL)
        return kube__fail(c, EXT_ENOMEM, map, "out of memory");
    cJSON_ArrayForEach(e, map)
    {
        if (!cJSON_IsString(e))
            return kube__fail(c, EXT_EINVAL, e, "%s: %.253s: value must be a string", what,
                              e->string);
        if (strlen(e->string) > KUBE_MAX_VALUE || strlen(e->valuestring) > KUBE_MAX_VALUE)
            return kube__fail(c, EXT_EINVAL, e, "%s: %.64s: longer than %d characters", what,
                              e->string, KUBE_MAX_VALUE);
        l[i].key = e->string;
        l[i].value = e->valuestring;
        i++;
    }
    *out = l;
    *n = count;
    return EXT_OK;
}

const char *kube__map_value(const cJSON *map, const char *key)
{
    const cJSON *v = kube__get(map, key);

    return cJSON_IsString(v) ? v->valuestring : NULL;
}

const char *kube__queue_label(const cJSON *labels, const struct kube_decode_opts *o)
{
    size_t i;
    const char *v;

    for (i = 0; i < o->nqueue_label_keys; i++) {
        v = kube__map_value(labels, o->queue_label_keys[i]);
        if (v != NULL && *v != '\0')
            return v;
    }
    return NULL;
}

char *kube__key(struct ext_arena *a, const char *ns, const char *name)
{
    size_t nl = strlen(ns), ml = strlen(name);
    char *k = ext_arena_alloc(a, nl + ml + 2);

    if (k == NULL)
        return NULL;
    memcpy(k, ns, nl);
    k[nl] = '/';
    memcpy(k + nl + 1, name, ml + 1);
    return k;
}

struct kube__effect {
    const char *name;
    enum policy_taint_effect effect;
};

static const struct kube__effect kube__effects[] = {
    {"NoSchedule", POLICY_TAINT_NO_SCHEDULE},
    {"PreferNoSchedule", POLICY_TAINT_PREFER_NO_SCHEDULE},
    {"NoExecute", POLICY_TAINT_NO_EXECUTE},
};

int kube__effect_lookup(const char *s)
{
    size_t i;

    for (i = 0; s != NULL && i < sizeof(kube__effects) / sizeof(kube__effects[0]); i++) {
        if (strcmp(s, kube__effects[i].name) == 0)
            return (int)kube__effects[i].effect;
    }
    return -1;
}

/* A list member: absent/null -> 0 items; not a list or over the cap -> error. */
int kube__list(struct kube__ctx *c, const cJSON *list, const char *what, size_t cap, size_t *n)
{
    *n = 0;
    if (list == NULL || cJSON_IsNull(list))
        return EXT_OK;
    if (!cJSON_IsArray(list))
        return kube__fail(c, EXT_EINVAL, list, "%s: must be a list", what);
    *n = (size_t)cJSON_GetArraySize(list);
    if (*n > cap)
        return kube__fail(c, EXT_EINVAL, list, "%s: %zu items, over the cap of %zu", what, *n, cap);
    return EXT_OK;
}
