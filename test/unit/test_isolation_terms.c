/*
 * test_isolation_terms.c - the tenant-isolation term must be recognised exactly: a pod that
 * carries a look-alike anti-affinity term (narrowed by an extra expression or matchLabels,
 * limited to listed namespaces or a labelled namespaceSelector, keyed on the wrong topology,
 * aimed at the wrong pool or tenant, or only preferred) is not isolated. The mutating webhook
 * must still add the real term (and leave the look-alike in place), and the validating webhook
 * must deny the same pod as isolation-missing. The real term itself is accepted by both.
 *
 * Uses the golden "cluster" policy (namespace notebooks: tenant labs, trusted, pool t4-shared).
 * Must never accept a term that keeps fewer pods off the node than the webhook's own term:
 * that is two tenants sharing a time-sliced card.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "gpu_admission/engine.h"
#include "gpu_admission/patch.h"
#include "gpu_admission/policy.h"

/* The term the webhook adds for tenant labs on pool t4-shared (golden case 010). */
#define POOL_X "{\"key\":\"gpu-admission.io/pool\",\"operator\":\"In\",\"values\":[\"t4-shared\"]}"
#define TENANT_X                                                                                   \
    "{\"key\":\"gpu-admission.io/tenant\",\"operator\":\"NotIn\",\"values\":[\"labs\"]}"
#define REAL_TERM                                                                                  \
    "{\"labelSelector\":{\"matchExpressions\":[" POOL_X "," TENANT_X "]},"                         \
    "\"namespaceSelector\":{},\"topologyKey\":\"kubernetes.io/hostname\"}"

typedef struct variant {
    const char *name;
    const char *anti_affinity; /* the pod's spec.affinity.podAntiAffinity */
} variant;

#define REQUIRED(term) "{\"requiredDuringSchedulingIgnoredDuringExecution\":[" term "]}"
#define HOST           ",\"topologyKey\":\"kubernetes.io/hostname\"}"

static const variant look_alikes[] = {
    {"narrowed by a third expression",
     REQUIRED("{\"labelSelector\":{\"matchExpressions\":[" POOL_X "," TENANT_X
              ",{\"key\":\"app\",\"operator\":\"In\",\"values\":[\"no-such-app\"]}]},"
              "\"namespaceSelector\":{}" HOST)},
    {"narrowed by matchLabels",
     REQUIRED(
         "{\"labelSelector\":{\"matchLabels\":{\"app\":\"jupyter\"},\"matchExpressions\":[" POOL_X
         "," TENANT_X "]},\"namespaceSelector\":{}" HOST)},
    {"namespaces instead of namespaceSelector",
     REQUIRED("{\"labelSelector\":{\"matchExpressions\":[" POOL_X "," TENANT_X
              "]},\"namespaces\":[\"notebooks\"]" HOST)},
    {"namespaces next to an empty namespaceSelector",
     REQUIRED("{\"labelSelector\":{\"matchExpressions\":[" POOL_X "," TENANT_X
              "]},\"namespaceSelector\":{},\"namespaces\":[\"notebooks\"]" HOST)},
    {"labelled namespaceSelector",
     REQUIRED("{\"labelSelector\":{\"matchExpressions\":[" POOL_X "," TENANT_X
              "]},\"namespaceSelector\":{\"matchLabels\":{\"team\":\"labs\"}}" HOST)},
    {"topologyKey no node has",
     REQUIRED("{\"labelSelector\":{\"matchExpressions\":[" POOL_X "," TENANT_X
              "]},\"namespaceSelector\":{},\"topologyKey\":\"example.com/no-such-label\"}")},
    {"zone topologyKey",
     REQUIRED("{\"labelSelector\":{\"matchExpressions\":[" POOL_X "," TENANT_X
              "]},\"namespaceSelector\":{},\"topologyKey\":\"topology.kubernetes.io/zone\"}")},
    {"no topologyKey", REQUIRED("{\"labelSelector\":{\"matchExpressions\":[" POOL_X "," TENANT_X
                                "]},\"namespaceSelector\":{}}")},
    {"another pool",
     REQUIRED("{\"labelSelector\":{\"matchExpressions\":[{\"key\":\"gpu-admission.io/pool\","
              "\"operator\":\"In\",\"values\":[\"a100-mig\"]}," TENANT_X
              "]},\"namespaceSelector\":{}" HOST)},
    {"another tenant excluded",
     REQUIRED("{\"labelSelector\":{\"matchExpressions\":[" POOL_X
              ",{\"key\":\"gpu-admission.io/tenant\",\"operator\":\"NotIn\",\"values\":["
              "\"research\"]}]},\"namespaceSelector\":{}" HOST)},
    {"tenant NotIn two tenants",
     REQUIRED("{\"labelSelector\":{\"matchExpressions\":[" POOL_X
              ",{\"key\":\"gpu-admission.io/tenant\",\"operator\":\"NotIn\",\"values\":["
              "\"labs\",\"research\"]}]},\"namespaceSelector\":{}" HOST)},
    {"tenant In instead of NotIn",
     REQUIRED("{\"labelSelector\":{\"matchExpressions\":[" POOL_X
              ",{\"key\":\"gpu-admission.io/tenant\",\"operator\":\"In\",\"values\":["
              "\"labs\"]}]},\"namespaceSelector\":{}" HOST)},
    {"pool expression twice, no tenant expression",
     REQUIRED("{\"labelSelector\":{\"matchExpressions\":[" POOL_X "," POOL_X
              "]},\"namespaceSelector\":{}" HOST)},
    {"tenant expression twice, no pool expression",
     REQUIRED("{\"labelSelector\":{\"matchExpressions\":[" TENANT_X "," TENANT_X
              "]},\"namespaceSelector\":{}" HOST)},
    {"only preferred", "{\"preferredDuringSchedulingIgnoredDuringExecution\":[{\"weight\":100,"
                       "\"podAffinityTerm\":" REAL_TERM "}]}"},
};

