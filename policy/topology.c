/*
 * topology.c - where gangs may go: Topologies (node labels, coarsest first), the constraints
 * the gang sources give (docs/topology.md: KAI's, Kueue's, Volcano's and the Workload API's,
 * one model), which of them is in force and where the sources disagree, the shapes of the
 * gangs seen (what a domain is priced for), and the domains a placed member keeps to.
 * Placing a gang in domains is topo_place.c's.
 *
 * A domain of a level is the nodes that share one value of its label and of every coarser
 * level's (KAI's domain ids, Kueue's: a rack r1 in block b1 is not rack r1 in block b2). A
 * node lacking the label of any level of a topology is outside it, and a gang that asks for a
 * level of it is never placed there (as KAI and Kueue do).
 *
 * With Kubernetes' TopologyAwareWorkloadScheduling, kube-scheduler's gang cycle tries every
 * candidate placement, one per domain (pkg/scheduler/schedule_one_podgroup.go), and calls the
 * extender per pod per placement, offering only that placement's nodes; it keeps the best
 * feasible placement and throws the others away unannounced. A planned member asked about a
 * placement that lacks its plan's domain is answered from the plan, without planning again
 * (ptopo_elsewhere): that placement cannot hold the gang as muster placed it. So the only
 * feasible placement is the plan's, the Bindings that follow land where muster planned, and
 * no discarded placement leaves a reservation behind.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "topo.h"

#define HOSTNAME_LABEL "kubernetes.io/hostname"

/* ---- Topologies ------------------------------------------------------------------ */

static void topology_free(struct ptopology *t)
{
    if (!t)
        return;
    for (size_t i = 0; i < t->nlevels; i++) {
        free(t->labels[i]);
        free(t->aliases[i]);
    }
    free(t->labels);
    free(t->aliases);
    free(t->name);
    free(t);
}

static struct ptopology *topology_make(const struct policy_topology_spec *s)
{
    struct ptopology *t = calloc(1, sizeof(*t));

    if (!t)
        return NULL;
    t->name = pstrdup(s->name);
    t->labels = calloc(s->nlevels ? s->nlevels : 1, sizeof(*t->labels));
    t->aliases = calloc(s->nlevels ? s->nlevels : 1, sizeof(*t->aliases));
    if (!t->name || !t->labels || !t->aliases) {
        topology_free(t);
        return NULL;
    }
    for (size_t i = 0; i < s->nlevels; i++) {
        const char *alias = s->levels[i].alias;

        t->nlevels++;
        t->labels[i] = pstrdup(s->levels[i].node_label);
        t->aliases[i] = alias && *alias ? pstrdup(alias) : NULL;
        if (!t->labels[i] || (alias && *alias && !t->aliases[i])) {
            topology_free(t);
            return NULL;
        }
    }
    return t;
}

static bool topology_same(const struct ptopology *t, const struct policy_topology_spec *s)
{
    if (t->nlevels != s->nlevels)
        return false;
    for (size_t i = 0; i < s->nlevels; i++) {
        const char *alias = s->levels[i].alias && *s->levels[i].alias ? s->levels[i].alias : NULL;

        if (strcmp(t->labels[i], s->levels[i].node_label) != 0 ||
            (alias == NULL) != (t->aliases[i] == NULL) ||
            (alias && strcmp(alias, t->aliases[i]) != 0))
            return false;
    }
    return true;
}

int policy_topology_upsert(struct policy_cluster *c, const struct policy_topology_spec *s)
{
    int32_t id;
    struct ptopology *t, *old;

    if (!s || !s->name || !*s->name || s->nlevels == 0 ||
        s->nlevels > POLICY_MAX_TOPOLOGY_LEVELS || !s->levels)
        return POLICY_EINVAL;
    for (size_t i = 0; i < s->nlevels; i++)
        if (!s->levels[i].node_label || !*s->levels[i].node_label)
            return POLICY_EINVAL;
    id = pidx_get(&c->topology_ix, s->name);
    old = id >= 0 ? PTABLE_AT(&c->topologies, struct ptopology, id) : NULL;
    if (old && topology_same(old, s))
        return POLICY_OK;
    if (!(t = topology_make(s)))
        return POLICY_ENOMEM;
    if (old) {
        /* The index borrows the name: it moves to the new copy. */
        pidx_del(&c->topology_ix, old->name);
        c->topologies.items[id] = t;
        topology_free(old);
    } else if ((id = ptable_add(&c->topologies, t)) < 0) {
        topology_free(t);
        return POLICY_ENOMEM;
    }
    if (pidx_put(&c->topology_ix, t->name, id) != POLICY_OK) {
        ptable_remove(&c->topologies, id);
        topology_free(t);
        return POLICY_ENOMEM;
    }
    c->change_epoch++; /* a gang waiting for it, or placed by it, is planned again */
    c->nodes_epoch++;
    ptopo_refresh_all(c);
    return POLICY_OK;
}

