/*
 * fuzz_review.c - fuzz target: the whole request path without sockets: an AdmissionReview body
 * through gpa_review_handle (codec + engine + patch builder) for both hooks, with the shipped
 * policies and, in turn, each variant set under test/fuzz/policies/.
 * Properties: a body is always produced (except out-of-memory); it is JSON; 200 exactly when
 * GPA_OK; a 200 answer is an AdmissionReview whose response echoes a uid; the same input
 * gives the same bytes twice (the engine is pure).
 *
 * Must never: ignore a property violation (fz_fail aborts, libFuzzer keeps the input).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_common.h"
#include "gpu_admission/review.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

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
    free(buf);
    return 0;
}
