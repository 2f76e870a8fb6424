"""e2e_dra.py - the DRA suite of the end-to-end test (`run_e2e.py --suite dra`, ctest e2e/dra;
issue 24): ResourceClaims and ResourceClaimTemplates placed and judged by the chart's
mutate-claims / validate-claims.gpu-admission.io entries, against the real kube-apiserver
v1.20.2.

1.20 does not serve resource.k8s.io (DRA is 1.34+), so the suite stands the API in with two
CRDs of that group, resourceclaimtemplates.resource.k8s.io and resourceclaims.resource.k8s.io
(served as v1, the storage version, and v1beta1; the annotation api-approved.kubernetes.io
that a *.k8s.io CRD needs; a schema that keeps every field as sent). `kubectl apply` of
NVIDIA's demo specs (test/fixtures/nvidia-k8s-dra-driver-gpu/) then goes through the webhook
with the real group, version and kind. The chart is rendered with webhook.dra.enabled=true
(auto is off for a 1.20 cluster) and the server serves policies-dra/ alone.

Assertions are on what kubectl printed (the API server's answer, warnings included) and on what
the API server stored (`kubectl get -o json`). What the stand-in cannot show is in
test/e2e/README.md.

Must never: pass a refusal check on a refusal from elsewhere (each names the entry and the full
message), or a "placed" check on an object the webhook did not change (each compares with what
was sent).
"""

import json
import os
import re

from run_e2e import HERE, dig, run, wait_for

SRC_FIX = os.path.join(os.path.dirname(os.path.dirname(HERE)), "test", "fixtures",
                       "nvidia-k8s-dra-driver-gpu")
MUT, VAL = "mutate-claims.gpu-admission.io", "validate-claims.gpu-admission.io"
GROUP = "resource.k8s.io"
API_APPROVED = "unapproved, e2e stand-in for the built-in DRA API"
POOL_SEL = "device.attributes['gpu.nvidia.com'].productName == 'NVIDIA A100-SXM4-80GB'"
H100_SEL = "device.attributes['gpu.nvidia.com'].productName == 'NVIDIA H100 80GB HBM3'"
PROFILE_SEL = "device.attributes['gpu.nvidia.com'].profile == '1g.10gb'"
PLACED_WARNING = ("Warning: requests[0]: gpu.nvidia.com -> mig.nvidia.com, profile 1g.10gb, "
                  "+1 selector of pool a100-mig (rule demo-mig)")
ADMIN_DENIAL = ("requests[0] asks adminAccess, which reaches devices other claims (of any "
                "namespace) are using, and tenant research may not; remove adminAccess or ask "
                "the platform team for the tenant's dra.adminAccess")
NS_UNTRUSTED = "research-e2e"   # policies-dra: tenant research, untrusted, rule whole-gpus
NS_PLATFORM = "ml-platform"     # tenant platform: dra.adminAccess allowed


def crd(plural, kind):
    schema = {"openAPIV3Schema": {"type": "object",
                                  "x-kubernetes-preserve-unknown-fields": True}}
    return {
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "%s.%s" % (plural, GROUP),
                     "annotations": {"api-approved.kubernetes.io": API_APPROVED}},
        "spec": {
            "group": GROUP, "scope": "Namespaced",
            "names": {"plural": plural, "singular": plural[:-1], "kind": kind,
                      "listKind": kind + "List"},
            # conversion None (the default): a v1beta1 object is stored and sent as v1 with its
            # fields as written; the built-in API converts the layout (sc_v1beta1_equivalent)
            "versions": [{"name": "v1", "served": True, "storage": True, "schema": schema},
                         {"name": "v1beta1", "served": True, "storage": False,
                          "schema": schema}],
        },
    }


CRDS = [crd("resourceclaimtemplates", "ResourceClaimTemplate"),
        crd("resourceclaims", "ResourceClaim")]


def configure(c):
    """Before the webhook starts: the DRA policy alone, and the chart's claim entries forced on."""
    c.policy_dirs = [os.path.join(HERE, "policies-dra")]
    c.helm_args += ["--set", "webhook.dra.enabled=true"]


