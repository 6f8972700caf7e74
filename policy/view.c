/* view.c - what the engine knows, for logs, metrics, status and tests. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

const char *policy_pod_phase_name(enum policy_pod_phase p)
{
    static const char *const names[] = {"Pending", "Planned", "Waiting", "Binding", "Bound",
                                        "Evicting"};

    return p <= POLICY_POD_EVICTING ? names[p] : "?";
}

const char *policy_gang_state_name(enum policy_gang_state s)
{
    static const char *const names[] = {"Pending", "Planned", "Bound"};

    return s <= POLICY_GANG_BOUND ? names[s] : "?";
}

/* Why p waits: its own reason, else, pending in a gang that waits, the gang's. */
static const struct pwhy *pod_why(const struct pgang *g, const struct ppod *p)
{
    if (p->phase == POLICY_POD_BOUND)
        return NULL;
    if (p->why || p->phase != POLICY_POD_PENDING || !g || g->admitted)
        return p->why;
    return g->why;
}

static void pod_view(const struct policy_cluster *c, const struct ppod *p,
                     struct policy_pod_view *v)
{
    const struct pgang *g = ppod_gang(c, p);
    const struct pnode *n = pnode_at(c, p->place.node);
    const struct pwhy *why = pod_why(g, p);

    *v = (struct policy_pod_view){
        .namespace_ = p->ns,
        .name = p->name,
        .uid = p->uid,
        .gang = g ? g->key : p->key,
        .queue = p->queue,
        .managed = p->managed,
        .phase = p->phase,
        .node = n ? n->name : p->phase == POLICY_POD_BOUND ? p->bound_node : NULL,
        .cpu_milli = p->cpu,
        .memory_bytes = p->memory,
        .gpus = p->gpus,
        .gpu_share_milli = p->place.node >= 0 ? p->place.share : p->share,
        .gpu_devices = p->devices,
        .gpu_groups = p->place.ngroups ? p->groups_text : NULL,
        .reason = why ? why->text : NULL,
        .why = why ? &why->r : NULL,
        .refused = p->phase == POLICY_POD_PENDING && p->refused,
        .refusal = p->refusal,
        .arrival = p->arrival,
        .priority = p->priority,
        .subgroup = p->subgroup,
        .gang_head = p->head,
    };
}

bool policy_pod_view_get(const struct policy_cluster *c, const char *ns, const char *name,
                         struct policy_pod_view *out)
{
    const struct ppod *p = ppod_find(c, ns, name);

    if (!p)
        return false;
    pod_view(c, p, out);
    return true;
}

static int cmp_arrival(const void *a, const void *b)
{
    const struct ppod *x = *(struct ppod *const *)a, *y = *(struct ppod *const *)b;

    return x->arrival < y->arrival ? -1 : x->arrival > y->arrival;
}

void policy_each_pod(const struct policy_cluster *c, policy_pod_fn fn, void *ctx)
{
    const struct ppod **all = malloc((c->pods.n ? c->pods.n : 1) * sizeof(*all));
    size_t n = 0;

    if (!all)
        return;
    for (size_t i = 0; i < c->pods.n; i++) {
        const struct ppod *p = c->pods.items[i];

        if (p && !p->held) /* a stand-in is no pod: its gang's view shows it */
            all[n++] = p;
    }
    qsort(all, n, sizeof(*all), cmp_arrival);
    for (size_t i = 0; i < n; i++) {
        struct policy_pod_view v;

        pod_view(c, all[i], &v);
        fn(&v, ctx);
    }
    free(all);
}

/* When its earliest present member was first seen: how long the gang has been waiting. */
static int64_t gang_since(const struct policy_cluster *c, const struct pgang *g)
{
    int64_t since = 0;
    bool any = false;

    for (size_t i = 0; i < g->nmembers; i++) {
        const struct ppod *p = ppod_at(c, g->members[i]);

        if (p && (!any || p->seen < since)) {
            since = p->seen;
            any = true;
        }
    }
    return since;
}

/* Room for one gang's subgroup views and its composition text. */
struct gang_view_buf {
    struct policy_subgroup_view *subs;
    char *text; /* POLICY_REASON_LEN * 2 */
    struct policy_hold_view *holds; /* PHOLD_VIEWS */
    /* Its domain, what it asks, its sources' disagreement (POLICY_REASON_LEN * 4 each). */
    char *domain, *topology, *conflict;
};

