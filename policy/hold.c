/*
 * hold.c - room held in a gang for a member that does not exist yet, and what a gang's owner
 * changes.
 *
 * A RayJob's submitter pod (K8sJobMode) is made by KubeRay only once the job's RayCluster is
 * ready, so a gang barrier cannot wait for it (KAI refuses such a RayJob; Volcano leaves it out
 * of minMember and only counts it in minResources, at admission). muster holds its room: a hold
 * puts a stand-in member into the gang (a held ppod, in the hold's subgroup, of minimum 1 while
 * it stands), which the gang's plan places like any member and charges to its node and queue.
 * The barrier and admission count a placed stand-in as there (gang.c), it is never filtered,
 * bound or evicted, and it goes:
 *   - when a pod of its subgroup arrives: the pod takes its room (its own ask, on that node, if
 *     it fits there) and the subgroup's minimum drops to 0 (the pod is an extra);
 *   - when the hold is forgotten (the RayJob finished, was suspended or deleted);
 *   - planTTL after the pod was asked for (the operator made the submitter's Job) if it never
 *     came (a restart that did not see it, a submitter another scheduler placed and finished);
 *   - with its gang: a gang that neither runs nor is planned gives the room back and plans it
 *     again with its members (evicted whole, plan expired); a running gang's stand-in whose
 *     node went is placed again, or the room is lost (LOST: its pod is placed on arrival).
 *
 * Owners: a RayCluster's ray.io/originated-from-crd and -cr-name labels name the RayJob or
 * RayService that made it. Of one RayService's clusters, one that waits while another runs is
 * its upgrade (KubeRay's NewCluster strategy keeps the active cluster until the pending one is
 * ready): the running one is never its victim (reclaim.c), its reason says "upgrade of
 * RayService ns/name waits: ...", and a queue may let it go over its limit by what the
 * running one holds (policy_queue_spec.upgrade_burst).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "arith.h"
#include "internal.h"

#define PHOLD_MAX 4 /* holds per gang (a RayJob has one submitter) */

const char *policy_owner_kind_name(enum policy_owner_kind k)
{
    return k == POLICY_OWNER_RAYJOB ? "RayJob" : k == POLICY_OWNER_RAYSERVICE ? "RayService" : "";
}

const char *policy_hold_state_name(enum policy_hold_state s)
{
    static const char *const names[] = {"Waiting", "Arrived", "Expired", "Lost"};

    return s <= POLICY_HOLD_LOST ? names[s] : "?";
}

/* ---- owners ---------------------------------------------------------------- */

static bool listed(const struct pids *s, int32_t id)
{
    for (size_t i = 0; i < s->n; i++)
        if (s->v[i] == id)
            return true;
    return false;
}

int powner_refresh(struct policy_cluster *c, struct pgang *g)
{
    const struct pdecl *d = NULL;

    for (int s = 0; s < POLICY_GANG_SOURCES && !d; s++)
        if (pgang_decl(g, s)->on && pgang_decl(g, s)->owner)
            d = pgang_decl(g, s);
    g->owner_kind = d ? d->owner_kind : POLICY_OWNER_NONE;
    pset_str(&g->owner, d ? d->owner : NULL);
    if (d && !g->owner)
        return POLICY_ENOMEM;
    if (!d) {
        pids_remove(&c->owned, g->id);
        return POLICY_OK;
    }
    return listed(&c->owned, g->id) ? POLICY_OK : pids_add(&c->owned, g->id);
}

bool powner_siblings(const struct pgang *a, const struct pgang *b)
{
    return a != b && a->owner_kind == POLICY_OWNER_RAYSERVICE &&
           b->owner_kind == POLICY_OWNER_RAYSERVICE && a->owner && b->owner &&
           strcmp(a->owner, b->owner) == 0;
}

struct pgang *powner_upgrade_of(const struct policy_cluster *c, const struct pgang *g)
{
    if (g->owner_kind != POLICY_OWNER_RAYSERVICE || g->admitted)
        return NULL;
    for (size_t i = 0; i < c->owned.n; i++) {
        struct pgang *h = pgang_at(c, c->owned.v[i]);

        if (h && h->admitted && powner_siblings(g, h))
            return h;
    }
    return NULL;
}

