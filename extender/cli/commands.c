/*
 * commands.c - the shell of `muster queues` and `muster why`: flags, the
 * connection (kubeconfig or in-cluster), exit statuses. The work is in
 * queues.c and why.c.
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli_int.h"

#define CLI_DEFAULT_EVENTS 10
#define CLI_MAX_EVENTS 1000

struct cli_args {
    const char *cmd;
    const char *kubeconfig, *context, *ns, *muster_url, *target;
    struct cli_opts o;
};

static const char queues_usage[] =
    "Usage: muster queues [-o text|json] [-r gpu|cpu|memory] [--kubeconfig FILE] "
    "[--context NAME]\n"
    "       kubectl muster queues ...\n\n"
    "The Queues (muster.dev/v1alpha1) as a tree with totals: priority, quota and limit from\n"
    "each Queue's spec; fair share, allocated, reserved and pending gangs from the status\n"
    "muster writes (every 2 s, from the replica whose kube-scheduler leads). '-' marks what\n"
    "the status does not hold yet. Allocated and reserved are rolled up from the children.\n\n"
    "  -o, --output FORMAT   text (default) or json (every resource, quantities as strings,\n"
    "                        \"-1\" for unlimited, null for what the status does not hold)\n"
    "  -r, --resource R      the resource the text shows: gpu (default), cpu or memory\n"
    "      --kubeconfig FILE the cluster (default: $KUBECONFIG, in-cluster, ~/.kube/config)\n"
    "      --context NAME    a context of the kubeconfig other than its current one\n"
    "  -h, --help            this text\n\n"
    "Exit status: 0 done; 1 the cluster serves no Queues; 2 the cluster cannot be reached;\n"
    "3 the API server refused; 4 its answer cannot be read (not JSON, not a list, pages\n"
    "without end); 5 printed, but a Queue or its status could not be read (a warning says\n"
    "which); 6 bad flags; 7 out of memory. Names and messages from the cluster are printed\n"
    "with control characters escaped (ESC as ^[, CR LF as \\r\\n).\n";

static const char why_usage[] =
    "Usage: muster why [NAMESPACE/]NAME [-n NAMESPACE] [-o text|json] [--muster-url URL]\n"
    "                  [--events N] [--kubeconfig FILE] [--context NAME]\n"
    "       kubectl muster why ...\n\n"
    "Why a RayCluster, PodGroup, Pod, RayJob or RayService (tried in that order) waits, or\n"
    "that it runs: its gang's composition (a RayJob's or RayService's is its RayCluster's:\n"
    "a RayService's pending cluster while it upgrades), which pods are bound and which wait,\n"
    "the reason in muster's words, its queue's standing and the newest Events of its pods.\n\n"
    "Where it comes from: the Kubernetes objects alone, by default. The pods (bound when\n"
    "spec.nodeName is set, muster's GPU-group annotations), the RayCluster or PodGroup that\n"
    "declares the gang, counted as muster counts them; the Events muster posts (GangWaiting,\n"
    "GangIncomplete, ...) and kube-scheduler's FailedScheduling, which carry muster's reason;\n"
    "the Queue's status. A plan, a bind held at the gang's barrier and muster's live reason\n"
    "are in muster's memory only: --muster-url asks muster's /debug/state for them, and what\n"
    "it says wins (e.g. after kubectl -n muster-system port-forward <leader pod> 8888).\n\n"
    "  -n, --namespace NS    the namespace when NAME has none (default: the context's, else\n"
    "                        default)\n"
    "  -o, --output FORMAT   text (default) or json\n"
    "      --muster-url URL  muster's extender address, e.g. http://127.0.0.1:8888\n"
    "      --events N        how many of the newest Events to show (default 10)\n"
    "      --kubeconfig FILE the cluster (default: $KUBECONFIG, in-cluster, ~/.kube/config)\n"
    "      --context NAME    a context of the kubeconfig other than its current one\n"
    "  -h, --help            this text\n\n"
    "Exit status: 0 done; 1 no such object; 2 the cluster cannot be reached; 3 the API\n"
    "server refused; 4 its answer cannot be read (not JSON, not the object asked for, pages\n"
    "without end); 5 printed, but the gang's Queue could not be read whole; 6 bad flags;\n"
    "7 out of memory. Names and messages from the cluster are printed with control\n"
    "characters escaped (ESC as ^[, CR LF as \\r\\n). The reason is taken only from Events\n"
    "muster wrote (source.component and reportingComponent muster, a reportingInstance) and\n"
    "kube-scheduler's FailedScheduling under the pod's schedulerName.\n";

static int bad_flag(const struct cli_args *a, const char *fmt, const char *what)
{
    fprintf(stderr, "muster %s: ", a->cmd);
    ext_text_printf(stderr, fmt, what);
    fprintf(stderr, " (muster %s --help)\n", a->cmd);
    return CLI_EXIT_USAGE;
}

/* What a failure is, around the API server's address, before its detail. */
static const struct {
    int rc;
    const char *before, *after;
} failures[] = {
    {CLI_EXIT_UNREACHABLE, "cannot reach the cluster", ""},
    {CLI_EXIT_REFUSED, "the API server", " refused"},
    {CLI_EXIT_BAD_REPLY, "cannot read the answer of the API server", ""},
};

