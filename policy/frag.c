/*
 * frag.c - what a placement costs in fragmentation, and the placement that
 * costs least: the fragmentation strategy (the model is in frag.h).
 *
 * A pod goes to the node, and the GPU groups, where F + PFRAG_BALANCE x B
 * grows least; ties go to the fuller node (binpack's order). Each node keeps,
 * per shape, what it asks there, how many of its per-device asks the free GPU
 * holds, and f_s; they are updated when something is charged or released on
 * the node, so pricing a placement is a few operations per shape, never a walk
 * over the node's pods. The last price of every node for one pod shape is kept
 * while neither the node nor the histogram changes: a gang's next member
 * re-prices only the node the previous member took.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "frag.h"

/*
 * floor(a / b) as a * (1 / b): every count here (millicores, 4 MiB units, milli
 * per device) is clamped below 2^20, where the product with the float
 * reciprocal, nudged up by 2^-22, truncates to the exact quotient (the two
 * roundings err by less than 2^-23; a + b < 2^21 keeps the nudge below the next
 * integer). It vectorizes, where an integer division does not.
 */
#define QUOTIENT_NUDGE 1.00000024f /* 1 + 2^-22 */

/* What a placement takes from a node: cpu, memory, and per device touched,
 * `times` devices going from `left` free to `left - milli`. */
struct ptake {
    int32_t cpu, mem, gpu;
    int n;
    int32_t left[POLICY_MAX_DEVICES], milli[POLICY_MAX_DEVICES], times[POLICY_MAX_DEVICES];
};

int pfrag_init(struct policy_cluster *c)
{
    c->frag = calloc(1, sizeof(*c->frag));
    if (!c->frag)
        return POLICY_ENOMEM;
    c->frag->inc = 1.0;
    c->frag->active = c->opts.strategy == POLICY_FRAGMENTATION;
    return POLICY_OK;
}

void pfrag_cleanup(struct policy_cluster *c)
{
    struct pfrag *f = c->frag;

    if (!f)
        return;
    pshapes_cleanup(f);
    if (f->memo_valid)
        pselector_cleanup(&f->memo_key.sel);
    free(f->nodes);
    free(f->version);
    free(f->fill);
    free(f->sig);
    free(f->priced);
    free(f->memo_version);
    free(f->memo_delta);
    free(f->tree.order);
    free(f->tree.d);
    free(f->tree.fill);
    free(f->tree.win);
    free(f->tree.pos);
    free(f);
    c->frag = NULL;
}

int32_t pfrag_clamp(int64_t v)
{
    return v >= PFRAG_MAX_UNITS ? PFRAG_MAX_UNITS - 1 : v < 0 ? 0 : (int32_t)v;
}

static inline float quotient(float a, float inv_b)
{
    return (float)(int32_t)(a * inv_b * QUOTIENT_NUDGE);
}

static int64_t free_devices(const struct pnode *n)
{
    int64_t d = n->gpus - n->whole_used - (int64_t)n->ngroups;

    return d > 0 ? d : 0;
}

/* ---- the price of a node's state ----------------------------------------- */

/* f_s: free GPU that pods of shape s could not use, filling the node one after another. */
static inline float shape_frag(const struct pfrag *f, int s, float needk, float units, float idle,
                               float cpu, float mem, float pods)
{
    float n = quotient(units, f->inv_k[s]);
    float by_cpu = quotient(cpu, f->inv_cpu[s]) + f->no_cpu[s]; /* 1 / 0 is kept as 0 */
    float by_mem = quotient(mem, f->inv_mem[s]) + f->no_mem[s];

    n = by_cpu < n ? by_cpu : n;
    n = by_mem < n ? by_mem : n;
    n = pods < n ? pods : n;
    return idle - n * needk;
}

/* B: free GPU the workload's mix could not use for want of cpu or memory. */
static float balance(const struct pfrag *f, int32_t idle, int32_t cpu, int32_t mem)
{
    float usable = (float)idle;

    if (f->cpu_per_gpu > 0 && (float)cpu / f->cpu_per_gpu < usable)
        usable = (float)cpu / f->cpu_per_gpu;
    if (f->mem_per_gpu > 0 && (float)mem / f->mem_per_gpu < usable)
        usable = (float)mem / f->mem_per_gpu;
    return (float)idle - (usable > 0 ? usable : 0);
}

