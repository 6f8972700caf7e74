/*
 * filter.c - which candidate nodes may this pod go to?
 *
 * A pod goes where its gang's plan put it. The first member filtered makes
 * the plan for the whole gang; a gang of one (and a member past its gang's
 * minimum, once the gang is bound) is planned alone within the candidates.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

void policy_filter_result_cleanup(struct policy_filter_result *r)
{
    if (!r)
        return;
    free(r->verdicts);
    free(r->reason);
    free(r->ahead);
    free(r->detail_);
    pwhy_drop(r->why_);
    memset(r, 0, sizeof(*r));
}

/* A gang found bound below its minimum (a restart mid-commit) is completed first. */
static void complete_partial_gangs(struct policy_cluster *c, int64_t now)
{
    bool left = false;

    if (!c->maybe_partial)
        return;
    for (size_t i = 0; i < c->gangs.n; i++) {
        struct pgang *g = c->gangs.items[i];
        int32_t bound, holding;

        if (!g || g->admitted || g->singleton)
            continue;
        pgang_counts(c, g, NULL, &bound, &holding, NULL);
        if (bound == 0 || bound >= pgang_min(c, g))
            continue;
        if (!g->planned && pplan_gang(c, g, NULL, now) == 0) {
            pgang_note_bound(c, g); /* all that was missing was room held for a member to come */
            continue;
        }
        left |= !g->planned;
    }
    c->maybe_partial = left;
}

static bool in_candidates(const char *name, const char *const *cands, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (strcmp(cands[i], name) == 0)
            return true;
    return false;
}

/* Every candidate fails for one answer that is no reason to wait (the pod is bound, its bind
 * is held). */
static int all_fail_text(struct policy_filter_result *out, enum policy_fit fit, const char *text)
{
    out->reason = pstrdup(text);
    if (!out->reason)
        return POLICY_ENOMEM;
    for (size_t i = 0; i < out->n; i++)
        out->verdicts[i] = (struct policy_node_verdict){fit, out->reason};
    return POLICY_OK;
}

/* Every candidate fails for one reason; the result holds it as data too. */
static int all_fail(struct policy_filter_result *out, enum policy_fit fit, struct pwhy *why)
{
    if (!why)
        return POLICY_ENOMEM;
    out->why_ = pwhy_hold(why);
    out->why = &why->r;
    return all_fail_text(out, fit, why->text);
}

/* all_fail for a reason made now; it is p's too when keep. */
static int fail_with(struct policy_filter_result *out, enum policy_fit fit, struct ppod *p,
                     bool keep, const struct preason *r)
{
    struct pwhy *w = pwhy_new(r);
    int rc;

    if (keep)
        pwhy_set(&p->why, w);
    rc = all_fail(out, fit, w);
    pwhy_drop(w);
    return rc;
}

/*
 * The pod has a place: that node fits, every other one is passed over for
 * it. (Why each other node would not do is not asked: this runs on every
 * filter call, over thousands of candidates.)
 */
static int answer_planned(struct policy_cluster *c, const struct ppod *p, const char *const *cands,
                          struct policy_filter_result *out)
{
    const char *planned = pnode_at(c, p->place.node)->name;

    out->detail_ = pstrfmt("muster planned node %s", planned);
    if (!out->detail_)
        return POLICY_ENOMEM;
    for (size_t i = 0; i < out->n; i++)
        out->verdicts[i] = strcmp(cands[i], planned) == 0
                               ? (struct policy_node_verdict){POLICY_FITS, NULL}
                               : (struct policy_node_verdict){POLICY_UNSCHEDULABLE, out->detail_};
    return POLICY_OK;
}

/* kube-scheduler did not offer the planned node: move the member within the offer. */
static int move_within(struct policy_cluster *c, struct ppod *p, const char *const *cands, size_t n,
                       struct preason *why)
{
    const char *was = pnode_at(c, p->place.node)->name;
    struct preason inner;

    if (pplan_move(c, p, cands, n, &inner) == 0)
        return 0;
    preason_init(why, POLICY_REASON_NOT_OFFERED, ppod_gang(c, p)->key);
    why->r.pod = p->name;
    why->r.other = was;
    preason_text(&inner, why->detail, sizeof(why->detail));
    return -1;
}

/* move_within, over the offered nodes in the domains its gang, subgroup and replica keep to:
 * those it prefers (its fellows' finer domain) first. All of them without a constraint. */
