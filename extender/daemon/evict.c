/* evict.c - the engine's evictions carried out through the Eviction API; see evict.h. */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base.h"
#include "evict.h"

#define EVICT_RECENT 32      /* outcomes kept for /debug/state */
#define EVICT_REAL_TRIES 3   /* a real eviction after a passed dry run */
#define EVICT_BY_PODS_MAX 64 /* the reclaimer's pods told about it */
#define EVICT_WHY_MAX 512
#define EVICT_RETRY_MAX 64        /* gangs remembered after a refusal */
#define EVICT_RETRY_CAP_MS 300000 /* the longest pause between hand-backs */

struct evict_outcome {
    char *pod, *gang, *by, *why;
    enum policy_eviction_kind kind;
    const char *result; /* "evicted", "refused", "failed" */
};

struct evictor {
    struct evictor_config cfg;
    pthread_t thread;
    pthread_mutex_t lock; /* everything below */
    pthread_cond_t wake;
    bool stopping, kicked;
    int leading; /* -1 until housekeeping first said */
    int64_t next_look; /* source.look's next turn (ext_now_ms) */
    unsigned long passes;
    struct evict_outcome recent[EVICT_RECENT];
    size_t recent_next, nrecent;

    /* The worker thread's alone: gangs whose victims were refused, to hand back later. */
    struct evict_retry {
        char *gang;
        int64_t due, backoff; /* ms */
    } retry[EVICT_RETRY_MAX];
    size_t nretry;
    unsigned long handbacks;
};

/* One pod of a victim gang and how it went. */
struct evict_pod {
    const struct policy_eviction *ev;
    bool ok, tried; /* tried: its real eviction was posted */
    bool unchecked; /* refused because its budgets could not be read */
    char why[EVICT_WHY_MAX];
};

const char *evict_kind_name(enum policy_eviction_kind k)
{
    return k == POLICY_EVICT_PREEMPT ? "preempt" : "reclaim";
}

const char *evict_event_reason(enum policy_eviction_kind k)
{
    return k == POLICY_EVICT_PREEMPT ? "Preempted" : "Reclaimed";
}

static const char *or_unknown(const char *s)
{
    return s && *s ? s : "?";
}

/* ---- the engine as a source ------------------------------------------------ */

static int engine_take(void *ctx, struct policy_eviction **out, size_t *n)
{
    return policy_evictions_take(ctx, out, n);
}

static int engine_done(void *ctx, const char *ns, const char *name, bool ok, const char *why)
{
    return policy_eviction_done(ctx, ns, name, ok, why, ext_now_ms());
}

static int engine_look(void *ctx, int64_t now, int64_t quiet_ms, size_t max, size_t *decided)
{
    return policy_evict_unasked(ctx, now, quiet_ms, max, decided);
}

struct evict_source evict_engine_source(struct cache *cache)
{
    return (struct evict_source){
        .take = engine_take, .done = engine_done, .look = engine_look, .ctx = cache->engine};
}

/* ---- what happened, for metrics and /debug/state --------------------------- */

static void outcome_free(struct evict_outcome *o)
{
    free(o->pod);
    free(o->gang);
    free(o->by);
    free(o->why);
    memset(o, 0, sizeof(*o));
}

static void record(struct evictor *e, const struct evict_pod *p, const char *result)
{
    struct evict_outcome *o;
    char key[512];

    ext_series_add(
        ext_metric_with(e->cfg.evictions, (const char *[]){evict_kind_name(p->ev->kind), result}),
        1);
    snprintf(key, sizeof(key), "%s/%s", p->ev->namespace_, p->ev->name);
    pthread_mutex_lock(&e->lock);
    o = &e->recent[e->recent_next];
    outcome_free(o);
    *o = (struct evict_outcome){.pod = strdup(key),
                                .gang = p->ev->gang ? strdup(p->ev->gang) : NULL,
                                .by = p->ev->by ? strdup(p->ev->by) : NULL,
                                .why = p->ok ? NULL : strdup(p->why),
                                .kind = p->ev->kind,
                                .result = result};
    e->recent_next = (e->recent_next + 1) % EVICT_RECENT;
    e->nrecent += e->nrecent < EVICT_RECENT;
    pthread_mutex_unlock(&e->lock);
}

