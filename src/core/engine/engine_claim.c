/*
 * engine_claim.c - a DRA ResourceClaim or ResourceClaimTemplate judged per tenant (POLICY.md
 * "Dynamic Resource Allocation"): the claim reader's view (k8s/claim.h), the same rules and
 * tenancy as pods (engine_match.c, with the claim's labels and annotations standing in for a
 * pod's), the checks every claim gets on both webhooks, and enforcement by spec.dra.
 * The mutation itself is engine_claim_mutate.c.
 *
 * Must never: touch a claim the scheduler made for an extended resource, judge a request that
 * names no GPU class, take tenant or trust from the claim alone, or let a claim the reader
 * refused through unjudged (it is denied with the reader's message).
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpu_admission/claim.h"
#include "gpu_admission/quantity.h"
#include "engine/engine_claim.h"
#include "policy/policy_shared_nodes.h"

gpa_claim_kind_t gpa_claim_object_kind(const cJSON *obj)
{
    return (gpa_claim_kind_t)gpa_claim_kind_of(obj);
}

bool gpa_policy_judges_claims(const gpa_policy *p)
{
    /* Without spec.dra too (POLICY.md "Isolation by default"): adminAccess, allocationMode All,
     * unknown classes and shared devices are judged for every claim; only an explicit
     * dra.enforcement: off turns claims off. */
    return p && !(p->dra.set && p->dra.enforcement == GPA_DRA_OFF);
}

/* What a namespace's own tenant may ask of DRA (never a tenant whose name it took). */
typedef struct claim_rights {
    bool may_admin, may_all;
    const char *who, *nowhere; /* "tenant", "" or "namespace", " (in no tenant)" */
} claim_rights;

/* adminAccess and allocationMode All, asked by one request: judged for every request of
 * every claim, placed or not, GPU class or not (POLICY.md "Isolation by default"). */
static void check_rights(gpa_eng *e, const gpa_claim_alt *x, const claim_rights *r)
{
    if (x->admin_access && !r->may_admin)
        gpa_eng_violation(e, "dra-admin-access",
                          "%s asks adminAccess, which reaches devices other claims (of any "
                          "namespace) are using, and %s %s%s may not; remove adminAccess "
                          "or ask the platform team for the tenant's dra.adminAccess",
                          x->label, r->who, e->tenant, r->nowhere);
    if (x->mode_all && !r->may_all)
        gpa_eng_violation(e, "dra-allocation-all",
                          "%s asks allocationMode All (every matching device of a node) and "
                          "%s %s%s may not; ask a count instead, or ask the platform team "
                          "for the tenant's dra.allocationModeAll",
                          x->label, r->who, e->tenant, r->nowhere);
}

static const char *ann(const gpa_claim *c, const char *key)
{
    const cJSON *maps[2] = {c->annotations, c->own_annotations};
    for (int i = 0; i < 2; i++) {
        const cJSON *v = maps[i] ? gpa_jn_get(maps[i], key) : NULL;
        if (gpa_is_string(v)) return v->valuestring;
    }
    return NULL;
}

/* Devices the claim asks for, over its GPU requests: count summed, a firstAvailable request
 * counted at its largest GPU alternative, allocationMode All as unbounded (INT64_MAX: it
 * matches no gpus.max, as POLICY.md says). */
static int64_t gpu_devices(gpa_claim_eng *ce)
{
    int64_t total = 0;
    for (size_t r = 0; r < ce->c->n_requests; r++) {
        const gpa_claim_request *q = &ce->c->req[r];
        int64_t most = 0;
        for (size_t a = q->first_alt; a < q->first_alt + q->n_alts; a++) {
            if (!ce->gpu_alt[a]) continue;
            const gpa_claim_alt *x = &ce->c->alt[a];
            int64_t n = x->mode_all ? INT64_MAX : x->count;
            if (n > most) most = n;
        }
        total = gpa_count_add(total, most);
    }
    return total;
}

static const char *share_name(gpa_dra_share s)
{
    return s == GPA_DRA_SHARE_MPS ? "MPS" : "TimeSlicing";
}

/* The offered profiles of a MIG pool, "1g.10gb, 2g.20gb", cut after a whole profile with
 * ", ..." when they do not fit in cap (never inside a profile name, which would read as
 * another profile). */
