#!/usr/bin/env bash
# build-kube.sh - build the control plane the end-to-end tests run on: kube-apiserver,
# kube-controller-manager, kube-scheduler and kubectl v1.37.2 from the k8s.io/kubernetes Go
# module (a kubectl of the server's own version: the .deps one is 1.34, beyond the skew), and
# an etcd v3.6 server from go.etcd.io/etcd/server/v3, with plain `go build` (CGO_ENABLED=0).
# Binaries are cached by version outside the source tree, so a warm run builds nothing.
#
# Why a wrapper module: k8s.io/kubernetes names its staging modules (k8s.io/api, ...) at
# v0.0.0 with replaces into ./staging, and a dependency's replaces are ignored; the wrapper in
# kube-build/kube/ pins each at its published v0.37.2. etcd's own module keeps local replaces
# too, so `go install go.etcd.io/etcd/...@v3.6` is refused; kube-build/etcd/ is a main that
# calls etcdmain. Both go.sum files are committed: the module proxy's bytes are checked
# against them (-mod=readonly), so a changed upstream zip fails the build instead of running.
#
# Must never: use a Go other than /usr/local/go (Debian's golang-go is older than the 1.26
# these modules declare; GOTOOLCHAIN=local forbids a toolchain download), write into the
# source tree, leave a half-built binary where a later run would take it for a finished one,
# or report success without every binary answering --version with the pinned version.
#
# Usage: build-kube.sh            builds if needed; the LAST stdout line is the bin dir
# Env:   GPA_E2E_CACHE   cache root (default /var/cache/gpu-admission-e2e, or
#                        ~/.cache/gpu-admission-e2e when that is not writable)
#        GPA_E2E_JOBS    go build -p (default 2: the test machines have 2 shared cores)
#        GPA_GOROOT      the Go 1.26 installation (default /usr/local/go)
#
# Cache layout:
#   $CACHE/kube-v1.37.2-etcd-v3.6.17-<recipe hash>/bin/  the four binaries and BUILD-INFO
#   $CACHE/gomod/     Go module cache (downloaded once; ~0.7 GB)
#   $CACHE/gocache/   Go build cache (a rebuild after a recipe change is mostly link time)
# The key hashes this script and kube-build/, so editing the recipe rebuilds; older keys go.
set -euo pipefail

K8S_VERSION=v1.37.2
ETCD_VERSION=v3.6.17
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)

log() { echo "build-kube: $*" >&2; }
die() { log "ERROR: $*"; exit 1; }

cache=${GPA_E2E_CACHE:-/var/cache/gpu-admission-e2e}
if ! mkdir -p "$cache" 2>/dev/null || [ ! -w "$cache" ]; then
  cache=${XDG_CACHE_HOME:-$HOME/.cache}/gpu-admission-e2e
  mkdir -p "$cache" || die "cannot create a cache directory ($cache)"
fi
jobs=${GPA_E2E_JOBS:-2}
recipe_hash=$(cat "${BASH_SOURCE[0]}" "$here"/kube-build/*/go.mod "$here"/kube-build/*/go.sum \
  "$here"/kube-build/etcd/main.go | sha256sum | cut -c1-12)
key="kube-${K8S_VERSION}-etcd-${ETCD_VERSION}-${recipe_hash}"
out="$cache/$key"
bin="$out/bin"
binaries=(kube-apiserver kube-controller-manager kube-scheduler kubectl etcd)

have_binaries() {
  local b
  for b in "${binaries[@]}"; do [ -x "$bin/$b" ] || return 1; done
  [ -f "$bin/BUILD-INFO" ]
}

if have_binaries; then
  log "cached: $bin"
  echo "$bin"
  exit 0
fi

# One build at a time per cache (two ctest runs, or two engineers, on one machine).
exec 9>"$cache/.lock"
log "waiting for the build lock $cache/.lock"
flock 9
if have_binaries; then
  log "cached: $bin"
  echo "$bin"
  exit 0
fi

goroot=${GPA_GOROOT:-/usr/local/go}
[ -x "$goroot/bin/go" ] || die "no Go at $goroot (set GPA_GOROOT to a Go >= 1.26 installation)"
export GOROOT="$goroot" PATH="$goroot/bin:$PATH" GOTOOLCHAIN=local CGO_ENABLED=0
export GOFLAGS="-mod=readonly -modcacherw" GOMODCACHE="$cache/gomod" GOCACHE="$cache/gocache"
go_ver=$(go env GOVERSION)
case "$go_ver" in
  go1.2[6-9]* | go1.[3-9][0-9]*) ;;
  *) die "$goroot/bin/go is $go_ver; Kubernetes $K8S_VERSION needs go1.26 or newer" ;;
