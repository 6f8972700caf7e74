/*
 * reclaim.c - which running gangs may be evicted for a gang that waits for
 * capacity, and whether that would make it fit.
 *
 * Reclaim, between queues (KAI's reclaim action and proportion plugin), by
 * muster's victim rule (docs/quota.md, "The victim rule"): with its ask, the
 * reclaimer's queue and each ancestor below where its path meets a victim's
 * stay within their fair share (and a non-preemptible reclaimer within quota);
 * every queue on a victim's path, from where it meets the reclaimer's path
 * down to the victim's own queue, holds more than it may when the victim is
 * taken (more than max(quota, fair share) in some resource: KAI's
 * MaintainFairShare; or more than its quota, when the reclaimer stays within
 * its quota: GuaranteeDeservedQuota); and none of those queues ends below its
 * quota in a resource in which the reclaimer is over its own quota: in-quota
 * usage is never taken for over-quota work; and, taken for the reclaimer's fair
 * share, a victim that could come back within its queue's share leaves that
 * queue no less saturated than the reclaimer's (KAI's relative order). A victim
 * gang that would break that is refused whole, never split. Usage counts bound
 * and planned pods the same way everywhere; pods being evicted count for nobody.
 *
 * Preemption, inside one queue: victims are running gangs of strictly lower
 * priority, preemptible, past the queue's preemptMinRuntime.
 *
 * Victims are whole running gangs, an elastic gang's members beyond its
 * minimum, or the plan of a gang still waiting for its own victims to leave
 * (taking it costs no eviction: the room held for it, and the pods leaving
 * for it, pass to the reclaimer). The order: plans first, then the queue most
 * over its fair share (saturation, compared where the paths part), lowest
 * priority, members beyond a minimum before whole gangs, most recently
 * started. Victims are taken one at a time until a dry run shows the waiting
 * gang fits whole; those it turns out not to need are given back; the
 * reclaimer is planned on the room and the whole choice is checked once more
 * with what that plan really asks (a gpu-memory share is known on its node).
 * Only then may the caller decide (preclaim_decide) or drop it
 * (preclaim_abort). A pending member of a gang bound whole (beyond its
 * minimum, or re-created) is a reclaimer on its own, for what it alone asks.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "arith.h"
#include "internal.h"

enum unit_kind {
    UNIT_PLAN,  /* a waiting gang's plan on room still being freed for it */
    UNIT_EXTRA, /* one bound member beyond its gang's minimum */
    UNIT_WHOLE, /* a whole running gang */
};

struct victim {
    struct pgang *g;
    enum unit_kind unit;
    size_t first, npods;   /* its pods: s->pool[first .. first + npods) */
    size_t first_held, nheld; /* a plan's: the pods leaving for it, s->pool[...] */
    const struct pqueue *leaf, *lv, *lr; /* its queue; its and the reclaimer's where they part */
    struct policy_resources charge; /* what it frees in its queues */
    struct policy_resources back;   /* the least it asks to run again (rule 5, comeback) */
    double saturation;
    int32_t priority;
    int64_t since;
    bool taken;
    bool outside; /* none of its pods in the domain the search tries now (topology) */
    struct pstatement lifted, held; /* while taken: its pods, and a plan's leavers, lifted */
};

struct psearch {
    struct policy_cluster *c;
    struct pgang *g;
    struct ppod *x; /* a member beyond g's minimum that waits for room; NULL: g's minimum */
    enum policy_eviction_kind kind;
    const struct pqueue *rq; /* the reclaimer's queue */
    struct pgang *assume;    /* a probe's: counted as bound just now, a victim like the rest */
    int64_t now;
    struct policy_resources need; /* what the reclaimer asks: estimated, then as planned */
    struct policy_resources need0; /* ... as estimated */
    struct victim *v;
    size_t n, cap;
    struct ppod **pool;
    size_t npool, cap_pool;
    /* Per queue id: its usage before anything was taken; where a victim of that queue parts
     * from the reclaimer's path (LEVEL_UNKNOWN until asked, LEVEL_NONE when nothing may be
     * taken from it), and the reclaimer's queue there. */
    struct policy_resources *used0;
    int32_t *level, *level_r;
    struct ppod **scratch;
    size_t cap_scratch;
    struct pstatement plan; /* the reclaimer, placed on its victims' room */
};

#define LEVEL_UNKNOWN (-2)
#define LEVEL_NONE (-1)

#define VPOD(s, v, k) ((s)->pool[(v)->first + (k)])
#define VHELD(s, v, k) ((s)->pool[(v)->first_held + (k)])

/* ---- the rule's arithmetic ------------------------------------------------------- */

static bool over(int64_t used, int64_t mark)
{
    return mark >= 0 && used > mark;
}

/* What q uses with the reclaimer's ask: added, unless its plan is charged already. */
static int64_t with_ask(const struct psearch *s, int64_t used, int r)
{
    return s->plan.n ? used : parith_add(used, s->need.v[r]);
}

/* From the reclaimer's queue up to lr: within its fair share with the ask, and, for a
 * non-preemptible reclaimer, its non-preemptible usage within quota. */
static bool reclaimer_within_share(const struct psearch *s, const struct pqueue *lr)
{
    for (const struct pqueue *q = s->rq; q; q = pqueue_parent(s->c, q)) {
        for (int r = 0; r < POLICY_RES_COUNT; r++) {
            if (with_ask(s, pqueue_used(q, r), r) > q->fair_share.v[r])
                return false;
            if (!s->g->preemptible && over(with_ask(s, q->nonpreemptible.v[r], r), q->quota.v[r]))
                return false;
        }
        if (q == lr)
            break;
    }
    return true;
}

