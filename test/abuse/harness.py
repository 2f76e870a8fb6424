"""harness.py - shared plumbing for the abuse, soak and valgrind tests (python3 stdlib only).

What it is for: starting a real `gpu-admission serve` on 127.0.0.1 with an ephemeral port,
making certificates with the real `gpu-admission certs`, speaking TLS + HTTP/1.1 keep-alive
to it, building AdmissionReviews, applying RFC 6902 patches, publishing directories the way
Kubernetes publishes a ConfigMap/Secret volume (the `..data` symlink swap), and reading a
process' RSS and fd count.

What it must never do: bind anything but 127.0.0.1, leave a server running after the test
(every Server is killed by its context manager, atexit and on SIGTERM/SIGINT), loop without
a bound on count and time, or decide a test's verdict itself (tests assert; this only
measures and reports).
"""

import atexit
import base64
import copy
import http.client
import json
import os
import re
import resource
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
from atomic_dir import AtomicDir  # noqa: E402,F401  (re-exported: tests use H.AtomicDir)

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.abspath(os.path.join(HERE, "..", ".."))

_live_procs = []
_live_lock = threading.Lock()


def _kill_all():
    with _live_lock:
        procs = list(_live_procs)
    for p in procs:
        if p.poll() is None:
            try:
                p.kill()
                p.wait(timeout=5)
            except Exception:
                pass


atexit.register(_kill_all)


def _die_with_parent():
    """In the child before exec: SIGKILL it if the test process dies (even by SIGKILL from a
    ctest timeout), so no server outlives its test."""
    try:
        import ctypes
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, signal.SIGKILL, 0, 0, 0)  # PR_SET_PDEATHSIG
    except Exception:
        pass


def _on_signal(signum, frame):
    _kill_all()
    sys.exit(128 + signum)


for _s in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
    try:
        signal.signal(_s, _on_signal)
    except (ValueError, OSError):
        pass


def log(*a):
    print(*a, flush=True)


def finish(problems, work, result_line=None, fail_prefix="FAIL ", log_failures=True, keep=False):
    """The end every abuse/soak/valgrind script shares: its result line, one line per problem,
    the work directory removed when all passed (kept for a look otherwise); the exit code."""
    if result_line is not None:
        log(result_line)
    if log_failures:
        for p in problems:
            log(fail_prefix + p)
    if not problems and not keep:
        shutil.rmtree(work, ignore_errors=True)
    return 1 if problems else 0


def find_bin(explicit=None):
    """The gpu-admission binary: --bin, else $GPA_BIN (never a guess: a stale build dir
    would silently test old code)."""
    for cand in [explicit, os.environ.get("GPA_BIN")]:
        if cand:
            return os.path.abspath(cand)
    raise SystemExit("gpu-admission binary not found: pass --bin or set GPA_BIN")


def sanitized_build():
    """True when the tests run against an ASan/UBSan build (ctest sets GPA_SANITIZED=1)."""
    return os.environ.get("GPA_SANITIZED") == "1"


