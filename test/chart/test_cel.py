"""test_cel.py - the webhooks' matchConditions, as rendered by the real helm, compiled and run
with a real CEL implementation (@bufbuild/cel via node) over hand-made edge pods with known
answers and over every pod and pod template in test/fixtures (answers from a plain-Python
reading of the same rule). Any evaluation error fails: the API server would apply
failurePolicy to that call, i.e. refuse the pod."""
import glob
import json
import os
import subprocess
import unittest

import yaml

import chartlib as c

CEL_MODULE = os.path.join(c.NPM_MODULES, "@bufbuild", "cel", "dist", "esm", "index.js")
PREFIXES = ("nvidia.com/",)


def ctr(name="c", limits=None, requests=None, env=None, privileged=None, resources=None):
    x = {"name": name, "image": "busybox"}
    if resources is not None:
        x["resources"] = resources
    if limits is not None or requests is not None:
        x["resources"] = {}
        if limits is not None:
            x["resources"]["limits"] = limits
        if requests is not None:
            x["resources"]["requests"] = requests
    if env is not None:
        x["env"] = env
    if privileged is not None:
        x["securityContext"] = {"privileged": privileged}
    return x


def pod(containers=None, init=None, eph=None, labels=None, annotations=None, meta=True):
    p = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"} if meta else {},
         "spec": {}}
    if containers is not None:
        p["spec"]["containers"] = containers
    if init is not None:
        p["spec"]["initContainers"] = init
    if eph is not None:
        p["spec"]["ephemeralContainers"] = eph
    if labels is not None:
        p["metadata"]["labels"] = labels
    if annotations is not None:
        p["metadata"]["annotations"] = annotations
    return p


GPU = {"nvidia.com/gpu": "1"}
# id: (pod, mutating expected, validating expected)
EDGE = {
    "plain": (pod([ctr()]), False, False),
    "gpu-limits": (pod([ctr(limits=GPU)]), True, True),
    "gpu-requests-only": (pod([ctr(requests=GPU)]), True, True),
    "gpu-second-container": (pod([ctr("a", limits={"cpu": "1"}), ctr("b", limits=GPU)]), True, True),
    "mig-in-init-only": (pod([ctr()], init=[ctr("i", limits={"nvidia.com/mig-1g.10gb": 1})]),
                         True, True),
    "time-sliced-resource": (pod([ctr(limits={"nvidia.com/gpu.shared": "1"})]), True, True),
    "empty-resources": (pod([ctr(resources={})]), False, False),
    "empty-limits": (pod([ctr(limits={}, requests={})]), False, False),
    "cpu-memory-only": (pod([ctr(limits={"cpu": "2", "memory": "1Gi"})]), False, False),
    "other-vendor-gpu": (pod([ctr(limits={"amd.com/gpu": "1"})]), False, False),
    "prefix-only-in-value": (pod([ctr(limits={"example.com/x": "nvidia.com/gpu"})]), False, False),
    "env-visible-devices": (pod([ctr(env=[{"name": "NVIDIA_VISIBLE_DEVICES", "value": "all"}])]),
                            False, True),
    "env-mig-config-init": (pod([ctr()], init=[ctr("i", env=[
        {"name": "NVIDIA_MIG_CONFIG_DEVICES", "value": "all"}])]), False, True),
    "env-valuefrom-ephemeral": (pod([ctr()], eph=[ctr("dbg", env=[
        {"name": "NVIDIA_VISIBLE_DEVICES",
         "valueFrom": {"configMapKeyRef": {"name": "x", "key": "y"}}}])]), False, True),
    "env-other": (pod([ctr(env=[{"name": "CUDA_VISIBLE_DEVICES", "value": "0"},
                                {"name": "PATH", "value": "/bin"}])]), False, False),
    "env-empty-and-nameless": (pod([ctr(env=[]), ctr("b", env=[{"value": "x"}])]), False, False),
    "privileged": (pod([ctr(privileged=True)]), False, True),
    "privileged-init": (pod([ctr()], init=[ctr("i", privileged=True)]), False, True),
    "privileged-ephemeral": (pod([ctr()], eph=[ctr("dbg", privileged=True)]), False, True),
    "unprivileged": (pod([ctr(privileged=False)]), False, False),
    "empty-security-context": (pod([{"name": "c", "securityContext": {}}]), False, False),
    "tenant-label": (pod([ctr()], labels={"gpu-admission.io/tenant": "research"}), False, True),
    "trust-label": (pod([ctr()], labels={"gpu-admission.io/trust": "untrusted"}), False, True),
    "pool-label": (pod([ctr()], labels={"gpu-admission.io/pool": "t4-shared"}), False, True),
    "foreign-labels": (pod([ctr()], labels={"app": "gpu-admission.io/x",
                                            "example.com/gpu-admission.io": "1"}), False, False),
    "empty-labels": (pod([ctr()], labels={}), False, False),
    "memory-annotation-only": (pod([ctr()], annotations={"gpu-admission.io/gpu-memory": "8Gi"}),
                               False, True),
    "foreign-annotations": (pod([ctr()], annotations={"example.com/gpu-admission.io": "x",
                                                      "note": "gpu-admission.io/rule"}),
                            False, False),
    "no-metadata-fields": (pod([ctr()], meta=False), False, False),
    "no-containers-field": (pod(), False, False),
    "everything": (pod([ctr(limits=GPU, env=[{"name": "NVIDIA_VISIBLE_DEVICES", "value": "0"}],
                            privileged=True)], labels={"gpu-admission.io/group": "j"}), True, True),
}


