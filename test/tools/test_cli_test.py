#!/usr/bin/env python3
"""test_cli_test.py - `gpu-admission test` as a user runs it (python3 stdlib only).

Proves: the shipped suites pass and cover every rule and pool; each expectation key, when wrong,
fails its case with expected/actual (and a unified diff for resources/object/objectExact); zero
cases and broken suites exit 2 (with file:line:col); JUnit XML parses back with the right counts
even with <, &, ]]>, control and non-ASCII characters; -o json, --output-file, --run, -v, skip,
--record round trip.

usage: test_cli_test.py --bin GPU_ADMISSION --src SOURCE_DIR
"""
import json
import os
import re
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "common"))
from clitest import check, finish, parse_args, runner  # noqa: E402

args = parse_args()
BIN, SRC = args.bin, args.src
POLICIES = os.path.join(SRC, "policies")
run = runner(BIN, "test")


def write(d, name, text):
    path = os.path.join(d, name)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)
    return path


HEAD = """apiVersion: gpu-admission.io/v1alpha1
kind: GPUPolicyTest
metadata: {name: %s}
spec:
  policies: %s
  cases:
"""

POD = """apiVersion: v1
kind: Pod
metadata:
  name: small
  namespace: inference-a
  labels: {app.kubernetes.io/component: inference}
  annotations: {gpu-admission.io/gpu-memory: 8Gi}
spec:
  containers:
  - name: main
    image: vllm:1
    resources:
      limits: {nvidia.com/gpu: 1}
"""

# ---- the shipped suites pass and cover every rule and pool ----
rc, out, err = run(os.path.join(POLICIES, "tests"))
check(rc == 0, "shipped suites pass: rc=%d\n%s%s" % (rc, out, err))
m = re.search(r"^(\d+) passed, 0 failed, (\d+) skipped$", out, re.M)
check(m and int(m.group(1)) >= 10, "shipped suites: summary line %r" % out[-200:])
rc, out, err = run("-o", "json", os.path.join(POLICIES, "tests"))
report = json.loads(out)
seen_rules, seen_pools = set(), set()
for s in report["suites"]:
    for c in s["cases"]:
        d = c.get("decision") or {}
        if d.get("rule"):
            seen_rules.add(d["rule"])
        if d.get("pool"):
            seen_pools.add(d["pool"])
chk = subprocess.run([BIN, "check", POLICIES], capture_output=True, text=True).stdout
pools = set(re.findall(r"^  (\S+)  \(", chk.split("rules (")[0].split("pools (")[1], re.M))
rules = set(re.findall(r"^  \d+\. (\S+)  \(", chk, re.M))
check(pools and pools <= seen_pools, "every pool covered: %s vs %s" % (pools, seen_pools))
check(rules and rules <= seen_rules, "every rule covered: %s vs %s" % (rules, seen_rules))

