/*
 * suite.h - policy test suites (kind: GPUPolicyTest, docs/policy-tests.md): reading a suite
 * file with file:line:col errors, judging one case exactly as the server would (judge.h) and
 * checking its expectations, recording today's decisions as expectations.
 *
 * Pure: the files a suite names (objects) are read through the caller's callback; the policy
 * directory is only resolved here, the caller loads it.
 */
#ifndef GPA_SUITE_H
#define GPA_SUITE_H

#include <cjson/cJSON.h>
#include "common.h"
#include "judge.h"
#include "policy.h"

#define GPA_SUITE_API_VERSION "gpu-admission.io/v1alpha1"
#define GPA_SUITE_KIND        "GPUPolicyTest"

/* Reads the file at path (already resolved against the suite's directory) into a malloc'd,
 * NUL-terminated buffer. Returns GPA_OK, or an error with the reason in err. */
typedef int (*gpa_suite_read_fn)(char **buf, size_t *len, void *ctx, const char *path,
                                 gpa_error *err);

typedef struct gpa_suite_file gpa_suite_file; /* every suite document of one file */

/* Parses one file. GPA_OK with *out NULL when the file holds no GPUPolicyTest document (not
 * a suite: callers ignore it). GPA_EPARSE with one "path:line:col: message" per line in err
 * for a suite that does not parse or is invalid (unknown keys, wrong types, duplicate case
 * names, a case without expectations, an object file that does not hold exactly one object);
 * a file that is not YAML but says "kind: GPUPolicyTest" counts as a broken suite. */
int gpa_suite_file_parse(gpa_suite_file **out, const char *buf, size_t len, const char *path,
                         gpa_suite_read_fn read, void *ctx, gpa_error *err);
void gpa_suite_file_free(gpa_suite_file *f);

size_t gpa_suite_count(const gpa_suite_file *f);
const char *gpa_suite_name(const gpa_suite_file *f, size_t s);
const char *gpa_suite_path(const gpa_suite_file *f, size_t s); /* the file */
int gpa_suite_line(const gpa_suite_file *f, size_t s);
const char *gpa_suite_policies(const gpa_suite_file *f, size_t s); /* resolved directory */
size_t gpa_suite_case_count(const gpa_suite_file *f, size_t s);
const char *gpa_suite_case_name(const gpa_suite_file *f, size_t s, size_t c);
int gpa_suite_case_line(const gpa_suite_file *f, size_t s, size_t c);
bool gpa_suite_case_skip(const gpa_suite_file *f, size_t s, size_t c);

/* One unmet expectation: key ("allowed", "rule", ..., "error" when the case could not be
 * judged), what was expected and what happened (one line each), and for object/resources a
 * unified diff (NULL otherwise). */
typedef struct gpa_case_failure {
    char *key;
    char *expected;
    char *actual;
    char *diff;
} gpa_case_failure;

typedef struct gpa_case_result {
    bool passed;
    gpa_judgement decision; /* what the webhooks decided (empty when the case errored) */
    gpa_case_failure *failures;
    size_t n_failures;
} gpa_case_result;

/* Judges case c of suite s under p (the suite's policy set, loaded by the caller) and checks
 * every expectation. A case the webhooks cannot answer (the server's 400) fails with key
 * "error". Returns GPA_OK (passed or not) or GPA_ENOMEM. */
int gpa_suite_case_run(gpa_case_result *out, const gpa_policy *p, const gpa_suite_file *f, size_t s,
                       size_t c, gpa_error *err);
void gpa_case_result_clear(gpa_case_result *r);

/* The expectations a recorded case gets from a decision: allowed, rule, pool, reason (when
 * set), resources (each container's extended resources: names with a '/'), warnings (each
 * as an anchored, escaped regular expression) or noWarnings: true. object is the judged
 * object after mutation (for resources; may be NULL). NULL when memory runs out. */
cJSON *gpa_suite_record_expect(const gpa_policy *p, const gpa_judgement *j, const cJSON *object);

#endif
