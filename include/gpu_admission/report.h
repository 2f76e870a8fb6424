/*
 * report.h - the reports of `gpu-admission test`: the text lines, the JSON document and the
 * JUnit XML of a run of GPUPolicyTest suites. Part of gpa_tools (the server never links it).
 *
 * Pure: each writer appends to a gpa_sb the caller owns and prints; none does I/O or judges
 * anything (the runs are judged by gpa_suite_case_run before).
 */
#ifndef GPA_REPORT_H
#define GPA_REPORT_H

#include <stdbool.h>
#include <stddef.h>

#include "strbuf.h"
#include "suite.h"

typedef enum { GPA_REPORT_PASS, GPA_REPORT_FAIL, GPA_REPORT_SKIP } gpa_report_status;

/* One case as it ran: r is meaningful unless status is GPA_REPORT_SKIP. */
typedef struct gpa_report_case {
    const char *name;
    int line;
    gpa_report_status status;
    gpa_case_result r;
} gpa_report_case;

/* Suite idx of file f and the cases of it that ran (in order), with their counts. */
typedef struct gpa_report_suite {
    const gpa_suite_file *f;
    size_t idx;
    gpa_report_case *cases;
    size_t n;
    size_t passed, failed, skipped;
} gpa_report_suite;

/* "PASS  suite/case" per case, a failure's file:line and expected/got (with diffs), with
 * verbose every judged case's decision; last line "N passed, M failed, K skipped". */
void gpa_report_text(gpa_sb *out, const gpa_report_suite *runs, size_t n_runs, bool verbose);

/* {"suites": [...], "summary": {...}} pretty-printed, then "\n". false when memory ran out
 * building it (nothing appended then). */
bool gpa_report_json(gpa_sb *out, const gpa_report_suite *runs, size_t n_runs);

/* JUnit XML: one <testsuite> per suite, one <testcase> per case; every text escaped so the
 * file always parses (characters XML cannot hold become U+FFFD). */
void gpa_report_junit(gpa_sb *out, const gpa_report_suite *runs, size_t n_runs);

#endif