with tempfile.TemporaryDirectory() as d:
    write(d, "pods/small.yaml", POD)

    # ---- each expectation key fails when it should, with a readable account ----
    wrong = {
        "allowed": "allowed: false",
        "rule": "rule: training",
        "pool": "pool: h100-train",
        "reason": "reason: untrusted-shared",
        "message": "message: \"may not share\"",
        "warnings": "warnings: [\"rewritten to nvidia.com/mig-2g\"]",
        "noWarnings": "noWarnings: true",
        "resources": "resources: {main: {nvidia.com/gpu: \"1\"}}",
        "object": "object: {spec: {runtimeClassName: nvidia}}",
        "objectExact": "objectExact: true\n          object: {apiVersion: v1, kind: Pod}",
    }
    body = HEAD % ("keys", POLICIES)
    for key, line in wrong.items():
        body += "    - name: wrong %s\n      object: ../pods/small.yaml\n      expect:\n          %s\n" % (
            key, line)
    # control: the same case with every key right passes (so a pass is not an accident)
    body += """    - name: right
      object: ../pods/small.yaml
      expect:
          allowed: true
          rule: inference-small
          pool: a100-mig
          reason: null
          warnings: ["rewritten to nvidia.com/mig-1g.10gb"]
          noWarnings: false
          resources: {main: {nvidia.com/mig-1g.10gb: "1", nvidia.com/gpu: null}}
          object: {metadata: {annotations: {gpu-admission.io/rule: inference-small}}}
"""
    write(d, "keys/suite.yaml", body)
    rc, out, err = run(os.path.join(d, "keys"))
    check(rc == 1, "wrong expectations exit 1: %d %s" % (rc, err))
    check("PASS  keys/right" in out, "control case passes:\n" + out)
    check("0 passed" not in out and "1 passed, 10 failed, 0 skipped" in out, "summary: " + out[-80:])
    rc, jout, _ = run("-o", "json", os.path.join(d, "keys"))
    cases = {c["name"]: c for c in json.loads(jout)["suites"][0]["cases"]}
    for key in wrong:
        c = cases["wrong " + key]
        check(c["status"] == "fail", key + " fails")
        keys = [f["key"] for f in c["failures"]]
        check(keys == [key], "%s: only its own key fails: %s" % (key, keys))
        f = c["failures"][0]
        check(f["expected"] and f["actual"] and f["expected"] != f["actual"],
              "%s: expected and actual given: %r" % (key, f))
        if key in ("resources", "object", "objectExact"):
            diff = f.get("diff") or ""
            check(diff.startswith("--- expected\n+++ actual\n@@ "), "%s: unified diff: %r" % (key, diff))
            mark = "+" if key == "objectExact" else "-"
            check(re.search("^" + re.escape(mark), diff.split("@@", 1)[1], re.M) is not None,
                  key + ": diff shows the difference")
        # the text report names the key with expected and actual on one line
        check(re.search(r"^      %s: expected .+, got .+$" % re.escape(key), out, re.M),
              "%s: text line" % key)
    check("-  nvidia.com/gpu: \"1\"" in out and "+  nvidia.com/mig-1g.10gb: 1" in out,
          "resources diff shows the rename:\n" + out)
    check("-  runtimeClassName: nvidia" in out, "object diff shows the missing field")

    # ---- zero cases is never success ----
    write(d, "empty/not-a-suite.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n")
    rc, out, err = run(os.path.join(d, "empty"))
    check(rc == 2 and "no case" in err, "no suite -> 2: %d %r" % (rc, err))
    rc, out, err = run("--run", "^nothing-matches$", os.path.join(d, "keys"))
    check(rc == 2 and "no case" in err, "--run matching nothing -> 2: %d %r" % (rc, err))
    write(d, "skipped/s.yaml", HEAD % ("sk", POLICIES) +
          "    - name: only\n      object: ../pods/small.yaml\n      skip: true\n"
          "      expect: {allowed: true}\n")
    rc, out, err = run(os.path.join(d, "skipped"))
    check(rc == 2 and "SKIP  sk/only" in out and "0 passed, 0 failed, 1 skipped" in out,
          "all skipped -> 2: %d %r %r" % (rc, out, err))

    # ---- broken suites: exit 2, file:line:col ----
    broken = {
        "syntax.yaml": (HEAD % ("b", POLICIES) + "    - name: [unclosed\n", r":8:1: "),
        "unknown.yaml": (HEAD % ("b", POLICIES) +
                         "    - name: typo\n      object: ../pods/small.yaml\n"
                         "      expect: {alowed: true}\n", r":9:\d+: unknown key \"alowed\""),
        "noexpect.yaml": (HEAD % ("b", POLICIES) +
                          "    - name: nothing\n      object: ../pods/small.yaml\n",
                          r":7:7: case \"nothing\" needs expect"),
        "nofile.yaml": (HEAD % ("b", POLICIES) +
                        "    - name: gone\n      object: ../pods/missing.yaml\n"
                        "      expect: {allowed: true}\n", r":8:15: object: cannot read"),
        "dupname.yaml": (HEAD % ("b", POLICIES) +
                         "    - {name: a, object: ../pods/small.yaml, expect: {allowed: true}}\n"
                         "    - {name: a, object: ../pods/small.yaml, expect: {allowed: true}}\n",
                         r":8:7: duplicate case name \"a\" \(first at line 7\)"),
        "badregex.yaml": (HEAD % ("b", POLICIES) +
                          "    - {name: r, object: ../pods/small.yaml, expect: {message: \"(\"}}\n",
                          r":7:63: expect.message: invalid regular expression"),
    }
    for name, (text, want) in broken.items():
        path = write(d, "broken/" + name, text)
        rc, out, err = run(path)
        check(rc == 2, "%s -> 2 (got %d)" % (name, rc))
        check(re.search(re.escape(path) + want, err), "%s: %r in %r" % (name, want, err))
        check(out == "", "%s: nothing on stdout for a broken suite" % name)
    # a broken suite next to a good one stops the whole run
    rc, out, err = run(os.path.join(d, "broken"), os.path.join(d, "keys"))
    check(rc == 2 and out == "", "a broken suite anywhere -> 2 before anything runs")
    # a policy directory that does not load
    write(d, "badpol/p/x.yaml", "apiVersion: gpu-admission.io/v1alpha1\nkind: GPUPolicy\n"
          "metadata: {name: x}\nspec: {pools: 3}\n")
    write(d, "badpol/s.yaml", (HEAD % ("bp", "p")) +
          "    - {name: a, object: ../pods/small.yaml, expect: {allowed: true}}\n")
    rc, out, err = run(os.path.join(d, "badpol", "s.yaml"))
    check(rc == 2 and "does not load" in err, "bad policy dir -> 2: %r" % err)

    # ---- JUnit: valid XML with hostile text, right counts ----
    hostile = "a <b> & c ]]> d \u00fc\u65e5\u672c \U0001F600"
    junit_suite = HEAD % ('"x<&]]>\u00fc"', POLICIES) + """    - name: "%s"
      object: ../pods/small.yaml
      expect: {message: "%s"}
    - name: "ctl \\x01 char"
      object: ../pods/small.yaml
      expect: {allowed: true}
    - name: skipped one
      object: ../pods/small.yaml
      skip: true
      expect: {allowed: true}
""" % (hostile, hostile.replace("\\", "\\\\"))
    write(d, "junit/a.yaml", junit_suite)
    write(d, "junit/b.yaml", HEAD % ("second", POLICIES) +
          "    - {name: p1, object: ../pods/small.yaml, expect: {allowed: true}}\n"
          "    - {name: f1, object: ../pods/small.yaml, expect: {pool: \"<&>\"}}\n")
    xml_path = os.path.join(d, "report.xml")
    rc, out, err = run("-o", "junit", "--output-file", xml_path, os.path.join(d, "junit"))
    check(rc == 1 and out == "", "junit to file: rc 1, nothing on stdout: %d %r" % (rc, err))
    check("2 passed, 2 failed, 1 skipped" in err, "junit: summary on stderr: %r" % err)
    root = ET.parse(xml_path).getroot()
    check(root.tag == "testsuites" and root.get("tests") == "5" and root.get("failures") == "2"
          and root.get("skipped") == "1", "testsuites counts: %r" % root.attrib)
    suites = root.findall("testsuite")
    check(len(suites) == 2, "one testsuite per suite file")
    s0 = suites[0]
    check(s0.get("name") == "x<&]]>\u00fc", "suite name round trip: %r" % s0.get("name"))
    check((s0.get("tests"), s0.get("failures"), s0.get("skipped")) == ("3", "1", "1"),
          "suite a counts: %r" % s0.attrib)
    tcs = s0.findall("testcase")
    check(tcs[0].get("name") == hostile, "case name round trip: %r" % tcs[0].get("name"))
    fail = tcs[0].find("failure")
    check(fail is not None and hostile in fail.get("message") and hostile in fail.text,
          "failure message keeps the text: %r" % (fail.attrib if fail is not None else None))
    check(tcs[1].get("name") == "ctl \ufffd char", "control char replaced: %r" % tcs[1].get("name"))
    check(tcs[1].find("failure") is None, "passing case has no failure")
    check(tcs[2].find("skipped") is not None, "skipped case marked")
    check((suites[1].get("tests"), suites[1].get("failures")) == ("2", "1"), "suite b counts")

    # ---- --run, -v, -o json ----
    rc, out, err = run("--run", "^keys/right$", "-v", os.path.join(d, "keys"))
    check(rc == 0 and out.count("PASS") == 1 and "FAIL" not in out, "--run selects: " + out)
    check("decision: allowed, rule inference-small, pool a100-mig" in out, "-v decision: " + out)
    check("1 passed, 0 failed, 0 skipped" in out, "--run summary")
    rc, out, err = run("-o", "json", "--run", "wrong (rule|pool)$", os.path.join(d, "keys"))
    j = json.loads(out)
    check(rc == 1 and j["summary"] == {"passed": 0, "failed": 2, "skipped": 0},
          "json summary: %r" % j.get("summary"))
    rc, out, err = run("-o", "xml", os.path.join(d, "keys"))
    check(rc == 2 and "--output" in err, "bad -o -> 2")

    # ---- --record: today's decisions, which then pass ----
    rec = os.path.join(d, "rec", "recorded.yaml")
    os.makedirs(os.path.dirname(rec))
    pods = [os.path.join(POLICIES, "tests", "pods", f)
            for f in sorted(os.listdir(os.path.join(POLICIES, "tests", "pods")))]
    p = subprocess.run([BIN, "test", "--record", rec, "--policies", POLICIES, *pods],
                       capture_output=True, text=True)
    check(p.returncode == 0, "record: %d %s" % (p.returncode, p.stderr))
    text = open(rec, encoding="utf-8").read()
    check(text.startswith("# Recorded by") and "kind: GPUPolicyTest" in text, "recorded header")
    check(re.search(r"^  policies: \"?(\.\./)+\S*policies\"?$", text, re.M),
          "policies relative to the suite file: %r" % re.findall(r"policies: .*", text)[:1])
    rc, out, err = run(rec)
    check(rc == 0 and ("%d passed, 0 failed" % len(pods)) in out,
          "recorded suite passes: %d %s %s" % (rc, out[-300:], err))
    check("reason: topology-size" in text and "nvidia.com/mig-3g.40gb" in text,
          "recorded expectations hold the decisions")
    # and would catch a change: record under the shipped set, run under a changed one
    changed = os.path.join(SRC, "test", "tools", "policies-changed")
    text2 = re.sub(r"policies: .*", "policies: " + changed, text, count=1)
    write(d, "rec2/recorded.yaml", text2)
    rc, out, err = run(os.path.join(d, "rec2"))
    check(rc == 1 and "FAIL  recorded/Pod notebooks/nb-alice" in out and
          "FAIL  recorded/Pod sandbox/experiment" in out, "recorded suite fails on change:\n" + out)

