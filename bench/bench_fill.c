/*
 * bench_fill.c - fill a `muster serve --offline` with pods, as kube-scheduler would, and say how
 * the rate holds up as the cluster fills.
 *
 *   bench_fill URL PODS [-c CLIENTS] [-g GANG] [-n NODES] [-k NAMES] [-s NS] [-e EVERY]
 *
 * Each of CLIENTS threads (default 4) takes the next gang (GANG pods, default 1: single pods),
 * POSTs /filter for each member (a gang's workers shown to muster first, since offline it knows a
 * pod only from its filter) with the NodeNames node-00001 ... node-NAMES (default NODES,
 * default 5000; the names bench/nodes_gen.sh gives), then /bind for every member at once (a gang's
 * binds are held at muster's barrier until the last arrives, as kube-scheduler's bind goroutines
 * are). Gang g's pods are rc-NNNNN-head and rc-NNNNN-w-MM with label ray.io/cluster=rc-NNNNN; the
 * RayClusters declaring them are loaded into muster with -f (bench/offline_fill.sh writes them).
 *
 * Prints one line per EVERY bound pods (default 5000): pods bound so far, seconds since the first
 * call, pods/s in that window, mean filter and bind latency in that window; then a summary line
 *   RESULT pods=... seconds=... rate=... failed=...
 * Exits 1 if any call failed or any pod was refused.
 */
#include <curl/curl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define MAX_GANG 64

struct fill {
    const char *url, *ns;
    long pods, gang, nodes, names, every;
    char *names_json; /* "node-00001","node-00002",... */
    atomic_long next_gang;
    atomic_long bound, failed;
    double start;
    pthread_mutex_t lock; /* the window below and stdout */
    long window_start_bound;
    double window_start, filter_ms, bind_ms;
    long filter_calls, bind_calls;
};

struct buf {
    char *data;
    size_t len, cap;
};

static double now_s(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static size_t on_data(char *ptr, size_t size, size_t nmemb, void *userdata)
{
    struct buf *b = userdata;
    size_t n = size * nmemb;

    if (b->len + n + 1 > b->cap) {
        size_t cap = (b->len + n + 1) * 2;
        char *d = realloc(b->data, cap);

        if (!d)
            return 0;
        b->data = d;
        b->cap = cap;
    }
    memcpy(b->data + b->len, ptr, n);
    b->len += n;
    b->data[b->len] = '\0';
    return n;
}

static void pod_name(const struct fill *f, long gang, long member, char *out, size_t len)
{
    if (f->gang == 1)
        snprintf(out, len, "p-%06ld", gang);
    else if (member == 0)
        snprintf(out, len, "rc-%05ld-head", gang);
    else
        snprintf(out, len, "rc-%05ld-w-%02ld", gang, member);
}

/* The Pod as kube-scheduler sends it: one whole GPU for workers and single pods, CPU for heads. */
static char *pod_json(const struct fill *f, long gang, long member)
{
    char name[64], labels[256], *out = NULL;
    bool head = f->gang > 1 && member == 0;

    pod_name(f, gang, member, name, sizeof(name));
    if (f->gang > 1)
        snprintf(labels, sizeof(labels),
                 "{\"ray.io/cluster\":\"rc-%05ld\",\"ray.io/node-type\":\"%s\","
                 "\"ray.io/group\":\"%s\",\"ray.io/is-ray-node\":\"yes\"}",
                 gang, head ? "head" : "worker", head ? "headgroup" : "gpu");
    else
        snprintf(labels, sizeof(labels), "{\"app\":\"bench-fill\"}");
    if (asprintf(
            &out,
            "{\"metadata\":{\"name\":\"%s\",\"namespace\":\"%s\",\"uid\":\"uid-%s\","
            "\"labels\":%s},\"spec\":{\"schedulerName\":\"muster\",\"containers\":"
            "[{\"name\":\"c\",\"resources\":{\"requests\":{\"cpu\":\"%s\",\"memory\":\"%s\"%s},"
            "\"limits\":{%s}}}]},\"status\":{\"phase\":\"Pending\"}}",
            name, f->ns, name, labels, head ? "4" : "1", head ? "16Gi" : "4Gi",
            head ? "" : ",\"nvidia.com/gpu\":\"1\"", head ? "" : "\"nvidia.com/gpu\":\"1\"") < 0)
        return NULL;
    return out;
}

static CURL *easy_post(const char *url, const char *verb, const char *body, struct buf *reply,
                       struct curl_slist *headers)
{
    CURL *h = curl_easy_init();
    char full[512];

    if (!h)
        return NULL;
    snprintf(full, sizeof(full), "%s/%s", url, verb);
    curl_easy_setopt(h, CURLOPT_URL, full);
    curl_easy_setopt(h, CURLOPT_POSTFIELDS, body);
    curl_easy_setopt(h, CURLOPT_HTTPHEADER, headers);
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_data);
    curl_easy_setopt(h, CURLOPT_WRITEDATA, reply);
    curl_easy_setopt(h, CURLOPT_TIMEOUT, 60L);
    curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
    return h;
}

