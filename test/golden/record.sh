#!/usr/bin/env bash
# record.sh - writes the engine's current decision into a case's expect block. ONLY for a
# human who then reviews the diff line by line (git diff): a golden file is a claim about
# what is right, not a snapshot of whatever the code does.
#   record.sh RUNNER CASE-NAME...
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
runner=$1; shift
for name in "$@"; do
  f="$here/cases/$name/case.yaml"
  out=$("$runner" "$here/cases" "$here/policies" --record "$name" | grep -v ' golden cases, ')
  sed -i '/^expect:/,$d' "$f"
  printf '%s\n' "$out" >>"$f"
done
