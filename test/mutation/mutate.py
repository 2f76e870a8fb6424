#!/usr/bin/env python3
"""mutate.py - mutation testing: proves the tests catch the bugs that matter by planting
them. Each mutant in mutants.txt is one exact text edit (found by its text, so files may
move); the runner applies one at a time in a scratch copy of the tree, rebuilds only the
executables the mutant's tiers run, runs those ctest tiers, restores the file and reports

  killed     a tier failed (the tests caught the bug)
  survived   every tier passed (a gap in the tests: write the test that kills it)
  stale      the text is not found exactly once (the code moved on: update the mutant)
  broken     the mutant does not compile (fix the mutant: a compile error proves nothing)
  equivalent listed with the reason it cannot change behaviour; not run

Must never edit the source tree it was given (every edit happens in --work), never leave a
mutant applied (the file is restored after each run, and on SIGINT/SIGTERM), and never call
a mutant killed when its tiers never ran (a baseline run of the same tiers must pass first).

  mutate.py                         every mutant (scripts/mutate.sh)
  mutate.py --slice 10 --key HASH   10 mutants chosen by HASH (scripts/test.sh, from the commit)
  mutate.py --only ID[,ID...]       just these
  mutate.py --list                  the mutants and where their text is, nothing run
  mutate.py --tree HEAD             mutate the committed tree, not the working tree

Exit 0 when every mutant run was killed, 1 otherwise, 2 when it could not run at all. The
last line is "mutation: N passed, M failed" (killed = passed; survived, stale, broken = failed).
"""

import argparse
import configparser
import hashlib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tarfile
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
# What a scratch copy needs: the build inputs and the tests' data. Build dirs, git metadata
# and the downloaded tools (.deps, linked instead) are left out.
SKIP_TOP = re.compile(r"^(build.*|\.git|\.deps|node_modules|__pycache__)$")
SKIP_ANY = re.compile(r"^(__pycache__|node_modules|crash-.*|leak-.*|timeout-.*|oom-.*)$")
SEARCH_DIRS = ("src", "include", "test", "scripts", "helm")
FIELDS = {"file", "find", "replace", "why", "tiers", "equivalent"}


def log(*a):
    print(*a, flush=True)


# ------------------------------------------------------------------ the mutants file

def unescape(s):
    """\\n, \\t and \\\\ in find/replace values (a value is one line in the file)."""
    out, i = [], 0
    while i < len(s):
        if s[i] == "\\" and i + 1 < len(s) and s[i + 1] in "nt\\":
            out.append({"n": "\n", "t": "\t", "\\": "\\"}[s[i + 1]])
            i += 2
        else:
            out.append(s[i])
            i += 1
    return "".join(out)


def load_mutants(path):
    cp = configparser.ConfigParser(interpolation=None, empty_lines_in_values=False,
                                   comment_prefixes=("#",), delimiters=(":",))
    cp.optionxform = str
    try:
        with open(path, encoding="utf-8") as f:
            cp.read_file(f)
    except (OSError, configparser.Error) as e:
        raise SystemExit("mutate: %s: %s" % (path, e))
    mutants, errors = [], []
    for mid in cp.sections():
        sec = cp[mid]
        extra = set(sec) - FIELDS
        if extra:
            errors.append("%s: unknown field(s) %s" % (mid, ", ".join(sorted(extra))))
        missing = [k for k in ("file", "find", "replace", "why") if k not in sec]
        if "equivalent" not in sec and "tiers" not in sec:
            missing.append("tiers")
        if missing:
            errors.append("%s: missing %s" % (mid, ", ".join(missing)))
            continue
        m = {"id": mid, "file": sec["file"].strip(), "find": unescape(sec["find"]),
             "replace": unescape(sec["replace"]), "why": sec["why"].strip(),
             "tiers": sec.get("tiers", "").split(), "equivalent": sec.get("equivalent")}
        if m["find"] == m["replace"] and not m["equivalent"]:
            errors.append("%s: find and replace are the same text" % mid)
        mutants.append(m)
    if errors:
        raise SystemExit("mutate: %s:\n  %s" % (path, "\n  ".join(errors)))
    return mutants