/* From the reclaimer's queue up to lr: within quota with the ask, in resource res (-1: all). */
static bool reclaimer_within_quota(const struct psearch *s, const struct pqueue *lr, int res)
{
    for (const struct pqueue *q = s->rq; q; q = pqueue_parent(s->c, q)) {
        for (int r = 0; r < POLICY_RES_COUNT; r++)
            if ((res < 0 || r == res) && over(with_ask(s, pqueue_used(q, r), r), q->quota.v[r]))
                return false;
        if (q == lr)
            break;
    }
    return true;
}

/* What q may not be taken below in resource r: its in-quota usage, as it was. */
static int64_t quota_floor(const struct psearch *s, const struct pqueue *q, int r)
{
    int64_t used = s->used0[pidx_get(&s->c->queue_ix, q->name)].v[r];

    return q->quota.v[r] < 0 || used < q->quota.v[r] ? used : q->quota.v[r];
}

/*
 * Rule 5: taken for the reclaimer's fair share, a victim does not leave its queue so far
 * below the reclaimer's that it, made again, would run within its fair share there: where
 * the paths part, the reclaimer's queue ends no more saturated (used / fair share) than the
 * victim's, or the victim could not come back (KAI's relative order: the queue with the
 * lowest ratio keeps it). Else the room it leaves is filled, and it takes it back. v's room
 * is taken already, or not yet.
 */
static bool ordered_after(const struct psearch *s, const struct victim *v)
{
    struct policy_resources r, w;
    bool returns = true;

    for (int k = 0; k < POLICY_RES_COUNT; k++) {
        r.v[k] = with_ask(s, pqueue_used(v->lr, k), k);
        w.v[k] = pqueue_used(v->lv, k);
        if (!v->taken)
            w.v[k] = parith_sub(w.v[k], v->charge.v[k]);
        returns &= parith_add(w.v[k], v->back.v[k]) <= v->lv->fair_share.v[k];
    }
    return !returns || pqueue_saturation(v->lr, &r) <= pqueue_saturation(v->lv, &w);
}

/*
 * May v be taken now, on top of what is taken already? Every queue on its path down from
 * where it parts from the reclaimer's holds more than it may, and none goes below its quota
 * in a resource the reclaimer is over its own quota in.
 */
static bool path_allows(const struct psearch *s, const struct victim *v)
{
    bool guarantee;

    if (s->kind == POLICY_EVICT_PREEMPT)
        return true;
    /* The reclaimer up to where the paths part, with what is taken so far. */
    if (!reclaimer_within_share(s, v->lr))
        return false;
    guarantee = reclaimer_within_quota(s, v->lr, -1);
    for (const struct pqueue *q = v->leaf; q; q = pqueue_parent(s->c, q)) {
        bool more = false;

        for (int r = 0; r < POLICY_RES_COUNT; r++) {
            int64_t used = pqueue_used(q, r);

            more |= over(used, pqueue_allocatable(q, r));
            more |= guarantee && over(used, q->quota.v[r]);
            if (v->charge.v[r] > 0 && !reclaimer_within_quota(s, v->lr, r) &&
                used - v->charge.v[r] < quota_floor(s, q, r))
                return false;
        }
        if (!more)
            return false;
        if (q == v->lv)
            break;
    }
    return guarantee || ordered_after(s, v);
}

/* ---- who may be a victim --------------------------------------------------------- */

/*
 * Where a victim of queue vq would be taken from: for reclaim the queue where its path parts
 * from the reclaimer's (nothing is taken from one's own queue, an ancestor or a descendant),
 * once per queue for the whole collection, and only if the reclaimer's own queue stays within
 * its fair share (its ancestors up to there are checked once the victims are chosen: victims
 * under them lower what they end with). For preemption the reclaimer's own queue.
 */
static const struct pqueue *leveled(struct psearch *s, const struct pqueue *vq, int32_t vqid,
                                    const struct pqueue **lr)
{
    struct policy_cluster *c = s->c;
    const struct pqueue *a, *b;

    if (s->kind == POLICY_EVICT_PREEMPT) {
        *lr = s->rq;
        return vq == s->rq ? vq : NULL;
    }
    if (s->level[vqid] == LEVEL_UNKNOWN) {
        pqueue_leveled(c, s->rq->name, vq->name, &a, &b);
        s->level[vqid] = a && b && reclaimer_within_share(s, s->rq)
                             ? pidx_get(&c->queue_ix, b->name)
                             : LEVEL_NONE;
        s->level_r[vqid] = a ? pidx_get(&c->queue_ix, a->name) : LEVEL_NONE;
    }
    if (s->level[vqid] < 0)
        return NULL;
    *lr = pqueue_at(c, s->level_r[vqid]);
    return pqueue_at(c, s->level[vqid]);
}

/* A gang waiting for its own victims to leave, planned on their room, nothing at bind. */
static bool plan_in_transit(const struct policy_cluster *c, const struct pgang *g)
{
    if (g->admitted || !g->planned || g->awaiting <= 0)
        return false;
    for (size_t i = 0; i < g->nmembers; i++) {
        const struct ppod *p = ppod_at(c, g->members[i]);

        if (p && (p->phase == POLICY_POD_WAITING || p->phase == POLICY_POD_BINDING))
            return false;
    }
    return true;
}

