/*
 * node_arena.c - cJSON nodes in a gpa_arena: builders, linkers, a deep copy and a fast
 * member lookup (see node_arena.h for the rules an arena tree lives by).
 *
 * Must never free anything (the arena owns it all) and never leave a string of an arena
 * copy pointing outside the arena or static storage.
 */
#include <limits.h>
#include <string.h>

#include "node_arena.h"

cJSON *gpa_jn_strn(gpa_arena *a, const char *s, size_t len)
{
    char *c = gpa_arena_strndup(a, s, len);
    cJSON *n = c ? gpa_jn_new(a, cJSON_String) : NULL;
    if (n) n->valuestring = c;
    return n;
}

cJSON *gpa_jn_str(gpa_arena *a, const char *s)
{
    return s ? gpa_jn_strn(a, s, strlen(s)) : NULL;
}

cJSON *gpa_jn_num(gpa_arena *a, double d)
{
    cJSON *n = gpa_jn_new(a, cJSON_Number);
    if (!n) return NULL;
    n->valuedouble = d;
    /* cJSON_CreateNumber's saturation, so a heap copy compares equal */
    if (d >= INT_MAX)
        n->valueint = INT_MAX;
    else if (d <= (double)INT_MIN)
        n->valueint = INT_MIN;
    else
        n->valueint = (int)d;
    return n;
}

void gpa_jn_replace(cJSON *parent, cJSON *old, cJSON *item)
{
    item->string = old->string;
    item->type = (item->type & ~cJSON_StringIsConst) | (old->type & cJSON_StringIsConst);
    item->next = old->next;
    if (parent->child == old) {
        /* the first element's prev is the last one (or itself when alone) */
        item->prev = old->prev == old ? item : old->prev;
        parent->child = item;
    } else {
        item->prev = old->prev;
        item->prev->next = item;
    }
    if (item->next)
        item->next->prev = item;
    else
        parent->child->prev = item; /* item is the new last element */
    old->next = old->prev = NULL;
}

static cJSON *dup_rec(gpa_arena *a, const cJSON *v, int depth)
{
    if (depth > CJSON_NESTING_LIMIT) return NULL;
    cJSON *n = gpa_jn_new(a, v->type & ~(cJSON_IsReference | cJSON_StringIsConst));
    if (!n) return NULL;
    n->valueint = v->valueint;
    n->valuedouble = v->valuedouble;
    if (v->valuestring && !(n->valuestring = gpa_arena_strdup(a, v->valuestring))) return NULL;
    for (const cJSON *c = v->child; c; c = c->next) {
        cJSON *d = dup_rec(a, c, depth + 1);
        if (!d) return NULL;
        if (c->string && !(d->string = gpa_arena_strdup(a, c->string))) return NULL;
        gpa_jn_append(n, d);
    }
    return n;
}

cJSON *gpa_jn_dup(gpa_arena *a, const cJSON *v)
{
    return v ? dup_rec(a, v, 0) : NULL;
}

cJSON *gpa_jn_get(const cJSON *obj, const char *key)
{
    if (!obj) return NULL; /* like cJSON: any node's keyed children (an array has none) */
    const char k0 = key[0];
    for (cJSON *c = obj->child; c; c = c->next)
        if (c->string && c->string[0] == k0 && strcmp(c->string, key) == 0) return c;
    return NULL;
}
