#!/usr/bin/env python3
"""run_e2e.py - end-to-end checks of gpu-admission against a real kube-apiserver v1.37.2.

Starts etcd, kube-apiserver and kube-controller-manager (binaries from build-kube.sh) and
`gpu-admission serve` on 127.0.0.1, installs the chart with the real `helm install` (its
webhook configurations point at the server by webhook.url), then runs named scenarios that create objects with kubectl and assert on what the API
server STORED (`kubectl get -o json`), never on what the webhook answered.

Must never: bind anything but 127.0.0.1, leave a process running (every child is stopped by
its recorded PID on exit, and dies with the harness via PR_SET_PDEATHSIG even if the harness
is SIGKILLed), report a scenario as passed that did not run, or touch ~/.kube.

Python 3 standard library only.
"""

import argparse
import base64
import ctypes
import copy
import json
import os
import re
import shutil
import signal
import socket
import ssl
import subprocess
import sys
import time
import urllib.error
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
RELEASE_NS = "gpu-admission"
TOKEN = "e2e-admin-token"
K8S_VERSION = "v1.37.2"
# Beta and alpha parts of 1.37 the suites exercise, on in every component (a gate the
# apiserver knows but the scheduler does not would make the scheduler refuse to start, so the
# list holds only gates all three components register): the Workload API (beta, off by
# default) and DRA's consumable capacity. The API group versions they serve are turned on with
# --runtime-config, and resource.k8s.io/v1beta1 (off by default since 1.34) for the DRA suite's
# v1beta1 -> v1 conversion scenario.
FEATURE_GATES = "GenericWorkload=true,DRAConsumableCapacity=true"
FEATURES = ["--feature-gates=" + FEATURE_GATES]
RUNTIME_CONFIG = "scheduling.k8s.io/v1beta1=true,resource.k8s.io/v1beta1=true"
# Deployments need the deployment and replicaset controllers; namespaces the namespace
# controller; ResourceQuota status the resourcequota controller; pods with resourceClaimTemplates
# the resource-claim controller (it creates their ResourceClaims).
KCM_CONTROLLERS = ("deployment-controller,replicaset-controller,namespace-controller,"
                   "serviceaccount-controller,garbage-collector-controller,"
                   "resourcequota-controller,resourceclaim-controller")

# --------------------------------------------------------------------------------------------
# processes


def _die_with_parent():
    # The children (etcd, apiserver, ...) must not outlive the harness even if ctest SIGKILLs
    # it on timeout: ask the kernel to SIGKILL each child when its parent dies.
    try:
        libc = ctypes.CDLL("libc.so.6", use_errno=True)
        libc.prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except OSError:
        pass


class Procs:
    """Children by name -> Popen; stop() ends them by PID, TERM then KILL."""

    def __init__(self, logdir):
        self.logdir = logdir
        self.procs = {}

    def start(self, name, argv, env=None):
        log = open(os.path.join(self.logdir, name + ".log"), "wb")
        p = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                             env=env, preexec_fn=_die_with_parent, close_fds=True)
        log.close()
        self.procs[name] = p
        note("started %s pid %d" % (name, p.pid))
        return p

    def alive(self, name):
        p = self.procs.get(name)
        return p is not None and p.poll() is None

    def stop(self, name, sig=signal.SIGTERM, grace=10.0):
        p = self.procs.pop(name, None)
        if p is None:
            return
        if p.poll() is None:
            try:
                os.kill(p.pid, sig)
                p.wait(timeout=grace)
            except subprocess.TimeoutExpired:
                os.kill(p.pid, signal.SIGKILL)
                p.wait()
            except ProcessLookupError:
                pass
        note("stopped %s pid %d (exit %s)" % (name, p.pid, p.returncode))

    def stop_all(self):
        # Reverse start order: the webhook and kcm before the apiserver, etcd last.
        for name in reversed(list(self.procs)):
            self.stop(name)

    def log_tail(self, name, lines=25):
        path = os.path.join(self.logdir, name + ".log")
        try:
            with open(path, "rb") as f:
                data = f.read().decode("utf-8", "replace").splitlines()
        except OSError:
            return ""
        return "\n".join(data[-lines:])


def merge_patch(target, patch):
    """RFC 7386 JSON merge patch (the golden runner's podMerge/objectMerge): a copy of target
    with patch applied; null deletes a key."""
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    if not isinstance(target, dict):
        target = {}
    for k, v in patch.items():
        if v is None:
            target.pop(k, None)
        else:
            target[k] = merge_patch(target.get(k), v)
    return target


def note(msg):
    print("e2e: " + msg, flush=True)


def free_port():
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def run(argv, stdin=None, check=True, timeout=120):
    r = subprocess.run(argv, input=stdin, capture_output=True, text=True, timeout=timeout)
    if check and r.returncode != 0:
        raise RuntimeError("%s failed (%d): %s" % (" ".join(argv[:4]), r.returncode,
                                                   r.stderr.strip()[-1500:]))
    return r


class Fatal(RuntimeError):
    """Raised inside a wait_for probe when waiting longer cannot help (the process died)."""


def wait_for(what, fn, timeout, interval=0.5):
    deadline = time.monotonic() + timeout
    last = None
    while time.monotonic() < deadline:
        try:
            v = fn()
            if v:
                return v
        except Fatal:
            raise
        except Exception as e:  # the thing is not up yet
            last = e
        time.sleep(interval)
    raise RuntimeError("timed out after %ds waiting for %s%s" %
                       (timeout, what, (": %s" % last) if last else ""))


# --------------------------------------------------------------------------------------------
# checks


class Checks:
    def __init__(self):
        self.results = []  # (name, ok, detail)

    def expect(self, name, ok, detail=""):
        ok = bool(ok)
        self.results.append((name, ok, detail))
        print("%s %s%s" % ("PASS" if ok else "FAIL", name,
                           "" if ok or not detail else "\n     " + str(detail)[:2000]),
              flush=True)
        return ok

    def failed(self):
        return [r for r in self.results if not r[1]]


def selector_matches(sel, labels):
    """Kubernetes LabelSelector semantics (matchLabels AND matchExpressions)."""
    if sel is None:
        return False
    for k, v in (sel.get("matchLabels") or {}).items():
        if labels.get(k) != v:
            return False
    for e in sel.get("matchExpressions") or []:
        k, op, vals = e.get("key"), e.get("operator"), e.get("values") or []
        if op == "In" and not (k in labels and labels[k] in vals):
            return False
        if op == "NotIn" and (k in labels and labels[k] in vals):
            return False
        if op == "Exists" and k not in labels:
            return False
        if op == "DoesNotExist" and k in labels:
            return False
        if op not in ("In", "NotIn", "Exists", "DoesNotExist"):
            return False
    return True


def dig(obj, *path, default=None):
    for p in path:
        if isinstance(obj, dict) and p in obj:
            obj = obj[p]
        elif isinstance(obj, list) and isinstance(p, int) and -len(obj) <= p < len(obj):
            obj = obj[p]
        else:
            return default
    return obj


# --------------------------------------------------------------------------------------------
# the cluster


