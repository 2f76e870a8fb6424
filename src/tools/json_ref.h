/*
 * json_ref.h - a cJSON reference the caller owns, for the tools' views and reviews built around
 * an object without copying it (impact.c's views, judge.c's AdmissionReview).
 *
 * cJSON_AddItemReferenceToObject does the same in one call, but when copying the key fails it
 * leaks the reference it made (cJSON 1.7.15; found by fault/oom_audit). With the reference in
 * hand the caller frees it on that failure.
 */
#ifndef GPA_TOOLS_JSON_REF_H
#define GPA_TOOLS_JSON_REF_H

#include <stdbool.h>

#include <cjson/cJSON.h>

/* A reference to c (nothing copied; numbers, booleans and null, which cJSON has no reference
 * for, are copied). NULL when memory runs out. */
static inline cJSON *gpa_tools_ref(const cJSON *c)
{
    switch (c->type & 0xFF) {
    case cJSON_Object:
        return cJSON_CreateObjectReference(c->child);
    case cJSON_Array:
        return cJSON_CreateArrayReference(c->child);
    case cJSON_String:
        return cJSON_CreateStringReference(c->valuestring);
    default:
        return cJSON_Duplicate(c, false);
    }
}

/* Adds a reference to item under key; false (nothing leaked) when memory runs out. */
static inline bool gpa_tools_add_ref(cJSON *to, const char *key, const cJSON *item)
{
    cJSON *ref = gpa_tools_ref(item);
    if (ref && cJSON_AddItemToObject(to, key, ref)) return true;
    cJSON_Delete(ref);
    return false;
}

#endif
