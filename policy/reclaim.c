/*
 * reclaim.c - taking room back for a gang that waits for capacity.
 *
 * Reclaim, between queues (KAI's reclaim action and proportion plugin): the
 * waiting gang's queue must stay within its fair share with the gang (and,
 * for a non-preemptible gang, within its quota). Victims are whole running
 * gangs, or an elastic gang's members beyond its minimum, of other queues:
 * preemptible, past their queue's reclaimMinRuntime, taken from the queue most
 * over its fair share first (saturation = used / fair share, compared where
 * the two queues' paths part), lowest priority first, then members beyond a
 * minimum before whole gangs, then most recently started first. A victim is
 * taken only while its queue is above what it may hold
 * (max of quota and fair share: KAI's MaintainFairShare) or, when the waiting
 * gang's queue is within its quota, above its quota (GuaranteeDeservedQuota):
 * in-quota usage is never taken for over-quota work.
 *
 * Preemption, inside one queue: victims are running gangs of strictly lower
 * priority, preemptible, past the queue's preemptMinRuntime, lowest priority
 * first, then members beyond a minimum before whole gangs, then most recent
 * first.
 *
 * Either way: victims are added one at a time until a dry run shows the
 * waiting gang then fits whole, victims it turns out not to need are given
 * back, and only then is anything decided — the victims are queued for
 * eviction (evict.c) and the gang is planned on their room. A pending member
 * of a gang bound whole (beyond its minimum, or re-created) is a reclaimer or
 * preemptor on its own: the same rules for what it alone asks; it is planned
 * on its victims' room and its gang awaits them. A search that needs no
 * victim (the pod fits, but only where kube-scheduler did not offer) decides
 * nothing.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "arith.h"
#include "internal.h"

/* One victim: a whole gang's bound pods, or one member beyond its minimum. */
struct victim {
    struct pgang *g;
    size_t first, npods;          /* its pods: s->pool[first .. first + npods) */
    const struct pqueue *leveled; /* its queue where its path parts from the reclaimer's */
    double saturation;
    int32_t priority;
    int64_t since;
    int32_t over; /* its leveled queue's id: s->over[over] says how it stood, or -1 */
    bool whole;   /* the whole gang (else one member beyond its minimum) */
    bool taken;
    struct pstatement lifted; /* while taken: its pods, taken off their nodes */
};

struct search {
    struct policy_cluster *c;
    struct pgang *g;
    struct ppod *x; /* a member beyond g's minimum that waits for room; NULL: g's minimum */
    enum policy_eviction_kind kind;
    const struct pqueue *rq; /* the reclaimer's queue */
    struct policy_resources need;
    struct victim *v;
    size_t n, cap;
    /* Every victim's pods. */
    struct ppod **pool;
    size_t npool, cap_pool;
    /* Per queue id: how it stood before anything was taken, said once ("" = not yet). */
    char (*over)[160];
    /* Per victim queue id, while victims are collected: its leveled queue's id
     * (LEVEL_UNKNOWN until asked, LEVEL_NONE when nothing may be taken from it). */
    int32_t *level;
    struct ppod **scratch; /* collect_gang's members */
    size_t cap_scratch;
};

#define LEVEL_UNKNOWN (-2)
#define LEVEL_NONE (-1)

#define VPOD(s, v, k) ((s)->pool[(v)->first + (k)])

static void victims_free(struct search *s)
{
    for (size_t i = 0; i < s->n; i++)
        pstatement_discard(s->c, &s->v[i].lifted);
    free(s->pool);
    free(s->v);
    free(s->over);
    free(s->level);
    free(s->scratch);
}

/* The victim's queue where its path parts from the reclaimer's: nothing is reclaimed from
 * one's own queue, an ancestor or a descendant (NULL then). */
static const struct pqueue *leveled_victim_queue(const struct policy_cluster *c,
                                                 const char *reclaimer, const char *victim)
{
    const struct pqueue *lr, *lv;

    pqueue_leveled(c, reclaimer, victim, &lr, &lv);
    return lr ? lv : NULL;
}

static void over_text(const struct pqueue *q, char *buf, size_t len);

