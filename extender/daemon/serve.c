/*
 * serve.c - `muster serve`: the extender beside kube-scheduler.
 *
 * Wires settings, the API client, the cluster cache, events, metrics, the
 * queue status writer and the HTTP server, then waits for SIGTERM/SIGINT and
 * stops in order: HTTP first (held binds are answered), then the writers and
 * reflectors.
 */
#include <errno.h>
#include <getopt.h>
#include <malloc.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include "daemon_int.h"
#include "base.h"
#include "kube.h"
#include "daemon.h"
#include "housekeeping.h"
#include "gpushare.h"

struct serve_args {
    const char *config;
    const char *kubeconfig;
    const char *listen;
    bool check_only;
    bool offline;
    const char *manifests[16];
    size_t nmanifests;
};

static void usage(FILE *out)
{
    fprintf(out,
            "Usage: muster serve --config FILE [options]\n\n"
            "Run muster's scheduler extender: kube-scheduler calls it through the extenders:\n"
            "stanza of its KubeSchedulerConfiguration (docs/deploy.md).\n\n"
            "Options:\n"
            "  -c, --config FILE      settings file (docs/config.md); defaults apply without one\n"
            "      --check-config     validate the settings file and exit (0 ok, 2 bad)\n"
            "      --kubeconfig FILE  override the settings' kubeconfig (empty = in-cluster)\n"
            "      --listen HOST:PORT override the settings' listen address\n"
            "      --offline          no API server: nodes and queues from -f files, Bindings\n"
            "                         recorded but not posted (benchmarks, trying the wire)\n"
            "  -f, --filename FILE    with --offline: Node, Queue, RayCluster and PodGroup\n"
            "                         manifests to load\n"
            "  -h, --help             this help\n"
            "      --version          print the version\n");
}

static int parse_args(int argc, char **argv, struct serve_args *a)
{
    static const struct option opts[] = {{"config", required_argument, NULL, 'c'},
                                         {"check-config", no_argument, NULL, 'C'},
                                         {"kubeconfig", required_argument, NULL, 'k'},
                                         {"listen", required_argument, NULL, 'l'},
                                         {"offline", no_argument, NULL, 'o'},
                                         {"filename", required_argument, NULL, 'f'},
                                         {"help", no_argument, NULL, 'h'},
                                         {"version", no_argument, NULL, 'V'},
                                         {NULL, 0, NULL, 0}};
    int ch;

    optind = 1;
    while ((ch = getopt_long(argc, argv, "c:f:h", opts, NULL)) != -1) {
        switch (ch) {
        case 'c':
            a->config = optarg;
            break;
        case 'C':
            a->check_only = true;
            break;
        case 'k':
            a->kubeconfig = optarg;
            break;
        case 'l':
            a->listen = optarg;
            break;
        case 'o':
            a->offline = true;
            break;
        case 'f':
            if (a->nmanifests == sizeof(a->manifests) / sizeof(a->manifests[0])) {
                fprintf(stderr, "muster serve: at most 16 -f files\n");
                return 2;
            }
            a->manifests[a->nmanifests++] = optarg;
            break;
        case 'h':
            usage(stdout);
            return 0;
        case 'V':
            printf("muster %s\n", MUSTER_VERSION);
            return 0;
        default:
            usage(stderr);
            return 2;
        }
    }
    if (optind < argc) {
        fprintf(stderr, "muster serve: unexpected argument \"%s\"\n", argv[optind]);
        return 2;
    }
    return -1;
}

