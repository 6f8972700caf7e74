/*
 * cli.h - muster for people: `muster queues` and `muster why`, also run as
 * the kubectl plugin `kubectl muster` (a symlink named kubectl-muster).
 *
 * Both read what the cluster holds through the API server, with the usual
 * kubeconfig search (--kubeconfig, $KUBECONFIG, in-cluster, ~/.kube/config):
 *
 *   queues  the Queue objects (muster.dev/v1alpha1) as a tree with totals:
 *           quota and limit from their spec, fair share, allocated, reserved
 *           and pending gangs from the status muster writes.
 *   why     a RayCluster, PodGroup, Pod, RayJob or RayService (its cluster's
 *           gang): its gang's composition, which
 *           members are bound and which wait, the reason in muster's words,
 *           its queue's standing and the recent Events of its pods.
 *
 * muster's view comes from the Kubernetes objects alone: pods (spec.nodeName,
 * muster's annotations), the gang's RayCluster or PodGroup, the Events muster
 * posts (GangWaiting, GangIncomplete, ...) and kube-scheduler's, and the
 * Queue status muster writes. What only muster's memory holds (a plan, a bind
 * held at the barrier, the live reason) comes from its /debug/state when the
 * caller names it (--muster-url), and then wins.
 */
#ifndef MUSTER_CLI_H
#define MUSTER_CLI_H

#include <stdint.h>
#include <stdio.h>

#include "kube.h"

/* Exit statuses of both commands, one per kind of failure (docs/deploy.md lists them). */
#define CLI_EXIT_OK 0
#define CLI_EXIT_NOT_FOUND 1   /* no such object; the cluster does not serve Queues */
#define CLI_EXIT_UNREACHABLE 2 /* no API server answered: no usable kubeconfig, connection, TLS */
#define CLI_EXIT_REFUSED 3     /* the API server answered with an error status (401, 403, 5xx) */
#define CLI_EXIT_BAD_REPLY 4   /* its answer cannot be read: not JSON, not the object, no end */
#define CLI_EXIT_PARTIAL 5     /* printed, but some objects could not be read: warnings say which */
#define CLI_EXIT_USAGE 6       /* bad flags or arguments */
#define CLI_EXIT_NOMEM 7       /* out of memory */

/* argv[0] is the command's name. Returns the exit status. */
int queues_main(int argc, char **argv);
int why_main(int argc, char **argv);

enum cli_output {
    CLI_OUTPUT_TEXT,
    CLI_OUTPUT_JSON,
};

struct cli_opts {
    enum cli_output output;
    int64_t now;                   /* seconds since the epoch: what Event ages are counted from */
    enum policy_resource resource; /* queues: the column the text shows (JSON has all) */
    unsigned events;               /* why: how many of the latest Events to show */
    struct kube_client
        *muster; /* why: muster's own HTTP server for /debug/state; NULL: not asked */
};

/*
 * The commands' work, on a client the caller made (borrowed): text or JSON on
 * out, and a CLI_EXIT_* status; on failure nothing is printed and err holds
 * one line (CLI_EXIT_PARTIAL: printed, the warnings are in what was printed).
 */
int cli_queues(struct kube_client *kube, const struct cli_opts *o, FILE *out, char *err,
               size_t errlen);
int cli_why(struct kube_client *kube, const struct cli_opts *o, const char *ns, const char *name,
            FILE *out, char *err, size_t errlen);

#endif
