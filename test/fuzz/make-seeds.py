#!/usr/bin/env python3
"""make-seeds.py - (re)builds the seed corpora in test/fuzz/corpus/<target>/ from the project's
own inputs: test/fixtures (real public pods and AdmissionReviews, see
test/fixtures/PROVENANCE.md), policies/, test/fuzz/policies/ and test/golden/ when present.
Pods become AdmissionReviews (v1 and v1beta1, CREATE and UPDATE) for the review fuzzer and
plain JSON pods for the patch fuzzer. Deterministic: same inputs, same files (named by
content hash), so re-running only adds what is new.

Must never: write outside test/fuzz/corpus/, or delete a seed (old seeds keep their coverage).
"""
import copy
import hashlib
import json
import os
import pathlib
import sys

import yaml

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "common"))
from workload_kinds import WORKLOAD_KINDS  # noqa: E402

here = pathlib.Path(__file__).resolve().parent
root = here.parent.parent
out = here / "corpus"


def put(target, data):
    if isinstance(data, str):
        data = data.encode()
    d = out / target
    d.mkdir(parents=True, exist_ok=True)
    name = hashlib.sha1(data).hexdigest()[:16]
    p = d / name
    if not p.exists():
        p.write_bytes(data)


def pods_from(obj):
    """Every pod in a fixture object: a Pod, or a workload's pod template(s)."""
    if not isinstance(obj, dict):
        return
    if obj.get("kind") == "Pod":
        yield obj
        return
    def walk(o):
        if isinstance(o, dict):
            t = o.get("template")
            if isinstance(t, dict) and isinstance(t.get("spec"), dict) and "containers" in t["spec"]:
                yield {"apiVersion": "v1", "kind": "Pod", "metadata": dict(t.get("metadata") or {}),
                       "spec": t["spec"]}
            for v in o.values():
                yield from walk(v)
        elif isinstance(o, list):
            for v in o:
                yield from walk(v)
    yield from walk(obj)


def review(pod, ns, op="CREATE", version="v1", old=None, uid="f0000000-0000-4000-8000-000000000001"):
    req = {
        "uid": uid,
        "kind": {"group": "", "version": "v1", "kind": "Pod"},
        "resource": {"group": "", "version": "v1", "resource": "pods"},
        "requestKind": {"group": "", "version": "v1", "kind": "Pod"},
        "requestResource": {"group": "", "version": "v1", "resource": "pods"},
        "name": (pod.get("metadata") or {}).get("name", ""),
        "namespace": ns,
        "operation": op,
        "userInfo": {"username": "system:serviceaccount:kube-system:job-controller"},
        "object": pod,
        "oldObject": old,
        "dryRun": False,
        "options": {"apiVersion": "meta.k8s.io/v1", "kind": "CreateOptions"},
    }
    return {"apiVersion": "admission.k8s.io/" + version, "kind": "AdmissionReview", "request": req}


def workload_review(obj, ns, op="CREATE", old=None):
    """The AdmissionReview the validating webhook gets for a workload object (issue 16)."""
    av = str(obj.get("apiVersion", ""))
    group, _, version = av.rpartition("/")
    kind = obj.get("kind", "")
    r = review(obj, ns, op=op, old=old)
    r["request"]["kind"] = {"group": group, "version": version, "kind": kind}
    r["request"]["requestKind"] = r["request"]["kind"]
    r["request"]["resource"] = {"group": group, "version": version,
                                "resource": str(kind).lower() + "s"}
    r["request"]["requestResource"] = r["request"]["resource"]
    return r