esac
log "using $go_ver, cache $cache, key $key"
t_start=$(date +%s)

# The modules are built from a scratch copy: go may write nothing into the source tree.
work="$cache/work"
rm -rf "$work" "$out"
mkdir -p "$work" "$out/bin.tmp"
cp -r "$here/kube-build/kube" "$here/kube-build/etcd" "$work/"

log "downloading modules (first run: ~0.7 GB into $GOMODCACHE)"
t_dl=$(date +%s)
(cd "$work/kube" && go mod download) >&2 || die "go mod download (kube) failed"
(cd "$work/etcd" && go mod download) >&2 || die "go mod download (etcd) failed"
t_dl=$(($(date +%s) - t_dl))

ldflags="-s -w"
for kv in gitVersion=$K8S_VERSION gitMajor=1 gitMinor=37 gitTreeState=clean \
          gitCommit=module-k8s.io/kubernetes@$K8S_VERSION buildDate=1970-01-01T00:00:00Z; do
  ldflags+=" -X k8s.io/component-base/version.$kv -X k8s.io/client-go/pkg/version.$kv"
done
timecmd=()
[ -x /usr/bin/time ] && timecmd=(/usr/bin/time -a -f '%C: %e s wall, max RSS %M KB' -o "$work/go-build.time")
log "go build -p $jobs kube-apiserver kube-controller-manager kube-scheduler kubectl"
t_go=$(date +%s)
(cd "$work/kube" && "${timecmd[@]}" go build -p "$jobs" -trimpath -ldflags "$ldflags" \
  -o "$out/bin.tmp/" k8s.io/kubernetes/cmd/kube-apiserver \
  k8s.io/kubernetes/cmd/kube-controller-manager k8s.io/kubernetes/cmd/kube-scheduler \
  k8s.io/kubernetes/cmd/kubectl) >&2 ||
  die "go build (kubernetes) failed"
log "go build etcd $ETCD_VERSION"
(cd "$work/etcd" && "${timecmd[@]}" go build -p "$jobs" -trimpath -ldflags \
  "-s -w -X go.etcd.io/etcd/api/v3/version.GitSHA=module-$ETCD_VERSION" \
  -o "$out/bin.tmp/etcd" .) >&2 || die "go build (etcd) failed"
t_end=$(date +%s)

for b in kube-apiserver kube-controller-manager kube-scheduler; do
  "$out/bin.tmp/$b" --version 2>/dev/null | grep -qx "Kubernetes $K8S_VERSION" ||
    die "$b --version does not report $K8S_VERSION"
done
"$out/bin.tmp/kubectl" version --client 2>/dev/null | grep -qx "Client Version: $K8S_VERSION" ||
  die "kubectl version --client does not report $K8S_VERSION"
"$out/bin.tmp/etcd" --version 2>/dev/null | grep -q "^etcd Version: ${ETCD_VERSION#v}$" ||
  die "etcd --version does not report ${ETCD_VERSION#v}"
{
  echo "kubernetes $K8S_VERSION from the Go module k8s.io/kubernetes@$K8S_VERSION (staging modules v0.37.2)"
  echo "etcd $ETCD_VERSION from go.etcd.io/etcd/server/v3@$ETCD_VERSION (etcdmain)"
  echo "go: $go_ver (module mode, -mod=readonly against the committed go.sum, CGO_ENABLED=0, -trimpath)"
  echo "recipe hash: $recipe_hash"
  echo "built: $(date -u +%FT%TZ) in $((t_end - t_start)) s total: modules $t_dl s, go build $((t_end - t_go)) s"
  [ -f "$work/go-build.time" ] && cat "$work/go-build.time"
  echo "disk: module cache $(du -sh "$GOMODCACHE" | cut -f1), build cache $(du -sh "$GOCACHE" | cut -f1)"
  (cd "$out/bin.tmp" && sha256sum "${binaries[@]}")
} >"$out/bin.tmp/BUILD-INFO"
mv "$out/bin.tmp" "$bin"
cat "$bin/BUILD-INFO" >&2

cd /
rm -rf "$work"
# Older keys, and what the 1.20.2 recipe (Debian's source package) left: k8s-*, src/, apt/.
for old in "$cache"/kube-* "$cache"/k8s-* "$cache/src" "$cache/apt"; do
  if [ -e "$old" ] && [ "$old" != "$out" ]; then rm -rf "$old"; fi
done
log "done in $((t_end - t_start)) s: $bin"
echo "$bin"
