#!/usr/bin/env python3
"""test_tenancy.py - the proofs docs/security.md cites for "a namespace named like a tenant"
and "tenants whose globs overlap" (issue 33, path 3), played as the attacker plays them.

What it is for: the attacker may create namespaces (OpenShift projects, Capsule, HNC) and
names one after a tenant whose globs leave that name open. Each test_* runs the real CLI the
way the API server runs the two webhooks - `review mutate`, the patch applied, `review
validate` on the result - and with the mutating webhook skipped (`review validate` alone), and
asserts the denial and its message, next to the same request from the tenant's own namespace,
which must still work (so a webhook that denied everything fails). The policy is the one the
issue describes: tenant platform (trusted, DRA rights) shares a time-sliced pool, open to
untrusted tenants under the tenant anti-affinity, through a rule `tenants: [platform]`.
`check` is run as the platform team runs it in CI.

What it must never do: depend on anything but the binary, its own policy files, the shipped
policies/, test/golden/policies/dra and the POLICY.md contract; or leave temp files behind.

Usage: test_tenancy.py [--bin BIN] [unittest args]
"""

import argparse
import copy
import json
import os
import shutil
import sys
import tempfile
import unittest

import harness as H

BIN = None
WORK = None

TENANCY = """apiVersion: gpu-admission.io/v1alpha1
kind: GPUPolicy
metadata: {name: tenancy}
spec:
  tenancy:
    tenants:
      - {name: research, namespaces: ["research-*"], trust: untrusted}
      - name: platform
        namespaces: [ml-platform]
        trust: trusted
        dra: {adminAccess: true, allocationModeAll: true}
    default: {trust: untrusted}
  unmatched: %s
  enforcement: %s
"""

POOLS_RULES = """apiVersion: gpu-admission.io/v1alpha1
kind: GPUPolicy
metadata: {name: pools}
spec:
  pools:
    - name: shared
      nodeSelector: {nvidia.com/gpu.sharing-strategy: time-slicing}
      sharing: time-slicing
      timeSlicing: {resource: nvidia.com/gpu.shared, replicas: 4}
      allowUntrusted: true   # the tenant anti-affinity keeps tenants apart
  rules:
    - {name: platform-shared, match: {tenants: [platform]}, place: {pool: shared}}
    - {name: research-shared, match: {tenants: [research]}, place: {pool: shared}}
"""

TAKEN = "namespace platform is in no tenant but carries the name of tenant platform"
FIX = "the policy must claim the namespace in tenant platform's namespaces, or rename the tenant"


def policy_dir(name, unmatched="deny", enforcement="deny", tenancy=None):
    d = os.path.join(WORK, name)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, "00-tenancy.yaml"), "w") as f:
        f.write(tenancy or TENANCY % (unmatched, enforcement))
    with open(os.path.join(d, "10-pools.yaml"), "w") as f:
        f.write(POOLS_RULES)
    return d


def review(hook, rv, policies):
    with tempfile.NamedTemporaryFile(suffix=".json", delete=False, dir=WORK) as f:
        f.write(H.dumps(rv))
        path = f.name
    try:
        rc, out, err, _ = H.run_cli(BIN, ["review", hook, "--policies", policies, path],
                                    timeout=60)
    finally:
        os.unlink(path)
    if rc not in (0, 2):
        raise AssertionError("review %s: rc %s: %s" % (hook, rc, err.decode()[-500:]))
    return H.parse_review_response(out, rv["request"]["uid"])


def claim_review(obj, kind="ResourceClaim"):
    rv = H.review(obj)
    res = "resourceclaims" if kind == "ResourceClaim" else "resourceclaimtemplates"
    for k in ("kind", "requestKind"):
        rv["request"][k] = {"group": "resource.k8s.io", "version": "v1", "kind": kind}
    for k in ("resource", "requestResource"):
        rv["request"][k] = {"group": "resource.k8s.io", "version": "v1", "resource": res}
    return rv


def gpu_pod(ns, gpus=1, **kw):
    return H.pod("squatter", ns, gpus=gpus, **kw)


def check(*args):
    rc, out, err, _ = H.run_cli(BIN, ["check"] + list(args), timeout=120)
    return rc, out.decode(), err.decode()


