/*
 * test_dra_lint.c - check's DRA advice (gpa_policy_warnings, policy_dra.c) and the DRA lines
 * of check's description (gpa_policy_describe): a selector that fails the light CEL check, two
 * pools of one DeviceClass told apart by no selector, a rule placing claims in a pool without
 * dra; and silence for the set NVIDIA's driver is meant to be used with.
 */
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "gpu_admission/claim.h"
#include "gpu_admission/engine.h"
#include "gpu_admission/policy.h"
#include "policy/policy_dra.h"

#define HDR "apiVersion: gpu-admission.io/v1alpha1\nkind: GPUPolicy\nspec:\n" /* lines 1-3 */

#define SEL_A100 "[\"device.attributes['gpu.nvidia.com'].productName == 'NVIDIA A100'\"]"
#define SEL_H100 "[\"device.attributes['gpu.nvidia.com'].productName == 'NVIDIA H100'\"]"

/* spec.dra, then the pools from line 6 (each 4 lines), then the rules. */
static gpa_policy *load(const char *pools, const char *rules, bool with_dra)
{
    char yaml[8192];
    snprintf(yaml, sizeof yaml,
             HDR "%s"
                 "  pools:\n%s"
                 "  rules:\n%s",
             with_dra ? "  dra: {genericClasses: [gpu.nvidia.com]}\n" : "  enforcement: deny\n",
             pools, rules);
    gpa_policy_source s = {"p.yaml", yaml, strlen(yaml)};
    gpa_policy *p = NULL;
    gpa_error e = {0};
    int rc = gpa_policy_load_sources(&p, &s, 1, &e);
    CHECK_INT(rc, GPA_OK);
    if (rc != GPA_OK) fprintf(stderr, "%s\n", e.message);
    return p;
}

static char *warn(const char *pools, const char *rules, bool with_dra)
{
    gpa_policy *p = load(pools, rules, with_dra);
    char *w = p ? gpa_policy_warnings(p) : NULL;
    gpa_policy_unref(p);
    return w;
}

#define POOL(name, product, dra)                                                                   \
    "    - name: " name "\n"                                                                       \
    "      nodeSelector: {nvidia.com/gpu.product: " product "}\n"                                  \
    "      sharing: exclusive\n"                                                                   \
    "      dra: " dra "\n"

#define RULE(name, ns, pool)                                                                       \
    "    - name: " name "\n"                                                                       \
    "      match: {namespaces: [" ns "]}\n"                                                        \
    "      place: {pool: " pool "}\n"

static void cel_checks(void)
{
    size_t at = 99;
    CHECK(gpa_cel_light_check("device.attributes['gpu.nvidia.com'].profile == '1g.10gb'", &at) ==
          NULL);
    CHECK(gpa_cel_light_check("a in [\"x]\", 'y)'] && f(\"\"\"tri'ple\"\"\")", &at) == NULL);
    CHECK_STR(gpa_cel_light_check("device.attributes['gpu.nvidia.com", &at), "unterminated string");
    CHECK_INT((long long)at, 18);
    CHECK_STR(gpa_cel_light_check("f(a]", &at), "closing bracket does not match the opening one");
    CHECK_INT((long long)at, 3);
    CHECK_STR(gpa_cel_light_check("a)", &at), "closing bracket without an opening one");
    CHECK_STR(gpa_cel_light_check("size(device.attributes[", &at), "unclosed bracket");
    CHECK_INT((long long)at, 23);
    CHECK_STR(gpa_cel_light_check("'it\\'s'", &at) ? "bad" : "ok", "ok");
    CHECK_STR(gpa_cel_light_check("'line\nbreak'", &at), "unterminated string");
}

/* A pool may say it serves no DRA (dra: {enabled: false}, issue 31): check stops asking for
 * a dra block there (the chart's pre-install hook runs --strict), a claim a rule places there
 * is still denied, saying so, and nothing else may be written beside it. */
