/*
 * test_engine.c - the decision engine against a policy built by hand (no loader), so the
 * engine's own logic is tested in isolation: MIG auto-sizing and renaming in limits and
 * requests, idempotent reinvocation, time-slicing isolation, topology, the validating
 * checks on a pod the mutating webhook never saw, enforcement modes, UPDATE, DELETE, and the
 * non-GPU fast path (no copy, no patch).
 */
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "gpu_admission/engine.h"
#include "gpu_admission/patch.h"
#include "policy/policy_model.h"

#define S(x) ((char *)(x))

static gpa_toleration tol_gpu[] = {
    {S("nvidia.com/gpu"), S("Exists"), NULL, S("NoSchedule"), false, 0}};
static gpa_toleration tol_shared[] = {
    {S("gpu-admission.io/shared"), S("Exists"), NULL, S("NoSchedule"), false, 0}};
static char *mig_sel_k[] = {S("nvidia.com/gpu.product")};
static char *mig_sel_v[] = {S("NVIDIA-A100-SXM4-80GB")};
static char *ts_sel_k[] = {S("nvidia.com/gpu.sharing-strategy"), S("gpu-admission.io/pool")};
static char *ts_sel_v[] = {S("time-slicing"), S("t4-shared")};
static char *h_sel_k[] = {S("nvidia.com/gpu.product")};
static char *h_sel_v[] = {S("NVIDIA-H100-80GB-HBM3")};
static char *group_labels[] = {S("gpu-admission.io/group"), S("batch.kubernetes.io/job-name")};
static char *ns_inf[] = {S("inference-*")};
static char *ns_nb[] = {S("notebooks"), S("research-*")};
static char *ns_blocked[] = {S("blocked")};
static char *tenant_research_ns[] = {S("research-*"), S("notebooks")};
static char *tenant_platform_ns[] = {S("inference-*"), S("prod-*")};
static char *gpu_res[] = {S("nvidia.com/gpu"), S("nvidia.com/gpu.shared")};

static gpa_pool pools[3];
static gpa_rule rules[4];
static gpa_tenant tenants[2];
static const gpa_mig_profile *a100_profiles[16];
static gpa_policy pol;

static void build_policy(gpa_enforcement enf, bool unmatched_deny)
{
    memset(&pol, 0, sizeof pol);
    memset(pools, 0, sizeof pools);
    memset(rules, 0, sizeof rules);
    const gpa_mig_model *m = gpa_mig_model_find("A100-80GB");
    for (size_t i = 0; i < m->n_profiles; i++)
        a100_profiles[i] = &m->profiles[i];
    pools[0] = (gpa_pool){.name = S("a100-mig"),
                          .node_selector = {1, mig_sel_k, mig_sel_v},
                          .n_tolerations = 1,
                          .tolerations = tol_gpu,
                          .sharing = GPA_SHARING_MIG,
                          .mig_strategy = GPA_MIG_MIXED,
                          .mig_model = m,
                          .n_profiles = m->n_profiles,
                          .profiles = a100_profiles,
                          .allow_untrusted = true};
    pools[1] = (gpa_pool){.name = S("t4-shared"),
                          .node_selector = {2, ts_sel_k, ts_sel_v},
                          .n_tolerations = 1,
                          .tolerations = tol_shared,
                          .sharing = GPA_SHARING_TIME_SLICING,
                          .shared_resource = S("nvidia.com/gpu.shared"),
                          .replicas = 4};
    pools[2] = (gpa_pool){.name = S("h100-train"),
                          .node_selector = {1, h_sel_k, h_sel_v},
                          .n_tolerations = 1,
                          .tolerations = tol_gpu,
                          .sharing = GPA_SHARING_EXCLUSIVE,
                          .runtime_class = S("nvidia"),
                          .allow_untrusted = true,
                          .has_topology = true,
                          .topology = {S("nvidia.com/gpu.clique"),
                                       S("gpu-admission.io/nvlink-island-size"),
                                       8,
                                       {2, group_labels},
                                       GPA_TOPO_REQUIRED}};
    rules[0] = (gpa_rule){.name = S("inference-small"),
                          .namespaces = {1, ns_inf},
                          .gpus = {false, true, 0, 1},
                          .pool = &pools[0],
                          .mig_auto = true};
    rules[1] = (gpa_rule){.name = S("notebooks"), .namespaces = {2, ns_nb}, .pool = &pools[1]};
    rules[2] = (gpa_rule){.name = S("blocked"),
                          .namespaces = {1, ns_blocked},
                          .deny_message = S("no GPUs in this namespace")};
    rules[3] = (gpa_rule){.name = S("training"), .gpus = {true, false, 2, 0}, .pool = &pools[2]};
    tenants[0] = (gpa_tenant){
        S("research"), {2, tenant_research_ns}, GPA_TRUST_UNTRUSTED, {0}, false, false};
    tenants[1] =
        (gpa_tenant){S("platform"), {2, tenant_platform_ns}, GPA_TRUST_TRUSTED, {0}, false, false};
    pol.has_tenancy = true;
    pol.n_tenants = 2;
    pol.tenants = tenants;
    pol.default_trust = GPA_TRUST_UNTRUSTED;
    pol.n_pools = 3;
    pol.pools = pools;
    pol.n_rules = 4;
    pol.rules = rules;
    pol.enforcement = enf;
    pol.unmatched_deny = unmatched_deny;
    pol.gpu_resources = (gpa_strlist){2, gpu_res};
    memset(pol.revision, 'a', 64);
}

