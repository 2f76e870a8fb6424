/*
 * test_reach.c - the exact reachability analysis (reach.h): glob intersection and
 * containment over namespaces, namespace classes, GPU/memory range partitioning, and each
 * finding of issue 20 on the policies that showed it (a broad rule before a deny rule, an
 * identical rule repeated, a broad tenant rule hiding narrower ones, a deny rule moved below a
 * placement, a union of rules covering one) - and the false-positive traps, which must stay
 * silent.
 */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "check.h"
#include "gpu_admission/glob.h"
#include "gpu_admission/policy.h"
#include "gpu_admission/reach.h"
#include "policy/policy_reach_ns.h"

static bool covers(const char *a, const char *b)
{
    bool v = false;
    CHECK_INT(gpa_ns_glob_covers(a, b, &v), GPA_OK);
    return v;
}

static bool meet(const char *a, const char *b)
{
    bool v = false;
    CHECK_INT(gpa_ns_glob_meet(a, b, &v), GPA_OK);
    return v;
}

static void test_globs(void)
{
    /* '?' is exactly one character */
    CHECK(!meet("vision-?", "vision-eu"));
    CHECK(meet("vision-?", "vision-e"));
    CHECK(!covers("vision-?", "vision-eu"));
    CHECK(covers("vision-*", "vision-?"));
    CHECK(!covers("vision-?", "vision-*"));
    /* '*' runs: a** is a*, and both ways contained */
    CHECK(covers("a**", "a*"));
    CHECK(covers("a*", "a**"));
    CHECK(covers("*a*", "*aa*"));
    CHECK(!covers("*aa*", "*a*"));
    CHECK(covers("a*b", "a?b"));
    CHECK(!covers("a?b", "a*b")); /* "ab", "axxb" */
    CHECK(covers("*", "prod-*"));
    CHECK(!covers("prod-*", "*"));
    CHECK(meet("*-eu", "prod-*"));
    CHECK(!meet("*-eu", "*-us"));
    CHECK(covers("*-*", "a-?-b"));
    /* empty strings: as strings, * matches "" and ? does not; two stars meet on "" */
    CHECK(gpa_glob_match("*", ""));
    CHECK(!gpa_glob_match("?", ""));
    CHECK(gpa_glob_intersects("*", "**"));
    CHECK(!gpa_glob_intersects("?", "a?"));
    CHECK(gpa_glob_intersects("a*", "*b"));
    /* '*' may match the empty run, but a namespace is never empty: ?* covers * */
    CHECK(covers("?*", "*"));
    CHECK(!covers("??*", "*")); /* the namespace "a" */
    CHECK(covers("*", "?"));
    /* only DNS labels are namespaces: '.', a leading or trailing '-', over 63 chars */
    CHECK(gpa_glob_intersects("a.b", "a.b")); /* as strings they meet */
    CHECK(!meet("a.b", "a.b"));
    CHECK(covers("zzz", "a.b")); /* an empty language is inside every other */
    CHECK(!meet("-*", "*"));
    CHECK(!meet("*-", "*"));
    CHECK(meet("a-*", "*"));
    char g64[65], g63[64];
    memset(g64, '?', 64);
    g64[64] = '\0';
    memset(g63, '?', 63);
    g63[63] = '\0';
    CHECK(!meet(g64, "*"));
    CHECK(meet(g63, "*"));
    CHECK(!meet(g63, "a-?"));
}