/* May vg be a victim of this search at all? Its queue's leveled queue when it may. */
static const struct pqueue *eligible(struct psearch *s, const struct pgang *vg,
                                     const struct pqueue **leaf, const struct pqueue **lr)
{
    const struct policy_cluster *c = s->c;
    bool assumed = vg == s->assume, plan = !assumed && plan_in_transit(c, vg);
    int64_t since = assumed ? s->now : vg->running_since, min_runtime;
    int32_t vqid;
    const struct pqueue *vq, *lv;

    if (vg == s->g || (!assumed && !plan && (!vg->admitted || vg->awaiting > 0)) ||
        (!assumed && vg->refused_until > s->now))
        return NULL;
    /* A RayService's running cluster is never taken for its own upgrade (hold.c). */
    if (powner_siblings(vg, s->g))
        return NULL;
    vqid = pidx_get(&c->queue_ix, pgang_queue(c, vg));
    if (vqid < 0 || (size_t)vqid >= c->queues.n || !(vq = pqueue_at(c, vqid)) ||
        !(lv = leveled(s, vq, vqid, lr)) || !pgang_preemptible(c, vg))
        return NULL;
    if (s->kind == POLICY_EVICT_PREEMPT && pgang_priority(c, vg) >= pgang_priority(c, s->g))
        return NULL;
    /* A probe's assumed gang is asked about as it will stand once its minimum runtime is
     * over: a placement the search would take the moment the runtime ends, nothing else
     * having changed, is undone by the engine's own next decision all the same (stable.c). */
    min_runtime = s->kind == POLICY_EVICT_RECLAIM ? vq->reclaim_min_runtime
                                                  : vq->preempt_min_runtime;
    if (!plan && !assumed && min_runtime > 0 && since + min_runtime > s->now)
        return NULL;
    *leaf = vq;
    return lv;
}

static int grow_pool(struct psearch *s, size_t n)
{
    while (s->npool + n > s->cap_pool) {
        size_t cap = s->cap_pool ? s->cap_pool * 2 : 1024;
        struct ppod **np = realloc(s->pool, cap * sizeof(*np));

        if (!np)
            return POLICY_ENOMEM;
        s->pool = np;
        s->cap_pool = cap;
    }
    return POLICY_OK;
}

/* The least v, made again, asks to run: a member beyond its gang's minimum, itself; a whole
 * gang (or a plan), its minimum met by any of its members that could run, pending ones too
 * (a count is met by any pods: the one waiting beside the victims may stand in for the
 * heaviest of them), each subgroup's and each resource on its own from its smallest. */
static void comeback(const struct psearch *s, struct victim *v)
{
    const struct pgang *g = v->g;
    struct ppod *stack[64], **pool = NULL;
    int32_t sub_stack[16], *msub = NULL;
    size_t n = 0;

    /* A member beyond a minimum; or no memory for the pool here: the most it could ask.
     * (pgang_least_need out of memory says 0: the victim is then held back, the safe side.) */
    v->back = v->charge;
    if (v->unit == UNIT_EXTRA || !g)
        return;
    pool = g->nmembers <= 64 ? stack : malloc(g->nmembers * sizeof(*pool));
    msub = g->nsubs <= 16 ? sub_stack : malloc(g->nsubs * sizeof(*msub));
    if (pool && msub) {
        for (size_t i = 0; i < g->nmembers; i++) {
            struct ppod *p = ppod_at(s->c, g->members[i]);

            if (p && ppod_ask_valid(p, NULL, 0))
                pool[n++] = p;
        }
        for (size_t k = 0; k < g->nsubs; k++)
            msub[k] = g->subs[k].min;
        pgang_least_need(s->c, g, (const struct ppod *const *)pool, n, msub,
                         pgang_min(s->c, g), &v->back);
    }
    if (pool != stack)
        free(pool);
    if (msub != sub_stack)
        free(msub);
}

static int add_victim(struct psearch *s, struct pgang *vg, enum unit_kind unit,
                      const struct pqueue *leaf, const struct pqueue *lv,
                      const struct pqueue *lr, struct ppod **pods, size_t n)
{
    struct policy_resources used;
    struct victim *v;

    if (s->n == s->cap) {
        size_t cap = s->cap ? s->cap * 2 : 256;
        struct victim *nv = realloc(s->v, cap * sizeof(*nv));

        if (!nv)
            return POLICY_ENOMEM;
        s->v = nv;
        s->cap = cap;
    }
    if (grow_pool(s, n) != POLICY_OK)
        return POLICY_ENOMEM;
    memcpy(s->pool + s->npool, pods, n * sizeof(*pods));
    v = &s->v[s->n];
    *v = (struct victim){.g = vg, .unit = unit, .first = s->npool, .npods = n, .leaf = leaf,
                         .lv = lv, .lr = lr, .priority = pgang_priority(s->c, vg),
                         .since = vg == s->assume ? s->now : vg->running_since};
    s->npool += n;
    for (size_t k = 0; k < n; k++) {
        struct policy_resources r;

        if (pods[k]->phase == POLICY_POD_EVICTING)
            continue;
        ppod_charge_resources(pods[k], pods[k]->place.share, &r);
        for (int i = 0; i < POLICY_RES_COUNT; i++)
            v->charge.v[i] = parith_add(v->charge.v[i], r.v[i]);
    }
    comeback(s, v);
    for (int r = 0; r < POLICY_RES_COUNT; r++)
        used.v[r] = pqueue_used(lv, r);
    v->saturation = pqueue_saturation(lv, &used);
    s->n++;
    return POLICY_OK;
}

static int cmp_arrival_desc(const void *a, const void *b)
{
    const struct ppod *x = *(struct ppod *const *)a, *y = *(struct ppod *const *)b;

    return x->arrival > y->arrival ? -1 : x->arrival < y->arrival;
}

/* Does a pod hold a place this search may take? Bound, or for an assumed gang placed; a running
 * gang's room held for a member to come goes with it (hold.c). */