static cJSON *J(const char *s)
{
    cJSON *j = cJSON_Parse(s);
    if (!j) {
        fprintf(stderr, "bad test JSON: %s\n", s);
        exit(2);
    }
    return j;
}

#define POD(meta, spec)                                                                            \
    "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":" meta ",\"spec\":" spec "}"
#define GPU_CTR(lim) "{\"containers\":[{\"name\":\"main\",\"image\":\"x\",\"resources\":" lim "}]}"

static int run(gpa_decision *d, bool mutate, const char *ns, gpa_operation op, const cJSON *pod,
               const cJSON *old)
{
    gpa_request req = {
        .namespace_ = ns, .op = op, .object = pod, .old_object = old, .explain = true};
    gpa_error err = {0};
    int rc =
        mutate ? gpa_engine_mutate(d, &pol, &req, &err) : gpa_engine_validate(d, &pol, &req, &err);
    if (rc != GPA_OK) fprintf(stderr, "engine error: %s\n", err.message);
    return rc;
}

static bool has_warning(const gpa_decision *d, const char *needle)
{
    for (size_t i = 0; i < d->n_warnings; i++)
        if (strstr(d->warnings[i], needle)) return true;
    return false;
}

static void dump(const gpa_decision *d)
{
    char *p = d->patch ? cJSON_PrintUnformatted(d->patch) : NULL;
    fprintf(stderr, "allowed=%d reason=%s message=%s\npatch=%s\n", d->allowed,
            d->reason ? d->reason : "-", d->message ? d->message : "-", p ? p : "-");
    for (size_t i = 0; i < d->n_explain; i++)
        fprintf(stderr, "  explain: %s\n", d->explain[i]);
    free(p);
}

/* Mutate, then: the patch applied to the pod gives decision.mutated; mutate again on that
 * gives an empty patch; validate on it allows. */
static void check_mutated_roundtrip(const gpa_decision *d, const char *ns, const cJSON *pod)
{
    CHECK(d->patch != NULL && d->mutated != NULL);
    if (!d->patch || !d->mutated) return;
    cJSON *applied = cJSON_Duplicate(pod, 1);
    CHECK_INT(gpa_patch_apply(applied, d->patch, NULL), GPA_OK);
    CHECK(cJSON_Compare(applied, d->mutated, true));
    gpa_decision again, val;
    CHECK_INT(run(&again, true, ns, GPA_OP_CREATE, d->mutated, NULL), GPA_OK);
    CHECK(again.allowed);
    CHECK(again.patch == NULL);
    CHECK_INT(again.n_warnings, 0);
    CHECK_INT(run(&val, false, ns, GPA_OP_CREATE, d->mutated, NULL), GPA_OK);
    CHECK(val.allowed);
    CHECK(val.message == NULL);
    if (!val.allowed || again.patch) dump(again.patch ? &again : &val);
    gpa_decision_clear(&again);
    gpa_decision_clear(&val);
    cJSON_Delete(applied);
}

