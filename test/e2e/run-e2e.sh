#!/usr/bin/env bash
# run-e2e.sh - the `e2e/apiserver` ctest: builds (or takes from the cache) kube-apiserver and
# kube-controller-manager v1.20.2, then runs the scenarios of run_e2e.py against them.
#
# Must never: skip. A failed build, a missing tool or a failed scenario is a failed test.
#
# Usage: run-e2e.sh GPU_ADMISSION_BINARY SOURCE_DIR WORK_DIR [run_e2e.py flags, e.g. --only mig-rewrite]
set -euo pipefail
[ $# -ge 3 ] || { echo "usage: $0 GPU_ADMISSION_BINARY SOURCE_DIR WORK_DIR [flags]" >&2; exit 2; }
gpa=$1 src=$2 work=$3
shift 3
here=$(cd "$(dirname "$0")" && pwd)
export PATH="$src/.deps/bin:$PATH"

t0=$(date +%s)
if ! bin=$("$here/build-apiserver.sh" | tail -1) || [ ! -x "$bin/kube-apiserver" ]; then
  echo "e2e: FAIL building kube-apiserver (see the build-apiserver lines above)"
  exit 1
fi
echo "e2e: kube-apiserver binaries ready in $(($(date +%s) - t0)) s: $bin"
exec python3 "$here/run_e2e.py" --k8s-bin "$bin" --gpu-admission "$gpa" --source-dir "$src" \
  --work "$work" "$@"