static bool running_member(const struct psearch *s, const struct pgang *vg, const struct ppod *p)
{
    if (!p || p->place.node < 0)
        return false;
    if (p->phase == POLICY_POD_BOUND || (p->held && p->phase == POLICY_POD_PLANNED))
        return true;
    return vg == s->assume && p->phase != POLICY_POD_PENDING && p->phase != POLICY_POD_EVICTING;
}

/* Placed by the engine since the last change from outside (stable.c keeps placements out of
 * the way of gangs that could take them; this keeps it so). A probe asks what the search
 * would take once anything changed: nothing counts as just placed there. */
static bool just_placed(const struct psearch *s, const struct pgang *vg, const struct ppod *p)
{
    (void)vg;
    return !s->assume && p->placed_epoch == pmodel_outside_epoch(s->c);
}

/* A plan in transit: its planned pods, then the pods leaving for it. */
static int collect_plan(struct psearch *s, struct pgang *vg, const struct pqueue *leaf,
                        const struct pqueue *lv, const struct pqueue *lr)
{
    struct victim *v;
    size_t n = 0, held = 0;

    for (size_t i = 0; i < vg->nmembers; i++) {
        struct ppod *p = ppod_at(s->c, vg->members[i]);

        if (p && p->phase == POLICY_POD_PLANNED)
            s->scratch[n++] = p;
    }
    if (n == 0 || add_victim(s, vg, UNIT_PLAN, leaf, lv, lr, s->scratch, n) != POLICY_OK)
        return n == 0 ? POLICY_OK : POLICY_ENOMEM;
    v = &s->v[s->n - 1];
    v->first_held = s->npool;
    for (size_t i = 0; i < s->c->pods.n; i++) {
        struct ppod *p = s->c->pods.items[i];

        if (!p || p->phase != POLICY_POD_EVICTING || p->evict_by != vg->id)
            continue;
        if (grow_pool(s, 1) != POLICY_OK)
            return POLICY_ENOMEM;
        s->pool[s->npool++] = p;
        held++;
    }
    s->v[s->n - 1].nheld = held;
    return POLICY_OK;
}

/*
 * The gang's victim units: each bound member beyond its minimum (youngest
 * first; per subgroup what is above that subgroup's minimum, and above the
 * whole minimum), then the whole gang. Which members are "beyond" is a matter
 * of counts, so it holds after a restart too.
 */
static int collect_gang(struct psearch *s, struct pgang *vg, const struct pqueue *leaf,
                        const struct pqueue *lv, const struct pqueue *lr)
{
    int32_t stack[16], *keep = vg->nsubs <= 16 ? stack : calloc(vg->nsubs, sizeof(*keep));
    struct ppod **pods;
    int32_t spare;
    size_t n = 0;
    int rc = POLICY_OK;
    bool whole_may_go = true;

    if (vg->nmembers > s->cap_scratch) {
        struct ppod **grown = realloc(s->scratch, vg->nmembers * sizeof(*grown));

        if (grown) {
            s->scratch = grown;
            s->cap_scratch = vg->nmembers;
        }
    }
    pods = s->scratch;
    if (!keep || vg->nmembers > s->cap_scratch) {
        if (keep != stack)
            free(keep);
        return POLICY_ENOMEM;
    }
    if (plan_in_transit(s->c, vg) && vg != s->assume) {
        rc = collect_plan(s, vg, leaf, lv, lr);
        if (keep != stack)
            free(keep);
        return rc;
    }
    for (size_t i = 0; i < vg->nmembers; i++) {
        struct ppod *p = ppod_at(s->c, vg->members[i]);

        if (running_member(s, vg, p)) {
            pods[n++] = p;
            /* A member marked non-preemptible (Volcano's volcano.sh/preemptable:
             * "false") keeps its gang from going whole; so does one the engine placed since
             * the last change from outside: no decision of its own undoes another. */
            whole_may_go &= p->preemptible != POLICY_PREEMPTIBLE_NO && !just_placed(s, vg, p);
        }
    }
    qsort(pods, n, sizeof(*pods), cmp_arrival_desc);
    /* What each subgroup holds beyond its minimum may go, youngest first, as
     * long as the whole minimum stays. */
    for (size_t k = 0; k < vg->nsubs; k++)
        keep[k] = 0;
    for (size_t i = 0; i < n; i++)
        if (pods[i]->sub >= 0 && (size_t)pods[i]->sub < vg->nsubs)
            keep[pods[i]->sub]++;
    spare = (int32_t)n - pgang_min(s->c, vg);
    for (size_t i = 0; i < n && spare > 0 && rc == POLICY_OK; i++) {
        struct ppod *p = pods[i];
        bool above =
            p->sub < 0 || (size_t)p->sub >= vg->nsubs || keep[p->sub] > vg->subs[p->sub].min;

        if (!above || p->preemptible == POLICY_PREEMPTIBLE_NO || just_placed(s, vg, p))
            continue;
        if (p->sub >= 0 && (size_t)p->sub < vg->nsubs)
            keep[p->sub]--;
        spare--;
        rc = add_victim(s, vg, UNIT_EXTRA, leaf, lv, lr, &p, 1);
    }
    if (rc == POLICY_OK && n > 0 && whole_may_go)
        rc = add_victim(s, vg, UNIT_WHOLE, leaf, lv, lr, pods, n);
    if (keep != stack)
        free(keep);
    return rc;
}

