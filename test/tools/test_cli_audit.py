#!/usr/bin/env python3
"""test_cli_audit.py - `gpu-admission audit` as a user runs it (python3 stdlib + Debian's
python3-yaml for the CRD).

Proves: the shipped policy over the fixtures' cluster objects (fixtures/cluster-pods.json, made
by make_cluster_fixture.py, and the real upstream objects in test/fixtures) gives the golden
PolicyReports and summaries in fixtures/audit-golden; every report validates against the
published wgpolicyk8s.io v1alpha2 CRD schema (test/fixtures/wg-policy-prototypes), and the
validator rejects reports broken the ways a writer could break them; counts add up; a warn,
an error and a cluster-scoped result; --format json, --out, --max-results, --exit-code, exit 2
on bad flags, unreadable input and a broken policy set.

The golden shifts whenever the shipped policy or the engine changes a verdict. Regenerate it
with --update (writes fixtures/audit-golden/*) and review the diff by hand before committing:

    python3 test/tools/test_cli_audit.py --bin build/gpu-admission --src . --update

usage: test_cli_audit.py --bin GPU_ADMISSION --src SOURCE_DIR [--update]
"""
import json
import os
import shutil
import sys
import tempfile

import yaml

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "common"))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from clitest import check, finish, parse_args, runner  # noqa: E402
import crd_schema  # noqa: E402

UPDATE = "--update" in sys.argv
if UPDATE:
    sys.argv.remove("--update")
args = parse_args()
BIN, SRC = args.bin, args.src
GOLDEN = os.path.join(SRC, "test", "tools", "fixtures", "audit-golden")
CRD_DIR = os.path.join(SRC, "test", "fixtures", "wg-policy-prototypes")
audit = runner(BIN, "audit")

# The fixtures' cluster objects, relative to SRC so the golden names them the same everywhere.
INPUTS = ["test/tools/fixtures/cluster-pods.json", "test/fixtures/k8s-api/v1.36.0/core.v1.Pod.json"]
for d in ["hami", "kubeflow-mpi-operator", "kubeflow-training-operator", "kueue",
          "nvidia-cloud-native-docs", "nvidia-gpu-operator", "nvidia-k8s-device-plugin",
          "nvidia-k8s-dra-driver-gpu", "openshift-instaslice-operator", "upstream-workloads"]:
    for f in sorted(os.listdir(os.path.join(SRC, "test", "fixtures", d))):
        if f.endswith(".yaml"):
            INPUTS.append("test/fixtures/%s/%s" % (d, f))

CRDS = []
for f in sorted(os.listdir(CRD_DIR)):
    with open(os.path.join(CRD_DIR, f)) as fh:
        CRDS += [d for d in yaml.safe_load_all(fh) if d]


def reports_of(text):
    return [d for d in yaml.safe_load_all(text) if d]


# ---- the golden ----
tmp = tempfile.mkdtemp(prefix="audit-")
out_dir = os.path.join(tmp, "out")
rc, out, err = audit("--policies", "policies", "--out", out_dir, *INPUTS, cwd=SRC)
check(rc == 0, "golden run: %d %s" % (rc, err))
names = ["policyreports.yaml", "summary.txt", "summary.json"]
if UPDATE:
    os.makedirs(GOLDEN, exist_ok=True)
    for n in names:
        shutil.copy(os.path.join(out_dir, n), os.path.join(GOLDEN, n))
    print("wrote %s: review `git diff %s` before committing" % (GOLDEN, GOLDEN))
for n in names:
    with open(os.path.join(out_dir, n)) as a, open(os.path.join(GOLDEN, n)) as b:
        got, want = a.read(), b.read()
    check(got == want, "%s differs from the golden (regenerate with --update and review)" % n)
with open(os.path.join(out_dir, "summary.txt")) as fh:
    check(out == fh.read(), "stdout (-o text) is summary.txt")

with open(os.path.join(out_dir, "policyreports.yaml")) as fh:
    golden_text = fh.read()
reports = reports_of(golden_text)
summary = json.load(open(os.path.join(out_dir, "summary.json")))

# ---- every report against the CRD schema ----
for r in reports:
    errs = crd_schema.validate(CRDS, r)
    check(not errs, "%s %s/%s: %s" % (r["kind"], r["metadata"].get("namespace"),
                                      r["metadata"]["name"], errs))
kinds = [r["kind"] for r in reports]
check(kinds[-1] == "ClusterPolicyReport" and kinds.count("ClusterPolicyReport") == 1,
      "one ClusterPolicyReport, last: %s" % kinds)
nss = [r["metadata"]["namespace"] for r in reports if r["kind"] == "PolicyReport"]
check(nss == sorted(set(nss)), "one PolicyReport per namespace, sorted: %s" % nss)

