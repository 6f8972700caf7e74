/*
 * base.h - what every part of muster's shell (extender/) shares: the error
 * table and its one formatter, the clock, one arena, the names muster reads
 * and writes on Kubernetes objects, the logger and the metrics registry.
 *
 * Nothing here knows the wire protocol, the API server or the engine.
 */
#ifndef MUSTER_BASE_H
#define MUSTER_BASE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "config.h"

/* ---- the error table: codes that mean one thing across the shell ---------- */

#define EXT_ERRNO_MAP(XX)                                                                          \
    XX(OK, 0, "ok")                                                                                \
    XX(ENOMEM, -1, "out of memory")                                                                \
    XX(EINVAL, -2, "invalid input")                                                                \
    XX(ETOOBIG, -3, "input over its size cap")                                                     \
    XX(ENOTFOUND, -4, "not found")                                                                 \
    XX(EIO, -5, "I/O or network failure")                                                          \
    XX(EHTTP, -6, "the API server answered with an error status")                                  \
    XX(ECONFLICT, -7, "conflict")                                                                  \
    XX(EGONE, -8, "resource version too old (410 Gone)")                                           \
    XX(ETIMEOUT, -9, "timed out")                                                                  \
    XX(ESTOPPED, -10, "shutting down")                                                             \
    XX(EPROTO, -11, "the reply is not what the protocol says")                                     \
    XX(EBUSY, -12, "busy: it would have to wait")

enum ext_err {
#define EXT_ERR_ENUM(name, code, text) EXT_##name = code,
    EXT_ERRNO_MAP(EXT_ERR_ENUM)
#undef EXT_ERR_ENUM
};

const char *ext_strerror(int err);

/*
 * Write a one-line reason into err (optional, errlen bytes) and return code:
 * the one way the shell reports a failure. Control bytes from untrusted text
 * become '?', so a reason is always one line of a log.
 */
