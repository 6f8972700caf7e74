/*
 * topo_place.c - a gang placed in domains (docs/topology.md, "Semantics").
 *
 * A unit (the gang, a subgroup with levels of its own, a multi-host replica) walks its levels
 * from the finest it names up to its required one (the whole cluster without one): the most
 * local level with a domain that holds the whole unit wins. A domain holds it when every
 * member finds a node there, tried in full inside a statement (the gang: its subgroups apart
 * first, in domains of their own within it, then the rest); domains that cannot hold it on
 * their totals (cpu, memory, pods, whole GPUs per node for each GPU size asked) are not tried.
 * Among the domains of a level that may hold it, the one whose use strands the least GPU for
 * the gangs seen goes first (policy_domain_choice; KAI takes the fullest that fits): each
 * domain's free devices, node by node, are priced for every gang shape seen (how many copies
 * of the shape still fit, and what they leave) before and after the unit's members take their
 * devices, the fuller first among equals. Inside the chosen domain, nodes come by the
 * sub-domains of the unit's preferred level (else the gang's), the one with the most room for
 * the unit first, each in the strategy's order (KAI's node order within a domain).
 *
 * Placed members pin their unit: only a domain holding all of them is tried (extras,
 * re-created members). A required level never gives way: the unit waits with the level and
 * the shortfall of the domain nearest to holding it.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "topo.h"

#define MAX_REPS 8   /* distinct member shapes a domain's static fit is checked with */
#define MAX_SIZES 16 /* distinct whole-GPU sizes counted against a domain's nodes */
#define MAX_FREE 64  /* free devices of a node, as a domain's histogram counts them */

struct tctx {
    struct policy_cluster *c;
    struct pgang *g;
    struct ppod *const *pool;
    size_t npool;
    struct pstatement *st;
    pplace_fn place;
    void *pctx;
    size_t nsubs;
    struct tlevels gang_lv;
    bool gang_has;
    struct tlevels *sub_lv; /* per subgroup: its own levels (sub_has) */
    bool *sub_has;
    struct tlevels *rep_lv; /* per subgroup: its replicas' level (rep_has) */
    bool *rep_has;
    bool *apart; /* placed apart from the rest of the gang */
    int32_t *apart_order;
    size_t napart;
};

/* Who a walk places. */
struct tunit {
    const struct tlevels *lv;
    int32_t sub;         /* -1: the whole gang */
    const char *replica; /* a multi-host replica of sub */
};

/* ---- what a unit asks ------------------------------------------------------------- */

struct tneed {
    int64_t cpu, memory, pods;
    int64_t gpu_milli; /* whole devices and shares */
    int64_t share_milli;
    int32_t nsizes;
    int64_t size[MAX_SIZES]; /* whole devices per member, largest first */
    int32_t count[MAX_SIZES];
    const struct ppod *rep[MAX_REPS]; /* its distinct shapes */
    int nrep;
    const struct ppod *gpu_rep[MAX_REPS];
    int ngpu_rep;
};

static bool unit_takes(const struct tunit *u, const struct ppod *p)
{
    return ptopo_in_unit(p, u->sub, u->replica);
}

static void add_rep(const struct ppod **reps, int *n, const struct ppod *p)
{
    for (int i = 0; i < *n; i++)
        if (ppod_same_shape(reps[i], p))
            return;
    if (*n < MAX_REPS)
        reps[(*n)++] = p;
}

static void add_size(struct tneed *d, int64_t k)
{
    int i = 0;

    while (i < d->nsizes && d->size[i] > k)
        i++;
    if (i < d->nsizes && d->size[i] == k) {
        d->count[i]++;
        return;
    }
    if (d->nsizes == MAX_SIZES) { /* counted as the smallest size kept: still a lower bound */
        d->count[MAX_SIZES - 1]++;
        return;
    }
    memmove(&d->size[i + 1], &d->size[i], (size_t)(d->nsizes - i) * sizeof(d->size[0]));
    memmove(&d->count[i + 1], &d->count[i], (size_t)(d->nsizes - i) * sizeof(d->count[0]));
    d->size[i] = k;
    d->count[i] = 1;
    d->nsizes++;
}

/* The members a pass would take first (the pool's order) for what m misses, their sum. */
static void unit_need(const struct tctx *x, const struct tunit *u, const struct pmissing *m,
                      const struct pplace_filter *f, struct tneed *d)
{
    int32_t stack[16], *left = x->nsubs <= 16 ? stack : calloc(x->nsubs, sizeof(*left));
    int32_t slack = m->slack, total = m->total;

    memset(d, 0, sizeof(*d));
    if (!left)
        return; /* out of memory: an empty need holds anywhere, the trial decides */
    memcpy(left, m->sub, x->nsubs * sizeof(*left));
    for (size_t i = 0; i < x->npool && total > 0; i++) {
        const struct ppod *p = x->pool[i];
        bool for_sub = p->sub >= 0 && (size_t)p->sub < x->nsubs && left[p->sub] > 0;
        int32_t share;

        if (p->phase != POLICY_POD_PENDING || !unit_takes(u, p) ||
            (f && !pplace_filter_takes(f, p)) || (!for_sub && slack <= 0))
            continue;
        if (for_sub)
            left[p->sub]--;
        else
            slack--;
        total--;
        share = ppod_share_asked(x->c, p);
        d->cpu += p->cpu;
        d->memory += p->memory;
        d->pods++;
        d->gpu_milli += p->gpus * POLICY_GPU_MILLI + (int64_t)share * (p->devices ? p->devices : 1);
        d->share_milli += (int64_t)share * (p->devices ? p->devices : 1);
        if (p->gpus > 0)
            add_size(d, p->gpus);
        add_rep(d->rep, &d->nrep, p);
        if (p->gpus > 0 || share > 0)
            add_rep(d->gpu_rep, &d->ngpu_rep, p);
    }
    if (left != stack)
        free(left);
}