static void slot_stats(const struct pfrag *f, const struct pnode *n, struct pfrag_node *fn, int s)
{
    int32_t need = fn->need[s];
    float units = 0;

    fn->inv_need[s] = need > 0 ? 1.0f / (float)need : 0.0f;
    fn->needk[s] = need > 0 ? (float)need * (float)f->k[s] : 0.0f;
    if (need > 0) {
        units = (float)free_devices(n) * quotient(POLICY_GPU_MILLI, fn->inv_need[s]);
        for (size_t g = 0; g < n->ngroups; g++)
            if (n->groups[g].used < POLICY_GPU_MILLI)
                units += quotient((float)(POLICY_GPU_MILLI - n->groups[g].used), fn->inv_need[s]);
    }
    fn->units[s] = units;
    fn->frag[s] = shape_frag(f, s, fn->needk[s], units, (float)fn->idle, (float)fn->cpu_left,
                             (float)fn->mem_left, (float)fn->pods_left);
}

static void usage_stats(const struct pfrag *f, const struct pnode *n, struct pfrag_node *fn)
{
    int64_t idle = free_devices(n) * POLICY_GPU_MILLI;

    for (size_t g = 0; g < n->ngroups; g++)
        idle += n->groups[g].used < POLICY_GPU_MILLI ? POLICY_GPU_MILLI - n->groups[g].used : 0;
    fn->idle = pfrag_clamp(idle);
    fn->pods_left = pfrag_clamp(n->pods - n->pods_used);
    fn->cpu_left = pfrag_clamp(n->cpu - n->cpu_used);
    fn->mem_left = pfrag_clamp((n->memory - n->memory_used) >> PFRAG_MEM_SHIFT);
    for (int s = 0; s < PSHAPE_SLOTS; s++)
        slot_stats(f, n, fn, s);
}

static void full_stats(const struct pfrag *f, const struct pnode *n, struct pfrag_node *fn)
{
    for (int s = 0; s < PSHAPE_SLOTS; s++)
        fn->need[s] = f->shape[s].used ? pshape_need(&f->shape[s], n) : 0;
    usage_stats(f, n, fn);
}

static bool ensure_cap(struct pfrag *f, size_t want)
{
    size_t cap = f->cap ? f->cap : 64;
    struct pfrag_node *nodes;
    uint64_t *version, *memo_version, *sig;
    int64_t *fill;
    float *memo_delta;

    if (want <= f->cap)
        return true;
    while (cap < want)
        cap *= 2;
    nodes = realloc(f->nodes, cap * sizeof(*nodes));
    if (nodes)
        f->nodes = nodes;
    version = realloc(f->version, cap * sizeof(*version));
    if (version)
        f->version = version;
    fill = realloc(f->fill, cap * sizeof(*fill));
    if (fill)
        f->fill = fill;
    sig = realloc(f->sig, cap * sizeof(*sig));
    if (sig)
        f->sig = sig;
    memo_version = realloc(f->memo_version, cap * sizeof(*memo_version));
    if (memo_version)
        f->memo_version = memo_version;
    memo_delta = realloc(f->memo_delta, cap * sizeof(*memo_delta));
    if (memo_delta)
        f->memo_delta = memo_delta;
    if (!nodes || !version || !fill || !sig || !memo_version || !memo_delta)
        return false;
    memset(version + f->cap, 0, (cap - f->cap) * sizeof(*version));
    memset(memo_version + f->cap, 0, (cap - f->cap) * sizeof(*memo_version));
    f->cap = cap;
    return true;
}

/* A node's figures: its cache when kept, else computed into tmp. */
static const struct pfrag_node *node_figures(const struct policy_cluster *c, int32_t id,
                                             struct pfrag_node *tmp)
{
    const struct pfrag *f = c->frag;

    if (f->active && (size_t)id < f->cap && f->version[id] != 0)
        return &f->nodes[id];
    full_stats(f, pnode_at(c, id), tmp);
    return tmp;
}

static uint64_t mix(uint64_t h, uint64_t v)
{
    h ^= v + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2);
    return h * 0xff51afd7ed558ccdULL;
}

