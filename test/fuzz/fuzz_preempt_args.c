/*
 * fuzz_preempt_args.c - ExtenderPreemptionArgs from arbitrary bytes.
 *
 * On success: the Pod is an object, at most max_names nodes and max_names
 * victims per node, every node name and UID readable, Pod objects only in the
 * full form; and the reply that keeps every node with its victims is valid
 * JSON naming the same nodes and UIDs. On failure: a one-line reason and
 * *out untouched.
 */
#include <stdint.h>

#include "fuzz_common.h"

static void check_reply(const struct ext_preempt_args *a)
{
    struct ext_preempt_answer ans = {0};
    struct ext_meta_victims *kept;
    const cJSON *map, *entry;
    char *out = NULL;
    size_t len = 0, i;
    cJSON *doc;

    ans.pool = ext_arena_new();
    fuzz_require(ans.pool != NULL, "pool");
    kept = ext_arena_calloc(ans.pool, a->n + 1, sizeof(*kept));
    fuzz_require(kept != NULL, "pool calloc");
    for (i = 0; i < a->n; i++) {
        kept[i].node = a->nodes[i].node;
        kept[i].npods = a->nodes[i].npods;
        kept[i].uids = a->nodes[i].uids;
        kept[i].num_pdb_violations = a->nodes[i].num_pdb_violations;
    }
    ans.n = a->n;
    ans.nodes = kept;
    fuzz_require(ext_preemption_result_encode(&ans, &out, &len) == EXT_OK, "preempt reply encodes");
    doc = fuzz_parse_encoded(out, len);
    map = cJSON_GetObjectItemCaseSensitive(doc, "NodeNameToMetaVictims");
    fuzz_require(cJSON_IsObject(map), "NodeNameToMetaVictims is an object");
    i = 0;
    cJSON_ArrayForEach(entry, map)
    {
        const cJSON *pods = cJSON_GetObjectItemCaseSensitive(entry, "Pods"), *pod;
        size_t j = 0;

        fuzz_require(i < a->n, "one entry per node");
        fuzz_require(strcmp(entry->string, a->nodes[i].node) == 0, "nodes in order, unchanged");
        cJSON_ArrayForEach(pod, pods)
        {
            const cJSON *uid = cJSON_GetObjectItemCaseSensitive(pod, "UID");

            fuzz_require(j < a->nodes[i].npods, "one UID per victim");
            fuzz_require(cJSON_IsString(uid) && strcmp(uid->valuestring, a->nodes[i].uids[j]) == 0,
                         "victim UIDs in order, unchanged");
            j++;
        }
        fuzz_require(j == a->nodes[i].npods, "every victim is in the reply");
        i++;
    }
    fuzz_require(i == a->n, "every node is in the reply");
    cJSON_Delete(doc);
    ext_arena_free(ans.pool);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct ext_preempt_args a, untouched;
    char err[256];
    size_t i, j;
    int rc;

    memset(&a, 0xa5, sizeof(a));
    untouched = a;
    rc = ext_preempt_args_decode((const char *)data, size, &fuzz_limits, &a, err, sizeof(err));
    if (rc != EXT_OK) {
        fuzz_require_err(err, sizeof(err));
        fuzz_require(memcmp(&a, &untouched, sizeof(a)) == 0, "out is untouched on failure");
        return 0;
    }
    fuzz_require(a.doc != NULL && a.mem != NULL, "a decoded request owns its doc and pool");
    fuzz_require(cJSON_IsObject(a.pod), "Pod is an object");
    fuzz_require(a.n <= fuzz_limits.max_names, "nodes within max_names");
    fuzz_require(a.n == 0 || a.nodes != NULL, "an entry per node");
    for (i = 0; i < a.n; i++) {
        const struct ext_victims *v = &a.nodes[i];

        fuzz_require_string(v->node, "every node has a name");
        fuzz_require(v->npods <= fuzz_limits.max_names, "victims within max_names");
        fuzz_require(v->npods == 0 || v->uids != NULL, "a UID per victim");
        fuzz_require(a.meta ? v->pods == NULL : (v->npods == 0 || v->pods != NULL),
                     "Pod objects only in the full form");
        for (j = 0; j < v->npods; j++) {
            fuzz_require_string(v->uids[j], "every victim has a UID");
            if (!a.meta)
                fuzz_require(cJSON_IsObject(v->pods[j]), "full-form victims are objects");
        }
    }
    check_reply(&a);
    ext_preempt_args_cleanup(&a);
    return 0;
}
