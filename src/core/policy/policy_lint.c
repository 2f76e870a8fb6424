/*
 * policy_lint.c - advice about a valid policy set: rules that can never match and rules whose
 * every pod would be denied (gpa_policy_warnings).
 *
 * A set can be valid and still useless in places: POLICY.md's own example once routed
 * `inference-*` namespaces to a rule that only accepts tenant `research`, whose namespaces
 * are `research-*` - a rule nothing ever reaches, found by nobody until a pod went elsewhere.
 * The analysis is conservative: it only speaks when it can prove the point from globs,
 * tenants and trust (pods may lower their trust, never raise it), so a silent answer means
 * "nothing provable", not "every rule is reachable". Must never change what loads or what the
 * engine decides.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpu_admission/glob.h"
#include "gpu_admission/strbuf.h"
#include "policy/policy_dra.h"
#include "policy/policy_gang.h"
#include "policy/policy_isolation.h"
#include "policy/policy_model.h"
#include "policy/policy_nvlink.h"
#include "policy/policy_reach.h"
#include "policy/policy_shared_nodes.h"

__attribute__((format(printf, 3, 4))) static void say(gpa_sb *o, const gpa_rule *r, const char *fmt,
                                                      ...)
{
    if (!o) return; /* only the verdict is wanted (gpa_lint_rule_dead) */
    char msg[768];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    char line[1024];
    int n = snprintf(line, sizeof line, "%s:%d:%d: warning: rule %s %s\n", r->pos.file, r->pos.line,
                     r->pos.col, r->name, msg);
    if (n < 0) return;
    /* a line longer than the buffer is cut, not dropped */
    gpa_sb_put(o, line, (size_t)n < sizeof line ? (size_t)n : sizeof line - 1);
}

static bool has_wildcard(const char *g)
{
    return strpbrk(g, "*?") != NULL;
}

static bool strlist_has(const gpa_strlist *l, const char *s)
{
    for (size_t i = 0; i < l->n; i++)
        if (strcmp(l->items[i], s) == 0) return true;
    return false;
}

/* Does some namespace the rule's globs admit fall inside one of the tenant's globs? */
static bool rule_meets_tenant(const gpa_rule *r, const gpa_tenant *t)
{
    if (r->namespaces.n == 0) return true;
    for (size_t i = 0; i < r->namespaces.n; i++)
        for (size_t j = 0; j < t->namespaces.n; j++)
            if (gpa_glob_intersects(r->namespaces.items[i], t->namespaces.items[j])) return true;
    return false;
}

/* Can the rule see a namespace that belongs to no tenant? Provably not only when each of its
 * globs is a literal name some tenant claims; wildcards are assumed to reach beyond. */
static bool rule_meets_default(const gpa_policy *p, const gpa_rule *r)
{
    if (r->tenants.n > 0) return false; /* named tenants are defined ones */
    if (r->namespaces.n == 0) return true;
    for (size_t i = 0; i < r->namespaces.n; i++) {
        const char *g = r->namespaces.items[i];
        if (has_wildcard(g)) return true;
        bool claimed = false;
        for (size_t t = 0; t < p->n_tenants && !claimed; t++)
            for (size_t j = 0; j < p->tenants[t].namespaces.n && !claimed; j++)
                claimed = gpa_glob_match(p->tenants[t].namespaces.items[j], g);
        if (!claimed) return true;
    }
    return false;
}

static bool matches_every_gpu_pod(const gpa_rule *r)
{
    return r->namespaces.n == 0 && r->labels.n == 0 && !r->gpus.has_min && !r->gpus.has_max &&
           !r->gpu_memory.has_min && !r->gpu_memory.has_max && r->tenants.n == 0 &&
           r->trust == GPA_TRUST_UNSET;
}

static const char *trust_name(gpa_trust t)
{
    return t == GPA_TRUST_TRUSTED ? "trusted" : "untrusted";
}

