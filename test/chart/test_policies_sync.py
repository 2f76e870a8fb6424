"""test_policies_sync.py - the chart's defaultPolicies must be byte-for-byte the repository's
policies/*.yaml|*.yml, so the chart never ships a policy set the project does not test.
Fix a drift with: python3 test/chart/test_policies_sync.py --write"""
import glob
import os
import sys
import unittest

import yaml

import chartlib as c

VALUES = os.path.join(c.CHART, "values.yaml")


def repo_policies():
    files = sorted(glob.glob(os.path.join(c.SRC, "policies", "*.yaml")) +
                   glob.glob(os.path.join(c.SRC, "policies", "*.yml")))
    out = {}
    for f in files:
        with open(f) as fh:
            out[os.path.basename(f)] = fh.read()
    return out


def write():
    """Rewrites the defaultPolicies block of values.yaml from policies/ (block scalars)."""
    with open(VALUES) as f:
        text = f.read()
    start = text.index("\ndefaultPolicies:\n") + 1
    end = start + len("defaultPolicies:\n")
    lines = text[end:].split("\n")
    i = 0
    while i < len(lines) and (lines[i].startswith("  ") or lines[i] == ""):
        i += 1
    rest = "\n".join(lines[i:])
    block = ["defaultPolicies:"]
    for name, body in repo_policies().items():
        chomp = "|" if body.endswith("\n") and not body.endswith("\n\n") else "|+"
        if not body.endswith("\n"):
            chomp = "|-"
        block.append(f"  {name}: {chomp}")
        block += [("    " + ln) if ln else "" for ln in body.rstrip("\n").split("\n")]
        if chomp == "|+":
            block += [""] * (len(body) - len(body.rstrip("\n")) - 1)
    with open(VALUES, "w") as f:
        f.write(text[:start] + "\n".join(block) + "\n\n" + rest)


class PoliciesSync(unittest.TestCase):
    def test_chart_default_is_repo_policies(self):
        repo = repo_policies()
        self.assertTrue(repo, "policies/ holds no *.yaml")
        with open(VALUES) as f:
            values = yaml.safe_load(f)
        self.assertEqual(sorted(values["defaultPolicies"]), sorted(repo),
                         "file names differ; run: python3 test/chart/test_policies_sync.py --write")
        for name, body in repo.items():
            self.assertEqual(values["defaultPolicies"][name], body,
                             f"{name} differs; run: python3 test/chart/test_policies_sync.py --write")

    def test_rendered_configmap_carries_them(self):
        cm = c.policy_cm(c.render())
        self.assertEqual(cm["data"], repo_policies())


if __name__ == "__main__":
    if "--write" in sys.argv:
        write()
        sys.exit(0)
    unittest.main(verbosity=2)