static int cmp_victims(const void *a_, const void *b_)
{
    const struct victim *a = a_, *b = b_;

    /* A plan costs no eviction: plans first. */
    if ((a->unit == UNIT_PLAN) != (b->unit == UNIT_PLAN))
        return a->unit == UNIT_PLAN ? -1 : 1;
    if (a->saturation != b->saturation)
        return a->saturation > b->saturation ? -1 : 1;
    if (a->priority != b->priority)
        return a->priority < b->priority ? -1 : 1;
    /* A member beyond its gang's minimum breaks no gang: every such member of this
     * saturation and priority goes before any whole gang (and a gang's own extras before
     * it). */
    if ((a->unit == UNIT_WHOLE) != (b->unit == UNIT_WHOLE))
        return a->unit == UNIT_WHOLE ? 1 : -1;
    if (a->since != b->since)
        return a->since > b->since ? -1 : 1;
    if (a->g != b->g)
        return a->g->arrival > b->g->arrival ? -1 : 1;
    /* One gang's extras, in the order collected: youngest first. */
    return a->first < b->first ? -1 : a->first > b->first;
}

/* ---- trying victims ------------------------------------------------------------ */

/* Take a victim's room away (its pods, and a plan's leavers, uncharged) or give it back. */
static bool take(struct psearch *s, struct victim *v)
{
    for (size_t k = 0; k < v->npods; k++) {
        struct ppod *p = VPOD(s, v, k);

        if (pstatement_lift(s->c, &v->lifted, p,
                            v->unit == UNIT_PLAN ? POLICY_POD_PENDING : p->phase) != POLICY_OK)
            goto undo;
    }
    for (size_t k = 0; k < v->nheld; k++)
        if (pstatement_lift(s->c, &v->held, VHELD(s, v, k), POLICY_POD_EVICTING) != POLICY_OK)
            goto undo;
    v->taken = true;
    return true;
undo:
    pstatement_rollback(s->c, &v->held, 0);
    pstatement_rollback(s->c, &v->lifted, 0);
    return false;
}

static void give_back(struct psearch *s, struct victim *v)
{
    pstatement_rollback(s->c, &v->held, 0);
    pstatement_rollback(s->c, &v->lifted, 0);
    v->taken = false;
}

static void restore_all(struct psearch *s)
{
    for (size_t i = s->n; i-- > 0;)
        if (s->v[i].taken)
            give_back(s, &s->v[i]);
}

/* A member alone: anywhere, or within the domains its gang keeps to. */
static bool fits_one(struct psearch *s, struct ppod *p, struct pstatement *st)
{
    const char **names;
    size_t n = 0;
    bool ok;

    if (s->g->singleton || !ptopo_constrained(s->g))
        return pplan_one_try(s->c, p, NULL, 0, st, NULL) == 0;
    if (!(names = malloc((s->c->nodes.n ? s->c->nodes.n : 1) * sizeof(*names))))
        return false;
    for (size_t i = 0; i < s->c->nodes.n; i++)
        if (s->c->nodes.items[i])
            names[n++] = pnode_at(s->c, (int32_t)i)->name;
    n = ptopo_within(s->c, s->g, p, names, n, false, names);
    ok = n > 0 && pplan_one_try(s->c, p, names, n, st, NULL) == 0;
    free(names);
    return ok;
}

/* Would the waiting gang fit whole now? Leaves its placements in st when it does. */
static bool fits(struct psearch *s, struct pstatement *st)
{
    enum preason_kind kind;

    if (s->x || s->g->singleton) {
        struct ppod *p = s->x ? s->x : ppod_at(s->c, s->g->members[0]);

        return p && fits_one(s, p, st);
    }
    return pplan_gang_try(s->c, s->g, NULL, st, &kind, NULL) == 0;
}

static bool dry_fits(struct psearch *s)
{
    struct pstatement st = {0};
    bool ok = fits(s, &st);

    pstatement_discard(s->c, &st);
    return ok;
}

/* The whole choice, checked again with what the plan really asks. */
static bool audit(struct psearch *s)
{
    const struct ppod *planned[64];
    size_t n = 0;

    for (size_t i = 0; i < s->plan.n && n < 64; i++)
        if (s->plan.steps[i].placed)
            planned[n++] = s->plan.steps[i].pod;
    pmembers_need(s->c, planned, n, true, &s->need);
    if (s->kind == POLICY_EVICT_PREEMPT)
        return true;
    for (size_t i = 0; i < s->n; i++) {
        const struct victim *v = &s->v[i];

        if (!v->taken)
            continue;
        bool guarantee;

        if (!reclaimer_within_share(s, v->lr))
            return false;
        guarantee = reclaimer_within_quota(s, v->lr, -1);
        /* The victims are gone now: what each queue on the way holds is what stays; what it
         * held before (used0) is what made it a queue that may lose room. */
        for (const struct pqueue *q = v->leaf; q; q = pqueue_parent(s->c, q)) {
            const struct policy_resources *was =
                &s->used0[pidx_get(&s->c->queue_ix, q->name)];
            bool more = false;

            for (int r = 0; r < POLICY_RES_COUNT; r++) {
                more |= over(was->v[r], pqueue_allocatable(q, r));
                more |= guarantee && over(was->v[r], q->quota.v[r]);
                if (v->charge.v[r] > 0 && !reclaimer_within_quota(s, v->lr, r) &&
                    pqueue_used(q, r) < quota_floor(s, q, r))
                    return false;
            }
            if (!more)
                return false;
            if (q == v->lv)
                break;
        }
        if (!guarantee && !ordered_after(s, v))
            return false;
    }
    return true;
}

/*
 * v is refused only because smaller victims taken before it brought a queue on its path down
 * to its quota floor: give those back (latest first) while that is what stands in the way, so
 * a whole gang that alone frees enough is not refused for the crumbs taken before it.
 */
