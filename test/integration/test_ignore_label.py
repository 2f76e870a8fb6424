"""test_ignore_label.py - the lock on the namespace label gpu-admission.io/ignore on a real
`gpu-admission serve` over TLS: started with --ignore-label-namespaces (and its environment
twin), a Namespace review on /validate carrying the label is refused outside the list and
allowed inside it, removing the label is allowed, /mutate never judges namespaces, a server
started without the flag refuses the label everywhere, the startup log names the list, the
denial is counted in gpu_admission_denials_total, and a bad list stops the server before it
starts (exit 1, a message naming the bad entry).

Must never: talk to anything but the servers it started on 127.0.0.1, or leave one running.
"""

import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import srvlib as S

A = S.args()
BIN = A["bin"]
T = S.Checks("ignore_label")
work = S.tmpdir("gpa-ignore-label-")
certs = S.make_certs(BIN, os.path.join(work, "certs"))
ctx = S.client_ctx(os.path.join(certs, "ca.crt"))
policies = S.copy_policies(A["src"], os.path.join(work, "policies"))
LABEL = "gpu-admission.io/ignore"


def ns_review(name, labels, op="CREATE", old_labels=None, uid="ns-1"):
    def obj(lab):
        md = {"name": name}
        if lab is not None:
            md["labels"] = lab
        return {"apiVersion": "v1", "kind": "Namespace", "metadata": md}
    req = {"uid": uid, "kind": {"group": "", "version": "v1", "kind": "Namespace"},
           "resource": {"group": "", "version": "v1", "resource": "namespaces"},
           "name": name, "operation": op, "object": obj(labels)}
    if old_labels is not None:
        req["oldObject"] = obj(old_labels)
    return json.dumps({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
                       "request": req}).encode()


def answer(srv, path, body):
    st, _, data = S.post(srv.port, ctx, path, body)
    return st, json.loads(data)


def clean_env(**kw):
    env = {k: v for k, v in os.environ.items() if not k.startswith("GPU_ADMISSION_")}
    env.update(kw)
    return env


with S.Server(BIN, policies, certs, extra=["--ignore-label-namespaces",
                                          "ops-recovery, gpu-operator"],
              env=clean_env()) as srv:
    T.eq(srv.startup.get("ignore_label_namespaces"), "ops-recovery, gpu-operator",
         "startup log names the list")
    st, a = answer(srv, "/validate", ns_review("team-a", {LABEL: "true"}))
    T.eq(st, 200, "refusal is an AdmissionReview answer")
    r = a.get("response", {})
    T.eq(r.get("allowed"), False, "label on a namespace outside the list: refused")
    T.eq(r.get("status", {}).get("code"), 403, "refusal code")
    T.check('namespace "team-a" may not carry the label gpu-admission.io/ignore' in
            r.get("status", {}).get("message", ""), "refusal names the namespace: %r" % r)
    for name in ("ops-recovery", "gpu-operator"):
        st, a = answer(srv, "/validate", ns_review(name, {LABEL: "true"}))
        T.eq(a["response"]["allowed"], True, "label on listed namespace %s: allowed" % name)
    # near misses of a listed name are not in the list
    st, a = answer(srv, "/validate", ns_review("ops-recovery-2", {LABEL: "true"}))
    T.eq(a["response"]["allowed"], False, "a name starting like a listed one: refused")
    st, a = answer(srv, "/validate", ns_review("team-a", {"team": "a"}, "UPDATE",
                                               old_labels={LABEL: "true"}))
    T.eq(a["response"]["allowed"], True, "removing the label: allowed")
    st, a = answer(srv, "/validate", ns_review("team-a", {LABEL: "true", "x": "y"}, "UPDATE",
                                               old_labels={LABEL: "true"}))
    T.eq(a["response"]["allowed"], False, "keeping the label on an UPDATE: refused")
    st, a = answer(srv, "/mutate", ns_review("team-a", {LABEL: "true"}))
    T.check(a["response"]["allowed"] is True and "patch" not in a["response"],
            "/mutate leaves namespaces alone: %r" % a)
    m = srv.metrics()
    T.check(S.metric(m, "gpu_admission_denials_total", {"reason": "ignore-label-not-exempt"})
            == 3, "denials counted by reason")
    # the CLI's `review` (no list) refuses what the server refuses without the flag
    rc, out, _ = S.run(BIN, ["review", "validate", "--policies", policies, "-"],
                       stdin=ns_review("ops-recovery", {LABEL: "true"}))
    T.check(rc in (0, 1) and b'"allowed":false' in out,
            "review CLI (no exempt list): refused %r" % out[:200])

# the environment twin; without any list every namespace is refused
with S.Server(BIN, policies, certs,
              env=clean_env(GPU_ADMISSION_IGNORE_LABEL_NAMESPACES="team-a")) as srv:
    st, a = answer(srv, "/validate", ns_review("team-a", {LABEL: "true"}))
    T.eq(a["response"]["allowed"], True, "GPU_ADMISSION_IGNORE_LABEL_NAMESPACES read")
with S.Server(BIN, policies, certs, env=clean_env()) as srv:
    T.eq(srv.startup.get("ignore_label_namespaces"), "", "no list logged as empty")
    for name in ("team-a", "ops-recovery", "kube-system"):
        st, a = answer(srv, "/validate", ns_review(name, {LABEL: "true"}))
        T.eq(a["response"]["allowed"], False, "no list: %s refused" % name)

for bad, needle in (("Team-A", "'Team-A' is not a namespace name"),
                    ("a,,b", "empty name"), ("research-*", "'research-*' is not a namespace")):
    rc, _, err = S.run(BIN, ["serve", "--policies", policies, "--cert-dir", certs,
                             "--listen", "127.0.0.1:0", "--metrics-listen", "127.0.0.1:0",
                             "--ignore-label-namespaces", bad], env=clean_env(), timeout=20)
    T.eq(rc, 1, "bad list %r: exit 1" % bad)
    T.check(needle.encode() in err, "bad list %r: %r in %r" % (bad, needle, err[-300:]))

T.done()
