/*
 * simulate.c - `muster simulate`: manifests in, the engine's answers out.
 *
 * Everything is read and checked first (a bad file ends the run with
 * "file:line: what is wrong" and exit 2, before anything is printed); then
 * the pods go through filter -> prioritize -> bind one at a time in input
 * order, as kube-scheduler would send them, until a pass changes nothing.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base.h"
#include "simulate.h"
#include "simulate_int.h"

#define SIM_EXIT_OK 0
#define SIM_EXIT_FAIL 1
#define SIM_EXIT_USAGE 2

struct sim_args {
    const char *files[SIM_MAX_FILES];
    size_t nfiles;
    enum policy_strategy strategy;
    enum sim_output output;
    int64_t plan_ttl_ms;
    struct policy_fairness fairness; /* muster's defaults (config/settings.c) */
    int64_t tick_ms, until_ms;
};

static void sim_usage(FILE *out)
{
    fprintf(out,
            "Usage: muster simulate -f FILE [-f FILE ...] [--strategy binpack|spread|fragmentation]\n"
            "                       [-o json|table|html] [--plan-ttl DURATION]\n\n"
            "Show where muster would place the pods of a set of manifests, or why they wait.\n"
            "FILE holds YAML documents of kind Node, Queue (muster.dev/v1alpha1 or KAI's\n"
            "scheduling.run.ai/v2), RayCluster (ray.io/v1), PodGroup (scheduler-plugins,\n"
            "Volcano, KAI), Workload and PodGroup (scheduling.k8s.io), PriorityClass, Topology\n"
            "(KAI's kai.scheduler/v1alpha1 or Kueue's kueue.x-k8s.io/v1beta2) and Pod;\n"
            "'-' reads standard input.\n\n"
            "  -f, --filename FILE   manifests to read, in order (repeatable)\n"
            "      --strategy S      fragmentation (default), binpack or spread\n"
            "  -o, --output FORMAT   json (default), table, or html (a page with the packing)\n"
            "      --plan-ttl D      how long an unbound plan is kept (default 60s)\n"
            "      --half-life D     fairness.halfLife (default 4h; 0: fair over time off)\n"
            "      --window D        fairness.window (default 168h)\n"
            "      --k X             fairness.k (default 1)\n"
            "      --entry-penalty D fairness.entryPenalty (default 0: none)\n"
            "      --tick D          on a timeline, how often waiting pods are tried again\n"
            "                        while fair shares move (default 1m)\n"
            "      --until D         end the timeline there (default: when nothing more happens)\n"
            "  -h, --help            this text\n\n"
            "A timeline: annotations simulate.muster.dev/arrival and simulate.muster.dev/duration\n"
            "(Go durations) on a Pod, RayCluster or PodGroup say when its pods come and how long\n"
            "they run once bound (docs/simulate.md).\n\n"
            "Exit status: 0 when the simulation ran (pending pods included), 2 for bad input.\n");
}

/* ---- flags --------------------------------------------------------------- */

static int sim_parse_args(int argc, char **argv, struct sim_args *a)
{
    static const struct option longopts[] = {
        {"filename", required_argument, NULL, 'f'},   {"output", required_argument, NULL, 'o'},
        {"strategy", required_argument, NULL, 's'},   {"plan-ttl", required_argument, NULL, 't'},
        {"half-life", required_argument, NULL, 'H'},  {"window", required_argument, NULL, 'W'},
        {"k", required_argument, NULL, 'K'},          {"entry-penalty", required_argument, NULL, 'P'},
        {"tick", required_argument, NULL, 'T'},       {"until", required_argument, NULL, 'U'},
        {"help", no_argument, NULL, 'h'},             {NULL, 0, NULL, 0},
    };
    const char *what = NULL;
    int64_t v;
    int ch;

    optind = 1;
    opterr = 0;
    while ((ch = getopt_long(argc, argv, ":f:o:h", longopts, NULL)) != -1) {
        switch (ch) {
        case 'f':
            if (a->nfiles == SIM_MAX_FILES) {
                fprintf(stderr, "muster simulate: more than %d files\n", SIM_MAX_FILES);
                return SIM_EXIT_USAGE;
            }
            a->files[a->nfiles++] = optarg;
            break;
        case 'o':
            if (strcmp(optarg, "json") == 0)
                a->output = SIM_OUTPUT_JSON;
            else if (strcmp(optarg, "table") == 0 || strcmp(optarg, "wide") == 0)
                a->output = SIM_OUTPUT_TABLE;
            else if (strcmp(optarg, "html") == 0)
                a->output = SIM_OUTPUT_HTML;
            else
                goto bad_value;
            break;
        case 's':
            if (strcmp(optarg, "binpack") == 0)
                a->strategy = POLICY_BINPACK;
            else if (strcmp(optarg, "spread") == 0)
                a->strategy = POLICY_SPREAD;
            else if (strcmp(optarg, "fragmentation") == 0)
                a->strategy = POLICY_FRAGMENTATION;
            else
                goto bad_value;
            break;
        case 't':
            if (cfg_duration_parse(optarg, &a->plan_ttl_ms) != CFG_OK || a->plan_ttl_ms <= 0)
                goto bad_value;
            break;
        case 'H':
        case 'W':
        case 'P':
        case 'T':
        case 'U':
            what = ch == 'H' ? "--half-life (a duration, 0 for off)"
                   : ch == 'W' ? "--window (a duration of 1m or more)"
                   : ch == 'P' ? "--entry-penalty (a duration, 0 for none)"
                   : ch == 'T' ? "--tick (a duration of 1s or more)"
                               : "--until (a duration)";
            if (cfg_duration_parse(optarg, &v) != CFG_OK || v < 0 ||
                (ch == 'W' && v < 60000) || (ch == 'T' && v < 1000))
                goto bad_value;
            *(ch == 'H'   ? &a->fairness.half_life_ms
              : ch == 'W' ? &a->fairness.window_ms
              : ch == 'P' ? &a->fairness.entry_penalty_ms
              : ch == 'T' ? &a->tick_ms
                          : &a->until_ms) = v;
            break;
        case 'K':
            what = "--k (a number such as 1 or 0.5, at most 10000)";
            if (cfg_milli_parse(optarg, &v) != CFG_OK || v > 10000 * 1000)
                goto bad_value;
            a->fairness.k_milli = v;
            break;
        case 'h':
            sim_usage(stdout);
            return -1;
        case ':':
            fprintf(stderr, "muster simulate: %s needs a value\n", argv[optind - 1]);
            return SIM_EXIT_USAGE;
        default:
            fprintf(stderr, "muster simulate: unknown flag %s\n", argv[optind - 1]);
            return SIM_EXIT_USAGE;
        }
    }
    if (optind < argc) {
        fprintf(stderr, "muster simulate: unexpected argument \"%s\" (files go after -f)\n",
                argv[optind]);
        return SIM_EXIT_USAGE;
    }
    if (a->nfiles == 0) {
        fprintf(stderr, "muster simulate: no manifests: give at least one -f FILE\n");
        return SIM_EXIT_USAGE;
    }
    return SIM_EXIT_OK;

bad_value:
    fprintf(stderr, "muster simulate: bad value \"%s\" for %s\n", optarg,
            what != NULL ? what
            : ch == 'o'  ? "--output (json, table or html)"
            : ch == 's'  ? "--strategy (binpack, spread or fragmentation)"
                         : "--plan-ttl (a duration such as 60s)");
    return SIM_EXIT_USAGE;
}

/* ---- reading ------------------------------------------------------------- */

/* Prints "file:line: message"; line is where's, else fallback's, else 1. */
static int sim_fail(const struct cfg_docs *d, const cJSON *where, const cJSON *fallback,
                    const char *fmt, ...) __attribute__((format(printf, 4, 5)));

static int sim_fail(const struct cfg_docs *d, const cJSON *where, const cJSON *fallback,
                    const char *fmt, ...)
{
    unsigned line = cfg_docs_line(d, where);
    char msg[1024];
    va_list ap;

    if (line == 0)
        line = cfg_docs_line(d, fallback);
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    ext_text_printf(stderr, "%s:%u: %s", d->name, line > 0 ? line : 1, msg); /* the input's words */
    fputc('\n', stderr);
    return SIM_EXIT_USAGE;
}

/*
 * YAML numbers reach cJSON as doubles. Where that is not exact (a float such
 * as 0.1, an integer past 2^53), give the decoders the text as written.
 */
static int sim_exact_numbers(const struct cfg_docs *d, cJSON *node)
{
    cJSON *c;
    int64_t v;

    if (cJSON_IsNumber(node)) {
        const char *text = cfg_docs_scalar_text(d, node);
        char *copy;

        if (text == NULL ||
            (cfg_docs_int64(d, node, &v) == CFG_OK && v <= (1LL << 53) && v >= -(1LL << 53)))
            return CFG_OK;
        copy = strdup(text);
        if (copy == NULL)
            return CFG_ENOMEM;
        node->type = cJSON_String;
        node->valuestring = copy;
        return CFG_OK;
    }
    cJSON_ArrayForEach(c, node)
    {
        if (sim_exact_numbers(d, c) != CFG_OK)
            return CFG_ENOMEM;
    }
    return CFG_OK;
}

bool sim_grow(void **items, size_t *cap, size_t n, size_t size)
{
    size_t ncap;
    void *p;

    if (n < *cap)
        return true;
    if (n >= SIM_MAX_OBJECTS)
        return false;
    ncap = *cap ? *cap * 2 : 64;
    p = realloc(*items, ncap * size);
    if (p == NULL)
        return false;
    *items = p;
    *cap = ncap;
    return true;
}

