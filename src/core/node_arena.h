/*
 * node_arena.h - cJSON nodes that live in a gpa_arena (private to src/core): the engine's
 * copy-on-write pod copy and the JSON Patch it returns are built from these, so one request
 * costs one arena block instead of a malloc and a free per node.
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
#include <stdbool.h>

#include "arena.h"
#include "gpu_admission/common.h"

/* A zeroed node of the given cJSON type; NULL on OOM. */
static inline cJSON *gpa_jn_new(gpa_arena *a, int type)
{
    cJSON *n = gpa_arena_alloc(a, sizeof(cJSON));
    if (n) n->type = type;
    return n;
}

/* A string node holding an arena copy of s (NULL s or OOM: NULL). */
cJSON *gpa_jn_str(gpa_arena *a, const char *s);
cJSON *gpa_jn_strn(gpa_arena *a, const char *s, size_t len);
/* A number node (valueint saturated like cJSON_CreateNumber). */
cJSON *gpa_jn_num(gpa_arena *a, double d);

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
cJSON *gpa_jn_dup(gpa_arena *a, const cJSON *v);

/* The member key of obj (case-sensitive, first match: cJSON_GetObjectItemCaseSensitive's
 * answer); NULL when absent. Compares the first byte before calling strcmp: most keys differ there.
 */
cJSON *gpa_jn_get(const cJSON *obj, const char *key);

/* jsonpatch.c: the JSON Patch turning from into to, built in arena a; values are moved out
 * of `to` when they own their memory (to is left in an unspecified state). The ops borrow
 * nothing from `from` or `to`. */
int gpa_patch_diff_arena(cJSON **out_ops, gpa_arena *a, const cJSON *from, cJSON *to,
                         gpa_error *err);

#endif
