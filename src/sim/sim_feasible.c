/*
 * sim_feasible.c - the checks kube-scheduler and the device plugins make that do not depend
 * on other pods: nodeSelector, required node affinity, NoSchedule/NoExecute taints, a
 * resource no node offers, the GPU resource a node's group offers, NVLink island and node
 * size. Templates with the same inputs to these checks share one class (gpa_sim_sig) whose
 * passing nodes are computed once. Also the label-selector match the affinity view uses.
 *
 * Never reads or changes the packed state (GPUs, placed pods): what it answers holds for the
 * whole run.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim_internal.h"

static bool expr_holds(const cJSON *e, const char *(*get)(const void *, const char *),
                       const void *ctx)
{
    const cJSON *k = cJSON_GetObjectItemCaseSensitive(e, "key");
    const cJSON *op = cJSON_GetObjectItemCaseSensitive(e, "operator");
    const cJSON *vals = cJSON_GetObjectItemCaseSensitive(e, "values");
    if (!cJSON_IsString(k) || !cJSON_IsString(op)) return false;
    const char *v = get(ctx, k->valuestring);
    const char *o = op->valuestring;
    if (strcmp(o, "In") == 0) return v && gpa_sim_str_in(vals, v);
    if (strcmp(o, "NotIn") == 0) return !v || !gpa_sim_str_in(vals, v);
    if (strcmp(o, "Exists") == 0) return v != NULL;
    if (strcmp(o, "DoesNotExist") == 0) return v == NULL;
    if (strcmp(o, "Gt") == 0 || strcmp(o, "Lt") == 0) {
        const cJSON *first = cJSON_GetArrayItem(vals, 0);
        if (!v || !cJSON_IsString(first)) return false;
        char *end1, *end2;
        long long a = strtoll(v, &end1, 10), b = strtoll(first->valuestring, &end2, 10);
        if (*end1 || *end2 || end1 == v) return false;
        return o[0] == 'G' ? a > b : a < b;
    }
    return false;
}

typedef struct node_ctx {
    const gpa_sim *s;
    size_t n;
} node_ctx;

static const char *node_get(const void *ctx, const char *key)
{
    const node_ctx *c = ctx;
    return gpa_sim_node_label(c->s, c->n, key);
}

static const char *json_get(const void *ctx, const char *key)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive((const cJSON *)ctx, key);
    return cJSON_IsString(v) ? v->valuestring : NULL;
}

bool gpa_sim_node_expr_holds(const gpa_sim *s, size_t n, const cJSON *expr)
{
    node_ctx ctx = {s, n};
    return expr_holds(expr, node_get, &ctx);
}

bool gpa_sim_selector_matches(const cJSON *sel, const cJSON *labels)
{
    if (!sel || cJSON_IsNull(sel)) return false; /* a nil selector matches nothing */
    const cJSON *ml = cJSON_GetObjectItemCaseSensitive(sel, "matchLabels"), *e;
    cJSON_ArrayForEach(e, ml) {
        const char *v = json_get(labels, e->string);
        if (!v || !cJSON_IsString(e) || strcmp(v, e->valuestring) != 0) return false;
    }
    cJSON_ArrayForEach(e, cJSON_GetObjectItemCaseSensitive(sel, "matchExpressions"))
        if (!expr_holds(e, json_get, labels)) return false;
    return true;
}

