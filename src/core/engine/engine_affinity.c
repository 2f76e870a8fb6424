/*
 * engine_affinity.c - scheduling constraints the placement adds and checks: required node
 * affinity ANDed into every nodeSelectorTerm (mutation 3, MIG single product, island size),
 * NVLink-island pod affinity (mutation 4) and tenant-isolation pod anti-affinity (mutation 5),
 * plus detection of pods whose own constraints contradict the pool.
 *
 * Must never add a second copy of a constraint already present (the mutation is idempotent:
 * reinvocation yields an empty patch), never OR the pool's requirements away by adding a new
 * nodeSelectorTerm next to existing ones, and never overwrite a field of a type it does not
 * expect (a malformed pod is left for the API server to reject).
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/engine_internal.h"
#include "policy/policy_dra.h"
#include "policy/policy_gang.h"

/* ---------------------------------------------------------------- small builders */

static cJSON *child_of_type(gpa_eng *e, cJSON *parent, const char *key, bool array)
{
    if (!gpa_is_object(parent)) return NULL;
    cJSON *c = gpa_jn_get(parent, key);
    if (c && !gpa_is_null(c)) return (array ? gpa_is_array(c) : gpa_is_object(c)) ? c : NULL;
    gpa_narena *a = gpa_eng_arena(e);
    cJSON *n = a ? gpa_jn_new(a, array ? cJSON_Array : cJSON_Object) : NULL;
    if (!n) {
        e->oom = true;
        return NULL;
    }
    if (c)
        gpa_jn_replace(parent, c, n);
    else
        gpa_jn_add(parent, key, n);
    return n;
}

cJSON *gpa_eng_child_obj(gpa_eng *e, cJSON *parent, const char *key)
{
    return child_of_type(e, parent, key, false);
}

cJSON *gpa_eng_child_arr(gpa_eng *e, cJSON *parent, const char *key)
{
    return child_of_type(e, parent, key, true);
}

bool gpa_eng_set_str(gpa_eng *e, cJSON *obj, const char *key, const char *value)
{
    return gpa_eng_put_str(e, obj, gpa_jn_get(obj, key), key, value);
}

bool gpa_eng_put_str(gpa_eng *e, cJSON *obj, cJSON *cur, const char *key, const char *value)
{
    return gpa_eng_put_sv(e, obj, cur, key, (gpa_sv){value, strlen(value)});
}

bool gpa_eng_put_sv(gpa_eng *e, cJSON *obj, cJSON *cur, const char *key, gpa_sv value)
{
    if (gpa_is_string(cur) && strcmp(cur->valuestring, value.s) == 0) return false;
    gpa_narena *a = gpa_eng_arena(e);
    cJSON *n = a ? gpa_jn_strn(a, value.s, value.n) : NULL;
    if (!n) {
        e->oom = true;
        return false;
    }
    if (cur)
        gpa_jn_replace(obj, cur, n);
    else
        gpa_jn_add(obj, key, n);
    return true;
}

/* Adds a string member holding an arena copy of value; false on OOM. */
static bool add_str(gpa_narena *a, cJSON *obj, const char *key, const char *value)
{
    cJSON *v = gpa_jn_str(a, value);
    if (v) gpa_jn_add(obj, key, v);
    return v != NULL;
}

/* {key, operator, values: [value]}: its five nodes and three strings in one allocation */
static cJSON *expression(gpa_narena *a, const char *key, const char *op, const char *value)
{
    size_t lk = strlen(key), lo = strlen(op), lv = strlen(value);
    cJSON *x = a ? gpa_narena_alloc(a, 5 * sizeof(cJSON) + lk + lo + lv + 3) : NULL;
    if (!x) return NULL;
    cJSON *k = x + 1, *o = x + 2, *vals = x + 3, *v = x + 4;
    char *sk = (char *)(x + 5), *so = sk + lk + 1, *sv = so + lo + 1;
    memcpy(sk, key, lk + 1);
    memcpy(so, op, lo + 1);
    memcpy(sv, value, lv + 1);
    *x = (cJSON){.type = cJSON_Object, .child = k};
    /* members linked in order: key, operator, values; the first's prev is the last */
    *k = (cJSON){.type = cJSON_String, .next = o, .prev = vals, .valuestring = sk, .string = "key"};
    *o = (cJSON){
        .type = cJSON_String, .next = vals, .prev = k, .valuestring = so, .string = "operator"};
    *vals = (cJSON){.type = cJSON_Array, .prev = o, .child = v, .string = "values"};
    *v = (cJSON){.type = cJSON_String, .prev = v, .valuestring = sv};
    return x;
}

