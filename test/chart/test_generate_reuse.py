"""test_generate_reuse.py - certificates.mode=generate keeps its key pair across upgrades.
`helm template --dry-run=server` runs the chart's `lookup` against a minimal in-process
Kubernetes API (discovery + GET of the objects the chart renders, served from a dict). Cases:
no Secret yet (new pair), a Secret the chart made earlier (reused byte for byte, caBundle from
its ca.crt), the same Secret near its not-after annotation (renewed), and an incomplete Secret
(replaced). The same fake API lets `kubectl apply --dry-run=client` read the rendered objects,
and `helm install --dry-run=server` see a 1.32 (refused) or a 1.33 cluster (InstallNotes)."""
import base64
import datetime
import http.server
import json
import os
import subprocess
import tempfile
import threading
import unittest

import yaml

import chartlib as c

SECRET = f"{c.FULLNAME}-tls"
CORE = [("secrets", "Secret", True), ("configmaps", "ConfigMap", True),
        ("services", "Service", True), ("serviceaccounts", "ServiceAccount", True),
        ("pods", "Pod", True)]  # the policy check's `helm test` Pod
GROUPS = {"apps/v1": [("deployments", "Deployment", True)],
          "batch/v1": [("jobs", "Job", True)],  # the policy check's hook Job
          "policy/v1": [("poddisruptionbudgets", "PodDisruptionBudget", True)],
          "admissionregistration.k8s.io/v1": [
              ("mutatingwebhookconfigurations", "MutatingWebhookConfiguration", False),
              ("validatingwebhookconfigurations", "ValidatingWebhookConfiguration", False)]}


def resource_list(gv, res):
    return {"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": gv,
            "resources": [{"name": n, "singularName": k.lower(), "namespaced": ns, "kind": k,
                           "verbs": ["get", "list", "create", "update", "patch", "delete"]}
                          for n, k, ns in res]}


class FakeAPI:
    """Just enough of the Kubernetes API for helm's discovery, lookup and dry-run."""

    def __init__(self, minor=33):
        self.objects = {}
        self.gets = []
        api = self
        groups = dict(GROUPS)
        version = {"major": "1", "minor": str(minor), "gitVersion": f"v1.{minor}.2"}

        class H(http.server.BaseHTTPRequestHandler):
            def do_GET(self):
                p = self.path.split("?")[0]
                api.gets.append(p)
                if p == "/version":
                    return self.send(200, version)
                if p == "/api":
                    return self.send(200, {"kind": "APIVersions", "versions": ["v1"]})
                if p == "/apis":
                    return self.send(200, {"kind": "APIGroupList", "apiVersion": "v1", "groups": [
                        {"name": gv.split("/")[0],
                         "versions": [{"groupVersion": gv, "version": gv.split("/")[1]}],
                         "preferredVersion": {"groupVersion": gv, "version": gv.split("/")[1]}}
                        for gv in groups]})
                if p == "/api/v1":
                    return self.send(200, resource_list("v1", CORE))
                if p.startswith("/apis/") and p[6:] in groups:
                    return self.send(200, resource_list(p[6:], groups[p[6:]]))
                if p in api.objects:
                    return self.send(200, api.objects[p])
                self.send(404, {"kind": "Status", "apiVersion": "v1", "status": "Failure",
                                "reason": "NotFound", "code": 404})

            def do_POST(self):
                n = int(self.headers.get("Content-Length", 0))
                self.send(201, json.loads(self.rfile.read(n) or b"{}"))

            do_PATCH = do_PUT = do_POST

            def send(self, code, obj):
                b = json.dumps(obj).encode()
                self.send_response(code)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(b)))
                self.end_headers()
                self.wfile.write(b)

            def log_message(self, *a):
                pass

        self.srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), H)
        threading.Thread(target=self.srv.serve_forever, daemon=True).start()
        self.kubeconfig = tempfile.NamedTemporaryFile("w", suffix=".yaml", delete=False)
        self.kubeconfig.write(json.dumps({
            "apiVersion": "v1", "kind": "Config",
            "clusters": [{"name": "f", "cluster": {
                "server": f"http://127.0.0.1:{self.srv.server_address[1]}"}}],
            "users": [{"name": "u", "user": {}}],
            "contexts": [{"name": "f", "context": {"cluster": "f", "user": "u"}}],
            "current-context": "f"}))
        self.kubeconfig.close()

    def close(self):
        self.srv.shutdown()
        self.srv.server_close()
        os.unlink(self.kubeconfig.name)

    def put_secret(self, data, not_after=None):
        ann = {"meta.helm.sh/release-name": c.RELEASE,
               "meta.helm.sh/release-namespace": c.RELEASE_NS}
        if not_after:
            ann["gpu-admission.io/not-after"] = not_after
        self.objects[f"/api/v1/namespaces/{c.RELEASE_NS}/secrets/{SECRET}"] = {
            "apiVersion": "v1", "kind": "Secret", "type": "kubernetes.io/tls",
            "metadata": {"name": SECRET, "namespace": c.RELEASE_NS, "annotations": ann,
                         "labels": {"app.kubernetes.io/managed-by": "Helm"}},
            "data": data}

    def render(self):
        env = dict(c.ENV, KUBECONFIG=self.kubeconfig.name)
        r = subprocess.run([c.tool("helm"), "template", c.RELEASE, c.CHART, "-n", c.RELEASE_NS,
                            "--dry-run=server", "--disable-openapi-validation"],
                           capture_output=True, text=True, env=env, timeout=120)
        if r.returncode != 0:
            raise AssertionError("helm template --dry-run=server failed:\n" + r.stderr)
        return [d for d in yaml.safe_load_all(r.stdout) if d]