def setup(c):
    """After the webhooks are registered: the stand-in CRDs (served) and the namespaces."""
    for obj in CRDS:
        c.kubectl("apply", "-f", "-", stdin=json.dumps(obj))

    def served():
        for obj in CRDS:
            got = c.get("crd", obj["metadata"]["name"])
            est = [x for x in dig(got, "status", "conditions", default=[]) or []
                   if x.get("type") == "Established" and x.get("status") == "True"]
            if not est:
                return False
        return all(c.kubectl("get", "%s.%s" % (o["spec"]["names"]["plural"], GROUP), "-A",
                             check=False).returncode == 0 for o in CRDS)
    wait_for("the resource.k8s.io stand-in CRDs established and served", served, 60, 0.5)
    for ns in (NS_UNTRUSTED, NS_PLATFORM):
        c.namespace(ns)


# --------------------------------------------------------------------------------------------
# objects


def fixture_docs(name, kinds, ns=None):
    """The YAML documents of an NVIDIA demo spec whose top-level kind is in kinds, as text
    (the harness has no YAML parser: kubectl reads the YAML). ns renames the spec's namespace
    (its Namespace object and every metadata.namespace). The Pods and Deployments are left out:
    1.20's PodSpec has no resourceClaims, so kubectl's schema check refuses them."""
    with open(os.path.join(SRC_FIX, name)) as f:
        text = f.read()
    docs = []
    for d in re.split(r"(?m)^---\s*$", text):
        m = re.search(r"(?m)^kind:\s*(\S+)\s*$", d)
        if not m or m.group(1) not in kinds:
            continue
        if ns:
            d = re.sub(r"(?m)^(\s+namespace:\s*)\S+\s*$", r"\g<1>" + ns, d)
            if m.group(1) == "Namespace":
                d = re.sub(r"(?m)^(\s+name:\s*)\S+\s*$", r"\g<1>" + ns, d)
        docs.append(d.strip("\n"))
    if not docs:
        raise RuntimeError("%s has no document of kind %s" % (name, kinds))
    return "---\n" + "\n---\n".join(docs) + "\n"


def claim(name, ns, exactly, annotations=None):
    md = {"name": name, "namespace": ns}
    if annotations:
        md["annotations"] = annotations
    return {"apiVersion": GROUP + "/v1", "kind": "ResourceClaim", "metadata": md,
            "spec": {"devices": {"requests": [{"name": "gpu", "exactly": exactly}]}}}


def apply(c, text, *extra):
    return c.kubectl("apply", "-f", "-", *extra, stdin=text, check=False)


def last_line(stderr):
    lines = [ln for ln in stderr.strip().splitlines() if ln.strip()]
    return lines[-1] if lines else ""


def warnings(stderr):
    return [ln for ln in stderr.splitlines() if ln.startswith("Warning: ") and
            "version difference" not in ln]


def request0(obj, template):
    spec = dig(obj, "spec", "spec") if template else dig(obj, "spec")
    return dig(spec, "devices", "requests", 0, default={}) or {}


def selectors(exactly):
    return [dig(s, "cel", "expression") for s in exactly.get("selectors") or []]


def served_revision(c):
    """The revision `gpu-admission check` prints for the directory the server serves."""
    out = run([c.args.gpu_admission, "check", c.webhook_policies]).stdout
    m = re.search(r"(?m)^revision: ([0-9a-f]{64})$", out)
    return m.group(1) if m else None


def denied(hook, message):
    return ('Error from server (Forbidden): error when creating "STDIN": admission webhook '
            '"%s" denied the request: %s' % (hook, message))


# --------------------------------------------------------------------------------------------
# scenarios


def sc_chart_entries(c, ck):
    """The stand-in CRDs and the chart's claim entries, as the API server stored them."""
    s = "dra-chart-entries"
    for obj in CRDS:
        got = c.get("crd", obj["metadata"]["name"]) or {}
        ck.expect("%s/crd-%s" % (s, obj["spec"]["names"]["plural"]),
                  dig(got, "metadata", "annotations", "api-approved.kubernetes.io") == API_APPROVED
                  and [v["name"] for v in dig(got, "spec", "versions", default=[])] ==
                  ["v1", "v1beta1"], dig(got, "metadata", "annotations"))
    for kind, name, path, ops in (
            ("mutatingwebhookconfigurations", MUT, "/mutate", ["CREATE"]),
            ("validatingwebhookconfigurations", VAL, "/validate", ["CREATE", "UPDATE"])):
        items = json.loads(c.kubectl("get", kind, "-o", "json").stdout)["items"]
        hooks = [w for it in items for w in it.get("webhooks") or [] if w.get("name") == name]
        if not ck.expect("%s/%s-stored" % (s, name), len(hooks) == 1, items):
            continue
        w = hooks[0]
        ck.expect("%s/%s-rules" % (s, name), w.get("rules") == [{
            "apiGroups": [GROUP], "apiVersions": ["v1"], "operations": ops,
            "resources": ["resourceclaims", "resourceclaimtemplates"], "scope": "Namespaced"}],
            w.get("rules"))
        ck.expect("%s/%s-equivalent-url-ca" % (s, name),
                  w.get("matchPolicy") == "Equivalent" and
                  dig(w, "clientConfig", "url") == "https://127.0.0.1:%d%s" % (c.webhook_port,
                                                                             path) and
                  dig(w, "clientConfig", "caBundle") == c.ca_b64 and
                  w.get("failurePolicy") == "Fail" and w.get("sideEffects") == "None",
                  (w.get("matchPolicy"), w.get("clientConfig", {}).get("url"),
                   w.get("failurePolicy"), w.get("sideEffects")))


