#!/usr/bin/env python3
"""test_amplification.py - the largest pods the API server will forward must not blow the
webhook's memory or time budget.

What it is for: the API server accepts request bodies up to 3 MiB, so a tenant can submit a
pod that big; the webhook answers it inside the chart's memory limit (128 MiB) or the
container is OOM-killed - and with failurePolicy Fail, pod creation stops cluster-wide while
it restarts. For each shape a tenant controls (nodeSelectorTerms, containers, tolerations,
labels), a pod as close to 3 MiB as the shape allows goes through /mutate and /validate of a
real server; the server's peak RSS (VmHWM) must stay under --rss-limit-mb (default 100, the
chart's 128Mi minus headroom; reported only under ASan, whose quarantine holds freed memory),
each answer must come within --seconds (default 4, under the webhook's timeoutSeconds 5), be
a well-formed AdmissionReview and be no larger than the pod it answers.

This test found the one amplifying shape: the pool's node requirements were ANDed into every
nodeSelectorTerm with one patch op per term (a 3 MiB pod with ~47,000 terms: a ~29 MB answer,
~250 MB peak RSS); the engine now refuses more than 64 terms (affinity-too-large).

What it must never do: listen anywhere but 127.0.0.1 or leave the server running.
"""

import argparse
import json
import os
import sys
import tempfile
import time

import harness as H

API_SERVER_MAX_BODY = 3 * 1024 * 1024


def biggest(build, limit=API_SERVER_MAX_BODY):
    """The largest n whose review body fits in limit; returns the review."""
    lo, hi = 1, 1
    while len(H.dumps(H.review(build(hi)))) <= limit:
        lo, hi = hi, hi * 2
    while lo < hi - 1:
        m = (lo + hi) // 2
        if len(H.dumps(H.review(build(m)))) <= limit:
            lo = m
        else:
            hi = m
    return lo, H.review(build(lo))


def shapes():
    ns = "research-x"
    term = {"matchExpressions": [{"key": "k", "operator": "In", "values": ["v"]}]}
    return {
        "gpu-containers": lambda n: H.pod("amp", ns, containers=[{
            "name": "c%d" % i, "image": "i", "resources": {
                "limits": {"nvidia.com/gpu": "1"}, "requests": {"nvidia.com/gpu": "1"}}}
            for i in range(n)]),
        "tolerations": lambda n: H.pod("amp", ns, gpus=2, extra_spec={"tolerations": [
            {"key": "t%d" % i, "operator": "Exists"} for i in range(n)]}),
        "labels": lambda n: H.pod("amp", ns, gpus=2, labels={"k%d" % i: "v" for i in range(n)}),
        # last: VmHWM only grows, so the worst shape must not hide the others' figures
        "nodeSelectorTerms": lambda n: H.pod("amp", ns, gpus=2, extra_spec={"affinity": {
            "nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [term] * n}}}}),
    }


def vm_hwm_kb(pid):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    return None


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin")
    ap.add_argument("--policies", default=os.path.join(H.REPO, "policies"))
    ap.add_argument("--rss-limit-mb", type=float, default=100)
    ap.add_argument("--seconds", type=float, default=4)
    a = ap.parse_args()
    binary = H.find_bin(a.bin)
    work = tempfile.mkdtemp(prefix="gpa-abuse-amp-")
    certs = H.make_certs(binary, os.path.join(work, "certs"))
    ctx = H.client_context(os.path.join(certs, "ca.crt"))
    problems, results = [], []
    with H.Server(binary, a.policies, cert_dir=certs, workdir=work, ready_timeout=60,
                  extra=["--threads", "1"]) as srv:
        srv.wait_ready(ctx, timeout=60)
        for name, build in shapes().items():
            n, rv = biggest(build)
            body = H.dumps(rv)
            for hook in ("validate", "mutate"):
                c = H.Conn(srv.port, ctx, timeout=60)
                try:
                    st, _, data, dt = c.request("POST", "/" + hook, body)
                except Exception as e:
                    problems.append("%s/%s: no answer: %r" % (name, hook, e))
                    continue
                finally:
                    c.close()
                hwm = vm_hwm_kb(srv.pid)
                r = {"shape": name, "n": n, "hook": hook, "request_bytes": len(body),
                     "status": st, "response_bytes": len(data), "seconds": round(dt, 2),
                     "peak_rss_mb": round(hwm / 1024.0, 1)}
                results.append(r)
                if st != 200:
                    problems.append("%s/%s: HTTP %s" % (name, hook, st))
                else:
                    try:
                        H.parse_review_response(data, rv["request"]["uid"])
                    except H.Malformed as e:
                        problems.append("%s/%s: %s" % (name, hook, e))
                if dt > a.seconds:
                    problems.append("%s/%s: %.1f s for one answer (> %.0f s)"
                                    % (name, hook, dt, a.seconds))
                if len(data) > len(body):
                    problems.append("%s/%s: the answer (%d bytes) is larger than the pod (%d)"
                                    % (name, hook, len(data), len(body)))
                # ASan's quarantine keeps freed memory: RSS says nothing there (report only)
                if not H.sanitized_build() and hwm / 1024.0 > a.rss_limit_mb:
                    problems.append("%s/%s: server peak RSS %.0f MB (> %.0f MB) for a %d-byte "
                                    "pod; answer %d bytes" % (name, hook, hwm / 1024.0,
                                                             a.rss_limit_mb, len(body),
                                                             len(data)))
        rc = srv.terminate(timeout=60)
        if rc != 0:
            problems.append("server exit code after SIGTERM: %s" % rc)
    for r in results:
        H.log("ABUSE-AMP " + json.dumps(r))
    return H.finish(problems, work)


if __name__ == "__main__":
    sys.exit(main())