class Cluster:
    def __init__(self, args, work, procs):
        self.args = args
        self.work = work
        self.procs = procs
        self.kubeconfig = os.path.join(work, "kubeconfig")
        self.ca_b64 = None
        self.webhook_port = None
        # A suite (--suite) may add policy directories and chart values of its own.
        self.policy_dirs = [os.path.join(args.source_dir, "policies"),
                            os.path.join(HERE, "policies")]
        self.helm_args = []
        self.serve_args = []  # more `gpu-admission serve` flags (the quota suite's lock list)

    # -- kubectl -------------------------------------------------------------------------------
    def kubectl(self, *argv, stdin=None, check=True, timeout=60):
        cmd = [self.args.kubectl, "--kubeconfig", self.kubeconfig,
               "--cache-dir", os.path.join(self.work, "kubectl-cache")] + list(argv)
        return run(cmd, stdin=stdin, check=check, timeout=timeout)

    def get(self, kind, name, ns=None):
        argv = ["get", kind, name, "-o", "json"] + (["-n", ns] if ns else [])
        r = self.kubectl(*argv, check=False)
        if r.returncode != 0:
            return None
        return json.loads(r.stdout)

    def create(self, obj, *extra):
        """kubectl create -f - ; returns the CompletedProcess (check=False)."""
        return self.kubectl("create", "-f", "-", *extra, stdin=json.dumps(obj), check=False)

    def server_version(self):
        """The API server's gitVersion; `kubectl version` is printed into the e2e log once."""
        r = self.kubectl("version", "-o", "json", check=False)
        ver = dig(json.loads(r.stdout or "{}"), "serverVersion", "gitVersion", default="?")
        if not getattr(self, "_version_printed", False):
            self._version_printed = True
            note("kubectl version: client %s, server %s" % (dig(
                json.loads(r.stdout or "{}"), "clientVersion", "gitVersion", default="?"), ver))
        return ver

    def namespace(self, name, labels=None):
        lab = {"kubernetes.io/metadata.name": name}
        lab.update(labels or {})
        obj = {"apiVersion": "v1", "kind": "Namespace",
               "metadata": {"name": name, "labels": lab}}
        self.kubectl("apply", "-f", "-", stdin=json.dumps(obj))

    # -- components ----------------------------------------------------------------------------
    def make_pki(self):
        pki = os.path.join(self.work, "pki")
        os.makedirs(pki)
        self.apiserver_crt = os.path.join(pki, "apiserver.crt")
        self.apiserver_key = os.path.join(pki, "apiserver.key")
        run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1",
             "-nodes", "-keyout", self.apiserver_key, "-out", self.apiserver_crt, "-days", "2",
             "-subj", "/CN=e2e-kube-apiserver",
             "-addext", "subjectAltName=IP:127.0.0.1,DNS:localhost"])
        self.sa_key = os.path.join(pki, "sa.key")
        self.sa_pub = os.path.join(pki, "sa.pub")
        run(["openssl", "genrsa", "-out", self.sa_key, "2048"])
        run(["openssl", "rsa", "-in", self.sa_key, "-pubout", "-out", self.sa_pub])
        self.tokens = os.path.join(pki, "tokens.csv")
        with open(self.tokens, "w") as f:
            f.write('%s,e2e-admin,e2e-admin,"system:masters"\n' % TOKEN)

    def with_port_retry(self, name, start, attempts=3):
        """start() on fresh free ports again when the last try lost a port race."""
        for i in range(attempts):
            try:
                return start()
            except Fatal:
                log = self.procs.log_tail(name, 60)
                self.procs.stop(name)
                if i + 1 == attempts or "address already in use" not in log:
                    raise
                note("%s lost a port race; retrying on other ports" % name)
                os.rename(os.path.join(self.work, "logs", name + ".log"),
                          os.path.join(self.work, "logs", "%s.log.%d" % (name, i)))

    def start_etcd(self):
        shutil.rmtree(os.path.join(self.work, "etcd"), ignore_errors=True)
        client, peer = free_port(), free_port()
        self.etcd_url = "http://127.0.0.1:%d" % client
        self.procs.start("etcd", [
            self.args.etcd, "--name", "e2e", "--data-dir", os.path.join(self.work, "etcd"),
            "--listen-client-urls", self.etcd_url, "--advertise-client-urls", self.etcd_url,
            "--listen-peer-urls", "http://127.0.0.1:%d" % peer,
            "--initial-advertise-peer-urls", "http://127.0.0.1:%d" % peer,
            "--initial-cluster", "e2e=http://127.0.0.1:%d" % peer,
            "--listen-metrics-urls", "http://127.0.0.1:%d" % free_port(),
            "--log-level", "warn", "--logger", "zap"])

        def healthy():
            if not self.procs.alive("etcd"):
                raise Fatal("etcd exited:\n" + self.procs.log_tail("etcd"))
            with urllib.request.urlopen(self.etcd_url + "/health", timeout=2) as r:
                return json.loads(r.read()).get("health") == "true"
        wait_for("etcd /health", healthy, 30)

    def start_apiserver(self):
        port = free_port()
        self.apiserver_url = "https://127.0.0.1:%d" % port
        audit_policy = os.path.join(self.work, "audit-policy.json")
        with open(audit_policy, "w") as f:
            json.dump({"apiVersion": "audit.k8s.io/v1", "kind": "Policy",
                       "omitStages": ["RequestReceived"],
                       "rules": [{"level": "Metadata", "resources": [
                           {"group": "", "resources": ["pods"]}]},
                           {"level": "None"}]}, f)
        self.audit_log = os.path.join(self.work, "audit.log")
        bin_ = os.path.join(self.args.k8s_bin, "kube-apiserver")
        self.procs.start("kube-apiserver", [
            bin_, "--etcd-servers", self.etcd_url,
            "--bind-address", "127.0.0.1", "--advertise-address", "127.0.0.1",
            # 1.37 refuses a loopback advertise address for the `kubernetes` Service's
            # endpoints; nothing here reaches the API server through that Service.
            "--endpoint-reconciler-type", "none",
            "--secure-port", str(port),
            "--cert-dir", os.path.join(self.work, "apiserver-certs"),
            "--tls-cert-file", self.apiserver_crt, "--tls-private-key-file", self.apiserver_key,
            "--service-account-issuer", "https://kubernetes.default.svc.cluster.local",
            "--service-account-key-file", self.sa_pub,
            "--service-account-signing-key-file", self.sa_key,
            "--service-cluster-ip-range", "10.96.0.0/16",
            "--token-auth-file", self.tokens, "--authorization-mode", "RBAC",
            # ServiceAccount admission is off: pods created right after their namespace would
            # otherwise race the default ServiceAccount (no kubelet, no token volume needed).
            "--enable-admission-plugins",
            "NamespaceLifecycle,LimitRanger,DefaultTolerationSeconds,"
            "MutatingAdmissionWebhook,ValidatingAdmissionWebhook,ResourceQuota",
            "--disable-admission-plugins", "ServiceAccount",
            "--audit-policy-file", audit_policy, "--audit-log-path", self.audit_log,
            "--audit-log-format", "json",
            "--runtime-config", RUNTIME_CONFIG,
            "--allow-privileged=true", "--profiling=false", "--v=1"] + FEATURES)
        ctx = ssl.create_default_context(cafile=self.apiserver_crt)

        def ready():
            if not self.procs.alive("kube-apiserver"):
                raise Fatal("kube-apiserver exited:\n" + self.procs.log_tail("kube-apiserver"))
            req = urllib.request.Request(self.apiserver_url + "/readyz",
                                         headers={"Authorization": "Bearer " + TOKEN})
            with urllib.request.urlopen(req, context=ctx, timeout=3) as r:
                return r.status == 200
        t0 = time.monotonic()
        wait_for("kube-apiserver /readyz", ready, 120)
        note("kube-apiserver ready in %.1fs" % (time.monotonic() - t0))
        with open(self.kubeconfig, "w") as f:
            json.dump({
                "apiVersion": "v1", "kind": "Config", "current-context": "e2e",
                "clusters": [{"name": "e2e", "cluster": {
                    "server": self.apiserver_url, "certificate-authority": self.apiserver_crt}}],
                "users": [{"name": "e2e-admin", "user": {"token": TOKEN}}],
                "contexts": [{"name": "e2e", "context": {"cluster": "e2e", "user": "e2e-admin"}}],
            }, f)

    def start_kcm(self):
        bin_ = os.path.join(self.args.k8s_bin, "kube-controller-manager")
        self.procs.start("kube-controller-manager", [
            bin_, "--kubeconfig", self.kubeconfig, "--leader-elect=false",
            "--controllers", KCM_CONTROLLERS, "--secure-port", "0", "--v", "1"] + FEATURES)

        def default_sa():
            if not self.procs.alive("kube-controller-manager"):
                raise Fatal("kube-controller-manager exited:\n" +
                                   self.procs.log_tail("kube-controller-manager"))
            return self.get("serviceaccount", "default", "default") is not None
        wait_for("the default ServiceAccount (kube-controller-manager running)", default_sa, 90, 1)

    def policy_dir(self):
        """Shipped policies/ plus test/e2e/policies/, in one directory for --policies."""
        pdir = os.path.join(self.work, "policies")
        os.makedirs(pdir)
        for d in self.policy_dirs:
            for name in sorted(os.listdir(d)) if os.path.isdir(d) else []:
                if name.endswith((".yaml", ".yml")):
                    if os.path.exists(os.path.join(pdir, name)):
                        raise RuntimeError("policy file name %s used twice" % name)
                    shutil.copy(os.path.join(d, name), os.path.join(pdir, name))
        return pdir

    def start_webhook(self):
        certdir = os.path.join(self.work, "webhook-certs")
        r = run([self.args.gpu_admission, "certs", "--service", "gpu-admission",
                 "--namespace", RELEASE_NS, "--out", certdir,
                 "--san", "localhost", "--san", "127.0.0.1"])
        self.ca_b64 = r.stdout.strip()
        with open(os.path.join(certdir, "ca.crt"), "rb") as f:
            if base64.b64decode(self.ca_b64) != f.read():
                raise RuntimeError("`gpu-admission certs` stdout is not base64 of ca.crt")
        self.webhook_certdir = certdir
        self.webhook_policies = self.policy_dir()
        self._spawn_webhook()

    def _spawn_webhook(self):
        log = os.path.join(self.work, "logs", "gpu-admission.log")
        if os.path.exists(log):
            os.rename(log, log + ".%d" % int(time.time() * 1000))
        self.procs.start("gpu-admission", [
            self.args.gpu_admission, "serve", "--policies", self.webhook_policies,
            "--cert-dir", self.webhook_certdir, "--listen", "127.0.0.1:0",
            "--metrics-listen", "127.0.0.1:0", "--shutdown-grace", "0s"] + self.serve_args)

        def ports():
            if not self.procs.alive("gpu-admission"):
                raise Fatal("gpu-admission serve exited:\n" +
                                   self.procs.log_tail("gpu-admission"))
            with open(log, "rb") as f:
                for line in f.read().decode("utf-8", "replace").splitlines():
                    try:
                        j = json.loads(line)
                    except ValueError:
                        continue
                    if isinstance(j, dict) and "listen_port" in j and "metrics_port" in j:
                        return int(j["listen_port"]), int(j["metrics_port"])
            return None
        self.webhook_port, self.metrics_port = wait_for("gpu-admission listen_port log line",
                                                        ports, 20, 0.2)

        def ready():
            u = "http://127.0.0.1:%d/readyz" % self.metrics_port
            with urllib.request.urlopen(u, timeout=2) as r:
                return r.status == 200
        wait_for("gpu-admission /readyz", ready, 20, 0.2)
        note("gpu-admission serving on 127.0.0.1:%d (metrics %d)" %
             (self.webhook_port, self.metrics_port))

    def register_webhooks(self, extra=()):
        """`helm upgrade --install` of the chart (suite values, then `extra` helm flags) into
        the API server: the webhook configurations under test are the ones helm stored, with
        the chart's own matchConditions, namespace exclusions and failure policies. Returns
        the stored configurations as YAML (also written to webhooks.yaml).

        The chart's server Deployment is installed too but never runs here (no kubelet): a
        nodeSelector no node carries keeps a scheduler from binding its pods to the fake GPU
        nodes of a suite. The API server reaches the server process this harness started by
        webhook.url. The pre-install policy-check hook is a Job, which needs a kubelet to run
        and would hold `helm install` until its deadline, so policyCheck is off here; its
        `check --strict` is run offline by test/chart."""
        argv = [self.args.helm, "upgrade", "--install", "gpu-admission",
                os.path.join(self.args.source_dir, "helm", "gpu-admission"),
                "--kubeconfig", self.kubeconfig, "--namespace", RELEASE_NS, "--create-namespace",
                "--set", "webhook.url=https://127.0.0.1:%d" % self.webhook_port,
                "--set", "certificates.mode=existing",
                "--set", "certificates.existingSecret=gpu-admission-e2e-tls",
                "--set", "certificates.caBundle=" + self.ca_b64,
                "--set", "policyCheck.enabled=false",
                "--set", "replicaCount=1",
                "--set", "podDisruptionBudget.enabled=false",
                "--set-string", "nodeSelector.gpu-admission\\.io/e2e-no-such-node=true",
                ] + self.helm_args + list(extra)
        env = dict(os.environ, HELM_CACHE_HOME=os.path.join(self.work, "helm", "cache"),
                   HELM_CONFIG_HOME=os.path.join(self.work, "helm", "config"),
                   HELM_DATA_HOME=os.path.join(self.work, "helm", "data"))
        r = subprocess.run(argv, capture_output=True, text=True, timeout=180, env=env)
        if r.returncode != 0:
            raise RuntimeError("helm upgrade --install failed (%d): %s%s" %
                               (r.returncode, r.stdout[-1500:], r.stderr[-1500:]))
        self.helm_release_output = r.stdout
        stored = self.kubectl("get", "mutatingwebhookconfigurations,validatingwebhookconfigurations",
                              "-l", "app.kubernetes.io/instance=gpu-admission", "-o", "json").stdout
        items = json.loads(stored)["items"]
        kinds = sorted(i["kind"] for i in items)
        if kinds != ["MutatingWebhookConfiguration", "ValidatingWebhookConfiguration"]:
            raise RuntimeError("helm stored webhook configurations %s, want one of each" % kinds)
        with open(os.path.join(self.work, "webhooks.yaml"), "w") as f:
            f.write(stored)
        return stored


