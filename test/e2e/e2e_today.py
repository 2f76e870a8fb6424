"""e2e_today.py - today's pod on the real API (`run_e2e.py --suite today`, ctest e2e/today;
issue 29 item 5, and issue 33's two real-scheduler proofs).

Kubernetes 1.37.2 (kube-apiserver, kube-controller-manager and kube-scheduler, the Workload API
gate on), the chart installed by helm, the webhook serving test/e2e/policies-today alone, and
fake nodes with no kubelet (e2e_scheduler.make_node): a MIG A100, a time-sliced node that
advertises its replicas as plain nvidia.com/gpu, an H100 with 2 GPUs, and an L4 whose GPUs are
published only as a DRA ResourceSlice. Every pod of a scenario goes through the real API server
and its three answers are checked: what the webhook said (kubectl's warnings or the denial
text), what the API server stored, and where the real kube-scheduler bound it.

The contract is POLICY.md. Where main does not meet it yet, the check is listed in KNOWN_GAPS
with the issue that fixes it: it runs, and its failure is printed as XFAIL (the run stays
green); a known gap that passes is an XPASS and fails the run, so the entry is removed when the
fix lands. GPA_E2E_STRICT=1 turns every XFAIL into a failure.

Must never: count a pod as "not on the shared node" before the scheduler has answered for it
(settle() waits for a binding or a PodScheduled=False condition, and the check looks again
after a pause), or call a refusal the webhook's when the API server made it (each check names
whose text it expects).
"""

import json
import os
import ssl
import time
import urllib.error
import urllib.request

from run_e2e import FEATURES, TOKEN, dig, note, wait_for
from e2e_scheduler import make_node

HERE = os.path.dirname(os.path.abspath(__file__))
MIG = "nvidia.com/mig-1g.10gb"
GPU = "nvidia.com/gpu"
GPU_TAINT = [{"key": "nvidia.com/gpu", "effect": "NoSchedule"}]
GPU_TOL = [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}]
TS_SEL = {"nvidia.com/gpu.sharing-strategy": "time-slicing"}
VALIDATE = 'admission webhook "validate.gpu-admission.io" denied the request'
# a Pod refusal is the mutating entry's when it can tell (it runs first), else the validating's
POD_HOOKS = ('admission webhook "mutate.gpu-admission.io" denied the request', VALIDATE)
CLAIM_HOOKS = ('admission webhook "mutate-claims.gpu-admission.io" denied the request',
               'admission webhook "validate-claims.gpu-admission.io" denied the request')
DRA_CLASS = "gpu.nvidia.com"
# The DeviceClass's extendedResourceName: NVIDIA's DRA driver maps its classes to the device
# plugin's names (nvidia.com/gpu, nvidia.com/mig-*), so the same pod spec is served by either
DRA_EXT = GPU

# check name -> why it fails on main today (issue, the branch that implements the fix)
KNOWN_GAPS = {
    # empty: issue 33's count and unplaced branches closed the nine gaps main had (README)
}


def expect(ck, name, ok, detail=""):
    """ck.expect, except for a KNOWN_GAPS check (see the module comment)."""
    if name not in KNOWN_GAPS:
        return ck.expect(name, ok, detail)
    strict = os.environ.get("GPA_E2E_STRICT") == "1"
    if ok:
        return ck.expect(name + " [XPASS: fixed; remove it from KNOWN_GAPS in e2e_today.py]",
                         False, KNOWN_GAPS[name])
    if strict:
        return ck.expect(name, False, "known gap: %s\n%s" % (KNOWN_GAPS[name], detail))
    print("XFAIL %s\n     known gap: %s\n     %s" % (name, KNOWN_GAPS[name],
                                                   str(detail)[:600]), flush=True)
    ck.results.append((name + " [XFAIL]", True, detail))
    return False


# --------------------------------------------------------------------------------------------
# objects


def container(name, gpus=0, resource=GPU, sidecar=False, extra=None):
    c = {"name": name, "image": "registry.k8s.io/pause:3.10"}
    lim = {"cpu": "100m"} if not gpus else {resource: str(gpus)}
    c["resources"] = {"limits": lim}
    if sidecar:
        c["restartPolicy"] = "Always"
    c.update(extra or {})
    return c


def pod(name, ns, containers, init=None, labels=None, node_selector=None, tolerations=None,
        gates=None, extra_spec=None):
    spec = {"containers": containers}
    if init:
        spec["initContainers"] = init
    if node_selector:
        spec["nodeSelector"] = node_selector
    if tolerations:
        spec["tolerations"] = tolerations
    if gates:
        spec["schedulingGates"] = [{"name": g} for g in gates]
    spec.update(extra_spec or {})
    md = {"name": name, "namespace": ns}
    if labels:
        md["labels"] = labels
    return {"apiVersion": "v1", "kind": "Pod", "metadata": md, "spec": spec}


def limits(c):
    return dig(c, "resources", "limits", default={}) or {}, \
        dig(c, "resources", "requests", default={}) or {}


