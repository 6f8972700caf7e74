/*
 * usage.c - fair over time: each queue's usage, decayed, and what the division weighs.
 *
 * KAI-Scheduler keeps usage in Prometheus (pkg/scheduler/cache/usagedb/prometheus):
 *     U  = sum_over_time(allocated x 0.5^((now - t) / halfLife)[window])
 *     U' = U / sum_over_time(capacity x 0.5^((now - t) / halfLife)[window])
 * muster keeps the same integral in the engine, exactly between samples: what a queue holds
 * bound is constant between two calls of policy_usage_sample, so its decayed integral over
 * that span is closed-form. The window is kept in POLICY_USAGE_BUCKETS buckets, each the
 * exact decayed integral of its part; only the bucket the window's edge cuts is prorated.
 *
 * The division does not read U' at every call: every refresh_ms (KAI's fetchInterval, one
 * minute) it is published, and between two publications a gang muster admits is charged
 * Kueue's entry penalty (pkg/util/admissionfairsharing CalculateEntryPenalty), so a burst of
 * admissions weighs at once, not at the next publication.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

#define DAY_MS (INT64_C(24) * 3600 * 1000)
#define RING (POLICY_USAGE_BUCKETS + 2)
#define MAX_SHARE 10.0 /* U' kept at most 10 capacities (a cluster that shrank) */

void pusage_settings(struct policy_fairness *f)
{
    if (f->half_life_ms < 0)
        f->half_life_ms = 0;
    if (f->window_ms <= 0)
        f->window_ms = 7 * DAY_MS;
    if (f->k_milli < 0)
        f->k_milli = 0;
    if (f->entry_penalty_ms < 0)
        f->entry_penalty_ms = 0;
    if (f->refresh_ms <= 0)
        f->refresh_ms = 60000;
}

bool pusage_on(const struct policy_cluster *c)
{
    return c->opts.fairness.half_life_ms > 0;
}

/* ---- the integral, alone ------------------------------------------------------------- */

static int64_t window_of(const struct policy_fairness *f)
{
    return f->window_ms > 0 ? f->window_ms : 7 * DAY_MS;
}

/* 0.5^(ms / halfLife); ms may be negative (a sum decayed to a time after `now`). */
static double decay(const struct policy_fairness *f, double ms)
{
    return exp2(-ms / (double)f->half_life_ms);
}

/* The decayed integral of 1 held over ages [young, old] (ms before the reference time):
 * h / ln2 x (0.5^(young / h) - 0.5^(old / h)), written so that a long half-life keeps its
 * digits (expm1). */
static double held(const struct policy_fairness *f, double young, double old)
{
    double h = (double)f->half_life_ms;

    return h / M_LN2 * decay(f, young) * -expm1(-(old - young) * M_LN2 / h);
}

static int64_t floor_div(int64_t a, int64_t b)
{
    int64_t q = a / b;

    return (a % b != 0 && (a < 0) != (b < 0)) ? q - 1 : q;
}

static struct policy_usage_slot *slot_for(struct policy_usage *u, int64_t bucket)
{
    int64_t i = bucket % RING;
    struct policy_usage_slot *s = &u->slot[i < 0 ? i + RING : i];

    if (s->bucket == bucket)
        return s;
    if (s->bucket != INT64_MIN && s->bucket > bucket)
        return NULL; /* older than the ring keeps */
    s->bucket = bucket;
    s->sum = 0;
    s->at = INT64_MIN;
    return s;
}

/* The slot's sum decayed to `ref` (never earlier than it is). */
static void slot_decay_to(const struct policy_fairness *f, struct policy_usage_slot *s, int64_t ref)
{
    if (s->at == INT64_MIN) {
        s->at = ref;
        return;
    }
    if (ref > s->at) {
        s->sum *= decay(f, (double)(ref - s->at));
        s->at = ref;
    }
}

