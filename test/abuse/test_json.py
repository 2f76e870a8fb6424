#!/usr/bin/env python3
"""test_json.py --target server|cli - pathological AdmissionReview bodies (payloads.py).

What it is for: every hostile body gets either a well-formed 400 Status or a well-formed,
correct AdmissionReview answer - never a crash, a hang, or a patch built from half-parsed
input. For accepted answers:
  - the uid is echoed, allowed is a bool, a denial has a message and no patch;
  - a patch applies cleanly (RFC 6902, strictly) to the Pod as a standard parser reads the
    body, and also with `kubectl patch --local` when kubectl is available;
  - the server's answer equals the CLI's (`gpu-admission review`) for the same bytes;
  - payloads marked deny are denied.
Server target: default --max-body must answer 413 to the 10 MB body; a second server with a
raised --max-body must answer it normally; the server must still be alive and serving a
normal request after everything.

What it must never do: bind anything but 127.0.0.1, wait on any single answer longer than
the per-request timeout, or leave the server running.
"""

import argparse
import json
import os
import re
import ssl
import sys
import tempfile
import time

import harness as H
import payloads

MAX_BODY_DEFAULT = 7 * 1024 * 1024
KUBECTL_CHECKED = [0]
PATCHED = [0]  # accepted answers that carried a patch: the patch checks must not be vacuous


def check_answer(p, status, body, problems, where):
    """Judges one (status, body) pair; returns the parsed response doc when accepted."""
    name = p["name"]
    if p["expect"] == "400" and status != 400:
        problems.append("%s %s: expected 400, got %s %r" % (where, name, status, body[:200]))
        return None
    if p["expect"] == "413" and where == "server" and status != 413:
        problems.append("%s %s: expected 413, got %s %r" % (where, name, status, body[:200]))
        return None
    if status in (400, 413):
        try:
            H.parse_status(body, status)
        except H.Malformed as e:
            if status == 400:  # 413 may come from the HTTP layer before any JSON is written
                problems.append("%s %s: bad 400 body: %s" % (where, name, e))
        return None
    if status != 200:
        problems.append("%s %s: HTTP %s %r" % (where, name, status, body[:200]))
        return None
    try:
        resp, patch = H.parse_review_response(body, p["uid"])
    except H.Malformed as e:
        problems.append("%s %s: malformed answer: %s" % (where, name, e))
        return None
    if p["deny"] and resp["allowed"]:
        problems.append("%s %s: must be denied, was allowed: %r" % (where, name, body[:300]))
    if patch:
        PATCHED[0] += 1
        if p["object"] is None:
            problems.append("%s %s: patched an object a standard parser cannot read: %r"
                            % (where, name, patch[:3]))
        else:
            try:
                H.apply_patch(p["object"], patch)
            except H.PatchError as e:
                problems.append("%s %s: patch does not apply: %s: %r"
                                % (where, name, e, patch[:5]))
    return json.loads(body)


def post_headers_first(port, ctx, path, body, timeout):
    """Sends the request headers, waits for an early answer (a server that judges
    Content-Length answers 413 before reading the body), and only then the body. Returns
    (status, response body bytes). A plain client that blasts 10 MB would see the
    connection closed under it before it reads the 413 - that is libmicrohttpd closing after
    an early answer, not a missing answer."""
    import socket
    raw = socket.create_connection(("127.0.0.1", port), timeout=timeout)
    s = ctx.wrap_socket(raw, server_hostname="localhost")
    try:
        s.sendall(b"POST %s HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n"
                  b"Content-Length: %d\r\n\r\n" % (path.encode(), len(body)))
        s.settimeout(3)
        data = b""
        try:
            data = s.recv(65536)
        except (socket.timeout, TimeoutError):
            s.settimeout(timeout)
            s.sendall(body)
        s.settimeout(timeout)
        while b"\r\n\r\n" not in data:
            d = s.recv(65536)
            if not d:
                break
            data += d
        head, _, rest = data.partition(b"\r\n\r\n")
        status = int(head.split(b" ")[1])
        m = [l for l in head.split(b"\r\n") if l.lower().startswith(b"content-length:")]
        n = int(m[0].split(b":")[1]) if m else None
        while n is not None and len(rest) < n:
            d = s.recv(65536)
            if not d:
                break
            rest += d
        return status, rest
    finally:
        s.close()


