/*
 * plan.c - all or nothing. A gang's missing minimum members (per subgroup,
 * then up to the whole minimum) are placed in one pass, head first then larger
 * asks first, each charged as it goes so the next sees the room it took and
 * each checked against its queue with its exact share on the chosen node; if
 * any member finds no node, every charge of the pass is undone and the gang
 * gets one reason.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

/* Node ids of the candidates (unknown names skipped), or of every node. */
static int32_t *candidate_ids(const struct policy_cluster *c, const char *const *names, size_t n,
                              size_t *out_n)
{
    size_t cap = names ? n : c->nodes.n;
    int32_t *ids = malloc((cap ? cap : 1) * sizeof(*ids));
    size_t k = 0;

    if (!ids)
        return NULL;
    if (names) {
        for (size_t i = 0; i < n; i++) {
            int32_t id = pidx_get(&c->node_ix, names[i]);

            if (id >= 0)
                ids[k++] = id;
        }
    } else {
        for (size_t i = 0; i < c->nodes.n; i++)
            if (c->nodes.items[i])
                ids[k++] = (int32_t)i;
    }
    *out_n = k;
    return ids;
}

/* Why no node of `order` takes p, as the cluster stands; offered: they are the ones
 * kube-scheduler offered, not every node. */
static void no_node_reason(const struct policy_cluster *c, const struct ppod *p,
                           const int32_t *order, size_t n, bool offered, struct preason *why)
{
    const struct pgang *g = ppod_gang(c, p);

    preason_init(why, POLICY_REASON_NO_NODE, g ? g->key : p->key);
    preason_nodes(c, p, order, n, &why->r);
    why->r.offered = offered;
    why->r.never = preason_fits_nowhere(c, p, NULL, 0);
}

static void no_memory(struct preason *why, const char *gang)
{
    if (why)
        preason_init(why, POLICY_REASON_NO_MEMORY, gang);
}

/* Does p's queue have room for what it takes on that place (a gpu-memory share differs by
 * node)? A refusal is written into queue_why (NULL: not wanted). */
static bool queue_admits(const struct policy_cluster *c, const struct pgang *g,
                         const struct ppod *p, const struct pplace *pl, struct preason *queue_why)
{
    struct policy_resources need;

    if (!p->managed)
        return true;
    ppod_charge_resources(p, pl->share, &need);
    return pqueue_room(c, g, p->queue, &need, queue_why) == 0;
}

/*
 * The first node of order, from *cursor on, that takes p and whose exact
 * charge its queue allows. A queue refusal (on every node that had room) is
 * written into queue_why (kind NONE: there was none).
 */
static bool find_place(const struct policy_cluster *c, const struct ppod *p,
                       enum policy_strategy strategy, const int32_t *order, size_t n,
                       size_t *cursor, struct pplace *out, struct preason *queue_why)
{
    bool spread = strategy == POLICY_SPREAD;
    const struct pgang *g = ppod_gang(c, p);

    if (strategy == POLICY_FRAGMENTATION) {
        /* Every node priced (frag.c); if the queue has no room there, any node it has room on. */
        if (!pfrag_find_place(c, p, order, n, out))
            return false;
        if (queue_admits(c, g, p, out, queue_why))
            return true;
    }
    for (size_t k = 0; k < n; k++) {
        size_t i = spread ? (*cursor + k) % n : *cursor + k;
        const struct pnode *node;
        enum pfit_why w;

        if (i >= n)
            break;
        node = pnode_at(c, order[i]);
        if (!pfit_static(node, p, &w) || !pfit_resources(node, p, strategy, out, &w) ||
            !queue_admits(c, g, p, out, queue_why))
            continue;
        out->node = order[i];
        *cursor = spread ? (i + 1) % n : i;
        return true;
    }
    return false;
}

/* Place p on a node of order and record it in st. When it goes nowhere, queue_why holds its
 * queue's refusal, kind NONE when room was what it lacked. */
static int place_one(struct policy_cluster *c, struct ppod *p, enum policy_strategy strategy,
                     const int32_t *order, size_t norder, size_t *cursor, struct pstatement *st,
                     struct preason *queue_why)
{
    struct pplace pl;

