/* index.c - open-addressing string index; keys are borrowed from the objects. */
#include <stdlib.h>
#include <string.h>

#include "internal.h"

static uint32_t hash_key(const char *s)
{
    uint32_t h = 2166136261u; /* FNV-1a */

    while (*s) {
        h ^= (unsigned char)*s++;
        h *= 16777619u;
    }
    return h;
}

void pidx_init(struct pidx *ix)
{
    memset(ix, 0, sizeof(*ix));
}

void pidx_cleanup(struct pidx *ix)
{
    free(ix->slots);
    memset(ix, 0, sizeof(*ix));
}

static size_t find_slot(const struct pidx *ix, const char *key, uint32_t h)
{
    size_t mask = ix->cap - 1;
    size_t i = h & mask;

    while (ix->slots[i].id >= 0) {
        if (ix->slots[i].hash == h && strcmp(ix->slots[i].key, key) == 0)
            return i;
        i = (i + 1) & mask;
    }
    return i;
}

int32_t pidx_get(const struct pidx *ix, const char *key)
{
    if (ix->cap == 0 || !key)
        return -1;
    return ix->slots[find_slot(ix, key, hash_key(key))].id;
}

static int grow(struct pidx *ix)
{
    size_t cap = ix->cap ? ix->cap * 2 : 64;
    struct pidx_slot *old = ix->slots;
    size_t old_cap = ix->cap;
    struct pidx_slot *slots = malloc(cap * sizeof(*slots));

    if (!slots)
        return POLICY_ENOMEM;
    for (size_t i = 0; i < cap; i++)
        slots[i].id = -1;
    ix->slots = slots;
    ix->cap = cap;
    for (size_t i = 0; i < old_cap; i++) {
        if (old[i].id < 0)
            continue;
        ix->slots[find_slot(ix, old[i].key, old[i].hash)] = old[i];
    }
    free(old);
    return POLICY_OK;
}

int pidx_put(struct pidx *ix, const char *key, int32_t id)
{
    uint32_t h = hash_key(key);
    size_t i;

    if ((ix->n + 1) * 4 > ix->cap * 3 && grow(ix) != POLICY_OK)
        return POLICY_ENOMEM;
    i = find_slot(ix, key, h);
    if (ix->slots[i].id < 0)
        ix->n++;
    ix->slots[i].key = key;
    ix->slots[i].hash = h;
    ix->slots[i].id = id;
    return POLICY_OK;
}

/* Backward-shift deletion keeps probe chains intact without tombstones. */
void pidx_del(struct pidx *ix, const char *key)
{
    size_t mask, i, j;

    if (ix->cap == 0 || !key)
        return;
    mask = ix->cap - 1;
    i = find_slot(ix, key, hash_key(key));
    if (ix->slots[i].id < 0)
        return;
    ix->slots[i].id = -1;
    ix->n--;
    j = i;
    for (;;) {
        size_t home;

        j = (j + 1) & mask;
        if (ix->slots[j].id < 0)
            return;
        home = ix->slots[j].hash & mask;
        /* Move j back to i if i lies cyclically in [home, j). */
        if ((j > i && (home <= i || home > j)) || (j < i && (home <= i && home > j))) {
            ix->slots[i] = ix->slots[j];
            ix->slots[j].id = -1;
            i = j;
        }
    }
}
