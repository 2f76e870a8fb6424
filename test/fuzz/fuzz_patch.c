/*
 * fuzz_patch.c - property fuzzer for the JSON Patch the mutating webhook returns.
 *
 * Input modes (first byte):
 *   '{'   a Pod, or an AdmissionReview whose request.object is the Pod (JSON seeds), or
 *         {"policy": "<set name>", "namespace": NS, "pod": {...}} (how generator findings are
 *         saved as regressions: GPA_FUZZ_DUMP=1 prints that form);
 *   '{'   {"doc": X, "patch": [...]}: gpa_patch_apply and the reference applier must agree;
 *   '['   [from, to]: gpa_patch_diff(from, to) applied to from must give to;
 *   other the bytes drive a pod generator (GPU resources, MIG/shared names, labels, trust and
 *         tenant claims, affinity, tolerations, env, privileged, ...).
 * For every pod and every loaded policy set chosen by the input, gpa_engine_mutate on CREATE:
 *   - a non-empty patch comes with decision.mutated;
 *   - the patch applies with gpa_patch_apply AND with an independent strict RFC 6902 applier
 *     (fuzz_common.c), and both give exactly decision.mutated;
 *   - mutating decision.mutated again gives an empty patch (POLICY.md: idempotent,
 *     reinvocationPolicy IfNeeded);
 *   - an allowed mutation's result is allowed by gpa_engine_validate too (the mutating hook
 *     runs the validation checks on its result, so they cannot disagree).
 *
 * Must never: ignore a property violation (fz_fail aborts, libFuzzer keeps the input).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_common.h"
#include "gpu_admission/engine.h"
#include "gpu_admission/patch.h"
#include "gpu_admission/quantity.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* ---------------------------------------------------------------- byte reader */

typedef struct rd {
    const uint8_t *d;
    size_t n, i;
} rd;

static unsigned u8(rd *r)
{
    return r->i < r->n ? r->d[r->i++] : 0;
}

static unsigned pick(rd *r, unsigned n)
{
    return u8(r) % n;
}

#define PICK(r, arr) ((arr)[pick((r), sizeof(arr) / sizeof((arr)[0]))])

static const char *const namespaces[] = {
    "default",   "research-a", "sandbox",     "ml-platform", "prod-x",   "inference-1",
    "notebooks", "team-z",     "kube-system", "research-",   "training", "gpu-admission"};
static const char *const gpu_resources[] = {"nvidia.com/gpu",
                                            "nvidia.com/gpu",
                                            "nvidia.com/gpu.shared",
                                            "nvidia.com/mig-1g.10gb",
                                            "nvidia.com/mig-3g.40gb",
                                            "nvidia.com/mig-1g.10gb.me",
                                            "nvidia.com/mig-7g.80gb",
                                            "nvidia.com/mig-1g.5gb",
                                            "cpu",
                                            "memory",
                                            "nvidia.com/gpu.shared",
                                            "example.com/fpga"};
static const char *const qty[] = {"1",   "1",  "2",    "4",   "8", "0",   "16",
                                  "1.5", "-1", "500m", "1e0", "x", "1Ki", "3"};
static const char *const label_keys[] = {
    "gpu-admission.io/trust",       "gpu-admission.io/tenant",
    "gpu-admission.io/pool",        "gpu-admission.io/group",
    "app.kubernetes.io/component",  "training.kubeflow.org/job-name",
    "batch.kubernetes.io/job-name", "app"};
static const char *const label_values[] = {"untrusted", "trusted",  "research",   "platform",
                                           "t4-shared", "a100-mig", "h100-train", "inference",
                                           "job-1",     "",         "bogus",      "notebooks"};
static const char *const gpu_mem[] = {"8Gi", "10Gi", "40Gi", "80Gi", "1",   "0",
                                      "-1",  "abc",  "20G",  "5G",   "1Ti", "10000000Ei"};
