/*
 * evict.h - the evictor: carrying out the engine's evictions (reclaim between
 * queues, preemption inside one) through the Eviction API, off the request
 * path.
 *
 * A worker thread takes the evictions the engine decided (under the cache
 * lock) whenever a filter says some were decided and on every housekeeping
 * tick. Twice a second it also has the engine look at the waiting gangs
 * kube-scheduler does not ask about (policy_evict_unasked: no node passed
 * kube-scheduler's own filters, so no filter decided their evictions). It
 * handles the evictions one decision (the victims for one gang) at a time,
 * all or nothing, checking each victim gang in turn:
 *
 *   1. the gang's PodDisruptionBudgets, read once: a budget that allows fewer
 *      disruptions than the gang has running pods under it refuses the gang
 *      (the per-pod dry runs below cannot see that: a dry run does not spend
 *      the budget);
 *   2. a dry-run eviction of every pod (policy/v1 Eviction, dryRun All, the
 *      pod's uid as precondition);
 *   3. only if every victim gang of the decision passed 1 and 2, the real
 *      evictions.
 *
 * A refusal in 1 or 2 evicts nothing of that decision (the other victims'
 * room is of no use to the waiting gang without it) and is reported to the
 * engine for every pod of it (policy_eviction_done, false, one line why);
 * budgets or pods that cannot be read refuse too (fail closed). A real
 * eviction that fails after the dry run passed is retried a few times; if it
 * still fails the gang is left partly evicted: the pods that stayed are
 * reported refused (the engine completes the gang first when its evicted pods
 * come back) and get a Warning Event EvictionIncomplete.
 *
 * After a refusal the engine abandons its plan, and nothing kube-scheduler
 * watches changes when the obstacle goes (a budget is deleted or relaxed):
 * the gang's pending pods are handed back to kube-scheduler (annotation
 * muster.dev/requeue) after 30 s, then after 1, 2, 4 and every 5 minutes,
 * until its pods are placed or an eviction for it goes through.
 *
 * Each evicted pod gets a Warning Event `Reclaimed` (or `Preempted`) with the
 * engine's reason, the pods of the gang it made room for a Normal one naming
 * the victims; counter muster_evictions_total{kind,result} counts every pod.
 * Only the leading replica evicts (lease.h): housekeeping tells the evictor
 * each tick. Until it first did, evictions wait in the engine; while this
 * replica does not lead they are refused, so the engine's held room is freed.
 */
#ifndef MUSTER_EVICT_H
#define MUSTER_EVICT_H

#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cache.h"
#include "events.h"
#include "kube.h"
#include "policy.h"

/*
 * Where evictions come from and where their outcomes go: the engine
 * (evict_engine_source), or a fake in tests. Both calls are made with the
 * cache lock held. take hands over a heap array freed with
 * policy_evictions_free.
 */
struct evict_source {
    int (*take)(void *ctx, struct policy_eviction **out, size_t *n);
    int (*done)(void *ctx, const char *ns, const char *name, bool ok, const char *why);
    /* policy_evict_unasked's shape; NULL: never looked for. */
    int (*look)(void *ctx, int64_t now, int64_t quiet_ms, size_t max, size_t *decided);
    void *ctx;
};

/* policy_evictions_take / policy_eviction_done on cache->engine. */
struct evict_source evict_engine_source(struct cache *cache);

struct evictor_config {
    struct kube_client *kube;     /* required */
    struct cache *cache;          /* its lock, its engine for the reclaimer's pods, nudges */
    struct evict_source source;   /* copied */
    struct ext_events *events;    /* NULL: no Events */
    struct ext_metric *evictions; /* counter {kind,result}; NULL: not counted */
    int retry_ms;                 /* pause between tries of a failed real eviction; 0 = 500 */
    int retry_refused_ms;         /* first hand-back after a refusal (doubling); 0 = 30000 */
    int64_t (*now)(void);         /* the hand-backs' clock, ms; NULL = ext_now_ms (tests move it) */
    int64_t unasked_wait_ms;      /* source.look's quiet time (evictions.unaskedWait); 0 = no look */
};

struct evictor;

/* Start the worker; cfg is copied, what it points to is borrowed. NULL on failure. */
struct evictor *evictor_start(const struct evictor_config *cfg);
/*
 * Stop the worker: the gang in hand is finished, evictions taken and not yet
 * begun are reported refused ("muster is stopping"). NULL is a no-op.
 */
void evictor_stop(struct evictor *e);

/* A filter decided evictions: take them soon. Never blocks on the API server. NULL is a no-op. */
void evictor_kick(struct evictor *e);
/* Housekeeping's tick: whether this replica leads now; also a kick. NULL is a no-op. */
void evictor_lead(struct evictor *e, bool leading);
/* Passes finished since start (each take that found evictions and was carried out). */
unsigned long evictor_passes(struct evictor *e);

/* The last outcomes, newest last, as {pod, gang, by, kind, result, why} objects into array. */
void evictor_debug(struct evictor *e, cJSON *array);

/* Reason words of the Events and values of the counter's labels. */
const char *evict_kind_name(enum policy_eviction_kind k);    /* "reclaim", "preempt" */
const char *evict_event_reason(enum policy_eviction_kind k); /* "Reclaimed", "Preempted" */

/* ---- the budget check (evict_budget.c) ------------------------------------ */

enum evict_budget {
    EVICT_BUDGET_ALLOWS,  /* no budget stands in the way */
    EVICT_BUDGET_REFUSES, /* a budget allows fewer disruptions, or is not processed yet */
    EVICT_BUDGET_UNREAD,  /* the budgets or the pods under them could not be read */
};

/*
 * Would the PodDisruptionBudgets of namespace ns let all n pods go at once?
 * Reads the namespace's budgets (none: allowed at once) and each pod's labels
 * and phase. Like the API server, a budget counts only Running pods. REFUSES
 * with a one-line why when a budget covering some of them allows fewer
 * disruptions than that, or has not been processed yet. What cannot be read
 * (an error, a 429, a timeout, a list over the client's reply cap) is UNREAD,
 * with why: the gang is not evicted then either (fail closed), since a dry
 * run does not spend a budget and cannot stand in for this count.
 */
enum evict_budget evict_budget_check(struct kube_client *kube, const char *ns,
                                     const char *const *names, size_t n, char *why, size_t len);

/* Does a metav1.LabelSelector match these labels (an object)? NULL selector: no; {}: yes. */
bool evict_selector_matches(const cJSON *selector, const cJSON *labels);

#endif
