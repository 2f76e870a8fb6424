#!/usr/bin/env python3
"""make_walkthrough.py - writes the issue 31 walkthrough fleet as a planner exports it.

inventories/walkthrough-nodes.json: `kubectl get nodes -o json` of 120 nodes labelled the way
GPU Feature Discovery, the MIG manager and the cloud label them (the H100 labels as on the real
node of test/fixtures/nvidia-cloud-native-docs/mig-mixed-node-labels.json; every node its own
hostname, GFD timestamp and zone):
  - 72 GB200 compute trays of 4 GPUs: 4 NVL72 racks of 18 trays (nvidia.com/gpu.clique
    <cluster uuid>.<clique id>, one per rack), 2 racks per block (Kueue TAS's example labels);
  - 32 HGX H100 nodes of 8 GPUs with MIG (mixed strategy), read back from allocatable: 16
    all-1g.10gb, 8 all-2g.20gb, 8 all-balanced;
  - 16 L40S nodes of 8 GPUs time-sliced 4 ways (renameByDefault: nvidia.com/gpu.shared).
workloads/walkthrough.yaml: 2,000 pods: 1,420 inference pods on MIG (three sizes), 400
notebooks of two tenants, 150 training pods (PyTorchJobs of 36 x 4 GPUs (a block of two NVL72
racks) and 18 x 4 (a rack), and 24 of 4 x 4 GPUs), and two workloads the policy denies (30 pods).

usage: make_walkthrough.py SOURCE_DIR   (rewrites the two files; they are committed)
"""
import json
import os
import sys

