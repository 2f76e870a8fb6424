#!/usr/bin/env python3
"""test_check_layers.py - check_layers.py must fail on what it is there to catch.

Copies src/ and include/ to a scratch directory, plants one of each problem (two files that
call each other, a core file calling a layer above, a file of 901 lines, an upward include,
a server file including a tools header, a library exporting an unprefixed symbol) and checks
the checker fails and names each one, and that none of them is reported on the copy before
planting. Never writes into the source tree.
"""
import argparse
import os
import shutil
import subprocess
import sys
import tempfile

FAILS = 0


def expect(cond, what):
    global FAILS
    if not cond:
        FAILS += 1
        print("FAIL:", what)
    else:
        print("ok:", what)


def run(checker, src, checks, libs=()):
    cmd = [sys.executable, checker, "--src", src]
    for c in checks:
        cmd += ["--check", c]
    p = subprocess.run(cmd + list(libs), capture_output=True, text=True)
    return p.returncode, p.stdout + p.stderr


def write(root, rel, text):
    path = os.path.join(root, rel)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        f.write(text)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--checker", required=True)
    ap.add_argument("--src", required=True)
    ap.add_argument("--cc", default=os.environ.get("CC", "cc"))
    ap.add_argument("--ar", default="ar")
    a = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="arch-") as tmp:
        for d in ("src", "include"):
            shutil.copytree(os.path.join(a.src, d), os.path.join(tmp, d))
        checks = ["lines", "calls", "includes"]
        _, before = run(a.checker, tmp, checks)

        write(tmp, "src/core/util/planted_a.c",
              "int gpa_planted_b(int);\nint gpa_planted_a(int x)\n{\n"
              "    return x ? gpa_planted_b(x - 1) : 0;\n}\n")
        write(tmp, "src/core/util/planted_b.c",
              "int gpa_planted_a(int);\nint gpa_planted_b(int x)\n{\n"
              "    return x ? gpa_planted_a(x - 1) : 1;\n}\n")
        write(tmp, "src/core/format/planted_up.c",
              "#include <stddef.h>\nstruct gpa_eng;\nint gpa_eng_finish(struct gpa_eng *, void *);\n"
              "int gpa_planted_up(void)\n{\n    return gpa_eng_finish(NULL, NULL);\n}\n")
        write(tmp, "src/core/k8s/planted_big.c",
              "/* planted */\n" + "int gpa_planted_big_x;\n" * 900)
        write(tmp, "src/core/util/planted_inc.c", '#include "engine/engine_internal.h"\n')
        write(tmp, "src/server/planted_srv.c", '#include "gpu_admission/judge.h"\n')
        rc, after = run(a.checker, tmp, checks)
        print(after)
        new = [l for l in after.splitlines() if l not in before.splitlines()]
        expect(rc == 1, "the checker exits 1 on the planted tree")
        expect(any("cycle" in l and "planted_a.c" in l and "planted_b.c" in l for l in new),
               "the planted cycle is named with both files")
        expect(any("gpa_planted_b" in l for l in new), "the cycle names the call")
        expect(any("planted_up.c (format) calls" in l and "engine_decision.c" in l
                   and "gpa_eng_finish" in l for l in new), "the upward call is named")
        expect(any(l.startswith("lines: src/core/k8s/planted_big.c has 901 lines")
                   for l in new), "the 901-line file is named")
        expect(any("planted_inc.c (util) includes src/core/engine/engine_internal.h" in l
                   for l in new), "the upward include is named")
        expect(any("planted_srv.c (server) includes include/gpu_admission/judge.h (tools)"
                   in l for l in new), "server including a tools header is named")
        expect(not any("planted" in l for l in before), "nothing planted before planting")

        # The symbols check on a library holding one unprefixed and one prefixed symbol.
        obj, lib = os.path.join(tmp, "bad.o"), os.path.join(tmp, "libbad.a")
        write(tmp, "bad.c", "int planted_bad_symbol(void) { return 1; }\n"
              "int gpa_planted_good(void) { return 2; }\n"
              "static int planted_static(void) { return 3; }\n"
              "int gpa_planted_uses(void) { return planted_static(); }\n")
        cc = subprocess.run([a.cc, "-c", "-o", obj, os.path.join(tmp, "bad.c")],
                            capture_output=True, text=True)
        ar = cc.returncode == 0 and subprocess.run([a.ar, "rcs", lib, obj],
                                                   capture_output=True).returncode == 0
        expect(ar, f"a scratch library builds ({cc.stderr.strip()})")
        if ar:
            rc, out = run(a.checker, tmp, ["symbols"], [lib])
            print(out)
            expect(rc == 1, "the symbols check exits 1")
            expect("libbad.a(bad.o) exports planted_bad_symbol" in out,
                   "the unprefixed symbol is named with its library and object")
            expect("gpa_planted_good" not in out and "planted_static" not in out,
                   "prefixed and static symbols are not reported")
    print(f"test_check_layers: {FAILS} failure(s)")
    return 1 if FAILS else 0


if __name__ == "__main__":
    sys.exit(main())