void evictor_debug(struct evictor *e, cJSON *array)
{
    if (!e || !array)
        return;
    pthread_mutex_lock(&e->lock);
    for (size_t i = 0; i < e->nrecent; i++) {
        const struct evict_outcome *o =
            &e->recent[(e->recent_next + EVICT_RECENT - e->nrecent + i) % EVICT_RECENT];
        cJSON *j = cJSON_CreateObject();

        cJSON_AddStringToObject(j, "pod", o->pod ? o->pod : "");
        cJSON_AddStringToObject(j, "gang", o->gang ? o->gang : "");
        cJSON_AddStringToObject(j, "by", o->by ? o->by : "");
        cJSON_AddStringToObject(j, "kind", evict_kind_name(o->kind));
        cJSON_AddStringToObject(j, "result", o->result);
        if (o->why)
            cJSON_AddStringToObject(j, "why", o->why);
        cJSON_AddItemToArray(array, j);
    }
    pthread_mutex_unlock(&e->lock);
}

/* ---- one eviction on the wire ---------------------------------------------- */

/* kube_request's err is "POST <path>: HTTP 429 TooManyRequests: <message>": drop the request line.
 */
static const char *after_request_line(const char *err, const char *path)
{
    size_t n = strlen(path);

    if (strncmp(err, "POST ", 5) == 0 && strncmp(err + 5, path, n) == 0 &&
        strncmp(err + 5 + n, ": ", 2) == 0)
        return err + 5 + n + 2;
    return err;
}

/* POST the pod's eviction, a dry run or the real one. why gets "pod ns/name: HTTP 429 ...". */
static int post_eviction(struct evictor *e, const struct policy_eviction *ev, bool dry_run,
                         char *why, size_t len)
{
    char path[600], err[EVICT_WHY_MAX] = "", *body;
    cJSON *obj, *meta, *opts;
    int rc;

    if (!kube_name_valid(ev->namespace_) || !kube_name_valid(ev->name))
        return ext_errf(why, len, EXT_EINVAL, "pod %s/%s: not a valid name", ev->namespace_,
                        ev->name);
    snprintf(path, sizeof(path), "/api/v1/namespaces/%s/pods/%s/eviction", ev->namespace_,
             ev->name);
    obj = cJSON_CreateObject();
    cJSON_AddStringToObject(obj, "apiVersion", "policy/v1");
    cJSON_AddStringToObject(obj, "kind", "Eviction");
    meta = cJSON_AddObjectToObject(obj, "metadata");
    cJSON_AddStringToObject(meta, "name", ev->name);
    cJSON_AddStringToObject(meta, "namespace", ev->namespace_);
    opts = cJSON_AddObjectToObject(obj, "deleteOptions");
    if (dry_run)
        cJSON_AddItemToArray(cJSON_AddArrayToObject(opts, "dryRun"), cJSON_CreateString("All"));
    /* The pod the engine chose, not one re-created under its name since. */
    if (ev->uid && *ev->uid)
        cJSON_AddStringToObject(cJSON_AddObjectToObject(opts, "preconditions"), "uid", ev->uid);
    body = cJSON_PrintUnformatted(obj);
    cJSON_Delete(obj);
    if (!body)
        return ext_errf(why, len, EXT_ENOMEM, "pod %s/%s: out of memory", ev->namespace_, ev->name);
    rc = kube_request(e->cfg.kube, "POST", path, "application/json", body, NULL, NULL, err,
                      sizeof(err));
    free(body);
    if (rc != EXT_OK)
        (void)ext_errf(why, len, rc, "pod %s/%s: %s", ev->namespace_, ev->name,
                       after_request_line(err, path));
    return rc;
}

