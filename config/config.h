/*
 * config.h - muster's configuration: YAML documents and the settings file.
 *
 * Two layers. cfg_docs reads YAML (a settings file, Kubernetes manifests)
 * into cJSON trees the way kubectl does (sigs.k8s.io/yaml), and remembers the
 * line every node came from, so whoever finds a node wrong can point at it.
 * cfg_settings is muster's own settings file, checked key by key on top of it.
 *
 * Errors are negative codes from CFG_ERRNO_MAP; the detail goes into the
 * caller's err buffer as one line, "file:line: what is wrong".
 */
#ifndef MUSTER_CONFIG_H
#define MUSTER_CONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <cjson/cJSON.h>

#include "policy.h"

/* ---- errors -------------------------------------------------------------- */

#define CFG_ERRNO_MAP(XX)                                                                          \
    XX(OK, 0, "ok")                                                                                \
    XX(ENOMEM, -1, "out of memory")                                                                \
    XX(EIO, -2, "cannot read the file")                                                            \
    XX(ESYNTAX, -3, "YAML syntax error")                                                           \
    XX(ETOOBIG, -4, "input over its size or depth cap")                                            \
    XX(EUNSUPPORTED, -5, "YAML feature not supported")                                             \
    XX(EINVAL, -6, "invalid value")                                                                \
    XX(ERANGE, -7, "value out of range")

enum cfg_err {
#define CFG_ERR_ENUM(name, code, text) CFG_##name = code,
    CFG_ERRNO_MAP(CFG_ERR_ENUM)
#undef CFG_ERR_ENUM
};

const char *cfg_strerror(int err);

/* Untrusted text quoted into an error stays one line of UTF-8: control bytes and
 * bytes that are not (or no longer, after a cut) UTF-8 become '?'. */
void cfg_one_line(char *msg);

/* The length of the UTF-8 sequence at p (n bytes there), 0 if none starts there:
 * no overlong forms, surrogates or code points past U+10FFFF (RFC 3629). */
size_t cfg_utf8_len(const unsigned char *p, size_t n);

/* ---- YAML documents as cJSON --------------------------------------------- */

/* Hard caps: a bigger input or deeper nesting is CFG_ETOOBIG. */
#define CFG_DOCS_MAX_BYTES ((size_t)64 << 20)
#define CFG_DOCS_MAX_DEPTH 64
/*
 * What aliases and merge keys may copy, over a whole input: each copied node
 * costs 64 bytes plus its key and string. 32 MiB is about half a million
 * small nodes, far more than manifests sharing a few templates need, and it
 * refuses an alias bomb ("billion laughs": nine levels of ten aliases each)
 * with CFG_ETOOBIG before it takes the memory.
 */
#define CFG_DOCS_MAX_EXPANSION ((size_t)32 << 20)

/*
 * Input reads as `kubectl apply -f` reads it: one whose first non-space
 * byte is '{' is a stream of JSON values, one document each (so flow-style
 * YAML such as "{a: 1}" at the very start is a JSON error, as in kubectl);
 * anything else is YAML.
 *
 * Typing follows sigs.k8s.io/yaml (go-yaml v2, YAML 1.1), as kubectl does:
 *   - quoted and block (| >) scalars are always strings;
 *   - plain null, Null, NULL, ~ and the empty scalar are null;
 *   - plain true/false, yes/no, on/off, y/n (each also Capitalised or UPPER)
 *     are booleans;
 *   - plain integers (1_000, 0x1F, 0o17, 0b101, YAML 1.1 octal 017) and
 *     floats (1.5, .5, 1e3) are numbers; .inf and .nan are refused (JSON has
 *     no such numbers); everything else (4Gi, 1.2.3, timestamps) is a string;
 *   - mapping keys are scalars; a boolean or null key becomes "true",
 *     "false" or "null", any other keeps its text; a duplicate key is refused;
 *   - explicit tags: !!str makes a string; !!int, !!float, !!bool, !!null,
 *     !!map and !!seq must agree with what the node is; other tags are
 *     refused (CFG_EUNSUPPORTED);
 *   - an alias (*name) is a copy of the node its anchor (&name) names, earlier
 *     in the same document (an alias inside the node it names, or to no such
 *     anchor, is CFG_EINVAL); a later anchor of the same name replaces the
 *     earlier. Anchors and aliases on mapping keys are CFG_EUNSUPPORTED.
 *     Copies keep the lines of what they copy, except the copy's root, which
 *     is where the alias is. What copies cost is capped (CFG_DOCS_MAX_EXPANSION);
 *   - a merge key (plain <<, or !!merge) takes a mapping or a list of
 *     mappings and adds their members; keys the mapping has itself win
 *     wherever they are written, and in a list the first mapping wins;
 *   - a string holding a NUL character is refused (cJSON strings end at NUL).
 *
 * Numbers: a cJSON number is a double, exact only up to 2^53. The loader
 * therefore keeps the scalar's original text beside every number, boolean and
 * null it creates; cfg_docs_scalar_text() returns it, and cfg_docs_int64()
 * reads a number node exactly from that text. Use those, not valuedouble,
 * wherever an integer must be exact.
 *
 * Empty documents (nothing, or a null) are skipped.
 */