def nodes():
    def n(name, labels, taints, res):
        lab = {"kubernetes.io/hostname": name, "kubernetes.io/os": "linux"}
        lab.update(labels)
        r = {"cpu": "64", "memory": "512Gi", "pods": "110"}
        r.update(res)
        return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "labels": lab},
                "spec": {"taints": taints}, "status": {"capacity": dict(r), "allocatable": dict(r)}}
    return [
        n("mig-node", {"nvidia.com/gpu.product": "NVIDIA-A100-SXM4-80GB"}, GPU_TAINT,
          {MIG: "7", "nvidia.com/mig-2g.20gb": "3"}),
        # renameByDefault: false - the replicas look like whole GPUs (issue 33 item 1)
        n("ts-node", dict(TS_SEL, **{"nvidia.com/gpu.product": "Tesla-T4",
                                     "nvidia.com/gpu.replicas": "4"}), [], {GPU: "4"}),
        n("h100-node", {"nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3",
                        "nvidia.com/gpu.clique": "c0"}, GPU_TAINT, {GPU: "2"}),
        n("l4-node", {"nvidia.com/gpu.product": "NVIDIA-L4"}, [], {}),
    ]


DRA_OBJECTS = [
    {"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass",
     "metadata": {"name": DRA_CLASS},
     "spec": {"selectors": [{"cel": {"expression": "device.driver == '%s'" % DRA_CLASS}}],
              "extendedResourceName": DRA_EXT}},
    {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice",
     "metadata": {"name": "l4-node-gpus"},
     "spec": {"driver": DRA_CLASS, "nodeName": "l4-node",
              "pool": {"name": "l4-node", "generation": 1, "resourceSliceCount": 1},
              "devices": [{"name": "gpu-%d" % i, "attributes": {
                  "productName": {"string": "NVIDIA L4"}, "index": {"int": i}}}
                  for i in range(2)]}},
]


# --------------------------------------------------------------------------------------------
# the cluster side


def configure(c):
    c.policy_dirs = [os.path.join(HERE, "policies-today")]
    # every request the webhook answers is logged (allowed ones at debug): whether a request
    # reached it at all (pods/resize, pods/ephemeralcontainers, pod-level resources) is read
    # from that log
    c.serve_args += ["--log-level", "debug"]


def setup(c):
    # The scheduler acts as the user it is in a cluster (impersonated by the e2e admin), with
    # the bootstrap RBAC role of that name: the claim webhooks trust the annotation of the
    # scheduler's extended-resource claims only from spec.dra.schedulerUsers
    # (system:kube-scheduler by default).
    with open(c.kubeconfig) as f:
        kc = json.load(f)
    kc["users"][0]["user"]["as"] = "system:kube-scheduler"
    sched_kc = os.path.join(c.work, "kubeconfig-scheduler")
    with open(sched_kc, "w") as f:
        json.dump(kc, f)
    c.procs.start("kube-scheduler", [
        os.path.join(c.args.k8s_bin, "kube-scheduler"), "--kubeconfig", sched_kc,
        "--leader-elect=false", "--secure-port", "0", "--v", "1"] + FEATURES)
    time.sleep(1)
    if not c.procs.alive("kube-scheduler"):
        raise RuntimeError("kube-scheduler exited:\n" + c.procs.log_tail("kube-scheduler"))
    for n in nodes():
        make_node(c, n)


def api(c, method, path, body, ctype="application/strategic-merge-patch+json"):
    """One request to the API server as the e2e admin: (HTTP status, decoded body, warnings)."""
    ctx = ssl.create_default_context(cafile=c.apiserver_crt)
    req = urllib.request.Request(c.apiserver_url + path, method=method,
                                 data=json.dumps(body).encode(),
                                 headers={"Authorization": "Bearer " + TOKEN,
                                          "Content-Type": ctype})
    try:
        with urllib.request.urlopen(req, context=ctx, timeout=30) as r:
            return r.status, json.loads(r.read() or b"{}"), r.headers.get_all("Warning") or []
    except urllib.error.HTTPError as e:
        raw = e.read()
        try:
            return e.code, json.loads(raw), e.headers.get_all("Warning") or []
        except ValueError:
            return e.code, {"message": raw.decode("utf-8", "replace")}, []


def webhook_saw(c, name, op=None, since=0):
    """The webhook's `admission request` log lines about object `name` (after line `since`)."""
    out = []
    try:
        with open(os.path.join(c.work, "logs", "gpu-admission.log"), "rb") as f:
            lines = f.read().decode("utf-8", "replace").splitlines()
    except OSError:
        return out
    for line in lines[since:]:
        try:
            j = json.loads(line)
        except ValueError:
            continue
        if isinstance(j, dict) and j.get("msg") == "admission request" and \
                j.get("name") == name and (op is None or j.get("operation") == op):
            out.append(j)
    return out


def webhook_saw_soon(c, name, op, since, timeout=5):
    """webhook_saw, waiting for the line: the server logs a request after answering it."""
    try:
        return wait_for("the webhook's log line for %s" % name,
                        lambda: webhook_saw(c, name, op, since), timeout, 0.2)
    except RuntimeError:
        return []


