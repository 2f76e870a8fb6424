"""srvlib.py - shared plumbing for the server integration tests (python3 stdlib only).

What it is for: starting a real `gpu-admission serve` on 127.0.0.1 with ephemeral ports and
real TLS (certificates made by the real `gpu-admission certs`), talking HTTP/1.1 keep-alive
over TLS to it, raw sockets for malformed traffic, a keep-alive load generator, and reading
/metrics.

What it must never do: bind anything but 127.0.0.1, leave a server running after the test
(each Server is killed by its context manager, at exit, and by PR_SET_PDEATHSIG if the test
itself is killed), or decide a verdict itself (tests assert; this only measures).
"""

import atexit
import hashlib
import http.client
import json
import os
import re
import shutil
import signal
import socket
import ssl
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "common"))
from atomic_dir import AtomicDir  # noqa: E402,F401  (re-exported: tests use S.AtomicDir)

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.abspath(os.path.join(HERE, "..", ".."))

_procs = []
_servers = []


def _dump_servers():
    for srv in _servers:
        print("---- server %s stderr (last 30 lines):" % " ".join(srv.cmd[1:3]), flush=True)
        lines = srv.stderr_text().splitlines()
        asan = [i for i, l in enumerate(lines) if "ERROR: AddressSanitizer" in l or "runtime error" in l]
        print("\n".join(lines[asan[0]:asan[0] + 60] if asan else lines[-30:]), flush=True)


def _excepthook(t, v, tb):
    sys.__excepthook__(t, v, tb)
    _dump_servers()
    _kill_all()


sys.excepthook = _excepthook


def _kill_all():
    for p in list(_procs):
        if p.poll() is None:
            try:
                p.kill()
                p.wait(timeout=5)
            except Exception:
                pass


atexit.register(_kill_all)


def _on_signal(signum, frame):
    _kill_all()
    sys.exit(128 + signum)


for _s in (signal.SIGTERM, signal.SIGINT):
    signal.signal(_s, _on_signal)


def _die_with_parent():
    try:
        import ctypes
        ctypes.CDLL(None).prctl(1, signal.SIGKILL, 0, 0, 0)  # PR_SET_PDEATHSIG
    except Exception:
        pass


# ------------------------------------------------------------------ tiny test framework

class Checks:
    """Records failures and keeps going, so one run shows every broken expectation."""

    def __init__(self, name):
        self.name = name
        self.total = 0
        self.failed = 0

    def check(self, cond, what):
        self.total += 1
        if not cond:
            self.failed += 1
            print("FAIL: %s" % what, flush=True)
        return cond

    def eq(self, got, want, what):
        return self.check(got == want, "%s: got %r, want %r" % (what, got, want))

    def done(self):
        print("%s: %d checks, %d failed" % (self.name, self.total, self.failed), flush=True)
        if self.failed:
            _dump_servers()
        _kill_all()
        sys.exit(1 if self.failed or self.total == 0 else 0)


def args():
    """--bin PATH and --src DIR from argv (CMake passes both)."""
    a = {"bin": os.environ.get("GPA_BIN"), "src": REPO}
    argv = sys.argv[1:]
    for i, v in enumerate(argv):
        if v == "--bin":
            a["bin"] = argv[i + 1]
        if v == "--src":
            a["src"] = argv[i + 1]
    if not a["bin"]:
        for d in ("build", "build-server", "build-test"):
            p = os.path.join(REPO, d, "gpu-admission")
            if os.path.exists(p):
                a["bin"] = p
                break
    if not a["bin"]:
        raise SystemExit("pass --bin PATH to gpu-admission")
    return a


def run(binary, argv, stdin=None, timeout=60, env=None):
    p = subprocess.run([binary] + list(argv), input=stdin, stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, timeout=timeout, env=env)
    return p.returncode, p.stdout, p.stderr


def make_certs(binary, out_dir, extra=()):
    rc, out, err = run(binary, ["certs", "--service", "gpu-admission", "--namespace",
                                "gpu-admission", "--out", out_dir, "--san", "localhost",
                                "--san", "127.0.0.1"] + list(extra))
    if rc != 0:
        raise RuntimeError("certs failed: %s" % err.decode()[-2000:])
    return out_dir


def fingerprint_of_pem(path):
    pem = open(path).read()
    m = re.search(r"-----BEGIN CERTIFICATE-----.*?-----END CERTIFICATE-----", pem, re.S)
    return hashlib.sha256(ssl.PEM_cert_to_DER_cert(m.group(0))).hexdigest()


def tmpdir(prefix):
    d = tempfile.mkdtemp(prefix=prefix)
    atexit.register(shutil.rmtree, d, True)
    return d


def copy_policies(src_repo, dst):
    os.makedirs(dst, exist_ok=True)
    src = os.path.join(src_repo, "policies")
    for n in os.listdir(src):
        if n.endswith(".yaml") or n.endswith(".yml"):
            shutil.copy(os.path.join(src, n), os.path.join(dst, n))
    return dst


# ------------------------------------------------------------------ the server

