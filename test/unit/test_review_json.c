/*
 * test_review_json.c - the codec's arena JSON reader (src/core/review_json.c) against cJSON:
 * every JSON fixture and thousands of generated documents (escapes, unicode, numbers of every
 * shape, deep and wide nesting, whitespace) must give the same tree, node for node, as
 * cJSON_Parse; everything RFC 8259 forbids must be refused; trees must survive
 * cJSON_Duplicate after the arena is gone. Also the codec's writer (review_buf.c): its JSON
 * must be byte-identical to cJSON_PrintUnformatted and its base64 to OpenSSL's.
 */
#include <dirent.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "check.h"
#include "review_buf.h"
#include "review_json.h"

#include <openssl/evp.h>

/* Node-for-node equality including what cJSON_Compare glosses over: member order, exact
 * doubles, valueint, the tail pointer cJSON keeps in child->prev. */
static int same(const cJSON *a, const cJSON *b)
{
    if ((a->type & 0xFF) != (b->type & 0xFF)) return 0;
    if ((a->string == NULL) != (b->string == NULL) ||
        (a->string && strcmp(a->string, b->string) != 0))
        return 0;
    switch (a->type & 0xFF) {
    case cJSON_Number:
        if (memcmp(&a->valuedouble, &b->valuedouble, sizeof(double)) != 0 &&
            !(a->valuedouble == b->valuedouble))
            return 0;
        return a->valueint == b->valueint;
    case cJSON_String:
        return strcmp(a->valuestring, b->valuestring) == 0;
    case cJSON_Array:
    case cJSON_Object: {
        const cJSON *x = a->child, *y = b->child;
        if (x && (!x->prev || x->prev->next != NULL)) return 0;
        for (; x && y; x = x->next, y = y->next)
            if (!same(x, y)) return 0;
        return x == NULL && y == NULL;
    }
    default:
        return 1;
    }
}

static int parses_like_cjson(const char *text, size_t len)
{
    gpa_jdoc *d = NULL;
    const char *why = NULL;
    size_t off = 0;
    cJSON *ref = cJSON_ParseWithLength(text, len);
    int rc = gpa_jdoc_parse(&d, text, len, &why, &off);
    int ok = ref && rc == 0 && same(gpa_jdoc_root(d), ref);
    if (!ok)
        fprintf(stderr, "differs from cJSON (rc %d: %s at %zu): %.200s\n", rc, why ? why : "", off,
                text);
    gpa_jdoc_free(d);
    cJSON_Delete(ref);
    return ok;
}

static int refused(const char *text, size_t len)
{
    gpa_jdoc *d = NULL;
    const char *why = NULL;
    size_t off = 99999;
    int rc = gpa_jdoc_parse(&d, text, len, &why, &off);
    if (rc == 0) {
        fprintf(stderr, "accepted invalid JSON: %.100s\n", text);
        gpa_jdoc_free(d);
        return 0;
    }
    return d == NULL && why != NULL && off <= len;
}

/* ---- generated documents --------------------------------------------------------------- */

static uint64_t rng = 0x9E3779B97F4A7C15ULL;
static unsigned rnd(unsigned n)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return (unsigned)(rng % n);
}

static void random_string(char *buf, size_t cap)
{
    static const char *pieces[] = {"a",
                                   "nvidia.com/gpu",
                                   " ",
                                   "\"",
                                   "\\",
                                   "/",
                                   "\n",
                                   "\t",
                                   "\x01",
                                   "\x1f",
                                   "\xc3\xa9",
                                   "\xe2\x82\xac",
                                   "\xf0\x9f\x98\x80",
                                   "~1",
                                   "{",
                                   "]",
                                   ":",
                                   ",",
                                   "0",
                                   "\x7f"};
    size_t len = 0, n = rnd(12);
    buf[0] = '\0';
    for (size_t i = 0; i < n; i++) {
        const char *p = pieces[rnd(sizeof pieces / sizeof pieces[0])];
        size_t l = strlen(p);
        if (len + l + 1 >= cap) break;
        memcpy(buf + len, p, l + 1);
        len += l;
    }
}

/* When set, numbers are ones cJSON 1.7.15 prints exactly (at most 15 significant digits, no
 * negative zero), so our writer must match its bytes. */