static void test_mig_rename(void)
{
    cJSON *pod = J(POD("{\"name\":\"p\",\"annotations\":{\"gpu-admission.io/gpu-memory\":\"8Gi\"}}",
                       GPU_CTR("{\"limits\":{\"nvidia.com/gpu\":\"1\",\"cpu\":\"1\"},"
                               "\"requests\":{\"nvidia.com/gpu\":\"1\"}}")));
    gpa_decision d;
    CHECK_INT(run(&d, true, "inference-a", GPA_OP_CREATE, pod, NULL), GPA_OK);
    CHECK(d.allowed);
    CHECK(d.gpu_pod);
    CHECK_STR(d.rule, "inference-small");
    CHECK_STR(d.pool, "a100-mig");
    const cJSON *c = cJSON_GetArrayItem(
        cJSON_GetObjectItem(cJSON_GetObjectItem(d.mutated, "spec"), "containers"), 0);
    const cJSON *res = cJSON_GetObjectItem(c, "resources");
    const cJSON *lim = cJSON_GetObjectItem(res, "limits"),
                *rq = cJSON_GetObjectItem(res, "requests");
    CHECK(cJSON_GetObjectItem(lim, "nvidia.com/gpu") == NULL);
    CHECK_STR(cJSON_GetStringValue(cJSON_GetObjectItem(lim, "nvidia.com/mig-1g.10gb")), "1");
    CHECK_STR(cJSON_GetStringValue(cJSON_GetObjectItem(rq, "nvidia.com/mig-1g.10gb")), "1");
    CHECK_STR(cJSON_GetStringValue(cJSON_GetObjectItem(lim, "cpu")), "1");
    CHECK(has_warning(
        &d, "nvidia.com/gpu rewritten to nvidia.com/mig-1g.10gb by rule inference-small"));
    CHECK(has_warning(&d, "placed in pool a100-mig by rule inference-small"));
    for (size_t i = 0; i < d.n_warnings; i++)
        CHECK(strlen(d.warnings[i]) < 120);
    /* the renamed key is a remove + add, escaped */
    char *ps = cJSON_PrintUnformatted(d.patch);
    CHECK_CONTAINS(
        ps, "{\"op\":\"remove\",\"path\":\"/spec/containers/0/resources/limits/nvidia.com~1gpu\"}");
    CHECK_CONTAINS(ps, "{\"op\":\"add\",\"path\":\"/spec/containers/0/resources/requests/"
                       "nvidia.com~1mig-1g.10gb\",\"value\":\"1\"}");
    CHECK_CONTAINS(
        ps,
        "\"path\":\"/metadata/annotations/gpu-admission.io~1rule\",\"value\":\"inference-small\"");
    CHECK_CONTAINS(ps, "\"path\":\"/spec/tolerations\"");
    CHECK_CONTAINS(ps, "\"path\":\"/spec/affinity\"");
    free(ps);
    check_mutated_roundtrip(&d, "inference-a", pod);
    gpa_decision_clear(&d);
    cJSON_Delete(pod);

    /* 10Gi = 10.74 GB does not fit 1g.10gb (10 GB): next is 1g.20gb (fewer slices than 2g.20gb) */
    pod = J(POD("{\"name\":\"p\",\"annotations\":{\"gpu-admission.io/gpu-memory\":\"10Gi\"}}",
                GPU_CTR("{\"limits\":{\"nvidia.com/gpu\":1}}")));
    CHECK_INT(run(&d, true, "inference-a", GPA_OP_CREATE, pod, NULL), GPA_OK);
    CHECK(d.allowed);
    ps = d.patch ? cJSON_PrintUnformatted(d.patch) : NULL;
    CHECK_CONTAINS(ps, "limits/nvidia.com~1mig-1g.20gb\",\"value\":1}");
    CHECK(!strstr(ps ? ps : "", "requests")); /* limits only: requests left to the API server */
    free(ps);
    check_mutated_roundtrip(&d, "inference-a", pod);
    gpa_decision_clear(&d);
    cJSON_Delete(pod);

    /* no profile holds 100Gi */
    pod = J(POD("{\"name\":\"p\",\"annotations\":{\"gpu-admission.io/gpu-memory\":\"100Gi\"}}",
                GPU_CTR("{\"limits\":{\"nvidia.com/gpu\":1}}")));
    CHECK_INT(run(&d, true, "inference-a", GPA_OP_CREATE, pod, NULL), GPA_OK);
    CHECK(!d.allowed);
    CHECK_STR(d.reason, "mig-memory");
    CHECK_CONTAINS(d.message, "7g.80gb");
    CHECK(d.patch == NULL);
    gpa_decision_clear(&d);
    cJSON_Delete(pod);
}