static bool sim_seen(const char *const *names, size_t n, const char *name)
{
    for (size_t i = 0; i < n; i++) {
        if (strcmp(names[i], name) == 0)
            return true;
    }
    return false;
}

static int sim_add_name(const char ***names, size_t *n, size_t *cap, const char *name)
{
    if (!sim_grow((void **)names, cap, *n, sizeof(**names)))
        return SIM_EXIT_FAIL;
    (*names)[(*n)++] = name;
    return SIM_EXIT_OK;
}

struct sim_pod *sim_find_pod(struct sim_run *r, const char *ns, const char *name)
{
    for (size_t i = 0; i < r->npods; i++) {
        if (strcmp(r->pods[i].spec.namespace_, ns) == 0 && strcmp(r->pods[i].spec.name, name) == 0)
            return &r->pods[i];
    }
    return NULL;
}

static int sim_node(struct sim_run *r, const struct cfg_docs *d, const cJSON *doc)
{
    struct policy_node_spec s;
    const cJSON *where = NULL;
    char err[512];
    int rc;

    if (kube_node_decode(doc, r->arena, &s, err, sizeof(err), &where) != EXT_OK)
        return sim_fail(d, where, doc, "Node: %s", err);
    if (sim_seen(r->nodes, r->nnodes, s.name))
        return sim_fail(d, doc, doc, "Node %s: defined twice", s.name);
    rc = policy_node_upsert(r->cluster, &s);
    if (rc != POLICY_OK)
        return sim_fail(d, doc, doc, "Node %s: %s", s.name, policy_strerror(rc));
    return sim_add_name(&r->nodes, &r->nnodes, &r->capnodes, s.name);
}

static int sim_queue(struct sim_run *r, const struct cfg_docs *d, const cJSON *doc)
{
    struct policy_queue_spec s;
    const cJSON *where = NULL;
    char err[512];
    int rc;

    if (kube_queue_decode(doc, r->arena, &s, err, sizeof(err), &where) != EXT_OK)
        return sim_fail(d, where, doc, "%s", err);
    if (sim_seen(r->queues, r->nqueues, s.name))
        return sim_fail(d, doc, doc, "Queue %s: defined twice", s.name);
    rc = policy_queue_upsert(r->cluster, &s);
    if (rc != POLICY_OK)
        return sim_fail(d, doc, doc, "Queue %s: %s", s.name, policy_strerror(rc));
    return sim_add_name(&r->queues, &r->nqueues, &r->capqueues, s.name);
}

const char *sim_keep(struct sim_run *r, const char *s)
{
    return s != NULL ? ext_arena_strdup(r->arena, s) : NULL;
}

/* "ns/name" in the run's arena. */
static const char *sim_key(struct sim_run *r, const char *ns, const char *name)
{
    char key[600];

    snprintf(key, sizeof(key), "%s/%s", ns, name);
    return sim_keep(r, key);
}

static int sim_gang(struct sim_run *r, const struct cfg_docs *d, const cJSON *doc, const char *kind,
                    const struct policy_gang_spec *g)
{
    int rc;

    char seen[600];

    /* A RayCluster and its PodGroup declare one gang; two of either kind clash. */
    snprintf(seen, sizeof(seen), "%s %s", kind, g->key);
    if (sim_seen(r->gangs, r->ngangs, seen))
        return sim_fail(d, doc, doc, "%s %s: a gang of that name is defined twice", kind, g->key);
    rc = policy_gang_upsert(r->cluster, g);
    if (rc != POLICY_OK)
        return sim_fail(d, doc, doc, "%s %s: %s", kind, g->key, policy_strerror(rc));
    return sim_add_name(&r->gangs, &r->ngangs, &r->capgangs, sim_keep(r, seen));
}

static int sim_podgroup(struct sim_run *r, const struct cfg_docs *d, const cJSON *doc)
{
    struct policy_gang_spec g;
    const cJSON *where = NULL;
    char err[512];

    if (kube_podgroup_gang(doc, &r->opts, r->arena, &g, err, sizeof(err), &where) != EXT_OK)
        return sim_fail(d, where, doc, "PodGroup: %s", err);
    return sim_gang(r, d, doc, "PodGroup", &g);
}

/* ---- what others refer to, read first: PriorityClasses, the Workload API -- */

static int sim_name_once(struct sim_run *r, const struct cfg_docs *d, const cJSON *doc,
                         const char *kind, const char *name)
{
    char seen[600];

    snprintf(seen, sizeof(seen), "%s %s", kind, name);
    if (sim_seen(r->named, r->nnamed, seen))
        return sim_fail(d, doc, doc, "%s: defined twice", seen);
    return sim_add_name(&r->named, &r->nnamed, &r->capnamed, sim_keep(r, seen));
}

static int sim_priority_class(struct sim_run *r, const struct cfg_docs *d, const cJSON *doc)
{
    struct kube_priority_class pc;
    const cJSON *where = NULL;
    char err[512];
    int rc;

    if (kube_priority_class_decode(doc, &pc, err, sizeof(err), &where) != EXT_OK)
        return sim_fail(d, where, doc, "PriorityClass: %s", err);
    rc = sim_name_once(r, d, doc, "PriorityClass", pc.name);
    if (rc == SIM_EXIT_OK && kube_refs_priority_class(r->refs, &pc) != EXT_OK)
        rc = SIM_EXIT_FAIL;
    return rc;
}

static int sim_workload_refs(struct sim_run *r, const struct cfg_docs *d, const cJSON *doc)
{
    struct policy_gang_spec g;
    const cJSON *where = NULL;
    const char *ns = NULL, *name = NULL;
    char err[512], key[600];
    int rc;

    if (kube_workload_gang(doc, &r->opts, r->arena, &g, err, sizeof(err), &where) != EXT_OK)
        return sim_fail(d, where, doc, "Workload: %s", err);
    ns = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(
        cJSON_GetObjectItemCaseSensitive(doc, "metadata"), "namespace"));
    name = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(
        cJSON_GetObjectItemCaseSensitive(doc, "metadata"), "name"));
    ns = ns != NULL && *ns != '\0' ? ns : "default";
    snprintf(key, sizeof(key), "%s/%s", ns, name);
    rc = sim_name_once(r, d, doc, "Workload", key);
    if (rc == SIM_EXIT_OK &&
        kube_refs_workload(r->refs, ns, name, &g, kube_workload_single_template(doc)) != EXT_OK)
        rc = SIM_EXIT_FAIL;
    return rc;
}

static int sim_pod_group_refs(struct sim_run *r, const struct cfg_docs *d, const cJSON *doc)
{
    struct kube_pod_group pg;
    const cJSON *where = NULL;
    char err[512], key[600];
    int rc;

    if (kube_pod_group_decode(doc, &r->opts, r->arena, &pg, err, sizeof(err), &where) != EXT_OK)
        return sim_fail(d, where, doc, "PodGroup: %s", err);
    snprintf(key, sizeof(key), "%s/%s", pg.namespace_, pg.name);
    rc = sim_name_once(r, d, doc, "PodGroup (scheduling.k8s.io)", key);
    if (rc == SIM_EXIT_OK && kube_refs_pod_group(r->refs, &pg) != EXT_OK)
        rc = SIM_EXIT_FAIL;
    return rc;
}

/* Second pass: the gangs they declare (decoded again, now that every class is known), a
 * Workload's with the minCounts of its PodGroups counted in, as muster serve declares it. */
static int sim_workload(struct sim_run *r, const struct cfg_docs *d, const cJSON *doc)
{
    struct policy_gang_spec g, follow;
    const cJSON *where = NULL;
    const char *ns, *name;
    char err[512], key[600];

    if (kube_workload_gang(doc, &r->opts, r->arena, &g, err, sizeof(err), &where) != EXT_OK)
        return sim_fail(d, where, doc, "Workload: %s", err);
    ns = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(
        cJSON_GetObjectItemCaseSensitive(doc, "metadata"), "namespace"));
    name = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(
        cJSON_GetObjectItemCaseSensitive(doc, "metadata"), "name"));
    snprintf(key, sizeof(key), "%s/%s", ns != NULL && *ns != '\0' ? ns : "default", name);
    if (kube_refs_workload_gang(r->refs, key, r->arena, &follow))
        g = follow;
    return sim_gang(r, d, doc, "Workload", &g);
}

static int sim_pod_group(struct sim_run *r, const struct cfg_docs *d, const cJSON *doc)
{
    struct kube_pod_group pg;
    const cJSON *where = NULL;
    char err[512];

    if (kube_pod_group_decode(doc, &r->opts, r->arena, &pg, err, sizeof(err), &where) != EXT_OK)
        return sim_fail(d, where, doc, "PodGroup: %s", err);
    if (pg.spec.key == NULL)
        return SIM_EXIT_OK; /* made from a Workload: the Workload declares the gang */
    return sim_gang(r, d, doc, "PodGroup (scheduling.k8s.io)", &pg.spec);
}

static const char *sim_uid(struct sim_run *r, const struct policy_pod_spec *s)
{
    char uid[64];

    if (s->uid != NULL && *s->uid != '\0')
        return s->uid;
    snprintf(uid, sizeof(uid), "simulated-%zu", r->npods);
    return ext_arena_strdup(r->arena, uid);
}