static bool evictor_stopping(struct evictor *e)
{
    bool stopping;

    pthread_mutex_lock(&e->lock);
    stopping = e->stopping;
    pthread_mutex_unlock(&e->lock);
    return stopping;
}

/* Wait ms unless the evictor stops first; false if it does. */
static bool pause_ms(struct evictor *e, int ms)
{
    struct timespec ts;
    bool stopping;

    pthread_mutex_lock(&e->lock);
    ext_deadline_in(&ts, ms);
    while (!e->stopping && pthread_cond_timedwait(&e->wake, &e->lock, &ts) != ETIMEDOUT)
        ;
    stopping = e->stopping;
    pthread_mutex_unlock(&e->lock);
    return !stopping;
}

/* The real eviction, after the dry run passed. A pod already gone counts as evicted. */
static void evict_for_real(struct evictor *e, struct evict_pod *p)
{
    p->tried = true;
    for (int t = 0; t < EVICT_REAL_TRIES; t++) {
        int rc = post_eviction(e, p->ev, false, p->why, sizeof(p->why));

        /* 404: gone already; 409 on the uid precondition: the pod chosen is gone. */
        if (rc == EXT_OK || rc == EXT_ENOTFOUND || rc == EXT_ECONFLICT) {
            p->ok = true;
            return;
        }
        if (t + 1 < EVICT_REAL_TRIES && !pause_ms(e, e->cfg.retry_ms * (t + 1)))
            break;
    }
    p->ok = false;
}

/* ---- one victim gang, all or nothing --------------------------------------- */

/* Every pod of the gang refused with the same why. */
static void refuse_all(struct evict_pod *pods, size_t n, const char *why)
{
    for (size_t i = 0; i < n; i++) {
        pods[i].ok = false;
        snprintf(pods[i].why, sizeof(pods[i].why), "%s", why);
    }
}

/* The budgets of every namespace the gang's pods are in; the first that does not allow. */
static enum evict_budget budgets_allow(struct evictor *e, struct evict_pod *pods, size_t n,
                                       char *why, size_t len)
{
    const char **names = calloc(n, sizeof(*names));
    enum evict_budget verdict = EVICT_BUDGET_ALLOWS;

    if (!names) {
        (void)ext_errf(why, len, EXT_ENOMEM, "out of memory checking the gang's budgets");
        return EVICT_BUDGET_UNREAD; /* never evict what was not checked */
    }
    for (size_t i = 0; verdict == EVICT_BUDGET_ALLOWS && i < n; i++) {
        const char *ns = pods[i].ev->namespace_;
        size_t k = 0, j;

        for (j = 0; j < i && strcmp(pods[j].ev->namespace_, ns) != 0; j++)
            ;
        if (j < i)
            continue; /* that namespace was checked */
        for (j = i; j < n; j++)
            if (strcmp(pods[j].ev->namespace_, ns) == 0)
                names[k++] = pods[j].ev->name;
        verdict = evict_budget_check(e->cfg.kube, ns, names, k, why, len);
    }
    free(names);
    return verdict;
}

/* Can the whole gang go? Its budgets read and allowing, every pod's dry run passed. If not,
 * every pod is refused with the same why, and false. */
static bool gang_may_go(struct evictor *e, struct evict_pod *pods, size_t n, bool leading)
{
    char why[EVICT_WHY_MAX];

    if (evictor_stopping(e)) {
        refuse_all(pods, n, "muster is stopping");
        return false;
    }
    if (!leading) {
        refuse_all(pods, n,
                   "this replica's kube-scheduler does not hold the Lease; only the leader evicts");
        return false;
    }
    switch (budgets_allow(e, pods, n, why, sizeof(why))) {
    case EVICT_BUDGET_ALLOWS:
        break;
    case EVICT_BUDGET_UNREAD:
        for (size_t i = 0; i < n; i++)
            pods[i].unchecked = true;
        /* fall through */
    case EVICT_BUDGET_REFUSES:
        refuse_all(pods, n, why);
        return false;
    }
    for (size_t i = 0; i < n; i++) {
        if (post_eviction(e, pods[i].ev, true, why, sizeof(why)) != EXT_OK) {
            char all[EVICT_WHY_MAX];

            snprintf(all, sizeof(all), "dry run refused, nothing of the gang evicted: %s", why);
            refuse_all(pods, n, all);
            return false;
        }
    }
    return true;
}

