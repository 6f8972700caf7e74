/* ask.c - what a pod asks for, on its own: valid or not, same shape as another, in words. */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "arith.h"
#include "internal.h"

/* ---- pods ---------------------------------------------------------------- */

static const struct {
    const char *what;
    size_t offset;
    int64_t cap;
} ask_caps[] = {
    {"cpu (millicores)", offsetof(struct policy_pod_spec, cpu_milli), POLICY_MAX_CPU_MILLI},
    {"memory (bytes)", offsetof(struct policy_pod_spec, memory_bytes), POLICY_MAX_MEMORY_BYTES},
    {"nvidia.com/gpu", offsetof(struct policy_pod_spec, gpus), POLICY_MAX_GPUS},
    {"gpu-memory (MiB)", offsetof(struct policy_pod_spec, gpu_memory_mib),
     POLICY_MAX_GPU_MEMORY_MIB},
};

bool pask_uncountable(const struct policy_pod_spec *s, char *why, size_t len)
{
    for (size_t i = 0; i < sizeof(ask_caps) / sizeof(ask_caps[0]); i++) {
        int64_t v = *(const int64_t *)((const char *)s + ask_caps[i].offset);

        if (v < 0) {
            snprintf(why, len, "negative resource request");
            return true;
        }
        if (v > ask_caps[i].cap) {
            snprintf(why, len, "asks %lld of %s, over the engine's cap of %lld for one pod",
                     (long long)v, ask_caps[i].what, (long long)ask_caps[i].cap);
            return true;
        }
    }
    return false;
}

int64_t pask_counted(int64_t v, int64_t cap)
{
    return parith_clamp(v, 0, cap);
}

bool policy_pod_spec_valid(const struct policy_pod_spec *s, char *why, size_t len)
{
    if (s->invalid) {
        snprintf(why, len, "%s", s->invalid);
        return false;
    }
    if (pask_uncountable(s, why, len))
        return false;
    if (s->gpus > 0 && (s->gpu_share_milli > 0 || s->gpu_memory_mib > 0)) {
        snprintf(why, len, "asks both whole GPUs (nvidia.com/gpu: %lld) and a GPU share",
                 (long long)s->gpus);
        return false;
    }
    if (s->gpu_share_milli < 0 || s->gpu_share_milli >= POLICY_GPU_MILLI ||
        (s->gpu_share_milli == 0 && s->gpu_devices > 1 && s->gpu_memory_mib <= 0)) {
        snprintf(why, len, "gpu-fraction %d.%03d is outside (0, 1)", s->gpu_share_milli / 1000,
                 abs(s->gpu_share_milli % 1000));
        return false;
    }
    if (s->gpu_share_milli > 0 && s->gpu_memory_mib > 0) {
        snprintf(why, len, "asks both gpu-fraction and gpu-memory");
        return false;
    }
    if (s->gpu_devices < 0 || s->gpu_devices > POLICY_MAX_DEVICES) {
        snprintf(why, len, "gpu-fraction-num-devices %d is outside [1, %d]", s->gpu_devices,
                 POLICY_MAX_DEVICES);
        return false;
    }
    if (s->gpus < 0 || s->cpu_milli < 0 || s->memory_bytes < 0 || s->gpu_memory_mib < 0) {
        snprintf(why, len, "negative resource request");
        return false;
    }
    return true;
}

bool ppod_same_shape(const struct ppod *a, const struct ppod *b)
{
    return a->cpu == b->cpu && a->memory == b->memory && a->gpus == b->gpus &&
           a->share == b->share && a->gpu_memory_mib == b->gpu_memory_mib &&
           a->devices == b->devices && pselector_equal(&a->sel, &b->sel);
}

bool ppod_ask_valid(const struct ppod *p, char *why, size_t len)
{
    struct policy_pod_spec s = {.gpus = p->gpus,
                                .gpu_share_milli = p->share,
                                .gpu_memory_mib = p->gpu_memory_mib,
                                .gpu_devices = p->devices,
                                .invalid = p->invalid};

    return policy_pod_spec_valid(&s, why, len);
}
