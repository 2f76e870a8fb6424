/*
 * engine_cow.c - the mutable copy of a pod the placement works on, built copy-on-write in the
 * request's node arena: every object or array a mutation adds members to, removes them from
 * or replaces them in (the pod, metadata, annotations, spec, containers, their resources,
 * limits, requests) is an owned node whose untouched members are reference nodes;
 * spec.affinity, which placement writes deep inside, is copied structurally (its strings stay
 * borrowed); labels and tolerations, which most placements only read, stay references until
 * the first write (gpa_eng_cow_own); everything else is shared. A full cJSON_Duplicate of a 3 KB
 * pod was a third of the engine's time per GPU pod; so was the diff walking unchanged parts, which
 * now stops at shared children (jsonpatch.c).
 *
 * Must never hand a reference node to code that writes inside it: a field placement writes
 * into must be listed here as owned (shallow) or deep, or owned by gpa_eng_cow_own before the
 * write. The copy must never outlive the
 * original (it borrows from it); gpa_engine_mutate deep-copies it (gpa_eng_cow_materialize)
 * before it leaves the engine as decision.mutated. Never frees: the arena owns every node.
 */
#include <stdint.h>
#include <string.h>

#include "engine/engine_internal.h"
#include "util/node_arena.h"

/* n made a node that reads like item but borrows item's children / string (flagged as
 * borrowed); unlinked, without a key. */
static inline void ref_fill(cJSON *n, const cJSON *item)
{
    int t = item->type & 0xFF;
    if (item->child || item->valuestring) t |= cJSON_IsReference;
    *n = (cJSON){.type = t,
                 .child = item->child,
                 .valuestring = item->valuestring,
                 .valueint = item->valueint,
                 .valuedouble = item->valuedouble};
}

static cJSON *ref_of(gpa_narena *a, const cJSON *item)
{
    cJSON *n = gpa_narena_alloc(a, sizeof *n);
    if (n) ref_fill(n, item);
    return n;
}

/* Room for the nodes of v's n members in one allocation (the copies below take one slot
 * per member); NULL on OOM. */
static cJSON *member_slots(gpa_narena *a, const cJSON *v, size_t *n)
{
    size_t k = 0;
    for (const cJSON *c = v->child; c; c = c->next)
        k++;
    *n = k;
    return k <= SIZE_MAX / sizeof(cJSON) ? gpa_narena_alloc(a, (k ? k : 1) * sizeof(cJSON)) : NULL;
}

/* Links m after *last under out (cJSON's list: next to NULL, the first's prev to the last,
 * set by finish_list). */
static inline void link_member(cJSON *out, cJSON **last, cJSON *m)
{
    m->prev = *last;
    m->next = NULL;
    if (*last)
        (*last)->next = m;
    else
        out->child = m;
    *last = m;
}

static inline void finish_list(cJSON *out, cJSON *last)
{
    if (out->child) out->child->prev = last;
}

typedef cJSON *(*copier)(gpa_narena *, const cJSON *);

/* Every object and array owned, every string and key borrowed: enough for code that writes
 * anywhere inside the structure but never into a string. */
static cJSON *deep_rec(gpa_narena *a, const cJSON *item, int depth)
{
    if (!gpa_is_object(item) && !gpa_is_array(item)) return ref_of(a, item);
    if (depth > CJSON_NESTING_LIMIT) return NULL;
    cJSON *out = gpa_jn_new(a, item->type & 0xFF);
    if (!out) return NULL;
    for (const cJSON *c = item->child; c; c = c->next) {
        cJSON *n = deep_rec(a, c, depth + 1);
        if (!n) return NULL;
        if (c->string) {
            n->string = c->string;
            n->type |= cJSON_StringIsConst;
        }
        gpa_jn_append(out, n);
    }
    return out;
}

static cJSON *deep(gpa_narena *a, const cJSON *item)
{
    return deep_rec(a, item, 0);
}

/* One member's copy: deep for the listed keys, a reference otherwise. */
typedef struct rule_entry {
    const char *key;
    copier copy;
} rule_entry;

static cJSON *shallow_with(gpa_narena *a, const cJSON *obj, const rule_entry *rules, size_t n)
{
    cJSON *out = gpa_jn_new(a, cJSON_Object);
    size_t slots;
    cJSON *slot = out ? member_slots(a, obj, &slots) : NULL, *last = NULL;
    if (!slot) return NULL;
    for (const cJSON *c = obj->child; c; c = c->next, slot++) {
        if (!c->string) continue;
        cJSON *n2 = slot;
        size_t i = 0;
        for (; i < n; i++)
            if (c->string[0] == rules[i].key[0] && strcmp(c->string, rules[i].key) == 0) break;
        if (i < n) {
            if (!(n2 = rules[i].copy(a, c))) return NULL;
        } else {
            ref_fill(n2, c);
        }
        /* the key is borrowed too (the copy never outlives the original) */
        n2->string = c->string;
        n2->type |= cJSON_StringIsConst;
        link_member(out, &last, n2);
    }
    finish_list(out, last);
    return out;
}

