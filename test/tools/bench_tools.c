/*
 * bench_tools.c - how fast `gpu-admission test` and `gpu-admission diff` judge, on one thread:
 *   (a) one suite of --cases N cases (inline pods of five shapes, six expectation keys each):
 *       read + every case judged and checked, as `test` does;
 *   (b) --pods M pods in one `kubectl get -o json` List (two thirds already mutated by the
 *       shipped set, so they go through reconstruction), read + judged under the shipped set
 *       and a changed one, as `diff` does.
 * Prints CPU time (CLOCK_PROCESS_CPUTIME_ID: one thread, so one core) and wall time; the
 * targets (issue 14) are (a) N=1000 < 1 s and (b) M=10000 < 2 s. Figures: docs/performance.md.
 *
 * --list FILE times (b) on that List instead (a real `kubectl get -o json` dump, e.g. the
 * diff fixture's pods repeated to 10,000: ~6 KB of pretty JSON per pod).
 *
 * usage: bench_tools --policies DIR [--new DIR] [--cases N] [--pods M] [--list FILE]
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "gpu_admission/impact.h"
#include "gpu_admission/judge.h"
#include "gpu_admission/objects.h"
#include "gpu_admission/policy.h"
#include "gpu_admission/suite.h"

typedef struct sb {
    char *p;
    size_t len, cap;
} sb;

static void put(sb *b, const char *s)
{
    size_t n = strlen(s);
    if (b->len + n + 1 > b->cap) {
        b->cap = (b->len + n + 1) * 2;
        b->p = realloc(b->p, b->cap);
        if (!b->p) {
            fprintf(stderr, "out of memory\n");
            exit(2);
        }
    }
    memcpy(b->p + b->len, s, n + 1);
    b->len += n;
}

static double now(clockid_t c)
{
    struct timespec t;
    clock_gettime(c, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

/* name, namespace, labels/annotations YAML, limits, expectations */
static const struct shape {
    const char *ns, *meta, *limits, *expect;
} shapes[] = {
    {"inference-a",
     "labels: {app.kubernetes.io/component: inference}, annotations: "
     "{gpu-admission.io/gpu-memory: 8Gi}",
     "{nvidia.com/gpu: 1}",
     "{allowed: true, rule: inference-small, pool: a100-mig, warnings: [\"mig-1g.10gb\"], "
     "resources: {main: {nvidia.com/mig-1g.10gb: \"1\"}}, object: {spec: {tolerations: [{key: "
     "nvidia.com/gpu, operator: Exists, effect: NoSchedule}]}}}"},
    {"notebooks", "labels: {team: a}", "{nvidia.com/gpu: 1}",
     "{allowed: true, rule: notebooks, pool: t4-shared, warnings: [\"anti-affinity\"], "
     "resources: {main: {nvidia.com/gpu.shared: \"1\"}}, object: {metadata: {labels: "
     "{gpu-admission.io/tenant: platform}}}}"},
    {"ml-platform", "labels: {training.kubeflow.org/job-name: ft}", "{nvidia.com/gpu: 4}",
     "{allowed: true, rule: training, pool: h100-train, noWarnings: false, resources: {main: "
     "{nvidia.com/gpu: \"4\"}}, object: {spec: {runtimeClassName: nvidia}}}"},
    {"notebooks", "labels: {gpu-admission.io/trust: untrusted}", "{nvidia.com/gpu: 1}",
     "{allowed: false, rule: notebooks, reason: untrusted-shared, message: \"may not share\"}"},
    {"prod-web", "labels: {app: web}", "{cpu: 500m, memory: 256Mi}",
     "{allowed: true, rule: null, pool: null, noWarnings: true}"},
};
#define N_SHAPES (sizeof shapes / sizeof shapes[0])