static void test_time_slicing(void)
{
    /* research is untrusted: the shared pool denies it */
    cJSON *pod = J(POD("{\"name\":\"nb\"}", GPU_CTR("{\"limits\":{\"nvidia.com/gpu\":1}}")));
    gpa_decision d;
    CHECK_INT(run(&d, true, "notebooks", GPA_OP_CREATE, pod, NULL), GPA_OK);
    CHECK(!d.allowed);
    CHECK_STR(d.reason, "untrusted-shared");
    /* no rule places a pod of namespace notebooks in the MIG pool: the advice says so */
    CHECK_CONTAINS(d.message,
                   "untrusted workloads may not share a time-sliced GPU: no memory or "
                   "fault isolation (pool t4-shared), and no rule places pods of namespace "
                   "notebooks in a MIG pool");
    gpa_decision_clear(&d);

    /* allowUntrusted: placed, isolated, idempotent */
    pools[1].allow_untrusted = true;
    CHECK_INT(run(&d, true, "notebooks", GPA_OP_CREATE, pod, NULL), GPA_OK);
    CHECK(d.allowed);
    const cJSON *labels = cJSON_GetObjectItem(cJSON_GetObjectItem(d.mutated, "metadata"), "labels");
    CHECK_STR(cJSON_GetStringValue(cJSON_GetObjectItem(labels, "gpu-admission.io/pool")),
              "t4-shared");
    CHECK_STR(cJSON_GetStringValue(cJSON_GetObjectItem(labels, "gpu-admission.io/tenant")),
              "research");
    char *ms = cJSON_PrintUnformatted(d.mutated);
    CHECK_CONTAINS(ms,
                   "\"podAntiAffinity\":{\"requiredDuringSchedulingIgnoredDuringExecution\":[{"
                   "\"labelSelector\":{\"matchExpressions\":[{\"key\":\"gpu-admission.io/pool\","
                   "\"operator\":\"In\",\"values\":[\"t4-shared\"]},{\"key\":\"gpu-admission.io/"
                   "tenant\",\"operator\":\"NotIn\",\"values\":[\"research\"]}]},"
                   "\"namespaceSelector\":{},\"topologyKey\":\"kubernetes.io/hostname\"}]}");
    CHECK_CONTAINS(ms, "\"nvidia.com/gpu.shared\":1");
    free(ms);
    check_mutated_roundtrip(&d, "notebooks", pod);

    /* the validating webhook alone, on a pod that skipped mutation but asks the shared
     * resource: isolation missing */
    cJSON *raw = J(POD("{\"name\":\"nb\"}", GPU_CTR("{\"limits\":{\"nvidia.com/gpu.shared\":1}}")));
    gpa_decision v;
    CHECK_INT(run(&v, false, "notebooks", GPA_OP_CREATE, raw, NULL), GPA_OK);
    CHECK(!v.allowed);
    CHECK_STR(v.reason, "isolation-missing");
    gpa_decision_clear(&v);

    /* UPDATE that removes the tenant label from the mutated pod */
    cJSON *upd = cJSON_Duplicate(d.mutated, 1);
    cJSON_DeleteItemFromObject(cJSON_GetObjectItem(cJSON_GetObjectItem(upd, "metadata"), "labels"),
                               "gpu-admission.io/tenant");
    CHECK_INT(run(&v, false, "notebooks", GPA_OP_UPDATE, upd, d.mutated), GPA_OK);
    CHECK(!v.allowed);
    CHECK_STR(v.reason, "isolation-missing");
    gpa_decision_clear(&v);
    /* an UPDATE that changes nothing relevant passes, and mutate never patches on UPDATE */
    CHECK_INT(run(&v, true, "notebooks", GPA_OP_UPDATE, d.mutated, d.mutated), GPA_OK);
    CHECK(v.allowed);
    CHECK(v.patch == NULL);
    gpa_decision_clear(&v);
    pools[1].allow_untrusted = false;

    cJSON_Delete(upd);
    cJSON_Delete(raw);
    gpa_decision_clear(&d);
    cJSON_Delete(pod);
}