/* ---- one decision, all or nothing ----------------------------------------------- */

/* The victims of one decision (the gang they make room for), gang after gang: pods[first[g]]
 * up to pods[first[g + 1]] are victim gang g's. */
struct decision {
    struct evict_pod *pods;
    size_t *first, ngangs;
};

/*
 * Every victim gang of the decision is checked before any pod is evicted: if one cannot go
 * (a budget, a dry run), none goes. The room the others would leave is of no use to the
 * gang they make room for without it, and a job killed for a plan that is then abandoned is
 * the costliest mistake muster can make.
 */
static void decide_on_wire(struct evictor *e, struct decision *d, bool leading)
{
    size_t refused = d->ngangs;

    for (size_t g = 0; g < d->ngangs && refused == d->ngangs; g++)
        if (!gang_may_go(e, d->pods + d->first[g], d->first[g + 1] - d->first[g], leading))
            refused = g;
    if (refused < d->ngangs) {
        const struct evict_pod *r = &d->pods[d->first[refused]];
        char why[EVICT_WHY_MAX];

        snprintf(why, sizeof(why), "gang %s, another victim of the same decision, was refused: %.*s",
                 or_unknown(r->ev->gang), EVICT_WHY_MAX / 2, r->why);
        for (size_t g = 0; g < d->ngangs; g++)
            if (g != refused)
                refuse_all(d->pods + d->first[g], d->first[g + 1] - d->first[g], why);
        return;
    }
    for (size_t i = 0; i < d->first[d->ngangs]; i++)
        evict_for_real(e, &d->pods[i]);
}

/* ---- telling the engine and people ------------------------------------------ */

/* The gang the victims made room for, and its pods (for their Event). */
struct by_pods {
    const char *gang;
    bool pending_only;
    size_t n;
    struct {
        char *ns, *name, *uid;
    } pod[EVICT_BY_PODS_MAX];
};

static void collect_by(const struct policy_pod_view *v, void *ctx)
{
    struct by_pods *b = ctx;

    if (b->n == EVICT_BY_PODS_MAX || !v->gang || strcmp(v->gang, b->gang) != 0 ||
        (b->pending_only && (!v->managed || v->phase != POLICY_POD_PENDING)))
        return;
    b->pod[b->n].ns = strdup(v->namespace_);
    b->pod[b->n].name = strdup(v->name);
    b->pod[b->n].uid = v->uid ? strdup(v->uid) : NULL;
    b->n += b->pod[b->n].ns && b->pod[b->n].name;
}

static void by_pods_cleanup(struct by_pods *b)
{
    for (size_t i = 0; i < b->n; i++) {
        free(b->pod[i].ns);
        free(b->pod[i].name);
        free(b->pod[i].uid);
    }
    b->n = 0;
}

/* "evicted for gang X of queue Y: WHY" -> "WHY"; any other text as it is. */
static const char *reason_tail(const char *reason)
{
    const char *colon = reason ? strstr(reason, ": ") : NULL;

    return colon ? colon + 2 : reason ? reason : "";
}

/* The engine learns every outcome; the reclaimer's pods are collected for their Event. */
static void report(struct evictor *e, const struct evict_pod *pods, size_t n, struct by_pods *by)
{
    struct cache *c = e->cfg.cache;

    pthread_mutex_lock(&c->lock);
    for (size_t i = 0; i < n; i++)
        e->cfg.source.done(e->cfg.source.ctx, pods[i].ev->namespace_, pods[i].ev->name, pods[i].ok,
                           pods[i].ok ? NULL : pods[i].why);
    if (by->gang) {
        policy_each_pod(c->engine, collect_by, by);
        /* Its planned members go back to kube-scheduler to be tried again. */
        cache_nudge_gang(c, by->gang);
    }
    pthread_mutex_unlock(&c->lock);
}