static int add_victim(struct search *s, struct pgang *vg, const struct pqueue *leveled,
                      struct ppod **pods, size_t n, bool whole)
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
    while (s->npool + n > s->cap_pool) {
        size_t cap = s->cap_pool ? s->cap_pool * 2 : 1024;
        struct ppod **np = realloc(s->pool, cap * sizeof(*np));

        if (!np)
            return POLICY_ENOMEM;
        s->pool = np;
        s->cap_pool = cap;
    }
    memcpy(s->pool + s->npool, pods, n * sizeof(*pods));
    v = &s->v[s->n];
    *v = (struct victim){.g = vg,
                         .first = s->npool,
                         .npods = n,
                         .priority = pgang_priority(s->c, vg),
                         .since = vg->running_since,
                         .leveled = leveled,
                         .over = -1,
                         .whole = whole};
    s->npool += n;
    for (int r = 0; r < POLICY_RES_COUNT; r++)
        used.v[r] = pqueue_used(leveled, r);
    v->saturation = pqueue_saturation(leveled, &used);
    v->over = pidx_get(&s->c->queue_ix, leveled->name);
    if (v->over >= 0 && !s->over[v->over][0])
        over_text(leveled, s->over[v->over], sizeof(s->over[v->over]));
    s->n++;
    return POLICY_OK;
}

static bool strategy_allows_queue(const struct search *s, const struct pqueue *q);

static bool queue_may_lose(const struct search *s, const struct pqueue *q)
{
    return strategy_allows_queue(s, q);
}

/*
 * Where room would be taken from the victim's queue (id vqid): for reclaim
 * the queue where its path parts from the reclaimer's, once per queue for the
 * whole collection (nothing is taken yet, so the answer holds); NULL when
 * nothing may be taken from there.
 */
static const struct pqueue *leveled(struct search *s, const struct pqueue *vq, int32_t vqid)
{
    const struct policy_cluster *c = s->c;
    const struct pqueue *lv;

    if (s->kind == POLICY_EVICT_PREEMPT)
        return vq == s->rq ? vq : NULL;
    if (s->level[vqid] == LEVEL_UNKNOWN) {
        lv = leveled_victim_queue(c, pgang_queue(c, s->g), vq->name);
        /* A queue that holds no more than it may now never will as victims go. */
        s->level[vqid] =
            lv && queue_may_lose(s, lv) ? pidx_get(&c->queue_ix, lv->name) : LEVEL_NONE;
    }
    return s->level[vqid] >= 0 ? pqueue_at(c, s->level[vqid]) : NULL;
}

/* May the gang be a victim of this search at all? Its leveled queue when it may. */
static const struct pqueue *eligible(struct search *s, const struct pgang *vg, int64_t now)
{
    const struct policy_cluster *c = s->c;
    int32_t vqid;
    const struct pqueue *vq, *lv;
    int64_t min_runtime;

    if (vg == s->g || !vg->admitted || vg->awaiting > 0 || vg->refused_until > now)
        return NULL;
    vqid = pidx_get(&c->queue_ix, pgang_queue(c, vg));
    if (vqid < 0 || (size_t)vqid >= c->queues.n || !(vq = pqueue_at(c, vqid)) ||
        !(lv = leveled(s, vq, vqid)) || !pgang_preemptible(c, vg))
        return NULL;
    if (s->kind == POLICY_EVICT_RECLAIM) {
        min_runtime = vq->reclaim_min_runtime;
    } else {
        min_runtime = vq->preempt_min_runtime;
        if (pgang_priority(c, vg) >= pgang_priority(c, s->g))
            return NULL;
    }
    return min_runtime <= 0 || vg->running_since + min_runtime <= now ? lv : NULL;
}

static int cmp_arrival_desc(const void *a, const void *b)
{
    const struct ppod *x = *(struct ppod *const *)a, *y = *(struct ppod *const *)b;

    return x->arrival > y->arrival ? -1 : x->arrival < y->arrival;
}

/*
 * The gang's victim units: each bound member beyond its minimum (youngest
 * first; per subgroup what is above that subgroup's minimum, and above the
 * whole minimum), then the whole gang. Which members are "beyond" is a matter
 * of counts, so it holds after a restart too.
 */
