"""test_cel_scope.py - the matchConditions of the claim entries (mutate-claims and
validate-claims.gpu-admission.io) and of the workloads entry (issue 30 item 5, small blast
radius), as rendered by the real helm, run with a real CEL implementation (@bufbuild/cel via
node, test_cel.evaluate) over hand-made edge objects with known answers, over every claim and
claim template in test/fixtures and test/golden/claims, and over every pod template of the
fixtures wrapped in each workload kind. Answers come from plain-Python readings of the same
rules (claim_oracle; test_cel.oracle for pod templates). Any evaluation error fails: the API
server would apply failurePolicy to that call.

Also: the default webhook.dra.gpuClasses is the set of GPU classes the shipped policies know
(spec.dra.genericClasses, every pool's dra.deviceClass, and the NVIDIA classes the server counts
as GPUs, src/core/policy/policy_dra.c), and a class name that could break out of the CEL string
is refused by the schema.

Must never: pass a "not sent" answer that came from an evaluation error (each result is
compared with a bool)."""
import copy
import glob
import os
import re
import unittest

import yaml

import chartlib as c
from test_cel import ctr, evaluate, fixture_pods, oracle, pod

MUT, VAL, WL = ("mutate-claims.gpu-admission.io", "validate-claims.gpu-admission.io",
                "workloads.gpu-admission.io")
CLASSES = ("gpu.nvidia.com", "mig.nvidia.com", "vfio.gpu.nvidia.com")
CHANNEL = "compute-domain-default-channel.nvidia.com"
NVIDIA_DRIVER = "gpu.nvidia.com"
GPU = {"nvidia.com/gpu": "1"}


def entries(values=None, kube="1.34.0"):
    objs = c.render(values, kube_version=kube)
    hooks = {w["name"]: w for cfg in c.by_kind(objs, "MutatingWebhookConfiguration") +
             c.by_kind(objs, "ValidatingWebhookConfiguration") for w in cfg["webhooks"]}
    return hooks


def expr(hook):
    mc = hook.get("matchConditions") or []
    assert len(mc) == 1, hook["name"]
    return mc[0]["expression"]


# ------------------------------------------------------------------------------- claims

def claim(requests, config=None, template=False, v1beta1=False):
    # request names are unique in a claim (the API and the server's reader refuse a repeat)
    requests = [dict(r, name="r%d" % i) for i, r in enumerate(requests)]
    devices = {"requests": requests}
    if config is not None:
        devices["config"] = config
    spec = {"devices": devices}
    kind = "ResourceClaim"
    if template:
        spec, kind = {"spec": spec}, "ResourceClaimTemplate"
    return {"apiVersion": "resource.k8s.io/v1beta1" if v1beta1 else "resource.k8s.io/v1",
            "kind": kind, "metadata": {"name": "c", "namespace": "n"}, "spec": spec}


def exactly(cls, **kw):
    x = {"deviceClassName": cls}
    x.update(kw)
    return {"name": "r", "exactly": x}


def first(*alts):
    return {"name": "r", "firstAvailable": [dict({"name": "s%d" % i}, **a)
                                            for i, a in enumerate(alts)]}


def beta(cls, **kw):
    x = {"name": "r", "deviceClassName": cls}
    x.update(kw)
    return x


def opaque(driver):
    return [{"opaque": {"driver": driver, "parameters": {"apiVersion": "x/v1", "kind": "K"}}}]