static int move_within_domain(struct policy_cluster *c, const struct pgang *g, struct ppod *p,
                              const char *const *cands, size_t n, struct preason *why)
{
    const char **mine;
    size_t k;
    int rc = -1;

    if (!ptopo_constrained(g))
        return move_within(c, p, cands, n, why);
    if (!(mine = malloc((n ? n : 1) * sizeof(*mine)))) {
        preason_init(why, POLICY_REASON_NO_MEMORY, g->key);
        return -1;
    }
    k = ptopo_within(c, g, p, cands, n, true, mine);
    if (k > 0)
        rc = move_within(c, p, mine, k, why);
    if (rc != 0)
        rc = move_within(c, p, mine, ptopo_within(c, g, p, cands, n, false, mine), why);
    free(mine);
    return rc;
}

/* Why a gang is turned away for another (the order's, or stable.c's). */
enum yield {
    YIELD_AHEAD,       /* ahead in the order */
    YIELD_GOES_FIRST,  /* would evict it at once, and can go now instead */
    YIELD_NO_VICTIMS,  /* would evict it at once were it placed on victims' room */
};

/* Turned away for a gang ahead of it (or one that would evict it at once): say so, and name
 * it so the caller hands it back. */
static int turned_away(struct policy_cluster *c, struct pgang *g, struct ppod *p,
                       const struct pgang *ahead, enum yield how,
                       struct policy_filter_result *out)
{
    static const enum policy_reason_kind kind[] = {
        [YIELD_AHEAD] = POLICY_REASON_AHEAD,
        [YIELD_GOES_FIRST] = POLICY_REASON_YIELD,
        [YIELD_NO_VICTIMS] = POLICY_REASON_NO_VICTIMS,
    };
    struct preason why;
    struct pwhy *w;

    preason_init(&why, kind[how], g->key);
    why.r.other = ahead->key;
    why.r.other_queue = pgang_queue(c, ahead);
    /* The order must not make the other gang wait for this one in turn. */
    g->yields_to = how != YIELD_AHEAD ? ahead->id : -1;
    g->waits_for = ahead->id;
    powner_explain(c, g, &why);
    w = pgang_set_reason(g, &why);
    pwhy_set(&p->why, w);
    if (!(out->ahead = pstrdup(ahead->key)))
        return POLICY_ENOMEM;
    return all_fail(out, POLICY_UNSCHEDULABLE, w);
}

/* An extra turned away for a member of a subgroup of its own gang that goes first. Nothing
 * is handed back: that member is pending, and kube-scheduler asks again about a pod an
 * extender turned away when the cluster changes (this extra's own retry included). */
static int turned_away_in_gang(struct policy_cluster *c, struct pgang *g, struct ppod *p,
                               const struct ppod *first, struct policy_filter_result *out)
{
    struct preason why;

    (void)c;
    preason_init(&why, POLICY_REASON_IN_TURN, g->key);
    pgang_sub_label(g, first->sub, why.sub, sizeof(why.sub));
    why.r.pod = p->name;
    why.r.other = first->name;
    return fail_with(out, POLICY_UNSCHEDULABLE, p, true, &why);
}

/* Room is being made for g by evictions: it waits for its victims to leave. */
static int awaiting_victims(struct policy_cluster *c, struct pgang *g, struct policy_filter_result *out)
{
    pgang_note_awaiting(c, g);
    return all_fail(out, POLICY_UNSCHEDULABLE, g->why);
}

/* Capacity ran out for a whole gang, a gang of one, or x, a member beyond the minimum of a
 * bound gang: may evictions make room? */
static int try_evictions(struct policy_cluster *c, struct pgang *g, struct ppod *p,
                         struct ppod *x, int64_t now, struct policy_filter_result *out)
{
    struct pgang *first;

    /* Victims chosen before are still leaving (one refused since, say): their room is not
     * free yet, and choosing more now would evict for room that is on its way. */
    if (g->awaiting > 0)
        return awaiting_victims(c, g, out);
    if (g->reason_kind != PREASON_CAPACITY && g->reason_kind != PREASON_QUEUE)
        return -1;
    if (pevict_for(c, g, x, now, &first) != 0)
        return first ? turned_away(c, g, p, first, YIELD_NO_VICTIMS, out) : -1;
    out->evictions = true;
    return awaiting_victims(c, g, out);
}

/* A gang of one, or a member past a bound gang's minimum, placed alone within the offer (the
 * offered nodes of its gang's topology domain, when it has one: no node elsewhere is said to
 * have been looked at). */
