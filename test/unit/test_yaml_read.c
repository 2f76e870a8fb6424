/*
 * test_yaml_read.c - the typed YAML reader (yaml_read.h) on its own: the one null and tag rule,
 * each getter on the right and the wrong types, the exact "file:line:col: message" texts the
 * policy loader's goldens depend on, and the collector's bound (first-N and lowest-N by
 * position), positions and out-of-memory behaviour.
 */
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "gpu_admission/suite.h"
#include "gpu_admission/yaml_read.h"

static gpa_ystream *parse(const char *y)
{
    gpa_ystream *s = NULL;
    int line = 0, col = 0;
    gpa_error e = {0};
    if (gpa_ystream_parse(&s, y, strlen(y), &line, &col, &e) != GPA_OK) {
        fprintf(stderr, "parse failed at %d:%d: %s\n", line, col, e.message);
        return NULL;
    }
    return s;
}

/* The only error collected so far, or "" */
static const char *only(gpa_yread *r)
{
    size_t n = 0;
    const gpa_yerror *e = gpa_yread_sorted(r, &n);
    return n == 1 ? e[0].text : "";
}

static void reset(gpa_yread *r)
{
    gpa_yread_free(r);
    gpa_yread_init(r, "f.yaml", 50, true);
}

static const char *const DOC = "nul: ~\n"                     /* 1 */
                               "word: null\n"                 /* 2 */
                               "quoted: 'null'\n"             /* 3 */
                               "strtag: !!str null\n"         /* 4 */
                               "int: 12\n"                    /* 5 */
                               "strint: !!str 12\n"           /* 6 */
                               "bool: True\n"                 /* 7 */
                               "float: 1.5\n"                 /* 8 */
                               "yes: yes\n"                   /* 9 */
                               "map: {a: 1}\n"                /* 10 */
                               "seq: [a, b]\n"                /* 11 */
                               "foo: !foo x\n"                /* 12 */
                               "nulltag: !!null ~\n"          /* 13 */
                               "empty:\n"                     /* 14 */
                               "mapseq: !!seq {}\n"           /* 15 */
                               "maptag: !!map {}\n"           /* 16 */
                               "bang: ! 7\n"                  /* 17 */
                               "neg: -3\n"                    /* 18 */
                               "huge: 99999999999999999999\n" /* 19 */
                               "nulchar: \"a\\0b\"\n"         /* 20 */
                               "qbool: 'true'\n";             /* 21 */

