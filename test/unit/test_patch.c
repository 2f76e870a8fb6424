/*
 * test_patch.c - RFC 6901 pointer escaping and RFC 6902 diff/apply (src/core/format/jsonpatch.c).
 *
 * Checks exact ops for the shapes the engine produces (object keys added/removed, scalars
 * replaced, arrays extended at explicit indexes), the applier's error cases and atomicity,
 * and the round-trip property apply(diff(a, b), a) == b over generated document pairs.
 */
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "gpu_admission/patch.h"

static cJSON *J(const char *s)
{
    cJSON *j = cJSON_Parse(s);
    if (!j) {
        fprintf(stderr, "bad test JSON: %s\n", s);
        exit(2);
    }
    return j;
}

/* diff(a, b) printed compactly equals want, and applying it to a gives b */
static void expect_diff(const char *a, const char *b, const char *want)
{
    cJSON *ja = J(a), *jb = J(b), *ops = NULL;
    gpa_error err = {0};
    CHECK_INT(gpa_patch_diff(&ops, ja, jb, &err), GPA_OK);
    char *got = cJSON_PrintUnformatted(ops);
    cJSON *jw = J(want);
    if (!cJSON_Compare(ops, jw, true))
        fprintf(stderr, "diff %s -> %s\n  got  %s\n  want %s\n", a, b, got, want);
    CHECK(cJSON_Compare(ops, jw, true));
    CHECK_INT(gpa_patch_apply(ja, ops, &err), GPA_OK);
    CHECK(cJSON_Compare(ja, jb, true));
    free(got);
    cJSON_Delete(ja);
    cJSON_Delete(jb);
    cJSON_Delete(jw);
    cJSON_Delete(ops);
}

static void test_escape(void)
{
    char buf[32];
    CHECK_INT(gpa_pointer_escape(buf, sizeof buf, "gpu-admission.io/pool"), 22);
    CHECK_STR(buf, "gpu-admission.io~1pool");
    CHECK_INT(gpa_pointer_escape(buf, sizeof buf, "a~b/c"), 7);
    CHECK_STR(buf, "a~0b~1c");
    CHECK_INT(gpa_pointer_escape(buf, sizeof buf, "~1"), 3);
    CHECK_STR(buf, "~01");
    CHECK_INT(gpa_pointer_escape(buf, sizeof buf, ""), 0);
    CHECK_STR(buf, "");
    CHECK(gpa_pointer_escape(buf, 4, "abcd") < 0); /* no room for the NUL */
    CHECK(gpa_pointer_escape(buf, 3, "a/") < 0);
    CHECK_INT(gpa_pointer_escape(buf, 4, "abc"), 3);
}

