/*
 * test_oom_review.c - the AdmissionReview path with every allocation failing in turn (fault.h):
 * a GPU pod on /mutate (rewritten and patched) and on /validate, a Deployment on /validate
 * (admitted with a warning line, and refused), and a body that is not an AdmissionReview (400).
 * Each run must answer exactly as the clean run did, or fail with GPA_ENOMEM, http_status 500
 * and no body, as review.h promises ("answer 500 with any body"); never a 400 or a 200 that
 * differs (an answer changed by memory pressure would be a wrong admission decision).
 *
 * Must never: load the policy while armed (the loader has its own test, test_oom_policy), or
 * accept a run that left a block allocated.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fault.h"
#include "gpu_admission/review.h"

#define CLUSTER GPA_SOURCE_DIR "/test/golden/policies/cluster"

#define REVIEW(kind_group, kind, ns, obj)                                                          \
    "{\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":\"AdmissionReview\",\"request\":{"           \
    "\"uid\":\"7f0e-oom\",\"kind\":{\"group\":\"" kind_group                                       \
    "\",\"version\":\"v1\",\"kind\":\"" kind "\"},\"namespace\":\"" ns                             \
    "\",\"operation\":\"CREATE\",\"userInfo\":{\"username\":"                                      \
    "\"alice\"},\"object\":" obj ",\"oldObject\":null}}"

/* The golden case 001-mig-auto-8gi's pod: 8Gi of gpu-memory in inference-a becomes MIG 1g.10gb
 * with a toleration and node affinity (the engine's longest mutating path). */
#define GPU_POD                                                                                    \
    "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"llm-small\",\"namespace\":"  \
    "\"inference-a\",\"labels\":{\"app\":\"llm\"},\"annotations\":{\"gpu-admission.io/"            \
    "gpu-memory\":\"8Gi\"}},\"spec\":{\"containers\":[{\"name\":\"server\",\"image\":"             \
    "\"vllm/vllm-openai:v0.6.0\",\"resources\":{\"limits\":{\"nvidia.com/gpu\":\"1\",\"cpu\":"     \
    "\"4\"},\"requests\":{\"nvidia.com/gpu\":\"1\",\"cpu\":\"4\"}}}]}}"

/* The GPU Operator's plugin test Deployment (test/fixtures/nvidia-gpu-operator), as JSON. */
#define DEPLOYMENT(ns)                                                                             \
    "{\"apiVersion\":\"apps/v1\",\"kind\":\"Deployment\",\"metadata\":{\"name\":"                  \
    "\"nvidia-plugin-test\",\"namespace\":\"" ns "\",\"labels\":{\"app\":\"nvidia-plugin-test\"}"  \
    "},\"spec\":{\"replicas\":5,\"selector\":{\"matchLabels\":{\"app\":\"nvidia-plugin-test\"}},"  \
    "\"template\":{\"metadata\":{\"labels\":{\"app\":\"nvidia-plugin-test\"}},\"spec\":{"          \
    "\"tolerations\":[{\"key\":\"nvidia.com/gpu\",\"operator\":\"Exists\",\"effect\":"             \
    "\"NoSchedule\"}],\"containers\":[{\"name\":\"nvidia-plugin-test-ctr\",\"image\":"             \
    "\"nvcr.io/nvidia/cloud-native/gpu-operator-validator:v1.10.1\",\"resources\":{\"limits\":"    \
    "{\"nvidia.com/gpu\":1}}}],\"nodeSelector\":{\"nvidia.com/gpu.product\":"                      \
    "\"Tesla-T4-SHARED\"}}}}}"

typedef struct review_case {
    const gpa_policy *policy;
    gpa_hook hook;
    const char *body;
    int want_http;            /* of the clean run */
    const char *want_outcome; /* of the clean run */
    /* the last run's answer, copied without allocating */
    int http;
    const char *outcome;
    bool has_body;
    size_t body_len;
    char body_buf[65536];
    /* the clean run's */
    bool have_clean;
    int clean_http;
    const char *clean_outcome;
    size_t clean_len;
    char clean_buf[65536];
} review_case;

static int run_review(void *ctx)
{
    review_case *c = ctx;
    gpa_review_result r;
    gpa_error err = {0};
    int rc = gpa_review_handle(&r, c->policy, c->hook, c->body, strlen(c->body), &err);
    c->http = r.http_status;
    c->outcome = r.outcome;
    c->has_body = r.body != NULL;
    c->body_len = r.body ? r.body_len : 0;
    if (c->body_len > sizeof c->body_buf) c->body_len = sizeof c->body_buf;
    if (r.body) memcpy(c->body_buf, r.body, c->body_len);
    gpa_review_result_clear(&r);
    return rc;
}