static void offered(char *buf, size_t cap, const gpa_pool *pool)
{
    size_t at = 0;
    buf[0] = '\0';
    for (size_t i = 0; i < pool->n_profiles; i++) {
        const char *nm = pool->profiles[i]->name;
        size_t need = strlen(nm) + (i ? 2 : 0);
        if (at + need + 6 > cap) { /* room for ", ..." and the NUL */
            snprintf(buf + at, cap - at, "%s...", i ? ", " : "");
            return;
        }
        at += (size_t)snprintf(buf + at, cap - at, "%s%s", i ? ", " : "", nm);
    }
}

/* POLICY.md "Isolation by default" for claims: a request not placed in a multiAllocatable
 * pool must not be allocated its devices. The mutating hook adds the exclusion selector
 * (gpa_claim_mutate), so there only a pool with no selectors is refused; the validating hook
 * reads the claim as it is. */
static void check_shared_devices(gpa_claim_eng *ce, bool mutating)
{
    gpa_eng *e = &ce->e;
    const gpa_claim *c = ce->c;
    const char *what = c->is_template ? "claim template" : "claim";
    const gpa_pool *pl = gpa_claim_placed_pool(e);
    for (size_t a = 0; a < c->n_alts; a++) {
        if (!ce->gpu_alt[a]) continue;
        const gpa_claim_alt *x = &c->alt[a];
        size_t from = 0;
        const gpa_pool *sp;
        while ((sp = gpa_claim_shared_pool(ce, x, &from, false))) {
            char who[160];
            if (pl)
                snprintf(who, sizeof who, "rule %s places this %s in pool %s, not %s",
                         e->rule->name, what, pl->name, sp->name);
            else
                snprintf(who, sizeof who, "no rule places this %s in pool %s", what, sp->name);
            bool asks = sp->dra.selectors.n > 0;
            for (size_t i = 0; asks && i < sp->dra.selectors.n; i++)
                asks = gpa_claim_has_selector(x, sp->dra.selectors.items[i]);
            if (asks)
                gpa_eng_violation(e, "shared-pool-unplaced",
                                  "%s selects the devices of pool %s (its selectors hold all of "
                                  "the pool's), which claims of other namespaces share "
                                  "(multiAllocatable), but %s; remove those selectors, or ask "
                                  "the platform team for a rule that places the %s there",
                                  x->label, sp->name, who, what);
            else if (!sp->dra.exclude_cel)
                gpa_eng_violation(e, "shared-pool-unplaced",
                                  "%s may be allocated any device of class %s, and pool %s's "
                                  "devices of that class are shared by claims of other "
                                  "namespaces (multiAllocatable) with no dra.selectors to tell "
                                  "them apart; %s: ask the platform team to give pool %s "
                                  "dra.selectors",
                                  x->label, sp->dra.device_class, sp->name, who, sp->name);
            else if (!mutating)
                gpa_eng_violation(e, "shared-pool-unplaced",
                                  "%s may be allocated a device of pool %s, which claims of other "
                                  "namespaces share (multiAllocatable), and %s; let the mutating "
                                  "webhook add the selector %s (is it enabled for namespace "
                                  "%s?)",
                                  x->label, sp->name, who, sp->dra.exclude_cel, e->ns);
            else
                continue;
            return; /* one pool is enough to say what to do */
        }
    }
}

/* The checks POLICY.md lists, on the claim as given (both webhooks; the mutating one sees
 * the denial early, the validating one holds even when the mutating one was skipped). */