# ---- the validator is not a rubber stamp: each way of breaking a report is caught ----
sample = next(r for r in reports if r["kind"] == "PolicyReport" and r["results"])


def broken(edit):
    r = json.loads(json.dumps(sample))
    edit(r)
    return crd_schema.validate(CRDS, r)


check(not crd_schema.validate(CRDS, sample), "the sample is valid")
check(broken(lambda r: r["results"][0].update(result="failed")), "result outside the enum")
check(broken(lambda r: r["results"][0].pop("policy")), "result without policy")
check(broken(lambda r: r["results"][0].update(status="pass")), "unknown result field")
check(broken(lambda r: r["summary"].update(pass_="1")), "unknown summary field")
check(broken(lambda r: r["summary"].update({"pass": "1"})), "summary count as a string")
check(broken(lambda r: r["results"][0]["properties"].update(n=1)), "non-string property")
check(broken(lambda r: r["results"][0].update(timestamp={"seconds": 1})), "timestamp without nanos")
check(broken(lambda r: r.update(kind="ClusterPolicyReport")), "namespace on a cluster report")
check(broken(lambda r: r["metadata"].update(namespace="Not_A_Label")), "bad namespace")
check(broken(lambda r: r.update(apiVersion="wgpolicyk8s.io/v9")), "unknown version")

# ---- the results say what the engine says ----
rc, rev_out, _ = runner(BIN, "check")("-o", "json", os.path.join(SRC, "policies"))
revision = json.loads(rev_out).get("revision") if rc == 0 else None
check(revision and summary["policyRevision"] == revision, "revision is check's: %s" % revision)
totals = {"pass": 0, "warn": 0, "fail": 0, "error": 0}
for r in reports:
    check(r["metadata"]["annotations"]["gpu-admission.io/policy-revision"] == revision,
          "report annotated with the revision")
    counted = {k: 0 for k in totals}
    for res in r["results"]:
        counted[res["result"]] += 1
        check(res["properties"]["policyRevision"] == revision, "result carries the revision")
        check(len(res["resources"]) == 1, "one object per result")
        ref = res["resources"][0]
        check(ref.get("namespace") == r["metadata"].get("namespace"),
              "result of %s in the report of its namespace" % ref)
    for k in totals:
        check(r["summary"][k] == counted[k], "%s summary.%s" % (r["metadata"].get("namespace"), k))
        totals[k] += counted[k]
# the round-trip Pod fixture's namespace "namespaceValue" cannot exist: an error in the
# summary, in no report
bad_ns = [f for f in summary["findings"] if "namespaceValue" in f["message"]]
check(len(bad_ns) == 1 and bad_ns[0]["result"] == "error", "invalid namespace: %s" % bad_ns)
totals["error"] += len(bad_ns)
check(summary["results"] == totals, "summary.json totals %s = %s" % (summary["results"], totals))
check(summary["objects"] == summary["judged"] + summary["notJudged"], "objects = judged + not")
by_obj = {}
for r in reports:
    for res in r["results"]:
        ref = res["resources"][0]
        by_obj[(ref["kind"], ref.get("namespace"), ref["name"])] = res
# cluster-pods.json is a cluster that ran test/tools/policies-base (the shipped set before
# issue 33 made unmatched: deny its default): under that set, a pod it placed, read back from
# the cluster, is judged as its request: pass
BASE = os.path.join("test", "tools", "policies-base")
rc, base_out, err = audit("--policies", BASE, "-o", "reports", INPUTS[0], cwd=SRC)
base_res = {(res["resources"][0].get("namespace"), res["resources"][0]["name"]): res
            for r in reports_of(base_out) for res in r["results"]}
small = base_res.get(("inference-a", "small"), {})
check(small.get("result") == "pass" and small.get("rule") == "inference-small" and
      small["properties"].get("judgedAs") == "reconstructed", "inference-a/small: %s" % small)
check(all(res["message"] for res in by_obj.values()), "every result has a message")
# a CPU pod and a Service get no result
check(("Pod", "kube-system", "coredns-7db6d8ff4d-x2x9k") not in by_obj, "CPU pod: no result")
check(("Service", "default", "kubernetes") not in by_obj, "Service: no result")

# ---- --format json: a v1 List of the same objects ----
rc, out, err = audit("--policies", "policies", "--format", "json", "-o", "reports", *INPUTS,
                     cwd=SRC)
check(rc == 0, "json reports: %d %s" % (rc, err))
lst = json.loads(out) if rc == 0 else {}
check(lst.get("kind") == "List" and lst.get("items") == reports, "json List = the YAML reports")
rc, out, err = audit("--policies", "policies", "-o", "reports", *INPUTS, cwd=SRC)
check(rc == 0 and out == golden_text, "-o reports prints policyreports.yaml")
rc, out, err = audit("--policies", "policies", "-o", "json", *INPUTS, cwd=SRC)
check(rc == 0 and json.loads(out) == summary, "-o json prints summary.json")

