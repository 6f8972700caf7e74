/* wire_int.h - what the protocol's decoders share; not for other folders. */
#ifndef MUSTER_WIRE_INT_H
#define MUSTER_WIRE_INT_H

#include "wire.h"

/* ---- json_in.c: untrusted JSON in --------------------------------------------- */

/* The index of the quote that closes the JSON string opened at start, or len. */
size_t wire_string_end(const char *body, size_t len, size_t start);
/* The member key, or NULL when it is absent or JSON null (Go's key match). */
const cJSON *wire_get_set(const cJSON *obj, const char *key);
size_t wire_count_children(const cJSON *c);
/* Parse a prechecked body into a JSON object; what names it in errors. */
int wire_parse_checked(const char *body, size_t len, const char *what, cJSON **out, char *err,
                       size_t errlen);
/* ext_json_precheck, then wire_parse_checked. */
int wire_parse_object(const char *body, size_t len, const struct ext_proto_limits *lim,
                      const char *what, cJSON **out, char *err, size_t errlen);

/* ---- node_names.c: NodeNames without a cJSON item per name -------------------- */

enum wire_fast_names { WIRE_FAST_NO, WIRE_FAST_OK, WIRE_FAST_TOO_MANY };

/*
 * The bytes [*vs, *ve) of the value of the top-level member ext_json_get(root,
 * "NodeNames") would return. False when there is none or the body is unusual.
 */
bool wire_find_names_value(const char *b, size_t len, size_t *vs, size_t *ve);

/*
 * The array of strings b[s..e) into a->names and a->n, in a->mem. WIRE_FAST_NO
 * leaves a untouched; WIRE_FAST_TOO_MANY only counts, into *count.
 */
enum wire_fast_names wire_fast_names(const char *b, size_t s, size_t e,
                                     const struct ext_proto_limits *lim, struct ext_filter_args *a,
                                     size_t *count);

#endif