int policy_topology_forget(struct policy_cluster *c, const char *name)
{
    int32_t id = pidx_get(&c->topology_ix, name);
    struct ptopology *t;

    if (id < 0)
        return POLICY_ENOENT;
    t = PTABLE_AT(&c->topologies, struct ptopology, id);
    pidx_del(&c->topology_ix, name);
    ptable_remove(&c->topologies, id);
    topology_free(t);
    c->change_epoch++;
    c->nodes_epoch++;
    ptopo_refresh_all(c);
    return POLICY_OK;
}

void policy_each_topology(const struct policy_cluster *c, policy_topology_fn fn, void *ctx)
{
    for (size_t i = 0; i < c->topologies.n; i++) {
        const struct ptopology *t = c->topologies.items[i];
        struct policy_topology_view v;

        if (!t)
            continue;
        v = (struct policy_topology_view){.name = t->name, .nlevels = t->nlevels,
                                          .labels = (const char *const *)t->labels,
                                          .aliases = (const char *const *)t->aliases};
        fn(&v, ctx);
    }
}

void ptopo_topologies_free(struct policy_cluster *c)
{
    for (size_t i = 0; i < c->topologies.n; i++)
        topology_free(c->topologies.items[i]);
    ptable_cleanup(&c->topologies);
    pidx_cleanup(&c->topology_ix);
}

static const struct ptopology *topology_find(const struct policy_cluster *c, const char *name)
{
    int32_t id = pidx_get(&c->topology_ix, name);

    return id >= 0 ? PTABLE_AT(&c->topologies, struct ptopology, id) : NULL;
}

/* ---- wants: a constraint as a source gave it --------------------------------------- */

static const char *text_or_null(const char *s)
{
    return s && *s ? s : NULL;
}

static bool same_text(const char *a, const char *b)
{
    a = text_or_null(a);
    b = text_or_null(b);
    return a == b || (a && b && strcmp(a, b) == 0);
}

bool ptopo_want_set(const struct ptopo_want *w)
{
    return w->required || w->preferred || w->required_tier > 0 || w->preferred_tier > 0 ||
           w->invalid;
}

void ptopo_want_free(struct ptopo_want *w)
{
    free(w->topology);
    free(w->required);
    free(w->preferred);
    free(w->dialect);
    free(w->invalid);
    memset(w, 0, sizeof(*w));
}

int ptopo_want_copy(struct ptopo_want *dst, const struct policy_topology_constraint *s)
{
    struct ptopo_want w = {.required_tier = s->required_tier > 0 ? s->required_tier : 0,
                           .preferred_tier = s->preferred_tier > 0 ? s->preferred_tier : 0};

    w.required = pstrdup(text_or_null(s->required));
    w.preferred = pstrdup(text_or_null(s->preferred));
    w.invalid = pstrdup(text_or_null(s->invalid));
    if (!w.required && !w.preferred && !w.required_tier && !w.preferred_tier && !w.invalid) {
        *dst = w; /* nothing asked: a topology name or dialect alone means nothing */
        return POLICY_OK;
    }
    w.topology = pstrdup(text_or_null(s->topology));
    w.dialect = pstrdup(text_or_null(s->dialect));
    if (!pcopied(text_or_null(s->required), w.required) ||
        !pcopied(text_or_null(s->preferred), w.preferred) ||
        !pcopied(text_or_null(s->invalid), w.invalid) ||
        !pcopied(text_or_null(s->topology), w.topology) ||
        !pcopied(text_or_null(s->dialect), w.dialect)) {
        ptopo_want_free(&w);
        return POLICY_ENOMEM;
    }
    *dst = w;
    return POLICY_OK;
}