static int load_settings(struct cfg_settings *s, const struct serve_args *a)
{
    char err[512];

    if (cfg_settings_init(s) != CFG_OK) {
        fprintf(stderr, "muster serve: out of memory\n");
        return 1;
    }
    if (a->config && cfg_settings_load(s, a->config, err, sizeof(err)) != CFG_OK) {
        fprintf(stderr, "%s\n", err);
        return 2;
    }
    if (a->kubeconfig) {
        free(s->kubeconfig);
        s->kubeconfig = strdup(a->kubeconfig);
    }
    if (a->listen) {
        unsigned port;

        if (cfg_hostport_parse(a->listen, NULL, 0, &port) != CFG_OK) {
            fprintf(stderr,
                    "muster serve: --listen \"%.300s\" is not host:port (a host of at most %d "
                    "characters)\n",
                    a->listen, CFG_HOST_MAX);
            return 2;
        }
        free(s->listen);
        s->listen = strdup(a->listen);
    }
    return -1;
}

/* ---- metrics mirrored from the engine ------------------------------------- */

/* Seconds a gang may take from first sighting to bound: quick binds to a long wait. */
static const double time_to_bind_buckets[] = {0.1, 0.25, 0.5, 1,   2.5,  5,    10,  30,
                                              60,  120,  300, 600, 1800, 3600, 7200};

struct collect_ctx {
    struct ext_daemon *d;
    int64_t now;
    double gangs[3]; /* by enum policy_gang_state */
};

static void collect_gang(const struct policy_gang_view *v, void *ctx)
{
    struct collect_ctx *x = ctx;
    struct ext_series *oldest;
    double age = (double)(x->now - v->since) / 1000.0;

    x->gangs[v->state] += 1;
    if (v->state != POLICY_GANG_PENDING || v->members == 0)
        return;
    oldest = ext_metric_with(x->d->queue_oldest_pending, (const char *[]){v->queue});
    if (age > ext_series_value(oldest))
        ext_series_set(oldest, age);
}

/* A quota or limit; -1 (unlimited) gets no series. */
static void set_bound(struct ext_metric *m, const char *queue, int r, int64_t v, double scale)
{
    if (v >= 0)
        ext_series_set(ext_metric_with(m, (const char *[]){queue, policy_resource_name(r)}),
                       (double)v / scale);
}

static void collect_queue(const struct policy_queue_view *v, void *ctx)
{
    struct ext_daemon *d = ((struct collect_ctx *)ctx)->d;

    for (int r = 0; r < POLICY_RES_COUNT; r++) {
        double scale = r == POLICY_RES_MEMORY ? 1.0 : 1000.0;
        const char *alloc[] = {v->name, policy_resource_name(r), "allocated"};
        const char *res[] = {v->name, policy_resource_name(r), "reserved"};
        const char *qr[] = {v->name, policy_resource_name(r)};

        ext_series_set(ext_metric_with(d->queue_usage, alloc), v->allocated.v[r] / scale);
        ext_series_set(ext_metric_with(d->queue_usage, res), v->reserved.v[r] / scale);
        set_bound(d->queue_quota, v->name, r, v->quota.v[r], scale);
        set_bound(d->queue_limit, v->name, r, v->limit.v[r], scale);
        ext_series_set(ext_metric_with(d->queue_fair_share, qr), v->fair_share.v[r] / scale);
        ext_series_set(ext_metric_with(d->queue_demand, qr), v->demand.v[r] / scale);
        if (v->has_recent_usage)
            ext_series_set(ext_metric_with(d->queue_recent_usage, qr),
                           (double)v->recent_usage.v[r] / POLICY_USAGE_UNIT);
    }
    ext_series_set(ext_metric_with(d->queue_pending, (const char *[]){v->name}), v->pending_gangs);
    ext_series_set(ext_metric_with(d->queue_oldest_pending, (const char *[]){v->name}), 0);
}

/* Shared GPUs on the nodes that have any; the others get no series. */
static void collect_node(const struct policy_node_view *v, void *ctx)
{
    struct ext_daemon *d = ((struct collect_ctx *)ctx)->d;
    const char *node[] = {v->name};
    double shares = 0, pods = 0;

    if (v->ngroups == 0)
        return;
    for (size_t i = 0; i < v->ngroups; i++) {
        shares += v->groups[i].used_milli / 1000.0;
        pods += v->groups[i].pods;
    }
    ext_series_set(ext_metric_with(d->gpu_groups, node), (double)v->ngroups);
    ext_series_set(ext_metric_with(d->gpu_group_shares, node), shares);
    ext_series_set(ext_metric_with(d->gpu_group_pods, node), pods);
}