/* {key, operator, values: [v0, v1, ...]} for a requirement of several values. */
static cJSON *expression_n(gpa_narena *a, const gpa_node_req *r)
{
    cJSON *x = expression(a, r->key, r->op, r->values[0]);
    cJSON *vals = x ? x->child->next->next : NULL;
    for (size_t i = 1; vals && i < r->n_values; i++) {
        cJSON *v = gpa_jn_str(a, r->values[i]);
        if (!v) return NULL;
        gpa_jn_append(vals, v);
    }
    return x;
}

/* Does x hold exactly r (its values in order)? */
static bool is_req(const cJSON *x, const gpa_node_req *r);

static bool values_are(const cJSON *vals, const char *value)
{
    return cJSON_GetArraySize(vals) == 1 && gpa_is_string(vals->child) &&
           strcmp(vals->child->valuestring, value) == 0;
}

static bool values_contain(const cJSON *vals, const char *value)
{
    const cJSON *v;
    cJSON_ArrayForEach(v, vals) {
        if (gpa_is_string(v) && strcmp(v->valuestring, value) == 0) return true;
    }
    return false;
}

static bool is_expression(const cJSON *x, const char *key, const char *op, const char *value)
{
    const char *k = gpa_json_str(x, "key"), *o = gpa_json_str(x, "operator");
    return k && o && strcmp(k, key) == 0 && strcmp(o, op) == 0 &&
           values_are(gpa_json_arr(x, "values"), value);
}

static bool is_req(const cJSON *x, const gpa_node_req *r)
{
    if (r->n_values <= 1) return is_expression(x, r->key, r->op, r->value);
    const char *k = gpa_json_str(x, "key"), *o = gpa_json_str(x, "operator");
    const cJSON *vals = gpa_json_arr(x, "values");
    if (!k || !o || strcmp(k, r->key) != 0 || strcmp(o, r->op) != 0 ||
        cJSON_GetArraySize(vals) != (int)r->n_values)
        return false;
    size_t i = 0;
    const cJSON *v;
    cJSON_ArrayForEach(v, vals) {
        if (!gpa_is_string(v) || strcmp(v->valuestring, r->values[i++]) != 0) return false;
    }
    return true;
}

/* Would r and q be written as the same expression (key, operator, values in order)? */
static bool same_req(const gpa_node_req *r, const gpa_node_req *q)
{
    size_t n = r->n_values ? r->n_values : 1;
    if (n != (q->n_values ? q->n_values : 1) || strcmp(r->key, q->key) != 0 ||
        strcmp(r->op, q->op) != 0)
        return false;
    for (size_t v = 0; v < n; v++)
        if (strcmp(r->n_values ? r->values[v] : r->value, q->n_values ? q->values[v] : q->value))
            return false;
    return true;
}

/* ---------------------------------------------------------------- node affinity */

/* The shared pool a container resource names (never nvidia.com/gpu: renameByDefault false
 * serves plain GPUs from time-sliced cards too, so that name says nothing). */
static const gpa_pool *shared_pool_named(const gpa_policy *p, const char *name)
{
    if (strcmp(name, GPA_RES_GPU) == 0) return NULL;
    for (size_t i = 0; i < p->n_pools; i++)
        if (gpa_pool_is_shared(&p->pools[i]) && strcmp(p->pools[i].shared_resource, name) == 0)
            return &p->pools[i];
    return NULL;
}

static gpa_node_req excl_req(const gpa_shared_excl *x)
{
    return (gpa_node_req){x->key, "NotIn", x->values[0], &x->line, x->values, x->n_values};
}

