/*
 * gang.c - a gang: its composition (subgroups and minimums, from whichever
 * source declares it), its members, its queue, priority and state.
 *
 * Composition: a source that gives subgroups beats one that gives a count;
 * between compositions the first of policy_gang_source wins (a RayCluster,
 * then a PodGroup, then a Workload), between counts a Workload's beats a
 * PodGroup's (count_order). Every other declaring source is checked against
 * it and a disagreement is kept as the gang's conflict, for the caller to say.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "arith.h"
#include "internal.h"

const struct pdecl *pgang_decl(const struct pgang *g, int s)
{
    static const struct pdecl none;

    return g->decl ? &g->decl[s] : &none;
}

bool pgang_declared(const struct pgang *g)
{
    for (int s = 0; g->decl && s < POLICY_GANG_SOURCES; s++)
        if (g->decl[s].on)
            return true;
    return false;
}

/* The whole minimum in force; an undeclared gang of several pods needs them all. */
int32_t pgang_min(const struct policy_cluster *c, const struct pgang *g)
{
    (void)c;
    if (pgang_declared(g))
        return g->min;
    return g->nmembers > 0 ? (int32_t)g->nmembers : 1;
}

const char *pgang_queue(const struct policy_cluster *c, const struct pgang *g)
{
    const struct ppod *p;

    if (g->queue)
        return g->queue;
    p = g->nmembers ? ppod_at(c, g->members[0]) : NULL;
    return p ? p->queue : c->default_queue;
}

/* The gang's priority: a source's PriorityClass, else its highest member's. */
static int32_t priority_of(const struct policy_cluster *c, const struct pgang *g)
{
    int32_t best = 0;
    bool any = false;

    for (int s = 0; s < POLICY_GANG_SOURCES; s++)
        if (pgang_decl(g, s)->on && pgang_decl(g, s)->has_priority)
            return pgang_decl(g, s)->priority;
    for (size_t i = 0; i < g->nmembers; i++) {
        const struct ppod *p = ppod_at(c, g->members[i]);

        if (p && (!any || p->priority > best)) {
            best = p->priority;
            any = true;
        }
    }
    return best;
}

/*
 * May it be evicted for another gang? A source's word; else a member marked
 * preemptible makes it so; else KAI's line on its priority. A member marked not
 * preemptible stays whatever its gang is, and keeps the gang from going whole
 * (reclaim.c); a gang of one marked so is not preemptible.
 */
static bool preemptible_of(const struct policy_cluster *c, const struct pgang *g)
{
    bool yes = false, no = false;

    for (int s = 0; s < POLICY_GANG_SOURCES; s++)
        if (pgang_decl(g, s)->on && pgang_decl(g, s)->preemptible != POLICY_PREEMPTIBLE_BY_PRIORITY)
            return pgang_decl(g, s)->preemptible == POLICY_PREEMPTIBLE_YES;
    for (size_t i = 0; i < g->nmembers; i++) {
        const struct ppod *p = ppod_at(c, g->members[i]);

        yes |= p && p->preemptible == POLICY_PREEMPTIBLE_YES;
        no |= p && p->preemptible == POLICY_PREEMPTIBLE_NO;
    }
    if (yes)
        return true;
    if (no && g->singleton)
        return false;
    return g->priority < POLICY_NONPREEMPTIBLE_PRIORITY;
}

int32_t pgang_priority(const struct policy_cluster *c, const struct pgang *g)
{
    (void)c;
    return g->priority;
}

bool pgang_preemptible(const struct policy_cluster *c, const struct pgang *g)
{
    (void)c;
    return g->preemptible;
}

/* Priority and preemptibility are cached on the gang: refresh them after its
 * sources or members changed. Queue usage counts non-preemptible usage apart,
 * so a change of that recounts the queues. */
void pgang_refresh(struct policy_cluster *c, struct pgang *g)
{
    bool was = g->preemptible;

    g->priority = priority_of(c, g);
    g->preemptible = preemptible_of(c, g);
    if (was != g->preemptible && pgang_tally(c, g, PGANG_PLACED, NULL) > 0)
        pqueue_recount(c);
}