static int collect_gang(struct search *s, struct pgang *vg, const struct pqueue *lv)
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

    for (size_t i = 0; i < vg->nmembers; i++) {
        struct ppod *p = ppod_at(s->c, vg->members[i]);

        if (p && p->phase == POLICY_POD_BOUND && p->place.node >= 0) {
            pods[n++] = p;
            /* A member marked non-preemptible (Volcano's volcano.sh/preemptable:
             * "false") keeps its gang from going whole. */
            whole_may_go &= p->preemptible != POLICY_PREEMPTIBLE_NO;
        }
    }
    qsort(pods, n, sizeof(*pods), cmp_arrival_desc);
    /* What each subgroup holds beyond its minimum may go, youngest first, as
     * long as the whole minimum stays. */
    pgang_tally(s->c, vg, PGANG_BOUND, keep);
    spare = (int32_t)n - pgang_min(s->c, vg);
    for (size_t i = 0; i < n && spare > 0 && rc == POLICY_OK; i++) {
        struct ppod *p = pods[i];
        bool above =
            p->sub < 0 || (size_t)p->sub >= vg->nsubs || keep[p->sub] > vg->subs[p->sub].min;

        if (!above || p->preemptible == POLICY_PREEMPTIBLE_NO)
            continue;
        if (p->sub >= 0 && (size_t)p->sub < vg->nsubs)
            keep[p->sub]--;
        spare--;
        rc = add_victim(s, vg, lv, &p, 1, false);
    }
    if (rc == POLICY_OK && n > 0 && whole_may_go)
        rc = add_victim(s, vg, lv, pods, n, true);
    if (keep != stack)
        free(keep);
    return rc;
}

static int cmp_victims(const void *a_, const void *b_)
{
    const struct victim *a = a_, *b = b_;

    if (a->saturation != b->saturation)
        return a->saturation > b->saturation ? -1 : 1;
    if (a->priority != b->priority)
        return a->priority < b->priority ? -1 : 1;
    /* A member beyond its gang's minimum breaks no gang: every such member of this
     * saturation and priority goes before any whole gang (and a gang's own extras before
     * it). */
    if (a->whole != b->whole)
        return a->whole ? 1 : -1;
    if (a->since != b->since)
        return a->since > b->since ? -1 : 1;
    if (a->g != b->g)
        return a->g->arrival > b->g->arrival ? -1 : 1;
    /* One gang's extras, in the order collected: youngest first. */
    return a->first < b->first ? -1 : a->first > b->first;
}

static bool fits_under(const struct policy_resources *have, const struct policy_resources *cap)
{
    for (int r = 0; r < POLICY_RES_COUNT; r++)
        if (cap->v[r] >= 0 && have->v[r] > cap->v[r])
            return false;
    return true;
}

/* KAI's CanReclaimResources: the reclaimer stays within its fair share (and a
 * non-preemptible one within its quota). */
static bool may_reclaim(const struct search *s)
{
    struct policy_resources with, np;

    for (int r = 0; r < POLICY_RES_COUNT; r++) {
        with.v[r] = parith_add(pqueue_used(s->rq, r), s->need.v[r]);
        np.v[r] = parith_add(s->rq->nonpreemptible.v[r], s->need.v[r]);
    }
    if (!fits_under(&with, &s->rq->fair_share))
        return false;
    return s->g->preemptible || fits_under(&np, &s->rq->quota);
}

static bool reclaimer_within_quota(const struct search *s)
{
    struct policy_resources with;

    for (int r = 0; r < POLICY_RES_COUNT; r++)
        with.v[r] = pqueue_used(s->rq, r) + s->need.v[r];
    return fits_under(&with, &s->rq->quota);
}

/* What the victim's leveled queue still uses: taken victims are uncharged already. */
static void remaining_of(const struct pqueue *q, struct policy_resources *out)
{
    for (int r = 0; r < POLICY_RES_COUNT; r++)
        out->v[r] = pqueue_used(q, r);
}

/* KAI's strategies: may room still be taken from this (leveled victim) queue? */
static bool strategy_allows_queue(const struct search *s, const struct pqueue *q)
{
    struct policy_resources rem, allocatable;

    remaining_of(q, &rem);
    for (int r = 0; r < POLICY_RES_COUNT; r++)
        allocatable.v[r] = pqueue_allocatable(q, r);
    if (!fits_under(&rem, &allocatable))
        return true; /* MaintainFairShare: it holds more than it may */
    return reclaimer_within_quota(s) && !fits_under(&rem, &q->quota);
}

