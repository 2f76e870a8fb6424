"""e2e_workloads.py - the workloads suite of the end-to-end test (`run_e2e.py --suite
workloads`, ctest e2e/workloads): workload objects (Deployment, CronJob, a CRD kind) judged at
apply time by the chart's workloads.gpu-admission.io webhook entry (issue 16), against the same
real kube-apiserver v1.37.2 and kube-controller-manager as the pods suite.

The webhook configuration comes from the chart, rendered the way users get it; the suite only
adds chart values (webhook.workloads.extraResources for its CRD) and one policy file
(policies-workloads/: spec.workloads.kinds for the same CRD). Assertions are on what kubectl
printed (the API server's answer, warnings included) and on what the API server stored.

Must never: pass a check on a refusal that came from somewhere else than the workloads entry
(each denial check names the webhook and the template path), or leave the webhook
configuration in a state another scenario does not expect (the one scenario that turns the
entry off turns it back on and waits until the API server uses it again).
"""

import json
import os
import re

from run_e2e import HERE, container_resources, dig, gpu_pod, wait_for

HOOK = "workloads.gpu-admission.io"
DENIED = 'admission webhook "%s" denied the request' % HOOK
TIMESLICE_DENIAL = "untrusted workloads may not share a time-sliced GPU"
MIG_RULE = "e2e-inference-mig"  # test/e2e/policies/15-e2e-rules.yaml
UNTRUSTED = {"gpu-admission.io/trust": "untrusted"}
CRD_GROUP = "e2e.gpu-admission.io"
NS_NOTEBOOKS = "notebooks"      # shipped tenancy: trusted tenant platform, rule notebooks
NS_INFER = "inference-wl"       # 15-e2e-rules.yaml: inference-* -> a100-mig, one MIG slice


def configure(c):
    """Before the webhook starts: the suite's policy file and chart values."""
    c.policy_dirs.append(os.path.join(HERE, "policies-workloads"))
    values = os.path.join(c.work, "workloads-values.json")
    with open(values, "w") as f:
        # JSON is YAML: helm reads it with -f
        json.dump({"webhook": {"workloads": {"extraResources": [
            {"apiGroup": CRD_GROUP, "resources": ["trainingjobs"],
             "templates": ["spec.workers.*.template"]}]}}}, f)
    c.helm_args += ["-f", values]


CRD = {
    "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
    "metadata": {"name": "trainingjobs." + CRD_GROUP},
    "spec": {
        "group": CRD_GROUP, "scope": "Namespaced",
        "names": {"plural": "trainingjobs", "singular": "trainingjob", "kind": "TrainingJob",
                  "listKind": "TrainingJobList"},
        # The pod templates are kept as sent: a structural schema would prune their fields.
        "versions": [{"name": "v1", "served": True, "storage": True, "schema": {
            "openAPIV3Schema": {"type": "object", "properties": {
                "spec": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}}}}}],
    },
}


def setup(c):
    """After the webhooks are registered: the CRD (served) and the namespaces."""
    c.kubectl("apply", "-f", "-", stdin=json.dumps(CRD))

    def served():
        crd = c.get("crd", CRD["metadata"]["name"])
        est = [x for x in dig(crd, "status", "conditions", default=[]) or []
               if x.get("type") == "Established" and x.get("status") == "True"]
        return est and c.kubectl("get", "trainingjobs", "-A", check=False).returncode == 0
    wait_for("CRD trainingjobs.%s established and served" % CRD_GROUP, served, 60, 0.5)
    for ns in (NS_NOTEBOOKS, NS_INFER):
        c.namespace(ns)


# --------------------------------------------------------------------------------------------
# objects


def template_of(pod):
    return {"metadata": {k: v for k, v in pod["metadata"].items()
                         if k in ("labels", "annotations")},
            "spec": pod["spec"]}


def deployment(name, ns, pod, replicas=1):
    labels = dict(pod["metadata"].get("labels") or {})
    labels["app"] = name
    pod = dict(pod, metadata=dict(pod["metadata"], labels=labels))
    return {"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": name, "namespace": ns},
            "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": name}},
                     "template": template_of(pod)}}