void policy_usage_init(struct policy_usage *u, const struct policy_fairness *f)
{
    int64_t w = window_of(f);

    memset(u, 0, sizeof(*u));
    /* Enough buckets of whole milliseconds to cover the window: the window spans at most
     * POLICY_USAGE_BUCKETS + 1 of them, and the ring keeps one more. */
    u->bucket_ms = (w + POLICY_USAGE_BUCKETS - 1) / POLICY_USAGE_BUCKETS;
    if (u->bucket_ms < 1)
        u->bucket_ms = 1;
    for (int i = 0; i < RING; i++)
        u->slot[i].bucket = INT64_MIN;
}

void policy_usage_add(struct policy_usage *u, const struct policy_fairness *f, int64_t from,
                      int64_t to, double amount)
{
    int64_t w = u->bucket_ms, oldest;

    if (f->half_life_ms <= 0 || to <= from || amount == 0 || w < 1)
        return;
    /* What lies before the ring's reach is dropped without walking it. */
    oldest = to - (int64_t)RING * w;
    if (from < oldest)
        from = oldest;
    while (from < to) {
        int64_t b = floor_div(from, w), end = (b + 1) * w, upto = to < end ? to : end;
        struct policy_usage_slot *s = slot_for(u, b);

        if (s) {
            int64_t ref = s->at != INT64_MIN && s->at > upto ? s->at : upto;

            slot_decay_to(f, s, ref);
            s->sum += amount * held(f, (double)(ref - upto), (double)(ref - from));
        }
        from = upto;
    }
}

void policy_usage_add_mass(struct policy_usage *u, const struct policy_fairness *f, int64_t at,
                           double mass)
{
    struct policy_usage_slot *s;
    int64_t ref;

    if (f->half_life_ms <= 0 || mass == 0 || u->bucket_ms < 1)
        return;
    s = slot_for(u, floor_div(at, u->bucket_ms));
    if (!s)
        return;
    ref = s->at != INT64_MIN && s->at > at ? s->at : at;
    slot_decay_to(f, s, ref);
    s->sum += mass * decay(f, (double)(ref - at));
}

double policy_usage_at(const struct policy_usage *u, const struct policy_fairness *f,
                       int64_t now)
{
    int64_t w = u->bucket_ms, start = now - window_of(f);
    double total = 0;

    if (f->half_life_ms <= 0 || w < 1)
        return 0;
    for (int i = 0; i < RING; i++) {
        const struct policy_usage_slot *s = &u->slot[i];
        int64_t lo, hi;

        if (s->bucket == INT64_MIN || s->sum == 0)
            continue;
        lo = s->bucket * w;
        hi = lo + w;
        if (hi <= start || lo > now)
            continue;
        /* The edge's bucket: the part inside the window, as if used evenly. */
        total += s->sum * decay(f, (double)(now - s->at)) *
                 (lo >= start ? 1.0 : (double)(hi - start) / (double)w);
    }
    return total;
}

/* ---- the engine's: sampling, seeding, publishing -------------------------------------- */

void pqueue_usage_free(struct pqueue_usage *u)
{
    free(u);
}

static struct pqueue_usage *usage_of(const struct policy_cluster *c, struct pqueue *q)
{
    if (!q->usage && (q->usage = calloc(1, sizeof(*q->usage)))) {
        for (int r = 0; r < POLICY_RES_COUNT; r++)
            policy_usage_init(&q->usage->used[r], &c->opts.fairness);
    }
    return q->usage;
}

int policy_queue_usage_seed(struct policy_cluster *c, const char *name,
                            const double share[POLICY_RES_COUNT], int64_t at)
{
    struct pqueue *q = name ? pqueue_find(c, name) : NULL;
    struct pqueue_usage *u;

    if (!q)
        return POLICY_ENOENT;
    if (!pusage_on(c) || (q->usage && q->usage->sampled))
        return POLICY_OK;
    if (!(u = usage_of(c, q)))
        return POLICY_ENOMEM;
    u->seeded = true;
    u->seed_at = at;
    for (int r = 0; r < POLICY_RES_COUNT; r++)
        u->seed[r] = share[r] > 0 && share[r] <= MAX_SHARE ? share[r]
                     : share[r] > MAX_SHARE               ? MAX_SHARE
                                                          : 0;
    return POLICY_OK;
}

