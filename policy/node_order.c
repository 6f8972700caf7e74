/*
 * node_order.c - nodes in the order the strategy tries them, kept between plans.
 *
 * binpack tries the fullest node first, spread the emptiest (ties: the older node); fragmentation
 * prices every node and needs no order. Sorting every node for each plan made a plan cost
 * O(n log n) before it placed anything; with a backlog of waiting gangs (porder_blocker dry-runs
 * up to 16 of them for every filter) that sort was most of muster's CPU. So the order of every
 * node is kept: a node whose fill changed (a charge, a release, its own update) is marked, and
 * the next plan takes the marked nodes out and merges them back in at their new scores, in one
 * linear pass, or sorts again when so many changed that a sort is cheaper. The result is the
 * order a fresh sort would give, always.
 */
#include <stdlib.h>
#include <string.h>

#include "internal.h"

struct order_key {
    int64_t score; /* the strategy's: fuller is larger for binpack, emptier for spread */
    int32_t id;
};

struct pnode_order {
    struct order_key *keys; /* every node, in order, as of the last plan */
    size_t n, cap;
    struct order_key *spare; /* the merge's output, swapped with keys */
    int32_t *changed;        /* ids marked since */
    size_t nchanged, changed_cap;
    unsigned char *mark;     /* by id: in changed */
    size_t mark_cap;
    bool stale;              /* sort again from scratch */
};

/* How full a node is, for ordering: GPUs first, then cpu and memory. */
int64_t pnode_fill_score(const struct pnode *n)
{
    int64_t gpu = 0, cpu = 0, mem = 0, gpu_used;

    if (n->gpus > 0) {
        gpu_used = n->whole_used * POLICY_GPU_MILLI;
        for (size_t i = 0; i < n->ngroups; i++)
            gpu_used += n->groups[i].used;
        gpu = gpu_used * 1000 / (n->gpus * POLICY_GPU_MILLI);
    }
    if (n->cpu > 0)
        cpu = n->cpu_used * 1000 / n->cpu;
    if (n->memory > 0)
        mem = (int64_t)((double)n->memory_used * 1000.0 / (double)n->memory);
    return gpu * 4000 + cpu + mem;
}

static int64_t strategy_score(const struct policy_cluster *c, const struct pnode *n)
{
    int64_t s = pnode_fill_score(n);

    return c->opts.strategy == POLICY_SPREAD ? -s : s;
}

static bool key_before(const struct order_key *x, const struct order_key *y)
{
    return x->score != y->score ? x->score > y->score : x->id < y->id;
}

static int cmp_key(const void *a, const void *b)
{
    return key_before(a, b) ? -1 : key_before(b, a) ? 1 : 0;
}

void pnode_order_cleanup(struct policy_cluster *c)
{
    struct pnode_order *o = c->order;

    if (!o)
        return;
    free(o->keys);
    free(o->spare);
    free(o->changed);
    free(o->mark);
    free(o);
    c->order = NULL;
}

void pnode_order_touch(struct policy_cluster *c, int32_t id)
{
    struct pnode_order *o = c->order;

    if (!o || o->stale || id < 0)
        return;
    if ((size_t)id >= o->mark_cap) {
        size_t cap = o->mark_cap ? o->mark_cap : 64;
        unsigned char *m;

        while (cap <= (size_t)id)
            cap *= 2;
        if (!(m = realloc(o->mark, cap))) {
            o->stale = true;
            return;
        }
        memset(m + o->mark_cap, 0, cap - o->mark_cap);
        o->mark = m;
        o->mark_cap = cap;
    }
    if (o->mark[id])
        return;
    if (o->nchanged == o->changed_cap) {
        size_t cap = o->changed_cap ? o->changed_cap * 2 : 64;
        int32_t *v = realloc(o->changed, cap * sizeof(*v));

        if (!v) {
            o->stale = true;
            return;
        }
        o->changed = v;
        o->changed_cap = cap;
    }
    o->changed[o->nchanged++] = id;
    o->mark[id] = 1;
}

static void unmark_all(struct pnode_order *o)
{
    for (size_t i = 0; i < o->nchanged; i++)
        o->mark[o->changed[i]] = 0;
    o->nchanged = 0;
}

static bool reserve(struct pnode_order *o, size_t n)
{
    struct order_key *a, *b;

    if (n <= o->cap)
        return true;
    a = realloc(o->keys, n * sizeof(*a));
    if (a)
        o->keys = a;
    b = a ? realloc(o->spare, n * sizeof(*b)) : NULL;
    if (b)
        o->spare = b;
    if (!a || !b)
        return false;
    o->cap = n;
    return true;
}

