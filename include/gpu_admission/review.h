/*
 * review.h - the AdmissionReview codec: request bytes in, response bytes out.
 *
 * The server's POST /mutate and /validate and the CLI's `review` call exactly this, so the
 * two can never disagree. Handles admission.k8s.io/v1 and v1beta1; answers in the version
 * asked. Pure: no I/O.
 */
#ifndef GPA_REVIEW_H
#define GPA_REVIEW_H

#include "common.h"
#include "engine.h"
#include "policy.h"

typedef enum { GPA_HOOK_MUTATE, GPA_HOOK_VALIDATE } gpa_hook;

typedef struct gpa_review_result {
    int http_status; /* 200, or 400 when the body is not an answerable AdmissionReview */
    char *body;      /* the response: an AdmissionReview, or on 400 a Kubernetes Status
                        object {"kind":"Status",...,"code":400,"message":...} */
    size_t body_len;
    /* What happened, for logs and metrics; owned by the result (valid until
     * gpa_review_result_clear), NULL when unknown. */
    char *uid;
    char *namespace_;
    char *name;          /* metadata.name, else metadata.generateName */
    char *operation;     /* "CREATE", ... */
    char *kind;          /* the kind judged or skipped: request.kind.kind (else the object's
                            own), "Pod" for a pod; NULL when unknown */
    char *user;          /* request.userInfo.username: who asked (NULL when absent or not a
                            string) */
    const char *outcome; /* "allowed" | "mutated" | "denied" | "warned" | "skipped" | "error" */
    gpa_decision decision;
    /* Private: the request as parsed, which uid/namespace_/name/operation point into (no
     * copies); freed by gpa_review_result_clear. */
    void *request_doc;
    /* Private: request.userInfo.groups in request_doc (read with gpa_review_result_groups). */
    const void *user_groups;
} gpa_review_result;

/* Workloads (workload.h: Deployment, Job, PyTorchJob, ... and the policy's
 * spec.workloads.kinds) are judged on GPA_HOOK_VALIDATE only: each pod template through the
 * Pod path (mutation, then validation of the mutated pod); never patched.
 * Returns GPA_OK with http_status 200, or a negative code with http_status 400; in both
 * cases out->body is set. err (optional) gets the reason for a 400. Only when memory runs
 * out: GPA_ENOMEM, http_status 500 and body NULL (answer 500 with any body).
 * outcome: "skipped" = not judged (not a Pod or a workload kind, a subresource,
 * DELETE/CONNECT, no object, UPDATE on the mutating hook, a workload under workloads
 * enforcement off, with no template, or an UPDATE leaving every template as it was); "warned" = a
 * violation was let through by enforcement warn/audit; "mutated" = allowed with a patch; "error" =
 * 400/500. */
int gpa_review_handle(gpa_review_result *out, const gpa_policy *p, gpa_hook hook, const char *body,
                      size_t len, gpa_error *err);

void gpa_review_result_clear(gpa_review_result *r);

/* The string members of request.userInfo.groups, in order: the first max of them into out,
 * valid as long as r; returns how many there are (may exceed max). No allocation, so the
 * caller picks the bound (the server's log line keeps GPA_LOG_MAX_GROUPS). */
size_t gpa_review_result_groups(const gpa_review_result *r, const char **out, size_t max);

/* Compact JSON of v exactly as the codec writes patches into responses (cJSON's format, but
 * numbers are never rounded). NULL on allocation failure; caller frees. The CLI prints
 * `mutate --patch` with it so its bytes equal the decoded response.patch. */
char *gpa_review_json(const cJSON *v, size_t *len_out);

/* Parses JSON with the codec's own strict reader (what the server accepts: RFC 8259, no
 * \u0000 in strings, nesting limit, nothing after the value) into an ordinary cJSON tree the
 * caller owns (cJSON_Delete). GPA_EPARSE with "<what> at byte N" in err, or GPA_ENOMEM.
 * The CLI reads JSON input with it so it refuses exactly what the server refuses. */
int gpa_review_parse_json(cJSON **out, const char *buf, size_t len, gpa_error *err);

#endif