    queue_why->r.kind = POLICY_REASON_NONE;
    if (!find_place(c, p, strategy, order, norder, cursor, &pl, queue_why))
        return -1;
    if (pstatement_place(c, st, p, &pl) != POLICY_OK) {
        no_memory(queue_why, ppod_gang(c, p)->key);
        return -1;
    }
    return 0;
}

/* Its GPU ask in milli-devices, a gpu-memory ask at the least it would take. */
static int64_t ask_weight(const struct policy_cluster *c, const struct ppod *p)
{
    return p->gpus * POLICY_GPU_MILLI +
           (int64_t)ppod_share_asked(c, p) * (p->devices ? p->devices : 1);
}

/* Heaviest first: < 0 when x asks more (GPU, then gpu-memory, cpu, memory). */
static int cmp_ask(const struct policy_cluster *c, const struct ppod *x, const struct ppod *y)
{
    int64_t wx = ask_weight(c, x), wy = ask_weight(c, y);

    if (wx != wy)
        return wx > wy ? -1 : 1;
    if (x->gpu_memory_mib != y->gpu_memory_mib)
        return x->gpu_memory_mib > y->gpu_memory_mib ? -1 : 1;
    if (x->cpu != y->cpu)
        return x->cpu > y->cpu ? -1 : 1;
    if (x->memory != y->memory)
        return x->memory > y->memory ? -1 : 1;
    return 0;
}

void pmembers_need(const struct policy_cluster *c, const struct ppod *const *members, size_t n,
                   bool placed, struct policy_resources *need)
{
    memset(need, 0, sizeof(*need));
    for (size_t i = 0; i < n; i++) {
        struct policy_resources r;

        ppod_charge_resources(
            members[i], placed ? members[i]->place.share : ppod_share_asked(c, members[i]), &r);
        for (int k = 0; k < POLICY_RES_COUNT; k++)
            need->v[k] += r.v[k];
    }
}

static bool member_invalid(const struct pgang *g, const struct ppod *p, struct preason *why)
{
    char detail[POLICY_REASON_LEN];

    if (ppod_ask_valid(p, detail, sizeof(detail)))
        return false;
    if (why) {
        preason_init(why, POLICY_REASON_INVALID, g->key);
        why->r.pod = p->name;
        why->r.never = true;
        preason_detail(why, "%s", detail);
    }
    return true;
}

/* Which members a count met by any of them is planned from. */
enum choice {
    CHOOSE_HEAVIEST, /* the most asking first: extras beyond it are the light ones */
    CHOOSE_LIGHTEST, /* the least asking first: where the heaviest do not fit or exceed a limit */
};

struct choice_order {
    const struct policy_cluster *c;
    const struct ppod *must; /* the asking pod, preferred among equals */
    enum choice how;
};

/* qsort_r order of the pending pool: members that could ever run first, the head first, then
 * by ask (heaviest or lightest first), the asking pod among equals, then arrival. */
static int cmp_choice(const void *a, const void *b, void *ctx)
{
    const struct ppod *x = *(struct ppod *const *)a, *y = *(struct ppod *const *)b;
    const struct choice_order *o = ctx;
    bool vx = ppod_ask_valid(x, NULL, 0), vy = ppod_ask_valid(y, NULL, 0);
    int r;

    if (vx != vy)
        return vx ? -1 : 1;
    if (x->head != y->head)
        return x->head ? -1 : 1;
    if ((r = cmp_ask(o->c, x, y)) != 0)
        return o->how == CHOOSE_HEAVIEST ? r : -r;
    if ((x == o->must) != (y == o->must))
        return x == o->must ? -1 : 1;
    return x->arrival < y->arrival ? -1 : x->arrival > y->arrival;
}


/* Where a pass ran out: the first member that found no place (and its queue's refusal, if
 * that was what held it), and the subgroup still short (-1: the whole minimum). */
struct shortfall {
    const struct ppod *failed;
    int32_t sub;
    struct preason queue_why; /* kind NONE: room, not its queue */
};

/*
 * Place the members the gang's minimum misses, going down the pool in order: a member whose
 * subgroup still misses some, or that fills what the whole minimum misses beyond the
 * subgroups', is placed if it can be; one that cannot is passed over for the next. Same-shaped
 * neighbours continue from one cursor.
 */
