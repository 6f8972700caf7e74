/*
 * kube_internal.h - helpers the decoders (decode*.c) share; not for other folders.
 */
#ifndef MUSTER_KUBE_INTERNAL_H
#define MUSTER_KUBE_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <cjson/cJSON.h>

#include "kube.h"

/* Caps on what one object may hold; beyond them the object is refused. */
#define KUBE_MAX_NAME 253      /* metadata.name, namespace, node names */
#define KUBE_MAX_VALUE 1024    /* any other string the decoders keep */
#define KUBE_MAX_LABELS 256    /* labels, annotations, nodeSelector entries */
#define KUBE_MAX_CONTAINERS 64 /* containers and init containers, each */
#define KUBE_MAX_LIST 256      /* taints, tolerations, terms, expressions, values */
#define KUBE_MAX_GROUPS 64     /* workerGroupSpecs */

/* One decode call: where its allocations and its complaint go. */
struct kube__ctx {
    struct ext_arena *a;
    char *err;
    size_t errlen;
    const cJSON **where;
};

/* Writes the reason and the node; returns code. */
int kube__fail(struct kube__ctx *c, int code, const cJSON *where, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* obj[key] (case-sensitive), NULL when obj is not an object or lacks it. */
const cJSON *kube__get(const cJSON *obj, const char *key);

/* A string member; absent or null -> *out = NULL. Not a string, or longer
 * than max -> EXT_EINVAL naming what. The result is the node's own text. */
int kube__string(struct kube__ctx *c, const cJSON *obj, const char *key, const char *what,
                 size_t max, const char **out);

/* A name as Kubernetes validates it; EXT_EINVAL naming what, pointing at where. */
int kube__name(struct kube__ctx *c, const cJSON *where, const char *value, enum ext_name_kind kind,
               const char *what);

/* A label or annotation that names an object (a gang, a queue): a label value or a
 * DNS-1123 subdomain; either way no '/', NUL or byte past ASCII. */
bool kube__object_ref_valid(const char *name);

/* metadata.name (required, a DNS-1123 subdomain) and metadata.namespace ("default" when
 * absent, a DNS-1123 label). */
int kube__meta(struct kube__ctx *c, const cJSON *obj, const char *kind, const char **ns,
               const char **name);

/* An integer member within [min, max]; absent -> *out untouched. */
int kube__int64(struct kube__ctx *c, const cJSON *obj, const char *key, const char *what,
                int64_t min, int64_t max, int64_t *out);

/* A boolean member; absent or null -> false. */
int kube__bool(struct kube__ctx *c, const cJSON *obj, const char *key, const char *what, bool *out);

/* A quantity, string or number, at the given scale (kube_quantity_parse). */
int kube__quantity(struct kube__ctx *c, const cJSON *node, int64_t scale, const char *what,
                   int64_t *out);

/* A string map (labels, annotations, nodeSelector) into an arena array. */
int kube__labels(struct kube__ctx *c, const cJSON *map, const char *what,
                 const struct policy_label **out, size_t *n);

/* The value of a string map entry, or NULL. */
const char *kube__map_value(const cJSON *map, const char *key);

/* The first of the option's queue label keys present in labels, or NULL. */
const char *kube__queue_label(const cJSON *labels, const struct kube_decode_opts *o);

/* A list member within cap items: its length in *n; absent or null -> 0. */
int kube__list(struct kube__ctx *c, const cJSON *list, const char *what, size_t cap, size_t *n);

/* A taint effect by name ("NoSchedule"), or -1. */
int kube__effect_lookup(const char *s);

/* "ns/name" in the arena. */
char *kube__key(struct ext_arena *a, const char *ns, const char *name);

/* ---- gangs (decode_gang.c) ----------------------------------------------- */

/* A RayCluster's head, and the pods KubeRay labels ray.io/node-type=head. */
#define KUBE_SUBGROUP_HEAD "head"

/* Who asked for a topology (policy_topology_constraint.dialect). */
#define KUBE_DIALECT_KAI "KAI"
#define KUBE_DIALECT_KUEUE "Kueue"
#define KUBE_DIALECT_VOLCANO "Volcano"
#define KUBE_DIALECT_WORKLOAD_API "the Workload API"

/* ---- topology constraints (decode_topology.c) ------------------------------ */

/* A RayCluster's whole-gang constraint: KAI's annotations, else Volcano's labels (the other
 * beside it). Never fails: what it cannot read becomes the constraint's invalid verdict. */
void kube__raycluster_topology(struct kube__ctx *c, const cJSON *meta,
                               struct policy_gang_spec *s);
/* A head or worker group's pod template: KAI's annotations, else Kueue's. */
void kube__template_topology(struct kube__ctx *c, const cJSON *group,
                             struct policy_subgroup_spec *sg);
/* A KAI PodGroup's (or subGroups[] item's) topologyConstraint; what names the owner. */
int kube__kai_constraint(struct kube__ctx *c, const cJSON *owner, const char *what,
                         struct policy_topology_constraint *t);
/* A Volcano PodGroup's spec.networkTopology. */
int kube__volcano_network_topology(struct kube__ctx *c, const cJSON *spec,
                                   struct policy_topology_constraint *t);

/* The RayCluster named in metadata.ownerReferences, or NULL. */
const char *kube__owner_raycluster(const cJSON *meta);

/* Which RayJob or RayService made the object (labels ray.io/originated-from-crd and -cr-name):
 * *kind NONE and *owner NULL when none (or a kind muster does not follow); *owner "ns/name". */
int kube__ray_origin(struct kube__ctx *c, const cJSON *meta, const char *ns,
                     enum policy_owner_kind *kind, const char **owner);

/* A RayJob's submitter pod's subgroup in its gang. */
#define KUBE_SUBGROUP_SUBMITTER KUBE_RAYJOB_SUBMITTER

/* KAI's preemptibility ("preemptible", "non-preemptible"; NULL or "": by
 * priority); false for any other value. */
bool kube__preemptibility(const char *value, enum policy_preemptible *out);

/* A gang object's labels: checked, its queue and kai.scheduler/preemptibility. */
int kube__gang_labels(struct kube__ctx *c, const cJSON *meta, const struct kube_decode_opts *o,
                      struct policy_gang_spec *s);

/* The lookup's answer for a PriorityClass (NULL name: the globalDefault one). */
bool kube__priority_class(const struct kube_decode_opts *o, const char *name, int32_t *value);

/* A PriorityClass the gang names: has_priority and priority when it is known. */
void kube__gang_priority(const struct kube_decode_opts *o, const char *class_name,
                         struct policy_gang_spec *s);

/* Room for n subgroups in the arena (NULL and the reason on failure). */
struct policy_subgroup_spec *kube__subgroups_new(struct kube__ctx *c, size_t n, const cJSON *where);

/* Appends a subgroup to s (sg is s's array): a name not seen yet, its minimum
 * added to s->min_members. */
int kube__subgroup_add(struct kube__ctx *c, struct policy_gang_spec *s,
                       struct policy_subgroup_spec *sg, const char *name, int64_t min,
                       const char *what, const cJSON *where);

#endif
