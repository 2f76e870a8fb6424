"""test_reload.py - policy reload without restart, under load.

A load generator keeps POSTing a 4-GPU pod over keep-alive connections and records the
policy revision annotation (gpu-admission.io/policy) of every patch. The policy directory is
updated the way the kubelet updates a ConfigMap volume (..data symlink swap):
  good set   -> responses switch to the new revision (the one `gpu-admission check` prints),
                never back; gpu_admission_policy_reloads_total{result="success"} and
                gpu_admission_policy_revision_info follow;
  broken set -> nothing changes but a log line and gpu_admission_policy_reloads_total{result="failure"};
  SIGHUP     -> reload on demand; the periodic check (--reload-interval) catches a change
                made behind the watch's back.
Zero failed requests throughout.

Must never: accept a response carrying a revision that was never a valid set.
"""

import base64
import json
import os
import signal
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import srvlib as S

A = S.args()
BIN = A["bin"]
T = S.Checks("reload")
work = S.tmpdir("gpa-reload-")
certs = S.make_certs(BIN, os.path.join(work, "certs"))
ca = os.path.join(certs, "ca.crt")

src = S.copy_policies(A["src"], os.path.join(work, "src"))
files1 = {n: open(os.path.join(src, n), "rb").read() for n in sorted(os.listdir(src))}
rules = files1["20-rules.yaml"]
T.check(b"gpus: {min: 2}" in rules, "shipped rules have the training rule to edit")
files2 = dict(files1)
files2["20-rules.yaml"] = rules.replace(b"gpus: {min: 2}", b"gpus: {min: 3}")
files3 = dict(files1)
files3["20-rules.yaml"] = rules.replace(b"gpus: {min: 2}", b"gpus: {min: 4}")
broken = dict(files2)
broken["20-rules.yaml"] = files2["20-rules.yaml"] + b"\n    - name: [unterminated\n"
invalid = dict(files2)  # valid YAML, invalid policy: a rule placing into a missing pool
invalid["20-rules.yaml"] = files2["20-rules.yaml"] + b"\n    - name: ghost\n      place: {pool: no-such-pool}\n"


def revision_of(files):
    d = S.tmpdir("gpa-rev-")
    for n, b in files.items():
        open(os.path.join(d, n), "wb").write(b)
    rc, out, err = S.run(BIN, ["check", d])
    if rc != 0:
        return None
    return out.decode().strip().splitlines()[-1].split()[-1]


rev1, rev2, rev3 = revision_of(files1), revision_of(files2), revision_of(files3)
T.check(rev1 and rev2 and rev3 and len({rev1, rev2, rev3}) == 3, "three distinct revisions")
T.eq(revision_of(broken), None, "broken set fails `check`")
T.eq(revision_of(invalid), None, "invalid set fails `check`")

pol = S.AtomicDir(os.path.join(work, "policies"))
pol.publish(files1)

seen_lock = threading.Lock()
per_thread = {}


def patch_revision(data):
    resp = json.loads(data)["response"]
    if "patch" not in resp:
        return None, "no patch in %r" % data[:200]
    for op in json.loads(base64.b64decode(resp["patch"])):
        if op["path"] == "/metadata/annotations" and "gpu-admission.io/policy" in op["value"]:
            return op["value"]["gpu-admission.io/policy"], None
        if op["path"].endswith("gpu-admission.io~1policy"):
            return op["value"], None
    return None, "no revision annotation in patch"


def check(data):
    rev, err = patch_revision(data)
    if err:
        return err
    tid = threading.get_ident()
    with seen_lock:
        seq = per_thread.setdefault(tid, [])
        if not seq or seq[-1] != rev:
            seq.append(rev)
    return None


def current_revision(srv, ctx):
    st, _, data = S.post(srv.port, ctx, "/mutate", S.review_bytes())
    return patch_revision(data)[0] if st == 200 else None


def wait_revision(srv, ctx, want, timeout=10):
    deadline = time.monotonic() + timeout
    got = None
    while time.monotonic() < deadline:
        got = current_revision(srv, ctx)
        if got == want:
            return got
        time.sleep(0.05)
    return got