/* ---- a domain's room -------------------------------------------------------------- */

struct troom {
    int64_t cpu, memory, pods, devices, gpu_milli;
    int32_t hist[MAX_FREE + 1]; /* nodes by free whole devices (a GPU member fits there) */
};

static bool fits_any(const struct pnode *n, const struct ppod *const *reps, int nrep)
{
    enum pfit_why w;

    for (int i = 0; i < nrep; i++)
        if (pfit_static(n, reps[i], &w))
            return true;
    return nrep == 0;
}

static int64_t free_of(int64_t cap, int64_t used)
{
    return cap > used ? cap - used : 0;
}

static void room_add(struct troom *r, const struct pnode *n, const struct tneed *d)
{
    int64_t dev;

    if (!fits_any(n, d->rep, d->nrep))
        return;
    r->cpu += free_of(n->cpu, n->cpu_used);
    r->memory += free_of(n->memory, n->memory_used);
    r->pods += free_of(n->pods, n->pods_used);
    if (d->ngpu_rep && !fits_any(n, d->gpu_rep, d->ngpu_rep))
        return;
    dev = pnode_free_devices(n);
    dev = dev > 0 ? dev : 0;
    r->devices += dev;
    r->gpu_milli += dev * POLICY_GPU_MILLI;
    for (size_t g = 0; g < n->ngroups; g++)
        r->gpu_milli += free_of(POLICY_GPU_MILLI, n->groups[g].used);
    r->hist[dev > MAX_FREE ? MAX_FREE : dev]++;
}

/* Member slots of k devices the histogram holds. */
static int64_t slots(const int32_t *hist, int64_t k)
{
    int64_t s = 0;

    for (int v = (int)k; v <= MAX_FREE; v++)
        s += (int64_t)hist[v] * (v / k);
    return s;
}

/* How far the room falls short of the need, relative (0: it may hold it), and in words. */
static double shortfall(const struct troom *r, const struct tneed *d, char *buf, size_t len)
{
    char amount[32];
    double worst = 0;
    int32_t ge = 0; /* members of this size or more */

    if (buf)
        *buf = '\0';
    if (d->gpu_milli > r->gpu_milli &&
        (double)(d->gpu_milli - r->gpu_milli) / (double)d->gpu_milli > worst) {
        worst = (double)(d->gpu_milli - r->gpu_milli) / (double)d->gpu_milli;
        if (buf) {
            policy_amount_text(POLICY_RES_GPU, d->gpu_milli - r->gpu_milli, amount,
                               sizeof(amount));
            snprintf(buf, len, "is short %s", amount);
        }
    }
    for (int i = 0; i < d->nsizes; i++) {
        int64_t room = slots(r->hist, d->size[i]);

        ge += d->count[i];
        if (room < ge && 1.0 - (double)room / ge > worst) {
            worst = 1.0 - (double)room / ge;
            if (buf)
                snprintf(buf, len, "has room for %lld of its %d members of %lld or more GPUs",
                         (long long)room, ge, (long long)d->size[i]);
        }
    }
    if (d->cpu > r->cpu && (double)(d->cpu - r->cpu) / (double)d->cpu > worst) {
        worst = (double)(d->cpu - r->cpu) / (double)d->cpu;
        if (buf) {
            policy_amount_text(POLICY_RES_CPU, d->cpu - r->cpu, amount, sizeof(amount));
            snprintf(buf, len, "is short %s", amount);
        }
    }
    if (d->memory > r->memory && (double)(d->memory - r->memory) / (double)d->memory > worst) {
        worst = (double)(d->memory - r->memory) / (double)d->memory;
        if (buf) {
            policy_amount_text(POLICY_RES_MEMORY, d->memory - r->memory, amount,
                               sizeof(amount));
            snprintf(buf, len, "is short %s", amount);
        }
    }
    if (d->pods > r->pods && (double)(d->pods - r->pods) / (double)d->pods > worst) {
        worst = (double)(d->pods - r->pods) / (double)d->pods;
        if (buf)
            snprintf(buf, len, "has room for %lld more pods, %lld asked", (long long)r->pods,
                     (long long)d->pods);
    }
    return worst;
}

/* KAI's packing ratio: the need over the free, the largest over resources (higher: fuller). */
static double ratio(const struct troom *r, const struct tneed *d)
{
    const int64_t need[3] = {d->cpu, d->memory, d->gpu_milli}, have[3] = {r->cpu, r->memory,
                                                                           r->gpu_milli};
    double worst = 0;

    for (int i = 0; i < 3; i++) {
        double q = need[i] <= 0 ? 0 : have[i] <= 0 ? 1000.0 : (double)need[i] / (double)have[i];

        worst = q > worst ? q : worst;
    }
    return worst;
}

/* The GPU the gangs seen could not use in a domain with free devices hist, weighed. */
static double stranded(const struct ptopo_shapes *h, const int32_t *hist, double total_w)
{
    int64_t free_milli = 0;
    double sum = 0;

    for (int v = 1; v <= MAX_FREE; v++)
        free_milli += (int64_t)hist[v] * v * POLICY_GPU_MILLI;
    for (int s = 0; s < h->nused; s++) {
        const struct ptopo_shape *sh = &h->s[s];
        int64_t k = sh->per_milli >= POLICY_GPU_MILLI
                        ? (sh->per_milli + POLICY_GPU_MILLI - 1) / POLICY_GPU_MILLI
                        : 1;
        int64_t per_device = sh->per_milli >= POLICY_GPU_MILLI ? 1
                                                               : POLICY_GPU_MILLI / sh->per_milli;
        int64_t copies = slots(hist, k) * per_device / sh->n;
        int64_t used = copies * sh->n * sh->per_milli;

        sum += sh->weight / total_w * (double)(free_milli > used ? free_milli - used : 0);
    }
    return sum;
}

