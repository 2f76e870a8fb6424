/*
 * engine_claim_mutate.c - a placed DRA claim's mutation (POLICY.md "Dynamic Resource
 * Allocation"): every GPU request that names a generic class gets the pool's deviceClass, the
 * pool's selectors are appended, a MIG pool adds the profile selector sized exactly as for
 * pods, and the annotations gpu-admission.io/rule and gpu-admission.io/policy are set; and
 * (POLICY.md "Isolation by default") every GPU request, placed or not, gets the exclusion
 * selector of each multiAllocatable pool of its class it is not placed in, unless one of its
 * selectors already rules that pool out. Made on an arena copy; the patch is the diff of the
 * copy against the request's object.
 *
 * Must never: add a selector the request already has (the second run's patch is empty),
 * rewrite a class that is neither generic nor the pool's (that claim is denied), or replace a
 * profile selector the claim wrote itself.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/engine_claim.h"
#include "policy/policy_shared_nodes.h"

/* The object at ptr (a pointer of plain tokens, as claim.c writes them) in copy. */
static cJSON *resolve(cJSON *copy, const char *ptr)
{
    cJSON *cur = copy;
    const char *p = ptr;
    while (cur && *p == '/') {
        p++;
        size_t n = strcspn(p, "/");
        char tok[32];
        if (n >= sizeof tok) return NULL;
        memcpy(tok, p, n);
        tok[n] = '\0';
        p += n;
        if (gpa_is_array(cur)) {
            int idx = atoi(tok), i = 0;
            cJSON *c = cur->child;
            while (c && i < idx) {
                c = c->next;
                i++;
            }
            cur = c;
        } else {
            cur = gpa_jn_get(cur, tok);
        }
    }
    return cur;
}

const gpa_pool *gpa_claim_placed_pool(const gpa_eng *e)
{
    if (!e->rule || e->rule->deny_message || !e->pool || !e->pool->dra.set) return NULL;
    return e->pool;
}

/* The class x's devices come from once placed: the pool's when placement rewrites a generic
 * class. */
static const char *final_class(const gpa_claim_eng *ce, const gpa_claim_alt *x)
{
    const gpa_pool *pl = gpa_claim_placed_pool(&ce->e);
    if (pl && gpa_dra_is_generic(ce->e.p, x->device_class)) return pl->dra.device_class;
    return x->device_class;
}

bool gpa_claim_has_selector(const gpa_claim_alt *x, const char *expr)
{
    for (size_t i = 0; i < x->n_selectors; i++) {
        const char *s = gpa_claim_selector(x, i);
        if (s && strcmp(s, expr) == 0) return true;
    }
    return false;
}

/* Does a selector of x, or of the pool placement appends, rule sp's devices out (its exclusion
 * selector, or an `X == 'a'` against sp's `X == 'b'`)? mutating: placement's selectors count. */
static bool keeps_off(const gpa_claim_eng *ce, const gpa_claim_alt *x, const gpa_pool *sp,
                      bool mutating)
{
    if (sp->dra.exclude_cel && gpa_claim_has_selector(x, sp->dra.exclude_cel)) return true;
    for (size_t t = 0; t < sp->dra.selectors.n; t++) {
        const char *theirs = sp->dra.selectors.items[t];
        for (size_t i = 0; i < x->n_selectors; i++)
            if (gpa_cel_eq_contradicts(gpa_claim_selector(x, i), theirs)) return true;
        const gpa_pool *pl = mutating ? gpa_claim_placed_pool(&ce->e) : NULL;
        for (size_t i = 0; pl && i < pl->dra.selectors.n; i++)
            if (gpa_cel_eq_contradicts(pl->dra.selectors.items[i], theirs)) return true;
    }
    return false;
}

const gpa_pool *gpa_claim_shared_pool(const gpa_claim_eng *ce, const gpa_claim_alt *x, size_t *from,
                                      bool mutating)
{
    const gpa_policy *p = ce->e.p;
    const char *cls = final_class(ce, x);
    const gpa_pool *pl = gpa_claim_placed_pool(&ce->e);
    for (size_t i = *from; cls && i < p->n_pools; i++) {
        const gpa_pool *sp = &p->pools[i];
        if (!gpa_pool_dra_shared(sp) || sp == pl || strcmp(sp->dra.device_class, cls) != 0)
            continue;
        if (keeps_off(ce, x, sp, mutating)) continue;
        *from = i + 1;
        return sp;
    }
    *from = p->n_pools;
    return NULL;
}

/* Appends {cel: {expression: expr}} to the selectors of obj (made when missing). */
static bool add_selector(gpa_eng *e, cJSON *obj, const char *expr)
{
    cJSON *arr = gpa_eng_child_arr(e, obj, "selectors");
    gpa_narena *a = gpa_eng_arena(e);
    cJSON *sel = a ? gpa_jn_new(a, cJSON_Object) : NULL;
    cJSON *cel = a ? gpa_jn_new(a, cJSON_Object) : NULL;
    cJSON *ex = a ? gpa_jn_str(a, expr) : NULL;
    if (!arr || !sel || !cel || !ex) {
        e->oom = true;
        return false;
    }
    gpa_jn_add(cel, "expression", ex);
    gpa_jn_add(sel, "cel", cel);
    gpa_jn_append(arr, sel);
    return true;
}

/* Keeps x (its object in the copy) off every multiAllocatable pool it is not placed in, by
 * each pool's exclusion selector; pools without selectors are denied by the check. */
