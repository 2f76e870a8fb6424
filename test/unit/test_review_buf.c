/*
 * test_review_buf.c - the answer writer (src/core/format/json_write.c) against cJSON's own printer:
 * every fast path of gpa_rbuf_json_value / gpa_rbuf_json_str* must give exactly the bytes
 * cJSON_PrintUnformatted gives, and must never read a string past its NUL. Strings are placed
 * at the very end of their own allocation (at varied alignments), so an ASan build of this
 * test fails on any over-read.
 *
 * Covers: every byte value 0x01-0xFF at the start, middle and end of strings of lengths around
 * the 4/8/16/32-byte steps; the JSON Patch operation fast path ("op"/"path"/"value" keys,
 * add/remove/replace) with near-miss keys and op names; integers at the int/double
 * boundaries, -0, doubles needing 17 digits, non-finite numbers; empty strings, objects and
 * arrays; deep nesting; growth from a 1-byte buffer; the envelope head of both API versions.
 */
#include <float.h>
#include <limits.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "check.h"
#include "gpu_admission/review.h"
#include "format/json_write.h"

/* ---- strings that end exactly at the end of their allocation ------------------------------ */

/* Copies of test strings, freed at the end. */
static char *owned[1 << 16];
static size_t n_owned;

/* s[0..n) plus its NUL, placed so that the NUL is the last byte of a malloc'd block and the
 * string starts at `off` bytes into it (malloc blocks are 16-aligned: off sets the alignment). */
static const char *placed(const char *s, size_t n, size_t off)
{
    char *m = malloc(off + n + 1);
    if (!m) abort();
    memset(m, 'Z', off);
    memcpy(m + off, s, n);
    m[off + n] = '\0';
    if (n_owned == sizeof owned / sizeof owned[0]) abort();
    owned[n_owned++] = m;
    return m + off;
}

static void free_placed(void)
{
    for (size_t i = 0; i < n_owned; i++)
        free(owned[i]);
    n_owned = 0;
}

/* A string node that points at s (no copy: cJSON_IsReference). */
static cJSON *str_ref(const char *s)
{
    cJSON *v = cJSON_CreateStringReference(s);
    if (!v) abort();
    return v;
}

/* Our bytes for v (written after `prefix`, into a buffer that starts at cap bytes) equal
 * cJSON_PrintUnformatted's. */
static bool writes_like_cjson(const cJSON *v, const char *prefix, size_t cap)
{
    gpa_rbuf b;
    gpa_rbuf_init(&b, cap);
    size_t pl = strlen(prefix);
    gpa_rbuf_put(&b, prefix, pl);
    gpa_rbuf_json_value(&b, v);
    size_t len = 0;
    char *got = gpa_rbuf_take(&b, &len);
    char *ref = cJSON_PrintUnformatted(v);
    bool ok = got && ref && len == pl + strlen(ref) && memcmp(got, prefix, pl) == 0 &&
              strcmp(got + pl, ref) == 0;
    if (!ok)
        fprintf(stderr, "writer differs:\n  cJSON: %.300s\n  ours:  %.300s\n", ref ? ref : "-",
                got ? got + pl : "(null)");
    free(got);
    free(ref);
    return ok;
}

/* gpa_rbuf_json_str and gpa_rbuf_json_str_sep (all four comma/colon combinations) on s give
 * cJSON's literal of s with the separators around it. */
static bool str_like_cjson(const char *s)
{
    cJSON *v = cJSON_CreateString(s);
    char *lit = cJSON_PrintUnformatted(v);
    cJSON_Delete(v);
    if (!lit) abort();
    bool ok = true;
    for (int mode = 0; mode < 5; mode++) {
        gpa_rbuf b;
        gpa_rbuf_init(&b, 1);
        gpa_rbuf_put(&b, "x", 1);
        bool comma = mode & 1, colon = mode & 2;
        if (mode == 4)
            gpa_rbuf_json_str(&b, s);
        else
            gpa_rbuf_json_str_sep(&b, s, comma, colon);
        char *got = gpa_rbuf_take(&b, NULL);
        char want[8192];
        snprintf(want, sizeof want, "x%s%s%s", mode != 4 && comma ? "," : "", lit,
                 mode != 4 && colon ? ":" : "");
        if (!got || strcmp(got, want) != 0) {
            fprintf(stderr, "json_str mode %d differs:\n  want: %.300s\n  got:  %.300s\n", mode,
                    want, got ? got : "(null)");
            ok = false;
        }
        free(got);
    }
    free(lit);
    return ok;
}