/* What the domain would strand more (or less) once the unit's GPU members took their
 * devices, each on the node with the fewest free devices that holds it. */
static double stranded_delta(const struct policy_cluster *c, const struct troom *r,
                             const struct tneed *d)
{
    const struct ptopo_shapes *h = c->gang_shapes;
    int32_t after[MAX_FREE + 1];
    double total_w = 0;
    int64_t share_devices;

    for (int s = 0; h && s < h->nused; s++)
        total_w += h->s[s].weight;
    if (total_w <= 0)
        return 0;
    memcpy(after, r->hist, sizeof(after));
    for (int i = 0; i < d->nsizes; i++)
        for (int32_t k = 0; k < d->count[i]; k++)
            for (int64_t v = d->size[i]; v <= MAX_FREE; v++)
                if (after[v] > 0) {
                    after[v]--;
                    after[v - d->size[i]]++;
                    break;
                }
    share_devices = (d->share_milli + POLICY_GPU_MILLI - 1) / POLICY_GPU_MILLI;
    for (int64_t k = 0; k < share_devices; k++)
        for (int v = 1; v <= MAX_FREE; v++)
            if (after[v] > 0) {
                after[v]--;
                after[v - 1]++;
                break;
            }
    return stranded(h, after, total_w) - stranded(h, r->hist, total_w);
}

/* ---- domains of a level over a list of nodes --------------------------------------- */

struct tslot {
    int32_t parent, id;
    const char *value;
};

/* Per level, each node's domain (-1: it lacks a label down to that level) and, per domain,
 * its first node; built down to level `levels - 1`. */
struct tgrid {
    size_t n;
    int levels;
    int32_t *id[POLICY_MAX_TOPOLOGY_LEVELS];
    int32_t ndom[POLICY_MAX_TOPOLOGY_LEVELS];
    int32_t *first[POLICY_MAX_TOPOLOGY_LEVELS];
};

static void grid_free(struct tgrid *gr)
{
    for (int l = 0; l < gr->levels; l++) {
        free(gr->id[l]);
        free(gr->first[l]);
    }
    memset(gr, 0, sizeof(*gr));
}

static uint32_t slot_hash(int32_t parent, const char *v)
{
    uint32_t h = 2166136261u ^ (uint32_t)parent * 2654435761u;

    while (*v) {
        h ^= (unsigned char)*v++;
        h *= 16777619u;
    }
    return h;
}

static int grid_build(const struct policy_cluster *c, const int32_t *ids, size_t n,
                      const struct tlevels *lv, int levels, struct tgrid *gr)
{
    size_t cap = 16;
    struct tslot *tab;

    memset(gr, 0, sizeof(*gr));
    gr->n = n;
    while (cap < 2 * n)
        cap *= 2;
    if (!(tab = malloc(cap * sizeof(*tab))))
        return POLICY_ENOMEM;
    for (int l = 0; l < levels; l++, gr->levels++) {
        gr->id[l] = malloc((n ? n : 1) * sizeof(int32_t));
        gr->first[l] = malloc((n ? n : 1) * sizeof(int32_t));
        if (!gr->id[l] || !gr->first[l]) {
            gr->levels++;
            free(tab);
            grid_free(gr);
            return POLICY_ENOMEM;
        }
        for (size_t i = 0; i < cap; i++)
            tab[i].id = -1;
        for (size_t i = 0; i < n; i++) {
            int32_t parent = l > 0 ? gr->id[l - 1][i] : 0;
            const char *v = parent >= 0 ? ptopo_value(pnode_at(c, ids[i]), lv->label[l]) : NULL;
            size_t k;

            gr->id[l][i] = -1;
            if (!v)
                continue;
            for (k = slot_hash(parent, v) & (cap - 1); tab[k].id >= 0; k = (k + 1) & (cap - 1))
                if (tab[k].parent == parent && strcmp(tab[k].value, v) == 0)
                    break;
            if (tab[k].id < 0) {
                tab[k] = (struct tslot){.parent = parent, .id = gr->ndom[l], .value = v};
                gr->first[l][gr->ndom[l]++] = (int32_t)i;
            }
            gr->id[l][i] = tab[k].id;
        }
    }
    free(tab);
    return POLICY_OK;
}

/* ---- ranking a level's domains ---------------------------------------------------- */

struct tcand {
    int32_t dom;
    double delta, ratio;
    const char *name; /* its values down to the level ("b1/r2"), for the last tie */
};

static int cmp_cand(const void *a_, const void *b_, void *choice)
{
    const struct tcand *a = a_, *b = b_;

    if (*(const enum policy_domain_choice *)choice == POLICY_DOMAIN_LEAST_STRANDED &&
        a->delta != b->delta)
        return a->delta < b->delta ? -1 : 1;
    if (a->ratio != b->ratio)
        return a->ratio > b->ratio ? -1 : 1;
    return strcmp(a->name, b->name);
}

/* ---- walking a unit's levels --------------------------------------------------------- */

static int gang_inside(struct tctx *x, const int32_t *ids, size_t n, struct pmissing *m,
                       char *why, size_t len);
static int sub_inside(struct tctx *x, int32_t s, const int32_t *ids, size_t n,
                      struct pmissing *m, char *why, size_t len);

static int unit_inside(struct tctx *x, const struct tunit *u, const int32_t *ids, size_t n,
                       struct pmissing *m, char *why, size_t len)
{
    struct pplace_filter f = {.replica = u->replica};

    if (u->replica)
        return x->place(x->c, ids, n, m, &f, x->st, why, len, x->pctx);
    if (u->sub >= 0)
        return sub_inside(x, u->sub, ids, n, m, why, len);
    return gang_inside(x, ids, n, m, why, len);
}

