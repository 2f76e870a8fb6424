#!/usr/bin/env python3
"""soak.py DURATION - keep-alive load on a real server while policies and certificates roll.

What it is for: proving that reloads and rotations done the way Kubernetes does them (a
ConfigMap/Secret volume's `..data` symlink swap) never fail a request, never serve a
half-loaded policy set or a broken certificate, and leak neither memory nor descriptors.

  - N threads keep persistent TLS connections and POST /mutate and /validate in a loop (one
    thread reconnects every 20 requests so handshakes happen during rotations too);
  - every second the policy directory gets the next of: good set B, a broken set (unknown
    key), good set A, a broken set (YAML syntax error), ... ; every third swap also sends
    SIGHUP, racing the inotify-driven reload;
  - every 10 s the certificate directory gets the next of: good pair 2, a broken pair (key of
    another certificate), good pair 1, a broken pair (truncated PEM), ... ;
  - each response must be byte-for-byte what `gpu-admission review` answers for the same
    request under the set whose revision the response names (the gpu-admission.io/policy
    annotation in the patch); responses without a patch must equal A's or B's answer;
  - a fresh handshake 2 s after each rotation must show the newest GOOD certificate;
  - RSS and open fds of the server are sampled every second: fds must not grow, RSS must not
    grow more than a bound after warm-up (report only under ASan, whose quarantine grows RSS
    by design; LeakSanitizer then checks leaks at the SIGTERM exit, which must be 0).

  - the client-side p99 latency must stay under --max-p99-ms (50 ms release, 150 ms under
    sanitizers): an answer that waits for a kernel timer (200 ms, the TCP_CORK ceiling) on a
    share of requests shows here first.

What it must never do: bind anything but 127.0.0.1, run unbounded (DURATION caps it), or
leave the server running (harness.Server is killed on every exit path).

Run: test/soak/soak.py 600 --bin build/gpu-admission (or GPA_BIN=build/gpu-admission); set
GPA_SANITIZED=1 for a sanitizer build (ctest does). Exit 0 when every assertion holds;
prints a summary JSON line "SOAK-RESULT {...}".
"""

import argparse
import json
import signal
import os
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "abuse"))
import harness as H  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
SETS = os.path.join(HERE, "sets")


def build_requests():
    """(name, hook, review dict). Chosen so sets A and B answer several of them differently."""
    P = H.pod
    reqs = [
        ("research-1gpu", P("r1", "research-x", gpus=1)),
        ("research-mem", P("r2", "research-y", gpus=1,
                           annotations={"gpu-admission.io/gpu-memory": "15Gi"})),
        ("platform-1gpu", P("p1", "ml-platform", gpus=1)),
        ("training-4gpu", P("t1", "ml-platform", gpus=4)),
        ("sandbox-gpu", P("s1", "sandbox", gpus=1)),
        ("plain-pod", P("n1", "default")),
        ("untrusted-visible-devices", P("u1", "research-x", containers=[
            {"name": "c", "image": "x", "env": [{"name": "NVIDIA_VISIBLE_DEVICES",
                                                 "value": "all"}]}])),
    ]
    out = []
    for i, (name, pod) in enumerate(reqs):
        for hook in ("mutate", "validate"):
            uid = "5a0c0000-0000-0000-0000-%012d" % (i * 2 + (hook == "validate"))
            out.append((name, hook, H.review(pod, uid=uid)))
    # one v1beta1 review: the answer must come back in the version asked
    rv = H.review(reqs[0][1], uid="5a0c0000-0000-0000-0000-0000000000b1",
                  api_version="admission.k8s.io/v1beta1")
    out.append(("research-1gpu-v1beta1", "mutate", rv))
    return out