/* The lengths around every step of the string writer: 1-3 bytes, 4-7 and 8-15 (two
 * overlapping loads), 16-byte blocks and the overlapping tail, and a few blocks. */
static const size_t LENGTHS[] = {0,  1,  2,  3,  4,  5,  7,  8,  9,  12, 15, 16, 17, 20,
                                 23, 24, 31, 32, 33, 40, 47, 48, 49, 63, 64, 65, 100};
#define N_LENGTHS (sizeof LENGTHS / sizeof LENGTHS[0])

/* Every byte value at the first, a middle and the last position of strings of every length
 * above, at four alignments, as an object key, an object value and an array item, compared
 * with cJSON. */
static void test_every_byte(void)
{
    int failures = 0;
    char s[128];
    for (unsigned c = 1; c < 256; c++) {
        for (size_t li = 0; li < N_LENGTHS; li++) {
            size_t n = LENGTHS[li];
            if (!n) continue;
            size_t where[3] = {0, n / 2, n - 1};
            for (int w = 0; w < 3; w++) {
                if (w && where[w] == where[w - 1]) continue;
                /* filler with a little variety (letters, digits, '/', '~', '.', UTF-8) */
                for (size_t i = 0; i < n; i++)
                    s[i] = "ab/~.9Z-\xc3\xa9"[i % 10];
                s[where[w]] = (char)c;
                cJSON *obj = cJSON_CreateObject(), *arr = cJSON_CreateArray();
                size_t off = (c + li + (size_t)w) % 4 * 5; /* 0, 5, 10, 15 */
                cJSON_AddItemToObjectCS(obj, placed(s, n, off), str_ref(placed(s, n, off + 1)));
                cJSON_AddItemToArray(arr, str_ref(placed(s, n, off + 3)));
                cJSON_AddItemToArray(arr, obj);
                cJSON_AddItemToArray(arr, str_ref(placed(s, n, 16 - off % 16)));
                if (!writes_like_cjson(arr, "", 1)) failures++;
                cJSON_Delete(arr);
                if (c % 16 == 1 || c == '"' || c == '\\' || c == 0x7f || c >= 0xfe) {
                    s[n] = '\0';
                    if (!str_like_cjson(placed(s, n, off))) failures++;
                }
                free_placed();
            }
        }
    }
    CHECK_INT(failures, 0);
}

/* Strings made only of bytes that need escaping, and mixed runs, at every length up to 70:
 * the escape path grows the buffer in the middle of a string. */
static void test_escape_runs(void)
{
    int failures = 0;
    char s[80];
    for (size_t n = 0; n <= 70; n++) {
        for (int kind = 0; kind < 4; kind++) {
            for (size_t i = 0; i < n; i++) {
                switch (kind) {
                case 0:
                    s[i] = (char)(1 + i % 31);
                    break; /* all control */
                case 1:
                    s[i] = i % 2 ? '"' : '\\';
                    break; /* all quotes and backslashes */
                case 2:
                    s[i] = i % 17 == 16 ? '\n' : 'q';
                    break; /* one escape per block */
                default:
                    s[i] = (char)(i % 3 ? 'k' : 0x1f);
                    break;
                }
            }
            cJSON *obj = cJSON_CreateObject();
            cJSON_AddItemToObjectCS(obj, placed(s, n, n % 7), str_ref(placed(s, n, 0)));
            if (!writes_like_cjson(obj, "", 1)) failures++;
            if (!writes_like_cjson(obj, "prefix", 4096)) failures++;
            cJSON_Delete(obj);
            s[n] = '\0';
            if (!str_like_cjson(placed(s, n, 3))) failures++;
            free_placed();
        }
    }
    CHECK_INT(failures, 0);
}