void powner_explain(const struct policy_cluster *c, const struct pgang *g, struct preason *why)
{
    if (!why || !g->owner || why->r.kind == POLICY_REASON_NONE)
        return;
    why->r.owner = g->owner;
    why->r.owner_kind = g->owner_kind;
    why->r.upgrade = powner_upgrade_of(c, g) != NULL;
}

/* Does q lie on queue line of `leaf` (leaf itself or an ancestor)? */
static bool on_line(const struct policy_cluster *c, const struct pqueue *leaf,
                    const struct pqueue *q)
{
    for (int d = 0; leaf && d < POLICY_MAX_QUEUE_DEPTH; leaf = pqueue_parent(c, leaf), d++)
        if (leaf == q)
            return true;
    return false;
}

void powner_burst(const struct policy_cluster *c, const struct pgang *g, const struct pqueue *q,
                  struct policy_resources *extra)
{
    const struct pgang *h;

    memset(extra, 0, sizeof(*extra));
    if (!g || !q->upgrade_burst || !(h = powner_upgrade_of(c, g)) ||
        !on_line(c, pqueue_find(c, pgang_queue(c, h)), q))
        return;
    for (size_t i = 0; i < h->nmembers; i++) {
        const struct ppod *p = ppod_at(c, h->members[i]);
        struct policy_resources r;

        if (!p || p->place.node < 0 || p->phase == POLICY_POD_EVICTING)
            continue;
        ppod_charge_resources(p, p->place.share, &r);
        for (int k = 0; k < POLICY_RES_COUNT; k++)
            extra->v[k] = parith_add(extra->v[k], r.v[k]);
    }
}

/* ---- holds ----------------------------------------------------------------- */

static struct phold *hold_find(const struct pgang *g, const char *sub)
{
    for (size_t i = 0; sub && i < g->nholds; i++)
        if (strcmp(g->holds[i].sub, sub) == 0)
            return &g->holds[i];
    return NULL;
}

static bool sub_held_waiting(const struct pgang *g, const char *sub)
{
    const struct phold *h = hold_find(g, sub);

    return h && h->state == POLICY_HOLD_WAITING;
}

int phold_compose(struct pgang *g, struct psubgroup **subs, size_t *nsubs, int32_t *min)
{
    for (size_t i = 0; i < g->nholds; i++) {
        const struct phold *h = &g->holds[i];
        struct psubgroup *grown;
        bool declared = false;

        for (size_t s = 0; s < *nsubs && !declared; s++)
            declared = strcmp((*subs)[s].name, h->sub) == 0;
        if (declared) /* a source declares that subgroup itself: its minimum stands */
            continue;
        if (!(grown = realloc(*subs, (*nsubs + 1) * sizeof(*grown))))
            return POLICY_ENOMEM;
        *subs = grown;
        /* no constraint of its own (topology.c reads want and other): all zero */
        grown[*nsubs] = (struct psubgroup){.min = h->state == POLICY_HOLD_WAITING ? 1 : 0};
        if (!(grown[*nsubs].name = pstrdup(h->sub)))
            return POLICY_ENOMEM;
        *min += grown[(*nsubs)++].min;
    }
    return POLICY_OK;
}

void phold_free_all(struct pgang *g)
{
    for (size_t i = 0; i < g->nholds; i++) {
        free(g->holds[i].sub);
        free(g->holds[i].owner);
    }
    free(g->holds);
    g->holds = NULL;
    g->nholds = 0;
}

/* Is a pod (not a stand-in) of subgroup sub a member of g? */
static bool sub_has_pod(const struct policy_cluster *c, const struct pgang *g, const char *sub)
{
    for (size_t i = 0; i < g->nmembers; i++) {
        const struct ppod *p = ppod_at(c, g->members[i]);

        if (p && !p->held && p->subgroup && strcmp(p->subgroup, sub) == 0)
            return true;
    }
    return false;
}

