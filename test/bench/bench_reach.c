/*
 * bench_reach.c - how long the exact reachability analysis (reach.h) takes on large rule
 * sets, next to loading the same set in the same run (docs/performance.md, "Reachability").
 *
 *   bench_reach [--rules N] [--iterations K] [--check]
 *
 * Three generated shapes of N rules each (deterministic, no randomness):
 *   tenants  N/10 tenants of 3 globs each, 10 rules per tenant mixing namespaces, labels,
 *            gpus and gpuMemory ranges, trust and deny rules (a realistic large set);
 *   flat     N rules with no namespaces at all, each testing one of 8 label keys and its own
 *            gpus/gpuMemory ranges: every rule meets every namespace (the analysis cannot
 *            split by namespace first);
 *   globs    N rules of one glob each, overlapping ("team-3*", "*-prod", "team-?-dev").
 * Prints per shape: rules, namespace classes, regions decided, median load and analysis
 * time and their ratio. --check asserts what the analysis must find in each shape (the
 * planted never-reached and bypassed rules) and exits 1 otherwise.
 *
 * Then the cost of the untrusted-shared advice (policy_reach_offer.c) on a 5 x N-rule set
 * (100 tenants; per tenant one time-sliced rule, the others MIG): gpa_engine_validate of an
 * untrusted pod refused the shared pool (the advice runs) next to the same pod in a trusted
 * namespace (admitted, no advice), median per call and the ratio.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cjson/cJSON.h>

#include "gpu_admission/engine.h"
#include "gpu_admission/policy.h"
#include "gpu_admission/reach.h"

typedef struct buf {
    char *s;
    size_t n, cap;
} buf;

static void put(buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void put(buf *b, const char *fmt, ...)
{
    va_list ap;
    for (;;) {
        va_start(ap, fmt);
        int k = vsnprintf(b->s + b->n, b->cap - b->n, fmt, ap);
        va_end(ap);
        if (k >= 0 && (size_t)k < b->cap - b->n) {
            b->n += (size_t)k;
            return;
        }
        b->cap = b->cap ? b->cap * 2 : 65536;
        b->s = realloc(b->s, b->cap);
        if (!b->s) abort();
    }
}

static void header(buf *b, int tenants)
{
    put(b, "apiVersion: gpu-admission.io/v1alpha1\nkind: GPUPolicy\nspec:\n");
    put(b, "  tenancy:\n    tenants:\n");
    for (int t = 0; t < tenants; t++)
        put(b,
            "      - {name: t%d, namespaces: [\"team-%d-*\", \"svc-%d\", \"lab-%d-?\"], "
            "trust: %s}\n",
            t, t, t, t, t % 3 ? "trusted" : "untrusted");
    if (tenants == 0) put(b, "      - {name: t0, namespaces: [\"team-0-*\"], trust: trusted}\n");
    put(b, "    default: {trust: untrusted}\n");
    put(b, "  pools:\n"
           "    - name: mig\n"
           "      nodeSelector: {nvidia.com/gpu.product: NVIDIA-A100-SXM4-80GB}\n"
           "      sharing: mig\n"
           "      mig: {gpu: A100-80GB}\n"
           "    - name: train\n"
           "      nodeSelector: {nvidia.com/gpu.product: NVIDIA-H100-80GB-HBM3}\n"
           "      sharing: exclusive\n"
           "  rules:\n");
}

static const char *apps[] = {"web", "batch", "notebook", "train", "serve"};

static char *shape_tenants(int n)
{
    buf b = {0};
    int tenants = n / 10 > 0 ? n / 10 : 1;
    header(&b, tenants);
    for (int i = 0; i < n; i++) {
        int t = (i / 10) % tenants, k = i % 10;
        put(&b, "    - name: r%d\n      match: {", i);
        switch (k) {
        case 0: /* the planted one: a deny rule after a broad training rule (k == 1 below) */
            put(&b, "namespaces: [\"team-%d-*\"], gpus: {min: 4}}\n      place: {pool: train}\n",
                t);
            continue;
        case 1:
            put(&b, "namespaces: [\"team-%d-sandbox\"], gpus: {min: 2}}\n      deny: \"no\"\n", t);
            continue;
        case 2:
            put(&b,
                "namespaces: [\"team-%d-*\"], labels: {app: %s}, gpus: {max: 1}, "
                "gpuMemory: {max: %dGi}}\n",
                t, apps[i % 5], 10 + (i % 4) * 10);
            break;
        case 3:
            put(&b, "tenants: [t%d], labels: {app: %s}, gpus: {max: 1}}\n", t, apps[(i + 1) % 5]);
            break;
        case 4:
            put(&b, "namespaces: [\"svc-%d\"], trust: trusted, gpus: {min: 1, max: %d}}\n", t,
                1 + i % 3);
            break;
        case 5: /* never reached: case 3 and 2 take all of it ... only with the same app */
            put(&b, "tenants: [t%d], labels: {app: %s}, gpus: {max: 1}, gpuMemory: {min: 1Gi}}\n",
                t, apps[(i - 2 + 1) % 5]);
            break;
        case 6:
            put(&b, "namespaces: [\"lab-%d-?\"], labels: {tier: gold}}\n", t);
            break;
        case 7:
            put(&b, "namespaces: [\"team-%d-*\", \"svc-%d\"], trust: untrusted, gpus: {min: 2}}\n",
                t, t);
            break;
        case 8:
            put(&b, "tenants: [t%d], gpus: {min: 2, max: 3}}\n", t);
            break;
        default:
            put(&b, "namespaces: [\"team-%d-*\"], gpuMemory: {min: 20Gi, max: 40Gi}}\n", t);
            break;
        }
        put(&b, "      place: {pool: mig}\n");
    }
    return b.s;
}