/*
 * The one line a failure prints: "muster why: [what the failure is: ]detail",
 * the API server's words and the cluster's names escaped. server NULL: no
 * API server was found to name.
 */
static void say(const struct cli_args *a, int rc, const char *server, const char *err)
{
    fprintf(stderr, "muster %s: ", a->cmd);
    for (size_t i = 0; i < sizeof(failures) / sizeof(failures[0]); i++) {
        if (failures[i].rc != rc)
            continue;
        fputs(failures[i].before, stderr);
        if (server != NULL)
            ext_text_printf(stderr, " at %s", server);
        fprintf(stderr, "%s: ", failures[i].after);
    }
    ext_text_put(err[0] != '\0' ? err : ext_strerror(EXT_ENOMEM), stderr);
    fputc('\n', stderr);
}

static int parse_value(struct cli_args *a, int ch, const char *v)
{
    static const char *const resources[] = {"cpu", "memory", "gpu"};
    char *end;
    long n;

    switch (ch) {
    case 'o':
        if (strcmp(v, "json") == 0)
            a->o.output = CLI_OUTPUT_JSON;
        else if (strcmp(v, "text") == 0 || strcmp(v, "table") == 0 || strcmp(v, "wide") == 0)
            a->o.output = CLI_OUTPUT_TEXT;
        else
            return bad_flag(a, "bad value \"%s\" for --output (text or json)", v);
        return CLI_EXIT_OK;
    case 'r':
        for (int r = 0; r < POLICY_RES_COUNT; r++) {
            if (strcmp(v, resources[r]) == 0) {
                a->o.resource = (enum policy_resource)r;
                return CLI_EXIT_OK;
            }
        }
        return bad_flag(a, "bad value \"%s\" for --resource (gpu, cpu or memory)", v);
    case 'e':
        n = strtol(v, &end, 10);
        if (*v == '\0' || *end != '\0' || n < 0 || n > CLI_MAX_EVENTS)
            return bad_flag(a, "bad value \"%s\" for --events (0 to 1000)", v);
        a->o.events = (unsigned)n;
        return CLI_EXIT_OK;
    }
    return CLI_EXIT_OK;
}

