"""test_modes.py - the chart's enforcement modes (issue 32 item 3): `mode` webhook | backstop |
native, rendered with the real helm.

- What each mode installs: nothing more in webhook mode; the generated ValidatingAdmissionPolicy
  objects in backstop, and the MutatingAdmissionPolicy ones too in native, exactly as given
  except the chart's labels and each binding's namespaceSelector (the webhooks' own).
- The failure policy of each webhook entry, from the mode and from the generated objects
  themselves: an entry fails open only when a bound generated policy matches all of its
  resources and operations (strictness cases: one operation or subresource missing, an
  exclude rule, an unbound policy), and webhook.failurePolicy overrides.
- Refusals: a mode the cluster cannot serve (version; a live cluster's discovery without the
  kinds), the shipped export next to the user's own policies, a wrong or broken file, a chart
  without files/generated.
- The policy check hook's export containers: rendered (hook copy of the files, the `helm test`
  Pod on the release's copy), then run as the kubelet would run them (their /bin/sh script,
  with the binary this build made): an export that fails fails the Job; once the exporter
  exists, a stale export fails it and the current one passes.
- The generated files under helm/gpu-admission/files/generated/ are the export of policies/
  (regenerate: python3 test/chart/test_modes.py --write).

The VAP/MAP used for the template logic are hand-written test fixtures
(test/chart/fixtures/vap-fixture.yaml, map-fixture.yaml), never shipped."""
import os
import re
import shutil
import subprocess
import sys
import tempfile
import unittest

import yaml

import chartlib as c
from test_boot import KubeletVolume

BINARY = os.environ.get("GPA_BINARY", "")
FIX = os.path.join(os.path.dirname(os.path.abspath(__file__)), "fixtures")
GENERATED = os.path.join(c.CHART, "files", "generated")
KUBE = "1.37.2"
DRA = {"webhook": {"dra": {"enabled": True}}}


def text(name):
    with open(os.path.join(FIX, name)) as f:
        return f.read()


VAP = text("vap-fixture.yaml")
MAP = text("map-fixture.yaml")
VAP_DOCS = [d for d in yaml.safe_load_all(VAP) if d]
MAP_DOCS = [d for d in yaml.safe_load_all(MAP) if d]


def merge(*ds):
    out = {}
    for d in ds:
        for k, v in d.items():
            out[k] = merge(out[k], v) if isinstance(v, dict) and isinstance(out.get(k), dict) else v
    return out


def values(mode, vap=VAP, map_=MAP, **extra):
    v = {"mode": mode, "apiServerPolicies": {"vap": vap, "map": map_}}
    return merge(DRA, v, extra)


def render(v, kube=KUBE, extra=()):
    return c.render(v, kube_version=kube, extra=extra)


def refused(v, kube=KUBE, extra=()):
    r = c.template(v, kube_version=kube, extra=extra, check=False)
    assert r.returncode != 0, "rendered, expected a refusal"
    return r.stderr


def entries(objs):
    out = {}
    for kind in ("MutatingWebhookConfiguration", "ValidatingWebhookConfiguration"):
        for w in c.one(objs, kind)["webhooks"]:
            out[w["name"]] = w
    return out


def policies(objs):
    kinds = ("ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding",
             "MutatingAdmissionPolicy", "MutatingAdmissionPolicyBinding")
    return [o for o in objs if o.get("kind") in kinds]


def fp(objs):
    return {n: w["failurePolicy"] for n, w in entries(objs).items()}


def unscoped(o):
    """The object without its namespaceSelectors (the binding's and the policy's), which the
    chart sets to the webhooks' own."""
    o = yaml.safe_load(yaml.safe_dump(o))
    for key in ("matchResources", "matchConstraints"):
        m = o["spec"].get(key)
        if m is not None:
            m.pop("namespaceSelector", None)
            if not m:
                o["spec"].pop(key)
    return o


def strip_chart(o):
    """The object without what the chart adds or sets (labels, namespaceSelectors)."""
    o = unscoped(o)
    for k in list((o["metadata"].get("labels") or {})):
        if k.startswith(("app.kubernetes.io/", "helm.sh/")):
            del o["metadata"]["labels"][k]
    if not o["metadata"].get("labels"):
        o["metadata"].pop("labels", None)
    return o


