/*
 * kubeconfig.h - where the Kubernetes API server is and how to prove who we
 * are to it: in-cluster service account or a kubeconfig file.
 *
 * A struct kube_conn is caller-owned (kube_conn_init / kube_conn_cleanup);
 * every string in it is heap-owned by the struct. kube_client_new() copies
 * what it needs, so the conn can be cleaned up right after.
 */
#ifndef MUSTER_KUBECONFIG_H
#define MUSTER_KUBECONFIG_H

#include <stddef.h>

/* The service account mount every pod gets. */
#define KUBE_SA_DIR "/var/run/secrets/kubernetes.io/serviceaccount"

struct kube_conn {
    char *server;     /* "https://host:port", no trailing slash */
    char *token;      /* a fixed bearer token, or NULL */
    char *token_file; /* bearer token re-read when it rotates, or NULL */
    char *ca_file;    /* PEM bundle to verify the server with, or NULL */
    char *ca_data;    /* ... or the PEM bytes themselves (ca_len long) */
    size_t ca_len;
    char *cert_file; /* client certificate (PEM), or NULL */
    char *cert_data; /* ... or its bytes (cert_len long) */
    size_t cert_len;
    char *key_file; /* client key (PEM), or NULL */
    char *key_data; /* ... or its bytes (key_len long) */
    size_t key_len;
    char *ns;     /* the context's namespace, or NULL */
    int insecure; /* insecure-skip-tls-verify */
};

void kube_conn_init(struct kube_conn *conn);
void kube_conn_cleanup(struct kube_conn *conn);

/*
 * In-cluster: KUBERNETES_SERVICE_HOST / KUBERNETES_SERVICE_PORT from the
 * environment, token and ca.crt from sa_dir (NULL means KUBE_SA_DIR). The
 * token is referenced by path so rotation is picked up. Fills *conn only on
 * success; EXT_ENOTFOUND when not running in a cluster.
 */
int kube_conn_incluster(struct kube_conn *conn, const char *sa_dir, char *err, size_t errlen);

/*
 * A kubeconfig file: context (NULL means current-context) picks the cluster
 * and user. Relative paths in the file are taken relative to its folder,
 * *-data fields are base64-decoded into memory. Errors name the file, the
 * line when there is one, and what is wrong. Fills *conn only on success.
 */
int kube_conn_from_kubeconfig(struct kube_conn *conn, const char *path, const char *context,
                              char *err, size_t errlen);

/*
 * The usual search: an explicit path, else $KUBECONFIG (first entry), else
 * in-cluster, else ~/.kube/config.
 */
int kube_conn_discover(struct kube_conn *conn, const char *path, const char *context, char *err,
                       size_t errlen);

/* Standard base64 (whitespace ignored) into a new NUL-terminated buffer. */
int kube_base64_decode(const char *in, char **out, size_t *outlen);

#endif
