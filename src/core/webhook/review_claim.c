/*
 * review_claim.c - the review codec's claim branch: which requests are DRA claims, and the
 * claim engine run for them on the hook asked (mutating: CREATE and UPDATE, with the patch;
 * validating: CREATE and UPDATE). Status and other subresources never come here (the codec
 * skips them: they are the scheduler's and the controllers' writes).
 *
 * Must never: judge a kind other than resource.k8s.io ResourceClaim / ResourceClaimTemplate,
 * or answer a claim the engine could not evaluate as if it had been judged.
 */
#include <stdio.h>
#include <string.h>

#include "k8s/claim.h"
#include "webhook/review_claim.h"

gpa_claim_kind_t gpa_review_claim_kind(const char *group, const char *kind, const cJSON *obj)
{
    if (kind) return (gpa_claim_kind_t)gpa_claim_kind(group ? group : "", kind);
    return gpa_claim_object_kind(obj);
}

int gpa_review_claim(gpa_decision *out, bool *judged, const gpa_policy *p, gpa_hook hook,
                     gpa_claim_kind_t kind, gpa_operation op, const cJSON *obj, const cJSON *old,
                     const char *ns, const char *user, char *why, size_t cap)
{
    gpa_request req = {
        .namespace_ = ns,
        .op = op,
        .object = obj,
        .old_object = op == GPA_OP_UPDATE ? old : NULL,
        .user = user,
        .explain = false,
        .patch_only = true, /* the response needs the patch, not the mutated claim */
    };
    gpa_error eerr;
    eerr.code = 0;
    eerr.message[0] = '\0';
    int rc = gpa_engine_claim(out, judged, p, &req, kind, hook == GPA_HOOK_MUTATE, &eerr);
    if (rc == GPA_OK || rc == GPA_ENOMEM) return rc;
    snprintf(why, cap, "cannot evaluate the claim: %s",
             eerr.message[0] ? eerr.message : "engine error");
    gpa_decision_clear(out);
    *judged = false;
    return GPA_EREQUEST;
}
