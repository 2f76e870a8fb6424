/*
 * export_map.c - the policy as one MutatingAdmissionPolicy (admissionregistration.k8s.io/v1) and
 * its binding: the API server places a pod as the mutating webhook does (POLICY.md mutations
 * 1-6) when the webhook is not there to do it.
 *
 * Variables find what the engine finds (tenant and trust from the namespace, the pod's GPU
 * count as the scheduler counts it, gpu-memory, the first matching rule, the MIG profile);
 * each mutation is a JSONPatch expression that adds only what is missing, so a second run on
 * its own output - reinvocation, or the webhook's pod coming back - patches nothing, as
 * mutation 8 requires. JSONPatch, not ApplyConfiguration: tolerations, nodeSelectorTerms and
 * the affinity term lists are atomic lists to server-side apply, which would replace them.
 * Must never place a pod the webhook would not place, nor differently: what CEL cannot say
 * (listed by gaps()) leaves that rule's pods untouched rather than half placed.
 */
#include <inttypes.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpu_admission/export_map.h"
#include "gpu_admission/labels.h"
#include "gpu_admission/strbuf.h"
#include "cel_emit.h"
#include "export_map_internal.h"
#include "engine/pod.h"
#include "policy/policy_dra.h"
#include "policy/policy_gang.h"
#include "policy/policy_model.h"
#include "policy/policy_shared_nodes.h"

#define MAP_NAME "gpu-admission-placement"
/* The namespaces the chart's mutating webhook leaves out by default (its
 * gpu-admission.excludedNamespaces: the release namespace as the docs install it, kube-system,
 * webhook.gpuOperatorNamespace): the GPU operator's validator pods ask nvidia.com/gpu to prove
 * a node works, and placing them would keep the node from ever becoming ready. */
#define EXCLUDED "[gpu-admission, kube-system, gpu-operator]"
/* tenants or rules per variable (export_vap_pod.c uses the same) */
#define CHUNK 100

/* A pool with topology levels: the gang domain a grouped pod gets depends on the other pods of
 * its gang, which CEL cannot see; its grouped pods are left to the webhook. */
static bool gang_pool(const gpa_pool *pl)
{
    return pl && pl->has_topology && gpa_gang_levels(&pl->topology);
}

/* the pool's group labels as a CEL list (default gpu-admission.io/group) */
static void group_labels(gpa_sb *b, const gpa_topology *t);

/* A node selector requirement as a CEL map: {'key': dyn(K), 'operator': dyn(OP), 'values':
 * dyn([...])} (dyn: the API server refuses map literals of mixed value types). values is CEL
 * list text. */
static void req_lit(gpa_sb *b, const char *key, const char *op, const char *values)
{
    gpa_sb_puts(b, "{'key': dyn(");
    gpa_cel_quote(b, key);
    gpa_sb_printf(b, "), 'operator': dyn('%s'), 'values': dyn(%s)}", op, values);
}

static void str_list(gpa_sb *b, const char *const *items, size_t n)
{
    gpa_sb_puts(b, "[");
    for (size_t i = 0; i < n; i++) {
        if (i) gpa_sb_puts(b, ", ");
        gpa_cel_quote(b, items[i]);
    }
    gpa_sb_puts(b, "]");
}

static void excl_reqs(gpa_sb *b, const gpa_shared_guard *g)
{
    gpa_sb_puts(b, "[");
    for (size_t i = 0; g && i < g->n; i++) {
        gpa_sb v = {0};
        str_list(&v, g->excl[i].values, g->excl[i].n_values);
        if (v.oom) b->oom = true;
        if (i) gpa_sb_puts(b, ", ");
        req_lit(b, g->excl[i].key, "NotIn", v.p ? v.p : "[]");
        gpa_sb_free(&v);
    }
    gpa_sb_puts(b, "]");
}

/* The exclusions of placement context ctx (NULL: placed nowhere): with multiAllocatable DRA
 * pools, those of a pod asking a resource DRA may serve count them too (variables.dra). */
static void guard(gpa_sb *b, const gpa_policy *p, const gpa_pool *ctx)
{
    if (p->shared_guards_dra == p->shared_guards) {
        excl_reqs(b, gpa_shared_guard_of(p, ctx, false));
        return;
    }
    gpa_sb_puts(b, "(variables.dra ? ");
    excl_reqs(b, gpa_shared_guard_of(p, ctx, true));
    gpa_sb_puts(b, " : ");
    excl_reqs(b, gpa_shared_guard_of(p, ctx, false));
    gpa_sb_puts(b, ")");
}

