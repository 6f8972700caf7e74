/*
 * decode_workload.c - Kubernetes' own gang objects, the Workload API
 * (KEP-4671, scheduling.k8s.io).
 *
 * Field names from k8s.io/api v0.36.3 scheduling/v1alpha2/types.go
 * (Kubernetes 1.36) and v0.37.2 scheduling/v1beta1/types.go (1.37; v1alpha3
 * has the same names):
 *
 *   Workload  spec.controllerRef{apiGroup, kind, name}
 *             spec.podGroupTemplates[]{name, schedulingPolicy{basic | gang{minCount}},
 *                                     priorityClassName, priority}
 *             spec.compositePodGroupTemplates[]{podGroupTemplates[], compositePodGroupTemplates[]}
 *                                     (v1beta1)
 *   PodGroup  spec.schedulingPolicy{basic | gang{minCount}}, spec.priorityClassName, spec.priority,
 *             spec.schedulingConstraints.topology[]{key} (v1beta1, at most one; also on a
 *             template),
 *             v1alpha2: spec.podGroupTemplateRef.workload{workloadName, podGroupTemplateName}
 *             v1beta1:  spec.workloadRef{workloadName, templateName}
 *   Pod       spec.schedulingGroup.podGroupName (core/v1 PodSchedulingGroup)
 *
 * List items of built-in types carry no apiVersion, so both versions' names
 * are read wherever they occur. muster makes one gang of a Workload: its
 * templates' pod groups are placed together (Kubernetes places each PodGroup
 * on its own). A composite template's minGroupCount (k of n) has no
 * counterpart: every leaf template's minimum holds.
 */
#include <stdio.h>
#include <string.h>

#include "base.h"
#include "kube.h"
#include "kube_internal.h"

#define KUBE_MAX_TEMPLATE_DEPTH 4 /* v1beta1 WorkloadMaxTreeDepth */

/* basic -> 0 (no gang), gang -> minCount (>= 1). */
static int kube__scheduling_policy(struct kube__ctx *c, const cJSON *owner, const char *what,
                                   int64_t *min)
{
    const cJSON *p = kube__get(owner, "schedulingPolicy");
    const cJSON *gang = kube__get(p, "gang"), *basic = kube__get(p, "basic");
    bool has_gang = gang != NULL && !cJSON_IsNull(gang);
    bool has_basic = basic != NULL && !cJSON_IsNull(basic);

    if (has_gang == has_basic)
        return kube__fail(c, EXT_EINVAL, p != NULL ? p : owner,
                          "%s.schedulingPolicy: needs exactly one of basic and gang", what);
    *min = 0;
    if (has_basic)
        return EXT_OK;
    if (kube__get(gang, "minCount") == NULL)
        return kube__fail(c, EXT_EINVAL, gang, "%s.schedulingPolicy.gang.minCount missing", what);
    return kube__int64(c, gang, "minCount", "schedulingPolicy.gang.minCount", 1, INT32_MAX, min);
}

/* schedulingConstraints.topology[0].key of a PodGroup or template (v1beta1, TopologyAware-
 * WorkloadScheduling: at most one constraint); NULL when none. */
static int kube__topology_key(struct kube__ctx *c, const cJSON *owner, const char **key)
{
    const cJSON *list = kube__get(kube__get(owner, "schedulingConstraints"), "topology");
    const cJSON *first;
    size_t n;
    int rc;

    *key = NULL;
    rc = kube__list(c, list, "schedulingConstraints.topology", KUBE_MAX_GROUPS, &n);
    if (rc != EXT_OK || n == 0)
        return rc;
    first = cJSON_GetArrayItem(list, 0);
    if (!cJSON_IsObject(first))
        return kube__fail(c, EXT_EINVAL, first,
                          "schedulingConstraints.topology: an item is not a mapping");
    rc = kube__string(c, first, "key", "schedulingConstraints.topology key", 317, key);
    if (rc == EXT_OK && (*key == NULL || **key == '\0'))
        return kube__fail(c, EXT_EINVAL, first, "schedulingConstraints.topology: key missing");
    return rc;
}

