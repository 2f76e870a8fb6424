"""e2e_vap.py - the vap suite of the end-to-end test (`run_e2e.py --suite vap`, ctest e2e/vap;
issue 32 items 1 and 4): `gpu-admission export vap` installed in the real kube-apiserver
v1.37.2 with NO webhook registered (the server is never started), so every refusal comes from
the API server itself.

- vap-shipped: the shipped policy's ValidatingAdmissionPolicy and binding are accepted (create
  time is where the API server refuses an expression over its cost budget) and enforce (a
  probe pod is refused with the check's reason code).
- vap-golden-replay: every golden case's input pod (test/golden/cases, CREATE; the policy set
  of the case exported and installed) sent with ?dryRun=All; the webhook's verdict on the same
  pod comes from the real CLI (`gpu-admission review validate`, what the validating webhook
  would answer with the mutating webhook skipped). A pod the webhook admits and the VAP
  refuses fails; a pod the webhook refuses for a reason the export compiles and the API server
  admits fails; refusals by checks the export does not compile are listed, not failures.
- vap-redteam: the isolation issue's attacks - golden cases 272-306 and 330-361 and every pod
  test/abuse/test_threats.py sends to `review validate` (captured by a wrapper binary) - each
  one the webhook refuses is refused by the VAP alone (a 403 naming the policy).
- vap-cost: a generated policy of 200 rules and 200 tenants is accepted and judges a pod
  without a cost error, then larger ones until the API server refuses: the largest size that
  compiles is printed (docs/operations.md quotes it).

Must never: count a refusal by the API server's own validation (422) as the VAP's, or pass a
replay in which the VAP was not in force (each policy set is installed, then a probe refused
before its cases run).
"""

import copy
import json
import os
import shutil
import ssl
import stat
import subprocess
import sys
import time
import urllib.error
import urllib.parse
import urllib.request

import yaml

from run_e2e import TOKEN, merge_patch, note, run, wait_for

NO_WEBHOOK = True  # run_e2e.py starts neither gpu-admission serve nor the chart
VAP = "gpu-admission-"  # + pods-N / claims-N: each install has its own names
REDTEAM = [(272, 306), (330, 361)]
# The webhook reasons the export compiles (docs/operations.md; test/tools/test_cli_export.py
# checks the shipped policy's VAP has each): a golden case refused first for one of them must
# be refused by the VAP for the same one, whatever the exported YAML says it holds.
COMPILED = {"tenant-name-taken", "tenant-claim", "trust-label", "rule-deny", "unmatched",
            "bad-quantity", "requests-limits", "shared-count", "mig-count",
            "untrusted-shared", "node-name-shared", "shared-scheduler", "isolation-missing",
            "mig-memory", "resource-pool-mismatch", "runtime-class", "affinity-too-large",
            "affinity-conflict", "topology-size", "shared-pool-unplaced", "pool-label",
            "visible-devices", "toolkit-env", "env-from", "privileged", "host-path",
            "unknown-device-class"}
# The webhook refusals the export does not compile (gpa_export_vap_gaps, docs/operations.md),
# told by words of their messages: a webhook-only refusal matching none of them fails.
NOT_COMPILED = [
    ("gang-size / gang-too-wide / gang-too-big", ("gang",)),
    ("host-path through '..'", ("hostPath volume", "..")),
    ("affinity-conflict of a MIG single-strategy pool's product", ("-MIG-",)),
]


def not_compiled(msg):
    """The NOT_COMPILED entry a webhook message belongs to, None when it is a compiled one."""
    for what, words in NOT_COMPILED:
        if all(w in msg for w in words):
            return what
    return None


def configure(c):
    pass


def setup(c):
    """State of the suite (no webhook to start, no chart)."""
    c.vap_runtime_classes = set()
    c.vap_policy_cache = {}
    c.vap_namespaces = set()
    c.vap_name, c.vap_serial = VAP, 0
    c.vap_ctx = ssl.create_default_context(cafile=c.apiserver_crt)


# --------------------------------------------------------------------------------------------


def gpa(c, *argv, stdin=None):
    return run([c.args.gpu_admission] + list(argv), stdin=stdin, check=False, timeout=120)