static void check_claim(gpa_claim_eng *ce, bool mutating)
{
    gpa_eng *e = &ce->e;
    const gpa_claim *c = ce->c;
    const gpa_policy *p = e->p;
    const char *what = c->is_template ? "claim template" : "claim";

    /* Opaque configs of the NVIDIA driver, on every claim: the driver reads them whatever
     * class the request names. */
    for (size_t i = 0; i < c->n_configs; i++) {
        const gpa_claim_config *g = &c->cfg[i];
        if (g->kind == GPA_OPAQUE_INVALID)
            gpa_eng_violation(e, "dra-opaque-config",
                              "config[%zu] for %s: %s; write a GpuConfig, MigDeviceConfig or "
                              "VfioDeviceConfig of %s as the NVIDIA DRA driver documents it",
                              i, GPA_DRA_NVIDIA_DRIVER, g->error, GPA_DRA_NVIDIA_API);
    }
    /* Every request of every claim, placed or not, GPU class or not, with or without spec.dra
     * (POLICY.md "Isolation by default"): tenants have only the DRA rights the policy gives. */
    gpa_eng_tenancy(e);
    /* rights come with the namespace's own tenant, never with a name (a namespace in no
     * tenant has none) */
    const gpa_tenant *t = e->tenant_def;
    const claim_rights rights = {t && t->dra_admin_access, t && t->dra_allocation_mode_all,
                                 /* "tenant platform may not" would blame the tenant whose
                                  * name was taken */
                                 e->taken ? "namespace" : "tenant",
                                 e->taken ? " (in no tenant)" : ""};
    const bool untrusted = e->trust != GPA_TRUST_TRUSTED;
    /* a GPU request's rights are judged with its placement below, in request order */
    for (size_t a = 0; a < c->n_alts; a++) {
        const gpa_claim_alt *x = &c->alt[a];
        if (ce->gpu_alt[a]) continue;
        if (untrusted) {
            char fix[160];
            if (p->dra.generic_classes.n)
                snprintf(fix, sizeof fix,
                         "name %s, or ask the platform team for a pool of that "
                         "class",
                         p->dra.generic_classes.items[0]);
            else if (p->dra.set)
                snprintf(fix, sizeof fix,
                         "name a pool's dra.deviceClass, or ask the platform "
                         "team for a pool of that class");
            else
                snprintf(fix, sizeof fix,
                         "the policy knows no DRA class (it has no spec.dra): "
                         "ask the platform team to add one");
            gpa_eng_violation(e, "unknown-device-class",
                              "%s asks device class %s, which the GPU policy does not know, and "
                              "the %s is untrusted: a class such as NVIDIA's %s hands out "
                              "devices outside every pool's isolation; %s",
                              x->label, x->device_class ? x->device_class : "(none)", what,
                              "vfio.gpu.nvidia.com", fix);
        }
        check_rights(e, x, &rights); /* any class */
    }
    if (!ce->gpu) return;

    gpa_eng_tenancy(e);
    if (e->taken)
        gpa_eng_violation(e, "tenant-name-taken",
                          "namespace %s is in no tenant but carries the name of tenant %s: it "
                          "would pass for that tenant (its rules and DRA rights), so its GPU "
                          "claims are refused; the policy must claim the namespace in tenant "
                          "%s's namespaces, or rename the tenant",
                          e->ns, e->taken->name, e->taken->name);
    if (e->mem_bad)
        gpa_eng_violation(e, "bad-quantity",
                          "annotation %s: \"%s\" is not a Kubernetes quantity; write e.g. 8Gi",
                          GPA_ANN_GPU_MEMORY, ann(c, GPA_ANN_GPU_MEMORY));
    if (e->taken) {
        /* the denial above says it all: no "unmatched" beside it */
    } else if (e->rule && e->rule->deny_message) {
        gpa_eng_violation(e, "rule-deny", "denied by GPU policy rule %s: %s", e->rule->name,
                          e->rule->deny_message);
    } else if (!e->rule && p->unmatched_deny && p->dra.set) {
        char n[24] = "all";
        if (e->gpus != INT64_MAX) snprintf(n, sizeof n, "%" PRId64, e->gpus);
        gpa_eng_violation(e, "unmatched",
                          "no GPU policy rule matches this %s (namespace %s, %s device(s)) and "
                          "unmatched GPU claims are denied; ask the platform team for a rule "
                          "that covers it",
                          what, e->ns, n);
    }

    const gpa_pool *pool = e->pool;

    if (pool && pool->dra.none)
        gpa_eng_violation(e, "dra-pool-class",
                          "rule %s places GPU claims in pool %s, which serves no DRA (dra.enabled: "
                          "false); ask for the GPU as a pod resource, or ask the platform team "
                          "for a rule placing claims of namespace %s in a DRA pool",
                          e->rule->name, pool->name, e->ns);
    else if (pool && !pool->dra.set)
        gpa_eng_violation(e, "dra-pool-class",
                          "rule %s places GPU claims in pool %s, which has no dra.deviceClass; "
                          "ask the platform team to give the pool a dra block",
                          e->rule->name, pool->name);
    if (pool && pool->dra.set && pool->dra.multi_allocatable && untrusted &&
        !pool->dra.allow_untrusted)
        gpa_eng_violation(e, "dra-untrusted-shared",
                          "untrusted claims may not share a GPU of pool %s: its devices allow "
                          "multiple allocations (claims of other namespaces on the same GPU, no "
                          "memory or fault isolation); ask for a MIG device instead, or run it "
                          "from a trusted namespace",
                          pool->name);

    char prof[64], list[256];
    for (size_t a = 0; a < c->n_alts; a++) {
        if (!ce->gpu_alt[a]) continue;
        const gpa_claim_alt *x = &c->alt[a];
        check_rights(e, x, &rights);
        if (!pool || !pool->dra.set) continue;
        if (!gpa_dra_is_generic(p, x->device_class) &&
            strcmp(x->device_class, pool->dra.device_class) != 0) {
            /* "or the generic X" only when X is another name than the pool's own class */
            const char *g = p->dra.generic_classes.n ? p->dra.generic_classes.items[0] : NULL;
            if (g && strcmp(g, pool->dra.device_class) == 0) g = NULL;
            gpa_eng_violation(e, "dra-class-mismatch",
                              "%s asks device class %s but rule %s places the %s in pool %s, "
                              "whose class is %s; name %s%s%s",
                              x->label, x->device_class, e->rule->name, what, pool->name,
                              pool->dra.device_class, pool->dra.device_class,
                              g ? " or the generic " : "", g ? g : "");
        }
        if (pool->sharing == GPA_SHARING_MIG && pool->mig_model &&
            gpa_claim_alt_profile(x, prof, sizeof prof)) {
            bool ok = false;
            for (size_t i = 0; i < pool->n_profiles && !ok; i++)
                ok = strcmp(pool->profiles[i]->name, prof) == 0;
            if (!ok) {
                offered(list, sizeof list, pool);
                gpa_eng_violation(e, "dra-mig-profile",
                                  "%s selects MIG profile %s, which pool %s does not offer (%s); "
                                  "select one of those, or drop the selector and let the "
                                  "webhook size it",
                                  x->label, prof, pool->name, list);
            }
        }
        for (size_t i = 0; i < c->n_configs; i++) {
            const gpa_claim_config *g = &c->cfg[i];
            if (g->sharing == GPA_DRA_SHARE_NONE || !untrusted || !pool->dra.multi_allocatable)
                continue;
            if (!gpa_claim_config_applies(c, g, x)) continue;
            gpa_eng_violation(e, "dra-untrusted-sharing",
                              "config[%zu] asks %s sharing for %s on pool %s, whose GPUs other "
                              "namespaces' claims may share, and the %s is untrusted (no memory "
                              "or fault isolation); remove the sharing config",
                              i, share_name(g->sharing), x->label, pool->name, what);
        }
    }
    gpa_claim_check_configs(ce, mutating ? gpa_claim_placed_pool(e) : NULL);
    if (pool && pool->sharing == GPA_SHARING_MIG && e->has_mem) {
        const gpa_mig_profile *largest = NULL;
        for (size_t i = 0; i < pool->n_profiles; i++)
            if (!largest || pool->profiles[i]->mem_bytes > largest->mem_bytes)
                largest = pool->profiles[i];
        if (!e->mig || !largest || largest->mem_bytes < e->mem_bytes)
            gpa_eng_violation(e, "mig-memory",
                              "%s %s is more than any MIG profile pool %s offers (largest: %s); "
                              "lower the annotation or ask for whole GPUs in another pool",
                              GPA_ANN_GPU_MEMORY, ann(c, GPA_ANN_GPU_MEMORY), pool->name,
                              largest ? largest->name : "none");
    }
    /* a claim refused anyway needs no second reason */
    if (e->n_viol == 0 || p->dra.enforcement != GPA_DRA_DENY) check_shared_devices(ce, mutating);
}

