/*
 * test_kube_client.c - the Kubernetes API client, curl style: the canned API
 * server (canned_api.h) serves replies from fixtures/kube/NAME.http in script
 * order and records every request (method, target, Authorization,
 * Content-Type, body); each case compares the record with the exact
 * transcript in fixtures/kube/NAME.req.
 */
#include <check.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "base.h"
#include "kube.h"
#include "kube_client_int.h"
#include "canned_api.h"

#define KDIR FIXTURES "/kube"
#define HANG CANNED_HANG /* a script entry: 200 + chunked headers, then nothing until closed */

/* ---- helpers ------------------------------------------------------------------------------- */

#define WAIT_SEC 10

static double now_sec(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void pause_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};

    nanosleep(&ts, NULL);
}

/* ---- line splitter ------------------------------------------------------------------------- */

static int collect_line(void *arg, const char *line, size_t len)
{
    char *out = arg;

    strncat(out, line, len);
    strcat(out, "|");
    return EXT_OK;
}

static const size_t chunk_sizes[] = {1, 2, 3, 5, 17, 64, 4096};

START_TEST(test_lines_chunks)
{
    static const char stream[] = "{\"type\":\"ADDED\"}\n\n{\"type\":\"MODIFIED\",\"x\":1}\n"
                                 "{\"type\":\"DELETED\"}\n{\"partial";
    char got[512] = "";
    struct kube_lines s;
    size_t step = chunk_sizes[_i];

    kube__lines_init(&s, 1024, collect_line, got);
    for (size_t off = 0; off < strlen(stream); off += step) {
        size_t n = strlen(stream) - off < step ? strlen(stream) - off : step;

        ck_assert_int_eq(kube__lines_feed(&s, stream + off, n), EXT_OK);
    }
    ck_assert_str_eq(
        got, "{\"type\":\"ADDED\"}|{\"type\":\"MODIFIED\",\"x\":1}|{\"type\":\"DELETED\"}|");
    kube__lines_cleanup(&s);
}
END_TEST

START_TEST(test_lines_cap)
{
    char got[64] = "";
    struct kube_lines s;

    kube__lines_init(&s, 8, collect_line, got);
    ck_assert_int_eq(kube__lines_feed(&s, "1234\n1234", 9), EXT_OK);
    ck_assert_int_eq(kube__lines_feed(&s, "56789", 5), EXT_ETOOBIG);
    ck_assert_str_eq(got, "1234|");
    kube__lines_cleanup(&s);
}
END_TEST

/* A protobuf watch's frames: a 4-byte big-endian length, then that many bytes. */
static int collect_frame(void *arg, const void *frame, size_t len)
{
    char *got = arg;

    strncat(got, frame, len);
    strcat(got, "|");
    return EXT_OK;
}

START_TEST(test_frames_chunks)
{
    static const char stream[] = "\0\0\0\5ADDED\0\0\0\0\0\0\0\x08MODIFIED\0\0\0\7DELETED"
                                 "\0\0\0\x09partial";
    size_t step = chunk_sizes[_i], len = sizeof(stream) - 1;
    char got[512] = "";
    struct kube_frames f;

    kube__frames_init(&f, 1024, collect_frame, got);
    for (size_t off = 0; off < len; off += step) {
        size_t n = len - off < step ? len - off : step;

        ck_assert_int_eq(kube__frames_feed(&f, stream + off, n), EXT_OK);
    }
    ck_assert_str_eq(got, "ADDED||MODIFIED|DELETED|");
    kube__frames_cleanup(&f);
}
END_TEST

/* A frame whose length (its 4 bytes counted) is over the cap stops the feed before it is read. */
START_TEST(test_frames_cap)
{
    char got[64] = "";
    struct kube_frames f;

    kube__frames_init(&f, 12, collect_frame, got);
    ck_assert_int_eq(kube__frames_feed(&f, "\0\0\0\x08"
                                               "ABCDEFGH",
                                       12), EXT_OK);
    ck_assert_int_eq(kube__frames_feed(&f, "\0\0\0\x09", 4), EXT_ETOOBIG);
    ck_assert_str_eq(got, "ABCDEFGH|");
    kube__frames_cleanup(&f);
}
END_TEST

/* ---- kubeconfig ---------------------------------------------------------------------------- */

static const struct kcfg_case {
    const char *file;
    const char *context;
    int rc;
    const char *server;
    const char *token;
    const char *token_file; /* relative to fixtures/kube when not absolute */
    const char *ca;         /* ca_file basename or first line of ca_data */
    const char *cert;       /* cert file basename or first data line */
    int insecure;
    const char *ns;
    const char *err; /* exact, %s is the file's path */
} kcfg_cases[] = {
    {"kubeconfig_token.yaml", NULL, EXT_OK, "https://10.0.0.1:6443", "abc.def", NULL, "ca.crt",
     NULL, 0, "team", NULL},
    {"kubeconfig_multi.yaml", NULL, EXT_OK, "https://127.0.0.1:36443", NULL, NULL,
     "-----BEGIN CERTIFICATE-----\nCA", "-----BEGIN CERTIFICATE-----\nCLIENT", 0, NULL, NULL},
    {"kubeconfig_multi.yaml", "lab", EXT_OK, "https://lab.example:443", NULL, "token.txt", NULL,
     NULL, 1, NULL, NULL},
    {"kubeconfig_certfile.yaml", NULL, EXT_OK, "http://127.0.0.1:8080", NULL, NULL, NULL,
     "client.crt", 0, NULL, NULL},
    {"kubeconfig_multi.yaml", "prod", EXT_EINVAL,
     .err = "kubeconfig %s: context \"prod\" not found"},
    {"kubeconfig_nocontext.yaml", NULL, EXT_EINVAL,
     .err = "kubeconfig %s: no current-context and no context given"},
    {"kubeconfig_noserver.yaml", NULL, EXT_EINVAL,
     .err = "kubeconfig %s:10: cluster \"x\" has no server"},
    {"kubeconfig_badb64.yaml", NULL, EXT_EINVAL,
     .err = "kubeconfig %s:11: certificate-authority-data is not valid base64"},
    {"kubeconfig_exec.yaml", NULL, EXT_EINVAL,
     .err = "kubeconfig %s:13: user \"eks\" authenticates with exec/auth-provider, which muster "
            "does not support; give it a token, tokenFile or client certificate"},
    {"kubeconfig_certnokey.yaml", NULL, EXT_EINVAL,
     .err = "kubeconfig %s:13: user \"u\" has a client certificate or key but not both"},
    {"kubeconfig_notokenfile.yaml", NULL, EXT_EIO,
     .err = "kubeconfig %s:13: tokenFile /nonexistent/token: No such file or directory"},
    {"kubeconfig_broken.yaml", NULL, EXT_EINVAL,
     .err = "kubeconfig %s:5:1: did not find expected ',' or '}'"},
    {"kubeconfig_missing.yaml", NULL, EXT_ENOTFOUND,
     .err = "kubeconfig %s: cannot open: No such file or directory"},
};