def api(c, method, path, body=None, warnings=None):
    """(status, parsed body) of one request to the API server; its Warning headers appended
    to warnings when given."""
    data = json.dumps(body).encode() if body is not None else None
    req = urllib.request.Request(c.apiserver_url + path, data=data, method=method, headers={
        "Authorization": "Bearer " + TOKEN, "Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, context=c.vap_ctx, timeout=30) as r:
            if warnings is not None:
                warnings += r.headers.get_all("Warning") or []
            return r.status, json.loads(r.read() or b"{}")
    except urllib.error.HTTPError as e:
        raw = e.read()
        try:
            return e.code, json.loads(raw)
        except ValueError:
            return e.code, {"message": raw.decode(errors="replace")}


def ensure_ns(c, ns):
    if ns in c.vap_namespaces:
        return
    st, _ = api(c, "POST", "/api/v1/namespaces",
                {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}})
    if st not in (201, 409):
        raise RuntimeError("namespace %s: HTTP %d" % (ns, st))
    c.vap_namespaces.add(ns)


def try_pod(c, ns, pod, path=None):
    """('allowed'|'vap'|'api'|'error', reason code or '', message) of a dry-run CREATE; an
    admitted pod's code and message are those of the policy's first warning (validationActions
    Warn), if any."""
    ensure_ns(c, ns)
    warns = []
    path = path or "/api/v1/namespaces/%s/pods" % urllib.parse.quote(ns)
    st, body = api(c, "POST", path + "?dryRun=All", pod, warns)
    msg = body.get("message", "")
    if st in (200, 201):
        for w in warns:
            mark = "with binding '%s" % VAP
            if mark in w and "': " in w.split(mark, 1)[1]:
                w = w.split(mark, 1)[1].split("': ", 1)[1]
                mark = ""
                rest = w.rstrip('"')
                return "allowed", rest.split(":", 1)[0], rest
        return "allowed", "", ""
    mark = "ValidatingAdmissionPolicy '%s" % VAP  # -pods-N or -claims-N
    if st == 403 and mark in msg:
        rest = msg.split("denied request: ", 1)[-1]
        return "vap", rest.split(":", 1)[0], rest
    if st in (400, 422):  # not a Pod the API server decodes / its own validation
        return "api", "", msg
    if st == 403:  # another admission plugin of the API server's own
        return "api", "", msg
    return "error", str(st), msg


PROBE = {"apiVersion": "v1", "kind": "Pod",
         "metadata": {"name": "vap-probe", "labels": {"gpu-admission.io/trust": "probe"}},
         "spec": {"containers": [{"name": "c", "image": "registry.example/app:1"}]}}


CLAIMS = "/apis/resource.k8s.io/%s/namespaces/%s/%s"
# adminAccess in a namespace of no tenant (no DRA rights): refused by every claims policy
CLAIM_PROBE = {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
               "metadata": {"name": "vap-probe"}, "spec": {"devices": {"requests": [{
                   "name": "r", "exactly": {"deviceClassName": "gpu.nvidia.com",
                                            "adminAccess": True}}]}}}


def admin_ns(c, ns):
    """The label Kubernetes 1.36+ requires of a namespace whose claims ask adminAccess (else
    the API server refuses them itself, before any policy)."""
    ensure_ns(c, ns)
    c.kubectl("label", "namespace", ns, "resource.kubernetes.io/admin-access=true",
              "--overwrite")


def install(c, policies, ck=None, name="install"):
    """Exports the set, replaces the installed VAP and binding, and waits until a probe (a
    trust label no policy accepts: trust-label is always compiled) is refused by it. Each
    install gets its own object names (gpu-admission-pods-N): a binding re-created under the
    old name can pair with the old policy the API server has not dropped yet, so a probe both
    refuse would pass while the old checks judge. Returns (ok, the YAML, seconds to enforce)."""
    r = gpa(c, "export", "vap", "--policies", policies)
    c.vap_apply_error = r.stderr if r.returncode != 0 else ""
    if r.returncode != 0:
        if ck:
            ck.expect(name + "/export", False, r.stderr[-800:])
        return False, None, 0
    for kind in ("pods", "claims"):
        old = "gpu-admission-%s-%d" % (kind, c.vap_serial)
        c.kubectl("delete", "validatingadmissionpolicybinding", old, "--ignore-not-found",
                  "--wait")
        c.kubectl("delete", "validatingadmissionpolicy", old, "--ignore-not-found", "--wait")
    # until the old objects are out of the API server's caches, a probe they refuse would
    # pass for the new ones: wait for both probes to be admitted first
    admin_ns(c, "default")
    wait_for("old VAPs gone", lambda: try_pod(c, "default", PROBE)[0] == "allowed" and try_pod(
        c, "default", CLAIM_PROBE, CLAIMS % ("v1", "default", "resourceclaims"))[0] ==
        "allowed", 60, 0.2)
    c.vap_serial += 1
    c.vap_name = "%s-%d" % (VAP, c.vap_serial)
    text = r.stdout
    for kind in ("pods", "claims"):
        text = text.replace("name: gpu-admission-%s\n" % kind, "name: gpu-admission-%s-%d\n" % (
            kind, c.vap_serial)).replace("policyName: gpu-admission-%s\n" % kind,
                                         "policyName: gpu-admission-%s-%d\n" % (
                                             kind, c.vap_serial))
    # enforcement audit: an audit annotation only, invisible to a client; Warn shows the probe
    text = text.replace("validationActions: [Audit]", "validationActions: [Warn]")
    # create, not a client-side apply: its last-applied annotation is capped at 256 KiB
    a = c.kubectl("create", "-f", "-", stdin=text, check=False)
    c.vap_apply_error = a.stderr if a.returncode != 0 else ""
    if a.returncode != 0:
        if ck:
            ck.expect(name + "/apply", False, a.stderr[-1500:])
        return False, r.stdout, 0
    t0 = time.monotonic()
    wait_for("VAP in force", lambda: try_pod(c, "default", PROBE)[1] == "trust-label", 60, 0.2)
    if "name: gpu-admission-claims\n" in r.stdout:
        wait_for("claims VAP in force", lambda: try_pod(
            c, "default", CLAIM_PROBE, CLAIMS % ("v1", "default", "resourceclaims"))[1] ==
            "dra-admin-access", 60, 0.2)
    return True, r.stdout, time.monotonic() - t0


def compiled_reasons(yaml_text):
    out = set()
    for line in yaml_text.splitlines():
        line = line.strip()
        if line.startswith("message: \"") and ": refused by the GPU policy" in line:
            out.add(line[len("message: \""):].split(":", 1)[0])
    return out


def webhook_verdict(c, policies, ns, pod, tmp):
    """(allowed, message) of the validating webhook for this pod (the real CLI)."""
    path = os.path.join(tmp, "pod.json")
    with open(path, "w") as f:
        json.dump(pod, f)
    r = gpa(c, "review", "validate", "--policies", policies, "-n", ns, path)
    if r.returncode != 0 and "bad request" in r.stderr:
        # the webhook answers 400; failurePolicy Fail makes that a refusal
        return False, "webhook: " + r.stderr.strip()[-300:]
    if r.returncode != 0:
        raise RuntimeError("review validate: %s" % r.stderr[-500:])
    resp = json.loads(r.stdout)["response"]
    return resp["allowed"], resp.get("status", {}).get("message", "")


# -------------------------------------------------------------------------- golden cases


def load_docs(path):
    with open(path) as f:
        text = f.read()
    if path.endswith(".json"):
        return [json.loads(text)]
    return [d for d in yaml.safe_load_all(text) if d is not None]


def case_pod(cdir, spec):
    src = spec.get("pod")
    if isinstance(src, dict):
        pod = copy.deepcopy(src)
    else:
        pod = load_docs(os.path.join(cdir, src))[spec.get("podDocument", 0)]
    tmpl = spec.get("podTemplate")
    if tmpl:
        t = pod
        for k in tmpl:
            t = t[k]
        meta = copy.deepcopy(t.get("metadata") or {})
        meta.setdefault("name", (pod.get("metadata") or {}).get("name") or "pod")
        pod = {"apiVersion": "v1", "kind": "Pod", "metadata": meta,
               "spec": copy.deepcopy(t.get("spec"))}
    if spec.get("podMerge"):
        pod = merge_patch(pod, spec["podMerge"])
    return pod


def sendable(pod, ns, name):
    """The pod as a client would send it: no server-set metadata, the case's namespace."""
    pod = copy.deepcopy(pod)
    pod.setdefault("apiVersion", "v1")
    pod.setdefault("kind", "Pod")
    meta = pod.setdefault("metadata", {})
    for k in ("resourceVersion", "uid", "creationTimestamp", "managedFields", "selfLink",
              "generation", "deletionTimestamp"):
        meta.pop(k, None)
    meta["namespace"] = ns
    if not meta.get("name") and not meta.get("generateName"):
        meta["name"] = name
    pod.pop("status", None)
    return pod


def policy_dir(c, spec, cache=None):
    """The case's policy set as one directory (a list of files copied in their order; one copy
    per distinct list in a run)."""
    cache = c.vap_policy_cache
    pol = spec.get("policy")
    root = os.path.join(c.args.source_dir, "test", "golden", "policies")
    if isinstance(pol, str):
        return os.path.join(root, pol)
    key = json.dumps(pol)
    if key not in cache:
        d = os.path.join(c.work, "vap-policies", str(len(cache)))
        os.makedirs(d)
        for i, f in enumerate(pol):
            shutil.copy(os.path.join(root, f), os.path.join(d, "%02d-%s" % (
                i, os.path.basename(f))))
        cache[key] = d
    return cache[key]


def golden_cases(c):
    """[(number, name, policies, ns, pod)] of the CREATE cases, and the UPDATE ones skipped
    (read once per run)."""
    if getattr(c, "vap_golden", None) is None:
        c.vap_first_reason = {}  # validate-hook case -> the webhook's first reason
        c.vap_golden = read_golden_cases(c)
    return c.vap_golden


def read_golden_cases(c):
    cdir = os.path.join(c.args.source_dir, "test", "golden", "cases")
    out, skipped, cache = [], [], {}
    for name in sorted(os.listdir(cdir)):
        path = os.path.join(cdir, name, "case.yaml")
        if not os.path.exists(path):
            continue
        with open(path) as f:
            spec = yaml.safe_load(f)
        if spec.get("operation", "CREATE") != "CREATE" or not spec.get("policy"):
            skipped.append(name)
            continue
        ns = spec.get("namespace", "default")
        pod = sendable(case_pod(os.path.join(cdir, name), spec), ns, "case-" + name[:3])
        exp = spec.get("expect") or {}
        if spec.get("hook") == "validate" and exp.get("allowed") is False and exp.get("reason"):
            c.vap_first_reason[name] = exp["reason"]
        out.append((int(name.split("-")[0]), name, policy_dir(c, spec, cache), ns, pod))
    return out, skipped


def replay(c, ck, items, check, tag):
    """items: [(label, policies, ns, pod)], grouped by policy set; check(label, verdict,
    outcome, reasons) -> None records. Returns the counts."""
    tmp = os.path.join(c.work, "vap-tmp")
    os.makedirs(tmp, exist_ok=True)
    groups = {}
    for it in items:
        groups.setdefault(it[1], []).append(it)
        rc = (it[3].get("spec") or {}).get("runtimeClassName")
        if isinstance(rc, str) and rc and rc not in c.vap_runtime_classes:
            # the RuntimeClass admission plugin refuses a pod naming a missing one
            c.kubectl("apply", "-f", "-", stdin=json.dumps({
                "apiVersion": "node.k8s.io/v1", "kind": "RuntimeClass",
                "metadata": {"name": rc}, "handler": rc}), check=False)
            c.vap_runtime_classes.add(rc)
    for pol, its in groups.items():
        ok, text, secs = install(c, pol, ck, "%s/%s" % (tag, os.path.basename(pol)))
        if not ok:
            continue
        reasons = compiled_reasons(text)
        for label, _, ns, pod in its:
            verdict = webhook_verdict(c, pol, ns, pod, tmp)
            check(label, verdict, try_pod(c, ns, pod), reasons)


def sc_shipped(c, ck):
    """the shipped policy's VAP and binding accepted by the API server and in force"""
    ok, text, secs = install(c, os.path.join(c.args.source_dir, "policies"), ck, "vap-shipped")
    ck.expect("vap-shipped/accepted", ok)
    if not ok:
        return
    note("shipped VAP: %d bytes, %d compiled reasons, in force %.1fs after create" % (
        len(text), len(compiled_reasons(text)), secs))
    got = c.get("validatingadmissionpolicy", "gpu-admission-pods-%d" % c.vap_serial)
    ck.expect("vap-shipped/stored", got is not None and got["spec"]["failurePolicy"] == "Fail")
    b = c.get("validatingadmissionpolicybinding", "gpu-admission-pods-%d" % c.vap_serial)
    ck.expect("vap-shipped/binding-deny", b is not None and
              b["spec"]["validationActions"] == ["Deny"], b and b["spec"])
    # an untrusted GPU pod in a namespace of no tenant: unmatched under unmatched: deny
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": {
        "containers": [{"name": "c", "image": "x", "resources": {
            "limits": {"nvidia.com/gpu": "1"}}}]}}
    ck.expect("vap-shipped/unmatched-refused", try_pod(c, "no-tenant", pod)[1] == "unmatched")
    ok_pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
              "spec": {"containers": [{"name": "c", "image": "x"}]}}
    ck.expect("vap-shipped/cpu-pod-allowed", try_pod(c, "no-tenant", ok_pod)[0] == "allowed")
    # the smallest set (no tenancy, pools or rules: every list empty) compiles too, and an
    # untrusted privileged pod is still refused (no tenancy block: untrusted)
    d = os.path.join(c.work, "empty-policy")
    os.makedirs(d)
    with open(os.path.join(d, "p.yaml"), "w") as f:
        f.write("apiVersion: gpu-admission.io/v1alpha1\nkind: GPUPolicy\n"
                "metadata: {name: empty}\nspec: {}\n")
    ok, _, _ = install(c, d, ck, "vap-shipped/empty-policy")
    priv = copy.deepcopy(ok_pod)
    priv["spec"]["containers"][0]["securityContext"] = {"privileged": True}
    ck.expect("vap-shipped/empty-policy", ok and try_pod(c, "any", priv)[1] == "privileged")


