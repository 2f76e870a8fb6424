/*
 * check_reach.h - `gpu-admission check`'s reachability output (check_reach.c).
 */
#ifndef GPA_CLI_CHECK_REACH_H
#define GPA_CLI_CHECK_REACH_H

#include "gpu_admission/policy.h"
#include "gpu_admission/reach.h"

/* The -o json document of a set that loaded: revision, counts, findings (the lint's lines,
 * the analysis', the tenancy analysis'; reach NULL with reach_error when it was refused, ten
 * NULL with ten_error). Caller frees. */
char *gpa_cli_check_json(const gpa_policy *p, const char *lint, const gpa_reach *r,
                         const char *reach_error, const gpa_tenancy_report *ten,
                         const char *ten_error);
/* The "reachability:" part of check's description: each rule with a pod it takes (or never
 * reached), then the information lines (unmatched GPU pods allowed). Caller frees. */
char *gpa_cli_check_reach_text(const gpa_policy *p, const gpa_reach *r);
/* {"ok": false, "errors": [{"file", "line", "col", "message"}]} from the loader's lines. */
char *gpa_cli_check_errors_json(const char *message);
/* Writes the witness suite to file; 0, or 1 after printing why. */
int gpa_cli_check_witnesses(const gpa_policy *p, const gpa_reach *r, const char *dir,
                            const char *file);

#endif