static void expect_material(const char *file, const char *data, const char *want)
{
    const char *got = file ? strrchr(file, '/') + 1 : data;

    if (!want) {
        ck_assert_msg(!file && !data, "unexpected %s", got);
        return;
    }
    ck_assert_ptr_nonnull(got);
    ck_assert_msg(strncmp(got, want, strlen(want)) == 0, "got %s, want %s", got, want);
}

START_TEST(test_kubeconfig)
{
    const struct kcfg_case *t = &kcfg_cases[_i];
    char path[512], err[512] = "", want[1024];
    struct kube_conn conn;

    kube_conn_init(&conn);
    snprintf(path, sizeof(path), "%s/%s", KDIR, t->file);
    ck_assert_int_eq(kube_conn_from_kubeconfig(&conn, path, t->context, err, sizeof(err)), t->rc);
    if (t->rc != EXT_OK) {
        snprintf(want, sizeof(want), t->err, path);
        ck_assert_str_eq(err, want);
        ck_assert_ptr_null(conn.server); /* untouched on failure */
        return;
    }
    ck_assert_str_eq(conn.server, t->server);
    if (t->token)
        ck_assert_str_eq(conn.token, t->token);
    else
        ck_assert_ptr_null(conn.token);
    if (t->token_file) {
        snprintf(want, sizeof(want), "%s/%s", KDIR, t->token_file);
        ck_assert_str_eq(conn.token_file, want);
    } else {
        ck_assert_ptr_null(conn.token_file);
    }
    expect_material(conn.ca_file, conn.ca_data, t->ca);
    expect_material(conn.cert_file, conn.cert_data, t->cert);
    if (conn.cert_data)
        ck_assert_str_eq(conn.key_data,
                         "-----BEGIN PRIVATE KEY-----\nKEY\n-----END PRIVATE KEY-----\n");
    ck_assert_int_eq(!!conn.key_file || !!conn.key_data, !!t->cert);
    ck_assert_int_eq(conn.insecure, t->insecure);
    if (t->ns)
        ck_assert_str_eq(conn.ns, t->ns);
    else
        ck_assert_ptr_null(conn.ns);
    kube_conn_cleanup(&conn);
}
END_TEST

START_TEST(test_incluster)
{
    struct kube_conn conn;
    char err[256] = "";

    kube_conn_init(&conn);
    unsetenv("KUBERNETES_SERVICE_HOST");
    ck_assert_int_eq(kube_conn_incluster(&conn, KDIR "/sa", err, sizeof(err)), EXT_ENOTFOUND);
    setenv("KUBERNETES_SERVICE_HOST", "fd00::1", 1);
    setenv("KUBERNETES_SERVICE_PORT", "443", 1);
    ck_assert_int_eq(kube_conn_incluster(&conn, KDIR "/sa", err, sizeof(err)), EXT_OK);
    ck_assert_str_eq(conn.server, "https://[fd00::1]:443");
    ck_assert_str_eq(conn.token_file, KDIR "/sa/token");
    ck_assert_str_eq(conn.ca_file, KDIR "/sa/ca.crt");
    ck_assert_str_eq(conn.ns, "muster-system");
    ck_assert_ptr_null(conn.token);
    kube_conn_cleanup(&conn);
    setenv("KUBERNETES_SERVICE_HOST", "10.96.0.1", 1);
    ck_assert_int_eq(kube_conn_incluster(&conn, KDIR "/nope", err, sizeof(err)), EXT_EIO);
    ck_assert_str_eq(err, "in-cluster token " KDIR "/nope/token: No such file or directory");
    ck_assert_int_eq(kube_conn_incluster(&conn, KDIR "/sa", err, sizeof(err)), EXT_OK);
    ck_assert_str_eq(conn.server, "https://10.96.0.1:443");
    kube_conn_cleanup(&conn);
    unsetenv("KUBERNETES_SERVICE_HOST");
    unsetenv("KUBERNETES_SERVICE_PORT");
}
END_TEST

static const struct b64_case {
    const char *in;
    int rc;
    const char *out;
} b64_cases[] = {
    {"aGVsbG8=", EXT_OK, "hello"},   {"aGVs\nbG8h", EXT_OK, "hello!"}, {"", EXT_OK, ""},
    {"aGVsbG8=x", EXT_EINVAL, NULL}, {"a*b=", EXT_EINVAL, NULL},       {"a", EXT_EINVAL, NULL},
};

START_TEST(test_base64)
{
    const struct b64_case *t = &b64_cases[_i];
    char *out = NULL;
    size_t len = 0;

    ck_assert_int_eq(kube_base64_decode(t->in, &out, &len), t->rc);
    if (t->rc == EXT_OK) {
        ck_assert_str_eq(out, t->out);
        ck_assert_uint_eq(len, strlen(t->out));
    }
    free(out);
}
END_TEST