static void test_topology_and_affinity(void)
{
    /* two existing nodeSelectorTerms: the pool's requirement goes into both */
    cJSON *pod = J(POD(
        "{\"name\":\"t\",\"labels\":{\"gpu-admission.io/group\":\"job-1\"}}",
        "{\"affinity\":{\"nodeAffinity\":{\"requiredDuringSchedulingIgnoredDuringExecution\":{"
        "\"nodeSelectorTerms\":[{\"matchExpressions\":[{\"key\":\"zone\",\"operator\":\"In\","
        "\"values\":[\"a\"]}]},{\"matchExpressions\":[{\"key\":\"zone\",\"operator\":\"In\","
        "\"values\":[\"b\"]}]}]}}},"
        "\"containers\":[{\"name\":\"main\",\"resources\":{\"limits\":{\"nvidia.com/gpu\":4}}}]}"));
    gpa_decision d;
    CHECK_INT(run(&d, true, "prod-x", GPA_OP_CREATE, pod, NULL), GPA_OK);
    CHECK(d.allowed);
    CHECK_STR(d.rule, "training");
    char *ps = cJSON_PrintUnformatted(d.patch);
    CHECK_CONTAINS(ps,
                   "{\"op\":\"add\",\"path\":\"/spec/affinity/nodeAffinity/"
                   "requiredDuringSchedulingIgnoredDuringExecution/nodeSelectorTerms/0/"
                   "matchExpressions/1\",\"value\":{\"key\":\"nvidia.com/"
                   "gpu.product\",\"operator\":\"In\",\"values\":[\"NVIDIA-H100-80GB-HBM3\"]}}");
    CHECK_CONTAINS(ps, "nodeSelectorTerms/1/matchExpressions/1\"");
    CHECK_CONTAINS(
        ps,
        "\"key\":\"gpu-admission.io/nvlink-island-size\",\"operator\":\"Gt\",\"values\":[\"3\"]");
    CHECK_CONTAINS(ps, "\"topologyKey\":\"nvidia.com/gpu.clique\"");
    CHECK_CONTAINS(ps, "{\"op\":\"add\",\"path\":\"/spec/runtimeClassName\",\"value\":\"nvidia\"}");
    CHECK_CONTAINS(ps, "\"gpu-admission.io/topology\":\"nvlink-island\"");
    free(ps);
    check_mutated_roundtrip(&d, "prod-x", pod);
    gpa_decision_clear(&d);
    cJSON_Delete(pod);

    /* too many GPUs for a node; a contradicting nodeSelector; a different runtime class */
    pod =
        J(POD("{\"name\":\"t\"}",
              "{\"runtimeClassName\":\"kata\",\"nodeSelector\":{\"nvidia.com/gpu.product\":\"T4\"},"
              "\"containers\":[{\"name\":\"main\",\"resources\":{\"limits\":{\"nvidia.com/"
              "gpu\":16}}}]}"));
    CHECK_INT(run(&d, false, "prod-x", GPA_OP_CREATE, pod, NULL), GPA_OK);
    CHECK(!d.allowed);
    CHECK_STR(d.reason, "runtime-class");
    CHECK_CONTAINS(d.message, "pod cannot run in pool h100-train");
    CHECK_CONTAINS(d.message, "nodeSelector nvidia.com/gpu.product=T4");
    CHECK_CONTAINS(d.message, "pod asks 16 GPUs but nodes of pool h100-train have 8");
    gpa_decision_clear(&d);
    cJSON_Delete(pod);
}

