/*
 * cmd_test.c - `gpu-admission test PATH...`: runs GPUPolicyTest suites (docs/policy-tests.md)
 * and prints PASS/FAIL/SKIP per case (text, JSON or JUnit XML); `test --record FILE
 * --policies DIR OBJECT...` writes a suite of today's decisions.
 *
 * Thin: finds and reads files, loads policy directories, prints. Reading suites, judging a
 * case and checking expectations are the offline tools' (suite.h), and so are the reports
 * (report.h).
 *
 * Exit codes: 0 every case that ran passed; 1 a case failed; 2 usage error, unreadable or
 * invalid suite, policy set that does not load, or no case ran (zero tests is not success).
 */
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <regex.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <cjson/cJSON.h>

#include "cli.h"
#include "gpu_admission/objects.h"
#include "gpu_admission/policy.h"
#include "gpu_admission/report.h"
#include "gpu_admission/review.h"
#include "gpu_admission/suite.h"
#include "gpu_admission/yamljson.h"

/* ---- finding suite files ---- */

typedef struct strv {
    char **v;
    size_t n, cap;
} strv;

static bool strv_push(strv *s, const char *x)
{
    if (s->n == s->cap) {
        size_t nc = s->cap ? s->cap * 2 : 16;
        char **nv = realloc(s->v, nc * sizeof *nv);
        if (!nv) return false;
        s->v = nv;
        s->cap = nc;
    }
    return (s->v[s->n] = strdup(x)) != NULL && ++s->n;
}

static void strv_free(strv *s)
{
    for (size_t i = 0; i < s->n; i++)
        free(s->v[i]);
    free(s->v);
}

typedef struct options {
    const char *format, *output_file, *run, *record, *policies;
    bool verbose;
    strv paths;
} options;

static int positional(void *opts, const char *arg)
{
    return strv_push(&((options *)opts)->paths, arg) ? 0 : 2;
}

static const gpa_cli_flag flags[] = {
    {"--output", "-o", GPA_CLI_STR, offsetof(options, format), NULL,
     "  -o, --output FORMAT      text (default), json or junit\n"},
    {"--output-file", NULL, GPA_CLI_STR, offsetof(options, output_file), NULL,
     "      --output-file F      write the report to F instead of stdout\n"},
    {"--run", NULL, GPA_CLI_STR, offsetof(options, run), NULL,
     "      --run REGEX          only cases whose \"suite/case\" matches (POSIX ERE)\n"},
    {"--verbose", "-v", GPA_CLI_BOOL, offsetof(options, verbose), NULL,
     "  -v, --verbose            text: show passing cases' decisions too\n"},
    {"--record", NULL, GPA_CLI_STR, offsetof(options, record), NULL,
     "      --record FILE        write a suite whose expectations are today's decisions\n"
     "                           for the objects in OBJECT... (files or -)\n"},
    {"--policies", "-p", GPA_CLI_STR, offsetof(options, policies), NULL,
     "  -p, --policies DIR       with --record: the policy directory\n"},
    {"--help", "-h", GPA_CLI_HELP, 0, NULL, "  -h, --help               show this help\n"},
};

static const gpa_cli_spec cli_spec = {
    .cmd = "test",
    .flags = flags,
    .n_flags = sizeof flags / sizeof flags[0],
    .head = "usage: gpu-admission test [-o text|json|junit] [--output-file F] [--run REGEX] [-v]\n"
            "                          PATH...\n"
            "       gpu-admission test --record FILE.yaml --policies DIR OBJECT...\n"
            "\n"
            "Runs every GPUPolicyTest suite in the *.yaml / *.yml files under each PATH\n"
            "(recursively; YAML files that are not suites are ignored). Each case is judged as\n"
            "the API server would have it judged: mutating webhook, then the validating one on\n"
            "the mutated object. See docs/policy-tests.md.\n"
            "\n"
            "flags:\n",
    .tail = "\n"
            "exit codes: 0 every case that ran passed, 1 a case failed, 2 bad flags, an\n"
            "unreadable or invalid suite, a policy set that does not load, or no case ran.\n",
    .unknown = "unknown flag",
    .unknown_quoted = true,
    .error_rc = 2,
    .dashdash = GPA_CLI_DASHDASH_ENDS_FLAGS,
    .positional = positional,
};

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static bool yaml_name(const char *n)
{
    size_t l = strlen(n);
    return (l > 5 && strcmp(n + l - 5, ".yaml") == 0) || (l > 4 && strcmp(n + l - 4, ".yml") == 0);
}

/* Files in sorted order so reports are stable; dot-entries skipped (editor and ConfigMap
 * "..data" leftovers). depth bounds symlink loops. */
