/*
 * fuzz_bind_args.c - ExtenderBindingArgs from arbitrary bytes.
 *
 * On success: PodName, PodNamespace and Node are readable and not empty,
 * PodUID is readable (may be ""), and a binding reply carrying any of them as
 * its error is valid JSON that gives it back. On failure: a one-line reason
 * and *out untouched.
 */
#include <stdint.h>

#include "fuzz_common.h"

static void check_reply(const char *error)
{
    struct ext_bind_answer ans = {.error = error};
    const cJSON *e;
    char *out = NULL;
    size_t len = 0;
    cJSON *doc;

    fuzz_require(ext_binding_result_encode(&ans, &out, &len) == EXT_OK, "binding reply encodes");
    doc = fuzz_parse_encoded(out, len);
    e = cJSON_GetObjectItemCaseSensitive(doc, "Error");
    fuzz_require(cJSON_IsString(e) && strcmp(e->valuestring, error) == 0,
                 "the binding error comes back unchanged");
    cJSON_Delete(doc);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct ext_bind_args a, untouched;
    char err[256];
    int rc;

    memset(&a, 0xa5, sizeof(a));
    untouched = a;
    rc = ext_bind_args_decode((const char *)data, size, &fuzz_limits, &a, err, sizeof(err));
    if (rc != EXT_OK) {
        fuzz_require_err(err, sizeof(err));
        fuzz_require(memcmp(&a, &untouched, sizeof(a)) == 0, "out is untouched on failure");
        return 0;
    }
    fuzz_require(a.doc != NULL, "a decoded request owns its doc");
    fuzz_require_string(a.pod_name, "PodName");
    fuzz_require_string(a.pod_namespace, "PodNamespace");
    fuzz_require_string(a.pod_uid, "PodUID");
    fuzz_require_string(a.node, "Node");
    fuzz_require(a.pod_name[0] != '\0' && a.pod_namespace[0] != '\0' && a.node[0] != '\0',
                 "required strings are not empty");
    check_reply(a.node);
    check_reply(a.pod_name);
    ext_bind_args_cleanup(&a);
    return 0;
}
