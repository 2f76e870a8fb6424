#!/usr/bin/env python3
"""Regenerates fixtures/cluster-pods.json: what `kubectl get pods,deployments,services -A -o json`
prints for a small cluster running test/tools/policies-base/ (used by test_cli_diff.py): the
shipped set as it was before issue 33 made unmatched: deny the shipped default, so that an
unmatched pod (sandbox/experiment) can be running.

Each Pod goes through what the API server does before and after the webhook: defaulting and the
built-in admission plugins (ServiceAccount token volume, DefaultTolerationSeconds) before it, then
`gpu-admission mutate` with that set (the webhook), then the fields set after admission
(uid, resourceVersion, creationTimestamp, managedFields, nodeName, status).
One pod (nb-edited) was changed by hand after admission, so it cannot be reconstructed.

usage: make_cluster_fixture.py GPU_ADMISSION_BIN SOURCE_DIR
"""
import copy, json, subprocess, sys

BIN, SRC = sys.argv[1], sys.argv[2]

def pod(ns, name, containers, labels=None, annotations=None):
    md = {"name": name, "namespace": ns}
    if labels: md["labels"] = labels
    if annotations: md["annotations"] = annotations
    return {"apiVersion": "v1", "kind": "Pod", "metadata": md,
            "spec": {"containers": containers}}

def ctr(name, image, limits):
    return {"name": name, "image": image, "resources": {"limits": limits, "requests": dict(limits)}}

def defaulted(p, i):
    p = copy.deepcopy(p)
    s = p["spec"]
    tok = "kube-api-access-%05d" % (1000 + i)
    for c in s["containers"]:
        c.setdefault("imagePullPolicy", "IfNotPresent")
        c["terminationMessagePath"] = "/dev/termination-log"
        c["terminationMessagePolicy"] = "File"
        c["volumeMounts"] = [{"mountPath": "/var/run/secrets/kubernetes.io/serviceaccount",
                              "name": tok, "readOnly": True}]
    s.update({"dnsPolicy": "ClusterFirst", "enableServiceLinks": True,
              "preemptionPolicy": "PreemptLowerPriority", "priority": 0,
              "restartPolicy": "Always", "schedulerName": "default-scheduler",
              "securityContext": {}, "serviceAccount": "default",
              "serviceAccountName": "default", "terminationGracePeriodSeconds": 30})
    s["tolerations"] = s.get("tolerations", []) + [
        {"effect": "NoExecute", "key": "node.kubernetes.io/not-ready", "operator": "Exists",
         "tolerationSeconds": 300},
        {"effect": "NoExecute", "key": "node.kubernetes.io/unreachable", "operator": "Exists",
         "tolerationSeconds": 300}]
    s["volumes"] = [{"name": tok, "projected": {"defaultMode": 420, "sources": [
        {"serviceAccountToken": {"expirationSeconds": 3607, "path": "token"}},
        {"configMap": {"items": [{"key": "ca.crt", "path": "ca.crt"}],
                       "name": "kube-root-ca.crt"}}]}}]
    return p

def webhook(p):
    out = subprocess.run([BIN, "mutate", "--policies", SRC + "/test/tools/policies-base"],
                         input=json.dumps(p),
                         capture_output=True, text=True, check=True)
    return json.loads(out.stdout)

def server_side(p, i, node):
    p = copy.deepcopy(p)
    md = p["metadata"]
    md.update({"uid": "5d1c2a0e-0000-4000-8000-%012d" % i, "resourceVersion": str(81234 + i),
               "creationTimestamp": "2026-11-30T09:%02d:00Z" % i,
               "managedFields": [{"apiVersion": "v1", "fieldsType": "FieldsV1",
                                  "manager": "kubectl-create", "operation": "Update",
                                  "time": "2026-11-30T09:%02d:00Z" % i}]})
    p["spec"]["nodeName"] = node
    p["status"] = {"phase": "Running", "hostIP": "10.0.1.%d" % i, "podIP": "10.244.1.%d" % i,
                   "qosClass": "Guaranteed", "startTime": "2026-11-30T09:%02d:05Z" % i,
                   "conditions": [{"type": "Ready", "status": "True",
                                   "lastTransitionTime": "2026-11-30T09:%02d:20Z" % i}]}
    return p

