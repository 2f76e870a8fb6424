/*
 * test_review.c - the AdmissionReview codec (review.h) against the real engine and loader:
 * v1/v1beta1 round trips, uid echo, the base64 patch equal to the engine's own patch and
 * applying to the engine's mutated pod, 400 Status answers for malformed bodies, requests
 * answered "allowed, untouched" (other kinds, subresources, DELETE/CONNECT, UPDATE on the
 * mutating hook), denials as 403 status, and byte-for-byte determinism.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>
#include <openssl/evp.h>

#include "check.h"
#include "gpu_admission/engine.h"
#include "gpu_admission/patch.h"
#include "gpu_admission/policy.h"
#include "gpu_admission/review.h"

static const char *POLICY_YAML =
    "apiVersion: gpu-admission.io/v1alpha1\n"
    "kind: GPUPolicy\n"
    "metadata: {name: review-test}\n"
    "spec:\n"
    "  tenancy:\n"
    "    tenants:\n"
    "      - {name: research, namespaces: [\"research-*\"], trust: untrusted}\n"
    "      - {name: platform, namespaces: [\"inference-*\", ml-platform], trust: trusted}\n"
    "    default: {trust: untrusted}\n"
    "  pools:\n"
    "    - name: a100-mig\n"
    "      nodeSelector: {nvidia.com/gpu.product: NVIDIA-A100-SXM4-80GB}\n"
    "      tolerations:\n"
    "        - {key: nvidia.com/gpu, operator: Exists, effect: NoSchedule}\n"
    "      sharing: mig\n"
    "      mig: {strategy: mixed, gpu: A100-80GB, profiles: [1g.10gb, 2g.20gb, 3g.40gb, "
    "7g.80gb]}\n"
    "  rules:\n"
    "    - name: inference\n"
    "      match: {namespaces: [\"inference-*\"], gpus: {max: 1}}\n"
    "      place: {pool: a100-mig, migProfile: auto}\n"
    "    - name: blocked\n"
    "      match: {namespaces: [blocked]}\n"
    "      deny: \"no GPUs in namespace blocked\"\n";

/* A GPU pod as the API server hands it over: requests filled from limits, default
 * tolerations added. */
static const char *GPU_POD =
    "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"cuda\",\"labels\":{\"app\":"
    "\"x\"}},\"spec\":{\"containers\":[{\"name\":\"c\",\"image\":\"nvcr.io/nvidia/cuda:12.4.0-"
    "base-ubuntu22.04\",\"resources\":{\"limits\":{\"nvidia.com/gpu\":\"1\"},\"requests\":{"
    "\"nvidia.com/gpu\":\"1\"}}}],\"tolerations\":[{\"key\":\"node.kubernetes.io/not-ready\","
    "\"operator\":\"Exists\",\"effect\":\"NoExecute\",\"tolerationSeconds\":300}]}}";

static const char *CPU_POD =
    "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"generateName\":\"web-\"},\"spec\":{"
    "\"containers\":[{\"name\":\"c\",\"image\":\"nginx\",\"resources\":{\"limits\":{\"cpu\":"
    "\"1\"}}}]}}";

static gpa_policy *load_policy(const char *yaml)
{
    gpa_policy_source src = {"test/policy.yaml", yaml, strlen(yaml)};
    gpa_policy *p = NULL;
    gpa_error err = {0};
    if (gpa_policy_load_sources(&p, &src, 1, &err) != GPA_OK) {
        fprintf(stderr, "policy failed to load:\n%s\n", err.message);
        return NULL;
    }
    return p;
}

/* Builds an AdmissionReview body around pod JSON (NULL = object omitted). */
static char *review(const char *api, const char *uid, const char *op, const char *ns,
                    const char *pod)
{
    cJSON *r = cJSON_CreateObject();
    cJSON_AddStringToObject(r, "apiVersion", api);
    cJSON_AddStringToObject(r, "kind", "AdmissionReview");
    cJSON *req = cJSON_AddObjectToObject(r, "request");
    cJSON_AddStringToObject(req, "uid", uid);
    cJSON *k = cJSON_AddObjectToObject(req, "kind");
    cJSON_AddStringToObject(k, "group", "");
    cJSON_AddStringToObject(k, "version", "v1");
    cJSON_AddStringToObject(k, "kind", "Pod");
    cJSON *res = cJSON_AddObjectToObject(req, "resource");
    cJSON_AddStringToObject(res, "group", "");
    cJSON_AddStringToObject(res, "version", "v1");
    cJSON_AddStringToObject(res, "resource", "pods");
    cJSON_AddStringToObject(req, "namespace", ns);
    cJSON_AddStringToObject(req, "operation", op);
    if (pod) {
        cJSON_AddItemToObject(req, "object", cJSON_Parse(pod));
        if (strcmp(op, "UPDATE") == 0) cJSON_AddItemToObject(req, "oldObject", cJSON_Parse(pod));
    }
    char *s = cJSON_PrintUnformatted(r);
    cJSON_Delete(r);
    return s;
}