/* The stand-in's pod spec: "submitter of RayJob lab/train" in the gang's namespace. */
static int standin_make(struct policy_cluster *c, struct pgang *g, struct phold *h,
                        const struct policy_hold_spec *s, int64_t now, int32_t *id)
{
    const char *slash = strchr(g->key, '/');
    char ns[256], name[POLICY_REASON_LEN];
    struct policy_pod_spec ps;

    snprintf(ns, sizeof(ns), "%.*s", slash ? (int)(slash - g->key) : 0, g->key);
    snprintf(name, sizeof(name), "%s of %s", h->sub, h->owner ? h->owner : g->key);
    ps = (struct policy_pod_spec){.namespace_ = *ns ? ns : "default",
                                  .name = name,
                                  .uid = "",
                                  .cpu_milli = s->cpu_milli,
                                  .memory_bytes = s->memory_bytes,
                                  .gpus = s->gpus,
                                  .node_selector = s->node_selector,
                                  .nnode_selector = s->nnode_selector,
                                  .tolerations = s->tolerations,
                                  .ntolerations = s->ntolerations,
                                  .gang = g->key,
                                  .subgroup = h->sub,
                                  .managed = true};
    return pmodel_standin(c, g, &ps, now, id);
}

/* Does the stand-in ask what the spec asks (the same room, the same nodes)? */
static bool standin_same(const struct ppod *p, const struct policy_hold_spec *s)
{
    struct pselector sel = {0};
    bool same;

    if (p->cpu != pask_counted(s->cpu_milli, POLICY_MAX_CPU_MILLI) ||
        p->memory != pask_counted(s->memory_bytes, POLICY_MAX_MEMORY_BYTES) ||
        p->gpus != pask_counted(s->gpus, POLICY_MAX_GPUS))
        return false;
    if (pselector_copy(&sel, s->node_selector, s->nnode_selector, NULL, 0, s->tolerations,
                       s->ntolerations) != POLICY_OK) {
        pselector_cleanup(&sel);
        return false;
    }
    same = pselector_equal(&p->sel, &sel);
    pselector_cleanup(&sel);
    return same;
}

static void list_holding(struct policy_cluster *c, const struct pgang *g)
{
    if (g->nholds > 0 && !listed(&c->holding, g->id))
        pids_add(&c->holding, g->id); /* out of memory: expiry and settling skip it */
    else if (g->nholds == 0)
        pids_remove(&c->holding, g->id);
}

/* A new hold on g: waiting, or arrived already when a pod of its subgroup is there. */
static struct phold *hold_add(struct policy_cluster *c, struct pgang *g,
                              const struct policy_hold_spec *s)
{
    struct phold *v, *h;

    if (g->nholds >= PHOLD_MAX)
        return NULL;
    if (!(v = realloc(g->holds, (g->nholds + 1) * sizeof(*v))))
        return NULL;
    g->holds = v;
    h = &v[g->nholds];
    *h = (struct phold){.sub = pstrdup(s->subgroup),
                        .owner = s->owner && *s->owner ? pstrdup(s->owner) : NULL,
                        .state = sub_has_pod(c, g, s->subgroup) ? POLICY_HOLD_ARRIVED
                                                                : POLICY_HOLD_WAITING,
                        .pod = -1};
    if (!h->sub || (s->owner && *s->owner && !h->owner)) {
        free(h->sub);
        free(h->owner);
        return NULL;
    }
    g->nholds++;
    list_holding(c, g);
    return h;
}

int policy_hold_upsert(struct policy_cluster *c, const struct policy_hold_spec *s, int64_t now)
{
    struct pgang *g;
    struct phold *h;
    struct ppod *p;
    bool changed = false;
    int32_t old = -1, id;

    if (!s || !s->gang || !*s->gang || !strchr(s->gang, '/') || !s->subgroup || !*s->subgroup)
        return POLICY_EINVAL;
    if (now > c->clock)
        c->clock = now;
    if (!(g = pmodel_gang(c, s->gang)))
        return POLICY_ENOMEM;
    if (!(h = hold_find(g, s->subgroup))) {
        if (!(h = hold_add(c, g, s))) {
            pmodel_gang_drop_if_empty(c, g);
            return g->nholds >= PHOLD_MAX ? POLICY_ELIMIT : POLICY_ENOMEM;
        }
        changed = true;
    } else if (s->owner && *s->owner) {
        pset_str(&h->owner, s->owner);
    }
    if (!s->asked)
        h->asked_at = 0;
    else if (h->asked_at == 0)
        h->asked_at = now != 0 ? now : 1;
    p = ppod_at(c, h->pod);
    if (h->state == POLICY_HOLD_WAITING && !(p && standin_same(p, s))) {
        /* The new stand-in first: the gang keeps a member while the old one goes. */
        old = h->pod;
        if (standin_make(c, g, h, s, now, &id) != POLICY_OK)
            return POLICY_ENOMEM;
        h = hold_find(g, s->subgroup); /* the stand-in's attach may not move holds, but be sure */
        h->pod = id;
        pmodel_pod_remove(c, old);
        changed = true;
    }
    if (!changed)
        return POLICY_OK;
    c->change_epoch++;
    c->fair_dirty = true;
    if (pgang_compose(c, g) != POLICY_OK)
        return POLICY_ENOMEM;
    if (!g->admitted) {
        c->maybe_partial = true; /* a cluster bound before its hold was known completes it */
        pgang_mark_waiting(c, g);
    }
    phold_settle(c);
    return POLICY_OK;
}