/* ---- the JSON Patch operation fast path ---------------------------------------------------- */

static cJSON *op_object(const char *k1, const char *op, const char *k2, const char *path,
                        const char *k3, cJSON *value)
{
    cJSON *o = cJSON_CreateObject();
    if (k1)
        cJSON_AddItemToObjectCS(o, placed(k1, strlen(k1), 1), str_ref(placed(op, strlen(op), 2)));
    if (k2)
        cJSON_AddItemToObjectCS(o, placed(k2, strlen(k2), 3),
                                str_ref(placed(path, strlen(path), 0)));
    if (k3 && value) cJSON_AddItemToObjectCS(o, placed(k3, strlen(k3), 0), value);
    return o;
}

static void test_patch_ops(void)
{
    static const char *ops[] = {"add",    "remove",   "replace",   "ad",    "addd",
                                "",       "r",        "re",        "remov", "removee",
                                "replac", "replacee", "move",      "copy",  "test",
                                "a\"dd",  "rem\\ove", "repl\nace", "Add"};
    static const char *k1s[] = {"op", "o", "opp", "", "OP", "o\"p"};
    static const char *k2s[] = {"path", "pat", "paths", "from", "p"};
    static const char *k3s[] = {"value", "valu", "values", "v", "value\t"};
    int failures = 0;
    for (size_t i = 0; i < sizeof ops / sizeof *ops; i++)
        for (size_t a = 0; a < sizeof k1s / sizeof *k1s; a++)
            for (size_t p = 0; p < sizeof k2s / sizeof *k2s; p++)
                for (size_t v = 0; v < sizeof k3s / sizeof *k3s; v++)
                    for (int shape = 0; shape < 6; shape++) {
                        cJSON *value;
                        switch (shape) {
                        case 0:
                            value = cJSON_CreateString("GPU \"x\"");
                            break;
                        case 1:
                            value = cJSON_CreateNumber(-3.5);
                            break;
                        case 2:
                            value = cJSON_Parse(
                                "{\"op\":\"add\",\"path\":\"/a\",\"k\":[1,true,null,{}]}");
                            break;
                        case 3:
                            value = cJSON_CreateArray();
                            break;
                        case 4:
                            value = cJSON_CreateFalse();
                            break;
                        default:
                            value = NULL;
                            break;
                        }
                        cJSON *patch = cJSON_CreateArray();
                        cJSON *o = op_object(k1s[a], ops[i], k2s[p], "/spec/x~1y/0", k3s[v], value);
                        cJSON_AddItemToArray(patch, o);
                        /* a second op, and members after the op's own */
                        cJSON *o2 =
                            op_object("op", ops[i], "path", "", "value", cJSON_CreateNull());
                        cJSON_AddItemToObject(o2, "extra", cJSON_CreateString("e"));
                        cJSON_AddItemToArray(patch, o2);
                        if (!writes_like_cjson(patch, "", 1)) failures++;
                        /* the same objects not at the top of an array */
                        if (!writes_like_cjson(o, "", 1)) failures++;
                        cJSON_Delete(patch);
                        free_placed();
                    }
    /* op members out of order, with non-string values, or missing */
    static const char *odd[] = {
        "[{\"path\":\"/a\",\"op\":\"add\",\"value\":1}]",
        "[{\"op\":1,\"path\":\"/a\"}]",
        "[{\"op\":\"add\",\"path\":7,\"value\":1}]",
        "[{\"op\":\"add\"}]",
        "[{\"op\":\"add\",\"value\":\"v\",\"path\":\"/p\"}]",
        "[{\"op\":\"remove\",\"path\":\"/p\"},[\"op\",\"add\"],\"op\",{},[]]",
        "[{\"op\":null,\"path\":\"/p\"}]",
        "[[{\"op\":\"add\",\"path\":\"/p\",\"value\":{\"op\":\"add\"}}]]",
        "[{\"op\":\"add\",\"path\":\"/p\",\"value\":[]},{\"op\":\"add\",\"path\":\"/"
        "q\",\"value\":{}}]",
        "[{\"op\":\"replace\",\"path\":\"/p\",\"value\":\"\",\"value\":\"dup\"}]",
    };
    for (size_t i = 0; i < sizeof odd / sizeof *odd; i++) {
        cJSON *v = cJSON_Parse(odd[i]);
        CHECK(v != NULL);
        if (v && !writes_like_cjson(v, "", 1)) failures++;
        cJSON_Delete(v);
    }
    /* An array item that carries a key (cJSON allows it): printed as an item, never as a
     * member, even when its key is "op". */
    cJSON *arr = cJSON_CreateArray();
    cJSON *item = cJSON_CreateObject();
    cJSON_AddItemToObject(item, "op", cJSON_CreateString("add"));
    cJSON_AddItemToArray(arr, item);
    cJSON *keyed = cJSON_CreateString("add");
    keyed->string = strdup("op");
    cJSON_AddItemToArray(arr, keyed);
    cJSON *keyed_arr = cJSON_CreateArray();
    cJSON *inner = cJSON_CreateString("x");
    inner->string = strdup("op");
    cJSON_AddItemToArray(keyed_arr, inner);
    cJSON_AddItemToArray(arr, keyed_arr);
    if (!writes_like_cjson(arr, "", 1)) failures++;
    cJSON_Delete(arr);
    CHECK_INT(failures, 0);
}