static int walk(strv *out, const char *path, int depth)
{
    struct stat st;
    if (stat(path, &st) != 0) {
        fprintf(stderr, "gpu-admission test: %s: %s\n", path, strerror(errno));
        return -1;
    }
    if (!S_ISDIR(st.st_mode)) return strv_push(out, path) ? 0 : -1;
    if (depth > 32) return 0;
    DIR *d = opendir(path);
    if (!d) {
        fprintf(stderr, "gpu-admission test: %s: %s\n", path, strerror(errno));
        return -1;
    }
    strv names = {0};
    struct dirent *e;
    while ((e = readdir(d)))
        if (e->d_name[0] != '.' && !strv_push(&names, e->d_name)) break;
    closedir(d);
    qsort(names.v, names.n, sizeof *names.v, cmp_str);
    int rc = 0;
    for (size_t i = 0; i < names.n && rc == 0; i++) {
        char full[PATH_MAX];
        snprintf(full, sizeof full, "%s%s%s", path, path[strlen(path) - 1] == '/' ? "" : "/",
                 names.v[i]);
        if (stat(full, &st) != 0) continue;
        if (S_ISDIR(st.st_mode))
            rc = walk(out, full, depth + 1);
        else if (S_ISREG(st.st_mode) && yaml_name(names.v[i]) && !strv_push(out, full))
            rc = -1;
    }
    strv_free(&names);
    return rc;
}

static int read_cb(char **buf, size_t *len, void *ctx, const char *path, gpa_error *err)
{
    (void)ctx;
    *buf = gpa_cli_read_file(path, len);
    return *buf ? GPA_OK : gpa_fail(err, GPA_EIO, "%s", strerror(errno));
}

/* ---- record ---- */

static int record(const options *o)
{
    if (!o->policies) {
        fprintf(stderr, "gpu-admission test: --record needs --policies DIR\n");
        return 2;
    }
    if (o->paths.n == 0) {
        fprintf(stderr, "gpu-admission test: --record needs at least one OBJECT file (or -)\n");
        return 2;
    }
    gpa_error err = {0};
    gpa_policy *p = NULL;
    if (gpa_policy_load_dir(&p, o->policies, &err) != GPA_OK) {
        fprintf(stderr, "gpu-admission test: policy set in %s is invalid:\n%s\n", o->policies,
                err.message);
        return 2;
    }
    cJSON *suite = cJSON_CreateObject();
    cJSON_AddStringToObject(suite, "apiVersion", GPA_SUITE_API_VERSION);
    cJSON_AddStringToObject(suite, "kind", GPA_SUITE_KIND);
    cJSON *md = cJSON_AddObjectToObject(suite, "metadata");
    const char *base = strrchr(o->record, '/');
    base = base ? base + 1 : o->record;
    char name[256];
    snprintf(name, sizeof name, "%s", base);
    char *dot = strrchr(name, '.');
    if (dot && dot != name) *dot = '\0';
    cJSON_AddStringToObject(md, "name", name);
    cJSON *spec = cJSON_AddObjectToObject(suite, "spec");
    char *rel = gpa_cli_policies_relative(o->record, o->policies);
    cJSON_AddStringToObject(spec, "policies", rel ? rel : o->policies);
    free(rel);
    cJSON *cases = cJSON_AddArrayToObject(spec, "cases");
    int rc = 0;
    size_t n_cases = 0;
    for (size_t i = 0; i < o->paths.n && rc == 0; i++) {
        const char *path = o->paths.v[i];
        gpa_objects *objs = NULL;
        if (gpa_cli_read_objects(&objs, "test", path) != 0) rc = 2;
        for (size_t k = 0; rc == 0 && k < gpa_objects_count(objs); k++) {
            const cJSON *obj = gpa_objects_get(objs, k);
            char label[300];
            gpa_objects_describe(label, sizeof label, obj);
            gpa_judge_input in = {.object = obj, .hooks = GPA_JUDGE_BOTH, .want_object = true};
            gpa_judgement j;
            if (gpa_judge(&j, p, &in, &err) != GPA_OK) {
                fprintf(stderr, "gpu-admission test: %s: %s: %s\n", gpa_objects_origin(objs, k),
                        label, err.message);
                rc = 2;
                break;
            }
            if (!j.judged) {
                fprintf(stderr,
                        "gpu-admission test: %s: %s is not judged by either webhook, "
                        "not recorded\n",
                        gpa_objects_origin(objs, k), label);
                gpa_judgement_clear(&j);
                continue;
            }
            /* Case names are unique within a suite: repeats get " #2", " #3". */
            char cname[340];
            snprintf(cname, sizeof cname, "%s", label);
            for (int dup = 2;; dup++) {
                bool taken = false;
                for (const cJSON *c = cases->child; c && !taken; c = c->next)
                    taken = strcmp(cJSON_GetObjectItem(c, "name")->valuestring, cname) == 0;
                if (!taken) break;
                snprintf(cname, sizeof cname, "%s #%d", label, dup);
            }
            cJSON *cj = cJSON_CreateObject();
            cJSON_AddItemToArray(cases, cj);
            cJSON_AddStringToObject(cj, "name", cname);
            cJSON_AddItemToObject(cj, "object", cJSON_Duplicate(obj, 1));
            cJSON *ex = gpa_suite_record_expect(p, &j, j.object);
            if (!ex) rc = 2;
            cJSON_AddItemToObject(cj, "expect", ex);
            gpa_judgement_clear(&j);
            n_cases++;
        }
        gpa_objects_free(objs);
    }
    gpa_policy_unref(p);
    if (rc == 0 && n_cases == 0) {
        fprintf(stderr, "gpu-admission test: no object to record in the inputs\n");
        rc = 2;
    }
    if (rc == 0) {
        char *y = gpa_json_to_yaml(suite);
        FILE *f = fopen(o->record, "w");
        if (!y || !f) {
            fprintf(stderr, "gpu-admission test: cannot write %s: %s\n", o->record,
                    y ? strerror(errno) : "out of memory");
            rc = 2;
        } else {
            fprintf(f,
                    "# Recorded by `gpu-admission test --record`: today's decisions. Review\n"
                    "# every expectation before committing; it is only as right as the "
                    "policy was.\n%s",
                    y);
            if (fclose(f) != 0) {
                fprintf(stderr, "gpu-admission test: cannot write %s: %s\n", o->record,
                        strerror(errno));
                rc = 2;
            }
            f = NULL;
        }
        if (f) fclose(f);
        free(y);
        if (rc == 0) fprintf(stderr, "recorded %zu case(s) in %s\n", n_cases, o->record);
    }
    cJSON_Delete(suite);
    return rc;
}

