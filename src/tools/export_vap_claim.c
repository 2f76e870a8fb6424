/*
 * export_vap_claim.c - the claim checks of engine_claim.c CEL can decide from the claim and its
 * namespace, as `export vap`'s second policy (gpu-admission-claims): every request's
 * adminAccess and allocationMode All against the rights of the namespace's own tenant, an
 * untrusted claim's device class the policy does not know (POLICY.md "Isolation by default":
 * judged for every claim, placed or not), and, matched to its rule as the webhook matches it,
 * an untrusted claim on a multiAllocatable pool (dra-untrusted-shared) or asking MPS or
 * TimeSlicing there (dra-untrusted-sharing). The rest of placement (class mismatches, MIG
 * profiles, unmatched, rule-deny) is left to the webhook.
 *
 * The object arrives as resource.k8s.io/v1 (matchPolicy Equivalent converts v1beta1): a
 * claim's requests are spec.devices.requests, a template's spec.spec.devices.requests; a
 * request holds `exactly` or `firstAvailable` alternatives. Never judges the scheduler's own
 * extended-resource claims (engine_claim.c: the pod they serve was judged).
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "export_vap_internal.h"
#include "gpu_admission/labels.h"
#include "k8s/claim.h"
#include "policy/policy_dra.h"
#include "policy/policy_model.h"

#define V(x) "variables." #x

static void quoted_list(gpa_sb *b, const char *const *items, size_t n)
{
    gpa_sb_puts(b, "[");
    for (size_t i = 0; i < n; i++) {
        if (i) gpa_sb_puts(b, ", ");
        gpa_cel_quote(b, items[i]);
    }
    gpa_sb_puts(b, "]");
}

/* rules per variable, as the pod policy splits them (the 100,000 code point limit) */
#define CHUNK 100
/* A request count at or above this makes the claim's count unbounded (as allocationMode All):
 * 32 requests below it cannot overflow CEL's int, and no rule's gpus range reaches it. */
#define COUNT_CAP "144115188075855872"

static void reset(gpa_sb *b)
{
    b->len = 0;
    if (b->p) b->p[0] = '\0';
}

/* Is rule i's pool a DRA pool whose devices allow multiple allocations (engine_claim.c)? */
static bool multi_pool(const gpa_rule *r)
{
    return r->pool && !r->deny_message && r->pool->dra.set && r->pool->dra.multi_allocatable;
}

/* The rule a GPU claim is placed by, as engine_claim.c matches it (engine_match.c): the
 * claim's labels (a template's spec.metadata.labels), its devices (a firstAvailable request
 * at its largest GPU alternative, allocationMode All unbounded), its gpu-memory annotation
 * (a template's spec.metadata first); then the two sharing checks of a multiAllocatable
 * pool. Only when some rule places claims in such a pool: otherwise neither can fire. */
