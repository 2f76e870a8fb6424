#!/usr/bin/env python3
"""test_cli_diff.py - `gpu-admission diff` as a user runs it (python3 stdlib only).

Proves: on a `kubectl get pods,deployments,services -A -o json` List of pods from a cluster
running policies-base/ (the shipped set with unmatched: allow, as shipped before issue 33;
fixtures/cluster-pods.json, made by make_cluster_fixture.py), with a
change that moves the notebooks rule from t4-shared to a100-mig and adds a deny rule for sandbox
(policies-changed/), exactly the affected objects are reported, each saying how it was judged
(original / reconstructed / as-is); no change when old = new; --exit-code; -o json summary;
YAML Lists, multi-document input and stdin; exit 2 on errors with file:line:col.

usage: test_cli_diff.py --bin GPU_ADMISSION --src SOURCE_DIR
"""
import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "common"))
from clitest import check, finish, parse_args, runner  # noqa: E402

args = parse_args()
BIN, SRC = args.bin, args.src
OLD = os.path.join(SRC, "test", "tools", "policies-base")
NEW = os.path.join(SRC, "test", "tools", "policies-changed")
LIST = os.path.join(SRC, "test", "tools", "fixtures", "cluster-pods.json")
diff = runner(BIN, "diff")


# ---- the policy change on the cluster's List: exactly the affected objects ----
rc, out, err = diff("--old", OLD, "--new", NEW, "-o", "json", LIST)
check(rc == 0, "json run: %d %s" % (rc, err))
rep = json.loads(out)
got = {(c["object"], c.get("template")): c for c in rep["changes"]}
want = {
    ("Pod notebooks/nb-alice", None): (["pool", "resources", "warnings"], "reconstructed"),
    ("Pod sandbox/experiment", None): (["denied", "rule"], "original"),
    # edited after admission, so its request cannot be rebuilt: judged as stored, its
    # verdict is no change of the original's (issue 22: it read "allowed -> denied")
    ("Pod notebooks/nb-edited", None): ([], "as-is"),
    ("Deployment notebooks/team-notebook", "spec.template"):
        (["pool", "resources", "warnings"], "original"),
}
check(set(got) == set(want), "exactly the affected objects: %s" % sorted(got, key=str))
for k, (changes, how) in want.items():
    c = got.get(k)
    if not c:
        continue
    check(c["changes"] == changes, "%s changes %s" % (k, c["changes"]))
    check(c["judgedAs"] == how, "%s judged %s" % (k, c["judgedAs"]))
alice = got.get(("Pod notebooks/nb-alice", None), {})
check(alice.get("old", {}).get("pool") == "t4-shared" and alice.get("new", {}).get("pool") ==
      "a100-mig", "nb-alice pool t4-shared -> a100-mig")
check(alice.get("new", {}).get("resources") == {"jupyter": {"nvidia.com/mig-1g.10gb": "1"}},
      "nb-alice new resources: %r" % alice.get("new", {}).get("resources"))
check(alice.get("origin", "").endswith("cluster-pods.json:155"), "origin names the line: %r" %
      alice.get("origin"))
edited = got.get(("Pod notebooks/nb-edited", None), {})
check(edited.get("originalUnknown") is True and
      edited.get("storedChanges") == ["denied", "pool", "warnings"],
      "nb-edited: original unknown, the stored verdict apart: %r" % edited)
exp = got.get(("Pod sandbox/experiment", None), {})
check("no longer available in sandbox" in (exp.get("new", {}).get("message") or ""),
      "the new denial's message")
s = rep["summary"]
check(s["objects"] == 10 and s["notJudged"] == 1 and s["judged"] == 9 and s["changed"] == 3 and
      s["originalUnknown"] == 1 and s["grouped"] == 0, "summary counts: %r" % s)
check((s["original"], s["reconstructed"], s["asIs"]) == (5, 3, 1), "judged-as counts: %r" % s)
check(s["allowedToDenied"] == 1 and s["deniedToAllowed"] == 0 and s["pool"] == 2,
      "change counts: %r" % s)

