/*
 * engine_mutate.c - the mutating webhook: place a matched GPU pod in its pool by changing a
 * deep copy (POLICY.md mutations 1-8), judge the copy with the same checks the validating
 * webhook runs, and return the RFC 6902 diff between the pod and the copy.
 *
 * Must never mutate on anything but CREATE, never touch the request's pod (only the copy),
 * never copy a pod that no rule places (non-GPU pods, unmatched, deny rules: the fast path),
 * and never add what is already there: running on its own output yields an empty patch.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/engine_internal.h"
#include "policy/policy_gang.h"
#include "engine/engine_mutate_validate.h"

/* ---------------------------------------------------------------- 1. resource name */

/* Moves obj[from] to obj[target]; merges into an existing target by adding counts. */
static bool rename_one(gpa_eng *e, cJSON *obj, const char *from, const char *target)
{
    cJSON *item = gpa_jn_get(obj, from);
    if (!item) return false;
    cJSON *existing = gpa_jn_get(obj, target);
    gpa_narena *a = gpa_eng_arena(e);
    if (!a) return false;
    if (existing) {
        int64_t x, y;
        if (!gpa_gpu_qty(&x, item) || !gpa_gpu_qty(&y, existing))
            return false; /* left for the quantity check to report */
        char num[24];
        int64_t total = gpa_count_add(x, y);
        snprintf(num, sizeof num, "%" PRId64, total);
        cJSON *sum = gpa_is_string(existing) ? gpa_jn_str(a, num) : gpa_jn_num(a, (double)total);
        if (!sum) {
            e->oom = true;
            return false;
        }
        gpa_jn_replace(obj, existing, sum);
        cJSON_DetachItemViaPointer(obj, item);
        return true;
    }
    /* the key is the policy's: the arena gets its own copy */
    char *key = gpa_narena_strdup(a, target);
    if (!key) {
        e->oom = true;
        return false;
    }
    cJSON_DetachItemViaPointer(obj, item);
    gpa_jn_add(obj, key, item); /* the value keeps its form: "1" or 1 */
    return true;
}

/* Can obj's from be moved to target without guessing a count? (absent: yes) */
static bool renamable(const cJSON *obj, const char *from, const char *target)
{
    const cJSON *item = gpa_is_object(obj) ? gpa_jn_get(obj, from) : NULL;
    if (!item) return true;
    int64_t n;
    if (!gpa_gpu_qty(&n, item)) return false;
    const cJSON *existing = gpa_jn_get(obj, target);
    return !existing || gpa_gpu_qty(&n, existing);
}

