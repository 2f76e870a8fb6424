/*
 * export_map_patch.c - the JSONPatch expressions of `export map` (export_map.c): POLICY.md
 * mutations 1-6, each adding only what the pod lacks, exactly where the mutating webhook adds
 * it (engine_mutate.c, engine_affinity.c), so the object that results is the webhook's and a
 * second run changes nothing.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "export_map_internal.h"
#include "cel_emit.h"
#include "engine/pod.h"
#include "policy/policy_gang.h"
#include "policy/policy_shared_nodes.h"

/* the webhook leaves a pod with more terms alone (engine_internal.h GPA_MAX_NODE_TERMS) */
#define MAX_NODE_TERMS 64

/* ---------------------------------------------------------------- CEL pieces */

/* JSON Pointer escaping of a key known at export time ('~' -> ~0, '/' -> ~1). */
static void gpa_map_ptr_key(gpa_sb *b, const char *k)
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
void gpa_map_path_lit(gpa_sb *b, const char *prefix, const char *key)
{
    gpa_sb k = {0};
    gpa_sb_puts(&k, prefix);
    if (key) gpa_map_ptr_key(&k, key);
    if (k.oom) b->oom = true;
    gpa_cel_quote(b, k.p ? k.p : "");
    gpa_sb_free(&k);
}

/* has(base.s0) && has(base.s0.s1) ... for the first n segments: a has() on a field of an
 * absent object is an error, not false */
void gpa_map_has_chain(gpa_sb *b, const char *base, const char *const *segs, size_t n)
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

static void gpa_map_field(gpa_sb *b, const char *base, const char *const *segs, size_t n)
{
    gpa_sb_puts(b, base);
    for (size_t j = 0; j < n; j++)
        gpa_sb_printf(b, ".%s", segs[j]);
}

static void gpa_map_json_path(gpa_sb *b, const char *root, const char *const *segs, size_t n)
{
    gpa_sb_printf(b, "'%s", root);
    for (size_t j = 0; j < n; j++)
        gpa_sb_printf(b, "/%s", segs[j]);
    gpa_sb_puts(b, "'");
}

/* Patches creating the objects root.segs[0..n) that are absent (each as {}), so a later add
 * below them has a parent; the list ends with " + ". The webhook creates them the same way
 * (gpa_eng_child_obj): the object that results is what counts. */
void gpa_map_ensure_objs(gpa_sb *b, const char *root, const char *base, const char *const *segs,
                         size_t n)
{
    for (size_t i = 1; i <= n; i++) {
        gpa_sb_puts(b, "(!");
        gpa_map_has_chain(b, base, segs, i);
        gpa_sb_puts(b, " ? [JSONPatch{op: 'add', path: ");
        gpa_map_json_path(b, root, segs, i);
        gpa_sb_puts(b, ", value: {}}] : []) + ");
    }
}

/* Appends the CEL term `item` to the list at base.segs (n segments, the last the list)
 * unless an element satisfies the predicate `have` (over x); creates what is missing. */
