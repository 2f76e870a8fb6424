/*
 * cmd_audit.c - `gpu-admission audit --policies DIR INPUT...`: judges every object of a
 * cluster dump under one policy set and writes the findings as wgpolicyk8s.io/v1alpha2
 * PolicyReport / ClusterPolicyReport objects (policyreport.h), with a text and a JSON
 * summary beside them.
 *
 * Exit codes: 0 done (with --exit-code: no fail or error result), 1 with --exit-code: some
 * result is fail or error, 2 usage error, unreadable input, a policy set that does not load,
 * an output that cannot be written.
 */
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <cjson/cJSON.h>

#include "cli.h"
#include "gpu_admission/objects.h"
#include "gpu_admission/policy.h"
#include "gpu_admission/policyreport.h"
#include "gpu_admission/yamljson.h"

typedef struct options {
    const char *policies, *out_dir, *format, *output, *max_results;
    bool exit_code;
    const char **inputs;
    size_t n_inputs;
} options;

static int positional(void *opts, const char *arg)
{
    options *o = opts;
    o->inputs[o->n_inputs++] = arg;
    return 0;
}

static const gpa_cli_flag flags[] = {
    {"--policies", "-p", GPA_CLI_STR, offsetof(options, policies), NULL,
     "  -p, --policies DIR       the policy directory to audit against; required\n"},
    {"--out", NULL, GPA_CLI_STR, offsetof(options, out_dir), NULL,
     "      --out DIR            write DIR/policyreports.yaml (or .json), DIR/summary.txt\n"
     "                           and DIR/summary.json (DIR is created if missing)\n"},
    {"--format", NULL, GPA_CLI_STR, offsetof(options, format), NULL,
     "      --format FORMAT      the reports as yaml (default: multi-document) or json (a\n"
     "                           v1 List); both are what kubectl apply -f takes\n"},
    {"--output", "-o", GPA_CLI_STR, offsetof(options, output), NULL,
     "  -o, --output WHAT        stdout: text (default: the summary), json (the summary)\n"
     "                           or reports (the report objects in --format)\n"},
    {"--max-results", NULL, GPA_CLI_STR, offsetof(options, max_results), NULL,
     "      --max-results N      results per report object before it is split into\n"
     "                           gpu-admission-2, -3, ... (default 500; 0 = no limit)\n"},
    {"--exit-code", NULL, GPA_CLI_BOOL, offsetof(options, exit_code), NULL,
     "      --exit-code          exit 1 when a result is fail or error\n"},
    {"--help", "-h", GPA_CLI_HELP, 0, NULL, "  -h, --help               show this help\n"},
};

static const gpa_cli_spec cli_spec = {
    .cmd = "audit",
    .flags = flags,
    .n_flags = sizeof flags / sizeof flags[0],
    .head = "usage: gpu-admission audit --policies DIR [--out DIR] [--format yaml|json]\n"
            "                           [-o text|json|reports] [--exit-code] [INPUT...]\n"
            "\n"
            "Judges every object in the inputs (files or - for stdin; default -), e.g.\n"
            "`kubectl get pods,deployments,jobs -A -o json`, under the policy set exactly as\n"
            "`diff` does, and writes the findings as wgpolicyk8s.io/v1alpha2 PolicyReport\n"
            "objects (one per namespace, named gpu-admission) and one ClusterPolicyReport:\n"
            "one result per object and rule, pass / warn / fail / error, with the message\n"
            "and the policy revision. Objects no rule reaches and nothing is said about get\n"
            "no result.\n"
            "\n"
            "flags:\n",
    .tail = "\n"
            "exit codes: 0 done (with --exit-code: no fail or error), 1 with --exit-code: a\n"
            "result is fail or error, 2 bad flags, unreadable input, a policy set that does\n"
            "not load, or an output that cannot be written.\n",
    .unknown = "unknown flag",
    .unknown_quoted = true,
    .error_rc = 2,
    .dashdash = GPA_CLI_DASHDASH_ENDS_FLAGS,
    .positional = positional,
};

static double num(const cJSON *o, const char *k)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
    return cJSON_IsNumber(v) ? v->valuedouble : 0;
}

static const char *s_or(const cJSON *o, const char *k, const char *dflt)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
    return cJSON_IsString(v) ? v->valuestring : dflt;
}