static void group_labels(gpa_sb *b, const gpa_topology *t)
{
    if (t->group_labels.n)
        str_list(b, (const char *const *)t->group_labels.items, t->group_labels.n);
    else
        gpa_sb_puts(b, "['" GPA_LABEL_GROUP "']");
}

/* ---------------------------------------------------------------- per rule */

static bool placed(const gpa_rule *r)
{
    return r->pool && !r->deny_message;
}

static bool renames(const gpa_pool *pl)
{
    return (pl->sharing == GPA_SHARING_MIG && pl->mig_strategy == GPA_MIG_MIXED) ||
           gpa_pool_is_shared(pl);
}

/* string: the MIG profile the rule gives (engine_match.c auto_profile: the least memory that
 * holds gpu-memory, ties to fewer slices - the pool's sorted order; the smallest without the
 * annotation; +me profiles never), '' none */
static void mig_of(gpa_sb *b, const gpa_rule *r)
{
    const gpa_pool *pl = r->pool;
    if (!placed(r) || pl->sharing != GPA_SHARING_MIG) {
        gpa_sb_puts(b, "''");
        return;
    }
    if (!r->mig_auto && r->mig_profile) {
        gpa_cel_quote(b, r->mig_profile->name);
        return;
    }
    const gpa_mig_profile *first = NULL;
    for (size_t i = 0; i < pl->n_profiles && !first; i++)
        if (!strchr(pl->profiles[i]->name, '+')) first = pl->profiles[i];
    if (!first) {
        gpa_sb_puts(b, "''");
        return;
    }
    gpa_sb_puts(b, "(!variables.hasMem ? ");
    gpa_cel_quote(b, first->name);
    for (size_t i = 0; i < pl->n_profiles; i++) {
        const gpa_mig_profile *m = pl->profiles[i];
        if (strchr(m->name, '+')) continue;
        gpa_sb_printf(b, " : quantity(variables.mem).compareTo(quantity('%" PRId64 "')) <= 0 ? ",
                      m->mem_bytes);
        gpa_cel_quote(b, m->name);
    }
    gpa_sb_puts(b, " : '')");
}

/* list: the node requirements the rule's placement ANDs into every term
 * (engine_affinity.c gpa_eng_node_reqs): the pool's nodeSelector, the MIG single product, the
 * NVLink island size, the shared pools ruled out */
static void pool_reqs(gpa_sb *b, const gpa_policy *p, const gpa_pool *pl)
{
    gpa_sb_puts(b, "[");
    for (size_t i = 0; i < pl->node_selector.n; i++) {
        gpa_sb v = {0};
        const char *one = pl->node_selector.values[i];
        str_list(&v, &one, 1);
        if (v.oom) b->oom = true;
        if (i) gpa_sb_puts(b, ", ");
        req_lit(b, pl->node_selector.keys[i], "In", v.p ? v.p : "[]");
        gpa_sb_free(&v);
    }
    gpa_sb_puts(b, "]");
    if (pl->sharing == GPA_SHARING_MIG && pl->mig_strategy == GPA_MIG_SINGLE && pl->mig_product) {
        gpa_sb_puts(b, " + (variables.mig != '' ? [{'key': dyn('nvidia.com/gpu.product'), "
                       "'operator': dyn('In'), 'values': dyn([");
        gpa_cel_quote(b, pl->mig_product);
        gpa_sb_puts(b, " + '-MIG-' + variables.mig])}] : [])");
    }
    if (pl->has_topology && pl->topology.island_size_label) {
        gpa_sb_puts(b, " + (variables.gpus >= 2 ? [");
        req_lit(b, pl->topology.island_size_label, "Gt", "[string(variables.gpus - 1)]");
        gpa_sb_puts(b, "] : [])");
    }
    gpa_sb_puts(b, " + ");
    guard(b, p, pl);
}

/* ---------------------------------------------------------------- variables */

/* `[e(rule 0), e(rule 1), ...][variables.rule]`, `none` when no rule matched */
typedef void (*per_rule_fn)(gpa_sb *b, const gpa_policy *p, const gpa_rule *r);

