/*
 * sim.c - queueing admitted pods and packing them onto the inventory.
 *
 * The packer is best-fit decreasing: pods sorted by GPU size (whole cards, then MIG profiles
 * by memory slices, then replicas, then pods without GPUs), each put where it opens the fewest
 * new GPUs, then on a node already in use, then where it leaves the least room (the tightest
 * fit), then on the first such node. Feasibility is what kube-scheduler and the device plugins
 * check: nodeSelector, required node affinity, NoSchedule/NoExecute taints, cpu/memory/pods,
 * the GPU resource, required pod affinity and anti-affinity (both directions, with the
 * scheduler's rule that the first pod of a group may satisfy its own affinity), whole-GPU pods
 * inside one NVLink island, and MIG geometry through gpa_mig_layout_valid. The exact solver
 * tries every option on tiny inputs so the heuristic's quality can be measured.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpu_admission/quantity.h"
#include "sim_internal.h"

#define GPU_MEM_ANN  "gpu-admission.io/gpu-memory"
#define TENANT_LABEL "gpu-admission.io/tenant"

static void *grow(void *p, size_t *cap, size_t need, size_t elem)
{
    if (need <= *cap) return p;
    size_t nc = *cap ? *cap * 2 : 8;
    while (nc < need)
        nc *= 2;
    void *np = realloc(p, nc * elem);
    if (np) *cap = nc;
    return np;
}

int gpa_sim_new(gpa_sim **out, const gpa_sim_inventory *inv, gpa_error *err)
{
    *out = NULL;
    gpa_sim *s = calloc(1, sizeof *s);
    if (!s) return gpa_fail(err, GPA_ENOMEM, "out of memory");
    s->inv = inv;
    s->nodes = calloc(inv->n_nodes ? inv->n_nodes : 1, sizeof *s->nodes);
    if (!s->nodes) {
        free(s);
        return gpa_fail(err, GPA_ENOMEM, "out of memory");
    }
    for (size_t i = 0; i < inv->n_nodes; i++) {
        const gpa_sim_group *g = &inv->groups[inv->nodes[i].group];
        s->nodes[i].gpus = calloc(g->gpus ? (size_t)g->gpus : 1, sizeof(gpa_sim_gpu));
        if (!s->nodes[i].gpus) {
            gpa_sim_free(s);
            return gpa_fail(err, GPA_ENOMEM, "out of memory");
        }
        for (int k = 0; k < g->gpus; k++) {
            gpa_sim_gpu *u = &s->nodes[i].gpus[k];
            if (g->mode == GPA_SIM_MIG_FIXED) {
                int starts[GPA_MIG_MAX_INSTANCES];
                gpa_mig_layout_valid(starts, g->model, g->fixed, g->n_fixed);
                u->slots = calloc(g->n_fixed, sizeof *u->slots);
                if (!u->slots) {
                    gpa_sim_free(s);
                    return gpa_fail(err, GPA_ENOMEM, "out of memory");
                }
                u->cap_slots = u->n_slots = g->n_fixed;
                for (size_t j = 0; j < g->n_fixed; j++)
                    u->slots[j] = (gpa_sim_slot){g->fixed[j], starts[j], -1};
            }
            if (g->mode == GPA_SIM_MIG_AUTO) u->can_add = (1u << g->model->n_profiles) - 1u;
        }
    }
    *out = s;
    return GPA_OK;
}

void gpa_sim_free(gpa_sim *s)
{
    if (!s) return;
    for (size_t i = 0; i < s->n_tmpls; i++) {
        gpa_sim_tmpl *t = &s->tmpls[i];
        cJSON_Delete(t->obj);
        free(t->name);
        free(t->tenant);
        free(t->pool);
        for (size_t k = 0; k < t->n_xres; k++)
            free(t->xres[k]);
        free(t->xres);
        free(t->gres);
        free(t->aff);
        free(t->anti);
        free(t->placed_nodes);
        free(t->key);
    }
    free(s->tmpls);
    free(s->tbl);
    free(s->placed_tmpls);
    for (size_t i = 0; i < s->n_pods; i++) {
        free(s->pods[i].reason_detail);
        free(s->pods[i].name);
    }
    free(s->pods);
    for (size_t i = 0; i < s->n_denied; i++) {
        free(s->denied[i].pod);
        free(s->denied[i].message);
    }
    free(s->denied);
    if (s->nodes)
        for (size_t i = 0; i < s->inv->n_nodes; i++) {
            const gpa_sim_group *g = &s->inv->groups[s->inv->nodes[i].group];
            if (s->nodes[i].gpus)
                for (int k = 0; k < g->gpus; k++)
                    free(s->nodes[i].gpus[k].slots);
            free(s->nodes[i].gpus);
        }
    free(s->nodes);
    for (size_t i = 0; i < s->n_sigs; i++) {
        free(s->sigs[i].key);
        free(s->sigs[i].nodes);
        free(s->sigs[i].why);
    }
    free(s->sigs);
    for (size_t i = 0; i < s->n_topos; i++) {
        free(s->topos[i].key);
        free(s->topos[i].vid);
    }
    free(s->topos);
    free(s);
}

/* ---------------------------------------------------------------- pod intake */

static int64_t qty_milli(const cJSON *v)
{
    if (cJSON_IsNumber(v)) return (int64_t)(v->valuedouble * 1000.0);
    if (!cJSON_IsString(v)) return 0;
    gpa_quantity q;
    if (gpa_quantity_parse(&q, v->valuestring, strlen(v->valuestring), NULL) != GPA_OK) return 0;
    return q.milli < 0 ? 0 : q.milli;
}

/* Adds a container's requests (limits when a resource has no request) into acc, a JSON
 * object name -> milli-units. */
static int add_container(cJSON *acc, const cJSON *c, bool max)
{
    const cJSON *res = cJSON_GetObjectItemCaseSensitive(c, "resources");
    const cJSON *req = cJSON_GetObjectItemCaseSensitive(res, "requests");
    const cJSON *lim = cJSON_GetObjectItemCaseSensitive(res, "limits");
    cJSON *seen = cJSON_CreateObject();
    if (!seen) return GPA_ENOMEM;
    const cJSON *lists[2] = {req, lim};
    for (int l = 0; l < 2; l++) {
        const cJSON *e;
        cJSON_ArrayForEach(e, lists[l])
        {
            if (!e->string || cJSON_GetObjectItemCaseSensitive(seen, e->string)) continue;
            cJSON_AddItemToObject(seen, e->string, cJSON_CreateTrue());
            double v = (double)qty_milli(e);
            cJSON *cur = cJSON_GetObjectItemCaseSensitive(acc, e->string);
            if (!cur)
                cJSON_AddNumberToObject(acc, e->string, v);
            else if (!max)
                cJSON_SetNumberValue(cur, cur->valuedouble + v);
            else if (v > cur->valuedouble)
                cJSON_SetNumberValue(cur, v);
        }
    }
    cJSON_Delete(seen);
    return GPA_OK;
}

