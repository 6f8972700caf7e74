/*
 * yaml_json.c - YAML documents to cJSON trees, typed as kubectl types them,
 * each node's line kept in the docs' index. One job: walk libyaml's events.
 * An alias becomes a copy of the node its anchor names (yaml_alias.c); a
 * merge key (<<) puts the members of the mappings it names into its own.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <yaml.h>

#include "cfg_internal.h"

#define TAG_PREFIX "tag:yaml.org,2002:"

struct builder {
    yaml_parser_t parser;
    const char *name;
    const char *buf;
    size_t len;
    struct cfg__index *index;
    int depth;
    char *err;
    size_t errlen;
    struct cfg__anchors anchors; /* this document's */
    cJSON *orphans;              /* this document's anchored merge sources, which no tree holds */
    const char *open[CFG_DOCS_MAX_DEPTH + 1]; /* anchors of the collections being built */
    int nopen;
    size_t expanded; /* what aliases and merges copied, over the stream */
};

static int fail(struct builder *b, int rc, unsigned line, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static int fail(struct builder *b, int rc, unsigned line, const char *fmt, ...)
{
    va_list ap;
    int n;

    if (b->err == NULL || b->errlen == 0)
        return rc;
    n = snprintf(b->err, b->errlen, "%s:%u: ", b->name, line);
    if (n >= 0 && (size_t)n < b->errlen) {
        va_start(ap, fmt);
        vsnprintf(b->err + n, b->errlen - (size_t)n, fmt, ap);
        va_end(ap);
        cfg_one_line(b->err);
    }
    return rc;
}

static unsigned line_of(const yaml_event_t *ev)
{
    return (unsigned)ev->start_mark.line + 1;
}

static unsigned line_at_offset(const struct builder *b, size_t offset)
{
    unsigned line = 1;

    for (size_t i = 0; i < offset && i < b->len; i++)
        line += b->buf[i] == '\n';
    return line;
}

static int syntax_error(struct builder *b)
{
    const yaml_parser_t *p = &b->parser;
    const char *problem = p->problem ? p->problem : "cannot parse";
    unsigned line;

    if (p->error == YAML_MEMORY_ERROR)
        return fail(b, CFG_ENOMEM, 0, "out of memory");
    if (p->error == YAML_READER_ERROR)
        return fail(b, CFG_ESYNTAX, line_at_offset(b, p->problem_offset), "%s", problem);
    line = (unsigned)p->problem_mark.line + 1;
    if (p->context != NULL)
        return fail(b, CFG_ESYNTAX, line, "%s (%s at line %u)", problem, p->context,
                    (unsigned)p->context_mark.line + 1);
    return fail(b, CFG_ESYNTAX, line, "%s", problem);
}

static int next_event(struct builder *b, yaml_event_t *ev)
{
    if (yaml_parser_parse(&b->parser, ev))
        return CFG_OK;
    return syntax_error(b);
}

static const char *anchor_of(const yaml_event_t *ev)
{
    const yaml_char_t *anchor = NULL;

    if (ev->type == YAML_SCALAR_EVENT)
        anchor = ev->data.scalar.anchor;
    else if (ev->type == YAML_SEQUENCE_START_EVENT)
        anchor = ev->data.sequence_start.anchor;
    else if (ev->type == YAML_MAPPING_START_EVENT)
        anchor = ev->data.mapping_start.anchor;
    return (const char *)anchor;
}

/* A key is a scalar of its own: an alias or anchor there has no JSON meaning. */
static int refuse_key_anchor(struct builder *b, const yaml_event_t *ev)
{
    if (ev->type == YAML_ALIAS_EVENT)
        return fail(b, CFG_EUNSUPPORTED, line_of(ev), "alias *%s as a mapping key is not supported",
                    (const char *)ev->data.alias.anchor);
    if (anchor_of(ev) != NULL)
        return fail(b, CFG_EUNSUPPORTED, line_of(ev),
                    "anchor &%s on a mapping key is not supported", anchor_of(ev));
    return CFG_OK;
}

static bool tag_is(const yaml_char_t *tag, const char *name)
{
    size_t n = strlen(TAG_PREFIX);

    return tag != NULL && strncmp((const char *)tag, TAG_PREFIX, n) == 0 &&
           strcmp((const char *)tag + n, name) == 0;
}

static bool collection_tag_ok(const yaml_char_t *tag, const char *name)
{
    return tag == NULL || strcmp((const char *)tag, "!") == 0 || tag_is(tag, name);
}

/* "!!int" for "tag:yaml.org,2002:int", as the file spelt it. */
static const char *tag_shown(const yaml_char_t *tag, char *buf, size_t len)
{
    size_t n = strlen(TAG_PREFIX);

    if (strncmp((const char *)tag, TAG_PREFIX, n) != 0)
        return (const char *)tag;
    snprintf(buf, len, "!!%s", (const char *)tag + n);
    return buf;
}

/* Does an explicitly tagged scalar hold what its tag says? 1 yes, 0 no, -1 unknown tag. */
static int scalar_tag_agrees(const yaml_char_t *tag, enum cfg__scalar kind)
{
    if (tag_is(tag, "int"))
        return kind == CFG__SCALAR_INT;
    if (tag_is(tag, "float"))
        return kind == CFG__SCALAR_INT || kind == CFG__SCALAR_FLOAT;
    if (tag_is(tag, "bool"))
        return kind == CFG__SCALAR_TRUE || kind == CFG__SCALAR_FALSE;
    if (tag_is(tag, "null"))
        return kind == CFG__SCALAR_NULL;
    return -1;
}

static int scalar_kind(struct builder *b, const yaml_event_t *ev, enum cfg__scalar *kind,
                       double *num)
{
    const char *v = (const char *)ev->data.scalar.value;
    size_t len = ev->data.scalar.length;
    const yaml_char_t *tag = ev->data.scalar.tag;

    if (memchr(v, '\0', len) != NULL)
        return fail(b, CFG_EINVAL, line_of(ev), "a string holding a NUL character");
    *kind = CFG__SCALAR_STRING;
    if (tag_is(tag, "str") || (tag != NULL && strcmp((const char *)tag, "!") == 0))
        return CFG_OK;
    if (tag == NULL && ev->data.scalar.style != YAML_PLAIN_SCALAR_STYLE)
        return CFG_OK;
    *kind = cfg__scalar_resolve(v, len, num);
    if (tag != NULL && scalar_tag_agrees(tag, *kind) != 1) {
        char shown[64];

        if (scalar_tag_agrees(tag, *kind) < 0)
            return fail(b, CFG_EUNSUPPORTED, line_of(ev), "tag %s is not supported",
                        tag_shown(tag, shown, sizeof(shown)));
        return fail(b, CFG_EINVAL, line_of(ev), "\"%.40s\" is not a %s", v,
                    tag_shown(tag, shown, sizeof(shown)));
    }
    if (*kind == CFG__SCALAR_NONFINITE)
        return fail(b, CFG_EINVAL, line_of(ev), "%s: JSON has no infinities or NaNs", v);
    return CFG_OK;
}

static cJSON *scalar_node(enum cfg__scalar kind, const char *v, double num)
{
    switch (kind) {
    case CFG__SCALAR_NULL:
        return cJSON_CreateNull();
    case CFG__SCALAR_TRUE:
        return cJSON_CreateTrue();
    case CFG__SCALAR_FALSE:
        return cJSON_CreateFalse();
    case CFG__SCALAR_INT:
    case CFG__SCALAR_FLOAT:
        return cJSON_CreateNumber(num);
    default:
        return cJSON_CreateString(v);
    }
}

static int remember(struct builder *b, const cJSON *node, unsigned line, const char *text,
                    size_t len)
{
    if (cfg__index_put(b->index, node, line, text, len) != CFG_OK)
        return fail(b, CFG_ENOMEM, line, "out of memory");
    return CFG_OK;
}

static int build_scalar(struct builder *b, const yaml_event_t *ev, unsigned line, cJSON **out)
{
    const char *v = (const char *)ev->data.scalar.value;
    enum cfg__scalar kind;
    double num = 0;
    cJSON *node;
    int rc;

    rc = scalar_kind(b, ev, &kind, &num);
    if (rc != CFG_OK)
        return rc;
    node = scalar_node(kind, v, num);
    if (node == NULL)
        return fail(b, CFG_ENOMEM, line, "out of memory");
    rc = remember(b, node, line, kind == CFG__SCALAR_STRING ? NULL : v,
                  kind == CFG__SCALAR_STRING ? 0 : ev->data.scalar.length);
    if (rc != CFG_OK) {
        cJSON_Delete(node);
        return rc;
    }
    *out = node;
    return CFG_OK;
}

static int build(struct builder *b, const yaml_event_t *ev, unsigned line, cJSON **out);

/* The JSON name of a key: kubectl prints boolean and null keys canonically. */
static int key_text(struct builder *b, const yaml_event_t *ev, const char **key)
{
    enum cfg__scalar kind;
    double num;
    int rc;

    if (ev->type != YAML_SCALAR_EVENT)
        return fail(b, CFG_EUNSUPPORTED, line_of(ev), "a mapping key must be a scalar");
    rc = scalar_kind(b, ev, &kind, &num);
    if (rc != CFG_OK)
        return rc;
    *key = (const char *)ev->data.scalar.value;
    if (kind == CFG__SCALAR_TRUE)
        *key = "true";
    else if (kind == CFG__SCALAR_FALSE)
        *key = "false";
    else if (kind == CFG__SCALAR_NULL)
        *key = "null";
    return CFG_OK;
}

/* An explicit key: its twin is a duplicate, unless a merge key put it there. */
static int make_room(struct builder *b, cJSON *obj, const char *key, unsigned line)
{
    cJSON *twin = cJSON_GetObjectItemCaseSensitive(obj, key);
    const struct cfg__index_entry *e = cfg__index_get(b->index, twin);

    if (twin == NULL)
        return CFG_OK;
    if (e == NULL || !e->merged)
        return fail(b, CFG_EINVAL, line, "duplicate key \"%s\" (first at line %u)", key,
                    e != NULL ? e->line : 0);
    cJSON_DetachItemViaPointer(obj, twin);
    cfg__tree_forget(b->index, twin);
    cJSON_Delete(twin);
    return CFG_OK;
}

/* The plain key << (or one tagged !!merge). */
static bool is_merge_key(const yaml_event_t *kev)
{
    const yaml_char_t *tag = kev->data.scalar.tag;

    return kev->type == YAML_SCALAR_EVENT && kev->data.scalar.length == 2 &&
           memcmp(kev->data.scalar.value, "<<", 2) == 0 &&
           ((tag == NULL && kev->data.scalar.style == YAML_PLAIN_SCALAR_STYLE) ||
            tag_is(tag, "merge"));
}

/* Counts cost against the expansion cap; what is named in the message. */
static int spend(struct builder *b, size_t cost, unsigned line, const char *what)
{
    if (cost > CFG_DOCS_MAX_EXPANSION - b->expanded)
        return fail(b, CFG_ETOOBIG, line,
                    "%s: the aliases would expand the file past %zu MiB (an alias bomb?)", what,
                    CFG_DOCS_MAX_EXPANSION >> 20);
    b->expanded += cost;
    return CFG_OK;
}

/*
 * The members of one mapping a merge key names, into obj; keys obj already
 * has win. A source that must live on (it or one of its items is anchored)
 * is copied from, any other is emptied.
 */
static int merge_members(struct builder *b, cJSON *obj, cJSON *src, bool copy, unsigned line)
{
    cJSON *m, *next, *add;
    size_t cost;
    int height, rc;

    for (m = src->child; m != NULL; m = next) {
        next = m->next;
        if (cJSON_GetObjectItemCaseSensitive(obj, m->string) != NULL)
            continue;
        if (copy) {
            cfg__tree_measure(m, &cost, &height);
            rc = spend(b, cost, line, "<<");
            if (rc != CFG_OK)
                return rc;
            add = cfg__tree_copy(b->index, m, 0);
            if (add == NULL)
                return fail(b, CFG_ENOMEM, line, "out of memory");
        } else {
            add = cJSON_DetachItemViaPointer(src, m);
        }
        cJSON_AddItemToArray(obj, add);
        cfg__index_set_merged(b->index, add);
    }
    return CFG_OK;
}

static bool is_anchored(const struct builder *b, const cJSON *node)
{
    const struct cfg__index_entry *e = cfg__index_get(b->index, node);

    return e != NULL && e->anchored;
}

/* A mapping, or a list of mappings; *keep: it or one of its items is anchored. */
static int merge_shape(struct builder *b, const cJSON *src, unsigned line, bool *keep)
{
    const cJSON *item;

    *keep = is_anchored(b, src);
    if (cJSON_IsObject(src))
        return CFG_OK;
    if (!cJSON_IsArray(src))
        return fail(b, CFG_EINVAL, line, "<<: a merge key takes a mapping or a list of mappings");
    cJSON_ArrayForEach(item, src)
    {
        if (!cJSON_IsObject(item))
            return fail(b, CFG_EINVAL, line,
                        "<<: a merge key takes a mapping or a list of mappings");
        *keep = *keep || is_anchored(b, item);
    }
    return CFG_OK;
}

/* What a merge key names, into obj (in a list the first mappings win); src is used up. */
static int merge_source(struct builder *b, cJSON *obj, cJSON *src, unsigned line)
{
    cJSON *item;
    bool keep;
    int rc;

    rc = merge_shape(b, src, line, &keep);
    if (rc == CFG_OK && cJSON_IsObject(src))
        rc = merge_members(b, obj, src, keep, line);
    if (rc == CFG_OK && cJSON_IsArray(src)) {
        cJSON_ArrayForEach(item, src)
        {
            if (rc == CFG_OK)
                rc = merge_members(b, obj, item, keep, line);
        }
    }
    if (rc == CFG_OK && keep) { /* its anchors must stay valid until the document ends */
        if (cJSON_AddItemToArray(b->orphans, src))
            return CFG_OK;
        rc = fail(b, CFG_ENOMEM, line, "out of memory");
    }
    cfg__tree_forget(b->index, src);
    cJSON_Delete(src);
    return rc;
}

static int build_merge(struct builder *b, cJSON *obj, const yaml_event_t *kev)
{
    unsigned line = line_of(kev);
    yaml_event_t vev;
    cJSON *src = NULL;
    int rc;

    rc = next_event(b, &vev);
    if (rc != CFG_OK)
        return rc;
    rc = build(b, &vev, line, &src);
    yaml_event_delete(&vev);
    if (rc != CFG_OK)
        return rc;
    return merge_source(b, obj, src, line);
}

/* One key and its value, added to obj. */
static int build_member(struct builder *b, cJSON *obj, const yaml_event_t *kev)
{
    unsigned line = line_of(kev);
    yaml_event_t vev;
    const char *key = NULL;
    cJSON *val = NULL;
    int rc;

    rc = refuse_key_anchor(b, kev);
    if (rc != CFG_OK)
        return rc;
    if (is_merge_key(kev))
        return build_merge(b, obj, kev);
    rc = key_text(b, kev, &key);
    if (rc == CFG_OK)
        rc = make_room(b, obj, key, line);
    if (rc != CFG_OK)
        return rc;
    rc = next_event(b, &vev);
    if (rc != CFG_OK)
        return rc;
    rc = build(b, &vev, line, &val);
    yaml_event_delete(&vev);
    if (rc != CFG_OK)
        return rc;
    if (!cJSON_AddItemToObject(obj, key, val)) {
        cJSON_Delete(val);
        return fail(b, CFG_ENOMEM, line, "out of memory");
    }
    return CFG_OK;
}

/* Children until the closing event; a sequence when obj is an array. */
static int build_children(struct builder *b, cJSON *parent, yaml_event_type_t end)
{
    yaml_event_t ev;
    cJSON *item;
    int rc;

    for (;;) {
        rc = next_event(b, &ev);
        if (rc != CFG_OK)
            return rc;
        if (ev.type == end) {
            yaml_event_delete(&ev);
            return CFG_OK;
        }
        item = NULL;
        if (end == YAML_MAPPING_END_EVENT)
            rc = build_member(b, parent, &ev);
        else
            rc = build(b, &ev, 0, &item);
        yaml_event_delete(&ev);
        if (rc != CFG_OK)
            return rc;
        if (item != NULL)
            cJSON_AddItemToArray(parent, item);
    }
}

static int build_collection(struct builder *b, const yaml_event_t *ev, unsigned line, cJSON **out)
{
    bool is_map = ev->type == YAML_MAPPING_START_EVENT;
    const yaml_char_t *tag = is_map ? ev->data.mapping_start.tag : ev->data.sequence_start.tag;
    char shown[64];
    cJSON *node;
    int rc;

    if (!collection_tag_ok(tag, is_map ? "map" : "seq"))
        return fail(b, CFG_EUNSUPPORTED, line_of(ev), "tag %s is not supported here",
                    tag_shown(tag, shown, sizeof(shown)));
    if (b->depth >= CFG_DOCS_MAX_DEPTH)
        return fail(b, CFG_ETOOBIG, line_of(ev), "nested deeper than %d levels",
                    CFG_DOCS_MAX_DEPTH);
    node = is_map ? cJSON_CreateObject() : cJSON_CreateArray();
    if (node == NULL)
        return fail(b, CFG_ENOMEM, line, "out of memory");
    rc = remember(b, node, line, NULL, 0);
    b->depth++;
    if (rc == CFG_OK)
        rc = build_children(b, node, is_map ? YAML_MAPPING_END_EVENT : YAML_SEQUENCE_END_EVENT);
    b->depth--;
    if (rc != CFG_OK) {
        cJSON_Delete(node);
        return rc;
    }
    *out = node;
    return CFG_OK;
}

/* A copy of the node an alias names; the copy's root gets line. */
static int build_alias(struct builder *b, const yaml_event_t *ev, unsigned line, cJSON **out)
{
    const char *name = (const char *)ev->data.alias.anchor;
    const struct cfg__anchor *a = cfg__anchors_get(&b->anchors, name);
    char what[80];
    cJSON *copy;
    int rc;

    for (int i = 0; i < b->nopen; i++) {
        if (strcmp(b->open[i], name) == 0)
            return fail(b, CFG_EINVAL, line_of(ev), "alias *%s: inside the node it names", name);
    }
    if (a == NULL)
        return fail(b, CFG_EINVAL, line_of(ev), "alias *%s: no anchor &%s before it", name, name);
    if (b->depth + a->height > CFG_DOCS_MAX_DEPTH)
        return fail(b, CFG_ETOOBIG, line_of(ev), "nested deeper than %d levels",
                    CFG_DOCS_MAX_DEPTH);
    snprintf(what, sizeof(what), "alias *%.64s", name);
    rc = spend(b, a->cost, line_of(ev), what);
    if (rc != CFG_OK)
        return rc;
    copy = cfg__tree_copy(b->index, a->node, line);
    if (copy == NULL)
        return fail(b, CFG_ENOMEM, line, "out of memory");
    cJSON_free(copy->string); /* the anchored node's own key, if it had one */
    copy->string = NULL;
    *out = copy;
    return CFG_OK;
}

/* Files a finished node under its anchor; aliases after it copy it. */
static int anchor_node(struct builder *b, const char *anchor, cJSON **node, unsigned line)
{
    if (cfg__anchors_put(&b->anchors, anchor, *node) == CFG_OK) {
        cfg__index_set_anchored(b->index, *node);
        return CFG_OK;
    }
    cJSON_Delete(*node);
    *node = NULL;
    return fail(b, CFG_ENOMEM, line, "out of memory");
}

/* The node ev starts; line 0 means its own line, else the line of its key. */
static int build(struct builder *b, const yaml_event_t *ev, unsigned line, cJSON **out)
{
    const char *anchor = anchor_of(ev);
    int rc;

    if (line == 0)
        line = line_of(ev);
    if (ev->type == YAML_ALIAS_EVENT)
        return build_alias(b, ev, line, out);
    if (ev->type == YAML_SCALAR_EVENT) {
        rc = build_scalar(b, ev, line, out);
    } else if (ev->type == YAML_SEQUENCE_START_EVENT || ev->type == YAML_MAPPING_START_EVENT) {
        if (anchor != NULL)
            b->open[b->nopen++] = anchor;
        rc = build_collection(b, ev, line, out);
        if (anchor != NULL)
            b->nopen--;
    } else {
        return fail(b, CFG_ESYNTAX, line, "unexpected YAML event %d", (int)ev->type);
    }
    if (rc == CFG_OK && anchor != NULL)
        rc = anchor_node(b, anchor, out, line);
    return rc;
}

static int append_doc(struct builder *b, struct cfg_docs *d, cJSON *root, size_t *cap)
{
    cJSON **docs = d->docs;

    if (d->n == *cap) {
        *cap = *cap ? *cap * 2 : 4;
        docs = realloc(d->docs, *cap * sizeof(*docs));
        if (docs == NULL)
            return fail(b, CFG_ENOMEM, 0, "out of memory");
        d->docs = docs;
    }
    d->docs[d->n++] = root;
    return CFG_OK;
}

/* One document's root, or NULL when the document is empty or null. */
static int build_root(struct builder *b, cJSON **root)
{
    yaml_event_t ev;
    int rc;

    *root = NULL;
    rc = next_event(b, &ev);
    if (rc != CFG_OK)
        return rc;
    rc = build(b, &ev, 0, root);
    yaml_event_delete(&ev);
    if (rc == CFG_OK && cJSON_IsNull(*root)) {
        cfg__index_forget(b->index, *root);
        cJSON_Delete(*root);
        *root = NULL;
    }
    if (rc != CFG_OK)
        return rc;
    rc = next_event(b, &ev); /* DOCUMENT-END */
    if (rc == CFG_OK) {
        yaml_event_delete(&ev);
    } else if (*root) {
        cfg__index_forget(b->index, *root);
        cJSON_Delete(*root);
        *root = NULL;
    }
    return rc;
}

/* Anchors end with their document, and so do the merge sources kept for them. */
static void document_done(struct builder *b)
{
    const cJSON *o;

    cJSON_ArrayForEach(o, b->orphans)
    {
        cfg__tree_forget(b->index, o);
    }
    cJSON_Delete(b->orphans);
    b->orphans = NULL;
    cfg__anchors_cleanup(&b->anchors);
    b->nopen = 0;
}

static int build_document(struct builder *b, cJSON **root)
{
    int rc;

    *root = NULL;
    b->orphans = cJSON_CreateArray();
    if (b->orphans == NULL)
        return fail(b, CFG_ENOMEM, 0, "out of memory");
    rc = build_root(b, root);
    document_done(b);
    return rc;
}

static int build_stream(struct builder *b, struct cfg_docs *d)
{
    size_t cap = 0;
    yaml_event_t ev;
    cJSON *root;
    int rc;

    for (;;) {
        rc = next_event(b, &ev);
        if (rc != CFG_OK)
            return rc;
        if (ev.type == YAML_STREAM_END_EVENT) {
            yaml_event_delete(&ev);
            return CFG_OK;
        }
        if (ev.type != YAML_DOCUMENT_START_EVENT) { /* STREAM-START */
            yaml_event_delete(&ev);
            continue;
        }
        yaml_event_delete(&ev);
        rc = build_document(b, &root);
        if (rc == CFG_OK && root != NULL) {
            rc = append_doc(b, d, root, &cap);
            if (rc != CFG_OK)
                cJSON_Delete(root);
        }
        if (rc != CFG_OK)
            return rc;
    }
}

static int docs_init(struct cfg_docs *d, const char *name)
{
    memset(d, 0, sizeof(*d));
    d->name = strdup(name);
    d->index = cfg__index_new();
    return d->name != NULL && d->index != NULL ? CFG_OK : CFG_ENOMEM;
}

static int parse_yaml(struct cfg_docs *d, const char *buf, size_t len, char *err, size_t errlen)
{
    struct builder b = {.name = d->name, .buf = buf, .len = len, .err = err, .errlen = errlen};
    int rc;

    if (!yaml_parser_initialize(&b.parser))
        return fail(&b, CFG_ENOMEM, 0, "out of memory");
    yaml_parser_set_input_string(&b.parser, (const unsigned char *)buf, len);
    b.index = d->index;
    rc = build_stream(&b, d);
    yaml_parser_delete(&b.parser);
    return rc;
}

int cfg_docs_parse(struct cfg_docs *out, const char *name, const char *buf, size_t len, char *err,
                   size_t errlen)
{
    struct cfg_docs d;
    int rc;

    if (len > CFG_DOCS_MAX_BYTES) {
        if (err != NULL && errlen > 0)
            snprintf(err, errlen, "%s: larger than the %zu MiB cap", name,
                     CFG_DOCS_MAX_BYTES >> 20);
        return CFG_ETOOBIG;
    }
    rc = docs_init(&d, name);
    if (rc != CFG_OK) {
        if (err != NULL && errlen > 0)
            snprintf(err, errlen, "%s: out of memory", name);
    } else if (cfg__json_looks(buf, len)) {
        rc = cfg__json_parse(&d, buf, len, err, errlen);
    } else {
        rc = parse_yaml(&d, buf, len, err, errlen);
    }
    if (rc == CFG_OK) {
        *out = d;
        return CFG_OK;
    }
    cfg_docs_cleanup(&d);
    return rc;
}

void cfg_docs_cleanup(struct cfg_docs *d)
{
    for (size_t i = 0; i < d->n; i++)
        cJSON_Delete(d->docs[i]);
    free(d->docs);
    free(d->name);
    cfg__index_free(d->index);
    memset(d, 0, sizeof(*d));
}
