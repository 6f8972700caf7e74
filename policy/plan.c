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
static bool find_place(const struct policy_cluster *c, const struct ppod *p, const int32_t *order,
                       size_t n, size_t *cursor, struct pplace *out, char *queue_why,
                       size_t queue_len)
{
    bool spread = c->opts.strategy == POLICY_SPREAD;
    const struct pgang *g = ppod_gang(c, p);

    if (c->opts.strategy == POLICY_FRAGMENTATION) {
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
        if (!pfit_static(node, p, &w) || !pfit_resources(node, p, c->opts.strategy, out, &w) ||
            !queue_admits(c, g, p, out, queue_why, queue_len))
            continue;
        out->node = order[i];
        *cursor = spread ? (i + 1) % n : i;
        return true;
    }
    return false;
}

void pstatement_cleanup(struct pstatement *st)
{
    free(st->pods);
    memset(st, 0, sizeof(*st));
}

void pstatement_keep(struct pstatement *st)
{
    for (size_t i = 0; i < st->n; i++)
        pset_str(&st->pods[i]->reason, NULL);
    pstatement_cleanup(st);
}

/* Undo every placement of the statement, last first. */
void pstatement_discard(struct policy_cluster *c, struct pstatement *st)
{
    while (st->n > 0) {
        struct ppod *p = st->pods[--st->n];

        puncharge(c, p);
        p->phase = POLICY_POD_PENDING;
        p->extra = false;
    }
}

static int statement_add(struct pstatement *st, struct ppod *p)
{
    if (st->n == st->cap) {
        size_t cap = st->cap ? st->cap * 2 : 16;
        struct ppod **v = realloc(st->pods, cap * sizeof(*v));

        if (!v)
            return POLICY_ENOMEM;
        st->pods = v;
        st->cap = cap;
    }
    st->pods[st->n++] = p;
    return POLICY_OK;
}

/* Place p on a node of order and record it in st; why says why not. */
static int place_one(struct policy_cluster *c, struct ppod *p, const int32_t *order, size_t norder,
                     size_t *cursor, struct pstatement *st, char *why, size_t len)
{
    char queue_why[POLICY_REASON_LEN] = "";
    struct pplace pl;

    if (!find_place(c, p, order, norder, cursor, &pl, queue_why, sizeof(queue_why))) {
        if (*queue_why)
            snprintf(why, len, "%s", queue_why);
        else
            no_node_reason(c, p, order, norder, why, len);
        return -1;
    }
    if (statement_add(st, p) != POLICY_OK) {
        snprintf(why, len, "out of memory while planning");
        return -1;
    }
    p->phase = POLICY_POD_PLANNED;
    pcharge(c, p, &pl);
    return 0;
}

/* "gang lab/rc: worker group gpu needs 3 x 1 GPU, 2 free" when p's subgroup did not fit. */
static void subgroup_reason(const struct pgang *g, struct ppod *const *members, size_t n,
                            const struct ppod *failed, const char *detail, char *why, size_t len)
{
    char label[128], ask[64];
    int32_t want = 0, placed = 0;

    if (g->nsubs == 0 || failed->sub < 0) {
        snprintf(why, len, "%s", detail);
        return;
    }
    for (size_t i = 0; i < n; i++) {
        if (members[i]->sub != failed->sub || !ppod_same_shape(members[i], failed))
            continue;
        want++;
        placed += members[i]->phase == POLICY_POD_PLANNED;
    }
    pgang_sub_label(g, failed->sub, label, sizeof(label));
    ppod_ask_text(failed, ask, sizeof(ask));
    snprintf(why, len, "gang %s: %s needs %d x %s, %d free (%s)", g->key, label, want, ask, placed,
             detail);
}