static int read_terms(gpa_sim_term **out, size_t *n, const cJSON *terms)
{
    *out = NULL;
    *n = 0;
    int cnt = cJSON_GetArraySize(terms);
    if (!cJSON_IsArray(terms) || cnt <= 0) return GPA_OK;
    *out = calloc((size_t)cnt, sizeof **out);
    if (!*out) return GPA_ENOMEM;
    const cJSON *t;
    cJSON_ArrayForEach(t, terms)
    {
        const cJSON *tk = cJSON_GetObjectItemCaseSensitive(t, "topologyKey");
        if (!cJSON_IsString(tk)) continue;
        (*out)[*n] = (gpa_sim_term){cJSON_GetObjectItemCaseSensitive(t, "labelSelector"),
                                    cJSON_GetObjectItemCaseSensitive(t, "namespaces"),
                                    cJSON_GetObjectItemCaseSensitive(t, "namespaceSelector"),
                                    tk->valuestring, -1};
        (*n)++;
    }
    return GPA_OK;
}

static long long gpu_size_key(const gpa_sim_tmpl *t)
{
    if (!t->gres) return 0;
    if (strncmp(t->gres, "nvidia.com/mig-", 15) == 0) {
        for (size_t m = 0; gpa_mig_model_name_at(m); m++) {
            const gpa_mig_model *md = gpa_mig_model_find(gpa_mig_model_name_at(m));
            for (size_t i = 0; i < md->n_profiles; i++)
                if (strcmp(md->profiles[i].resource, t->gres) == 0)
                    return t->gcount * 1000000LL * md->profiles[i].mem_slots / md->mem_slots;
        }
        return 1;
    }
    if (strcmp(t->gres, "nvidia.com/gpu") == 0) return t->gcount * 1000000LL;
    return t->gcount; /* a time-slice replica: the smallest share */
}

static bool is_gpu_resource(const char *k)
{
    return strncmp(k, "nvidia.com/", 11) == 0;
}

static uint64_t fnv(const char *k)
{
    uint64_t h = 1469598103934665603ULL;
    for (; *k; k++)
        h = (h ^ (unsigned char)*k) * 1099511628211ULL;
    return h;
}

/* The template an identical pod (name aside) already made, else SIZE_MAX. */
static size_t tmpl_find(const gpa_sim *s, const char *key, uint64_t h)
{
    if (!s->tbl_cap) return SIZE_MAX;
    for (size_t i = (size_t)h & (s->tbl_cap - 1);; i = (i + 1) & (s->tbl_cap - 1)) {
        size_t v = s->tbl[i];
        if (!v) return SIZE_MAX;
        if (s->tmpls[v - 1].hash == h && strcmp(s->tmpls[v - 1].key, key) == 0) return v - 1;
    }
}

static int tbl_put(gpa_sim *s, size_t ti)
{
    if ((s->n_tmpls + 1) * 2 > s->tbl_cap) {
        size_t nc = s->tbl_cap ? s->tbl_cap * 2 : 64;
        size_t *nt = calloc(nc, sizeof *nt);
        if (!nt) return GPA_ENOMEM;
        for (size_t i = 0; i < s->tbl_cap; i++)
            if (s->tbl[i]) {
                size_t k = (size_t)s->tmpls[s->tbl[i] - 1].hash & (nc - 1);
                while (nt[k])
                    k = (k + 1) & (nc - 1);
                nt[k] = s->tbl[i];
            }
        free(s->tbl);
        s->tbl = nt;
        s->tbl_cap = nc;
    }
    size_t k = (size_t)s->tmpls[ti].hash & (s->tbl_cap - 1);
    while (s->tbl[k])
        k = (k + 1) & (s->tbl_cap - 1);
    s->tbl[k] = ti + 1;
    return GPA_OK;
}

static int queue_pods(gpa_sim *s, size_t ti, const char *name, long long copies, bool own_name,
                      gpa_error *err)
{
    gpa_sim_pod *np = grow(s->pods, &s->cap_pods, s->n_pods + (size_t)copies, sizeof *np);
    if (!np) return gpa_fail(err, GPA_ENOMEM, "out of memory");
    s->pods = np;
    for (long long k = 0; k < copies; k++) {
        gpa_sim_pod *p = &s->pods[s->n_pods];
        *p = (gpa_sim_pod){ti, NULL, copies == 1 ? -1 : k, -1, NULL, NULL, -1, 0};
        if (own_name) {
            char buf[700];
            if (copies == 1)
                snprintf(buf, sizeof buf, "%s", name);
            else
                snprintf(buf, sizeof buf, "%.600s-%lld", name, k);
            if (!(p->name = strdup(buf))) return gpa_fail(err, GPA_ENOMEM, "out of memory");
        }
        s->n_pods++;
    }
    return GPA_OK;
}

int gpa_sim_add_pod(gpa_sim *s, const cJSON *pod, const char *name, long long copies,
                    gpa_error *err)
{
    return gpa_sim_add_pod_pool(s, pod, name, copies, NULL, err);
}