static void test_rule(const gpa_ynode *d)
{
    /* null: absent, or untagged unquoted ~ / null / empty; quoted or tagged never */
    CHECK(gpa_yread_is_null(NULL));
    CHECK(gpa_yread_is_null(gpa_ymap_get(d, "nul")));
    CHECK(gpa_yread_is_null(gpa_ymap_get(d, "word")));
    CHECK(gpa_yread_is_null(gpa_ymap_get(d, "empty")));
    CHECK(!gpa_yread_is_null(gpa_ymap_get(d, "quoted")));
    CHECK(!gpa_yread_is_null(gpa_ymap_get(d, "strtag")));
    CHECK(!gpa_yread_is_null(gpa_ymap_get(d, "nulltag")));
    CHECK(!gpa_yread_is_null(gpa_ymap_get(d, "map")));

    CHECK_STR(gpa_yread_type_name(NULL), "nothing");
    CHECK_STR(gpa_yread_type_name(gpa_ymap_get(d, "nul")), "null");
    CHECK_STR(gpa_yread_type_name(gpa_ymap_get(d, "quoted")), "a string");
    CHECK_STR(gpa_yread_type_name(gpa_ymap_get(d, "strtag")), "a string");
    CHECK_STR(gpa_yread_type_name(gpa_ymap_get(d, "int")), "an integer");
    CHECK_STR(gpa_yread_type_name(gpa_ymap_get(d, "strint")), "a string");
    CHECK_STR(gpa_yread_type_name(gpa_ymap_get(d, "bang")), "a string");
    CHECK_STR(gpa_yread_type_name(gpa_ymap_get(d, "bool")), "a boolean");
    CHECK_STR(gpa_yread_type_name(gpa_ymap_get(d, "float")), "a number");
    CHECK_STR(gpa_yread_type_name(gpa_ymap_get(d, "yes")), "a string"); /* YAML 1.2 */
    CHECK_STR(gpa_yread_type_name(gpa_ymap_get(d, "map")), "a mapping");
    CHECK_STR(gpa_yread_type_name(gpa_ymap_get(d, "seq")), "a list");
    CHECK_INT(gpa_yread_type(gpa_ymap_get(d, "qbool")), GPA_YT_STRING);

    /* text: any non-null scalar as written */
    CHECK_STR(gpa_yread_text(gpa_ymap_get(d, "int")), "12");
    CHECK_STR(gpa_yread_text(gpa_ymap_get(d, "quoted")), "null");
    CHECK(gpa_yread_text(gpa_ymap_get(d, "nul")) == NULL);
    CHECK(gpa_yread_text(gpa_ymap_get(d, "map")) == NULL);
    CHECK(gpa_yread_text(NULL) == NULL);

    /* tags: str / ! / map-on-map / seq-on-seq accepted, every other refused at the node */
    gpa_yread r;
    gpa_yread_init(&r, "f.yaml", 50, true);
    CHECK(gpa_yread_tag_ok(&r, gpa_ymap_get(d, "strtag")));
    CHECK(gpa_yread_tag_ok(&r, gpa_ymap_get(d, "bang")));
    CHECK(gpa_yread_tag_ok(&r, gpa_ymap_get(d, "maptag")));
    CHECK(gpa_yread_tag_ok(&r, gpa_ymap_get(d, "int")));
    CHECK_INT(r.n_total, 0);
    CHECK(!gpa_yread_tag_ok(&r, gpa_ymap_get(d, "foo")));
    CHECK_STR(only(&r), "f.yaml:12:6: YAML tag !foo is not supported here");
    reset(&r);
    CHECK(!gpa_yread_tag_ok(&r, gpa_ymap_get(d, "nulltag")));
    CHECK_STR(only(&r), "f.yaml:13:10: YAML tag tag:yaml.org,2002:null is not supported here");
    reset(&r);
    CHECK(!gpa_yread_want_seq(&r, gpa_ymap_get(d, "mapseq"), "x"));
    CHECK_STR(only(&r), "f.yaml:15:9: YAML tag tag:yaml.org,2002:seq is not supported here");
    gpa_yread_free(&r);
}