/* Place members in order; same-shaped neighbours continue from one cursor. */
int pplace_members(struct policy_cluster *c, const struct pgang *g, struct ppod **members,
                   size_t n, const int32_t *order, size_t norder, struct pstatement *st,
                   char *why, size_t len)
{
    const struct ppod *prev = NULL;
    size_t cursor = 0;

    for (size_t i = 0; i < n; i++) {
        struct ppod *p = members[i];
        char detail[POLICY_REASON_LEN];

        if (!prev || !ppod_same_shape(prev, p))
            cursor = 0;
        if (place_one(c, p, order, norder, &cursor, st, detail, sizeof(detail)) != 0) {
            subgroup_reason(g, members, n, p, detail, why, len);
            return -1;
        }
        prev = p;
    }
    return 0;
}

static int64_t ask_weight(const struct ppod *p)
{
    return p->gpus * POLICY_GPU_MILLI + (int64_t)p->share * (p->devices ? p->devices : 1);
}

/* qsort_r order of members; must (may be NULL) is the asking pod, preferred among equals. */
static int cmp_member(const void *a, const void *b, void *must_)
{
    const struct ppod *x = *(struct ppod *const *)a, *y = *(struct ppod *const *)b;
    const struct ppod *must = must_;

    if (x->head != y->head)
        return x->head ? -1 : 1;
    if (ask_weight(x) != ask_weight(y))
        return ask_weight(x) > ask_weight(y) ? -1 : 1;
    if (x->gpu_memory_mib != y->gpu_memory_mib)
        return x->gpu_memory_mib > y->gpu_memory_mib ? -1 : 1;
    if (x->cpu != y->cpu)
        return x->cpu > y->cpu ? -1 : 1;
    if (x->memory != y->memory)
        return x->memory > y->memory ? -1 : 1;
    if ((x == must) != (y == must))
        return x == must ? -1 : 1;
    return x->arrival < y->arrival ? -1 : x->arrival > y->arrival;
}