static void unit_label(const struct tctx *x, const struct tunit *u, char *buf, size_t len)
{
    char sub[128];

    if (u->sub < 0) {
        snprintf(buf, len, "it");
        return;
    }
    pgang_sub_label(x->g, u->sub, sub, sizeof(sub));
    if (u->replica)
        snprintf(buf, len, "replica %s of %s", u->replica, sub);
    else
        snprintf(buf, len, "%s", sub);
}

/* The unit's placed members' nodes pin it: the first one, and whether all share level l. */
static const struct pnode *pinned_at(const struct tctx *x, const struct tunit *u, int l,
                                     bool *all)
{
    const struct pnode *ref = NULL;

    *all = true;
    for (size_t i = 0; i < x->g->nmembers; i++) {
        const struct ppod *p = ppod_at(x->c, x->g->members[i]);
        const struct pnode *n = p && unit_takes(u, p) ? ptopo_member_node(x->c, p) : NULL;

        if (!n)
            continue;
        if (!ref)
            ref = n;
        else if (l >= 0 && !ptopo_same_domain(ref, n, u->lv, l))
            *all = false;
    }
    if (ref && l >= 0 && !ptopo_in_topology(ref, u->lv, l))
        *all = false;
    return ref;
}

/* The nodes of domain dom of level l (all with l < 0), by the sub-domains of level p (when
 * finer) with the most room for the unit first, each in the order given; into out. */
static size_t domain_nodes(const struct tctx *x, const struct tgrid *gr, const int32_t *ids,
                           const struct tlevels *lvp, int l, int32_t dom, int p,
                           const struct tneed *d, int32_t *out)
{
    size_t k = 0, nsub = 0;
    struct tcand *subs;
    struct troom *rooms;
    int32_t *rank;

    for (size_t i = 0; i < gr->n; i++)
        if (l < 0 || gr->id[l][i] == dom)
            out[k++] = (int32_t)i;
    if (p <= l || p >= gr->levels || k < 2)
        goto ids;
    subs = calloc(gr->ndom[p] ? (size_t)gr->ndom[p] : 1, sizeof(*subs));
    rooms = calloc(gr->ndom[p] ? (size_t)gr->ndom[p] : 1, sizeof(*rooms));
    rank = malloc((gr->ndom[p] ? (size_t)gr->ndom[p] : 1) * sizeof(*rank));
    if (!subs || !rooms || !rank) { /* out of memory: the order as given */
        free(subs);
        free(rooms);
        free(rank);
        goto ids;
    }
    for (int32_t s = 0; s < gr->ndom[p]; s++)
        rank[s] = -1;
    for (size_t i = 0; i < k; i++) {
        int32_t s = gr->id[p][out[i]];

        if (s < 0)
            continue;
        if (rank[s] < 0) {
            rank[s] = (int32_t)nsub;
            subs[nsub++] = (struct tcand){.dom = s};
        }
        room_add(&rooms[rank[s]], pnode_at(x->c, ids[out[i]]), d);
    }
    for (size_t s = 0; s < nsub; s++) {
        subs[s].ratio = -ratio(&rooms[s], d); /* most room first: the lowest ratio */
        subs[s].name = ptopo_value(pnode_at(x->c, ids[gr->first[p][subs[s].dom]]), lvp->label[p]);
    }
    {
        enum policy_domain_choice by_ratio = POLICY_DOMAIN_FULLEST;

        qsort_r(subs, nsub, sizeof(*subs), cmp_cand, &by_ratio);
    }
    for (size_t s = 0; s < nsub; s++)
        rank[subs[s].dom] = (int32_t)s;
    {
        size_t m = 0, *start = calloc(nsub + 1, sizeof(*start));
        int32_t *sorted = malloc(k * sizeof(*sorted));

        if (start && sorted) {
            for (size_t i = 0; i < k; i++)
                if (gr->id[p][out[i]] >= 0)
                    start[rank[gr->id[p][out[i]]] + 1]++;
            for (size_t s = 0; s < nsub; s++)
                start[s + 1] += start[s];
            for (size_t i = 0; i < k; i++)
                if (gr->id[p][out[i]] >= 0)
                    sorted[start[rank[gr->id[p][out[i]]]]++] = out[i];
            m = start[nsub];
            memcpy(out, sorted, m * sizeof(*out));
            k = m;
        }
        free(start);
        free(sorted);
    }
    free(subs);
    free(rooms);
    free(rank);
ids:
    for (size_t i = 0; i < k; i++)
        out[i] = ids[out[i]];
    return k;
}

/* Try domain (the nodes in `nodes`): the unit placed whole there, or rolled back. */
static int try_domain(struct tctx *x, const struct tunit *u, const int32_t *nodes, size_t n,
                      struct pmissing *m, char *why, size_t len)
{
    size_t mark = x->st->n;
    struct pmissing copy = {.slack = m->slack, .total = m->total};
    int32_t stack[16];
    int rc;

    copy.sub = x->nsubs <= 16 ? stack : malloc(x->nsubs * sizeof(*copy.sub));
    if (!copy.sub) {
        snprintf(why, len, "out of memory while planning");
        return -1;
    }
    memcpy(copy.sub, m->sub, x->nsubs * sizeof(*copy.sub));
    rc = unit_inside(x, u, nodes, n, &copy, why, len);
    if (rc == 0) {
        memcpy(m->sub, copy.sub, x->nsubs * sizeof(*m->sub));
        m->slack = copy.slack;
        m->total = copy.total;
    } else {
        pstatement_rollback(x->c, x->st, mark);
    }
    if (copy.sub != stack)
        free(copy.sub);
    return rc;
}