/* "head", "worker group gpu", "subgroup x", "pod group y" */
void pgang_sub_label(const struct pgang *g, int32_t sub, char *buf, size_t len)
{
    static const char *const kind[POLICY_GANG_SOURCES] = {"worker group", "subgroup", "pod group"};
    const char *name = sub >= 0 && (size_t)sub < g->nsubs ? g->subs[sub].name : "";
    bool held = false;

    for (size_t i = 0; i < g->nholds && !held; i++)
        held = strcmp(g->holds[i].sub, name) == 0;
    if (held || (g->composed_by == POLICY_GANG_WORKLOAD && strcmp(name, "head") == 0))
        snprintf(buf, len, "%s", name); /* "head", "submitter" */
    else
        snprintf(buf, len, "%s %s", kind[g->composed_by], name);
}

int32_t pgang_sub_of(const struct pgang *g, const char *name)
{
    for (size_t i = 0; name && i < g->nsubs; i++)
        if (strcmp(g->subs[i].name, name) == 0)
            return (int32_t)i;
    return -1;
}

void psubs_free(struct psubgroup *subs, size_t n)
{
    for (size_t i = 0; subs && i < n; i++) {
        free(subs[i].name);
        ptopo_want_free(&subs[i].want);
        ptopo_want_free(&subs[i].other);
    }
    free(subs);
}

static int32_t decl_min(const struct pdecl *d)
{
    int32_t sum = 0;

    for (size_t i = 0; i < d->nsubs; i++)
        sum += d->subs[i].min > 0 ? d->subs[i].min : 0;
    return d->min > sum ? d->min : sum;
}

static bool same_subs(const struct pdecl *a, const struct pdecl *b)
{
    if (a->nsubs != b->nsubs)
        return false;
    for (size_t i = 0; i < a->nsubs; i++) {
        int32_t j = -1;

        for (size_t k = 0; k < b->nsubs && j < 0; k++)
            if (strcmp(a->subs[i].name, b->subs[k].name) == 0)
                j = (int32_t)k;
        if (j < 0 || a->subs[i].min != b->subs[j].min)
            return false;
    }
    return true;
}

static const char *const source_name[POLICY_GANG_SOURCES] = {"RayCluster", "PodGroup",
                                                             "Workload"};

/* "RayCluster lab/rc 6 (head 1, gpu 5)" */
static void decl_text(const struct pgang *g, int s, char *buf, size_t len)
{
    const struct pdecl *d = pgang_decl(g, s);
    size_t off = (size_t)snprintf(buf, len, "%s %s %d", source_name[s], g->key, decl_min(d));

    for (size_t i = 0; i < d->nsubs && off < len; i++)
        off += (size_t)snprintf(buf + off, len - off, "%s%s %d", i ? ", " : " (", d->subs[i].name,
                                d->subs[i].min);
    if (d->nsubs && off < len)
        snprintf(buf + off, len - off, ")");
}

static void compose_conflict(struct pgang *g, int chosen)
{
    char a[POLICY_REASON_LEN], b[POLICY_REASON_LEN], text[2 * POLICY_REASON_LEN + 32];

    pset_str(&g->conflict, NULL);
    for (int s = 0; s < POLICY_GANG_SOURCES; s++) {
        const struct pdecl *d = pgang_decl(g, s);

        if (!d->on || s == chosen)
            continue;
        if (decl_min(d) == g->min && (d->nsubs == 0 || same_subs(d, pgang_decl(g, chosen))))
            continue;
        decl_text(g, s, a, sizeof(a));
        decl_text(g, chosen, b, sizeof(b));
        snprintf(text, sizeof(text), "%s disagrees with %s, which muster follows", a, b);
        pset_str(&g->conflict, text);
        return;
    }
}

/*
 * Between counts: a Workload's (Kubernetes' own gang object, the count kube-scheduler's own
 * gang scheduling keeps when its gate is on) beats a PodGroup's bare minMember (KubeRay
 * writes a scheduler-plugins PodGroup once and never updates it).
 */