#define PHOLD_VIEWS 4

/* Is subgroup s of g one whose member is held for (its stand-in waits)? */
static bool sub_held(const struct pgang *g, size_t s)
{
    for (size_t i = 0; i < g->nholds; i++)
        if (g->holds[i].state == POLICY_HOLD_WAITING && strcmp(g->holds[i].sub, g->subs[s].name) == 0)
            return true;
    return false;
}

/* What g holds for members to come, into out (at most PHOLD_VIEWS). */
static size_t hold_views(const struct policy_cluster *c, const struct pgang *g,
                         struct policy_hold_view *out)
{
    size_t n = 0;

    for (size_t i = 0; out && i < g->nholds && n < PHOLD_VIEWS; i++) {
        const struct phold *h = &g->holds[i];
        const struct ppod *s = ppod_at(c, h->pod);
        const struct pnode *node = s ? pnode_at(c, s->place.node) : NULL;

        out[n++] = (struct policy_hold_view){.subgroup = h->sub,
                                             .owner = h->owner,
                                             .state = h->state,
                                             .node = node ? node->name : NULL,
                                             .cpu_milli = s ? s->cpu : 0,
                                             .memory_bytes = s ? s->memory : 0,
                                             .gpus = s ? s->gpus : 0,
                                             .asked = h->asked_at != 0};
    }
    return n;
}

/* Each subgroup's minimum and extras, and "head 1/1, gpu 3/3 (+1 extra waiting: ...)". */
static void subgroup_views(const struct policy_cluster *c, const struct pgang *g,
                           struct gang_view_buf *b)
{
    size_t off = 0;

    for (size_t s = 0; s < g->nsubs; s++)
        b->subs[s] = (struct policy_subgroup_view){.name = g->subs[s].name,
                                                   .min_members = g->subs[s].min};
    for (size_t i = 0; i < g->nmembers; i++) {
        const struct ppod *p = ppod_at(c, g->members[i]);
        struct policy_subgroup_view *v;

        if (!p || p->sub < 0 || (size_t)p->sub >= g->nsubs || p->phase == POLICY_POD_EVICTING)
            continue;
        v = &b->subs[p->sub];
        v->members++;
        /* Up to its minimum a placed member counts for it, whichever one kube-scheduler
         * asked about first (the plan's or an extra); the rest are extras. */
        if (p->phase != POLICY_POD_PENDING && v->placed < v->min_members)
            v->placed++;
        else if (p->phase != POLICY_POD_PENDING)
            v->extras_placed++;
    }
    for (size_t i = 0; i < g->nmembers; i++) {
        const struct ppod *p = ppod_at(c, g->members[i]);
        struct policy_subgroup_view *v;

        if (!p || p->sub < 0 || (size_t)p->sub >= g->nsubs || p->phase != POLICY_POD_PENDING)
            continue;
        v = &b->subs[p->sub];
        if (v->placed + v->extras_waiting < v->min_members && !g->admitted)
            continue; /* part of the minimum still to place */
        v->extras_waiting++;
        if (!v->extra_reason && p->why) {
            v->extra_reason = p->why->text;
            v->extra_why = &p->why->r;
        }
    }
    b->text[0] = '\0';
    for (size_t s = 0; s < g->nsubs && off < (POLICY_REASON_LEN * 2); s++) {
        const struct policy_subgroup_view *v = &b->subs[s];

        off += (size_t)snprintf(b->text + off, (POLICY_REASON_LEN * 2) - off, "%s%s %d/%d%s",
                                s ? ", " : "", v->name, v->placed, v->min_members,
                                sub_held(g, s) ? " held" : "");
        if (v->extras_placed && off < (POLICY_REASON_LEN * 2))
            off += (size_t)snprintf(b->text + off, (POLICY_REASON_LEN * 2) - off, " (+%d extra)",
                                    v->extras_placed);
        if (v->extras_waiting && off < (POLICY_REASON_LEN * 2))
            off += (size_t)snprintf(b->text + off, (POLICY_REASON_LEN * 2) - off,
                                    " (+%d extra waiting%s%s)", v->extras_waiting,
                                    v->extra_reason ? ": " : "",
                                    v->extra_reason ? v->extra_reason : "");
    }
}