def webhook_never_saw(c, name, op=None, since=0):
    """[] when no line about `name` was logged; a line written late has 1 s to show."""
    time.sleep(1)
    return webhook_saw(c, name, op, since)


def log_mark(c):
    try:
        with open(os.path.join(c.work, "logs", "gpu-admission.log"), "rb") as f:
            return len(f.read().splitlines())
    except OSError:
        return 0


def settle(c, ns, name, timeout=45):
    """("bound", node) or ("pending", reason, message) once the scheduler has answered; a
    pod found pending is looked at again 3 s later (a late retry would bind it then)."""
    def state():
        p = c.get("pod", name, ns)
        if not p:
            return ("gone", "", "")
        if p["spec"].get("nodeName"):
            return ("bound", p["spec"]["nodeName"])
        for cond in dig(p, "status", "conditions", default=[]) or []:
            if cond.get("type") == "PodScheduled" and cond.get("status") == "False":
                return ("pending", cond.get("reason", ""), cond.get("message", ""))
        return None
    s = wait_for("pod %s/%s scheduled or unschedulable" % (ns, name), state, timeout, 0.3)
    if s[0] == "pending":
        time.sleep(3)
        s = state() or s
    return s


def said(what, text):
    """Prints the API server's own words for the log (the README quotes them)."""
    note("%s: %s" % (what, " ".join(str(text).split())[:400]))


def create(c, obj):
    """kubectl create; (ok, stderr: warnings or the denial)."""
    r = c.create(obj)
    return r.returncode == 0, r.stderr


def clean(c, *namespaces):
    for ns in namespaces:
        c.kubectl("delete", "pods", "--all", "-n", ns, "--grace-period=0", "--force",
                  "--wait=false", check=False)
    wait_for("pods of %s gone" % ",".join(namespaces), lambda: all(
        not json.loads(c.kubectl("get", "pods", "-n", ns, "-o", "json").stdout)["items"]
        for ns in namespaces), 60, 0.5)


def on(s, node):
    return s[0] == "bound" and s[1] == node


# --------------------------------------------------------------------------------------------
# scenarios


def sc_sidecars(c, ck):
    """Native sidecars (restartPolicy: Always init containers) asking GPUs: stored as such (1.20
    dropped the field), rewritten like containers, counted as the scheduler counts them."""
    s, ns = "sidecars", "research-sc"
    c.namespace(ns)
    ok, err = create(c, pod("sc-1", ns, [container("main")],
                            init=[container("gpu-sidecar", 1, sidecar=True)]))
    if ck.expect(s + "/sidecar-only-admitted", ok, err):
        ck.expect(s + "/rewrite-warning", "Warning" in err and MIG in err,
                  err or "(no warning)")
        p = c.get("pod", "sc-1", ns)
        sc = dig(p, "spec", "initContainers", 0, default={})
        ck.expect(s + "/restartPolicy-Always-stored", sc.get("restartPolicy") == "Always", sc)
        lim, req = limits(sc)
        ck.expect(s + "/sidecar-gpu-rewritten-to-mig", lim.get(MIG) == "1" and
                  req.get(MIG) == "1" and GPU not in lim and GPU not in req, (lim, req))
        ck.expect(s + "/bound-to-mig-node", on(settle(c, ns, "sc-1"), "mig-node"),
                  settle(c, ns, "sc-1"))
    # 1 in the container + 1 in a sidecar = 2 GPUs (POLICY.md "GPU count"): rule
    # research-one-slice (gpus >= 2) denies it
    ok, err = create(c, pod("sc-2", ns, [container("main", 1)],
                            init=[container("gpu-sidecar", 1, sidecar=True)]))
    expect(ck, s + "/sidecar-gpus-counted-in-rule-match",
           not ok and any(h in err for h in POD_HOOKS) and
           "research pods get one MIG slice" in err,
           err or "admitted: %s" % json.dumps(dig(c.get("pod", "sc-2", ns), "spec")))
    # a plain init container runs before the containers: max(1, 1) = 1 GPU, admitted
    ok, err = create(c, pod("sc-3", ns, [container("main", 1)],
                            init=[container("gpu-init", 1)]))
    ck.expect(s + "/plain-init-not-summed-admitted", ok, err)
    if ok:
        ck.expect(s + "/plain-init-bound-to-mig-node", on(settle(c, ns, "sc-3"), "mig-node"),
                  settle(c, ns, "sc-3"))
    clean(c, ns)


