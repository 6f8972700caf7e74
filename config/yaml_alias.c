/*
 * yaml_alias.c - anchors and aliases: a document's anchors by name, and the
 * copies an alias makes. A cJSON tree cannot share a node, so every alias is
 * a deep copy, and what copies cost is what CFG_DOCS_MAX_EXPANSION caps.
 */
#include <stdlib.h>
#include <string.h>

#include "cfg_internal.h"

/* What one node costs in a copy, besides its strings: about a cJSON and its index entry. */
#define NODE_COST 64

static size_t name_hash(const char *s)
{
    uint64_t h = UINT64_C(1469598103934665603);

    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * UINT64_C(1099511628211);
    return (size_t)h;
}

/* The slot holding name, or the free slot where it would go. */
static size_t *anchor_slot(const struct cfg__anchors *t, const char *name)
{
    size_t i = name_hash(name) & (t->nslots - 1);

    while (t->slots[i] != 0 && strcmp(t->v[t->slots[i] - 1].name, name) != 0)
        i = (i + 1) & (t->nslots - 1);
    return &t->slots[i];
}

static int anchors_grow(struct cfg__anchors *t)
{
    size_t nslots = t->nslots ? t->nslots * 2 : 16, *slots, *old = t->slots;
    struct cfg__anchor *v;

    if (t->n == t->cap) {
        v = realloc(t->v, (t->cap ? t->cap * 2 : 8) * sizeof(*v));
        if (v == NULL)
            return CFG_ENOMEM;
        t->v = v;
        t->cap = t->cap ? t->cap * 2 : 8;
    }
    if ((t->n + 1) * 2 <= t->nslots)
        return CFG_OK;
    slots = calloc(nslots, sizeof(*slots));
    if (slots == NULL)
        return CFG_ENOMEM;
    t->slots = slots;
    t->nslots = nslots;
    for (size_t i = 0; i < t->n; i++)
        *anchor_slot(t, t->v[i].name) = i + 1;
    free(old);
    return CFG_OK;
}

void cfg__anchors_cleanup(struct cfg__anchors *t)
{
    for (size_t i = 0; i < t->n; i++)
        free(t->v[i].name);
    free(t->v);
    free(t->slots);
    memset(t, 0, sizeof(*t));
}

int cfg__anchors_put(struct cfg__anchors *t, const char *name, const cJSON *node)
{
    struct cfg__anchor a = {.node = node};
    size_t *slot;

    cfg__tree_measure(node, &a.cost, &a.height);
    if (anchors_grow(t) != CFG_OK)
        return CFG_ENOMEM;
    slot = anchor_slot(t, name);
    if (*slot != 0) { /* redefined: aliases from here on mean the new node */
        a.name = t->v[*slot - 1].name;
        t->v[*slot - 1] = a;
        return CFG_OK;
    }
    a.name = strdup(name);
    if (a.name == NULL)
        return CFG_ENOMEM;
    t->v[t->n++] = a;
    *slot = t->n;
    return CFG_OK;
}

const struct cfg__anchor *cfg__anchors_get(const struct cfg__anchors *t, const char *name)
{
    size_t *slot;

    if (t->nslots == 0)
        return NULL;
    slot = anchor_slot(t, name);
    return *slot != 0 ? &t->v[*slot - 1] : NULL;
}

void cfg__tree_measure(const cJSON *node, size_t *cost, int *height)
{
    const cJSON *child;
    size_t c = NODE_COST;
    int h = 0;

    if (node->string != NULL)
        c += strlen(node->string);
    if (cJSON_IsString(node))
        c += strlen(node->valuestring);
    if (cJSON_IsObject(node) || cJSON_IsArray(node)) {
        h = 1;
        cJSON_ArrayForEach(child, node)
        {
            size_t cc;
            int ch;

            cfg__tree_measure(child, &cc, &ch);
            c += cc;
            if (ch + 1 > h)
                h = ch + 1;
        }
    }
    *cost = c;
    *height = h;
}

void cfg__tree_forget(struct cfg__index *ix, const cJSON *node)
{
    const cJSON *child;

    cJSON_ArrayForEach(child, node)
    {
        cfg__tree_forget(ix, child);
    }
    cfg__index_forget(ix, node);
}

/* One node without its children, remembered as its original is. */
static cJSON *copy_one(struct cfg__index *ix, const cJSON *node, unsigned line)
{
    const struct cfg__index_entry *e = cfg__index_get(ix, node);
    cJSON *copy = cJSON_Duplicate(node, false);
    const char *text = e != NULL ? e->text : NULL;

    if (copy == NULL)
        return NULL;
    if (cfg__index_put(ix, copy,
                       line != 0   ? line
                       : e != NULL ? e->line
                                   : 0,
                       text, text != NULL ? strlen(text) : 0) != CFG_OK) {
        cJSON_Delete(copy);
        return NULL;
    }
    return copy;
}

cJSON *cfg__tree_copy(struct cfg__index *ix, const cJSON *node, unsigned line)
{
    cJSON *copy = copy_one(ix, node, line), *child_copy;
    const cJSON *child;

    if (copy == NULL)
        return NULL;
    cJSON_ArrayForEach(child, node)
    {
        child_copy = cfg__tree_copy(ix, child, 0);
        if (child_copy == NULL) {
            cfg__tree_forget(ix, copy);
            cJSON_Delete(copy);
            return NULL;
        }
        cJSON_AddItemToArray(copy, child_copy);
    }
    return copy;
}
