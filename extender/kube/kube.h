/*
 * kube.h - muster's side of the Kubernetes API: where the server is and who we
 * are to it (kubeconfig), requests (client), list-then-watch reflectors
 * (watch), and the decoders that turn Kubernetes objects into the engine's
 * specs (nodes, pods, queues, gangs) with their quantities.
 */
#ifndef MUSTER_KUBE_H
#define MUSTER_KUBE_H

#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base.h"
#include "policy.h"

/* ---- kubeconfig ---------------------------------------------------------- */
/*
 * Where the Kubernetes API server is and how to prove who we
 * are to it: in-cluster service account or a kubeconfig file.
 *
 * A struct kube_conn is caller-owned (kube_conn_init / kube_conn_cleanup);
 * every string in it is heap-owned by the struct. kube_client_new() copies
 * what it needs, so the conn can be cleaned up right after.
 */

/* The service account mount every pod gets. */
#define KUBE_SA_DIR "/var/run/secrets/kubernetes.io/serviceaccount"

struct kube_conn {
    char *server;     /* "https://host:port", no trailing slash */
    char *token;      /* a fixed bearer token, or NULL */
    char *token_file; /* bearer token re-read when it rotates, or NULL */
    char *ca_file;    /* PEM bundle to verify the server with, or NULL */
    char *ca_data;    /* ... or the PEM bytes themselves (ca_len long) */
    size_t ca_len;
    char *cert_file; /* client certificate (PEM), or NULL */
    char *cert_data; /* ... or its bytes (cert_len long) */
    size_t cert_len;
    char *key_file; /* client key (PEM), or NULL */
    char *key_data; /* ... or its bytes (key_len long) */
    size_t key_len;
    char *ns;     /* the context's namespace, or NULL */
    int insecure; /* insecure-skip-tls-verify */
};

void kube_conn_init(struct kube_conn *conn);
void kube_conn_cleanup(struct kube_conn *conn);

/*
 * In-cluster: KUBERNETES_SERVICE_HOST / KUBERNETES_SERVICE_PORT from the
 * environment, token and ca.crt from sa_dir (NULL means KUBE_SA_DIR). The
 * token is referenced by path so rotation is picked up. Fills *conn only on
 * success; EXT_ENOTFOUND when not running in a cluster.
 */
int kube_conn_incluster(struct kube_conn *conn, const char *sa_dir, char *err, size_t errlen);

/*
 * A kubeconfig file: context (NULL means current-context) picks the cluster
 * and user. Relative paths in the file are taken relative to its folder,
 * *-data fields are base64-decoded into memory. Errors name the file, the
 * line when there is one, and what is wrong. Fills *conn only on success.
 */
int kube_conn_from_kubeconfig(struct kube_conn *conn, const char *path, const char *context,
                              char *err, size_t errlen);

/*
 * The usual search: an explicit path, else $KUBECONFIG (first entry), else
 * in-cluster, else ~/.kube/config.
 */
int kube_conn_discover(struct kube_conn *conn, const char *path, const char *context, char *err,
                       size_t errlen);

/* Standard base64 (whitespace ignored) into a new NUL-terminated buffer. */
int kube_base64_decode(const char *in, char **out, size_t *outlen);

/* ---- the client ---------------------------------------------------------- */
/*
 * Requests to the Kubernetes API server over libcurl.
 *
 * A struct kube_client is thread-safe: every call borrows a CURL handle from
 * a pool of at most max_connections (so connections are kept and reused, and
 * concurrent callers do not serialise up to that many) and the bearer token is re-read from its file when the
 * file changes, and at least every minute, because service account tokens
 * rotate.
 *
 * Every function returns an ext_err code: EXT_OK on 2xx, EXT_ENOTFOUND on
 * 404, EXT_ECONFLICT on 409, EXT_EGONE on 410, EXT_EHTTP on other statuses,
 * EXT_EIO / EXT_ETIMEOUT on transport failures, EXT_ETOOBIG for a reply over
 * the cap. err (optional) gets one line naming the request, the status and
 * the API server's Status.message.
 */

