/*
 * test_engine_words.c - the words explain and warning lines use (issue 31, "words that are
 * right"): the gpu-memory value a claim template carries on its own metadata is named in the
 * MIG sizing line (it read "gpu-memory: gpu-memory (19.33 GB)"); claims are described as
 * claims, not "pod asks"; a warning cut at 119 bytes is cut after a whole word, never inside
 * a label key ("topology.kubernetes.io/zo...").
 */
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "gpu_admission/claim.h"
#include "gpu_admission/engine.h"
#include "gpu_admission/policy.h"
#include "policy/warn_text.h"

static gpa_policy *load_dir(const char *rel)
{
    char dir[1024];
    snprintf(dir, sizeof dir, "%s/%s", GPA_SOURCE_DIR, rel);
    gpa_policy *p = NULL;
    gpa_error err = {0};
    if (gpa_policy_load_dir(&p, dir, &err) != GPA_OK) fprintf(stderr, "%s\n", err.message);
    CHECK(p != NULL);
    return p;
}

/* Every explain line of a claim judged on the mutating hook, '\n'-joined (caller frees). */
static char *claim_explain(const gpa_policy *p, const char *json, gpa_claim_kind_t kind)
{
    cJSON *obj = cJSON_Parse(json);
    CHECK(obj != NULL);
    gpa_request req = {.op = GPA_OP_CREATE, .object = obj, .explain = true};
    gpa_decision d;
    bool judged = false;
    gpa_error err = {0};
    CHECK_INT(gpa_engine_claim(&d, &judged, p, &req, kind, true, &err), GPA_OK);
    CHECK(judged);
    size_t len = 1;
    for (size_t i = 0; i < d.n_explain; i++)
        len += strlen(d.explain[i]) + 1;
    for (size_t i = 0; i < d.n_warnings; i++)
        len += strlen(d.warnings[i]) + 10;
    char *out = calloc(1, len);
    for (size_t i = 0; out && i < d.n_explain; i++) {
        strcat(out, d.explain[i]);
        strcat(out, "\n");
    }
    for (size_t i = 0; out && i < d.n_warnings; i++) {
        strcat(out, "warning: ");
        strcat(out, d.warnings[i]);
        strcat(out, "\n");
    }
    gpa_decision_clear(&d);
    cJSON_Delete(obj);
    return out;
}

#define REQUESTS                                                                                   \
    "\"devices\":{\"requests\":[{\"name\":\"gpu\",\"exactly\":{\"deviceClassName\":"               \
    "\"gpu.nvidia.com\"}}]}"

static void claim_words(void)
{
    gpa_policy *p = load_dir("test/golden/policies/dra");
    if (!p) return;
    /* the annotation on the template object itself, not on spec.metadata */
    char *t = claim_explain(p,
                            "{\"apiVersion\":\"resource.k8s.io/v1\",\"kind\":"
                            "\"ResourceClaimTemplate\",\"metadata\":{\"name\":\"t\",\"namespace\":"
                            "\"inference-a\",\"annotations\":{\"gpu-admission.io/gpu-memory\":"
                            "\"18Gi\"}},\"spec\":{\"spec\":{" REQUESTS "}}}",
                            GPA_CLAIM_TEMPLATE);
    CHECK(t && strstr(t, "smallest that holds gpu-memory: 18Gi (19.33 GB) > 1g.10gb") != NULL);
    CHECK(t && strstr(t, "gpu-memory: gpu-memory") == NULL);
    CHECK(t && strstr(t, "claim asks 1 GPU device(s) with a gpu-memory annotation") != NULL);
    CHECK(t && strstr(t, "pod asks") == NULL);
    if (t && strstr(t, "pod")) fprintf(stderr, "claim explain mentions a pod:\n%s", t);
    CHECK(t && strstr(t, " pod") == NULL);
    free(t);
    /* spec.metadata's annotation, as before */
    t = claim_explain(p,
                      "{\"apiVersion\":\"resource.k8s.io/v1\",\"kind\":\"ResourceClaimTemplate\","
                      "\"metadata\":{\"name\":\"t\",\"namespace\":\"inference-a\"},\"spec\":{"
                      "\"metadata\":{\"annotations\":{\"gpu-admission.io/gpu-memory\":\"30Gi\"}},"
                      "\"spec\":{" REQUESTS "}}}",
                      GPA_CLAIM_TEMPLATE);
    CHECK(t && strstr(t, "gpu-memory: 30Gi (32.21 GB) > 2g.20gb") != NULL);
    free(t);
    /* unmatched and skipped rules speak of claims */
    char *c = claim_explain(p,
                            "{\"apiVersion\":\"resource.k8s.io/v1\",\"kind\":\"ResourceClaim\","
                            "\"metadata\":{\"name\":\"c\",\"namespace\":\"nowhere\"},\"spec\":{"
                            "\"devices\":{\"requests\":[{\"name\":\"gpu\",\"exactly\":{"
                            "\"deviceClassName\":\"gpu.nvidia.com\",\"count\":1}}]}}}",
                            GPA_CLAIM_CLAIM);
    CHECK(c && strstr(c, "no rule matched: unmatched GPU claims are allowed") != NULL);
    CHECK(c && strstr(c, "pod") == NULL);
    free(c);
    gpa_policy_unref(p);
}

