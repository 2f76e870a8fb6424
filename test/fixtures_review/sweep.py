#!/usr/bin/env python3
"""sweep.py - every Pod and AdmissionReview in test/fixtures through the real CLI.

For each fixture file:
  * AdmissionReview envelopes (JSON or YAML) go to `gpu-admission review mutate|validate`
    as they are; bare AdmissionRequests (kubewarden test_data) are sent bare (must be a 400
    Status) and wrapped in a v1 envelope (must be answered).
  * Every pod template anywhere in the file (any object whose spec has a containers list:
    Pods, Deployments, Jobs, PyTorchJobs, MPIJobs, JobSets...) is wrapped as a v1 Pod in an
    AdmissionReview (every third one in v1beta1) with a generated uid, in its own namespace
    and in each namespace given with --namespace.
Every answer must be a well-formed AdmissionReview in the asked version with the uid echoed;
a patch must be base64 of a JSON Patch that `kubectl patch --local` applies, giving exactly
what `gpu-admission mutate` prints; the patched pod must pass the validating hook and a second
mutation must change nothing. Concrete expectations for a few files are in expect.json.

Python standard library only; YAML is read through the project's own reader (gpa_yaml2json).
"""
import argparse
import base64
import copy
import zlib
import json
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "common"))
from workload_kinds import WORKLOAD_KINDS  # noqa: E402

RESPONSE_KEYS = {"uid", "allowed", "patchType", "patch", "warnings", "auditAnnotations", "status"}
PATCH_OPS = {"add", "remove", "replace", "move", "copy", "test"}
V1 = "admission.k8s.io/v1"
V1BETA1 = "admission.k8s.io/v1beta1"