static int place_missing(struct policy_cluster *c, const struct pgang *g, struct ppod **pool,
                         size_t npool, struct pmissing *m, const struct pplace_filter *f,
                         enum policy_strategy strategy, const int32_t *order, size_t norder,
                         struct pstatement *st, struct shortfall *sf)
{
    const struct ppod *prev = NULL;
    struct preason queue_why;
    size_t cursor = 0;

    sf->failed = NULL;
    sf->sub = -1;
    sf->queue_why.r.kind = POLICY_REASON_NONE;
    for (size_t i = 0; i < npool && m->total > 0; i++) {
        struct ppod *p = pool[i];
        bool for_sub = p->sub >= 0 && (size_t)p->sub < g->nsubs && m->sub[p->sub] > 0;

        /* Placed by an earlier pass of this plan (a subgroup in its own domain), or not this
         * pass's to take. */
        if (p->phase != POLICY_POD_PENDING || !pplace_filter_takes(f, p))
            continue;
        if (!for_sub && m->slack <= 0)
            continue;
        if (!prev || !ppod_same_shape(prev, p))
            cursor = 0;
        if (place_one(c, p, strategy, order, norder, &cursor, st, &queue_why) != 0) {
            if (!sf->failed) {
                sf->failed = p;
                sf->queue_why = queue_why;
            }
            continue;
        }
        prev = p;
        if (for_sub)
            m->sub[p->sub]--;
        else
            m->slack--;
        m->total--;
    }
    if (m->total <= 0)
        return 0;
    /* Who is short: the first subgroup still missing members, else the whole minimum; the
     * member named is one of it that found no place. */
    for (size_t s = 0; s < g->nsubs && sf->sub < 0; s++)
        if (m->sub[s] > 0)
            sf->sub = (int32_t)s;
    if (sf->failed && sf->sub >= 0 && sf->failed->sub != sf->sub) {
        for (size_t i = 0; i < npool; i++)
            if (pool[i]->sub == sf->sub && pool[i]->phase == POLICY_POD_PENDING &&
                pplace_filter_takes(f, pool[i])) {
                sf->failed = pool[i];
                sf->queue_why.r.kind = POLICY_REASON_NONE;
                break;
            }
    }
    return -1;
}

/* The exhaustive fallback: a depth-first search over which members go where, within a
 * budget of placements tried (a gang the greedy passes could not place, small enough). */
#define SEARCH_BUDGET 4096

struct search_state {
    struct policy_cluster *c;
    const struct pgang *g;
    struct ppod **pool;
    size_t npool;
    struct pmissing *m;
    const struct pplace_filter *f;
    const int32_t *order;
    size_t norder;
    struct pstatement *st;
    long budget;
};

/* May the search take pool member i (pending: not placed by an earlier pass, and this pass's)? */
static bool search_takes(const struct search_state *d, size_t i)
{
    return d->pool[i]->phase == POLICY_POD_PENDING && pplace_filter_takes(d->f, d->pool[i]);
}

/* Can pool[i..] still meet what is missing? */
static bool search_may_meet(const struct search_state *d, size_t i)
{
    int32_t left = 0;

    for (size_t k = i; k < d->npool; k++)
        left += search_takes(d, k);
    if (left < d->m->total)
        return false;
    for (size_t s = 0; s < d->g->nsubs; s++) {
        int32_t have = 0;

        if (d->m->sub[s] <= 0)
            continue;
        for (size_t k = i; k < d->npool; k++)
            have += d->pool[k]->sub == (int32_t)s && search_takes(d, k);
        if (have < d->m->sub[s])
            return false;
    }
    return true;
}

static bool search_from(struct search_state *d, size_t i);

/* Try p on one node with its GPU groups picked as strategy s would. */
static bool search_place(struct search_state *d, size_t i, int32_t node,
                         enum policy_strategy strategy, bool for_sub)
{
    struct ppod *p = d->pool[i];
    const struct pnode *n = pnode_at(d->c, node);
    enum pfit_why w;
    struct pplace pl;
    size_t mark = d->st->n;