def sc_template_placed(c, ck):
    """NVIDIA's gpu-test1 ResourceClaimTemplate (generic gpu.nvidia.com) applied: stored with
    the pool's class, its selector and the MIG profile selector, the rule and policy
    annotations; kubectl shows the warning."""
    s = "dra-template-placed"
    text = fixture_docs("quickstart_v1_gpu-test1.yaml", ("Namespace", "ResourceClaimTemplate"))
    sent = request0({"spec": {"spec": {"devices": {"requests": [
        {"name": "gpu", "exactly": {"deviceClassName": "gpu.nvidia.com"}}]}}}}, True)
    r = apply(c, text)
    ck.expect(s + "/applied", r.returncode == 0 and
              "resourceclaimtemplate.resource.k8s.io/single-gpu created" in r.stdout,
              (r.stdout, r.stderr))
    ck.expect(s + "/warning", warnings(r.stderr) == [PLACED_WARNING], r.stderr)
    got = c.get("resourceclaimtemplates." + GROUP, "single-gpu", "gpu-test1") or {}
    req = request0(got, True)
    ex = req.get("exactly") or {}
    ck.expect(s + "/class-rewritten", ex.get("deviceClassName") == "mig.nvidia.com" and
              sent["exactly"]["deviceClassName"] == "gpu.nvidia.com", req)
    ck.expect(s + "/selectors-appended", selectors(ex) == [POOL_SEL, PROFILE_SEL], req)
    ck.expect(s + "/request-kept", req.get("name") == "gpu" and
              set(ex) == {"deviceClassName", "selectors"}, req)
    ann = dig(got, "metadata", "annotations", default={}) or {}
    rev = served_revision(c)
    ck.expect(s + "/annotations", ann.get("gpu-admission.io/rule") == "demo-mig" and
              rev is not None and ann.get("gpu-admission.io/policy") == rev, (ann, rev))


def sc_admin_access(c, ck):
    """adminAccess: an untrusted tenant's claim refused by the mutating entry word for word and
    not stored; the platform tenant's admitted and placed; the validating entry refuses an
    UPDATE adding it (the mutating one sees CREATE only)."""
    s = "dra-admin-access"
    admin = {"deviceClassName": "gpu.nvidia.com", "adminAccess": True}
    r = apply(c, json.dumps(claim("debug-all", NS_UNTRUSTED, admin)))
    ck.expect(s + "/untrusted-refused-word-for-word",
              r.returncode != 0 and last_line(r.stderr) == denied(MUT, ADMIN_DENIAL), r.stderr)
    ck.expect(s + "/untrusted-not-stored",
              c.get("resourceclaims." + GROUP, "debug-all", NS_UNTRUSTED) is None)
    r = apply(c, json.dumps(claim("debug-all", NS_PLATFORM, admin)))
    ck.expect(s + "/platform-admitted", r.returncode == 0, r.stderr)
    ex = request0(c.get("resourceclaims." + GROUP, "debug-all", NS_PLATFORM) or {}, False).get(
        "exactly") or {}
    # h100-train's class is gpu.nvidia.com itself: kept, its selector appended
    ck.expect(s + "/platform-placed", ex.get("adminAccess") is True and
              ex.get("deviceClassName") == "gpu.nvidia.com" and selectors(ex) == [H100_SEL], ex)
    # an admitted plain claim of the untrusted tenant, then an UPDATE asking adminAccess
    r = apply(c, json.dumps(claim("plain", NS_UNTRUSTED, {"deviceClassName": "gpu.nvidia.com"})))
    ck.expect(s + "/untrusted-plain-admitted", r.returncode == 0, r.stderr)
    r = c.kubectl("patch", "resourceclaims." + GROUP, "plain", "-n", NS_UNTRUSTED,
                  "--type=json", "-p", json.dumps([
                      {"op": "add", "path": "/spec/devices/requests/0/exactly/adminAccess",
                       "value": True}]), check=False)
    ck.expect(s + "/update-refused-by-validating-entry",
              r.returncode != 0 and last_line(r.stderr) ==
              'Error from server (Forbidden): admission webhook "%s" denied the request: %s' %
              (VAL, ADMIN_DENIAL), r.stderr)
    ex = request0(c.get("resourceclaims." + GROUP, "plain", NS_UNTRUSTED) or {}, False).get(
        "exactly") or {}
    ck.expect(s + "/update-not-stored", "adminAccess" not in ex and ex.get("deviceClassName")
              == "gpu.nvidia.com", ex)


