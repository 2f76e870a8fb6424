/*
 * test_report.c - the `gpu-admission test` reports (src/tools/report.c) on hand-made runs:
 * the exact text lines (failures with diffs, --verbose decisions, the summary), the JSON
 * document's shape and counts, and JUnit XML whose every text is escaped (XML specials,
 * control characters and invalid UTF-8 become U+FFFD) so a CI's parser never refuses it.
 */
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "check.h"
#include "gpu_admission/report.h"

static int no_files(char **buf, size_t *len, void *ctx, const char *path, gpa_error *err)
{
    (void)buf, (void)len, (void)ctx, (void)path;
    return gpa_fail(err, GPA_EIO, "no files here");
}

static const char *SUITE =
    "apiVersion: gpu-admission.io/v1alpha1\nkind: GPUPolicyTest\nmetadata: {name: \"s<&>\"}\n"
    "spec:\n  policies: ../policies\n  cases:\n"
    "  - name: ok\n    object: {apiVersion: v1, kind: Pod, metadata: {name: a}}\n"
    "    expect: {allowed: true}\n";

int main(void)
{
    gpa_suite_file *f = NULL;
    gpa_error e = {0};
    CHECK_INT(gpa_suite_file_parse(&f, SUITE, strlen(SUITE), "dir/s.yaml", no_files, NULL, &e),
              GPA_OK);
    if (!f) {
        fprintf(stderr, "suite does not parse: %s\n", e.message);
        return 1;
    }
    char *warn[] = {"w1"};
    gpa_case_failure fl[] = {{.key = "rule",
                              .expected = "a\"b'",
                              .actual = "x\x01y\xff\xc3\xa9",
                              .diff = "--- expected\n+++ actual\n-a\n+b\n"},
                             {.key = "pool", .expected = "p", .actual = "(none)"}};
    gpa_report_case cases[] = {
        {.name = "pass",
         .line = 7,
         .status = GPA_REPORT_PASS,
         .r = {.passed = true,
               .decision = {.judged = true,
                            .allowed = true,
                            .rule = "r1",
                            .pool = "p1",
                            .warnings = warn,
                            .n_warnings = 1}}},
        {.name = "fail<1>",
         .line = 9,
         .status = GPA_REPORT_FAIL,
         .r = {.decision = {.judged = true, .message = "no"}, .failures = fl, .n_failures = 2}},
        {.name = "skip", .line = 11, .status = GPA_REPORT_SKIP},
    };
    gpa_report_suite run = {
        .f = f, .idx = 0, .cases = cases, .n = 3, .passed = 1, .failed = 1, .skipped = 1};

    gpa_sb b = {0};
    gpa_report_text(&b, &run, 1, false);
    char *t = gpa_sb_done(&b);
    CHECK_STR(t, "PASS  s<&>/pass\n"
                 "FAIL  s<&>/fail<1>\n"
                 "      dir/s.yaml:9\n"
                 "      rule: expected a\"b', got x\x01y\xff\xc3\xa9\n"
                 "        --- expected\n        +++ actual\n        -a\n        +b\n"
                 "      pool: expected p, got (none)\n"
                 "SKIP  s<&>/skip\n"
                 "1 passed, 1 failed, 1 skipped\n");
    free(t);
    gpa_report_text(&b, &run, 1, true);
    t = gpa_sb_done(&b);
    CHECK(t && strstr(t, "PASS  s<&>/pass\n        decision: allowed, rule r1, pool p1\n"
                         "        warning: w1\nFAIL"));
    CHECK(t && strstr(t, "        decision: denied, rule (none), pool (none)\n"
                         "        message: no\nSKIP"));
    free(t);

    CHECK(gpa_report_json(&b, &run, 1));
    t = gpa_sb_done(&b);
    size_t n = t ? strlen(t) : 0;
    CHECK(n > 0 && t[n - 1] == '\n');
    cJSON *j = t ? cJSON_Parse(t) : NULL;
    const cJSON *s0 = cJSON_GetArrayItem(cJSON_GetObjectItem(j, "suites"), 0);
    const cJSON *cs = cJSON_GetObjectItem(s0, "cases");
    CHECK_STR(cJSON_GetStringValue(cJSON_GetObjectItem(s0, "file")), "dir/s.yaml");
    CHECK_INT(cJSON_GetArraySize(cs), 3);
    CHECK_STR(cJSON_GetStringValue(cJSON_GetObjectItem(cJSON_GetArrayItem(cs, 1), "status")),
              "fail");
    CHECK_INT(cJSON_GetArraySize(cJSON_GetObjectItem(cJSON_GetArrayItem(cs, 1), "failures")), 2);
    /* a skipped case carries no decision and no failures */
    CHECK(!cJSON_GetObjectItem(cJSON_GetArrayItem(cs, 2), "decision"));
    CHECK(cJSON_IsNull(
        cJSON_GetObjectItem(cJSON_GetObjectItem(cJSON_GetArrayItem(cs, 0), "decision"), "reason")));
    CHECK_INT(
        cJSON_GetNumberValue(cJSON_GetObjectItem(cJSON_GetObjectItem(j, "summary"), "failed")), 1);
    cJSON_Delete(j);
    free(t);

    gpa_report_junit(&b, &run, 1);
    t = gpa_sb_done(&b);
    CHECK(t && strncmp(t,
                       "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
                       "<testsuites name=\"gpu-admission test\" tests=\"3\" failures=\"1\" "
                       "errors=\"0\" skipped=\"1\">\n"
                       "  <testsuite name=\"s&lt;&amp;&gt;\" file=\"dir/s.yaml\" tests=\"3\" "
                       "failures=\"1\" errors=\"0\" skipped=\"1\">\n"
                       "    <testcase name=\"pass\" classname=\"s&lt;&amp;&gt;\" "
                       "file=\"dir/s.yaml\" line=\"7\"/>\n",
                       strlen("<?xml")) == 0);
    CHECK(t && strstr(t, "    <testcase name=\"pass\" classname=\"s&lt;&amp;&gt;\" "
                         "file=\"dir/s.yaml\" line=\"7\"/>\n"));
    /* the control byte and the lone 0xFF become U+FFFD, the valid e-acute stays */
    CHECK(t && strstr(t, "<failure message=\"rule: expected a&quot;b&apos;, got "
                         "x\xEF\xBF\xBDy\xEF\xBF\xBD\xc3\xa9\" type=\"expectation\">"));
    CHECK(t && strstr(t, "pool: expected p, got (none)\n</failure>\n    </testcase>\n"));
    CHECK(t && strstr(t, "<testcase name=\"skip\" classname=\"s&lt;&amp;&gt;\" "
                         "file=\"dir/s.yaml\" line=\"11\">\n      <skipped/>\n    </testcase>\n"));
    CHECK(t && n > 0 && strstr(t, "  </testsuite>\n</testsuites>\n") &&
          strcmp(t + strlen(t) - 14, "</testsuites>\n") == 0);
    free(t);

    gpa_suite_file_free(f);
    return check_done();
}
