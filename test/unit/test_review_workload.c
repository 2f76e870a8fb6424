/*
 * test_review_workload.c - workloads on the validating webhook (review.c dispatching on
 * request.kind to review_workload.c) and the policy's spec.workloads block: the refusal
 * prefixed with the template path, the allowed GPU template's warning line, warn and off,
 * UPDATE with an unchanged template, DELETE, subresources, the mutating hook leaving
 * workloads alone, a kind added by spec.workloads.kinds, and bad shapes.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "check.h"
#include "gpu_admission/review.h"
#include "gpu_admission/workload.h"

#define CLUSTER GPA_SOURCE_DIR "/test/golden/policies/cluster"

/* The golden cluster set plus one more file (NULL: none). */
static gpa_policy *load(const char *extra, gpa_error *err)
{
    static const char *const files[] = {"00-tenancy.yaml", "01-settings.yaml", "10-pools.yaml",
                                        "20-rules.yaml"};
    gpa_policy_source src[5];
    char *data[4];
    char paths[4][512];
    size_t n = 0;
    for (size_t i = 0; i < 4; i++) {
        snprintf(paths[i], sizeof paths[i], "%s/%s", CLUSTER, files[i]);
        data[i] = check_slurp(paths[i], NULL);
        src[n++] = (gpa_policy_source){paths[i], data[i], data[i] ? strlen(data[i]) : 0};
    }
    if (extra) src[n++] = (gpa_policy_source){"zz-workloads.yaml", extra, strlen(extra)};
    gpa_policy *p = NULL;
    int rc = gpa_policy_load_sources(&p, src, n, err);
    for (size_t i = 0; i < 4; i++)
        free(data[i]);
    return rc == GPA_OK ? p : NULL;
}

#define WL_HDR                                                                                     \
    "apiVersion: gpu-admission.io/v1alpha1\nkind: GPUPolicy\nmetadata: {name: wl}\nspec:\n"        \
    "  workloads:\n"

typedef struct answer {
    int http;
    bool allowed;
    char *message;
    char *warnings; /* joined with \n */
    bool patch;
    const char *outcome;
    char *kind;
} answer;

static void answer_clear(answer *a)
{
    free(a->message);
    free(a->warnings);
    free(a->kind);
    memset(a, 0, sizeof *a);
}

static answer run(const gpa_policy *p, gpa_hook hook, const char *body)
{
    answer a = {0};
    gpa_review_result r;
    gpa_error err = {0};
    gpa_review_handle(&r, p, hook, body, strlen(body), &err);
    a.http = r.http_status;
    a.outcome = r.outcome;
    a.kind = r.kind ? strdup(r.kind) : NULL;
    cJSON *root = r.body ? cJSON_ParseWithLength(r.body, r.body_len) : NULL;
    const cJSON *resp = cJSON_GetObjectItemCaseSensitive(root, "response");
    a.allowed = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(resp, "allowed"));
    a.patch = cJSON_GetObjectItemCaseSensitive(resp, "patch") != NULL;
    const cJSON *st = cJSON_GetObjectItemCaseSensitive(resp, "status");
    const cJSON *msg = cJSON_GetObjectItemCaseSensitive(st ? st : root, "message");
    if (cJSON_IsString(msg)) a.message = strdup(msg->valuestring);
    const cJSON *w = cJSON_GetObjectItemCaseSensitive(resp, "warnings");
    size_t len = 1;
    const cJSON *x;
    cJSON_ArrayForEach(x, w)
        len += strlen(x->valuestring) + 1;
    if (w) {
        a.warnings = calloc(1, len);
        cJSON_ArrayForEach(x, w) {
            if (*a.warnings) strcat(a.warnings, "\n");
            strcat(a.warnings, x->valuestring);
        }
    }
    cJSON_Delete(root);
    gpa_review_result_clear(&r);
    return a;
}

