"""test_image.py - Docker cannot run here, so the image is checked by what it is made of:
the runtime stage of the Dockerfile must install exactly the Debian packages that own the
shared libraries `ldd` resolves for the real built binary, minus the packages every Debian
image has (Essential: yes and their dependency closure) - the rule stated in the Dockerfile.
Also: non-root numeric USER matching the chart, ENTRYPOINT/CMD, build stage on Debian 12, and
that the CMD's flags match the directories the chart mounts."""
import fnmatch
import os
import re
import shutil
import subprocess
import tempfile
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


def dockerignore_patterns():
    with open(os.path.join(c.SRC, ".dockerignore")) as f:
        return [ln.strip().rstrip("/") for ln in f if ln.strip() and not ln.startswith("#")]


def ignored(rel, patterns):
    """Docker's rule, for the patterns this project uses: a path is left out when it or one of
    its parent directories matches a pattern (`*` within a segment, `**/` any depth)."""
    parts = rel.split("/")
    for i in range(1, len(parts) + 1):
        prefix = "/".join(parts[:i])
        for p in patterns:
            if p.startswith("!"):
                continue
            if fnmatch.fnmatchcase(prefix, p):
                return True
            if p.startswith("**/") and (fnmatch.fnmatchcase(prefix, p[3:]) or
                                        fnmatch.fnmatchcase(parts[i - 1], p[3:])):
                return True
    return False


def build_context(dest):
    """Copies what `docker build .` would send: the work tree minus .dockerignore."""
    pats = dockerignore_patterns()
    for root, dirs, files in os.walk(c.SRC):
        rel_root = os.path.relpath(root, c.SRC)
        rel_root = "" if rel_root == "." else rel_root
        dirs[:] = [d for d in dirs if not ignored(os.path.join(rel_root, d), pats)]
        for f in files:
            rel = os.path.join(rel_root, f)
            if not ignored(rel, pats):
                os.makedirs(os.path.join(dest, rel_root), exist_ok=True)
                shutil.copy2(os.path.join(root, f), os.path.join(dest, rel), follow_symlinks=False)


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

    def test_build_stage_runs_on_the_docker_context(self):
        """Replays the build stage without Docker: the context filtered by .dockerignore, its
        COPY lines, then its non-apt RUN lines under bash in WORKDIR; the binary it makes must
        run, need exactly the runtime stage's packages, and what the runtime stage copies must
        exist."""
        (b_from, b_ins), (_, r_ins) = stages()
        with tempfile.TemporaryDirectory(prefix="gpa-docker-") as tmp:
            ctx, work = os.path.join(tmp, "ctx"), os.path.join(tmp, "src")
            build_context(ctx)
            self.assertFalse(os.path.exists(os.path.join(ctx, ".git")))
            self.assertFalse(any(n.startswith("build") for n in os.listdir(ctx)))
            os.makedirs(work)
            for ins in b_ins:
                if ins.startswith("WORKDIR "):
                    self.assertEqual(ins, "WORKDIR /src")
                elif ins.startswith("COPY "):
                    src, dst = ins.split()[1:3]
                    self.assertTrue(os.path.exists(os.path.join(ctx, src)), f"{src} not in context")
                    if os.path.isdir(os.path.join(ctx, src)):
                        shutil.copytree(os.path.join(ctx, src), os.path.join(work, dst))
                    else:
                        shutil.copy(os.path.join(ctx, src), os.path.join(work, dst))
                elif ins.startswith("RUN ") and "apt-get" not in ins:
                    cmd = ins[4:].replace("-j\"$(nproc)\"", "-j2")
                    r = subprocess.run(["bash", "-ec", cmd], cwd=work, capture_output=True,
                                       text=True, timeout=800)
                    self.assertEqual(r.returncode, 0, r.stdout[-3000:] + r.stderr[-3000:])
                    self.assertIn("gpu-admission ", r.stdout)  # the `version` line
            binary = os.path.join(work, "build", "gpu-admission")
            owners = {owner(p) for p in ldd_paths(binary)}
            want = sorted(owners - essential_closure())
            self.assertEqual(sorted(apt_packages(r_ins)), want)
            for ins in r_ins:
                if ins.startswith("COPY --from=build "):
                    src = ins.split()[2]
                    self.assertTrue(src.startswith("/src/"))
                    self.assertTrue(os.path.exists(os.path.join(work, src[5:])), src)
                elif ins.startswith("COPY "):
                    self.assertTrue(os.path.exists(os.path.join(ctx, ins.split()[1])), ins)


if __name__ == "__main__":
    unittest.main(verbosity=2)
