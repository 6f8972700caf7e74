/*
 * refs.c - what other objects say, for the decoders' lookups: PriorityClass
 * values, which gang a Workload-API PodGroup's pods join, which gang a RayJob's
 * submitter joins; the gang a Workload declares once its PodGroups' minCounts
 * are counted in; and the RayJobs and RayServices Events name.
 *
 * Sorted tables (binary search, insertion by memmove): lookups happen
 * on every pod decode, changes only on watch events. The two PriorityClasses
 * every cluster has are there from the start.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kube_internal.h"

#define KUBE_REFS_MAX (1u << 20) /* entries per table */

struct kube__ref {
    char *key;
    char *gang;      /* the gang key it declares (Workload, standalone PodGroup) or joins */
    char *workload;  /* a PodGroup's Workload ("ns/name"); NULL: standalone */
    char *template_; /* a PodGroup's template in it */
    bool declares;   /* a gang of this key was upserted for it */
    size_t nsubgroups;
    int32_t value;
    bool global_default;
    /* A Workload: what it declares (its templates' minimums), to count its PodGroups in. */
    struct policy_gang_spec spec; /* key is gang above; strings owned: queue, subgroup names */
    struct policy_subgroup_spec *subs;
    char *single; /* the template of a Workload of one (spec.subgroups NULL) */
    /* A PodGroup made from a template: its schedulingPolicy.gang.minCount (0: basic) and
     * topology key. */
    int32_t min_count;
    char *topology;
    /* A RayJob: its submitter's gang is gang above (NULL: a pod of its own), in queue; the gang
     * it holds room in (hold). A RayJob or RayService: its uid. */
    char *queue, *hold, *uid;
};

struct kube__ref_table {
    struct kube__ref *v;
    size_t n, cap;
};

struct kube_refs {
    struct kube__ref_table t[KUBE_REF_RAYSERVICE + 1];
};

static void kube__ref_clear(struct kube__ref *e)
{
    free(e->key);
    free(e->gang);
    free(e->workload);
    free(e->template_);
    for (size_t i = 0; e->subs != NULL && i < e->spec.nsubgroups; i++)
        free((char *)e->subs[i].name);
    free(e->subs);
    free((char *)e->spec.queue);
    free((char *)e->spec.topology.required);
    free(e->single);
    free(e->topology);
    free(e->queue);
    free(e->hold);
    free(e->uid);
    memset(e, 0, sizeof(*e));
}

static size_t kube__ref_find(const struct kube__ref_table *t, const char *key, bool *found)
{
    size_t lo = 0, hi = t->n;

    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        int c = strcmp(t->v[mid].key, key);

        if (c == 0) {
            *found = true;
            return mid;
        }
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    *found = false;
    return lo;
}

static const struct kube__ref *kube__ref_get(const struct kube__ref_table *t, const char *key)
{
    bool found;
    size_t at = kube__ref_find(t, key, &found);

    return found ? &t->v[at] : NULL;
}

/* Takes e (its strings heap-owned) into the table, replacing the entry of its key. */
static int kube__ref_put(struct kube__ref_table *t, struct kube__ref *e)
{
    bool found;
    size_t at = kube__ref_find(t, e->key, &found);

    if (found) {
        kube__ref_clear(&t->v[at]);
        t->v[at] = *e;
        return EXT_OK;
    }
    if (t->n == KUBE_REFS_MAX)
        return EXT_ETOOBIG;
    if (t->n == t->cap) {
        size_t cap = t->cap ? t->cap * 2 : 32;
        struct kube__ref *v = realloc(t->v, cap * sizeof(*v));

        if (v == NULL)
            return EXT_ENOMEM;
        t->v = v;
        t->cap = cap;
    }
    memmove(&t->v[at + 1], &t->v[at], (t->n - at) * sizeof(*t->v));
    t->v[at] = *e;
    t->n++;
    return EXT_OK;
}

/* A copy of s, or NULL (for NULL s too; *oom says which). */
static char *kube__dup(const char *s, bool *oom)
{
    char *d;

    if (s == NULL)
        return NULL;
    d = strdup(s);
    *oom = *oom || d == NULL;
    return d;
}

static int kube__ref_put_or_free(struct kube__ref_table *t, struct kube__ref *e, bool oom)
{
    int rc = oom ? EXT_ENOMEM : kube__ref_put(t, e);

    if (rc != EXT_OK)
        kube__ref_clear(e);
    return rc;
}

struct kube_refs *kube_refs_new(void)
{
    static const struct kube_priority_class system[] = {
        {"system-cluster-critical", 2000000000, false},
        {"system-node-critical", 2000001000, false},
    };
    struct kube_refs *r = calloc(1, sizeof(*r));