    if (--d->budget <= 0 || !pfit_resources(n, p, strategy, &pl, &w))
        return false;
    pl.node = node;
    if (!queue_admits(d->c, d->g, p, &pl, NULL) ||
        pstatement_place(d->c, d->st, p, &pl) != POLICY_OK)
        return false;
    if (for_sub)
        d->m->sub[p->sub]--;
    else
        d->m->slack--;
    d->m->total--;
    if (search_from(d, i + 1))
        return true;
    pstatement_rollback(d->c, d->st, mark);
    if (for_sub)
        d->m->sub[p->sub]++;
    else
        d->m->slack++;
    d->m->total++;
    return false;
}

static bool search_from(struct search_state *d, size_t i)
{
    struct ppod *p;
    bool for_sub;

    if (d->m->total <= 0)
        return true;
    if (i >= d->npool || d->budget <= 0 || !search_may_meet(d, i))
        return false;
    p = d->pool[i];
    for_sub = p->sub >= 0 && (size_t)p->sub < d->g->nsubs && d->m->sub[p->sub] > 0;
    if (search_takes(d, i) && (for_sub || d->m->slack > 0)) {
        for (size_t k = 0; k < d->norder; k++) {
            const struct pnode *n = pnode_at(d->c, d->order[k]);
            enum pfit_why w;

            if (!pfit_static(n, p, &w))
                continue;
            /* A share tightest first, then on a device of its own. */
            if (search_place(d, i, d->order[k], POLICY_BINPACK, for_sub) ||
                (pfit_share_on(n, p) > 0 &&
                 search_place(d, i, d->order[k], POLICY_SPREAD, for_sub)))
                return true;
            if (d->budget <= 0)
                return false;
        }
    }
    return search_from(d, i + 1); /* this member stays out */
}

/* Do the members that could ever run meet each subgroup's missing count? */
static bool subgroups_met_by_valid(const struct pgang *g, struct ppod **pool, size_t npool,
                                   const int32_t *msub)
{
    for (size_t s = 0; s < g->nsubs; s++) {
        int32_t valid = 0;

        for (size_t i = 0; i < npool; i++)
            valid += pool[i]->sub == (int32_t)s && ppod_ask_valid(pool[i], NULL, 0);
        if (valid < msub[s])
            return false;
    }
    return true;
}

/* The least the missing members could ask, per resource: the queue is asked about that. */
static void least_need(const struct policy_cluster *c, struct ppod **pool, size_t npool,
                       const struct pgang *g, const struct pmissing *m,
                       struct policy_resources *need)
{
    pgang_least_need(c, g, (const struct ppod *const *)pool, npool, m->sub, m->total, need);
}

/* What a pass places, handed to ptopo_place: it places into st what the counts it is given
 * miss (ptopo_place hands each domain's try a copy). */
struct place_ctx {
    const struct pgang *g;
    struct ppod **pool;
    size_t npool;
    enum policy_strategy strategy;
    struct preason *why; /* a pass that runs out says why here (and in words to ptopo_place);
                          * NULL: no reason asked (a dry run) */
};

/* Why a pass that ran out on these nodes did, as the cluster stands (the pass rolled back). */
static void pass_reason(const struct policy_cluster *c, const struct place_ctx *x,
                        const struct pmissing *m, const int32_t *order, size_t norder,
                        struct shortfall *sf, struct preason *why)
{
    if (sf->queue_why.r.kind != POLICY_REASON_NONE) {
        *why = sf->queue_why;
        pqueue_reason_settle(c, why);
        return;
    }
    preason_gang_room(c, x->g, x->pool, x->npool, m->sub, m->total, sf->failed, sf->sub, order,
                      norder, why);
}

/* What m misses before a pass counts it off, for the pass's reason (sub: stack when it fits). */
static bool missing_before(const struct pgang *g, const struct pmissing *m, struct pmissing *was,
                           int32_t *stack)
{
    *was = *m;
    was->sub = g->nsubs <= 16 ? stack : malloc(g->nsubs * sizeof(*was->sub));
    if (!was->sub)
        return false;
    memcpy(was->sub, m->sub, g->nsubs * sizeof(*was->sub));
    return true;
}

/* A pass ran out: its reason as data (x->why), and in words for ptopo_place, which may say
 * it of a domain. */
