/*
 * barrier.c - bind, all or nothing.
 *
 * kube-scheduler binds each member in its own goroutine. A member's bind is
 * held here until the engine says the whole gang is at the barrier: its
 * answer is deferred (ext_bind_defer), so the connection waits without a
 * thread and a gang of any size can gather. The bind that completes the gang
 * commits every held member (one Binding each, carrying its GPU record; up to
 * COMMIT_PARALLEL members at once) and answers each held bind with its outcome. A timer thread answers a held bind whose wait
 * (bindWait) runs out, with a reason naming who is missing; nothing of the
 * gang has been bound, and kube-scheduler retries.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "daemon_int.h"
#include "base.h"
#include "gpushare.h"

static void held_free(struct held_bind *h)
{
    if (!h)
        return;
    free(h->key);
    free(h->namespace_);
    free(h->name);
    free(h->uid);
    free(h->node);
    free(h->error);
    free(h);
}

static struct held_bind *held_add(struct ext_daemon *d, const struct ext_bind_args *a,
                                  const char *key, struct ext_deferred *reply)
{
    struct held_bind *h = calloc(1, sizeof(*h));

    if (!h)
        return NULL;
    h->key = strdup(key);
    h->namespace_ = strdup(a->pod_namespace);
    h->name = strdup(a->pod_name);
    h->uid = strdup(a->pod_uid);
    h->node = strdup(a->node);
    if (!h->key || !h->namespace_ || !h->name || !h->uid || !h->node) {
        held_free(h);
        return NULL;
    }
    h->reply = reply;
    h->started = ext_now_ms();
    h->deadline = h->started + d->settings.bind_wait_ms;
    h->next = d->held;
    d->held = h;
    return h;
}

/* Answer a held bind (already unlinked): its reply, or its waiting caller, who frees it. */
static void held_answer(struct ext_daemon *d, struct held_bind *h, const char *error)
{
    ext_series_observe(ext_metric_with(d->bind_wait_seconds, NULL),
                       (double)(ext_now_ms() - h->started) / 1000.0);
    if (h->reply) {
        ext_deferred_bind_answer(h->reply, EXT_OK, error);
        held_free(h);
        return;
    }
    h->done = true;
    h->error = error && *error ? strdup(error) : NULL;
    if (error && *error && !h->error)
        h->error = strdup("binding refused (and out of memory)");
    pthread_cond_broadcast(&d->barrier_changed);
}

static void held_unlink(struct ext_daemon *d, struct held_bind *h)
{
    for (struct held_bind **p = &d->held; *p; p = &(*p)->next) {
        if (*p == h) {
            *p = h->next;
            return;
        }
    }
}

/* Unlink the first held bind of this pod; NULL when none is held. */
static struct held_bind *held_take(struct ext_daemon *d, const char *key)
{
    for (struct held_bind **p = &d->held; *p; p = &(*p)->next) {
        struct held_bind *h = *p;

        if (strcmp(h->key, key) == 0) {
            *p = h->next;
            return h;
        }
    }
    return NULL;
}

static void bind_counted(struct ext_daemon *d, const char *outcome)
{
    const char *v[] = {outcome};

    ext_series_add(ext_metric_with(d->bind_outcomes, v), 1);
}

/* A shared member's GPU record (its group and share), for its Binding's annotations. */
static cJSON *gpu_record(const struct policy_assignment *m)
{
    char share[16];
    cJSON *ann = cJSON_CreateObject();

    snprintf(share, sizeof(share), "%d.%03d", m->gpu_share_milli / 1000, m->gpu_share_milli % 1000);
    if (ann && (!cJSON_AddStringToObject(ann, EXT_ANNOTATION_GPU_GROUP, m->gpu_groups) ||
                !cJSON_AddStringToObject(ann, EXT_ANNOTATION_GPU_SHARE, share))) {
        cJSON_Delete(ann);
        return NULL;
    }
    return ann;
}

