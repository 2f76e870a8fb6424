/*
 * export_vap_claim.c - the claim checks of engine_claim.c that need no placement, as CEL for
 * `export vap`'s second policy (gpu-admission-claims): every request's adminAccess and
 * allocationMode All against the rights of the namespace's own tenant, and an untrusted
 * claim's device class the policy does not know (POLICY.md "Isolation by default": judged
 * for every claim, placed or not). What depends on the claim's placement (sharing configs on
 * a multiAllocatable pool, class mismatches, unmatched) is left to the webhook.
 *
 * The object arrives as resource.k8s.io/v1 (matchPolicy Equivalent converts v1beta1): a
 * claim's requests are spec.devices.requests, a template's spec.spec.devices.requests; a
 * request holds `exactly` or `firstAvailable` alternatives. Never judges the scheduler's own
 * extended-resource claims (engine_claim.c: the pod they serve was judged).
 */
#include <string.h>

#include "export_vap_internal.h"
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

void gpa_vap_claim(gpa_vap_doc *d)
{
    const gpa_policy *p = d->p;
    gpa_sb b = {0};
    /* a template's labels are those of the claims made from it (claim.c) */
    gpa_vap_tenancy_vars(d, &b,
                         "object.spec.?metadata.?labels.orValue(object.metadata.?labels."
                         "orValue({}))");
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
    if (b.oom || admin.oom || all.oom || classes.oom) d->vals.oom = true;
    gpa_sb_free(&b);
    gpa_sb_free(&admin);
    gpa_sb_free(&all);
    gpa_sb_free(&classes);
}
