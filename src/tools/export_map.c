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
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpu_admission/export_map.h"
#include "gpu_admission/labels.h"
#include "gpu_admission/strbuf.h"
#include "cel_emit.h"
#include "engine/pod.h"
#include "policy/policy_dra.h"
#include "policy/policy_gang.h"
#include "policy/policy_model.h"
#include "policy/policy_shared_nodes.h"

#define MAP_NAME "gpu-admission-placement"
/* the webhook leaves a pod with more terms alone (engine_internal.h GPA_MAX_NODE_TERMS) */
#define MAX_NODE_TERMS 64

/* Can the MAP place the rule's pods exactly as the webhook does? NULL yes, else why not. */
static const char *rule_gap(const gpa_rule *r)
{
    if (r->deny_message || !r->pool) return NULL;
    if (r->pool->has_topology && gpa_gang_levels(&r->pool->topology))
        return "its pool has topology levels: the gang domain a grouped pod gets depends on "
               "the other pods of the gang, which CEL cannot see";
    return NULL;
}

/* ---------------------------------------------------------------- CEL pieces */

/* JSON Pointer escaping of a key known at export time ('~' -> ~0, '/' -> ~1). */
static void ptr_key(gpa_sb *b, const char *k)
{
    for (; *k; k++) {
        if (*k == '~')
            gpa_sb_puts(b, "~0");
        else if (*k == '/')
            gpa_sb_puts(b, "~1");
        else
            gpa_sb_put(b, k, 1);
    }
}

/* 'path/with/escaped~1key' as a CEL string literal */
static void path_lit(gpa_sb *b, const char *prefix, const char *key)
{
    gpa_sb k = {0};
    gpa_sb_puts(&k, prefix);
    if (key) ptr_key(&k, key);
    if (k.oom) b->oom = true;
    gpa_cel_quote(b, k.p ? k.p : "");
    gpa_sb_free(&k);
}

/* has(base.s0) && has(base.s0.s1) ... for the first n segments: a has() on a field of an
 * absent object is an error, not false */
static void has_chain(gpa_sb *b, const char *base, const char *const *segs, size_t n)
{
    gpa_sb_puts(b, "(");
    for (size_t i = 0; i < n; i++) {
        gpa_sb_printf(b, "%shas(%s", i ? " && " : "", base);
        for (size_t j = 0; j <= i; j++)
            gpa_sb_printf(b, ".%s", segs[j]);
        gpa_sb_puts(b, ")");
    }
    gpa_sb_puts(b, ")");
}

static void field(gpa_sb *b, const char *base, const char *const *segs, size_t n)
{
    gpa_sb_puts(b, base);
    for (size_t j = 0; j < n; j++)
        gpa_sb_printf(b, ".%s", segs[j]);
}

static void json_path(gpa_sb *b, const char *root, const char *const *segs, size_t n)
{
    gpa_sb_printf(b, "'%s", root);
    for (size_t j = 0; j < n; j++)
        gpa_sb_printf(b, "/%s", segs[j]);
    gpa_sb_puts(b, "'");
}

/* Patches creating the objects root.segs[0..n) that are absent (each as {}), so a later add
 * below them has a parent; the list ends with " + ". The webhook creates them the same way
 * (gpa_eng_child_obj): the object that results is what counts. */
static void ensure_objs(gpa_sb *b, const char *root, const char *base, const char *const *segs,
                        size_t n)
{
    for (size_t i = 1; i <= n; i++) {
        gpa_sb_puts(b, "(!");
        has_chain(b, base, segs, i);
        gpa_sb_puts(b, " ? [JSONPatch{op: 'add', path: ");
        json_path(b, root, segs, i);
        gpa_sb_puts(b, ", value: {}}] : []) + ");
    }
}

/* Appends the CEL term `item` to the list at base.segs (n segments, the last the list)
 * unless an element satisfies the predicate `have` (over x); creates what is missing. */