/* Every node, sorted from scratch. */
static bool rebuild(struct policy_cluster *c, struct pnode_order *o)
{
    size_t k = 0;

    if (!reserve(o, c->nodes.n ? c->nodes.n : 1))
        return false;
    for (size_t i = 0; i < c->nodes.n; i++)
        if (c->nodes.items[i])
            o->keys[k++] = (struct order_key){strategy_score(c, c->nodes.items[i]), (int32_t)i};
    qsort(o->keys, k, sizeof(*o->keys), cmp_key);
    o->n = k;
    if (o->mark)
        unmark_all(o);
    o->nchanged = 0;
    o->stale = false;
    return true;
}

/* The marked nodes out, then back in at their scores now (if they still exist): one merge. */
static bool refresh(struct policy_cluster *c, struct pnode_order *o)
{
    struct order_key *moved = o->nchanged ? malloc(o->nchanged * sizeof(*moved)) : NULL;
    size_t nmoved = 0, k = 0, a = 0, b = 0;

    if (o->nchanged && !moved)
        return false;
    for (size_t i = 0; i < o->nchanged; i++) {
        const struct pnode *n = pnode_at(c, o->changed[i]);

        if (n)
            moved[nmoved++] = (struct order_key){strategy_score(c, n), o->changed[i]};
    }
    if (!reserve(o, o->n + nmoved)) {
        free(moved);
        return false;
    }
    qsort(moved, nmoved, sizeof(*moved), cmp_key);
    while (a < o->n || b < nmoved) {
        if (a < o->n && (size_t)o->keys[a].id < o->mark_cap && o->mark[o->keys[a].id]) {
            a++;
            continue;
        }
        if (b >= nmoved || (a < o->n && key_before(&o->keys[a], &moved[b])))
            o->spare[k++] = o->keys[a++];
        else
            o->spare[k++] = moved[b++];
    }
    free(moved);
    unmark_all(o);
    {
        struct order_key *t = o->keys;

        o->keys = o->spare;
        o->spare = t;
    }
    o->n = k;
    return true;
}

/* The kept order brought up to date; NULL when memory ran out (callers sort for themselves). */
static struct pnode_order *current(struct policy_cluster *c)
{
    struct pnode_order *o = c->order;

    if (!o && !(o = c->order = calloc(1, sizeof(*o))))
        return NULL;
    if (o->stale || o->n == 0 || o->nchanged * 8 > o->n) {
        if (!rebuild(c, o)) {
            o->stale = true;
            return NULL;
        }
        return o;
    }
    if (o->nchanged && !refresh(c, o)) {
        o->stale = true;
        return NULL;
    }
    return o;
}

/* ids (distinct, known) in the strategy's order, by a sort of their own. */
static void sort_ids(const struct policy_cluster *c, const int32_t *ids, size_t n, int32_t *out)
{
    struct order_key *keys = malloc((n ? n : 1) * sizeof(*keys));

    if (!keys) {
        memmove(out, ids, n * sizeof(*ids));
        return;
    }
    for (size_t i = 0; i < n; i++)
        keys[i] = (struct order_key){strategy_score(c, pnode_at(c, ids[i])), ids[i]};
    qsort(keys, n, sizeof(*keys), cmp_key);
    for (size_t i = 0; i < n; i++)
        out[i] = keys[i].id;
    free(keys);
}

void pnode_order(struct policy_cluster *c, const int32_t *ids, size_t n, int32_t *out)
{
    struct pnode_order *o;
    unsigned char *want;
    size_t k = 0;

    if (c->opts.strategy == POLICY_FRAGMENTATION) {
        memcpy(out, ids, n * sizeof(*ids)); /* every node is priced; ties: pfrag_find_place */
        return;
    }
    /* A few candidates sort faster than every node is walked. */
    if (n * 4 < c->nodes.n || !(o = current(c)) || !(want = calloc(c->nodes.n, 1))) {
        sort_ids(c, ids, n, out);
        return;
    }
    for (size_t i = 0; i < n; i++)
        want[ids[i]] = 1;
    for (size_t i = 0; i < o->n && k < n; i++)
        if (want[o->keys[i].id])
            out[k++] = o->keys[i].id;
    free(want);
    if (k < n) /* a name given twice */
        sort_ids(c, ids, n, out);
}

int32_t *pnode_order_every(struct policy_cluster *c, size_t *n)
{
    struct pnode_order *o;
    int32_t *out;
    size_t k = 0;

    if (c->opts.strategy == POLICY_FRAGMENTATION || !(o = current(c))) {
        int32_t *ids = malloc((c->nodes.n ? c->nodes.n : 1) * sizeof(*ids));

        for (size_t i = 0; ids && i < c->nodes.n; i++)
            if (c->nodes.items[i])
                ids[k++] = (int32_t)i;
        *n = k;
        if (ids && c->opts.strategy != POLICY_FRAGMENTATION)
            sort_ids(c, ids, k, ids);
        return ids;
    }
    if (!(out = malloc((o->n ? o->n : 1) * sizeof(*out))))
        return NULL;
    for (size_t i = 0; i < o->n; i++)
        out[i] = o->keys[i].id;
    *n = o->n;
    return out;
}