def sc_golden(c, ck):
    """every golden CREATE case: nothing the webhook admits is refused; compiled reasons refuse"""
    cases, skipped = golden_cases(c)
    stats = {"n": 0, "both-allow": 0, "both-deny": 0, "api": 0, "gap": [], "bad": [],
             "same-reason": 0}

    def check(label, verdict, outcome, reasons):
        allowed, wmsg = verdict
        kind, code, msg = outcome
        stats["n"] += 1
        if kind == "error":
            stats["bad"].append("%s: HTTP %s %s" % (label, code, msg[:200]))
        elif allowed and kind != "allowed":
            if kind == "api":
                stats["api"] += 1  # the API server's own validation, not the VAP
                note("  admitted by the webhook, refused by the API server's validation: "
                     "%s: %s" % (label, msg[:200]))
            else:
                stats["bad"].append("%s: webhook admits, VAP refuses: %s" % (label, msg[:300]))
        elif not allowed and kind == "allowed":
            why = not_compiled(wmsg)
            if why:
                stats["gap"].append("%s (%s): %s" % (label, why, wmsg[:160]))
            else:
                stats["bad"].append("%s: webhook refuses, VAP admits: %s" % (label, wmsg[:300]))
        elif not allowed:
            stats["both-deny" if kind == "vap" else "api"] += 1
            want = c.vap_first_reason.get(label)
            # the checks run in the engine's order: the VAP's first refusal is the webhook's
            # first reason, so a compiled check that stops firing shows even when another
            # check still refuses the pod
            if kind == "vap" and want and want in COMPILED and code != want:
                stats["bad"].append("%s: webhook's first reason %s, VAP's %s" % (
                    label, want, code))
            elif kind == "vap" and want:
                stats["same-reason"] += 1
        else:
            stats["both-allow"] += 1
        c._vap_last_reasons = reasons

    items = [(name, pol, ns, pod) for _, name, pol, ns, pod in cases]
    # and each pod as the mutating webhook leaves it (the VAP runs after it): with the webhook
    # up, the VAP must admit every pod the webhooks admit
    n_mut = 0
    for name, pol, ns, pod in list(items):
        path = os.path.join(c.work, "vap-mutate-in.json")
        with open(path, "w") as f:
            json.dump(pod, f)
        r = gpa(c, "mutate", "--policies", pol, "-n", ns, path)
        if r.returncode == 0:
            mutated = json.loads(r.stdout)
            if mutated != pod:
                items.append((name + " (mutated)", pol, ns, sendable(mutated, ns, name)))
                n_mut += 1
    replay(c, ck, items, check, "vap-golden")
    note("golden replay: %d pods (%d cases, %d of them also as mutated; %d UPDATE/other "
         "skipped): %d admitted by both, %d refused "
         "by both, %d refused by the API server's validation, %d refused only by the webhook "
         "(checks not compiled), %d failures" % (
             stats["n"], len(cases), n_mut, len(skipped), stats["both-allow"],
             stats["both-deny"], stats["api"],
             len(stats["gap"]), len(stats["bad"])))
    for g in stats["gap"]:
        note("  not compiled: " + g)
    note("golden replay: %d validate-hook cases refused by the VAP with the webhook's first "
         "reason" % stats["same-reason"])
    ck.expect("vap-golden/first-reasons-compared", stats["same-reason"] >= 30,
              stats["same-reason"])
    c.vap_golden_gaps = stats["gap"]
    ck.expect("vap-golden/replayed", stats["n"] >= 150, stats["n"])
    ck.expect("vap-golden/no-false-refusal-or-miss", not stats["bad"], "\n".join(stats["bad"]))