/* ---- requests ------------------------------------------------------------------------------ */

static const struct status_case {
    const char *reply;
    int rc;
    long status;
    const char *err;
} status_cases[] = {
    {"patch_ok.http", EXT_OK, 200, ""},
    {"empty_200.http", EXT_OK, 200, ""},
    {"status_404.http", EXT_ENOTFOUND, 404,
     "GET /api/v1/x: HTTP 404 NotFound: the server could not find the requested resource"},
    {"status_409.http", EXT_ECONFLICT, 409,
     "GET /api/v1/x: HTTP 409 Conflict: Operation cannot be fulfilled on pods/binding \"p-0\": "
     "pod p-0 is already assigned to node \"n1\""},
    {"status_410.http", EXT_EGONE, 410,
     "GET /api/v1/x: HTTP 410 Expired: too old resource version: 100 (150)"},
    {"status_500.http", EXT_EHTTP, 500,
     "GET /api/v1/x: HTTP 500 InternalError: etcdserver: request timed out"},
    {"status_401_plain.http", EXT_EHTTP, 401, "GET /api/v1/x: HTTP 401: (no Status message)"},
    {"not_json.http", EXT_EPROTO, 200, "GET /api/v1/x: reply is not JSON"},
};

START_TEST(test_status)
{
    const struct status_case *t = &status_cases[_i];
    const char *script[] = {t->reply};
    struct kube_client *c;
    cJSON *reply = NULL;
    char err[512] = "";
    long status = 0;
    struct canned_api s;

    canned_api_start(&s, "kube", script, 1);
    c = canned_api_client(&s, NULL);
    ck_assert_int_eq(
        kube_request(c, "GET", "/api/v1/x", NULL, NULL, &status, &reply, err, sizeof(err)), t->rc);
    ck_assert_int_eq(status, t->status);
    ck_assert_str_eq(err, t->err);
    if (t->rc == EXT_OK && strcmp(t->reply, "patch_ok.http") == 0)
        ck_assert_str_eq(cJSON_GetStringValue(cJSON_GetObjectItem(
                             cJSON_GetObjectItem(reply, "metadata"), "resourceVersion")),
                         "77");
    else
        ck_assert_ptr_null(reply);
    cJSON_Delete(reply);
    kube_client_free(c);
    canned_api_stop(&s);
}
END_TEST

START_TEST(test_reply_cap_and_refused)
{
    const char *script[] = {"patch_ok.http"};
    struct kube_client_opts opts = {.max_reply = 16};
    struct kube_conn conn;
    struct kube_client *c;
    char err[512] = "";
    struct canned_api s;
    int port;

    canned_api_start(&s, "kube", script, 1);
    kube_conn_init(&conn);
    ck_assert(asprintf(&conn.server, "http://127.0.0.1:%d", s.port) > 0);
    c = kube_client_new(&conn, &opts, err, sizeof(err));
    ck_assert_int_eq(kube_request(c, "GET", "/x", NULL, NULL, NULL, NULL, err, sizeof(err)),
                     EXT_ETOOBIG);
    ck_assert_str_eq(err, "GET /x: reply over 16 bytes");
    kube_client_free(c);
    port = s.port;
    canned_api_stop(&s); /* now nothing listens on port */
    free(conn.server);
    ck_assert(asprintf(&conn.server, "http://127.0.0.1:%d", port) > 0);
    c = kube_client_new(&conn, NULL, err, sizeof(err));
    ck_assert_int_eq(kube_request(c, "GET", "/x", NULL, NULL, NULL, NULL, err, sizeof(err)),
                     EXT_EIO);
    ck_assert_msg(strncmp(err, "GET /x: ", 8) == 0, "%s", err);
    kube_client_free(c);
    kube_conn_cleanup(&conn);
}
END_TEST

START_TEST(test_binding)
{
    const char *script[] = {"binding_ok.http"};
    struct kube_client *c;
    char err[512] = "";
    struct canned_api s;
    cJSON *ann = cJSON_Parse("{\"muster.dev/gpu-group\":\"g0,g3\","
                             "\"muster.dev/gpu-fraction\":\"0.250\"}");

    canned_api_start(&s, "kube", script, 1);
    c = canned_api_client(&s, NULL);
    ck_assert_int_eq(kube_post_binding(c, "default", "p-0", "0b7c8f3e-1111-4c2d-9a9a-123456789abc",
                                       "gpu-node-3", NULL, err, sizeof(err)),
                     EXT_OK);
    ck_assert_int_eq(kube_post_binding(c, "ml", "worker-1", NULL, "n2", NULL, err, sizeof(err)),
                     EXT_OK);
    /* A shared member's GPU record rides on its Binding: metadata.annotations, borrowed. */
    ck_assert_int_eq(kube_post_binding(c, "ml", "sh-0", "00000000-0000-4000-8000-0000000001a0",
                                       "n1", ann, err, sizeof(err)),
                     EXT_OK);
    ck_assert_int_eq(cJSON_GetArraySize(ann), 2); /* still the caller's, whole */
    ck_assert_int_eq(kube_post_binding(c, "../kube-system", "p", NULL, "n", NULL, err, sizeof(err)),
                     EXT_EINVAL);
    ck_assert_str_eq(err, "invalid namespace/name \"../kube-system/p\"");
    canned_api_expect(&s, "binding.req", 3);
    ck_assert_uint_eq(canned_api_nreq(&s), 3); /* the invalid one never left */
    cJSON_Delete(ann);
    kube_client_free(c);
    canned_api_stop(&s);
}
END_TEST