static const char *const node_keys[] = {"nvidia.com/gpu.product",
                                        "gpu-admission.io/pool",
                                        "nvidia.com/gpu.sharing-strategy",
                                        "kubernetes.io/hostname",
                                        "gpu-admission.io/nvlink-island-size",
                                        "nvidia.com/gpu.clique"};
static const char *const node_values[] = {"NVIDIA-A100-SXM4-80GB",
                                          "NVIDIA-H100-80GB-HBM3",
                                          "time-slicing",
                                          "t4-shared",
                                          "node-1",
                                          "NVIDIA-A100-SXM4-80GB-MIG-1g.10gb",
                                          "8",
                                          "mps"};
static const char *const operators[] = {"In", "NotIn", "Exists", "DoesNotExist",
                                        "Gt", "Lt",    "Bogus"};
static const char *const toleration_keys[] = {"nvidia.com/gpu", "gpu-admission.io/shared",
                                              "node.kubernetes.io/not-ready", ""};

/* A decoded API object never has duplicate keys: replace rather than add a second one. */
static void set_item(cJSON *obj, const char *key, cJSON *v)
{
    if (cJSON_GetObjectItemCaseSensitive(obj, key))
        cJSON_ReplaceItemInObjectCaseSensitive(obj, key, v);
    else
        cJSON_AddItemToObject(obj, key, v);
}

static cJSON *qty_value(rd *r)
{
    /* Mostly strings (as the API server sends), sometimes a bare number or a wrong type. */
    switch (pick(r, 8)) {
    case 0:
        return cJSON_CreateNumber((double)pick(r, 5));
    case 1:
        return pick(r, 4) ? cJSON_CreateNumber(-1) : cJSON_CreateTrue();
    default:
        return cJSON_CreateString(PICK(r, qty));
    }
}

static cJSON *make_container(rd *r, int idx, const char *prefix)
{
    cJSON *c = cJSON_CreateObject();
    char name[32];
    snprintf(name, sizeof name, "%s%d", prefix, idx);
    cJSON_AddStringToObject(c, "name", name);
    cJSON_AddStringToObject(c, "image", "nvcr.io/nvidia/cuda:12.4.0-base-ubuntu22.04");
    unsigned mode = pick(r, 6);
    if (mode) {
        cJSON *res = cJSON_AddObjectToObject(c, "resources");
        cJSON *lim = cJSON_AddObjectToObject(res, "limits");
        unsigned nres = 1 + pick(r, 3);
        for (unsigned k = 0; k < nres; k++) {
            const char *rn = PICK(r, gpu_resources);
            if (!cJSON_GetObjectItemCaseSensitive(lim, rn))
                cJSON_AddItemToObject(lim, rn, qty_value(r));
        }
        unsigned req = pick(r, 4);
        if (req == 1 || req == 2) /* requests = limits, as the API server fills them */
            cJSON_AddItemToObject(res, "requests", cJSON_Duplicate(lim, 1));
        else if (req == 3) {
            cJSON *rq = cJSON_AddObjectToObject(res, "requests");
            cJSON_AddItemToObject(rq, PICK(r, gpu_resources), qty_value(r));
        }
    }
    if (pick(r, 6) == 0) {
        cJSON *env = cJSON_AddArrayToObject(c, "env");
        cJSON *e = cJSON_CreateObject();
        cJSON_AddStringToObject(
            e, "name", pick(r, 2) ? "NVIDIA_VISIBLE_DEVICES" : "NVIDIA_MIG_CONFIG_DEVICES");
        static const char *const vals[] = {"all", "void", "none", "0,1", ""};
        if (pick(r, 5))
            cJSON_AddStringToObject(e, "value", PICK(r, vals));
        else
            cJSON_AddItemToObject(e, "valueFrom", cJSON_CreateObject());
        cJSON_AddItemToArray(env, e);
    }
    if (pick(r, 8) == 0) {
        cJSON *sc = cJSON_AddObjectToObject(c, "securityContext");
        cJSON_AddBoolToObject(sc, "privileged", pick(r, 2));
    }
    return c;
}

