/*
 * bench_engine.c - engine throughput through the AdmissionReview codec (gpa_review_handle):
 * request bytes -> parse -> decide -> response bytes, single thread, for three cases:
 *   a) a realistic ~3 KB GPU pod review (as the API server sends it: defaulted fields,
 *      requests+limits, default tolerations, projected token volume) through policies/;
 *   b) the same pod without GPUs;
 *   c) a generated 1,000-rule / 100-pool policy set, with a pod that matches rule 996;
 *   d) a Deployment whose template is (a)'s pod, on the validating hook (issue 16: each
 *      template mutated, then the mutated pod validated; never patched);
 *   e) (a)'s pod as the mutating hook leaves it, on the validating hook (since the shared-pool
 *      guard, (a)'s raw pod could land on t4-shared's nodes and is refused there);
 *   f) a DRA ResourceClaimTemplate as the API server sends it (NVIDIA's gpu-test1 template
 *      with a gpu-memory annotation, issue 24) through test/golden/policies/dra: placed in a
 *      MIG pool (class rewritten, selectors appended);
 *   g) a 1-GPU pod with the same annotation in the same namespace through the same set (the
 *      pod beside which (f) is measured).
 * Prints reviews/s and us/review per case, the ratios (d)/(a) and (d)/(e) (a Deployment review
 * is held to at most 1.3x its pod's review; callgrind instruction counts of --only a / --only d
 * are the stable measure), and the peak RSS of `gpu-admission review mutate` on (c)
 * (ru_maxrss of a child via wait4).
 *
 * `--check` runs a few iterations and asserts only that each decision is the expected one
 * (ctest label "bench"): timing is printed, never asserted, because a shared CI machine
 * cannot promise speed. Must never: time anything but gpa_review_handle (+ result clear).
 *
 * `--evict KB` adds a second figure per case: the review timed alone after KB of other memory
 * was written between any two reviews, as happens inside the server, where TLS, the kernel's
 * loopback path and the load generator run on the same cores between two requests (and, on a
 * shared VM, other tenants share the last-level cache). The hot loop above measures the
 * review with its code, policy and heap in cache; this one measures what the cache misses
 * add. Each review is timed with CLOCK_MONOTONIC (vDSO, ~25 ns), the eviction never.
 *
 * usage: bench_engine [--check] [--iterations N] [--only a|b|c|d|e|f|g] [--cli PATH]
 *                     [--policies DIR] [--dump DIR] [--evict KB]
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "gpu_admission/engine.h"
#include "gpu_admission/policy.h"
#include "gpu_admission/review.h"

#ifndef GPA_SOURCE_DIR
#define GPA_SOURCE_DIR "."
#endif

static int failures;

#define EXPECT(cond, ...)                                                                          \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            failures++;                                                                            \
            fprintf(stderr, "bench_engine: FAILED %s: ", #cond);                                   \
            fprintf(stderr, __VA_ARGS__);                                                          \
            fputc('\n', stderr);                                                                   \
        }                                                                                          \
    } while (0)

/* ---- the requests -------------------------------------------------------------------------- */

/* A pod as kube-apiserver passes it to a mutating webhook on CREATE from a Deployment's
 * ReplicaSet: every field defaulted (probes, dnsPolicy, tolerations, token volume, ...),
 * managedFields left out. The %s are: namespace (x2), extra annotations, GPU limits, GPU
 * requests, GPU toleration. */
