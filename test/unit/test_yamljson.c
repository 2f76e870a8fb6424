/*
 * test_yamljson.c - YAML -> cJSON typing (kubectl's rules), multi-document streams, refusal
 * of anchors/aliases/duplicate keys with line:col, and lossless JSON -> YAML -> JSON round
 * trips, on real public fixtures (test/fixtures, see PROVENANCE.md) and crafted edge cases.
 */
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "gpu_admission/yamljson.h"

static char *slurp(const char *rel, size_t *len)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", GPA_FIXTURES_DIR, rel);
    FILE *f = fopen(path, "rb");
    if (!f) {
        fprintf(stderr, "cannot open %s\n", path);
        return NULL;
    }
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *buf = malloc((size_t)n + 1);
    size_t got = fread(buf, 1, (size_t)n, f);
    fclose(f);
    buf[got] = '\0';
    *len = got;
    return buf;
}

static cJSON *y2j(const char *s, gpa_error *e)
{
    cJSON *docs = NULL;
    if (gpa_yaml_to_json(&docs, s, strlen(s), e) != GPA_OK) return NULL;
    return docs;
}

/* Parses a one-document YAML and returns the value at key "v". */
static const cJSON *typed(cJSON **hold, const char *yaml)
{
    *hold = y2j(yaml, NULL);
    if (!*hold) return NULL;
    return cJSON_GetObjectItemCaseSensitive(cJSON_GetArrayItem(*hold, 0), "v");
}

static void roundtrip(const cJSON *v, int line)
{
    char *y = gpa_json_to_yaml(v);
    gpa_error e = {0};
    cJSON *back = y ? y2j(y, &e) : NULL;
    const cJSON *b0 = back ? cJSON_GetArrayItem(back, 0) : NULL;
    check_total++;
    /* a top-level null is an empty document: it comes back as no document at all */
    bool same = cJSON_IsNull(v) ? (back && cJSON_GetArraySize(back) == 0)
                                : (b0 && cJSON_Compare(v, b0, true));
    if (!same) {
        check_failed++;
        char *j = cJSON_PrintUnformatted(v);
        fprintf(stderr, "%s:%d: round trip failed for %s\n--- yaml ---\n%s--- err: %s\n", __FILE__,
                line, j, y ? y : "(null)", e.message);
        free(j);
    }
    cJSON_Delete(back);
    free(y);
}