/* Object keys the writer recognizes as constants, and near misses of each (a byte short, a
 * byte more, one byte changed, an escape inside), every key at the end of its own allocation
 * so that the byte-by-byte compare must stop at the NUL. */
static void test_known_keys(void)
{
    static const char *keys[] = {"effect",
                                 "key",
                                 "labelSelector",
                                 "matchExpressions",
                                 "matchLabels",
                                 "nodeAffinity",
                                 "nodeSelectorTerms",
                                 "operator",
                                 "podAffinity",
                                 "topologyKey",
                                 "value",
                                 "values",
                                 "op",
                                 "path",
                                 "e",
                                 "k",
                                 "l",
                                 "m",
                                 "n",
                                 "o",
                                 "p",
                                 "t",
                                 "v",
                                 "",
                                 "ke",
                                 "keys",
                                 "kex",
                                 "Key",
                                 "ke\"y",
                                 "k\ney",
                                 "effec",
                                 "effects",
                                 "valu",
                                 "valuess",
                                 "value\\",
                                 "matchLabel",
                                 "matchExpression",
                                 "matchExpressionss",
                                 "nodeAffinit",
                                 "nodeAffinityX",
                                 "nodeSelectorTerm",
                                 "podAffinityX",
                                 "podAntiAffinity",
                                 "topologyKe",
                                 "labelSelecto",
                                 "operato",
                                 "operators",
                                 "requiredDuringSchedulingIgnoredDuringExecution"};
    int failures = 0;
    size_t nk = sizeof keys / sizeof *keys;
    for (size_t off = 0; off < 4; off++) {
        cJSON *obj = cJSON_CreateObject();
        for (size_t i = 0; i < nk; i++) {
            size_t j = (i + off) % nk;
            cJSON_AddItemToObjectCS(obj, placed(keys[j], strlen(keys[j]), off * 3),
                                    str_ref(placed(keys[i], strlen(keys[i]), off)));
        }
        cJSON *arr = cJSON_CreateArray();
        cJSON_AddItemToArray(arr, obj);
        if (!writes_like_cjson(arr, "", 1)) failures++;
        if (!writes_like_cjson(obj, "p", 2)) failures++;
        cJSON_Delete(arr);
        free_placed();
    }
    CHECK_INT(failures, 0);
}

/* ---- numbers, empty and deep values, growth ------------------------------------------------ */