/* Whether the pod names a scheduler; simulate takes a pod that names none as muster's. */
static bool sim_names_scheduler(const cJSON *pod)
{
    const cJSON *spec = cJSON_GetObjectItemCaseSensitive(pod, "spec");
    const cJSON *name = cJSON_GetObjectItemCaseSensitive(spec, "schedulerName");

    return cJSON_IsString(name) && *name->valuestring != '\0';
}

/* ---- the timeline: when objects come, how long they run -------------------- */

#define SIM_ANNOTATION_ARRIVAL "simulate.muster.dev/arrival"
#define SIM_ANNOTATION_DURATION "simulate.muster.dev/duration"

/* One timing annotation of meta: *ms (unchanged when absent). */
static int sim_time_annotation(struct sim_run *r, const struct cfg_docs *d, const cJSON *meta,
                               const char *key, int64_t *ms, bool *said)
{
    const cJSON *n =
        cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(meta, "annotations"), key);
    int64_t v;

    if (n == NULL)
        return SIM_EXIT_OK;
    if (!cJSON_IsString(n) || cfg_duration_parse(n->valuestring, &v) != CFG_OK || v < 0)
        return sim_fail(d, n, meta,
                        "annotation %s: want a duration from the start such as \"90m\" or "
                        "\"26h\", got %.64s",
                        key, cJSON_IsString(n) ? n->valuestring : "no string");
    *ms = v;
    *said = true;
    r->timeline = true;
    return SIM_EXIT_OK;
}

static int sim_times_of(struct sim_run *r, const struct cfg_docs *d, const cJSON *doc,
                        struct sim_times *t, bool *said)
{
    const cJSON *meta = cJSON_GetObjectItemCaseSensitive(doc, "metadata");
    int rc = sim_time_annotation(r, d, meta, SIM_ANNOTATION_ARRIVAL, &t->arrival_ms, said);

    if (rc == SIM_EXIT_OK)
        rc = sim_time_annotation(r, d, meta, SIM_ANNOTATION_DURATION, &t->duration_ms, said);
    return rc;
}

/* First pass: a RayCluster's or PodGroup's times, for its pods that say none of their own. */
static int sim_read_times(struct sim_run *r, const struct cfg_docs *d, const cJSON *doc,
                          cJSON *holder)
{
    const cJSON *meta = cJSON_GetObjectItemCaseSensitive(doc, "metadata");
    const char *ns = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(meta, "namespace"));
    const char *name = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(meta, "name"));
    struct sim_times t = {.arrival_ms = 0, .duration_ms = -1};
    bool said = false;
    char key[600];
    int rc;

    (void)holder;
    rc = sim_times_of(r, d, doc, &t, &said);
    if (rc != SIM_EXIT_OK || !said || name == NULL)
        return rc;
    snprintf(key, sizeof(key), "%s/%s", ns != NULL && *ns ? ns : "default", name);
    if (!sim_grow((void **)&r->times, &r->captimes, r->ntimes, sizeof(*r->times)))
        return SIM_EXIT_FAIL;
    t.gang = sim_keep(r, key);
    r->times[r->ntimes++] = t;
    return t.gang != NULL ? SIM_EXIT_OK : SIM_EXIT_FAIL;
}

/* A pod's times: its own annotations, else its gang's declarer's, else now and for ever. */
static int sim_pod_times(struct sim_run *r, const struct cfg_docs *d, const cJSON *doc,
                         const struct policy_pod_spec *s, struct sim_pod *p)
{
    struct sim_times t = {.arrival_ms = 0, .duration_ms = -1};
    bool said = false;
    int rc = sim_times_of(r, d, doc, &t, &said);

    for (size_t i = 0; rc == SIM_EXIT_OK && !said && s->gang != NULL && i < r->ntimes; i++)
        if (strcmp(r->times[i].gang, s->gang) == 0)
            t = r->times[i];
    p->arrival_ms = t.arrival_ms;
    p->duration_ms = t.duration_ms;
    p->bound_ms = -1;
    return rc;
}

/* A Pod document, or one made from a RayCluster template (fallback: its line). */
static int sim_pod(struct sim_run *r, const struct cfg_docs *d, const cJSON *doc,
                   const cJSON *fallback, const char *what)
{
    struct policy_pod_spec s;
    struct sim_pod *p, times;
    const cJSON *where = NULL;
    char err[512];
    int rc;

    if (kube_pod_is_terminal(doc))
        return SIM_EXIT_OK; /* finished pods hold nothing */
    if (kube_pod_decode(doc, &r->opts, r->arena, &s, err, sizeof(err), &where) != EXT_OK)
        return sim_fail(d, where, fallback, "%s: %s", what, err);
    if (sim_find_pod(r, s.namespace_, s.name) != NULL)
        return sim_fail(d, fallback, fallback, "Pod %s/%s: defined twice", s.namespace_, s.name);
    /* A uid makes a re-upsert of the same pod the same incarnation. */
    s.uid = sim_uid(r, &s);
    if (!sim_names_scheduler(doc))
        s.managed = true;
    /* simulate's clock counts its own steps from 0: a running pod is bound when it starts,
     * whatever its status says, so the same files always give the same answer. */
    s.bound_at = 0;
    if (s.uid == NULL || !sim_grow((void **)&r->pods, &r->cappods, r->npods, sizeof(*r->pods)))
        return SIM_EXIT_FAIL;
    memset(&times, 0, sizeof(times));
    rc = sim_pod_times(r, d, doc, &s, &times);
    if (rc != SIM_EXIT_OK)
        return rc;
    if (times.arrival_ms > 0 && s.node != NULL)
        return sim_fail(d, fallback, fallback,
                        "Pod %s/%s: runs from the start (spec.nodeName) but arrives at %s", s.namespace_,
                        s.name, "a later time (simulate.muster.dev/arrival)");
    /* One that comes later is handed to the engine then (timeline.c). */
    if (times.arrival_ms == 0) {
        rc = policy_pod_upsert(r->cluster, &s, r->now);
        if (rc != POLICY_OK)
            return sim_fail(d, fallback, fallback, "Pod %s/%s: %s", s.namespace_, s.name,
                            policy_strerror(rc));
    }
    p = &r->pods[r->npods++];
    *p = times;
    p->spec = s;
    p->arrived = times.arrival_ms == 0;
    if (s.node != NULL) {
        p->bound = true;
        p->node = s.node;
        p->gpu_groups = s.gpu_groups;
        p->bound_ms = 0;
    }
    return SIM_EXIT_OK;
}

/* ---- RayClusters: the pods KubeRay would create -------------------------- */

struct sim_ray_pod {
    const char *ns, *cluster;
    char name[600];
    const char *node_type, *group;
    const char *queue_key, *queue; /* copied from the RayCluster; may be NULL */
    char replica[128]; /* a multi-host replica's name, as KubeRay 1.7 labels it; "": none */
};

/* obj[key] = a reference to every member of from (a mapping), except skip. */
static bool sim_ref_members(cJSON *obj, const cJSON *from, const char *skip)
{
    const cJSON *m;

    cJSON_ArrayForEach(m, from)
    {
        if (m->string == NULL || cJSON_GetObjectItemCaseSensitive(obj, m->string) != NULL ||
            (skip != NULL && strcmp(m->string, skip) == 0))
            continue;
        if (!cJSON_AddItemReferenceToObject(obj, m->string, (cJSON *)m))
            return false;
    }
    return true;
}

/*
 * The pod as KubeRay writes it (REFERENCE §3): the template's metadata and
 * spec, KubeRay's labels on top. The template's nodes are referenced, not
 * copied, so a complaint about them still knows its line.
 */
static cJSON *sim_ray_pod_new(const struct sim_ray_pod *rp, const cJSON *tmpl)
{
    const cJSON *tmeta = cJSON_GetObjectItemCaseSensitive(tmpl, "metadata");
    const cJSON *tspec = cJSON_GetObjectItemCaseSensitive(tmpl, "spec");
    cJSON *pod = cJSON_CreateObject(), *meta, *labels, *spec;
    char ident[300];
    bool ok;

    snprintf(ident, sizeof(ident), "%s-%s", rp->cluster, rp->node_type);
    meta = cJSON_AddObjectToObject(pod, "metadata");
    spec = cJSON_AddObjectToObject(pod, "spec");
    labels = cJSON_AddObjectToObject(meta, "labels");
    ok = meta && spec && labels && cJSON_AddStringToObject(meta, "name", rp->name) &&
         cJSON_AddStringToObject(meta, "namespace", rp->ns) &&
         cJSON_AddStringToObject(labels, EXT_LABEL_RAY_IS_NODE, "yes") &&
         cJSON_AddStringToObject(labels, EXT_LABEL_RAY_CLUSTER, rp->cluster) &&
         cJSON_AddStringToObject(labels, EXT_LABEL_RAY_NODE_TYPE, rp->node_type) &&
         cJSON_AddStringToObject(labels, EXT_LABEL_RAY_GROUP, rp->group) &&
         cJSON_AddStringToObject(labels, EXT_LABEL_RAY_IDENTIFIER, ident) &&
         cJSON_AddStringToObject(labels, EXT_LABEL_CREATED_BY, "kuberay-operator") &&
         cJSON_AddStringToObject(labels, EXT_LABEL_APP_NAME, "kuberay") &&
         (rp->queue == NULL || cJSON_AddStringToObject(labels, rp->queue_key, rp->queue)) &&
         (!*rp->replica || cJSON_AddStringToObject(labels, EXT_LABEL_RAY_REPLICA, rp->replica)) &&
         sim_ref_members(labels, cJSON_GetObjectItemCaseSensitive(tmeta, "labels"), NULL) &&
         sim_ref_members(meta, tmeta, "labels") && sim_ref_members(spec, tspec, NULL);
    if (ok && cJSON_GetObjectItemCaseSensitive(spec, "schedulerName") == NULL)
        ok = cJSON_AddStringToObject(spec, "schedulerName", "muster") != NULL;
    if (!ok) {
        cJSON_Delete(pod);
        return NULL;
    }
    return pod;
}

