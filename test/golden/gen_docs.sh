#!/usr/bin/env bash
# gen_docs.sh - docs/policy-examples.md is generated from the golden cases that carry a
# `doc:` title, so the examples cannot drift from what the engine does.
#   gen_docs.sh RUNNER [WORKLOADS_RUNNER [CLAIMS_RUNNER]]          rewrite docs/policy-examples.md
#   gen_docs.sh --check RUNNER [WORKLOADS_RUNNER [CLAIMS_RUNNER]]  fail when the committed file
#                                                                  differs (a ctest)
# WORKLOADS_RUNNER (default: golden_workloads next to RUNNER) appends the workload cases'
# section (test/golden/workloads), CLAIMS_RUNNER (default: golden_claims) the DRA claims'
# (test/golden/claims).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
check=0
if [ "${1:-}" = --check ]; then check=1; shift; fi
runner=$1
workloads=${2:-$(dirname "$runner")/golden_workloads}
claims=${3:-$(dirname "$runner")/golden_claims}
tmp=$(mktemp)
trap 'rm -f "$tmp"' EXIT
"$runner" --docs "$here/cases" "$here/policies" "$here/docs-header.md" >"$tmp"
"$workloads" --docs "$here/workloads" "$here/policies" >>"$tmp"
"$claims" --docs "$here/claims" "$here/policies" >>"$tmp"
if [ $check = 1 ]; then
  if ! diff -u "$root/docs/policy-examples.md" "$tmp"; then
    echo "docs/policy-examples.md is stale: run test/golden/gen_docs.sh BUILD/test/golden/golden_runner" >&2
    exit 1
  fi
  echo "docs/policy-examples.md matches the golden cases"
else
  cp "$tmp" "$root/docs/policy-examples.md"
fi
