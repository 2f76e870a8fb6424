/*
 * policy.c - the life of a loaded policy snapshot: references, revision, counts, and the
 * human-readable description `gpu-admission check` prints. A snapshot is read-only after the
 * loader returns it; the only mutable field is the reference count (atomic).
 * Must never modify the model or allocate anything the snapshot would have to own.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "arena.h"
#include "policy_model.h"
#include "workload_internal.h"

gpa_policy *gpa_policy_ref(gpa_policy *p)
{
    if (p) atomic_fetch_add_explicit(&p->refs, 1, memory_order_relaxed);
    return p;
}

void gpa_policy_unref(gpa_policy *p)
{
    if (!p) return;
    if (atomic_fetch_sub_explicit(&p->refs, 1, memory_order_acq_rel) == 1)
        gpa_arena_free(p->storage); /* p itself lives in the arena */
}

const char *gpa_policy_revision(const gpa_policy *p)
{
    return p ? p->revision : "";
}

size_t gpa_policy_pool_count(const gpa_policy *p)
{
    return p ? p->n_pools : 0;
}

size_t gpa_policy_rule_count(const gpa_policy *p)
{
    return p ? p->n_rules : 0;
}

/* ---- describe ---- */

typedef struct out {
    char *p;
    size_t len, cap;
    bool oom;
} out;