static void test_numbers(void)
{
    const double nums[] = {0.0,
                           1,
                           -1,
                           7,
                           10,
                           -10,
                           99,
                           100,
                           123456789,
                           INT_MAX,
                           (double)INT_MAX - 1,
                           (double)INT_MAX + 1,
                           INT_MIN,
                           (double)INT_MIN + 1,
                           (double)INT_MIN - 1,
                           4294967296.0,
                           1e15,
                           1e16,
                           1e17,
                           1e21,
                           -1e300,
                           0.5,
                           -0.25,
                           0.1,
                           1.0 / 3,
                           2.0 / 3,
                           3.14159,
                           5e-324,
                           2.2250738585072014e-308,
                           123.456e-7};
    int failures = 0;
    for (size_t i = 0; i < sizeof nums / sizeof nums[0]; i++) {
        cJSON *arr = cJSON_CreateArray();
        cJSON_AddItemToArray(arr, cJSON_CreateNumber(nums[i]));
        cJSON *obj = cJSON_CreateObject();
        cJSON_AddNumberToObject(obj, "n", nums[i]);
        cJSON_AddItemToArray(arr, obj);
        if (!writes_like_cjson(arr, "", 1)) failures++;
        cJSON_Delete(arr);
    }
    /* Non-finite numbers print as null, as cJSON prints them. */
    cJSON *arr = cJSON_CreateArray();
    cJSON_AddItemToArray(arr, cJSON_CreateNumber(NAN));
    cJSON_AddItemToArray(arr, cJSON_CreateNumber(INFINITY));
    cJSON_AddItemToArray(arr, cJSON_CreateNumber(-INFINITY));
    if (!writes_like_cjson(arr, "", 1)) failures++;
    cJSON_Delete(arr);
    CHECK_INT(failures, 0);

    /* The two documented differences (format/json_write.h): -0 prints as 0 (cJSON: -0) ... */
    cJSON *mz = cJSON_CreateNumber(-0.0);
    gpa_rbuf zb;
    gpa_rbuf_init(&zb, 1);
    gpa_rbuf_json_value(&zb, mz);
    char *z = gpa_rbuf_take(&zb, NULL);
    CHECK_STR(z, "0");
    free(z);
    cJSON_Delete(mz);
    /* ... and where cJSON rounds to 15 significant digits, ours reads back exactly. */
    const double hard[] = {
        0.1 + 0.2,           1.0 / 3, 9007199254740993.0, 1.2345678901234567, nextafter(1.0, 2.0),
        nextafter(0.1, 1.0), DBL_MAX, -DBL_MAX,           9007199254740992.0};
    for (size_t i = 0; i < sizeof hard / sizeof hard[0]; i++) {
        cJSON *v = cJSON_CreateNumber(hard[i]);
        gpa_rbuf b;
        gpa_rbuf_init(&b, 1);
        gpa_rbuf_json_value(&b, v);
        char *got = gpa_rbuf_take(&b, NULL);
        CHECK(got != NULL);
        CHECK(got && strtod(got, NULL) == hard[i]);
        free(got);
        cJSON_Delete(v);
    }
}