def threat_pods(c):
    """Every Pod CREATE test_threats.py sends to `review validate`, with its policy dir."""
    cap = os.path.join(c.work, "threat-capture")
    os.makedirs(cap)
    wrapper = os.path.join(c.work, "gpa-capture")
    with open(wrapper, "w") as f:
        f.write("#!/bin/sh\n"
                "# records the AdmissionReview of `review validate --policies D FILE`\n"
                "if [ \"$1\" = review ] && [ \"$2\" = validate ]; then\n"
                "  n=$(mktemp \"%s/rv.XXXXXX\")\n"
                "  cp -r \"$4\" \"$n.pol\"\n"
                "  eval last=\\${$#}\n"
                "  cp \"$last\" \"$n.json\"\n"
                "fi\n"
                "exec %s \"$@\"\n" % (cap, c.args.gpu_admission))
    os.chmod(wrapper, stat.S_IRWXU)
    abuse = os.path.join(c.args.source_dir, "test", "abuse")
    r = run([sys.executable, os.path.join(abuse, "test_threats.py"), "--bin", wrapper,
             "--policies", os.path.join(c.args.source_dir, "policies")], check=False,
            timeout=900)
    if r.returncode != 0:
        raise RuntimeError("test_threats.py failed:\n" + r.stderr[-2000:])
    out = []
    for f in sorted(os.listdir(cap)):
        if not f.endswith(".json"):
            continue
        with open(os.path.join(cap, f)) as fh:
            rv = json.load(fh)
        pol = os.path.join(cap, f[:-5] + ".pol")  # a copy: some tests' dirs are temporary
        req = rv.get("request", {})
        if req.get("operation") != "CREATE" or (req.get("kind") or {}).get("kind") != "Pod":
            continue
        ns = req.get("namespace") or "default"
        out.append(("threats/" + f[:-5], pol, ns, sendable(req["object"], ns, "threat")))
    return out