const gpa_shared_guard *gpa_eng_shared_guard(gpa_eng *e)
{
    if (e->guard_done) return e->guard;
    if (e->gpus <= 0) return NULL;
    {
        e->guard_done = true;
        e->guard_ctx = e->pool;
        /* an unplaced pod asking a shared pool's own resource runs there: that pool's
         * isolation checks judge it (check_shared), the guard keeps it off the others. A pod
         * asking a resource DRA may serve gets the guard that counts multiAllocatable pools
         * as shared (the scheduler's claim for it is judged nowhere else). */
        bool differ = e->p->shared_guards_dra != e->p->shared_guards;
        for (int k = GPA_PODC_MAIN; k <= GPA_PODC_INIT; k++) {
            const cJSON *c;
            cJSON_ArrayForEach(c, gpa_pod_containers(&e->orig, (gpa_podc_kind)k)) {
                if (e->guard_ctx && (!differ || e->guard_dra)) break;
                gpa_ctr_gpus tmp;
                const gpa_ctr_gpus *g = gpa_ctr_gpus_cached(&e->scans, &tmp, e->p, c);
                for (size_t i = 0; i < g->n; i++) {
                    if (!e->guard_ctx) e->guard_ctx = shared_pool_named(e->p, g->res[i].name);
                    if (differ && !e->guard_dra)
                        e->guard_dra = gpa_dra_reachable(e->p, g->res[i].name);
                }
            }
        }
    }
    return e->guard = gpa_shared_guard_of(e->p, e->guard_ctx, e->guard_dra);
}

size_t gpa_eng_node_reqs(gpa_eng *e, gpa_node_req *out, size_t cap, char *buf, size_t bufcap)
{
    const gpa_pool *pool = e->pool;
    size_t n = 0, used = 0;
    /* the shared pools' nodes ruled out (mutation 3 of a pod not placed in them), after the
     * pool's own requirements */
    const gpa_shared_guard *g = gpa_eng_shared_guard(e);
    if (!pool) {
        for (size_t i = 0; g && i < g->n && n < cap; i++)
            out[n++] = excl_req(&g->excl[i]);
        return n;
    }
    const gpa_pool_text *pt = gpa_eng_pool_text(e);
    for (size_t i = 0; i < pool->node_selector.n && n < cap; i++)
        out[n++] =
            (gpa_node_req){pool->node_selector.keys[i],       "In", pool->node_selector.values[i],
                           pt ? &pt->node_selector[i] : NULL, NULL, 0};
    if (pool->sharing == GPA_SHARING_MIG && pool->mig_strategy == GPA_MIG_SINGLE && e->mig &&
        pool->mig_product && n < cap) {
        int w = snprintf(buf + used, bufcap - used, "%s-MIG-%s", pool->mig_product, e->mig->name);
        if (w > 0 && (size_t)w < bufcap - used) {
            out[n++] = (gpa_node_req){"nvidia.com/gpu.product", "In", buf + used, NULL, NULL, 0};
            used += (size_t)w + 1;
        }
    }
    if (pool->has_topology && pool->topology.island_size_label && e->gpus >= 2 && n < cap) {
        /* e->gpus - 1 in decimal, without snprintf (this runs twice per placed pod) */
        char digits[24];
        size_t w = 0;
        for (uint64_t v = (uint64_t)(e->gpus - 1); v || !w; v /= 10)
            digits[w++] = (char)('0' + v % 10);
        if (w < bufcap - used) {
            for (size_t i = 0; i < w; i++)
                buf[used + i] = digits[w - 1 - i];
            buf[used + w] = '\0';
            out[n++] =
                (gpa_node_req){pool->topology.island_size_label, "Gt", buf + used, NULL, NULL, 0};
            used += w + 1;
        }
    }
    for (size_t i = 0; g && i < g->n && n < cap; i++)
        out[n++] = excl_req(&g->excl[i]);
    return n;
}

gpa_node_req *gpa_eng_node_reqs_buf(gpa_eng *e, gpa_node_req *stack, size_t *cap,
                                    gpa_node_req **heap)
{
    const gpa_shared_guard *g = gpa_eng_shared_guard(e);
    /* + MIG product, island size, the shared pools ruled out */
    size_t need = (e->pool ? e->pool->node_selector.n : 0) + 2 + (g ? g->n : 0);
    *heap = NULL;
    if (need <= *cap) return stack;
    *heap = malloc(need * sizeof **heap);
    if (!*heap) {
        e->oom = true;
        return NULL;
    }
    *cap = need;
    return *heap;
}