/* The counter's result for one pod: evicted, failed (after its gang's dry run passed),
 * unchecked (its budgets could not be read) or refused. */
static const char *pod_result(const struct evict_pod *p)
{
    return p->ok ? "evicted" : p->tried ? "failed" : p->unchecked ? "unchecked" : "refused";
}

/* Warning on each evicted pod with the engine's reason. Returns how many were evicted. */
static size_t tell_victims(struct evictor *e, const struct evict_pod *pods, size_t n)
{
    size_t evicted = 0;

    for (size_t i = 0; i < n; i++) {
        const struct policy_eviction *ev = pods[i].ev;
        char fallback[512];

        record(e, &pods[i], pod_result(&pods[i]));
        if (!pods[i].ok)
            continue;
        evicted++;
        snprintf(fallback, sizeof(fallback), "evicted for gang %s of queue %s", or_unknown(ev->by),
                 or_unknown(ev->by_queue));
        ext_events_post(e->cfg.events, ev->namespace_, ev->name, ev->uid,
                        evict_event_reason(ev->kind), "Warning",
                        ev->reason && *ev->reason ? ev->reason : fallback);
    }
    return evicted;
}

/* One Event on each of the reclaimer's pods naming the victims; one log line. */
static void tell_by(struct evictor *e, const struct evict_pod *pods, size_t n, size_t evicted,
                    const struct by_pods *by)
{
    const struct policy_eviction *first = pods[0].ev;
    const char *failed = NULL;
    char msg[1024];

    for (size_t i = 0; i < n && !failed; i++)
        failed = pods[i].ok ? NULL : pods[i].why;
    if (evicted)
        snprintf(msg, sizeof(msg),
                 "evicted gang %s of queue %s (%zu of %zu pods) for this gang: %s",
                 or_unknown(first->gang), or_unknown(first->queue), evicted, n,
                 reason_tail(first->reason));
    else
        snprintf(msg, sizeof(msg), "gang %s of queue %s was not evicted for this gang: %s",
                 or_unknown(first->gang), or_unknown(first->queue), or_unknown(failed));
    for (size_t i = 0; i < by->n; i++)
        ext_events_post(e->cfg.events, by->pod[i].ns, by->pod[i].name, by->pod[i].uid,
                        evicted ? evict_event_reason(first->kind) : "EvictionRefused",
                        evicted ? "Normal" : "Warning", msg);
    if (evicted == n)
        ext_log_info("gang evicted", "gang", first->gang, "for", first->by, "kind",
                     evict_kind_name(first->kind), "reason", first->reason);
    else if (evicted)
        ext_log_warn("gang partly evicted: an eviction failed after its dry run passed", "gang",
                     first->gang, "for", first->by, "error", failed);
    else
        ext_log_info("gang not evicted", "gang", first->gang, "for", first->by, "kind",
                     evict_kind_name(first->kind), "why", failed);
}

/*
 * A gang left partly evicted: a real eviction failed after every check passed (something
 * else spent the budget in between). muster stops there; each pod that stayed is told what
 * happens next: the engine drops the plan made on the gang's room and places the evicted
 * members back first when they are made again (a gang bound below its minimum is completed
 * before anything else is planned).
 */
static void tell_stayed(struct evictor *e, const struct evict_pod *pods, size_t n, size_t evicted)
{
    char msg[1024];

    if (evicted == 0 || evicted == n)
        return;
    for (size_t i = 0; i < n; i++) {
        const struct policy_eviction *ev = pods[i].ev;

        if (pods[i].ok)
            continue;
        snprintf(msg, sizeof(msg),
                 "gang %s was partly evicted for gang %s (%zu of %zu pods): %s; this pod stays, "
                 "and the evicted pods are placed back first when they are made again",
                 or_unknown(ev->gang), or_unknown(ev->by), evicted, n, pods[i].why);
        ext_events_post(e->cfg.events, ev->namespace_, ev->name, ev->uid, "EvictionIncomplete",
                        "Warning", msg);
    }
}

