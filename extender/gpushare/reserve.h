/*
 * reserve.h - `muster reserve`: the program a GPU reservation Pod runs
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
#ifndef MUSTER_RESERVE_H
#define MUSTER_RESERVE_H

#include <stddef.h>

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
