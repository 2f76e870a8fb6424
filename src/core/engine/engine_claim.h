/*
 * engine_claim.h - the per-request state of judging one DRA claim, shared by engine_claim.c
 * (reading, matching, checks, enforcement) and engine_claim_mutate.c (placement). Private to
 * src/core; lives for one request and never outlives it.
 */
#ifndef GPA_ENGINE_CLAIM_H
#define GPA_ENGINE_CLAIM_H

#include "engine/engine_internal.h"
#include "k8s/claim.h"
#include "policy/policy_dra.h"

typedef struct gpa_claim_eng {
    gpa_eng e;          /* the pod engine's state: tenancy, match, violations, decision */
    const gpa_claim *c; /* the reader's view of the request's object */
    bool gpu;           /* some alternative names a GPU class of the policy */
    /* last: gpa_engine_claim zeroes what comes before it */
    bool gpu_alt[GPA_CLAIM_MAX_ALTS]; /* per alternative: names a generic or a pool's class */
} gpa_claim_eng;

/* engine_claim_mutate.c: places the claim in its pool (POLICY.md's mutation of a placed
 * claim) on an arena copy and sets the decision's patch (and mutated unless patch_only) and
 * one warning per changed request. Nothing when the claim is not placed. */
void gpa_claim_mutate(gpa_claim_eng *ce);

#endif