def oracle(p, prefixes=PREFIXES):
    """What the conditions mean, written independently of the CEL text."""
    spec = p.get("spec") or {}
    lab = (p.get("metadata") or {}).get("labels") or {}
    ann = (p.get("metadata") or {}).get("annotations") or {}

    def asks(cn):
        res = cn.get("resources") or {}
        keys = list((res.get("limits") or {}).keys()) + list((res.get("requests") or {}).keys())
        return any(k.startswith(pre) for k in keys for pre in prefixes)

    def reaches(cn):
        names = {e.get("name") for e in (cn.get("env") or [])}
        priv = (cn.get("securityContext") or {}).get("privileged") is True
        return priv or bool(names & {"NVIDIA_VISIBLE_DEVICES", "NVIDIA_MIG_CONFIG_DEVICES"})

    gpu = any(asks(x) for x in (spec.get("containers") or []) + (spec.get("initContainers") or []))
    other = any(reaches(x) for k in ("containers", "initContainers", "ephemeralContainers")
                for x in (spec.get(k) or []))
    ours = any(k.startswith("gpu-admission.io/") for k in list(lab) + list(ann))
    return gpu, gpu or other or ours


def fixture_pods():
    """Every Pod, pod template (Deployment, Job, PyTorchJob replicas, ...) and AdmissionReview
    pod object in test/fixtures, as (id, pod)."""
    found = []

    def walk(node, where):
        if isinstance(node, dict):
            if node.get("kind") == "Pod" and isinstance(node.get("spec"), dict):
                found.append((where, node))
            elif isinstance(node.get("spec"), dict) and "containers" in node["spec"] \
                    and "template" not in node:
                found.append((where + "#template",
                              {"metadata": node.get("metadata") or {}, "spec": node["spec"]}))
            for k, v in node.items():
                walk(v, f"{where}/{k}")
        elif isinstance(node, list):
            for i, v in enumerate(node):
                walk(v, f"{where}[{i}]")

    root = os.path.join(c.SRC, "test", "fixtures")
    for path in sorted(glob.glob(root + "/**/*", recursive=True)):
        rel = os.path.relpath(path, root)
        try:
            if not path.endswith((".json", ".yaml", ".yml")):
                continue
            with open(path) as f:
                docs = [json.load(f)] if path.endswith(".json") else list(yaml.safe_load_all(f))
        except (ValueError, yaml.YAMLError):
            continue  # not every fixture is meant to parse
        for i, d in enumerate(docs):
            walk(d, f"{rel}:{i}")
    return found