def cronjob(name, ns, pod):
    pod = dict(pod, spec=dict(pod["spec"], restartPolicy="Never"))
    return {"apiVersion": "batch/v1", "kind": "CronJob",
            "metadata": {"name": name, "namespace": ns},
            "spec": {"schedule": "*/30 * * * *",
                     "jobTemplate": {"spec": {"template": template_of(pod)}}}}


def trainingjob(name, ns, pod):
    return {"apiVersion": CRD_GROUP + "/v1", "kind": "TrainingJob",
            "metadata": {"name": name, "namespace": ns},
            "spec": {"workers": {"Worker": {"replicas": 2, "template": template_of(pod)}}}}


def untrusted_gpu_pod(ns):
    return gpu_pod("x", ns, labels=dict(UNTRUSTED))


def inference_gpu_pod(ns):
    return gpu_pod("x", ns, labels={"app.kubernetes.io/component": "inference"})


def apply(c, obj, *extra):
    return c.kubectl("apply", "-f", "-", *extra, stdin=json.dumps(obj), check=False)


def denial(stderr):
    """The webhook's message from kubectl's error line (after 'denied the request: ')."""
    m = re.search(r'admission webhook "[^"]+" denied the request: (.*)', stderr)
    return m.group(1).strip() if m else None


def warnings(stderr):
    return [ln[len("Warning: "):] for ln in stderr.splitlines() if ln.startswith("Warning: ")]


def workload_entry_effective(c, on, timeout=30):
    """The API server picks webhook configuration changes up asynchronously: wait until a
    server-side dry run of a refused Deployment is refused (on) or allowed (off) by the entry."""
    probe = deployment("entry-probe", NS_NOTEBOOKS, untrusted_gpu_pod(NS_NOTEBOOKS))

    def check():
        r = apply(c, probe, "--dry-run=server")
        return (DENIED in r.stderr) == on
    wait_for("the workloads entry to be %s" % ("used" if on else "unused"), check, timeout, 0.5)


# --------------------------------------------------------------------------------------------
# scenarios


def sc_chart_entry(c, ck):
    """The chart's workloads entry, as the API server stored it."""
    s = "workload-chart-entry"
    items = json.loads(c.kubectl("get", "validatingwebhookconfigurations", "-o",
                                 "json").stdout)["items"]
    hooks = {w.get("name"): w for it in items for w in it.get("webhooks") or []}
    w = hooks.get(HOOK)
    if not ck.expect(s + "/present", w is not None, sorted(hooks)):
        return
    want_url = "https://127.0.0.1:%d/validate" % c.webhook_port
    ck.expect(s + "/url-and-ca", dig(w, "clientConfig", "url") == want_url and
              dig(w, "clientConfig", "caBundle") == c.ca_b64, w.get("clientConfig"))
    ck.expect(s + "/fail-open-own-timeout",
              (w.get("failurePolicy"), w.get("timeoutSeconds"), w.get("sideEffects")) ==
              ("Ignore", 3, "None"),
              (w.get("failurePolicy"), w.get("timeoutSeconds"), w.get("sideEffects")))
    got = {(g, r) for rule in w.get("rules") or [] for g in rule.get("apiGroups") or []
           for r in rule.get("resources") or []
           if set(rule.get("operations") or []) == {"CREATE", "UPDATE"} and
           rule.get("apiVersions") == ["*"]}
    want = {("apps", "deployments"), ("apps", "replicasets"), ("batch", "cronjobs"),
            ("batch", "jobs"), ("kubeflow.org", "pytorchjobs"), (CRD_GROUP, "trainingjobs")}
    ck.expect(s + "/rules-builtin-and-extra", want <= got and ("", "pods") not in got,
              sorted(got))
    # issue 30 item 5: only workloads whose templates the server judges are sent; the CEL is
    # the chart's, compiled by this API server when helm stored it (the pods suite's
    # webhook-down runs it with the entry failing closed)
    mc = w.get("matchConditions") or []
    ck.expect(s + "/matchConditions", [m.get("name") for m in mc] == ["judged-workload"] and
              "object.spec.jobTemplate.spec.template" in mc[0].get("expression", "") and
              "object.spec.workers.map(k, object.spec.workers[k])" in mc[0]["expression"],
              mc)
    pod_hook = hooks.get("validate.gpu-admission.io") or {}
    ck.expect(s + "/same-namespaces-as-pod-webhook",
              w.get("namespaceSelector") == pod_hook.get("namespaceSelector"),
              (w.get("namespaceSelector"), pod_hook.get("namespaceSelector")))


