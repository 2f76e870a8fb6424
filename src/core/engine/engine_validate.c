/*
 * engine_validate.c - the checks of POLICY.md "What the validating webhook denies", run on
 * the pod as it will be stored: by the validating webhook on the incoming pod, and by the
 * mutating webhook on its own mutated copy (so `mutate` shows denials early).
 *
 * Must never depend on the mutating webhook having run (every check reads only the final
 * spec plus the policy), never take trust from the pod alone, and never check spec on
 * UPDATE (a pod's spec is immutable; only labels/annotations can change). Each message says
 * why and what to do.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/engine_internal.h"
#include "policy/policy_dra.h"
#include "policy/policy_gang.h"
#include "policy/policy_isolation.h"
#include "policy/policy_reach.h"

/* The quantity as the user wrote it, for messages. */
static const char *qty_text(const cJSON *v, char *buf, size_t cap)
{
    if (gpa_is_string(v)) return v->valuestring;
    if (gpa_is_number(v)) {
        snprintf(buf, cap, "%.17g", v->valuedouble);
        return buf;
    }
    return v ? (gpa_is_null(v) ? "null" : "(not a quantity)") : "(none)";
}

static bool is_shared(const gpa_pool *p)
{
    return p && (p->sharing == GPA_SHARING_TIME_SLICING || p->sharing == GPA_SHARING_MPS);
}

/* What the pool hands out, for messages: "nvidia.com/mig-1g.10gb, nvidia.com/mig-2g.20gb". */
static void served_text(const gpa_pool *p, char *buf, size_t cap)
{
    if (p->sharing == GPA_SHARING_MIG && p->mig_strategy == GPA_MIG_MIXED) {
        size_t at = 0;
        buf[0] = '\0';
        for (size_t i = 0; i < p->n_profiles && at + 1 < cap; i++) {
            int n = snprintf(buf + at, cap - at, "%s%s", i ? ", " : "", p->profiles[i]->resource);
            if (n < 0) break;
            at += (size_t)n;
        }
        return;
    }
    snprintf(buf, cap, "%s", is_shared(p) ? p->shared_resource : GPA_RES_GPU);
}

/* The time-slicing/mps pool a resource name belongs to when no rule placed the pod: its
 * shared resource, or a DRA extended resource of its dra.deviceClass. */
static const gpa_pool *shared_pool_of(const gpa_policy *p, const char *name)
{
    if (gpa_is_plain_gpu(p, name))
        return NULL; /* plain GPUs are never assumed shared without a placement */
    for (size_t i = 0; i < p->n_pools; i++)
        if (is_shared(&p->pools[i]) && strcmp(p->pools[i].shared_resource, name) == 0)
            return &p->pools[i];
    const gpa_dra_ext *x = gpa_dra_ext_of(p, name);
    for (size_t i = 0; x && x->pool && i < p->n_pools; i++)
        if (is_shared(&p->pools[i]) && p->pools[i].dra.set &&
            strcmp(p->pools[i].dra.device_class, x->device_class) == 0)
            return &p->pools[i];
    return NULL;
}

static const char *sharing_words(const gpa_pool *p)
{
    return p->sharing == GPA_SHARING_MPS ? "an MPS share" : "a time-slicing replica";
}