/*
 * Everything a node's price for any pod depends on, but its labels and taints
 * (checked per node): two nodes with the same signature price the same.
 */
static uint64_t signature(const struct pfrag *f, const struct pnode *n, const struct pfrag_node *fn)
{
    uint64_t h = mix(0, (uint64_t)n->gpus);

    h = mix(h, (uint64_t)n->gpu_memory_mib);
    h = mix(h, (uint64_t)n->sharing_paused);
    h = mix(h, (uint64_t)free_devices(n));
    h = mix(h, ((uint64_t)(uint32_t)fn->cpu_left << 32) | (uint32_t)fn->mem_left);
    h = mix(h, ((uint64_t)(uint32_t)fn->pods_left << 32) | (uint32_t)fn->idle);
    for (size_t g = 0; g < n->ngroups; g++)
        h = mix(h, (uint64_t)n->groups[g].used);
    for (int s = 0; s < f->nused; s++)
        h = mix(h, (uint64_t)fn->need[s]);
    return h ? h : 1;
}

static void note_dirty(struct pfrag *f, int32_t id)
{
    if (f->ndirty < PFRAG_DIRTY)
        f->dirty[f->ndirty] = id;
    if (f->ndirty <= PFRAG_DIRTY)
        f->ndirty++;
}

void pfrag_node_upserted(struct policy_cluster *c, int32_t id)
{
    struct pfrag *f = c->frag;
    const struct pnode *n = pnode_at(c, id);

    if (!f || !f->active || !n)
        return;
    if (!ensure_cap(f, (size_t)id + 1))
        return; /* out of memory: this node is priced from scratch each time */
    full_stats(f, n, &f->nodes[id]);
    f->fill[id] = pnode_fill_score(n);
    f->sig[id] = signature(f, n, &f->nodes[id]);
    f->version[id] = ++f->next_version;
    note_dirty(f, id);
}

void pfrag_node_charged(struct policy_cluster *c, int32_t id)
{
    struct pfrag *f = c->frag;
    const struct pnode *n = pnode_at(c, id);

    if (!f || !f->active || !n)
        return;
    if ((size_t)id >= f->cap || f->version[id] == 0) {
        pfrag_node_upserted(c, id);
        return;
    }
    usage_stats(f, n, &f->nodes[id]);
    f->fill[id] = pnode_fill_score(n);
    f->sig[id] = signature(f, n, &f->nodes[id]);
    f->version[id] = ++f->next_version;
    note_dirty(f, id);
}

/* A slot took a new shape, or the mix changed: every kept node is priced again. */
void pfrag_slot_refresh(struct policy_cluster *c, int s)
{
    struct pfrag *f = c->frag;

    if (!f->active)
        return;
    for (size_t id = 0; id < f->cap && id < c->nodes.n; id++) {
        const struct pnode *n = c->nodes.items[id];

        if (!n || f->version[id] == 0)
            continue;
        f->nodes[id].need[s] = pshape_need(&f->shape[s], n);
        slot_stats(f, n, &f->nodes[id], s);
        f->sig[id] = signature(f, n, &f->nodes[id]);
        f->version[id] = ++f->next_version;
    }
    f->ndirty = PFRAG_DIRTY + 1;
}

/* ---- what a placement costs ----------------------------------------------- */