static bool strategy_allows(const struct search *s, const struct victim *v)
{
    if (s->kind == POLICY_EVICT_PREEMPT)
        return true;
    return v->leveled && strategy_allows_queue(s, v->leveled);
}

/* Take a victim's room away (its pods uncharged) or give it back. */
static bool take(struct search *s, struct victim *v)
{
    for (size_t k = 0; k < v->npods; k++) {
        if (pstatement_lift(s->c, &v->lifted, VPOD(s, v, k), VPOD(s, v, k)->phase) !=
            POLICY_OK) {
            pstatement_rollback(s->c, &v->lifted, 0);
            return false;
        }
    }
    v->taken = true;
    return true;
}

static void give_back(struct search *s, struct victim *v)
{
    pstatement_rollback(s->c, &v->lifted, 0);
    v->taken = false;
}

/* Would the waiting gang fit whole now? Leaves its placements in st when it does. */
static bool fits(struct search *s, struct pstatement *st)
{
    char why[POLICY_REASON_LEN];
    enum preason_kind kind;

    if (s->x || s->g->singleton) {
        struct ppod *p = s->x ? s->x : ppod_at(s->c, s->g->members[0]);

        return p && pplan_one_try(s->c, p, NULL, 0, st, why, sizeof(why)) == 0;
    }
    return pplan_gang_try(s->c, s->g, NULL, st, &kind, why, sizeof(why)) == 0;
}

static bool dry_fits(struct search *s)
{
    struct pstatement st = {0};
    bool ok = fits(s, &st);

    pstatement_discard(s->c, &st);
    return ok;
}

