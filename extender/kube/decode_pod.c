/* decode_pod.c - a Pod: identity, gang and queue, requests, GPU ask, placement constraints. */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "kube_internal.h"

/* ---- Pod: the small things ----------------------------------------------- */

/*
 * The pod's gang name, before the namespace is put in front; NULL if none.
 * Tried in order: KubeRay's cluster label, scheduler-plugins' label, Volcano's
 * and KAI's annotations, the Workload API's spec.schedulingGroup (then
 * *workload_api is set: the name is a PodGroup's, the lookup may know better).
 */
static const char *kube__gang_name(const cJSON *pod, bool *workload_api)
{
    const cJSON *meta = kube__get(pod, "metadata");
    const cJSON *labels = kube__get(meta, "labels"), *ann = kube__get(meta, "annotations");
    const char *group = kube__map_value(labels, EXT_LABEL_RAY_CLUSTER);

    *workload_api = false;
    if (group == NULL || *group == '\0')
        group = kube__map_value(labels, EXT_LABEL_POD_GROUP);
    if (group == NULL || *group == '\0')
        group = kube__map_value(ann, EXT_ANNOTATION_VOLCANO_GROUP);
    if (group == NULL || *group == '\0')
        group = kube__map_value(ann, EXT_ANNOTATION_KAI_POD_GROUP);
    if (group == NULL || *group == '\0') {
        group =
            kube__map_value(kube__get(kube__get(pod, "spec"), "schedulingGroup"), "podGroupName");
        *workload_api = group != NULL && *group != '\0';
    }
    return group != NULL && *group != '\0' ? group : NULL;
}

const char *kube_pod_gang_key(const cJSON *pod, struct ext_arena *a)
{
    const char *ns = kube__map_value(kube__get(pod, "metadata"), "namespace");
    bool workload_api;
    const char *group = kube__gang_name(pod, &workload_api);

    if (group == NULL || strlen(group) > KUBE_MAX_NAME)
        return NULL; /* kube_pod_decode refuses a name over the cap */
    return kube__key(a, ns != NULL && *ns != '\0' ? ns : "default", group);
}

const char *kube_pod_scheduling_group(const cJSON *pod)
{
    bool workload_api;
    const char *group = kube__gang_name(pod, &workload_api);

    return workload_api ? group : NULL;
}

bool kube_pod_is_terminal(const cJSON *pod)
{
    const char *phase = kube__map_value(kube__get(pod, "status"), "phase");

    return phase != NULL && (strcmp(phase, "Succeeded") == 0 || strcmp(phase, "Failed") == 0);
}

