/*
 * lease.h - does the kube-scheduler beside this muster lead?
 *
 * Two replicas each run kube-scheduler and muster; kube-scheduler's own
 * leader election (a coordination.k8s.io Lease) picks the pair that
 * schedules. muster holds no Lease of its own: it reads that one and runs
 * its background writers (Queue status, nudges, the reservation reaper) only
 * while the holder is the kube-scheduler on its host. kube-scheduler writes
 * holderIdentity as "<hostname>_<uuid>".
 */
#ifndef MUSTER_LEASE_H
#define MUSTER_LEASE_H

#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stddef.h>
#include <time.h>

#include "config.h"
#include "kube.h"

/*
 * True iff lease (a coordination.k8s.io/v1 Lease) is held by identity,
 * i.e. spec.holderIdentity is identity + "_" + anything, and has not
 * expired at now (spec.renewTime + spec.leaseDurationSeconds >= now).
 * A missing or malformed field, or an empty identity, is false.
 */
bool lease_holder_is(const cJSON *lease, const char *identity, time_t now);

/*
 * Whether this replica leads: always true when !le->enabled; otherwise
 * GET the Lease le->lease_namespace/le->lease_name and ask lease_holder_is
 * with le->identity, or this host's name when that is "". A missing Lease,
 * an expired one or a failed request is false. holder (optional) gets one
 * line for the log: who holds the Lease, or why nobody does.
 */
bool lease_leading(struct kube_client *c, const struct cfg_leader_election *le, char *holder,
                   size_t len);

#endif
