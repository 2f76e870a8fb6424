/*
 * golden_workloads.c - golden cases for workload objects (test/golden/workloads/NAME/case.yaml):
 * a real manifest (test/fixtures) wrapped in the AdmissionReview the API server would send,
 * through the validating webhook's codec (gpa_review_handle), the answer compared with the
 * case's expectations. Also prints the docs/policy-examples.md section for the cases with a
 * doc: title (gen_docs.sh appends it). Test code only.
 *
 * case.yaml:
 *   description: why the answer is right            (required; used by the docs)
 *   doc: "Workloads 1: ..."                          (optional: becomes a docs example)
 *   object: ../../../fixtures/x.yaml | {inline}      (required) objectDocument: N (0-based)
 *   gpus: N          set limits nvidia.com/gpu: N on the first container of every template
 *                    (the upstream examples ask for CPUs only; the path walk is the product's)
 *   runs:            one or more requests against the object, each with:
 *     - policy: cluster | [files under POLICIES]
 *       namespace: NS                (default: the object's, else "default")
 *       operation: CREATE            (CREATE | UPDATE | DELETE)
 *       oldObjectMerge: {...}        UPDATE: oldObject = the object with this merge patch
 *       objectMerge: {...}           merge patch applied to the object itself
 *       objectPatch: [...]           RFC 6902 ops applied after it (reach into arrays, e.g.
 *                                    /spec/replicatedJobs/0/replicas, which a merge replaces)
 *       expect: {allowed, outcome, message (exact; absent = none), warnings (exact; absent = none)}
 *
 * Besides each expectation every run checks: no patch in the answer (workloads are never
 * patched), the mutating hook skips the object untouched, a dryRun request gets the same
 * bytes, and v1beta1 gets the same decision.
 */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "gpu_admission/patch.h"
#include "gpu_admission/policy.h"
#include "gpu_admission/review.h"
#include "gpu_admission/workload.h"
#include "gpu_admission/yamljson.h"
#include "golden_common.h"

static int failures;

/* The node at a concrete template path ("spec.workerGroupSpecs[0].template"). */
static cJSON *node_at(cJSON *o, const char *path)
{
    char buf[512];
    snprintf(buf, sizeof buf, "%s", path);
    for (char *s = buf; o && *s;) {
        if (*s == '[') {
            long i = strtol(s + 1, &s, 10);
            o = cJSON_GetArrayItem(o, (int)i);
            s += *s == ']';
            s += *s == '.';
            continue;
        }
        size_t n = strcspn(s, ".[");
        char c = s[n];
        s[n] = '\0';
        o = cJSON_GetObjectItemCaseSensitive(o, s);
        s += n;
        if (c == '.')
            s++;
        else if (c == '[')
            *s = '[';
    }
    return o;
}

/* gpus: N on the first container of each template. */
static void set_gpus(cJSON *obj, int gpus)
{
    gpa_workload_templates *t = NULL;
    gpa_error err = {0};
    if (gpa_workload_templates_read(&t, NULL, obj, NULL, &err) != GPA_OK) return;
    for (size_t i = 0; i < gpa_workload_templates_count(t); i++) {
        cJSON *tp = node_at(obj, gpa_workload_templates_get(t, i)->path);
        cJSON *c =
            cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(
                                   cJSON_GetObjectItemCaseSensitive(tp, "spec"), "containers"),
                               0);
        if (!c) continue;
        cJSON *res = cJSON_GetObjectItemCaseSensitive(c, "resources");
        if (!res) res = cJSON_AddObjectToObject(c, "resources");
        cJSON *lim = cJSON_GetObjectItemCaseSensitive(res, "limits");
        if (!lim) lim = cJSON_AddObjectToObject(res, "limits");
        cJSON_DeleteItemFromObjectCaseSensitive(lim, "nvidia.com/gpu");
        cJSON_AddNumberToObject(lim, "nvidia.com/gpu", gpus);
    }
    gpa_workload_templates_free(t);
}

typedef struct doc_out {
    FILE *f;
} doc_out;

static void doc_run(FILE *f, const char *ns, const char *op, const cJSON *policy, const answer *a)
{
    char *ps =
        cJSON_IsString(policy) ? strdup(policy->valuestring) : cJSON_PrintUnformatted(policy);
    fprintf(f, "%s in namespace `%s`, policy `%s`: **%s**%s\n\n", op, ns, ps,
            a->allowed ? "allowed" : "denied", a->patched ? " with a patch" : ", no patch");
    free(ps);
    if (a->message) fprintf(f, "```text\n%s\n```\n\n", a->message);
    if (a->warnings && a->warnings->child) {
        fprintf(f, "Warnings (what `kubectl apply` prints):\n\n```text\n");
        const cJSON *w;
        cJSON_ArrayForEach(w, a->warnings)
            fprintf(f, "%s\n", cJSON_GetStringValue(w));
        fprintf(f, "```\n\n");
    }
}

