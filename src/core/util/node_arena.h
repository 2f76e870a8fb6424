/*
 * node_arena.h - cJSON nodes that live in a per-request bump arena (private to src/core): the
 * engine's copy-on-write pod copy and the JSON Patch it returns are built from these (and the
 * decision's warning / audit / explain strings are kept there), so one request costs one
 * malloc'd block instead of a malloc and a free per node or line.
 *
 * Rules for an arena tree: never cJSON_Delete it or any node in it, and never hand it to a
 * cJSON function that frees or strdups (cJSON_AddItemToObject*, cJSON_Replace*,
 * cJSON_SetValuestring...): use the gpa_jn_* linkers below. cJSON_DetachItemViaPointer,
 * read-only calls, cJSON_Print* and cJSON_Duplicate (which makes an ordinary heap tree) are
 * fine. Flags keep their cJSON meaning so a heap copy comes out right: cJSON_IsReference on
 * a node and cJSON_StringIsConst on a key mean "borrowed from the request's pod"; any other
 * string is in the arena or in static storage.
 */
#ifndef GPA_NODE_ARENA_H
#define GPA_NODE_ARENA_H

#include <cjson/cJSON.h>
#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "gpu_admission/common.h"

/* A number node's valueint, saturated as cJSON's own parser and cJSON_CreateNumber do, so
 * nodes built here or by the codec's reader compare equal to cJSON's. */
static inline int gpa_jn_valueint(double d)
{
    if (d >= INT_MAX) return INT_MAX;
    if (d <= (double)INT_MIN) return INT_MIN;
    return (int)d;
}

/* cJSON_IsObject & co. without a call into the shared library (these run a few hundred
 * times per review); same answers, NULL included. */
static inline bool gpa_jn_is(const cJSON *v, int type)
{
    return v && (v->type & 0xFF) == type;
}
#define gpa_is_object(v) gpa_jn_is((v), cJSON_Object)
#define gpa_is_array(v)  gpa_jn_is((v), cJSON_Array)
#define gpa_is_string(v) gpa_jn_is((v), cJSON_String)
#define gpa_is_number(v) gpa_jn_is((v), cJSON_Number)
#define gpa_is_null(v)   gpa_jn_is((v), cJSON_NULL)
#define gpa_is_true(v)   gpa_jn_is((v), cJSON_True)

/* The arena: the free room of the current block (inline, so a node costs a few
 * instructions), and the chain of blocks (the first one holds this header). */
typedef struct gpa_narena_blk gpa_narena_blk;
typedef struct gpa_narena {
    unsigned char *cur, *end;
    gpa_narena_blk *blocks;
} gpa_narena;

/* One malloc; NULL on OOM. */
gpa_narena *gpa_narena_new(void);
void gpa_narena_free(gpa_narena *a);
/* n bytes aligned to 8 from a new block; NULL on OOM. */
void *gpa_narena_grow(gpa_narena *a, size_t n);

/* n bytes aligned to 8, not zeroed; NULL on OOM. */
static inline void *gpa_narena_alloc(gpa_narena *a, size_t n)
{
    /* end is 8-aligned, so the padding always fits */
    size_t pad = (size_t)(-(uintptr_t)a->cur & 7);
    if ((size_t)(a->end - a->cur) - pad < n) return gpa_narena_grow(a, n);
    unsigned char *p = a->cur + pad;
    a->cur = p + n;
    return p;
}

/* A copy of s[0..n) plus a NUL; NULL on OOM. */
char *gpa_narena_strndup(gpa_narena *a, const char *s, size_t n);
char *gpa_narena_strdup(gpa_narena *a, const char *s);

/* A zeroed node of the given cJSON type; NULL on OOM. */
static inline cJSON *gpa_jn_new(gpa_narena *a, int type)
{
    cJSON *n = gpa_narena_alloc(a, sizeof(cJSON));
    if (n) *n = (cJSON){.type = type};
    return n;
}

/* A string node holding an arena copy of s (NULL s or OOM: NULL). */
cJSON *gpa_jn_str(gpa_narena *a, const char *s);
cJSON *gpa_jn_strn(gpa_narena *a, const char *s, size_t len);
/* A number node (valueint saturated like cJSON_CreateNumber). */
cJSON *gpa_jn_num(gpa_narena *a, double d);

/* Appends item (detached) to an array or object; the item keeps whatever key it has. */
static inline void gpa_jn_append(cJSON *parent, cJSON *item)
{
    item->next = NULL;
    cJSON *first = parent->child;
    if (!first) {
        parent->child = item;
        item->prev = item;
        return;
    }
    cJSON *last = first->prev;
    last->next = item;
    item->prev = last;
    first->prev = item;
}

/* Appends item to obj under key, which must be static or in the arena (never copied). */
static inline void gpa_jn_add(cJSON *obj, const char *key, cJSON *item)
{
    item->string = (char *)key;
    item->type &= ~cJSON_StringIsConst;
    gpa_jn_append(obj, item);
}

/* Puts item in old's place (same key, same position); old is left detached, not freed. */
void gpa_jn_replace(cJSON *parent, cJSON *old, cJSON *item);

/* A deep copy whose every string and key is in the arena (the top node has no key); NULL
 * on OOM or when nested deeper than CJSON_NESTING_LIMIT. */
cJSON *gpa_jn_dup(gpa_narena *a, const cJSON *v);

/* The member key of obj (case-sensitive, first match: cJSON_GetObjectItemCaseSensitive's
 * answer); NULL when absent. Compares the first byte before calling strcmp: most keys differ there.
 */
cJSON *gpa_jn_get(const cJSON *obj, const char *key);

/* jsonpatch.c: the JSON Patch turning from into to, built in arena a; values are moved out
 * of `to` when they own their memory (to is left in an unspecified state). The ops borrow
 * nothing from `from` or `to`. */
int gpa_patch_diff_arena(cJSON **out_ops, gpa_narena *a, const cJSON *from, cJSON *to,
                         gpa_error *err);

#endif
