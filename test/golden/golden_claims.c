/*
 * golden_claims.c - golden cases for DRA claims (test/golden/claims/NAME/case.yaml): a
 * ResourceClaim or ResourceClaimTemplate (NVIDIA's demo specs from test/fixtures, or inline)
 * wrapped in the AdmissionReview the API server would send, through the webhooks' codec
 * (gpa_review_handle), the answer compared with the case's expectations. Also prints the
 * docs/policy-examples.md section for the cases with a doc: title. Test code only.
 *
 * case.yaml:
 *   description: why the answer is right           (required; used by the docs)
 *   doc: "Claims 1: ..."                            (optional: becomes a docs example)
 *   object: ../../../fixtures/x.yaml | {inline}     (required) objectKind: K picks the first
 *                                                   document of that kind
 *   runs:
 *     - policy: dra | [files under POLICIES]
 *       hook: mutate | validate                     (default mutate)
 *       namespace: NS                (default: the object's, else "default")
 *       user: NAME                   request.userInfo.username (default: none)
 *       operation: CREATE            (CREATE | UPDATE | DELETE)
 *       oldObjectMerge: {...}        UPDATE: oldObject = the object with this merge patch
 *       objectMerge: {...}           merge patch applied to the object itself
 *                                    (${REVISION} in either stands for the policy's revision,
 *                                    as in expect: a stored object the webhook placed)
 *       expect: {allowed, outcome, reason, message (exact; absent = none),
 *                warnings (exact; absent = none), patch (exact ops; absent = none)}
 *
 *   golden_claims CASES POLICIES --emit DIR  also writes, for each patch,
 *                                            DIR/NAME-runN/{pod,patch,expected}.json (the
 *                                            inputs of kubectl_check.sh: golden/kubectl-claims)
 *   golden_claims --compare A.json B.json    semantic JSON equality (0 same, 1 differ)
 *
 * Besides each expectation every run checks: a dryRun request gets the same bytes, v1beta1 the
 * same decision; the validating hook never patches; a denied claim carries no patch; and a
 * patch, applied, gives a claim the mutating hook answers with no patch (idempotent) and the
 * validating hook admits when the mutating one had nothing to say.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <cjson/cJSON.h>

#include "gpu_admission/patch.h"
#include "gpu_admission/policy.h"
#include "gpu_admission/review.h"
#include "gpu_admission/yamljson.h"
#include "golden_common.h"

static int failures;
static const char *record; /* --record NAME: print NAME's case.yaml with today's answers */
static const char *emit;   /* --emit DIR: kubectl inputs for every patch */

/* DIR/NAME-runN/pod.json (the claim as sent), patch.json, expected.json (the claim as the
 * patch leaves it): what kubectl_check.sh applies with the real kubectl. false on error. */
static bool emit_run(const char *name, int run, const cJSON *obj, const cJSON *patch,
                     const cJSON *after)
{
    char dir[PATH_MAX], path[PATH_MAX + 32];
    snprintf(dir, sizeof dir, "%s/%s-run%d", emit, name, run);
    if (mkdir(emit, 0755) != 0 && errno != EEXIST) return false;
    if (mkdir(dir, 0755) != 0 && errno != EEXIST) return false;
    const char *names[] = {"pod.json", "patch.json", "expected.json"};
    const cJSON *vals[] = {obj, patch, after};
    for (int i = 0; i < 3; i++) {
        char *s = cJSON_Print(vals[i]);
        snprintf(path, sizeof path, "%s/%s", dir, names[i]);
        FILE *f = s ? fopen(path, "w") : NULL;
        bool ok = f && fputs(s, f) >= 0;
        if (f && fclose(f) != 0) ok = false;
        free(s);
        if (!ok) return false;
    }
    return true;
}

/* --compare: are the JSON (or YAML) files a and b the same value? */
static int compare(const char *a, const char *b)
{
    cJSON *ja = yaml_docs(a), *jb = ja ? yaml_docs(b) : NULL;
    if (!ja || !jb) {
        cJSON_Delete(ja);
        return 2;
    }
    bool same = cJSON_Compare(cJSON_GetArrayItem(ja, 0), cJSON_GetArrayItem(jb, 0), true);
    if (!same) fprintf(stderr, "%s and %s differ\n", a, b);
    cJSON_Delete(ja);
    cJSON_Delete(jb);
    return same ? 0 : 1;
}

static const char *sget(const cJSON *o, const char *k)
{
    return cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(o, k));
}

