/*
 * cmd_export_map.c - `gpu-admission export map --policies DIR [--output FILE]` (flags parsed by
 * cmd_export.c): the policy as a MutatingAdmissionPolicy and its binding (export_map.h), for
 * clusters on Kubernetes 1.36+ that keep placing pods while the webhook is away.
 *
 * Exit status: 0 written; 1 the policy set does not load or the output cannot be written.
 * What the MAP cannot place depends on the policy: each such rule is named on stderr (and in
 * the YAML's top comments) without failing, and a closing line says the webhook places those
 * pods alone.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "gpu_admission/export_map.h"
#include "gpu_admission/policy.h"

int gpa_cli_export_map(const char *policies, const char *output)
{
    gpa_policy *p = NULL;
    gpa_error err = {0};
    if (gpa_policy_load_dir(&p, policies, &err) != GPA_OK) {
        fprintf(stderr, "%s\n", err.message);
        fprintf(stderr, "gpu-admission export: %s: policy set refused\n", policies);
        return 1;
    }
    char *yaml = NULL, *gaps = NULL;
    int rc = gpa_export_map(&yaml, &gaps, p);
    gpa_policy_unref(p);
    if (rc != GPA_OK) {
        fprintf(stderr, "gpu-admission export map: out of memory\n");
        return 1;
    }
    size_t n_gaps = 0;
    for (const char *s = gaps; *s;) {
        const char *nl = strchr(s, '\n');
        size_t n = nl ? (size_t)(nl - s) : strlen(s);
        fprintf(stderr, "gpu-admission export map: not expressed: %.*s\n", (int)n, s);
        n_gaps++;
        s += n + (nl ? 1 : 0);
    }
    if (n_gaps)
        fprintf(stderr,
                "gpu-admission export map: %zu rule(s) not fully expressed: the pods named "
                "above are placed only by the webhook\n",
                n_gaps);
    free(gaps);
    FILE *f = output ? fopen(output, "w") : stdout;
    if (!f) {
        fprintf(stderr, "gpu-admission export: cannot write %s: %s\n", output, strerror(errno));
        free(yaml);
        return 1;
    }
    size_t len = strlen(yaml);
    bool ok = fwrite(yaml, 1, len, f) == len;
    ok = (output ? fclose(f) == 0 : fflush(f) == 0) && ok;
    free(yaml);
    if (!ok) {
        fprintf(stderr, "gpu-admission export: cannot write %s\n", output ? output : "stdout");
        return 1;
    }
    return 0;
}
