/*
 * fuzz_webhook_review.c - the GPU-sharing admission webhook on arbitrary
 * bytes, as the API server (or anyone reaching the port) POSTs them.
 *
 * On success: an AdmissionReview with the request's apiVersion and uid and an
 * allowed flag; a rejection says why; an allowed Pod's patch is base64 of a
 * JSONPatch array whose ops each have an op and a path. On failure: a
 * one-line reason and no reply.
 */
#include <stdint.h>

#include "fuzz_common.h"
#include "gpushare.h"

static int b64_value(unsigned char c)
{
    static const char alphabet[] =
        "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    const char *p = c != '\0' ? strchr(alphabet, c) : NULL;

    return p != NULL ? (int)(p - alphabet) : -1;
}

/* Standard base64 with padding into a malloc'd NUL-terminated buffer. */
static char *b64_decode(const char *s)
{
    size_t len = strlen(s), i, o = 0;
    char *out;

    fuzz_require(len % 4 == 0, "patch is padded base64");
    out = malloc(len / 4 * 3 + 1);
    fuzz_require(out != NULL, "malloc");
    for (i = 0; i < len; i += 4) {
        int v[4], k;

        for (k = 0; k < 4; k++) {
            v[k] =
                s[i + k] == '=' && i + 4 == len && k >= 2 ? 0 : b64_value((unsigned char)s[i + k]);
            fuzz_require(v[k] >= 0, "patch is base64");
        }
        out[o++] = (char)(v[0] << 2 | v[1] >> 4);
        if (s[i + 2] != '=')
            out[o++] = (char)((v[1] & 15) << 4 | v[2] >> 2);
        if (s[i + 3] != '=')
            out[o++] = (char)((v[2] & 3) << 6 | v[3]);
    }
    out[o] = '\0';
    return out;
}

static void check_patch(const cJSON *resp)
{
    const cJSON *type = cJSON_GetObjectItemCaseSensitive(resp, "patchType");
    const cJSON *patch = cJSON_GetObjectItemCaseSensitive(resp, "patch"), *op;
    cJSON *ops;
    char *text;

    if (patch == NULL) {
        fuzz_require(type == NULL, "patchType only with a patch");
        return;
    }
    fuzz_require(cJSON_IsString(type) && strcmp(type->valuestring, "JSONPatch") == 0,
                 "patchType JSONPatch");
    fuzz_require(cJSON_IsString(patch), "patch is a string");
    text = b64_decode(patch->valuestring);
    ops = cJSON_Parse(text);
    fuzz_require(cJSON_IsArray(ops) && cJSON_GetArraySize(ops) > 0, "patch is a JSONPatch array");
    cJSON_ArrayForEach(op, ops)
    {
        const cJSON *name = cJSON_GetObjectItemCaseSensitive(op, "op");
        const cJSON *path = cJSON_GetObjectItemCaseSensitive(op, "path");

        fuzz_require(cJSON_IsString(name) && cJSON_IsString(path) && path->valuestring[0] == '/',
                     "every op has an op and a /path");
    }
    cJSON_Delete(ops);
    free(text);
}

static void check_reply(const uint8_t *data, size_t size, char *out, size_t len)
{
    cJSON *req_doc = cJSON_ParseWithLength((const char *)data, size);
    cJSON *doc = fuzz_parse_encoded(out, len);
    const cJSON *resp = cJSON_GetObjectItemCaseSensitive(doc, "response");
    const cJSON *uid = cJSON_GetObjectItemCaseSensitive(resp, "uid");
    const cJSON *want_uid = cJSON_GetObjectItemCaseSensitive(
        cJSON_GetObjectItemCaseSensitive(req_doc, "request"), "uid");
    const cJSON *api = cJSON_GetObjectItemCaseSensitive(doc, "apiVersion");
    const cJSON *want_api = cJSON_GetObjectItemCaseSensitive(req_doc, "apiVersion");
    const cJSON *allowed = cJSON_GetObjectItemCaseSensitive(resp, "allowed");
    const cJSON *message = cJSON_GetObjectItemCaseSensitive(
        cJSON_GetObjectItemCaseSensitive(resp, "status"), "message");

    fuzz_require(req_doc != NULL, "only JSON is answered");
    fuzz_require(cJSON_IsString(want_uid) && cJSON_IsString(uid) &&
                     strcmp(uid->valuestring, want_uid->valuestring) == 0,
                 "response.uid is request.uid");
    fuzz_require(cJSON_IsString(want_api) && cJSON_IsString(api) &&
                     strcmp(api->valuestring, want_api->valuestring) == 0,
                 "the reply speaks the request's apiVersion");
    fuzz_require(cJSON_IsBool(allowed), "response.allowed is a boolean");
    if (cJSON_IsFalse(allowed))
        fuzz_require(cJSON_IsString(message) && message->valuestring[0] != '\0',
                     "a rejection says why");
    else
        check_patch(resp);
    cJSON_Delete(doc);
    cJSON_Delete(req_doc);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct webhook_opts o = {
        .runtime_class_name = "nvidia",
        .cluster_has_gpu_memory_labels = size % 2 == 0,
        .limits = &fuzz_limits,
    };
    char *out = (char *)&o; /* a sentinel: must stay on failure */
    size_t len = 0;
    char err[256];
    int rc;

    rc = webhook_review((const char *)data, size, &o, &out, &len, err, sizeof(err));
    if (rc != EXT_OK) {
        fuzz_require_err(err, sizeof(err));
        fuzz_require(out == (char *)&o, "no reply on failure");
        return 0;
    }
    check_reply(data, size, out, len);
    return 0;
}
