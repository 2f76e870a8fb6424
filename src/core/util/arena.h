/*
 * arena.h - a bump allocator owning everything a gpa_policy points to, so a policy snapshot
 * is freed in one call by its last unref. Private to src/core. Not thread-safe: only the
 * loader allocates, before the snapshot is published.
 */
#ifndef GPA_ARENA_H
#define GPA_ARENA_H

#include <stddef.h>

typedef struct gpa_arena gpa_arena;

gpa_arena *gpa_arena_new(void);
void gpa_arena_free(gpa_arena *a);
/* Zeroed, 8-byte aligned (enough for every policy struct: pointers, int64, double); NULL on
 * allocation failure. n == 0 gives a valid pointer. */
void *gpa_arena_alloc(gpa_arena *a, size_t n);
/* Room for n zeroed elements of size sz; overflow-checked. */
void *gpa_arena_array(gpa_arena *a, size_t n, size_t sz);
char *gpa_arena_strdup(gpa_arena *a, const char *s);
char *gpa_arena_strndup(gpa_arena *a, const char *s, size_t n);

#endif
