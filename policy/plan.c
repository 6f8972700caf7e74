/*
 * plan.c - all or nothing. A gang's missing minimum members are placed in one
 * pass, head first then larger asks first, each charged as it goes so the next
 * sees the room it took; if any member finds no node, every charge of the pass
 * is undone and the gang gets one reason.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

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

struct order_key {
    int64_t score;
    int32_t id;
};

static int cmp_key_desc(const void *a, const void *b)
{
    const struct order_key *x = a, *y = b;

    if (x->score != y->score)
        return x->score > y->score ? -1 : 1;
    return x->id - y->id;
}

/* Nodes in the order the strategy tries them: binpack fullest first, spread emptiest. */
void pnode_order(const struct policy_cluster *c, const int32_t *ids, size_t n, int32_t *out)
{
    struct order_key *keys = malloc((n ? n : 1) * sizeof(*keys));
    bool spread = c->opts.strategy == POLICY_SPREAD;

    if (!keys) {
        memcpy(out, ids, n * sizeof(*ids));
        return;
    }
    for (size_t i = 0; i < n; i++) {
        int64_t s = pnode_fill_score(pnode_at(c, ids[i]));

        keys[i] = (struct order_key){spread ? -s : s, ids[i]};
    }
    qsort(keys, n, sizeof(*keys), cmp_key_desc);
    for (size_t i = 0; i < n; i++)
        out[i] = keys[i].id;
    free(keys);
}

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

/* The first node of order, from *cursor on, that takes p. */
static bool find_place(const struct policy_cluster *c, const struct ppod *p, const int32_t *order,
                       size_t n, size_t *cursor, struct pplace *out)
{
    bool spread = c->opts.strategy == POLICY_SPREAD;

    for (size_t k = 0; k < n; k++) {
        size_t i = spread ? (*cursor + k) % n : *cursor + k;
        const struct pnode *node;
        enum pfit_why w;

        if (i >= n)
            break;
        node = pnode_at(c, order[i]);
        if (!pfit_static(node, p, &w) || !pfit_resources(node, p, c->opts.strategy, out, &w))
            continue;
        out->node = order[i];
        *cursor = spread ? (i + 1) % n : i;
        return true;
    }
    return false;
}

struct statement {
    struct ppod **pods;
    size_t n;
};

static void statement_discard(struct policy_cluster *c, struct statement *st)
{
    while (st->n > 0) {
        struct ppod *p = st->pods[--st->n];

        puncharge(c, p);
        p->phase = POLICY_POD_PENDING;
    }
}