static bool term_excludes(const cJSON *term, const char *key, const char *value);

void gpa_eng_add_node_affinity(gpa_eng *e, cJSON *spec, const gpa_node_req *reqs, size_t n)
{
    if (n == 0) return;
    cJSON *aff = gpa_eng_child_obj(e, spec, "affinity");
    cJSON *na = gpa_eng_child_obj(e, aff, "nodeAffinity");
    cJSON *req = gpa_eng_child_obj(e, na, "requiredDuringSchedulingIgnoredDuringExecution");
    cJSON *terms = gpa_eng_child_arr(e, req, "nodeSelectorTerms");
    if (!terms) return;
    /* the check reports it (affinity-too-large); never amplify such a pod */
    if (cJSON_GetArraySize(terms) > GPA_MAX_NODE_TERMS) return;
    gpa_narena *a = gpa_eng_arena(e);
    if (!a) return;
    bool fresh = !terms->child;
    if (fresh) {
        cJSON *t = gpa_jn_new(a, cJSON_Object);
        if (!t) {
            e->oom = true;
            return;
        }
        gpa_jn_append(terms, t);
    }
    bool stack_added[GPA_MAX_NODE_REQS] = {false};
    bool *added = n <= GPA_MAX_NODE_REQS ? stack_added : calloc(n, sizeof *added);
    if (!added) {
        e->oom = true;
        return;
    }
    cJSON *term;
    cJSON_ArrayForEach(term, terms) {
        cJSON *exprs = gpa_eng_child_arr(e, term, "matchExpressions");
        if (!exprs) continue;
        for (size_t i = 0; i < n; i++) {
            const cJSON *x;
            /* a shared pool's label the term rules out already (NotIn [a, b], In [other],
             * DoesNotExist) needs no second requirement */
            bool have = !fresh && strcmp(reqs[i].op, "NotIn") == 0;
            for (size_t v = 0; have && v < (reqs[i].n_values ? reqs[i].n_values : 1); v++)
                have = term_excludes(term, reqs[i].key,
                                     reqs[i].n_values ? reqs[i].values[v] : reqs[i].value);
            if (fresh) {
                /* the term holds only what this loop added: compare the requirements
                 * themselves, not the JSON built from them */
                for (size_t j = 0; j < i && !have; j++)
                    have = added[j] && same_req(&reqs[j], &reqs[i]);
            } else {
                cJSON_ArrayForEach(x, exprs) {
                    if (is_req(x, &reqs[i])) {
                        have = true;
                        break;
                    }
                }
            }
            if (have) continue;
            cJSON *nx = reqs[i].n_values > 1
                            ? expression_n(a, &reqs[i])
                            : expression(a, reqs[i].key, reqs[i].op, reqs[i].value);
            if (!nx) {
                e->oom = true;
                break;
            }
            gpa_jn_append(exprs, nx);
            added[i] = true;
        }
    }
    const gpa_pool_text *pt = gpa_eng_pool_text(e);
    /* the pod had no term: its only term now holds exactly the requirements */
    e->node_term_is_reqs = fresh && !e->oom;
    for (size_t i = 0; i < n && !e->oom; i++) {
        if (!added[i]) continue;
        const gpa_node_req *r = &reqs[i];
        if (r->line) {
            gpa_eng_warn_sv(e, *r->line);
        } else if (pt) {
            const gpa_sv parts[] = {{"node affinity ", 14},
                                    {r->key, strlen(r->key)},
                                    {" ", 1},
                                    {r->op, strlen(r->op)},
                                    {" [", 2},
                                    {r->value, strlen(r->value)},
                                    pt->affinity_suffix};
            gpa_eng_warn_parts(e, parts, sizeof parts / sizeof parts[0]);
        } else {
            gpa_eng_warn(e, GPA_W_NODE_AFFINITY, r->key, r->op, r->value, e->pool->name);
        }
    }
    if (added != stack_added) free(added);
}

/* key, operator and values of a node selector requirement in one pass over its members
 * (the first of a repeated name counts, as with a lookup; a wrong type reads as absent). */
