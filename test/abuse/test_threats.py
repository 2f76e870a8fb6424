#!/usr/bin/env python3
"""test_threats.py - the proofs docs/security.md cites for the pod-level attacks.

What it is for: each test_* case plays one tenant attack through the real CLI
(`gpu-admission review validate|mutate`) on a crafted AdmissionReview against the shipped
policies (policies/), and asserts the denial AND its message - and a minimal allowed variant,
so a webhook that denied everything (or nothing) fails. The cases about a shared GPU use the
shipped notebooks rule (namespace notebooks, trusted tenant platform -> pool t4-shared).

What it must never do: depend on anything but the binary, the shipped policy files and the
POLICY.md contract (messages are matched on the words POLICY.md / DECISIONS.md fix, not on
incidental wording), or leave temp files behind.

Usage: test_threats.py [--bin BIN] [--policies DIR] [unittest args]
"""

import argparse
import base64
import copy
import json
import os
import sys
import tempfile
import unittest

import harness as H

BIN = None
POLICIES = None
NVD = "NVIDIA_VISIBLE_DEVICES"


def review(hook, rv, policies=None):
    """Runs the CLI; returns (response dict, patch list or None)."""
    with tempfile.NamedTemporaryFile(suffix=".json", delete=False) as f:
        f.write(H.dumps(rv))
        path = f.name
    try:
        rc, out, err, _ = H.run_cli(BIN, ["review", hook, "--policies", policies or POLICIES,
                                          path], timeout=60)
    finally:
        os.unlink(path)
    if rc not in (0, 2):
        raise AssertionError("review %s: rc %s: %s" % (hook, rc, err.decode()[-500:]))
    resp, patch = H.parse_review_response(out, rv["request"]["uid"])
    return resp, patch


def env_pod(ns, env, kind="containers", labels=None, name="p"):
    c = {"name": "c", "image": "registry.example/app:1", "env": env}
    p = H.pod(name, ns, labels=labels, containers=[{"name": "main", "image": "i"}])
    if kind == "containers":
        p["spec"]["containers"] = [c]
    else:
        p["spec"][kind] = [c]
    return p


def shared_pod(ns="notebooks", **kw):
    return H.pod("s", ns, gpus=1, resource_name="nvidia.com/gpu.shared", **kw)


def mutated(pod, policies=None):
    """The pod as the API server stores it after the mutating webhook."""
    resp, patch = review("mutate", H.review(pod), policies)
    assert resp["allowed"], resp
    return H.apply_patch(pod, patch or [])


def claim_review(claim):
    """A ResourceClaim CREATE as the API server sends it (resource.k8s.io/v1)."""
    rv = H.review(claim)
    gvk = {"group": "resource.k8s.io", "version": "v1", "kind": "ResourceClaim"}
    gvr = {"group": "resource.k8s.io", "version": "v1", "resource": "resourceclaims"}
    rv["request"].update({"kind": gvk, "requestKind": gvk, "resource": gvr,
                          "requestResource": gvr})
    return rv


def claim_update(obj, old):
    """A ResourceClaim UPDATE as the API server sends it: the new object and the stored one."""
    rv = claim_review(obj)
    rv["request"].update({"operation": "UPDATE", "oldObject": old,
                          "options": {"apiVersion": "meta.k8s.io/v1", "kind": "UpdateOptions"}})
    return rv


def claim(ns, request):
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
            "metadata": {"name": "c", "namespace": ns},
            "spec": {"devices": {"requests": [dict({"name": "gpu"}, exactly=request)]}}}


