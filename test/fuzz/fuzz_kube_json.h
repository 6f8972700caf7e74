/*
 * fuzz_kube_json.h - arbitrary bytes into the cJSON a Kubernetes decoder
 * reads, the way serve gets it: capped by ext_json_precheck, then parsed.
 */
#ifndef MUSTER_FUZZ_KUBE_JSON_H
#define MUSTER_FUZZ_KUBE_JSON_H

#include "fuzz_common.h"
#include "kube.h"
#include "kube_internal.h"

/* The parsed document, or NULL when the bytes are not capped JSON. */
static inline cJSON *fuzz_kube_json(const uint8_t *data, size_t size)
{
    char err[256];

    if (ext_json_precheck((const char *)data, size, &fuzz_limits, err, sizeof(err)) != EXT_OK)
        return NULL;
    return cJSON_ParseWithLength((const char *)data, size);
}

static inline void fuzz_require_labels(const struct policy_label *l, size_t n, const char *what)
{
    size_t i;

    fuzz_require(n <= KUBE_MAX_LABELS, what);
    fuzz_require(n == 0 || l != NULL, what);
    for (i = 0; i < n; i++) {
        fuzz_require_string(l[i].key, what);
        fuzz_require_string(l[i].value, what);
    }
}

/* After a decoder failed: a one-line reason, and where (if set) is a live node. */
static inline void fuzz_require_kube_failure(const char *err, size_t errlen, const cJSON *where)
{
    fuzz_require_err(err, errlen);
    if (where != NULL)
        (void)cJSON_IsObject(where);
}

#endif