static void collect(struct ext_metrics *m, void *ctx)
{
    struct ext_daemon *d = ctx;
    struct collect_ctx x = {.d = d, .now = ext_now_ms()};
    struct ext_metric *rebuilt[] = {d->queue_usage,      d->queue_pending,
                                    d->queue_quota,      d->queue_limit,
                                    d->queue_oldest_pending, d->gpu_groups,
                                    d->gpu_group_shares, d->gpu_group_pods,
                                    d->queue_fair_share, d->queue_demand,
                                    d->queue_recent_usage};
    char why[256];

    for (size_t i = 0; i < sizeof(rebuilt) / sizeof(rebuilt[0]); i++)
        ext_metric_clear(rebuilt[i]);
    pthread_mutex_lock(&d->cache.lock);
    policy_each_queue(d->cache.engine, collect_queue, &x); /* before gangs: every queue at 0 */
    policy_each_gang(d->cache.engine, collect_gang, &x);
    policy_each_node(d->cache.engine, collect_node, &x);
    pthread_mutex_unlock(&d->cache.lock);
    ext_series_set(ext_metric_with(d->ready, NULL), cache_ready(&d->cache, why, sizeof(why)));
    for (int s = 0; s < 3; s++)
        ext_series_set(ext_metric_with(d->gangs, (const char *[]){policy_gang_state_name(s)}),
                       x.gangs[s]);
    for (int src = 0; src < CACHE_SOURCE_COUNT; src++) {
        struct ext_series *series =
            ext_metric_with(d->watch_restarts, (const char *[]){cache_source_name(src)});
        double now = (double)cache_watch_restarts(&d->cache, src);

        if (now > ext_series_value(series))
            ext_series_add(series, now - ext_series_value(series));
        ext_series_set(ext_metric_with(d->watch_protobuf, (const char *[]){cache_source_name(src)}),
                       cache_watch_protobuf(&d->cache, src));
    }
    (void)m;
}