/* Resource checks of one container; returns the shared pool it uses, if any. */
static const gpa_pool *check_container(gpa_eng *e, const cJSON *c, const char *cname, bool create)
{
    const gpa_pool *pool = e->pool, *shared = NULL;
    gpa_ctr_gpus scan;
    const gpa_ctr_gpus *g = gpa_ctr_gpus_cached(&e->scans, &scan, e->p, c);
    if (g->overflow && create)
        gpa_eng_violation(e, "bad-quantity",
                          "container %s asks for more than %d kinds of GPU resources; ask for "
                          "one kind",
                          cname, GPA_POD_MAX_GPU_RES);
    int64_t n_shared = 0, n_mig = 0;
    const char *shared_name = NULL;
    char b1[40], b2[40];
    for (size_t i = 0; i < g->n; i++) {
        const gpa_gpu_res *r = &g->res[i];
        if (create && r->bad) {
            const cJSON *badv = r->limit;
            int64_t tmp;
            if (!badv || gpa_gpu_qty(&tmp, badv)) badv = r->request;
            gpa_eng_violation(e, "bad-quantity",
                              "container %s asks %s: %s, which is not a whole non-negative "
                              "number of devices; ask for a whole number (a MIG profile or a "
                              "shared pool gives a fraction of a GPU)",
                              cname, r->name, qty_text(badv, b1, sizeof b1));
        } else if (create && r->mismatch) {
            gpa_eng_violation(e, "requests-limits",
                              "container %s: requests %s=%s differ from limits (%s); set "
                              "requests equal to limits or leave requests out",
                              cname, r->name, qty_text(r->request, b1, sizeof b1),
                              qty_text(r->limit, b2, sizeof b2));
        }
        const gpa_pool *sp = NULL;
        if (pool && is_shared(pool))
            sp = pool; /* whatever it asks, it runs on the shared pool */
        else if (!pool)
            sp = shared_pool_of(e->p, r->name);
        if (sp) {
            shared = sp;
            shared_name = r->name;
            n_shared = gpa_count_add(n_shared, r->count);
        }
        if ((!pool || (pool->sharing == GPA_SHARING_MIG && pool->mig_strategy == GPA_MIG_MIXED)) &&
            gpa_is_mig_resource(r->name))
            n_mig = gpa_count_add(n_mig, r->count);
        if (pool && pool->sharing == GPA_SHARING_MIG && pool->mig_strategy == GPA_MIG_SINGLE &&
            gpa_is_plain_gpu(e->p, r->name))
            n_mig = gpa_count_add(n_mig, r->count);
        /* a MIG pool's DeviceClass asked by its DRA extended resource: MIG devices too */
        const gpa_dra_ext *dx = gpa_dra_ext_of(e->p, r->name);
        if (dx && !dx->generic && dx->pool && dx->pool->sharing == GPA_SHARING_MIG)
            n_mig = gpa_count_add(n_mig, r->count);
    }
    if (create && n_shared > 1)
        gpa_eng_violation(e, "shared-count",
                          "container %s asks %" PRId64 " of %s: %s is not a bigger GPU; ask for "
                          "1 per container, or for whole GPUs in a pool that has them",
                          cname, n_shared, shared_name, sharing_words(shared));
    if (create && n_mig > 1)
        gpa_eng_violation(e, "mig-count",
                          "container %s asks %" PRId64 " MIG devices but a CUDA process sees only "
                          "one; ask for 1 per container and size it with the %s annotation",
                          cname, n_mig, GPA_ANN_GPU_MEMORY);
    return shared;
}

/* The pod's own gpu-admission.io labels the checks read. */
typedef struct own_labels {
    const char *pool, *tenant, *trust; /* string values, NULL when absent */
} own_labels;

/* gpa_pod_label of the three in one pass over the labels (the first of a repeated key
 * counts, as with a lookup). */
static own_labels read_own_labels(const gpa_pod *v)
{
    own_labels o = {NULL, NULL, NULL};
    unsigned seen = 0;
    const size_t pre = sizeof "gpu-admission.io/" - 1;
    const cJSON *c;
    cJSON_ArrayForEach(c, v->labels) {
        const char *k = c->string;
        /* all three begin "gpu-admission.io/"; most labels differ at the first byte */
        if (!k || k[0] != 'g' || strncmp(k, "gpu-admission.io/", pre) != 0) continue;
        const char **slot = NULL;
        unsigned bit = 0;
        if (strcmp(k, GPA_LABEL_POOL) == 0)
            slot = &o.pool, bit = 1;
        else if (strcmp(k, GPA_LABEL_TENANT) == 0)
            slot = &o.tenant, bit = 2;
        else if (strcmp(k, GPA_LABEL_TRUST) == 0)
            slot = &o.trust, bit = 4;
        if (!slot || (seen & bit)) continue;
        seen |= bit;
        *slot = gpa_is_string(c) ? c->valuestring : NULL;
    }
    return o;
}

