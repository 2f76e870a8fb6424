/*
 * test_suite.c - the core of `gpu-admission test` without the CLI: suite reading through the
 * file callback (positions of errors, files that are not suites), subset/exact/resources
 * semantics on hand-made decisions, the unified diff's exact text, and a recorded expectation
 * read back as a suite that passes.
 */
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "gpu_admission/policy.h"
#include "gpu_admission/suite.h"
#include "gpu_admission/textdiff.h"
#include "gpu_admission/yamljson.h"

static const char *POD = "apiVersion: v1\nkind: Pod\nmetadata:\n  name: small\n  namespace: "
                         "inference-a\n  labels: {app.kubernetes.io/component: inference}\n"
                         "  annotations: {gpu-admission.io/gpu-memory: 8Gi}\nspec:\n  containers:\n"
                         "  - name: main\n    image: vllm:1\n    resources:\n      limits: "
                         "{nvidia.com/gpu: 1, cpu: 2}\n";

/* The file callback: "pods/small.yaml" exists, everything else does not. */
static int read_cb(char **buf, size_t *len, void *ctx, const char *path, gpa_error *err)
{
    (void)ctx;
    size_t n = strlen(path);
    if (n >= 15 && strcmp(path + n - 15, "pods/small.yaml") == 0) {
        *buf = strdup(POD);
        *len = strlen(POD);
        return *buf ? GPA_OK : GPA_ENOMEM;
    }
    return gpa_fail(err, GPA_EIO, "No such file or directory");
}

static gpa_suite_file *parse(const char *text, int want_rc, gpa_error *e)
{
    gpa_suite_file *f = NULL;
    memset(e, 0, sizeof *e);
    CHECK_INT(gpa_suite_file_parse(&f, text, strlen(text), "dir/s.yaml", read_cb, NULL, e),
              want_rc);
    return f;
}

#define HEAD                                                                                       \
    "apiVersion: gpu-admission.io/v1alpha1\nkind: GPUPolicyTest\nmetadata: {name: t}\nspec:\n"     \
    "  policies: ../policies\n  cases:\n"

/* Runs the only case of a one-case suite; returns the failure keys joined by ','. */
static void run_one(char *keys, size_t cap, const gpa_policy *p, const char *cases)
{
    char text[8192];
    snprintf(text, sizeof text, "%s%s", HEAD, cases);
    gpa_error e;
    gpa_suite_file *f = parse(text, GPA_OK, &e);
    keys[0] = '\0';
    if (!f) {
        snprintf(keys, cap, "PARSE: %.400s", e.message);
        return;
    }
    gpa_case_result r;
    CHECK_INT(gpa_suite_case_run(&r, p, f, 0, 0, &e), GPA_OK);
    size_t n = 0;
    for (size_t i = 0; i < r.n_failures && n < cap; i++)
        n += (size_t)snprintf(keys + n, cap - n, "%s%s", i ? "," : "", r.failures[i].key);
    CHECK(r.passed == (r.n_failures == 0));
    gpa_case_result_clear(&r);
    gpa_suite_file_free(f);
}