static void requirement(const cJSON *x, const char **key, const char **op, const cJSON **vals)
{
    *key = *op = NULL;
    *vals = NULL;
    unsigned seen = 0;
    for (const cJSON *c = x->child; c; c = c->next) {
        const char *k = c->string;
        if (!k) continue;
        if (k[0] == 'k' && !(seen & 1) && strcmp(k, "key") == 0) {
            seen |= 1;
            *key = gpa_is_string(c) ? c->valuestring : NULL;
        } else if (k[0] == 'o' && !(seen & 2) && strcmp(k, "operator") == 0) {
            seen |= 2;
            *op = gpa_is_string(c) ? c->valuestring : NULL;
        } else if (k[0] == 'v' && !(seen & 4) && strcmp(k, "values") == 0) {
            seen |= 4;
            *vals = gpa_is_array(c) ? c : NULL;
        }
    }
}

/* Does this nodeSelectorTerm rule out nodes labelled key=value? */
static bool term_excludes(const cJSON *term, const char *key, const char *value)
{
    const cJSON *x, *exprs = gpa_json_arr(term, "matchExpressions"); /* looked up once */
    cJSON_ArrayForEach(x, exprs) {
        const char *k, *op;
        const cJSON *vals;
        requirement(x, &k, &op, &vals);
        if (!k || !op || strcmp(k, key) != 0) continue;
        if (strcmp(op, "In") == 0 && !values_contain(vals, value)) return true;
        if (strcmp(op, "NotIn") == 0 && values_contain(vals, value)) return true;
        if (strcmp(op, "DoesNotExist") == 0) return true;
    }
    return false;
}

const cJSON *gpa_eng_node_terms(const gpa_pod *v)
{
    return gpa_json_arr(gpa_json_obj(gpa_json_obj(v->affinity, "nodeAffinity"),
                                     "requiredDuringSchedulingIgnoredDuringExecution"),
                        "nodeSelectorTerms");
}

bool gpa_eng_term_rules_out(const gpa_pod *v, const cJSON *term, const gpa_pool *sp)
{
    const gpa_kvlist *ns = &sp->node_selector;
    for (size_t i = 0; i < ns->n; i++) {
        const char *have = gpa_json_str(v->node_selector, ns->keys[i]);
        if (have && strcmp(have, ns->values[i]) != 0) return true;
        if (term && term_excludes(term, ns->keys[i], ns->values[i])) return true;
    }
    return false;
}

/* term_excludes for a term whose expressions are reqs[0..n) (duplicates once). */
static bool reqs_exclude(const gpa_node_req *reqs, size_t n, const char *key, const char *value)
{
    for (size_t j = 0; j < n; j++)
        if (strcmp(reqs[j].op, "In") == 0 && strcmp(reqs[j].key, key) == 0 &&
            strcmp(reqs[j].value, value) != 0)
            return true;
    return false;
}

int gpa_eng_node_conflict(const gpa_pod *v, const cJSON *terms, bool reqs_term,
                          const gpa_node_req *reqs, size_t n, char *detail, size_t cap)
{
    const cJSON *sel = v->node_selector;
    for (size_t i = 0; i < n; i++) {
        if (strcmp(reqs[i].op, "In") != 0) continue;
        const char *have = gpa_json_str(sel, reqs[i].key);
        if (have && strcmp(have, reqs[i].value) != 0) {
            snprintf(detail, cap, "its nodeSelector %s=%s", reqs[i].key, have);
            return (int)i;
        }
    }
    if (reqs_term) { /* one term: the requirements themselves */
        for (size_t i = 0; i < n; i++) {
            if (strcmp(reqs[i].op, "In") != 0 || !reqs_exclude(reqs, n, reqs[i].key, reqs[i].value))
                continue;
            snprintf(detail, cap,
                     "every nodeSelectorTerm of its node affinity rules those nodes out");
            return (int)i;
        }
        return -1;
    }
    if (!terms || !terms->child) return -1;
    int first = -1;
    const cJSON *term;
    cJSON_ArrayForEach(term, terms) {
        int hit = -1;
        for (size_t i = 0; i < n && hit < 0; i++)
            if (strcmp(reqs[i].op, "In") == 0 && term_excludes(term, reqs[i].key, reqs[i].value))
                hit = (int)i;
        if (hit < 0) return -1; /* this term can still be met: the terms are ORed */
        if (first < 0) first = hit;
    }
    snprintf(detail, cap, "every nodeSelectorTerm of its node affinity rules those nodes out");
    return first;
}

