/*
 * fuzz_yaml_docs.c - cfg_docs_parse (YAML into cJSON with line numbers) on
 * arbitrary bytes: settings files and --offline / simulate manifests.
 *
 * On success: n non-NULL roots, nesting within CFG_DOCS_MAX_DEPTH, every node
 * has a line, every scalar its original text and no container one, numbers
 * are finite, cfg_docs_int64 answers within its error table. On failure: a
 * one-line reason naming the file, *out untouched.
 */
#include <math.h>
#include <stdint.h>

#include "config.h"
#include "fuzz_common.h"

#define FUZZ_NAME "fuzz.yaml"

static void check_node(const struct cfg_docs *d, const cJSON *node, size_t depth)
{
    const cJSON *child;
    int64_t v;
    int rc;

    fuzz_require(depth <= CFG_DOCS_MAX_DEPTH + 1, "nesting within CFG_DOCS_MAX_DEPTH");
    fuzz_require(cfg_docs_line(d, node) >= 1, "every node has a line");
    if (cJSON_IsObject(node) || cJSON_IsArray(node)) {
        fuzz_require(cfg_docs_scalar_text(d, node) == NULL, "containers have no scalar text");
        cJSON_ArrayForEach(child, node) {
            if (cJSON_IsObject(node))
                fuzz_require_string(child->string, "mapping keys are strings");
            check_node(d, child, depth + 1);
        }
        return;
    }
    fuzz_require_string(cfg_docs_scalar_text(d, node), "scalars keep their text");
    if (cJSON_IsString(node))
        fuzz_require_string(node->valuestring, "string value");
    if (!cJSON_IsNumber(node))
        return;
    fuzz_require(isfinite(node->valuedouble), "numbers are finite");
    rc = cfg_docs_int64(d, node, &v);
    fuzz_require(rc == CFG_OK || rc == CFG_EINVAL || rc == CFG_ERANGE, "int64 error table");
    fuzz_require(cfg_strerror(rc) != NULL, "strerror");
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct cfg_docs d, untouched;
    char err[256];
    size_t i;
    int rc;

    memset(&d, 0xa5, sizeof(d));
    untouched = d;
    rc = cfg_docs_parse(&d, FUZZ_NAME, (const char *)data, size, err, sizeof(err));
    if (rc != CFG_OK) {
        fuzz_require(rc < 0 && strcmp(cfg_strerror(rc), "unknown error") != 0, "error table");
        fuzz_require_err(err, sizeof(err));
        fuzz_require(strncmp(err, FUZZ_NAME, strlen(FUZZ_NAME)) == 0, "errors name the file");
        fuzz_require(memcmp(&d, &untouched, sizeof(d)) == 0, "out is untouched on failure");
        return 0;
    }
    fuzz_require(d.n == 0 || d.docs != NULL, "a root per document");
    for (i = 0; i < d.n; i++) {
        fuzz_require(d.docs[i] != NULL, "roots are not NULL");
        check_node(&d, d.docs[i], 1);
    }
    cfg_docs_cleanup(&d);
    return 0;
}