def sc_sidecar_fit(c, ck):
    """Issue 33: on a 2-GPU node, 1 container + 2 sidecars asking 1 GPU each does not fit; the
    webhook counts 3 as the scheduler does (pool h100, gpusPerNode 2) and refuses it."""
    s, ns = "sidecar-fit", "train-fit"
    c.namespace(ns)

    def three(name, namespace, n_sidecars):
        return pod(name, namespace, [container("main", 1)],
                   init=[container("side-%d" % i, 1, sidecar=True) for i in range(n_sidecars)],
                   node_selector={"nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3"},
                   tolerations=GPU_TOL)
    # The scheduler's own count, without the webhook (kube-system is excluded by the chart)
    ok, err = create(c, three("fit-control-3", "kube-system", 2))
    st = settle(c, "kube-system", "fit-control-3") if ok else ("not created", err)
    ck.expect(s + "/scheduler-counts-3-unschedulable", st[0] == "pending" and
              "Insufficient nvidia.com/gpu" in st[2], st)
    clean(c, "kube-system")
    ok, err = create(c, three("fit-control-2", "kube-system", 1))
    st = settle(c, "kube-system", "fit-control-2") if ok else ("not created", err)
    ck.expect(s + "/scheduler-counts-2-fits", on(st, "h100-node"), st)
    clean(c, "kube-system")
    ok, err = create(c, three("fit-3", ns, 2))
    detail = err
    if ok:
        detail = "admitted; scheduler: %s" % (settle(c, ns, "fit-3"),)
    expect(ck, s + "/webhook-count-agrees-with-scheduler",
           not ok and any(h in err for h in POD_HOOKS) and "pod asks 3 GPUs" in err, detail)
    clean(c, ns)
    ok, err = create(c, three("fit-2", ns, 1))
    ck.expect(s + "/two-gpus-admitted", ok, err)
    if ok:
        ck.expect(s + "/two-gpus-bound-to-h100", on(settle(c, ns, "fit-2"), "h100-node"),
                  settle(c, ns, "fit-2"))
    clean(c, ns)


def sc_pod_level_resources(c, ck):
    """spec.resources (PodLevelResources, beta and on in 1.37): cpu/memory at pod level beside
    a container GPU is admitted and placed; a GPU at pod level is refused by the API server
    (only cpu, memory and hugepages are pod-level resources), so no GPU escapes the webhook
    there."""
    s, ns = "pod-level-resources", "research-plr"
    c.namespace(ns)
    pl = {"resources": {"requests": {"cpu": "1", "memory": "1Gi"},
                        "limits": {"cpu": "1", "memory": "1Gi"}}}
    ok, err = create(c, pod("plr-1", ns, [container("main", 1)], extra_spec=pl))
    if ck.expect(s + "/cpu-memory-at-pod-level-admitted", ok, err):
        p = c.get("pod", "plr-1", ns)
        ck.expect(s + "/pod-level-resources-stored",
                  dig(p, "spec", "resources", "limits", "memory") == "1Gi", dig(p, "spec"))
        lim, req = limits(dig(p, "spec", "containers", 0))
        ck.expect(s + "/container-gpu-rewritten", lim.get(MIG) == "1" and req.get(MIG) == "1",
                  (lim, req))
        ck.expect(s + "/bound-to-mig-node", on(settle(c, ns, "plr-1"), "mig-node"),
                  settle(c, ns, "plr-1"))
    mark = log_mark(c)
    gpl = {"resources": {"limits": {GPU: "1"}, "requests": {GPU: "1"}}}
    ok, err = create(c, pod("plr-gpu", ns, [container("main")], extra_spec=gpl))
    said("pod-level nvidia.com/gpu", err)
    ck.expect(s + "/gpu-at-pod-level-refused-by-apiserver",
              not ok and "spec.resources" in err and "nvidia.com/gpu" in err and
              "admission webhook" not in err, err)
    seen = webhook_never_saw(c, "plr-gpu", since=mark)
    ck.expect(s + "/gpu-at-pod-level-webhook-not-asked", not seen, seen)
    clean(c, ns)


def sc_unplaced_off_shared(c, ck):
    """Issue 33 item 1 on the real scheduler: next to a shared pool's pod, a plain-GPU pod no
    rule places (a namespace of no tenant; another tenant's unmatched namespace) is never bound
    to the time-sliced node, with the pool's nodeSelector or without any."""
    s = "unplaced-off-shared"
    # ops-x: tenant platform's (the shared pod's own) unmatched namespace would test nothing of
    # isolation; lab-x is another tenant's (lab, untrusted, no rule names it)
    team, intr, other = "team-a", "intruder", "lab-x"
    for ns in (team, intr, other):
        c.namespace(ns)
    ok, err = create(c, pod("shared-0", team, [container("main", 1)]))
    if not ck.expect(s + "/tenant-pod-placed-on-shared-pool", ok and "ts-shared" in err, err):
        return
    ck.expect(s + "/tenant-pod-bound-to-ts-node", on(settle(c, team, "shared-0"), "ts-node"),
              settle(c, team, "shared-0"))
    for name, ns, sel, check in (
            ("intr-sel", intr, TS_SEL, "no-tenant-pool-selector-not-on-shared-node"),
            ("intr-any", intr, None, "no-tenant-no-selector-not-on-shared-node"),
            ("lab-sel", other, TS_SEL, "other-tenant-unplaced-not-on-shared-node")):
        ok, err = create(c, pod(name, ns, [container("main", 1)], node_selector=sel))
        st = settle(c, ns, name) if ok else ("denied", err)
        expect(ck, "%s/%s" % (s, check), not on(st, "ts-node"), st)
    clean(c, team, intr, other)