/* Place members in order; same-shaped neighbours continue from one cursor. */
static int place_members(struct policy_cluster *c, struct ppod **members, size_t n,
                         const int32_t *order, size_t norder, struct statement *st, char *why,
                         size_t len)
{
    const struct ppod *prev = NULL;
    size_t cursor = 0;

    for (size_t i = 0; i < n; i++) {
        struct ppod *p = members[i];
        struct pplace pl;

        if (!prev || !ppod_same_shape(prev, p))
            cursor = 0;
        if (!find_place(c, p, order, norder, &cursor, &pl)) {
            no_node_reason(c, p, order, norder, why, len);
            return -1;
        }
        p->phase = POLICY_POD_PLANNED;
        pcharge(c, p, &pl);
        pset_str(&p->reason, NULL);
        st->pods[st->n++] = p;
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
    const struct ppod *sort_must = must_;

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
    if ((x == sort_must) != (y == sort_must))
        return x == sort_must ? -1 : 1;
    return x->arrival < y->arrival ? -1 : x->arrival > y->arrival;
}

static void need_of(const struct ppod *const *members, size_t n, bool placed,
                    struct policy_resources *need)
{
    memset(need, 0, sizeof(*need));
    for (size_t i = 0; i < n; i++) {
        struct policy_resources r;

        ppod_charge_resources(members[i], placed ? members[i]->place.share : members[i]->share, &r);
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

/* Check the exact charge of the placed members against the queue. */
static int recheck_queue(struct policy_cluster *c, struct pgang *g, struct ppod **chosen, size_t n,
                         enum preason_kind *kind, char *why, size_t len)
{
    struct policy_resources need;
    const char *queue = pgang_queue(c, g);
    int rc;

    need_of((const struct ppod *const *)chosen, n, true, &need);
    pqueue_account(c, queue, &need, false, -1);
    rc = pqueue_admit(c, g, queue, &need, kind, why, len);
    pqueue_account(c, queue, &need, false, +1);
    return rc;
}

static int plan_chosen(struct policy_cluster *c, struct pgang *g, struct ppod **chosen, size_t n,
                       char *why, size_t len, enum preason_kind *kind)
{
    struct policy_resources estimate;
    struct statement st = {.pods = chosen ? malloc(n * sizeof(*st.pods)) : NULL};
    size_t nids = 0;
    int32_t *ids = NULL, *order = NULL;
    int rc = -1;

    for (size_t i = 0; i < n; i++) {
        if (member_invalid(chosen[i], why, len)) {
            *kind = PREASON_INVALID;
            goto out;
        }
    }
    need_of((const struct ppod *const *)chosen, n, false, &estimate);
    if (pqueue_admit(c, g, pgang_queue(c, g), &estimate, kind, why, len) != 0)
        goto out;
    ids = candidate_ids(c, NULL, 0, &nids);
    order = malloc((nids ? nids : 1) * sizeof(*order));
    if (!st.pods || !ids || !order) {
        *kind = PREASON_CAPACITY;
        snprintf(why, len, "out of memory while planning");
        goto out;
    }
    pnode_order(c, ids, nids, order);
    *kind = PREASON_CAPACITY;
    if (place_members(c, chosen, n, order, nids, &st, why, len) != 0) {
        statement_discard(c, &st);
        goto out;
    }
    if (recheck_queue(c, g, chosen, n, kind, why, len) != 0) {
        statement_discard(c, &st);
        goto out;
    }
    rc = 0;
out:
    free(st.pods);
    free(ids);
    free(order);
    return rc;
}

int pplan_gang(struct policy_cluster *c, struct pgang *g, const struct ppod *must, int64_t now)
{
    int32_t members, bound, holding, need;
    struct ppod **free_pods = malloc((g->nmembers ? g->nmembers : 1) * sizeof(*free_pods));
    size_t nfree = 0;
    char why[POLICY_REASON_LEN];
    enum preason_kind kind = PREASON_NONE;
    int rc = -1;

    if (!free_pods)
        return -1;
    if (!g->singleton && !pgang_declared(g)) {
        /* Its size is unknown until its RayCluster or PodGroup is seen: planning
         * the members that exist now could place a gang in part. */
        snprintf(why, sizeof(why), "gang %s: its RayCluster or PodGroup is not known yet", g->key);
        pgang_set_reason(g, PREASON_MEMBERS, why);
        goto out;
    }
    pgang_counts(c, g, &members, &bound, &holding, NULL);
    need = pgang_min(c, g) - bound - holding;
    if (need <= 0) {
        rc = 0;
        goto out;
    }
    for (size_t i = 0; i < g->nmembers; i++) {
        struct ppod *p = ppod_at(c, g->members[i]);

        if (p && p->phase == POLICY_POD_PENDING)
            free_pods[nfree++] = p;
    }
    if ((int32_t)nfree < need) {
        snprintf(why, sizeof(why), "gang %s: %d of %d members exist", g->key, members,
                 pgang_min(c, g));
        pgang_set_reason(g, PREASON_MEMBERS, why);
        goto out;
    }
    /* The asking pod is preferred only when there are more pods than the
     * minimum; the chosen members are then planned in one order whoever asks,
     * so a gang that does not fit gets the same reason from every member. */
    qsort_r(free_pods, nfree, sizeof(*free_pods), cmp_member,
            (void *)((int32_t)nfree > need ? must : NULL));
    qsort_r(free_pods, (size_t)need, sizeof(*free_pods), cmp_member, NULL);
    if (plan_chosen(c, g, free_pods, (size_t)need, why, sizeof(why), &kind) != 0) {
        pgang_set_reason(g, kind, why);
        goto out;
    }
    g->planned = true;
    pgang_plan_renew(c, g, now);
    pgang_set_reason(g, PREASON_NONE, NULL);
    rc = 0;
out:
    for (size_t i = 0; rc != 0 && i < g->nmembers; i++) {
        struct ppod *p = ppod_at(c, g->members[i]);

        if (p && p->phase == POLICY_POD_PENDING)
            pset_str(&p->reason, g->reason);
    }
    free(free_pods);
    return rc;
}

int pplan_one(struct policy_cluster *c, struct ppod *p, const char *const *candidates,
              size_t ncandidates, char *why, size_t len)
{
    size_t nids = 0, cursor = 0;
    int32_t *ids = candidate_ids(c, candidates, ncandidates, &nids);
    int32_t *order = malloc((nids ? nids : 1) * sizeof(*order));
    struct pplace pl;
    int rc = -1;

    if (!ids || !order) {
        snprintf(why, len, "out of memory while planning");
        goto out;
    }
    pnode_order(c, ids, nids, order);
    if (!find_place(c, p, order, nids, &cursor, &pl)) {
        no_node_reason(c, p, order, nids, why, len);
        goto out;
    }
    p->phase = POLICY_POD_PLANNED;
    pcharge(c, p, &pl);
    rc = 0;
out:
    free(ids);
    free(order);
    return rc;
}