static void test_classes(void)
{
    /* a*, *b: only a, only b, both (ab), neither - four classes */
    const char *p1[] = {"a*", "*b"};
    gpa_ns_classes c;
    CHECK_INT(gpa_ns_classes_build(&c, p1, 2, NULL), GPA_OK);
    CHECK_INT(c.n, 4);
    bool seen[4] = {0};
    for (size_t i = 0; i < c.n; i++) {
        int k = (int)gpa_ns_class_matches(&c, i, 0) | (int)gpa_ns_class_matches(&c, i, 1) << 1;
        seen[k] = true;
        /* the witness really is in its class */
        CHECK(gpa_glob_match("a*", c.witness[i]) == gpa_ns_class_matches(&c, i, 0));
        CHECK(gpa_glob_match("*b", c.witness[i]) == gpa_ns_class_matches(&c, i, 1));
    }
    CHECK(seen[0] && seen[1] && seen[2] && seen[3]);
    gpa_ns_classes_free(&c);
    /* identical globs make one class between them; shortest witness first */
    const char *p2[] = {"prod", "prod"};
    CHECK_INT(gpa_ns_classes_build(&c, p2, 2, NULL), GPA_OK);
    CHECK_INT(c.n, 2);
    for (size_t i = 0; i < c.n; i++)
        CHECK(gpa_ns_class_matches(&c, i, 0) == gpa_ns_class_matches(&c, i, 1));
    gpa_ns_classes_free(&c);
    /* a product that would explode is refused with a message, not run for minutes */
    const char *p3[24];
    char buf[24][8];
    for (int i = 0; i < 24; i++) {
        snprintf(buf[i], sizeof buf[i], "*%c*", 'a' + i);
        p3[i] = buf[i];
    }
    gpa_error e = {0};
    time_t t0 = time(NULL);
    CHECK_INT(gpa_ns_classes_build(&c, p3, 24, &e), GPA_ERANGE);
    CHECK_CONTAINS(e.message, "analysis refused");
    CHECK(time(NULL) - t0 < 30);
}

#define HDR                                                                                        \
    "apiVersion: gpu-admission.io/v1alpha1\nkind: GPUPolicy\nspec:\n"                              \
    "  tenancy:\n"                                                                                 \
    "    tenants:\n"                                                                               \
    "      - {name: research, namespaces: [\"research-*\", sandbox], trust: untrusted}\n"          \
    "      - {name: platform, namespaces: [ml-platform, \"prod-*\"], trust: trusted}\n"            \
    "      - {name: vision, namespaces: [\"vision-*\"], trust: trusted}\n"                         \
    "    default: {trust: untrusted}\n"                                                            \
    "  pools:\n"                                                                                   \
    "    - name: mig\n"                                                                            \
    "      nodeSelector: {nvidia.com/gpu.product: NVIDIA-A100-SXM4-80GB}\n"                        \
    "      sharing: mig\n"                                                                         \
    "      mig: {gpu: A100-80GB, profiles: [1g.10gb, 2g.20gb, 3g.40gb]}\n"                         \
    "    - name: h100-train\n"                                                                     \
    "      nodeSelector: {nvidia.com/gpu.product: NVIDIA-H100-80GB-HBM3}\n"                        \
    "      sharing: exclusive\n"                                                                   \
    "  rules:\n" /* rules start on line 19 */

typedef struct res {
    gpa_policy *p;
    gpa_reach *r;
    char *text;
} res;

static res analyse(const char *rules)
{
    res out = {0};
    size_t n = strlen(HDR) + strlen(rules) + 1;
    char *yaml = malloc(n);
    snprintf(yaml, n, "%s%s", HDR, rules);
    gpa_policy_source s = {"p.yaml", yaml, strlen(yaml)};
    gpa_error e = {0};
    int rc = gpa_policy_load_sources(&out.p, &s, 1, &e);
    CHECK_INT(rc, GPA_OK);
    if (rc != GPA_OK) fprintf(stderr, "%s\n", e.message);
    free(yaml);
    if (rc != GPA_OK) return out;
    CHECK_INT(gpa_reach_analyze(out.p, &out.r, &e), GPA_OK);
    out.text = gpa_reach_text(out.r, false);
    return out;
}

static void done(res *x)
{
    free(x->text);
    gpa_reach_free(x->r);
    gpa_policy_unref(x->p);
}

static void expect_silent(const char *rules)
{
    res x = analyse(rules);
    CHECK(x.text == NULL);
    if (x.text) fprintf(stderr, "unexpected findings:\n%s", x.text);
    for (size_t i = 0; x.r && i < x.r->n_rules; i++)
        CHECK(x.r->reached[i]);
    done(&x);
}

