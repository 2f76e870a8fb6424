#!/usr/bin/env python3
"""test_cli.py - `gpu-admission mutate` and `gpu-admission review` as a user runs them.

Flags, input shapes (YAML multi-doc, JSON object/array/List, stdin), output shapes, exit codes
and stderr notes, all against policies-mig/ (MIG rewrite in inference-*, nothing matches in
research-*, a pod asking a MIG profile the pool lacks is denied). Cross-checks that
`mutate --patch` prints exactly the patch `review mutate` sends base64-encoded.
Python 3 standard library only.
"""
import base64
import json
import os
import subprocess
import sys
import tempfile

BIN, POLICIES, FIXTURES = sys.argv[1], sys.argv[2], sys.argv[3]
failures = []
checks = 0


def check(cond, msg):
    global checks
    checks += 1
    if not cond:
        failures.append(msg)
        print("FAIL " + msg)


def run(*args, stdin=None):
    p = subprocess.run([BIN, *args], input=stdin, capture_output=True, timeout=60)
    check(p.returncode >= 0, f"{args}: killed by signal {-p.returncode}")
    return p.returncode, p.stdout.decode(), p.stderr.decode()


def load(rel):
    with open(os.path.join(FIXTURES, rel)) as f:
        return f.read()


GPU_POD_YAML = load("nvidia-gpu-operator/tests_gpu-pod.yaml")       # nvidia.com/gpu: 1
MIG5_POD_YAML = load("openshift-instaslice-operator/test-pod.yaml")  # nvidia.com/mig-1g.5gb
NOTEBOOK_YAML = load("nvidia-cloud-native-docs/tf-notebook.yaml")    # Service + Pod
tmp = tempfile.mkdtemp(prefix="gpa-cli-")


def write(name, text):
    path = os.path.join(tmp, name)
    with open(path, "w") as f:
        f.write(text)
    return path


def pod_json(ns=None, name="p"):
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
           "spec": {"containers": [{"name": "c", "image": "cuda",
                                    "resources": {"limits": {"nvidia.com/gpu": 1}}}]}}
    if ns:
        pod["metadata"]["namespace"] = ns
    return pod


def limits(pod):
    return pod["spec"]["containers"][0]["resources"]["limits"]


# ---- mutate: flags and usage --------------------------------------------------------------
rc, out, err = run("mutate", "--help")
check(rc == 0, "mutate --help exits 0")
for flag in ("--policies", "--namespace", "--patch", "--explain", "--help"):
    check(flag in out, f"mutate --help mentions {flag}")
rc, out, err = run("mutate", write("a.yaml", GPU_POD_YAML))
check(rc == 1 and "--policies" in err and out == "", "mutate without --policies: exit 1")
rc, out, err = run("mutate", "--policies", POLICIES, "--bogus")
check(rc == 1 and "unknown flag" in err, "mutate unknown flag: exit 1")
rc, out, err = run("mutate", "--policies", POLICIES, "-n")
check(rc == 1 and "needs a value" in err, "mutate -n without value: exit 1")
rc, out, err = run("mutate", "--policies", os.path.join(tmp, "missing"), write("b.yaml", GPU_POD_YAML))
check(rc == 1 and out == "" and err, "mutate with a missing policy dir: exit 1, nothing on stdout")
rc, out, err = run("mutate", "--policies", POLICIES, os.path.join(tmp, "nope.yaml"))
check(rc == 1 and "cannot read" in err, "mutate on a missing file: exit 1")

# ---- mutate: YAML in, YAML out ------------------------------------------------------------
rc, out, err = run("mutate", "--policies", POLICIES, "-n", "inference-chat", write("g.yaml", GPU_POD_YAML))
check(rc == 0, f"MIG rewrite: exit 0 ({err})")
check("nvidia.com/mig-1g.10gb: 1" in out and "nvidia.com/gpu: 1" not in out,
      "MIG rewrite printed as YAML")
check(not out.lstrip().startswith("{"), "YAML input gives YAML output")
check("Warning: Pod/gpu-operator-test: nvidia.com/gpu rewritten to nvidia.com/mig-1g.10gb" in err,
      "warnings on stderr")
