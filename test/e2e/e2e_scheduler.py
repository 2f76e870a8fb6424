#!/usr/bin/env python3
"""e2e_scheduler.py - `gpu-admission simulate` checked against the real kube-scheduler v1.37.2
(ctest e2e/scheduler; issue 15).

A real kube-apiserver (etcd, the same cached binaries of build-kube.sh as run_e2e.py), the webhook
serving test/sim/policies and registered from the chart, and kube-scheduler configured to bin
pack (NodeResourcesMostAllocated, as the simulator's packing assumes). For each inventory, fake
GPU nodes are created through the API (labels, taints, and capacity/allocatable of
nvidia.com/gpu and nvidia.com/mig-* patched on nodes/status; no kubelet)
and written as the `kubectl get nodes -o json` List the simulator reads. The same Pods are
created through the webhooks one at a time (each waited for until bound or unschedulable, in
input order, which is the simulator's packing order for pods competing for the same GPUs) and
simulated; the check is that every pod the simulator places
is bound by the scheduler to a node of the same group (gpu.product) and every pod it leaves
unplaced stays unschedulable, plus per-inventory structure (gang on one NVLink domain, tenants
on different nodes).

Inventories: (1) fixed MIG layouts (all-1g.5gb, all-3g.20gb), an untainted whole-GPU node, a
pod whose own zone affinity is ANDed with the pool's selector, pods only the untainted node
takes; (2) whole H100s in 8-GPU NVLink domains with a 3-pod gang of 4 GPUs (island too small),
and (3) the same gang with 16-GPU domains (fits); (4) topology levels (issue 21): 16 HGX nodes
in racks of 4 and blocks of 8, gangs of 2 x 4 (one node), 3 x 8 (one rack), 6 x 8 (one block)
and of unknown size (widest domain) bound as simulated, and a 9 x 8 gang refused at creation.
Time-sliced pools cannot run on v1.20 (see inventories()).

usage: e2e_scheduler.py --k8s-bin DIR --gpu-admission BIN --source-dir SRC --work DIR
"""
import argparse
import json
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from run_e2e import (FEATURES, Cluster, Fatal, cluster_args, end_run, note, run, setup_failed,  # noqa: E402
                     start_run, tools_missing, wait_for)

NAMESPACES = ["inference", "big", "team-a", "team-b", "training", "other", "gang"]


def node(name, product, labels=None, taints=None, resources=None):
    lab = {"kubernetes.io/hostname": name, "kubernetes.io/os": "linux",
           "nvidia.com/gpu.product": product}
    lab.update(labels or {})
    res = {"cpu": "64", "memory": "512Gi", "pods": "110"}
    res.update(resources or {})
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "labels": lab},
            "spec": {"taints": taints or []},
            "status": {"capacity": dict(res), "allocatable": dict(res)}}


GPU_TAINT = [{"key": "nvidia.com/gpu", "effect": "NoSchedule"}]


def pod(name, ns, gpus=1, mem=None, labels=None, zone=None, annotations=None):
    meta = {"name": name, "namespace": ns, "labels": labels or {}}
    if mem:
        meta["annotations"] = {"gpu-admission.io/gpu-memory": mem}
    if annotations:
        meta.setdefault("annotations", {}).update(annotations)
    spec = {"containers": [{"name": "main", "image": "example/x",
                            "resources": {"limits": {"nvidia.com/gpu": str(gpus)}}}]}
    if zone:
        spec["affinity"] = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
            "nodeSelectorTerms": [{"matchExpressions": [
                {"key": "zone", "operator": "In", "values": [zone]}]}]}}}
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec}


