"""test_denials_metric.py - the counters the shipped alerts read move with real requests:
gpu_admission_denials_total{reason} (alert DenialsRising in helm/.../prometheusrule.yaml)
counts each denied /validate and /mutate under its own reason, and allowed requests count
nowhere there; gpu_admission_requests_total{result="denied"} agrees.

Different counts per reason (1, 2, 3) so a counter that lumps reasons together, counts the
wrong one or counts allowed requests is caught. Must never: talk to anything but the server
it started on 127.0.0.1, or pass without having scraped /metrics after the requests.
"""

import copy
import json
import os
import shutil
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import srvlib as S

A = S.args()
BIN = A["bin"]
T = S.Checks("denials_metric")
work = S.tmpdir("gpa-denials-")
certs = S.make_certs(BIN, os.path.join(work, "certs"))
ca = os.path.join(certs, "ca.crt")
# the golden "cluster" policy: tenants research (untrusted) and labs, a rule that denies
policies = os.path.join(work, "policies")
shutil.copytree(os.path.join(A["src"], "test", "golden", "policies", "cluster"), policies)

DENIALS = "gpu_admission_denials_total"


def review(uid, namespace, labels=None, privileged=False, gpus=0):
    r = S.review(uid=uid, namespace=namespace, gpus=gpus, name="p-" + uid[:8])
    pod = r["request"]["object"]
    if labels:
        pod["metadata"]["labels"] = dict(labels)
    if privileged:
        pod["spec"]["containers"][0]["securityContext"] = {"privileged": True}
    return r


def uid(i):
    return "00000000-0000-0000-0000-%012d" % i


# (hook, review, expected reason or None for allowed, how many times)
CASES = [
    ("validate", review(uid(1), "sandbox", privileged=True), "privileged", 1),
    ("validate", review(uid(2), "notebooks", labels={"gpu-admission.io/tenant": "research"}),
     "tenant-claim", 2),
    ("validate", review(uid(3), "blocked-x", gpus=1), "rule-deny", 3),
    # the mutating webhook's denials count too (the pod never reaches /validate)
    ("mutate", review(uid(4), "sandbox-share", gpus=1), "untrusted-shared", 1),
    # allowed: no denial anywhere
    ("validate", review(uid(5), "notebooks"), None, 2),
    ("mutate", review(uid(6), "ml-platform", gpus=4), None, 1),
]


def wait_for(srv, want, timeout=3.0):
    """The metrics text once every expected sample is there (the server counts a request
    right after queueing its answer, so a scrape may briefly trail the last response)."""
    deadline = time.monotonic() + timeout
    while True:
        text = srv.metrics()
        if all(S.metric(text, DENIALS, {"reason": r}) == n for r, n in want.items()):
            return text
        if time.monotonic() > deadline:
            return text
        time.sleep(0.05)


with S.Server(BIN, policies, certs) as srv:
    ctx = S.client_ctx(ca)
    before = srv.metrics()
    T.check("# TYPE %s counter" % DENIALS in before, "%s is exposed as a counter" % DENIALS)
    for _, _, reason, _ in CASES:
        if reason:
            T.eq(S.metric(before, DENIALS, {"reason": reason}), None,
                 "no %s sample before any request" % reason)

    want, denied_by_hook = {}, {"mutate": 0, "validate": 0}
    for hook, rv, reason, times in CASES:
        for i in range(times):
            body = copy.deepcopy(rv)
            body["request"]["uid"] = body["request"]["uid"][:-3] + "%03d" % i
            st, _, data = S.post(srv.port, ctx, "/" + hook, json.dumps(body).encode())
            T.eq(st, 200, "%s %s status" % (hook, reason))
            resp = json.loads(data)["response"] if st == 200 else {}
            T.eq(resp.get("allowed"), reason is None,
                 "%s %s allowed: %r" % (hook, reason, resp.get("status")))
            if reason:
                msg = resp.get("status", {}).get("message", "")
                T.check(msg != "", "%s %s carries a message" % (hook, reason))
        if reason:
            want[reason] = want.get(reason, 0) + times
            denied_by_hook[hook] += times

    text = wait_for(srv, want)
    for reason, n in sorted(want.items()):
        T.eq(S.metric(text, DENIALS, {"reason": reason}), n, "%s{reason=%s}" % (DENIALS, reason))
    # no other reason appeared: allowed requests are not denials
    samples = [l for l in text.splitlines() if l.startswith(DENIALS + "{")]
    T.eq(len(samples), len(want), "one denials sample per reason sent: %r" % samples)
    for hook, n in denied_by_hook.items():
        T.eq(S.metric(text, "gpu_admission_requests_total",
                      {"webhook": hook, "operation": "CREATE", "result": "denied"}), n,
             "requests_total %s denied" % hook)
    T.check(srv.alive(), "server alive after the requests")

T.done()