# text output and --exit-code
rc, out, err = diff("--old", OLD, "--new", NEW, LIST)
check(rc == 0, "text without --exit-code: 0")
check("Pod notebooks/nb-alice (" in out and "judged reconstructed)" in out, "text names how")
check("allowed -> denied: denied by GPU policy rule no-sandbox-gpus" in out, "denial message")
check("pool: t4-shared -> a100-mig" in out, "pool change line")
check("Pod inference-a/small" not in out and "trainer-0" not in out and "prod-web" not in out,
      "unaffected objects are not reported")
check(out.strip().splitlines()[-1].startswith("3 of 9 judged (10 objects, 1 not judged) change: "
                                             "1 allowed->denied,") and
      out.strip().endswith("; 1 original unknown (judged as stored, not counted as changes)"),
      "summary line: %r" % out.strip().splitlines()[-1])
edited_txt = out[out.find("Pod notebooks/nb-edited"):].split("\nPod ")[0]
check("Pod notebooks/nb-edited (" in out and "original unknown: judged as stored)" in edited_txt and
      "as stored, the new set would refuse it: " in edited_txt and
      "allowed -> denied" not in edited_txt, "text: nb-edited never allowed -> denied: %r" % edited_txt)
rc, _, _ = diff("--old", OLD, "--new", NEW, "--exit-code", LIST)
check(rc == 1, "--exit-code with changes: 1 (got %d)" % rc)
rc, out, _ = diff("--old", OLD, "--new", OLD, "--exit-code", LIST)
check(rc == 0 and out.startswith("0 of 9 judged"), "old = new: nothing changes, 0: %r" % out)

# ---- kubectl -o yaml List, multi-document YAML, stdin ----
yaml_list = """apiVersion: v1
items:
- apiVersion: v1
  kind: Pod
  metadata:
    name: y-exp
    namespace: sandbox
  spec:
    containers:
    - name: main
      image: cuda:12
      resources:
        limits:
          nvidia.com/gpu: "1"
- apiVersion: batch/v1
  kind: Job
  metadata:
    name: nb-job
    namespace: notebooks
  spec:
    template:
      spec:
        restartPolicy: Never
        containers:
        - name: main
          image: cuda:12
          resources:
            limits:
              nvidia.com/gpu: "1"
kind: List
metadata:
  resourceVersion: ""
---
apiVersion: v1
kind: Pod
metadata: {name: cpu, namespace: sandbox}
spec:
  containers: [{name: c, image: busybox}]
"""
rc, out, err = diff("--old", OLD, "--new", NEW, "-o", "json", "-", stdin=yaml_list)
check(rc == 0, "yaml from stdin: %d %s" % (rc, err))
r = json.loads(out) if rc == 0 else {"changes": [], "summary": {}}
names = sorted((c["object"], c.get("template"), c["origin"]) for c in r["changes"])
check(names == [("Job notebooks/nb-job", "spec.template", "stdin:15"),
                ("Pod sandbox/y-exp", None, "stdin:3")], "yaml List changes: %r" % names)
check(r["summary"].get("objects") == 3, "three objects read: %r" % r["summary"])

# ---- errors: 2 ----
rc, out, err = diff("--old", OLD, "--new", NEW, "-", stdin='{"kind": "List",\n "items": [1,]}')
check(rc == 2 and "stdin:2:" in err, "bad JSON -> 2 with line: %d %r" % (rc, err))
rc, out, err = diff("--old", OLD, "--new", NEW, "/nonexistent/x.json")
check(rc == 2 and "cannot read" in err, "missing input -> 2")
rc, out, err = diff("--old", OLD, "--new", "/nonexistent", LIST)
check(rc == 2 and "(--new) is invalid" in err, "bad policy dir -> 2: %r" % err)
rc, out, err = diff("--new", NEW, LIST)
check(rc == 2 and "--old" in err, "missing --old -> 2")
bad_pod = '{"apiVersion":"v1","kind":"Pod","metadata":{"name":"x"},"spec":"no"}'
rc, out, err = diff("--old", OLD, "--new", NEW, "-", stdin=bad_pod)
check(rc == 2 and "stdin:1: Pod x:" in err, "an object the webhook answers 400 -> 2: %r" % err)