/* The text summary, from the JSON one (so summary.txt and summary.json cannot disagree). */
static void write_text(FILE *f, const cJSON *s)
{
    const cJSON *r = cJSON_GetObjectItemCaseSensitive(s, "results");
    fprintf(f,
            "audited %.0f object(s) under policy revision %s: %.0f judged, %.0f not judged "
            "(no webhook judges their kind), %.0f judged with no rule and nothing to say\n",
            num(s, "objects"), s_or(s, "policyRevision", "?"), num(s, "judged"),
            num(s, "notJudged"), num(s, "noRule"));
    fprintf(f, "results: %.0f pass, %.0f warn, %.0f fail, %.0f error\n", num(r, "pass"),
            num(r, "warn"), num(r, "fail"), num(r, "error"));
    const cJSON *nss = cJSON_GetObjectItemCaseSensitive(s, "namespaces");
    if (cJSON_GetArraySize(nss) > 0) {
        fprintf(f, "\n%-32s %6s %6s %6s %6s\n", "NAMESPACE", "PASS", "WARN", "FAIL", "ERROR");
        const cJSON *n;
        cJSON_ArrayForEach(n, nss) {
            fprintf(f, "%-32s %6.0f %6.0f %6.0f %6.0f\n", s_or(n, "namespace", "(cluster)"),
                    num(n, "pass"), num(n, "warn"), num(n, "fail"), num(n, "error"));
        }
    }
    const cJSON *fs = cJSON_GetObjectItemCaseSensitive(s, "findings");
    if (cJSON_GetArraySize(fs) > 0) {
        fputc('\n', f);
        const cJSON *x;
        cJSON_ArrayForEach(x, fs) {
            fprintf(f, "%-5s %s", s_or(x, "result", "?"), s_or(x, "object", "?"));
            if (s_or(x, "origin", NULL)) fprintf(f, " (%s)", s_or(x, "origin", ""));
            if (s_or(x, "rule", NULL)) fprintf(f, ", rule %s", s_or(x, "rule", ""));
            fprintf(f, ": %s\n", s_or(x, "message", ""));
        }
    }
}

/* The reports as kubectl apply -f reads them: multi-document YAML, or a v1 List. */
static char *reports_text(const cJSON *reports, bool json)
{
    if (json) {
        cJSON *list = cJSON_CreateObject();
        cJSON_AddStringToObject(list, "apiVersion", "v1");
        cJSON_AddStringToObject(list, "kind", "List");
        cJSON_AddItemReferenceToObject(list, "items", (cJSON *)reports);
        char *t = cJSON_Print(list);
        cJSON_Delete(list);
        return t;
    }
    size_t len = 0, cap = 4096;
    char *buf = malloc(cap);
    if (!buf) return NULL;
    buf[0] = '\0';
    const cJSON *r;
    cJSON_ArrayForEach(r, reports) {
        char *y = gpa_json_to_yaml(r);
        if (!y) {
            free(buf);
            return NULL;
        }
        size_t ly = strlen(y);
        if (len + ly + 8 > cap) {
            while (len + ly + 8 > cap)
                cap *= 2;
            char *nb = realloc(buf, cap);
            if (!nb) {
                free(y);
                free(buf);
                return NULL;
            }
            buf = nb;
        }
        len += (size_t)sprintf(buf + len, "---\n%s", y);
        if (len && buf[len - 1] != '\n') len += (size_t)sprintf(buf + len, "\n");
        free(y);
    }
    return buf;
}

static int write_file(const char *dir, const char *name, const char *text)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "w");
    if (!f) {
        fprintf(stderr, "gpu-admission audit: cannot write %s: %s\n", path, strerror(errno));
        return 2;
    }
    fputs(text, f);
    if (fclose(f) != 0) {
        fprintf(stderr, "gpu-admission audit: cannot write %s: %s\n", path, strerror(errno));
        return 2;
    }
    return 0;
}

static char *text_of(const cJSON *summary)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *m = open_memstream(&buf, &len);
    if (!m) return NULL;
    write_text(m, summary);
    if (fclose(m) != 0) {
        free(buf);
        return NULL;
    }
    return buf;
}