/* One write per member: the Binding, carrying a shared member's GPU record, which the API
 * server puts on the pod with its nodeName (no PATCH before it, no pod bound without it). */
int ext_commit_member(struct ext_daemon *d, const struct policy_assignment *m, char *err,
                      size_t errlen)
{
    cJSON *ann = NULL;
    int rc;

    if (!d->kube)
        return EXT_OK; /* --offline: recorded by the engine, posted nowhere */
    if (m->gpu_groups && !(ann = gpu_record(m)))
        return ext_errf(err, errlen, EXT_ENOMEM, "binding %s/%s: out of memory", m->namespace_,
                        m->name);
    rc = kube_post_binding(d->kube, m->namespace_, m->name, m->uid, m->node, ann, err, errlen);
    cJSON_Delete(ann);
    return rc;
}

/* One member's outcome: into the engine, and to its held bind if it has one. */
static void finish_member(struct ext_daemon *d, const struct policy_assignment *m, bool ok,
                          const char *err, const char *self, bool *self_ok, char *self_err,
                          size_t len)
{
    char key[512];
    struct held_bind *h;
    const char *v[] = {ok ? "bound" : "refused"};

    snprintf(key, sizeof(key), "%s/%s", m->namespace_, m->name);
    ext_series_add(ext_metric_with(d->bindings, v), 1);
    if (ok)
        ext_log_info("bound", "pod", key, "node", m->node, "gpuGroup", m->gpu_groups);
    else
        ext_log_warn("not bound", "pod", key, "node", m->node, "error", err);
    pthread_mutex_lock(&d->cache.lock);
    policy_bind_done(d->cache.engine, m->namespace_, m->name, ok, err);
    if (strcmp(key, self) == 0) {
        *self_ok = ok;
        snprintf(self_err, len, "%s", err);
    }
    while ((h = held_take(d, key))) /* its held bind, and any retry that joined it */
        held_answer(d, h, ok ? NULL : *err ? err : "binding refused");
    pthread_mutex_unlock(&d->cache.lock);
}

#define COMMIT_PARALLEL 16 /* members posted at once: one by one, 512 Bindings took 8.6 s */

struct commit_posts {
    struct ext_daemon *d;
    const struct policy_assignment *members;
    size_t n;
    atomic_size_t next;
    int *rc;
    char (*err)[512];
};

static void *post_members(void *arg)
{
    struct commit_posts *j = arg;

    for (size_t i; (i = atomic_fetch_add(&j->next, 1)) < j->n;)
        j->rc[i] = ext_commit_member(j->d, &j->members[i], j->err[i], sizeof(j->err[i]));
    return NULL;
}

/* Every member's GPU record and Binding, COMMIT_PARALLEL at a time (this thread one of them);
 * the outcomes in rc[] and err[], in member order. */
static void post_all(struct ext_daemon *d, const struct policy_bind_result *r, int *rc,
                     char (*err)[512])
{
    pthread_t helpers[COMMIT_PARALLEL - 1];
    struct commit_posts j = {.d = d, .members = r->members, .n = r->n, .rc = rc, .err = err};
    size_t started = 0;

    atomic_init(&j.next, 0);
    while (started < COMMIT_PARALLEL - 1 && started + 1 < r->n &&
           pthread_create(&helpers[started], NULL, post_members, &j) == 0)
        started++;
    post_members(&j);
    for (size_t k = 0; k < started; k++)
        pthread_join(helpers[k], NULL);
}

/* What a commit is about: its gang, the composition it completes, and which member's Event
 * tells it (its head, where it has one: the pod a person describes first). */
struct commit_story {
    char gang[512], composition[512];
    size_t teller;
    bool was_bound; /* its minimum was bound before: this commit binds members beyond it */
};