/* Adds one generated pod; the run keeps the cJSON since the spec points into it. */
static int sim_ray_pod_add(struct sim_run *r, const struct cfg_docs *d, cJSON *holder,
                           const struct sim_ray_pod *rp, const cJSON *tmpl, const cJSON *fallback)
{
    char what[1024];
    cJSON *pod;

    if (!cJSON_IsObject(tmpl))
        return sim_fail(d, tmpl, fallback, "RayCluster %s/%s: group %s: template missing", rp->ns,
                        rp->cluster, rp->group);
    pod = sim_ray_pod_new(rp, tmpl);
    if (pod == NULL)
        return SIM_EXIT_FAIL;
    if (!cJSON_AddItemToArray(holder, pod)) {
        cJSON_Delete(pod);
        return SIM_EXIT_FAIL;
    }
    snprintf(what, sizeof(what), "RayCluster %s/%s: pod %s", rp->ns, rp->cluster, rp->name);
    return sim_pod(r, d, pod, tmpl, what);
}

static int sim_worker_group(struct sim_run *r, const struct cfg_docs *d, cJSON *holder,
                            struct sim_ray_pod *rp, const cJSON *g, bool autoscaling)
{
    const cJSON *gname = cJSON_GetObjectItemCaseSensitive(g, "groupName");
    const cJSON *where = NULL;
    int32_t desired, gang_min;
    int64_t hosts = 1;
    char err[512];
    int rc;

    rc = kube_worker_group_replicas(g, autoscaling, &desired, &gang_min, err, sizeof(err), &where);
    if (rc != EXT_OK)
        return sim_fail(d, where, g, "RayCluster %s/%s: %s", rp->ns, rp->cluster, err);
    if (!cJSON_IsString(gname) || *gname->valuestring == '\0' || strlen(gname->valuestring) > 63)
        return sim_fail(d, gname, g, "RayCluster %s/%s: a workerGroupSpec needs a groupName",
                        rp->ns, rp->cluster);
    rp->node_type = "worker";
    rp->group = gname->valuestring;
    rp->replica[0] = '\0';
    if (cJSON_IsNumber(cJSON_GetObjectItemCaseSensitive(g, "numOfHosts")))
        hosts = (int64_t)cJSON_GetObjectItemCaseSensitive(g, "numOfHosts")->valuedouble;
    for (int32_t i = 0; i < desired; i++) {
        /* KubeRay names a replica <group>-<random>; simulate numbers them. */
        if (hosts > 1)
            snprintf(rp->replica, sizeof(rp->replica), "%s-%" PRId64, rp->group, i / hosts);
        if (r->npods >= SIM_MAX_OBJECTS)
            return sim_fail(d, g, g, "RayCluster %s/%s: over %d pods", rp->ns, rp->cluster,
                            SIM_MAX_OBJECTS);
        snprintf(rp->name, sizeof(rp->name), "%s-%s-worker-%" PRId32, rp->cluster, rp->group, i);
        rc = sim_ray_pod_add(r, d, holder, rp, cJSON_GetObjectItemCaseSensitive(g, "template"), g);
        if (rc != SIM_EXIT_OK)
            return rc;
    }
    return SIM_EXIT_OK;
}

static int sim_raycluster(struct sim_run *r, const struct cfg_docs *d, const cJSON *doc,
                          cJSON *holder)
{
    const cJSON *spec = cJSON_GetObjectItemCaseSensitive(doc, "spec"), *g;
    const cJSON *labels = cJSON_GetObjectItemCaseSensitive(
        cJSON_GetObjectItemCaseSensitive(doc, "metadata"), "labels");
    const cJSON *head = cJSON_GetObjectItemCaseSensitive(spec, "headGroupSpec");
    struct sim_ray_pod rp = {0};
    struct policy_gang_spec gang;
    const cJSON *where = NULL;
    char err[512];
    int rc;

    if (kube_raycluster_gang(doc, &r->opts, r->arena, &gang, err, sizeof(err), &where) != EXT_OK)
        return sim_fail(d, where, doc, "RayCluster: %s", err);
    rc = sim_gang(r, d, doc, "RayCluster", &gang);
    if (rc == SIM_EXIT_OK && gang.owner_kind == POLICY_OWNER_RAYSERVICE) {
        char owned[600];

        /* A RayService whose cluster is given runs it already (its upgradeStrategy None
         * makes no other). */
        snprintf(owned, sizeof(owned), "cluster of RayService %s", gang.owner);
        if (!sim_seen(r->named, r->nnamed, owned))
            rc = sim_add_name(&r->named, &r->nnamed, &r->capnamed, sim_keep(r, owned));
    }
    if (rc != SIM_EXIT_OK)
        return rc;
    rp.ns = ext_arena_strdup(r->arena, gang.key);
    if (rp.ns == NULL)
        return SIM_EXIT_FAIL;
    rp.cluster = strchr(rp.ns, '/') + 1;
    ((char *)rp.cluster)[-1] = '\0';
    for (size_t i = 0; i < kube_decode_defaults.nqueue_label_keys; i++) {
        const cJSON *q =
            cJSON_GetObjectItemCaseSensitive(labels, kube_decode_defaults.queue_label_keys[i]);

        if (cJSON_IsString(q) && gang.queue != NULL && strcmp(q->valuestring, gang.queue) == 0) {
            rp.queue_key = kube_decode_defaults.queue_label_keys[i];
            rp.queue = gang.queue;
            break;
        }
    }
    snprintf(rp.name, sizeof(rp.name), "%s-head", rp.cluster);
    rp.node_type = "head";
    rp.group = "headgroup";
    rc = sim_ray_pod_add(r, d, holder, &rp, cJSON_GetObjectItemCaseSensitive(head, "template"),
                         head != NULL ? head : doc);
    cJSON_ArrayForEach(g, cJSON_GetObjectItemCaseSensitive(spec, "workerGroupSpecs"))
    {
        if (rc != SIM_EXIT_OK)
            return rc;
        rc = sim_worker_group(
            r, d, holder, &rp, g,
            cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(spec, "enableInTreeAutoscaling")));
    }
    return rc;
}

/* ---- RayJobs and RayServices: the RayClusters and submitters KubeRay makes ---- */

/*
 * KubeRay names what it makes <owner>-<5 characters> (utils.GenerateRayClusterName, with
 * k8s.io/apimachinery's rand alphabet); simulate takes the characters from a hash of the owner
 * and what is made, so the same files give the same names.
 */
static void sim_generated_name(const char *base, const char *what, char *out, size_t len)
{
    static const char alphabet[] = "bcdfghjklmnpqrstvwxz2456789";
    uint64_t h = 1469598103934665603ULL;
    char suffix[6];

    for (const char *p = base; *p; p++)
        h = (h ^ (unsigned char)*p) * 1099511628211ULL;
    for (const char *p = what; *p; p++)
        h = (h ^ (unsigned char)*p) * 1099511628211ULL;
    for (int i = 0; i < 5; i++) {
        suffix[i] = alphabet[h % (sizeof(alphabet) - 1)];
        h /= sizeof(alphabet) - 1;
    }
    suffix[5] = '\0';
    snprintf(out, len, "%s-%s", base, suffix);
}

static const char *sim_doc_string(const cJSON *doc, const char *key)
{
    return cJSON_GetStringValue(
        cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(doc, "metadata"), key));
}

/*
 * The RayCluster KubeRay makes for an owner (constructRayClusterForRayJob, ...ForRayService):
 * the owner's labels copied, ray.io/originated-from-crd and -cr-name on top (and the RayJob's
 * submission mode); its spec the owner's (referenced: a complaint knows its line), or spec_copy
 * when the head changed (SidecarMode). Kept in holder.
 */
static cJSON *sim_owned_cluster(const cJSON *owner, const char *kind, const char *name,
                                const char *mode, const cJSON *spec, cJSON *spec_copy,
                                cJSON *holder)
{
    cJSON *rc = cJSON_CreateObject(), *meta, *labels;
    const cJSON *olabels =
        cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(owner, "metadata"),
                                         "labels");
    bool ok;

    meta = rc ? cJSON_AddObjectToObject(rc, "metadata") : NULL;
    labels = meta ? cJSON_AddObjectToObject(meta, "labels") : NULL;
    ok = labels && cJSON_AddStringToObject(rc, "apiVersion", "ray.io/v1") &&
         cJSON_AddStringToObject(rc, "kind", "RayCluster") &&
         cJSON_AddStringToObject(meta, "name", name) &&
         cJSON_AddStringToObject(meta, "namespace", sim_doc_string(owner, "namespace")
                                                        ? sim_doc_string(owner, "namespace")
                                                        : "default") &&
         cJSON_AddStringToObject(labels, EXT_LABEL_RAY_ORIGIN_KIND, kind) &&
         cJSON_AddStringToObject(labels, EXT_LABEL_RAY_ORIGIN_NAME, sim_doc_string(owner, "name")) &&
         (mode == NULL || cJSON_AddStringToObject(labels, "ray.io/job-submission-mode", mode)) &&
         sim_ref_members(labels, olabels, NULL);
    if (ok && spec_copy)
        ok = cJSON_AddItemToObject(rc, "spec", spec_copy);
    else if (ok && spec)
        ok = cJSON_AddItemReferenceToObject(rc, "spec", (cJSON *)spec);
    spec_copy = ok ? NULL : spec_copy;
    if (ok)
        ok = cJSON_AddItemToArray(holder, rc);
    if (!ok) {
        cJSON_Delete(rc);
        cJSON_Delete(spec_copy);
        return NULL;
    }
    return rc;
}