/* Take hold h out of g (its stand-in is the caller's). */
static void hold_remove(struct policy_cluster *c, struct pgang *g, struct phold *h)
{
    size_t i = (size_t)(h - g->holds);

    free(h->sub);
    free(h->owner);
    memmove(&g->holds[i], &g->holds[i + 1], (g->nholds - i - 1) * sizeof(*h));
    g->nholds--;
    list_holding(c, g);
}

int policy_hold_forget(struct policy_cluster *c, const char *gang, const char *sub)
{
    struct pgang *g = pgang_at(c, gang ? pidx_get(&c->gang_ix, gang) : -1);
    struct phold *h = g ? hold_find(g, sub) : NULL;
    int32_t standin;

    if (!h)
        return POLICY_ENOENT;
    standin = h->pod;
    hold_remove(c, g, h);
    c->change_epoch++;
    c->fair_dirty = true;
    pgang_compose(c, g);
    /* Last: the stand-in leaving may take an undeclared gang with it. */
    if (ppod_at(c, standin))
        pmodel_pod_remove(c, standin);
    else
        pmodel_gang_drop_if_empty(c, g);
    return POLICY_OK;
}

/* Does p fit on node id with its queue's leave, as it asks there? Its place into pl. */
static bool fits_on(const struct policy_cluster *c, const struct pgang *g, const struct ppod *p,
                    int32_t id, struct pplace *pl)
{
    const struct pnode *n = pnode_at(c, id);
    struct policy_resources need;
    enum pfit_why w;

    if (!n || !pfit_static(n, p, &w) || !pfit_resources(n, p, c->opts.strategy, pl, &w))
        return false;
    pl->node = id;
    ppod_charge_resources(p, pl->share, &need);
    return pqueue_room(c, g, p->queue, &need, NULL) == 0;
}

void phold_arrive(struct policy_cluster *c, struct pgang *g, struct ppod *p, int64_t now)
{
    struct phold *h = hold_find(g, p->subgroup);
    struct ppod *standin;
    struct pstatement st = {0};
    struct pplace pl;
    int32_t node = -1, sid;

    if (!h || h->state != POLICY_HOLD_WAITING)
        return;
    sid = h->pod;
    standin = ppod_at(c, sid);
    if (standin && standin->phase == POLICY_POD_PLANNED)
        node = standin->place.node;
    h->state = POLICY_HOLD_ARRIVED;
    h->pod = -1;
    pmodel_pod_remove(c, sid); /* g keeps p: it does not go with its stand-in */
    pgang_compose(c, g);
    /* The room was held for this pod: it takes it, with its own ask, where it fits (its own
     * scheduler places one muster does not schedule; a bound one is charged where it runs). */
    if (node < 0 || !p->managed || p->bound_node || p->phase != POLICY_POD_PENDING ||
        !fits_on(c, g, p, node, &pl) || pstatement_place(c, &st, p, &pl) != POLICY_OK) {
        pstatement_discard(c, &st);
        return;
    }
    pstatement_keep(&st);
    p->extra = true; /* its subgroup's minimum is 0 now */
    pgang_plan_renew(c, g, now);
}

