/* events.c - deduplicated, rate-limited Events from a worker thread. */
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cache.h"
#include "events.h"
#include "base.h"

#define EVENTS_QUEUE_MAX 1024
#define EVENTS_DEDUP_SLOTS 4096
#define EVENTS_DEDUP_MS 60000

#define EVENTS_SERIES_SLOTS 4096
#define EVENTS_GANG_SLOTS 8192
#define EVENTS_GANG_WINDOW 8 /* a gang id is kept in one of this many slots from its hash */
#define EVENT_NAME_MAX 253

enum pending_op {
    EV_POST,         /* a plain Event, named by the API server */
    EV_WAITING,      /* the pod's GangWaiting series: created once, then patched */
    EV_WITHDRAW,     /* delete the gang's GangWaiting Events: one request */
    EV_WITHDRAW_POD, /* delete one pod's GangWaiting Event, by its name */
};

struct pending_event {
    enum pending_op op;
    char *ns, *pod, *uid, *reason, *type, *message;
    uint64_t series;  /* EV_WAITING, EV_WITHDRAW_POD: its slot's key */
    char gang_id[17]; /* its gang's label value (not EV_POST) */
};

/* A pod's GangWaiting series: one Event object, named from the pod, updated in place. */
struct series {
    uint64_t key;  /* hash of namespace, pod and uid; 0: free */
    uint64_t gang; /* its gang's id */
    uint64_t msg;  /* hash of the last message queued */
    int64_t sent_ms;
    int32_t count; /* of the object on the API server, as last written; 0: not known to exist */
};

struct ext_events {
    struct kube_client *kube;
    int64_t (*now_ms)(void); /* the once-a-minute rule's clock */
    pthread_t thread;
    pthread_mutex_t lock;
    pthread_cond_t wake;
    bool stopping;
    struct pending_event queue[EVENTS_QUEUE_MAX];
    size_t head, count;
    uint64_t dropped;
    struct {
        uint64_t hash;
        int64_t sent_ms;
    } recent[EVENTS_DEDUP_SLOTS];
    struct series series[EVENTS_SERIES_SLOTS];
    /* Gangs with a GangWaiting Event out: only these are withdrawn when bound. */
    struct {
        uint64_t id;
        int64_t at_ms;
    } gangs[EVENTS_GANG_SLOTS];
};

static uint64_t hash_parts(const char *const *parts, size_t n)
{
    uint64_t h = 1469598103934665603ULL;

    for (size_t i = 0; i < n; i++) {
        for (const char *s = parts[i]; s && *s; s++)
            h = (h ^ (unsigned char)*s) * 1099511628211ULL;
        h = (h ^ 0xff) * 1099511628211ULL;
    }
    return h ? h : 1; /* 0 marks a free slot */
}

static uint64_t gang_id_of(const char *ns, const char *gang)
{
    const char *parts[] = {ns, gang};

    return hash_parts(parts, 2);
}

/* "<pod>.<16 hex>": one name per pod (and uid), like client-go's "<pod>.<hex>" */
static void series_name(char *buf, size_t len, const char *pod, uint64_t key)
{
    snprintf(buf, len, "%.*s.%016llx", EVENT_NAME_MAX - 17, pod, (unsigned long long)key);
}

static bool gang_waited(struct ext_events *e, uint64_t id, bool forget)
{
    for (size_t i = 0; i < EVENTS_GANG_WINDOW; i++) {
        size_t slot = (id + i) % EVENTS_GANG_SLOTS;

        if (e->gangs[slot].id == id) {
            if (forget)
                e->gangs[slot].id = 0;
            return true;
        }
    }
    return false;
}

/* Remember that gang id has a GangWaiting Event out; a full window loses its oldest. */
static void gang_remember(struct ext_events *e, uint64_t id, int64_t now)
{
    size_t pick = id % EVENTS_GANG_SLOTS;

    for (size_t i = 0; i < EVENTS_GANG_WINDOW; i++) {
        size_t slot = (id + i) % EVENTS_GANG_SLOTS;

        if (e->gangs[slot].id == id || e->gangs[slot].id == 0) {
            pick = slot;
            break;
        }
        if (e->gangs[slot].at_ms < e->gangs[pick].at_ms)
            pick = slot;
    }
    e->gangs[pick].id = id;
    e->gangs[pick].at_ms = now;
}