/* ---- after a refusal: the reclaimer handed back to kube-scheduler, later ------- */

static struct evict_retry *retry_find(struct evictor *e, const char *gang)
{
    for (size_t i = 0; i < e->nretry; i++)
        if (strcmp(e->retry[i].gang, gang) == 0)
            return &e->retry[i];
    return NULL;
}

static void retry_forget(struct evictor *e, struct evict_retry *r)
{
    free(r->gang);
    *r = e->retry[--e->nretry];
}

static void retry_later(struct evict_retry *r, int64_t now)
{
    r->due = now + r->backoff;
    r->backoff = r->backoff * 2 < EVICT_RETRY_CAP_MS ? r->backoff * 2 : EVICT_RETRY_CAP_MS;
}

/* A gang's victims were refused (or, evicted, it needs no more reminding). */
static void retry_note(struct evictor *e, const char *gang, bool refused)
{
    struct evict_retry *r = retry_find(e, gang);

    if (!refused) {
        if (r)
            retry_forget(e, r);
        return;
    }
    if (!r && e->nretry < EVICT_RETRY_MAX && (e->retry[e->nretry].gang = strdup(gang))) {
        r = &e->retry[e->nretry++];
        r->backoff = e->cfg.retry_refused_ms;
    }
    if (r && r->due == 0)
        retry_later(r, e->cfg.now());
}

/* Touch each pending pod of the gang, as housekeeping's nudges do. Returns how many. */
static size_t hand_back(struct evictor *e, const char *gang)
{
    struct by_pods pending = {.gang = gang, .pending_only = true};
    char path[600], stamp[32], err[256];
    cJSON *patch = cJSON_CreateObject();
    size_t n;

    pthread_mutex_lock(&e->cfg.cache->lock);
    policy_each_pod(e->cfg.cache->engine, collect_by, &pending);
    pthread_mutex_unlock(&e->cfg.cache->lock);
    snprintf(stamp, sizeof(stamp), "evict-%lu", ++e->handbacks);
    cJSON_AddStringToObject(
        cJSON_AddObjectToObject(cJSON_AddObjectToObject(patch, "metadata"), "annotations"),
        EXT_ANNOTATION_REQUEUE, stamp);
    for (size_t i = 0; i < pending.n; i++) {
        snprintf(path, sizeof(path), "/api/v1/namespaces/%s/pods/%s", pending.pod[i].ns,
                 pending.pod[i].name);
        if (kube_patch_merge(e->cfg.kube, path, patch, NULL, err, sizeof(err)) != EXT_OK)
            ext_log_debug("pod not handed back", "error", err);
    }
    cJSON_Delete(patch);
    if (pending.n) {
        snprintf(stamp, sizeof(stamp), "%zu", pending.n);
        ext_log_info("handed back to kube-scheduler after a refused eviction", "gang", gang, "pods",
                     stamp);
    }
    n = pending.n;
    by_pods_cleanup(&pending);
    return n;
}

/* The gangs whose time has come; a gang with nothing pending any more is forgotten. */
static void retry_due(struct evictor *e)
{
    int64_t now = e->cfg.now();

    for (size_t i = e->nretry; i-- > 0;) {
        struct evict_retry *r = &e->retry[i];

        if (now < r->due)
            continue;
        if (hand_back(e, r->gang) == 0)
            retry_forget(e, r);
        else
            retry_later(r, now);
    }
}

/* One victim gang's outcome told: the engine, its pods, the reclaimer's pods, the log. */
static void tell_gang(struct evictor *e, struct evict_pod *pods, size_t n, bool leading)
{
    struct by_pods by = {.gang = pods[0].ev->by};
    size_t evicted;

    report(e, pods, n, &by);
    evicted = tell_victims(e, pods, n);
    tell_stayed(e, pods, n, evicted);
    tell_by(e, pods, n, evicted, &by);
    if (by.gang && leading)
        retry_note(e, by.gang, evicted == 0);
    by_pods_cleanup(&by);
}