# ---- DRA claims (issue 24): judged by both sets; a stored claim the old set placed is judged
# as stored, since the request it was created with is not rebuilt ----
import shutil, tempfile  # noqa: E402
DRA = os.path.join(SRC, "test", "golden", "policies", "dra")
with tempfile.TemporaryDirectory() as d:
    newdra = os.path.join(d, "new")
    shutil.copytree(DRA, newdra)
    t = os.path.join(newdra, "00-tenancy.yaml")
    text = open(t, encoding="utf-8").read()
    open(t, "w", encoding="utf-8").write(
        text.replace("dra: {adminAccess: true, allocationModeAll: true}",
                     "dra: {adminAccess: false, allocationModeAll: true}"))
    req = {"name": "gpu", "exactly": {"deviceClassName": "gpu.nvidia.com", "adminAccess": True}}
    placed = {"name": "gpu", "exactly": {"deviceClassName": "gpu.nvidia.com", "selectors": [
        {"cel": {"expression": "device.attributes['gpu.nvidia.com'].productName == 'NVIDIA H100 80GB HBM3'"}}]}}
    items = [
        {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaimTemplate",
         "metadata": {"name": "admin", "namespace": "ml-platform"},
         "spec": {"spec": {"devices": {"requests": [req]}}}},
        {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
         "metadata": {"name": "stored", "namespace": "gpu-test1", "uid": "u1",
                      "annotations": {"gpu-admission.io/rule": "single"}},
         "spec": {"devices": {"requests": [placed]}}, "status": {"allocation": {}}},
    ]
    cl = os.path.join(d, "claims.json")
    json.dump({"apiVersion": "v1", "kind": "List", "items": items}, open(cl, "w"))
    rc, out, err = diff("--old", DRA, "--new", newdra, "-o", "json", cl)
    doc = json.loads(out) if out.strip().startswith("{") else {}
    es = {e.get("object", "").split("/")[-1]: e for e in doc.get("changes", [])}
    check(rc == 0 and "admin" in es, "claim diff runs and lists the template: %d %s %s" % (rc, out[-400:], err))
    e = es.get("admin") or {}
    check((e.get("old") or {}).get("allowed") is True and (e.get("new") or {}).get("allowed") is False,
          "adminAccess taken from the tenant: allowed -> denied: %r" % e)
    check("stored" not in es, "an unchanged stored claim is no change: %r" % es.get("stored"))
    rc, out, err = diff("--old", DRA, "--new", newdra, cl)
    check("ResourceClaimTemplate ml-platform/admin" in out and "allowed -> denied" in out
          and "judged as: 1 original, 0 reconstructed, 1 as-is" in out,
          "text: the template's change, the stored claim judged as-is: %s" % out)

# ---- pods of a workload in the same input: one entry for the workload, N pods under it ----
# (issue 22: `kubectl get pods,deployments` showed the Deployment and each of its pods apart)
import copy
import tempfile
mutate = runner(BIN, "mutate")
cluster = json.load(open(LIST))
dep = copy.deepcopy(next(i for i in cluster["items"] if i["kind"] == "Deployment" and
                         i["metadata"]["name"] == "team-notebook"))
dep["spec"]["replicas"] = 3
tmpl = dep["spec"]["template"]
rs_uid = "5d1c2a0e-0000-4000-8000-000000000200"
gd = tempfile.mkdtemp(prefix="gpa-diff-group-")


def stored_pod(name, edit=None):
    """A pod of the Deployment as the API server stored it: the template through the old
    set's webhook, owned by ReplicaSet team-notebook-6c9f8d7b5 (pod-template-hash 6c9f8d7b5)."""
    p = {"apiVersion": "v1", "kind": "Pod",
         "metadata": {"name": name, "namespace": "notebooks",
                      "labels": dict(tmpl["metadata"]["labels"], **{"pod-template-hash": "6c9f8d7b5"})},
         "spec": copy.deepcopy(tmpl["spec"])}
    rc, out, err = mutate("-p", OLD, "-", stdin=json.dumps(p))
    check(rc == 0, "mutate %s: %s" % (name, err))
    q = json.loads(out) if rc == 0 else p
    q["metadata"]["ownerReferences"] = [{"apiVersion": "apps/v1", "kind": "ReplicaSet",
                                         "name": "team-notebook-6c9f8d7b5", "uid": rs_uid,
                                         "controller": True, "blockOwnerDeletion": True}]
    if edit:
        edit(q)
    return q


