/*
 * engine_cow.c - the mutable copy of a pod the placement works on, built copy-on-write:
 * every object or array a mutation adds members to, removes them from or replaces them in
 * (the pod, metadata, labels, annotations, spec, tolerations, containers, their resources,
 * limits, requests) is an owned node whose untouched members are cJSON reference nodes;
 * spec.affinity, which placement writes deep inside, is a deep copy; everything else is
 * shared. A full cJSON_Duplicate of a 3 KB pod was a third of the engine's time per GPU pod;
 * so was the diff walking unchanged parts, which now stops at shared children (jsonpatch.c).
 *
 * Must never hand a reference node to code that writes inside it: a field placement writes
 * into must be listed here as owned (shallow) or deep. The copy must never outlive the
 * original (it borrows from it); gpa_engine_mutate deep-copies it (cJSON_Duplicate) before
 * it leaves the engine as decision.mutated.
 */
#include <string.h>

#include "engine_internal.h"

/* A node that reads like item but borrows item's children / string. */
static cJSON *ref_of(const cJSON *item)
{
    switch (item->type & 0xFF) {
    case cJSON_Object:
        return cJSON_CreateObjectReference(item->child);
    case cJSON_Array:
        return cJSON_CreateArrayReference(item->child);
    case cJSON_String:
        return cJSON_CreateStringReference(item->valuestring);
    default:
        return cJSON_Duplicate(item, 0); /* number, bool, null, raw: nothing to share */
    }
}

typedef cJSON *(*copier)(const cJSON *);

static cJSON *deep(const cJSON *item)
{
    return cJSON_Duplicate(item, 1);
}

/* One member's copy: deep for the listed keys, a reference otherwise. */
typedef struct rule_entry {
    const char *key;
    copier copy;
} rule_entry;

static cJSON *shallow_with(const cJSON *obj, const rule_entry *rules, size_t n)
{
    cJSON *out = cJSON_CreateObject();
    if (!out) return NULL;
    const cJSON *c;
    cJSON_ArrayForEach(c, obj)
    {
        if (!c->string) continue;
        copier cp = ref_of;
        for (size_t i = 0; i < n; i++)
            if (strcmp(c->string, rules[i].key) == 0) cp = rules[i].copy;
        cJSON *n2 = cp(c);
        /* the key is borrowed too (the copy never outlives the original): no strdup */
        if (!n2 || !cJSON_AddItemToObjectCS(out, c->string, n2)) {
            cJSON_Delete(n2);
            cJSON_Delete(out);
            return NULL;
        }
    }
    return out;
}

/* An owned object or array whose members are references: enough for code that adds,
 * removes or replaces members but never writes inside one. */
static cJSON *shallow(const cJSON *v)
{
    if (cJSON_IsObject(v)) return shallow_with(v, NULL, 0);
    if (!cJSON_IsArray(v)) return deep(v);
    cJSON *out = cJSON_CreateArray();
    const cJSON *c;
    cJSON_ArrayForEach(c, v)
    {
        cJSON *n = out ? ref_of(c) : NULL;
        if (!n) {
            cJSON_Delete(out);
            return NULL;
        }
        cJSON_AddItemToArray(out, n);
    }
    return out;
}

static cJSON *resources_copy(const cJSON *r)
{
    static const rule_entry e[] = {{"limits", shallow}, {"requests", shallow}};
    return cJSON_IsObject(r) ? shallow_with(r, e, 2) : deep(r);
}

static cJSON *container_copy(const cJSON *c)
{
    static const rule_entry r[] = {{"resources", resources_copy}};
    return cJSON_IsObject(c) ? shallow_with(c, r, 1) : deep(c);
}

static cJSON *containers_copy(const cJSON *arr)
{
    if (!cJSON_IsArray(arr)) return deep(arr);
    cJSON *out = cJSON_CreateArray();
    const cJSON *c;
    cJSON_ArrayForEach(c, arr)
    {
        cJSON *n = out ? container_copy(c) : NULL;
        if (!n) {
            cJSON_Delete(out);
            return NULL;
        }
        cJSON_AddItemToArray(out, n);
    }
    return out;
}

static cJSON *metadata_copy(const cJSON *m)
{
    static const rule_entry r[] = {{"labels", shallow}, {"annotations", shallow}};
    return cJSON_IsObject(m) ? shallow_with(m, r, 2) : deep(m);
}

/* Containers are only written when resources are renamed; otherwise they stay shared. */
static cJSON *spec_copy(const cJSON *s)
{
    static const rule_entry r[] = {{"tolerations", shallow},
                                   {"affinity", deep},
                                   {"containers", containers_copy},
                                   {"initContainers", containers_copy}};
    return cJSON_IsObject(s) ? shallow_with(s, r, 4) : deep(s);
}

static cJSON *spec_copy_keep_containers(const cJSON *s)
{
    static const rule_entry r[] = {{"tolerations", shallow}, {"affinity", deep}};
    return cJSON_IsObject(s) ? shallow_with(s, r, 2) : deep(s);
}

cJSON *gpa_eng_cow_copy(const cJSON *pod, bool containers)
{
    static const rule_entry with[] = {{"metadata", metadata_copy}, {"spec", spec_copy}};
    static const rule_entry without[] = {{"metadata", metadata_copy},
                                         {"spec", spec_copy_keep_containers}};
    if (!cJSON_IsObject(pod)) return deep(pod);
    return shallow_with(pod, containers ? with : without, 2);
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
    cJSON *d = cJSON_Duplicate(copy, 1);
    if (d && !own_keys(d->child)) {
        cJSON_Delete(d);
        return NULL;
    }
    return d;
}