static void placed_checks(gpa_vap_doc *d, gpa_sb *b, const char *classes)
{
    const gpa_policy *p = d->p;
    size_t n_multi = 0;
    for (size_t i = 0; i < p->n_rules; i++)
        n_multi += multi_pool(&p->rules[i]);
    if (!p->dra.set || !n_multi) return;
    /* per request, the device counts of its GPU alternatives (`exactly` and `firstAvailable`
     * are two types: two lists, added once they are ints) */
    reset(b);
    gpa_sb_printf(b,
                  V(requests) ".map(r, (r.?exactly.hasValue() && r.exactly.?deviceClassName."
                              "orValue('') in %s ? [r.exactly.?allocationMode.orValue('') == "
                              "'All' ? " COUNT_CAP " : r.exactly.?count.orValue(1)] : []) + "
                              "r.?firstAvailable.orValue([]).filter(s, s.?deviceClassName."
                              "orValue('') in %s).map(s, s.?allocationMode.orValue('') == 'All' "
                              "? " COUNT_CAP " : s.?count.orValue(1)))",
                  classes, classes);
    gpa_vap_var(d, "reqGpus", b->p);
    gpa_vap_var(d, "gpus",
                V(reqGpus) ".exists(l, l.exists(n, n >= " COUNT_CAP ")) ? 9223372036854775807 : "
                           "([0] + " V(reqGpus) ".map(l, l.size() == 0 ? 0 : l.max())).sum()");
    gpa_vap_var(d, "mem",
                "object.spec.?metadata.?annotations.orValue({})[?'" GPA_ANN_GPU_MEMORY "'].or("
                "object.metadata.?annotations.orValue({})[?'" GPA_ANN_GPU_MEMORY "']).orValue("
                "'')");
    const gpa_cel_subject s = {V(ns), V(labels), V(gpus), V(declared), V(trusted), V(mem)};
    gpa_sb first = {0}, multi = {0}, strict = {0}, pools = {0};
    char name[32];
    for (size_t k = 0; k * CHUNK < p->n_rules; k++) {
        reset(b);
        gpa_cel_first_rule_range(b, p, &s, k * CHUNK, (k + 1) * CHUNK);
        snprintf(name, sizeof name, "rules%zu", k);
        gpa_vap_var(d, name, b->p);
        gpa_sb_printf(&first, "variables.%s >= 0 ? %zu + variables.%s : ", name, k * CHUNK, name);
    }
    reset(b);
    gpa_sb_printf(b, V(judged) " && " V(gpus) " > 0 && !" V(taken) " ? (%s-1) : -1",
                  first.p ? first.p : "");
    gpa_vap_var(d, "rule", b->p);
    gpa_sb_puts(&multi, "[");
    gpa_sb_puts(&strict, "[");
    gpa_sb_puts(&pools, "[");
    size_t nm = 0, ns = 0;
    for (size_t i = 0; i < p->n_rules; i++) {
        const gpa_rule *r = &p->rules[i];
        gpa_sb_puts(&pools, i ? ", " : "");
        gpa_cel_quote(&pools, r->pool ? r->pool->name : "");
        if (!multi_pool(r)) continue;
        gpa_sb_printf(&multi, "%s%zu", nm++ ? ", " : "", i);
        if (!r->pool->dra.allow_untrusted) gpa_sb_printf(&strict, "%s%zu", ns++ ? ", " : "", i);
    }
    gpa_sb_puts(&multi, "]");
    gpa_sb_puts(&strict, "]");
    gpa_sb_puts(&pools, "]");
    reset(b);
    gpa_sb_printf(b, V(rule) " >= 0 ? %s[" V(rule) "] : ''", pools.p);
    gpa_vap_var(d, "pool", b->p);
    reset(b);
    gpa_sb_printf(b, "!" V(trusted) " && " V(rule) " in %s", strict.p);
    gpa_vap_check(d, "dra-untrusted-shared", b->p,
                  "'untrusted claims may not share a GPU of pool ' + " V(
                      pool) " + ': its devices allow multiple allocations (claims of other "
                            "namespaces on the same GPU, no memory or fault isolation); ask for "
                            "a MIG device instead, or run it from a trusted namespace'");
    /* an NVIDIA config asking sharing for one of the GPU requests (gpa_claim_config_applies:
     * no names is every request; "req" or "req/sub" names one); a config of another kind or
     * not strictly valid is dra-opaque-config's, which the webhook says first */
    gpa_vap_var(d, "configs",
                "object.spec.?spec.?devices.?config.orValue([]) + "
                "object.spec.?devices.?config.orValue([])");
    reset(b);
    gpa_sb_printf(
        b,
        "!" V(trusted) " && " V(rule) " in %s && " V(
            configs) ".exists(g, g.?opaque.?driver.orValue('') == '" GPA_DRA_NVIDIA_DRIVER
                     "' && g.opaque.?parameters.?kind.orValue('') in ['GpuConfig', "
                     "'MigDeviceConfig'] && g.opaque.?parameters.?sharing.?strategy.orValue('') "
                     "in ['MPS', 'TimeSlicing'] && (g.?requests.orValue([]).size() == 0 || " V(
                         requests) ".exists(r, r.?exactly.hasValue() && r.exactly.?"
                                   "deviceClassName.orValue('') in %s && r.name in "
                                   "g.requests || r.?firstAvailable.orValue([]).exists(s, s.?"
                                   "deviceClassName.orValue('') in %s && (r.name in g.requests "
                                   "|| r.name + '/' + s.?name.orValue('') in g.requests)))))",
        multi.p, classes, classes);
    gpa_vap_check(d, "dra-untrusted-sharing", b->p,
                  "'a config asks MPS or TimeSlicing sharing on pool ' + " V(
                      pool) " + ', whose GPUs other namespaces\\' claims may share, and the "
                            "claim is untrusted (no memory or fault isolation); remove the "
                            "sharing config'");
    if (first.oom || multi.oom || strict.oom || pools.oom) d->vals.oom = true;
    gpa_sb_free(&first);
    gpa_sb_free(&multi);
    gpa_sb_free(&strict);
    gpa_sb_free(&pools);
}