struct kube_client;

struct kube_client_opts {
    long connect_timeout_ms; /* default 5000 */
    long timeout_ms;         /* a whole request; default 30000 */
    size_t max_reply;        /* reply body cap; default 64 MiB */
    const char *user_agent;  /* default "muster/VERSION" */
    /* Requests in flight at once, each on a connection of its own that stays open for the
     * next request; a caller beyond them waits for one to end. Default 64. */
    size_t max_connections;
};

/* The resource a request path names, with its subresource: "pods", "pods/binding",
 * "queues/status", "leases"; "other" for a path that is not a resource's. And the verb in
 * the API server's words: GET of a collection is LIST, with watch=true WATCH; POST is
 * CREATE, PUT UPDATE. */
void kube_request_labels(const char *method, const char *path, char *verb, size_t verblen,
                         char *resource, size_t reslen);

/* conn is copied; opts may be NULL for the defaults. NULL on failure, err says why. */
struct kube_client *kube_client_new(const struct kube_conn *conn,
                                    const struct kube_client_opts *opts, char *err, size_t errlen);
void kube_client_free(struct kube_client *c);

/* From now on count every request, list and watch once it ends in counter, a family labelled
 * "verb,resource,code" (muster_kube_requests_total); NULL stops counting. Set it before the
 * client is shared between threads. */
void kube_client_count_requests(struct kube_client *c, struct ext_metric *counter);
/* Likewise, count every connection opened to the API server (requests and watches) in
 * counter, an unlabelled family (muster_kube_connections_total). */
void kube_client_count_connections(struct kube_client *c, struct ext_metric *counter);

/* The server URL the client talks to ("https://host:port"). */
const char *kube_client_server(const struct kube_client *c);

/*
 * One request. path starts with '/' and may carry a query. body may be NULL;
 * content_type defaults to application/json when there is a body. *status
 * (optional) gets the HTTP status whenever a response arrived, error or not.
 * *reply (optional) gets the parsed JSON body on success (NULL for an empty
 * body); the caller owns it.
 */
int kube_request(struct kube_client *c, const char *method, const char *path,
                 const char *content_type, const char *body, long *status, cJSON **reply, char *err,
                 size_t errlen);

/*
 * POST a v1 Binding of pod ns/name to node. A non-NULL uid becomes
 * metadata.uid, which the API server checks as a precondition (a pod
 * recreated under the same name is not bound by mistake). annotations
 * (borrowed; NULL for none) is a JSON object of strings that becomes the
 * Binding's metadata.annotations: the API server merges them into the pod in
 * the same write that sets spec.nodeName (pkg/registry/core/pod/storage,
 * setPodNodeAndMetadata), so no watcher ever sees one without the other.
 */
int kube_post_binding(struct kube_client *c, const char *ns, const char *name, const char *uid,
                      const char *node, const cJSON *annotations, char *err, size_t errlen);

/* PATCH path with a JSON merge patch (application/merge-patch+json). reply may be NULL. */
int kube_patch_merge(struct kube_client *c, const char *path, const cJSON *patch, cJSON **reply,
                     char *err, size_t errlen);

/* The same against the object's /status subresource: object_path + "/status". */
int kube_patch_status(struct kube_client *c, const char *object_path, const cJSON *patch,
                      cJSON **reply, char *err, size_t errlen);

/* POST obj to a collection path. reply may be NULL. */
int kube_create(struct kube_client *c, const char *collection_path, const cJSON *obj, cJSON **reply,
                char *err, size_t errlen);

/* DELETE path. */
int kube_delete(struct kube_client *c, const char *path, char *err, size_t errlen);

/*
 * A core/v1 Event about pod ns/pod_name (pod_uid may be NULL), reported by
 * component "muster". type is "Normal" or "Warning"; message is cut at 1 KiB.
 * Who wrote it, as `muster why` checks: source.component and
 * reportingComponent KUBE_EVENT_COMPONENT, reportingInstance the host's name.
 */