# --------------------------------------------------------------------------------------------
# objects


UNTRUSTED = {"gpu-admission.io/trust": "untrusted"}


def gpu_pod(name, ns, gpus=1, resource="nvidia.com/gpu", labels=None, annotations=None,
            affinity=None, node_selector=None):
    spec = {"containers": [{"name": "main", "image": "registry.k8s.io/pause:3.9",
                            "resources": {"limits": {resource: str(gpus)}}}]}
    if gpus == 0:
        spec["containers"][0]["resources"] = {"limits": {"cpu": "100m"}}
    if affinity:
        spec["affinity"] = affinity
    if node_selector:
        spec["nodeSelector"] = node_selector
    md = {"name": name, "namespace": ns}
    if labels:
        md["labels"] = labels
    if annotations:
        md["annotations"] = annotations
    return {"apiVersion": "v1", "kind": "Pod", "metadata": md, "spec": spec}


TWO_TERMS = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
    "nodeSelectorTerms": [
        {"matchExpressions": [{"key": "topology.kubernetes.io/zone", "operator": "In",
                               "values": ["zone-a"]}]},
        {"matchExpressions": [{"key": "e2e.gpu-admission.io/rack", "operator": "Exists"}]},
    ]}}}


def container_resources(pod):
    c = dig(pod, "spec", "containers", 0, default={})
    return (dig(c, "resources", "limits", default={}) or {},
            dig(c, "resources", "requests", default={}) or {})


def has_toleration(pod, want):
    for t in dig(pod, "spec", "tolerations", default=[]) or []:
        if all(t.get(k) == v for k, v in want.items()) and \
           (t.get("operator") or "Equal") == (want.get("operator") or "Equal"):
            return True
    return False


def expr(key, op, values=None):
    e = {"key": key, "operator": op}
    if values is not None:
        e["values"] = values
    return e


