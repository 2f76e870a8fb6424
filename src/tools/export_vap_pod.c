/*
 * export_vap_pod.c - the pod checks of the validating webhook (engine_validate.c,
 * engine_devices.c, engine_dra_ext.c) as CEL for `export vap`: variables first (namespace,
 * tenant, trust, GPU count, the first matching rule, the pool, the shared pool the pod uses),
 * then one validation per webhook reason, in the engine's order.
 *
 * Each condition reads what the engine reads and nothing else; where the engine's answer
 * depends on something CEL cannot see (the mutating webhook's own choices, symlinks on the
 * node) the check is left out and named in gpa_export_vap_gaps. Must never refuse a pod the
 * webhook admits: a compiled check that is stricter than the engine is a bug (the vap e2e
 * suite replays every golden case to find one).
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "engine/engine_internal.h"
#include "export_vap_internal.h"
#include "k8s/host_path.h"
#include "k8s/toolkit_env.h"
#include "policy/policy_dra.h"
#include "policy/policy_isolation.h"
#include "policy/policy_shared_nodes.h"

#define V(x) "variables." #x
/* tenants or rules per variable: 100 rules of the generated cost policy are ~13,000 code points */
#define CHUNK 100

static const char *txt(const gpa_sb *b)
{
    return b->p ? b->p : "";
}

static void reset(gpa_sb *b)
{
    b->len = 0;
    if (b->p) b->p[0] = '\0';
}

static bool is_shared(const gpa_pool *p)
{
    return gpa_pool_is_shared(p);
}