/* Under the lock: the story of a commit, read while the engine's views are ours. */
static void commit_story_get(struct ext_daemon *d, const char *gang,
                             const struct policy_bind_result *r, struct commit_story *st)
{
    struct policy_gang_view gv;
    struct policy_pod_view pv;

    snprintf(st->gang, sizeof(st->gang), "%s", gang ? gang : "");
    st->composition[0] = '\0';
    st->was_bound = false;
    if (gang && policy_gang_view_get(d->cache.engine, gang, &gv)) {
        if (gv.composition)
            snprintf(st->composition, sizeof(st->composition), "%s", gv.composition);
        st->was_bound = gv.state == POLICY_GANG_BOUND;
    }
    st->teller = 0;
    for (size_t i = 0; i < r->n; i++) {
        if (policy_pod_view_get(d->cache.engine, r->members[i].namespace_, r->members[i].name,
                                &pv) &&
            pv.gang_head) {
            st->teller = i;
            break;
        }
    }
}

/*
 * One GangBound Event for a gang committed whole, on one member (its head, else the first
 * bound): kube-scheduler already writes each pod's Scheduled Event with its node, and the GPU
 * group is on the pod; this one says the members went together.
 */
static void bound_event(struct ext_daemon *d, const struct policy_bind_result *r,
                        const int *rcs, const struct commit_story *st)
{
    const struct policy_assignment *m = NULL;
    size_t bound = 0;
    char text[700], msg[1024];

    for (size_t i = 0; i < r->n; i++)
        bound += rcs[i] == EXT_OK;
    if (bound == 0 || r->n < 2)
        return;
    m = rcs[st->teller] == EXT_OK ? &r->members[st->teller] : NULL;
    for (size_t i = 0; !m; i++)
        if (rcs[i] == EXT_OK)
            m = &r->members[i];
    if (bound == r->n)
        snprintf(text, sizeof(text), "gang %s committed whole: %zu members bound at once", st->gang,
                 r->n);
    else
        snprintf(text, sizeof(text), "gang %s committed: %zu of %zu members bound at once",
                 st->gang, bound, r->n);
    ext_events_gang_message(msg, sizeof(msg), text, st->composition);
    ext_events_post(d->events, m->namespace_, m->name, m->uid, "GangBound", "Normal", msg);
}

/*
 * Bound: the GangWaiting Events on its pods are no longer true. The gang bound now: all of its
 * pods', one request, and none for a gang that never waited (ext_events_withdraw). Members
 * beyond a minimum bound before: each one's own, where it has one; the others may still wait.
 */
static void withdraw_waiting(struct ext_daemon *d, const struct policy_bind_result *r,
                             const int *rcs, const struct commit_story *st)
{
    for (size_t i = 0; i < r->n; i++) {
        const struct policy_assignment *m = &r->members[i];

        if (rcs[i] != EXT_OK)
            continue;
        if (st->was_bound) {
            ext_events_withdraw_pod(d->events, m->namespace_, m->name, m->uid);
            continue;
        }
        ext_events_withdraw(d->events, m->namespace_, st->gang[0] ? st->gang : m->name);
        return;
    }
}

/*
 * Commit every member; returns the outcome for `self` (its error in
 * self_err). Shares are made real on the nodes for every member first: if
 * any cannot be, no member is bound and the whole gang is requeued. A gang
 * bound gets one GangBound Event (bound_event).
 */
