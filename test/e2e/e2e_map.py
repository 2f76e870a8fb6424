"""e2e_map.py - the MutatingAdmissionPolicy suite of the end-to-end test (`run_e2e.py --suite
map`, ctest e2e/map; issue 32 item 2): `gpu-admission export map` installed into the real
kube-apiserver v1.37.2 with NO webhook registered (the webhook is away), and every golden
mutate case (test/golden/cases) created with `kubectl create --dry-run=server`.

For each case, the pod the MAP makes the API server store is compared field for field with the
pod the webhook path stores: the same pod created with no MAP installed (the API server's own
defaults: requests from limits, default tolerations ...) is sent to `gpu-admission review
mutate` exactly as the API server would send it, and the answer's patch applied. The golden
runner (ctest golden/cases) already holds the engine to each case's expected patch; this suite
holds the MAP to the engine on the object the API server really admits. Then the expected pod
is created again with the MAP installed: it must come back unchanged (reinvocation, mutation 8),
and the webhook called on it must change nothing (both installed: the MAP runs first).

A case is "not covered", listed with its reason and never counted as a pass, when the MAP is
not meant to reproduce it: not a Pod CREATE, a pod the API server itself refuses, a pod the
webhook refuses (refusing is the ValidatingAdmissionPolicy's job: `export vap`), a rule that
`export map` names as not expressed.

Must never: pass a case whose stored pod differs in any field but the server-made identity
(uid, creationTimestamp, resourceVersion, managedFields, generation); compare under a stale
MAP (each policy set's MAP is waited for by its revision annotation on a placed pod).
"""

import base64
import copy
import json
import os
import shutil
import subprocess
import time

import yaml

from run_e2e import merge_patch, note

HERE = os.path.dirname(os.path.abspath(__file__))
NO_WEBHOOK = True  # run_e2e.py: no `serve`, no chart: the MAP alone mutates
SERVER_MADE = ("uid", "creationTimestamp", "resourceVersion", "managedFields", "generation")


def configure(c):
    pass


def setup(c):
    # pools with runtimeClassName: the RuntimeClass admission plugin refuses a pod naming one
    # that does not exist
    for name in ("nvidia", "kata"):
        c.kubectl("apply", "-f", "-", stdin=json.dumps({
            "apiVersion": "node.k8s.io/v1", "kind": "RuntimeClass",
            "metadata": {"name": name}, "handler": name}))


# ---------------------------------------------------------------------------------- cases

def cases_dir(c):
    return os.path.join(c.args.source_dir, "test", "golden", "cases")


def load_case(c, name):
    """(case dict, pod) or (case, None) with case['why'] set."""
    d = os.path.join(cases_dir(c), name)
    with open(os.path.join(d, "case.yaml")) as f:
        case = yaml.safe_load(f)
    case["name"] = name
    if case.get("hook") != "mutate":
        case["why"] = "a validate case"
        return case, None
    if case.get("operation", "CREATE") != "CREATE":
        case["why"] = "operation %s: the MAP binds CREATE only, as the webhook mutates" % \
            case.get("operation")
        return case, None
    src = case["pod"]
    if isinstance(src, str):
        with open(os.path.join(d, src)) as f:
            docs = [x for x in yaml.safe_load_all(f)]
        pod = docs[case.get("podDocument", 0)]
    else:
        pod = copy.deepcopy(src)
    if "podTemplate" in case:
        t = pod
        for k in case["podTemplate"]:
            t = t[k]
        meta = copy.deepcopy(t.get("metadata") or {})
        meta.setdefault("name", (pod.get("metadata") or {}).get("name", "pod"))
        pod = {"apiVersion": "v1", "kind": "Pod", "metadata": meta,
               "spec": copy.deepcopy(t.get("spec"))}
    if "podMerge" in case:
        pod = merge_patch(pod, case["podMerge"])
    if pod.get("kind") != "Pod":
        case["why"] = "not a Pod (%s)" % pod.get("kind")
        return case, None
    meta = pod.setdefault("metadata", {})
    meta["namespace"] = case["namespace"]
    if not meta.get("name"):
        meta["name"] = "golden-" + name.split("-")[0]
    return case, pod