def term_has(term, e):
    return any(x.get("key") == e["key"] and x.get("operator") == e["operator"] and
               sorted(x.get("values") or []) == sorted(e.get("values") or [])
               for x in term.get("matchExpressions") or [])


REV_RE = re.compile(r"^[0-9a-f]{64}$")
MIG_RULE = "e2e-inference-mig"  # test/e2e/policies/15-e2e-rules.yaml

# --------------------------------------------------------------------------------------------
# scenarios (each adds named checks; names are "<scenario>/<check>")


def sc_chart_config(c, ck):
    """The webhook configurations from the chart, as the API server stored them."""
    s = "chart-webhook-config"
    for kind, path in (("mutatingwebhookconfigurations", "/mutate"),
                       ("validatingwebhookconfigurations", "/validate")):
        items = json.loads(c.kubectl("get", kind, "-o", "json").stdout)["items"]
        # The Pod webhooks; the workloads entry (failurePolicy Ignore, no pods) is checked by
        # the workloads suite (e2e_workloads.py), the claim entries (rendered on 1.34+) by the
        # DRA suite (e2e_dra.py).
        hooks = [w for it in items for w in it.get("webhooks") or []
                 if w.get("name") in ("mutate.gpu-admission.io", "validate.gpu-admission.io")]
        k = kind.split("webhook")[0]
        if not ck.expect("%s/%s-present" % (s, k), len(hooks) >= 1, items):
            continue
        want_url = "https://127.0.0.1:%d%s" % (c.webhook_port, path)
        ck.expect("%s/%s-url-and-ca" % (s, k),
                  all(dig(w, "clientConfig", "url") == want_url and
                      dig(w, "clientConfig", "caBundle") == c.ca_b64 for w in hooks),
                  [w.get("clientConfig", {}).get("url") for w in hooks])
        ck.expect("%s/%s-fail-closed-dry-run-safe" % (s, k),
                  all(w.get("failurePolicy") == "Fail" and w.get("timeoutSeconds") == 5 and
                      w.get("sideEffects") in ("None", "NoneOnDryRun") for w in hooks),
                  [(w.get("failurePolicy"), w.get("sideEffects"), w.get("timeoutSeconds"))
                   for w in hooks])
        ck.expect("%s/%s-pods-create" % (s, k),
                  all(any("pods" in (r.get("resources") or []) and
                          ({"CREATE", "*"} & set(r.get("operations") or []))
                          for r in w.get("rules") or []) for w in hooks),
                  [w.get("rules") for w in hooks])
        # helm install stored them (not a kubectl apply of a rendering), with the chart's
        # matchConditions, which this API server evaluates (webhook-down shows it).
        ck.expect("%s/%s-installed-by-helm" % (s, k),
                  all(dig(it, "metadata", "labels", "app.kubernetes.io/managed-by") == "Helm" and
                      dig(it, "metadata", "annotations", "meta.helm.sh/release-name") ==
                      "gpu-admission" for it in items), [it.get("metadata") for it in items])
        ck.expect("%s/%s-matchConditions" % (s, k),
                  all(w.get("matchConditions") for w in hooks),
                  [(w.get("name"), w.get("matchConditions")) for w in hooks])
        ns_labels = {n: {"kubernetes.io/metadata.name": n} for n in
                     ("kube-system", RELEASE_NS, "inference-e2e")}
        ns_labels["ignored"] = {"kubernetes.io/metadata.name": "ignored",
                                "gpu-admission.io/ignore": "true"}
        sees = {n: all(selector_matches(w.get("namespaceSelector") or {}, lab) for w in hooks)
                for n, lab in ns_labels.items()}
        # Namespaces are left out by name only (issue 25): the label exempts from nothing.
        ck.expect("%s/%s-namespace-exclusions" % (s, k),
                  sees == {"kube-system": False, RELEASE_NS: False, "inference-e2e": True,
                           "ignored": True}, sees)


def sc_mig_rewrite(c, ck):
    """inference pod: nvidia.com/gpu -> MIG slice, pool toleration, affinity ANDed into 2 terms."""
    s = "mig-rewrite"
    ns = "inference-e2e"
    c.namespace(ns)
    pod = gpu_pod("mig-1", ns, labels={"app.kubernetes.io/component": "inference"},
                  affinity=TWO_TERMS)
    r = c.create(pod)
    if not ck.expect(s + "/created", r.returncode == 0, r.stderr):
        return
    ck.expect(s + "/warning-shown", "nvidia.com/mig-1g.10gb" in r.stderr and "Warning" in r.stderr,
              "kubectl stderr: " + r.stderr)
    got = c.get("pod", "mig-1", ns)
    lim, req = container_resources(got)
    ck.expect(s + "/limits-rewritten",
              lim.get("nvidia.com/mig-1g.10gb") == "1" and "nvidia.com/gpu" not in lim, lim)
    ck.expect(s + "/requests-rewritten",
              req.get("nvidia.com/mig-1g.10gb") == "1" and "nvidia.com/gpu" not in req, req)
    ck.expect(s + "/pool-toleration-added",
              has_toleration(got, {"key": "nvidia.com/gpu", "operator": "Exists",
                                   "effect": "NoSchedule"}),
              dig(got, "spec", "tolerations"))
    ck.expect(s + "/default-tolerations-kept",
              has_toleration(got, {"key": "node.kubernetes.io/not-ready", "operator": "Exists",
                                   "effect": "NoExecute"}),
              dig(got, "spec", "tolerations"))
    terms = dig(got, "spec", "affinity", "nodeAffinity",
                "requiredDuringSchedulingIgnoredDuringExecution", "nodeSelectorTerms", default=[])
    pool = expr("nvidia.com/gpu.product", "In", ["NVIDIA-A100-SXM4-80GB"])
    ck.expect(s + "/node-affinity-anded-into-both-terms",
              len(terms) == 2 and all(term_has(t, pool) for t in terms) and
              term_has(terms[0], expr("topology.kubernetes.io/zone", "In", ["zone-a"])) and
              term_has(terms[1], expr("e2e.gpu-admission.io/rack", "Exists")), terms)
    ann = dig(got, "metadata", "annotations", default={}) or {}
    ck.expect(s + "/rule-annotation", ann.get("gpu-admission.io/rule") == MIG_RULE, ann)
    ck.expect(s + "/policy-revision-annotation",
              bool(REV_RE.match(ann.get("gpu-admission.io/policy", ""))), ann)
    # migProfile auto: 15Gi (16.1 GB) does not fit 1g.10gb (10 GB); 2g.20gb is the next offered.
    r = c.create(gpu_pod("mig-2", ns, labels={"app.kubernetes.io/component": "inference"},
                         annotations={"gpu-admission.io/gpu-memory": "15Gi"}))
    got = c.get("pod", "mig-2", ns) if r.returncode == 0 else None
    lim, req = container_resources(got or {})
    ck.expect(s + "/auto-sized-from-gpu-memory",
              lim.get("nvidia.com/mig-2g.20gb") == "1" and req.get("nvidia.com/mig-2g.20gb") == "1"
              and len([k for k in lim if k.startswith("nvidia.com/")]) == 1, r.stderr or lim)


