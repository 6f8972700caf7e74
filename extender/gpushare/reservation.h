/*
 * reservation.h - the Kubernetes objects that make a GPU share real on a node
 * (docs/gpu-sharing.md): the reservation Pod that holds one physical GPU for
 * a GPU group, and the per-Pod ConfigMap that hands the device to a sharing
 * Pod's container.
 *
 * Builders return a new cJSON object the caller owns (cJSON_Delete), or NULL
 * with a one-line reason in err. They read no clock and talk to no server.
 */
#ifndef MUSTER_RESERVATION_H
#define MUSTER_RESERVATION_H

#include <cjson/cJSON.h>
#include <stddef.h>
#include <stdint.h>

#include "config.h"

/* The reservation Pod's parts; its labels are in base.h. */
#define RESERVATION_PRIORITY_CLASS "muster-gpu-reservation"
#define RESERVATION_SERVICE_ACCOUNT "muster-reserve"
#define RESERVATION_CONTAINER "reserve"

/*
 * The admission webhook labels every sharing Pod at CREATE with
 * EXT_LABEL_GPU_SHARE_ID (base.h). Pods made from generateName (KubeRay's)
 * have no name yet at admission, so the ConfigMap is named after that token
 * instead: muster-gpu-<token>, in the Pod's namespace.
 */
#define GPU_SHARE_CONFIGMAP_PREFIX "muster-gpu-"
#define GPU_SHARE_KEY_DEVICES "NVIDIA_VISIBLE_DEVICES"
#define GPU_SHARE_KEY_FRACTION "GPU_FRACTION"
#define GPU_SHARE_ID_MAX 40 /* keeps the ConfigMap name a DNS label and the id a label value */

/*
 * The reservation Pod for GPU group group_id ("g0") on node: name
 * gpu-reservation-<node>-<group> made a DNS-1123 label of at most 63
 * characters (a node name that had to be cut or changed gets an 8-hex hash of
 * the full name, so two nodes never share a name), in o->reservation_namespace,
 * pinned with spec.nodeName, one container running `muster reserve` from
 * o->reservation_image asking nvidia.com/gpu: 1. EXT_EINVAL-style failures
 * (empty or over-long names) return NULL with err set.
 */
cJSON *reservation_pod_new(const struct cfg_gpu_sharing *o, const char *node, const char *group_id,
                           char *err, size_t errlen);

/* Only the name reservation_pod_new() would give: EXT_OK or EXT_EINVAL. */
int reservation_pod_name(const char *node, const char *group_id, char *buf, size_t len);

/*
 * The ConfigMap ns/name a sharing Pod's container reads its device from:
 * data NVIDIA_VISIBLE_DEVICES = devices ("GPU-<uuid>" or "3"; n devices
 * comma-separated for gpu-fraction-num-devices n) and GPU_FRACTION = the share
 * as a decimal ("0.5"), owned by the Pod (owner_name, owner_uid) so the
 * garbage collector deletes it with the Pod.
 */
cJSON *gpu_share_configmap_new(const char *ns, const char *name, const char *devices,
                               int32_t fraction_milli, const char *owner_name,
                               const char *owner_uid, char *err, size_t errlen);

/* "muster-gpu-<share_id>" into buf: EXT_OK, or EXT_EINVAL for an id not fit for it. */
int gpu_share_configmap_name(const char *share_id, char *buf, size_t len);

/* The same from a Pod's muster.dev/gpu-share-id label: EXT_ENOTFOUND without one. */
int gpu_share_configmap_name_of(const cJSON *pod, char *buf, size_t len);

/* A share id fit for a label value and a ConfigMap name: [a-z0-9-], 1..40, alnum at both ends. */
int gpu_share_id_valid(const char *id);

#endif
