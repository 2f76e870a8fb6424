#!/usr/bin/env python3
"""test_cli_export_map.py - `gpu-admission export map` as users run it, without an API server
(ctest tools/test_cli_export_map; the API server's verdict is e2e/map).

- The CLI contract: exit 0 written, 1 a policy set that does not load, 2 usage; stdout by
  default, --output FILE the same bytes; two documents, a MutatingAdmissionPolicy and its
  binding (admissionregistration.k8s.io/v1), named gpu-admission-*, CREATE of pods only,
  reinvocationPolicy IfNeeded, failurePolicy Fail.
- What it cannot express is named: on stderr, in '#' lines at the top, and in the final line.
- The YAML for the golden policy sets (cluster, gang, shipped, dra, and a mode overlay) is
  exactly test/tools/fixtures/export-map/NAME.yaml: the objects e2e/map installed into
  kube-apiserver v1.37.2 and proved against the webhook, case by case. A change to the
  compiler changes a fixture; `--update` rewrites them, after which the change must pass
  e2e/map before it is committed.

Python 3 standard library plus PyYAML (as the chart tests).
"""

import argparse
import os
import shutil
import subprocess
import sys
import tempfile

import yaml

SETS = {  # fixture name -> policy files under test/golden/policies (a dir, or files in order)
    "cluster": "cluster",
    "gang": "gang",
    "shipped": "shipped",
    "dra": "dra",
    "warn": ["cluster/00-tenancy.yaml", "cluster/10-pools.yaml", "cluster/20-rules.yaml",
             "modes/warn.yaml"],
}

failures = []
passed = 0


def check(name, ok, detail=""):
    global passed
    if ok:
        passed += 1
        print("PASS " + name)
    else:
        failures.append(name)
        print("FAIL %s %s" % (name, detail))


def run(binary, *argv):
    return subprocess.run([binary, "export", "map"] + list(argv), capture_output=True,
                          text=True, timeout=60)


def policy_dir(src, spec, tmp):
    base = os.path.join(src, "test", "golden", "policies")
    if isinstance(spec, str):
        return os.path.join(base, spec)
    d = tempfile.mkdtemp(dir=tmp)
    for i, p in enumerate(spec):  # NN- keeps the listed order (e2e_map.py does the same)
        shutil.copy(os.path.join(base, p), os.path.join(d, "%02d-%s" % (i, os.path.basename(p))))
    return d


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", required=True)
    ap.add_argument("--src", required=True)
    ap.add_argument("--update", action="store_true", help="rewrite the fixtures")
    a = ap.parse_args()
    fixtures = os.path.join(a.src, "test", "tools", "fixtures", "export-map")
    tmp = tempfile.mkdtemp(prefix="export-map-")
    try:
        # usage
        r = run(a.bin)
        check("usage/no-policies-exit-2", r.returncode == 2 and "--policies" in r.stderr,
              r.stderr)
        r = run(a.bin, "--policies", "x", "--bogus")
        check("usage/unknown-flag-exit-2", r.returncode == 2, r.stderr)
        r = run(a.bin, "--help")
        check("usage/help-exit-0", r.returncode == 0 and "export map" in r.stdout)
        # a policy set that does not load
        bad = os.path.join(tmp, "bad")
        os.makedirs(bad)
        with open(os.path.join(bad, "p.yaml"), "w") as f:
            f.write("apiVersion: gpu-admission.io/v1alpha1\nkind: GPUPolicy\nmetadata: {name: x}\n"
                    "spec:\n  rules:\n  - name: r\n    match: {}\n    place: {pool: missing}\n")
        r = run(a.bin, "--policies", bad)
        check("load/invalid-exit-1", r.returncode == 1 and "p.yaml:" in r.stderr and
              not r.stdout, r.stderr)

        for name, spec in sorted(SETS.items()):
            pdir = policy_dir(a.src, spec, tmp)
            r = run(a.bin, "--policies", pdir)
            check("%s/exit-0" % name, r.returncode == 0, r.stderr)
            docs = list(yaml.safe_load_all(r.stdout))
            kinds = [d.get("kind") for d in docs]
            check("%s/two-objects" % name,
                  kinds == ["MutatingAdmissionPolicy", "MutatingAdmissionPolicyBinding"], kinds)
            check("%s/v1-named" % name, all(
                d["apiVersion"] == "admissionregistration.k8s.io/v1" and
                d["metadata"]["name"].startswith("gpu-admission-") for d in docs))
            spec_ = docs[0]["spec"]
            rr = spec_["matchConstraints"]["resourceRules"]
            check("%s/pods-create-only" % name, rr == [{
                "apiGroups": [""], "apiVersions": ["v1"], "operations": ["CREATE"],
                "resources": ["pods"]}], rr)
            check("%s/reinvocation-fail" % name, spec_["reinvocationPolicy"] == "IfNeeded" and
                  spec_["failurePolicy"] == "Fail")
            check("%s/binding-names-policy" % name,
                  docs[1]["spec"]["policyName"] == docs[0]["metadata"]["name"])
            check("%s/jsonpatch-only" % name,
                  all(m["patchType"] == "JSONPatch" for m in spec_["mutations"]))
            # what is not expressed: stderr, '#' lines, the closing line agree
            gaps = [ln for ln in r.stderr.splitlines() if ln.startswith("rule ")]
            top = [ln[len("# not expressed: "):] for ln in r.stdout.splitlines()
                   if ln.startswith("# not expressed: ")]
            check("%s/gaps-named-alike" % name, gaps == top, (gaps, top))
            if gaps:
                check("%s/gaps-summary" % name, ("%d rule(s)" % len(gaps)) in r.stderr,
                      r.stderr)
            else:
                check("%s/no-gaps-quiet" % name, r.stderr == "", r.stderr)
            # --output: the same bytes
            out = os.path.join(tmp, name + ".yaml")
            r2 = run(a.bin, "--policies", pdir, "--output", out)
            with open(out) as f:
                check("%s/output-file" % name, r2.returncode == 0 and f.read() == r.stdout)
            fx = os.path.join(fixtures, name + ".yaml")
            if a.update:
                os.makedirs(fixtures, exist_ok=True)
                with open(fx, "w") as f:
                    f.write(r.stdout)
            with open(fx) as f:
                want = f.read()
            check("%s/fixture" % name, want == r.stdout,
                  "differs from %s (e2e/map must pass before --update)" % fx)
        # the gang set names both gang rules; the cluster set has nothing to name
        r = run(a.bin, "--policies", policy_dir(a.src, "gang", tmp))
        check("gang/names-training-and-soft", "rule training:" in r.stderr and
              "rule soft:" in r.stderr, r.stderr)
        r = run(a.bin, "--policies", "/nonexistent-dir")
        check("load/missing-dir-exit-1", r.returncode == 1, r.stderr)
        r = run(a.bin, "--policies", policy_dir(a.src, "cluster", tmp), "--output",
                "/nonexistent-dir/x.yaml")
        check("output/unwritable-exit-1", r.returncode == 1 and "cannot write" in r.stderr)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print("%d passed, %d failed" % (passed, len(failures)))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