static int bench_suite(const char *policies, int n)
{
    sb y = {0};
    char line[2048];
    snprintf(line, sizeof line,
             "apiVersion: gpu-admission.io/v1alpha1\nkind: GPUPolicyTest\nmetadata: {name: "
             "bench}\nspec:\n  policies: %s\n  cases:\n",
             policies);
    put(&y, line);
    for (int i = 0; i < n; i++) {
        const struct shape *s = &shapes[i % N_SHAPES];
        snprintf(line, sizeof line,
                 "    - name: case %d\n      object:\n        apiVersion: v1\n        kind: Pod\n"
                 "        metadata: {name: p%d, namespace: %s, %s}\n        spec:\n"
                 "          containers:\n            - name: main\n              image: x:1\n"
                 "              resources: {limits: %s}\n      expect: %s\n",
                 i, i, s->ns, s->meta, s->limits, s->expect);
        put(&y, line);
    }
    gpa_error err;
    double c0 = now(CLOCK_PROCESS_CPUTIME_ID), w0 = now(CLOCK_MONOTONIC);
    gpa_suite_file *f = NULL;
    if (gpa_suite_file_parse(&f, y.p, y.len, "bench.yaml", NULL, NULL, &err) != GPA_OK || !f) {
        fprintf(stderr, "bench suite does not parse: %s\n", err.message);
        return 2;
    }
    double c1 = now(CLOCK_PROCESS_CPUTIME_ID);
    gpa_policy *p = NULL;
    if (gpa_policy_load_dir(&p, gpa_suite_policies(f, 0), &err) != GPA_OK) {
        fprintf(stderr, "%s\n", err.message);
        return 2;
    }
    size_t passed = 0;
    for (size_t c = 0; c < gpa_suite_case_count(f, 0); c++) {
        gpa_case_result r;
        if (gpa_suite_case_run(&r, p, f, 0, c, &err) != GPA_OK) return 2;
        passed += r.passed;
        if (!r.passed && r.n_failures)
            fprintf(stderr, "case %zu: %s: expected %s, got %s\n", c, r.failures[0].key,
                    r.failures[0].expected, r.failures[0].actual);
        gpa_case_result_clear(&r);
    }
    double c2 = now(CLOCK_PROCESS_CPUTIME_ID), w2 = now(CLOCK_MONOTONIC);
    printf("suite: %d cases (%zu KB of YAML), %zu passed: cpu %.3f s (read %.3f s, judge+check "
           "%.3f s, %.1f us/case), wall %.3f s; target 1000 cases < 1 s\n",
           n, y.len / 1024, passed, c2 - c0, c1 - c0, c2 - c1, (c2 - c1) * 1e6 / n, w2 - w0);
    gpa_policy_unref(p);
    gpa_suite_file_free(f);
    free(y.p);
    return passed == (size_t)n ? 0 : 1;
}

