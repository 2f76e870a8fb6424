/*
 * test_reach_property.c - the reachability analysis (reach.h) against the real engine, by
 * brute force: random small policies (tenants with globs over a three-letter alphabet, rules
 * mixing namespaces, tenants, trust, labels, gpus and gpuMemory ranges, deny rules) times
 * random pods (namespace, labels, the trust label, GPUs, memory annotation) judged by
 * gpa_engine_mutate. Must hold for every policy:
 *   - a rule the analysis calls never reached is never the engine's rule for any pod;
 *   - every reachable rule is the engine's rule for its witness pod;
 *   - every finding's witness goes where the finding says (the rule that takes it, or no
 *     rule for an unmatched one);
 *   - a never-reached rule's takers each take one of the sampled pods the rule matches only
 *     when some pod the rule matches was sampled (checked by the witness).
 * The pods' namespaces include every namespace class's witness (so each class is visited),
 * the tenants' names (claimed by a wild glob, or taken: then no rule sees them) and random
 * names. GPA_REACH_SEED=N picks another seed; GPA_REACH_POLICIES=N more policies.
 */
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "check.h"
#include "gpu_admission/engine.h"
#include "gpu_admission/policy.h"
#include "gpu_admission/reach.h"

static uint64_t rng_state;

static uint32_t rnd(uint32_t n)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return (uint32_t)(rng_state % n);
}

static void rand_glob(char *out, bool wild)
{
    static const char cs[] = "ab-";
    size_t n = 1 + rnd(4), k = 0;
    for (size_t i = 0; i < n; i++) {
        uint32_t x = rnd(wild ? 6 : 3);
        char c = x < 3 ? cs[x] : x < 5 ? '*' : '?';
        if (c == '-' && (i == 0 || i == n - 1)) c = 'a';
        out[k++] = c;
    }
    out[k] = '\0';
}

static void rand_ns(char *out)
{
    static const char cs[] = "abc-";
    size_t n = 1 + rnd(5);
    for (size_t i = 0; i < n; i++) {
        char c = cs[rnd(4)];
        if (c == '-' && (i == 0 || i == n - 1)) c = 'b';
        out[i] = c;
    }
    out[n] = '\0';
}

static const char *keys[] = {"app", "tier", "gpu-admission.io/trust"};
static const char *vals[] = {"x", "y", "untrusted", "trusted"};

typedef struct sb {
    char s[16384];
    size_t n;
} sb;

