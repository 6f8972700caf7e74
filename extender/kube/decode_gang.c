/*
 * decode_gang.c - gangs as compositions: RayClusters and PodGroups, and the
 * PriorityClasses that give them a priority.
 *
 * A RayCluster's numbers follow KubeRay's utils/util.go so that muster waits
 * for exactly the pods the operator will create: the CRD defaults (replicas
 * 0, minReplicas 0, maxReplicas MaxInt32, numOfHosts 1) apply when a field is
 * absent, minReplicas > maxReplicas yields maxReplicas, and a suspended group
 * counts 0. Its subgroups are "head" (1) and one per worker group, which is
 * how KubeRay labels its pods (ray.io/node-type, ray.io/group).
 *
 * PodGroups come in three shapes that share minMember, queue and
 * priorityClassName: scheduler-plugins' (a count), Volcano's (minTaskMember,
 * task -> minimum, pods named by annotation volcano.sh/task-spec) and KAI's
 * scheduling.run.ai/v2alpha2 (subGroups[]{name, minMember, parent}, pods
 * named by label kai.scheduler/subgroup-name; preemptibility).
 */
#include <stdio.h>
#include <string.h>

#include "base.h"
#include "kube.h"
#include "kube_internal.h"

/* ---- what every gang source shares --------------------------------------- */

const char *kube__owner_raycluster(const cJSON *meta)
{
    const cJSON *e;

    cJSON_ArrayForEach(e, kube__get(meta, "ownerReferences"))
    {
        const char *kind = kube__map_value(e, "kind");
        const char *name = kube__map_value(e, "name");

        if (kind != NULL && strcmp(kind, "RayCluster") == 0 && name != NULL && *name != '\0' &&
            strlen(name) <= KUBE_MAX_NAME)
            return name;
    }
    return NULL;
}

int kube__ray_origin(struct kube__ctx *c, const cJSON *meta, const char *ns,
                     enum policy_owner_kind *kind, const char **owner)
{
    const cJSON *labels = kube__get(meta, "labels");
    const char *k = kube__map_value(labels, EXT_LABEL_RAY_ORIGIN_KIND);
    const char *name = kube__map_value(labels, EXT_LABEL_RAY_ORIGIN_NAME);

    *kind = POLICY_OWNER_NONE;
    *owner = NULL;
    if (k == NULL || name == NULL || *name == '\0')
        return EXT_OK;
    if (strcmp(k, "RayJob") == 0)
        *kind = POLICY_OWNER_RAYJOB;
    else if (strcmp(k, "RayService") == 0)
        *kind = POLICY_OWNER_RAYSERVICE;
    else
        return EXT_OK; /* a kind muster knows nothing of (a RayCronJob's RayJob is a RayJob) */
    if (!kube__object_ref_valid(name))
        return kube__fail(c, EXT_EINVAL, kube__get(labels, EXT_LABEL_RAY_ORIGIN_NAME),
                          "label " EXT_LABEL_RAY_ORIGIN_NAME
                          ": \"%.80s\" is neither a label value nor a DNS-1123 subdomain",
                          name);
    *owner = kube__key(c->a, ns, name);
    return *owner != NULL ? EXT_OK : kube__fail(c, EXT_ENOMEM, meta, "out of memory");
}

bool kube__preemptibility(const char *value, enum policy_preemptible *out)
{
    if (value == NULL || *value == '\0')
        *out = POLICY_PREEMPTIBLE_BY_PRIORITY;
    else if (strcmp(value, "preemptible") == 0)
        *out = POLICY_PREEMPTIBLE_YES;
    else if (strcmp(value, "non-preemptible") == 0)
        *out = POLICY_PREEMPTIBLE_NO;
    else
        return false;
    return true;
}

int kube__gang_labels(struct kube__ctx *c, const cJSON *meta, const struct kube_decode_opts *o,
                      struct policy_gang_spec *s)
{
    const cJSON *labels = kube__get(meta, "labels");
    const char *p = kube__map_value(labels, EXT_LABEL_KAI_PREEMPTIBILITY);
    const struct policy_label *l;
    size_t n;
    int rc;

    rc = kube__labels(c, labels, "metadata.labels", &l, &n);
    if (rc != EXT_OK)
        return rc;
    if (!kube__preemptibility(p, &s->preemptible))
        return kube__fail(c, EXT_EINVAL, kube__get(labels, EXT_LABEL_KAI_PREEMPTIBILITY),
                          "label " EXT_LABEL_KAI_PREEMPTIBILITY
                          ": \"%.64s\" is not preemptible or non-preemptible",
                          p);
    s->queue = kube__queue_label(labels, o);
    return EXT_OK;
}