/* F(after) - F(before) + PFRAG_BALANCE x (B(after) - B(before)), in milli-GPU. */
static float take_delta(const struct pfrag *f, const struct pfrag_node *fn, const struct ptake *t)
{
    float cpu = (float)(fn->cpu_left - t->cpu), mem = (float)(fn->mem_left - t->mem);
    float idle = (float)(fn->idle - t->gpu), pods = (float)(fn->pods_left - 1);
    float sum[4] = {0};

    /* Fixed-size chunks of shapes, unused slots priced as zero: the loops vectorize. */
    for (int c0 = 0; c0 < f->nused; c0 += PSHAPE_CHUNK) {
        float units[PSHAPE_CHUNK], part[PSHAPE_CHUNK];

        memcpy(units, fn->units + c0, sizeof(units));
        for (int j = 0; j < t->n; j++) {
            float left = (float)t->left[j], after = (float)(t->left[j] - t->milli[j]);
            float times = (float)t->times[j];

            for (int i = 0; i < PSHAPE_CHUNK; i++)
                units[i] += (quotient(after, fn->inv_need[c0 + i]) -
                             quotient(left, fn->inv_need[c0 + i])) *
                            times;
        }
        for (int i = 0; i < PSHAPE_CHUNK; i++)
            part[i] = f->w[c0 + i] * (shape_frag(f, c0 + i, fn->needk[c0 + i], units[i], idle,
                                                 cpu, mem, pods) -
                                      fn->frag[c0 + i]);
        for (int i = 0; i < PSHAPE_CHUNK; i += 4)
            for (int l = 0; l < 4; l++)
                sum[l] += part[i + l];
    }
    /* B follows the mix, which changes with every pod seen: priced afresh. */
    return (sum[0] + sum[1]) + (sum[2] + sum[3]) +
           PFRAG_BALANCE * (balance(f, fn->idle - t->gpu, fn->cpu_left - t->cpu,
                                    fn->mem_left - t->mem) -
                            balance(f, fn->idle, fn->cpu_left, fn->mem_left));
}

/* A device a share could go to: an open group (index g) or a fresh device (g = -1). */
struct pcand {
    int32_t g, left, avail;
};

static int share_candidates(const struct pnode *n, int32_t share, struct pcand *out, int max)
{
    int k = 0;
    int64_t fresh = n->sharing_paused ? 0 : free_devices(n);

    for (size_t g = 0; g < n->ngroups && k < max; g++)
        if (n->groups[g].used + share <= POLICY_GPU_MILLI)
            out[k++] = (struct pcand){(int32_t)g, POLICY_GPU_MILLI - n->groups[g].used, 1};
    if (fresh > 0 && k < max)
        out[k++] = (struct pcand){-1, POLICY_GPU_MILLI, pfrag_clamp(fresh)};
    return k;
}

/* The lowest group id in use neither on the node nor among the first k picked. */
static int32_t new_group_id(const struct pnode *n, const struct pplace *pl, int k)
{
    for (int32_t id = 0;; id++) {
        bool used = pnode_group_find(n, id) >= 0;

        for (int i = 0; i < k; i++)
            used |= pl->groups[i] == id;
        if (!used)
            return id;
    }
}

#define MAX_CANDS 64

/*
 * Choose the share's devices one at a time, each where it adds the least
 * (ties: the tightest, as binpack); write them into pl and the take into t.
 */
static float choose_groups(const struct pfrag *f, const struct pnode *n,
                           const struct pfrag_node *fn, struct pplace *pl, struct ptake *t)
{
    struct pcand cand[MAX_CANDS];
    int nc = share_candidates(n, pl->share, cand, MAX_CANDS), picked[POLICY_MAX_DEVICES];
    float best_d = 0;

    for (int step = 0; step < pl->ngroups; step++) {
        int best = -1;

        for (int i = 0; i < nc; i++) {
            bool dup = false;
            float d;

            if (cand[i].avail <= 0)
                continue;
            for (int j = 0; j < i && !dup; j++)
                dup = cand[j].avail > 0 && cand[j].left == cand[i].left;
            if (dup)
                continue; /* the same free share prices the same */
            t->left[step] = cand[i].left;
            t->milli[step] = pl->share;
            t->times[step] = 1;
            t->n = step + 1;
            d = take_delta(f, fn, t);
            if (best < 0 || d < best_d || (d == best_d && cand[i].left < cand[best].left)) {
                best = i;
                best_d = d;
            }
        }
        if (best < 0)
            return INFINITY; /* cannot happen: pfit_resources found room */
        t->left[step] = cand[best].left;
        t->milli[step] = pl->share;
        t->times[step] = 1;
        t->n = step + 1;
        cand[best].avail--;
        picked[step] = best;
    }
    for (int step = 0; step < pl->ngroups; step++) {
        const struct pcand *k = &cand[picked[step]];

        pl->groups[step] = k->g >= 0 ? n->groups[k->g].id : new_group_id(n, pl, step);
    }
    return best_d;
}