static void put(out *o, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void put(out *o, const char *fmt, ...)
{
    if (o->oom) return;
    for (;;) {
        va_list ap;
        va_start(ap, fmt);
        int n = vsnprintf(o->p ? o->p + o->len : NULL, o->p ? o->cap - o->len : 0, fmt, ap);
        va_end(ap);
        if (n < 0) {
            o->oom = true;
            return;
        }
        if (o->p && o->len + (size_t)n < o->cap) {
            o->len += (size_t)n;
            return;
        }
        size_t nc = o->cap ? o->cap * 2 : 4096;
        while (nc < o->len + (size_t)n + 1)
            nc *= 2;
        char *np = realloc(o->p, nc);
        if (!np) {
            o->oom = true;
            return;
        }
        o->p = np;
        o->cap = nc;
    }
}

static const char *const sharing_s[] = {"exclusive", "mig", "time-slicing", "mps"};
static const char *const enforcement_s[] = {"deny", "warn", "audit"};

static const char *trust_s(gpa_trust t)
{
    return t == GPA_TRUST_TRUSTED ? "trusted" : "untrusted";
}

static void put_list(out *o, const gpa_strlist *l)
{
    put(o, "[");
    for (size_t i = 0; i < l->n; i++)
        put(o, "%s%s", i ? ", " : "", l->items[i]);
    put(o, "]");
}

static void put_map(out *o, const gpa_kvlist *m)
{
    put(o, "{");
    for (size_t i = 0; i < m->n; i++)
        put(o, "%s%s: %s", i ? ", " : "", m->keys[i], m->values[i]);
    put(o, "}");
}

/* bytes as the most natural Kubernetes quantity that is exact */
static void put_bytes(out *o, int64_t b)
{
    static const struct {
        const char *s;
        int64_t f;
    } u[] = {{"Ti", 1LL << 40},      {"Gi", 1LL << 30},   {"Mi", 1LL << 20}, {"Ki", 1LL << 10},
             {"T", 1000000000000LL}, {"G", 1000000000LL}, {"M", 1000000LL},  {"k", 1000}};
    for (size_t i = 0; i < sizeof u / sizeof u[0]; i++) {
        if (b != 0 && b % u[i].f == 0) {
            put(o, "%lld%s", (long long)(b / u[i].f), u[i].s);
            return;
        }
    }
    put(o, "%lld", (long long)b);
}

static void put_range(out *o, const char *what, const gpa_range *r, bool bytes)
{
    put(o, " %s ", what);
    if (r->has_min && r->has_max) {
        if (bytes) {
            put_bytes(o, r->min);
            put(o, "..");
            put_bytes(o, r->max);
        } else {
            put(o, "%lld..%lld", (long long)r->min, (long long)r->max);
        }
    } else if (r->has_min) {
        put(o, ">= ");
        bytes ? put_bytes(o, r->min) : put(o, "%lld", (long long)r->min);
    } else {
        put(o, "<= ");
        bytes ? put_bytes(o, r->max) : put(o, "%lld", (long long)r->max);
    }
}

static void put_toleration(out *o, const gpa_toleration *t)
{
    put(o, "{key: %s, operator: %s", t->key ? t->key : "\"\"", t->op ? t->op : "Equal");
    if (t->value) put(o, ", value: %s", t->value);
    if (t->effect) put(o, ", effect: %s", t->effect[0] ? t->effect : "\"\"");
    if (t->has_seconds) put(o, ", tolerationSeconds: %lld", (long long)t->seconds);
    put(o, "}");
}

static void describe_pool(out *o, const gpa_pool *p)
{
    put(o, "  %s  (%s:%d)\n", p->name, p->pos.file, p->pos.line);
    put(o, "    sharing:        %s", sharing_s[p->sharing]);
    if (p->sharing == GPA_SHARING_MIG)
        put(o, " (strategy %s, gpu %s%s%s)", p->mig_strategy == GPA_MIG_SINGLE ? "single" : "mixed",
            p->mig_model ? p->mig_model->name : "?", p->mig_product ? ", product " : "",
            p->mig_product ? p->mig_product : "");
    if ((p->sharing == GPA_SHARING_TIME_SLICING || p->sharing == GPA_SHARING_MPS) && p->replicas)
        put(o, " (replicas %d)", p->replicas);
    put(o, "\n    resources:      ");
    switch (p->sharing) {
    case GPA_SHARING_MIG:
        for (size_t i = 0; i < p->n_profiles; i++) {
            const gpa_mig_profile *pr = p->profiles[i];
            if (p->mig_strategy == GPA_MIG_MIXED)
                put(o, "%s%s", i ? ", " : "", pr->resource);
            else
                put(o, "%snvidia.com/gpu on %s-MIG-%s", i ? ", " : "", p->mig_product, pr->name);
        }
        break;
    case GPA_SHARING_TIME_SLICING:
    case GPA_SHARING_MPS:
        put(o, "%s", p->shared_resource);
        break;
    default:
        put(o, "nvidia.com/gpu");
    }
    put(o, "\n    nodeSelector:   ");
    put_map(o, &p->node_selector);
    put(o, "\n    tolerations:    ");
    if (!p->n_tolerations) put(o, "[]");
    for (size_t i = 0; i < p->n_tolerations; i++) {
        put(o, "%s", i ? ", " : "");
        put_toleration(o, &p->tolerations[i]);
    }
    put(o, "\n    allowUntrusted: %s\n", p->allow_untrusted ? "true" : "false");
    if (p->runtime_class) put(o, "    runtimeClass:   %s\n", p->runtime_class);
    if (p->has_topology) {
        const gpa_topology *t = &p->topology;
        put(o, "    topology:       islandLabel %s", t->island_label);
        if (t->island_size_label) put(o, ", islandSizeLabel %s", t->island_size_label);
        if (t->gpus_per_node) put(o, ", gpusPerNode %d", t->gpus_per_node);
        put(o, ", mode %s, groupLabels ", t->mode == GPA_TOPO_PREFERRED ? "preferred" : "required");
        put_list(o, &t->group_labels);
        put(o, "\n");
    }
}

static void describe_rule(out *o, size_t i, const gpa_rule *r)
{
    put(o, "  %zu. %s  (%s:%d)\n", i + 1, r->name, r->pos.file, r->pos.line);
    put(o, "     match:");
    bool any = false;
    if (r->namespaces.n) {
        put(o, " namespaces ");
        put_list(o, &r->namespaces);
        any = true;
    }
    if (r->labels.n) {
        put(o, " labels ");
        put_map(o, &r->labels);
        any = true;
    }
    if (r->gpus.has_min || r->gpus.has_max) {
        put_range(o, "gpus", &r->gpus, false);
        any = true;
    }
    if (r->gpu_memory.has_min || r->gpu_memory.has_max) {
        put_range(o, "gpuMemory", &r->gpu_memory, true);
        any = true;
    }
    if (r->tenants.n) {
        put(o, " tenants ");
        put_list(o, &r->tenants);
        any = true;
    }
    if (r->trust != GPA_TRUST_UNSET) {
        put(o, " trust %s", trust_s(r->trust));
        any = true;
    }
    if (!any) put(o, " every GPU pod");
    put(o, "\n");
    if (r->deny_message)
        put(o, "     deny:  \"%s\"\n", r->deny_message);
    else if (r->pool) {
        put(o, "     place: pool %s", r->pool->name);
        if (r->pool->sharing == GPA_SHARING_MIG)
            put(o, ", migProfile %s", r->mig_auto ? "auto" : r->mig_profile->name);
        put(o, "\n");
    }
}

static void describe_workloads(out *o, const gpa_policy *p)
{
    static const char *const wl_s[] = {"deny", "warn", "off"};
    put(o, "workloads:   enforcement %s", wl_s[p->wl_enforcement]);
    if (p->wl_enforcement_pos.file)
        put(o, "  (%s:%d)", p->wl_enforcement_pos.file, p->wl_enforcement_pos.line);
    else
        put(o, " (default)");
    put(o, "\n");
    put(o, "  built-in kinds (docs/policy.md has their template paths):");
    const char *g, *k;
    const char *const *paths;
    for (size_t i = 0; gpa_wl_builtin(i, &g, &k, &paths); i++)
        put(o, "%s %s", i ? "," : "", k);
    put(o, "\n");
    for (size_t i = 0; i < p->n_wl_kinds; i++) {
        const gpa_workload_kind *w = &p->wl_kinds[i];
        put(o, "  kind %s%s%s: ", w->api_group, *w->api_group ? "/" : "", w->kind);
        for (size_t j = 0; j < w->templates.n; j++)
            put(o, "%s%s", j ? ", " : "", w->templates.items[j]);
        put(o, "  (%s:%d)\n", w->pos.file, w->pos.line);
    }
}

char *gpa_policy_describe(const gpa_policy *p)
{
    if (!p) return NULL;
    out o = {0};
    put(&o, "enforcement: %s\n", enforcement_s[p->enforcement]);
    put(&o, "unmatched:   %s\n", p->unmatched_deny ? "deny" : "allow");
    if (p->has_tenancy)
        put(&o, "tenancy:     %zu tenant%s; a namespace in no tenant is its own tenant, trust %s\n",
            p->n_tenants, p->n_tenants == 1 ? "" : "s", trust_s(p->default_trust));
    else
        put(&o, "tenancy:     none; every namespace is its own tenant, trust %s\n",
            trust_s(p->default_trust));
    for (size_t i = 0; i < p->n_tenants; i++) {
        const gpa_tenant *t = &p->tenants[i];
        put(&o, "  tenant %s  (%s:%d)  trust %s, namespaces ", t->name, t->pos.file, t->pos.line,
            trust_s(t->trust));
        put_list(&o, &t->namespaces);
        put(&o, "\n");
    }
    put(&o, "gpu resources: ");
    put_list(&o, &p->gpu_resources);
    put(&o, "\npools (%zu):\n", p->n_pools);
    for (size_t i = 0; i < p->n_pools; i++)
        describe_pool(&o, &p->pools[i]);
    put(&o, "rules (%zu, effective order: first match wins):\n", p->n_rules);
    for (size_t i = 0; i < p->n_rules; i++)
        describe_rule(&o, i, &p->rules[i]);
    describe_workloads(&o, p);
    put(&o, "revision: %s\n", p->revision);
    if (o.oom) {
        free(o.p);
        return NULL;
    }
    return o.p;
}