/* SidecarMode: the submitter is a container of the head (KubeRay's default one). */
static cJSON *sim_sidecar_spec(const cJSON *spec)
{
    cJSON *copy = cJSON_Duplicate(spec, true), *containers, *c, *res;

    containers = cJSON_GetObjectItemCaseSensitive(
        cJSON_GetObjectItemCaseSensitive(
            cJSON_GetObjectItemCaseSensitive(
                cJSON_GetObjectItemCaseSensitive(copy, "headGroupSpec"), "template"),
            "spec"),
        "containers");
    if (!cJSON_IsArray(containers) || !(c = cJSON_CreateObject())) {
        cJSON_Delete(copy);
        return NULL;
    }
    cJSON_AddItemToArray(containers, c);
    res = cJSON_AddObjectToObject(c, "resources");
    if (!cJSON_AddStringToObject(c, "name", "ray-job-submitter") || !res ||
        !cJSON_AddStringToObject(cJSON_AddObjectToObject(res, "requests"), "cpu", "500m") ||
        !cJSON_AddStringToObject(cJSON_GetObjectItem(res, "requests"), "memory", "200Mi") ||
        !cJSON_AddStringToObject(cJSON_AddObjectToObject(res, "limits"), "cpu", "1") ||
        !cJSON_AddStringToObject(cJSON_GetObjectItem(res, "limits"), "memory", "1Gi")) {
        cJSON_Delete(copy);
        return NULL;
    }
    return copy;
}

/* The cluster a RayJob makes (not for clusterSelector): status.rayClusterName, or KubeRay's
 * name for it. */
static void sim_rayjob_cluster(const struct kube_rayjob *j, char *out, size_t len)
{
    if (j->cluster != NULL && !j->existing_cluster)
        snprintf(out, len, "%s", j->cluster);
    else
        sim_generated_name(j->name, "cluster", out, len);
}

/* Both passes: the RayJob as muster serve follows it, in simulate's terms (no status needed:
 * a RayJob is running unless suspended or finished). */
static int sim_rayjob_decode(struct sim_run *r, const struct cfg_docs *d, const cJSON *doc,
                             struct kube_rayjob *j)
{
    const cJSON *where = NULL;
    char err[512], cluster[300];

    if (kube_rayjob_decode(doc, &r->opts, r->arena, j, err, sizeof(err), &where) != EXT_OK)
        return sim_fail(d, where, doc, "RayJob: %s", err);
    if (!j->existing_cluster) {
        sim_rayjob_cluster(j, cluster, sizeof(cluster));
        j->cluster = sim_keep(r, cluster);
        j->submitter_gang = sim_key(r, j->namespace_, j->cluster);
        if (j->cluster == NULL || j->submitter_gang == NULL)
            return SIM_EXIT_FAIL;
    }
    j->hold.gang = j->submitter_gang;
    j->holds = j->mode == KUBE_RAYJOB_K8S_JOB && !j->suspend && !j->existing_cluster &&
               !j->finished;
    return SIM_EXIT_OK;
}

static int sim_rayjob_refs(struct sim_run *r, const struct cfg_docs *d, const cJSON *doc,
                           cJSON *holder)
{
    struct kube_rayjob j;
    int rc = sim_rayjob_decode(r, d, doc, &j);

    if (rc == SIM_EXIT_OK)
        rc = sim_name_once(r, d, doc, "RayJob", j.key);
    if (rc == SIM_EXIT_OK && kube_refs_rayjob(r->refs, &j, NULL, 0) != EXT_OK)
        rc = SIM_EXIT_FAIL;
    return rc;
}

/*
 * Its cluster (unless on an existing one, suspended, or finished with shutdownAfterJobFinishes:
 * a finished job's cluster without it idles on, charged as it runs), the room held for its
 * submitter (K8sJobMode), and the submitter itself, made once the cluster is bound.
 */
static int sim_rayjob(struct sim_run *r, const struct cfg_docs *d, const cJSON *doc,
                      cJSON *holder)
{
    const cJSON *spec = cJSON_GetObjectItemCaseSensitive(
        cJSON_GetObjectItemCaseSensitive(doc, "spec"), "rayClusterSpec");
    struct kube_rayjob j;
    struct sim_rayjob *sj;
    cJSON *cluster, *copy = NULL;
    int rc = sim_rayjob_decode(r, d, doc, &j), prc;

    if (rc != SIM_EXIT_OK || j.suspend || (j.finished && j.shutdown_after_finish))
        return rc;
    if (!j.existing_cluster) {
        if (!cJSON_IsObject(spec))
            return sim_fail(d, spec, doc, "RayJob %s: spec.rayClusterSpec missing", j.key);
        if (j.mode == KUBE_RAYJOB_SIDECAR && !(copy = sim_sidecar_spec(spec)))
            return sim_fail(d, spec, doc, "RayJob %s: spec.rayClusterSpec.headGroupSpec has no "
                                          "containers for the submitter to join",
                            j.key);
        cluster = sim_owned_cluster(doc, "RayJob", j.cluster, kube_rayjob_mode_name(j.mode),
                                    spec, copy, holder);
        if (cluster == NULL)
            return SIM_EXIT_FAIL;
        rc = sim_raycluster(r, d, cluster, holder);
        if (rc != SIM_EXIT_OK)
            return rc;
    }
    if (j.holds && (prc = policy_hold_upsert(r->cluster, &j.hold, r->now)) != POLICY_OK)
        return sim_fail(d, doc, doc, "RayJob %s: %s", j.key, policy_strerror(prc));
    if (j.mode != KUBE_RAYJOB_K8S_JOB || j.finished)
        return SIM_EXIT_OK;
    if (!sim_grow((void **)&r->rayjobs, &r->caprayjobs, r->nrayjobs, sizeof(*r->rayjobs)))
        return SIM_EXIT_FAIL;
    sj = &r->rayjobs[r->nrayjobs++];
    *sj = (struct sim_rayjob){.d = d, .doc = doc, .job = j};
    if (j.existing_cluster && j.cluster)
        sj->cluster_key = sim_key(r, j.namespace_, j.cluster);
    else if (!j.existing_cluster)
        sj->cluster_key = j.submitter_gang;
    return SIM_EXIT_OK;
}

/* The submitter Job's pod (getSubmitterTemplate, createNewK8sJob): the template's metadata and
 * spec (referenced), or KubeRay's default container; the Job controller's and KubeRay's labels. */
static int sim_submitter(struct sim_run *r, struct sim_rayjob *sj, cJSON *holder)
{
    const struct kube_rayjob *j = &sj->job;
    const cJSON *tmpl = cJSON_GetObjectItemCaseSensitive(
        cJSON_GetObjectItemCaseSensitive(sj->doc, "spec"), "submitterPodTemplate");
    const cJSON *tmeta = cJSON_GetObjectItemCaseSensitive(tmpl, "metadata");
    const cJSON *tspec = cJSON_GetObjectItemCaseSensitive(tmpl, "spec");
    cJSON *pod = cJSON_CreateObject(), *meta, *labels, *spec, *c = NULL, *res = NULL;
    char name[300], what[600];
    bool ok;

    sim_generated_name(j->name, "submitter", name, sizeof(name));
    meta = pod ? cJSON_AddObjectToObject(pod, "metadata") : NULL;
    spec = pod ? cJSON_AddObjectToObject(pod, "spec") : NULL;
    labels = meta ? cJSON_AddObjectToObject(meta, "labels") : NULL;
    ok = labels && spec && cJSON_AddStringToObject(pod, "apiVersion", "v1") &&
         cJSON_AddStringToObject(pod, "kind", "Pod") &&
         cJSON_AddStringToObject(meta, "name", name) &&
         cJSON_AddStringToObject(meta, "namespace", j->namespace_) &&
         cJSON_AddStringToObject(labels, EXT_LABEL_RAY_ORIGIN_KIND, "RayJob") &&
         cJSON_AddStringToObject(labels, EXT_LABEL_RAY_ORIGIN_NAME, j->name) &&
         cJSON_AddStringToObject(labels, EXT_LABEL_CREATED_BY, "kuberay-operator") &&
         cJSON_AddStringToObject(labels, EXT_LABEL_JOB_NAME, j->name) &&
         cJSON_AddStringToObject(labels, EXT_LABEL_JOB_NAME_LEGACY, j->name) &&
         sim_ref_members(labels, cJSON_GetObjectItemCaseSensitive(tmeta, "labels"), NULL);
    if (ok && cJSON_IsObject(tspec)) {
        ok = sim_ref_members(spec, tspec, NULL);
    } else if (ok) { /* KubeRay's default submitter (common/job.go) */
        ok = (c = cJSON_CreateObject()) != NULL &&
             cJSON_AddItemToArray(cJSON_AddArrayToObject(spec, "containers"), c) &&
             cJSON_AddStringToObject(c, "name", "ray-job-submitter") &&
             (res = cJSON_AddObjectToObject(c, "resources")) != NULL &&
             cJSON_AddStringToObject(cJSON_AddObjectToObject(res, "requests"), "cpu", "500m") &&
             cJSON_AddStringToObject(cJSON_GetObjectItem(res, "requests"), "memory", "200Mi") &&
             cJSON_AddStringToObject(cJSON_AddObjectToObject(res, "limits"), "cpu", "1") &&
             cJSON_AddStringToObject(cJSON_GetObjectItem(res, "limits"), "memory", "1Gi") &&
             cJSON_AddStringToObject(spec, "restartPolicy", "Never");
    }
    if (!ok || !cJSON_AddItemToArray(holder, pod)) {
        cJSON_Delete(pod);
        return SIM_EXIT_FAIL;
    }
    sj->made = true;
    snprintf(what, sizeof(what), "RayJob %s: submitter %s", j->key, name);
    return sim_pod(r, sj->d, pod, tspec != NULL ? tspec : sj->doc, what);
}

