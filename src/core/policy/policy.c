/*
 * policy.c - the life of a loaded policy snapshot: references, revision, counts, and the
 * human-readable description `gpu-admission check` prints. A snapshot is read-only after the
 * loader returns it; the only mutable field is the reference count (atomic).
 * Must never modify the model or allocate anything the snapshot would have to own.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/arena.h"
#include "gpu_admission/strbuf.h"
#include "policy/policy_model.h"
#include "policy/workload_internal.h"

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

static const char *const sharing_s[] = {"exclusive", "mig", "time-slicing", "mps"};
static const char *const enforcement_s[] = {"deny", "warn", "audit"};

static const char *trust_s(gpa_trust t)
{
    return t == GPA_TRUST_TRUSTED ? "trusted" : "untrusted";
}

static void put_list(gpa_sb *o, const gpa_strlist *l)
{
    gpa_sb_printf(o, "[");
    for (size_t i = 0; i < l->n; i++)
        gpa_sb_printf(o, "%s%s", i ? ", " : "", l->items[i]);
    gpa_sb_printf(o, "]");
}

static void put_map(gpa_sb *o, const gpa_kvlist *m)
{
    gpa_sb_printf(o, "{");
    for (size_t i = 0; i < m->n; i++)
        gpa_sb_printf(o, "%s%s: %s", i ? ", " : "", m->keys[i], m->values[i]);
    gpa_sb_printf(o, "}");
}

/* bytes as the most natural Kubernetes quantity that is exact */
static void put_bytes(gpa_sb *o, int64_t b)
{
    static const struct {
        const char *s;
        int64_t f;
    } u[] = {{"Ti", 1LL << 40},      {"Gi", 1LL << 30},   {"Mi", 1LL << 20}, {"Ki", 1LL << 10},
             {"T", 1000000000000LL}, {"G", 1000000000LL}, {"M", 1000000LL},  {"k", 1000}};
    for (size_t i = 0; i < sizeof u / sizeof u[0]; i++) {
        if (b != 0 && b % u[i].f == 0) {
            gpa_sb_printf(o, "%lld%s", (long long)(b / u[i].f), u[i].s);
            return;
        }
    }
    gpa_sb_printf(o, "%lld", (long long)b);
}

static void put_range(gpa_sb *o, const char *what, const gpa_range *r, bool bytes)
{
    gpa_sb_printf(o, " %s ", what);
    if (r->has_min && r->has_max) {
        if (bytes) {
            put_bytes(o, r->min);
            gpa_sb_printf(o, "..");
            put_bytes(o, r->max);
        } else {
            gpa_sb_printf(o, "%lld..%lld", (long long)r->min, (long long)r->max);
        }
    } else if (r->has_min) {
        gpa_sb_printf(o, ">= ");
        bytes ? put_bytes(o, r->min) : gpa_sb_printf(o, "%lld", (long long)r->min);
    } else {
        gpa_sb_printf(o, "<= ");
        bytes ? put_bytes(o, r->max) : gpa_sb_printf(o, "%lld", (long long)r->max);
    }
}

static void put_toleration(gpa_sb *o, const gpa_toleration *t)
{
    gpa_sb_printf(o, "{key: %s, operator: %s", t->key ? t->key : "\"\"", t->op ? t->op : "Equal");
    if (t->value) gpa_sb_printf(o, ", value: %s", t->value);
    if (t->effect) gpa_sb_printf(o, ", effect: %s", t->effect[0] ? t->effect : "\"\"");
    if (t->has_seconds) gpa_sb_printf(o, ", tolerationSeconds: %lld", (long long)t->seconds);
    gpa_sb_printf(o, "}");
}

