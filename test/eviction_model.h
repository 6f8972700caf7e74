/*
 * eviction_model.h - a seeded, randomized, multi-round model checker of the
 * engine's evictions (issue 20).
 *
 * One scenario: random nodes (whole GPUs, shared GPUs, gpu-memory, with and
 * without the nvidia.com/gpu.memory label), a random queue tree (departments,
 * quotas, limits, weights, priorities, minimum runtimes), gangs arriving and
 * finishing (count-only PodGroups, RayCluster-like compositions with extras,
 * priorities, fractions, non-preemptible members). It is driven in epochs:
 * a round where the world changes (arrivals, departures), then quiet rounds in
 * which only the pods evicted before are made again, as KubeRay does. Each
 * round, kube-scheduler is played: every pending pod is offered the nodes its
 * own count passes (none: muster's unasked look has to find it), filtered,
 * bound at the barrier; the evictor carries out what was decided, refusing a
 * victim gang whole now and then (a PodDisruptionBudget, an API error).
 *
 * After every engine call it checks what no random input may break, with its
 * own arithmetic, not the engine's:
 *
 *   partial      no gang is ever bound below its minimum
 *   victim-rule  every victim was taken by the rule of docs/quota.md
 *   bind-evict   nothing is evicted in the round it was placed
 *   fits-waits   after a round, no gang that fits the free room within its
 *                limits waits, unless it names a waiting gang ahead of it
 *   twice        no thrash in one epoch (the rounds after one change, where only
 *                evicted pods come back): no two gangs evict each other, no gang
 *                evicts the same victim twice
 *   over-booked  no node over its capacity, no GPU device over 1.0
 *   reason       every eviction's reason is true of the state it was made in, and every
 *                reason a filter gives a waiting gang is true of the state it is given in
 *                (reason_check.h: each kind's predicate over the engine's state)
 *
 * Chasing one: EM_ALL=1 prints every violation; EM_DEBUG=<kind number> dumps nodes, queues and
 * pods before the first violation of that kind; EM_TRACE=1 prints every filter, bind and
 * eviction; EM_GROUPS=1 also checks after every call that the engine's GPU groups hold what its
 * pods say. With bench/bench_eviction_model 1 SEED one scenario replays.
 */
#ifndef MUSTER_TEST_EVICTION_MODEL_H
#define MUSTER_TEST_EVICTION_MODEL_H

#include <stdint.h>
#include <stdio.h>

#include "reason_check.h"

enum em_violation {
    EM_PARTIAL,
    EM_VICTIM_RULE,
    EM_BIND_EVICT,
    EM_FITS_WAITS,
    EM_TWICE,
    EM_OVER_BOOKED,
    EM_REASON,
    EM_KINDS
};

struct em_stats {
    uint64_t scenarios, rounds, filters, looks, placements, evictions, victim_gangs, refused;
    uint64_t checked_waiting; /* waiting gangs the fits-waits check looked at */
    struct rc_stats reasons; /* filters' reasons checked (reason_check.h) */
    uint64_t cascades; /* gangs evicted whole again in an epoch, by another gang (not thrash) */
    uint64_t violations[EM_KINDS];
    char first[EM_KINDS][768]; /* the first example of each kind, with its seed */
};

const char *em_violation_name(enum em_violation v);

/* Run one scenario from seed, adding to st. */
void em_run(uint64_t seed, struct em_stats *st);

/* "scenarios N, rounds N, ...; violations: partial 0, ..." and the first example of each. */
void em_print(const struct em_stats *st, FILE *f);

uint64_t em_total_violations(const struct em_stats *st);

#endif
