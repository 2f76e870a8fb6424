/*
 * test_engine_text.c - the warning lines the index builds at load (policy/rule_index.c: per pool
 * and per rule) are byte for byte the lines the engine formats without the index, and both
 * paths give the same decision: warnings, explain lines, patch, message, audit annotations.
 *
 * The policy has every kind of pool that warns (mig mixed and single, time-slicing, mps,
 * exclusive with topology), tolerations with and without value / effect / seconds, and names
 * long enough that a line is cut at 119 bytes, so the load-time cut is compared with the
 * request-time one (and a pod's group label cut inside a 2-byte character). Each pod is decided
 * with the index and with engine_index set to NULL.
 */
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "gpu_admission/engine.h"
#include "policy/policy_model.h"

/* eight 2-byte characters */
#define E8       "\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9"
#define LONG_KEY "example.com/a-rather-long-node-label-key-that-pushes-the-line-past-the-cut"

static const char *POLICY =
    "apiVersion: gpu-admission.io/v1alpha1\n"
    "kind: GPUPolicy\n"
    "metadata: {name: text}\n"
    "spec:\n"
    "  tenancy:\n"
    "    tenants:\n"
    "      - {name: team-a, namespaces: [\"team-a-*\"], trust: trusted}\n"
    "      - {name: team-b, namespaces: [\"team-b-*\"], trust: untrusted}\n"
    "    default: {trust: untrusted}\n"
    "  pools:\n"
    "    - name: mig-mixed\n"
    "      nodeSelector: {nvidia.com/gpu.product: NVIDIA-A100-SXM4-80GB, " LONG_KEY ": w}\n"
    "      tolerations:\n"
    "        - {key: nvidia.com/gpu, operator: Exists, effect: NoSchedule}\n"
    "        - {key: dedicated, operator: Equal, value: gpu, effect: NoExecute, tolerationSeconds: "
    "30}\n"
    "        - {operator: Exists}\n"
    "      sharing: mig\n"
    "      mig: {strategy: mixed, gpu: A100-80GB}\n"
    "    - name: mig-single\n"
    "      nodeSelector: {rack: r1}\n"
    "      sharing: mig\n"
    "      mig: {strategy: single, gpu: A100-80GB, product: NVIDIA-A100-SXM4-80GB,\n"
    "            profiles: [2g.20gb]}\n"
    "    - name: shared-pool-with-a-long-name-for-the-cut\n"
    "      nodeSelector: {" LONG_KEY ": v}\n"
    "      tolerations: [{key: gpu-admission.io/shared, operator: Exists, effect: NoSchedule}]\n"
    "      sharing: time-slicing\n"
    "      runtimeClassName: nvidia\n"
    "      timeSlicing: {resource: nvidia.com/gpu.shared, replicas: 4}\n"
    "      allowUntrusted: true\n"
    "    - name: mps\n"
    "      nodeSelector: {nvidia.com/gpu.sharing-strategy: mps}\n"
    "      sharing: mps\n"
    "      mps: {resource: nvidia.com/gpu.mps, replicas: 2}\n"
    "      allowUntrusted: true\n"
    "    - name: train-pool\n"
    "      nodeSelector: {nvidia.com/gpu.product: NVIDIA-H100-80GB-HBM3}\n"
    "      sharing: exclusive\n"
    "      runtimeClassName: nvidia-with-a-long-runtime-class-name-so-that-this-line-is-long\n"
    "      topology: {islandLabel: nvidia.com/gpu.clique, islandSizeLabel: " LONG_KEY
    ", gpusPerNode: 8}\n"
    "  rules:\n"
    "    - {name: to-mixed-by-a-rule-with-a-long-name-that-the-rename-line-cuts, match: "
    "{namespaces: [\"mixed-*\"]}, place: {pool: mig-mixed}}\n"
    "    - {name: to-single, match: {namespaces: [\"single-*\"]}, place: {pool: mig-single}}\n"
    "    - {name: to-shared-by-a-rule-whose-name-is-long-as-well, match: {namespaces: "
    "[\"team-a-*\"]}, place: {pool: shared-pool-with-a-long-name-for-the-cut}}\n"
    "    - {name: to-mps, match: {namespaces: [\"team-b-*\"]}, place: {pool: mps}}\n"
    "    - {name: to-train, match: {namespaces: [\"train-*\"]}, place: {pool: train-pool}}\n";