/* Greedy: take victims in order until the gang fits; then give back what it did not need. */
static bool choose(struct search *s)
{
    bool ok = false;

    for (size_t i = 0; i < s->n && !ok; i++) {
        struct victim *v = &s->v[i];

        /* The whole gang comes after its extras, and holds them: give those back first. */
        for (size_t k = 0; v->whole && k < i; k++)
            if (s->v[k].taken && s->v[k].g == v->g)
                give_back(s, &s->v[k]);
        if (!strategy_allows(s, v) || !take(s, v))
            continue;
        ok = dry_fits(s);
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
        if (s->v[i].taken)
            return true;
    return false;
}

static void restore_all(struct search *s)
{
    for (size_t i = s->n; i-- > 0;)
        if (s->v[i].taken)
            give_back(s, &s->v[i]);
}

/* The resource q is most over `mark` in (relative), or -1 when it is over in none. */
static int most_over(const struct pqueue *q, const struct policy_resources *mark)
{
    double most = 0;
    int best = -1;

    for (int r = 0; r < POLICY_RES_COUNT; r++) {
        int64_t over = pqueue_used(q, r) - mark->v[r];
        double rel;

        if (mark->v[r] < 0 || over <= 0)
            continue;
        rel = mark->v[r] > 0 ? (double)over / (double)mark->v[r] : 1e300;
        if (rel > most) {
            most = rel;
            best = r;
        }
    }
    return best;
}

/* "queue team-a is 2 GPUs over its fair share" (or over its quota) for the resource it is most
 * over. */
static void over_text(const struct pqueue *q, char *buf, size_t len)
{
    static const char *const unit[POLICY_RES_COUNT] = {" cpu", " of memory", " GPUs"};
    const struct policy_resources *mark = &q->fair_share;
    const char *what = "fair share";
    int r = most_over(q, mark);
    char amount[32];

    if (r < 0) {
        mark = &q->quota;
        what = "quota";
        r = most_over(q, mark);
    }
    if (r < 0) {
        snprintf(buf, len, "queue %s holds room a queue within its quota needs", q->name);
        return;
    }
    pamount_text(r, pqueue_used(q, r) - mark->v[r], amount, sizeof(amount));
    snprintf(buf, len, "queue %s is %s%s over its %s", q->name, amount, unit[r], what);
}

static int decide(struct search *s, int64_t now)
{
    struct pstatement st = {0};
    char reason[POLICY_REASON_LEN];
    int rc = POLICY_OK;

    if (!fits(s, &st)) { /* cannot happen: choose() just saw it fit */
        pstatement_discard(s->c, &st);
        restore_all(s);
        return -1;
    }
    pstatement_keep(&st);
    for (size_t i = 0; i < s->n && rc == POLICY_OK; i++) {
        struct victim *v = &s->v[i];

        if (!v->taken)
            continue;
        if (s->kind == POLICY_EVICT_RECLAIM) {
            snprintf(reason, sizeof(reason), "evicted for gang %s of queue %s: %s", s->g->key,
                     pgang_queue(s->c, s->g), v->over >= 0 ? s->over[v->over] : "");
        } else {
            snprintf(reason, sizeof(reason),
                     "preempted for gang %s of queue %s: its priority %d is above %d", s->g->key,
                     pgang_queue(s->c, s->g), pgang_priority(s->c, s->g), v->priority);
        }
        /* Back on its node, then out of its queues as a leaver: the plan made above sits
         * on its room until it is gone. */
        give_back(s, v);
        for (size_t k = 0; k < v->npods && rc == POLICY_OK; k++)
            rc = pevict_queue(s->c, VPOD(s, v, k), s->g, s->kind, reason);
        if (v->whole) {
            /* The gang is leaving whole: it takes no new member until it is placed whole
             * again (its planned extras give their room back). */
            pplan_release(s->c, v->g);
            v->g->admitted = false;
            v->g->running_since = 0;
        }
    }
    if (s->x) {
        s->x->extra = true; /* a bound gang's member beyond its minimum: the gang stays as is */
    } else {
        s->g->planned = true;
        pgang_unmark_waiting(s->c, s->g);
    }
    pgang_plan_renew(s->c, s->g, now);
    return rc;
}

static int search(struct policy_cluster *c, struct pgang *g, struct ppod *x,
                  enum policy_eviction_kind kind, int64_t now)
{
    struct search s = {.c = c, .g = g, .x = x, .kind = kind,
                       .rq = pqueue_find(c, pgang_queue(c, g))};
    int rc = -1;

    if (!s.rq)
        return -1;
    if (x)
        ppod_charge_resources(x, x->share, &s.need);
    else
        pgang_minimum_need(c, g, &s.need);
    if (kind == POLICY_EVICT_RECLAIM && !may_reclaim(&s))
        return -1;
    s.over = calloc(c->queues.n ? c->queues.n : 1, sizeof(*s.over));
    s.level = malloc((c->queues.n ? c->queues.n : 1) * sizeof(*s.level));
    if (!s.over || !s.level)
        goto out;
    for (size_t i = 0; i < c->queues.n; i++)
        s.level[i] = LEVEL_UNKNOWN;
    for (size_t i = 0; i < c->gangs.n; i++) {
        struct pgang *vg = c->gangs.items[i];
        const struct pqueue *lv = vg ? eligible(&s, vg, now) : NULL;

        if (lv && collect_gang(&s, vg, lv) != POLICY_OK)
            goto out;
    }
    if (s.n == 0)
        goto out;
    qsort(s.v, s.n, sizeof(*s.v), cmp_victims);
    if (!choose(&s))
        goto restore;
    rc = decide(&s, now);
    goto out;
restore:
    restore_all(&s);
out:
    victims_free(&s);
    return rc;
}

int preclaim(struct policy_cluster *c, struct pgang *g, struct ppod *x, int64_t now)
{
    if (x ? !g->admitted || x->phase != POLICY_POD_PENDING
          : g->admitted || !pgang_could_run(c, g))
        return -1;
    pfair_refresh(c);
    /* Under a limit of its own queue, room can only come from its own queue's gangs: the
     * queue, with the gang, is then over its fair share (never above its limit) and reclaim
     * refuses at once. Under an ancestor's limit it may come from a sibling queue below that
     * ancestor which holds more than it may (the dry run checks every limit with the victims
     * gone, and gives back victims elsewhere that free no room under it). */
    if (!c->opts.no_reclaim && search(c, g, x, POLICY_EVICT_RECLAIM, now) == 0)
        return 0;
    if (!c->opts.no_preemption && search(c, g, x, POLICY_EVICT_PREEMPT, now) == 0)
        return 0;
    return -1;
}