static void append_unique(gpa_sb *b, const char *root, const char *base, const char *const *segs,
                          size_t n, const char *item, const char *have)
{
    gpa_sb_puts(b, "(");
    ensure_objs(b, root, base, segs, n - 1);
    gpa_sb_puts(b, "(!");
    has_chain(b, base, segs, n);
    gpa_sb_puts(b, " ? [JSONPatch{op: 'add', path: ");
    json_path(b, root, segs, n);
    gpa_sb_printf(b, ", value: [%s]}] : ", item);
    field(b, base, segs, n);
    gpa_sb_printf(b, ".exists(x, %s) ? [] : [JSONPatch{op: 'add', path: ", have);
    json_path(b, root, segs, n);
    gpa_sb_printf(b, " + '/-', value: %s}]))", item);
}

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

/* ---------------------------------------------------------------- per rule */

static bool placed(const gpa_rule *r)
{
    return r->pool && !r->deny_message && !rule_gap(r);
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
static void rule_reqs(gpa_sb *b, const gpa_policy *p, const gpa_rule *r)
{
    const gpa_pool *pl = r->pool;
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
    excl_reqs(b, gpa_shared_guard_of(p, pl, false));
}

/* ---------------------------------------------------------------- variables */

/* `[e(rule 0), e(rule 1), ...][variables.rule]`, `none` when no rule matched */
typedef void (*per_rule_fn)(gpa_sb *b, const gpa_policy *p, const gpa_rule *r);

static void by_rule(gpa_sb *b, const gpa_policy *p, per_rule_fn fn, const char *none)
{
    gpa_sb_printf(b, "variables.rule < 0 ? %s : [", none);
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

static void reqs_of(gpa_sb *b, const gpa_policy *p, const gpa_rule *r)
{
    if (placed(r))
        rule_reqs(b, p, r);
    else
        gpa_sb_puts(b, "variables.keepOff");
}

static void name_of(gpa_sb *b, const gpa_policy *p, const gpa_rule *r)
{
    (void)p;
    gpa_cel_quote(b, r->name);
}

/* The expression text at column indent, as a YAML literal block's lines. */
static void block(gpa_sb *out, gpa_sb *e, size_t indent)
{
    const char *s = e->p ? e->p : "";
    if (e->oom) out->oom = true;
    while (*s) {
        const char *nl = strchr(s, '\n');
        size_t n = nl ? (size_t)(nl - s) : strlen(s);
        gpa_sb_fill(out, ' ', indent);
        gpa_sb_put(out, s, n);
        gpa_sb_puts(out, "\n");
        s += n + (nl ? 1 : 0);
    }
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
    VAR("declared");
    gpa_cel_declared_tenant(b, p, "variables.ns");
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
    VAR("rule");
    gpa_sb_puts(b, "variables.gpus <= 0 || variables.taken ? -1 : ");
    gpa_cel_first_rule(b, p, &s);
    END();
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
        excl_reqs(b, gpa_shared_guard_of(p, pl, false));
        gpa_sb_puts(b, " : ");
    }
    excl_reqs(b, gpa_shared_guard_of(p, NULL, false));
    END();
    VAR("reqs");
    gpa_sb_puts(b, "variables.rule < 0 ? variables.keepOff : ");
    gpa_sb_puts(b, "[");
    for (size_t i = 0; i < p->n_rules; i++) {
        if (i) gpa_sb_puts(b, ", ");
        const gpa_rule *r = &p->rules[i];
        /* dyn: the elements are lists of different element types ([] has none) */
        gpa_sb_puts(b, "dyn(");
        if (rule_gap(r))
            gpa_sb_puts(b, "[]"); /* left to the webhook: untouched */
        else
            reqs_of(b, p, r);
        gpa_sb_puts(b, ")");
    }
    gpa_sb_puts(b, "][variables.rule]");
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
        if (pl->topology.group_labels.n)
            str_list(b, (const char *const *)pl->topology.group_labels.items,
                     pl->topology.group_labels.n);
        else
            gpa_sb_puts(b, "['" GPA_LABEL_GROUP "']");
        gpa_sb_puts(b, ".filter(l, variables.labels[?l].orValue('') != '')[?0].orValue('') : ");
    }
    gpa_sb_puts(b, "''");
    END();
    VAR("island");
    gpa_sb_puts(b, "variables.group != ''");
    for (size_t i = 0; i < p->n_pools; i++) {
        const gpa_pool *pl = &p->pools[i];
        if (!pl->has_topology || gpa_gang_levels(&pl->topology) || !pl->topology.island_size_label)
            continue;
        gpa_sb_puts(b, " || (variables.gpus >= 2 && variables.pool == ");
        gpa_cel_quote(b, pl->name);
        gpa_sb_puts(b, ")");
    }
    END();
#undef VAR
#undef END
}

