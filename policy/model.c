/* model.c - the engine's picture of the cluster: upsert and forget. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "arith.h"
#include "internal.h"

static void queue_free(struct pqueue *q)
{
    if (!q)
        return;
    free(q->name);
    free(q->parent);
    pqueue_usage_free(q->usage);
    free(q);
}

/* A queue's amounts as the engine keeps them: -1 is unlimited, the rest within the caps. */
static void queue_amounts(const struct policy_queue_spec *s, struct policy_resources *quota,
                          struct policy_resources *limit, struct policy_resources *weight)
{
    for (int r = 0; r < POLICY_RES_COUNT; r++) {
        quota->v[r] =
            s->quota.v[r] < 0 ? -1 : parith_clamp(s->quota.v[r], 0, POLICY_MAX_QUEUE_AMOUNT);
        limit->v[r] =
            s->limit.v[r] < 0 ? -1 : parith_clamp(s->limit.v[r], 0, POLICY_MAX_QUEUE_AMOUNT);
        weight->v[r] = parith_clamp(s->over_quota_weight.v[r], 0, POLICY_MAX_WEIGHT);
    }
}

static struct pqueue *queue_make(const struct policy_queue_spec *s, bool implicit)
{
    struct pqueue *q = calloc(1, sizeof(*q));

    if (!q)
        return NULL;
    q->name = pstrdup(s->name);
    q->parent = s->parent && *s->parent ? pstrdup(s->parent) : NULL;
    q->priority = s->priority;
    queue_amounts(s, &q->quota, &q->limit, &q->weight);
    q->reclaim_min_runtime = s->reclaim_min_runtime_ms;
    q->preempt_min_runtime = s->preempt_min_runtime_ms;
    q->upgrade_burst = s->upgrade_burst;
    q->implicit = implicit;
    if (!q->name || (s->parent && *s->parent && !q->parent)) {
        queue_free(q);
        return NULL;
    }
    return q;
}

/* The default queue exists even when nobody defined it: unlimited. */
static int ensure_default_queue(struct policy_cluster *c)
{
    struct policy_queue_spec s = {.name = c->default_queue};
    struct pqueue *q;
    int32_t id;

    if (pqueue_find(c, c->default_queue))
        return POLICY_OK;
    for (int r = 0; r < POLICY_RES_COUNT; r++) {
        s.quota.v[r] = -1;
        s.limit.v[r] = -1;
        s.over_quota_weight.v[r] = 1;
    }
    q = queue_make(&s, true);
    if (!q || (id = ptable_add(&c->queues, q)) < 0 || pidx_put(&c->queue_ix, q->name, id)) {
        queue_free(q);
        return POLICY_ENOMEM;
    }
    q->arrival = c->next_arrival++;
    c->fair_dirty = true;
    c->queues_epoch++;
    return POLICY_OK;
}

struct policy_cluster *policy_cluster_new(const struct policy_options *opts)
{
    struct policy_cluster *c = calloc(1, sizeof(*c));

    if (!c)
        return NULL;
    if (opts)
        c->opts = *opts;
    c->change_epoch = 1;
    if (c->opts.plan_ttl_ms <= 0)
        c->opts.plan_ttl_ms = 60000;
    if (c->opts.refused_victim_ms <= 0)
        c->opts.refused_victim_ms = 30000;
    pusage_settings(&c->opts.fairness);
    c->default_queue = pstrdup(c->opts.default_queue ? c->opts.default_queue : "default");
    c->opts.default_queue = c->default_queue;
    if (!c->default_queue || ensure_default_queue(c) != POLICY_OK || pfrag_init(c) != POLICY_OK) {
        policy_cluster_free(c);
        return NULL;
    }
    return c;
}

static void node_free(struct pnode *n)
{
    if (!n)
        return;
    free(n->name);
    for (size_t i = 0; i < n->nlabels; i++) {
        free((char *)n->labels[i].key);
        free((char *)n->labels[i].value);
    }
    free(n->labels);
    for (size_t i = 0; i < n->ntaints; i++) {
        free((char *)n->taints[i].key);
        free((char *)n->taints[i].value);
    }
    free(n->taints);
    free(n->groups);
    free(n);
}

static void pod_free(struct ppod *p)
{
    if (!p)
        return;
    free(p->key); /* ns, name and uid live in the same allocation */
    free(p->invalid);
    pselector_cleanup(&p->sel);
    free(p->queue);
    free(p->gang_key);
    free(p->subgroup);
    free(p->replica);
    free(p->bound_node);
    free(p->gpu_groups_hint);
    pwhy_drop(p->why);
    free(p->groups_text);
    free(p);
}

static void gang_free(struct pgang *g)
{
    if (!g)
        return;
    for (int s = 0; g->decl && s < POLICY_GANG_SOURCES; s++) {
        psubs_free(g->decl[s].subs, g->decl[s].nsubs);
        free(g->decl[s].queue);
        ptopo_want_free(&g->decl[s].want);
        ptopo_want_free(&g->decl[s].other);
        free(g->decl[s].owner);
    }
    free(g->topo_conflict);
    free(g->owner);
    phold_free_all(g);
    free(g->decl);
    psubs_free(g->subs, g->nsubs);
    free(g->conflict);
    if (!g->singleton)
        free(g->key);
    free(g->queue);
    pwhy_drop(g->why);
    if (g->members != &g->first)
        free(g->members);
    free(g);
}

