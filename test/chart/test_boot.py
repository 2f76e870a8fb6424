"""test_boot.py - the chart and the server agree: render the chart (generate mode), lay the
ConfigMap and Secret out on disk the way the kubelet mounts them (a `..data` symlink to a
timestamped directory, files as symlinks into it), run the real `gpu-admission` with the
Deployment's container args verbatim (only the /etc/gpu-admission paths and the two listen
addresses substituted), then: the probes answer on the metrics port, the TLS port presents a
certificate the webhook caBundle verifies for the Service's DNS name, /validate answers an
AdmissionReview, a ConfigMap update (atomic ..data swap) and a certificate rotation are picked
up without a restart, and SIGTERM turns /readyz 503 before the process exits within
terminationGracePeriodSeconds. With server.clientCA, only a client holding a certificate from
that CA (the API server) gets an answer."""
import base64
import http.client
import json
import os
import re
import shutil
import signal
import socket
import ssl
import subprocess
import tempfile
import threading
import time
import unittest

import chartlib as c

BINARY = os.environ.get("GPA_BINARY", "")
SVC_DNS = f"{c.FULLNAME}.{c.RELEASE_NS}.svc"


class KubeletVolume:
    """A directory updated like the kubelet's atomic writer updates ConfigMap/Secret mounts."""

    def __init__(self, path, files):
        self.path = path
        os.makedirs(path)
        self.gen = 0
        self.update(files)

    def update(self, files):
        self.gen += 1
        ts = os.path.join(self.path, f"..2026_11_30_00_00_00.{self.gen:04d}")
        os.makedirs(ts)
        for name, data in files.items():
            with open(os.path.join(ts, name), "wb") as f:
                f.write(data if isinstance(data, bytes) else data.encode())
        tmp = os.path.join(self.path, "..data_tmp")
        os.symlink(os.path.basename(ts), tmp)
        data = os.path.join(self.path, "..data")
        old = os.path.realpath(data) if os.path.lexists(data) else None
        os.rename(tmp, os.path.join(self.path, "..data"))  # atomic swap, as the kubelet does
        for name in files:
            link = os.path.join(self.path, name)
            if not os.path.lexists(link):
                os.symlink(os.path.join("..data", name), link)
        for name in os.listdir(self.path):  # files gone from the new set disappear
            if not name.startswith("..") and name not in files:
                os.unlink(os.path.join(self.path, name))
        if old and old != os.path.realpath(ts):
            shutil.rmtree(old)


def secret_files(objs):
    sec = c.one(objs, "Secret")
    return {k: base64.b64decode(v) for k, v in sec["data"].items()}


def review(uid, ns="default", gpus="1"):
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": ns},
           "spec": {"containers": [{"name": "c", "image": "x", "resources": {
               "limits": {"nvidia.com/gpu": gpus}, "requests": {"nvidia.com/gpu": gpus}}}]}}
    return {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
            "request": {"uid": uid, "kind": {"group": "", "version": "v1", "kind": "Pod"},
                        "resource": {"group": "", "version": "v1", "resource": "pods"},
                        "namespace": ns, "operation": "CREATE", "object": pod}}