class Tenancy(unittest.TestCase):

    def denied(self, hook, rv, policies, *words):
        resp, patch = review(hook, rv, policies)
        self.assertFalse(resp["allowed"], "%s allowed: %r" % (hook, resp))
        self.assertIsNone(patch)
        msg = resp["status"]["message"]
        for w in words:
            self.assertIn(w, msg, "%s message %r lacks %r" % (hook, msg, w))
        return resp

    def through_both_webhooks(self, pod, policies):
        """The API server's order: mutate, apply the patch, validate what it would store."""
        resp, patch = review("mutate", H.review(pod), policies)
        if not resp["allowed"]:
            return resp, None
        stored = H.apply_patch(pod, patch or [])
        vresp, vpatch = review("validate", H.review(stored), policies)
        self.assertIsNone(vpatch)
        return vresp, stored

    # ---- pods

    def test_squatted_namespace_gets_no_gpu(self):
        pol = policy_dir("deny")
        pod = gpu_pod("platform")
        for hook in ("mutate", "validate"):  # validate alone: the mutating webhook skipped
            resp = self.denied(hook, H.review(pod), pol, TAKEN, FIX)
            self.assertEqual(resp["status"]["code"], 403)
        # the tenant's own namespace is placed with its label and anti-affinity, and the
        # validating webhook admits what the API server would store
        resp, stored = self.through_both_webhooks(gpu_pod("ml-platform"), pol)
        self.assertTrue(resp["allowed"], resp)
        self.assertEqual(stored["metadata"]["labels"]["gpu-admission.io/tenant"], "platform")
        # a namespace in no tenant with another name is only unmatched
        self.denied("validate", H.review(gpu_pod("web")), pol, "no GPU policy rule matches")

    def test_squatter_copies_a_placed_pod(self):
        """The attacker writes the whole final spec a platform pod gets (tenant label, pool
        label, anti-affinity, resource) so other tenants' anti-affinity would not repel it."""
        pol = policy_dir("deny")
        _, stored = self.through_both_webhooks(gpu_pod("ml-platform"), pol)
        forged = copy.deepcopy(stored)
        forged["metadata"]["namespace"] = "platform"
        for hook in ("mutate", "validate"):
            self.denied(hook, H.review(forged), pol, TAKEN, FIX)
        # without GPUs, the tenant label alone is refused there too
        label_only = H.pod("squatter", "platform",
                           labels={"gpu-admission.io/tenant": "platform"})
        self.denied("validate", H.review(label_only), pol, TAKEN)
        # ... on UPDATE as well (adding the label later)
        plain = H.pod("squatter", "platform")
        self.denied("validate", H.review(label_only, operation="UPDATE", old_object=plain), pol,
                    TAKEN)
        # and a pod there without GPUs or the label still runs
        resp, _ = review("validate", H.review(plain), pol)
        self.assertTrue(resp["allowed"], resp)

    def test_warn_mode_adds_no_tenant_label(self):
        """enforcement warn admits the pod, but the mutating webhook must not have placed it:
        no gpu-admission.io/tenant: platform, no pool."""
        pol = policy_dir("warn", unmatched="allow", enforcement="warn")
        pod = gpu_pod("platform")
        resp, patch = review("mutate", H.review(pod), pol)
        self.assertTrue(resp["allowed"])
        self.assertIsNone(patch)
        self.assertTrue(any(TAKEN in w or "policy violation (warn): namespace platform" in w
                            for w in resp.get("warnings", [])), resp.get("warnings"))
        resp, _ = review("validate", H.review(pod), pol)
        self.assertTrue(resp["allowed"])
        # the tenant's own namespace is placed as before under warn
        resp, patch = review("mutate", H.review(gpu_pod("ml-platform")), pol)
        self.assertTrue(any(op["path"] == "/metadata/labels" for op in patch or []), patch)

    def test_unmatched_allow_does_not_open_it(self):
        pol = policy_dir("allow", unmatched="allow")
        for hook in ("mutate", "validate"):
            self.denied(hook, H.review(gpu_pod("platform")), pol, TAKEN)
        resp, _ = review("validate", H.review(gpu_pod("web")), pol)
        self.assertTrue(resp["allowed"], resp)  # unmatched: allow still holds elsewhere

    # ---- DRA claims

    def test_claim_takes_no_rights(self):
        pol = os.path.join(H.REPO, "test", "golden", "policies", "dra")
        claim = {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
                 "metadata": {"name": "every-gpu", "namespace": "platform"},
                 "spec": {"devices": {"requests": [
                     {"name": "all", "exactly": {"deviceClassName": "gpu.nvidia.com",
                                                 "allocationMode": "All",
                                                 "adminAccess": True}}]}}}
        for hook in ("mutate", "validate"):
            self.denied(hook, claim_review(claim), pol, TAKEN,
                        "namespace platform (in no tenant) may not")
        tmpl = {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaimTemplate",
                "metadata": {"name": "every-gpu", "namespace": "platform"},
                "spec": {"spec": claim["spec"]}}
        for hook in ("mutate", "validate"):
            self.denied(hook, claim_review(tmpl, "ResourceClaimTemplate"), pol, TAKEN)
        # tenant platform's own namespace keeps both rights
        own = copy.deepcopy(claim)
        own["metadata"]["namespace"] = "ml-platform"
        for hook in ("mutate", "validate"):
            resp, _ = review(hook, claim_review(own), pol)
            self.assertTrue(resp["allowed"], resp)

    # ---- check, as the platform team runs it in CI

    def test_check_names_the_open_names(self):
        pol = policy_dir("check")
        rc, out, err = check("--strict", "-q", pol)
        self.assertEqual(rc, 1, err)
        self.assertIn("tenant platform: its globs do not claim namespace platform", err)
        self.assertIn("tenant research: its globs do not claim namespace research", err)
        self.assertIn("warnings refused (--strict)", err)
        # the rule of tenant platform is witnessed by its own namespace, never by "platform"
        rc, out, err = check("-o", "json", pol)
        self.assertEqual(rc, 0, err)
        doc = json.loads(out)
        wit = {r["rule"]: r.get("witness", {}).get("namespace")
               for r in doc["reachability"]["rules"]}
        self.assertEqual(wit["platform-shared"], "ml-platform")
        self.assertEqual(wit["research-shared"][:9], "research-")
        kinds = sorted(f["kind"] for f in doc["findings"] if f["severity"] == "warning")
        self.assertEqual(kinds, ["tenant-name-unclaimed", "tenant-name-unclaimed"])
        # the platform team's fix: each tenant claims its own name
        fixed = policy_dir("fixed", tenancy=(TENANCY % ("deny", "deny")).replace(
            "[ml-platform]", "[platform, ml-platform]").replace(
            '["research-*"]', '[research, "research-*"]'))
        rc, out, err = check("--strict", "-q", fixed)
        self.assertEqual(rc, 0, err)
        self.assertNotIn("warning", err)
        # and the namespace platform is then tenant platform's: placed with its label
        resp, stored = self.through_both_webhooks(gpu_pod("platform"), fixed)
        self.assertTrue(resp["allowed"], resp)
        self.assertEqual(stored["metadata"]["labels"]["gpu-admission.io/tenant"], "platform")

    def test_check_names_overlapping_tenants(self):
        d = os.path.join(WORK, "overlap")
        os.makedirs(d)
        with open(os.path.join(d, "t.yaml"), "w") as f:
            f.write("apiVersion: gpu-admission.io/v1alpha1\nkind: GPUPolicy\nspec:\n"
                    "  tenancy:\n    tenants:\n"
                    "      - {name: dev, namespaces: [dev, \"*-dev\"], trust: trusted}\n"
                    "      - {name: ext-acme, namespaces: [ext-acme, \"ext-acme-*\"]}\n")
        rc, out, err = check("--strict", "-q", d)
        self.assertEqual(rc, 1, err)
        self.assertIn("t.yaml:7:9: warning: tenants dev and ext-acme can both match namespace "
                      "ext-acme-dev", err)
        # the witness is real: the engine gives ext-acme-dev to the trusted tenant dev
        explain = H.run_cli(BIN, ["mutate", "--explain", "--policies", d, "-n", "ext-acme-dev",
                                  "-"], stdin=H.dumps(gpu_pod("ext-acme-dev")), timeout=60)
        self.assertIn("namespace ext-acme-dev: tenant dev, trusted", explain[2].decode() +
                      explain[1].decode())

    def test_shipped_set_passes_strict(self):
        rc, out, err = check("--strict", "-q", os.path.join(H.REPO, "policies"))
        self.assertEqual(rc, 0, err)
        self.assertNotIn("warning", err)


def main():
    global BIN, WORK
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin")
    a, rest = ap.parse_known_args()
    BIN = H.find_bin(a.bin)
    WORK = tempfile.mkdtemp(prefix="gpa-tenancy-")
    try:
        prog = unittest.main(argv=[sys.argv[0], "-v"] + rest, exit=False)
    finally:
        shutil.rmtree(WORK, ignore_errors=True)
    return 0 if prog.result.wasSuccessful() else 1


if __name__ == "__main__":
    sys.exit(main())
