#!/usr/bin/env python3
"""run_valgrind.py --mode server|cli - the leak and memory-error gate under valgrind memcheck.

What it is for: running the real binary under
  valgrind --leak-check=full --errors-for-leak-kinds=definite --error-exitcode=99
and failing on any memory error or definite leak.
  server: start `serve` (cert dir + ConfigMap-style policy dir), send a few hundred mixed
          requests (mutations, denials, validations, v1beta1, malformed JSON, an oversized
          body, unknown paths and methods, probes, /metrics), publish a new good policy set, a
          broken one and a new certificate, SIGHUP, then SIGTERM: the exit code must be 0 and
          the valgrind log must show no error and no definitely-lost block;
  cli:    `check`, `review`, `mutate`, `certs`, `version` on good and bad inputs, each run
          under valgrind with the same bar (exit 99 = valgrind found something).
"Still reachable" and "possibly lost" blocks (GnuTLS/libmicrohttpd keep global state until
exit) are not counted; suppressions live in gpa.supp, each with the reason it is there.

What it must never do: bind anything but 127.0.0.1, wait unboundedly (every step has a
timeout), or leave a server behind.
"""

import argparse
import os
import re
import signal
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "abuse"))
import harness as H  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
SOAK_SETS = os.path.join(HERE, "..", "soak", "sets")


def vg_cmd(log_path):
    return ["valgrind", "--quiet", "--leak-check=full", "--errors-for-leak-kinds=definite",
            "--show-leak-kinds=definite", "--error-exitcode=99", "--num-callers=40",
            "--suppressions=" + os.path.join(HERE, "gpa.supp"), "--log-file=" + log_path]


def judge_log(path, what, problems):
    """Counts errors and definite leaks in a valgrind log; adds problems; returns the text."""
    try:
        text = open(path, errors="replace").read()
    except OSError:
        problems.append("%s: no valgrind log at %s" % (what, path))
        return ""
    m = re.findall(r"ERROR SUMMARY: (\d+) errors", text)
    errs = sum(int(x) for x in m)
    lost = sum(int(x.replace(",", "")) for x in
               re.findall(r"definitely lost: ([\d,]+) bytes", text))
    # --quiet prints only errors and the leak records: any "Invalid"/"uninitialised" or
    # "definitely lost in" record is a finding even when the summary is not printed
    records = re.findall(r"==\d+== (Invalid [^\n]*|Conditional jump[^\n]*|Use of uninit[^\n]*|"
                         r"Syscall param[^\n]*|Mismatched free[^\n]*|[^\n]*definitely lost in"
                         r"[^\n]*|Source and destination overlap[^\n]*)", text)
    if errs or lost or records:
        problems.append("%s: valgrind: %d errors, %d bytes definitely lost, records: %s\n%s"
                        % (what, errs, lost, records[:5], text[-6000:]))
    return text


def run_cli_case(binary, work, name, args, problems, stdin=None, ok_rcs=(0,)):
    log = os.path.join(work, "vg-cli-%s.log" % name)
    rc, out, err, dt = H.run_cli(binary, args, stdin=stdin, timeout=300, wrapper=vg_cmd(log))
    H.log("valgrind cli %-28s rc=%s %.1fs" % (name, rc, dt))
    if rc is None:
        problems.append("cli %s: hung under valgrind" % name)
        return
    if rc == 99:
        problems.append("cli %s: valgrind exit 99 (errors or definite leaks)" % name)
    elif rc not in ok_rcs:
        problems.append("cli %s: rc %s, expected %s; stderr %r" % (name, rc, ok_rcs, err[-800:]))
    judge_log(log, "cli " + name, problems)


