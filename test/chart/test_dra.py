"""test_dra.py - the chart's DRA entries (issue 24, webhook.dra.enabled): mutate-claims and
validate-claims.gpu-admission.io for resource.k8s.io/v1 resourceclaims and
resourceclaimtemplates, rendered by the real helm. auto renders them only for Kubernetes >= 1.34
serving resource.k8s.io/v1, never for 1.33 (with or without --api-versions); true and false
force them; the entries' contract (rules, matchPolicy Equivalent, the Pod entries' endpoint,
certificate, failure policy and namespaces); every rendered field is a real API field; bad values
are refused by the schema. The e2e dra suite applies the same entries to a real API server.

Must never: pass a "not rendered" check on a render that failed (every render must succeed)."""
import os
import shutil
import tempfile
import unittest

import yaml

import chartlib as c
from test_fields import fixture, paths
from test_render import IGNORE_EXPR, NS_SELECTOR, selector_matches

MUT, VAL = "mutate-claims.gpu-admission.io", "validate-claims.gpu-admission.io"
RESOURCES = ["resourceclaims", "resourceclaimtemplates"]
API = ["--api-versions", "resource.k8s.io/v1"]


def configs(objs):
    return (c.one(objs, "MutatingWebhookConfiguration"),
            c.one(objs, "ValidatingWebhookConfiguration"))


def entry(cfg, name):
    found = [w for w in cfg["webhooks"] if w["name"] == name]
    assert len(found) <= 1, name
    return found[0] if found else None


def claim_entries(objs):
    m, v = configs(objs)
    return entry(m, MUT), entry(v, VAL)


class Auto(unittest.TestCase):
    """webhook.dra.enabled: auto (the default) follows the cluster."""

    def test_off_before_1_34_even_with_the_api_listed(self):
        for kube in ("1.33.0", "1.33.5"):
            for extra in ((), API):
                with self.subTest(kube=kube, api=bool(extra)):
                    objs = c.render(kube_version=kube, extra=extra)
                    m, v = configs(objs)
                    self.assertEqual(claim_entries(objs), (None, None))
                    self.assertEqual([w["name"] for w in m["webhooks"]],
                                     ["mutate.gpu-admission.io"])
                    self.assertNotIn("resource.k8s.io", c.dump(v))

    def test_on_from_1_34(self):
        for kube in ("1.34.0", "1.35.2"):
            for extra in ((), API):
                with self.subTest(kube=kube, api=bool(extra)):
                    objs = c.render(kube_version=kube, extra=extra)
                    m, v = configs(objs)
                    # appended after the Pod entries, which keep their places
                    self.assertEqual([w["name"] for w in m["webhooks"]],
                                     ["mutate.gpu-admission.io", MUT])
                    self.assertEqual([w["name"] for w in v["webhooks"]],
                                     ["validate.gpu-admission.io", "workloads.gpu-admission.io",
                                      VAL, "namespace-names.gpu-admission.io"])

    def test_helm_template_always_lists_the_api(self):
        """Why auto also asks Kubernetes >= 1.34: helm template's capabilities are the API
        versions helm was built with, so Has "resource.k8s.io/v1" is true for a 1.33 render.
        A probe template in a copy of the chart shows it; if a helm release stops doing so,
        this fails and the version condition can be reconsidered."""
        tmp = tempfile.mkdtemp(prefix="gpa-dra-probe-")
        try:
            chart = os.path.join(tmp, "gpu-admission")
            shutil.copytree(c.CHART, chart)
            with open(os.path.join(chart, "templates", "zz-probe.yaml"), "w") as f:
                f.write('# probe: {{ .Capabilities.APIVersions.Has "resource.k8s.io/v1" }} '
                        '{{ .Capabilities.KubeVersion.Version }}\n')
            r = c.helm("template", c.RELEASE, chart, "--namespace", c.RELEASE_NS,
                       "--kube-version", "1.33.5")
            self.assertIn("# probe: true v1.33.5", r.stdout)
            self.assertNotIn(MUT, r.stdout)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)

    def test_reuse_values_from_an_older_chart_is_auto(self):
        # --reuse-values from a chart without webhook.dra (null removes the key here)
        for kube, want in (("1.33.0", False), ("1.34.0", True)):
            with self.subTest(kube=kube):
                objs = c.render(kube_version=kube, extra=["--set", "webhook.dra=null"])
                m, v = claim_entries(objs)
                self.assertEqual((m is not None, v is not None), (want, want))