static const char *POD_FMT =
    "{\"kind\":\"AdmissionReview\",\"apiVersion\":\"admission.k8s.io/v1\",\"request\":{"
    "\"uid\":\"7f0b2a4e-4c1e-4b8f-9d55-2f7c1a9e3b10\","
    "\"kind\":{\"group\":\"\",\"version\":\"v1\",\"kind\":\"Pod\"},"
    "\"resource\":{\"group\":\"\",\"version\":\"v1\",\"resource\":\"pods\"},"
    "\"requestKind\":{\"group\":\"\",\"version\":\"v1\",\"kind\":\"Pod\"},"
    "\"requestResource\":{\"group\":\"\",\"version\":\"v1\",\"resource\":\"pods\"},"
    "\"namespace\":\"%s\",\"operation\":\"CREATE\","
    "\"userInfo\":{\"username\":\"system:serviceaccount:kube-system:replicaset-controller\","
    "\"uid\":\"0b7f3c52-9a0e-4d1b-8f57-3b2f1c0d9e44\",\"groups\":[\"system:serviceaccounts\","
    "\"system:serviceaccounts:kube-system\",\"system:authenticated\"]},"
    "\"object\":{\"kind\":\"Pod\",\"apiVersion\":\"v1\",\"metadata\":{"
    "\"generateName\":\"llm-serve-6d9f7c8b5d-\",\"namespace\":\"%s\","
    "\"uid\":\"c3e9a1f2-5b7d-4e8a-9c0f-1d2e3f4a5b6c\",\"creationTimestamp\":null,"
    "\"labels\":{\"app.kubernetes.io/name\":\"llm-serve\",\"app.kubernetes.io/component\":"
    "\"inference\",\"app.kubernetes.io/part-of\":\"chat\",\"pod-template-hash\":\"6d9f7c8b5d\"},"
    "\"annotations\":{\"prometheus.io/scrape\":\"true\",\"prometheus.io/port\":\"8000\"%s},"
    "\"ownerReferences\":[{\"apiVersion\":\"apps/v1\",\"kind\":\"ReplicaSet\",\"name\":"
    "\"llm-serve-6d9f7c8b5d\",\"uid\":\"5a4b3c2d-1e0f-4a9b-8c7d-6e5f4a3b2c1d\",\"controller\":"
    "true,\"blockOwnerDeletion\":true}]},"
    "\"spec\":{\"volumes\":[{\"name\":\"model-cache\",\"emptyDir\":{\"sizeLimit\":\"20Gi\"}},"
    "{\"name\":\"kube-api-access-x7k2p\",\"projected\":{\"sources\":[{\"serviceAccountToken\":{"
    "\"expirationSeconds\":3607,\"path\":\"token\"}},{\"configMap\":{\"name\":"
    "\"kube-root-ca.crt\",\"items\":[{\"key\":\"ca.crt\",\"path\":\"ca.crt\"}]}},"
    "{\"downwardAPI\":{\"items\":[{\"path\":\"namespace\",\"fieldRef\":{\"apiVersion\":\"v1\","
    "\"fieldPath\":\"metadata.namespace\"}}]}}],\"defaultMode\":420}}],"
    "\"containers\":[{\"name\":\"server\",\"image\":"
    "\"nvcr.io/nvidia/tritonserver:24.05-py3\",\"command\":[\"tritonserver\"],\"args\":["
    "\"--model-repository=/models\",\"--http-port=8000\",\"--grpc-port=8001\","
    "\"--metrics-port=8002\"],\"ports\":[{\"name\":\"http\",\"containerPort\":8000,"
    "\"protocol\":\"TCP\"},{\"name\":\"grpc\",\"containerPort\":8001,\"protocol\":\"TCP\"},"
    "{\"name\":\"metrics\",\"containerPort\":8002,\"protocol\":\"TCP\"}],\"env\":["
    "{\"name\":\"MODEL_NAME\",\"value\":\"llama-3-8b-instruct\"},{\"name\":\"LOG_LEVEL\","
    "\"value\":\"info\"},{\"name\":\"POD_NAME\",\"valueFrom\":{\"fieldRef\":{\"apiVersion\":"
    "\"v1\",\"fieldPath\":\"metadata.name\"}}},{\"name\":\"OMP_NUM_THREADS\",\"value\":\"4\"}],"
    "\"resources\":{\"limits\":{\"cpu\":\"8\",\"memory\":\"32Gi\"%s},\"requests\":{\"cpu\":\"4\","
    "\"memory\":\"24Gi\"%s}},\"volumeMounts\":[{\"name\":\"model-cache\",\"mountPath\":"
    "\"/models\"},{\"name\":\"kube-api-access-x7k2p\",\"readOnly\":true,\"mountPath\":"
    "\"/var/run/secrets/kubernetes.io/serviceaccount\"}],\"livenessProbe\":{\"httpGet\":{"
    "\"path\":\"/v2/health/live\",\"port\":\"http\",\"scheme\":\"HTTP\"},"
    "\"initialDelaySeconds\":30,\"timeoutSeconds\":1,\"periodSeconds\":10,"
    "\"successThreshold\":1,\"failureThreshold\":3},\"readinessProbe\":{\"httpGet\":{\"path\":"
    "\"/v2/health/ready\",\"port\":\"http\",\"scheme\":\"HTTP\"},\"timeoutSeconds\":1,"
    "\"periodSeconds\":5,\"successThreshold\":1,\"failureThreshold\":3},"
    "\"terminationMessagePath\":\"/dev/termination-log\",\"terminationMessagePolicy\":\"File\","
    "\"imagePullPolicy\":\"IfNotPresent\",\"securityContext\":{\"allowPrivilegeEscalation\":"
    "false,\"capabilities\":{\"drop\":[\"ALL\"]}}}],\"restartPolicy\":\"Always\","
    "\"terminationGracePeriodSeconds\":30,\"dnsPolicy\":\"ClusterFirst\",\"serviceAccountName\":"
    "\"default\",\"serviceAccount\":\"default\",\"securityContext\":{\"runAsNonRoot\":true,"
    "\"fsGroup\":1000},\"schedulerName\":\"default-scheduler\",\"tolerations\":[{\"key\":"
    "\"node.kubernetes.io/not-ready\",\"operator\":\"Exists\",\"effect\":\"NoExecute\","
    "\"tolerationSeconds\":300},{\"key\":\"node.kubernetes.io/unreachable\",\"operator\":"
    "\"Exists\",\"effect\":\"NoExecute\",\"tolerationSeconds\":300}%s],\"priority\":0,"
    "\"enableServiceLinks\":true,\"preemptionPolicy\":\"PreemptLowerPriority\"},"
    "\"status\":{}},\"oldObject\":null,\"dryRun\":false,\"options\":{\"kind\":"
    "\"CreateOptions\",\"apiVersion\":\"meta.k8s.io/v1\",\"fieldManager\":"
    "\"kube-controller-manager\"}}}";

