#!/usr/bin/env python3
"""test_conn_guard.py --part eviction|deadlines|lingering - the connection guard's rules one
by one, each against a real server (src/server/conn_guard.c; docs/operations.md
"Connection limits, deadlines and lingering close").

What it is for:
  eviction  - at --max-connections the connection idle longest gives way (silent ones that
              never sent a request before an older keep-alive one), a new connection is
              refused only when every connection is mid-request, and at
              --max-connections-per-ip the victim is taken from the same address even when
              another address holds an older idle connection; the metrics count each case.
  deadlines - --header-timeout closes a silent TCP connection and a TLS connection stuck in
              its headers; --min-body-rate closes a body sent below the rate but not one sent
              above it (that request is answered 200); a keep-alive connection between
              requests outlives the header deadline (--idle-timeout governs it).
  lingering - a 10 MB body with a Content-Length and no Expect gets a READABLE 413 from
              Python's http.client and from `curl -H 'Expect:'` (before the lingering close the
              client got a connection reset), as does an early 415; the server stays healthy,
              counts the lingering closes, and releases every descriptor.

What it must never do: listen anywhere but 127.0.0.1, run longer than ~60 s, or leave the
server or a socket behind.
"""

import argparse
import http.client
import json
import os
import shutil
import socket
import ssl
import subprocess
import sys
import tempfile
import threading
import time

import harness as H


def closed_by_server(s, wait=0.0):
    """True when the server closed s (end of stream, reset); waits up to `wait` seconds."""
    deadline = time.monotonic() + wait
    while True:
        s.settimeout(max(0.01, min(0.2, deadline - time.monotonic())))
        try:
            d = s.recv(4096)
            if not d:
                return True
            # TLS: session tickets or an alert; keep reading
        except (socket.timeout, ssl.SSLWantReadError):
            pass
        except (OSError, ssl.SSLError):
            return True
        if time.monotonic() >= deadline:
            return False


def tcp(port, src="127.0.0.1"):
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.bind((src, 0))
    s.connect(("127.0.0.1", port))
    return s


def tls(port, ctx, src="127.0.0.1"):
    raw = socket.create_connection(("127.0.0.1", port), timeout=5, source_address=(src, 0))
    return ctx.wrap_socket(raw, server_hostname="localhost")


def metrics_of(srv):
    m = srv.metrics()
    out = {}
    for lim in ("global", "per-ip"):
        out["evicted_" + lim] = H.metric_sum(m, "gpu_admission_connections_evicted_total",
                                             'limit="%s"' % lim)
        out["refused_" + lim] = H.metric_sum(m, "gpu_admission_connections_refused_total",
                                             'limit="%s"' % lim)
    for r in ("header-timeout", "body-too-slow", "lingering-close"):
        out[r] = H.metric_sum(m, "gpu_admission_connections_closed_total", 'reason="%s"' % r)
    out["open"] = H.metric_sum(m, "gpu_admission_open_connections")
    return out


BODY_HDR = ("POST /validate HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n"
            "Content-Length: %d\r\n\r\n")