/* What placing p on node id adds; INFINITY if it does not fit. */
static float node_eval(const struct policy_cluster *c, const struct ppod *p, int32_t id,
                       struct pplace *out)
{
    const struct pnode *n = pnode_at(c, id);
    struct pfrag_node tmp;
    const struct pfrag_node *fn;
    struct ptake t; /* only its first n transitions are read */
    struct pplace pl;
    enum pfit_why why;
    float d;

    if (!n || !pfit_static(n, p, &why) || !pfit_resources(n, p, POLICY_BINPACK, &pl, &why))
        return INFINITY;
    fn = node_figures(c, id, &tmp);
    t.cpu = pfrag_clamp(p->cpu);
    t.mem = pfrag_clamp((p->memory + (1LL << PFRAG_MEM_SHIFT) - 1) >> PFRAG_MEM_SHIFT);
    t.gpu = pfrag_clamp(p->gpus * POLICY_GPU_MILLI + (int64_t)pl.share * pl.ngroups);
    t.n = 0;
    if (pl.share > 0) {
        d = choose_groups(c->frag, n, fn, &pl, &t);
    } else {
        if (p->gpus > 0) { /* whole devices: that many go from all free to none */
            t.n = 1;
            t.left[0] = POLICY_GPU_MILLI;
            t.milli[0] = POLICY_GPU_MILLI;
            t.times[0] = pfrag_clamp(p->gpus);
        }
        d = take_delta(c->frag, fn, &t);
    }
    if (out) {
        *out = pl;
        out->node = id;
    }
    return d;
}

/* ---- the strategy --------------------------------------------------------- */

static void memo_key_of(const struct ppod *p, struct pshape *k)
{
    *k = (struct pshape){.used = true, .cpu = p->cpu, .memory = p->memory, .gpus = p->gpus,
                         .share = p->share, .gpu_memory_mib = p->gpu_memory_mib,
                         .devices = p->devices, .sel = p->sel};
}

/* Start a memo for p's shape unless the one kept is for it; false: do not memoize. */
static bool memo_ready(struct pfrag *f, const struct ppod *p, size_t paused)
{
    struct pshape key;

    memo_key_of(p, &key);
    if (f->memo_valid && f->memo_hist == f->hist_version && pshape_same(&f->memo_key, &key))
        return paused == 0;
    if (f->memo_valid)
        pselector_cleanup(&f->memo_key.sel);
    f->memo_valid = false;
    f->tree.valid = false;
    if (paused > 0 || !f->cap)
        return false; /* a pause ends without touching the node: do not trust a memo */
    f->memo_key = key;
    if (pselector_copy(&f->memo_key.sel, p->sel.node_selector, p->sel.nnode_selector,
                       p->sel.affinity, p->sel.naffinity, p->sel.tolerations,
                       p->sel.ntolerations) != POLICY_OK)
        return false;
    memset(f->memo_version, 0, f->cap * sizeof(*f->memo_version));
    f->memo_hist = f->hist_version;
    f->memo_valid = true;
    return true;
}

/* Begin one choice: prices seen by signature are forgotten. */
static void priced_reset(struct pfrag *f, size_t n)
{
    size_t want = 16;

    while (want < 2 * n)
        want *= 2;
    if (want > f->priced_cap) {
        struct pfrag_priced *s = calloc(want, sizeof(*s));

        if (s) {
            free(f->priced);
            f->priced = s;
            f->priced_cap = want;
            f->priced_gen = 0;
        }
    }
    if (++f->priced_gen == 0) { /* wrapped: clear for real */
        memset(f->priced, 0, f->priced_cap * sizeof(*f->priced));
        f->priced_gen = 1;
    }
}

/* The slot for a signature in the table of this choice (empty or its own); NULL if full. */
static struct pfrag_priced *priced_slot(struct pfrag *f, uint64_t sig)
{
    size_t mask = f->priced_cap - 1;

    for (size_t i = sig & mask, k = 0; f->priced && k < f->priced_cap; i = (i + 1) & mask, k++)
        if (f->priced[i].gen != f->priced_gen || f->priced[i].sig == sig)
            return &f->priced[i];
    return NULL;
}

/* Node id's price for p: from the memo while the node has not changed, else
 * from a node with the same signature priced during this choice. */