void policy_cluster_free(struct policy_cluster *c)
{
    if (!c)
        return;
    for (size_t i = 0; i < c->nodes.n; i++)
        node_free(c->nodes.items[i]);
    for (size_t i = 0; i < c->pods.n; i++)
        pod_free(c->pods.items[i]);
    for (size_t i = 0; i < c->gangs.n; i++)
        gang_free(c->gangs.items[i]);
    for (size_t i = 0; i < c->queues.n; i++)
        queue_free(c->queues.items[i]);
    ptable_cleanup(&c->nodes);
    ptable_cleanup(&c->pods);
    ptable_cleanup(&c->gangs);
    ptable_cleanup(&c->queues);
    pidx_cleanup(&c->node_ix);
    pidx_cleanup(&c->pod_ix);
    pidx_cleanup(&c->uid_ix);
    pidx_cleanup(&c->gang_ix);
    pidx_cleanup(&c->queue_ix);
    pexpiry_cleanup(&c->expiry);
    pids_cleanup(&c->waiting);
    pids_cleanup(&c->owned);
    pids_cleanup(&c->holding);
    for (size_t i = 0; i < c->nowed; i++)
        free(c->owed[i].gang);
    free(c->view_subs);
    policy_evictions_free(c->evictions, c->nevictions);
    pfrag_cleanup(c);
    pnode_order_cleanup(c);
    ptopo_topologies_free(c);
    ptopo_shapes_free(c);
    free(c->default_queue);
    free(c);
}

/* ---- nodes --------------------------------------------------------------- */

static int node_fill(struct pnode *n, const struct policy_node_spec *s)
{
    /* Counts only with their arrays: node_free walks what they say. */
    n->labels = s->nlabels ? calloc(s->nlabels, sizeof(*n->labels)) : NULL;
    n->nlabels = n->labels ? s->nlabels : 0;
    n->taints = s->ntaints ? calloc(s->ntaints, sizeof(*n->taints)) : NULL;
    n->ntaints = n->taints ? s->ntaints : 0;
    if ((s->nlabels && !n->labels) || (s->ntaints && !n->taints))
        return POLICY_ENOMEM;
    for (size_t i = 0; i < s->nlabels; i++) {
        n->labels[i].key = pstrdup(s->labels[i].key ? s->labels[i].key : "");
        n->labels[i].value = pstrdup(s->labels[i].value ? s->labels[i].value : "");
        if (!n->labels[i].key || !n->labels[i].value)
            return POLICY_ENOMEM; /* node_free frees what is there */
    }
    for (size_t i = 0; i < s->ntaints; i++) {
        n->taints[i].key = pstrdup(s->taints[i].key ? s->taints[i].key : "");
        n->taints[i].value = pstrdup(s->taints[i].value);
        n->taints[i].effect = s->taints[i].effect;
        if (!n->taints[i].key || !pcopied(s->taints[i].value, n->taints[i].value))
            return POLICY_ENOMEM;
    }
    n->unschedulable = s->unschedulable;
    /* What a node offers beyond the engine's caps is taken at them (policy.h). */
    n->cpu = parith_clamp(s->cpu_milli, 0, POLICY_MAX_CPU_MILLI);
    n->memory = parith_clamp(s->memory_bytes, 0, POLICY_MAX_MEMORY_BYTES);
    n->pods = parith_clamp(s->pods, 0, POLICY_MAX_PODS);
    n->gpus = parith_clamp(s->gpus, 0, POLICY_MAX_GPUS);
    n->gpu_memory_mib = parith_clamp(s->gpu_memory_mib, 0, POLICY_MAX_GPU_MEMORY_MIB);
    return POLICY_OK;
}

/*
 * Pods seen bound to a node the engine did not know yet (after a restart
 * the lists arrive in any order) are charged when the node arrives, so no
 * share or device they hold is given out twice.
 */
static void charge_waiting_for(struct policy_cluster *c, const struct pnode *n, int32_t id)
{
    size_t still = 0;

    if (c->bound_unplaced == 0)
        return;
    for (size_t i = 0; i < c->pods.n; i++) {
        struct ppod *p = c->pods.items[i];

        if (!p || p->place.node >= 0 ||
            (p->phase != POLICY_POD_BOUND && p->phase != POLICY_POD_BINDING))
            continue;
        /* Bound there, or its Binding to there still in flight: its place is back (so a
         * successful Binding finds its charge, and nobody else is given its room meanwhile). */
        if (p->bound_node && strcmp(p->bound_node, n->name) == 0)
            pplace_bound(c, p, id);
        else
            still++; /* bound, or being bound, elsewhere */
    }
    /* The count is a hint that a scan is worth it; the scan makes it exact again (a pod
     * whose Binding was in flight when its node went may have been counted, or not). */
    c->bound_unplaced = still;
}

/* Does the node offer what it offered before (capacity, labels, taints)? */
static bool node_offer_same(const struct pnode *a, const struct pnode *b)
{
    if (a->cpu != b->cpu || a->memory != b->memory || a->pods != b->pods || a->gpus != b->gpus ||
        a->gpu_memory_mib != b->gpu_memory_mib || a->unschedulable != b->unschedulable ||
        a->nlabels != b->nlabels || a->ntaints != b->ntaints)
        return false;
    for (size_t i = 0; i < a->nlabels; i++)
        if (strcmp(a->labels[i].key, b->labels[i].key) != 0 ||
            strcmp(a->labels[i].value, b->labels[i].value) != 0)
            return false;
    for (size_t i = 0; i < a->ntaints; i++)
        if (strcmp(a->taints[i].key, b->taints[i].key) != 0 ||
            a->taints[i].effect != b->taints[i].effect ||
            strcmp(a->taints[i].value ? a->taints[i].value : "",
                   b->taints[i].value ? b->taints[i].value : "") != 0)
            return false;
    return true;
}

uint64_t policy_offer_epoch(const struct policy_cluster *c)
{
    return c->nodes_epoch;
}