class Modes(unittest.TestCase):
    """What each mode renders and the failure policies that follow."""

    def test_webhook_mode_is_the_default_and_adds_nothing(self):
        for v in (DRA, merge(DRA, {"mode": "webhook"}), merge(DRA, {"mode": None,
                                                                  "apiServerPolicies": None})):
            objs = render(v, kube="1.35.0")
            self.assertEqual(policies(objs), [])
            self.assertFalse([o for o in c.by_kind(objs, "ConfigMap")
                              if "export" in o["metadata"]["name"]])
            got = fp(objs)
            for n in ("mutate.gpu-admission.io", "mutate-claims.gpu-admission.io",
                      "validate.gpu-admission.io", "validate-claims.gpu-admission.io",
                      "namespace-names.gpu-admission.io"):
                self.assertEqual(got[n], "Fail", n)
            self.assertEqual(got["workloads.gpu-admission.io"], "Ignore")

    def test_backstop_installs_the_vap_as_given(self):
        objs = render(values("backstop"))
        got = policies(objs)
        self.assertEqual(sorted((o["kind"], o["metadata"]["name"]) for o in got),
                         sorted((d["kind"], d["metadata"]["name"]) for d in VAP_DOCS))
        by = {(o["kind"], o["metadata"]["name"]): o for o in got}
        hooks = entries(objs)
        for d in VAP_DOCS:
            o = by[(d["kind"], d["metadata"]["name"])]
            self.assertEqual(strip_chart(o), unscoped(d))
            self.assertEqual(o["metadata"]["labels"]["app.kubernetes.io/instance"], c.RELEASE)
            # the API server's policy judges exactly the namespaces the webhooks judge
            sel = o["spec"].get("matchResources" if d["kind"].endswith("Binding")
                                else "matchConstraints")["namespaceSelector"]
            self.assertEqual(sel, hooks["validate.gpu-admission.io"]["namespaceSelector"])
        self.assertEqual(c.by_kind(objs, "MutatingAdmissionPolicy"), [])

    def test_backstop_failure_policies(self):
        got = fp(render(values("backstop")))
        # the VAP fixture matches pods (CREATE, UPDATE, ephemeralcontainers) and claims (*);
        # the claims entry stays closed all the same: export vap compiles no claim placement
        # check (an untrusted claim on a multiAllocatable pool, sharing configs)
        self.assertEqual(got["validate.gpu-admission.io"], "Ignore")
        self.assertEqual(got["validate-claims.gpu-admission.io"], "Fail")
        # placement lives in the webhook alone in backstop: the mutating entries fail closed
        self.assertEqual(got["mutate.gpu-admission.io"], "Fail")
        self.assertEqual(got["mutate-claims.gpu-admission.io"], "Fail")
        self.assertEqual(got["namespace-names.gpu-admission.io"], "Fail")
        self.assertEqual(got["workloads.gpu-admission.io"], "Ignore")
        got = fp(render(values("backstop", webhook={"ignoreLabel": {
            "enabled": True, "namespaces": ["lab"]}})))
        self.assertEqual(got["namespaces.gpu-admission.io"], "Fail")

    def test_native_installs_both_and_its_failure_policies(self):
        v = values("native", webhook={"ignoreLabel": {"enabled": True, "namespaces": ["lab"]}})
        objs = render(v)
        kinds = sorted({o["kind"] for o in policies(objs)})
        self.assertEqual(kinds, ["MutatingAdmissionPolicy", "MutatingAdmissionPolicyBinding",
                                 "ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding"])
        hooks = entries(objs)
        for d in MAP_DOCS:
            (o,) = [o for o in c.by_kind(objs, d["kind"])
                    if o["metadata"]["name"] == d["metadata"]["name"]]
            self.assertEqual(strip_chart(o), unscoped(d))
        (b,) = c.by_kind(objs, "MutatingAdmissionPolicyBinding")
        (p,) = c.by_kind(objs, "MutatingAdmissionPolicy")
        # the mutating side skips what the mutating entry skips (the ignore label too)
        for sel in (b["spec"]["matchResources"]["namespaceSelector"],
                    p["spec"]["matchConstraints"]["namespaceSelector"]):
            self.assertEqual(sel, hooks["mutate.gpu-admission.io"]["namespaceSelector"])
            self.assertIn({"key": "gpu-admission.io/ignore", "operator": "NotIn",
                           "values": ["true"]}, sel["matchExpressions"])
        # ... and only when the chart locks the label: the fixture's own use of it is dropped
        plain = render(values("native"))
        (p,) = c.by_kind(plain, "MutatingAdmissionPolicy")
        self.assertNotIn("gpu-admission.io/ignore", str(p["spec"]["matchConstraints"]))
        self.assertEqual(p["spec"]["matchConstraints"]["namespaceSelector"],
                         entries(plain)["mutate.gpu-admission.io"]["namespaceSelector"])
        for o in c.by_kind(objs, "ValidatingAdmissionPolicyBinding"):
            self.assertNotIn("gpu-admission.io/ignore", str(o["spec"]["matchResources"]))
        got = fp(objs)
        self.assertEqual(got["mutate.gpu-admission.io"], "Ignore")  # the MAP fixture: pods
        self.assertEqual(got["mutate-claims.gpu-admission.io"], "Fail")  # no MAP for claims
        self.assertEqual(got["validate.gpu-admission.io"], "Ignore")
        self.assertEqual(got["validate-claims.gpu-admission.io"], "Fail")  # every mode
        self.assertEqual(got["namespaces.gpu-admission.io"], "Fail")

    def test_explicit_failure_policy_wins(self):
        got = fp(render(values("native", webhook={"failurePolicy": "Fail"})))
        for n in ("mutate", "mutate-claims", "validate", "validate-claims"):
            self.assertEqual(got[n + ".gpu-admission.io"], "Fail")
        got = fp(render(merge(DRA, {"webhook": {"failurePolicy": "Ignore"}})))
        for n in ("mutate", "mutate-claims", "validate", "validate-claims"):
            self.assertEqual(got[n + ".gpu-admission.io"], "Ignore")
        self.assertEqual(got["namespace-names.gpu-admission.io"], "Fail")

    def vap_with(self, rules, exclude=None, bind=True, name="gpu-admission-t"):
        pol = {"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicy",
               "metadata": {"name": name},
               "spec": {"matchConstraints": {"resourceRules": rules},
                        "validations": [{"expression": "true"}]}}
        if exclude:
            pol["spec"]["matchConstraints"]["excludeResourceRules"] = exclude
        docs = [pol]
        # a file needs one binding: bind this policy, or a second one that covers nothing
        other = {"apiVersion": "admissionregistration.k8s.io/v1",
                 "kind": "ValidatingAdmissionPolicy", "metadata": {"name": "gpu-admission-o"},
                 "spec": {"matchConstraints": {"resourceRules": [
                     {"apiGroups": ["apps"], "apiVersions": ["v1"], "operations": ["*"],
                      "resources": ["deployments"]}]}, "validations": [{"expression": "true"}]}}
        docs.append(other)
        docs.append({"apiVersion": "admissionregistration.k8s.io/v1",
                     "kind": "ValidatingAdmissionPolicyBinding",
                     "metadata": {"name": "gpu-admission-b"},
                     "spec": {"policyName": name if bind else "gpu-admission-o",
                              "validationActions": ["Deny"]}})
        return "---\n".join(yaml.safe_dump(d) for d in docs)

    def test_fails_open_only_when_covered(self):
        def pod_rule(ops, res=("pods", "pods/ephemeralcontainers"), groups=("",)):
            return {"apiGroups": list(groups), "apiVersions": ["v1"], "operations": list(ops),
                    "resources": list(res)}
        cases = [
            ("all", [pod_rule(["CREATE", "UPDATE"])], None, True, "Ignore"),
            ("wildcards", [pod_rule(["*"], ["*"], ["*"])], None, True, "Ignore"),
            ("split rules", [pod_rule(["CREATE", "UPDATE"], ["pods"]),
                             pod_rule(["UPDATE"], ["pods/ephemeralcontainers"])], None, True,
             "Ignore"),
            ("no UPDATE", [pod_rule(["CREATE"])], None, True, "Fail"),
            # the pods entry fails open, kubectl debug moves to an entry that fails closed
            ("no kubectl debug", [pod_rule(["CREATE", "UPDATE"], ["pods"])], None, True,
             "Ignore"),
            ("other group", [pod_rule(["*"], ["pods", "pods/ephemeralcontainers"], ["apps"])],
             None, True, "Fail"),
            ("excluded", [pod_rule(["*"], ["*"])],
             [pod_rule(["*"], ["pods"])], True, "Fail"),
            ("unbound", [pod_rule(["CREATE", "UPDATE"])], None, False, "Fail"),
        ]
        for name, rules, exclude, bind, want in cases:
            with self.subTest(name):
                got = fp(render(values("backstop", vap=self.vap_with(rules, exclude, bind))))
                self.assertEqual(got["validate.gpu-admission.io"], want)
                # the claims entry stays closed whatever the VAP matches, wildcards too
                self.assertEqual(got["validate-claims.gpu-admission.io"], "Fail")

    def test_kubectl_debug_split_when_the_vap_lacks_it(self):
        """`export vap` leaves pods/ephemeralcontainers to the webhook: the Pod entry may fail
        open, the subresource goes to validate-ephemeral.gpu-admission.io, which fails closed."""
        rules = [{"apiGroups": [""], "apiVersions": ["v1"], "operations": ["CREATE", "UPDATE"],
                  "resources": ["pods"]}]
        objs = render(values("backstop", vap=self.vap_with(rules)))
        v = c.one(objs, "ValidatingWebhookConfiguration")["webhooks"]
        names = [w["name"] for w in v]
        self.assertEqual(names[:2], ["validate.gpu-admission.io",
                                     "validate-ephemeral.gpu-admission.io"])
        pod, eph = v[0], v[1]
        self.assertEqual(pod["failurePolicy"], "Ignore")
        self.assertEqual(eph["failurePolicy"], "Fail")
        self.assertEqual([r["resources"] for r in pod["rules"]], [["pods"]])
        self.assertEqual(eph["rules"], [{"apiGroups": [""], "apiVersions": ["v1"],
                                         "operations": ["UPDATE"],
                                         "resources": ["pods/ephemeralcontainers"],
                                         "scope": "Namespaced"}])
        for k in ("namespaceSelector", "matchConditions", "clientConfig", "timeoutSeconds",
                  "sideEffects", "admissionReviewVersions", "matchPolicy"):
            self.assertEqual(eph[k], pod[k], k)
        # no split: the VAP covers the subresource, webhook mode, or an explicit policy
        for v_ in (values("backstop"), merge(DRA, {"mode": "webhook"}),
                   values("backstop", vap=self.vap_with(rules),
                          webhook={"failurePolicy": "Fail"})):
            hooks = entries(render(v_))
            self.assertNotIn("validate-ephemeral.gpu-admission.io", hooks)
            self.assertIn("pods/ephemeralcontainers",
                          str(hooks["validate.gpu-admission.io"]["rules"]))

    def test_lint_strict_every_mode(self):
        for v in (values("backstop"), values("native"), merge(DRA, {"mode": "native"})):
            args, _ = c._set_args(v)
            r = c.helm("lint", "--strict", c.CHART, "--kube-version", KUBE, *args, check=False)
            self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
            self.assertIn("0 chart(s) failed", r.stdout)

    def test_notes_and_alert_say_what_holds(self):
        # helm install --dry-run has no --kube-version: helm's own (1.35), which serves backstop
        r = c.helm("install", "--dry-run", c.RELEASE, c.CHART, "--namespace", c.RELEASE_NS,
                   *c._set_args(values("backstop"))[0])
        self.assertIn("Mode backstop: the API server also evaluates the generated "
                      "ValidatingAdmissionPolicy", r.stdout)
        self.assertIn("mutate.gpu-admission.io (failurePolicy Fail) and validate.gpu-admission.io "
                      "(failurePolicy Ignore)", r.stdout)
        kit = {"metrics": {"prometheusRule": {"enabled": True}}}
        for v, want in ((kit, "every pod creation the webhooks see is refused"),
                        (merge(kit, {"webhook": {"failurePolicy": "Ignore"}}),
                         "admitted unchecked"),
                        (merge(values("native"), kit, {"webhook": {"failurePolicy": "Ignore"}}),
                         "judged only by the API server's generated admission policies")):
            (rule,) = c.by_kind(render(v), "PrometheusRule")
            down = [a for g in rule["spec"]["groups"] for a in g["rules"]
                    if a.get("alert") == "GPUAdmissionNoReadyReplica"]
            self.assertEqual(len(down), 1)
            self.assertIn(want, down[0]["annotations"]["description"])


