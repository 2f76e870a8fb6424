/*
 * claim.h - DRA ResourceClaims and ResourceClaimTemplates judged per tenant (POLICY.md
 * "Dynamic Resource Allocation"): matched by the same rules as pods, placed in a pool's
 * DeviceClass with its selectors (mutating webhook, CREATE and UPDATE: a re-applied manifest
 * is placed again) and checked (both webhooks).
 *
 * Pure like the pod engine: no I/O, no globals, no clocks; the same policy and request give
 * the same decision byte for byte. Never touches a claim the scheduler made for an extended
 * resource, a claim's status, or a DELETE.
 */
#ifndef GPA_CLAIM_PUBLIC_H
#define GPA_CLAIM_PUBLIC_H

#include <cjson/cJSON.h>
#include "common.h"
#include "engine.h"
#include "policy.h"

typedef enum {
    GPA_CLAIM_NONE = 0,
    GPA_CLAIM_CLAIM = 1,    /* resource.k8s.io ResourceClaim */
    GPA_CLAIM_TEMPLATE = 2, /* resource.k8s.io ResourceClaimTemplate */
} gpa_claim_kind_t;

/* The kind of obj from its apiVersion and kind. */
gpa_claim_kind_t gpa_claim_object_kind(const cJSON *obj);

/* Does p judge claims at all (spec.dra written, enforcement not off)? */
bool gpa_policy_judges_claims(const gpa_policy *p);

/* Judges a claim (req->object) of the given kind through the mutating (mutate true) or the
 * validating webhook. *judged false: the claim is none of the policy's business (no spec.dra,
 * enforcement off, DELETE/CONNECT, an UPDATE that changes nothing judged, a claim the
 * scheduler made): the caller answers "allowed", untouched. The decision
 * is a pod decision's twin: patch (mutate), warnings, audit annotations, message, rule, pool.
 * GPA_OK, GPA_ENOMEM or GPA_EINVAL. */
int gpa_engine_claim(gpa_decision *out, bool *judged, const gpa_policy *p, const gpa_request *req,
                     gpa_claim_kind_t kind, bool mutate, gpa_error *err);

#endif