static char *shape_flat(int n)
{
    buf b = {0};
    header(&b, 0);
    for (int i = 0; i < n; i++)
        put(&b,
            "    - name: r%d\n      match: {labels: {k%d: v%d}, gpus: {min: %d, max: %d}, "
            "gpuMemory: {min: %dGi}}\n      place: {pool: mig}\n",
            i, i % 8, i % 3, 1 + i % 5, 1 + i % 5 + i % 7, i % 11);
    return b.s;
}

static char *shape_globs(int n)
{
    buf b = {0};
    header(&b, 4);
    for (int i = 0; i < n; i++) {
        const char *g;
        char gb[64];
        switch (i % 4) {
        case 0:
            snprintf(gb, sizeof gb, "team-%d*", i % 37);
            break;
        case 1:
            snprintf(gb, sizeof gb, "*-prod-%d", i % 29);
            break;
        case 2:
            snprintf(gb, sizeof gb, "team-?-dev-%d", i % 31);
            break;
        default:
            snprintf(gb, sizeof gb, "svc-%d-*-eu", i);
            break;
        }
        g = gb;
        put(&b, "    - name: r%d\n      match: {namespaces: [\"%s\"]}\n      place: {pool: mig}\n",
            i, g);
    }
    return b.s;
}

static char *shape_advice(int n)
{
    buf b = {0};
    put(&b, "apiVersion: gpu-admission.io/v1alpha1\nkind: GPUPolicy\nspec:\n  tenancy:\n"
            "    tenants:\n");
    for (int t = 0; t < 100; t++)
        put(&b, "      - {name: t%d, namespaces: [\"team-%d-*\", \"svc-%d\"], trust: %s}\n", t, t,
            t, t % 3 ? "trusted" : "untrusted");
    put(&b, "    default: {trust: untrusted}\n"
            "  pools:\n"
            "    - name: mig\n"
            "      nodeSelector: {nvidia.com/gpu.product: NVIDIA-A100-SXM4-80GB}\n"
            "      sharing: mig\n"
            "      mig: {gpu: A100-80GB}\n"
            "    - name: ts\n"
            "      nodeSelector: {gpu-admission.io/pool: ts}\n"
            "      sharing: time-slicing\n"
            "      timeSlicing: {replicas: 4}\n"
            "  rules:\n");
    for (int i = 0; i < n; i++) {
        int t = i % 100, k = i / 100;
        if (k == 0)
            put(&b,
                "    - name: r%d\n      match: {namespaces: [\"team-%d-*\"], labels: {app: nb}}\n"
                "      place: {pool: ts}\n",
                i, t);
        else
            put(&b,
                "    - name: r%d\n      match: {namespaces: [\"team-%d-*\"], labels: {app: %s}, "
                "gpus: {max: %d}, gpuMemory: {max: %dGi}}\n      place: {pool: mig}\n",
                i, t, apps[k % 5], k, k * 5);
    }
    return b.s;
}

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int cmp_d(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static int run(const char *name, char *yaml, int iters, bool check)
{
    gpa_policy_source src = {"bench.yaml", yaml, strlen(yaml)};
    double *tl = calloc((size_t)iters, sizeof *tl), *ta = calloc((size_t)iters, sizeof *ta);
    gpa_reach *last = NULL;
    gpa_policy *keep = NULL;
    int bad = 0;
    for (int i = 0; i < iters; i++) {
        gpa_policy *p = NULL;
        gpa_error e = {0};
        double t0 = now();
        if (gpa_policy_load_sources(&p, &src, 1, &e) != GPA_OK) {
            fprintf(stderr, "%s: load failed: %s\n", name, e.message);
            return 1;
        }
        double t1 = now();
        gpa_reach *r = NULL;
        if (gpa_reach_analyze(p, &r, &e) != GPA_OK) {
            fprintf(stderr, "%s: analysis failed: %s\n", name, e.message);
            return 1;
        }
        double t2 = now();
        tl[i] = t1 - t0;
        ta[i] = t2 - t1;
        gpa_reach_free(last);
        gpa_policy_unref(keep);
        last = r;
        keep = p;
    }
    qsort(tl, (size_t)iters, sizeof *tl, cmp_d);
    qsort(ta, (size_t)iters, sizeof *ta, cmp_d);
    size_t reached = 0, never = 0, bypass = 0;
    for (size_t i = 0; i < last->n_rules; i++)
        reached += last->reached[i];
    for (size_t i = 0; i < last->n_findings; i++) {
        never += last->findings[i].kind == GPA_REACH_NEVER;
        bypass += last->findings[i].kind == GPA_REACH_BYPASS;
    }
    printf("%-8s rules %4zu  ns classes %5zu  regions %7zu  reached %4zu  never %3zu  bypassed "
           "%3zu  load %8.3f ms  analysis %8.3f ms  analysis/load %6.2f\n",
           name, last->n_rules, last->n_ns_classes, last->n_cells, reached, never, bypass,
           tl[iters / 2] * 1e3, ta[iters / 2] * 1e3, ta[iters / 2] / tl[iters / 2]);
    if (check && strcmp(name, "tenants") == 0) {
        /* per tenant block of 10: r1 (deny, sandbox 2+) partly bypassed by r0 (4+ GPUs) */
        size_t blocks = last->n_rules / 10;
        if (bypass < blocks) bad = 1;
        /* r5 of each block asks what r3 of its block takes (same tenant, app, gpus) */
        if (never < blocks) bad = 1;
        if (reached + never > last->n_rules) bad = 1;
    }
    if (check && strcmp(name, "globs") == 0 && reached == 0) bad = 1;
    if (bad) fprintf(stderr, "%s: --check: findings are not what the shape plants\n", name);
    gpa_reach_free(last);
    gpa_policy_unref(keep);
    free(tl);
    free(ta);
    free(yaml);
    return bad;
}

static double validate_us(const gpa_policy *p, const char *ns, const cJSON *pod, int iters,
                          bool *denied)
{
    double *t = calloc((size_t)iters, sizeof *t);
    for (int i = 0; i < iters; i++) {
        gpa_request req = {.namespace_ = ns, .op = GPA_OP_CREATE, .object = pod};
        gpa_decision d;
        gpa_error e = {0};
        double t0 = now();
        if (gpa_engine_validate(&d, p, &req, &e) != GPA_OK) abort();
        t[i] = now() - t0;
        *denied = !d.allowed && d.reason && strcmp(d.reason, "untrusted-shared") == 0;
        gpa_decision_clear(&d);
    }
    qsort(t, (size_t)iters, sizeof *t, cmp_d);
    double m = t[iters / 2] * 1e6;
    free(t);
    return m;
}

static int advice(int n, int iters)
{
    char *yaml = shape_advice(n);
    gpa_policy_source src = {"advice.yaml", yaml, strlen(yaml)};
    gpa_policy *p = NULL;
    gpa_error e = {0};
    if (gpa_policy_load_sources(&p, &src, 1, &e) != GPA_OK) {
        fprintf(stderr, "advice: load failed: %s\n", e.message);
        return 1;
    }
#define ADVICE_POD(tenant)                                                                         \
    "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"nb\",\"labels\":{\"app\":"   \
    "\"nb\",\"gpu-admission.io/pool\":\"ts\",\"gpu-admission.io/tenant\":\"" tenant                \
    "\"}},\"spec\":"                                                                               \
    "{\"containers\":[{\"name\":\"c\",\"image\":\"x\",\"resources\":{\"limits\":"                  \
    "{\"nvidia.com/gpu.shared\":\"1\"}}}]}}"
    const char *j0 = ADVICE_POD("t0"), *j1 = ADVICE_POD("t1"); /* t0 is untrusted, t1 not */
    cJSON *p0 = cJSON_Parse(j0), *p1 = cJSON_Parse(j1);
    bool d0 = false, d1 = true;
    double u0 = validate_us(p, "team-0-x", p0, iters * 20, &d0);
    double u1 = validate_us(p, "team-1-x", p1, iters * 20, &d1);
    printf("advice   rules %4d  untrusted-shared denial with advice %8.2f us  admitted %8.2f us  "
           "ratio %6.1f\n",
           n, u0, u1, u0 / u1);
    cJSON_Delete(p0);
    cJSON_Delete(p1);
    gpa_policy_unref(p);
    free(yaml);
    if (!d0 || d1) {
        fprintf(stderr, "advice: the pods were not judged as the bench expects\n");
        return 1;
    }
    return 0;
}

int main(int argc, char **argv)
{
    int n = 200, iters = 5;
    bool check = false;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--rules") == 0 && i + 1 < argc)
            n = atoi(argv[++i]);
        else if (strcmp(argv[i], "--iterations") == 0 && i + 1 < argc)
            iters = atoi(argv[++i]);
        else if (strcmp(argv[i], "--check") == 0)
            check = true;
        else {
            fprintf(stderr, "usage: bench_reach [--rules N] [--iterations K] [--check]\n");
            return 2;
        }
    }
    if (n < 10 || iters < 1) return 2;
    int rc = 0;
    rc |= run("tenants", shape_tenants(n), iters, check);
    rc |= run("flat", shape_flat(n), iters, check);
    rc |= run("globs", shape_globs(n), iters, check);
    rc |= advice(n * 5, iters);
    return rc;
}