# ---- --max-results splits a namespace's report, counts and schema intact ----
rc, out, err = audit("--policies", "policies", "--max-results", "1", "-o", "reports", *INPUTS,
                     cwd=SRC)
split = reports_of(out) if rc == 0 else []
check(rc == 0 and all(len(r["results"]) <= 1 for r in split), "max 1 result per report")
check(sum(len(r["results"]) for r in split) == sum(len(r["results"]) for r in reports),
      "no result lost in the split")
names_ = [(r["metadata"].get("namespace"), r["metadata"]["name"]) for r in split]
check(len(set(names_)) == len(names_), "split reports have distinct names")
check(("default", "gpu-admission-2") in names_, "second report of default: gpu-admission-2")
check(all(not crd_schema.validate(CRDS, r) for r in split), "split reports valid")

# ---- warn (enforcement warn), error (a pod the webhook cannot answer), cluster-scoped ----
pol = os.path.join(tmp, "policies")
shutil.copytree(os.path.join(SRC, "policies"), pol, ignore=shutil.ignore_patterns("tests"))
with open(os.path.join(pol, "00-tenancy.yaml")) as fh:
    ten = fh.read()
check("enforcement: deny" in ten, "shipped tenancy says enforcement: deny")
with open(os.path.join(pol, "00-tenancy.yaml"), "w") as fh:
    fh.write(ten.replace("enforcement: deny", "enforcement: warn"))
with open(os.path.join(pol, "30-kinds.yaml"), "w") as fh:
    fh.write("apiVersion: gpu-admission.io/v1alpha1\nkind: GPUPolicy\nmetadata: {name: kinds}\n"
             "spec:\n  workloads:\n    kinds:\n"
             "      - {apiGroup: trainer.kubeflow.org, kind: ClusterTrainingRuntime,\n"
             "         templates: [\"spec.template.spec.replicatedJobs.*.template.spec.template\"]}\n")
objs = os.path.join(tmp, "objs.yaml")
with open(objs, "w") as fh:
    fh.write("""apiVersion: v1
kind: Pod
metadata: {name: shared, namespace: research-a}
spec:
  containers:
  - name: c
    image: x
    resources: {limits: {nvidia.com/gpu.shared: 1}}
---
apiVersion: v1
kind: Pod
metadata: {name: broken, namespace: research-a}
spec:
  containers: [{name: c}]
""".replace("apiVersion: v1\nkind: Pod\nmetadata: {name: broken", "apiVersion: 1\nkind: Pod\nmetadata: {name: broken"))
rc, out, err = audit("--policies", pol, "-o", "reports",
                     objs, os.path.join(SRC, "test/fixtures/kubeflow-trainer/"
                                        "torchtune_llama3_2_1B_runtime.yaml"))
extra = reports_of(out) if rc == 0 else []
check(rc == 0, "warn/error/cluster run: %d %s" % (rc, err))
res = {(x["resources"][0]["kind"], x["resources"][0]["name"]): x
       for r in extra for x in r["results"]}
sh = res.get(("Pod", "shared"), {})
check(sh.get("result") == "warn" and sh.get("message"), "enforcement warn: a warn result %s" % sh)
br = res.get(("Pod", "broken"), {})
check(br.get("result") == "error" and "rule" not in br and br.get("message"),
      "a pod the webhook cannot answer: an error result %s" % br)
cl = [r for r in extra if r["kind"] == "ClusterPolicyReport"]
check(len(cl) == 1 and any(x["resources"][0]["kind"] == "ClusterTrainingRuntime"
                           for x in cl[0]["results"]),
      "a cluster-scoped workload lands in the ClusterPolicyReport")
check(all(not crd_schema.validate(CRDS, r) for r in extra), "warn/error/cluster reports valid")
# the shipped set (enforcement deny) refuses the untrusted pod the shared card: fail
rc, out, err = audit("--policies", os.path.join(SRC, "policies"), "-o", "reports", objs)
fl = [x for r in reports_of(out) for x in r["results"] if x["resources"][0]["name"] == "shared"]
check(rc == 0 and len(fl) == 1 and fl[0]["result"] == "fail" and
      fl[0]["message"] == sh.get("message"), "enforcement deny: the same message as a fail %s" % fl)
rc, out, err = audit("--policies", pol, "--exit-code", objs)
check(rc == 1, "--exit-code with an error result: 1, got %d" % rc)