/* ---------------------------------------------------------------- mutations */

/* bool: the quantity in string expression v is whole and non-negative (gpa_gpu_qty) */
static void whole(gpa_sb *b, const char *v)
{
    gpa_sb_printf(b,
                  "(isQuantity(string(%1$s)) && quantity(string(%1$s)).isInteger() && "
                  "sign(quantity(string(%1$s))) >= 0)",
                  v);
}

/* The patches renaming one side (limits or requests, map expression m, pointer prefix in CEL
 * string expression at) of one container: every source name removed, the target set to their
 * sum plus what it held (engine_mutate.c rename_one). */
static void rename_side(gpa_sb *b, const char *m, const char *at)
{
    gpa_sb_printf(b,
                  "(variables.from.exists(k, k in %1$s) ? variables.from.filter(k, k in %1$s)"
                  ".map(k, JSONPatch{op: 'remove', path: %2$s + jsonpatch.escapeKey(k)}) + "
                  "[JSONPatch{op: 'add', path: %2$s + jsonpatch.escapeKey(variables.target), "
                  "value: string(variables.from.filter(k, k in %1$s).map(k, "
                  "quantity(string(%1$s[k])).asInteger()).sum() + (variables.target in %1$s ? "
                  "quantity(string(%1$s[variables.target])).asInteger() : 0))}] : [])",
                  m, at);
}

/* all or nothing per container: a bad quantity on either side leaves it as it is */
static void renamable(gpa_sb *b, const char *m)
{
    char v[256];
    snprintf(v, sizeof v, "%s[k]", m);
    gpa_sb_printf(b, "variables.from.all(k, !(k in %s) || ", m);
    whole(b, v);
    gpa_sb_printf(b, ") && (!(variables.target in %s) || ", m);
    snprintf(v, sizeof v, "%s[variables.target]", m);
    whole(b, v);
    gpa_sb_puts(b, ")");
}

static void rename_list(gpa_sb *b, const char *list, const char *field_name)
{
    const char *lim = "c.?resources.?limits.orValue({})";
    const char *req = "c.?resources.?requests.orValue({})";
    char at[160];
    gpa_sb_printf(b, "%s.transformList(i, c, ", list);
    renamable(b, lim);
    gpa_sb_puts(b, " && ");
    renamable(b, req);
    gpa_sb_puts(b, " ? ");
    snprintf(at, sizeof at, "'/spec/%s/' + string(i) + '/resources/limits/'", field_name);
    rename_side(b, lim, at);
    gpa_sb_puts(b, " + ");
    snprintf(at, sizeof at, "'/spec/%s/' + string(i) + '/resources/requests/'", field_name);
    rename_side(b, req, at);
    gpa_sb_puts(b, " : []).flatten()");
}

/* 1. resource names */
static void m_rename(gpa_sb *b)
{
    gpa_sb_puts(b, "variables.target == '' ? [] : ");
    rename_list(b, "object.spec.containers", "containers");
    gpa_sb_puts(b, " + ");
    rename_list(b, "object.spec.?initContainers.orValue([])", "initContainers");
}

/* bool over x: x equals t as engine_mutate.c toleration_equal reads them */
static void tol_equal(gpa_sb *b, const gpa_toleration *t)
{
    gpa_sb_puts(b, "x.?key.orValue('') == ");
    gpa_cel_quote(b, t->key ? t->key : "");
    gpa_sb_puts(b, " && (x.?operator.orValue('') == '' ? 'Equal' : x.operator) == ");
    gpa_cel_quote(b, t->op ? t->op : "Equal");
    gpa_sb_puts(b, " && x.?value.orValue('') == ");
    gpa_cel_quote(b, t->value ? t->value : "");
    gpa_sb_puts(b, " && x.?effect.orValue('') == ");
    gpa_cel_quote(b, t->effect ? t->effect : "");
    if (t->has_seconds)
        gpa_sb_printf(b, " && x.?tolerationSeconds.orValue(-1) == %" PRId64, t->seconds);
    else
        gpa_sb_puts(b, " && !has(x.tolerationSeconds)");
}

