"""test_docs.py - docs/operations.md and the chart agree: every value path the docs (and the
chart's README) name exists in values.yaml, and every error the chart itself can print
(fail / required) is quoted in the docs, so a user never meets a chart message the runbook
does not explain."""
import glob
import os
import re
import unittest

import yaml

import chartlib as c

DOC = os.path.join(c.SRC, "docs", "operations.md")


def values_paths():
    with open(os.path.join(c.CHART, "values.yaml")) as f:
        v = yaml.safe_load(f)
    out = set()

    def walk(node, prefix):
        for k, x in node.items():
            p = f"{prefix}.{k}" if prefix else k
            out.add(p)
            if isinstance(x, dict) and k not in ("policies", "defaultPolicies"):
                walk(x, p)
    walk(v, "")
    # keys documented as sub-fields of free-form maps
    out |= {"certificates.certManager.issuerRef.name", "certificates.certManager.issuerRef.kind"}
    return v, out


class Docs(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        with open(DOC) as f:
            cls.doc = f.read()

    def test_value_paths_in_docs_exist(self):
        v, paths = values_paths()
        with open(os.path.join(c.CHART, "README.md")) as f:
            text = self.doc + f.read()
        named = set(re.findall(r"`([a-z][A-Za-z]*(?:\.[A-Za-z][A-Za-z0-9]*)+)`", text))
        named |= set(re.findall(r"--set(?:-file)? ([a-z][A-Za-z]*(?:\.[A-Za-z][A-Za-z0-9]*)+)=",
                                text))
        # pod fields the docs mention that share a first segment with a value
        pod_fields = {"resources.claims"}
        checked = {n for n in named if n.split(".")[0] in v and n not in pod_fields}
        self.assertGreaterEqual(len(checked), 15, "the docs should name the chart's values")
        self.assertEqual(sorted(n for n in checked if n not in paths), [])

    def test_chart_errors_are_documented(self):
        msgs = []
        for t in glob.glob(os.path.join(c.CHART, "templates", "*")):
            with open(t) as f:
                text = f.read()
            msgs += re.findall(r'(?:fail|required) (?:\(printf )?"([^"]+)"', text)
        self.assertGreaterEqual(len(msgs), 4)
        for m in msgs:
            head = re.split(r"%[a-z]", m)[0].strip()
            head = head[:40] if len(head) > 40 else head
            with self.subTest(m):
                self.assertGreater(len(head), 10)
                self.assertTrue(head in self.doc, f"chart message not in docs/operations.md: {m}")

    def test_sections_present(self):
        for s in ("Install", "Upgrade", "Writing and rolling out policies", "Failure modes",
                  "Uninstall", "Troubleshooting"):
            body = self.doc.split(f"\n## {s}\n", 1)
            self.assertEqual(len(body), 2, s)
            self.assertGreater(len(body[1].split("\n## ", 1)[0].strip()), 400, s)


if __name__ == "__main__":
    unittest.main(verbosity=2)