G = "nvidia.com/gpu"
pods = [
    (pod("inference-a", "small", [ctr("main", "vllm/vllm-openai:v0.6.3", {G: "1"})],
         {"app.kubernetes.io/component": "inference"}, {"gpu-admission.io/gpu-memory": "8Gi"}),
     "a100-node-1"),
    (pod("notebooks", "nb-alice", [ctr("jupyter", "quay.io/jupyter/pytorch-notebook:cuda12",
                                       {G: "1", "cpu": "2", "memory": "8Gi"})]), "t4-node-1"),
    (pod("ml-platform", "trainer-0", [ctr("trainer", "nvcr.io/nvidia/pytorch:24.05-py3",
                                          {G: "8", "cpu": "64", "memory": "512Gi"})],
         {"training.kubeflow.org/job-name": "llama-ft"}), "h100-node-3"),
    (pod("sandbox", "experiment", [ctr("main", "nvidia/cuda:12.4.1-base-ubuntu22.04", {G: "1"})]),
     "gpu-node-7"),
    (pod("prod-web", "web-5d9c7", [ctr("nginx", "nginx:1.27", {"cpu": "500m", "memory": "256Mi"})]),
     "cpu-node-1"),
    (pod("kube-system", "coredns-7db6d8ff4d-x2x9k",
         [ctr("coredns", "registry.k8s.io/coredns/coredns:v1.11.1", {"memory": "170Mi"})]),
     "cpu-node-2"),
    (pod("notebooks", "nb-edited", [ctr("jupyter", "quay.io/jupyter/pytorch-notebook:cuda12",
                                        {G: "1"})]), "t4-node-2"),
]
items = []
for i, (p, node) in enumerate(pods, 1):
    stored = webhook(defaulted(p, i))
    if p["metadata"]["name"] == "nb-edited":
        # edited after admission (kubectl edit of the toleration): no request turns into this
        for t in stored["spec"]["tolerations"]:
            if t["key"] == "gpu-admission.io/shared":
                t["effect"] = "NoExecute"
    items.append(server_side(stored, i, node))

items.append({
    "apiVersion": "apps/v1", "kind": "Deployment",
    "metadata": {"name": "team-notebook", "namespace": "notebooks", "generation": 1,
                 "uid": "5d1c2a0e-0000-4000-8000-000000000100", "resourceVersion": "81300"},
    "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "team-notebook"}},
             "template": {"metadata": {"labels": {"app": "team-notebook"}},
                          "spec": {"containers": [ctr("jupyter", "jupyter/base-notebook:2024",
                                                      {G: "1"})]}}},
    "status": {"replicas": 1, "readyReplicas": 1}})
items.append({
    "apiVersion": "apps/v1", "kind": "Deployment",
    "metadata": {"name": "web", "namespace": "prod-web", "uid":
                 "5d1c2a0e-0000-4000-8000-000000000101", "resourceVersion": "81301"},
    "spec": {"replicas": 3, "selector": {"matchLabels": {"app": "web"}},
             "template": {"metadata": {"labels": {"app": "web"}},
                          "spec": {"containers": [ctr("nginx", "nginx:1.27", {"cpu": "500m"})]}}}})
items.append({"apiVersion": "v1", "kind": "Service",
              "metadata": {"name": "kubernetes", "namespace": "default"},
              "spec": {"clusterIP": "10.96.0.1", "ports": [{"name": "https", "port": 443,
                                                           "protocol": "TCP",
                                                           "targetPort": 6443}]}})
print(json.dumps({"apiVersion": "v1", "items": items, "kind": "List",
                  "metadata": {"resourceVersion": ""}}, indent=4))
