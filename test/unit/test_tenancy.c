/*
 * test_tenancy.c - which tenant a namespace belongs to (policy_tenancy.c) and what `check`
 * says about the tenants (policy_reach_tenants.c), against oracles that do not share their
 * code: a walk over the globs in policy order with gpa_glob_match, and the exact pairwise
 * glob intersection of the automaton (gpa_ns_glob_meet).
 *
 * Proves: an overlap is reported for exactly the tenant pairs some namespace can match (on
 * random glob sets), its witness really matches both globs named and is a namespace; a tenant
 * name is reported exactly when the namespace of that name is not the tenant's; a namespace
 * in no tenant named like a tenant is "taken" both with the index's walk (few globs) and its
 * sorted lookup (many); the listing stops at GPA_TENANCY_MAX_PAIRS and counts the rest.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpu_admission/glob.h"
#include "gpu_admission/policy.h"
#include "gpu_admission/reach.h"
#include "k8s/k8s_names.h"
#include "policy/policy_reach_ns.h"
#include "policy/policy_tenancy.h"
#include "check.h"

static gpa_policy *load(const char *yaml)
{
    gpa_policy_source s = {"t.yaml", yaml, strlen(yaml)};
    gpa_policy *p = NULL;
    gpa_error e = {0};
    int rc = gpa_policy_load_sources(&p, &s, 1, &e);
    CHECK_INT(rc, GPA_OK);
    if (rc != GPA_OK) fprintf(stderr, "%s\n%s\n", e.message, yaml);
    return p;
}

/* "apiVersion ... tenants:" then one line per tenant t<i> with its globs */
static char *tenancy_yaml(size_t n, char globs[][4][16], const size_t *ng)
{
    size_t cap = 256 + n * 128;
    char *y = malloc(cap);
    size_t at = (size_t)snprintf(y, cap,
                                 "apiVersion: gpu-admission.io/v1alpha1\nkind: GPUPolicy\n"
                                 "spec:\n  tenancy:\n    tenants:\n");
    for (size_t t = 0; t < n; t++) {
        at += (size_t)snprintf(y + at, cap - at, "      - {name: t%zu, namespaces: [", t);
        for (size_t j = 0; j < ng[t]; j++)
            at += (size_t)snprintf(y + at, cap - at, "%s\"%s\"", j ? ", " : "", globs[t][j]);
        at += (size_t)snprintf(y + at, cap - at, "]}\n");
    }
    return y;
}

/* The oracle: the first tenant (policy order) one of whose globs matches ns. */
static const gpa_tenant *first_match(const gpa_policy *p, size_t n, char globs[][4][16],
                                     const size_t *ng, const char *ns)
{
    for (size_t t = 0; t < n; t++)
        for (size_t j = 0; j < ng[t]; j++)
            if (gpa_glob_match(globs[t][j], ns)) return &p->tenants[t];
    return NULL;
}

static unsigned rnd_state = 12345;
static unsigned rnd(unsigned n)
{
    rnd_state = rnd_state * 1103515245u + 12345u;
    return (rnd_state >> 16) % n;
}

/* A small glob over a few characters, so that random sets often overlap and often not. */
static void random_glob(char *g)
{
    static const char alpha[] = "ab-*?t0";
    size_t len = 1 + rnd(5);
    for (size_t i = 0; i < len; i++)
        g[i] = alpha[rnd(sizeof alpha - 1)];
    g[len] = '\0';
}