/* POD_FMT is a constant of this file, not user input. */
#pragma GCC diagnostic ignored "-Wformat-nonliteral"
static char *make_review(const char *ns, int gpus, const char *extra_annotations)
{
    char res[64] = "";
    if (gpus > 0) snprintf(res, sizeof res, ",\"nvidia.com/gpu\":\"%d\"", gpus);
    const char *tol =
        gpus > 0 ? ",{\"key\":\"nvidia.com/gpu\",\"operator\":\"Exists\",\"effect\":\"NoSchedule\"}"
                 : "";
    size_t cap = strlen(POD_FMT) + 1024;
    char *s = malloc(cap);
    if (s) snprintf(s, cap, POD_FMT, ns, ns, extra_annotations, res, res, tol);
    return s;
}

/* ---- the generated policy set (c) ---------------------------------------------------------- */

#define GEN_POOLS 100
#define GEN_RULES 1000
#define LATE_RULE 996 /* 996 % 100 = 96, a mig pool (96 % 4 == 0) */

static int write_generated_policy(const char *dir)
{
    char path[4200];
    if (snprintf(path, sizeof path, "%.4000s/generated.yaml", dir) >= (int)sizeof path) return -1;
    FILE *f = fopen(path, "w");
    if (!f) return -1;
    fprintf(f, "apiVersion: gpu-admission.io/v1alpha1\nkind: GPUPolicy\n"
               "metadata: {name: generated}\nspec:\n  tenancy:\n    tenants:\n");
    /* 100 tenants of 10 teams each: tenant t owns team-(10t)..team-(10t+9). */
    for (int t = 0; t < GEN_RULES / 10; t++) {
        fprintf(f, "      - name: tenant-%d\n        trust: %s\n        namespaces: [", t,
                t % 2 ? "untrusted" : "trusted");
        for (int k = 0; k < 10; k++)
            fprintf(f, "%s\"team-%d-*\"", k ? ", " : "", t * 10 + k);
        fprintf(f, "]\n");
    }
    fprintf(f, "    default: {trust: untrusted}\n  pools:\n");
    for (int i = 0; i < GEN_POOLS; i++) {
        fprintf(f, "    - name: pool-%d\n", i);
        switch (i % 4) {
        case 0:
            fprintf(f,
                    "      nodeSelector: {nvidia.com/gpu.product: NVIDIA-A100-SXM4-80GB, "
                    "gpu-admission.io/rack: r%d}\n"
                    "      tolerations: [{key: nvidia.com/gpu, operator: Exists, "
                    "effect: NoSchedule}]\n"
                    "      sharing: mig\n"
                    "      mig: {strategy: mixed, gpu: A100-80GB}\n",
                    i);
            break;
        case 1:
            fprintf(f,
                    "      nodeSelector: {gpu-admission.io/pool: pool-%d}\n"
                    "      tolerations: [{key: gpu-admission.io/shared, operator: Exists, "
                    "effect: NoSchedule}]\n"
                    "      sharing: time-slicing\n"
                    "      timeSlicing: {resource: nvidia.com/gpu.shared, replicas: 4}\n"
                    "      allowUntrusted: true\n",
                    i);
            break;
        case 2:
            fprintf(f,
                    "      nodeSelector: {nvidia.com/gpu.product: NVIDIA-H100-80GB-HBM3, "
                    "gpu-admission.io/rack: r%d}\n"
                    "      tolerations: [{key: nvidia.com/gpu, operator: Exists, "
                    "effect: NoSchedule}]\n"
                    "      sharing: exclusive\n"
                    "      runtimeClassName: nvidia\n"
                    "      topology: {islandLabel: nvidia.com/gpu.clique, gpusPerNode: 8}\n",
                    i);
            break;
        default:
            fprintf(f,
                    "      nodeSelector: {nvidia.com/gpu.product: NVIDIA-L40S, "
                    "gpu-admission.io/rack: r%d}\n"
                    "      sharing: exclusive\n",
                    i);
        }
    }
    fprintf(f, "  rules:\n");
    for (int r = 0; r < GEN_RULES; r++) {
        fprintf(f,
                "    - name: rule-%d\n"
                "      match: {namespaces: [\"team-%d-*\"], labels: {app.kubernetes.io/"
                "component: inference}, gpus: {max: %d}}\n",
                r, r, r % 4 == 2 ? 8 : 1);
        if (r % 50 == 49)
            fprintf(f, "      deny: \"team %d has no GPU quota\"\n", r);
        else
            fprintf(f, "      place: {pool: pool-%d}\n", r % GEN_POOLS);
    }
    fprintf(f, "  unmatched: allow\n");
    return fclose(f) == 0 ? 0 : -1;
}