static void test_shapes(void)
{
    static const char *docs[] = {
        "[]",
        "{}",
        "\"\"",
        "null",
        "true",
        "false",
        "[[],{},\"\",[[]],{\"\":{}}]",
        "{\"\":\"\",\"a\":[],\"b\":{},\"c\":[\"\",\"\"],\"d\":[null,false,true,0]}",
        "[{\"op\":\"add\",\"path\":\"\",\"value\":\"\"}]",
        "{\"a\":{\"b\":{\"c\":{\"d\":[1,[2,[3,{\"e\":\"f\"}]]]}}}}",
    };
    int failures = 0;
    for (size_t i = 0; i < sizeof docs / sizeof *docs; i++) {
        cJSON *v = cJSON_Parse(docs[i]);
        CHECK(v != NULL);
        if (v && !writes_like_cjson(v, "", 1)) failures++;
        if (v && !writes_like_cjson(v, "head:", 3)) failures++;
        cJSON_Delete(v);
    }
    /* Deep nesting: 2,000 levels of alternating arrays and objects, a string at the bottom. */
    cJSON *root = cJSON_CreateArray(), *cur = root;
    for (int d = 0; d < 2000; d++) {
        cJSON *next = d % 2 ? cJSON_CreateArray() : cJSON_CreateObject();
        if ((cur->type & 0xFF) == cJSON_Object)
            cJSON_AddItemToObject(cur, d % 3 ? "op" : "k", next);
        else
            cJSON_AddItemToArray(cur, next);
        cur = next;
    }
    if ((cur->type & 0xFF) == cJSON_Object)
        cJSON_AddStringToObject(cur, "path", "bottom");
    else
        cJSON_AddItemToArray(cur, cJSON_CreateString("bottom"));
    if (!writes_like_cjson(root, "", 1)) failures++;
    cJSON_Delete(root);

    /* A wide patch (many ops, long values): the buffer grows many times mid-value. */
    cJSON *patch = cJSON_CreateArray();
    char big[3000];
    for (size_t i = 0; i < sizeof big - 1; i++)
        big[i] = (char)(i % 97 == 0 ? '"' : 'a' + i % 26);
    big[sizeof big - 1] = '\0';
    for (int i = 0; i < 300; i++) {
        cJSON *o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "op", i % 3 == 0 ? "add" : i % 3 == 1 ? "replace" : "remove");
        char path[64];
        snprintf(path, sizeof path, "/metadata/annotations/k%d~1x", i);
        cJSON_AddStringToObject(o, "path", path);
        if (i % 3 != 2) cJSON_AddStringToObject(o, "value", big + (size_t)i * 7 % 2000);
        cJSON_AddItemToArray(patch, o);
    }
    if (!writes_like_cjson(patch, "", 1)) failures++;
    cJSON_Delete(patch);
    CHECK_INT(failures, 0);

    /* cJSON_Raw is refused: no output at all. */
    cJSON *raw = cJSON_CreateArray();
    cJSON_AddItemToArray(raw, cJSON_CreateString("ok"));
    cJSON_AddItemToArray(raw, cJSON_CreateRaw("{}"));
    gpa_rbuf b;
    gpa_rbuf_init(&b, 1);
    gpa_rbuf_json_value(&b, raw);
    CHECK(gpa_rbuf_take(&b, NULL) == NULL);
    cJSON_Delete(raw);
}

/* ---- the envelope ---------------------------------------------------------------------------- */

/* A review the codec answers without the engine (a ConfigMap): the answer names the API
 * version and uid the request had. */
static void test_envelope(void)
{
    static const char *versions[] = {"admission.k8s.io/v1", "admission.k8s.io/v1beta1"};
    for (int i = 0; i < 2; i++) {
        char body[512];
        snprintf(body, sizeof body,
                 "{\"apiVersion\":\"%s\",\"kind\":\"AdmissionReview\",\"request\":{"
                 "\"uid\":\"u-%d\\\"q\",\"kind\":{\"group\":\"\",\"version\":\"v1\","
                 "\"kind\":\"ConfigMap\"},\"operation\":\"CREATE\",\"object\":{}}}",
                 versions[i], i);
        gpa_review_result r;
        gpa_error err = {0};
        int rc = gpa_review_handle(&r, NULL, GPA_HOOK_MUTATE, body, strlen(body), &err);
        CHECK_INT(rc, 0);
        CHECK_INT(r.http_status, 200);
        CHECK(r.body && strlen(r.body) == r.body_len);
        cJSON *ans = r.body ? cJSON_Parse(r.body) : NULL;
        CHECK(ans != NULL);
        if (ans) {
            CHECK_STR(cJSON_GetStringValue(cJSON_GetObjectItem(ans, "apiVersion")), versions[i]);
            CHECK_STR(cJSON_GetStringValue(cJSON_GetObjectItem(ans, "kind")), "AdmissionReview");
            cJSON *resp = cJSON_GetObjectItem(ans, "response");
            char uid[16];
            snprintf(uid, sizeof uid, "u-%d\"q", i);
            CHECK_STR(cJSON_GetStringValue(cJSON_GetObjectItem(resp, "uid")), uid);
            CHECK(cJSON_IsTrue(cJSON_GetObjectItem(resp, "allowed")));
            /* compact, in the fixed key order */
            char *again = cJSON_PrintUnformatted(ans);
            CHECK_STR(again, r.body);
            free(again);
        }
        cJSON_Delete(ans);
        gpa_review_result_clear(&r);
    }
}

int main(void)
{
    test_every_byte();
    test_escape_runs();
    test_patch_ops();
    test_known_keys();
    test_numbers();
    test_shapes();
    test_envelope();
    free_placed();
    return check_done();
}
