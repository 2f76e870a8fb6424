/*
 * test_engine_index.c - the engine's load-time prefix index (engine_index.c) is only a
 * shortcut: for every namespace the rule and tenant chosen with the index equal those chosen
 * by the full glob walk (index removed). Globs cover the edge cases: leading wildcards,
 * '?', prefixes longer than the 8 indexed bytes, exact names shorter than 8, several globs
 * per rule, rules without namespaces.
 */
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "gpu_admission/engine.h"
#include "policy_model.h"

static const char *POLICY =
    "apiVersion: gpu-admission.io/v1alpha1\n"
    "kind: GPUPolicy\n"
    "metadata: {name: idx}\n"
    "spec:\n"
    "  tenancy:\n"
    "    tenants:\n"
    "      - {name: t-star, namespaces: [\"*-star\"], trust: trusted}\n"
    "      - {name: t-long, namespaces: [\"inference-team-*\", \"ab\"], trust: trusted}\n"
    "      - {name: t-q, namespaces: [\"a?c*\"], trust: untrusted}\n"
    "      - {name: t-exact, namespaces: [\"inference\"], trust: trusted}\n"
    "    default: {trust: untrusted}\n"
    "  pools:\n"
    "    - {name: p, sharing: exclusive, nodeSelector: {k: v}}\n"
    "  rules:\n"
    "    - {name: r-long, match: {namespaces: [\"inference-team-b*\"]}, place: {pool: p}}\n"
    "    - {name: r-exact, match: {namespaces: [\"inference\"]}, place: {pool: p}}\n"
    "    - {name: r-q, match: {namespaces: [\"ab?d\"]}, place: {pool: p}}\n"
    "    - {name: r-two, match: {namespaces: [\"x*\", \"*-star\"]}, place: {pool: p}}\n"
    "    - {name: r-short, match: {namespaces: [\"ab\"]}, place: {pool: p}}\n"
    "    - {name: r-star, match: {namespaces: [\"*y\"]}, place: {pool: p}}\n"
    "    - {name: r-any, match: {gpus: {min: 3}}, place: {pool: p}}\n";

static const char *const NS[] = {"inference-team-b1",
                                 "inference-team-a",
                                 "inference",
                                 "inferenc",
                                 "inference-x",
                                 "abcd",
                                 "abxd",
                                 "ab",
                                 "abc",
                                 "a",
                                 "",
                                 "x",
                                 "xylophone",
                                 "new-star",
                                 "y",
                                 "zzy",
                                 "acc",
                                 "abd"};

static void decide(const gpa_policy *p, const char *ns, int gpus, const char **rule,
                   char *audit_tenant, size_t cap)
{
    char pod[512];
    snprintf(pod, sizeof pod,
             "{\"metadata\":{\"name\":\"x\",\"labels\":{\"gpu-admission.io/tenant\":\"probe\"}},"
             "\"spec\":{\"containers\":[{\"name\":\"c\",\"resources\":{\"limits\":"
             "{\"nvidia.com/gpu\":%d}}}]}}",
             gpus);
    cJSON *j = cJSON_Parse(pod);
    gpa_request req = {.namespace_ = ns, .op = GPA_OP_CREATE, .object = j};
    gpa_decision d;
    CHECK_INT(gpa_engine_validate(&d, p, &req, NULL), GPA_OK);
    *rule = d.rule; /* points into the policy */
    /* the tenant-claim message names the namespace's tenant: "... belongs to tenant T; ..." */
    const char *m = d.message ? strstr(d.message, "belongs to tenant ") : NULL;
    snprintf(audit_tenant, cap, "%s", m ? m + 18 : "?");
    char *semi = strchr(audit_tenant, ';');
    if (semi) *semi = '\0';
    gpa_decision_clear(&d);
    cJSON_Delete(j);
}

int main(void)
{
    gpa_policy *p = NULL;
    gpa_error err = {0};
    gpa_policy_source src = {"idx.yaml", POLICY, strlen(POLICY)};
    int rc = gpa_policy_load_sources(&p, &src, 1, &err);
    CHECK_INT(rc, GPA_OK);
    if (rc != GPA_OK) {
        fprintf(stderr, "%s\n", err.message);
        return check_done();
    }
    CHECK(p->engine_index != NULL);
    const struct gpa_engine_index *saved = p->engine_index;
    int compared = 0;
    for (size_t i = 0; i < sizeof NS / sizeof NS[0]; i++) {
        for (int gpus = 1; gpus <= 3; gpus += 2) {
            const char *r1, *r2;
            char t1[64], t2[64];
            p->engine_index = saved;
            decide(p, NS[i], gpus, &r1, t1, sizeof t1);
            p->engine_index = NULL;
            decide(p, NS[i], gpus, &r2, t2, sizeof t2);
            if ((r1 == NULL) != (r2 == NULL) || (r1 && strcmp(r1, r2) != 0) || strcmp(t1, t2) != 0)
                fprintf(stderr, "ns %s gpus %d: index rule %s tenant %s, full walk %s %s\n", NS[i],
                        gpus, r1 ? r1 : "-", t1, r2 ? r2 : "-", t2);
            CHECK((r1 == NULL) == (r2 == NULL));
            if (r1 && r2) CHECK_STR(r1, r2);
            CHECK_STR(t1, t2);
            compared++;
        }
    }
    p->engine_index = saved;
    /* spot checks that the walk itself is right, so equality above means something */
    const char *r;
    char t[64];
    decide(p, "inference-team-b1", 1, &r, t, sizeof t);
    CHECK_STR(r, "r-long");
    CHECK_STR(t, "t-long");
    decide(p, "inference", 1, &r, t, sizeof t);
    CHECK_STR(r, "r-exact");
    CHECK_STR(t, "t-exact");
    decide(p, "abxd", 1, &r, t, sizeof t);
    CHECK_STR(r, "r-q");
    decide(p, "new-star", 1, &r, t, sizeof t);
    CHECK_STR(r, "r-two");
    CHECK_STR(t, "t-star");
    decide(p, "ab", 1, &r, t, sizeof t);
    CHECK_STR(r, "r-short");
    CHECK_STR(t, "t-long");
    decide(p, "zzy", 3, &r, t, sizeof t);
    CHECK_STR(r, "r-star");
    CHECK_STR(t, "zzy"); /* no tenant: the namespace is its own */
    decide(p, "acc", 3, &r, t, sizeof t);
    CHECK_STR(r, "r-any");
    CHECK_STR(t, "t-q");
    CHECK_INT(compared, 36);
    gpa_policy_unref(p);
    return check_done();
}