static void test_diff_shapes(void)
{
    expect_diff("{\"a\":1}", "{\"a\":1}", "[]");
    expect_diff("{\"a\":1}", "{\"a\":2}", "[{\"op\":\"replace\",\"path\":\"/a\",\"value\":2}]");
    expect_diff("{\"a\":1}", "{\"a\":\"1\"}",
                "[{\"op\":\"replace\",\"path\":\"/a\",\"value\":\"1\"}]");
    expect_diff("{\"a\":true}", "{\"a\":false}",
                "[{\"op\":\"replace\",\"path\":\"/a\",\"value\":false}]");
    expect_diff("{\"a\":1,\"b\":2}", "{\"b\":2,\"c\":{\"d\":[1]}}",
                "[{\"op\":\"remove\",\"path\":\"/a\"},"
                "{\"op\":\"add\",\"path\":\"/c\",\"value\":{\"d\":[1]}}]");
    /* keys with '/' and '~' are escaped */
    expect_diff("{\"m\":{\"labels\":{}}}",
                "{\"m\":{\"labels\":{\"gpu-admission.io/pool\":\"p\",\"a~b\":\"x\"}}}",
                "[{\"op\":\"add\",\"path\":\"/m/labels/gpu-admission.io~1pool\",\"value\":\"p\"},"
                "{\"op\":\"add\",\"path\":\"/m/labels/a~0b\",\"value\":\"x\"}]");
    /* escapes before, at and after the 8-byte steps of the copy, and long keys without any */
    expect_diff("{}",
                "{\"/abcdefghijklmnopq\":1,\"abcdefg/\":2,\"abcdefgh~\":3,"
                "\"abcdefghijklmno/p~\":4,\"abcdefghijklmnopqrstuvwxyz\":5,\"~~//\":6}",
                "[{\"op\":\"add\",\"path\":\"/~1abcdefghijklmnopq\",\"value\":1},"
                "{\"op\":\"add\",\"path\":\"/abcdefg~1\",\"value\":2},"
                "{\"op\":\"add\",\"path\":\"/abcdefgh~0\",\"value\":3},"
                "{\"op\":\"add\",\"path\":\"/abcdefghijklmno~1p~0\",\"value\":4},"
                "{\"op\":\"add\",\"path\":\"/abcdefghijklmnopqrstuvwxyz\",\"value\":5},"
                "{\"op\":\"add\",\"path\":\"/~0~0~1~1\",\"value\":6}]");
    /* members appended after the original ones are added, whether or not their first bytes
     * are those of an original key ("sp" and "spec") */
    expect_diff("{\"a\":1,\"spec\":2}", "{\"a\":1,\"spec\":2,\"status\":3,\"sp\":5}",
                "[{\"op\":\"add\",\"path\":\"/status\",\"value\":3},"
                "{\"op\":\"add\",\"path\":\"/sp\",\"value\":5}]");
    /* indexes of more than one digit */
    expect_diff("[0,1,2,3,4,5,6,7,8,9]", "[0,1,2,3,4,5,6,7,8,9,10,11]",
                "[{\"op\":\"add\",\"path\":\"/10\",\"value\":10},"
                "{\"op\":\"add\",\"path\":\"/11\",\"value\":11}]");
    /* a renamed key: remove + add, never a replace of a missing path */
    expect_diff("{\"limits\":{\"nvidia.com/gpu\":1}}",
                "{\"limits\":{\"nvidia.com/mig-1g.10gb\":1}}",
                "[{\"op\":\"remove\",\"path\":\"/limits/nvidia.com~1gpu\"},"
                "{\"op\":\"add\",\"path\":\"/limits/nvidia.com~1mig-1g.10gb\",\"value\":1}]");
    /* arrays: extension -> adds at explicit indexes */
    expect_diff("{\"t\":[{\"k\":1}]}", "{\"t\":[{\"k\":1},{\"k\":2},{\"k\":3}]}",
                "[{\"op\":\"add\",\"path\":\"/t/1\",\"value\":{\"k\":2}},"
                "{\"op\":\"add\",\"path\":\"/t/2\",\"value\":{\"k\":3}}]");
    expect_diff("{\"t\":[]}", "{\"t\":[5]}", "[{\"op\":\"add\",\"path\":\"/t/0\",\"value\":5}]");
    /* same length -> element-wise */
    expect_diff("{\"t\":[{\"e\":[1]},{\"e\":[2]}]}", "{\"t\":[{\"e\":[1,9]},{\"e\":[2]}]}",
                "[{\"op\":\"add\",\"path\":\"/t/0/e/1\",\"value\":9}]");
    /* shrink at the end -> removes from the back */
    expect_diff("[1,2,3]", "[1]",
                "[{\"op\":\"remove\",\"path\":\"/2\"},{\"op\":\"remove\",\"path\":\"/1\"}]");
    /* anything else -> whole-array replace */
    expect_diff("{\"t\":[1,2]}", "{\"t\":[3,1,2]}",
                "[{\"op\":\"replace\",\"path\":\"/t\",\"value\":[3,1,2]}]");
    /* type changes at root and below */
    expect_diff("{\"a\":{}}", "{\"a\":[]}", "[{\"op\":\"replace\",\"path\":\"/a\",\"value\":[]}]");
    expect_diff("1", "2", "[{\"op\":\"replace\",\"path\":\"\",\"value\":2}]");
    expect_diff("{\"a\":null}", "{\"a\":{\"b\":1}}",
                "[{\"op\":\"replace\",\"path\":\"/a\",\"value\":{\"b\":1}}]");
    expect_diff("{\"\":1}", "{\"\":2}", "[{\"op\":\"replace\",\"path\":\"/\",\"value\":2}]");
}

static void expect_apply(const char *doc, const char *ops, int want_rc, const char *want_doc)
{
    cJSON *d = J(doc), *o = J(ops);
    cJSON *before = cJSON_Duplicate(d, 1);
    gpa_error err = {0};
    int rc = gpa_patch_apply(d, o, &err);
    CHECK_INT(rc, want_rc);
    if (rc != want_rc) fprintf(stderr, "  apply %s to %s: %s\n", ops, doc, err.message);
    if (want_doc) {
        cJSON *w = J(want_doc);
        CHECK(cJSON_Compare(d, w, true));
        cJSON_Delete(w);
    } else {
        CHECK(cJSON_Compare(d, before, true)); /* failure leaves the document untouched */
        CHECK(err.message[0] != '\0');
    }
    cJSON_Delete(before);
    cJSON_Delete(d);
    cJSON_Delete(o);
}

