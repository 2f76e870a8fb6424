"""test_fields.py - every field the chart renders in the webhook configurations and the pod
template is a real Kubernetes API field: its path must appear in the upstream round-trip
fixtures that populate every field (test/fixtures/k8s-api/HEAD: MutatingWebhookConfiguration,
ValidatingWebhookConfiguration, Pod). Catches misspelled or misplaced keys
("namespaceSelecter", reinvocationPolicy on a validating webhook, readOnlyRootFileSystem),
which the API server would reject or silently drop."""
import json
import os
import unittest

import chartlib as c

FIX = os.path.join(c.SRC, "test", "fixtures", "k8s-api", "HEAD")
# free-form maps: their keys are data, not fields
MAPS = {"labels", "annotations", "matchLabels", "nodeSelector", "limits", "requests", "data"}


def paths(node, prefix=""):
    out = set()
    if isinstance(node, dict):
        for k, v in node.items():
            p = f"{prefix}.{k}" if prefix else k
            out.add(p)
            if k not in MAPS:
                out |= paths(v, p)
    elif isinstance(node, list):
        for v in node:
            out |= paths(v, prefix + "[]")
    return out


def fixture(name):
    with open(os.path.join(FIX, name)) as f:
        return json.load(f)


class Fields(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.mwc = paths(fixture("admissionregistration.k8s.io.v1.MutatingWebhookConfiguration.json"))
        cls.vwc = paths(fixture("admissionregistration.k8s.io.v1.ValidatingWebhookConfiguration.json"))
        pod = fixture("core.v1.Pod.json")
        cls.pod = paths({"metadata": pod["metadata"], "spec": pod["spec"]})
        # the round-trip fixtures really hold the fields we rely on
        for p in ("webhooks[].matchConditions[].expression", "webhooks[].reinvocationPolicy",
                  "webhooks[].namespaceSelector.matchExpressions[].values"):
            assert p in cls.mwc, p
        assert "webhooks[].reinvocationPolicy" not in cls.vwc

    def check(self, obj, known, what):
        unknown = sorted(p for p in paths(obj) if p not in known)
        self.assertEqual(unknown, [], f"{what}: fields the Kubernetes API does not have")

    def test_every_mode_and_option(self):
        variants = [
            ({}, "1.33.0"), ({}, "1.37.2"),
            ({"certificates": {"mode": "cert-manager"}}, "1.33.0"),
            ({"certificates": {"mode": "existing", "existingSecret": "s", "caBundle": "QUJD"},
              "webhook": {"url": "https://127.0.0.1:9443"}}, "1.33.0"),
            ({"priorityClassName": "system-cluster-critical", "nodeSelector": {"a": "b"},
              "hostNetwork": True,
              "tolerations": [{"key": "k", "operator": "Exists"}],
              "imagePullSecrets": [{"name": "pull"}],
              "server": {"clientCA": "-----BEGIN CERTIFICATE-----\nx\n-----END CERTIFICATE-----\n",
                         "extraEnv": [{"name": "GPU_ADMISSION_LOG_LEVEL", "value": "debug"}]},
              "podAnnotations": {"a": "b"}}, "1.33.0"),
            ({"webhook": {"url": "https://127.0.0.1:9443", "workloads": {
                "failurePolicy": "Fail", "extraResources": [
                    {"apiGroup": "example.com", "resources": ["trainingjobs"]}]}}}, "1.37.2"),
        ]
        for values, kube in variants:
            with self.subTest(values=values, kube=kube):
                objs = c.render(values, kube_version=kube)
                m = c.one(objs, "MutatingWebhookConfiguration")
                v = c.one(objs, "ValidatingWebhookConfiguration")
                self.check({k: m[k] for k in ("metadata", "webhooks")}, self.mwc, "mutating")
                self.check({k: v[k] for k in ("metadata", "webhooks")}, self.vwc, "validating")
                tpl = c.one(objs, "Deployment")["spec"]["template"]
                self.check(tpl, self.pod, "pod template")

    def test_checker_catches_a_typo(self):
        objs = c.render()
        v = c.one(objs, "ValidatingWebhookConfiguration")
        v["webhooks"][0]["reinvocationPolicy"] = "IfNeeded"  # only valid on mutating webhooks
        with self.assertRaises(AssertionError):
            self.check({k: v[k] for k in ("metadata", "webhooks")}, self.vwc, "validating")
        tpl = c.one(objs, "Deployment")["spec"]["template"]
        tpl["spec"]["containers"][0]["securityContext"]["readOnlyRootFileSystem"] = True
        with self.assertRaises(AssertionError):
            self.check(tpl, self.pod, "pod template")


if __name__ == "__main__":
    unittest.main(verbosity=2)