#define KUBE_EVENT_COMPONENT "muster"
int kube_event_create(struct kube_client *c, const char *ns, const char *pod_name,
                      const char *pod_uid, const char *reason, const char *message,
                      const char *type, char *err, size_t errlen);

/*
 * The same, named and labelled: an Event muster updates in place (a series: one object per pod,
 * its message, count and lastTimestamp patched) and withdraws with its gang's others in one
 * request. gang_id: KUBE_EVENT_GANG_LABEL's value, lowercase hex.
 */
#define KUBE_EVENT_GANG_LABEL "muster.dev/gang-id"
#define KUBE_EVENT_GANG_LABEL_Q "muster.dev%2Fgang-id" /* the same, in a query */
struct kube_event {
    const char *ns, *pod, *pod_uid, *reason, *message, *type;
    const char *name;    /* NULL: the API server names it "<pod>.<random>" */
    const char *gang_id; /* NULL: no label */
};
int kube_event_post(struct kube_client *c, const struct kube_event *e, char *err, size_t errlen);
/* The Event ns/name seen again: its message and lastTimestamp, and count when count > 0 (a
 * JSON merge patch). EXT_ENOTFOUND when it is gone (deleted, or expired: Events live an hour). */
int kube_event_repeat(struct kube_client *c, const char *ns, const char *name,
                      const char *message, int32_t count, char *err, size_t errlen);
/* Delete every Event of reason in ns that muster wrote (source) labelled gang_id: one
 * deletecollection request, whatever the number of pods. */
int kube_events_withdraw(struct kube_client *c, const char *ns, const char *gang_id,
                         const char *reason, char *err, size_t errlen);
/* Delete the Event ns/name; one already gone (never made, expired, deleted) is EXT_OK. */
int kube_event_delete(struct kube_client *c, const char *ns, const char *name, char *err,
                      size_t errlen);

/* A namespace or object name fit to be put in a path (DNS subdomain characters, <= 253). */
int kube_name_valid(const char *name);

/* ---- the watch ----------------------------------------------------------- */
/*
 * A reflector: LIST then WATCH one resource, forever, in its
 * own thread, handing every object to a consumer's callbacks.
 *
 * The thread lists (paged with limit/continue) and calls replace() once with
 * the complete set, so the consumer can drop what vanished while it was not
 * watching; then it watches from the list's resourceVersion with bookmarks,
 * calling event() for ADDED / MODIFIED / DELETED in order. A 410 Gone (HTTP
 * status or ERROR event) relists; other failures reconnect from the last
 * resourceVersion with exponential backoff and jitter; a 404 on the list
 * (CRD not installed) calls absent() and retries slowly, so a CRD installed
 * later is picked up.
 *
 * Callbacks run on the watch thread, one at a time. The cJSON they get is
 * borrowed and valid only during the call: copy what you keep.
 */

struct kube_watch;

struct kube_watch_handler {
    /* The full current set (a JSON array of objects) after each (re)list. */
    void (*replace)(void *ctx, const cJSON *items);
    /* type is "ADDED", "MODIFIED" or "DELETED". */
    void (*event)(void *ctx, const char *type, const cJSON *object);
    /* Optional: the list answered 404, the resource does not exist; treat the set as empty. */
    void (*absent)(void *ctx);
    /* Optional: a failure the reflector is recovering from (for the log). */
    void (*error)(void *ctx, int code, const char *message);
    /*
     * Optional, instead of replace: a (re)list handed over page by page, so a list of any
     * size is never held whole. list_begin once the first page has come, list_page with each
     * page's items (a JSON array, borrowed), then list_end: ok is false when the list failed
     * part way, and the pages seen are then not the whole set.
     */
    void (*list_begin)(void *ctx);
    void (*list_page)(void *ctx, const cJSON *items);
    void (*list_end)(void *ctx, bool ok);
};

