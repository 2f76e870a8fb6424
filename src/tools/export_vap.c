/*
 * export_vap.c - `gpu-admission export vap`: the document (a ValidatingAdmissionPolicy and its
 * binding), the YAML it is written in, an untrusted pod's device checks (engine_devices.c,
 * engine_dra_ext.c), and the list of what is not compiled. The pod's GPU checks are in
 * export_vap_pod.c.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "export_vap_internal.h"
#include "k8s/host_path.h"
#include "k8s/toolkit_env.h"
#include "policy/policy_dra.h"
#include "policy/policy_model.h"

#define V(x) "variables." #x
#define CTRS V(ctrs)

static const char gaps[] =
    "affinity-conflict with a MIG single-strategy pool's gpu.product requirement (the profile "
    "is the mutating webhook's choice)\n"
    "gang-too-big and gang-size (topology levels: the gang's size comes from operators' "
    "labels and annotations the webhook interprets)\n"
    "untrusted-shared advice: the MIG rule offered to the namespace (policy_reach_offer.c); "
    "the VAP message names the pool only\n"
    "unmatched advice for a rule a gpu-memory annotation would match (same reason, shorter "
    "message)\n"
    "host-path of a hostPath holding a '..' segment or more than 32 slashes in a row (the "
    "node resolves '..' after its own symlinks, which CEL cannot see)\n"
    "isolation-missing's Kubernetes < 1.22 wording (namespaceSelector dropped): the same "
    "reason, the general message\n"
    "ephemeral containers (pods/ephemeralcontainers) and workload templates (Deployments, "
    "Jobs, ...): left to the webhook\n"
    "ResourceClaim checks that depend on the claim's placement (class mismatch, MIG "
    "profiles, unmatched, rule-deny, tenant-name-taken, opaque configs, a claim left unplaced "
    "on a multiAllocatable pool's devices; placed on such a pool, the two sharing checks are "
    "compiled): left to the webhook\n"
    "dra-untrusted-shared / dra-untrusted-sharing's first reason when a claim also breaks a "
    "check the webhook says before them (adminAccess or allocationMode All on a GPU request, "
    "a malformed gpu-memory annotation, an invalid NVIDIA config): refused for another "
    "reason\n"
    "warnings (enforcement warn turns every compiled check into a warning; the webhook's "
    "placement warnings are the mutating webhook's)\n";

const char *gpa_export_vap_gaps(void)
{
    return gaps;
}

/* ------------------------------------------------------------------ devices */

static void env_grants(gpa_sb *b, const char *reason)
{
    unsigned n;
    const gpa_toolkit_env *t = gpa_toolkit_env_table(&n);
    gpa_sb_puts(b, "(false");
    for (unsigned i = 0; i < n; i++) {
        if (strcmp(t[i].reason, reason) != 0) continue;
        gpa_sb_printf(b,
                      " || e.name == '%s' && (e.?valueFrom.hasValue() || "
                      "e.?value.orValue('').contains('$(')",
                      t[i].name);
        switch (t[i].grant) {
        case GPA_TKENV_LIST:
            gpa_sb_puts(b, " || !(e.?value.orValue('') in ['void', 'none'])");
            break;
        case GPA_TKENV_ENABLED:
            gpa_sb_puts(b, " || e.?value.orValue('') == 'enabled'");
            break;
        case GPA_TKENV_EMPTY:
            gpa_sb_puts(b, " || e.?value.orValue('') == ''");
            break;
        default:
            gpa_sb_puts(b, " || true");
        }
        gpa_sb_puts(b, ")");
    }
    gpa_sb_puts(b, ")");
}