def raw_exchange(port, ctx, data, timeout, read_all=True):
    """Sends raw bytes over TLS, returns everything the server sent until it closed or went
    quiet for 2 s (b'' when it closed without a word)."""
    import socket
    raw = socket.create_connection(("127.0.0.1", port), timeout=timeout)
    s = ctx.wrap_socket(raw, server_hostname="localhost")
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
            except (OSError, ssl.SSLError):
                break
            if not d:
                break
            got += d
    finally:
        s.close()
    return got


def statuses(blob):
    return [int(m) for m in re.findall(rb"HTTP/1\.[01] (\d{3}) ", blob)]


def http_framing_checks(srv, ctx, timeout, problems, results):
    """HTTP-level abuse the JSON payloads cannot express: chunked bodies (small, and past
    --max-body), a 64 KiB header, two pipelined requests, an HTTP/1.0 request."""
    body = H.dumps(H.review(H.pod("raw", "research-x", gpus=1), uid="raw-1"))
    hdr = (b"POST /validate HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n")

    def chunked(b, size):
        out = b""
        for i in range(0, len(b), size):
            part = b[i:i + size]
            out += b"%x\r\n" % len(part) + part + b"\r\n"
        return out + b"0\r\n\r\n"

    cases = []
    got = raw_exchange(srv.port, ctx, hdr + b"Transfer-Encoding: chunked\r\n\r\n" +
                       chunked(body, 100), timeout)
    cases.append(("chunked-small", statuses(got), [200]))
    big = b'{"x":"' + b"y" * (8 * 1024 * 1024) + b'"}'
    got = raw_exchange(srv.port, ctx, hdr + b"Transfer-Encoding: chunked\r\n\r\n" +
                       chunked(big, 65536), timeout)
    cases.append(("chunked-over-max-body", statuses(got), [413, None]))
    got = raw_exchange(srv.port, ctx, b"POST /validate HTTP/1.1\r\nHost: localhost\r\n"
                       b"X-Big: " + b"a" * 65536 + b"\r\nContent-Type: application/json\r\n"
                       b"Content-Length: %d\r\n\r\n" % len(body) + body, timeout)
    cases.append(("header-64KiB", statuses(got), [413, 431, 400, None]))
    one = hdr + b"Content-Length: %d\r\n\r\n" % len(body) + body
    got = raw_exchange(srv.port, ctx, one + one, timeout)
    cases.append(("pipelined-two", statuses(got), [[200, 200]]))
    got = raw_exchange(srv.port, ctx, b"POST /validate HTTP/1.0\r\nContent-Type: "
                       b"application/json\r\nContent-Length: %d\r\n\r\n" % len(body) + body,
                       timeout)
    cases.append(("http-1.0", statuses(got), [200]))
    for name, st, ok in cases:
        results.append({"name": name, "hook": "validate", "statuses": st})
        if [200, 200] in ok:
            good = st == [200, 200]
        elif not st:  # closed without an answer
            good = None in ok
        else:
            good = len(st) == 1 and st[0] in ok
        if not good:
            problems.append("server %s: statuses %s, want one of %s" % (name, st, ok))
    if not srv.alive():
        problems.append("server died in the HTTP framing checks:\n" + srv.stderr_tail())