def sc_dry_run(c, ck):
    """--dry-run=server: the template comes back placed exactly as the real apply stored it (and
    is not stored); the adminAccess refusal is the real apply's, word for word."""
    s = "dra-dry-run-server"
    ns = "gpu-test1-dry"
    c.namespace(ns)
    text = fixture_docs("quickstart_v1_gpu-test1.yaml", ("ResourceClaimTemplate",), ns=ns)
    r = apply(c, text, "--dry-run=server", "-o", "json")
    ck.expect(s + "/template-applied", r.returncode == 0, r.stderr)
    try:
        out = json.loads(r.stdout)
    except ValueError:
        out = {}
    real = c.get("resourceclaimtemplates." + GROUP, "single-gpu", "gpu-test1") or {}
    ck.expect(s + "/template-placed-as-real", dig(out, "spec") == dig(real, "spec") and
              (dig(out, "spec", "spec", "devices", "requests", 0, "exactly", "deviceClassName")
               == "mig.nvidia.com") and
              dig(out, "metadata", "annotations", "gpu-admission.io/rule") == "demo-mig",
              (dig(out, "spec"), dig(real, "spec")))
    ck.expect(s + "/template-warning", warnings(r.stderr) == [PLACED_WARNING], r.stderr)
    ck.expect(s + "/template-not-stored",
              c.get("resourceclaimtemplates." + GROUP, "single-gpu", ns) is None)
    admin = claim("debug-all", NS_UNTRUSTED, {"deviceClassName": "gpu.nvidia.com",
                                                "adminAccess": True})
    dry = apply(c, json.dumps(admin), "--dry-run=server")
    real = apply(c, json.dumps(admin))
    ck.expect(s + "/denial-word-for-word",
              dry.returncode != 0 and real.returncode != 0 and
              last_line(dry.stderr) == last_line(real.stderr) == denied(MUT, ADMIN_DENIAL),
              (dry.stderr, real.stderr))


def sc_scheduler_claim(c, ck):
    """A claim carrying resource.kubernetes.io/extended-resource-claim: "true" (as the scheduler
    makes for a DRA-served extended resource) is stored exactly as sent when kube-scheduler
    makes it (--as system:kube-scheduler; the group system:masters only gives the stand-in CRD
    the RBAC the real scheduler has on the built-in API): no class rewrite, no selector, no
    annotation, no warning. Anyone can write the annotation: the same claim from another user
    is placed like any claim, and an untrusted tenant's adminAccess claim marked that way is
    refused word for word (it would otherwise pass unjudged)."""
    s = "dra-scheduler-claim-untouched"
    ann = {"resource.kubernetes.io/extended-resource-claim": "true"}
    exactly = {"deviceClassName": "gpu.nvidia.com", "allocationMode": "ExactCount", "count": 1}
    sent = claim("pod1-extended-resources-x7k2p", "gpu-test1", exactly, ann)
    r = apply(c, json.dumps(sent), "--as", "system:kube-scheduler", "--as-group", "system:masters")
    ck.expect(s + "/admitted-no-warning", r.returncode == 0 and warnings(r.stderr) == [],
              r.stderr)
    got = c.get("resourceclaims." + GROUP, sent["metadata"]["name"], "gpu-test1") or {}
    ck.expect(s + "/spec-as-sent", dig(got, "spec") == sent["spec"], dig(got, "spec"))
    got_ann = dig(got, "metadata", "annotations", default={}) or {}
    ck.expect(s + "/no-annotations", not any(k.startswith("gpu-admission.io/") for k in got_ann),
              got_ann)
    forged = claim("pod1-extended-resources-forged", "gpu-test1", exactly, ann)
    r = apply(c, json.dumps(forged))
    ex = request0(c.get("resourceclaims." + GROUP, "pod1-extended-resources-forged", "gpu-test1")
                  or {}, False).get("exactly") or {}
    ck.expect(s + "/other-user-placed", r.returncode == 0 and
              ex.get("deviceClassName") == "mig.nvidia.com" and
              selectors(ex) == [POOL_SEL, PROFILE_SEL], (r.stderr, ex))
    admin = {"deviceClassName": "gpu.nvidia.com", "adminAccess": True, "allocationMode": "All"}
    r = apply(c, json.dumps(claim("debug-forged", NS_UNTRUSTED, admin, ann)))
    ck.expect(s + "/forged-admin-refused",
              r.returncode != 0 and ADMIN_DENIAL in last_line(r.stderr), r.stderr)
    ck.expect(s + "/forged-admin-not-stored",
              c.get("resourceclaims." + GROUP, "debug-forged", NS_UNTRUSTED) is None)