def sc_redteam(c, ck):
    """the isolation issue's attacks: every one the webhook refuses is refused by the VAP"""
    cases, _ = golden_cases(c)
    items = [(name, pol, ns, pod) for num, name, pol, ns, pod in cases
             if any(lo <= num <= hi for lo, hi in REDTEAM)]
    n_golden = len(items)
    items += threat_pods(c)
    res = {"refused": 0, "api": [], "admitted-both": 0, "miss": [], "false": []}

    def check(label, verdict, outcome, reasons):
        allowed, wmsg = verdict
        kind, code, msg = outcome
        if allowed:
            if kind == "vap":
                res["false"].append("%s: %s" % (label, msg[:200]))
            else:
                res["admitted-both"] += 1
        elif kind == "vap":
            res["refused"] += 1
        elif kind == "api":
            # refused before any admission policy runs: the API server's own validation
            # ('..' in a hostPath, ephemeral containers on CREATE, a NUL byte ...)
            res["api"].append("%s: %s" % (label, msg[:160]))
        else:
            res["miss"].append("%s (%s): webhook: %s" % (label, kind, wmsg[:200]))

    replay(c, ck, items, check, "vap-redteam")
    note("red team: %d golden cases + %d test_threats pods: %d refused by the VAP alone, %d by "
         "the API server's own validation, %d admitted by both, %d refused only by the webhook, "
         "%d refused only by the VAP" % (
             n_golden, len(items) - n_golden, res["refused"], len(res["api"]),
             res["admitted-both"], len(res["miss"]), len(res["false"])))
    for m in res["api"]:
        note("  API server validation: " + m)
    for m in res["miss"]:
        note("  webhook only: " + m)
    ck.expect("vap-redteam/inputs", n_golden >= 40 and len(items) - n_golden >= 20,
              "%d golden, %d threats" % (n_golden, len(items) - n_golden))
    ck.expect("vap-redteam/refused-by-vap-alone", not res["miss"], "\n".join(res["miss"]))
    ck.expect("vap-redteam/no-false-refusal", not res["false"], "\n".join(res["false"]))