    for (size_t i = 0; r != NULL && i < sizeof(system) / sizeof(system[0]); i++) {
        if (kube_refs_priority_class(r, &system[i]) != EXT_OK) {
            kube_refs_free(r);
            return NULL;
        }
    }
    return r;
}

void kube_refs_free(struct kube_refs *r)
{
    if (r == NULL)
        return;
    for (size_t k = 0; k < sizeof(r->t) / sizeof(r->t[0]); k++) {
        for (size_t i = 0; i < r->t[k].n; i++)
            kube__ref_clear(&r->t[k].v[i]);
        free(r->t[k].v);
    }
    free(r);
}

int kube_refs_priority_class(struct kube_refs *r, const struct kube_priority_class *pc)
{
    struct kube__ref e = {0};
    bool oom = false;

    e.key = kube__dup(pc->name, &oom);
    e.value = pc->value;
    e.global_default = pc->global_default;
    return kube__ref_put_or_free(&r->t[KUBE_REF_PRIORITY_CLASS], &e, oom || e.key == NULL);
}

/* A copy of the Workload's declaration in e (its strings e's own). */
static void kube__ref_spec(struct kube__ref *e, const struct policy_gang_spec *gang,
                           const char *single, bool *oom)
{
    e->spec = *gang;
    e->spec.key = NULL;
    e->spec.queue = kube__dup(gang->queue, oom);
    e->spec.topology.required = kube__dup(gang->topology.required, oom);
    e->spec.subgroups = NULL;
    e->spec.nsubgroups = 0;
    e->single = kube__dup(single, oom);
    if (gang->nsubgroups == 0)
        return;
    e->subs = calloc(gang->nsubgroups, sizeof(*e->subs));
    if (e->subs == NULL) {
        *oom = true;
        return;
    }
    for (size_t i = 0; i < gang->nsubgroups; i++) {
        e->subs[i].name = kube__dup(gang->subgroups[i].name, oom);
        e->subs[i].min_members = gang->subgroups[i].min_members;
    }
    e->spec.nsubgroups = gang->nsubgroups;
}

int kube_refs_workload(struct kube_refs *r, const char *ns, const char *name,
                       const struct policy_gang_spec *gang, const char *single_template)
{
    struct kube__ref e = {0};
    bool oom = false;
    size_t nl = strlen(ns), ml = strlen(name);

    e.key = malloc(nl + ml + 2);
    if (e.key != NULL) {
        memcpy(e.key, ns, nl);
        e.key[nl] = '/';
        memcpy(e.key + nl + 1, name, ml + 1);
    }
    e.gang = kube__dup(gang->key, &oom);
    e.declares = true;
    e.nsubgroups = gang->nsubgroups;
    kube__ref_spec(&e, gang, single_template, &oom);
    return kube__ref_put_or_free(&r->t[KUBE_REF_WORKLOAD], &e, oom || e.key == NULL);
}

int kube_refs_pod_group(struct kube_refs *r, const struct kube_pod_group *pg)
{
    struct kube__ref e = {0};
    bool oom = false;
    size_t nl = strlen(pg->namespace_), ml = strlen(pg->name);

    e.key = malloc(nl + ml + 2);
    if (e.key != NULL) {
        memcpy(e.key, pg->namespace_, nl);
        e.key[nl] = '/';
        memcpy(e.key + nl + 1, pg->name, ml + 1);
    }
    e.gang = kube__dup(pg->gang, &oom);
    if (pg->workload != NULL) {
        size_t wl = strlen(pg->workload);

        e.workload = malloc(nl + wl + 2);
        oom = oom || e.workload == NULL;
        if (e.workload != NULL) {
            memcpy(e.workload, pg->namespace_, nl);
            e.workload[nl] = '/';
            memcpy(e.workload + nl + 1, pg->workload, wl + 1);
        }
    }
    e.template_ = kube__dup(pg->template_, &oom);
    e.declares = pg->spec.key != NULL;
    e.min_count = pg->min_count;
    e.topology = kube__dup(pg->topology_key, &oom);
    return kube__ref_put_or_free(&r->t[KUBE_REF_POD_GROUP], &e, oom || e.key == NULL);
}

/* What entry e declared: a gang (a Workload, a standalone PodGroup), or held room (a RayJob). */
static const char *kube__ref_declared(const struct kube__ref *e)
{
    return e->hold != NULL ? e->hold : e->declares ? e->gang : NULL;
}

