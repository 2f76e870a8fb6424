/*
 * review_claim.h - a DRA ResourceClaim or ResourceClaimTemplate on either webhook: the review
 * codec dispatches here on request.kind (or the object's own kind when the request names
 * none) and answers with the claim engine's decision (gpu_admission/claim.h). Private to
 * src/core.
 */
#ifndef GPA_REVIEW_CLAIM_H
#define GPA_REVIEW_CLAIM_H

#include <cjson/cJSON.h>
#include "gpu_admission/claim.h"
#include "gpu_admission/review.h"

/* The claim kind of a request: request.kind's group and kind when it names them (group may
 * be NULL with kind NULL), else the object's apiVersion and kind. */
gpa_claim_kind_t gpa_review_claim_kind(const char *group, const char *kind, const cJSON *obj);

/* Judges the claim: *judged false when the engine leaves it alone (the codec answers
 * "allowed", untouched). GPA_OK; GPA_ENOMEM; GPA_EREQUEST with why (cap bytes) when the
 * engine cannot evaluate it. */
int gpa_review_claim(gpa_decision *out, bool *judged, const gpa_policy *p, gpa_hook hook,
                     gpa_claim_kind_t kind, gpa_operation op, const cJSON *obj, const cJSON *old,
                     const char *ns, const char *user, char *why, size_t cap);

#endif