static void pass_failed(struct policy_cluster *c, const struct place_ctx *x,
                        const struct pmissing *was, const int32_t *order, size_t norder,
                        struct pstatement *st, size_t mark, struct shortfall *sf, char *why,
                        size_t len)
{
    pstatement_rollback(c, st, mark);
    if (sf)
        pass_reason(c, x, was, order, norder, sf, x->why);
    else
        preason_gang_room(c, x->g, x->pool, x->npool, was->sub, was->total, NULL, -1, order,
                          norder, x->why);
    preason_text(x->why, why, len);
}

static int place_greedy(struct policy_cluster *c, const int32_t *order, size_t norder,
                        struct pmissing *m, const struct pplace_filter *f,
                        struct pstatement *st, char *why, size_t len, void *ctx_)
{
    const struct place_ctx *x = ctx_;
    int32_t stack[16];
    struct pmissing was;
    struct shortfall sf;
    size_t mark = st->n;
    int rc;

    if (!x->why)
        return place_missing(c, x->g, x->pool, x->npool, m, f, x->strategy, order, norder, st,
                             &sf);
    if (!missing_before(x->g, m, &was, stack)) {
        no_memory(x->why, x->g->key);
        preason_text(x->why, why, len);
        return -1;
    }
    rc = place_missing(c, x->g, x->pool, x->npool, m, f, x->strategy, order, norder, st, &sf);
    if (rc != 0)
        pass_failed(c, x, &was, order, norder, st, mark, &sf, why, len);
    if (was.sub != stack)
        free(was.sub);
    return rc;
}

static int place_by_search(struct policy_cluster *c, const int32_t *order, size_t norder,
                           struct pmissing *m, const struct pplace_filter *f,
                           struct pstatement *st, char *why, size_t len, void *ctx_)
{
    const struct place_ctx *x = ctx_;
    struct search_state d = {.c = c, .g = x->g, .pool = x->pool, .npool = x->npool, .m = m,
                             .f = f, .order = order, .norder = norder, .st = st,
                             .budget = SEARCH_BUDGET};
    int32_t stack[16];
    struct pmissing was;
    bool ok;

    if (!x->why)
        return search_from(&d, 0) ? 0 : -1;
    if (!missing_before(x->g, m, &was, stack)) {
        no_memory(x->why, x->g->key);
        preason_text(x->why, why, len);
        return -1;
    }
    ok = search_from(&d, 0);
    if (!ok)
        pass_failed(c, x, &was, order, norder, st, st->n, NULL, why, len);
    if (was.sub != stack)
        free(was.sub);
    return ok ? 0 : -1;
}

/* Does every subgroup have the pods its minimum needs, and the gang as many as its own? */
static bool members_exist(const struct policy_cluster *c, struct pgang *g, struct ppod **pool,
                          size_t npool, const int32_t *have, int32_t placed, int32_t *msub,
                          int32_t *subs_need, struct preason *why)
{
    int32_t members;

    for (size_t s = 0; s < g->nsubs; s++) {
        int32_t avail = 0;

        msub[s] = g->subs[s].min - have[s] > 0 ? g->subs[s].min - have[s] : 0;
        *subs_need += msub[s];
        for (size_t i = 0; i < npool; i++)
            avail += pool[i]->sub == (int32_t)s;
        if (avail < msub[s]) {
            if (why) {
                preason_init(why, POLICY_REASON_MEMBERS, g->key);
                pgang_sub_label(g, (int32_t)s, why->sub, sizeof(why->sub));
                why->r.have = have[s] + avail;
                why->r.want = g->subs[s].min;
            }
            return false;
        }
    }
    pgang_counts(c, g, &members, NULL, NULL, NULL);
    if (placed + (int32_t)npool < pgang_min(c, g)) {
        if (why) {
            preason_init(why, POLICY_REASON_MEMBERS, g->key);
            why->r.have = members;
            why->r.want = pgang_min(c, g);
        }
        return false;
    }
    return true;
}

/*
 * One pass over the pending members, heaviest or lightest first, placed into st whole or not
 * at all. *spare: some pending member was left out (another pass may choose differently).
 */