/* An owned object or array whose members are references: enough for code that adds,
 * removes or replaces members but never writes inside one. */
static cJSON *shallow(gpa_narena *a, const cJSON *v)
{
    if (gpa_is_object(v)) return shallow_with(a, v, NULL, 0);
    if (!gpa_is_array(v)) return deep(a, v);
    cJSON *out = gpa_jn_new(a, cJSON_Array);
    size_t slots;
    cJSON *slot = out ? member_slots(a, v, &slots) : NULL, *last = NULL;
    if (!slot) return NULL;
    for (const cJSON *c = v->child; c; c = c->next, slot++) {
        ref_fill(slot, c);
        link_member(out, &last, slot);
    }
    finish_list(out, last);
    return out;
}

static cJSON *resources_copy(gpa_narena *a, const cJSON *r)
{
    static const rule_entry e[] = {{"limits", shallow}, {"requests", shallow}};
    return gpa_is_object(r) ? shallow_with(a, r, e, 2) : deep(a, r);
}

static cJSON *container_copy(gpa_narena *a, const cJSON *c)
{
    static const rule_entry r[] = {{"resources", resources_copy}};
    return gpa_is_object(c) ? shallow_with(a, c, r, 1) : deep(a, c);
}

static cJSON *containers_copy(gpa_narena *a, const cJSON *arr)
{
    if (!gpa_is_array(arr)) return deep(a, arr);
    cJSON *out = gpa_jn_new(a, cJSON_Array);
    if (!out) return NULL;
    for (const cJSON *c = arr->child; c; c = c->next) {
        cJSON *n = container_copy(a, c);
        if (!n) return NULL;
        gpa_jn_append(out, n);
    }
    return out;
}

static cJSON *metadata_copy(gpa_narena *a, const cJSON *m)
{
    static const rule_entry r[] = {{"annotations", shallow}};
    return gpa_is_object(m) ? shallow_with(a, m, r, 1) : deep(a, m);
}

/* Containers are only written when resources are renamed; otherwise they stay shared. */
static cJSON *spec_copy(gpa_narena *a, const cJSON *s)
{
    static const rule_entry r[] = {
        {"affinity", deep}, {"containers", containers_copy}, {"initContainers", containers_copy}};
    return gpa_is_object(s) ? shallow_with(a, s, r, 3) : deep(a, s);
}

static cJSON *spec_copy_keep_containers(gpa_narena *a, const cJSON *s)
{
    static const rule_entry r[] = {{"affinity", deep}};
    return gpa_is_object(s) ? shallow_with(a, s, r, 1) : deep(a, s);
}

cJSON *gpa_eng_cow_copy(gpa_narena *a, const cJSON *pod, bool containers)
{
    static const rule_entry with[] = {{"metadata", metadata_copy}, {"spec", spec_copy}};
    static const rule_entry without[] = {{"metadata", metadata_copy},
                                         {"spec", spec_copy_keep_containers}};
    if (!gpa_is_object(pod)) return deep(a, pod);
    return shallow_with(a, pod, containers ? with : without, 2);
}

cJSON *gpa_eng_cow_own(gpa_narena *a, cJSON *parent, cJSON *item)
{
    if (!(item->type & cJSON_IsReference) || (!gpa_is_object(item) && !gpa_is_array(item)))
        return item; /* owned already (an empty reference shares no members either) */
    cJSON *n = shallow(a, item);
    if (n) gpa_jn_replace(parent, item, n); /* keeps the key, borrowed or not */
    return n;
}

/* Gives every borrowed key its own storage, so the tree no longer depends on the original. */
static bool own_keys(cJSON *v)
{
    for (; v; v = v->next) {
        if ((v->type & cJSON_StringIsConst) && v->string) {
            char *k = strdup(v->string);
            if (!k) return false;
            v->string = k;
            v->type &= ~cJSON_StringIsConst;
        }
        if (v->child && !own_keys(v->child)) return false;
    }
    return true;
}

cJSON *gpa_eng_cow_materialize(const cJSON *copy)
{
    /* cJSON_Duplicate copies what references point to and strdups unflagged keys (arena or
     * static ones); the keys flagged as borrowed are given their own storage after */
    cJSON *d = cJSON_Duplicate(copy, 1);
    if (d && !own_keys(d->child)) {
        cJSON_Delete(d);
        return NULL;
    }
    return d;
}