class Threats(unittest.TestCase):

    def assertDenied(self, hook, rv, *words, policies=None):
        resp, patch = review(hook, rv, policies)
        self.assertFalse(resp["allowed"], "%s allowed: %r" % (hook, resp))
        self.assertIsNone(patch)
        self.assertEqual(resp["status"]["code"], 403)
        msg = resp["status"]["message"]
        for w in words:
            self.assertIn(w, msg, "%s message %r lacks %r" % (hook, msg, w))
        return resp

    def assertAllowed(self, hook, rv, policies=None):
        resp, patch = review(hook, rv, policies)
        self.assertTrue(resp["allowed"], "%s denied: %r" % (hook, resp.get("status")))
        return resp, patch

    # ---- tenant identity

    def test_tenant_claim_create(self):
        for hook in ("validate", "mutate"):
            for gpus in (0, 1):
                rv = H.review(H.pod("t", "research-x", gpus=gpus,
                                    labels={"gpu-admission.io/tenant": "platform"}))
                self.assertDenied(hook, rv, "pod claims tenant platform but namespace "
                                  "research-x belongs to tenant research")
        # control: claiming its own tenant is fine
        self.assertAllowed("validate", H.review(H.pod(
            "t", "research-x", labels={"gpu-admission.io/tenant": "research"})))

    def test_tenant_claim_update(self):
        old = H.pod("t", "research-x", labels={"app": "a"})
        new = copy.deepcopy(old)
        new["metadata"]["labels"]["gpu-admission.io/tenant"] = "platform"
        self.assertDenied("validate", H.review(new, operation="UPDATE", old_object=old),
                          "pod claims tenant platform but namespace research-x belongs to "
                          "tenant research")
        benign = copy.deepcopy(old)
        benign["metadata"]["labels"]["app"] = "b"
        self.assertAllowed("validate", H.review(benign, operation="UPDATE", old_object=old))

    def test_namespace_mismatch(self):
        # request.namespace is what the API server authorised; the object's own namespace
        # field must not make an untrusted tenant's pod look like a trusted one
        pod = env_pod("ml-platform", [{"name": NVD, "value": "all"}])
        self.assertDenied("validate", H.review(pod, namespace="research-x"), NVD)
        self.assertAllowed("validate", H.review(pod, namespace="ml-platform"))

    # ---- trust

    def test_trust_raise_ignored(self):
        pod = env_pod("research-x", [{"name": NVD, "value": "all"}],
                      labels={"gpu-admission.io/trust": "trusted"})
        resp = self.assertDenied("validate", H.review(pod), NVD)
        self.assertTrue(any("trust" in w and "ignored" in w for w in resp.get("warnings", [])),
                        resp.get("warnings"))
        # a trusted namespace may set it: the denial above comes from the namespace's trust
        self.assertAllowed("validate", H.review(env_pod("ml-platform",
                                                        [{"name": NVD, "value": "all"}])))
        # raising trust does not open the time-sliced pool either
        self.assertDenied("validate", H.review(shared_pod(
            "research-x", labels={"gpu-admission.io/trust": "trusted"})),
            "untrusted workloads may not share a time-sliced GPU")

    def test_trust_bad_value(self):
        rv = H.review(H.pod("t", "research-x", labels={"gpu-admission.io/trust": "root"}))
        self.assertDenied("validate", rv, "gpu-admission.io/trust", "root")
        self.assertDenied("mutate", rv, "gpu-admission.io/trust", "root")
        # lowering is allowed, and it takes effect: a trusted namespace's pod that lowers
        # itself is judged untrusted
        low = {"gpu-admission.io/trust": "untrusted"}
        self.assertAllowed("validate", H.review(H.pod("t", "ml-platform", labels=low)))
        self.assertDenied("validate", H.review(env_pod("ml-platform", [
            {"name": NVD, "value": "all"}], labels=low)), NVD)

    # ---- GPUs outside the device plugin

    def test_visible_devices_untrusted(self):
        for var in (NVD, "NVIDIA_MIG_CONFIG_DEVICES"):
            for value in ("all", "0", "GPU-8f3a"):
                rv = H.review(env_pod("research-x", [{"name": var, "value": value}]))
                self.assertDenied("validate", rv, var)
                self.assertDenied("mutate", rv, var)
        for value in ("void", "none"):
            self.assertAllowed("validate", H.review(env_pod("research-x", [
                {"name": NVD, "value": value}])))
        # namespaces in no tenant default to untrusted
        self.assertDenied("validate", H.review(env_pod("some-team", [
            {"name": NVD, "value": "all"}])), NVD)

    def test_visible_devices_containers_kinds(self):
        for kind in ("initContainers", "ephemeralContainers"):
            rv = H.review(env_pod("research-x", [{"name": NVD, "value": "all"}], kind=kind))
            self.assertDenied("validate", rv, NVD)

    def test_visible_devices_nul_escape(self):
        # "void\u0000,0": the API server forwards it (env values are not validated) and stores
        # the whole string; a reader that stops at the NUL would judge "void" and allow it
        pod = env_pod("research-x", [{"name": NVD, "value": "void\u0000,0"}])
        with tempfile.NamedTemporaryFile(suffix=".json", delete=False) as f:
            f.write(H.dumps(H.review(pod)))
        try:
            for hook in ("validate", "mutate"):
                rc, out, err, _ = H.run_cli(BIN, ["review", hook, "--policies", POLICIES,
                                                  f.name], timeout=60)
                if rc == 0:
                    resp, _ = H.parse_review_response(out)
                    self.assertFalse(resp["allowed"], "NUL-split value allowed: %r" % resp)
                else:
                    self.assertEqual(rc, 1, err)  # refused as a bad request (400)
                    self.assertIn("u0000", err.decode() + out.decode())
        finally:
            os.unlink(f.name)

    def test_ephemeral_container_added_later(self):
        # `kubectl debug` adds an ephemeral container to a running pod through the
        # pods/ephemeralcontainers subresource (an UPDATE). The validating webhook judges the
        # containers of such an update like a CREATE; the chart registers the subresource.
        def debug_review(ns, container):
            old = H.pod("a", ns, containers=[{"name": "main", "image": "i"}])
            new = copy.deepcopy(old)
            new["spec"]["ephemeralContainers"] = [container]
            rv = H.review(new, operation="UPDATE", old_object=old)
            rv["request"]["subResource"] = "ephemeralcontainers"
            return rv
        nvd = {"name": "debugger", "image": "busybox", "env": [{"name": NVD, "value": "all"}]}
        priv = {"name": "debugger", "image": "busybox", "securityContext": {"privileged": True}}
        self.assertDenied("validate", debug_review("research-x", nvd), NVD)
        self.assertDenied("validate", debug_review("research-x", priv), "privileged")
        # a plain debug container, or a trusted namespace, is fine
        self.assertAllowed("validate", debug_review("research-x", {"name": "d", "image": "b"}))
        self.assertAllowed("validate", debug_review("ml-platform", priv))
        # the mutating webhook never patches a running pod
        resp, _ = review("mutate", debug_review("research-x", nvd))
        self.assertTrue(resp["allowed"])
        self.assertNotIn("patch", resp)

    def test_visible_devices_value_from(self):
        env = [{"name": NVD, "valueFrom": {"configMapKeyRef": {"name": "cm", "key": "k"}}}]
        self.assertDenied("validate", H.review(env_pod("research-x", env)), NVD)
        self.assertAllowed("validate", H.review(env_pod("ml-platform", env)))

    def test_privileged_untrusted(self):
        def priv(ns, value, kind="containers"):
            p = H.pod("p", ns, containers=[{"name": "main", "image": "i"}])
            c = {"name": "c", "image": "i", "securityContext": {"privileged": value}}
            if kind == "containers":
                p["spec"]["containers"] = [c]
            else:
                p["spec"][kind] = [c]
            return H.review(p)
        self.assertDenied("validate", priv("research-x", True), "privileged")
        self.assertDenied("mutate", priv("research-x", True), "privileged")
        self.assertDenied("validate", priv("research-x", True, "initContainers"), "privileged")
        self.assertAllowed("validate", priv("research-x", False))
        self.assertAllowed("validate", priv("ml-platform", True))

    # ---- time-sliced GPUs

    def test_untrusted_on_time_slicing(self):
        msg = "untrusted workloads may not share a time-sliced GPU"
        # the shipped notebooks rule places notebooks pods on t4-shared; notebooks belongs to
        # the trusted platform tenant, so the pod lowers its own trust with the label
        lowered = {"gpu-admission.io/trust": "untrusted"}
        self.assertDenied("mutate", H.review(H.pod("n", "notebooks", gpus=1, labels=lowered)),
                          msg)
        self.assertDenied("validate", H.review(shared_pod("research-x")), msg)
        # control: a trusted tenant placed there by a rule is admitted
        placed = mutated(shared_pod("notebooks"))
        self.assertAllowed("validate", H.review(placed))

    def test_mutating_webhook_skipped(self):
        raw = H.pod("s", "notebooks", gpus=1, resource_name="nvidia.com/gpu.shared")
        self.assertDenied("validate", H.review(raw), "gpu-admission.io/tenant")
        # the tenant label alone is not the isolation: the anti-affinity must be there too
        labelled = copy.deepcopy(raw)
        labelled["metadata"]["labels"] = {"gpu-admission.io/tenant": "platform",
                                          "gpu-admission.io/pool": "t4-shared"}
        self.assertDenied("validate", H.review(labelled), "anti-affinity")
        # control: the same pod after the mutating webhook is admitted, and a second
        # mutate pass changes nothing (reinvocationPolicy: IfNeeded)
        placed = mutated(H.pod("s", "notebooks", gpus=1))
        self.assertEqual(placed["metadata"]["labels"]["gpu-admission.io/tenant"], "platform")
        self.assertAllowed("validate", H.review(placed))
        _, again = review("mutate", H.review(placed))
        self.assertFalse(again, "second mutate pass is not empty: %r" % again)

    def test_unplaced_plain_gpu_on_shared_pool(self):
        # issue 33 path 1, against the golden "cluster" set (unmatched: allow, and pool
        # t4-plain time-sliced with renameByDefault: false, so its replicas are plain
        # nvidia.com/gpu): a namespace of no tenant, no rule, the pool's nodes asked for
        cluster = os.path.join(H.REPO, "test", "golden", "policies", "cluster")
        squat = H.pod("sq", "team-x", gpus=1,
                      extra_spec={"nodeSelector": {"gpu-admission.io/pool": "t4-plain"}})
        for hook in ("mutate", "validate"):
            self.assertDenied(hook, H.review(squat), "no rule places this pod in shared pool "
                              "t4-plain", "asks for that pool's nodes", policies=cluster)
        # without the nodeSelector: the mutating webhook keeps it off all three shared pools,
        # the result passes validation, a second pass changes nothing
        plain = H.pod("p", "team-x", gpus=1)
        self.assertDenied("validate", H.review(plain), "shared pool t4-shared",
                          "NotIn [time-slicing]", policies=cluster)
        kept = mutated(plain, cluster)
        terms = kept["spec"]["affinity"]["nodeAffinity"][
            "requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"]
        self.assertEqual(terms, [{"matchExpressions": [
            {"key": "nvidia.com/gpu.sharing-strategy", "operator": "NotIn",
             "values": ["time-slicing", "mps"]},
            {"key": "gpu-admission.io/pool", "operator": "NotIn", "values": ["t4-plain"]}]}])
        self.assertAllowed("validate", H.review(kept), policies=cluster)
        _, again = review("mutate", H.review(kept), cluster)
        self.assertFalse(again, "second mutate pass is not empty: %r" % again)
        # the attacker ORs a term of its own in: still refused by the validating webhook
        ored = copy.deepcopy(kept)
        ored["spec"]["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"][
            "nodeSelectorTerms"].append({"matchExpressions": [
                {"key": "kubernetes.io/os", "operator": "In", "values": ["linux"]}]})
        self.assertDenied("validate", H.review(ored), "lets it land on that pool's nodes",
                          policies=cluster)
        # a placed pod too: the shipped training rule's pod is kept off t4-shared
        train = mutated(H.pod("t", "ml-platform", gpus=2))
        exprs = train["spec"]["affinity"]["nodeAffinity"][
            "requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"][0][
            "matchExpressions"]
        self.assertIn({"key": "nvidia.com/gpu.sharing-strategy", "operator": "NotIn",
                       "values": ["time-slicing"]}, exprs)
        self.assertAllowed("validate", H.review(train))

    def test_imex_channel_other_tenant(self):
        # issue 30: a ComputeDomain channel claim whose opaque config names a domainID (any
        # namespace's ComputeDomain UID); the webhook reads no ComputeDomain, so an untrusted
        # tenant's is refused by both hooks, a trusted tenant's (the controller's own
        # template in a training namespace) passes untouched
        chan = claim("research-x",
                     {"deviceClassName": "compute-domain-default-channel.nvidia.com"})
        chan["spec"]["devices"]["config"] = [{"requests": ["gpu"], "opaque": {
            "driver": "compute-domain.nvidia.com", "parameters": {
                "apiVersion": "resource.nvidia.com/v1beta1",
                "kind": "ComputeDomainChannelConfig",
                "domainID": "5b7c1f0e-8f3a-4a4e-9d7c-2f1e0a9b3c4d"}}}]
        for hook in ("mutate", "validate"):
            self.assertDenied(hook, claim_review(chan),
                              "compute-domain-default-channel.nvidia.com", "does not know")
        own = copy.deepcopy(chan)
        own["metadata"]["namespace"] = "ml-platform"
        _, patch = self.assertAllowed("mutate", claim_review(own))
        self.assertFalse(patch, "a trusted channel claim was changed: %r" % patch)
        self.assertAllowed("validate", claim_review(own))

    def test_claims_isolation_by_default(self):
        golden = os.path.join(H.REPO, "test", "golden", "policies")
        dra, cluster = os.path.join(golden, "dra"), os.path.join(golden, "cluster")
        # issue 33 path 2 (golden "dra" set, unmatched: allow): an unplaced claim selecting
        # the multi-allocatable L4s itself, with a capacity share, is refused by both hooks
        l4 = "device.attributes['gpu.nvidia.com'].productName == 'NVIDIA L4'"
        share = claim("web", {"deviceClassName": "gpu.nvidia.com",
                              "selectors": [{"cel": {"expression": l4}}],
                              "capacity": {"requests": {"memory": "4Gi"}}})
        for hook in ("mutate", "validate"):
            self.assertDenied(hook, claim_review(share), "selects the devices of pool "
                              "l4-shares", policies=dra)
        # without its own selector: mutate adds the exclusions, the result validates, a
        # second pass changes nothing; validated alone it is refused
        plain = claim("web", {"deviceClassName": "gpu.nvidia.com",
                              "capacity": {"requests": {"memory": "4Gi"}}})
        self.assertDenied("validate", claim_review(plain), "may be allocated a device of "
                          "pool l4-shares", policies=dra)
        resp, patch = self.assertAllowed("mutate", claim_review(plain), policies=dra)
        kept = H.apply_patch(plain, patch or [])
        sels = [x["cel"]["expression"] for x in
                kept["spec"]["devices"]["requests"][0]["exactly"]["selectors"]]
        self.assertEqual(sels, ["!(%s)" % l4, "!(device.attributes['gpu.nvidia.com']"
                                ".productName == 'Tesla T4')"])
        self.assertAllowed("validate", claim_review(kept), policies=dra)
        _, again = review("mutate", claim_review(kept), dra)
        self.assertFalse(again, "second mutate pass is not empty: %r" % again)
        # issue 33 path 7: NVIDIA's VFIO class from an untrusted tenant (shipped set); the
        # trusted tenant's is not judged a GPU claim
        vfio = claim("research-x", {"deviceClassName": "vfio.gpu.nvidia.com"})
        for hook in ("mutate", "validate"):
            self.assertDenied(hook, claim_review(vfio), "vfio.gpu.nvidia.com",
                              "does not know")
        self.assertAllowed("validate", claim_review(claim("ml-platform", {
            "deviceClassName": "vfio.gpu.nvidia.com"})))
        # no spec.dra at all (golden "cluster" set): adminAccess and allocationMode All are
        # still refused to a trusted tenant without DRA rights
        for req, words in (({"deviceClassName": "gpu.nvidia.com", "adminAccess": True},
                            "asks adminAccess"),
                           ({"deviceClassName": "gpu.nvidia.com", "allocationMode": "All"},
                            "asks allocationMode All")):
            for hook in ("mutate", "validate"):
                self.assertDenied(hook, claim_review(claim("ml-platform", req)), words,
                                  "tenant platform may not", policies=cluster)
        self.assertAllowed("validate", claim_review(claim("ml-platform", {
            "deviceClassName": "gpu.nvidia.com"})), policies=cluster)

    def test_claim_config_fits_placed_device(self):
        """Issue 30 item 3: a claim is never rewritten into one NVIDIA's driver refuses (an
        opaque config of another device type than the placed one), and a config the webhook
        translates smuggles no sharing past the multi-allocatable rules."""
        golden = os.path.join(H.REPO, "test", "golden", "policies")
        dra = os.path.join(golden, "dra")

        def with_config(c, params, requests=("gpu",)):
            c = copy.deepcopy(c)
            p = dict({"apiVersion": "resource.nvidia.com/v1beta1"}, **params)
            c["spec"]["devices"]["config"] = [{"requests": list(requests), "opaque": {
                "driver": "gpu.nvidia.com", "parameters": p}}]
            return c

        def config_of(c):
            return c["spec"]["devices"]["config"][0]["opaque"]["parameters"]

        # the issue's claim: placed on MIG devices, its GpuConfig becomes a MigDeviceConfig
        # (TimeSlicing kept, the interval MIG devices do not take removed); the result
        # validates and mutates to nothing
        ts = with_config(claim("inference-a", {"deviceClassName": "gpu.nvidia.com"}),
                         {"kind": "GpuConfig", "sharing": {"strategy": "TimeSlicing",
                                                           "timeSlicingConfig": {
                                                               "interval": "Default"}}})
        self.assertAllowed("validate", claim_review(ts), policies=dra)  # full GPUs as written
        _, patch = self.assertAllowed("mutate", claim_review(ts), policies=dra)
        placed = H.apply_patch(ts, patch or [])
        self.assertEqual(placed["spec"]["devices"]["requests"][0]["exactly"]["deviceClassName"],
                         "mig.nvidia.com")
        self.assertEqual(config_of(placed), {"apiVersion": "resource.nvidia.com/v1beta1",
                                             "kind": "MigDeviceConfig",
                                             "sharing": {"strategy": "TimeSlicing"}})
        self.assertAllowed("validate", claim_review(placed), policies=dra)
        _, again = review("mutate", claim_review(placed), dra)
        self.assertFalse(again, "second mutate pass is not empty: %r" % again)
        # an interval cannot hold on a MIG device: refused, not translated or kept
        long_ts = copy.deepcopy(ts)
        config_of(long_ts)["sharing"]["timeSlicingConfig"]["interval"] = "Long"
        self.assertDenied("mutate", claim_review(long_ts), "refuses a GpuConfig for a MIG "
                          "device", "interval Long", policies=dra)
        # validated alone, a GpuConfig naming a mig.nvidia.com request is what the driver
        # refuses: denied with the kind to write
        own = copy.deepcopy(ts)
        own["spec"]["devices"]["requests"][0]["exactly"]["deviceClassName"] = "mig.nvidia.com"
        self.assertDenied("validate", claim_review(own), "refuses a GpuConfig for a MIG device",
                          "write kind MigDeviceConfig", policies=dra)

        # the attack: an untrusted tenant on multi-allocatable MIG devices that admit
        # untrusted claims asks MPS through a GpuConfig the webhook would translate
        with tempfile.TemporaryDirectory() as d:
            for f in sorted(os.listdir(dra)):
                with open(os.path.join(dra, f), "rb") as src, open(os.path.join(d, f),
                                                                   "wb") as dst:
                    dst.write(src.read())
            with open(os.path.join(golden, "dra-modes", "config-pools.yaml"), "rb") as src, \
                    open(os.path.join(d, "30-config-pools.yaml"), "wb") as dst:
                dst.write(src.read())
            base = claim("shared-mig-a", {"deviceClassName": "gpu.nvidia.com"})
            mps = with_config(base, {"kind": "GpuConfig", "sharing": {
                "strategy": "MPS", "mpsConfig": {"defaultActiveThreadPercentage": 100}}})
            for hook in ("mutate", "validate"):
                self.assertDenied(hook, claim_review(mps), "asks MPS sharing",
                                  "pool a30-mig-shared", policies=d)
            # the form the translation would write is refused too
            smuggled = with_config(base, {"kind": "MigDeviceConfig", "sharing": {
                "strategy": "MPS", "mpsConfig": {"defaultActiveThreadPercentage": 100}}})
            smuggled["spec"]["devices"]["requests"][0]["exactly"] = {
                "deviceClassName": "mig.nvidia.com",
                "selectors": [{"cel": {"expression": "device.attributes['gpu.nvidia.com']"
                                                     ".productName == 'NVIDIA A30'"}},
                              {"cel": {"expression": "device.attributes['gpu.nvidia.com']"
                                                     ".profile == '1g.6gb'"}}]}
            self.assertDenied("validate", claim_review(smuggled), "asks MPS sharing",
                              policies=d)
            # control: the same claim with no sharing is placed, translated, and validates
            plain = with_config(base, {"kind": "GpuConfig"})
            _, patch = self.assertAllowed("mutate", claim_review(plain), policies=d)
            placed = H.apply_patch(plain, patch or [])
            self.assertEqual(config_of(placed)["kind"], "MigDeviceConfig")
            self.assertNotIn("sharing", config_of(placed))
            self.assertAllowed("validate", claim_review(placed), policies=d)
    def test_claim_update_judged_as_create(self):
        """Issue 30 item 4: the mutating hook places claims on UPDATE too (a re-applied
        manifest). Shipped set: tenant platform's 2-GPU claim is placed in h100-train (class
        gpu.nvidia.com, the H100 selector; the multi-allocatable t4-shared pool shares the
        class). The re-sent manifest is placed back to the stored spec; an UPDATE cannot strip
        the placement (validate alone refuses the request that could reach t4-shared's devices)
        nor add adminAccess (both hooks), as a CREATE could not."""
        orig = claim("ml-platform", {"deviceClassName": "gpu.nvidia.com", "count": 2})
        _, patch = self.assertAllowed("mutate", claim_review(orig))
        stored = H.apply_patch(orig, patch or [])
        ex = stored["spec"]["devices"]["requests"][0]["exactly"]
        self.assertEqual(ex["selectors"], [{"cel": {"expression": "device.attributes"
                                                    "['gpu.nvidia.com'].productName == "
                                                    "'NVIDIA H100 80GB HBM3'"}}])
        # the re-sent manifest (kubectl apply): placed again, exactly the stored spec
        resent = copy.deepcopy(orig)
        resent["metadata"]["annotations"] = stored["metadata"]["annotations"]
        _, patch = self.assertAllowed("mutate", claim_update(resent, stored))
        self.assertEqual(H.apply_patch(resent, patch or [])["spec"], stored["spec"])
        resp, patch = review("mutate", claim_update(stored, stored))
        self.assertTrue(resp["allowed"])
        self.assertFalse(patch, "the stored claim needs no change: %r" % patch)
        # stripping the placement: mutate puts it back; validate alone refuses it
        stripped = copy.deepcopy(stored)
        del stripped["spec"]["devices"]["requests"][0]["exactly"]["selectors"]
        _, patch = self.assertAllowed("mutate", claim_update(stripped, stored))
        self.assertEqual(H.apply_patch(stripped, patch or [])["spec"]["devices"]["requests"][0]
                         ["exactly"]["selectors"][0], ex["selectors"][0])
        self.assertDenied("validate", claim_update(stripped, stored), "t4-shared")
        # adding adminAccess: refused by both hooks (platform has no dra.adminAccess)
        admin = copy.deepcopy(stored)
        admin["spec"]["devices"]["requests"][0]["exactly"]["adminAccess"] = True
        for hook in ("mutate", "validate"):
            self.assertDenied(hook, claim_update(admin, stored), "asks adminAccess",
                              "tenant platform may not")

    def test_node_name_on_shared_pool(self):
        placed = mutated(H.pod("s", "notebooks", gpus=1))
        self.assertAllowed("validate", H.review(placed))
        pinned = copy.deepcopy(placed)
        pinned["spec"]["nodeName"] = "gpu-node-7"
        self.assertDenied("validate", H.review(pinned), "nodeName")

    def test_pool_label_forged(self):
        forged = {"gpu-admission.io/pool": "t4-shared"}
        for hook in ("validate", "mutate"):
            self.assertDenied(hook, H.review(H.pod("f", "research-x", labels=forged)),
                              "gpu-admission.io/pool", "t4-shared")
            # a training pod placed on h100-train that claims the shared pool
            self.assertDenied(hook, H.review(H.pod("f", "ml-platform", gpus=4,
                                                   labels=forged)),
                              "gpu-admission.io/pool", "t4-shared")
        # control: the label the webhook itself set on a pod it placed there
        placed = mutated(H.pod("s", "notebooks", gpus=1))
        self.assertEqual(placed["metadata"]["labels"]["gpu-admission.io/pool"], "t4-shared")
        self.assertAllowed("validate", H.review(placed))

    def test_update_removes_isolation_labels(self):
        placed = mutated(H.pod("s", "notebooks", gpus=1))
        for label in ("gpu-admission.io/tenant", "gpu-admission.io/pool"):
            new = copy.deepcopy(placed)
            del new["metadata"]["labels"][label]
            self.assertDenied("validate", H.review(new, operation="UPDATE", old_object=placed),
                              label)
        benign = copy.deepcopy(placed)
        benign["metadata"]["labels"]["app"] = "renamed"
        self.assertAllowed("validate", H.review(benign, operation="UPDATE",
                                                old_object=placed))

    # ---- GPUs the count must see (issue 33 paths 4 and 6)

    def test_sidecar_gpus_counted(self):
        # one container and three native sidecars asking a GPU each, dressed as the shipped
        # inference-small pod (gpus max 1): the scheduler counts 4 GPUs, and so must we
        def gpu(name, sidecar):
            c = {"name": name, "image": "i",
                 "resources": {"limits": {"nvidia.com/gpu": "1"},
                               "requests": {"nvidia.com/gpu": "1"}}}
            if sidecar:
                c["restartPolicy"] = "Always"
            return c
        pod = H.pod("side", "inference-a", labels={"app.kubernetes.io/component": "inference"},
                    annotations={"gpu-admission.io/gpu-memory": "8Gi"},
                    containers=[gpu("main", False)],
                    extra_spec={"initContainers": [gpu("s%d" % i, True) for i in range(3)]})
        resp, patch = self.assertAllowed("mutate", H.review(pod))
        placed = H.apply_patch(pod, patch or [])
        ann = placed["metadata"]["annotations"]
        self.assertEqual(ann.get("gpu-admission.io/rule"), "training", ann)
        # no container got a MIG slice; the island size says 4 GPUs
        self.assertNotIn("mig-", json.dumps(placed["spec"]))
        self.assertIn('"Gt", "values": ["3"]', json.dumps(placed["spec"]))
        self.assertAllowed("validate", H.review(placed))
        # the mutating webhook skipped: the four MIG slices the old count gave are refused
        slices = copy.deepcopy(pod)
        for c in slices["spec"]["containers"] + slices["spec"]["initContainers"]:
            for k in ("limits", "requests"):
                c["resources"][k] = {"nvidia.com/mig-1g.10gb": "1"}
        self.assertDenied("validate", H.review(slices), "nvidia.com/mig-1g.10gb",
                          "pool h100-train")
        # control: without the sidecars it is the small inference pod it claims to be
        small = copy.deepcopy(pod)
        del small["spec"]["initContainers"]
        resp, patch = self.assertAllowed("mutate", H.review(small))
        self.assertIn("nvidia.com/mig-1g.10gb", json.dumps(H.apply_patch(small, patch or [])))

    def test_dra_extended_resource_judged(self):
        # a GPU through a claim the scheduler makes (KEP-5004): the pod is where it is judged
        dra = "deviceclass.resource.kubernetes.io/gpu.nvidia.com"
        lowered = {"gpu-admission.io/trust": "untrusted"}
        rv = H.review(H.pod("d", "notebooks", gpus=1, resource_name=dra, labels=lowered))
        for hook in ("mutate", "validate"):
            self.assertDenied(hook, rv, "untrusted workloads may not share a time-sliced GPU")
        # a trusted notebook is placed on the shared pool like a nvidia.com/gpu pod
        placed = mutated(H.pod("d", "notebooks", gpus=1, resource_name=dra))
        self.assertEqual(placed["metadata"]["labels"].get("gpu-admission.io/tenant"), "platform")
        self.assertIn("nvidia.com/gpu.shared", placed["spec"]["containers"][0]["resources"]
                      ["limits"])
        self.assertAllowed("validate", H.review(placed))
        # skipped mutating webhook: no isolation, refused
        self.assertDenied("validate", H.review(H.pod("d", "notebooks", gpus=1,
                                                     resource_name=dra)),
                          "lacks the tenant isolation")
        # a DeviceClass the policy does not know: no GPU pod, but nothing would judge the
        # devices the scheduler's claim gets, so an untrusted pod is refused; a trusted one not
        unknown = "deviceclass.resource.kubernetes.io/nic.example"
        for hook in ("mutate", "validate"):
            self.assertDenied(hook, H.review(H.pod("n", "notebooks", gpus=1,
                                                   resource_name=unknown, labels=lowered)),
                              "DeviceClass nic.example, which the policy does not know")
        resp, patch = self.assertAllowed("mutate", H.review(H.pod("n", "notebooks", gpus=1,
                                                                  resource_name=unknown)))
        self.assertIsNone(patch)


    # ---- paths to a GPU beside resources (issue 33): hostPath, toolkit env, envFrom

    def assertDeniedBoth(self, rv, *words, policies=None):
        """Denied as the API server runs the webhooks: by the mutating one, and by the
        validating one alone (the mutating webhook skipped)."""
        self.assertDenied("mutate", rv, *words, policies=policies)
        self.assertDenied("validate", rv, *words, policies=policies)

    def assertAdmittedBoth(self, pod, policies=None):
        """Admitted by mutate, the patch applied, then by validate; a pod the mutating webhook
        leaves alone also by validate alone (a placed one needs its patch by design)."""
        placed = mutated(pod, policies)
        self.assertAllowed("validate", H.review(placed), policies=policies)
        if placed == pod:
            self.assertAllowed("validate", H.review(pod), policies=policies)
        return placed

    def hostpath_pod(self, ns, path, mount="/host", gpus=0):
        p = H.pod("h", ns, gpus=gpus)
        p["spec"]["containers"][0]["volumeMounts"] = [{"name": "v", "mountPath": mount}]
        p["spec"]["volumes"] = [{"name": "v", "hostPath": {"path": path}}]
        return p

    def test_hostpath_volume_mounts_request(self):
        # the issue's attack: /dev/null at /var/run/nvidia-container-devices/all is a request
        # for every GPU to a toolkit in volume-mounts mode; no GPU resource needed
        for gpus in (0, 1):
            pod = self.hostpath_pod("research-x", "/dev/null",
                                    "/var/run/nvidia-container-devices/all", gpus=gpus)
            self.assertDeniedBoth(H.review(pod), "hostPath volume v (/dev/null)", "reaches /dev")

    def test_hostpath_spellings(self):
        reached = {
            "/dev/nvidia0": "/dev", "/dev/": "/dev", "//dev//nvidia0": "/dev",
            "/var/run/../dev": "/dev", "/tmp/../dev/nvidiactl": "/dev", "dev/nvidia0": "/dev",
            "/": "/dev", "/var/run/nvidia-container-devices": "/run/nvidia-container-devices",
            "/run/nvidia/mps": "/run/nvidia", "/var/run/containerd/containerd.sock":
            "/run/containerd", "/run/containerd": "/run/containerd",
            "/var/run/crio/crio.sock": "/run/crio", "/var/run/docker.sock": "/run/docker.sock",
            "/var/run/cri-dockerd.sock": "/run/cri-dockerd.sock", "/run": "/run/",
            "/var/lib/kubelet/device-plugins": "/var/lib/kubelet/device-plugins",
            "/proc": "/proc",
        }
        for path, where in reached.items():
            with self.subTest(path=path):
                rv = H.review(self.hostpath_pod("research-x", path))
                self.assertDenied("validate", rv, "reaches " + where)
        # trusted namespaces keep their hostPaths; an untrusted GPU pod with a harmless one is
        # placed and admitted after the patch
        self.assertAdmittedBoth(self.hostpath_pod("ml-platform", "/dev"))
        placed = self.assertAdmittedBoth(self.hostpath_pod("research-x", "/data/sets", gpus=2))
        self.assertEqual(placed["metadata"]["annotations"]["gpu-admission.io/rule"], "training")
        for path in ("/devices", "/run/nvidia-persistenced", "/var/run/secrets", "/var/log"):
            self.assertAllowed("validate", H.review(self.hostpath_pod("research-x", path)))

    def test_toolkit_env_names(self):
        denied = [("NVIDIA_IMEX_CHANNELS", "0"), ("NVIDIA_MIG_MONITOR_DEVICES", "all"),
                  ("CUDA_VERSION", "11.0.3"), ("NVIDIA_REQUIRE_CUDA", ""),
                  ("NVIDIA_REQUIRE_JETPACK", "csv-mounts=all"), ("DOCKER_RESOURCE_GPU", "0"),
                  ("NVIDIA_GDS", "enabled"), ("NVIDIA_MOFED", "enabled"),
                  ("NVIDIA_GDRCOPY", "enabled"), ("NVIDIA_NVSWITCH", "enabled"),
                  ("NVIDIA_NVSWITCH", "$(MODE)")]
        for name, value in denied:
            with self.subTest(name=name, value=value):
                env = [{"name": "MODE", "value": "enabled"}, {"name": name, "value": value}]
                self.assertDeniedBoth(H.review(env_pod("research-x", env)), name)
                # trusted: allowed
                self.assertAllowed("validate", H.review(env_pod("ml-platform", env)))
        harmless = [("NVIDIA_IMEX_CHANNELS", "void"), ("NVIDIA_GDS", "disabled"),
                    ("NVIDIA_REQUIRE_CUDA", "cuda>=12.0"), ("NVIDIA_DRIVER_CAPABILITIES", "all"),
                    ("NVIDIA_DISABLE_REQUIRE", "true"), ("NVIDIA_REQUIRE_ARCH", "x86_64")]
        for name, value in harmless:
            with self.subTest(name=name, value=value):
                self.assertAdmittedBoth(env_pod("research-x", [{"name": name, "value": value}]))

    def test_env_from(self):
        def from_pod(ns, src, gpus=1):
            p = H.pod("f", ns, gpus=gpus)
            p["spec"]["containers"][0]["envFrom"] = [src]
            return p
        self.assertDeniedBoth(H.review(from_pod("research-x", {"configMapRef": {"name": "c"}})),
                              "takes its environment from ConfigMap c",
                              "without a prefix")
        self.assertDeniedBoth(H.review(from_pod("research-x", {
            "prefix": "NVIDIA_", "secretRef": {"name": "s"}})), "with prefix NVIDIA_")
        self.assertDeniedBoth(H.review(from_pod("research-x", {
            "prefix": "CUDA_", "configMapRef": {"name": "c"}})), "could set CUDA_VERSION")
        # the admitted variants ask no GPU: envFrom is judged on every pod, and the shipped
        # set (unmatched: deny) places no 1-GPU pod of these namespaces
        self.assertAdmittedBoth(from_pod("research-x", {"prefix": "APP_",
                                                        "configMapRef": {"name": "c"}}, gpus=0))
        self.assertAdmittedBoth(from_pod("ml-platform", {"configMapRef": {"name": "c"}}, gpus=0))
        # kubectl debug: an ephemeral container added later with envFrom (no prefix)
        old = H.pod("a", "research-x", containers=[{"name": "main", "image": "i"}])
        new = copy.deepcopy(old)
        new["spec"]["ephemeralContainers"] = [{"name": "dbg", "image": "busybox", "envFrom": [
            {"secretRef": {"name": "s"}}]}]
        rv = H.review(new, operation="UPDATE", old_object=old)
        rv["request"]["subResource"] = "ephemeralcontainers"
        self.assertDenied("validate", rv, "container dbg", "takes its environment from Secret s")

    # ---- the scheduler of a pod on a shared pool (issue 33)

    def test_shared_pool_other_scheduler(self):
        other = {"schedulerName": "my-scheduler"}
        pod = H.pod("s", "notebooks", gpus=1, extra_spec=other)
        self.assertDenied("mutate", H.review(pod), "schedulerName my-scheduler",
                          "spec.isolation.schedulers")
        # validate only: the pod as the mutating webhook would have placed it, scheduler kept
        placed = mutated(H.pod("s", "notebooks", gpus=1))
        placed["spec"]["schedulerName"] = "my-scheduler"
        self.assertDenied("validate", H.review(placed), "schedulerName my-scheduler")
        # the default scheduler, named or not, is fine
        self.assertAdmittedBoth(H.pod("s", "notebooks", gpus=1,
                                      extra_spec={"schedulerName": "default-scheduler"}))
        # a pod on no shared pool may name any scheduler
        self.assertAdmittedBoth(H.pod("t", "ml-platform", gpus=4, extra_spec=other))
        # listed in spec.isolation.schedulers: admitted through both webhooks
        with tempfile.TemporaryDirectory() as d:
            for f in os.listdir(POLICIES):
                if f.endswith((".yaml", ".yml")):
                    with open(os.path.join(POLICIES, f)) as src, \
                            open(os.path.join(d, f), "w") as dst:
                        dst.write(src.read())
            with open(os.path.join(d, "90-isolation.yaml"), "w") as f:
                f.write("apiVersion: gpu-admission.io/v1alpha1\nkind: GPUPolicy\n"
                        "metadata: {name: isolation}\n"
                        "spec:\n  isolation:\n    schedulers: [my-scheduler]\n")
            placed = self.assertAdmittedBoth(pod, policies=d)
            self.assertEqual(placed["spec"]["schedulerName"], "my-scheduler")
            self.assertDenied("mutate", H.review(H.pod("s", "notebooks", gpus=1, extra_spec={
                "schedulerName": "volcano"})), "schedulerName volcano", policies=d)


def main():
    global BIN, POLICIES
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin")
    ap.add_argument("--policies", default=os.path.join(H.REPO, "policies"))
    a, rest = ap.parse_known_args()
    BIN = H.find_bin(a.bin)
    POLICIES = a.policies
    H.policy_revision(BIN, POLICIES)  # the shipped set must load
    prog = unittest.main(argv=[sys.argv[0], "-v"] + rest, exit=False)
    return 0 if prog.result.wasSuccessful() else 1


if __name__ == "__main__":
    sys.exit(main())