static void check_shared(gpa_eng *e, const gpa_pod *v, const own_labels *own, const gpa_pool *sp,
                         bool create)
{
    gpa_eng_tenancy(e);
    const char *pl = own->pool, *tl = own->tenant;
    if (!create) {
        /* an update may only be judged on what it changes: labels */
        if (pl && tl) return;
        gpa_pod old;
        gpa_pod_init(&old, e->req->old_object);
        if (e->req->old_object &&
            !(gpa_pod_label(&old, GPA_LABEL_POOL) && gpa_pod_label(&old, GPA_LABEL_TENANT)))
            return;
        gpa_eng_violation(e, "isolation-missing",
                          "this update removes label %s from a pod on shared resource %s of "
                          "pool %s: other tenants' anti-affinity relies on it; keep the label",
                          pl ? GPA_LABEL_TENANT : GPA_LABEL_POOL, sp->shared_resource, sp->name);
        return;
    }
    if (e->trust == GPA_TRUST_UNTRUSTED && !sp->allow_untrusted) {
        /* advice only from what the policy offers this namespace (policy_reach_offer.c) */
        char res[160], how[512];
        bool none;
        if (gpa_reach_mig_offer(e->p, e->ns, res, sizeof res, how, sizeof how, &none) != GPA_OK) {
            e->oom = true;
            return;
        }
        const char *kind = sp->sharing == GPA_SHARING_MPS ? "an MPS" : "a time-sliced";
        if (none)
            gpa_eng_violation(e, "untrusted-shared",
                              "untrusted workloads may not share %s GPU: no memory or fault "
                              "isolation (pool %s), and no rule places pods of namespace %s in "
                              "a MIG pool; ask for a MIG rule for it, or run the pod in a "
                              "trusted namespace",
                              kind, sp->name, e->ns);
        else
            gpa_eng_violation(e, "untrusted-shared",
                              "untrusted workloads may not share %s GPU: no memory or fault "
                              "isolation; ask for a MIG profile such as %s%s%s (pool %s)",
                              kind, res, *how ? ": " : "", how, sp->name);
    }
    const char *node = v->node_name;
    if (node && *node)
        gpa_eng_violation(e, "node-name-shared",
                          "spec.nodeName %s is set on a pod using shared resource %s: it would "
                          "bypass the scheduler and the tenant anti-affinity; remove nodeName "
                          "and let the scheduler pick a node",
                          node, sp->shared_resource);
    /* the anti-affinity below keeps tenants apart only if the scheduler reads it */
    const char *sched = v->scheduler_name;
    if (!gpa_isolation_scheduler_ok(e->p, sched))
        gpa_eng_violation(e, "shared-scheduler",
                          "pod on shared resource %s of pool %s names schedulerName %s, which the "
                          "policy does not list as honouring the tenant anti-affinity; remove "
                          "schedulerName (the default scheduler honours it), or ask the platform "
                          "team to list %s in spec.isolation.schedulers",
                          sp->shared_resource, sp->name, sched, sched);
    const char *missing = NULL;
    if (!tl)
        missing = "label " GPA_LABEL_TENANT;
    else if (!pl)
        missing = "label " GPA_LABEL_POOL;
    else if (!gpa_eng_has_isolation_term(v, sp->name, e->tenant))
        missing = "pod anti-affinity against other tenants";
    /* The webhook added the term, the API server dropped its namespaceSelector: pointing the
     * user at the mutating webhook would send them the wrong way. */
    if (missing && tl && pl && gpa_eng_isolation_lost_namespace_selector(v, sp->name, e->tenant))
        gpa_eng_violation(e, "isolation-missing",
                          "pod on shared resource %s of pool %s: its tenant anti-affinity has no "
                          "namespaceSelector, so it would only keep other tenants' pods in "
                          "namespace %s off its node; Kubernetes before 1.22 drops that field: "
                          "time-slicing and MPS pools need Kubernetes 1.22 or later",
                          sp->shared_resource, sp->name, e->ns);
    else if (missing)
        gpa_eng_violation(e, "isolation-missing",
                          "pod on shared resource %s of pool %s lacks the tenant isolation (%s); "
                          "let the mutating webhook place it (is it enabled for namespace %s?)",
                          sp->shared_resource, sp->name, missing, e->ns);
}