bool kube__priority_class(const struct kube_decode_opts *o, const char *name, int32_t *value)
{
    const struct kube_lookup *l = o != NULL ? o->lookup : NULL;

    if (l == NULL || l->priority_class == NULL || (name != NULL && *name == '\0'))
        return false;
    return l->priority_class(l->ctx, name, value);
}

void kube__gang_priority(const struct kube_decode_opts *o, const char *class_name,
                         struct policy_gang_spec *s)
{
    int32_t v;

    if (class_name != NULL && kube__priority_class(o, class_name, &v)) {
        s->has_priority = true;
        s->priority = v;
    }
}

struct policy_subgroup_spec *kube__subgroups_new(struct kube__ctx *c, size_t n, const cJSON *where)
{
    struct policy_subgroup_spec *sg = ext_arena_calloc(c->a, n > 0 ? n : 1, sizeof(*sg));

    if (sg == NULL)
        kube__fail(c, EXT_ENOMEM, where, "out of memory");
    return sg;
}

int kube__subgroup_add(struct kube__ctx *c, struct policy_gang_spec *s,
                       struct policy_subgroup_spec *sg, const char *name, int64_t min,
                       const char *what, const cJSON *where)
{
    int64_t total = s->min_members;

    if (name == NULL || *name == '\0')
        return kube__fail(c, EXT_EINVAL, where, "%s: a subgroup needs a name", what);
    if (strlen(name) > KUBE_MAX_NAME)
        return kube__fail(c, EXT_EINVAL, where, "%s: name longer than %d characters", what,
                          KUBE_MAX_NAME);
    for (size_t i = 0; i < s->nsubgroups; i++) {
        if (strcmp(sg[i].name, name) == 0)
            return kube__fail(c, EXT_EINVAL, where, "%s: %.64s named twice", what, name);
    }
    total += min;
    if (total > INT32_MAX)
        return kube__fail(c, EXT_EINVAL, where, "%s: gang minimum overflows", what);
    sg[s->nsubgroups].name = name;
    sg[s->nsubgroups].min_members = (int32_t)min;
    s->nsubgroups++;
    s->min_members = (int32_t)total;
    return EXT_OK;
}

/* ---- RayCluster ---------------------------------------------------------- */

int kube_worker_group_replicas(const cJSON *group, bool autoscaling, int32_t *desired,
                               int32_t *gang_min, char *err, size_t errlen, const cJSON **where)
{
    struct kube__ctx c = {NULL, err, errlen, where};
    int64_t replicas = 0, min = 0, max = INT32_MAX, hosts = 1, d;
    bool suspend = false;
    int rc;

    if (!cJSON_IsObject(group))
        return kube__fail(&c, EXT_EINVAL, group, "workerGroupSpecs: an item is not a mapping");
    rc = kube__int64(&c, group, "replicas", "replicas", 0, INT32_MAX, &replicas);
    if (rc == EXT_OK)
        rc = kube__int64(&c, group, "minReplicas", "minReplicas", 0, INT32_MAX, &min);
    if (rc == EXT_OK)
        rc = kube__int64(&c, group, "maxReplicas", "maxReplicas", 0, INT32_MAX, &max);
    if (rc == EXT_OK)
        rc = kube__int64(&c, group, "numOfHosts", "numOfHosts", 1, INT32_MAX, &hosts);
    if (rc == EXT_OK)
        rc = kube__bool(&c, group, "suspend", "suspend", &suspend);
    if (rc != EXT_OK)
        return rc;
    if (suspend) {
        *desired = 0;
        *gang_min = 0;
        return EXT_OK;
    }
    if (min > max)
        d = max;
    else if (replicas < min)
        d = min;
    else if (replicas > max)
        d = max;
    else
        d = replicas;
    /* The clamp keeps both below 2^31, their product below 2^62. */
    if (d * hosts > INT32_MAX || min * hosts > INT32_MAX)
        return kube__fail(&c, EXT_EINVAL, group,
                          "workerGroupSpecs: replicas x numOfHosts "
                          "overflows");
    *desired = (int32_t)(d * hosts);
    *gang_min = autoscaling ? (int32_t)(min * hosts) : *desired;
    return EXT_OK;
}