# ---- workloads: judged through their templates; containers named TEMPLATE/CONTAINER ----
DEPLOY = """apiVersion: apps/v1
kind: Deployment
metadata: {name: nb, namespace: notebooks}
spec:
  selector: {matchLabels: {app: nb}}
  template:
    metadata: {labels: {app: nb}}
    spec:
      containers:
      - name: main
        image: jupyter:1
        resources: {limits: {nvidia.com/gpu: 1}}
"""
with tempfile.TemporaryDirectory() as d:
    write(d, "deploy.yaml", DEPLOY)
    write(d, "s.yaml", HEAD % ("wl", POLICIES) +
          "    - {name: bare name, object: deploy.yaml, expect: {resources: {main: {cpu: 1}}}}\n"
          "    - {name: path name, object: deploy.yaml, expect: {allowed: true, pool: t4-shared,"
          " resources: {spec.template/main: {nvidia.com/gpu: 1}}}}\n"
          "    - {name: other ns, object: deploy.yaml, namespace: sandbox, expect: {pool: null}}\n")
    rc, out, err = run("-o", "json", os.path.join(d, "s.yaml"))
    cs = {c["name"]: c for c in json.loads(out)["suites"][0]["cases"]} if out else {}
    check(rc == 1, "workload suite: one failure: %d %s" % (rc, err))
    f = (cs.get("bare name") or {}).get("failures") or [{}]
    check(f[0].get("key") == "resources" and 'no container "main"' in f[0].get("actual", ""),
          "a workload's containers are named by template: %r" % f)
    check((cs.get("path name") or {}).get("status") == "pass", "TEMPLATE/CONTAINER passes")
    check((cs.get("other ns") or {}).get("status") == "pass", "workload in another namespace")
    rec = os.path.join(d, "rec.yaml")
    p = subprocess.run([BIN, "test", "--record", rec, "--policies", POLICIES,
                        os.path.join(d, "deploy.yaml")], capture_output=True, text=True)
    text = open(rec, encoding="utf-8").read() if p.returncode == 0 else ""
    check("spec.template/main:" in text and "pool: t4-shared" in text,
          "recorded workload: %s %s" % (p.stderr, text[-400:]))
    rc, out, err = run(rec)
    check(rc == 0 and "1 passed, 0 failed" in out, "recorded workload passes: %s %s" % (out, err))

