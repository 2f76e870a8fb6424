/*
 * test_review_json.c - the codec's arena JSON reader (src/core/format/json_read.c) against cJSON:
 * every JSON fixture and thousands of generated documents (escapes, unicode, numbers of every
 * shape, deep and wide nesting, whitespace) must give the same tree, node for node, as
 * cJSON_Parse; everything RFC 8259 forbids must be refused; trees must survive
 * cJSON_Duplicate after the arena is gone. Also the codec's writer (format/json_write.c): its JSON
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
#include "format/json_write.h"
#include "format/json_read.h"

#include <openssl/evp.h>
#include "json_same.h"

/* The fields json_same does not look at are what cJSON_Parse leaves them: no child below a
 * leaf, no valuestring but on strings, valueint/valuedouble 0 but on numbers (and valueint
 * 1 on true), no const/reference flags. The reader sets each node field by field (no
 * memset), so a field it forgets keeps whatever an earlier document left in the memory. */
static int fields_clean(const cJSON *v)
{
    for (; v; v = v->next) {
        int t = v->type & 0xFF;
        bool container = t == cJSON_Array || t == cJSON_Object;
        if (v->type & (cJSON_IsReference | cJSON_StringIsConst)) return 0;
        if (!container && v->child) return 0;
        if ((t == cJSON_String) != (v->valuestring != NULL)) return 0;
        if (t != cJSON_Number && (v->valuedouble != 0 || v->valueint != (t == cJSON_True)))
            return 0;
        if (container && !fields_clean(v->child)) return 0;
    }
    return 1;
}

static int parses_like_cjson(const char *text, size_t len)
{
    gpa_jdoc *d = NULL;
    const char *why = NULL;
    size_t off = 0;
    cJSON *ref = cJSON_ParseWithLength(text, len);
    int rc = gpa_jdoc_parse(&d, text, len, &why, &off);
    int ok =
        ref && rc == 0 && gpa_json_same(gpa_jdoc_root(d), ref) && fields_clean(gpa_jdoc_root(d));
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
/* Base64 of in[0..n) through mode 0: gpa_rbuf_base64; 1, 2, 3: in place after a prefix, with
 * the table path only, up to SSSE3, up to AVX2 (each where the CPU has it). True when the
 * output is want (and the prefix survived). */
static bool b64_matches(const unsigned char *in, size_t n, int mode, const unsigned char *want,
                        size_t want_len)
{
    static const char prefix[] = "\"patch\":\"";
    size_t pl = mode ? sizeof prefix - 1 : 0;
    gpa_rbuf b;
    gpa_rbuf_init(&b, 1);
    if (mode == 0) {
        gpa_rbuf_base64(&b, in, n);
    } else {
        gpa_rbuf_put(&b, prefix, pl);
        gpa_rbuf_put(&b, (const char *)in, n);
        gpa_rbuf_base64_tail_with(&b, pl, mode - 1);
    }
    size_t len = 0;
    char *got = gpa_rbuf_take(&b, &len);
    bool ok = got && len == pl + want_len && memcmp(got, prefix, pl) == 0 &&
              memcmp(got + pl, want, want_len) == 0;
    free(got);
    return ok;
}

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
            !gpa_json_same(gpa_jdoc_root(d), v)) {
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
        for (int mode = 0; mode < 4; mode++)
            if (!b64_matches(raw, n, mode, ref, (size_t)rl)) failures++;
    }
    CHECK_INT(failures, 0);

    /* Every 12-bit value (the encoder looks digits up in pairs), at each start offset of
     * the 6-, 12- and 24-byte steps (table, SSSE3, AVX2) and with every tail length. */
    static unsigned char all[6144 + 8];
    for (unsigned v = 0; v < 4096; v += 2) {
        unsigned char *g = all + v / 2 * 3; /* two 12-bit values per 3 bytes */
        g[0] = (unsigned char)(v >> 4);
        g[1] = (unsigned char)((v & 15) << 4 | (v + 1) >> 8);
        g[2] = (unsigned char)((v + 1) & 255);
    }
    static unsigned char ref[8400];
    failures = 0;
    for (size_t off = 0; off < 24; off++)
        for (size_t cut = 0; cut < 26; cut++) {
            size_t n = 6144 - off - cut;
            int rl = EVP_EncodeBlock(ref, all + off, (int)n);
            for (int mode = 0; mode < 4; mode++)
                if (!b64_matches(all + off, n, mode, ref, (size_t)rl)) failures++;
        }
    CHECK_INT(failures, 0);
}