def sc_audit_annotations(c, ck):
    """The API server's audit log carries the webhook's auditAnnotations (rule, pool)."""
    s = "audit-annotations"
    ns = "inference-e2e"
    c.namespace(ns)
    r = c.create(gpu_pod("audit-1", ns, labels={"app.kubernetes.io/component": "inference"}))
    if not ck.expect(s + "/created", r.returncode == 0, r.stderr):
        return

    def find():
        with open(c.audit_log) as f:
            for line in f:
                ev = json.loads(line)
                if dig(ev, "objectRef", "name") == "audit-1" and ev.get("verb") == "create" \
                        and ev.get("stage") == "ResponseComplete":
                    return ev
        return None
    try:
        ev = wait_for("the audit event of pod audit-1", find, 15)
    except RuntimeError as e:
        ck.expect(s + "/audit-event", False, e)
        return
    ann = ev.get("annotations") or {}
    # Keys are "<webhook name>/<key>": both webhooks report rule and pool.
    for hook in ("mutate.gpu-admission.io", "validate.gpu-admission.io"):
        ck.expect("%s/%s-rule-and-pool" % (s, hook.split(".")[0]),
                  ann.get(hook + "/rule") == MIG_RULE and ann.get(hook + "/pool") == "a100-mig",
                  ann)
    rec = json.loads(ann.get("mutation.webhook.admission.k8s.io/round_0_index_0") or "{}")
    ck.expect(s + "/apiserver-recorded-mutation",
              rec.get("webhook") == "mutate.gpu-admission.io" and rec.get("mutated") is True, ann)


def sc_isolation(c, ck):
    """Trusted tenant on the time-sliced pool: isolation labels + cross-namespace anti-affinity."""
    s = "isolation"
    ns = "ml-platform"
    c.namespace(ns)
    # Tenants live in different namespaces, so the anti-affinity term needs
    # namespaceSelector: {} (all namespaces). That field exists from Kubernetes 1.21 (alpha) /
    # 1.22 (beta, on); older API servers drop it, the isolation cannot be expressed, and the
    # validating webhook must refuse the pod rather than admit it unisolated. Establish which
    # case this API server is, from a pod outside the webhooks' reach.
    c.namespace("ignored-e2e", {"gpu-admission.io/ignore": "true"})
    probe = gpu_pod("nssel-probe", "ignored-e2e", gpus=0)
    probe["spec"]["affinity"] = {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
        {"labelSelector": {"matchLabels": {"x": "y"}}, "namespaceSelector": {},
         "topologyKey": "kubernetes.io/hostname"}]}}
    c.create(probe)
    stored = c.get("pod", "nssel-probe", "ignored-e2e")
    term = dig(stored, "spec", "affinity", "podAntiAffinity",
               "requiredDuringSchedulingIgnoredDuringExecution", 0, default={})
    drops = "namespaceSelector" not in term
    ver = json.loads(c.kubectl("version", "-o", "json", check=False).stdout or "{}")
    minor = int(re.sub(r"\D", "", dig(ver, "serverVersion", "minor", default="0")) or 0)
    ck.expect(s + "/namespaceSelector-support-as-documented", drops == (minor < 22),
              "server 1.%d %s namespaceSelector" % (minor, "drops" if drops else "keeps"))
    r = c.create(gpu_pod("ts-1", ns, labels={"app": "notebook"}))
    if drops:
        ck.expect(s + "/mutating-webhook-added-isolation",
                  "gpu-admission.io/pool=t4-shared" in r.stderr and
                  "gpu-admission.io/tenant=platform" in r.stderr and
                  "anti-affinity" in r.stderr and "nvidia.com/gpu.shared" in r.stderr, r.stderr)
        ck.expect(s + "/refused-when-isolation-dropped", r.returncode != 0 and
                  'admission webhook "validate.gpu-admission.io" denied the request' in r.stderr
                  and "Kubernetes before 1.22 drops that field" in r.stderr,
                  r.stdout + r.stderr)
        ck.expect(s + "/not-stored", c.get("pod", "ts-1", ns) is None)
        return
    if not ck.expect(s + "/created", r.returncode == 0, r.stderr):
        return
    got = c.get("pod", "ts-1", ns)
    lim, req = container_resources(got)
    ck.expect(s + "/resource-renamed",
              lim.get("nvidia.com/gpu.shared") == "1" and req.get("nvidia.com/gpu.shared") == "1"
              and "nvidia.com/gpu" not in lim and "nvidia.com/gpu" not in req, (lim, req))
    labels = dig(got, "metadata", "labels", default={}) or {}
    ck.expect(s + "/pool-and-tenant-labels",
              labels.get("gpu-admission.io/pool") == "t4-shared" and
              labels.get("gpu-admission.io/tenant") == "platform" and labels.get("app") == "notebook",
              labels)
    anti = dig(got, "spec", "affinity", "podAntiAffinity",
               "requiredDuringSchedulingIgnoredDuringExecution", default=[]) or []
    # Judge the selector by what it selects, not by its spelling.
    other = {"gpu-admission.io/pool": "t4-shared", "gpu-admission.io/tenant": "research"}
    same = {"gpu-admission.io/pool": "t4-shared", "gpu-admission.io/tenant": "platform"}
    elsewhere = {"gpu-admission.io/pool": "a100-mig", "gpu-admission.io/tenant": "research"}
    ok = [t for t in anti if t.get("topologyKey") == "kubernetes.io/hostname" and
          selector_matches(t.get("labelSelector"), other) and
          not selector_matches(t.get("labelSelector"), same) and
          not selector_matches(t.get("labelSelector"), elsewhere)]
    ck.expect(s + "/anti-affinity-other-tenants", len(ok) == 1, anti)
    ann = dig(got, "metadata", "annotations", default={}) or {}
    ck.expect(s + "/rule-annotation", ann.get("gpu-admission.io/rule") == "e2e-platform-shared",
              ann)
    ck.expect(s + "/shared-toleration",
              has_toleration(got, {"key": "gpu-admission.io/shared", "operator": "Exists",
                                   "effect": "NoSchedule"}), dig(got, "spec", "tolerations"))
    terms = dig(got, "spec", "affinity", "nodeAffinity",
                "requiredDuringSchedulingIgnoredDuringExecution", "nodeSelectorTerms", default=[])
    ck.expect(s + "/node-affinity-one-new-term",
              len(terms) == 1 and
              term_has(terms[0], expr("nvidia.com/gpu.sharing-strategy", "In", ["time-slicing"])) and
              term_has(terms[0], expr("gpu-admission.io/pool", "In", ["t4-shared"])), terms)


def sc_untrusted_denied(c, ck):
    """Untrusted pod on the time-sliced pool: refused with the webhook's message. notebooks
    belongs to the trusted platform tenant; the pod lowers its own trust with the label."""
    s = "untrusted-timesliced-denied"
    ns = "notebooks"
    c.namespace(ns)
    r = c.create(gpu_pod("nb-1", ns, labels=UNTRUSTED))
    ck.expect(s + "/refused", r.returncode != 0, r.stdout + r.stderr)
    # the advice names a MIG profile only when the policy offers one to the pod (issue 20):
    # the shipped set places no pod of notebooks in a MIG pool, and the message says so
    ck.expect(s + "/webhook-message",
              re.search(r'admission webhook "[^"]+" denied the request', r.stderr) and
              "untrusted workloads may not share a time-sliced GPU" in r.stderr and
              "no rule places pods of namespace notebooks in a MIG pool" in r.stderr, r.stderr)
    ck.expect(s + "/not-stored", c.get("pod", "nb-1", ns) is None)