def big_policy(d, n_rules, n_tenants):
    """A policy of n_rules rules and n_tenants tenants over the shipped pools."""
    os.makedirs(d)
    src = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "policies")
    shutil.copy(os.path.join(src, "10-pools.yaml"), d)
    tenants = [{"name": "t%d" % i, "namespaces": ["t%d-*" % i, "team%d" % i],
                "trust": "trusted" if i % 2 else "untrusted"} for i in range(n_tenants)]
    rules = []
    for i in range(n_rules):
        m = {"namespaces": ["t%d-*" % (i % max(n_tenants, 1)), "x%d-?" % i]}
        if i % 3 == 0:
            m["labels"] = {"app.kubernetes.io/component": "c%d" % i}
        if i % 4 == 0:
            m["gpus"] = {"max": 1 + i % 7}
        if i % 5 == 0:
            m["gpuMemory"] = {"max": "%dGi" % (8 + i % 32)}
        if i % 6 == 0 and n_tenants:
            m["tenants"] = ["t%d" % (i % n_tenants)]
        pool = ["a100-mig", "h100-train", "t4-shared"][i % 3]
        rules.append({"name": "r%d" % i, "match": m, "place": {"pool": pool}} if i % 10
                     else {"name": "r%d" % i, "match": m, "deny": "rule %d says no" % i})
    doc = {"apiVersion": "gpu-admission.io/v1alpha1", "kind": "GPUPolicy",
           "metadata": {"name": "big"},
           "spec": {"tenancy": {"tenants": tenants, "default": {"trust": "untrusted"}},
                    "rules": rules, "unmatched": "deny"}}
    with open(os.path.join(d, "20-big.yaml"), "w") as f:
        yaml.safe_dump(doc, f)
    return d