/* POLICY.md's enforcement, by spec.dra.enforcement: deny refuses (and drops the patch), warn
 * turns each violation into a warning. */
static int finish(gpa_claim_eng *ce, gpa_error *err)
{
    gpa_eng *e = &ce->e;
    gpa_decision *d = e->d;
    d->rule = e->rule ? e->rule->name : NULL;
    d->pool = e->pool ? e->pool->name : NULL;
    if (e->rule) {
        gpa_eng_audit(e, "rule", e->rule->name);
        if (e->pool) gpa_eng_audit(e, "pool", e->pool->name);
    }
    if (e->n_viol > 0) {
        size_t len = 1;
        for (size_t i = 0; i < e->n_viol; i++)
            len += strlen(e->viol[i].message) + 2;
        char *s = malloc(len);
        if (!s) {
            e->oom = true;
        } else {
            size_t at = 0;
            for (size_t i = 0; i < e->n_viol; i++)
                at += (size_t)snprintf(s + at, len - at, "%s%s", i ? "; " : "", e->viol[i].message);
            d->message = s;
            d->reason = e->viol[0].reason;
            gpa_eng_audit(e, "violation", s);
        }
        for (size_t i = 0; i < e->n_viol; i++) {
            gpa_eng_explain(e, "violation %s: %s", e->viol[i].reason, e->viol[i].message);
            if (e->p->dra.enforcement == GPA_DRA_WARN)
                gpa_eng_warn(e, "policy violation (warn): %s", e->viol[i].message);
        }
        if (e->p->dra.enforcement == GPA_DRA_DENY) {
            d->allowed = false;
            cJSON_Delete(d->mutated);
            d->patch = NULL;
            d->mutated = NULL;
        } else {
            gpa_eng_explain(e, "dra.enforcement warn: the claim is allowed despite the violation");
        }
    }
    free(e->viol);
    e->viol = NULL;
    if (e->oom) {
        gpa_decision_clear(d);
        return gpa_fail(err, GPA_ENOMEM, "engine: out of memory");
    }
    return GPA_OK;
}

