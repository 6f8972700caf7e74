/* reserve.c - `muster reserve`: report the reserved GPU on the Pod, then hold it. */
#include "gpushare.h"

#include <getopt.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "base.h"
#include "kube.h"
#include "reservation.h"

#define RESERVE_EXIT_OK 0
#define RESERVE_EXIT_API 1
#define RESERVE_EXIT_USAGE 2
#define RESERVE_ATTEMPTS_DEFAULT 8
#define RESERVE_ATTEMPTS_MAX 100
#define RESERVE_BACKOFF_FIRST_MS 500
#define RESERVE_BACKOFF_MAX_MS 8000

struct reserve_args {
    const char *kubeconfig;
    bool once;
    long attempts;
};

static void reserve_usage(FILE *out)
{
    fprintf(out,
            "Usage: muster reserve [--kubeconfig FILE] [--once] [--attempts N]\n\n"
            "Run inside a GPU reservation pod: write the device the NVIDIA device plugin gave\n"
            "this pod (NVIDIA_VISIBLE_DEVICES) onto the pod as the "
            "annotation\n" EXT_ANNOTATION_GPU_DEVICE ", then hold the device until SIGTERM.\n"
            "POD_NAME and POD_NAMESPACE (downward API) name the pod.\n\n"
            "      --kubeconfig FILE  talk to the API server this file names (default:\n"
            "                         $KUBECONFIG, else the pod's service account)\n"
            "      --once             exit after writing the annotation\n"
            "      --attempts N       tries at the API server, with backoff (default %d)\n"
            "  -h, --help             this text\n\n"
            "Exit status: 0 on SIGTERM (or done, with --once), 1 when the API server could\n"
            "not be told, 2 for a bad environment or bad flags.\n",
            RESERVE_ATTEMPTS_DEFAULT);
}