bool ptopo_want_same(const struct ptopo_want *w, const struct policy_topology_constraint *s)
{
    bool set = text_or_null(s->required) || text_or_null(s->preferred) || s->required_tier > 0 ||
               s->preferred_tier > 0 || text_or_null(s->invalid);

    if (!set)
        return !ptopo_want_set(w);
    return same_text(w->required, s->required) && same_text(w->preferred, s->preferred) &&
           same_text(w->invalid, s->invalid) &&
           w->required_tier == (s->required_tier > 0 ? s->required_tier : 0) &&
           w->preferred_tier == (s->preferred_tier > 0 ? s->preferred_tier : 0) &&
           same_text(w->topology, s->topology) && same_text(w->dialect, s->dialect);
}

/* ---- resolving a want against its topology ----------------------------------------- */

/* The index of level name (a label or an alias) in t; -1: none. */
static int level_of(const struct ptopology *t, const char *name)
{
    for (size_t i = 0; i < t->nlevels; i++)
        if (strcmp(t->labels[i], name) == 0 || (t->aliases[i] && strcmp(t->aliases[i], name) == 0))
            return (int)i;
    return -1;
}

/* Volcano's tier: 1 is the finest level above the nodes (a hostname level is the nodes). */
static int level_of_tier(const struct ptopology *t, int32_t tier)
{
    int above = (int)t->nlevels;

    if (above > 0 && strcmp(t->labels[above - 1], HOSTNAME_LABEL) == 0)
        above--;
    return tier > above ? -1 : above - tier; /* over the coarsest: the whole cluster */
}

/* The Topology a want without a name means: the first by name whose levels hold its label. */
static const struct ptopology *topology_of_label(const struct policy_cluster *c,
                                                 const char *label)
{
    const struct ptopology *best = NULL;

    for (size_t i = 0; label && i < c->topologies.n; i++) {
        const struct ptopology *t = c->topologies.items[i];

        if (t && level_of(t, label) >= 0 && (!best || strcmp(t->name, best->name) < 0))
            best = t;
    }
    return best;
}

/* Tiers without a named Topology: the one Topology known. */
static const struct ptopology *only_topology(const struct policy_cluster *c, size_t *count)
{
    const struct ptopology *one = NULL;

    *count = 0;
    for (size_t i = 0; i < c->topologies.n; i++)
        if (c->topologies.items[i]) {
            one = c->topologies.items[i];
            (*count)++;
        }
    return *count == 1 ? one : NULL;
}

static void levels_from(struct tlevels *lv, const struct ptopology *t)
{
    lv->topology = t->name;
    lv->n = (int)t->nlevels;
    for (size_t i = 0; i < t->nlevels; i++) {
        lv->label[i] = t->labels[i];
        lv->shown[i] = t->aliases[i] ? t->aliases[i] : t->labels[i];
    }
}

/* A level named by label or alias (or tier), into *out (-1: none named; -2 for a tier over the
 * coarsest level: the whole cluster). False when the name is not a level of t. */
static bool name_level(const struct ptopology *t, const char *name, int32_t tier, int *out)
{
    if (name) {
        *out = level_of(t, name);
        return *out >= 0;
    }
    if (tier > 0) {
        *out = level_of_tier(t, tier);
        if (*out < 0)
            *out = -2;
        return true;
    }
    *out = -1;
    return true;
}

bool ptopo_resolve(const struct policy_cluster *c, const struct ptopo_want *w,
                   struct tlevels *lv, char *why, size_t len)
{
    const struct ptopology *t = NULL;
    bool tiers = w->required_tier > 0 || w->preferred_tier > 0;
    const char *label = w->required ? w->required : w->preferred;
    size_t known = 0;

    memset(lv, 0, sizeof(*lv));
    lv->req = lv->pref = -1;
    lv->dialect = w->dialect;
    if (w->invalid) {
        snprintf(why, len, "%s", w->invalid);
        return false;
    }
    if (w->topology) {
        if (!(t = topology_find(c, w->topology))) {
            snprintf(why, len, "topology %s is not known", w->topology);
            return false;
        }
    } else if (tiers) {
        if (!(t = only_topology(c, &known))) {
            snprintf(why, len,
                     "network tiers are read from a Topology's levels, and %s Topology is known",
                     known ? "more than one" : "no");
            return false;
        }
    } else if (!(t = topology_of_label(c, label))) {
        /* A label alone (the Workload API's key, a Kueue level no Topology lists): a topology
         * of that one level. */
        lv->n = 1;
        lv->label[0] = lv->shown[0] = label;
        if (w->required && w->preferred && strcmp(w->required, w->preferred) != 0) {
            lv->n = 2;
            lv->label[1] = lv->shown[1] = w->preferred;
            lv->pref = 1;
        } else if (!w->required) {
            lv->pref = 0;
        }
        lv->req = w->required ? 0 : -1;
        return true;
    }
    levels_from(lv, t);
    if (!name_level(t, w->required, w->required_tier, &lv->req)) {
        snprintf(why, len, "required level %s is not a level of topology %s", w->required,
                 t->name);
        return false;
    }
    if (!name_level(t, w->preferred, w->preferred_tier, &lv->pref)) {
        snprintf(why, len, "preferred level %s is not a level of topology %s", w->preferred,
                 t->name);
        return false;
    }
    if (lv->req == -2)
        lv->req = -1; /* a tier over the coarsest level: anywhere */
    if (lv->pref == -2 || (lv->req >= 0 && lv->pref >= 0 && lv->pref < lv->req))
        lv->pref = -1;
    return true;
}