static const char *check_review(void *ctx, int rc, int clean_rc, bool fired)
{
    review_case *c = ctx;
    if (!c->have_clean) {
        if (c->http != c->want_http) return "the clean run's http_status is not the expected one";
        if (!c->outcome || strcmp(c->outcome, c->want_outcome) != 0) {
            static char why[128];
            snprintf(why, sizeof why, "the clean run's outcome is %s, not %s",
                     c->outcome ? c->outcome : "NULL", c->want_outcome);
            return why;
        }
        if (!c->has_body) return "the clean run has no body";
        c->have_clean = true;
        c->clean_http = c->http;
        c->clean_outcome = c->outcome;
        c->clean_len = c->body_len;
        memcpy(c->clean_buf, c->body_buf, c->body_len);
        return NULL;
    }
    if (rc == GPA_ENOMEM) {
        if (c->http != 500) return "GPA_ENOMEM without http_status 500";
        if (c->has_body) return "GPA_ENOMEM with a body (review.h: body NULL)";
        if (!c->outcome || strcmp(c->outcome, "error") != 0) return "GPA_ENOMEM, outcome not error";
        return NULL;
    }
    if (rc != clean_rc) return "a return code that is neither the clean run's nor GPA_ENOMEM";
    if (c->http != c->clean_http) return "an http_status other than the clean run's";
    if (!c->outcome || strcmp(c->outcome, c->clean_outcome) != 0)
        return "an outcome other than the clean run's";
    if (!c->has_body || c->body_len != c->clean_len ||
        memcmp(c->body_buf, c->clean_buf, c->body_len) != 0)
        return "a body that differs from the clean run's";
    return NULL;
}

static review_case cases[] = {
    {.hook = GPA_HOOK_MUTATE,
     .body = REVIEW("", "Pod", "inference-a", GPU_POD),
     .want_http = 200,
     .want_outcome = "mutated"},
    {.hook = GPA_HOOK_VALIDATE,
     .body = REVIEW("", "Pod", "inference-a", GPU_POD),
     .want_http = 200,
     .want_outcome = "denied"}, /* not yet rewritten for its pool: the mutating hook's job */
    {.hook = GPA_HOOK_VALIDATE,
     .body = REVIEW("apps", "Deployment", "notebooks", DEPLOYMENT("notebooks")),
     .want_http = 200,
     .want_outcome = "allowed"},
    {.hook = GPA_HOOK_VALIDATE,
     .body = REVIEW("apps", "Deployment", "blocked-team", DEPLOYMENT("blocked-team")),
     .want_http = 200,
     .want_outcome = "denied"},
    {.hook = GPA_HOOK_MUTATE, .want_http = 200, .want_outcome = "mutated"}, /* big_pod_review */
    {.hook = GPA_HOOK_MUTATE,
     .body = "{\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":\"Pod\",\"request\":7}",
     .want_http = 400,
     .want_outcome = "error"},
};

/* GPU_POD with 300 more containers: the request outgrows the node arena's first block, so the
 * arena's growth and the reader's deeper paths fail too. Built before arming. */
static char *big_pod_review(void)
{
    static const char head[] = "{\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":"
                               "\"AdmissionReview\",\"request\":{\"uid\":\"7f0e-big\",\"kind\":{"
                               "\"group\":\"\",\"version\":\"v1\",\"kind\":\"Pod\"},\"namespace\":"
                               "\"inference-a\",\"operation\":\"CREATE\",\"object\":";
    const char *pod = GPU_POD;
    const char *cut = strstr(pod, "]}}"); /* the end of the containers array */
    size_t cap = sizeof head + strlen(pod) + 300 * 256 + 64;
    char *b = malloc(cap);
    if (!b) return NULL;
    size_t n = (size_t)snprintf(b, cap, "%s%.*s", head, (int)(cut - pod), pod);
    for (int i = 0; i < 300; i++)
        n += (size_t)snprintf(b + n, cap - n,
                              ",{\"name\":\"side-%d\",\"image\":\"busybox:1.36\",\"env\":[{"
                              "\"name\":\"A\",\"value\":\"%d\"},{\"name\":\"B\",\"value\":"
                              "\"x\"}],\"resources\":{\"limits\":{\"cpu\":\"100m\"}}}",
                              i, i);
    snprintf(b + n, cap - n, "%s,\"oldObject\":null}}", cut);
    return b;
}

static const char *const names[] = {"review/mutate GPU pod",
                                    "review/validate GPU pod",
                                    "review/validate Deployment (admitted)",
                                    "review/validate Deployment (refused)",
                                    "review/mutate GPU pod with 300 sidecars",
                                    "review/not an AdmissionReview (400)"};

int main(void)
{
    fault_init();
    gpa_policy *p = NULL;
    gpa_error err = {0};
    if (gpa_policy_load_dir(&p, CLUSTER, &err) != GPA_OK) {
        printf("FAIL cannot load %s: %s\n", CLUSTER, err.message);
        return 1;
    }
    char *big = big_pod_review();
    cases[4].body = big;
    int failed = 0;
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        cases[i].policy = p;
        fault_case fc = {names[i], run_review, check_review, &cases[i]};
        failed += fault_run_case(&fc);
    }
    gpa_policy_unref(p);
    free(big);
    printf("%s\n", failed ? "FAILED" : "all runs ended cleanly");
    return failed ? 1 : 0;
}
