/* kubeconfig.c - in-cluster service account and kubeconfig files into a struct kube_conn. */
#include "kube.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <yaml.h>

#include "base.h"

#define KUBECONFIG_MAX (4 << 20) /* bigger than any kubeconfig we should trust */

void kube_conn_init(struct kube_conn *conn)
{
    memset(conn, 0, sizeof(*conn));
}

void kube_conn_cleanup(struct kube_conn *conn)
{
    if (!conn)
        return;
    free(conn->server);
    free(conn->token);
    free(conn->token_file);
    free(conn->ca_file);
    free(conn->ca_data);
    free(conn->cert_file);
    free(conn->cert_data);
    free(conn->key_file);
    free(conn->key_data);
    free(conn->ns);
    memset(conn, 0, sizeof(*conn));
}

static int b64_value(unsigned char ch)
{
    static const char alphabet[] =
        "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    const char *p = ch ? strchr(alphabet, ch) : NULL;

    return p ? (int)(p - alphabet) : -1;
}

int kube_base64_decode(const char *in, char **out, size_t *outlen)
{
    size_t inlen = strlen(in), n = 0, pad = 0;
    unsigned acc = 0, bits = 0;
    char *buf = malloc(inlen / 4 * 3 + 4);

    if (!buf)
        return EXT_ENOMEM;
    for (const char *p = in; *p; p++) {
        int v;

        if (*p == ' ' || *p == '\n' || *p == '\r' || *p == '\t')
            continue;
        if (*p == '=') {
            pad++;
            continue;
        }
        v = b64_value((unsigned char)*p);
        if (v < 0 || pad) /* a stray byte, or data after padding */
            goto bad;
        acc = (acc << 6) | (unsigned)v;
        bits += 6;
        if (bits >= 8) {
            bits -= 8;
            buf[n++] = (char)((acc >> bits) & 0xff);
        }
    }
    if (pad > 2 || bits >= 6)
        goto bad;
    buf[n] = '\0';
    *out = buf;
    *outlen = n;
    return EXT_OK;
bad:
    free(buf);
    return EXT_EINVAL;
}

/* ---- in-cluster ---------------------------------------------------------------------------- */

static char *path_join(const char *dir, const char *name)
{
    char *p;

    if (name[0] == '/' || !dir || !dir[0])
        return strdup(name);
    if (asprintf(&p, "%s/%s", dir, name) < 0)
        return NULL;
    return p;
}

static char *read_small_file(const char *path, size_t max)
{
    FILE *f = fopen(path, "rb");
    char *buf = NULL;
    size_t n;

    if (!f)
        return NULL;
    buf = malloc(max + 1);
    if (buf) {
        n = fread(buf, 1, max, f);
        buf[n] = '\0';
        while (n && (buf[n - 1] == '\n' || buf[n - 1] == '\r' || buf[n - 1] == ' '))
            buf[--n] = '\0';
    }
    fclose(f);
    return buf;
}

int kube_conn_incluster(struct kube_conn *conn, const char *sa_dir, char *err, size_t errlen)
{
    const char *host = getenv("KUBERNETES_SERVICE_HOST");
    const char *port = getenv("KUBERNETES_SERVICE_PORT");
    struct kube_conn c;
    char *ns_path = NULL;
    int result = EXT_ENOMEM;

    if (!sa_dir)
        sa_dir = KUBE_SA_DIR;
    if (!host || !host[0] || !port || !port[0]) {
        return ext_errf(err, errlen, EXT_ENOTFOUND,
                        "not in a cluster: KUBERNETES_SERVICE_HOST/PORT unset");
    }
    kube_conn_init(&c);
    if (asprintf(&c.server, strchr(host, ':') ? "https://[%s]:%s" : "https://%s:%s", host, port) <
        0) {
        c.server = NULL;
        goto out;
    }
    c.token_file = path_join(sa_dir, "token");
    c.ca_file = path_join(sa_dir, "ca.crt");
    ns_path = path_join(sa_dir, "namespace");
    if (!c.token_file || !c.ca_file || !ns_path)
        goto out;
    if (access(c.token_file, R_OK) != 0) {
        (void)ext_errf(err, errlen, EXT_OK, "in-cluster token %s: %s", c.token_file,
                       strerror(errno));
        result = EXT_EIO;
        goto out;
    }
    if (access(c.ca_file, R_OK) != 0) {
        (void)ext_errf(err, errlen, EXT_OK, "in-cluster CA %s: %s", c.ca_file, strerror(errno));
        result = EXT_EIO;
        goto out;
    }
    c.ns = read_small_file(ns_path, 253);
    *conn = c;
    kube_conn_init(&c);
    result = EXT_OK;
out:
    if (result == EXT_ENOMEM)
        (void)ext_errf(err, errlen, EXT_OK, "in-cluster config: out of memory");
    free(ns_path);
    kube_conn_cleanup(&c);
    return result;
}

