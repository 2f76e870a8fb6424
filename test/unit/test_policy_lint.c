/*
 * test_policy_lint.c - gpa_policy_warnings: each provable kind of dead or always-denying rule
 * is named at its file:line:col, and reachable rules get no warning (a silent answer must not
 * be produced by a lint that says nothing at all).
 */
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "gpu_admission/policy.h"

#define HDR "apiVersion: gpu-admission.io/v1alpha1\nkind: GPUPolicy\nspec:\n" /* lines 1-3 */

/* Tenancy + pools shared by the cases (lines 4-22); rules follow from line 23. */
#define BASE                                                                                       \
    HDR "  tenancy:\n"                                                                             \
        "    tenants:\n"                                                                           \
        "      - {name: research, namespaces: [\"research-*\", sandbox], trust: untrusted}\n"      \
        "      - {name: platform, namespaces: [ml-platform, \"prod-*\"], trust: trusted}\n"        \
        "    default: {trust: untrusted}\n"                                                        \
        "  pools:\n"                                                                               \
        "    - name: mig\n"                                                                        \
        "      nodeSelector: {nvidia.com/gpu.product: NVIDIA-A100-SXM4-80GB}\n"                    \
        "      sharing: mig\n"                                                                     \
        "      mig: {gpu: A100-80GB}\n"                                                            \
        "    - name: shared\n"                                                                     \
        "      nodeSelector: {gpu-admission.io/pool: shared}\n"                                    \
        "      sharing: time-slicing\n"                                                            \
        "      timeSlicing: {replicas: 4}\n"                                                       \
        "    - name: train\n"                                                                      \
        "      nodeSelector: {nvidia.com/gpu.product: NVIDIA-H100-80GB-HBM3}\n"                    \
        "      sharing: exclusive\n"                                                               \
        "      topology: {islandLabel: nvidia.com/gpu.clique, gpusPerNode: 8}\n"                   \
        "  rules:\n"

static char *warnings_for(const char *rules)
{
    size_t n = strlen(BASE) + strlen(rules) + 1;
    char *yaml = malloc(n);
    snprintf(yaml, n, "%s%s", BASE, rules);
    gpa_policy_source s = {"p.yaml", yaml, strlen(yaml)};
    gpa_policy *p = NULL;
    gpa_error e = {0};
    int rc = gpa_policy_load_sources(&p, &s, 1, &e);
    CHECK_INT(rc, GPA_OK);
    if (rc != GPA_OK) fprintf(stderr, "%s\n", e.message);
    char *w = p ? gpa_policy_warnings(p) : NULL;
    gpa_policy_unref(p);
    free(yaml);
    return w;
}

static void expect_none(const char *rules)
{
    char *w = warnings_for(rules);
    CHECK(w == NULL);
    if (w) fprintf(stderr, "unexpected warnings:\n%s", w);
    free(w);
}

static void expect(const char *rules, const char *prefix, const char *text)
{
    char *w = warnings_for(rules);
    CHECK_CONTAINS(w, prefix);
    CHECK_CONTAINS(w, text);
    free(w);
}

int main(void)
{
    /* POLICY.md's example trap: inference-* namespaces never belong to tenant research. */
    expect("    - name: inference-small\n"
           "      match: {namespaces: [\"inference-*\"], tenants: [research]}\n"
           "      place: {pool: mig}\n",
           "p.yaml:23:7: warning: rule inference-small", "can never match");
    /* ... and once research owns inference-*, the same rule is fine. */
    expect_none("    - name: inference-small\n"
                "      match: {namespaces: [\"research-*\"], tenants: [research]}\n"
                "      place: {pool: mig}\n");
    /* A glob that meets a tenant's glob only partly is still reachable. */
    expect_none("    - name: r\n"
                "      match: {namespaces: [\"*-a\"], tenants: [research]}\n"
                "      place: {pool: mig}\n");

    /* trusted rule, only untrusted namespaces: pods cannot raise their trust. */
    expect("    - name: t\n"
           "      match: {tenants: [research], trust: trusted}\n"
           "      place: {pool: mig}\n",
           "p.yaml:23:7: warning: rule t", "asks for trusted pods");
    /* untrusted rule on trusted namespaces is fine: pods may lower their trust. */
    expect_none("    - name: u\n"
                "      match: {tenants: [platform], trust: untrusted}\n"
                "      place: {pool: mig}\n");

    /* An earlier match-everything rule shadows every later one. */
    expect("    - name: all\n"
           "      place: {pool: mig}\n"
           "    - name: later\n"
           "      match: {gpus: {min: 2}}\n"
           "      place: {pool: train}\n",
           "p.yaml:25:7: warning: rule later", "rule all (p.yaml:23) before it matches every");
    expect("    - name: zero\n"
           "      match: {gpus: {max: 0}}\n"
           "      place: {pool: mig}\n",
           "warning: rule zero", "gpus max is 0");

    /* Shared pool refusing untrusted pods, reached only by untrusted namespaces. */
    expect("    - name: notebooks\n"
           "      match: {namespaces: [notebooks]}\n"
           "      place: {pool: shared}\n",
           "p.yaml:23:7: warning: rule notebooks", "denies every pod it matches: pool shared");
    expect("    - name: research-shared\n"
           "      match: {tenants: [research]}\n"
           "      place: {pool: shared}\n",
           "warning: rule research-shared", "refuses untrusted pods");
    /* Trusted namespaces (or a trusted-only rule) reach it: no warning. */
    expect_none("    - name: platform-shared\n"
                "      match: {namespaces: [ml-platform]}\n"
                "      place: {pool: shared}\n");
    expect_none("    - name: trusted-shared\n"
                "      match: {trust: trusted}\n"
                "      place: {pool: shared}\n");

    /* More GPUs than the pool's nodes have. */
    expect("    - name: huge\n"
           "      match: {gpus: {min: 9}}\n"
           "      place: {pool: train}\n",
           "warning: rule huge", "more than pool train's gpusPerNode 8");
    expect_none("    - name: fits\n"
                "      match: {gpus: {min: 8}}\n"
                "      place: {pool: train}\n");
    /* Deny rules never place, so the pool checks do not apply to them. */
    expect_none("    - name: no\n"
                "      match: {namespaces: [notebooks]}\n"
                "      deny: \"not here\"\n");
    return check_done();
}