static void pool_serves_no_dra(void)
{
    const char *pools = POOL("a", "A100", "{deviceClass: mig.nvidia.com, selectors: " SEL_A100 "}")
        POOL("plain", "V100", "{enabled: false}");
    const char *rules = RULE("r1", "x", "a") RULE("legacy", "old", "plain");
    char *w = warn(pools, rules, true);
    CHECK(w == NULL);
    if (w) fprintf(stderr, "unexpected warnings:\n%s", w);
    free(w);
    /* without the field the warning says what to write */
    w = warn(POOL("a", "A100",
                  "{deviceClass: mig.nvidia.com, selectors: " SEL_A100
                  "}") "    - name: plain\n"
                       "      nodeSelector: {nvidia.com/gpu.product: V100}\n"
                       "      sharing: exclusive\n",
             rules, true);
    CHECK_CONTAINS(w, "or say it serves no DRA: dra: {enabled: false})");
    free(w);

    gpa_policy *p = load(pools, rules, true);
    char *d = p ? gpa_policy_describe(p) : NULL;
    CHECK_CONTAINS(d, "    dra:            none (enabled: false)\n");
    free(d);
    CHECK(p && gpa_dra_pool_of_class(p, "mig.nvidia.com") != NULL);
    /* the claim engine: placed in the pool that serves no DRA, refused with why */
    cJSON *claim = cJSON_Parse("{\"apiVersion\":\"resource.k8s.io/v1\",\"kind\":"
                               "\"ResourceClaim\",\"metadata\":{\"name\":\"c\",\"namespace\":"
                               "\"old\"},\"spec\":{\"devices\":{\"requests\":[{\"name\":"
                               "\"g\",\"exactly\":{\"deviceClassName\":\"gpu.nvidia.com\"}}]}}}");
    gpa_request req = {.op = GPA_OP_CREATE, .object = claim};
    gpa_decision dec;
    bool judged = false;
    gpa_error err = {0};
    CHECK_INT(gpa_engine_claim(&dec, &judged, p, &req, GPA_CLAIM_CLAIM, false, &err), GPA_OK);
    CHECK(judged && !dec.allowed);
    CHECK(dec.reason && strcmp(dec.reason, "dra-pool-class") == 0);
    CHECK_CONTAINS(dec.message, "rule legacy places GPU claims in pool plain, which serves no DRA "
                                "(dra.enabled: false)");
    gpa_decision_clear(&dec);
    cJSON_Delete(claim);

    /* the revision: enabled: false is a change of meaning (the message), enabled: true with a
     * deviceClass is the default spelled out */
    gpa_policy *bare = load(POOL("a", "A100",
                                 "{deviceClass: mig.nvidia.com, selectors: " SEL_A100
                                 "}") "    - name: plain\n"
                                      "      nodeSelector: {nvidia.com/gpu.product: "
                                      "V100}\n"
                                      "      sharing: exclusive\n",
                            rules, true);
    gpa_policy *on = load(POOL("a", "A100",
                               "{enabled: true, deviceClass: mig.nvidia.com, "
                               "selectors: " SEL_A100 "}") "    - name: plain\n"
                                                           "      nodeSelector: "
                                                           "{nvidia.com/gpu.product: "
                                                           "V100}\n"
                                                           "      sharing: exclusive\n",
                          rules, true);
    CHECK(p && bare && strcmp(gpa_policy_revision(p), gpa_policy_revision(bare)) != 0);
    CHECK(on && bare && strcmp(gpa_policy_revision(on), gpa_policy_revision(bare)) == 0);
    gpa_policy_unref(on);
    gpa_policy_unref(bare);
    gpa_policy_unref(p);

    /* nothing beside it */
    const char *bad[] = {"{enabled: false, deviceClass: gpu.nvidia.com}",
                         "{enabled: false, selectors: [\"true\"]}",
                         "{enabled: false, multiAllocatable: true}"};
    const char *field[] = {"dra.deviceClass", "dra.selectors", "dra.multiAllocatable"};
    for (size_t i = 0; i < 3; i++) {
        char yaml[2048];
        snprintf(
            yaml, sizeof yaml,
            HDR "  dra: {genericClasses: [gpu.nvidia.com]}\n  pools:\n" POOL("plain", "V100", "%s"),
            bad[i]);
        gpa_policy_source src = {"p.yaml", yaml, strlen(yaml)};
        gpa_policy *q = NULL;
        gpa_error e = {0};
        CHECK_INT(gpa_policy_load_sources(&q, &src, 1, &e), GPA_EPOLICY);
        char want[160];
        snprintf(want, sizeof want, "pool plain: %s: the pool says it serves no DRA", field[i]);
        CHECK_CONTAINS(e.message, want);
        gpa_policy_unref(q);
    }
}