def tiers_regex(tiers):
    """ctest -R for the tiers: each is a test name or a name prefix ending in '/'."""
    parts = [re.escape(t) + ("" if t.endswith("/") else "$") for t in tiers]
    return "^(" + "|".join(parts) + ")"


# ------------------------------------------------------------------ the scratch tree

def export_tree(src, tree, dest):
    """The tree to mutate, in dest: the working tree as it is, or a committed revision."""
    if tree == "worktree":
        return src
    out = os.path.join(dest, "export")
    shutil.rmtree(out, ignore_errors=True)
    os.makedirs(out)
    p = subprocess.run(["git", "-C", src, "archive", "--format=tar", tree],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    if p.returncode != 0:
        raise SystemExit("mutate: git archive %s: %s" % (tree, p.stderr.decode().strip()))
    with tempfile.TemporaryFile() as t:
        t.write(p.stdout)
        t.seek(0)
        with tarfile.open(fileobj=t) as tf:
            tf.extractall(out)
    return out


def same_content(a, b):
    try:
        if os.path.getsize(a) != os.path.getsize(b):
            return False
        with open(a, "rb") as fa, open(b, "rb") as fb:
            return fa.read() == fb.read()
    except OSError:
        return False


def sync_tree(src, dst):
    """Makes dst a copy of src. Only files whose content differs are written, and written
    ones get the current time, so the incremental build rebuilds exactly what changed
    (including a file a previous, interrupted run left mutated)."""
    changed = 0
    seen = set()
    for root, dirs, files in os.walk(src):
        rel = os.path.relpath(root, src)
        top = rel == "."
        dirs[:] = [d for d in dirs if not SKIP_ANY.match(d) and not (top and SKIP_TOP.match(d))]
        os.makedirs(os.path.join(dst, rel), exist_ok=True)
        seen.add(os.path.normpath(rel))
        for d in dirs:
            seen.add(os.path.normpath(os.path.join(rel, d)))
        for f in files:
            if SKIP_ANY.match(f):
                continue
            r = os.path.normpath(os.path.join(rel, f))
            seen.add(r)
            s, d = os.path.join(src, r), os.path.join(dst, r)
            if os.path.islink(s):
                if not (os.path.islink(d) and os.readlink(d) == os.readlink(s)):
                    if os.path.lexists(d):
                        os.remove(d)
                    os.symlink(os.readlink(s), d)
                continue
            if not same_content(s, d):
                shutil.copyfile(s, d)
                shutil.copymode(s, d)
                changed += 1
    # files the source no longer has (a moved file must not be mutated twice)
    for root, dirs, files in os.walk(dst, topdown=False):
        rel = os.path.relpath(root, dst)
        if rel == "." or SKIP_TOP.match(rel.split(os.sep)[0]):
            continue
        for f in files:
            r = os.path.normpath(os.path.join(rel, f))
            if r not in seen:
                os.remove(os.path.join(dst, r))
                changed += 1
        if os.path.normpath(rel) not in seen:
            shutil.rmtree(root, ignore_errors=True)
    deps = os.path.join(REPO, ".deps")
    link = os.path.join(dst, ".deps")
    if os.path.isdir(deps) and not os.path.lexists(link):
        os.symlink(deps, link)  # helm/kubectl for the tiers that need them; never mutated
    return changed


# ------------------------------------------------------------------ locating a mutant

def locate(tree, m):
    """(path relative to tree, note) of the one file holding the mutant's text exactly once,
    or (None, why). The named file first; when it moved or changed, a search of the tree."""
    named = os.path.join(tree, m["file"])
    if os.path.isfile(named):
        n = open(named, encoding="utf-8", errors="surrogateescape").read().count(m["find"])
        if n == 1:
            return m["file"], ""
        if n > 1:
            return None, "text found %d times in %s (make it unique)" % (n, m["file"])
    hits = []
    for d in SEARCH_DIRS:
        for root, dirs, files in os.walk(os.path.join(tree, d)):
            dirs[:] = [x for x in dirs if not SKIP_ANY.match(x)]
            for f in files:
                if not f.endswith((".c", ".h", ".py", ".sh", ".yaml", ".tpl", ".txt")):
                    continue
                p = os.path.join(root, f)
                try:
                    n = open(p, encoding="utf-8", errors="surrogateescape").read().count(m["find"])
                except OSError:
                    continue
                if n:
                    hits.append((os.path.relpath(p, tree), n))
    hits = [h for h in hits if not h[0].startswith("test/mutation/")]
    if len(hits) == 1 and hits[0][1] == 1:
        return hits[0][0], "moved: %s -> %s" % (m["file"], hits[0][0])
    if not hits:
        return None, "text not found in %s nor anywhere under %s" % (m["file"],
                                                                      ", ".join(SEARCH_DIRS))
    return None, "text not in %s; found in %s" % (
        m["file"], ", ".join("%s (%dx)" % h for h in hits))


class Applied:
    """One mutant written into the scratch tree; restore() puts the original back."""
    current = None

    def __init__(self, path, find, replace):
        self.path = path
        with open(path, "rb") as f:
            self.original = f.read()
        text = self.original.decode("utf-8", "surrogateescape")
        mutated = text.replace(find, replace, 1)
        Applied.current = self
        with open(path, "wb") as f:
            f.write(mutated.encode("utf-8", "surrogateescape"))

    def restore(self):
        # the original bytes with a new mtime: the next build recompiles the file
        with open(self.path, "wb") as f:
            f.write(self.original)
        Applied.current = None


def restore_on_signal(signum, frame):
    if Applied.current:
        Applied.current.restore()
    log("mutate: interrupted (signal %d); the scratch tree is restored" % signum)
    sys.exit(2)


# ------------------------------------------------------------------ build and ctest

def run(cmd, cwd=None, timeout=None):
    t0 = time.monotonic()
    try:
        p = subprocess.run(cmd, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                           timeout=timeout)
        out, rc = p.stdout.decode("utf-8", "replace"), p.returncode
    except subprocess.TimeoutExpired as e:
        out = (e.stdout or b"").decode("utf-8", "replace") + "\n(timed out)"
        rc = -1
    return rc, out, time.monotonic() - t0


class Build:
    def __init__(self, src, bdir, jobs, test_timeout):
        self.src, self.dir, self.jobs, self.test_timeout = src, bdir, jobs, test_timeout
        self.targets_cache = {}

    def configure(self):
        # RelWithDebInfo as the release tier of scripts/test.sh; warnings are not errors here
        # (a mutant that only adds a warning must still be judged by the tests)
        rc, out, _ = run(["cmake", "-S", self.src, "-B", self.dir,
                          "-DCMAKE_BUILD_TYPE=RelWithDebInfo", "-DGPA_WERROR=OFF"])
        if rc != 0:
            raise SystemExit("mutate: cmake configure failed:\n" + out[-3000:])

    def all_tests(self):
        """{test name: its command words}, from the CTestTestfile.cmake files (ctest's own
        listing leaves out the command of a test whose executable is not built yet)."""
        tests = {}
        for root, _, files in os.walk(self.dir):
            if "CTestTestfile.cmake" not in files:
                continue
            for line in open(os.path.join(root, "CTestTestfile.cmake"), encoding="utf-8"):
                m = re.match(r'add_test\(\[=\[(.*?)\]=\]\s+(.*)\)\s*$', line)
                if m:
                    tests[m.group(1)] = re.findall(r'"((?:[^"\\]|\\.)*)"', m.group(2))
        return tests

    def known_targets(self):
        if not hasattr(self, "_targets"):
            rc, out, _ = run(["cmake", "--build", self.dir, "--target", "help"])
            self._targets = set(re.findall(r"^\.\.\. (\S+)", out, re.M))
        return self._targets

    def targets_for(self, regex):
        """The tests -R regex selects and the targets they run: the test's command and any
        argument that is a build-tree file named like a target (golden_runner, gpu-admission)."""
        if regex in self.targets_cache:
            return self.targets_cache[regex]
        if not hasattr(self, "_tests"):
            self._tests = self.all_tests()
        rx = re.compile(regex)
        bdir = os.path.realpath(self.dir)
        known = self.known_targets()
        names, targets = [], set()
        for name, words in sorted(self._tests.items()):
            if not rx.search(name):
                continue
            names.append(name)
            for w in words:
                if os.path.isabs(w) and os.path.realpath(w).startswith(bdir + os.sep) and \
                        os.path.basename(w) in known:
                    targets.add(os.path.basename(w))
        self.targets_cache[regex] = (names, sorted(targets))
        return names, sorted(targets)

    def build(self, targets):
        cmd = ["cmake", "--build", self.dir, "-j", str(self.jobs)]
        for t in targets:
            cmd += ["--target", t]
        return run(cmd)

    def ctest(self, regex):
        rc, out, secs = run(["ctest", "-R", regex, "-j", str(self.jobs), "--timeout",
                             str(self.test_timeout), "--stop-on-failure", "--output-on-failure"],
                            cwd=self.dir, timeout=self.test_timeout * 4 + 60)
        failed = re.findall(r"^\s*\d+ - (\S+) \(", out, re.M)
        ran = re.search(r"tests passed, (\d+) tests? failed out of (\d+)", out)
        return rc, out, secs, failed, ran is not None


# ------------------------------------------------------------------ main

def choose_slice(mutants, n, key):
    runnable = [m for m in mutants if not m["equivalent"]]
    runnable.sort(key=lambda m: hashlib.sha256((key + ":" + m["id"]).encode()).hexdigest())
    return runnable[:n]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--src", default=REPO, help="the tree to copy (default: this checkout)")
    ap.add_argument("--tree", default="worktree",
                    help="worktree (the files as they are) or a git revision to export")
    ap.add_argument("--add", action="append", default=[], metavar="PATH",
                    help="with --tree REV: also take this working-tree file (repeatable)")
    ap.add_argument("--work", default=os.path.join(tempfile.gettempdir(),
                                                   "gpa-mutation-%d" % os.getuid()),
                    help="scratch dir: src/ (the copy) and build/ (kept for incremental runs)")
    ap.add_argument("--mutants", default=os.path.join(HERE, "mutants.txt"))
    ap.add_argument("--only", help="comma-separated mutant ids")
    ap.add_argument("--slice", type=int, help="run N mutants chosen by --key")
    ap.add_argument("--key", default="", help="slice key, e.g. the commit hash")
    ap.add_argument("--list", action="store_true", help="show mutants and where they apply")
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 2)
    ap.add_argument("--test-timeout", type=int, default=120, help="seconds per ctest test")
    ap.add_argument("--json", help="write per-mutant results here")
    a = ap.parse_args()

    mutants = load_mutants(a.mutants)
    ids = {m["id"] for m in mutants}
    if a.only:
        want = [x for x in a.only.split(",") if x]
        unknown = [x for x in want if x not in ids]
        if unknown:
            raise SystemExit("mutate: no mutant %s" % ", ".join(unknown))
        sel = [m for m in mutants if m["id"] in want]
    elif a.slice is not None:
        sel = choose_slice(mutants, a.slice, a.key)
    else:
        sel = mutants

    os.makedirs(a.work, exist_ok=True)
    src_tree = export_tree(os.path.realpath(a.src), a.tree, a.work)
    for p in a.add:
        if a.tree == "worktree":
            break
        dst = os.path.join(src_tree, p)
        os.makedirs(os.path.dirname(dst), exist_ok=True)
        shutil.copyfile(os.path.join(a.src, p), dst)
    scratch = os.path.join(a.work, "src")
    if os.path.realpath(scratch).startswith(os.path.realpath(a.src) + os.sep) or \
            os.path.realpath(scratch) == os.path.realpath(a.src):
        raise SystemExit("mutate: --work must be outside the source tree")
    t_start = time.monotonic()
    changed = sync_tree(src_tree, scratch)
    if a.list:
        for m in sel:
            where, note = locate(scratch, m)
            state = "equivalent" if m["equivalent"] else ("ok" if where else "STALE")
            log("%-28s %-10s %s %s" % (m["id"], state, where or m["file"], note))
        return 0

    signal.signal(signal.SIGINT, restore_on_signal)
    signal.signal(signal.SIGTERM, restore_on_signal)
    b = Build(scratch, os.path.join(a.work, "build"), a.jobs, a.test_timeout)
    b.configure()
    log("mutate: %d mutant(s), scratch %s (%d file(s) refreshed)" % (len(sel), a.work, changed))

    # Baseline: the tiers of the selected mutants must pass on the unmutated tree.
    run_sel = [m for m in sel if not m["equivalent"]]
    all_tiers = sorted({t for m in run_sel for t in m["tiers"]})
    if all_tiers:
        regex = tiers_regex(all_tiers)
        names, targets = b.targets_for(regex)
        rc, out, bsecs = b.build(targets)
        if rc != 0:
            log(out[-4000:])
            log("mutate: the unmutated tree does not build")
            log("mutation: 0 passed, %d failed" % len(run_sel))
            return 2
        rc, out, tsecs, failed, _ = b.ctest(regex)
        if rc != 0:
            log(out[-4000:])
            log("mutate: baseline tiers fail on the unmutated tree: %s" % " ".join(failed))
            log("mutation: 0 passed, %d failed" % len(run_sel))
            return 2
        log("mutate: baseline %d test(s) pass (build %.0fs, tests %.0fs)" % (len(names), bsecs,
                                                                              tsecs))

    results = []
    for m in sel:
        r = {"id": m["id"], "file": m["file"], "tiers": m["tiers"]}
        results.append(r)
        if m["equivalent"]:
            r["status"] = "equivalent"
            log("EQUIVALENT %-28s %s" % (m["id"], m["equivalent"]))
            continue
        where, note = locate(scratch, m)
        if not where:
            r["status"], r["note"] = "stale", note
            log("STALE      %-28s %s" % (m["id"], note))
            continue
        r["where"] = where
        regex = tiers_regex(m["tiers"])
        names, targets = b.targets_for(regex)
        if not names:
            r["status"], r["note"] = "stale", "no ctest test matches %s" % regex
            log("STALE      %-28s %s" % (m["id"], r["note"]))
            continue
        t0 = time.monotonic()
        ap_ = Applied(os.path.join(scratch, where), m["find"], m["replace"])
        try:
            rc, out, bsecs = b.build(targets)
            if rc != 0:
                r["status"] = "broken"
                r["note"] = "does not compile: " + " | ".join(
                    l.strip() for l in out.splitlines() if "error" in l)[:300]
                tsecs, failed = 0.0, []
            else:
                rc, out, tsecs, failed, ran = b.ctest(regex)
                if rc == 0:
                    r["status"] = "survived"
                elif failed:
                    r["status"], r["killed_by"] = "killed", failed
                else:
                    r["status"] = "killed"
                    r["killed_by"] = ["(ctest rc %d%s)" % (rc, "" if ran else ", no summary")]
        finally:
            ap_.restore()
        os.makedirs(os.path.join(a.work, "logs"), exist_ok=True)
        with open(os.path.join(a.work, "logs", m["id"] + ".log"), "w") as f:
            f.write(out)
        r["build_s"], r["test_s"] = round(bsecs, 1), round(tsecs, 1)
        r["seconds"] = round(time.monotonic() - t0, 1)
        extra = " ".join(r.get("killed_by", [])) or r.get("note", "")
        log("%-10s %-28s %5.1fs (build %.1fs, tests %.1fs) %s%s" % (
            r["status"].upper(), m["id"], r["seconds"], r["build_s"], r["test_s"], extra,
            "  [%s]" % note if note else ""))
        if r["status"] == "survived":
            log("           why it matters: %s" % m["why"])

    wall = time.monotonic() - t_start
    count = {}
    for r in results:
        count[r["status"]] = count.get(r["status"], 0) + 1
    killed = count.get("killed", 0)
    bad = sum(count.get(s, 0) for s in ("survived", "stale", "broken"))
    summary = ", ".join("%d %s" % (count[s], s) for s in
                        ("killed", "survived", "stale", "broken", "equivalent") if s in count)
    log("mutate: %d mutant(s): %s; wall %.0fs" % (len(results), summary or "none", wall))
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"wall_s": round(wall, 1), "counts": count, "results": results}, f,
                      indent=1)
    log("mutation: %d passed, %d failed" % (killed, bad))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