def part_eviction(binary, policies, certs, work, ctx, body, problems, result):
    # --- global limit: mid-request connections are never evicted; idle ones give way
    with H.Server(binary, policies, cert_dir=certs, workdir=os.path.join(work, "g"),
                  extra=["--max-connections", "4", "--max-connections-per-ip", "0"]) as srv:
        srv.wait_ready(ctx)
        time.sleep(0.3)
        busy = []
        for _ in range(4):  # mid-request: headers done, body still coming
            s = tls(srv.port, ctx)
            s.sendall((BODY_HDR % 1000).encode() + b"{")
            busy.append(s)
        time.sleep(0.3)
        try:
            st, _, _ = H.one_request(srv.port, ctx, "POST", "/validate", body, timeout=3)
            problems.append("all 4 connections mid-request, yet a 5th was served (HTTP %s)"
                            % st)
        except (OSError, ssl.SSLError, http.client.HTTPException):
            pass
        m = metrics_of(srv)
        result["global_all_busy"] = m
        if m["refused_global"] != 1 or m["evicted_global"]:
            problems.append("all mid-request: want refused{global}=1 and no eviction, got %s" % m)
        if any(closed_by_server(s) for s in busy):
            problems.append("a mid-request connection was closed to make room")
        for s in busy:
            s.close()
        time.sleep(0.5)
        keep = H.Conn(srv.port, ctx)
        st, _, _, _ = keep.request("POST", "/validate", body)  # then idle between requests
        time.sleep(0.2)
        silent = []
        for _ in range(3):  # ages 30 ms apart: the guard's clock counts milliseconds, and
            silent.append(tcp(srv.port))  # three connects in one ms are the same age
            time.sleep(0.03)
        time.sleep(0.3)
        st, _, _ = H.one_request(srv.port, ctx, "POST", "/validate", body)
        if st != 200:
            problems.append("at the limit with idle connections a new request got HTTP %s" % st)
        # Connections that never carried a request give way first, oldest first: the older
        # keep-alive one (the API server's) stays, the oldest silent one goes.
        if not closed_by_server(silent[0], wait=1):
            problems.append("the oldest silent connection (never sent a request) was not the "
                            "one evicted")
        if closed_by_server(keep.c.sock):
            problems.append("a keep-alive connection that had served a request was evicted "
                            "while silent ones were open")
        if any(closed_by_server(s) for s in silent[1:]):
            problems.append("a younger silent connection was evicted instead of the oldest")
        m = metrics_of(srv)
        result["global_idle"] = m
        if m["evicted_global"] != 1:
            problems.append("want exactly one global eviction, got %s" % m)
        keep.close()
        for s in silent:
            s.close()

    # --- per-address limit: the victim comes from the same address
    with H.Server(binary, policies, cert_dir=certs, workdir=os.path.join(work, "p"),
                  extra=["--max-connections-per-ip", "2"]) as srv:
        srv.wait_ready(ctx)
        time.sleep(0.3)
        other = tcp(srv.port, "127.0.0.3")  # oldest of all, another address
        time.sleep(0.1)
        mine = []
        for _ in range(2):  # apart, so their ages differ whichever worker accepts them
            mine.append(tcp(srv.port, "127.0.0.2"))
            time.sleep(0.1)
        time.sleep(0.3)
        c = H.Conn(srv.port, ctx)
        raw = socket.create_connection(("127.0.0.1", srv.port), timeout=5,
                                       source_address=("127.0.0.2", 0))
        c.c = http.client.HTTPSConnection("127.0.0.1", srv.port, timeout=5, context=ctx)
        c.c.sock = ctx.wrap_socket(raw, server_hostname="localhost")
        st, _, _, _ = c.request("POST", "/validate", body)
        c.close()
        if st != 200:
            problems.append("per-ip: the new connection got HTTP %s" % st)
        if not closed_by_server(mine[0], wait=1) or closed_by_server(mine[1]):
            problems.append("per-ip: the oldest connection of 127.0.0.2 (only) must be evicted")
        if closed_by_server(other):
            problems.append("per-ip: 127.0.0.3's connection was evicted for 127.0.0.2's")
        m = metrics_of(srv)
        result["per_ip"] = m
        if m["evicted_per-ip"] != 1 or m["evicted_global"]:
            problems.append("per-ip: want one per-ip eviction, got %s" % m)
        for s in mine + [other]:
            s.close()


def part_deadlines(binary, policies, certs, work, ctx, body, problems, result):
    with H.Server(binary, policies, cert_dir=certs, workdir=work,
                  extra=["--header-timeout", "2s", "--min-body-rate", "2KiB/s"]) as srv:
        srv.wait_ready(ctx)
        # a valid review padded with trailing whitespace to 48 KiB, sent at ~4 KiB/s
        padded = body + b" " * (48 * 1024 - len(body))
        fast = tls(srv.port, ctx)
        slow = tls(srv.port, ctx)
        t0 = time.monotonic()
        silent_tcp = tcp(srv.port)
        stuck = tls(srv.port, ctx)
        stuck.sendall(b"POST /validate HTTP/1.1\r\nHost: localhost\r\n")
        keep = H.Conn(srv.port, ctx)
        st1, _, _, _ = keep.request("POST", "/validate", body)
        fast.sendall((BODY_HDR % len(padded)).encode())
        slow.sendall((BODY_HDR % 100000).encode())
        closed = {}
        fast_status = [None]

        def feed():
            try:
                for i in range(0, len(padded), 1024):
                    fast.sendall(padded[i:i + 1024])
                    time.sleep(0.25)
                fast.settimeout(10)
                fast_status[0] = fast.recv(64).split(b" ")[1].decode()
            except (OSError, ssl.SSLError, IndexError) as e:
                fast_status[0] = repr(e)

        th = threading.Thread(target=feed, daemon=True)
        th.start()
        while time.monotonic() < t0 + 14:
            for name, s in (("silent_tcp", silent_tcp), ("stuck_headers", stuck)):
                if name not in closed and closed_by_server(s):
                    closed[name] = round(time.monotonic() - t0, 2)
            if "slow_body" not in closed:
                try:
                    slow.settimeout(0.2)
                    slow.send(b"x" * 1024)  # 1 KiB/s: half the minimum
                except (OSError, ssl.SSLError):
                    closed["slow_body"] = round(time.monotonic() - t0, 2)
                if "slow_body" not in closed and closed_by_server(slow):
                    closed["slow_body"] = round(time.monotonic() - t0, 2)
            time.sleep(max(0.0, 1 - (time.monotonic() - t0) % 1))
        th.join(timeout=15)
        st2, _, _, _ = keep.request("POST", "/validate", body)  # idle 14 s > header deadline
        result["closed_at_s"] = closed
        result["fast_body_status"] = fast_status[0]
        result["keepalive_after_14s_idle"] = st2
        for name, lo, hi in (("silent_tcp", 1.9, 4.5), ("stuck_headers", 1.9, 4.5),
                             ("slow_body", 9.5, 13.5)):
            t = closed.get(name)
            if t is None or not lo <= t <= hi:
                problems.append("%s: closed at %s s, want %.1f-%.1f s" % (name, t, lo, hi))
        if fast_status[0] != "200":
            problems.append("a body sent at ~4 KiB/s (above --min-body-rate 2KiB/s) was not "
                            "answered 200: %s" % fast_status[0])
        if st1 != 200 or st2 != 200:
            problems.append("keep-alive connection between requests: %s then %s" % (st1, st2))
        m = metrics_of(srv)
        result["metrics"] = m
        if m["header-timeout"] != 2 or m["body-too-slow"] != 1:
            problems.append("want header-timeout 2, body-too-slow 1: %s" % m)
        for s in (fast, slow, silent_tcp, stuck):
            s.close()
        keep.close()