class Refusals(unittest.TestCase):
    """What the chart refuses to render, and its messages (docs/operations.md quotes them)."""

    def test_versions(self):
        for kube in ("1.33.0", "1.35.9"):
            self.assertIn("enforcement mode native needs Kubernetes >= 1.36", refused(values("native"), kube))
        for kube in ("1.33.0", "1.36.0"):
            render(values("backstop"), kube)
        render(values("native"), "1.36.0")
        self.assertIn("mode must be webhook, backstop or native",
                      refused(values("vap"), extra=("--skip-schema-validation",)))
        self.assertIn("/mode", refused(values("vap")))

    def test_live_discovery(self):
        """helm install against a cluster lists every served kind: one without the kinds (an
        API server with --runtime-config ...=false) is refused, whatever its version."""
        gv = "admissionregistration.k8s.io/v1/"
        live = ["--api-versions", gv + "MutatingWebhookConfiguration",
                "--api-versions", gv + "ValidatingWebhookConfiguration"]
        vap = ["--api-versions", gv + "ValidatingAdmissionPolicy",
               "--api-versions", gv + "ValidatingAdmissionPolicyBinding"]
        mapk = ["--api-versions", gv + "MutatingAdmissionPolicy",
                "--api-versions", gv + "MutatingAdmissionPolicyBinding"]
        err = refused(values("native"), extra=live + vap)
        self.assertIn("enforcement mode native needs the API server to serve admissionregistration.k8s.io/v1 "
                      "MutatingAdmissionPolicy, and this cluster does not", err)
        self.assertIn("ValidatingAdmissionPolicy", refused(values("backstop"), extra=live))
        render(values("backstop"), extra=live + vap)
        render(values("native"), extra=live + vap + mapk)

    def test_own_policies_need_their_export(self):
        own = {"policies": {"a.yaml": "apiVersion: gpu-admission.io/v1alpha1\n"}}
        for v in (merge(values("backstop", vap=""), own),
                  merge(values("backstop", vap=""), {"existingPolicyConfigMap": "mine"}),
                  merge(values("native", map_=""), own)):
            self.assertIn("with your own policies (policies or existingPolicyConfigMap) needs "
                          "their export", refused(v))
        render(merge(values("native"), own))
        render(merge(values("backstop"), {"existingPolicyConfigMap": "mine"}))

    def test_bad_files(self):
        cm = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: gpu-admission-x}\n"
        unbound = VAP.replace("policyName: gpu-admission-fixture-claims",
                              "policyName: gpu-admission-gone")
        cases = [
            ("the map as vap", values("backstop", vap=MAP), "document 1 is admissionregistration"
             ".k8s.io/v1 MutatingAdmissionPolicy, not"),
            ("the vap as map", values("native", map_=VAP), "is this the export of "
             "`gpu-admission export map`?"),
            ("another kind", values("backstop", vap=VAP + "---\n" + cm), "document 5 is v1 "
             "ConfigMap"),
            ("not ours", values("backstop", vap=VAP.replace("name: gpu-admission-fixture-pods\n"
                                                            "spec:\n  failurePolicy",
                                                            "name: other\nspec:\n  failurePolicy"
                                                            )),
             'ValidatingAdmissionPolicy "other" is not named gpu-admission-*'),
            ("binding of nothing", values("backstop", vap=unbound),
             'names policy "gpu-admission-gone", which the file does not hold'),
            ("comments only", values("backstop", vap="# nothing\n---\n"),
             "no ValidatingAdmissionPolicy with its ValidatingAdmissionPolicyBinding, an export"),
            ("no binding", values("backstop", vap=VAP.split("---")[0]), "generated objects in apiServerPolicies.vap: no "),
            ("not yaml", values("backstop", vap="a: [\n"), "generated objects in apiServerPolicies.vap: "
             "document 1 is not YAML"),
        ]
        for name, v, want in cases:
            with self.subTest(name):
                self.assertIn(want, refused(v))

    def test_chart_without_generated_files(self):
        """A chart built before the exporters (or with files/generated removed) refuses
        backstop unless the objects are given."""
        tmp = tempfile.mkdtemp(prefix="gpa-chart-nogen-")
        try:
            chart = os.path.join(tmp, "gpu-admission")
            shutil.copytree(c.CHART, chart)
            shutil.rmtree(os.path.join(chart, "files", "generated"), ignore_errors=True)
            args, _ = c._set_args(merge(DRA, {"mode": "backstop"}))
            r = c.helm("template", c.RELEASE, chart, "-n", c.RELEASE_NS, "--kube-version", KUBE,
                       *args, check=False)
            self.assertNotEqual(r.returncode, 0)
            self.assertIn("enforcement mode backstop needs the vap objects, and this chart has no "
                          "files/generated/vap.yaml", r.stderr)
            args, _ = c._set_args(values("backstop"))
            c.helm("template", c.RELEASE, chart, "-n", c.RELEASE_NS, "--kube-version", KUBE,
                   *args)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)

    def test_schema(self):
        self.assertIn("apiServerPolicies", refused(merge(values("backstop"), {
            "apiServerPolicies": {"vapp": "x"}})))
        self.assertIn("/apiServerPolicies/verifyCurrent", refused(merge(values("backstop"), {
            "apiServerPolicies": {"verifyCurrent": "yes"}})))