static void rename_resources(gpa_eng *e, cJSON *pod)
{
    const gpa_pool *pool = e->pool;
    const char *target = NULL;
    if (pool->sharing == GPA_SHARING_MIG && pool->mig_strategy == GPA_MIG_MIXED && e->mig)
        target = e->mig->resource;
    else if (pool->sharing == GPA_SHARING_TIME_SLICING || pool->sharing == GPA_SHARING_MPS)
        target = pool->shared_resource;
    if (!target) return;
    /* a generic DRA extended resource stands for nvidia.com/gpu: the same pools take it, so
     * it is rewritten alike (the last one rewritten is named in the warning), also to a
     * shared pool that keeps the name nvidia.com/gpu (renameByDefault: false) */
    const bool keep_gpu = strcmp(target, GPA_RES_GPU) == 0;
    const gpa_policy *p = e->p;
    cJSON *spec = gpa_jn_get(pod, "spec");
    bool any = false;
    const char *dra_from = NULL;
    static const gpa_podc_kind kinds[] = {GPA_PODC_MAIN, GPA_PODC_INIT};
    for (size_t k = 0; k < 2; k++) {
        cJSON *arr = gpa_jn_get(spec, gpa_podc_field(kinds[k]));
        if (!gpa_is_array(arr)) continue;
        cJSON *c;
        cJSON_ArrayForEach(c, arr) {
            cJSON *res = gpa_jn_get(c, "resources");
            if (!gpa_is_object(res)) continue;
            /* both: the API server has already copied limits into requests, and a pod whose
             * requests still name nvidia.com/gpu would be rejected */
            cJSON *lim = gpa_jn_get(res, "limits");
            cJSON *req = gpa_jn_get(res, "requests");
            /* all or nothing per container: renaming only one side of a bad quantity would
             * change the pod's GPU count, and with it the rule a reinvocation matches */
            bool ok = keep_gpu ||
                      (renamable(lim, GPA_RES_GPU, target) && renamable(req, GPA_RES_GPU, target));
            for (size_t x = 0; ok && x < p->n_dra_ext; x++)
                if (p->dra_ext[x].generic)
                    ok = renamable(lim, p->dra_ext[x].name, target) &&
                         renamable(req, p->dra_ext[x].name, target);
            if (!ok) continue;
            if (!keep_gpu && gpa_is_object(lim) && rename_one(e, lim, GPA_RES_GPU, target))
                any = true;
            if (!keep_gpu && gpa_is_object(req) && rename_one(e, req, GPA_RES_GPU, target))
                any = true;
            for (size_t x = 0; x < p->n_dra_ext; x++) {
                const char *from = p->dra_ext[x].name;
                if (!p->dra_ext[x].generic) continue;
                bool l = gpa_is_object(lim) && rename_one(e, lim, from, target);
                bool r = gpa_is_object(req) && rename_one(e, req, from, target);
                if (l || r) dra_from = from;
            }
        }
    }
    if (dra_from) gpa_eng_warn(e, GPA_W_RENAMED, dra_from, target, e->rule->name);
    if (!any && !dra_from) return;
    const gpa_rule_text *rt = gpa_eng_rule_text(e);
    if (!any) {
        /* only a DRA extended resource was rewritten: its own line above says so */
    } else if (rt && rt->renamed.s && target == pool->shared_resource) {
        gpa_eng_warn_sv(e, rt->renamed);
    } else if (rt) {
        const gpa_sv parts[] = {
            {GPA_RES_GPU " rewritten to ", sizeof(GPA_RES_GPU " rewritten to ") - 1},
            {target, strlen(target)},
            {" by rule ", 9},
            rt->name};
        gpa_eng_warn_parts(e, parts, 4);
    } else {
        gpa_eng_warn(e, GPA_W_RENAMED, GPA_RES_GPU, target, e->rule->name);
    }
    /* an upsized request says why in bytes: 10Gi is not 10 GB */
    char up[160];
    if (target != pool->shared_resource && gpa_eng_upsize_text(e, up, sizeof up))
        gpa_eng_warn(e, "gpu-memory %s", up);
}

/* ---------------------------------------------------------------- 2. tolerations */

static const char *or_empty(const char *s)
{
    return s ? s : "";
}

static bool toleration_equal(const cJSON *t, const gpa_toleration *want)
{
    if (!gpa_is_object(t)) return false;
    /* one pass over the members instead of five lookups; the first of a repeated key counts,
     * as with a lookup */
    const char *op = NULL, *key = NULL, *value = NULL, *effect = NULL;
    const cJSON *secs = NULL;
    unsigned seen = 0;
    for (const cJSON *c = t->child; c; c = c->next) {
        const char *k = c->string, **slot = NULL;
        unsigned bit = 0;
        if (!k) continue;
        switch (k[0]) {
        case 'k':
            if (strcmp(k, "key") == 0) slot = &key, bit = 1;
            break;
        case 'o':
            if (strcmp(k, "operator") == 0) slot = &op, bit = 2;
            break;
        case 'v':
            if (strcmp(k, "value") == 0) slot = &value, bit = 4;
            break;
        case 'e':
            if (strcmp(k, "effect") == 0) slot = &effect, bit = 8;
            break;
        case 't':
            if (!(seen & 16) && strcmp(k, "tolerationSeconds") == 0) {
                secs = c;
                seen |= 16;
            }
            break;
        default:
            break;
        }
        if (slot && !(seen & bit)) {
            seen |= bit;
            *slot = gpa_is_string(c) ? c->valuestring : NULL;
            /* the key first: it tells most tolerations apart, usually as the first member */
            if (bit == 1 && strcmp(or_empty(key), or_empty(want->key)) != 0) return false;
        }
    }
    if (!(seen & 1) && *or_empty(want->key)) return false; /* no key: "" */
    const char *wop = want->op ? want->op : "Equal";
    if (strcmp(op && *op ? op : "Equal", wop) != 0) return false;
    if (strcmp(or_empty(value), or_empty(want->value)) != 0 ||
        strcmp(or_empty(effect), or_empty(want->effect)) != 0)
        return false;
    bool has = gpa_is_number(secs);
    if (has != want->has_seconds) return false;
    return !has || (int64_t)secs->valuedouble == want->seconds;
}