static void by_rule(gpa_sb *b, const gpa_policy *p, per_rule_fn fn, const char *none)
{
    gpa_sb_printf(b, "variables.rule < 0 || variables.grouped ? %s : [", none);
    for (size_t i = 0; i < p->n_rules; i++) {
        if (i) gpa_sb_puts(b, ", ");
        fn(b, p, &p->rules[i]);
    }
    gpa_sb_puts(b, "][variables.rule]");
}

static void pool_of(gpa_sb *b, const gpa_policy *p, const gpa_rule *r)
{
    (void)p;
    gpa_cel_quote(b, placed(r) ? r->pool->name : "");
}

static void mig_rule(gpa_sb *b, const gpa_policy *p, const gpa_rule *r)
{
    (void)p;
    mig_of(b, r);
}

static void target_of(gpa_sb *b, const gpa_policy *p, const gpa_rule *r)
{
    (void)p;
    if (!placed(r) || !renames(r->pool))
        gpa_sb_puts(b, "''");
    else if (gpa_pool_is_shared(r->pool))
        gpa_cel_quote(b, r->pool->shared_resource);
    else /* the mixed-strategy resource: '+' written '.' (mig.h) */
        gpa_sb_puts(b, "variables.mig == '' ? '' : 'nvidia.com/mig-' + "
                       "variables.mig.replace('+', '.')");
}

/* the index of the rule's pool, -1 for a deny rule */
static void pool_index(gpa_sb *b, const gpa_policy *p, const gpa_rule *r)
{
    gpa_sb_printf(b, "%td", placed(r) ? r->pool - p->pools : (ptrdiff_t)-1);
}

static void name_of(gpa_sb *b, const gpa_policy *p, const gpa_rule *r)
{
    (void)p;
    gpa_cel_quote(b, r->name);
}

/* The expression text at column indent, as a YAML literal block's lines; e is freed. */
static void block(gpa_sb *out, gpa_sb *e, size_t indent)
{
    if (e->oom) out->oom = true;
    gpa_cel_yaml_block(out, e->p ? e->p : "", indent);
    gpa_sb_free(e);
}

