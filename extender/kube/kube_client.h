/*
 * kube_client.h - requests to the Kubernetes API server over libcurl.
 *
 * A struct kube_client is thread-safe: every call borrows a CURL handle from
 * a small pool (so keep-alive connections are reused and concurrent callers
 * do not serialise) and the bearer token is re-read from its file when the
 * file changes, and at least every minute, because service account tokens
 * rotate.
 *
 * Every function returns an ext_err code: EXT_OK on 2xx, EXT_ENOTFOUND on
 * 404, EXT_ECONFLICT on 409, EXT_EGONE on 410, EXT_EHTTP on other statuses,
 * EXT_EIO / EXT_ETIMEOUT on transport failures, EXT_ETOOBIG for a reply over
 * the cap. err (optional) gets one line naming the request, the status and
 * the API server's Status.message.
 */
#ifndef MUSTER_KUBE_CLIENT_H
#define MUSTER_KUBE_CLIENT_H

#include <cjson/cJSON.h>
#include <stddef.h>

#include "kubeconfig.h"

struct kube_client;

struct kube_client_opts {
    long connect_timeout_ms; /* default 5000 */
    long timeout_ms;         /* a whole request; default 30000 */
    size_t max_reply;        /* reply body cap; default 64 MiB */
    const char *user_agent;  /* default "muster/VERSION" */
};

/* conn is copied; opts may be NULL for the defaults. NULL on failure, err says why. */
struct kube_client *kube_client_new(const struct kube_conn *conn,
                                    const struct kube_client_opts *opts, char *err, size_t errlen);
void kube_client_free(struct kube_client *c);

/* The server URL the client talks to ("https://host:port"). */
const char *kube_client_server(const struct kube_client *c);

/*
 * One request. path starts with '/' and may carry a query. body may be NULL;
 * content_type defaults to application/json when there is a body. *status
 * (optional) gets the HTTP status whenever a response arrived, error or not.
 * *reply (optional) gets the parsed JSON body on success (NULL for an empty
 * body); the caller owns it.
 */
int kube_request(struct kube_client *c, const char *method, const char *path,
                 const char *content_type, const char *body, long *status, cJSON **reply, char *err,
                 size_t errlen);

/*
 * POST a v1 Binding of pod ns/name to node. A non-NULL uid becomes
 * metadata.uid, which the API server checks as a precondition (a pod
 * recreated under the same name is not bound by mistake).
 */
int kube_post_binding(struct kube_client *c, const char *ns, const char *name, const char *uid,
                      const char *node, char *err, size_t errlen);

/* PATCH path with a JSON merge patch (application/merge-patch+json). reply may be NULL. */
int kube_patch_merge(struct kube_client *c, const char *path, const cJSON *patch, cJSON **reply,
                     char *err, size_t errlen);

/* The same against the object's /status subresource: object_path + "/status". */
int kube_patch_status(struct kube_client *c, const char *object_path, const cJSON *patch,
                      cJSON **reply, char *err, size_t errlen);

/* POST obj to a collection path. reply may be NULL. */
int kube_create(struct kube_client *c, const char *collection_path, const cJSON *obj, cJSON **reply,
                char *err, size_t errlen);

/* DELETE path. */
int kube_delete(struct kube_client *c, const char *path, char *err, size_t errlen);

/*
 * A core/v1 Event about pod ns/pod_name (pod_uid may be NULL), reported by
 * component "muster". type is "Normal" or "Warning"; message is cut at 1 KiB.
 */
int kube_event_create(struct kube_client *c, const char *ns, const char *pod_name,
                      const char *pod_uid, const char *reason, const char *message,
                      const char *type, char *err, size_t errlen);

/* A namespace or object name fit to be put in a path (DNS subdomain characters, <= 253). */
int kube_name_valid(const char *name);

#endif
