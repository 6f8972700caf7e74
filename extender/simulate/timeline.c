/*
 * timeline.c - `muster simulate` over time: pods come when their annotation says
 * (simulate.muster.dev/arrival), run as long as it says once bound (.../duration) and then end;
 * evicted ones are made again at once and wait, as KubeRay or a Job's controller would.
 *
 * The clock jumps from one change to the next (an arrival, an end), and while pods wait and
 * fair over time is on, every --tick as well: fair shares move with usage, so a gang that
 * could not take room back may now. At each step the engine samples what is bound since the
 * last one (policy_usage_sample), then ends and arrivals are applied, then passes run as
 * without a timeline (sim_schedule). What each queue held, and how long each gang waited,
 * is counted between steps for the report.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "simulate_int.h"

#define SIM_MAX_STEPS 2000000

/* ---- who is who --------------------------------------------------------------------------- */

/* The gang a pod is part of: its gang's key, or "namespace/name" for a pod on its own. */
static const char *sim_gang_key(struct sim_run *r, const struct sim_pod *p)
{
    char key[600];

    if (p->spec.gang != NULL)
        return p->spec.gang;
    snprintf(key, sizeof(key), "%s/%s", p->spec.namespace_, p->spec.name);
    return sim_keep(r, key);
}

static struct sim_life *sim_life_of(struct sim_run *r, const struct sim_pod *p)
{
    const char *key = sim_gang_key(r, p);
    struct policy_pod_view v;
    struct sim_life *l;

    for (size_t i = 0; key != NULL && i < r->nlives; i++)
        if (strcmp(r->lives[i].gang, key) == 0)
            return &r->lives[i];
    if (key == NULL || !sim_grow((void **)&r->lives, &r->caplives, r->nlives, sizeof(*r->lives)))
        return NULL;
    l = &r->lives[r->nlives++];
    memset(l, 0, sizeof(*l));
    l->gang = key;
    l->queue = policy_pod_view_get(r->cluster, p->spec.namespace_, p->spec.name, &v) && v.queue
                   ? sim_keep(r, v.queue)
                   : p->spec.queue;
    l->waiting_since = -1;
    return l;
}

static void sim_event(struct sim_run *r, const struct sim_life *l, const char *what)
{
    if (!sim_grow((void **)&r->events, &r->capevents, r->nevents, sizeof(*r->events)))
        return; /* the report misses a line; the run goes on */
    r->events[r->nevents++] = (struct sim_event){r->end_ms, l->gang, l->queue, what};
}

/* ---- what happens to a gang ---------------------------------------------------------------- */

void sim_timeline_bound(struct sim_run *r, struct sim_pod *p)
{
    struct sim_life *l = sim_life_of(r, p);
    struct policy_gang_view g;

    if (l == NULL || l->waiting_since < 0)
        return;
    /* Started when its minimum is bound (a lone pod: when it is). */
    if (p->spec.gang != NULL && (!policy_gang_view_get(r->cluster, p->spec.gang, &g) ||
                                 g.state != POLICY_GANG_BOUND))
        return;
    l->wait_ms += r->end_ms - l->waiting_since;
    l->waiting_since = -1;
    l->runs++;
    sim_event(r, l, "started");
}

void sim_timeline_evicted(struct sim_run *r, struct sim_pod *p)
{
    struct sim_life *l = sim_life_of(r, p);

    if (l == NULL || l->waiting_since >= 0)
        return;
    l->waiting_since = r->end_ms;
    l->evictions++;
    sim_event(r, l, "evicted");
}