struct cfg__index; /* node -> (line, text); private */

struct cfg_docs {
    size_t n;
    cJSON **docs; /* n roots, owned */
    char *name;   /* the file name used in messages, owned */
    struct cfg__index *index;
};

/*
 * Parse len bytes of YAML from buf; name is what messages call it. On success
 * *out is initialized and must be released with cfg_docs_cleanup(); on error
 * *out is untouched and err holds "name:line: what is wrong".
 */
int cfg_docs_parse(struct cfg_docs *out, const char *name, const char *buf, size_t len, char *err,
                   size_t errlen);

/* The same for a file; a file that cannot be read is "path: strerror". */
int cfg_docs_load_file(struct cfg_docs *out, const char *path, char *err, size_t errlen);

/* Frees everything; a zeroed struct is fine. */
void cfg_docs_cleanup(struct cfg_docs *d);

/*
 * The 1-based line a node came from; for a member of a mapping, the line of
 * its key. 0 for NULL or a node this loader did not create.
 */
unsigned cfg_docs_line(const struct cfg_docs *d, const cJSON *node);

/*
 * The scalar as written: the original text of a number, boolean or null
 * ("0x1F", "yes", "~", "" for an empty scalar), valuestring for a string.
 * NULL for a mapping, a sequence or a node this loader did not create.
 */
const char *cfg_docs_scalar_text(const struct cfg_docs *d, const cJSON *node);

/*
 * The exact value of an integer number node. CFG_EINVAL if the node is not
 * an integer (a float, a string, ...), CFG_ERANGE if it does not fit int64.
 */
int cfg_docs_int64(const struct cfg_docs *d, const cJSON *node, int64_t *out);

/* ---- values -------------------------------------------------------------- */

/*
 * A Go duration ("500ms", "20s", "1m30s", "2h", "1.5s"; units ns us ms s m h)
 * in whole milliseconds. CFG_EINVAL for bad syntax or a part of a
 * millisecond, CFG_ERANGE when it overflows.
 */
int cfg_duration_parse(const char *s, int64_t *ms);

/* The shortest Go-style spelling: 1500 -> "1.5s", 90000 -> "1m30s". */
void cfg_duration_format(int64_t ms, char *buf, size_t len);

/*
 * A size in bytes: digits, optionally with a fraction and one suffix of
 * k M G T (powers of 1000) or Ki Mi Gi Ti (powers of 1024), as Kubernetes
 * quantities are written ("32Mi", "0.5Gi", "1048576"). The result must be a
 * whole number of bytes. CFG_EINVAL for bad syntax, CFG_ERANGE on overflow.
 */
int cfg_size_parse(const char *s, int64_t *bytes);

/*
 * A plain decimal number ("1", "0.5", "2.125", as YAML writes it) in thousandths, exact:
 * CFG_EINVAL for other text, a sign, or a part of a thousandth; CFG_ERANGE past int64.
 */
int cfg_milli_parse(const char *s, int64_t *milli);

/*
 * "host:port" or "[v6addr]:port" with a non-empty host of at most
 * CFG_HOST_MAX characters (CFG_ETOOBIG beyond: a DNS name is at most 253)
 * and a port in 1..65535 (CFG_ERANGE). host (may be NULL) receives the host
 * without brackets.
 */
#define CFG_HOST_MAX 253
int cfg_hostport_parse(const char *s, char *host, size_t hostlen, unsigned *port);

/* ---- muster's settings --------------------------------------------------- */

enum cfg_log_format {
    CFG_LOG_PLAIN,
    CFG_LOG_JSON,
};