# id: (claim, sent)
CLAIMS = {
    "gpu": (claim([exactly("gpu.nvidia.com")]), True),
    "mig": (claim([exactly("mig.nvidia.com")]), True),
    "vfio": (claim([exactly("vfio.gpu.nvidia.com")]), True),
    "channel": (claim([exactly(CHANNEL)]), False),
    "channel-own-config": (claim([exactly(CHANNEL)], opaque("compute-domain.nvidia.com")), False),
    "nic": (claim([exactly("nic.example.com", count=2)]), False),
    "nic-then-gpu": (claim([exactly("nic.example.com"), exactly("gpu.nvidia.com")]), True),
    "channel-admin-access": (claim([exactly(CHANNEL, adminAccess=True)]), True),
    "channel-admin-access-false": (claim([exactly(CHANNEL, adminAccess=False)]), False),
    "nic-allocation-all": (claim([exactly("nic.example.com", allocationMode="All")]), True),
    "nic-exact-count": (claim([exactly("nic.example.com", allocationMode="ExactCount")]), False),
    "nic-nvidia-config": (claim([exactly("nic.example.com")], opaque(NVIDIA_DRIVER)), True),
    "config-without-opaque": (claim([exactly("nic.example.com")], [{"requests": ["r0"]}]),
                              False),
    "first-available-gpu-second": (claim([first({"deviceClassName": "nic.example.com"},
                                                {"deviceClassName": "mig.nvidia.com"})]), True),
    "first-available-nic": (claim([first({"deviceClassName": "nic.example.com"})]), False),
    "first-available-all": (claim([first({"deviceClassName": "nic.example.com",
                                          "allocationMode": "All"})]), True),
    "v1beta1-gpu": (claim([beta("gpu.nvidia.com")], v1beta1=True), True),
    "v1beta1-nic": (claim([beta("nic.example.com")], v1beta1=True), False),
    "v1beta1-nic-admin": (claim([beta("nic.example.com", adminAccess=True)], v1beta1=True), True),
    "v1beta1-nic-all": (claim([beta("nic.example.com", allocationMode="All")], v1beta1=True),
                        True),
    "lookalike-classes": (claim([exactly("gpu.nvidia.com.example.org"),
                                 exactly("xmig.nvidia.com"), exactly("GPU.NVIDIA.COM")]), False),
    "no-requests": ({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
                     "metadata": {"name": "c"}, "spec": {"devices": {}}}, False),
    "no-devices": ({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
                    "metadata": {"name": "c"}, "spec": {}}, False),
    "no-spec": ({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
                 "metadata": {"name": "c"}}, False),
    "template-no-inner-spec": ({"apiVersion": "resource.k8s.io/v1",
                                "kind": "ResourceClaimTemplate", "metadata": {"name": "c"},
                                "spec": {"metadata": {"labels": {"a": "b"}}}}, False),
}
for _k, (_o, _want) in list(CLAIMS.items()):
    if _o.get("spec", {}).get("devices", {}).get("requests"):
        CLAIMS["template-" + _k] = (claim(_o["spec"]["devices"]["requests"],
                                          _o["spec"]["devices"].get("config"), template=True,
                                          v1beta1=_o["apiVersion"].endswith("v1beta1")), _want)


def claim_oracle(o, classes=CLASSES):
    """What the claim conditions mean, read from the object without the CEL text."""
    spec = o.get("spec") or {}
    dev = spec.get("devices") if "devices" in spec else (spec.get("spec") or {}).get("devices")
    dev = dev or {}

    def alt(a, admin_ok):
        return (a.get("deviceClassName") in classes or a.get("allocationMode") == "All" or
                (admin_ok and a.get("adminAccess") is True))

    for r in dev.get("requests") or []:
        if "exactly" in r and alt(r["exactly"], True):
            return True
        if any(alt(a, False) for a in r.get("firstAvailable") or []):
            return True
        if alt(r, True):
            return True
    return any((g.get("opaque") or {}).get("driver") == NVIDIA_DRIVER
               for g in dev.get("config") or [])


def fixture_claims():
    """Every ResourceClaim / ResourceClaimTemplate of test/fixtures and test/golden/claims."""
    found = []
    for path in sorted(glob.glob(os.path.join(c.SRC, "test", "fixtures", "**", "*.yaml"),
                                 recursive=True) +
                       glob.glob(os.path.join(c.SRC, "test", "golden", "claims", "*",
                                              "case.yaml"))):
        try:
            with open(path) as f:
                docs = list(yaml.safe_load_all(f))
        except yaml.YAMLError:
            continue
        for i, d in enumerate(docs):
            if isinstance(d, dict) and isinstance(d.get("object"), dict):
                d = d["object"]  # a golden case's inline object
            if isinstance(d, dict) and d.get("kind") in ("ResourceClaim",
                                                         "ResourceClaimTemplate"):
                found.append(("%s:%d" % (os.path.relpath(path, c.SRC), i), d))
    return found