/* q's first sample: a restored U' becomes an amount at its time, and what q holds now is
 * counted from then (the time muster did not run); a new queue starts now. */
static void queue_first_sample(struct policy_cluster *c, struct pqueue *q,
                               struct pqueue_usage *u, int64_t from, int64_t now)
{
    const struct policy_fairness *f = &c->opts.fairness;
    int64_t at = u->seed_at < now ? u->seed_at : now;

    if (!u->seeded || at <= now - window_of(f)) {
        for (int r = 0; r < POLICY_RES_COUNT; r++)
            policy_usage_add(&u->used[r], f, from, now, (double)q->allocated.v[r]);
        return;
    }
    for (int r = 0; r < POLICY_RES_COUNT; r++) {
        double total = policy_usage_at(&c->capacity_used[r], f, now);

        policy_usage_add_mass(&u->used[r], f, at, u->seed[r] * total);
        policy_usage_add(&u->used[r], f, at, now, (double)q->allocated.v[r]);
    }
}

/* q's U' at now, against the capacity's integral as last published; true if it moved. */
static bool publish_queue(struct policy_cluster *c, struct pqueue *q, int64_t now)
{
    bool moved = !q->usage->published;

    for (int r = 0; r < POLICY_RES_COUNT; r++) {
        double used = policy_usage_at(&q->usage->used[r], &c->opts.fairness, now);
        double share = c->usage_total[r] > 0 ? used / c->usage_total[r] : 0;

        share = share > MAX_SHARE ? MAX_SHARE : share > 0 ? share : 0;
        moved = moved || share != q->usage->recent[r];
        q->usage->recent[r] = share;
    }
    q->usage->published = true;
    return moved;
}

/* Each queue's fair shares into (or, compare, against) shares[]: did any differ? */
static bool fair_shares(struct policy_cluster *c, struct policy_resources *shares, bool compare)
{
    bool differ = false;

    for (size_t i = 0; i < c->queues.n; i++) {
        const struct pqueue *q = c->queues.items[i];

        if (!q)
            continue;
        if (compare)
            differ = differ || memcmp(&shares[i], &q->fair_share, sizeof(shares[i])) != 0;
        else
            shares[i] = q->fair_share;
    }
    return differ;
}

/*
 * Every queue's U' anew. When fair shares move with it, that is time passing, not a decision of
 * the engine's own, so it counts as a change from outside (change_epoch): what the engine placed
 * before it may be taken back for a queue whose share grew (KAI's turns, reclaim.c). When they
 * do not move, nothing the engine placed becomes a victim for it.
 */
static void publish(struct policy_cluster *c, int64_t now)
{
    struct policy_resources *before = NULL;
    bool moved = false;

    if (c->opts.fairness.k_milli > 0 && c->queues.n > 0 &&
        (before = malloc(c->queues.n * sizeof(*before)))) {
        pfair_refresh(c);
        fair_shares(c, before, false);
    }
    for (int r = 0; r < POLICY_RES_COUNT; r++)
        c->usage_total[r] = policy_usage_at(&c->capacity_used[r], &c->opts.fairness, now);
    for (size_t i = 0; i < c->queues.n; i++) {
        struct pqueue *q = c->queues.items[i];

        if (q && q->usage)
            moved = publish_queue(c, q, now) || moved;
    }
    c->usage_published = now;
    c->usage_published_once = true;
    c->fair_dirty = true;
    if (before && moved) {
        pfair_refresh(c);
        if (fair_shares(c, before, true))
            c->change_epoch++;
    } else if (moved && c->opts.fairness.k_milli > 0) {
        c->change_epoch++; /* out of memory: take it as moved */
    }
    free(before);
}

/* The cluster's offer starts as if it had been there the whole window: usage before the
 * engine's first sample is unknown, and a queue that ran one hour of it used one hour. */
