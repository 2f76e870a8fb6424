"""test_policy_check.py - the policy check of issue 25: a pre-install,pre-upgrade hook Job (with
a hook-weighted copy of the policy ConfigMap) and a `helm test` Pod running
`gpu-admission check --strict`. Renders them (hooks, weights, delete policies, the data they
read, the hardened pod, labels no Service or PDB selects), then runs the Job's container args
verbatim with the real binary (the image's ENTRYPOINT, read from the Dockerfile) on the rendered
ConfigMap data laid out as the kubelet mounts it: the shipped policies exit 0, a policy that
does not load (`sharing: shared`) exits 1 with path:LINE:COL pointing at the bad line, a set
that loads only with warnings exits 1 under --strict, and the test Pod's command gives the
Job's answer on the ConfigMap the release serves.

Must never: run anything but the binary this build made, on files under its own temp dir."""
import json
import os
import re
import shutil
import subprocess
import tempfile
import unittest

import chartlib as c
from test_boot import KubeletVolume

BINARY = os.environ.get("GPA_BINARY", "")
MOUNT = "/etc/gpu-admission/policies"


class PolicyCheck(unittest.TestCase):
    """Issue 25: the pre-install,pre-upgrade hook Job and the helm test Pod running
    `gpu-admission check --strict` (test_policy_check.py runs their command)."""

    @classmethod
    def setUpClass(cls):
        cls.objs = c.render()

    def hook_objs(self, objs=None):
        objs = objs if objs is not None else self.objs
        job = [o for o in c.by_kind(objs, "Job")]
        test = [o for o in c.by_kind(objs, "Pod")]
        copy = [o for o in c.by_kind(objs, "ConfigMap") if c.is_hook(o)]
        return job, test, copy

    def test_hooks(self):
        (job,), (test,), (copy,) = self.hook_objs()
        ann = job["metadata"]["annotations"]
        self.assertEqual(ann["helm.sh/hook"], "pre-install,pre-upgrade")
        self.assertEqual(ann["helm.sh/hook-delete-policy"], "before-hook-creation,hook-succeeded")
        cann = copy["metadata"]["annotations"]
        self.assertEqual(cann["helm.sh/hook"], "pre-install,pre-upgrade")
        self.assertEqual(cann["helm.sh/hook-delete-policy"], ann["helm.sh/hook-delete-policy"])
        # the copy exists before the Job runs
        self.assertLess(int(cann["helm.sh/hook-weight"]), int(ann["helm.sh/hook-weight"]))
        self.assertEqual(test["metadata"]["annotations"]["helm.sh/hook"], "test")
        self.assertEqual(test["metadata"]["annotations"]["helm.sh/hook-delete-policy"],
                         "before-hook-creation,hook-succeeded")
        self.assertEqual(job["spec"]["backoffLimit"], 0)
        self.assertEqual(job["spec"]["activeDeadlineSeconds"], 300)
        self.assertEqual(job["spec"]["template"]["spec"]["restartPolicy"], "Never")
        self.assertEqual(test["spec"]["restartPolicy"], "Never")

    def test_checks_the_data_the_release_serves(self):
        (job,), (test,), (copy,) = self.hook_objs()
        served = c.policy_cm(self.objs)
        self.assertEqual(copy["data"], served["data"])
        vols = {v["name"]: v for v in job["spec"]["template"]["spec"]["volumes"]}
        self.assertEqual(vols["policies"]["configMap"]["name"], copy["metadata"]["name"])
        vols = {v["name"]: v for v in test["spec"]["volumes"]}
        self.assertEqual(vols["policies"]["configMap"]["name"], served["metadata"]["name"])
        # existingPolicyConfigMap: no copy, both read the named ConfigMap
        objs = c.render({"existingPolicyConfigMap": "team-policies"})
        (job,), (test,), copies = self.hook_objs(objs)
        self.assertEqual(copies, [])
        for spec in (job["spec"]["template"]["spec"], test["spec"]):
            self.assertEqual(spec["volumes"][0]["configMap"]["name"], "team-policies")

    def test_same_image_command_and_hardening(self):
        (job,), (test,), _ = self.hook_objs()
        server = c.one(self.objs, "Deployment")["spec"]["template"]["spec"]["containers"][0]
        for spec in (job["spec"]["template"]["spec"], test["spec"]):
            (ctr,) = spec["containers"]
            self.assertEqual(ctr["image"], server["image"])
            self.assertEqual(ctr["args"], ["check", "--strict", "/etc/gpu-admission/policies"])
            self.assertNotIn("command", ctr)  # the image's entrypoint, as for the server
            sc = ctr["securityContext"]
            self.assertIs(sc["readOnlyRootFilesystem"], True)
            self.assertIs(sc["runAsNonRoot"], True)
            self.assertIs(sc["allowPrivilegeEscalation"], False)
            self.assertEqual(sc["capabilities"], {"drop": ["ALL"]})
            self.assertIs(spec["automountServiceAccountToken"], False)
            self.assertEqual(spec["securityContext"]["seccompProfile"], {"type": "RuntimeDefault"})
            (m,) = ctr["volumeMounts"]
            self.assertEqual((m["mountPath"], m["readOnly"]), ("/etc/gpu-admission/policies", True))
            self.assertEqual(ctr["resources"], {"requests": {"cpu": "10m", "memory": "16Mi"},
                                                "limits": {"cpu": "200m", "memory": "64Mi"}})
        self.assertEqual(job["spec"]["template"]["spec"]["containers"],
                         test["spec"]["containers"])

    def test_not_counted_as_a_replica(self):
        (job,), (test,), _ = self.hook_objs()
        svc = c.one(self.objs, "Service")["spec"]["selector"]
        pdb = c.one(self.objs, "PodDisruptionBudget")["spec"]["selector"]["matchLabels"]
        for labels in (job["spec"]["template"]["metadata"]["labels"], test["metadata"]["labels"]):
            for sel in (svc, pdb):
                self.assertFalse(all(labels.get(k) == v for k, v in sel.items()), labels)

    def test_off_and_long_names(self):
        objs = c.render({"policyCheck": {"enabled": False}})
        self.assertEqual(self.hook_objs(objs), ([], [], []))
        self.assertEqual([o for o in objs if c.is_hook(o)], [])
        objs = c.render({"fullnameOverride": "x" * 63})
        (job,), (test,), (copy,) = self.hook_objs(objs)
        for o in (job, test, copy):
            self.assertLessEqual(len(o["metadata"]["name"]), 63)
        self.assertNotEqual(job["metadata"]["name"], c.one(objs, "Deployment")["metadata"]["name"])