/* ---------------------------------------------------------------- pod (anti-)affinity */

const char *gpa_eng_group_label(const gpa_eng *e, const gpa_pod *v, const char **value)
{
    const gpa_topology *t = &e->pool->topology;
    *value = NULL;
    if (t->group_labels.n == 0) {
        const char *val = gpa_pod_label(v, GPA_LABEL_GROUP);
        if (val && *val) {
            *value = val;
            return GPA_LABEL_GROUP;
        }
        return NULL;
    }
    for (size_t i = 0; i < t->group_labels.n; i++) {
        const char *val = gpa_pod_label(v, t->group_labels.items[i]);
        if (val && *val) {
            *value = val;
            return t->group_labels.items[i];
        }
    }
    return NULL;
}

/* Appends item to arr unless an equal element is there (then item is left unused). */
static bool append_unique(gpa_eng *e, cJSON *arr, cJSON *item)
{
    if (!item) {
        e->oom = true;
        return false;
    }
    const cJSON *x;
    cJSON_ArrayForEach(x, arr) {
        if (cJSON_Compare(x, item, true)) return false;
    }
    gpa_jn_append(arr, item);
    return true;
}

static cJSON *selector_term(gpa_narena *a, cJSON *exprs, const char *topology_key,
                            bool all_namespaces)
{
    cJSON *term = exprs ? gpa_jn_new(a, cJSON_Object) : NULL;
    cJSON *sel = term ? gpa_jn_new(a, cJSON_Object) : NULL;
    if (!sel) return NULL;
    gpa_jn_add(sel, "matchExpressions", exprs);
    gpa_jn_add(term, "labelSelector", sel);
    if (all_namespaces) {
        /* an empty namespaceSelector selects every namespace: tenants live in different
         * namespaces, and without it the term would only see the pod's own namespace */
        cJSON *ns = gpa_jn_new(a, cJSON_Object);
        if (!ns) return NULL;
        gpa_jn_add(term, "namespaceSelector", ns);
    }
    if (!add_str(a, term, "topologyKey", topology_key)) return NULL;
    return term;
}

void gpa_eng_add_topology(gpa_eng *e, cJSON *pod, bool *changed)
{
    /* group labels are the user's: the original pod has them exactly as the copy */
    const char *val;
    const char *label = gpa_eng_group_label(e, &e->orig, &val);
    *changed = false;
    if (!label) return;
    const gpa_topology *t = &e->pool->topology;
    const char *key = t->island_label;
    int64_t domain_gpus = 0;
    if (gpa_gang_levels(t) && !(key = e->gang_key = gpa_eng_gang_key(e, &domain_gpus))) return;
    gpa_narena *a = gpa_eng_arena(e);
    if (!a) return;
    cJSON *exprs = gpa_jn_new(a, cJSON_Array);
    cJSON *x = exprs ? expression(a, label, "In", val) : NULL;
    if (x) gpa_jn_append(exprs, x);
    cJSON *term = x ? selector_term(a, exprs, key, false) : NULL;
    cJSON *spec = gpa_jn_get(pod, "spec");
    cJSON *pa = gpa_eng_child_obj(e, gpa_eng_child_obj(e, spec, "affinity"), "podAffinity");
    if (!term || !pa) {
        if (!term) e->oom = true;
        return;
    }
    if (t->mode == GPA_TOPO_REQUIRED) {
        cJSON *arr = gpa_eng_child_arr(e, pa, "requiredDuringSchedulingIgnoredDuringExecution");
        if (!arr) return;
        *changed = append_unique(e, arr, term);
    } else {
        cJSON *arr = gpa_eng_child_arr(e, pa, "preferredDuringSchedulingIgnoredDuringExecution");
        if (!arr) return;
        cJSON *w = gpa_jn_new(a, cJSON_Object);
        cJSON *wn = w ? gpa_jn_num(a, 100) : NULL;
        if (!wn) {
            e->oom = true;
            return;
        }
        gpa_jn_add(w, "weight", wn);
        gpa_jn_add(w, "podAffinityTerm", term);
        *changed = append_unique(e, arr, w);
    }
    if (!*changed) return;
    if (domain_gpus > 0) gpa_eng_gang_warn(e, key, domain_gpus);
    gpa_eng_warn(e, "pod affinity (%s) to pods with %s=%s on one %s added",
                 t->mode == GPA_TOPO_REQUIRED ? "required" : "preferred", label, val, key);
}