/* ---- timing -------------------------------------------------------------------------------- */

static double clock_s(clockid_t id)
{
    struct timespec ts;
    clock_gettime(id, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

typedef struct bench_case {
    const char *id;
    const char *what;
    const gpa_policy *policy;
    char *body;
    size_t len;
    gpa_hook hook;
    /* expectations */
    const char *outcome;
    const char *rule; /* auditAnnotations rule, NULL: none expected */
    const char *must_contain;
    double target;       /* reviews/s the task asks for */
    const char *warning; /* a warning line must contain this (NULL: none checked) */
    double cpu_us;       /* measured by run_case */
} bench_case;

static void check_once(const bench_case *c)
{
    gpa_review_result r;
    gpa_error err = {0};
    int rc = gpa_review_handle(&r, c->policy, c->hook, c->body, c->len, &err);
    EXPECT(rc == GPA_OK, "case %s: rc %d (%s)", c->id, rc, err.message);
    EXPECT(r.outcome && strcmp(r.outcome, c->outcome) == 0, "case %s: outcome %s, expected %s",
           c->id, r.outcome ? r.outcome : "(null)", c->outcome);
    cJSON *resp = r.body ? cJSON_Parse(r.body) : NULL;
    cJSON *response = cJSON_GetObjectItemCaseSensitive(resp, "response");
    cJSON *aa = cJSON_GetObjectItemCaseSensitive(response, "auditAnnotations");
    const char *rule = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(aa, "rule"));
    if (c->rule)
        EXPECT(rule && strcmp(rule, c->rule) == 0, "case %s: matched rule %s, expected %s", c->id,
               rule ? rule : "(none)", c->rule);
    else
        EXPECT(rule == NULL, "case %s: matched rule %s, expected none", c->id, rule);
    if (c->must_contain) {
        char *patch = r.decision.patch ? cJSON_PrintUnformatted(r.decision.patch) : NULL;
        EXPECT(patch && strstr(patch, c->must_contain), "case %s: patch lacks %s", c->id,
               c->must_contain);
        free(patch);
    }
    if (!c->rule && strcmp(c->outcome, "allowed") == 0)
        EXPECT(!cJSON_GetObjectItemCaseSensitive(response, "patch"), "case %s: patched", c->id);
    if (c->warning) {
        char *w = cJSON_PrintUnformatted(cJSON_GetObjectItemCaseSensitive(response, "warnings"));
        EXPECT(w && strstr(w, c->warning), "case %s: warnings %s lack %s", c->id, w ? w : "(none)",
               c->warning);
        free(w);
    }
    cJSON_Delete(resp);
    gpa_review_result_clear(&r);
}

static void run_case(bench_case *c, long iterations)
{
    check_once(c);
    /* warm-up: caches, allocator arenas */
    for (long i = 0; i < iterations / 10 + 1; i++) {
        gpa_review_result r;
        gpa_review_handle(&r, c->policy, c->hook, c->body, c->len, NULL);
        gpa_review_result_clear(&r);
    }
    size_t out_bytes = 0;
    /* Wall time and this thread's CPU time: on a shared machine the run queue inflates wall
     * time; CPU time is what one core spends per review. */
    double w0 = clock_s(CLOCK_MONOTONIC), c0 = clock_s(CLOCK_THREAD_CPUTIME_ID);
    for (long i = 0; i < iterations; i++) {
        gpa_review_result r;
        gpa_review_handle(&r, c->policy, c->hook, c->body, c->len, NULL);
        out_bytes = r.body_len;
        gpa_review_result_clear(&r);
    }
    double wall = clock_s(CLOCK_MONOTONIC) - w0, cpu = clock_s(CLOCK_THREAD_CPUTIME_ID) - c0;
    double rate = cpu > 0 ? (double)iterations / cpu : 0;
    c->cpu_us = cpu * 1e6 / (double)iterations;
    printf("(%s) %-44s %5zu B in, %4zu B out: %8.0f reviews/s per core  %7.2f us/review cpu "
           "(%7.2f wall)  target >= %.0f/s: %s\n",
           c->id, c->what, c->len, out_bytes, rate, cpu * 1e6 / (double)iterations,
           wall * 1e6 / (double)iterations, c->target, rate >= c->target ? "met" : "MISSED");
}

/* (d): the AdmissionReview kube-apiserver sends for `kubectl apply` of a Deployment whose pod
 * template is the pod of pod_review (its metadata labels/annotations and spec), with the
 * fields the API server defaults on a Deployment. */
/* (f): the review of NVIDIA's quickstart gpu-test1 ResourceClaimTemplate, with the
 * gpu-memory annotation an inference team adds, as kube-apiserver sends it for a CREATE. */
static char *make_claim_review(const char *ns)
{
    static const char fmt[] =
        "{\"kind\":\"AdmissionReview\",\"apiVersion\":\"admission.k8s.io/v1\",\"request\":{"
        "\"uid\":\"2e3d4c5b-6f70-4b8c-9dae-1f2a3b4c5d6e\","
        "\"kind\":{\"group\":\"resource.k8s.io\",\"version\":\"v1\",\"kind\":"
        "\"ResourceClaimTemplate\"},"
        "\"resource\":{\"group\":\"resource.k8s.io\",\"version\":\"v1\",\"resource\":"
        "\"resourceclaimtemplates\"},"
        "\"requestKind\":{\"group\":\"resource.k8s.io\",\"version\":\"v1\",\"kind\":"
        "\"ResourceClaimTemplate\"},"
        "\"requestResource\":{\"group\":\"resource.k8s.io\",\"version\":\"v1\","
        "\"resource\":\"resourceclaimtemplates\"},"
        "\"name\":\"single-gpu\",\"namespace\":\"%s\",\"operation\":\"CREATE\","
        "\"userInfo\":{\"username\":\"alice@example.com\",\"groups\":[\"system:authenticated\"]},"
        "\"object\":{\"apiVersion\":\"resource.k8s.io/v1\",\"kind\":\"ResourceClaimTemplate\","
        "\"metadata\":{\"name\":\"single-gpu\",\"namespace\":\"%s\","
        "\"uid\":\"8a7b6c5d-4e3f-4a1b-9c8d-7e6f5a4b3c2d\",\"creationTimestamp\":null,"
        "\"annotations\":{\"gpu-admission.io/gpu-memory\":\"8Gi\","
        "\"kubectl.kubernetes.io/last-applied-configuration\":\"{}\"}},"
        "\"spec\":{\"metadata\":{\"creationTimestamp\":null},\"spec\":{\"devices\":{"
        "\"requests\":[{\"name\":\"gpu\",\"exactly\":{\"deviceClassName\":\"gpu.nvidia.com\","
        "\"allocationMode\":\"ExactCount\",\"count\":1}}]}}}},"
        "\"oldObject\":null,\"dryRun\":false,\"options\":{\"kind\":\"CreateOptions\","
        "\"apiVersion\":\"meta.k8s.io/v1\",\"fieldManager\":\"kubectl-client-side-apply\"}}}";
    size_t cap = sizeof fmt + 2 * strlen(ns);
    char *s = malloc(cap);
    if (s) snprintf(s, cap, fmt, ns, ns);
    return s;
}

/* The review the validating webhook gets for pod_review's pod: the pod as the mutating
 * webhook leaves it (what the API server stores and validates). */
static char *make_mutated_review(const gpa_policy *p, const char *pod_review)
{
    cJSON *pr = pod_review ? cJSON_Parse(pod_review) : NULL;
    cJSON *rq = cJSON_GetObjectItemCaseSensitive(pr, "request");
    cJSON *pod = cJSON_GetObjectItemCaseSensitive(rq, "object");
    gpa_request req = {.namespace_ =
                           cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(rq, "namespace")),
                       .op = GPA_OP_CREATE,
                       .object = pod};
    gpa_decision d;
    gpa_error err = {0};
    char *out = NULL;
    if (pod && gpa_engine_mutate(&d, p, &req, &err) == GPA_OK) {
        if (d.allowed && d.mutated) {
            cJSON_ReplaceItemInObjectCaseSensitive(rq, "object", d.mutated);
            d.mutated = NULL; /* now the review's */
            out = cJSON_PrintUnformatted(pr);
        }
        gpa_decision_clear(&d);
    }
    cJSON_Delete(pr);
    return out;
}