static void sim_arrive(struct sim_run *r, int64_t now, bool *changed)
{
    for (size_t i = 0; i < r->npods; i++) {
        struct sim_pod *p = &r->pods[i];
        struct sim_life *l;

        if (p->arrived || p->arrival_ms > now)
            continue;
        p->arrived = true;
        *changed = true;
        if (policy_pod_upsert(r->cluster, &p->spec, r->now) != POLICY_OK) {
            p->done = true;
            p->reason = "the engine refused it when it came";
            continue;
        }
        if ((l = sim_life_of(r, p)) != NULL && l->waiting_since < 0 && l->runs == 0 &&
            !l->finished) {
            l->waiting_since = now;
            sim_event(r, l, "arrived");
        }
    }
}

/* Has every pod of l's gang ended? */
static bool sim_gang_over(struct sim_run *r, const struct sim_life *l)
{
    for (size_t i = 0; i < r->npods; i++) {
        const struct sim_pod *p = &r->pods[i];

        if (!p->done && strcmp(sim_gang_key(r, p), l->gang) == 0)
            return false;
    }
    return true;
}

static void sim_finish(struct sim_run *r, int64_t now, bool *changed)
{
    for (size_t i = 0; i < r->npods; i++) {
        struct sim_pod *p = &r->pods[i];
        struct sim_life *l;

        if (!p->bound || p->done || p->duration_ms < 0 || p->bound_ms < 0 ||
            p->bound_ms + p->duration_ms > now)
            continue;
        policy_pod_forget(r->cluster, p->spec.namespace_, p->spec.name);
        p->bound = false;
        p->done = true;
        p->node = NULL;
        p->gpu_groups = NULL;
        p->reason = "finished";
        *changed = true;
        if ((l = sim_life_of(r, p)) != NULL && !l->finished && sim_gang_over(r, l)) {
            l->finished = true;
            sim_event(r, l, "finished");
        }
    }
}

/* ---- the clock ------------------------------------------------------------------------------ */

/* The next arrival or end after now; -1 if none. */
static int64_t sim_next_change(struct sim_run *r, int64_t now)
{
    int64_t next = -1;

    for (size_t i = 0; i < r->npods; i++) {
        const struct sim_pod *p = &r->pods[i];
        int64_t at = -1;

        if (!p->arrived)
            at = p->arrival_ms;
        else if (p->bound && !p->done && p->duration_ms >= 0 && p->bound_ms >= 0)
            at = p->bound_ms + p->duration_ms;
        if (at > now && (next < 0 || at < next))
            next = at;
    }
    return next;
}

static bool sim_anyone_waits(struct sim_run *r)
{
    for (size_t i = 0; i < r->npods; i++) {
        const struct sim_pod *p = &r->pods[i];

        if (p->arrived && !p->done && !p->bound && !p->evicted && p->spec.managed)
            return true;
    }
    return false;
}

struct sim_held {
    struct sim_run *r;
    double dt;
};

static void sim_hold_queue(const struct policy_queue_view *v, void *ctx)
{
    struct sim_held *h = ctx;
    struct sim_run *r = h->r;
    size_t i;

    for (i = 0; i < r->nqtimes && strcmp(r->qtimes[i].name, v->name) != 0; i++)
        ;
    if (i == r->nqtimes) {
        if (!sim_grow((void **)&r->qtimes, &r->capqtimes, r->nqtimes, sizeof(*r->qtimes)))
            return;
        r->qtimes[r->nqtimes++] = (struct sim_queue_time){sim_keep(r, v->name), 0};
    }
    r->qtimes[i].gpu_ms += (double)v->allocated.v[POLICY_RES_GPU] * h->dt;
}

/* What each queue held over [now, next): what it holds now. */
static void sim_hold(struct sim_run *r, int64_t now, int64_t next)
{
    struct sim_held h = {r, (double)(next - now)};

    policy_each_queue(r->cluster, sim_hold_queue, &h);
}

/*
 * With nothing more to come or end, waiting pods are tried again every tick while fair shares
 * move; they stop moving enough to matter after a window and two half-lives without a change.
 */
static bool sim_still(struct sim_run *r, int64_t now, int64_t quiet_since)
{
    return r->until_ms < 0 && now - quiet_since >= r->fair_settle_ms;
}