/* An AdmissionReview for obj (JSON text) of group/kind; old may be NULL. */
static char *review_of(const char *group, const char *kind, const char *op, const char *ns,
                       const char *obj, const char *old, const char *extra)
{
    size_t n = strlen(obj) + (old ? strlen(old) : 0) + 1024;
    char *b = malloc(n);
    snprintf(b, n,
             "{\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":\"AdmissionReview\",\"request\":{"
             "\"uid\":\"u-1\",\"kind\":{\"group\":\"%s\",\"version\":\"v1\",\"kind\":\"%s\"},"
             "\"namespace\":\"%s\",\"operation\":\"%s\",\"object\":%s,\"oldObject\":%s%s}}",
             group, kind, ns, op, obj ? obj : "null", old ? old : "null", extra ? extra : "");
    return b;
}

#define GPU_TPL(labels)                                                                            \
    "{\"metadata\":{\"labels\":" labels "},\"spec\":{\"containers\":[{\"name\":\"c\","             \
    "\"image\":\"x\",\"resources\":{\"limits\":{\"nvidia.com/gpu\":1}}}]}}"
#define CPU_TPL                                                                                    \
    "{\"spec\":{\"containers\":[{\"name\":\"c\",\"image\":\"x\",\"resources\":{\"limits\":{"       \
    "\"cpu\":1}}}]}}"
#define DEPLOY(ns, replicas, tpl)                                                                  \
    "{\"apiVersion\":\"apps/v1\",\"kind\":\"Deployment\",\"metadata\":{\"name\":\"d\","            \
    "\"namespace\":\"" ns "\"},\"spec\":{\"replicas\":" replicas ",\"template\":" tpl "}}"