int gpa_sim_add_pod_pool(gpa_sim *s, const cJSON *pod, const char *name, long long copies,
                         const char *pool, gpa_error *err)
{
    if (copies < 0) return gpa_fail(err, GPA_EINVAL, "%s: negative replicas", name);
    if (copies == 0) return GPA_OK;
    if ((long long)s->n_pods + copies > GPA_SIM_MAX_PODS)
        return gpa_fail(err, GPA_ERANGE,
                        "%s: %lld pods would exceed the simulator's limit of %d pods", name, copies,
                        GPA_SIM_MAX_PODS);
    cJSON *anon = cJSON_Duplicate(pod, true);
    cJSON *ameta = cJSON_GetObjectItemCaseSensitive(anon, "metadata");
    cJSON_DeleteItemFromObjectCaseSensitive(ameta, "name");
    cJSON_DeleteItemFromObjectCaseSensitive(ameta, "generateName");
    cJSON_DeleteItemFromObjectCaseSensitive(ameta, "uid");
    char *key = anon ? cJSON_PrintUnformatted(anon) : NULL;
    cJSON_Delete(anon);
    if (!key) return gpa_fail(err, GPA_ENOMEM, "out of memory");
    uint64_t h = fnv(key);
    size_t found = tmpl_find(s, key, h);
    if (found != SIZE_MAX) {
        free(key);
        return queue_pods(s, found, name, copies, true, err);
    }
    gpa_sim_tmpl *nt = grow(s->tmpls, &s->cap_tmpls, s->n_tmpls + 1, sizeof *nt);
    if (!nt) {
        free(key);
        return gpa_fail(err, GPA_ENOMEM, "out of memory");
    }
    s->tmpls = nt;
    gpa_sim_tmpl *t = memset(&nt[s->n_tmpls], 0, sizeof *t);
    t->obj = cJSON_Duplicate(pod, true);
    t->name = strdup(name);
    t->key = key;
    t->hash = h;
    if (!t->obj || !t->name) {
        cJSON_Delete(t->obj);
        free(t->name);
        free(t->key);
        return gpa_fail(err, GPA_ENOMEM, "out of memory");
    }
    s->n_tmpls++;
    const cJSON *meta = cJSON_GetObjectItemCaseSensitive(t->obj, "metadata");
    const cJSON *ns = cJSON_GetObjectItemCaseSensitive(meta, "namespace");
    t->ns = cJSON_IsString(ns) ? ns->valuestring : "default";
    t->labels = cJSON_GetObjectItemCaseSensitive(meta, "labels");
    const cJSON *ten = cJSON_GetObjectItemCaseSensitive(t->labels, TENANT_LABEL);
    if (cJSON_IsString(ten)) t->tenant = strdup(ten->valuestring);
    const cJSON *ann = cJSON_GetObjectItemCaseSensitive(
        cJSON_GetObjectItemCaseSensitive(meta, "annotations"), GPU_MEM_ANN);
    t->gpu_mem_req = -1;
    if (cJSON_IsString(ann)) {
        gpa_quantity q;
        if (gpa_quantity_parse(&q, ann->valuestring, strlen(ann->valuestring), NULL) == GPA_OK &&
            q.milli >= 0)
            t->gpu_mem_req = gpa_quantity_value(&q);
    }
    const cJSON *spec = cJSON_GetObjectItemCaseSensitive(t->obj, "spec");
    cJSON *sum = cJSON_CreateObject(), *init = cJSON_CreateObject();
    if (!sum || !init) {
        cJSON_Delete(sum);
        cJSON_Delete(init);
        return gpa_fail(err, GPA_ENOMEM, "out of memory");
    }
    const cJSON *c;
    cJSON_ArrayForEach(c, cJSON_GetObjectItemCaseSensitive(spec, "containers"))
        add_container(sum, c, false);
    cJSON_ArrayForEach(c, cJSON_GetObjectItemCaseSensitive(spec, "initContainers"))
        add_container(init, c, true);
    /* The scheduler's rule: max(sum over containers, max over init containers). */
    const cJSON *e;
    cJSON_ArrayForEach(e, init)
    {
        cJSON *cur = cJSON_GetObjectItemCaseSensitive(sum, e->string);
        if (!cur)
            cJSON_AddNumberToObject(sum, e->string, e->valuedouble);
        else if (e->valuedouble > cur->valuedouble)
            cJSON_SetNumberValue(cur, e->valuedouble);
    }
    int rc = GPA_OK;
    cJSON_ArrayForEach(e, sum)
    {
        int64_t milli = (int64_t)e->valuedouble;
        if (strcmp(e->string, "cpu") == 0) {
            t->cpu = milli;
        } else if (strcmp(e->string, "memory") == 0) {
            t->mem = milli / 1000;
        } else if (strcmp(e->string, "ephemeral-storage") == 0 ||
                   strncmp(e->string, "hugepages-", 10) == 0) {
            continue;
        } else if (milli <= 0) {
            continue;
        } else if (is_gpu_resource(e->string) && !t->gres) {
            t->gres = strdup(e->string);
            t->gcount = (milli + 999) / 1000;
        } else {
            char **nx = realloc(t->xres, (t->n_xres + 1) * sizeof *nx);
            if (!nx) {
                rc = GPA_ENOMEM;
                break;
            }
            t->xres = nx;
            t->xres[t->n_xres++] = strdup(e->string);
        }
    }
    cJSON_Delete(sum);
    cJSON_Delete(init);
    const cJSON *aff = cJSON_GetObjectItemCaseSensitive(spec, "affinity");
    if (rc == GPA_OK)
        rc = read_terms(
            &t->aff, &t->n_aff,
            cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(aff, "podAffinity"),
                                             "requiredDuringSchedulingIgnoredDuringExecution"));
    if (rc == GPA_OK)
        rc = read_terms(&t->anti, &t->n_anti,
                        cJSON_GetObjectItemCaseSensitive(
                            cJSON_GetObjectItemCaseSensitive(aff, "podAntiAffinity"),
                            "requiredDuringSchedulingIgnoredDuringExecution"));
    if (rc != GPA_OK) return gpa_fail(err, GPA_ENOMEM, "out of memory");
    t->size_key = gpu_size_key(t);
    if (pool && !(t->pool = strdup(pool))) return gpa_fail(err, GPA_ENOMEM, "out of memory");
    if (tbl_put(s, s->n_tmpls - 1) != GPA_OK) return gpa_fail(err, GPA_ENOMEM, "out of memory");
    return queue_pods(s, s->n_tmpls - 1, name, copies, false, err);
}

int gpa_sim_add_denied(gpa_sim *s, const char *pod, const char *message, gpa_error *err)
{
    gpa_sim_denied *nd = grow(s->denied, &s->cap_denied, s->n_denied + 1, sizeof *nd);
    if (!nd) return gpa_fail(err, GPA_ENOMEM, "out of memory");
    s->denied = nd;
    nd[s->n_denied].pod = strdup(pod);
    nd[s->n_denied].message = strdup(message ? message : "denied");
    s->n_denied++;
    return GPA_OK;
}

/* ---------------------------------------------------------------- static checks */

static const char *node_label(const gpa_sim *s, size_t n, const char *key)
{
    const gpa_sim_node_def *d = &s->inv->nodes[n];
    return gpa_sim_label(d->labels, d->n_labels, key);
}

static bool str_in(const cJSON *values, const char *v)
{
    const cJSON *x;
    cJSON_ArrayForEach(x,
                       values) if (cJSON_IsString(x) && strcmp(x->valuestring, v) == 0) return true;
    return false;
}

static bool expr_holds(const cJSON *e, const char *(*get)(const void *, const char *),
                       const void *ctx)
{
    const cJSON *k = cJSON_GetObjectItemCaseSensitive(e, "key");
    const cJSON *op = cJSON_GetObjectItemCaseSensitive(e, "operator");
    const cJSON *vals = cJSON_GetObjectItemCaseSensitive(e, "values");
    if (!cJSON_IsString(k) || !cJSON_IsString(op)) return false;
    const char *v = get(ctx, k->valuestring);
    const char *o = op->valuestring;
    if (strcmp(o, "In") == 0) return v && str_in(vals, v);
    if (strcmp(o, "NotIn") == 0) return !v || !str_in(vals, v);
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
    return node_label(c->s, c->n, key);
}

static const char *json_get(const void *ctx, const char *key)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive((const cJSON *)ctx, key);
    return cJSON_IsString(v) ? v->valuestring : NULL;
}

static bool selector_matches(const cJSON *sel, const cJSON *labels)
{
    if (!sel || cJSON_IsNull(sel)) return false; /* a nil selector matches nothing */
    const cJSON *ml = cJSON_GetObjectItemCaseSensitive(sel, "matchLabels"), *e;
    cJSON_ArrayForEach(e, ml)
    {
        const char *v = json_get(labels, e->string);
        if (!v || !cJSON_IsString(e) || strcmp(v, e->valuestring) != 0) return false;
    }
    cJSON_ArrayForEach(
        e, cJSON_GetObjectItemCaseSensitive(
               sel, "matchExpressions")) if (!expr_holds(e, json_get, labels)) return false;
    return true;
}