/* ---- nodes and domains ------------------------------------------------------------- */

const char *ptopo_value(const struct pnode *n, const char *key)
{
    if (!n || !key)
        return NULL;
    for (size_t i = 0; i < n->nlabels; i++)
        if (strcmp(n->labels[i].key, key) == 0)
            return n->labels[i].value;
    return NULL;
}

bool ptopo_in_topology(const struct pnode *n, const struct tlevels *lv, int l)
{
    for (int i = 0; i <= l && i < lv->n; i++)
        if (!ptopo_value(n, lv->label[i]))
            return false;
    return n != NULL;
}

bool ptopo_same_domain(const struct pnode *a, const struct pnode *b, const struct tlevels *lv,
                       int l)
{
    for (int i = 0; i <= l && i < lv->n; i++) {
        const char *x = ptopo_value(a, lv->label[i]), *y = ptopo_value(b, lv->label[i]);

        if (!x || !y || strcmp(x, y) != 0)
            return false;
    }
    return a && b;
}

void ptopo_domain_name(const struct pnode *n, const struct tlevels *lv, int l, char *buf,
                       size_t len)
{
    const char *v = ptopo_value(n, lv->label[l]);

    snprintf(buf, len, "%s=%s", lv->shown[l], v ? v : "?");
}

const struct pnode *ptopo_member_node(const struct policy_cluster *c, const struct ppod *p)
{
    if (p->phase == POLICY_POD_PENDING || p->phase == POLICY_POD_EVICTING)
        return NULL;
    if (p->place.node >= 0)
        return pnode_at(c, p->place.node);
    return p->bound_node ? pnode_at(c, pidx_get(&c->node_ix, p->bound_node)) : NULL;
}

/* ---- the constraint in force, and disagreement -------------------------------------- */

bool ptopo_constrained(const struct pgang *g)
{
    if (g->topo_source >= 0)
        return true;
    for (size_t s = 0; s < g->nsubs; s++)
        if (ptopo_want_set(&g->subs[s].want))
            return true;
    return false;
}

static const char *const source_name[POLICY_GANG_SOURCES] = {"RayCluster", "PodGroup",
                                                             "Workload"};

/* "KAI's required rack, preferred node of topology net" */
static void want_words(const struct ptopo_want *w, char *buf, size_t len)
{
    size_t off = (size_t)snprintf(buf, len, "%s%s", w->dialect ? w->dialect : "",
                                  w->dialect ? "'s " : "");

    if (w->required && off < len)
        off += (size_t)snprintf(buf + off, len - off, "required %s", w->required);
    else if (w->required_tier && off < len)
        off += (size_t)snprintf(buf + off, len - off, "required tier %d", w->required_tier);
    if ((w->preferred || w->preferred_tier) && off < len)
        off += (size_t)snprintf(buf + off, len - off, "%s", w->required || w->required_tier
                                                                ? ", "
                                                                : "");
    if (w->preferred && off < len)
        off += (size_t)snprintf(buf + off, len - off, "preferred %s", w->preferred);
    else if (w->preferred_tier && off < len)
        off += (size_t)snprintf(buf + off, len - off, "preferred tier %d", w->preferred_tier);
    if (w->invalid && !w->required && !w->preferred && !w->required_tier && !w->preferred_tier &&
        off < len)
        off += (size_t)snprintf(buf + off, len - off, "what muster cannot read (%s)", w->invalid);
    if (!ptopo_want_set(w) && off < len)
        off += (size_t)snprintf(buf + off, len - off, "no topology");
    if (w->topology && off < len)
        snprintf(buf + off, len - off, " of topology %s", w->topology);
}