/* spec.priority when set (the admission controller's), else the named class. */
static int kube__template_priority(struct kube__ctx *c, const cJSON *t,
                                   const struct kube_decode_opts *o, bool *has, int32_t *value)
{
    const char *class_name = NULL;
    int64_t v;
    int rc;

    *has = false;
    if (kube__get(t, "priority") != NULL && !cJSON_IsNull(kube__get(t, "priority"))) {
        rc = kube__int64(c, t, "priority", "priority", INT32_MIN, INT32_MAX, &v);
        if (rc == EXT_OK) {
            *has = true;
            *value = (int32_t)v;
        }
        return rc;
    }
    rc = kube__string(c, t, "priorityClassName", "priorityClassName", KUBE_MAX_NAME, &class_name);
    if (rc == EXT_OK && class_name != NULL)
        *has = kube__priority_class(o, class_name, value);
    return rc;
}

struct kube__workload {
    struct kube__ctx *c;
    const struct kube_decode_opts *o;
    struct policy_gang_spec *s;
    struct policy_subgroup_spec *sg;
    int64_t first_min; /* the only template's minimum */
};

static void kube__workload_priority(struct kube__workload *w, bool has, int32_t value)
{
    if (has && (!w->s->has_priority || value > w->s->priority)) {
        w->s->has_priority = true;
        w->s->priority = value;
    }
}

static int kube__templates(struct kube__workload *w, const cJSON *owner, const char *what,
                           int depth);

static int kube__template(struct kube__workload *w, const cJSON *t, const char *what)
{
    const char *name = NULL;
    int32_t prio = 0;
    int64_t min;
    bool has;
    int rc;

    if (!cJSON_IsObject(t))
        return kube__fail(w->c, EXT_EINVAL, t, "%s: an item is not a mapping", what);
    rc = kube__string(w->c, t, "name", "podGroupTemplates name", KUBE_MAX_NAME, &name);
    if (rc == EXT_OK)
        rc = kube__scheduling_policy(w->c, t, what, &min);
    if (rc == EXT_OK)
        rc = kube__template_priority(w->c, t, w->o, &has, &prio);
    if (rc == EXT_OK && w->s->topology.required == NULL) {
        rc = kube__topology_key(w->c, t, &w->s->topology.required);
        w->s->topology.dialect = KUBE_DIALECT_WORKLOAD_API;
    }
    if (rc == EXT_OK)
        rc = kube__subgroup_add(w->c, w->s, w->sg, name, min, what, t);
    if (rc != EXT_OK)
        return rc;
    if (w->s->nsubgroups == 1)
        w->first_min = min;
    kube__workload_priority(w, has, prio);
    return EXT_OK;
}

/* A list of (composite) templates, leaves flattened into subgroups. */
static int kube__templates(struct kube__workload *w, const cJSON *owner, const char *what,
                           int depth)
{
    const cJSON *list = kube__get(owner, "podGroupTemplates");
    const cJSON *composites = kube__get(owner, "compositePodGroupTemplates"), *e;
    char where[96];
    size_t n, nc;
    int rc;

    if (depth > KUBE_MAX_TEMPLATE_DEPTH)
        return kube__fail(w->c, EXT_EINVAL, owner, "%s: nested deeper than %d", what,
                          KUBE_MAX_TEMPLATE_DEPTH);
    snprintf(where, sizeof(where), "%s.podGroupTemplates", what);
    rc = kube__list(w->c, list, where, KUBE_MAX_GROUPS, &n);
    if (rc == EXT_OK)
        rc = kube__list(w->c, composites, "compositePodGroupTemplates", KUBE_MAX_GROUPS, &nc);
    if (rc != EXT_OK)
        return rc;
    cJSON_ArrayForEach(e, list)
    {
        if (w->s->nsubgroups == KUBE_MAX_GROUPS)
            return kube__fail(w->c, EXT_EINVAL, e, "%s: over %d pod group templates", what,
                              KUBE_MAX_GROUPS);
        rc = kube__template(w, e, where);
        if (rc != EXT_OK)
            return rc;
    }
    cJSON_ArrayForEach(e, composites)
    {
        bool has;
        int32_t prio = 0;

        if (!cJSON_IsObject(e))
            return kube__fail(w->c, EXT_EINVAL, e,
                              "compositePodGroupTemplates: an item is not a mapping");
        rc = kube__template_priority(w->c, e, w->o, &has, &prio);
        if (rc == EXT_OK)
            rc = kube__templates(w, e, "compositePodGroupTemplates[]", depth + 1);
        if (rc != EXT_OK)
            return rc;
        kube__workload_priority(w, has, prio);
    }
    return EXT_OK;
}