class ClaimConditions(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.hooks = entries()
        cls.expr = expr(cls.hooks[MUT])

    def test_both_entries_same_condition(self):
        self.assertEqual(expr(self.hooks[VAL]), self.expr)
        self.assertEqual(self.hooks[MUT]["matchConditions"][0]["name"], "judged-claim")

    def run_cases(self, exprs, cases):
        out = evaluate(exprs, [{"id": k, "object": o} for k, o in cases])
        self.assertEqual(set(v for v in out["parse"].values()), {None})
        return out["results"]

    def test_edge_claims(self):
        res = self.run_cases({"c": self.expr}, [(k, o) for k, (o, _) in CLAIMS.items()])
        self.assertGreater(len(CLAIMS), 40)
        for k, (o, want) in CLAIMS.items():
            with self.subTest(k):
                self.assertEqual(res[k], {"c": want})
                self.assertEqual(claim_oracle(o), want, "oracle disagrees with the table")

    def test_fixture_claims(self):
        found = fixture_claims()
        self.assertGreaterEqual(len(found), 18, "fixture walk found too few claims")
        res = self.run_cases({"c": self.expr}, found)
        sent = 0
        for k, o in found:
            with self.subTest(k):
                want = claim_oracle(o)
                sent += want
                self.assertEqual(res[k], {"c": want})
        # NVIDIA's demo claims all ask GPUs; the claims left out are the edge table's
        self.assertGreater(sent, 10)

    def test_classes_from_values(self):
        e = expr(entries({"webhook": {"dra": {"gpuClasses": ["gpu.example.com"]}}})[MUT])
        cases = [("own", claim([exactly("gpu.example.com")])),
                 ("nvidia", claim([exactly("gpu.nvidia.com")])),
                 ("nvidia-config", claim([exactly("nic.example.com")], opaque(NVIDIA_DRIVER)))]
        res = self.run_cases({"c": e}, cases)
        self.assertEqual({k: v["c"] for k, v in res.items()},
                         {"own": True, "nvidia": False, "nvidia-config": True})

    def test_off_with_match_conditions_off(self):
        hooks = entries({"webhook": {"matchConditions": {"enabled": False}}})
        for h in (MUT, VAL, WL):
            self.assertNotIn("matchConditions", hooks[h], h)

    def test_default_is_the_shipped_policies_classes(self):
        """webhook.dra.gpuClasses = every GPU class the shipped policies know: NVIDIA's classes
        the server counts as GPUs (policy_dra.c) plus spec.dra.genericClasses and every pool's
        dra.deviceClass of values.defaultPolicies (= policies/, chart/policies_sync)."""
        with open(os.path.join(c.CHART, "values.yaml")) as f:
            values = yaml.safe_load(f)
        with open(os.path.join(c.SRC, "src", "core", "policy", "policy_dra.c")) as f:
            m = re.search(r"nvidia_classes\[\] = \{([^}]*)\}", f.read())
        builtin = set(re.findall(r'"([^"]+)"', m.group(1)))
        self.assertEqual(builtin, set(CLASSES))
        known = set(builtin)
        for text in values["defaultPolicies"].values():
            for d in yaml.safe_load_all(text):
                spec = (d or {}).get("spec") or {}
                known.update((spec.get("dra") or {}).get("genericClasses") or [])
                for p in spec.get("pools") or []:
                    if (p.get("dra") or {}).get("deviceClass"):
                        known.add(p["dra"]["deviceClass"])
        self.assertEqual(sorted(values["webhook"]["dra"]["gpuClasses"]), sorted(known))
        self.assertIn("'vfio.gpu.nvidia.com'", self.expr)

    def test_schema_refuses_a_class_that_breaks_the_string(self):
        for bad in ("gpu.nvidia.com') || true || ('", "GPU.example.com", ""):
            with self.subTest(bad=bad):
                r = c.template({"webhook": {"dra": {"gpuClasses": [bad]}}}, check=False,
                               kube_version="1.34.0")
                self.assertNotEqual(r.returncode, 0)
                self.assertIn("/webhook/dra/gpuClasses/0", r.stderr)
        r = c.template({"webhook": {"dra": {"gpuClasses": []}}}, check=False,
                       kube_version="1.34.0")
        self.assertNotEqual(r.returncode, 0)


# ------------------------------------------------------------------------------ workloads

def tpl(p):
    return {"metadata": p.get("metadata") or {}, "spec": p.get("spec") or {}}


RES = {  # kind: (group, resource, wrap(template) -> object)
    "Deployment": ("apps", "deployments", lambda t: {"spec": {"template": t}}),
    "StatefulSet": ("apps", "statefulsets", lambda t: {"spec": {"template": t}}),
    "DaemonSet": ("apps", "daemonsets", lambda t: {"spec": {"template": t}}),
    "ReplicaSet": ("apps", "replicasets", lambda t: {"spec": {"template": t}}),
    "Job": ("batch", "jobs", lambda t: {"spec": {"template": t}}),
    "CronJob": ("batch", "cronjobs", lambda t: {"spec": {"jobTemplate": {"spec": {
        "template": t}}}}),
    "ReplicationController": ("", "replicationcontrollers", lambda t: {"spec": {"template": t}}),
    "PodTemplate": ("", "podtemplates", lambda t: {"template": t}),
    "LeaderWorkerSet-worker": ("leaderworkerset.x-k8s.io", "leaderworkersets",
                               lambda t: {"spec": {"leaderWorkerTemplate": {
                                   "workerTemplate": t}}}),
    "LeaderWorkerSet-leader": ("leaderworkerset.x-k8s.io", "leaderworkersets",
                               lambda t: {"spec": {"leaderWorkerTemplate": {
                                   "leaderTemplate": t, "workerTemplate": tpl(pod([ctr()]))}}}),
}
RES.update({
    "PyTorchJob": ("kubeflow.org", "pytorchjobs", lambda t: {"spec": {"pytorchReplicaSpecs": {
        "Master": {"template": tpl(pod([ctr()]))}, "Worker": {"template": t}}}}),
    "TFJob": ("kubeflow.org", "tfjobs", lambda t: {"spec": {"tfReplicaSpecs": {
        "Chief": {"replicas": 1}, "Worker": {"template": t}}}}),
    "MPIJob": ("kubeflow.org", "mpijobs", lambda t: {"spec": {"mpiReplicaSpecs": {
        "Worker": {"template": t}}}}),
    "JobSet": ("jobset.x-k8s.io", "jobsets", lambda t: {"spec": {"replicatedJobs": [
        {"name": "a", "template": {"spec": {"template": tpl(pod([ctr()]))}}},
        {"name": "b", "template": {"spec": {"template": t}}}]}}),
    "RayCluster-head": ("ray.io", "rayclusters", lambda t: {"spec": {"headGroupSpec": {
        "template": t}}}),
    "RayCluster-worker": ("ray.io", "rayclusters", lambda t: {"spec": {
        "headGroupSpec": {"template": tpl(pod([ctr()]))},
        "workerGroupSpecs": [{"groupName": "g0"}, {"groupName": "g1", "template": t}]}}),
    "RayJob-worker": ("ray.io", "rayjobs", lambda t: {"spec": {"rayClusterSpec": {
        "workerGroupSpecs": [{"template": t}]}}}),
    # extraResources with templates (values), a map of named templates as the e2e CRD
    "TrainingJob": ("e2e.gpu-admission.io", "trainingjobs", lambda t: {"spec": {"workers": {
        "W": {"replicas": 2, "template": t}}}}),
})
ALWAYS = {  # extraResources without templates: the chart cannot read them, always sent
    "Widget (extraResources, no templates)": ("example.com", "widgets",
                                              lambda t: {"spec": {"template": t}}),
}


def wl_case(kind, table, template_pod, i=""):
    g, r, wrap = table[kind]
    o = wrap(tpl(template_pod))
    o.update({"apiVersion": "x/v1", "kind": kind.split()[0], "metadata": {"name": "w"}})
    return {"id": "%s%s" % (kind, i), "object": o,
            "resource": {"group": g, "version": "v1", "resource": r}}


class WorkloadConditions(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.expr = expr(entries({"webhook": {"workloads": {"extraResources": [
            {"apiGroup": "e2e.gpu-admission.io", "resources": ["trainingjobs"],
             "templates": ["spec.workers.*.template"]},
            {"apiGroup": "example.com", "resources": ["widgets"]}]}}})[WL])

    def results(self, cases):
        out = evaluate({"w": self.expr}, cases)
        self.assertEqual(out["parse"], {"w": None})
        return {k: v["w"] for k, v in out["results"].items()}

    def test_edge_templates_per_kind(self):
        edge = {"plain": (pod([ctr()]), False),
                "gpu": (pod([ctr(limits=GPU)]), True),
                "gpu-init-requests": (pod([ctr()], init=[ctr("i", requests=GPU)]), True),
                "dra-extended": (pod([ctr(limits={
                    "deviceclass.resource.kubernetes.io/gpu.nvidia.com": "1"})]), True),
                "env-visible-devices": (pod([ctr(env=[{"name": "NVIDIA_VISIBLE_DEVICES",
                                                       "value": "all"}])]), True),
                "privileged-init": (pod([ctr()], init=[ctr("i", privileged=True)]), True),
                "tenant-label": (pod([ctr()], labels={"gpu-admission.io/tenant": "x"}), True),
                "gang-annotation": (pod([ctr()], annotations={
                    "gpu-admission.io/gang-size": "8"}), True),
                "foreign-label": (pod([ctr()], labels={"app": "gpu-admission.io/x"}), False),
                "cpu-only": (pod([ctr(limits={"cpu": "1"})]), False)}
        edge["hostpath"] = (dict(pod([ctr()]), spec={"containers": [ctr()], "volumes": [
            {"name": "d", "hostPath": {"path": "/data"}}]}), True)
        cases, want = [], {}
        for kind in RES:
            for k, (p, w) in edge.items():
                cases.append(wl_case(kind, RES, p, "/" + k))
                want[cases[-1]["id"]] = w
                self.assertEqual(oracle(p)[1], w, k)
        for kind in ALWAYS:
            for k, (p, _) in edge.items():
                cases.append(wl_case(kind, ALWAYS, p, "/" + k))
                want[cases[-1]["id"]] = True
        self.assertEqual(self.results(cases), want)

    def test_fixture_templates_in_every_kind(self):
        """Every pod and pod template of test/fixtures as the template of a Deployment and of
        one more kind (in turn, so every kind gets its share): sent exactly when the Pod
        validating entry would send that pod."""
        pods = fixture_pods()
        kinds = sorted(RES)
        cases, want = [], {}
        for i, (where, p) in enumerate(pods):
            for kind in {"Deployment", kinds[i % len(kinds)]}:
                cases.append(wl_case(kind, RES, p, "/%d" % i))
                want[cases[-1]["id"]] = oracle(p)[1]
        got = self.results(cases)
        for k, w in want.items():
            with self.subTest(k):
                self.assertEqual(got[k], w)
        self.assertGreater(sum(want.values()), 10)
        self.assertLess(sum(want.values()), len(want))

    def test_missing_template_not_sent_no_error(self):
        cases = []
        for kind, (g, r, _) in RES.items():
            for i, o in enumerate(({"spec": {}}, {"metadata": {"name": "x"}},
                                   {"spec": {"jobTemplate": {}}},
                                   {"spec": {"leaderWorkerTemplate": {}}},
                                   {"spec": {"template": {}}}, {"template": {}},
                                   {"spec": {"pytorchReplicaSpecs": {}}},
                                   {"spec": {"pytorchReplicaSpecs": {"W": {"replicas": 1}}}},
                                   {"spec": {"replicatedJobs": [{"template": {}}]}},
                                   {"spec": {"workerGroupSpecs": "not-a-list"}},
                                   {"spec": {"workers": {"W": "x"}}},
                                   {"spec": {"rayClusterSpec": {"workerGroupSpecs": []}}})):
                cases.append({"id": "%s/%d" % (kind, i), "object": o,
                              "resource": {"group": g, "version": "v1", "resource": r}})
        self.assertEqual(set(self.results(cases).values()), {False})

    def test_update_sees_the_new_object(self):
        old = wl_case("Deployment", RES, pod([ctr(limits=GPU)]))
        new = wl_case("Deployment", RES, pod([ctr()]))
        new.update(oldObject=old["object"], operation="UPDATE", id="u")
        self.assertEqual(self.results([new]), {"u": False})

    def test_star_path_map_or_list_and_at_most_one_star(self):
        # the chart's `*` takes a map's values or a list's elements, whichever the kind has
        gpu = tpl(pod([ctr(limits=GPU)]))
        cases = [dict(wl_case("TrainingJob", RES, pod([ctr()])), id="map-plain"),
                 dict(wl_case("TrainingJob", RES, pod([ctr()])), id="list-gpu",
                      object={"spec": {"workers": [{"template": tpl(pod([ctr()]))},
                                                   {"template": gpu}]}}),
                 dict(wl_case("TrainingJob", RES, pod([ctr()])), id="list-plain",
                      object={"spec": {"workers": [{"template": tpl(pod([ctr()]))}]}})]
        self.assertEqual(self.results(cases),
                         {"map-plain": False, "list-gpu": True, "list-plain": False})
        r = c.template({"webhook": {"workloads": {"extraResources": [
            {"apiGroup": "x.io", "resources": ["ys"], "templates": ["spec.a.*.b.*.template"]}]}}},
            check=False, kube_version="1.34.0")
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("at most one `*`", r.stderr)
        r = c.template({"webhook": {"workloads": {"extraResources": [
            {"apiGroup": "x.io", "resources": ["ys"], "templates": ["spec.a').b"]}]}}},
            check=False, kube_version="1.34.0")
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("/webhook/workloads/extraResources/0/templates/0", r.stderr)

    def test_a_kind_in_core_or_apps_outside_the_list_is_sent(self):
        # a kind an extraResources entry adds to a known group has no known template path
        cases = [wl_case("Deployment", RES, pod([ctr()])),
                 dict(wl_case("Deployment", RES, pod([ctr()])), id="x",
                      resource={"group": "apps", "version": "v1", "resource": "widgets"})]
        self.assertEqual(self.results(cases), {"Deployment": False, "x": True})


if __name__ == "__main__":
    unittest.main(verbosity=2)