def expected_answers(binary, work, requests, set_dirs):
    """{(request index, revision): parsed response document} computed by the CLI."""
    exp = {}
    for idx, (name, hook, rv) in enumerate(requests):
        f = os.path.join(work, "req-%d.json" % idx)
        with open(f, "wb") as fh:
            fh.write(H.dumps(rv))
        for rev, d in set_dirs.items():
            rc, out, err, _ = H.run_cli(binary, ["review", hook, "--policies", d, f])
            if rc not in (0, 2):
                raise RuntimeError("review %s %s under %s: rc=%s %s" % (hook, name, d, rc, err))
            exp[(idx, rev)] = json.loads(out)
    return exp


class Stats:
    def __init__(self):
        self.lock = threading.Lock()
        self.ok = 0
        self.failures = []     # transport errors, non-200, malformed
        self.mismatches = []   # well-formed but not what the named set answers
        self.by_rev = {}
        self.rev_seq_last = None
        self.transitions = 0
        self.latencies = []

    def fail(self, lst, msg):
        with self.lock:
            if len(lst) < 20:
                lst.append(msg)
            else:
                lst.append(None)  # count only


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("duration", type=float, help="seconds of load")
    ap.add_argument("--bin", help="the gpu-admission binary to serve (else $GPA_BIN)")
    ap.add_argument("--threads", type=int, default=4)
    ap.add_argument("--policy-period", type=float, default=1.0)
    ap.add_argument("--cert-period", type=float, default=10.0)
    ap.add_argument("--rss-growth-kb", type=int,
                    default=int(os.environ.get("GPA_SOAK_RSS_GROWTH_KB", "8192")))
    ap.add_argument("--max-p99-ms", type=float,
                    help="fail when the client-side p99 latency is above this (default 50 ms; "
                         "150 ms under sanitizers, whose requests are ~4x slower and whose p99 "
                         "was 22-29 ms on the 2-core reference machine)")
    ap.add_argument("--keep", action="store_true", help="keep the work dir")
    a = ap.parse_args()
    binary = H.find_bin(a.bin)
    san = H.sanitized_build()
    if a.max_p99_ms is None:
        # a healthy release server measured p99 4.5 ms here at load average 3-6 and 21.8 ms
        # at 14 (2 cores shared with other jobs); both bounds stay below a stalled answer's
        # 200 ms
        a.max_p99_ms = 150.0 if san else 50.0
    work = tempfile.mkdtemp(prefix="gpa-soak-")
    H.log("soak: work dir", work, "binary", binary, "sanitized", san)

    # -- policy sets and their revisions
    dir_a, dir_b = os.path.join(SETS, "a"), os.path.join(SETS, "b")
    rev_a, rev_b = H.policy_revision(binary, dir_a), H.policy_revision(binary, dir_b)
    assert rev_a != rev_b, "sets A and B must differ in meaning"
    for broken in ("broken-key", "broken-syntax"):
        rc, out, err, _ = H.run_cli(binary, ["check", os.path.join(SETS, broken)])
        assert rc not in (0, None) and rc > 0, "check accepted broken set %s rc=%s" % (broken, rc)
    sets = {"A": H.read_set(dir_a), "B": H.read_set(dir_b),
            "broken-key": H.read_set(os.path.join(SETS, "broken-key")),
            "broken-syntax": H.read_set(os.path.join(SETS, "broken-syntax"))}
    requests = build_requests()
    expected = expected_answers(binary, work, requests, {rev_a: dir_a, rev_b: dir_b})
    differing = [requests[i][0] + "/" + requests[i][1] for i in range(len(requests))
                 if expected[(i, rev_a)] != expected[(i, rev_b)]]
    assert len(differing) >= 3, "sets A and B answer too few requests differently: %s" % differing
    bodies = [H.dumps(rv) for (_, _, rv) in requests]

    # -- certificates: two good pairs (different CAs, the client trusts both), two broken ones
    c1 = H.make_certs(binary, os.path.join(work, "pair1"))
    c2 = H.make_certs(binary, os.path.join(work, "pair2"))
    bundle = os.path.join(work, "ca-bundle.crt")
    with open(bundle, "w") as f:
        for c in (c1, c2):
            f.write(open(os.path.join(c, "ca.crt")).read())

    def pair(d):
        return {"tls.crt": open(os.path.join(d, "tls.crt"), "rb").read(),
                "tls.key": open(os.path.join(d, "tls.key"), "rb").read()}
    good1, good2 = pair(c1), pair(c2)
    fp1 = H.cert_fingerprint_pem(os.path.join(c1, "tls.crt"))
    fp2 = H.cert_fingerprint_pem(os.path.join(c2, "tls.crt"))
    broken_mismatch = {"tls.crt": good1["tls.crt"], "tls.key": good2["tls.key"]}
    broken_trunc = {"tls.crt": good2["tls.crt"][:len(good2["tls.crt"]) // 2],
                    "tls.key": good2["tls.key"]}
    cert_cycle = [("good2", good2, fp2), ("broken-mismatch", broken_mismatch, None),
                  ("good1", good1, fp1), ("broken-truncated", broken_trunc, None)]

    poldir = H.AtomicDir(os.path.join(work, "policies"))
    poldir.publish(sets["A"])
    certdir = H.AtomicDir(os.path.join(work, "certs"))
    certdir.publish(good1)
    ctx = H.client_context(bundle)

    st = Stats()
    stop = threading.Event()
    result = {"duration_s": a.duration, "threads": a.threads, "sanitized": san}
    problems = []

    srv = H.Server(binary, poldir.path, cert_dir=certdir.path, workdir=work,
                   ready_timeout=60 if san else 30)
    with srv:
        srv.wait_ready(ctx, timeout=60)
        pid = srv.pid
        time.sleep(0.5)
        fd_base, rss_base = H.proc_fd_count(pid), H.proc_rss_kb(pid)
        H.log("soak: server pid %d port %d; fds %s rss %s kB before load"
              % (pid, srv.port, fd_base, rss_base))

        def worker(tid):
            conn = H.Conn(srv.port, ctx, timeout=10)
            reconnect_every = 20 if tid == 0 else 0
            n = 0
            while not stop.is_set():
                idx = (n * 7 + tid) % len(requests)
                name, hook, _ = requests[idx]
                n += 1
                if reconnect_every and n % reconnect_every == 0:
                    conn.close()
                try:
                    status, _, body, dt = conn.request("POST", "/" + hook, bodies[idx])
                except Exception as e:
                    st.fail(st.failures, "%s/%s: %r" % (name, hook, e))
                    conn.close()
                    continue
                if status != 200:
                    st.fail(st.failures, "%s/%s: HTTP %d %r" % (name, hook, status, body[:200]))
                    continue
                try:
                    doc = json.loads(body)
                    resp, patch = H.parse_review_response(body, requests[idx][2]["request"]["uid"])
                except Exception as e:
                    st.fail(st.failures, "%s/%s: malformed: %s" % (name, hook, e))
                    continue
                rev = H.patch_revision(patch)
                if rev is not None:
                    if rev not in (rev_a, rev_b):
                        st.fail(st.mismatches, "%s/%s names unknown revision %s"
                                % (name, hook, rev))
                        continue
                    if doc != expected[(idx, rev)]:
                        st.fail(st.mismatches, "%s/%s differs from `review` under %s: %s"
                                % (name, hook, rev[:12], body[:300]))
                        continue
                elif doc != expected[(idx, rev_a)] and doc != expected[(idx, rev_b)]:
                    st.fail(st.mismatches, "%s/%s matches neither set: %s"
                            % (name, hook, body[:300]))
                    continue
                with st.lock:
                    st.ok += 1
                    st.latencies.append(dt)
                    if rev is not None:
                        st.by_rev[rev] = st.by_rev.get(rev, 0) + 1
                        if st.rev_seq_last is not None and rev != st.rev_seq_last:
                            st.transitions += 1
                        st.rev_seq_last = rev
            conn.close()

        samples = []  # (t, rss kB, fds)
        t_start = time.monotonic()

        def monitor():
            while not stop.is_set():
                if not srv.alive():
                    problems.append("server died during the soak (rc %s)" % srv.proc.returncode)
                    stop.set()
                    return
                samples.append((time.monotonic() - t_start, H.proc_rss_kb(pid),
                                H.proc_fd_count(pid)))
                stop.wait(1.0)

        policy_log = []
        hups = []

        def policy_roller():
            cycle = ["B", "broken-key", "A", "broken-syntax"]
            i = 0
            while not stop.wait(a.policy_period):
                name = cycle[i % len(cycle)]
                poldir.publish(sets[name])
                policy_log.append(name)
                i += 1
                if i % 3 == 0:
                    # an operator's SIGHUP racing the inotify-driven reload of the same swap
                    srv.signal(signal.SIGHUP)
                    hups.append(i)

        cert_log = []

        def cert_roller():
            i = 0
            current_fp = fp1
            while not stop.wait(a.cert_period):
                name, files, fp = cert_cycle[i % len(cert_cycle)]
                i += 1
                certdir.publish(files)
                if fp:
                    current_fp = fp
                if stop.wait(2.0):
                    return
                probe = H.Conn(srv.port, ctx, timeout=10)
                try:
                    probe._connect()
                    seen = probe.peer_cert_fingerprint()
                    status, _, _, _ = probe.request("POST", "/validate", bodies[0])
                    ok = seen == current_fp and status == 200
                    cert_log.append((name, ok))
                    if not ok:
                        problems.append("after rotation to %s the server presents %s, "
                                        "expected %s (HTTP %s)"
                                        % (name, seen[:16], current_fp[:16], status))
                except Exception as e:
                    cert_log.append((name, False))
                    problems.append("fresh handshake after rotation to %s failed: %r"
                                    % (name, e))
                finally:
                    probe.close()

        threads = [threading.Thread(target=worker, args=(i,), daemon=True)
                   for i in range(a.threads)]
        threads += [threading.Thread(target=f, daemon=True)
                    for f in (monitor, policy_roller, cert_roller)]
        for t in threads:
            t.start()
        stop.wait(a.duration)
        stop.set()
        for t in threads:
            t.join(timeout=30)
        load_s = time.monotonic() - t_start

        # fds after the clients are gone: must come back to the pre-load baseline
        fd_after = None
        for _ in range(50):
            fd_after = H.proc_fd_count(pid)
            if fd_after is not None and fd_after <= fd_base:
                break
            time.sleep(0.1)
        rss_after = H.proc_rss_kb(pid)
        metrics = None
        try:
            metrics = srv.metrics()
        except Exception as e:
            H.log("soak: /metrics unreachable: %r" % e)
        rc = srv.terminate(timeout=60)
        result["exit_code"] = rc
        if rc != 0:
            problems.append("server exit code after SIGTERM: %s\n%s" % (rc, srv.stderr_tail(30)))

    # -- figures
    warm = max(10.0, 0.1 * a.duration)
    warm_s = [s for s in samples if s[0] >= warm and s[1] is not None]
    lat_ms = [x * 1000 for x in st.latencies]
    nfail = len(st.failures)
    nmis = len(st.mismatches)
    result.update({
        "requests_ok": st.ok, "failed": nfail, "mismatched": nmis,
        "req_per_s": round(st.ok / load_s, 1) if load_s else None,
        "latency_ms_p50": round(H.percentile(lat_ms, 50), 2) if lat_ms else None,
        "latency_ms_p99": round(H.percentile(lat_ms, 99), 2) if lat_ms else None,
        "latency_ms_max": round(max(lat_ms), 2) if lat_ms else None,
        "responses_by_revision": {("A" if r == rev_a else "B"): n
                                  for r, n in st.by_rev.items()},
        "revision_transitions": st.transitions,
        "policy_publishes": len(policy_log), "sighups": len(hups),
        "cert_rotations": len(cert_log),
        "cert_rotations_ok": sum(1 for _, ok in cert_log if ok),
        "fds_before_load": fd_base, "fds_after_load": fd_after,
        "fds_max_during": max((s[2] for s in samples if s[2] is not None), default=None),
        "rss_kb_before_load": rss_base, "rss_kb_after_warmup": warm_s[0][1] if warm_s else None,
        "rss_kb_end_of_load": warm_s[-1][1] if warm_s else None,
        "rss_kb_max": max((s[1] for s in samples if s[1] is not None), default=None),
        "rss_kb_after_load": rss_after,
    })
    if metrics:
        for m in ("gpu_admission_policy_reloads_total", "gpu_admission_cert_reloads_total"):
            for res in ("success", "failure"):
                v = H.metric_sum(metrics, m, 'result="%s"' % res)
                result["%s_%s" % (m, res)] = v
        # the broken sets and pairs were seen and refused, the good ones taken
        if a.duration >= 10:
            for k in ("gpu_admission_policy_reloads_total_success", "gpu_admission_policy_reloads_total_failure"):
                if not result.get(k):
                    problems.append("metric %s is %s after %d publishes"
                                    % (k, result.get(k), len(policy_log)))
        if len(cert_log) >= 2:
            for k in ("gpu_admission_cert_reloads_total_success", "gpu_admission_cert_reloads_total_failure"):
                if not result.get(k):
                    problems.append("metric %s is %s after %d rotations"
                                    % (k, result.get(k), len(cert_log)))
    else:
        problems.append("/metrics was not readable after the soak")

    # -- verdict
    if nfail:
        problems.append("%d failed requests, e.g. %s" % (nfail, [f for f in st.failures if f][:5]))
    if nmis:
        problems.append("%d inconsistent responses, e.g. %s"
                        % (nmis, [m for m in st.mismatches if m][:5]))
    if st.ok == 0:
        problems.append("no successful request at all")
    result["max_p99_ms"] = a.max_p99_ms
    if lat_ms and result["latency_ms_p99"] > a.max_p99_ms:
        problems.append("p99 latency %.1f ms is above the %.0f ms bound (p50 %.1f ms): answers "
                        "are waiting for something" % (result["latency_ms_p99"], a.max_p99_ms,
                                                       result["latency_ms_p50"]))
    if a.duration >= 10 and (rev_a not in st.by_rev or rev_b not in st.by_rev):
        problems.append("reloads were never visible: responses by revision %s"
                        % result["responses_by_revision"])
    good_publishes = sum(1 for n in policy_log if n in ("A", "B"))
    if a.duration >= 10 and st.transitions < good_publishes // 2:
        problems.append("only %d revision transitions for %d good publishes"
                        % (st.transitions, good_publishes))
    if fd_after is None or fd_base is None or fd_after > fd_base:
        problems.append("fds grew: %s before load, %s after" % (fd_base, fd_after))
    if warm_s:
        growth = warm_s[-1][1] - warm_s[0][1]
        result["rss_kb_growth_after_warmup"] = growth
        span_min = (warm_s[-1][0] - warm_s[0][0]) / 60.0
        if span_min > 0:
            # a leak shows as a steady slope; allocator noise does not keep growing
            result["rss_kb_per_min_after_warmup"] = round(growth / span_min, 1)
            half = [x for x in warm_s if x[0] >= (warm_s[0][0] + warm_s[-1][0]) / 2]
            result["rss_kb_growth_second_half"] = warm_s[-1][1] - half[0][1]
        if growth > a.rss_growth_kb:
            msg = "RSS grew %d kB after warm-up (bound %d kB)" % (growth, a.rss_growth_kb)
            if san:
                H.log("soak: (ASan build, report only) " + msg)
            else:
                problems.append(msg)
    if a.duration >= a.cert_period + 3 and not cert_log:
        problems.append("no certificate rotation was checked")

    return H.finish(problems, work, "SOAK-RESULT " + json.dumps(result, sort_keys=True),
                    fail_prefix="SOAK-FAIL ", keep=a.keep)


if __name__ == "__main__":
    sys.exit(main())
