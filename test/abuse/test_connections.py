#!/usr/bin/env python3
"""test_connections.py --scenario raised|per-ip|global-limit - connection-level abuse while
a well-behaved client is measured.

What it is for: showing that hostile or broken clients cannot starve the API server's calls.
While the flood is up, a well-behaved client in its own process (one persistent keep-alive
connection like the API server's, plus a fresh TLS connection per request) keeps calling
/validate; its requests must all succeed with p99 < 50 ms (the bar is raised to 2x the
no-flood p99 when the machine is so busy that the baseline itself nears 50 ms; starvation
shows as seconds either way; handshakes are judged against 250 ms), the server must stay up
and its RSS bounded. The flood, all at once:
  - N idle TCP connections that never start TLS (N = $GPA_ABUSE_IDLE_CONNS, default 2000);
  - clients that complete the TLS handshake and then send nothing;
  - slow-drip senders: TLS, then request headers at 1 byte/s;
  - slow-drip bodies: complete headers, then the body at 1 byte/s.
Scenarios: raised - limits above the flood and --idle-timeout 5s, all from 127.0.0.1 (every
silent connection must be closed by the server during the test); per-ip - default limits,
the flood from 127.0.0.2 (the per-address limit protects the client on 127.0.0.1);
global-limit - default limits, the flood spread over 127.0.0.2-9 to pass --max-connections
(idle flood connections give way to the client's new ones, so both kinds are held to the
bar; test_flood.py is the full proof).

What it must never do: listen anywhere but 127.0.0.1 (client sockets use loopback source
addresses 127.0.0.1-9 to play different pods), run longer than ~60 s, or leave the server
or any socket behind (everything is closed in finally blocks).
"""

import argparse
import json
import multiprocessing
import os
import select
import socket
import ssl
import sys
import tempfile
import threading
import time

import harness as H


def _src(ips, i):
    return ips[i % len(ips)]


def open_tcp(port, n, deadline, ips):
    """Up to n connected sockets; stops early when the server's backlog is full (3 connects
    in a row time out: it stopped accepting, which is what a connection limit looks like)."""
    socks = []
    misses = 0
    for i in range(n):
        if time.monotonic() > deadline or misses >= 3:
            break
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        s.settimeout(1)
        try:
            s.bind((_src(ips, i), 0))
            s.connect(("127.0.0.1", port))
            misses = 0
        except OSError:
            s.close()
            misses += 1
            continue
        s.setblocking(False)
        socks.append(s)
    return socks


def open_tls(port, ctx, n, deadline, ips):
    socks = []
    for i in range(n):
        if time.monotonic() > deadline:
            break
        try:
            raw = socket.create_connection(("127.0.0.1", port), timeout=5,
                                           source_address=(_src(ips, i), 0))
        except OSError:
            continue
        try:
            s = ctx.wrap_socket(raw, server_hostname="localhost")
        except (OSError, ssl.SSLError):
            raw.close()
            continue
        socks.append(s)
    return socks


def closed_by_peer(s):
    """True when the server has closed this connection (EOF or reset is readable).
    poll, not select: these fds are far above FD_SETSIZE."""
    try:
        fd = s.fileno()
        if fd < 0:
            return True
        p = select.poll()
        p.register(fd, select.POLLIN | select.POLLERR | select.POLLHUP)
        ev = p.poll(0)
        if not ev:
            return False
        if ev[0][1] & (select.POLLERR | select.POLLHUP):
            return True
        if isinstance(s, ssl.SSLSocket):
            s.setblocking(False)
            try:
                return s.recv(1) == b""
            except ssl.SSLWantReadError:
                return False
        # plain TCP: the server says goodbye with a TLS alert record (0x15), then FIN
        got = b""
        for _ in range(8):
            try:
                d = s.recv(4096)
            except BlockingIOError:
                return got[:1] == b"\x15"
            if not d:
                return True
            got += d
        return got[:1] == b"\x15"
    except BlockingIOError:
        return False
    except (OSError, ssl.SSLError, ValueError):
        return True


PHASES = ("baseline", "flood", "after")