/* ---- kubeconfig ---------------------------------------------------------------------------- */

struct kcfg {
    const char *path;
    char *dir;
    yaml_document_t doc;
    char *err;
    size_t errlen;
};

static int kcfg_fail(struct kcfg *k, const yaml_node_t *at, int code, const char *fmt, ...)
{
    char what[256];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(what, sizeof(what), fmt, ap);
    va_end(ap);
    if (at)
        (void)ext_errf(k->err, k->errlen, EXT_OK, "kubeconfig %s:%zu: %s", k->path,
                       at->start_mark.line + 1, what);
    else
        (void)ext_errf(k->err, k->errlen, EXT_OK, "kubeconfig %s: %s", k->path, what);
    return code;
}

static yaml_node_t *map_get(struct kcfg *k, const yaml_node_t *map, const char *key)
{
    if (!map || map->type != YAML_MAPPING_NODE)
        return NULL;
    for (yaml_node_pair_t *p = map->data.mapping.pairs.start; p < map->data.mapping.pairs.top;
         p++) {
        yaml_node_t *kn = yaml_document_get_node(&k->doc, p->key);

        if (kn && kn->type == YAML_SCALAR_NODE && strcmp((char *)kn->data.scalar.value, key) == 0)
            return yaml_document_get_node(&k->doc, p->value);
    }
    return NULL;
}

/* A scalar's text; NULL for a missing key, an empty scalar or a non-scalar. */
static const char *map_str(struct kcfg *k, const yaml_node_t *map, const char *key)
{
    const yaml_node_t *n = map_get(k, map, key);

    if (!n || n->type != YAML_SCALAR_NODE || n->data.scalar.length == 0)
        return NULL;
    return (const char *)n->data.scalar.value;
}

/* In the list under `list`, the entry named `name`: its `field` mapping. */
static yaml_node_t *named_entry(struct kcfg *k, const char *list, const char *name,
                                const char *field)
{
    yaml_node_t *root = yaml_document_get_root_node(&k->doc);
    yaml_node_t *seq = map_get(k, root, list);

    if (!seq || seq->type != YAML_SEQUENCE_NODE)
        return NULL;
    for (yaml_node_item_t *it = seq->data.sequence.items.start; it < seq->data.sequence.items.top;
         it++) {
        yaml_node_t *entry = yaml_document_get_node(&k->doc, *it);
        const char *n = map_str(k, entry, "name");

        if (n && strcmp(n, name) == 0)
            return map_get(k, entry, field);
    }
    return NULL;
}

/* key (a path, relative to the file) or key-data (base64) into *file or *data. */
static int kcfg_material(struct kcfg *k, const yaml_node_t *map, const char *key, char **file,
                         char **data, size_t *len)
{
    char datakey[64];
    const char *v;

    snprintf(datakey, sizeof(datakey), "%s-data", key);
    v = map_str(k, map, datakey);
    if (v) {
        int rc = kube_base64_decode(v, data, len);

        if (rc == EXT_EINVAL)
            return kcfg_fail(k, map_get(k, map, datakey), rc, "%s is not valid base64", datakey);
        return rc == EXT_OK ? EXT_OK : kcfg_fail(k, NULL, rc, "out of memory");
    }
    v = map_str(k, map, key);
    if (v) {
        *file = path_join(k->dir, v);
        if (!*file)
            return kcfg_fail(k, NULL, EXT_ENOMEM, "out of memory");
        if (access(*file, R_OK) != 0)
            return kcfg_fail(k, map_get(k, map, key), EXT_EIO, "%s %s: %s", key, *file,
                             strerror(errno));
    }
    return EXT_OK;
}