static float price(const struct policy_cluster *c, const struct ppod *p, int32_t id, bool memo)
{
    struct pfrag *f = c->frag;
    bool kept = (size_t)id < f->cap && f->version[id] != 0;
    struct pfrag_priced *known = NULL;
    enum pfit_why why;
    float d;

    if (memo && kept && f->memo_version[id] == f->version[id])
        return f->memo_delta[id];
    /* Labels and taints are the node's own; the rest may be a twin's. A pause starts
     * and ends without touching the figures: no twins then. */
    if (!pfit_static(pnode_at(c, id), p, &why))
        d = INFINITY;
    else if (kept && c->paused_nodes == 0 && (known = priced_slot(f, f->sig[id])) &&
             known->gen == f->priced_gen)
        d = known->d;
    else
        d = node_eval(c, p, id, NULL);
    if (known && known->gen != f->priced_gen) {
        known->sig = f->sig[id];
        known->gen = f->priced_gen;
        known->d = d;
    }
    if (memo && kept) {
        f->memo_version[id] = f->version[id];
        f->memo_delta[id] = d;
    }
    return d;
}

static int64_t fill_of(const struct policy_cluster *c, int32_t id)
{
    const struct pfrag *f = c->frag;

    return (size_t)id < f->cap && f->version[id] != 0 ? f->fill[id]
                                                      : pnode_fill_score(pnode_at(c, id));
}

/* Is candidate a a better place than b? Least price, then the fuller node, then the lower id. */
static bool better(const struct pfrag *f, int32_t a, int32_t b)
{
    const float *d = f->tree.d;
    const int64_t *fill = f->tree.fill;

    if (a < 0 || d[a] == INFINITY)
        return false;
    if (b < 0 || d[b] == INFINITY)
        return true;
    if (d[a] != d[b])
        return d[a] < d[b];
    if (fill[a] != fill[b])
        return fill[a] > fill[b];
    return f->tree.order[a] < f->tree.order[b];
}

static void tree_fix(struct pfrag *f, size_t leaf)
{
    for (size_t t = (f->tree.leaves + leaf) / 2; t >= 1; t /= 2) {
        int32_t l = f->tree.win[2 * t], r = f->tree.win[2 * t + 1];

        f->tree.win[t] = better(f, r, l) ? r : l;
    }
}

static bool tree_alloc(struct pfrag *f, size_t n, size_t nodes)
{
    size_t leaves = 1;

    while (leaves < n)
        leaves *= 2;
    if (leaves > f->tree.cap_n) {
        int32_t *order = realloc(f->tree.order, leaves * sizeof(*order));
        float *d = order ? realloc(f->tree.d, leaves * sizeof(*d)) : NULL;
        int64_t *fill = d ? realloc(f->tree.fill, leaves * sizeof(*fill)) : NULL;
        int32_t *win = fill ? realloc(f->tree.win, 2 * leaves * sizeof(*win)) : NULL;

        f->tree.order = order ? order : f->tree.order;
        f->tree.d = d ? d : f->tree.d;
        f->tree.fill = fill ? fill : f->tree.fill;
        f->tree.win = win ? win : f->tree.win;
        if (!win)
            return false;
        f->tree.cap_n = leaves;
    }
    if (nodes > f->tree.cap_pos) {
        int32_t *pos = realloc(f->tree.pos, nodes * sizeof(*pos));

        if (!pos)
            return false;
        f->tree.pos = pos;
        f->tree.cap_pos = nodes;
    }
    f->tree.leaves = leaves;
    return true;
}

/* Price every candidate and play the tournament. */
static bool tree_build(const struct policy_cluster *c, const struct ppod *p, const int32_t *order,
                       size_t n)
{
    struct pfrag *f = c->frag;
    size_t leaves;

    f->tree.valid = false;
    if (!tree_alloc(f, n, c->nodes.n))
        return false;
    leaves = f->tree.leaves;
    memcpy(f->tree.order, order, n * sizeof(*order));
    for (size_t i = 0; i < c->nodes.n; i++)
        f->tree.pos[i] = -1;
    for (size_t i = 0; i < n; i++) {
        f->tree.pos[order[i]] = (int32_t)i;
        f->tree.d[i] = price(c, p, order[i], true);
        f->tree.fill[i] = f->tree.d[i] < INFINITY ? fill_of(c, order[i]) : 0;
    }
    for (size_t i = 0; i < leaves; i++)
        f->tree.win[leaves + i] = i < n ? (int32_t)i : -1;
    for (size_t t = leaves - 1; t >= 1; t--) {
        int32_t l = f->tree.win[2 * t], r = f->tree.win[2 * t + 1];

        f->tree.win[t] = better(f, r, l) ? r : l;
    }
    f->tree.n = n;
    f->tree.valid = true;
    return true;
}