/* fmt with its one "%s" replaced by val (no printf: the shapes are data). Returns the length. */
static size_t subst(char *out, size_t cap, const char *fmt, const char *val)
{
    const char *at = strstr(fmt, "%s");
    size_t pl = (size_t)(at - fmt), vl = strlen(val), rl = strlen(at + 2);
    if (pl + vl + rl + 1 > cap) return 0;
    memcpy(out, fmt, pl);
    memcpy(out + pl, val, vl);
    memcpy(out + pl + vl, at + 2, rl + 1);
    return pl + vl + rl;
}

/* An independent UTF-8 check (decode, then range-check the code point) to hold the reader's
 * against: offset of the first byte that does not start a well-formed sequence, or len. */
static size_t ref_utf8_invalid_at(const unsigned char *s, size_t len)
{
    size_t i = 0;
    while (i < len) {
        unsigned c = s[i], need, cp, min;
        if (c < 0x80) {
            i++;
            continue;
        }
        if ((c & 0xE0) == 0xC0) {
            need = 1, cp = c & 0x1F, min = 0x80;
        } else if ((c & 0xF0) == 0xE0) {
            need = 2, cp = c & 0x0F, min = 0x800;
        } else if ((c & 0xF8) == 0xF0) {
            need = 3, cp = c & 0x07, min = 0x10000;
        } else {
            return i;
        }
        if (i + need >= len) return i;
        for (unsigned k = 1; k <= need; k++) {
            if ((s[i + k] & 0xC0) != 0x80) return i;
            cp = cp << 6 | (s[i + k] & 0x3F);
        }
        if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return i;
        i += need + 1;
    }
    return len;
}

/* Refused as invalid UTF-8 at exactly `at`. */
static int refused_utf8_at(const char *text, size_t len, size_t at)
{
    gpa_jdoc *d = NULL;
    const char *why = NULL;
    size_t off = 99999;
    int rc = gpa_jdoc_parse(&d, text, len, &why, &off);
    gpa_jdoc_free(d);
    int ok = rc == -1 && why && strcmp(why, "invalid UTF-8") == 0 && off == at;
    if (!ok)
        fprintf(stderr, "expected invalid UTF-8 at %zu, got rc %d (%s at %zu): %.100s\n", at, rc,
                why ? why : "-", off, text);
    return ok;
}

/* UTF-8 is checked inside the string scan, not in a pass of its own: every malformed sequence
 * must still be refused wherever it sits (key, value, after an escape, across the scan's
 * 16-byte blocks, at the end of the buffer, outside a string) and reported as invalid UTF-8 at
 * its first byte, ahead of any syntax error, as a separate pass would; valid ones must read
 * exactly as cJSON reads them. */