static int kcfg_cluster(struct kcfg *k, const char *name, struct kube_conn *c)
{
    yaml_node_t *cl = named_entry(k, "clusters", name, "cluster");
    const char *server, *insecure;
    size_t n;
    int rc;

    if (!cl)
        return kcfg_fail(k, NULL, EXT_EINVAL, "cluster \"%s\" not found", name);
    server = map_str(k, cl, "server");
    if (!server)
        return kcfg_fail(k, cl, EXT_EINVAL, "cluster \"%s\" has no server", name);
    if (strncmp(server, "https://", 8) != 0 && strncmp(server, "http://", 7) != 0)
        return kcfg_fail(k, map_get(k, cl, "server"), EXT_EINVAL,
                         "server \"%s\" is not an http(s) URL", server);
    c->server = strdup(server);
    if (!c->server)
        return kcfg_fail(k, NULL, EXT_ENOMEM, "out of memory");
    n = strlen(c->server);
    while (n > 0 && c->server[n - 1] == '/')
        c->server[--n] = '\0';
    insecure = map_str(k, cl, "insecure-skip-tls-verify");
    c->insecure = insecure && strcmp(insecure, "true") == 0;
    rc = kcfg_material(k, cl, "certificate-authority", &c->ca_file, &c->ca_data, &c->ca_len);
    return rc;
}

static int kcfg_user(struct kcfg *k, const char *name, struct kube_conn *c)
{
    yaml_node_t *u = named_entry(k, "users", name, "user");
    const char *token, *token_file;
    int rc;

    if (!u)
        return kcfg_fail(k, NULL, EXT_EINVAL, "user \"%s\" not found", name);
    token = map_str(k, u, "token");
    token_file = map_str(k, u, "tokenFile");
    if (token && !(c->token = strdup(token)))
        return kcfg_fail(k, NULL, EXT_ENOMEM, "out of memory");
    if (!token && token_file) {
        c->token_file = path_join(k->dir, token_file);
        if (!c->token_file)
            return kcfg_fail(k, NULL, EXT_ENOMEM, "out of memory");
        if (access(c->token_file, R_OK) != 0)
            return kcfg_fail(k, map_get(k, u, "tokenFile"), EXT_EIO, "tokenFile %s: %s",
                             c->token_file, strerror(errno));
    }
    rc = kcfg_material(k, u, "client-certificate", &c->cert_file, &c->cert_data, &c->cert_len);
    if (rc == EXT_OK)
        rc = kcfg_material(k, u, "client-key", &c->key_file, &c->key_data, &c->key_len);
    if (rc != EXT_OK)
        return rc;
    if (!(c->cert_file || c->cert_data) != !(c->key_file || c->key_data))
        return kcfg_fail(k, u, EXT_EINVAL,
                         "user \"%s\" has a client certificate or key but not both", name);
    if (!c->token && !c->token_file && !c->cert_file && !c->cert_data &&
        (map_get(k, u, "exec") || map_get(k, u, "auth-provider")))
        return kcfg_fail(k, u, EXT_EINVAL,
                         "user \"%s\" authenticates with exec/auth-provider, which muster does "
                         "not support; give it a token, tokenFile or client certificate",
                         name);
    return EXT_OK;
}