static cJSON *node_term(rd *r)
{
    cJSON *term = cJSON_CreateObject();
    cJSON *exprs = cJSON_AddArrayToObject(term, "matchExpressions");
    unsigned n = pick(r, 3);
    for (unsigned i = 0; i < n; i++) {
        cJSON *e = cJSON_CreateObject();
        cJSON_AddStringToObject(e, "key", PICK(r, node_keys));
        const char *op = PICK(r, operators);
        cJSON_AddStringToObject(e, "operator", op);
        if (strcmp(op, "Exists") != 0 && strcmp(op, "DoesNotExist") != 0) {
            cJSON *vals = cJSON_AddArrayToObject(e, "values");
            unsigned nv = pick(r, 3);
            for (unsigned k = 0; k < nv; k++)
                cJSON_AddItemToArray(vals, cJSON_CreateString(PICK(r, node_values)));
        }
        cJSON_AddItemToArray(exprs, e);
    }
    return term;
}

static cJSON *make_pod(rd *r, const char **ns_out)
{
    cJSON *pod = cJSON_CreateObject();
    cJSON_AddStringToObject(pod, "apiVersion", "v1");
    cJSON_AddStringToObject(pod, "kind", "Pod");
    cJSON *md = cJSON_AddObjectToObject(pod, "metadata");
    const char *ns = PICK(r, namespaces);
    *ns_out = ns;
    if (pick(r, 2))
        cJSON_AddStringToObject(md, "name", "fuzz-pod");
    else
        cJSON_AddStringToObject(md, "generateName", "fuzz-");
    cJSON_AddStringToObject(md, "namespace", ns);
    unsigned nl = pick(r, 4);
    if (nl) {
        cJSON *labels = cJSON_AddObjectToObject(md, "labels");
        for (unsigned i = 0; i < nl; i++) {
            const char *k = PICK(r, label_keys);
            if (!cJSON_GetObjectItemCaseSensitive(labels, k))
                cJSON_AddStringToObject(labels, k, PICK(r, label_values));
        }
    }
    unsigned na = pick(r, 4);
    if (na) {
        cJSON *ann = cJSON_AddObjectToObject(md, "annotations");
        cJSON_AddStringToObject(ann, "gpu-admission.io/gpu-memory", PICK(r, gpu_mem));
        if (na == 3) cJSON_AddStringToObject(ann, "gpu-admission.io/rule", "stale");
    }
    cJSON *spec = cJSON_AddObjectToObject(pod, "spec");
    cJSON *cs = cJSON_AddArrayToObject(spec, "containers");
    unsigned nc = 1 + pick(r, 3);
    for (unsigned i = 0; i < nc; i++)
        cJSON_AddItemToArray(cs, make_container(r, (int)i, "c"));
    unsigned ni = pick(r, 4) == 0 ? 1 + pick(r, 2) : 0;
    if (ni) {
        cJSON *ics = cJSON_AddArrayToObject(spec, "initContainers");
        for (unsigned i = 0; i < ni; i++)
            cJSON_AddItemToArray(ics, make_container(r, (int)i, "init"));
    }
    if (pick(r, 5) == 0) {
        cJSON *sel = cJSON_AddObjectToObject(spec, "nodeSelector");
        cJSON_AddStringToObject(sel, PICK(r, node_keys), PICK(r, node_values));
    }
    unsigned aff = pick(r, 6);
    if (aff == 1 || aff == 2) {
        cJSON *a = cJSON_AddObjectToObject(spec, "affinity");
        cJSON *na_ = cJSON_AddObjectToObject(a, "nodeAffinity");
        cJSON *req = cJSON_AddObjectToObject(na_, "requiredDuringSchedulingIgnoredDuringExecution");
        cJSON *terms = cJSON_AddArrayToObject(req, "nodeSelectorTerms");
        unsigned nt = aff == 1 ? 1 : 1 + pick(r, 3);
        for (unsigned i = 0; i < nt; i++)
            cJSON_AddItemToArray(terms, node_term(r));
        if (pick(r, 3) == 0) {
            cJSON *pa = cJSON_AddObjectToObject(a, "podAntiAffinity");
            cJSON_AddArrayToObject(pa, "requiredDuringSchedulingIgnoredDuringExecution");
        }
    } else if (aff == 3) {
        cJSON *a = cJSON_AddObjectToObject(spec, "affinity");
        cJSON_AddObjectToObject(a, "podAffinity");
    }
    unsigned nt = pick(r, 4);
    if (nt) {
        cJSON *tols = cJSON_AddArrayToObject(spec, "tolerations");
        for (unsigned i = 0; i < nt; i++) {
            cJSON *t = cJSON_CreateObject();
            cJSON_AddStringToObject(t, "key", PICK(r, toleration_keys));
            static const char *const ops[] = {"Exists", "Equal"};
            if (pick(r, 3)) cJSON_AddStringToObject(t, "operator", PICK(r, ops));
            static const char *const eff[] = {"NoSchedule", "NoExecute", "PreferNoSchedule"};
            cJSON_AddStringToObject(t, "effect", PICK(r, eff));
            if (pick(r, 4) == 0) cJSON_AddNumberToObject(t, "tolerationSeconds", 300);
            cJSON_AddItemToArray(tols, t);
        }
    }
    unsigned extra = pick(r, 10);
    if (extra == 1)
        cJSON_AddStringToObject(spec, "runtimeClassName", pick(r, 2) ? "nvidia" : "runc");
    else if (extra == 2)
        cJSON_AddStringToObject(spec, "nodeName", "node-1");
    else if (extra == 3)
        set_item(spec, "tolerations", cJSON_CreateString("not-a-list"));
    else if (extra == 4)
        set_item(md, "labels", cJSON_CreateArray());
    return pod;
}