static const enum policy_gang_source count_order[POLICY_GANG_SOURCES] = {
    POLICY_GANG_WORKLOAD, POLICY_GANG_WORKLOAD_API, POLICY_GANG_PODGROUP};

/* Which source's composition is in force: subgroups beat a count, then source order. */
static int composing_source(const struct pgang *g)
{
    for (int s = 0; s < POLICY_GANG_SOURCES; s++)
        if (pgang_decl(g, s)->on && pgang_decl(g, s)->nsubs > 0)
            return s;
    for (int i = 0; i < POLICY_GANG_SOURCES; i++)
        if (pgang_decl(g, count_order[i])->on)
            return (int)count_order[i];
    return -1;
}

int pgang_compose(struct policy_cluster *c, struct pgang *g)
{
    int s = composing_source(g);
    struct psubgroup *subs = NULL;
    size_t n = s >= 0 ? pgang_decl(g, s)->nsubs : 0;

    if (n && !(subs = calloc(n, sizeof(*subs))))
        return POLICY_ENOMEM;
    for (size_t i = 0; i < n; i++) {
        const struct psubgroup *d = &pgang_decl(g, s)->subs[i];
        const struct ptopo_want *w = &d->want;
        struct policy_topology_constraint tc = {
            .topology = w->topology, .required = w->required, .preferred = w->preferred,
            .required_tier = w->required_tier, .preferred_tier = w->preferred_tier,
            .dialect = w->dialect, .invalid = w->invalid};

        subs[i].min = d->min > 0 ? d->min : 0;
        if (!(subs[i].name = pstrdup(d->name)) ||
            ptopo_want_copy(&subs[i].want, &tc) != POLICY_OK) {
            psubs_free(subs, i + 1);
            return POLICY_ENOMEM;
        }
    }
    psubs_free(g->subs, g->nsubs);
    g->subs = subs;
    g->nsubs = n;
    g->min = s >= 0 ? decl_min(pgang_decl(g, s)) : 0;
    g->composed_by = s >= 0 ? (enum policy_gang_source)s : POLICY_GANG_WORKLOAD;
    g->could_run_epoch = 0;
    if (s >= 0)
        compose_conflict(g, s);
    else
        pset_str(&g->conflict, NULL);
    /* The holds after the sources are weighed: a source does not declare what is held. */
    if (phold_compose(g, &g->subs, &g->nsubs, &g->min) != POLICY_OK)
        return POLICY_ENOMEM;
    for (size_t i = 0; i < g->nmembers; i++) {
        struct ppod *p = ppod_at(c, g->members[i]);

        if (p)
            p->sub = pgang_sub_of(g, p->subgroup);
    }
    pgang_refresh(c, g);
    return POLICY_OK;
}

void pgang_counts(const struct policy_cluster *c, const struct pgang *g, int32_t *members,
                  int32_t *bound, int32_t *holding, int32_t *waiting)
{
    int32_t m = 0, b = 0, h = 0, w = 0;

    for (size_t i = 0; i < g->nmembers; i++) {
        const struct ppod *p = ppod_at(c, g->members[i]);

        if (!p || p->phase == POLICY_POD_EVICTING)
            continue;
        m++;
        if (p->phase == POLICY_POD_BOUND)
            b++;
        else if (p->phase != POLICY_POD_PENDING)
            h++;
        if (p->phase == POLICY_POD_WAITING)
            w++;
    }
    if (members)
        *members = m;
    if (bound)
        *bound = b;
    if (holding)
        *holding = h;
    if (waiting)
        *waiting = w;
}

static bool phase_counts(enum policy_pod_phase ph, enum pgang_count what)
{
    /* (a held stand-in, placed, counts whatever is asked: the barrier and admission never wait
     * for a member that cannot exist yet; see member_counts) */
    switch (what) {
    case PGANG_BOUND:
        return ph == POLICY_POD_BOUND;
    case PGANG_AT_BIND:
        return ph == POLICY_POD_BOUND || ph == POLICY_POD_WAITING || ph == POLICY_POD_BINDING;
    case PGANG_PLACED:
        return ph != POLICY_POD_PENDING && ph != POLICY_POD_EVICTING;
    }
    return false;
}