def workload_seeds(workloads):
    """Workload reviews: each real manifest (CREATE, and UPDATE with and without a template
    change), plus the shapes the codec must answer without crashing: a template of the wrong
    type, lists of lists, a map of 300 replica specs, a null template."""
    for i, w in enumerate(workloads):
        ns = (w.get("metadata") or {}).get("namespace") or ["default", "notebooks",
                                                             "blocked-x"][i % 3]
        put("review", json.dumps(workload_review(w, ns), separators=(",", ":")))
        scaled = copy.deepcopy(w)
        scaled.setdefault("metadata", {}).setdefault("labels", {})["scaled"] = "yes"
        put("review", json.dumps(workload_review(scaled, ns, op="UPDATE", old=w),
                                 separators=(",", ":")))
    dep = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"},
           "spec": {"replicas": 2, "template": {"metadata": {"labels": {"a": "b"}}, "spec": {
               "containers": [{"name": "c", "image": "x",
                               "resources": {"limits": {"nvidia.com/gpu": 1}}}]}}}}
    tmpl = dep["spec"]["template"]
    bad = [
        dict(dep, spec={"template": "x"}),
        dict(dep, spec={"template": None}),
        dict(dep, spec=[tmpl]),
        {"apiVersion": "ray.io/v1", "kind": "RayCluster", "metadata": {"name": "r"},
         "spec": {"workerGroupSpecs": [[{"template": tmpl}], [[{"template": tmpl}]]]}},
        {"apiVersion": "kubeflow.org/v1", "kind": "TFJob", "metadata": {"name": "t"},
         "spec": {"tfReplicaSpecs": {"W%d" % i: {"replicas": i, "template": tmpl}
                                     for i in range(300)}}},
        {"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet", "metadata": {"name": "j"},
         "spec": {"replicatedJobs": [{"replicas": 1e300, "template": {"spec": {
             "parallelism": -3, "template": tmpl}}}]}},
        {"apiVersion": "leaderworkerset.x-k8s.io/v1", "kind": "LeaderWorkerSet",
         "metadata": {"name": "l"}, "spec": {"replicas": 2, "leaderWorkerTemplate": {
             "size": 4, "workerTemplate": tmpl, "leaderTemplate": {"spec": []}}}},
    ]
    for b in bad:
        put("review", json.dumps(workload_review(b, "blocked-x"), separators=(",", ":")))
    r = workload_review(dep, "default", op="DELETE")
    r["request"]["object"] = None
    r["request"]["oldObject"] = dep
    put("review", json.dumps(r, separators=(",", ":")))
    r = workload_review(dep, "default", op="UPDATE", old=dep)
    r["request"]["subResource"] = "scale"
    put("review", json.dumps(r, separators=(",", ":")))


CLAIM_KINDS = ("ResourceClaim", "ResourceClaimTemplate")


def claim_seeds(claims):
    """DRA claim reviews (issue 24): each claim of NVIDIA's demo specs and the golden claim
    cases, CREATE in namespaces of each trust of the golden `dra` set (the fuzzer judges
    claims with it), an UPDATE that adds adminAccess, and the v1beta1 request kind."""
    for i, c in enumerate(claims):
        av = str(c.get("apiVersion", ""))
        ns = (c.get("metadata") or {}).get("namespace") or "gpu-test1"
        for n in dict.fromkeys([ns, ["research-a", "inference-a", "ml-platform"][i % 3]]):
            put("review", json.dumps(workload_review(c, n), separators=(",", ":")))
        new = copy.deepcopy(c)
        spec = new.get("spec") or {}
        devs = (spec.get("spec") or spec).get("devices") or {}
        for r in devs.get("requests") or []:
            if isinstance(r, dict):
                (r.get("exactly") if isinstance(r.get("exactly"), dict) else r)["adminAccess"] = True
        put("review", json.dumps(workload_review(new, "research-a", op="UPDATE", old=c),
                                 separators=(",", ":")))
        if av.endswith("/v1"):
            b = copy.deepcopy(c)
            b["apiVersion"] = av[:-3] + "/v1beta1"
            put("review", json.dumps(workload_review(b, ns), separators=(",", ":")))