/* What is there from the start: arrived at 0, and started at 0 if it runs already. */
static void sim_begin(struct sim_run *r)
{
    for (size_t i = 0; i < r->npods; i++) {
        struct sim_pod *p = &r->pods[i];
        struct sim_life *l;

        if (!p->arrived || (l = sim_life_of(r, p)) == NULL || l->runs > 0 || l->waiting_since >= 0)
            continue;
        l->waiting_since = 0;
        sim_event(r, l, "arrived");
        if (p->bound)
            sim_timeline_bound(r, p);
    }
}

int sim_timeline_run(struct sim_run *r)
{
    int64_t now = 0, quiet_since = 0, step;

    r->end_ms = 0;
    sim_begin(r);

    for (step = 0; step < SIM_MAX_STEPS; step++) {
        size_t evictions = r->nevictions;
        bool changed = false;
        int64_t next;
        int rc;

        r->end_ms = now;
        if (now > r->now)
            r->now = now;
        policy_usage_sample(r->cluster, r->now);
        sim_finish(r, now, &changed);
        sim_arrive(r, now, &changed);
        for (size_t i = 0; i < r->npods; i++)
            r->pods[i].reason = r->pods[i].done ? r->pods[i].reason : NULL;
        rc = sim_schedule(r);
        if (rc != 0)
            return rc;
        if (changed || r->nevictions != evictions || r->nevents_seen != r->nevents)
            quiet_since = now;
        r->nevents_seen = r->nevents;
        if (r->until_ms >= 0 && now >= r->until_ms)
            break;
        next = sim_next_change(r, now);
        if (r->fair_settle_ms > 0 && sim_anyone_waits(r) &&
            !(next < 0 && sim_still(r, now, quiet_since)) && (next < 0 || next > now + r->tick_ms))
            next = now + r->tick_ms;
        if (r->until_ms >= 0 && (next < 0 || next > r->until_ms))
            next = r->until_ms > now ? r->until_ms : -1;
        if (next < 0)
            break;
        sim_hold(r, now, next);
        now = next;
    }
    if (step == SIM_MAX_STEPS)
        fprintf(stderr, "muster simulate: the timeline stopped after %d steps at %" PRId64 " ms\n",
                SIM_MAX_STEPS, now);
    for (size_t i = 0; i < r->npods; i++) {
        struct sim_pod *p = &r->pods[i];

        if (!p->arrived && p->reason == NULL)
            p->reason = "arrives after the end";
    }
    return 0;
}

/* ---- the report ----------------------------------------------------------------------------- */

struct sim_queue_tally {
    size_t gangs, started, finished, evictions;
    double wait_ms, gpu_ms;
};

static void sim_tally(struct sim_run *r, const char *queue, struct sim_queue_tally *t)
{
    memset(t, 0, sizeof(*t));
    for (size_t i = 0; i < r->nlives; i++) {
        const struct sim_life *l = &r->lives[i];

        if (l->queue == NULL || strcmp(l->queue, queue) != 0)
            continue;
        t->gangs++;
        t->started += l->runs > 0;
        t->finished += l->finished;
        t->evictions += (size_t)l->evictions;
        t->wait_ms += (double)l->wait_ms;
        if (l->waiting_since >= 0)
            t->wait_ms += (double)(r->end_ms - l->waiting_since); /* still waiting at the end */
    }
    for (size_t i = 0; i < r->nqtimes; i++)
        if (strcmp(r->qtimes[i].name, queue) == 0)
            t->gpu_ms = r->qtimes[i].gpu_ms;
}

#define MS_PER_HOUR 3600000.0

static double sim_round(double v, double unit)
{
    return (double)(int64_t)(v / unit + (v >= 0 ? 0.5 : -0.5)) * unit;
}

