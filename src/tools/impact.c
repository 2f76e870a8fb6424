/*
 * impact.c - one object under two policy sets (impact.h), for `gpu-admission diff`.
 *
 * Reconstruction of an already-mutated Pod never guesses silently: the candidate original is
 * accepted only when the old set, run on it, gives back exactly the pod that was read.
 * Must never: report a difference that comes from the pod's own history rather than from the
 * policy change (so both sets judge the same reconstructed request), or do I/O.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpu_admission/claim.h"
#include "gpu_admission/impact.h"
#include "gpu_admission/judge.h"
#include "gpu_admission/workload.h"
#include "json_ref.h"

static cJSON *get(const cJSON *o, const char *k)
{
    return cJSON_IsObject(o) ? cJSON_GetObjectItemCaseSensitive(o, k) : NULL;
}

static const char *str(const cJSON *o, const char *k)
{
    const cJSON *v = get(o, k);
    return cJSON_IsString(v) ? v->valuestring : NULL;
}

static void del(cJSON *o, const char *k)
{
    if (cJSON_IsObject(o)) cJSON_DeleteItemFromObjectCaseSensitive(o, k);
}

/* Drops an empty object/array under key k of o (what undoing left behind). */
static void del_if_empty(cJSON *o, const char *k)
{
    cJSON *v = get(o, k);
    if (v && (cJSON_IsObject(v) || cJSON_IsArray(v)) && !v->child) del(o, k);
}

static bool in_list(const char *k, const char *const *keys)
{
    for (; k && *keys; keys++)
        if (strcmp(k, *keys) == 0) return true;
    return false;
}

/* A view of obj without the keys in drop (NULL-terminated): a new object whose members are
 * references to obj's, so nothing is copied; subs (owned, NULL entries allowed) replace the
 * members named sub_keys (n of them). NULL when memory runs out. The view is read-only and
 * must die before obj. */
static cJSON *view_without(const cJSON *obj, const char *const *drop, const char *const *sub_keys,
                           cJSON **subs, size_t n)
{
    cJSON *v = cJSON_CreateObject();
    bool ok = v != NULL;
    for (const cJSON *c = obj ? obj->child : NULL; ok && c; c = c->next) {
        if (in_list(c->string, drop)) continue;
        size_t k = 0;
        while (k < n && !(subs[k] && c->string && strcmp(c->string, sub_keys[k]) == 0))
            k++;
        if (k < n) {
            ok = cJSON_AddItemToObject(v, sub_keys[k], subs[k]);
            if (!ok) cJSON_Delete(subs[k]);
            subs[k] = NULL;
        } else {
            ok = gpa_tools_add_ref(v, c->string, c);
        }
    }
    for (size_t k = 0; k < n; k++)
        cJSON_Delete(subs[k]);
    if (!ok) {
        cJSON_Delete(v);
        return NULL;
    }
    return v;
}

/* The pod without the fields the API server and kubelet set after admission: a pod read back
 * from a cluster is judged as the CREATE request it was. A view (see view_without). */
static cJSON *without_server_fields(const cJSON *pod)
{
    static const char *const md_keys[] = {
        "uid",        "resourceVersion",   "creationTimestamp",          "managedFields",
        "generation", "deletionTimestamp", "deletionGracePeriodSeconds", "selfLink",
        NULL};
    static const char *const spec_keys[] = {"nodeName", NULL};
    static const char *const top_keys[] = {"status", NULL};
    static const char *const subs_at[] = {"metadata", "spec"};
    const cJSON *md = get(pod, "metadata"), *spec = get(pod, "spec");
    cJSON *subs[2] = {cJSON_IsObject(md) ? view_without(md, md_keys, NULL, NULL, 0) : NULL,
                      cJSON_IsObject(spec) ? view_without(spec, spec_keys, NULL, NULL, 0) : NULL};
    if ((cJSON_IsObject(md) && !subs[0]) || (cJSON_IsObject(spec) && !subs[1])) {
        cJSON_Delete(subs[0]);
        cJSON_Delete(subs[1]);
        return NULL;
    }
    return view_without(pod, top_keys, subs_at, subs, 2);
}

