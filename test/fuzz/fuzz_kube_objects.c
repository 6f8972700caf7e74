/*
 * fuzz_kube_objects.c - the decoders of the objects beside pods and nodes, on
 * arbitrary JSON, as the watches and simulate's manifests deliver them:
 * Queues (both apiVersions), RayClusters, PodGroups (every flavour), the
 * Workload API's Workloads and PodGroups, PriorityClasses; then the refs
 * store they fill and a pod decoded through its lookup.
 *
 * On success: a gang has a "ns/name" key, a minimum that is not negative and
 * not below its subgroups' sum, subgroups within the cap with distinct,
 * non-empty names, and a PodGroup's spec.subGroups have every parent named
 * and no loop; a Queue's amounts are -1 or >= 0, its weights within
 * [0, POLICY_MAX_WEIGHT], its minimum runtimes not negative. On failure: a
 * one-line reason, *out untouched.
 */
#include <stdint.h>

#include "fuzz_kube_json.h"

static void check_gang(const struct policy_gang_spec *g)
{
    int64_t sum = 0;

    fuzz_require_string(g->key, "gang key");
    fuzz_require(strchr(g->key, '/') != NULL, "gang key is ns/name");
    fuzz_require(g->min_members >= 0, "gang minimum not negative");
    fuzz_require(g->nsubgroups <= KUBE_MAX_GROUPS + 1, "subgroups within cap");
    fuzz_require(g->nsubgroups == 0 || g->subgroups != NULL, "a subgroup per count");
    fuzz_require((unsigned)g->source < POLICY_GANG_SOURCES, "gang source");
    fuzz_require((unsigned)g->preemptible <= POLICY_PREEMPTIBLE_YES, "gang preemptibility");
    for (size_t i = 0; i < g->nsubgroups; i++) {
        fuzz_require_string(g->subgroups[i].name, "subgroup name");
        fuzz_require(g->subgroups[i].name[0] != '\0', "subgroup name not empty");
        fuzz_require(g->subgroups[i].min_members >= 0, "subgroup minimum not negative");
        for (size_t j = 0; j < i; j++)
            fuzz_require(strcmp(g->subgroups[i].name, g->subgroups[j].name) != 0,
                         "subgroup names distinct");
        sum += g->subgroups[i].min_members;
    }
    fuzz_require(g->nsubgroups == 0 || g->min_members >= sum, "minimum covers the subgroups");
    if (g->queue != NULL)
        (void)strlen(g->queue);
}

static void check_queue(const struct policy_queue_spec *q)
{
    fuzz_require_string(q->name, "queue name");
    if (q->parent != NULL)
        fuzz_require(q->parent[0] != '\0', "parent NULL or set");
    for (int r = 0; r < POLICY_RES_COUNT; r++) {
        fuzz_require(q->quota.v[r] >= -1 && q->limit.v[r] >= -1, "amounts -1 or >= 0");
        fuzz_require(q->over_quota_weight.v[r] >= 0 &&
                         q->over_quota_weight.v[r] <= POLICY_MAX_WEIGHT,
                     "weight within cap");
    }
    fuzz_require(q->reclaim_min_runtime_ms >= 0 && q->preempt_min_runtime_ms >= 0,
                 "runtimes not negative");
}

/* An accepted spec.subGroups: every parent a subgroup's name, and no subgroup its own ancestor. */
static void check_subgroup_graph(const cJSON *doc)
{
    const cJSON *list = kube__get(kube__get(doc, "spec"), "subGroups"), *e, *f;
    int n = cJSON_GetArraySize(list);

    cJSON_ArrayForEach(e, cJSON_IsArray(list) ? list : NULL)
    {
        const char *at = kube__map_value(e, "parent");
        int steps = 0;

        for (; at != NULL && *at != '\0'; steps++) {
            const cJSON *up = NULL;

            fuzz_require(steps <= n, "no subgroup is its own ancestor");
            cJSON_ArrayForEach(f, list)
            {
                const char *name = kube__map_value(f, "name");

                if (up == NULL && name != NULL && strcmp(name, at) == 0)
                    up = f;
            }
            fuzz_require(up != NULL, "every parent is a subgroup");
            at = kube__map_value(up, "parent");
        }
    }
}

typedef int (*gang_decoder)(const cJSON *obj, const struct kube_decode_opts *o, struct ext_arena *a,
                            struct policy_gang_spec *out, char *err, size_t errlen,
                            const cJSON **where);

