#!/usr/bin/env bash
# run.sh - the README's first command: install build dependencies, build, make development
# certificates once, and start the webhook server on 127.0.0.1 with the shipped policies.
#   scripts/run.sh [extra serve flags...]
# HTTPS webhook on 127.0.0.1:8443, metrics/probes on 127.0.0.1:9090. Ctrl-C drains for 5 s and
# exits (a second Ctrl-C exits at once). Try it from another shell (docs/operations.md):
#   curl -s --cacert certs/dev/ca.crt -H 'Content-Type: application/json' \
#     --data @test/integration/reviews/training-pod.json https://127.0.0.1:8443/mutate
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"

scripts/setup.sh build
cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build build -j "$(nproc)" --target gpu-admission

if [ ! -f certs/dev/tls.crt ] || [ ! -f certs/dev/tls.key ]; then
  # caBundle goes to stdout; nothing needs it for a local run.
  build/gpu-admission certs --service gpu-admission --namespace gpu-admission --out certs/dev \
    --san localhost --san 127.0.0.1 >/dev/null
fi

# Optional glibc tuning (docs/operations.md): a bigger per-thread malloc cache, fewer
# instructions per admission request.
export GLIBC_TUNABLES="${GLIBC_TUNABLES:+$GLIBC_TUNABLES:}glibc.malloc.tcache_count=1000"
exec build/gpu-admission serve --policies policies --cert-dir certs/dev \
  --listen 127.0.0.1:8443 --metrics-listen 127.0.0.1:9090 "$@"