def sc_apply_denied(c, ck):
    """kubectl apply of a Deployment and a CronJob whose pods would be refused: refused at
    apply time with the pod's message behind the template path; nothing stored."""
    s = "workload-apply-denied"
    ns = NS_NOTEBOOKS
    for kind, obj, path in (
            ("deployment", deployment("nb-untrusted", ns, untrusted_gpu_pod(ns)),
             "spec.template"),
            ("cronjob", cronjob("nb-untrusted-cron", ns, untrusted_gpu_pod(ns)),
             "spec.jobTemplate.spec.template")):
        r = apply(c, obj)
        msg = denial(r.stderr) or ""
        ck.expect("%s/%s-refused" % (s, kind), r.returncode != 0 and DENIED in r.stderr,
                  r.stdout + r.stderr)
        ck.expect("%s/%s-message-names-template" % (s, kind),
                  msg.startswith(path + ": ") and TIMESLICE_DENIAL in msg, r.stderr)
        ck.expect("%s/%s-not-stored" % (s, kind),
                  c.get(kind, obj["metadata"]["name"], ns) is None)


def sc_dry_run(c, ck):
    """kubectl apply --dry-run=server: the same refusal as a real apply, and an allowed GPU
    workload's warnings; nothing stored either way."""
    s = "workload-dry-run-server"
    ns = NS_NOTEBOOKS
    for kind, obj in (("deployment", deployment("dry-untrusted", ns, untrusted_gpu_pod(ns))),
                      ("cronjob", cronjob("dry-untrusted-cron", ns, untrusted_gpu_pod(ns)))):
        dry = apply(c, obj, "--dry-run=server")
        real = apply(c, obj)
        ck.expect("%s/%s-refused" % (s, kind), dry.returncode != 0 and DENIED in dry.stderr and
                  TIMESLICE_DENIAL in dry.stderr, dry.stdout + dry.stderr)
        ck.expect("%s/%s-same-message-as-real-apply" % (s, kind),
                  denial(dry.stderr) is not None and denial(dry.stderr) == denial(real.stderr),
                  (dry.stderr, real.stderr))
        ck.expect("%s/%s-not-stored" % (s, kind),
                  c.get(kind, obj["metadata"]["name"], ns) is None)
    obj = deployment("dry-infer", NS_INFER, inference_gpu_pod(NS_INFER))
    r = apply(c, obj, "--dry-run=server")
    ck.expect(s + "/allowed-with-warning", r.returncode == 0 and
              any(w.startswith("spec.template") and "a100-mig" in w for w in warnings(r.stderr)),
              r.stdout + r.stderr)
    ck.expect(s + "/allowed-not-stored", c.get("deployment", "dry-infer", NS_INFER) is None)