def cost_pods():
    """A typical GPU pod, and a heavy one (40 containers and native sidecars, each with 8
    resource names and 40 env vars, 20 hostPath volumes): the runtime cost of every check
    grows with what the pod holds."""
    typical = {"apiVersion": "v1", "kind": "Pod", "metadata": {
        "name": "p", "labels": {"app.kubernetes.io/component": "c3"},
        "annotations": {"gpu-admission.io/gpu-memory": "8Gi"}}, "spec": {
        "initContainers": [{"name": "s%d" % i, "image": "x", "restartPolicy": "Always",
                            "resources": {"limits": {"nvidia.com/gpu": "1"}}}
                           for i in range(3)],
        "containers": [{"name": "c%d" % i, "image": "x", "env": [
            {"name": "E%d" % j, "value": "v"} for j in range(20)],
            "resources": {"limits": {"nvidia.com/gpu": "1"}}} for i in range(4)]}}
    res = {"cpu": "1", "memory": "1Gi", "nvidia.com/gpu": "1", "example.com/a": "1",
           "example.com/b": "1", "example.com/c": "1", "example.com/d": "1",
           "ephemeral-storage": "1Gi"}

    def ctr(name, sidecar=False):
        c = {"name": name, "image": "x", "resources": {"limits": dict(res)},
             "env": [{"name": "APP_%d" % j, "value": "v"} for j in range(40)]}
        if sidecar:
            c["restartPolicy"] = "Always"
        return c
    heavy = copy.deepcopy(typical)
    heavy["spec"] = {
        "initContainers": [ctr("i%d" % i, i % 2 == 0) for i in range(20)],
        "containers": [ctr("c%d" % i) for i in range(20)],
        "volumes": [{"name": "v%d" % i, "hostPath": {"path": "/data/x%d" % i}}
                    for i in range(20)]}
    return typical, heavy


def sc_cost(c, ck):
    """CEL cost: 200 rules and 200 tenants compile and judge pods; the largest size found"""
    typical, heavy = cost_pods()
    results = {}
    largest = None
    # 4096 rules and 4096 tenants: the policy loader's own limit
    for n in (200, 1600, 4096):
        d = big_policy(os.path.join(c.work, "big-%d" % n), n, n)
        ok, text, _ = install(c, d, None)
        # a namespace of no tenant that no rule names: every tenant glob and every rule is
        # evaluated (the most expensive pod), and it is refused as unmatched
        outs = [try_pod(c, "nomatch-ns", copy.deepcopy(p)) if ok else ("not installed", "", "")
                for p in (typical, heavy)]
        results[n] = (ok, outs)
        note("cost: %d rules, %d tenants: %s, %d bytes of YAML%s" % (
            n, n, "accepted" if ok else "REFUSED at create", len(text or ""),
            "" if ok else ": " + c.vap_apply_error.strip()[-600:]))
        for what, o in zip(("typical pod", "heavy pod"), outs):
            if ok:
                note("  %s: %s %s" % (what, o[0], (o[1] + " " + o[2][:200]).strip()))
        if not ok or any(o[0] == "error" or "cost" in o[2] for o in outs):
            break
        largest = n
    note("cost: the largest generated policy the API server accepts and evaluates: %s rules "
         "and tenants" % largest)
    ck.expect("vap-cost/loader-limit-accepted", largest == 4096, largest)
    ok200, outs200 = results[200]
    ck.expect("vap-cost/200-rules-accepted", ok200)
    for what, o in zip(("typical", "heavy"), outs200):
        ck.expect("vap-cost/200-rules-judges-%s-pod" % what,
                  ok200 and o[0] in ("allowed", "vap") and "cost" not in o[2], o)