def sc_topology(c, ck):
    """4-GPU pod of a gang of one (gpu-admission.io/gang-size: 1, so 4 GPUs fit the 8-GPU
    island): NVLink island size affinity + pod affinity to its group on the island. The same
    pod with no gang size gets its group affinity on the widest domain of the shipped pool's
    levels (issue 21: a guess never makes a schedulable pod unschedulable)."""
    s = "topology-group"
    ns = "prod-train"
    c.namespace(ns)
    # The pool sets runtimeClassName: nvidia; the API server's RuntimeClass admission refuses a
    # pod naming a RuntimeClass that does not exist, as a real cluster with the GPU operator has.
    c.kubectl("apply", "-f", "-", stdin=json.dumps({
        "apiVersion": "node.k8s.io/v1", "kind": "RuntimeClass",
        "metadata": {"name": "nvidia"}, "handler": "nvidia"}))
    r = c.create(gpu_pod("train-0", ns, gpus=4, labels={"gpu-admission.io/group": "job-a"},
                         annotations={"gpu-admission.io/gang-size": "1"}))
    if not ck.expect(s + "/created", r.returncode == 0, r.stderr):
        return
    got = c.get("pod", "train-0", ns)
    lim, req = container_resources(got)
    ck.expect(s + "/gpus-unchanged", lim.get("nvidia.com/gpu") == "4" and
              req.get("nvidia.com/gpu") == "4", (lim, req))
    aff = dig(got, "spec", "affinity", "podAffinity",
              "requiredDuringSchedulingIgnoredDuringExecution", default=[]) or []
    ok = [t for t in aff if t.get("topologyKey") == "nvidia.com/gpu.clique" and
          selector_matches(t.get("labelSelector"), {"gpu-admission.io/group": "job-a"}) and
          not selector_matches(t.get("labelSelector"), {"gpu-admission.io/group": "job-b"})]
    ck.expect(s + "/pod-affinity-same-group", len(ok) == 1, aff)
    terms = dig(got, "spec", "affinity", "nodeAffinity",
                "requiredDuringSchedulingIgnoredDuringExecution", "nodeSelectorTerms", default=[])
    ck.expect(s + "/island-size-and-pool-affinity",
              len(terms) == 1 and
              term_has(terms[0], expr("gpu-admission.io/nvlink-island-size", "Gt", ["3"])) and
              term_has(terms[0], expr("nvidia.com/gpu.product", "In", ["NVIDIA-H100-80GB-HBM3"])),
              terms)
    ann = dig(got, "metadata", "annotations", default={}) or {}
    ck.expect(s + "/annotations", ann.get("gpu-admission.io/topology") == "nvlink-island" and
              ann.get("gpu-admission.io/rule") == "training", ann)
    ck.expect(s + "/runtime-class", dig(got, "spec", "runtimeClassName") == "nvidia",
              dig(got, "spec", "runtimeClassName"))
    r = c.create(gpu_pod("train-1", ns, gpus=4, labels={"gpu-admission.io/group": "job-c"}))
    got = c.get("pod", "train-1", ns) if r.returncode == 0 else {}
    aff = dig(got, "spec", "affinity", "podAffinity",
              "requiredDuringSchedulingIgnoredDuringExecution", default=[]) or []
    ck.expect(s + "/unknown-gang-size-widest-domain",
              [t.get("topologyKey") for t in aff] == ["cloud.provider.com/topology-block"] and
              dig(got, "metadata", "annotations", "gpu-admission.io/topology") ==
              "cloud.provider.com/topology-block", (r.stderr, aff))


def sc_deployment(c, ck):
    """A Deployment's pods (made by the ReplicaSet controller) are mutated too."""
    s = "deployment"
    ns = "inference-deploy"
    c.namespace(ns)
    tpl = gpu_pod("x", ns, labels={"app": "infer", "app.kubernetes.io/component": "inference"})
    dep = {"apiVersion": "apps/v1", "kind": "Deployment",
           "metadata": {"name": "infer", "namespace": ns},
           "spec": {"replicas": 2, "selector": {"matchLabels": {"app": "infer"}},
                    "template": {"metadata": {"labels": tpl["metadata"]["labels"]},
                                 "spec": tpl["spec"]}}}
    r = c.create(dep)
    if not ck.expect(s + "/created", r.returncode == 0, r.stderr):
        return

    def pods():
        out = c.kubectl("get", "pods", "-n", ns, "-l", "app=infer", "-o", "json").stdout
        items = json.loads(out)["items"]
        return items if len(items) == 2 else None
    try:
        items = wait_for("2 pods of Deployment infer", pods, 60, 1)
    except RuntimeError as e:
        ck.expect(s + "/pods-created", False, e)
        return
    ck.expect(s + "/pods-created", True)
    ck.expect(s + "/pods-mutated",
              all(container_resources(p)[0].get("nvidia.com/mig-1g.10gb") == "1" and
                  container_resources(p)[1].get("nvidia.com/mig-1g.10gb") == "1" and
                  dig(p, "metadata", "annotations", "gpu-admission.io/rule") == MIG_RULE
                  for p in items),
              [(dig(p, "metadata", "name"), container_resources(p)) for p in items])
    ck.expect(s + "/owned-by-replicaset",
              all(dig(p, "metadata", "ownerReferences", 0, "kind") == "ReplicaSet" for p in items))
    # The template itself is not a pod: the webhooks must leave the Deployment alone.
    d = c.get("deployment", "infer", ns)
    tl = dig(d, "spec", "template", "spec", "containers", 0, "resources", "limits", default={})
    ck.expect(s + "/template-untouched", tl.get("nvidia.com/gpu") == "1", tl)


def sc_dry_run(c, ck):
    """--dry-run=server shows the mutation and stores nothing."""
    s = "dry-run-server"
    ns = "inference-e2e"
    c.namespace(ns)
    r = c.create(gpu_pod("dry-1", ns, labels={"app.kubernetes.io/component": "inference"}),
                 "--dry-run=server", "-o", "json")
    if not ck.expect(s + "/accepted", r.returncode == 0, r.stderr):
        return
    shown = json.loads(r.stdout)
    lim, req = container_resources(shown)
    ck.expect(s + "/mutation-shown", lim.get("nvidia.com/mig-1g.10gb") == "1" and
              req.get("nvidia.com/mig-1g.10gb") == "1", (lim, req))
    ck.expect(s + "/not-stored", c.get("pod", "dry-1", ns) is None)
    r = c.create(gpu_pod("dry-2", "notebooks", labels=UNTRUSTED), "--dry-run=server")
    ck.expect(s + "/denial-also-in-dry-run", r.returncode != 0 and
              "untrusted workloads may not share a time-sliced GPU" in r.stderr, r.stderr)


def sc_excluded_namespace(c, ck):
    """The label gpu-admission.io/ignore=true exempts from nothing (issue 25): an untrusted
    pod on a time-sliced card is still refused in a namespace carrying it."""
    s = "excluded-namespace"
    ns = "notebooks"
    c.namespace(ns, {"gpu-admission.io/ignore": "true"})
    try:
        r = c.create(gpu_pod("ign-1", ns, labels=UNTRUSTED))
        ck.expect(s + "/label-no-bypass", r.returncode != 0 and
                  "untrusted workloads may not share a time-sliced GPU" in r.stderr, r.stderr)
    finally:
        c.kubectl("label", "namespace", ns, "gpu-admission.io/ignore-")


def sc_update_tenant_claim(c, ck):
    """UPDATE goes through the validating webhook: a forged tenant label is refused."""
    s = "update-tenant-claim"
    ns = "inference-e2e"
    c.namespace(ns)
    r = c.create(gpu_pod("upd-1", ns, labels={"app.kubernetes.io/component": "inference"}))
    if not ck.expect(s + "/created", r.returncode == 0, r.stderr):
        return
    r = c.kubectl("label", "pod", "upd-1", "-n", ns, "gpu-admission.io/tenant=platform",
                  check=False)
    ck.expect(s + "/refused", r.returncode != 0 and
              'admission webhook "validate.gpu-admission.io" denied the request' in r.stderr and
              # the shipped tenancy puts inference-* in tenant research
              "pod claims tenant platform but namespace %s belongs to tenant research" % ns
              in r.stderr, r.stdout + r.stderr)
    labels = dig(c.get("pod", "upd-1", ns), "metadata", "labels", default={}) or {}
    ck.expect(s + "/label-not-stored", "gpu-admission.io/tenant" not in labels, labels)
    r = c.kubectl("label", "pod", "upd-1", "-n", ns, "team=a", check=False)
    labels = dig(c.get("pod", "upd-1", ns), "metadata", "labels", default={}) or {}
    ck.expect(s + "/harmless-label-allowed", r.returncode == 0 and labels.get("team") == "a",
              r.stderr or labels)