START_TEST(test_patch_create_delete)
{
    const char *script[] = {"patch_ok.http", "patch_ok.http", "binding_ok.http", "binding_ok.http"};
    cJSON *status = cJSON_Parse("{\"status\":{\"state\":\"ready\"}}");
    cJSON *ann = cJSON_Parse("{\"metadata\":{\"annotations\":{\"muster.dev/gang\":\"admitted\"}}}");
    cJSON *pg = cJSON_Parse("{\"apiVersion\":\"scheduling.x-k8s.io/v1alpha1\",\"kind\":"
                            "\"PodGroup\",\"metadata\":{\"name\":\"rc\"}}");
    cJSON *reply = NULL;
    struct kube_client *c;
    char err[512] = "";
    struct canned_api s;

    canned_api_start(&s, "kube", script, 4);
    c = canned_api_client(&s, NULL);
    ck_assert_int_eq(kube_patch_status(c, "/apis/ray.io/v1/namespaces/ml/rayclusters/rc", status,
                                       &reply, err, sizeof(err)),
                     EXT_OK);
    ck_assert_ptr_nonnull(reply);
    ck_assert_int_eq(
        kube_patch_merge(c, "/api/v1/namespaces/ml/pods/p", ann, NULL, err, sizeof(err)), EXT_OK);
    ck_assert_int_eq(kube_create(c, "/apis/scheduling.x-k8s.io/v1alpha1/namespaces/ml/podgroups",
                                 pg, NULL, err, sizeof(err)),
                     EXT_OK);
    ck_assert_int_eq(kube_delete(c, "/apis/scheduling.x-k8s.io/v1alpha1/namespaces/ml/podgroups/rc",
                                 err, sizeof(err)),
                     EXT_OK);
    canned_api_expect(&s, "patch_status.req", 4);
    cJSON_Delete(reply);
    cJSON_Delete(status);
    cJSON_Delete(ann);
    cJSON_Delete(pg);
    kube_client_free(c);
    canned_api_stop(&s);
}
END_TEST

/* The verb and resource labels of muster_kube_requests_total, for every path muster uses. */
START_TEST(test_request_labels)
{
    static const struct {
        const char *method, *path, *verb, *resource;
    } cases[] = {
        {"POST", "/api/v1/namespaces/lab/pods/p-0/binding", "CREATE", "pods/binding"},
        {"PATCH", "/api/v1/namespaces/lab/pods/p-0", "PATCH", "pods"},
        {"POST", "/api/v1/namespaces/lab/pods/p-0/eviction", "CREATE", "pods/eviction"},
        {"GET", "/api/v1/pods?limit=500&continue=abc", "LIST", "pods"},
        {"GET", "/api/v1/pods?watch=1&resourceVersion=7&allowWatchBookmarks=true", "WATCH", "pods"},
        {"POST", "/api/v1/namespaces/lab/events", "CREATE", "events"},
        {"PATCH", "/apis/muster.dev/v1alpha1/queues/team-a/status", "PATCH", "queues/status"},
        {"GET", "/apis/coordination.k8s.io/v1/namespaces/muster-system/leases/muster-scheduler",
         "GET", "leases"},
        {"GET", "/apis/policy/v1/namespaces/lab/poddisruptionbudgets", "LIST",
         "poddisruptionbudgets"},
        {"GET", "/api/v1/namespaces/lab", "GET", "namespaces"},
        {"GET", "/api/v1/nodes", "LIST", "nodes"},
        {"PUT", "/apis/coordination.k8s.io/v1/namespaces/ns/leases/l", "UPDATE", "leases"},
        {"DELETE", "/api/v1/namespaces/lab/pods/p-0", "DELETE", "pods"},
        {"GET", "/version", "GET", "other"},
        {"GET", "/", "GET", "other"},
    };

    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        char verb[16], resource[128];

        kube_request_labels(cases[i].method, cases[i].path, verb, sizeof(verb), resource,
                            sizeof(resource));
        ck_assert_msg(strcmp(verb, cases[i].verb) == 0 && strcmp(resource, cases[i].resource) == 0,
                      "%s %s: %s %s, want %s %s", cases[i].method, cases[i].path, verb, resource,
                      cases[i].verb, cases[i].resource);
    }
}
END_TEST

/* Every request is counted once it ends, by verb, resource and status; no response = error. */
START_TEST(test_requests_counted)
{
    const char *script[] = {"patch_ok.http", "status_404.http"};
    struct ext_metrics *m = ext_metrics_new();
    struct ext_metric *requests =
        ext_metrics_counter(m, "muster_kube_requests_total", "requests", "verb,resource,code");
    cJSON *ann = cJSON_Parse("{\"metadata\":{\"annotations\":{\"a\":\"b\"}}}");
    struct kube_conn conn;
    struct kube_client *c;
    char err[512] = "", *text;
    struct canned_api s;
    size_t len;
    int port;

    canned_api_start(&s, "kube", script, 2);
    c = canned_api_client(&s, NULL);
    kube_client_count_requests(c, requests);
    ck_assert_int_eq(
        kube_patch_merge(c, "/api/v1/namespaces/ml/pods/p", ann, NULL, err, sizeof(err)), EXT_OK);
    ck_assert_int_ne(
        kube_patch_merge(c, "/api/v1/namespaces/ml/pods/q", ann, NULL, err, sizeof(err)), EXT_OK);
    kube_client_free(c);
    port = s.port;
    canned_api_stop(&s);
    kube_conn_init(&conn);
    ck_assert(asprintf(&conn.server, "http://127.0.0.1:%d", port) > 0);
    c = kube_client_new(&conn, NULL, err, sizeof(err));
    kube_client_count_requests(c, requests);
    ck_assert_int_eq(kube_request(c, "GET", "/api/v1/nodes", NULL, NULL, NULL, NULL, err,
                                  sizeof(err)),
                     EXT_EIO);
    ck_assert_int_eq(ext_metrics_render(m, &text, &len), EXT_OK);
    ck_assert_msg(strstr(text, "muster_kube_requests_total{verb=\"PATCH\",resource=\"pods\","
                               "code=\"200\"} 1\n"), "%s", text);
    ck_assert_msg(strstr(text, "muster_kube_requests_total{verb=\"PATCH\",resource=\"pods\","
                               "code=\"404\"} 1\n"), "%s", text);
    ck_assert_msg(strstr(text, "muster_kube_requests_total{verb=\"LIST\",resource=\"nodes\","
                               "code=\"error\"} 1\n"), "%s", text);
    free(text);
    kube_client_free(c);
    kube_conn_cleanup(&conn);
    cJSON_Delete(ann);
    ext_metrics_free(m);
}
END_TEST

