/*
 * arena.c - bump allocator behind a policy snapshot (see arena.h). Blocks are malloc'd and
 * chained; a request bigger than a block gets a block of its own. Never frees piecemeal.
 */
#include <stdalign.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "arena.h"

#define BLOCK_SIZE 16384

typedef struct block {
    struct block *next;
    size_t used, cap;
    alignas(max_align_t) unsigned char data[];
} block;

struct gpa_arena {
    block *head;
};

gpa_arena *gpa_arena_new(void)
{
    return calloc(1, sizeof(gpa_arena));
}

void gpa_arena_free(gpa_arena *a)
{
    if (!a) return;
    for (block *b = a->head, *n; b; b = n) {
        n = b->next;
        free(b);
    }
    free(a);
}

void *gpa_arena_alloc(gpa_arena *a, size_t n)
{
    const size_t al = alignof(max_align_t);
    if (n > SIZE_MAX / 2) return NULL;
    n = (n + al - 1) & ~(al - 1);
    if (n == 0) n = al;
    block *b = a->head;
    if (!b || b->cap - b->used < n) {
        size_t cap = n > BLOCK_SIZE ? n : BLOCK_SIZE;
        block *nb = malloc(sizeof *nb + cap);
        if (!nb) return NULL;
        nb->used = 0;
        nb->cap = cap;
        if (b && n > BLOCK_SIZE) {
            /* keep filling the current block; chain the big one behind it */
            nb->next = b->next;
            b->next = nb;
        } else {
            nb->next = b;
            a->head = nb;
        }
        b = nb;
    }
    void *p = b->data + b->used;
    b->used += n;
    memset(p, 0, n);
    return p;
}

void *gpa_arena_array(gpa_arena *a, size_t n, size_t sz)
{
    if (sz && n > SIZE_MAX / 4 / sz) return NULL;
    return gpa_arena_alloc(a, n * sz);
}

char *gpa_arena_strndup(gpa_arena *a, const char *s, size_t n)
{
    char *p = gpa_arena_alloc(a, n + 1);
    if (p) {
        memcpy(p, s, n);
        p[n] = '\0';
    }
    return p;
}

char *gpa_arena_strdup(gpa_arena *a, const char *s)
{
    return s ? gpa_arena_strndup(a, s, strlen(s)) : NULL;
}