static void make_way(struct psearch *s, size_t i)
{
    struct victim *v = &s->v[i];

    for (size_t k = i; k-- > 0 && !path_allows(s, v);) {
        struct victim *t = &s->v[k];

        if (t->taken && t->unit != UNIT_PLAN && t->lv == v->lv)
            give_back(s, t);
    }
}

/* Is v a member beyond its gang's minimum whose whole gang is taken already (its pod too)? */
static bool whole_taken(const struct psearch *s, const struct victim *v)
{
    for (size_t k = 0; v->unit == UNIT_EXTRA && k < s->n; k++)
        if (s->v[k].taken && s->v[k].g == v->g && s->v[k].unit == UNIT_WHOLE)
            return true;
    return false;
}

/* Greedy: take victims in order until the gang fits (a victim the rule refuses now may be
 * allowed once others are taken: another pass); give back what it did not need; plan it on
 * the room and check the choice once more. */
static bool choose(struct psearch *s)
{
    bool ok = false, any = false, more = true;

    for (int pass = 0; pass < 4 && more && !ok; pass++) {
        more = false;
        for (size_t i = 0; i < s->n && !ok; i++) {
            struct victim *v = &s->v[i];

            if (v->taken || v->outside || whole_taken(s, v))
                continue;
            /* The whole gang comes after its extras, and holds them: give those back first. */
            for (size_t k = 0; v->unit == UNIT_WHOLE && k < i; k++)
                if (s->v[k].taken && s->v[k].g == v->g)
                    give_back(s, &s->v[k]);
            if (!path_allows(s, v))
                make_way(s, i);
            if (!path_allows(s, v) || !take(s, v))
                continue;
            more = true;
            ok = dry_fits(s);
        }
    }
    if (!ok)
        return false;
    for (size_t i = s->n; i-- > 0;) {
        if (!s->v[i].taken)
            continue;
        give_back(s, &s->v[i]);
        if (!dry_fits(s) && !take(s, &s->v[i]))
            return false; /* out of memory: give up whole */
    }
    /* Fits with no victim at all: only on nodes kube-scheduler did not offer, where no
     * eviction helps. Nothing to decide. */
    for (size_t i = 0; i < s->n; i++)
        any |= s->v[i].taken;
    if (!any || !fits(s, &s->plan))
        return false;
    return audit(s);
}

/* Does victim v hold room in the fenced domain (any pod of it, or of the plan it is)? */
static bool in_fence(const struct psearch *s, const struct victim *v, const uint8_t *fence)
{
    for (size_t k = 0; k < v->npods; k++) {
        int32_t node = VPOD(s, v, k)->place.node;

        if (node >= 0 && (size_t)node < s->c->nodes.n && fence[node])
            return true;
    }
    return false;
}

#define SEARCH_DOMAINS 16 /* domains of its required level a gang's search tries */

/* Only the victims with room in fence may be taken. False: none has, or the fence's free room
 * and all they hold together are short of what the gang asks (an upper bound: a victim's pods
 * outside the fence count too). */
static bool fence_victims(struct psearch *s, const uint8_t *fence)
{
    struct policy_resources room = {0};
    bool any = false;

    for (size_t i = 0; i < s->c->nodes.n; i++) {
        const struct pnode *n = s->c->nodes.items[i];

        if (!n || !fence[i])
            continue;
        room.v[POLICY_RES_CPU] = parith_add(room.v[POLICY_RES_CPU], n->cpu - n->cpu_used);
        room.v[POLICY_RES_MEMORY] =
            parith_add(room.v[POLICY_RES_MEMORY], n->memory - n->memory_used);
        room.v[POLICY_RES_GPU] = parith_add(
            room.v[POLICY_RES_GPU], (n->gpus - n->whole_used) * POLICY_GPU_MILLI);
    }
    for (size_t i = 0; i < s->n; i++) {
        s->v[i].outside = !in_fence(s, &s->v[i], fence);
        any |= !s->v[i].outside;
        for (int r = 0; r < POLICY_RES_COUNT && !s->v[i].outside; r++)
            room.v[r] = parith_add(room.v[r], s->v[i].charge.v[r]);
    }
    for (int r = 0; r < POLICY_RES_COUNT; r++)
        if (room.v[r] < s->need0.v[r])
            return false;
    return any;
}

/* choose, the gang planned only in fence; on failure everything as it was. */
static bool choose_fenced(struct psearch *s, const uint8_t *fence)
{
    bool ok;

    s->need = s->need0; /* an earlier domain's audit set it to what its plan asked */
    s->c->topo_fence = fence;
    s->c->topo_fence_n = s->c->nodes.n;
    ok = choose(s);
    s->c->topo_fence = NULL;
    if (!ok) {
        pstatement_discard(s->c, &s->plan);
        restore_all(s);
    }
    return ok;
}

/* Pods a choice evicts (a plan in transit costs none). */
static size_t evicted_pods(const struct psearch *s)
{
    size_t n = 0;

    for (size_t i = 0; i < s->n; i++)
        if (s->v[i].taken && s->v[i].unit != UNIT_PLAN)
            n += s->v[i].npods;
    return n;
}

/*
 * A gang that must keep to one domain of a level is given victims inside one such domain
 * that would then hold it, not anywhere: each domain (the first SEARCH_DOMAINS, most free
 * first) is searched with only its victims and the gang planned only there, and the one that
 * evicts the fewest pods is chosen.
 */