/* cJSON_Compare looks every key up by a linear scan (quadratic per object); a pod compared
 * with the patched copy of itself has its keys in the same order, so walk both in step and
 * look a key up only where the orders differ. Same answer as cJSON_Compare(a, b, true) for
 * objects without repeated keys. */
static bool json_equal(const cJSON *a, const cJSON *b)
{
    if (a == b) return true;
    if (!a || !b || (a->type & 0xFF) != (b->type & 0xFF)) return false;
    switch (a->type & 0xFF) {
    case cJSON_False:
    case cJSON_True:
    case cJSON_NULL:
        return true;
    case cJSON_Number:
        return a->valuedouble == b->valuedouble;
    case cJSON_String:
    case cJSON_Raw:
        return a->valuestring && b->valuestring && strcmp(a->valuestring, b->valuestring) == 0;
    case cJSON_Array: {
        const cJSON *x = a->child, *y = b->child;
        for (; x && y; x = x->next, y = y->next)
            if (!json_equal(x, y)) return false;
        return !x && !y;
    }
    case cJSON_Object: {
        size_t na = 0, nb = 0;
        for (const cJSON *x = a->child; x; x = x->next)
            na++;
        for (const cJSON *y = b->child; y; y = y->next)
            nb++;
        if (na != nb) return false;
        const cJSON *y = b->child;
        for (const cJSON *x = a->child; x; x = x->next, y = y ? y->next : NULL) {
            const cJSON *match = y && x->string && y->string && strcmp(x->string, y->string) == 0
                                     ? y
                                     : cJSON_GetObjectItemCaseSensitive(b, x->string);
            if (!match || !json_equal(x, match)) return false;
        }
        return true;
    }
    default:
        return false;
    }
}

static bool was_mutated(const cJSON *pod)
{
    const cJSON *ann = get(get(pod, "metadata"), "annotations");
    return get(ann, "gpu-admission.io/rule") || get(ann, "gpu-admission.io/policy");
}

/* ---- summaries ---- */

/* NULL when memory runs out (a partial map would read as other resources). */
static cJSON *gpu_resources(const gpa_policy *p, const cJSON *object)
{
    cJSON *lim = object ? gpa_judge_container_limits(p, object) : cJSON_CreateObject();
    cJSON *out = lim ? cJSON_CreateObject() : NULL;
    bool ok = out != NULL;
    for (cJSON *c = lim ? lim->child : NULL; ok && c; c = c->next) {
        cJSON *sel = NULL;
        for (cJSON *q = c->child; ok && q; q = q->next) {
            if (!strchr(q->string, '/')) continue;
            if (!sel && !(sel = cJSON_AddObjectToObject(out, c->string))) ok = false;
            cJSON *v = ok ? cJSON_Duplicate(q, 1) : NULL;
            if (ok && !(v && cJSON_AddItemToObject(sel, q->string, v))) {
                cJSON_Delete(v);
                ok = false;
            }
        }
    }
    cJSON_Delete(lim);
    if (!ok) {
        cJSON_Delete(out);
        return NULL;
    }
    return out;
}