static void event_free(struct pending_event *ev)
{
    free(ev->ns);
    free(ev->pod);
    free(ev->uid);
    free(ev->reason);
    free(ev->type);
    free(ev->message);
    memset(ev, 0, sizeof(*ev));
}

/* The worker's part of a series: patch the object where it exists, else create it. */
static void send_waiting(struct ext_events *e, const struct pending_event *ev)
{
    struct series *sl = &e->series[ev->series % EVENTS_SERIES_SLOTS];
    struct kube_event ke = {.ns = ev->ns, .pod = ev->pod, .pod_uid = ev->uid,
                            .reason = "GangWaiting", .message = ev->message, .type = "Warning",
                            .gang_id = ev->gang_id};
    char name[EVENT_NAME_MAX + 1], err[256];
    int32_t count;
    int rc = EXT_OK;

    series_name(name, sizeof(name), ev->pod, ev->series);
    ke.name = name;
    pthread_mutex_lock(&e->lock);
    count = sl->key == ev->series ? sl->count : 0;
    pthread_mutex_unlock(&e->lock);
    if (count > 0) {
        rc = kube_event_repeat(e->kube, ev->ns, name, ev->message, count + 1, err, sizeof(err));
        if (rc == EXT_ENOTFOUND) /* withdrawn, or expired: a new one */
            count = 0;
        else
            count = rc == EXT_OK ? count + 1 : count;
    }
    if (count == 0) {
        rc = kube_event_post(e->kube, &ke, err, sizeof(err));
        count = rc == EXT_OK ? 1 : 0;
        /* Ours from before a restart (or a slot another pod took since): patched, its count
         * not known. */
        if (rc == EXT_ECONFLICT &&
            (rc = kube_event_repeat(e->kube, ev->ns, name, ev->message, 0, err, sizeof(err))) ==
                EXT_OK)
            count = 1;
    }
    if (rc != EXT_OK)
        ext_log_debug("event not posted", "pod", ev->pod, "error", err);
    pthread_mutex_lock(&e->lock);
    if (sl->key == ev->series)
        sl->count = count;
    pthread_mutex_unlock(&e->lock);
}

/* The gang's Events (or one pod's, key) are deleted, or, failing that, no longer known: a reason
 * after this creates its pod's Event again. Waits queued before the withdrawal were sent before
 * it. */
static void series_forget(struct ext_events *e, const char *gang_id, uint64_t key)
{
    uint64_t id = strtoull(gang_id, NULL, 16);

    pthread_mutex_lock(&e->lock);
    for (size_t i = 0; i < EVENTS_SERIES_SLOTS; i++)
        if (e->series[i].key && (key ? e->series[i].key == key : e->series[i].gang == id))
            e->series[i].count = 0;
    pthread_mutex_unlock(&e->lock);
}

static void send_one(struct ext_events *e, const struct pending_event *ev)
{
    char err[256];
    int rc = EXT_OK;

    switch (ev->op) {
    case EV_POST:
        rc = kube_event_create(e->kube, ev->ns, ev->pod, ev->uid, ev->reason, ev->message,
                               ev->type, err, sizeof(err));
        break;
    case EV_WAITING:
        send_waiting(e, ev);
        break;
    case EV_WITHDRAW:
        rc = kube_events_withdraw(e->kube, ev->ns, ev->gang_id, "GangWaiting", err, sizeof(err));
        series_forget(e, ev->gang_id, 0);
        break;
    case EV_WITHDRAW_POD: {
        char name[EVENT_NAME_MAX + 1];

        series_name(name, sizeof(name), ev->pod, ev->series);
        rc = kube_event_delete(e->kube, ev->ns, name, err, sizeof(err));
        series_forget(e, ev->gang_id, ev->series);
        break;
    }
    }
    if (rc != EXT_OK)
        ext_log_debug("event not posted", "pod", ev->pod ? ev->pod : ev->gang_id, "error", err);
}