/* The one node a filter answer passes, into node; false if none. */
static bool passing_node(const char *reply, char *node, size_t len)
{
    const char *p = strstr(reply, "\"NodeNames\":[\"");
    const char *end;

    if (!p)
        return false;
    p += strlen("\"NodeNames\":[\"");
    end = strchr(p, '"');
    if (!end || (size_t)(end - p) >= len)
        return false;
    memcpy(node, p, (size_t)(end - p));
    node[end - p] = '\0';
    return true;
}

static bool bind_ok(const struct buf *reply)
{
    return reply->data && (strstr(reply->data, "\"Error\":\"\"") ||
                           strstr(reply->data, "\"Error\":null") || !strstr(reply->data, "Error"));
}

static void account(struct fill *f, long pods, double filter_ms, long nfilter, double bind_ms,
                    long nbind)
{
    long before, after;

    pthread_mutex_lock(&f->lock);
    f->filter_ms += filter_ms;
    f->filter_calls += nfilter;
    f->bind_ms += bind_ms;
    f->bind_calls += nbind;
    before = atomic_fetch_add(&f->bound, pods);
    after = before + pods;
    if (after / f->every != before / f->every) {
        double t = now_s();

        printf("bound %6ld  at %7.1f s  %7.0f pods/s in the last %ld  filter %6.2f ms  bind %6.2f "
               "ms\n",
               after, t - f->start, (double)(after - f->window_start_bound) / (t - f->window_start),
               after - f->window_start_bound,
               f->filter_ms / (f->filter_calls ? f->filter_calls : 1),
               f->bind_ms / (f->bind_calls ? f->bind_calls : 1));
        fflush(stdout);
        f->window_start = t;
        f->window_start_bound = after;
        f->filter_ms = f->bind_ms = 0;
        f->filter_calls = f->bind_calls = 0;
    }
    pthread_mutex_unlock(&f->lock);
}

/* Filter every member, then bind them all at once. Returns the pods bound. */
static long one_gang(struct fill *f, CURL *filter_h, CURLM *multi, long g, struct curl_slist *hdr)
{
    char nodes[MAX_GANG][64], name[64];
    char *bodies[MAX_GANG] = {0};
    struct buf replies[MAX_GANG] = {0}, reply = {0};
    CURL *binds[MAX_GANG] = {0};
    double t0, filter_ms = 0, bind_ms;
    long ok = 0;
    int running;

    /* Offline, muster learns of a pod from its filter; in a cluster the watch has shown it every
     * member before the first is filtered. So the workers are shown first (their answer: the
     * gang waits for its head), untimed; then every member is filtered, the head first. */
    for (long m = 1; f->gang > 1 && m < f->gang; m++) {
        char *pod = pod_json(f, g, m), *body = NULL;

        if (pod && asprintf(&body, "{\"Pod\":%s,\"Nodes\":null,\"NodeNames\":[]}", pod) >= 0) {
            reply.len = 0;
            curl_easy_setopt(filter_h, CURLOPT_POSTFIELDS, body);
            curl_easy_setopt(filter_h, CURLOPT_WRITEDATA, &reply);
            curl_easy_perform(filter_h);
        }
        free(pod);
        free(body);
    }
    for (long m = 0; m < f->gang; m++) {
        char *pod = pod_json(f, g, m), *body = NULL;

        if (!pod || asprintf(&body, "{\"Pod\":%s,\"Nodes\":null,\"NodeNames\":[%s]}", pod,
                             f->names_json) < 0) {
            free(pod);
            goto fail;
        }
        free(pod);
        reply.len = 0;
        curl_easy_setopt(filter_h, CURLOPT_POSTFIELDS, body);
        curl_easy_setopt(filter_h, CURLOPT_WRITEDATA, &reply);
        t0 = now_s();
        if (curl_easy_perform(filter_h) != CURLE_OK || !reply.data ||
            !passing_node(reply.data, nodes[m], sizeof(nodes[m]))) {
            fprintf(stderr, "bench_fill: gang %ld member %ld: filter passed no node: %.300s\n", g,
                    m, reply.data ? reply.data : "(no reply)");
            free(body);
            goto fail;
        }
        filter_ms += (now_s() - t0) * 1000;
        free(body);
    }
    t0 = now_s();
    for (long m = 0; m < f->gang; m++) {
        pod_name(f, g, m, name, sizeof(name));
        if (asprintf(&bodies[m],
                     "{\"PodName\":\"%s\",\"PodNamespace\":\"%s\",\"PodUID\":\"uid-%s\","
                     "\"Node\":\"%s\"}",
                     name, f->ns, name, nodes[m]) < 0)
            goto fail;
        binds[m] = easy_post(f->url, "bind", bodies[m], &replies[m], hdr);
        curl_multi_add_handle(multi, binds[m]);
    }
    do {
        curl_multi_perform(multi, &running);
        if (running)
            curl_multi_poll(multi, NULL, 0, 100, NULL);
    } while (running);
    bind_ms = (now_s() - t0) * 1000 * (double)f->gang;
    for (long m = 0; m < f->gang; m++) {
        long code = 0;

        curl_easy_getinfo(binds[m], CURLINFO_RESPONSE_CODE, &code);
        if (code == 200 && bind_ok(&replies[m]))
            ok++;
        else
            fprintf(stderr, "bench_fill: gang %ld member %ld: bind refused (%ld): %.300s\n", g, m,
                    code, replies[m].data ? replies[m].data : "(no reply)");
    }
    account(f, ok, filter_ms, f->gang, bind_ms, f->gang);
fail:
    for (long m = 0; m < f->gang; m++) {
        if (binds[m]) {
            curl_multi_remove_handle(multi, binds[m]);
            curl_easy_cleanup(binds[m]);
        }
        free(bodies[m]);
        free(replies[m].data);
    }
    free(reply.data);
    return ok;
}

