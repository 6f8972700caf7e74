/*
 * decode_topology.c - where nodes sit and where gangs want them, in each dialect
 * (docs/topology.md), into the engine's one model.
 *
 * Topologies: KAI's kai.scheduler/v1alpha1 and Kueue's kueue.x-k8s.io/v1beta2 (and v1beta1)
 * Topology, spec.levels[]{nodeLabel, alias} coarsest first (KAI's alias only). A Kueue
 * Topology is kept as "kueue/<name>": KAI's constraints name KAI's Topologies, Kueue's name a
 * level's label and find whichever Topology lists it.
 *
 * Constraints:
 *   KAI     annotations kai.scheduler/topology, topology-required-placement,
 *           topology-preferred-placement on a workload (a RayCluster) for the whole gang, and
 *           on its headGroupSpec / workerGroupSpecs[i] pod templates for that subgroup (KAI's
 *           ray_grouper.go); a PodGroup's spec.topologyConstraint{topology,
 *           requiredTopologyLevel, preferredTopologyLevel}, and each subGroups[] item's.
 *   Kueue   pod-template annotations kueue.x-k8s.io/podset-required-topology (else
 *           podset-preferred-topology: Kueue reads one, the required first), per subgroup.
 *           The slice annotations (podset-slice-required-topology, podset-slice-size) are not
 *           read: muster keeps multi-host replicas (KubeRay's own slices) to a level already.
 *   Volcano RayCluster labels volcano.sh/network-topology-mode (hard | soft) and
 *           volcano.sh/network-topology-highest-tier-allowed, as KubeRay copies them into its
 *           PodGroup's spec.networkTopology{mode, highestTierAllowed, highestTierName}, which
 *           is read too. hard with a tier: required tier, preferred tier 1; soft: preferred
 *           tier 1 (Volcano ranks any tier up to the one given as preferred; the finest first
 *           is muster's walk); hard without a tier is not hard in Volcano's scheduler
 *           (IsHardTopologyMode): preferred tier 1. Tiers count levels of a Topology from
 *           the nodes up, as Volcano's label discovery builds HyperNodes from node labels.
 *           HyperNodes themselves are not read.
 * Where an object speaks two dialects for one gang or subgroup, the first of KAI, Kueue,
 * Volcano is followed and the next one is handed over beside it: the engine says when they
 * disagree. A value muster cannot read makes the constraint invalid (the gang waits, saying
 * so) rather than failing the object: its composition still counts.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base.h"
#include "kube.h"
#include "kube_internal.h"

#define KUBE_MAX_LABEL_KEY 316 /* a qualified label key: 253 prefix, '/', 63 name */

/* ---- Topology ---------------------------------------------------------------------- */

static bool kube__is_kueue(const cJSON *obj)
{
    const char *v = kube__map_value(obj, "apiVersion");

    return v != NULL && strncmp(v, "kueue.x-k8s.io/", 15) == 0;
}