def policy_dir(c, spec, work):
    """The case's policy set as one directory (a list keeps its order: NN- prefixes)."""
    base = os.path.join(c.args.source_dir, "test", "golden", "policies")
    if isinstance(spec, str):
        return os.path.join(base, spec)
    d = os.path.join(work, "policy-" + "+".join(
        os.path.splitext(p.replace("/", "_"))[0] for p in spec))
    if not os.path.isdir(d):
        os.makedirs(d)
        for i, p in enumerate(spec):
            shutil.copy(os.path.join(base, p), os.path.join(d, "%02d-%s" % (i, os.path.basename(p))))
    return d


# ---------------------------------------------------------------------------------- helpers

def apply_patch(doc, ops):
    """RFC 6902 add/remove/replace (what the engine emits)."""
    doc = copy.deepcopy(doc)

    def split(path):
        return [p.replace("~1", "/").replace("~0", "~") for p in path.split("/")[1:]]
    for op in ops:
        parts = split(op["path"])
        parent = doc
        for p in parts[:-1]:
            parent = parent[int(p)] if isinstance(parent, list) else parent[p]
        last = parts[-1]
        if op["op"] in ("add", "replace"):
            if isinstance(parent, list):
                if last == "-":
                    parent.append(op["value"])
                elif op["op"] == "add":
                    parent.insert(int(last), op["value"])
                else:
                    parent[int(last)] = op["value"]
            else:
                parent[last] = op["value"]
        elif op["op"] == "remove":
            if isinstance(parent, list):
                del parent[int(last)]
            else:
                del parent[last]
        else:
            raise ValueError("unexpected patch op %s" % op["op"])
    return doc


def strip(pod):
    pod = copy.deepcopy(pod)
    for k in SERVER_MADE:
        pod.get("metadata", {}).pop(k, None)
    for cond in (pod.get("status") or {}).get("conditions") or []:
        cond.pop("lastTransitionTime", None)  # the time of each request (a gated pod)
    return pod


def diff(a, b, path=""):
    """The first few differences between two JSON values, as 'path: a != b' lines."""
    out = []
    if isinstance(a, dict) and isinstance(b, dict):
        for k in sorted(set(a) | set(b)):
            if k not in a:
                out.append("%s/%s: only in MAP %s" % (path, k, json.dumps(b[k])[:200]))
            elif k not in b:
                out.append("%s/%s: only in webhook %s" % (path, k, json.dumps(a[k])[:200]))
            else:
                out += diff(a[k], b[k], "%s/%s" % (path, k))
    elif isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        for i, (x, y) in enumerate(zip(a, b)):
            out += diff(x, y, "%s/%d" % (path, i))
    elif a != b:
        out.append("%s: webhook %s != MAP %s" % (path, json.dumps(a)[:300], json.dumps(b)[:300]))
    return out


def dry_run(c, pod):
    """POST the pod as it is (kubectl create --raw: no client-side change such as kubectl's
    last-applied annotation handling) with dryRun=All; (stored pod, error)."""
    ns = pod["metadata"]["namespace"]
    r = c.kubectl("create", "--raw", "/api/v1/namespaces/%s/pods?dryRun=All" % ns, "-f", "-",
                  stdin=json.dumps(pod), check=False)
    if r.returncode != 0:
        return None, (r.stderr or r.stdout).strip()
    return json.loads(r.stdout), None


def webhook(c, pdir, ns, pod):
    """The mutating webhook's answer on the pod the API server would send: (pod, why-not)."""
    r = subprocess.run([c.args.gpu_admission, "review", "mutate", "--policies", pdir, "-n", ns,
                        "-"], input=json.dumps(pod), capture_output=True, text=True, timeout=60)
    if r.returncode != 0:
        raise RuntimeError("review mutate: %s" % r.stderr.strip())
    resp = json.loads(r.stdout)["response"]
    if not resp.get("allowed"):
        msg = (resp.get("status") or {}).get("message", "")
        return None, "the webhook refuses it (the VAP's to refuse): " + msg[:120]
    if not resp.get("patch"):
        return pod, None
    return apply_patch(pod, json.loads(base64.b64decode(resp["patch"]))), None