static int bench_diff(const char *old_dir, const char *new_dir, int m, const char *list_file)
{
    gpa_error err;
    gpa_policy *po = NULL, *pn = NULL;
    if (gpa_policy_load_dir(&po, old_dir, &err) != GPA_OK ||
        gpa_policy_load_dir(&pn, new_dir, &err) != GPA_OK) {
        fprintf(stderr, "%s\n", err.message);
        return 2;
    }
    /* Stored pods: each shape as the shipped set left it (mutated), printed m times. */
    char *stored[N_SHAPES];
    for (size_t s = 0; s < N_SHAPES; s++) {
        char y[1024];
        snprintf(y, sizeof y,
                 "apiVersion: v1\nkind: Pod\nmetadata: {name: NAME, namespace: %s, %s}\nspec:\n"
                 "  containers: [{name: main, image: \"x:1\", resources: {limits: %s}}]\n",
                 shapes[s].ns, shapes[s].meta, shapes[s].limits);
        gpa_objects *o = NULL;
        if (gpa_objects_read(&o, y, strlen(y), "shape", &err) != GPA_OK) {
            fprintf(stderr, "%s\n", err.message);
            return 2;
        }
        gpa_judge_input in = {.object = gpa_objects_get(o, 0), .want_object = true};
        gpa_judgement j;
        if (gpa_judge(&j, po, &in, &err) != GPA_OK) return 2;
        stored[s] = cJSON_PrintUnformatted(j.object ? j.object : gpa_objects_get(o, 0));
        gpa_judgement_clear(&j);
        gpa_objects_free(o);
    }
    sb list = {0};
    if (list_file) {
        /* a real `kubectl get -o json` dump instead of the generated pods */
        FILE *lf = fopen(list_file, "rb");
        char chunk[65536];
        size_t got;
        while (lf && (got = fread(chunk, 1, sizeof chunk - 1, lf)) > 0) {
            chunk[got] = '\0';
            put(&list, chunk);
        }
        if (!lf) {
            perror(list_file);
            return 2;
        }
        fclose(lf);
        m = 0;
    } else {
        put(&list, "{\"apiVersion\":\"v1\",\"kind\":\"List\",\"items\":[\n");
    }
    for (int i = 0; i < m; i++) {
        const char *t = stored[i % N_SHAPES];
        const char *at = strstr(t, "\"NAME\"");
        char name[32];
        snprintf(name, sizeof name, "\"pod-%d\"", i);
        char *one = malloc(strlen(t) + 32);
        snprintf(one, strlen(t) + 32, "%.*s%s%s", (int)(at - t), t, name, at + 6);
        put(&list, i ? ",\n" : "");
        put(&list, one);
        free(one);
    }
    if (!list_file) put(&list, "\n]}\n");
    for (size_t s = 0; s < N_SHAPES; s++)
        free(stored[s]);

    double c0 = now(CLOCK_PROCESS_CPUTIME_ID), w0 = now(CLOCK_MONOTONIC);
    gpa_objects *objs = NULL;
    if (gpa_objects_read(&objs, list.p, list.len, "bench.json", &err) != GPA_OK) {
        fprintf(stderr, "%s\n", err.message);
        return 2;
    }
    double c1 = now(CLOCK_PROCESS_CPUTIME_ID);
    if (list_file) m = (int)gpa_objects_count(objs);
    size_t changed = 0, units = 0;
    for (size_t i = 0; i < gpa_objects_count(objs); i++) {
        cJSON *e = NULL;
        unsigned mask = 0;
        if (gpa_impact_object(&e, &mask, po, pn, gpa_objects_get(objs, i), &err) != GPA_OK) {
            fprintf(stderr, "%s\n", err.message);
            return 2;
        }
        units += (size_t)cJSON_GetArraySize(e);
        changed += mask != 0;
        cJSON_Delete(e);
    }
    double c2 = now(CLOCK_PROCESS_CPUTIME_ID), w2 = now(CLOCK_MONOTONIC);
    printf("diff: %d pods (%zu KB of JSON), %zu judged, %zu change: cpu %.3f s (read %.3f s, "
           "judge twice %.3f s, %.1f us/pod), wall %.3f s; target 10000 pods < 2 s\n",
           m, list.len / 1024, units, changed, c2 - c0, c1 - c0, c2 - c1, (c2 - c1) * 1e6 / m,
           w2 - w0);
    gpa_objects_free(objs);
    free(list.p);
    gpa_policy_unref(po);
    gpa_policy_unref(pn);
    return list_file || units == (size_t)m ? 0 : 1;
}

int main(int argc, char **argv)
{
    const char *policies = NULL, *new_dir = NULL, *list_file = NULL;
    int cases = 1000, pods = 10000;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "--policies"))
            policies = argv[i + 1];
        else if (!strcmp(argv[i], "--new"))
            new_dir = argv[i + 1];
        else if (!strcmp(argv[i], "--cases"))
            cases = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--list"))
            list_file = argv[i + 1];
        else if (!strcmp(argv[i], "--pods"))
            pods = atoi(argv[i + 1]);
    }
    if (!policies || cases <= 0 || pods <= 0) {
        fprintf(stderr, "usage: bench_tools --policies DIR [--new DIR] [--cases N] [--pods M] "
                        "[--list FILE]\n");
        return 2;
    }
    int rc = bench_suite(policies, cases);
    int rc2 = bench_diff(policies, new_dir ? new_dir : policies, pods, list_file);
    return rc ? rc : rc2;
}