/* head (1), then one subgroup per worker group with its part of the minimum. */
static int kube__raycluster_composition(struct kube__ctx *c, const cJSON *spec,
                                        struct policy_gang_spec *s)
{
    const cJSON *groups = kube__get(spec, "workerGroupSpecs"), *g;
    struct policy_subgroup_spec *sg;
    bool autoscaling = false;
    int32_t desired, part;
    size_t n, i = 0;
    char what[64];
    int rc;

    rc = kube__bool(c, spec, "enableInTreeAutoscaling", "spec.enableInTreeAutoscaling",
                    &autoscaling);
    if (rc == EXT_OK)
        rc = kube__list(c, groups, "spec.workerGroupSpecs", KUBE_MAX_GROUPS, &n);
    if (rc != EXT_OK)
        return rc;
    sg = kube__subgroups_new(c, n + 1, spec);
    if (sg == NULL)
        return EXT_ENOMEM;
    s->subgroups = sg;
    rc = kube__subgroup_add(c, s, sg, KUBE_SUBGROUP_HEAD, 1, "spec.headGroupSpec", spec);
    if (rc == EXT_OK)
        kube__template_topology(c, kube__get(spec, "headGroupSpec"), &sg[0]);
    cJSON_ArrayForEach(g, groups)
    {
        const char *name = NULL;

        snprintf(what, sizeof(what), "spec.workerGroupSpecs[%zu]", i++);
        if (rc == EXT_OK)
            rc = kube_worker_group_replicas(g, autoscaling, &desired, &part, c->err, c->errlen,
                                            c->where);
        if (rc == EXT_OK)
            rc = kube__string(c, g, "groupName", "groupName", KUBE_MAX_NAME, &name);
        if (rc == EXT_OK && (name == NULL || *name == '\0'))
            rc = kube__fail(c, EXT_EINVAL, g, "%s.groupName missing", what);
        if (rc == EXT_OK && strcmp(name, KUBE_SUBGROUP_HEAD) == 0)
            rc = kube__fail(c, EXT_EINVAL, kube__get(g, "groupName"),
                            "%s.groupName: \"head\" is the head's subgroup", what);
        if (rc == EXT_OK)
            rc = kube__subgroup_add(c, s, sg, name, part, "spec.workerGroupSpecs", g);
        if (rc == EXT_OK)
            kube__template_topology(c, g, &sg[s->nsubgroups - 1]);
    }
    return rc;
}

int kube_raycluster_gang(const cJSON *rc_obj, const struct kube_decode_opts *o, struct ext_arena *a,
                         struct policy_gang_spec *out, char *err, size_t errlen,
                         const cJSON **where)
{
    struct kube__ctx c = {a, err, errlen, where};
    struct policy_gang_spec s = {0};
    const cJSON *meta = kube__get(rc_obj, "metadata"), *spec = kube__get(rc_obj, "spec");
    const char *ns, *name;
    int rc;

    if (o == NULL)
        o = &kube_decode_defaults;
    rc = kube__meta(&c, rc_obj, "RayCluster", &ns, &name);
    if (rc == EXT_OK && spec != NULL && !cJSON_IsNull(spec) && !cJSON_IsObject(spec))
        rc = kube__fail(&c, EXT_EINVAL, spec, "RayCluster: spec must be a mapping");
    if (rc == EXT_OK)
        rc = kube__raycluster_composition(&c, spec, &s);
    if (rc == EXT_OK)
        rc = kube__gang_labels(&c, meta, o, &s);
    if (rc != EXT_OK)
        return rc;
    kube__raycluster_topology(&c, meta, &s);
    s.key = kube__key(a, ns, name);
    if (s.key == NULL)
        return kube__fail(&c, EXT_ENOMEM, rc_obj, "out of memory");
    kube__gang_priority(o, kube__map_value(kube__get(meta, "labels"), EXT_LABEL_RAY_PRIORITY_CLASS),
                        &s);
    rc = kube__ray_origin(&c, meta, ns, &s.owner_kind, &s.owner);
    if (rc != EXT_OK)
        return rc;
    s.source = POLICY_GANG_WORKLOAD;
    *out = s;
    return EXT_OK;
}

/* ---- PodGroup ------------------------------------------------------------ */

