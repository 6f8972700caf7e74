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

struct pending_event {
    char *ns, *pod, *uid, *reason, *type, *message;
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
};

static uint64_t hash_event(const char *ns, const char *pod, const char *reason, const char *msg)
{
    const char *parts[] = {ns, pod, reason, msg};
    uint64_t h = 1469598103934665603ULL;

    for (int i = 0; i < 4; i++) {
        for (const char *s = parts[i]; s && *s; s++)
            h = (h ^ (unsigned char)*s) * 1099511628211ULL;
        h = (h ^ 0xff) * 1099511628211ULL;
    }
    return h;
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

static void *events_run(void *arg)
{
    struct ext_events *e = arg;

    pthread_mutex_lock(&e->lock);
    for (;;) {
        struct pending_event ev;
        char err[256];

        while (e->count == 0 && !e->stopping)
            pthread_cond_wait(&e->wake, &e->lock);
        if (e->count == 0)
            break;
        ev = e->queue[e->head];
        e->head = (e->head + 1) % EVENTS_QUEUE_MAX;
        e->count--;
        pthread_mutex_unlock(&e->lock);
        if (kube_event_create(e->kube, ev.ns, ev.pod, ev.uid, ev.reason, ev.message, ev.type, err,
                              sizeof(err)) != 0)
            ext_log_debug("event not posted", "pod", ev.pod, "error", err);
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

void ext_events_post(struct ext_events *e, const char *ns, const char *pod, const char *uid,
                     const char *reason, const char *type, const char *message)
{
    uint64_t h = hash_event(ns, pod, reason, message);
    size_t slot = h % EVENTS_DEDUP_SLOTS;
    struct pending_event *ev;
    int64_t now;

    if (!e || !ns || !pod)
        return;
    pthread_mutex_lock(&e->lock);
    now = e->now_ms();
    if (e->recent[slot].hash == h && now - e->recent[slot].sent_ms < EVENTS_DEDUP_MS) {
        pthread_mutex_unlock(&e->lock);
        return;
    }
    if (e->count == EVENTS_QUEUE_MAX || e->stopping) {
        e->dropped++;
        pthread_mutex_unlock(&e->lock);
        return;
    }
    e->recent[slot].hash = h;
    e->recent[slot].sent_ms = now;
    ev = &e->queue[(e->head + e->count) % EVENTS_QUEUE_MAX];
    ev->ns = strdup(ns);
    ev->pod = strdup(pod);
    ev->uid = uid ? strdup(uid) : NULL;
    ev->reason = strdup(reason);
    ev->type = strdup(type);
    ev->message = strdup(message ? message : "");
    e->count++;
    pthread_cond_signal(&e->wake);
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