def deployment_of(pod, name):
    """A Deployment of one replica whose template is pod's metadata and spec."""
    md = dict(pod["metadata"].get("labels") or {}, app=name)
    return {"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": name, "namespace": pod["metadata"]["namespace"]},
            "spec": {"replicas": 1, "selector": {"matchLabels": {"app": name}},
                     "template": {"metadata": {"labels": md}, "spec": pod["spec"]}}}


def sc_webhook_down(c, ck):
    """failurePolicy Fail: webhook killed -> GPU pods refused; excluded namespaces still work.
    Workloads (issue 30 item 5): the workloads entry is switched to failurePolicy Fail first
    (the chart's default Ignore would admit anything while down and prove nothing), so its
    matchConditions alone decide: a Deployment asking no GPU is created while the webhook is
    down (never sent) and its pod too (the Pod entries' conditions), a GPU Deployment is refused
    by the workloads entry ("failed calling webhook") and not stored."""
    s = "webhook-down"
    for ns in ("inference-e2e",):
        c.namespace(ns)
    c.namespace(RELEASE_NS)  # left out by name (issue 25: no label exempts any more)
    vwc = c.get("validatingwebhookconfigurations", "gpu-admission") or {}
    idx = [i for i, w in enumerate(vwc.get("webhooks") or [])
           if w.get("name") == "workloads.gpu-admission.io"]
    if ck.expect(s + "/workloads-entry-found", len(idx) == 1 and
                 vwc["webhooks"][idx[0]].get("matchConditions"), [
                     w.get("name") for w in vwc.get("webhooks") or []]):
        c.kubectl("patch", "validatingwebhookconfigurations", "gpu-admission", "--type=json",
                  "-p", json.dumps([{"op": "replace", "value": "Fail",
                                     "path": "/webhooks/%d/failurePolicy" % idx[0]}]))
    c.procs.stop("gpu-admission", signal.SIGKILL)
    # Nothing may answer on the port any more (a refused connection, not a slow one).
    try:
        socket.create_connection(("127.0.0.1", c.webhook_port), timeout=2).close()
        ck.expect(s + "/webhook-gone", False, "port %d still accepts" % c.webhook_port)
    except OSError:
        ck.expect(s + "/webhook-gone", True)
    r = c.create(gpu_pod("down-1", "inference-e2e",
                         labels={"app.kubernetes.io/component": "inference"}))
    ck.expect(s + "/gpu-pod-refused", r.returncode != 0 and
              "failed calling webhook" in r.stderr, r.stdout + r.stderr)
    ck.expect(s + "/gpu-pod-not-stored", c.get("pod", "down-1", "inference-e2e") is None)
    # The chart's matchConditions, evaluated by the API server: a pod asking no GPU in an
    # ordinary namespace is never sent, so it is admitted while no replica answers.
    r = c.create(gpu_pod("down-cpu", "inference-e2e", gpus=0))
    ck.expect(s + "/cpu-pod-admitted-by-matchConditions", r.returncode == 0, r.stderr)
    r = c.create(gpu_pod("down-plain", RELEASE_NS, gpus=0))
    ck.expect(s + "/release-namespace-pod-admitted", r.returncode == 0, r.stderr)
    r = c.create(gpu_pod("down-sys", "kube-system", gpus=0))
    ck.expect(s + "/kube-system-pod-admitted", r.returncode == 0, r.stderr)
    gpu_dep = deployment_of(gpu_pod("x", "inference-e2e"), "down-gpu-dep")
    down = 'failed calling webhook "workloads.gpu-admission.io"'

    def fail_policy_used():
        # the API server picks configuration changes up asynchronously
        r = c.kubectl("create", "--dry-run=server", "-f", "-", stdin=json.dumps(gpu_dep),
                      check=False)
        return down in r.stderr
    try:
        wait_for("the workloads entry's failurePolicy Fail", fail_policy_used, 30, 0.5)
    except RuntimeError:
        pass  # the check below says what the API server answered
    r = c.create(gpu_dep)
    ck.expect(s + "/gpu-deployment-refused", r.returncode != 0 and down in r.stderr,
              r.stderr or "admitted")
    ck.expect(s + "/gpu-deployment-not-stored",
              c.get("deployment", "down-gpu-dep", "inference-e2e") is None)
    r = c.create(deployment_of(gpu_pod("x", "inference-e2e", gpus=0), "down-cpu-dep"))
    ck.expect(s + "/cpu-deployment-admitted-by-matchConditions", r.returncode == 0 and
              c.get("deployment", "down-cpu-dep", "inference-e2e") is not None, r.stderr)

    def cpu_pod_made():
        out = c.kubectl("get", "pods", "-n", "inference-e2e", "-l", "app=down-cpu-dep", "-o",
                        "json", check=False).stdout
        return out and json.loads(out).get("items")
    try:
        wait_for("the ReplicaSet controller's pod of down-cpu-dep", cpu_pod_made, 30, 0.5)
        made = True
    except RuntimeError:
        made = False
    ck.expect(s + "/cpu-deployment-pod-created", made)


def sc_policyreport(c, ck):
    """`gpu-admission audit`'s golden PolicyReports accepted by the real API server with the
    wgpolicyk8s.io CRDs installed (issue 31): kubectl apply --dry-run=server, then for real."""
    s = "policyreport"
    crds = os.path.join(c.args.source_dir, "test", "fixtures", "wg-policy-prototypes")
    golden = os.path.join(c.args.source_dir, "test", "tools", "fixtures", "audit-golden",
                          "policyreports.yaml")
    c.kubectl("apply", "-f", crds)
    c.kubectl("wait", "--for", "condition=established", "--timeout=60s",
              "crd/policyreports.wgpolicyk8s.io", "crd/clusterpolicyreports.wgpolicyk8s.io")
    # kubectl reads the YAML (the harness has no YAML parser): the client-side dry run lists
    # the objects, whose namespaces must exist before a namespaced report can.
    out = c.kubectl("create", "--dry-run=client", "-o", "json", "-f", golden).stdout
    items, pos, dec = [], 0, json.JSONDecoder()
    while out[pos:].strip():  # one JSON object per document, back to back
        obj, end = dec.raw_decode(out, pos + len(out[pos:]) - len(out[pos:].lstrip()))
        items.append(obj)
        pos = end
    for ns in sorted({dig(i, "metadata", "namespace") for i in items} - {None}):
        c.namespace(ns)
    kinds = sorted({i.get("kind") for i in items})
    ck.expect(s + "/both-kinds", kinds == ["ClusterPolicyReport", "PolicyReport"], kinds)
    r = c.kubectl("apply", "--dry-run=server", "-f", golden, check=False)
    ck.expect(s + "/dry-run-server-accepted", r.returncode == 0 and
              r.stdout.count("(server dry run)") == len(items), r.stdout + r.stderr)
    r = c.kubectl("apply", "-f", golden, check=False)
    ck.expect(s + "/applied", r.returncode == 0, r.stderr)
    stored = json.loads(c.kubectl("get", "policyreports", "-A", "-o", "json").stdout)["items"]
    want = sum(len(i.get("results") or []) for i in items if i.get("kind") == "PolicyReport")
    got = sum(len(i.get("results") or []) for i in stored)
    ck.expect(s + "/results-stored", got == want and want > 0, "%d of %d" % (got, want))


# Order matters only for webhook-down, which kills the webhook and so runs last.
SCENARIOS = [
    ("chart-webhook-config", sc_chart_config),
    ("mig-rewrite", sc_mig_rewrite),
    ("audit-annotations", sc_audit_annotations),
    ("isolation", sc_isolation),
    ("untrusted-timesliced-denied", sc_untrusted_denied),
    ("topology-group", sc_topology),
    ("deployment", sc_deployment),
    ("dry-run-server", sc_dry_run),
    ("excluded-namespace", sc_excluded_namespace),
    ("update-tenant-claim", sc_update_tenant_claim),
    ("policyreport", sc_policyreport),
    ("webhook-down", sc_webhook_down),
]


