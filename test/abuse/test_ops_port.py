#!/usr/bin/env python3
"""test_ops_port.py - idle connections to the plain-HTTP ops port must not starve the probes.

What it is for: the kubelet's liveness and readiness probes hit /healthz and /readyz on the
ops (metrics) port, a new connection each time with a 1 s timeout. Any pod that can reach
that port (no NetworkPolicy by default) opens --flood idle TCP connections to it from its
own address (127.0.0.2 here); the probes, from the node's address (127.0.0.1), must still be
answered within 1 s, every time, for the whole flood. If they are not, the kubelet marks the
webhook unready (the Service drops it: with failurePolicy Fail no pod in scope can be
created) and then restarts it - a cluster-wide denial of pod creation from one pod.

This test found the gap (64 connections in total, no per-address limit, 30 s idle timeout);
the server now caps the ops listener per address (docs/security.md).

What it must never do: bind anything but 127.0.0.1, run longer than ~30 s, or leave the
server running.
"""

import argparse
import http.client
import json
import os
import socket
import sys
import tempfile
import time

import harness as H


def probe(port, path, timeout=1.0):
    t0 = time.monotonic()
    try:
        c = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout,
                                       source_address=("127.0.0.1", 0))
        c.request("GET", path)
        st = c.getresponse().status
        c.close()
        return st, time.monotonic() - t0
    except Exception as e:
        return repr(e), time.monotonic() - t0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin")
    ap.add_argument("--policies", default=os.path.join(H.REPO, "policies"))
    ap.add_argument("--flood", type=int, default=200)
    ap.add_argument("--seconds", type=float, default=10)
    a = ap.parse_args()
    binary = H.find_bin(a.bin)
    H.raise_nofile(a.flood + 256)
    work = tempfile.mkdtemp(prefix="gpa-abuse-ops-")
    certs = H.make_certs(binary, os.path.join(work, "certs"))
    ctx = H.client_context(os.path.join(certs, "ca.crt"))
    problems, result = [], {"flood": a.flood}
    with H.Server(binary, a.policies, cert_dir=certs, workdir=work, ready_timeout=60) as srv:
        srv.wait_ready(ctx, timeout=60)
        socks = []
        try:
            for _ in range(a.flood):
                s = socket.socket()
                s.settimeout(1)
                try:
                    s.bind(("127.0.0.2", 0))
                    s.connect(("127.0.0.1", srv.metrics_port))
                    socks.append(s)
                except OSError:
                    s.close()
            result["opened"] = len(socks)
            outcomes = []
            t_end = time.monotonic() + a.seconds
            while time.monotonic() < t_end:
                for path in ("/healthz", "/readyz"):
                    st, dt = probe(srv.metrics_port, path)
                    outcomes.append((path, st, round(dt * 1000, 1)))
                time.sleep(1)
            result["probes"] = len(outcomes)
            bad = [o for o in outcomes if o[1] != 200]
            result["probes_failed"] = len(bad)
            if bad:
                problems.append("%d of %d kubelet-style probes failed while %d idle connections "
                                "held the ops port, e.g. %s"
                                % (len(bad), len(outcomes), len(socks), bad[:3]))
        finally:
            for s in socks:
                s.close()
        rc = srv.terminate(timeout=60)
        if rc != 0:
            problems.append("server exit code after SIGTERM: %s" % rc)
    return H.finish(problems, work, "ABUSE-OPS-RESULT " + json.dumps(result, sort_keys=True))


if __name__ == "__main__":
    sys.exit(main())