class Forced(unittest.TestCase):
    def test_true_renders_on_1_33(self):
        objs = c.render({"webhook": {"dra": {"enabled": True}}}, kube_version="1.33.0")
        m, v = claim_entries(objs)
        self.assertIsNotNone(m)
        self.assertIsNotNone(v)

    def test_false_never_renders(self):
        for kube in ("1.34.0", "1.35.2"):
            with self.subTest(kube=kube):
                objs = c.render({"webhook": {"dra": {"enabled": False}}}, kube_version=kube,
                                extra=API)
                self.assertEqual(claim_entries(objs), (None, None))
                self.assertNotIn("resource.k8s.io", c.dump(configs(objs)))

    def test_auto_string_is_the_default(self):
        def entries(values):
            got = claim_entries(c.render(values, kube_version="1.34.0"))
            for w in got:
                w["clientConfig"].pop("caBundle")  # a new CA per render
            return got
        self.assertEqual(entries({"webhook": {"dra": {"enabled": "auto"}}}), entries({}))

    def test_bad_values_refused(self):
        for val, where in (("maybe", "/webhook/dra/enabled"), ("Auto", "/webhook/dra/enabled"),
                           ("yes", "/webhook/dra/enabled")):
            with self.subTest(val=val):
                r = c.template({"webhook": {"dra": {"enabled": val}}}, check=False)
                self.assertNotEqual(r.returncode, 0)
                self.assertIn(where, r.stderr)
                self.assertIn("value must be one of 'auto', true, false", r.stderr)
        # --set-string makes "true" a string: refused, not taken as on
        r = c.helm("template", c.RELEASE, c.CHART, "--set-string", "webhook.dra.enabled=true",
                   check=False)
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("/webhook/dra/enabled", r.stderr)
        r = c.template({"webhook": {"dra": {"enable": True}}}, check=False)
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("additional properties 'enable' not allowed", r.stderr)

    def test_template_check_without_schema(self):
        # the template's own check, for a release installed with --skip-schema-validation
        r = c.template({"webhook": {"dra": {"enabled": "maybe"}}}, check=False,
                       extra=["--skip-schema-validation"])
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("webhook.dra.enabled must be auto, true or false, not maybe", r.stderr)


class Notes(unittest.TestCase):
    def test_notes_name_the_entries_only_when_rendered(self):
        # (helm install has no --kube-version: the values decide)
        for val, want in (("true", True), ("false", False)):
            with self.subTest(val=val):
                r = c.helm("install", "--dry-run", c.RELEASE, c.CHART, "--namespace",
                           c.RELEASE_NS, "--set", "webhook.dra.enabled=" + val)
                self.assertIn("NOTES:", r.stdout)
                self.assertEqual(MUT in r.stdout.split("NOTES:", 1)[1], want)