/* Every GPU resource the pod asks for must be one the placed pool hands out. */
static void check_served(gpa_eng *e, const gpa_pod *v)
{
    const gpa_pool *pool = e->pool;
    char nb[16], served[512];
    for (int k = GPA_PODC_MAIN; k <= GPA_PODC_INIT; k++) {
        const cJSON *c;
        int i = 0;
        cJSON_ArrayForEach(c, gpa_pod_containers(v, (gpa_podc_kind)k)) {
            const char *cname = gpa_podc_name(c, i++, nb, sizeof nb);
            gpa_ctr_gpus tmp;
            const gpa_ctr_gpus *g = gpa_ctr_gpus_cached(&e->scans, &tmp, e->p, c);
            for (size_t j = 0; j < g->n; j++) {
                const char *name = g->res[j].name;
                if (gpa_pool_serves(e->p, pool, name)) continue;
                if (g->res[j].bad) continue; /* bad-quantity already says what is wrong */
                /* no profile fits: mig-memory already says why it was not rewritten */
                if (pool->sharing == GPA_SHARING_MIG && !e->mig && gpa_is_plain_gpu(e->p, name))
                    continue;
                served_text(pool, served, sizeof served);
                if (pool->sharing == GPA_SHARING_EXCLUSIVE)
                    gpa_eng_violation(e, "resource-pool-mismatch",
                                      "container %s asks for %s but rule %s places the pod in "
                                      "pool %s, which serves %s; ask for %s",
                                      cname, name, e->rule->name, pool->name, served, GPA_RES_GPU);
                else if (gpa_is_plain_gpu(e->p, name))
                    /* the mutating webhook would have rewritten it: it did not run */
                    gpa_eng_violation(e, "resource-pool-mismatch",
                                      "container %s asks for %s but rule %s places the pod in "
                                      "pool %s, which serves %s; the mutating webhook rewrites "
                                      "it (is it enabled for namespace %s?), or ask for one of "
                                      "those directly",
                                      cname, name, e->rule->name, pool->name, served, e->ns);
                else
                    gpa_eng_violation(e, "resource-pool-mismatch",
                                      "container %s asks for %s but rule %s places the pod in "
                                      "pool %s, which serves %s; ask for nvidia.com/gpu and let "
                                      "the mutating webhook rewrite it, or for one of those",
                                      cname, name, e->rule->name, pool->name, served);
            }
        }
    }
}

static void check_placement(gpa_eng *e, const gpa_pod *v)
{
    const gpa_pool *pool = e->pool;
    if (pool->sharing == GPA_SHARING_MIG && e->has_mem) {
        const gpa_mig_profile *largest = NULL;
        for (size_t i = 0; i < pool->n_profiles; i++)
            if (!largest || pool->profiles[i]->mem_bytes > largest->mem_bytes)
                largest = pool->profiles[i];
        if (!e->mig || !largest || largest->mem_bytes < e->mem_bytes)
            gpa_eng_violation(e, "mig-memory",
                              "%s %s is more than any MIG profile pool %s offers (largest: %s); "
                              "lower the annotation or ask for whole GPUs in another pool",
                              GPA_ANN_GPU_MEMORY, gpa_pod_annotation(&e->orig, GPA_ANN_GPU_MEMORY),
                              pool->name, largest ? largest->name : "none");
    }
    check_served(e, v);
    const char *rc = v->runtime_class;
    if (pool->runtime_class && rc && strcmp(rc, pool->runtime_class) != 0)
        gpa_eng_violation(e, "runtime-class",
                          "pod sets runtimeClassName %s but pool %s runs GPUs with %s; remove "
                          "runtimeClassName (the webhook sets it)",
                          rc, pool->name, pool->runtime_class);
    /* on the placed copy of a pod without terms, the one term placement added */
    const bool reqs_term = e->node_term_is_reqs && v != &e->orig;
    const cJSON *terms = reqs_term ? NULL : gpa_eng_node_terms(v);
    int n_terms = reqs_term ? 1 : cJSON_GetArraySize(terms);
    if (n_terms > GPA_MAX_NODE_TERMS)
        gpa_eng_violation(e, "affinity-too-large",
                          "pod has %d nodeSelectorTerms; the webhook adds pool %s's node "
                          "requirements to every term and accepts at most %d: merge the terms",
                          n_terms, pool->name, GPA_MAX_NODE_TERMS);
    gpa_node_req stack[GPA_MAX_NODE_REQS], *heap;
    size_t cap = GPA_MAX_NODE_REQS;
    gpa_node_req *reqs = gpa_eng_node_reqs_buf(e, stack, &cap, &heap);
    char buf[512], detail[512];
    size_t n = reqs ? gpa_eng_node_reqs(e, reqs, cap, buf, sizeof buf) : 0;
    int at = gpa_eng_node_conflict(v, terms, reqs_term, reqs, n, detail, sizeof detail);
    if (at >= 0)
        gpa_eng_violation(e, "affinity-conflict",
                          "pod cannot run in pool %s (rule %s): %s, but the pool needs %s=%s; "
                          "remove the conflicting constraint or ask for a rule that places the "
                          "pod elsewhere",
                          pool->name, e->rule->name, detail, reqs[at].key, reqs[at].value);
    free(heap);
    if (pool->has_topology && gpa_gang_levels(&pool->topology)) gpa_eng_check_gang(e);
    gpa_eng_check_imex(e, v);
    if (pool->has_topology && pool->topology.gpus_per_node > 0 &&
        e->gpus > pool->topology.gpus_per_node && gpa_gang_levels(&pool->topology))
        gpa_eng_gang_pod_too_big(e);
    else if (pool->has_topology && pool->topology.gpus_per_node > 0 &&
             e->gpus > pool->topology.gpus_per_node)
        gpa_eng_violation(e, "topology-size",
                          "pod asks %" PRId64 " GPUs but nodes of pool %s have %d; split the job "
                          "into pods of at most %d GPUs (they land in one NVLink domain with a "
                          "%s label)",
                          e->gpus, pool->name, pool->topology.gpus_per_node,
                          pool->topology.gpus_per_node, GPA_LABEL_GROUP);
}

