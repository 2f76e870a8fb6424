#!/usr/bin/env python3
"""test_cli_export.py - `gpu-admission export vap` as a user runs it (python3 stdlib only), the
fast half of issue 32's proof (the other half, e2e/vap, installs the output in a real
kube-apiserver 1.37 and replays the golden cases).

Proves: the shipped policy's ValidatingAdmissionPolicy is exactly the reviewed golden file
(fixtures/vap-shipped.yaml, which e2e/vap installed and replayed: any change to the compiler
shows here first, and `--record` rewrites it for review); every webhook reason the export claims
to compile has its validation; every namespace regex is anchored; policy text reaches CEL only
as an escaped literal; the CLI contract shared with the other exporters (exit 0 / 1 a policy that
fails to load / 2 usage, --output FILE, the not-compiled list on stderr and as # lines).

usage: test_cli_export.py --bin GPU_ADMISSION --src SOURCE_DIR [--record yes]
"""
import os
import re
import shutil
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "common"))
from clitest import check, finish, parse_args, runner  # noqa: E402

args = parse_args("--record")
BIN, SRC = args.bin, args.src
GOLDEN = os.path.join(SRC, "test", "tools", "fixtures", "vap-shipped.yaml")
export = runner(BIN, "export")

# The reasons of the validating webhook's pod checks the export compiles (docs/operations.md
# "The API server's own copy of the checks"); a dropped one fails here.
COMPILED = ["tenant-name-taken", "tenant-claim", "trust-label", "rule-deny", "unmatched",
            "bad-quantity", "requests-limits", "shared-count", "mig-count",
            "untrusted-shared", "node-name-shared", "shared-scheduler", "isolation-missing",
            "mig-memory", "resource-pool-mismatch", "runtime-class", "affinity-too-large",
            "affinity-conflict", "shared-pool-unplaced", "pool-label", "visible-devices",
            "toolkit-env", "env-from", "privileged", "host-path", "unknown-device-class",
            # gpu-admission-claims
            "dra-admin-access", "dra-allocation-all", "dra-untrusted-shared",
            "dra-untrusted-sharing"]

# ---- the shipped policy: the reviewed golden file ----
rc, out, err = export("vap", "--policies", os.path.join(SRC, "policies"))
check(rc == 0, "export vap of the shipped set: rc %d %s" % (rc, err[-300:]))
if args.record:
    with open(GOLDEN, "w") as f:
        f.write(out)
    print("recorded", GOLDEN)
with open(GOLDEN) as f:
    golden = f.read()
check(out == golden, "export vap of policies/ differs from %s (review, then --record yes)" % GOLDEN)

# ---- every compiled reason has its validation, with the reason code in front ----
reasons = re.findall(r'^    message: "([a-z-]+): refused by the GPU policy"$', out, re.M)
for r in COMPILED:
    check(r in reasons, "no validation for reason %s" % r)
check(set(reasons) <= set(COMPILED), "undocumented reasons: %s" % (set(reasons) - set(COMPILED)))
n_expr = len(re.findall(r"^  - expression: \|-$", out, re.M))
check(n_expr == len(reasons), "%d validations, %d messages" % (n_expr, len(reasons)))
check(len(re.findall(r"^    reason: Forbidden$", out, re.M)) == n_expr, "reason Forbidden each")
check(len(re.findall(r"^      '([a-z-]+): ' \+ \(", out, re.M)) == n_expr,
      "each messageExpression starts with its reason code")
for name in re.findall(r"^  name: (\S+)$", out, re.M):
    check(name.startswith("gpu-admission-"), "object name %s" % name)
check(out.count("kind: ValidatingAdmissionPolicy\n") == 2 and
      out.count("kind: ValidatingAdmissionPolicyBinding\n") == 2, "two policies and bindings")
check("  name: gpu-admission-claims\n" in out and "resources: [\"resourceclaims\", "
      "\"resourceclaimtemplates\"]" in out, "the claims policy (the shipped set has spec.dra)")
check(out.count("validationActions: [Deny]") == 2, "enforcement deny -> Deny")

# ---- namespace globs: anchored regular expressions, nothing unescaped ----
rx = re.findall(r"\.matches\('([^']*)'\)", out)
check(len(rx) >= 3, "tenant and rule globs compiled to regexes: %d" % len(rx))
for r in rx:
    if r.startswith("//"):  # the hostPath spelling check, not a namespace glob
        continue
    check(r.startswith("^(?:") and r.endswith(")$"), "regex %s is not anchored" % r)
check("'^(?:research-.*|inference-.*)$'" in out, "tenant research's globs as one regex")
check("variables.ns in ['research', 'sandbox']" in out, "literal globs as a list")