static int easy_numbers;

static cJSON *random_value(int depth)
{
    char s[128];
    unsigned kind = depth > 6 ? rnd(5) : rnd(7);
    switch (kind) {
    case 0:
        return cJSON_CreateNull();
    case 1:
        return cJSON_CreateBool(rnd(2));
    case 2: {
        static const double nums[] = {0,
                                      -0.0,
                                      1,
                                      -1,
                                      42,
                                      300,
                                      2147483647,
                                      2147483648.0,
                                      -2147483649.0,
                                      1e21,
                                      1.5,
                                      -0.25,
                                      3.14159,
                                      1e-7,
                                      9007199254740993.0,
                                      123456789012345678.0,
                                      1e300};
        static const double easy[] = {0,    1,   -1,    42,      300,  2147483647, 2147483648.0,
                                      1e21, 1.5, -0.25, 3.14159, 1e-7, 1e300};
        if (easy_numbers) return cJSON_CreateNumber(easy[rnd(sizeof easy / sizeof easy[0])]);
        return cJSON_CreateNumber(nums[rnd(sizeof nums / sizeof nums[0])]);
    }
    case 3:
    case 4:
        random_string(s, sizeof s);
        return cJSON_CreateString(s);
    case 5: {
        cJSON *a = cJSON_CreateArray();
        for (unsigned i = rnd(6); i > 0; i--)
            cJSON_AddItemToArray(a, random_value(depth + 1));
        return a;
    }
    default: {
        cJSON *o = cJSON_CreateObject();
        for (unsigned i = rnd(6); i > 0; i--) {
            random_string(s, sizeof s);
            cJSON_AddItemToObject(o, s, random_value(depth + 1));
        }
        return o;
    }
    }
}

static void test_generated(void)
{
    int failures = 0;
    for (int i = 0; i < 3000; i++) {
        cJSON *v = random_value(0);
        char *compact = cJSON_PrintUnformatted(v);
        char *pretty = cJSON_Print(v);
        if (!parses_like_cjson(compact, strlen(compact))) failures++;
        if (!parses_like_cjson(pretty, strlen(pretty))) failures++;
        free(compact);
        free(pretty);
        cJSON_Delete(v);
    }
    CHECK_INT(failures, 0);
}

static void test_fixtures(void)
{
    const char *dirs[] = {GPA_FIXTURES_DIR "/k8s-api/HEAD", GPA_FIXTURES_DIR "/k8s-api/v1.36.0",
                          GPA_FIXTURES_DIR "/kubewarden-policies",
                          GPA_FIXTURES_DIR "/kubewarden-policy-server"};
    int files = 0;
    for (size_t i = 0; i < sizeof dirs / sizeof dirs[0]; i++) {
        DIR *dir = opendir(dirs[i]);
        CHECK(dir != NULL);
        struct dirent *e;
        while (dir && (e = readdir(dir))) {
            size_t n = strlen(e->d_name);
            if (n < 5 || strcmp(e->d_name + n - 5, ".json") != 0) continue;
            char path[4096];
            snprintf(path, sizeof path, "%s/%s", dirs[i], e->d_name);
            FILE *f = fopen(path, "rb");
            static char buf[1 << 20];
            size_t len = f ? fread(buf, 1, sizeof buf - 1, f) : 0;
            if (f) fclose(f);
            buf[len] = '\0';
            CHECK(parses_like_cjson(buf, len));
            files++;
        }
        if (dir) closedir(dir);
    }
    CHECK(files >= 15);
}

