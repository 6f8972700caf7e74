/* cfg_internal.h - what config/'s files share and nobody else sees. */
#ifndef MUSTER_CFG_INTERNAL_H
#define MUSTER_CFG_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "config.h"

/* ---- node index: cJSON node -> where it came from (node_index.c) --------- */

struct cfg__index_entry {
    const void *node; /* NULL = free slot */
    unsigned line;
    char *text;    /* original scalar text of a non-string scalar; else NULL */
    bool merged;   /* a member a merge key (<<) put in its mapping: an explicit key replaces it */
    bool anchored; /* an anchor names it: it must live as long as its document */
};

struct cfg__index {
    size_t n;
    size_t cap; /* a power of two */
    struct cfg__index_entry *slots;
};

struct cfg__index *cfg__index_new(void);
void cfg__index_free(struct cfg__index *ix);
/* Adds or replaces; text (len bytes, may be NULL) is copied. */
int cfg__index_put(struct cfg__index *ix, const void *node, unsigned line, const char *text,
                   size_t len);
void cfg__index_forget(struct cfg__index *ix, const void *node);
const struct cfg__index_entry *cfg__index_get(const struct cfg__index *ix, const void *node);
/* Set a flag of the entry of node (a no-op for a node not in the index). */
void cfg__index_set_merged(struct cfg__index *ix, const void *node);
void cfg__index_set_anchored(struct cfg__index *ix, const void *node);

/* ---- anchors, and the copies aliases make (yaml_alias.c) ------------------ */

/* One anchored node of the document being read. */
struct cfg__anchor {
    char *name;
    const cJSON *node; /* in the document's tree, or among its orphans (yaml_json.c) */
    size_t cost;       /* what one alias to it copies, in CFG_DOCS_MAX_EXPANSION's unit */
    int height;        /* collection levels in it: 0 for a scalar, 1 for [1, 2] */
};

/* A document's anchors by name; a later anchor of the same name replaces the earlier. */
struct cfg__anchors {
    struct cfg__anchor *v;
    size_t n, cap;
    size_t *slots; /* open addressing: index into v plus one, 0 = free */
    size_t nslots; /* a power of two, at least twice n */
};

void cfg__anchors_cleanup(struct cfg__anchors *t); /* also: a document ended */
/* Measures node and files it under name (copied). */
int cfg__anchors_put(struct cfg__anchors *t, const char *name, const cJSON *node);
const struct cfg__anchor *cfg__anchors_get(const struct cfg__anchors *t, const char *name);

/* What a tree costs (nodes and their strings) and how many collection levels it holds. */
void cfg__tree_measure(const cJSON *node, size_t *cost, int *height);

/*
 * A deep copy of node for an alias: every copied node keeps the line and
 * scalar text of the one it copies, except the copy's root, which gets line.
 * NULL on ENOMEM (nothing is left behind in the index).
 */
cJSON *cfg__tree_copy(struct cfg__index *ix, const cJSON *node, unsigned line);

/* Forget every node of a tree in the index (before the tree is deleted). */
void cfg__tree_forget(struct cfg__index *ix, const cJSON *node);

/* ---- JSON documents (json_docs.c) ----------------------------------------- */

/* Does kubectl take this input for JSON: is its first non-space byte '{'? */
bool cfg__json_looks(const char *buf, size_t len);

/*
 * A stream of JSON values, one document each, into d (whose name and index
 * are set): lines and number texts in d's index, typed as the YAML reader
 * types them. On error err holds "name:line: JSON: what is wrong" and d may
 * hold part of the stream (the caller cleans it up).
 */
int cfg__json_parse(struct cfg_docs *d, const char *buf, size_t len, char *err, size_t errlen);

/* ---- YAML 1.1 plain scalars (scalar.c) ------------------------------------ */

enum cfg__scalar {
    CFG__SCALAR_STRING,
    CFG__SCALAR_NULL,
    CFG__SCALAR_TRUE,
    CFG__SCALAR_FALSE,
    CFG__SCALAR_INT,
    CFG__SCALAR_FLOAT,
    CFG__SCALAR_NONFINITE, /* .inf, .nan: no JSON for them */
};

/* What a plain (unquoted) scalar means; *num gets a number's value. */
enum cfg__scalar cfg__scalar_resolve(const char *s, size_t len, double *num);

/*
 * An integer as go-yaml v2 reads one: sign, underscores, 0x 0o 0b prefixes,
 * leading-zero octal. CFG_EINVAL if not an integer, CFG_ERANGE beyond int64.
 */
int cfg__int_parse(const char *s, size_t len, int64_t *out);

/* ---- messages (docs.c) --------------------------------------------------- */

/* Writes "name:line: <fmt>" (or "name: " when the line is unknown); returns rc. */
int cfg__node_error(const struct cfg_docs *d, const cJSON *node, char *err, size_t errlen, int rc,
                    const char *fmt, ...) __attribute__((format(printf, 6, 7)));

/* ---- did you mean (suggest.c) -------------------------------------------- */

/* The closest of names (NULL-ended, stride bytes apart) to word, or NULL. */
const char *cfg__suggest(const char *word, const char *const *names, size_t stride);

/* ---- settings (settings.c) ------------------------------------------------ */

/* Names in enum order, NULL-ended: POLICY_BINPACK is "binpack", ... */
extern const char *const cfg__strategy_names[];
extern const char *const cfg__log_format_names[];
extern const char *const cfg__log_level_names[];

/* Replaces *dst with copies of v[0..n); CFG_ENOMEM leaves *dst as it was. */
int cfg__strings_copy(struct cfg_strings *dst, const char *const *v, size_t n);
void cfg__strings_cleanup(struct cfg_strings *l);

/* The rules between keys (settings_check.c); root may be NULL. */
int cfg__settings_check(const struct cfg_settings *s, const struct cfg_docs *d, const cJSON *root,
                        char *err, size_t errlen);

#endif