static bool commit_all(struct ext_daemon *d, const struct policy_bind_result *r,
                       const struct commit_story *st, const char *self, char *self_err, size_t len)
{
    char why[512] = "";
    bool self_ok = false;
    int64_t deadline = ext_now_ms() + d->settings.gpu_sharing.reservation_timeout_ms;
    int prepared = EXT_OK;
    int *rcs = calloc(r->n ? r->n : 1, sizeof(*rcs));
    char(*errs)[512] = calloc(r->n ? r->n : 1, sizeof(*errs));

    if (!rcs || !errs) {
        prepared = EXT_ENOMEM;
        snprintf(why, sizeof(why), "muster is out of memory");
    }
    /* One deadline for the whole commit keeps it inside the scheduler's httpTimeout. */
    for (size_t i = 0; i < r->n && prepared == EXT_OK; i++)
        prepared = gpu_share_prepare(&d->share, &r->members[i], deadline, why, sizeof(why));
    if (prepared == EXT_OK)
        post_all(d, r, rcs, errs);
    for (size_t i = 0; i < r->n; i++) {
        const struct policy_assignment *m = &r->members[i];
        char err[512] = "";
        int rc = prepared == EXT_OK ? rcs[i] : prepared;

        if (prepared == EXT_OK)
            snprintf(err, sizeof(err), "%s", errs[i]);
        if (prepared != EXT_OK && prepared != EXT_ESTOPPED) {
            ext_events_post(d->events, m->namespace_, m->name, m->uid, "GangRequeued", "Warning",
                            why);
        }
        if (prepared != EXT_OK)
            snprintf(err, sizeof(err), "%s", why);
        finish_member(d, m, rc == EXT_OK, err, self, &self_ok, self_err, len);
    }
    if (prepared == EXT_OK) {
        bound_event(d, r, rcs, st);
        withdraw_waiting(d, r, rcs, st);
    }
    free(rcs);
    free(errs);
    return self_ok;
}

static bool held_expired(struct ext_daemon *d, struct held_bind *h, int64_t now);

/* A caller that cannot defer waits here, under the lock, and sees its own deadline. */
static void hold_here(struct ext_daemon *d, struct held_bind *h, struct ext_bind_answer *ans)
{
    while (!h->done) {
        struct timespec ts;
        int64_t now = ext_now_ms();

        if (now >= h->deadline) {
            held_unlink(d, h);
            if (!held_expired(d, h, now)) {
                h->next = d->held; /* its commit is under way: kept, with a later deadline */
                d->held = h;
            }
            continue;
        }
        ext_deadline_in(&ts, h->deadline - now);
        pthread_cond_timedwait(&d->barrier_changed, &d->cache.lock, &ts);
    }
    ans->error = h->error ? ext_arena_strdup(ans->pool, h->error) : NULL;
    held_free(h);
}

/*
 * Under the lock: hold the bind at the barrier. Its answer comes at commit,
 * timeout or stop: deferred through the HTTP server, or waited for here.
 */
static void hold(struct ext_daemon *d, const struct ext_bind_args *a, const char *key,
                 struct ext_bind_answer *ans)
{
    struct ext_deferred *later;
    struct held_bind *h;

    if (d->stopping) {
        policy_bind_cancel(d->cache.engine, a->pod_namespace, a->pod_name, NULL, 0);
        ans->error = "muster is shutting down; kube-scheduler will retry";
        return;
    }
    later = ext_bind_defer(ans);
    h = held_add(d, a, key, later);
    if (!h) {
        policy_bind_cancel(d->cache.engine, a->pod_namespace, a->pod_name, NULL, 0);
        if (later)
            ext_deferred_bind_answer(later, EXT_OK, "out of memory at the bind barrier");
        else
            ans->error = "out of memory at the bind barrier";
        return;
    }
    if (h->deadline < d->barrier_next)
        pthread_cond_broadcast(&d->barrier_changed); /* the timer sleeps past it */
    if (!later)
        hold_here(d, h, ans);
}

/* A held bind whose wait ran out: it leaves the barrier, unless its commit is under way. */
static bool held_expired(struct ext_daemon *d, struct held_bind *h, int64_t now)
{
    struct policy_pod_view pv;
    char why[512];

    if (policy_pod_view_get(d->cache.engine, h->namespace_, h->name, &pv) &&
        pv.phase == POLICY_POD_BINDING) {
        h->deadline = now + 1000; /* its commit is under way: wait for it */
        return false;
    }
    policy_bind_cancel(d->cache.engine, h->namespace_, h->name, why, sizeof(why));
    bind_counted(d, "timeout");
    ext_log_info("bind wait ran out; nothing of the gang bound", "pod", h->key, "reason", why);
    ext_events_post(d->events, h->namespace_, h->name, h->uid, "GangIncomplete", "Warning", why);
    held_answer(d, h, why);
    return true;
}

