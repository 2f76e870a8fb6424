/*
 * check_reach.h - `gpu-admission check`'s reachability output (check_reach.c).
 */
#ifndef GPA_CLI_CHECK_REACH_H
#define GPA_CLI_CHECK_REACH_H

#include "gpu_admission/policy.h"
#include "gpu_admission/reach.h"

#include <cjson/cJSON.h>

/* ---- rules reached only by pods the webhooks refuse (check_denied.c) ---- */

typedef struct gpa_cli_denied_rule {
    bool denied;   /* a placing rule every witness pod of which is refused */
    char *reason;  /* the first refusal's reason id ("mig-count") */
    char *message; /* its message */
    char *pod;     /* its witness, as gpa_reach_pod_text says it */
} gpa_cli_denied_rule;

typedef struct gpa_cli_denied {
    gpa_cli_denied_rule *rules; /* per rule of the set */
    size_t n_rules, n_denied;
} gpa_cli_denied;

/* Judges every witness pod r has for each placing rule (its own and those of the findings it
 * takes); a rule none of whose witnesses is admitted is denied. 0, or -1 (memory, or a
 * witness the webhooks cannot answer). */
int gpa_cli_check_denied(gpa_cli_denied *out, const gpa_policy *p, const gpa_reach *r);
void gpa_cli_denied_free(gpa_cli_denied *d);
/* "file:line:col: warning: rule R is reached only by pods it then denies: ..." lines, NULL
 * when none. Caller frees. */
char *gpa_cli_denied_text(const gpa_policy *p, const gpa_cli_denied *d);

/* The -o json document of a set that loaded: revision, counts, findings (the lint's lines,
 * the analysis', the tenancy analysis', the rules reached only by pods they deny; reach NULL
 * with reach_error when it was refused, ten NULL with ten_error; denied may be NULL). Caller
 * frees. */
char *gpa_cli_check_json(const gpa_policy *p, const char *lint, const gpa_reach *r,
                         const gpa_cli_denied *denied, const char *reach_error,
                         const gpa_tenancy_report *ten, const char *ten_error);
/* The "reachability:" part of check's description: each rule with a pod it takes (or never
 * reached, or reached only by pods it denies), then the information lines (unmatched GPU pods
 * allowed). denied may be NULL. Caller frees. */
char *gpa_cli_check_reach_text(const gpa_policy *p, const gpa_reach *r,
                               const gpa_cli_denied *denied);
/* The pod a witness stands for: one container asking w->gpus nvidia.com/gpu. */
cJSON *gpa_cli_check_pod(const gpa_reach_pod *w, const char *name);
/* {"ok": false, "errors": [{"file", "line", "col", "message"}]} from the loader's lines. */
char *gpa_cli_check_errors_json(const char *message);
/* Writes the witness suite to file; 0, or 1 after printing why. */
int gpa_cli_check_witnesses(const gpa_policy *p, const gpa_reach *r, const char *dir,
                            const char *file);

#endif
