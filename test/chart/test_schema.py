"""test_schema.py - values.schema.json makes helm refuse bad values before rendering anything:
each case must exit non-zero with a message naming the offending key; good values must pass.
Also `helm lint --strict` for the default values and every certificate mode."""
import unittest

import chartlib as c

BAD = [
    ("replicaCount 0", {"replicaCount": 0}, "/replicaCount"),
    ("replicaCount string", {"replicaCount": "2"}, "/replicaCount"),
    ("replicaCount float", {"replicaCount": 1.5}, "/replicaCount"),
    ("failurePolicy", {"webhook": {"failurePolicy": "Never"}}, "/webhook/failurePolicy"),
    ("failurePolicy case", {"webhook": {"failurePolicy": "fail"}}, "/webhook/failurePolicy"),
    ("cert mode", {"certificates": {"mode": "letsencrypt"}}, "/certificates/mode"),
    ("timeout 0", {"webhook": {"timeoutSeconds": 0}}, "/webhook/timeoutSeconds"),
    ("timeout 31", {"webhook": {"timeoutSeconds": 31}}, "/webhook/timeoutSeconds"),
    ("unknown top-level key", {"replicas": 3}, "additional properties 'replicas'"),
    ("typo in nested key", {"webhook": {"failurepolicy": "Fail"}}, "failurepolicy"),
    ("existing without secret", {"certificates": {"mode": "existing", "caBundle": "QUJD"}},
     "/certificates/existingSecret"),
    ("existing without caBundle", {"certificates": {"mode": "existing",
                                                    "existingSecret": "s"}},
     "/certificates/caBundle"),
    ("url not https", {"webhook": {"url": "http://127.0.0.1:8443"}}, "/webhook/url"),
    ("url with query", {"webhook": {"url": "https://h/x?y=1"}}, "/webhook/url"),
    ("policy file name", {"policies": {"cluster.txt": "x: 1\n"}}, "invalid propertyName 'cluster.txt'"),
    ("policy not text", {"policies": {"a.yaml": {"kind": "GPUPolicy"}}}, "/policies/a.yaml"),
    ("CEL injection via prefix", {"webhook": {"matchConditions": {
        "resourcePrefixes": ["nvidia.com/') || true || ('"]}}},
     "/webhook/matchConditions/resourcePrefixes/0"),
    ("no prefixes", {"webhook": {"matchConditions": {"resourcePrefixes": []}}},
     "/webhook/matchConditions/resourcePrefixes"),
    ("log level", {"server": {"logLevel": "verbose"}}, "/server/logLevel"),
    ("max body too small", {"server": {"maxBodyBytes": 100}}, "/server/maxBodyBytes"),
    ("header timeout negative", {"server": {"headerTimeoutSeconds": -1}},
     "/server/headerTimeoutSeconds"),
    ("body rate not a number", {"server": {"minBodyBytesPerSecond": "1Ki"}},
     "/server/minBodyBytesPerSecond"),
    ("threads too many", {"server": {"threads": 1000}}, "/server/threads"),
    ("port out of range", {"server": {"port": 70000}}, "/server/port"),
    ("excluded namespace name", {"webhook": {"excludeNamespaces": ["Bad_NS"]}},
     "/webhook/excludeNamespaces/0"),
    ("spread policy", {"topologySpread": {"whenUnsatisfiable": "Maybe"}},
     "/topologySpread/whenUnsatisfiable"),
    ("client CA not PEM", {"server": {"clientCA": "not a certificate"}}, "/server/clientCA"),
    ("both client CA sources", {"server": {
        "clientCA": "-----BEGIN CERTIFICATE-----\nx\n-----END CERTIFICATE-----\n",
        "clientCASecret": "s"}}, "/server"),
    ("issuer kind", {"certificates": {"certManager": {"issuerRef": {"name": "x",
                                                                    "kind": "Foo"}}}},
     "/certificates/certManager/issuerRef/kind"),
    ("workloads failurePolicy", {"webhook": {"workloads": {"failurePolicy": "ignore"}}},
     "/webhook/workloads/failurePolicy"),
    ("workloads timeout 0", {"webhook": {"workloads": {"timeoutSeconds": 0}}},
     "/webhook/workloads/timeoutSeconds"),
    ("workloads timeout 31", {"webhook": {"workloads": {"timeoutSeconds": 31}}},
     "/webhook/workloads/timeoutSeconds"),
    ("workloads enabled string", {"webhook": {"workloads": {"enabled": "yes"}}},
     "/webhook/workloads/enabled"),
    ("workloads typo", {"webhook": {"workloads": {"extraKinds": []}}}, "extraKinds"),
    ("extra resource is a kind", {"webhook": {"workloads": {"extraResources": [
        {"apiGroup": "example.com", "resources": ["TrainingJob"]}]}}},
     "/webhook/workloads/extraResources/0/resources/0"),
    ("extra subresource", {"webhook": {"workloads": {"extraResources": [
        {"apiGroup": "example.com", "resources": ["trainingjobs/status"]}]}}},
     "/webhook/workloads/extraResources/0/resources/0"),
    ("extra group with version", {"webhook": {"workloads": {"extraResources": [
        {"apiGroup": "example.com/v1", "resources": ["trainingjobs"]}]}}},
     "/webhook/workloads/extraResources/0/apiGroup"),
    ("extra without resources", {"webhook": {"workloads": {"extraResources": [
        {"apiGroup": "example.com"}]}}}, "/webhook/workloads/extraResources/0"),
    ("extra empty resources", {"webhook": {"workloads": {"extraResources": [
        {"apiGroup": "example.com", "resources": []}]}}},
     "/webhook/workloads/extraResources/0/resources"),
    ("extra unknown key", {"webhook": {"workloads": {"extraResources": [
        {"apiGroup": "example.com", "resources": ["x"], "kind": "X"}]}}}, "'kind'"),
    # issue 25: the GPU operator's namespace, the opt-in label, the zone spread, the check
    ("operator namespace name", {"webhook": {"gpuOperatorNamespace": "GPU_Operator"}},
     "/webhook/gpuOperatorNamespace"),
    ("ignore-label namespace glob", {"webhook": {"ignoreLabel": {
        "enabled": True, "namespaces": ["team-*"]}}}, "/webhook/ignoreLabel/namespaces/0"),
    ("ignore-label enabled string", {"webhook": {"ignoreLabel": {"enabled": "true"}}},
     "/webhook/ignoreLabel/enabled"),
    ("ignore-label typo", {"webhook": {"ignoreLabel": {"namespace": ["a"]}}}, "'namespace'"),
    ("zone spread policy", {"topologySpread": {"zone": {"whenUnsatisfiable": "Soft"}}},
     "/topologySpread/zone/whenUnsatisfiable"),
    ("priority class not a string", {"priorityClassName": False}, "/priorityClassName"),
    ("policy check deadline", {"policyCheck": {"activeDeadlineSeconds": 0}},
     "/policyCheck/activeDeadlineSeconds"),
    ("policy check typo", {"policyCheck": {"enable": False}}, "'enable'"),
]