def part_lingering(binary, policies, certs, work, ctx, body, problems, result):
    cafile = os.path.join(certs, "ca.crt")
    big = b'{"pad":"' + b"x" * (10 * 1000 * 1000) + b'"}'
    bigfile = os.path.join(work, "big.json")
    with open(bigfile, "wb") as f:
        f.write(big)
    with H.Server(binary, policies, cert_dir=certs, workdir=work) as srv:
        srv.wait_ready(ctx)
        time.sleep(0.3)
        fds0 = H.proc_fd_count(srv.pid)
        got = []
        for ctype, want in (("application/json", 413), ("application/json", 413),
                            ("text/plain", 415)):
            c = http.client.HTTPSConnection("localhost", srv.port, context=ctx, timeout=15)
            try:
                payload = big if want == 413 else big[:1000000]
                c.request("POST", "/validate", body=payload, headers={"Content-Type": ctype})
                r = c.getresponse()
                data = r.read()
                H.parse_status(data, want)
                got.append(r.status)
                if r.status != want:
                    problems.append("http.client: HTTP %d, want %d" % (r.status, want))
            except Exception as e:
                got.append(repr(e))
                problems.append("http.client, %d-byte body: no readable %d: %r"
                                % (len(payload), want, e))
            finally:
                c.close()
        result["http_client"] = got
        curl = shutil.which("curl")
        if not curl:
            problems.append("curl not found (scripts/setup.sh test installs it)")
        else:
            p = subprocess.run([curl, "-sS", "--max-time", "20", "--cacert", cafile,
                                "-H", "Expect:", "-H", "Content-Type: application/json",
                                "--data-binary", "@" + bigfile, "-w", "\nHTTP %{http_code}",
                                "https://localhost:%d/validate" % srv.port],
                               capture_output=True, timeout=30)
            out = p.stdout.decode("utf-8", "replace")
            result["curl"] = {"rc": p.returncode, "tail": out[-40:],
                              "stderr": p.stderr.decode("utf-8", "replace")[-200:]}
            if p.returncode != 0 or not out.endswith("HTTP 413") or \
                    '"code":413' not in out:
                problems.append("curl -H 'Expect:': no readable 413: rc %d, %r, %r"
                                % (p.returncode, out[-200:], p.stderr[-200:]))
        st, _, _ = H.one_request(srv.port, ctx, "POST", "/validate", body)
        if st != 200:
            problems.append("after the early answers a review got HTTP %s" % st)
        deadline = time.monotonic() + 15
        fds = H.proc_fd_count(srv.pid)
        while fds != fds0 and time.monotonic() < deadline:
            time.sleep(0.2)
            fds = H.proc_fd_count(srv.pid)
        result["fds_before_after"] = [fds0, fds]
        if fds != fds0:
            problems.append("descriptors not released after lingering: %s -> %s" % (fds0, fds))
        m = metrics_of(srv)
        result["metrics"] = m
        want_lingers = 3 + (1 if curl else 0)
        if m["lingering-close"] != want_lingers:
            problems.append("want %d lingering closes counted: %s" % (want_lingers, m))
        rc = srv.terminate(timeout=30)
        if rc != 0:
            problems.append("exit code after SIGTERM: %s" % rc)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin")
    ap.add_argument("--policies", default=os.path.join(H.REPO, "policies"))
    ap.add_argument("--part", choices=["eviction", "deadlines", "lingering"], required=True)
    a = ap.parse_args()
    binary = H.find_bin(a.bin)
    work = tempfile.mkdtemp(prefix="gpa-abuse-guard-")
    certs = H.make_certs(binary, os.path.join(work, "certs"))
    ctx = H.client_context(os.path.join(certs, "ca.crt"))
    body = H.dumps(H.review(H.pod("good", "research-x", gpus=1)))
    if isinstance(body, str):
        body = body.encode()
    problems, result = [], {"part": a.part}
    {"eviction": part_eviction, "deadlines": part_deadlines,
     "lingering": part_lingering}[a.part](binary, a.policies, certs, work, ctx, body,
                                          problems, result)
    return H.finish(problems, work, "ABUSE-GUARD-RESULT " + json.dumps(result, sort_keys=True))


if __name__ == "__main__":
    sys.exit(main())
