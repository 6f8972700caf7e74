/*
 * node_index.c - a pointer-keyed hash table from cJSON nodes to their source
 * line (and original scalar text). Open addressing, linear probing, kept at
 * most half full; the table dies with its docs, and entries are forgotten
 * only for nodes deleted while the docs are read (merge sources, null roots).
 */
#include <stdlib.h>
#include <string.h>

#include "cfg_internal.h"

#define INDEX_MIN_CAP 64

static size_t slot_of(const void *node, size_t cap)
{
    uint64_t h = (uint64_t)(uintptr_t)node;

    h ^= h >> 33;
    h *= UINT64_C(0xff51afd7ed558ccd);
    h ^= h >> 33;
    return (size_t)h & (cap - 1);
}

struct cfg__index *cfg__index_new(void)
{
    return calloc(1, sizeof(struct cfg__index));
}

void cfg__index_free(struct cfg__index *ix)
{
    if (ix == NULL)
        return;
    for (size_t i = 0; i < ix->cap; i++)
        free(ix->slots[i].text);
    free(ix->slots);
    free(ix);
}

static struct cfg__index_entry *find_slot(struct cfg__index_entry *slots, size_t cap,
                                          const void *node)
{
    size_t i = slot_of(node, cap);

    while (slots[i].node != NULL && slots[i].node != node)
        i = (i + 1) & (cap - 1);
    return &slots[i];
}

static int grow(struct cfg__index *ix)
{
    size_t cap = ix->cap ? ix->cap * 2 : INDEX_MIN_CAP;
    struct cfg__index_entry *slots = calloc(cap, sizeof(*slots));

    if (slots == NULL)
        return CFG_ENOMEM;
    for (size_t i = 0; i < ix->cap; i++) {
        if (ix->slots[i].node != NULL)
            *find_slot(slots, cap, ix->slots[i].node) = ix->slots[i];
    }
    free(ix->slots);
    ix->slots = slots;
    ix->cap = cap;
    return CFG_OK;
}

int cfg__index_put(struct cfg__index *ix, const void *node, unsigned line, const char *text,
                   size_t len)
{
    struct cfg__index_entry *e;
    char *copy = NULL;

    if ((ix->n + 1) * 2 > ix->cap && grow(ix) != CFG_OK)
        return CFG_ENOMEM;
    if (text != NULL) {
        copy = malloc(len + 1);
        if (copy == NULL)
            return CFG_ENOMEM;
        memcpy(copy, text, len);
        copy[len] = '\0';
    }
    e = find_slot(ix->slots, ix->cap, node);
    if (e->node == NULL)
        ix->n++;
    free(e->text);
    e->node = node;
    e->line = line;
    e->text = copy;
    e->merged = false;
    e->anchored = false;
    return CFG_OK;
}

const struct cfg__index_entry *cfg__index_get(const struct cfg__index *ix, const void *node)
{
    const struct cfg__index_entry *e;

    if (ix == NULL || ix->cap == 0 || node == NULL)
        return NULL;
    e = find_slot(ix->slots, ix->cap, node);
    return e->node == node ? e : NULL;
}

/* Backward-shift deletion keeps every probe chain unbroken without tombstones. */
void cfg__index_forget(struct cfg__index *ix, const void *node)
{
    size_t mask, i, j, k;

    if (cfg__index_get(ix, node) == NULL)
        return;
    mask = ix->cap - 1;
    i = (size_t)(find_slot(ix->slots, ix->cap, node) - ix->slots);
    free(ix->slots[i].text);
    ix->slots[i] = (struct cfg__index_entry){0};
    ix->n--;
    for (j = (i + 1) & mask; ix->slots[j].node != NULL; j = (j + 1) & mask) {
        k = slot_of(ix->slots[j].node, ix->cap);
        if (((j - k) & mask) < ((j - i) & mask))
            continue; /* its home lies between the hole and it: it stays */
        ix->slots[i] = ix->slots[j];
        ix->slots[j] = (struct cfg__index_entry){0};
        i = j;
    }
}

static struct cfg__index_entry *entry_of(struct cfg__index *ix, const void *node)
{
    return (struct cfg__index_entry *)cfg__index_get(ix, node);
}

void cfg__index_set_merged(struct cfg__index *ix, const void *node)
{
    struct cfg__index_entry *e = entry_of(ix, node);

    if (e != NULL)
        e->merged = true;
}

void cfg__index_set_anchored(struct cfg__index *ix, const void *node)
{
    struct cfg__index_entry *e = entry_of(ix, node);

    if (e != NULL)
        e->anchored = true;
}