struct kube_watch_opts {
    unsigned page_limit;      /* LIST page size; default 500 */
    unsigned timeout_seconds; /* WATCH timeoutSeconds; default 300 */
    long backoff_min_ms;      /* first reconnect delay; default 200 */
    long backoff_max_ms;      /* delay cap; default 10000 */
    long absent_retry_ms;     /* list retry while the resource is absent; default 10000 */
    size_t max_event;         /* one watch event's size cap; default 16 MiB */
    /* Ask for protobuf first (Accept: application/vnd.kubernetes.protobuf, application/json),
     * for Pods and Nodes: the objects are handed over as the JSON muster's decoders read, with
     * only the fields they read (a Pod's and a Node's; every other kind: not read). A reply in
     * JSON (a resource served only so) is read as JSON. */
    bool protobuf;
};

/*
 * Start reflecting list_path (a collection, e.g. "/api/v1/pods" or
 * "/apis/ray.io/v1/rayclusters", optionally with a "?labelSelector=..."
 * query). The client, handler and ctx are borrowed and must outlive the
 * watch. opts may be NULL for the defaults. NULL on failure.
 */
struct kube_watch *kube_watch_start(struct kube_client *c, const char *list_path,
                                    const struct kube_watch_handler *h, void *ctx,
                                    const struct kube_watch_opts *opts);

/* Abort any transfer in flight, join the thread, free the watch. NULL is a no-op. */
void kube_watch_stop(struct kube_watch *w);

/* True once the first full list has been handed to replace() (or list_end()). */
int kube_watch_synced(const struct kube_watch *w);
/* True while the resource answers 404 (CRD not installed). */
int kube_watch_absent(const struct kube_watch *w);
/* Reconnects after a failure (for a Prometheus counter). */
uint64_t kube_watch_restarts(const struct kube_watch *w);
/* Lists after the first one (410 Gone and friends). */
uint64_t kube_watch_relists(const struct kube_watch *w);
/* The last reply read was protobuf (opts.protobuf asked, the API server answered so, and it
 * decoded; after one that did not, the watch reads JSON and this stays false). */
bool kube_watch_protobuf(const struct kube_watch *w);

/* ---- the decoders -------------------------------------------------------- */
/*
 * Kubernetes objects (as cJSON, from the API server or from
 * YAML manifests) into the engine's specs.
 *
 * One decoder serves both `muster serve` (watch events, extender requests)
 * and `muster simulate` (manifests): the specs it fills point into a
 * arena (ext_arena, base.h) that the caller frees after handing them to the engine.
 * On a malformed object the decoder returns an ext_err code, writes a one
 * line reason into err and, when it can, the offending node into *where so a
 * manifest reader can turn it into file:line.
 */

/*
 * Some fields name another object: a Pod's spec.priorityClassName, a
 * RayCluster's ray.io/priority-class-name label, a Pod's
 * spec.schedulingGroup.podGroupName. The caller answers from what it has seen
 * (serve: its watches, simulate: the manifests); a NULL lookup or callback
 * knows nothing. Answers are copied into the decode's arena.
 */
struct kube_lookup {
    /* A PriorityClass's value; name NULL asks for the globalDefault class. */
    bool (*priority_class)(void *ctx, const char *name, int32_t *value);
    /* A Workload-API PodGroup ns/name: the gang key its pods join and their
     * subgroup there (NULL: none). */
    bool (*pod_group)(void *ctx, const char *ns, const char *name, const char **gang,
                      const char **subgroup);
    void *ctx;
    /* RayJob ns/name: the gang its submitter joins (NULL: a pod of its own) and its queue
     * (NULL: none). False when the RayJob is not known. */
    bool (*rayjob)(void *ctx, const char *ns, const char *name, const char **gang,
                   const char **queue);
};

