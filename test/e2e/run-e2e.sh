#!/usr/bin/env bash
# run-e2e.sh - the e2e ctests: builds (or takes from the cache) the Kubernetes v1.37.2 binaries
# (kube-apiserver, kube-controller-manager, kube-scheduler) and etcd v3.6 with build-kube.sh,
# then runs a driver against them:
# run_e2e.py (e2e/apiserver, e2e/workloads with --suite workloads), or e2e_scheduler.py with
# --scheduler first (e2e/scheduler; it checks for kube-scheduler itself).
#
# Must never: skip. A failed build, a missing tool or a failed scenario is a failed test.
#
# Usage: run-e2e.sh [--scheduler] GPU_ADMISSION_BINARY SOURCE_DIR WORK_DIR [driver flags,
#        e.g. --only mig-rewrite]
set -euo pipefail
driver=run_e2e.py
if [ "${1:-}" = --scheduler ]; then
  driver=e2e_scheduler.py
  shift
fi
[ $# -ge 3 ] || { echo "usage: $0 [--scheduler] GPU_ADMISSION_BINARY SOURCE_DIR WORK_DIR [flags]" >&2; exit 2; }
gpa=$1 src=$2 work=$3
shift 3
here=$(cd "$(dirname "$0")" && pwd)
export PATH="$src/.deps/bin:$PATH"

t0=$(date +%s)
if ! bin=$("$here/build-kube.sh" | tail -1) || [ ! -x "$bin/kube-apiserver" ]; then
  echo "e2e: FAIL building the Kubernetes binaries (see the build-kube lines above)"
  exit 1
fi
echo "e2e: Kubernetes binaries ready in $(($(date +%s) - t0)) s: $bin"
exec python3 "$here/$driver" --k8s-bin "$bin" --gpu-admission "$gpa" --source-dir "$src" \
  --work "$work" "$@"
