"""clitest.py - what every `gpu-admission <command>` test script shares (python3 stdlib only):
the --bin/--src arguments, check() counting checks and failures, running one subcommand, and
the closing "N checks, M failed" line whose exit status ctest reads.

A script keeps going after a failed check so one run reports every broken behaviour, not the
first; finish() is what turns any failure into a non-zero exit.
"""
import argparse
import os
import subprocess
import sys

checks = 0
failures = 0


def parse_args(*optional):
    """--bin GPU_ADMISSION --src SOURCE_DIR (both made absolute), plus the optional flags named."""
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", required=True)
    ap.add_argument("--src", required=True)
    for name in optional:
        ap.add_argument(name)
    a = ap.parse_args()
    a.bin, a.src = os.path.abspath(a.bin), os.path.abspath(a.src)
    return a


def check(cond, what):
    global failures, checks
    checks += 1
    if not cond:
        failures += 1
        print("FAIL:", what, file=sys.stderr)


def runner(binary, command):
    """A function running `binary command ARGV...` -> (exit code, stdout, stderr) as text."""

    def run(*argv, stdin=None, cwd=None):
        p = subprocess.run([binary, command, *argv], input=stdin, capture_output=True,
                           text=True, cwd=cwd, timeout=120)
        return p.returncode, p.stdout, p.stderr

    return run


def finish():
    print("%d checks, %d failed" % (checks, failures))
    sys.exit(1 if failures else 0)