/* Adds a string member holding an arena copy of value (absent value: nothing). */
static bool add_opt_str(gpa_narena *a, cJSON *obj, const char *key, const char *value)
{
    if (!value) return true;
    cJSON *v = gpa_jn_str(a, value);
    if (v) gpa_jn_add(obj, key, v);
    return v != NULL;
}

static cJSON *toleration_json(gpa_narena *a, const gpa_toleration *t)
{
    cJSON *o = a ? gpa_jn_new(a, cJSON_Object) : NULL;
    if (!o || !add_opt_str(a, o, "key", t->key) || !add_opt_str(a, o, "operator", t->op) ||
        !add_opt_str(a, o, "value", t->value) || !add_opt_str(a, o, "effect", t->effect))
        return NULL;
    if (t->has_seconds) {
        cJSON *n = gpa_jn_num(a, (double)t->seconds);
        if (!n) return NULL;
        gpa_jn_add(o, "tolerationSeconds", n);
    }
    return o;
}

static void add_tolerations(gpa_eng *e, cJSON *spec)
{
    const gpa_pool *pool = e->pool;
    if (pool->n_tolerations == 0) return;
    cJSON *arr = gpa_eng_child_arr(e, spec, "tolerations");
    if (!arr) return;
    for (size_t i = 0; i < pool->n_tolerations; i++) {
        const gpa_toleration *t = &pool->tolerations[i];
        const cJSON *x;
        bool have = false;
        cJSON_ArrayForEach(x, arr) {
            if (toleration_equal(x, t)) {
                have = true;
                break;
            }
        }
        if (have) continue;
        /* the copy shares the pod's list until it gets a member */
        cJSON *n = toleration_json(e->arena, t);
        if (!n || !(arr = gpa_eng_cow_own(e->arena, spec, arr))) {
            e->oom = true;
            return;
        }
        gpa_jn_append(arr, n);
        const gpa_pool_text *pt = gpa_eng_pool_text(e);
        if (pt)
            gpa_eng_warn_sv(e, pt->tolerations[i]);
        else
            gpa_eng_warn(e, GPA_W_TOLERATION, t->key ? t->key : "*", t->op ? t->op : "Equal",
                         t->value ? " " : "", or_empty(t->value),
                         t->effect ? t->effect : "(any effect)", pool->name);
    }
}

static void set_runtime_class(gpa_eng *e, cJSON *spec)
{
    const char *rc = e->pool->runtime_class;
    if (!rc) return;
    cJSON *cur = gpa_jn_get(spec, "runtimeClassName");
    if (cur && !gpa_is_null(cur))
        return; /* the same one needs nothing; a different one is denied by the check */
    if (!gpa_eng_put_str(e, spec, cur, "runtimeClassName", rc)) return;
    const gpa_pool_text *pt = gpa_eng_pool_text(e);
    if (pt)
        gpa_eng_warn_sv(e, pt->runtime_class);
    else
        gpa_eng_warn(e, GPA_W_RUNTIME_CLASS, rc, e->pool->name);
}

/* ---------------------------------------------------------------- 5/6. labels, annotations */

/* Mutation 3: the node requirements of the decision (the pool's, MIG single, island size,
 * the shared pools ruled out) ANDed into every nodeSelectorTerm of spec. */
static void add_node_reqs(gpa_eng *e, cJSON *spec)
{
    gpa_node_req stack[GPA_MAX_NODE_REQS], *heap;
    size_t cap = GPA_MAX_NODE_REQS;
    gpa_node_req *reqs = gpa_eng_node_reqs_buf(e, stack, &cap, &heap);
    char buf[512];
    if (reqs)
        gpa_eng_add_node_affinity(e, spec, reqs, gpa_eng_node_reqs(e, reqs, cap, buf, sizeof buf));
    free(heap);
}

/* *labels: metadata's labels, still shared with the pod until the first label is added.
 * line: the warning when built at load (NULL: formatted here). */
