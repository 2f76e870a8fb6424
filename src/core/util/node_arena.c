/*
 * node_arena.c - the per-request bump arena and cJSON nodes in it: builders, linkers, a deep
 * copy and a fast member lookup (see node_arena.h for the rules an arena tree lives by).
 *
 * Must never free anything (the arena owns it all) and never leave a string of an arena
 * copy pointing outside the arena or static storage.
 */
#include <limits.h>
#include <stdalign.h>
#include <stdlib.h>
#include <string.h>

#include "util/node_arena.h"

/* Enough for the copy and the patch of a usual GPU pod (~10 KB) in the first block. */
#define FIRST_BLOCK 16384
#define NEXT_BLOCK  16384

struct gpa_narena_blk {
    gpa_narena_blk *next;
    alignas(max_align_t) unsigned char data[];
};

gpa_narena *gpa_narena_new(void)
{
    gpa_narena_blk *b = malloc(sizeof *b + FIRST_BLOCK);
    if (!b) return NULL;
    b->next = NULL;
    gpa_narena *a = (gpa_narena *)b->data; /* the header lives at the block's start */
    a->blocks = b;
    a->cur = b->data + sizeof *a;
    a->end = b->data + FIRST_BLOCK;
    return a;
}

void gpa_narena_free(gpa_narena *a)
{
    if (!a) return;
    gpa_narena_blk *b = a->blocks; /* a lives in the last block of the chain */
    while (b) {
        gpa_narena_blk *n = b->next;
        free(b);
        b = n;
    }
}

void *gpa_narena_grow(gpa_narena *a, size_t n)
{
    if (n > SIZE_MAX / 2) return NULL;
    size_t cap = n > NEXT_BLOCK ? n : NEXT_BLOCK;
    gpa_narena_blk *b = malloc(sizeof *b + cap);
    if (!b) return NULL;
    /* the newest block goes first; the header's block stays last */
    b->next = a->blocks;
    a->blocks = b;
    if (n > NEXT_BLOCK / 2) /* a big request gets its own block; keep filling the current */
        return b->data;
    a->cur = b->data + n;
    a->end = b->data + cap;
    return b->data;
}

char *gpa_narena_strndup(gpa_narena *a, const char *s, size_t n)
{
    char *p = n < SIZE_MAX / 2 ? gpa_narena_alloc(a, n + 1) : NULL;
    if (p) {
        memcpy(p, s, n);
        p[n] = '\0';
    }
    return p;
}

char *gpa_narena_strdup(gpa_narena *a, const char *s)
{
    return s ? gpa_narena_strndup(a, s, strlen(s)) : NULL;
}

cJSON *gpa_jn_strn(gpa_narena *a, const char *s, size_t len)
{
    /* the node and its bytes in one allocation */
    cJSON *n = len < SIZE_MAX / 2 ? gpa_narena_alloc(a, sizeof *n + len + 1) : NULL;
    if (!n) return NULL;
    char *c = (char *)(n + 1);
    memcpy(c, s, len);
    c[len] = '\0';
    *n = (cJSON){.type = cJSON_String, .valuestring = c};
    return n;
}

cJSON *gpa_jn_str(gpa_narena *a, const char *s)
{
    return s ? gpa_jn_strn(a, s, strlen(s)) : NULL;
}

cJSON *gpa_jn_num(gpa_narena *a, double d)
{
    cJSON *n = gpa_jn_new(a, cJSON_Number);
    if (!n) return NULL;
    n->valuedouble = d;
    n->valueint = gpa_jn_valueint(d);
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

static cJSON *dup_rec(gpa_narena *a, const cJSON *v, int depth)
{
    if (depth > CJSON_NESTING_LIMIT) return NULL;
    cJSON *n = gpa_jn_new(a, v->type & ~(cJSON_IsReference | cJSON_StringIsConst));
    if (!n) return NULL;
    n->valueint = v->valueint;
    n->valuedouble = v->valuedouble;
    if (v->valuestring && !(n->valuestring = gpa_narena_strdup(a, v->valuestring))) return NULL;
    for (const cJSON *c = v->child; c; c = c->next) {
        cJSON *d = dup_rec(a, c, depth + 1);
        if (!d) return NULL;
        if (c->string && !(d->string = gpa_narena_strdup(a, c->string))) return NULL;
        gpa_jn_append(n, d);
    }
    return n;
}

cJSON *gpa_jn_dup(gpa_narena *a, const cJSON *v)
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