def sc_allowed_deployment(c, ck):
    """An allowed GPU Deployment: kubectl shows what its pods will get; the ReplicaSet's pods
    (made by kube-controller-manager) are mutated; the Deployment itself is never patched."""
    s = "workload-allowed-deployment"
    ns = NS_INFER
    obj = deployment("wl-infer", ns, inference_gpu_pod(ns), replicas=2)
    r = apply(c, obj)
    if not ck.expect(s + "/created", r.returncode == 0, r.stderr):
        return
    ws = [w for w in warnings(r.stderr) if w.startswith("spec.template")]
    ck.expect(s + "/warning-names-template-pool-resource",
              len(ws) >= 1 and any("a100-mig" in w for w in ws) and
              any("nvidia.com/mig-1g.10gb" in w for w in ws), r.stderr)

    def pods():
        out = c.kubectl("get", "pods", "-n", ns, "-l", "app=wl-infer", "-o", "json").stdout
        items = json.loads(out)["items"]
        return items if len(items) == 2 else None
    try:
        items = wait_for("2 pods of Deployment wl-infer", pods, 60, 1)
    except RuntimeError as e:
        ck.expect(s + "/pods-created", False, e)
        return
    ck.expect(s + "/pods-created", all(dig(p, "metadata", "ownerReferences", 0, "kind") ==
                                       "ReplicaSet" for p in items))
    ck.expect(s + "/pods-mutated",
              all(container_resources(p)[0].get("nvidia.com/mig-1g.10gb") == "1" and
                  container_resources(p)[1].get("nvidia.com/mig-1g.10gb") == "1" and
                  "nvidia.com/gpu" not in container_resources(p)[0] and
                  dig(p, "metadata", "annotations", "gpu-admission.io/rule") == MIG_RULE
                  for p in items),
              [(dig(p, "metadata", "name"), container_resources(p)) for p in items])
    d = c.get("deployment", "wl-infer", ns)
    tpl = dig(d, "spec", "template", default={})
    ck.expect(s + "/deployment-not-patched",
              dig(tpl, "spec", "containers", 0, "resources", "limits") == {"nvidia.com/gpu": "1"}
              and "annotations" not in (tpl.get("metadata") or {}) and
              not dig(tpl, "spec", "tolerations") and not dig(tpl, "spec", "affinity"), tpl)
    # Non-GPU workloads pass silently: no warning from the webhook.
    plain = deployment("wl-plain", ns, gpu_pod("x", ns, gpus=0))
    r = apply(c, plain)
    ck.expect(s + "/non-gpu-silent", r.returncode == 0 and
              not [w for w in warnings(r.stderr) if "spec.template" in w], r.stderr)


def sc_update_unchanged_template(c, ck):
    """A non-compliant Deployment admitted while the workloads entry was off: patching its
    replicas and labels (UPDATEs with the template unchanged) succeeds; changing its template
    is refused (so the entry does see those UPDATEs)."""
    s = "workload-update-unchanged-template"
    ns = NS_NOTEBOOKS
    c.register_webhooks(["--set", "webhook.workloads.enabled=false"])
    try:
        workload_entry_effective(c, on=False)
        stored = json.loads(c.kubectl("get", "validatingwebhookconfigurations", "-o",
                                      "json").stdout)["items"]
        names = [w.get("name") for it in stored for w in it.get("webhooks") or []]
        ck.expect(s + "/entry-off", HOOK not in names and "validate.gpu-admission.io" in names,
                  names)
        r = apply(c, deployment("legacy", ns, untrusted_gpu_pod(ns)))
        if not ck.expect(s + "/created-while-off", r.returncode == 0, r.stderr):
            return

        def replicaset():
            out = c.kubectl("get", "replicasets", "-n", ns, "-l", "app=legacy", "-o",
                            "json").stdout
            items = json.loads(out)["items"]
            return items[0] if len(items) == 1 else None
        rs = wait_for("the ReplicaSet of Deployment legacy", replicaset, 60, 1)

        # What a team saw before issue 16: the refusal only on the ReplicaSet.
        def failure():
            got = c.get("replicaset", rs["metadata"]["name"], ns)
            return [x for x in dig(got, "status", "conditions", default=[]) or []
                    if x.get("type") == "ReplicaFailure"]
        try:
            cond = wait_for("ReplicaFailure on the ReplicaSet", failure, 60, 1)
            ck.expect(s + "/pods-refused-on-replicaset",
                      TIMESLICE_DENIAL in (cond[0].get("message") or ""), cond)
        except RuntimeError as e:
            ck.expect(s + "/pods-refused-on-replicaset", False, e)
    finally:
        c.register_webhooks()
        workload_entry_effective(c, on=True)
    r = c.kubectl("patch", "deployment", "legacy", "-n", ns, "--type=merge",
                  "-p", '{"spec":{"replicas":3}}', check=False)
    d = c.get("deployment", "legacy", ns)
    ck.expect(s + "/replicas-patched", r.returncode == 0 and dig(d, "spec", "replicas") == 3,
              r.stderr)
    r = c.kubectl("patch", "deployment", "legacy", "-n", ns, "--type=merge",
                  "-p", '{"metadata":{"labels":{"team":"b"}}}', check=False)
    d = c.get("deployment", "legacy", ns)
    ck.expect(s + "/labels-patched", r.returncode == 0 and
              dig(d, "metadata", "labels", "team") == "b", r.stderr)

    # The deployment controller scales the ReplicaSet: an UPDATE of a workload kind with its
    # template unchanged, through the same entry.
    def scaled():
        got = c.get("replicaset", rs["metadata"]["name"], ns)
        return dig(got, "spec", "replicas") == 3
    try:
        wait_for("the ReplicaSet scaled to 3", scaled, 60, 1)
        ck.expect(s + "/replicaset-scaled-by-controller", True)
    except RuntimeError as e:
        ck.expect(s + "/replicaset-scaled-by-controller", False, e)
    r = c.kubectl("patch", "deployment", "legacy", "-n", ns, "--type=merge", "-p",
                  '{"spec":{"template":{"metadata":{"annotations":{"e2e/changed":"1"}}}}}',
                  check=False)
    msg = denial(r.stderr) or ""
    ck.expect(s + "/template-change-refused", r.returncode != 0 and DENIED in r.stderr and
              msg.startswith("spec.template: ") and TIMESLICE_DENIAL in msg, r.stderr)
    d = c.get("deployment", "legacy", ns)
    ck.expect(s + "/template-change-not-stored",
              "e2e/changed" not in (dig(d, "spec", "template", "metadata", "annotations")
                                    or {}), dig(d, "spec", "template", "metadata"))


