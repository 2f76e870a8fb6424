/*
 * cmd_export_map.c - `gpu-admission export map --policies DIR [--output FILE]`: the policy as
 * a MutatingAdmissionPolicy and its binding (export_map.h), for clusters on Kubernetes 1.36+
 * that keep placing pods while the webhook is away.
 *
 * Exit status: 0 written; 1 the policy set does not load or the output cannot be written;
 * 2 usage. Rules the MAP cannot place are named on stderr (and in the YAML's top comments)
 * without failing: their pods are left for the webhook, which the command says.
 */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "gpu_admission/export_map.h"
#include "gpu_admission/policy.h"

typedef struct options {
    const char *policies, *output;
} options;

static const gpa_cli_flag flags[] = {
    {"--policies", "-p", GPA_CLI_STR, offsetof(options, policies), NULL,
     "  -p, --policies DIR  the policy directory (loaded as the server loads it)\n"},
    {"--output", "-o", GPA_CLI_STR, offsetof(options, output), NULL,
     "  -o, --output FILE   write the YAML there instead of stdout\n"},
    {"--help", "-h", GPA_CLI_HELP, 0, NULL, "  -h, --help          this text\n"},
};

static const gpa_cli_spec cli_spec = {
    .cmd = "export map",
    .flags = flags,
    .n_flags = sizeof flags / sizeof flags[0],
    .head = "usage: gpu-admission export map --policies DIR [--output FILE]\n"
            "\n"
            "Writes a MutatingAdmissionPolicy (admissionregistration.k8s.io/v1, Kubernetes\n"
            "1.36+) and its binding, both named gpu-admission-placement, that place GPU pods\n"
            "as the mutating webhook does: first matching rule, MIG and shared resource\n"
            "names, tolerations, runtimeClassName, node affinity in every term, NVLink\n"
            "island affinity, isolation labels and anti-affinity, annotations. Running it\n"
            "again on its own output changes nothing (reinvocationPolicy: IfNeeded).\n"
            "Rules it cannot express are named on stderr and in '#' lines at the top.\n"
            "\n",
    .tail = "\nExit status: 0 written, 1 the policy set is invalid or FILE cannot be written,\n"
            "2 usage.\n",
    .unknown = "unknown argument",
    .unknown_quoted = true,
    .error_rc = 2,
    .dashdash = GPA_CLI_DASHDASH_NONE,
    .positional = NULL,
};

int gpa_cmd_export_map(int argc, char **argv)
{
    options o = {0};
    int rc = gpa_cli_parse(&cli_spec, &o, argc, argv);
    if (rc != GPA_CLI_CONTINUE) return rc;
    if (!o.policies) {
        fprintf(stderr, "gpu-admission export map: --policies DIR is required\n");
        gpa_cli_usage(&cli_spec, stderr);
        return 2;
    }
    gpa_policy *p = NULL;
    gpa_error err = {0};
    if (gpa_policy_load_dir(&p, o.policies, &err) != GPA_OK) {
        fprintf(stderr, "%s\n", err.message);
        fprintf(stderr, "gpu-admission export map: %s: policy set refused\n", o.policies);
        return 1;
    }
    char *yaml = NULL, *gaps = NULL;
    if (gpa_export_map(&yaml, &gaps, p) != GPA_OK) {
        gpa_policy_unref(p);
        fprintf(stderr, "gpu-admission export map: out of memory\n");
        return 1;
    }
    gpa_policy_unref(p);
    size_t n_gaps = 0;
    for (const char *s = gaps; *s; s++)
        n_gaps += *s == '\n';
    if (n_gaps) {
        fputs(gaps, stderr);
        fprintf(stderr,
                "gpu-admission export map: %zu rule(s) not fully expressed: the pods named "
                "above are placed only by the webhook\n",
                n_gaps);
    }
    free(gaps);
    FILE *f = o.output ? fopen(o.output, "w") : stdout;
    if (!f) {
        fprintf(stderr, "gpu-admission export map: cannot write %s\n", o.output);
        free(yaml);
        return 1;
    }
    bool ok = fputs(yaml, f) >= 0;
    ok = (o.output ? fclose(f) == 0 : fflush(f) == 0) && ok;
    free(yaml);
    if (!ok) {
        fprintf(stderr, "gpu-admission export map: cannot write %s\n",
                o.output ? o.output : "stdout");
        return 1;
    }
    return 0;
}
