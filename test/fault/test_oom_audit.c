/*
 * test_oom_audit.c - `gpu-admission audit`'s PolicyReport writer (policyreport.h) with every
 * allocation failing in turn (fault.h): a dump of GPU pods (placed, denied, CPU-only, a
 * Deployment with a GPU template and a Service, in four namespaces, one of them invalid)
 * audited under the golden cluster policy, then its reports and summary printed. Each run
 * must give the clean run's bytes, or GPA_ENOMEM / NULL with nothing left allocated: never a
 * report missing a result, a field or a count.
 *
 * The dump holds no pod an earlier policy mutated: their rebuilding (impact.c's reconstruct)
 * treats a failed probe as "cannot be rebuilt" and judges the pod as stored, which is a
 * different answer rather than an error; that is impact's contract, not the writer's.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fault.h"
#include "gpu_admission/policy.h"
#include "gpu_admission/policyreport.h"

#define CLUSTER GPA_SOURCE_DIR "/test/golden/policies/cluster"

static const char *const OBJECTS[] = {
    /* placed into a MIG pool */
    "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"small\",\"namespace\":"
    "\"inference-a\",\"uid\":\"u-1\",\"annotations\":{\"gpu-admission.io/gpu-memory\":\"8Gi\"}},"
    "\"spec\":{\"containers\":[{\"name\":\"c\",\"image\":\"i\",\"resources\":{\"limits\":{"
    "\"nvidia.com/gpu\":\"1\"}}}]}}",
    /* refused by a deny rule */
    "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"no\",\"namespace\":"
    "\"blocked-x\"},\"spec\":{\"containers\":[{\"name\":\"c\",\"image\":\"i\",\"resources\":{"
    "\"limits\":{\"nvidia.com/gpu\":\"1\"}}}]}}",
    /* CPU only: no result */
    "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"web\",\"namespace\":"
    "\"inference-a\"},\"spec\":{\"containers\":[{\"name\":\"c\",\"image\":\"i\"}]}}",
    /* a workload: its template judged */
    "{\"apiVersion\":\"apps/v1\",\"kind\":\"Deployment\",\"metadata\":{\"name\":\"nb\","
    "\"namespace\":\"notebooks\"},\"spec\":{\"template\":{\"metadata\":{\"labels\":{\"a\":\"b\"}},"
    "\"spec\":{\"containers\":[{\"name\":\"c\",\"image\":\"i\",\"resources\":{\"limits\":{"
    "\"nvidia.com/gpu\":\"1\"}}}]}}}}",
    /* not judged */
    "{\"apiVersion\":\"v1\",\"kind\":\"Service\",\"metadata\":{\"name\":\"s\",\"namespace\":"
    "\"default\"},\"spec\":{}}",
    /* a namespace no report can live in: an error in the summary only */
    "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"x\",\"namespace\":"
    "\"Bad_NS\"},\"spec\":{\"containers\":[{\"name\":\"c\",\"image\":\"i\",\"resources\":{"
    "\"limits\":{\"nvidia.com/gpu\":\"1\"}}}]}}",
};
#define N_OBJECTS (sizeof OBJECTS / sizeof OBJECTS[0])

typedef struct audit_case {
    const gpa_policy *p;
    cJSON *objs[N_OBJECTS];
    size_t max_results;
    char *out; /* reports then summary, as printed */
    char *clean;
    gpa_error err;
} audit_case;

static int run_audit(void *ctx)
{
    audit_case *c = ctx;
    c->err = (gpa_error){0};
    free(c->out);
    c->out = NULL;
    gpa_audit *a = NULL;
    int rc = gpa_audit_new(&a, c->p, c->max_results, &c->err);
    for (size_t i = 0; rc == GPA_OK && i < N_OBJECTS; i++)
        rc = gpa_audit_object(a, c->objs[i], "dump.json:1", &c->err);
    if (rc == GPA_OK) {
        cJSON *r = gpa_audit_reports(a), *s = gpa_audit_summary(a);
        char *rt = r ? cJSON_PrintUnformatted(r) : NULL;
        char *st = s ? cJSON_PrintUnformatted(s) : NULL;
        if (rt && st) {
            fault_hold(true); /* the test's own concatenation */
            size_t n = strlen(rt) + strlen(st) + 2;
            c->out = malloc(n);
            if (c->out) snprintf(c->out, n, "%s\n%s", rt, st);
            fault_hold(false);
        } else {
            rc = GPA_ENOMEM;
        }
        cJSON_free(rt);
        cJSON_free(st);
        cJSON_Delete(r);
        cJSON_Delete(s);
    }
    gpa_audit_free(a);
    return rc;
}

static const char *check_audit(void *ctx, int rc, int clean_rc, bool fired)
{
    audit_case *c = ctx;
    (void)clean_rc;
    (void)fired;
    if (!c->clean) {
        if (rc != GPA_OK || !c->out) return "the clean run failed";
        if (!strstr(c->out, "\"result\":\"fail\"") || !strstr(c->out, "\"result\":\"pass\"") ||
            !strstr(c->out, "Bad_NS"))
            return "the clean run lacks a pass, a fail or the invalid namespace";
        c->clean = c->out;
        c->out = NULL;
        return NULL;
    }
    if (rc == GPA_ENOMEM) return c->out ? "GPA_ENOMEM with an output" : NULL;
    if (rc != GPA_OK) return "neither the clean answer nor GPA_ENOMEM";
    if (!c->out || strcmp(c->out, c->clean) != 0) return "GPA_OK with another report";
    return NULL;
}

int main(void)
{
    fault_init();
    gpa_policy *p = NULL;
    gpa_error err = {0};
    if (gpa_policy_load_dir(&p, CLUSTER, &err) != GPA_OK) {
        printf("FAIL cannot load %s: %s\n", CLUSTER, err.message);
        return 1;
    }
    audit_case cases[2] = {{.p = p, .max_results = 500}, {.p = p, .max_results = 1}};
    static const char *const names[] = {"audit/reports", "audit/reports split one per object"};
    int failed = 0;
    for (size_t k = 0; k < 2; k++) {
        for (size_t i = 0; i < N_OBJECTS; i++)
            if (!(cases[k].objs[i] = cJSON_Parse(OBJECTS[i]))) {
                printf("FAIL object %zu does not parse\n", i);
                return 1;
            }
        fault_case fc = {names[k], run_audit, check_audit, &cases[k]};
        failed += fault_run_case(&fc);
        for (size_t i = 0; i < N_OBJECTS; i++)
            cJSON_Delete(cases[k].objs[i]);
        free(cases[k].out);
        free(cases[k].clean);
    }
    gpa_policy_unref(p);
    printf("%s\n", failed ? "FAILED" : "all runs ended cleanly");
    return failed ? 1 : 0;
}