static void *barrier_timer(void *arg)
{
    struct ext_daemon *d = arg;

    pthread_mutex_lock(&d->cache.lock);
    while (!d->barrier_quit) {
        int64_t now = ext_now_ms(), next = INT64_MAX;
        struct timespec ts;

        for (struct held_bind **p = &d->held; *p;) {
            struct held_bind *h = *p;

            if (h->deadline <= now) {
                *p = h->next;
                if (!held_expired(d, h, now)) {
                    h->next = *p; /* kept, with a later deadline */
                    *p = h;
                } else {
                    continue;
                }
            }
            if (h->deadline < next)
                next = h->deadline;
            p = &h->next;
        }
        d->barrier_next = next;
        ext_deadline_in(&ts, next == INT64_MAX ? 3600 * 1000 : next - now);
        pthread_cond_timedwait(&d->barrier_changed, &d->cache.lock, &ts);
    }
    pthread_mutex_unlock(&d->cache.lock);
    return NULL;
}

int ext_barrier_start(struct ext_daemon *d)
{
    d->barrier_next = INT64_MAX;
    if (pthread_create(&d->barrier_timer, NULL, barrier_timer, d) != 0)
        return EXT_ENOMEM;
    d->barrier_timer_running = true;
    return EXT_OK;
}

void ext_barrier_stop(struct ext_daemon *d)
{
    if (!d->barrier_timer_running)
        return;
    pthread_mutex_lock(&d->cache.lock);
    d->barrier_quit = true;
    pthread_cond_broadcast(&d->barrier_changed);
    pthread_mutex_unlock(&d->cache.lock);
    pthread_join(d->barrier_timer, NULL);
    d->barrier_timer_running = false;
}

/* A pod muster does not schedule (another profile) is bound as asked. */
static int bind_plain(struct ext_daemon *d, const struct ext_bind_args *a,
                      struct ext_bind_answer *ans)
{
    char err[512];

    if (d->kube && kube_post_binding(d->kube, a->pod_namespace, a->pod_name, a->pod_uid, a->node,
                                     NULL, err, sizeof(err)) != EXT_OK) {
        ans->error = ext_arena_strdup(ans->pool, err);
        return EXT_OK;
    }
    ext_log_info("bound", "pod", a->pod_name, "namespace", a->pod_namespace, "node", a->node,
                 "managed", "false");
    return EXT_OK;
}

/* Early reservation pods for the member's shared GPUs, outside the lock. */
static void reserve_early(struct ext_daemon *d, const struct ext_bind_args *a)
{
    struct policy_pod_view pv;
    char node[256] = "", groups[128] = "";

    pthread_mutex_lock(&d->cache.lock);
    if (policy_pod_view_get(d->cache.engine, a->pod_namespace, a->pod_name, &pv) && pv.node &&
        pv.gpu_groups && pv.phase == POLICY_POD_PLANNED) {
        snprintf(node, sizeof(node), "%s", pv.node);
        snprintf(groups, sizeof(groups), "%s", pv.gpu_groups);
    }
    pthread_mutex_unlock(&d->cache.lock);
    if (*groups && strcmp(node, a->node) == 0)
        gpu_share_reserve_early(&d->share, node, groups);
}