static void test_getters(const gpa_ynode *d)
{
    gpa_yread r;
    gpa_yread_init(&r, "f.yaml", 50, true);
    char *s = NULL;

    CHECK(gpa_yread_want_map(&r, gpa_ymap_get(d, "map"), "m"));
    CHECK(gpa_yread_want_map(&r, gpa_ymap_get(d, "maptag"), "m"));
    CHECK(gpa_yread_want_seq(&r, gpa_ymap_get(d, "seq"), "s"));
    CHECK_INT(r.n_total, 0);
    CHECK(!gpa_yread_want_map(&r, gpa_ymap_get(d, "seq"), "spec.pools"));
    CHECK_STR(only(&r), "f.yaml:11:6: spec.pools: expected a mapping, got a list");
    reset(&r);
    CHECK(!gpa_yread_want_seq(&r, gpa_ymap_get(d, "nul"), "rules"));
    CHECK_STR(only(&r), "f.yaml:1:6: rules: expected a list, got null");
    reset(&r);

    /* strings */
    CHECK(gpa_yread_str(&r, gpa_ymap_get(d, "strtag"), "name", &s));
    CHECK_STR(s, "null");
    free(s);
    CHECK(gpa_yread_str(&r, gpa_ymap_get(d, "strint"), "name", &s));
    CHECK_STR(s, "12");
    free(s);
    CHECK(gpa_yread_str(&r, gpa_ymap_get(d, "yes"), "name", &s));
    CHECK_STR(s, "yes");
    free(s);
    s = NULL;
    CHECK(!gpa_yread_str(&r, gpa_ymap_get(d, "int"), "pool name", &s));
    CHECK_STR(only(&r),
              "f.yaml:5:6: pool name: expected a string, got an integer (quote it to make it a "
              "string)");
    CHECK(s == NULL);
    reset(&r);
    CHECK(!gpa_yread_str(&r, gpa_ymap_get(d, "word"), "pool name", &s));
    CHECK_STR(only(&r), "f.yaml:2:7: pool name: expected a string, got null");
    reset(&r);
    CHECK(!gpa_yread_str(&r, gpa_ymap_get(d, "map"), "pool name", &s));
    CHECK_STR(only(&r), "f.yaml:10:6: pool name: expected a string, got a mapping");
    reset(&r);
    CHECK(!gpa_yread_str(&r, gpa_ymap_get(d, "nulchar"), "label", &s));
    CHECK_STR(only(&r), "f.yaml:20:10: label: contains a NUL character");
    reset(&r);
    CHECK(!gpa_yread_str(&r, gpa_ymap_get(d, "foo"), "label", &s));
    CHECK_STR(only(&r), "f.yaml:12:6: YAML tag !foo is not supported here");
    reset(&r);

    /* integers and their ranges */
    int64_t v = -1;
    CHECK(gpa_yread_int(&r, gpa_ymap_get(d, "int"), "count", 0, 100, &v));
    CHECK_INT(v, 12);
    CHECK(!gpa_yread_int(&r, gpa_ymap_get(d, "int"), "count", 0, 10, &v));
    CHECK_STR(only(&r), "f.yaml:5:6: count: must be at most 10 (got 12)");
    reset(&r);
    CHECK(!gpa_yread_int(&r, gpa_ymap_get(d, "int"), "count", 13, 20, &v));
    CHECK_STR(only(&r), "f.yaml:5:6: count: must be at least 13 (got 12)");
    reset(&r);
    CHECK(!gpa_yread_int(&r, gpa_ymap_get(d, "neg"), "count", 0, 20, &v));
    CHECK_STR(only(&r), "f.yaml:18:6: count: must not be negative (got -3)");
    reset(&r);
    CHECK(!gpa_yread_int(&r, gpa_ymap_get(d, "huge"), "count", 0, INT64_MAX, &v));
    CHECK_STR(only(&r), "f.yaml:19:7: count: must be at most 9223372036854775807 (got "
                        "99999999999999999999)");
    reset(&r);
    CHECK(!gpa_yread_int(&r, gpa_ymap_get(d, "strint"), "count", 0, 20, &v));
    CHECK_STR(only(&r), "f.yaml:6:9: count: expected an integer, got a string");
    reset(&r);
    CHECK(!gpa_yread_int(&r, gpa_ymap_get(d, "float"), "count", 0, 20, &v));
    CHECK_STR(only(&r), "f.yaml:8:8: count: expected an integer, got a number");
    CHECK_INT(v, 12);
    reset(&r);

    /* booleans */
    bool b = false;
    CHECK(gpa_yread_bool(&r, gpa_ymap_get(d, "bool"), "flag", &b));
    CHECK(b);
    CHECK(!gpa_yread_bool(&r, gpa_ymap_get(d, "qbool"), "flag", &b));
    CHECK_STR(only(&r), "f.yaml:21:8: flag: expected true or false, got a string");
    reset(&r);
    CHECK(!gpa_yread_bool(&r, gpa_ymap_get(d, "yes"), "flag", &b));
    CHECK_STR(only(&r), "f.yaml:9:6: flag: expected true or false, got a string");
    reset(&r);

    /* enums */
    static const char *const names[] = {"yes", "no", NULL};
    CHECK_INT(gpa_yread_enum(&r, gpa_ymap_get(d, "yes"), "mode", names), 0);
    CHECK_INT(gpa_yread_enum(&r, gpa_ymap_get(d, "quoted"), "mode", names), -1);
    CHECK_STR(only(&r), "f.yaml:3:9: mode: invalid value \"null\" (one of: yes, no)");
    reset(&r);
    CHECK_INT(gpa_yread_enum(&r, gpa_ymap_get(d, "bool"), "mode", names), -1);
    CHECK_STR(only(&r),
              "f.yaml:7:7: mode: expected a string, got a boolean (quote it to make it a string)");
    reset(&r);

    /* fields: values by name, absent NULL, unknown keys listed at the key */
    static const char *const f[] = {"int", "missing", "map", NULL};
    const gpa_ynode *vals[3] = {0};
    gpa_yread_fields(&r, gpa_ymap_get(d, "map"), "inner", f, vals);
    CHECK_STR(only(&r), "f.yaml:10:7: inner: unknown key \"a\" (allowed: int, missing, map)");
    CHECK(vals[0] == NULL && vals[1] == NULL && vals[2] == NULL);
    reset(&r);
    const gpa_ynode *all[3] = {0};
    static const char *const f2[] = {"int", "missing", "seq", NULL};
    gpa_yread_fields(&r, d, "doc", f2, all);
    CHECK(all[0] == gpa_ymap_get(d, "int"));
    CHECK(all[1] == NULL);
    CHECK(all[2] == gpa_ymap_get(d, "seq"));
    CHECK_INT(r.n_total, 19); /* the document's other 19 keys */
    gpa_yread_free(&r);
}