class Boot(unittest.TestCase):
    def setUp(self):
        self.assertTrue(BINARY and os.path.exists(BINARY), f"built binary missing: {BINARY!r}")
        self.tmp = tempfile.mkdtemp(prefix="gpa-chart-boot-")
        self.proc = None

    def tearDown(self):
        if self.proc:
            if self.proc.poll() is None:
                self.proc.kill()
            self.proc.wait()
            self.proc.stdout.close()
        shutil.rmtree(self.tmp, ignore_errors=True)

    def start(self, objs):
        dep = c.one(objs, "Deployment")
        spec = dep["spec"]["template"]["spec"]
        ctr = spec["containers"][0]
        mounts = {m["name"]: m["mountPath"] for m in ctr["volumeMounts"]}
        # Every volume from the object the chart rendered for it, laid out like the kubelet.
        cms = {x["metadata"]["name"]: x["data"] for x in c.by_kind(objs, "ConfigMap")}
        secs = {x["metadata"]["name"]: {k: base64.b64decode(v) for k, v in x["data"].items()}
                for x in c.by_kind(objs, "Secret")}
        self.vols, paths = {}, {}
        for v in spec["volumes"]:
            files = cms[v["configMap"]["name"]] if "configMap" in v else \
                secs[v["secret"]["secretName"]]
            self.vols[v["name"]] = KubeletVolume(os.path.join(self.tmp, v["name"]), files)
            paths[mounts[v["name"]]] = self.vols[v["name"]].path
        self.pol, self.tls = self.vols["policies"], self.vols["tls"]
        args = []
        for a in ctr["args"]:
            if a.startswith("--listen="):
                a = "--listen=127.0.0.1:0"
            elif a.startswith("--metrics-listen="):
                a = "--metrics-listen=127.0.0.1:0"
            else:
                for k, v in paths.items():
                    a = a.replace(k, v)
            args.append(a)
        self.assertEqual([a for a in args if "/etc/gpu-admission" in a], [])
        self.proc = subprocess.Popen([BINARY, *args], stdout=subprocess.PIPE,
                                     stderr=subprocess.STDOUT, text=True)
        self.log = []
        started = threading.Event()

        def pump():
            for line in self.proc.stdout:
                self.log.append(line)
                if '"listen_port"' in line:
                    started.set()
        threading.Thread(target=pump, daemon=True).start()
        if not started.wait(15):
            self.fail("server did not start:\n" + "".join(self.log))
        line = [ln for ln in self.log if '"listen_port"' in ln][0]
        j = json.loads(line)
        self.port, self.mport = int(j["listen_port"]), int(j["metrics_port"])
        return dep, spec

    def http_get(self, path):
        conn = http.client.HTTPConnection("127.0.0.1", self.mport, timeout=5)
        try:
            conn.request("GET", path)
            r = conn.getresponse()
            return r.status, r.read()
        finally:
            conn.close()

    def wait_for(self, pred, what, timeout=20):
        end = time.time() + timeout
        while time.time() < end:
            if pred():
                return
            time.sleep(0.1)
        self.fail(f"timed out waiting for {what}; server log:\n" + "".join(self.log[-20:]))

    def tls_context(self, ca_bundle_b64):
        ctx = ssl.create_default_context(cadata=base64.b64decode(ca_bundle_b64).decode())
        ctx.check_hostname = True
        return ctx

    def post(self, ctx, path, body):
        # The API server dials the Service's ClusterIP and verifies the Service DNS name.
        raw = socket.create_connection(("127.0.0.1", self.port), timeout=5)
        s = ctx.wrap_socket(raw, server_hostname=SVC_DNS)
        try:
            data = json.dumps(body).encode()
            s.sendall(f"POST {path} HTTP/1.1\r\nHost: {SVC_DNS}\r\nContent-Type: application/json"
                      f"\r\nContent-Length: {len(data)}\r\nConnection: close\r\n\r\n".encode()
                      + data)
            buf = b""
            while True:
                chunk = s.recv(65536)
                if not chunk:
                    break
                buf += chunk
        finally:
            s.close()
        head, _, payload = buf.partition(b"\r\n\r\n")
        status = int(head.split()[1])
        if b"chunked" in head.lower():
            out, rest = b"", payload
            while rest:
                n, _, rest = rest.partition(b"\r\n")
                n = int(n, 16)
                if n == 0:
                    break
                out, rest = out + rest[:n], rest[n + 2:]
            payload = out
        return status, json.loads(payload) if payload else None

    def test_rendered_deployment_runs_the_server(self):
        objs = c.render()
        dep, spec = self.start(objs)
        self.wait_for(lambda: self.http_get("/readyz")[0] == 200, "/readyz 200")
        self.assertEqual(self.http_get("/healthz")[0], 200)
        self.assertEqual(self.http_get("/metrics")[0], 200)
        mw = c.one(objs, "MutatingWebhookConfiguration")["webhooks"][0]
        ctx = self.tls_context(mw["clientConfig"]["caBundle"])
        st, body = self.post(ctx, "/validate", review("u-1", gpus="0"))
        self.assertEqual(st, 200)
        self.assertEqual(body["response"]["uid"], "u-1")
        self.assertIs(body["response"]["allowed"], True)
        # the shipped set it serves refuses a GPU pod no rule matches (unmatched: deny)
        st, body = self.post(ctx, "/validate", review("u-3"))
        self.assertEqual(st, 200)
        self.assertIs(body["response"]["allowed"], False)
        self.assertIn("no GPU policy rule matches", body["response"]["status"]["message"])
        st, body = self.post(ctx, "/mutate", review("u-2"))
        self.assertEqual((st, body["response"]["uid"]), (200, "u-2"))

        # A certificate the caBundle does not trust is refused, so the check above is real.
        other = c.one(c.render(), "MutatingWebhookConfiguration")["webhooks"][0]
        with self.assertRaises(ssl.SSLError):
            self.post(self.tls_context(other["clientConfig"]["caBundle"]), "/validate",
                      review("u-3"))

        # ConfigMap update, kubelet style: the new set applies without a restart.
        deny_all = {"deny.yaml": "apiVersion: gpu-admission.io/v1alpha1\nkind: GPUPolicy\n"
                                 "metadata: {name: t}\nspec: {unmatched: deny}\n"}
        self.pol.update(deny_all)

        def denied():
            _, b = self.post(ctx, "/validate", review("u-4"))
            return b["response"]["allowed"] is False
        self.wait_for(denied, "policy hot reload")

        # Secret update (rotation to another CA): new handshakes present the new pair.
        rotated = c.render()
        self.tls.update(secret_files(rotated))
        new_ctx = self.tls_context(
            c.one(rotated, "MutatingWebhookConfiguration")["webhooks"][0]["clientConfig"]["caBundle"])

        def rotated_ok():
            try:
                return self.post(new_ctx, "/validate", review("u-5"))[0] == 200
            except (ssl.SSLError, OSError):
                return False
        self.wait_for(rotated_ok, "certificate hot reload")
        self.assertIsNone(self.proc.poll(), "the server must not restart to reload")

        # SIGTERM: not ready at once, gone within the pod's grace period.
        grace = spec["terminationGracePeriodSeconds"]
        t0 = time.time()
        self.proc.send_signal(signal.SIGTERM)
        self.wait_for(lambda: self.http_get("/readyz")[0] == 503, "/readyz 503 after SIGTERM", 3)
        try:
            self.proc.wait(timeout=grace)
        except subprocess.TimeoutExpired:
            self.fail(f"server still running {grace}s after SIGTERM")
        self.assertEqual(self.proc.returncode, 0, "".join(self.log[-10:]))
        shut = [a for a in spec["containers"][0]["args"] if a.startswith("--shutdown-grace=")][0]
        self.assertGreaterEqual(time.time() - t0, int(re.sub(r"\D", "", shut)) - 0.5,
                                "the server must keep answering for the shutdown grace")

    def test_client_ca_only_admits_the_api_server(self):
        d = self.tmp
        def ossl(*a):
            subprocess.run(["openssl", *a], check=True, capture_output=True)
        ossl("req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
             "-keyout", f"{d}/cca.key", "-out", f"{d}/cca.crt", "-subj", "/CN=client-ca",
             "-days", "2")
        ossl("req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
             "-keyout", f"{d}/apiserver.key", "-out", f"{d}/apiserver.csr",
             "-subj", "/CN=kube-apiserver")
        ossl("x509", "-req", "-in", f"{d}/apiserver.csr", "-CA", f"{d}/cca.crt",
             "-CAkey", f"{d}/cca.key", "-CAcreateserial", "-out", f"{d}/apiserver.crt",
             "-days", "2")
        with open(f"{d}/cca.crt") as f:
            objs = c.render({"server": {"clientCA": f.read()}})
        self.start(objs)
        self.wait_for(lambda: self.http_get("/readyz")[0] == 200, "/readyz 200")
        bundle = c.one(objs, "ValidatingWebhookConfiguration")["webhooks"][0]["clientConfig"]["caBundle"]
        ctx = self.tls_context(bundle)
        ctx.load_cert_chain(f"{d}/apiserver.crt", f"{d}/apiserver.key")
        st, body = self.post(ctx, "/validate", review("c-1"))
        self.assertEqual((st, body["response"]["uid"]), (200, "c-1"))
        try:
            st, _ = self.post(self.tls_context(bundle), "/validate", review("c-2"))
        except (ssl.SSLError, OSError):
            st = "handshake refused"
        self.assertIn(st, (403, "handshake refused"), "no client certificate must not pass")


if __name__ == "__main__":
    unittest.main(verbosity=2)