static void test_utf8_in_scan(void)
{
    static const char *const bad_seq[] = {
        "\x80",
        "\xbf",
        "\xc0\xaf",
        "\xc1\xbf",
        "\xc2",
        "\xc3\x28",
        "\xdf\xc0",
        "\xe0\x80\xaf",
        "\xe0\x9f\xbf",
        "\xe2\x82",
        "\xe2\x28\xa1",
        "\xe2\x82\x28",
        "\xed\xa0\x80",
        "\xed\xbf\xbf",
        "\xef\xbf",
        "\xf0\x80\x80\x80",
        "\xf0\x8f\xbf\xbf",
        "\xf0\x9f\x98",
        "\xf0\x9f\x98\x28",
        "\xf4\x90\x80\x80",
        "\xf5\x80\x80\x80",
        "\xf8\x88\x80\x80\x80",
        "\xfe",
        "\xff",
    };
    static const char *const good_seq[] = {
        "\xc2\x80",         "\xc3\xa9",         "\xdf\xbf",         "\xe0\xa0\x80",
        "\xe2\x82\xac",     "\xed\x9f\xbf",     "\xee\x80\x80",     "\xef\xbf\xbf",
        "\xf0\x90\x80\x80", "\xf0\x9f\x98\x80", "\xf4\x8f\xbf\xbf",
    };
    /* %s is where the sequence goes; the prefix before it has no multi-byte text. */
    static const char *const shapes[] = {
        "\"%s\"",
        "{\"%s\":1}",
        "{\"k\":\"%s\"}",
        "{\"k\":\"abc%sdef\"}",
        "[\"\\n%s\"]",             /* after an escape: the unescaping path */
        "[\"\\u00e9x%s\\t\"]",     /* between escapes */
        "{\"%s\\\"\":[\"\\\\\"]}", /* key with an escape after it */
    };
    char text[256];
    int failures = 0;
    for (size_t sh = 0; sh < sizeof shapes / sizeof *shapes; sh++) {
        const char *at = strstr(shapes[sh], "%s");
        for (size_t pad = 0; pad < 40; pad++) {
            /* pad ASCII bytes before the sequence inside the same string: it lands at every
             * position of a 16-byte block */
            char fmt[192];
            size_t pl = (size_t)(at - shapes[sh]);
            memcpy(fmt, shapes[sh], pl);
            memset(fmt + pl, 'p', pad);
            memcpy(fmt + pl + pad, at, strlen(at) + 1);
            for (size_t i = 0; i < sizeof bad_seq / sizeof *bad_seq; i++) {
                size_t n = subst(text, sizeof text, fmt, bad_seq[i]);
                if (!refused_utf8_at(text, n, pl + pad)) failures++;
            }
            for (size_t i = 0; i < sizeof good_seq / sizeof *good_seq; i++) {
                size_t n = subst(text, sizeof text, fmt, good_seq[i]);
                if (!parses_like_cjson(text, n)) failures++;
            }
        }
    }
    CHECK_INT(failures, 0);

    /* At the very end of the buffer, in and out of a string, with and without a NUL after
     * it in memory (the reader must not look past len). */
    CHECK(refused_utf8_at("[\"ab\xe2\x82", 6, 4));
    CHECK(refused_utf8_at("[\"ab\xe2\x82\xac\"]", 6, 4)); /* len cuts the sequence */
    CHECK(refused_utf8_at("[1]\xf0\x9f\x98", 6, 3));
    CHECK(refused_utf8_at("\xff", 1, 0));
    /* Outside strings: an invalid sequence is reported as such ... */
    CHECK(refused_utf8_at("[1,\xff]", 5, 3));
    CHECK(refused_utf8_at("{\"a\"\xc0\xaf:1}", 9, 4));
    /* ... ahead of an earlier syntax error, as a separate pass reports it ... */
    CHECK(refused_utf8_at("[1 2,\"ok\",\"\xed\xa0\x80\"]", 17, 11));
    CHECK(refused_utf8_at("{\"a\":tru,\"b\":\"\x80\"}", 17, 14));
    /* ... while well-formed text outside a string is a plain syntax error. */
    {
        gpa_jdoc *d = NULL;
        const char *why = NULL;
        size_t off = 0;
        CHECK_INT(gpa_jdoc_parse(&d, "[1,\xc3\xa9]", 6, &why, &off), -1);
        CHECK_STR(why, "unexpected character");
        CHECK_INT(off, 3);
        CHECK_INT(gpa_jdoc_parse(&d, "\xef\xbb\xbf[1]", 6, &why, &off), -1); /* BOM */
        CHECK_STR(why, "unexpected character");
        CHECK_INT(off, 0);
    }

    /* Random damage to real-looking documents: the verdict on UTF-8 always agrees with the
     * independent check above, and whatever is accepted reads like cJSON. */
    failures = 0;
    for (int i = 0; i < 4000; i++) {
        cJSON *v = random_value(0);
        char *t = cJSON_PrintUnformatted(v);
        cJSON_Delete(v);
        size_t n = strlen(t);
        for (unsigned k = rnd(3) + 1; k > 0 && n > 0; k--) {
            static const unsigned char bytes[] = {0x80, 0xbf, 0xc0, 0xc3, 0xe0, 0xe2, 0xed,
                                                  0xf0, 0xf4, 0xf5, 0xff, 0xa0, 0x9f, 0x8f};
            t[rnd((unsigned)n)] = (char)bytes[rnd(sizeof bytes)];
        }
        size_t bad = ref_utf8_invalid_at((const unsigned char *)t, n);
        gpa_jdoc *d = NULL;
        const char *why = NULL;
        size_t off = 0;
        int rc = gpa_jdoc_parse(&d, t, n, &why, &off);
        if (bad < n) {
            if (!(rc == -1 && why && strcmp(why, "invalid UTF-8") == 0 && off == bad)) {
                fprintf(stderr, "random: expected invalid UTF-8 at %zu, got rc %d (%s at %zu)\n",
                        bad, rc, why ? why : "-", off);
                failures++;
            }
        } else if (rc == 0) {
            if (!parses_like_cjson(t, n)) failures++;
        } else if (why && strcmp(why, "invalid UTF-8") == 0) {
            fprintf(stderr, "random: valid UTF-8 refused as invalid: %.100s\n", t);
            failures++;
        }
        gpa_jdoc_free(d);
        free(t);
    }
    CHECK_INT(failures, 0);
}

/* Numbers of every length and shape (the reader has a fast path for short non-negative
 * integers) read exactly as cJSON reads them: as the root, in an array, in an object. */