static void test_findings(void)
{
    /* the first case: a broad training rule silently disables the sandbox deny */
    res x = analyse("    - name: train\n"
                    "      match: {gpus: {min: 2}}\n"
                    "      place: {pool: h100-train}\n"
                    "    - name: no-sandbox-train\n"
                    "      match: {namespaces: [sandbox], gpus: {min: 2}}\n"
                    "      deny: \"no training in sandbox\"\n");
    CHECK_CONTAINS(x.text, "p.yaml:22:7: warning: rule no-sandbox-train never reached: every pod "
                           "it matches is taken first by rule train (p.yaml:19); e.g. namespace "
                           "sandbox, no labels, 2 GPUs, no gpu-memory annotation would be denied "
                           "but is placed by rule train\n");
    CHECK(x.r && x.r->n_findings >= 1 && x.r->findings[0].kind == GPA_REACH_NEVER &&
          x.r->findings[0].n_by == 1 && x.r->findings[0].by[0] == 0);
    done(&x);

    /* partly bypassed: the placement takes only some of the deny rule's pods */
    x = analyse("    - name: train\n"
                "      match: {gpus: {min: 4}}\n"
                "      place: {pool: h100-train}\n"
                "    - name: no-sandbox-train\n"
                "      match: {namespaces: [sandbox], gpus: {min: 2}}\n"
                "      deny: \"no training in sandbox\"\n");
    CHECK_CONTAINS(x.text, "p.yaml:22:7: warning: rule no-sandbox-train denies, but is partly "
                           "bypassed: rule train (p.yaml:19) places some pods it would deny, e.g. "
                           "namespace sandbox, no labels, 4 GPUs, no gpu-memory annotation");
    CHECK(x.r && x.r->reached[1]);
    done(&x);

    /* an identical rule repeated later */
    x = analyse("    - name: a\n"
                "      match: {namespaces: [\"prod-*\"], labels: {app: web}}\n"
                "      place: {pool: mig}\n"
                "    - name: b\n"
                "      match: {namespaces: [\"prod-*\"], labels: {app: web}}\n"
                "      place: {pool: mig}\n");
    CHECK_CONTAINS(x.text, "rule b never reached: every pod it matches is taken first by rule "
                           "a (p.yaml:19); e.g. namespace prod-0, label app=web, 1 GPU");
    done(&x);

    /* a broad tenant rule hides three narrower ones */
    x = analyse("    - name: platform-all\n"
                "      match: {tenants: [platform]}\n"
                "      place: {pool: mig}\n"
                "    - name: prod-eu\n"
                "      match: {namespaces: [prod-eu]}\n"
                "      place: {pool: mig}\n"
                "    - name: ml\n"
                "      match: {namespaces: [ml-platform], gpus: {min: 2}}\n"
                "      place: {pool: h100-train}\n"
                "    - name: prod-trusted\n"
                "      match: {namespaces: [\"prod-*\"], trust: trusted}\n"
                "      place: {pool: mig}\n");
    CHECK_CONTAINS(x.text, "rule prod-eu never reached: every pod it matches is taken first by "
                           "rule platform-all");
    CHECK_CONTAINS(x.text, "rule ml never reached");
    CHECK_CONTAINS(x.text, "rule prod-trusted never reached");
    done(&x);

    /* the union of two rules covers a third: small (with the annotation) and large */
    x = analyse("    - name: small\n"
                "      match: {namespaces: [\"prod-*\"], gpus: {max: 1}, gpuMemory: {max: 20Gi}}\n"
                "      place: {pool: mig}\n"
                "    - name: large\n"
                "      match: {namespaces: [\"prod-*\"], gpus: {max: 1}}\n"
                "      place: {pool: mig}\n"
                "    - name: prod-eu\n"
                "      match: {namespaces: [prod-eu], gpus: {max: 1}}\n"
                "      place: {pool: mig}\n");
    CHECK_CONTAINS(x.text, "rule prod-eu never reached: every pod it matches is taken first by "
                           "rules small (p.yaml:19) \xe2\x88\xaa large (p.yaml:22)");
    CHECK(x.r && x.r->findings[0].n_by == 2);
    done(&x);

    /* ranges: [1,1] and [2,inf) leave nothing for gpus 3..4; gpuMemory min over the pool */
    x = analyse("    - name: one\n"
                "      match: {gpus: {max: 1}}\n"
                "      place: {pool: mig}\n"
                "    - name: many\n"
                "      match: {gpus: {min: 2}}\n"
                "      place: {pool: h100-train}\n"
                "    - name: mid\n"
                "      match: {gpus: {min: 3, max: 4}}\n"
                "      place: {pool: h100-train}\n");
    CHECK_CONTAINS(x.text, "rule mid never reached: every pod it matches is taken first by rule "
                           "many (p.yaml:22); e.g. namespace 0, no labels, 3 GPUs");
    done(&x);
    x = analyse("    - name: huge\n"
                "      match: {namespaces: [ml-platform], gpuMemory: {min: 41G}}\n"
                "      place: {pool: mig}\n"
                "    - name: fits\n"
                "      match: {namespaces: [ml-platform], gpuMemory: {min: 40G}}\n"
                "      place: {pool: mig}\n");
    CHECK_CONTAINS(x.text, "p.yaml:19:7: warning: rule huge denies every pod it matches: its "
                           "gpuMemory min 41000000000 bytes is more than the largest MIG profile "
                           "pool mig offers it, 3g.40gb (40000000000 bytes)\n");
    CHECK(!strstr(x.text ? x.text : "", "rule fits"));
    done(&x);

    /* range partitioning at the exact bounds: [1,5] and [6,inf) cover [3,inf); a memory bound
     * is inclusive, so max 10G holds exactly 10G and min 10G + 1 byte is past it */
    x = analyse("    - name: low\n"
                "      match: {gpus: {min: 1, max: 5}}\n"
                "      place: {pool: mig}\n"
                "    - name: high\n"
                "      match: {gpus: {min: 6}}\n"
                "      place: {pool: h100-train}\n"
                "    - name: three-up\n"
                "      match: {gpus: {min: 3}}\n"
                "      place: {pool: h100-train}\n");
    CHECK_CONTAINS(x.text, "rule three-up never reached: every pod it matches is taken first by "
                           "rules low (p.yaml:19) \xe2\x88\xaa high (p.yaml:22)");
    done(&x);
    x = analyse("    - name: upto10\n"
                "      match: {namespaces: [ml-platform], gpuMemory: {max: 10G}}\n"
                "      place: {pool: mig}\n"
                "    - name: exactly10\n"
                "      match: {namespaces: [ml-platform], gpuMemory: {min: 10G, max: 10G}}\n"
                "      place: {pool: mig}\n"
                "    - name: past10\n"
                "      match: {namespaces: [ml-platform], gpuMemory: {min: \"10000000001\"}}\n"
                "      place: {pool: mig}\n");
    CHECK_CONTAINS(x.text, "rule exactly10 never reached: every pod it matches is taken first by "
                           "rule upto10 (p.yaml:19); e.g. namespace ml-platform, no labels, 1 GPU, "
                           "gpu-memory 10000000000 bytes goes to rule upto10");
    CHECK(x.r && x.r->reached[2] && x.r->witness[2].has_mem &&
          x.r->witness[2].mem == 10000000001LL);
    done(&x);

    /* a rule whose namespaces no DNS label matches (the lint cannot see this) */
    x = analyse("    - name: dotted\n"
                "      match: {namespaces: [team.a]}\n"
                "      place: {pool: mig}\n");
    CHECK_CONTAINS(x.text, "rule dotted never reached: it matches no GPU pod (no namespace");
    done(&x);
    /* what the lint already says is not said twice */
    x = analyse("    - name: zero\n"
                "      match: {gpus: {max: 0}}\n"
                "      place: {pool: mig}\n");
    CHECK(x.text == NULL);
    CHECK(x.r && !x.r->reached[0]);
    done(&x);

    /* unmatched GPU pods, per tenant (info, not a warning) */
    x = analyse("    - name: only\n"
                "      match: {namespaces: [\"research-*\"]}\n"
                "      place: {pool: mig}\n");
    CHECK(x.text == NULL);
    CHECK_INT(gpa_reach_warning_count(x.r), 0);
    char *info = gpa_reach_text(x.r, true);
    CHECK_CONTAINS(info, "p.yaml:6:9: info: tenant research: some GPU pods match no rule and are "
                         "allowed unplaced (unmatched: allow), e.g. namespace sandbox, no labels, "
                         "1 GPU");
    CHECK_CONTAINS(info, "tenant platform: ");
    CHECK_CONTAINS(info, "info: namespaces in no tenant: ");
    free(info);
    done(&x);
}