/* The RayCluster that controls it: an owner reference, or spec.controllerRef. */
static const char *kube__workload_raycluster(const cJSON *wl)
{
    const cJSON *ref = kube__get(kube__get(wl, "spec"), "controllerRef");
    const char *kind = kube__map_value(ref, "kind"), *group = kube__map_value(ref, "apiGroup");
    const char *name = kube__map_value(ref, "name");
    const char *owner = kube__owner_raycluster(kube__get(wl, "metadata"));

    if (owner != NULL)
        return owner;
    if (kind != NULL && strcmp(kind, "RayCluster") == 0 && group != NULL &&
        strcmp(group, "ray.io") == 0 && name != NULL && *name != '\0' &&
        strlen(name) <= KUBE_MAX_NAME)
        return name;
    return NULL;
}

int kube_workload_gang(const cJSON *wl, const struct kube_decode_opts *o, struct ext_arena *a,
                       struct policy_gang_spec *out, char *err, size_t errlen, const cJSON **where)
{
    struct kube__ctx c = {a, err, errlen, where};
    struct policy_gang_spec s = {0};
    struct kube__workload w = {&c, NULL, &s, NULL, 0};
    const cJSON *spec = kube__get(wl, "spec");
    const char *ns, *name, *owner;
    int rc;

    w.o = o != NULL ? o : &kube_decode_defaults;
    rc = kube__meta(&c, wl, "Workload", &ns, &name);
    if (rc == EXT_OK && !cJSON_IsObject(spec))
        rc = kube__fail(&c, EXT_EINVAL, spec != NULL ? spec : wl, "Workload: spec missing");
    if (rc == EXT_OK)
        rc = kube__gang_labels(&c, kube__get(wl, "metadata"), w.o, &s);
    if (rc != EXT_OK)
        return rc;
    w.sg = kube__subgroups_new(&c, KUBE_MAX_GROUPS, spec);
    if (w.sg == NULL)
        return EXT_ENOMEM;
    s.subgroups = w.sg;
    rc = kube__templates(&w, spec, "spec", 0);
    if (rc != EXT_OK)
        return rc;
    if (s.nsubgroups == 0)
        return kube__fail(&c, EXT_EINVAL, spec, "Workload: spec.podGroupTemplates: none");
    if (s.nsubgroups == 1) {
        /* One pod group: a count, as Kubernetes' scheduler reads it. */
        s.subgroups = NULL;
        s.nsubgroups = 0;
        s.min_members = (int32_t)w.first_min;
    }
    owner = kube__workload_raycluster(wl);
    s.key = kube__key(a, ns, owner != NULL ? owner : name);
    if (s.key == NULL)
        return kube__fail(&c, EXT_ENOMEM, wl, "out of memory");
    s.source = POLICY_GANG_WORKLOAD_API;
    *out = s;
    return EXT_OK;
}

/* The first leaf template's name, depth first (the only one of a Workload that is a count). */
static const char *kube__first_leaf(const cJSON *owner, int depth)
{
    const cJSON *e;

    if (depth > KUBE_MAX_TEMPLATE_DEPTH)
        return NULL;
    cJSON_ArrayForEach(e, kube__get(owner, "podGroupTemplates"))
    {
        return kube__map_value(e, "name");
    }
    cJSON_ArrayForEach(e, kube__get(owner, "compositePodGroupTemplates"))
    {
        const char *name = kube__first_leaf(e, depth + 1);

        if (name != NULL)
            return name;
    }
    return NULL;
}