pods = [stored_pod("team-notebook-6c9f8d7b5-%s" % x) for x in ("a1b2c", "d3e4f", "g5h6i")]


def run_group(items):
    path = os.path.join(gd, "group-%d.json" % len(items))
    json.dump({"apiVersion": "v1", "kind": "List", "items": items}, open(path, "w"))
    rc, out, err = diff("--old", OLD, "--new", NEW, "-o", "json", path)
    check(rc == 0, "group diff runs: %d %s" % (rc, err))
    rep = json.loads(out) if rc == 0 else {"changes": [], "summary": {}}
    rc, text, err = diff("--old", OLD, "--new", NEW, path)
    return rep, text


# the ReplicaSet not in the input (kubectl get pods,deployments): found through its name
rep, text = run_group(pods + [dep])
objs = [c["object"] for c in rep["changes"]]
check(objs == ["Deployment notebooks/team-notebook"], "one entry for the Deployment: %r" % objs)
e = rep["changes"][0] if rep["changes"] else {}
check(e.get("pods") == [p["metadata"]["name"] for p in pods] and e.get("podCount") == 3,
      "its 3 pods named, 3 pods touched: %r" % e)
check(rep["summary"].get("grouped") == 3 and rep["summary"].get("changed") == 1 and
      rep["summary"].get("judged") == 4, "summary: 1 changed, 3 grouped: %r" % rep["summary"])
check("3 pod(s) in the input, judged the same: team-notebook-6c9f8d7b5-a1b2c" in text and
      text.count("Pod notebooks/") == 0 and "3 pod(s) reported under their workload" in text,
      "text: one entry, N pods: %s" % text)
# the ReplicaSet in the input, referenced by uid: the chain Pod -> ReplicaSet -> Deployment
rs = {"apiVersion": "apps/v1", "kind": "ReplicaSet",
      "metadata": {"name": "team-notebook-6c9f8d7b5", "namespace": "notebooks", "uid": rs_uid,
                   "ownerReferences": [{"apiVersion": "apps/v1", "kind": "Deployment",
                                        "name": "team-notebook", "uid": dep["metadata"]["uid"],
                                        "controller": True}]},
      "spec": {"replicas": 3, "selector": dep["spec"]["selector"], "template": copy.deepcopy(tmpl)}}
rep, text = run_group([dep, rs] + pods)
objs = sorted(c["object"] for c in rep["changes"])
# the ReplicaSet is itself a workload the webhooks judge: it and the pods go under the top
# owner, one entry (issue 31: a Deployment and its ReplicaSet were two entries)
check(objs == ["Deployment notebooks/team-notebook"], "one entry for the three levels: %r" % objs)
e = rep["changes"][0] if rep["changes"] else {}
check(e.get("owned") == ["ReplicaSet team-notebook-6c9f8d7b5"] and len(e.get("pods", [])) == 3 and
      e.get("podCount") == 3, "the ReplicaSet and the 3 pods under it, 3 pods: %r" % e)
check(rep["summary"].get("grouped") == 3 and rep["summary"].get("groupedObjects") == 1 and
      rep["summary"].get("changedPods") == 3,
      "3 pods and 1 ReplicaSet grouped, the change touches 3 pods: %r" % rep["summary"])
check("Deployment notebooks/team-notebook spec.template (" in text and
      "judged original), 3 pods\n" in text and
      "    1 owned object(s) in the input, judged the same: ReplicaSet team-notebook-6c9f8d7b5\n"
      in text and "ReplicaSet notebooks/" not in text and
      "; 1 owned object(s) reported under their top owner" in text,
      "text: one entry, the ReplicaSet named under it: %s" % text)