GOOD = [
    {"replicaCount": 3, "webhook": {"failurePolicy": "Ignore", "timeoutSeconds": 30,
                                    "url": "https://gpa.example.com:9443/prefix"},
     "terminationGracePeriodSeconds": 60},
    {"certificates": {"mode": "existing", "existingSecret": "s", "caBundle": "QUJD\n"}},
    {"certificates": {"mode": "cert-manager",
                      "certManager": {"issuerRef": {"name": "ca", "kind": "ClusterIssuer"}}}},
    {"server": {"threads": 8, "maxBodyBytes": 1048576, "logLevel": "warn"},
     "podDisruptionBudget": {"minAvailable": "50%"}},
    {"metrics": {"serviceMonitor": {"enabled": True, "labels": {"release": "prom"}}},
     "networkPolicy": {"enabled": True, "webhookFrom": [{"ipBlock": {"cidr": "10.0.0.0/8"}}]},
     "server": {"clientCA": "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n"},
     "existingPolicyConfigMap": "team-policies", "replicaCount": 1},
    {"webhook": {"workloads": {"enabled": True, "failurePolicy": "Fail", "timeoutSeconds": 10,
                               "extraResources": [
                                   {"apiGroup": "example.com", "resources": ["trainingjobs"]},
                                   {"apiGroup": "", "resources": ["podsets", "gangs"]}]}}},
    {"webhook": {"workloads": {"enabled": False}}},
]


class Schema(unittest.TestCase):
    def test_bad_values_are_refused(self):
        for name, values, where in BAD:
            with self.subTest(name):
                r = c.template(values, check=False)
                self.assertNotEqual(r.returncode, 0, f"{name}: helm accepted {values}")
                self.assertIn("schema", r.stderr, r.stderr)
                self.assertIn(where, r.stderr, r.stderr)
                self.assertEqual(r.stdout.strip(), "", "nothing may be rendered")

    def test_good_values_are_accepted(self):
        for values in GOOD:
            with self.subTest(str(values)):
                r = c.template(values, check=False)
                self.assertEqual(r.returncode, 0, r.stderr)
                self.assertIn("kind: MutatingWebhookConfiguration", r.stdout)

    def test_lint_strict(self):
        for values in [None] + GOOD:
            with self.subTest(str(values)):
                args, _ = c._set_args(values)
                r = c.helm("lint", "--strict", c.CHART, *args, check=False)
                self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
                self.assertIn("0 chart(s) failed", r.stdout)


if __name__ == "__main__":
    unittest.main(verbosity=2)
