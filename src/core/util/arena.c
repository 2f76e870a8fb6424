/*
 * arena.c - the policy snapshot's allocator (see arena.h): the per-request node arena
 * (node_arena.c) with zeroed allocations, so there is one bump allocator in the core. Never
 * frees piecemeal.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "util/arena.h"
#include "util/node_arena.h"

struct gpa_arena {
    gpa_narena *n;
};

gpa_arena *gpa_arena_new(void)
{
    gpa_arena *a = malloc(sizeof *a);
    if (a && !(a->n = gpa_narena_new())) {
        free(a);
        return NULL;
    }
    return a;
}

void gpa_arena_free(gpa_arena *a)
{
    if (!a) return;
    gpa_narena_free(a->n);
    free(a);
}

void *gpa_arena_alloc(gpa_arena *a, size_t n)
{
    if (n > SIZE_MAX / 2) return NULL;
    if (n == 0) n = 1;
    void *p = gpa_narena_alloc(a->n, n);
    if (p) memset(p, 0, n);
    return p;
}

void *gpa_arena_array(gpa_arena *a, size_t n, size_t sz)
{
    if (sz && n > SIZE_MAX / 4 / sz) return NULL;
    return gpa_arena_alloc(a, n * sz);
}

char *gpa_arena_strndup(gpa_arena *a, const char *s, size_t n)
{
    return gpa_narena_strndup(a->n, s, n);
}

char *gpa_arena_strdup(gpa_arena *a, const char *s)
{
    return gpa_narena_strdup(a->n, s);
}