static int plan_choice(struct policy_cluster *c, struct pgang *g, const struct ppod *must,
                       enum choice how, enum policy_strategy strategy, bool search,
                       struct pstatement *st, bool *spare, enum preason_kind *kind,
                       struct preason *why)
{
    int32_t stack[16], *have = g->nsubs <= 16 ? stack : calloc(g->nsubs, sizeof(*have));
    int32_t stack_m[16], *msub = g->nsubs <= 16 ? stack_m : calloc(g->nsubs, sizeof(*msub));
    struct ppod **pool = malloc((g->nmembers ? g->nmembers : 1) * sizeof(*pool));
    struct choice_order cmp = {.c = c, .must = must, .how = how};
    struct pmissing m = {.sub = msub};
    struct policy_resources estimate;
    size_t npool = 0, norder = 0, mark = st->n, valid = 0;
    int32_t placed, subs_need = 0, *order = NULL;
    char text[POLICY_REASON_LEN] = "";
    int rc = -1;

    *kind = PREASON_MEMBERS;
    *spare = false;
    if (!have || !msub || !pool) {
        no_memory(why, g->key);
        goto out;
    }
    placed = pgang_tally(c, g, PGANG_PLACED, have);
    for (size_t i = 0; i < g->nmembers; i++) {
        struct ppod *p = ppod_at(c, g->members[i]);

        if (p && p->phase == POLICY_POD_PENDING)
            pool[npool++] = p;
    }
    qsort_r(pool, npool, sizeof(*pool), cmp_choice, &cmp);
    if (!members_exist(c, g, pool, npool, have, placed, msub, &subs_need, why))
        goto out;
    m.total = pgang_min(c, g) - placed;
    if (m.total <= 0) {
        rc = 0;
        goto out;
    }
    m.slack = m.total - subs_need;
    *spare = npool > (size_t)m.total;
    /* Members that could never run come last in the pool: one is needed only if the rest
     * cannot meet the minimum. */
    for (size_t i = 0; i < npool; i++)
        valid += ppod_ask_valid(pool[i], NULL, 0);
    if (valid < (size_t)m.total || !subgroups_met_by_valid(g, pool, npool, msub)) {
        for (size_t i = 0; i < npool; i++)
            if (member_invalid(g, pool[i], why)) {
                *kind = PREASON_INVALID;
                goto out;
            }
    }
    least_need(c, pool, npool, g, &m, &estimate);
    *kind = PREASON_QUEUE;
    if (pqueue_room(c, g, pgang_queue(c, g), &estimate, why) != 0)
        goto out;
    *kind = PREASON_CAPACITY;
    if (!(order = pnode_order_every(c, &norder))) {
        no_memory(why, g->key);
        goto out;
    }
    ptopo_observe(c, g);
    rc = ptopo_place(c, g, pool, npool, &m, order, norder, st,
                     search ? place_by_search : place_greedy,
                     &(struct place_ctx){.g = g, .pool = pool, .npool = npool,
                                         .strategy = strategy, .why = why},
                     text, sizeof(text));
    if (rc != 0) {
        if (rc == -2)
            *kind = PREASON_MEMBERS; /* a Topology it names is not known: no room helps */
        /* Within the domains it asks for, topology.c says why in its own words (a pass's
         * reason, said of one domain, among them): the reason is those words. */
        if (why && (rc == -2 || c->topo_fence || ptopo_constrained(g))) {
            preason_init(why, POLICY_REASON_TOPOLOGY, g->key);
            preason_detail(why, "%s", text);
        }
        rc = -1;
        pstatement_rollback(c, st, mark);
        goto out;
    }
    rc = 0;
out:
    if (have != stack)
        free(have);
    if (msub != stack_m)
        free(msub);
    free(pool);
    free(order);
    return rc;
}

/*
 * A count is met by any of the gang's pods, a subgroup's minimum by any of its own: the
 * heaviest choice is tried first (the extras left are the light ones), and where it does not
 * fit, or its queue's limit refuses it, the lightest. Greedy passes can miss: a strategy that
 * spreads (a fresh GPU first) or prices fragmentation may scatter shares so that the last
 * member finds no device, or the heaviest-first order may block a member a different node
 * would have taken. Where neither pass fits for want of room, a bounded exhaustive search
 * over members, nodes and GPU groups (the tightest, or a device of its own) decides. When
 * nothing fits, the lightest pass's reason is the gang's: it is what the gang asks at least.
 */
int pplan_gang_try(struct policy_cluster *c, struct pgang *g, const struct ppod *must,
                   struct pstatement *st, enum preason_kind *kind, struct preason *why)
{
    struct policy_reason limited = {.limit_resource = -1};
    bool spare = false;
    int rc;

