/*
 * extender_proto.h - kube-scheduler's extender wire format
 * (k8s.io/kube-scheduler/extender/v1) in and out of C.
 *
 * Decoders take a request body as received from the network and either fill
 * an args struct or return an ext_err code with a one-line reason in err. The
 * body is never trusted: its size, nesting depth, string lengths and list
 * lengths are capped before anything is built from it.
 *
 * kube-scheduler sends PascalCase keys (the Go structs carry no json tags) and
 * Go's encoding/json reads keys case-insensitively, preferring an exact match.
 * The decoders do the same: "Pod" first, then any spelling of it ("pod").
 *
 * Encoders produce exactly the shape kube-scheduler expects, into a heap
 * buffer (malloc; the caller frees it, or hands it to the HTTP layer).
 *
 * Answers are filled by the caller's handlers. Whatever they point at must
 * outlive encoding; the per-request ext_pool is the place for it.
 */
#ifndef MUSTER_EXTENDER_PROTO_H
#define MUSTER_EXTENDER_PROTO_H

#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ext_err.h"

/* ---- caps on network input ------------------------------------------------ */

struct ext_proto_limits {
    size_t max_body;   /* bytes of one request body */
    size_t max_depth;  /* nesting of arrays and objects */
    size_t max_names;  /* node names (or Nodes items), victim nodes, victims per node */
    size_t max_string; /* bytes of one JSON string, escapes counted as written */
};

#define EXT_PROTO_MAX_BODY_DEFAULT (64u << 20) /* 5,000 full Node objects fit */
#define EXT_PROTO_MAX_DEPTH_DEFAULT 64
#define EXT_PROTO_MAX_NAMES_DEFAULT 20000
#define EXT_PROTO_MAX_STRING_DEFAULT (256u << 10) /* annotations may be large */

/* The defaults above. */
extern const struct ext_proto_limits ext_proto_limits_default;

/* ---- a request's memory ---------------------------------------------------- */

/*
 * An arena for one request: handlers allocate their answer's arrays and
 * strings here and everything goes in one ext_pool_free. ext_pool_defer runs a
 * release function at that point, for results owned elsewhere (an engine's
 * result struct the answer points into).
 */
struct ext_pool;

struct ext_pool *ext_pool_new(void);
void ext_pool_free(struct ext_pool *p);
void *ext_pool_alloc(struct ext_pool *p, size_t size); /* zeroed; NULL on ENOMEM */
void *ext_pool_calloc(struct ext_pool *p, size_t n, size_t size);
char *ext_pool_strdup(struct ext_pool *p, const char *s);
int ext_pool_defer(struct ext_pool *p, void (*release)(void *), void *arg);

/* ---- requests -------------------------------------------------------------- */

/* How the node candidates came: names (nodeCacheCapable) or full Node objects. */
enum ext_node_form {
    EXT_NODES_BY_NAME, /* {"NodeNames":[...],"Nodes":null} */
    EXT_NODES_FULL,    /* {"Nodes":{"items":[<Node>...]},"NodeNames":null} */
};

/* ExtenderArgs: the request of filter and prioritize. */
struct ext_filter_args {
    cJSON *doc;           /* owned: the parsed body */
    struct ext_pool *mem; /* owned: the arrays below */
    const cJSON *pod;     /* the Pod object, inside doc */
    enum ext_node_form form;
    size_t n;            /* candidates */
    const char **names;  /* n node names, strings inside doc or mem */
    const cJSON **nodes; /* EXT_NODES_FULL: the n Node objects; else NULL */
};

int ext_filter_args_decode(const char *body, size_t len, const struct ext_proto_limits *lim,
                           struct ext_filter_args *out, char *err, size_t errlen);
void ext_filter_args_cleanup(struct ext_filter_args *a);
/*
 * The same decoder without the NodeNames fast path (every name a cJSON item):
 * the reference the fast path must match, for tests and fuzz targets only.
 */
int ext_filter_args_decode_reference(const char *body, size_t len,
                                     const struct ext_proto_limits *lim,
                                     struct ext_filter_args *out, char *err, size_t errlen);

/* ExtenderBindingArgs. Every string points into doc; uid may be "". */
struct ext_bind_args {
    cJSON *doc;
    const char *pod_name;
    const char *pod_namespace;
    const char *pod_uid;
    const char *node;
};

int ext_bind_args_decode(const char *body, size_t len, const struct ext_proto_limits *lim,
                         struct ext_bind_args *out, char *err, size_t errlen);
