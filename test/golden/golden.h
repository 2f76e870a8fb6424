/*
 * golden.h - what the golden runner's files share: one case as loaded and decided, and the
 * helpers the docs generator (golden_docs.c) reuses from the runner (golden_runner.c).
 * Test code only; never linked into the product.
 */
#ifndef GPA_GOLDEN_H
#define GPA_GOLDEN_H

#include <limits.h>
#include <stdbool.h>
#include <stdio.h>

#include "gpu_admission/engine.h"
#include "gpu_admission/policy.h"
#include "golden_common.h"

typedef struct gcase {
    char name[256];
    char dir[PATH_MAX];
    cJSON *spec;    /* case.yaml */
    cJSON *pod;     /* the input pod as given to the engine */
    char *pod_text; /* verbatim file text when the pod is a file used as is */
    cJSON *old_pod;
    gpa_policy *policy;
    const char *hook;
    const char *ns;
    gpa_operation op;
    gpa_decision d;
    bool ran;
    bool failed;
} gcase;

/* golden_runner.c */
void unsubst_revision(cJSON *v, const char *rev);
bool run_case(gcase *c, const char *cases_dir, const char *name);
void free_case(gcase *c);

/* golden_docs.c */
/* Prints docs/policy-examples.md (HEADER, then every case with a doc: title); returns the
 * number of cases that failed. */
int gen_docs(const char *cases_dir, const char *header);
/* Prints the case's decision as an expect block (record.sh). */
void record_case(gcase *c);

#endif