static void tol_lit(gpa_sb *b, const gpa_toleration *t)
{
    const char *names[] = {"key", "operator", "value", "effect"};
    const char *vals[] = {t->key, t->op, t->value, t->effect};
    gpa_sb_puts(b, "{");
    bool any = false;
    for (size_t i = 0; i < 4; i++) {
        if (!vals[i]) continue;
        gpa_sb_printf(b, "%s'%s': dyn(", any ? ", " : "", names[i]);
        gpa_cel_quote(b, vals[i]);
        gpa_sb_puts(b, ")");
        any = true;
    }
    if (t->has_seconds)
        gpa_sb_printf(b, "%s'tolerationSeconds': dyn(%" PRId64 ")", any ? ", " : "", t->seconds);
    gpa_sb_puts(b, "}");
}

/* 2. tolerations and runtimeClassName, per pool */
static bool m_tolerations(gpa_sb *b, const gpa_policy *p)
{
    bool any = false;
    for (size_t i = 0; i < p->n_pools; i++) {
        const gpa_pool *pl = &p->pools[i];
        if (!pl->n_tolerations && !pl->runtime_class) continue;
        any = true;
        gpa_sb_puts(b, "variables.pool == ");
        gpa_cel_quote(b, pl->name);
        gpa_sb_puts(b, " ? (");
        if (pl->n_tolerations)
            gpa_sb_puts(b, "(has(object.spec.tolerations) ? [] : [JSONPatch{op: 'add', path: "
                           "'/spec/tolerations', value: []}]) + ");
        for (size_t t = 0; t < pl->n_tolerations; t++) {
            gpa_sb_puts(b, "(object.spec.?tolerations.orValue([]).exists(x, ");
            tol_equal(b, &pl->tolerations[t]);
            gpa_sb_puts(b, ") ? [] : [JSONPatch{op: 'add', path: '/spec/tolerations/-', value: ");
            tol_lit(b, &pl->tolerations[t]);
            gpa_sb_puts(b, "}]) + ");
        }
        if (pl->runtime_class) {
            /* a different one is the validating webhook's to deny */
            gpa_sb_puts(b, "(has(object.spec.runtimeClassName) ? [] : [JSONPatch{op: 'add', "
                           "path: '/spec/runtimeClassName', value: ");
            gpa_cel_quote(b, pl->runtime_class);
            gpa_sb_puts(b, "}]) + ");
        }
        gpa_sb_puts(b, "[]) : ");
    }
    gpa_sb_puts(b, "[]");
    return any;
}

/* bool over x (a requirement) and v: x rules out nodes labelled key=v (engine_affinity.c
 * term_excludes) */
static const char EXCLUDES[] =
    "x.key == r.key && ((x.operator == 'In' && !(v in x.?values.orValue([]))) || "
    "(x.operator == 'NotIn' && v in x.?values.orValue([])) || x.operator == 'DoesNotExist')";