int policy_node_upsert(struct policy_cluster *c, const struct policy_node_spec *s)
{
    int32_t id;
    struct pnode *n, *old;

    if (!s || !s->name || !*s->name)
        return POLICY_EINVAL;
    n = calloc(1, sizeof(*n));
    if (!n || !(n->name = pstrdup(s->name)) || node_fill(n, s) != POLICY_OK) {
        node_free(n);
        return POLICY_ENOMEM;
    }
    id = pidx_get(&c->node_ix, s->name);
    old = pnode_at(c, id);
    if (old) {
        /* Keep what is charged; replace what the node says about itself. */
        n->cpu_used = old->cpu_used;
        n->memory_used = old->memory_used;
        n->pods_used = old->pods_used;
        n->whole_used = old->whole_used;
        n->cpu_exact = old->cpu_exact;
        n->memory_exact = old->memory_exact;
        n->pods_exact = old->pods_exact;
        n->whole_exact = old->whole_exact;
        n->sharing_paused = old->sharing_paused;
        n->sharing_paused_until = old->sharing_paused_until;
        n->groups = old->groups;
        n->ngroups = old->ngroups;
        n->groups_cap = old->groups_cap;
        old->groups = NULL;
        if (!node_offer_same(old, n)) {
            c->nodes_epoch++;
            c->change_epoch++;
            c->fair_dirty = true;
        }
        c->nodes.items[id] = n;
        pidx_put(&c->node_ix, n->name, id);
        node_free(old);
        pfrag_node_upserted(c, id);
        pnode_order_touch(c, id);
        return POLICY_OK;
    }
    c->nodes_epoch++;
    c->change_epoch++;
    c->fair_dirty = true;
    id = ptable_add(&c->nodes, n);
    if (id < 0 || pidx_put(&c->node_ix, n->name, id) != POLICY_OK) {
        if (id >= 0)
            ptable_remove(&c->nodes, id);
        node_free(n);
        return POLICY_ENOMEM;
    }
    pfrag_node_upserted(c, id);
    pnode_order_touch(c, id);
    charge_waiting_for(c, n, id);
    return POLICY_OK;
}

int policy_node_forget(struct policy_cluster *c, const char *name)
{
    int32_t id = pidx_get(&c->node_ix, name);
    struct pnode *n = pnode_at(c, id);

    if (!n)
        return POLICY_ENOENT;
    /* A planned member losing its node breaks its gang's plan: release it whole. */
    for (size_t i = 0; i < c->pods.n; i++) {
        struct ppod *p = c->pods.items[i];

        if (!p || p->place.node != id)
            continue;
        if (p->phase == POLICY_POD_PLANNED || p->phase == POLICY_POD_WAITING) {
            struct pgang *g = ppod_gang(c, p);

            puncharge(c, p);
            p->phase = POLICY_POD_PENDING;
            if (g)
                pplan_release(c, g);
        } else {
            /* A Binding in flight still names this node: keep the name for bind_done. */
            if (p->phase == POLICY_POD_BINDING)
                pset_str(&p->bound_node, n->name);
            puncharge(c, p);
            /* A Binding in flight may succeed: then it is bound here without a charge. */
            c->bound_unplaced += p->phase == POLICY_POD_BOUND || p->phase == POLICY_POD_BINDING;
        }
    }
    if (n->sharing_paused)
        c->paused_nodes--;
    c->nodes_epoch++;
    c->change_epoch++;
    c->fair_dirty = true;
    pidx_del(&c->node_ix, name);
    ptable_remove(&c->nodes, id);
    pnode_order_touch(c, id);
    node_free(n);
    phold_settle(c); /* a running gang's room held on it is held elsewhere, or lost */
    return POLICY_OK;
}

/* ---- queues -------------------------------------------------------------- */

int policy_queue_upsert(struct policy_cluster *c, const struct policy_queue_spec *s)
{
    struct pqueue *q;
    int32_t id;

    if (!s || !s->name || !*s->name)
        return POLICY_EINVAL;
    if (policy_queue_changes(c, s))
        c->change_epoch++;
    q = queue_make(s, false);
    if (!q)
        return POLICY_ENOMEM;
    id = pidx_get(&c->queue_ix, s->name);
    if (id >= 0) {
        struct pqueue *old = c->queues.items[id];

        /* Re-key first: the index still points at the old name. */
        q->arrival = old->arrival;
        q->usage = old->usage; /* its usage over time outlives a change of its spec */
        old->usage = NULL;
        c->queues.items[id] = q;
        pidx_put(&c->queue_ix, q->name, id);
        queue_free(old);
    } else {
        id = ptable_add(&c->queues, q);
        if (id < 0 || pidx_put(&c->queue_ix, q->name, id) != POLICY_OK) {
            if (id >= 0)
                ptable_remove(&c->queues, id);
            queue_free(q);
            return POLICY_ENOMEM;
        }
        q->arrival = c->next_arrival++;
    }
    c->queues_epoch++;
    c->nodes_epoch++; /* limits changed: which gangs could ever run, again */
    pqueue_recount(c);
    c->fair_dirty = true;
    return POLICY_OK;
}

static bool same_text(const char *a, const char *b)
{
    return (!a || !*a) ? (!b || !*b) : (b && strcmp(a, b) == 0);
}

bool policy_queue_changes(const struct policy_cluster *c, const struct policy_queue_spec *s)
{
    const struct pqueue *q = pqueue_find(c, s->name);
    struct policy_resources quota, limit, weight;

    queue_amounts(s, &quota, &limit, &weight);
    return !q || q->implicit || !same_text(q->parent, s->parent) || q->priority != s->priority ||
           memcmp(&q->quota, &quota, sizeof(q->quota)) != 0 ||
           memcmp(&q->limit, &limit, sizeof(q->limit)) != 0 ||
           memcmp(&q->weight, &weight, sizeof(q->weight)) != 0 ||
           q->reclaim_min_runtime != s->reclaim_min_runtime_ms ||
           q->preempt_min_runtime != s->preempt_min_runtime_ms ||
           q->upgrade_burst != s->upgrade_burst;
}