# DRA claims (issue 24): suites hold ResourceClaims and ResourceClaimTemplates, judged through
# the same codec as the server; a wrong expectation on a claim fails its case.
DRA = os.path.join(SRC, "test", "golden", "policies", "dra")
CLAIM = ("{apiVersion: resource.k8s.io/v1, kind: ResourceClaim, metadata: {name: m%s},"
         " spec: {devices: {requests: [{name: gpu, exactly: {deviceClassName: gpu.nvidia.com%s}}]}}}")
with tempfile.TemporaryDirectory() as d:
    write(d, "s.yaml", HEAD % ("dra", DRA) +
          "    - {name: template placed, namespace: gpu-test1, object: {apiVersion: resource.k8s.io/v1,"
          " kind: ResourceClaimTemplate, metadata: {name: t}, spec: {spec: {devices: {requests:"
          " [{name: gpu, exactly: {deviceClassName: gpu.nvidia.com}}]}}}},"
          " expect: {allowed: true, rule: single, pool: h100-train}}\n"
          "    - {name: admin refused, namespace: research-a, object: " + CLAIM % ("", ", adminAccess: true") +
          ", expect: {allowed: false, reason: dra-admin-access}}\n"
          "    - {name: mig sized, namespace: inference-a, object: " +
          CLAIM % (", annotations: {gpu-admission.io/gpu-memory: 8Gi}", "") +
          ", expect: {allowed: true, object: {spec: {devices: {requests: [{name: gpu, exactly:"
          " {deviceClassName: mig.nvidia.com}}]}}}}}\n"
          "    - {name: wrong class expected, namespace: inference-a, object: " +
          CLAIM % (", annotations: {gpu-admission.io/gpu-memory: 8Gi}", "") +
          ", expect: {object: {spec: {devices: {requests: [{name: gpu, exactly:"
          " {deviceClassName: gpu.nvidia.com}}]}}}}}\n")
    rc, out, err = run("-o", "json", os.path.join(d, "s.yaml"))
    cs = {c["name"]: c for c in json.loads(out)["suites"][0]["cases"]} if out else {}
    check(rc == 1, "claim suite: exactly the wrong expectation fails: %d %s %s" % (rc, out[-300:], err))
    for n in ("template placed", "admin refused", "mig sized"):
        check((cs.get(n) or {}).get("status") == "pass", "claim case %r passes: %r" % (n, cs.get(n)))
    check((cs.get("wrong class expected") or {}).get("status") == "fail",
          "a claim whose class was rewritten fails an expectation of the old class")

finish()