# namespace from -n, then metadata.namespace, then default (research-lab: nothing matches)
rc, out, err = run("mutate", "--policies", POLICIES, "--namespace=research-lab", write("g2.yaml", GPU_POD_YAML))
check(rc == 0 and "nvidia.com/gpu: 1" in out and "gpu-admission.io/rule" not in out,
      "unmatched pod printed unchanged")
with_ns = GPU_POD_YAML.replace("name: gpu-operator-test", "name: gpu-operator-test\n  namespace: inference-a")
rc, out, err = run("mutate", "--policies", POLICIES, write("g3.yaml", with_ns))
check(rc == 0 and "nvidia.com/mig-1g.10gb" in out, "metadata.namespace used without -n")
rc, out, err = run("mutate", "--policies", POLICIES, "-n", "research-lab", write("g4.yaml", with_ns))
check(rc == 0 and "nvidia.com/mig-1g.10gb" not in out, "-n overrides metadata.namespace")

# stdin, explain
rc, out, err = run("mutate", "--policies", POLICIES, "-n", "inference-chat", "--explain", "-",
                   stdin=GPU_POD_YAML.encode())
check(rc == 0 and "nvidia.com/mig-1g.10gb" in out, "stdin input")
check("explain: Pod/gpu-operator-test:" in err and "inference" in err, "--explain on stderr")

# multi-document: Service skipped with a note, the Pod printed
rc, out, err = run("mutate", "--policies", POLICIES, "-n", "inference-chat", write("nb.yaml", NOTEBOOK_YAML))
check(rc == 0, f"Service + Pod: exit 0 ({err})")
check("Service/" in err and "not a v1 Pod, a workload or a DRA claim, skipped" in err,
      "Service skipped with a note")
check("kind: Service" not in out and "kind: Pod" in out, "only the Pod printed")

# denied: exit 2, message on stderr, nothing on stdout
rc, out, err = run("mutate", "--policies", POLICIES, "-n", "inference-chat", write("m5.yaml", MIG5_POD_YAML))
check(rc == 2 and out == "" and "denied in namespace inference-chat" in err and "1g.5gb" in err,
      f"denied pod: exit 2, reason on stderr ({rc}, {err!r})")
check("Warning:" not in err, "no change warnings for a denied pod")
# mixed: the allowed one is printed, exit 2
rc, out, err = run("mutate", "--policies", POLICIES, "-n", "inference-chat",
                   write("mix.yaml", GPU_POD_YAML + "\n---\n" + MIG5_POD_YAML))
check(rc == 2 and out.count("kind: Pod") == 1 and "gpu-operator-test" in out,
      "allowed + denied: exit 2, the allowed pod printed")

# bad input
rc, out, err = run("mutate", "--policies", POLICIES, write("bad.yaml", "a: [1, 2\n"))
check(rc == 1 and out == "" and err, "invalid YAML: exit 1")
rc, out, err = run("mutate", "--policies", POLICIES, write("svc.yaml", "apiVersion: v1\nkind: Service\nmetadata: {name: s}\n"))
check(rc == 1 and "no Pod" in err, "no Pod in the input: exit 1")
rc, out, err = run("mutate", "--policies", POLICIES, write("empty.yaml", ""))
check(rc == 1 and "no Pod" in err, "empty input: exit 1")
rc, out, err = run("mutate", "--policies", POLICIES, write("bad.json", '{"kind": "Pod",'))
check(rc == 1 and "invalid JSON" in err, "invalid JSON: exit 1")
rc, out, err = run("mutate", "--policies", POLICIES, write("trail.json", json.dumps(pod_json()) + " x"))
check(rc == 1 and "after the JSON" in err, "JSON with trailing data: exit 1")

nul = json.dumps(pod_json()).replace('"image": "cuda"', '"image": "cu\\u0000da"')
rc, out, err = run("mutate", "--policies", POLICIES, write("nul.json", nul))
check(rc == 1 and "u0000" in err and out == "", "JSON with \\u0000 refused like the server does")
rc, out, err = run("mutate", "--policies", POLICIES, write("lz.json", '[{"kind":"Pod","x":01}]'))
check(rc == 1 and "invalid JSON" in err, "JSON the server refuses (leading zero) refused")

