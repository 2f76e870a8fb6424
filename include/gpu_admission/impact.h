/*
 * impact.h - what a policy change does to one existing object (`gpu-admission diff`): the
 * object judged under the old and the new policy set exactly as the server would (judge.h),
 * workloads per pod template, and the differences that matter (allowed/denied, rule, pool,
 * GPU resources, warnings). Pure: no I/O.
 */
#ifndef GPA_IMPACT_H
#define GPA_IMPACT_H

#include <cjson/cJSON.h>
#include "common.h"
#include "policy.h"

enum {
    GPA_IMPACT_DENIED = 1 << 0,  /* allowed -> denied */
    GPA_IMPACT_ALLOWED = 1 << 1, /* denied -> allowed */
    GPA_IMPACT_RULE = 1 << 2,
    GPA_IMPACT_POOL = 1 << 3,
    GPA_IMPACT_RESOURCES = 1 << 4, /* extended resources (names with '/') after mutation */
    GPA_IMPACT_WARNINGS = 1 << 5,
};

/* Judges obj under old_p and new_p. *out is a JSON array with one entry per judged unit (the
 * Pod itself, or each pod template of a workload), empty when neither webhook judges the
 * object (a ConfigMap, a Service):
 *   {"template": "spec.template" (workloads only),
 *    "judgedAs": "original" | "reconstructed" | "as-is",
 *    "replicas": the pods the unit stands for: 1 for a Pod, the controller's count for a
 *                template (workload.h's replicas); absent for a DRA claim,
 *    "changes": ["denied", "allowed", "rule", "pool", "resources", "warnings"] (may be empty),
 *    "old": {"allowed", "rule", "pool", "reason", "message", "resources", "warnings"},
 *    "new": {...}}
 * judgedAs: a Pod that carries gpu-admission.io/rule or /policy was already mutated by a
 * policy; it is judged as the request it came from when that request can be rebuilt (undoing
 * the old set's changes and checking that the old set turns it back into exactly this pod:
 * "reconstructed"), else as it is ("as-is"). Fields the API server sets after admission
 * (status, spec.nodeName, metadata uid/resourceVersion/creationTimestamp/managedFields/...)
 * are dropped before judging a Pod read from a cluster.
 * *mask (optional) gets the union of the GPA_IMPACT_* bits. Errors: the webhook's 400 for a
 * malformed object (GPA_EREQUEST with the reason), GPA_ENOMEM. */
int gpa_impact_object(cJSON **out, unsigned *mask, const gpa_policy *old_p, const gpa_policy *new_p,
                      const cJSON *obj, gpa_error *err);

#endif