def export(c, pdir, work):
    out = os.path.join(work, "map-%s.yaml" % os.path.basename(pdir))
    r = subprocess.run([c.args.gpu_admission, "export", "map", "--policies", pdir, "--output",
                        out], capture_output=True, text=True, timeout=60)
    if r.returncode != 0:
        raise RuntimeError("export map --policies %s: exit %d: %s" % (pdir, r.returncode,
                                                                      r.stderr.strip()))
    note_ = "gpu-admission export map: not expressed: rule "
    gaps = [ln[len(note_):].split(":")[0] for ln in r.stderr.splitlines()
            if ln.startswith(note_)]
    return out, gaps


# ---------------------------------------------------------------------------------- scenario

def sc_golden(c, ck):
    """every golden mutate case: the MAP's stored pod == the webhook path's, and idempotent"""
    work = os.path.join(c.work, "map")
    os.makedirs(work, exist_ok=True)
    names = sorted(os.listdir(cases_dir(c)))
    groups, skipped = {}, []
    for name in names:
        case, pod = load_case(c, name)
        if pod is None:
            skipped.append((name, case["why"]))
            continue
        pdir = policy_dir(c, case["policy"], work)
        groups.setdefault(pdir, []).append((case, pod))
    compared = same = 0
    for pdir, items in sorted(groups.items()):
        c.kubectl("delete", "mutatingadmissionpolicybinding,mutatingadmissionpolicy", "-l",
                  "app.kubernetes.io/managed-by=gpu-admission", "--ignore-not-found", "--wait")
        time.sleep(1.5)  # the policy informer drops the old MAP
        # phase 1, no MAP: the pod as the API server admits it, then the webhook's answer
        plan, refused = [], []
        for case, pod in items:
            c.namespace(case["namespace"])
            base, err = dry_run(c, pod)
            if base is None:
                skipped.append((case["name"], "the API server refuses the pod itself: " +
                                err.splitlines()[-1][:120]))
                continue
            want, why = webhook(c, pdir, case["namespace"], base)
            if want is None:
                skipped.append((case["name"], why))
                refused.append((case, pod))
                continue
            plan.append((case, pod, base, want))
        # phase 2: the MAP of this policy set, waited for by its revision on a placed pod
        path, gaps = export(c, pdir, work)
        c.kubectl("apply", "-f", path)
        rev = None
        with open(path) as f:
            for ln in f:
                if ln.startswith("# gpu-admission export map: policy revision "):
                    rev = ln.split()[-1]
        # a pod the MAP places carries this revision (a grouped pod of a gang pool never does:
        # the pods of a rule export map names are no probes; a set with no other placed pod,
        # such as a GB200 policy whose cases are all gangs, waits as a set without probes)
        probes = [p for p in plan if p[3]["metadata"].get("annotations", {}).get(
            "gpu-admission.io/policy") == rev and (p[3]["metadata"].get("annotations") or {})
            .get("gpu-admission.io/rule") not in gaps]
        deadline = time.monotonic() + 30
        while probes:
            if any((dry_run(c, p[1])[0] or {}).get("metadata", {}).get("annotations", {}).get(
                    "gpu-admission.io/policy") == rev for p in probes):
                break
            if time.monotonic() > deadline:
                ck.expect("map/active/" + os.path.basename(pdir), False,
                          "the MAP never placed %s" % probes[0][0]["name"])
                break
            time.sleep(0.5)
        if not probes:
            time.sleep(3)
        # the pods the webhook refuses are the VAP's to refuse; the MAP must still evaluate on
        # them (failurePolicy Fail: an expression error would refuse them in its own name)
        for case, pod in refused:
            got, err = dry_run(c, pod)
            ck.expect("map/evaluates/" + case["name"], got is not None, (err or "")[:300])
        for case, pod, base, want in plan:
            got, err = dry_run(c, pod)
            rule = (want["metadata"].get("annotations") or {}).get("gpu-admission.io/rule")
            if rule in gaps and got is not None and not diff(strip(base), strip(got)):
                # named by export map: the MAP leaves it untouched, as it says
                skipped.append((case["name"], "rule %s: a grouped pod of a gang pool, left "
                                "to the webhook (export map says so)" % rule))
                continue
            compared += 1
            if got is None:
                ck.expect("map/" + case["name"], False, "refused with the MAP: " + err[:300])
                continue
            d = diff(strip(want), strip(got))
            ck.expect("map/" + case["name"], not d, "; ".join(d[:6]))
            if d:
                continue
            same += 1
            # both installed: the webhook, called after the MAP, finds nothing to change
            after, why = webhook(c, pdir, case["namespace"], got)
            d = diff(strip(got), strip(after)) if after is not None else [why]
            ck.expect("map/webhook-after/" + case["name"], not d, "; ".join(d[:6]))
            again, err = dry_run(c, strip(got))
            d = diff(strip(got), strip(again)) if again else ["refused: " + (err or "")[:300]]
            ck.expect("map/idempotent/" + case["name"], not d, "; ".join(d[:6]))
    for name, why in sorted(skipped):
        note("not covered: %s: %s" % (name, why))
    n_validate = len([s for s in skipped if s[1] == "a validate case"])
    note("golden mutate cases: %d compared, %d the same stored pod, %d not covered (and %d "
         "validate cases)" % (compared, same, len(skipped) - n_validate, n_validate))
    ck.expect("map/compared-some", compared > 0, "no case compared")


