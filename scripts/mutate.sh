#!/usr/bin/env bash
# mutate.sh - every mutant of test/mutation/mutants.txt, one at a time, in a scratch copy of
# this tree (default /tmp/gpa-mutation-$UID; the tree itself is never edited). Ends with
# "mutation: N passed, M failed" (killed = passed; survived, stale, broken = failed) and exits
# non-zero on any of those. Extra arguments go to the runner (--only ID, --tree HEAD, --list).
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
exec python3 "$root/test/mutation/mutate.py" --src "$root" "$@"