/* A spec's queue as a declaration keeps it: an empty name is none. */
static const char *spec_queue(const struct policy_gang_spec *s)
{
    return s->queue && *s->queue ? s->queue : NULL;
}

static const char *spec_owner(const struct policy_gang_spec *s)
{
    return s->owner_kind != POLICY_OWNER_NONE && s->owner && *s->owner ? s->owner : NULL;
}

static bool decl_same(const struct pdecl *d, const struct policy_gang_spec *s)
{
    if (!d->on || d->min != s->min_members || d->nsubs != s->nsubgroups ||
        !same_text(d->queue, spec_queue(s)) || !ptopo_want_same(&d->want, &s->topology) ||
        !ptopo_want_same(&d->other, &s->topology_other) ||
        d->has_priority != s->has_priority || (s->has_priority && d->priority != s->priority) ||
        d->preemptible != s->preemptible || !same_text(d->owner, spec_owner(s)) ||
        (spec_owner(s) && d->owner_kind != s->owner_kind))
        return false;
    for (size_t i = 0; i < d->nsubs; i++)
        if (!same_text(d->subs[i].name, s->subgroups[i].name) ||
            d->subs[i].min != s->subgroups[i].min_members ||
            !ptopo_want_same(&d->subs[i].want, &s->subgroups[i].topology) ||
            !ptopo_want_same(&d->subs[i].other, &s->subgroups[i].topology_other))
            return false;
    return true;
}

bool policy_gang_changes(const struct policy_cluster *c, const struct policy_gang_spec *s)
{
    const struct pgang *g = pgang_at(c, pidx_get(&c->gang_ix, s->key));

    return !g || s->source >= POLICY_GANG_SOURCES || !decl_same(pgang_decl(g, s->source), s);
}

int policy_queue_forget(struct policy_cluster *c, const char *name)
{
    int32_t id = pidx_get(&c->queue_ix, name);
    struct pqueue *q = pqueue_at(c, id);

    if (!q)
        return POLICY_ENOENT;
    pidx_del(&c->queue_ix, name);
    ptable_remove(&c->queues, id);
    queue_free(q);
    c->queues_epoch++;
    c->change_epoch++;
    c->nodes_epoch++;
    if (ensure_default_queue(c) != POLICY_OK)
        return POLICY_ENOMEM;
    pqueue_recount(c);
    c->fair_dirty = true;
    return POLICY_OK;
}

/* ---- gangs --------------------------------------------------------------- */

static struct pgang *gang_new(struct policy_cluster *c, const char *key, bool singleton,
                              int32_t *out_id)
{
    struct pgang *g = calloc(1, sizeof(*g));
    int32_t id;

    /* Most gangs are pods of their own: they borrow the pod's key, which outlives them. */
    if (!g || !(g->key = singleton ? (char *)key : pstrdup(key))) {
        free(g);
        return NULL;
    }
    g->singleton = singleton;
    g->topo_source = -1;
    g->arrival = c->next_arrival++;
    g->yields_to = g->waits_for = -1;
    id = ptable_add(&c->gangs, g);
    if (id < 0 || (!singleton && pidx_put(&c->gang_ix, g->key, id) != POLICY_OK)) {
        if (id >= 0)
            ptable_remove(&c->gangs, id);
        gang_free(g);
        return NULL;
    }
    g->id = id;
    *out_id = id;
    return g;
}

static void gang_drop_if_empty(struct policy_cluster *c, int32_t id)
{
    struct pgang *g = pgang_at(c, id);

    if (!g || g->nmembers > 0 || pgang_declared(g))
        return;
    pgang_unmark_waiting(c, g);
    pids_remove(&c->owned, id);
    pids_remove(&c->holding, id);
    if (!g->singleton)
        pidx_del(&c->gang_ix, g->key);
    pgang_expiry_cancel(c, g);
    ptable_remove(&c->gangs, id);
    gang_free(g);
}

/* The first member is kept inline: a gang of one allocates nothing for it. */
static int gang_add_member(struct pgang *g, int32_t pod)
{
    if (g->members_cap == 0) {
        g->members = &g->first;
        g->members_cap = 1;
    }
    if (g->nmembers == g->members_cap) {
        size_t cap = g->members_cap < 4 ? 4 : g->members_cap * 2;
        int32_t *m = g->members == &g->first ? malloc(cap * sizeof(*m))
                                             : realloc(g->members, cap * sizeof(*m));

        if (!m)
            return POLICY_ENOMEM;
        if (g->members == &g->first)
            memcpy(m, &g->first, g->nmembers * sizeof(*m));
        g->members = m;
        g->members_cap = cap;
    }
    g->members[g->nmembers++] = pod;
    return POLICY_OK;
}

static void gang_remove_member(struct pgang *g, int32_t pod)
{
    for (size_t i = 0; i < g->nmembers; i++) {
        if (g->members[i] == pod) {
            memmove(&g->members[i], &g->members[i + 1], (g->nmembers - i - 1) * sizeof(int32_t));
            g->nmembers--;
            return;
        }
    }
}

static void decl_clear(struct pdecl *d)
{
    free(d->queue);
    free(d->owner);
    ptopo_want_free(&d->want);
    ptopo_want_free(&d->other);
    psubs_free(d->subs, d->nsubs);
    memset(d, 0, sizeof(*d));
}

