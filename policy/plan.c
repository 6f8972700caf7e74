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

/* Explain why no node of `order` takes p: one reason, or counts per reason. */
static void no_node_reason(const struct policy_cluster *c, const struct ppod *p,
                           const int32_t *order, size_t n, char *why, size_t len)
{
    size_t counts[PFIT_COUNT] = {0};
    char ask[64];
    size_t off, kinds = 0;
    int last = PFIT_OK;

    ppod_ask_text(p, ask, sizeof(ask));
    for (size_t i = 0; i < n; i++) {
        const struct pnode *node = pnode_at(c, order[i]);
        enum pfit_why w;
        struct pplace pl;

        if (pfit_static(node, p, &w) && pfit_resources(node, p, c->opts.strategy, &pl, &w))
            continue;
        if (counts[w]++ == 0) {
            kinds++;
            last = w;
        }
    }
    if (n == 0) {
        snprintf(why, len, "member %s (%s): no nodes to choose from", p->name, ask);
        return;
    }
    if (kinds == 1) {
        snprintf(why, len, "member %s (%s): no node %s", p->name, ask, pfit_summary_text(last));
        return;
    }
    off = (size_t)snprintf(why, len, "member %s (%s): 0/%zu nodes fit:", p->name, ask, n);
    for (int w = 1; w < PFIT_COUNT && off < len; w++)
        if (counts[w])
            off += (size_t)snprintf(why + off, len - off, " %zu %s;", counts[w], pfit_text(w));
    if (off < len && why[off - 1] == ';')
        why[off - 1] = '\0';
}

/* Does p's queue have room for what it takes on that place (a gpu-memory share differs by node)? */
static bool queue_admits(const struct policy_cluster *c, const struct pgang *g,
                         const struct ppod *p, const struct pplace *pl, char *queue_why,
                         size_t queue_len)
{
    struct policy_resources need;
    enum preason_kind kind;

    if (!p->managed)
        return true;
    ppod_charge_resources(p, pl->share, &need);
    return pqueue_room(c, g, p->queue, &need, &kind, queue_why, queue_len) == 0;
}

/*
 * The first node of order, from *cursor on, that takes p and whose exact
 * charge its queue allows. A queue refusal (on every node that had room) is
 * written into queue_why.
 */
static bool find_place(const struct policy_cluster *c, const struct ppod *p,
                       enum policy_strategy strategy, const int32_t *order, size_t n,
                       size_t *cursor, struct pplace *out, char *queue_why, size_t queue_len)
{
    bool spread = strategy == POLICY_SPREAD;
    const struct pgang *g = ppod_gang(c, p);

    if (strategy == POLICY_FRAGMENTATION) {
        /* Every node priced (frag.c); if the queue has no room there, any node it has room on. */
        if (!pfrag_find_place(c, p, order, n, out))
            return false;
        if (queue_admits(c, g, p, out, queue_why, queue_len))
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
            !queue_admits(c, g, p, out, queue_why, queue_len))
            continue;
        out->node = order[i];
        *cursor = spread ? (i + 1) % n : i;
        return true;
    }
    return false;
}