static char *make_deployment_review(const char *pod_review)
{
    cJSON *pr = cJSON_Parse(pod_review);
    cJSON *pod =
        cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(pr, "request"), "object");
    cJSON *pmd = cJSON_GetObjectItemCaseSensitive(pod, "metadata");
    const char *ns = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(pmd, "namespace"));
    cJSON *labels = cJSON_Duplicate(cJSON_GetObjectItemCaseSensitive(pmd, "labels"), 1);
    cJSON_DeleteItemFromObjectCaseSensitive(labels, "pod-template-hash");
    cJSON *r = cJSON_CreateObject();
    cJSON_AddStringToObject(r, "kind", "AdmissionReview");
    cJSON_AddStringToObject(r, "apiVersion", "admission.k8s.io/v1");
    cJSON *req = cJSON_AddObjectToObject(r, "request");
    cJSON_AddStringToObject(req, "uid", "1d2c3b4a-5e6f-4a7b-8c9d-0e1f2a3b4c5d");
    cJSON *k = cJSON_AddObjectToObject(req, "kind");
    cJSON_AddStringToObject(k, "group", "apps");
    cJSON_AddStringToObject(k, "version", "v1");
    cJSON_AddStringToObject(k, "kind", "Deployment");
    cJSON *res = cJSON_AddObjectToObject(req, "resource");
    cJSON_AddStringToObject(res, "group", "apps");
    cJSON_AddStringToObject(res, "version", "v1");
    cJSON_AddStringToObject(res, "resource", "deployments");
    cJSON_AddItemToObject(req, "requestKind", cJSON_Duplicate(k, 1));
    cJSON_AddItemToObject(req, "requestResource", cJSON_Duplicate(res, 1));
    cJSON_AddStringToObject(req, "name", "llm-serve");
    cJSON_AddStringToObject(req, "namespace", ns);
    cJSON_AddStringToObject(req, "operation", "CREATE");
    cJSON *ui = cJSON_AddObjectToObject(req, "userInfo");
    cJSON_AddStringToObject(ui, "username", "alice@example.com");
    cJSON *groups = cJSON_AddArrayToObject(ui, "groups");
    cJSON_AddItemToArray(groups, cJSON_CreateString("ml-platform-devs"));
    cJSON_AddItemToArray(groups, cJSON_CreateString("system:authenticated"));
    cJSON *d = cJSON_AddObjectToObject(req, "object");
    cJSON_AddStringToObject(d, "kind", "Deployment");
    cJSON_AddStringToObject(d, "apiVersion", "apps/v1");
    cJSON *md = cJSON_AddObjectToObject(d, "metadata");
    cJSON_AddStringToObject(md, "name", "llm-serve");
    cJSON_AddStringToObject(md, "namespace", ns);
    cJSON_AddStringToObject(md, "uid", "9e8d7c6b-5a4f-4e3d-2c1b-0a9f8e7d6c5b");
    cJSON_AddNumberToObject(md, "generation", 1);
    cJSON_AddNullToObject(md, "creationTimestamp");
    cJSON_AddItemToObject(md, "labels", cJSON_Duplicate(labels, 1));
    cJSON *ann = cJSON_AddObjectToObject(md, "annotations");
    cJSON_AddStringToObject(ann, "kubectl.kubernetes.io/last-applied-configuration", "{}");
    cJSON *sp = cJSON_AddObjectToObject(d, "spec");
    cJSON_AddNumberToObject(sp, "replicas", 2);
    cJSON *sel = cJSON_AddObjectToObject(sp, "selector");
    cJSON_AddItemToObject(sel, "matchLabels", labels);
    cJSON *tm = cJSON_AddObjectToObject(sp, "template");
    cJSON *tmd = cJSON_AddObjectToObject(tm, "metadata");
    cJSON_AddNullToObject(tmd, "creationTimestamp");
    cJSON_AddItemToObject(tmd, "labels",
                          cJSON_Duplicate(cJSON_GetObjectItemCaseSensitive(pmd, "labels"), 1));
    cJSON_AddItemToObject(tmd, "annotations",
                          cJSON_Duplicate(cJSON_GetObjectItemCaseSensitive(pmd, "annotations"), 1));
    cJSON_AddItemToObject(tm, "spec",
                          cJSON_Duplicate(cJSON_GetObjectItemCaseSensitive(pod, "spec"), 1));
    cJSON *st = cJSON_AddObjectToObject(sp, "strategy");
    cJSON_AddStringToObject(st, "type", "RollingUpdate");
    cJSON *ru = cJSON_AddObjectToObject(st, "rollingUpdate");
    cJSON_AddStringToObject(ru, "maxUnavailable", "25%");
    cJSON_AddStringToObject(ru, "maxSurge", "25%");
    cJSON_AddNumberToObject(sp, "revisionHistoryLimit", 10);
    cJSON_AddNumberToObject(sp, "progressDeadlineSeconds", 600);
    cJSON_AddObjectToObject(d, "status");
    cJSON_AddNullToObject(req, "oldObject");
    cJSON_AddFalseToObject(req, "dryRun");
    cJSON *opt = cJSON_AddObjectToObject(req, "options");
    cJSON_AddStringToObject(opt, "kind", "CreateOptions");
    cJSON_AddStringToObject(opt, "apiVersion", "meta.k8s.io/v1");
    cJSON_AddStringToObject(opt, "fieldManager", "kubectl-client-side-apply");
    char *out = cJSON_PrintUnformatted(r);
    cJSON_Delete(r);
    cJSON_Delete(pr);
    return out;
}