class Sweep:
    def __init__(self, args):
        self.args = args
        self.failures = []
        self.counts = {"reviews": 0, "pods": 0, "patched": 0, "denied": 0, "skipped": 0,
                       "bad_request": 0, "kubectl": 0, "files": 0, "expectations": 0}
        self.seq = 0
        self.tmp = tempfile.mkdtemp(prefix="gpa-sweep-")
        self.results = {}  # (file, pod name, namespace, hook) -> parsed response

    def fail(self, where, msg):
        self.failures.append(f"{where}: {msg}")

    def run(self, argv, data=None):
        p = subprocess.run(argv, input=data, capture_output=True, timeout=60)
        if p.returncode < 0:
            raise RuntimeError(f"{argv[0]} killed by signal {-p.returncode}: "
                               f"{p.stderr.decode(errors='replace')}")
        return p

    # ---- reading fixtures -------------------------------------------------------------------

    def load_docs(self, path):
        if path.endswith(".json"):
            with open(path, "rb") as f:
                return [json.loads(f.read())]
        p = self.run([self.args.yaml2json, path])
        if p.returncode != 0:
            raise RuntimeError(f"yaml2json {path}: {p.stderr.decode(errors='replace')}")
        return json.loads(p.stdout)

    @staticmethod
    def pod_templates(node, out):
        """Every object holding a pod spec: {metadata?, spec: {containers: [...]}}."""
        if isinstance(node, dict):
            spec = node.get("spec")
            if isinstance(spec, dict) and isinstance(spec.get("containers"), list):
                out.append(node)
                return
            for v in node.values():
                Sweep.pod_templates(v, out)
        elif isinstance(node, list):
            for v in node:
                Sweep.pod_templates(v, out)

    # ---- one review ---------------------------------------------------------------------------

    def review(self, where, hook, body_bytes, expect_api, expect_uid):
        """Runs `review HOOK`; checks the answer is a well-formed AdmissionReview."""
        self.counts["reviews"] += 1
        p = self.run([self.args.bin, "review", hook, "--policies", self.args.policies, "-"],
                     body_bytes)
        out = p.stdout
        if p.returncode != 0:
            self.fail(where, f"review {hook} exit {p.returncode}: "
                             f"{p.stderr.decode(errors='replace').strip()}")
            return None
        if not out.endswith(b"\n") or out.count(b"\n") != 1:
            self.fail(where, f"review {hook}: output must be the body plus one newline")
            return None
        try:
            r = json.loads(out[:-1])
        except ValueError as e:
            self.fail(where, f"review {hook}: response is not JSON: {e}")
            return None
        if set(r) != {"apiVersion", "kind", "response"}:
            self.fail(where, f"review {hook}: top-level keys {sorted(r)}")
            return None
        if r["apiVersion"] != expect_api or r["kind"] != "AdmissionReview":
            self.fail(where, f"review {hook}: answered {r['apiVersion']} {r['kind']}, "
                             f"asked {expect_api}")
        resp = r["response"]
        if not isinstance(resp, dict) or not set(resp) <= RESPONSE_KEYS:
            self.fail(where, f"review {hook}: response keys {sorted(resp)}")
            return None
        if resp.get("uid") != expect_uid:
            self.fail(where, f"review {hook}: uid {resp.get('uid')!r} != {expect_uid!r}")
        if not isinstance(resp.get("allowed"), bool):
            self.fail(where, f"review {hook}: allowed is not a boolean")
            return None
        for w in resp.get("warnings", []):
            if not isinstance(w, str) or len(w) >= 120:
                self.fail(where, f"review {hook}: warning not a string under 120 chars: {w!r}")
        if "warnings" in resp and not resp["warnings"]:
            self.fail(where, f"review {hook}: empty warnings list must be omitted")
        aa = resp.get("auditAnnotations", {})
        if not isinstance(aa, dict) or not all(isinstance(v, str) for v in aa.values()):
            self.fail(where, f"review {hook}: auditAnnotations must map strings to strings")
        if resp["allowed"]:
            if "status" in resp:
                self.fail(where, f"review {hook}: allowed with a status")
        else:
            self.counts["denied"] += 1
            st = resp.get("status", {})
            if (st.get("code") != 403 or st.get("reason") != "Forbidden"
                    or not isinstance(st.get("message"), str) or not st["message"]):
                self.fail(where, f"review {hook}: denial without 403/Forbidden/message: {st}")
            if "patch" in resp:
                self.fail(where, f"review {hook}: denied with a patch")
        if "patch" in resp or "patchType" in resp:
            if hook != "mutate":
                self.fail(where, "validating hook answered with a patch")
            if resp.get("patchType") != "JSONPatch":
                self.fail(where, f"patchType {resp.get('patchType')!r}")
            try:
                ops = json.loads(base64.b64decode(resp.get("patch", ""), validate=True))
            except ValueError as e:
                self.fail(where, f"patch is not base64 of JSON: {e}")
                return None
            if not isinstance(ops, list) or not ops:
                self.fail(where, "patch is not a non-empty JSON array")
                return None
            for op in ops:
                if (not isinstance(op, dict) or op.get("op") not in PATCH_OPS
                        or not isinstance(op.get("path"), str)
                        or not (op["path"] == "" or op["path"].startswith("/"))
                        or (op["op"] in ("add", "replace", "test") and "value" not in op)):
                    self.fail(where, f"malformed patch operation {op!r}")
                    return None
            resp["_ops"] = ops
        return resp

    # ---- pods ---------------------------------------------------------------------------------

    def envelope(self, api, uid, op, ns, pod, old=None):
        req = {"uid": uid,
               "kind": {"group": "", "version": "v1", "kind": "Pod"},
               "resource": {"group": "", "version": "v1", "resource": "pods"},
               "requestKind": {"group": "", "version": "v1", "kind": "Pod"},
               "requestResource": {"group": "", "version": "v1", "resource": "pods"},
               "name": pod["metadata"].get("name", ""),
               "namespace": ns, "operation": op,
               "userInfo": {"username": "system:serviceaccount:kube-system:job-controller",
                            "groups": ["system:serviceaccounts", "system:authenticated"]},
               "object": pod, "oldObject": old, "dryRun": False,
               "options": {"kind": "CreateOptions", "apiVersion": "meta.k8s.io/v1"}}
        return json.dumps({"kind": "AdmissionReview", "apiVersion": api,
                           "request": req}).encode()

    def kubectl_patch(self, where, pod, ops):
        self.counts["kubectl"] += 1
        path = os.path.join(self.tmp, "pod.json")
        with open(path, "w") as f:
            json.dump(pod, f)
        p = self.run([self.args.kubectl, "patch", "--local", "-f", path, "--type=json",
                      "-p", json.dumps(ops), "-o", "json"])
        if p.returncode != 0:
            self.fail(where, f"kubectl patch --local refused the patch: "
                             f"{p.stderr.decode(errors='replace').strip()}\npatch: {ops}")
            return None
        return json.loads(p.stdout)

    def cli_mutate(self, where, pod, ns):
        path = os.path.join(self.tmp, "cli-pod.json")
        with open(path, "w") as f:
            json.dump(pod, f)
        p = self.run([self.args.bin, "mutate", "--policies", self.args.policies, "-n", ns, path])
        if p.returncode != 0:
            self.fail(where, f"mutate exit {p.returncode} where review allowed: "
                             f"{p.stderr.decode(errors='replace').strip()}")
            return None
        return json.loads(p.stdout)

    def sweep_pod(self, where, pod, ns, key):
        self.counts["pods"] += 1
        self.seq += 1
        uid = f"sweep-{self.seq:04d}-{'%08x' % zlib.crc32(where.encode())}"
        api = V1BETA1 if self.seq % 3 == 0 else V1
        body = self.envelope(api, uid, "CREATE", ns, pod)
        loc = f"{where} [ns {ns}, {api}]"
        mut = self.review(loc, "mutate", body, api, uid)
        val = self.review(loc, "validate", body, api, uid)
        self.results[key + ("mutate",)] = mut
        self.results[key + ("validate",)] = val
        if mut is None or not mut["allowed"]:
            return
        patched = pod
        if "_ops" in mut:
            self.counts["patched"] += 1
            patched = self.kubectl_patch(loc, pod, mut["_ops"])
            if patched is None:
                return
            cli = self.cli_mutate(loc, pod, ns)
            if cli is not None and cli != patched:
                self.fail(loc, "`mutate` output differs from the pod kubectl patched:\n"
                               f"  mutate:  {json.dumps(cli, sort_keys=True)}\n"
                               f"  kubectl: {json.dumps(patched, sort_keys=True)}")
            mut["_patched"] = patched
        # What the mutating hook let through (and changed) must pass the validating hook,
        # and mutating it again must change nothing (reinvocationPolicy: IfNeeded).
        self.seq += 1
        uid2 = f"sweep-{self.seq:04d}-again"
        body2 = self.envelope(V1, uid2, "CREATE", ns, patched)
        again = self.review(loc + " (mutated pod)", "mutate", body2, V1, uid2)
        if again is not None and ("patch" in again or not again["allowed"]):
            self.fail(loc, "mutating the mutated pod again is not a no-op: "
                           f"allowed={again['allowed']} ops={again.get('_ops')} "
                           f"status={again.get('status')}")
        check = self.review(loc + " (mutated pod)", "validate", body2, V1, uid2)
        if check is not None and not check["allowed"]:
            self.fail(loc, f"the mutated pod fails the validating hook: {check.get('status')}")

    # ---- files --------------------------------------------------------------------------------

    def sweep_review_doc(self, where, doc):
        req = doc.get("request") if isinstance(doc.get("request"), dict) else {}
        api = doc.get("apiVersion")
        uid = req.get("uid")
        if not isinstance(uid, str) or not uid:
            # Partial review (gator samples): a 400, then answered once given a uid.
            for hook in ("mutate", "validate"):
                self.expect_400(where + " (as is)", hook, json.dumps(doc).encode())
            doc = copy.deepcopy(doc)
            self.seq += 1
            uid = f"sweep-{self.seq:04d}-uid-added"
            doc["request"]["uid"] = uid
            where += " (uid added)"
        for hook in ("mutate", "validate"):
            r = self.review(where, hook, json.dumps(doc).encode(), api, uid)
            self.results[(where, hook)] = r
            obj = req.get("object")
            if r is not None and (not isinstance(obj, dict) or obj.get("kind") != "Pod"):
                # Not a pod (CustomType, Deployment, DELETE with object null): untouched.
                self.counts["skipped"] += 1
                if set(r) - {"_ops"} != {"uid", "allowed"} or not r["allowed"]:
                    self.fail(where, f"review {hook}: a non-Pod request must be allowed "
                                     f"untouched, got {sorted(r)}")

    def expect_400(self, where, hook, body):
        self.counts["bad_request"] += 1
        p = self.run([self.args.bin, "review", hook, "--policies", self.args.policies, "-"], body)
        if p.returncode != 1:
            self.fail(where, f"review {hook}: exit {p.returncode}, expected 1 (bad request)")
            return
        try:
            st = json.loads(p.stdout)
        except ValueError:
            self.fail(where, f"review {hook}: 400 body is not JSON")
            return
        if st.get("kind") != "Status" or st.get("code") != 400 or st.get("reason") != "BadRequest":
            self.fail(where, f"review {hook}: 400 body is not a BadRequest Status: {st}")
        if not p.stderr.strip():
            self.fail(where, f"review {hook}: no reason on stderr for a 400")

    def sweep_cli_file(self, rel, path, n_pod_docs):
        """`mutate` on the file itself: Pods printed, other kinds skipped, no crash."""
        p = self.run([self.args.bin, "mutate", "--policies", self.args.policies, path])
        err = p.stderr.decode(errors="replace")
        if n_pod_docs == 0:
            if p.returncode != 1 or "no Pod" not in err:
                self.fail(rel, f"mutate on a file without Pods: exit {p.returncode}, {err!r}")
            return
        if p.returncode not in (0, 2):
            self.fail(rel, f"mutate exit {p.returncode}: {err.strip()}")
            return
        if p.returncode == 2 and "denied" not in err:
            self.fail(rel, "mutate exit 2 without a denial on stderr")
        if p.stdout.strip():
            if path.endswith(".json"):
                json.loads(p.stdout)
            else:
                out = os.path.join(self.tmp, "out.yaml")
                with open(out, "wb") as f:
                    f.write(p.stdout)
                docs = self.load_docs(out)
                printable = ("Pod", "ResourceClaim", "ResourceClaimTemplate")
                if not all(d.get("kind") in printable for d in docs) or len(docs) > n_pod_docs:
                    self.fail(rel, "mutate printed something other than the admitted Pods "
                                   "and claims")

    def pods_of(self, doc):
        """(index, Pod, namespace) for every pod template in doc, the template wrapped as a
        v1 Pod named after it (or its owner) in its own namespace (default: default)."""
        templates = []
        self.pod_templates(doc, templates)
        doc_ns = (doc.get("metadata") or {}).get("namespace") if isinstance(
            doc.get("metadata"), dict) else None
        for ti, t in enumerate(templates):
            md = copy.deepcopy(t.get("metadata") if isinstance(t.get("metadata"), dict) else {})
            name = md.get("name") or (doc.get("metadata") or {}).get("name") or "pod"
            md.setdefault("name", f"{name}-{ti}" if t is not doc else name)
            pod = {"apiVersion": "v1", "kind": "Pod", "metadata": md,
                   "spec": copy.deepcopy(t["spec"])}
            yield ti, pod, md.get("namespace") or doc_ns or "default"

    def sweep_variant(self, e):
        """An expectation's own admission: a fixture's pod template with labels/annotations
        added (e.g. what a rule needs to match), in a namespace. Checked like every pod."""
        rel = e["file"]
        docs = self.load_docs(os.path.join(self.args.fixtures, rel))
        doc = docs[e.get("doc", 0)]
        for ti, pod, _ in self.pods_of(doc):
            if ti != e.get("template", 0):
                continue
            pod["metadata"]["namespace"] = e["namespace"]
            for k in ("labels", "annotations"):
                if k in e["add_metadata"]:
                    pod["metadata"].setdefault(k, {}).update(e["add_metadata"][k])
            key = (rel, e.get("doc", 0), ti, e["namespace"] + "+" + e["variant"])
            self.sweep_pod(f"{rel} template {ti} variant {e['variant']}", pod, e["namespace"], key)

    def sweep_file(self, rel):
        path = os.path.join(self.args.fixtures, rel)
        self.counts["files"] += 1
        try:
            docs = self.load_docs(path)
        except (RuntimeError, ValueError) as e:
            self.fail(rel, f"cannot read: {e}")
            return
        n_pod_docs = 0
        for di, doc in enumerate(docs):
            where = f"{rel}#{di}"
            if not isinstance(doc, dict):
                continue
            if doc.get("kind") == "AdmissionReview":
                self.sweep_review_doc(where, doc)
                continue
            if "request" not in doc and "uid" in doc and "operation" in doc:
                # A bare AdmissionRequest: refused as is, answered once wrapped.
                for hook in ("mutate", "validate"):
                    self.expect_400(where + " (bare request)", hook, json.dumps(doc).encode())
                self.sweep_review_doc(where + " (wrapped v1)",
                                      {"apiVersion": V1, "kind": "AdmissionReview",
                                       "request": doc})
                continue
            if doc.get("kind") == "Pod" or (
                    str(doc.get("apiVersion", "")).startswith("resource.k8s.io/")
                    and doc.get("kind") in ("ResourceClaim", "ResourceClaimTemplate")):
                # `mutate` prints Pods and DRA claims (issue 24), each as admitted
                n_pod_docs += 1
            elif (str(doc.get("apiVersion", "")).split("/")[0] if "/" in str(
                    doc.get("apiVersion", "")) else "", doc.get("kind")) in WORKLOAD_KINDS:
                # `mutate` runs a workload's pod templates as Pods (issue 16): one Pod per
                # template, at most.
                tmpls = []
                self.pod_templates(doc, tmpls)
                n_pod_docs += len(tmpls)
            for ti, pod, own_ns in self.pods_of(doc):
                md = pod["metadata"]
                for ns in dict.fromkeys([own_ns] + self.args.namespace):
                    md2 = copy.deepcopy(pod)
                    md2["metadata"]["namespace"] = ns
                    self.sweep_pod(f"{where} pod template {ti} ({md['name']})", md2, ns,
                                   (rel, di, ti, ns))
        if not path.endswith(".json") or any(
                isinstance(d, dict) and d.get("kind") == "Pod" for d in docs):
            self.sweep_cli_file(rel, path, n_pod_docs)

    # ---- concrete expectations ---------------------------------------------------------------

    def check_expectations(self):
        with open(self.args.expect) as f:
            expect = json.load(f)
        for e in expect:
            self.counts["expectations"] += 1
            if "review" in e:  # an AdmissionReview fixture, sent as it is (or wrapped)
                key = (e["review"], e["hook"])
                where = f"expect {e['review']} {e['hook']}"
            else:  # a pod (template) of a file, admitted into a namespace
                ns = e["namespace"]
                if "add_metadata" in e:
                    if (e["file"], e.get("doc", 0), e.get("template", 0),
                            ns + "+" + e["variant"], e["hook"]) not in self.results:
                        self.sweep_variant(e)
                    ns += "+" + e["variant"]
                key = (e["file"], e.get("doc", 0), e.get("template", 0), ns, e["hook"])
                where = f"expect {e['file']} template {e.get('template', 0)} " \
                        f"ns {e['namespace']} {e['hook']}"
            r = self.results.get(key)
            if r is None:
                self.fail(where, "no such review in the sweep (or it was malformed)")
                continue
            if "allowed" in e and r["allowed"] != e["allowed"]:
                self.fail(where, f"allowed {r['allowed']}, expected {e['allowed']} "
                                 f"({r.get('status')})")
            if "message_contains" in e and e["message_contains"] not in \
                    (r.get("status") or {}).get("message", ""):
                self.fail(where, f"denial message {r.get('status')} lacks "
                                 f"{e['message_contains']!r}")
            for k, v in e.get("audit", {}).items():
                if r.get("auditAnnotations", {}).get(k) != v:
                    self.fail(where, f"auditAnnotations[{k}] = "
                                     f"{r.get('auditAnnotations', {}).get(k)!r}, expected {v!r}")
            if e.get("no_patch") and "patch" in r:
                self.fail(where, f"expected no patch, got {r.get('_ops')}")
            if "audit_absent" in e:
                for k in e["audit_absent"]:
                    if k in r.get("auditAnnotations", {}):
                        self.fail(where, f"unexpected auditAnnotations[{k}]")
            pod = r.get("_patched")
            for ptr, v in e.get("pod", {}).items():
                got = resolve(pod, ptr) if pod is not None else "<no patch>"
                if got != v:
                    self.fail(where, f"mutated pod {ptr} = {got!r}, expected {v!r}")
            for ptr in e.get("pod_present", []):
                if pod is None or resolve(pod, ptr) is MISSING:
                    self.fail(where, f"mutated pod lacks {ptr}")
            for ptr in e.get("pod_absent", []):
                if pod is None or resolve(pod, ptr) is not MISSING:
                    self.fail(where, f"mutated pod still has {ptr}")