void ext_bind_args_cleanup(struct ext_bind_args *a);

/* The pods the scheduler would evict on one node for the preemptor. */
struct ext_victims {
    const char *node;
    size_t npods;
    const char **uids;  /* Pods[].UID (meta form) or Pods[].metadata.uid (full form) */
    const cJSON **pods; /* full form: the Pod objects; meta form: NULL */
    int64_t num_pdb_violations;
};

/* ExtenderPreemptionArgs, from NodeNameToMetaVictims or NodeNameToVictims. */
struct ext_preempt_args {
    cJSON *doc;
    struct ext_pool *mem;
    const cJSON *pod;
    bool meta; /* the victims came as NodeNameToMetaVictims */
    size_t n;
    struct ext_victims *nodes; /* in request order */
};

int ext_preempt_args_decode(const char *body, size_t len, const struct ext_proto_limits *lim,
                            struct ext_preempt_args *out, char *err, size_t errlen);
void ext_preempt_args_cleanup(struct ext_preempt_args *a);

/*
 * The cheap pre-parse check every decoder runs: depth and string length caps,
 * scanned over the raw bytes (strings and escapes honoured) before cJSON
 * builds anything. Exposed for the fuzz targets and for other JSON inputs.
 */
int ext_json_precheck(const char *body, size_t len, const struct ext_proto_limits *lim, char *err,
                      size_t errlen);

/* Go's encoding/json key match: the exact key, else a case-insensitive one. */
const cJSON *ext_json_get(const cJSON *obj, const char *key);

/* ---- answers ---------------------------------------------------------------- */

enum ext_verdict {
    EXT_NODE_PASSES,
    EXT_NODE_FAILS,        /* FailedNodes: retried on cluster events */
    EXT_NODE_UNRESOLVABLE, /* FailedAndUnresolvableNodes */
};

struct ext_node_verdict {
    enum ext_verdict verdict;
    const char *reason; /* for FAILS / UNRESOLVABLE; NULL reads as "" */
};

/* ExtenderFilterResult. The server presets every verdict to PASSES. */
struct ext_filter_answer {
    struct ext_pool *pool;
    struct ext_node_verdict *verdicts; /* one per candidate, in request order */
    const char *error;                 /* set: answer only Error, no nodes */
};

/* HostPriorityList. The server presets every score to 0; 0..10 are sent. */
struct ext_priority_answer {
    struct ext_pool *pool;
    int *scores; /* one per candidate */
};

/* ExtenderBindingResult. */
struct ext_bind_answer {
    struct ext_pool *pool;
    const char *error; /* NULL or "": bound */
};

struct ext_meta_victims {
    const char *node;
    size_t npods;
    const char *const *uids;
    int64_t num_pdb_violations;
};

/* ExtenderPreemptionResult: the nodes that may stay candidates, with victims. */
struct ext_preempt_answer {
    struct ext_pool *pool;
    size_t n;
    const struct ext_meta_victims *nodes;
};

/*
 * Each encoder writes a malloc'd, NUL-terminated buffer into *out and its
 * length (without the NUL) into *len. Filter answers in the form it was asked.
 */
int ext_filter_result_encode(const struct ext_filter_args *a, const struct ext_filter_answer *ans,
                             char **out, size_t *len);
int ext_priority_list_encode(const struct ext_filter_args *a, const struct ext_priority_answer *ans,
                             char **out, size_t *len);
int ext_binding_result_encode(const struct ext_bind_answer *ans, char **out, size_t *len);
int ext_preemption_result_encode(const struct ext_preempt_answer *ans, char **out, size_t *len);

/* The routes kube-scheduler calls, for error replies in each verb's shape. */
enum ext_verb {
    EXT_VERB_FILTER,
    EXT_VERB_PRIORITIZE,
    EXT_VERB_BIND,
    EXT_VERB_PREEMPT,
    EXT_VERB_COUNT
};

const char *ext_verb_name(enum ext_verb v);

/*
 * A failed call's body, in the verb's shape with Error set so kube-scheduler
 * can log it. Prioritize and preempt replies have no Error field in Go;
 * kube-scheduler ignores unknown keys and any status but 200 is an error to it
 * anyway: prioritize gets {"Error":...}, preempt
 * {"NodeNameToMetaVictims":null,"Error":...}.
 */
int ext_error_encode(enum ext_verb v, const char *error, char **out, size_t *len);

#endif