static void put(sb *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void put(sb *b, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int k = vsnprintf(b->s + b->n, sizeof b->s - b->n, fmt, ap);
    va_end(ap);
    if (k > 0) b->n += (size_t)k;
    if (b->n >= sizeof b->s) b->n = sizeof b->s - 1;
}

/* where the header ends and each rule's text starts in the generated policy, so a policy of
 * one of its rules alone can be built (the header plus that rule) */
static size_t rules_at, rule_at[10];

static void rand_policy(sb *b, int *n_rules)
{
    b->n = 0;
    put(b, "apiVersion: gpu-admission.io/v1alpha1\nkind: GPUPolicy\nspec:\n");
    int nt = (int)rnd(4);
    put(b, "  tenancy:\n    tenants:%s\n", nt ? "" : " []");
    for (int t = 0; t < nt; t++) {
        put(b, "      - {name: t%d, namespaces: [", t);
        int ng = 1 + (int)rnd(2);
        for (int g = 0; g < ng; g++) {
            char gl[8];
            rand_glob(gl, true);
            put(b, "%s\"%s\"", g ? ", " : "", gl);
        }
        put(b, "], trust: %s}\n", rnd(2) ? "trusted" : "untrusted");
    }
    put(b, "    default: {trust: %s}\n", rnd(2) ? "trusted" : "untrusted");
    put(b, "  unmatched: allow\n");
    put(b, "  pools:\n    - name: x\n      nodeSelector: {a: b}\n      sharing: exclusive\n");
    put(b, "  rules:\n");
    rules_at = b->n;
    int nr = 1 + (int)rnd(7);
    *n_rules = nr;
    for (int i = 0; i < nr; i++) {
        rule_at[i] = b->n;
        put(b, "    - name: r%d\n      match: {", i);
        bool any = false;
        if (rnd(3) == 0) {
            put(b, "namespaces: [");
            int ng = 1 + (int)rnd(2);
            for (int g = 0; g < ng; g++) {
                char gl[8];
                rand_glob(gl, rnd(2));
                put(b, "%s\"%s\"", g ? ", " : "", gl);
            }
            put(b, "]");
            any = true;
        }
        if (nt && rnd(4) == 0) {
            put(b, "%stenants: [t%d]", any ? ", " : "", (int)rnd((uint32_t)nt));
            any = true;
        }
        if (rnd(4) == 0) {
            put(b, "%strust: %s", any ? ", " : "", rnd(2) ? "trusted" : "untrusted");
            any = true;
        }
        if (rnd(3) == 0) {
            put(b, "%slabels: {%s: %s}", any ? ", " : "", keys[rnd(3)], vals[rnd(3)]);
            any = true;
        }
        if (rnd(2) == 0) {
            int lo = (int)rnd(4), hi = lo + (int)rnd(3);
            if (rnd(2))
                put(b, "%sgpus: {min: %d, max: %d}", any ? ", " : "", lo, hi);
            else if (rnd(2))
                put(b, "%sgpus: {min: %d}", any ? ", " : "", lo);
            else
                put(b, "%sgpus: {max: %d}", any ? ", " : "", hi);
            any = true;
        }
        if (rnd(3) == 0) {
            int lo = (int)rnd(4), hi = lo + (int)rnd(3);
            if (rnd(2))
                put(b, "%sgpuMemory: {min: \"%d\", max: \"%d\"}", any ? ", " : "", lo, hi);
            else
                put(b, "%sgpuMemory: {max: \"%d\"}", any ? ", " : "", hi);
            any = true;
        }
        put(b, "}\n");
        if (rnd(3) == 0)
            put(b, "      deny: \"no\"\n");
        else
            put(b, "      place: {pool: x}\n");
    }
    rule_at[nr] = b->n;
}

/* Does rule i on its own match the pod (the policy's header with only that rule)? */
static int alone_matches(const sb *b, int i, const gpa_reach_pod *w);

static cJSON *pod(const char *ns, const char **lk, const char **lv, size_t nl, int gpus, int mem)
{
    cJSON *p = cJSON_CreateObject();
    cJSON_AddStringToObject(p, "apiVersion", "v1");
    cJSON_AddStringToObject(p, "kind", "Pod");
    cJSON *md = cJSON_AddObjectToObject(p, "metadata");
    cJSON_AddStringToObject(md, "name", "p");
    cJSON_AddStringToObject(md, "namespace", ns);
    cJSON *l = cJSON_AddObjectToObject(md, "labels");
    for (size_t i = 0; i < nl; i++)
        if (!cJSON_GetObjectItem(l, lk[i])) cJSON_AddStringToObject(l, lk[i], lv[i]);
    if (mem >= 0) {
        char m[16];
        snprintf(m, sizeof m, "%d", mem);
        cJSON *a = cJSON_AddObjectToObject(md, "annotations");
        cJSON_AddStringToObject(a, "gpu-admission.io/gpu-memory", m);
    }
    cJSON *spec = cJSON_AddObjectToObject(p, "spec");
    cJSON *cs = cJSON_AddArrayToObject(spec, "containers");
    cJSON *c = cJSON_CreateObject();
    cJSON_AddItemToArray(cs, c);
    cJSON_AddStringToObject(c, "name", "main");
    cJSON_AddStringToObject(c, "image", "x");
    char g[16];
    snprintf(g, sizeof g, "%d", gpus);
    cJSON *lim = cJSON_AddObjectToObject(cJSON_AddObjectToObject(c, "resources"), "limits");
    cJSON_AddStringToObject(lim, "nvidia.com/gpu", g);
    return p;
}

/* The engine's rule for a pod: its index, -1 for none. */
static int engine_rule(const gpa_policy *p, const cJSON *obj, const char *ns)
{
    gpa_request req = {.namespace_ = ns, .op = GPA_OP_CREATE, .object = obj, .patch_only = true};
    gpa_decision d;
    gpa_error e = {0};
    if (gpa_engine_mutate(&d, p, &req, &e) != GPA_OK) {
        fprintf(stderr, "engine: %s\n", e.message);
        return -2;
    }
    int r = -1;
    if (d.rule)
        for (size_t i = 0; i < gpa_policy_rule_count(p); i++)
            if (strcmp(gpa_policy_rule_name(p, i), d.rule) == 0) r = (int)i;
    gpa_decision_clear(&d);
    return r;
}

static int witness_rule(const gpa_policy *p, const gpa_reach_pod *w)
{
    cJSON *o = pod(w->ns, (const char **)w->keys, (const char **)w->values, w->n_labels,
                   (int)w->gpus, w->has_mem ? (int)w->mem : -1);
    int r = engine_rule(p, o, w->ns);
    cJSON_Delete(o);
    return r;
}

static int alone_matches(const sb *b, int i, const gpa_reach_pod *w)
{
    static sb one;
    one.n = 0;
    put(&one, "%.*s%.*s", (int)rules_at, b->s, (int)(rule_at[i + 1] - rule_at[i]),
        b->s + rule_at[i]);
    gpa_policy_source src = {"one.yaml", one.s, one.n};
    gpa_policy *p = NULL;
    gpa_error e = {0};
    if (gpa_policy_load_sources(&p, &src, 1, &e) != GPA_OK) {
        fprintf(stderr, "one-rule policy does not load: %s\n%s\n", e.message, one.s);
        return -2;
    }
    int r = witness_rule(p, w);
    gpa_policy_unref(p);
    return r; /* 0: the rule, -1: no match */
}

int main(void)
{
    const char *seed = getenv("GPA_REACH_SEED");
    const char *np = getenv("GPA_REACH_POLICIES");
    rng_state = seed ? strtoull(seed, NULL, 10) * 2 + 1 : 0x9e3779b97f4a7c15ull;
    int n_policies = np ? atoi(np) : 400;
    int loaded = 0, never_total = 0, pods_total = 0, bad = 0;
    sb b;
    for (int it = 0; it < n_policies && bad < 5; it++) {
        int nr;
        rand_policy(&b, &nr);
        gpa_policy_source src = {"p.yaml", b.s, b.n};
        gpa_policy *p = NULL;
        gpa_error e = {0};
        if (gpa_policy_load_sources(&p, &src, 1, &e) != GPA_OK) continue; /* e.g. min > max */
        loaded++;
        gpa_reach *r = NULL;
        CHECK_INT(gpa_reach_analyze(p, &r, &e), GPA_OK);
        if (!r) {
            gpa_policy_unref(p);
            continue;
        }
        int fails = check_failed;
        /* every reachable rule takes its witness */
        for (size_t i = 0; i < r->n_rules; i++) {
            if (!r->reached[i]) {
                never_total++;
                continue;
            }
            CHECK_INT(witness_rule(p, &r->witness[i]), (int)i);
        }
        /* every finding's witness goes where the finding says, and is a pod of the rule the
         * finding is about (that rule alone matches it) */
        for (size_t i = 0; i < r->n_findings; i++) {
            const gpa_reach_finding *f = &r->findings[i];
            if (!f->has_witness) continue;
            int want = f->witness_rule == SIZE_MAX ? -1 : (int)f->witness_rule;
            CHECK_INT(witness_rule(p, &f->witness), want);
            if (f->kind == GPA_REACH_NEVER || f->kind == GPA_REACH_BYPASS)
                CHECK_INT(alone_matches(&b, (int)f->rule, &f->witness), 0);
            /* each rule named as taking its pods matches some pod of it: the witness for the
             * one that takes it, and the rule's own cell for the others is checked by the
             * brute force below */
            if (f->kind == GPA_REACH_NEVER)
                for (size_t k = 0; k < f->n_by; k++)
                    CHECK(f->by[k] < f->rule && r->reached[f->by[k]]);
        }
        /* brute force: no pod goes to a never-reached rule */
        for (int k = 0; k < 300; k++) {
            char ns[8];
            rand_ns(ns);
            const char *lk[3], *lv[3];
            size_t nl = rnd(3);
            for (size_t j = 0; j < nl; j++) {
                lk[j] = keys[rnd(3)];
                lv[j] = vals[rnd(4)];
            }
            const char *use_ns = ns;
            if (k < 40 && r->n_findings + r->n_rules > 0) {
                /* the analysis' own namespaces too, with other pods around them */
                size_t pick = rnd((uint32_t)r->n_rules);
                if (r->reached[pick]) use_ns = r->witness[pick].ns;
            } else if (k < 80) {
                /* namespaces named like a tenant ("t1"): a wild glob may claim the name,
                 * else it is in no tenant and takes the name - no rule may see it */
                const char *tn = gpa_policy_tenant_name(p, rnd(4));
                if (tn) use_ns = tn;
            }
            int gpus = 1 + (int)rnd(6), mem = rnd(3) == 0 ? -1 : (int)rnd(8);
            cJSON *o = pod(use_ns, lk, lv, nl, gpus, mem);
            int er = engine_rule(p, o, use_ns);
            cJSON_Delete(o);
            pods_total++;
            CHECK(er >= -1);
            if (er >= 0) CHECK(r->reached[er]);
        }
        if (check_failed != fails) {
            bad++;
            fprintf(stderr, "--- policy %d (seed %s):\n%s\n", it, seed ? seed : "default", b.s);
            char *t = gpa_reach_text(r, false);
            fprintf(stderr, "--- findings:\n%s\n", t ? t : "(none)");
            free(t);
        }
        gpa_reach_free(r);
        gpa_policy_unref(p);
    }
    printf("%d policies loaded of %d, %d never-reached rules, %d pods judged\n", loaded, n_policies,
           never_total, pods_total);
    CHECK(loaded > n_policies / 2);
    CHECK(never_total > 0); /* the generator does make unreachable rules */
    return check_done();
}