static void variables(gpa_sb *out, const gpa_policy *p)
{
    gpa_sb e = {0}, *b = &e;
#define VAR(name) gpa_sb_puts(out, "    - name: " name "\n      expression: |-\n")
#define END()     block(out, &e, 8)
    VAR("ns");
    gpa_sb_puts(b, "request.namespace");
    END();
    VAR("labels");
    gpa_sb_puts(b, "object.metadata.?labels.orValue({})");
    END();
    VAR("mem");
    gpa_sb_printf(b, "object.metadata.?annotations.orValue({})[?'%s'].orValue('')",
                  GPA_ANN_GPU_MEMORY);
    END();
    VAR("hasMem");
    gpa_sb_puts(b, "variables.mem != '' && isQuantity(variables.mem) && "
                   "sign(quantity(variables.mem)) >= 0");
    END();
    /* the API server refuses an expression over 100,000 code points: a long list of tenants
     * or rules goes into one variable per CHUNK, read lazily in order (as export vap does) */
    gpa_sb all = {0};
    for (size_t k = 0; k * CHUNK < p->n_tenants; k++) {
        gpa_sb_printf(out, "    - name: tenants%zu\n      expression: |-\n", k);
        gpa_cel_declared_tenant_range(b, p, "variables.ns", k * CHUNK, (k + 1) * CHUNK);
        END();
        gpa_sb_printf(&all, "variables.tenants%zu != '' ? variables.tenants%zu : ", k, k);
    }
    gpa_sb_puts(&all, "''");
    VAR("declared");
    gpa_sb_puts(b, all.p ? all.p : "''");
    if (all.oom) b->oom = true;
    gpa_sb_free(&all);
    END();
    VAR("tenant");
    gpa_cel_tenant(b, "variables.declared", "variables.ns");
    END();
    VAR("taken");
    gpa_cel_name_taken(b, p, "variables.declared", "variables.ns");
    END();
    VAR("nsTrusted");
    gpa_cel_ns_trusted(b, p, "variables.declared");
    END();
    VAR("trusted");
    gpa_cel_pod_trusted(b, "variables.nsTrusted", "variables.labels");
    END();
    VAR("gpus");
    gpa_cel_pod_gpus(b, p, "object.spec");
    END();
    const gpa_cel_subject s = {"variables.ns",       "variables.labels",  "variables.gpus",
                               "variables.declared", "variables.trusted", "variables.mem"};
    gpa_sb first = {0};
    for (size_t k = 0; k * CHUNK < p->n_rules; k++) {
        gpa_sb_printf(out, "    - name: rules%zu\n      expression: |-\n", k);
        gpa_cel_first_rule_range(b, p, &s, k * CHUNK, (k + 1) * CHUNK);
        END();
        gpa_sb_printf(&first, "variables.rules%zu >= 0 ? %zu + variables.rules%zu : ", k, k * CHUNK,
                      k);
    }
    gpa_sb_puts(&first, "-1");
    VAR("rule");
    gpa_sb_printf(b, "variables.gpus <= 0 || variables.taken ? -1 : (%s)",
                  first.p ? first.p : "-1");
    if (first.oom) b->oom = true;
    gpa_sb_free(&first);
    END();
    /* a grouped pod of a gang pool: left to the webhook (gang_pool) */
    VAR("grouped");
    gpa_sb_puts(b, "variables.rule >= 0 && [");
    for (size_t i = 0; i < p->n_rules; i++) {
        const gpa_rule *r = &p->rules[i];
        if (i) gpa_sb_puts(b, ", ");
        if (placed(r) && gang_pool(r->pool)) {
            group_labels(b, &r->pool->topology);
            gpa_sb_puts(b, ".exists(l, variables.labels[?l].orValue('') != '')");
        } else {
            gpa_sb_puts(b, "false");
        }
    }
    gpa_sb_puts(b, "][variables.rule]");
    END();
    if (p->shared_guards_dra != p->shared_guards) {
        /* the pod asks a resource DRA may serve (policy_dra.c gpa_dra_reachable) */
        VAR("dra");
        gpa_sb_puts(b, "(object.spec.containers + object.spec.?initContainers.orValue([]))"
                       ".exists(c, ['" GPA_RES_GPU "'");
        for (size_t i = 0; i < p->n_dra_ext; i++) {
            gpa_sb_puts(b, ", ");
            gpa_cel_quote(b, p->dra_ext[i].name);
        }
        for (size_t i = 0; i < p->dra.extended_names.n; i++) {
            gpa_sb_puts(b, ", ");
            gpa_cel_quote(b, p->dra.extended_names.values[i]);
        }
        gpa_sb_puts(b, "].exists(n, n in c.?resources.?limits.orValue({}) || n in "
                       "c.?resources.?requests.orValue({})))");
        END();
    }
    VAR("pool");
    by_rule(b, p, pool_of, "''");
    END();
    VAR("mig");
    by_rule(b, p, mig_rule, "''");
    END();
    VAR("target");
    by_rule(b, p, target_of, "''");
    END();
    /* the rule's pod is refused anyway (a deny rule, unmatched: deny) under enforcement deny:
     * the webhook leaves it unchanged */
    bool enf_deny = p->enforcement == GPA_ENFORCE_DENY;
    VAR("refused");
    gpa_sb_printf(b, "%s && (variables.rule < 0 ? %s : [", enf_deny ? "true" : "false",
                  p->unmatched_deny ? "true" : "false");
    for (size_t i = 0; i < p->n_rules; i++)
        gpa_sb_printf(b, "%s%s", i ? ", " : "", p->rules[i].deny_message ? "true" : "false");
    gpa_sb_puts(b, "][variables.rule])");
    END();
    /* a GPU pod placed in no pool keeps off the shared pools' nodes (isolation by default):
     * the guard of the shared pool whose resource it asks, else of pods placed nowhere */
    VAR("keepOff");
    gpa_sb_puts(b, "variables.gpus <= 0 || variables.refused ? [] : ");
    for (size_t i = 0; i < p->n_pools; i++) {
        const gpa_pool *pl = &p->pools[i];
        if (!gpa_pool_is_shared(pl) || strcmp(pl->shared_resource, GPA_RES_GPU) == 0) continue;
        gpa_sb_puts(b, "(object.spec.containers + object.spec.?initContainers.orValue([]))"
                       ".exists(c, ");
        gpa_cel_quote(b, pl->shared_resource);
        gpa_sb_puts(b, " in c.?resources.?limits.orValue({}) || ");
        gpa_cel_quote(b, pl->shared_resource);
        gpa_sb_puts(b, " in c.?resources.?requests.orValue({})) ? ");
        guard(b, p, pl);
        gpa_sb_puts(b, " : ");
    }
    guard(b, p, NULL);
    END();
    VAR("pix");
    by_rule(b, p, pool_index, "-1");
    END();
    /* per pool, not per rule: a policy of a few pools and hundreds of rules stays far below
     * the API server's size limit of one expression (100,000 code points) */
    VAR("reqs");
    gpa_sb_puts(b, "variables.grouped ? [] : variables.pix < 0 ? variables.keepOff : [");
    for (size_t i = 0; i < p->n_pools; i++) {
        if (i) gpa_sb_puts(b, ", ");
        /* dyn: the elements are lists of different element types ([] has none) */
        gpa_sb_puts(b, "dyn(");
        pool_reqs(b, p, &p->pools[i]);
        gpa_sb_puts(b, ")");
    }
    gpa_sb_puts(b, "][variables.pix]");
    END();
    VAR("ruleName");
    by_rule(b, p, name_of, "''");
    END();
    /* what the rename moves: nvidia.com/gpu (unless the target keeps that name) and the
     * generic DRA extended resources, which stand for it */
    VAR("from");
    gpa_sb_printf(b, "(variables.target == '%s' ? [] : ['%s']) + [", GPA_RES_GPU, GPA_RES_GPU);
    for (size_t i = 0, k = 0; i < p->n_dra_ext; i++) {
        if (!p->dra_ext[i].generic) continue;
        if (k++) gpa_sb_puts(b, ", ");
        gpa_cel_quote(b, p->dra_ext[i].name);
    }
    gpa_sb_puts(b, "]");
    END();
    /* the group label of a pod placed in a topology pool: the first of the pool's groupLabels
     * the pod carries with a value */
    VAR("group");
    for (size_t i = 0; i < p->n_pools; i++) {
        const gpa_pool *pl = &p->pools[i];
        if (!pl->has_topology || gpa_gang_levels(&pl->topology)) continue;
        gpa_sb_puts(b, "variables.pool == ");
        gpa_cel_quote(b, pl->name);
        gpa_sb_puts(b, " ? ");
        group_labels(b, &pl->topology);
        gpa_sb_puts(b, ".filter(l, variables.labels[?l].orValue('') != '')[?0].orValue('') : ");
    }
    gpa_sb_puts(b, "''");
    END();
    VAR("island");
    gpa_sb_puts(b, "variables.group != ''");
    for (size_t i = 0; i < p->n_pools; i++) {
        const gpa_pool *pl = &p->pools[i];
        /* gang pools too: the size alone makes the record (engine_mutate.c place) */
        if (!pl->has_topology || !pl->topology.island_size_label) continue;
        gpa_sb_puts(b, " || (variables.gpus >= 2 && variables.pool == ");
        gpa_cel_quote(b, pl->name);
        gpa_sb_puts(b, ")");
    }
    END();
#undef VAR
#undef END
}