struct kube_decode_opts {
    const char *const *queue_label_keys; /* first present wins */
    size_t nqueue_label_keys;
    const char *const *scheduler_names; /* pods with one of these are managed */
    size_t nscheduler_names;
    const struct kube_lookup *lookup; /* NULL: other objects are unknown */
};

/* The defaults: queue keys muster.dev/queue, kai.scheduler/queue,
 * volcano.sh/queue-name; scheduler name muster. */
extern const struct kube_decode_opts kube_decode_defaults;

/*
 * Kubernetes quantities ("2", "500m", "4Gi", "1.5", "1e3") into an integer of
 * the given scale: scale 1000 gives milli-units (cpu, GPU shares), scale 1
 * whole units rounded up (memory bytes, counts). scale must be a power of
 * ten. EXT_EINVAL for bad syntax, EXT_ETOOBIG when it does not fit int64.
 */
int kube_quantity_parse(const char *s, int64_t scale, int64_t *out);

enum kube_quantity_style {
    KUBE_QUANTITY_MILLI,   /* millicores: 2000 -> "2", 500 -> "500m" */
    KUBE_QUANTITY_BINARY,  /* bytes, the largest exact suffix, binary or decimal: "4Gi", "2G" */
    KUBE_QUANTITY_DECIMAL, /* milli-units as a decimal: 500 -> "0.5", 2000 -> "2" */
};

/* The opposite way, for output: v in the style's unit into buf. */
void kube_quantity_format(int64_t v, enum kube_quantity_style style, char *buf, size_t len);

/* Resource r's amount as a Kubernetes quantity: cpu in cores or millicores, memory in bytes
 * (kube_quantity_format's styles), GPUs as a decimal of devices. */
void kube_resource_format(int r, int64_t v, char *buf, size_t len);

/*
 * A reason as data, for the JSON printers (/debug/state, muster simulate): its kind's name
 * and the figures that kind names, amounts as quantities ({"kind": "queue-limit", "queue":
 * "team-a", "resource": "gpu", "limit": "2", "used": "0", "asked": "3", "never": true}).
 * docs/why.md lists the fields. NULL when out of memory.
 */
cJSON *kube_reason_json(const struct policy_reason *r);

/* A gpu-fraction value ("0.5") into milli-devices, rounding up; -2 if not a number. */
int kube_fraction_parse(const char *s, int32_t *milli);

int kube_node_decode(const cJSON *node, struct ext_arena *a, struct policy_node_spec *out,
                     char *err, size_t errlen, const cJSON **where);

/* A Pod; an ask the decoder cannot read sets out->invalid instead of failing. A bound pod's
 * out->bound_at is in Unix milliseconds (its PodScheduled condition's turn to True, else
 * status.startTime; 0 when neither says): a caller whose engine counts on another clock moves
 * it onto that one, or clears it. */
int kube_pod_decode(const cJSON *pod, const struct kube_decode_opts *o, struct ext_arena *a,
                    struct policy_pod_spec *out, char *err, size_t errlen, const cJSON **where);

/*
 * A Queue, in the units of its apiVersion (docs/quota.md): KAI's
 * scheduling.run.ai/v2 counts cpu in millicores, memory in MB (10^6 bytes)
 * and GPUs in devices, as plain numbers, and an absent number is 0 (priority
 * 100); muster.dev/v1alpha1 (and no apiVersion) takes Kubernetes quantities,
 * absent limit -1 and weight 1. Both read spec.reclaimMinRuntime and
 * spec.preemptMinRuntime (Go durations).
 */
int kube_queue_decode(const cJSON *queue, struct ext_arena *a, struct policy_queue_spec *out,
                      char *err, size_t errlen, const cJSON **where);

/*
 * Fair over time, in a muster.dev Queue's status (docs/quota.md): status.recentUsage
 * {cpu, memory, gpu}, each queue's U' as numbers (the fraction of the cluster's capacity over
 * the window it used, decayed alike), and status.recentUsageAt, when it was taken (RFC 3339).
 * kube_queue_recent_usage reads them back into share[] and *at_unix_ms: false when the status
 * has none, or says something else (a value that is not a number in 0..10, no time).
 * kube_recent_usage_json writes U' in POLICY_USAGE_UNITs as that mapping, to 4 decimals.
 */