static void test_enforcement_and_misc(void)
{
    cJSON *pod = J(POD("{\"name\":\"b\"}", GPU_CTR("{\"limits\":{\"nvidia.com/gpu\":1}}")));
    gpa_decision d;
    CHECK_INT(run(&d, true, "blocked", GPA_OP_CREATE, pod, NULL), GPA_OK);
    CHECK(!d.allowed);
    CHECK_STR(d.reason, "rule-deny");
    CHECK_CONTAINS(d.message, "no GPUs in this namespace");
    gpa_decision_clear(&d);

    build_policy(GPA_ENFORCE_WARN, true);
    CHECK_INT(run(&d, false, "blocked", GPA_OP_CREATE, pod, NULL), GPA_OK);
    CHECK(d.allowed);
    CHECK_STR(d.reason, "rule-deny");
    CHECK(has_warning(&d, "policy violation (warn): denied by GPU policy rule blocked"));
    CHECK(d.n_audit >= 1);
    bool seen = false;
    for (size_t i = 0; i < d.n_audit; i++)
        if (strcmp(d.audit_keys[i], "violation") == 0 && strstr(d.audit_values[i], "no GPUs"))
            seen = true;
    CHECK(seen);
    gpa_decision_clear(&d);

    build_policy(GPA_ENFORCE_AUDIT, true);
    /* unmatched (1 GPU, namespace outside every rule) */
    CHECK_INT(run(&d, true, "default", GPA_OP_CREATE, pod, NULL), GPA_OK);
    CHECK(d.allowed);
    CHECK_STR(d.reason, "unmatched");
    CHECK_INT(d.n_warnings, 0);
    CHECK(d.patch == NULL);
    gpa_decision_clear(&d);
    build_policy(GPA_ENFORCE_DENY, true);
    CHECK_INT(run(&d, true, "default", GPA_OP_CREATE, pod, NULL), GPA_OK);
    CHECK(!d.allowed);
    CHECK_STR(d.reason, "unmatched");
    gpa_decision_clear(&d);
    cJSON_Delete(pod);
    build_policy(GPA_ENFORCE_DENY, false);

    /* non-GPU pod: allowed, nothing patched; untrusted privileged is still denied */
    pod = J(POD("{\"name\":\"web\"}",
                "{\"containers\":[{\"name\":\"w\",\"resources\":{\"limits\":{\"cpu\":\"1\"}}}]}"));
    CHECK_INT(run(&d, true, "default", GPA_OP_CREATE, pod, NULL), GPA_OK);
    CHECK(d.allowed && !d.gpu_pod && d.patch == NULL && d.mutated == NULL && d.n_warnings == 0);
    gpa_decision_clear(&d);
    cJSON_Delete(pod);
    pod = J(POD("{\"name\":\"web\"}",
                "{\"containers\":[{\"name\":\"w\",\"securityContext\":{\"privileged\":true},"
                "\"env\":[{\"name\":\"NVIDIA_VISIBLE_DEVICES\",\"value\":\"all\"}]}]}"));
    CHECK_INT(run(&d, false, "default", GPA_OP_CREATE, pod, NULL), GPA_OK);
    CHECK(!d.allowed);
    CHECK_STR(d.reason, "visible-devices");
    CHECK_CONTAINS(d.message, "privileged");
    gpa_decision_clear(&d);
    /* trusted namespace: allowed */
    CHECK_INT(run(&d, false, "prod-a", GPA_OP_CREATE, pod, NULL), GPA_OK);
    CHECK(d.allowed);
    gpa_decision_clear(&d);
    cJSON_Delete(pod);

    /* bad quantities and requests != limits */
    pod = J(POD("{\"name\":\"q\"}", "{\"containers\":[{\"name\":\"a\",\"resources\":{\"limits\":{"
                                    "\"nvidia.com/gpu\":\"500m\"}}},"
                                    "{\"name\":\"b\",\"resources\":{\"limits\":{\"nvidia.com/"
                                    "gpu\":1},\"requests\":{\"nvidia.com/gpu\":2}}}]}"));
    CHECK_INT(run(&d, false, "prod-a", GPA_OP_CREATE, pod, NULL), GPA_OK);
    CHECK(!d.allowed);
    CHECK_STR(d.reason, "bad-quantity");
    CHECK_CONTAINS(d.message, "500m");
    CHECK_CONTAINS(d.message, "requests nvidia.com/gpu=2 differ from limits (1)");
    gpa_decision_clear(&d);
    cJSON_Delete(pod);

    /* DELETE: nothing to judge */
    gpa_request req = {.namespace_ = "x", .op = GPA_OP_DELETE};
    CHECK_INT(gpa_engine_validate(&d, &pol, &req, NULL), GPA_OK);
    CHECK(d.allowed);
    gpa_decision_clear(&d);
    /* CREATE without a pod is an error, not a crash */
    req.op = GPA_OP_CREATE;
    gpa_error err = {0};
    CHECK_INT(gpa_engine_mutate(&d, &pol, &req, &err), GPA_EINVAL);
    CHECK(err.message[0] != '\0');
    gpa_decision_clear(&d);
}

/* Pods of every wrong shape: each gets a decision (never a crash, never GPA_EINVAL for a
 * pod that is an object), and any patch produced still applies to the pod. */