static const char *json_str(const cJSON *o, const char *a, const char *b)
{
    const cJSON *x = cJSON_GetObjectItemCaseSensitive(o, a);

    return cJSON_GetStringValue(b ? cJSON_GetObjectItemCaseSensitive(x, b) : x);
}

START_TEST(test_event)
{
    static const char event_head[] = "POST /api/v1/namespaces/default/events\n"
                                     "Authorization: Bearer t0ken\n"
                                     "Content-Type: application/json\n\n";
    const char *script[] = {"binding_ok.http"};
    char err[512] = "", msg[3000];
    struct kube_client *c;
    cJSON *ev;
    char *body;
    struct canned_api s;

    memset(msg, 'm', sizeof(msg) - 1);
    msg[sizeof(msg) - 1] = '\0';
    canned_api_start(&s, "kube", script, 1);
    c = canned_api_client(&s, NULL);
    ck_assert_int_eq(kube_event_create(c, "default", "p-0", "uid-1", "GangWaiting", msg, "Warning",
                                       err, sizeof(err)),
                     EXT_OK);
    canned_api_wait_requests(&s, 1);
    ck_assert_msg(strncmp(s.reqs[0], event_head, strlen(event_head)) == 0, "%s", s.reqs[0]);
    body = strstr(s.reqs[0], "\n\n") + 2;
    ev = cJSON_Parse(body);
    ck_assert_ptr_nonnull(ev);
    ck_assert_str_eq(json_str(ev, "kind", NULL), "Event");
    ck_assert_str_eq(json_str(ev, "metadata", "generateName"), "p-0.");
    ck_assert_str_eq(json_str(ev, "metadata", "namespace"), "default");
    ck_assert_str_eq(json_str(ev, "involvedObject", "kind"), "Pod");
    ck_assert_str_eq(json_str(ev, "involvedObject", "name"), "p-0");
    ck_assert_str_eq(json_str(ev, "involvedObject", "uid"), "uid-1");
    ck_assert_str_eq(json_str(ev, "reason", NULL), "GangWaiting");
    ck_assert_str_eq(json_str(ev, "type", NULL), "Warning");
    ck_assert_str_eq(json_str(ev, "reportingComponent", NULL), "muster");
    ck_assert_str_eq(json_str(ev, "source", "component"), "muster");
    ck_assert_uint_eq(strlen(json_str(ev, "message", NULL)), 1024);
    ck_assert_ptr_nonnull(json_str(ev, "firstTimestamp", NULL));
    /* eventTime to the microsecond, with what the API server then requires beside it */
    ck_assert_uint_eq(strlen(json_str(ev, "eventTime", NULL)), strlen("2026-12-01T12:52:01.709123Z"));
    ck_assert_ptr_nonnull(json_str(ev, "reportingInstance", NULL));
    ck_assert_str_eq(json_str(ev, "action", NULL), "Scheduling");
    cJSON_Delete(ev);
    kube_client_free(c);
    canned_api_stop(&s);
}
END_TEST

START_TEST(test_token_rotation)
{
    const char *script[] = {"empty_200.http"};
    char dir[] = "/tmp/kube_tokenXXXXXX", file[64];
    struct kube_conn conn;
    struct kube_client *c;
    char err[256] = "";
    struct canned_api s;
    FILE *f;

    ck_assert_ptr_nonnull(mkdtemp(dir));
    snprintf(file, sizeof(file), "%s/token", dir);
    f = fopen(file, "w");
    fputs("one\n", f);
    fclose(f);
    canned_api_start(&s, "kube", script, 1);
    kube_conn_init(&conn);
    ck_assert(asprintf(&conn.server, "http://127.0.0.1:%d", s.port) > 0);
    conn.token_file = strdup(file);
    c = kube_client_new(&conn, NULL, err, sizeof(err));
    kube_conn_cleanup(&conn);
    ck_assert_int_eq(kube_request(c, "GET", "/a", NULL, NULL, NULL, NULL, err, sizeof(err)), 0);
    f = fopen(file, "w");
    fputs("rotated-token\n", f);
    fclose(f);
    ck_assert_int_eq(kube_request(c, "GET", "/b", NULL, NULL, NULL, NULL, err, sizeof(err)), 0);
    unlink(file); /* mid-rotation: keep the last good token */
    ck_assert_int_eq(kube_request(c, "GET", "/c", NULL, NULL, NULL, NULL, err, sizeof(err)), 0);
    canned_api_wait_requests(&s, 3);
    ck_assert_str_eq(s.reqs[0], "GET /a\nAuthorization: Bearer one\n\n");
    ck_assert_str_eq(s.reqs[1], "GET /b\nAuthorization: Bearer rotated-token\n\n");
    ck_assert_str_eq(s.reqs[2], "GET /c\nAuthorization: Bearer rotated-token\n\n");
    rmdir(dir);
    kube_client_free(c);
    canned_api_stop(&s);
}
END_TEST

#define BIND_THREADS 8
#define BIND_EACH 8

struct binder {
    struct kube_client *c;
    int id;
    int failures;
};

static void *bind_many(void *arg)
{
    struct binder *b = arg;
    char name[32], err[256];

    for (int i = 0; i < BIND_EACH; i++) {
        snprintf(name, sizeof(name), "p-%d-%d", b->id, i);
        if (kube_post_binding(b->c, "default", name, NULL, "n1", NULL, err, sizeof(err)) != EXT_OK)
            b->failures++;
    }
    return NULL;
}