static void *client(void *arg)
{
    struct fill *f = arg;
    struct curl_slist *hdr = curl_slist_append(NULL, "Content-Type: application/json");
    struct buf dummy = {0};
    CURL *filter_h = easy_post(f->url, "filter", "", &dummy, hdr);
    CURLM *multi = curl_multi_init();
    long ngangs = f->pods / f->gang;

    curl_multi_setopt(multi, CURLMOPT_MAX_HOST_CONNECTIONS, (long)MAX_GANG);
    for (;;) {
        long g = atomic_fetch_add(&f->next_gang, 1);

        if (g >= ngangs)
            break;
        if (one_gang(f, filter_h, multi, g + 1, hdr) != f->gang)
            atomic_fetch_add(&f->failed, f->gang);
    }
    curl_multi_cleanup(multi);
    curl_easy_cleanup(filter_h);
    curl_slist_free_all(hdr);
    free(dummy.data);
    return NULL;
}

static char *names_list(long n)
{
    char *out = malloc((size_t)n * 14 + 1), *p = out;

    for (long i = 1; out && i <= n; i++)
        p += sprintf(p, "%s\"node-%05ld\"", i > 1 ? "," : "", i);
    return out;
}

int main(int argc, char **argv)
{
    struct fill f = {.ns = "bench", .gang = 1, .nodes = 5000, .every = 5000};
    long clients = 4;
    pthread_t threads[64];
    double seconds;
    int ch;

    while ((ch = getopt(argc, argv, "c:g:n:k:s:e:")) != -1) {
        switch (ch) {
        case 'c':
            clients = atol(optarg);
            break;
        case 'g':
            f.gang = atol(optarg);
            break;
        case 'n':
            f.nodes = atol(optarg);
            break;
        case 'k':
            f.names = atol(optarg);
            break;
        case 's':
            f.ns = optarg;
            break;
        case 'e':
            f.every = atol(optarg);
            break;
        default:
            goto usage;
        }
    }
    if (argc - optind != 2 || clients < 1 || clients > 64 || f.gang < 1 || f.gang > MAX_GANG ||
        f.every < 1)
        goto usage;
    f.url = argv[optind];
    f.pods = atol(argv[optind + 1]);
    f.names = f.names > 0 ? f.names : f.nodes;
    f.names_json = names_list(f.names);
    if (!f.names_json || f.pods < f.gang)
        goto usage;
    curl_global_init(CURL_GLOBAL_DEFAULT);
    pthread_mutex_init(&f.lock, NULL);
    f.start = f.window_start = now_s();
    for (long i = 0; i < clients; i++)
        pthread_create(&threads[i], NULL, client, &f);
    for (long i = 0; i < clients; i++)
        pthread_join(threads[i], NULL);
    seconds = now_s() - f.start;
    printf("RESULT pods=%ld seconds=%.1f rate=%.0f failed=%ld\n", atomic_load(&f.bound), seconds,
           (double)atomic_load(&f.bound) / seconds, atomic_load(&f.failed));
    free(f.names_json);
    curl_global_cleanup();
    return atomic_load(&f.failed) ? 1 : 0;
usage:
    fprintf(stderr, "usage: bench_fill URL PODS [-c CLIENTS] [-g GANG] [-n NODES] [-k NAMES] "
                    "[-s NAMESPACE] [-e EVERY]\n");
    return 2;
}