struct twalk {
    const struct tunit *u;
    struct tgrid gr;
    const int32_t *ids; /* the nodes in the topology, in order */
    size_t n;
    struct tneed need;
    int32_t *scratch;   /* n slots */
    /* For the reason: domains looked at, the nearest that did not hold it, the first tried. */
    int looked;
    double nearest;
    char nearest_text[POLICY_REASON_LEN], nearest_name[160];
    char tried[POLICY_REASON_LEN], tried_name[160];
    char pinned[160]; /* the domain its placed members are in, at the level that failed */
};

#define PATH_LEN 256

/* "b1/r2": node n's values of levels 0..l, for ties between domains. */
static void domain_path(const struct pnode *n, const struct tlevels *lv, int l, char *buf)
{
    size_t off = 0;

    *buf = '\0';
    for (int i = 0; i <= l && off < PATH_LEN; i++)
        off += (size_t)snprintf(buf + off, PATH_LEN - off, "%s%s", i ? "/" : "",
                                ptopo_value(n, lv->label[i]));
}

/* One level: its domains that may hold the unit, ranked, tried in turn. */
static int walk_level(struct tctx *x, struct twalk *w, int l, struct pmissing *m)
{
    const struct tunit *u = w->u;
    int32_t ndom = w->gr.ndom[l];
    struct troom *rooms = calloc(ndom ? (size_t)ndom : 1, sizeof(*rooms));
    struct tcand *cands = malloc((ndom ? (size_t)ndom : 1) * sizeof(*cands));
    char *paths = malloc((ndom ? (size_t)ndom : 1) * PATH_LEN);
    const struct pnode *ref;
    int32_t only = -1, ncand = 0;
    bool all;
    int rc = -1;

    if (!rooms || !cands || !paths)
        goto out;
    /* The reason speaks of the last level tried, the coarsest. */
    w->looked = 0;
    w->nearest = 0;
    *w->nearest_text = *w->nearest_name = *w->tried = *w->tried_name = *w->pinned = '\0';
    ref = pinned_at(x, u, l, &all);
    if (ref && !all)
        goto out; /* its placed members span two domains of this level */
    if (ref)
        ptopo_domain_name(ref, u->lv, l, w->pinned, sizeof(w->pinned));
    for (size_t i = 0; i < w->n; i++) {
        int32_t d = w->gr.id[l][i];

        if (d < 0)
            continue;
        if (ref && only < 0 && ptopo_same_domain(ref, pnode_at(x->c, w->ids[i]), u->lv, l))
            only = d;
        room_add(&rooms[d], pnode_at(x->c, w->ids[i]), &w->need);
    }
    for (int32_t d = 0; d < ndom; d++) {
        const struct pnode *first = pnode_at(x->c, w->ids[w->gr.first[l][d]]);
        char text[POLICY_REASON_LEN], *path;
        double s;

        if (ref && d != only)
            continue;
        w->looked++;
        if ((s = shortfall(&rooms[d], &w->need, text, sizeof(text))) > 0) {
            if (!*w->nearest_name || s < w->nearest) {
                w->nearest = s;
                snprintf(w->nearest_text, sizeof(w->nearest_text), "%s", text);
                ptopo_domain_name(first, u->lv, l, w->nearest_name, sizeof(w->nearest_name));
            }
            continue;
        }
        path = paths + (size_t)ncand * PATH_LEN;
        domain_path(first, u->lv, l, path);
        cands[ncand++] = (struct tcand){
            .dom = d,
            .ratio = ratio(&rooms[d], &w->need),
            .delta = x->c->opts.domain_choice == POLICY_DOMAIN_LEAST_STRANDED
                         ? stranded_delta(x->c, &rooms[d], &w->need)
                         : 0,
            .name = path};
    }
    qsort_r(cands, (size_t)ncand, sizeof(*cands), cmp_cand, &x->c->opts.domain_choice);
    for (int32_t i = 0; i < ncand && rc != 0; i++) {
        int p = u->lv->pref;
        size_t k = domain_nodes(x, &w->gr, w->ids, u->lv, l, cands[i].dom, p, &w->need,
                                w->scratch);
        char attempt[POLICY_REASON_LEN];

        rc = try_domain(x, u, w->scratch, k, m, attempt, sizeof(attempt));
        if (rc != 0 && !*w->tried) {
            snprintf(w->tried, sizeof(w->tried), "%s", attempt);
            ptopo_domain_name(pnode_at(x->c, w->ids[w->gr.first[l][cands[i].dom]]), u->lv, l,
                              w->tried_name, sizeof(w->tried_name));
        }
    }
out:
    free(rooms);
    free(cands);
    free(paths);
    return rc;
}

/* Why the unit found no domain, in words. */
static void walk_reason(const struct tctx *x, const struct twalk *w, char *why, size_t len)
{
    const struct tunit *u = w->u;
    char who[192], ask[64], label[160];
    const char *level = u->lv->shown[u->lv->req >= 0 ? u->lv->req : tl_finest(u->lv)];

    if (u->sub < 0) {
        snprintf(who, sizeof(who), "gang %s", x->g->key);
    } else {
        unit_label(x, u, label, sizeof(label));
        snprintf(who, sizeof(who), "gang %s: %s", x->g->key, label);
    }
    policy_amount_text(POLICY_RES_GPU, w->need.gpu_milli, ask, sizeof(ask));
    if (*w->tried && !*w->nearest_name)
        snprintf(why, len, "%s: in %s: %s", who, w->tried_name, w->tried);
    else if (*w->tried)
        snprintf(why, len, "%s: in %s: %s (the nearest of the rest, %s, %s)", who, w->tried_name,
                 w->tried, w->nearest_name, w->nearest_text);
    else if (*w->pinned && w->looked == 0)
        snprintf(why, len, "%s: its placed members are in %s, which has no node it may use", who,
                 w->pinned);
    else if (*w->pinned)
        snprintf(why, len, "%s needs %lld pods (%s) in %s, where its placed members are: it %s",
                 who, (long long)w->need.pods, ask, w->pinned, w->nearest_text);
    else if (w->looked == 0)
        snprintf(why, len, "%s needs one %s, and no node it may use has the label%s", who, level,
                 u->lv->req > 0 ? "s down to it" : "");
    else
        snprintf(why, len,
                 "%s needs %lld pods (%s) in one %s%s, and none of the %d there holds them: "
                 "the nearest, %s, %s",
                 who, (long long)w->need.pods, ask, level,
                 u->lv->req >= 0 ? " (required)" : "", w->looked, w->nearest_name,
                 w->nearest_text);
}