static void kube__copy_out(const char *s, char *buf, size_t len)
{
    if (buf != NULL && len > 0)
        buf[0] = '\0';
    if (buf != NULL && s != NULL && strlen(s) < len)
        memcpy(buf, s, strlen(s) + 1);
}

bool kube_refs_forget(struct kube_refs *r, enum kube_ref_kind kind, const char *key, char *gang,
                      size_t len)
{
    struct kube__ref_table *t = &r->t[kind];
    bool found;
    size_t at = kube__ref_find(t, key, &found);

    kube__copy_out(NULL, gang, len);
    if (!found)
        return false;
    kube__copy_out(kube__ref_declared(&t->v[at]), gang, len);
    kube__ref_clear(&t->v[at]);
    memmove(&t->v[at], &t->v[at + 1], (t->n - at - 1) * sizeof(*t->v));
    t->n--;
    return true;
}

/* ---- RayJobs and RayServices ------------------------------------------------- */

int kube_refs_rayjob(struct kube_refs *r, const struct kube_rayjob *rj, char *old_hold,
                     size_t len)
{
    struct kube__ref e = {0};
    const struct kube__ref *was = kube__ref_get(&r->t[KUBE_REF_RAYJOB], rj->key);
    bool oom = false;

    kube__copy_out(was != NULL ? was->hold : NULL, old_hold, len);
    e.key = kube__dup(rj->key, &oom);
    e.gang = kube__dup(rj->submitter_gang, &oom);
    e.queue = kube__dup(rj->queue, &oom);
    e.hold = rj->holds ? kube__dup(rj->hold.gang, &oom) : NULL;
    e.uid = kube__dup(rj->uid, &oom);
    return kube__ref_put_or_free(&r->t[KUBE_REF_RAYJOB], &e, oom || e.key == NULL);
}

int kube_refs_rayservice(struct kube_refs *r, const struct kube_rayservice *rs)
{
    struct kube__ref e = {0};
    bool oom = false;

    e.key = kube__dup(rs->key, &oom);
    e.uid = kube__dup(rs->uid, &oom);
    return kube__ref_put_or_free(&r->t[KUBE_REF_RAYSERVICE], &e, oom || e.key == NULL);
}

bool kube_refs_known(const struct kube_refs *r, enum kube_ref_kind kind, const char *key)
{
    return key != NULL && kube__ref_get(&r->t[kind], key) != NULL;
}

const char *kube_refs_owner_uid(const struct kube_refs *r, enum kube_ref_kind kind,
                                const char *key)
{
    const struct kube__ref *e = kube__ref_get(&r->t[kind], key);

    return e != NULL && e->uid != NULL && *e->uid != '\0' ? e->uid : NULL;
}

/* ---- a Workload's gang with its PodGroups counted in --------------------- */

/* The first topology key of a PodGroup made from Workload wl; NULL: none. */
static const char *kube__made_topology(const struct kube_refs *r, const char *wl)
{
    const struct kube__ref_table *t = &r->t[KUBE_REF_POD_GROUP];

    for (size_t i = 0; i < t->n; i++)
        if (t->v[i].workload != NULL && t->v[i].topology != NULL &&
            strcmp(t->v[i].workload, wl) == 0)
            return t->v[i].topology;
    return NULL;
}

/* The sum of the minCounts of the PodGroups made from template tpl of Workload wl;
 * false when none is known. */
static bool kube__made_from(const struct kube_refs *r, const char *wl, const char *tpl,
                            int64_t *sum)
{
    const struct kube__ref_table *t = &r->t[KUBE_REF_POD_GROUP];
    bool any = false;

    *sum = 0;
    for (size_t i = 0; i < t->n; i++) {
        const struct kube__ref *e = &t->v[i];

        if (e->workload == NULL || e->template_ == NULL || strcmp(e->workload, wl) != 0 ||
            strcmp(e->template_, tpl) != 0)
            continue;
        any = true;
        *sum += e->min_count;
    }
    return any;
}

bool kube_refs_workload_gang(const struct kube_refs *r, const char *key, struct ext_arena *a,
                             struct policy_gang_spec *out)
{
    const struct kube__ref *w = kube__ref_get(&r->t[KUBE_REF_WORKLOAD], key);
    struct policy_subgroup_spec *subs = NULL;
    int64_t sum, total = 0;

