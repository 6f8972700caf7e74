/*
 * cache.h - muster's picture of the cluster: watches feed the engine.
 *
 * One reflector per watched kind (nodes, pods, RayClusters, RayJobs, RayServices, muster
 * Queues, the PodGroups of scheduler-plugins, Volcano and KAI, PriorityClasses, the Workload
 * API's Workloads and PodGroups, KAI's and Kueue's Topologies) decodes every object and hands
 * it to the engine
 * under the cache's lock. cache.c holds one table of the kinds: each row names
 * its path, group/version and kind, whether it may be absent, and what its
 * decode, add or update, and delete do; a new kind is a row there and a value
 * here. The same lock guards every engine call made by the
 * HTTP handlers, so filter, bind and watch events never interleave inside
 * the engine. Optional resources (CRDs) may be absent; one installed later
 * is picked up by its reflector.
 */
#ifndef MUSTER_CACHE_H
#define MUSTER_CACHE_H

#include <pthread.h>
#include <stdbool.h>

#include "config.h"
#include "kube.h"
#include "base.h"
#include "policy.h"

enum cache_source {
    CACHE_NODES,
    CACHE_PODS,
    CACHE_RAYCLUSTERS,
    CACHE_QUEUES,             /* muster.dev/v1alpha1 (status written back) */
    CACHE_QUEUES_KAI,         /* scheduling.run.ai/v2, KAI-Scheduler's (read only) */
    CACHE_PODGROUPS_X,        /* scheduling.x-k8s.io/v1alpha1 */
    CACHE_PODGROUPS_VOLCANO,  /* scheduling.volcano.sh/v1beta1 */
    CACHE_PODGROUPS_KAI,      /* scheduling.run.ai/v2alpha2 */
    CACHE_PRIORITYCLASSES,    /* scheduling.k8s.io/v1: what gangs and pods name */
    CACHE_WORKLOADS_V1ALPHA2, /* the Workload API, Kubernetes 1.36 */
    CACHE_WA_PODGROUPS_V1ALPHA2,
    CACHE_WORKLOADS_V1BETA1, /* ... and 1.37 */
    CACHE_WA_PODGROUPS_V1BETA1,
    CACHE_RAYJOBS,     /* ray.io/v1: a submitter's gang, its held room */
    CACHE_RAYSERVICES, /* ray.io/v1: for Events about it */
    CACHE_TOPOLOGIES_KAI,   /* kai.scheduler/v1alpha1: node labels, coarsest first */
    CACHE_TOPOLOGIES_KUEUE, /* kueue.x-k8s.io/v1beta2: the same, as "kueue/<name>" */
    CACHE_SOURCE_COUNT
};

struct cache_keys {
    char **v; /* sorted */
    size_t n, cap;
};

#define CACHE_GONE 4096

/* Workload-API pods decoded before their PodGroup, or its Workload, was known (separate
 * watches deliver in any order; after a restart the lists race): their newest object, to be
 * decoded again into the right gang and subgroup when one of those arrives. keys sorted,
 * pods[i] is keys.v[i]'s. */
struct cache_early {
    struct cache_keys keys;
    cJSON **pods;
    size_t cap;
};

/* What a reflector's callbacks are told: whose cache, which source; the keys of a list
 * under way. */
struct cache_reflector {
    struct cache *cache;
    enum cache_source src;
    struct cache_keys listed;
    bool lost; /* a key of the list under way could not be recorded (out of memory) */
};