static int reserve_parse_args(int argc, char **argv, struct reserve_args *a)
{
    static const struct option longopts[] = {
        {"kubeconfig", required_argument, NULL, 'k'},
        {"once", no_argument, NULL, 'o'},
        {"attempts", required_argument, NULL, 'a'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    char *end;
    int ch;

    optind = 1;
    opterr = 0;
    while ((ch = getopt_long(argc, argv, ":h", longopts, NULL)) != -1) {
        switch (ch) {
        case 'k':
            a->kubeconfig = optarg;
            break;
        case 'o':
            a->once = true;
            break;
        case 'a':
            a->attempts = strtol(optarg, &end, 10);
            if (*optarg == '\0' || *end != '\0' || a->attempts < 1 ||
                a->attempts > RESERVE_ATTEMPTS_MAX) {
                fprintf(stderr, "muster reserve: bad value \"%s\" for --attempts (1 to %d)\n",
                        optarg, RESERVE_ATTEMPTS_MAX);
                return RESERVE_EXIT_USAGE;
            }
            break;
        case 'h':
            reserve_usage(stdout);
            return -1;
        case ':':
            fprintf(stderr, "muster reserve: %s needs a value\n", argv[optind - 1]);
            return RESERVE_EXIT_USAGE;
        default:
            fprintf(stderr, "muster reserve: unknown flag %s\n", argv[optind - 1]);
            return RESERVE_EXIT_USAGE;
        }
    }
    if (optind < argc) {
        fprintf(stderr, "muster reserve: unexpected argument \"%s\"\n", argv[optind]);
        return RESERVE_EXIT_USAGE;
    }
    return RESERVE_EXIT_OK;
}

int reserve_device_check(const char *v, char *err, size_t errlen)
{
    size_t n = v ? strlen(v) : 0;

    if (v == NULL)
        return ext_errf(
            err, errlen, EXT_EINVAL,
            "NVIDIA_VISIBLE_DEVICES is not set: the NVIDIA device plugin "
            "sets it in a pod that asks for nvidia.com/gpu; check that this pod asks for "
            "nvidia.com/gpu: 1 and that the device plugin runs on its node");
    if (n == 0 || strspn(v, " \t") == n)
        return ext_errf(err, errlen, EXT_EINVAL,
                        "NVIDIA_VISIBLE_DEVICES is empty: no GPU was given to this pod");
    if (strcasecmp(v, "all") == 0)
        return ext_errf(err, errlen, EXT_EINVAL,
                        "NVIDIA_VISIBLE_DEVICES is \"all\": the device plugin did not "
                        "allocate a GPU to this pod (\"all\" is the CUDA image's default), and "
                        "handing every GPU of the node to sharing pods would be wrong");
    if (strcasecmp(v, "none") == 0 || strcasecmp(v, "void") == 0)
        return ext_errf(err, errlen, EXT_EINVAL,
                        "NVIDIA_VISIBLE_DEVICES is \"%s\": this pod was given no GPU", v);
    if (v[0] == '/')
        return ext_errf(err, errlen, EXT_EINVAL,
                        "NVIDIA_VISIBLE_DEVICES is the path \"%.64s\": the device "
                        "plugin passes devices as volume mounts; muster reads them from the "
                        "environment (device plugin setting deviceListStrategy: envvar)",
                        v);
    if (strchr(v, ',') != NULL)
        return ext_errf(err, errlen, EXT_EINVAL,
                        "NVIDIA_VISIBLE_DEVICES lists several devices (\"%.64s\"): a "
                        "reservation pod asks for exactly one",
                        v);
    if (n > RESERVE_DEVICE_MAX ||
        strspn(v, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_:./") != n)
        return ext_errf(err, errlen, EXT_EINVAL,
                        "NVIDIA_VISIBLE_DEVICES \"%.64s\" is neither a GPU UUID "
                        "(GPU-...) nor an index",
                        v);
    return EXT_OK;
}

/* Sleep ms unless a blocked signal in set arrives first: then its number. */
static int sleep_or_signal(const sigset_t *set, long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    int sig = sigtimedwait(set, NULL, &ts);

    return sig > 0 ? sig : 0;
}

/* Worth another try: the network (a proxy's page instead of JSON too), the API server overloaded
 * or restarting. */
static bool retryable(int rc, long status)
{
    return rc == EXT_EIO || rc == EXT_EPROTO || rc == EXT_ETIMEOUT || rc == EXT_ECONFLICT ||
           (rc == EXT_EHTTP && (status >= 500 || status == 429));
}

/* The merge patch, with backoff; EXT_ESTOPPED when told to stop meanwhile. */
static int patch_device(struct kube_client *c, const char *path, const char *body, long attempts,
                        const sigset_t *stop, char *err, size_t errlen)
{
    long backoff = RESERVE_BACKOFF_FIRST_MS, status;
    int rc = EXT_EIO;

    for (long i = 1; i <= attempts; i++) {
        status = 0;
        rc = kube_request(c, "PATCH", path, "application/merge-patch+json", body, &status, NULL,
                          err, errlen);
        if (rc == EXT_OK || !retryable(rc, status) || i == attempts)
            break;
        fprintf(stderr, "muster reserve: attempt %ld of %ld failed, again in %ld ms: %s\n", i,
                attempts, backoff, err);
        if (sleep_or_signal(stop, backoff) != 0)
            return EXT_ESTOPPED;
        backoff = backoff * 2 > RESERVE_BACKOFF_MAX_MS ? RESERVE_BACKOFF_MAX_MS : backoff * 2;
    }
    return rc;
}

static char *patch_body(const char *device)
{
    cJSON *doc = cJSON_CreateObject();
    cJSON *ann = cJSON_AddObjectToObject(cJSON_AddObjectToObject(doc, "metadata"), "annotations");
    char *s = NULL;

    if (cJSON_AddStringToObject(ann, EXT_ANNOTATION_GPU_DEVICE, device) != NULL)
        s = cJSON_PrintUnformatted(doc);
    cJSON_Delete(doc);
    return s;
}

/* The pod's identity and device from the environment, checked. */
static int read_env(const char **device, const char **name, const char **ns)
{
    char err[512];

    *device = getenv("NVIDIA_VISIBLE_DEVICES");
    *name = getenv("POD_NAME");
    *ns = getenv("POD_NAMESPACE");
    if (reserve_device_check(*device, err, sizeof(err)) != EXT_OK) {
        fprintf(stderr, "muster reserve: %s\n", err);
        return RESERVE_EXIT_USAGE;
    }
    if (!kube_name_valid(*name) || !kube_name_valid(*ns)) {
        fprintf(stderr, "muster reserve: POD_NAME and POD_NAMESPACE must name this pod (set them "
                        "from metadata.name and metadata.namespace with the downward API)\n");
        return RESERVE_EXIT_USAGE;
    }
    return RESERVE_EXIT_OK;
}

/* Report the device on the pod; RESERVE_EXIT_* (or -1 when stopped by a signal). */
static int report(const struct reserve_args *a, const sigset_t *stop, const char *device,
                  const char *name, const char *ns)
{
    struct kube_client_opts copts = {.connect_timeout_ms = 5000, .timeout_ms = 10000};
    struct kube_conn conn;
    struct kube_client *c = NULL;
    char err[1024], path[600], *body = NULL;
    int result = RESERVE_EXIT_API, rc;

    kube_conn_init(&conn);
    rc = kube_conn_discover(&conn, a->kubeconfig, NULL, err, sizeof(err));
    if (rc == EXT_OK)
        c = kube_client_new(&conn, &copts, err, sizeof(err));
    if (c == NULL)
        goto out;
    snprintf(path, sizeof(path), "/api/v1/namespaces/%s/pods/%s", ns, name);
    body = patch_body(device);
    rc = body ? patch_device(c, path, body, a->attempts, stop, err, sizeof(err)) : EXT_ENOMEM;
    if (rc == EXT_ESTOPPED) {
        result = -1;
        goto out;
    }
    if (rc != EXT_OK)
        goto out;
    printf("muster reserve: pod %s/%s holds GPU %s\n", ns, name, device);
    fflush(stdout);
    result = RESERVE_EXIT_OK;
out:
    if (result == RESERVE_EXIT_API)
        fprintf(stderr, "muster reserve: cannot write %s on pod %s/%s: %s\n",
                EXT_ANNOTATION_GPU_DEVICE, ns, name, err);
    free(body);
    kube_client_free(c);
    kube_conn_cleanup(&conn);
    return result;
}

int reserve_main(int argc, char **argv)
{
    struct reserve_args a = {.attempts = RESERVE_ATTEMPTS_DEFAULT};
    const char *device, *name, *ns;
    sigset_t stop;
    int rc;

    rc = reserve_parse_args(argc, argv, &a);
    if (rc != RESERVE_EXIT_OK)
        return rc < 0 ? RESERVE_EXIT_OK : rc;
    rc = read_env(&device, &name, &ns);
    if (rc != RESERVE_EXIT_OK)
        return rc;
    /* Blocked before any thread exists, so only sigtimedwait sees them (PID 1 too). */
    sigemptyset(&stop);
    sigaddset(&stop, SIGTERM);
    sigaddset(&stop, SIGINT);
    sigprocmask(SIG_BLOCK, &stop, NULL);
    rc = report(&a, &stop, device, name, ns);
    if (rc != RESERVE_EXIT_OK || a.once)
        return rc < 0 ? RESERVE_EXIT_OK : rc;
    while (sigwaitinfo(&stop, NULL) < 0)
        ;
    return RESERVE_EXIT_OK;
}