int ext_daemon_bind(void *ctx, const struct ext_bind_args *a, struct ext_bind_answer *ans)
{
    struct ext_daemon *d = ctx;
    struct policy_bind_result r;
    struct policy_pod_view pv;
    struct policy_gang_view gv = {0};
    struct commit_story story;
    char key[512], err[512] = "";
    bool ok;
    int prc;

    snprintf(key, sizeof(key), "%s/%s", a->pod_namespace, a->pod_name);
    reserve_early(d, a);
    pthread_mutex_lock(&d->cache.lock);
    if (!policy_pod_view_get(d->cache.engine, a->pod_namespace, a->pod_name, &pv) || !pv.managed) {
        pthread_mutex_unlock(&d->cache.lock);
        return bind_plain(d, a, ans);
    }
    if ((pv.phase == POLICY_POD_WAITING || pv.phase == POLICY_POD_BINDING) && pv.node &&
        strcmp(pv.node, a->node) != 0) {
        /* One member, one place: a second bind elsewhere would answer OK for a node it is not on.
         */
        snprintf(err, sizeof(err),
                 "pod %s is held at its gang's barrier for node %s; a bind to node %s is refused",
                 key, pv.node, a->node);
        pthread_mutex_unlock(&d->cache.lock);
        bind_counted(d, "rejected");
        ext_log_info("bind refused", "pod", key, "node", a->node, "reason", err);
        ans->error = ext_arena_strdup(ans->pool, err);
        return EXT_OK;
    }
    if (pv.phase == POLICY_POD_BINDING) {
        /* kube-scheduler retried while its gang's commit is under way: join it. */
        ext_log_info("bind joins the commit in flight", "pod", key, "node", a->node);
        hold(d, a, key, ans);
        pthread_mutex_unlock(&d->cache.lock);
        return EXT_OK;
    }
    prc = policy_bind(d->cache.engine, a->pod_namespace, a->pod_name, a->node, ext_now_ms(), &r);
    if (prc != POLICY_OK) {
        /* The engine's failure, reported as what it is (it was always "out of memory"). */
        pthread_mutex_unlock(&d->cache.lock);
        policy_bind_result_cleanup(&r);
        prc = cache_engine_rc(prc, "the engine could not bind the pod", err, sizeof(err));
        ans->error = ext_arena_strdup(ans->pool, err);
        return prc;
    }
    switch (r.outcome) {
    case POLICY_BIND_ALREADY:
        bind_counted(d, "already");
        break;
    case POLICY_BIND_REJECT:
        bind_counted(d, "rejected");
        ans->error = ext_arena_strdup(ans->pool, r.reason);
        ext_log_info("bind refused", "pod", key, "node", a->node, "reason", r.reason);
        break;
    case POLICY_BIND_WAIT:
        ext_log_info("bind held at the gang barrier", "pod", key, "node", a->node, "reason",
                     r.reason);
        hold(d, a, key, ans);
        break;
    case POLICY_BIND_COMMIT:
        bind_counted(d, "commit");
        policy_gang_view_get(d->cache.engine, pv.gang, &gv); /* its `since`, before the commit */
        commit_story_get(d, pv.gang, &r, &story);
        pthread_mutex_unlock(&d->cache.lock);
        ok = commit_all(d, &r, &story, key, err, sizeof(err));
        if (ok && gv.members > 0)
            ext_series_observe(ext_metric_with(d->gang_time_to_bind, NULL),
                               (double)(ext_now_ms() - gv.since) / 1000.0);
        if (!ok)
            ans->error = ext_arena_strdup(ans->pool, *err ? err : "binding refused");
        policy_bind_result_cleanup(&r);
        return EXT_OK;
    }
    pthread_mutex_unlock(&d->cache.lock);
    policy_bind_result_cleanup(&r);
    return EXT_OK;
}

/* The server stops: every held bind is answered now, and no new one is held. */
void ext_daemon_stopping(void *ctx)
{
    struct ext_daemon *d = ctx;
    struct held_bind *h;

    pthread_mutex_lock(&d->cache.lock);
    d->stopping = true;
    while ((h = d->held)) {
        d->held = h->next;
        held_answer(d, h, "muster is shutting down; kube-scheduler will retry");
    }
    pthread_cond_broadcast(&d->barrier_changed);
    pthread_mutex_unlock(&d->cache.lock);
}