START_TEST(test_concurrent_bindings)
{
    const char *script[] = {"binding_ok.http"};
    struct binder b[BIND_THREADS];
    pthread_t t[BIND_THREADS];
    struct kube_client *c;
    struct canned_api s;

    canned_api_start(&s, "kube", script, 1);
    c = canned_api_client(&s, NULL);
    for (int i = 0; i < BIND_THREADS; i++) {
        b[i] = (struct binder){.c = c, .id = i};
        ck_assert_int_eq(pthread_create(&t[i], NULL, bind_many, &b[i]), 0);
    }
    for (int i = 0; i < BIND_THREADS; i++) {
        pthread_join(t[i], NULL);
        ck_assert_int_eq(b[i].failures, 0);
    }
    canned_api_wait_requests(&s, BIND_THREADS * BIND_EACH);
    for (size_t i = 0; i < s.nreq; i++)
        ck_assert_msg(strncmp(s.reqs[i], "POST /api/v1/namespaces/default/pods/p-", 39) == 0 &&
                          strstr(s.reqs[i], "\"kind\":\"Binding\""),
                      "%s", s.reqs[i]);
    kube_client_free(c);
    canned_api_stop(&s);
}
END_TEST

/* Two bursts of BURST Bindings, each from BURST threads at once; the canned server holds each
 * reply until the `together` requests of its batch have arrived, so that many are in flight
 * at once, each on a connection of its own. Returns the connections the client opened, as
 * the server counted them; muster_kube_connections_total must say the same. */
#define BURST 16

static void *bind_one(void *arg)
{
    struct binder *b = arg;
    char name[32], err[256];

    snprintf(name, sizeof(name), "p-%d", b->id);
    if (kube_post_binding(b->c, "default", name, NULL, "n1", NULL, err, sizeof(err)) != EXT_OK)
        b->failures++;
    return NULL;
}

static size_t connections_for_two_bursts(size_t max_connections, size_t together)
{
    const char *script[] = {"binding_ok.http"};
    struct kube_client_opts opts = {.max_connections = max_connections};
    struct ext_metrics *m = ext_metrics_new();
    struct ext_metric *counted =
        ext_metrics_counter(m, "muster_kube_connections_total", "connections", NULL);
    struct binder b[BURST];
    pthread_t t[BURST];
    struct kube_client *c;
    struct canned_api s;
    char *text, want[128];
    size_t len, n;

    canned_api_start(&s, "kube", script, 1);
    canned_api_keep_alive(&s, together);
    c = canned_api_client(&s, &opts);
    kube_client_count_connections(c, counted);
    for (int burst = 0; burst < 2; burst++) {
        for (int i = 0; i < BURST; i++) {
            b[i] = (struct binder){.c = c, .id = burst * BURST + i};
            ck_assert_int_eq(pthread_create(&t[i], NULL, bind_one, &b[i]), 0);
        }
        for (int i = 0; i < BURST; i++) {
            pthread_join(t[i], NULL);
            ck_assert_int_eq(b[i].failures, 0);
        }
    }
    ck_assert_uint_eq(canned_api_nreq(&s), 2 * BURST);
    n = canned_api_connections(&s);
    ck_assert_int_eq(ext_metrics_render(m, &text, &len), EXT_OK);
    snprintf(want, sizeof(want), "muster_kube_connections_total %zu\n", n);
    ck_assert_msg(strstr(text, want), "the server accepted %zu: %s", n, text);
    free(text);
    kube_client_free(c);
    canned_api_stop(&s);
    ext_metrics_free(m);
    return n;
}

/* Every handle goes back to the pool with its connection open, so the second burst opens
 * none; and a client allowed fewer connections than a burst has callers makes the rest wait
 * for one (the server answers 4 at a time there), not open more. */
START_TEST(test_bursts_reuse_connections)
{
    ck_assert_uint_eq(connections_for_two_bursts(0, BURST), BURST); /* the default is 64 */
    ck_assert_uint_eq(connections_for_two_bursts(BURST, BURST), BURST);
    ck_assert_uint_eq(connections_for_two_bursts(4, 4), 4);
}
END_TEST

/* ---- watches ------------------------------------------------------------------------------- */

struct trace {
    pthread_mutex_t lock;
    char text[4096];
};

static void trace_add(struct trace *t, const char *line)
{
    pthread_mutex_lock(&t->lock);
    strncat(t->text, line, sizeof(t->text) - strlen(t->text) - 1);
    pthread_mutex_unlock(&t->lock);
}

static const char *obj_name(const cJSON *o)
{
    const char *n = json_str(o, "metadata", "name");

    return n ? n : "?";
}

static void on_replace(void *ctx, const cJSON *items)
{
    char line[512] = "replace ";
    const cJSON *it;

    cJSON_ArrayForEach(it, items)
    {
        strcat(line, obj_name(it));
        if (it->next)
            strcat(line, ",");
    }
    strcat(line, "\n");
    trace_add(ctx, line);
}

static void on_event(void *ctx, const char *type, const cJSON *obj)
{
    char line[256];

    snprintf(line, sizeof(line), "%s %s\n", type, obj_name(obj));
    trace_add(ctx, line);
}

static void on_absent(void *ctx)
{
    trace_add(ctx, "absent\n");
}

static const struct kube_watch_handler trace_handler = {
    .replace = on_replace, .event = on_event, .absent = on_absent};

/* The same trace from a handler that takes a list page by page (cache.c's way). */
struct paged_trace {
    struct trace t; /* first: the trace helpers take it */
    char names[512];
    int pages;
};

static void on_list_begin(void *ctx)
{
    struct paged_trace *p = ctx;

    p->names[0] = '\0';
    p->pages = 0;
}

static void on_list_page(void *ctx, const cJSON *items)
{
    struct paged_trace *p = ctx;
    const cJSON *it;

    p->pages++;
    cJSON_ArrayForEach(it, items)
    {
        if (p->names[0])
            strcat(p->names, ",");
        strcat(p->names, obj_name(it));
    }
}