/* A gang of minimum 0 (Volcano's minMember 0: each pod on its own) whose pods all wait is not
 * bound: it waits, for the reason its first waiting pod has. */
static const struct ppod *lone_waiting(const struct policy_cluster *c, const struct pgang *g,
                                       int32_t bound, int32_t holding)
{
    if (g->singleton || pgang_min(c, g) > 0 || bound > 0 || holding > 0)
        return NULL;
    for (size_t i = 0; i < g->nmembers; i++) {
        const struct ppod *p = ppod_at(c, g->members[i]);

        if (p && p->phase == POLICY_POD_PENDING)
            return p;
    }
    return NULL;
}

static void gang_view(const struct policy_cluster *c, const struct pgang *g,
                      struct policy_gang_view *v, struct gang_view_buf *b)
{
    int32_t members, bound, holding, waiting;
    const struct pgang *active = powner_upgrade_of(c, g);
    const struct ppod *lone;
    const struct pwhy *why = g->why;

    pgang_counts(c, g, &members, &bound, &holding, &waiting);
    for (size_t i = 0; i < g->nholds; i++) /* stand-ins are no pods that exist */
        members -= ppod_at(c, g->holds[i].pod) != NULL;
    lone = lone_waiting(c, g, bound, holding);
    if (lone)
        why = lone->why;
    *v = (struct policy_gang_view){
        .key = g->key,
        .queue = pgang_queue(c, g),
        .state = lone ? POLICY_GANG_PENDING
                 : g->admitted || (bound > 0 && pgang_satisfied(c, g, PGANG_BOUND))
                     ? POLICY_GANG_BOUND
                 : g->planned ? POLICY_GANG_PLANNED
                              : POLICY_GANG_PENDING,
        .min_members = pgang_min(c, g),
        .members = members,
        .bound = bound,
        .waiting = waiting,
        .reason = why ? why->text : NULL,
        .why = why ? &why->r : NULL,
        .priority = pgang_priority(c, g),
        .preemptible = pgang_preemptible(c, g),
        .running_since = g->admitted ? g->running_since : 0,
        .conflict = g->conflict,
        .since = gang_since(c, g),
        .owner_kind = g->owner_kind,
        .owner = g->owner,
        .upgrade_of = active ? active->key : NULL,
    };
    if (b && b->holds) {
        v->nholds = hold_views(c, g, b->holds);
        v->holds = b->holds;
    }
    if (b && b->domain && ptopo_constrained(g)) {
        if (ptopo_domain_text(c, g, b->domain, POLICY_REASON_LEN * 4))
            v->domain = b->domain;
        if (ptopo_want_text(c, g, b->topology, POLICY_REASON_LEN * 4, &v->topology_key))
            v->topology = b->topology;
    }
    if (b && b->conflict && g->topo_conflict) {
        snprintf(b->conflict, POLICY_REASON_LEN * 4, "%s%s%s", g->conflict ? g->conflict : "",
                 g->conflict ? "; " : "", g->topo_conflict);
        v->conflict = b->conflict;
    }
    for (int src = 0; src < POLICY_GANG_SOURCES; src++)
        v->declared[src] = pgang_decl(g, src)->on;
    if (b && b->subs && g->nsubs) {
        subgroup_views(c, g, b);
        v->nsubgroups = g->nsubs;
        v->subgroups = b->subs;
        v->composition = b->text;
    }
    if (v->state == POLICY_GANG_BOUND) {
        v->reason = NULL;
        v->why = NULL;
    }
}

bool policy_gang_view_get(const struct policy_cluster *c, const char *key,
                          struct policy_gang_view *out)
{
    const struct pgang *g = pgang_at(c, pidx_get(&c->gang_ix, key));

