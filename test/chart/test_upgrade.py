"""test_upgrade.py - `helm upgrade --reuse-values` from chart 0.1.0 (issue 25): the new
templates and schema with 0.1.0's values.yaml as the chart's defaults, as Helm does it. The
old release renders as that chart did (its namespace list, no priority class, one spread, no
policy check), except that the label gpu-admission.io/ignore exempts from nothing; the old
release's own values are kept and the new keys given on the command line take effect.
(test_render.py's Workloads.test_reuse_values_from_an_older_chart covers the same keys set to
null.)"""
import os
import tempfile
import unittest

import yaml

import chartlib as c
from test_render import IGNORE_EXPR, ns_hook, pod_spec, webhooks


class ReuseValues(unittest.TestCase):
    """`helm upgrade --reuse-values` from chart 0.1.0 (before issue 25). Helm renders the new
    templates with the old release's values as the chart's defaults (pkg/action/upgrade.go,
    reuseValues: chart.Values = CoalesceValues(old chart, old config)) and checks them with the
    new schema. The same here: a copy of this chart whose values.yaml is 0.1.0's
    (fixtures/values-before-issue25.yaml), plus the old release's own values."""

    @classmethod
    def setUpClass(cls):
        import shutil
        cls.tmp = tempfile.mkdtemp(prefix="gpa-reuse-")
        cls.chart = os.path.join(cls.tmp, "gpu-admission")
        shutil.copytree(c.CHART, cls.chart)
        shutil.copy(os.path.join(os.path.dirname(os.path.abspath(__file__)), "fixtures",
                                 "values-before-issue25.yaml"),
                    os.path.join(cls.chart, "values.yaml"))

    @classmethod
    def tearDownClass(cls):
        import shutil
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def render_old(self, values=None, extra=()):
        args, _ = c._set_args(values)
        r = c.helm("template", c.RELEASE, self.chart, "--namespace", c.RELEASE_NS,
                   "--kube-version", "1.33.0", *args, *extra)
        return [d for d in yaml.safe_load_all(r.stdout) if d]

    def test_old_defaults_render_as_that_chart_did_but_the_label_is_gone(self):
        objs = self.render_old()
        _, v, mw, vw = webhooks(objs)
        old_names = {"matchExpressions": [{"key": "kubernetes.io/metadata.name",
                                           "operator": "NotIn",
                                           "values": [c.RELEASE_NS, "kube-system"]}]}
        for w in [mw] + v["webhooks"]:
            # the old list of names; the label no longer exempts from anything
            self.assertEqual(w["namespaceSelector"], old_names, w["name"])
        self.assertIsNone(ns_hook(objs))
        spec = pod_spec(objs)
        self.assertNotIn("priorityClassName", spec)  # 0.1.0's "" is kept
        self.assertEqual([t["topologyKey"] for t in spec["topologySpreadConstraints"]],
                         ["kubernetes.io/hostname"])
        self.assertEqual([o["kind"] for o in objs if c.is_hook(o)], [])  # no policy check
        self.assertEqual([a for a in spec["containers"][0]["args"] if "ignore-label" in a], [])

    def test_old_release_values_kept_and_new_ones_added(self):
        old = {"webhook": {"excludeNamespaces": ["gpu-operator", "batch"]},
               "priorityClassName": "gpu-critical"}
        objs = self.render_old(old)
        self.assertEqual(webhooks(objs)[3]["namespaceSelector"]["matchExpressions"][0]["values"],
                         [c.RELEASE_NS, "kube-system", "gpu-operator", "batch"])
        self.assertEqual(pod_spec(objs)["priorityClassName"], "gpu-critical")
        # the new keys given on the upgrade's command line work on top of the old values
        objs = self.render_old(old, extra=[
            "--set", "webhook.ignoreLabel.enabled=true",
            "--set", "webhook.ignoreLabel.namespaces={ops-recovery}",
            "--set", "policyCheck.enabled=true",
            "--set", "policyCheck.activeDeadlineSeconds=60",
            "--set", "topologySpread.zone.enabled=true",
            "--set", "topologySpread.zone.maxSkew=1",
            "--set", "topologySpread.zone.topologyKey=topology.kubernetes.io/zone",
            "--set", "topologySpread.zone.whenUnsatisfiable=ScheduleAnyway"])
        self.assertIsNotNone(ns_hook(objs))
        self.assertIn(IGNORE_EXPR, webhooks(objs)[2]["namespaceSelector"]["matchExpressions"])
        self.assertEqual(len(c.by_kind(objs, "Job")), 1)
        self.assertEqual(len(pod_spec(objs)["topologySpreadConstraints"]), 2)

    def test_new_schema_accepts_the_old_values(self):
        # the fixture really is the old chart: the label expression and "" priority class
        with open(os.path.join(self.chart, "values.yaml")) as f:
            old = yaml.safe_load(f)
        self.assertEqual(old["priorityClassName"], "")
        self.assertNotIn("gpuOperatorNamespace", old["webhook"])
        self.assertNotIn("policyCheck", old)
        r = c.helm("lint", self.chart, "--namespace", c.RELEASE_NS)
        self.assertIn("0 chart(s) failed", r.stdout)


if __name__ == "__main__":
    unittest.main(verbosity=2)
