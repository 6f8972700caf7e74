/*
 * gpushare.h - GPU sharing made real (docs/gpu-sharing.md): the bind-time
 * hand-off of a shared device (reservation pods, per-pod ConfigMaps), the
 * mutating admission webhook, and `muster reserve`, the program a
 * reservation pod runs.
 */
#ifndef MUSTER_GPUSHARE_H
#define MUSTER_GPUSHARE_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>

#include "base.h"
#include "config.h"
#include "kube.h"
#include "policy.h"
#include "wire.h"

/* ---- the bind-time hand-off ---------------------------------------------- */
/*
 * Making a planned share real on the node, before its Binding
 * (docs/gpu-sharing.md).
 *
 * For each GPU group a committed member uses, the group's reservation pod
 * must exist on the node and have reported the device it holds; then the
 * member's ConfigMap (named after the label the admission webhook put on it)
 * is written with that device and the share. Every wait is bounded by
 * gpuSharing.reservationTimeout: a reservation pod that never reports is
 * deleted, sharing on that node is paused, and the commit fails with a reason
 * so the gang is requeued whole.
 */

/* What the hand-off works with; every pointer is borrowed from the daemon. */
struct gpushare {
    const struct cfg_gpu_sharing *settings;
    struct kube_client *kube;      /* NULL: no API server, nothing to make real */
    struct policy_cluster *engine; /* guarded by engine_lock */
    pthread_mutex_t *engine_lock;
    const bool *stopping; /* true once muster shuts down */
    struct ext_metric *reservation_timeouts; /* {node}; NULL: not counted */
};

/*
 * Create the reservation pods of a member's groups now, without waiting, so
 * their devices are reported by the time the whole gang reaches bind. groups
 * is "g0" or "g0,g3"; NULL does nothing.
 */
void gpu_share_reserve_early(struct gpushare *d, const char *node, const char *groups);

/*
 * EXT_OK when the member may be bound; otherwise err says why: EXT_ETIMEOUT
 * when a reservation pod did not report by the commit's deadline (it is
 * deleted and sharing on the node paused), EXT_ESTOPPED when muster is
 * shutting down (nothing is undone: a restarted muster adopts the pod).
 */
int gpu_share_prepare(struct gpushare *d, const struct policy_assignment *m, int64_t deadline,
                      char *err, size_t errlen);

/* Delete reservation pods whose group no longer holds any pod (and orphans).
 * Call it only once the engine has the whole cluster (cache_ready). */
void gpu_share_reap(struct gpushare *d);

/* ---- the admission webhook ----------------------------------------------- */
/*
 * The mutating admission webhook that wires a GPU-sharing Pod to
 * its device (docs/gpu-sharing.md).
 *
 * webhook_review() is the whole decision, with no I/O: an
 * admission.k8s.io/v1 AdmissionReview request in, the AdmissionReview
 * response out. The HTTPS side (libmicrohttpd) only moves bytes.
 *
 * For a Pod CREATE carrying gpu-fraction or gpu-memory it either rejects the
 * Pod with a message a person can act on, or allows it with a JSONPatch that:
 *   - labels it muster.dev/gpu-share-id=<id> (kept if already there), the id
 *     being the admission request's uid: Pods from generateName have no name
 *     yet, so the ConfigMap is named muster-gpu-<id> instead of after the Pod;
 *   - makes the target container's NVIDIA_VISIBLE_DEVICES and GPU_FRACTION
 *     come from that ConfigMap (configMapKeyRef, not optional: the container
 *     does not start until muster has written it at bind);
 *   - sets spec.runtimeClassName unless the Pod already sets one.
 * Everything else is allowed untouched.
 */

#define WEBHOOK_MAX_BODY_DEFAULT (8u << 20) /* an AdmissionReview holds one or two Pods */
#define WEBHOOK_MAX_DEVICES 16              /* gpu-fraction-num-devices */

struct webhook_opts {
    /* spec.runtimeClassName to set; NULL or "" leaves it alone. */
    const char *runtime_class_name;
    /*
     * Whether any node carries nvidia.com/gpu.memory, without which a
     * gpu-memory share cannot be turned into a fraction. When the callback is
     * set it is asked instead of reading the flag (serve answers from its
     * node cache).
     */
    bool cluster_has_gpu_memory_labels;
    bool (*has_gpu_memory_labels)(void *ctx);
    void *ctx;
    /* Caps on the request body; NULL = WEBHOOK_MAX_BODY_DEFAULT and the proto defaults. */
    const struct ext_proto_limits *limits;
};

/*
 * body/len: the AdmissionReview the API server POSTed. On EXT_OK,
 * *response_json (malloc'd, caller frees) and *rlen hold the AdmissionReview
 * to send back with 200, whether it allows or rejects the Pod. A body that is
 * not an AdmissionReview request with a uid fails with EXT_EINVAL (answer 400),
 * one over the caps with EXT_ETOOBIG (413); err says why.
 */
int webhook_review(const char *body, size_t len, const struct webhook_opts *o, char **response_json,
                   size_t *rlen, char *err, size_t errlen);

/* ---- muster reserve ------------------------------------------------------ */
/*
 * `muster reserve`: the program a GPU reservation Pod runs
 * (docs/gpu-sharing.md).
 *
 * It reads the device the NVIDIA device plugin gave its Pod
 * (NVIDIA_VISIBLE_DEVICES), writes it onto its own Pod as the annotation
 * muster.dev/gpu-device (POD_NAME / POD_NAMESPACE from the downward API),
 * then sleeps until SIGTERM: the Pod holds the GPU by existing.
 *
 * Exit status: 0 after SIGTERM (or after patching with --once), 1 when the
 * API server could not be told, 2 for a bad environment or bad flags.
 */

#define RESERVE_DEVICE_MAX 256

int reserve_main(int argc, char **argv);

/*
 * Whether value (NVIDIA_VISIBLE_DEVICES, NULL when unset) names exactly one
 * allocated device: a UUID ("GPU-5f3c...", "MIG-...") or an index ("3").
 * "all", "none", "void", empty, lists and volume-mount paths are refused:
 * EXT_EINVAL, and err says what it means and what to check.
 */
int reserve_device_check(const char *value, char *err, size_t errlen);

#endif
