#!/usr/bin/env bash
# kubectl_check.sh - applies every golden patch with the real kubectl (`kubectl patch --local
# --type=json`, no cluster involved) and checks the result equals the pod the engine
# produced (decision.mutated, itself checked against the case's expectation and against
# gpa_patch_apply). Proves the API server's JSON Patch implementation accepts our patches.
#   kubectl_check.sh RUNNER CASES POLICIES WORKDIR FALLBACK_BIN_DIR
set -euo pipefail
runner=$1 cases=$2 policies=$3 work=$4 fallback=$5
export PATH="$fallback:$PATH"  # the pinned v1.34 first
if ! command -v kubectl >/dev/null; then
  echo "kubectl not found (run scripts/setup.sh test)" >&2
  exit 1
fi
rm -rf "$work"
mkdir -p "$work"
"$runner" "$cases" "$policies" --emit "$work" >/dev/null
n=0 bad=0
for dir in "$work"/*/; do
  [ -f "$dir/patch.json" ] || continue
  n=$((n + 1))
  if ! kubectl patch --local -f "$dir/pod.json" --type=json -p "$(cat "$dir/patch.json")" \
       -o json >"$dir/kubectl.json" 2>"$dir/kubectl.err"; then
    echo "FAIL $(basename "$dir"): kubectl rejected the patch: $(cat "$dir/kubectl.err")" >&2
    bad=$((bad + 1))
    continue
  fi
  if ! "$runner" --compare "$dir/kubectl.json" "$dir/expected.json"; then
    echo "FAIL $(basename "$dir"): kubectl's result differs from the engine's" >&2
    bad=$((bad + 1))
  fi
done
echo "$n patches applied with $(kubectl version --client 2>/dev/null | head -1), $bad failed"
[ "$n" -gt 0 ] && [ "$bad" -eq 0 ]