def evaluate(exprs, cases):
    if not os.path.exists(CEL_MODULE):
        raise AssertionError(f"{CEL_MODULE} missing: run scripts/setup.sh test")
    node = c.tool("node")
    payload = {"module": CEL_MODULE, "expressions": exprs, "cases": cases}
    r = subprocess.run([node, os.path.join(os.path.dirname(__file__), "cel_eval.mjs")],
                       input=json.dumps(payload), capture_output=True, text=True, timeout=120)
    if r.returncode != 0:
        raise AssertionError("cel_eval.mjs failed:\n" + r.stderr)
    return json.loads(r.stdout)


def conditions(values=None, kube="1.33.0"):
    objs = c.render(values, kube_version=kube)
    m = c.one(objs, "MutatingWebhookConfiguration")["webhooks"][0]["matchConditions"]
    v = c.one(objs, "ValidatingWebhookConfiguration")["webhooks"][0]["matchConditions"]
    assert len(m) == 1 and len(v) == 1
    return {"mutate": m[0]["expression"], "validate": v[0]["expression"]}


class MatchConditions(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.exprs = conditions()

    def test_same_text_on_every_version_that_has_them(self):
        self.assertEqual(conditions(kube="1.37.2"), self.exprs)

    def test_edge_pods(self):
        cases = [{"id": k, "object": p} for k, (p, _, _) in EDGE.items()]
        out = evaluate(self.exprs, cases)
        self.assertEqual(out["parse"], {"mutate": None, "validate": None})
        for k, (p, want_m, want_v) in EDGE.items():
            with self.subTest(k):
                self.assertEqual(out["results"][k], {"mutate": want_m, "validate": want_v})
                self.assertEqual(oracle(p), (want_m, want_v), "oracle disagrees with the table")

    def test_update_sees_the_new_object(self):
        old = pod([ctr(limits=GPU)], labels={"gpu-admission.io/tenant": "a"})
        new = pod([ctr(limits=GPU)])
        out = evaluate(self.exprs, [{"id": "u", "object": new, "oldObject": old,
                                     "operation": "UPDATE"}])
        self.assertEqual(out["results"]["u"], {"mutate": True, "validate": True})

    def test_fixture_pods(self):
        pods = fixture_pods()
        self.assertGreaterEqual(len(pods), 30, "fixture walk found too few pods")
        cases = [{"id": i, "object": p} for i, p in pods]
        out = evaluate(self.exprs, cases)
        gpu = 0
        for i, p in pods:
            with self.subTest(i):
                want_m, want_v = oracle(p)
                gpu += want_m
                self.assertEqual(out["results"][i], {"mutate": want_m, "validate": want_v})
        self.assertGreaterEqual(gpu, 10, "too few GPU pods among the fixtures")
        self.assertLess(gpu, len(pods), "no non-GPU pod among the fixtures")

    def test_extra_resource_prefix(self):
        exprs = conditions({"webhook": {"matchConditions": {
            "resourcePrefixes": ["nvidia.com/", "example.org/"]}}})
        cases = [{"id": "x", "object": pod([ctr(limits={"example.org/shared-gpu": "1"})])},
                 {"id": "n", "object": pod([ctr(limits=GPU)])},
                 {"id": "o", "object": pod([ctr(limits={"example.com/gpu": "1"})])}]
        r = evaluate(exprs, cases)["results"]
        self.assertEqual(r["x"], {"mutate": True, "validate": True})
        self.assertEqual(r["n"], {"mutate": True, "validate": True})
        self.assertEqual(r["o"], {"mutate": False, "validate": False})

    def test_evaluator_reports_unguarded_access(self):
        # The harness must see the failure mode it protects against.
        out = evaluate({"bad": "object.spec.initContainers.exists(c, true)",
                        "syntax": "has(object.spec) &&"}, [{"id": "p", "object": pod([ctr()])}])
        self.assertTrue(out["results"]["p"]["bad"].startswith("error:"))
        self.assertIsNotNone(out["parse"]["syntax"])


if __name__ == "__main__":
    unittest.main(verbosity=2)
