/*
 * bind.c - the gang barrier. A member's bind is held until every minimum
 * member has reached bind (or is bound); then all held members are committed
 * together. The engine only decides; the caller posts the Bindings and
 * reports each outcome with policy_bind_done().
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

void policy_bind_result_cleanup(struct policy_bind_result *r)
{
    if (!r)
        return;
    for (size_t i = 0; i < r->n; i++) {
        free(r->members[i].namespace_);
        free(r->members[i].name);
        free(r->members[i].uid);
        free(r->members[i].node);
        free(r->members[i].gpu_groups);
    }
    free(r->members);
    free(r->reason);
    memset(r, 0, sizeof(*r));
}

static int reject(struct policy_bind_result *out, const char *why)
{
    out->outcome = POLICY_BIND_REJECT;
    out->reason = pstrdup(why);
    return out->reason ? POLICY_OK : POLICY_ENOMEM;
}

/* "gang lab/demo: 2 of 5 members at bind or bound; waiting for demo-head, demo-w-1" */
static void missing_reason(const struct policy_cluster *c, const struct pgang *g,
                           struct preason *why)
{
    int32_t members, bound, ready = 0;
    size_t off = 0, len = sizeof(why->detail);
    char *out = why->detail;
    int listed = 0;

    pgang_counts(c, g, &members, &bound, NULL, NULL);
    for (size_t i = 0; i < g->nmembers; i++) {
        const struct ppod *p = ppod_at(c, g->members[i]);

        ready += p && (p->phase == POLICY_POD_WAITING || p->phase == POLICY_POD_BINDING);
    }
    preason_init(why, POLICY_REASON_AT_BIND, g->key);
    why->r.have = ready + bound;
    why->r.want = pgang_min(c, g);
    if (members < pgang_min(c, g))
        off += (size_t)snprintf(out, len, " (%d of %d exist)", members, pgang_min(c, g));
    /* The members planned for the minimum; without a plan for them, whoever is not at bind. */
    for (int pass = 0; pass < 2 && listed == 0; pass++) {
        for (size_t i = 0; i < g->nmembers && off < len; i++) {
            const struct ppod *p = ppod_at(c, g->members[i]);
            bool minimum = p && p->phase == POLICY_POD_PLANNED && !p->extra;

            /* Room held for a member to come is no member the barrier waits for. */
            if (!p || p->held || (pass == 0 && !minimum) ||
                (p->phase != POLICY_POD_PLANNED && p->phase != POLICY_POD_PENDING))
                continue;
            if (listed == 4) {
                off += (size_t)snprintf(out + off, len - off, ", ...");
                break;
            }
            off += (size_t)snprintf(out + off, len - off, "%s %s", listed++ ? "," : "; waiting for",
                                    p->name);
        }
    }
}

static int fill_assignment(const struct policy_cluster *c, const struct ppod *p,
                           struct policy_assignment *a)
{
    a->namespace_ = pstrdup(p->ns);
    a->name = pstrdup(p->name);
    a->uid = pstrdup(p->uid);
    a->node = pstrdup(pnode_at(c, p->place.node)->name);
    a->gpus = p->gpus;
    a->gpu_share_milli = p->place.share;
    a->gpu_groups = p->place.ngroups ? pstrdup(p->groups_text) : NULL;
    if (!a->namespace_ || !a->name || !a->uid || !a->node || (p->place.ngroups && !a->gpu_groups))
        return POLICY_ENOMEM;
    return POLICY_OK;
}

/* Every held member of the gang (or just p) goes to BINDING, listed in out. */
static int commit(struct policy_cluster *c, struct ppod *p, struct pgang *g,
                  struct policy_bind_result *out)
{
    size_t n = 0;

    out->members = calloc(g->nmembers ? g->nmembers : 1, sizeof(*out->members));
    if (!out->members)
        return POLICY_ENOMEM;
    /* Every assignment is written before any member changes phase, so running
     * out of memory leaves the barrier as it was. */
    for (size_t i = 0; i < g->nmembers; i++) {
        struct ppod *m = ppod_at(c, g->members[i]);

        if (!m || m->phase != POLICY_POD_WAITING)
            continue;
        if (m != p && (g->admitted || g->singleton))
            continue; /* a bound gang commits members one at a time */
        out->n = ++n;
        if (fill_assignment(c, m, &out->members[n - 1]) != POLICY_OK) {
            policy_bind_result_cleanup(out);
            return POLICY_ENOMEM;
        }
    }
    for (size_t i = 0; i < out->n; i++)
        ppod_find(c, out->members[i].namespace_, out->members[i].name)->phase = POLICY_POD_BINDING;
    out->outcome = POLICY_BIND_COMMIT;
    return POLICY_OK;
}