/* ---------------------------------------------------------------- properties */

static int empty_patch(const cJSON *patch)
{
    return !patch || (cJSON_IsArray(patch) && cJSON_GetArraySize(patch) == 0);
}

static void check_applies(const cJSON *from, const cJSON *patch, const cJSON *want,
                          const char *what)
{
    char why[256], msg[4400];
    cJSON *a = cJSON_Duplicate(from, 1);
    gpa_error err = {0};
    if (gpa_patch_apply(a, patch, &err) != GPA_OK) {
        snprintf(msg, sizeof msg, "%s: gpa_patch_apply refuses the patch: %s", what, err.message);
        fz_fail(msg, patch, from);
    }
    if (!cJSON_Compare(a, want, 1)) {
        snprintf(msg, sizeof msg, "%s: gpa_patch_apply(from, patch) != expected", what);
        fz_fail(msg, a, want);
    }
    cJSON_Delete(a);
    cJSON *b = cJSON_Duplicate(from, 1);
    if (fz_ref_patch_apply(&b, patch, why, sizeof why) != 0) {
        snprintf(msg, sizeof msg, "%s: a strict RFC 6902 applier refuses the patch: %s", what, why);
        fz_fail(msg, patch, from);
    }
    if (!cJSON_Compare(b, want, 1)) {
        snprintf(msg, sizeof msg, "%s: RFC 6902 apply(from, patch) != expected", what);
        fz_fail(msg, b, want);
    }
    cJSON_Delete(b);
}

static int is_extended(const char *name)
{
    return name && strchr(name, '/') && !strstr(name, "kubernetes.io/");
}