static gpa_policy *pol;

static cJSON *parse(const char *s)
{
    cJSON *j = cJSON_Parse(s);
    if (!j) {
        fprintf(stderr, "bad test JSON: %s\n", s);
        exit(2);
    }
    return j;
}

/* A notebooks pod asking `resource`, carrying the given podAntiAffinity (NULL: none). */
static cJSON *pod(const char *resource, bool labelled, const char *anti)
{
    char buf[8192];
    snprintf(buf, sizeof buf,
             "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"nb\",\"labels\":{"
             "\"app\":\"jupyter\"%s}},\"spec\":{\"containers\":[{\"name\":\"main\",\"image\":"
             "\"x\",\"resources\":{\"limits\":{\"%s\":1}}}]%s%s%s%s}}",
             labelled ? ",\"gpu-admission.io/pool\":\"t4-shared\","
                        "\"gpu-admission.io/tenant\":\"labs\""
                      : "",
             resource,
             /* a placed pod keeps to its pool's nodes, off the other shared pools' (the
              * validating webhook refuses one that could land there: shared-pool-unplaced) */
             labelled ? ",\"nodeSelector\":{\"nvidia.com/gpu.sharing-strategy\":\"time-slicing\","
                        "\"gpu-admission.io/pool\":\"t4-shared\"}"
                      : "",
             anti ? ",\"affinity\":{\"podAntiAffinity\":" : "", anti ? anti : "", anti ? "}" : "");
    return parse(buf);
}

static int run(gpa_decision *d, bool mutate, const cJSON *obj)
{
    gpa_request req = {.namespace_ = "notebooks", .op = GPA_OP_CREATE, .object = obj};
    gpa_error err = {0};
    int rc =
        mutate ? gpa_engine_mutate(d, pol, &req, &err) : gpa_engine_validate(d, pol, &req, &err);
    if (rc != GPA_OK) fprintf(stderr, "engine error: %s\n", err.message);
    return rc;
}

static const cJSON *required_terms(const cJSON *p)
{
    const cJSON *aff =
        cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(p, "spec"), "affinity");
    return cJSON_GetObjectItemCaseSensitive(
        cJSON_GetObjectItemCaseSensitive(aff, "podAntiAffinity"),
        "requiredDuringSchedulingIgnoredDuringExecution");
}