static void check_pool_label(gpa_eng *e, const own_labels *own, const gpa_pool *placed)
{
    const char *pl = own->pool;
    if (!pl || (placed && strcmp(pl, placed->name) == 0)) return;
    if (!e->create && e->req->old_object) {
        gpa_pod old;
        gpa_pod_init(&old, e->req->old_object);
        const char *was = gpa_pod_label(&old, GPA_LABEL_POOL);
        if (was && strcmp(was, pl) == 0) return; /* not changed by this update */
    }
    if (placed)
        gpa_eng_violation(e, "pool-label",
                          "pod carries label %s: %s but is placed in pool %s; remove the label "
                          "(the webhook sets it on pods it places in a shared pool)",
                          GPA_LABEL_POOL, pl, placed->name);
    else
        gpa_eng_violation(e, "pool-label",
                          "pod carries label %s: %s but no rule places it in that pool; remove "
                          "the label (the webhook sets it on pods it places in a shared pool)",
                          GPA_LABEL_POOL, pl);
}

/* Does the pod's own nodeSelector ask for sp's nodes (hold every entry of sp's)? */
static bool selects_pool(const gpa_pod *v, const gpa_pool *sp)
{
    const gpa_kvlist *ns = &sp->node_selector;
    if (ns->n == 0 || !v->node_selector) return false;
    for (size_t i = 0; i < ns->n; i++) {
        const char *have = gpa_json_str(v->node_selector, ns->keys[i]);
        if (!have || strcmp(have, ns->values[i]) != 0) return false;
    }
    return true;
}

/* POLICY.md "Isolation by default": a GPU pod not placed in a shared pool must not be able to
 * land on its nodes, read from the final spec alone (the mutating webhook may have been
 * skipped): every nodeSelectorTerm, with the nodeSelector, must rule the pool's nodes out. The
 * kubelet checks node affinity again on admission, so spec.nodeName does not bypass it. */