static bool start(struct policy_cluster *c, int64_t now)
{
    const struct policy_fairness *f = &c->opts.fairness;
    bool any = false;

    for (int r = 0; r < POLICY_RES_COUNT; r++)
        any = any || c->capacity.v[r] > 0;
    if (!any)
        return false;
    for (int r = 0; r < POLICY_RES_COUNT; r++) {
        policy_usage_init(&c->capacity_used[r], f);
        policy_usage_add(&c->capacity_used[r], f, now - window_of(f), now,
                         (double)c->capacity.v[r]);
    }
    c->usage_started = true;
    c->usage_clock = now;
    return true;
}

int policy_usage_sample(struct policy_cluster *c, int64_t now)
{
    const struct policy_fairness *f = &c->opts.fairness;
    int64_t from;
    int rc = POLICY_OK;

    if (!pusage_on(c))
        return POLICY_OK;
    if (now > c->clock)
        c->clock = now;
    pfair_refresh(c); /* the capacity the top divides */
    if (!c->usage_started) {
        if (!start(c, now))
            return POLICY_OK;
    } else if (now < c->usage_clock) {
        return POLICY_OK; /* time does not go back */
    }
    from = c->usage_clock;
    for (int r = 0; r < POLICY_RES_COUNT; r++)
        policy_usage_add(&c->capacity_used[r], f, from, now, (double)c->capacity.v[r]);
    for (size_t i = 0; i < c->queues.n; i++) {
        struct pqueue *q = c->queues.items[i];
        struct pqueue_usage *u;

        if (!q)
            continue;
        if (!(u = usage_of(c, q))) {
            rc = POLICY_ENOMEM; /* this queue counts from its next sample */
            continue;
        }
        if (!u->sampled) {
            queue_first_sample(c, q, u, from, now);
            u->sampled = true;
            u->seeded = false;
            /* A queue new since the last publication has its U' (0, or its seed's) now, not
             * up to a refresh later. */
            if (c->usage_published_once) {
                publish_queue(c, q, now); /* its queue's coming was the change */
                c->fair_dirty = true;
            }
            continue;
        }
        for (int r = 0; r < POLICY_RES_COUNT; r++)
            policy_usage_add(&u->used[r], f, from, now, (double)q->allocated.v[r]);
    }
    c->usage_clock = now;
    if (!c->usage_published_once || now - c->usage_published >= f->refresh_ms ||
        now < c->usage_published)
        publish(c, now);
    return rc;
}

/* ---- what the division weighs ---------------------------------------------------------- */

void pusage_penalize(const struct policy_cluster *c, struct pgang *g,
                     const struct policy_resources *ask, struct pqueue *q)
{
    const struct policy_fairness *f = &c->opts.fairness;
    int64_t age;

    if (!g || !g->entered || f->entry_penalty_ms <= 0)
        return;
    age = c->clock - g->entered_at;
    if (age < 0 || age >= f->entry_penalty_ms)
        return;
    /* Kueue charges one sampling interval of the ask at admission; here the part of
     * entry_penalty_ms the gang has not run yet, decayed as it will be when it has. Once per
     * gang and clock: its members share it. */
    if (g->penalty_clock != c->clock || g->penalty_left <= 0) {
        g->penalty_left = held(f, 0, (double)(f->entry_penalty_ms - age));
        g->penalty_clock = c->clock;
    }
    for (int r = 0; r < POLICY_RES_COUNT; r++)
        q->penalty[r] += (double)ask->v[r] * g->penalty_left;
}

int64_t pusage_weighed(const struct policy_cluster *c, const struct pqueue *q, int r)
{
    double share = q->usage && q->usage->published ? q->usage->recent[r] : 0;

    if (c->usage_total[r] > 0)
        share += q->penalty[r] / c->usage_total[r];
    if (!(share > 0))
        return 0;
    if (share > MAX_SHARE)
        share = MAX_SHARE;
    return (int64_t)llround(share * (double)POLICY_USAGE_UNIT);
}