/* 3. the requirements ANDed into every nodeSelectorTerm (a new term would OR them away) */
static void m_node_affinity(gpa_sb *b)
{
    static const char *const segs[] = {"affinity", "nodeAffinity",
                                       "requiredDuringSchedulingIgnoredDuringExecution",
                                       "nodeSelectorTerms"};
    const char *terms = "object.spec.affinity.nodeAffinity."
                        "requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms";
    const char *at = "'/spec/affinity/nodeAffinity/requiredDuringSchedulingIgnoredDuringExecution"
                     "/nodeSelectorTerms'";
    gpa_sb_puts(b, "size(variables.reqs) == 0 ? [] : ");
    ensure_objs(b, "/spec", "object.spec", segs, 3);
    gpa_sb_puts(b, "(!");
    has_chain(b, "object.spec", segs, 4);
    gpa_sb_printf(b,
                  " || size(%s) == 0 ? [JSONPatch{op: 'add', path: %s, value: "
                  "[{'matchExpressions': variables.reqs}]}] : ",
                  terms, at);
    /* the check reports such a pod (affinity-too-large); never amplify it */
    gpa_sb_printf(b, "size(%s) > %d ? [] : ", terms, MAX_NODE_TERMS);
    gpa_sb_printf(b,
                  "%s.transformList(ti, t, !has(t.matchExpressions) ? [JSONPatch{op: 'add', "
                  "path: %s + '/' + string(ti) + '/matchExpressions', value: variables.reqs}] "
                  ": variables.reqs.transformList(ri, r, ",
                  terms, at);
    /* present as written (key, operator, values in order), or - for a NotIn of a shared pool -
     * every value already ruled out by the term, counting the requirements added before it */
    gpa_sb_puts(b, "t.matchExpressions.exists(x, x.key == r.key && x.operator == r.operator && "
                   "x.?values.orValue([]) == r.values) || (r.operator == 'NotIn' && "
                   "r.values.all(v, t.matchExpressions.exists(x, ");
    gpa_sb_puts(b, EXCLUDES);
    gpa_sb_puts(b, ") || variables.reqs.slice(0, ri).exists(x, ");
    gpa_sb_puts(b, EXCLUDES);
    gpa_sb_printf(b,
                  "))) ? [] : [JSONPatch{op: 'add', path: %s + '/' + string(ti) + "
                  "'/matchExpressions/-', value: r}]).flatten()).flatten())",
                  at);
}

/* bool over x: a pod affinity term exactly as the webhook adds it (cJSON_Compare) */
static void same_affinity_term(gpa_sb *b, const char *x, const gpa_topology *t)
{
    gpa_sb_printf(b, "%1$s.?topologyKey.orValue('') == ", x);
    gpa_cel_quote(b, t->island_label);
    gpa_sb_printf(b,
                  " && !has(%1$s.namespaceSelector) && !has(%1$s.namespaces) && "
                  "!has(%1$s.matchLabelKeys) && !has(%1$s.mismatchLabelKeys) && "
                  "has(%1$s.labelSelector) && !has(%1$s.labelSelector.matchLabels) && "
                  "%1$s.labelSelector.?matchExpressions.orValue([]).size() == 1 && "
                  "%1$s.labelSelector.matchExpressions[0].key == variables.group && "
                  "%1$s.labelSelector.matchExpressions[0].operator == 'In' && "
                  "%1$s.labelSelector.matchExpressions[0].?values.orValue([]) == "
                  "[variables.labels[variables.group]]",
                  x);
}

/* 4. pod affinity of a grouped pod to its group on one NVLink island */
static bool m_topology(gpa_sb *b, const gpa_policy *p)
{
    static const char *const req[] = {"affinity", "podAffinity",
                                      "requiredDuringSchedulingIgnoredDuringExecution"};
    static const char *const pref[] = {"affinity", "podAffinity",
                                       "preferredDuringSchedulingIgnoredDuringExecution"};
    bool any = false;
    gpa_sb_puts(b, "variables.group == '' ? [] : ");
    for (size_t i = 0; i < p->n_pools; i++) {
        const gpa_pool *pl = &p->pools[i];
        if (!pl->has_topology || gpa_gang_levels(&pl->topology)) continue;
        any = true;
        const gpa_topology *t = &pl->topology;
        gpa_sb term = {0}, have = {0};
        gpa_sb_puts(&term, "{'labelSelector': dyn({'matchExpressions': [{'key': "
                           "dyn(variables.group), 'operator': dyn('In'), 'values': "
                           "dyn([variables.labels[variables.group]])}]}), 'topologyKey': dyn(");
        gpa_cel_quote(&term, t->island_label);
        gpa_sb_puts(&term, ")}");
        gpa_sb_puts(b, "variables.pool == ");
        gpa_cel_quote(b, pl->name);
        gpa_sb_puts(b, " ? ");
        if (t->mode == GPA_TOPO_REQUIRED) {
            same_affinity_term(&have, "x", t);
            append_unique(b, "/spec", "object.spec", req, 3, term.p ? term.p : "",
                          have.p ? have.p : "");
        } else {
            gpa_sb item = {0};
            gpa_sb_printf(&item, "{'weight': dyn(100), 'podAffinityTerm': dyn(%s)}",
                          term.p ? term.p : "");
            gpa_sb_puts(&have, "x.weight == 100 && has(x.podAffinityTerm) && ");
            same_affinity_term(&have, "x.podAffinityTerm", t);
            append_unique(b, "/spec", "object.spec", pref, 3, item.p ? item.p : "",
                          have.p ? have.p : "");
            if (item.oom) b->oom = true;
            gpa_sb_free(&item);
        }
        if (term.oom || have.oom) b->oom = true;
        gpa_sb_free(&term);
        gpa_sb_free(&have);
        gpa_sb_puts(b, " : ");
    }
    gpa_sb_puts(b, "[]");
    return any;
}