int main(void)
{
    gpa_error e;

    /* not a suite: no error, nothing returned; a broken file that says GPUPolicyTest is one */
    gpa_suite_file *f = parse("apiVersion: v1\nkind: ConfigMap\n", GPA_OK, &e);
    CHECK(f == NULL);
    f = parse("kind: ConfigMap\nx: [\n", GPA_OK, &e);
    CHECK(f == NULL);
    f = parse("kind: GPUPolicyTest\nx: [\n", GPA_EPARSE, &e);
    CHECK_CONTAINS(e.message, "dir/s.yaml:3:1: ");

    /* every error at once, each with its position; policies resolved against the file */
    f = parse(HEAD "    - name: a\n      object: pods/small.yaml\n      expect: {alowed: true}\n"
                   "    - name: a\n      object: pods/none.yaml\n      webhook: sideways\n"
                   "      expect: {allowed: maybe}\n",
              GPA_EPARSE, &e);
    CHECK(f == NULL);
    CHECK_CONTAINS(e.message, "dir/s.yaml:9:16: unknown key \"alowed\" in expect");
    CHECK_CONTAINS(e.message, "dir/s.yaml:9:15: expect names no expectation");
    CHECK_CONTAINS(e.message, "dir/s.yaml:11:15: object: cannot read dir/pods/none.yaml");
    CHECK_CONTAINS(e.message, "dir/s.yaml:12:16: webhook must be mutate, validate or both");
    CHECK_CONTAINS(e.message, "dir/s.yaml:13:25: expect.allowed must be true or false");
    CHECK_CONTAINS(e.message, "dir/s.yaml:10:7: duplicate case name \"a\" (first at line 7)");
    f = parse(HEAD "    - name: ok\n      object: pods/small.yaml\n      expect: {allowed: true}\n",
              GPA_OK, &e);
    CHECK_STR(gpa_suite_policies(f, 0), "dir/../policies");
    CHECK_STR(gpa_suite_case_name(f, 0, 0), "ok");
    CHECK_INT(gpa_suite_case_line(f, 0, 0), 7);
    gpa_suite_file_free(f);
    /* objectExact without object; noWarnings true with warnings; empty cases */
    f = parse(HEAD "    - {name: x, object: pods/small.yaml, expect: {objectExact: true}}\n"
                   "    - {name: y, object: pods/small.yaml, expect: {noWarnings: true, "
                   "warnings: [a]}}\n",
              GPA_EPARSE, &e);
    CHECK_CONTAINS(e.message, "objectExact needs expect.object");
    CHECK_CONTAINS(e.message, "dir/s.yaml:7:50: expect names no expectation");
    CHECK_CONTAINS(e.message, "contradicts");
    f = parse("apiVersion: gpu-admission.io/v1alpha1\nkind: GPUPolicyTest\nspec: {policies: p, "
              "cases: []}\n",
              GPA_EPARSE, &e);
    CHECK_CONTAINS(e.message, "dir/s.yaml:3:28: spec.cases must be a non-empty list");

    /* judging against the shipped set */
    gpa_policy *p = NULL;
    CHECK_INT(gpa_policy_load_dir(&p, GPA_SOURCE_DIR "/policies", &e), GPA_OK);
    char keys[512];
    run_one(keys, sizeof keys, p,
            "    - name: c\n      object: pods/small.yaml\n      expect:\n"
            "        allowed: true\n        rule: inference-small\n        pool: a100-mig\n"
            "        reason: null\n        resources: {main: {nvidia.com/mig-1g.10gb: 1000m, "
            "nvidia.com/gpu: null}}\n        object: {spec: {containers: [{name: main}]}}\n");
    CHECK_STR(keys, "");
    /* a list shorter than the object's is not a subset (lists compare element by element) */
    run_one(keys, sizeof keys, p,
            "    - name: c\n      object: pods/small.yaml\n      expect:\n"
            "        object: {spec: {tolerations: []}}\n");
    CHECK_STR(keys, "object");
    /* the old resource name left behind fails resources even if the new one is listed */
    run_one(keys, sizeof keys, p,
            "    - name: c\n      object: pods/small.yaml\n      webhook: validate\n"
            "      expect:\n        resources: {main: {cpu: 2}}\n");
    CHECK_STR(keys, "resources");
    /* several wrong keys: all reported, in the order of the table */
    run_one(keys, sizeof keys, p,
            "    - name: c\n      object: pods/small.yaml\n      expect: {allowed: false, pool: "
            "null, noWarnings: true, message: x}\n");
    CHECK_STR(keys, "allowed,pool,message,noWarnings");
    /* a case the webhooks cannot answer fails with "error" */
    run_one(keys, sizeof keys, p,
            "    - name: c\n      object: {apiVersion: v1, kind: Pod, metadata: {name: x}, "
            "spec: nope}\n      expect: {allowed: true}\n");
    CHECK_STR(keys, "error");

    /* the diff text itself */
    char *d = gpa_text_diff("a\nb\nc\nd\ne\nf\ng\nh\ni\n", "a\nb\nc\nd\nE\nf\ng\nh\ni\n",
                            "expected", "actual");
    CHECK_STR(d, "--- expected\n+++ actual\n@@ -2,7 +2,7 @@\n b\n c\n d\n-e\n+E\n f\n g\n h\n");
    free(d);
    d = gpa_text_diff("x: 1\n", "", "expected", "actual");
    CHECK_STR(d, "--- expected\n+++ actual\n@@ -1,1 +0,0 @@\n-x: 1\n");
    free(d);
    CHECK(gpa_text_diff("same\n", "same\n", "a", "b") == NULL);

    /* a recorded expectation, written as YAML and read back, passes */
    gpa_judge_input in = {.hooks = GPA_JUDGE_BOTH, .want_object = true};
    cJSON *docs = NULL;
    CHECK_INT(gpa_yaml_to_json(&docs, POD, strlen(POD), &e), GPA_OK);
    in.object = docs ? docs->child : NULL;
    gpa_judgement j;
    CHECK_INT(gpa_judge(&j, p, &in, &e), GPA_OK);
    cJSON *ex = gpa_suite_record_expect(p, &j, j.object);
    char *y = ex ? gpa_json_to_yaml(ex) : NULL;
    CHECK_CONTAINS(y, "nvidia.com/mig-1g.10gb");
    CHECK_CONTAINS(y, "\"^nvidia\\\\.com/gpu rewritten to nvidia\\\\.com/mig-1g\\\\.10gb by rule "
                      "inference-small$\"");
    char cases[8192] = "    - name: rec\n      object: pods/small.yaml\n      expect:\n";
    for (const char *s = y; s && *s;) {
        const char *nl = strchr(s, '\n');
        size_t n = nl ? (size_t)(nl - s) : strlen(s);
        size_t at = strlen(cases);
        snprintf(cases + at, sizeof cases - at, "        %.*s\n", (int)n, s);
        s += n + (nl ? 1 : 0);
    }
    run_one(keys, sizeof keys, p, cases);
    CHECK_STR(keys, "");
    free(y);
    cJSON_Delete(ex);
    gpa_judgement_clear(&j);
    cJSON_Delete(docs);
    gpa_policy_unref(p);
    return check_done();
}
