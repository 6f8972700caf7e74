/*
 * shapes.c - what the workload looks like: a bounded histogram of the shapes of
 * the GPU pods seen, learned online, never configured.
 *
 * Every pod seen for the first time adds to its shape's count. Each new
 * observation counts PSHAPE_GROWTH times the one before, so older ones fade
 * (a half-life counted in pods, not time: the engine reads no clock). A
 * shape not in the table takes the slot of the least counted one (space-saving
 * without inheriting the count: a one-off pod stays light). CPU-only pods get
 * no slot: every node loses the same GPU to them, so they cannot tell two
 * placements apart.
 *
 * A shape is priced by the GPU it brings, count x GPU per pod: fragmentation
 * that turns away one 8-GPU pod costs as much as eight 1-GPU ones.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "frag.h"

#define RESCALE_AT 1e30
#define MEMORY_ASK_MILLI 500 /* per device, assumed for a gpu-memory ask when weighing it */

/* The shape of a pod's ask; false for a pod that asks no GPU (or an ask refused). */
bool pshape_of(const struct ppod *p, struct pshape *out)
{
    if (p->invalid || (p->gpus <= 0 && p->share <= 0 && p->gpu_memory_mib <= 0))
        return false;
    if (p->gpus > 0 && (p->share > 0 || p->gpu_memory_mib > 0))
        return false;
    *out = (struct pshape){
        .used = true,
        .cpu = p->cpu,
        .memory = p->memory,
        .gpus = p->gpus,
        .share = p->gpus > 0 ? 0 : p->share,
        .gpu_memory_mib = p->gpus > 0 || p->share > 0 ? 0 : p->gpu_memory_mib,
        .devices = p->gpus > 0 ? 0 : p->devices,
        .sel = p->sel,
    };
    return true;
}

bool pshape_same(const struct pshape *a, const struct pshape *b)
{
    return a->cpu == b->cpu && a->memory == b->memory && a->gpus == b->gpus &&
           a->share == b->share && a->gpu_memory_mib == b->gpu_memory_mib &&
           a->devices == b->devices && pselector_equal(&a->sel, &b->sel);
}

/* Milli per device the shape takes on this node; 0 if it cannot run there at all. */
int32_t pshape_need(const struct pshape *s, const struct pnode *n)
{
    struct ppod probe = {.share = s->share, .gpu_memory_mib = s->gpu_memory_mib, .sel = s->sel};
    enum pfit_why why;
    int32_t share;

    if (n->gpus <= 0 || n->gpus < (s->gpus > 0 ? s->gpus : s->devices) ||
        !pfit_static(n, &probe, &why))
        return 0;
    if (s->gpus > 0)
        return POLICY_GPU_MILLI;
    share = pfit_share_on(n, &probe);
    return share > 0 ? share : 0;
}

static double gpu_of(const struct pshape *s)
{
    return (double)(s->gpus * POLICY_GPU_MILLI +
                    (int64_t)(s->share > 0 ? s->share : MEMORY_ASK_MILLI) * s->devices);
}

/*
 * Weights for pricing, and the mix's cpu and memory per milli-GPU: taken from
 * the histogram when it has moved far enough since they were, or when forced
 * (a slot changed). One more pod of a known shape then re-prices nothing.
 */
static void weights_update(struct pfrag *f, bool force)
{
    double gpu = 0, cpu = 0, mem = 0, moved = 0;
    float w[PSHAPE_SLOTS];

    for (int s = 0; s < PSHAPE_SLOTS; s++) {
        const struct pshape *x = &f->shape[s];

        if (!x->used)
            continue;
        gpu += x->weight * gpu_of(x);
        cpu += x->weight * (double)f->cpu[s];
        mem += x->weight * (double)f->mem[s];
    }
    for (int s = 0; s < PSHAPE_SLOTS; s++) {
        w[s] = f->shape[s].used && gpu > 0
                   ? (float)(f->shape[s].weight * gpu_of(&f->shape[s]) / gpu)
                   : 0;
        moved += fabs((double)w[s] - (double)f->w[s]);
    }
    if (!force && moved < PFRAG_REPRICE)
        return;
    memcpy(f->w, w, sizeof(w));
    f->cpu_per_gpu = gpu > 0 ? (float)(cpu / gpu) : 0;
    f->mem_per_gpu = gpu > 0 ? (float)(mem / gpu) : 0;
    f->hist_version++;
}