/* NULL when memory runs out: a summary missing a field would compare as a change. */
static cJSON *summary(const gpa_policy *p, const gpa_judgement *j)
{
    cJSON *s = cJSON_CreateObject();
    if (!s) return NULL;
    bool ok = cJSON_AddBoolToObject(s, "allowed", j->allowed) != NULL;
#define NAME(k, v)                                                                                 \
    (ok = ok && ((v) ? cJSON_AddStringToObject(s, k, v) : cJSON_AddNullToObject(s, k)) != NULL)
    NAME("rule", j->rule);
    NAME("pool", j->pool);
    NAME("reason", j->reason);
    NAME("message", j->message);
#undef NAME
    cJSON *res = ok ? gpu_resources(p, j->allowed ? j->result : NULL) : NULL;
    if (ok && !(res && cJSON_AddItemToObject(s, "resources", res))) {
        cJSON_Delete(res);
        ok = false;
    }
    cJSON *w = ok ? cJSON_AddArrayToObject(s, "warnings") : NULL;
    if (!w) ok = false;
    for (size_t i = 0; ok && i < j->n_warnings; i++) {
        cJSON *x = cJSON_CreateString(j->warnings[i]);
        if (!x || !cJSON_AddItemToArray(w, x)) {
            cJSON_Delete(x);
            ok = false;
        }
    }
    if (!ok) {
        cJSON_Delete(s);
        return NULL;
    }
    return s;
}

static bool same_str(const cJSON *a, const cJSON *b)
{
    return cJSON_Compare(a, b, true);
}

static unsigned compare(const cJSON *o, const cJSON *n)
{
    unsigned m = 0;
    bool oa = cJSON_IsTrue(get(o, "allowed")), na = cJSON_IsTrue(get(n, "allowed"));
    if (oa && !na) m |= GPA_IMPACT_DENIED;
    if (!oa && na) m |= GPA_IMPACT_ALLOWED;
    if (!same_str(get(o, "rule"), get(n, "rule"))) m |= GPA_IMPACT_RULE;
    if (!same_str(get(o, "pool"), get(n, "pool"))) m |= GPA_IMPACT_POOL;
    /* A denied side has no resources to compare: the change is the denial itself. */
    if (oa && na && !cJSON_Compare(get(o, "resources"), get(n, "resources"), true))
        m |= GPA_IMPACT_RESOURCES;
    /* Warnings as a set: order is the engine's, not a change anyone acts on. */
    const cJSON *ow = get(o, "warnings"), *nw = get(n, "warnings");
    bool same = cJSON_GetArraySize(ow) == cJSON_GetArraySize(nw);
    for (const cJSON *x = ow ? ow->child : NULL; same && x; x = x->next) {
        bool hit = false;
        for (const cJSON *y = nw->child; y && !hit; y = y->next)
            hit = strcmp(x->valuestring, y->valuestring) == 0;
        same = hit;
    }
    if (!same) m |= GPA_IMPACT_WARNINGS;
    return m;
}

static int judge_one(gpa_judgement *j, const gpa_policy *p, const cJSON *obj, gpa_judge_hooks h,
                     gpa_error *err)
{
    gpa_judge_input in = {.object = obj, .hooks = h};
    return gpa_judge(j, p, &in, err);
}

/* ---- reconstruction ---- */

static void rename_back(cJSON *res)
{
    for (cJSON *q = res ? res->child : NULL; q;) {
        cJSON *next = q->next;
        if ((strncmp(q->string, "nvidia.com/mig-", 15) == 0 ||
             strcmp(q->string, "nvidia.com/gpu.shared") == 0) &&
            !get(res, "nvidia.com/gpu")) {
            cJSON *v = cJSON_DetachItemViaPointer(res, q);
            cJSON_AddItemToObject(res, "nvidia.com/gpu", v);
        }
        q = next;
    }
}

static void remove_equal_elements(cJSON *arr, const cJSON *added)
{
    for (const cJSON *a = added ? added->child : NULL; a; a = a->next)
        for (cJSON *x = arr ? arr->child : NULL; x; x = x->next)
            if (json_equal(x, a)) {
                cJSON_Delete(cJSON_DetachItemViaPointer(arr, x));
                break;
            }
}

/* Undoes on cand what the old set adds to a bare version of it (probe): its tolerations,
 * node-affinity expressions, pod (anti-)affinity terms and runtimeClassName. */