def hook_objects(objs):
    job = c.one(objs, "Job")
    pod = c.one(objs, "Pod")
    cms = {o["metadata"]["name"]: o for o in c.by_kind(objs, "ConfigMap")}
    return job, pod, cms


class PolicyCheckRender(unittest.TestCase):
    """The hook Job and the helm test Pod carry the export check in backstop and native."""

    def test_webhook_mode_unchanged(self):
        job, pod, cms = hook_objects(render(DRA))
        self.assertEqual([k["name"] for k in job["spec"]["template"]["spec"]["containers"]],
                         ["check"])
        self.assertNotIn(c.FULLNAME + "-policy-export", cms)

    def test_export_containers(self):
        for mode, want in (("backstop", ["check", "export-vap"]),
                           ("native", ["check", "export-vap", "export-map"])):
            with self.subTest(mode):
                objs = render(values(mode))
                job, pod, cms = hook_objects(objs)
                jspec = job["spec"]["template"]["spec"]
                self.assertEqual([k["name"] for k in jspec["containers"]], want)
                self.assertEqual(jspec["containers"], pod["spec"]["containers"])
                vols = {v["name"]: v for v in jspec["volumes"]}
                copy = cms[vols["exported"]["configMap"]["name"]]
                # the hook copy exists before the Job and holds the files as given
                ann = copy["metadata"]["annotations"]
                self.assertEqual(ann["helm.sh/hook"], "pre-install,pre-upgrade")
                self.assertEqual(ann["helm.sh/hook-weight"], "-10")
                self.assertEqual(copy["data"]["vap.yaml"], VAP)
                self.assertEqual("map.yaml" in copy["data"], mode == "native")
                if mode == "native":
                    self.assertEqual(copy["data"]["map.yaml"], MAP)
                served = cms[{v["name"]: v for v in pod["spec"]["volumes"]}["exported"][
                    "configMap"]["name"]]
                self.assertFalse(c.is_hook(served))
                self.assertEqual(served["data"], copy["data"])
                for k in jspec["containers"][1:]:
                    self.assertEqual(k["command"], ["/bin/sh", "-c"])
                    sc = k["securityContext"]
                    self.assertIs(sc["readOnlyRootFilesystem"], True)
                    self.assertIs(sc["runAsNonRoot"], True)
                    self.assertEqual(sc["capabilities"], {"drop": ["ALL"]})
                    # the only writable mount: its own scratch emptyDir
                    rw = [m for m in k["volumeMounts"] if not m.get("readOnly")]
                    self.assertEqual([m["mountPath"] for m in rw], ["/tmp/export"])
                    self.assertIn("emptyDir", vols[rw[0]["name"]])
                for o in (job, copy):
                    self.assertLessEqual(len(o["metadata"]["name"]), 63)

    def test_long_names(self):
        objs = render(values("native", fullnameOverride="x" * 63))
        # the names this feature adds (the chart's older ones are not checked here)
        names = [o["metadata"]["name"] for o in c.by_kind(objs, "ConfigMap")
                 if "export" in o["metadata"]["name"]]
        self.assertEqual(len(names), 2)
        for n in names + [c.one(objs, "Job")["metadata"]["name"]]:
            self.assertLessEqual(len(n), 63, n)
        self.assertEqual(len(names), len(set(names)))

    def test_verify_current_off(self):
        objs = render(merge(values("backstop"), {"apiServerPolicies": {"verifyCurrent": False}}))
        job, _, _ = hook_objects(objs)
        script = job["spec"]["template"]["spec"]["containers"][1]["args"][0]
        self.assertNotIn("cmp", script)
        self.assertIn("export vap --policies /etc/gpu-admission/policies", script)