/* The slot for a shape not in the table: a free one, else the least weighted. */
static int slot_for_new(const struct pfrag *f)
{
    int lightest = 0;

    for (int s = 0; s < PSHAPE_SLOTS; s++) {
        if (!f->shape[s].used)
            return s;
        if (f->shape[s].weight < f->shape[lightest].weight)
            lightest = s;
    }
    return lightest;
}

static float inverse(int32_t v)
{
    return v > 0 ? 1.0f / (float)v : 0.0f;
}

static int slot_take(struct policy_cluster *c, const struct pshape *key)
{
    struct pfrag *f = c->frag;
    int s = slot_for_new(f);
    struct pshape *slot = &f->shape[s];
    struct pselector sel;

    if (pselector_copy(&sel, key->sel.node_selector, key->sel.nnode_selector,
                       key->sel.affinity, key->sel.naffinity, key->sel.tolerations,
                       key->sel.ntolerations) != POLICY_OK)
        return -1;
    if (slot->used)
        pselector_cleanup(&slot->sel);
    else
        f->nused++;
    *slot = *key;
    slot->sel = sel;
    slot->weight = 0;
    f->cpu[s] = pfrag_clamp(key->cpu);
    f->mem[s] = pfrag_clamp((key->memory + (1LL << PFRAG_MEM_SHIFT) - 1) >> PFRAG_MEM_SHIFT);
    f->k[s] = pfrag_clamp(key->gpus > 0 ? key->gpus : key->devices);
    f->inv_cpu[s] = inverse(f->cpu[s]);
    f->inv_mem[s] = inverse(f->mem[s]);
    f->inv_k[s] = inverse(f->k[s]);
    f->no_cpu[s] = f->cpu[s] > 0 ? 0.0f : (float)PFRAG_MAX_UNITS;
    f->no_mem[s] = f->mem[s] > 0 ? 0.0f : (float)PFRAG_MAX_UNITS;
    pfrag_slot_refresh(c, s);
    return s;
}

void pfrag_observe(struct policy_cluster *c, const struct ppod *p)
{
    struct pfrag *f = c->frag;
    struct pshape key;
    bool fresh;
    int s;

    if (!f || !pshape_of(p, &key))
        return;
    for (s = 0; s < f->nused; s++)
        if (pshape_same(&f->shape[s], &key))
            break;
    fresh = s == f->nused || s == PSHAPE_SLOTS;
    if (fresh && (s = slot_take(c, &key)) < 0)
        return; /* out of memory: this pod is not learned */
    f->shape[s].weight += f->inc;
    f->inc *= PSHAPE_GROWTH;
    f->seen++;
    if (f->inc > RESCALE_AT) {
        for (int k = 0; k < PSHAPE_SLOTS; k++)
            f->shape[k].weight /= RESCALE_AT;
        f->inc /= RESCALE_AT;
    }
    weights_update(f, fresh);
}

static int cmp_view_weight(const void *a, const void *b)
{
    const struct policy_shape_view *x = a, *y = b;

    return x->weight > y->weight ? -1 : x->weight < y->weight;
}

void policy_each_shape(const struct policy_cluster *c, policy_shape_fn fn, void *ctx)
{
    const struct pfrag *f = c->frag;
    struct policy_shape_view v[PSHAPE_SLOTS];
    double gpu = 0;
    int n = 0;

    for (int s = 0; f && s < f->nused; s++)
        gpu += f->shape[s].weight * gpu_of(&f->shape[s]);
    for (int s = 0; f && s < f->nused; s++) {
        const struct pshape *x = &f->shape[s];

        v[n++] = (struct policy_shape_view){
            .cpu_milli = x->cpu,
            .memory_bytes = x->memory,
            .gpus = x->gpus,
            .gpu_share_milli = x->share,
            .gpu_memory_mib = x->gpu_memory_mib,
            .gpu_devices = x->devices,
            .constrained = x->sel.nnode_selector || x->sel.naffinity || x->sel.ntolerations,
            .weight = gpu > 0 ? x->weight * gpu_of(x) / gpu : 0,
        };
    }
    qsort(v, (size_t)n, sizeof(v[0]), cmp_view_weight);
    for (int i = 0; i < n; i++)
        fn(&v[i], ctx);
}

void pshapes_cleanup(struct pfrag *f)
{
    for (int s = 0; s < PSHAPE_SLOTS; s++)
        if (f->shape[s].used)
            pselector_cleanup(&f->shape[s].sel);
}