static void test_malformed_shapes(void)
{
    static const char *const pods[] = {
        "{\"metadata\":\"x\",\"spec\":null}",
        "{\"metadata\":{\"labels\":[],\"annotations\":7},\"spec\":{\"containers\":\"x\"}}",
        "{\"spec\":{\"containers\":[1,null,{\"resources\":\"x\"},{\"resources\":{\"limits\":[]}}]}"
        "}",
        "{\"spec\":{\"containers\":[{\"resources\":{\"limits\":{\"nvidia.com/gpu\":{}}}}]}}",
        "{\"spec\":{\"containers\":[{\"resources\":{\"limits\":{\"nvidia.com/gpu\":true}}}]}}",
        "{\"spec\":{\"containers\":[{\"resources\":{\"limits\":{\"nvidia.com/gpu\":\"1e400\"}}}]}}",
        "{\"spec\":{\"containers\":[{\"resources\":{\"limits\":{\"nvidia.com/gpu\":1e300}}}]}}",
        /* matched GPU pods whose fields placement writes into have the wrong type */
        "{\"metadata\":{\"labels\":null,\"annotations\":\"x\"},\"spec\":{\"affinity\":\"x\","
        "\"tolerations\":{},\"containers\":[{\"resources\":{\"limits\":{\"nvidia.com/gpu\":1}}}]}}",
        "{\"spec\":{\"affinity\":{\"nodeAffinity\":{"
        "\"requiredDuringSchedulingIgnoredDuringExecution\":"
        "{\"nodeSelectorTerms\":[1,\"x\",{\"matchExpressions\":\"y\"},{}]}}},"
        "\"containers\":[{\"resources\":{\"limits\":{\"nvidia.com/gpu\":1}}}]}}",
        "{\"spec\":{\"nodeSelector\":[],\"affinity\":{\"podAntiAffinity\":[]},"
        "\"containers\":[{\"env\":[1,{\"name\":7},{\"name\":\"NVIDIA_VISIBLE_DEVICES\"}],"
        "\"securityContext\":\"x\",\"resources\":{\"limits\":{\"nvidia.com/gpu\":1}}}]}}",
        /* counts near INT64_MAX: sums saturate instead of overflowing (UBSan would see it) */
        "{\"spec\":{\"containers\":[{\"resources\":{\"limits\":{\"nvidia.com/gpu\":\"9e15\"}}},"
        "{\"resources\":{\"limits\":{\"nvidia.com/gpu\":\"9e15\",\"nvidia.com/gpu.shared\":"
        "\"9e15\"}}}]}}",
        "{\"metadata\":{\"labels\":{\"gpu-admission.io/pool\":5,\"gpu-admission.io/tenant\":null}},"
        "\"spec\":{\"containers\":[{\"resources\":{\"requests\":{\"nvidia.com/gpu\":\"x\"}}}]}}",
    };
    const char *const nss[] = {"notebooks", "inference-a", "prod-x", "research-a", ""};
    int patched = 0, denied = 0;
    for (size_t i = 0; i < sizeof pods / sizeof pods[0]; i++) {
        cJSON *pod = J(pods[i]);
        for (size_t n = 0; n < sizeof nss / sizeof nss[0]; n++) {
            for (int hook = 0; hook < 2; hook++) {
                gpa_decision d;
                int rc = run(&d, hook == 0, nss[n], GPA_OP_CREATE, pod, NULL);
                CHECK_INT(rc, GPA_OK);
                patched += rc == GPA_OK && d.patch;
                denied += rc == GPA_OK && !d.allowed;
                if (rc == GPA_OK && d.patch) {
                    cJSON *applied = cJSON_Duplicate(pod, 1);
                    CHECK_INT(gpa_patch_apply(applied, d.patch, NULL), GPA_OK);
                    CHECK(cJSON_Compare(applied, d.mutated, true));
                    cJSON_Delete(applied);
                }
                if (rc == GPA_OK && !d.allowed) CHECK(d.message && d.reason);
                gpa_decision_clear(&d);
            }
        }
        cJSON_Delete(pod);
    }
    CHECK(patched >= 3); /* placement really ran on the odd shapes (inference-a) */
    CHECK(denied > 5);
    /* 1,100 containers of 9e15 GPUs each: the count would overflow int64 (UBSan aborts on
     * signed overflow); it saturates instead, and the pod is still judged */
    cJSON *big = J("{\"spec\":{\"containers\":[]}}");
    cJSON *arr = cJSON_GetObjectItem(cJSON_GetObjectItem(big, "spec"), "containers");
    for (int i = 0; i < 1100; i++)
        cJSON_AddItemToArray(arr, J("{\"name\":\"c\",\"resources\":{\"limits\":"
                                    "{\"nvidia.com/gpu\":\"9e15\"}}}"));
    gpa_decision bd;
    CHECK_INT(run(&bd, false, "prod-x", GPA_OP_CREATE, big, NULL), GPA_OK);
    CHECK(!bd.allowed);
    CHECK_STR(bd.reason, "topology-size");
    CHECK_CONTAINS(bd.message, "9223372036854775807 GPUs");
    gpa_decision_clear(&bd);
    cJSON_Delete(big);
    /* a pod that is not an object is an error, not a decision */
    cJSON *notpod = J("[1]");
    gpa_decision d;
    CHECK_INT(run(&d, true, "x", GPA_OP_CREATE, notpod, NULL), GPA_EINVAL);
    cJSON_Delete(notpod);
}