static void on_list_end(void *ctx, bool ok)
{
    struct paged_trace *p = ctx;
    char line[600];

    snprintf(line, sizeof(line), ok ? "replace %s\n" : "list failed\n", p->names);
    trace_add(&p->t, line);
}

static const struct kube_watch_handler paged_handler = {.event = on_event,
                                                        .absent = on_absent,
                                                        .list_begin = on_list_begin,
                                                        .list_page = on_list_page,
                                                        .list_end = on_list_end};

static const char *const script_basic[] = {"list_pods_p1.http", "list_pods_p2.http",
                                           "watch_pods.http", HANG};
static const char *const script_gone_http[] = {"list_pods_rv100.http", "status_410.http",
                                               "list_pods_rv200.http", HANG};
static const char *const script_gone_event[] = {"list_pods_rv100.http", "watch_gone_event.http",
                                                "list_pods_rv200.http", HANG};
static const char *const script_huge[] = {"list_pods_rv100.http", "watch_huge_event.http",
                                          "list_pods_rv200.http", HANG};
static const char *const script_retry[] = {"list_pods_rv100.http", "status_500.http", HANG};
static const char *const script_absent[] = {"status_404.http", "status_404.http", "list_empty.http",
                                            HANG};
/* fixtures/proto: a real API server's replies, in protobuf and in JSON (capture.sh). */
static const char *const script_proto[] = {"proto_list_p1.http", "proto_list_p2.http",
                                           "proto_watch.http", HANG};
static const char *const script_proto_json[] = {"proto_list_p1_json.http", "proto_list_p2_json.http",
                                                "proto_watch_json.http", HANG};
static const char *const script_proto_gone[] = {"list_pods_rv100.http", "proto_gone.http",
                                                "list_pods_rv200.http", HANG};
static const char *const script_proto_absent[] = {"proto_missing.http", "list_empty.http", HANG};
/* A frame muster's k8s.proto cannot unpack after one it can; a list page the same. */
static const char *const script_proto_bad_frame[] = {
    "proto_list_p1.http", "proto_list_p2.http", "proto_bad_watch.http",
    "proto_watch_from_228_json.http", HANG};
static const char *const script_proto_bad_list[] = {"proto_bad_list.http", "proto_list_p1_json.http",
                                                    "proto_list_p2_json.http",
                                                    "proto_watch_json.http", HANG};
#define PROTO_TRACE                                                                                \
    "replace kai-member,rc-head,rc-worker-0,wl-0\nADDED late\nMODIFIED late\nMODIFIED late\n"       \
    "DELETED late\n"

static const struct watch_case {
    const char *name;
    const char *path;
    const char *const *script;
    size_t nscript;
    unsigned page_limit;
    const char *req;   /* expected transcript */
    const char *trace; /* expected consumer calls */
    unsigned restarts;
    unsigned relists;
    bool protobuf;       /* asked for (opts.protobuf) */
    bool ends_protobuf;  /* kube_watch_protobuf at the end: the last reply read was protobuf */
} watch_cases[] = {
    {"paged list, split events, bookmark", "/api/v1/pods", script_basic, 4, 1, "watch_basic.req",
     "replace a,b\nADDED c\nMODIFIED a\nDELETED b\n", 0, 0},
    {"HTTP 410 relists", "/api/v1/pods", script_gone_http, 4, 0, "watch_gone_http.req",
     "replace a,b\nreplace a\n", 0, 1},
    {"ERROR 410 event relists", "/api/v1/pods", script_gone_event, 4, 0, "watch_gone_event.req",
     "replace a,b\nADDED c\nreplace a\n", 0, 1},
    {"oversized event relists", "/api/v1/pods", script_huge, 4, 0, "watch_huge_event.req",
     "replace a,b\nADDED c\nreplace a\n", 0, 1},
    {"500 reconnects from the same RV", "/api/v1/pods", script_retry, 3, 0, "watch_retry.req",
     "replace a,b\n", 1, 0},
    {"404 list is absent, retried", "/apis/ray.io/v1/rayclusters?labelSelector=app%3Dray",
     script_absent, 4, 0, "watch_absent.req", "absent\nreplace \n", 0, 0},
    /* Pods as protobuf: list pages and watch frames (cut in 7-byte pieces) give the consumer
     * what the API server's JSON of the same list and watch gives it, bookmarks followed. */
    {"protobuf pages and frames", "/api/v1/namespaces/proto/pods", script_proto, 4, 2,
     "watch_proto.req", PROTO_TRACE, 0, 0, true, true},
    {"the same in JSON", "/api/v1/namespaces/proto/pods", script_proto_json, 4, 2,
     "watch_proto_json.req", PROTO_TRACE, 0, 0, false},
    /* Asked for protobuf, answered in JSON (a resource served only so): read as JSON. */
    {"protobuf asked, JSON answered", "/api/v1/pods", script_basic, 4, 1, "watch_basic_accept.req",
     "replace a,b\nADDED c\nMODIFIED a\nDELETED b\n", 0, 0, true},
    {"protobuf ERROR 410 relists", "/api/v1/pods", script_proto_gone, 4, 0, "watch_proto_gone.req",
     "replace a,b\nreplace a\n", 0, 1, true},
    {"protobuf 404 Status is absent", "/api/v1/namespaces/proto/pods", script_proto_absent, 3, 0,
     "watch_proto_absent.req", "absent\nreplace \n", 0, 0, true},
    /* A frame that does not unpack (bad_watch.pb: watch.pb's first frame, ADDED late at 228,
     * then a MODIFIED whose Pod's metadata says 9 bytes and has 2): the watch goes on in JSON
     * from 228, the last version delivered, at once (one restart, no relist, nothing lost or
     * delivered twice), and stays JSON. */
    {"protobuf frame undecodable: JSON from there", "/api/v1/namespaces/proto/pods",
     script_proto_bad_frame, 5, 2, "watch_proto_bad_frame.req", PROTO_TRACE, 1, 0, true, false},
    /* A list page that does not unpack (bad_list.pb: a PodList whose item is cut short): the
     * list again, in JSON, and everything after it. */
    {"protobuf list undecodable: listed again in JSON", "/api/v1/namespaces/proto/pods",
     script_proto_bad_list, 5, 2, "watch_proto_bad_list.req", PROTO_TRACE, 1, 0, true, false},
};

