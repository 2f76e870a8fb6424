/*
 * golden_common.h - the helpers both golden programs share (golden_common.c): golden_runner
 * (pod cases) and golden_workloads (workload objects). Test code only.
 */
#ifndef GPA_GOLDEN_COMMON_H
#define GPA_GOLDEN_COMMON_H

#include <stddef.h>

#include <cjson/cJSON.h>

#include "gpu_admission/policy.h"

/* The directory `policy:` names are looked up in (set by main). */
extern const char *policies_dir;
/* Whole file, NUL-terminated (len may be NULL); NULL when it cannot be read. */
char *read_file(const char *path, size_t *len);
/* `policy:` is a directory name under policies_dir, or a list of files relative to it; each
 * distinct spelling is loaded once. NULL with why filled when it does not load. */
gpa_policy *get_policy(const cJSON *spec, char *why, size_t cap);
void free_policies(void);
/* RFC 7386 merge patch of target (cases adapt a real fixture: an annotation, a label). */
void merge_patch(cJSON *target, const cJSON *patch);
/* The entries of a directory, sorted; caller frees each and the array. */
size_t list_cases(const char *cases_dir, char ***out);

#endif
