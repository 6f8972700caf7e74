/*
 * housekeeping.c - Queue status writer (usage and fair share), GangSpecMismatch
 * Events and reservation pod reaper; each tick tells the evictor who leads. It writes
 * only while this replica's kube-scheduler leads (lease.h): the standby's
 * engine has no plans, so its Queue status would be wrong and its reaper
 * would delete the reservation pods the leader is waiting on.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "daemon_int.h"
#include "base.h"
#include "gpushare.h"
#include "housekeeping.h"
#include "lease.h"
#include "mismatch.h"

#define QUEUE_STATUS_PERIOD_MS 2000
#define REAP_EVERY 3 /* periods: reservation pods are reaped every 6 s */

struct housekeeping {
    struct ext_daemon *d;
    pthread_t thread;
    pthread_mutex_t lock;
    pthread_cond_t wake;
    bool stopping;
    int leading;    /* -1 before the first tick */
    cJSON *written; /* name -> last status text written */
    cJSON *pending; /* name -> status object to write, built under the cache lock */
    /* The GangSpecMismatch Events told so far. */
    struct gang_mismatch *mismatch;
};

static cJSON *resources_json(const struct policy_resources *r)
{
    cJSON *o = cJSON_CreateObject();
    static const enum kube_quantity_style styles[POLICY_RES_COUNT] = {
        KUBE_QUANTITY_MILLI, KUBE_QUANTITY_BINARY, KUBE_QUANTITY_DECIMAL};

    for (int i = 0; i < POLICY_RES_COUNT; i++) {
        char text[64];

        kube_quantity_format(r->v[i], styles[i], text, sizeof(text));
        cJSON_AddStringToObject(o, policy_resource_name(i), text);
    }
    return o;
}

/*
 * Fair over time: U' as the division last took it (what muster reads back after a restart),
 * the time it was taken while there is any (a queue that used nothing has nothing to decay),
 * and the fair share the queue would have if usage did not count.
 */
static void add_recent_usage(cJSON *status, const struct policy_queue_view *v)
{
    cJSON *usage = kube_recent_usage_json(&v->recent_usage), *n;
    bool any = false;

    cJSON_ArrayForEach(n, usage)
    {
        any = any || n->valuedouble > 0; /* as written: what a restart reads back */
    }
    cJSON_AddItemToObject(status, "recentUsage", usage);
    if (any) {
        int64_t wall = ext_wall_ms() - (ext_now_ms() - v->recent_usage_at);
        time_t t = (time_t)(wall / 1000);
        struct tm tm;
        char at[32];

        gmtime_r(&t, &tm);
        strftime(at, sizeof(at), "%Y-%m-%dT%H:%M:%SZ", &tm);
        cJSON_AddStringToObject(status, "recentUsageAt", at);
    }
    cJSON_AddItemToObject(status, "fairShareWithoutRecentUsage",
                          resources_json(&v->fair_share_without_usage));
}

static void build_one(const struct policy_queue_view *v, void *ctx)
{
    struct housekeeping *qs = ctx;
    cJSON *status;

    if (!cache_queue_defined(&qs->d->cache, v->name))
        return;
    status = cJSON_CreateObject();
    cJSON_AddItemToObject(status, "allocated", resources_json(&v->allocated));
    cJSON_AddItemToObject(status, "reserved", resources_json(&v->reserved));
    cJSON_AddItemToObject(status, "fairShare", resources_json(&v->fair_share));
    cJSON_AddNumberToObject(status, "pendingGangs", v->pending_gangs);
    if (v->has_recent_usage)
        add_recent_usage(status, v);
    cJSON_AddItemToObject(qs->pending, v->name, status);
}

static void write_changed(struct housekeeping *qs)
{
    cJSON *status;

    cJSON_ArrayForEach(status, qs->pending)
    {
        char *text = cJSON_PrintUnformatted(status), path[512], err[512];
        const cJSON *last = cJSON_GetObjectItemCaseSensitive(qs->written, status->string);
        cJSON *patch;

        if (!text || (cJSON_IsString(last) && strcmp(last->valuestring, text) == 0)) {
            free(text);
            continue;
        }
        patch = cJSON_CreateObject();
        cJSON_AddItemReferenceToObject(patch, "status", status);
        snprintf(path, sizeof(path), "/apis/muster.dev/v1alpha1/queues/%s", status->string);
        if (kube_patch_status(qs->d->kube, path, patch, NULL, err, sizeof(err)) == EXT_OK) {
            cJSON_DeleteItemFromObjectCaseSensitive(qs->written, status->string);
            cJSON_AddStringToObject(qs->written, status->string, text);
        } else {
            ext_log_debug("queue status not written", "queue", status->string, "error", err);
        }
        cJSON_Delete(patch);
        free(text);
    }
}

/* ---- nudging kube-scheduler -------------------------------------------------------- */

/* A pod to hand back, and the refusal it is handed back after (policy_pod_handed_back). */
struct handback {
    char *ns, *name;
    uint64_t refusal;
};