def entrypoint():
    """The image's ENTRYPOINT (exec form) from the Dockerfile: what the pod's args follow."""
    with open(os.path.join(c.SRC, "Dockerfile")) as f:
        lines = [l for l in f.read().splitlines() if l.startswith("ENTRYPOINT")]
    assert len(lines) == 1, lines
    return json.loads(lines[0][len("ENTRYPOINT"):].strip())


class Command(unittest.TestCase):
    """The hook's exact command on the rendered data."""

    @classmethod
    def setUpClass(cls):
        if not BINARY or not os.access(BINARY, os.X_OK):
            raise AssertionError("GPA_BINARY must name the gpu-admission binary (ctest sets it)")
        cls.tmp = tempfile.mkdtemp(prefix="gpa-policy-check-")
        cls.n = 0

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def run_pod(self, objs, spec):
        """spec's one container, its args as the image runs them, with its policies volume
        laid out from the rendered ConfigMap it names."""
        (ctr,) = spec["containers"]
        (mount,) = ctr["volumeMounts"]
        self.assertEqual(mount["mountPath"], MOUNT)
        (vol,) = [v for v in spec["volumes"] if v["name"] == mount["name"]]
        cms = {o["metadata"]["name"]: o["data"] for o in c.by_kind(objs, "ConfigMap")}
        Command.n += 1
        d = os.path.join(self.tmp, "run%d" % Command.n, "policies")
        KubeletVolume(d, cms[vol["configMap"]["name"]])
        self.assertEqual(os.path.basename(entrypoint()[0]), "gpu-admission")
        argv = [BINARY] + [a.replace(MOUNT, d) for a in ctr["args"]]
        r = subprocess.run(argv, capture_output=True, text=True, timeout=60)
        return r, d

    def run_job(self, values=None):
        objs = c.render(values)
        return self.run_pod(objs, c.one(objs, "Job")["spec"]["template"]["spec"])

    def shipped(self):
        return dict(c.policy_cm(c.render())["data"])

    def test_good_policy_exit_0(self):
        r, _ = self.run_job()
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertRegex(r.stdout, r"(?m)^OK: 3 pools, 3 rules, revision [0-9a-f]{64}$")
        self.assertEqual(r.stderr, "")

    def test_broken_policy_exit_1_with_position(self):
        files = self.shipped()
        pools = files["10-pools.yaml"]
        self.assertIn("sharing: time-slicing", pools)
        files["10-pools.yaml"] = pools.replace("sharing: time-slicing", "sharing: shared", 1)
        line = files["10-pools.yaml"][:files["10-pools.yaml"].index("sharing: shared")].count(
            "\n") + 1
        r, d = self.run_job({"policies": files})
        self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
        self.assertEqual(r.stdout, "")  # never a partial description
        m = re.search(r"(?m)^(\S+/10-pools\.yaml):(\d+):(\d+): (.*)$", r.stderr)
        self.assertIsNotNone(m, r.stderr)
        self.assertEqual(os.path.realpath(m.group(1)),
                         os.path.realpath(os.path.join(d, "10-pools.yaml")))
        self.assertEqual(int(m.group(2)), line, r.stderr)
        self.assertIn("shared", m.group(4))
        self.assertIn("policy set refused", r.stderr)

    def test_warnings_fail_under_strict(self):
        files = self.shipped()
        # a rule that can never match: notebooks belongs to tenant platform, not research
        files["30-late.yaml"] = (
            "apiVersion: gpu-admission.io/v1alpha1\nkind: GPUPolicy\nmetadata: {name: late}\n"
            "spec:\n  rules:\n    - name: never\n"
            "      match: {namespaces: [notebooks], tenants: [research]}\n"
            "      place: {pool: t4-shared}\n")
        r, d = self.run_job({"policies": files})
        self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
        self.assertRegex(r.stderr, r"30-late\.yaml:6:7: warning: rule never can never match")
        self.assertIn("warnings refused (--strict)", r.stderr)
        # without --strict the same files load: the flag is what stops the rollout
        r = subprocess.run([BINARY, "check", d], capture_output=True, text=True, timeout=60)
        self.assertEqual(r.returncode, 0, r.stderr)

    def test_helm_test_pod_checks_the_served_configmap(self):
        objs = c.render()
        r, _ = self.run_pod(objs, c.one(objs, "Pod")["spec"])
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("OK: 3 pools", r.stdout)


if __name__ == "__main__":
    unittest.main(verbosity=2)