def export_supported():
    """Whether the binary this build made has `gpu-admission export vap|map` (issue 32 items
    1-2, built by other branches): (bool, reason)."""
    if not BINARY or not os.access(BINARY, os.X_OK):
        raise AssertionError("GPA_BINARY must name the gpu-admission binary (ctest sets it)")
    out = {}
    for which in ("vap", "map"):
        r = subprocess.run([BINARY, "export", which, "--policies",
                            os.path.join(c.SRC, "policies")], capture_output=True, text=True,
                           timeout=60)
        out[which] = r
    return out


class ExportCheckCommand(unittest.TestCase):
    """The export containers' scripts run as the kubelet runs them, on the rendered data."""

    @classmethod
    def setUpClass(cls):
        cls.exports = export_supported()
        cls.tmp = tempfile.mkdtemp(prefix="gpa-export-check-")
        cls.n = 0

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def run_container(self, objs, name):
        job, _, cms = hook_objects(objs)
        spec = job["spec"]["template"]["spec"]
        (k,) = [k for k in spec["containers"] if k["name"] == name]
        vols = {v["name"]: v for v in spec["volumes"]}
        ExportCheckCommand.n += 1
        root = os.path.join(self.tmp, "run%d" % ExportCheckCommand.n)
        paths = {}
        for m in k["volumeMounts"]:
            d = os.path.join(root, m["name"])
            vol = vols[m["name"]]
            if "configMap" in vol:
                KubeletVolume(d, cms[vol["configMap"]["name"]]["data"])
            else:
                os.makedirs(d)
            paths[m["mountPath"]] = d
        self.assertEqual(k["command"], ["/bin/sh", "-c"])
        (script,) = k["args"]
        self.assertIn("/usr/local/bin/gpu-admission ", script)  # the image's ENTRYPOINT path
        script = script.replace("/usr/local/bin/gpu-admission", BINARY)
        for mp in sorted(paths, key=len, reverse=True):
            script = script.replace(mp, paths[mp])
        return subprocess.run(["/bin/sh", "-c", script], capture_output=True, text=True,
                              timeout=120)

    def test_failing_export_fails_the_job(self):
        """A policy set the exporter refuses: the Job fails, saying so."""
        files = dict(c.policy_cm(c.render())["data"])
        files["10-pools.yaml"] = files["10-pools.yaml"].replace("sharing: time-slicing",
                                                                "sharing: shared", 1)
        for mode, names in (("backstop", ["export-vap"]), ("native", ["export-vap",
                                                                      "export-map"])):
            objs = render(merge(values(mode), {"policies": files}))
            for name in names:
                with self.subTest(mode=mode, container=name):
                    r = self.run_container(objs, name)
                    self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
                    self.assertRegex(r.stderr, r"policy-check: gpu-admission export (vap|map) "
                                     r"failed \(exit [12]\)")

    def test_current_export_passes_and_stale_fails(self):
        """Per exporter: the release given the current export of the shipped policies passes,
        a stale one (the fixture) fails with the diff, verifyCurrent false lets it through."""
        fixtures = {"vap": VAP, "map": MAP}
        for which, r in self.exports.items():
            with self.subTest(which):
                if r.returncode != 0:
                    self.skipTest("this build's gpu-admission has no working `export %s` yet "
                                  "(issue 32 items 1-2): exit %d, %s" % (
                                      which, r.returncode, (r.stderr or r.stdout).strip()[:120]))
                mode = "native" if which == "map" else "backstop"
                current = dict(fixtures)
                current[which] = r.stdout
                objs = render(values(mode, vap=current["vap"], map_=current["map"]))
                run = self.run_container(objs, "export-" + which)
                self.assertEqual(run.returncode, 0, run.stderr)
                self.assertIn("export %s OK, the same objects" % which, run.stdout)
                # the fixture is not the export of the shipped policies: stale, refused
                run = self.run_container(render(values(mode)), "export-" + which)
                self.assertEqual(run.returncode, 1, run.stdout + run.stderr)
                self.assertIn("apiServerPolicies.%s is not the export of the policies" % which,
                              run.stderr)
                self.assertIn("+++", run.stderr)  # the diff shows what changed
                # verifyCurrent: false only asks the export to succeed
                objs = render(merge(values(mode), {"apiServerPolicies": {"verifyCurrent": False}}))
                run = self.run_container(objs, "export-" + which)
                self.assertEqual(run.returncode, 0, run.stderr)
                # the chart's own files/generated/ copy is the current export too
                path = os.path.join(GENERATED, which + ".yaml")
                if os.path.exists(path) and all(
                        os.path.exists(os.path.join(GENERATED, w + ".yaml"))
                        for w in (["vap", "map"] if mode == "native" else ["vap"])):
                    run = self.run_container(render(merge(DRA, {"mode": mode})),
                                             "export-" + which)
                    self.assertEqual(run.returncode, 0, run.stderr)