static void test_random_sets(void)
{
    size_t checked_pairs = 0, overlapping = 0;
    for (int round = 0; round < 300; round++) {
        char globs[6][4][16];
        size_t ng[6], n = 2 + rnd(5);
        for (size_t t = 0; t < n; t++) {
            ng[t] = 1 + rnd(3);
            for (size_t j = 0; j < ng[t]; j++) {
                bool dup;
                do { /* the loader refuses a glob listed twice in one tenant */
                    random_glob(globs[t][j]);
                    dup = false;
                    for (size_t i = 0; i < j; i++)
                        dup |= strcmp(globs[t][i], globs[t][j]) == 0;
                } while (dup);
            }
        }
        char *y = tenancy_yaml(n, globs, ng);
        gpa_policy *p = load(y);
        free(y);
        if (!p) continue;
        gpa_tenancy_report *r = NULL;
        gpa_error e = {0};
        CHECK_INT(gpa_tenancy_analyze(p, &r, &e), GPA_OK);
        if (!r) {
            gpa_policy_unref(p);
            continue;
        }
        /* every pair the exact pairwise intersection says overlaps is listed, no other */
        for (size_t a = 0; a < n; a++)
            for (size_t b = a + 1; b < n; b++) {
                bool meet = false;
                for (size_t i = 0; i < ng[a] && !meet; i++)
                    for (size_t j = 0; j < ng[b] && !meet; j++) {
                        bool m = false;
                        CHECK_INT(gpa_ns_glob_meet(globs[a][i], globs[b][j], &m), GPA_OK);
                        meet = m;
                    }
                const gpa_tenancy_finding *hit = NULL;
                for (size_t k = 0; k < r->n; k++)
                    if (r->findings[k].kind == GPA_TENANCY_OVERLAP && r->findings[k].a == a &&
                        r->findings[k].b == b)
                        hit = &r->findings[k];
                checked_pairs++;
                overlapping += meet;
                CHECK(meet == (hit != NULL));
                if (!hit) continue;
                /* the witness is a namespace both named globs match, globs of a and of b */
                CHECK(gpa_k8s_dns_label(hit->ns) == NULL);
                CHECK(gpa_glob_match(hit->glob_a, hit->ns));
                CHECK(gpa_glob_match(hit->glob_b, hit->ns));
                bool ga = false, gb = false;
                for (size_t i = 0; i < ng[a]; i++)
                    ga |= strcmp(globs[a][i], hit->glob_a) == 0;
                for (size_t j = 0; j < ng[b]; j++)
                    gb |= strcmp(globs[b][j], hit->glob_b) == 0;
                CHECK(ga && gb);
                const gpa_tenant *own = first_match(p, n, globs, ng, hit->ns);
                CHECK(own && hit->owner == (size_t)(own - p->tenants));
                CHECK(hit->owner <= a);
            }
        /* a name is reported exactly when the namespace of that name is not its tenant's */
        for (size_t t = 0; t < n; t++) {
            const gpa_tenant *own = first_match(p, n, globs, ng, p->tenants[t].name);
            bool want = own != &p->tenants[t];
            size_t got = 0;
            for (size_t k = 0; k < r->n; k++)
                got += r->findings[k].kind == GPA_TENANCY_NAME_UNCLAIMED && r->findings[k].a == t;
            CHECK_INT(got, want ? 1 : 0);
            const gpa_tenant *taken = NULL;
            const gpa_tenant *tt = gpa_policy_tenant_of(p, p->tenants[t].name, &taken);
            CHECK(tt == own);
            CHECK(taken == (own ? NULL : &p->tenants[t]));
        }
        CHECK_INT(r->more_pairs, 0);
        gpa_tenancy_report_free(r);
        gpa_policy_unref(p);
    }
    /* the random sets exercised both answers */
    CHECK(overlapping > 50);
    CHECK(checked_pairs - overlapping > 50);
}

/* The example: *-dev before ext-acme-* hands ext-acme-dev to dev. */
static void test_example(void)
{
    gpa_policy *p = load("apiVersion: gpu-admission.io/v1alpha1\nkind: GPUPolicy\nspec:\n"
                         "  tenancy:\n    tenants:\n"
                         "      - {name: dev, namespaces: [dev, \"*-dev\"], trust: trusted}\n"
                         "      - {name: ext-acme, namespaces: [ext-acme, \"ext-acme-*\"]}\n"
                         "      - {name: platform, namespaces: [ml-platform], trust: trusted}\n");
    if (!p) return;
    gpa_tenancy_report *r = NULL;
    gpa_error e = {0};
    CHECK_INT(gpa_tenancy_analyze(p, &r, &e), GPA_OK);
    CHECK_INT(r->n, 2);
    CHECK_INT(gpa_tenancy_warning_count(r), 2);
    const gpa_tenancy_finding *o = &r->findings[0], *nm = &r->findings[1];
    CHECK(o->kind == GPA_TENANCY_OVERLAP && o->a == 0 && o->b == 1 && o->owner == 0);
    CHECK_STR(o->ns, "ext-acme-dev");
    CHECK_STR(o->glob_a, "*-dev");
    CHECK_STR(o->glob_b, "ext-acme-*");
    CHECK_INT(o->line, 7); /* the later tenant, ext-acme */
    CHECK(nm->kind == GPA_TENANCY_NAME_UNCLAIMED && nm->a == 2 && nm->owner == SIZE_MAX);
    CHECK_STR(nm->ns, "platform");
    char *text = gpa_tenancy_text(r);
    CHECK_CONTAINS(text, "t.yaml:7:9: warning: tenants dev and ext-acme can both match "
                         "namespace ext-acme-dev");
    CHECK_CONTAINS(text, "t.yaml:8:9: warning: tenant platform: its globs do not claim "
                         "namespace platform, its own name");
    free(text);
    gpa_tenancy_report_free(r);
    /* the engine's function agrees: ext-acme-dev is dev's, platform is taken, dev is dev's */
    const gpa_tenant *taken = NULL;
    CHECK(gpa_policy_tenant_of(p, "ext-acme-dev", &taken) == &p->tenants[0] && !taken);
    CHECK(gpa_policy_tenant_of(p, "platform", &taken) == NULL && taken == &p->tenants[2]);
    CHECK(gpa_policy_tenant_of(p, "dev", &taken) == &p->tenants[0] && !taken);
    CHECK(gpa_policy_tenant_of(p, "web", &taken) == NULL && !taken);
    gpa_policy_unref(p);

    /* an owner listed before both, and a name another tenant holds */
    p = load("apiVersion: gpu-admission.io/v1alpha1\nkind: GPUPolicy\nspec:\n"
             "  tenancy:\n    tenants:\n"
             "      - {name: all, namespaces: [all, \"*\"]}\n"
             "      - {name: b, namespaces: [\"b-*\"]}\n"
             "      - {name: c, namespaces: [\"*-c\"]}\n");
    if (!p) return;
    CHECK_INT(gpa_tenancy_analyze(p, &r, &e), GPA_OK);
    text = gpa_tenancy_text(r);
    CHECK_CONTAINS(text, "warning: tenants b and c can both match namespace b-c (b's glob "
                         "\"b-*\", c's glob \"*-c\"): tenants are tried in order, so it belongs "
                         "to all, listed before both");
    CHECK_CONTAINS(text, "warning: tenant b: namespace b, its own name, belongs to tenant all "
                         "(glob \"*\"), listed before it");
    free(text);
    gpa_tenancy_report_free(r);
    gpa_policy_unref(p);
}