def sc_v1beta1_equivalent(c, ck):
    """NVIDIA's v1beta1 gpu-test1 template applied as resource.k8s.io/v1beta1: matchPolicy
    Equivalent sends it to the v1-only entry as v1. The stand-in's conversion (None) keeps the
    v1beta1 layout, which the engine rightly refuses as a v1 object; the built-in API converts
    the layout first (the engine's v1beta1 reader is proven by the golden tests)."""
    s = "dra-v1beta1-equivalent"
    ns = "gpu-test1-beta"
    text = fixture_docs("quickstart_v1beta1_gpu-test1.yaml", ("Namespace",
                                                               "ResourceClaimTemplate"), ns=ns)
    r = apply(c, text)
    want = denied(MUT, 'invalid ResourceClaimTemplate: spec.spec.devices.requests[0]: unknown '
                       'field "deviceClassName" (the v1 layout puts a request\'s fields under '
                       'exactly)')
    ck.expect(s + "/sent-as-v1", r.returncode != 0 and last_line(r.stderr) == want, r.stderr)
    ck.expect(s + "/not-stored",
              c.get("resourceclaimtemplates." + GROUP, "single-gpu", ns) is None)


A40_SEL = "device.attributes['gpu.nvidia.com'].productName == 'NVIDIA A100-SXM4-40GB'"
L4_SEL = "device.attributes['gpu.nvidia.com'].productName == 'NVIDIA L4'"
SHARED_DENIAL = ("untrusted claims may not share a GPU of pool l4-shares: its devices allow "
                 "multiple allocations (claims of other namespaces on the same GPU, no memory or "
                 "fault isolation); ask for a MIG device instead, or run it from a trusted "
                 "namespace")
SHARING_DENIAL = ("config[%d] asks %s sharing for requests[%d] on pool l4-shares, whose GPUs "
                  "other namespaces' claims may share, and the claim template is untrusted (no "
                  "memory or fault isolation); remove the sharing config")