/* engine_validate.c shared_pool_of: the shared pool an unplaced pod's resource name runs on */
static const gpa_pool *shared_pool_of(const gpa_policy *p, const char *name)
{
    if (gpa_is_plain_gpu(p, name)) return NULL;
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

/* `[names of the policy's GPU resources for which keep(name) holds]` */
static void names_where(gpa_sb *b, const gpa_policy *p,
                        bool (*keep)(const gpa_policy *, const char *, const void *),
                        const void *arg)
{
    gpa_sb_puts(b, "[");
    size_t k = 0;
    for (size_t i = 0; i < p->gpu_resources.n; i++) {
        if (!keep(p, p->gpu_resources.items[i], arg)) continue;
        if (k++) gpa_sb_puts(b, ", ");
        gpa_cel_quote(b, p->gpu_resources.items[i]);
    }
    gpa_sb_puts(b, "]");
}

static bool k_shared(const gpa_policy *p, const char *n, const void *pool)
{
    const gpa_pool *sp = shared_pool_of(p, n);
    return sp && (!pool || sp == pool);
}
static bool k_plain(const gpa_policy *p, const char *n, const void *u)
{
    (void)u;
    return gpa_is_plain_gpu(p, n);
}
static bool k_mig_dra(const gpa_policy *p, const char *n, const void *u)
{
    (void)u;
    const gpa_dra_ext *x = gpa_dra_ext_of(p, n);
    return x && !x->generic && x->pool && x->pool->sharing == GPA_SHARING_MIG;
}
static bool k_served(const gpa_policy *p, const char *n, const void *pool)
{
    return gpa_pool_serves(p, pool, n);
}
static bool k_dra_reach(const gpa_policy *p, const char *n, const void *u)
{
    (void)u;
    return gpa_dra_reachable(p, n);
}

/* pool names for which keep(pool) holds */
static void pools_where(gpa_sb *b, const gpa_policy *p, bool (*keep)(const gpa_pool *))
{
    gpa_sb_puts(b, "[");
    size_t k = 0;
    for (size_t i = 0; i < p->n_pools; i++) {
        if (!keep(&p->pools[i])) continue;
        if (k++) gpa_sb_puts(b, ", ");
        gpa_cel_quote(b, p->pools[i].name);
    }
    gpa_sb_puts(b, "]");
}
static bool pl_shared(const gpa_pool *p)
{
    return is_shared(p);
}
static bool pl_untrusted_ok(const gpa_pool *p)
{
    return is_shared(p) && p->allow_untrusted;
}
static bool pl_mig_mixed(const gpa_pool *p)
{
    return p->sharing == GPA_SHARING_MIG && p->mig_strategy == GPA_MIG_MIXED;
}
static bool pl_mig_single(const gpa_pool *p)
{
    return p->sharing == GPA_SHARING_MIG && p->mig_strategy == GPA_MIG_SINGLE;
}
static bool pl_mig(const gpa_pool *p)
{
    return p->sharing == GPA_SHARING_MIG;
}

/* bool on `k`: a name counting as a GPU (cel_emit.c gpu_names) */
static void gpu_cond(gpa_sb *b, const gpa_policy *p)
{
    gpa_sb_puts(b, "(k.startsWith('nvidia.com/mig-') && k.size() > 15 || k in [");
    for (size_t i = 0; i < p->gpu_resources.n; i++) {
        if (i) gpa_sb_puts(b, ", ");
        gpa_cel_quote(b, p->gpu_resources.items[i]);
    }
    gpa_sb_puts(b, "])");
}

/* bool: string expression v is a whole non-negative quantity */
static void whole(gpa_sb *b, const char *v)
{
    gpa_sb_printf(b,
                  "(isQuantity(string(%s)) && quantity(string(%s)).isInteger() && "
                  "quantity(string(%s)).compareTo(quantity('0')) >= 0)",
                  v, v, v);
}

#define LIM  "c.?resources.?limits.orValue({})"
#define REQ  "c.?resources.?requests.orValue({})"
#define CTRS V(ctrs)

void gpa_vap_tenancy_vars(gpa_vap_doc *d, gpa_sb *b, const char *labels)
{
    const gpa_policy *p = d->p;
    gpa_vap_var(d, "ns", "request.namespace");
    gpa_vap_var(d, "labels", labels);
    gpa_vap_var(d, "create", "request.operation == 'CREATE'");
    /* the API server refuses an expression over 100,000 code points: a long list of tenants
     * or rules goes into one variable per CHUNK, read lazily in order */
    size_t n_chunks = (p->n_tenants + CHUNK - 1) / CHUNK;
    gpa_sb all = {0};
    char name[32];
    for (size_t k = 0; k < n_chunks; k++) {
        reset(b);
        gpa_cel_declared_tenant_range(b, p, V(ns), k * CHUNK, (k + 1) * CHUNK);
        snprintf(name, sizeof name, "tenants%zu", k);
        gpa_vap_var(d, name, txt(b));
        gpa_sb_printf(&all, "variables.%s != '' ? variables.%s : ", name, name);
    }
    gpa_sb_puts(&all, "''");
    gpa_vap_var(d, "declared", txt(&all));
    gpa_sb_free(&all);
    reset(b);
    gpa_cel_tenant(b, V(declared), V(ns));
    gpa_vap_var(d, "tenant", txt(b));
    reset(b);
    gpa_cel_name_taken(b, p, V(declared), V(ns));
    gpa_vap_var(d, "taken", txt(b));
    reset(b);
    gpa_cel_ns_trusted(b, p, V(declared));
    gpa_vap_var(d, "nsTrusted", txt(b));
    reset(b);
    gpa_cel_pod_trusted(b, V(nsTrusted), V(labels));
    gpa_vap_var(d, "trusted", txt(b));
}

static void tenancy_vars(gpa_vap_doc *d, gpa_sb *b)
{
    const gpa_policy *p = d->p;
    gpa_vap_tenancy_vars(d, b, "object.metadata.?labels.orValue({})");
    gpa_vap_var(d, "oldLabels", "oldObject != null ? oldObject.metadata.?labels.orValue({}) : {}");
    static const char *const own[][2] = {{"tenantLabel", GPA_LABEL_TENANT},
                                         {"poolLabel", GPA_LABEL_POOL},
                                         {"trustLabel", GPA_LABEL_TRUST}};
    for (size_t i = 0; i < 3; i++) {
        reset(b);
        gpa_cel_label(b, V(labels), own[i][1]);
        gpa_vap_var(d, own[i][0], txt(b));
    }
    gpa_vap_var(d, "ctrs",
                "object.spec.?containers.orValue([]) + object.spec.?initContainers.orValue([])");
    reset(b);
    gpa_cel_pod_gpus(b, p, "object.spec");
    gpa_vap_var(d, "gpus", txt(b));
    gpa_vap_var(d, "memSet",
                "object.metadata.?annotations.orValue({})[?'" GPA_ANN_GPU_MEMORY "'].hasValue()");
    gpa_vap_var(d, "mem",
                "object.metadata.?annotations.orValue({})[?'" GPA_ANN_GPU_MEMORY "'].orValue('')");
    gpa_vap_var(d, "memOk",
                "isQuantity(" V(mem) ") && quantity(" V(mem) ").compareTo(quantity('0')) >= 0");
}

static void rule_vars(gpa_vap_doc *d, gpa_sb *b)
{
    const gpa_policy *p = d->p;
    const gpa_cel_subject s = {V(ns), V(labels), V(gpus), V(declared), V(trusted), V(mem)};
    gpa_sb first = {0};
    char name[32];
    for (size_t k = 0; k * CHUNK < p->n_rules; k++) {
        reset(b);
        gpa_cel_first_rule_range(b, p, &s, k * CHUNK, (k + 1) * CHUNK);
        snprintf(name, sizeof name, "rules%zu", k);
        gpa_vap_var(d, name, txt(b));
        gpa_sb_printf(&first, "variables.%s >= 0 ? %zu + variables.%s : ", name, k * CHUNK, name);
    }
    reset(b);
    gpa_sb_printf(b, V(gpus) " > 0 && !" V(taken) " ? (%s-1) : -1", first.p ? first.p : "");
    gpa_sb_free(&first);
    gpa_vap_var(d, "rule", txt(b));
    /* per rule: its name, pool ('' for deny rules), deny message ('' for placements), the
     * gpu-memory above which its MIG pool has no profile (-1: no MIG pool) */
    gpa_sb names = {0}, pools = {0}, denies = {0}, migmax = {0};
    gpa_sb_puts(&names, "[");
    gpa_sb_puts(&pools, "[");
    gpa_sb_puts(&denies, "[");
    gpa_sb_puts(&migmax, "[");
    for (size_t i = 0; i < p->n_rules; i++) {
        const gpa_rule *r = &p->rules[i];
        const char *sep = i ? ", " : "";
        gpa_sb_puts(&names, sep);
        gpa_cel_quote(&names, r->name);
        gpa_sb_puts(&pools, sep);
        gpa_cel_quote(&pools, r->pool && !r->deny_message ? r->pool->name : "");
        gpa_sb_puts(&denies, sep);
        gpa_cel_quote(&denies, r->deny_message ? r->deny_message : "");
        int64_t max = -1;
        if (r->pool && !r->deny_message && r->pool->sharing == GPA_SHARING_MIG) {
            /* engine_validate.c check_placement: auto finds no non-+me profile holding it;
             * a fixed profile: the largest offered is too small */
            for (size_t j = 0; j < r->pool->n_profiles; j++) {
                const gpa_mig_profile *m = r->pool->profiles[j];
                if (r->mig_auto && strchr(m->name, '+')) continue;
                if (m->mem_bytes > max) max = m->mem_bytes;
            }
            if (max < 0) max = 0;
        }
        gpa_sb_printf(&migmax, "%s%" PRId64, sep, max);
    }
    gpa_sb_puts(&names, "]");
    gpa_sb_puts(&pools, "]");
    gpa_sb_puts(&denies, "]");
    gpa_sb_puts(&migmax, "]");
    reset(b);
    gpa_sb_printf(b, V(rule) " >= 0 ? %s[" V(rule) "] : ''", txt(&names));
    gpa_vap_var(d, "ruleName", p->n_rules ? txt(b) : "''");
    reset(b);
    gpa_sb_printf(b, V(rule) " >= 0 ? %s[" V(rule) "] : ''", txt(&pools));
    gpa_vap_var(d, "pool", p->n_rules ? txt(b) : "''");
    reset(b);
    gpa_sb_printf(b, V(rule) " >= 0 ? %s[" V(rule) "] : ''", txt(&denies));
    gpa_vap_var(d, "denyMessage", p->n_rules ? txt(b) : "''");
    reset(b);
    gpa_sb_printf(b, V(rule) " >= 0 ? %s[" V(rule) "] : -1", txt(&migmax));
    gpa_vap_var(d, "migMax", p->n_rules ? txt(b) : "-1");
    gpa_sb_free(&names);
    gpa_sb_free(&pools);
    gpa_sb_free(&denies);
    gpa_sb_free(&migmax);
    /* the shared pool the pod runs on: its placed pool when that is shared; unplaced, the
     * first shared pool whose resource a container names (any quantity) */
    reset(b);
    gpa_sb_puts(b, V(pool) " != '' ? (" V(pool) " in ");
    pools_where(b, p, pl_shared);
    gpa_sb_puts(b, " ? " V(pool) " : '') : [");
    size_t k = 0;
    for (size_t i = 0; i < p->n_pools; i++) {
        const gpa_pool *sp = &p->pools[i];
        if (!is_shared(sp)) continue;
        if (k++) gpa_sb_puts(b, ", ");
        gpa_sb names2 = {0};
        names_where(&names2, p, k_shared, sp);
        gpa_sb_printf(
            b, CTRS ".exists(c, " LIM ".exists(k, k in %s) || " REQ ".exists(k, k in %s)) ? ",
            txt(&names2), txt(&names2));
        gpa_cel_quote(b, sp->name);
        gpa_sb_puts(b, " : ''");
        gpa_sb_free(&names2);
    }
    gpa_sb_puts(b, "].filter(x, x != '')[?0].orValue('')");
    gpa_vap_var(d, "sharedPool", k ? txt(b) : "''");
    /* a deny rule or unmatched: deny refuses the pod anyway (no second reason) */
    reset(b);
    gpa_sb_printf(b, V(rule) " >= 0 ? " V(denyMessage) " != '' : %s",
                  p->unmatched_deny ? "true" : "false");
    gpa_vap_var(d, "refused", txt(b));
}

static void tenancy_checks(gpa_vap_doc *d, gpa_sb *b)
{
    gpa_vap_check(
        d, "tenant-name-taken",
        V(taken) " && ((" V(create) " && " V(gpus) " > 0) || " V(tenantLabel) " == " V(ns) ")",
        "'namespace ' + " V(ns) " + ' is in no tenant but carries the name of tenant ' + " V(
            ns) " + ': it would pass for that tenant (its rules, label and rights), so it is "
                "refused; the policy must claim the namespace in tenant ' + " V(
                    ns) " + '\\'s namespaces, or rename the tenant'");
    gpa_vap_check(
        d, "tenant-claim",
        "!(" V(taken) " && ((" V(create) " && " V(gpus) " > 0) || " V(tenantLabel) " == " V(
            ns) ")) && " V(tenantLabel) " != '' && " V(tenantLabel) " != " V(tenant),
        "'pod claims tenant ' + " V(tenantLabel) " + ' but namespace ' + " V(
            ns) " + ' belongs to tenant ' + " V(tenant) " + '; remove the "
                                                        "" GPA_LABEL_TENANT
                                                        " label (the webhook sets it)'");
    gpa_vap_check(d, "trust-label",
                  V(labels) "[?'" GPA_LABEL_TRUST
                            "'].hasValue() && !(" V(trustLabel) " in ['trusted', 'untrusted'])",
                  "'label " GPA_LABEL_TRUST " has value \"' + " V(
                      trustLabel) " + '\"; the only value a pod may set is untrusted (trust "
                                  "comes from the namespace)'");
    gpa_vap_check(d, "rule-deny", V(gpus) " > 0 && !" V(taken) " && " V(denyMessage) " != ''",
                  "'denied by GPU policy rule ' + " V(ruleName) " + ': ' + " V(denyMessage));
    if (d->p->unmatched_deny)
        gpa_vap_check(d, "unmatched", V(gpus) " > 0 && !" V(taken) " && " V(rule) " < 0",
                      "'no GPU policy rule matches this pod (namespace ' + " V(
                          ns) " + ', ' + string(" V(gpus) ") + ' GPU(s)) and unmatched GPU pods "
                                                          "are denied; ask the platform team for "
                                                          "a rule that covers it'");
    gpa_vap_check(d, "bad-quantity", V(create) " && " V(memSet) " && !" V(memOk),
                  "'annotation " GPA_ANN_GPU_MEMORY
                  ": \"' + " V(mem) " + '\" is not a Kubernetes quantity; write e.g. 8Gi'");
    (void)b;
}

static void container_checks(gpa_vap_doc *d, gpa_sb *b)
{
    const gpa_policy *p = d->p;
    gpa_sb g = {0}, w1 = {0}, w2 = {0}, all = {0}, c1 = {0};
    gpu_cond(&g, p);
    whole(&w1, LIM "[k]");
    whole(&w2, REQ "[k]");
    reset(b);
    gpa_sb_printf(b,
                  V(create) " && (" V(gpus) " > 0 || " CTRS ".exists(c, " LIM
                                            ".exists(k, %s) || " REQ ".exists(k, %s))) && " CTRS
                                            ".exists(c, " LIM ".exists(k, %s && !%s) || " REQ
                                            ".exists(k, %s && !%s))",
                  txt(&g), txt(&g), txt(&g), txt(&w1), txt(&g), txt(&w2));
    gpa_vap_check(d, "bad-quantity", txt(b),
                  "'a container asks a GPU resource quantity that is not a whole non-negative "
                  "number of devices; ask for a whole number (a MIG profile or a shared pool "
                  "gives a fraction of a GPU)'");
    reset(b);
    gpa_sb_printf(b,
                  V(create) " && " CTRS ".exists(c, " REQ ".exists(k, %s && %s && (!(k in " LIM
                            ") || !%s || quantity(string(" REQ
                            "[k])).compareTo(quantity(string(" LIM "[k]))) != 0)))",
                  txt(&g), txt(&w2), txt(&w1));
    gpa_vap_check(d, "requests-limits", txt(b),
                  "'a container\\'s requests of a GPU resource differ from its limits; set "
                  "requests equal to limits or leave requests out'");
    /* shared-count: placed in a shared pool every GPU resource of a container counts; unplaced
     * the names of shared pools */
    names_where(&all, p, k_shared, NULL);
    reset(b);
    gpa_cel_ctr_gpus(&c1, p, "c");
    gpa_sb_printf(
        b, V(create) " && " V(sharedPool) " != '' && " CTRS ".exists(c, (" V(pool) " != '' ? %s : ",
        txt(&c1));
    reset(&c1);
    gpa_sb_printf(&c1, "k in %s", txt(&all));
    gpa_sb_free(&w1);
    gpa_cel_ctr_sum(&w1, "c", txt(&c1));
    gpa_sb_printf(b, "%s) > 1)", txt(&w1));
    gpa_vap_check(d, "shared-count", txt(b),
                  "'a container asks more than 1 of the shared resource of pool ' + " V(
                      sharedPool) " + ': a time-slicing replica or an MPS share is not a bigger "
                                  "GPU; ask for 1 per container, or for whole GPUs in a pool that "
                                  "has them'");
    /* mig-count */
    gpa_sb plain = {0}, migdra = {0};
    names_where(&plain, p, k_plain, NULL);
    names_where(&migdra, p, k_mig_dra, NULL);
    reset(&c1);
    gpa_sb_puts(&c1, "(" V(pool) " == '' || " V(pool) " in ");
    pools_where(&c1, p, pl_mig_mixed);
    gpa_sb_printf(&c1, ") && k.startsWith('nvidia.com/mig-') && k.size() > 15 || " V(pool) " in ");
    pools_where(&c1, p, pl_mig_single);
    gpa_sb_printf(&c1, " && k in %s || k in %s", txt(&plain), txt(&migdra));
    gpa_sb_free(&w1);
    gpa_cel_ctr_sum(&w1, "c", txt(&c1));
    reset(b);
    gpa_sb_printf(b, V(create) " && " CTRS ".exists(c, %s > 1)", txt(&w1));
    gpa_vap_check(d, "mig-count", txt(b),
                  "'a container asks more than one MIG device but a CUDA process sees only "
                  "one; ask for 1 per container and size it with the " GPA_ANN_GPU_MEMORY
                  " annotation'");
    gpa_sb_free(&g);
    gpa_sb_free(&w1);
    gpa_sb_free(&w2);
    gpa_sb_free(&all);
    gpa_sb_free(&c1);
    gpa_sb_free(&plain);
    gpa_sb_free(&migdra);
}

static void shared_checks(gpa_vap_doc *d, gpa_sb *b)
{
    const gpa_policy *p = d->p;
    reset(b);
    gpa_sb_puts(
        b, V(create) " && " V(sharedPool) " != '' && !" V(trusted) " && !(" V(sharedPool) " in ");
    pools_where(b, p, pl_untrusted_ok);
    gpa_sb_puts(b, ")");
    gpa_vap_check(d, "untrusted-shared", txt(b),
                  "'untrusted workloads may not share a time-sliced or MPS GPU: no memory or "
                  "fault isolation (pool ' + " V(sharedPool) " + '); ask for a MIG profile such "
                                                             "as nvidia.com/mig-1g.10gb, or run "
                                                             "the pod in a trusted namespace'");
    gpa_vap_check(
        d, "node-name-shared",
        V(create) " && " V(sharedPool) " != '' && object.spec.?nodeName.orValue('') != ''",
        "'spec.nodeName ' + object.spec.nodeName + ' is set on a pod using a shared "
        "resource of pool ' + " V(sharedPool) " + ': it would bypass the scheduler and "
                                              "the tenant anti-affinity; remove "
                                              "nodeName and let the scheduler pick a "
                                              "node'");
    reset(b);
    gpa_sb_puts(b,
                V(create) " && " V(sharedPool) " != '' && !(object.spec.?schedulerName."
                                               "orValue('') in ['', '" GPA_DEFAULT_SCHEDULER "'");
    for (size_t i = 0; i < p->isolation.schedulers.n; i++) {
        gpa_sb_puts(b, ", ");
        gpa_cel_quote(b, p->isolation.schedulers.items[i]);
    }
    gpa_sb_puts(b, "])");
    gpa_vap_check(d, "shared-scheduler", txt(b),
                  "'pod on a shared resource of pool ' + " V(sharedPool) " + ' names "
                                                                         "schedulerName ' + "
                                                                         "object.spec."
                                                                         "schedulerName + ', "
                                                                         "which the policy "
                                                                         "does not list as "
                                                                         "honouring the tenant "
                                                                         "anti-affinity; "
                                                                         "remove "
                                                                         "schedulerName, or "
                                                                         "ask the platform "
                                                                         "team to list it in "
                                                                         "spec.isolation."
                                                                         "schedulers'");
    /* engine_affinity.c isolation_term */
    gpa_vap_var(
        d, "isolated",
        "object.spec.?affinity.?podAntiAffinity.?requiredDuringSchedulingIgnoredDuringExecution."
        "orValue([]).exists(t, t.?topologyKey.orValue('') == '" GPA_HOSTNAME_KEY
        "' && t.?labelSelector.hasValue() && t.?namespaces.orValue([]).size() == 0 && "
        "t.?namespaceSelector.hasValue() && t.namespaceSelector.?matchLabels.orValue({}).size() "
        "== 0 && t.namespaceSelector.?matchExpressions.orValue([]).size() == 0 && "
        "t.labelSelector.?matchLabels.orValue({}).size() == 0 && "
        "t.labelSelector.?matchExpressions.orValue([]).size() == 2 && "
        "t.labelSelector.matchExpressions.exists(x, x.key == '" GPA_LABEL_POOL
        "' && x.operator == 'In' && x.?values.orValue([]) == [" V(
            sharedPool) "]) && "
                        "t.labelSelector.matchExpressions.exists(x, x.key == '" GPA_LABEL_TENANT
                        "' && x.operator == 'NotIn' && x.?values.orValue([]) == [" V(tenant) "]))");
    gpa_vap_check(d, "isolation-missing",
                  V(create) " && " V(sharedPool) " != '' && (" V(tenantLabel) " == '' || " V(
                      poolLabel) " == '' || !" V(isolated) ")",
                  "'pod on a shared resource of pool ' + " V(
                      sharedPool) " + ' lacks the tenant "
                                  "isolation (labels "
                                  "' + '" GPA_LABEL_TENANT " and " GPA_LABEL_POOL
                                  ", pod anti-affinity "
                                  "against other "
                                  "tenants); let the "
                                  "mutating webhook "
                                  "place it (is it "
                                  "enabled for "
                                  "namespace ' + " V(ns) " + '?)'");
    gpa_vap_check(d, "isolation-missing",
                  "!" V(create) " && " V(sharedPool) " != '' && (" V(tenantLabel) " == '' || " V(
                      poolLabel) " == '') && " V(oldLabels) "[?'" GPA_LABEL_POOL
                                                            "'].hasValue() && " V(
                                                                oldLabels) "[?'" GPA_LABEL_TENANT
                                                                           "'].hasValue()",
                  "'this update removes an isolation label from a pod on a shared resource of "
                  "pool ' + " V(sharedPool) " + ': other tenants\\' anti-affinity relies on it; "
                                            "keep the label'");
}

void gpa_vap_pod_placement(gpa_vap_doc *d, gpa_sb *b);

void gpa_vap_pod(gpa_vap_doc *d)
{
    gpa_sb b = {0};
    tenancy_vars(d, &b);
    rule_vars(d, &b);
    tenancy_checks(d, &b);
    container_checks(d, &b);
    shared_checks(d, &b);
    gpa_vap_pod_placement(d, &b);
    if (b.oom) d->vals.oom = true;
    gpa_sb_free(&b);
}

/* ------------------------------------------------------------------ placement */

/* bool: nodeSelectorTerm t (or, with t NULL, no term) rules out the nodes of pool sp
 * (engine_affinity.c gpa_eng_term_rules_out) */
static void rules_out(gpa_sb *b, const gpa_pool *sp, bool term)
{
    const gpa_kvlist *ns = &sp->node_selector;
    gpa_sb_puts(b, "(false");
    for (size_t i = 0; i < ns->n; i++) {
        gpa_sb_puts(b, " || object.spec.?nodeSelector.orValue({})[?");
        gpa_cel_quote(b, ns->keys[i]);
        gpa_sb_puts(b, "].orValue(");
        gpa_cel_quote(b, ns->values[i]);
        gpa_sb_puts(b, ") != ");
        gpa_cel_quote(b, ns->values[i]);
        if (!term) continue;
        gpa_sb_puts(b, " || t.?matchExpressions.orValue([]).exists(x, x.key == ");
        gpa_cel_quote(b, ns->keys[i]);
        gpa_sb_puts(b, " && (x.operator == 'In' && !(");
        gpa_cel_quote(b, ns->values[i]);
        gpa_sb_puts(b, " in x.?values.orValue([])) || x.operator == 'NotIn' && ");
        gpa_cel_quote(b, ns->values[i]);
        gpa_sb_puts(b, " in x.?values.orValue([]) || x.operator == 'DoesNotExist'))");
    }
    gpa_sb_puts(b, ")");
}

#define TERMS                                                                                      \
    "object.spec.?affinity.?nodeAffinity.?requiredDuringSchedulingIgnoredDuringExecution.?"        \
    "nodeSelectorTerms.orValue([])"

void gpa_vap_pod_placement(gpa_vap_doc *d, gpa_sb *b)
{
    const gpa_policy *p = d->p;
    const char *placed = V(create) " && " V(pool) " != '' && " V(denyMessage) " == ''";
    reset(b);
    gpa_sb_printf(b,
                  "%s && " V(memSet) " && " V(memOk) " && " V(migMax) " >= 0 && quantity(" V(
                      mem) ").compareTo(quantity(string(" V(migMax) "))) > 0",
                  placed);
    gpa_vap_check(d, "mig-memory", txt(b),
                  "'" GPA_ANN_GPU_MEMORY " ' + " V(mem) " + ' is more than any MIG profile pool ' "
                                                        "+ " V(pool) " + ' offers; lower the "
                                                                     "annotation or ask for "
                                                                     "whole GPUs in another "
                                                                     "pool'");
    /* resource-pool-mismatch: a GPU resource the placed pool does not serve; a bad quantity
     * says so itself, and a plain GPU in a MIG pool no profile fits is mig-memory's */
    gpa_sb served = {0}, g = {0}, plain = {0}, w1 = {0}, w2 = {0};
    gpa_sb_puts(&served, "{");
    for (size_t i = 0; i < p->n_pools; i++) {
        if (i) gpa_sb_puts(&served, ", ");
        gpa_cel_quote(&served, p->pools[i].name);
        gpa_sb_puts(&served, ": ");
        names_where(&served, p, k_served, &p->pools[i]);
    }
    gpa_sb_puts(&served, "}");
    gpu_cond(&g, p);
    names_where(&plain, p, k_plain, NULL);
    whole(&w1, LIM "[k]");
    whole(&w2, REQ "[k]");
    gpa_vap_var(d, "served", p->n_pools ? txt(&served) : "{}");
    reset(b);
    gpa_sb_printf(b,
                  "%s && " CTRS ".exists(c, (" LIM ".map(k, k) + " REQ
                  ".map(k, k)).exists(k, %s && !(k in " V(served) "[" V(
                      pool) "]) && (!(k in " LIM ") || %s) && (!(k in " REQ
                            ") || %s) && !(" V(pool) " in ",
                  placed, txt(&g), txt(&w1), txt(&w2));
    pools_where(b, p, pl_mig);
    gpa_sb_printf(
        b,
        " && k in %s && " V(memSet) " && " V(memOk) " && " V(migMax) " >= 0 && quantity(" V(
            mem) ").compareTo(quantity(string(" V(migMax) "))) > 0)))",
        txt(&plain));
    gpa_vap_check(d, "resource-pool-mismatch", txt(b),
                  "'a container asks for a GPU resource that pool ' + " V(pool) " + ' (rule ' + " V(
                      ruleName) " + ') does not serve; the mutating webhook rewrites "
                                "nvidia.com/gpu to the pool\\'s resource (is it enabled for "
                                "namespace ' + " V(ns) " + '?), or ask for one of ' + " V(
                                    served) "[" V(pool) "].join(', ')");
    gpa_sb_free(&served);
    gpa_sb_free(&g);
    gpa_sb_free(&plain);
    gpa_sb_free(&w1);
    gpa_sb_free(&w2);
    /* runtime-class */
    reset(b);
    gpa_sb_puts(b, "{");
    size_t k = 0;
    for (size_t i = 0; i < p->n_pools; i++) {
        if (!p->pools[i].runtime_class) continue;
        if (k++) gpa_sb_puts(b, ", ");
        gpa_cel_quote(b, p->pools[i].name);
        gpa_sb_puts(b, ": ");
        gpa_cel_quote(b, p->pools[i].runtime_class);
    }
    gpa_sb_puts(b, "}");
    if (k) {
        gpa_vap_var(d, "runtimeClass", txt(b));
        reset(b);
        gpa_sb_printf(
            b,
            "%s && " V(runtimeClass) "[?" V(
                pool) "].hasValue() && object.spec.?"
                      "runtimeClassName.orValue('') != '' && object.spec.runtimeClassName != " V(
                          runtimeClass) "[" V(pool) "]",
            placed);
        gpa_vap_check(d, "runtime-class", txt(b),
                      "'pod sets runtimeClassName ' + object.spec.runtimeClassName + ' but pool ' "
                      "+ " V(pool) " + ' runs GPUs with ' + " V(runtimeClass) "[" V(
                          pool) "] + '; remove runtimeClassName (the webhook sets it)'");
    }
    reset(b);
    gpa_sb_printf(b, "%s && " TERMS ".size() > %d", placed, GPA_MAX_NODE_TERMS);
    gpa_vap_check(d, "affinity-too-large", txt(b),
                  "'pod has ' + string(" TERMS ".size()) + ' nodeSelectorTerms; the webhook "
                  "adds pool ' + " V(pool) " + '\\'s node requirements to every term and accepts "
                                           "at most 64: merge the terms'");
    /* affinity-conflict against the pool's nodeSelector (In requirements): the pod's
     * nodeSelector says otherwise, or every term rules the pool's nodes out */
    for (size_t i = 0; i < p->n_pools; i++) {
        const gpa_pool *pl = &p->pools[i];
        if (pl->node_selector.n == 0) continue;
        reset(b);
        gpa_sb_printf(b, "%s && " V(pool) " == ", placed);
        gpa_cel_quote(b, pl->name);
        gpa_sb_puts(b, " && (");
        gpa_sb tmp = {0};
        rules_out(&tmp, pl, false);
        gpa_sb_printf(b, "%s || " TERMS ".size() > 0 && " TERMS ".all(t, ", txt(&tmp));
        reset(&tmp);
        rules_out(&tmp, pl, true);
        gpa_sb_printf(b, "%s))", txt(&tmp));
        gpa_sb_free(&tmp);
        gpa_vap_check(d, "affinity-conflict", txt(b),
                      "'pod cannot run in pool ' + " V(pool) " + ' (rule ' + " V(
                          ruleName) " + '): its nodeSelector or node affinity rules the pool\\'s "
                                    "nodes out; remove the conflicting constraint or ask for "
                                    "a rule that places the pod elsewhere'");
    }
    /* topology-size (pools without gang levels; those say gang-too-big, not compiled) */
    for (size_t i = 0; i < p->n_pools; i++) {
        const gpa_pool *pl = &p->pools[i];
        if (!pl->has_topology || pl->topology.gpus_per_node <= 0 || pl->topology.island_gpus)
            continue;
        reset(b);
        gpa_sb_printf(b, "%s && " V(pool) " == ", placed);
        gpa_cel_quote(b, pl->name);
        gpa_sb_printf(b, " && " V(gpus) " > %d", pl->topology.gpus_per_node);
        char msg[512];
        snprintf(msg, sizeof msg,
                 "'pod asks ' + string(" V(gpus) ") + ' GPUs but nodes of pool ' + " V(
                     pool) " + ' have %d; split the job into pods of at most %d GPUs'",
                 pl->topology.gpus_per_node, pl->topology.gpus_per_node);
        gpa_vap_check(d, "topology-size", txt(b), msg);
    }
    /* shared-pool-unplaced (engine_validate.c check_shared_nodes) */
    bool differ = p->shared_guards_dra != p->shared_guards;
    if (differ) {
        gpa_sb reach = {0};
        names_where(&reach, p, k_dra_reach, NULL);
        reset(b);
        gpa_sb_printf(b,
                      CTRS ".exists(c, " LIM ".exists(k, k in %s) || " REQ ".exists(k, k in %s))",
                      txt(&reach), txt(&reach));
        gpa_vap_var(d, "guardDra", txt(b));
        gpa_sb_free(&reach);
    }
    gpa_vap_var(d, "guardCtx", V(pool) " != '' ? " V(pool) " : " V(sharedPool));
    for (size_t i = 0; i < p->n_pools; i++) {
        const gpa_pool *sp = &p->pools[i];
        if (!gpa_pool_shared_for(sp, true)) continue;
        bool only_dra = !gpa_pool_is_shared(sp);
        reset(b);
        gpa_sb_printf(
            b, V(create) " && " V(gpus) " > 0 && !(" V(refused) " && %s) && %s" V(guardCtx) " != ",
            p->enforcement == GPA_ENFORCE_DENY ? "true" : "false",
            only_dra ? V(guardDra) " && " : "");
        gpa_cel_quote(b, sp->name);
        gpa_sb_puts(b, " && (");
        gpa_sb tmp = {0};
        /* asks: the nodeSelector holds every entry of the pool's */
        if (sp->node_selector.n) {
            gpa_sb_puts(b, "(true");
            for (size_t j = 0; j < sp->node_selector.n; j++) {
                gpa_sb_puts(b, " && object.spec.?nodeSelector.orValue({})[?");
                gpa_cel_quote(b, sp->node_selector.keys[j]);
                gpa_sb_puts(b, "] == optional.of(");
                gpa_cel_quote(b, sp->node_selector.values[j]);
                gpa_sb_puts(b, ")");
            }
            gpa_sb_puts(b, ") || ");
        }
        rules_out(&tmp, sp, false);
        gpa_sb_printf(b, TERMS ".size() == 0 && !%s || ", txt(&tmp));
        reset(&tmp);
        rules_out(&tmp, sp, true);
        gpa_sb_printf(b, TERMS ".exists(t, !%s))", txt(&tmp));
        gpa_sb_free(&tmp);
        char msg[700];
        snprintf(msg, sizeof msg,
                 "'no rule places this pod in shared pool %s, but its nodeSelector or node "
                 "affinity lets it land on that pool\\'s nodes, whose GPUs other tenants share; "
                 "let the mutating webhook rule them out (is it enabled for namespace ' + " V(
                     ns) " + '?)'",
                 sp->name);
        gpa_vap_check(d, "shared-pool-unplaced", txt(b), msg);
    }
    /* pool-label: forged, unless an update leaves it as it was */
    gpa_vap_check(
        d, "pool-label",
        V(poolLabel) " != '' && " V(poolLabel) " != " V(guardCtx) " && (" V(create) " || " V(
            oldLabels) "[?'" GPA_LABEL_POOL "'].orValue('') != " V(poolLabel) ")",
        "'pod carries label " GPA_LABEL_POOL
        ": ' + " V(poolLabel) " + ' but no rule places it in that pool; remove the label (the "
                              "webhook sets it on pods it places in a shared pool)'");
}