# ---- a workload's templates under one rule are one result naming both ----
job = os.path.join(tmp, "job.yaml")
with open(job, "w") as fh:
    fh.write('''apiVersion: kubeflow.org/v1
kind: PyTorchJob
metadata: {name: llama, namespace: ml-platform}
spec:
  pytorchReplicaSpecs:
    Master:
      replicas: 1
      template:
        spec:
          containers: [{name: pytorch, image: x, resources: {limits: {nvidia.com/gpu: 8}}}]
    Worker:
      replicas: 3
      template:
        spec:
          containers: [{name: pytorch, image: x, resources: {limits: {nvidia.com/gpu: 8}}}]
''')
rc, out, err = audit("--policies", os.path.join(SRC, "policies"), "-o", "reports", job)
jr = [x for r in reports_of(out) for x in r["results"]] if rc == 0 else []
check(len(jr) == 1, "two templates, one rule: one result %s" % jr)
if jr:
    check(jr[0]["rule"] == "training" and jr[0]["result"] == "pass", "job: %s" % jr[0])
    check(jr[0]["properties"].get("template") ==
          "spec.pytorchReplicaSpecs.Master.template,spec.pytorchReplicaSpecs.Worker.template",
          "both templates named: %s" % jr[0]["properties"])
    check(jr[0]["message"].count("admitted by rule training") == 2 and
          "spec.pytorchReplicaSpecs.Worker.template: " in jr[0]["message"],
          "each template's message: %s" % jr[0]["message"])

# ---- a stored pod whose request cannot be rebuilt, refused as stored: warn, not fail (as
# diff's "original unknown": what its request got is not known) ----
with open(os.path.join(SRC, INPUTS[0])) as fh:
    alice = next(o for o in json.load(fh)["items"] if o["metadata"]["name"] == "nb-alice")
alice["metadata"]["name"] = "nb-doubled"
for ctr in alice["spec"]["containers"]:
    for k in ("limits", "requests"):
        ctr["resources"][k]["nvidia.com/gpu.shared"] = "2"
asis = os.path.join(tmp, "asis.json")
with open(asis, "w") as fh:
    json.dump(alice, fh)
rc, out, err = audit("--policies", os.path.join(SRC, "policies"), "-o", "reports", asis)
ar = [x for r in reports_of(out) for x in r["results"]] if rc == 0 else []
check(len(ar) == 1 and ar[0]["result"] == "warn" and ar[0]["properties"].get("judgedAs") ==
      "as-is" and ar[0]["message"].startswith("as stored (its original request could not be "
                                              "rebuilt), the policy would refuse it: "),
      "as-is refusal: a warn %s" % ar)
check(ar and ar[0]["properties"].get("reason") == "shared-count", "its reason: %s" % ar)

# ---- exit codes ----
rc, _, _ = audit("--policies", BASE, "--exit-code", INPUTS[0], cwd=SRC)
check(rc == 0, "--exit-code, nothing fails in cluster-pods.json under its own set: 0, got %d" % rc)
rc, _, _ = audit("--policies", "policies", "--exit-code", INPUTS[0], cwd=SRC)
check(rc == 1, "--exit-code, the shipped set refuses its unmatched sandbox pod: 1, got %d" % rc)
rc, _, _ = audit("--policies", "policies", "--exit-code", *INPUTS, cwd=SRC)
check(rc == 1, "--exit-code on the golden (an error): 1, got %d" % rc)
for bad in (["--format", "xml"], ["-o", "html"], ["--max-results", "-1"], ["--max-results", "x"],
            ["--bogus"]):
    rc, _, err = audit("--policies", "policies", *bad, INPUTS[0], cwd=SRC)
    check(rc == 2 and "gpu-admission audit" in err, "%s: exit 2 (%d) %s" % (bad, rc, err))
rc, _, err = audit(INPUTS[0], cwd=SRC)
check(rc == 2 and "--policies" in err, "no --policies: 2")
rc, _, err = audit("--policies", "policies", "/nonexistent.json", cwd=SRC)
check(rc == 2 and "/nonexistent.json" in err, "unreadable input: 2 %s" % err)
with open(os.path.join(pol, "20-rules.yaml"), "a") as fh:
    fh.write("  bogus: [\n")
rc, _, err = audit("--policies", pol, INPUTS[0], cwd=SRC)
check(rc == 2 and "invalid" in err, "broken policy set: 2 %s" % err)
rc, _, err = audit("--policies", "policies", "--out", "/proc/nope/x", INPUTS[0], cwd=SRC)
check(rc == 2 and "cannot" in err, "unwritable --out: 2 %s" % err)
rc, out, _ = audit("--policies", "policies", "-o", "reports", stdin=open(
    os.path.join(SRC, INPUTS[0])).read(), cwd=SRC)
check(rc == 0 and "inference-a" in out, "stdin when no input is named")

shutil.rmtree(tmp)
finish()