int ext_errf(char *err, size_t errlen, int code, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* ---- the clock ------------------------------------------------------------- */

/* Monotonic milliseconds: the engine's clock and every deadline's. */
int64_t ext_now_ms(void);
/* Unix milliseconds (the wall clock): only to tell how long ago an object's time was. */
int64_t ext_wall_ms(void);
/* An RFC 3339 time as Kubernetes writes it ("2026-11-29T16:40:01Z", fractions and offsets too)
 * in Unix microseconds (fraction digits past the sixth ignored); -1 if it is not one. */
int64_t ext_time_us(const char *rfc3339);

/* Sleep for ms milliseconds (interrupted sleeps are resumed). */
void ext_sleep_ms(int64_t ms);

/* The CLOCK_MONOTONIC time ms from now, for pthread_cond_timedwait on a
 * condition variable made with pthread_condattr_setclock(CLOCK_MONOTONIC). */
struct timespec;
void ext_deadline_in(struct timespec *ts, int64_t ms);

/* ---- one arena ------------------------------------------------------------- */

/*
 * A bump allocator for things that die together: a decoded object's strings
 * and arrays, one HTTP request's answer. Allocations are zeroed and aligned
 * for any type; everything goes in one ext_arena_free, after the release
 * functions given to ext_arena_defer have run (for results owned elsewhere
 * that an answer points into).
 */
struct ext_arena;

struct ext_arena *ext_arena_new(void);
void ext_arena_free(struct ext_arena *a);
void *ext_arena_alloc(struct ext_arena *a, size_t size); /* NULL on ENOMEM */
void *ext_arena_calloc(struct ext_arena *a, size_t n, size_t size);
char *ext_arena_strdup(struct ext_arena *a, const char *s); /* NULL s gives NULL */
int ext_arena_defer(struct ext_arena *a, void (*release)(void *), void *arg);

/* ---- names on Kubernetes objects -------------------------------------------- */

/* What Kubernetes lets an object be called (k8s.io/apimachinery validation). */
enum ext_name_kind {
    EXT_NAME_SUBDOMAIN,   /* pods, nodes, most objects: DNS-1123 subdomain, at most 253 */
    EXT_NAME_LABEL,       /* namespaces: DNS-1123 label, at most 63 */
    EXT_NAME_LABEL_VALUE, /* a label's value: at most 63, may be empty */
};

#define EXT_DNS_SUBDOMAIN_MAX 253
#define EXT_DNS_LABEL_MAX 63

bool ext_name_valid(const char *name, enum ext_name_kind kind);
/* EXT_EINVAL with "<what> \"<name>\" is not a ... (the rule)" in err when invalid. */
int ext_name_check(const char *name, enum ext_name_kind kind, const char *what, char *err,
                   size_t errlen);

/* What KubeRay writes on Ray pods (REFERENCE §3). */
#define EXT_LABEL_RAY_CLUSTER "ray.io/cluster"
#define EXT_LABEL_RAY_NODE_TYPE "ray.io/node-type"
#define EXT_LABEL_RAY_GROUP "ray.io/group"
#define EXT_LABEL_RAY_IS_NODE "ray.io/is-ray-node"
#define EXT_LABEL_RAY_IDENTIFIER "ray.io/identifier"
#define EXT_LABEL_CREATED_BY "app.kubernetes.io/created-by"
#define EXT_LABEL_APP_NAME "app.kubernetes.io/name"
/* On a RayJob's or RayService's RayCluster, and a RayJob's submitter Job and its pod
 * (ray-operator/controllers/ray/utils/constant.go, v1.7.0). */
#define EXT_LABEL_RAY_ORIGIN_KIND "ray.io/originated-from-crd"  /* "RayJob", "RayService" */
#define EXT_LABEL_RAY_ORIGIN_NAME "ray.io/originated-from-cr-name"
#define EXT_LABEL_JOB_NAME "batch.kubernetes.io/job-name" /* the Job controller's, on its pods */
#define EXT_LABEL_JOB_NAME_LEGACY "job-name"

/* Gang and queue metadata of the batch-scheduler contracts. */
#define EXT_LABEL_POD_GROUP "scheduling.x-k8s.io/pod-group"
#define EXT_ANNOTATION_VOLCANO_GROUP "scheduling.k8s.io/group-name"
#define EXT_LABEL_QUEUE_MUSTER "muster.dev/queue"
#define EXT_LABEL_QUEUE_KAI "kai.scheduler/queue"
#define EXT_LABEL_QUEUE_VOLCANO "volcano.sh/queue-name"

/* Gang composition and priority (REFERENCE §8, §9). */
#define EXT_LABEL_RAY_PRIORITY_CLASS "ray.io/priority-class-name" /* on a RayCluster */
#define EXT_ANNOTATION_KAI_POD_GROUP "pod-group-name"             /* KAI PodGroup member */
#define EXT_LABEL_KAI_SUBGROUP "kai.scheduler/subgroup-name"
#define EXT_LABEL_KAI_PREEMPTIBILITY "kai.scheduler/preemptibility" /* [non-]preemptible */
#define EXT_ANNOTATION_VOLCANO_TASK "volcano.sh/task-spec"
#define EXT_ANNOTATION_VOLCANO_PREEMPTABLE "volcano.sh/preemptable" /* "true" / "false" */
/* Topology (docs/topology.md): KAI's on a workload or a pod template, Kueue's on a pod
 * template, Volcano's as KubeRay reads them from a RayCluster's labels, KubeRay's replicas. */
#define EXT_ANNOTATION_KAI_TOPOLOGY "kai.scheduler/topology"
#define EXT_ANNOTATION_KAI_REQUIRED "kai.scheduler/topology-required-placement"
#define EXT_ANNOTATION_KAI_PREFERRED "kai.scheduler/topology-preferred-placement"
#define EXT_ANNOTATION_KUEUE_REQUIRED "kueue.x-k8s.io/podset-required-topology"
#define EXT_ANNOTATION_KUEUE_PREFERRED "kueue.x-k8s.io/podset-preferred-topology"
#define EXT_LABEL_VOLCANO_TOPOLOGY_MODE "volcano.sh/network-topology-mode" /* hard | soft */
#define EXT_LABEL_VOLCANO_TOPOLOGY_TIER "volcano.sh/network-topology-highest-tier-allowed"
#define EXT_LABEL_RAY_REPLICA "ray.io/worker-group-replica-name" /* a multi-host replica */

/* GPU asks, KAI's names (REFERENCE §4). */
#define EXT_ANNOTATION_GPU_FRACTION "gpu-fraction"
#define EXT_ANNOTATION_GPU_MEMORY "gpu-memory"
#define EXT_ANNOTATION_GPU_DEVICES "gpu-fraction-num-devices"
#define EXT_ANNOTATION_GPU_CONTAINER "gpu-fraction-container-name"
#define EXT_RESOURCE_GPU "nvidia.com/gpu"
#define EXT_LABEL_GPU_MEMORY "nvidia.com/gpu.memory" /* MiB per device, on nodes */

/* What muster writes. */
#define EXT_ANNOTATION_GPU_GROUP "muster.dev/gpu-group"    /* "g0" or "g0,g3" */
#define EXT_ANNOTATION_GPU_SHARE "muster.dev/gpu-fraction" /* "0.500" */
#define EXT_ANNOTATION_REQUEUE "muster.dev/requeue"        /* touched to hand a pod back */
#define EXT_ANNOTATION_GPU_DEVICE "muster.dev/gpu-device"  /* by `muster reserve` */
#define EXT_LABEL_GPU_SHARE_ID "muster.dev/gpu-share-id"   /* by the webhook */
#define EXT_LABEL_RESERVATION_GROUP "muster.dev/gpu-group" /* on reservation pods */
#define EXT_LABEL_RESERVATION_NODE "muster.dev/node"
#define EXT_RESERVATION_APP "muster-gpu-reservation" /* app.kubernetes.io/name */

/* How muster's gang Events (GangWaiting, GangBound) end: the reason, then this and the
 * gang's composition; `muster why` takes the reason as what comes before it. */
#define EXT_EVENT_COMPOSITION "; composition: "

/* ---- text for a terminal (text.c) ------------------------------------------- */

/*
 * What the cluster says, safe to print: every control character (C0, DEL,
 * C1), bidi control, line separator and byte that is not UTF-8 escaped
 * visibly (ESC as "^[", CR LF TAB as "\r" "\n" "\t", others "\xNN" or
 * "\uNNNN"), as kubectl escapes since CVE-2021-25743. The one rule every text
 * printer applies to cluster data; escaping twice changes nothing.
 */
/* Writes the escaped s and its NUL into out (NULL: only counts); the length, NUL not counted. */
size_t ext_text_escape(const char *s, char *out);
/* The escaped copy of s in a; NULL when s is NULL or memory ran out. */
char *ext_text_safe(struct ext_arena *a, const char *s);
/* s escaped onto out. */
void ext_text_put(const char *s, FILE *out);
/* The formatted text, escaped whole onto out: a newline to keep goes in a call of its own. */
void ext_text_printf(FILE *out, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* cJSON_Print (formatted) or cJSON_PrintUnformatted of item, with what acts on a terminal inside
 * its strings (C1, bidi, U+2028/9, DEL) as \uNNNN and bytes that are no UTF-8 as \ufffd: the same
 * data, safe to print. malloc'd; NULL when out of memory. */
struct cJSON;
char *ext_json_print(const struct cJSON *item, bool formatted);
/* How many columns s takes: its characters (UTF-8 continuation bytes do not count). */
size_t ext_text_width(const char *s);

/* ---- the log ---------------------------------------------------------------- */
/*
 * One line per event, plain or JSON, to stderr.
 *
 * Decisions are logged as fields a person and a log pipeline can both read:
 *   plain: 2026-11-29T16:40:01.123Z info filter pod=lab/demo-head gang=lab/demo verdict=planned
 * node=n1 json:  {"ts":"...","level":"info","msg":"filter","pod":"lab/demo-head",...}
 */

void ext_log_setup(enum cfg_log_format format, enum cfg_log_level level);
bool ext_log_enabled(enum cfg_log_level level);

/* msg, then key/value string pairs ending with NULL. A NULL value is skipped. */
void ext_log(enum cfg_log_level level, const char *msg, ...) __attribute__((sentinel));

#define ext_log_info(...) ext_log(CFG_LOG_INFO, __VA_ARGS__, (const char *)NULL)
#define ext_log_warn(...) ext_log(CFG_LOG_WARN, __VA_ARGS__, (const char *)NULL)
#define ext_log_error(...) ext_log(CFG_LOG_ERROR, __VA_ARGS__, (const char *)NULL)
#define ext_log_debug(...) ext_log(CFG_LOG_DEBUG, __VA_ARGS__, (const char *)NULL)

/* ---- metrics ----------------------------------------------------------------- */
/*
 * A small Prometheus registry: counters, gauges and histograms
 * with labels, rendered in the text exposition format (version 0.0.4).
 *
 * A family (struct ext_metric) has one name, one type and fixed label names.
 * A series is one combination of label values; look it up once and keep the
 * pointer for the hot path. Every call is thread-safe.
 *
 * Gauges that mirror state held elsewhere (gangs by state, queue usage) are
 * best refreshed by a collect hook, which runs before every render.
 */

struct ext_metrics;
struct ext_metric;
struct ext_series;

/* The request latency buckets, in seconds: 0.0005 .. 10. */
extern const double ext_metrics_latency_buckets[];
extern const size_t ext_metrics_latency_nbuckets;

struct ext_metrics *ext_metrics_new(void);
void ext_metrics_free(struct ext_metrics *r);

/*
 * Register a family. labels is a comma-separated list of label names
 * ("verb,code"), NULL or "" for none. Registering the same name again with
 * the same type and labels returns the family already there. NULL on a name
 * Prometheus would refuse, a clash with another type or labels, or ENOMEM.
 * bounds are the histogram's upper bounds, strictly increasing; +Inf is implied.
 */
struct ext_metric *ext_metrics_counter(struct ext_metrics *r, const char *name, const char *help,
                                       const char *labels);
struct ext_metric *ext_metrics_gauge(struct ext_metrics *r, const char *name, const char *help,
                                     const char *labels);
struct ext_metric *ext_metrics_histogram(struct ext_metrics *r, const char *name, const char *help,
                                         const char *labels, const double *bounds, size_t nbounds);

/*
 * The series for these label values, one per label name in order (NULL for
 * a family without labels); created at first use, at 0. The pointer stays
 * valid until ext_metric_clear or ext_metrics_free. NULL on ENOMEM or a NULL m.
 */
struct ext_series *ext_metric_with(struct ext_metric *m, const char *const *values);

/* Drop every series of a family: for gauges rebuilt by a collect hook. */
void ext_metric_clear(struct ext_metric *m);

/* Each is a no-op on a NULL series, so a failed lookup costs a sample, not a crash. */
void ext_series_add(struct ext_series *s, double v);     /* counter (v >= 0) or gauge */
void ext_series_set(struct ext_series *s, double v);     /* gauge */
void ext_series_observe(struct ext_series *s, double v); /* histogram */
double ext_series_value(struct ext_series *s);           /* counter/gauge value; histogram count */

/* fn runs before every render, outside the registry's lock. */
int ext_metrics_on_collect(struct ext_metrics *r, void (*fn)(struct ext_metrics *r, void *ctx),
                           void *ctx);

/* The text exposition of every family, into a malloc'd NUL-terminated buffer. */
int ext_metrics_render(struct ext_metrics *r, char **out, size_t *len);

#endif