static int register_metrics(struct ext_daemon *d)
{
    static const char *const results[] = {"evicted", "refused", "unchecked", "failed"};
    struct ext_metrics *m = d->metrics;

    d->bind_outcomes = ext_metrics_counter(
        m, "muster_bind_outcomes_total", "Bind calls by what the gang barrier answered", "outcome");
    d->bind_wait_seconds = ext_metrics_histogram(
        m, "muster_bind_wait_seconds", "Time binds were held at the gang barrier", NULL,
        ext_metrics_latency_buckets, ext_metrics_latency_nbuckets);
    d->bindings = ext_metrics_counter(m, "muster_bindings_total",
                                      "Bindings posted to the API server", "result");
    d->gangs = ext_metrics_gauge(m, "muster_gangs", "Gangs by state", "state");
    d->queue_usage =
        ext_metrics_gauge(m, "muster_queue_usage", "Queue usage (cpu cores, memory bytes, GPUs)",
                          "queue,resource,kind");
    d->queue_pending = ext_metrics_gauge(m, "muster_queue_pending_gangs",
                                         "Gangs waiting whole in each queue", "queue");
    d->watch_restarts = ext_metrics_counter(m, "muster_watch_restarts_total",
                                            "Reflector reconnects after a failure", "resource");
    d->watch_protobuf = ext_metrics_gauge(
        m, "muster_watch_protobuf",
        "1 while the resource is read as protobuf (watchProtobuf: pods, nodes), else 0", "resource");
    d->leader = ext_metrics_gauge(m, "muster_leader",
                                  "1 while this replica's kube-scheduler holds the Lease and "
                                  "muster's housekeeping writes; 0 on the standby",
                                  NULL);
    d->ready = ext_metrics_gauge(m, "muster_ready",
                                 "1 once every watch has listed (what /readyz says), else 0", NULL);
    d->queue_quota = ext_metrics_gauge(m, "muster_queue_quota",
                                       "Queue quota (cpu cores, memory bytes, GPUs); "
                                       "no series = unlimited",
                                       "queue,resource");
    d->queue_limit = ext_metrics_gauge(m, "muster_queue_limit",
                                       "Queue limit (cpu cores, memory bytes, GPUs); "
                                       "no series = unlimited",
                                       "queue,resource");
    d->queue_oldest_pending = ext_metrics_gauge(
        m, "muster_queue_oldest_pending_gang_seconds",
        "Age of the queue's oldest pending gang, since this muster first saw one of its members",
        "queue");
    d->gang_time_to_bind = ext_metrics_histogram(
        m, "muster_gang_time_to_bind_seconds",
        "From this muster first seeing a gang's earliest member to the gang committed whole",
        NULL, time_to_bind_buckets, sizeof(time_to_bind_buckets) / sizeof(time_to_bind_buckets[0]));
    d->gpu_groups = ext_metrics_gauge(m, "muster_gpu_groups",
                                      "Shared GPUs (GPU groups) open on the node", "node");
    d->gpu_group_shares = ext_metrics_gauge(
        m, "muster_gpu_group_shares",
        "Sum of the shares placed (bound or planned) in the node's GPU groups, in GPUs", "node");
    d->gpu_group_pods = ext_metrics_gauge(m, "muster_gpu_group_pods",
                                          "Pods sharing the node's GPU groups", "node");
    d->reservation_timeouts = ext_metrics_counter(
        m, "muster_reservation_timeouts_total",
        "Reservation pods that did not report their GPU within gpuSharing.reservationTimeout",
        "node");
    d->evictions = ext_metrics_counter(m, "muster_evictions_total",
                                       "Pods evicted for reclaim or preemption (evicted), refused "
                                       "whole with their gang before any was evicted (refused), "
                                       "refused because their disruption budgets could not be "
                                       "read (unchecked), or failed after their gang's dry run "
                                       "passed (failed)",
                                       "kind,result");
    d->queue_fair_share = ext_metrics_gauge(
        m, "muster_queue_fair_share",
        "Each queue's fair share of its level's capacity (cpu cores, memory bytes, GPUs)",
        "queue,resource");
    d->queue_demand = ext_metrics_gauge(
        m, "muster_queue_demand",
        "What each queue's bound and waiting gangs ask (cpu cores, memory bytes, GPUs)",
        "queue,resource");
    d->queue_recent_usage = ext_metrics_gauge(
        m, "muster_queue_recent_usage",
        "Each queue's usage over time (fairness.halfLife, fairness.window) as a fraction of the "
        "cluster's capacity over the same time, decayed alike: what moves its fair share",
        "queue,resource");
    d->kube_requests = ext_metrics_counter(
        m, "muster_kube_requests_total",
        "Requests to the API server by verb (LIST, WATCH, GET, CREATE, PATCH, DELETE), "
        "resource (pods/binding, events, queues/status) and HTTP status (error: no response)",
        "verb,resource,code");
    d->kube_connections = ext_metrics_counter(
        m, "muster_kube_connections_total",
        "Connections opened to the API server (each a TLS handshake; kept open and reused after)",
        NULL);
    if (!d->kube_requests || !d->kube_connections || !d->bind_outcomes || !d->bind_wait_seconds ||
        !d->bindings || !d->gangs ||
        !d->queue_usage || !d->queue_pending || !d->watch_restarts || !d->watch_protobuf || !d->leader || !d->ready ||
        !d->queue_quota || !d->queue_limit || !d->queue_oldest_pending ||
        !d->gang_time_to_bind || !d->gpu_groups || !d->gpu_group_shares || !d->gpu_group_pods ||
        !d->reservation_timeouts || !d->evictions || !d->queue_fair_share || !d->queue_demand ||
        !d->queue_recent_usage)
        return EXT_ENOMEM;
    /* Every series from the start, so a rate over them is defined before the first eviction. */
    for (int k = POLICY_EVICT_RECLAIM; k <= POLICY_EVICT_PREEMPT; k++) {
        for (size_t r = 0; r < sizeof(results) / sizeof(results[0]); r++) {
            const char *labels[] = {evict_kind_name(k), results[r]};

            ext_series_add(ext_metric_with(d->evictions, labels), 0);
        }
    }
    return ext_metrics_on_collect(m, collect, d);
}