bool kube_queue_recent_usage(const cJSON *queue, double share[POLICY_RES_COUNT],
                             int64_t *at_unix_ms);
cJSON *kube_recent_usage_json(const struct policy_resources *usage);

/*
 * A ray.io/v1 RayCluster's gang: key namespace/name, subgroups "head" (1) and
 * one per worker group (its groupName, its part of the minimum per REFERENCE
 * §3), min members their sum; priority from label ray.io/priority-class-name.
 */
int kube_raycluster_gang(const cJSON *rc, const struct kube_decode_opts *o, struct ext_arena *a,
                         struct policy_gang_spec *out, char *err, size_t errlen,
                         const cJSON **where);

/*
 * A PodGroup: scheduler-plugins' (scheduling.x-k8s.io: minMember, a count),
 * Volcano's (scheduling.volcano.sh: minMember, minTaskMember as subgroups)
 * or KAI's (scheduling.run.ai/v2alpha2: minMember, subGroups, preemptibility);
 * queue and priorityClassName for all. minMember 0 is "no gang".
 */
int kube_podgroup_gang(const cJSON *pg, const struct kube_decode_opts *o, struct ext_arena *a,
                       struct policy_gang_spec *out, char *err, size_t errlen, const cJSON **where);

/*
 * A Workload (scheduling.k8s.io v1alpha2 and v1beta1, KEP-4671): one gang,
 * keyed by the RayCluster that controls it or by its own name. One pod group
 * template gives a count (its gang.minCount, 0 for basic); several give one
 * subgroup each, named after the template.
 */
int kube_workload_gang(const cJSON *wl, const struct kube_decode_opts *o, struct ext_arena *a,
                       struct policy_gang_spec *out, char *err, size_t errlen, const cJSON **where);
/* The name of a Workload's only pod group template when kube_workload_gang made it a count
 * (no subgroups): the first leaf template, depth first; NULL when it has none. */
const char *kube_workload_single_template(const cJSON *wl);

/* A Workload-API PodGroup (scheduling.k8s.io v1alpha2 and v1beta1): the runtime
 * instance of a Workload's template, or a gang on its own. */
struct kube_pod_group {
    const char *namespace_, *name;
    const char *workload;  /* the Workload it was made from; NULL: standalone */
    const char *template_; /* its pod group template there */
    const char *gang;      /* the gang key its pods join without the Workload known */
    int32_t min_count;     /* schedulingPolicy.gang.minCount (mutable in v1beta1); 0: basic */
    const char *topology_key; /* schedulingConstraints.topology[0].key (v1beta1); NULL: none */
    /* Standalone: the gang it declares. Made from a Workload: key NULL (the
     * Workload declares it). */
    struct policy_gang_spec spec;
};

int kube_pod_group_decode(const cJSON *pg, const struct kube_decode_opts *o, struct ext_arena *a,
                          struct kube_pod_group *out, char *err, size_t errlen,
                          const cJSON **where);

/*
 * A ray.io/v1 RayJob as muster follows it (KubeRay v1.7.0, controllers/ray/rayjob_controller.go).
 * Its RayCluster (status.rayClusterName, or clusterSelector's ray.io/cluster for a cluster it did
 * not make) is its gang, declared by the RayCluster itself; in K8sJobMode its submitter, a Job's
 * pod KubeRay makes once the cluster is ready, joins that gang, and its room is held from the
 * start (hold): the submitterPodTemplate's requests as Kubernetes computes them, else KubeRay's
 * default submitter (500m cpu, 200Mi memory). SidecarMode's submitter is a container of the head
 * (the head pod asks for it); HTTPMode and InteractiveMode have none. Nothing is held while it
 * is suspended or once it finished (Complete, Failed, ValidationFailed).
 */