/* Edits a review: set request.<key> to the JSON value text (NULL removes the key). */
static char *review_with(const char *base, const char *key, const char *value_json)
{
    cJSON *r = cJSON_Parse(base);
    cJSON *req = cJSON_GetObjectItemCaseSensitive(r, "request");
    cJSON_DeleteItemFromObjectCaseSensitive(req, key);
    if (value_json) cJSON_AddItemToObject(req, key, cJSON_Parse(value_json));
    char *s = cJSON_PrintUnformatted(r);
    cJSON_Delete(r);
    return s;
}

static cJSON *response_of(const gpa_review_result *res)
{
    cJSON *root = cJSON_ParseWithLength(res->body, res->body_len);
    CHECK(root != NULL);
    CHECK_INT(strlen(res->body), res->body_len);
    return root;
}

static const cJSON *member(const cJSON *o, const char *path)
{
    /* dotted path, no escaping needed in these tests */
    char buf[256];
    snprintf(buf, sizeof buf, "%s", path);
    const cJSON *v = o;
    for (char *tok = strtok(buf, "."); tok && v; tok = strtok(NULL, "."))
        v = cJSON_GetObjectItemCaseSensitive(v, tok);
    return v;
}

static cJSON *decode_patch(const char *b64)
{
    size_t n = strlen(b64);
    unsigned char *raw = malloc(n + 4);
    int len = EVP_DecodeBlock(raw, (const unsigned char *)b64, (int)n);
    if (len < 0) {
        free(raw);
        return NULL;
    }
    /* EVP_DecodeBlock counts padding bytes as output zeros: trim them. */
    while (n > 0 && b64[n - 1] == '=') {
        len--;
        n--;
    }
    cJSON *ops = cJSON_ParseWithLength((const char *)raw, (size_t)len);
    free(raw);
    return ops;
}