/* A pool whose nodeSelector has more keys than the engine keeps on the stack (64): every key
 * still becomes a node affinity requirement, and a contradiction on the last one is seen. */
static void test_large_node_selector(void)
{
    char yaml[8192];
    size_t at = (size_t)snprintf(yaml, sizeof yaml,
                                 "apiVersion: gpu-admission.io/v1alpha1\nkind: GPUPolicy\n"
                                 "metadata: {name: big}\nspec:\n  pools:\n    - name: wide\n"
                                 "      sharing: exclusive\n      nodeSelector:\n");
    for (int i = 0; i < 70; i++)
        at +=
            (size_t)snprintf(yaml + at, sizeof yaml - at, "        example.com/k%02d: v%d\n", i, i);
    snprintf(yaml + at, sizeof yaml - at, "  rules:\n    - {name: all, place: {pool: wide}}\n");
    gpa_policy *p = NULL;
    gpa_error err = {0};
    gpa_policy_source src = {"big.yaml", yaml, strlen(yaml)};
    CHECK_INT(gpa_policy_load_sources(&p, &src, 1, &err), GPA_OK);
    if (!p) {
        fprintf(stderr, "%s\n", err.message);
        return;
    }
    cJSON *pod = J(POD("{\"name\":\"w\"}", GPU_CTR("{\"limits\":{\"nvidia.com/gpu\":1}}")));
    gpa_request req = {.namespace_ = "x", .op = GPA_OP_CREATE, .object = pod};
    gpa_decision d;
    CHECK_INT(gpa_engine_mutate(&d, p, &req, NULL), GPA_OK);
    CHECK(d.allowed);
    const cJSON *exprs = cJSON_GetObjectItem(
        cJSON_GetArrayItem(
            cJSON_GetObjectItem(
                cJSON_GetObjectItem(
                    cJSON_GetObjectItem(
                        cJSON_GetObjectItem(cJSON_GetObjectItem(d.mutated, "spec"), "affinity"),
                        "nodeAffinity"),
                    "requiredDuringSchedulingIgnoredDuringExecution"),
                "nodeSelectorTerms"),
            0),
        "matchExpressions");
    CHECK_INT(cJSON_GetArraySize(exprs), 70);
    gpa_decision_clear(&d);
    cJSON_Delete(pod);
    pod = J(POD("{\"name\":\"w\"}", "{\"nodeSelector\":{\"example.com/k69\":\"other\"},"
                                    "\"containers\":[{\"resources\":{\"limits\":"
                                    "{\"nvidia.com/gpu\":1}}}]}"));
    req.object = pod;
    CHECK_INT(gpa_engine_validate(&d, p, &req, NULL), GPA_OK);
    CHECK_STR(d.reason, "affinity-conflict");
    CHECK_CONTAINS(d.message, "example.com/k69=v69");
    gpa_decision_clear(&d);
    cJSON_Delete(pod);
    gpa_policy_unref(p);
}

int main(void)
{
    test_large_node_selector();
    build_policy(GPA_ENFORCE_DENY, false);
    test_malformed_shapes();
    pools[1].allow_untrusted = true; /* the shared pool's placement runs on odd shapes too */
    test_malformed_shapes();
    pools[1].allow_untrusted = false;
    test_mig_rename();
    test_time_slicing();
    test_topology_and_affinity();
    test_enforcement_and_misc();
    return check_done();
}