def raise_nofile(want):
    """Raises RLIMIT_NOFILE (soft) as far as the hard limit allows; returns the new soft limit.
    Children (the server) inherit it."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    target = want if hard == resource.RLIM_INFINITY else min(want, hard)
    if target > soft:
        resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
    return resource.getrlimit(resource.RLIMIT_NOFILE)[0]


# ---------------------------------------------------------------- CLI


def run_cli(binary, args, stdin=None, timeout=60, wrapper=None):
    """Runs the CLI; returns (rc, stdout bytes, stderr bytes, seconds). rc < 0 = signal.
    A timeout is reported as rc None (the caller treats it as a hang)."""
    cmd = list(wrapper or []) + [binary] + list(args)
    t0 = time.monotonic()
    try:
        p = subprocess.run(cmd, input=stdin, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           timeout=timeout)
    except subprocess.TimeoutExpired as e:
        return None, e.stdout or b"", e.stderr or b"", time.monotonic() - t0
    return p.returncode, p.stdout, p.stderr, time.monotonic() - t0


def policy_revision(binary, policy_dir):
    """The 64-hex revision `gpu-admission check DIR` reports for a set (raises if it fails)."""
    rc, out, err, _ = run_cli(binary, ["check", policy_dir], timeout=60)
    if rc != 0:
        raise RuntimeError("check %s failed rc=%s: %s" % (policy_dir, rc, (out + err)[-2000:]))
    text = out.decode("utf-8", "replace")
    lines = [l for l in text.splitlines() if "revision" in l.lower()]
    for l in lines + text.splitlines():
        m = re.search(r"\b([0-9a-f]{64})\b", l)
        if m:
            return m.group(1)
    raise RuntimeError("no revision in `check` output:\n" + text[-2000:])


def make_certs(binary, out_dir, service="gpu-admission", namespace="gpu-system"):
    """A CA and a serving pair for 127.0.0.1/localhost made by the real `gpu-admission certs`."""
    os.makedirs(out_dir, exist_ok=True)
    rc, out, err, _ = run_cli(binary, ["certs", "--service", service, "--namespace", namespace,
                                       "--out", out_dir, "--san", "127.0.0.1", "--san",
                                       "localhost"], timeout=60)
    if rc != 0:
        raise RuntimeError("certs failed rc=%s: %s" % (rc, (out + err)[-2000:]))
    for f in ("ca.crt", "tls.crt", "tls.key"):
        if not os.path.exists(os.path.join(out_dir, f)):
            raise RuntimeError("certs did not write " + f)
    return out_dir


def openssl(*args, cwd=None):
    p = subprocess.run(["openssl"] + list(args), stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, cwd=cwd, timeout=60)
    if p.returncode != 0:
        raise RuntimeError("openssl %s: %s" % (" ".join(args), p.stderr.decode()[-1000:]))
    return p.stdout


def make_client_ca_and_cert(out_dir, name):
    """A CA of our own and a client certificate signed by it (for --client-ca tests):
    returns (ca_path, cert_path, key_path). Made with the openssl CLI, not the code under test."""
    os.makedirs(out_dir, exist_ok=True)
    ca_key = os.path.join(out_dir, name + "-ca.key")
    ca_crt = os.path.join(out_dir, name + "-ca.crt")
    key = os.path.join(out_dir, name + "-client.key")
    csr = os.path.join(out_dir, name + "-client.csr")
    crt = os.path.join(out_dir, name + "-client.crt")
    ext = os.path.join(out_dir, name + "-ext.cnf")
    openssl("req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
            "-keyout", ca_key, "-out", ca_crt, "-days", "2", "-subj", "/CN=" + name + "-ca",
            "-addext", "basicConstraints=critical,CA:TRUE",
            "-addext", "keyUsage=critical,keyCertSign,cRLSign")
    openssl("req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
            "-keyout", key, "-out", csr, "-subj", "/CN=" + name + "-apiserver")
    with open(ext, "w") as f:
        f.write("basicConstraints=CA:FALSE\nkeyUsage=critical,digitalSignature\n"
                "extendedKeyUsage=clientAuth\n")
    openssl("x509", "-req", "-in", csr, "-CA", ca_crt, "-CAkey", ca_key, "-CAcreateserial",
            "-out", crt, "-days", "2", "-extfile", ext)
    return ca_crt, crt, key


def cert_fingerprint_pem(path):
    with open(path) as f:
        pem = f.read()
    m = re.search(r"-----BEGIN CERTIFICATE-----.*?-----END CERTIFICATE-----", pem, re.S)
    der = ssl.PEM_cert_to_DER_cert(m.group(0))
    import hashlib
    return hashlib.sha256(der).hexdigest()


# ---------------------------------------------------------------- ConfigMap-style directory


def read_set(src_dir):
    """{name: bytes} of the *.yaml/*.yml files directly in src_dir."""
    out = {}
    for n in sorted(os.listdir(src_dir)):
        p = os.path.join(src_dir, n)
        if not n.startswith(".") and (n.endswith(".yaml") or n.endswith(".yml")) \
                and os.path.isfile(p):
            with open(p, "rb") as f:
                out[n] = f.read()
    return out


# ---------------------------------------------------------------- process stats


def proc_rss_kb(pid):
    try:
        with open("/proc/%d/status" % pid) as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
    except OSError:
        return None
    return None


def proc_fd_count(pid):
    try:
        return len(os.listdir("/proc/%d/fd" % pid))
    except OSError:
        return None


# ---------------------------------------------------------------- the server


class Server:
    """A real `gpu-admission serve` on 127.0.0.1:0. Use as a context manager."""

    def __init__(self, binary, policies, cert_dir=None, cert=None, key=None, extra=None,
                 wrapper=None, workdir=None, ready_timeout=30, log_level=None):
        self.binary = binary
        self.workdir = workdir or tempfile.mkdtemp(prefix="gpa-srv-")
        os.makedirs(self.workdir, exist_ok=True)
        self.stderr_path = os.path.join(self.workdir, "server.stderr")
        args = ["serve", "--policies", policies, "--listen", "127.0.0.1:0",
                "--metrics-listen", "127.0.0.1:0"]
        if cert_dir:
            args += ["--cert-dir", cert_dir]
        else:
            args += ["--tls-cert", cert, "--tls-key", key]
        if log_level:
            args += ["--log-level", log_level]
        extra = list(extra or [])
        if "--shutdown-grace" not in extra:
            extra += ["--shutdown-grace", "1s"]  # tests need no 5 s drain window
        args += extra
        self.cmd = list(wrapper or []) + [binary] + args
        self.ready_timeout = ready_timeout
        self.proc = None
        self.port = None
        self.metrics_port = None
        self.startup = None

    def __enter__(self):
        self.start()
        return self

    def __exit__(self, *exc):
        self.kill()
        return False

    def start(self):
        self._err = open(self.stderr_path, "wb")
        self.proc = subprocess.Popen(self.cmd, stdin=subprocess.DEVNULL,
                                     stdout=subprocess.DEVNULL, stderr=self._err,
                                     start_new_session=True, preexec_fn=_die_with_parent)
        with _live_lock:
            _live_procs.append(self.proc)
        deadline = time.monotonic() + self.ready_timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError("server exited rc=%s at startup:\n%s"
                                   % (self.proc.returncode, self.stderr_tail()))
            for line in self.stderr_lines():
                if '"listen_port"' in line:
                    try:
                        obj = json.loads(line)
                    except ValueError:
                        continue
                    self.startup = obj
                    self.port = int(obj["listen_port"])
                    if obj.get("metrics_port") is not None:
                        self.metrics_port = int(obj["metrics_port"])
                    break
            if self.port:
                break
            time.sleep(0.05)
        if not self.port:
            self.kill()
            raise RuntimeError("server never logged listen_port:\n" + self.stderr_tail())
        return self

    @property
    def pid(self):
        """The server's own pid (under valgrind the wrapper execs, so it is the same)."""
        return self.proc.pid

    def stderr_lines(self):
        try:
            with open(self.stderr_path, "rb") as f:
                return f.read().decode("utf-8", "replace").splitlines()
        except OSError:
            return []

    def stderr_tail(self, n=40):
        return "\n".join(self.stderr_lines()[-n:])

    def alive(self):
        return self.proc is not None and self.proc.poll() is None

    def signal(self, sig):
        if self.alive():
            os.kill(self.proc.pid, sig)

    def terminate(self, timeout=30):
        """SIGTERM and wait; returns the exit code (None if it had to be killed)."""
        if not self.alive():
            return self.proc.returncode if self.proc else None
        os.kill(self.proc.pid, signal.SIGTERM)
        try:
            return self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.kill()
            return None

    def kill(self):
        if self.proc is not None and self.proc.poll() is None:
            try:
                os.kill(self.proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                pass
        try:
            self._err.close()
        except Exception:
            pass

    def wait_ready(self, ctx, timeout=30):
        deadline = time.monotonic() + timeout
        last = None
        while time.monotonic() < deadline:
            if not self.alive():
                raise RuntimeError("server died:\n" + self.stderr_tail())
            try:
                st, _, body = one_request(self.port, ctx, "GET", "/readyz", None, timeout=5)
                if st == 200:
                    return
                last = "readyz %d %r" % (st, body[:200])
            except Exception as e:  # not listening yet
                last = repr(e)
            time.sleep(0.1)
        raise RuntimeError("server not ready: %s\n%s" % (last, self.stderr_tail()))

    def metrics(self, timeout=5):
        if not self.metrics_port:
            return None
        c = http.client.HTTPConnection("127.0.0.1", self.metrics_port, timeout=timeout)
        try:
            c.request("GET", "/metrics")
            r = c.getresponse()
            return r.read().decode("utf-8", "replace")
        finally:
            c.close()


def metric_sum(text, name, label_filter=None):
    """Sum of the samples of metric `name` (optionally only those whose label text contains
    label_filter) in Prometheus text format; None when no sample."""
    total, seen = 0.0, False
    for line in (text or "").splitlines():
        if line.startswith("#"):
            continue
        m = re.match(r"^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{[^}]*\})?\s+(\S+)", line)
        if not m or m.group(1) != name:
            continue
        if label_filter and label_filter not in (m.group(2) or ""):
            continue
        try:
            total += float(m.group(3))
            seen = True
        except ValueError:
            pass
    return total if seen else None


# ---------------------------------------------------------------- TLS + HTTP client


def client_context(cafile, certfile=None, keyfile=None):
    ctx = ssl.create_default_context(ssl.Purpose.SERVER_AUTH, cafile=cafile)
    ctx.check_hostname = True
    if certfile:
        ctx.load_cert_chain(certfile, keyfile)
    return ctx


class Conn:
    """One persistent HTTP/1.1 connection over TLS (keep-alive), like the API server's."""

    def __init__(self, port, ctx, timeout=10, host="localhost"):
        self.port, self.ctx, self.timeout, self.host = port, ctx, timeout, host
        self.c = None
        self.handshakes = 0

    def _connect(self):
        self.c = http.client.HTTPSConnection("127.0.0.1", self.port, timeout=self.timeout,
                                             context=self.ctx)
        # SNI/hostname check against "localhost" (a SAN of the serving cert)
        sock = socket.create_connection(("127.0.0.1", self.port), timeout=self.timeout)
        # like Go's net/http (the API server): no Nagle, so a request is never held back
        # waiting for the ACK of the previous segment
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.c.sock = self.ctx.wrap_socket(sock, server_hostname=self.host)
        self.handshakes += 1

    def peer_cert_fingerprint(self):
        import hashlib
        der = self.c.sock.getpeercert(binary_form=True)
        return hashlib.sha256(der).hexdigest()

    def request(self, method, path, body=None, headers=None):
        """Returns (status, headers dict lower-case, body bytes, seconds). Raises on failure."""
        if self.c is None or self.c.sock is None:
            self._connect()
        h = {"Content-Type": "application/json", "Accept": "application/json"}
        h.update(headers or {})
        t0 = time.monotonic()
        self.c.request(method, path, body=body, headers=h)
        r = self.c.getresponse()
        data = r.read()
        dt = time.monotonic() - t0
        hdrs = {k.lower(): v for k, v in r.getheaders()}
        if r.will_close:
            self.close()
        return r.status, hdrs, data, dt

    def close(self):
        if self.c is not None:
            try:
                self.c.close()
            except Exception:
                pass
        self.c = None


def one_request(port, ctx, method, path, body, timeout=10, headers=None):
    c = Conn(port, ctx, timeout=timeout)
    try:
        st, _, data, _ = c.request(method, path, body, headers)
        return st, None, data
    finally:
        c.close()


# ---------------------------------------------------------------- AdmissionReviews


def pod(name, namespace, gpus=0, resource_name="nvidia.com/gpu", labels=None,
        annotations=None, extra_spec=None, containers=None):
    """A Pod as the API server would send it: requests filled from limits."""
    if containers is None:
        c = {"name": "main", "image": "registry.example/app:1"}
        if gpus:
            q = str(gpus)
            c["resources"] = {"limits": {resource_name: q}, "requests": {resource_name: q}}
        containers = [c]
    p = {"apiVersion": "v1", "kind": "Pod",
         "metadata": {"name": name, "namespace": namespace},
         "spec": {"containers": containers}}
    if labels:
        p["metadata"]["labels"] = dict(labels)
    if annotations:
        p["metadata"]["annotations"] = dict(annotations)
    if extra_spec:
        p["spec"].update(copy.deepcopy(extra_spec))
    return p


def review(obj, uid="00000000-0000-0000-0000-000000000001", operation="CREATE",
           old_object=None, api_version="admission.k8s.io/v1", namespace=None):
    ns = namespace
    if ns is None and isinstance(obj, dict):
        ns = obj.get("metadata", {}).get("namespace")
    name = obj.get("metadata", {}).get("name") if isinstance(obj, dict) else None
    req = {"uid": uid,
           "kind": {"group": "", "version": "v1", "kind": "Pod"},
           "resource": {"group": "", "version": "v1", "resource": "pods"},
           "requestKind": {"group": "", "version": "v1", "kind": "Pod"},
           "requestResource": {"group": "", "version": "v1", "resource": "pods"},
           "name": name, "namespace": ns, "operation": operation,
           "userInfo": {"username": "system:serviceaccount:tenant:deployer"},
           "object": obj, "oldObject": old_object, "dryRun": False,
           "options": {"apiVersion": "meta.k8s.io/v1", "kind": "CreateOptions"}}
    return {"apiVersion": api_version, "kind": "AdmissionReview", "request": req}


def dumps(o):
    return json.dumps(o, separators=(",", ":")).encode()


class Malformed(Exception):
    pass


def parse_review_response(body, uid=None):
    """Checks a 200 body is a well-formed AdmissionReview response; returns
    (response dict, patch list or None). Raises Malformed with the reason."""
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError as e:
        raise Malformed("response is not UTF-8: %s" % e)
    try:
        doc = json.loads(text)
    except ValueError as e:
        raise Malformed("response is not JSON: %s: %r" % (e, text[:300]))
    if not isinstance(doc, dict) or doc.get("kind") != "AdmissionReview":
        raise Malformed("not an AdmissionReview: %r" % text[:300])
    resp = doc.get("response")
    if not isinstance(resp, dict):
        raise Malformed("no response object")
    if uid is not None and resp.get("uid") != uid:
        raise Malformed("uid %r != %r" % (resp.get("uid"), uid))
    if not isinstance(resp.get("allowed"), bool):
        raise Malformed("allowed is not a bool")
    patch = None
    if "patch" in resp:
        if resp.get("patchType") != "JSONPatch":
            raise Malformed("patch without patchType JSONPatch")
        try:
            patch = json.loads(base64.b64decode(resp["patch"], validate=True).decode("utf-8"))
        except Exception as e:
            raise Malformed("patch is not base64 JSON: %s" % e)
        if not isinstance(patch, list):
            raise Malformed("patch is not a list")
        if not resp["allowed"]:
            raise Malformed("a denial carries a patch")
    if not resp["allowed"]:
        st = resp.get("status")
        if not isinstance(st, dict) or not isinstance(st.get("message"), str) \
                or not st.get("message"):
            raise Malformed("denial without status.message")
    return resp, patch


def parse_status(body, code):
    """Checks an error body is a Kubernetes Status with the given code; returns it."""
    try:
        doc = json.loads(body.decode("utf-8"))
    except Exception as e:
        raise Malformed("error body is not JSON: %s: %r" % (e, body[:300]))
    if not isinstance(doc, dict) or doc.get("kind") != "Status":
        raise Malformed("error body is not a Status: %r" % body[:300])
    if doc.get("code") != code:
        raise Malformed("Status code %r != %d" % (doc.get("code"), code))
    if not isinstance(doc.get("message"), str) or not doc["message"]:
        raise Malformed("Status without message")
    return doc


def patch_revision(patch):
    """The gpu-admission.io/policy revision named by a mutate patch, or None."""
    for op in patch or []:
        path, val = op.get("path", ""), op.get("value")
        if path == "/metadata/annotations/gpu-admission.io~1policy" and isinstance(val, str):
            return val
        if path == "/metadata/annotations" and isinstance(val, dict):
            v = val.get("gpu-admission.io/policy")
            if isinstance(v, str):
                return v
    return None


# ---------------------------------------------------------------- RFC 6902


class PatchError(Exception):
    pass


def _unescape(tok):
    if re.search(r"~[^01]|~$", tok):
        raise PatchError("bad escape in pointer token %r" % tok)
    return tok.replace("~1", "/").replace("~0", "~")


def _parse_pointer(ptr):
    if ptr == "":
        return []
    if not ptr.startswith("/"):
        raise PatchError("pointer %r does not start with /" % ptr)
    return [_unescape(t) for t in ptr[1:].split("/")]


def _array_index(arr, tok, for_add):
    if tok == "-" and for_add:
        return len(arr)
    if not re.fullmatch(r"0|[1-9][0-9]*", tok):
        raise PatchError("bad array index %r" % tok)
    i = int(tok)
    if i > len(arr) or (i == len(arr) and not for_add):
        raise PatchError("array index %d out of range (len %d)" % (i, len(arr)))
    return i


def _walk(doc, toks):
    cur = doc
    for t in toks:
        if isinstance(cur, dict):
            if t not in cur:
                raise PatchError("path member %r missing" % t)
            cur = cur[t]
        elif isinstance(cur, list):
            cur = cur[_array_index(cur, t, False)]
        else:
            raise PatchError("path goes through a scalar at %r" % t)
    return cur


def _add(doc, toks, value):
    if not toks:
        return value
    parent = _walk(doc, toks[:-1])
    last = toks[-1]
    if isinstance(parent, dict):
        parent[last] = value
    elif isinstance(parent, list):
        parent.insert(_array_index(parent, last, True), value)
    else:
        raise PatchError("add into a scalar")
    return doc


def _remove(doc, toks):
    if not toks:
        raise PatchError("remove of the whole document")
    parent = _walk(doc, toks[:-1])
    last = toks[-1]
    if isinstance(parent, dict):
        if last not in parent:
            raise PatchError("remove of missing member %r" % last)
        return parent.pop(last)
    if isinstance(parent, list):
        return parent.pop(_array_index(parent, last, False))
    raise PatchError("remove from a scalar")


def apply_patch(doc, patch):
    """Applies an RFC 6902 patch strictly (every path must exist as the RFC requires);
    returns the new document, raises PatchError."""
    doc = copy.deepcopy(doc)
    for op in patch:
        if not isinstance(op, dict) or "op" not in op or "path" not in op:
            raise PatchError("malformed op %r" % (op,))
        kind, toks = op["op"], _parse_pointer(op["path"])
        if kind == "add":
            if "value" not in op:
                raise PatchError("add without value")
            doc = _add(doc, toks, copy.deepcopy(op["value"]))
        elif kind == "remove":
            _remove(doc, toks)
        elif kind == "replace":
            if "value" not in op:
                raise PatchError("replace without value")
            if not toks:
                doc = copy.deepcopy(op["value"])
            else:
                _walk(doc, toks)
                _remove(doc, toks)
                doc = _add(doc, toks, copy.deepcopy(op["value"]))
        elif kind == "test":
            if _walk(doc, toks) != op.get("value"):
                raise PatchError("test failed at %s" % op["path"])
        elif kind in ("move", "copy"):
            frm = _parse_pointer(op.get("from", ""))
            if kind == "move" and toks[:len(frm)] == frm and toks != frm:
                raise PatchError("move into its own child")
            v = copy.deepcopy(_walk(doc, frm))
            if kind == "move":
                _remove(doc, frm)
            doc = _add(doc, toks, v)
        else:
            raise PatchError("unknown op %r" % kind)
    return doc


def kubectl_path():
    for d in [os.environ.get("GPA_DEPS_BIN"), os.path.join(REPO, ".deps", "bin")] + \
            os.environ.get("PATH", "").split(os.pathsep):
        if d and os.access(os.path.join(d, "kubectl"), os.X_OK):
            return os.path.join(d, "kubectl")
    return None


def kubectl_apply_patch(obj, patch, timeout=60):
    """Applies a JSON patch with `kubectl patch --local --type=json` (the reference
    implementation, no cluster involved). Returns the patched object, or raises PatchError.
    Returns None when kubectl is not available."""
    k = kubectl_path()
    if not k:
        return None
    with tempfile.TemporaryDirectory(prefix="gpa-kpatch-") as d:
        f = os.path.join(d, "pod.json")
        with open(f, "w") as fh:
            json.dump(obj, fh)
        p = subprocess.run([k, "patch", "--local", "-f", f, "--type=json", "-p",
                            json.dumps(patch), "-o", "json"],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=timeout,
                           env=dict(os.environ, KUBECONFIG=os.path.join(d, "none")))
        if p.returncode != 0:
            raise PatchError("kubectl patch --local: " + p.stderr.decode()[-500:])
        return json.loads(p.stdout)


def percentile(values, q):
    if not values:
        return None
    v = sorted(values)
    k = max(0, min(len(v) - 1, int(round(q / 100.0 * len(v) + 0.5)) - 1))
    return v[k]
