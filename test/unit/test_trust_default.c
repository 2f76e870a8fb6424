/*
 * test_trust_default.c - where trust comes from when the policy says little: a policy with no
 * tenancy block, and one whose tenancy has no default, treat every namespace as untrusted
 * (POLICY.md: the safe default), so a privileged container is denied; a tenancy default of
 * trusted is honoured. Must never pass if a missing tenancy block trusts everyone.
 */
#include <stdio.h>
#include <string.h>

#include "check.h"
#include "gpu_admission/engine.h"
#include "gpu_admission/policy.h"

static const char *privileged_pod =
    "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"p\"},\"spec\":{"
    "\"containers\":[{\"name\":\"tool\",\"image\":\"x\",\"securityContext\":{\"privileged\":"
    "true}}]}}";

/* The decision of the validating webhook for the privileged pod under this spec text. */
static void judge(const char *spec, bool want_allowed)
{
    char yaml[1024];
    snprintf(yaml, sizeof yaml,
             "apiVersion: gpu-admission.io/v1alpha1\nkind: GPUPolicy\nmetadata: {name: t}\n"
             "spec:\n%s",
             spec);
    gpa_policy_source src = {"t.yaml", yaml, strlen(yaml)};
    gpa_policy *p = NULL;
    gpa_error err = {0};
    int rc = gpa_policy_load_sources(&p, &src, 1, &err);
    CHECK_INT(rc, GPA_OK);
    if (rc != GPA_OK) {
        fprintf(stderr, "policy does not load: %s\n", err.message);
        return;
    }
    cJSON *pod = cJSON_Parse(privileged_pod);
    gpa_request req = {.namespace_ = "anything", .op = GPA_OP_CREATE, .object = pod};
    gpa_decision d;
    CHECK_INT(gpa_engine_validate(&d, p, &req, &err), GPA_OK);
    CHECK(d.allowed == want_allowed);
    if (want_allowed)
        CHECK(d.reason == NULL);
    else
        CHECK_STR(d.reason, "privileged");
    if (d.allowed != want_allowed) fprintf(stderr, "spec:\n%s-> allowed=%d\n", spec, d.allowed);
    gpa_decision_clear(&d);
    cJSON_Delete(pod);
    gpa_policy_unref(p);
}

int main(void)
{
    judge("  enforcement: deny\n", false); /* no tenancy block at all */
    judge("  tenancy:\n    tenants:\n      - {name: a, namespaces: [team-a], trust: trusted}\n",
          false); /* tenancy without a default; the namespace is no tenant's */
    judge("  tenancy:\n    default: {trust: untrusted}\n", false);
    judge("  tenancy:\n    default: {trust: trusted}\n", true);
    return check_done();
}