/* How many of its members, per subgroup (sub[] of nsubs) and in all, count as `what`. */
int32_t pgang_tally(const struct policy_cluster *c, const struct pgang *g, enum pgang_count what,
                    int32_t *per_sub)
{
    int32_t total = 0;

    for (size_t s = 0; per_sub && s < g->nsubs; s++)
        per_sub[s] = 0;
    for (size_t i = 0; i < g->nmembers; i++) {
        const struct ppod *p = ppod_at(c, g->members[i]);

        if (!p || !(phase_counts(p->phase, what) || (p->held && p->phase == POLICY_POD_PLANNED)))
            continue;
        total++;
        if (per_sub && p->sub >= 0 && (size_t)p->sub < g->nsubs)
            per_sub[p->sub]++;
    }
    return total;
}

/* What g's minimum still asks: its pending members up to the minimum, with the shares they
 * ask; sums saturate (arith.h). */
void pgang_minimum_need(const struct policy_cluster *c, const struct pgang *g,
                        struct policy_resources *need)
{
    int32_t left = pgang_min(c, g) - pgang_tally(c, g, PGANG_PLACED, NULL);

    memset(need, 0, sizeof(*need));
    for (size_t i = 0; i < g->nmembers && left > 0; i++) {
        const struct ppod *p = ppod_at(c, g->members[i]);
        struct policy_resources r;

        if (!p || p->phase != POLICY_POD_PENDING)
            continue;
        ppod_charge_resources(p, ppod_share_asked(c, p), &r);
        for (int k = 0; k < POLICY_RES_COUNT; k++)
            need->v[k] = parith_add(need->v[k], r.v[k]);
        left--;
    }
}

static int cmp_int64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;

    return x < y ? -1 : x > y;
}

int64_t pleast_sum(int64_t *v, size_t n, int32_t k)
{
    int64_t sum = 0;

    qsort(v, n, sizeof(*v), cmp_int64);
    for (size_t i = 0; i < n && (int32_t)i < k; i++)
        sum = parith_add(sum, v[i]);
    return sum;
}

void pgang_least_need(const struct policy_cluster *c, const struct pgang *g,
                      const struct ppod *const *pool, size_t npool, const int32_t *missing_sub,
                      int32_t total, struct policy_resources *need)
{
    int64_t stack[64], *v = npool <= 64 ? stack : malloc(npool * sizeof(*v));

    memset(need, 0, sizeof(*need));
    if (!v)
        return; /* out of memory: nothing asked up front; each placement is still checked */
    for (int r = 0; r < POLICY_RES_COUNT; r++) {
        int32_t left = total;
        size_t n;

        /* Each subgroup's missing count from its own least asking members... */
        for (size_t s = 0; s < g->nsubs; s++) {
            n = 0;
            for (size_t i = 0; i < npool; i++)
                if (pool[i]->sub == (int32_t)s) {
                    struct policy_resources a;

                    ppod_charge_resources(pool[i], ppod_share_asked(c, pool[i]), &a);
                    v[n++] = a.v[r];
                }
            need->v[r] = parith_add(need->v[r], pleast_sum(v, n, missing_sub[s]));
            left -= missing_sub[s] < (int32_t)n ? missing_sub[s] : (int32_t)n;
        }
        /* ... then the rest from the least asking members of all (a lower bound: a member
         * counted for its subgroup may be counted again here, which only lowers it). */
        n = 0;
        for (size_t i = 0; i < npool; i++) {
            struct policy_resources a;

            ppod_charge_resources(pool[i], ppod_share_asked(c, pool[i]), &a);
            v[n++] = a.v[r];
        }
        if (left > 0)
            need->v[r] = parith_add(need->v[r], pleast_sum(v, n, left));
    }
    if (v != stack)
        free(v);
}

