/*
 * frag.h - fragmentation-aware placement, private to shapes.c (what the
 * workload looks like) and frag.c (what a placement costs).
 *
 * The workload is a bounded histogram of the shapes of the GPU pods the engine
 * has seen: cpu, memory, whole GPUs or a share on some devices, and the node
 * constraint (nodeSelector, affinity, tolerations). Each shape weighs the GPU
 * it was asked for, decayed so the histogram follows the recent workload.
 *
 * A node's fragmentation for a shape s is the free GPU that pods of shape s
 * could not use if they came one after another until the node is full: all of
 * it when s cannot run there at all, else what is left once as many s pods as
 * its free GPU, cpu, memory and pod count allow are in. Its expected
 * fragmentation F(n) weighs the shapes by the histogram. FGD (Weng et al.,
 * ATC'23) counts a device as lost only when it is smaller than s asks and the
 * whole node only when s does not fit at all; counting how many pods fit sees
 * cpu and memory run out long before that. A second term B(n) is the free GPU
 * the workload's mix could not use for want of cpu or memory at the mix's own
 * cpu (and memory) per GPU: it keeps cpu-hungry pods off cpu-poor nodes.
 */
#ifndef MUSTER_POLICY_FRAG_H
#define MUSTER_POLICY_FRAG_H

#include "internal.h"

#define PSHAPE_SLOTS 64          /* shapes kept; the least weighted gives way */
#define PSHAPE_CHUNK 16          /* shapes priced together (PSHAPE_SLOTS is a multiple) */
#define PSHAPE_GROWTH 1.0001692397053021 /* 2^(1/4096): a weight halves in 4,096 pods */
#define PFRAG_BALANCE 16.0f      /* weight of B against F */
#define PFRAG_REPRICE 0.02       /* the weights priced with move when the histogram moved this far */
#define PFRAG_MEM_SHIFT 22       /* memory in 4 MiB units */
#define PFRAG_MAX_UNITS (1 << 20) /* cpu, memory and GPU counts are clamped below this */
#define PFRAG_DIRTY 64           /* changed nodes tracked between placements */

struct pshape {
    bool used;
    int64_t cpu, memory;  /* requests: millicores, bytes */
    int64_t gpus;         /* whole devices */
    int32_t share;        /* milli per device; 0 for whole GPUs or a gpu-memory ask */
    int64_t gpu_memory_mib;
    int32_t devices;      /* for a share */
    struct pselector sel;
    double weight;        /* decayed count of the pods seen with this shape */
};

/* What one node can give each shape: kept while the strategy is fragmentation. */
struct pfrag_node {
    int32_t idle;      /* free milli-GPU */
    int32_t cpu_left;  /* millicores */
    int32_t mem_left;  /* 4 MiB units */
    int32_t pods_left;
    int32_t need[PSHAPE_SLOTS];   /* milli per device the shape takes here; 0: it cannot run here */
    /* Per shape, in floats (exact: every count is below 2^20) so pricing vectorizes. */
    float inv_need[PSHAPE_SLOTS]; /* 1 / need; 0 when need is 0 */
    float needk[PSHAPE_SLOTS];    /* milli per device x devices: what one pod of it takes */
    float units[PSHAPE_SLOTS];    /* per-device asks of the shape that the free GPU holds */
    float frag[PSHAPE_SLOTS];     /* f_s(n) */
};

struct pfrag {
    struct pshape shape[PSHAPE_SLOTS];
    int nused;  /* slots in use: always the first ones */
    double inc; /* weight of the next observation: grows, so older ones decay */
    uint64_t seen;
    /* Per shape, for pricing: weight (sums to 1), what it asks, and reciprocals. The
     * weights are the histogram's as of the last time it moved by PFRAG_REPRICE (L1). */
    float w[PSHAPE_SLOTS];
    int32_t cpu[PSHAPE_SLOTS], mem[PSHAPE_SLOTS], k[PSHAPE_SLOTS];
    float inv_cpu[PSHAPE_SLOTS], inv_mem[PSHAPE_SLOTS], inv_k[PSHAPE_SLOTS];
    float no_cpu[PSHAPE_SLOTS], no_mem[PSHAPE_SLOTS]; /* PFRAG_MAX_UNITS when it asks none */
    float cpu_per_gpu, mem_per_gpu; /* the mix's, per milli-GPU */
    uint64_t hist_version;          /* bumps whenever the pricing weights or a shape change */

    bool active; /* node caches kept: the strategy is fragmentation */
    struct pfrag_node *nodes;
    uint64_t *version; /* per node id: bumps when its usage or labels change; 0 = no cache */
    int64_t *fill;     /* per node id: pnode_fill_score, for ties */
    uint64_t *sig;     /* per node id: hash of everything its price depends on but labels */
    size_t cap;
    uint64_t next_version;

    /* The last price of each node for one pod shape, kept while nothing changes. */
    uint64_t *memo_version;
    float *memo_delta;
    uint64_t memo_hist;
    struct pshape memo_key; /* its selector is a copy */
    bool memo_valid;

    /* Prices seen during one choice, by node signature: identical nodes are priced once. */
    struct pfrag_priced {
        uint64_t sig;
        uint32_t gen;
        float d;
    } *priced;
    size_t priced_cap; /* a power of two */
    uint32_t priced_gen;

    /* Nodes whose figures changed since the last placement was chosen. */
    int32_t dirty[PFRAG_DIRTY];
    int ndirty; /* > PFRAG_DIRTY: too many, forget the tree */

    /* A tournament over the last candidate list, for the memo's shape: a gang's
     * next member finds the best node in log(n) once the last one's is re-priced. */
    struct {
        bool valid;
        size_t n, leaves;      /* candidates; leaves: the power of two above */
        int32_t *order;        /* the candidates, to recognise the list */
        float *d;              /* per candidate: its price */
        int64_t *fill;         /* per candidate: fullness, for ties */
        int32_t *win;          /* per tree node: the winning candidate, -1 for none */
        int32_t *pos;          /* per node id: its candidate index, -1 if none */
        size_t cap_n, cap_pos; /* what the arrays hold */
    } tree;
};

/* shapes.c */
bool pshape_of(const struct ppod *p, struct pshape *out); /* sel borrowed */
bool pshape_same(const struct pshape *a, const struct pshape *b);
int32_t pshape_need(const struct pshape *s, const struct pnode *n);
void pshapes_cleanup(struct pfrag *f);

/* frag.c */
void pfrag_slot_refresh(struct policy_cluster *c, int slot);
int32_t pfrag_clamp(int64_t v);

#endif