void gpa_map_append_unique(gpa_sb *b, const char *root, const char *base, const char *const *segs,
                           size_t n, const char *item, const char *have)
{
    gpa_sb_puts(b, "(");
    gpa_map_ensure_objs(b, root, base, segs, n - 1);
    gpa_sb_puts(b, "(!");
    gpa_map_has_chain(b, base, segs, n);
    gpa_sb_puts(b, " ? [JSONPatch{op: 'add', path: ");
    gpa_map_json_path(b, root, segs, n);
    gpa_sb_printf(b, ", value: [%s]}] : ", item);
    gpa_map_field(b, base, segs, n);
    gpa_sb_printf(b, ".exists(x, %s) ? [] : [JSONPatch{op: 'add', path: ", have);
    gpa_map_json_path(b, root, segs, n);
    gpa_sb_printf(b, " + '/-', value: %s}]))", item);
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
void gpa_map_m_rename(gpa_sb *b)
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
bool gpa_map_m_tolerations(gpa_sb *b, const gpa_policy *p)
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
void gpa_map_m_node_affinity(gpa_sb *b)
{
    static const char *const segs[] = {"affinity", "nodeAffinity",
                                       "requiredDuringSchedulingIgnoredDuringExecution",
                                       "nodeSelectorTerms"};
    const char *terms = "object.spec.affinity.nodeAffinity."
                        "requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms";
    const char *at = "'/spec/affinity/nodeAffinity/requiredDuringSchedulingIgnoredDuringExecution"
                     "/nodeSelectorTerms'";
    gpa_sb_puts(b, "size(variables.reqs) == 0 ? [] : ");
    gpa_map_ensure_objs(b, "/spec", "object.spec", segs, 3);
    gpa_sb_puts(b, "(!");
    gpa_map_has_chain(b, "object.spec", segs, 4);
    gpa_sb_printf(b,
                  " || size(%s) == 0 ? [JSONPatch{op: 'add', path: %s, value: "
                  "[{'matchExpressions': variables.reqs}]}] : ",
                  terms, at);
    /* the check reports such a pod (affinity-too-large); never amplify it */
    gpa_sb_printf(b, "size(%s) > %d ? [] : ", terms, MAX_NODE_TERMS);
    /* per term, the requirements it lacks: not present as written (key, operator, values in
     * order) and - for a NotIn of a shared pool - not every value already ruled out by the
     * term, counting the requirements added to it before (engine_affinity.c) */
    gpa_sb missing = {0};
    gpa_sb_puts(&missing, "variables.reqs.transformList(ri, r, t.?matchExpressions.orValue([])"
                          ".exists(x, x.key == r.key && x.operator == r.operator && "
                          "x.?values.orValue([]) == r.values) || (r.operator == 'NotIn' && "
                          "r.values.all(v, t.?matchExpressions.orValue([]).exists(x, ");
    gpa_sb_puts(&missing, EXCLUDES);
    gpa_sb_puts(&missing, ") || variables.reqs.slice(0, ri).exists(x, ");
    gpa_sb_puts(&missing, EXCLUDES);
    gpa_sb_puts(&missing, "))) ? [] : [r]).flatten()");
    const char *m = missing.p ? missing.p : "[]";
    if (missing.oom) b->oom = true;
    gpa_sb_printf(b,
                  "%1$s.transformList(ti, t, !has(t.matchExpressions) ? (size(%2$s) == 0 ? [] : "
                  "[JSONPatch{op: 'add', path: %3$s + '/' + string(ti) + '/matchExpressions', "
                  "value: %2$s}]) : %2$s.map(r, JSONPatch{op: 'add', path: %3$s + '/' + "
                  "string(ti) + '/matchExpressions/-', value: r})).flatten())",
                  terms, m, at);
    gpa_sb_free(&missing);
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
bool gpa_map_m_topology(gpa_sb *b, const gpa_policy *p)
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
            gpa_map_append_unique(b, "/spec", "object.spec", req, 3, term.p ? term.p : "",
                                  have.p ? have.p : "");
        } else {
            gpa_sb item = {0};
            gpa_sb_printf(&item, "{'weight': dyn(100), 'podAffinityTerm': dyn(%s)}",
                          term.p ? term.p : "");
            gpa_sb_puts(&have, "x.weight == 100 && has(x.podAffinityTerm) && ");
            same_affinity_term(&have, "x.podAffinityTerm", t);
            gpa_map_append_unique(b, "/spec", "object.spec", pref, 3, item.p ? item.p : "",
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
bool gpa_map_m_isolation(gpa_sb *b, const gpa_policy *p)
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
    gpa_map_path_lit(b, "/metadata/labels/", GPA_LABEL_POOL);
    gpa_sb_printf(b,
                  ", value: variables.pool}]) + ('%s' in object.metadata.?labels.orValue({}) "
                  "? [] : [JSONPatch{op: 'add', path: ",
                  GPA_LABEL_TENANT);
    gpa_map_path_lit(b, "/metadata/labels/", GPA_LABEL_TENANT);
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
    gpa_map_append_unique(b, "/spec", "object.spec", segs, 3, term.p ? term.p : "",
                          have.p ? have.p : "");
    if (have.oom || term.oom) b->oom = true;
    gpa_sb_free(&have);
    gpa_sb_free(&term);
    gpa_sb_puts(b, ") : []");
    return true;
}

/* 4 and 6. annotations: the NVLink island record, the rule and the policy revision */
bool gpa_map_m_annotations(gpa_sb *b, const gpa_policy *p)
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