MISSING = object()


def resolve(doc, pointer):
    """RFC 6901 pointer lookup; MISSING when absent."""
    cur = doc
    for tok in pointer.split("/")[1:]:
        tok = tok.replace("~1", "/").replace("~0", "~")
        if isinstance(cur, list):
            try:
                cur = cur[int(tok)]
            except (ValueError, IndexError):
                return MISSING
        elif isinstance(cur, dict) and tok in cur:
            cur = cur[tok]
        else:
            return MISSING
    return cur


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--bin", required=True)
    ap.add_argument("--yaml2json", required=True)
    ap.add_argument("--policies", required=True)
    ap.add_argument("--fixtures", required=True)
    ap.add_argument("--files", required=True, help="list of fixture paths, one a line")
    ap.add_argument("--expect", required=True)
    ap.add_argument("--kubectl", default="kubectl")
    ap.add_argument("--namespace", action="append", default=[],
                    help="extra namespace every pod is also admitted into")
    args = ap.parse_args()
    with open(args.files) as f:
        files = [ln.strip() for ln in f if ln.strip() and not ln.startswith("#")]
    s = Sweep(args)
    p = subprocess.run([args.kubectl, "version", "--client"], capture_output=True)
    if p.returncode != 0:
        print(f"kubectl not usable at {args.kubectl} (run scripts/setup.sh test)")
        return 1
    for rel in files:
        try:
            s.sweep_file(rel)
        except (RuntimeError, subprocess.TimeoutExpired) as e:
            s.fail(rel, str(e))
    s.check_expectations()
    print("sweep: " + ", ".join(f"{k} {v}" for k, v in s.counts.items()))
    for f in s.failures:
        print("FAIL " + f)
    print(f"{len(s.failures)} failures")
    return 1 if s.failures or s.counts["pods"] == 0 else 0


if __name__ == "__main__":
    sys.exit(main())