    if (!g) {
        const struct ppod *p = ppod_at(c, pidx_get(&c->pod_ix, key));

        g = p ? ppod_gang(c, p) : NULL;
        if (!g || !g->singleton)
            return false;
    }
    /* The subgroup views live in the engine's scratch until the next call. */
    {
        struct policy_cluster *m = (struct policy_cluster *)c;
        struct gang_view_buf b = {.text = m->view_text, .holds = m->view_holds,
                                  .domain = m->view_domain, .topology = m->view_topology,
                                  .conflict = m->view_conflict};

        if (g->nsubs > m->view_subs_cap) {
            struct policy_subgroup_view *v =
                realloc(m->view_subs, g->nsubs * sizeof(*m->view_subs));

            if (v) {
                m->view_subs = v;
                m->view_subs_cap = g->nsubs;
            }
        }
        b.subs = g->nsubs <= m->view_subs_cap ? m->view_subs : NULL;
        gang_view(c, g, out, &b);
    }
    return true;
}


static int cmp_gang_key(const void *a, const void *b)
{
    const struct pgang *x = *(struct pgang *const *)a, *y = *(struct pgang *const *)b;

    return strcmp(x->key, y->key);
}

void policy_each_gang(const struct policy_cluster *c, policy_gang_fn fn, void *ctx)
{
    const struct pgang **all = malloc((c->gangs.n ? c->gangs.n : 1) * sizeof(*all));
    size_t n = 0;

    if (!all)
        return;
    for (size_t i = 0; i < c->gangs.n; i++) {
        const struct pgang *g = c->gangs.items[i];

        if (g && (g->nmembers > 0 || pgang_declared(g)))
            all[n++] = g;
    }
    qsort(all, n, sizeof(*all), cmp_gang_key);
    for (size_t i = 0; i < n; i++) {
        struct policy_gang_view v;
        char text[POLICY_REASON_LEN * 2], domain[POLICY_REASON_LEN * 4];
        char topology[POLICY_REASON_LEN * 4], conflict[POLICY_REASON_LEN * 4];
        struct policy_hold_view holds[PHOLD_VIEWS];
        struct gang_view_buf b = {
            .subs = all[i]->nsubs ? calloc(all[i]->nsubs, sizeof(*b.subs)) : NULL,
            .text = text,
            .holds = holds,
            .domain = domain,
            .topology = topology,
            .conflict = conflict};

        gang_view(c, all[i], &v, &b);
        fn(&v, ctx);
        free(b.subs);
    }
    free(all);
}

void policy_each_conflicting_gang(const struct policy_cluster *c, policy_gang_fn fn, void *ctx)
{
    for (size_t i = 0; i < c->gangs.n; i++) {
        const struct pgang *g = c->gangs.items[i];
        struct policy_gang_view v;
        char text[POLICY_REASON_LEN * 2], domain[POLICY_REASON_LEN * 4];
        char topology[POLICY_REASON_LEN * 4], conflict[POLICY_REASON_LEN * 4];
        struct policy_hold_view holds[PHOLD_VIEWS];
        struct gang_view_buf b = {.text = text, .holds = holds, .domain = domain,
                                  .topology = topology, .conflict = conflict};

        if (!g || !(g->conflict || g->topo_conflict) || !(g->nmembers > 0 || pgang_declared(g)))
            continue;
        b.subs = g->nsubs ? calloc(g->nsubs, sizeof(*b.subs)) : NULL;
        gang_view(c, g, &v, &b);
        fn(&v, ctx);
        free(b.subs);
    }
}

static int cmp_queue_name(const void *a, const void *b)
{
    const struct pqueue *x = *(struct pqueue *const *)a, *y = *(struct pqueue *const *)b;

    return strcmp(x->name, y->name);
}

/* How many gangs wait in each queue (by queue id), in one pass over the gangs. */
static int32_t *pending_gangs(const struct policy_cluster *c)
{
    int32_t *n = calloc(c->queues.n ? c->queues.n : 1, sizeof(*n));

    for (size_t i = 0; n && i < c->gangs.n; i++) {
        const struct pgang *g = c->gangs.items[i];
        int32_t q, bound;

        if (!g || g->nmembers == 0 || g->admitted || g->planned)
            continue;
        pgang_counts(c, g, NULL, &bound, NULL, NULL);
        if (bound < pgang_min(c, g) && (q = pidx_get(&c->queue_ix, pgang_queue(c, g))) >= 0)
            n[q]++;
    }
    return n;
}