def good_client(port, cafile, body, phase, stop, q):
    """The API server's stand-in, in a child process: alternately a request on one
    persistent connection and one on a fresh connection, every ~10 ms, until stop.
    keepalive: request time on the persistent connection; fresh: request time on a new
    connection after its handshake; handshake: the TLS handshake itself (mostly client CPU
    in Python: judged against a looser bar, it shows starvation, not speed)."""
    ctx = H.client_context(cafile)
    lat = {ph: {"keepalive": [], "fresh": [], "handshake": []} for ph in PHASES}
    errors = {"keepalive": [], "fresh": []}
    keep = H.Conn(port, ctx, timeout=10)
    i = 0
    while not stop.is_set() and i < 100000:
        i += 1
        kind = "keepalive" if i % 2 else "fresh"
        c = keep if kind == "keepalive" else H.Conn(port, ctx, timeout=10)
        ph = PHASES[phase.value]
        try:
            if kind == "fresh":
                t0 = time.monotonic()
                c._connect()
                lat[ph]["handshake"].append((time.monotonic() - t0) * 1000)
            t0 = time.monotonic()
            st, _, data, _ = c.request("POST", "/validate", body)
            dt = time.monotonic() - t0
            if st != 200:
                errors[kind].append("%s: HTTP %d" % (ph, st))
            else:
                H.parse_review_response(data)
                lat[ph][kind].append(dt * 1000)
        except Exception as e:
            errors[kind].append("%s: %r" % (ph, e))
            if kind == "keepalive":
                keep.close()
        finally:
            if kind == "fresh":
                c.close()
        stop.wait(0.01)
    keep.close()
    q.put((lat, errors))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin")
    ap.add_argument("--policies", default=os.path.join(H.REPO, "policies"))
    ap.add_argument("--idle", type=int,
                    default=int(os.environ.get("GPA_ABUSE_IDLE_CONNS", "2000")))
    ap.add_argument("--tls-silent", type=int, default=100)
    ap.add_argument("--slow", type=int, default=50)
    ap.add_argument("--flood-seconds", type=float, default=12)
    ap.add_argument("--p99-ms", type=float,
                    default=float(os.environ.get("GPA_ABUSE_P99_MS", "50")))
    ap.add_argument("--handshake-p99-ms", type=float,
                    default=float(os.environ.get("GPA_ABUSE_HANDSHAKE_P99_MS", "250")))
    ap.add_argument("--rss-bound-mb", type=float, default=256)
    ap.add_argument("--scenario", choices=["raised", "per-ip", "global-limit"], default="raised",
                    help="raised: limits above the flood, all clients on 127.0.0.1; per-ip: "
                    "default limits, the flood from 127.0.0.2; global-limit: default limits, "
                    "the flood spread over 127.0.0.2-9 so it exceeds --max-connections")
    a = ap.parse_args()
    extra = []
    if a.scenario == "raised":
        ips = ["127.0.0.1"]
        # a short idle timeout, so the flood outlives it: silent connections must be closed
        # by the server within the test while the slow-drip ones (never idle that long) stay
        extra = ["--max-connections", str(a.idle + a.tls_silent + 2 * a.slow + 512),
                 "--max-connections-per-ip", "0", "--idle-timeout", "5s"]
    elif a.scenario == "per-ip":
        ips = ["127.0.0.2"]
    else:
        ips = ["127.0.0.%d" % i for i in range(2, 10)]
    binary = H.find_bin(a.bin)
    need = a.idle + a.tls_silent + 2 * a.slow + 256
    nofile = H.raise_nofile(need)
    problems = []
    if nofile < need:
        H.log("abuse: RLIMIT_NOFILE hard limit %d < %d: scaling the idle flood down" %
              (nofile, need))
        a.idle = max(100, nofile - a.tls_silent - 2 * a.slow - 256)
    work = tempfile.mkdtemp(prefix="gpa-abuse-conn-")
    certs = H.make_certs(binary, os.path.join(work, "certs"))
    ctx = H.client_context(os.path.join(certs, "ca.crt"))
    body = H.dumps(H.review(H.pod("good", "research-x", gpus=1)))
    result = {"scenario": a.scenario, "server_flags": extra, "idle_tcp": a.idle, "tls_silent": a.tls_silent, "slow_headers": a.slow,
              "slow_bodies": a.slow, "nofile": nofile}

    with H.Server(binary, a.policies, cert_dir=certs, workdir=work, extra=extra,
                  ready_timeout=60) as srv:
        srv.wait_ready(ctx, timeout=60)
        pid = srv.pid
        rss0 = H.proc_rss_kb(pid)
        stop = threading.Event()
        # the well-behaved client runs in its own process: in this one the flood's Python
        # code would hold the GIL and inflate the very latency being measured
        mp = multiprocessing.get_context("fork")
        phase = mp.Value("i", 0)
        cstop = mp.Event()
        q = mp.Queue()
        rss_peak = [rss0 or 0]
        gp = mp.Process(target=good_client, args=(srv.port, os.path.join(certs, "ca.crt"),
                                                  body, phase, cstop, q), daemon=True)

        def sampler():
            while not stop.wait(0.5):
                r = H.proc_rss_kb(pid)
                if r:
                    rss_peak[0] = max(rss_peak[0], r)

        sm = threading.Thread(target=sampler, daemon=True)
        gp.start()
        sm.start()
        time.sleep(3)
        phase.value = 1
        idle, silent, slow_h, slow_b = [], [], [], []
        t_flood = time.monotonic()
        try:
            deadline = t_flood + 20
            # hostile clients first take their TLS slots, then the idle TCP flood
            silent = open_tls(srv.port, ctx, a.tls_silent, deadline, ips)
            slow_h = open_tls(srv.port, ctx, a.slow, deadline, ips)
            slow_b = open_tls(srv.port, ctx, a.slow, deadline, ips)
            idle = open_tcp(srv.port, a.idle, deadline, ips)
            result["opened"] = {"idle_tcp": len(idle), "tls_silent": len(silent),
                                "slow_headers": len(slow_h), "slow_bodies": len(slow_b)}
            result["flood_open_s"] = round(time.monotonic() - t_flood, 2)
            hdr = (b"POST /validate HTTP/1.1\r\nHost: localhost\r\nContent-Type: "
                   b"application/json\r\nX-Slow: " + b"a" * 4000 + b"\r\n\r\n")
            body_hdr = (b"POST /validate HTTP/1.1\r\nHost: localhost\r\nContent-Type: "
                        b"application/json\r\nContent-Length: 100000\r\n\r\n")
            for s in slow_b:
                try:
                    s.sendall(body_hdr)
                except OSError:
                    pass
            t_end = time.monotonic() + a.flood_seconds
            k = 0
            while time.monotonic() < t_end:
                for s in slow_h:
                    try:
                        s.send(hdr[k % len(hdr):k % len(hdr) + 1])
                    except (OSError, ssl.SSLError):
                        pass
                for s in slow_b:
                    try:
                        s.send(b"{")
                    except (OSError, ssl.SSLError):
                        pass
                k += 1
                time.sleep(1.0)
                if not srv.alive():
                    problems.append("server died during the flood (rc %s)\n%s"
                                    % (srv.proc.returncode, srv.stderr_tail()))
                    break
            result["closed_by_server"] = {
                "idle_tcp": sum(1 for s in idle if closed_by_peer(s)),
                "tls_silent": sum(1 for s in silent if closed_by_peer(s)),
                "slow_headers": sum(1 for s in slow_h if closed_by_peer(s)),
                "slow_bodies": sum(1 for s in slow_b if closed_by_peer(s))}
            result["rss_kb_during_flood"] = H.proc_rss_kb(pid)
            result["fds_during_flood"] = H.proc_fd_count(pid)
        finally:
            for s in idle + silent + slow_h + slow_b:
                try:
                    s.close()
                except Exception:
                    pass
            phase.value = 2
        time.sleep(2)
        stop.set()
        cstop.set()
        try:
            lat, errors = q.get(timeout=60)
        except Exception:
            lat, errors = None, None
        gp.join(timeout=30)
        if gp.is_alive():
            gp.kill()
        if lat is None:
            problems.append("the well-behaved client process reported nothing")
            lat = {ph: {"keepalive": [], "fresh": [], "handshake": []}
                   for ph in PHASES}
            errors = {"keepalive": [], "fresh": []}
        sm.join(timeout=5)
        result["rss_kb_before"] = rss0
        result["rss_kb_peak"] = rss_peak[0]
        result["rss_kb_after"] = H.proc_rss_kb(pid)
        # the server recovers: a fresh client right after works
        st, _, _ = H.one_request(srv.port, ctx, "POST", "/validate", body)
        if st != 200:
            problems.append("after the flood a fresh request got HTTP %s" % st)
        rc = srv.terminate(timeout=60)
        if rc != 0:
            problems.append("server exit code after SIGTERM: %s\n%s" % (rc, srv.stderr_tail()))

    for ph in PHASES:
        for kind in ("keepalive", "fresh", "handshake"):
            v = lat[ph][kind]
            result["%s_%s_n" % (ph, kind)] = len(v)
            result["%s_%s_p50_ms" % (ph, kind)] = round(H.percentile(v, 50), 2) if v else None
            result["%s_%s_p99_ms" % (ph, kind)] = round(H.percentile(v, 99), 2) if v else None
            result["%s_%s_max_ms" % (ph, kind)] = round(max(v), 2) if v else None
    result["well_behaved_errors"] = {k: len(v) for k, v in errors.items()}
    if a.scenario == "raised" and "closed_by_server" in result:
        cl, op = result["closed_by_server"], result["opened"]
        for k in ("idle_tcp", "tls_silent"):
            if cl[k] != op[k]:
                problems.append("--idle-timeout 5s: only %d of %d %s connections were closed "
                                "after %ds" % (cl[k], op[k], k, a.flood_seconds))
    # at the global limit the idle flood connections give way to new ones (eviction), so
    # new connections are held to the same bar as the established one
    kinds = ("keepalive", "fresh")
    for kind in kinds:
        if errors[kind]:
            problems.append("well-behaved %s client had %d failed requests: %s"
                            % (kind, len(errors[kind]), errors[kind][:5]))
    bars = {"keepalive": a.p99_ms, "fresh": a.p99_ms, "handshake": a.handshake_p99_ms}
    min_samples = 20
    # the handshake waits in the listen queue behind the 2,000 connects of the flood's first
    # seconds; test_flood.py holds connect + handshake + request to its bar, this scenario
    # (a bigger, slower-to-open flood) only records it
    hs = () if a.scenario == "global-limit" else ("handshake",)
    for kind in kinds + hs:
        v = lat["flood"][kind]
        if len(v) < min_samples:
            problems.append("too few well-behaved %s requests during the flood: %d"
                            % (kind, len(v)))
        else:
            # On a machine busy with other work the no-flood baseline itself can approach
            # the bar; the flood must then not make it more than 2x worse. Starvation (the
            # thing this test is about) shows as seconds, far past either bar.
            base = lat["baseline"][kind]
            bar = bars[kind]
            if len(base) >= 20 and 2 * H.percentile(base, 99) > bar:
                bar = 2 * H.percentile(base, 99)
                H.log("note: %s bar scaled to %.1f ms (2x the no-flood p99 %.1f ms: the "
                      "machine is busy)" % (kind, bar, H.percentile(base, 99)))
            result["%s_p99_bar_ms" % kind] = round(bar, 1)
            if H.percentile(v, 99) >= bar:
                problems.append("well-behaved %s p99 %.1f ms >= %.0f ms during the flood"
                                % (kind, H.percentile(v, 99), bar))
    if rss0 and rss_peak[0] - rss0 > a.rss_bound_mb * 1024:
        problems.append("RSS grew %d kB under the flood (bound %d MB)"
                        % (rss_peak[0] - rss0, a.rss_bound_mb))
    return H.finish(problems, work, "ABUSE-CONN-RESULT " + json.dumps(result, sort_keys=True))


if __name__ == "__main__":
    sys.exit(main())