/* The review with the caches cooled first: `evict_kb` KiB of a private buffer written (one
 * store per 64-byte line, so each line is pulled in and dirtied) before each review, only the
 * review timed. */
static void run_case_evicted(const bench_case *c, long iterations, long evict_kb)
{
    size_t n = (size_t)evict_kb * 1024;
    /* volatile: the stores are the point, the compiler must not drop them */
    volatile unsigned char *junk = calloc(n, 1);
    if (!junk) {
        fprintf(stderr, "bench_engine: no memory for --evict %ld\n", evict_kb);
        exit(2);
    }
    double spent = 0;
    for (long i = 0; i < iterations; i++) {
        for (size_t j = 0; j < n; j += 64)
            junk[j] = (unsigned char)(junk[j] + 1);
        double t0 = clock_s(CLOCK_MONOTONIC);
        gpa_review_result r;
        gpa_review_handle(&r, c->policy, c->hook, c->body, c->len, NULL);
        gpa_review_result_clear(&r);
        spent += clock_s(CLOCK_MONOTONIC) - t0;
    }
    free((void *)junk);
    printf("(%s) %-44s %ld KiB written between reviews: %7.2f us/review (wall, review only)\n",
           c->id, "  caches cooled", evict_kb, spent * 1e6 / (double)iterations);
}