/* ---- wiring ---------------------------------------------------------------- */

static char *read_file(const char *path, char *err, size_t errlen)
{
    FILE *f = fopen(path, "rb");
    char *buf = NULL;
    long n;

    if (!f) {
        snprintf(err, errlen, "%s: %s", path, strerror(errno));
        return NULL;
    }
    if (fseek(f, 0, SEEK_END) == 0 && (n = ftell(f)) >= 0 && n < (1 << 20) &&
        fseek(f, 0, SEEK_SET) == 0 && (buf = calloc(1, (size_t)n + 1)) &&
        fread(buf, 1, (size_t)n, f) != (size_t)n) {
        free(buf);
        buf = NULL;
    }
    if (!buf)
        snprintf(err, errlen, "%s: cannot read", path);
    fclose(f);
    return buf;
}

static int connect_api(struct ext_daemon *d, char *err, size_t errlen)
{
    /* Every worker may post a Binding at once, and a gang's commit posts its members 16 at a
     * time, beside the Event, eviction, lease and status writers: at most this many requests
     * in flight, on connections kept open (the API server, not more of them, sets the pace:
     * docs/bench.md). At most 96, inside the descriptors the HTTP server leaves to the API
     * client, the watches and files (HTTP_FD_RESERVE). */
    size_t workers = (size_t)d->settings.server.workers;
    struct kube_client_opts opts = {.max_connections = workers + 16 < 96 ? workers + 16 : 96};
    struct kube_conn conn;
    int rc;

    kube_conn_init(&conn);
    rc = kube_conn_discover(&conn, *d->settings.kubeconfig ? d->settings.kubeconfig : NULL, NULL,
                            err, errlen);
    if (rc == EXT_OK && !(d->kube = kube_client_new(&conn, &opts, err, errlen)))
        rc = EXT_EIO;
    kube_conn_cleanup(&conn);
    return rc;
}

/* --offline: Node, Queue, RayCluster and PodGroup manifests straight into the engine. */
static const struct {
    const char *kind;
    enum cache_source src;
} offline_kinds[] = {{"Node", CACHE_NODES},
                     {"Queue", CACHE_QUEUES},
                     {"RayCluster", CACHE_RAYCLUSTERS},
                     {"PodGroup", CACHE_PODGROUPS_X}};

static void load_offline_doc(struct ext_daemon *d, const cJSON *doc)
{
    const cJSON *kind = cJSON_GetObjectItemCaseSensitive(doc, "kind");

    for (size_t i = 0; cJSON_IsString(kind) && i < sizeof(offline_kinds) / sizeof(offline_kinds[0]);
         i++)
        if (strcmp(kind->valuestring, offline_kinds[i].kind) == 0)
            cache_apply(&d->cache, offline_kinds[i].src, "ADDED", doc);
}

static int load_offline(struct ext_daemon *d, const struct serve_args *a, char *err, size_t errlen)
{
    for (size_t i = 0; i < a->nmanifests; i++) {
        struct cfg_docs docs;

        if (cfg_docs_load_file(&docs, a->manifests[i], err, errlen) != CFG_OK)
            return EXT_EINVAL;
        for (size_t k = 0; k < docs.n; k++)
            load_offline_doc(d, docs.docs[k]);
        cfg_docs_cleanup(&docs);
    }
    return EXT_OK;
}