static void check_shared_nodes(gpa_eng *e, const gpa_pod *v)
{
    const gpa_shared_guard *g = gpa_eng_shared_guard(e);
    if (!g) return;
    /* a pod refused anyway (deny rule, unmatched: deny) needs no second reason */
    bool refused = e->rule ? e->rule->deny_message != NULL : e->p->unmatched_deny;
    if (refused && e->p->enforcement == GPA_ENFORCE_DENY) return;
    const gpa_pool *ctx = e->guard_ctx;
    /* The placed copy of a pod without terms has one term holding exactly the requirements
     * placement added: it rules out every shared pool but the inseparable ones (an exclusion
     * for each, or the pool's own contradicting requirement). */
    if (e->node_term_is_reqs && v != &e->orig && !v->node_selector && g->n_inseparable == 0) return;
    const cJSON *terms = gpa_eng_node_terms(v);
    /* a pool the pod's nodeSelector asks for is the one to name (pass 0), else the first
     * one it could land on (pass 1) */
    for (size_t i = 0; i < 2 * e->p->n_pools; i++) {
        const gpa_pool *sp = &e->p->pools[i % e->p->n_pools];
        if (!gpa_pool_shared_for(sp, e->guard_dra) || sp == ctx) continue;
        bool asks = selects_pool(v, sp);
        if (i < e->p->n_pools) {
            if (!asks) continue;
        } else if (asks) {
            continue; /* seen in pass 0 */
        }
        bool open = false;
        if (!terms || !terms->child) {
            open = !gpa_eng_term_rules_out(v, NULL, sp);
        } else {
            const cJSON *t;
            cJSON_ArrayForEach(t, terms) {
                if (!gpa_eng_term_rules_out(v, t, sp)) {
                    open = true;
                    break;
                }
            }
        }
        if (!open && !asks) continue;
        char who[256];
        if (ctx && e->pool)
            snprintf(who, sizeof who, "rule %s places this pod in pool %s, not in shared pool %s",
                     e->rule->name, ctx->name, sp->name);
        else if (ctx)
            snprintf(who, sizeof who, "this pod asks %s of pool %s, not shared pool %s",
                     ctx->shared_resource, ctx->name, sp->name);
        else
            snprintf(who, sizeof who, "no rule places this pod in shared pool %s", sp->name);
        if (asks)
            gpa_eng_violation(e, "shared-pool-unplaced",
                              "%s, but its nodeSelector asks for that pool's nodes, whose GPUs "
                              "other tenants share; remove the nodeSelector, or ask the platform "
                              "team for a rule that places the pod in the pool",
                              who);
        else if (sp->node_selector.n == 0)
            gpa_eng_violation(e, "shared-pool-unplaced",
                              "%s, which has no nodeSelector, so any node may share its GPUs "
                              "between tenants; ask the platform team to give pool %s a "
                              "nodeSelector",
                              who, sp->name);
        else if (ctx && g->inseparable == sp)
            gpa_eng_violation(e, "shared-pool-unplaced",
                              "%s, but every node of %s is a node of %s (its nodeSelector holds "
                              "all of %s's), whose GPUs other tenants share; ask the platform "
                              "team to give the pools different node labels",
                              who, ctx->name, sp->name, sp->name);
        else {
            /* the label the mutating webhook would rule out */
            const char *k = sp->node_selector.keys[0], *val = sp->node_selector.values[0];
            for (size_t j = 0; j < g->n; j++)
                for (size_t q = 0; q < g->excl[j].n_pools; q++)
                    if (g->excl[j].pools[q] == sp) k = g->excl[j].key;
            for (size_t q = 0; q < sp->node_selector.n; q++)
                if (strcmp(sp->node_selector.keys[q], k) == 0) val = sp->node_selector.values[q];
            gpa_eng_violation(e, "shared-pool-unplaced",
                              "%s, but its node affinity lets it land on that pool's nodes, "
                              "whose GPUs other tenants share; let the mutating webhook rule "
                              "them out (is it enabled for namespace %s?): node affinity %s "
                              "NotIn [%s] in every nodeSelectorTerm",
                              who, e->ns, k, val);
        }
        return; /* one pool is enough to say what to do */
    }
}

