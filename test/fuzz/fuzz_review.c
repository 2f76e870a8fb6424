/*
 * fuzz_review.c - fuzz target: the whole request path without sockets: an AdmissionReview body
 * through gpa_review_handle (codec + engine + patch builder) for both hooks, with the shipped
 * policies and, in turn, each variant set under test/fuzz/policies/.
 * Properties: a body is always produced (except out-of-memory); it is JSON; 200 exactly when
 * GPA_OK; a 200 answer is an AdmissionReview whose response echoes a uid; the same input
 * gives the same bytes twice (the engine is pure). Workloads (issue 16: Deployment, Job,
 * PyTorchJob, ... judged on the validating hook): never patched, the mutating hook skips them,
 * a refusal's message names a template path, no warning line is longer than 240 bytes or
 * comes past the 17th, and a dryRun: true copy of the request gets the same bytes. DRA claims
 * (issue 24: ResourceClaim, ResourceClaimTemplate) are also judged by the golden set `dra`
 * on every input: a denied claim carries no patch, dryRun gets the same bytes, and a claim
 * with its patch applied mutates to no patch again (idempotence).
 *
 * Must never: ignore a property violation (fz_fail aborts, libFuzzer keeps the input).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_common.h"
#include "gpu_admission/claim.h"
#include "gpu_admission/patch.h"
#include "gpu_admission/review.h"
#include "gpu_admission/workload.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void dry_run_same(const gpa_policy *p, gpa_hook hook, const gpa_review_result *r,
                         const cJSON *root, const char *what);

/* The request's object kind is a workload kind of p: judged on the validating hook only,
 * never patched, messages and warnings bounded, dryRun changes nothing. */
static void workload_props(const gpa_policy *p, gpa_hook hook, const gpa_review_result *r,
                           const cJSON *response, const char *buf, size_t size)
{
    cJSON *root = cJSON_ParseWithLength(buf, size);
    const cJSON *req = cJSON_GetObjectItemCaseSensitive(root, "request");
    const cJSON *obj = cJSON_GetObjectItemCaseSensitive(req, "object");
    const cJSON *rk = cJSON_GetObjectItemCaseSensitive(req, "kind");
    const char *group = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(rk, "group"));
    char av[300];
    snprintf(av, sizeof av, "%s%sv1", group ? group : "", group && *group ? "/" : "");
    if (!cJSON_IsObject(obj) || !gpa_workload_kind_known(p, av, r->kind)) {
        cJSON_Delete(root);
        return;
    }
    if (cJSON_GetObjectItemCaseSensitive(response, "patch"))
        fz_fail("a workload was patched", NULL, NULL);
    if (hook == GPA_HOOK_MUTATE && (!r->outcome || strcmp(r->outcome, "skipped") != 0))
        fz_fail("the mutating hook judged a workload", NULL, NULL);
    const cJSON *w = cJSON_GetObjectItemCaseSensitive(response, "warnings");
    int n = 0;
    const cJSON *line;
    cJSON_ArrayForEach(line, w) {
        n++;
        if (!cJSON_IsString(line) || strlen(line->valuestring) > 240)
            fz_fail("a workload warning line is not a string of at most 240 bytes", NULL, NULL);
    }
    if (n > 17) fz_fail("more than 17 warning lines for a workload", NULL, NULL);
    const char *msg = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(
        cJSON_GetObjectItemCaseSensitive(response, "status"), "message"));
    if (msg && !strstr(msg, ": ")) fz_fail("a workload refusal names no template path", NULL, NULL);
    dry_run_same(p, hook, r, root, "dryRun: true changed a workload's answer");
    cJSON_Delete(root);
}

/* The request again with dryRun: true must get the same bytes. */
static void dry_run_same(const gpa_policy *p, gpa_hook hook, const gpa_review_result *r,
                         const cJSON *root, const char *what)
{
    cJSON *dry = cJSON_Duplicate(root, 1);
    cJSON *dreq = cJSON_GetObjectItemCaseSensitive(dry, "request");
    cJSON_DeleteItemFromObjectCaseSensitive(dreq, "dryRun");
    cJSON_AddTrueToObject(dreq, "dryRun");
    char *dbody = cJSON_PrintUnformatted(dry);
    cJSON_Delete(dry);
    if (dbody) {
        gpa_review_result d;
        gpa_error err = {0};
        int rc = gpa_review_handle(&d, p, hook, dbody, strlen(dbody), &err);
        if (rc != GPA_ENOMEM &&
            (!d.body || d.body_len != r->body_len || memcmp(d.body, r->body, r->body_len) != 0)) {
            fprintf(stderr, "plain:  %s\ndryRun: %s\n", r->body, d.body ? d.body : "(null)");
            fz_fail(what, NULL, NULL);
        }
        gpa_review_result_clear(&d);
        free(dbody);
    }
}

/* A DRA claim's answer: never a patch with a denial; dryRun the same bytes; the mutating
 * hook's patch, applied, leaves nothing more to patch. */