static void test_values(void)
{
    gpa_jdoc *d = NULL;
    const char *t = "{\"e\":\"\\u00e9\\/\\ud83d\\ude00\\n\",\"n\":-0,\"i\":-2147483649,"
                    "\"f\":1.5E+3,\"b\":[true,false,null]}";
    CHECK_INT(gpa_jdoc_parse(&d, t, strlen(t), NULL, NULL), 0);
    const cJSON *r = gpa_jdoc_root(d);
    CHECK_STR(cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(r, "e")),
              "\xc3\xa9/\xf0\x9f\x98\x80\n");
    const cJSON *nz = cJSON_GetObjectItemCaseSensitive(r, "n");
    CHECK(cJSON_IsNumber(nz) && nz->valuedouble == 0 && signbit(nz->valuedouble));
    CHECK_INT(cJSON_GetObjectItemCaseSensitive(r, "i")->valueint, INT32_MIN);
    CHECK(cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(r, "f")) == 1500.0);
    CHECK_INT(cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(r, "b")), 3);
    /* A copy made with cJSON_Duplicate owns its memory: usable after the arena is gone. */
    cJSON *copy = cJSON_Duplicate(r, 1);
    gpa_jdoc_free(d);
    char *s = cJSON_PrintUnformatted(copy);
    CHECK_CONTAINS(s, "\"b\":[true,false,null]");
    free(s);
    cJSON_Delete(copy);

    /* Wider than the first node chunk: chained chunks. */
    size_t n = 20000;
    char *wide = malloc(n * 2 + 2);
    wide[0] = '[';
    for (size_t i = 0; i < n; i++) {
        wide[1 + 2 * i] = '7';
        wide[2 + 2 * i] = i + 1 < n ? ',' : ']';
    }
    wide[2 * n + 1] = '\0';
    CHECK_INT(gpa_jdoc_parse(&d, wide, strlen(wide), NULL, NULL), 0);
    r = gpa_jdoc_root(d);
    CHECK_INT(cJSON_GetArraySize(r), (long long)n);
    CHECK(r && r->child && r->child->prev && r->child->prev->next == NULL);
    CHECK(parses_like_cjson(wide, strlen(wide)));
    gpa_jdoc_free(d);
    free(wide);

    /* Depth: GPA_JSON_MAX_DEPTH nested containers are fine, one more is refused. */
    size_t depth = GPA_JSON_MAX_DEPTH;
    char *deep = malloc(2 * depth + 4);
    memset(deep, '[', depth);
    memset(deep + depth, ']', depth);
    deep[2 * depth] = '\0';
    CHECK_INT(gpa_jdoc_parse(&d, deep, 2 * depth, NULL, NULL), 0);
    gpa_jdoc_free(d);
    memset(deep, '[', depth + 1);
    memset(deep + depth + 1, ']', depth + 1);
    deep[2 * depth + 2] = '\0';
    CHECK(refused(deep, 2 * depth + 2));
    free(deep);
}

static void test_refused(void)
{
    const char *bad[] = {
        "",
        " ",
        "{",
        "}",
        "[",
        "[1,]",
        "{\"a\":1,}",
        "{a:1}",
        "{'a':1}",
        "{\"a\" 1}",
        "{\"a\":}",
        "[1 2]",
        "01",
        "-01",
        "1.",
        ".5",
        "+1",
        "-",
        "1e",
        "1e+",
        "0x10",
        "NaN",
        "Infinity",
        "tru",
        "nul",
        "fals",
        "truex",
        "[true false]",
        "\"abc",
        "\"a\nb\"",
        "\"a\tb\"",
        "\"\\x\"",
        "\"\\u12\"",
        "\"\\u12g4\"",
        "\"\\ud800\"",
        "\"\\udc00\"",
        "\"\\ud800\\u0041\"",
        "\"\\ud800x\"",
        "\"a\\u0000b\"",
        "{\"\\u0000\":1}",
        "1 2",
        "{} x",
        "[]]",
        "{\"a\":1}}",
        "// c\n1",
        "/* c */ 1",
        "[1,,2]",
        "[,1]",
        "\"\\",
        "[\"a\\\"]",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        int r = refused(bad[i], strlen(bad[i]));
        if (!r) fprintf(stderr, "case %zu\n", i);
        CHECK(r);
    }
    /* NUL bytes: inside a string, and after the document. */
    /* RFC 8259 8.1: JSON text is UTF-8; every malformed sequence is refused, valid ones of
     * each length are not */
    {
        static const char *const bad_utf8[] = {
            "\"\xc3\x28\"",         /* bad continuation */
            "\"\xc0\xaf\"",         /* overlong '/' */
            "\"\xe0\x80\xaf\"",     /* overlong, 3 bytes */
            "\"\xed\xa0\x80\"",     /* UTF-16 surrogate */
            "\"\xf4\x90\x80\x80\"", /* past U+10FFFF */
            "\"\xf5\x80\x80\x80\"", /* invalid lead byte */
            "\"\x80\"",             /* lone continuation */
            "\"\xff\"",             /* never valid */
            "\"\xe2\x82\"",         /* truncated inside the string */
        };
        for (size_t i = 0; i < sizeof bad_utf8 / sizeof *bad_utf8; i++)
            CHECK(refused(bad_utf8[i], strlen(bad_utf8[i])));
        CHECK(refused("[1]\xe2\x82", 5)); /* truncated at the very end */
        const char *good = "\"\xc3\xbc\xe2\x82\xac\xf0\x9f\x98\x80 \xf4\x8f\xbf\xbf\"";
        gpa_jdoc *d = NULL;
        CHECK_INT(gpa_jdoc_parse(&d, good, strlen(good), NULL, NULL), 0);
        CHECK_STR(d ? gpa_jdoc_root(d)->valuestring : NULL,
                  "\xc3\xbc\xe2\x82\xac\xf0\x9f\x98\x80 \xf4\x8f\xbf\xbf");
        gpa_jdoc_free(d);
    }
    CHECK(refused("\"a\0b\"", 5));
    CHECK(refused("[1]\0", 4));
    CHECK(refused("[1\0]", 4));
    /* A length shorter than the text: only len bytes count. */
    CHECK(refused("[1,2]", 4));
    gpa_jdoc *d = NULL;
    CHECK_INT(gpa_jdoc_parse(&d, "[1,2]xyz", 5, NULL, NULL), 0);
    CHECK_INT(cJSON_GetArraySize(gpa_jdoc_root(d)), 2);
    gpa_jdoc_free(d);
    /* Accepted whitespace: space, tab, CR, LF everywhere between tokens. */
    const char *ws = " \t\r\n{ \"a\" :\t[ 1 , \"x\" ]\r\n, \"b\" : { } } \n";
    CHECK(parses_like_cjson(ws, strlen(ws)));
}