void policy_each_queue(const struct policy_cluster *c, policy_queue_fn fn, void *ctx)
{
    const struct pqueue **all = malloc((c->queues.n ? c->queues.n : 1) * sizeof(*all));
    int32_t *pending;
    size_t n = 0;

    if (!all)
        return;
    /* Fair shares are a cache of the engine's state: brought up to date here. */
    pfair_refresh((struct policy_cluster *)c);
    pending = pending_gangs(c);
    for (size_t i = 0; i < c->queues.n; i++)
        if (c->queues.items[i])
            all[n++] = c->queues.items[i];
    qsort(all, n, sizeof(*all), cmp_queue_name);
    for (size_t i = 0; i < n; i++) {
        const struct pqueue *q = all[i];
        struct policy_queue_view v = {
            .name = q->name,
            .implicit = q->implicit,
            .parent = q->parent,
            .priority = q->priority,
            .quota = q->quota,
            .limit = q->limit,
            .over_quota_weight = q->weight,
            .allocated = q->allocated,
            .reserved = q->reserved,
            .demand = q->demand,
            .fair_share = q->fair_share,
            .reclaim_min_runtime_ms = q->reclaim_min_runtime,
            .preempt_min_runtime_ms = q->preempt_min_runtime,
            .pending_gangs = pending ? pending[pidx_get(&c->queue_ix, q->name)] : 0,
            .has_recent_usage = q->usage && q->usage->published,
            .recent_usage_at = c->usage_published,
            .fair_share_without_usage = q->fair_share_plain,
        };

        for (int r = 0; v.has_recent_usage && r < POLICY_RES_COUNT; r++)
            v.recent_usage.v[r] = (int64_t)llround(q->usage->recent[r] * POLICY_USAGE_UNIT);

        fn(&v, ctx);
    }
    free(all);
    free(pending);
}

static int cmp_node_name(const void *a, const void *b)
{
    const struct pnode *x = *(struct pnode *const *)a, *y = *(struct pnode *const *)b;

    return strcmp(x->name, y->name);
}

void policy_each_node(const struct policy_cluster *c, policy_node_fn fn, void *ctx)
{
    struct pnode **all = malloc((c->nodes.n ? c->nodes.n : 1) * sizeof(*all));
    size_t n = 0;

    if (!all)
        return;
    for (size_t i = 0; i < c->nodes.n; i++)
        if (c->nodes.items[i])
            all[n++] = c->nodes.items[i];
    qsort(all, n, sizeof(*all), cmp_node_name);
    for (size_t i = 0; i < n; i++) {
        struct pnode *node = all[i];
        struct policy_gpu_group_view *gv = calloc(node->ngroups ? node->ngroups : 1, sizeof(*gv));
        char(*names)[12] = calloc(node->ngroups ? node->ngroups : 1, sizeof(*names));
        struct policy_node_view v = {
            .name = node->name,
            .cpu_milli = node->cpu,
            .memory_bytes = node->memory,
            .pods = node->pods,
            .gpus = node->gpus,
            .gpu_memory_mib = node->gpu_memory_mib,
            .cpu_used = node->cpu_used,
            .memory_used = node->memory_used,
            .pods_used = node->pods_used,
            .gpus_whole_used = node->whole_used,
            .ngroups = node->ngroups,
            .groups = gv,
            .labels = node->labels,
            .nlabels = node->nlabels,
        };

        if (!gv || !names) {
            free(gv);
            free(names);
            break;
        }
        for (size_t k = 0; k < node->ngroups; k++) {
            snprintf(names[k], sizeof(names[k]), "g%d", node->groups[k].id);
            gv[k] = (struct policy_gpu_group_view){names[k], node->groups[k].used,
                                                   node->groups[k].pods};
        }
        fn(&v, ctx);
        free(gv);
        free(names);
    }
    free(all);
}

bool policy_pod_by_uid(const struct policy_cluster *c, const char *uid, char *buf, size_t len)
{
    const struct ppod *p = ppod_at(c, pidx_get(&c->uid_ix, uid));

    if (!p)
        return false;
    snprintf(buf, len, "%s", p->key);
    return true;
}

bool policy_node_known(const struct policy_cluster *c, const char *name)
{
    return pidx_get(&c->node_ix, name) >= 0;
}
