/*
 * arena.c - the bump allocator behind decoded objects and HTTP answers.
 *
 * A decoded pod is a tree of small strings and arrays that all die together
 * once the engine has copied what it keeps, and so is one request's answer:
 * they come from chunks freed in one call rather than from a malloc each.
 */
#include <stdalign.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base.h"

#define ARENA_CHUNK 8192

struct arena_chunk {
    struct arena_chunk *next;
    size_t size; /* usable bytes in data */
    size_t used;
    alignas(max_align_t) unsigned char data[];
};

struct arena_defer {
    struct arena_defer *next;
    void (*release)(void *);
    void *arg;
};

struct ext_arena {
    struct arena_chunk *head;
    struct arena_defer *defers;
};

struct ext_arena *ext_arena_new(void)
{
    return calloc(1, sizeof(struct ext_arena));
}

void ext_arena_free(struct ext_arena *a)
{
    struct arena_chunk *c, *next;

    if (a == NULL)
        return;
    /* Releases first: they may read memory of the arena. */
    for (struct arena_defer *d = a->defers; d != NULL; d = d->next)
        d->release(d->arg);
    for (c = a->head; c != NULL; c = next) {
        next = c->next;
        free(c);
    }
    free(a);
}

static struct arena_chunk *arena_grow(struct ext_arena *a, size_t need)
{
    struct arena_chunk *c;
    size_t size = need > ARENA_CHUNK ? need : ARENA_CHUNK;

    if (size > SIZE_MAX - sizeof(*c))
        return NULL;
    c = malloc(sizeof(*c) + size);
    if (c == NULL)
        return NULL;
    c->size = size;
    c->used = 0;
    /* A big block gets a chunk of its own behind the head, so the head's
     * free space stays usable for the small ones. */
    if (need > ARENA_CHUNK / 2 && a->head != NULL) {
        c->next = a->head->next;
        a->head->next = c;
    } else {
        c->next = a->head;
        a->head = c;
    }
    return c;
}

void *ext_arena_alloc(struct ext_arena *a, size_t size)
{
    const size_t align = alignof(max_align_t);
    struct arena_chunk *c = a->head;
    size_t start;

    if (size == 0)
        size = 1;
    if (size > SIZE_MAX - align)
        return NULL;
    size = (size + align - 1) & ~(align - 1);
    if (c == NULL || c->size - c->used < size) {
        c = arena_grow(a, size);
        if (c == NULL)
            return NULL;
    }
    start = c->used;
    c->used += size;
    memset(c->data + start, 0, size);
    return c->data + start;
}

void *ext_arena_calloc(struct ext_arena *a, size_t n, size_t size)
{
    if (size != 0 && n > SIZE_MAX / size)
        return NULL;
    return ext_arena_alloc(a, n * size);
}

char *ext_arena_strdup(struct ext_arena *a, const char *s)
{
    size_t len;
    char *p;

    if (s == NULL)
        return NULL;
    len = strlen(s);
    p = ext_arena_alloc(a, len + 1);
    if (p != NULL)
        memcpy(p, s, len + 1);
    return p;
}

int ext_arena_defer(struct ext_arena *a, void (*release)(void *), void *arg)
{
    struct arena_defer *d = ext_arena_alloc(a, sizeof(*d));

    if (d == NULL)
        return EXT_ENOMEM;
    d->release = release;
    d->arg = arg;
    d->next = a->defers;
    a->defers = d;
    return EXT_OK;
}