def sc_scheduling_gates(c, ck):
    """schedulingGates: placement changed by an UPDATE while the pod is gated (1.27+ allows
    adding nodeSelector and narrowing affinity then). The webhook's own affinity cannot be
    taken away, and the isolation holds when the gate goes."""
    s = "scheduling-gates"
    team, res, intr = "team-g", "research-g", "intruder-g"
    for ns in (team, res, intr):
        c.namespace(ns)
    gate = ["e2e.gpu-admission.io/hold"]
    ungate = json.dumps({"spec": {"schedulingGates": None}})

    # 1. a pod placed on the shared pool: the API server refuses to drop the anti-affinity
    ok, err = create(c, pod("g-team", team, [container("main", 1)], gates=gate))
    if ck.expect(s + "/gated-shared-pod-admitted", ok, err):
        st = settle(c, team, "g-team")
        ck.expect(s + "/gated-not-scheduled", st[0] == "pending" and st[1] == "SchedulingGated",
                  st)
        anti = dig(c.get("pod", "g-team", team), "spec", "affinity", "podAntiAffinity")
        ck.expect(s + "/isolation-stored", bool(anti), anti)
        r = c.kubectl("patch", "pod", "g-team", "-n", team, "--type=json", "-p",
                      json.dumps([{"op": "remove", "path": "/spec/affinity/podAntiAffinity"}]),
                      check=False)
        said("anti-affinity removal while gated", r.stderr)
        ck.expect(s + "/anti-affinity-removal-refused-by-apiserver", r.returncode != 0 and
                  "admission webhook" not in r.stderr and "Forbidden" in r.stderr, r.stderr)
        r = c.kubectl("patch", "pod", "g-team", "-n", team, "--type=merge", "-p", ungate,
                      check=False)
        st = settle(c, team, "g-team")
        ck.expect(s + "/ungated-shared-pod-bound-to-ts-node", r.returncode == 0 and
                  on(st, "ts-node"), (r.stderr, st))

    # 2. a MIG-placed pod gains the shared node's hostname while gated: ANDed with the pool's
    # affinity it cannot land anywhere, and it never lands on the shared node
    ok, err = create(c, pod("g-res", res, [container("main", 1)], gates=gate))
    if ck.expect(s + "/gated-mig-pod-admitted", ok, err):
        r = c.kubectl("patch", "pod", "g-res", "-n", res, "--type=merge", "-p", json.dumps(
            {"spec": {"nodeSelector": {"kubernetes.io/hostname": "ts-node"}}}), check=False)
        ck.expect(s + "/nodeSelector-added-while-gated", r.returncode == 0, r.stderr)
        c.kubectl("patch", "pod", "g-res", "-n", res, "--type=merge", "-p", ungate)
        st = settle(c, res, "g-res")
        ck.expect(s + "/mig-pod-never-on-shared-node", st[0] == "pending" and
                  "node affinity/selector" in st[2], st)

    # 3. an unplaced plain-GPU pod (no tenant) gains the shared pool's nodeSelector while
    # gated: it must not reach the time-sliced node (POLICY.md "Isolation by default")
    ok, err = create(c, pod("g-intr", intr, [container("main", 1)], gates=gate))
    if ck.expect(s + "/gated-unplaced-pod-admitted", ok, err):
        r = c.kubectl("patch", "pod", "g-intr", "-n", intr, "--type=merge", "-p",
                      json.dumps({"spec": {"nodeSelector": TS_SEL}}), check=False)
        st = ("update refused", r.stderr)
        if r.returncode == 0:
            c.kubectl("patch", "pod", "g-intr", "-n", intr, "--type=merge", "-p", ungate)
            st = settle(c, intr, "g-intr")
        expect(ck, s + "/unplaced-selector-added-while-gated-not-on-shared-node",
               not on(st, "ts-node"), st)
    clean(c, team, res, intr)


def ephemeral(c, ns, name, ctr):
    return api(c, "PATCH", "/api/v1/namespaces/%s/pods/%s/ephemeralcontainers" % (ns, name),
               {"spec": {"ephemeralContainers": [ctr]}})