static bool choose_in_domains(struct psearch *s)
{
    uint8_t *fences[SEARCH_DOMAINS];
    size_t nf = s->x || s->g->singleton ? 0 : ptopo_search_fences(s->c, s->g, fences,
                                                                    SEARCH_DOMAINS);
    size_t best = nf, fewest = 0;
    bool ok = false;

    if (nf == 0)
        return choose(s);
    for (size_t f = 0; f < nf; f++) {
        if (!fence_victims(s, fences[f]) || !choose_fenced(s, fences[f]))
            continue;
        if (best == nf || evicted_pods(s) < fewest) {
            best = f;
            fewest = evicted_pods(s);
        }
        pstatement_discard(s->c, &s->plan);
        restore_all(s);
    }
    if (best < nf) /* chosen again: the same victims, the same plan */
        ok = fence_victims(s, fences[best]) && choose_fenced(s, fences[best]);
    for (size_t f = 0; f < nf; f++)
        free(fences[f]);
    return ok;
}

/* ---- the search ---------------------------------------------------------------- */

static void search_free(struct psearch *s)
{
    if (!s)
        return;
    pstatement_discard(s->c, &s->plan);
    restore_all(s);
    for (size_t i = 0; i < s->n; i++) {
        pstatement_discard(s->c, &s->v[i].lifted);
        pstatement_discard(s->c, &s->v[i].held);
    }
    free(s->pool);
    free(s->v);
    free(s->used0);
    free(s->level);
    free(s->level_r);
    free(s->scratch);
    free(s);
}

static struct psearch *search(struct policy_cluster *c, struct pgang *g, struct ppod *x,
                              enum policy_eviction_kind kind, struct pgang *assume, int64_t now)
{
    struct psearch *s = calloc(1, sizeof(*s));
    size_t nq = c->queues.n ? c->queues.n : 1;

    if (!s)
        return NULL;
    *s = (struct psearch){.c = c, .g = g, .x = x, .kind = kind, .assume = assume, .now = now,
                          .rq = pqueue_find(c, pgang_queue(c, g))};
    if (!s->rq)
        goto fail;
    if (x)
        ppod_charge_resources(x, ppod_share_asked(c, x), &s->need);
    else
        pgang_minimum_need(c, g, &s->need);
    s->need0 = s->need;
    s->used0 = calloc(nq, sizeof(*s->used0));
    s->level = malloc(nq * sizeof(*s->level));
    s->level_r = malloc(nq * sizeof(*s->level_r));
    s->scratch = malloc(16 * sizeof(*s->scratch));
    s->cap_scratch = 16;
    if (!s->used0 || !s->level || !s->level_r || !s->scratch)
        goto fail;
    for (size_t i = 0; i < c->queues.n; i++) {
        const struct pqueue *q = pqueue_at(c, (int32_t)i);

        s->level[i] = LEVEL_UNKNOWN;
        for (int r = 0; q && r < POLICY_RES_COUNT; r++)
            s->used0[i].v[r] = pqueue_used(q, r);
    }
    for (size_t i = 0; i < c->gangs.n; i++) {
        struct pgang *vg = c->gangs.items[i];
        const struct pqueue *leaf, *lv, *lr;

        if (!vg || !(lv = eligible(s, vg, &leaf, &lr)))
            continue;
        if (collect_gang(s, vg, leaf, lv, lr) != POLICY_OK)
            goto fail;
    }
    if (s->n == 0)
        goto fail;
    qsort(s->v, s->n, sizeof(*s->v), cmp_victims);
    if (!choose_in_domains(s))
        goto fail;
    return s;
fail:
    search_free(s);
    return NULL;
}

/* ---- deciding -------------------------------------------------------------------- */

/* The resource q is most over `mark` in (relative), or -1 when it is over in none. */
static int most_over(const struct pqueue *q, const struct policy_resources *used,
                     const struct policy_resources *mark)
{
    double most = 0;
    int best = -1;

    for (int r = 0; r < POLICY_RES_COUNT; r++) {
        int64_t over = used->v[r] - mark->v[r];
        double rel;

        if (mark->v[r] < 0 || over <= 0)
            continue;
        rel = mark->v[r] > 0 ? (double)over / (double)mark->v[r] : 1e300;
        if (rel > most) {
            most = rel;
            best = r;
        }
    }
    (void)q;
    return best;
}

/* "evicted for gang lab/b of queue team-b: queue team-a is 2 GPUs over its fair share" (or
 * over its quota), as the victim's own queue stood before anything was taken, for the resource
 * it is most over; "preempted for gang ...: its priority 100 is above 50". */
static void reason_for(const struct psearch *s, const struct victim *v, struct preason *why)
{
    const struct pqueue *q = v->leaf;
    const struct policy_resources *used = &s->used0[pidx_get(&s->c->queue_ix, q->name)];
    struct policy_reason *r = &why->r;
    int res;

    preason_init(why, POLICY_REASON_EVICTED, v->g->key);
    r->other = s->g->key;
    r->other_queue = pgang_queue(s->c, s->g);
    r->eviction = s->kind;
    r->queue = q->name;
    if (s->kind == POLICY_EVICT_PREEMPT) {
        r->other_priority = pgang_priority(s->c, s->g);
        r->priority = v->priority;
        return;
    }
    /* The rule holds at the level where its path parts from the reclaimer's: resource -1. */
    if ((res = most_over(q, used, &q->fair_share)) < 0 &&
        (res = most_over(q, used, &q->quota)) >= 0)
        r->quota_mark = true;
    r->resource = res;
    if (res >= 0) {
        r->used = used->v[res];
        r->cap = r->quota_mark ? q->quota.v[res] : q->fair_share.v[res];
    }
}