/* The unit in the most local domain that holds it (within ids, in order). */
static int unit_walk(struct tctx *x, const struct tunit *u, const int32_t *ids, size_t n,
                     struct pmissing *m, char *why, size_t len)
{
    const struct tlevels *lv = u->lv;
    int finest = tl_finest(lv), stop = lv->req >= 0 ? lv->req : 0, depth = finest + 1;
    int32_t *in = malloc((n ? n : 1) * sizeof(*in));
    struct twalk w = {.u = u};
    size_t k = 0;
    int rc = -1;

    w.scratch = malloc((n ? n : 1) * sizeof(*w.scratch));
    if (!in || !w.scratch) {
        snprintf(why, len, "out of memory while planning");
        goto out;
    }
    for (size_t i = 0; i < n; i++)
        if (ptopo_in_topology(pnode_at(x->c, ids[i]), lv, lv->n - 1))
            in[k++] = ids[i];
    w.ids = in;
    w.n = k;
    unit_need(x, u, m, NULL, &w.need);
    if (grid_build(x->c, in, k, lv, depth, &w.gr) != POLICY_OK) {
        snprintf(why, len, "out of memory while planning");
        goto out;
    }
    for (int l = finest; l >= stop && rc != 0; l--)
        rc = walk_level(x, &w, l, m);
    if (rc != 0 && lv->req < 0 && k > 0) {
        /* Only preferred: anywhere in the topology, by its preferred sub-domains. */
        size_t kk = domain_nodes(x, &w.gr, in, lv, -1, 0, lv->pref, &w.need, w.scratch);

        rc = try_domain(x, u, w.scratch, kk, m, w.tried, sizeof(w.tried));
        if (rc != 0)
            snprintf(w.tried_name, sizeof(w.tried_name), "the whole topology");
    }
    if (rc != 0)
        walk_reason(x, &w, why, len);
out:
    grid_free(&w.gr);
    free(w.scratch);
    free(in);
    return rc;
}

/* ---- the gang, its subgroups and their replicas ------------------------------------ */

static void only_sub(const struct tctx *x, struct pmissing *part, int32_t s, int32_t want)
{
    memset(part->sub, 0, x->nsubs * sizeof(*part->sub));
    part->sub[s] = want;
    part->slack = 0;
    part->total = want;
}

/* A subgroup's pending members by replica, one replica at a time in a domain of its level;
 * then its members of no replica. */
static int replicas_place(struct tctx *x, int32_t s, const int32_t *ids, size_t n,
                          struct pmissing *m, char *why, size_t len)
{
    struct tlevels rlv = x->rep_lv[s];
    struct tunit u = {.lv = &rlv, .sub = s};
    struct pmissing part = {0};
    int32_t stack[16];
    char first[POLICY_REASON_LEN] = "";
    int rc = 0;

    rlv.req = rlv.pref = tl_finest(&x->rep_lv[s]);
    part.sub = x->nsubs <= 16 ? stack : malloc(x->nsubs * sizeof(*part.sub));
    if (!part.sub) {
        snprintf(why, len, "out of memory while planning");
        return -1;
    }
    for (size_t i = 0; i < x->npool && m->sub[s] > 0; i++) {
        const struct ppod *p = x->pool[i];
        int32_t count = 0;
        bool seen = false;

        if (p->sub != s || !p->replica || p->phase != POLICY_POD_PENDING)
            continue;
        for (size_t k = 0; k < i && !seen; k++)
            seen = x->pool[k]->sub == s && x->pool[k]->replica &&
                   strcmp(x->pool[k]->replica, p->replica) == 0;
        if (seen)
            continue; /* one try per replica */
        for (size_t k = i; k < x->npool; k++)
            count += x->pool[k]->sub == s && x->pool[k]->replica &&
                     x->pool[k]->phase == POLICY_POD_PENDING &&
                     strcmp(x->pool[k]->replica, p->replica) == 0;
        only_sub(x, &part, s, count < m->sub[s] ? count : m->sub[s]);
        u.replica = p->replica;
        if (unit_walk(x, &u, ids, n, &part, why, len) == 0) {
            m->sub[s] -= count < m->sub[s] ? count : m->sub[s];
        } else if (!*first) {
            snprintf(first, sizeof(first), "%s", why);
        }
    }
    if (m->sub[s] > 0) {
        struct pplace_filter f = {.unreplicated = true};

        only_sub(x, &part, s, m->sub[s]);
        rc = x->place(x->c, ids, n, &part, &f, x->st, why, len, x->pctx);
        if (rc != 0 && *first)
            snprintf(why, len, "%s", first);
        if (rc == 0)
            m->sub[s] = 0;
    }
    if (part.sub != stack)
        free(part.sub);
    return rc;
}

static int sub_inside(struct tctx *x, int32_t s, const int32_t *ids, size_t n,
                      struct pmissing *m, char *why, size_t len)
{
    int32_t want = m->sub[s];

    if (x->rep_has[s]) {
        if (replicas_place(x, s, ids, n, m, why, len) != 0)
            return -1;
        m->total -= want;
        return 0;
    }
    return x->place(x->c, ids, n, m, NULL, x->st, why, len, x->pctx);
}