/* ---------------------------------------------------------------- the objects */

/* false: the policy gives the mutation nothing to do (it is left out: an expression that is
 * always [] does not type as list(JSONPatch)) */
typedef bool (*mutation_fn)(gpa_sb *b, const gpa_policy *p);

static bool m_rename_p(gpa_sb *b, const gpa_policy *p)
{
    for (size_t i = 0; i < p->n_rules; i++)
        if (placed(&p->rules[i]) && renames(p->rules[i].pool)) {
            gpa_map_m_rename(b);
            return true;
        }
    return false;
}

static bool m_node_affinity_p(gpa_sb *b, const gpa_policy *p)
{
    (void)p;
    gpa_map_m_node_affinity(b);
    return true;
}

/* in the webhook's order: the lists both append to keep its element order */
static const struct {
    const char *what;
    mutation_fn fn;
} mutations[] = {
    {"1. resource names: nvidia.com/gpu to the MIG profile or the shared resource", m_rename_p},
    {"2. the pool's tolerations and runtimeClassName", gpa_map_m_tolerations},
    {"3. the pool's node requirements in every nodeSelectorTerm", m_node_affinity_p},
    {"4. pod affinity of a grouped pod to its NVLink island", gpa_map_m_topology},
    {"5. isolation labels and anti-affinity on time-slicing and mps pools", gpa_map_m_isolation},
    {"4, 6. topology, rule and policy annotations", gpa_map_m_annotations},
};