    if (!g->singleton && !pgang_declared(g)) {
        /* Its size is unknown until its RayCluster or PodGroup is seen: planning
         * the members that exist now could place a gang in part. */
        *kind = PREASON_MEMBERS;
        if (why)
            preason_init(why, POLICY_REASON_UNDECLARED, g->key);
        return -1;
    }
    rc = plan_choice(c, g, must, CHOOSE_HEAVIEST, c->opts.strategy, false, st, &spare, kind,
                     why);
    if (rc == 0)
        return 0;
    if (*kind == PREASON_MEMBERS || *kind == PREASON_INVALID)
        goto explain;
    rc = -1;
    if (why && why->r.kind == POLICY_REASON_QUEUE_LIMIT)
        limited = why->r;
    if (spare && plan_choice(c, g, must, CHOOSE_LIGHTEST, c->opts.strategy, false, st, &spare,
                             kind, why) == 0)
        return 0;
    if (*kind == PREASON_CAPACITY) {
        enum preason_kind k;

        if (plan_choice(c, g, must, CHOOSE_HEAVIEST, c->opts.strategy, true, st, &spare, &k,
                        NULL) == 0)
            return 0;
    }
    /* The lighter choice found no room, a heavier one its queue's limit: both are the reason. */
    if (why && why->r.kind == POLICY_REASON_GANG_ROOM && limited.kind == POLICY_REASON_QUEUE_LIMIT) {
        why->r.queue = limited.queue;
        why->r.limit_resource = limited.resource;
        why->r.cap = limited.cap;
        why->r.used = limited.used;
        why->r.asked = limited.asked;
    }
explain:
    /* A RayJob's or RayService's cluster says whose it is: its key is KubeRay's name. */
    powner_explain(c, g, why);
    return rc;
}

int pplan_gang(struct policy_cluster *c, struct pgang *g, const struct ppod *must, int64_t now)
{
    struct pstatement st = {0};
    struct preason why;
    enum preason_kind kind;
    int rc = pplan_gang_try(c, g, must, &st, &kind, &why);

    if (rc != 0) {
        pstatement_discard(c, &st);
        pgang_waits_for(c, g, &why);
        return -1;
    }
    pstatement_keep(&st);
    g->planned = true;
    pgang_unmark_waiting(c, g);
    pgang_plan_renew(c, g, now);
    pgang_set_reason(g, NULL);
    return 0;
}

int pplan_one_try(struct policy_cluster *c, struct ppod *p, const char *const *candidates,
                  size_t ncandidates, struct pstatement *st, struct preason *why)
{
    size_t nids = 0, cursor = 0;
    int32_t *ids = candidate_ids(c, candidates, ncandidates, &nids);
    int32_t *order = malloc((nids ? nids : 1) * sizeof(*order));
    struct preason queue_why;
    int rc = -1;

    if (!ids || !order) {
        no_memory(why, ppod_gang(c, p)->key);
        goto out;
    }
    pnode_order(c, ids, nids, order);
    rc = place_one(c, p, c->opts.strategy, order, nids, &cursor, st, &queue_why);
    if (rc != 0 && why) {
        if (queue_why.r.kind != POLICY_REASON_NONE)
            *why = queue_why;
        else
            no_node_reason(c, p, order, nids, candidates && nids < c->nodes.n - c->nodes.nfree,
                           why);
    }
out:
    free(ids);
    free(order);
    return rc;
}

int pplan_move(struct policy_cluster *c, struct ppod *p, const char *const *candidates,
               size_t ncandidates, struct preason *why)
{
    struct pstatement st = {0};
    enum policy_pod_phase phase = p->phase;

    if (p->place.node >= 0 && pstatement_lift(c, &st, p, POLICY_POD_PENDING) != POLICY_OK) {
        no_memory(why, ppod_gang(c, p)->key);
        return -1;
    }
    if (pplan_one_try(c, p, candidates, ncandidates, &st, why) != 0) {
        pstatement_discard(c, &st);
        return -1;
    }
    if (phase != POLICY_POD_PENDING)
        p->phase = phase; /* a planned or held member keeps its phase where it moves */
    pstatement_keep(&st);
    return 0;
}