/* ${REVISION} in expected strings stands for the policy's revision. */
static void unsubst_revision(cJSON *v, const char *rev)
{
    if (cJSON_IsString(v) && strcmp(v->valuestring, rev) == 0)
        cJSON_SetValuestring(v, "${REVISION}");
    for (cJSON *c = v ? v->child : NULL; c; c = c->next)
        unsubst_revision(c, rev);
}

/* The expect block a run would need to pass today (record mode only; a human reviews it). */
static cJSON *recorded(const answer *a, const char *rev)
{
    cJSON *e = cJSON_CreateObject();
    cJSON_AddBoolToObject(e, "allowed", a->allowed);
    if (a->outcome) cJSON_AddStringToObject(e, "outcome", a->outcome);
    if (a->reason) cJSON_AddStringToObject(e, "reason", a->reason);
    if (a->message) cJSON_AddStringToObject(e, "message", a->message);
    if (a->warnings) cJSON_AddItemToObject(e, "warnings", cJSON_Duplicate(a->warnings, 1));
    if (a->patch) {
        cJSON *pp = cJSON_Duplicate(a->patch, 1);
        unsubst_revision(pp, rev);
        cJSON_AddItemToObject(e, "patch", pp);
    }
    return e;
}

static void subst_revision(cJSON *v, const char *rev)
{
    if (cJSON_IsString(v) && strcmp(v->valuestring, "${REVISION}") == 0)
        cJSON_SetValuestring(v, rev);
    for (cJSON *c = v ? v->child : NULL; c; c = c->next)
        subst_revision(c, rev);
}

static void doc_run(FILE *f, const char *hook, const char *ns, const char *op, const cJSON *policy,
                    const answer *a)
{
    char *ps =
        cJSON_IsString(policy) ? strdup(policy->valuestring) : cJSON_PrintUnformatted(policy);
    fprintf(f, "%s on /%s in namespace `%s`, policy `%s`: **%s**%s\n\n", op, hook, ns, ps,
            a->allowed ? "allowed" : "denied",
            a->patch                             ? " with this patch"
            : strcmp(a->outcome, "skipped") == 0 ? ", not judged (skipped)"
                                                 : ", no patch");
    free(ps);
    if (a->patch) {
        char *pp = cJSON_Print(a->patch);
        fprintf(f, "```json\n%s\n```\n\n", pp ? pp : "");
        free(pp);
    }
    if (a->message) fprintf(f, "```text\n%s\n```\n\n", a->message);
    if (a->warnings && a->warnings->child) {
        fprintf(f, "Warnings (what `kubectl apply` prints):\n\n```text\n");
        const cJSON *w;
        cJSON_ArrayForEach(w, a->warnings)
            fprintf(f, "%s\n", cJSON_GetStringValue(w));
        fprintf(f, "```\n\n");
    }
}

static cJSON *pick_object(const char *dir, const char *name, const cJSON *spec, char *objpath,
                          size_t cap)
{
    const cJSON *src = cJSON_GetObjectItemCaseSensitive(spec, "object");
    if (cJSON_IsObject(src)) return cJSON_Duplicate(src, 1);
    if (!cJSON_IsString(src)) return NULL;
    snprintf(objpath, cap, "%s/%s/%s", dir, name, src->valuestring);
    cJSON *docsv = yaml_docs(objpath);
    const char *want = sget(spec, "objectKind");
    cJSON *found = NULL, *d;
    cJSON_ArrayForEach(d, docsv)
        if (!found && (!want || (sget(d, "kind") && strcmp(sget(d, "kind"), want) == 0))) found = d;
    cJSON *o = found ? cJSON_Duplicate(found, 1) : NULL;
    cJSON_Delete(docsv);
    return o;
}