static bool node_affinity_ok(const gpa_sim *s, size_t n, const cJSON *spec)
{
    node_ctx ctx = {s, n};
    const cJSON *e;
    cJSON_ArrayForEach(e, cJSON_GetObjectItemCaseSensitive(spec, "nodeSelector")) {
        const char *v = gpa_sim_node_label(s, n, e->string);
        if (!v || !cJSON_IsString(e) || strcmp(v, e->valuestring) != 0) return false;
    }
    const cJSON *req = cJSON_GetObjectItemCaseSensitive(
        cJSON_GetObjectItemCaseSensitive(
            cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(spec, "affinity"),
                                             "nodeAffinity"),
            "requiredDuringSchedulingIgnoredDuringExecution"),
        "nodeSelectorTerms");
    if (!req) return true;
    const cJSON *term;
    cJSON_ArrayForEach(term, req) {
        /* Terms are ORed; a term's expressions (and fields) ANDed; an empty term matches
         * nothing, as in the scheduler. */
        const cJSON *exprs = cJSON_GetObjectItemCaseSensitive(term, "matchExpressions");
        const cJSON *fields = cJSON_GetObjectItemCaseSensitive(term, "matchFields");
        if (cJSON_GetArraySize(exprs) == 0 && cJSON_GetArraySize(fields) == 0) continue;
        bool ok = true;
        cJSON_ArrayForEach(e, exprs)
            if (!expr_holds(e, node_get, &ctx)) ok = false;
        cJSON_ArrayForEach(e, fields) {
            const cJSON *k = cJSON_GetObjectItemCaseSensitive(e, "key");
            const cJSON *op = cJSON_GetObjectItemCaseSensitive(e, "operator");
            bool in = gpa_sim_str_in(cJSON_GetObjectItemCaseSensitive(e, "values"),
                                     s->inv->nodes[n].name);
            if (!cJSON_IsString(k) || strcmp(k->valuestring, "metadata.name") != 0 ||
                !cJSON_IsString(op) || (strcmp(op->valuestring, "In") == 0 ? !in : in))
                ok = false;
        }
        if (ok) return true;
    }
    return false;
}

static bool tolerated(const gpa_sim_taint *t, const cJSON *tols)
{
    const cJSON *x;
    cJSON_ArrayForEach(x, tols) {
        const char *key = json_get(x, "key"), *op = json_get(x, "operator");
        const char *val = json_get(x, "value"), *eff = json_get(x, "effect");
        if (eff && *eff && strcmp(eff, t->effect) != 0) continue;
        bool exists = op && strcmp(op, "Exists") == 0;
        if (!key || !*key) {
            if (exists) return true;
            continue;
        }
        if (strcmp(key, t->key) != 0) continue;
        if (exists || strcmp(val ? val : "", t->value) == 0) return true;
    }
    return false;
}

/* What node n offers for the template's GPU resource: the demand kind, or GK_NONE. */
gpa_sim_gkind gpa_sim_offer(const gpa_sim *s, size_t n, const gpa_sim_tmpl *t,
                            const gpa_mig_profile **prof)
{
    const gpa_sim_group *g = gpa_sim_grp(s, n);
    *prof = NULL;
    if (!t->gres) return GK_NONE;
    if (g->mode == GPA_SIM_TS && strcmp(t->gres, g->ts_resource) == 0) return GK_TS;
    if (g->mode == GPA_SIM_WHOLE && strcmp(t->gres, "nvidia.com/gpu") == 0) return GK_WHOLE;
    if ((g->mode == GPA_SIM_MIG_AUTO || g->mode == GPA_SIM_MIG_FIXED) && g->model)
        for (size_t i = 0; i < g->model->n_profiles; i++)
            if (strcmp(g->model->profiles[i].resource, t->gres) == 0) {
                if (g->mode == GPA_SIM_MIG_FIXED) {
                    bool has = false;
                    for (size_t k = 0; k < g->n_fixed; k++)
                        has |= g->fixed[k] == &g->model->profiles[i];
                    if (!has) return GK_NONE;
                }
                *prof = &g->model->profiles[i];
                return GK_MIG;
            }
    return GK_NONE;
}

gpa_sim_cause gpa_sim_static_cause(const gpa_sim *s, size_t n, const gpa_sim_tmpl *t)
{
    const gpa_sim_group *g = gpa_sim_grp(s, n);
    const cJSON *spec = cJSON_GetObjectItemCaseSensitive(t->obj, "spec");
    if (!node_affinity_ok(s, n, spec)) return GPA_SIM_C_AFFINITY;
    const cJSON *tols = cJSON_GetObjectItemCaseSensitive(spec, "tolerations");
    for (size_t i = 0; i < g->n_taints; i++)
        if (strcmp(g->taints[i].effect, "PreferNoSchedule") != 0 && !tolerated(&g->taints[i], tols))
            return GPA_SIM_C_TAINT;
    if (t->n_xres) return GPA_SIM_C_XRES;
    if (t->gres) {
        const gpa_mig_profile *p;
        gpa_sim_gkind k = gpa_sim_offer(s, n, t, &p);
        if (k == GK_NONE) return GPA_SIM_C_GPU_KIND;
        long long cap = k == GK_WHOLE ? g->gpus
                        : k == GK_TS  ? (long long)g->gpus * g->replicas
                                      : (long long)g->gpus * p->max_instances;
        if (k == GK_WHOLE && g->island && g->island < g->gpus && t->gcount > g->island)
            return GPA_SIM_C_ISLAND_SIZE;
        if (t->gcount > cap) return GPA_SIM_C_GPU_SIZE;
    }
    if (g->cpu_milli >= 0 && t->cpu > g->cpu_milli) return GPA_SIM_C_CPU;
    if (g->mem >= 0 && t->mem > g->mem) return GPA_SIM_C_MEM;
    return GPA_SIM_C_NONE;
}