static void undo_probe(cJSON *cand, const cJSON *probe)
{
    cJSON *spec = get(cand, "spec");
    const cJSON *pspec = get(probe, "spec");
    remove_equal_elements(get(spec, "tolerations"), get(pspec, "tolerations"));
    del_if_empty(spec, "tolerations");
    const char *rc = str(pspec, "runtimeClassName");
    if (rc && str(spec, "runtimeClassName") && strcmp(rc, str(spec, "runtimeClassName")) == 0)
        del(spec, "runtimeClassName");
    cJSON *aff = get(spec, "affinity");
    const cJSON *paff = get(pspec, "affinity");
    const cJSON *pterms =
        get(get(get(paff, "nodeAffinity"), "requiredDuringSchedulingIgnoredDuringExecution"),
            "nodeSelectorTerms");
    cJSON *na = get(aff, "nodeAffinity");
    cJSON *req = get(na, "requiredDuringSchedulingIgnoredDuringExecution");
    cJSON *terms = get(req, "nodeSelectorTerms");
    const cJSON *added =
        cJSON_IsArray(pterms) && pterms->child ? get(pterms->child, "matchExpressions") : NULL;
    for (cJSON *t = cJSON_IsArray(terms) ? terms->child : NULL; t;) {
        cJSON *next = t->next;
        remove_equal_elements(get(t, "matchExpressions"), added);
        del_if_empty(t, "matchExpressions");
        if (!t->child) cJSON_Delete(cJSON_DetachItemViaPointer(terms, t));
        t = next;
    }
    del_if_empty(req, "nodeSelectorTerms");
    del_if_empty(na, "requiredDuringSchedulingIgnoredDuringExecution");
    del_if_empty(aff, "nodeAffinity");
    static const char *kinds[] = {"podAffinity", "podAntiAffinity"};
    static const char *lists[] = {"requiredDuringSchedulingIgnoredDuringExecution",
                                  "preferredDuringSchedulingIgnoredDuringExecution"};
    for (size_t k = 0; k < 2; k++) {
        cJSON *pa = get(aff, kinds[k]);
        for (size_t l = 0; l < 2; l++) {
            remove_equal_elements(get(pa, lists[l]), get(get(paff, kinds[k]), lists[l]));
            del_if_empty(pa, lists[l]);
        }
        del_if_empty(aff, kinds[k]);
    }
    del_if_empty(spec, "affinity");
}

static cJSON *candidate(const gpa_policy *old_p, const cJSON *pod, bool rename, gpa_error *err,
                        int *rc)
{
    *rc = GPA_OK;
    cJSON *cand = cJSON_Duplicate(pod, 1);
    if (!cand) {
        *rc = gpa_fail(err, GPA_ENOMEM, "out of memory");
        return NULL;
    }
    cJSON *md = get(cand, "metadata");
    cJSON *ann = get(md, "annotations"), *lab = get(md, "labels");
    del(ann, "gpu-admission.io/rule");
    del(ann, "gpu-admission.io/policy");
    del(ann, "gpu-admission.io/topology");
    del_if_empty(md, "annotations");
    del(lab, "gpu-admission.io/pool");
    del(lab, "gpu-admission.io/tenant");
    del_if_empty(md, "labels");
    if (rename) {
        static const char *lists[] = {"initContainers", "containers"};
        for (size_t l = 0; l < 2; l++) {
            cJSON *arr = get(get(cand, "spec"), lists[l]);
            for (cJSON *c = cJSON_IsArray(arr) ? arr->child : NULL; c; c = c->next) {
                rename_back(get(get(c, "resources"), "limits"));
                rename_back(get(get(c, "resources"), "requests"));
            }
        }
    }
    /* the probe: cand without what placement adds, as a view (nothing copied) */
    static const char *const placed[] = {"tolerations", "affinity", "runtimeClassName", NULL};
    static const char *const none[] = {NULL};
    const cJSON *cspec = get(cand, "spec");
    static const char *const spec_at[] = {"spec"};
    cJSON *sv = cJSON_IsObject(cspec) ? view_without(cspec, placed, NULL, NULL, 0) : NULL;
    cJSON *bare = cJSON_IsObject(cspec) && !sv ? NULL : view_without(cand, none, spec_at, &sv, 1);
    if (!bare) {
        cJSON_Delete(cand);
        *rc = gpa_fail(err, GPA_ENOMEM, "out of memory");
        return NULL;
    }
    gpa_judgement pj;
    gpa_error perr;
    if (judge_one(&pj, old_p, bare, GPA_JUDGE_MUTATE, &perr) == GPA_OK && pj.result)
        undo_probe(cand, pj.result);
    gpa_judgement_clear(&pj);
    cJSON_Delete(bare);
    return cand;
}