class Generated(unittest.TestCase):
    """helm/gpu-admission/files/generated/{vap,map}.yaml are the export of policies/."""

    def test_generated_files_are_current(self):
        exports = export_supported()
        for which, r in exports.items():
            with self.subTest(which):
                if r.returncode != 0:
                    self.skipTest("this build's gpu-admission has no working `export %s` yet "
                                  "(issue 32 items 1-2): the shipped chart has no generated "
                                  "file to check" % which)
                path = os.path.join(GENERATED, which + ".yaml")
                self.assertTrue(os.path.exists(path),
                                "%s missing; run: python3 test/chart/test_modes.py --write" % path)
                with open(path) as f:
                    self.assertEqual(f.read(), r.stdout,
                                     "%s is stale; run: python3 test/chart/test_modes.py --write"
                                     % path)

    def test_shipped_export_renders(self):
        """The chart's own files/generated/ pass its checks and install what they hold."""
        have = {w: os.path.exists(os.path.join(GENERATED, w + ".yaml")) for w in ("vap", "map")}
        if have["map"]:
            objs = render(values("native", map_=""))  # the fixture VAP, the shipped MAP
            with open(os.path.join(GENERATED, "map.yaml")) as f:
                docs = [d for d in yaml.safe_load_all(f) if d]
            got = policies(objs)
            self.assertEqual(sorted(o["metadata"]["name"] for o in got
                                    if o["kind"].startswith("Mutating")),
                             sorted(d["metadata"]["name"] for d in docs))
        if not have["vap"]:
            self.skipTest("no files/generated/vap.yaml yet (`export vap` is not merged)")
        objs = render(merge(DRA, {"mode": "backstop"}))
        self.assertTrue(c.by_kind(objs, "ValidatingAdmissionPolicy"))
        if have["map"]:
            objs = render(merge(DRA, {"mode": "native"}))
            self.assertTrue(c.by_kind(objs, "MutatingAdmissionPolicy"))


def write():
    """Regenerates files/generated/ with the binary GPA_BINARY (or build/gpu-admission)."""
    global BINARY
    BINARY = BINARY or os.path.join(c.SRC, "build", "gpu-admission")
    os.makedirs(GENERATED, exist_ok=True)
    for which in ("vap", "map"):
        out = os.path.join(GENERATED, which + ".yaml")
        r = subprocess.run([BINARY, "export", which, "--policies",
                            os.path.join(c.SRC, "policies"), "--output", out],
                           capture_output=True, text=True, timeout=60)
        sys.stderr.write(r.stderr)
        if r.returncode == 2 and "unknown" in r.stderr:
            print("export %s: not in this binary yet, %s not written" % (which, out))
        elif r.returncode != 0:
            sys.exit("export %s failed (exit %d)" % (which, r.returncode))


if __name__ == "__main__":
    if "--write" in sys.argv:
        write()
        sys.exit(0)
    unittest.main(verbosity=2)