static const char *static_text(gpa_sim_cause c)
{
    switch (c) {
    case GPA_SIM_C_AFFINITY:
        return "nodeSelector/node affinity";
    case GPA_SIM_C_TAINT:
        return "an untolerated taint";
    case GPA_SIM_C_XRES:
        return "a resource no node offers";
    case GPA_SIM_C_GPU_KIND:
        return "no such GPU resource";
    case GPA_SIM_C_ISLAND_SIZE:
        return "NVLink island smaller than the pod";
    case GPA_SIM_C_GPU_SIZE:
        return "more GPUs than a node has";
    case GPA_SIM_C_CPU:
        return "more cpu than a node has";
    case GPA_SIM_C_MEM:
        return "more memory than a node has";
    default:
        return "no nodes in the inventory";
    }
}

/* Groups templates by everything the static checks read, so each class is checked against
 * the nodes once. */
int gpa_sim_classify(gpa_sim *s, gpa_sim_tmpl *t, gpa_error *err)
{
    const cJSON *spec = cJSON_GetObjectItemCaseSensitive(t->obj, "spec");
    cJSON *k = cJSON_CreateArray();
    if (!k) return gpa_fail(err, GPA_ENOMEM, "out of memory");
    const char *keys[] = {"nodeSelector", "affinity", "tolerations"};
    for (int i = 0; i < 3; i++) {
        const cJSON *v = cJSON_GetObjectItemCaseSensitive(spec, keys[i]);
        if (i == 1) v = cJSON_GetObjectItemCaseSensitive(v, "nodeAffinity");
        cJSON_AddItemToArray(k, v ? cJSON_Duplicate(v, true) : cJSON_CreateNull());
    }
    cJSON_AddItemToArray(k, cJSON_CreateString(t->gres ? t->gres : ""));
    cJSON_AddItemToArray(k, cJSON_CreateNumber((double)t->gcount));
    cJSON_AddItemToArray(k, cJSON_CreateNumber((double)t->cpu));
    cJSON_AddItemToArray(k, cJSON_CreateNumber((double)t->mem));
    cJSON_AddItemToArray(k, cJSON_CreateNumber((double)t->n_xres));
    char *key = cJSON_PrintUnformatted(k);
    cJSON_Delete(k);
    if (!key) return gpa_fail(err, GPA_ENOMEM, "out of memory");
    /* A linear probe is enough: distinct classes are few next to pods. */
    for (size_t i = 0; i < s->n_sigs; i++)
        if (strcmp(s->sigs[i].key, key) == 0) {
            free(key);
            t->sig = i;
            return GPA_OK;
        }
    gpa_sim_sig *ns = realloc(s->sigs, (s->n_sigs + 1) * sizeof *ns);
    if (!ns) {
        free(key);
        return gpa_fail(err, GPA_ENOMEM, "out of memory");
    }
    s->sigs = ns;
    gpa_sim_sig *g = &ns[s->n_sigs];
    memset(g, 0, sizeof *g);
    g->key = key;
    g->nodes = malloc((s->inv->n_nodes ? s->inv->n_nodes : 1) * sizeof *g->nodes);
    if (!g->nodes) return gpa_fail(err, GPA_ENOMEM, "out of memory");
    /* the furthest check any node reached names the class's failure: the first node's
     * reason said "node affinity" for a pod short of cpu on the only nodes of its model */
    gpa_sim_cause furthest = GPA_SIM_C_NONE;
    for (size_t n = 0; n < s->inv->n_nodes; n++) {
        gpa_sim_cause why = gpa_sim_static_cause(s, n, t);
        if (why == GPA_SIM_C_NONE)
            g->nodes[g->n_nodes++] = n;
        else if (why > furthest)
            furthest = why;
    }
    if (!g->n_nodes) g->why = strdup(static_text(furthest));
    t->sig = s->n_sigs++;
    return GPA_OK;
}