static int kcfg_load(struct kcfg *k)
{
    yaml_parser_t parser;
    FILE *f = fopen(k->path, "rb");
    int rc = EXT_OK;

    if (!f)
        return kcfg_fail(k, NULL, errno == ENOENT ? EXT_ENOTFOUND : EXT_EIO, "cannot open: %s",
                         strerror(errno));
    if (fseek(f, 0, SEEK_END) == 0 && ftell(f) > KUBECONFIG_MAX) {
        fclose(f);
        return kcfg_fail(k, NULL, EXT_ETOOBIG, "larger than %d bytes", KUBECONFIG_MAX);
    }
    rewind(f);
    yaml_parser_initialize(&parser);
    yaml_parser_set_input_file(&parser, f);
    if (!yaml_parser_load(&parser, &k->doc)) {
        (void)ext_errf(k->err, k->errlen, EXT_OK, "kubeconfig %s:%zu:%zu: %s", k->path,
                       parser.problem_mark.line + 1, parser.problem_mark.column + 1,
                       parser.problem ? parser.problem : "not YAML");
        memset(&k->doc, 0, sizeof(k->doc));
        rc = EXT_EINVAL;
    }
    yaml_parser_delete(&parser);
    fclose(f);
    return rc;
}

static int kcfg_resolve(struct kcfg *k, const char *context, struct kube_conn *c)
{
    yaml_node_t *root = yaml_document_get_root_node(&k->doc);
    yaml_node_t *ctx;
    const char *cluster, *user, *ns;
    int rc;

    if (!root || root->type != YAML_MAPPING_NODE)
        return kcfg_fail(k, root, EXT_EINVAL, "not a kubeconfig (expected a mapping)");
    if (!context)
        context = map_str(k, root, "current-context");
    if (!context)
        return kcfg_fail(k, NULL, EXT_EINVAL, "no current-context and no context given");
    ctx = named_entry(k, "contexts", context, "context");
    if (!ctx)
        return kcfg_fail(k, NULL, EXT_EINVAL, "context \"%s\" not found", context);
    cluster = map_str(k, ctx, "cluster");
    if (!cluster)
        return kcfg_fail(k, ctx, EXT_EINVAL, "context \"%s\" names no cluster", context);
    rc = kcfg_cluster(k, cluster, c);
    if (rc != EXT_OK)
        return rc;
    user = map_str(k, ctx, "user");
    if (user) {
        rc = kcfg_user(k, user, c);
        if (rc != EXT_OK)
            return rc;
    }
    ns = map_str(k, ctx, "namespace");
    if (ns && !(c->ns = strdup(ns)))
        return kcfg_fail(k, NULL, EXT_ENOMEM, "out of memory");
    return EXT_OK;
}

int kube_conn_from_kubeconfig(struct kube_conn *conn, const char *path, const char *context,
                              char *err, size_t errlen)
{
    struct kcfg k = {.path = path, .err = err, .errlen = errlen};
    struct kube_conn c;
    const char *slash = strrchr(path, '/');
    int result;

    kube_conn_init(&c);
    k.dir = slash ? strndup(path, (size_t)(slash - path) + (slash == path)) : strdup(".");
    if (!k.dir)
        return kcfg_fail(&k, NULL, EXT_ENOMEM, "out of memory");
    result = kcfg_load(&k);
    if (result != EXT_OK)
        goto out_dir;
    result = kcfg_resolve(&k, context, &c);
    if (result == EXT_OK) {
        *conn = c;
        kube_conn_init(&c);
    }
    yaml_document_delete(&k.doc);
out_dir:
    free(k.dir);
    kube_conn_cleanup(&c);
    return result;
}

int kube_conn_discover(struct kube_conn *conn, const char *path, const char *context, char *err,
                       size_t errlen)
{
    const char *env = getenv("KUBECONFIG");
    const char *home = getenv("HOME");
    char *p = NULL;
    int rc;

    if (path && path[0])
        return kube_conn_from_kubeconfig(conn, path, context, err, errlen);
    if (env && env[0]) {
        p = strndup(env, strcspn(env, ":"));
        if (!p)
            return EXT_ENOMEM;
        rc = kube_conn_from_kubeconfig(conn, p, context, err, errlen);
        free(p);
        return rc;
    }
    if (getenv("KUBERNETES_SERVICE_HOST"))
        return kube_conn_incluster(conn, NULL, err, errlen);
    if (!home || asprintf(&p, "%s/.kube/config", home) < 0) {
        return ext_errf(err, errlen, EXT_ENOTFOUND,
                        "no kubeconfig: not in a cluster, KUBECONFIG and HOME unset");
    }
    rc = kube_conn_from_kubeconfig(conn, p, context, err, errlen);
    free(p);
    return rc;
}