/* An UPDATE that changes nothing the decision reads (spec, labels, the gpu-memory
 * annotation) is not judged again: the claim's spec is immutable, and the controllers that
 * add finalizers to a claim must not be refused for what the policy said at its CREATE.
 * Neither hook changes it (no patch): the stored object was placed when it was written. */
static bool same(const cJSON *a, const cJSON *b)
{
    return a == b || (a && b && cJSON_Compare(a, b, 1)); /* cJSON_Compare(NULL, NULL) is false */
}

static bool update_changes_nothing(const gpa_request *req, gpa_claim_kind_t kind)
{
    const cJSON *o = req->object, *old = req->old_object;
    if (!gpa_is_object(old)) return false;
    if (!same(gpa_jn_get(o, "spec"), gpa_jn_get(old, "spec"))) return false;
    if (kind == GPA_CLAIM_TEMPLATE) return true; /* labels live in spec.metadata */
    const cJSON *m = gpa_jn_get(o, "metadata"), *om = gpa_jn_get(old, "metadata");
    if (!same(gpa_jn_get(m, "labels"), gpa_jn_get(om, "labels"))) return false;
    return same(gpa_jn_get(gpa_jn_get(m, "annotations"), GPA_ANN_GPU_MEMORY),
                gpa_jn_get(gpa_jn_get(om, "annotations"), GPA_ANN_GPU_MEMORY));
}

