/*
 * engine.h - the admission decision: match a pod against the rules, place it in a pool
 * (mutating webhook) and check it (validating webhook). POLICY.md is the specification.
 *
 * Pure: no I/O, no globals, no clocks. Same policy + same request -> same decision, byte
 * for byte. The request is read-only; everything in the decision is owned by the decision
 * except rule/pool/reason, which point into the policy or static storage.
 */
#ifndef GPA_ENGINE_H
#define GPA_ENGINE_H

#include <cjson/cJSON.h>
#include "common.h"
#include "policy.h"

typedef enum {
    GPA_OP_CREATE,
    GPA_OP_UPDATE,
    GPA_OP_DELETE,
    GPA_OP_CONNECT,
} gpa_operation;

typedef struct gpa_request {
    const char *namespace_; /* request.namespace (falls back to object.metadata.namespace) */
    gpa_operation op;
    const cJSON *object;     /* the Pod; NULL for DELETE or object: null */
    const cJSON *old_object; /* UPDATE only, may be NULL */
    bool explain;            /* collect human explanation lines (CLI --explain) */
    bool patch_only;         /* mutate: leave decision.mutated NULL (the review codec only
                                needs the patch; saves a deep copy of the pod) */
    const char *user;        /* request.userInfo.username, NULL when unknown (the CLI): a
                                claim marked as the scheduler's is left alone only when this
                                is one of spec.dra.schedulerUsers */
    bool ephemeral_update;   /* validate: an UPDATE through pods/ephemeralcontainers
                                (`kubectl debug`): besides labels, the containers are judged
                                (privileged, NVIDIA_VISIBLE_DEVICES in untrusted pods) */
} gpa_request;

typedef struct gpa_decision {
    bool allowed;
    char *message;      /* why it was denied and what to do; set whenever a violation was
                           found, even if enforcement warn/audit let the pod through */
    const char *reason; /* static id of the first violation for metrics, e.g.
                           "untrusted-shared"; NULL when none */
    cJSON *patch;       /* RFC 6902 ops; NULL when nothing changes. Read-only: it lives in
                           the decision's arena (see priv_arena) */
    cJSON *mutated;     /* mutate only: the pod with the patch applied; NULL if unchanged
                           (an ordinary heap tree, still owned by the decision) */
    char **warnings;    /* each < 120 chars */
    size_t n_warnings;
    char **audit_keys; /* auditAnnotations, parallel arrays */
    char **audit_values;
    size_t n_audit;
    char **explain; /* only when request.explain */
    size_t n_explain;
    const char *rule; /* matched rule name, NULL when none */
    const char *pool; /* chosen pool name, NULL when none */
    bool gpu_pod;     /* the pod asks for at least one GPU resource */
    void *priv_arena; /* private: the memory patch, warnings, audit_* and explain live in
                         (freed by gpa_decision_clear: never free or cJSON_Delete them
                         one by one; copy what must outlive the decision) */
} gpa_decision;

/* Mutating webhook: decision.patch holds the changes (CREATE only; UPDATE never mutates).
 * A pod the rules deny is denied here too, so `mutate` shows the denial early. */
int gpa_engine_mutate(gpa_decision *out, const gpa_policy *p, const gpa_request *req,
                      gpa_error *err);

/* Validating webhook: never patches; judges the final spec on its own (it must hold even
 * when the mutating webhook was skipped). */
int gpa_engine_validate(gpa_decision *out, const gpa_policy *p, const gpa_request *req,
                        gpa_error *err);

void gpa_decision_clear(gpa_decision *d);

#endif
