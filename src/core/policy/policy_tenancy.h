/*
 * policy_tenancy.h - which tenant a namespace belongs to (policy_tenancy.c). Private to
 * src/core: the engine (pods, workload templates, claims) and the reachability analysis ask
 * this one function, so no path can derive a tenant from a namespace another way.
 */
#ifndef GPA_POLICY_TENANCY_H
#define GPA_POLICY_TENANCY_H

#include "policy/policy_model.h"

/* The first tenant (policy order) one of whose globs matches ns, or NULL: ns is in no
 * tenant. *taken (never NULL itself) is set when ns is in no tenant and is a declared
 * tenant's name: by the default rule (a namespace in no tenant is its own tenant) it would
 * pass for that tenant, so it must get neither its rules, label nor DRA rights (POLICY.md
 * "Tenant names cannot be taken"). NULL otherwise. */
const gpa_tenant *gpa_policy_tenant_of(const gpa_policy *p, const char *ns,
                                       const gpa_tenant **taken);

/* The declared tenant named name, or NULL. */
const gpa_tenant *gpa_policy_tenant_named(const gpa_policy *p, const char *name);

#endif