def sc_excluded(c, ck):
    """the namespaces the chart leaves out (kube-system, its own, the GPU operator's, the
    ignore label) are left out by the MAP too: the GPU operator's validator pods ask
    nvidia.com/gpu to prove a node works"""
    work = os.path.join(c.work, "map")
    os.makedirs(work, exist_ok=True)
    c.kubectl("delete", "mutatingadmissionpolicybinding,mutatingadmissionpolicy", "-l",
              "app.kubernetes.io/managed-by=gpu-admission", "--ignore-not-found", "--wait")
    # the golden cluster set: it changes a 1-GPU pod in any namespace (placed, or kept off the
    # shared pools' nodes), so an untouched pod below is the exclusion's doing
    path, _ = export(c, os.path.join(c.args.source_dir, "test", "golden", "policies", "cluster"),
                     work)
    c.kubectl("apply", "-f", path)

    def pod(ns):
        return {"apiVersion": "v1", "kind": "Pod",
                "metadata": {"name": "validator", "namespace": ns},
                "spec": {"containers": [{"name": "cuda", "image": "x", "resources": {
                    "limits": {"nvidia.com/gpu": "1"}}}]}}

    def untouched(got):
        return got is not None and not (got["metadata"].get("annotations") or {}) and \
            "affinity" not in got["spec"] and \
            "nvidia.com/gpu" in got["spec"]["containers"][0]["resources"]["limits"]
    c.namespace("team-control")
    deadline = time.monotonic() + 30
    got = None
    while time.monotonic() < deadline:
        got, _ = dry_run(c, pod("team-control"))
        if got is not None and not untouched(got):
            break
        time.sleep(0.5)
    ck.expect("map-excluded/control-changed", got is not None and not untouched(got),
              json.dumps(got)[:300])
    for ns, labels in (("gpu-operator", None), ("gpu-admission", None), ("kube-system", None),
                       ("team-ignored", {"gpu-admission.io/ignore": "true"})):
        c.namespace(ns, labels)
        got, err = dry_run(c, pod(ns))
        ck.expect("map-excluded/" + ns, untouched(got), err or json.dumps(got)[:300])


SCENARIOS = [
    ("map-golden", sc_golden),
    ("map-excluded", sc_excluded),
]