/* Two wants ask the same place (who asked aside): the same levels of the same topology once
 * resolved, else the same words. */
static bool wants_agree(const struct policy_cluster *c, const struct ptopo_want *a,
                        const struct ptopo_want *b)
{
    char why[POLICY_REASON_LEN];
    struct tlevels x, y;

    if (ptopo_resolve(c, a, &x, why, sizeof(why)) && ptopo_resolve(c, b, &y, why, sizeof(why)))
        return x.n == y.n && same_text(x.topology, y.topology) &&
               (x.req < 0) == (y.req < 0) && (x.req < 0 || strcmp(x.label[x.req], y.label[y.req]) == 0) &&
               (x.pref < 0) == (y.pref < 0) &&
               (x.pref < 0 || strcmp(x.label[x.pref], y.label[y.pref]) == 0);
    return same_text(a->required, b->required) && same_text(a->preferred, b->preferred) &&
           same_text(a->invalid, b->invalid) && a->required_tier == b->required_tier &&
           a->preferred_tier == b->preferred_tier &&
           (!a->topology || !b->topology || strcmp(a->topology, b->topology) == 0);
}

/* "KAI's required rack of topology cluster" against "Volcano's required tier 2": who wins. */
static void disagree(char *buf, size_t len, const char *where, const struct ptopo_want *lost,
                     const char *where_won, const struct ptopo_want *won)
{
    char a[192], b[192];

    want_words(lost, a, sizeof(a));
    want_words(won, b, sizeof(b));
    snprintf(buf, len, "%s asks %s; %s asks %s, which muster follows", where, a, where_won, b);
}

/* "RayCluster ml/x asks KAI's required rack and Volcano's required tier 2; muster follows
 * KAI's" */
static void disagree_within(char *buf, size_t len, const char *where, const struct ptopo_want *won,
                            const struct ptopo_want *lost)
{
    char a[192], b[192];

    want_words(won, a, sizeof(a));
    want_words(lost, b, sizeof(b));
    snprintf(buf, len, "%s asks %s and %s; muster follows %s's", where, a, b,
             won->dialect ? won->dialect : "the first");
}

/* The first disagreement: between two dialects of one object (the whole gang's, then a
 * subgroup's), then between sources. */
static void want_conflict(const struct policy_cluster *c, const struct pgang *g, char *buf,
                          size_t len)
{
    const struct pdecl *in = g->topo_source >= 0 ? pgang_decl(g, g->topo_source) : NULL;
    char who[POLICY_REASON_LEN], who_won[POLICY_REASON_LEN];

    *buf = '\0';
    for (int s = 0; s < POLICY_GANG_SOURCES; s++) {
        const struct pdecl *d = pgang_decl(g, s);

        if (!d->on)
            continue;
        snprintf(who, sizeof(who), "%s %s", source_name[s], g->key);
        if (ptopo_want_set(&d->other) && !wants_agree(c, &d->other, &d->want)) {
            disagree_within(buf, len, who, &d->want, &d->other);
            return;
        }
        for (size_t i = 0; i < d->nsubs; i++) {
            const struct psubgroup *sg = &d->subs[i];

            if (!ptopo_want_set(&sg->other) || wants_agree(c, &sg->other, &sg->want))
                continue;
            snprintf(who, sizeof(who), "%s %s, for %s,", source_name[s], g->key, sg->name);
            disagree_within(buf, len, who, &sg->want, &sg->other);
            return;
        }
    }
    for (int s = 0; s < POLICY_GANG_SOURCES && in; s++) {
        const struct pdecl *d = pgang_decl(g, s);

        if (!d->on || s == g->topo_source || !ptopo_want_set(&d->want) ||
            wants_agree(c, &d->want, &in->want))
            continue;
        snprintf(who, sizeof(who), "%s %s", source_name[s], g->key);
        snprintf(who_won, sizeof(who_won), "%s %s", source_name[g->topo_source], g->key);
        disagree(buf, len, who, &d->want, who_won, &in->want);
        return;
    }
    /* Subgroups: a source that is not the composing one, naming the same subgroup. */
    for (int s = 0; s < POLICY_GANG_SOURCES; s++) {
        const struct pdecl *d = pgang_decl(g, s);

        if (!d->on || s == (int)g->composed_by)
            continue;
        for (size_t i = 0; i < d->nsubs; i++) {
            int32_t k = pgang_sub_of(g, d->subs[i].name);

            if (k < 0 || !ptopo_want_set(&d->subs[i].want) ||
                wants_agree(c, &d->subs[i].want, &g->subs[k].want))
                continue;
            snprintf(who, sizeof(who), "%s %s, for %s,", source_name[s], g->key, g->subs[k].name);
            snprintf(who_won, sizeof(who_won), "%s %s", source_name[g->composed_by], g->key);
            disagree(buf, len, who, &d->subs[i].want, who_won, &g->subs[k].want);
            return;
        }
    }
}