static void devices(gpa_vap_doc *d, gpa_sb *b)
{
    const char *untrusted = V(create) " && !" V(trusted);
    static const char *const reasons[] = {"visible-devices", "toolkit-env"};
    for (size_t r = 0; r < 2; r++) {
        gpa_sb tmp = {0};
        env_grants(&tmp, reasons[r]);
        b->len = 0;
        if (b->p) b->p[0] = '\0';
        gpa_sb_printf(b, "%s && " CTRS ".exists(c, c.?env.orValue([]).exists(e, %s))", untrusted,
                      tmp.p ? tmp.p : "false");
        gpa_sb_free(&tmp);
        gpa_vap_check(d, reasons[r], b->p,
                      "'a container of an untrusted pod sets an environment variable the NVIDIA "
                      "container toolkit reads to hand out devices: it reaches GPUs outside the "
                      "device plugin\\'s accounting and "
                      "isolation; remove it and ask for GPUs in resources.limits'");
    }
    /* envFrom: a prefix that some toolkit name begins with (none: every name) */
    unsigned n;
    const gpa_toolkit_env *t = gpa_toolkit_env_table(&n);
    gpa_sb names = {0};
    gpa_sb_puts(&names, "[");
    for (unsigned i = 0; i < n; i++) {
        if (i) gpa_sb_puts(&names, ", ");
        gpa_cel_quote(&names, t[i].name);
    }
    gpa_sb_puts(&names, "]");
    b->len = 0;
    if (b->p) b->p[0] = '\0';
    gpa_sb_printf(b,
                  "%s && " CTRS ".exists(c, c.?envFrom.orValue([]).exists(s, %s.exists(n, "
                  "n.startsWith(s.?prefix.orValue('')))))",
                  untrusted, names.p ? names.p : "[]");
    gpa_sb_free(&names);
    gpa_vap_check(d, "env-from", b->p,
                  "'a container of an untrusted pod takes its environment from a ConfigMap or "
                  "Secret whose keys could set a variable the NVIDIA container toolkit reads to "
                  "hand out devices; add a prefix no toolkit variable starts with (such as "
                  "APP_) or name each key with env valueFrom'");
    b->len = 0;
    if (b->p) b->p[0] = '\0';
    gpa_sb_printf(b, "%s && " CTRS ".exists(c, c.?securityContext.?privileged.orValue(false))",
                  untrusted);
    gpa_vap_check(d, "privileged", b->p,
                  "'container ' + " CTRS ".filter(c, c.?securityContext.?privileged.orValue("
                  "false))[0].name + ' of an untrusted pod is privileged: it can reach every GPU "
                  "on the node; drop securityContext.privileged'");
    /* hostPath: the path as the node resolves it (host_path.c canonical): made absolute,
     * "//" and "/./" dropped (five rounds: up to 32 slashes in a row), the trailing "/"
     * dropped, /var/run read as /run; then equal to, under or above a protected path. A path
     * still holding "//", "/./" or any "/../" is left to the webhook (CEL cannot follow the
     * node's symlinks). */
    unsigned nh;
    const gpa_host_path_entry *h = gpa_host_path_table(&nh);
    b->len = 0;
    if (b->p) b->p[0] = '\0';
    gpa_sb_printf(b,
                  "%s && object.spec.?volumes.orValue([]).exists(v, v.?hostPath.hasValue() && "
                  "['/' + v.hostPath.path + '/'].map(n, n",
                  untrusted);
    for (int i = 0; i < 5; i++)
        gpa_sb_puts(b, ".replace('/./', '/').replace('//', '/')");
    gpa_sb_puts(b, ").exists(n, !n.contains('//') && !n.contains('/./') && !n.contains('/../') && "
                   "[n == '/' ? n : n.substring(0, n.size() - 1)].map(q, q == '/var/run' || "
                   "q.startsWith('/var/run/') ? '/run' + q.substring(8) : q).exists(p, p == '/'");
    for (unsigned i = 0; i < nh; i++)
        gpa_sb_printf(b, " || p == '%s' || p.startsWith('%s/') || '%s'.startsWith(p + '/')",
                      h[i].path, h[i].path, h[i].path);
    gpa_sb_puts(b, ")))");
    gpa_vap_check(d, "host-path", b->p ? b->p : "false",
                  "'a hostPath volume of an untrusted pod reaches the node\\'s devices, the "
                  "NVIDIA toolkit\\'s directories or a container runtime\\'s socket; use "
                  "another kind of volume, or run the pod in a trusted namespace'");
    /* unknown-device-class: a DRA extended resource of a class the policy does not know */
    gpa_sb known = {0};
    gpa_sb_puts(&known, "[");
    for (size_t i = 0; i < d->p->n_dra_ext; i++) {
        if (i) gpa_sb_puts(&known, ", ");
        gpa_cel_quote(&known, d->p->dra_ext[i].name);
    }
    gpa_sb_puts(&known, "]");
    b->len = 0;
    if (b->p) b->p[0] = '\0';
    gpa_sb_printf(
        b,
        "%s && " CTRS ".exists(c, (c.?resources.?limits.orValue({}).map(k, k) + "
        "c.?resources.?requests.orValue({}).map(k, k)).exists(k, k.startsWith('" GPA_DRA_EXT_PREFIX
        "') && !(k in %s)))",
        untrusted, known.p ? known.p : "[]");
    gpa_sb_free(&known);
    gpa_vap_check(d, "unknown-device-class", b->p,
                  "'a container of an untrusted pod asks the extended resource of a DeviceClass "
                  "the policy does not know: the scheduler would give it devices through a "
                  "claim no rule judges; ask the platform team to name the class in the "
                  "policy (spec.dra.genericClasses or a pool\\'s dra.deviceClass)'");
}

/* ------------------------------------------------------------------ the document */