def main():
    fixtures = root / "test" / "fixtures"
    pods = []
    workloads = []
    claims = []
    for f in sorted(fixtures.rglob("*")):
        if not f.is_file() or f.suffix not in (".yaml", ".yml", ".json"):
            continue
        raw = f.read_bytes()
        if f.suffix in (".yaml", ".yml"):
            put("yamljson", raw)
        try:
            docs = list(yaml.safe_load_all(raw))
        except Exception:
            continue
        for d in docs:
            if not isinstance(d, dict):
                continue
            if d.get("kind") == "AdmissionReview" or "request" in d:
                put("review", json.dumps(d, separators=(",", ":")))
                obj = (d.get("request") or {}).get("object")
                if isinstance(obj, dict):
                    pods.append(obj)
            elif "operation" in d and "object" in d:
                # a bare AdmissionRequest (kubewarden fixtures): wrap it
                put("review", json.dumps({"apiVersion": "admission.k8s.io/v1",
                                          "kind": "AdmissionReview", "request": d}, separators=(",", ":")))
                if isinstance(d.get("object"), dict):
                    pods.append(d["object"])
            else:
                pods.extend(pods_from(d))
                av = str(d.get("apiVersion", ""))
                if av.startswith("resource.k8s.io/") and d.get("kind") in CLAIM_KINDS:
                    claims.append(d)
                if (av.rpartition("/")[0], d.get("kind")) in WORKLOAD_KINDS:
                    workloads.append(d)
    workload_seeds(workloads)
    for f in sorted((root / "test" / "golden" / "claims").glob("*/case.yaml")):
        obj = (yaml.safe_load(f.read_text()) or {}).get("object")
        if isinstance(obj, dict):
            claims.append(obj)
    claim_seeds(claims)
    namespaces = ["default", "inference-a", "notebooks", "research-x", "ml-platform", "sandbox"]
    for i, pod in enumerate(pods):
        ns = (pod.get("metadata") or {}).get("namespace") or namespaces[i % len(namespaces)]
        pj = json.dumps(pod, sort_keys=True, separators=(",", ":"))
        put("patch", pj)
        put("review", json.dumps(review(pod, ns, version="v1" if i % 3 else "v1beta1"), separators=(",", ":")))
        if i % 4 == 0:
            new = copy.deepcopy(pod)
            new.setdefault("metadata", {}).setdefault("labels", {})["gpu-admission.io/tenant"] = "research"
            put("review", json.dumps(review(new, ns, op="UPDATE", old=pod), separators=(",", ":")))
            put("patch", json.dumps([pod, new]))
        put("yamljson", yaml.safe_dump(pod, sort_keys=False))
    # The request kinds the codec must skip or refuse.
    base = pods[0] if pods else {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
                                 "spec": {"containers": [{"name": "c", "image": "x"}]}}
    r = review(base, "default", op="DELETE")
    r["request"]["object"] = None
    r["request"]["oldObject"] = base
    put("review", json.dumps(r))
    r = review(base, "default")
    r["request"]["subResource"] = "status"
    put("review", json.dumps(r))
    r = review(base, "default")
    r["request"]["kind"] = {"group": "apps", "version": "v1", "kind": "Deployment"}
    put("review", json.dumps(r))
    put("review", '{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview"}')
    # Policies: each file alone, and each whole set joined into one multi-file input.
    sets = [root / "policies"] + sorted(p for p in (here / "policies").glob("*") if p.is_dir())
    for s in sets:
        files = sorted(list(s.glob("*.yaml")) + list(s.glob("*.yml")))
        for f in files:
            put("policy", f.read_bytes())
            put("yamljson", f.read_bytes())
        if files:
            put("policy", b"#%file\n".join(f.read_bytes() for f in files[:4]))
    golden = root / "test" / "golden"
    for case in sorted((golden / "cases").glob("*/case.yaml")):
        try:
            c = yaml.safe_load(case.read_bytes())
        except Exception:
            continue
        if not isinstance(c, dict):
            continue

        def ref(v):
            # a case may name its pod by a path relative to the case directory
            if isinstance(v, str):
                try:
                    docs = [d for d in yaml.safe_load_all((case.parent / v).read_bytes()) if d]
                except Exception:
                    return None
                pods = [p for d in docs for p in pods_from(d)]
                return pods[0] if pods else None
            return v if isinstance(v, dict) else None
        pod = ref(c.get("pod"))
        if pod is None:
            continue
        ns = c.get("namespace") or "default"
        pol = c.get("policy", "shipped")
        if isinstance(pol, str) and (golden / "policies" / pol / "..").exists() and pol != "modes":
            # a whole golden policy directory the patch fuzzer loads as "golden-<dir>"
            put("patch", json.dumps({"policy": "golden-" + pol, "namespace": ns, "pod": pod},
                                    separators=(",", ":")))
        else:
            put("patch", json.dumps(pod, separators=(",", ":")))
        op = c.get("operation", "CREATE")
        old = ref(c.get("oldPod")) if op == "UPDATE" else None
        put("review", json.dumps(review(pod, ns, op=op, old=old), separators=(",", ":")))
        put("yamljson", case.read_bytes())
    if golden.is_dir():
        for f in sorted(golden.rglob("*")):
            if f.is_file() and f.suffix in (".yaml", ".yml", ".json"):
                put("yamljson", f.read_bytes())
                try:
                    for d in yaml.safe_load_all(f.read_bytes()):
                        for pod in pods_from(d if isinstance(d, dict) else {}):
                            put("patch", json.dumps(pod, separators=(",", ":")))
                            ns = (pod.get("metadata") or {}).get("namespace") or "default"
                            put("review", json.dumps(review(pod, ns), separators=(",", ":")))
                except Exception:
                    pass
    for q in ["1", "0", "500m", "8Gi", "1.5", "1e3", "1E-2", "-1", "+2", "0.001", "1n", "1u",
              "40G", "10Mi", "1Ki", "2Ei", "9223372036854775807", "9223372036854775", "1.25Gi",
              ".5", "5.", "1e", "Ki", "1ki", "1 ", "0x10", "1e18", "123456789012345678901234"]:
        put("quantity", q)
    # A few generator-mode inputs for the patch fuzzer (first byte not '{' or '[').
    for i in range(16):
        put("patch", bytes([(i * 37 + k * 11) % 256 for k in range(64)]).replace(b"{", b"z").replace(b"[", b"y") or b"x")
    print("seeds:", {t.name: len(list(t.iterdir())) for t in sorted(out.iterdir()) if t.is_dir()})


if __name__ == "__main__":
    sys.exit(main())