/* Copy what a source says; on ENOMEM the old declaration stays. */
static int decl_set(struct pdecl *d, const struct policy_gang_spec *s)
{
    struct psubgroup *subs = s->nsubgroups ? calloc(s->nsubgroups, sizeof(*subs)) : NULL;
    char *queue = spec_queue(s) ? pstrdup(s->queue) : NULL;
    char *owner = spec_owner(s) ? pstrdup(s->owner) : NULL;
    struct ptopo_want want = {0}, other = {0};

    if ((s->nsubgroups && !subs) || (spec_queue(s) && !queue) || (spec_owner(s) && !owner) ||
        ptopo_want_copy(&want, &s->topology) != POLICY_OK ||
        ptopo_want_copy(&other, &s->topology_other) != POLICY_OK)
        goto fail;
    for (size_t i = 0; i < s->nsubgroups; i++) {
        subs[i].min = s->subgroups[i].min_members;
        if (!(subs[i].name = pstrdup(s->subgroups[i].name ? s->subgroups[i].name : "")) ||
            ptopo_want_copy(&subs[i].want, &s->subgroups[i].topology) != POLICY_OK ||
            ptopo_want_copy(&subs[i].other, &s->subgroups[i].topology_other) != POLICY_OK) {
            psubs_free(subs, i + 1);
            subs = NULL;
            goto fail;
        }
    }
    decl_clear(d);
    *d = (struct pdecl){.on = true,
                        .owner_kind = owner ? s->owner_kind : POLICY_OWNER_NONE,
                        .owner = owner,
                        .queue = queue,
                        .want = want,
                        .other = other,
                        .min = s->min_members > 0 ? s->min_members : 0,
                        .subs = subs,
                        .nsubs = s->nsubgroups,
                        .has_priority = s->has_priority,
                        .priority = s->priority,
                        .preemptible = s->preemptible};
    return POLICY_OK;
fail:
    free(subs);
    free(queue);
    free(owner);
    ptopo_want_free(&want);
    ptopo_want_free(&other);
    return POLICY_ENOMEM;
}

/*
 * The gang's queue: the one named by the first source that names one, in the order of
 * enum policy_gang_source (a RayCluster's labels, then a PodGroup's spec.queue, then a
 * Workload's labels), the order compositions take precedence in. Not the last one told: a
 * PodGroup whose queue Volcano's CRD defaulted to "default" would take a RayCluster's gang
 * out of the queue its labels name on every status update of either. With no source naming
 * one the gang keeps the queue it had (its members' otherwise).
 */
static void gang_queue_refresh(struct policy_cluster *c, struct pgang *g)
{
    const char *q = NULL;
    bool moved = false;

    for (int s = 0; s < POLICY_GANG_SOURCES && !q; s++)
        if (pgang_decl(g, s)->on)
            q = pgang_decl(g, s)->queue;
    if (!q || (g->queue && strcmp(g->queue, q) == 0))
        return;
    pset_str(&g->queue, q);
    for (size_t i = 0; i < g->nmembers; i++) {
        struct ppod *p = ppod_at(c, g->members[i]);

        if (p && strcmp(p->queue, g->queue) != 0) {
            if (p->place.node >= 0)
                moved = true;
            pset_str(&p->queue, g->queue);
            p->queue_epoch = 0;
        }
    }
    /* Only members that hold room move usage between queues. */
    if (moved)
        pqueue_recount(c);
}

int policy_gang_upsert(struct policy_cluster *c, const struct policy_gang_spec *s)
{
    int32_t id;
    struct pgang *g;

    if (!s || !s->key || !*s->key || s->source >= POLICY_GANG_SOURCES)
        return POLICY_EINVAL;
    if (policy_gang_changes(c, s))
        c->change_epoch++;
    id = pidx_get(&c->gang_ix, s->key);
    g = pgang_at(c, id);
    if (!g && !(g = gang_new(c, s->key, false, &id)))
        return POLICY_ENOMEM;
    if (!g->decl && !(g->decl = calloc(POLICY_GANG_SOURCES, sizeof(*g->decl)))) {
        gang_drop_if_empty(c, id); /* one made just now for this declaration goes again */
        return POLICY_ENOMEM;
    }
    if (decl_set(&g->decl[s->source], s) != POLICY_OK || pgang_compose(c, g) != POLICY_OK ||
        powner_refresh(c, g) != POLICY_OK)
        return POLICY_ENOMEM;
    gang_queue_refresh(c, g);
    ptopo_refresh(c, g);
    if (!g->admitted) {
        c->maybe_partial = true;
        pgang_mark_waiting(c, g);
    }
    c->fair_dirty = true;
    return POLICY_OK;
}

int policy_gang_forget(struct policy_cluster *c, const char *key, enum policy_gang_source source)
{
    int32_t id = pidx_get(&c->gang_ix, key);
    struct pgang *g = pgang_at(c, id);

    if (!g || source >= POLICY_GANG_SOURCES)
        return POLICY_ENOENT;
    c->change_epoch++;
    if (!g->decl) { /* never declared: nothing to forget, but an empty one goes */
        gang_drop_if_empty(c, id);
        return POLICY_ENOENT;
    }
    decl_clear(&g->decl[source]);
    pgang_compose(c, g);
    powner_refresh(c, g);
    gang_queue_refresh(c, g);
    ptopo_refresh(c, g);
    c->fair_dirty = true;
    if (pgang_declared(g))
        return POLICY_OK; /* another source still declares it */
    if (g->planned && !g->admitted)
        pplan_release(c, g);
    gang_drop_if_empty(c, id);
    return POLICY_OK;
}

/* The decoder's verdict on the ask, else the engine's own (an amount it does not count). */
static const char *pod_invalid(const struct policy_pod_spec *s, char *buf, size_t len)
{
    if (s->invalid)
        return s->invalid;
    return pask_uncountable(s, buf, len) ? buf : NULL;
}

/* "ns/name", ns, name and uid in one allocation: a cache of 50,000 pods saves four mallocs
 * a pod. p->key owns it. */