static void claim_props(const gpa_policy *p, gpa_hook hook, const gpa_review_result *r,
                        const cJSON *response, const char *buf, size_t size)
{
    bool allowed = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(response, "allowed"));
    bool patched = cJSON_GetObjectItemCaseSensitive(response, "patch") != NULL;
    if (!allowed && patched) fz_fail("a denied claim carries a patch", NULL, NULL);
    cJSON *root = cJSON_ParseWithLength(buf, size);
    if (!root) return;
    dry_run_same(p, hook, r, root, "dryRun: true changed a claim's answer");
    cJSON *req = cJSON_GetObjectItemCaseSensitive(root, "request");
    cJSON *obj = cJSON_GetObjectItemCaseSensitive(req, "object");
    if (hook == GPA_HOOK_MUTATE && patched && r->decision.patch && cJSON_IsObject(obj)) {
        gpa_error perr = {0};
        if (gpa_patch_apply(obj, r->decision.patch, &perr) != GPA_OK)
            fz_fail("a claim's patch does not apply to the claim", r->decision.patch, NULL);
        char *again = cJSON_PrintUnformatted(root);
        gpa_review_result r2;
        gpa_error err = {0};
        if (again && gpa_review_handle(&r2, p, hook, again, strlen(again), &err) == GPA_OK &&
            r2.decision.patch && cJSON_GetArraySize(r2.decision.patch) > 0) {
            fprintf(stderr, "first: %s\nagain: %s\n", r->body, r2.body);
            fz_fail("mutating a patched claim again patches again", NULL, NULL);
        }
        gpa_review_result_clear(&r2);
        free(again);
    }
    cJSON_Delete(root);
}

static void one(const gpa_policy *p, gpa_hook hook, const char *buf, size_t size)
{
    gpa_review_result r, r2;
    memset(&r, 0, sizeof r);
    memset(&r2, 0, sizeof r2);
    gpa_error err = {0};
    int rc = gpa_review_handle(&r, p, hook, buf, size, &err);
    if (rc == GPA_ENOMEM) {
        gpa_review_result_clear(&r);
        return;
    }
    if (!r.body) fz_fail("gpa_review_handle produced no body", NULL, NULL);
    if (r.body_len != strlen(r.body)) fz_fail("body_len does not match the body", NULL, NULL);
    if ((rc == GPA_OK) != (r.http_status == 200) || (rc != GPA_OK && r.http_status != 400))
        fz_fail("http_status does not match the return code", NULL, NULL);
    cJSON *resp = cJSON_ParseWithLength(r.body, r.body_len);
    if (!resp) {
        fprintf(stderr, "body: %s\n", r.body);
        fz_fail("response body is not JSON", NULL, NULL);
    }
    if (r.http_status == 200) {
        const cJSON *response = cJSON_GetObjectItemCaseSensitive(resp, "response");
        const cJSON *uid = cJSON_GetObjectItemCaseSensitive(response, "uid");
        const cJSON *allowed = cJSON_GetObjectItemCaseSensitive(response, "allowed");
        if (!cJSON_IsString(uid) || !cJSON_IsBool(allowed))
            fz_fail("200 answer without response.uid / response.allowed", resp, NULL);
        if (r.uid && strcmp(r.uid, uid->valuestring) != 0)
            fz_fail("response uid differs from the reported uid", resp, NULL);
        if (hook == GPA_HOOK_VALIDATE && cJSON_GetObjectItemCaseSensitive(response, "patch"))
            fz_fail("the validating hook returned a patch", resp, NULL);
        bool claim = r.kind && (strcmp(r.kind, "ResourceClaim") == 0 ||
                                strcmp(r.kind, "ResourceClaimTemplate") == 0);
        if (claim)
            claim_props(p, hook, &r, response, buf, size);
        else if (r.kind && strcmp(r.kind, "Pod") != 0)
            workload_props(p, hook, &r, response, buf, size);
    }
    cJSON_Delete(resp);
    if (gpa_review_handle(&r2, p, hook, buf, size, &err) != rc || !r2.body ||
        r2.body_len != r.body_len || memcmp(r.body, r2.body, r.body_len) != 0) {
        fprintf(stderr, "first:  %s\nsecond: %s\n", r.body, r2.body ? r2.body : "(null)");
        fz_fail("the same request answered twice gives different bytes", NULL, NULL);
    }
    gpa_review_result_clear(&r);
    gpa_review_result_clear(&r2);
}

static bool mentions(const char *buf, size_t size, const char *word)
{
    size_t n = strlen(word);
    for (size_t i = 0; i + n <= size; i++)
        if (memcmp(buf + i, word, n) == 0) return true;
    return false;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size > 256 * 1024) return 0;
    char *buf = fz_dup_exact(data, size);
    const gpa_policy *shipped = fz_policy(0);
    one(shipped, GPA_HOOK_MUTATE, buf, size);
    one(shipped, GPA_HOOK_VALIDATE, buf, size);
    size_t n = fz_policy_count();
    if (n > 1) {
        /* One variant per input, picked from the input itself so a crash reproduces. */
        const gpa_policy *v = fz_policy(1 + size % (n - 1));
        one(v, GPA_HOOK_MUTATE, buf, size);
        one(v, GPA_HOOK_VALIDATE, buf, size);
    }
    /* claims are judged only by a set with spec.dra: run it on every input mentioning one */
    int dra = fz_policy_find("golden-dra");
    if (dra > 0 && mentions(buf, size, "Claim")) {
        one(fz_policy((size_t)dra), GPA_HOOK_MUTATE, buf, size);
        one(fz_policy((size_t)dra), GPA_HOOK_VALIDATE, buf, size);
    }
    free(buf);
    return 0;
}