def secret_and_bundles(objs):
    sec = c.one(objs, "Secret")
    bundles = {c.one(objs, k)["webhooks"][0]["clientConfig"]["caBundle"]
               for k in ("MutatingWebhookConfiguration", "ValidatingWebhookConfiguration")}
    return sec, bundles


def rfc3339(days):
    t = datetime.datetime.now(datetime.timezone.utc) + datetime.timedelta(days=days)
    return t.strftime("%Y-%m-%dT%H:%M:%SZ")


class GenerateReuse(unittest.TestCase):
    def setUp(self):
        self.api = FakeAPI()

    def tearDown(self):
        self.api.close()

    def test_first_install_generates_and_looks_up(self):
        sec, bundles = secret_and_bundles(self.api.render())
        self.assertIn(f"/api/v1/namespaces/{c.RELEASE_NS}/secrets/{SECRET}", self.api.gets,
                      "the chart must look the Secret up")
        self.assertEqual(bundles, {sec["data"]["ca.crt"]})
        na = datetime.datetime.strptime(sec["metadata"]["annotations"]["gpu-admission.io/not-after"],
                                        "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=datetime.timezone.utc)
        days = (na - datetime.datetime.now(datetime.timezone.utc)).days
        self.assertTrue(3640 <= days <= 3650, days)

    def test_upgrade_reuses_existing_pair(self):
        first, _ = secret_and_bundles(self.api.render())
        na = rfc3339(3000)
        self.api.put_secret(first["data"], na)
        again, bundles = secret_and_bundles(self.api.render())
        self.assertEqual(again["data"], first["data"])
        self.assertEqual(bundles, {first["data"]["ca.crt"]})
        self.assertEqual(again["metadata"]["annotations"]["gpu-admission.io/not-after"], na)

    def test_pair_without_annotation_is_reused(self):
        first, _ = secret_and_bundles(self.api.render())
        self.api.put_secret(first["data"])  # e.g. made by hand: keep it, cannot judge expiry
        again, bundles = secret_and_bundles(self.api.render())
        self.assertEqual(again["data"], first["data"])
        self.assertEqual(bundles, {first["data"]["ca.crt"]})

    def test_pair_near_expiry_is_renewed(self):
        first, _ = secret_and_bundles(self.api.render())
        self.api.put_secret(first["data"], rfc3339(10))  # inside renewBeforeDays (30)
        again, bundles = secret_and_bundles(self.api.render())
        self.assertNotEqual(again["data"]["tls.crt"], first["data"]["tls.crt"])
        self.assertNotEqual(again["data"]["ca.crt"], first["data"]["ca.crt"])
        new_at = again["metadata"]["annotations"]["gpu-admission.io/not-after"]
        self.assertGreater(new_at, rfc3339(3000))
        # until the pods load the new pair they serve the old one: the bundle trusts both
        self.assertEqual(len(bundles), 1)
        pem = base64.b64decode(bundles.pop()).decode()
        self.assertEqual(pem, base64.b64decode(again["data"]["ca.crt"]).decode() +
                         base64.b64decode(first["data"]["ca.crt"]).decode())
        for leaf in (first, again):
            with tempfile.TemporaryDirectory() as d:
                with open(f"{d}/bundle", "w") as f:
                    f.write(pem)
                with open(f"{d}/leaf", "wb") as f:
                    f.write(base64.b64decode(leaf["data"]["tls.crt"]))
                r = subprocess.run(["openssl", "verify", "-CAfile", f"{d}/bundle", f"{d}/leaf"],
                                   capture_output=True, text=True)
                self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        # the next upgrade (Secret renewed, far from expiry) drops the old CA
        self.api.put_secret(again["data"], new_at)
        third, bundles = secret_and_bundles(self.api.render())
        self.assertEqual(third["data"], again["data"])
        self.assertEqual(bundles, {again["data"]["ca.crt"]})

    def test_incomplete_secret_is_replaced(self):
        first, _ = secret_and_bundles(self.api.render())
        partial = {k: v for k, v in first["data"].items() if k != "ca.crt"}
        self.api.put_secret(partial, rfc3339(3000))
        again, bundles = secret_and_bundles(self.api.render())
        self.assertNotEqual(again["data"]["tls.crt"], first["data"]["tls.crt"])
        self.assertEqual(bundles, {again["data"]["ca.crt"]})
        self.assertTrue(base64.b64decode(again["data"]["ca.crt"]).startswith(b"-----BEGIN CERT"))

    def test_kubectl_accepts_the_rendered_objects(self):
        # Client-side dry run against the same fake API (discovery only; kubectl cannot run it
        # offline): every document parses and maps to a known resource. It does not type-check
        # fields - test_fields.py does that.
        out = c.template().stdout
        env = dict(c.ENV, KUBECONFIG=self.api.kubeconfig.name)
        r = subprocess.run([c.tool("kubectl"), "apply", "--dry-run=client", "--validate=false",
                            "-o", "name", "-f", "-"], input=out, capture_output=True, text=True,
                           env=env, timeout=120)
        self.assertEqual(r.returncode, 0, r.stderr)
        got = sorted(r.stdout.split())
        self.assertEqual(got, sorted([
            f"configmap/{c.FULLNAME}-policies", f"deployment.apps/{c.FULLNAME}",
            f"mutatingwebhookconfiguration.admissionregistration.k8s.io/{c.FULLNAME}",
            f"poddisruptionbudget.policy/{c.FULLNAME}", f"secret/{c.FULLNAME}-tls",
            f"service/{c.FULLNAME}", f"serviceaccount/{c.FULLNAME}",
            f"validatingwebhookconfiguration.admissionregistration.k8s.io/{c.FULLNAME}",
            # the policy check (issue 25): hook copy of the ConfigMap, hook Job, helm test Pod
            f"configmap/{c.FULLNAME}-policy-check", f"job.batch/{c.FULLNAME}-policy-check",
            f"pod/{c.FULLNAME}-policy-test"]))
        r = subprocess.run([c.tool("kubectl"), "apply", "--dry-run=client", "--validate=false",
                            "-f", "-"], input=out + "\n---\nkind: [broken\n",
                           capture_output=True, text=True, env=env, timeout=120)
        self.assertNotEqual(r.returncode, 0)


class InstallNotes(unittest.TestCase):
    """`helm install --dry-run=server` against a fake 1.32 and a fake 1.33 cluster: the chart
    reads the cluster's real version (not --kube-version), refuses one older than it supports
    and NOTES.txt says what to do."""

    def install(self, minor, ok=True):
        api = FakeAPI(minor)
        try:
            env = dict(c.ENV, KUBECONFIG=api.kubeconfig.name)
            r = subprocess.run([c.tool("helm"), "install", c.RELEASE, c.CHART, "-n", c.RELEASE_NS,
                                "--dry-run=server", "--disable-openapi-validation"],
                               capture_output=True, text=True, env=env, timeout=120)
        finally:
            api.close()
        if not ok:
            return r
        self.assertEqual(r.returncode, 0, r.stderr)
        manifest, _, notes = r.stdout.partition("NOTES:")
        objs = [d for d in yaml.safe_load_all(manifest.split("MANIFEST:", 1)[1]) if d]
        return objs, notes

    def test_1_32_refused(self):
        r = self.install(32, ok=False)
        self.assertNotEqual(r.returncode, 0)
        self.assertIn(">=1.33.0-0", r.stderr)

    def test_1_33(self):
        objs, notes = self.install(33)
        self.assertEqual(c.one(objs, "PodDisruptionBudget")["apiVersion"], "policy/v1")
        for k in ("MutatingWebhookConfiguration", "ValidatingWebhookConfiguration"):
            self.assertIn("matchConditions", c.one(objs, k)["webhooks"][0])
        self.assertNotIn("matchConditions", notes)
        self.assertNotIn("kubernetes.io/metadata.name", notes)
        self.assertIn(f"rollout status deployment/{c.FULLNAME}", notes)
        self.assertIn("gpu-admission.io/ignore=true", notes)


if __name__ == "__main__":
    unittest.main(verbosity=2)