static int pod_names(struct ppod *p, const struct policy_pod_spec *s)
{
    const char *uid = s->uid ? s->uid : "";
    size_t ns = strlen(s->namespace_), name = strlen(s->name), id = strlen(uid);
    size_t len = 2 * (ns + name + 2) + id + 1;
    char *buf = malloc(len);

    if (!buf)
        return POLICY_ENOMEM;
    p->key = buf;
    buf += snprintf(buf, len, "%s/%s", s->namespace_, s->name) + 1;
    p->ns = memcpy(buf, s->namespace_, ns + 1);
    p->name = memcpy(buf += ns + 1, s->name, name + 1);
    p->uid = memcpy(buf + name + 1, uid, id + 1);
    return POLICY_OK;
}

static int pod_fill(struct policy_cluster *c, struct ppod *p, const struct policy_pod_spec *s)
{
    const struct pgang *g = s->gang ? pgang_at(c, pidx_get(&c->gang_ix, s->gang)) : NULL;
    const char *queue = g && g->queue           ? g->queue
                        : s->queue && *s->queue ? s->queue
                                                : c->default_queue;
    char capwhy[POLICY_REASON_LEN];
    const char *invalid = pod_invalid(s, capwhy, sizeof(capwhy));

    if (pod_names(p, s) != POLICY_OK)
        return POLICY_ENOMEM;
    p->invalid = pstrdup(invalid);
    p->queue = pstrdup(queue);
    p->gang_key = pstrdup(s->gang);
    p->bound_node = s->node && *s->node ? pstrdup(s->node) : NULL;
    p->bound_at = p->bound_node ? s->bound_at : 0;
    p->priority = s->priority;
    p->cpu = pask_counted(s->cpu_milli, POLICY_MAX_CPU_MILLI);
    p->memory = pask_counted(s->memory_bytes, POLICY_MAX_MEMORY_BYTES);
    p->gpus = pask_counted(s->gpus, POLICY_MAX_GPUS);
    p->share = s->gpu_share_milli;
    p->gpu_memory_mib = pask_counted(s->gpu_memory_mib, POLICY_MAX_GPU_MEMORY_MIB);
    p->devices = s->gpu_devices > 0 ? s->gpu_devices : 1;
    if (p->devices > POLICY_MAX_DEVICES)
        p->devices = POLICY_MAX_DEVICES;
    p->head = s->gang_head;
    p->managed = s->managed;
    p->nominated = s->nominated;
    /* Parked before this muster could answer it (a restart): handed back once. */
    p->refused = p->parked_hint = s->unschedulable;
    p->preemptible = s->preemptible;
    p->subgroup = s->subgroup && *s->subgroup ? pstrdup(s->subgroup) : NULL;
    p->replica = s->replica && *s->replica ? pstrdup(s->replica) : NULL;
    p->sub = -1;
    p->evict_by = -1;
    p->place.node = -1;
    p->gang = -1;
    if (!p->queue || (invalid && !p->invalid) || (s->gang && !p->gang_key) ||
        (s->node && *s->node && !p->bound_node) || (s->subgroup && *s->subgroup && !p->subgroup) ||
        (s->replica && *s->replica && !p->replica))
        return POLICY_ENOMEM;
    return pselector_copy(&p->sel, s->node_selector, s->nnode_selector, s->affinity, s->naffinity,
                          s->tolerations, s->ntolerations);
}

/* Charge a pod that runs on `node` (seen bound), with the groups it carries. */
int pplace_bound(struct policy_cluster *c, struct ppod *p, int32_t node_id)
{
    struct pnode *n = pnode_at(c, node_id);
    struct pplace pl = {.node = node_id};
    enum pfit_why why;
    int32_t share;

    if (!n)
        return POLICY_ENOENT;
    share = pfit_share_on(n, p);
    /* A running gpu-memory pod on a node that does not say its devices' memory (or says less
     * than it asked): muster cannot tell its share, so it books the whole device it runs on
     * (docs/gpu-sharing.md). Never nothing: that would hand its device out again. */
    if (share < 0 && p->gpu_memory_mib > 0)
        share = POLICY_GPU_MILLI;
    pl.share = share > 0 ? share : 0;
    if (pl.share > 0) {
        int32_t k = p->gpu_groups_hint
                        ? pgroups_parse(p->gpu_groups_hint, pl.groups, POLICY_MAX_DEVICES)
                        : 0;

        if (k == p->devices) {
            pl.ngroups = k;
        } else {
            /* No usable record of its groups: account it as binpack would,
             * or on groups of its own if the node looks full. */
            struct pplace fit;

            if (pfit_resources(n, p, POLICY_BINPACK, &fit, &why)) {
                pl.ngroups = fit.ngroups;
                memcpy(pl.groups, fit.groups, sizeof(pl.groups));
            } else {
                int32_t next = 0;

                for (pl.ngroups = 0; pl.ngroups < p->devices; pl.ngroups++) {
                    while (pnode_group_find(n, next) >= 0)
                        next++;
                    pl.groups[pl.ngroups] = next++;
                }
            }
        }
    }
    pcharge(c, p, &pl);
    return POLICY_OK;
}

/* The pod is seen bound: make its charge say so, on the node it names. */
static void pod_observe_bound(struct policy_cluster *c, struct ppod *p)
{
    int32_t node = pidx_get(&c->node_ix, p->bound_node);
    const char *mine = p->place.node >= 0 ? pnode_at(c, p->place.node)->name : NULL;
    bool same = mine && strcmp(mine, p->bound_node) == 0;

    if (same && p->gpu_groups_hint && p->place.ngroups > 0 &&
        !same_text(p->gpu_groups_hint, p->groups_text))
        same = false; /* the annotation is the truth about its groups */
    if (same) {
        pcharge_mark_bound(c, p, true);
        p->phase = POLICY_POD_BOUND;
    } else {
        puncharge(c, p);
        p->phase = POLICY_POD_BOUND;
        if (pplace_bound(c, p, node) != POLICY_OK)
            c->bound_unplaced++; /* its node is not known yet */
    }
    pwhy_set(&p->why, NULL);
    pgang_note_bound(c, ppod_gang(c, p));
}