def sc_ephemeral(c, ck):
    """pods/ephemeralcontainers (`kubectl debug`): the chart's validating entry sees the
    subresource; an untrusted tenant's debug container with NVIDIA_VISIBLE_DEVICES or
    privileged is refused, a plain one is stored."""
    s, ns, trusted = "ephemeral-containers", "research-eph", "ops-eph"
    for n in (ns, trusted):
        c.namespace(n)
    ok, err = create(c, pod("eph-1", ns, [container("main", 1)]))
    if not ck.expect(s + "/target-pod-admitted", ok, err):
        return
    dbg = {"name": "dbg-env", "image": "busybox", "targetContainerName": "main",
           "env": [{"name": "NVIDIA_VISIBLE_DEVICES", "value": "all"}]}
    mark = log_mark(c)
    code, body, _ = ephemeral(c, ns, "eph-1", dbg)
    ck.expect(s + "/nvidia-visible-devices-refused", code == 403 and
              VALIDATE in body.get("message", "") and
              "NVIDIA_VISIBLE_DEVICES" in body.get("message", ""), (code, body.get("message")))
    seen = webhook_saw_soon(c, "eph-1", "UPDATE", mark)
    ck.expect(s + "/webhook-saw-subresource-update",
              any(j.get("webhook") == "validate" and j.get("decision") == "denied" for j in seen),
              seen)
    priv = {"name": "dbg-priv", "image": "busybox", "securityContext": {"privileged": True}}
    code, body, _ = ephemeral(c, ns, "eph-1", priv)
    ck.expect(s + "/privileged-refused", code == 403 and VALIDATE in body.get("message", "") and
              "privileged" in body.get("message", ""), (code, body.get("message")))
    # the same through the client users run: kubectl debug's sysadmin profile is privileged,
    # --custom adds the env
    r = c.kubectl("debug", "eph-1", "-n", ns, "--image=busybox", "--profile=sysadmin",
                  "-c", "dbg-sysadmin", check=False)
    ck.expect(s + "/kubectl-debug-sysadmin-refused", r.returncode != 0 and VALIDATE in r.stderr
              and "privileged" in r.stderr, r.stdout + r.stderr)
    custom = os.path.join(c.work, "debug-env.json")
    with open(custom, "w") as f:
        json.dump({"env": [{"name": "NVIDIA_VISIBLE_DEVICES", "value": "all"}]}, f)
    r = c.kubectl("debug", "eph-1", "-n", ns, "--image=busybox", "--custom=" + custom,
                  "-c", "dbg-custom", check=False)
    ck.expect(s + "/kubectl-debug-custom-env-refused", r.returncode != 0 and
              VALIDATE in r.stderr and "NVIDIA_VISIBLE_DEVICES" in r.stderr,
              r.stdout + r.stderr)
    code, body, _ = ephemeral(c, ns, "eph-1", {"name": "dbg", "image": "busybox"})
    names = [e.get("name") for e in dig(c.get("pod", "eph-1", ns), "spec",
                                        "ephemeralContainers", default=[]) or []]
    ck.expect(s + "/plain-debug-container-stored", code == 200 and names == ["dbg"],
              (code, body.get("message"), names))
    # a trusted tenant's debug container may set the env (POLICY.md: untrusted pods only)
    ok, err = create(c, pod("eph-2", trusted, [container("main")]))
    code, body, _ = ephemeral(c, trusted, "eph-2", dict(dbg))
    ck.expect(s + "/trusted-tenant-env-allowed", ok and code == 200,
              (err, code, body.get("message")))
    clean(c, ns, trusted)


def sc_resize(c, ck):
    """pods/resize (in-place resize, GA in 1.35): the API server refuses any GPU resize (only
    cpu and memory are resizable) before a webhook could be asked; the chart registers no
    pods/resize rule, so a cpu resize is never judged (it cannot reach a GPU)."""
    s, ns = "resize", "research-rs"
    c.namespace(ns)
    main = container("main", 1, extra=None)
    main["resources"]["limits"]["cpu"] = "100m"
    ok, err = create(c, pod("rs-1", ns, [main]))
    if not ck.expect(s + "/pod-admitted", ok, err):
        return
    mark = log_mark(c)
    for check, res in (("more-mig-slices-refused", {MIG: "2"}),
                       ("back-to-plain-gpu-refused", {GPU: "1"})):
        p = {"spec": {"containers": [{"name": "main", "resources": {
            "limits": dict(res, cpu="100m"), "requests": dict(res, cpu="100m")}}]}}
        r = c.kubectl("patch", "pod", "rs-1", "-n", ns, "--subresource=resize",
                      "--type=strategic", "-p", json.dumps(p), check=False)
        said("resize " + check, r.stderr)
        ck.expect("%s/%s-by-apiserver" % (s, check), r.returncode != 0 and
                  "admission webhook" not in r.stderr, r.stdout + r.stderr)
    p = {"spec": {"containers": [{"name": "main", "resources": {
        "limits": {"cpu": "200m"}, "requests": {"cpu": "200m"}}}]}}
    r = c.kubectl("patch", "pod", "rs-1", "-n", ns, "--subresource=resize", "--type=strategic",
                  "-p", json.dumps(p), check=False)
    lim, _ = limits(dig(c.get("pod", "rs-1", ns), "spec", "containers", 0))
    ck.expect(s + "/cpu-resize-accepted-gpu-unchanged", r.returncode == 0 and
              lim.get("cpu") == "200m" and lim.get(MIG) == "1" and GPU not in lim,
              (r.stderr, lim))
    # the CREATE's lines may still be on their way: only an UPDATE would be the resize's
    seen = webhook_never_saw(c, "rs-1", "UPDATE", mark)
    ck.expect(s + "/webhook-not-asked-for-resize", not seen, seen)
    clean(c, ns)