static void *events_run(void *arg)
{
    struct ext_events *e = arg;

    pthread_mutex_lock(&e->lock);
    for (;;) {
        struct pending_event ev;

        while (e->count == 0 && !e->stopping)
            pthread_cond_wait(&e->wake, &e->lock);
        if (e->count == 0)
            break;
        ev = e->queue[e->head];
        e->head = (e->head + 1) % EVENTS_QUEUE_MAX;
        e->count--;
        pthread_mutex_unlock(&e->lock);
        send_one(e, &ev);
        event_free(&ev);
        pthread_mutex_lock(&e->lock);
    }
    pthread_mutex_unlock(&e->lock);
    return NULL;
}

struct ext_events *ext_events_new(struct kube_client *kube)
{
    struct ext_events *e = calloc(1, sizeof(*e));

    if (!e)
        return NULL;
    e->kube = kube;
    e->now_ms = ext_now_ms;
    pthread_mutex_init(&e->lock, NULL);
    pthread_cond_init(&e->wake, NULL);
    if (pthread_create(&e->thread, NULL, events_run, e) != 0) {
        free(e);
        return NULL;
    }
    return e;
}

/* The key of a pod's series: its namespace, name and uid. */
static uint64_t series_key(const char *ns, const char *pod, const char *uid)
{
    const char *parts[] = {ns, pod, uid};

    return hash_parts(parts, 3);
}

/* Under the lock: the series slot of a pod, NULL when this process wrote it none. */
static struct series *series_of(struct ext_events *e, const char *ns, const char *pod,
                                const char *uid)
{
    uint64_t key = series_key(ns, pod, uid);
    struct series *sl = &e->series[key % EVENTS_SERIES_SLOTS];

    return sl->key == key ? sl : NULL;
}

/* Under the lock: a free place at the queue's tail, or NULL (counted as dropped). */
static struct pending_event *queue_tail(struct ext_events *e)
{
    struct pending_event *ev;

    if (e->count == EVENTS_QUEUE_MAX || e->stopping) {
        e->dropped++;
        return NULL;
    }
    ev = &e->queue[(e->head + e->count) % EVENTS_QUEUE_MAX];
    memset(ev, 0, sizeof(*ev));
    e->count++;
    pthread_cond_signal(&e->wake);
    return ev;
}

static void fill(struct pending_event *ev, const char *ns, const char *pod, const char *uid,
                 const char *reason, const char *type, const char *message)
{
    ev->ns = strdup(ns);
    ev->pod = pod ? strdup(pod) : NULL;
    ev->uid = uid ? strdup(uid) : NULL;
    ev->reason = strdup(reason);
    ev->type = strdup(type);
    ev->message = strdup(message ? message : "");
}

void ext_events_post(struct ext_events *e, const char *ns, const char *pod, const char *uid,
                     const char *reason, const char *type, const char *message)
{
    const char *parts[] = {ns, pod, reason, message};
    uint64_t h;
    size_t slot;
    struct pending_event *ev;
    int64_t now;

    if (!e || !ns || !pod)
        return;
    h = hash_parts(parts, 4);
    slot = h % EVENTS_DEDUP_SLOTS;
    pthread_mutex_lock(&e->lock);
    now = e->now_ms();
    if (e->recent[slot].hash == h && now - e->recent[slot].sent_ms < EVENTS_DEDUP_MS) {
        pthread_mutex_unlock(&e->lock);
        return;
    }
    ev = queue_tail(e);
    if (ev) {
        e->recent[slot].hash = h;
        e->recent[slot].sent_ms = now;
        ev->op = EV_POST;
        fill(ev, ns, pod, uid, reason, type, message);
    }
    pthread_mutex_unlock(&e->lock);
}