/* A whole, non-negative quantity, as the API server requires for extended resources. */
static int whole_quantity(const cJSON *v)
{
    gpa_quantity q;
    int64_t n;
    if (cJSON_IsString(v))
        return gpa_quantity_parse(&q, v->valuestring, strlen(v->valuestring), NULL) == GPA_OK &&
               gpa_quantity_integer(&q, &n) && n >= 0;
    /* range first: converting a double outside int64 is undefined behaviour */
    return cJSON_IsNumber(v) && v->valuedouble >= 0 && v->valuedouble < 9.2e18 &&
           v->valuedouble == (double)(int64_t)v->valuedouble;
}

/* The API server defaults requests from limits before any webhook runs: an arriving pod has a
 * request for every limit. Applied to the fuzzed pod so it looks like what a webhook gets. */
static void api_server_defaults(cJSON *pod)
{
    static const char *const lists[] = {"containers", "initContainers"};
    cJSON *spec = cJSON_GetObjectItemCaseSensitive(pod, "spec");
    for (size_t l = 0; l < 2; l++) {
        cJSON *c;
        cJSON_ArrayForEach(c, cJSON_GetObjectItemCaseSensitive(spec, lists[l])) {
            cJSON *res = cJSON_GetObjectItemCaseSensitive(c, "resources");
            cJSON *lim = cJSON_GetObjectItemCaseSensitive(res, "limits");
            if (!cJSON_IsObject(lim)) continue;
            cJSON *req = cJSON_GetObjectItemCaseSensitive(res, "requests");
            if (!req) req = cJSON_AddObjectToObject(res, "requests");
            if (!cJSON_IsObject(req)) continue;
            const cJSON *r;
            cJSON_ArrayForEach(r, lim) {
                if (r->string && !cJSON_GetObjectItemCaseSensitive(req, r->string))
                    cJSON_AddItemToObject(req, r->string, cJSON_Duplicate(r, 1));
            }
        }
    }
}

/* A pod the API server rejects in validation, after the webhooks: an extended resource (a
 * name with a '/' outside kubernetes.io) that is not a whole non-negative number, or whose
 * request differs from its limit ("must be equal to ... limit" / "Limit must be set for non
 * overcommitable resources"). Such a pod is never re-invoked on our output, so the
 * reinvocation properties (idempotency, mutate/validate agreement) do not apply to it; patch
 * application still does. */
static int rejected_by_api_server(const cJSON *pod)
{
    static const char *const lists[] = {"containers", "initContainers"};
    const cJSON *spec = cJSON_GetObjectItemCaseSensitive(pod, "spec");
    for (size_t l = 0; l < 2; l++) {
        const cJSON *c;
        cJSON_ArrayForEach(c, cJSON_GetObjectItemCaseSensitive(spec, lists[l])) {
            const cJSON *res = cJSON_GetObjectItemCaseSensitive(c, "resources");
            const cJSON *lim = cJSON_GetObjectItemCaseSensitive(res, "limits");
            const cJSON *req = cJSON_GetObjectItemCaseSensitive(res, "requests");
            const cJSON *r;
            cJSON_ArrayForEach(r, req) {
                if (!is_extended(r->string)) continue;
                const cJSON *lv = cJSON_GetObjectItemCaseSensitive(lim, r->string);
                if (!lv || !cJSON_Compare(lv, r, 1) || !whole_quantity(r)) return 1;
            }
            cJSON_ArrayForEach(r, lim) {
                if (is_extended(r->string) && !whole_quantity(r)) return 1;
            }
        }
    }
    return 0;
}