void gpa_vap_claim(gpa_vap_doc *d)
{
    const gpa_policy *p = d->p;
    gpa_sb b = {0};
    /* a template's labels are those of the claims made from it (claim.c), never its own:
     * its own trust label must not lower (or a missing one keep) the claims' trust */
    gpa_vap_tenancy_vars(d, &b,
                         "request.resource.resource == 'resourceclaimtemplates' ? "
                         "object.spec.?metadata.?labels.orValue({}) : "
                         "object.metadata.?labels.orValue({})");
    gpa_vap_var(d, "requests",
                "object.spec.?spec.?devices.?requests.orValue([]) + "
                "object.spec.?devices.?requests.orValue([])");
    /* the scheduler's claims for extended resources, made by spec.dra.schedulerUsers */
    b.len = 0;
    if (b.p) b.p[0] = '\0';
    gpa_sb_puts(&b, "!(object.metadata.?annotations.orValue({})[?'resource.kubernetes.io/"
                    "extended-resource-claim'] == optional.of('true') && "
                    "request.userInfo.username in ");
    if (p->dra.scheduler_users.n)
        quoted_list(&b, (const char *const *)p->dra.scheduler_users.items,
                    p->dra.scheduler_users.n);
    else
        gpa_sb_puts(&b, "['" GPA_DRA_DEFAULT_SCHEDULER "']");
    gpa_sb_puts(&b, ")");
    gpa_vap_var(d, "judged", b.p);
    /* rights come with the namespace's own tenant, never with a name */
    gpa_sb admin = {0}, all = {0}, classes = {0};
    gpa_sb_puts(&admin, "[");
    gpa_sb_puts(&all, "[");
    size_t na = 0, nl = 0;
    for (size_t i = 0; i < p->n_tenants; i++) {
        if (p->tenants[i].dra_admin_access) {
            if (na++) gpa_sb_puts(&admin, ", ");
            gpa_cel_quote(&admin, p->tenants[i].name);
        }
        if (p->tenants[i].dra_allocation_mode_all) {
            if (nl++) gpa_sb_puts(&all, ", ");
            gpa_cel_quote(&all, p->tenants[i].name);
        }
    }
    gpa_sb_puts(&admin, "]");
    gpa_sb_puts(&all, "]");
    /* GPU classes: spec.dra.genericClasses and every pool's dra.deviceClass */
    gpa_sb_puts(&classes, "[");
    size_t nc = 0;
    for (size_t i = 0; i < p->dra.generic_classes.n; i++) {
        if (nc++) gpa_sb_puts(&classes, ", ");
        gpa_cel_quote(&classes, p->dra.generic_classes.items[i]);
    }
    for (size_t i = 0; i < p->n_pools; i++) {
        if (!p->pools[i].dra.set) continue;
        if (nc++) gpa_sb_puts(&classes, ", ");
        gpa_cel_quote(&classes, p->pools[i].dra.device_class);
    }
    gpa_sb_puts(&classes, "]");

    b.len = 0;
    if (b.p) b.p[0] = '\0';
    gpa_sb_printf(&b,
                  V(judged) " && !(" V(declared) " in %s) && " V(
                      requests) ".exists(r, r.?exactly.?adminAccess.orValue(false))",
                  admin.p);
    gpa_vap_check(d, "dra-admin-access", b.p,
                  "'a request asks adminAccess, which reaches devices other claims (of any "
                  "namespace) are using, and ' + (" V(declared) " != '' ? 'tenant ' + " V(
                      declared) " : 'namespace ' + " V(ns) " + ' (in no tenant)') + ' may not; "
                                                           "remove adminAccess or ask the "
                                                           "platform team for the tenant\\'s "
                                                           "dra.adminAccess'");
    b.len = 0;
    if (b.p) b.p[0] = '\0';
    gpa_sb_printf(&b,
                  V(judged) " && !(" V(declared) " in %s) && " V(
                      requests) ".exists(r, r.?exactly.?allocationMode.orValue('') == 'All' || "
                                "r.?firstAvailable.orValue([]).exists(s, s.?allocationMode."
                                "orValue('') == 'All'))",
                  all.p);
    gpa_vap_check(d, "dra-allocation-all", b.p,
                  "'a request asks allocationMode All (every matching device of a node) and ' "
                  "+ (" V(declared) " != '' ? 'tenant ' + " V(declared) " : 'namespace ' + " V(
                      ns) " + ' (in no tenant)') + ' may not; ask a count instead, or ask the "
                          "platform team for the tenant\\'s dra.allocationModeAll'");
    b.len = 0;
    if (b.p) b.p[0] = '\0';
    gpa_sb_printf(&b,
                  V(judged) " && !" V(trusted) " && " V(
                      requests) ".exists(r, r.?exactly.hasValue() && !(r.exactly.?deviceClassName."
                                "orValue('') in %s) || r.?firstAvailable.orValue([]).exists(s, "
                                "!(s.?deviceClassName.orValue('') in %s)))",
                  classes.p, classes.p);
    gpa_vap_check(d, "unknown-device-class", b.p,
                  "'a request asks a device class the GPU policy does not know, and the claim "
                  "is untrusted: a class such as NVIDIA\\'s vfio.gpu.nvidia.com hands out "
                  "devices outside every pool\\'s isolation; name a GPU class of the policy, "
                  "or ask the platform team for a pool of that class'");
    placed_checks(d, &b, classes.p);
    if (b.oom || admin.oom || all.oom || classes.oom) d->vals.oom = true;
    gpa_sb_free(&b);
    gpa_sb_free(&admin);
    gpa_sb_free(&all);
    gpa_sb_free(&classes);
}