def run_server(binary, policies, certs, work, plist, timeout, problems, results):
    ctx = H.client_context(os.path.join(certs, "ca.crt"))
    cli_answers = {}
    with H.Server(binary, policies, cert_dir=certs, workdir=os.path.join(work, "s1"),
                  ready_timeout=60) as srv:
        srv.wait_ready(ctx, timeout=60)
        for p in plist:
            for hook in ("mutate", "validate"):
                conn = H.Conn(srv.port, ctx, timeout=timeout)
                try:
                    if p["expect"] == "413":
                        t0 = time.monotonic()
                        status, body = post_headers_first(srv.port, ctx, "/" + hook,
                                                          p["body"], timeout)
                        dt = time.monotonic() - t0
                    else:
                        status, _, body, dt = conn.request("POST", "/" + hook, p["body"])
                except Exception as e:
                    problems.append("server %s/%s: no answer: %r" % (p["name"], hook, e))
                    status, body, dt = None, b"", None
                    if not srv.alive():
                        problems.append("server died on %s/%s (rc %s):\n%s"
                                        % (p["name"], hook, srv.proc.returncode,
                                           srv.stderr_tail()))
                        return
                finally:
                    conn.close()
                if status is None:
                    continue
                doc = check_answer(p, status, body, problems, "server")
                results.append({"name": p["name"], "hook": hook, "status": status,
                                "allowed": doc["response"]["allowed"] if doc else None,
                                "ms": round(dt * 1000, 1)})
                if doc is not None:
                    cli = cli_answer(binary, policies, work, p, hook, timeout)
                    if cli is not None and cli != doc:
                        problems.append("server %s/%s: answer differs from `review`:\n"
                                        "server %r\ncli    %r"
                                        % (p["name"], hook, json.dumps(doc)[:400],
                                           json.dumps(cli)[:400]))
                    # the reference implementation agrees the patch applies
                    resp = doc["response"]
                    if resp.get("patch") and p["object"] is not None and not p["big"]:
                        _, patch = H.parse_review_response(body, p["uid"])
                        try:
                            if H.kubectl_apply_patch(p["object"], patch) is not None:
                                KUBECTL_CHECKED[0] += 1
                        except H.PatchError as e:
                            problems.append("server %s/%s: kubectl rejects the patch: %s"
                                            % (p["name"], hook, e))
        http_framing_checks(srv, ctx, timeout, problems, results)
        # still alive and answering normally
        st, _, body, _ = H.Conn(srv.port, ctx).request(
            "POST", "/validate", H.dumps(H.review(H.pod("after", "research-x", gpus=1))))
        if st != 200:
            problems.append("server: a normal request after the abuse got HTTP %s" % st)
        rc = srv.terminate(timeout=60)
        if rc != 0:
            problems.append("server exit code after SIGTERM: %s\n%s" % (rc, srv.stderr_tail()))

    # a raised --max-body: the 10 MB body must be answered normally
    big = [p for p in plist if p["expect"] == "413"]
    with H.Server(binary, policies, cert_dir=certs, workdir=os.path.join(work, "s2"),
                  extra=["--max-body", str(32 * 1024 * 1024)], ready_timeout=60) as srv:
        srv.wait_ready(ctx, timeout=60)
        for p in big:
            for hook in ("mutate", "validate"):
                q = dict(p, expect="any")
                status, _, body, dt = H.Conn(srv.port, ctx, timeout=timeout).request(
                    "POST", "/" + hook, p["body"])
                results.append({"name": p["name"] + "(max-body 32MiB)", "hook": hook,
                                "status": status, "ms": round(dt * 1000, 1)})
                if status != 200:
                    problems.append("server --max-body 32MiB %s/%s: HTTP %s %r"
                                    % (p["name"], hook, status, body[:200]))
                    continue
                check_answer(q, status, body, problems, "server(max-body)")
        rc = srv.terminate(timeout=60)
        if rc != 0:
            problems.append("server(max-body) exit code after SIGTERM: %s" % rc)


def cli_answer(binary, policies, work, p, hook, timeout):
    """The CLI's parsed answer for a payload, None when it refuses the input."""
    f = os.path.join(work, "payload.json")
    with open(f, "wb") as fh:
        fh.write(p["body"])
    rc, out, err, _ = H.run_cli(binary, ["review", hook, "--policies", policies, f],
                                timeout=timeout)
    if rc in (0, 2):
        try:
            return json.loads(out)
        except ValueError:
            return None
    return None


