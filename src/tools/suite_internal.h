/*
 * suite_internal.h - the parsed form of a GPUPolicyTest file, shared by suite.c (reading) and
 * suite_check.c (judging and checking). Private to src/core.
 */
#ifndef GPA_SUITE_INTERNAL_H
#define GPA_SUITE_INTERNAL_H

#include <regex.h>

#include "gpu_admission/suite.h"

enum {
    EX_ALLOWED = 1 << 0,
    EX_RULE = 1 << 1,
    EX_POOL = 1 << 2,
    EX_REASON = 1 << 3,
    EX_MESSAGE = 1 << 4,
    EX_WARNINGS = 1 << 5,
    EX_NO_WARNINGS = 1 << 6,
    EX_RESOURCES = 1 << 7,
    EX_OBJECT = 1 << 8,
};

typedef struct gpa_tcase {
    char *name;
    int line, col;
    bool skip;
    cJSON *object; /* object or AdmissionReview */
    char *namespace_;
    char *operation;
    cJSON *old_object;
    gpa_judge_hooks hooks;

    unsigned has; /* EX_* given */
    bool allowed;
    char *rule, *pool, *reason; /* NULL: expected null */
    char *message_src;
    regex_t message;
    size_t n_warnings;
    char **warning_src;
    regex_t *warning;
    bool no_warnings;
    cJSON *resources;
    cJSON *expect_object;
    bool exact;
} gpa_tcase;

typedef struct gpa_tsuite {
    char *name, *path, *policies;
    int line;
    gpa_tcase *cases;
    size_t n_cases;
} gpa_tsuite;

struct gpa_suite_file {
    gpa_tsuite *suites;
    size_t n;
};

#endif