static void engine_properties(const gpa_policy *p, const cJSON *pod_in, const char *ns)
{
    cJSON *pod = cJSON_Duplicate(pod_in, 1);
    api_server_defaults(pod);
    int reinvocable = !rejected_by_api_server(pod);
    gpa_request req = {.namespace_ = ns, .op = GPA_OP_CREATE, .object = pod};
    gpa_decision d;
    memset(&d, 0, sizeof d);
    gpa_error err = {0};
    if (gpa_engine_mutate(&d, p, &req, &err) != GPA_OK) {
        gpa_decision_clear(&d);
        cJSON_Delete(pod);
        return; /* an error answer; the review fuzzer checks those */
    }
    if (!empty_patch(d.patch)) {
        if (!d.mutated) fz_fail("non-empty patch without decision.mutated", d.patch, NULL);
        check_applies(pod, d.patch, d.mutated, "engine patch");
    }
    if (!empty_patch(d.patch) && reinvocable) {
        gpa_request req2 = req;
        req2.object = d.mutated;
        gpa_decision d2;
        memset(&d2, 0, sizeof d2);
        if (gpa_engine_mutate(&d2, p, &req2, &err) != GPA_OK)
            fz_fail("mutating the mutated pod fails", d.mutated, NULL);
        if (!empty_patch(d2.patch))
            fz_fail("mutation is not idempotent: the mutated pod gets another patch", d2.patch,
                    d.mutated);
        gpa_decision_clear(&d2);
    }
    if (empty_patch(d.patch) && d.mutated && !cJSON_Compare(d.mutated, pod, 1)) {
        fz_fail("empty patch but decision.mutated differs from the pod", d.mutated, pod);
    }
    if (d.allowed && reinvocable) {
        gpa_request vr = req;
        vr.object = d.mutated ? d.mutated : pod;
        gpa_decision v;
        memset(&v, 0, sizeof v);
        if (gpa_engine_validate(&v, p, &vr, &err) == GPA_OK && !v.allowed) {
            fprintf(stderr, "validate says: %s\n", v.message ? v.message : "(no message)");
            fz_fail("mutate allowed the pod but validate denies its result", vr.object, NULL);
        }
        if (v.patch) fz_fail("gpa_engine_validate returned a patch", v.patch, NULL);
        gpa_decision_clear(&v);
    }
    gpa_decision_clear(&d);
    cJSON_Delete(pod);
}

/* gpa_patch_apply against the independent applier on an arbitrary patch: both must agree on
 * whether it applies and on the result, and a refused patch must leave the document as it
 * was (gpa_patch_apply promises atomicity). */
static void apply_differential(const cJSON *doc, const cJSON *patch)
{
    char why[256];
    gpa_error err = {0};
    cJSON *a = cJSON_Duplicate(doc, 1), *b = cJSON_Duplicate(doc, 1);
    int ra = gpa_patch_apply(a, patch, &err);
    int rb = fz_ref_patch_apply(&b, patch, why, sizeof why);
    if ((ra == GPA_OK) != (rb == 0)) {
        fprintf(stderr, "gpa_patch_apply: %s\nreference: %s\n", ra == GPA_OK ? "ok" : err.message,
                rb == 0 ? "ok" : why);
        fz_fail("gpa_patch_apply and the RFC 6902 reference disagree on whether it applies", patch,
                doc);
    }
    if (ra == GPA_OK && !cJSON_Compare(a, b, 1))
        fz_fail("gpa_patch_apply and the RFC 6902 reference give different documents", a, b);
    if (ra != GPA_OK && !cJSON_Compare(a, doc, 1))
        fz_fail("a refused patch left the document changed", a, doc);
    cJSON_Delete(a);
    cJSON_Delete(b);
}

static void diff_properties(const cJSON *pair)
{
    if (!cJSON_IsArray(pair) || cJSON_GetArraySize(pair) != 2) return;
    const cJSON *from = cJSON_GetArrayItem(pair, 0), *to = cJSON_GetArrayItem(pair, 1);
    cJSON *ops = NULL;
    gpa_error err = {0};
    if (gpa_patch_diff(&ops, from, to, &err) != GPA_OK)
        return; /* refusing is fine; a wrong patch is not */
    check_applies(from, ops, to, "diff");
    cJSON_Delete(ops);
    ops = NULL;
    if (gpa_patch_diff(&ops, from, from, &err) == GPA_OK && !empty_patch(ops))
        fz_fail("diff of a document with itself is not empty", ops, from);
    cJSON_Delete(ops);
}