void policy_parked_hints_spent(struct policy_cluster *c)
{
    for (size_t i = 0; i < c->pods.n; i++) {
        struct ppod *p = c->pods.items[i];

        if (p && p->parked_hint) {
            p->parked_hint = false;
            p->refused = false;
        }
    }
}

void policy_pod_handed_back(struct policy_cluster *c, const char *ns, const char *name,
                            uint64_t refusal)
{
    struct ppod *p = ppod_find(c, ns, name);

    if (p && p->refusal == refusal) {
        p->refused = false;
        p->parked_hint = false;
    }
}

/* The key of p's gang: the one it names, or its own (a pod alone). */
static const char *gang_key_of(const struct ppod *p)
{
    return p->gang_key ? p->gang_key : p->key;
}

static int pod_attach_gang(struct policy_cluster *c, struct ppod *p, int32_t pod_id,
                           int64_t now)
{
    struct pgang *g;
    int32_t gid = p->gang_key ? pidx_get(&c->gang_ix, p->gang_key) : -1;

    g = pgang_at(c, gid);
    if (!g && !(g = gang_new(c, gang_key_of(p), !p->gang_key, &gid)))
        return POLICY_ENOMEM;
    if (gang_add_member(g, pod_id) != POLICY_OK) {
        gang_drop_if_empty(c, gid);
        return POLICY_ENOMEM;
    }
    p->gang = gid;
    p->sub = pgang_sub_of(g, p->subgroup);
    g->could_run_epoch = 0;
    pgang_refresh(c, g);
    if (!p->bound_node)
        pgang_mark_waiting(c, g);
    c->fair_dirty = true;
    if (g->nholds > 0 && !p->held)
        phold_arrive(c, g, p, now);
    return POLICY_OK;
}

static void pod_detach_gang(struct policy_cluster *c, struct ppod *p, int32_t pod_id)
{
    int32_t gid = p->gang;
    struct pgang *g = pgang_at(c, gid);

    if (!g)
        return;
    gang_remove_member(g, pod_id);
    p->gang = -1;
    g->could_run_epoch = 0;
    pgang_refresh(c, g);
    pgang_settle(c, g);
    gang_drop_if_empty(c, gid);
}

/* ---- made again: a pod the engine evicted, replaced by its gang's controller ----
 *
 * The debt is taken when the eviction is decided (evict.c), not when the victim has gone: a
 * Job's controller (podReplacementPolicy TerminatingOrFailed, its default) makes the new pod
 * while the old one terminates. A refused eviction forgives it. A pod alone is its own gang
 * (its key its name): a replacement of another name (a Deployment's) never pays its debt,
 * which stays until POLICY_OWED_MAX newer ones push it out. */

uint64_t pmodel_outside_epoch(const struct policy_cluster *c)
{
    return c->change_epoch - c->remade;
}

static size_t owed_find(const struct policy_cluster *c, const char *gang)
{
    size_t i;

    for (i = 0; i < c->nowed && strcmp(c->owed[i].gang, gang) != 0; i++)
        ;
    return i;
}

static void owed_drop(struct policy_cluster *c, size_t i)
{
    free(c->owed[i].gang);
    memmove(&c->owed[i], &c->owed[i + 1], (c->nowed - i - 1) * sizeof(c->owed[0]));
    c->nowed--;
}

void pmodel_owe_remake(struct policy_cluster *c, const char *gang)
{
    size_t i = owed_find(c, gang);
    char *key;

    if (i == c->nowed) {
        if (!(key = pstrdup(gang)))
            return;
        if (c->nowed == POLICY_OWED_MAX)
            owed_drop(c, 0);
        i = c->nowed++;
        c->owed[i] = (struct powed){.gang = key};
    }
    c->owed[i].n++;
}

bool pmodel_take_remake(struct policy_cluster *c, const char *gang)
{
    size_t i = owed_find(c, gang);

    if (i == c->nowed)
        return false;
    if (--c->owed[i].n == 0)
        owed_drop(c, i);
    return true;
}

static void pod_remove(struct policy_cluster *c, int32_t id)
{
    struct ppod *p = ppod_at(c, id);

    if (p->phase == POLICY_POD_BOUND && p->place.node < 0 && c->bound_unplaced > 0)
        c->bound_unplaced--;
    c->room_epoch++; /* a pod gone changes what plans may choose, held room or not */
    puncharge(c, p);
    if (p->phase == POLICY_POD_EVICTING)
        pevict_gone(c, p);
    pod_detach_gang(c, p, id);
    if (!p->held) /* a stand-in is in no index */
        pidx_del(&c->pod_ix, p->key);
    if (*p->uid && pidx_get(&c->uid_ix, p->uid) == id)
        pidx_del(&c->uid_ix, p->uid);
    ptable_remove(&c->pods, id);
    pod_free(p);
}

static bool str_same(const char *a, const char *b)
{
    return (!a || !*a) ? (!b || !*b) : (b && strcmp(a, b) == 0);
}