/* Subgroups placed apart (most asking first), each in its own domains; then the rest. */
static int gang_inside(struct tctx *x, const int32_t *ids, size_t n, struct pmissing *m,
                       char *why, size_t len)
{
    struct pmissing part = {0};
    int32_t stack[16];
    int rc = 0;

    part.sub = x->nsubs <= 16 ? stack : malloc(x->nsubs * sizeof(*part.sub));
    if (!part.sub) {
        snprintf(why, len, "out of memory while planning");
        return -1;
    }
    for (size_t i = 0; i < x->napart && rc == 0; i++) {
        int32_t s = x->apart_order[i];
        /* Without a preferred level of its own it keeps the order given: the gang's. */
        struct tunit u = {.lv = &x->sub_lv[s], .sub = s};

        if (m->sub[s] <= 0)
            continue;
        only_sub(x, &part, s, m->sub[s]);
        rc = x->sub_has[s] ? unit_walk(x, &u, ids, n, &part, why, len)
                           : sub_inside(x, s, ids, n, &part, why, len);
        if (rc == 0) {
            m->total -= m->sub[s];
            m->sub[s] = 0;
        }
    }
    if (rc == 0 && m->total > 0) {
        struct pplace_filter f = {.skip_sub = x->apart};

        rc = x->place(x->c, ids, n, m, &f, x->st, why, len, x->pctx);
    }
    if (part.sub != stack)
        free(part.sub);
    return rc;
}

/* ---- setting up --------------------------------------------------------------------- */

static bool has_replicas(const struct tctx *x, int32_t s)
{
    for (size_t i = 0; i < x->g->nmembers; i++) {
        const struct ppod *p = ppod_at(x->c, x->g->members[i]);

        if (p && p->sub == s && p->replica)
            return true;
    }
    return false;
}

static int64_t sub_weight(const struct tctx *x, const struct pmissing *m, int32_t s)
{
    struct tunit u = {.sub = s};
    struct tneed d;
    struct pmissing part = *m;
    int32_t stack[16], *sub = x->nsubs <= 16 ? stack : malloc(x->nsubs * sizeof(*sub));
    int64_t w;

    if (!sub)
        return 0;
    part.sub = sub;
    only_sub(x, &part, s, m->sub[s]);
    unit_need(x, &u, &part, NULL, &d);
    w = d.gpu_milli * 1000 + d.pods;
    if (sub != stack)
        free(sub);
    return w;
}

static void ctx_free(struct tctx *x)
{
    free(x->sub_lv);
    free(x->sub_has);
    free(x->rep_lv);
    free(x->rep_has);
    free(x->apart);
    free(x->apart_order);
}

/* Resolve every level the gang names; -2 with why when one is not known. */
static int ctx_init(struct tctx *x, const struct pmissing *m, char *why, size_t len)
{
    const struct pgang *g = x->g;
    int64_t *weight;

    x->nsubs = g->nsubs;
    x->sub_lv = calloc(g->nsubs ? g->nsubs : 1, sizeof(*x->sub_lv));
    x->sub_has = calloc(g->nsubs ? g->nsubs : 1, sizeof(*x->sub_has));
    x->rep_lv = calloc(g->nsubs ? g->nsubs : 1, sizeof(*x->rep_lv));
    x->rep_has = calloc(g->nsubs ? g->nsubs : 1, sizeof(*x->rep_has));
    x->apart = calloc(g->nsubs ? g->nsubs : 1, sizeof(*x->apart));
    x->apart_order = calloc(g->nsubs ? g->nsubs : 1, sizeof(*x->apart_order));
    weight = calloc(g->nsubs ? g->nsubs : 1, sizeof(*weight));
    if (!x->sub_lv || !x->sub_has || !x->rep_lv || !x->rep_has || !x->apart || !x->apart_order ||
        !weight) {
        free(weight);
        snprintf(why, len, "out of memory while planning");
        return -1;
    }
    if (g->topo_source >= 0) {
        char detail[POLICY_REASON_LEN];

        if (!ptopo_resolve(x->c, &pgang_decl(g, g->topo_source)->want, &x->gang_lv, detail,
                           sizeof(detail))) {
            free(weight);
            snprintf(why, len, "gang %s: %s", g->key, detail);
            return -2;
        }
        x->gang_has = tl_finest(&x->gang_lv) >= 0;
    }
    for (size_t s = 0; s < g->nsubs; s++) {
        char detail[POLICY_REASON_LEN], label[128];

        if (ptopo_want_set(&g->subs[s].want)) {
            if (!ptopo_resolve(x->c, &g->subs[s].want, &x->sub_lv[s], detail,
                               sizeof(detail))) {
                free(weight);
                pgang_sub_label(g, (int32_t)s, label, sizeof(label));
                snprintf(why, len, "gang %s: %s: %s", g->key, label, detail);
                return -2;
            }
            x->sub_has[s] = tl_finest(&x->sub_lv[s]) >= 0;
        }
        if (has_replicas(x, (int32_t)s)) {
            if (x->sub_has[s])
                x->rep_lv[s] = x->sub_lv[s];
            else if (x->gang_has)
                x->rep_lv[s] = x->gang_lv;
            x->rep_has[s] = x->sub_has[s] || x->gang_has;
        }
        if (x->sub_has[s] || x->rep_has[s]) {
            x->apart[s] = true;
            weight[x->napart] = sub_weight(x, m, (int32_t)s);
            x->apart_order[x->napart++] = (int32_t)s;
        }
    }
    /* The most asking first: they have the fewest domains to choose from. */
    for (size_t i = 1; i < x->napart; i++)
        for (size_t k = i; k > 0 && weight[k] > weight[k - 1]; k--) {
            int64_t tw = weight[k];
            int32_t ts = x->apart_order[k];

            weight[k] = weight[k - 1];
            weight[k - 1] = tw;
            x->apart_order[k] = x->apart_order[k - 1];
            x->apart_order[k - 1] = ts;
        }
    free(weight);
    return 0;
}