/* Out of memory before anything was tried: every eviction refused, so no room stays held. */
static void refuse_taken(struct evictor *e, const struct policy_eviction *v, size_t n)
{
    pthread_mutex_lock(&e->cfg.cache->lock);
    for (size_t i = 0; i < n; i++)
        e->cfg.source.done(e->cfg.source.ctx, v[i].namespace_, v[i].name, false,
                           "muster is out of memory");
    pthread_mutex_unlock(&e->cfg.cache->lock);
}

/* ---- the worker --------------------------------------------------------------- */

/* ---- gangs kube-scheduler does not ask about ---------------------------------- */

#define LOOK_EVERY_MS 500
#define LOOK_MAX 16 /* gangs per look, the first in queue order */

static bool looks(const struct evictor *e)
{
    return e->cfg.source.look && e->cfg.unasked_wait_ms > 0;
}

/* The engine decides; what it decided is taken by the pass that follows. One gang per hold of
 * the cache lock, so filters wait for one plan and eviction search, not sixteen (bench_policy
 * unasked: the longest hold 14-16 ms for sixteen at once, 2.6-4.4 ms one at a time). A gang
 * looked at is not quiet at the next call, so the sixteen are the same first sixteen. */
static void look_unasked(struct evictor *e)
{
    int64_t now = ext_now_ms();
    size_t decided = 0;
    char text[32];
    int rc = POLICY_OK;

    if (!cache_ready(e->cfg.cache, NULL, 0))
        return;
    for (size_t i = 0; i < LOOK_MAX && rc == POLICY_OK; i++) {
        size_t one = 0;

        pthread_mutex_lock(&e->cfg.cache->lock);
        rc = e->cfg.source.look(e->cfg.source.ctx, now, e->cfg.unasked_wait_ms, 1, &one);
        pthread_mutex_unlock(&e->cfg.cache->lock);
        decided += one;
    }
    if (rc != POLICY_OK)
        ext_log_error("out of memory looking at the gangs no filter asked about; trying again");
    if (decided == 0)
        return;
    snprintf(text, sizeof(text), "%zu", decided);
    ext_log_info("evictions decided for waiting gangs kube-scheduler did not ask about", "gangs",
                 text);
}

static bool same_key(const char *a, const char *b)
{
    return a == b || (a && b && strcmp(a, b) == 0);
}

/* Take what the engine decided and carry it out, one decision (the victims for one gang) at a
 * time, all or nothing, in order. */
static void evict_pass(struct evictor *e, bool leading)
{
    struct policy_eviction *v = NULL;
    struct evict_pod *pods;
    size_t *first;
    bool *handled;
    size_t n = 0;
    int rc;

    pthread_mutex_lock(&e->cfg.cache->lock);
    rc = e->cfg.source.take(e->cfg.source.ctx, &v, &n);
    pthread_mutex_unlock(&e->cfg.cache->lock);
    if (rc != POLICY_OK || n == 0) {
        policy_evictions_free(v, n);
        return;
    }
    pods = calloc(n, sizeof(*pods));
    first = calloc(n + 1, sizeof(*first));
    handled = calloc(n, sizeof(*handled));
    if (!pods || !first || !handled)
        refuse_taken(e, v, n);
    for (size_t i = 0; pods && first && handled && i < n; i++) {
        struct decision d = {.pods = pods, .first = first};
        size_t k = 0;

        if (handled[i])
            continue;
        /* every victim for v[i].by, gang after gang */
        for (size_t j = i; j < n; j++) {
            if (handled[j] || !same_key(v[j].by, v[i].by))
                continue;
            first[d.ngangs++] = k;
            for (size_t m = j; m < n; m++) {
                if (handled[m] || !same_key(v[m].by, v[i].by) || !same_key(v[m].gang, v[j].gang))
                    continue;
                handled[m] = true;
                pods[k++] = (struct evict_pod){.ev = &v[m]};
            }
        }
        first[d.ngangs] = k;
        decide_on_wire(e, &d, leading);
        for (size_t g = 0; g < d.ngangs; g++)
            tell_gang(e, pods + first[g], first[g + 1] - first[g], leading);
    }
    free(pods);
    free(first);
    free(handled);
    policy_evictions_free(v, n);
}