static void describe_pool(gpa_sb *o, const gpa_pool *p)
{
    gpa_sb_printf(o, "  %s  (%s:%d)\n", p->name, p->pos.file, p->pos.line);
    gpa_sb_printf(o, "    sharing:        %s", sharing_s[p->sharing]);
    if (p->sharing == GPA_SHARING_MIG)
        gpa_sb_printf(o, " (strategy %s, gpu %s%s%s)",
                      p->mig_strategy == GPA_MIG_SINGLE ? "single" : "mixed",
                      p->mig_model ? p->mig_model->name : "?", p->mig_product ? ", product " : "",
                      p->mig_product ? p->mig_product : "");
    if ((p->sharing == GPA_SHARING_TIME_SLICING || p->sharing == GPA_SHARING_MPS) && p->replicas)
        gpa_sb_printf(o, " (replicas %d)", p->replicas);
    gpa_sb_printf(o, "\n    resources:      ");
    switch (p->sharing) {
    case GPA_SHARING_MIG:
        for (size_t i = 0; i < p->n_profiles; i++) {
            const gpa_mig_profile *pr = p->profiles[i];
            if (p->mig_strategy == GPA_MIG_MIXED)
                gpa_sb_printf(o, "%s%s", i ? ", " : "", pr->resource);
            else
                gpa_sb_printf(o, "%snvidia.com/gpu on %s-MIG-%s", i ? ", " : "", p->mig_product,
                              pr->name);
        }
        break;
    case GPA_SHARING_TIME_SLICING:
    case GPA_SHARING_MPS:
        gpa_sb_printf(o, "%s", p->shared_resource);
        break;
    default:
        gpa_sb_printf(o, "nvidia.com/gpu");
    }
    gpa_sb_printf(o, "\n    nodeSelector:   ");
    put_map(o, &p->node_selector);
    gpa_sb_printf(o, "\n    tolerations:    ");
    if (!p->n_tolerations) gpa_sb_printf(o, "[]");
    for (size_t i = 0; i < p->n_tolerations; i++) {
        gpa_sb_printf(o, "%s", i ? ", " : "");
        put_toleration(o, &p->tolerations[i]);
    }
    gpa_sb_printf(o, "\n    allowUntrusted: %s\n", p->allow_untrusted ? "true" : "false");
    if (p->runtime_class) gpa_sb_printf(o, "    runtimeClass:   %s\n", p->runtime_class);
    if (p->dra.none) gpa_sb_printf(o, "    dra:            none (enabled: false)\n");
    if (p->dra.set) {
        gpa_sb_printf(o, "    dra:            deviceClass %s%s, selectors ", p->dra.device_class,
                      p->dra.multi_allocatable ? ", multiAllocatable" : "");
        put_list(o, &p->dra.selectors);
        gpa_sb_printf(o, "\n");
    }
    if (p->has_topology) {
        const gpa_topology *t = &p->topology;
        gpa_sb_printf(o, "    topology:       islandLabel %s", t->island_label);
        if (t->island_size_label) gpa_sb_printf(o, ", islandSizeLabel %s", t->island_size_label);
        if (t->gpus_per_node) gpa_sb_printf(o, ", gpusPerNode %d", t->gpus_per_node);
        gpa_sb_printf(o, ", mode %s, groupLabels ",
                      t->mode == GPA_TOPO_PREFERRED ? "preferred" : "required");
        put_list(o, &t->group_labels);
        gpa_sb_printf(o, "\n");
        if (t->island_gpus > 0) {
            gpa_sb_printf(o, "    gang domains:   island %lld GPUs", (long long)t->island_gpus);
            for (size_t i = 0; i < t->n_levels; i++)
                gpa_sb_printf(o, ", %s %lld", t->levels[i].label, (long long)t->levels[i].gpus);
            gpa_sb_printf(o, "\n");
        }
        if (t->imex_template)
            gpa_sb_printf(o, "    imexChannel:    claimTemplate %s, enforcement %s\n",
                          t->imex_template, t->imex_warn ? "warn" : "deny");
    }
}

static void describe_rule(gpa_sb *o, size_t i, const gpa_rule *r)
{
    gpa_sb_printf(o, "  %zu. %s  (%s:%d)\n", i + 1, r->name, r->pos.file, r->pos.line);
    gpa_sb_printf(o, "     match:");
    bool any = false;
    if (r->namespaces.n) {
        gpa_sb_printf(o, " namespaces ");
        put_list(o, &r->namespaces);
        any = true;
    }
    if (r->labels.n) {
        gpa_sb_printf(o, " labels ");
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
        gpa_sb_printf(o, " tenants ");
        put_list(o, &r->tenants);
        any = true;
    }
    if (r->trust != GPA_TRUST_UNSET) {
        gpa_sb_printf(o, " trust %s", trust_s(r->trust));
        any = true;
    }
    if (!any) gpa_sb_printf(o, " every GPU pod");
    gpa_sb_printf(o, "\n");
    if (r->deny_message)
        gpa_sb_printf(o, "     deny:  \"%s\"\n", r->deny_message);
    else if (r->pool) {
        gpa_sb_printf(o, "     place: pool %s", r->pool->name);
        if (r->pool->sharing == GPA_SHARING_MIG)
            gpa_sb_printf(o, ", migProfile %s", r->mig_auto ? "auto" : r->mig_profile->name);
        gpa_sb_printf(o, "\n");
    }
}