static void gaps(gpa_sb *b, const gpa_policy *p)
{
    for (size_t i = 0; i < p->n_rules; i++) {
        const gpa_rule *r = &p->rules[i];
        if (!placed(r) || !gang_pool(r->pool)) continue;
        gpa_sb_printf(b,
                      "rule %s: a pod carrying a group label of pool %s is left to the webhook: "
                      "the gang domain it gets depends on the other pods of its gang, which "
                      "CEL cannot see\n",
                      r->name, r->pool->name);
    }
}

static void selector(gpa_sb *b, size_t indent)
{
    gpa_sb_fill(b, ' ', indent);
    gpa_sb_puts(b, "namespaceSelector:\n");
    gpa_sb_fill(b, ' ', indent + 2);
    gpa_sb_puts(b, "matchExpressions:\n");
    gpa_sb_fill(b, ' ', indent + 2);
    gpa_sb_puts(b, "- {key: kubernetes.io/metadata.name, operator: NotIn, values: " EXCLUDED "}\n");
    gpa_sb_fill(b, ' ', indent + 2);
    gpa_sb_puts(b, "- {key: gpu-admission.io/ignore, operator: NotIn, values: [\"true\"]}\n");
}

int gpa_export_map(char **yaml, char **gap_text, const gpa_policy *p)
{
    gpa_sb b = {0}, g = {0};
    *yaml = *gap_text = NULL;
    gaps(&g, p);
    gpa_sb_printf(&b, "# gpu-admission export map: policy revision %s\n", gpa_policy_revision(p));
    for (const char *s = g.p; s && *s;) {
        const char *nl = strchr(s, '\n');
        size_t n = nl ? (size_t)(nl - s) : strlen(s);
        gpa_sb_puts(&b, "# not expressed: ");
        gpa_sb_put(&b, s, n);
        gpa_sb_puts(&b, "\n");
        s += n + (nl ? 1 : 0);
    }
    gpa_sb_puts(&b, "apiVersion: admissionregistration.k8s.io/v1\n"
                    "kind: MutatingAdmissionPolicy\n"
                    "metadata:\n"
                    "  name: " MAP_NAME "\n"
                    "  labels:\n"
                    "    app.kubernetes.io/managed-by: gpu-admission\n"
                    "  annotations:\n");
    gpa_sb_printf(&b, "    gpu-admission.io/policy: \"%s\"\n", gpa_policy_revision(p));
    /* Fail: an expression that cannot be evaluated must not admit a pod unplaced */
    gpa_sb_puts(&b, "spec:\n"
                    "  failurePolicy: Fail\n"
                    "  reinvocationPolicy: IfNeeded\n"
                    "  matchConstraints:\n"
                    "    resourceRules:\n"
                    "    - apiGroups: [\"\"]\n"
                    "      apiVersions: [v1]\n"
                    "      operations: [CREATE]\n"
                    "      resources: [pods]\n");
    selector(&b, 4);
    gpa_sb_puts(&b, "  variables:\n");
    variables(&b, p);
    gpa_sb_puts(&b, "  mutations:\n");
    for (size_t i = 0; i < sizeof mutations / sizeof mutations[0]; i++) {
        gpa_sb e = {0};
        if (!mutations[i].fn(&e, p)) {
            gpa_sb_free(&e);
            continue;
        }
        gpa_sb_printf(&b,
                      "  # %s\n  - patchType: JSONPatch\n    jsonPatch:\n"
                      "      expression: |-\n",
                      mutations[i].what);
        block(&b, &e, 8);
    }
    gpa_sb_puts(&b, "---\n"
                    "apiVersion: admissionregistration.k8s.io/v1\n"
                    "kind: MutatingAdmissionPolicyBinding\n"
                    "metadata:\n"
                    "  name: " MAP_NAME "\n"
                    "  labels:\n"
                    "    app.kubernetes.io/managed-by: gpu-admission\n"
                    "spec:\n"
                    "  policyName: " MAP_NAME "\n"
                    "  matchResources:\n");
    selector(&b, 4);
    *gap_text = gpa_sb_done(&g);
    *yaml = gpa_sb_done(&b);
    if (!*yaml || !*gap_text) {
        free(*yaml);
        free(*gap_text);
        *yaml = *gap_text = NULL;
        return GPA_ENOMEM;
    }
    return GPA_OK;
}
