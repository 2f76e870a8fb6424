/*
 * test_node_arena.c - the per-request node arena (node_arena.c) the engine builds its pod copy
 * and JSON Patch in: many small and some big allocations stay distinct, aligned and intact;
 * the linkers keep cJSON's list invariants (first->prev is the last element, last->next is
 * NULL) for append, add and replace at every position; the deep copy owns every string; the
 * member lookup answers like cJSON_GetObjectItemCaseSensitive; a heap copy (cJSON_Duplicate)
 * of an arena tree outlives the arena. Also the GPU quantity shortcut for plain digits agrees
 * with the quantity parser.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "util/node_arena.h"
#include "engine/pod.h"

/* Walks a container's children both ways and checks cJSON's list invariants. */
static bool list_ok(const cJSON *parent, int want_n)
{
    const cJSON *first = parent->child;
    if (!first) return want_n == 0;
    int n = 0;
    const cJSON *last = NULL;
    for (const cJSON *c = first; c; c = c->next) {
        if (c != first && c->prev->next != c) return false;
        last = c;
        n++;
    }
    if (n != want_n || first->prev != last || last->next) return false;
    int back = 1;
    for (const cJSON *c = last; c != first; c = c->prev)
        back++;
    return back == want_n;
}

static char *print(const cJSON *v)
{
    return cJSON_PrintUnformatted(v);
}

static void check_print(const cJSON *v, const char *want)
{
    char *s = print(v);
    CHECK_STR(s, want);
    free(s);
}

static void test_alloc(void)
{
    gpa_narena *a = gpa_narena_new();
    CHECK(a != NULL);
    if (!a) return;
    /* far more than one block of nodes, each written fully and read back afterwards */
    enum { N = 5000 };
    cJSON **nodes = malloc(N * sizeof *nodes);
    bool ok = nodes != NULL;
    for (int i = 0; ok && i < N; i++) {
        nodes[i] = gpa_jn_num(a, i);
        ok = nodes[i] && ((uintptr_t)nodes[i] % 8) == 0;
    }
    CHECK(ok);
    char *big = gpa_narena_alloc(a, 100000); /* bigger than a block: a block of its own */
    CHECK(big != NULL);
    if (big) memset(big, 'x', 100000);
    char *s = gpa_narena_strndup(a, "hello world", 5);
    CHECK_STR(s, "hello");
    cJSON *after = gpa_jn_str(a, "after the big one");
    CHECK(after && strcmp(after->valuestring, "after the big one") == 0);
    for (int i = 0; ok && i < N; i++)
        ok = nodes[i]->valueint == i && nodes[i]->valuedouble == i && !nodes[i]->child;
    CHECK(ok);
    CHECK(big && big[0] == 'x' && big[99999] == 'x');
    free(nodes);
    gpa_narena_free(a);
    gpa_narena_free(NULL);
}

static void test_link_and_replace(void)
{
    gpa_narena *a = gpa_narena_new();
    if (!a) {
        CHECK(a != NULL);
        return;
    }
    cJSON *o = gpa_jn_new(a, cJSON_Object);
    gpa_jn_add(o, "a", gpa_jn_num(a, 1));
    CHECK(list_ok(o, 1));
    gpa_jn_add(o, "b", gpa_jn_str(a, "two"));
    gpa_jn_add(o, "c", gpa_jn_new(a, cJSON_True));
    CHECK(list_ok(o, 3));
    check_print(o, "{\"a\":1,\"b\":\"two\",\"c\":true}");

    /* replace keeps the key and the position: middle, first, last */
    gpa_jn_replace(o, gpa_jn_get(o, "b"), gpa_jn_new(a, cJSON_NULL));
    CHECK(list_ok(o, 3));
    check_print(o, "{\"a\":1,\"b\":null,\"c\":true}");
    gpa_jn_replace(o, gpa_jn_get(o, "a"), gpa_jn_str(a, "x"));
    CHECK(list_ok(o, 3));
    gpa_jn_replace(o, gpa_jn_get(o, "c"), gpa_jn_num(a, 3));
    CHECK(list_ok(o, 3));
    check_print(o, "{\"a\":\"x\",\"b\":null,\"c\":3}");
    /* appending after replacing the last element must land after it */
    gpa_jn_add(o, "d", gpa_jn_num(a, 4));
    CHECK(list_ok(o, 4));
    check_print(o, "{\"a\":\"x\",\"b\":null,\"c\":3,\"d\":4}");

    /* the only element */
    cJSON *arr = gpa_jn_new(a, cJSON_Array);
    gpa_jn_append(arr, gpa_jn_num(a, 1));
    gpa_jn_replace(arr, arr->child, gpa_jn_num(a, 2));
    CHECK(list_ok(arr, 1));
    gpa_jn_append(arr, gpa_jn_num(a, 3));
    CHECK(list_ok(arr, 2));
    check_print(arr, "[2,3]");
    /* detach (cJSON's, pointer-only) then append elsewhere */
    cJSON *two = cJSON_DetachItemViaPointer(arr, arr->child);
    CHECK(list_ok(arr, 1));
    gpa_jn_add(o, "e", two);
    check_print(o, "{\"a\":\"x\",\"b\":null,\"c\":3,\"d\":4,\"e\":2}");

    /* numbers saturate like cJSON_CreateNumber */
    cJSON *big = gpa_jn_num(a, 1e12), *ref = cJSON_CreateNumber(1e12);
    CHECK(big && ref && big->valueint == ref->valueint);
    cJSON_Delete(ref);
    gpa_narena_free(a);
}

