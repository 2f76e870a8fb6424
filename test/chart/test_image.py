"""test_image.py - Docker cannot run here, so the image is checked by what it is made of:
the runtime stage of the Dockerfile must install exactly the Debian packages that own the
shared libraries `ldd` resolves for the real built binary, minus the packages every Debian
image has (Essential: yes and their dependency closure) - the rule stated in the Dockerfile.
Also: non-root numeric USER matching the chart, ENTRYPOINT/CMD, build stage on Debian 12, and
that the CMD's flags match the directories the chart mounts."""
import os
import re
import subprocess
import unittest

import chartlib as c

DOCKERFILE = os.path.join(c.SRC, "Dockerfile")
BINARY = os.environ.get("GPA_BINARY", "")


def stages():
    """[(FROM line, [instructions with continuations joined])]"""
    with open(DOCKERFILE) as f:
        text = f.read()
    text = re.sub(r"\\\n", " ", text)
    out = []
    for line in text.splitlines():
        s = line.strip()
        if not s or s.startswith("#"):
            continue
        if s.upper().startswith("FROM "):
            out.append((s, []))
        elif out:
            out[-1][1].append(s)
    return out


def apt_packages(instructions):
    pkgs = []
    for ins in instructions:
        if not ins.startswith("RUN ") or "apt-get install" not in ins:
            continue
        for cmd in ins[4:].split("&&"):
            if "apt-get install" in cmd:
                words = cmd.split("apt-get install", 1)[1].split()
                pkgs += [w for w in words if not w.startswith("-")]
    return pkgs


def ldd_paths(binary):
    r = subprocess.run(["ldd", binary], capture_output=True, text=True, check=True)
    paths = []
    for line in r.stdout.splitlines():
        m = re.search(r"=>\s+(/\S+)", line) or re.match(r"\s*(/\S+)\s+\(", line)
        if m:
            paths.append(m.group(1))
        elif "=> not found" in line:
            raise AssertionError("ldd: " + line.strip())
    return paths


def owner(path):
    """Debian package owning path; Debian 12 mixes /lib and /usr/lib (merged /usr)."""
    cands = [path, os.path.realpath(path)]
    if path.startswith("/lib"):
        cands.insert(1, "/usr" + path)
    for p in cands:
        r = subprocess.run(["dpkg", "-S", p], capture_output=True, text=True)
        if r.returncode == 0:
            return r.stdout.split(":", 1)[0].split(",")[0].strip()
    raise AssertionError(f"no Debian package owns {path}: the image could not install it")


def essential_closure():
    fmt = "${Package}\t${Essential}\t${Pre-Depends}\t${Depends}\t${Provides}\t${db:Status-Abbrev}\n"
    r = subprocess.run(["dpkg-query", "-W", "-f", fmt], capture_output=True, text=True,
                       check=True)
    deps, installed, provides, todo = {}, set(), {}, []
    for line in r.stdout.splitlines():
        name, ess, pre, dep, prov, status = (line.split("\t") + [""] * 6)[:6]
        if not status.startswith("ii"):
            continue
        installed.add(name)
        deps[name] = ", ".join(x for x in (pre, dep) if x)
        for p in prov.split(","):
            p = p.split("(")[0].strip()
            if p:
                provides.setdefault(p, name)
        if ess == "yes":
            todo.append(name)
    seen = set()
    while todo:
        n = todo.pop()
        if n in seen:
            continue
        seen.add(n)
        for group in deps.get(n, "").split(","):
            for alt in group.split("|"):
                a = alt.split("(")[0].strip().split(":")[0]
                if not a:
                    continue
                target = a if a in installed else provides.get(a)
                if target:
                    todo.append(target)
                    break  # first satisfiable alternative, as apt would pick
    return seen


class Image(unittest.TestCase):
    def test_runtime_packages_are_exactly_what_ldd_needs(self):
        self.assertTrue(BINARY and os.path.exists(BINARY), f"built binary missing: {BINARY!r}")
        owners = {owner(p) for p in ldd_paths(BINARY)}
        self.assertIn("libc6", owners)
        base = essential_closure()
        self.assertIn("libc6", base, "essential closure must contain libc6")
        self.assertNotIn("libssl3", base)
        want = sorted(owners - base)
        st = stages()
        self.assertEqual(len(st), 2, "a build stage and a runtime stage")
        got = apt_packages(st[1][1])
        self.assertEqual(got, sorted(got), "keep the runtime list sorted")
        self.assertEqual(len(got), len(set(got)))
        self.assertEqual(sorted(got), want,
                         f"runtime stage installs {sorted(got)}; ldd of {BINARY} needs {want}")

    def test_stages(self):
        (b_from, b_ins), (r_from, r_ins) = stages()
        self.assertRegex(b_from, r"^FROM debian:12(\.\d+)?(@sha256:[0-9a-f]{64})? AS build$")
        self.assertRegex(r_from, r"^FROM debian:12(\.\d+)?-slim(@sha256:[0-9a-f]{64})?$")
        bpk = apt_packages(b_ins)
        for p in ("cmake", "libcjson-dev", "libyaml-dev", "libmicrohttpd-dev", "libssl-dev"):
            self.assertIn(p, bpk)
        self.assertIn("USER 65532:65532", r_ins)
        self.assertIn('ENTRYPOINT ["/usr/local/bin/gpu-admission"]', r_ins)
        self.assertIn("COPY --from=build /src/build/gpu-admission /usr/local/bin/gpu-admission",
                      r_ins)
        # the default command serves from the directories the chart mounts
        cmd = [i for i in r_ins if i.startswith("CMD ")]
        self.assertEqual(len(cmd), 1)
        import json
        argv = json.loads(cmd[0][4:])
        self.assertEqual(argv[0], "serve")
        self.assertEqual(argv[argv.index("--policies") + 1], "/etc/gpu-admission/policies")
        self.assertEqual(argv[argv.index("--cert-dir") + 1], "/etc/gpu-admission/tls")
        d = c.one(c.render(), "Deployment")["spec"]["template"]["spec"]
        mounts = {m["mountPath"] for m in d["containers"][0]["volumeMounts"]}
        self.assertTrue({"/etc/gpu-admission/policies", "/etc/gpu-admission/tls"} <= mounts)
        self.assertEqual(d["securityContext"]["runAsUser"], 65532)

    def test_dockerignore_keeps_secrets_and_builds_out(self):
        with open(os.path.join(c.SRC, ".dockerignore")) as f:
            pats = {ln.strip() for ln in f if ln.strip() and not ln.startswith("#")}
        for p in (".git", ".deps/", "build*/", "certs/dev/", "**/*.key"):
            self.assertIn(p, pats)
        # ... but never what the Dockerfile copies
        for p in ("src/", "include/", "policies/", "CMakeLists.txt"):
            self.assertNotIn(p, pats)


if __name__ == "__main__":
    unittest.main(verbosity=2)