int main(void)
{
    cJSON *h = NULL;
    const cJSON *v;
    gpa_error e = {0};

    /* --- plain scalar typing --- */
    static const char *const nulls[] = {"v:", "v: ~", "v: null", "v: Null", "v: NULL"};
    for (size_t i = 0; i < sizeof nulls / sizeof *nulls; i++) {
        v = typed(&h, nulls[i]);
        CHECK(cJSON_IsNull(v));
        cJSON_Delete(h);
    }
    static const char *const trues[] = {"v: true", "v: True", "v: TRUE"};
    for (size_t i = 0; i < 3; i++) {
        v = typed(&h, trues[i]);
        CHECK(cJSON_IsTrue(v));
        cJSON_Delete(h);
    }
    v = typed(&h, "v: FALSE");
    CHECK(cJSON_IsFalse(v));
    cJSON_Delete(h);
    static const struct {
        const char *y;
        double d;
    } nums[] = {{"v: 1", 1},           {"v: -3", -3},   {"v: +7", 7},
                {"v: 0", 0},           {"v: 1.5", 1.5}, {"v: 1e3", 1e3},
                {"v: -2.5E-1", -0.25}, {"v: .5", 0.5},  {"v: 10.", 10}};
    for (size_t i = 0; i < sizeof nums / sizeof *nums; i++) {
        v = typed(&h, nums[i].y);
        CHECK(cJSON_IsNumber(v) && v->valuedouble == nums[i].d);
        if (!cJSON_IsNumber(v)) fprintf(stderr, "  for %s\n", nums[i].y);
        cJSON_Delete(h);
    }
    static const struct {
        const char *y, *s;
    } strs[] = {{"v: 1Gi", "1Gi"},
                {"v: 08", "08"},
                {"v: yes", "yes"},
                {"v: no", "no"},
                {"v: on", "on"},
                {"v: 0x10", "0x10"},
                {"v: .inf", ".inf"},
                {"v: 1.2.3", "1.2.3"},
                {"v: \"1\"", "1"},
                {"v: 'true'", "true"},
                {"v: \"\"", ""},
                {"v: !!str 12", "12"},
                {"v: |\n  a\n  b\n", "a\nb\n"},
                {"v: 1e", "1e"},
                {"v: 500m", "500m"},
                {"v: 2020-01-01", "2020-01-01"}};
    for (size_t i = 0; i < sizeof strs / sizeof *strs; i++) {
        v = typed(&h, strs[i].y);
        CHECK(cJSON_IsString(v) && strcmp(v->valuestring, strs[i].s) == 0);
        if (!cJSON_IsString(v)) fprintf(stderr, "  for %s\n", strs[i].y);
        cJSON_Delete(h);
    }
    /* keys are always strings */
    h = y2j("1: a\ntrue: b\nnull: c\n", &e);
    CHECK(h != NULL);
    cJSON *d0 = cJSON_GetArrayItem(h, 0);
    CHECK_STR(cJSON_GetObjectItemCaseSensitive(d0, "1")->valuestring, "a");
    CHECK_STR(cJSON_GetObjectItemCaseSensitive(d0, "true")->valuestring, "b");
    CHECK_STR(cJSON_GetObjectItemCaseSensitive(d0, "null")->valuestring, "c");
    cJSON_Delete(h);

    /* --- streams --- */
    h = y2j("---\na: 1\n---\n---\n# only a comment\n---\nb: [1, x]\n...\n", &e);
    CHECK(h && cJSON_GetArraySize(h) == 2);
    cJSON_Delete(h);
    h = y2j("", &e);
    CHECK(h && cJSON_GetArraySize(h) == 0);
    cJSON_Delete(h);

    /* --- refusals, with line:col --- */
    CHECK(y2j("a: &x [1]\nb: *x\n", &e) == NULL);
    CHECK_CONTAINS(e.message, "1:4: YAML anchors");
    CHECK_INT(e.code, GPA_EPARSE);
    CHECK(y2j("a:\n  b: *x\n", &e) == NULL);
    CHECK_CONTAINS(e.message, "2:6: YAML aliases");
    CHECK(y2j("a: 1\nb: 2\na: 3\n", &e) == NULL);
    CHECK_CONTAINS(e.message, "3:1: duplicate key \"a\" (first at 1:1)");
    CHECK(y2j("a: [1, 2\n", &e) == NULL);
    CHECK_INT(e.code, GPA_EPARSE);
    CHECK_CONTAINS(e.message, "YAML syntax error");
    CHECK(y2j("a: b: c\n", &e) == NULL);
    CHECK_CONTAINS(e.message, "1:5: YAML syntax error");
    CHECK(y2j("? [a]\n: 1\n", &e) == NULL);
    CHECK_CONTAINS(e.message, "1:3: mapping keys must be plain strings");
    CHECK(y2j("v: !foo bar\n", &e) == NULL);
    CHECK_CONTAINS(e.message, "unsupported tag");
    CHECK(y2j("v: !!int x\n", &e) == NULL);
    CHECK(y2j("v: 1e400\n", &e) == NULL);
    CHECK_INT(e.code, GPA_ERANGE);
    /* nesting depth is bounded */
    char deep[400];
    memset(deep, '[', 200);
    memset(deep + 200, ']', 200);
    cJSON *dd = NULL;
    CHECK_INT(gpa_yaml_to_json(&dd, deep, sizeof deep, &e), GPA_EPARSE);
    CHECK_CONTAINS(e.message, "too deep");
    /* billion laughs never expands */
    CHECK(y2j("a: &a [\"lol\",\"lol\"]\nb: &b [*a,*a,*a]\nc: [*b,*b,*b]\n", &e) == NULL);

    /* --- looks_like_json --- */
    CHECK(gpa_looks_like_json("  \n{\"a\":1}", 10));
    CHECK(gpa_looks_like_json("\xEF\xBB\xBF[1]", 6));
    CHECK(!gpa_looks_like_json("apiVersion: v1", 14));
    CHECK(!gpa_looks_like_json("   ", 3));

    /* --- real fixtures --- */
    size_t len;
    char *buf = slurp("nvidia-gpu-operator/tests_gpu-pod.yaml", &len);
    cJSON *docs = NULL;
    CHECK_INT(gpa_yaml_to_json(&docs, buf, len, &e), GPA_OK);
    cJSON *pod = cJSON_GetArrayItem(docs, 0);
    const cJSON *lim = cJSON_GetObjectItemCaseSensitive(
        cJSON_GetObjectItemCaseSensitive(
            cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(
                                   cJSON_GetObjectItemCaseSensitive(pod, "spec"), "containers"),
                               0),
            "resources"),
        "limits");
    const cJSON *gpu = cJSON_GetObjectItemCaseSensitive(lim, "nvidia.com/gpu");
    CHECK(cJSON_IsNumber(gpu) && gpu->valuedouble == 1);
    const cJSON *img = cJSON_GetObjectItemCaseSensitive(
        cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(
                               cJSON_GetObjectItemCaseSensitive(pod, "spec"), "containers"),
                           0),
        "image");
    CHECK_STR(cJSON_GetStringValue(img),
              "nvcr.io/nvidia/k8s/cuda-sample:vectoradd-cuda12.5.0-ubuntu22.04");
    roundtrip(pod, __LINE__);
    cJSON_Delete(docs);
    free(buf);

    buf = slurp("nvidia-k8s-device-plugin/testdata_job-1.yaml", &len);
    CHECK_INT(gpa_yaml_to_json(&docs, buf, len, &e), GPA_OK);
    cJSON *job = cJSON_GetArrayItem(docs, 0);
    cJSON *tmpl =
        cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(job, "spec"), "template");
    cJSON *c0 =
        cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(
                               cJSON_GetObjectItemCaseSensitive(tmpl, "spec"), "containers"),
                           0);
    gpu = cJSON_GetObjectItemCaseSensitive(
        cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(c0, "resources"),
                                         "limits"),
        "nvidia.com/gpu");
    CHECK(cJSON_IsString(gpu) && strcmp(gpu->valuestring, "1") == 0); /* quoted "1" stays string */
    CHECK_STR(cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(c0, "args"), 1)->valuestring,
              "--numbodies=10000");
    roundtrip(job, __LINE__);
    cJSON_Delete(docs);
    free(buf);

    buf = slurp("nvidia-cloud-native-docs/tf-notebook.yaml", &len);
    CHECK_INT(gpa_yaml_to_json(&docs, buf, len, &e), GPA_OK);
    CHECK_INT(cJSON_GetArraySize(docs), 2);
    CHECK_STR(cJSON_GetObjectItemCaseSensitive(cJSON_GetArrayItem(docs, 0), "kind")->valuestring,
              "Service");
    CHECK_STR(cJSON_GetObjectItemCaseSensitive(cJSON_GetArrayItem(docs, 1), "kind")->valuestring,
              "Pod");
    roundtrip(docs, __LINE__);
    cJSON_Delete(docs);
    free(buf);

    /* a ConfigMap whose data holds another YAML document in a block scalar */
    buf = slurp("nvidia-gpu-operator/assets_state-mig-manager_0400_configmap.yaml", &len);
    CHECK_INT(gpa_yaml_to_json(&docs, buf, len, &e), GPA_OK);
    cJSON *cm = cJSON_GetArrayItem(docs, 0);
    const char *inner = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(
        cJSON_GetObjectItemCaseSensitive(cm, "data"), "config.yaml"));
    CHECK(inner && strstr(inner, "mig-configs:"));
    cJSON *idocs = inner ? y2j(inner, &e) : NULL;
    CHECK(idocs != NULL);
    cJSON *cfgs = cJSON_GetObjectItemCaseSensitive(cJSON_GetArrayItem(idocs, 0), "mig-configs");
    cJSON *a1 = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(cfgs, "all-1g.5gb"), 0);
    const cJSON *n7 = cJSON_GetObjectItemCaseSensitive(
        cJSON_GetObjectItemCaseSensitive(a1, "mig-devices"), "1g.5gb");
    CHECK(cJSON_IsNumber(n7) && n7->valueint == 7);
    CHECK(cJSON_IsFalse(cJSON_GetObjectItemCaseSensitive(
        cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(cfgs, "all-disabled"), 0),
        "mig-enabled")));
    roundtrip(cm, __LINE__);
    roundtrip(idocs, __LINE__);
    cJSON_Delete(idocs);
    cJSON_Delete(docs);
    free(buf);

    /* the Kubernetes round-trip Pod with every field: JSON -> YAML -> JSON is lossless */
    buf = slurp("k8s-api/HEAD/core.v1.Pod.json", &len);
    CHECK(gpa_looks_like_json(buf, len));
    cJSON *full = cJSON_ParseWithLength(buf, len);
    CHECK(full != NULL);
    roundtrip(full, __LINE__);
    /* and YAML of it parses back through the YAML path with the same types */
    char *fy = gpa_json_to_yaml(full);
    CHECK(fy && strstr(fy, "apiVersion: v1\n"));
    free(fy);
    cJSON_Delete(full);
    free(buf);

    /* --- writer edge cases --- */
    static const char *const tricky[] = {
        "{\"a\":\"true\",\"b\":\"1\",\"c\":\"\",\"d\":\"null\",\"e\":\"~\",\"f\":\"1.5\"}",
        "{\"g\":\"yes\",\"h\":\"- x\",\"i\":\"a: b\",\"j\":\"#c\",\"k\":\" lead\",\"l\":\"x\\ny\"}",
        "{\"m\":\"quote\\\"d\",\"n\":\"back\\\\slash\",\"o\":\"tab\\tx\",\"p\":\"\\u0001\"}",
        "{\"q\":[],\"r\":{},\"s\":[[1,[2]],{\"t\":[]}],\"u\":[{\"v\":1,\"w\":{\"x\":null}}]}",
        "{\"true\":1,\"1\":2,\"a b\":3,\"k:v\":4,\"\":5,\"é\":\"ü\"}",
        "{\"big\":1e20,\"neg\":-0.25,\"small\":1e-7,\"int\":123456789012}",
        "[1,\"2\",true,null,\"false\",[],{}]",
        "\"just a string\"",
        "42",
        "null",
        "{\"a\":\"*alias\",\"b\":\"&anchor\",\"c\":\"!tag\",\"d\":\"%x\",\"e\":\"@x\",\"f\":\"`"
        "x\"}",
        "{\"g\":\"[x]\",\"h\":\"{x}\",\"i\":\"x,y\",\"j\":\"...\",\"k\":\"---\",\"l\":\"|\",\"m\":"
        "\">\"}",
        "{\"n\":\"0o17\",\"o\":\"0x1F\",\"p\":\".5\",\"q\":\"+1\",\"r\":\"-1\",\"s\":\"1e3\"}"};
    for (size_t i = 0; i < sizeof tricky / sizeof *tricky; i++) {
        cJSON *t = cJSON_Parse(tricky[i]);
        CHECK(t != NULL);
        if (t) roundtrip(t, __LINE__);
        cJSON_Delete(t);
    }
    /* characters YAML treats as line breaks or refuses (NEL, LS, PS, C1, BOM) */
    cJSON *u = cJSON_Parse("{\"a\":\"x\\u0085y\\u2028z\\u2029w\\u0080v\\ufeffq\\uffffé\"}");
    CHECK(u != NULL);
    roundtrip(u, __LINE__);
    cJSON_Delete(u);
    /* keys longer than YAML's 1024-character implicit-key limit, with every value shape */
    char longkey[1500];
    memset(longkey, 'k', sizeof longkey - 1);
    longkey[sizeof longkey - 1] = '\0';
    cJSON *lk = cJSON_CreateObject();
    cJSON_AddStringToObject(lk, longkey, "v");
    longkey[0] = 'a';
    cJSON_AddItemToObject(lk, longkey, cJSON_Parse("[1, {\"x\": [2]}, []]"));
    longkey[0] = 'b';
    cJSON_AddItemToObject(lk, longkey, cJSON_Parse("{\"n\": {\"m\": 1}}"));
    longkey[0] = 'c';
    cJSON_AddItemToObject(lk, longkey, cJSON_CreateObject());
    cJSON *lka = cJSON_CreateArray();
    cJSON_AddItemToArray(lka, lk);
    roundtrip(lka, __LINE__);
    roundtrip(lk, __LINE__);
    cJSON_Delete(lka);
    /* the writer's shape: block style, strings that would re-type are quoted */
    cJSON *o = cJSON_Parse("{\"a\":{\"b\":[\"x\",{\"c\":\"1\",\"d\":2}]},\"e\":\"8Gi\"}");
    char *y = gpa_json_to_yaml(o);
    CHECK_STR(y, "a:\n  b:\n  - x\n  - c: \"1\"\n    d: 2\ne: 8Gi\n");
    free(y);
    cJSON_Delete(o);
    return check_done();
}
