#!/usr/bin/env python3
"""check_layers.py - the architecture rules of docs/design.md, checked on the source tree.

  lines     no source file under src/ or include/ over 900 lines
  calls     the file-level call graph over gpa_* functions (definitions by universal-ctags,
            references by a scan of function bodies, initialisers and macro bodies) has no
            cycle, and no file calls a function of a layer above its own
  includes  no file includes a header of a layer above its own (src/core never includes
            server/sim/tools/cli headers; src/server never includes a tools header)
  symbols   every symbol `nm -g --defined-only` lists in each given library starts with gpa_

Every finding is printed (file names, the cycle with the calls that make it, the symbol);
the exit status is 1 when there is one, 2 when the check could not run. It only reads the
tree: it never edits a file and never builds anything.
"""
import argparse
import collections
import json
import os
import re
import shutil
import subprocess
import sys

LIMIT_LINES = 900

# Layer ranks: a file may call and include only its own rank or lower. The offline tools,
# the simulator and the server sit side by side above the core; the CLI above them all.
CORE_LAYERS = ["util", "format", "k8s", "policy", "engine", "webhook"]
RANK = {name: i for i, name in enumerate(CORE_LAYERS)}
RANK.update({"tools": 6, "sim": 6, "server": 6, "cli": 7})
# Beside each other, not above: what each of the side-by-side parts may use of the others.
SIDE_OK = {("sim", "tools")}

# Public headers are one layer each, like the private ones in their layer's folder. A new
# public header must be added here (the check fails on one it does not know).
PUBLIC = {
    "common.h": "util", "glob.h": "util", "strbuf.h": "util",
    "yaml_tree.h": "format", "yamljson.h": "format", "objects.h": "format", "patch.h": "format",
    "yaml_read.h": "format",
    "mig.h": "k8s", "quantity.h": "k8s", "labels.h": "k8s", "pod_need.h": "k8s",
    "policy.h": "policy", "workload.h": "policy", "reach.h": "policy",
    "engine.h": "engine", "claim.h": "engine",
    "review.h": "webhook", "namespace_guard.h": "webhook",
    "judge.h": "tools", "impact.h": "tools", "policyreport.h": "tools", "suite.h": "tools", "textdiff.h": "tools",
    "report.h": "tools", "export_map.h": "tools",
}


def rel(root, path):
    return os.path.relpath(path, root)


def layer_of(relpath):
    """The layer of a file (path relative to the source root), None outside src/ include/."""
    parts = relpath.split(os.sep)
    if parts[0] == "include" and len(parts) == 3 and parts[1] == "gpu_admission":
        return PUBLIC.get(parts[2], "?")
    if parts[0] != "src" or len(parts) < 3:
        return None
    if parts[1] == "core":
        return parts[2] if len(parts) >= 4 and parts[2] in RANK else "core?"
    return parts[1] if parts[1] in RANK else None


def allowed(frm, to):
    """May a file of layer frm use (call or include) one of layer to?"""
    if frm == to:
        return True
    if frm not in RANK or to not in RANK:
        return False
    if RANK[to] < RANK[frm]:
        return True
    return RANK[to] == RANK[frm] and (frm, to) in SIDE_OK


def sources(root):
    out = []
    for top in ("src", "include"):
        for d, _, files in os.walk(os.path.join(root, top)):
            for f in files:
                if f.endswith((".c", ".h")):
                    out.append(os.path.join(d, f))
    return sorted(out)


def check_lines(root, files):
    bad = []
    for f in files:
        with open(f, "rb") as fh:
            n = fh.read().count(b"\n")
        if n > LIMIT_LINES:
            bad.append(f"lines: {rel(root, f)} has {n} lines (limit {LIMIT_LINES}): split it")
    return bad


def strip_c(text):
    """text with comments, string and character literals blanked (newlines kept), so a
    scan for names sees only code."""
    out = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if c == "/" and i + 1 < n and text[i + 1] == "*":
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
        elif c == "/" and i + 1 < n and text[i + 1] == "/":
            j = text.find("\n", i)
            j = n if j < 0 else j
            out.append(" " * (j - i))
            i = j
        elif c in "\"'":
            j = i + 1
            while j < n and text[j] != c and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            j = min(j + 1, n)
            out.append(c + " " * (j - i - 2) + c if j - i >= 2 else text[i:j])
            i = j
        else:
            out.append(c)
            i += 1
    return "".join(out)


IDENT = re.compile(r"\b(gpa_[A-Za-z0-9_]*)\b")