enum cfg_log_level {
    CFG_LOG_DEBUG,
    CFG_LOG_INFO,
    CFG_LOG_WARN,
    CFG_LOG_ERROR,
};

/* cert_file and key_file both set or both NULL; client_ca_file needs them. */
struct cfg_tls {
    char *cert_file;
    char *key_file;
    char *client_ca_file; /* mutual TLS: clients must present a certificate it signed */
};

struct cfg_strings {
    size_t n;
    char **v;
};

struct cfg_log {
    enum cfg_log_format format;
    enum cfg_log_level level;
};

struct cfg_gpu_sharing {
    bool reservations; /* hold each shared device with a reservation pod (default true) */
    char *reservation_namespace;
    char *reservation_image;
    int64_t reservation_timeout_ms;
    char *runtime_class_name;
    char *webhook_listen;       /* host:port; "" = no webhook */
    struct cfg_tls webhook_tls; /* required when webhook_listen is set */
};

/*
 * muster holds no Lease of its own: it follows the Lease of the kube-scheduler
 * beside it and runs its background writers only while that one leads.
 */
struct cfg_leader_election {
    bool enabled;     /* false: always act as the leader */
    char *lease_name; /* kube-scheduler's Lease */
    char *lease_namespace;
    char *identity; /* holderIdentity prefix before "_"; "" = this host's name */
};

/* The HTTP server's limits (docs/config.md, "Connections and memory"). */
struct cfg_server {
    int64_t max_connections; /* open at once, held binds included */
    int64_t max_per_client;  /* from one IP address; 0 = no cap */
    int64_t idle_timeout_ms; /* an idle keep-alive connection closes */
    int64_t workers;         /* handler threads */
    int64_t max_buffered;    /* bytes of request bodies being received, in all */
    int64_t decode_budget;   /* heap one request's parse may take */
    int64_t large_decodes;   /* bodies of 64 KiB or more decoded at once */
};

/* Taking room back for waiting gangs by evicting running ones (docs/quota.md). */
struct cfg_evictions {
    bool reclaim;                   /* between queues */
    bool preemption;                /* inside a queue, by priority */
    int64_t refused_victim_wait_ms; /* a gang whose eviction was refused is no victim for this */
    int64_t unasked_wait_ms;        /* a waiting gang no filter asked about for this: muster looks */
};

/* Fair over time: queues that used more lately get less of what is over quota
 * (docs/quota.md, "Fair over time"). The engine's policy_fairness. */
struct cfg_fairness {
    int64_t half_life_ms;     /* 0 = off */
    int64_t window_ms;
    int64_t k_milli;          /* KAI's kValue in thousandths */
    int64_t entry_penalty_ms; /* 0 = none */
};

/* Every string is heap-owned by the struct; docs/config.md has the defaults. */
struct cfg_settings {
    char *listen; /* host:port */
    struct cfg_tls tls;
    char *kubeconfig;                    /* "" = in-cluster */
    struct cfg_strings scheduler_names;  /* at least one */
    struct cfg_strings queue_label_keys; /* may be empty */
    char *default_queue;
    enum policy_strategy strategy;
    int64_t plan_ttl_ms;
    int64_t bind_wait_ms; /* < plan_ttl_ms */
    int64_t max_body_bytes;
    int64_t max_node_names;
    struct cfg_server server;
    struct cfg_log log;
    struct cfg_gpu_sharing gpu_sharing;
    struct cfg_leader_election leader_election;
    struct cfg_evictions evictions;
    struct cfg_fairness fairness;
    bool watch_protobuf; /* read Pods and Nodes as protobuf */
};

/* The defaults. CFG_ENOMEM leaves *s safe to cleanup. */
int cfg_settings_init(struct cfg_settings *s);
void cfg_settings_cleanup(struct cfg_settings *s);

/*
 * Read path (one YAML document, a mapping; an empty file keeps the defaults)
 * over the defaults. s must have been initialized; it is replaced only on
 * success, so on error it still holds what it held.
 */
int cfg_settings_load(struct cfg_settings *s, const char *path, char *err, size_t errlen);

/* Apply an already parsed document (root may be NULL: all defaults). */
int cfg_settings_from_doc(struct cfg_settings *s, const struct cfg_docs *d, const cJSON *root,
                          char *err, size_t errlen);

const char *cfg_log_format_name(enum cfg_log_format f);
const char *cfg_log_level_name(enum cfg_log_level l);
const char *cfg_strategy_name(enum policy_strategy s);

#endif