    if (w == NULL || w->gang == NULL)
        return false;
    *out = w->spec;
    out->key = w->gang;
    if (kube__made_topology(r, key) != NULL) {
        out->topology.required = kube__made_topology(r, key);
        out->topology.dialect = KUBE_DIALECT_WORKLOAD_API;
    }
    if (w->spec.nsubgroups == 0) {
        if (w->single != NULL && kube__made_from(r, key, w->single, &sum))
            out->min_members = (int32_t)(sum > INT32_MAX ? INT32_MAX : sum);
        return true;
    }
    subs = ext_arena_calloc(a, w->spec.nsubgroups, sizeof(*subs));
    if (subs == NULL)
        return false;
    for (size_t i = 0; i < w->spec.nsubgroups; i++) {
        subs[i] = w->subs[i];
        if (kube__made_from(r, key, w->subs[i].name, &sum))
            subs[i].min_members = (int32_t)(sum > INT32_MAX ? INT32_MAX : sum);
        total += subs[i].min_members;
    }
    out->subgroups = subs;
    out->min_members = (int32_t)(total > INT32_MAX ? INT32_MAX : total);
    return true;
}

bool kube_refs_pod_group_workload(const struct kube_refs *r, const char *key, char *buf,
                                  size_t len)
{
    const struct kube__ref *pg = kube__ref_get(&r->t[KUBE_REF_POD_GROUP], key);

    if (pg == NULL || pg->workload == NULL || strlen(pg->workload) >= len)
        return false;
    memcpy(buf, pg->workload, strlen(pg->workload) + 1);
    return true;
}

/* ---- the lookup ---------------------------------------------------------- */

/* The Workload-API PodGroup ns/name, or NULL. */
static const struct kube__ref *kube__pod_group_ref(const struct kube_refs *r, const char *ns,
                                                   const char *name)
{
    char key[2 * KUBE_MAX_NAME + 2];
    size_t nl = strlen(ns), ml = strlen(name);

    if (nl > KUBE_MAX_NAME || ml > KUBE_MAX_NAME)
        return NULL;
    memcpy(key, ns, nl);
    key[nl] = '/';
    memcpy(key + nl + 1, name, ml + 1);
    return kube__ref_get(&r->t[KUBE_REF_POD_GROUP], key);
}

static bool kube__refs_priority_class(void *ctx, const char *name, int32_t *value)
{
    const struct kube_refs *r = ctx;
    const struct kube__ref_table *t = &r->t[KUBE_REF_PRIORITY_CLASS];
    const struct kube__ref *e;

    if (name != NULL) {
        e = kube__ref_get(t, name);
        if (e != NULL)
            *value = e->value;
        return e != NULL;
    }
    for (size_t i = 0; i < t->n; i++) {
        if (t->v[i].global_default) {
            *value = t->v[i].value;
            return true;
        }
    }
    return false;
}

static bool kube__refs_pod_group(void *ctx, const char *ns, const char *name, const char **gang,
                                 const char **subgroup)
{
    const struct kube_refs *r = ctx;
    const struct kube__ref *pg = kube__pod_group_ref(r, ns, name), *wl = NULL;

    if (pg == NULL)
        return false;
    if (pg->workload != NULL)
        wl = kube__ref_get(&r->t[KUBE_REF_WORKLOAD], pg->workload);
    *gang = wl != NULL ? wl->gang : pg->gang;
    /* A Workload of one template is a count: its pods are in no subgroup. */
    *subgroup = wl != NULL && wl->nsubgroups > 0 ? pg->template_ : NULL;
    return *gang != NULL;
}

bool kube_refs_pod_group_known(const struct kube_refs *r, const char *ns, const char *name)
{
    const struct kube__ref *pg = kube__pod_group_ref(r, ns, name);

    return pg != NULL &&
           (pg->workload == NULL || kube__ref_get(&r->t[KUBE_REF_WORKLOAD], pg->workload) != NULL);
}

static bool kube__refs_rayjob(void *ctx, const char *ns, const char *name, const char **gang,
                              const char **queue)
{
    const struct kube_refs *r = ctx;
    char key[2 * KUBE_MAX_NAME + 2];
    const struct kube__ref *e;

    if (strlen(ns) > KUBE_MAX_NAME || strlen(name) > KUBE_MAX_NAME)
        return false;
    snprintf(key, sizeof(key), "%s/%s", ns, name);
    if ((e = kube__ref_get(&r->t[KUBE_REF_RAYJOB], key)) == NULL)
        return false;
    *gang = e->gang;
    *queue = e->queue;
    return true;
}

struct kube_lookup kube_refs_lookup(struct kube_refs *r)
{
    return (struct kube_lookup){.priority_class = kube__refs_priority_class,
                                .pod_group = kube__refs_pod_group,
                                .rayjob = kube__refs_rayjob,
                                .ctx = r};
}