static int emit(const options *o, const cJSON *reports, const cJSON *summary)
{
    bool json = strcmp(o->format, "json") == 0;
    /* the reports are written only where they go (a dump of 100,000 objects is megabytes) */
    bool want_rep = o->out_dir || strcmp(o->output, "reports") == 0;
    char *rep = want_rep ? reports_text(reports, json) : NULL, *txt = text_of(summary);
    char *sj = cJSON_Print(summary);
    int rc = (rep || !want_rep) && txt && sj ? 0 : 2;
    if (rc) fprintf(stderr, "gpu-admission audit: out of memory\n");
    if (rc == 0 && o->out_dir) {
        if (mkdir(o->out_dir, 0755) != 0 && errno != EEXIST) {
            fprintf(stderr, "gpu-admission audit: cannot create %s: %s\n", o->out_dir,
                    strerror(errno));
            rc = 2;
        }
        if (rc == 0)
            rc = write_file(o->out_dir, json ? "policyreports.json" : "policyreports.yaml", rep);
        if (rc == 0) rc = write_file(o->out_dir, "summary.txt", txt);
        if (rc == 0) rc = write_file(o->out_dir, "summary.json", sj);
    }
    if (rc == 0) {
        if (strcmp(o->output, "reports") == 0)
            fputs(rep, stdout);
        else if (strcmp(o->output, "json") == 0)
            printf("%s\n", sj);
        else
            fputs(txt, stdout);
        if (fflush(stdout) != 0) {
            fprintf(stderr, "gpu-admission audit: cannot write stdout: %s\n", strerror(errno));
            rc = 2;
        }
    }
    free(rep);
    free(txt);
    free(sj);
    return rc;
}

static int run(const options *o, size_t max_results)
{
    gpa_error err = {0};
    gpa_policy *p = NULL;
    if (gpa_policy_load_dir(&p, o->policies, &err) != GPA_OK) {
        fprintf(stderr, "gpu-admission audit: policy set in %s is invalid:\n%s\n", o->policies,
                err.message);
        return 2;
    }
    gpa_audit *a = NULL;
    int rc = gpa_audit_new(&a, p, max_results, &err) == GPA_OK ? 0 : 2;
    for (size_t i = 0; rc == 0 && i < o->n_inputs; i++) {
        gpa_objects *list = NULL;
        if (gpa_cli_read_objects(&list, "audit", o->inputs[i]) != 0) {
            rc = 2;
            break;
        }
        for (size_t k = 0; rc == 0 && k < gpa_objects_count(list); k++)
            if (gpa_audit_object(a, gpa_objects_get(list, k), gpa_objects_origin(list, k), &err) !=
                GPA_OK) {
                fprintf(stderr, "gpu-admission audit: %s\n", err.message);
                rc = 2;
            }
        gpa_objects_free(list);
    }
    cJSON *reports = rc == 0 ? gpa_audit_reports(a) : NULL;
    cJSON *summary = rc == 0 ? gpa_audit_summary(a) : NULL;
    if (rc == 0 && (!reports || !summary)) {
        fprintf(stderr, "gpu-admission audit: out of memory\n");
        rc = 2;
    }
    if (rc == 0) rc = emit(o, reports, summary);
    if (rc == 0 && o->exit_code) {
        const cJSON *r = cJSON_GetObjectItemCaseSensitive(summary, "results");
        if (num(r, "fail") + num(r, "error") > 0) rc = 1;
    }
    cJSON_Delete(reports);
    cJSON_Delete(summary);
    gpa_audit_free(a);
    gpa_policy_unref(p);
    return rc;
}

int gpa_cmd_audit(int argc, char **argv)
{
    options o = {.format = "yaml",
                 .output = "text",
                 .max_results = "500",
                 .inputs = calloc((size_t)argc + 1, sizeof *o.inputs)};
    if (!o.inputs) return 2;
    int rc = gpa_cli_parse(&cli_spec, &o, argc, argv);
    if (rc != GPA_CLI_CONTINUE) {
        free(o.inputs);
        return rc;
    }
    char *end = NULL;
    errno = 0;
    unsigned long long max = strtoull(o.max_results, &end, 10);
    if (!o.policies) {
        fprintf(stderr, "gpu-admission audit: --policies DIR is required\n");
        gpa_cli_usage(&cli_spec, stderr);
        rc = 2;
    } else if (strcmp(o.format, "yaml") != 0 && strcmp(o.format, "json") != 0) {
        fprintf(stderr, "gpu-admission audit: --format must be yaml or json, not '%s'\n", o.format);
        rc = 2;
    } else if (strcmp(o.output, "text") != 0 && strcmp(o.output, "json") != 0 &&
               strcmp(o.output, "reports") != 0) {
        fprintf(stderr, "gpu-admission audit: --output must be text, json or reports, not '%s'\n",
                o.output);
        rc = 2;
    } else if (!*o.max_results || *end || errno || o.max_results[0] == '-' || max > 1000000) {
        fprintf(stderr,
                "gpu-admission audit: --max-results must be a number from 0 to 1000000, not "
                "'%s'\n",
                o.max_results);
        rc = 2;
    } else {
        if (o.n_inputs == 0) o.inputs[o.n_inputs++] = "-";
        rc = run(&o, (size_t)max);
    }
    free(o.inputs);
    return rc;
}