/* ---- main ---- */

static int parse_flags(options *o, int argc, char **argv)
{
    int rc = gpa_cli_parse(&cli_spec, o, argc, argv);
    if (rc != GPA_CLI_CONTINUE) return rc;
    if (!o->format) o->format = "text";
    if (strcmp(o->format, "text") && strcmp(o->format, "json") && strcmp(o->format, "junit")) {
        fprintf(stderr, "gpu-admission test: --output must be text, json or junit, not '%s'\n",
                o->format);
        return 2;
    }
    if (o->policies && !o->record) {
        fprintf(stderr, "gpu-admission test: --policies is for --record (a suite names its own "
                        "policy directory in spec.policies)\n");
        return 2;
    }
    return -1;
}

int gpa_cmd_test(int argc, char **argv)
{
    options o = {0};
    int rc = parse_flags(&o, argc, argv);
    if (rc >= 0) {
        strv_free(&o.paths);
        return rc;
    }
    if (o.record) {
        rc = record(&o);
        strv_free(&o.paths);
        return rc;
    }
    if (o.paths.n == 0) {
        fprintf(stderr, "gpu-admission test: give at least one PATH (a suite file or a "
                        "directory)\n");
        gpa_cli_usage(&cli_spec, stderr);
        strv_free(&o.paths);
        return 2;
    }
    regex_t run_re;
    bool have_re = false;
    if (o.run) {
        int r = regcomp(&run_re, o.run, REG_EXTENDED | REG_NOSUB);
        if (r != 0) {
            char why[200];
            regerror(r, &run_re, why, sizeof why);
            fprintf(stderr, "gpu-admission test: --run: invalid regular expression: %s\n", why);
            strv_free(&o.paths);
            return 2;
        }
        have_re = true;
    }
    strv files = {0};
    rc = 0;
    for (size_t i = 0; i < o.paths.n && rc == 0; i++)
        if (walk(&files, o.paths.v[i], 0) != 0) rc = 2;

    /* Every file read and checked before any case runs: a broken suite is reported with all
     * its errors, and nothing half-runs. */
    gpa_suite_file **sf = calloc(files.n + 1, sizeof *sf);
    size_t n_suites = 0;
    for (size_t i = 0; sf && i < files.n; i++) {
        size_t len = 0;
        char *buf = gpa_cli_read_file(files.v[i], &len);
        if (!buf) {
            fprintf(stderr, "gpu-admission test: cannot read %s: %s\n", files.v[i],
                    strerror(errno));
            rc = 2;
            continue;
        }
        gpa_error err = {0};
        if (gpa_suite_file_parse(&sf[i], buf, len, files.v[i], read_cb, NULL, &err) != GPA_OK) {
            fprintf(stderr, "%s\n", err.message);
            rc = 2;
        }
        n_suites += gpa_suite_count(sf[i]);
        free(buf);
    }
    if (!sf) rc = 2;
    gpa_report_suite *runs = calloc(n_suites + 1, sizeof *runs);
    size_t n_runs = 0, ran = 0, failed = 0;
    for (size_t i = 0; rc == 0 && runs && i < files.n; i++) {
        for (size_t s = 0; rc == 0 && s < gpa_suite_count(sf[i]); s++) {
            const char *sname = gpa_suite_name(sf[i], s);
            size_t nc = gpa_suite_case_count(sf[i], s);
            gpa_report_suite *r = &runs[n_runs];
            r->f = sf[i];
            r->idx = s;
            r->cases = calloc(nc, sizeof *r->cases);
            if (!r->cases) {
                rc = 2;
                break;
            }
            n_runs++;
            gpa_policy *p = NULL;
            for (size_t c = 0; rc == 0 && c < nc; c++) {
                const char *cname = gpa_suite_case_name(sf[i], s, c);
                if (have_re) {
                    char full[1024];
                    snprintf(full, sizeof full, "%s/%s", sname, cname);
                    if (regexec(&run_re, full, 0, NULL, 0) != 0) continue;
                }
                gpa_report_case *cr = &r->cases[r->n++];
                cr->name = cname;
                cr->line = gpa_suite_case_line(sf[i], s, c);
                if (gpa_suite_case_skip(sf[i], s, c)) {
                    cr->status = GPA_REPORT_SKIP;
                    r->skipped++;
                    continue;
                }
                gpa_error err = {0};
                if (!p && gpa_policy_load_dir(&p, gpa_suite_policies(sf[i], s), &err) != GPA_OK) {
                    fprintf(stderr, "%s:%d: suite %s: policy set in %s does not load:\n%s\n",
                            gpa_suite_path(sf[i], s), gpa_suite_line(sf[i], s), sname,
                            gpa_suite_policies(sf[i], s), err.message);
                    rc = 2;
                    break;
                }
                if (gpa_suite_case_run(&cr->r, p, sf[i], s, c, &err) != GPA_OK) {
                    fprintf(stderr, "gpu-admission test: %s\n", err.message);
                    rc = 2;
                    break;
                }
                ran++;
                cr->status = cr->r.passed ? GPA_REPORT_PASS : GPA_REPORT_FAIL;
                if (cr->r.passed)
                    r->passed++;
                else {
                    r->failed++;
                    failed++;
                }
            }
            gpa_policy_unref(p);
        }
    }
    if (rc == 0) {
        FILE *out = stdout;
        if (o.output_file && !(out = fopen(o.output_file, "w"))) {
            fprintf(stderr, "gpu-admission test: cannot write %s: %s\n", o.output_file,
                    strerror(errno));
            rc = 2;
        }
        if (out) {
            gpa_sb rep = {0};
            if (strcmp(o.format, "json") == 0)
                gpa_report_json(&rep, runs, n_runs);
            else if (strcmp(o.format, "junit") == 0)
                gpa_report_junit(&rep, runs, n_runs);
            else
                gpa_report_text(&rep, runs, n_runs, o.verbose);
            char *text = gpa_sb_done(&rep);
            if (!text) {
                fprintf(stderr, "gpu-admission test: out of memory writing the report\n");
                rc = 2;
            } else {
                fputs(text, out);
                free(text);
            }
            if ((out == stdout ? fflush(out) : fclose(out)) != 0) {
                fprintf(stderr, "gpu-admission test: cannot write the report: %s\n",
                        strerror(errno));
                rc = 2;
            }
            /* a file report still gets the one-line summary on stderr */
            if (out != stdout && rc == 0) {
                size_t skipped = 0;
                for (size_t i = 0; i < n_runs; i++)
                    skipped += runs[i].skipped;
                fprintf(stderr, "%zu passed, %zu failed, %zu skipped\n", ran - failed, failed,
                        skipped);
            }
        }
    }
    if (rc == 0 && ran == 0) {
        fprintf(stderr, "gpu-admission test: no case %s: zero tests is not a success\n",
                n_suites == 0 ? "found (no GPUPolicyTest suite in the given paths)"
                              : (have_re ? "matched --run or ran" : "ran (all skipped)"));
        rc = 2;
    }
    if (rc == 0 && failed) rc = 1;
    for (size_t i = 0; runs && i < n_runs; i++) {
        for (size_t c = 0; c < runs[i].n; c++)
            gpa_case_result_clear(&runs[i].cases[c].r);
        free(runs[i].cases);
    }
    free(runs);
    for (size_t i = 0; sf && i < files.n; i++)
        gpa_suite_file_free(sf[i]);
    free(sf);
    strv_free(&files);
    strv_free(&o.paths);
    if (have_re) regfree(&run_re);
    return rc;
}