static void test_apply(void)
{
    expect_apply("{\"a\":{\"x~y\":1}}", "[{\"op\":\"replace\",\"path\":\"/a/x~0y\",\"value\":2}]",
                 GPA_OK, "{\"a\":{\"x~y\":2}}");
    expect_apply("{\"a\":[1,2]}", "[{\"op\":\"add\",\"path\":\"/a/-\",\"value\":3}]", GPA_OK,
                 "{\"a\":[1,2,3]}");
    expect_apply("{\"a\":[1,2]}", "[{\"op\":\"add\",\"path\":\"/a/0\",\"value\":0}]", GPA_OK,
                 "{\"a\":[0,1,2]}");
    expect_apply("{\"a\":[1,2]}", "[{\"op\":\"remove\",\"path\":\"/a/0\"}]", GPA_OK, "{\"a\":[2]}");
    expect_apply("{\"a\":1}", "[{\"op\":\"move\",\"from\":\"/a\",\"path\":\"/b\"}]", GPA_OK,
                 "{\"b\":1}");
    expect_apply("{\"a\":{\"b\":1}}", "[{\"op\":\"copy\",\"from\":\"/a\",\"path\":\"/c\"}]", GPA_OK,
                 "{\"a\":{\"b\":1},\"c\":{\"b\":1}}");
    expect_apply("{\"a\":1}", "[{\"op\":\"test\",\"path\":\"/a\",\"value\":1}]", GPA_OK,
                 "{\"a\":1}");
    expect_apply("{\"a\":1}", "[{\"op\":\"replace\",\"path\":\"\",\"value\":[7]}]", GPA_OK, "[7]");
    /* errors, each leaving the document as it was (atomic) */
    expect_apply("{\"a\":1}",
                 "[{\"op\":\"add\",\"path\":\"/b\",\"value\":2},"
                 "{\"op\":\"replace\",\"path\":\"/zz\",\"value\":2}]",
                 GPA_EINVAL, NULL);
    expect_apply("{\"a\":1}", "[{\"op\":\"remove\",\"path\":\"/b\"}]", GPA_EINVAL, NULL);
    expect_apply("{\"a\":1}", "[{\"op\":\"add\",\"path\":\"/x/y\",\"value\":1}]", GPA_EINVAL, NULL);
    expect_apply("{\"a\":[1]}", "[{\"op\":\"add\",\"path\":\"/a/2\",\"value\":1}]", GPA_EINVAL,
                 NULL);
    expect_apply("{\"a\":[1,2]}", "[{\"op\":\"remove\",\"path\":\"/a/01\"}]", GPA_EINVAL, NULL);
    expect_apply("{\"a\":[1]}", "[{\"op\":\"replace\",\"path\":\"/a/-\",\"value\":1}]", GPA_EINVAL,
                 NULL);
    expect_apply("{\"a~2\":1}", "[{\"op\":\"remove\",\"path\":\"/a~2\"}]", GPA_EINVAL, NULL);
    expect_apply("{\"a\":1}", "[{\"op\":\"test\",\"path\":\"/a\",\"value\":2}]", GPA_EINVAL, NULL);
    expect_apply("{\"a\":{}}", "[{\"op\":\"move\",\"from\":\"/a\",\"path\":\"/a/b\"}]", GPA_EINVAL,
                 NULL);
    expect_apply("{\"a\":1}", "[{\"op\":\"frobnicate\",\"path\":\"/a\"}]", GPA_EPARSE, NULL);
    expect_apply("{\"a\":1}", "[{\"op\":\"add\",\"path\":\"/b\"}]", GPA_EPARSE, NULL);
    expect_apply("{\"a\":1}", "[{\"op\":\"add\",\"path\":\"b\",\"value\":1}]", GPA_EINVAL, NULL);
    expect_apply("{\"a\":1}", "{\"op\":\"add\"}", GPA_EPARSE, NULL);
}

/* ---- generated round trips */

static unsigned rng_state = 12345;
static unsigned rnd(unsigned n)
{
    rng_state = rng_state * 1103515245u + 12345u;
    return (rng_state >> 16) % n;
}

static const char *const KEYS[] = {"a", "b/c", "d~e", "nvidia.com/gpu", "", "~1", "x"};