/* Many tenants: the index's sorted lookups (over 32 globs) answer as the walk does, and the
 * listing of pairs stops at its limit, counting the rest. */
static void test_many(void)
{
    enum { N = 40 };
    char globs[N][4][16];
    size_t ng[N];
    for (size_t t = 0; t < N; t++) {
        ng[t] = 1;
        snprintf(globs[t][0], sizeof globs[t][0], t % 2 ? "t%zu-*" : "t%zu", t);
    }
    char *y = tenancy_yaml(N, globs, ng);
    gpa_policy *p = load(y);
    free(y);
    if (!p) return;
    char ns[32];
    for (size_t t = 0; t < N; t++) {
        const gpa_tenant *taken = NULL;
        snprintf(ns, sizeof ns, "t%zu", t);
        const gpa_tenant *own = gpa_policy_tenant_of(p, ns, &taken);
        /* even tenants claim their name; odd ones (t1-*) leave it in no tenant: taken */
        CHECK(own == (t % 2 ? NULL : &p->tenants[t]));
        CHECK(taken == (t % 2 ? &p->tenants[t] : NULL));
        snprintf(ns, sizeof ns, "t%zu-x", t);
        own = gpa_policy_tenant_of(p, ns, &taken);
        CHECK(own == (t % 2 ? &p->tenants[t] : NULL) && !taken);
    }
    const gpa_tenant *taken = NULL;
    CHECK(gpa_policy_tenant_of(p, "t40", &taken) == NULL && !taken);
    gpa_tenancy_report *r = NULL;
    gpa_error e = {0};
    CHECK_INT(gpa_tenancy_analyze(p, &r, &e), GPA_OK);
    CHECK_INT(r->n, N / 2); /* no overlap (t1-* and t10-* never meet), 20 open names */
    gpa_tenancy_report_free(r);
    gpa_policy_unref(p);

    /* 30 tenants all "*": 435 pairs, 200 listed, 235 counted */
    for (size_t t = 0; t < 30; t++)
        snprintf(globs[t][0], sizeof globs[t][0], "*");
    y = tenancy_yaml(30, globs, ng);
    p = load(y);
    free(y);
    if (!p) return;
    CHECK_INT(gpa_tenancy_analyze(p, &r, &e), GPA_OK);
    size_t ov = 0;
    for (size_t k = 0; k < r->n; k++)
        ov += r->findings[k].kind == GPA_TENANCY_OVERLAP;
    CHECK_INT(ov, GPA_TENANCY_MAX_PAIRS);
    CHECK_INT(r->more_pairs, 435 - GPA_TENANCY_MAX_PAIRS);
    char *text = gpa_tenancy_text(r);
    CHECK_CONTAINS(text, "warning: 235 more pairs of tenants can match one namespace");
    free(text);
    gpa_tenancy_report_free(r);
    gpa_policy_unref(p);
}

/* Globs whose product would explode: refused with a message, nothing guessed. */
static void test_refused(void)
{
    char globs[24][4][16];
    size_t ng[24];
    for (size_t t = 0; t < 24; t++) {
        ng[t] = 1;
        snprintf(globs[t][0], sizeof globs[t][0], "*%c*", (char)('a' + t));
    }
    char *y = tenancy_yaml(24, globs, ng);
    gpa_policy *p = load(y);
    free(y);
    if (!p) return;
    gpa_tenancy_report *r = NULL;
    gpa_error e = {0};
    CHECK_INT(gpa_tenancy_analyze(p, &r, &e), GPA_ERANGE);
    CHECK(r == NULL);
    CHECK_CONTAINS(e.message, "tenants' globs: the 24 namespace globs make more than");
    CHECK_CONTAINS(e.message, "analysis refused");
    gpa_policy_unref(p);
}

int main(void)
{
    test_example();
    test_random_sets();
    test_many();
    test_refused();
    return check_done();
}