struct cache {
    pthread_mutex_t lock; /* the engine and everything below */
    struct policy_cluster *engine;
    struct kube_decode_opts opts; /* its lookup reads refs, under refs_lock */
    struct kube_refs *refs;       /* PriorityClasses, Workloads, Workload-API PodGroups */
    struct kube_lookup lookup;    /* refs' own */
    /* refs alone: decoding takes it, not the lock above, so a watch event or a relist is
     * decoded outside the lock; writers hold both (the lock first). */
    pthread_mutex_t refs_lock;
    struct kube_lookup locked_lookup;
    const char *reservation_namespace;
    struct kube_client *kube;
    bool watch_protobuf; /* read Pods and Nodes as protobuf (settings' watchProtobuf) */
    struct kube_watch *watches[CACHE_SOURCE_COUNT];
    struct cache_reflector reflectors[CACHE_SOURCE_COUNT];
    struct cache_keys known[CACHE_SOURCE_COUNT]; /* what each source told the engine */
    struct cache_early early;
    /* The UIDs of the last CACHE_GONE pods the watch said were deleted (a ring): a filter
     * kube-scheduler began before the delete must not bring the pod back into the engine,
     * where nothing would ever take it out again. */
    char *gone[CACHE_GONE];
    size_t gone_next;
    /* A Queue's or gang's spec changed: waiting gangs may fit now, but
     * kube-scheduler does not watch those kinds; housekeeping nudges it. */
    bool nudge;
    /* Gangs planned after some members were turned away: their planned
     * members are handed back to kube-scheduler too; and gangs declared before
     * any member came (cache_nudge_gang_members): their members turned away,
     * and nobody else's. As many as there are; when one cannot be recorded
     * (out of memory), nudge_planned hands back every planned pod instead (and
     * nudge every refused one), so none is forgotten. */
    struct cache_nudge {
        char *gang;
        bool refused; /* its refused members too */
    } *nudge_gangs;
    size_t nnudge_gangs, nudge_gangs_cap;
    bool nudge_planned;
    /* A key that could not be recorded (out of memory): the next list of that
     * source forgets what the engine holds but the list no longer has. */
    bool keys_lost[CACHE_SOURCE_COUNT];
};

/* Under the lock: was the pod of this UID deleted (among the last CACHE_GONE)? */
bool cache_pod_gone(const struct cache *c, const char *uid);

/* Under the lock: hand this gang's planned members back to kube-scheduler. */
void cache_nudge_gang(struct cache *c, const char *key);
/* Under the lock: hand this gang's members back, the refused ones too (its spec came or
 * changed while no member waited on it: what the others wait for is as it was). */
void cache_nudge_gang_members(struct cache *c, const char *key);
/* Under the lock: every nudge was handed back. */
void cache_nudges_clear(struct cache *c);

int cache_init(struct cache *c, const struct cfg_settings *s, struct kube_client *kube, char *err,
               size_t errlen);
/* Start the reflectors (none when kube is NULL). */
int cache_start(struct cache *c, char *err, size_t errlen);
void cache_cleanup(struct cache *c);

/* True once nodes and pods are listed and every CRD is listed or known absent. */
bool cache_ready(struct cache *c, char *why, size_t len);

/* Feed one object as a watch event would ("ADDED", "MODIFIED", "DELETED"). */
void cache_apply(struct cache *c, enum cache_source src, const char *type, const cJSON *obj);
/* Feed a whole list as a (re)list would: what it no longer has is forgotten. */
void cache_replace(struct cache *c, enum cache_source src, const cJSON *items);

/*
 * The engine's failure prc as the shell's code, with "<what>: <the engine's words>" in err:
 * out of memory is EXT_ENOMEM, no such object EXT_ENOTFOUND, an engine limit EXT_ETOOBIG,
 * anything else EXT_EINVAL. POLICY_OK is EXT_OK.
 */
int cache_engine_rc(int prc, const char *what, char *err, size_t errlen);

/* Is this pod one of muster's reservation pods (not a workload)? */
bool cache_is_reservation_pod(const struct cache *c, const cJSON *pod);

/* Queue names defined by Queue objects (not the implicit default). Under lock. */
bool cache_queue_defined(const struct cache *c, const char *name);

uint64_t cache_watch_restarts(const struct cache *c, enum cache_source src);
/* The source's last reply was read as protobuf (watchProtobuf; Pods and Nodes). */
bool cache_watch_protobuf(const struct cache *c, enum cache_source src);
const char *cache_source_name(enum cache_source src);
/* The source of objects of this apiVersion and kind; CACHE_SOURCE_COUNT: none. */
enum cache_source cache_source_of(const char *api_version, const char *kind);

#endif