class Contract(unittest.TestCase):
    """The two entries as the API server will read them (Kubernetes 1.34, defaults)."""

    @classmethod
    def setUpClass(cls):
        cls.objs = c.render(kube_version="1.34.0")
        cls.m, cls.v = configs(cls.objs)
        cls.mw, cls.vw = claim_entries(cls.objs)
        cls.pod_m, cls.pod_v = cls.m["webhooks"][0], cls.v["webhooks"][0]

    def test_rules(self):
        # UPDATE on the mutating entry too: a re-applied manifest is placed again (GitOps)
        self.assertEqual(self.mw["rules"], [{
            "apiGroups": ["resource.k8s.io"], "apiVersions": ["v1"],
            "operations": ["CREATE", "UPDATE"], "resources": RESOURCES,
            "scope": "Namespaced"}])
        self.assertEqual(self.vw["rules"], [{
            "apiGroups": ["resource.k8s.io"], "apiVersions": ["v1"],
            "operations": ["CREATE", "UPDATE"], "resources": RESOURCES,
            "scope": "Namespaced"}])
        # the Pod entries are not widened to claims
        for w in self.m["webhooks"] + self.v["webhooks"]:
            if w["name"] not in (MUT, VAL):
                self.assertNotIn("resource.k8s.io", c.dump(w["rules"]), w["name"])

    def test_same_endpoint_certificate_and_failure_as_the_pod_entries(self):
        for w, pod, path in ((self.mw, self.pod_m, "/mutate"), (self.vw, self.pod_v, "/validate")):
            self.assertEqual(w["clientConfig"], pod["clientConfig"])
            self.assertEqual(w["clientConfig"]["service"]["path"], path)
            self.assertTrue(w["clientConfig"]["caBundle"])
            self.assertEqual(w["matchPolicy"], "Equivalent")
            self.assertEqual(w["sideEffects"], "None")  # --dry-run=server reaches it
            self.assertEqual(w["admissionReviewVersions"], ["v1"])
            self.assertEqual(w["failurePolicy"], "Fail")
            self.assertEqual(w["timeoutSeconds"], 5)
            self.assertEqual(w["namespaceSelector"], NS_SELECTOR)
            self.assertNotIn("objectSelector", w)
            # the Pod entries' CEL reads object.spec.containers: never on a claim; the claim
            # entries have their own (issue 30 item 5, test_cel_scope.py runs it)
            self.assertIn("matchConditions", pod)
            self.assertNotEqual(w["matchConditions"], pod["matchConditions"])
            self.assertEqual([m["name"] for m in w["matchConditions"]], ["judged-claim"])
        self.assertEqual(self.mw["reinvocationPolicy"], "IfNeeded")
        self.assertNotIn("reinvocationPolicy", self.vw)

    def test_namespaces_left_out_by_name(self):
        for w in (self.mw, self.vw):
            for ns in (c.RELEASE_NS, "kube-system", "gpu-operator"):
                self.assertFalse(selector_matches(w["namespaceSelector"],
                                                  {"kubernetes.io/metadata.name": ns}), ns)
            self.assertTrue(selector_matches(w["namespaceSelector"], {
                "kubernetes.io/metadata.name": "gpu-test1", "gpu-admission.io/ignore": "true"}))

    def test_options_follow_the_webhook_values(self):
        objs = c.render({"webhook": {"failurePolicy": "Ignore", "timeoutSeconds": 9,
                                     "url": "https://127.0.0.1:9443/gpa",
                                     "excludeNamespaces": ["batch-infra"],
                                     "ignoreLabel": {"enabled": True,
                                                     "namespaces": ["ops-recovery"]}}},
                        kube_version="1.34.0")
        mw, vw = claim_entries(objs)
        self.assertEqual(mw["clientConfig"]["url"], "https://127.0.0.1:9443/gpa/mutate")
        self.assertEqual(vw["clientConfig"]["url"], "https://127.0.0.1:9443/gpa/validate")
        for w in (mw, vw):
            self.assertNotIn("service", w["clientConfig"])
            self.assertEqual((w["failurePolicy"], w["timeoutSeconds"]), ("Ignore", 9))
            self.assertIn("batch-infra", w["namespaceSelector"]["matchExpressions"][0]["values"])
        # the opt-in label skips the mutating entry only, as for pods
        self.assertIn(IGNORE_EXPR, mw["namespaceSelector"]["matchExpressions"])
        self.assertNotIn(IGNORE_EXPR, vw["namespaceSelector"]["matchExpressions"])

    def test_cert_manager_injects(self):
        objs = c.render({"certificates": {"mode": "cert-manager"}}, kube_version="1.34.0")
        for w in claim_entries(objs):
            self.assertNotIn("caBundle", w["clientConfig"])
        for cfg in configs(objs):
            self.assertIn("cert-manager.io/inject-ca-from", cfg["metadata"]["annotations"])

    def test_generated_ca_is_the_served_one(self):
        sec = [s for s in c.by_kind(self.objs, "Secret")
               if s["metadata"]["name"] == c.FULLNAME + "-tls"][0]
        for w in (self.mw, self.vw):
            self.assertEqual(w["clientConfig"]["caBundle"], sec["data"]["ca.crt"])


class Fields(unittest.TestCase):
    """Every field of the rendered entries is in the upstream round-trip fixtures of the
    admissionregistration v1 types (the check test_fields.py runs on the Pod entries)."""

    def test_real_api_fields(self):
        mwc = paths(fixture("admissionregistration.k8s.io.v1.MutatingWebhookConfiguration.json"))
        vwc = paths(fixture("admissionregistration.k8s.io.v1.ValidatingWebhookConfiguration.json"))
        for values, kube in (({}, "1.34.0"),
                             ({"webhook": {"dra": {"enabled": True},
                                           "url": "https://127.0.0.1:9443"},
                               "certificates": {"mode": "existing", "existingSecret": "s",
                                                "caBundle": "QUJD"}}, "1.33.0")):
            with self.subTest(values=values, kube=kube):
                m, v = configs(c.render(values, kube_version=kube))
                for cfg, known in ((m, mwc), (v, vwc)):
                    ws = [w for w in cfg["webhooks"] if w["name"] in (MUT, VAL)]
                    self.assertEqual(len(ws), 1)
                    self.assertEqual(sorted(p for p in paths({"webhooks": ws})
                                            if p not in known), [])

    def test_rendered_yaml_round_trips(self):
        # the documents parse as YAML with no duplicate entry names per configuration
        out = c.template(kube_version="1.34.0").stdout
        for d in yaml.safe_load_all(out):
            if d and d["kind"].endswith("WebhookConfiguration"):
                names = [w["name"] for w in d["webhooks"]]
                self.assertEqual(len(names), len(set(names)), names)


if __name__ == "__main__":
    unittest.main(verbosity=2)