static int filter_alone(struct policy_cluster *c, struct ppod *p, struct pgang *g,
                        const char *const *cands, size_t n, const char *domain, int64_t now,
                        struct policy_filter_result *out)
{
    struct pstatement st = {0};
    struct preason why;
    struct pgang *ahead;
    struct ppod *first;

    if (g->singleton)
        ptopo_observe(c, g); /* a pod alone is a gang shape of one, as domains are priced */
    if (pplan_one_try(c, p, cands, n, &st, &why) != 0) {
        pstatement_discard(c, &st);
        if (domain && why.r.kind == POLICY_REASON_NO_NODE)
            why.r.domain = domain;
        pgang_set_reason(g, &why);
        if (try_evictions(c, g, p, g->singleton ? NULL : p, now, out) == 0)
            return POLICY_OK;
        preason_holders(c, g, &why);
        pwhy_set(&p->why, pgang_set_reason(g, &why));
        return all_fail(out, POLICY_UNSCHEDULABLE, p->why);
    }
    if ((ahead = porder_blocker(c, g, g->singleton ? NULL : p, &st, now))) {
        pstatement_discard(c, &st);
        return turned_away(c, g, p, ahead, YIELD_AHEAD, out);
    }
    if ((ahead = pstable_evictor(c, g, now))) {
        pstatement_discard(c, &st);
        return turned_away(c, g, p, ahead, YIELD_GOES_FIRST, out);
    }
    /* The member ahead may be one kube-scheduler never places (a constraint muster does not
     * model): the room is held back for it for a plan's lifetime at most. */
    if (!g->singleton &&
        (!g->in_turn_since || now - g->in_turn_since < c->opts.plan_ttl_ms) &&
        (first = porder_subgroup_first(c, g, p, &st))) {
        if (!g->in_turn_since)
            g->in_turn_since = now;
        pstatement_discard(c, &st);
        return turned_away_in_gang(c, g, p, first, out);
    }
    g->in_turn_since = 0;
    g->yields_to = g->waits_for = -1;
    pstatement_keep(&st);
    p->extra = !g->singleton;
    pgang_plan_renew(c, g, now);
    if (g->singleton) {
        g->planned = true;
        pgang_unmark_waiting(c, g);
    }
    pgang_set_reason(g, NULL);
    return POLICY_OK;
}

/* The domains g's members keep to, in words: "in rack=r07", or with none placed yet what it
 * asks ("within one rack (required)"); NULL: nothing to say. */
static const char *keep_words(const struct policy_cluster *c, const struct pgang *g, char *buf,
                              size_t len)
{
    char words[POLICY_REASON_LEN - 16];
    const char *key;

    if (ptopo_domain_text(c, g, words, sizeof(words)))
        snprintf(buf, len, "in %s", words);
    else if (ptopo_want_text(c, g, words, sizeof(words), &key))
        snprintf(buf, len, "within %s", words);
    else
        return NULL;
    return buf;
}

/* filter_alone over the offered nodes in the domains a member of its gang keeps to (a member
 * past the minimum of a gang bound in one domain goes there too): those its fellows share
 * first, then the rest of its required ones. */
static int filter_alone_in_domain(struct policy_cluster *c, struct ppod *p, struct pgang *g,
                                  const char *const *cands, size_t n, int64_t now,
                                  struct policy_filter_result *out)
{
    const char **mine;
    char domain[POLICY_REASON_LEN];
    size_t k;
    int rc;

    if (g->singleton || !ptopo_constrained(g))
        return filter_alone(c, p, g, cands, n, NULL, now, out);
    if (!(mine = malloc((n ? n : 1) * sizeof(*mine))))
        return POLICY_ENOMEM;
    k = ptopo_within(c, g, p, cands, n, true, mine);
    if (k > 0) { /* room in its fellows' domain: it goes there (decided as usual) */
        struct pstatement st = {0};

        if (pplan_one_try(c, p, mine, k, &st, NULL) != 0)
            k = 0;
        pstatement_discard(c, &st);
    }
    if (k == 0)
        k = ptopo_within(c, g, p, cands, n, false, mine);
    /* p is pending: what it is told is said of the domains its gang keeps to */
    rc = filter_alone(c, p, g, mine, k, keep_words(c, g, domain, sizeof(domain)), now, out);
    free(mine);
    return rc;
}