/* Volcano's minTaskMember: task name -> its minimum. */
static int kube__pg_tasks(struct kube__ctx *c, const cJSON *tasks, struct policy_gang_spec *s)
{
    struct policy_subgroup_spec *sg;
    const cJSON *t;
    size_t n = 0;
    int rc;

    if (!cJSON_IsObject(tasks))
        return kube__fail(c, EXT_EINVAL, tasks, "spec.minTaskMember: must be a mapping");
    cJSON_ArrayForEach(t, tasks) n++;
    if (n > KUBE_MAX_GROUPS)
        return kube__fail(c, EXT_EINVAL, tasks, "spec.minTaskMember: %zu tasks, over the cap of %d",
                          n, KUBE_MAX_GROUPS);
    sg = kube__subgroups_new(c, n, tasks);
    if (sg == NULL)
        return EXT_ENOMEM;
    s->subgroups = sg;
    cJSON_ArrayForEach(t, tasks)
    {
        double d = cJSON_IsNumber(t) ? t->valuedouble : -1;

        if (d < 0 || d > INT32_MAX || d != (double)(int64_t)d)
            return kube__fail(c, EXT_EINVAL, t,
                              "spec.minTaskMember.%.64s: must be a whole number >= 0", t->string);
        rc = kube__subgroup_add(c, s, sg, t->string, (int64_t)d, "spec.minTaskMember", t);
        if (rc != EXT_OK)
            return rc;
    }
    return EXT_OK;
}

/* One KAI subgroup as listed: its name, minimum and parent (an index into the list, -1: none). */
struct kube__pg_subgroup {
    const cJSON *item;
    const char *name, *parent_name;
    int64_t min;
    int parent;
    bool is_parent; /* some other's parent: only leaves hold pods */
};

/* Reads every item; each needs a name of its own. */
static int kube__pg_subgroups_read(struct kube__ctx *c, const cJSON *list,
                                   struct kube__pg_subgroup *sg)
{
    const cJSON *e;
    size_t i = 0;
    int rc;

    cJSON_ArrayForEach(e, list)
    {
        struct kube__pg_subgroup *g = &sg[i];

        if (!cJSON_IsObject(e))
            return kube__fail(c, EXT_EINVAL, e, "spec.subGroups: an item is not a mapping");
        *g = (struct kube__pg_subgroup){.item = e, .parent = -1};
        rc = kube__string(c, e, "name", "spec.subGroups name", KUBE_MAX_NAME, &g->name);
        if (rc == EXT_OK)
            rc = kube__int64(c, e, "minMember", "spec.subGroups minMember", 0, INT32_MAX, &g->min);
        if (rc == EXT_OK)
            rc = kube__string(c, e, "parent", "spec.subGroups parent", KUBE_MAX_NAME,
                              &g->parent_name);
        if (rc != EXT_OK)
            return rc;
        if (g->name == NULL || *g->name == '\0')
            return kube__fail(c, EXT_EINVAL, e, "spec.subGroups: a subgroup needs a name");
        for (size_t k = 0; k < i; k++) {
            if (strcmp(sg[k].name, g->name) == 0)
                return kube__fail(c, EXT_EINVAL, e, "spec.subGroups: %.64s named twice", g->name);
        }
        i++;
    }
    return EXT_OK;
}

/* Each parent found by name: one that names no subgroup is refused, as KAI's webhook does. */
static int kube__pg_parents(struct kube__ctx *c, struct kube__pg_subgroup *sg, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        if (sg[i].parent_name == NULL || *sg[i].parent_name == '\0')
            continue;
        for (size_t k = 0; k < n && sg[i].parent < 0; k++) {
            if (strcmp(sg[k].name, sg[i].parent_name) == 0)
                sg[i].parent = (int)k;
        }
        if (sg[i].parent < 0)
            return kube__fail(c, EXT_EINVAL, kube__get(sg[i].item, "parent"),
                              "spec.subGroups[%zu].parent: \"%.64s\" names no subgroup of "
                              "spec.subGroups",
                              i, sg[i].parent_name);
        sg[sg[i].parent].is_parent = true;
    }
    return EXT_OK;
}

/*
 * No subgroup may be its own ancestor: the first one on a loop is refused
 * with the loop spelt out ("a -> c -> b -> a": a's parent is c, ...). KAI's
 * webhook refuses loops too ("cycle detected in subgroups"); muster dropped
 * their members as parents, so the gang lost them silently.
 */