class Server:
    """A real `gpu-admission serve` on 127.0.0.1:0 (both listeners)."""

    def __init__(self, binary, policies, cert_dir=None, extra=(), env=None):
        self.binary = binary
        self.work = tmpdir("gpa-it-")
        self.stderr_path = os.path.join(self.work, "stderr.log")
        self.cmd = [binary, "serve", "--policies", policies, "--listen", "127.0.0.1:0",
                    "--metrics-listen", "127.0.0.1:0"]
        if cert_dir:
            self.cmd += ["--cert-dir", cert_dir]
        self.cmd += list(extra)
        self.env = env
        self.proc = None
        self.port = self.metrics_port = None
        self.startup = None
        _servers.append(self)

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.kill()
        return False

    def start(self, timeout=20):
        self._err = open(self.stderr_path, "wb")
        self.proc = subprocess.Popen(self.cmd, stdin=subprocess.DEVNULL,
                                     stdout=subprocess.DEVNULL, stderr=self._err,
                                     env=self.env, preexec_fn=_die_with_parent)
        _procs.append(self.proc)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for obj in self.logs():
                if "listen_port" in obj:
                    self.startup = obj
                    self.port = int(obj["listen_port"])
                    self.metrics_port = int(obj["metrics_port"])
                    return self
            if self.proc.poll() is not None:
                raise RuntimeError("server exited rc=%s:\n%s" % (self.proc.returncode,
                                                                 self.stderr_text()))
            time.sleep(0.02)
        raise RuntimeError("server never logged its ports:\n" + self.stderr_text())

    def stderr_text(self):
        try:
            return open(self.stderr_path, "rb").read().decode("utf-8", "replace")
        except OSError:
            return ""

    def logs(self):
        """Every stderr line parsed as JSON; a line that is not JSON raises (the log format
        is part of the contract)."""
        out = []
        text = self.stderr_text()
        if not text.endswith("\n"):  # a line still being written
            text = text[: text.rfind("\n") + 1]
        for line in text.splitlines():
            if line.strip():
                out.append(json.loads(line))
        return out

    def alive(self):
        return self.proc is not None and self.proc.poll() is None

    def signal(self, sig):
        if self.alive():
            os.kill(self.proc.pid, sig)

    def wait_exit(self, timeout):
        try:
            return self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            return None

    def kill(self):
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(timeout=10)
        try:
            self._err.close()
        except Exception:
            pass

    def http_get(self, path, timeout=5):
        c = http.client.HTTPConnection("127.0.0.1", self.metrics_port, timeout=timeout)
        try:
            c.request("GET", path)
            r = c.getresponse()
            return r.status, r.read().decode("utf-8", "replace")
        finally:
            c.close()

    def metrics(self):
        return self.http_get("/metrics")[1]

    def settle_logs(self, quiet=0.1, timeout=1.0):
        """Gives the server time to write its queued log lines (it writes them in batches,
        ~50 ms after they are logged): at least 0.15 s, then until stderr has not grown for
        `quiet` seconds (at most `timeout`: under load it never stops growing)."""
        time.sleep(0.15)
        deadline = time.monotonic() + timeout
        last, since = -1, time.monotonic()
        while time.monotonic() < deadline:
            try:
                size = os.path.getsize(self.stderr_path)
            except OSError:
                size = -1
            if size != last:
                last, since = size, time.monotonic()
            elif time.monotonic() - since >= quiet:
                return
            time.sleep(0.02)

    def wait_log(self, pred, timeout=10):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for obj in self.logs():
                if pred(obj):
                    return obj
            time.sleep(0.05)
        return None


def metric(text, name, labels=None):
    """Value of one sample: name plus an exact label dict (None = no labels)."""
    for line in text.splitlines():
        if line.startswith("#"):
            continue
        m = re.match(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{([^}]*)\})?\s+(\S+)$', line)
        if not m or m.group(1) != name:
            continue
        got = dict(re.findall(r'(\w+)="((?:[^"\\]|\\.)*)"', m.group(3) or ""))
        if got == (labels or {}):
            return float(m.group(4))
    return None


# ------------------------------------------------------------------ clients

def client_ctx(cafile, cert=None, key=None):
    ctx = ssl.create_default_context(cafile=cafile)
    if cert:
        ctx.load_cert_chain(cert, key)
    return ctx


class Conn:
    """One keep-alive HTTPS connection (reconnects when the server closes it)."""

    def __init__(self, port, ctx, timeout=10):
        self.port, self.ctx, self.timeout = port, ctx, timeout
        self.c = None
        self.fingerprint = None

    def connect(self):
        self.c = http.client.HTTPSConnection("localhost", self.port, timeout=self.timeout,
                                             context=self.ctx)
        self.c.connect()
        der = self.c.sock.getpeercert(binary_form=True)
        self.fingerprint = hashlib.sha256(der).hexdigest()

    def request(self, method, path, body=None, headers=None):
        """(status, headers(lower-case), body bytes)."""
        if self.c is None:
            self.connect()
        h = {"Content-Type": "application/json"}
        h.update(headers or {})
        self.c.request(method, path, body=body, headers=h)
        r = self.c.getresponse()
        data = r.read()
        hdrs = {k.lower(): v for k, v in r.getheaders()}
        if r.will_close:
            self.close()
        return r.status, hdrs, data

    def close(self):
        if self.c is not None:
            self.c.close()
        self.c = None