int kube_topology_decode(const cJSON *obj, struct ext_arena *a, struct policy_topology_spec *out,
                         char *err, size_t errlen, const cJSON **where)
{
    struct kube__ctx c = {a, err, errlen, where};
    const cJSON *spec = kube__get(obj, "spec"), *levels = kube__get(spec, "levels"), *l;
    struct policy_topology_level *lv;
    const char *name;
    size_t n, i = 0;
    int rc;

    rc = kube__meta(&c, obj, "Topology", NULL, &name);
    if (rc == EXT_OK)
        rc = kube__list(&c, levels, "spec.levels", POLICY_MAX_TOPOLOGY_LEVELS, &n);
    if (rc != EXT_OK)
        return rc;
    if (n == 0)
        return kube__fail(&c, EXT_EINVAL, spec ? spec : obj, "Topology %.253s: spec.levels empty",
                          name);
    if (!(lv = ext_arena_calloc(a, n, sizeof(*lv))))
        return kube__fail(&c, EXT_ENOMEM, obj, "out of memory");
    cJSON_ArrayForEach(l, levels)
    {
        if (!cJSON_IsObject(l))
            return kube__fail(&c, EXT_EINVAL, l, "spec.levels: an item is not a mapping");
        rc = kube__string(&c, l, "nodeLabel", "spec.levels nodeLabel", KUBE_MAX_LABEL_KEY,
                          &lv[i].node_label);
        if (rc == EXT_OK)
            rc = kube__string(&c, l, "alias", "spec.levels alias", KUBE_MAX_LABEL_KEY,
                              &lv[i].alias);
        if (rc != EXT_OK)
            return rc;
        if (lv[i].node_label == NULL || *lv[i].node_label == '\0')
            return kube__fail(&c, EXT_EINVAL, l, "spec.levels[%zu]: nodeLabel missing", i);
        for (size_t k = 0; k < i; k++)
            if (strcmp(lv[k].node_label, lv[i].node_label) == 0)
                return kube__fail(&c, EXT_EINVAL, l, "spec.levels: nodeLabel %.64s twice",
                                  lv[i].node_label);
        i++;
    }
    out->name = name;
    if (kube__is_kueue(obj)) {
        size_t len = strlen(name) + 7;
        char *full = ext_arena_alloc(a, len);

        if (!full)
            return kube__fail(&c, EXT_ENOMEM, obj, "out of memory");
        snprintf(full, len, "kueue/%s", name);
        out->name = full;
    }
    out->levels = lv;
    out->nlevels = n;
    return EXT_OK;
}

/* ---- constraints ----------------------------------------------------------------------- */

static bool kube__constraint_set(const struct policy_topology_constraint *t)
{
    return t->required || t->preferred || t->required_tier || t->preferred_tier || t->invalid;
}

/* A level's name: a label key or an alias (either way a qualified name); NULL when unfit. */
static const char *kube__level_name(const char *v)
{
    return v != NULL && *v != '\0' && strlen(v) <= KUBE_MAX_LABEL_KEY ? v : NULL;
}

/* "annotation kai.scheduler/topology-required-placement: ..." made the constraint's verdict. */
static void kube__constraint_invalid(struct kube__ctx *c, struct policy_topology_constraint *t,
                                     const char *fmt, const char *key, const char *value)
{
    char buf[512];

    snprintf(buf, sizeof(buf), fmt, key, value);
    *t = (struct policy_topology_constraint){.dialect = t->dialect,
                                             .invalid = ext_arena_strdup(c->a, buf)};
}

/* KAI's three annotations; nothing placed: none (a topology name alone says nothing, as in
 * KAI's ray_grouper). */
static void kube__kai_annotations(struct kube__ctx *c, const cJSON *ann,
                                  struct policy_topology_constraint *t)
{
    const char *req = kube__map_value(ann, EXT_ANNOTATION_KAI_REQUIRED);
    const char *pref = kube__map_value(ann, EXT_ANNOTATION_KAI_PREFERRED);

    *t = (struct policy_topology_constraint){.dialect = KUBE_DIALECT_KAI};
    if ((req == NULL || *req == '\0') && (pref == NULL || *pref == '\0'))
        return;
    t->topology = kube__map_value(ann, EXT_ANNOTATION_KAI_TOPOLOGY);
    t->required = kube__level_name(req);
    t->preferred = kube__level_name(pref);
    if (req != NULL && *req != '\0' && t->required == NULL)
        kube__constraint_invalid(c, t, "annotation %s: \"%.64s\" is no level name",
                                 EXT_ANNOTATION_KAI_REQUIRED, req);
    else if (pref != NULL && *pref != '\0' && t->preferred == NULL)
        kube__constraint_invalid(c, t, "annotation %s: \"%.64s\" is no level name",
                                 EXT_ANNOTATION_KAI_PREFERRED, pref);
}

