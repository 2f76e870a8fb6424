/*
 * policy_reach.h - private to the exact rule reachability analysis (policy_reach*.c).
 *
 * The namespace dimension is the only infinite one: its cells are the classes of namespaces
 * (DNS-1123 labels) that match exactly the same subset of the policy's globs, found by
 * walking the product of the globs' automata (policy_reach_ns.c). Everything else is finite
 * once the rules' own values and bounds are known (policy_reach.c).
 */
#ifndef GPA_POLICY_REACH_H
#define GPA_POLICY_REACH_H

#include <stddef.h>
#include <stdint.h>

#include "gpu_admission/common.h"
#include "gpu_admission/reach.h"
#include "policy/policy_model.h"
#include "policy/policy_reach_ns.h"

/* policy_lint.c: true when the conservative lint already says rule idx "can never match",
 * so the exact analysis does not say it twice. */
bool gpa_lint_rule_dead(const gpa_policy *p, size_t idx);

/* policy_reach_text.c: the findings from what the walk recorded (per rule: reached, who takes
 * its pods, a shadowed and a bypassed witness; per tenant then default: an unmatched one). */
int gpa_reach_findings(const gpa_policy *p, gpa_reach *out, const bool *reached,
                       const uint64_t *takers, size_t rw, const gpa_reach_pod *shadow,
                       const size_t *shadow_by, const gpa_reach_pod *bypass,
                       const size_t *bypass_by, const bool *has_unm, const gpa_reach_pod *unm);
void gpa_reach_pod_free(gpa_reach_pod *w);

/* policy_reach.c: the analysis for the pods of one namespace only (no findings: reached and
 * witness per rule). Cheap enough for a denial: no automaton, globs matched directly. */
int gpa_reach_analyze_ns(const gpa_policy *p, const char *ns, gpa_reach **out, gpa_error *err);

/* policy_reach_offer.c: the advice for an untrusted pod of namespace ns refused a shared GPU:
 * the first rule (in order) that places some pod of ns in a MIG pool gives resource (the MIG
 * resource that pod gets) and how ("rule R places such pods of namespace N in pool P (e.g.
 * <pod>)"); *none when no rule does. GPA_OK or GPA_ENOMEM. */
int gpa_reach_mig_offer(const gpa_policy *p, const char *ns, char *resource, size_t rcap, char *how,
                        size_t hcap, bool *none);

#endif