/* Appends the rule's warnings to o (NULL: none written); true when it can never match. */
static bool lint_rule(gpa_sb *o, const gpa_policy *p, size_t idx)
{
    const gpa_rule *r = &p->rules[idx];

    for (size_t e = 0; e < idx; e++) {
        const gpa_rule *earlier = &p->rules[e];
        if (matches_every_gpu_pod(earlier)) {
            say(o, r, "can never match: rule %s (%s:%d) before it matches every GPU pod",
                earlier->name, earlier->pos.file, earlier->pos.line);
            return true;
        }
    }
    if (r->gpus.has_max && r->gpus.max == 0) {
        say(o, r, "can never match: gpus max is 0, and rules only see pods asking for a GPU");
        return true;
    }

    /* Which trust levels can a pod reaching this rule have, before the rule's own trust? */
    bool can_trusted = false, can_untrusted = false, any_namespace = false;
    for (size_t t = 0; t < p->n_tenants; t++) {
        const gpa_tenant *tn = &p->tenants[t];
        if (r->tenants.n > 0 && !strlist_has(&r->tenants, tn->name)) continue;
        if (!rule_meets_tenant(r, tn)) continue;
        any_namespace = true;
        if (tn->trust == GPA_TRUST_TRUSTED)
            can_trusted = true;
        else
            can_untrusted = true;
    }
    if (rule_meets_default(p, r)) {
        any_namespace = true;
        if (p->default_trust == GPA_TRUST_TRUSTED)
            can_trusted = true;
        else
            can_untrusted = true;
    }
    if (!any_namespace) {
        say(o, r, "can never match: none of its namespaces belongs to tenant%s %s%s",
            r->tenants.n > 1 ? "s" : "", r->tenants.n ? r->tenants.items[0] : "",
            r->tenants.n > 1 ? " (or the others listed)" : "");
        return true;
    }
    /* A pod may lower its trust with a label, never raise it. */
    if (r->trust == GPA_TRUST_TRUSTED && !can_trusted) {
        say(o, r,
            "can never match: it asks for trusted pods, but every namespace it matches "
            "is untrusted and pods can only lower their trust");
        return true;
    }
    gpa_trust only = r->trust != GPA_TRUST_UNSET     ? r->trust
                     : can_trusted && !can_untrusted ? GPA_TRUST_TRUSTED
                     : !can_trusted && can_untrusted ? GPA_TRUST_UNTRUSTED
                                                     : GPA_TRUST_UNSET;

    const gpa_pool *pool = r->pool;
    if (!pool || r->deny_message) return false;
    if ((pool->sharing == GPA_SHARING_TIME_SLICING || pool->sharing == GPA_SHARING_MPS) &&
        !pool->allow_untrusted && only == GPA_TRUST_UNTRUSTED)
        say(o, r,
            "denies every pod it matches: pool %s refuses untrusted pods (allowUntrusted: "
            "false) and every pod reaching this rule is %s (make the tenant trusted, set "
            "allowUntrusted, or place in a MIG pool)",
            pool->name, trust_name(only));
    if (pool->has_topology && pool->topology.gpus_per_node > 0 && r->gpus.has_min &&
        r->gpus.min > pool->topology.gpus_per_node)
        say(o, r,
            "denies every pod it matches: it asks for at least %lld GPUs, more than pool %s's "
            "gpusPerNode %d",
            (long long)r->gpus.min, pool->name, pool->topology.gpus_per_node);
    if (pool->has_topology && gpa_imex_required(&pool->topology) && can_untrusted &&
        r->trust != GPA_TRUST_TRUSTED)
        say(o, r,
            "places untrusted pods in pool %s, whose multi-node gangs need an IMEX channel, but "
            "an untrusted namespace's channel template is refused (unknown-device-class: the "
            "webhook cannot tell its ComputeDomain is the namespace's own); make the tenant "
            "trusted or match trusted pods only",
            pool->name);
    return false;
}

char *gpa_policy_warnings(const gpa_policy *p)
{
    if (!p) return NULL;
    gpa_sb o = {0};
    for (size_t i = 0; i < p->n_rules; i++)
        lint_rule(&o, p, i);
    gpa_policy_dra_warnings(&o, p);
    gpa_gang_warnings(&o, p);
    gpa_clique_warnings(&o, p);
    gpa_isolation_warnings(&o, p);
    gpa_shared_nodes_warnings(&o, p);
    return gpa_sb_take(&o);
}

bool gpa_lint_rule_dead(const gpa_policy *p, size_t idx)
{
    return lint_rule(NULL, p, idx);
}
