/*
 * kube_arena.c - the bump allocator behind decoded specs.
 *
 * A decoded pod is a tree of small strings and arrays that all die together
 * once the engine has copied what it keeps, so they come from chunks freed in
 * one call rather than from a malloc each.
 */
#include <stdalign.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "kube_decode.h"

#define KUBE_ARENA_CHUNK 8192

struct kube_arena_chunk {
    struct kube_arena_chunk *next;
    size_t size; /* usable bytes in data */
    size_t used;
    alignas(max_align_t) unsigned char data[];
};

struct kube_arena {
    struct kube_arena_chunk *head;
};

struct kube_arena *kube_arena_new(void)
{
    return calloc(1, sizeof(struct kube_arena));
}

void kube_arena_free(struct kube_arena *a)
{
    struct kube_arena_chunk *c, *next;

    if (a == NULL)
        return;
    for (c = a->head; c != NULL; c = next) {
        next = c->next;
        free(c);
    }
    free(a);
}

static struct kube_arena_chunk *kube__arena_grow(struct kube_arena *a, size_t need)
{
    struct kube_arena_chunk *c;
    size_t size = need > KUBE_ARENA_CHUNK ? need : KUBE_ARENA_CHUNK;

    if (size > SIZE_MAX - sizeof(*c))
        return NULL;
    c = malloc(sizeof(*c) + size);
    if (c == NULL)
        return NULL;
    c->size = size;
    c->used = 0;
    /* A big block gets a chunk of its own behind the head, so the head's
     * free space stays usable for the small ones. */
    if (need > KUBE_ARENA_CHUNK / 2 && a->head != NULL) {
        c->next = a->head->next;
        a->head->next = c;
    } else {
        c->next = a->head;
        a->head = c;
    }
    return c;
}

void *kube_arena_alloc(struct kube_arena *a, size_t size)
{
    const size_t align = alignof(max_align_t);
    struct kube_arena_chunk *c = a->head;
    size_t start;

    if (size == 0)
        size = 1;
    if (size > SIZE_MAX - align)
        return NULL;
    size = (size + align - 1) & ~(align - 1);
    if (c == NULL || c->size - c->used < size) {
        c = kube__arena_grow(a, size);
        if (c == NULL)
            return NULL;
    }
    start = c->used;
    c->used += size;
    memset(c->data + start, 0, size);
    return c->data + start;
}

char *kube_arena_strdup(struct kube_arena *a, const char *s)
{
    size_t len;
    char *p;

    if (s == NULL)
        return NULL;
    len = strlen(s);
    p = kube_arena_alloc(a, len + 1);
    if (p != NULL)
        memcpy(p, s, len + 1);
    return p;
}