static void trace_wait(struct trace *t, const char *want)
{
    double deadline = now_sec() + WAIT_SEC;

    for (;;) {
        pthread_mutex_lock(&t->lock);
        int done = strlen(t->text) >= strlen(want);
        pthread_mutex_unlock(&t->lock);
        if (done)
            break;
        ck_assert_msg(now_sec() < deadline, "waited %ds for trace:\n%s--- got\n%s", WAIT_SEC, want,
                      t->text);
        pause_ms(2);
    }
}

START_TEST(test_watch)
{
    /* Every case twice: the whole list at once, then page by page. */
    const int ncases = (int)(sizeof(watch_cases) / sizeof(watch_cases[0]));
    const struct watch_case *t = &watch_cases[_i % ncases];
    bool paged = _i >= ncases;
    struct kube_watch_opts opts = {.page_limit = t->page_limit,
                                   .backoff_min_ms = 1,
                                   .backoff_max_ms = 4,
                                   .absent_retry_ms = 1,
                                   .max_event = t->protobuf || strstr(t->path, "proto") ? 65536
                                                                                         : 256,
                                   .protobuf = t->protobuf};
    struct paged_trace pt = {.t = {.lock = PTHREAD_MUTEX_INITIALIZER}};
    struct trace *tr = &pt.t;
    struct kube_client *c;
    struct kube_watch *w;
    struct canned_api s;

    canned_api_start(&s, "kube", t->script, t->nscript);
    c = canned_api_client(&s, NULL);
    w = kube_watch_start(c, t->path, paged ? &paged_handler : &trace_handler, &pt, &opts);
    ck_assert_ptr_nonnull(w);
    canned_api_expect(&s, t->req, t->nscript); /* the last one hangs: nothing follows it */
    trace_wait(tr, t->trace);
    ck_assert_msg(strcmp(tr->text, t->trace) == 0, "%s%s: trace\n%s--- want\n%s", t->name,
                  paged ? " (paged)" : "", tr->text, t->trace);
    ck_assert_int_eq(
        !paged || strcmp(t->name, "paged list, split events, bookmark") != 0 || pt.pages == 2, 1);
    ck_assert_int_eq(kube_watch_synced(w), 1);
    ck_assert_int_eq(kube_watch_absent(w), 0);
    ck_assert_uint_eq(kube_watch_restarts(w), t->restarts);
    ck_assert_uint_eq(kube_watch_relists(w), t->relists);
    ck_assert_int_eq(kube_watch_protobuf(w), t->ends_protobuf);
    kube_watch_stop(w); /* aborts the hanging watch */
    kube_client_free(c);
    canned_api_stop(&s);
}
END_TEST

START_TEST(test_watch_stop_unsynced)
{
    static const char *const script[] = {HANG};
    struct trace tr = {.lock = PTHREAD_MUTEX_INITIALIZER};
    struct kube_client *c;
    struct kube_watch *w;
    struct canned_api s;

    canned_api_start(&s, "kube", script, 1);
    c = canned_api_client(&s, NULL);
    w = kube_watch_start(c, "/api/v1/nodes", &trace_handler, &tr, NULL);
    canned_api_wait_requests(&s, 1);
    ck_assert_int_eq(kube_watch_synced(w), 0);
    kube_watch_stop(w); /* a list blocked mid-transfer */
    ck_assert_str_eq(tr.text, "");
    ck_assert_ptr_null(kube_watch_start(c, "api/v1/nodes", &trace_handler, &tr, NULL));
    kube_watch_stop(NULL);
    kube_client_free(c);
    canned_api_stop(&s);
}
END_TEST

static Suite *kube_suite(void)
{
    Suite *s = suite_create("kube_client");
    TCase *tc;

#define N(a) (int)(sizeof(a) / sizeof((a)[0]))
    tc = tcase_create("lines");
    tcase_add_loop_test(tc, test_lines_chunks, 0, N(chunk_sizes));
    tcase_add_test(tc, test_lines_cap);
    tcase_add_loop_test(tc, test_frames_chunks, 0, N(chunk_sizes));
    tcase_add_test(tc, test_frames_cap);
    suite_add_tcase(s, tc);

    tc = tcase_create("kubeconfig");
    tcase_add_loop_test(tc, test_kubeconfig, 0, N(kcfg_cases));
    tcase_add_loop_test(tc, test_base64, 0, N(b64_cases));
    tcase_add_test(tc, test_incluster);
    suite_add_tcase(s, tc);

    tc = tcase_create("request");
    tcase_add_loop_test(tc, test_status, 0, N(status_cases));
    tcase_add_test(tc, test_reply_cap_and_refused);
    tcase_add_test(tc, test_token_rotation);
    tcase_add_test(tc, test_concurrent_bindings);
    tcase_add_test(tc, test_bursts_reuse_connections);
    suite_add_tcase(s, tc);

    tc = tcase_create("helpers");
    tcase_add_test(tc, test_binding);
    tcase_add_test(tc, test_patch_create_delete);
    tcase_add_test(tc, test_request_labels);
    tcase_add_test(tc, test_requests_counted);
    tcase_add_test(tc, test_event);
    suite_add_tcase(s, tc);

    tc = tcase_create("watch");
    tcase_set_timeout(tc, 60);
    tcase_add_loop_test(tc, test_watch, 0, 2 * N(watch_cases));
    tcase_add_test(tc, test_watch_stop_unsynced);
    suite_add_tcase(s, tc);
#undef N
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(kube_suite());
    int failed;

    srunner_run_all(sr, CK_ENV);
    failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