/* After a pass: the submitters of RayJobs whose cluster is bound now (KubeRay waits for the
 * cluster to be ready). *made: some were. */
static int sim_submitters(struct sim_run *r, cJSON *holder, bool *made)
{
    for (size_t i = 0; i < r->nrayjobs; i++) {
        struct sim_rayjob *sj = &r->rayjobs[i];
        struct policy_gang_view v;
        int rc;

        if (sj->made || (sj->cluster_key && (!policy_gang_view_get(r->cluster, sj->cluster_key, &v) ||
                                             v.state != POLICY_GANG_BOUND)))
            continue;
        rc = sim_submitter(r, sj, holder);
        if (rc != SIM_EXIT_OK)
            return rc;
        *made = true;
    }
    return SIM_EXIT_OK;
}

static int sim_rayservice_refs(struct sim_run *r, const struct cfg_docs *d, const cJSON *doc,
                               cJSON *holder)
{
    struct kube_rayservice rs;
    const cJSON *where = NULL;
    char err[512];

    if (kube_rayservice_decode(doc, r->arena, &rs, err, sizeof(err), &where) != EXT_OK)
        return sim_fail(d, where, doc, "RayService: %s", err);
    return sim_name_once(r, d, doc, "RayService", rs.key);
}

/*
 * The cluster its spec.rayClusterConfig describes: status.pendingServiceStatus.rayClusterName,
 * else KubeRay's name for a new one. A cluster of the RayService given in the files before it
 * (a RayCluster labelled ray.io/originated-from-crd: RayService) is the one it runs: this one is
 * then its upgrade (NewCluster), or nothing (upgradeStrategy None).
 */
static int sim_rayservice(struct sim_run *r, const struct cfg_docs *d, const cJSON *doc,
                          cJSON *holder)
{
    const cJSON *spec = cJSON_GetObjectItemCaseSensitive(
        cJSON_GetObjectItemCaseSensitive(doc, "spec"), "rayClusterConfig");
    struct kube_rayservice rs;
    const cJSON *where = NULL;
    char err[512], name[300], owned[600];
    cJSON *cluster;

    if (kube_rayservice_decode(doc, r->arena, &rs, err, sizeof(err), &where) != EXT_OK)
        return sim_fail(d, where, doc, "RayService: %s", err);
    if (!cJSON_IsObject(spec))
        return sim_fail(d, spec, doc, "RayService %s: spec.rayClusterConfig missing", rs.key);
    snprintf(owned, sizeof(owned), "cluster of RayService %s", rs.key);
    if (strcmp(rs.strategy, "None") == 0 && sim_seen(r->named, r->nnamed, owned))
        return SIM_EXIT_OK;
    if (rs.pending != NULL)
        snprintf(name, sizeof(name), "%s", rs.pending);
    else
        sim_generated_name(rs.name, sim_seen(r->named, r->nnamed, owned) ? "pending" : "active",
                           name, sizeof(name));
    cluster = sim_owned_cluster(doc, "RayService", name, NULL, spec, NULL, holder);
    return cluster != NULL ? sim_raycluster(r, d, cluster, holder) : SIM_EXIT_FAIL;
}

/* ---- one document -------------------------------------------------------- */

/* Documents are read twice: first what other objects refer to (PriorityClasses,
 * the Workload API's objects), then everything that goes into the engine. */
enum sim_pass { SIM_PASS_REFS, SIM_PASS_OBJECTS };

typedef int (*sim_reader)(struct sim_run *r, const struct cfg_docs *d, const cJSON *doc,
                          cJSON *holder);

struct sim_kind {
    const char *kind;
    const char *api_prefix; /* apiVersion starts with it (with a '/'), or equals it */
    sim_reader refs;        /* first pass; NULL: nothing */
    sim_reader read;        /* second pass; NULL: nothing */
};

static int sim_read_node(struct sim_run *r, const struct cfg_docs *d, const cJSON *doc,
                         cJSON *holder)
{
    return sim_node(r, d, doc);
}

static int sim_read_queue(struct sim_run *r, const struct cfg_docs *d, const cJSON *doc,
                          cJSON *holder)
{
    return sim_queue(r, d, doc);
}

static int sim_read_pod(struct sim_run *r, const struct cfg_docs *d, const cJSON *doc,
                        cJSON *holder)
{
    return sim_pod(r, d, doc, doc, "Pod");
}

static int sim_read_podgroup(struct sim_run *r, const struct cfg_docs *d, const cJSON *doc,
                             cJSON *holder)
{
    return sim_podgroup(r, d, doc);
}

/* A Topology (KAI's or Kueue's): its levels, as the engine keeps them. */
static int sim_read_topology(struct sim_run *r, const struct cfg_docs *d, const cJSON *doc,
                             cJSON *holder)
{
    struct policy_topology_spec t;
    const cJSON *where = NULL;
    char err[512];
    int rc;

    (void)holder;
    if (kube_topology_decode(doc, r->arena, &t, err, sizeof(err), &where) != EXT_OK)
        return sim_fail(d, where, doc, "Topology: %s", err);
    rc = sim_name_once(r, d, doc, "Topology", t.name);
    if (rc == SIM_EXIT_OK && (rc = policy_topology_upsert(r->cluster, &t)) != POLICY_OK)
        return sim_fail(d, doc, doc, "Topology %s: %s", t.name, policy_strerror(rc));
    return rc;
}

static int sim_read_priority_class(struct sim_run *r, const struct cfg_docs *d, const cJSON *doc,
                                   cJSON *holder)
{
    return sim_priority_class(r, d, doc);
}

static int sim_read_workload_refs(struct sim_run *r, const struct cfg_docs *d, const cJSON *doc,
                                  cJSON *holder)
{
    return sim_workload_refs(r, d, doc);
}

static int sim_read_workload(struct sim_run *r, const struct cfg_docs *d, const cJSON *doc,
                             cJSON *holder)
{
    return sim_workload(r, d, doc);
}

static int sim_read_pod_group_refs(struct sim_run *r, const struct cfg_docs *d, const cJSON *doc,
                                   cJSON *holder)
{
    return sim_pod_group_refs(r, d, doc);
}

static int sim_read_pod_group(struct sim_run *r, const struct cfg_docs *d, const cJSON *doc,
                              cJSON *holder)
{
    return sim_pod_group(r, d, doc);
}

static const struct sim_kind sim_kinds[] = {
    {"Node", "v1", NULL, sim_read_node},
    {"Pod", "v1", NULL, sim_read_pod},
    {"Queue", "muster.dev/", NULL, sim_read_queue},
    {"Queue", "scheduling.run.ai/", NULL, sim_read_queue}, /* KAI's v2, in KAI's units */
    {"RayCluster", "ray.io/", sim_read_times, sim_raycluster},
    {"RayJob", "ray.io/", sim_rayjob_refs, sim_rayjob},
    {"RayService", "ray.io/", sim_rayservice_refs, sim_rayservice},
    {"PodGroup", "scheduling.x-k8s.io/", sim_read_times, sim_read_podgroup},
    {"PodGroup", "scheduling.volcano.sh/", sim_read_times, sim_read_podgroup},
    {"PodGroup", "scheduling.run.ai/", sim_read_times, sim_read_podgroup}, /* KAI's v2alpha2 */
    {"PriorityClass", "scheduling.k8s.io/", sim_read_priority_class, NULL},
    {"Topology", "kai.scheduler/", NULL, sim_read_topology},
    {"Topology", "kueue.x-k8s.io/", NULL, sim_read_topology},
    {"Workload", "scheduling.k8s.io/", sim_read_workload_refs, sim_read_workload},
    {"PodGroup", "scheduling.k8s.io/", sim_read_pod_group_refs, sim_read_pod_group},
};

static bool sim_api_matches(const char *api, const char *prefix)
{
    if (strchr(prefix, '/') != NULL)
        return strncmp(api, prefix, strlen(prefix)) == 0;
    return strcmp(api, prefix) == 0;
}

static int sim_read_doc(struct sim_run *r, const struct cfg_docs *d, const cJSON *doc,
                        cJSON *holder, enum sim_pass pass);