static void fuzz_gang(gang_decoder decode, const cJSON *doc, const struct kube_decode_opts *o,
                      struct ext_arena *arena, struct kube_refs *refs)
{
    struct policy_gang_spec g, untouched;
    const cJSON *where = NULL;
    char err[256];
    const char *ns, *name;

    memset(&g, 0xa5, sizeof(g));
    untouched = g;
    if (decode(doc, o, arena, &g, err, sizeof(err), &where) != EXT_OK) {
        fuzz_require_kube_failure(err, sizeof(err), where);
        fuzz_require(memcmp(&g, &untouched, sizeof(g)) == 0, "out is untouched on failure");
        return;
    }
    check_gang(&g);
    if (decode == kube_podgroup_gang)
        check_subgroup_graph(doc);
    if (decode != kube_workload_gang)
        return;
    ns = kube__map_value(kube__get(doc, "metadata"), "namespace");
    name = kube__map_value(kube__get(doc, "metadata"), "name");
    fuzz_require(name != NULL, "a decoded Workload has a name");
    fuzz_require(kube_refs_workload(refs, ns != NULL && *ns ? ns : "default", name, &g,
                                    kube_workload_single_template(doc)) == EXT_OK,
                 "a Workload is recorded");
}

static void fuzz_queue(const cJSON *doc, struct ext_arena *arena)
{
    struct policy_queue_spec q, untouched;
    const cJSON *where = NULL;
    char err[256];

    memset(&q, 0xa5, sizeof(q));
    untouched = q;
    if (kube_queue_decode(doc, arena, &q, err, sizeof(err), &where) == EXT_OK) {
        check_queue(&q);
        return;
    }
    fuzz_require_kube_failure(err, sizeof(err), where);
    fuzz_require(memcmp(&q, &untouched, sizeof(q)) == 0, "out is untouched on failure");
}

static void fuzz_refs(const cJSON *doc, const struct kube_decode_opts *o, struct ext_arena *arena,
                      struct kube_refs *refs)
{
    struct kube_pod_group pg;
    struct kube_priority_class pc;
    struct policy_pod_spec pod;
    char err[256], key[600];
    const cJSON *where = NULL;

    if (kube_pod_group_decode(doc, o, arena, &pg, err, sizeof(err), &where) == EXT_OK) {
        fuzz_require_string(pg.gang, "pod group gang");
        fuzz_require(pg.workload == NULL || pg.template_ != NULL, "a workload has a template");
        if (pg.spec.key != NULL)
            check_gang(&pg.spec);
        fuzz_require(kube_refs_pod_group(refs, &pg) == EXT_OK, "a PodGroup is recorded");
        snprintf(key, sizeof(key), "%s/%s", pg.namespace_, pg.name);
    } else {
        fuzz_require_kube_failure(err, sizeof(err), where);
        key[0] = '\0';
    }
    if (kube_priority_class_decode(doc, &pc, err, sizeof(err), &where) == EXT_OK)
        fuzz_require(kube_refs_priority_class(refs, &pc) == EXT_OK, "a class is recorded");
    else
        fuzz_require_kube_failure(err, sizeof(err), where);
    /* The same object as a pod, through the lookup the store now answers. */
    if (kube_pod_decode(doc, o, arena, &pod, err, sizeof(err), &where) == EXT_OK) {
        if (pod.gang != NULL)
            (void)strlen(pod.gang);
        if (pod.subgroup != NULL)
            (void)strlen(pod.subgroup);
    }
    if (key[0] != '\0')
        (void)kube_refs_forget(refs, KUBE_REF_POD_GROUP, key, err, sizeof(err));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct kube_decode_opts o = kube_decode_defaults;
    struct ext_arena *arena;
    struct kube_refs *refs;
    struct kube_lookup lookup;
    cJSON *doc;

    doc = fuzz_kube_json(data, size);
    if (doc == NULL)
        return 0;
    arena = ext_arena_new();
    refs = kube_refs_new();
    fuzz_require(arena != NULL && refs != NULL, "arena and refs");
    lookup = kube_refs_lookup(refs);
    o.lookup = &lookup;
    fuzz_queue(doc, arena);
    fuzz_refs(doc, &o, arena, refs);
    fuzz_gang(kube_raycluster_gang, doc, &o, arena, refs);
    fuzz_gang(kube_podgroup_gang, doc, &o, arena, refs);
    fuzz_gang(kube_workload_gang, doc, &o, arena, refs);
    kube_refs_free(refs);
    ext_arena_free(arena);
    cJSON_Delete(doc);
    return 0;
}