# ---- mutate: JSON shapes ------------------------------------------------------------------
rc, out, err = run("mutate", "--policies", POLICIES, "-n", "inference-chat", write("p.json", json.dumps(pod_json())))
obj = json.loads(out) if rc == 0 else {}
check(rc == 0 and isinstance(obj, dict) and "nvidia.com/mig-1g.10gb" in limits(obj),
      "JSON object in, mutated JSON object out")
check(out.startswith("{\n  \"apiVersion\""), "JSON pretty-printed with 2-space indent")
rc, out, err = run("mutate", "--policies", POLICIES, "-n", "inference-chat",
                   write("arr.json", json.dumps([pod_json(name="a"), {"kind": "ConfigMap"}, pod_json(name="b")])))
arr = json.loads(out) if rc == 0 else None
check(isinstance(arr, list) and [p["metadata"]["name"] for p in arr] == ["a", "b"],
      "JSON array in: array of the admitted pods out")
lst = {"apiVersion": "v1", "kind": "List", "metadata": {"resourceVersion": ""},
       "items": [pod_json("research-lab", "r"), pod_json("inference-x", "i")]}
rc, out, err = run("mutate", "--policies", POLICIES, write("list.json", json.dumps(lst)))
got = json.loads(out) if rc == 0 else {}
check(got.get("kind") == "List" and got.get("metadata") == {"resourceVersion": ""}
      and [p["metadata"]["name"] for p in got.get("items", [])] == ["r", "i"],
      "v1 List in: List out")
if got.get("items"):
    check("nvidia.com/gpu" in limits(got["items"][0]) and
          "nvidia.com/mig-1g.10gb" in limits(got["items"][1]),
          "each List item admitted into its own namespace")

# ---- mutate --patch == review mutate's patch ----------------------------------------------
for ns in ("inference-chat", "research-lab"):
    pod = pod_json(ns, "x")
    rc, out, err = run("mutate", "--policies", POLICIES, "--patch", write("x.json", json.dumps(pod)))
    check(rc == 0 and out.count("\n") == 1, f"--patch ({ns}): one line")
    patch = json.loads(out) if rc == 0 else None
    review = {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
              "request": {"uid": "u", "kind": {"group": "", "version": "v1", "kind": "Pod"},
                          "resource": {"group": "", "version": "v1", "resource": "pods"},
                          "namespace": ns, "operation": "CREATE", "object": pod}}
    rc, out, err = run("review", "mutate", "--policies", POLICIES, write("r.json", json.dumps(review)))
    resp = json.loads(out)["response"] if rc == 0 else {}
    sent = json.loads(base64.b64decode(resp["patch"])) if "patch" in resp else []
    check(patch == sent, f"mutate --patch equals the patch review mutate sends ({ns})")
# an unmatched pod (research-lab) gets only what keeps it off shared pool t4-shared's nodes
check([op["path"] for op in sent] == ["/spec/affinity"] and
      sent[0]["value"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"][
          "nodeSelectorTerms"] == [{"matchExpressions": [{
              "key": "nvidia.com/gpu.sharing-strategy", "operator": "NotIn",
              "values": ["time-slicing"]}]}],
      "an unmatched pod's patch only keeps it off the shared pool")
rc, out, err = run("mutate", "--policies", POLICIES, "--patch", "-n", "inference-chat",
                   write("two.yaml", GPU_POD_YAML + "---\n" + GPU_POD_YAML))
check(rc == 0 and len(out.splitlines()) == 2 and all(json.loads(l) for l in out.splitlines()),
      "--patch: one line per pod")

