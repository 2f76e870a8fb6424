/*
 * test_engine_index.c - the engine's load-time prefix index (policy/rule_index.c) is only a
 * shortcut: for every namespace the rule and tenant chosen with the index equal those chosen
 * by the full glob walk (index removed). Globs cover the edge cases: leading wildcards,
 * '?', prefixes longer than the 8 indexed bytes, exact names shorter than 8, several globs
 * per rule, rules without namespaces; and generated policies where several rules of different
 * prefix lengths fit one namespace (the first in rule order must win), with and without more
 * candidates than the lookup holds.
 */
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "gpu_admission/engine.h"
#include "policy/policy_model.h"

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

/* A generated policy of n rules and tenants whose globs have every literal-prefix length
 * (0-8 and longer) and overlap, so several rules fit one namespace and the first in rule
 * order must win; some rules need 2+ GPUs so an earlier candidate can fail. With many "t*"
 * globs the candidates overflow the lookup and the engine walks every key instead. */
/* tmpl with '#' replaced by k in decimal */
static void fill(char *out, size_t cap, const char *tmpl, int k)
{
    size_t at = 0;
    for (const char *c = tmpl; *c && at + 12 < cap; c++)
        at += *c == '#' ? (size_t)snprintf(out + at, cap - at, "%d", k) : (out[at] = *c, 1);
    out[at] = '\0';
}

static char *generated_policy(int n, int n_t_star)
{
    size_t cap = 200000, at = 0;
    char *y = malloc(cap);
    if (!y) return NULL;
    at += (size_t)snprintf(y + at, cap - at,
                           "apiVersion: gpu-admission.io/v1alpha1\nkind: GPUPolicy\n"
                           "metadata: {name: gen}\nspec:\n  tenancy:\n    tenants:\n");
    static const char *const tglob[] = {"team-#-*", "team-#*", "t#*", "*-#", "team-#-prod", "a?#*"};
    for (int i = 0; i < n; i++) {
        char g[64];
        fill(g, sizeof g, tglob[i % 6], i % 23);
        at += (size_t)snprintf(y + at, cap - at,
                               "      - {name: t%d, namespaces: [\"%s\"], trust: trusted}\n", i, g);
    }
    at += (size_t)snprintf(y + at, cap - at,
                           "    default: {trust: untrusted}\n  pools:\n"
                           "    - {name: p, sharing: exclusive, nodeSelector: {k: v}}\n"
                           "  rules:\n");
    static const char *const rglob[] = {"team-#-*", "team-#*",    "te*",       "team-#-prod",
                                        "*-prod",   "team-1#-a*", "longer-#-*"};
    for (int i = 0; i < n; i++) {
        char g[64];
        fill(g, sizeof g, rglob[i % 7], i % 17);
        at += (size_t)snprintf(
            y + at, cap - at,
            "    - {name: r%d, match: {namespaces: [\"%s\"]%s}, place: {pool: p}}\n", i, g,
            i % 3 == 1 ? ", gpus: {min: 2}" : "");
    }
    for (int i = 0; i < n_t_star; i++)
        at += (size_t)snprintf(y + at, cap - at,
                               "    - {name: s%d, match: {namespaces: [\"t*\"], gpus: {min: 9}}, "
                               "place: {pool: p}}\n",
                               i);
    if (at >= cap - 1) {
        free(y);
        return NULL;
    }
    return y;
}

static void compare_generated(int n, int n_t_star)
{
    char *y = generated_policy(n, n_t_star);
    CHECK(y != NULL);
    if (!y) return;
    gpa_policy *p = NULL;
    gpa_error err = {0};
    gpa_policy_source src = {"gen.yaml", y, strlen(y)};
    int rc = gpa_policy_load_sources(&p, &src, 1, &err);
    CHECK_INT(rc, GPA_OK);
    if (rc != GPA_OK) {
        fprintf(stderr, "%s\n", err.message);
        free(y);
        return;
    }
    const struct gpa_rule_index *saved = p->rule_index;
    CHECK(saved != NULL);
    int matched = 0, mismatches = 0;
    for (int i = 0; i < 40; i++) {
        static const char *const tmpl[] = {"team-#-prod", "team-#-x",   "team-1#-a", "t#",
                                           "x-#",         "longer-#-q", "ab#",       "te"};
        char ns[64];
        fill(ns, sizeof ns, tmpl[i % 8], i % 19);
        for (int gpus = 1; gpus <= 3; gpus += 2) {
            const char *r1, *r2;
            char t1[64], t2[64];
            p->rule_index = saved;
            decide(p, ns, gpus, &r1, t1, sizeof t1);
            p->rule_index = NULL;
            decide(p, ns, gpus, &r2, t2, sizeof t2);
            bool same =
                (r1 == NULL) == (r2 == NULL) && (!r1 || strcmp(r1, r2) == 0) && strcmp(t1, t2) == 0;
            if (!same) {
                mismatches++;
                fprintf(stderr, "gen %d/%d ns %s gpus %d: index %s %s, full walk %s %s\n", n,
                        n_t_star, ns, gpus, r1 ? r1 : "-", t1, r2 ? r2 : "-", t2);
            }
            matched += r1 != NULL;
        }
    }
    p->rule_index = saved;
    CHECK_INT(mismatches, 0);
    CHECK(matched > 20); /* the namespaces do meet rules: the comparison is not vacuous */
    gpa_policy_unref(p);
    free(y);
}

int main(void)
{
    compare_generated(150, 0);  /* the lookup answers */
    compare_generated(150, 80); /* "t*" x 80: too many candidates, the full key walk answers */

    gpa_policy *p = NULL;
    gpa_error err = {0};
    gpa_policy_source src = {"idx.yaml", POLICY, strlen(POLICY)};
    int rc = gpa_policy_load_sources(&p, &src, 1, &err);
    CHECK_INT(rc, GPA_OK);
    if (rc != GPA_OK) {
        fprintf(stderr, "%s\n", err.message);
        return check_done();
    }
    CHECK(p->rule_index != NULL);
    const struct gpa_rule_index *saved = p->rule_index;
    int compared = 0;
    for (size_t i = 0; i < sizeof NS / sizeof NS[0]; i++) {
        for (int gpus = 1; gpus <= 3; gpus += 2) {
            const char *r1, *r2;
            char t1[64], t2[64];
            p->rule_index = saved;
            decide(p, NS[i], gpus, &r1, t1, sizeof t1);
            p->rule_index = NULL;
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
    p->rule_index = saved;
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
