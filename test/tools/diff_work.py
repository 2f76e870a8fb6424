#!/usr/bin/env python3
"""diff_work.py - `gpu-admission diff` stays linear in its input, counted in instructions.

A cluster dump of D Deployments, each with its ReplicaSet and 50 pods (the pods owned through
the ReplicaSet by name, the ReplicaSet through the Deployment's uid), is diffed under
valgrind's callgrind at D = 10 and D = 40: 4x the objects must cost under 5x the instructions
of the diff itself (the run on an empty input, the policy sets' loading, taken off both).
Linear work is 4x; the owner scan per object that once made 10,200 objects take 73 s is
quadratic (16x in the limit). Instruction counts do not depend on the machine's load, so this
replaces the wall-clock ratio test_cli_diff used to assert. Prints the counts.

Needs valgrind (scripts/setup.sh test installs it); labelled nosan (valgrind cannot run a
sanitizer build).

usage: diff_work.py --bin GPU_ADMISSION --src SOURCE_DIR
"""
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "common"))
from clitest import check, finish, parse_args  # noqa: E402

args = parse_args()
BIN, SRC = args.bin, args.src
POL = os.path.join(SRC, "policies")
tmp = tempfile.mkdtemp(prefix="gpa-diff-work-")


def dump(deployments):
    items = []
    for d in range(deployments):
        tmpl = {"metadata": {"labels": {"app": "d%d" % d}},
                "spec": {"containers": [{"name": "m", "image": "x"}]}}
        items.append({"apiVersion": "apps/v1", "kind": "Deployment",
                      "metadata": {"name": "d%d" % d, "namespace": "prod-web", "uid": "u-d%d" % d},
                      "spec": {"replicas": 50, "selector": {"matchLabels": {"app": "d%d" % d}},
                               "template": tmpl}})
        items.append({"apiVersion": "apps/v1", "kind": "ReplicaSet",
                      "metadata": {"name": "d%d-abc12" % d, "namespace": "prod-web",
                                   "uid": "u-rs%d" % d,
                                   "ownerReferences": [{"apiVersion": "apps/v1", "kind": "Deployment",
                                                        "name": "d%d" % d, "uid": "u-d%d" % d,
                                                        "controller": True}]},
                      "spec": {"replicas": 50, "selector": {"matchLabels": {"app": "d%d" % d}},
                               "template": tmpl}})
        for k in range(50):
            items.append({"apiVersion": "v1", "kind": "Pod",
                          "metadata": {"name": "d%d-abc12-%d" % (d, k), "namespace": "prod-web",
                                       "labels": {"app": "d%d" % d, "pod-template-hash": "abc12"},
                                       "ownerReferences": [{"apiVersion": "apps/v1",
                                                            "kind": "ReplicaSet",
                                                            "name": "d%d-abc12" % d,
                                                            "controller": True}]},
                          "spec": {"containers": [{"name": "m", "image": "x"}]}})
    path = os.path.join(tmp, "dump-%d.json" % deployments)
    json.dump({"apiVersion": "v1", "kind": "List", "items": items}, open(path, "w"))
    return path, len(items)


def instructions(path):
    out = os.path.join(tmp, "callgrind.out")
    p = subprocess.run(["valgrind", "--tool=callgrind", "--callgrind-out-file=" + out, BIN,
                        "diff", "--old", POL, "--new", POL, path],
                       capture_output=True, text=True, timeout=600)
    m = re.search(r"I\s+refs:\s+([\d,]+)", p.stderr)
    check(p.returncode == 0 and m is not None, "callgrind run on %s: %d %s" %
          (path, p.returncode, p.stderr[-400:]))
    return int(m.group(1).replace(",", "")) if m else 0, p.stdout


if not shutil.which("valgrind"):
    check(False, "valgrind not found: run scripts/setup.sh test")
    finish()

empty = os.path.join(tmp, "empty.json")
open(empty, "w").write('{"apiVersion": "v1", "kind": "List", "items": []}')
base, _ = instructions(empty)
(small, n_small), (large, n_large) = dump(10), dump(40)
i_small, out_small = instructions(small)
i_large, out_large = instructions(large)
# every object is folded under its Deployment: the grouping did its job at both sizes
check("; 500 pod(s) reported under their workload; 10 owned object(s) reported under their "
      "top owner" in out_small, "small dump grouped: %s" % out_small[-300:])
check("; 2000 pod(s) reported under their workload; 40 owned object(s) reported under their "
      "top owner" in out_large, "large dump grouped: %s" % out_large[-300:])
net_s, net_l = i_small - base, i_large - base
ratio = net_l / net_s if net_s > 0 else float("inf")
print("diff work: empty input %d instructions; %d objects %d; %d objects %d; "
      "net ratio %.2fx for %.1fx the objects (limit 5x)" %
      (base, n_small, i_small, n_large, i_large, ratio, n_large / n_small))
check(net_s > 0 and ratio < 5.0, "4x the objects in %.2fx the instructions" % ratio)
finish()