static void test_traps(void)
{
    /* vision-? does not cover vision-eu */
    expect_silent("    - name: short\n"
                  "      match: {namespaces: [\"vision-?\"]}\n"
                  "      place: {pool: mig}\n"
                  "    - name: eu\n"
                  "      match: {namespaces: [vision-eu]}\n"
                  "      place: {pool: mig}\n");
    /* a trusted tenant's rule after trust: untrusted is reachable */
    expect_silent("    - name: untrusted\n"
                  "      match: {trust: untrusted}\n"
                  "      place: {pool: mig}\n"
                  "    - name: platform\n"
                  "      match: {tenants: [platform]}\n"
                  "      place: {pool: mig}\n");
    /* ... but not when the trust label is pinned too: only untrusted pods carry it */
    res x = analyse("    - name: untrusted\n"
                    "      match: {trust: untrusted}\n"
                    "      place: {pool: mig}\n"
                    "    - name: lowered\n"
                    "      match: {tenants: [platform], labels: {gpu-admission.io/trust: "
                    "untrusted}}\n"
                    "      place: {pool: mig}\n");
    CHECK_CONTAINS(x.text, "rule lowered never reached: every pod it matches is taken first by "
                           "rule untrusted");
    done(&x);
    /* a gpuMemory rule does not hide a later rule for the same namespace */
    expect_silent("    - name: mem\n"
                  "      match: {namespaces: [ml-platform], gpuMemory: {max: 80Gi}}\n"
                  "      place: {pool: mig}\n"
                  "    - name: rest\n"
                  "      match: {namespaces: [ml-platform]}\n"
                  "      place: {pool: mig}\n");
    /* a label rule does not hide a later rule without it (other values, absent) */
    expect_silent("    - name: web\n"
                  "      match: {labels: {app: web}}\n"
                  "      place: {pool: mig}\n"
                  "    - name: api\n"
                  "      match: {labels: {app: api}}\n"
                  "      place: {pool: mig}\n"
                  "    - name: any\n"
                  "      match: {gpus: {min: 1}}\n"
                  "      place: {pool: mig}\n");
    /* a namespace in no tenant named like a tenant never passes for it (POLICY.md "Tenant
     * names cannot be taken"): namespace "vision" is not in tenant vision (its globs are
     * vision-*), so `tenants: [vision]` does not meet it and its GPU pods are denied before
     * any rule - the rule for namespace vision matches no pod at all, and the tenant rule's
     * witness is a namespace of the tenant, never "vision" itself */
    x = analyse("    - name: vision-tenant\n"
                "      match: {tenants: [vision]}\n"
                "      place: {pool: mig}\n"
                "    - name: vision-ns\n"
                "      match: {namespaces: [vision]}\n"
                "      place: {pool: mig}\n");
    CHECK_CONTAINS(x.text, "rule vision-ns never reached: it matches no GPU pod");
    CHECK_CONTAINS(x.text, "namespace vision is in no tenant and carries tenant vision's name: "
                           "its GPU pods are denied (tenant-name-taken)");
    CHECK(strstr(x.text, "vision-tenant never reached") == NULL);
    CHECK(x.r->reached[0]);
    CHECK(strcmp(x.r->witness[0].ns, "vision") != 0);
    CHECK(strncmp(x.r->witness[0].ns, "vision-", 7) == 0);
    done(&x);
}

int main(void)
{
    test_globs();
    test_classes();
    test_findings();
    test_traps();
    return check_done();
}