/* The gangs with holds, copied: settling or expiring one may drop it from c->holding. */
static int32_t *holding_ids(const struct policy_cluster *c, size_t *n)
{
    int32_t *ids = malloc((c->holding.n ? c->holding.n : 1) * sizeof(*ids));

    *n = 0;
    if (ids) {
        if (c->holding.n) /* holding.v is NULL while nothing was ever held */
            memcpy(ids, c->holding.v, c->holding.n * sizeof(*ids));
        *n = c->holding.n;
    }
    return ids;
}

/* The stand-in of hold i of g gives up: the room is lost (or expired); its subgroup asks for
 * nothing more. An undeclared gang with no member left goes with it. */
static void standin_give_up(struct policy_cluster *c, struct pgang *g, size_t i,
                            enum policy_hold_state why)
{
    int32_t sid = g->holds[i].pod;

    g->holds[i].state = why;
    g->holds[i].pod = -1;
    pgang_compose(c, g);
    c->change_epoch++;
    c->fair_dirty = true;
    pmodel_pod_remove(c, sid);
}

/*
 * Does g run but for what it holds: its real members bound meet every minimum once the
 * subgroups held for are left out? (A running gang; or one seen bound after a restart, its hold
 * told afterwards.)
 */
static bool runs_but_for_holds(const struct policy_cluster *c, const struct pgang *g)
{
    int32_t stack[16], *per = g->nsubs <= 16 ? stack : malloc(g->nsubs * sizeof(*per));
    int32_t total, held = 0;
    bool ok;

    if (g->admitted)
        return true;
    if (!per)
        return false;
    total = pgang_tally(c, g, PGANG_BOUND, per);
    for (size_t s = 0; s < g->nsubs; s++)
        if (sub_held_waiting(g, g->subs[s].name))
            per[s]++, held++;
    ok = total > 0 && total + held >= pgang_min(c, g);
    for (size_t s = 0; ok && s < g->nsubs; s++)
        ok = per[s] >= g->subs[s].min;
    if (per != stack)
        free(per);
    return ok;
}

bool phold_settle_gang(struct policy_cluster *c, struct pgang *g)
{
    bool placed = false;

    if (g->nholds == 0 || !runs_but_for_holds(c, g))
        return false;
    for (size_t i = 0; i < g->nholds; i++) {
        struct ppod *s = ppod_at(c, g->holds[i].pod);
        struct pstatement st = {0};

        if (!s || s->phase != POLICY_POD_PENDING)
            continue;
        /* A running gang's member to come: placed on its own, anywhere. */
        if (pplan_one_try(c, s, NULL, 0, &st, NULL) == 0) {
            pstatement_keep(&st);
            placed = true;
            continue;
        }
        pstatement_discard(c, &st);
        standin_give_up(c, g, i, POLICY_HOLD_LOST); /* g runs: it stays */
        placed = true;
    }
    return placed;
}

void phold_settle(struct policy_cluster *c)
{
    size_t n;
    int32_t *ids = holding_ids(c, &n);

    for (size_t k = 0; ids && k < n; k++) {
        struct pgang *g = pgang_at(c, ids[k]);

        if (g && phold_settle_gang(c, g))
            pgang_note_bound(c, g);
    }
    free(ids);
}

void phold_expire(struct policy_cluster *c, int64_t now)
{
    size_t n;
    int32_t *ids;

    if (c->holding.n == 0)
        return;
    ids = holding_ids(c, &n);
    for (size_t k = 0; ids && k < n; k++) {
        struct pgang *g = pgang_at(c, ids[k]);

        for (size_t i = 0; g && i < g->nholds; i++) {
            const struct phold *h = &g->holds[i];

            if (h->state != POLICY_HOLD_WAITING || h->asked_at == 0 ||
                now - h->asked_at <= c->opts.plan_ttl_ms)
                continue;
            standin_give_up(c, g, i, POLICY_HOLD_EXPIRED);
            g = pgang_at(c, ids[k]);
            if (!g || g->id != ids[k])
                break;
        }
    }
    free(ids);
}

void phold_release(struct policy_cluster *c, struct pgang *g)
{
    for (size_t i = 0; i < g->nholds; i++) {
        struct ppod *s = ppod_at(c, g->holds[i].pod);

        if (s && s->phase == POLICY_POD_PLANNED) {
            puncharge(c, s);
            s->phase = POLICY_POD_PENDING;
            s->extra = false;
        }
    }
}