/* Duplicate object keys never reach a webhook (the API server serializes Go structs), and with
 * them "the same document" is ambiguous (cJSON looks up the first of the twins), so such
 * fuzz inputs are skipped rather than reported. */
static int has_duplicate_keys(const cJSON *v)
{
    for (const cJSON *a = v ? v->child : NULL; a; a = a->next) {
        if (cJSON_IsObject(v) && a->string)
            for (const cJSON *b = a->next; b; b = b->next)
                if (b->string && strcmp(a->string, b->string) == 0) return 1;
        if (has_duplicate_keys(a)) return 1;
    }
    return 0;
}

static const char *ns_of(const cJSON *review, const cJSON *pod)
{
    const cJSON *req = cJSON_GetObjectItemCaseSensitive(review, "request");
    const cJSON *ns = cJSON_GetObjectItemCaseSensitive(req, "namespace");
    if (!cJSON_IsString(ns))
        ns = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(pod, "metadata"),
                                              "namespace");
    return cJSON_IsString(ns) ? ns->valuestring : "default";
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size == 0 || size > 128 * 1024) return 0;
    size_t np = fz_policy_count();
    if (data[0] == '{' || data[0] == '[') {
        cJSON *doc = cJSON_ParseWithLength((const char *)data, size);
        if (!doc || has_duplicate_keys(doc)) {
            cJSON_Delete(doc);
            return 0;
        }
        if (data[0] == '[') {
            diff_properties(doc);
        } else {
            const cJSON *adoc = cJSON_GetObjectItemCaseSensitive(doc, "doc");
            const cJSON *apatch = cJSON_GetObjectItemCaseSensitive(doc, "patch");
            if (adoc && cJSON_IsArray(apatch)) {
                apply_differential(adoc, apatch);
                cJSON_Delete(doc);
                return 0;
            }
            const cJSON *pod = doc;
            const cJSON *req = cJSON_GetObjectItemCaseSensitive(doc, "request");
            const cJSON *wrapped = cJSON_GetObjectItemCaseSensitive(doc, "pod");
            const cJSON *pname = cJSON_GetObjectItemCaseSensitive(doc, "policy");
            const cJSON *wns = cJSON_GetObjectItemCaseSensitive(doc, "namespace");
            if (cJSON_IsObject(wrapped) && cJSON_IsString(pname) && cJSON_IsString(wns)) {
                int i = fz_policy_find(pname->valuestring);
                if (i < 0 && getenv("GPA_FUZZ_REGRESSION"))
                    fz_fail("regression names a policy set that does not load", doc, NULL);
                if (i < 0) /* a mutated name while fuzzing: any set will do */
                    i = (int)(size % np);
                engine_properties(fz_policy((size_t)i), wrapped, wns->valuestring);
                cJSON_Delete(doc);
                return 0;
            }
            if (req) pod = cJSON_GetObjectItemCaseSensitive(req, "object");
            if (cJSON_IsObject(pod)) engine_properties(fz_policy(size % np), pod, ns_of(doc, pod));
        }
        cJSON_Delete(doc);
        return 0;
    }
    rd r = {data, size, 1};
    const char *ns = NULL;
    cJSON *pod = make_pod(&r, &ns);
    if (getenv("GPA_FUZZ_DUMP")) {
        /* Turns a generator-mode finding into a stable JSON regression input. */
        char *s = cJSON_PrintUnformatted(pod);
        fprintf(stderr,
                "generated pod as a regression "
                "input:\n{\"policy\":\"%s\",\"namespace\":\"%s\",\"pod\":%s}\n",
                fz_policy_name(data[0] % np), ns, s);
        free(s);
    }
    engine_properties(fz_policy(data[0] % np), pod, ns);
    cJSON_Delete(pod);
    return 0;
}
