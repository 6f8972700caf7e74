/*
 * fuzz_kube_pod.c - kube_pod_decode (and the pod helpers beside it) on
 * arbitrary JSON, as watch events and extender requests deliver Pods.
 *
 * On success: a name within KUBE_MAX_NAME, a namespace and uid readable, and
 * every list within its cap with readable strings; for a pod whose ask was
 * readable (invalid == NULL), the ask is what the engine may trust:
 * non-negative amounts, a share in [0, 1000) milli-devices and not both a
 * share and a GPU memory ask. On failure: a one-line reason, *out untouched.
 */
#include <stdint.h>

#include "fuzz_kube_json.h"

static void check_affinity(const struct policy_pod_spec *s)
{
    size_t i, j, k;

    fuzz_require(s->naffinity <= KUBE_MAX_LIST, "affinity terms within cap");
    fuzz_require(s->naffinity == 0 || s->affinity != NULL, "a term per count");
    for (i = 0; i < s->naffinity; i++) {
        const struct policy_selector_term *t = &s->affinity[i];

        fuzz_require(t->nreqs <= KUBE_MAX_LIST, "expressions within cap");
        fuzz_require(t->nreqs == 0 || t->reqs != NULL, "an expression per count");
        for (j = 0; j < t->nreqs; j++) {
            const struct policy_selector_req *r = &t->reqs[j];

            fuzz_require_string(r->key, "expression key");
            fuzz_require((unsigned)r->op <= POLICY_SELECT_DOES_NOT_EXIST, "expression operator");
            fuzz_require(r->nvalues <= KUBE_MAX_LIST, "values within cap");
            fuzz_require(r->nvalues == 0 || r->values != NULL, "a value per count");
            for (k = 0; k < r->nvalues; k++)
                fuzz_require_string(r->values[k], "expression value");
        }
    }
}

static void check_tolerations(const struct policy_pod_spec *s)
{
    size_t i;

    fuzz_require(s->ntolerations <= KUBE_MAX_LIST, "tolerations within cap");
    fuzz_require(s->ntolerations == 0 || s->tolerations != NULL, "a toleration per count");
    for (i = 0; i < s->ntolerations; i++) {
        const struct policy_toleration *t = &s->tolerations[i];

        if (t->key != NULL)
            (void)strlen(t->key);
        if (t->value != NULL)
            (void)strlen(t->value);
        fuzz_require((unsigned)t->op <= POLICY_TOLERATE_EXISTS, "toleration operator");
        fuzz_require(t->effect >= -1 && t->effect <= POLICY_TAINT_NO_EXECUTE, "toleration effect");
    }
}

static void check_ask(const struct policy_pod_spec *s)
{
    fuzz_require(s->cpu_milli >= 0 && s->memory_bytes >= 0 && s->gpus >= 0,
                 "a readable ask is not negative");
    fuzz_require(s->gpu_share_milli >= 0 && s->gpu_share_milli < POLICY_GPU_MILLI,
                 "a share is under one device");
    fuzz_require(s->gpu_memory_mib >= 0 && s->gpu_devices >= 0, "share sizes are not negative");
    fuzz_require(s->gpu_share_milli == 0 || s->gpu_memory_mib == 0,
                 "not both gpu-fraction and gpu-memory");
}

static void check_pod(const struct policy_pod_spec *s)
{
    fuzz_require_string(s->name, "metadata.name");
    fuzz_require(s->name[0] != '\0' && strlen(s->name) <= KUBE_MAX_NAME, "name within cap");
    fuzz_require_string(s->namespace_, "metadata.namespace");
    fuzz_require(strlen(s->namespace_) <= KUBE_MAX_NAME, "namespace within cap");
    fuzz_require_string(s->uid, "metadata.uid");
    fuzz_require(s->node == NULL || s->node[0] != '\0', "spec.nodeName is NULL or set");
    if (s->gang != NULL)
        (void)strlen(s->gang);
    if (s->queue != NULL)
        (void)strlen(s->queue);
    if (s->gpu_groups != NULL)
        (void)strlen(s->gpu_groups);
    if (s->invalid != NULL) {
        fuzz_require(s->invalid[0] != '\0', "an invalid ask says why");
        return;
    }
    check_ask(s);
    fuzz_require_labels(s->node_selector, s->nnode_selector, "nodeSelector");
    check_affinity(s);
    check_tolerations(s);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct policy_pod_spec s, untouched;
    const cJSON *where = NULL;
    struct ext_arena *arena;
    char err[256];
    cJSON *doc;
    int rc;

    doc = fuzz_kube_json(data, size);
    if (doc == NULL)
        return 0;
    arena = ext_arena_new();
    fuzz_require(arena != NULL, "arena");
    memset(&s, 0xa5, sizeof(s));
    untouched = s;
    rc = kube_pod_decode(doc, NULL, arena, &s, err, sizeof(err), &where);
    if (rc == EXT_OK) {
        check_pod(&s);
    } else {
        fuzz_require_kube_failure(err, sizeof(err), where);
        fuzz_require(memcmp(&s, &untouched, sizeof(s)) == 0, "out is untouched on failure");
    }
    /* The helpers serve and simulate call on the same untrusted object. */
    (void)kube_pod_is_terminal(doc);
    if (kube_pod_gang_key(doc, arena) != NULL)
        (void)strlen(kube_pod_gang_key(doc, arena));
    ext_arena_free(arena);
    cJSON_Delete(doc);
    return 0;
}