void ptopo_refresh(struct policy_cluster *c, struct pgang *g)
{
    char text[POLICY_REASON_LEN * 2];

    g->topo_source = -1;
    for (int s = 0; s < POLICY_GANG_SOURCES && g->topo_source < 0; s++)
        if (pgang_decl(g, s)->on && ptopo_want_set(&pgang_decl(g, s)->want))
            g->topo_source = s;
    want_conflict(c, g, text, sizeof(text));
    pset_str(&g->topo_conflict, *text ? text : NULL);
}

void ptopo_refresh_all(struct policy_cluster *c)
{
    for (size_t i = 0; i < c->gangs.n; i++) {
        struct pgang *g = c->gangs.items[i];

        if (g && g->decl)
            ptopo_refresh(c, g);
    }
}

/* ---- the gangs seen, as domains are priced for them -------------------------------- */

/* Its minimum's GPU: per member (the heaviest member's ask) and how many such members. */
static bool gang_shape(const struct policy_cluster *c, const struct pgang *g,
                       struct ptopo_shape *out)
{
    int64_t total = 0, per = 0;
    int32_t left = pgang_min(c, g);

    for (size_t i = 0; i < g->nmembers && left > 0; i++) {
        const struct ppod *p = ppod_at(c, g->members[i]);
        int64_t ask;

        if (!p || p->extra)
            continue;
        ask = p->gpus * POLICY_GPU_MILLI + (int64_t)p->share * (p->devices ? p->devices : 1);
        total += ask;
        per = ask > per ? ask : per;
        left--;
    }
    if (per <= 0)
        return false;
    *out = (struct ptopo_shape){.per_milli = per,
                                .n = (int32_t)((total + per - 1) / per),
                                .weight = (double)total};
    return true;
}

void ptopo_observe(struct policy_cluster *c, struct pgang *g)
{
    struct ptopo_shapes *h = c->gang_shapes;
    struct ptopo_shape s;
    int slot = -1;

    if (g->topo_seen || !gang_shape(c, g, &s))
        return;
    if (!h && !(h = c->gang_shapes = calloc(1, sizeof(*h))))
        return;
    g->topo_seen = true;
    if (h->inc == 0)
        h->inc = 1.0;
    /* Newer gangs weigh more: a shape's weight halves over 1,024 gangs seen after it. */
    h->inc *= 1.000677130693066; /* 2^(1/1024) */
    if (h->inc > 1e12) {
        for (int i = 0; i < h->nused; i++)
            h->s[i].weight /= h->inc;
        h->inc = 1.0;
    }
    for (int i = 0; i < h->nused && slot < 0; i++)
        if (h->s[i].per_milli == s.per_milli && h->s[i].n == s.n)
            slot = i;
    if (slot < 0 && h->nused < PTOPO_SHAPES) {
        slot = h->nused++;
        h->s[slot] = (struct ptopo_shape){.per_milli = s.per_milli, .n = s.n};
    }
    if (slot < 0) { /* full: the least weighted gives way */
        slot = 0;
        for (int i = 1; i < h->nused; i++)
            if (h->s[i].weight < h->s[slot].weight)
                slot = i;
        h->s[slot] = (struct ptopo_shape){.per_milli = s.per_milli, .n = s.n};
    }
    h->s[slot].weight += s.weight * h->inc;
}

void ptopo_shapes_free(struct policy_cluster *c)
{
    free(c->gang_shapes);
    c->gang_shapes = NULL;
}

/* ---- the domains a placed member keeps to ------------------------------------------ */

/* One domain a member keeps to: level l of lv, where ref (a fellow's node) is. */
struct keep {
    struct tlevels lv;
    int l;
    const struct pnode *ref;
    bool hard;
};

#define MAX_KEEPS 3 /* the gang's, its subgroup's, its replica's */

