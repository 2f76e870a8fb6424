#!/usr/bin/env python3
"""test_witnesses.py - `gpu-admission check --witnesses FILE` (issue 20 part 3).

The suite written for the shipped policies/ has one case per rule (a pod that rule takes)
plus one per finding with a witness, and passes under `gpu-admission test`; the same for a set
with every finding (test/unit/policies/reach). The suite is a real regression test: written
for a copy of the shipped set, it fails once a rule of the copy changes (the pod the rule took
goes elsewhere).
"""
import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import unittest

ARGS = None


def run(*argv):
    return subprocess.run([ARGS.bin, *argv], capture_output=True, text=True, timeout=120)


class Witnesses(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="gpa-witnesses-")

    def tearDown(self):
        shutil.rmtree(self.tmp, ignore_errors=True)

    def write_and_test(self, policies):
        out = os.path.join(self.tmp, "witnesses.yaml")
        r = run("check", "--quiet", "--witnesses", out, policies)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertRegex(r.stderr, r"wrote \d+ witness case\(s\) to ")
        with open(out) as f:
            text = f.read()
        t = run("test", out)
        return text, t

    def test_shipped_set(self):
        policies = os.path.join(ARGS.src, "policies")
        text, t = self.write_and_test(policies)
        rules = json.loads(run("check", "-o", "json", policies).stdout)["rules"]
        takes = re.findall(r'name: "rule (\S+) takes its witness"', text)
        self.assertEqual(len(takes), rules, text)  # every shipped rule is reached
        self.assertEqual(t.returncode, 0, t.stdout + t.stderr)
        self.assertRegex(t.stdout, r"\b%d passed, 0 failed" % (len(re.findall(r"^  - name:", text, re.M))))
        # each rule case expects that rule
        for rule in takes:
            self.assertIn("rule: %s" % rule, text)

    def test_every_finding(self):
        policies = os.path.join(ARGS.src, "test/unit/policies/reach")
        text, t = self.write_and_test(policies)
        self.assertEqual(t.returncode, 0, t.stdout + t.stderr)
        self.assertIn('"rule no-sandbox-train is never reached: its witness goes to rule train"',
                      text)
        self.assertIn('"rule no-sandbox-big is partly bypassed: its witness is placed by rule '
                      'train-big"', text)
        self.assertIn('"rule huge denies every pod it matches: gpuMemory beyond its pool"', text)
        self.assertNotIn("rule prod-eu takes its witness", text)  # never reached

    def test_suite_catches_a_changed_rule(self):
        copy = os.path.join(self.tmp, "policies")
        shutil.copytree(os.path.join(ARGS.src, "policies"), copy,
                        ignore=shutil.ignore_patterns("tests"))
        text, t = self.write_and_test(copy)
        self.assertEqual(t.returncode, 0, t.stdout + t.stderr)
        # the notebooks rule narrowed to another namespace: its witness pod is no longer its
        rules = os.path.join(copy, "20-rules.yaml")
        with open(rules) as f:
            y = f.read()
        self.assertIn("match: {namespaces: [notebooks]}", y)
        y = y.replace("match: {namespaces: [notebooks]}", "match: {namespaces: [notebooks-b]}")
        with open(rules, "w") as f:
            f.write(y)
        t2 = run("test", os.path.join(self.tmp, "witnesses.yaml"))
        self.assertEqual(t2.returncode, 1, t2.stdout + t2.stderr)
        self.assertRegex(t2.stdout, r'FAIL  witnesses/rule notebooks takes its witness')
        self.assertIn('rule: expected "notebooks", got null', t2.stdout)


def main():
    global ARGS
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", required=True)
    ap.add_argument("--src", required=True)
    ARGS, rest = ap.parse_known_args()
    unittest.main(argv=[sys.argv[0]] + rest, verbosity=2)


if __name__ == "__main__":
    main()