void gpa_eng_check(gpa_eng *e, const gpa_pod *v)
{
    const bool create = e->create;
    const own_labels own = read_own_labels(v);
    const char *tl = own.tenant;
    const char *trl = own.trust;
    if (tl || trl || e->gpus > 0) gpa_eng_tenancy(e);
    /* an UPDATE cannot give a pod GPUs; it can add the label */
    if (e->taken && ((create && e->gpus > 0) || (tl && strcmp(tl, e->taken->name) == 0)))
        gpa_eng_violation(e, "tenant-name-taken",
                          "namespace %s is in no tenant but carries the name of tenant %s: it "
                          "would pass for that tenant (its rules, label and rights), so its %s "
                          "refused; the policy must claim the namespace in tenant %s's "
                          "namespaces, or rename the tenant",
                          e->ns, e->taken->name,
                          create && e->gpus > 0 ? "GPU pods are"
                                                : "pods labelled " GPA_LABEL_TENANT " are",
                          e->taken->name);
    else if (tl && strcmp(tl, e->tenant) != 0)
        gpa_eng_violation(e, "tenant-claim",
                          "pod claims tenant %s but namespace %s belongs to tenant %s; remove "
                          "the %s label (the webhook sets it)",
                          tl, e->ns, e->tenant, GPA_LABEL_TENANT);
    if (trl && strcmp(trl, "trusted") != 0 && strcmp(trl, "untrusted") != 0)
        gpa_eng_violation(e, "trust-label",
                          "label %s has value \"%s\"; the only value a pod may set is untrusted "
                          "(trust comes from the namespace)",
                          GPA_LABEL_TRUST, trl);
    if (e->gpus > 0 && !e->taken) {
        if (e->rule && e->rule->deny_message)
            gpa_eng_violation(e, "rule-deny", "denied by GPU policy rule %s: %s", e->rule->name,
                              e->rule->deny_message);
        else if (!e->rule && e->p->unmatched_deny && e->needs_mem_rule)
            gpa_eng_violation(e, "unmatched",
                              "no GPU policy rule matches this pod (namespace %s, %" PRId64
                              " GPU(s)) and unmatched GPU pods are denied; rule %s would match "
                              "it with a %s annotation (its gpuMemory criterion needs one): "
                              "add it, e.g. %s: 8Gi",
                              e->ns, e->gpus, e->needs_mem_rule->name, GPA_ANN_GPU_MEMORY,
                              GPA_ANN_GPU_MEMORY);
        else if (!e->rule && e->p->unmatched_deny)
            gpa_eng_violation(e, "unmatched",
                              "no GPU policy rule matches this pod (namespace %s, %" PRId64
                              " GPU(s)) and unmatched GPU pods are denied; ask the platform "
                              "team for a rule that covers it",
                              e->ns, e->gpus);
    }
    if (create && e->mem_bad)
        gpa_eng_violation(e, "bad-quantity",
                          "annotation %s: \"%s\" is not a Kubernetes quantity; write e.g. 8Gi",
                          GPA_ANN_GPU_MEMORY, gpa_pod_annotation(&e->orig, GPA_ANN_GPU_MEMORY));

    const gpa_pool *shared = NULL;
    if (e->gpus > 0 || (create && e->gpu_named)) { /* a non-GPU pod skips the scan */
        char nb[16];
        for (int k = GPA_PODC_MAIN; k <= GPA_PODC_INIT; k++) {
            const cJSON *c;
            int i = 0;
            cJSON_ArrayForEach(c, gpa_pod_containers(v, (gpa_podc_kind)k)) {
                const char *cname = gpa_podc_name(c, i++, nb, sizeof nb);
                const gpa_pool *sp = check_container(e, c, cname, create);
                if (sp && !shared) shared = sp;
            }
        }
    }
    /* who may share and how comes before what the pool serves: the more useful message */
    if (shared) check_shared(e, v, &own, shared, create);
    if (create && e->pool) check_placement(e, v);
    if (create && e->gpus > 0) check_shared_nodes(e, v);
    check_pool_label(e, &own, e->pool ? e->pool : shared);
    /* An ordinary pod UPDATE cannot change containers; the ephemeralcontainers subresource
     * adds them to a running pod, so it gets the same container checks as a CREATE. */
    if (create || e->req->ephemeral_update) gpa_eng_check_devices(e, v, create);
    if (create) gpa_eng_check_dra_classes(e, v);
}

int gpa_engine_validate(gpa_decision *out, const gpa_policy *p, const gpa_request *req,
                        gpa_error *err)
{
    gpa_eng e;
    int rc;
    if (!gpa_eng_start(&e, out, p, req, err, &rc)) return rc;
    gpa_eng_check(&e, &e.orig);
    return gpa_eng_finish(&e, err);
}