/* A List, or a typed list as the API server returns one (NodeList, PodList, ...). */
static bool sim_is_list(const cJSON *doc, const char *kind)
{
    size_t n = strlen(kind);

    return strcmp(kind, "List") == 0 ||
           (n > 4 && strcmp(kind + n - 4, "List") == 0 &&
            cJSON_IsArray(cJSON_GetObjectItemCaseSensitive(doc, "items")));
}

/*
 * Its items in order. The API server leaves kind and apiVersion off the items
 * of a typed list; as kubectl does, they are the list's kind without "List"
 * and the list's apiVersion.
 */
static int sim_read_list(struct sim_run *r, const struct cfg_docs *d, const cJSON *doc,
                         const char *kind, const char *api, cJSON *holder, enum sim_pass pass)
{
    int n = (int)strlen(kind) - 4;
    cJSON *item;
    int rc;

    cJSON_ArrayForEach(item, cJSON_GetObjectItemCaseSensitive(doc, "items"))
    {
        if (n > 0 && cJSON_IsObject(item) &&
            cJSON_GetObjectItemCaseSensitive(item, "kind") == NULL) {
            char k[128];

            snprintf(k, sizeof(k), "%.*s", n, kind);
            if (!cJSON_AddStringToObject(item, "kind", k) ||
                (cJSON_GetObjectItemCaseSensitive(item, "apiVersion") == NULL &&
                 !cJSON_AddStringToObject(item, "apiVersion", api)))
                return SIM_EXIT_FAIL;
        }
        rc = sim_read_doc(r, d, item, holder, pass);
        if (rc != SIM_EXIT_OK)
            return rc;
    }
    return SIM_EXIT_OK;
}

static int sim_read_doc(struct sim_run *r, const struct cfg_docs *d, const cJSON *doc,
                        cJSON *holder, enum sim_pass pass)
{
    const cJSON *kind = cJSON_GetObjectItemCaseSensitive(doc, "kind");
    const cJSON *api = cJSON_GetObjectItemCaseSensitive(doc, "apiVersion");
    size_t i;

    if (!cJSON_IsObject(doc))
        return sim_fail(d, doc, NULL, "a document must be a mapping (a Kubernetes object)");
    if (!cJSON_IsString(kind))
        return sim_fail(d, kind, doc, "kind missing");
    if (!cJSON_IsString(api))
        return sim_fail(d, api, doc, "%.64s: apiVersion missing", kind->valuestring);
    if (sim_is_list(doc, kind->valuestring))
        return sim_read_list(r, d, doc, kind->valuestring, api->valuestring, holder, pass);
    for (i = 0; i < sizeof(sim_kinds) / sizeof(sim_kinds[0]); i++) {
        const struct sim_kind *k = &sim_kinds[i];
        sim_reader read = pass == SIM_PASS_REFS ? k->refs : k->read;

        if (strcmp(kind->valuestring, k->kind) != 0 ||
            !sim_api_matches(api->valuestring, k->api_prefix))
            continue;
        return read != NULL ? read(r, d, doc, holder) : SIM_EXIT_OK;
    }
    if (pass == SIM_PASS_OBJECTS)
        return SIM_EXIT_OK; /* the first pass said it */
    return sim_fail(d, kind, doc,
                    "unknown kind %.64s (apiVersion %.64s): want Node, Pod, Queue "
                    "(muster.dev/v1alpha1, scheduling.run.ai/v2), RayCluster, RayJob or "
                    "RayService (ray.io/v1), PodGroup, Workload or PriorityClass",
                    kind->valuestring, api->valuestring);
}

static int sim_read_files(struct sim_run *r, const struct sim_args *a, cJSON *holder)
{
    char err[1024];
    int rc;

    for (size_t f = 0; f < a->nfiles; f++) {
        struct cfg_docs *d = &r->docs[r->ndocs];
        const char *path = strcmp(a->files[f], "-") == 0 ? "/dev/stdin" : a->files[f];

        if (cfg_docs_load_file(d, path, err, sizeof(err)) != CFG_OK) {
            ext_text_put(err, stderr);
            fputc('\n', stderr);
            return SIM_EXIT_USAGE;
        }
        r->ndocs++;
        for (size_t i = 0; i < d->n; i++) {
            if (sim_exact_numbers(d, d->docs[i]) != CFG_OK)
                return SIM_EXIT_FAIL;
            rc = sim_read_doc(r, d, d->docs[i], holder, SIM_PASS_REFS);
            if (rc != SIM_EXIT_OK)
                return rc;
        }
    }
    for (size_t f = 0; f < r->ndocs; f++) {
        for (size_t i = 0; i < r->docs[f].n; i++) {
            rc = sim_read_doc(r, &r->docs[f], r->docs[f].docs[i], holder, SIM_PASS_OBJECTS);
            if (rc != SIM_EXIT_OK)
                return rc;
        }
    }
    return SIM_EXIT_OK;
}

/* ---- scheduling, as kube-scheduler drives the extender ------------------- */

static int sim_commit(struct sim_run *r, const struct policy_bind_result *b)
{
    for (size_t i = 0; i < b->n; i++) {
        const struct policy_assignment *m = &b->members[i];
        struct sim_pod *p = sim_find_pod(r, m->namespace_, m->name);
        int rc;

        rc = policy_bind_done(r->cluster, m->namespace_, m->name, true, NULL);
        if (rc != POLICY_OK || p == NULL) {
            fprintf(stderr, "muster simulate: bind_done %s/%s: %s\n", m->namespace_, m->name,
                    p == NULL ? "unknown pod" : policy_strerror(rc));
            return SIM_EXIT_FAIL;
        }
        p->bound = true;
        p->waiting = false;
        p->reason = NULL;
        p->node = sim_keep(r, m->node);
        p->gpu_groups = sim_keep(r, m->gpu_groups);
        p->bound_ms = r->now;
        /* What the watch would report next: the pod now runs there. */
        p->spec.node = p->node;
        p->spec.gpu_groups = p->gpu_groups;
        rc = policy_pod_upsert(r->cluster, &p->spec, r->now);
        if (rc != POLICY_OK) {
            fprintf(stderr, "muster simulate: upsert %s/%s: %s\n", m->namespace_, m->name,
                    policy_strerror(rc));
            return SIM_EXIT_FAIL;
        }
        if (r->timeline)
            sim_timeline_bound(r, p);
    }
    return SIM_EXIT_OK;
}

/* ---- evictions: the victims go at once ----------------------------------- */

static int sim_record_eviction(struct sim_run *r, const struct policy_eviction *e)
{
    struct sim_eviction *v;

    if (!sim_grow((void **)&r->evictions, &r->capevictions, r->nevictions, sizeof(*r->evictions)))
        return SIM_EXIT_FAIL;
    v = &r->evictions[r->nevictions++];
    v->ns = sim_keep(r, e->namespace_);
    v->name = sim_keep(r, e->name);
    v->gang = sim_keep(r, e->gang);
    v->by = sim_keep(r, e->by);
    v->reason = sim_keep(r, e->reason);
    v->why = e->why != NULL ? kube_reason_json(e->why) : NULL;
    return v->ns != NULL && v->name != NULL ? SIM_EXIT_OK : SIM_EXIT_FAIL;
}

/*
 * The evictions a filter decided: each victim is evicted at once (the
 * Eviction API said yes and the watch saw it go), so the engine forgets it
 * and its gang waits again. KubeRay would re-create the pods; simulate does
 * not: they stay in the output with no node and the eviction's reason.
 */
static int sim_evict(struct sim_run *r)
{
    struct policy_eviction *v = NULL;
    size_t n = 0;
    int rc = policy_evictions_take(r->cluster, &v, &n);

    if (rc != POLICY_OK) {
        fprintf(stderr, "muster simulate: evictions: %s\n", policy_strerror(rc));
        return SIM_EXIT_FAIL;
    }
    rc = SIM_EXIT_OK;
    for (size_t i = 0; i < n && rc == SIM_EXIT_OK; i++) {
        struct sim_pod *p = sim_find_pod(r, v[i].namespace_, v[i].name);

        rc = sim_record_eviction(r, &v[i]);
        policy_eviction_done(r->cluster, v[i].namespace_, v[i].name, true, NULL, 0);
        policy_pod_forget(r->cluster, v[i].namespace_, v[i].name);
        if (p == NULL)
            continue;
        /* KubeRay (or the Job's controller) makes the pod again: it is back, pending, and
         * its gang waits whole; simulate shows it evicted and does not place it again. */
        p->spec.node = NULL;
        p->spec.gpu_groups = NULL;
        if (policy_pod_upsert(r->cluster, &p->spec, r->now) != POLICY_OK) {
            fprintf(stderr, "muster simulate: out of memory\n");
            rc = SIM_EXIT_FAIL;
        }
        /* On a timeline the controller's new pod waits and runs its whole duration again. */
        p->evicted = !r->timeline;
        p->bound = false;
        p->waiting = false;
        p->node = NULL;
        p->gpu_groups = NULL;
        p->bound_ms = -1;
        p->reason = r->evictions[r->nevictions - 1].reason;
        p->why = r->evictions[r->nevictions - 1].why;
        if (r->timeline)
            sim_timeline_evicted(r, p);
    }
    policy_evictions_free(v, n);
    return rc;
}