static void test_deployment(const gpa_policy *p)
{
    /* allowed: one warning line saying what the pods get, no patch */
    char *b = review_of("apps", "Deployment", "CREATE", "notebooks",
                        DEPLOY("notebooks", "2", GPU_TPL("{\"app\":\"nb\"}")), NULL, NULL);
    answer a = run(p, GPA_HOOK_VALIDATE, b);
    CHECK_INT(a.http, 200);
    CHECK(a.allowed);
    CHECK(!a.patch);
    CHECK_STR(a.warnings, "spec.template: pods get pool t4-shared (rule notebooks), "
                          "nvidia.com/gpu -> nvidia.com/gpu.shared");
    CHECK_STR(a.outcome, "allowed");
    CHECK_STR(a.kind, "Deployment");
    answer_clear(&a);
    /* the mutating hook never touches a workload */
    a = run(p, GPA_HOOK_MUTATE, b);
    CHECK(a.allowed);
    CHECK(!a.patch);
    CHECK(a.warnings == NULL);
    CHECK_STR(a.outcome, "skipped");
    answer_clear(&a);
    free(b);

    /* refused: the pod's own message prefixed with the template path */
    b = review_of("apps", "Deployment", "CREATE", "blocked-x",
                  DEPLOY("blocked-x", "1", GPU_TPL("{}")), NULL, NULL);
    a = run(p, GPA_HOOK_VALIDATE, b);
    CHECK(!a.allowed);
    CHECK_STR(a.message, "spec.template: denied by GPU policy rule blocked: GPUs are not "
                         "available in blocked-* namespaces; ask #gpu-platform for a quota");
    CHECK_STR(a.outcome, "denied");
    answer_clear(&a);
    free(b);
    /* dryRun gets the same answer */
    b = review_of("apps", "Deployment", "CREATE", "blocked-x",
                  DEPLOY("blocked-x", "1", GPU_TPL("{}")), NULL, ",\"dryRun\":true");
    a = run(p, GPA_HOOK_VALIDATE, b);
    CHECK(!a.allowed);
    CHECK_CONTAINS(a.message, "spec.template: denied by GPU policy rule blocked");
    answer_clear(&a);
    free(b);

    /* a non-GPU template: allowed silently */
    b = review_of("apps", "Deployment", "CREATE", "blocked-x", DEPLOY("blocked-x", "1", CPU_TPL),
                  NULL, NULL);
    a = run(p, GPA_HOOK_VALIDATE, b);
    CHECK(a.allowed);
    CHECK(a.warnings == NULL);
    CHECK(a.message == NULL);
    answer_clear(&a);
    free(b);

    /* UPDATE: the same template (replicas and labels changed) is not judged again */
    b = review_of(
        "apps", "Deployment", "UPDATE", "blocked-x",
        "{\"apiVersion\":\"apps/v1\",\"kind\":\"Deployment\",\"metadata\":{\"name\":\"d\","
        "\"labels\":{\"new\":\"1\"}},\"spec\":{\"replicas\":5,\"template\":" GPU_TPL("{}") "}}",
        DEPLOY("blocked-x", "1", GPU_TPL("{}")), NULL);
    a = run(p, GPA_HOOK_VALIDATE, b);
    CHECK(a.allowed);
    CHECK(a.message == NULL);
    CHECK_STR(a.outcome, "skipped");
    answer_clear(&a);
    free(b);
    /* ... but a changed template is */
    b = review_of("apps", "Deployment", "UPDATE", "blocked-x",
                  DEPLOY("blocked-x", "1", GPU_TPL("{\"v\":\"2\"}")),
                  DEPLOY("blocked-x", "1", GPU_TPL("{}")), NULL);
    a = run(p, GPA_HOOK_VALIDATE, b);
    CHECK(!a.allowed);
    CHECK_CONTAINS(a.message, "spec.template: denied by GPU policy rule blocked");
    answer_clear(&a);
    free(b);

    /* DELETE and the scale/status subresources: allowed silently */
    b = review_of("apps", "Deployment", "DELETE", "blocked-x", "null",
                  DEPLOY("blocked-x", "1", GPU_TPL("{}")), NULL);
    a = run(p, GPA_HOOK_VALIDATE, b);
    CHECK(a.allowed);
    CHECK_STR(a.outcome, "skipped");
    answer_clear(&a);
    free(b);
    b = review_of("apps", "Deployment", "UPDATE", "blocked-x",
                  DEPLOY("blocked-x", "1", GPU_TPL("{\"v\":\"3\"}")),
                  DEPLOY("blocked-x", "1", GPU_TPL("{}")), ",\"subResource\":\"status\"");
    a = run(p, GPA_HOOK_VALIDATE, b);
    CHECK(a.allowed);
    CHECK_STR(a.outcome, "skipped");
    answer_clear(&a);
    free(b);

    /* a review without request.kind: the object's own apiVersion and kind */
    b = malloc(4096);
    snprintf(b, 4096,
             "{\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":\"AdmissionReview\",\"request\":{"
             "\"uid\":\"u\",\"namespace\":\"blocked-x\",\"operation\":\"CREATE\",\"object\":%s}}",
             DEPLOY("blocked-x", "1", GPU_TPL("{}")));
    a = run(p, GPA_HOOK_VALIDATE, b);
    CHECK(!a.allowed);
    answer_clear(&a);
    free(b);
}