static void test_numbers(void)
{
    static const char *const nums[] = {
        "0",
        "1",
        "9",
        "10",
        "99",
        "100",
        "8000",
        "65535",
        "123456789",
        "999999999",
        "1000000000",
        "1234567890",
        "2147483646",
        "2147483647",
        "2147483648",
        "4294967295",
        "4294967296",
        "9007199254740993",
        "18446744073709551615",
        "18446744073709551616",
        "99999999999999999999999",
        "0.5",
        "1.0",
        "10.25",
        "1e3",
        "1E3",
        "1e+3",
        "1e-3",
        "10e2",
        "123456789e1",
        "999999999.5",
        "-0",
        "-1",
        "-123456789",
        "-2147483648",
        "-2147483649",
        "-0.0",
        "0e0",
        "5E-324",
        "1e308",
        "1e999",
        "-1e999",
    };
    char text[128];
    int failures = 0;
    for (size_t i = 0; i < sizeof nums / sizeof *nums; i++) {
        const char *fmts[] = {"%s",   "[%s]",  "[%s,1]", "{\"n\":%s}", "{\"n\":%s,\"m\":2}",
                              " %s ", "[ %s ]"};
        for (size_t f = 0; f < sizeof fmts / sizeof *fmts; f++) {
            size_t n = subst(text, sizeof text, fmts[f], nums[i]);
            if (!parses_like_cjson(text, n)) failures++;
        }
    }
    CHECK_INT(failures, 0);
    static const char *const bad[] = {
        "01",  "00",  "012345", "[01]", "{\"n\":007}", "1.",          "1.e3",  "1e",   "[1e+]", "-",
        "[-]", "--1", "1-",     "[1a]", "[12x]",       "1234567890a", "[0x1]", "[.5]", "[+1]"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++)
        CHECK(refused(bad[i], strlen(bad[i])));
}

/* Where a container's members end: after each value the reader looks for ',' first, then the
 * closing bracket, and only then skips whitespace and looks again. Every way that can go
 * (compact, whitespace on either side, a nested container just closed, the end of input) must
 * accept what cJSON accepts and refuse the rest with the reason and the offset of the byte
 * that does not belong (the first one after any whitespace). */
static void test_separators(void)
{
    static const char *const good[] = {
        "{\"a\":1,\"b\":\"s\",\"c\":{},\"d\":[],\"e\":{\"f\":[1,{}]}}",
        "{\"a\":1 ,\"b\":\"s\"\t,\"c\":{}\n,\"d\":[] }",
        "{\"a\" : 1 , \"b\" : \"s\" }",
        "[1 ,\"s\"\r\n,{} ,[ ] ,true ,null\t]",
        "[[[]],[{}] ,[[1] ]]",
        "{\"a\":{\"b\":{}} }",
    };
    for (size_t i = 0; i < sizeof good / sizeof *good; i++)
        CHECK(parses_like_cjson(good[i], strlen(good[i])));
    static const struct {
        const char *text, *why;
        size_t at;
    } bad[] = {
        {"{\"a\":1x}", "expected ',' or '}'", 6},
        {"{\"a\":1 x}", "expected ',' or '}'", 7},
        {"{\"a\":\"s\"x}", "expected ',' or '}'", 8},
        {"{\"a\":\"s\" \n]", "expected ',' or '}'", 10},
        {"{\"a\":{} x}", "expected ',' or '}'", 8},
        {"{\"a\":[]]", "expected ',' or '}'", 7},
        {"{\"a\":1", "expected ',' or '}'", 6},
        {"{\"a\":1 ", "expected ',' or '}'", 7},
        {"{\"a\":1 , }", "expected a string key", 9},
        {"{\"a\":1,}", "expected a string key", 7},
        {"[1x]", "expected ',' or ']'", 2},
        {"[1 x]", "expected ',' or ']'", 3},
        {"[\"s\" }", "expected ',' or ']'", 5},
        {"[[] x]", "expected ',' or ']'", 4},
        {"[{}}", "expected ',' or ']'", 3},
        {"[1", "expected ',' or ']'", 2},
        {"[1\t", "expected ',' or ']'", 3},
        {"[1, ]", "unexpected character", 4},
        {"[1 ,,2]", "unexpected character", 4},
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        gpa_jdoc *d = NULL;
        const char *why = NULL;
        size_t at = 99999;
        CHECK_INT(gpa_jdoc_parse(&d, bad[i].text, strlen(bad[i].text), &why, &at), -1);
        CHECK_STR(why, bad[i].why);
        CHECK_INT(at, bad[i].at);
        if (!why || strcmp(why, bad[i].why) != 0 || at != bad[i].at)
            fprintf(stderr, "separator case %zu: %s at %zu\n", i, why ? why : "(none)", at);
        gpa_jdoc_free(d);
    }
}

int main(void)
{
    test_writer();
    test_values();
    test_refused();
    test_fixtures();
    test_generated();
    test_utf8_in_scan();
    test_numbers();
    test_separators();
    return check_done();
}
