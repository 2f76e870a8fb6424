"""e2e_quota.py - the quota suite of the end-to-end test (`run_e2e.py --suite quota`, ctest
e2e/quota; issue 25): against the real kube-apiserver v1.37.2 (ResourceQuota admission on, the
resourcequota controller running), which namespace ResourceQuota refuses a pod the mutating
webhook rewrote from nvidia.com/gpu to nvidia.com/mig-1g.10gb: one on requests.nvidia.com/gpu
or one on requests.nvidia.com/mig-1g.10gb. ResourceQuota is a validating admission plugin, run
after every mutating webhook, so the rewritten pod should be charged to its new resource. Also
the namespace-label lock (webhook.ignoreLabel): the chart's namespaces.gpu-admission.io entry
and `serve --ignore-label-namespaces` refusing the label on a namespace not in the list.

Assertions are on what kubectl printed (the API server's answer) and on what it stored (the
pod's resources, the quota's status.used). Its result is quoted in docs/operations.md
("Quotas and queueing").

Must never: pass a "refused by quota" check on a refusal from elsewhere (each names the
quota), or a "not charged" check without a control pod the same quota does refuse.
"""

import json
import os

from run_e2e import container_resources, dig, gpu_pod, wait_for

NS_GPU = "inference-quota-gpu"  # inference-* -> e2e-inference-mig: one 1g.10gb MIG slice
NS_MIG = "inference-quota-mig"
MIG = "nvidia.com/mig-1g.10gb"
EXEMPT = "ops-recovery"
INFER = {"app.kubernetes.io/component": "inference"}


def configure(c):
    """Before the webhook starts: the label opt-in, in the chart and on the server alike."""
    values = os.path.join(c.work, "quota-values.json")
    with open(values, "w") as f:
        json.dump({"webhook": {"ignoreLabel": {"enabled": True, "namespaces": [EXEMPT]}}}, f)
    c.helm_args += ["-f", values]
    c.serve_args += ["--ignore-label-namespaces", EXEMPT]


def quota(c, ns, resource, hard):
    obj = {"apiVersion": "v1", "kind": "ResourceQuota",
           "metadata": {"name": "gpu", "namespace": ns},
           "spec": {"hard": {"requests." + resource: str(hard)}}}
    c.kubectl("apply", "-f", "-", stdin=json.dumps(obj))

    def ready():  # the resourcequota controller has computed status.used
        q = c.get("resourcequota", "gpu", ns)
        return ("requests." + resource) in (dig(q, "status", "used", default={}) or {})
    wait_for("ResourceQuota %s/gpu status" % ns, ready, 60, 0.5)


def used(c, ns, resource):
    return dig(c.get("resourcequota", "gpu", ns), "status", "used", "requests." + resource)


def setup(c):
    for ns in (NS_GPU, NS_MIG):
        c.namespace(ns)
    # the control pod's pool sets runtimeClassName nvidia; the RuntimeClass admission plugin
    # refuses a pod naming one that does not exist before the quota is even looked at
    c.kubectl("apply", "-f", "-", stdin=json.dumps({
        "apiVersion": "node.k8s.io/v1", "kind": "RuntimeClass",
        "metadata": {"name": "nvidia"}, "handler": "nvidia"}))
    quota(c, NS_GPU, "nvidia.com/gpu", 0)
    quota(c, NS_MIG, MIG, 1)


def sc_quota_gpu(c, ck):
    """A quota of 0 on requests.nvidia.com/gpu does not refuse the rewritten pod; it refuses
    a pod the webhook leaves on nvidia.com/gpu (the control)."""
    s = "quota-on-gpu"
    r = c.create(gpu_pod("rewritten", NS_GPU, labels=INFER))
    ck.expect(s + "/rewritten-pod-admitted", r.returncode == 0, r.stderr)
    lim, req = container_resources(c.get("pod", "rewritten", NS_GPU) or {})
    ck.expect(s + "/stored-as-mig", req.get(MIG) == "1" and "nvidia.com/gpu" not in req,
              (lim, req))
    # 2 GPUs: rule training places it on whole H100s, which keeps nvidia.com/gpu (the shipped
    # set refuses a GPU pod no rule places: unmatched: deny)
    r = c.create(gpu_pod("control", NS_GPU, gpus=2))
    ck.expect(s + "/control-pod-refused", r.returncode != 0 and "exceeded quota: gpu" in
              r.stderr and "requests.nvidia.com/gpu" in r.stderr, r.stderr)
    print("e2e: quota-on-gpu control answer: " + r.stderr.strip().splitlines()[-1]
          if r.stderr.strip() else "e2e: quota-on-gpu control: no stderr", flush=True)


def sc_quota_mig(c, ck):
    """A quota of 1 on requests.nvidia.com/mig-1g.10gb is charged by the rewritten pod and
    refuses the second one."""
    s = "quota-on-mig"
    r = c.create(gpu_pod("first", NS_MIG, labels=INFER))
    ck.expect(s + "/first-admitted", r.returncode == 0, r.stderr)
    wait_for("quota used 1", lambda: used(c, NS_MIG, MIG) == "1", 30, 0.5)
    ck.expect(s + "/charged-to-mig", used(c, NS_MIG, MIG) == "1", used(c, NS_MIG, MIG))
    r = c.create(gpu_pod("second", NS_MIG, labels=INFER))
    ck.expect(s + "/second-refused-by-quota", r.returncode != 0 and "exceeded quota: gpu" in
              r.stderr and "requests." + MIG in r.stderr, r.stderr)
    print("e2e: quota-on-mig second pod answer: " + (r.stderr.strip().splitlines() or [""])[-1],
          flush=True)


def sc_label_lock(c, ck):
    """webhook.ignoreLabel: the label is refused outside the list, allowed on the listed
    namespace, where it skips the mutating webhook only."""
    s = "namespace-label-lock"
    r = c.kubectl("create", "namespace", "team-self-service", check=False)
    ck.expect(s + "/plain-namespace-created", r.returncode == 0, r.stderr)
    r = c.kubectl("label", "namespace", "team-self-service", "gpu-admission.io/ignore=true",
                  check=False)
    ck.expect(s + "/label-refused", r.returncode != 0 and
              'admission webhook "namespaces.gpu-admission.io" denied the request' in r.stderr
              and "may not carry the label gpu-admission.io/ignore" in r.stderr, r.stderr)
    ns = c.get("namespace", "team-self-service")
    ck.expect(s + "/label-not-stored",
              "gpu-admission.io/ignore" not in (dig(ns, "metadata", "labels") or {}), ns)
    c.namespace(EXEMPT, {"gpu-admission.io/ignore": "true"})
    ns = c.get("namespace", EXEMPT)
    ck.expect(s + "/exempt-namespace-labelled",
              dig(ns, "metadata", "labels", "gpu-admission.io/ignore") == "true", ns)


SCENARIOS = [
    ("quota-on-gpu", sc_quota_gpu),
    ("quota-on-mig", sc_quota_mig),
    ("namespace-label-lock", sc_label_lock),
]

if __name__ == "__main__":
    raise SystemExit("run this suite through run_e2e.py --suite quota (or ctest e2e/quota)")
