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

/* engine_claim_mutate.c (the claim's placement, which the checks read too): */
/* The pool a rule places the claim in (NULL: unplaced, a deny rule, or no spec.dra). */
const gpa_pool *gpa_claim_placed_pool(const gpa_eng *e);
/* Does a selector of x equal expr? */
bool gpa_claim_has_selector(const gpa_claim_alt *x, const char *expr);
/* The next multiAllocatable pool (from *from on; *from is advanced) whose devices x could be
 * allocated although no rule places the claim there: same class once placed, no selector of x
 * rules them out (with placement's selectors when mutating). NULL when there is none. */
const gpa_pool *gpa_claim_shared_pool(const gpa_claim_eng *ce, const gpa_claim_alt *x, size_t *from,
                                      bool mutating);

/* Places the claim in its pool (POLICY.md's mutation of a placed
 * claim) and keeps every GPU request off the multiAllocatable pools it is not placed in, on an
 * arena copy; sets the decision's patch (and mutated unless patch_only) and one warning per
 * changed request. Nothing when neither applies. */
void gpa_claim_mutate(gpa_claim_eng *ce);

/* engine_claim_config.c (NVIDIA's opaque configs against the device type each GPU request
 * gets; table in docs/policy.md): */
/* A violation dra-config-device-type for every config the driver would refuse on the claim
 * as it leaves this hook and that no translation makes right. placed: the pool the mutating
 * hook places the claim in (gpa_claim_placed_pool), NULL for the validating hook or an
 * unplaced claim (the claim is judged as written). */
void gpa_claim_check_configs(gpa_claim_eng *ce, const gpa_pool *placed);
/* Translates, in the mutating hook's copy, every config of a claim placed in pool `placed`
 * that does not fit its requests' device type into the kind that does, where the driver
 * reads the same settings there; one warning each. true when one changed. */
bool gpa_claim_fit_configs(gpa_claim_eng *ce, cJSON *copy, const gpa_pool *placed);

#endif