def claim_runs(c):
    """[(label, policies, ns, claim, path, first reason or None)] of test/golden/claims: each
    CREATE run without a user (the scheduler's own claims need its identity)."""
    cdir = os.path.join(c.args.source_dir, "test", "golden", "claims")
    root = os.path.join(c.args.source_dir, "test", "golden", "policies")
    out, cache = [], {}
    for name in sorted(os.listdir(cdir)):
        path = os.path.join(cdir, name, "case.yaml")
        if not os.path.exists(path):
            continue
        with open(path) as f:
            spec = yaml.safe_load(f)
        obj = spec.get("object")
        if isinstance(obj, str):
            docs = load_docs(os.path.join(cdir, name, obj))
            kind = spec.get("objectKind")
            obj = next(d for d in docs if not kind or d.get("kind") == kind)
        for i, run_ in enumerate(spec.get("runs") or []):
            if run_.get("operation", "CREATE") != "CREATE" or run_.get("user"):
                continue
            o = copy.deepcopy(obj)
            if run_.get("objectMerge"):
                o = merge_patch(o, run_["objectMerge"])
            ns = run_.get("namespace") or (o.get("metadata") or {}).get("namespace") or "default"
            o = sendable(o, ns, "claim")
            group, _, version = o["apiVersion"].partition("/")
            res = "resourceclaimtemplates" if o["kind"] == "ResourceClaimTemplate" \
                else "resourceclaims"
            exp = run_.get("expect") or {}
            first = exp.get("reason") if run_.get("hook") == "validate" and \
                exp.get("allowed") is False else None
            out.append(("claims/%s#%d" % (name, i), policy_dir(c, run_, cache), ns, o,
                        CLAIMS % (version, urllib.parse.quote(ns), res), first))
    return out


CLAIM_COMPILED = {"dra-admin-access", "dra-allocation-all", "unknown-device-class",
                  "dra-untrusted-shared", "dra-untrusted-sharing"}


def sc_claims(c, ck):
    """golden claim cases: adminAccess, allocationMode All, unknown classes refused by the VAP"""
    runs = claim_runs(c)
    tmp = os.path.join(c.work, "vap-tmp")
    os.makedirs(tmp, exist_ok=True)
    res = {"both-allow": 0, "both-deny": 0, "api": 0, "same": 0, "gap": [], "bad": []}
    groups = {}
    for r_ in runs:
        groups.setdefault(r_[1], []).append(r_)
    for pol, rs in groups.items():
        ok, text, _ = install(c, pol, ck, "vap-claims/" + os.path.basename(pol))
        if not ok:
            continue
        for label, _, ns, obj, path, first in rs:
            admin_ns(c, ns)
            allowed, wmsg = webhook_verdict(c, pol, ns, obj, tmp)
            kind, code, msg = try_pod(c, ns, obj, path)
            if kind == "error":
                res["bad"].append("%s: HTTP %s %s" % (label, code, msg[:200]))
            elif allowed and kind == "vap":
                res["bad"].append("%s: webhook admits, VAP refuses: %s" % (label, msg[:200]))
            elif allowed:
                res["both-allow" if kind == "allowed" else "api"] += 1
            elif kind == "allowed":
                compiled = (first in CLAIM_COMPILED) if first else any(
                    w in wmsg for w in ("adminAccess, which", "allocationMode All",
                                        "which the GPU policy does not know",
                                        "untrusted claims may not share a GPU",
                                        "sharing for"))
                if compiled:
                    res["bad"].append("%s: webhook refuses (%s), VAP admits" % (label, wmsg[:200]))
                else:
                    res["gap"].append("%s: %s" % (label, wmsg[:120]))
            else:
                res["both-deny" if kind == "vap" else "api"] += 1
                if kind == "vap" and first in CLAIM_COMPILED:
                    if code == first:
                        res["same"] += 1
                    else:
                        res["bad"].append("%s: webhook's first reason %s, VAP's %s" % (
                            label, first, code))
    note("claims replay: %d runs: %d admitted by both, %d refused by both (%d validate runs "
         "with the webhook's first reason), %d refused by the API server itself, %d refused only "
         "by the webhook (placement checks, not compiled), %d failures" % (
             len(runs), res["both-allow"], res["both-deny"], res["same"], res["api"],
             len(res["gap"]), len(res["bad"])))
    for g in res["gap"]:
        note("  not compiled: " + g)
    ck.expect("vap-claims/replayed", len(runs) >= 40 and res["same"] >= 3,
              "%d runs, %d same-reason" % (len(runs), res["same"]))
    ck.expect("vap-claims/no-false-refusal-or-miss", not res["bad"], "\n".join(res["bad"]))


SCENARIOS = [
    ("vap-shipped", sc_shipped),
    ("vap-golden-replay", sc_golden),
    ("vap-redteam", sc_redteam),
    ("vap-claims", sc_claims),
    ("vap-cost", sc_cost),
]