/* pods: {ns, gpus, extra labels, extra spec members} */
static const struct {
    const char *ns;
    int gpus;
    const char *labels;
    const char *spec;
} PODS[] = {
    {"mixed-1", 1, "", ""},
    {"mixed-2", 1, "",
     ",\"tolerations\":[{\"key\":\"nvidia.com/gpu\",\"operator\":\"Exists\","
     "\"effect\":\"NoSchedule\"}]"},
    {"single-1", 1, "", ""},
    {"team-a-x", 1, "", ""},
    {"team-a-y", 1, ",\"gpu-admission.io/pool\":\"shared-pool-with-a-long-name-for-the-cut\"", ""},
    {"team-b-x", 1, "", ",\"runtimeClassName\":null"},
    {"train-1", 4, ",\"gpu-admission.io/group\":\"job-7\"", ""},
    {"train-3", 2, ",\"gpu-admission.io/group\":\"x" E8 E8 E8 E8 E8 "\"", ""},
    {"train-2", 1, "", ",\"runtimeClassName\":\"other\""},
    {"nowhere", 1, "", ""},
};

typedef struct outcome {
    bool allowed;
    char *text; /* everything else the decision says, one line per item */
} outcome;

static void add(char **s, size_t *len, const char *tag, const char *v)
{
    size_t n = strlen(tag) + (v ? strlen(v) : 6) + 3;
    *s = realloc(*s, *len + n);
    *len += (size_t)snprintf(*s + *len, n, "%s %s\n", tag, v ? v : "(null)");
}

static outcome decide(const gpa_policy *p, size_t i)
{
    char pod[1024];
    snprintf(pod, sizeof pod,
             "{\"metadata\":{\"name\":\"x\",\"labels\":{\"app\":\"a\"%s},\"annotations\":"
             "{\"k\":\"v\"}},\"spec\":{\"containers\":[{\"name\":\"c\",\"resources\":{\"limits\":"
             "{\"nvidia.com/gpu\":%d},\"requests\":{\"nvidia.com/gpu\":\"%d\"}}}]%s}}",
             PODS[i].labels, PODS[i].gpus, PODS[i].gpus, PODS[i].spec);
    cJSON *j = cJSON_Parse(pod);
    CHECK(j != NULL);
    gpa_request req = {.namespace_ = PODS[i].ns, .op = GPA_OP_CREATE, .object = j, .explain = true};
    gpa_decision d;
    gpa_error err = {0};
    CHECK_INT(gpa_engine_mutate(&d, p, &req, &err), GPA_OK);
    outcome o = {d.allowed, NULL};
    size_t len = 0;
    add(&o.text, &len, "message", d.message);
    for (size_t k = 0; k < d.n_warnings; k++) {
        CHECK(strlen(d.warnings[k]) < 120);
        add(&o.text, &len, "warning", d.warnings[k]);
    }
    for (size_t k = 0; k < d.n_explain; k++)
        add(&o.text, &len, "explain", d.explain[k]);
    for (size_t k = 0; k < d.n_audit; k++) {
        add(&o.text, &len, "audit-key", d.audit_keys[k]);
        add(&o.text, &len, "audit-value", d.audit_values[k]);
    }
    char *patch = d.patch ? cJSON_PrintUnformatted(d.patch) : NULL;
    add(&o.text, &len, "patch", patch);
    free(patch);
    gpa_decision_clear(&d);
    cJSON_Delete(j);
    return o;
}

/* Placement gives a pod without node terms exactly one term holding the pool's requirements,
 * and the mutating webhook's check then reads the requirements instead of that term. The
 * validating webhook, judging the mutated pod, reads the term: both must tell the same
 * conflicts (here the pod's own nodeSelector) and the same absence of them. */
static const char *CONFLICT_POLICY =
    "apiVersion: gpu-admission.io/v1alpha1\n"
    "kind: GPUPolicy\n"
    "metadata: {name: conflict}\n"
    "spec:\n"
    "  enforcement: warn\n"
    "  pools:\n"
    "    - name: racked\n"
    "      nodeSelector: {zone: z, rack: r1}\n"
    "      sharing: mig\n"
    "      mig: {strategy: single, gpu: A100-80GB, product: NVIDIA-A100-SXM4-80GB}\n"
    "    - name: fine\n"
    "      nodeSelector: {rack: r2, zone: z}\n"
    "      sharing: exclusive\n"
    "      topology: {islandLabel: nvidia.com/gpu.clique, islandSizeLabel: rack}\n"
    "  rules:\n"
    "    - {name: to-racked, match: {namespaces: [racked]}, place: {pool: racked}}\n"
    "    - {name: to-fine, match: {namespaces: [fine]}, place: {pool: fine}}\n";