/* The original request of an already-mutated pod, or NULL when none checks out. */
static cJSON *reconstruct(const gpa_policy *old_p, const cJSON *pod, gpa_error *err, int *rc)
{
    for (int rename = 1; rename >= 0; rename--) {
        cJSON *cand = candidate(old_p, pod, rename, err, rc);
        if (!cand) return NULL;
        gpa_judgement j;
        gpa_error jerr;
        bool ok = judge_one(&j, old_p, cand, GPA_JUDGE_MUTATE, &jerr) == GPA_OK && j.allowed &&
                  j.result && json_equal(j.result, pod);
        gpa_judgement_clear(&j);
        if (ok) return cand;
        cJSON_Delete(cand);
    }
    return NULL;
}

/* ---- entries ---- */

/* replicas: the pods the unit stands for (a Pod 1, a template its controller's count), < 0
 * when it stands for none (a DRA claim) */
static int entry(cJSON *out, unsigned *mask, const gpa_policy *old_p, const gpa_policy *new_p,
                 const cJSON *obj, const char *template_path, const char *judged_as,
                 long long replicas, gpa_error *err)
{
    /* One set judged against itself (`audit`) is judged once: its two sides are equal. */
    bool same = old_p == new_p;
    gpa_judgement o, n = {0};
    int rc = judge_one(&o, old_p, obj, GPA_JUDGE_BOTH, err);
    if (rc != GPA_OK) return rc;
    if (!same) rc = judge_one(&n, new_p, obj, GPA_JUDGE_BOTH, err);
    if (rc != GPA_OK) {
        gpa_judgement_clear(&o);
        return rc;
    }
    if (o.judged || n.judged) {
        cJSON *e = cJSON_CreateObject();
        cJSON *so = summary(old_p, &o), *sn = same ? cJSON_Duplicate(so, 1) : summary(new_p, &n);
        unsigned m = so && sn ? compare(so, sn) : 0;
        cJSON *ch = e ? cJSON_AddArrayToObject(e, "changes") : NULL;
        bool ok = e && so && sn && ch;
        static const char *names[] = {"denied", "allowed", "rule", "pool", "resources", "warnings"};
        for (int b = 0; ok && b < 6; b++) {
            if (!(m & (1u << b))) continue;
            cJSON *x = cJSON_CreateString(names[b]);
            if (!x || !cJSON_AddItemToArray(ch, x)) {
                cJSON_Delete(x);
                ok = false;
            }
        }
        if (ok && template_path) ok = cJSON_AddStringToObject(e, "template", template_path);
        if (ok) ok = cJSON_AddStringToObject(e, "judgedAs", judged_as) != NULL;
        if (ok && replicas >= 0)
            ok = cJSON_AddNumberToObject(e, "replicas", (double)replicas) != NULL;
        /* each handed over as it is added: what is not added yet is freed below */
        if (ok && (ok = cJSON_AddItemToObject(e, "old", so))) so = NULL;
        if (ok && (ok = cJSON_AddItemToObject(e, "new", sn))) sn = NULL;
        if (ok && (ok = cJSON_AddItemToArray(out, e))) e = NULL;
        cJSON_Delete(e);
        cJSON_Delete(so);
        cJSON_Delete(sn);
        if (!ok)
            rc = gpa_fail(err, GPA_ENOMEM, "out of memory");
        else if (mask)
            *mask |= m;
    }
    gpa_judgement_clear(&o);
    gpa_judgement_clear(&n);
    return rc;
}