/* The placed node of a member of g, other than skip, that fits: -1 sub and NULL replica match
 * any member. */
static const struct pnode *fellow_node(const struct policy_cluster *c, const struct pgang *g,
                                       int32_t sub, const char *replica)
{
    for (size_t i = 0; i < g->nmembers; i++) {
        const struct ppod *q = ppod_at(c, g->members[i]);
        const struct pnode *n;

        if (q && ptopo_in_unit(q, sub, replica) && (n = ptopo_member_node(c, q)))
            return n;
    }
    return NULL;
}

/* The finest level of lv, from its finest named down to its required one (the coarsest
 * without one), whose domain holds every placed member of the unit; -1: none. */
static int shared_level(const struct policy_cluster *c, const struct pgang *g, int32_t sub,
                        const char *replica, const struct tlevels *lv, const struct pnode *ref)
{
    int stop = lv->req >= 0 ? lv->req : 0;

    for (int l = tl_finest(lv); l >= stop; l--) {
        bool all = ptopo_in_topology(ref, lv, l);

        for (size_t i = 0; all && i < g->nmembers; i++) {
            const struct ppod *q = ppod_at(c, g->members[i]);
            const struct pnode *n;

            if (q && ptopo_in_unit(q, sub, replica) && (n = ptopo_member_node(c, q)))
                all = ptopo_same_domain(n, ref, lv, l);
        }
        if (all)
            return l;
    }
    return -1;
}

/* The levels a replica of subgroup s keeps to: the subgroup's, else the gang's (at the finest). */
static bool replica_levels(const struct policy_cluster *c, const struct pgang *g, int32_t s,
                           struct tlevels *out)
{
    char why[POLICY_REASON_LEN];

    if (s >= 0 && (size_t)s < g->nsubs && ptopo_want_set(&g->subs[s].want) &&
        ptopo_resolve(c, &g->subs[s].want, out, why, sizeof(why)))
        return tl_finest(out) >= 0;
    if (g->topo_source >= 0 &&
        ptopo_resolve(c, &pgang_decl(g, g->topo_source)->want, out, why, sizeof(why)))
        return tl_finest(out) >= 0;
    return false;
}

/* Add the domains of a unit (the gang, p's subgroup, p's replica) p keeps to, if any: its
 * required one (hard), and the finer one its placed members share (soft: preferred). */
static void add_keep(const struct policy_cluster *c, const struct pgang *g,
                     const struct ptopo_want *w, int32_t sub, const char *replica,
                     struct keep *k, size_t *nk)
{
    char why[POLICY_REASON_LEN];
    struct keep *e = &k[*nk];
    int l;

    if (replica) {
        if (!replica_levels(c, g, sub, &e->lv))
            return;
        e->lv.req = e->lv.pref = tl_finest(&e->lv); /* a replica keeps to its level, hard */
    } else if (!w || !ptopo_want_set(w) || !ptopo_resolve(c, w, &e->lv, why, sizeof(why))) {
        return;
    }
    if (!(e->ref = fellow_node(c, g, sub, replica)))
        return;
    l = shared_level(c, g, sub, replica, &e->lv, e->ref);
    if (e->lv.req < 0 && l < 0)
        return;
    e->l = e->lv.req >= 0 ? e->lv.req : l;
    e->hard = e->lv.req >= 0;
    (*nk)++;
    if (e->hard && l > e->lv.req) {
        k[*nk] = *e;
        k[*nk].l = l;
        k[*nk].hard = false;
        (*nk)++;
    }
}

static size_t keeps_of(const struct policy_cluster *c, const struct pgang *g, const struct ppod *p,
                       struct keep *k)
{
    size_t nk = 0;

    if (g->topo_source >= 0)
        add_keep(c, g, &pgang_decl(g, g->topo_source)->want, -1, NULL, k, &nk);
    if (p->sub >= 0 && (size_t)p->sub < g->nsubs)
        add_keep(c, g, &g->subs[p->sub].want, p->sub, NULL, k, &nk);
    if (p->replica && p->sub >= 0)
        add_keep(c, g, NULL, p->sub, p->replica, k, &nk);
    return nk;
}

static bool node_keeps(const struct pnode *n, const struct keep *k, size_t nk, bool prefer)
{
    for (size_t i = 0; i < nk; i++)
        if ((k[i].hard || prefer) && !ptopo_same_domain(n, k[i].ref, &k[i].lv, k[i].l))
            return false;
    return n != NULL;
}