static bool node_affinity_ok(const gpa_sim *s, size_t n, const cJSON *spec)
{
    node_ctx ctx = {s, n};
    const cJSON *e;
    cJSON_ArrayForEach(e, cJSON_GetObjectItemCaseSensitive(spec, "nodeSelector"))
    {
        const char *v = node_label(s, n, e->string);
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
    cJSON_ArrayForEach(term, req)
    {
        /* Terms are ORed; a term's expressions (and fields) ANDed; an empty term matches
         * nothing, as in the scheduler. */
        const cJSON *exprs = cJSON_GetObjectItemCaseSensitive(term, "matchExpressions");
        const cJSON *fields = cJSON_GetObjectItemCaseSensitive(term, "matchFields");
        if (cJSON_GetArraySize(exprs) == 0 && cJSON_GetArraySize(fields) == 0) continue;
        bool ok = true;
        cJSON_ArrayForEach(e, exprs) if (!expr_holds(e, node_get, &ctx)) ok = false;
        cJSON_ArrayForEach(e, fields)
        {
            const cJSON *k = cJSON_GetObjectItemCaseSensitive(e, "key");
            const cJSON *op = cJSON_GetObjectItemCaseSensitive(e, "operator");
            bool in = str_in(cJSON_GetObjectItemCaseSensitive(e, "values"), s->inv->nodes[n].name);
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
    cJSON_ArrayForEach(x, tols)
    {
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
static gpa_sim_gkind offer(const gpa_sim *s, size_t n, const gpa_sim_tmpl *t,
                           const gpa_mig_profile **prof)
{
    const gpa_sim_group *g = &s->inv->groups[s->inv->nodes[n].group];
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

/* NULL when node n passes every check that does not depend on other pods, else why not. */
static const char *static_fail(const gpa_sim *s, size_t n, const gpa_sim_tmpl *t)
{
    const gpa_sim_group *g = &s->inv->groups[s->inv->nodes[n].group];
    const cJSON *spec = cJSON_GetObjectItemCaseSensitive(t->obj, "spec");
    if (!node_affinity_ok(s, n, spec)) return "nodeSelector/node affinity";
    const cJSON *tols = cJSON_GetObjectItemCaseSensitive(spec, "tolerations");
    for (size_t i = 0; i < g->n_taints; i++)
        if (strcmp(g->taints[i].effect, "PreferNoSchedule") != 0 && !tolerated(&g->taints[i], tols))
            return "an untolerated taint";
    if (t->n_xres) return "a resource no node offers";
    if (t->gres) {
        const gpa_mig_profile *p;
        gpa_sim_gkind k = offer(s, n, t, &p);
        if (k == GK_NONE) return "no such GPU resource";
        long long cap = k == GK_WHOLE ? g->gpus
                        : k == GK_TS  ? (long long)g->gpus * g->replicas
                                      : (long long)g->gpus * p->max_instances;
        if (k == GK_WHOLE && g->island && g->island < g->gpus && t->gcount > g->island)
            return "NVLink island smaller than the pod";
        if (t->gcount > cap) return "more GPUs than a node has";
    }
    if ((g->cpu_milli >= 0 && t->cpu > g->cpu_milli) || (g->mem >= 0 && t->mem > g->mem))
        return "more cpu/memory than a node has";
    return NULL;
}

/* Groups templates by everything the static checks read, so each class is checked against
 * the nodes once. */
static int classify(gpa_sim *s, gpa_sim_tmpl *t, gpa_error *err)
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
    const char *first = NULL;
    for (size_t n = 0; n < s->inv->n_nodes; n++) {
        const char *why = static_fail(s, n, t);
        if (!why)
            g->nodes[g->n_nodes++] = n;
        else if (!first)
            first = why;
    }
    if (!g->n_nodes) g->why = strdup(first ? first : "no nodes in the inventory");
    t->sig = s->n_sigs++;
    return GPA_OK;
}

static int topo_id(gpa_sim *s, const char *key, gpa_error *err)
{
    for (size_t i = 0; i < s->n_topos; i++)
        if (strcmp(s->topos[i].key, key) == 0) return (int)i;
    gpa_sim_topo *nt = realloc(s->topos, (s->n_topos + 1) * sizeof *nt);
    if (!nt) return gpa_fail(err, GPA_ENOMEM, "out of memory");
    s->topos = nt;
    gpa_sim_topo *t = &nt[s->n_topos];
    t->key = strdup(key);
    t->vid = malloc((s->inv->n_nodes ? s->inv->n_nodes : 1) * sizeof *t->vid);
    t->n_values = 0;
    if (!t->key || !t->vid) return gpa_fail(err, GPA_ENOMEM, "out of memory");
    /* Value ids by first appearance; quadratic only in distinct values of one key. */
    const char **vals = malloc((s->inv->n_nodes ? s->inv->n_nodes : 1) * sizeof *vals);
    if (!vals) return gpa_fail(err, GPA_ENOMEM, "out of memory");
    bool hostname = strcmp(key, "kubernetes.io/hostname") == 0;
    for (size_t n = 0; n < s->inv->n_nodes; n++) {
        const char *v = node_label(s, n, key);
        t->vid[n] = -1;
        if (!v) continue;
        if (hostname) {
            t->vid[n] = (int)n; /* hostnames are unique per node */
            continue;
        }
        int id = -1;
        for (int k = t->n_values - 1; k >= 0 && k >= t->n_values - 64; k--)
            if (strcmp(vals[k], v) == 0) id = k;
        if (id < 0)
            for (int k = 0; k < t->n_values - 64 && id < 0; k++)
                if (strcmp(vals[k], v) == 0) id = k;
        if (id < 0) {
            vals[t->n_values] = v;
            id = t->n_values++;
        }
        t->vid[n] = id;
    }
    if (hostname) t->n_values = (int)s->inv->n_nodes;
    free(vals);
    s->n_topos++;
    return (int)(s->n_topos - 1);
}

/* ---------------------------------------------------------------- GPU state */

static const gpa_sim_group *grp(const gpa_sim *s, size_t n)
{
    return &s->inv->groups[s->inv->nodes[n].group];
}

static int slot_push(gpa_sim_gpu *u, gpa_sim_slot sl)
{
    gpa_sim_slot *ns = grow(u->slots, &u->cap_slots, u->n_slots + 1, sizeof *ns);
    if (!ns) return GPA_ENOMEM;
    u->slots = ns;
    ns[u->n_slots++] = sl;
    return GPA_OK;
}

/* Re-derives an auto-MIG GPU's start slices and which profiles still fit. */
static void mig_refresh(gpa_sim_gpu *u, const gpa_mig_model *m)
{
    const gpa_mig_profile *inst[GPA_MIG_MAX_INSTANCES + 1] = {0};
    int starts[GPA_MIG_MAX_INSTANCES + 1] = {0};
    size_t n = u->n_slots;
    for (size_t i = 0; i < n; i++)
        inst[i] = u->slots[i].p;
    gpa_mig_layout_valid(starts, m, inst, n);
    for (size_t i = 0; i < n; i++)
        u->slots[i].start = starts[i];
    u->can_add = 0;
    if (n >= GPA_MIG_MAX_INSTANCES) return;
    for (size_t k = 0; k < m->n_profiles; k++) {
        inst[n] = &m->profiles[k];
        if (gpa_mig_layout_valid(NULL, m, inst, n + 1)) u->can_add |= 1u << k;
    }
}

static int free_slices(const gpa_sim_gpu *u, const gpa_sim_group *g)
{
    int used = 0;
    for (size_t i = 0; i < u->n_slots; i++)
        if (g->mode == GPA_SIM_MIG_AUTO || u->slots[i].pod >= 0) used += u->slots[i].p->mem_slots;
    return g->model->mem_slots - used;
}

/* One way to put a pod on a node: the GPUs each unit of its demand goes to. */
typedef struct opt {
    int n;
    int gpu[GPA_SIM_MAX_GPUS_PER_NODE];
    long long score[4];
} opt;

static bool gpu_whole_free(const gpa_sim_gpu *u)
{
    return u->n_pods == 0;
}

/* Options for template t on node n (capacity only): up to cap, each scored. For demands
 * of one unit every GPU that takes it is an option (empty GPUs collapsed to the first); larger
 * demands get one greedy option (whole GPUs: one per NVLink island). */
static int options(const gpa_sim *s, size_t n, const gpa_sim_tmpl *t, opt *out, int cap)
{
    const gpa_sim_group *g = grp(s, n);
    const gpa_sim_node *nd = &s->nodes[n];
    const gpa_mig_profile *p;
    gpa_sim_gkind k = offer(s, n, t, &p);
    bool node_unused = nd->pods == 0;
    int no = 0;
    if (!t->gres) {
        out[0] = (opt){.n = 0, .score = {0, node_unused, 0, 0}};
        return 1;
    }
    if (k == GK_WHOLE) {
        int isl = g->island && g->island < g->gpus ? g->island : g->gpus;
        if (isl <= 0) return 0;
        for (int base = 0; base < g->gpus && no < cap; base += isl) {
            opt o = {0};
            int free_in = 0;
            for (int i = base; i < base + isl && i < g->gpus; i++)
                if (gpu_whole_free(&nd->gpus[i])) {
                    if (o.n < t->gcount) o.gpu[o.n++] = i;
                    free_in++;
                }
            if (o.n < t->gcount) continue;
            long long node_free = g->gpus - (long long)nd->used_gpus;
            o.score[0] = o.n;
            o.score[1] = node_unused;
            o.score[2] = (free_in - o.n) * 1000 + (node_free - o.n);
            out[no++] = o;
        }
        return no;
    }
    if (k == GK_TS || k == GK_MIG) {
        bool seen_empty = false;
        if (t->gcount == 1) {
            for (int i = 0; i < g->gpus && no < cap; i++) {
                const gpa_sim_gpu *u = &nd->gpus[i];
                bool empty = u->n_pods == 0;
                long long left;
                if (k == GK_TS) {
                    if ((int)u->n_pods >= g->replicas) continue;
                    left = g->replicas - (long long)u->n_pods - 1;
                } else if (g->mode == GPA_SIM_MIG_AUTO) {
                    if (!(u->can_add & (1u << (p - g->model->profiles)))) continue;
                    left = free_slices(u, g) - p->mem_slots;
                } else {
                    bool found = false;
                    for (size_t j = 0; j < u->n_slots; j++)
                        found |= u->slots[j].p == p && u->slots[j].pod < 0;
                    if (!found) continue;
                    left = free_slices(u, g) - p->mem_slots;
                }
                if (empty && seen_empty) continue;
                seen_empty |= empty;
                out[no++] = (opt){.n = 1, .gpu = {i}, .score = {empty, node_unused, left, i}};
            }
            return no;
        }
        /* Several units: fill the fullest GPUs first, on a scratch copy of the counts. */
        opt o = {0};
        int used_n[GPA_SIM_MAX_GPUS_PER_NODE];
        for (int i = 0; i < g->gpus; i++)
            used_n[i] = (int)nd->gpus[i].n_pods;
        for (long long u = 0; u < t->gcount; u++) {
            int best = -1;
            for (int i = 0; i < g->gpus; i++) {
                int room = k == GK_TS ? g->replicas - used_n[i] : 0;
                if (k == GK_MIG) {
                    /* conservative for several instances: only empty GPUs or ones not yet
                     * touched by this pod that can take one more */
                    const gpa_sim_gpu *gu = &nd->gpus[i];
                    bool touched = used_n[i] != (int)gu->n_pods;
                    bool can = g->mode == GPA_SIM_MIG_AUTO
                                   ? (gu->can_add & (1u << (p - g->model->profiles))) != 0
                                   : false;
                    if (g->mode == GPA_SIM_MIG_FIXED) {
                        int free_inst = 0;
                        for (size_t j = 0; j < gu->n_slots; j++)
                            free_inst += gu->slots[j].p == p && gu->slots[j].pod < 0;
                        can = free_inst > used_n[i] - (int)gu->n_pods;
                        touched = false;
                    }
                    room = can && !touched ? 1 : 0;
                }
                if (room <= 0) continue;
                if (best < 0 || used_n[i] > used_n[best]) best = i;
            }
            if (best < 0) return 0;
            if (used_n[best] == 0) o.score[0]++;
            used_n[best]++;
            o.gpu[o.n++] = best;
        }
        o.score[1] = node_unused;
        out[0] = o;
        return 1;
    }
    return 0;
}

static bool resources_fit(const gpa_sim *s, size_t n, const gpa_sim_tmpl *t)
{
    const gpa_sim_group *g = grp(s, n);
    const gpa_sim_node *nd = &s->nodes[n];
    if (g->cpu_milli >= 0 && nd->cpu + t->cpu > g->cpu_milli) return false;
    if (g->mem >= 0 && nd->mem + t->mem > g->mem) return false;
    if (g->max_pods >= 0 && nd->pods + 1 > g->max_pods) return false;
    return true;
}

static int apply(gpa_sim *s, size_t pi, size_t n, const opt *o)
{
    gpa_sim_pod *pod = &s->pods[pi];
    gpa_sim_tmpl *t = &s->tmpls[pod->tmpl];
    const gpa_sim_group *g = grp(s, n);
    gpa_sim_node *nd = &s->nodes[n];
    const gpa_mig_profile *p;
    gpa_sim_gkind k = offer(s, n, t, &p);
    pod->mem_alloc = 0;
    for (int i = 0; i < o->n; i++) {
        gpa_sim_gpu *u = &nd->gpus[o->gpu[i]];
        if (u->n_pods == 0) nd->used_gpus++;
        if (k == GK_MIG && g->mode == GPA_SIM_MIG_FIXED) {
            for (size_t j = 0; j < u->n_slots; j++)
                if (u->slots[j].p == p && u->slots[j].pod < 0) {
                    u->slots[j].pod = (long)pi;
                    break;
                }
        } else if (slot_push(u, (gpa_sim_slot){k == GK_MIG ? p : NULL, 0, (long)pi})) {
            return GPA_ENOMEM;
        }
        u->n_pods++;
        if (k == GK_MIG && g->mode == GPA_SIM_MIG_AUTO) mig_refresh(u, g->model);
        pod->mem_alloc += k == GK_MIG  ? p->mem_bytes
                          : k == GK_TS ? g->gpu_mem / (g->replicas ? g->replicas : 1)
                                       : g->gpu_mem;
    }
    pod->gpu_first = o->n ? o->gpu[0] : -1;
    nd->cpu += t->cpu;
    nd->mem += t->mem;
    nd->pods++;
    pod->node = (long)n;
    size_t *np = grow(t->placed_nodes, &t->cap_placed, t->n_placed + 1, sizeof *np);
    if (!np) return GPA_ENOMEM;
    t->placed_nodes = np;
    if (!t->cap_placed_seen) {
        size_t *pl = grow(s->placed_tmpls, &s->cap_placed_tmpls, s->n_placed_tmpls + 1, sizeof *pl);
        if (!pl) return GPA_ENOMEM;
        s->placed_tmpls = pl;
        pl[s->n_placed_tmpls++] = pod->tmpl;
        t->cap_placed_seen = true;
    }
    np[t->n_placed++] = n;
    return GPA_OK;
}

static void unapply(gpa_sim *s, size_t pi, const opt *o)
{
    gpa_sim_pod *pod = &s->pods[pi];
    gpa_sim_tmpl *t = &s->tmpls[pod->tmpl];
    size_t n = (size_t)pod->node;
    const gpa_sim_group *g = grp(s, n);
    gpa_sim_node *nd = &s->nodes[n];
    for (int i = o->n - 1; i >= 0; i--) {
        gpa_sim_gpu *u = &nd->gpus[o->gpu[i]];
        for (size_t j = u->n_slots; j-- > 0;)
            if (u->slots[j].pod == (long)pi) {
                if (g->mode == GPA_SIM_MIG_FIXED) {
                    u->slots[j].pod = -1;
                } else {
                    memmove(&u->slots[j], &u->slots[j + 1],
                            (u->n_slots - j - 1) * sizeof *u->slots);
                    u->n_slots--;
                }
                break;
            }
        u->n_pods--;
        if (u->n_pods == 0) nd->used_gpus--;
        if (g->mode == GPA_SIM_MIG_AUTO) mig_refresh(u, g->model);
    }
    nd->cpu -= t->cpu;
    nd->mem -= t->mem;
    nd->pods--;
    t->n_placed--;
    pod->node = -1;
    pod->gpu_first = -1;
    pod->mem_alloc = 0;
}

/* ---------------------------------------------------------------- pod (anti-)affinity */

/* The scheduler's namespace rule: the listed namespaces united with those namespaceSelector
 * picks; neither given means the term owner's namespace. Namespaces carry no labels here
 * but the one the API server sets, kubernetes.io/metadata.name, so a selector on anything
 * else matches none (docs/simulate.md). */
static bool ns_matches(const gpa_sim_term *term, const char *owner_ns, const char *ns)
{
    bool listed = cJSON_GetArraySize(term->namespaces) > 0;
    if (listed && str_in(term->namespaces, ns)) return true;
    if (cJSON_IsObject(term->ns_selector)) {
        if (!term->ns_selector->child) return true;
        char lbl[300];
        snprintf(lbl, sizeof lbl, "{\"kubernetes.io/metadata.name\":\"%.250s\"}", ns);
        cJSON *labels = cJSON_Parse(lbl);
        bool m = labels && selector_matches(term->ns_selector, labels);
        cJSON_Delete(labels);
        return m;
    }
    return listed ? false : strcmp(owner_ns, ns) == 0;
}

/* Per placement attempt: which topology values each term allows or forbids. marks[k] is an
 * array over term k's key's value ids. */
typedef struct aff_view {
    bool aff_free;          /* no placed pod matches any affinity term: self-match allowed */
    unsigned char **aff_ok; /* per affinity term: value id -> 1 when a matching pod is there */
    unsigned char **anti;   /* per topology key: value id -> 1 when forbidden */
    bool any_anti;
} aff_view;

static void view_free(aff_view *v, const gpa_sim *s, const gpa_sim_tmpl *t)
{
    if (v->aff_ok)
        for (size_t i = 0; i < t->n_aff; i++)
            free(v->aff_ok[i]);
    free(v->aff_ok);
    if (v->anti)
        for (size_t i = 0; i < s->n_topos; i++)
            free(v->anti[i]);
    free(v->anti);
}

static int view_build(aff_view *v, gpa_sim *s, size_t ti, gpa_error *err)
{
    memset(v, 0, sizeof *v);
    gpa_sim_tmpl *t = &s->tmpls[ti];
    v->aff_free = true;
    if (t->n_aff) {
        v->aff_ok = calloc(t->n_aff, sizeof *v->aff_ok);
        if (!v->aff_ok) return gpa_fail(err, GPA_ENOMEM, "out of memory");
    }
    for (size_t a = 0; a < t->n_aff; a++) {
        const gpa_sim_topo *tp = &s->topos[t->aff[a].key_id];
        v->aff_ok[a] = calloc((size_t)tp->n_values + 1, 1);
        if (!v->aff_ok[a]) return gpa_fail(err, GPA_ENOMEM, "out of memory");
        for (size_t q0 = 0; q0 < s->n_placed_tmpls; q0++) {
            const gpa_sim_tmpl *ot = &s->tmpls[s->placed_tmpls[q0]];
            if (!ot->n_placed || !ns_matches(&t->aff[a], t->ns, ot->ns) ||
                !selector_matches(t->aff[a].selector, ot->labels))
                continue;
            v->aff_free = false;
            for (size_t q = 0; q < ot->n_placed; q++) {
                int vid = tp->vid[ot->placed_nodes[q]];
                if (vid >= 0) v->aff_ok[a][vid] = 1;
            }
        }
    }
    /* Anti-affinity both ways: this pod's terms against placed pods, placed pods' terms
     * against this pod. */
    for (size_t q0 = 0; q0 < s->n_placed_tmpls; q0++) {
        const gpa_sim_tmpl *ot = &s->tmpls[s->placed_tmpls[q0]];
        if (!ot->n_placed) continue;
        for (int dir = 0; dir < 2; dir++) {
            const gpa_sim_tmpl *owner = dir ? ot : t, *other = dir ? t : ot;
            for (size_t a = 0; a < owner->n_anti; a++) {
                const gpa_sim_term *term = &owner->anti[a];
                if (!ns_matches(term, owner->ns, other->ns) ||
                    !selector_matches(term->selector, other->labels))
                    continue;
                if (!v->anti) {
                    v->anti = calloc(s->n_topos, sizeof *v->anti);
                    if (!v->anti) return gpa_fail(err, GPA_ENOMEM, "out of memory");
                }
                const gpa_sim_topo *tp = &s->topos[term->key_id];
                if (!v->anti[term->key_id]) {
                    v->anti[term->key_id] = calloc((size_t)tp->n_values + 1, 1);
                    if (!v->anti[term->key_id]) return gpa_fail(err, GPA_ENOMEM, "out of memory");
                }
                v->any_anti = true;
                for (size_t q = 0; q < ot->n_placed; q++) {
                    int vid = tp->vid[ot->placed_nodes[q]];
                    if (vid >= 0) v->anti[term->key_id][vid] = 1;
                }
            }
        }
    }
    if (v->aff_free)
        for (size_t a = 0; a < t->n_aff; a++)
            if (!ns_matches(&t->aff[a], t->ns, t->ns) ||
                !selector_matches(t->aff[a].selector, t->labels))
                v->aff_free = false; /* cannot satisfy its own affinity: never schedulable */
    if (v->aff_free && t->n_aff) {
        /* self-match: any node carrying the topology keys will do */
    }
    return GPA_OK;
}

static bool view_aff_ok(const aff_view *v, const gpa_sim *s, const gpa_sim_tmpl *t, size_t n,
                        bool self_ok)
{
    for (size_t a = 0; a < t->n_aff; a++) {
        int vid = s->topos[t->aff[a].key_id].vid[n];
        if (vid < 0) return false;
        if (self_ok) continue;
        if (!v->aff_ok[a][vid]) return false;
    }
    return true;
}

static bool view_anti_ok(const aff_view *v, const gpa_sim *s, size_t n)
{
    if (!v->any_anti) return true;
    for (size_t k = 0; k < s->n_topos; k++) {
        if (!v->anti[k]) continue;
        int vid = s->topos[k].vid[n];
        if (vid >= 0 && v->anti[k][vid]) return false;
    }
    return true;
}

/* ---------------------------------------------------------------- packing */

static int cmp_score(const long long *a, const long long *b)
{
    for (int i = 0; i < 5; i++)
        if (a[i] != b[i]) return a[i] < b[i] ? -1 : 1;
    return 0;
}

static int cmp_pods(const void *x, const void *y, void *ctx)
{
    const gpa_sim *s = ctx;
    size_t a = *(const size_t *)x, b = *(const size_t *)y;
    const gpa_sim_tmpl *ta = &s->tmpls[s->pods[a].tmpl];
    const gpa_sim_tmpl *tb = &s->tmpls[s->pods[b].tmpl];
    if (ta->size_key != tb->size_key) return ta->size_key > tb->size_key ? -1 : 1;
    return a < b ? -1 : a > b;
}

/* How many more copies of a whole-GPU gang (count left, gpus each) fit in the topology
 * domain of node n; used so the first pod of a gang opens a domain that can hold the rest. */
static long long domain_room(const gpa_sim *s, const gpa_sim_tmpl *t, size_t n)
{
    if (!t->n_aff || !t->gres) return 0;
    const gpa_sim_topo *tp = &s->topos[t->aff[0].key_id];
    int vid = tp->vid[n];
    long long room = 0;
    const gpa_sim_sig *sg = &s->sigs[t->sig];
    for (size_t i = 0; i < sg->n_nodes; i++) {
        size_t m = sg->nodes[i];
        if (tp->vid[m] != vid) continue;
        const gpa_sim_group *g = grp(s, m);
        const gpa_sim_node *nd = &s->nodes[m];
        const gpa_mig_profile *p;
        gpa_sim_gkind k = offer(s, m, t, &p);
        if (k == GK_WHOLE) {
            int isl = g->island && g->island < g->gpus ? g->island : g->gpus;
            for (int base = 0; base < g->gpus; base += isl) {
                int fr = 0;
                for (int j = base; j < base + isl && j < g->gpus; j++)
                    fr += gpu_whole_free(&nd->gpus[j]);
                room += fr / t->gcount;
            }
        } else {
            room += 1; /* shared GPUs: counted per node, a lower bound */
        }
    }
    return room;
}

typedef struct why {
    size_t room, anti, aff, capacity;
} why;

/* Best node and option for pod pi; -1 when none. Fills w with failure counts. */
static long best_node(gpa_sim *s, size_t pi, const aff_view *v, opt *best, why *w,
                      long long gang_left)
{
    const gpa_sim_tmpl *t = &s->tmpls[s->pods[pi].tmpl];
    const gpa_sim_sig *sg = &s->sigs[t->sig];
    long bn = -1;
    long long bscore[5] = {0};
    opt opts[GPA_SIM_MAX_GPUS_PER_NODE + 1];
    bool self_ok = v->aff_free;
    /* Empty nodes of one group are interchangeable unless the pod looks at topology: only
     * the first empty node of each group is scored. */
    bool topo_blind = !t->n_aff && !v->any_anti;
    unsigned char *empty_seen = NULL;
    if (topo_blind) empty_seen = calloc(s->inv->n_groups ? s->inv->n_groups : 1, 1);
    for (size_t i = 0; i < sg->n_nodes; i++) {
        size_t n = sg->nodes[i];
        const gpa_sim_node *nd = &s->nodes[n];
        if (empty_seen && nd->pods == 0) {
            if (empty_seen[s->inv->nodes[n].group]) continue;
            empty_seen[s->inv->nodes[n].group] = 1;
        }
        if (!resources_fit(s, n, t)) {
            w->capacity++;
            continue;
        }
        int no = options(s, n, t, opts, GPA_SIM_MAX_GPUS_PER_NODE + 1);
        if (!no) {
            w->room++;
            continue;
        }
        if (!view_anti_ok(v, s, n)) {
            w->anti++;
            continue;
        }
        if (!view_aff_ok(v, s, t, n, self_ok)) {
            w->aff++;
            continue;
        }
        long long gang_pen = 0;
        if (self_ok && t->n_aff && gang_left > 1 && domain_room(s, t, n) < gang_left) gang_pen = 1;
        for (int k = 0; k < no; k++) {
            long long sc[5] = {gang_pen, opts[k].score[0], opts[k].score[1], opts[k].score[2],
                               opts[k].score[3]};
            if (bn < 0 || cmp_score(sc, bscore) < 0) {
                bn = (long)n;
                *best = opts[k];
                memcpy(bscore, sc, sizeof sc);
            }
        }
        if (bn >= 0 && bscore[0] == 0 && bscore[1] == 0 && bscore[2] == 0 && bscore[3] == 0)
            break; /* nothing beats a perfect fit on a used node */
    }
    free(empty_seen);
    return bn;
}

static void set_reason(gpa_sim *s, size_t pi, const why *w)
{
    gpa_sim_pod *pod = &s->pods[pi];
    const gpa_sim_tmpl *t = &s->tmpls[pod->tmpl];
    const gpa_sim_sig *sg = &s->sigs[t->sig];
    char buf[256];
    if (!sg->n_nodes) {
        pod->reason = "no node matches";
        snprintf(buf, sizeof buf, "no node passes %s", sg->why);
    } else if (w->anti) {
        pod->reason = "tenant conflict";
        snprintf(buf, sizeof buf,
                 "%zu node(s) with room hold pods its required anti-affinity excludes "
                 "(another tenant on a shared GPU)",
                 w->anti);
    } else if (w->aff) {
        pod->reason = "island too small";
        snprintf(buf, sizeof buf,
                 "%zu node(s) with room are outside the NVLink domain (pod affinity) its group "
                 "already uses",
                 w->aff);
    } else {
        pod->reason = "no room";
        snprintf(buf, sizeof buf, "%zu matching node(s), none with room left", sg->n_nodes);
    }
    free(pod->reason_detail);
    pod->reason_detail = strdup(buf);
}

static int prepare(gpa_sim *s, gpa_error *err)
{
    for (size_t i = 0; i < s->n_tmpls; i++) {
        gpa_sim_tmpl *t = &s->tmpls[i];
        int rc = classify(s, t, err);
        if (rc) return rc;
        gpa_sim_term *lists[2] = {t->aff, t->anti};
        size_t ns[2] = {t->n_aff, t->n_anti};
        for (int l = 0; l < 2; l++)
            for (size_t k = 0; k < ns[l]; k++) {
                int id = topo_id(s, lists[l][k].topology_key, err);
                if (id < 0) return id;
                lists[l][k].key_id = id;
            }
    }
    return GPA_OK;
}

static int run_bfd(gpa_sim *s, gpa_error *err)
{
    size_t *order = malloc((s->n_pods ? s->n_pods : 1) * sizeof *order);
    if (!order) return gpa_fail(err, GPA_ENOMEM, "out of memory");
    for (size_t i = 0; i < s->n_pods; i++)
        order[i] = i;
    qsort_r(order, s->n_pods, sizeof *order, cmp_pods, s);
    int rc = GPA_OK;
    for (size_t k = 0; k < s->n_pods && rc == GPA_OK; k++) {
        size_t pi = order[k];
        size_t ti = s->pods[pi].tmpl;
        /* copies of this template still to come, the gang the first one opens a domain for */
        long long left = 1;
        while (k + (size_t)left < s->n_pods && s->pods[order[k + (size_t)left]].tmpl == ti)
            left++;
        aff_view v;
        rc = view_build(&v, s, ti, err);
        if (rc == GPA_OK) {
            opt o;
            why w = {0};
            long n = best_node(s, pi, &v, &o, &w, left);
            if (n >= 0)
                rc = apply(s, pi, (size_t)n, &o);
            else
                set_reason(s, pi, &w);
            if (rc) rc = gpa_fail(err, GPA_ENOMEM, "out of memory");
        }
        view_free(&v, s, &s->tmpls[ti]);
    }
    free(order);
    return rc;
}

/* ---------------------------------------------------------------- exact */

#define EXACT_MAX_PODS  10
#define EXACT_MAX_NODES 4

typedef struct exact_state {
    size_t best_placed, best_gpus;
    long best_node[EXACT_MAX_PODS];
    opt best_opt[EXACT_MAX_PODS];
    long cur_node[EXACT_MAX_PODS];
    opt cur_opt[EXACT_MAX_PODS];
} exact_state;

static size_t gpus_used(const gpa_sim *s)
{
    size_t u = 0;
    for (size_t n = 0; n < s->inv->n_nodes; n++)
        u += s->nodes[n].used_gpus;
    return u;
}

static int exact_rec(gpa_sim *s, exact_state *es, size_t k, size_t placed, gpa_error *err)
{
    if (placed + (s->n_pods - k) < es->best_placed) return GPA_OK;
    size_t used = gpus_used(s);
    if (placed + (s->n_pods - k) == es->best_placed && used >= es->best_gpus) return GPA_OK;
    if (k == s->n_pods) {
        if (placed > es->best_placed || used < es->best_gpus) {
            es->best_placed = placed;
            es->best_gpus = used;
            memcpy(es->best_node, es->cur_node, sizeof es->best_node);
            memcpy(es->best_opt, es->cur_opt, sizeof es->best_opt);
        }
        return GPA_OK;
    }
    size_t ti = s->pods[k].tmpl;
    const gpa_sim_sig *sg = &s->sigs[s->tmpls[ti].sig];
    aff_view v;
    int rc = view_build(&v, s, ti, err);
    for (size_t i = 0; i < sg->n_nodes && rc == GPA_OK; i++) {
        size_t n = sg->nodes[i];
        if (!resources_fit(s, n, &s->tmpls[ti]) || !view_anti_ok(&v, s, n) ||
            !view_aff_ok(&v, s, &s->tmpls[ti], n, v.aff_free))
            continue;
        opt opts[GPA_SIM_MAX_GPUS_PER_NODE + 1];
        int no = options(s, n, &s->tmpls[ti], opts, GPA_SIM_MAX_GPUS_PER_NODE + 1);
        for (int o = 0; o < no && rc == GPA_OK; o++) {
            if (apply(s, k, n, &opts[o])) {
                rc = gpa_fail(err, GPA_ENOMEM, "out of memory");
                break;
            }
            es->cur_node[k] = (long)n;
            es->cur_opt[k] = opts[o];
            rc = exact_rec(s, es, k + 1, placed + 1, err);
            unapply(s, k, &opts[o]);
        }
    }
    view_free(&v, s, &s->tmpls[ti]);
    if (rc) return rc;
    es->cur_node[k] = -1;
    return exact_rec(s, es, k + 1, placed, err);
}

static int run_exact(gpa_sim *s, gpa_error *err)
{
    if (s->n_pods > EXACT_MAX_PODS || s->inv->n_nodes > EXACT_MAX_NODES)
        return gpa_fail(err, GPA_EINVAL, "the exact solver takes at most %d pods and %d nodes",
                        EXACT_MAX_PODS, EXACT_MAX_NODES);
    exact_state *es = calloc(1, sizeof *es);
    if (!es) return gpa_fail(err, GPA_ENOMEM, "out of memory");
    es->best_gpus = (size_t)-1;
    for (size_t i = 0; i < EXACT_MAX_PODS; i++)
        es->best_node[i] = -1;
    int rc = exact_rec(s, es, 0, 0, err);
    for (size_t k = 0; k < s->n_pods && rc == GPA_OK; k++) {
        if (es->best_node[k] >= 0) {
            if (apply(s, k, (size_t)es->best_node[k], &es->best_opt[k]))
                rc = gpa_fail(err, GPA_ENOMEM, "out of memory");
        } else {
            why w = {0};
            set_reason(s, k, &w);
        }
    }
    free(es);
    return rc;
}

int gpa_sim_run(gpa_sim *s, gpa_sim_method method, gpa_error *err)
{
    if (s->ran) return gpa_fail(err, GPA_EINVAL, "the simulation already ran");
    s->ran = true;
    int rc = prepare(s, err);
    if (rc) return rc;
    return method == GPA_SIM_EXACT ? run_exact(s, err) : run_bfd(s, err);
}

/* ---------------------------------------------------------------- results */

int64_t gpa_sim_card_mem(const gpa_sim *s, size_t node)
{
    return grp(s, node)->gpu_mem;
}

void gpa_sim_get_totals(gpa_sim_totals *out, const gpa_sim *s)
{
    memset(out, 0, sizeof *out);
    out->pods = s->n_pods + s->n_denied;
    out->denied = s->n_denied;
    out->skipped = s->skipped;
    out->gpus_total = s->inv->total_gpus;
    for (size_t i = 0; i < s->n_pods; i++) {
        const gpa_sim_pod *p = &s->pods[i];
        const gpa_sim_tmpl *t = &s->tmpls[p->tmpl];
        out->whole_gpu_baseline += t->gres ? (size_t)t->gcount : 0;
        if (p->node >= 0) {
            out->placed++;
            out->mem_allocated += p->mem_alloc;
            out->mem_requested +=
                t->gpu_mem_req >= 0 ? t->gpu_mem_req * (t->gres ? 1 : 0) : p->mem_alloc;
        } else {
            out->unplaced++;
        }
    }
    out->gpus_used = gpus_used(s);
}

size_t gpa_sim_pod_count(const gpa_sim *s)
{
    return s->n_pods;
}

const char *gpa_sim_pod_name(const gpa_sim *s, size_t i, char *buf, size_t cap)
{
    const gpa_sim_pod *p = &s->pods[i];
    if (p->name) return p->name;
    const char *base = s->tmpls[p->tmpl].name;
    if (p->copy < 0) return base;
    snprintf(buf, cap, "%s-%lld", base, p->copy);
    return buf;
}

const char *gpa_sim_pod_node(const gpa_sim *s, size_t i)
{
    return s->pods[i].node >= 0 ? s->inv->nodes[s->pods[i].node].name : NULL;
}

const char *gpa_sim_pod_reason(const gpa_sim *s, size_t i)
{
    return s->pods[i].node >= 0 ? NULL : s->pods[i].reason;
}