def sc_dra_extended(c, ck):
    """Pods naming a DRA extended resource (GA in 1.37): the real scheduler serves them from
    the L4's ResourceSlice through a claim of its own. POLICY.md counts, matches and places
    them as GPUs; the scheduler's claim is left alone. The DeviceClass exists only during this
    scenario: with it, nvidia.com/gpu is also served by DRA on the L4, which would give the
    unplaced pods of other scenarios a second place to go."""
    s, ns = "dra-extended", "dra-x"
    c.namespace(ns)
    for obj in DRA_OBJECTS:
        c.kubectl("apply", "-f", "-", stdin=json.dumps(obj))
    time.sleep(2)  # the scheduler's informers see the class before the first pod
    try:
        dra_pods(c, ck, s, ns)
    finally:
        for obj in DRA_OBJECTS:
            c.kubectl("delete", obj["kind"].lower(), obj["metadata"]["name"], "--wait=false",
                      check=False)


def dra_pods(c, ck, s, ns):
    for name, res, check in (
            ("dx-class", "deviceclass.resource.kubernetes.io/" + DRA_CLASS,
             "deviceclass-resource-judged"),
            ("dx-ext", DRA_EXT, "extended-resource-name-judged")):
        mark = log_mark(c)
        ok, err = create(c, pod(name, ns, [container("main", 1, resource=res)]))
        if not ck.expect("%s/%s-admitted" % (s, name), ok, err):
            continue
        p = c.get("pod", name, ns)
        ann = dig(p, "metadata", "annotations", default={}) or {}
        expect(ck, "%s/%s" % (s, check), ann.get("gpu-admission.io/rule") == "dra-pods",
               "annotations %s; webhook saw it: %s" % (
                   ann, bool(webhook_saw(c, name, "CREATE", mark))))
        st = settle(c, ns, name)
        ck.expect("%s/%s-bound-to-l4-node" % (s, name), on(st, "l4-node"), st)
        cname = dig(c.get("pod", name, ns), "status", "extendedResourceClaimStatus",
                    "resourceClaimName")
        claim = c.get("resourceclaim", cname, ns) if cname else None
        cann = dig(claim, "metadata", "annotations", default={}) or {}
        ck.expect("%s/%s-scheduler-claim-allocated" % (s, name),
                  cann.get("resource.kubernetes.io/extended-resource-claim") == "true" and
                  dig(claim, "status", "allocation", "devices", "results", 0, "driver") ==
                  DRA_CLASS, (cname, cann, dig(claim, "status")))
        ck.expect("%s/%s-scheduler-claim-untouched" % (s, name),
                  claim is not None and not any(k.startswith("gpu-admission.io/") for k in cann),
                  cann)
        clean(c, ns)


def claim(name, ns, admin=True):
    req = {"deviceClassName": DRA_CLASS}
    if admin:
        req["adminAccess"] = True
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
            "metadata": {"name": name, "namespace": ns},
            "spec": {"devices": {"requests": [{"name": "gpu", "exactly": req}]}}}


def sc_admin_access(c, ck):
    """adminAccess (GA in 1.36) needs the namespace label resource.kubernetes.io/admin-access:
    "true" at the API server, and the tenant's dra.adminAccess at the webhook: both must
    agree before a claim gets admin access to devices. The mutating claim entry runs before
    the API server's validation, so a tenant without the right hears the webhook's refusal
    whatever the label; the API server's own refusal shows for the tenant that has it."""
    s = "admin-access"
    lab = {"resource.kubernetes.io/admin-access": "true"}
    c.namespace("ops-noadm")
    c.namespace("lab-noadm")
    c.namespace("lab-adm", lab)
    c.namespace("ops-adm", lab)
    c.namespace("squat-adm", lab)
    ok, err = create(c, claim("a", "ops-noadm"))
    said("adminAccess, unlabelled namespace", err)
    ck.expect(s + "/tenant-with-right-unlabelled-namespace-refused-by-apiserver", not ok and
              "resource.kubernetes.io/admin-access" in err and "admission webhook" not in err,
              err)
    for ns, check in (("lab-noadm", "untrusted-tenant-unlabelled-refused-by-webhook"),
                      ("lab-adm", "untrusted-tenant-labelled-refused-by-webhook"),
                      ("squat-adm", "no-tenant-labelled-refused-by-webhook")):
        ok, err = create(c, claim("a", ns))
        ck.expect("%s/%s" % (s, check), not ok and any(h in err for h in CLAIM_HOOKS) and
                  "asks adminAccess" in err and "dra.adminAccess" in err, err)
    ok, err = create(c, claim("a", "ops-adm"))
    stored = dig(c.get("resourceclaim", "a", "ops-adm"), "spec", "devices", "requests", 0,
                 "exactly", "adminAccess")
    ck.expect(s + "/labelled-tenant-with-right-allowed", ok and stored is True, (err, stored))
    for ns in ("ops-noadm", "lab-noadm", "lab-adm", "ops-adm", "squat-adm"):
        c.kubectl("delete", "resourceclaims", "--all", "-n", ns, "--wait=false", check=False)