static bool owns_all(const cJSON *copy, const cJSON *src)
{
    for (; copy && src; copy = copy->next, src = src->next) {
        if (copy == src) return false;
        if (copy->valuestring && copy->valuestring == src->valuestring) return false;
        if (copy->string && copy->string == src->string) return false;
        if (copy->type & (cJSON_IsReference | cJSON_StringIsConst)) return false;
        if (!owns_all(copy->child, src->child)) return false;
    }
    return copy == NULL && src == NULL;
}

static void test_dup_get_and_heap_copy(void)
{
    const char *json = "{\"k\":\"v\",\"n\":[1,2.5,{\"deep\":[true,false,null]}],\"k\":\"dup\","
                       "\"s\":\"\\u00e9\"}";
    cJSON *src = cJSON_Parse(json);
    gpa_narena *a = gpa_narena_new();
    CHECK(src && a);
    if (!src || !a) {
        cJSON_Delete(src);
        gpa_narena_free(a);
        return;
    }
    cJSON *d = gpa_jn_dup(a, src);
    /* (cJSON_Compare cannot tell repeated keys apart: compare the printed forms) */
    char *ps = print(src), *pd = d ? print(d) : NULL;
    CHECK(ps && pd && strcmp(ps, pd) == 0);
    free(ps);
    free(pd);
    CHECK(d && owns_all(d, src));

    /* lookups: the first of a repeated key, absent keys, first byte equal but not the key */
    CHECK(gpa_jn_get(src, "k") == cJSON_GetObjectItemCaseSensitive(src, "k"));
    CHECK_STR(gpa_jn_get(d, "k")->valuestring, "v");
    CHECK(gpa_jn_get(d, "kk") == NULL);
    CHECK(gpa_jn_get(d, "K") == NULL);
    CHECK(gpa_jn_get(NULL, "k") == NULL);
    CHECK(gpa_jn_get(gpa_jn_get(d, "n"), "deep") == NULL); /* an array has no keyed members */

    /* the type helpers answer like cJSON's */
    const cJSON *n = gpa_jn_get(src, "n");
    CHECK(gpa_is_array(n) == cJSON_IsArray(n) && gpa_is_object(n) == cJSON_IsObject(n));
    CHECK(gpa_is_number(n->child) && !gpa_is_string(n->child) && !gpa_is_object(NULL));
    CHECK(gpa_is_true(n->child->next->next->child->child));
    CHECK(gpa_is_null(n->child->next->next->child->child->next->next));

    /* the source can go; the arena copy stands; a heap copy outlives the arena */
    cJSON_Delete(src);
    cJSON *heap = d ? cJSON_Duplicate(d, 1) : NULL;
    char *before = d ? print(d) : NULL;
    gpa_narena_free(a);
    char *after = heap ? print(heap) : NULL;
    CHECK(before && after && strcmp(before, after) == 0);
    CHECK_STR(after, "{\"k\":\"v\",\"n\":[1,2.5,{\"deep\":[true,false,null]}],\"k\":\"dup\","
                     "\"s\":\"\xc3\xa9\"}");
    free(before);
    free(after);
    cJSON_Delete(heap);
}

static void test_gpu_qty(void)
{
    static const struct {
        const char *s;
        bool ok;
        int64_t n;
    } cases[] = {
        {"0", true, 0},
        {"1", true, 1},
        {"01", true, 1},
        {"8", true, 8},
        {"999999999999999", true, 999999999999999},   /* 15 digits: the shortcut */
        {"1000000000000000", true, 1000000000000000}, /* 16: the parser */
        {"1e1", true, 10},
        {"2k", true, 2000},
        {"1.0", true, 1},
        {"0.5", false, 0},
        {"-1", false, 0},
        {"", false, 0},
        {"1 ", false, 0},
        {" 1", false, 0},
        {"1x", false, 0},
        {"99999999999999999999", false, 0},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        cJSON *v = cJSON_CreateString(cases[i].s);
        int64_t n = -7;
        bool ok = gpa_gpu_qty(&n, v);
        if (ok != cases[i].ok || (ok && n != cases[i].n))
            fprintf(stderr, "gpa_gpu_qty(\"%s\") = %d, %lld\n", cases[i].s, ok, (long long)n);
        CHECK(ok == cases[i].ok);
        if (ok) CHECK_INT(n, cases[i].n);
        cJSON_Delete(v);
    }
}

int main(void)
{
    test_alloc();
    test_link_and_replace();
    test_dup_get_and_heap_copy();
    test_gpu_qty();
    return check_done();
}