# the case: a dump with a Deployment and its ReplicaSet and no pods (kubectl get
# deployments,replicasets), which the new set denies: one allowed -> denied entry, 4 pods
sdep = copy.deepcopy(dep)
sdep["metadata"].update(name="trainer", namespace="sandbox", uid="u-sandbox-trainer")
sdep["spec"]["replicas"] = 4
srs = copy.deepcopy(rs)
srs["metadata"].update(name="trainer-7f6d5c4b3", namespace="sandbox", uid="u-sandbox-rs")
srs["metadata"]["ownerReferences"][0].update(name="trainer", uid="u-sandbox-trainer")
srs["spec"]["replicas"] = 4
rep, text = run_group([srs, sdep])
objs = [c["object"] for c in rep["changes"]]
check(objs == ["Deployment sandbox/trainer"], "one entry, not two: %r" % objs)
e = rep["changes"][0] if rep["changes"] else {}
check("denied" in e.get("changes", []) and e.get("podCount") == 4 and
      e.get("owned") == ["ReplicaSet trainer-7f6d5c4b3"], "allowed -> denied, 4 pods: %r" % e)
s = rep["summary"]
check(s.get("allowedToDenied") == 1 and s.get("allowedToDeniedPods") == 4 and
      s.get("changedPods") == 4 and s.get("groupedObjects") == 1, "summary in pods: %r" % s)
check("Deployment sandbox/trainer spec.template (" in text and ", 4 pods\n    1 owned object(s)" in text
      and text.count("allowed -> denied") == 1 and
      "; the changes touch 4 pod(s) (4 allowed->denied, 0 denied->allowed)" in text,
      "text: one allowed -> denied entry of 4 pods: %s" % text)
# a ReplicaSet judged unlike its Deployment (an older template still running) stays apart
old_rs = copy.deepcopy(srs)
old_rs["metadata"].update(name="trainer-0ld", uid="u-sandbox-rs-old")
old_rs["spec"]["template"]["spec"]["containers"][0]["resources"] = {}
rep, _ = run_group([sdep, srs, old_rs])
objs = sorted(c["object"] for c in rep["changes"])
check(objs == ["Deployment sandbox/trainer"] and rep["summary"].get("groupedObjects") == 1,
      "the old ReplicaSet without GPUs is not a change, the current one folded: %r %r" %
      (objs, rep["summary"]))
# CronJob -> Job -> Pod: the Job and its pod under the CronJob, one entry; the Job missing
# from the input is found through its name (<cronjob>-<digits>)
cron = {"apiVersion": "batch/v1", "kind": "CronJob",
        "metadata": {"name": "nightly", "namespace": "sandbox", "uid": "u-cron"},
        "spec": {"schedule": "0 3 * * *", "jobTemplate": {"spec": {"parallelism": 2, "template": {
            "spec": {"restartPolicy": "Never", "containers": [{"name": "m", "image": "x", "resources": {
                "limits": {"nvidia.com/gpu": "1"}}}]}}}}}}
job = {"apiVersion": "batch/v1", "kind": "Job",
       "metadata": {"name": "nightly-29400000", "namespace": "sandbox", "uid": "u-job",
                    "ownerReferences": [{"apiVersion": "batch/v1", "kind": "CronJob", "name": "nightly",
                                         "uid": "u-cron", "controller": True}]},
       "spec": copy.deepcopy(cron["spec"]["jobTemplate"]["spec"])}
jpod = {"apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": "nightly-29400000-x1", "namespace": "sandbox",
                     "ownerReferences": [{"apiVersion": "batch/v1", "kind": "Job", "name": "nightly-29400000",
                                          "controller": True}]},
        "spec": copy.deepcopy(cron["spec"]["jobTemplate"]["spec"]["template"]["spec"])}