static bool holds_term(const cJSON *arr, const cJSON *term)
{
    const cJSON *t;
    cJSON_ArrayForEach(t, arr) {
        if (cJSON_Compare(t, term, true)) return true;
    }
    return false;
}

/* Mutating webhook: the real term is added next to whatever the pod had, and the result is
 * accepted by the validating webhook. */
static void mutate_adds_real_term(const variant *v, const cJSON *real)
{
    cJSON *in = pod("nvidia.com/gpu", false, v->anti_affinity);
    cJSON *theirs = parse(v->anti_affinity);
    gpa_decision d;
    CHECK_INT(run(&d, true, in), GPA_OK);
    CHECK(d.allowed);
    CHECK(d.mutated != NULL);
    const cJSON *terms = d.mutated ? required_terms(d.mutated) : NULL;
    bool ok = holds_term(terms, real);
    if (!ok) fprintf(stderr, "mutate kept a look-alike (%s) as the isolation term\n", v->name);
    CHECK(ok);
    /* the pod's own term is kept, never rewritten */
    const cJSON *own =
        cJSON_GetObjectItemCaseSensitive(theirs, "requiredDuringSchedulingIgnoredDuringExecution");
    if (own) CHECK(holds_term(terms, own->child));
    if (d.mutated) {
        gpa_decision val;
        CHECK_INT(run(&val, false, d.mutated), GPA_OK);
        CHECK(val.allowed);
        if (!val.allowed) fprintf(stderr, "%s: validate after mutate: %s\n", v->name, val.message);
        gpa_decision_clear(&val);
    }
    gpa_decision_clear(&d);
    cJSON_Delete(theirs);
    cJSON_Delete(in);
}

/* Validating webhook alone: the labelled pod with only the look-alike is denied. */
static void validate_denies(const variant *v)
{
    cJSON *in = pod("nvidia.com/gpu.shared", true, v->anti_affinity);
    gpa_decision d;
    CHECK_INT(run(&d, false, in), GPA_OK);
    CHECK(!d.allowed);
    CHECK_STR(d.reason, "isolation-missing");
    if (d.allowed) fprintf(stderr, "validate allowed a look-alike isolation term (%s)\n", v->name);
    gpa_decision_clear(&d);
    cJSON_Delete(in);
}

static void real_term_accepted(const cJSON *real)
{
    /* mutate: the real term is there already, so no second copy */
    cJSON *in = pod("nvidia.com/gpu", false, REQUIRED(REAL_TERM));
    gpa_decision d;
    CHECK_INT(run(&d, true, in), GPA_OK);
    CHECK(d.allowed);
    const cJSON *terms = d.mutated ? required_terms(d.mutated) : NULL;
    CHECK_INT(cJSON_GetArraySize(terms), 1);
    CHECK(holds_term(terms, real));
    gpa_decision_clear(&d);
    cJSON_Delete(in);
    /* validate: labelled, real term, shared resource: allowed */
    in = pod("nvidia.com/gpu.shared", true, REQUIRED(REAL_TERM));
    CHECK_INT(run(&d, false, in), GPA_OK);
    CHECK(d.allowed);
    CHECK(d.reason == NULL);
    gpa_decision_clear(&d);
    cJSON_Delete(in);
}

int main(void)
{
    gpa_error err = {0};
    const char *dir = GPA_SOURCE_DIR "/test/golden/policies/cluster";
    if (gpa_policy_load_dir(&pol, dir, &err) != GPA_OK) {
        fprintf(stderr, "cannot load %s: %s\n", dir, err.message);
        return 1;
    }
    cJSON *real = parse(REAL_TERM);
    real_term_accepted(real);
    for (size_t i = 0; i < sizeof look_alikes / sizeof look_alikes[0]; i++) {
        mutate_adds_real_term(&look_alikes[i], real);
        validate_denies(&look_alikes[i]);
    }
    cJSON_Delete(real);
    gpa_policy_unref(pol);
    return check_done();
}