#define KUBE_RAYJOB_SUBMITTER "submitter" /* the submitter's subgroup in its gang */

enum kube_rayjob_mode {
    KUBE_RAYJOB_K8S_JOB,
    KUBE_RAYJOB_SIDECAR,
    KUBE_RAYJOB_HTTP,
    KUBE_RAYJOB_INTERACTIVE,
};

const char *kube_rayjob_mode_name(enum kube_rayjob_mode m);

struct kube_rayjob {
    const char *namespace_, *name, *uid;
    const char *key; /* "ns/name" */
    enum kube_rayjob_mode mode;
    bool suspend;
    bool shutdown_after_finish; /* spec.shutdownAfterJobFinishes */
    const char *cluster;        /* its RayCluster's name; NULL while KubeRay has not named it */
    bool existing_cluster;      /* spec.clusterSelector: a cluster it did not make */
    const char *deployment;     /* status.jobDeploymentStatus ("" when none yet) */
    bool finished;              /* Complete, Failed or ValidationFailed */
    const char *queue;          /* its queue label (its cluster's, as KubeRay copies labels) */
    /* The gang its submitter pod joins ("ns/<cluster>"); NULL: a pod of its own (a cluster it
     * did not make, or none named yet), in queue. */
    const char *submitter_gang;
    bool holds;                   /* the submitter's room is held in submitter_gang */
    struct policy_hold_spec hold; /* what is held (hold.gang is submitter_gang) */
};

int kube_rayjob_decode(const cJSON *rj, const struct kube_decode_opts *o, struct ext_arena *a,
                       struct kube_rayjob *out, char *err, size_t errlen, const cJSON **where);

/* A ray.io/v1 RayService: its clusters (status.activeServiceStatus and pendingServiceStatus
 * rayClusterName) and upgrade strategy (spec.upgradeStrategy.type, "NewCluster" when absent). */
struct kube_rayservice {
    const char *namespace_, *name, *uid;
    const char *key;
    const char *active, *pending; /* NULL: none */
    const char *strategy;
};

int kube_rayservice_decode(const cJSON *rs, struct ext_arena *a, struct kube_rayservice *out,
                           char *err, size_t errlen, const cJSON **where);

/* The RayJob ("ns/name") whose submitter this pod is (a Job pod labelled
 * ray.io/originated-from-crd RayJob, no Ray node), into buf; false when it is none. */
bool kube_pod_rayjob(const cJSON *pod, char *buf, size_t len);

/*
 * A Topology: KAI's (kai.scheduler/v1alpha1) by its name, Kueue's (kueue.x-k8s.io) as
 * "kueue/<name>"; spec.levels[]{nodeLabel, alias}, coarsest first (docs/topology.md).
 */
int kube_topology_decode(const cJSON *obj, struct ext_arena *a, struct policy_topology_spec *out,
                         char *err, size_t errlen, const cJSON **where);

/* A scheduling.k8s.io/v1 PriorityClass. */
struct kube_priority_class {
    const char *name;
    int32_t value;
    bool global_default;
};

int kube_priority_class_decode(const cJSON *pc, struct kube_priority_class *out, char *err,
                               size_t errlen, const cJSON **where);

/* The gang key a pod belongs to ("ns/name"), or NULL for a gang of one. A
 * Workload-API pod gets its PodGroup's name (kube_pod_decode asks the lookup). */
const char *kube_pod_gang_key(const cJSON *pod, struct ext_arena *a);
/* The Workload-API PodGroup its gang comes from (spec.schedulingGroup.podGroupName, pointing
 * into pod), or NULL when the pod names its gang another way, or none. */
const char *kube_pod_scheduling_group(const cJSON *pod);

/* ---- what other objects say: a store for the lookups --------------------- */
/*
 * PriorityClasses, Workloads and Workload-API PodGroups as the decoders need
 * them, kept by the caller (one per engine) and read through
 * kube_refs_lookup(). Not thread-safe: the caller's lock covers it and every
 * decode that reads it.
 */