static const char *no_x(const char *s)
{
    return strchr(s, 'x') ? "must not contain x" : NULL;
}

static void free_strs(char **v, size_t n)
{
    for (size_t i = 0; i < n; i++)
        free(v[i]);
    free(v);
}

static void test_lists(void)
{
    gpa_ystream *s = parse("l: [a, 'b', xa, a, 7, c]\n"
                           "e: []\n"
                           "m: {k: v, bad: x, 1: z, n: ~}\n");
    if (!s) {
        CHECK(0);
        return;
    }
    const gpa_ynode *d = s->docs[0];
    gpa_yread r;
    gpa_yread_init(&r, "l.yaml", 50, true);
    char **items = NULL;
    size_t n = 0;
    gpa_ypos *pos = NULL;
    CHECK(!gpa_yread_strlist(&r, gpa_ymap_get(d, "l"), "globs", false, 10, no_x, "glob", &items, &n,
                             &pos));
    CHECK_INT(n, 3); /* a, b, c kept; xa, the second a and 7 reported */
    if (n == 3) {
        CHECK_STR(items[0], "a");
        CHECK_STR(items[1], "b");
        CHECK_STR(items[2], "c");
        CHECK_INT(pos[2].line, 1);
        CHECK_INT(pos[2].col, 23);
    }
    size_t ne = 0;
    const gpa_yerror *e = gpa_yread_sorted(&r, &ne);
    CHECK_INT(ne, 3);
    if (ne == 3) {
        CHECK_STR(e[0].text, "l.yaml:1:13: glob \"xa\" must not contain x");
        CHECK_STR(e[1].text, "l.yaml:1:17: glob \"a\" is listed twice");
        CHECK_STR(e[2].text,
                  "l.yaml:1:20: glob: expected a string, got an integer (quote it to make it a "
                  "string)");
    }
    free_strs(items, n);
    free(pos);
    reset(&r);
    CHECK(!gpa_yread_strlist(&r, gpa_ymap_get(d, "l"), "globs", false, 5, NULL, "glob", &items, &n,
                             NULL));
    CHECK_STR(only(&r), "f.yaml:1:4: globs: too many entries (6; at most 5)");
    CHECK(items == NULL && n == 0);
    reset(&r);
    CHECK(!gpa_yread_strlist(&r, gpa_ymap_get(d, "e"), "globs", false, 5, NULL, "glob", &items, &n,
                             NULL));
    CHECK_STR(only(&r), "f.yaml:2:4: globs: must not be empty");
    reset(&r);
    CHECK(gpa_yread_strlist(&r, gpa_ymap_get(d, "e"), "globs", true, 5, NULL, "glob", &items, &n,
                            NULL));
    CHECK_INT(n, 0);
    free(items);

    char **keys = NULL, **vals = NULL;
    CHECK(!gpa_yread_strmap(&r, gpa_ymap_get(d, "m"), "nodeSelector", 10, no_x, "label key", no_x,
                            "label value", &keys, &vals, &n));
    CHECK_INT(n, 1);
    if (n == 1) {
        CHECK_STR(keys[0], "k");
        CHECK_STR(vals[0], "v");
    }
    e = gpa_yread_sorted(&r, &ne);
    CHECK_INT(ne, 3);
    if (ne == 3) {
        CHECK_STR(e[0].text,
                  "f.yaml:3:16: nodeSelector[bad]: label value \"x\" must not contain x");
        CHECK_STR(e[1].text, "f.yaml:3:19: nodeSelector: expected a string, got an integer "
                             "(quote it to make it a string)");
        CHECK_STR(e[2].text, "f.yaml:3:28: nodeSelector[n]: expected a string, got null");
    }
    free_strs(keys, n);
    free_strs(vals, n);
    gpa_yread_free(&r);
    gpa_ystream_free(s);
}