static void *evict_run(void *arg)
{
    struct evictor *e = arg;

    pthread_mutex_lock(&e->lock);
    for (;;) {
        bool look = false;
        int leading;

        while (!e->kicked && !e->stopping && !(look = looks(e) && ext_now_ms() >= e->next_look)) {
            struct timespec ts;

            if (!looks(e)) {
                pthread_cond_wait(&e->wake, &e->lock);
                continue;
            }
            ext_deadline_in(&ts, e->next_look - ext_now_ms());
            pthread_cond_timedwait(&e->wake, &e->lock, &ts);
        }
        if (e->stopping)
            break;
        e->kicked = false;
        if (look)
            e->next_look = ext_now_ms() + LOOK_EVERY_MS;
        leading = e->leading;
        pthread_mutex_unlock(&e->lock);
        if (look && leading == 1)
            look_unasked(e);
        /* Until housekeeping has asked the Lease, the evictions wait in the engine. */
        if (leading >= 0)
            evict_pass(e, leading == 1);
        if (leading == 1)
            retry_due(e);
        pthread_mutex_lock(&e->lock);
        e->passes++;
    }
    pthread_mutex_unlock(&e->lock);
    return NULL;
}

struct evictor *evictor_start(const struct evictor_config *cfg)
{
    struct evictor *e;
    pthread_condattr_t ca;

    if (!cfg || !cfg->kube || !cfg->cache || !cfg->source.take || !cfg->source.done)
        return NULL;
    if (!(e = calloc(1, sizeof(*e))))
        return NULL;
    e->cfg = *cfg;
    if (e->cfg.retry_ms <= 0)
        e->cfg.retry_ms = 500;
    if (e->cfg.retry_refused_ms <= 0)
        e->cfg.retry_refused_ms = 30000;
    if (!e->cfg.now)
        e->cfg.now = ext_now_ms;
    e->leading = -1;
    pthread_mutex_init(&e->lock, NULL);
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&e->wake, &ca);
    pthread_condattr_destroy(&ca);
    if (pthread_create(&e->thread, NULL, evict_run, e) != 0) {
        pthread_mutex_destroy(&e->lock);
        pthread_cond_destroy(&e->wake);
        free(e);
        return NULL;
    }
    return e;
}

void evictor_stop(struct evictor *e)
{
    if (!e)
        return;
    pthread_mutex_lock(&e->lock);
    e->stopping = true;
    pthread_cond_broadcast(&e->wake);
    pthread_mutex_unlock(&e->lock);
    pthread_join(e->thread, NULL);
    for (size_t i = 0; i < EVICT_RECENT; i++)
        outcome_free(&e->recent[i]);
    for (size_t i = 0; i < e->nretry; i++)
        free(e->retry[i].gang);
    pthread_mutex_destroy(&e->lock);
    pthread_cond_destroy(&e->wake);
    free(e);
}

void evictor_kick(struct evictor *e)
{
    if (!e)
        return;
    pthread_mutex_lock(&e->lock);
    e->kicked = true;
    pthread_cond_broadcast(&e->wake);
    pthread_mutex_unlock(&e->lock);
}

void evictor_lead(struct evictor *e, bool leading)
{
    if (!e)
        return;
    pthread_mutex_lock(&e->lock);
    e->leading = leading;
    pthread_mutex_unlock(&e->lock);
    evictor_kick(e);
}

unsigned long evictor_passes(struct evictor *e)
{
    unsigned long n;

    if (!e)
        return 0;
    pthread_mutex_lock(&e->lock);
    n = e->passes;
    pthread_mutex_unlock(&e->lock);
    return n;
}