static int workload_entries(cJSON *out, unsigned *mask, const gpa_policy *old_p,
                            const gpa_policy *new_p, const cJSON *obj, gpa_error *err)
{
    /* Templates as each set sees them (a kind may be added by spec.workloads.kinds in one
     * set only); judged once per path, the new set's view first. */
    gpa_workload_templates *tn = NULL, *to = NULL;
    int rc = gpa_workload_templates_read(&tn, new_p, obj, NULL, err);
    if (rc == GPA_OK) rc = gpa_workload_templates_read(&to, old_p, obj, NULL, err);
    for (size_t i = 0; rc == GPA_OK && i < gpa_workload_templates_count(tn); i++) {
        const gpa_workload_template *t = gpa_workload_templates_get(tn, i);
        rc = entry(out, mask, old_p, new_p, t->pod, t->path, "original", t->replicas, err);
    }
    for (size_t i = 0; rc == GPA_OK && i < gpa_workload_templates_count(to); i++) {
        const gpa_workload_template *t = gpa_workload_templates_get(to, i);
        bool seen = false;
        for (size_t k = 0; k < gpa_workload_templates_count(tn) && !seen; k++)
            seen = strcmp(gpa_workload_templates_get(tn, k)->path, t->path) == 0;
        if (!seen)
            rc = entry(out, mask, old_p, new_p, t->pod, t->path, "original", t->replicas, err);
    }
    gpa_workload_templates_free(tn);
    gpa_workload_templates_free(to);
    return rc;
}

int gpa_impact_object(cJSON **out, unsigned *mask, const gpa_policy *old_p, const gpa_policy *new_p,
                      const cJSON *obj, gpa_error *err)
{
    *out = cJSON_CreateArray();
    if (mask) *mask = 0;
    if (!*out) return gpa_fail(err, GPA_ENOMEM, "out of memory");
    const char *kind = str(obj, "kind"), *av = str(obj, "apiVersion");
    int rc = GPA_OK;
    if (kind && strcmp(kind, "Pod") == 0 && (!av || strcmp(av, "v1") == 0)) {
        cJSON *pod = without_server_fields(obj);
        if (!pod) rc = gpa_fail(err, GPA_ENOMEM, "out of memory");
        const char *as = "original";
        cJSON *orig = NULL;
        if (rc == GPA_OK && was_mutated(pod)) {
            orig = reconstruct(old_p, pod, err, &rc);
            as = orig ? "reconstructed" : "as-is";
        }
        if (rc == GPA_OK) rc = entry(*out, mask, old_p, new_p, orig ? orig : pod, NULL, as, 1, err);
        cJSON_Delete(orig);
        cJSON_Delete(pod);
    } else if (kind && (gpa_workload_kind_known(new_p, av, kind) ||
                        gpa_workload_kind_known(old_p, av, kind))) {
        rc = workload_entries(*out, mask, old_p, new_p, obj, err);
    } else if (gpa_claim_object_kind(obj) != GPA_CLAIM_NONE) {
        /* A DRA claim the old set placed has its class and selectors rewritten, and the
         * request it was created with is not rebuilt: judged as stored ("as-is"). */
        cJSON *claim = without_server_fields(obj);
        if (!claim)
            rc = gpa_fail(err, GPA_ENOMEM, "out of memory");
        else
            rc = entry(*out, mask, old_p, new_p, claim, NULL,
                       was_mutated(claim) ? "as-is" : "original", -1, err);
        cJSON_Delete(claim);
    }
    if (rc != GPA_OK) {
        cJSON_Delete(*out);
        *out = NULL;
    }
    return rc;
}