def references(text):
    """The gpa_* names a file uses: inside braces (bodies, initialisers) and in #define
    bodies; prototypes and definitions' own names (brace depth 0) are not uses."""
    refs = collections.Counter()
    depth = 0
    lines = strip_c(text).split("\n")
    k = 0
    while k < len(lines):
        line = lines[k]
        if line.lstrip().startswith("#"):
            full = line
            while full.endswith("\\") and k + 1 < len(lines):
                k += 1
                full = full[:-1] + " " + lines[k]
            m = re.match(r"\s*#\s*define\s+(\w+)(\([^)]*\))?(.*)", full)
            if m:
                refs.update(IDENT.findall(m.group(3)))
            k += 1
            continue
        pos = 0
        for m in re.finditer(r"[{}]|\bgpa_[A-Za-z0-9_]*\b", line):
            tok = m.group(0)
            if tok == "{":
                depth += 1
            elif tok == "}":
                depth = max(0, depth - 1)
            elif depth > 0:
                refs[tok] += 1
            pos = m.end()
        k += 1
    return refs


def ctags_functions(root, files):
    """{file: {name: is_file_scoped}} for every function definition ctags finds."""
    exe = shutil.which("ctags")
    if not exe:
        raise RuntimeError("ctags not found: install universal-ctags (scripts/setup.sh test)")
    ver = subprocess.run([exe, "--version"], capture_output=True, text=True).stdout
    if "Universal Ctags" not in ver:
        raise RuntimeError(f"{exe} is not Universal Ctags: install universal-ctags")
    p = subprocess.run([exe, "--output-format=json", "--languages=C", "--langmap=C:.c.h",
                        "--kinds-C=f", "--fields=+nS", "-f", "-"] + files,
                       capture_output=True, text=True)
    if p.returncode != 0:
        raise RuntimeError("ctags failed: " + p.stderr.strip())
    defs = collections.defaultdict(dict)
    for line in p.stdout.splitlines():
        t = json.loads(line)
        if t.get("_type") != "tag" or t.get("kind") != "function":
            continue
        path = t["path"] if os.path.isabs(t["path"]) else os.path.join(root, t["path"])
        # A static function in a .c file is that file's own; one in a header (static
        # inline) belongs to the header and is seen by every file that includes it.
        defs[os.path.normpath(path)][t["name"]] = "file" in t and path.endswith(".c")
    return defs


def unit_of(path, files):
    """A header and the .c of the same name beside it are one unit (the inline fast path of
    node_arena.h calls the slow path in node_arena.c, which uses the inlines): the graph's
    node is the .c then."""
    if path.endswith(".h") and path[:-2] + ".c" in files:
        return path[:-2] + ".c"
    return path


def call_graph(root, files):
    """edges[a][b] = names a uses that are defined in b (a != b; a header and its .c are one
    node, unit_of)."""
    fileset = set(files)
    defs = ctags_functions(root, files)
    glob = collections.defaultdict(list)
    for f, names in defs.items():
        for name, local in names.items():
            if not local and name.startswith("gpa_"):
                glob[name].append(f)
    edges = collections.defaultdict(lambda: collections.defaultdict(set))
    for f in files:
        with open(f, encoding="utf-8", errors="replace") as fh:
            refs = references(fh.read())
        own = defs.get(f, {})
        uf = unit_of(f, fileset)
        for name in refs:
            if name in own:
                continue
            for g in glob.get(name, ()):
                ug = unit_of(g, fileset)
                if ug != uf:
                    edges[uf][ug].add(name)
    return edges


def sccs(nodes, edges):
    """Tarjan's strongly connected components, iterative (no recursion limit)."""
    index, low, on, stack, out = {}, {}, set(), [], []
    counter = [0]
    for start in nodes:
        if start in index:
            continue
        work = [(start, iter(sorted(edges.get(start, {}))))]
        index[start] = low[start] = counter[0]
        counter[0] += 1
        stack.append(start)
        on.add(start)
        while work:
            v, it = work[-1]
            advanced = False
            for w in it:
                if w not in index:
                    index[w] = low[w] = counter[0]
                    counter[0] += 1
                    stack.append(w)
                    on.add(w)
                    work.append((w, iter(sorted(edges.get(w, {})))))
                    advanced = True
                    break
                if w in on:
                    low[v] = min(low[v], index[w])
            if advanced:
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                comp = []
                while True:
                    w = stack.pop()
                    on.discard(w)
                    comp.append(w)
                    if w == v:
                        break
                out.append(sorted(comp))
    return out


def one_cycle(comp, edges):
    """A shortest cycle through comp[0] inside the component (breadth-first)."""
    members = set(comp)
    start = comp[0]
    prev = {start: None}
    queue = collections.deque([start])
    while queue:
        v = queue.popleft()
        for w in sorted(edges.get(v, {})):
            if w not in members:
                continue
            if w == start:
                path = [v]
                while prev[path[-1]] is not None:
                    path.append(prev[path[-1]])
                return list(reversed(path)) + [start]
            if w not in prev:
                prev[w] = v
                queue.append(w)
    return comp + [start]