/* Peak RSS (KiB) of `cli review mutate --policies dir file`, its stdout discarded. */
static long cli_peak_rss(const char *cli, const char *dir, const char *file, int *status)
{
    pid_t pid = fork();
    if (pid < 0) return -1;
    if (pid == 0) {
        int fd = open("/dev/null", O_WRONLY);
        if (fd >= 0) dup2(fd, 1);
        execl(cli, cli, "review", "mutate", "--policies", dir, file, (char *)NULL);
        _exit(127);
    }
    struct rusage ru;
    memset(&ru, 0, sizeof ru);
    if (wait4(pid, status, 0, &ru) < 0) return -1;
    return ru.ru_maxrss;
}

static int write_file(const char *path, const char *data)
{
    FILE *f = fopen(path, "w");
    if (!f) return -1;
    fputs(data, f);
    return fclose(f);
}

static gpa_policy *load(const char *dir)
{
    gpa_policy *p = NULL;
    gpa_error err = {0};
    if (gpa_policy_load_dir(&p, dir, &err) != GPA_OK) {
        fprintf(stderr, "bench_engine: policies in %s do not load:\n%s\n", dir, err.message);
        return NULL;
    }
    return p;
}

int main(int argc, char **argv)
{
    long iterations = 200000;
    bool check = false;
    const char *only = NULL, *cli = NULL, *policies = GPA_SOURCE_DIR "/policies";
    const char *dump = NULL;
    long evict_kb = 0;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--check") == 0)
            check = true;
        else if (strcmp(argv[i], "--iterations") == 0 && i + 1 < argc)
            iterations = strtol(argv[++i], NULL, 10);
        else if (strcmp(argv[i], "--only") == 0 && i + 1 < argc)
            only = argv[++i];
        else if (strcmp(argv[i], "--cli") == 0 && i + 1 < argc)
            cli = argv[++i];
        else if (strcmp(argv[i], "--policies") == 0 && i + 1 < argc)
            policies = argv[++i];
        else if (strcmp(argv[i], "--dump") == 0 && i + 1 < argc)
            dump = argv[++i];
        else if (strcmp(argv[i], "--evict") == 0 && i + 1 < argc)
            evict_kb = strtol(argv[++i], NULL, 10);
        else {
            fprintf(stderr, "usage: bench_engine [--check] [--iterations N] [--only a|b|c|d|e|f|g] "
                            "[--cli PATH] [--policies DIR] [--dump DIR] [--evict KB]\n");
            return 2;
        }
    }
    if (check) iterations = iterations < 200 ? iterations : 200;
    if (iterations < 1) iterations = 1;

    char tmpl[] = "/tmp/gpa-bench-XXXXXX";
    char *tmp = mkdtemp(tmpl);
    if (!tmp) {
        perror("mkdtemp");
        return 2;
    }
    char gen_dir[4096], gen_pod[4096];
    snprintf(gen_dir, sizeof gen_dir, "%s/policies", tmp);
    snprintf(gen_pod, sizeof gen_pod, "%s/review-c.json", tmp);
    if (mkdir(gen_dir, 0700) != 0 || write_generated_policy(gen_dir) != 0) {
        perror("writing the generated policy");
        return 2;
    }

    gpa_policy *shipped = load(policies);
    gpa_policy *gen = load(gen_dir);
    gpa_policy *dra = load(GPA_SOURCE_DIR "/test/golden/policies/dra");
    if (!shipped || !gen || !dra) return 1;

    /* (a) a 2-GPU (tensor-parallel) server in a trusted namespace: the shipped "training"
     * rule places it in h100-train (node affinity, runtimeClassName, annotations); (b) the
     * same pod without GPUs; (c) a 1-GPU pod matching rule 996 of the generated set (a mig
     * pool: resource rewrite). */
    char *pod_a = make_review("ml-platform", 2, "");
    enum { N_CASES = 7 };
    bench_case cases[N_CASES] = {
        {"a", "GPU pod, shipped policies (rule training)", shipped, pod_a, 0, GPA_HOOK_MUTATE,
         "mutated", "training", "NVIDIA-H100-80GB-HBM3", 100000, NULL, 0},
        {"b", "non-GPU pod, shipped policies", shipped, make_review("ml-platform", 0, ""), 0,
         GPA_HOOK_MUTATE, "allowed", NULL, NULL, 300000, NULL, 0},
        {"c", "GPU pod, 1000 rules / 100 pools, rule 996", gen, make_review("team-996-prod", 1, ""),
         0, GPA_HOOK_MUTATE, "mutated", "rule-996", "nvidia.com~1mig-1g", 20000, NULL, 0},
        {"d", "Deployment of (a)'s pod, validating hook", shipped,
         pod_a ? make_deployment_review(pod_a) : NULL, 0, GPA_HOOK_VALIDATE, "allowed", NULL, NULL,
         77000, "spec.template: pods get pool h100-train (rule training)", 0},
        {"e", "(a)'s pod as mutated, validating hook", shipped, make_mutated_review(shipped, pod_a),
         0, GPA_HOOK_VALIDATE, "allowed", "training", NULL, 100000, NULL, 0},
        {"f", "DRA claim template, dra set (rule inference)", dra, make_claim_review("inference-a"),
         0, GPA_HOOK_MUTATE, "mutated", "inference", "mig.nvidia.com", 100000,
         "requests[0]: gpu.nvidia.com -> mig.nvidia.com, profile 1g.10gb", 0},
        {"g", "1-GPU pod, 8Gi, dra set (rule inference)", dra,
         make_review("inference-a", 1, ",\"gpu-admission.io/gpu-memory\":\"8Gi\""), 0,
         GPA_HOOK_MUTATE, "mutated", "inference", "nvidia.com~1mig-1g.10gb", 100000, NULL, 0},
    };
    for (int i = 0; i < N_CASES; i++) {
        if (!cases[i].body) return 2;
        cases[i].len = strlen(cases[i].body);
    }
    if (write_file(gen_pod, cases[2].body) != 0) {
        perror(gen_pod);
        return 2;
    }
    if (dump) {
        for (int i = 0; i < N_CASES; i++) {
            char p[4096];
            snprintf(p, sizeof p, "%s/review-%s.json", dump, cases[i].id);
            write_file(p, cases[i].body);
        }
        char cmd[8192];
        snprintf(cmd, sizeof cmd, "cp -r %s %s/generated-policies", gen_dir, dump);
        if (system(cmd) != 0)
            fprintf(stderr, "bench_engine: could not copy the generated policy\n");
    }

    printf("gpu-admission engine benchmark: %ld iterations per case, 1 thread%s\n", iterations,
           check ? " (--check: decisions asserted, timings not meaningful)" : "");
    for (int i = 0; i < N_CASES; i++)
        if (!only || strcmp(only, cases[i].id) == 0) {
            run_case(&cases[i], iterations);
            if (evict_kb > 0) run_case_evicted(&cases[i], iterations, evict_kb);
        }
    if (cases[0].cpu_us > 0 && cases[3].cpu_us > 0 && cases[4].cpu_us > 0)
        printf("(d)/(a) Deployment review / its pod's mutating review: %.2fx, (d)/(e) / its pod's "
               "validating review: %.2fx (target <= 1.3x of the pod's review; CPU time, noisy: "
               "callgrind --only a / --only d is the stable measure)\n",
               cases[3].cpu_us / cases[0].cpu_us, cases[3].cpu_us / cases[4].cpu_us);

    if (cases[5].cpu_us > 0 && cases[6].cpu_us > 0)
        printf("(f)/(g) claim template review / the same namespace's pod review: %.2fx (CPU "
               "time, noisy: callgrind --only f / --only g is the stable measure)\n",
               cases[5].cpu_us / cases[6].cpu_us);
    if (cli && (!only || strcmp(only, "c") == 0)) {
        int status = 0;
        long kb = cli_peak_rss(cli, gen_dir, gen_pod, &status);
        EXPECT(kb > 0 && WIFEXITED(status) && WEXITSTATUS(status) == 0,
               "`%s review mutate` on (c) failed (status %d)", cli, status);
        printf("(c) peak RSS of `gpu-admission review mutate` (load 1000 rules + 1 review): "
               "%.1f MiB (target <= 32 MiB: %s)\n",
               (double)kb / 1024.0, kb <= 32 * 1024 ? "met" : "MISSED");
    }

    for (int i = 0; i < N_CASES; i++)
        free(cases[i].body);
    gpa_policy_unref(shipped);
    gpa_policy_unref(gen);
    char cmd[4200];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmp);
    if (system(cmd) != 0) fprintf(stderr, "bench_engine: could not remove %s\n", tmp);
    if (failures) fprintf(stderr, "bench_engine: %d decision checks failed\n", failures);
    return failures ? 1 : 0;
}