/* The tree still stands for this list: re-price the nodes that changed. */
static bool tree_reuse(const struct policy_cluster *c, const struct ppod *p, const int32_t *order,
                       size_t n)
{
    struct pfrag *f = c->frag;

    if (!f->tree.valid || f->tree.n != n || f->ndirty > PFRAG_DIRTY ||
        memcmp(f->tree.order, order, n * sizeof(*order)) != 0)
        return false;
    for (int k = 0; k < f->ndirty; k++) {
        int32_t id = f->dirty[k], i;

        if ((size_t)id >= f->tree.cap_pos || (i = f->tree.pos[id]) < 0 || (size_t)i >= n ||
            f->tree.order[i] != id)
            continue;
        f->tree.d[i] = price(c, p, id, true);
        f->tree.fill[i] = f->tree.d[i] < INFINITY ? fill_of(c, id) : 0;
        tree_fix(f, (size_t)i);
    }
    return true;
}

/* Without a memo: one pass over the candidates. */
static int32_t scan(const struct policy_cluster *c, const struct ppod *p, const int32_t *order,
                    size_t n)
{
    int32_t best = -1;
    float best_d = INFINITY;
    int64_t best_fill = 0;

    for (size_t i = 0; i < n; i++) {
        int32_t id = order[i];
        float d = price(c, p, id, false);
        int64_t fill;

        if (d > best_d || d == INFINITY)
            continue;
        fill = fill_of(c, id);
        if (d == best_d && (fill < best_fill || (fill == best_fill && id > best)))
            continue;
        best_fill = fill;
        best_d = d;
        best = id;
    }
    return best;
}

bool pfrag_find_place(const struct policy_cluster *c, const struct ppod *p, const int32_t *order,
                      size_t n, struct pplace *out)
{
    struct pfrag *f = c->frag;
    bool memo = memo_ready(f, p, c->paused_nodes);
    int32_t best = -1;

    priced_reset(f, n);
    if (memo && (tree_reuse(c, p, order, n) || tree_build(c, p, order, n))) {
        int32_t w = f->tree.win[1];

        best = w >= 0 && f->tree.d[w] < INFINITY ? f->tree.order[w] : -1;
    } else {
        f->tree.valid = false;
        best = scan(c, p, order, n);
    }
    f->ndirty = 0;
    if (best < 0)
        return false;
    if (node_eval(c, p, best, out) < INFINITY)
        return true;
    /* Two nodes' signatures collided (2^-64 a pair): choose again, pricing each node. */
    f->tree.valid = false;
    f->memo_valid = false;
    pselector_cleanup(&f->memo_key.sel);
    f->priced_cap = 0;
    free(f->priced);
    f->priced = NULL;
    best = scan(c, p, order, n);
    return best >= 0 && node_eval(c, p, best, out) < INFINITY;
}

int64_t pfrag_node_score(const struct policy_cluster *c, const struct ppod *p,
                         const struct pnode *n)
{
    int32_t id = pidx_get(&c->node_ix, n->name);
    float d = node_eval(c, p, id, NULL);

    /* Less added fragmentation scores higher; a node that does not fit scores lowest. */
    return d < INFINITY ? -(int64_t)(d * 16.0f) : PSCORE_NONE;
}

double policy_gpu_fragmentation(const struct policy_cluster *c)
{
    const struct pfrag *f = c->frag;
    double sum = 0;

    if (!f)
        return 0;
    for (size_t id = 0; id < c->nodes.n; id++) {
        struct pfrag_node tmp;
        const struct pfrag_node *fn;

        if (!c->nodes.items[id])
            continue;
        fn = node_figures(c, (int32_t)id, &tmp);
        for (int s = 0; s < PSHAPE_SLOTS; s++)
            sum += (double)f->w[s] * fn->frag[s];
    }
    return sum;
}