size_t ptopo_within(const struct policy_cluster *c, const struct pgang *g, const struct ppod *p,
                    const char *const *cands, size_t n, bool prefer, const char **out)
{
    struct keep k[MAX_KEEPS * 2];
    size_t nk = ptopo_constrained(g) ? keeps_of(c, g, p, k) : 0, m = 0;

    for (size_t i = 0; i < n; i++)
        if (nk == 0 || node_keeps(pnode_at(c, pidx_get(&c->node_ix, cands[i])), k, nk, prefer))
            out[m++] = cands[i];
    return m;
}

bool ptopo_elsewhere(const struct policy_cluster *c, const struct pgang *g, const struct ppod *p,
                     const char *const *cands, size_t n, char *why, size_t len)
{
    struct keep k[MAX_KEEPS * 2], *hard = NULL;
    size_t nk = ptopo_constrained(g) ? keeps_of(c, g, p, k) : 0;
    const struct pnode *offered = NULL;
    char mine[160], there[160];

    for (size_t i = 0; i < nk && !hard; i++)
        if (k[i].hard)
            hard = &k[i];
    if (!hard)
        return false;
    for (size_t i = 0; i < n; i++) {
        const struct pnode *node = pnode_at(c, pidx_get(&c->node_ix, cands[i]));

        if (node_keeps(node, k, nk, false))
            return false;
        if (!offered && node && ptopo_in_topology(node, &hard->lv, hard->l))
            offered = node;
    }
    ptopo_domain_name(hard->ref, &hard->lv, hard->l, mine, sizeof(mine));
    if (offered) {
        ptopo_domain_name(offered, &hard->lv, hard->l, there, sizeof(there));
        snprintf(why, len, "gang %s is planned in %s; the nodes offered are in %s", g->key, mine,
                 there);
    } else {
        snprintf(why, len, "gang %s is planned in %s; no node offered is", g->key, mine);
    }
    return true;
}

/* ---- in words ----------------------------------------------------------------------- */

/* The domain the placed members of a unit share, "rack=r07"; false: none. */
static bool unit_domain(const struct policy_cluster *c, const struct pgang *g, int32_t sub,
                        const struct ptopo_want *w, char *buf, size_t len)
{
    char why[POLICY_REASON_LEN];
    struct tlevels lv;
    const struct pnode *ref;
    int l;

    if (!ptopo_want_set(w) || !ptopo_resolve(c, w, &lv, why, sizeof(why)) ||
        !(ref = fellow_node(c, g, sub, NULL)) || (l = shared_level(c, g, sub, NULL, &lv, ref)) < 0)
        return false;
    ptopo_domain_name(ref, &lv, l, buf, len);
    return true;
}

bool ptopo_domain_text(const struct policy_cluster *c, const struct pgang *g, char *buf,
                       size_t len)
{
    size_t off = 0;
    char one[160];

    if (g->topo_source >= 0)
        return unit_domain(c, g, -1, &pgang_decl(g, g->topo_source)->want, buf, len);
    *buf = '\0';
    for (size_t s = 0; s < g->nsubs && off < len; s++)
        if (unit_domain(c, g, (int32_t)s, &g->subs[s].want, one, sizeof(one)))
            off += (size_t)snprintf(buf + off, len - off, "%s%s %s", off ? ", " : "",
                                    g->subs[s].name, one);
    return off > 0;
}

bool ptopo_want_text(const struct policy_cluster *c, const struct pgang *g, char *buf,
                     size_t len, const char **key)
{
    size_t off = 0;
    char words[192], why[POLICY_REASON_LEN];
    struct tlevels lv;

    *key = NULL;
    *buf = '\0';
    if (g->topo_source >= 0) {
        const struct ptopo_want *w = &pgang_decl(g, g->topo_source)->want;

        want_words(w, words, sizeof(words));
        off += (size_t)snprintf(buf, len, "%s", words);
        if (ptopo_resolve(c, w, &lv, why, sizeof(why)) && lv.req >= 0)
            *key = lv.label[lv.req];
    }
    for (size_t s = 0; s < g->nsubs && off < len; s++) {
        if (!ptopo_want_set(&g->subs[s].want))
            continue;
        want_words(&g->subs[s].want, words, sizeof(words));
        off += (size_t)snprintf(buf + off, len - off, "%s%s: %s", off ? "; " : "",
                                g->subs[s].name, words);
    }
    return off > 0;
}