/* The first member filtered plans the whole gang's minimum. */
static int filter_gang(struct policy_cluster *c, struct ppod *p, struct pgang *g,
                       int64_t now, struct policy_filter_result *out)
{
    struct pstatement st = {0};
    struct preason why;
    enum preason_kind kind;
    struct pgang *ahead;

    /* kube-scheduler's gang cycle asks about every member, once per candidate placement:
     * a gang that just could not be planned, with nothing changed since, is answered so again
     * (unplaceable.c) without planning again. */
    if (punplaceable_known(c, g, now))
        return g->awaiting > 0 ? awaiting_victims(c, g, out)
                               : all_fail(out,
                                          g->reason_kind == PREASON_INVALID ? POLICY_UNRESOLVABLE
                                                                            : POLICY_UNSCHEDULABLE,
                                          g->why);
    if (pplan_gang_try(c, g, p, &st, &kind, &why) != 0) {
        pstatement_discard(c, &st);
        pgang_set_reason(g, &why);
        g->reason_kind = kind;
        if (try_evictions(c, g, p, NULL, now, out) == 0)
            return POLICY_OK;
        preason_holders(c, g, &why);
        pgang_tell_pending(c, g, pgang_set_reason(g, &why));
        g->reason_kind = kind;
        punplaceable_note(c, g, now);
        return all_fail(out, kind == PREASON_INVALID ? POLICY_UNRESOLVABLE : POLICY_UNSCHEDULABLE,
                        g->why);
    }
    g->unplaceable_at = 0;
    if ((ahead = porder_blocker(c, g, NULL, &st, now))) {
        pstatement_discard(c, &st);
        return turned_away(c, g, p, ahead, YIELD_AHEAD, out);
    }
    if ((ahead = pstable_evictor(c, g, now))) {
        pstatement_discard(c, &st);
        return turned_away(c, g, p, ahead, YIELD_GOES_FIRST, out);
    }
    pstatement_keep(&st);
    g->yields_to = g->waits_for = -1;
    g->planned = true;
    pgang_unmark_waiting(c, g);
    pgang_plan_renew(c, g, now);
    pgang_set_reason(g, NULL);
    if (p->phase == POLICY_POD_PENDING) {
        preason_init(&why, POLICY_REASON_EXTRA, g->key);
        why.r.pod = p->name;
        return fail_with(out, POLICY_UNSCHEDULABLE, p, true, &why);
    }
    return POLICY_OK;
}

static int filter_pending(struct policy_cluster *c, struct ppod *p, struct pgang *g,
                          const char *const *cands, size_t n, int64_t now,
                          struct policy_filter_result *out)
{
    /* A declared minimum of nothing (Volcano's minMember 0): no gang, each pod on its own. */
    if (!g->singleton && !g->admitted && pgang_declared(g) &&
        pgang_satisfied(c, g, PGANG_BOUND)) {
        g->admitted = true;
        g->running_since = now;
    }
    if (g->singleton || g->admitted)
        return filter_alone_in_domain(c, p, g, cands, n, now, out);
    return filter_gang(c, p, g, now, out);
}