/* A plan in transit taken: its room, and the pods leaving for it, pass to the reclaimer. */
static void hand_over_plan(struct psearch *s, struct victim *v, const struct pwhy *evicted)
{
    struct preason why;
    const char *over = evicted ? strchr(evicted->text, ':') : NULL;

    pstatement_rollback(s->c, &v->held, 0); /* the leavers stay on their nodes */
    pstatement_keep(&v->lifted);            /* its plan goes */
    for (size_t k = 0; k < v->nheld; k++) {
        struct ppod *p = VHELD(s, v, k);

        p->evict_by = s->g->id;
        s->g->awaiting++;
    }
    v->g->awaiting = 0;
    v->g->planned = false;
    pgang_mark_waiting(s->c, v->g);
    preason_init(&why, POLICY_REASON_ROOM_TAKEN, v->g->key);
    why.r.other = s->g->key;
    why.r.other_queue = pgang_queue(s->c, s->g);
    if (over)
        preason_detail(&why, "%s", over + 2);
    pgang_waits_for(s->c, v->g, &why);
    v->taken = false;
}

int preclaim_decide(struct psearch *s)
{
    int rc = POLICY_OK;

    for (size_t i = 0; i < s->n && rc == POLICY_OK; i++) {
        struct victim *v = &s->v[i];
        struct preason why;
        struct pwhy *w;

        if (!v->taken)
            continue;
        reason_for(s, v, &why);
        w = pwhy_new(&why);
        if (v->unit == UNIT_PLAN) {
            hand_over_plan(s, v, w);
            pwhy_drop(w);
            continue;
        }
        /* Back on its node, then out of its queues as a leaver: the plan sits on its room
         * until it is gone. */
        give_back(s, v);
        for (size_t k = 0; k < v->npods && rc == POLICY_OK; k++)
            if (!VPOD(s, v, k)->held) /* a stand-in is no pod: its room goes below */
                rc = w ? pevict_queue(s->c, VPOD(s, v, k), s->g, s->kind, w) : POLICY_ENOMEM;
        if (v->unit == UNIT_WHOLE) {
            /* The gang is leaving whole: it takes no new member until it is placed whole
             * again (its planned extras give their room back). It waits again, and says why. */
            pplan_release(s->c, v->g);
            v->g->admitted = false;
            v->g->running_since = 0;
            phold_release(s->c, v->g); /* room held for a member to come goes with it */
            pgang_tell_pending(s->c, v->g, pgang_set_reason(v->g, &why));
        }
        pwhy_drop(w);
    }
    pstatement_keep(&s->plan);
    if (s->x) {
        s->x->extra = true; /* a bound gang's member beyond its minimum: the gang stays as is */
    } else {
        s->g->planned = true;
        pgang_unmark_waiting(s->c, s->g);
    }
    pgang_plan_renew(s->c, s->g, s->now);
    search_free(s);
    return rc;
}

void preclaim_abort(struct psearch *s)
{
    search_free(s);
}

struct psearch *preclaim_choose(struct policy_cluster *c, struct pgang *g, struct ppod *x,
                                int64_t now)
{
    struct psearch *s = NULL;

    if (x ? !g->admitted || x->phase != POLICY_POD_PENDING
          : g->admitted || !pgang_could_run(c, g))
        return NULL;
    pfair_refresh(c);
    /* Under a limit of its own queue, room can only come from its own queue's gangs: the
     * queue, with the gang, is then over its fair share (never above its limit) and reclaim
     * refuses at once. Under an ancestor's limit it may come from a sibling queue below that
     * ancestor which holds more than it may (the dry run checks every limit with the victims
     * gone, and gives back victims elsewhere that free no room under it). */
    if (!c->opts.no_reclaim)
        s = search(c, g, x, POLICY_EVICT_RECLAIM, NULL, now);
    if (!s && !c->opts.no_preemption)
        s = search(c, g, x, POLICY_EVICT_PREEMPT, NULL, now);
    return s;
}

/* ---- who could evict whom: the cheap part of the rule, for the order and stable.c ---- */

/* Does u's queue line hold more than it may in some resource (or more than its quota)? No
 * reclaim can take u otherwise: the victim rule needs its own queue over. */
static bool queue_over(const struct pqueue *q)
{
    for (int r = 0; r < POLICY_RES_COUNT; r++) {
        int64_t used = pqueue_used(q, r), a = pqueue_allocatable(q, r);

        if ((a >= 0 && used > a) || (q->quota.v[r] >= 0 && used > q->quota.v[r]))
            return true;
    }
    return false;
}

bool preclaim_could_take(const struct policy_cluster *c, const struct pgang *w,
                         const struct pgang *u, enum policy_eviction_kind *kind)
{
    const char *wq = pgang_queue(c, w), *uq = pgang_queue(c, u);
    const struct pqueue *q = pqueue_find(c, uq), *lw, *lu;

    if (!q || powner_siblings(w, u))
        return false;
    if (strcmp(wq, uq) == 0) {
        *kind = POLICY_EVICT_PREEMPT;
        return !c->opts.no_preemption && pgang_priority(c, w) > pgang_priority(c, u);
    }
    *kind = POLICY_EVICT_RECLAIM;
    if (c->opts.no_reclaim || !queue_over(q))
        return false;
    pqueue_leveled(c, wq, uq, &lw, &lu);
    return lw && lu;
}

bool preclaim_would_take(struct policy_cluster *c, struct pgang *w, struct ppod *wx,
                         struct pgang *u, enum policy_eviction_kind kind, int64_t now)
{
    struct psearch *s;
    bool taken = false;

    if (wx ? (!w->admitted && !w->planned) || wx->phase != POLICY_POD_PENDING
           : w->admitted || !pgang_could_run(c, w))
        return false;
    pfair_refresh(c);
    if (!(s = search(c, w, wx, kind, u, now)))
        return false;
    for (size_t i = 0; i < s->n && !taken; i++)
        taken = s->v[i].taken && s->v[i].g == u;
    search_free(s);
    return taken;
}
