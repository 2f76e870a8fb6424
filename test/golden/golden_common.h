/*
 * golden_common.h - the helpers the golden programs share (golden_common.c): golden_runner
 * (pod cases), golden_workloads (workload objects) and golden_claims (DRA claims). Test code
 * only.
 */
#ifndef GPA_GOLDEN_COMMON_H
#define GPA_GOLDEN_COMMON_H

#include <stdbool.h>
#include <stddef.h>

#include <cjson/cJSON.h>

#include "gpu_admission/policy.h"
#include "gpu_admission/review.h"

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
/* Every YAML document of a file as a JSON array; NULL (the reason on stderr) when unreadable. */
cJSON *yaml_docs(const char *path);

/* The AdmissionReview (apiVersion api) the API server sends for obj: request.kind and
 * request.resource from its apiVersion and kind, DELETE with oldObject only, user as
 * userInfo.username when not NULL, dryRun when dry. Caller frees. */
char *review_body(const cJSON *obj, const cJSON *old, const char *op, const char *ns,
                  const char *user, const char *api, bool dry);

/* One webhook answer, read back from the response body as the API server would. */
typedef struct answer {
    bool allowed;
    bool patched;    /* the response carries a patch */
    char *message;   /* status.message (or a 400's message) */
    char *reason;    /* the decision's reason id */
    cJSON *warnings; /* response.warnings, detached */
    cJSON *patch;    /* the decision's patch, copied when the response carries one */
    const char *outcome;
    char *body;
} answer;
answer ask(const gpa_policy *p, gpa_hook hook, const char *body);
void answer_free(answer *a);

/* A failed expectation of run `run` of case `name`; sets the caller's `bad`. */
#define RUN_FAIL(...)                                                                              \
    do {                                                                                           \
        fprintf(stderr, "%s run %d: ", name, run);                                                 \
        fprintf(stderr, __VA_ARGS__);                                                              \
        fputc('\n', stderr);                                                                       \
        bad = true;                                                                                \
    } while (0)

#endif