/* The nodes filter kept, best score first among equals in input order. */
static const char *sim_pick(struct sim_run *r, struct sim_pod *p,
                            const struct policy_filter_result *f)
{
    const char **fit = calloc(r->nnodes, sizeof(*fit));
    int *scores = calloc(r->nnodes, sizeof(*scores));
    const char *best = NULL;
    size_t n = 0, i, b = 0;

    if (fit == NULL || scores == NULL)
        goto out;
    for (i = 0; i < f->n; i++) {
        if (f->verdicts[i].fit == POLICY_FITS)
            fit[n++] = r->nodes[i];
    }
    if (n == 0 || policy_prioritize(r->cluster, p->spec.namespace_, p->spec.name, fit, n, r->now,
                                    scores) != POLICY_OK)
        goto out;
    for (i = 1; i < n; i++) {
        if (scores[i] > scores[b])
            b = i;
    }
    best = fit[b];
out:
    free(scores);
    free(fit);
    return best;
}

/* One scheduling cycle for one pod. */
static int sim_cycle(struct sim_run *r, struct sim_pod *p, bool *bound, bool *waits)
{
    struct policy_filter_result f = {0};
    struct policy_bind_result b = {0};
    const char *node;
    int rc;

    rc = policy_filter(r->cluster, p->spec.namespace_, p->spec.name, r->nodes, r->nnodes, r->now,
                       &f);
    if (rc != POLICY_OK) {
        fprintf(stderr, "muster simulate: filter %s/%s: %s\n", p->spec.namespace_, p->spec.name,
                policy_strerror(rc));
        return SIM_EXIT_FAIL;
    }
    if (r->hooks != NULL && r->hooks->filtered != NULL)
        r->hooks->filtered(r->hooks->ctx, r->cluster, &f, r->nodes, r->nnodes);
    if (f.evictions) {
        rc = sim_evict(r);
        *bound = true; /* the cluster changed: another pass */
        if (rc != SIM_EXIT_OK) {
            policy_filter_result_cleanup(&f);
            return rc;
        }
    }
    node = sim_pick(r, p, &f);
    if (node == NULL) {
        p->reason = sim_keep(r, f.reason != NULL ? f.reason : "no node fits");
        policy_filter_result_cleanup(&f);
        return SIM_EXIT_OK;
    }
    policy_filter_result_cleanup(&f);
    rc = policy_bind(r->cluster, p->spec.namespace_, p->spec.name, node, r->now, &b);
    if (rc != POLICY_OK) {
        fprintf(stderr, "muster simulate: bind %s/%s: %s\n", p->spec.namespace_, p->spec.name,
                policy_strerror(rc));
        return SIM_EXIT_FAIL;
    }
    switch (b.outcome) {
    case POLICY_BIND_WAIT:
        p->waiting = true;
        p->reason = sim_keep(r, b.reason);
        *waits = true;
        break;
    case POLICY_BIND_COMMIT:
        rc = sim_commit(r, &b);
        *bound = true;
        break;
    case POLICY_BIND_ALREADY:
        p->bound = true;
        p->node = sim_keep(r, node);
        *bound = true;
        break;
    case POLICY_BIND_REJECT:
        p->reason = sim_keep(r, b.reason);
        break;
    }
    policy_bind_result_cleanup(&b);
    return rc;
}

static void sim_cancel_waits(struct sim_run *r)
{
    char why[512];

    for (size_t i = 0; i < r->npods; i++) {
        struct sim_pod *p = &r->pods[i];

        if (!p->waiting)
            continue;
        /* kube-scheduler's bind call gave up: the pod leaves the barrier. */
        if (policy_bind_cancel(r->cluster, p->spec.namespace_, p->spec.name, why, sizeof(why)) ==
            POLICY_OK)
            p->reason = sim_keep(r, why);
        p->waiting = false;
    }
}

/*
 * Passes over the pending pods until one changes nothing. A pass that only
 * left pods held at a barrier is followed by one where those binds time out
 * and retry; if that still binds nothing, the run is over.
 */
int sim_schedule(struct sim_run *r)
{
    size_t max_passes = 2 * r->npods + 8;
    bool cancelled = false;

    for (size_t pass = 0; pass < max_passes; pass++) {
        bool bound = false, waits = false, any_waiting = false;

        for (size_t i = 0; i < r->npods; i++) {
            struct sim_pod *p = &r->pods[i];
            int rc;

            if (p->bound || p->waiting || p->evicted || !p->spec.managed || !p->arrived ||
                p->done)
                continue;
            rc = sim_cycle(r, p, &bound, &waits);
            if (rc != SIM_EXIT_OK)
                return rc;
        }
        if (sim_submitters(r, r->holder, &bound) != SIM_EXIT_OK)
            return SIM_EXIT_FAIL;
        r->now++;
        for (size_t i = 0; i < r->npods; i++)
            any_waiting = any_waiting || r->pods[i].waiting;
        if (bound) {
            cancelled = false;
            continue;
        }
        if (waits && !cancelled)
            continue;
        if (!any_waiting || cancelled)
            break;
        sim_cancel_waits(r);
        cancelled = true;
    }
    return SIM_EXIT_OK;
}

/* ---- the command --------------------------------------------------------- */

static void sim_run_cleanup(struct sim_run *r)
{
    policy_cluster_free(r->cluster);
    kube_refs_free(r->refs);
    ext_arena_free(r->arena);
    for (size_t i = 0; i < r->ndocs; i++)
        cfg_docs_cleanup(&r->docs[i]);
    free(r->pods);
    free(r->nodes);
    free(r->queues);
    free(r->gangs);
    free(r->named);
    for (size_t i = 0; i < r->nevictions; i++)
        cJSON_Delete(r->evictions[i].why);
    free(r->evictions);
    free(r->rayjobs);
    free(r->times);
    free(r->lives);
    free(r->events);
    free(r->qtimes);
}

static const char *const sim_schedulers[] = {"muster"};

int simulate_main(int argc, char **argv)
{
    return sim_main(argc, argv, NULL);
}

int sim_main(int argc, char **argv, const struct sim_hooks *hooks)
{
    struct sim_args a = {.strategy = POLICY_FRAGMENTATION, .output = SIM_OUTPUT_JSON,
                         .tick_ms = 60000, .until_ms = -1};
    struct sim_run *r = NULL;
    struct policy_options po;
    struct cfg_settings defaults;
    cJSON *holder = NULL;
    int rc;

    /* Fair over time as muster serve has it unless the flags say otherwise. */
    if (cfg_settings_init(&defaults) != CFG_OK) {
        fprintf(stderr, "muster simulate: out of memory\n");
        return SIM_EXIT_FAIL;
    }
    a.fairness = (struct policy_fairness){.half_life_ms = defaults.fairness.half_life_ms,
                                          .window_ms = defaults.fairness.window_ms,
                                          .k_milli = defaults.fairness.k_milli,
                                          .entry_penalty_ms = defaults.fairness.entry_penalty_ms};
    cfg_settings_cleanup(&defaults);
    rc = sim_parse_args(argc, argv, &a);
    if (rc != SIM_EXIT_OK)
        return rc < 0 ? SIM_EXIT_OK : rc;
    po = (struct policy_options){
        .strategy = a.strategy, .plan_ttl_ms = a.plan_ttl_ms, .fairness = a.fairness};
    rc = SIM_EXIT_FAIL;
    r = calloc(1, sizeof(*r));
    holder = cJSON_CreateArray();
    if (r == NULL || holder == NULL)
        goto out_oom;
    r->arena = ext_arena_new();
    r->cluster = policy_cluster_new(&po);
    r->refs = kube_refs_new();
    if (r->arena == NULL || r->cluster == NULL || r->refs == NULL)
        goto out_oom;
    r->hooks = hooks;
    r->lookup = kube_refs_lookup(r->refs);
    r->opts = kube_decode_defaults;
    r->opts.scheduler_names = sim_schedulers;
    r->opts.nscheduler_names = 1;
    r->opts.lookup = &r->lookup;
    r->tick_ms = a.tick_ms;
    r->until_ms = a.until_ms;
    if (a.fairness.half_life_ms > 0 && a.fairness.k_milli > 0)
        r->fair_settle_ms = 2 * a.fairness.half_life_ms + a.fairness.window_ms + a.tick_ms;
    r->timeline = a.until_ms >= 0;
    r->holder = holder;
    rc = sim_read_files(r, &a, holder);
    if (rc == SIM_EXIT_OK && r->timeline)
        rc = sim_timeline_run(r);
    else if (rc == SIM_EXIT_OK) {
        /* No time passes: usage starts, at nothing (and fair shares are today's). */
        policy_usage_sample(r->cluster, r->now);
        rc = sim_schedule(r);
    }
    if (rc != SIM_EXIT_OK)
        goto out;
    if (hooks != NULL) {
        if (hooks->finished != NULL)
            hooks->finished(hooks->ctx, r->cluster);
        goto out;
    }
    if (a.output == SIM_OUTPUT_JSON)
        sim_report_json(r, stdout);
    else if (a.output == SIM_OUTPUT_TABLE)
        sim_report_table(r, stdout);
    else if (sim_report_html(r, stdout) != 0) {
        rc = SIM_EXIT_FAIL;
        goto out_oom;
    }
    if (fflush(stdout) != 0 || ferror(stdout)) {
        fprintf(stderr, "muster simulate: writing the result: %s\n", strerror(errno));
        rc = SIM_EXIT_FAIL;
    }
    goto out;

out_oom:
    fprintf(stderr, "muster simulate: out of memory\n");
out:
    if (r != NULL)
        sim_run_cleanup(r);
    free(r);
    cJSON_Delete(holder);
    return rc;
}