def check_calls(root, files):
    edges = call_graph(root, files)
    bad = []
    for comp in sccs(files, edges):
        if len(comp) < 2:
            continue
        cyc = one_cycle(comp, edges)
        steps = []
        for a, b in zip(cyc, cyc[1:]):
            names = sorted(edges[a][b])
            more = f" (+{len(names) - 3} more)" if len(names) > 3 else ""
            steps.append(f"  {rel(root, a)} -> {rel(root, b)}: {', '.join(names[:3])}{more}")
        bad.append(f"calls: cycle among {len(comp)} files: "
                   + " -> ".join(rel(root, c) for c in cyc) + "\n" + "\n".join(steps))
        if len(comp) > len(cyc) - 1:
            bad[-1] += "\n  (component also holds: " + ", ".join(
                rel(root, c) for c in comp if c not in cyc) + ")"
    for a in sorted(edges):
        la = layer_of(rel(root, a))
        for b in sorted(edges[a]):
            lb = layer_of(rel(root, b))
            if la is None or lb is None or allowed(la, lb):
                continue
            names = ", ".join(sorted(edges[a][b]))
            bad.append(f"calls: {rel(root, a)} ({la}) calls {rel(root, b)} ({lb}), "
                       f"a layer it may not call: {names}")
    return bad


INCLUDE = re.compile(r'^\s*#\s*include\s*([<"])([^>"]+)[>"]', re.M)


def resolve_include(root, frm, kind, name):
    cands = []
    if kind == '"':
        cands.append(os.path.join(os.path.dirname(frm), name))
    cands += [os.path.join(root, "src", "core", name), os.path.join(root, "include", name),
              os.path.join(root, "src", name)]
    for c in cands:
        if os.path.isfile(c):
            return os.path.normpath(c)
    return None


def check_includes(root, files):
    bad = []
    for f in files:
        rf = rel(root, f)
        lf = layer_of(rf)
        if lf is None:
            continue
        if lf in ("?", "core?"):
            bad.append(f"includes: {rf} is in no known layer: add it to a layer folder "
                       "(or a public header to PUBLIC in test/arch/check_layers.py)")
            continue
        with open(f, encoding="utf-8", errors="replace") as fh:
            text = fh.read()
        for m in INCLUDE.finditer(text):
            kind, name = m.group(1), m.group(2)
            if kind == "<" and not name.startswith("gpu_admission/"):
                continue  # system and third-party headers
            h = resolve_include(root, f, kind, name)
            if h is None:
                continue
            lh = layer_of(rel(root, h))
            if lh is None or lh in ("?", "core?"):
                continue  # reported for the header itself
            if not allowed(lf, lh):
                bad.append(f"includes: {rf} ({lf}) includes {rel(root, h)} ({lh}), "
                           "a layer above it")
    return bad


def check_symbols(libs):
    bad = []
    nm = shutil.which("nm")
    if not nm:
        raise RuntimeError("nm not found (binutils)")
    for lib in libs:
        p = subprocess.run([nm, "-g", "--defined-only", lib], capture_output=True, text=True)
        if p.returncode != 0:
            raise RuntimeError(f"nm {lib} failed: {p.stderr.strip()}")
        member = os.path.basename(lib)
        for line in p.stdout.splitlines():
            if line.endswith(":") and " " not in line:
                member = line[:-1]
                continue
            parts = line.split()
            if len(parts) < 2:
                continue
            sym = parts[-1]
            if not sym.startswith("gpa_"):
                bad.append(f"symbols: {os.path.basename(lib)}({member}) exports {sym}: "
                           "prefix it gpa_ or make it static")
    return bad


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--src", required=True, help="the source tree (holds src/ and include/)")
    ap.add_argument("--check", action="append",
                    choices=["lines", "calls", "includes", "symbols"],
                    help="run only these checks (repeatable; default: all)")
    ap.add_argument("libs", nargs="*", help="static libraries for the symbols check")
    a = ap.parse_args()
    root = os.path.abspath(a.src)
    files = sources(root)
    if not files:
        print(f"check_layers: no sources under {root}/src", file=sys.stderr)
        return 2
    checks = a.check or ["lines", "calls", "includes", "symbols"]
    bad = []
    try:
        for c in checks:
            if c == "lines":
                bad += check_lines(root, files)
            elif c == "calls":
                bad += check_calls(root, files)
            elif c == "includes":
                bad += check_includes(root, files)
            elif c == "symbols":
                if not a.libs:
                    print("check_layers: symbols needs library paths", file=sys.stderr)
                    return 2
                bad += check_symbols(a.libs)
    except RuntimeError as e:
        print(f"check_layers: {e}", file=sys.stderr)
        return 2
    for b in bad:
        print(b)
    print(f"check_layers: {', '.join(checks)}: {len(files)} files, "
          f"{len(bad)} problem(s)")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