def sc_crd_kind(c, ck):
    """A CRD kind named in the policy's spec.workloads.kinds (and the chart's extraResources)
    is judged at its configured template path."""
    s = "workload-crd-kind"
    path = "spec.workers.Worker.template"
    obj = trainingjob("tj-untrusted", NS_NOTEBOOKS, untrusted_gpu_pod(NS_NOTEBOOKS))
    r = apply(c, obj)
    msg = denial(r.stderr) or ""
    ck.expect(s + "/refused", r.returncode != 0 and DENIED in r.stderr, r.stdout + r.stderr)
    ck.expect(s + "/message-names-template", msg.startswith(path + ": ") and
              TIMESLICE_DENIAL in msg, r.stderr)
    ck.expect(s + "/not-stored", c.get("trainingjob", "tj-untrusted", NS_NOTEBOOKS) is None)
    obj = trainingjob("tj-infer", NS_INFER, inference_gpu_pod(NS_INFER))
    r = apply(c, obj)
    if not ck.expect(s + "/allowed-created", r.returncode == 0, r.stderr):
        return
    ck.expect(s + "/allowed-warning-names-template",
              any(w.startswith(path) and "a100-mig" in w for w in warnings(r.stderr)), r.stderr)
    got = c.get("trainingjob", "tj-infer", NS_INFER)
    ck.expect(s + "/stored-unpatched",
              dig(got, "spec", "workers", "Worker", "template") ==
              obj["spec"]["workers"]["Worker"]["template"],
              dig(got, "spec", "workers"))


SCENARIOS = [
    ("workload-chart-entry", sc_chart_entry),
    ("workload-apply-denied", sc_apply_denied),
    ("workload-dry-run-server", sc_dry_run),
    ("workload-allowed-deployment", sc_allowed_deployment),
    ("workload-crd-kind", sc_crd_kind),
    # Re-registers the webhook configuration (off, then on again): last.
    ("workload-update-unchanged-template", sc_update_unchanged_template),
]

if __name__ == "__main__":
    raise SystemExit("run this suite through run_e2e.py --suite workloads (or ctest e2e/workloads)")
