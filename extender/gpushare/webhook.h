/*
 * webhook.h - the mutating admission webhook that wires a GPU-sharing Pod to
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
#ifndef MUSTER_WEBHOOK_H
#define MUSTER_WEBHOOK_H

#include <stdbool.h>
#include <stddef.h>

#include "extender_proto.h"

#define WEBHOOK_MAX_BODY_DEFAULT (8u << 20) /* an AdmissionReview holds one or two Pods */
#define WEBHOOK_MAX_DEVICES 16              /* gpu-fraction-num-devices */
#define KUBE_ANNOTATION_GPU_CONTAINER "gpu-fraction-container-name"

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

#endif