with S.Server(BIN, pol.path, certs, extra=["--reload-interval", "2s"]) as srv:
    ctx = S.client_ctx(ca)
    T.eq(srv.startup.get("policy_revision"), rev1, "startup log names the revision")
    T.eq(current_revision(srv, ctx), rev1, "serves revision 1")
    load = S.Load(srv.port, ctx, S.review_bytes(), threads=4, check=check).start()
    time.sleep(0.8)

    # ---- good reload via inotify
    pol.publish(files2)
    T.eq(wait_revision(srv, ctx, rev2), rev2, "new revision served after the ConfigMap swap")
    line = srv.wait_log(lambda o: o.get("msg") == "policy set reloaded" and o.get("revision") == rev2)
    T.check(line is not None and line.get("previous_revision") == rev1, "reload logged: %r" % line)
    m = srv.metrics()
    T.eq(S.metric(m, "gpu_admission_policy_reloads_total", {"result": "success"}), 1.0, "success counted")
    T.eq(S.metric(m, "gpu_admission_policy_revision_info", {"revision": rev2}), 1.0, "revision info updated")
    T.eq(S.metric(m, "gpu_admission_policy_revision_info", {"revision": rev1}), None, "old revision gone")
    time.sleep(0.5)

    # ---- broken YAML, then a valid-YAML-but-invalid set: nothing changes
    for name, files in (("broken YAML", broken), ("invalid policy", invalid)):
        before = S.metric(srv.metrics(), "gpu_admission_policy_reloads_total", {"result": "failure"}) or 0
        pol.publish(files)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and (S.metric(
                srv.metrics(), "gpu_admission_policy_reloads_total", {"result": "failure"}) or 0) <= before:
            time.sleep(0.05)
        T.check((S.metric(srv.metrics(), "gpu_admission_policy_reloads_total", {"result": "failure"}) or 0)
                > before, name + ": failure counted")
        T.eq(current_revision(srv, ctx), rev2, name + ": previous revision still served")
        T.eq(srv.http_get("/readyz")[0], 200, name + ": still ready")
    srv.settle_logs()
    fails = [o for o in srv.logs() if o.get("msg") == "policy reload failed; previous set kept"]
    T.check(len(fails) >= 2 and all(o.get("level") == "error" and o.get("error") for o in fails),
            "failed reloads logged at error level with the loader's message")
    T.check(any("20-rules.yaml" in (o.get("error") or "") for o in fails),
            "failure message names the file")

    # ---- SIGHUP: reload on demand (the set on disk is still invalid: still a failure)
    before = S.metric(srv.metrics(), "gpu_admission_policy_reloads_total", {"result": "failure"})
    srv.signal(signal.SIGHUP)
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline and S.metric(
            srv.metrics(), "gpu_admission_policy_reloads_total", {"result": "failure"}) == before:
        time.sleep(0.05)
    T.check(S.metric(srv.metrics(), "gpu_admission_policy_reloads_total", {"result": "failure"}) > before,
            "SIGHUP triggered a reload attempt")

    # ---- change behind inotify's back (write in place, no event for the watched dir:
    # edit the file inside the current ..data target) -> the periodic check picks it up
    pol.publish(files2)
    wait_revision(srv, ctx, rev2)
    target = os.path.join(pol.path, os.readlink(os.path.join(pol.path, "..data")), "20-rules.yaml")
    with open(target, "wb") as f:
        f.write(files3["20-rules.yaml"])
    T.eq(wait_revision(srv, ctx, rev3, timeout=8), rev3, "periodic check loads an in-place edit")
    time.sleep(0.3)

    load.stop()
    T.eq(load.failures[:5], [], "zero failed requests during reloads")
    T.check(load.count() > 100, "load kept flowing (%d ok)" % load.count())
    allowed = [rev1, rev2, rev3]
    for tid, seq in per_thread.items():
        T.check(all(r in allowed for r in seq), "only valid revisions served: %r" % seq)
        # rev2 may be seen again after rev3? no: a thread's sequence only moves forward
        T.check(seq == sorted(seq, key=allowed.index), "revisions never go back: %r" % seq)

# --policies given as a symlink to the directory: the watch follows it
link = os.path.join(work, "policies-link")
os.symlink(pol.path, link)
pol.publish(files1)
with S.Server(BIN, link, certs, extra=["--reload-interval", "0"]) as srv:
    ctx = S.client_ctx(ca)
    T.eq(current_revision(srv, ctx), rev1, "symlinked policy dir: serves revision 1")
    pol.publish(files2)
    T.eq(wait_revision(srv, ctx, rev2, timeout=5), rev2,
         "symlinked policy dir: inotify reload without the periodic check")
    srv.settle_logs()
    T.check(not any("watch incomplete" in (o.get("msg") or "") for o in srv.logs()),
            "no watch warning for a symlinked directory")

T.done()