def inventories():
    mig_a = node("mig-a", "NVIDIA-A100-40GB", {"zone": "a", "nvidia.com/gpu.count": "2",
                                               "nvidia.com/mig.config": "all-1g.5gb"},
                 GPU_TAINT, {"nvidia.com/gpu": "0", "nvidia.com/mig-1g.5gb": "14"})
    mig_b = node("mig-b", "NVIDIA-A100-40GB", {"zone": "b", "nvidia.com/gpu.count": "2",
                                               "nvidia.com/mig.config": "all-3g.20gb"},
                 GPU_TAINT, {"nvidia.com/gpu": "0", "nvidia.com/mig-3g.20gb": "4"})
    plain = node("plain", "Tesla-T4", {"nvidia.com/gpu.count": "2"}, None,
                 {"nvidia.com/gpu": "2"})
    yield ("mig-affinity-taints", [mig_a, mig_b, plain],
           [pod("big-%d" % i, "inference", mem="18Gi") for i in range(5)] +
           [pod("small-%d" % i, "inference", mem="4Gi") for i in range(10)] +
           [pod("small-zone-b", "inference", mem="4Gi", zone="b"),   # ANDed: zone b has no 1g
            pod("small-zone-a", "inference", mem="4Gi", zone="a"),
            pod("free-0", "other"), pod("free-1", "other"), pod("free-2", "other")])

    # No time-sliced inventory: the engine's tenant anti-affinity needs namespaceSelector,
    # which a v1.20 API server drops before the validating webhook, so the webhook (rightly)
    # refuses every time-slicing pod there ("time-slicing and MPS pools need Kubernetes 1.22
    # or later"). Tenant conflicts are covered by sim/test_sim and sim/cli.
    def h100(name, clique, island):
        return node(name, "NVIDIA-H100-80GB", {
            "nvidia.com/gpu.count": "8", "nvidia.com/gpu.clique": clique,
            "gpu-admission.io/nvlink-island-size": str(island)},
            GPU_TAINT, {"nvidia.com/gpu": "8"})
    gang = [pod("train-%d" % i, "training", gpus=4, labels={"gpu-admission.io/group": "ft"})
            for i in range(3)]
    yield ("nvlink-gang-8", [h100("h-0", "c0", 8), h100("h-1", "c1", 8)], gang)
    yield ("nvlink-gang-16", [h100("h-0", "c0", 16), h100("h-1", "c0", 16)], gang)

    # Topology levels (issue 21; test/e2e/policies-scheduler/00-gang.yaml): 16 HGX nodes, the
    # island one node, racks of 4 nodes (32 GPUs) and blocks of 8 (64 GPUs)
    hgx = [node("hgx-%02d" % k, "NVIDIA-H100-80GB-HBM3", {
        "nvidia.com/gpu.count": "8", "nvidia.com/gpu.clique": "hgx-%02d" % k,
        RACK: "rack-%d" % (k // 4), BLOCK: "block-%d" % (k // 8)},
        GPU_TAINT, {"nvidia.com/gpu": "8"}) for k in range(16)]
    for label, n, gpus, size, _ in LEVEL_GANGS:
        ann = {"gpu-admission.io/gang-size": str(size)} if size else None
        yield (label, hgx, [pod("%s-%d" % (label, i), "gang", gpus=gpus, annotations=ann,
                                labels={"gpu-admission.io/group": label}) for i in range(n)])


RACK, BLOCK = "cloud.provider.com/topology-rack", "cloud.provider.com/topology-block"
# label, pods, GPUs each, gang-size annotation (None: unknown), the domain all pods share
LEVEL_GANGS = [("levels-2x4", 2, 4, 2, "nvidia.com/gpu.clique"),
               ("levels-3x8", 3, 8, 3, RACK),
               ("levels-6x8", 6, 8, 6, BLOCK),
               ("levels-unknown", 2, 8, None, BLOCK)]


# Bin packing, as the simulator assumes: NodeResourcesFit scores MostAllocated (the separate
# NodeResourcesMostAllocated plugin of v1beta1 configurations is gone since 1.24), the
# balancing score is off so it cannot pull pods apart.
SCHED_CONFIG = {
    "apiVersion": "kubescheduler.config.k8s.io/v1",
    "kind": "KubeSchedulerConfiguration",
    "leaderElection": {"leaderElect": False},
    "profiles": [{
        "schedulerName": "default-scheduler",
        "plugins": {"score": {
            "disabled": [{"name": "NodeResourcesBalancedAllocation"}],
            "enabled": [{"name": "NodeResourcesFit", "weight": 10}]}},
        "pluginConfig": [{"name": "NodeResourcesFit", "args": {"scoringStrategy": {
            "type": "MostAllocated", "resources": [
                {"name": "cpu", "weight": 1}, {"name": "nvidia.com/gpu", "weight": 10},
                {"name": "nvidia.com/gpu.shared", "weight": 10},
                {"name": "nvidia.com/mig-1g.5gb", "weight": 10},
                {"name": "nvidia.com/mig-3g.20gb", "weight": 10}]}}}],
    }],
}


def start_scheduler(c):
    cfg = dict(SCHED_CONFIG)
    cfg["clientConnection"] = {"kubeconfig": c.kubeconfig}
    path = os.path.join(c.work, "scheduler-config.json")
    with open(path, "w") as f:
        json.dump(cfg, f)
    c.procs.start("kube-scheduler", [
        os.path.join(c.args.k8s_bin, "kube-scheduler"), "--config", path,
        "--secure-port", "0", "--v", "1"] + FEATURES)
    time.sleep(1)
    if not c.procs.alive("kube-scheduler"):
        raise RuntimeError("kube-scheduler exited:\n" + c.procs.log_tail("kube-scheduler"))


def make_node(c, n):
    obj = json.loads(json.dumps(n))
    status = obj.pop("status")
    c.kubectl("create", "-f", "-", stdin=json.dumps(obj))
    status["conditions"] = [{"type": "Ready", "status": "True", "reason": "E2E",
                             "message": "fake node", "lastHeartbeatTime": None,
                             "lastTransitionTime": None}]
    c.kubectl("patch", "node", n["metadata"]["name"], "--subresource=status", "--type=merge",
              "-p", json.dumps({"status": status}))
    # TaintNodesByCondition gave it not-ready; with no kubelet nothing lifts it
    c.kubectl("patch", "node", n["metadata"]["name"], "--type=merge",
              "-p", json.dumps({"spec": {"taints": n["spec"]["taints"] or None}}))


def settle(c, ns, name, timeout=60):
    """Waits until the pod is bound or the scheduler has said it cannot fit; the node or None."""
    def state():
        p = c.get("pod", name, ns)
        if not p:
            return None
        if p["spec"].get("nodeName"):
            return ("bound", p["spec"]["nodeName"])
        for cond in p.get("status", {}).get("conditions", []):
            if cond.get("type") == "PodScheduled" and cond.get("status") == "False":
                return ("unschedulable", cond.get("message", ""))
        return None
    return wait_for("pod %s/%s scheduled or unschedulable" % (ns, name), state, timeout, 0.3)


def scenario(c, ck, label, nodes, pods):
    work = os.path.join(c.work, label)
    os.makedirs(work)
    for n in nodes:
        make_node(c, n)
    # The simulator reads what the API server now stores for the nodes
    listing = c.kubectl("get", "nodes", "-o", "json").stdout
    nodes_json = os.path.join(work, "nodes.json")
    with open(nodes_json, "w") as f:
        f.write(listing)
    pods_json = os.path.join(work, "pods.json")
    with open(pods_json, "w") as f:
        json.dump({"apiVersion": "v1", "kind": "List", "items": pods}, f)
    r = run([c.args.gpu_admission, "simulate", "--policies", c.webhook_policies, "--inventory",
             nodes_json, "-o", "json", pods_json], check=False)
    ck.expect(label + "/simulate", r.returncode == 0, r.stderr)
    if r.returncode != 0:
        return
    sim = json.loads(r.stdout)
    sim_node = {p["pod"]: p["node"] for p in sim["placements"]}
    sim_unplaced = {u["pod"]: u["reason"] for u in sim["unplaced"]}
    group = {n["metadata"]["name"]: n["metadata"]["labels"]["nvidia.com/gpu.product"]
             for n in nodes}
    # Through the webhooks, one at a time, in input order: each inventory lists pods that
    # compete for the same GPUs largest first, which is the simulator's packing order
    got = {}
    for p in pods:
        ns, name = p["metadata"]["namespace"], p["metadata"]["name"]
        cr = c.create(p)
        if cr.returncode != 0:
            ck.expect("%s/create %s/%s" % (label, ns, name), False, cr.stderr)
            continue
        got["%s/%s" % (ns, name)] = settle(c, ns, name)
    time.sleep(3)  # a late retry of an unschedulable pod would show here
    for key in list(got):
        ns, name = key.split("/")
        p = c.get("pod", name, ns)
        if p and p["spec"].get("nodeName"):
            got[key] = ("bound", p["spec"]["nodeName"])
    mismatch = []
    for key, (state, where) in sorted(got.items()):
        if key in sim_node:
            if state != "bound" or group.get(where) != group.get(sim_node[key]):
                mismatch.append("%s: simulator %s (%s), scheduler %s %s" % (
                    key, sim_node[key], group.get(sim_node[key]), state, where))
        elif key in sim_unplaced:
            if state != "unschedulable":
                mismatch.append("%s: simulator unplaced (%s), scheduler bound to %s" % (
                    key, sim_unplaced[key], where))
        else:
            mismatch.append("%s: not in the simulator's answer (denied?)" % key)
    ck.expect("%s/same-feasibility (%d pods: %d placed, %d unplaced)" % (
        label, len(got), len(sim_node), len(sim_unplaced)), not mismatch and got,
        "\n".join(mismatch))
    bound = {k: v[1] for k, v in got.items() if v[0] == "bound"}
    return sim, bound, sim_unplaced


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    cluster_args(ap)
    args = ap.parse_args()
    if tools_missing(args):
        return 1
    if not os.access(os.path.join(args.k8s_bin, "kube-scheduler"), os.X_OK):
        print("e2e: no kube-scheduler in %s (test/e2e/build-apiserver.sh builds it)" % args.k8s_bin)
        return 1
    work, procs, ck = start_run(args.work)
    t0 = time.monotonic()
    c = Cluster(args, work, procs)
    c.policy_dirs = [os.path.join(args.source_dir, "test", "sim", "policies"),
                     os.path.join(args.source_dir, "test", "e2e", "policies-scheduler")]
    step = "setup/pki"
    try:
        try:
            c.make_pki()
            step = "setup/etcd"
            c.with_port_retry("etcd", c.start_etcd)
            step = "setup/kube-apiserver"
            c.with_port_retry("kube-apiserver", c.start_apiserver)
            step = "setup/gpu-admission-serve"
            c.start_webhook()
            step = "setup/webhooks-from-chart"
            c.register_webhooks()
            for ns in NAMESPACES:
                c.namespace(ns)
            step = "setup/kube-scheduler"
            start_scheduler(c)
            ck.expect("setup/cluster-up", True)
        except Exception as e:
            return setup_failed(ck, procs, step, e)
        for label, nodes, pods in inventories():
            t = time.monotonic()
            try:
                res = scenario(c, ck, label, nodes, pods)
                if res:
                    sim, bound, unplaced = res
                    if label == "mig-affinity-taints":
                        ck.expect(label + "/anded-affinity-unplaced",
                                  unplaced.get("inference/small-zone-b") == "no node matches",
                                  unplaced)
                        ck.expect(label + "/untainted-only",
                                  all(bound.get("other/free-%d" % i) == "plain" for i in range(2)),
                                  bound)
                    if label == "nvlink-gang-8":
                        ck.expect(label + "/island-too-small",
                                  list(unplaced.values()) == ["island too small"], unplaced)
                    if label == "nvlink-gang-16":
                        ck.expect(label + "/gang-fits", len(bound) == 3 and not unplaced, bound)
                    for lg, n, _, _, key in LEVEL_GANGS:
                        if label != lg:
                            continue
                        labels = {nd["metadata"]["name"]: nd["metadata"]["labels"]
                                  for nd in nodes}
                        domains = {labels[v][key] for v in bound.values()}
                        ck.expect("%s/all-bound-in-one %s" % (label, key),
                                  len(bound) == n and not unplaced and len(domains) == 1,
                                  "bound %s, unplaced %s" % (bound, unplaced))
                        if label == "levels-3x8":
                            # and the gang too wide for any domain is refused at creation
                            big = pod("levels-9x8-0", "gang", gpus=8,
                                      labels={"gpu-admission.io/group": "levels-9x8"},
                                      annotations={"gpu-admission.io/gang-size": "9"})
                            r = c.create(big)
                            ck.expect("levels-9x8/refused-at-creation",
                                      r.returncode != 0 and "gang of 72 GPUs" in r.stderr and
                                      "(64 GPUs)" in r.stderr, r.stderr)
            except Exception as e:
                ck.expect(label + "/ran", False, "%s: %s" % (type(e).__name__, e))
            # clean slate for the next inventory: pods (force: no kubelet) and nodes
            for ns in NAMESPACES:
                c.kubectl("delete", "pods", "--all", "-n", ns, "--grace-period=0", "--force",
                          "--wait=false", check=False)
            c.kubectl("delete", "nodes", "--all", "--wait=true", check=False)
            wait_for("pods gone", lambda: all(
                not json.loads(c.kubectl("get", "pods", "-n", ns, "-o", "json").stdout)["items"]
                for ns in NAMESPACES), 60, 0.5)
            note("%s took %.1fs" % (label, time.monotonic() - t))
        if ck.failed():
            for name in ("kube-scheduler", "gpu-admission"):
                if procs.alive(name):
                    print("--- %s log tail ---\n%s" % (name, procs.log_tail(name)))
    finally:
        end_run(procs, ck, work, t0)
    return 1 if ck.failed() else 0


if __name__ == "__main__":
    sys.exit(main())