/* Does what counts as `what` meet every subgroup's minimum and the whole one? */
bool pgang_satisfied(const struct policy_cluster *c, const struct pgang *g, enum pgang_count what)
{
    int32_t stack[16], *per = g->nsubs <= 16 ? stack : malloc(g->nsubs * sizeof(*per));
    bool ok;

    if (!per)
        return false;
    ok = pgang_tally(c, g, what, per) >= pgang_min(c, g);
    for (size_t s = 0; ok && s < g->nsubs; s++)
        ok = per[s] >= g->subs[s].min;
    if (per != stack)
        free(per);
    return ok;
}

/* A gang that waits for its minimum: pending members, no plan, not running. */
bool pgang_waits(const struct policy_cluster *c, const struct pgang *g)
{
    int32_t members, bound, holding;

    if (g->planned || g->admitted || g->nmembers == 0 || (!g->singleton && !pgang_declared(g)))
        return false;
    pgang_counts(c, g, &members, &bound, &holding, NULL);
    return members > bound + holding;
}

void pgang_mark_waiting(struct policy_cluster *c, struct pgang *g)
{
    if (!g || g->waiting)
        return;
    if (pids_add(&c->waiting, g->id) != POLICY_OK) {
        c->waiting_lost = true; /* carried: pgang_waiting_refill adds it before a read */
        return;
    }
    g->waiting = true;
}

static bool has_pending(const struct policy_cluster *c, const struct pgang *g)
{
    for (size_t i = 0; i < g->nmembers; i++) {
        const struct ppod *p = ppod_at(c, g->members[i]);

        if (p && p->phase == POLICY_POD_PENDING)
            return true;
    }
    return false;
}

void pgang_waiting_refill(struct policy_cluster *c)
{
    if (!c->waiting_lost)
        return;
    c->waiting_lost = false;
    for (size_t i = 0; i < c->gangs.n; i++) {
        struct pgang *g = c->gangs.items[i];

        if (g && !g->waiting && has_pending(c, g))
            pgang_mark_waiting(c, g);
    }
}

void pgang_unmark_waiting(struct policy_cluster *c, struct pgang *g)
{
    if (!g->waiting)
        return;
    pids_remove(&c->waiting, g->id);
    g->waiting = false;
}

/*
 * After members leave a place: a gang holding no place is no longer planned,
 * and one with nothing bound or binding is no longer admitted, so a resumed or
 * re-created RayCluster is placed whole again, not one pod at a time.
 */
void pgang_settle(struct policy_cluster *c, struct pgang *g)
{
    int32_t bound = 0, holding = 0;

    /* What its real members hold: a stand-in alone keeps no gang planned or running. */
    for (size_t i = 0; i < g->nmembers; i++) {
        const struct ppod *p = ppod_at(c, g->members[i]);

        if (!p || p->held || p->phase == POLICY_POD_EVICTING || p->phase == POLICY_POD_PENDING)
            continue;
        bound += p->phase == POLICY_POD_BOUND;
        holding += p->phase != POLICY_POD_BOUND;
    }
    if (holding == 0 && g->awaiting == 0)
        g->planned = false;
    if (bound == 0 && holding == 0) {
        g->admitted = false;
        g->running_since = 0;
        g->entered = false;
    }
    if (!g->planned && !g->admitted) {
        phold_release(c, g); /* a stand-in's room goes with the gang's */
        pgang_mark_waiting(c, g);
    }
}

struct pwhy *pgang_set_reason(struct pgang *g, const struct preason *r)
{
    struct pwhy *w = r ? pwhy_new(r) : NULL;

    g->reason_kind = r ? preason_class(r->r.kind) : PREASON_NONE;
    pwhy_set(&g->why, w);
    pwhy_drop(w);
    return g->why;
}

int pgang_waits_on(const struct policy_cluster *c, const struct pgang *w, const struct pgang *u)
{
    for (int k = 0; w && k < 16; k++) {
        if (w->waits_for < 0)
            return 0;
        if (w->waits_for == u->id)
            return 1;
        w = pgang_at(c, w->waits_for);
    }
    return w ? -1 : 0;
}

void pgang_waits_for(struct policy_cluster *c, struct pgang *g, const struct preason *r)
{
    pgang_tell_pending(c, g, pgang_set_reason(g, r));
}

