/*
 * settings_check.c - rules between settings that no single key can check:
 * pairs that go together and durations that must nest. Runs after every key
 * was read, so it sees the defaults too; it blames the node that was written.
 */
#include <stdio.h>
#include <string.h>

#include "cfg_internal.h"

/* root.a.b, or NULL where the file does not say it. */
static const cJSON *node_at(const cJSON *root, const char *a, const char *b)
{
    const cJSON *n = cJSON_GetObjectItemCaseSensitive(root, a);

    return b != NULL ? cJSON_GetObjectItemCaseSensitive(n, b) : n;
}

static int check_tls_pair(const struct cfg_tls *t, const struct cfg_docs *d, const cJSON *node,
                          const char *path, char *err, size_t errlen)
{
    if ((t->cert_file == NULL) != (t->key_file == NULL))
        return cfg__node_error(d, node, err, errlen, CFG_EINVAL,
                               "%s: certFile and keyFile go together; %s is missing", path,
                               t->cert_file == NULL ? "certFile" : "keyFile");
    if (t->client_ca_file != NULL && t->cert_file == NULL)
        return cfg__node_error(d, node, err, errlen, CFG_EINVAL,
                               "%s: clientCAFile needs certFile and keyFile (client "
                               "certificates are a part of TLS)",
                               path);
    return CFG_OK;
}

/* Bodies being received must have room for one of the largest. */
static int check_buffered(const struct cfg_settings *s, const struct cfg_docs *d, const cJSON *root,
                          char *err, size_t errlen)
{
    const cJSON *node = node_at(root, "server", "maxBufferedBytes");

    if (s->server.max_buffered >= s->max_body_bytes)
        return CFG_OK;
    return cfg__node_error(d, node != NULL ? node : node_at(root, "maxBodyBytes", NULL), err,
                           errlen, CFG_EINVAL,
                           "server.maxBufferedBytes: %lld bytes is less than maxBodyBytes (%lld)",
                           (long long)s->server.max_buffered, (long long)s->max_body_bytes);
}

/* shorter must be below longer; blame shorter's node if written, else longer's. */
static int check_shorter(int64_t shorter, int64_t longer, const char *shorter_path,
                         const char *longer_path, const cJSON *shorter_node,
                         const cJSON *longer_node, const struct cfg_docs *d, char *err,
                         size_t errlen)
{
    char a[32], b[32];

    if (shorter < longer)
        return CFG_OK;
    cfg_duration_format(shorter, a, sizeof(a));
    cfg_duration_format(longer, b, sizeof(b));
    return cfg__node_error(d, shorter_node != NULL ? shorter_node : longer_node, err, errlen,
                           CFG_EINVAL, "%s: %s must be shorter than %s (%s)", shorter_path, a,
                           longer_path, b);
}

static int check_webhook(const struct cfg_gpu_sharing *g, const struct cfg_docs *d, const cJSON *gs,
                         char *err, size_t errlen)
{
    const cJSON *listen = cJSON_GetObjectItemCaseSensitive(gs, "webhookListen");
    int rc;

    rc = check_tls_pair(&g->webhook_tls, d, cJSON_GetObjectItemCaseSensitive(gs, "webhookTLS"),
                        "gpuSharing.webhookTLS", err, errlen);
    if (rc != CFG_OK || g->webhook_listen[0] == '\0' || g->webhook_tls.cert_file != NULL)
        return rc;
    return cfg__node_error(d, listen, err, errlen, CFG_EINVAL,
                           "gpuSharing.webhookListen: needs gpuSharing.webhookTLS "
                           "(the API server calls webhooks over HTTPS)");
}

int cfg__settings_check(const struct cfg_settings *s, const struct cfg_docs *d, const cJSON *root,
                        char *err, size_t errlen)
{
    int rc;

    rc = check_tls_pair(&s->tls, d, node_at(root, "tls", NULL), "tls", err, errlen);
    if (rc == CFG_OK)
        rc = check_webhook(&s->gpu_sharing, d, node_at(root, "gpuSharing", NULL), err, errlen);
    if (rc == CFG_OK)
        rc = check_shorter(s->bind_wait_ms, s->plan_ttl_ms, "bindWait", "planTTL",
                           node_at(root, "bindWait", NULL), node_at(root, "planTTL", NULL), d, err,
                           errlen);
    if (rc == CFG_OK)
        rc = check_buffered(s, d, root, err, errlen);
    return rc;
}