static void test_many_templates(const gpa_policy *p)
{
    /* a PyTorchJob: two templates, one refused; the other's line is not shown (refused) */
    const char *job =
        "{\"apiVersion\":\"kubeflow.org/v1\",\"kind\":\"PyTorchJob\",\"metadata\":{\"name\":\"j\"},"
        "\"spec\":{\"pytorchReplicaSpecs\":{\"Master\":{\"replicas\":1,\"template\":" CPU_TPL
        "},\"Worker\":{\"replicas\":3,\"template\":" GPU_TPL("{}") "}}}}";
    char *b = review_of("kubeflow.org", "PyTorchJob", "CREATE", "blocked-1", job, NULL, NULL);
    answer a = run(p, GPA_HOOK_VALIDATE, b);
    CHECK(!a.allowed);
    CHECK_CONTAINS(a.message, "spec.pytorchReplicaSpecs.Worker.template: denied by GPU policy");
    CHECK(strstr(a.message, "Master") == NULL);
    CHECK_STR(a.kind, "PyTorchJob");
    answer_clear(&a);
    free(b);

    /* 10,000 replica specs: a clear refusal naming the path, not 10,000 pod reviews */
    size_t n = 10000, cap = 512 + n * 128;
    char *obj = malloc(cap);
    size_t at = (size_t)snprintf(obj, cap,
                                 "{\"apiVersion\":\"kubeflow.org/v1\",\"kind\":\"TFJob\","
                                 "\"spec\":{\"tfReplicaSpecs\":{");
    for (size_t i = 0; i < n; i++)
        at += (size_t)snprintf(obj + at, cap - at, "%s\"W%zu\":{\"template\":" CPU_TPL "}",
                               i ? "," : "", i);
    snprintf(obj + at, cap - at, "}}}");
    b = review_of("kubeflow.org", "TFJob", "CREATE", "default", obj, NULL, NULL);
    a = run(p, GPA_HOOK_VALIDATE, b);
    CHECK_INT(a.http, 200);
    CHECK(!a.allowed);
    CHECK_CONTAINS(a.message, "spec.tfReplicaSpecs.W256.template: more than 256 pod templates");
    answer_clear(&a);
    free(b);
    free(obj);

    /* a template of the wrong type: refused naming the path */
    b = review_of("apps", "Deployment", "CREATE", "default",
                  "{\"apiVersion\":\"apps/v1\",\"kind\":\"Deployment\",\"spec\":{\"template\":7}}",
                  NULL, NULL);
    a = run(p, GPA_HOOK_VALIDATE, b);
    CHECK(!a.allowed);
    CHECK_STR(a.message, "spec.template: expected an object (a pod template), got number");
    answer_clear(&a);
    free(b);
    /* lists of lists */
    b = review_of("ray.io", "RayCluster", "CREATE", "default",
                  "{\"apiVersion\":\"ray.io/v1\",\"kind\":\"RayCluster\",\"spec\":{"
                  "\"workerGroupSpecs\":[[[{\"template\":{}}]]]}}",
                  NULL, NULL);
    a = run(p, GPA_HOOK_VALIDATE, b);
    CHECK(!a.allowed);
    CHECK_STR(a.message, "spec.workerGroupSpecs[0]: expected an object, got list");
    answer_clear(&a);
    free(b);
    /* no template at the path: allowed silently */
    b = review_of(
        "batch", "CronJob", "CREATE", "blocked-x",
        "{\"apiVersion\":\"batch/v1\",\"kind\":\"CronJob\",\"spec\":{\"schedule\":\"*\"}}", NULL,
        NULL);
    a = run(p, GPA_HOOK_VALIDATE, b);
    CHECK(a.allowed);
    CHECK_STR(a.outcome, "skipped");
    answer_clear(&a);
    free(b);
}

