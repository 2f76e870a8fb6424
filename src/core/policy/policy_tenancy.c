/*
 * policy_tenancy.c - which tenant a namespace belongs to (POLICY.md "Tenancy and trust"):
 * tenants are tried in policy order and the first whose globs match wins; a namespace in no
 * tenant is its own tenant, unless its name is a declared tenant's (then it is "taken" and
 * gets nothing of that tenant).
 *
 * The one answer for every path: the engine's pods, workload templates and claims, and the
 * reachability analysis of `check` (which asks it for one namespace of each class). Hot: runs
 * once per GPU pod review, so the load-time rule index narrows the globs tried and the name
 * lookup is a binary search.
 */
#include <string.h>

#include "gpu_admission/glob.h"
#include "policy/policy_tenancy.h"
#include "policy/rule_index.h"

/* Cheap pre-check before the full glob match: the pattern's literal prefix (up to the first
 * wildcard) must be a prefix of s. Rejects most patterns of a large policy in a few
 * instructions. */
static inline bool glob_match_fast(const char *pat, const char *s)
{
    for (size_t i = 0; pat[i] && pat[i] != '*' && pat[i] != '?'; i++)
        if (s[i] != pat[i]) return false;
    return gpa_glob_match(pat, s);
}

static const gpa_tenant *first_tenant(const gpa_policy *p, const char *ns)
{
    const gpa_rule_index *x = p->rule_index;
    if (x) {
        uint64_t w = gpa_ns_word(ns);
        size_t cand[GPA_GLOB_CANDIDATES];
        size_t nc = x->n_tenant_globs > GPA_GLOB_WALK_MAX
                        ? gpa_glob_lookup_find(&x->tenants_lk, w, cand)
                        : SIZE_MAX;
        if (nc != SIZE_MAX) {
            for (size_t i = 0; i < nc; i++)
                if (gpa_glob_match(x->tenant_globs[cand[i]].pattern, ns))
                    return &p->tenants[x->tenant_globs[cand[i]].tenant];
            return NULL;
        }
        for (size_t k = 0; k < x->n_tenant_globs; k++)
            if (gpa_glob_key_may_match(&x->tenant_globs[k].key, w) &&
                gpa_glob_match(x->tenant_globs[k].pattern, ns))
                return &p->tenants[x->tenant_globs[k].tenant];
        return NULL;
    }
    for (size_t i = 0; i < p->n_tenants; i++)
        for (size_t j = 0; j < p->tenants[i].namespaces.n; j++)
            if (glob_match_fast(p->tenants[i].namespaces.items[j], ns)) return &p->tenants[i];
    return NULL;
}

const gpa_tenant *gpa_policy_tenant_named(const gpa_policy *p, const char *name)
{
    if (!name) return NULL;
    const gpa_rule_index *x = p->rule_index;
    if (x && x->tenants_by_name) {
        size_t lo = 0, hi = p->n_tenants;
        while (lo < hi) {
            size_t mid = lo + (hi - lo) / 2;
            const gpa_tenant *t = x->tenants_by_name[mid];
            int c = strcmp(t->name, name);
            if (c == 0) return t;
            if (c < 0)
                lo = mid + 1;
            else
                hi = mid;
        }
        return NULL;
    }
    for (size_t i = 0; i < p->n_tenants; i++)
        if (strcmp(p->tenants[i].name, name) == 0) return &p->tenants[i];
    return NULL;
}

const gpa_tenant *gpa_policy_tenant_of(const gpa_policy *p, const char *ns,
                                       const gpa_tenant **taken)
{
    *taken = NULL;
    if (!ns) return NULL;
    const gpa_tenant *t = first_tenant(p, ns);
    if (!t) *taken = gpa_policy_tenant_named(p, ns);
    return t;
}