static int kube__pg_no_loop(struct kube__ctx *c, const struct kube__pg_subgroup *sg, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        char path[200];
        size_t len, steps = 0;
        int at = sg[i].parent;

        while (at >= 0 && at != (int)i && steps++ < n)
            at = sg[at].parent;
        if (at != (int)i)
            continue;
        len = (size_t)snprintf(path, sizeof(path), "%.64s", sg[i].name);
        do {
            at = sg[at].parent;
            if (len < sizeof(path))
                len += (size_t)snprintf(path + len, sizeof(path) - len, " -> %.64s", sg[at].name);
        } while (at != (int)i);
        if (len >= sizeof(path))
            memcpy(path + sizeof(path) - 4, "...", 4);
        return kube__fail(c, EXT_EINVAL, kube__get(sg[i].item, "parent"),
                          "spec.subGroups[%zu].parent: \"%.64s\" forms a cycle (%s)", i,
                          sg[i].parent_name, path);
    }
    return EXT_OK;
}

/*
 * KAI's subGroups: the leaves, each with its minMember (absent 0), as KAI's
 * subgroup_info/factory.go reads them; a parent's minSubGroup (k of n) has no
 * counterpart here, so every leaf's minimum holds. KAI's Ray grouper names the
 * head's subgroup "headgroup": for a RayCluster's PodGroup that is "head". The
 * graph must be what KAI's webhook admits (podgroup_webhook.go
 * validateSubGroups): names once each, parents that exist, no loop.
 */
static int kube__pg_subgroups(struct kube__ctx *c, const cJSON *list, bool ray,
                              struct policy_gang_spec *s)
{
    struct kube__pg_subgroup sg[KUBE_MAX_GROUPS];
    struct policy_subgroup_spec *leaves;
    size_t n;
    int rc;

    rc = kube__list(c, list, "spec.subGroups", KUBE_MAX_GROUPS, &n);
    if (rc == EXT_OK)
        rc = kube__pg_subgroups_read(c, list, sg); /* n <= KUBE_MAX_GROUPS items */
    if (rc == EXT_OK)
        rc = kube__pg_parents(c, sg, n);
    if (rc == EXT_OK)
        rc = kube__pg_no_loop(c, sg, n);
    if (rc != EXT_OK)
        return rc;
    leaves = kube__subgroups_new(c, n, list);
    if (leaves == NULL)
        return EXT_ENOMEM;
    s->subgroups = leaves;
    for (size_t i = 0; i < n && rc == EXT_OK; i++) {
        const char *name = sg[i].name;

        if (sg[i].is_parent)
            continue;
        if (ray && strcmp(name, "headgroup") == 0)
            name = KUBE_SUBGROUP_HEAD;
        rc = kube__subgroup_add(c, s, leaves, name, sg[i].min, "spec.subGroups", sg[i].item);
        if (rc == EXT_OK)
            rc = kube__kai_constraint(c, sg[i].item, "spec.subGroups[]",
                                      &leaves[s->nsubgroups - 1].topology);
    }
    return rc;
}

/* The composition and the minimum. minMember 0 is "no gang": nothing else holds. */
static int kube__pg_minimum(struct kube__ctx *c, const cJSON *spec, bool ray,
                            struct policy_gang_spec *s)
{
    const cJSON *tasks = kube__get(spec, "minTaskMember");
    const cJSON *subs = kube__get(spec, "subGroups");
    bool has_tasks = tasks != NULL && !cJSON_IsNull(tasks);
    bool has_subs = subs != NULL && !cJSON_IsNull(subs) && cJSON_GetArraySize(subs) > 0;
    bool has_min = kube__get(spec, "minMember") != NULL;
    int64_t min = 1;
    int rc;

    rc = kube__int64(c, spec, "minMember", "spec.minMember", 0, INT32_MAX, &min);
    if (rc != EXT_OK)
        return rc;
    if (has_tasks && has_subs)
        return kube__fail(c, EXT_EINVAL, subs, "spec: both minTaskMember and subGroups");
    if (has_subs) {
        /* KAI: with subgroups the leaves' minimums are the gang's. */
        return kube__pg_subgroups(c, subs, ray, s);
    }
    if (has_min && min == 0)
        return EXT_OK; /* s->min_members stays 0 */
    if (has_tasks) {
        rc = kube__pg_tasks(c, tasks, s);
        if (rc == EXT_OK && min > s->min_members)
            s->min_members = (int32_t)min;
        return rc;
    }
    s->min_members = (int32_t)min;
    return EXT_OK;
}

