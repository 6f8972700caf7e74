/*
 * fuzz_filter_args.c - ExtenderArgs (filter and prioritize) from arbitrary bytes.
 *
 * On success: the Pod is an object, at most max_names candidates, every name
 * readable, full-form candidates are objects; and the replies built from the
 * args (filter with every verdict, prioritize) are valid JSON that give the
 * names back in order. On failure: a one-line reason and *out untouched.
 * Differential: the NodeNames fast path and the cJSON path
 * (ext_filter_args_decode_reference) give the same code and reason, or the same
 * form, Pod and names in the same order.
 */
#include <stdint.h>

#include "fuzz_common.h"

static const char *const reasons[] = {NULL, "insufficient nvidia.com/gpu", "gang \"x\"\n\x01"};

static void check_filter_reply(const struct ext_filter_args *a)
{
    struct ext_filter_answer ans = {0};
    const cJSON *passed, *item;
    char *out = NULL;
    size_t len = 0, i;
    cJSON *doc;

    ans.pool = ext_arena_new();
    fuzz_require(ans.pool != NULL, "pool");
    ans.verdicts = ext_arena_calloc(ans.pool, a->n + 1, sizeof(*ans.verdicts));
    fuzz_require(ans.verdicts != NULL, "pool calloc");
    for (i = 0; i < a->n; i++) {
        ans.verdicts[i].verdict = (enum ext_verdict)(i % 3);
        ans.verdicts[i].reason = reasons[i % 3];
    }
    fuzz_require(ext_filter_result_encode(a, &ans, &out, &len) == EXT_OK, "filter reply encodes");
    doc = fuzz_parse_encoded(out, len);
    passed =
        cJSON_GetObjectItemCaseSensitive(doc, a->form == EXT_NODES_FULL ? "Nodes" : "NodeNames");
    if (a->form == EXT_NODES_FULL)
        passed = cJSON_GetObjectItemCaseSensitive(passed, "items");
    fuzz_require(cJSON_IsArray(passed), "passing candidates are a list");
    item = passed->child;
    for (i = 0; i < a->n; i += 3) {
        const cJSON *name = item;

        fuzz_require(item != NULL, "every passing candidate is in the reply");
        if (a->form == EXT_NODES_FULL)
            name = ext_json_get(ext_json_get(item, "metadata"), "name");
        fuzz_require(cJSON_IsString(name) && strcmp(name->valuestring, a->names[i]) == 0,
                     "passing candidates come back in order, unchanged");
        item = item->next;
    }
    fuzz_require(item == NULL, "no extra candidates in the reply");
    cJSON_Delete(doc);
    ext_arena_free(ans.pool);
}

static void check_priority_reply(const struct ext_filter_args *a)
{
    struct ext_priority_answer ans = {0};
    const cJSON *item;
    char *out = NULL;
    size_t len = 0, i = 0;
    cJSON *doc;

    ans.pool = ext_arena_new();
    fuzz_require(ans.pool != NULL, "pool");
    ans.scores = ext_arena_calloc(ans.pool, a->n + 1, sizeof(*ans.scores));
    fuzz_require(ans.scores != NULL, "pool calloc");
    for (i = 0; i < a->n; i++)
        ans.scores[i] = (int)(i * 7 % 23) - 6; /* out of 0..10 too: the encoder clamps */
    fuzz_require(ext_priority_list_encode(a, &ans, &out, &len) == EXT_OK, "priorities encode");
    doc = fuzz_parse_encoded(out, len);
    fuzz_require(cJSON_IsArray(doc), "HostPriorityList is a list");
    i = 0;
    cJSON_ArrayForEach(item, doc)
    {
        const cJSON *host = cJSON_GetObjectItemCaseSensitive(item, "Host");
        const cJSON *score = cJSON_GetObjectItemCaseSensitive(item, "Score");

        fuzz_require(i < a->n, "one priority per candidate");
        fuzz_require(cJSON_IsString(host) && strcmp(host->valuestring, a->names[i]) == 0,
                     "priorities name the candidates in order");
        fuzz_require(cJSON_IsNumber(score) && score->valueint >= 0 && score->valueint <= 10,
                     "scores are 0..10");
        i++;
    }
    fuzz_require(i == a->n, "every candidate has a priority");
    cJSON_Delete(doc);
    ext_arena_free(ans.pool);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* The reference decoder agrees with the fast one: same failure, or same candidates. */
static void check_reference(const uint8_t *data, size_t size, int rc, const char *err,
                            const struct ext_filter_args *a)
{
    struct ext_filter_args ref;
    char ref_err[256];
    size_t i;
    int ref_rc;

    ref_rc = ext_filter_args_decode_reference((const char *)data, size, &fuzz_limits, &ref, ref_err,
                                              sizeof(ref_err));
    fuzz_require(ref_rc == rc, "fast and reference decoders return the same code");
    if (rc != EXT_OK) {
        fuzz_require(strcmp(ref_err, err) == 0, "fast and reference decoders give the same reason");
        return;
    }
    fuzz_require(ref.form == a->form && ref.n == a->n, "same form and number of candidates");
    /* cJSON_Compare looks duplicate keys up by name and so fails on a Pod with
     * "k":1,...,"k":2 even against itself: compare the printed trees instead. */
    {
        char *x = cJSON_PrintUnformatted(ref.pod), *y = cJSON_PrintUnformatted(a->pod);

        fuzz_require(x && y && strcmp(x, y) == 0, "same Pod");
        free(x);
        free(y);
    }
    for (i = 0; i < a->n; i++)
        fuzz_require(strcmp(ref.names[i], a->names[i]) == 0, "same names in the same order");
    ext_filter_args_cleanup(&ref);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct ext_filter_args a, untouched;
    char err[256];
    size_t i;
    int rc;

    memset(&a, 0xa5, sizeof(a));
    untouched = a;
    rc = ext_filter_args_decode((const char *)data, size, &fuzz_limits, &a, err, sizeof(err));
    check_reference(data, size, rc, err, &a);
    if (rc != EXT_OK) {
        fuzz_require_err(err, sizeof(err));
        fuzz_require(memcmp(&a, &untouched, sizeof(a)) == 0, "out is untouched on failure");
        return 0;
    }
    fuzz_require(a.doc != NULL && a.mem != NULL, "a decoded request owns its doc and pool");
    fuzz_require(cJSON_IsObject(a.pod), "Pod is an object");
    fuzz_require(a.n <= fuzz_limits.max_names, "candidates within max_names");
    fuzz_require(a.n == 0 || a.names != NULL, "names for every candidate");
    fuzz_require(a.form == EXT_NODES_FULL || a.nodes == NULL, "nodes only in the full form");
    for (i = 0; i < a.n; i++) {
        fuzz_require_string(a.names[i], "every candidate has a name");
        fuzz_require(strlen(a.names[i]) <= fuzz_limits.max_string, "names within max_string");
        if (a.form == EXT_NODES_FULL)
            fuzz_require(cJSON_IsObject(a.nodes[i]), "full-form candidates are objects");
    }
    check_filter_reply(&a);
    check_priority_reply(&a);
    ext_filter_args_cleanup(&a);
    return 0;
}
