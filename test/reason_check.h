/*
 * reason_check.h - is what muster says about a waiting gang true? (issue 21)
 *
 * For every reason kind a predicate over the engine's state that must hold when that reason is
 * given, computed with the checker's own arithmetic from the pods, nodes and queues (never
 * from the engine's counters or its fit functions):
 *
 *   undeclared     no RayCluster or PodGroup declares the gang
 *   members        exactly `have` of its (subgroup's) pods exist, fewer than `want`
 *   invalid        the member's ask is one no cluster can meet
 *   no-queue       no such queue
 *   queue-limit    the queue's use (its pods' charges, its subtree's) plus what the gang asks
 *   queue-quota      is over its limit (non-preemptible: quota); `never` exactly when the ask
 *                    alone is over it
 *   no-node        every node looked at fails the pod, counted by the first check it fails
 *                  exactly as said; the most free on a node it may use is what is said;
 *                  `never` exactly when no node takes it even empty
 *   gang-room      what its minimum misses is said right; a member named as fitting nowhere
 *                  fits nowhere (as no-node); a shortage (need > free) holds against the
 *                  checker's own free room; "do not fit together" holds against a bounded
 *                  search of its own for a placement its queues' limits allow (undecided
 *                  when the budget runs out)
 *   holder         the queue named holds what is said, within or over its quota and fair
 *                  share as said, is not on the waiting gang's path; the quotas and capacity
 *                  sum as said
 *   ahead, yield, no-victims   the other gang exists in the queue named; ahead: it waits
 *   in-turn        the member named first is a pending member of the gang
 *   extra          the gang's minimum is not bound
 *   victims        exactly `have` of the engine's evicting pods leave for it
 *   at-bind        exactly `have` members are at bind or bound, fewer than `want`
 *   plan-expired, room-taken   the gang holds no plan
 *   and for all: the words are policy_reason_text's of the figures.
 *
 * test/test_reason.c runs it over every case table (test/cases) and plants false reasons it
 * must catch; the eviction model (test/eviction_model.c) and test_policy's randomized tests
 * run it on every filter answer.
 */
#ifndef MUSTER_TEST_REASON_CHECK_H
#define MUSTER_TEST_REASON_CHECK_H

#include <stdint.h>
#include <stdio.h>

#include "policy.h"

struct rc_stats {
    uint64_t checked;                      /* reasons checked */
    uint64_t by_kind[POLICY_REASON_KINDS]; /* ... of each kind */
    uint64_t undecided; /* a "do not fit together" the checker's search could not settle */
    uint64_t violations;
    char first[1024]; /* the first violation */
};

/*
 * One reason given now (a filter's answer): its figures, its words, and the nodes that filter
 * was offered (NULL: every node). A false one is counted and the first described.
 */
void rc_check(struct policy_cluster *c, const struct policy_reason *why, const char *text,
              const char *const *offered, size_t noffered, struct rc_stats *st);

/* Every reason the engine shows now: each pod's and each gang's view. */
void rc_check_views(struct policy_cluster *c, struct rc_stats *st);

/* "reasons checked N (no-node N, ...), undecided N, violations N" and the first. */
void rc_print(const struct rc_stats *st, FILE *f);

#endif
