/* why.h - what why.c (gathering) and why_report.c (the report) share. */
#ifndef MUSTER_CLI_WHY_H
#define MUSTER_CLI_WHY_H

#include "cli_int.h"

/* Everything `muster why` learnt about one object, before it is written out. */
struct why {
    struct kube_client *kube;
    const struct cli_opts *o;
    struct ext_arena *a;
    char *err;
    size_t errlen;

    const char *ns, *name;
    const char *kind;      /* of the object asked about: RayCluster, PodGroup, Pod, RayJob or
                            * RayService */
    cJSON *object;         /* owned */
    const char *gang_kind; /* what declares the gang (RayCluster, PodGroup), NULL: nothing */
    const char *gang_name;
    cJSON *declarer; /* owned, or NULL when it is `object` or there is none */
    struct policy_gang_spec spec;
    bool has_spec;
    const char *key; /* the gang's key; for a pod of its own "ns/pod" */
    bool lone;       /* a pod of its own, in no gang */

    cJSON *pods;   /* its members (owned), heads first, then by name */
    bool pods_cut; /* the namespace holds more pods than were listed (CLI_MAX_ITEMS) */
    struct policy_cluster *engine; /* the members alone, to count them as muster does */
    bool have_view;
    struct policy_gang_view view; /* counts what muster placed (planned, at bind) as placed */
    int32_t bound;                /* its pods with spec.nodeName */

    cJSON *events;        /* the newest Events about it, oldest first: references into events_all */
    cJSON *events_all;    /* the namespace's Events (owned) */
    char events_err[256]; /* why they could not be listed; "" when they were */
    bool events_cut;      /* ... more Events than were listed */

    const char *queue_name;
    bool have_queue; /* a Queue object of that name exists */
    struct cli_queue queue;
    char queue_err[256];

    cJSON *state;            /* muster's /debug/state, or NULL */
    char state_err[256];     /* why muster could not be asked; "" when it was, or not asked */
    const cJSON *state_gang; /* its entry for this gang in state */

    const char *reason, *reason_from; /* why it waits, and who says so */

    /* A RayJob's or RayService's gang: the one its cluster is. */
    const char *owner;      /* "RayJob lab/train", "RayService lab/svc"; NULL: none known */
    const char *rayjob_key; /* a RayJob's "ns/name": its submitter pod is a member */
    cJSON *notes;           /* lines about the owner (owned): its cluster(s), submitter, state */

    /* Fair over time: the resource whose share its queue's recent usage cut below what the
     * waiting gang needs (it would fit the share that ignores usage), -1 if none; the need. */
    int used_lately;
    int64_t need;
};

/* Writes the report of w as text or JSON (o->output). false when out of memory. */
bool why_report(struct why *w, FILE *out);

/* A pod's state as the report says it: muster's phase when asked, else Bound or Pending. */
const char *why_pod_state(const struct why *w, const cJSON *pod);
/* muster's entry for one of the pods in /debug/state, or NULL. */
const cJSON *why_pod_entry(const struct why *w, const cJSON *pod);
/* Who an Event says wrote it (reportingComponent, else source.component), as kubectl shows it;
 * NULL when it says neither. What it says, not who it is. */
const char *why_event_writer(const cJSON *e);
/* When an Event last happened, in seconds since the epoch; -1 if it does not say. */
int64_t why_event_time(const cJSON *e);

#endif