static cJSON *gen(int depth)
{
    unsigned k = rnd(depth > 3 ? 4 : 6);
    switch (k) {
    case 0:
        return cJSON_CreateNumber(rnd(3));
    case 1:
        return cJSON_CreateString(rnd(2) ? "s" : "t");
    case 2:
        return rnd(2) ? cJSON_CreateTrue() : cJSON_CreateNull();
    case 3:
        return cJSON_CreateString("u");
    case 4: {
        cJSON *o = cJSON_CreateObject();
        unsigned n = rnd(4);
        for (unsigned i = 0; i < n; i++) {
            const char *key = KEYS[rnd(7)];
            if (!cJSON_GetObjectItemCaseSensitive(o, key))
                cJSON_AddItemToObject(o, key, gen(depth + 1));
        }
        return o;
    }
    default: {
        cJSON *a = cJSON_CreateArray();
        unsigned n = rnd(4);
        for (unsigned i = 0; i < n; i++)
            cJSON_AddItemToArray(a, gen(depth + 1));
        return a;
    }
    }
}

/* A random edit of a container somewhere inside v. */
static void mutate(cJSON *v, int depth)
{
    if (cJSON_IsObject(v) && v->child && rnd(3)) {
        cJSON *c = v->child;
        for (unsigned i = rnd(4); i && c->next; i--)
            c = c->next;
        switch (rnd(3)) {
        case 0:
            mutate(c, depth + 1);
            return;
        case 1:
            cJSON_DeleteItemFromObjectCaseSensitive(v, c->string);
            return;
        default:
            cJSON_ReplaceItemInObjectCaseSensitive(v, c->string, gen(depth + 1));
            return;
        }
    }
    if (cJSON_IsObject(v)) {
        const char *key = KEYS[rnd(7)];
        if (!cJSON_GetObjectItemCaseSensitive(v, key))
            cJSON_AddItemToObject(v, key, gen(depth + 1));
        return;
    }
    if (cJSON_IsArray(v)) {
        int n = cJSON_GetArraySize(v);
        switch (rnd(4)) {
        case 0:
            cJSON_AddItemToArray(v, gen(depth + 1));
            return;
        case 1:
            if (n) cJSON_DeleteItemFromArray(v, n - 1);
            return;
        case 2:
            if (n) mutate(cJSON_GetArrayItem(v, (int)rnd((unsigned)n)), depth + 1);
            return;
        default:
            cJSON_InsertItemInArray(v, 0, gen(depth + 1));
            return;
        }
    }
}

static void test_round_trips(void)
{
    int bad = 0;
    for (int i = 0; i < 3000; i++) {
        cJSON *a = cJSON_CreateObject();
        for (int j = 0; j < 3; j++)
            cJSON_AddItemToObject(a, KEYS[j], gen(1));
        cJSON *b = cJSON_Duplicate(a, 1);
        for (unsigned m = rnd(4) + 1; m; m--)
            mutate(b, 0);
        cJSON *ops = NULL;
        gpa_error err = {0};
        int rc = gpa_patch_diff(&ops, a, b, &err);
        bool ok = rc == GPA_OK;
        /* never a replace/remove of a path missing from a, never "-" */
        const cJSON *op;
        cJSON_ArrayForEach(op, ops) {
            const char *path = cJSON_GetObjectItem(op, "path")->valuestring;
            size_t l = strlen(path);
            if (l >= 2 && strcmp(path + l - 2, "/-") == 0) ok = false;
        }
        /* the move variant gives the same ops, taking values out of its own copy of b */
        cJSON *b2 = cJSON_Duplicate(b, 1), *mops = NULL;
        if (gpa_patch_diff_move(&mops, a, b2, NULL) != GPA_OK || !cJSON_Compare(mops, ops, true))
            ok = false;
        cJSON_Delete(b2); /* the ops must not depend on it */
        char *ms = mops ? cJSON_PrintUnformatted(mops) : NULL;
        free(ms);
        cJSON_Delete(mops);
        bool equal_input = cJSON_Compare(a, b, true);
        if (equal_input && cJSON_GetArraySize(ops) != 0) ok = false;
        if (rc == GPA_OK && gpa_patch_apply(a, ops, &err) != GPA_OK) ok = false;
        if (!cJSON_Compare(a, b, true)) ok = false;
        if (!ok && bad++ < 3) {
            char *sa = cJSON_PrintUnformatted(a), *sb = cJSON_PrintUnformatted(b),
                 *so = cJSON_PrintUnformatted(ops);
            fprintf(stderr, "round trip %d failed: %s\n  a=%s\n  b=%s\n  ops=%s\n", i, err.message,
                    sa, sb, so);
            free(sa);
            free(sb);
            free(so);
        }
        cJSON_Delete(a);
        cJSON_Delete(b);
        cJSON_Delete(ops);
    }
    CHECK_INT(bad, 0);
}

int main(void)
{
    test_escape();
    test_diff_shapes();
    test_apply();
    test_round_trips();
    return check_done();
}