/* Same pod, newer object: only its binding and its GPU record may move. */
static bool pod_same_incarnation(const struct ppod *p, const struct policy_pod_spec *s)
{
    char capwhy[POLICY_REASON_LEN];

    return str_same(p->uid, s->uid) && str_same(p->gang_key, s->gang) &&
           p->cpu == pask_counted(s->cpu_milli, POLICY_MAX_CPU_MILLI) &&
           p->memory == pask_counted(s->memory_bytes, POLICY_MAX_MEMORY_BYTES) &&
           p->gpus == pask_counted(s->gpus, POLICY_MAX_GPUS) && p->share == s->gpu_share_milli &&
           p->gpu_memory_mib == pask_counted(s->gpu_memory_mib, POLICY_MAX_GPU_MEMORY_MIB) &&
           p->managed == s->managed && str_same(p->invalid, pod_invalid(s, capwhy, sizeof(capwhy))) &&
           str_same(p->subgroup, s->subgroup) && str_same(p->replica, s->replica) &&
           p->preemptible == s->preemptible &&
           p->priority == s->priority;
}

int policy_pod_upsert(struct policy_cluster *c, const struct policy_pod_spec *s, int64_t now)
{
    struct ppod *p;
    bool remade;
    int32_t id;

    if (!s || !s->namespace_ || !*s->namespace_ || !s->name || !*s->name)
        return POLICY_EINVAL;
    if (now > c->clock)
        c->clock = now;
    p = ppod_find(c, s->namespace_, s->name);
    if (p && pod_same_incarnation(p, s)) {
        pset_str(&p->gpu_groups_hint, s->gpu_groups);
        p->nominated = s->nominated;
        if (s->node && *s->node && p->phase != POLICY_POD_BOUND &&
            p->phase != POLICY_POD_EVICTING) {
            pset_str(&p->bound_node, s->node);
            p->bound_at = s->bound_at;
            pod_observe_bound(c, p);
        } else if (s->node && *s->node && p->phase == POLICY_POD_BOUND && p->place.node < 0 &&
                   pidx_get(&c->node_ix, s->node) >= 0) {
            /* Bound while its node was away (a Binding in flight when the node went): the
             * node is back, so is its charge. */
            pset_str(&p->bound_node, s->node);
            pod_observe_bound(c, p);
        }
        return POLICY_OK;
    }
    if (p)
        pod_remove(c, pidx_get(&c->pod_ix, p->key));
    c->change_epoch++; /* a pod made, or made again */
    p = calloc(1, sizeof(*p));
    if (!p || pod_fill(c, p, s) != POLICY_OK ||
        (s->gpu_groups && !(p->gpu_groups_hint = pstrdup(s->gpu_groups)))) {
        pod_free(p);
        return POLICY_ENOMEM;
    }
    p->arrival = c->next_arrival++;
    p->seen = now;
    /* Made again in place of a pod the engine evicted (KubeRay, a Job, the eviction model's
     * rounds): the engine's own decision answered, not a change from outside. Its gang's
     * demand comes back to what the victim rule counted (docs/quota.md, "No thrash"). Decided
     * before it joins its gang, which may place it on a hold's room at once. */
    remade = !p->bound_node && pmodel_take_remake(c, gang_key_of(p));
    c->remade += remade;
    id = ptable_add(&c->pods, p);
    if (id < 0 || pidx_put(&c->pod_ix, p->key, id) != POLICY_OK ||
        (*p->uid && pidx_put(&c->uid_ix, p->uid, id) != POLICY_OK) ||
        pod_attach_gang(c, p, id, now) != POLICY_OK) {
        if (remade) { /* not made after all: still owed */
            c->remade--;
            pmodel_owe_remake(c, gang_key_of(p));
        }
        if (id >= 0) {
            pidx_del(&c->pod_ix, p->key);
            if (*p->uid)
                pidx_del(&c->uid_ix, p->uid);
            ptable_remove(&c->pods, id);
        }
        pod_free(p);
        return POLICY_ENOMEM;
    }
    pfrag_observe(c, p);
    if (p->bound_node)
        pod_observe_bound(c, p);
    return POLICY_OK;
}

int policy_pod_forget(struct policy_cluster *c, const char *ns, const char *name)
{
    struct ppod *p = ppod_find(c, ns, name);

    if (!p)
        return POLICY_ENOENT;
    /* One the engine evicted leaving is its own decision carried out; any other going is a
     * change. */
    if (p->phase != POLICY_POD_EVICTING)
        c->change_epoch++;
    pod_remove(c, pidx_get(&c->pod_ix, p->key));
    return POLICY_OK;
}

/* ---- stand-ins: members held for before they exist (hold.c) --------------- */

struct pgang *pmodel_gang(struct policy_cluster *c, const char *key)
{
    int32_t id = pidx_get(&c->gang_ix, key);
    struct pgang *g = pgang_at(c, id);

    return g ? g : gang_new(c, key, false, &id);
}

int pmodel_standin(struct policy_cluster *c, struct pgang *g, const struct policy_pod_spec *s,
                   int64_t now, int32_t *out)
{
    struct ppod *p = calloc(1, sizeof(*p));
    int32_t id;

    if (!p || pod_fill(c, p, s) != POLICY_OK) {
        pod_free(p);
        return POLICY_ENOMEM;
    }
    p->held = true;
    p->arrival = c->next_arrival++;
    p->seen = now;
    /* No name index: a stand-in is found through its gang, and its name ("submitter of RayJob
     * lab/j") is no pod's. */
    id = ptable_add(&c->pods, p);
    if (id < 0 || pod_attach_gang(c, p, id, now) != POLICY_OK) {
        if (id >= 0)
            ptable_remove(&c->pods, id);
        pod_free(p);
        return POLICY_ENOMEM;
    }
    c->change_epoch++;
    *out = id;
    return POLICY_OK;
}

void pmodel_pod_remove(struct policy_cluster *c, int32_t id)
{
    if (ppod_at(c, id))
        pod_remove(c, id);
}

void pmodel_gang_drop_if_empty(struct policy_cluster *c, struct pgang *g)
{
    gang_drop_if_empty(c, g->id);
}
