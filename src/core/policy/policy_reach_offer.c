/*
 * policy_reach_offer.c - which MIG profile the policy really offers the pods of a namespace,
 * for the denial of an untrusted pod on a time-sliced or MPS GPU (engine_validate.c).
 *
 * "Ask for a MIG profile such as nvidia.com/mig-1g.10gb" is only advice if some rule would
 * place such a pod of that namespace in a MIG pool offering the profile: rules are
 * first-match-wins, so the rule that refused it may take every pod of its namespace. The
 * exact analysis for that one namespace (gpa_reach_analyze_ns) says which MIG-placing rule
 * is reached first and by which pod; without one the denial says so instead of naming a
 * profile nobody offers.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "policy/policy_reach.h"

/* The profile auto-sizing gives the witness (least memory that holds it, fewer slices on a
 * tie, never +me), or the rule's fixed one. */
static const gpa_mig_profile *profile_for(const gpa_rule *r, const gpa_reach_pod *w)
{
    if (!r->mig_auto && r->mig_profile) return r->mig_profile;
    const gpa_mig_profile *best = NULL;
    for (size_t i = 0; i < r->pool->n_profiles; i++) {
        const gpa_mig_profile *m = r->pool->profiles[i];
        if (strchr(m->name, '+')) continue;
        if (w->has_mem && m->mem_bytes < w->mem) continue;
        if (!best || m->mem_bytes < best->mem_bytes ||
            (m->mem_bytes == best->mem_bytes && m->slices < best->slices))
            best = m;
    }
    return best;
}

int gpa_reach_mig_offer(const gpa_policy *p, const char *ns, char *resource, size_t rcap, char *how,
                        size_t hcap, bool *none)
{
    *none = true;
    resource[0] = how[0] = '\0';
    gpa_reach *r = NULL;
    int rc = gpa_reach_analyze_ns(p, ns, &r, NULL);
    if (rc != GPA_OK) return rc;
    for (size_t i = 0; i < r->n_rules && *none; i++) {
        const gpa_rule *rule = &p->rules[i];
        if (!r->reached[i] || rule->deny_message || !rule->pool ||
            rule->pool->sharing != GPA_SHARING_MIG)
            continue;
        const gpa_mig_profile *m = profile_for(rule, &r->witness[i]);
        if (!m) continue;
        *none = false;
        if (rule->pool->mig_strategy == GPA_MIG_MIXED)
            snprintf(resource, rcap, "%s", m->resource);
        else
            snprintf(resource, rcap, "nvidia.com/gpu on MIG profile %s", m->name);
        char *wt = gpa_reach_pod_text(&r->witness[i]);
        const char *pod = wt ? strchr(wt, ',') : NULL; /* the namespace is said already */
        if (!pod) rc = GPA_ENOMEM;
        snprintf(how, hcap, "rule %s places such pods of namespace %s in pool %s (e.g. %s)",
                 rule->name, ns, rule->pool->name, pod ? pod + 2 : "");
        free(wt);
    }
    gpa_reach_free(r);
    return rc;
}