static void test_collector(void)
{
    gpa_yread r;
    /* first-N: report order, the rest counted */
    gpa_yread_init(&r, "c.yaml", 2, false);
    gpa_yread_error_at(&r, 9, 1, "one");
    gpa_yread_error_at(&r, 3, 1, "two");
    gpa_yread_error_at(&r, 1, 1, "three");
    gpa_yread_error(&r, NULL, "four %d", 4);
    size_t n = 0;
    const gpa_yerror *e = gpa_yread_sorted(&r, &n);
    CHECK_INT(n, 2);
    CHECK_INT(r.n_total, 4);
    CHECK_STR(e[0].text, "c.yaml:9:1: one");
    CHECK_STR(e[1].text, "c.yaml:3:1: two");
    gpa_yread_free(&r);

    /* lowest-N by (file, line, col, report order): what a sorted, cut report shows */
    gpa_yread_init(&r, "a.yaml", 3, true);
    r.file_idx = 1;
    gpa_yread_error_at(&r, 1, 1, "later file");
    r.file_idx = 0;
    gpa_yread_error_at(&r, 5, 2, "b");
    gpa_yread_error_at(&r, 5, 1, "a");
    gpa_yread_error_at(&r, 7, 1, "c");
    gpa_yread_error_at(&r, 5, 2, "b again");
    gpa_yread_error_at(&r, 0, 0, "whole file");
    e = gpa_yread_sorted(&r, &n);
    CHECK_INT(n, 3);
    CHECK_INT(r.n_total, 6);
    CHECK_STR(e[0].text, "a.yaml: whole file");
    CHECK_STR(e[1].text, "a.yaml:5:1: a");
    CHECK_STR(e[2].text, "a.yaml:5:2: b");
    gpa_yread_free(&r);

    /* NULL node: 1:1; max 0 keeps nothing but counts */
    gpa_yread_init(&r, "z.yaml", 0, true);
    gpa_yread_error(&r, NULL, "x");
    e = gpa_yread_sorted(&r, &n);
    CHECK_INT(n, 0);
    CHECK_INT(r.n_total, 1);
    gpa_yread_free(&r);
    gpa_yread_init(&r, "z.yaml", 4, true);
    gpa_yread_error(&r, NULL, "x");
    CHECK_STR(only(&r), "z.yaml:1:1: x");
    gpa_yread_free(&r);

    /* a bound holds however many errors come: 100000 reports, 50 kept, the lowest */
    gpa_yread_init(&r, "big.yaml", 50, true);
    for (int i = 100000; i > 0; i--)
        gpa_yread_error_at(&r, i, 1, "e%d", i);
    e = gpa_yread_sorted(&r, &n);
    CHECK_INT(n, 50);
    CHECK_INT(r.n_total, 100000);
    CHECK(r.cap_errs <= 50);
    CHECK_STR(e[0].text, "big.yaml:1:1: e1");
    CHECK_STR(e[49].text, "big.yaml:50:1: e50");
    gpa_yread_free(&r);
}