static void test_round_trip(const gpa_policy *p, const char *api)
{
    char *body =
        review(api, "0df28fbd-5f5f-11e8-bc74-36e6bb280816", "CREATE", "inference-a", GPU_POD);
    gpa_review_result res;
    gpa_error err = {0};
    int rc = gpa_review_handle(&res, p, GPA_HOOK_MUTATE, body, strlen(body), &err);
    CHECK_INT(rc, GPA_OK);
    CHECK_INT(res.http_status, 200);
    CHECK_STR(res.outcome, "mutated");
    CHECK_STR(res.uid, "0df28fbd-5f5f-11e8-bc74-36e6bb280816");
    CHECK_STR(res.namespace_, "inference-a");
    CHECK_STR(res.name, "cuda");
    CHECK_STR(res.operation, "CREATE");
    cJSON *r = response_of(&res);
    CHECK_STR(cJSON_GetStringValue(member(r, "apiVersion")), api);
    CHECK_STR(cJSON_GetStringValue(member(r, "kind")), "AdmissionReview");
    CHECK(member(r, "request") == NULL);
    CHECK_STR(cJSON_GetStringValue(member(r, "response.uid")),
              "0df28fbd-5f5f-11e8-bc74-36e6bb280816");
    CHECK(cJSON_IsTrue(member(r, "response.allowed")));
    CHECK_STR(cJSON_GetStringValue(member(r, "response.patchType")), "JSONPatch");
    CHECK(member(r, "response.status") == NULL);
    CHECK(cJSON_IsArray(member(r, "response.warnings")));
    CHECK_STR(cJSON_GetStringValue(member(r, "response.auditAnnotations.rule")), "inference");
    CHECK_STR(cJSON_GetStringValue(member(r, "response.auditAnnotations.pool")), "a100-mig");

    /* The patch is the engine's patch, byte for byte once decoded. */
    const char *b64 = cJSON_GetStringValue(member(r, "response.patch"));
    CHECK(b64 != NULL);
    cJSON *ops = b64 ? decode_patch(b64) : NULL;
    CHECK(cJSON_IsArray(ops));
    gpa_request req = {.namespace_ = "inference-a", .op = GPA_OP_CREATE};
    cJSON *pod = cJSON_Parse(GPU_POD);
    req.object = pod;
    gpa_decision d;
    memset(&d, 0, sizeof d);
    CHECK_INT(gpa_engine_mutate(&d, p, &req, &err), GPA_OK);
    CHECK(d.patch != NULL && cJSON_Compare(ops, d.patch, 1));
    /* ... and it turns the pod into the MIG pod the policy asks for. */
    cJSON *applied = cJSON_Duplicate(pod, 1);
    CHECK_INT(gpa_patch_apply(applied, ops, &err), GPA_OK);
    const cJSON *c0 = cJSON_GetArrayItem(member(applied, "spec.containers"), 0);
    const cJSON *lim = member(c0, "resources.limits");
    CHECK_STR(cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(lim, "nvidia.com/mig-1g.10gb")),
              "1");
    CHECK(cJSON_GetObjectItemCaseSensitive(lim, "nvidia.com/gpu") == NULL);
    if (d.mutated) CHECK(cJSON_Compare(applied, d.mutated, 1));
    CHECK_INT(d.n_warnings, cJSON_GetArraySize(member(r, "response.warnings")));

    cJSON_Delete(applied);
    gpa_decision_clear(&d);
    cJSON_Delete(pod);
    cJSON_Delete(ops);
    cJSON_Delete(r);
    gpa_review_result_clear(&res);

    /* The validating hook never patches, and this pod as created by the mutating hook's
     * output is fine; the original (unmutated) is judged on its own. */
    rc = gpa_review_handle(&res, p, GPA_HOOK_VALIDATE, body, strlen(body), &err);
    CHECK_INT(rc, GPA_OK);
    r = response_of(&res);
    CHECK_STR(cJSON_GetStringValue(member(r, "apiVersion")), api);
    CHECK(member(r, "response.patch") == NULL);
    CHECK(member(r, "response.patchType") == NULL);
    CHECK(cJSON_IsBool(member(r, "response.allowed")));
    cJSON_Delete(r);
    gpa_review_result_clear(&res);
    free(body);
}

static void test_determinism(const gpa_policy *p)
{
    char *body = review("admission.k8s.io/v1", "u-1", "CREATE", "inference-b", GPU_POD);
    gpa_review_result a, b;
    gpa_review_handle(&a, p, GPA_HOOK_MUTATE, body, strlen(body), NULL);
    for (int i = 0; i < 20; i++) {
        gpa_review_handle(&b, p, GPA_HOOK_MUTATE, body, strlen(body), NULL);
        CHECK_INT(a.body_len, b.body_len);
        CHECK(a.body && b.body && a.body_len == b.body_len &&
              memcmp(a.body, b.body, a.body_len) == 0);
        gpa_review_result_clear(&b);
    }
    /* Same request, other whitespace: same answer. */
    cJSON *tree = cJSON_Parse(body);
    char *pretty = cJSON_Print(tree);
    gpa_review_handle(&b, p, GPA_HOOK_MUTATE, pretty, strlen(pretty), NULL);
    CHECK(a.body && b.body && strcmp(a.body, b.body) == 0);
    gpa_review_result_clear(&b);
    cJSON_Delete(tree);
    free(pretty);
    gpa_review_result_clear(&a);
    free(body);
}

static void expect_400(const gpa_policy *p, const char *what, const char *body, size_t len,
                       const char *msg_part)
{
    gpa_review_result res;
    gpa_error err = {0};
    int rc = gpa_review_handle(&res, p, GPA_HOOK_MUTATE, body, len, &err);
    if (rc >= 0 || res.http_status != 400) fprintf(stderr, "case '%s' was not a 400\n", what);
    CHECK(rc < 0);
    CHECK_INT(res.http_status, 400);
    CHECK_INT(err.code, GPA_EREQUEST);
    CHECK_STR(res.outcome, "error");
    cJSON *s = res.body ? cJSON_ParseWithLength(res.body, res.body_len) : NULL;
    CHECK(s != NULL);
    CHECK_STR(cJSON_GetStringValue(member(s, "kind")), "Status");
    CHECK_STR(cJSON_GetStringValue(member(s, "apiVersion")), "v1");
    CHECK_STR(cJSON_GetStringValue(member(s, "status")), "Failure");
    CHECK_STR(cJSON_GetStringValue(member(s, "reason")), "BadRequest");
    CHECK_INT(cJSON_GetNumberValue(member(s, "code")), 400);
    CHECK_CONTAINS(cJSON_GetStringValue(member(s, "message")), msg_part);
    CHECK_CONTAINS(err.message, msg_part);
    cJSON_Delete(s);
    gpa_review_result_clear(&res);
}

