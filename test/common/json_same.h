/*
 * json_same.h - node-for-node equality of two cJSON trees, stricter than cJSON_Compare:
 * member order, exact numbers (bit pattern, or equal value, or both NaN), valueint, and the
 * tail link cJSON keeps in child->prev. Shared by the JSON reader's unit test and its
 * differential fuzzer, which both hold the codec's reader to cJSON's own parser.
 */
#ifndef GPA_TEST_JSON_SAME_H
#define GPA_TEST_JSON_SAME_H

#include <cjson/cJSON.h>
#include <math.h>
#include <string.h>

static inline int gpa_json_same(const cJSON *a, const cJSON *b)
{
    if ((a->type & 0xFF) != (b->type & 0xFF)) return 0;
    if ((a->string == NULL) != (b->string == NULL) ||
        (a->string && strcmp(a->string, b->string) != 0))
        return 0;
    switch (a->type & 0xFF) {
    case cJSON_Number:
        if (memcmp(&a->valuedouble, &b->valuedouble, sizeof(double)) != 0 &&
            !(a->valuedouble == b->valuedouble) &&
            !(isnan(a->valuedouble) && isnan(b->valuedouble)))
            return 0;
        return a->valueint == b->valueint;
    case cJSON_String:
        return strcmp(a->valuestring, b->valuestring) == 0;
    case cJSON_Array:
    case cJSON_Object: {
        const cJSON *x = a->child, *y = b->child;
        if (x && (!x->prev || x->prev->next != NULL)) return 0;
        for (; x && y; x = x->next, y = y->next)
            if (!gpa_json_same(x, y)) return 0;
        return x == NULL && y == NULL;
    }
    default:
        return 1;
    }
}

#endif