/* The HTTP limits of the settings (docs/config.md, "Connections and memory"). */
static void http_config_from(struct ext_http_config *hc, const struct cfg_settings *s)
{
    ext_http_config_init(hc);
    hc->listen = s->listen;
    hc->limits.max_body = (size_t)s->max_body_bytes;
    hc->limits.max_names = (size_t)s->max_node_names;
    hc->limits.decode_budget = (size_t)s->server.decode_budget;
    hc->max_connections = (unsigned)s->server.max_connections;
    hc->max_per_client = (unsigned)s->server.max_per_client;
    hc->idle_timeout_s = (unsigned)((s->server.idle_timeout_ms + 999) / 1000);
    hc->workers = (unsigned)s->server.workers;
    hc->max_buffered = (size_t)s->server.max_buffered;
    hc->large_decodes = (unsigned)s->server.large_decodes;
}

/* The PEM texts of a TLS stanza; all NULL without one. */
struct pem_set {
    char *cert, *key, *client_ca;
};

static int pem_read(struct pem_set *p, const struct cfg_tls *t, char *err, size_t errlen)
{
    memset(p, 0, sizeof(*p));
    if (!t->cert_file)
        return EXT_OK;
    p->cert = read_file(t->cert_file, err, errlen);
    p->key = p->cert ? read_file(t->key_file, err, errlen) : NULL;
    if (p->key && t->client_ca_file)
        p->client_ca = read_file(t->client_ca_file, err, errlen);
    if (!p->cert || !p->key || (t->client_ca_file && !p->client_ca))
        return EXT_EINVAL;
    return EXT_OK;
}

static void pem_cleanup(struct pem_set *p)
{
    free(p->cert);
    free(p->key);
    free(p->client_ca);
    memset(p, 0, sizeof(*p));
}

static int start_http(struct ext_daemon *d, char *err, size_t errlen)
{
    struct ext_http_config hc;
    struct pem_set pem;
    int rc;

    http_config_from(&hc, &d->settings);
    rc = pem_read(&pem, &d->settings.tls, err, errlen);
    if (rc == EXT_OK) {
        hc.tls_cert_pem = pem.cert;
        hc.tls_key_pem = pem.key;
        hc.tls_client_ca_pem = pem.client_ca;
        rc = ext_http_server_new(&hc, &ext_daemon_handlers, d, d->metrics, &d->http, err, errlen);
    }
    pem_cleanup(&pem);
    return rc;
}

/* ---- the GPU-sharing admission webhook (HTTPS, its own listener) ---------------- */

static void any_gpu_memory(const struct policy_node_view *v, void *ctx)
{
    *(bool *)ctx |= v->gpu_memory_mib > 0;
}

static bool has_gpu_memory_labels(void *ctx)
{
    struct ext_daemon *d = ctx;
    bool any = false;

    pthread_mutex_lock(&d->cache.lock);
    policy_each_node(d->cache.engine, any_gpu_memory, &any);
    pthread_mutex_unlock(&d->cache.lock);
    return any;
}

static int admission(void *ctx, const char *body, size_t len, char **out, size_t *outlen, char *err,
                     size_t errlen)
{
    struct ext_daemon *d = ctx;
    struct webhook_opts o = {.runtime_class_name = d->settings.gpu_sharing.runtime_class_name,
                             .has_gpu_memory_labels = has_gpu_memory_labels,
                             .ctx = d};
    int rc = webhook_review(body, len, &o, out, outlen, err, errlen);

    if (rc != EXT_OK)
        ext_log_warn("admission review refused", "error", err);
    return rc;
}

static const struct ext_http_handlers webhook_handlers = {.admission = admission, .ready = NULL};

