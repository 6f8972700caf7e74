/*
 * fuzz_kube_node.c - kube_node_decode on arbitrary JSON, as the node watch
 * and --offline manifests deliver Nodes.
 *
 * On success: a name within KUBE_MAX_NAME, labels and taints within their
 * caps with readable strings and a known taint effect, and allocatable
 * amounts that are not negative. On failure: a one-line reason, *out untouched.
 */
#include <stdint.h>

#include "fuzz_kube_json.h"

static void check_node(const struct policy_node_spec *s)
{
    size_t i;

    fuzz_require_string(s->name, "metadata.name");
    fuzz_require(s->name[0] != '\0' && strlen(s->name) <= KUBE_MAX_NAME, "name within cap");
    fuzz_require_labels(s->labels, s->nlabels, "metadata.labels");
    fuzz_require(s->ntaints <= KUBE_MAX_LIST, "taints within cap");
    fuzz_require(s->ntaints == 0 || s->taints != NULL, "a taint per count");
    for (i = 0; i < s->ntaints; i++) {
        fuzz_require_string(s->taints[i].key, "taint key");
        if (s->taints[i].value != NULL)
            (void)strlen(s->taints[i].value);
        fuzz_require((unsigned)s->taints[i].effect <= POLICY_TAINT_NO_EXECUTE, "taint effect");
    }
    fuzz_require(s->cpu_milli >= 0 && s->memory_bytes >= 0 && s->pods >= 0 && s->gpus >= 0 &&
                     s->gpu_memory_mib >= 0,
                 "allocatable is not negative");
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct policy_node_spec s, untouched;
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
    rc = kube_node_decode(doc, arena, &s, err, sizeof(err), &where);
    if (rc == EXT_OK) {
        check_node(&s);
    } else {
        fuzz_require_kube_failure(err, sizeof(err), where);
        fuzz_require(memcmp(&s, &untouched, sizeof(s)) == 0, "out is untouched on failure");
    }
    ext_arena_free(arena);
    cJSON_Delete(doc);
    return 0;
}