def sc_workload_api(c, ck):
    """Pods of the Workload API (scheduling.k8s.io/v1beta1 PodGroup, pod spec.schedulingGroup;
    GenericWorkload, beta in 1.37): the webhook places them like any pod and keeps the field;
    the scheduler's gang plugin holds the first until minCount pods exist, then binds both to
    the pool's node."""
    s, ns = "workload-api", "train-wl"
    c.namespace(ns)
    pg = {"apiVersion": "scheduling.k8s.io/v1beta1", "kind": "PodGroup",
          "metadata": {"name": "pg-1", "namespace": ns},
          "spec": {"schedulingPolicy": {"gang": {"minCount": 2}}}}
    ok, err = create(c, pg)
    if not ck.expect(s + "/podgroup-v1beta1-created", ok, err):
        return

    def member(i):
        return pod("wl-%d" % i, ns, [container("main", 1)],
                   labels={"gpu-admission.io/group": "pg-1"},
                   extra_spec={"schedulingGroup": {"podGroupName": "pg-1"}})
    ok, err = create(c, member(0))
    if not ck.expect(s + "/first-member-admitted", ok, err):
        return
    p = c.get("pod", "wl-0", ns)
    ck.expect(s + "/schedulingGroup-stored",
              dig(p, "spec", "schedulingGroup", "podGroupName") == "pg-1", dig(p, "spec"))
    ck.expect(s + "/placed-by-rule", dig(p, "metadata", "annotations",
                                         "gpu-admission.io/rule") == "train-whole" and
              any(t.get("key") == "nvidia.com/gpu" for t in dig(p, "spec", "tolerations",
                                                                 default=[]) or []),
              dig(p, "metadata"))
    time.sleep(4)
    ck.expect(s + "/gang-held-below-minCount",
              not dig(c.get("pod", "wl-0", ns), "spec", "nodeName"),
              dig(c.get("pod", "wl-0", ns), "status"))
    ok, err = create(c, member(1))
    ck.expect(s + "/second-member-admitted", ok, err)
    st = [settle(c, ns, "wl-%d" % i) for i in range(2)]
    ck.expect(s + "/gang-bound-to-h100", all(on(x, "h100-node") for x in st), st)
    clean(c, ns)


def sc_mutating_skipped(c, ck):
    """The validating webhook alone (the chart's mutating configuration deleted, as when
    another mutating webhook reordered or a reinvocation failed open): what the API server
    stores must still keep the isolation. Runs last; the configuration is put back."""
    s = "mutating-skipped"
    res, team, intr = "research-vo", "team-vo", "intruder-vo"
    for ns in (res, team, intr):
        c.namespace(ns)
    saved = c.get("mutatingwebhookconfiguration", "gpu-admission")
    if not ck.expect(s + "/chart-mutating-configuration-found", saved is not None):
        return
    c.kubectl("delete", "mutatingwebhookconfiguration", "gpu-admission")
    try:
        time.sleep(2)  # the API server's webhook informer drops the entry
        ok, err = create(c, pod("vo-side", res, [container("main")],
                                init=[container("gpu-sidecar", 1, sidecar=True)]))
        ck.expect(s + "/sidecar-gpu-not-rewritten-refused", not ok and VALIDATE in err and
                  "asks for nvidia.com/gpu but rule research-mig" in err, err)
        ok, err = create(c, pod("vo-team", team, [container("main", 1)]))
        ck.expect(s + "/shared-pool-pod-without-isolation-refused",
                  not ok and VALIDATE in err, err)
        for name, sel, check in (("vo-sel", TS_SEL, "unplaced-pool-selector-refused"),
                                 ("vo-any", None, "unplaced-no-selector-refused")):
            ok, err = create(c, pod(name, intr, [container("main", 1)], node_selector=sel))
            detail = err if not ok else "admitted; scheduler: %s" % (settle(c, intr, name),)
            expect(ck, "%s/%s" % (s, check), not ok and VALIDATE in err, detail)
    finally:
        for k in ("resourceVersion", "uid", "creationTimestamp", "generation", "managedFields"):
            saved["metadata"].pop(k, None)
        c.kubectl("create", "-f", "-", stdin=json.dumps(saved))
    time.sleep(2)
    ok, err = create(c, pod("vo-back", res, [container("main", 1)]))
    ck.expect(s + "/mutating-entry-restored", ok and MIG in err, err)
    clean(c, res, team, intr)


SCENARIOS = [
    ("sidecars", sc_sidecars),
    ("sidecar-fit", sc_sidecar_fit),
    ("pod-level-resources", sc_pod_level_resources),
    ("unplaced-off-shared", sc_unplaced_off_shared),
    ("scheduling-gates", sc_scheduling_gates),
    ("ephemeral-containers", sc_ephemeral),
    ("resize", sc_resize),
    ("dra-extended", sc_dra_extended),
    ("admin-access", sc_admin_access),
    ("workload-api", sc_workload_api),
    ("mutating-skipped", sc_mutating_skipped),  # last: it takes the mutating entry away
]
