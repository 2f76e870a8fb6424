/*
 * judge.h - one object judged exactly as the API server would have it judged: an
 * AdmissionReview through the mutating webhook's codec (gpa_review_handle), the patch applied,
 * then the result through the validating webhook's codec. Shared by `gpu-admission test` and
 * `gpu-admission diff`; nothing is cached between calls. Pure: no I/O.
 */
#ifndef GPA_JUDGE_H
#define GPA_JUDGE_H

#include <cjson/cJSON.h>
#include "common.h"
#include "policy.h"

typedef enum {
    GPA_JUDGE_BOTH,     /* mutate, then validate the mutated object (the API server's order) */
    GPA_JUDGE_MUTATE,   /* the mutating webhook only */
    GPA_JUDGE_VALIDATE, /* the validating webhook only, on the object as given */
} gpa_judge_hooks;

typedef struct gpa_judge_input {
    const cJSON *object;    /* a Kubernetes object, or a whole AdmissionReview (then namespace_,
                               operation and old_object come from its request) */
    const char *namespace_; /* NULL: the object's metadata.namespace, else "default" */
    const char *operation;  /* NULL: "CREATE" */
    const cJSON *old_object;
    gpa_judge_hooks hooks;
    bool want_object; /* gpa_judgement.object also when the webhooks changed nothing (a copy
                         the caller may keep; readers use .result instead) */
} gpa_judge_input;

typedef struct gpa_judgement {
    bool judged;     /* a webhook judged the object (false: both skipped it, as they skip a
                        DELETE or a kind they do not police) */
    bool allowed;    /* false when either webhook denied */
    char *rule;      /* matched rule, NULL when none */
    char *pool;      /* chosen pool, NULL when none */
    char *reason;    /* the first violation's id (e.g. "untrusted-shared"), NULL when none */
    char *message;   /* the denial message (or the violation let through by warn/audit) */
    char **warnings; /* the mutating webhook's, then the validating one's (an identical
                        repeat dropped: kubectl would print it twice, saying nothing new) */
    size_t n_warnings;
    cJSON *object;       /* owned: the object as stored after the mutating webhook's patch when it
                            changed something, else with want_object a copy of the object; else NULL */
    const cJSON *result; /* the object as stored after the mutating webhook: .object, or the
                            input's own object (valid as long as the input) */
    bool mutated;        /* the mutating webhook returned a non-empty patch */
} gpa_judgement;

/* GPA_OK with *out filled, or an error when a webhook could not answer (the server's 400:
 * GPA_EREQUEST with the reason, e.g. a malformed pod) or memory ran out. */
int gpa_judge(gpa_judgement *out, const gpa_policy *p, const gpa_judge_input *in, gpa_error *err);
void gpa_judgement_clear(gpa_judgement *j);

/* The limits of every container (containers, initContainers, ephemeralContainers) of a Pod,
 * {"main": {"nvidia.com/gpu": "1"}, ...}, or of every pod template of a workload, keyed
 * "<template path>/<container>" ("spec.template/main"); a container without limits maps to {}.
 * p resolves policy-added workload kinds (may be NULL). NULL when memory runs out. */
cJSON *gpa_judge_container_limits(const gpa_policy *p, const cJSON *object);

#endif