rep, _ = run_group([jpod, job, cron])
objs = [c["object"] for c in rep["changes"]]
e = rep["changes"][0] if rep["changes"] else {}
check(objs == ["CronJob sandbox/nightly"] and e.get("owned") == ["Job nightly-29400000"] and
      e.get("pods") == ["nightly-29400000-x1"] and e.get("podCount") == 2,
      "CronJob, its Job and pod: one entry of 2 pods: %r %r" % (objs, e))
rep, _ = run_group([jpod, cron])
objs = [c["object"] for c in rep["changes"]]
check(objs == ["CronJob sandbox/nightly"] and rep["summary"].get("grouped") == 1,
      "the Job missing: the pod found its CronJob by the Job's name: %r" % objs)
# references in a cycle (hand-written input): nothing folded, nothing lost
a = copy.deepcopy(srs)
b = copy.deepcopy(srs)
a["metadata"].update(name="rs-a", uid="u-a", ownerReferences=[{"kind": "ReplicaSet", "name": "rs-b",
                                                               "uid": "u-b", "controller": True}])
b["metadata"].update(name="rs-b", uid="u-b", ownerReferences=[{"kind": "ReplicaSet", "name": "rs-a",
                                                               "uid": "u-a", "controller": True}])
rep, _ = run_group([a, b])
objs = sorted(c["object"] for c in rep["changes"])
check(objs == ["ReplicaSet sandbox/rs-a", "ReplicaSet sandbox/rs-b"],
      "a cycle of owners: both reported: %r" % objs)
# a pod judged unlike its template (edited after admission) is still reported on its own
odd = stored_pod("team-notebook-6c9f8d7b5-zzzzz",
                 lambda q: q["spec"]["containers"][0].update(image="edited:1"))
odd["metadata"]["annotations"]["gpu-admission.io/rule"] = "edited-by-hand"
rep, _ = run_group(pods + [dep, odd])
objs = sorted(c["object"] for c in rep["changes"])
check(objs == ["Deployment notebooks/team-notebook", "Pod notebooks/team-notebook-6c9f8d7b5-zzzzz"],
      "the odd pod apart, the 3 like the template grouped: %r" % objs)
check(rep["summary"].get("grouped") == 3, "still 3 grouped: %r" % rep["summary"])

# ---- native sidecars are counted (issue 33 path 4) ----
# The new set lets training take only pods of 4+ GPUs. A pod of one 1-GPU container and two
# 1-GPU sidecars asks 3 GPUs as the scheduler counts them: training under the old set,
# unmatched under the new one. Counted without its sidecars (1 GPU) it would be unmatched
# under both, and diff would report nothing.
with tempfile.TemporaryDirectory() as d:
    newp = os.path.join(d, "new")
    shutil.copytree(OLD, newp, ignore=shutil.ignore_patterns("tests"))
    rules = os.path.join(newp, "20-rules.yaml")
    txt = open(rules).read()
    check("match: {gpus: {min: 2}}" in txt, "the shipped training rule as this test expects")
    open(rules, "w").write(txt.replace("match: {gpus: {min: 2}}", "match: {gpus: {min: 4}}"))
    side = {"name": "s", "image": "x", "restartPolicy": "Always",
            "resources": {"limits": {"nvidia.com/gpu": "1"}}}
    pod = {"apiVersion": "v1", "kind": "Pod",
           "metadata": {"name": "with-sidecars", "namespace": "prod-llm"},
           "spec": {"initContainers": [dict(side, name="s1"), dict(side, name="s2")],
                    "containers": [{"name": "main", "image": "x",
                                    "resources": {"limits": {"nvidia.com/gpu": "1"}}}]}}
    pf = os.path.join(d, "pod.json")
    json.dump(pod, open(pf, "w"))
    rc, out, err = diff("--old", OLD, "--new", newp, "-o", "json", pf)
    check(rc == 0, "sidecar diff runs: %d %s" % (rc, err))
    ch = json.loads(out)["changes"] if rc == 0 else []
    check(len(ch) == 1 and ch[0]["old"].get("rule") == "training" and
          ch[0]["old"].get("pool") == "h100-train" and ch[0]["new"].get("rule") is None,
          "the 3-GPU sidecar pod leaves training: %r" % ch)


finish()