# ---- the not-compiled list: stderr lines == # lines ----
gaps_err = [l.split("not compiled: ", 1)[1] for l in err.splitlines() if "not compiled: " in l]
gaps_yaml = [l[len("#   - "):] for l in out.splitlines() if l.startswith("#   - ")]
check(gaps_err and gaps_err == gaps_yaml, "not-compiled lines on stderr and in the YAML agree")

# ---- claims on a multiAllocatable pool: which rules each sharing check refuses ----
# test/golden/policies/dra: rule 3 (shares) places claims in l4-shares (multiAllocatable),
# rule 4 (time-sliced) in t4-ts (multiAllocatable, allowUntrusted: true); the others in pools
# of one claim per device, or deny. An untrusted claim is refused on rule 3's pool alone
# (dra-untrusted-shared), a sharing config on either (dra-untrusted-sharing, allowUntrusted
# or not: engine_claim.c).
rc, dra, err = export("vap", "--policies", os.path.join(SRC, "test", "golden", "policies", "dra"))
check(rc == 0, "export vap of the golden dra set: rc %d %s" % (rc, err[-300:]))


def validation(text, reason):
    """the expression of reason's validation, '' when it has none"""
    m = re.search(r"^  - expression: \|-\n      (.*)\n    message: \"%s: " % re.escape(reason),
                  text, re.M)
    return m.group(1) if m else ""


shared, sharing = validation(dra, "dra-untrusted-shared"), validation(dra, "dra-untrusted-sharing")
check(shared == "!(!variables.trusted && variables.rule in [3])",
      "dra-untrusted-shared refuses rule 3's pool only (allowUntrusted pools pass): %r" % shared)
check(sharing.startswith("!(!variables.trusted && variables.rule in [3, 4] && ") and
      "['MPS', 'TimeSlicing']" in sharing and "['GpuConfig', 'MigDeviceConfig']" in sharing,
      "dra-untrusted-sharing on both multiAllocatable pools' rules: %r" % sharing[:200])
check("- name: rules0" in dra and "variables.judged && variables.gpus > 0 && !variables.taken"
      in dra, "claims matched to rules as the webhook does (judged, GPU devices, not taken)")
iso = export("vap", "--policies", os.path.join(SRC, "test", "golden", "policies", "isolation"))[1]
check("gpu-admission-claims" in iso and not validation(iso, "dra-untrusted-shared") and
      not validation(iso, "dra-untrusted-sharing"), "no multiAllocatable pool: no sharing check")

# ---- policy text is a CEL literal, whatever it holds ----
tmp = tempfile.mkdtemp()
try:
    pol = os.path.join(tmp, "p")
    shutil.copytree(os.path.join(SRC, "policies"), pol, ignore=shutil.ignore_patterns("tests"))
    with open(os.path.join(pol, "30-odd.yaml"), "w") as f:
        f.write("apiVersion: gpu-admission.io/v1alpha1\nkind: GPUPolicy\nmetadata: {name: odd}\n"
                "spec:\n  rules:\n  - name: odd\n    match: {namespaces: [\"odd-*\"]}\n"
                "    deny: \"it's \\\\ a \\\"test\\\") || true || ('\"\n")
    rc, odd, err = export("vap", "--policies", pol)
    check(rc == 0, "odd deny message: rc %d %s" % (rc, err[-300:]))
    check("'it\\'s \\\\ a \\\"test\\\") || true || (\\''" in odd,
          "deny message escaped as one CEL literal")

    # ---- the CLI contract ----
    outf = os.path.join(tmp, "out.yaml")
    rc, o2, _ = export("vap", "--policies", os.path.join(SRC, "policies"), "--output", outf)
    check(rc == 0 and o2 == "" and open(outf).read() == out, "--output FILE: the same bytes")
    bad = os.path.join(tmp, "bad")
    os.makedirs(bad)
    with open(os.path.join(bad, "p.yaml"), "w") as f:
        f.write("apiVersion: gpu-admission.io/v1alpha1\nkind: GPUPolicy\nmetadata: {name: x}\n"
                "spec:\n  rules:\n  - name: r\n    place: {pool: nowhere}\n")
    rc, o3, e3 = export("vap", "--policies", bad)
    check(rc == 1 and o3 == "" and "p.yaml:" in e3 and "policy set refused" in e3,
          "a set that fails to load: exit 1, its errors: %d %s" % (rc, e3))
    for argv, what in ((["vap"], "no --policies"), ([], "no kind"),
                       (["nope", "--policies", bad], "unknown kind"),
                       (["vap", "--policies", bad, "--bogus"], "unknown flag")):
        rc, o4, e4 = export(*argv)
        check(rc == 2 and o4 == "" and "usage: gpu-admission export" in e4,
              "%s: exit 2 with the usage: %d %s" % (what, rc, e4[:200]))
    rc, o5, _ = export("--help")
    check(rc == 0 and "vap" in o5, "--help")
finally:
    shutil.rmtree(tmp)
finish()