enum kube_ref_kind {
    KUBE_REF_PRIORITY_CLASS, /* key: name */
    KUBE_REF_WORKLOAD,       /* key: namespace/name */
    KUBE_REF_POD_GROUP,      /* key: namespace/name (a Workload-API PodGroup) */
    KUBE_REF_RAYJOB,         /* key: namespace/name */
    KUBE_REF_RAYSERVICE,     /* key: namespace/name */
};

struct kube_refs;

struct kube_refs *kube_refs_new(void);
void kube_refs_free(struct kube_refs *r);

/* The lookup answering from r, which must outlive it. */
struct kube_lookup kube_refs_lookup(struct kube_refs *r);

/* Record what the object says (replacing what its key said before). */
int kube_refs_priority_class(struct kube_refs *r, const struct kube_priority_class *pc);
int kube_refs_workload(struct kube_refs *r, const char *ns, const char *name,
                       const struct policy_gang_spec *gang, const char *single_template);
int kube_refs_pod_group(struct kube_refs *r, const struct kube_pod_group *pg);

/* A RayJob as its submitter pods are decoded; the gang it held room in before goes into
 * old_hold (len bytes, "" when none). */
int kube_refs_rayjob(struct kube_refs *r, const struct kube_rayjob *rj, char *old_hold,
                     size_t len);
/* A RayService's name, uid and clusters, for Events about it. */
int kube_refs_rayservice(struct kube_refs *r, const struct kube_rayservice *rs);
/* Is an object of this kind and key known? */
bool kube_refs_known(const struct kube_refs *r, enum kube_ref_kind kind, const char *key);
/* The uid of RayJob or RayService key ("ns/name"), or NULL. Points into r. */
const char *kube_refs_owner_uid(const struct kube_refs *r, enum kube_ref_kind kind,
                                const char *key);

/* Whether the pods of Workload-API PodGroup ns/name decode as they will stay: the PodGroup is
 * known, and so is the Workload it was made from, if any. */
bool kube_refs_pod_group_known(const struct kube_refs *r, const char *ns, const char *name);

/*
 * The gang Workload key ("ns/name") declares as muster follows it: each template's minimum is
 * the sum of the minCounts of the known PodGroups made from it (what kube-scheduler's gang
 * cycle enforces, each PodGroup on its own; mutable in v1beta1), or the template's own while
 * none is known. False when the Workload is not known (or out of memory). The subgroups are
 * allocated from a; the other strings stay r's: use *out before r changes.
 */
bool kube_refs_workload_gang(const struct kube_refs *r, const char *key, struct ext_arena *a,
                             struct policy_gang_spec *out);
/* The Workload ("ns/name") the known Workload-API PodGroup key was made from, into buf. */
bool kube_refs_pod_group_workload(const struct kube_refs *r, const char *key, char *buf,
                                  size_t len);

/* Forget an object. Returns whether it was known; *gang (len bytes, may be
 * NULL) gets the gang key it declared (a RayJob: where it held room), "" when none. */
bool kube_refs_forget(struct kube_refs *r, enum kube_ref_kind kind, const char *key, char *gang,
                      size_t len);

/* A pod in phase Succeeded or Failed: it holds nothing, callers skip it. */
bool kube_pod_is_terminal(const cJSON *pod);

/*
 * One workerGroupSpec as KubeRay counts it (utils/util.go): *desired pods
 * (GetWorkerGroupDesiredReplicas: 0 if suspended, else replicas clamped to
 * [minReplicas, maxReplicas], times numOfHosts) and *gang_min, the part of
 * the gang minimum (minReplicas x numOfHosts when autoscaling, else desired).
 */
int kube_worker_group_replicas(const cJSON *group, bool autoscaling, int32_t *desired,
                               int32_t *gang_min, char *err, size_t errlen, const cJSON **where);

#endif