def mode_cli(binary, policies, work, problems):
    rv = os.path.join(work, "good-review.json")
    with open(rv, "wb") as f:
        f.write(H.dumps(H.review(H.pod("vg", "research-x", gpus=1))))
    deny = os.path.join(work, "deny-review.json")
    with open(deny, "wb") as f:
        f.write(H.dumps(H.review(H.pod("vg", "research-x", containers=[
            {"name": "c", "image": "i", "securityContext": {"privileged": True}}]))))
    bad = os.path.join(work, "bad-review.json")
    with open(bad, "wb") as f:
        f.write(b'{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"ui')
    deep = os.path.join(work, "deep.json")
    with open(deep, "wb") as f:
        f.write(b"[" * 5000 + b"]" * 5000)
    podj = os.path.join(work, "pod.json")
    with open(podj, "wb") as f:
        # placed by the shipped training rule (a 1-GPU pod there matches no rule, and the
        # shipped set denies unmatched GPU pods)
        f.write(H.dumps(H.pod("vg", "ml-platform", gpus=2)))
    pody = os.path.join(work, "pod.yaml")
    with open(pody, "w") as f:
        f.write("apiVersion: v1\nkind: Pod\nmetadata:\n  name: vg\n  namespace: notebooks\n"
                "spec:\n  containers:\n  - name: c\n    image: i\n    resources:\n"
                "      limits: {nvidia.com/gpu: 1}\n")
    privy = os.path.join(work, "priv.yaml")
    with open(privy, "w") as f:
        f.write("apiVersion: v1\nkind: Pod\nmetadata:\n  name: vg\n  namespace: research-x\n"
                "spec:\n  containers:\n  - name: c\n    image: i\n    securityContext:\n"
                "      privileged: true\n")
    badyaml = os.path.join(work, "bad.yaml")
    with open(badyaml, "w") as f:
        f.write("apiVersion: v1\nkind: Pod\nmetadata: {name: [\n")
    cases = [
        ("version", ["version"], (0,)),
        ("check-shipped", ["check", policies], (0,)),
        ("check-soak-b", ["check", os.path.join(SOAK_SETS, "b")], (0,)),
        ("check-broken-key", ["check", os.path.join(SOAK_SETS, "broken-key")], (1,)),
        ("check-broken-syntax", ["check", os.path.join(SOAK_SETS, "broken-syntax")], (1,)),
        ("check-missing-dir", ["check", os.path.join(work, "nope")], (1,)),
        ("review-mutate-good", ["review", "mutate", "--policies", policies, rv], (0, 2)),
        ("review-validate-good", ["review", "validate", "--policies", policies, rv], (0, 2)),
        ("review-validate-deny", ["review", "validate", "--policies", policies, deny], (0,)),
        ("review-mutate-deny", ["review", "mutate", "--policies", policies, deny], (0,)),
        ("review-truncated", ["review", "mutate", "--policies", policies, bad], (1,)),
        ("review-deep", ["review", "validate", "--policies", policies, deep], (1,)),
        ("review-bad-policies", ["review", "mutate", "--policies",
                                 os.path.join(SOAK_SETS, "broken-key"), rv], (1,)),
        ("mutate-json", ["mutate", "--policies", policies, podj], (0,)),
        ("mutate-yaml", ["mutate", "--policies", policies, pody], (0,)),
        ("mutate-deny", ["mutate", "--policies", policies, privy], (2,)),
        ("mutate-bad-yaml", ["mutate", "--policies", policies, badyaml], (1,)),
        ("certs", ["certs", "--service", "s", "--namespace", "n", "--out",
                   os.path.join(work, "certs-out"), "--san", "127.0.0.1"], (0,)),
        ("unknown-command", ["frobnicate"], (1,)),
        ("serve-bad-flag", ["serve", "--no-such-flag"], (1,)),
    ]
    for name, args, rcs in cases:
        run_cli_case(binary, work, name, args, problems, ok_rcs=rcs)