/* Sets the verdict once: the first thing found wrong is the one reported. */
static int kube__invalid(struct kube__ctx *c, struct policy_pod_spec *s, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static int kube__invalid(struct kube__ctx *c, struct policy_pod_spec *s, const char *fmt, ...)
{
    char why[256];
    va_list ap;

    if (s->invalid != NULL)
        return EXT_OK;
    va_start(ap, fmt);
    vsnprintf(why, sizeof(why), fmt, ap);
    va_end(ap);
    s->invalid = ext_arena_strdup(c->a, why);
    return s->invalid != NULL ? EXT_OK : kube__fail(c, EXT_ENOMEM, NULL, "out of memory");
}

/* ---- Pod: requests as Kubernetes computes them --------------------------- */

enum kube__req { KUBE_REQ_CPU, KUBE_REQ_MEMORY, KUBE_REQ_GPU, KUBE_REQ_COUNT };

struct kube__reqs {
    int64_t v[KUBE_REQ_COUNT]; /* millicores, bytes, milli-devices */
};

static const struct {
    const char *name;
    int64_t scale;
} kube__req_resources[KUBE_REQ_COUNT] = {
    {"cpu", 1000},
    {"memory", 1},
    {EXT_RESOURCE_GPU, POLICY_GPU_MILLI},
};

static int kube__reqs_add(struct kube__ctx *c, struct kube__reqs *sum, const struct kube__reqs *r,
                          const cJSON *where)
{
    for (int i = 0; i < KUBE_REQ_COUNT; i++) {
        if (__builtin_add_overflow(sum->v[i], r->v[i], &sum->v[i]))
            return kube__fail(c, EXT_EINVAL, where, "%s requests overflow",
                              kube__req_resources[i].name);
    }
    return EXT_OK;
}

static void kube__reqs_max(struct kube__reqs *m, const struct kube__reqs *r)
{
    for (int i = 0; i < KUBE_REQ_COUNT; i++) {
        if (r->v[i] > m->v[i])
            m->v[i] = r->v[i];
    }
}

/*
 * One resource list as the API server leaves it after defaulting: a
 * resource with a limit and no request requests its limit. With limits NULL
 * it reads a plain list (overhead, pod-level requests).
 */
static int kube__resource_list(struct kube__ctx *c, const cJSON *requests, const cJSON *limits,
                               const char *what, struct policy_pod_spec *s, struct kube__reqs *out)
{
    char name[128];
    int64_t v;
    int rc;

    memset(out, 0, sizeof(*out));
    for (int i = 0; i < KUBE_REQ_COUNT; i++) {
        const cJSON *q = kube__get(requests, kube__req_resources[i].name);

        if (q == NULL)
            q = kube__get(limits, kube__req_resources[i].name);
        if (q == NULL)
            continue;
        snprintf(name, sizeof(name), "%s.%s", what, kube__req_resources[i].name);
        rc = kube__quantity(c, q, kube__req_resources[i].scale, name, &v);
        if (rc != EXT_OK)
            return rc;
        if (v < 0)
            return kube__invalid(c, s, "%s is negative", name);
        if (i == KUBE_REQ_GPU && v % POLICY_GPU_MILLI != 0)
            return kube__invalid(c, s, "%s must be a whole number of devices", name);
        out->v[i] = v;
    }
    return EXT_OK;
}

static int kube__container_reqs(struct kube__ctx *c, const cJSON *ctr, const char *list,
                                struct policy_pod_spec *s, struct kube__reqs *out)
{
    const cJSON *res = kube__get(ctr, "resources");
    const char *name = kube__map_value(ctr, "name");
    char what[160];

    if (!cJSON_IsObject(ctr))
        return kube__fail(c, EXT_EINVAL, ctr, "%s: an item is not a mapping", list);
    snprintf(what, sizeof(what), "%s[%.64s].resources.requests", list, name ? name : "?");
    return kube__resource_list(c, kube__get(res, "requests"), kube__get(res, "limits"), what, s,
                               out);
}

static bool kube__is_sidecar(const cJSON *ctr)
{
    const char *policy = kube__map_value(ctr, "restartPolicy");

    return policy != NULL && strcmp(policy, "Always") == 0;
}

/*
 * PodRequests (k8s.io/component-helpers/resource): containers add up; an
 * init container needs its own requests plus the sidecars started before it;
 * a sidecar (init container with restartPolicy Always) keeps running, so it
 * adds to the total too; the pod needs the larger of the two, then overhead.
 * Pod-level spec.resources.requests, when set, replace the cpu/memory sums.
 */
static int kube__pod_requests(struct kube__ctx *c, const cJSON *spec, struct policy_pod_spec *s)
{
    const cJSON *ctrs = kube__get(spec, "containers"), *inits = kube__get(spec, "initContainers");
    struct kube__reqs sum = {{0}}, sidecars = {{0}}, init_max = {{0}}, r, pod_level;
    const cJSON *e;
    size_t n;
    int rc;

    rc = kube__list(c, ctrs, "spec.containers", KUBE_MAX_CONTAINERS, &n);
    if (rc == EXT_OK)
        rc = kube__list(c, inits, "spec.initContainers", KUBE_MAX_CONTAINERS, &n);
    if (rc != EXT_OK)
        return rc;
    cJSON_ArrayForEach(e, ctrs)
    {
        rc = kube__container_reqs(c, e, "containers", s, &r);
        if (rc == EXT_OK)
            rc = kube__reqs_add(c, &sum, &r, e);
        if (rc != EXT_OK)
            return rc;
    }
    cJSON_ArrayForEach(e, inits)
    {
        rc = kube__container_reqs(c, e, "initContainers", s, &r);
        if (rc != EXT_OK)
            return rc;
        if (kube__is_sidecar(e)) {
            rc = kube__reqs_add(c, &sum, &r, e);
            if (rc == EXT_OK)
                rc = kube__reqs_add(c, &sidecars, &r, e);
            r = sidecars;
        } else {
            rc = kube__reqs_add(c, &r, &sidecars, e);
        }
        if (rc != EXT_OK)
            return rc;
        kube__reqs_max(&init_max, &r);
    }
    kube__reqs_max(&sum, &init_max);

    e = kube__get(kube__get(spec, "resources"), "requests");
    rc = kube__resource_list(c, e, NULL, "spec.resources.requests", s, &pod_level);
    if (rc != EXT_OK)
        return rc;
    if (kube__get(e, "cpu") != NULL)
        sum.v[KUBE_REQ_CPU] = pod_level.v[KUBE_REQ_CPU];
    if (kube__get(e, "memory") != NULL)
        sum.v[KUBE_REQ_MEMORY] = pod_level.v[KUBE_REQ_MEMORY];

    e = kube__get(spec, "overhead");
    rc = kube__resource_list(c, e, NULL, "spec.overhead", s, &r);
    if (rc == EXT_OK)
        rc = kube__reqs_add(c, &sum, &r, e);
    if (rc != EXT_OK)
        return rc;
    s->cpu_milli = sum.v[KUBE_REQ_CPU];
    s->memory_bytes = sum.v[KUBE_REQ_MEMORY];
    s->gpus = sum.v[KUBE_REQ_GPU] / POLICY_GPU_MILLI;
    return EXT_OK;
}

/* ---- Pod: the GPU share annotations (KAI's) ------------------------------ */

/* A non-negative decimal integer, or false. */
static bool kube__parse_count(const char *s, int64_t max, int64_t *out)
{
    int64_t v = 0;

    if (s == NULL || *s == '\0')
        return false;
    for (; *s != '\0'; s++) {
        if (*s < '0' || *s > '9' || v > (max - (*s - '0')) / 10)
            return false;
        v = v * 10 + (*s - '0');
    }
    *out = v;
    return true;
}

static int kube__pod_share(struct kube__ctx *c, const cJSON *ann, struct policy_pod_spec *s)
{
    const char *frac = kube__map_value(ann, EXT_ANNOTATION_GPU_FRACTION);
    const char *mem = kube__map_value(ann, EXT_ANNOTATION_GPU_MEMORY);
    const char *devs = kube__map_value(ann, EXT_ANNOTATION_GPU_DEVICES);
    int64_t v;

    if (frac != NULL) {
        if (kube_fraction_parse(frac, &s->gpu_share_milli) != EXT_OK)
            return kube__invalid(c, s, "gpu-fraction \"%.32s\" is not a number", frac);
        if (s->gpu_share_milli <= 0 || s->gpu_share_milli >= POLICY_GPU_MILLI)
            return kube__invalid(c, s, "gpu-fraction %.32s: share outside (0, 1)", frac);
    }
    if (mem != NULL) {
        if (!kube__parse_count(mem, INT32_MAX, &v) || v == 0)
            return kube__invalid(c, s, "gpu-memory \"%.32s\" is not a positive number of MiB", mem);
        s->gpu_memory_mib = v;
    }
    if (frac != NULL && mem != NULL)
        return kube__invalid(c, s, "both gpu-fraction and gpu-memory");
    if (devs != NULL) {
        if (!kube__parse_count(devs, INT32_MAX, &v) || v == 0)
            return kube__invalid(c, s,
                                 "gpu-fraction-num-devices \"%.32s\" is not a positive "
                                 "number",
                                 devs);
        s->gpu_devices = (int32_t)v;
    }
    return EXT_OK;
}

/* ---- Pod: where it may go ------------------------------------------------ */

struct kube__op {
    const char *name;
    enum policy_selector_op op;
};

static const struct kube__op kube__selector_ops[] = {
    {"In", POLICY_SELECT_IN},
    {"NotIn", POLICY_SELECT_NOT_IN},
    {"Exists", POLICY_SELECT_EXISTS},
    {"DoesNotExist", POLICY_SELECT_DOES_NOT_EXIST},
};

static int kube__strings(struct kube__ctx *c, const cJSON *list, const char *what,
                         const char *const **out, size_t *n)
{
    const char **v;
    const cJSON *e;
    size_t i = 0;
    int rc;

    *out = NULL;
    rc = kube__list(c, list, what, KUBE_MAX_LIST, n);
    if (rc != EXT_OK || *n == 0)
        return rc;
    v = ext_arena_alloc(c->a, *n * sizeof(*v));
    if (v == NULL)
        return kube__fail(c, EXT_ENOMEM, list, "out of memory");
    cJSON_ArrayForEach(e, list)
    {
        if (!cJSON_IsString(e) || strlen(e->valuestring) > KUBE_MAX_VALUE)
            return kube__fail(c, EXT_EINVAL, e, "%s: an item is not a string", what);
        v[i++] = e->valuestring;
    }
    *out = v;
    return EXT_OK;
}

/* One matchExpression; an operator muster does not evaluate makes the pod invalid. */
static int kube__selector_req(struct kube__ctx *c, const cJSON *e, struct policy_selector_req *r,
                              struct policy_pod_spec *s, bool *supported)
{
    const char *op = NULL;
    size_t i;
    int rc;

    *supported = false;
    rc = kube__string(c, e, "key", "matchExpressions key", KUBE_MAX_VALUE, &r->key);
    if (rc == EXT_OK)
        rc = kube__string(c, e, "operator", "matchExpressions operator", 32, &op);
    if (rc == EXT_OK)
        rc = kube__strings(c, kube__get(e, "values"), "matchExpressions values", &r->values,
                           &r->nvalues);
    if (rc != EXT_OK)
        return rc;
    if (r->key == NULL || op == NULL)
        return kube__fail(c, EXT_EINVAL, e, "matchExpressions: an item needs key and operator");
    for (i = 0; i < sizeof(kube__selector_ops) / sizeof(kube__selector_ops[0]); i++) {
        if (strcmp(op, kube__selector_ops[i].name) == 0) {
            r->op = kube__selector_ops[i].op;
            *supported = true;
            return EXT_OK;
        }
    }
    return kube__invalid(c, s, "node affinity: unsupported operator %s", op);
}

static int kube__selector_term(struct kube__ctx *c, const cJSON *term,
                               struct policy_selector_term *t, struct policy_pod_spec *s)
{
    const cJSON *exprs = kube__get(term, "matchExpressions"), *e;
    struct policy_selector_req *reqs;
    size_t n, fields, i = 0;
    bool supported;
    int rc;

    rc = kube__list(c, exprs, "matchExpressions", KUBE_MAX_LIST, &n);
    if (rc == EXT_OK)
        rc = kube__list(c, kube__get(term, "matchFields"), "matchFields", KUBE_MAX_LIST, &fields);
    if (rc != EXT_OK)
        return rc;
    if (fields > 0)
        return kube__invalid(c, s, "node affinity: matchFields unsupported");
    t->nreqs = 0;
    if (n == 0)
        return EXT_OK; /* an empty term matches no node: the caller drops it */
    reqs = ext_arena_alloc(c->a, n * sizeof(*reqs));
    if (reqs == NULL)
        return kube__fail(c, EXT_ENOMEM, term, "out of memory");
    cJSON_ArrayForEach(e, exprs)
    {
        rc = kube__selector_req(c, e, &reqs[i], s, &supported);
        if (rc != EXT_OK || !supported)
            return rc;
        i++;
    }
    t->reqs = reqs;
    t->nreqs = n;
    return EXT_OK;
}

static int kube__pod_affinity(struct kube__ctx *c, const cJSON *spec, struct policy_pod_spec *s)
{
    const cJSON *req = kube__get(kube__get(kube__get(spec, "affinity"), "nodeAffinity"),
                                 "requiredDuringSchedulingIgnoredDuringExecution");
    const cJSON *terms = kube__get(req, "nodeSelectorTerms"), *e;
    struct policy_selector_term *t;
    size_t n, kept = 0;
    int rc;

    rc = kube__list(c, terms, "nodeSelectorTerms", KUBE_MAX_LIST, &n);
    if (rc != EXT_OK || n == 0)
        return rc;
    t = ext_arena_alloc(c->a, n * sizeof(*t));
    if (t == NULL)
        return kube__fail(c, EXT_ENOMEM, terms, "out of memory");
    cJSON_ArrayForEach(e, terms)
    {
        rc = kube__selector_term(c, e, &t[kept], s);
        if (rc != EXT_OK || s->invalid != NULL)
            return rc;
        if (t[kept].nreqs > 0)
            kept++;
    }
    if (kept == 0)
        return kube__invalid(c, s, "node affinity: no nodeSelectorTerm can match a node");
    s->affinity = t;
    s->naffinity = kept;
    return EXT_OK;
}

static int kube__toleration(struct kube__ctx *c, const cJSON *e, struct policy_toleration *t,
                            struct policy_pod_spec *s)
{
    const char *op = NULL, *effect = NULL;
    int rc;

    rc = kube__string(c, e, "key", "toleration key", KUBE_MAX_VALUE, &t->key);
    if (rc == EXT_OK)
        rc = kube__string(c, e, "operator", "toleration operator", 32, &op);
    if (rc == EXT_OK)
        rc = kube__string(c, e, "value", "toleration value", KUBE_MAX_VALUE, &t->value);
    if (rc == EXT_OK)
        rc = kube__string(c, e, "effect", "toleration effect", 32, &effect);
    if (rc != EXT_OK)
        return rc;
    if (op == NULL || *op == '\0' || strcmp(op, "Equal") == 0)
        t->op = POLICY_TOLERATE_EQUAL;
    else if (strcmp(op, "Exists") == 0)
        t->op = POLICY_TOLERATE_EXISTS;
    else
        return kube__invalid(c, s, "toleration: unsupported operator %s", op);
    t->effect = effect == NULL || *effect == '\0' ? -1 : kube__effect_lookup(effect);
    if (t->effect < 0 && effect != NULL && *effect != '\0')
        return kube__fail(c, EXT_EINVAL, e, "toleration: effect \"%.32s\" unknown", effect);
    return EXT_OK;
}

static int kube__pod_tolerations(struct kube__ctx *c, const cJSON *spec, struct policy_pod_spec *s)
{
    const cJSON *list = kube__get(spec, "tolerations"), *e;
    struct policy_toleration *t;
    size_t n, i = 0;
    int rc;

    rc = kube__list(c, list, "spec.tolerations", KUBE_MAX_LIST, &n);
    if (rc != EXT_OK || n == 0)
        return rc;
    t = ext_arena_alloc(c->a, n * sizeof(*t));
    if (t == NULL)
        return kube__fail(c, EXT_ENOMEM, list, "out of memory");
    cJSON_ArrayForEach(e, list)
    {
        if (!cJSON_IsObject(e))
            return kube__fail(c, EXT_EINVAL, e, "spec.tolerations: an item is not a mapping");
        rc = kube__toleration(c, e, &t[i++], s);
        if (rc != EXT_OK)
            return rc;
    }
    s->tolerations = t;
    s->ntolerations = n;
    return EXT_OK;
}

/* ---- Pod ----------------------------------------------------------------- */

static bool kube__managed(const char *scheduler, const struct kube_decode_opts *o)
{
    size_t i;

    if (scheduler == NULL)
        scheduler = "default-scheduler";
    for (i = 0; i < o->nscheduler_names; i++) {
        if (strcmp(scheduler, o->scheduler_names[i]) == 0)
            return true;
    }
    return false;
}

/*
 * Which part of its gang a pod is: KubeRay's head or worker group, a KAI
 * subgroup (label), a Volcano task (annotation); for a Workload-API pod the
 * lookup's answer (its pod group template, when its Workload has several).
 */
static const char *kube__pod_subgroup(const cJSON *labels, const cJSON *ann)
{
    const char *type = kube__map_value(labels, EXT_LABEL_RAY_NODE_TYPE);
    const char *v = NULL;

    if (type != NULL && strcmp(type, "head") == 0)
        return KUBE_SUBGROUP_HEAD;
    if (type != NULL)
        v = kube__map_value(labels, EXT_LABEL_RAY_GROUP);
    if (v == NULL || *v == '\0')
        v = kube__map_value(labels, EXT_LABEL_KAI_SUBGROUP);
    if (v == NULL || *v == '\0')
        v = kube__map_value(ann, EXT_ANNOTATION_VOLCANO_TASK);
    return v != NULL && *v != '\0' ? v : NULL;
}

/*
 * A RayJob's submitter pod, its RayJob known: the gang the RayJob says it joins (its cluster's;
 * none on a cluster it did not make), subgroup "submitter", the RayJob's queue. False when the
 * pod is none, or its RayJob is not known (yet).
 */
static bool kube__pod_submitter(struct kube__ctx *c, const cJSON *pod,
                                const struct kube_decode_opts *o, struct policy_pod_spec *s,
                                int *rc)
{
    const struct kube_lookup *l = o->lookup;
    const char *gang = NULL, *queue = NULL, *slash;
    char key[2 * KUBE_MAX_NAME + 2];

    *rc = EXT_OK;
    if (l == NULL || l->rayjob == NULL || !kube_pod_rayjob(pod, key, sizeof(key)))
        return false;
    slash = strchr(key, '/');
    key[slash - key] = '\0';
    if (!l->rayjob(l->ctx, key, slash + 1, &gang, &queue))
        return false;
    s->gang = gang != NULL ? ext_arena_strdup(c->a, gang) : NULL;
    s->queue = queue != NULL ? ext_arena_strdup(c->a, queue) : NULL;
    s->subgroup = KUBE_SUBGROUP_SUBMITTER;
    if ((gang != NULL && s->gang == NULL) || (queue != NULL && s->queue == NULL))
        *rc = kube__fail(c, EXT_ENOMEM, pod, "out of memory");
    return true;
}

/* Its gang key and subgroup. */
static int kube__pod_gang(struct kube__ctx *c, const cJSON *pod, const struct kube_decode_opts *o,
                          struct policy_pod_spec *s)
{
    const cJSON *meta = kube__get(pod, "metadata");
    const struct kube_lookup *l = o->lookup;
    const char *name, *gang = NULL, *sub = NULL;
    bool workload_api;
    int rc;

    if (kube__pod_submitter(c, pod, o, s, &rc))
        return rc;
    name = kube__gang_name(pod, &workload_api);
    s->gang = kube_pod_gang_key(pod, c->a);
    if (s->gang == NULL && name != NULL)
        return kube__fail(c, EXT_EINVAL, meta, "pod: gang name longer than %d characters",
                          KUBE_MAX_NAME);
    if (s->gang == NULL)
        return EXT_OK;
    if (!kube__object_ref_valid(name))
        return kube__fail(c, EXT_EINVAL, meta,
                          "pod: gang name \"%.80s\" is neither a label value nor a DNS-1123 "
                          "subdomain",
                          name);
    s->subgroup = kube__pod_subgroup(kube__get(meta, "labels"), kube__get(meta, "annotations"));
    s->replica = kube__map_value(kube__get(meta, "labels"), EXT_LABEL_RAY_REPLICA);
    if (s->replica != NULL && *s->replica == '\0')
        s->replica = NULL;
    /* Labels are checked by the API server; volcano.sh/task-spec, an annotation, is not. */
    if (s->subgroup != NULL && !kube__object_ref_valid(s->subgroup))
        return kube__fail(c, EXT_EINVAL, meta,
                          "pod: subgroup \"%.80s\" is neither a label value nor a DNS-1123 "
                          "subdomain",
                          s->subgroup);
    if (!workload_api || l == NULL || l->pod_group == NULL ||
        !l->pod_group(l->ctx, s->namespace_, name, &gang, &sub) || gang == NULL)
        return EXT_OK;
    s->gang = ext_arena_strdup(c->a, gang);
    if (s->subgroup == NULL && sub != NULL)
        s->subgroup = ext_arena_strdup(c->a, sub);
    if (s->gang == NULL || (sub != NULL && s->subgroup == NULL))
        return kube__fail(c, EXT_ENOMEM, meta, "out of memory");
    return EXT_OK;
}

/* spec.priority (set by the Priority admission plugin); else the class it names; else the
 * globalDefault class; else 0. */
static int kube__pod_priority(struct kube__ctx *c, const cJSON *spec,
                              const struct kube_decode_opts *o, struct policy_pod_spec *s)
{
    const char *class_name = NULL;
    int64_t prio = 0;
    int32_t v;
    int rc;

    if (kube__get(spec, "priority") != NULL && !cJSON_IsNull(kube__get(spec, "priority"))) {
        rc = kube__int64(c, spec, "priority", "spec.priority", INT32_MIN, INT32_MAX, &prio);
        s->priority = (int32_t)prio;
        return rc;
    }
    rc = kube__string(c, spec, "priorityClassName", "spec.priorityClassName", KUBE_MAX_NAME,
                      &class_name);
    if (rc != EXT_OK)
        return rc;
    if (class_name != NULL && *class_name == '\0')
        class_name = NULL;
    s->priority = kube__priority_class(o, class_name, &v) ? v : 0;
    return EXT_OK;
}

/* strconv.ParseBool's words, as Volcano reads volcano.sh/preemptable. */
static int kube__parse_bool(const char *s)
{
    static const char *const yes[] = {"1", "t", "T", "TRUE", "true", "True"};
    static const char *const no[] = {"0", "f", "F", "FALSE", "false", "False"};

    for (size_t i = 0; i < sizeof(yes) / sizeof(yes[0]); i++) {
        if (strcmp(s, yes[i]) == 0)
            return 1;
        if (strcmp(s, no[i]) == 0)
            return 0;
    }
    return -1;
}

/*
 * KAI's label kai.scheduler/preemptibility and Volcano's annotation
 * volcano.sh/preemptable: a pod either one marks as not preemptible is never
 * a victim; else one marked preemptible is; else its priority decides.
 */
static int kube__pod_preemptible(struct kube__ctx *c, const cJSON *meta, struct policy_pod_spec *s)
{
    const char *kai = kube__map_value(kube__get(meta, "labels"), EXT_LABEL_KAI_PREEMPTIBILITY);
    const char *vol =
        kube__map_value(kube__get(meta, "annotations"), EXT_ANNOTATION_VOLCANO_PREEMPTABLE);
    enum policy_preemptible by_kai = POLICY_PREEMPTIBLE_BY_PRIORITY, by_volcano = by_kai;
    int b;

    if (kai != NULL && !kube__preemptibility(kai, &by_kai))
        return kube__invalid(c, s,
                             "label " EXT_LABEL_KAI_PREEMPTIBILITY
                             " \"%.32s\" is not preemptible or non-preemptible",
                             kai);
    if (vol != NULL) {
        if ((b = kube__parse_bool(vol)) < 0)
            return kube__invalid(c, s,
                                 "annotation " EXT_ANNOTATION_VOLCANO_PREEMPTABLE
                                 " \"%.32s\" is not true or false",
                                 vol);
        by_volcano = b ? POLICY_PREEMPTIBLE_YES : POLICY_PREEMPTIBLE_NO;
    }
    if (by_kai == POLICY_PREEMPTIBLE_NO || by_volcano == POLICY_PREEMPTIBLE_NO)
        s->preemptible = POLICY_PREEMPTIBLE_NO;
    else if (by_kai == POLICY_PREEMPTIBLE_YES || by_volcano == POLICY_PREEMPTIBLE_YES)
        s->preemptible = POLICY_PREEMPTIBLE_YES;
    return EXT_OK;
}

/* PodScheduled False, reason Unschedulable: what kube-scheduler writes when it parks a pod. */
static bool kube__pod_parked(const cJSON *conditions)
{
    const cJSON *cond;

    if (!cJSON_IsArray(conditions))
        return false;
    cJSON_ArrayForEach(cond, conditions)
    {
        const char *type = kube__map_value(cond, "type");
        const char *status = kube__map_value(cond, "status");
        const char *reason = kube__map_value(cond, "reason");

        if (type && strcmp(type, "PodScheduled") == 0)
            return status && strcmp(status, "False") == 0 && reason &&
                   strcmp(reason, "Unschedulable") == 0;
    }
    return false;
}

/*
 * When a bound pod was bound, in Unix ms: the API server turns its PodScheduled condition True
 * when it takes the Binding; a pod made with spec.nodeName has only the kubelet's startTime,
 * which is no earlier. 0 when neither is there or readable.
 */
static int64_t kube__pod_bound_at(const cJSON *status)
{
    const cJSON *conds = kube__get(status, "conditions"), *cond;
    int64_t us = -1;

    if (!cJSON_IsArray(conds))
        conds = NULL;
    cJSON_ArrayForEach(cond, conds)
    {
        const char *type = kube__map_value(cond, "type");
        const char *state = kube__map_value(cond, "status");

        if (type && strcmp(type, "PodScheduled") == 0 && state && strcmp(state, "True") == 0)
            us = ext_time_us(kube__map_value(cond, "lastTransitionTime"));
    }
    if (us < 0)
        us = ext_time_us(kube__map_value(status, "startTime"));
    return us > 0 ? us / 1000 : 0;
}

/* Who the pod is: identity, gang, queue, placement. */
static int kube__pod_identity(struct kube__ctx *c, const cJSON *pod,
                              const struct kube_decode_opts *o, struct policy_pod_spec *s)
{
    const cJSON *meta = kube__get(pod, "metadata"), *spec = kube__get(pod, "spec");
    const cJSON *labels = kube__get(meta, "labels");
    const struct policy_label *l;
    const char *type, *nominated, *sched = NULL;
    size_t nl;
    int rc;

    rc = kube__meta(c, pod, "pod", &s->namespace_, &s->name);
    if (rc == EXT_OK)
        rc = kube__string(c, meta, "uid", "metadata.uid", KUBE_MAX_NAME, &s->uid);
    /* Checked here so the lookups below can trust the maps. */
    if (rc == EXT_OK)
        rc = kube__labels(c, labels, "metadata.labels", &l, &nl);
    if (rc == EXT_OK)
        rc = kube__labels(c, kube__get(meta, "annotations"), "metadata.annotations", &l, &nl);
    if (rc == EXT_OK && spec != NULL && !cJSON_IsObject(spec))
        rc = kube__fail(c, EXT_EINVAL, spec, "pod: spec must be a mapping");
    if (rc == EXT_OK)
        rc = kube__pod_priority(c, spec, o, s);
    if (rc == EXT_OK)
        rc = kube__string(c, spec, "schedulerName", "spec.schedulerName", KUBE_MAX_NAME, &sched);
    if (rc == EXT_OK)
        rc = kube__string(c, spec, "nodeName", "spec.nodeName", KUBE_MAX_NAME, &s->node);
    if (rc == EXT_OK)
        rc = kube__string(c, kube__get(meta, "annotations"), EXT_ANNOTATION_GPU_GROUP,
                          "annotation " EXT_ANNOTATION_GPU_GROUP, KUBE_MAX_VALUE, &s->gpu_groups);
    if (rc == EXT_OK)
        rc = kube__pod_gang(c, pod, o, s);
    if (rc == EXT_OK)
        rc = kube__pod_preemptible(c, meta, s);
    if (rc != EXT_OK)
        return rc;
    if (s->uid == NULL)
        s->uid = "";
    if (s->node != NULL && *s->node == '\0')
        s->node = NULL;
    if (s->gpu_groups != NULL && *s->gpu_groups == '\0')
        s->gpu_groups = NULL;
    type = kube__map_value(labels, EXT_LABEL_RAY_NODE_TYPE);
    s->gang_head = type != NULL && strcmp(type, "head") == 0;
    nominated = kube__map_value(kube__get(pod, "status"), "nominatedNodeName");
    s->nominated = nominated != NULL && *nominated != '\0';
    s->unschedulable = kube__pod_parked(kube__get(kube__get(pod, "status"), "conditions"));
    s->bound_at = s->node != NULL ? kube__pod_bound_at(kube__get(pod, "status")) : 0;
    if (kube__queue_label(labels, o) != NULL) /* else a submitter's RayJob's, if any */
        s->queue = kube__queue_label(labels, o);
    if (s->queue != NULL && !kube__object_ref_valid(s->queue))
        return kube__fail(c, EXT_EINVAL, labels,
                          "pod: queue \"%.80s\" is neither a label value nor a DNS-1123 subdomain",
                          s->queue);
    s->managed = kube__managed(sched, o);
    return EXT_OK;
}

int kube_pod_decode(const cJSON *pod, const struct kube_decode_opts *o, struct ext_arena *a,
                    struct policy_pod_spec *out, char *err, size_t errlen, const cJSON **where)
{
    struct kube__ctx c = {a, err, errlen, where};
    struct policy_pod_spec s = {0};
    const cJSON *spec = kube__get(pod, "spec");
    int rc;

    if (o == NULL)
        o = &kube_decode_defaults;
    rc = kube__pod_identity(&c, pod, o, &s);
    if (rc == EXT_OK)
        rc = kube__pod_requests(&c, spec, &s);
    if (rc == EXT_OK)
        rc = kube__pod_share(&c, kube__get(kube__get(pod, "metadata"), "annotations"), &s);
    if (rc == EXT_OK)
        rc = kube__labels(&c, kube__get(spec, "nodeSelector"), "spec.nodeSelector",
                          &s.node_selector, &s.nnode_selector);
    if (rc == EXT_OK)
        rc = kube__pod_affinity(&c, spec, &s);
    if (rc == EXT_OK)
        rc = kube__pod_tolerations(&c, spec, &s);
    if (rc != EXT_OK)
        return rc;
    *out = s;
    return EXT_OK;
}