/* Our JSON writer: lossless (parses back to exactly the same tree, where cJSON 1.7.15's printer
 * rounds numbers with more than 15 significant digits), and byte-identical to
 * cJSON_PrintUnformatted for every document cJSON prints exactly. */
static void test_writer(void)
{
    int failures = 0;
    for (int i = 0; i < 6000; i++) {
        easy_numbers = i % 2;
        cJSON *v = random_value(0);
        gpa_rbuf b;
        gpa_rbuf_init(&b, 16);
        gpa_rbuf_json_value(&b, v);
        size_t len = 0;
        char *got = gpa_rbuf_take(&b, &len);
        gpa_jdoc *d = NULL;
        if (!got || len != strlen(got) || gpa_jdoc_parse(&d, got, len, NULL, NULL) != 0 ||
            !same(gpa_jdoc_root(d), v)) {
            fprintf(stderr, "writer is lossy: %.200s\n", got ? got : "(null)");
            failures++;
        }
        gpa_jdoc_free(d);
        char *ref = cJSON_PrintUnformatted(v);
        if (easy_numbers && (!ref || strcmp(got, ref) != 0)) {
            fprintf(stderr, "writer differs:\n  cJSON: %.200s\n  ours:  %.200s\n", ref, got);
            failures++;
        }
        free(got);
        free(ref);
        cJSON_Delete(v);
    }
    easy_numbers = 0;
    CHECK_INT(failures, 0);

    unsigned char raw[300];
    for (size_t i = 0; i < sizeof raw; i++)
        raw[i] = (unsigned char)rnd(256);
    failures = 0;
    for (size_t n = 0; n <= sizeof raw; n++) {
        unsigned char ref[512];
        int rl = EVP_EncodeBlock(ref, raw, (int)n);
        gpa_rbuf b;
        gpa_rbuf_init(&b, 1);
        gpa_rbuf_base64(&b, raw, n);
        size_t len = 0;
        char *got = gpa_rbuf_take(&b, &len);
        if (!got || (int)len != rl || memcmp(got, ref, len) != 0) failures++;
        free(got);
    }
    CHECK_INT(failures, 0);
}

int main(void)
{
    test_writer();
    test_values();
    test_refused();
    test_fixtures();
    test_generated();
    return check_done();
}
