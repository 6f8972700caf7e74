/* decode_node.c - a Node: labels, taints, allocatable, the GPU memory label. */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "kube_internal.h"

/* ---- Node ---------------------------------------------------------------- */

static int kube__taints(struct kube__ctx *c, const cJSON *list, struct policy_node_spec *s)
{
    struct policy_taint *t;
    const cJSON *e;
    size_t n, i = 0;
    int rc, eff;

    rc = kube__list(c, list, "spec.taints", KUBE_MAX_LIST, &n);
    if (rc != EXT_OK || n == 0)
        return rc;
    t = ext_arena_alloc(c->a, n * sizeof(*t));
    if (t == NULL)
        return kube__fail(c, EXT_ENOMEM, list, "out of memory");
    cJSON_ArrayForEach(e, list)
    {
        const char *effect = NULL;

        rc = kube__string(c, e, "key", "taint key", KUBE_MAX_VALUE, &t[i].key);
        if (rc == EXT_OK)
            rc = kube__string(c, e, "value", "taint value", KUBE_MAX_VALUE, &t[i].value);
        if (rc == EXT_OK)
            rc = kube__string(c, e, "effect", "taint effect", KUBE_MAX_VALUE, &effect);
        if (rc != EXT_OK)
            return rc;
        if (t[i].key == NULL || *t[i].key == '\0')
            return kube__fail(c, EXT_EINVAL, e, "spec.taints: a taint without a key");
        eff = kube__effect_lookup(effect);
        if (eff < 0)
            return kube__fail(c, EXT_EINVAL, e, "taint %.253s: effect \"%.32s\" unknown", t[i].key,
                              effect != NULL ? effect : "");
        t[i].effect = (enum policy_taint_effect)eff;
        i++;
    }
    s->taints = t;
    s->ntaints = n;
    return EXT_OK;
}

struct kube__allocatable {
    const char *name;
    int64_t scale;
    size_t offset;
};

static const struct kube__allocatable kube__node_resources[] = {
    {"cpu", 1000, offsetof(struct policy_node_spec, cpu_milli)},
    {"memory", 1, offsetof(struct policy_node_spec, memory_bytes)},
    {"pods", 1, offsetof(struct policy_node_spec, pods)},
    {EXT_RESOURCE_GPU, 1, offsetof(struct policy_node_spec, gpus)},
};

static int kube__node_allocatable(struct kube__ctx *c, const cJSON *alloc,
                                  struct policy_node_spec *s)
{
    char what[64];
    size_t i;
    int64_t v;
    int rc;

    if (alloc != NULL && !cJSON_IsNull(alloc) && !cJSON_IsObject(alloc))
        return kube__fail(c, EXT_EINVAL, alloc, "status.allocatable: must be a mapping");
    for (i = 0; i < sizeof(kube__node_resources) / sizeof(kube__node_resources[0]); i++) {
        const cJSON *q = kube__get(alloc, kube__node_resources[i].name);

        if (q == NULL)
            continue;
        snprintf(what, sizeof(what), "status.allocatable.%s", kube__node_resources[i].name);
        rc = kube__quantity(c, q, kube__node_resources[i].scale, what, &v);
        if (rc != EXT_OK)
            return rc;
        if (v < 0)
            return kube__fail(c, EXT_EINVAL, q, "%s: negative", what);
        *(int64_t *)((char *)s + kube__node_resources[i].offset) = v;
    }
    return EXT_OK;
}

int kube_node_decode(const cJSON *node, struct ext_arena *a, struct policy_node_spec *out,
                     char *err, size_t errlen, const cJSON **where)
{
    struct kube__ctx c = {a, err, errlen, where};
    struct policy_node_spec s = {0};
    const cJSON *meta, *spec, *mem;
    int rc;

    rc = kube__meta(&c, node, "node", NULL, &s.name);
    if (rc != EXT_OK)
        return rc;
    meta = kube__get(node, "metadata");
    spec = kube__get(node, "spec");
    rc = kube__labels(&c, kube__get(meta, "labels"), "metadata.labels", &s.labels, &s.nlabels);
    if (rc == EXT_OK)
        rc = kube__taints(&c, kube__get(spec, "taints"), &s);
    if (rc == EXT_OK)
        rc = kube__bool(&c, spec, "unschedulable", "spec.unschedulable", &s.unschedulable);
    if (rc == EXT_OK)
        rc = kube__node_allocatable(&c, kube__get(kube__get(node, "status"), "allocatable"), &s);
    if (rc != EXT_OK)
        return rc;
    mem = kube__get(kube__get(meta, "labels"), EXT_LABEL_GPU_MEMORY);
    if (mem != NULL) {
        rc = kube__quantity(&c, mem, 1, "label " EXT_LABEL_GPU_MEMORY, &s.gpu_memory_mib);
        if (rc != EXT_OK)
            return rc;
        if (s.gpu_memory_mib < 0)
            return kube__fail(&c, EXT_EINVAL, mem, "label " EXT_LABEL_GPU_MEMORY ": negative");
    }
    *out = s;
    return EXT_OK;
}