def sc_nvidia_demos(c, ck):
    """More of NVIDIA's demo specs as written: gpu-test4's four MIG requests placed on A100 40GB
    (their own profile selectors kept, the pool's added after, the constraint kept); the
    consumable-shares template admitted on the multi-allocatable L4 pool for its trusted
    namespace and refused for an untrusted one; gpu-test5's TimeSlicing and MPS configs refused
    for an untrusted namespace on that pool, word for word."""
    s = "dra-nvidia-demos"
    r = apply(c, fixture_docs("quickstart_v1_gpu-test4.yaml",
                              ("Namespace", "ResourceClaimTemplate")))
    want = ["Warning: requests[%d]: mig.nvidia.com, +1 selector of pool a100-40-mig (rule "
            "mig-demo)" % i for i in range(4)]
    ck.expect(s + "/gpu-test4-applied", r.returncode == 0 and warnings(r.stderr) == want,
              r.stderr)
    got = c.get("resourceclaimtemplates." + GROUP, "mig-devices", "gpu-test4") or {}
    reqs = dig(got, "spec", "spec", "devices", "requests", default=[]) or []
    profiles = ["1g.5gb", "1g.5gb", "2g.10gb", "3g.20gb"]
    ck.expect(s + "/gpu-test4-own-profiles-kept-pool-added", len(reqs) == 4 and all(
        dig(q, "exactly", "deviceClassName") == "mig.nvidia.com" and
        selectors(q["exactly"]) == ["device.attributes['gpu.nvidia.com'].profile == '%s'" % p,
                                    A40_SEL] for q, p in zip(reqs, profiles)), reqs)
    ck.expect(s + "/gpu-test4-constraint-kept",
              dig(got, "spec", "spec", "devices", "constraints") ==
              [{"requests": [], "matchAttribute": "gpu.nvidia.com/parentUUID"}],
              dig(got, "spec", "spec", "devices"))

    mem = "consumable-shares_memory-sharing.yaml"
    r = apply(c, fixture_docs(mem, ("Namespace", "ResourceClaimTemplate")))
    ex = dig(c.get("resourceclaimtemplates." + GROUP, "gpu-4gi", "gpu-share-memory") or {},
             "spec", "spec", "devices", "requests", 0, "exactly", default={}) or {}
    ck.expect(s + "/shares-trusted-placed", r.returncode == 0 and
              ex.get("deviceClassName") == "gpu.nvidia.com" and selectors(ex) == [L4_SEL] and
              ex.get("capacity") == {"requests": {"memory": "4Gi"}}, (r.stderr, ex))
    ns = "research-share-mem"
    r = apply(c, fixture_docs(mem, ("Namespace", "ResourceClaimTemplate"), ns=ns))
    ck.expect(s + "/shares-untrusted-refused", r.returncode != 0 and
              last_line(r.stderr) == denied(MUT, SHARED_DENIAL), r.stderr)
    ck.expect(s + "/shares-untrusted-not-stored",
              c.get("resourceclaimtemplates." + GROUP, "gpu-4gi", ns) is None)

    ns = "research-share-ts"
    r = apply(c, fixture_docs("quickstart_v1_gpu-test5.yaml",
                              ("Namespace", "ResourceClaimTemplate"), ns=ns))
    want = denied(MUT, "; ".join([SHARED_DENIAL, SHARING_DENIAL % (0, "TimeSlicing", 0),
                                  SHARING_DENIAL % (1, "MPS", 1)]))
    ck.expect(s + "/gpu-test5-untrusted-sharing-refused",
              r.returncode != 0 and last_line(r.stderr) == want, r.stderr)
    ck.expect(s + "/gpu-test5-not-stored",
              c.get("resourceclaimtemplates." + GROUP, "multiple-gpus", ns) is None)


def sc_reapply(c, ck):
    """A known limit, pinned: a second `kubectl apply` of the unchanged gpu-test1.yaml. The
    mutating entry sees CREATE only, so kubectl's three-way patch (last-applied = the file,
    live = the placed template) puts the generic class back and drops the selectors. kubectl
    knows resource.k8s.io as a built-in type and sends a strategic merge patch, which a CRD
    refuses (415); the built-in API would take the patch and refuse it as a change of an
    immutable spec. Either way the re-apply fails and nothing changes."""
    s = "dra-reapply"
    text = fixture_docs("quickstart_v1_gpu-test1.yaml", ("Namespace", "ResourceClaimTemplate"))
    before = c.get("resourceclaimtemplates." + GROUP, "single-gpu", "gpu-test1") or {}
    r = apply(c, text)
    revert = ('{"spec":{"spec":{"devices":{"requests":[{"exactly":{"deviceClassName":'
              '"gpu.nvidia.com"},"name":"gpu"}]}}}}')
    ck.expect(s + "/patch-reverts-placement", r.returncode != 0 and revert in r.stderr and
              "UnsupportedMediaType" in r.stderr, r.stderr)
    after = c.get("resourceclaimtemplates." + GROUP, "single-gpu", "gpu-test1") or {}
    ck.expect(s + "/stored-unchanged", dig(after, "spec") == dig(before, "spec") and
              dig(after, "spec", "spec", "devices", "requests", 0, "exactly",
                  "deviceClassName") == "mig.nvidia.com", dig(after, "spec"))


SCENARIOS = [
    ("dra-chart-entries", sc_chart_entries),
    ("dra-template-placed", sc_template_placed),
    ("dra-admin-access", sc_admin_access),
    ("dra-dry-run-server", sc_dry_run),
    ("dra-scheduler-claim-untouched", sc_scheduler_claim),
    ("dra-v1beta1-equivalent", sc_v1beta1_equivalent),
    ("dra-nvidia-demos", sc_nvidia_demos),
    ("dra-reapply", sc_reapply),
]

if __name__ == "__main__":
    raise SystemExit("run this suite through run_e2e.py --suite dra (or ctest e2e/dra)")