/* Kueue's pod-template annotations: the required one, else the preferred one. */
static void kube__kueue_annotations(struct kube__ctx *c, const cJSON *ann,
                                    struct policy_topology_constraint *t)
{
    const char *req = kube__map_value(ann, EXT_ANNOTATION_KUEUE_REQUIRED);
    const char *pref = kube__map_value(ann, EXT_ANNOTATION_KUEUE_PREFERRED);

    *t = (struct policy_topology_constraint){.dialect = KUBE_DIALECT_KUEUE};
    if (req != NULL) {
        if (!(t->required = kube__level_name(req)))
            kube__constraint_invalid(c, t, "annotation %s: \"%.64s\" is no node label",
                                     EXT_ANNOTATION_KUEUE_REQUIRED, req);
    } else if (pref != NULL) {
        if (!(t->preferred = kube__level_name(pref)))
            kube__constraint_invalid(c, t, "annotation %s: \"%.64s\" is no node label",
                                     EXT_ANNOTATION_KUEUE_PREFERRED, pref);
    }
}

/* A Volcano tier as written ("2"): 1 .. 2^20, else 0. */
static int32_t kube__tier(const char *v)
{
    char *end;
    long n;

    if (v == NULL || *v < '0' || *v > '9')
        return 0;
    errno = 0;
    n = strtol(v, &end, 10);
    return errno == 0 && *end == '\0' && n >= 1 && n <= (1L << 20) ? (int32_t)n : 0;
}

/* Volcano's mode and tier, as labels (KubeRay's) or spec.networkTopology (a PodGroup's). */
static void kube__volcano(struct kube__ctx *c, const char *mode, const char *tier,
                          const char *tier_name, const char *mode_what, const char *tier_what,
                          struct policy_topology_constraint *t)
{
    int32_t n = kube__tier(tier);

    *t = (struct policy_topology_constraint){.dialect = KUBE_DIALECT_VOLCANO};
    if (mode == NULL)
        return; /* KubeRay writes no networkTopology without a mode */
    if (strcmp(mode, "hard") != 0 && strcmp(mode, "soft") != 0) {
        kube__constraint_invalid(c, t, "%s: \"%.32s\" is not hard or soft", mode_what, mode);
        return;
    }
    if (tier != NULL && n == 0) {
        kube__constraint_invalid(c, t, "%s: \"%.32s\" is not a tier (1, 2, ...)", tier_what,
                                 tier);
        return;
    }
    t->preferred_tier = 1;
    if (strcmp(mode, "hard") == 0) {
        t->required_tier = n;
        t->required = n == 0 ? kube__level_name(tier_name) : NULL;
    }
}

static void kube__volcano_labels(struct kube__ctx *c, const cJSON *labels,
                                 struct policy_topology_constraint *t)
{
    kube__volcano(c, kube__map_value(labels, EXT_LABEL_VOLCANO_TOPOLOGY_MODE),
                  kube__map_value(labels, EXT_LABEL_VOLCANO_TOPOLOGY_TIER), NULL,
                  "label " EXT_LABEL_VOLCANO_TOPOLOGY_MODE,
                  "label " EXT_LABEL_VOLCANO_TOPOLOGY_TIER, t);
}

/* The first dialect set is followed; the next set one goes beside it. */
static void kube__pick(const struct policy_topology_constraint *in, size_t n,
                       struct policy_topology_constraint *out,
                       struct policy_topology_constraint *other)
{
    *out = *other = (struct policy_topology_constraint){0};
    for (size_t i = 0; i < n; i++) {
        if (!kube__constraint_set(&in[i]))
            continue;
        if (!kube__constraint_set(out))
            *out = in[i];
        else if (!kube__constraint_set(other))
            *other = in[i];
    }
}

void kube__raycluster_topology(struct kube__ctx *c, const cJSON *meta,
                               struct policy_gang_spec *s)
{
    struct policy_topology_constraint d[2];

    kube__kai_annotations(c, kube__get(meta, "annotations"), &d[0]);
    kube__volcano_labels(c, kube__get(meta, "labels"), &d[1]);
    kube__pick(d, 2, &s->topology, &s->topology_other);
}