struct waiting {
    const struct cache *cache;
    bool all;     /* every pending pod, after a Queue or gang spec changed */
    bool planned; /* every planned pod: a gang to nudge could not be recorded */
    struct handback *pods;
    size_t n, cap;
    bool lost; /* a pod could not be kept (out of memory): the nudges stay for next time */
};

/* The nudge listed for this gang, or NULL. */
static const struct cache_nudge *gang_listed(const struct cache *c, const char *gang)
{
    for (size_t i = 0; i < c->nnudge_gangs; i++)
        if (strcmp(c->nudge_gangs[i].gang, gang) == 0)
            return &c->nudge_gangs[i];
    return NULL;
}

static void waiting_add(struct waiting *w, const struct policy_pod_view *v)
{
    struct handback *h;

    if (w->n == w->cap) {
        size_t cap = w->cap ? w->cap * 2 : 64;
        struct handback *more = realloc(w->pods, cap * sizeof(*more));

        if (!more) {
            w->lost = true;
            return;
        }
        w->pods = more;
        w->cap = cap;
    }
    h = &w->pods[w->n];
    *h = (struct handback){strdup(v->namespace_), strdup(v->name), v->refusal};
    if (!h->ns || !h->name) {
        free(h->ns);
        free(h->name);
        w->lost = true;
        return;
    }
    w->n++;
}

static void collect_waiting(const struct policy_pod_view *v, void *ctx)
{
    struct waiting *w = ctx;
    const struct cache_nudge *listed;

    if (!v->managed)
        return;
    /* Pending pods muster's last answer turned away, after a spec change: one muster
     * never answered, or last said yes to, is not parked on muster's word and is retried
     * without a touch; one handed back since its last refusal is on its way back already.
     * The planned members of a gang that was planned after kube-scheduler had turned some
     * away ("3 of 5 members exist"); the refused members of a gang listed with them. */
    listed = gang_listed(w->cache, v->gang);
    if (!(v->refused && (w->all || (listed && listed->refused))) &&
        !(v->phase == POLICY_POD_PLANNED && (w->planned || listed)))
        return;
    waiting_add(w, v);
}

/* PATCH one pod's muster.dev/requeue; EXT_OK once kube-scheduler will see it change. */
static int hand_back(struct housekeeping *qs, const struct handback *h, const cJSON *patch)
{
    char path[600], err[256];

    snprintf(path, sizeof(path), "/api/v1/namespaces/%s/pods/%s", h->ns, h->name);
    return kube_patch_merge(qs->d->kube, path, patch, NULL, err, sizeof(err));
}

/*
 * kube-scheduler retries pods an extender turned away on any cluster event,
 * but a Queue's new limit or a RayCluster's new size is not one it watches.
 * Touching the waiting pods is: their annotation muster.dev/requeue changes.
 * Each pod once per refusal: a pod handed back is retried (and answered, maybe
 * refused again) before another change hands it back again.
 */
static void nudge_waiting(struct housekeeping *qs, unsigned tick)
{
    struct cache *c = &qs->d->cache;
    struct waiting w = {.cache = c};
    char stamp[32];
    cJSON *patch;
    bool *done;

    pthread_mutex_lock(&c->lock);
    w.all = c->nudge;
    w.planned = c->nudge_planned;
    if (c->nudge || c->nudge_planned || c->nnudge_gangs)
        policy_each_pod(c->engine, collect_waiting, &w);
    if (!w.lost && w.all)
        policy_parked_hints_spent(c->engine); /* a restart's parked pods: handed back once */
    if (!w.lost)
        cache_nudges_clear(c); /* else all of them again next period: none is dropped */
    pthread_mutex_unlock(&c->lock);
    if (w.lost)
        ext_log_error("out of memory listing the pods to hand back; trying again next period");
    if (w.n == 0) {
        free(w.pods);
        return;
    }
    snprintf(stamp, sizeof(stamp), "%u", tick);
    patch = cJSON_CreateObject();
    cJSON_AddStringToObject(
        cJSON_AddObjectToObject(cJSON_AddObjectToObject(patch, "metadata"), "annotations"),
        EXT_ANNOTATION_REQUEUE, stamp);
    done = calloc(w.n, sizeof(*done));
    for (size_t i = 0; i < w.n; i++) {
        bool ok = hand_back(qs, &w.pods[i], patch) == EXT_OK;

        if (done)
            done[i] = ok;
    }
    pthread_mutex_lock(&c->lock);
    for (size_t i = 0; i < w.n; i++) {
        if (done && done[i])
            policy_pod_handed_back(c->engine, w.pods[i].ns, w.pods[i].name, w.pods[i].refusal);
        free(w.pods[i].ns);
        free(w.pods[i].name);
    }
    pthread_mutex_unlock(&c->lock);
    free(done);
    free(w.pods);
    cJSON_Delete(patch);
    snprintf(stamp, sizeof(stamp), "%zu", w.n);
    ext_log_info("waiting pods handed back to kube-scheduler", "pods", stamp);
}

/* ---- leading ---------------------------------------------------------------------- */