static int start_webhook(struct ext_daemon *d, char *err, size_t errlen)
{
    const struct cfg_gpu_sharing *g = &d->settings.gpu_sharing;
    struct ext_http_config hc;
    struct pem_set pem;
    int rc;

    if (!g->webhook_listen || !*g->webhook_listen)
        return EXT_OK;
    http_config_from(&hc, &d->settings);
    hc.listen = g->webhook_listen;
    hc.limits = ext_proto_limits_default;
    hc.workers = 2; /* the API server's admission calls, one pod at a time */
    rc = pem_read(&pem, &g->webhook_tls, err, errlen);
    if (rc == EXT_OK) {
        hc.tls_cert_pem = pem.cert;
        hc.tls_key_pem = pem.key;
        hc.tls_client_ca_pem = pem.client_ca;
        rc = ext_http_server_new(&hc, &webhook_handlers, d, d->metrics, &d->webhook, err, errlen);
    }
    pem_cleanup(&pem);
    if (rc == EXT_OK)
        ext_log_info("serving the GPU-sharing webhook", "listen", g->webhook_listen, "path",
                     "/mutate-pods");
    return rc;
}

static struct evictor *start_evictor(struct ext_daemon *d)
{
    struct evictor_config ec = {.kube = d->kube,
                                .cache = &d->cache,
                                .source = evict_engine_source(&d->cache),
                                .events = d->events,
                                .evictions = d->evictions,
                                .unasked_wait_ms = d->settings.evictions.unasked_wait_ms};
    struct evictor *e = evictor_start(&ec);

    if (!e)
        ext_log_error("cannot start the evictor: reclaim and preemption will not evict");
    return e;
}

#define TRIM_EVERY_S 10

/*
 * The main thread waits for SIGTERM or SIGINT, and meanwhile gives freed heap back to the
 * system every TRIM_EVERY_S: the trim threshold is set high so the request path keeps its
 * buffers, and a List of every pod, a burst of large calls or the --offline files would
 * otherwise stay resident for good (50,000 pods on 5,000 nodes: 68 MiB, 54 MiB trimmed).
 */
static int wait_for_signal(void)
{
    struct timespec every = {.tv_sec = TRIM_EVERY_S};
    sigset_t set;
    int sig;

    sigemptyset(&set);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGINT);
    malloc_trim(0); /* what starting took */
    while ((sig = sigtimedwait(&set, NULL, &every)) < 0)
        if (errno == EAGAIN)
            malloc_trim(0);
    return sig;
}

void ext_daemon_cleanup(struct ext_daemon *d)
{
    if (d->http) {
        ext_http_server_stop(d->http, 5000);
        ext_http_server_free(d->http);
    }
    ext_http_server_free(d->webhook);
    ext_barrier_stop(d);
    evictor_stop(d->evictor); /* after housekeeping, which tells it who leads */
    ext_events_free(d->events);
    cache_cleanup(&d->cache);
    kube_client_free(d->kube);
    ext_metrics_free(d->metrics);
    pthread_cond_destroy(&d->barrier_changed);
    cfg_settings_cleanup(&d->settings);
}

int ext_daemon_init(struct ext_daemon *d, char *err, size_t errlen)
{
    pthread_condattr_t ca;
    int rc;

    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&d->barrier_changed, &ca);
    pthread_condattr_destroy(&ca);
    d->metrics = ext_metrics_new();
    if (!d->metrics || register_metrics(d) != EXT_OK)
        return ext_errf(err, errlen, EXT_ENOMEM, "out of memory");
    if (d->kube) { /* connected before the metrics existed */
        kube_client_count_requests(d->kube, d->kube_requests);
        kube_client_count_connections(d->kube, d->kube_connections);
    }
    rc = cache_init(&d->cache, &d->settings, d->kube, err, errlen);
    if (rc != EXT_OK)
        return rc;
    d->share = (struct gpushare){.settings = &d->settings.gpu_sharing,
                                 .kube = d->kube,
                                 .engine = d->cache.engine,
                                 .engine_lock = &d->cache.lock,
                                 .stopping = &d->stopping,
                                 .reservation_timeouts = d->reservation_timeouts};
    return EXT_OK;
}

/* Every held bind keeps a connection: take as many descriptors as the hard limit allows
 * (the HTTP server lowers server.maxConnections to fit, with a warning, if that is short). */
