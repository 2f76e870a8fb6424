#!/usr/bin/env bash
# run-e2e-scheduler.sh - the `e2e/scheduler` ctest: builds (or takes from the cache) the
# Kubernetes v1.20.2 binaries, kube-scheduler included, then runs e2e_scheduler.py: the
# simulator's placements checked against the real scheduler on fake GPU nodes.
#
# Must never: skip. A failed build, a missing tool or a failed check is a failed test.
#
# Usage: run-e2e-scheduler.sh GPU_ADMISSION_BINARY SOURCE_DIR WORK_DIR
set -euo pipefail
[ $# -ge 3 ] || { echo "usage: $0 GPU_ADMISSION_BINARY SOURCE_DIR WORK_DIR" >&2; exit 2; }
gpa=$1 src=$2 work=$3
shift 3
here=$(cd "$(dirname "$0")" && pwd)
export PATH="$src/.deps/bin:$PATH"

t0=$(date +%s)
if ! bin=$("$here/build-apiserver.sh" | tail -1) || [ ! -x "$bin/kube-scheduler" ]; then
  echo "e2e: FAIL building the Kubernetes binaries (see the build-apiserver lines above)"
  exit 1
fi
echo "e2e: Kubernetes binaries ready in $(($(date +%s) - t0)) s: $bin"
exec python3 "$here/e2e_scheduler.py" --k8s-bin "$bin" --gpu-admission "$gpa" --source-dir "$src" \
  --work "$work" "$@"