const char *kube_workload_single_template(const cJSON *wl)
{
    return kube__first_leaf(kube__get(wl, "spec"), 0);
}

/* ---- PodGroup (Workload API) --------------------------------------------- */

/* Its Workload and template: v1alpha2's podGroupTemplateRef.workload or v1beta1's workloadRef. */
static int kube__pod_group_ref(struct kube__ctx *c, const cJSON *spec, struct kube_pod_group *g)
{
    const cJSON *v1a2 = kube__get(kube__get(spec, "podGroupTemplateRef"), "workload");
    const cJSON *v1b1 = kube__get(spec, "workloadRef");
    const char *what;
    int rc;

    if (v1a2 != NULL && !cJSON_IsNull(v1a2)) {
        what = "spec.podGroupTemplateRef.workload";
        rc = kube__string(c, v1a2, "workloadName", what, KUBE_MAX_NAME, &g->workload);
        if (rc == EXT_OK)
            rc = kube__string(c, v1a2, "podGroupTemplateName", what, KUBE_MAX_NAME, &g->template_);
    } else if (v1b1 != NULL && !cJSON_IsNull(v1b1)) {
        what = "spec.workloadRef";
        rc = kube__string(c, v1b1, "workloadName", what, KUBE_MAX_NAME, &g->workload);
        if (rc == EXT_OK)
            rc = kube__string(c, v1b1, "templateName", what, KUBE_MAX_NAME, &g->template_);
    } else {
        return EXT_OK;
    }
    if (rc != EXT_OK)
        return rc;
    if (g->workload == NULL || *g->workload == '\0' || g->template_ == NULL ||
        *g->template_ == '\0')
        return kube__fail(c, EXT_EINVAL, v1a2 != NULL ? v1a2 : v1b1,
                          "%s: needs the workload's name and its template's", what);
    return EXT_OK;
}

int kube_pod_group_decode(const cJSON *pg, const struct kube_decode_opts *o, struct ext_arena *a,
                          struct kube_pod_group *out, char *err, size_t errlen, const cJSON **where)
{
    struct kube__ctx c = {a, err, errlen, where};
    struct kube_pod_group g = {0};
    struct policy_gang_spec *s = &g.spec;
    const cJSON *spec = kube__get(pg, "spec");
    const char *owner;
    int64_t min = 0;
    bool has = false;
    int32_t prio = 0;
    int rc;

    if (o == NULL)
        o = &kube_decode_defaults;
    rc = kube__meta(&c, pg, "PodGroup", &g.namespace_, &g.name);
    if (rc == EXT_OK && !cJSON_IsObject(spec))
        rc = kube__fail(&c, EXT_EINVAL, spec != NULL ? spec : pg, "PodGroup: spec missing");
    if (rc == EXT_OK)
        rc = kube__pod_group_ref(&c, spec, &g);
    if (rc == EXT_OK)
        rc = kube__scheduling_policy(&c, spec, "spec", &min);
    if (rc == EXT_OK)
        rc = kube__template_priority(&c, spec, o, &has, &prio);
    if (rc == EXT_OK)
        rc = kube__topology_key(&c, spec, &g.topology_key);
    if (rc == EXT_OK)
        rc = kube__gang_labels(&c, kube__get(pg, "metadata"), o, s);
    if (rc != EXT_OK)
        return rc;
    g.min_count = (int32_t)min;
    owner = kube__owner_raycluster(kube__get(pg, "metadata"));
    g.gang = kube__key(a, g.namespace_,
                       owner != NULL        ? owner
                       : g.workload != NULL ? g.workload
                                            : g.name);
    if (g.gang == NULL)
        return kube__fail(&c, EXT_ENOMEM, pg, "out of memory");
    if (g.workload == NULL) {
        s->key = g.gang;
        s->min_members = (int32_t)min;
        s->has_priority = has;
        s->priority = prio;
        s->source = POLICY_GANG_WORKLOAD_API;
        s->topology.required = g.topology_key;
        s->topology.dialect = KUBE_DIALECT_WORKLOAD_API;
    } else {
        memset(s, 0, sizeof(*s));
    }
    *out = g;
    return EXT_OK;
}