static bool run_case(const char *dir, const char *name, FILE *docs)
{
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s/%s/case.yaml", dir, name);
    cJSON *cs = yaml_docs(path);
    cJSON *spec = cJSON_GetArrayItem(cs, 0);
    bool bad = false;
    int run = 0;
    if (!cJSON_IsObject(spec) || !sget(spec, "description")) {
        RUN_FAIL("case.yaml unreadable or without a description");
        cJSON_Delete(cs);
        return false;
    }
    char objpath[PATH_MAX] = "";
    cJSON *obj = pick_object(dir, name, spec, objpath, sizeof objpath);
    if (!obj) {
        RUN_FAIL("no object");
        cJSON_Delete(cs);
        return false;
    }
    const char *title = sget(spec, "doc");
    const cJSON *src = cJSON_GetObjectItemCaseSensitive(spec, "object");
    if (docs && title) {
        fprintf(docs, "### %s\n\n%s\n\n", title, sget(spec, "description"));
        if (cJSON_IsString(src))
            fprintf(docs, "Golden case `test/golden/claims/%s`: the %s in `%s`.\n\n", name,
                    sget(obj, "kind") ? sget(obj, "kind") : "object",
                    src->valuestring + (strncmp(src->valuestring, "../../../", 9) ? 0 : 9));
        else
            fprintf(docs, "Golden case `test/golden/claims/%s`.\n\n", name);
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
        const char *hs = sget(r, "hook");
        bool mutate = !hs || strcmp(hs, "mutate") == 0;
        gpa_hook hook = mutate ? GPA_HOOK_MUTATE : GPA_HOOK_VALIDATE;
        const char *op = sget(r, "operation");
        if (!op) op = "CREATE";
        const char *ns = sget(r, "namespace");
        const char *ons = sget(cJSON_GetObjectItemCaseSensitive(obj, "metadata"), "namespace");
        if (!ns) ns = ons ? ons : "default";
        cJSON *o = cJSON_Duplicate(obj, 1), *old = NULL;
        const cJSON *om = cJSON_GetObjectItemCaseSensitive(r, "oldObjectMerge");
        if (om) {
            old = cJSON_Duplicate(obj, 1);
            merge_patch(old, om);
            subst_revision(old, gpa_policy_revision(p)); /* a stored, placed object */
        }
        const cJSON *m = cJSON_GetObjectItemCaseSensitive(r, "objectMerge");
        if (m) merge_patch(o, m);
        subst_revision(o, gpa_policy_revision(p));
        if (strcmp(op, "UPDATE") == 0 && !old) old = cJSON_Duplicate(obj, 1);
        const char *user = sget(r, "user");
        char *body = review_body(o, old, op, ns, user, "admission.k8s.io/v1", false);
        char *dry = review_body(o, old, op, ns, user, "admission.k8s.io/v1", true);
        char *beta = review_body(o, old, op, ns, user, "admission.k8s.io/v1beta1", false);
        answer a = ask(p, hook, body);
        answer d = ask(p, hook, dry);
        answer b = ask(p, hook, beta);
        if (record)
            cJSON_ReplaceItemInObjectCaseSensitive((cJSON *)r, "expect",
                                                   recorded(&a, gpa_policy_revision(p)));
        const cJSON *e = cJSON_GetObjectItemCaseSensitive(r, "expect");
        const cJSON *ea = cJSON_GetObjectItemCaseSensitive(e, "allowed");
        if (!cJSON_IsBool(ea))
            RUN_FAIL("expect.allowed is required");
        else if (cJSON_IsTrue(ea) != a.allowed)
            RUN_FAIL("allowed %d, expected %d (message: %s)", a.allowed, cJSON_IsTrue(ea),
                     a.message ? a.message : "none");
        const char *eo = sget(e, "outcome");
        if (eo && (!a.outcome || strcmp(eo, a.outcome) != 0))
            RUN_FAIL("outcome %s, expected %s", a.outcome ? a.outcome : "none", eo);
        const char *er = sget(e, "reason");
        if ((er == NULL) != (a.reason == NULL) || (er && strcmp(er, a.reason) != 0))
            RUN_FAIL("reason %s, expected %s", a.reason ? a.reason : "(none)", er ? er : "(none)");
        const char *em = sget(e, "message");
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
        cJSON *ep = cJSON_Duplicate(cJSON_GetObjectItemCaseSensitive(e, "patch"), 1);
        subst_revision(ep, gpa_policy_revision(p));
        if ((ep == NULL) != (a.patch == NULL) || (ep && !cJSON_Compare(ep, a.patch, 1))) {
            char *g = a.patch ? cJSON_Print(a.patch) : NULL;
            RUN_FAIL("patch\n  got: %s", g ? g : "(none)");
            free(g);
        }
        cJSON_Delete(ep);
        if (!mutate && a.patch) RUN_FAIL("the validating hook patched");
        if (!a.allowed && a.patch) RUN_FAIL("a denied claim carries a patch");
        if (!a.body || !d.body || strcmp(a.body, d.body) != 0)
            RUN_FAIL("dryRun: true got another answer: %s", d.body ? d.body : "(none)");
        if (b.allowed != a.allowed || (b.message == NULL) != (a.message == NULL) ||
            (b.message && strcmp(b.message, a.message) != 0) ||
            (b.patch == NULL) != (a.patch == NULL) ||
            (b.patch && !cJSON_Compare(a.patch, b.patch, 1)))
            RUN_FAIL("admission.k8s.io/v1beta1 got another decision");
        if (a.patch) {
            /* reinvocation: the patched claim needs nothing more, and passes validation */
            cJSON *after = cJSON_Duplicate(o, 1);
            gpa_error perr = {0};
            if (gpa_patch_apply(after, a.patch, &perr) != GPA_OK) {
                RUN_FAIL("the patch does not apply: %s", perr.message);
            } else {
                if (emit && !emit_run(name, run, o, a.patch, after))
                    RUN_FAIL("cannot write the kubectl inputs under %s", emit);
                char *again = review_body(after, NULL, op, ns, user, "admission.k8s.io/v1", false);
                answer m2 = ask(p, GPA_HOOK_MUTATE, again);
                if (m2.patch || !m2.allowed)
                    RUN_FAIL("mutating the patched claim again is not a no-op: %s", m2.body);
                answer v2 = ask(p, GPA_HOOK_VALIDATE, again);
                if (!a.message && !v2.allowed)
                    RUN_FAIL("the validating hook refuses the patched claim: %s", v2.message);
                answer_free(&m2);
                answer_free(&v2);
                free(again);
            }
            cJSON_Delete(after);
        }
        if (docs && title)
            doc_run(docs, mutate ? "mutate" : "validate", ns, op,
                    cJSON_GetObjectItemCaseSensitive(r, "policy"), &a);
        answer_free(&a);
        answer_free(&d);
        answer_free(&b);
        free(body);
        free(dry);
        free(beta);
        cJSON_Delete(o);
        cJSON_Delete(old);
    }
    if (record) {
        char *y = gpa_json_to_yaml(spec);
        printf("%s", y ? y : "");
        free(y);
    }
    cJSON_Delete(obj);
    cJSON_Delete(cs);
    return !bad;
}