void ext_events_waiting(struct ext_events *e, const char *ns, const char *pod, const char *uid,
                        const char *gang, const char *message)
{
    uint64_t key, msg, gang_id;
    struct series *sl;
    struct pending_event *ev;
    int64_t now;

    if (!e || !ns || !pod)
        return;
    key = series_key(ns, pod, uid);
    msg = hash_parts(&message, 1);
    gang_id = gang_id_of(ns, gang ? gang : pod);
    sl = &e->series[key % EVENTS_SERIES_SLOTS];
    pthread_mutex_lock(&e->lock);
    now = e->now_ms();
    if (sl->key == key && sl->msg == msg && now - sl->sent_ms < EVENTS_DEDUP_MS) {
        pthread_mutex_unlock(&e->lock);
        return;
    }
    ev = queue_tail(e);
    if (ev) {
        if (sl->key != key) /* new, or another pod's slot before: not known to exist */
            *sl = (struct series){.key = key};
        sl->gang = gang_id;
        sl->msg = msg;
        sl->sent_ms = now;
        gang_remember(e, gang_id, now);
        ev->op = EV_WAITING;
        ev->series = key;
        snprintf(ev->gang_id, sizeof(ev->gang_id), "%016llx", (unsigned long long)gang_id);
        fill(ev, ns, pod, uid, "GangWaiting", "Warning", message);
    }
    pthread_mutex_unlock(&e->lock);
}

void ext_events_withdraw_pod(struct ext_events *e, const char *ns, const char *pod,
                             const char *uid)
{
    struct series *sl;
    struct pending_event *ev;

    if (!e || !ns || !pod)
        return;
    pthread_mutex_lock(&e->lock);
    sl = series_of(e, ns, pod, uid);
    if (sl && sl->msg != 0 && (ev = queue_tail(e))) {
        sl->msg = 0; /* a reason after this is sent at once */
        ev->op = EV_WITHDRAW_POD;
        ev->series = sl->key;
        snprintf(ev->gang_id, sizeof(ev->gang_id), "%016llx", (unsigned long long)sl->gang);
        fill(ev, ns, pod, uid, "GangWaiting", "Warning", NULL);
    }
    pthread_mutex_unlock(&e->lock);
}

void ext_events_withdraw(struct ext_events *e, const char *ns, const char *gang)
{
    uint64_t gang_id;
    struct pending_event *ev;

    if (!e || !ns || !gang)
        return;
    gang_id = gang_id_of(ns, gang);
    pthread_mutex_lock(&e->lock);
    if (!gang_waited(e, gang_id, true)) {
        pthread_mutex_unlock(&e->lock);
        return; /* nothing out: no request */
    }
    /* A reason after this is sent at once (the worker forgets the objects once deleted). */
    for (size_t i = 0; i < EVENTS_SERIES_SLOTS; i++)
        if (e->series[i].key && e->series[i].gang == gang_id)
            e->series[i].msg = 0;
    ev = queue_tail(e);
    if (ev) {
        ev->op = EV_WITHDRAW;
        snprintf(ev->gang_id, sizeof(ev->gang_id), "%016llx", (unsigned long long)gang_id);
        fill(ev, ns, NULL, NULL, "GangWaiting", "Warning", NULL);
    }
    pthread_mutex_unlock(&e->lock);
}

void ext_events_gang_message(char *buf, size_t len, const char *text, const char *composition)
{
    if (composition && *composition)
        snprintf(buf, len, "%s" EXT_EVENT_COMPOSITION "%s", text ? text : "", composition);
    else
        snprintf(buf, len, "%s", text ? text : "");
}

void ext_events_set_clock(struct ext_events *e, int64_t (*now_ms)(void))
{
    pthread_mutex_lock(&e->lock);
    e->now_ms = now_ms;
    pthread_mutex_unlock(&e->lock);
}

uint64_t ext_events_dropped(const struct ext_events *e)
{
    return e ? e->dropped : 0;
}

void ext_events_free(struct ext_events *e)
{
    if (!e)
        return;
    pthread_mutex_lock(&e->lock);
    e->stopping = true;
    pthread_cond_signal(&e->wake);
    pthread_mutex_unlock(&e->lock);
    pthread_join(e->thread, NULL);
    pthread_mutex_destroy(&e->lock);
    pthread_cond_destroy(&e->wake);
    free(e);
}