/* Runs one case; returns false when it failed. docs: print its docs section (cases with doc:). */
static bool run_case(const char *dir, const char *name, FILE *docs)
{
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s/%s/case.yaml", dir, name);
    cJSON *cs = yaml_docs(path);
    cJSON *spec = cJSON_GetArrayItem(cs, 0);
    bool bad = false;
    int run = 0;
    if (!cJSON_IsObject(spec) ||
        !cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(spec, "description"))) {
        RUN_FAIL("case.yaml unreadable or without a description");
        cJSON_Delete(cs);
        return false;
    }
    const cJSON *src = cJSON_GetObjectItemCaseSensitive(spec, "object");
    cJSON *obj = NULL;
    char objpath[PATH_MAX] = "";
    if (cJSON_IsObject(src)) {
        obj = cJSON_Duplicate(src, 1);
    } else if (cJSON_IsString(src)) {
        snprintf(objpath, sizeof objpath, "%s/%s/%s", dir, name, src->valuestring);
        cJSON *docsv = yaml_docs(objpath);
        const cJSON *dn = cJSON_GetObjectItemCaseSensitive(spec, "objectDocument");
        obj = cJSON_Duplicate(cJSON_GetArrayItem(docsv, cJSON_IsNumber(dn) ? dn->valueint : 0), 1);
        cJSON_Delete(docsv);
    }
    if (!obj) {
        RUN_FAIL("no object");
        cJSON_Delete(cs);
        return false;
    }
    const cJSON *gpus = cJSON_GetObjectItemCaseSensitive(spec, "gpus");
    if (cJSON_IsNumber(gpus)) set_gpus(obj, gpus->valueint);
    const char *title = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(spec, "doc"));
    if (docs && title) {
        const char *kind = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(obj, "kind"));
        fprintf(docs, "### %s\n\n%s\n\n", title,
                cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(spec, "description")));
        if (cJSON_IsString(src))
            fprintf(docs, "Golden case `test/golden/workloads/%s`: the %s in `%s`%s.\n\n", name,
                    kind ? kind : "object",
                    src->valuestring + (strncmp(src->valuestring, "../../../", 9) ? 0 : 9),
                    cJSON_IsNumber(gpus) ? ", each template's first container given "
                                           "`limits: {nvidia.com/gpu: N}`"
                                         : "");
        else
            fprintf(docs, "Golden case `test/golden/workloads/%s`.\n\n", name);
        char *y = gpa_json_to_yaml(obj);
        fprintf(docs, "```yaml\n%s```\n\n", y ? y : "");
        free(y);
    }
    const cJSON *runs = cJSON_GetObjectItemCaseSensitive(spec, "runs");
    if (!cJSON_IsArray(runs) || !runs->child) RUN_FAIL("no runs");
    const cJSON *r;
    cJSON_ArrayForEach(r, runs) {
        run++;
        char why[1200];
        gpa_policy *p = get_policy(cJSON_GetObjectItemCaseSensitive(r, "policy"), why, sizeof why);
        if (!p) {
            fprintf(stderr, "%s\n", why);
            RUN_FAIL("policy does not load");
            continue;
        }
        const char *op = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(r, "operation"));
        if (!op) op = "CREATE";
        const char *ns = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(r, "namespace"));
        const char *ons = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(
            cJSON_GetObjectItemCaseSensitive(obj, "metadata"), "namespace"));
        if (!ns) ns = ons ? ons : "default";
        cJSON *o = cJSON_Duplicate(obj, 1), *old = NULL;
        const cJSON *om = cJSON_GetObjectItemCaseSensitive(r, "oldObjectMerge");
        if (om) {
            old = cJSON_Duplicate(obj, 1);
            merge_patch(old, om);
        }
        const cJSON *m = cJSON_GetObjectItemCaseSensitive(r, "objectMerge");
        if (m) merge_patch(o, m);
        const cJSON *jp = cJSON_GetObjectItemCaseSensitive(r, "objectPatch");
        gpa_error perr = {0};
        if (jp && gpa_patch_apply(o, jp, &perr) != GPA_OK) {
            fprintf(stderr, "objectPatch: %s\n", perr.message);
            RUN_FAIL("objectPatch does not apply");
        }
        if (strcmp(op, "UPDATE") == 0 && !old) old = cJSON_Duplicate(obj, 1);
        char *body = review_body(o, old, op, ns, NULL, "admission.k8s.io/v1", false);
        char *dry = review_body(o, old, op, ns, NULL, "admission.k8s.io/v1", true);
        char *beta = review_body(o, old, op, ns, NULL, "admission.k8s.io/v1beta1", false);
        answer a = ask(p, GPA_HOOK_VALIDATE, body);
        answer d = ask(p, GPA_HOOK_VALIDATE, dry);
        answer b = ask(p, GPA_HOOK_VALIDATE, beta);
        answer mu = ask(p, GPA_HOOK_MUTATE, body);
        const cJSON *e = cJSON_GetObjectItemCaseSensitive(r, "expect");
        const cJSON *ea = cJSON_GetObjectItemCaseSensitive(e, "allowed");
        if (!cJSON_IsBool(ea))
            RUN_FAIL("expect.allowed is required");
        else if (cJSON_IsTrue(ea) != a.allowed)
            RUN_FAIL("allowed %d, expected %d (message: %s)", a.allowed, cJSON_IsTrue(ea),
                     a.message ? a.message : "none");
        const char *eo = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(e, "outcome"));
        if (eo && (!a.outcome || strcmp(eo, a.outcome) != 0))
            RUN_FAIL("outcome %s, expected %s", a.outcome ? a.outcome : "none", eo);
        const char *em = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(e, "message"));
        if ((em == NULL) != (a.message == NULL) || (em && strcmp(em, a.message) != 0))
            RUN_FAIL("message\n  got:      %s\n  expected: %s", a.message ? a.message : "(none)",
                     em ? em : "(none)");
        const cJSON *ew = cJSON_GetObjectItemCaseSensitive(e, "warnings");
        bool wsame = ew ? a.warnings && cJSON_Compare(ew, a.warnings, 1) : a.warnings == NULL;
        if (!wsame) {
            char *g = a.warnings ? cJSON_Print(a.warnings) : NULL;
            RUN_FAIL("warnings\n  got: %s", g ? g : "(none)");
            free(g);
        }
        if (a.patched) RUN_FAIL("a workload answer carries a patch");
        if (!a.body || !d.body || strcmp(a.body, d.body) != 0)
            RUN_FAIL("dryRun: true got another answer: %s", d.body ? d.body : "(none)");
        if (b.allowed != a.allowed || (b.message == NULL) != (a.message == NULL) ||
            (b.message && strcmp(b.message, a.message) != 0))
            RUN_FAIL("admission.k8s.io/v1beta1 got another decision");
        if (!mu.allowed || mu.patched || !mu.outcome || strcmp(mu.outcome, "skipped") != 0)
            RUN_FAIL("the mutating hook did not skip the workload: %s", mu.body ? mu.body : "");
        if (docs && title && jp) {
            /* the run's edits of the manifest, so the example reads whole */
            fprintf(docs, "With these edits (RFC 6902):\n\n```yaml\n");
            const cJSON *x;
            cJSON_ArrayForEach(x, jp) {
                char *xs = cJSON_PrintUnformatted(x);
                fprintf(docs, "- %s\n", xs ? xs : "");
                free(xs);
            }
            fprintf(docs, "```\n\n");
        }
        if (docs && title) doc_run(docs, ns, op, cJSON_GetObjectItemCaseSensitive(r, "policy"), &a);
        answer_free(&a);
        answer_free(&d);
        answer_free(&b);
        answer_free(&mu);
        free(body);
        free(dry);
        free(beta);
        cJSON_Delete(o);
        cJSON_Delete(old);
    }
    cJSON_Delete(obj);
    cJSON_Delete(cs);
    return !bad;
}

int main(int argc, char **argv)
{
    bool docs = argc == 4 && strcmp(argv[1], "--docs") == 0;
    if (!docs && argc != 3) {
        fprintf(stderr, "usage: %s CASES POLICIES\n       %s --docs CASES POLICIES\n", argv[0],
                argv[0]);
        return 2;
    }
    const char *dir = docs ? argv[2] : argv[1];
    policies_dir = docs ? argv[3] : argv[2];
    char **names;
    size_t n = list_cases(dir, &names);
    if (docs)
        printf("## Workloads\n\nGenerated from `test/golden/workloads` (docs/policy.md "
               "[workloads](policy.md#workloads)): the validating webhook's answer to the "
               "AdmissionReview the API server sends when the object is applied.\n\n");
    for (size_t i = 0; i < n; i++) {
        if (!run_case(dir, names[i], docs ? stdout : NULL)) failures++;
        free(names[i]);
    }
    free(names);
    free_policies();
    if (!docs) printf("%zu workload cases, %d failed\n", n, failures);
    if (n == 0) return 1;
    return failures ? 1 : 0;
}