static bool keep_off_shared(gpa_claim_eng *ce, const gpa_claim_alt *x, cJSON *obj)
{
    gpa_eng *e = &ce->e;
    bool any = false;
    size_t from = 0;
    const gpa_pool *sp;
    while ((sp = gpa_claim_shared_pool(ce, x, &from, true))) {
        if (!sp->dra.exclude_cel || !add_selector(e, obj, sp->dra.exclude_cel)) continue;
        gpa_eng_warn(e, "%s: selector added to keep off shared pool %s", x->label, sp->name);
        any = true;
    }
    return any;
}

/* Any GPU request the mutation would keep off a shared pool? (The copy is made only then.) */
static bool needs_keep_off(const gpa_claim_eng *ce)
{
    for (size_t i = 0; i < ce->c->n_alts; i++) {
        size_t from = 0;
        const gpa_pool *sp;
        while (ce->gpu_alt[i] && (sp = gpa_claim_shared_pool(ce, &ce->c->alt[i], &from, true)))
            if (sp->dra.exclude_cel) return true;
    }
    return false;
}

void gpa_claim_mutate(gpa_claim_eng *ce)
{
    gpa_eng *e = &ce->e;
    const gpa_claim *c = ce->c;
    const gpa_policy *p = e->p;
    const gpa_pool *pool = gpa_claim_placed_pool(e);
    if (!pool && !needs_keep_off(ce)) return;
    gpa_narena *a = gpa_eng_arena(e);
    cJSON *copy = a ? gpa_jn_dup(a, e->req->object) : NULL;
    if (!copy) {
        e->oom = true;
        return;
    }
    const char *profile = pool && pool->sharing == GPA_SHARING_MIG && e->mig ? e->mig->name : NULL;
    char profsel[96] = "";
    if (profile)
        snprintf(profsel, sizeof profsel, "%s%s%s", GPA_DRA_PROFILE_SEL_PRE, profile,
                 GPA_DRA_PROFILE_SEL_POST);
    const char *pclass = pool ? pool->dra.device_class : NULL;
    for (size_t i = 0; i < c->n_alts; i++) {
        if (!ce->gpu_alt[i]) continue;
        const gpa_claim_alt *x = &c->alt[i];
        cJSON *obj = resolve(copy, x->ptr);
        if (!gpa_is_object(obj)) continue; /* the reader saw it: cannot happen */
        const bool own = pool && strcmp(x->device_class, pclass) == 0;
        if (pool && (own || gpa_dra_is_generic(p, x->device_class))) {
            bool renamed = false;
            if (!own) renamed = gpa_eng_set_str(e, obj, "deviceClassName", pclass);
            size_t added = 0;
            for (size_t s = 0; s < pool->dra.selectors.n; s++) {
                const char *expr = pool->dra.selectors.items[s];
                if (gpa_claim_has_selector(x, expr)) continue;
                if (add_selector(e, obj, expr)) added++;
            }
            char own_prof[64];
            bool prof_added = false;
            if (profile && !gpa_claim_alt_profile(x, own_prof, sizeof own_prof) &&
                !gpa_claim_has_selector(x, profsel))
                prof_added = add_selector(e, obj, profsel);
            char sel[48] = "", prof[64] = "";
            if (added)
                snprintf(sel, sizeof sel, ", +%zu selector%s of pool %s", added,
                         added == 1 ? "" : "s", pool->name);
            if (prof_added) snprintf(prof, sizeof prof, ", profile %s", profile);
            if (renamed)
                gpa_eng_warn(e, "%s: %s -> %s%s%s (rule %s)", x->label, x->device_class, pclass,
                             prof, sel, e->rule->name);
            else if (added || prof_added)
                gpa_eng_warn(e, "%s: %s%s%s (rule %s)", x->label, pclass, prof, sel, e->rule->name);
        } else if (pool) {
            continue; /* a class neither generic nor the pool's: denied */
        }
        keep_off_shared(ce, x, obj);
    }
    if (!pool) goto diff; /* an unplaced claim gets no rule annotations */
    gpa_claim_fit_configs(ce, copy, pool);
    cJSON *md = gpa_eng_child_obj(e, copy, "metadata");
    cJSON *ann = md ? gpa_eng_child_obj(e, md, "annotations") : NULL;
    if (ann) {
        gpa_eng_set_str(e, ann, GPA_ANN_RULE, e->rule->name);
        gpa_eng_set_str(e, ann, GPA_ANN_POLICY, p->revision);
    }
diff:
    if (e->oom) return;
    if (!e->req->patch_only) {
        e->d->mutated = cJSON_Duplicate(copy, 1);
        if (!e->d->mutated) {
            e->oom = true;
            return;
        }
    }
    cJSON *ops = NULL;
    gpa_error err;
    err.code = 0;
    err.message[0] = '\0';
    if (gpa_patch_diff_arena(&ops, a, e->req->object, copy, &err) != GPA_OK) {
        e->oom = true;
        return;
    }
    if (ops && ops->child) {
        e->d->patch = ops;
        if (pool)
            gpa_eng_explain(e, "claim placed in pool %s (device class %s) by rule %s", pool->name,
                            pclass, e->rule->name);
        else
            gpa_eng_explain(e, "claim placed in no pool: kept off the shared pools' devices");
    } else {
        cJSON_Delete(e->d->mutated);
        e->d->mutated = NULL;
        if (pool)
            gpa_eng_explain(e, "claim already placed in pool %s: nothing to change", pool->name);
    }
}
