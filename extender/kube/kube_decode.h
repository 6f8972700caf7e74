/*
 * kube_decode.h - Kubernetes objects (as cJSON, from the API server or from
 * YAML manifests) into the engine's specs.
 *
 * One decoder serves both `muster serve` (watch events, extender requests)
 * and `muster simulate` (manifests): the specs it fills point into a
 * kube_arena that the caller frees after handing them to the engine.
 * On a malformed object the decoder returns an ext_err code, writes a one
 * line reason into err and, when it can, the offending node into *where so a
 * manifest reader can turn it into file:line.
 */
#ifndef MUSTER_KUBE_DECODE_H
#define MUSTER_KUBE_DECODE_H

#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "policy.h"

/* Annotations and labels muster reads and writes. */
#define KUBE_LABEL_CLUSTER "ray.io/cluster"
#define KUBE_LABEL_NODE_TYPE "ray.io/node-type"
#define KUBE_LABEL_GROUP "ray.io/group"
#define KUBE_LABEL_POD_GROUP "scheduling.x-k8s.io/pod-group"
#define KUBE_ANNOTATION_VOLCANO_GROUP "scheduling.k8s.io/group-name"
#define KUBE_ANNOTATION_GPU_FRACTION "gpu-fraction"
#define KUBE_ANNOTATION_GPU_MEMORY "gpu-memory"
#define KUBE_ANNOTATION_GPU_DEVICES "gpu-fraction-num-devices"
#define KUBE_ANNOTATION_GPU_GROUP "muster.dev/gpu-group"
#define KUBE_ANNOTATION_GPU_SHARE "muster.dev/gpu-fraction"
#define KUBE_LABEL_GPU_MEMORY "nvidia.com/gpu.memory"
#define KUBE_RESOURCE_GPU "nvidia.com/gpu"

struct kube_arena;

struct kube_arena *kube_arena_new(void);
void kube_arena_free(struct kube_arena *a);
void *kube_arena_alloc(struct kube_arena *a, size_t size);
char *kube_arena_strdup(struct kube_arena *a, const char *s);

struct kube_decode_opts {
    const char *const *queue_label_keys; /* first present wins */
    size_t nqueue_label_keys;
    const char *const *scheduler_names; /* pods with one of these are managed */
    size_t nscheduler_names;
};

/* The defaults: queue keys muster.dev/queue, kai.scheduler/queue,
 * volcano.sh/queue-name; scheduler name muster. */
extern const struct kube_decode_opts kube_decode_defaults;

/*
 * Kubernetes quantities ("2", "500m", "4Gi", "1.5", "1e3") into an integer of
 * the given scale: scale 1000 gives milli-units (cpu, GPU shares), scale 1
 * whole units rounded up (memory bytes, counts). scale must be a power of
 * ten. EXT_EINVAL for bad syntax, EXT_ETOOBIG when it does not fit int64.
 */
int kube_quantity_parse(const char *s, int64_t scale, int64_t *out);

enum kube_quantity_style {
    KUBE_QUANTITY_MILLI,   /* millicores: 2000 -> "2", 500 -> "500m" */
    KUBE_QUANTITY_BINARY,  /* bytes, largest exact binary suffix: "4Gi" */
    KUBE_QUANTITY_DECIMAL, /* milli-units as a decimal: 500 -> "0.5", 2000 -> "2" */
};

/* The opposite way, for output: v in the style's unit into buf. */
void kube_quantity_format(int64_t v, enum kube_quantity_style style, char *buf, size_t len);

/* A gpu-fraction value ("0.5") into milli-devices, rounding up; -2 if not a number. */
int kube_fraction_parse(const char *s, int32_t *milli);

int kube_node_decode(const cJSON *node, struct kube_arena *a, struct policy_node_spec *out,
                     char *err, size_t errlen, const cJSON **where);

/* A Pod; an ask the decoder cannot read sets out->invalid instead of failing. */
int kube_pod_decode(const cJSON *pod, const struct kube_decode_opts *o, struct kube_arena *a,
                    struct policy_pod_spec *out, char *err, size_t errlen, const cJSON **where);

/* A muster.dev/v1alpha1 Queue. */
int kube_queue_decode(const cJSON *queue, struct kube_arena *a, struct policy_queue_spec *out,
                      char *err, size_t errlen, const cJSON **where);

/* A ray.io/v1 RayCluster's gang: key namespace/name, min members per REFERENCE §3. */
int kube_raycluster_gang(const cJSON *rc, const struct kube_decode_opts *o, struct kube_arena *a,
                         struct policy_gang_spec *out, char *err, size_t errlen,
                         const cJSON **where);

/* A PodGroup (scheduling.x-k8s.io or scheduling.volcano.sh): minMember. */
int kube_podgroup_gang(const cJSON *pg, const struct kube_decode_opts *o, struct kube_arena *a,
                       struct policy_gang_spec *out, char *err, size_t errlen,
                       const cJSON **where);

/* The gang key a pod belongs to ("ns/name"), or NULL for a gang of one. */
const char *kube_pod_gang_key(const cJSON *pod, struct kube_arena *a);

/* A pod in phase Succeeded or Failed: it holds nothing, callers skip it. */
bool kube_pod_is_terminal(const cJSON *pod);

/*
 * One workerGroupSpec as KubeRay counts it (utils/util.go): *desired pods
 * (GetWorkerGroupDesiredReplicas: 0 if suspended, else replicas clamped to
 * [minReplicas, maxReplicas], times numOfHosts) and *gang_min, the part of
 * the gang minimum (minReplicas x numOfHosts when autoscaling, else desired).
 */
int kube_worker_group_replicas(const cJSON *group, bool autoscaling, int32_t *desired,
                               int32_t *gang_min, char *err, size_t errlen,
                               const cJSON **where);

#endif