/* Ask the Lease once per tick; log and count every change. */
static bool check_leading(struct housekeeping *qs)
{
    const struct cfg_leader_election *le = &qs->d->settings.leader_election;
    char holder[256] = "", lease[512];
    bool leading = lease_leading(qs->d->kube, le, holder, sizeof(holder));

    ext_series_set(ext_metric_with(qs->d->leader, NULL), leading);
    /* The evictor evicts only on the leader; this is also its tick. */
    evictor_lead(qs->d->evictor, leading);
    if ((int)leading == qs->leading)
        return leading;
    qs->leading = leading;
    /* What the other replica wrote meanwhile is not what we last wrote. */
    cJSON_Delete(qs->written);
    qs->written = cJSON_CreateObject();
    if (!le->enabled)
        return leading;
    snprintf(lease, sizeof(lease), "%s/%s", le->lease_namespace, le->lease_name);
    if (leading)
        ext_log_info("housekeeping active: this replica's kube-scheduler holds the Lease", "lease",
                     lease, "holder", holder);
    else
        ext_log_info("housekeeping standby: this replica's kube-scheduler does not hold the Lease",
                     "lease", lease, "holder", holder);
    return leading;
}

static void write_queues(struct housekeeping *qs)
{
    if (qs->written == NULL)
        return;
    qs->pending = cJSON_CreateObject();
    pthread_mutex_lock(&qs->d->cache.lock);
    policy_each_queue(qs->d->cache.engine, build_one, qs);
    pthread_mutex_unlock(&qs->d->cache.lock);
    write_changed(qs);
    cJSON_Delete(qs->pending);
    qs->pending = NULL;
}

/* Fair over time: every replica counts what it sees bound, leading or not, so a standby that
 * takes over weighs the same usage; only once every watch has listed (what runs, what the
 * nodes offer). */
static void sample_usage(struct housekeeping *qs)
{
    struct cache *c = &qs->d->cache;
    int rc;

    if (!cache_ready(c, NULL, 0))
        return;
    pthread_mutex_lock(&c->lock);
    rc = policy_usage_sample(c->engine, ext_now_ms());
    pthread_mutex_unlock(&c->lock);
    if (rc != POLICY_OK)
        ext_log_error("queue usage not all counted; the queues missed count from the next period",
                      "error", policy_strerror(rc));
}

void housekeeping_tick(struct housekeeping *qs, unsigned tick)
{
    sample_usage(qs);
    if (!check_leading(qs))
        return;
    write_queues(qs);
    gang_mismatch_report(qs->mismatch, &qs->d->cache, qs->d->events);
    nudge_waiting(qs, tick);
    if (tick % REAP_EVERY == 0 && cache_ready(&qs->d->cache, NULL, 0))
        gpu_share_reap(&qs->d->share);
}

static void *run(void *arg)
{
    struct housekeeping *qs = arg;

    pthread_mutex_lock(&qs->lock);
    for (unsigned tick = 0; !qs->stopping; tick++) {
        struct timespec ts;

        pthread_mutex_unlock(&qs->lock);
        housekeeping_tick(qs, tick);
        pthread_mutex_lock(&qs->lock);
        ext_deadline_in(&ts, QUEUE_STATUS_PERIOD_MS);
        while (!qs->stopping && pthread_cond_timedwait(&qs->wake, &qs->lock, &ts) != ETIMEDOUT)
            ;
    }
    pthread_mutex_unlock(&qs->lock);
    return NULL;
}

struct housekeeping *housekeeping_new(struct ext_daemon *d)
{
    struct housekeeping *qs = calloc(1, sizeof(*qs));
    pthread_condattr_t ca;

    if (!qs || !(qs->written = cJSON_CreateObject()) || !(qs->mismatch = gang_mismatch_new())) {
        if (qs)
            cJSON_Delete(qs->written);
        free(qs);
        return NULL;
    }
    qs->d = d;
    qs->leading = -1;
    pthread_mutex_init(&qs->lock, NULL);
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&qs->wake, &ca);
    pthread_condattr_destroy(&ca);
    return qs;
}

void housekeeping_free(struct housekeeping *qs)
{
    if (!qs)
        return;
    cJSON_Delete(qs->written);
    gang_mismatch_free(qs->mismatch);
    pthread_mutex_destroy(&qs->lock);
    pthread_cond_destroy(&qs->wake);
    free(qs);
}

struct housekeeping *housekeeping_start(struct ext_daemon *d)
{
    struct housekeeping *qs = housekeeping_new(d);

    if (qs && pthread_create(&qs->thread, NULL, run, qs) != 0) {
        housekeeping_free(qs);
        return NULL;
    }
    return qs;
}

void housekeeping_stop(struct housekeeping *qs)
{
    if (!qs)
        return;
    pthread_mutex_lock(&qs->lock);
    qs->stopping = true;
    pthread_cond_signal(&qs->wake);
    pthread_mutex_unlock(&qs->lock);
    pthread_join(qs->thread, NULL);
    housekeeping_free(qs);
}