static const char *action(const gpa_policy *p)
{
    switch (p->enforcement) {
    case GPA_ENFORCE_WARN:
        return "Warn";
    case GPA_ENFORCE_AUDIT:
        return "Audit";
    default:
        return "Deny";
    }
}

/* One policy and its binding: name, the matchConstraints' resourceRules (YAML lines),
 * variables and validations, the binding's action. */
static void write_policy(gpa_sb *o, const char *name, const char *rules, const gpa_vap_doc *d,
                         const char *revision, const char *act)
{
    gpa_sb_printf(o,
                  "---\n"
                  "apiVersion: admissionregistration.k8s.io/v1\n"
                  "kind: ValidatingAdmissionPolicy\n"
                  "metadata:\n"
                  "  name: %s\n"
                  "  annotations:\n"
                  "    gpu-admission.io/policy: \"%s\"\n"
                  "spec:\n"
                  "  failurePolicy: Fail\n"
                  "  matchConstraints:\n"
                  "    matchPolicy: Equivalent\n"
                  "    resourceRules:\n"
                  "%s"
                  "  variables:\n",
                  name, revision, rules);
    gpa_sb_put(o, d->vars.p ? d->vars.p : "", d->vars.len);
    gpa_sb_puts(o, "  validations:\n");
    gpa_sb_put(o, d->vals.p ? d->vals.p : "", d->vals.len);
    gpa_sb_printf(o,
                  "---\n"
                  "apiVersion: admissionregistration.k8s.io/v1\n"
                  "kind: ValidatingAdmissionPolicyBinding\n"
                  "metadata:\n"
                  "  name: %s\n"
                  "spec:\n"
                  "  policyName: %s\n"
                  "  validationActions: [%s]\n"
                  "  matchResources:\n"
                  "    namespaceSelector:\n"
                  "      matchExpressions:\n"
                  "      - {key: kubernetes.io/metadata.name, operator: NotIn, values: "
                  "[kube-system]}\n"
                  "      - {key: gpu-admission.io/ignore, operator: NotIn, values: [\"true\"]}\n",
                  name, name, act);
}

int gpa_export_vap(char **out, const gpa_policy *p, gpa_error *err)
{
    *out = NULL;
    gpa_vap_doc d = {.p = p}, dc = {.p = p};
    gpa_vap_pod(&d);
    gpa_sb b = {0};
    devices(&d, &b);
    gpa_sb_free(&b);
    /* claims are judged unless spec.dra turns them off (engine_claim.c) */
    bool claims = !(p->dra.set && p->dra.enforcement == GPA_DRA_OFF);
    if (claims) gpa_vap_claim(&dc);

    gpa_sb o = {0};
    gpa_sb_puts(&o, "# gpu-admission export vap: the validating webhook's checks as "
                    "ValidatingAdmissionPolicies\n");
    gpa_sb_printf(&o,
                  "# policy revision %s; %zu checks compiled. Not compiled (the webhook "
                  "still judges them):\n",
                  gpa_policy_revision(p), d.n_checks + dc.n_checks);
    for (const char *s = gaps; *s;) {
        const char *nl = strchr(s, '\n');
        gpa_sb_puts(&o, "#   - ");
        gpa_sb_put(&o, s, (size_t)(nl - s));
        gpa_sb_puts(&o, "\n");
        s = nl + 1;
    }
    write_policy(&o, "gpu-admission-pods",
                 "    - apiGroups: [\"\"]\n"
                 "      apiVersions: [\"v1\"]\n"
                 "      operations: [\"CREATE\", \"UPDATE\"]\n"
                 "      resources: [\"pods\"]\n",
                 &d, gpa_policy_revision(p), action(p));
    if (claims)
        write_policy(&o, "gpu-admission-claims",
                     "    - apiGroups: [\"resource.k8s.io\"]\n"
                     "      apiVersions: [\"v1\"]\n"
                     "      operations: [\"CREATE\", \"UPDATE\"]\n"
                     "      resources: [\"resourceclaims\", \"resourceclaimtemplates\"]\n",
                     &dc, gpa_policy_revision(p),
                     p->dra.set && p->dra.enforcement == GPA_DRA_WARN ? "Warn" : "Deny");
    bool oom = d.vars.oom || d.vals.oom || dc.vars.oom || dc.vals.oom || o.oom;
    gpa_sb_free(&d.vars);
    gpa_sb_free(&d.vals);
    gpa_sb_free(&dc.vars);
    gpa_sb_free(&dc.vals);
    if (oom) {
        gpa_sb_free(&o);
        return gpa_fail(err, GPA_ENOMEM, "export vap: out of memory");
    }
    *out = gpa_sb_done(&o);
    return *out ? GPA_OK : gpa_fail(err, GPA_ENOMEM, "export vap: out of memory");
}