int main(void)
{
    cel_checks();

    /* NVIDIA's usual set: MIG and whole GPUs, each pool with its productName selector. */
    char *w = warn(POOL("a", "A100", "{deviceClass: mig.nvidia.com, selectors: " SEL_A100 "}")
                       POOL("h", "H100", "{deviceClass: gpu.nvidia.com, selectors: " SEL_H100 "}"),
                   RULE("r1", "x", "a") RULE("r2", "y", "h"), true);
    CHECK(w == NULL);
    if (w) fprintf(stderr, "unexpected warnings:\n%s", w);
    free(w);

    /* A broken selector: the API server would refuse every claim it is appended to. */
    w = warn(POOL("a", "A100", "{deviceClass: mig.nvidia.com, selectors: [\"x == 'A100\"]}"),
             RULE("r1", "x", "a"), true);
    CHECK_CONTAINS(w, "p.yaml:9:12: warning: pool a dra.selectors[0] is not valid CEL: "
                      "unterminated string at byte 5");
    free(w);

    /* Two pools of one class, one without selectors: it would take the other's devices. The
     * pool with a selector is fine (its claims only fit its own devices). */
    w = warn(POOL("a", "A100", "{deviceClass: gpu.nvidia.com}")
                 POOL("h", "H100", "{deviceClass: gpu.nvidia.com, selectors: " SEL_H100 "}"),
             RULE("r1", "x", "a") RULE("r2", "y", "h"), true);
    CHECK_CONTAINS(w, "p.yaml:9:12: warning: pool a dra.deviceClass gpu.nvidia.com is also pool "
                      "h's, and pool a has no dra.selectors");
    CHECK(w && strstr(w, "pool h dra.deviceClass") == NULL);
    free(w);

    /* A rule placing in a pool without dra: every GPU claim it matches is denied. Only when
     * claims are judged at all (spec.dra written). */
    const char *mixed = POOL("a", "A100",
                             "{deviceClass: mig.nvidia.com, selectors: " SEL_A100
                             "}") "    - name: plain\n"
                                  "      nodeSelector: {nvidia.com/gpu.product: V100}\n"
                                  "      sharing: exclusive\n";
    w = warn(mixed, RULE("r1", "x", "a") RULE("legacy", "old", "plain"), true);
    CHECK_CONTAINS(w, "warning: rule legacy places GPU claims in pool plain, which has no dra "
                      "block: every GPU claim it matches is denied");
    free(w);
    w = warn(mixed, RULE("r1", "x", "a") RULE("legacy", "old", "plain"), false);
    CHECK(w == NULL);
    free(w);

    /* spec.dra.schedulerUsers: read, shown, and refused when empty or a blank name. */
    {
        const char *bad[][2] = {
            {"  dra: {schedulerUsers: []}\n", "p.yaml:4:25: dra.schedulerUsers: must not be empty"},
            {"  dra: {schedulerUsers: [\"\"]}\n", "p.yaml:4:26: user name \"\" is empty"},
            {"  dra: {schedulerUsers: system:x}\n", "dra.schedulerUsers"},
        };
        for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
            char yaml[512];
            snprintf(yaml, sizeof yaml, HDR "%s", bad[i][0]);
            gpa_policy_source s = {"p.yaml", yaml, strlen(yaml)};
            gpa_policy *q = NULL;
            gpa_error e = {0};
            CHECK_INT(gpa_policy_load_sources(&q, &s, 1, &e), GPA_EPOLICY);
            CHECK_CONTAINS(e.message, bad[i][1]);
            gpa_policy_unref(q);
        }
        char yaml[512];
        snprintf(yaml, sizeof yaml,
                 HDR "  dra: {schedulerUsers: [\"system:gke-scheduler\", my-scheduler]}\n");
        gpa_policy_source s = {"p.yaml", yaml, strlen(yaml)};
        gpa_policy *q = NULL;
        gpa_error e = {0};
        CHECK_INT(gpa_policy_load_sources(&q, &s, 1, &e), GPA_OK);
        char *d = q ? gpa_policy_describe(q) : NULL;
        CHECK_CONTAINS(d, "scheduler users [system:gke-scheduler, my-scheduler]");
        CHECK(q && gpa_dra_scheduler_user(q, "my-scheduler"));
        CHECK(q && !gpa_dra_scheduler_user(q, "system:kube-scheduler"));
        CHECK(q && !gpa_dra_scheduler_user(q, NULL));
        free(d);
        gpa_policy_unref(q);
    }

    /* check's description shows the DRA parts. */
    gpa_policy *p =
        load(POOL("s", "L4",
                  "{deviceClass: gpu.nvidia.com, multiAllocatable: true, selectors: " SEL_H100 "}"),
             RULE("r1", "x", "s"), true);
    char *d = p ? gpa_policy_describe(p) : NULL;
    CHECK_CONTAINS(d, "dra:         claims judged, enforcement deny, generic classes "
                      "[gpu.nvidia.com]  (p.yaml:4)");
    CHECK_CONTAINS(d, "    dra:            deviceClass gpu.nvidia.com, multiAllocatable, "
                      "selectors [device.attributes['gpu.nvidia.com'].productName == "
                      "'NVIDIA H100']");
    free(d);
    gpa_policy_unref(p);
    pool_serves_no_dra();
    return check_done();
}