void kube__template_topology(struct kube__ctx *c, const cJSON *group,
                             struct policy_subgroup_spec *sg)
{
    const cJSON *ann = kube__get(kube__get(kube__get(group, "template"), "metadata"),
                                 "annotations");
    struct policy_topology_constraint d[2];

    kube__kai_annotations(c, ann, &d[0]);
    kube__kueue_annotations(c, ann, &d[1]);
    kube__pick(d, 2, &sg->topology, &sg->topology_other);
}

int kube__kai_constraint(struct kube__ctx *c, const cJSON *owner, const char *what,
                         struct policy_topology_constraint *t)
{
    const cJSON *tc = kube__get(owner, "topologyConstraint");
    const char *topo = NULL, *req = NULL, *pref = NULL;
    char w[96];
    int rc;

    *t = (struct policy_topology_constraint){.dialect = KUBE_DIALECT_KAI};
    if (tc == NULL || cJSON_IsNull(tc))
        return EXT_OK;
    if (!cJSON_IsObject(tc))
        return kube__fail(c, EXT_EINVAL, tc, "%s.topologyConstraint: must be a mapping", what);
    snprintf(w, sizeof(w), "%s.topologyConstraint topology", what);
    rc = kube__string(c, tc, "topology", w, KUBE_MAX_NAME, &topo);
    snprintf(w, sizeof(w), "%s.topologyConstraint requiredTopologyLevel", what);
    if (rc == EXT_OK)
        rc = kube__string(c, tc, "requiredTopologyLevel", w, KUBE_MAX_LABEL_KEY, &req);
    snprintf(w, sizeof(w), "%s.topologyConstraint preferredTopologyLevel", what);
    if (rc == EXT_OK)
        rc = kube__string(c, tc, "preferredTopologyLevel", w, KUBE_MAX_LABEL_KEY, &pref);
    if (rc != EXT_OK)
        return rc;
    t->topology = topo;
    t->required = req != NULL && *req != '\0' ? req : NULL;
    t->preferred = pref != NULL && *pref != '\0' ? pref : NULL;
    return EXT_OK;
}

int kube__volcano_network_topology(struct kube__ctx *c, const cJSON *spec,
                                   struct policy_topology_constraint *t)
{
    const cJSON *nt = kube__get(spec, "networkTopology"), *tier;
    const char *mode = NULL, *name = NULL;
    char num[32];
    int rc;

    *t = (struct policy_topology_constraint){.dialect = KUBE_DIALECT_VOLCANO};
    if (nt == NULL || cJSON_IsNull(nt))
        return EXT_OK;
    if (!cJSON_IsObject(nt))
        return kube__fail(c, EXT_EINVAL, nt, "spec.networkTopology: must be a mapping");
    rc = kube__string(c, nt, "mode", "spec.networkTopology mode", 32, &mode);
    if (rc == EXT_OK)
        rc = kube__string(c, nt, "highestTierName", "spec.networkTopology highestTierName",
                          KUBE_MAX_LABEL_KEY, &name);
    if (rc != EXT_OK)
        return rc;
    tier = kube__get(nt, "highestTierAllowed");
    if (tier != NULL && !cJSON_IsNull(tier) && !cJSON_IsNumber(tier))
        return kube__fail(c, EXT_EINVAL, tier,
                          "spec.networkTopology.highestTierAllowed: must be a number");
    if (cJSON_IsNumber(tier) && tier->valuedouble == (double)(int64_t)tier->valuedouble)
        snprintf(num, sizeof(num), "%.0f", tier->valuedouble);
    else if (cJSON_IsNumber(tier))
        snprintf(num, sizeof(num), "%g", tier->valuedouble); /* not a whole tier: refused */
    kube__volcano(c, mode ? mode : "hard", cJSON_IsNumber(tier) ? num : NULL, name,
                  "spec.networkTopology.mode", "spec.networkTopology.highestTierAllowed", t);
    return EXT_OK;
}