void pgang_note_awaiting(struct policy_cluster *c, struct pgang *g)
{
    struct preason r;
    struct pwhy *w;

    preason_init(&r, POLICY_REASON_VICTIMS, g->key);
    r.r.have = g->awaiting;
    w = pgang_set_reason(g, &r);
    for (size_t i = 0; i < g->nmembers; i++) {
        struct ppod *m = ppod_at(c, g->members[i]);

        if (m && m->phase != POLICY_POD_BOUND)
            pwhy_set(&m->why, w);
    }
}

void pplan_release_on(struct policy_cluster *c, struct pgang *g, int32_t node)
{
    for (size_t i = 0; i < g->nmembers; i++) {
        struct ppod *p = ppod_at(c, g->members[i]);

        /* A running gang keeps the room it holds for a member to come. */
        if (p && p->phase == POLICY_POD_PLANNED && !(p->held && g->admitted) &&
            (node < 0 || p->place.node == node)) {
            puncharge(c, p);
            p->phase = POLICY_POD_PENDING;
            p->extra = false;
        }
    }
    if (node < 0)
        g->planned = false;
    /* awaiting stays: it counts victims still leaving for g (their evict_by), which go on
     * leaving whatever becomes of the plan made on their room. */
    pgang_mark_waiting(c, g);
}

void pplan_release(struct policy_cluster *c, struct pgang *g)
{
    pplan_release_on(c, g, -1);
}

void pgang_tell_pending(struct policy_cluster *c, struct pgang *g, struct pwhy *why)
{
    for (size_t i = 0; i < g->nmembers; i++) {
        struct ppod *p = ppod_at(c, g->members[i]);

        if (p && p->phase == POLICY_POD_PENDING)
            pwhy_set(&p->why, why);
    }
}

void ppod_say(struct ppod *p, const struct preason *r)
{
    struct pwhy *w = r ? pwhy_new(r) : NULL;

    pwhy_set(&p->why, w);
    pwhy_drop(w);
}

/*
 * When the gang's minimum was bound: the latest time its bound members say they were bound
 * (a restarted engine sees them bound long ago), or the engine's time if one does not say (a
 * bind the engine saw itself) or says a time the engine has not reached.
 */
static int64_t bound_since(const struct policy_cluster *c, const struct pgang *g)
{
    int64_t latest = INT64_MIN;

    for (size_t i = 0; i < g->nmembers; i++) {
        const struct ppod *p = ppod_at(c, g->members[i]);

        if (!p || p->phase != POLICY_POD_BOUND)
            continue;
        if (p->bound_at == 0)
            return c->clock;
        latest = p->bound_at > latest ? p->bound_at : latest;
    }
    return latest != INT64_MIN && latest <= c->clock ? latest : c->clock;
}

void pgang_note_bound(struct policy_cluster *c, struct pgang *g)
{
    if (!g)
        return;
    if (!g->admitted)
        phold_settle_gang(c, g); /* bound but for room held for a member to come */
    if (pgang_satisfied(c, g, PGANG_BOUND)) {
        if (!g->admitted) {
            g->running_since = bound_since(c, g);
            /* Admitted by muster (it planned it) rather than found running: the entry
             * penalty of fair over time counts from now (usage.c). */
            g->entered = g->planned;
            g->entered_at = c->clock;
            if (g->entered && c->opts.fairness.entry_penalty_ms > 0)
                c->fair_dirty = true;
            /* What its pending members were told while it waited ("worker group gpu needs
             * 3 x 1 GPU, 2 free", "placed once the gang is bound") is no longer so. An extra
             * kube-scheduler's own filters now turn away never asks muster again, so it
             * would keep them. */
            pgang_tell_pending(c, g, NULL);
        }
        g->admitted = true;
        g->planned = false;
        pgang_set_reason(g, NULL);
        /* Its members beyond the minimum still pending wait with the others (the order and
         * the evictions look for them in the waiting set). */
        if (has_pending(c, g))
            pgang_mark_waiting(c, g);
    } else if (!g->admitted && pgang_tally(c, g, PGANG_BOUND, NULL) > 0) {
        c->maybe_partial = true;
    }
}