bool pplace_filter_takes(const struct pplace_filter *f, const struct ppod *p)
{
    if (!f)
        return true;
    if (f->replica && (!p->replica || strcmp(p->replica, f->replica) != 0))
        return false;
    if (f->unreplicated && p->replica)
        return false;
    return !(f->skip_sub && p->sub >= 0 && f->skip_sub[p->sub]);
}

int ptopo_place(struct policy_cluster *c, struct pgang *g, struct ppod *const *pool,
                size_t npool, const struct pmissing *m, const int32_t *order, size_t norder,
                struct pstatement *st, pplace_fn place, void *ctx, char *why, size_t len)
{
    struct tctx x = {.c = c, .g = g, .pool = pool, .npool = npool, .st = st, .place = place,
                     .pctx = ctx};
    struct pmissing mine = {.slack = m->slack, .total = m->total};
    int32_t *ids = NULL, stack[16];
    size_t n = 0;
    int rc;

    mine.sub = g->nsubs <= 16 ? stack : malloc(g->nsubs * sizeof(*mine.sub));
    if (!mine.sub) {
        snprintf(why, len, "out of memory while planning");
        return -1;
    }
    memcpy(mine.sub, m->sub, g->nsubs * sizeof(*mine.sub));
    if (!c->topo_fence && !ptopo_constrained(g)) {
        rc = place(c, order, norder, &mine, NULL, st, why, len, ctx);
        goto out;
    }
    if ((rc = ctx_init(&x, m, why, len)) != 0)
        goto out;
    if (!(ids = malloc((norder ? norder : 1) * sizeof(*ids)))) {
        snprintf(why, len, "out of memory while planning");
        rc = -1;
        goto out;
    }
    for (size_t i = 0; i < norder; i++)
        if (!c->topo_fence || ((size_t)order[i] < c->topo_fence_n && c->topo_fence[order[i]]))
            ids[n++] = order[i];
    if (x.gang_has) {
        struct tunit u = {.lv = &x.gang_lv, .sub = -1};

        rc = unit_walk(&x, &u, ids, n, &mine, why, len);
    } else {
        rc = gang_inside(&x, ids, n, &mine, why, len);
    }
out:
    free(ids);
    ctx_free(&x);
    if (mine.sub != stack)
        free(mine.sub);
    return rc;
}

/* ---- fences for a victim search ---------------------------------------------------- */

struct tfence {
    int32_t dom;
    int64_t gpu, cpu;
    const char *name;
};

static int cmp_fence(const void *a_, const void *b_)
{
    const struct tfence *a = a_, *b = b_;

    if (a->gpu != b->gpu)
        return a->gpu > b->gpu ? -1 : 1;
    if (a->cpu != b->cpu)
        return a->cpu > b->cpu ? -1 : 1;
    return strcmp(a->name, b->name);
}

size_t ptopo_search_fences(struct policy_cluster *c, struct pgang *g, uint8_t **out, size_t max)
{
    struct tctx x = {.c = c, .g = g};
    struct tgrid gr = {0};
    struct tunit u = {.sub = -1};
    struct tfence *f = NULL;
    int32_t *ids = malloc((c->nodes.n ? c->nodes.n : 1) * sizeof(*ids));
    const struct pnode *ref;
    size_t n = 0, nf = 0, made = 0;
    char why[POLICY_REASON_LEN];
    bool all;
    int req;

    if (!ids || g->topo_source < 0 ||
        !ptopo_resolve(c, &pgang_decl(g, g->topo_source)->want, &x.gang_lv, why, sizeof(why)) ||
        (req = x.gang_lv.req) < 0)
        goto out;
    u.lv = &x.gang_lv;
    for (size_t i = 0; i < c->nodes.n; i++)
        if (c->nodes.items[i] &&
            ptopo_in_topology(c->nodes.items[i], &x.gang_lv, x.gang_lv.n - 1))
            ids[n++] = (int32_t)i;
    if (grid_build(c, ids, n, &x.gang_lv, req + 1, &gr) != POLICY_OK ||
        !(f = calloc(gr.ndom[req] ? (size_t)gr.ndom[req] : 1, sizeof(*f))))
        goto out;
    ref = pinned_at(&x, &u, req, &all);
    if (ref && !all)
        goto out;
    for (int32_t d = 0; d < gr.ndom[req]; d++)
        f[d] = (struct tfence){.dom = d,
                               .name = ptopo_value(pnode_at(c, ids[gr.first[req][d]]),
                                                   x.gang_lv.label[req])};
    for (size_t i = 0; i < n; i++) {
        const struct pnode *node = pnode_at(c, ids[i]);
        struct tfence *e = &f[gr.id[req][i]];

        e->gpu += pnode_free_devices(node) > 0 ? pnode_free_devices(node) : 0;
        e->cpu += free_of(node->cpu, node->cpu_used);
        if (ref && ptopo_same_domain(ref, node, &x.gang_lv, req))
            e->gpu += INT64_C(1) << 40; /* its placed members' domain, alone */
    }
    nf = (size_t)gr.ndom[req];
    qsort(f, nf, sizeof(*f), cmp_fence);
    for (size_t k = 0; k < nf && made < max; k++) {
        if (ref && f[k].gpu < (INT64_C(1) << 40))
            break;
        if (!(out[made] = calloc(c->nodes.n ? c->nodes.n : 1, 1)))
            break;
        for (size_t i = 0; i < n; i++)
            if (gr.id[req][i] == f[k].dom)
                out[made][ids[i]] = 1;
        made++;
    }
out:
    grid_free(&gr);
    free(f);
    free(ids);
    return made;
}