/* A pod keeps its words. */
static void pod_words(void)
{
    gpa_policy *p = load_dir("policies");
    if (!p) return;
    cJSON *pod = cJSON_Parse(
        "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"x\",\"namespace\":"
        "\"inference-a\",\"labels\":{\"app.kubernetes.io/component\":\"inference\"},"
        "\"annotations\":{\"gpu-admission.io/gpu-memory\":\"18Gi\"}},\"spec\":{\"containers\":["
        "{\"name\":\"c\",\"image\":\"i\",\"resources\":{\"limits\":{\"nvidia.com/gpu\":"
        "\"1\"}}}]}}");
    gpa_request req = {
        .namespace_ = "inference-a", .op = GPA_OP_CREATE, .object = pod, .explain = true};
    gpa_decision d;
    gpa_error err = {0};
    CHECK_INT(gpa_engine_mutate(&d, p, &req, &err), GPA_OK);
    bool asks = false, sized = false;
    for (size_t i = 0; i < d.n_explain; i++) {
        asks |= strcmp(d.explain[i], "pod asks 1 GPU(s) with a gpu-memory annotation") == 0;
        sized |= strstr(d.explain[i], "gpu-memory: 18Gi (19.33 GB) > 1g.10gb") != NULL;
    }
    CHECK(asks);
    CHECK(sized);
    gpa_decision_clear(&d);
    cJSON_Delete(pod);
    gpa_policy_unref(p);
}

static size_t shorten(char *buf, const char *s)
{
    strcpy(buf, s);
    return gpa_warn_shorten(buf, strlen(buf));
}

static void cut_after_a_word(void)
{
    char buf[512];
    /* 120+ bytes with topology.kubernetes.io/zone straddling byte 116 */
    const char *line = "pod affinity (required) to pods with "
                       "training.kubeflow.org/job-name=llama-7b-finetune "
                       "on one topology.kubernetes.io/zone and one rack";
    size_t n = shorten(buf, line);
    CHECK(n <= GPA_WARN_MAX);
    CHECK(strstr(buf, "topology.kubernetes.io/zo...") == NULL);
    CHECK_STR(buf, "pod affinity (required) to pods with "
                   "training.kubeflow.org/job-name=llama-7b-finetune on one ...");
    /* a line that fits is untouched */
    n = shorten(buf, "placed in pool a by rule b");
    CHECK_INT(n, strlen("placed in pool a by rule b"));
    /* exactly 119 bytes: untouched; 120: cut */
    char l119[200];
    memset(l119, 'a', 119);
    l119[119] = '\0';
    l119[50] = ' ';
    CHECK_INT(shorten(buf, l119), 119);
    l119[119] = 'b';
    l119[120] = '\0';
    n = shorten(buf, l119);
    CHECK_INT(n, 54); /* 50 'a', the space, "..." */
    CHECK(strcmp(buf + 50, " ...") == 0);
    /* a space right before the limit: everything up to it kept */
    char l[200];
    memset(l, 'x', 150);
    l[150] = '\0';
    l[115] = ' ';
    n = shorten(buf, l);
    CHECK_INT(n, 119);
    CHECK(strcmp(buf + 115, " ...") == 0);
    /* no space at all: cut inside the word on a UTF-8 boundary */
    char u[300] = "";
    for (int i = 0; i < 100; i++)
        strcat(u, "\xc3\xa9");
    n = shorten(buf, u);
    CHECK(n <= GPA_WARN_MAX);
    CHECK(memcmp(buf + n - 3, "...", 3) == 0);
    CHECK((n - 3) % 2 == 0); /* whole 2-byte characters before the dots */
}

int main(void)
{
    claim_words();
    pod_words();
    cut_after_a_word();
    return check_done();
}