src = sys.argv[1] if len(sys.argv) > 1 else "."
T = os.path.join(src, "test", "sim")
CLUSTER = "6e5e0b0c-4b24-4b86-9d2b-4c6c1b0b7a10"
GPU_TAINT = {"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}
nodes = []


def node(name, i, labels, alloc, cpu="144", mem="1056467224Ki"):
    lab = {"kubernetes.io/hostname": name, "kubernetes.io/os": "linux",
           "topology.kubernetes.io/zone": "zone-%s" % "abc"[i % 3],
           "nvidia.com/gfd.timestamp": str(1765000000 + i * 7), "nvidia.com/gpu.present": "true"}
    lab.update(labels)
    allocatable = {"cpu": cpu, "memory": mem, "pods": "110", "ephemeral-storage": "1717986918400"}
    allocatable.update(alloc)
    nodes.append({"apiVersion": "v1", "kind": "Node",
                  "metadata": {"name": name, "labels": lab},
                  "spec": {"taints": [GPU_TAINT]},
                  "status": {"capacity": allocatable, "allocatable": allocatable}})


i = 0
for rack in range(4):
    for tray in range(18):
        node("gb200-r%d-t%02d" % (rack, tray), i, {
            "kubernetes.io/arch": "arm64",
            "nvidia.com/gpu.product": "NVIDIA-GB200", "nvidia.com/gpu.count": "4",
            "nvidia.com/gpu.memory": "189471", "nvidia.com/gpu.family": "blackwell",
            "nvidia.com/gpu.replicas": "1", "nvidia.com/gpu.sharing-strategy": "none",
            "nvidia.com/mig.capable": "true", "nvidia.com/mig.config": "all-disabled",
            "nvidia.com/gpu.clique": "%s.%d" % (CLUSTER, 32766 - rack),
            "cloud.provider.com/topology-rack": "rack-%d" % rack,
            "cloud.provider.com/topology-block": "block-%d" % (rack // 2)},
            {"nvidia.com/gpu": "4"}, cpu="72")
        i += 1
LAYOUTS = [("all-1g.10gb", {"nvidia.com/mig-1g.10gb": "56"})] * 16 + \
          [("all-2g.20gb", {"nvidia.com/mig-2g.20gb": "24"})] * 8 + \
          [("all-balanced", {"nvidia.com/mig-1g.10gb": "16", "nvidia.com/mig-2g.20gb": "8",
                             "nvidia.com/mig-3g.40gb": "8"})] * 8
for k, (cfg, res) in enumerate(LAYOUTS):
    alloc = {"nvidia.com/gpu": "0"}
    alloc.update(res)
    node("hgx-h100-%02d" % k, i, {
        "kubernetes.io/arch": "amd64",
        "nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3", "nvidia.com/gpu.count": "8",
        "nvidia.com/gpu.memory": "81559", "nvidia.com/gpu.family": "hopper",
        "nvidia.com/gpu.machine": "PIO-4124GS-TNR-01-NC24B", "nvidia.com/gpu.replicas": "0",
        "nvidia.com/gpu.sharing-strategy": "none", "nvidia.com/mig.capable": "true",
        "nvidia.com/mig.strategy": "mixed", "nvidia.com/mig.config": cfg,
        "nvidia.com/mig.config.state": "success"}, alloc)
    i += 1
for k in range(16):
    node("l40s-%02d" % k, i, {
        "kubernetes.io/arch": "amd64",
        "nvidia.com/gpu.product": "NVIDIA-L40S", "nvidia.com/gpu.count": "8",
        "nvidia.com/gpu.memory": "46068", "nvidia.com/gpu.family": "ada-lovelace",
        "nvidia.com/gpu.replicas": "4", "nvidia.com/gpu.sharing-strategy": "time-slicing",
        "nvidia.com/mig.capable": "false"},
        {"nvidia.com/gpu": "0", "nvidia.com/gpu.shared": "32"}, cpu="96")
    i += 1
with open(os.path.join(T, "inventories", "walkthrough-nodes.json"), "w") as f:
    json.dump({"apiVersion": "v1", "kind": "List", "metadata": {"resourceVersion": ""},
               "items": nodes}, f, indent=1)
    f.write("\n")

docs = ["# Written by test/sim/make_walkthrough.py: the issue 31 walkthrough's 2,000 pods."]


def deployment(name, ns, replicas, mem=None, gpus=1, labels=None):
    ann = "      annotations: {gpu-admission.io/gpu-memory: %s}\n" % mem if mem else ""
    lab = dict({"app": name}, **(labels or {}))
    docs.append("apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: %s, namespace: %s}\n"
                "spec:\n  replicas: %d\n  selector: {matchLabels: {app: %s}}\n  template:\n"
                "    metadata:\n      labels: %s\n%s    spec:\n      containers:\n"
                "        - {name: main, image: example/%s, resources: {limits: {nvidia.com/gpu: %d}}}\n"
                % (name, ns, replicas, name, json.dumps(lab), ann, name, gpus))


def pytorchjob(name, workers, gpus):
    tmpl = ("      template:\n        spec:\n          containers:\n            - {name: pytorch, "
            "image: example/train, resources: {limits: {nvidia.com/gpu: %d}}}\n" % gpus)
    docs.append("apiVersion: kubeflow.org/v1\nkind: PyTorchJob\nmetadata: {name: %s, namespace: "
                "training}\nspec:\n  pytorchReplicaSpecs:\n    Master:\n      replicas: 1\n%s"
                "    Worker:\n      replicas: %d\n%s" % (name, tmpl, workers, tmpl))


deployment("chat", "inference", 920, "8Gi")
deployment("embed", "inference", 300, "16Gi")
deployment("rerank", "inference", 200, "30Gi")
deployment("notebook", "team-a", 200)
deployment("notebook", "team-b", 200)
pytorchjob("llm-pretrain-0", 35, 4)  # 144 GPUs: two racks, one block
pytorchjob("llm-pretrain-1", 17, 4)  # 72 GPUs: one rack
for j in range(24):
    pytorchjob("finetune-%02d" % j, 3, 4)
deployment("miner", "sandbox", 20)
docs.append("apiVersion: batch/v1\nkind: Job\nmetadata: {name: sweep, namespace: sandbox}\n"
            "spec:\n  parallelism: 10\n  completions: 10\n  template:\n    spec:\n"
            "      restartPolicy: Never\n      containers:\n"
            "        - {name: main, image: example/sweep, resources: {limits: {nvidia.com/gpu: 1}}}\n")
with open(os.path.join(T, "workloads", "walkthrough.yaml"), "w") as f:
    f.write("\n---\n".join(docs))