/* Place p on a node of order and record it in st; why says why not. */
static int place_one(struct policy_cluster *c, struct ppod *p, enum policy_strategy strategy,
                     const int32_t *order, size_t norder, size_t *cursor, struct pstatement *st,
                     char *why, size_t len)
{
    char queue_why[POLICY_REASON_LEN] = "";
    struct pplace pl;

    if (!find_place(c, p, strategy, order, norder, cursor, &pl, queue_why, sizeof(queue_why))) {
        if (*queue_why)
            snprintf(why, len, "%s", queue_why);
        else
            no_node_reason(c, p, order, norder, why, len);
        return -1;
    }
    if (pstatement_place(c, st, p, &pl) != POLICY_OK) {
        snprintf(why, len, "out of memory while planning");
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

static bool member_invalid(const struct ppod *p, char *why, size_t len)
{
    char detail[POLICY_REASON_LEN];

    if (ppod_ask_valid(p, detail, sizeof(detail)))
        return false;
    snprintf(why, len, "member %s: %s", p->name, detail);
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


/* "gang lab/rc: worker group gpu needs 3 x 1 GPU, only 2 could be placed (member ...)" */
static void short_reason(const struct pgang *g, int32_t sub, int32_t want, int32_t got,
                         const struct ppod *failed, const char *detail, char *why, size_t len)
{
    char label[128], ask[64];

    if (!failed) {
        snprintf(why, len, "gang %s: %s", g->key, detail);
        return;
    }
    ppod_ask_text(failed, ask, sizeof(ask));
    if (sub < 0) {
        snprintf(why, len, "gang %s needs %d more members, only %d could be placed (%s)", g->key,
                 want, got, detail);
        return;
    }
    pgang_sub_label(g, sub, label, sizeof(label));
    snprintf(why, len, "gang %s: %s needs %d x %s, only %d could be placed (%s)", g->key, label,
             want, ask, got, detail);
}

/*
 * Place the members the gang's minimum misses, going down the pool in order: a member whose
 * subgroup still misses some, or that fills what the whole minimum misses beyond the
 * subgroups', is placed if it can be; one that cannot is passed over for the next. Same-shaped
 * neighbours continue from one cursor.
 */
static int place_missing(struct policy_cluster *c, const struct pgang *g, struct ppod **pool,
                         size_t npool, struct pmissing *m, const struct pplace_filter *f,
                         enum policy_strategy strategy, const int32_t *order, size_t norder,
                         struct pstatement *st, char *why, size_t len)
{
    int32_t want_sub = -2, want, got = 0;
    const struct ppod *prev = NULL, *failed = NULL;
    char detail[POLICY_REASON_LEN] = "", first[POLICY_REASON_LEN] = "";
    size_t cursor = 0;

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
        if (place_one(c, p, strategy, order, norder, &cursor, st, detail, sizeof(detail)) != 0) {
            if (!failed) {
                failed = p;
                snprintf(first, sizeof(first), "%s", detail);
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
    /* Who is short: the first subgroup still missing members, else the whole minimum; how
     * many of its pool were placed before the pass ran out. */
    for (size_t s = 0; s < g->nsubs && want_sub == -2; s++)
        if (m->sub[s] > 0)
            want_sub = (int32_t)s;
    for (size_t i = 0; i < npool; i++)
        if ((want_sub < 0 || pool[i]->sub == want_sub) && pool[i]->phase == POLICY_POD_PLANNED &&
            pplace_filter_takes(f, pool[i]))
            got++;
    want = got + (want_sub >= 0 ? m->sub[want_sub] : m->total);
    if (failed && want_sub >= 0 && failed->sub != want_sub) {
        for (size_t i = 0; i < npool; i++)
            if (pool[i]->sub == want_sub && pool[i]->phase == POLICY_POD_PENDING &&
                pplace_filter_takes(f, pool[i])) {
                failed = pool[i];
                break;
            }
    }
    short_reason(g, want_sub >= 0 ? want_sub : -1, want, got, failed,
                 failed ? first : "not enough members", why, len);
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
    char queue_why[POLICY_REASON_LEN];
    enum pfit_why w;
    struct pplace pl;
    size_t mark = d->st->n;

    if (--d->budget <= 0 || !pfit_resources(n, p, strategy, &pl, &w))
        return false;
    pl.node = node;
    if (!queue_admits(d->c, d->g, p, &pl, queue_why, sizeof(queue_why)) ||
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
};

static int place_greedy(struct policy_cluster *c, const int32_t *order, size_t norder,
                        struct pmissing *m, const struct pplace_filter *f,
                        struct pstatement *st, char *why, size_t len, void *ctx_)
{
    const struct place_ctx *x = ctx_;

    return place_missing(c, x->g, x->pool, x->npool, m, f, x->strategy, order, norder, st, why,
                         len);
}

static int place_by_search(struct policy_cluster *c, const int32_t *order, size_t norder,
                           struct pmissing *m, const struct pplace_filter *f,
                           struct pstatement *st, char *why, size_t len, void *ctx_)
{
    const struct place_ctx *x = ctx_;
    struct search_state d = {.c = c, .g = x->g, .pool = x->pool, .npool = x->npool, .m = m,
                             .f = f, .order = order, .norder = norder, .st = st,
                             .budget = SEARCH_BUDGET};

    if (search_from(&d, 0))
        return 0;
    snprintf(why, len, "gang %s: no choice of its members fits", x->g->key);
    return -1;
}

/*
 * One pass over the pending members, heaviest or lightest first, placed into st whole or not
 * at all. *spare: some pending member was left out (another pass may choose differently).
 */
static int plan_choice(struct policy_cluster *c, struct pgang *g, const struct ppod *must,
                       enum choice how, enum policy_strategy strategy, bool search,
                       struct pstatement *st, bool *spare, enum preason_kind *kind, char *why,
                       size_t len)
{
    int32_t stack[16], *have = g->nsubs <= 16 ? stack : calloc(g->nsubs, sizeof(*have));
    int32_t stack_m[16], *msub = g->nsubs <= 16 ? stack_m : calloc(g->nsubs, sizeof(*msub));
    struct ppod **pool = malloc((g->nmembers ? g->nmembers : 1) * sizeof(*pool));
    struct choice_order cmp = {.c = c, .must = must, .how = how};
    struct pmissing m = {.sub = msub};
    struct policy_resources estimate;
    size_t npool = 0, norder = 0, mark = st->n, valid = 0;
    int32_t placed, members, subs_need = 0, *order = NULL;
    int rc = -1;

    *kind = PREASON_MEMBERS;
    *spare = false;
    if (!have || !msub || !pool) {
        snprintf(why, len, "out of memory while planning");
        goto out;
    }
    placed = pgang_tally(c, g, PGANG_PLACED, have);
    pgang_counts(c, g, &members, NULL, NULL, NULL);
    for (size_t i = 0; i < g->nmembers; i++) {
        struct ppod *p = ppod_at(c, g->members[i]);

        if (p && p->phase == POLICY_POD_PENDING)
            pool[npool++] = p;
    }
    qsort_r(pool, npool, sizeof(*pool), cmp_choice, &cmp);
    for (size_t s = 0; s < g->nsubs; s++) {
        int32_t avail = 0;

        msub[s] = g->subs[s].min - have[s] > 0 ? g->subs[s].min - have[s] : 0;
        subs_need += msub[s];
        for (size_t i = 0; i < npool; i++)
            avail += pool[i]->sub == (int32_t)s;
        if (avail < msub[s]) {
            char label[128];

            pgang_sub_label(g, (int32_t)s, label, sizeof(label));
            snprintf(why, len, "gang %s: %s has %d of %d pods", g->key, label, have[s] + avail,
                     g->subs[s].min);
            goto out;
        }
    }
    m.total = pgang_min(c, g) - placed;
    if (m.total <= 0) {
        rc = 0;
        goto out;
    }
    if (placed + (int32_t)npool < pgang_min(c, g)) {
        snprintf(why, len, "gang %s: %d of %d members exist", g->key, members, pgang_min(c, g));
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
            if (member_invalid(pool[i], why, len)) {
                *kind = PREASON_INVALID;
                goto out;
            }
    }
    least_need(c, pool, npool, g, &m, &estimate);
    if (pqueue_room(c, g, pgang_queue(c, g), &estimate, kind, why, len) != 0)
        goto out;
    *kind = PREASON_CAPACITY;
    if (!(order = pnode_order_every(c, &norder))) {
        snprintf(why, len, "out of memory while planning");
        goto out;
    }
    ptopo_observe(c, g);
    rc = ptopo_place(c, g, pool, npool, &m, order, norder, st,
                     search ? place_by_search : place_greedy,
                     &(struct place_ctx){.g = g, .pool = pool, .npool = npool,
                                         .strategy = strategy},
                     why, len);
    if (rc != 0) {
        if (rc == -2)
            *kind = PREASON_MEMBERS; /* a Topology it names is not known: no room helps */
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
                   struct pstatement *st, enum preason_kind *kind, char *why, size_t len)
{
    bool spare = false;
    int rc;

    if (!g->singleton && !pgang_declared(g)) {
        /* Its size is unknown until its RayCluster or PodGroup is seen: planning
         * the members that exist now could place a gang in part. */
        *kind = PREASON_MEMBERS;
        snprintf(why, len, "gang %s: its RayCluster or PodGroup is not known yet", g->key);
        return -1;
    }
    rc = plan_choice(c, g, must, CHOOSE_HEAVIEST, c->opts.strategy, false, st, &spare, kind, why,
                     len);
    if (rc == 0)
        return 0;
    if (*kind != PREASON_MEMBERS && *kind != PREASON_INVALID) {
        if (spare && plan_choice(c, g, must, CHOOSE_LIGHTEST, c->opts.strategy, false, st, &spare,
                                 kind, why, len) == 0)
            return 0;
        if (*kind == PREASON_CAPACITY) {
            char searched[POLICY_REASON_LEN];
            enum preason_kind k;

            if (plan_choice(c, g, must, CHOOSE_HEAVIEST, c->opts.strategy, true, st, &spare, &k,
                            searched, sizeof(searched)) == 0)
                return 0;
        }
    }
    /* A RayJob's or RayService's cluster says whose it is: its key is KubeRay's name. */
    powner_explain(c, g, why, len);
    return -1;
}

int pplan_gang(struct policy_cluster *c, struct pgang *g, const struct ppod *must, int64_t now)
{
    struct pstatement st = {0};
    char why[POLICY_REASON_LEN];
    enum preason_kind kind;
    int rc = pplan_gang_try(c, g, must, &st, &kind, why, sizeof(why));

    if (rc != 0) {
        pstatement_discard(c, &st);
        pgang_set_reason(g, kind, why);
        pgang_tell_pending(c, g, why);
        return -1;
    }
    pstatement_keep(&st);
    g->planned = true;
    pgang_unmark_waiting(c, g);
    pgang_plan_renew(c, g, now);
    pgang_set_reason(g, PREASON_NONE, NULL);
    return 0;
}

int pplan_one_try(struct policy_cluster *c, struct ppod *p, const char *const *candidates,
                  size_t ncandidates, struct pstatement *st, char *why, size_t len)
{
    size_t nids = 0, cursor = 0;
    int32_t *ids = candidate_ids(c, candidates, ncandidates, &nids);
    int32_t *order = malloc((nids ? nids : 1) * sizeof(*order));
    int rc = -1;

    if (!ids || !order) {
        snprintf(why, len, "out of memory while planning");
        goto out;
    }
    pnode_order(c, ids, nids, order);
    rc = place_one(c, p, c->opts.strategy, order, nids, &cursor, st, why, len);
out:
    free(ids);
    free(order);
    return rc;
}

enum preason_kind pplan_reason_kind(const char *why)
{
    return strncmp(why, "queue ", 6) == 0 ? PREASON_QUEUE : PREASON_CAPACITY;
}

int pplan_move(struct policy_cluster *c, struct ppod *p, const char *const *candidates,
               size_t ncandidates, char *why, size_t len)
{
    struct pstatement st = {0};
    enum policy_pod_phase phase = p->phase;

    if (p->place.node >= 0 && pstatement_lift(c, &st, p, POLICY_POD_PENDING) != POLICY_OK) {
        snprintf(why, len, "out of memory while planning");
        return -1;
    }
    if (pplan_one_try(c, p, candidates, ncandidates, &st, why, len) != 0) {
        pstatement_discard(c, &st);
        return -1;
    }
    if (phase != POLICY_POD_PENDING)
        p->phase = phase; /* a planned or held member keeps its phase where it moves */
    pstatement_keep(&st);
    return 0;
}