/* An allocator that fails from the n-th call on. */
typedef struct {
    int calls, fail_at;
    void *blocks[16];
} failing;

static void *failing_alloc(void *ctx, size_t size)
{
    failing *f = ctx;
    if (++f->calls >= f->fail_at || f->calls > 16) return NULL;
    return f->blocks[f->calls - 1] = malloc(size);
}

static void test_oom(const gpa_ynode *d)
{
    gpa_yread r;
    gpa_yread_init(&r, "f.yaml", 50, true);
    failing f = {.fail_at = 1};
    r.alloc = failing_alloc;
    r.alloc_ctx = &f;
    char *s = NULL;
    CHECK(!gpa_yread_str(&r, gpa_ymap_get(d, "yes"), "x", &s));
    CHECK(r.oom);
    CHECK(s == NULL);
    /* after out of memory nothing more is collected: the caller reports the OOM instead */
    gpa_yread_error_at(&r, 1, 1, "dropped");
    CHECK_INT(r.n_total, 0);
    gpa_yread_free(&r);

    gpa_yread_init(&r, "f.yaml", 50, true);
    f = (failing){.fail_at = 2};
    r.alloc = failing_alloc;
    r.alloc_ctx = &f;
    char **items = NULL;
    size_t n = 0;
    CHECK(!gpa_yread_strlist(&r, gpa_ymap_get(d, "seq"), "s", false, 10, NULL, "i", &items, &n,
                             NULL));
    CHECK(r.oom);
    for (int i = 0; i < f.calls && i < 16; i++)
        if (i + 1 < f.fail_at) free(f.blocks[i]);
    gpa_yread_free(&r);
}

#define SUITE_HEAD                                                                                 \
    "apiVersion: gpu-admission.io/v1alpha1\nkind: GPUPolicyTest\nmetadata: {name: t}\nspec:\n"     \
    "  policies: p\n  cases:\n    - object: {apiVersion: v1, kind: Pod, metadata: {name: p}}\n"

/* The suite reader follows the same rule: !!str is a string, other tags are refused. */
static void test_suite_rule(void)
{
    static const char ok[] = SUITE_HEAD "      name: !!str 7\n      expect: {rule: !!str null}\n";
    gpa_suite_file *f = NULL;
    gpa_error e = {0};
    CHECK_INT(gpa_suite_file_parse(&f, ok, strlen(ok), "s.yaml", NULL, NULL, &e), GPA_OK);
    CHECK_STR(gpa_suite_case_name(f, 0, 0), "7");
    gpa_suite_file_free(f);
    f = NULL;

    static const char bad[] = SUITE_HEAD "      name: n\n"
                                         "      expect: {allowed: !!str true, rule: !foo x}\n";
    CHECK_INT(gpa_suite_file_parse(&f, bad, strlen(bad), "s.yaml", NULL, NULL, &e), GPA_EPARSE);
    CHECK_STR(e.message, "s.yaml:9:25: expect.allowed must be true or false\n"
                         "s.yaml:9:43: YAML tag !foo is not supported here");
    CHECK(f == NULL);
}

int main(void)
{
    gpa_ystream *s = parse(DOC);
    CHECK(s != NULL);
    if (!s) return check_done();
    const gpa_ynode *d = s->docs[0];
    test_rule(d);
    test_getters(d);
    test_lists();
    test_collector();
    test_oom(d);
    test_suite_rule();
    gpa_ystream_free(s);
    return check_done();
}