void pmembers_need(const struct ppod *const *members, size_t n, bool placed,
                   struct policy_resources *need)
{
    memset(need, 0, sizeof(*need));
    for (size_t i = 0; i < n; i++) {
        struct policy_resources r;

        ppod_charge_resources(members[i], placed ? members[i]->place.share : members[i]->share,
                              &r);
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

/* Take up to want pending members of subgroup sub (-2 = any) from pool into out. */
static size_t take_pending(struct ppod **pool, size_t npool, int32_t sub, int32_t want,
                           struct ppod **out, size_t nout)
{
    for (size_t i = 0; i < npool && want > 0; i++) {
        if (!pool[i] || (sub != -2 && pool[i]->sub != sub))
            continue;
        out[nout++] = pool[i];
        pool[i] = NULL;
        want--;
    }
    return nout;
}

/*
 * The pending members the gang's minimum still needs: per subgroup what is
 * missing of its minimum, then more of any subgroup up to the whole minimum.
 * The asking pod is preferred only where there are more pods than needed; the
 * choice is otherwise the same whoever asks, so a gang that does not fit gets
 * the same reason from every member.
 */
static int choose_minimum(struct policy_cluster *c, struct pgang *g, const struct ppod *must,
                          struct ppod ***out, size_t *nout, char *why, size_t len)
{
    int32_t stack[16], *have = g->nsubs <= 16 ? stack : calloc(g->nsubs, sizeof(*have));
    struct ppod **pool = malloc((g->nmembers ? g->nmembers : 1) * sizeof(*pool));
    struct ppod **chosen = malloc((g->nmembers ? g->nmembers : 1) * sizeof(*chosen));
    int32_t placed = 0, members;
    size_t npool = 0, n = 0;
    int rc = -1;

    if (!have || !pool || !chosen) {
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
    qsort_r(pool, npool, sizeof(*pool), cmp_member, (void *)must);
    for (size_t s = 0; s < g->nsubs; s++) {
        int32_t missing = g->subs[s].min - have[s];
        size_t before = n;

        if (missing <= 0)
            continue;
        n = take_pending(pool, npool, (int32_t)s, missing, chosen, n);
        if ((int32_t)(n - before) < missing) {
            char label[128];

            pgang_sub_label(g, (int32_t)s, label, sizeof(label));
            snprintf(why, len, "gang %s: %s has %d of %d pods", g->key, label,
                     have[s] + (int32_t)(n - before), g->subs[s].min);
            goto out;
        }
    }
    if (placed + (int32_t)n < pgang_min(c, g)) {
        n = take_pending(pool, npool, -2, pgang_min(c, g) - placed - (int32_t)n, chosen, n);
        if (placed + (int32_t)n < pgang_min(c, g)) {
            snprintf(why, len, "gang %s: %d of %d members exist", g->key, members,
                     pgang_min(c, g));
            goto out;
        }
    }
    qsort_r(chosen, n, sizeof(*chosen), cmp_member, NULL);
    *out = chosen;
    *nout = n;
    chosen = NULL;
    rc = 0;
out:
    if (have != stack)
        free(have);
    free(pool);
    free(chosen);
    return rc;
}

int pplan_gang_try(struct policy_cluster *c, struct pgang *g, const struct ppod *must,
                   struct pstatement *st, enum preason_kind *kind, char *why, size_t len)
{
    struct ppod **chosen = NULL;
    struct policy_resources estimate;
    size_t n = 0, norder = 0, mark = st->n;
    int32_t *order = NULL;
    int rc = -1;

    *kind = PREASON_MEMBERS;
    if (!g->singleton && !pgang_declared(g)) {
        /* Its size is unknown until its RayCluster or PodGroup is seen: planning
         * the members that exist now could place a gang in part. */
        snprintf(why, len, "gang %s: its RayCluster or PodGroup is not known yet", g->key);
        return -1;
    }
    if (choose_minimum(c, g, must, &chosen, &n, why, len) != 0)
        return -1;
    if (n == 0) {
        free(chosen);
        return 0;
    }
    for (size_t i = 0; i < n; i++) {
        if (member_invalid(chosen[i], why, len)) {
            *kind = PREASON_INVALID;
            goto out;
        }
    }
    pmembers_need((const struct ppod *const *)chosen, n, false, &estimate);
    if (pqueue_room(c, g, pgang_queue(c, g), &estimate, kind, why, len) != 0)
        goto out;
    *kind = PREASON_CAPACITY;
    if (!(order = pnode_order_every(c, &norder))) {
        snprintf(why, len, "out of memory while planning");
        goto out;
    }
    if (ptopo_place(c, g, chosen, n, order, norder, st, why, len) != 0) {
        while (st->n > mark) {
            struct ppod *p = st->pods[--st->n];

            puncharge(c, p);
            p->phase = POLICY_POD_PENDING;
        }
        goto out;
    }
    rc = 0;
out:
    free(chosen);
    free(order);
    return rc;
}

int pplan_gang(struct policy_cluster *c, struct pgang *g, const struct ppod *must, int64_t now)
{
    struct pstatement st = {0};
    char why[POLICY_REASON_LEN];
    enum preason_kind kind;
    int rc = pplan_gang_try(c, g, must, &st, &kind, why, sizeof(why));

    if (rc != 0) {
        pstatement_cleanup(&st);
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
    rc = place_one(c, p, order, nids, &cursor, st, why, len);
out:
    free(ids);
    free(order);
    return rc;
}

enum preason_kind pplan_reason_kind(const char *why)
{
    return strncmp(why, "queue ", 6) == 0 ? PREASON_QUEUE : PREASON_CAPACITY;
}

int pplan_one(struct policy_cluster *c, struct ppod *p, const char *const *candidates,
              size_t ncandidates, char *why, size_t len)
{
    struct pstatement st = {0};
    int rc = pplan_one_try(c, p, candidates, ncandidates, &st, why, len);

    pstatement_cleanup(&st);
    return rc;
}