def run_cli(binary, policies, work, plist, timeout, problems, results):
    for p in plist:
        f = os.path.join(work, "payload-cli.json")
        with open(f, "wb") as fh:
            fh.write(p["body"])
        for hook in ("mutate", "validate"):
            rc, out, err, dt = H.run_cli(binary, ["review", hook, "--policies", policies, f],
                                         timeout=timeout)
            results.append({"name": p["name"], "hook": hook, "rc": rc, "ms": round(dt * 1000)})
            where = "cli %s/%s" % (p["name"], hook)
            if rc is None:
                problems.append(where + ": hang (killed after %ds)" % timeout)
                continue
            if rc < 0 or rc > 2:
                problems.append("%s: rc %s (crash?) stderr %r" % (where, rc, err[-500:]))
                continue
            if rc == 1:
                # refused: a clear message, and nothing on stdout that looks like an answer
                if not err.strip() and not out.strip():
                    problems.append(where + ": refused without a message")
                if out.strip():
                    try:
                        H.parse_status(out, 400)
                    except H.Malformed as e:
                        problems.append("%s: rc 1 with stdout that is not a 400 Status: %s"
                                        % (where, e))
                if p["expect"] not in ("400", "413", "any"):
                    problems.append(where + ": refused")
                continue
            if p["expect"] == "400":
                problems.append("%s: must be refused, got rc %d %r" % (where, rc, out[:200]))
                continue
            q = dict(p)
            if q["expect"] == "413":
                q["expect"] = "any"
            doc = check_answer(q, 200, out, problems, "cli")
            # exit code 0 = a response was produced, allowed or denied (docs/cli.md); the
            # verdict is response.allowed, judged by check_answer above


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--target", choices=["server", "cli"], required=True)
    ap.add_argument("--bin")
    ap.add_argument("--policies", default=os.path.join(H.REPO, "policies"))
    ap.add_argument("--only", help="comma-separated payload names")
    a = ap.parse_args()
    binary = H.find_bin(a.bin)
    timeout = 120 if H.sanitized_build() else 30
    work = tempfile.mkdtemp(prefix="gpa-abuse-json-")
    plist = payloads.build(MAX_BODY_DEFAULT)
    if a.only:
        names = set(a.only.split(","))
        plist = [p for p in plist if p["name"] in names]
    problems, results = [], []
    if a.target == "server":
        certs = H.make_certs(binary, os.path.join(work, "certs"))
        run_server(binary, a.policies, certs, work, plist, timeout, problems, results)
    else:
        run_cli(binary, a.policies, work, plist, timeout, problems, results)
    for r in results:
        H.log("ABUSE-JSON " + json.dumps(r))
    xfail = {p["name"]: p["xfail"] for p in plist if p.get("xfail")}
    real = []
    for pr in problems:
        name = pr.split(" ")[1].split("/")[0] if pr.count(" ") else ""
        name = name.rstrip(":")
        if name in xfail:
            H.log("XFAIL (%s) %s" % (xfail[name], pr))
        else:
            real.append(pr)
    for n in xfail:
        if not any((" %s" % n) in pr for pr in problems):
            H.log("XPASS %s: the known issue '%s' no longer shows: remove the xfail marker"
                  % (n, xfail[n]))
    problems = real
    for p in problems:
        H.log("FAIL " + p)
    if a.target == "server":
        H.log("kubectl patch --local (%s) applied %d accepted patches"
              % (H.kubectl_path() or "not found: RFC 6902 applier only", KUBECTL_CHECKED[0]))
    H.log("%d accepted answers carried a patch (each applied to the pod)" % PATCHED[0])
    if not a.only and PATCHED[0] < 10:
        problems.append("only %d patched answers: the payloads no longer reach a mutating "
                        "rule of the policy set, so the patch checks prove nothing" % PATCHED[0])
    H.log("%d payloads x 2 hooks, %d problems" % (len(plist), len(problems)))
    return H.finish(problems, work, log_failures=False)


if __name__ == "__main__":
    sys.exit(main())