void gpa_eng_add_isolation(gpa_eng *e, cJSON *pod)
{
    gpa_pod v; /* the isolation check reads spec only */
    gpa_pod_init_spec(&v, gpa_json_obj(pod, "spec"));
    if (gpa_eng_has_isolation_term(&v, e->pool->name, e->tenant)) return;
    gpa_narena *a = gpa_eng_arena(e);
    cJSON *exprs = a ? gpa_jn_new(a, cJSON_Array) : NULL;
    cJSON *x1 = exprs ? expression(a, GPA_LABEL_POOL, "In", e->pool->name) : NULL;
    cJSON *x2 = x1 ? expression(a, GPA_LABEL_TENANT, "NotIn", e->tenant) : NULL;
    if (x2) {
        gpa_jn_append(exprs, x1);
        gpa_jn_append(exprs, x2);
    }
    cJSON *term = x2 ? selector_term(a, exprs, GPA_HOSTNAME_KEY, true) : NULL;
    if (!term) {
        e->oom = true;
        return;
    }
    cJSON *spec = gpa_jn_get(pod, "spec");
    cJSON *paa = gpa_eng_child_obj(e, gpa_eng_child_obj(e, spec, "affinity"), "podAntiAffinity");
    cJSON *arr = gpa_eng_child_arr(e, paa, "requiredDuringSchedulingIgnoredDuringExecution");
    if (!arr) return;
    gpa_jn_append(arr, term);
    const gpa_pool_text *pt = gpa_eng_pool_text(e);
    if (pt)
        gpa_eng_warn_sv(e, pt->isolation);
    else
        gpa_eng_warn(e, GPA_W_ISOLATION, e->pool->name);
}

static bool isolation_term(const gpa_pod *v, const char *pool, const char *tenant,
                           bool need_ns_selector)
{
    const cJSON *arr = gpa_json_arr(gpa_json_obj(v->affinity, "podAntiAffinity"),
                                    "requiredDuringSchedulingIgnoredDuringExecution");
    const cJSON *term;
    cJSON_ArrayForEach(term, arr) {
        const char *tk = gpa_json_str(term, "topologyKey");
        const cJSON *sel = gpa_json_obj(term, "labelSelector");
        const cJSON *nss = gpa_json_obj(term, "namespaceSelector");
        if (!tk || strcmp(tk, GPA_HOSTNAME_KEY) != 0 || !sel) continue;
        /* it must see every namespace: an empty namespaceSelector, no namespaces list */
        if (gpa_jn_get(term, "namespaces")) continue;
        if (need_ns_selector ? (!nss || nss->child) : nss != NULL) continue;
        const cJSON *ml = gpa_jn_get(sel, "matchLabels");
        if (ml && !(gpa_is_object(ml) && !ml->child) && !gpa_is_null(ml))
            continue; /* extra label requirements would narrow the term */
        const cJSON *exprs = gpa_json_arr(sel, "matchExpressions");
        if (cJSON_GetArraySize(exprs) != 2) continue;
        bool has_pool = false, has_tenant = false;
        const cJSON *x;
        cJSON_ArrayForEach(x, exprs) {
            has_pool = has_pool || is_expression(x, GPA_LABEL_POOL, "In", pool);
            has_tenant = has_tenant || is_expression(x, GPA_LABEL_TENANT, "NotIn", tenant);
        }
        if (has_pool && has_tenant) return true;
    }
    return false;
}

bool gpa_eng_has_isolation_term(const gpa_pod *v, const char *pool, const char *tenant)
{
    return isolation_term(v, pool, tenant, true);
}

bool gpa_eng_isolation_lost_namespace_selector(const gpa_pod *v, const char *pool,
                                               const char *tenant)
{
    return isolation_term(v, pool, tenant, false);
}