cJSON *sim_timeline_json(struct sim_run *r)
{
    cJSON *o = cJSON_CreateObject(), *queues, *events;

    cJSON_AddNumberToObject(o, "end", (double)r->end_ms / 1000.0);
    queues = cJSON_AddArrayToObject(o, "queues");
    for (size_t i = 0; i < r->nqtimes; i++) {
        struct sim_queue_tally t;
        cJSON *q = cJSON_CreateObject();

        sim_tally(r, r->qtimes[i].name, &t);
        cJSON_AddStringToObject(q, "name", r->qtimes[i].name);
        cJSON_AddNumberToObject(q, "gpuHours",
                                sim_round(t.gpu_ms / POLICY_GPU_MILLI / MS_PER_HOUR, 0.001));
        cJSON_AddNumberToObject(q, "gangs", (double)t.gangs);
        cJSON_AddNumberToObject(q, "started", (double)t.started);
        cJSON_AddNumberToObject(q, "finished", (double)t.finished);
        cJSON_AddNumberToObject(q, "evictions", (double)t.evictions);
        cJSON_AddNumberToObject(q, "waitHours", sim_round(t.wait_ms / MS_PER_HOUR, 0.001));
        cJSON_AddNumberToObject(
            q, "meanWaitHours",
            t.gangs ? sim_round(t.wait_ms / MS_PER_HOUR / (double)t.gangs, 0.001) : 0);
        cJSON_AddItemToArray(queues, q);
    }
    events = cJSON_AddArrayToObject(o, "events");
    for (size_t i = 0; i < r->nevents; i++) {
        cJSON *e = cJSON_CreateObject();

        cJSON_AddNumberToObject(e, "at", (double)r->events[i].at / 1000.0);
        cJSON_AddStringToObject(e, "event", r->events[i].what);
        cJSON_AddStringToObject(e, "gang", r->events[i].gang);
        if (r->events[i].queue != NULL)
            cJSON_AddStringToObject(e, "queue", r->events[i].queue);
        else
            cJSON_AddNullToObject(e, "queue");
        cJSON_AddItemToArray(events, e);
    }
    return o;
}

/* "2h30m" for a person (cfg_duration_format, whole seconds). */
static void sim_at(int64_t ms, char *buf, size_t len)
{
    if (ms < 1000)
        snprintf(buf, len, "0s");
    else
        cfg_duration_format(ms / 1000 * 1000, buf, len);
}

void sim_timeline_table(struct sim_run *r, FILE *out)
{
    char at[32];

    sim_at(r->end_ms, at, sizeof(at));
    fprintf(out, "\ntimeline: ended at %s\n", at);
    fprintf(out, "%-20s %10s %6s %8s %9s %10s %11s %15s\n", "QUEUE", "GPU-HOURS", "GANGS",
            "STARTED", "FINISHED", "EVICTIONS", "WAIT-HOURS", "MEAN-WAIT-HOURS");
    for (size_t i = 0; i < r->nqtimes; i++) {
        struct sim_queue_tally t;

        sim_tally(r, r->qtimes[i].name, &t);
        fprintf(out, "%-20s %10.2f %6zu %8zu %9zu %10zu %11.2f %15.2f\n", r->qtimes[i].name,
                t.gpu_ms / POLICY_GPU_MILLI / MS_PER_HOUR, t.gangs, t.started, t.finished,
                t.evictions, t.wait_ms / MS_PER_HOUR,
                t.gangs ? t.wait_ms / MS_PER_HOUR / (double)t.gangs : 0.0);
    }
    fprintf(out, "\n%-12s %-9s %-30s %s\n", "AT", "EVENT", "GANG", "QUEUE");
    for (size_t i = 0; i < r->nevents; i++) {
        sim_at(r->events[i].at, at, sizeof(at));
        fprintf(out, "%-12s %-9s %-30s %s\n", at, r->events[i].what, r->events[i].gang,
                r->events[i].queue != NULL ? r->events[i].queue : "<none>");
    }
}