/* Make sure p holds a place on `node`, moving it there if it fits. */
static int hold_on(struct policy_cluster *c, struct ppod *p, struct pgang *g, const char *node,
                   char *why, size_t len)
{
    const struct pnode *planned = pnode_at(c, p->place.node);
    const char *one[1] = {node};
    struct preason r;

    if (planned && strcmp(planned->name, node) == 0)
        return 0;
    if (!planned && !g->singleton && !g->admitted) {
        snprintf(why, len,
                 "gang %s has no place for this pod (its plan expired or was never "
                 "made); kube-scheduler will retry",
                 g->key);
        return -1;
    }
    /* Checked against the queue with the share on that very node. */
    if (pplan_move(c, p, one, 1, &r) == 0)
        return 0;
    preason_text(&r, why, len);
    return -1;
}

int policy_bind(struct policy_cluster *c, const char *ns, const char *name, const char *node,
                int64_t now, struct policy_bind_result *out)
{
    struct ppod *p = ppod_find(c, ns, name);
    struct pgang *g;
    char why[POLICY_REASON_LEN];

    memset(out, 0, sizeof(*out));
    if (!p) {
        snprintf(why, sizeof(why), "pod %s/%s is unknown to muster", ns, name);
        return reject(out, why);
    }
    if (now > c->clock)
        c->clock = now;
    policy_expire(c, now);
    g = ppod_gang(c, p);
    if (p->phase == POLICY_POD_EVICTING)
        return reject(out, "pod is being evicted");
    if (p->phase == POLICY_POD_BOUND) {
        if (p->bound_node && strcmp(p->bound_node, node) == 0) {
            out->outcome = POLICY_BIND_ALREADY;
            return POLICY_OK;
        }
        snprintf(why, sizeof(why), "pod is already bound to node %s", p->bound_node);
        return reject(out, why);
    }
    if (p->phase == POLICY_POD_BINDING)
        return reject(out, "a Binding for this pod is already in flight");
    if (g->awaiting > 0) {
        snprintf(why, sizeof(why),
                 "gang %s waits for %d evicted pod%s to leave; kube-scheduler will retry", g->key,
                 g->awaiting, g->awaiting == 1 ? "" : "s");
        return reject(out, why);
    }
    if (hold_on(c, p, g, node, why, sizeof(why)) != 0)
        return reject(out, why);
    p->phase = POLICY_POD_WAITING;
    pgang_plan_renew(c, g, now);
    if (g->singleton || g->admitted || pgang_satisfied(c, g, PGANG_AT_BIND))
        return commit(c, p, g, out);
    {
        struct preason r;
        struct pwhy *w;

        missing_reason(c, g, &r);
        preason_text(&r, why, sizeof(why));
        /* Every member held at the barrier waits for the same ones: they all say so now. */
        w = pwhy_new(&r);
        for (size_t i = 0; i < g->nmembers; i++) {
            struct ppod *m = ppod_at(c, g->members[i]);

            if (m && m->phase == POLICY_POD_WAITING)
                pwhy_set(&m->why, w);
        }
        pwhy_drop(w);
    }
    out->outcome = POLICY_BIND_WAIT;
    out->reason = pstrdup(why);
    return out->reason ? POLICY_OK : POLICY_ENOMEM;
}

int policy_bind_cancel(struct policy_cluster *c, const char *ns, const char *name, char *why,
                       size_t len)
{
    struct ppod *p = ppod_find(c, ns, name);
    struct pgang *g;

    if (!p)
        return POLICY_ENOENT;
    g = ppod_gang(c, p);
    if (why && len) { /* as it stood when the wait ran out; the pod says so too */
        struct preason r;

        missing_reason(c, g, &r);
        preason_text(&r, why, len);
        ppod_say(p, &r);
    }
    if (p->phase == POLICY_POD_WAITING)
        p->phase = POLICY_POD_PLANNED;
    return POLICY_OK;
}

int policy_bind_done(struct policy_cluster *c, const char *ns, const char *name, bool ok,
                     const char *why)
{
    struct ppod *p = ppod_find(c, ns, name);
    struct pgang *g;

    if (!p)
        return POLICY_ENOENT;
    if (p->phase != POLICY_POD_BINDING)
        return POLICY_OK; /* the watch got there first */
    g = ppod_gang(c, p);
    if (ok) {
        const struct pnode *n = pnode_at(c, p->place.node);

        if (n) /* else its node was deleted meanwhile; bound_node kept its name */
            pset_str(&p->bound_node, n->name);
        pcharge_mark_bound(c, p, true);
        p->phase = POLICY_POD_BOUND;
        pwhy_set(&p->why, NULL);
        pgang_note_bound(c, g);
        return POLICY_OK;
    }
    puncharge(c, p);
    p->phase = POLICY_POD_PENDING;
    p->extra = false;
    {
        struct preason r;

        preason_init(&r, POLICY_REASON_BIND_FAILED, g->key);
        r.r.pod = p->name;
        if (why)
            preason_detail(&r, "%s", why);
        ppod_say(p, &r);
    }
    pgang_note_bound(c, g);
    pgang_settle(c, g);
    return POLICY_OK;
}