int gpa_engine_claim(gpa_decision *out, bool *judged, const gpa_policy *p, const gpa_request *req,
                     gpa_claim_kind_t kind, bool mutate, gpa_error *err)
{
    *judged = false;
    if (!out || !p || !req || kind == GPA_CLAIM_NONE)
        return gpa_fail(err, GPA_EINVAL, "engine: missing decision, policy, request or kind");
    memset(out, 0, sizeof *out);
    out->allowed = true;
    if (!gpa_policy_judges_claims(p)) return GPA_OK;
    /* UPDATE on both hooks (POLICY.md, amended December 2026): re-applying the original
     * manifest sends the generic class back, and only placing it again makes it the stored
     * (immutable) spec; an UPDATE is judged and placed exactly as a CREATE would be. */
    if (req->op != GPA_OP_CREATE && req->op != GPA_OP_UPDATE) return GPA_OK;
    if (!gpa_is_object(req->object))
        return gpa_fail(err, GPA_EINVAL, "engine: the request carries no claim object");
    if (req->op == GPA_OP_UPDATE && update_changes_nothing(req, kind)) return GPA_OK;

    gpa_claim_eng *ce = malloc(sizeof *ce);
    gpa_claim *c = malloc(sizeof *c);
    if (!ce || !c) {
        free(ce);
        free(c);
        return gpa_fail(err, GPA_ENOMEM, "engine: out of memory");
    }
    memset(ce, 0, offsetof(gpa_claim_eng, gpu_alt));
    ce->c = c;
    gpa_eng *e = &ce->e;
    gpa_eng_init(e, out, p, req);
    e->claim = true;
    char why[256];
    int rrc = gpa_claim_read(c, req->object, kind == GPA_CLAIM_TEMPLATE, why, sizeof why);
    if (rrc == 0 && c->extended_resource_claim && gpa_dra_scheduler_user(p, req->user)) {
        /* the scheduler's own claim for an extended resource: the pod it serves was judged */
        free(c);
        free(ce);
        memset(out, 0, sizeof *out);
        out->allowed = true;
        return GPA_OK;
    }
    /* Anyone may write the annotation: from another user it is judged like any claim, or a
     * tenant would mark its own adminAccess claim as the scheduler's and pass unjudged. */
    if (rrc == 0 && c->extended_resource_claim)
        gpa_eng_explain(e,
                        "annotation %s from %s, not the scheduler (spec.dra.schedulerUsers): "
                        "judged as any claim",
                        "resource.kubernetes.io/extended-resource-claim",
                        req->user ? req->user : "an unknown user");
    *judged = true;
    const char *what = kind == GPA_CLAIM_TEMPLATE ? "ResourceClaimTemplate" : "ResourceClaim";
    if (rrc != 0) {
        gpa_eng_violation(e, "claim-invalid", "invalid %s: %s", what, why);
        int rc = finish(ce, err);
        free(c);
        free(ce);
        return rc;
    }
    /* the claim's labels and annotations (a template's spec.metadata) stand in for a pod's */
    e->orig.labels = c->labels;
    e->orig.annotations = c->annotations;

    size_t n_gpu = 0;
    for (size_t a = 0; a < c->n_alts; a++) {
        const char *cls = c->alt[a].device_class;
        ce->gpu_alt[a] = gpa_dra_is_generic(p, cls) || gpa_dra_pool_of_class(p, cls);
        n_gpu += ce->gpu_alt[a];
        gpa_eng_explain(e, "%s: device class %s: %s", c->alt[a].label, cls,
                        !ce->gpu_alt[a]              ? "not a GPU class of the policy"
                        : gpa_dra_is_generic(p, cls) ? "generic (placement names the pool's)"
                                                     : "a pool's class");
    }
    ce->gpu = n_gpu > 0;
    out->gpu_pod = ce->gpu;
    const char *mem = ann(c, GPA_ANN_GPU_MEMORY);
    if (mem) {
        gpa_quantity q;
        if (gpa_quantity_parse(&q, mem, strlen(mem), NULL) == GPA_OK && q.milli >= 0) {
            e->has_mem = true;
            e->mem_bytes = gpa_quantity_value(&q);
            e->mem_text = mem;
        } else {
            e->mem_bad = true;
        }
    }
    if (ce->gpu && p->dra.set) {
        e->gpus = gpu_devices(ce);
        e->matched_done = false;
        gpa_eng_match(e);
    } else if (ce->gpu) {
        gpa_eng_explain(e, "the policy has no spec.dra: no rule places claims; only the checks "
                           "every claim gets apply");
    } else {
        gpa_eng_explain(e, "the %s asks for no GPU class: no rule applies",
                        kind == GPA_CLAIM_TEMPLATE ? "claim template" : "claim");
    }
    check_claim(ce, mutate);
    /* a claim refused under deny gets no change lines: nothing changes */
    if (mutate && ce->gpu && (e->n_viol == 0 || p->dra.enforcement == GPA_DRA_WARN))
        gpa_claim_mutate(ce);
    int rc = finish(ce, err);
    free(c);
    free(ce);
    return rc;
}