static void add_label_if_absent(gpa_eng *e, cJSON *meta, cJSON **labels, const char *key,
                                const char *value, const gpa_sv *line)
{
    if (!*labels || gpa_jn_get(*labels, key))
        return; /* a different value is the pool-label / tenant-claim check's business */
    if (!(*labels = gpa_eng_cow_own(e->arena, meta, *labels))) {
        e->oom = true;
        return;
    }
    if (!gpa_eng_put_str(e, *labels, NULL, key, value)) return;
    if (line)
        gpa_eng_warn_sv(e, *line);
    else
        gpa_eng_warn(e, GPA_W_LABEL, key, value);
}

static void place(gpa_eng *e, cJSON *pod)
{
    const gpa_pool *pool = e->pool;
    cJSON *spec = gpa_jn_get(pod, "spec");
    if (!gpa_is_object(spec)) return; /* no spec to place: the API server rejects it anyway */
    cJSON *meta = gpa_eng_child_obj(e, pod, "metadata");
    if (!meta) return;

    rename_resources(e, pod); /* 1 */
    add_tolerations(e, spec); /* 2 */
    set_runtime_class(e, spec);
    add_node_reqs(e, spec); /* 3 (+ MIG single, island size) */

    cJSON *ann = gpa_eng_child_obj(e, meta, "annotations");
    if (pool->has_topology) { /* 4 */
        bool pod_aff = false;
        gpa_eng_add_topology(e, pod, &pod_aff);
        const char *val;
        const gpa_topology *t = &pool->topology;
        bool island = t->island_size_label && e->gpus >= 2;
        gpa_sv what = {"nvlink-island", 13};
        if (gpa_gang_levels(t)) {
            /* the domain add_topology chose for a grouped pod (none for a pod a topology-aware
             * scheduler places); a gang on a wider level records that level's label */
            const char *lv = e->gang_key;
            if (lv) {
                island = true;
                if (strcmp(lv, t->island_label) != 0) what = (gpa_sv){lv, strlen(lv)};
            }
        } else if (!island) {
            island = gpa_eng_group_label(e, &e->orig, &val) != NULL;
        }
        if (island && ann)
            gpa_eng_put_sv(e, ann, gpa_jn_get(ann, GPA_ANN_TOPOLOGY), GPA_ANN_TOPOLOGY, what);
    }
    if (pool->sharing == GPA_SHARING_TIME_SLICING || pool->sharing == GPA_SHARING_MPS) { /* 5 */
        gpa_eng_tenancy(e);
        cJSON *labels = gpa_eng_child_obj(e, meta, "labels");
        const gpa_pool_text *pt = gpa_eng_pool_text(e);
        add_label_if_absent(e, meta, &labels, GPA_LABEL_POOL, pool->name,
                            pt ? &pt->pool_label : NULL);
        add_label_if_absent(e, meta, &labels, GPA_LABEL_TENANT, e->tenant, NULL);
        gpa_eng_add_isolation(e, pod);
    }
    if (ann) { /* 6 */
        const gpa_rule_text *rt = gpa_eng_rule_text(e);
        if (rt) {
            gpa_eng_put_sv(e, ann, gpa_jn_get(ann, GPA_ANN_RULE), GPA_ANN_RULE, rt->name);
            gpa_eng_put_sv(e, ann, gpa_jn_get(ann, GPA_ANN_POLICY), GPA_ANN_POLICY,
                           e->p->rule_index->revision);
        } else {
            gpa_eng_set_str(e, ann, GPA_ANN_RULE, e->rule->name);
            gpa_eng_set_str(e, ann, GPA_ANN_POLICY, e->p->revision);
        }
    }
}

/* A GPU pod placed in no pool: only the node affinity that keeps it off the shared pools'
 * nodes (mutation 3 with no pool of its own). */
static void keep_off_shared(gpa_eng *e, cJSON *pod)
{
    cJSON *spec = gpa_jn_get(pod, "spec");
    if (gpa_is_object(spec)) add_node_reqs(e, spec);
}

/* vout NULL: the mutating webhook. Otherwise also the validating decision on the mutated pod
 * (gpa_engine_mutate_validate): taken from the working copy before the diff consumes it. */
