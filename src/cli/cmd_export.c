/*
 * cmd_export.c - `gpu-admission export KIND --policies DIR [--output FILE]`: the policy set
 * compiled into objects the API server enforces by itself (admission policies in CEL). One
 * row per KIND in `kinds` below; each writes multi-document YAML to stdout or FILE and
 * prints what it could not compile on stderr.
 *
 * Exit status (shared by every kind): 0 written, 1 the policy set failed to load (its errors
 * printed) or the output could not be written, 2 usage.
 */
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "gpu_admission/export_vap.h"
#include "gpu_admission/policy.h"

typedef struct options {
    const char *policies, *output;
} options;

/* A kind: the YAML, and the lines it does not compile (static text, one per line). */
typedef struct export_kind {
    const char *name;
    int (*run)(char **out, const gpa_policy *p, gpa_error *err);
    const char *(*gaps)(void);
    const char *help;
} export_kind;

static const export_kind kinds[] = {
    {"vap", gpa_export_vap, gpa_export_vap_gaps,
     "  vap   a ValidatingAdmissionPolicy and its binding (admissionregistration.k8s.io/v1):\n"
     "        the validating webhook's pod checks that CEL can decide, run by the API\n"
     "        server itself, also when the webhook is down\n"},
};

static const gpa_cli_flag flags[] = {
    {"--policies", "-p", GPA_CLI_STR, offsetof(options, policies), NULL,
     "  -p, --policies DIR  the policy directory (loaded as `serve` and `check` load it)\n"},
    {"--output", "-o", GPA_CLI_STR, offsetof(options, output), NULL,
     "  -o, --output FILE   write the YAML to FILE (default: stdout)\n"},
    {"--help", "-h", GPA_CLI_HELP, 0, NULL, "  -h, --help          this text\n"},
};

static int positional(void *opts, const char *arg);

static const gpa_cli_spec cli_spec = {
    .cmd = "export",
    .flags = flags,
    .n_flags = sizeof flags / sizeof flags[0],
    .head =
        "usage: gpu-admission export KIND --policies DIR [--output FILE]\n"
        "\n"
        "Compiles the policy set into admission objects the API server enforces itself\n"
        "(CEL), as multi-document YAML named gpu-admission-.... What a kind cannot\n"
        "compile is listed on stderr and as # lines at the top of the YAML: the webhook\n"
        "stays the authority for those.\n"
        "\n"
        "kinds:\n"
        "  vap   a ValidatingAdmissionPolicy and its binding (admissionregistration.k8s.io/v1)\n"
        "  map   a MutatingAdmissionPolicy and its binding (admissionregistration.k8s.io/v1,\n"
        "        Kubernetes 1.36+) that place pods as the mutating webhook does\n"
        "\n"
        "flags:\n",
    .tail = "\n"
            "exit status: 0 written, 1 the policy set failed to load or FILE could not be\n"
            "written, 2 usage error\n",
    .unknown = "unknown flag",
    .error_rc = 2,
    .dashdash = GPA_CLI_DASHDASH_NONE,
    .positional = positional,
};

static const char *kind_arg;

static int positional(void *opts, const char *arg)
{
    (void)opts;
    if (kind_arg) {
        fprintf(stderr, "gpu-admission export: only one KIND may be given\n");
        return GPA_CLI_USAGE;
    }
    kind_arg = arg;
    return 0;
}

int gpa_cmd_export(int argc, char **argv)
{
    options o = {0};
    kind_arg = NULL;
    int rc = gpa_cli_parse(&cli_spec, &o, argc, argv);
    if (rc != GPA_CLI_CONTINUE) return rc;
    if (kind_arg && strcmp(kind_arg, "map") == 0) {
        /* what it cannot express depends on the policy: cmd_export_map.c */
        if (!o.policies) {
            fprintf(stderr, "gpu-admission export: --policies DIR is required\n");
            gpa_cli_usage(&cli_spec, stderr);
            return 2;
        }
        return gpa_cli_export_map(o.policies, o.output);
    }
    const export_kind *k = NULL;
    for (size_t i = 0; kind_arg && i < sizeof kinds / sizeof kinds[0]; i++)
        if (strcmp(kinds[i].name, kind_arg) == 0) k = &kinds[i];
    if (!k) {
        if (kind_arg)
            fprintf(stderr, "gpu-admission export: unknown kind \"%s\"\n", kind_arg);
        else
            fprintf(stderr, "gpu-admission export: no KIND given\n");
        gpa_cli_usage(&cli_spec, stderr);
        return 2;
    }
    if (!o.policies) {
        fprintf(stderr, "gpu-admission export: --policies DIR is required\n");
        gpa_cli_usage(&cli_spec, stderr);
        return 2;
    }
    gpa_policy *p = NULL;
    gpa_error err = {0};
    if (gpa_policy_load_dir(&p, o.policies, &err) != GPA_OK) {
        fprintf(stderr, "%s\n", err.message);
        fprintf(stderr, "gpu-admission export: %s: policy set refused\n", o.policies);
        return 1;
    }
    char *yaml = NULL;
    if (k->run(&yaml, p, &err) != GPA_OK) {
        fprintf(stderr, "gpu-admission export %s: %s\n", k->name, err.message);
        gpa_policy_unref(p);
        return 1;
    }
    gpa_policy_unref(p);
    const char *gaps = k->gaps();
    for (const char *s = gaps; *s;) {
        const char *nl = strchr(s, '\n');
        fprintf(stderr, "gpu-admission export %s: not compiled: %.*s\n", k->name, (int)(nl - s), s);
        s = nl + 1;
    }
    FILE *f = stdout;
    if (o.output) {
        f = fopen(o.output, "w");
        if (!f) {
            fprintf(stderr, "gpu-admission export: cannot write %s: %s\n", o.output,
                    strerror(errno));
            free(yaml);
            return 1;
        }
    }
    size_t n = strlen(yaml);
    bool ok = fwrite(yaml, 1, n, f) == n;
    if (f != stdout)
        ok = fclose(f) == 0 && ok;
    else
        ok = fflush(f) == 0 && ok;
    free(yaml);
    if (!ok) {
        fprintf(stderr, "gpu-admission export: cannot write %s\n", o.output ? o.output : "stdout");
        return 1;
    }
    return 0;
}