# --------------------------------------------------------------------------------------------
# What every e2e driver (this one, e2e_scheduler.py) does around its scenarios.


def cluster_args(ap):
    """The flags every driver takes: the binaries, the sources and the scratch directory."""
    ap.add_argument("--k8s-bin", required=True, help="dir with the Kubernetes and etcd binaries "
                    "built by build-kube.sh")
    ap.add_argument("--gpu-admission", required=True, help="the gpu-admission binary")
    ap.add_argument("--source-dir", required=True, help="repository root (policies/, helm/)")
    ap.add_argument("--work", required=True, help="scratch dir (wiped first; logs stay on failure)")
    ap.add_argument("--kubectl", default=None, help="kubectl (default: K8S_BIN/kubectl, the "
                    "server's own version)")
    ap.add_argument("--helm", default=shutil.which("helm"))
    ap.add_argument("--etcd", default=None, help="etcd server (default: K8S_BIN/etcd, the v3.6 "
                    "build-kube.sh makes; Debian's 3.4.23 is too old for 1.35+ watches)")


def tools_missing(args):
    """True (and says which) when kubectl, helm or etcd is not executable."""
    if args.etcd is None:
        args.etcd = os.path.join(args.k8s_bin, "etcd")
    if args.kubectl is None:
        args.kubectl = os.path.join(args.k8s_bin, "kubectl")
    for tool in ("kubectl", "helm", "etcd"):
        p = getattr(args, tool)
        if not p or not os.access(p, os.X_OK):
            print("e2e: %s not found (run scripts/setup.sh test)" % tool)
            return True
    return False


def start_run(work):
    """A wiped scratch dir with logs/, its Procs and a fresh Checks. SIGTERM and SIGINT become
    SystemExit so the driver's finally block still stops every process it started."""
    work = os.path.abspath(work)
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(os.path.join(work, "logs"))

    def on_signal(signum, _frame):
        raise SystemExit(128 + signum)
    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    return work, Procs(os.path.join(work, "logs")), Checks()


def setup_failed(ck, procs, step, e):
    """A setup step failed: recorded as that check, every process's log tail printed."""
    ck.expect(step, False, e)
    for name in list(procs.procs):
        print("--- %s log tail ---\n%s" % (name, procs.log_tail(name)))
    return 1


def end_run(procs, ck, work, t0):
    """Stops every process and prints the summary; the scratch dir goes when every check passed,
    else only etcd's data goes (big and useless for diagnosis) and the logs stay."""
    procs.stop_all()
    n_fail = len(ck.failed())
    print("e2e: %d checks passed, %d failed (%.1fs)" %
          (len(ck.results) - n_fail, n_fail, time.monotonic() - t0), flush=True)
    if n_fail == 0:
        shutil.rmtree(work, ignore_errors=True)
    else:
        shutil.rmtree(os.path.join(work, "etcd"), ignore_errors=True)
        note("logs kept in " + os.path.join(work, "logs"))


# --------------------------------------------------------------------------------------------


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    cluster_args(ap)
    ap.add_argument("--only", action="append", default=[], metavar="SCENARIO",
                    help="run only this scenario (repeatable); see --list")
    ap.add_argument("--list", action="store_true", help="list scenarios and exit")
    ap.add_argument("--suite",
                    choices=("pods", "workloads", "quota", "dra", "today", "vap", "map",
                             "modes"),
                    default="pods",
                    help="pods: these scenarios; workloads: e2e_workloads.py's (issue 16); "
                    "quota: e2e_quota.py's (issue 25); dra: e2e_dra.py's (issue 24); "
                    "today: e2e_today.py's (issue 29 item 5; starts kube-scheduler); "
                    "vap: e2e_vap.py's (issue 32: export vap, no webhook); "
                    "map: e2e_map.py's (issue 32: export map, no webhook); "
                    "modes: e2e_modes.py's (issue 32 item 3: the chart's enforcement modes)")
    ap.add_argument("--no-webhook", action="store_true",
                    help="bring up etcd + apiserver + kcm only (harness development)")
    args = ap.parse_args()
    suite = None
    scenarios = SCENARIOS
    if args.suite == "workloads":
        import e2e_workloads as suite  # this directory is on sys.path (the script's own)
        scenarios = suite.SCENARIOS
    elif args.suite == "quota":
        import e2e_quota as suite  # issue 25: ResourceQuota after the rewrite, the label lock
        scenarios = suite.SCENARIOS
    elif args.suite == "dra":
        import e2e_dra as suite  # issue 24: DRA claims through resource.k8s.io stand-in CRDs
        scenarios = suite.SCENARIOS
    elif args.suite == "today":
        import e2e_today as suite  # issue 29 item 5: 1.37's pod features, real scheduler
        scenarios = suite.SCENARIOS
    elif args.suite == "vap":
        import e2e_vap as suite  # issue 32: the exported ValidatingAdmissionPolicy alone
        scenarios = suite.SCENARIOS
    elif args.suite == "map":
        import e2e_map as suite  # issue 32: the MutatingAdmissionPolicy with no webhook
        scenarios = suite.SCENARIOS
    elif args.suite == "modes":
        import e2e_modes as suite  # issue 32 item 3: VAP/MAP from the chart, webhook down
        scenarios = suite.SCENARIOS
    if args.list:
        for name, fn in scenarios:
            print("%-30s %s" % (name, fn.__doc__))
        return 0
    unknown = set(args.only) - {n for n, _ in scenarios}
    if unknown:
        print("e2e: unknown scenario(s): %s (see --list)" % ", ".join(sorted(unknown)))
        return 2
    if tools_missing(args):
        return 1

    work, procs, ck = start_run(args.work)
    t0 = time.monotonic()
    c = Cluster(args, work, procs)
    step = "setup/pki"
    try:
        try:
            c.make_pki()
            step = "setup/etcd"
            c.with_port_retry("etcd", c.start_etcd)
            step = "setup/kube-apiserver"
            c.with_port_retry("kube-apiserver", c.start_apiserver)
            step = "setup/kube-controller-manager"
            c.start_kcm()
            ck.expect("setup/cluster-up", True)
            ck.expect("setup/server-version-" + K8S_VERSION, c.server_version() == K8S_VERSION,
                      c.server_version())
            note("etcd + kube-apiserver + kube-controller-manager up in %.1fs" %
                 (time.monotonic() - t0))
            if suite:
                suite.configure(c)
            if getattr(suite, "NO_WEBHOOK", False):
                # the suite proves what the API server refuses by itself: no webhook at all
                step = "setup/" + args.suite
                suite.setup(c)
            elif not args.no_webhook:
                step = "setup/gpu-admission-serve"
                c.start_webhook()
                step = "setup/webhooks-from-chart"
                c.register_webhooks()
                ck.expect("setup/webhook-registered", True)
                if suite:
                    step = "setup/" + args.suite
                    suite.setup(c)
        except Exception as e:
            return setup_failed(ck, procs, step, e)
        if args.no_webhook:
            return 0
        for name, fn in scenarios:
            if args.only and name not in args.only:
                continue
            t = time.monotonic()
            try:
                fn(c, ck)
            except Exception as e:
                ck.expect(name + "/ran", False, "%s: %s" % (type(e).__name__, e))
            note("%s took %.1fs" % (name, time.monotonic() - t))
        if ck.failed() and procs.alive("gpu-admission"):
            print("--- gpu-admission log tail ---\n" + procs.log_tail("gpu-admission"))
    finally:
        end_run(procs, ck, work, t0)
    return 1 if ck.failed() else 0


if __name__ == "__main__":
    sys.exit(main())