# ---- review -------------------------------------------------------------------------------
rc, out, err = run("review", "--help")
check(rc == 0 and "--policies" in out and "mutate|validate" in out, "review --help")
rc, out, err = run("review", "admit", "--policies", POLICIES)
check(rc == 1 and "mutate" in err and out == "", "review with a bad hook name: exit 1")
rc, out, err = run("review", "validate")
check(rc == 1 and "--policies" in err, "review without --policies: exit 1")
rc, out, err = run("review", "validate", "--policies", os.path.join(tmp, "missing"), "r.json")
check(rc == 1 and out == "", "review with a missing policy dir: exit 1, nothing on stdout")
body = json.dumps(review).encode()
rc1, out1, _ = run("review", "validate", "--policies", POLICIES, "-", stdin=body)
rc2, out2, _ = run("review", "--policies=" + POLICIES, "validate", write("rv.json", body.decode()))
check(rc1 == 0 and out1 == out2 and out1.endswith("}\n") and out1.count("\n") == 1,
      "review: stdin and file give the same bytes, body + one newline")
rc, out, err = run("review", "mutate", "--policies", POLICIES, "-", stdin=b"{\"kind\":1}")
st = json.loads(out) if out else {}
check(rc == 1 and st.get("code") == 400 and "bad request (HTTP 400)" in err,
      "review of a malformed body: exit 1, 400 Status on stdout, reason on stderr")
denied = dict(review, request=dict(review["request"], namespace="inference-chat",
                                   object={"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "m"},
                                           "spec": {"containers": [{"name": "c", "image": "i",
                                                    "resources": {"limits": {"nvidia.com/mig-1g.5gb": 1}}}]}}))
rc, out, err = run("review", "mutate", "--policies", POLICIES, "-", stdin=json.dumps(denied).encode())
check(rc == 0 and json.loads(out)["response"]["allowed"] is False,
      "review of a denied pod: exit 0, allowed false")

# workloads (issue 16): mutate runs each pod template as a Pod, labelled with its path;
# review answers objects (multi-document YAML) one line each, as the API server would ask.
DEPLOY = ("apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web}\nspec:\n"
          "  replicas: 3\n  template:\n    metadata: {labels: {app: web}}\n    spec:\n"
          "      containers:\n      - name: c\n        image: cuda\n"
          "        resources: {limits: {nvidia.com/gpu: 1}}\n")
MIG5_DEPLOY = DEPLOY.replace("name: web", "name: m5").replace("nvidia.com/gpu: 1",
                                                              "nvidia.com/mig-1g.5gb: 1")
rc, out, err = run("mutate", "--policies", POLICIES, "-n", "inference-chat", "--explain",
                   write("deploy.yaml", DEPLOY))
check(rc == 0 and out.count("kind: Pod") == 1 and "nvidia.com/mig-1g.10gb" in out
      and "generateName: web-" in out, f"mutate of a Deployment prints its template's Pod ({err})")
check("explain: Deployment/web spec.template: 3 pod(s), each placed in pool a100-mig by rule "
      "inference" in err, "mutate --explain says what the template's pods get")
rc, out, err = run("mutate", "--policies", POLICIES, "-n", "inference-chat",
                   write("m5d.yaml", MIG5_DEPLOY))
check(rc == 2 and out == "" and "Deployment/m5 spec.template denied in namespace inference-chat"
      in err, f"mutate of a Deployment whose pods are denied: exit 2 ({rc}, {err!r})")
rc, out, err = run("review", "validate", "--policies", POLICIES, "-n", "inference-chat",
                   write("objs.yaml", DEPLOY + "---\n" + MIG5_DEPLOY))
lines = out.splitlines()
ans = [json.loads(x)["response"] for x in lines] if rc == 0 and len(lines) == 2 else []
check(len(ans) == 2 and ans[0]["allowed"] and "patch" not in ans[0]
      and ans[0].get("warnings") == ["spec.template: pods get pool a100-mig (rule inference), "
                                     "nvidia.com/gpu -> nvidia.com/mig-1g.10gb"]
      and ans[1]["allowed"] is False
      and ans[1]["status"]["message"].startswith("spec.template: "),
      f"review of two Deployments: one answer line each ({out!r} {err!r})")

rc, out, err = run("version")
check(rc == 0 and out.startswith("gpu-admission ") and out.count("\n") == 1, "version")

print(f"{checks} checks, {len(failures)} failed")
sys.exit(1 if failures else 0)