static void test_policy_block(void)
{
    gpa_error err = {0};
    /* warn: the refusal becomes a warning line */
    gpa_policy *p = load(WL_HDR "    enforcement: warn\n", &err);
    CHECK(p != NULL);
    char *b = review_of(
        "batch", "Job", "CREATE", "blocked-x",
        "{\"apiVersion\":\"batch/v1\",\"kind\":\"Job\",\"spec\":{\"template\":" GPU_TPL("{}") "}}",
        NULL, NULL);
    answer a = run(p, GPA_HOOK_VALIDATE, b);
    CHECK(a.allowed);
    CHECK_CONTAINS(a.warnings, "spec.template: denied by GPU policy rule blocked");
    CHECK_STR(a.outcome, "warned");
    answer_clear(&a);
    /* warn with more than 256 templates (a fuzz finding): the refusal line comes first and
     * the answer stays at 16 lines plus the "... and N more" line, N counting every line not
     * shown (15 allowed templates shown of the 256 judged) */
    {
        size_t n = 300, cap = 512 + n * 256;
        char *obj = malloc(cap);
        size_t at = (size_t)snprintf(obj, cap,
                                     "{\"apiVersion\":\"kubeflow.org/v1\",\"kind\":\"TFJob\","
                                     "\"spec\":{\"tfReplicaSpecs\":{");
        for (size_t i = 0; i < n; i++)
            at += (size_t)snprintf(obj + at, cap - at,
                                   "%s\"W%zu\":{\"template\":" GPU_TPL("{}") "}", i ? "," : "", i);
        snprintf(obj + at, cap - at, "}}}");
        char *bb = review_of("kubeflow.org", "TFJob", "CREATE", "default", obj, NULL, NULL);
        a = run(p, GPA_HOOK_VALIDATE, bb);
        CHECK(a.allowed);
        size_t lines = 1;
        for (const char *q = a.warnings ? a.warnings : ""; *q; q++)
            lines += *q == '\n';
        CHECK_INT(lines, 17);
        CHECK(a.warnings &&
              strncmp(a.warnings, "spec.tfReplicaSpecs.W256.template: more than 256",
                      strlen("spec.tfReplicaSpecs.W256.template: more than 256")) == 0);
        const char *last = a.warnings ? strrchr(a.warnings, '\n') : NULL;
        CHECK(last != NULL);
        if (last) CHECK_STR(last + 1, "... and 241 more template lines");
        answer_clear(&a);
        free(bb);
        free(obj);
    }
    gpa_policy_unref(p);
    /* off: workloads are not judged */
    p = load(WL_HDR "    enforcement: \"off\"\n", &err);
    CHECK(p != NULL);
    a = run(p, GPA_HOOK_VALIDATE, b);
    CHECK(a.allowed);
    CHECK(a.warnings == NULL);
    CHECK_STR(a.outcome, "skipped");
    answer_clear(&a);
    char *d = gpa_policy_describe(p);
    CHECK_CONTAINS(d, "workloads:   enforcement off  (zz-workloads.yaml:6)");
    free(d);
    gpa_policy_unref(p);
    free(b);

    /* a kind the policy adds */
    p = load(WL_HDR "    kinds:\n      - apiGroup: example.com\n        kind: TrainingJob\n"
                    "        templates: [\"spec.workers.*.template\", spec.launcher]\n",
             &err);
    CHECK(p != NULL);
    CHECK_INT(gpa_workload_kind_known(p, "example.com/v2", "TrainingJob"), 1);
    CHECK_INT(gpa_workload_kind_known(NULL, "example.com/v2", "TrainingJob"), 0);
    b = review_of("example.com", "TrainingJob", "CREATE", "blocked-x",
                  "{\"apiVersion\":\"example.com/v1\",\"kind\":\"TrainingJob\",\"spec\":{"
                  "\"launcher\":" CPU_TPL ",\"workers\":[{\"template\":" CPU_TPL
                  "},{\"template\":" GPU_TPL("{}") "}]}}",
                  NULL, NULL);
    a = run(p, GPA_HOOK_VALIDATE, b);
    CHECK(!a.allowed);
    CHECK_STR(a.message, "spec.workers[1].template: denied by GPU policy rule blocked: GPUs are "
                         "not available in blocked-* namespaces; ask #gpu-platform for a quota");
    answer_clear(&a);
    /* without the block the same object is a kind nobody polices */
    gpa_policy *plain = load(NULL, &err);
    a = run(plain, GPA_HOOK_VALIDATE, b);
    CHECK(a.allowed);
    CHECK_STR(a.outcome, "skipped");
    answer_clear(&a);
    CHECK(strcmp(gpa_policy_revision(p), gpa_policy_revision(plain)) != 0);
    gpa_policy_unref(plain);
    free(b);
    d = gpa_policy_describe(p);
    CHECK_CONTAINS(d, "workloads:   enforcement deny (default)");
    CHECK_CONTAINS(d, "kind example.com/TrainingJob: spec.workers.*.template, spec.launcher  "
                      "(zz-workloads.yaml:7)");
    free(d);
    gpa_policy_unref(p);

    /* loader errors, file:line:col */
    struct {
        const char *yaml, *want;
    } bad[] = {
        {WL_HDR "    enforcement: audit\n",
         "zz-workloads.yaml:6:18: workloads.enforcement: invalid value \"audit\" (one of: deny, "
         "warn, off)"},
        {WL_HDR "    kinds: [{apiGroup: x.io, kind: A, templates: [\"a..b\"]}]\n",
         "zz-workloads.yaml:6:51: template path \"a..b\": a template path has an empty step"},
        {WL_HDR "    kinds: [{apiGroup: x.io, kind: A, templates: [\"a.b*\"]}]\n",
         "`*` must be a whole step"},
        {WL_HDR "    kinds: [{apiGroup: x.io, kind: A, templates: [\"a[0].t\"]}]\n", "not [index]"},
        {WL_HDR "    kinds: [{apiGroup: x.io, kind: A, templates: [\"a.b.c.d.e.f.g.h.i.j.k.l.m.n.o."
                "p.q\"]}]\n",
         "more than 16 steps"},
        {WL_HDR "    kinds: [{apiGroup: x.io, kind: A, templates: []}]\n",
         "templates: must not be empty"},
        {WL_HDR "    kinds: [{apiGroup: \"\", kind: Pod, templates: [spec]}]\n",
         "kind Pod is judged by the Pod webhooks"},
        {WL_HDR "    kinds: [{apiGroup: x.io/v1, kind: A, templates: [spec]}]\n",
         "zz-workloads.yaml:6:24: apiGroup \"x.io/v1\" is an apiVersion: write the group only"},
        {WL_HDR "    kinds: [{kind: A, templates: [spec]}]\n", "apiGroup is required"},
        {WL_HDR "    kinds: [{apiGroup: x.io, kind: A, templates: [s]}, {apiGroup: x.io, kind: A, "
                "templates: [t]}]\n",
         "zz-workloads.yaml:6:56: workloads.kinds: x.io/A is already listed at "
         "zz-workloads.yaml:6:13"},
        {WL_HDR "    colour: red\n", "spec.workloads: unknown key \"colour\""},
        {WL_HDR "    kinds: {a: b}\n", "spec.workloads.kinds: expected a list"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        gpa_error e = {0};
        gpa_policy *q = load(bad[i].yaml, &e);
        CHECK(q == NULL);
        CHECK_CONTAINS(e.message, bad[i].want);
        gpa_policy_unref(q);
    }
    /* at most once across all files */
    gpa_policy_source two[2] = {
        {"a.yaml", WL_HDR "    enforcement: warn\n", strlen(WL_HDR "    enforcement: warn\n")},
        {"b.yaml", WL_HDR "    enforcement: deny\n", strlen(WL_HDR "    enforcement: deny\n")},
    };
    gpa_error e = {0};
    gpa_policy *q = NULL;
    CHECK_INT(gpa_policy_load_sources(&q, two, 2, &e), GPA_EPOLICY);
    CHECK_CONTAINS(e.message, "b.yaml:6:5: workloads.enforcement is already set at a.yaml:6:5");
}

int main(void)
{
    gpa_error err = {0};
    gpa_policy *p = load(NULL, &err);
    if (!p) {
        fprintf(stderr, "cannot load %s: %s\n", CLUSTER, err.message);
        return 1;
    }
    test_deployment(p);
    test_many_templates(p);
    test_policy_block();
    gpa_policy_unref(p);
    return check_done();
}