int main(int argc, char **argv)
{
    if (argc == 4 && strcmp(argv[1], "--compare") == 0) return compare(argv[2], argv[3]);
    bool docs = argc == 4 && strcmp(argv[1], "--docs") == 0;
    if (argc == 5 && strcmp(argv[3], "--record") == 0) {
        record = argv[4];
        argc = 3;
    } else if (argc == 5 && strcmp(argv[3], "--emit") == 0) {
        emit = argv[4];
        argc = 3;
    }
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
        printf(
            "## DRA claims\n\nGenerated from `test/golden/claims` (docs/policy.md "
            "[Dynamic Resource Allocation](policy.md#dynamic-resource-allocation-resourceclaims)): "
            "the webhooks' answers to the AdmissionReview the API server sends for a "
            "ResourceClaim or ResourceClaimTemplate, mostly NVIDIA's own demo specs "
            "(k8s-dra-driver-gpu `demo/specs/`). The policy set is `dra` "
            "(`test/golden/policies/dra/`): tenants `research` (untrusted), `platform` "
            "(trusted, `dra: {adminAccess: true, allocationModeAll: true}`) and `demo` "
            "(trusted: the demo specs' `gpu-test*` namespaces); pools `a100-mig` "
            "(A100-80GB MIG, class `mig.nvidia.com`), `a100-40-mig` (A100-40GB MIG, "
            "`mig.nvidia.com`), `h100-train` (`gpu.nvidia.com`), `l4-shares` "
            "(`gpu.nvidia.com`, multiAllocatable) and `t4-ts` (`gpu.nvidia.com`, "
            "multiAllocatable, allowUntrusted), each with a productName selector; generic "
            "class `gpu.nvidia.com`. `dra-modes/*.yaml` swap in `dra.enforcement: warn` or "
            "`unmatched: deny`.\n\n");
    for (size_t i = 0; i < n; i++) {
        if (record && strcmp(record, names[i]) != 0) {
            free(names[i]);
            continue;
        }
        if (!run_case(dir, names[i], docs ? stdout : NULL) && !record) failures++;
        free(names[i]);
    }
    free(names);
    free_policies();
    if (!docs && !record) printf("%zu claim cases, %d failed\n", n, failures);
    if (n == 0) return 1;
    return failures ? 1 : 0;
}