def post(port, ctx, path, body, headers=None, timeout=10):
    c = Conn(port, ctx, timeout)
    try:
        return c.request("POST", path, body, headers)
    finally:
        c.close()


def post_refused(port, ctx, path, body, headers=None):
    """POST a body the server is expected to refuse on its headers (413 on Content-Length).
    The server answers and closes while the client may still be sending, so the kernel may
    reset the connection before the answer is read: returns the status, or "reset"."""
    try:
        return post(port, ctx, path, body, headers)[0]
    except (ConnectionError, ssl.SSLError, OSError):
        return "reset"


def raw_tls(port, ctx, payload, timeout=5, read_all=True):
    """Sends raw bytes over TLS; returns what came back before close or timeout."""
    s = socket.create_connection(("127.0.0.1", port), timeout=timeout)
    t = ctx.wrap_socket(s, server_hostname="localhost")
    try:
        if payload:
            t.sendall(payload)
        data = b""
        while read_all:
            try:
                chunk = t.recv(65536)
            except (socket.timeout, ssl.SSLError, ConnectionError):
                break
            if not chunk:
                break
            data += chunk
        return data
    finally:
        t.close()


def status_of(raw):
    m = re.match(rb"HTTP/1\.[01] (\d{3})", raw)
    return int(m.group(1)) if m else None


class Load:
    """Threads doing keep-alive POSTs as fast as they can, recording every failure.

    A failure is anything but a complete 200 response to a request that was written to an
    established TLS connection. Connecting (TCP + handshake) is retried and counted apart,
    because a listener that has closed refuses connections by design."""

    def __init__(self, port, ctx, body, path="/mutate", threads=4, check=None):
        self.port, self.ctx, self.body, self.path = port, ctx, body, path
        self.n = threads
        self.check = check  # fn(bytes) -> str|None (error text)
        self.stop_ev = threading.Event()
        self.lock = threading.Lock()
        self.ok = 0
        self.failures = []
        self.connect_errors = 0
        self.responses = {}  # sample of bodies keyed by a caller-chosen extractor
        self.threads = []

    def _worker(self):
        conn = None
        while not self.stop_ev.is_set():
            if conn is None:
                conn = Conn(self.port, self.ctx, timeout=10)
                try:
                    conn.connect()
                except Exception:
                    conn = None
                    with self.lock:
                        self.connect_errors += 1
                    time.sleep(0.01)
                    continue
            try:
                st, _, data = conn.request("POST", self.path, self.body)
            except Exception as e:
                with self.lock:
                    self.failures.append("request error: %r" % e)
                conn.close()
                conn = None
                continue
            err = None
            if st != 200:
                err = "status %d: %r" % (st, data[:200])
            elif self.check:
                err = self.check(data)
            with self.lock:
                if err:
                    self.failures.append(err)
                else:
                    self.ok += 1
            if conn.c is None:
                conn = None
        if conn:
            conn.close()

    def start(self):
        for _ in range(self.n):
            t = threading.Thread(target=self._worker, daemon=True)
            t.start()
            self.threads.append(t)
        return self

    def stop(self):
        self.stop_ev.set()
        for t in self.threads:
            t.join(timeout=15)

    def count(self):
        with self.lock:
            return self.ok


def review(uid="11111111-2222-3333-4444-555555555555", namespace="ml-platform", gpus=4,
           api="admission.k8s.io/v1", name="trainer-0", operation="CREATE"):
    """An AdmissionReview for a Pod asking `gpus` nvidia.com/gpu, as the API server sends."""
    container = {"name": "main", "image": "registry.example/train:1"}
    if gpus:
        q = str(gpus)
        container["resources"] = {"limits": {"nvidia.com/gpu": q},
                                  "requests": {"nvidia.com/gpu": q}}
    pod = {"apiVersion": "v1", "kind": "Pod",
           "metadata": {"name": name, "namespace": namespace},
           "spec": {"containers": [container]}}
    return {"apiVersion": api, "kind": "AdmissionReview",
            "request": {"uid": uid,
                        "kind": {"group": "", "version": "v1", "kind": "Pod"},
                        "resource": {"group": "", "version": "v1", "resource": "pods"},
                        "requestKind": {"group": "", "version": "v1", "kind": "Pod"},
                        "requestResource": {"group": "", "version": "v1", "resource": "pods"},
                        "name": name, "namespace": namespace, "operation": operation,
                        "userInfo": {"username": "system:serviceaccount:ml:trainer"},
                        "object": pod, "oldObject": None, "dryRun": False,
                        "options": {"apiVersion": "meta.k8s.io/v1", "kind": "CreateOptions"}}}


def review_bytes(**kw):
    return json.dumps(review(**kw)).encode()