static int mutate_impl(gpa_decision *out, gpa_decision *vout, const gpa_policy *p,
                       const gpa_request *req, gpa_error *err)
{
    gpa_eng e;
    int rc;
    if (!gpa_eng_start(&e, out, p, req, err, &rc)) return rc;
    /* A GPU pod no rule places (unmatched, or a deny rule under warn or audit) is still kept
     * off the shared pools' nodes (POLICY.md "Isolation by default"); one that is refused
     * anyway is not copied. */
    const gpa_shared_guard *guard = e.create && !e.pool ? gpa_eng_shared_guard(&e) : NULL;
    bool refused = (e.rule ? e.rule->deny_message != NULL : p->unmatched_deny) &&
                   p->enforcement == GPA_ENFORCE_DENY;
    bool keep_off = guard && guard->n > 0 && !refused;
    if (!e.create || (!e.pool && !keep_off)) {
        /* UPDATE never mutates; unmatched, denied and non-GPU pods are only judged */
        gpa_eng_check(&e, &e.orig);
        rc = gpa_eng_finish(&e, err);
        if (rc == GPA_OK && vout && out->allowed) rc = gpa_engine_validate(vout, p, req, err);
        return rc;
    }
    const gpa_pool *pl = e.pool;
    bool renames =
        pl && ((pl->sharing == GPA_SHARING_MIG && pl->mig_strategy == GPA_MIG_MIXED) ||
               pl->sharing == GPA_SHARING_TIME_SLICING || pl->sharing == GPA_SHARING_MPS);
    gpa_narena *a = gpa_eng_arena(&e);
    cJSON *copy = a ? gpa_eng_cow_copy(a, req->object, renames) : NULL; /* borrows the pod */
    if (!copy) {
        e.oom = true;
        return gpa_eng_finish(&e, err);
    }
    size_t mark = out->n_warnings;
    if (pl)
        place(&e, copy); /* 7: warnings along the way */
    else
        keep_off_shared(&e, copy);
    gpa_pod v;
    gpa_pod_init(&v, copy);
    gpa_eng_check(&e, &v);
    if (e.n_viol > 0 && p->enforcement == GPA_ENFORCE_DENY) {
        /* nothing will change: lines announcing changes would mislead */
        gpa_eng_drop_warnings_from(&e, mark);
        return gpa_eng_finish(&e, err);
    }
    if (vout && !e.oom) {
        /* The mutated pod is the working copy as placed: judged here, in place, instead of
         * after a deep copy (a third of a workload review's cost). */
        gpa_request vreq = *req;
        vreq.object = copy;
        vreq.explain = false;
        rc = gpa_engine_validate(vout, p, &vreq, err);
        if (rc != GPA_OK) {
            gpa_decision_clear(out);
            return rc;
        }
    }
    /* an owned copy, taken before the diff moves values out of the working copy (which
     * borrows from the request's pod and is thrown away with the arena) */
    cJSON *mutated = NULL;
    if (!req->patch_only && !e.oom && !(mutated = gpa_eng_cow_materialize(copy))) e.oom = true;
    cJSON *ops = NULL;
    if (!e.oom && gpa_patch_diff_arena(&ops, a, req->object, copy, NULL) != GPA_OK) e.oom = true;
    if (ops && ops->child && !pl) {
        out->patch = ops;
        out->mutated = mutated;
    } else if (ops && ops->child) {
        out->patch = ops;
        out->mutated = mutated;
        /* the headline goes first, before the per-change lines */
        const gpa_rule_text *rt = gpa_eng_rule_text(&e);
        if (rt)
            gpa_eng_warn_sv(&e, rt->placed);
        else
            gpa_eng_warn(&e, GPA_W_PLACED, e.pool->name, e.rule->name);
        if (!e.oom && out->n_warnings > mark + 1) {
            char *head = out->warnings[out->n_warnings - 1];
            memmove(&out->warnings[mark + 1], &out->warnings[mark],
                    (out->n_warnings - 1 - mark) * sizeof(char *));
            out->warnings[mark] = head;
        }
    } else { /* 8: nothing left to change */
        cJSON_Delete(mutated);
        gpa_eng_drop_warnings_from(&e, mark);
        gpa_eng_explain(&e, "the pod already satisfies its placement: empty patch");
    }
    return gpa_eng_finish(&e, err);
}

int gpa_engine_mutate(gpa_decision *out, const gpa_policy *p, const gpa_request *req,
                      gpa_error *err)
{
    return mutate_impl(out, NULL, p, req, err);
}

int gpa_engine_mutate_validate(gpa_decision *mout, gpa_decision *vout, const gpa_policy *p,
                               const gpa_request *req, gpa_error *err)
{
    memset(vout, 0, sizeof *vout);
    vout->allowed = true;
    return mutate_impl(mout, vout, p, req, err);
}