/* 5. isolation on time-slicing and mps pools: pool and tenant labels, then the required
 * anti-affinity to other tenants' pods of the pool on one node */
static bool m_isolation(gpa_sb *b, const gpa_policy *p)
{
    static const char *const segs[] = {"affinity", "podAntiAffinity",
                                       "requiredDuringSchedulingIgnoredDuringExecution"};
    gpa_sb_puts(b, "variables.pool in [");
    size_t k = 0;
    for (size_t i = 0; i < p->n_pools; i++)
        k += gpa_pool_is_shared(&p->pools[i]);
    if (!k) return false;
    k = 0;
    for (size_t i = 0; i < p->n_pools; i++) {
        if (!gpa_pool_is_shared(&p->pools[i])) continue;
        if (k++) gpa_sb_puts(b, ", ");
        gpa_cel_quote(b, p->pools[i].name);
    }
    gpa_sb_puts(b, "] ? ((has(object.metadata.labels) ? [] : [JSONPatch{op: 'add', path: "
                   "'/metadata/labels', value: {}}]) + (");
    gpa_sb_printf(b,
                  "'%s' in object.metadata.?labels.orValue({}) ? [] : [JSONPatch{op: 'add', "
                  "path: ",
                  GPA_LABEL_POOL);
    path_lit(b, "/metadata/labels/", GPA_LABEL_POOL);
    gpa_sb_printf(b,
                  ", value: variables.pool}]) + ('%s' in object.metadata.?labels.orValue({}) "
                  "? [] : [JSONPatch{op: 'add', path: ",
                  GPA_LABEL_TENANT);
    path_lit(b, "/metadata/labels/", GPA_LABEL_TENANT);
    gpa_sb_puts(b, ", value: variables.tenant}]) + ");
    gpa_sb have = {0};
    /* engine_affinity.c isolation_term: every namespace (an empty namespaceSelector, no
     * namespaces list), no extra label requirement, exactly the two expressions */
    gpa_sb_printf(&have,
                  "x.?topologyKey.orValue('') == '%s' && has(x.labelSelector) && "
                  "!has(x.namespaces) && has(x.namespaceSelector) && "
                  "size(x.namespaceSelector.?matchLabels.orValue({})) == 0 && "
                  "size(x.namespaceSelector.?matchExpressions.orValue([])) == 0 && "
                  "size(x.labelSelector.?matchLabels.orValue({})) == 0 && "
                  "size(x.labelSelector.?matchExpressions.orValue([])) == 2 && "
                  "x.labelSelector.matchExpressions.exists(e, e.key == '%s' && e.operator == "
                  "'In' && e.?values.orValue([]) == [variables.pool]) && "
                  "x.labelSelector.matchExpressions.exists(e, e.key == '%s' && e.operator == "
                  "'NotIn' && e.?values.orValue([]) == [variables.tenant])",
                  GPA_HOSTNAME_KEY, GPA_LABEL_POOL, GPA_LABEL_TENANT);
    gpa_sb term = {0};
    gpa_sb_printf(&term,
                  "{'labelSelector': dyn({'matchExpressions': [{'key': dyn('%s'), 'operator': "
                  "dyn('In'), 'values': dyn([variables.pool])}, {'key': dyn('%s'), 'operator': "
                  "dyn('NotIn'), 'values': dyn([variables.tenant])}]}), 'namespaceSelector': "
                  "dyn({}), 'topologyKey': dyn('%s')}",
                  GPA_LABEL_POOL, GPA_LABEL_TENANT, GPA_HOSTNAME_KEY);
    append_unique(b, "/spec", "object.spec", segs, 3, term.p ? term.p : "", have.p ? have.p : "");
    if (have.oom || term.oom) b->oom = true;
    gpa_sb_free(&have);
    gpa_sb_free(&term);
    gpa_sb_puts(b, ") : []");
    return true;
}