static void test_bad_requests(const gpa_policy *p)
{
    char *good = review("admission.k8s.io/v1", "u-400", "CREATE", "inference-a", GPU_POD);
    struct {
        const char *what, *body, *msg;
    } raw[] = {
        {"empty", "", "empty"},
        {"not json", "hello", "not valid JSON"},
        {"truncated", "{\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":", "not valid JSON"},
        {"array", "[1,2]", "must be a JSON object"},
        {"string", "\"AdmissionReview\"", "must be a JSON object"},
        {"null", "null", "must be a JSON object"},
        {"no apiVersion", "{\"kind\":\"AdmissionReview\",\"request\":{\"uid\":\"a\"}}",
         "apiVersion"},
        {"apiVersion v2",
         "{\"apiVersion\":\"admission.k8s.io/v2\",\"kind\":\"AdmissionReview\",\"request\":{"
         "\"uid\":\"a\"}}",
         "admission.k8s.io/v2"},
        {"apiVersion number",
         "{\"apiVersion\":1,\"kind\":\"AdmissionReview\",\"request\":{\"uid\":\"a\"}}",
         "apiVersion"},
        {"wrong kind",
         "{\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":\"AdmissionResponse\",\"request\":{"
         "\"uid\":\"a\"}}",
         "AdmissionResponse"},
        {"no request", "{\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":\"AdmissionReview\"}",
         "no request"},
        {"request is a string",
         "{\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":\"AdmissionReview\",\"request\":\"x\"}",
         "no request"},
        {"NUL escape in a string (would truncate C strings)",
         "{\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":\"AdmissionReview\",\"request\":{"
         "\"uid\":\"a\\u0000b\"}}",
         "u0000"},
        {"bare AdmissionRequest (kubewarden test_data shape)",
         "{\"uid\":\"a\",\"operation\":\"CREATE\",\"object\":{}}", "apiVersion"},
    };
    for (size_t i = 0; i < sizeof raw / sizeof raw[0]; i++)
        expect_400(p, raw[i].what, raw[i].body, strlen(raw[i].body), raw[i].msg);

    /* Trailing data and NUL bytes after the document. */
    char *trail = malloc(strlen(good) + 8);
    sprintf(trail, "%s }", good);
    expect_400(p, "trailing", trail, strlen(trail), "data after");
    memcpy(trail, good, strlen(good) + 1);
    expect_400(p, "embedded NUL", trail, strlen(good) + 1, "data after");
    free(trail);

    struct {
        const char *what, *key, *value, *msg;
    } edits[] = {
        {"no uid", "uid", NULL, "uid"},
        {"empty uid", "uid", "\"\"", "uid"},
        {"numeric uid", "uid", "42", "uid"},
        {"null uid", "uid", "null", "uid"},
        {"no operation", "operation", NULL, "operation"},
        {"operation number", "operation", "1", "operation"},
        {"namespace number", "namespace", "7", "namespace"},
        {"object string", "object", "\"pod\"", "request.object"},
        {"object array", "object", "[]", "request.object"},
        {"oldObject number", "oldObject", "3", "oldObject"},
        {"kind string", "kind", "\"Pod\"", "request.kind"},
        {"resource array", "resource", "[\"pods\"]", "request.resource"},
        {"subResource object", "subResource", "{}", "subResource"},
        {"pod metadata string", "object",
         "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":\"x\",\"spec\":{}}", "metadata"},
        {"pod spec array", "object", "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"spec\":[]}",
         "spec"},
    };
    for (size_t i = 0; i < sizeof edits / sizeof edits[0]; i++) {
        char *b = review_with(good, edits[i].key, edits[i].value);
        expect_400(p, edits[i].what, b, strlen(b), edits[i].msg);
        free(b);
    }

    /* A nesting bomb is refused, not recursed into. */
    size_t depth = 100000;
    char *deep = malloc(depth * 2 + 1);
    memset(deep, '[', depth);
    memset(deep + depth, ']', depth);
    deep[depth * 2] = '\0';
    expect_400(p, "deep nesting", deep, depth * 2, "not valid JSON");
    free(deep);

    /* The uid of a 400 is still reported for logs when it was readable. */
    char *b = review_with(good, "operation", "5");
    gpa_review_result res;
    gpa_review_handle(&res, p, GPA_HOOK_MUTATE, b, strlen(b), NULL);
    CHECK_STR(res.uid, "u-400");
    gpa_review_result_clear(&res);
    free(b);
    free(good);
}

static void expect_untouched(const gpa_policy *p, gpa_hook hook, const char *what, const char *body,
                             const char *uid, const char *api)
{
    gpa_review_result res;
    gpa_error err = {0};
    int rc = gpa_review_handle(&res, p, hook, body, strlen(body), &err);
    if (rc != GPA_OK || !res.outcome || strcmp(res.outcome, "skipped") != 0)
        fprintf(stderr, "case '%s' was not skipped (rc %d, %s)\n", what, rc, err.message);
    CHECK_INT(rc, GPA_OK);
    CHECK_INT(res.http_status, 200);
    CHECK_STR(res.outcome, "skipped");
    cJSON *r = res.body ? response_of(&res) : NULL;
    CHECK_STR(cJSON_GetStringValue(member(r, "apiVersion")), api);
    CHECK_STR(cJSON_GetStringValue(member(r, "response.uid")), uid);
    CHECK(cJSON_IsTrue(member(r, "response.allowed")));
    /* exactly uid + allowed */
    CHECK_INT(cJSON_GetArraySize(member(r, "response")), 2);
    cJSON_Delete(r);
    gpa_review_result_clear(&res);
}

static void test_untouched(const gpa_policy *p)
{
    const char *v1 = "admission.k8s.io/v1";
    char *good = review(v1, "u-skip", "CREATE", "inference-a", GPU_POD);
    char *b;

    b = review_with(good, "kind",
                    "{\"group\":\"apps\",\"version\":\"v1\",\"kind\":\"Deployment\"}");
    expect_untouched(p, GPA_HOOK_MUTATE, "Deployment", b, "u-skip", v1);
    expect_untouched(p, GPA_HOOK_VALIDATE, "Deployment", b, "u-skip", v1);
    free(b);
    b = review_with(good, "kind",
                    "{\"group\":\"example.com\",\"version\":\"v1\",\"kind\":\"Pod\"}");
    expect_untouched(p, GPA_HOOK_MUTATE, "Pod of another group", b, "u-skip", v1);
    free(b);
    b = review_with(good, "resource", "{\"group\":\"\",\"version\":\"v1\",\"resource\":\"nodes\"}");
    expect_untouched(p, GPA_HOOK_MUTATE, "resource nodes", b, "u-skip", v1);
    free(b);
    b = review_with(good, "subResource", "\"status\"");
    expect_untouched(p, GPA_HOOK_MUTATE, "subresource status", b, "u-skip", v1);
    expect_untouched(p, GPA_HOOK_VALIDATE, "subresource status", b, "u-skip", v1);
    free(b);
    b = review_with(good, "subResource", "\"ephemeralcontainers\"");
    expect_untouched(p, GPA_HOOK_MUTATE, "subresource ephemeralcontainers", b, "u-skip", v1);
    free(b);
    b = review_with(good, "object", NULL);
    expect_untouched(p, GPA_HOOK_MUTATE, "no object", b, "u-skip", v1);
    free(b);
    b = review_with(good, "object", "null");
    expect_untouched(p, GPA_HOOK_VALIDATE, "object null", b, "u-skip", v1);
    free(b);
    b = review_with(good, "operation", "\"DELETE\"");
    expect_untouched(p, GPA_HOOK_MUTATE, "DELETE", b, "u-skip", v1);
    expect_untouched(p, GPA_HOOK_VALIDATE, "DELETE", b, "u-skip", v1);
    free(b);
    b = review_with(good, "operation", "\"CONNECT\"");
    expect_untouched(p, GPA_HOOK_VALIDATE, "CONNECT", b, "u-skip", v1);
    free(b);
    b = review_with(good, "operation", "\"PATCH\"");
    expect_untouched(p, GPA_HOOK_MUTATE, "unknown operation", b, "u-skip", v1);
    free(b);
    b = review_with(good, "object",
                    "{\"apiVersion\":\"example.com/v1\",\"kind\":\"CustomType\",\"spec\":{}}");
    expect_untouched(p, GPA_HOOK_MUTATE, "object of another kind", b, "u-skip", v1);
    free(b);
    free(good);

    /* UPDATE of a GPU pod that CREATE would rewrite: the mutating hook never patches. */
    b = review("admission.k8s.io/v1beta1", "u-up", "UPDATE", "inference-a", GPU_POD);
    expect_untouched(p, GPA_HOOK_MUTATE, "UPDATE on mutate", b, "u-up", "admission.k8s.io/v1beta1");
    free(b);

    /* The kubernetes/api round-trip fixtures: a CustomType object with placeholder values. */
    const char *files[] = {
        GPA_FIXTURES_DIR "/k8s-api/HEAD/admission.k8s.io.v1.AdmissionReview.json",
        GPA_FIXTURES_DIR "/k8s-api/HEAD/admission.k8s.io.v1beta1.AdmissionReview.json"};
    const char *apis[] = {v1, "admission.k8s.io/v1beta1"};
    for (int i = 0; i < 2; i++) {
        FILE *f = fopen(files[i], "rb");
        CHECK(f != NULL);
        if (!f) continue;
        static char buf[65536];
        size_t n = fread(buf, 1, sizeof buf - 1, f);
        fclose(f);
        buf[n] = '\0';
        expect_untouched(p, GPA_HOOK_MUTATE, files[i], buf, "uidValue", apis[i]);
        expect_untouched(p, GPA_HOOK_VALIDATE, files[i], buf, "uidValue", apis[i]);
    }
}

static void test_judged(const gpa_policy *p)
{
    gpa_review_result res;
    gpa_error err = {0};
    cJSON *r;

    /* A rule with deny: -> 403 Forbidden with the rule's message, no patch. */
    char *b = review("admission.k8s.io/v1", "u-deny", "CREATE", "blocked", GPU_POD);
    CHECK_INT(gpa_review_handle(&res, p, GPA_HOOK_MUTATE, b, strlen(b), &err), GPA_OK);
    CHECK_STR(res.outcome, "denied");
    r = response_of(&res);
    CHECK(cJSON_IsFalse(member(r, "response.allowed")));
    CHECK_INT(cJSON_GetNumberValue(member(r, "response.status.code")), 403);
    CHECK_STR(cJSON_GetStringValue(member(r, "response.status.reason")), "Forbidden");
    CHECK_CONTAINS(cJSON_GetStringValue(member(r, "response.status.message")),
                   "no GPUs in namespace blocked");
    CHECK(member(r, "response.patch") == NULL);
    cJSON_Delete(r);
    gpa_review_result_clear(&res);
    CHECK_INT(gpa_review_handle(&res, p, GPA_HOOK_VALIDATE, b, strlen(b), &err), GPA_OK);
    CHECK_STR(res.outcome, "denied");
    gpa_review_result_clear(&res);
    free(b);

    /* UPDATE on the validating hook is judged: a pod claiming another tenant is denied. */
    const char *claim =
        "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"c\",\"labels\":{"
        "\"gpu-admission.io/tenant\":\"research\"}},\"spec\":{\"containers\":[{\"name\":\"c\","
        "\"image\":\"i\"}]}}";
    b = review("admission.k8s.io/v1beta1", "u-claim", "UPDATE", "ml-platform", claim);
    CHECK_INT(gpa_review_handle(&res, p, GPA_HOOK_VALIDATE, b, strlen(b), &err), GPA_OK);
    CHECK_STR(res.outcome, "denied");
    CHECK_STR(res.operation, "UPDATE");
    r = response_of(&res);
    CHECK_STR(cJSON_GetStringValue(member(r, "apiVersion")), "admission.k8s.io/v1beta1");
    CHECK(cJSON_IsFalse(member(r, "response.allowed")));
    CHECK_CONTAINS(cJSON_GetStringValue(member(r, "response.status.message")), "research");
    cJSON_Delete(r);
    gpa_review_result_clear(&res);
    /* ... and the mutating hook leaves UPDATE alone. */
    CHECK_INT(gpa_review_handle(&res, p, GPA_HOOK_MUTATE, b, strlen(b), &err), GPA_OK);
    CHECK_STR(res.outcome, "skipped");
    gpa_review_result_clear(&res);
    free(b);

    /* `kubectl debug` adds containers through pods/ephemeralcontainers (an UPDATE of a
     * subresource): the validating hook judges it, the mutating hook leaves it alone. */
    const char *dbg =
        "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"d\"},\"spec\":{"
        "\"containers\":[{\"name\":\"c\",\"image\":\"i\"}],\"ephemeralContainers\":[{"
        "\"name\":\"dbg\",\"image\":\"busybox\",\"securityContext\":{\"privileged\":true}}]}}";
    b = review("admission.k8s.io/v1", "u-dbg", "UPDATE", "research-x", dbg);
    char *b2 = review_with(b, "subResource", "\"ephemeralcontainers\"");
    CHECK_INT(gpa_review_handle(&res, p, GPA_HOOK_VALIDATE, b2, strlen(b2), &err), GPA_OK);
    CHECK_STR(res.outcome, "denied");
    r = response_of(&res);
    CHECK_CONTAINS(cJSON_GetStringValue(member(r, "response.status.message")), "privileged");
    cJSON_Delete(r);
    gpa_review_result_clear(&res);
    CHECK_INT(gpa_review_handle(&res, p, GPA_HOOK_MUTATE, b2, strlen(b2), &err), GPA_OK);
    CHECK_STR(res.outcome, "skipped");
    gpa_review_result_clear(&res);
    free(b2);
    /* other subresources stay untouched on both hooks */
    b2 = review_with(b, "subResource", "\"status\"");
    CHECK_INT(gpa_review_handle(&res, p, GPA_HOOK_VALIDATE, b2, strlen(b2), &err), GPA_OK);
    CHECK_STR(res.outcome, "skipped");
    gpa_review_result_clear(&res);
    free(b2);
    free(b);

    /* A non-GPU pod is allowed without a patch; the name falls back to generateName and the
     * namespace to object.metadata.namespace when the request names none. */
    b = review("admission.k8s.io/v1", "u-cpu", "CREATE", "ml-platform", CPU_POD);
    b2 = review_with(b, "namespace", NULL);
    CHECK_INT(gpa_review_handle(&res, p, GPA_HOOK_MUTATE, b2, strlen(b2), &err), GPA_OK);
    CHECK_STR(res.outcome, "allowed");
    CHECK_STR(res.name, "web-");
    CHECK_STR(res.namespace_, "default");
    r = response_of(&res);
    CHECK(cJSON_IsTrue(member(r, "response.allowed")));
    CHECK(member(r, "response.patch") == NULL);
    CHECK(member(r, "response.patchType") == NULL);
    cJSON_Delete(r);
    gpa_review_result_clear(&res);
    free(b2);
    free(b);

    /* uid with characters JSON must escape is echoed exactly. */
    const char *odd = "a\"b\\c\n\x01 \xc3\xa9";
    b = review("admission.k8s.io/v1", odd, "CREATE", "ml-platform", CPU_POD);
    CHECK_INT(gpa_review_handle(&res, p, GPA_HOOK_VALIDATE, b, strlen(b), &err), GPA_OK);
    CHECK_STR(res.uid, odd);
    r = response_of(&res);
    CHECK_STR(cJSON_GetStringValue(member(r, "response.uid")), odd);
    cJSON_Delete(r);
    gpa_review_result_clear(&res);
    free(b);

    /* No policy: a judged request cannot be answered; a skipped one still can. */
    b = review("admission.k8s.io/v1", "u-np", "CREATE", "inference-a", GPU_POD);
    CHECK(gpa_review_handle(&res, NULL, GPA_HOOK_MUTATE, b, strlen(b), &err) < 0);
    CHECK_INT(res.http_status, 400);
    gpa_review_result_clear(&res);
    free(b);
}

static void test_warn_enforcement(void)
{
    char *yaml = malloc(strlen(POLICY_YAML) + 64);
    sprintf(yaml, "%s  enforcement: warn\n", POLICY_YAML);
    gpa_policy *p = load_policy(yaml);
    CHECK(p != NULL);
    if (p) {
        char *b = review("admission.k8s.io/v1", "u-warn", "CREATE", "blocked", GPU_POD);
        gpa_review_result res;
        CHECK_INT(gpa_review_handle(&res, p, GPA_HOOK_VALIDATE, b, strlen(b), NULL), GPA_OK);
        CHECK_STR(res.outcome, "warned");
        cJSON *r = response_of(&res);
        CHECK(cJSON_IsTrue(member(r, "response.allowed")));
        CHECK(member(r, "response.status") == NULL);
        const cJSON *w = member(r, "response.warnings");
        CHECK(cJSON_GetArraySize(w) >= 1);
        CHECK_CONTAINS(cJSON_GetStringValue(cJSON_GetArrayItem(w, 0)), "policy violation (warn)");
        cJSON_Delete(r);
        gpa_review_result_clear(&res);
        free(b);
        gpa_policy_unref(p);
    }
    free(yaml);
}

/* request.userInfo for the log line: username and groups exposed, pointing into the request,
 * on allowed, denied, skipped and 400 answers alike; wrong types ignored, never a 400. */
static void test_user(const gpa_policy *p)
{
    char *base = review("admission.k8s.io/v1", "u-1", "CREATE", "inference-a", GPU_POD);
    struct {
        const char *user_info; /* JSON, NULL = no userInfo */
        const char *user;
        size_t n_groups;
    } cases[] = {
        {"{\"username\":\"alice@example.com\",\"uid\":\"42\",\"groups\":[\"dev\","
         "\"system:authenticated\"]}",
         "alice@example.com", 2},
        {"{\"username\":\"system:serviceaccount:ml:trainer\"}", "system:serviceaccount:ml:trainer",
         0},
        {"{\"username\":7,\"groups\":[\"a\",3,\"b\",null]}", NULL, 2},
        {"{\"groups\":\"not-a-list\"}", NULL, 0},
        {"\"not-an-object\"", NULL, 0},
        {NULL, NULL, 0},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char *body = review_with(base, "userInfo", cases[i].user_info);
        gpa_review_result res;
        int rc = gpa_review_handle(&res, p, GPA_HOOK_MUTATE, body, strlen(body), NULL);
        CHECK_INT(rc, GPA_OK);
        CHECK_INT(res.http_status, 200);
        if (cases[i].user)
            CHECK(res.user && strcmp(res.user, cases[i].user) == 0);
        else
            CHECK(res.user == NULL);
        const char *g[1];
        CHECK_INT(gpa_review_result_groups(&res, g, 1), cases[i].n_groups);
        if (cases[i].n_groups) CHECK(strcmp(g[0], i == 0 ? "dev" : "a") == 0);
        gpa_review_result_clear(&res);
        free(body);
    }
    /* a 400 (no uid) still says who sent it; so does a denial on /validate */
    char *nouid = review_with(base, "uid", NULL);
    char *who = review_with(nouid, "userInfo", "{\"username\":\"mallory\",\"groups\":[\"x\"]}");
    gpa_review_result res;
    CHECK(gpa_review_handle(&res, p, GPA_HOOK_VALIDATE, who, strlen(who), NULL) != GPA_OK);
    CHECK_INT(res.http_status, 400);
    CHECK(res.user && strcmp(res.user, "mallory") == 0);
    const char *g[4];
    CHECK_INT(gpa_review_result_groups(&res, g, 4), 1);
    gpa_review_result_clear(&res);
    char *blocked = review("admission.k8s.io/v1", "u-2", "CREATE", "blocked", GPU_POD);
    char *bw = review_with(blocked, "userInfo", "{\"username\":\"bob\"}");
    CHECK_INT(gpa_review_handle(&res, p, GPA_HOOK_VALIDATE, bw, strlen(bw), NULL), GPA_OK);
    CHECK(strcmp(res.outcome, "denied") == 0 && res.user && strcmp(res.user, "bob") == 0);
    gpa_review_result_clear(&res);
    /* many groups: counted in full, only max copied */
    cJSON *many = cJSON_CreateObject();
    cJSON *arr = cJSON_AddArrayToObject(many, "groups");
    for (int i = 0; i < 40; i++) {
        char nm[16];
        snprintf(nm, sizeof nm, "g%d", i);
        cJSON_AddItemToArray(arr, cJSON_CreateString(nm));
    }
    char *mj = cJSON_PrintUnformatted(many);
    char *mb = review_with(base, "userInfo", mj);
    CHECK_INT(gpa_review_handle(&res, p, GPA_HOOK_MUTATE, mb, strlen(mb), NULL), GPA_OK);
    CHECK_INT(gpa_review_result_groups(&res, g, 4), 40);
    CHECK(strcmp(g[3], "g3") == 0);
    CHECK_INT(gpa_review_result_groups(NULL, g, 4), 0);
    gpa_review_result_clear(&res);
    cJSON_Delete(many);
    free(mj);
    free(mb);
    free(blocked);
    free(bw);
    free(nouid);
    free(who);
    free(base);
}

int main(void)
{
    gpa_policy *p = load_policy(POLICY_YAML);
    CHECK(p != NULL);
    if (!p) return check_done();
    test_round_trip(p, "admission.k8s.io/v1");
    test_round_trip(p, "admission.k8s.io/v1beta1");
    test_determinism(p);
    test_bad_requests(p);
    test_untouched(p);
    test_judged(p);
    test_warn_enforcement();
    test_user(p);
    gpa_policy_unref(p);
    return check_done();
}