def mode_server(binary, policies, work, problems):
    certs1 = H.make_certs(binary, os.path.join(work, "c1"))
    certs2 = H.make_certs(binary, os.path.join(work, "c2"))
    bundle = os.path.join(work, "bundle.crt")
    with open(bundle, "w") as f:
        for c in (certs1, certs2):
            f.write(open(os.path.join(c, "ca.crt")).read())
    certdir = H.AtomicDir(os.path.join(work, "certs"))
    certdir.publish({n: open(os.path.join(certs1, n), "rb").read()
                     for n in ("tls.crt", "tls.key")})
    poldir = H.AtomicDir(os.path.join(work, "policies"))
    poldir.publish(H.read_set(policies))
    ctx = H.client_context(bundle)
    log = os.path.join(work, "vg-server.log")
    srv = H.Server(binary, poldir.path, cert_dir=certdir.path, workdir=work,
                   wrapper=vg_cmd(log), ready_timeout=180,
                   extra=["--threads", "2", "--shutdown-grace", "1s", "--max-body", "256Ki"])
    counts = {}
    t0 = time.monotonic()
    with srv:
        srv.wait_ready(ctx, timeout=180)
        exe = os.readlink("/proc/%d/exe" % srv.pid)
        if "memcheck" not in exe:  # the gate must really be valgrind's
            problems.append("server is not running under memcheck: %s" % exe)
        pods = [H.pod("a", "research-x", gpus=1), H.pod("b", "ml-platform", gpus=1),
                H.pod("c", "ml-platform", gpus=4), H.pod("d", "default"),
                H.pod("e", "research-x", containers=[{"name": "c", "image": "i", "env": [
                    {"name": "NVIDIA_VISIBLE_DEVICES", "value": "all"}]}]),
                H.pod("f", "research-x", gpus=1,
                      labels={"gpu-admission.io/tenant": "someone-else"})]
        good = [H.dumps(H.review(p, uid="vg-%d" % i)) for i, p in enumerate(pods)]
        good.append(H.dumps(H.review(pods[0], uid="vg-beta",
                                     api_version="admission.k8s.io/v1beta1")))
        bad = [b"", b"{", b"[]", b'{"kind":"AdmissionReview"}', b"[" * 3000 + b"]" * 3000,
               good[0][:-7], b"\xef\xbb\xbf" + good[0], good[0].replace(b"vg-0", b"\\ud800")]
        big = H.dumps(H.review(H.pod("big", "research-x", gpus=1,
                                     annotations={"n": "x" * 300000})))
        conn = H.Conn(srv.port, ctx, timeout=60)

        def req(method, path, body=None, tag=None):
            try:
                st, _, _, _ = conn.request(method, path, body)
            except Exception as e:
                conn.close()
                st = "exc:%s" % type(e).__name__
            counts[(tag or path, st)] = counts.get((tag or path, st), 0) + 1
            return st

        def batch(n):
            for i in range(n):
                hook = "/mutate" if i % 2 else "/validate"
                if req("POST", hook, good[i % len(good)], "good") != 200:
                    problems.append("good request got a non-200")
                if i % 5 == 0:
                    req("POST", hook, bad[(i // 5) % len(bad)], "bad")
            req("POST", "/mutate", big, "oversized")
            req("GET", "/mutate", None, "wrong-method")
            req("POST", "/nope", b"{}", "wrong-path")
            req("GET", "/healthz")
            req("GET", "/readyz")
            conn.close()  # new connection: a fresh handshake after each batch

        batch(100)
        try:
            srv.metrics()
        except Exception as e:
            problems.append("/metrics: %r" % e)
        poldir.publish(H.read_set(os.path.join(SOAK_SETS, "b")))  # good reload (inotify)
        time.sleep(3)
        batch(60)
        poldir.publish(H.read_set(os.path.join(SOAK_SETS, "broken-key")))  # refused reload
        time.sleep(3)
        srv.signal(signal.SIGHUP)
        time.sleep(2)
        batch(60)
        certdir.publish({n: open(os.path.join(certs2, n), "rb").read()
                         for n in ("tls.crt", "tls.key")})
        time.sleep(3)
        batch(60)
        rc = srv.terminate(timeout=180)
    H.log("valgrind server: %d requests in %.0fs, by kind/status: %s"
          % (sum(counts.values()), time.monotonic() - t0,
             {"%s=%s" % k: v for k, v in sorted(counts.items(), key=str)}))
    if rc is None:
        problems.append("server did not exit within 180 s of SIGTERM under valgrind")
    elif rc == 99:
        problems.append("server: valgrind exit 99 (errors or definite leaks)")
    elif rc != 0:
        problems.append("server exit code %s after SIGTERM\n%s" % (rc, srv.stderr_tail()))
    judge_log(log, "server", problems)
    mode_server_client_ca(binary, policies, work, certs1, problems)
    if not any(k[0] == "bad" and k[1] == 400 for k in counts):
        problems.append("no malformed request got its 400: %s" % counts)
    if not any(k[0] == "oversized" and k[1] == 413 for k in counts):
        problems.append("the oversized body did not get 413: %s" % counts)


def raw_tls(port, ctx, data):
    """Sends raw bytes, reads until the server closes or stays quiet for 2 s."""
    import socket
    s = ctx.wrap_socket(socket.create_connection(("127.0.0.1", port), timeout=30),
                        server_hostname="localhost")
    got = b""
    try:
        try:
            s.sendall(data)
        except OSError:
            pass
        s.settimeout(2)
        while True:
            try:
                d = s.recv(65536)
            except OSError:
                break
            if not d:
                break
            got += d
    finally:
        s.close()
    return got


def mode_server_client_ca(binary, policies, work, certs, problems):
    """Second server: --client-ca (GnuTLS peer verification, per-connection verdicts) and the
    chunked-body paths, under the same valgrind bar."""
    api_ca, api_crt, api_key = H.make_client_ca_and_cert(os.path.join(work, "api"), "api")
    log = os.path.join(work, "vg-server-client-ca.log")
    srv = H.Server(binary, policies, cert_dir=certs, workdir=os.path.join(work, "s2"),
                   wrapper=vg_cmd(log), ready_timeout=180,
                   extra=["--threads", "2", "--shutdown-grace", "1s", "--max-body", "64Ki",
                          "--client-ca", api_ca])
    ca = os.path.join(certs, "ca.crt")
    body = H.dumps(H.review(H.pod("cc", "research-x", gpus=2), uid="vg-cc"))
    seen = {}
    with srv:
        # readiness over plain HTTP: without a client certificate the TLS port answers 403
        deadline = time.monotonic() + 180
        while time.monotonic() < deadline and srv.alive():
            try:
                if "gpu_admission_" in (srv.metrics() or ""):
                    break
            except Exception:
                pass
            time.sleep(0.5)
        good = H.client_context(ca, api_crt, api_key)
        anon = H.client_context(ca)
        for i in range(20):
            for name, ctx in (("with-cert", good), ("no-cert", anon)):
                c = H.Conn(srv.port, ctx, timeout=60)
                try:
                    st, _, _, _ = c.request("POST", "/validate", body)
                except Exception as e:
                    st = "exc:%s" % type(e).__name__
                finally:
                    c.close()
                seen[(name, st)] = seen.get((name, st), 0) + 1
        hdr = (b"POST /validate HTTP/1.1\r\nHost: localhost\r\nContent-Type: "
               b"application/json\r\nTransfer-Encoding: chunked\r\n\r\n")
        small = b"%x\r\n" % len(body) + body + b"\r\n0\r\n\r\n"
        huge = b"".join(b"8000\r\n" + b"x" * 0x8000 + b"\r\n" for _ in range(40)) + b"0\r\n\r\n"
        for name, data in (("chunked-small", hdr + small), ("chunked-over-cap", hdr + huge)):
            got = raw_tls(srv.port, good, data)
            seen[(name, got[9:12].decode(errors="replace") or "closed")] = 1
        rc = srv.terminate(timeout=180)
    H.log("valgrind server --client-ca: %s" % {"%s=%s" % k: v for k, v in sorted(
        seen.items(), key=str)})
    if seen.get(("with-cert", 200)) != 20 or seen.get(("no-cert", 403)) != 20:
        problems.append("client-ca server: expected 20x200 with a certificate and 20x403 "
                        "without: %s" % seen)
    if rc == 99:
        problems.append("client-ca server: valgrind exit 99 (errors or definite leaks)")
    elif rc != 0:
        problems.append("client-ca server exit code %s after SIGTERM\n%s"
                        % (rc, srv.stderr_tail()))
    judge_log(log, "client-ca server", problems)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--mode", choices=["server", "cli"], required=True)
    ap.add_argument("--bin")
    ap.add_argument("--policies", default=os.path.join(H.REPO, "policies"))
    a = ap.parse_args()
    binary = H.find_bin(a.bin)
    import shutil
    if not shutil.which("valgrind"):
        H.log("FAIL valgrind is not installed (scripts/setup.sh test installs it)")
        return 1
    work = tempfile.mkdtemp(prefix="gpa-valgrind-")
    problems = []
    if a.mode == "cli":
        mode_cli(binary, a.policies, work, problems)
    else:
        mode_server(binary, a.policies, work, problems)
    for p in problems:
        H.log("FAIL " + p)
    H.log("valgrind %s: %d problems (logs in %s)" % (a.mode, len(problems), work))
    return H.finish(problems, work, log_failures=False)


if __name__ == "__main__":
    sys.exit(main())