/* 4 and 6. annotations: the NVLink island record, the rule and the policy revision */
static bool m_annotations(gpa_sb *b, const gpa_policy *p)
{
    gpa_sb_puts(b, "variables.pool == '' ? [] : (has(object.metadata.annotations) ? [] : "
                   "[JSONPatch{op: 'add', path: '/metadata/annotations', value: {}}]) + (");
    /* mutation 4's record: a pod of a topology pool (without levels) asking 2+ GPUs of a pool
     * with islandSizeLabel, or carrying a group label */
    gpa_sb_puts(b, "(variables.island ? [['" GPA_ANN_TOPOLOGY
                   "', 'nvlink-island']] : []) + [['" GPA_ANN_RULE
                   "', variables.ruleName], ['" GPA_ANN_POLICY "', ");
    gpa_cel_quote(b, gpa_policy_revision(p));
    gpa_sb_puts(b, "]]).filter(a, object.metadata.?annotations.orValue({})[?a[0]].orValue('') != "
                   "a[1] || !(a[0] in object.metadata.?annotations.orValue({}))).map(a, "
                   "JSONPatch{op: 'add', path: '/metadata/annotations/' + "
                   "jsonpatch.escapeKey(a[0]), value: a[1]})");
    return true;
}

/* ---------------------------------------------------------------- the objects */

/* false: the policy gives the mutation nothing to do (it is left out: an expression that is
 * always [] does not type as list(JSONPatch)) */
typedef bool (*mutation_fn)(gpa_sb *b, const gpa_policy *p);

static bool m_rename_p(gpa_sb *b, const gpa_policy *p)
{
    for (size_t i = 0; i < p->n_rules; i++)
        if (placed(&p->rules[i]) && renames(p->rules[i].pool)) {
            m_rename(b);
            return true;
        }
    return false;
}

static bool m_node_affinity_p(gpa_sb *b, const gpa_policy *p)
{
    (void)p;
    m_node_affinity(b);
    return true;
}

/* in the webhook's order: the lists both append to keep its element order */
static const struct {
    const char *what;
    mutation_fn fn;
} mutations[] = {
    {"1. resource names: nvidia.com/gpu to the MIG profile or the shared resource", m_rename_p},
    {"2. the pool's tolerations and runtimeClassName", m_tolerations},
    {"3. the pool's node requirements in every nodeSelectorTerm", m_node_affinity_p},
    {"4. pod affinity of a grouped pod to its NVLink island", m_topology},
    {"5. isolation labels and anti-affinity on time-slicing and mps pools", m_isolation},
    {"4, 6. topology, rule and policy annotations", m_annotations},
};

static void gaps(gpa_sb *b, const gpa_policy *p)
{
    for (size_t i = 0; i < p->n_rules; i++) {
        const char *why = rule_gap(&p->rules[i]);
        if (why) gpa_sb_printf(b, "rule %s: not placed by the MAP: %s\n", p->rules[i].name, why);
    }
    if (p->shared_guards_dra && p->shared_guards_dra != p->shared_guards)
        gpa_sb_puts(b, "multiAllocatable DRA pools: a pod asking a resource DRA may serve is kept "
                       "off the time-slicing and mps pools' nodes only, not off theirs\n");
}

static void selector(gpa_sb *b, size_t indent)
{
    gpa_sb_fill(b, ' ', indent);
    gpa_sb_puts(b, "namespaceSelector:\n");
    gpa_sb_fill(b, ' ', indent + 2);
    gpa_sb_puts(b, "matchExpressions:\n");
    gpa_sb_fill(b, ' ', indent + 2);
    gpa_sb_puts(b,
                "- {key: kubernetes.io/metadata.name, operator: NotIn, values: [kube-system]}\n");
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