static void raise_descriptor_limit(void)
{
    struct rlimit rl;

    if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
        rl.rlim_cur = rl.rlim_max;
        setrlimit(RLIMIT_NOFILE, &rl);
    }
}

static int run(struct ext_daemon *d, const struct serve_args *a)
{
    char err[1024];
    struct housekeeping *qs = NULL;
    sigset_t set;
    int rc;

    /* Signals are taken by sigwait in this thread only. */
    sigemptyset(&set);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGINT);
    pthread_sigmask(SIG_BLOCK, &set, NULL);
    signal(SIGPIPE, SIG_IGN);
    /* Request and reply buffers of a 5,000-node call are a few hundred KiB: keep
     * them in the heap instead of mapping and unmapping them on every call. */
    mallopt(M_MMAP_THRESHOLD, 64 << 20);
    mallopt(M_TRIM_THRESHOLD, 256 << 20);
    /* A few heaps for every thread (the workers take turns at the cache's lock anyway):
     * resident memory does not grow by an arena per thread. Large parses are given back
     * with malloc_trim (wire/http_pool.c). */
    mallopt(M_ARENA_MAX, 4);
    raise_descriptor_limit();
    if (!a->offline && connect_api(d, err, sizeof(err)) != EXT_OK) {
        ext_log_error("cannot reach the API server", "error", err);
        return 1;
    }
    if (ext_daemon_init(d, err, sizeof(err)) != EXT_OK ||
        (a->offline ? load_offline(d, a, err, sizeof(err))
                    : cache_start(&d->cache, err, sizeof(err))) != EXT_OK) {
        ext_log_error("cannot start", "error", err);
        return 1;
    }
    if (ext_barrier_start(d) != EXT_OK) {
        ext_log_error("cannot start", "error", "cannot start the bind barrier's timer");
        return 1;
    }
    if (d->kube) {
        d->events = ext_events_new(d->kube);
        d->evictor = start_evictor(d);
        qs = housekeeping_start(d);
    }
    if (start_http(d, err, sizeof(err)) != EXT_OK) {
        ext_log_error("cannot serve", "listen", d->settings.listen, "error", err);
        housekeeping_stop(qs);
        return 1;
    }
    if (start_webhook(d, err, sizeof(err)) != EXT_OK) {
        ext_log_error("cannot serve the webhook", "listen", d->settings.gpu_sharing.webhook_listen,
                      "error", err);
        housekeeping_stop(qs);
        return 1;
    }
    snprintf(err, sizeof(err), "%u", (unsigned)ext_http_server_port(d->http));
    ext_log_info("serving", "version", MUSTER_VERSION, "listen", d->settings.listen, "port", err,
                 "strategy", cfg_strategy_name(d->settings.strategy), "apiServer",
                 d->kube ? kube_client_server(d->kube) : "offline");
    rc = wait_for_signal();
    ext_log_info("stopping", "signal", rc == SIGTERM ? "SIGTERM" : "SIGINT");
    ext_http_server_stop(d->http, d->settings.bind_wait_ms + 2000);
    if (d->webhook)
        ext_http_server_stop(d->webhook, 2000);
    housekeeping_stop(qs);
    return 0;
}

int serve_main(int argc, char **argv)
{
    struct serve_args a = {0};
    struct ext_daemon d;
    int rc = parse_args(argc, argv, &a);

    if (rc >= 0)
        return rc;
    memset(&d, 0, sizeof(d));
    rc = load_settings(&d.settings, &a);
    if (rc >= 0) {
        cfg_settings_cleanup(&d.settings);
        return rc;
    }
    if (a.check_only) {
        printf("%s: ok\n", a.config ? a.config : "(defaults)");
        cfg_settings_cleanup(&d.settings);
        return 0;
    }
    ext_log_setup(d.settings.log.format, d.settings.log.level);
    rc = run(&d, &a);
    ext_daemon_cleanup(&d);
    return rc;
}