static void describe_workloads(gpa_sb *o, const gpa_policy *p)
{
    static const char *const wl_s[] = {"deny", "warn", "off"};
    gpa_sb_printf(o, "workloads:   enforcement %s", wl_s[p->wl_enforcement]);
    if (p->wl_enforcement_pos.file)
        gpa_sb_printf(o, "  (%s:%d)", p->wl_enforcement_pos.file, p->wl_enforcement_pos.line);
    else
        gpa_sb_printf(o, " (default)");
    gpa_sb_printf(o, "\n");
    gpa_sb_printf(o, "  built-in kinds (docs/policy.md has their template paths):");
    const char *g, *k;
    const char *const *paths;
    for (size_t i = 0; gpa_wl_builtin(i, &g, &k, &paths); i++)
        gpa_sb_printf(o, "%s %s", i ? "," : "", k);
    gpa_sb_printf(o, "\n");
    for (size_t i = 0; i < p->n_wl_kinds; i++) {
        const gpa_workload_kind *w = &p->wl_kinds[i];
        gpa_sb_printf(o, "  kind %s%s%s: ", w->api_group, *w->api_group ? "/" : "", w->kind);
        for (size_t j = 0; j < w->templates.n; j++)
            gpa_sb_printf(o, "%s%s", j ? ", " : "", w->templates.items[j]);
        gpa_sb_printf(o, "  (%s:%d)\n", w->pos.file, w->pos.line);
    }
}

char *gpa_policy_describe(const gpa_policy *p)
{
    if (!p) return NULL;
    gpa_sb o = {0};
    gpa_sb_printf(&o, "enforcement: %s\n", enforcement_s[p->enforcement]);
    gpa_sb_printf(&o, "unmatched:   %s\n", p->unmatched_deny ? "deny" : "allow");
    if (p->has_tenancy)
        gpa_sb_printf(
            &o, "tenancy:     %zu tenant%s; a namespace in no tenant is its own tenant, trust %s\n",
            p->n_tenants, p->n_tenants == 1 ? "" : "s", trust_s(p->default_trust));
    else
        gpa_sb_printf(&o, "tenancy:     none; every namespace is its own tenant, trust %s\n",
                      trust_s(p->default_trust));
    for (size_t i = 0; i < p->n_tenants; i++) {
        const gpa_tenant *t = &p->tenants[i];
        gpa_sb_printf(&o, "  tenant %s  (%s:%d)  trust %s, namespaces ", t->name, t->pos.file,
                      t->pos.line, trust_s(t->trust));
        put_list(&o, &t->namespaces);
        if (t->dra_admin_access || t->dra_allocation_mode_all)
            gpa_sb_printf(&o, ", dra:%s%s", t->dra_admin_access ? " adminAccess" : "",
                          t->dra_allocation_mode_all ? " allocationModeAll" : "");
        gpa_sb_printf(&o, "\n");
    }
    if (p->dra.set) {
        static const char *const dra_s[] = {"deny", "warn", "off"};
        gpa_sb_printf(&o, "dra:         claims judged, enforcement %s, generic classes ",
                      dra_s[p->dra.enforcement]);
        put_list(&o, &p->dra.generic_classes);
        if (p->dra.scheduler_users.n) {
            gpa_sb_printf(&o, ", scheduler users ");
            put_list(&o, &p->dra.scheduler_users);
        }
        for (size_t i = 0; i < p->dra.extended_names.n; i++)
            gpa_sb_printf(&o, "%s%s = %s", i ? ", " : ", extended resource names ",
                          p->dra.extended_names.values[i], p->dra.extended_names.keys[i]);
        gpa_sb_printf(&o, "  (%s:%d)\n", p->dra.pos.file, p->dra.pos.line);
    }
    gpa_sb_printf(&o, "gpu resources: ");
    put_list(&o, &p->gpu_resources);
    gpa_sb_printf(&o, "\npools (%zu):\n", p->n_pools);
    for (size_t i = 0; i < p->n_pools; i++)
        describe_pool(&o, &p->pools[i]);
    gpa_sb_printf(&o, "rules (%zu, effective order: first match wins):\n", p->n_rules);
    for (size_t i = 0; i < p->n_rules; i++)
        describe_rule(&o, i, &p->rules[i]);
    describe_workloads(&o, p);
    if (p->isolation.set) {
        gpa_sb_printf(&o, "isolation:   pods on shared pools may use schedulers default-scheduler");
        for (size_t i = 0; i < p->isolation.schedulers.n; i++)
            gpa_sb_printf(&o, ", %s", p->isolation.schedulers.items[i]);
        gpa_sb_printf(&o, "  (%s:%d)\n", p->isolation.pos.file, p->isolation.pos.line);
    }
    gpa_sb_printf(&o, "revision: %s\n", p->revision);
    return gpa_sb_take(&o);
}