/* -1: --help was printed. */
static int parse(struct cli_args *a, int argc, char **argv, bool why)
{
    static const struct option longopts[] = {
        {"output", required_argument, NULL, 'o'},
        {"resource", required_argument, NULL, 'r'},
        {"namespace", required_argument, NULL, 'n'},
        {"muster-url", required_argument, NULL, 'm'},
        {"events", required_argument, NULL, 'e'},
        {"kubeconfig", required_argument, NULL, 'k'},
        {"context", required_argument, NULL, 'c'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    int ch, rc;

    optind = 1;
    opterr = 0;
    while ((ch = getopt_long(argc, argv, ":o:r:n:h", longopts, NULL)) != -1) {
        if (ch == 'h') {
            fputs(why ? why_usage : queues_usage, stdout);
            return -1;
        }
        if (ch == ':')
            return bad_flag(a, "%s needs a value", argv[optind - 1]);
        if (ch == '?' || (why && ch == 'r') || (!why && strchr("nme", ch) != NULL))
            return bad_flag(a, "unknown flag %s", argv[optind - 1]);
        rc = parse_value(a, ch, optarg);
        if (rc != CLI_EXIT_OK)
            return rc;
        a->kubeconfig = ch == 'k' ? optarg : a->kubeconfig;
        a->context = ch == 'c' ? optarg : a->context;
        a->ns = ch == 'n' ? optarg : a->ns;
        a->muster_url = ch == 'm' ? optarg : a->muster_url;
    }
    if (why && optind + 1 != argc)
        return bad_flag(a, "%s",
                        optind == argc ? "which object? give [NAMESPACE/]NAME"
                                       : "one object at a time");
    if (!why && optind != argc)
        return bad_flag(a, "unexpected argument \"%s\"", argv[optind]);
    a->target = why ? argv[optind] : NULL;
    return CLI_EXIT_OK;
}

/* A client for muster's own HTTP address (no credentials: it listens on loopback). */
static struct kube_client *muster_client(const char *url, char *err, size_t errlen)
{
    struct kube_conn conn;
    struct kube_client_opts opts = {.connect_timeout_ms = 3000, .timeout_ms = 10000};
    struct kube_client *c;

    kube_conn_init(&conn);
    conn.server = strndup(url, strlen(url) - (strlen(url) > 0 && url[strlen(url) - 1] == '/'));
    c = conn.server != NULL ? kube_client_new(&conn, &opts, err, errlen) : NULL;
    kube_conn_cleanup(&conn);
    return c;
}

/* The cluster's client, or NULL with a message: the kubeconfig search found nothing usable. */
static struct kube_client *cluster_client(const struct cli_args *a, char **ns, char *err,
                                          size_t errlen)
{
    struct kube_client_opts opts = {.connect_timeout_ms = 5000, .timeout_ms = 30000};
    struct kube_conn conn;
    struct kube_client *c = NULL;

    kube_conn_init(&conn);
    if (kube_conn_discover(&conn, a->kubeconfig, a->context, err, errlen) == EXT_OK) {
        c = kube_client_new(&conn, &opts, err, errlen);
        *ns = conn.ns != NULL && *conn.ns != '\0' ? strdup(conn.ns) : NULL;
    }
    kube_conn_cleanup(&conn);
    return c;
}

/* NAMESPACE/NAME, or NAME in the namespace of -n, of the context, or default. */
static int split_target(const struct cli_args *a, const char *context_ns, char **ns, char **name)
{
    const char *slash = strchr(a->target, '/');

    if (slash != NULL) {
        *ns = strndup(a->target, (size_t)(slash - a->target));
        *name = strdup(slash + 1);
    } else {
        *ns = strdup(a->ns != NULL ? a->ns : context_ns != NULL ? context_ns : "default");
        *name = strdup(a->target);
    }
    if (*ns == NULL || *name == NULL)
        return CLI_EXIT_NOMEM;
    if (!kube_name_valid(*ns) || !kube_name_valid(*name) || strchr(*name, '/') != NULL)
        return bad_flag(a, "\"%s\" is not [NAMESPACE/]NAME", a->target);
    return CLI_EXIT_OK;
}

static int run(struct cli_args *a, bool why)
{
    struct kube_client *kube;
    char err[1024] = "", *context_ns = NULL, *ns = NULL, *name = NULL;
    int rc = CLI_EXIT_UNREACHABLE;

    kube = cluster_client(a, &context_ns, err, sizeof(err));
    if (kube == NULL) {
        say(a, CLI_EXIT_UNREACHABLE, NULL, err);
        goto out;
    }
    if (why && a->muster_url != NULL) {
        a->o.muster = muster_client(a->muster_url, err, sizeof(err));
        if (a->o.muster == NULL) {
            rc = bad_flag(a, "bad --muster-url: %s", err);
            goto out;
        }
    }
    if (why)
        rc = split_target(a, context_ns, &ns, &name);
    if (why && rc == CLI_EXIT_OK)
        rc = cli_why(kube, &a->o, ns, name, stdout, err, sizeof(err));
    else if (!why)
        rc = cli_queues(kube, &a->o, stdout, err, sizeof(err));
    if (rc != CLI_EXIT_OK && rc != CLI_EXIT_USAGE) /* a bad flag said so already */
        say(a, rc, kube_client_server(kube), err);
out:
    kube_client_free(a->o.muster);
    kube_client_free(kube);
    free(context_ns);
    free(ns);
    free(name);
    return rc;
}

static int command_main(int argc, char **argv, bool why)
{
    struct cli_args a = {
        .cmd = why ? "why" : "queues",
        .o = {.output = CLI_OUTPUT_TEXT,
              .resource = POLICY_RES_GPU,
              .events = CLI_DEFAULT_EVENTS,
              .now = (int64_t)time(NULL)},
    };
    int rc = parse(&a, argc, argv, why);

    if (rc != CLI_EXIT_OK)
        return rc < 0 ? CLI_EXIT_OK : rc;
    return run(&a, why);
}

int queues_main(int argc, char **argv)
{
    return command_main(argc, argv, false);
}

int why_main(int argc, char **argv)
{
    return command_main(argc, argv, true);
}