static int filter_pod(struct policy_cluster *c, struct ppod *p, const char *const *cands, size_t n,
                      int64_t now, struct policy_filter_result *out)
{
    struct pgang *g;
    char why[POLICY_REASON_LEN];
    struct preason r;
    int rc;

    out->n = n;
    out->verdicts = calloc(n ? n : 1, sizeof(*out->verdicts));
    if (!out->verdicts)
        return POLICY_ENOMEM;
    if (now > c->clock)
        c->clock = now;
    policy_expire(c, now);
    g = ppod_gang(c, p);
    g->asked = now;
    g->unasked_backoff = 0; /* asked: a later quiet spell is looked at after quiet time */
    if (p->phase == POLICY_POD_BOUND || p->phase == POLICY_POD_EVICTING) {
        snprintf(why, sizeof(why), "pod is already bound to node %s%s",
                 p->bound_node ? p->bound_node : "?",
                 p->phase == POLICY_POD_EVICTING ? " and being evicted" : "");
        return all_fail_text(out, POLICY_UNRESOLVABLE, why);
    }
    if (!ppod_ask_valid(p, r.detail, sizeof(r.detail))) {
        char detail[POLICY_REASON_LEN];

        snprintf(detail, sizeof(detail), "%s", r.detail);
        preason_init(&r, POLICY_REASON_INVALID, g->key);
        r.r.never = true;
        preason_detail(&r, "%s", detail);
        return fail_with(out, POLICY_UNRESOLVABLE, p, true, &r);
    }
    if (!g->singleton && !g->admitted)
        complete_partial_gangs(c, now);
    if (p->phase == POLICY_POD_PENDING) {
        rc = filter_pending(c, p, g, cands, n, now, out);
        if (rc != POLICY_OK || out->reason || p->phase == POLICY_POD_PENDING)
            return rc;
    }
    if (g->awaiting > 0)
        return awaiting_victims(c, g, out);
    if (p->phase != POLICY_POD_PLANNED) {
        /* Its bind is held or in flight: its place does not move under it. */
        snprintf(why, sizeof(why), "a bind for this pod is %s on node %s",
                 p->phase == POLICY_POD_WAITING ? "held at its gang's barrier" : "in flight",
                 p->place.node >= 0 ? pnode_at(c, p->place.node)->name
                 : p->bound_node    ? p->bound_node
                                    : "?");
        if (p->place.node < 0 || !in_candidates(pnode_at(c, p->place.node)->name, cands, n))
            return all_fail_text(out, POLICY_UNSCHEDULABLE, why);
        return answer_planned(c, p, cands, out);
    }
    if (!in_candidates(pnode_at(c, p->place.node)->name, cands, n)) {
        /* One of kube-scheduler's placements without the plan's domain: answered from the
         * plan (topology.c); else the member moves, within its gang's domain. */
        if (ptopo_elsewhere(c, g, p, cands, n, why, sizeof(why))) {
            preason_init(&r, POLICY_REASON_TOPOLOGY, g->key);
            r.r.pod = p->name;
            preason_detail(&r, "%s", why);
            return fail_with(out, POLICY_UNSCHEDULABLE, p, false, &r);
        }
        if (move_within_domain(c, g, p, cands, n, &r) != 0)
            return fail_with(out, POLICY_UNSCHEDULABLE, p, false, &r);
    }
    return answer_planned(c, p, cands, out);
}

int policy_filter(struct policy_cluster *c, const char *ns, const char *name,
                  const char *const *cands, size_t n, int64_t now, struct policy_filter_result *out)
{
    struct ppod *p = ppod_find(c, ns, name);
    int rc;

    memset(out, 0, sizeof(*out));
    if (!p)
        return POLICY_ENOENT;
    rc = filter_pod(c, p, cands, n, now, out);
    /* kube-scheduler parks a pod every node of which was turned away until something it
     * watches changes: a spec change it does not watch has to hand it back. */
    if (rc == POLICY_OK) {
        p->refused = out->reason != NULL;
        p->parked_hint = false;
        if (p->refused)
            p->refusal = ++c->refusals;
    }
    return rc;
}

int policy_prioritize(struct policy_cluster *c, const char *ns, const char *name,
                      const char *const *cands, size_t n, int64_t now, int *scores)
{
    const struct ppod *p = ppod_find(c, ns, name);
    const struct pnode *planned;
    int64_t lo = INT64_MAX, hi = INT64_MIN;
    int64_t *fill;

    if (!p)
        return POLICY_ENOENT;
    (void)now;
    planned = pnode_at(c, p->place.node);
    if (planned) { /* its node and no other: nothing else to look up */
        for (size_t i = 0; i < n; i++)
            scores[i] = strcmp(planned->name, cands[i]) == 0 ? POLICY_MAX_SCORE : 0;
        return POLICY_OK;
    }
    fill = malloc((n ? n : 1) * sizeof(*fill));
    if (!fill)
        return POLICY_ENOMEM;
    /* A node muster does not know, or the fragmentation strategy finds no room on, scores 0
     * and stays out of the range the others are spread over. */
    for (size_t i = 0; i < n; i++) {
        const struct pnode *node = pnode_at(c, pidx_get(&c->node_ix, cands[i]));

        fill[i] = !node                                        ? PSCORE_NONE
                  : c->opts.strategy == POLICY_FRAGMENTATION ? pfrag_node_score(c, p, node)
                  : c->opts.strategy == POLICY_SPREAD        ? -pnode_fill_score(node)
                                                             : pnode_fill_score(node);
        if (fill[i] == PSCORE_NONE)
            continue;
        lo = fill[i] < lo ? fill[i] : lo;
        hi = fill[i] > hi ? fill[i] : hi;
    }
    /* In 128 bits: the spread times the score range may not fit in 64. */
    for (size_t i = 0; i < n; i++)
        scores[i] = fill[i] == PSCORE_NONE || hi == lo
                        ? 0
                        : (int)(((__int128)fill[i] - lo) * (POLICY_MAX_SCORE - 1) /
                                ((__int128)hi - lo));
    free(fill);
    return POLICY_OK;
}