/* KAI's spec.topologyConstraint, else Volcano's spec.networkTopology (the other beside it). */
static int kube__pg_topology(struct kube__ctx *c, const cJSON *spec, struct policy_gang_spec *s)
{
    struct policy_topology_constraint kai, volcano;
    int rc = kube__kai_constraint(c, spec, "spec", &kai);

    if (rc == EXT_OK)
        rc = kube__volcano_network_topology(c, spec, &volcano);
    if (rc != EXT_OK)
        return rc;
    if (kai.required || kai.preferred) {
        s->topology = kai;
        if (volcano.required || volcano.required_tier || volcano.preferred_tier || volcano.invalid)
            s->topology_other = volcano;
    } else {
        s->topology = volcano;
    }
    return EXT_OK;
}

int kube_podgroup_gang(const cJSON *pg, const struct kube_decode_opts *o, struct ext_arena *a,
                       struct policy_gang_spec *out, char *err, size_t errlen, const cJSON **where)
{
    struct kube__ctx c = {a, err, errlen, where};
    struct policy_gang_spec s = {0};
    const cJSON *meta = kube__get(pg, "metadata"), *spec = kube__get(pg, "spec");
    const char *ns, *name, *owner, *queue = NULL, *class_name = NULL, *preempt = NULL;
    enum policy_preemptible p;
    int rc;

    if (o == NULL)
        o = &kube_decode_defaults;
    rc = kube__meta(&c, pg, "PodGroup", &ns, &name);
    if (rc == EXT_OK && spec != NULL && !cJSON_IsNull(spec) && !cJSON_IsObject(spec))
        rc = kube__fail(&c, EXT_EINVAL, spec, "PodGroup: spec must be a mapping");
    if (rc == EXT_OK)
        rc = kube__string(&c, spec, "queue", "spec.queue", KUBE_MAX_NAME, &queue);
    if (rc == EXT_OK)
        rc = kube__string(&c, spec, "priorityClassName", "spec.priorityClassName", KUBE_MAX_NAME,
                          &class_name);
    if (rc == EXT_OK)
        rc = kube__string(&c, spec, "preemptibility", "spec.preemptibility", 32, &preempt);
    if (rc == EXT_OK)
        rc = kube__gang_labels(&c, meta, o, &s);
    if (rc != EXT_OK)
        return rc;
    if (!kube__preemptibility(preempt, &p))
        return kube__fail(&c, EXT_EINVAL, kube__get(spec, "preemptibility"),
                          "spec.preemptibility: \"%.32s\" is not preemptible or non-preemptible",
                          preempt);
    if (p != POLICY_PREEMPTIBLE_BY_PRIORITY)
        s.preemptible = p; /* the spec field wins over the label */
    /* KubeRay names a Volcano group ray-<cluster>-pg, KAI's pg-<cluster>-<uid>,
     * but labels the pods with the cluster: key the gang by the cluster so
     * pods and group meet. */
    owner = kube__owner_raycluster(meta);
    rc = kube__pg_minimum(&c, spec, owner != NULL, &s);
    if (rc == EXT_OK)
        rc = kube__pg_topology(&c, spec, &s);
    if (rc != EXT_OK)
        return rc;
    s.key = kube__key(a, ns, owner != NULL ? owner : name);
    if (s.key == NULL)
        return kube__fail(&c, EXT_ENOMEM, pg, "out of memory");
    s.source = POLICY_GANG_PODGROUP;
    if (s.queue == NULL && queue != NULL && *queue != '\0')
        s.queue = queue;
    kube__gang_priority(o, class_name, &s);
    *out = s;
    return EXT_OK;
}

/* ---- PriorityClass ------------------------------------------------------- */

int kube_priority_class_decode(const cJSON *pc, struct kube_priority_class *out, char *err,
                               size_t errlen, const cJSON **where)
{
    struct kube__ctx c = {NULL, err, errlen, where};
    struct kube_priority_class s = {0};
    int64_t value = 0;
    int rc;

    rc = kube__meta(&c, pc, "PriorityClass", NULL, &s.name);
    if (rc == EXT_OK && kube__get(pc, "value") == NULL)
        rc = kube__fail(&c, EXT_EINVAL, pc, "PriorityClass %.253s: value missing", s.name);
    if (rc == EXT_OK)
        rc = kube__int64(&c, pc, "value", "value", INT32_MIN, INT32_MAX, &value);
    if (rc == EXT_OK)
        rc = kube__bool(&c, pc, "globalDefault", "globalDefault", &s.global_default);
    if (rc != EXT_OK)
        return rc;
    s.value = (int32_t)value;
    *out = s;
    return EXT_OK;
}