static void conflict_same_as_validate(void)
{
    gpa_policy *p = NULL;
    gpa_error err = {0};
    gpa_policy_source src = {"conflict.yaml", CONFLICT_POLICY, strlen(CONFLICT_POLICY)};
    int rc = gpa_policy_load_sources(&p, &src, 1, &err);
    CHECK_INT(rc, GPA_OK);
    if (rc != GPA_OK) {
        fprintf(stderr, "%s\n", err.message);
        return;
    }
    static const struct {
        const char *ns, *selector, *want;
        int gpus;
    } CASES[] = {
        {"racked", ",\"nodeSelector\":{\"rack\":\"r9\"}", "its nodeSelector rack=r9", 1},
        {"racked", ",\"nodeSelector\":{\"rack\":\"r1\"}", NULL, 1},
        {"racked", "", NULL, 1},
        {"fine", "", NULL, 2},
    };
    for (size_t i = 0; i < sizeof CASES / sizeof CASES[0]; i++) {
        char pod[512];
        snprintf(pod, sizeof pod,
                 "{\"metadata\":{\"name\":\"x\"},\"spec\":{\"containers\":[{\"name\":\"c\","
                 "\"resources\":{\"limits\":{\"nvidia.com/gpu\":%d}}}]%s}}",
                 CASES[i].gpus, CASES[i].selector);
        cJSON *j = cJSON_Parse(pod);
        gpa_request req = {.namespace_ = CASES[i].ns, .op = GPA_OP_CREATE, .object = j};
        gpa_decision m, v;
        CHECK_INT(gpa_engine_mutate(&m, p, &req, &err), GPA_OK);
        CHECK(m.mutated != NULL);
        gpa_request vreq = {.namespace_ = CASES[i].ns, .op = GPA_OP_CREATE, .object = m.mutated};
        CHECK_INT(gpa_engine_validate(&v, p, &vreq, &err), GPA_OK);
        if (CASES[i].want)
            CHECK(m.message && strstr(m.message, CASES[i].want));
        else
            CHECK(m.message == NULL);
        CHECK((m.message == NULL) == (v.message == NULL));
        if (m.message && v.message) CHECK_STR(m.message, v.message);
        gpa_decision_clear(&m);
        gpa_decision_clear(&v);
        cJSON_Delete(j);
    }
    gpa_policy_unref(p);
}

int main(void)
{
    conflict_same_as_validate();

    gpa_policy *p = NULL;
    gpa_error err = {0};
    gpa_policy_source src = {"text.yaml", POLICY, strlen(POLICY)};
    int rc = gpa_policy_load_sources(&p, &src, 1, &err);
    CHECK_INT(rc, GPA_OK);
    if (rc != GPA_OK) {
        fprintf(stderr, "%s\n", err.message);
        return check_done();
    }
    const struct gpa_rule_index *saved = p->rule_index;
    CHECK(saved != NULL);
    int warnings = 0, cut = 0, cut_utf8 = 0;
    for (size_t i = 0; i < sizeof PODS / sizeof PODS[0]; i++) {
        p->rule_index = saved;
        outcome a = decide(p, i);
        p->rule_index = NULL;
        outcome b = decide(p, i);
        p->rule_index = saved;
        CHECK(a.allowed == b.allowed);
        CHECK_STR(a.text, b.text);
        /* what the comparison covered: placement warnings, some of them cut */
        for (const char *w = a.text; (w = strstr(w, "\nwarning ")); w++) {
            warnings++;
            const char *eol = strchr(w + 1, '\n');
            if (eol && eol - w > 4 && memcmp(eol - 3, "...", 3) == 0) {
                cut++;
                /* the cut backed off a 2-byte character: 115 or 116 bytes before "..." */
                if (eol - 3 - (w + 9) < 116) cut_utf8++;
            }
        }
        free(a.text);
        free(b.text);
    }
    CHECK(warnings >= 20);
    CHECK(cut >= 3);
    CHECK(cut_utf8 >= 1);
    gpa_policy_unref(p);
    return check_done();
}
