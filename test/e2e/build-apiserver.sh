#!/usr/bin/env bash
# build-apiserver.sh - build kube-apiserver, kube-controller-manager and kube-scheduler v1.20.2
# from Debian 12's own `kubernetes` source package, for the end-to-end tests, and cache them.
#
# Must never: touch /etc/apt or the system's apt lists (it uses a private sources list and a
# private lists dir), download anything but Debian's source package, leave a half-built binary
# where a later run would take it for a finished one, or report success without every binary.
#
# Usage: build-apiserver.sh            builds if needed; the LAST stdout line is the bin dir
# Env:   GPA_E2E_CACHE   cache root (default /var/cache/gpu-admission-e2e, or
#                        ~/.cache/gpu-admission-e2e when that is not writable)
#        GPA_E2E_JOBS    go build -p (default 2: the test machines have 2 shared cores)
#
# Cache layout (all outside the source tree):
#   $CACHE/k8s-v1.20.2-<script hash>/bin/{kube-apiserver,kube-controller-manager,kube-scheduler,BUILD-INFO}
#   $CACHE/src/     Debian source package files (.dsc, .orig.tar.gz, .debian.tar.xz)
#   $CACHE/gocache/ Go build cache (makes a rebuild after a script change take ~1 min)
#   $CACHE/apt/     private sources list + apt lists
# The key includes this script's hash, so editing the recipe rebuilds; older keys are pruned.
set -euo pipefail

K8S_VERSION=v1.20.2
DEB_VERSION=1.20.5+really1.20.2-1.1+deb12u1
REFLECT2_DEB=/usr/share/gocode/src/github.com/modern-go/reflect2

log() { echo "build-apiserver: $*" >&2; }
die() { log "ERROR: $*"; exit 1; }

cache=${GPA_E2E_CACHE:-/var/cache/gpu-admission-e2e}
if ! mkdir -p "$cache" 2>/dev/null || [ ! -w "$cache" ]; then
  cache=${XDG_CACHE_HOME:-$HOME/.cache}/gpu-admission-e2e
  mkdir -p "$cache" || die "cannot create a cache directory ($cache)"
fi
jobs=${GPA_E2E_JOBS:-2}
script_hash=$(sha256sum "${BASH_SOURCE[0]}" | cut -c1-12)
key="k8s-${K8S_VERSION}-${script_hash}"
out="$cache/$key"
bin="$out/bin"

have_binaries() {
  [ -x "$bin/kube-apiserver" ] && [ -x "$bin/kube-controller-manager" ] &&
    [ -x "$bin/kube-scheduler" ] && [ -f "$bin/BUILD-INFO" ]
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
if have_binaries; then # another run finished it while we waited
  log "cached: $bin"
  echo "$bin"
  exit 0
fi

for tool in go apt-get dpkg-source sha256sum flock; do
  command -v "$tool" >/dev/null || die "'$tool' not found: run scripts/setup.sh test (needs golang-go dpkg-dev)"
done
[ -f "$REFLECT2_DEB/reflect2.go" ] || die "$REFLECT2_DEB missing: install golang-github-modern-go-reflect2-dev"
go_ver=$(go env GOVERSION)
log "using $go_ver, cache $cache, key $key"
t_start=$(date +%s)

# --- 1. Debian's source package, via a private apt configuration ---------------------------
src="$cache/src"
aptdir="$cache/apt"
mkdir -p "$src" "$aptdir/lists/partial"
cat >"$aptdir/sources.list" <<'EOF'
deb-src [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] http://deb.debian.org/debian bookworm main
deb-src [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] http://deb.debian.org/debian bookworm-updates main
deb-src [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] http://deb.debian.org/debian-security bookworm-security main
EOF
apt_opts=(-o "Dir::Etc::sourcelist=$aptdir/sources.list" -o "Dir::Etc::sourceparts=-"
          -o "Dir::State::Lists=$aptdir/lists" -o "Dir::Cache::pkgcache=" -o "Dir::Cache::srcpkgcache="
          -o "APT::Sandbox::User=root")
dsc="$src/kubernetes_${DEB_VERSION}.dsc"
if [ ! -f "$dsc" ]; then
  log "fetching Debian source package kubernetes=$DEB_VERSION"
  apt-get "${apt_opts[@]}" -qq update >&2 || die "apt-get update (private deb-src list) failed"
  (cd "$src" && apt-get "${apt_opts[@]}" -qq source --download-only "kubernetes=$DEB_VERSION" >&2) ||
    die "apt-get source kubernetes=$DEB_VERSION failed"
  [ -f "$dsc" ] || die "apt-get source did not produce $dsc"
fi

# --- 2. unpack into a GOPATH (Kubernetes 1.20 builds in GOPATH mode) -----------------------
work="$cache/work"
rm -rf "$work"
gopath="$work/gopath"
tree="$gopath/src/k8s.io/kubernetes"
mkdir -p "$(dirname "$tree")"
log "unpacking (dpkg-source -x, checks the .dsc checksums, applies Debian's patches)"
dpkg-source -q -x "$dsc" "$tree" >/dev/null 2>"$work.dpkg-source.log" ||
  { cat "$work.dpkg-source.log" >&2; die "dpkg-source -x failed"; }
[ -f "$tree/cmd/kube-apiserver/apiserver.go" ] || die "unexpected tree: no cmd/kube-apiserver"

export GOPATH="$gopath" GO111MODULE=off GOPROXY=off GOFLAGS= CGO_ENABLED=0
export GOCACHE="$cache/gocache"
cd "$tree"

# reflect2 1.0.1 (vendored) breaks at run time on Go >= 1.18; Debian's 1.0.2 is a drop-in.
log "replacing vendor/github.com/modern-go/reflect2 with Debian's $(basename "$REFLECT2_DEB") 1.0.2"
rm -rf vendor/github.com/modern-go/reflect2
mkdir -p vendor/github.com/modern-go/reflect2
cp -L "$REFLECT2_DEB"/*.go "$REFLECT2_DEB"/*.s vendor/github.com/modern-go/reflect2/

# --- 3. pkg/generated/openapi (not in the tarball), the way Makefile.generated_files does it --
log "building openapi-gen"
go build -p "$jobs" -o "$work/openapi-gen" ./vendor/k8s.io/kube-openapi/cmd/openapi-gen
# Every dir with .go files (staging named as vendor/, real vendor/ excluded), files carrying a
# `// +k8s:` tag, those mentioning +k8s:openapi-gen=, minus code-generator and sample-apiserver.
mapfile -t openapi_dirs < <(
  find -H . \( -path ./_\* -o -path ./.\* -o -path ./vendor \) -prune -o -type f -name '*.go' -print |
    sed -e 's|^\./staging/src|vendor|' -e 's|^\./||' -e 's|/[^/]*$||' | LC_ALL=C sort -u |
    sed 's|$|/|' | xargs sh -c 'find "$@" -maxdepth 1 -type f -name "*.go"' find |
    xargs grep --color=never -l '^// *+k8s:' |
    grep -v -E '^vendor/k8s.io/(code-generator|sample-apiserver)/' |
    xargs grep --color=never -l '+k8s:openapi-gen=' | xargs -n1 dirname | LC_ALL=C sort -u)
[ "${#openapi_dirs[@]}" -ge 60 ] || die "found only ${#openapi_dirs[@]} openapi-gen packages"
log "generating pkg/generated/openapi from ${#openapi_dirs[@]} packages"
inputs=$(printf 'k8s.io/kubernetes/%s,' "${openapi_dirs[@]}")
"$work/openapi-gen" --logtostderr -v 0 -i "${inputs%,}" \
  -p k8s.io/kubernetes/pkg/generated/openapi -O zz_generated.openapi \
  -h vendor/k8s.io/code-generator/hack/boilerplate.go.txt \
  -r "$work/KUBE_violations.report" 2>"$work/openapi-gen.log" ||
  { tail -20 "$work/openapi-gen.log" >&2; die "openapi-gen failed"; }
[ -s pkg/generated/openapi/zz_generated.openapi.go ] || die "openapi-gen wrote no zz_generated.openapi.go"
# Upstream's own fidelity check: the rule-violation report must equal the checked-in list.
diff -q "$work/KUBE_violations.report" api/api-rules/violation_exceptions.list >/dev/null ||
  die "openapi-gen's violation report differs from api/api-rules/violation_exceptions.list (wrong inputs?)"

# --- 4. the binaries ---------------------------------------------------------------------------
ldflags="-s -w"
for kv in gitVersion=$K8S_VERSION gitMajor=1 gitMinor=20 gitTreeState=clean \
          gitCommit=debian-$DEB_VERSION buildDate=1970-01-01T00:00:00Z; do
  ldflags+=" -X k8s.io/kubernetes/vendor/k8s.io/component-base/version.$kv"
  ldflags+=" -X k8s.io/kubernetes/vendor/k8s.io/client-go/pkg/version.$kv"
done
rm -rf "$out"
mkdir -p "$out/bin.tmp"
log "go build -p $jobs kube-apiserver kube-controller-manager kube-scheduler (cold: ~14 min of CPU, 7+ min on 2 idle cores)"
t_go=$(date +%s)
timecmd=()
[ -x /usr/bin/time ] && timecmd=(/usr/bin/time -f 'go build: %e s wall, max RSS %M KB' -o "$work/go-build.time")
"${timecmd[@]}" go build -p "$jobs" -trimpath -ldflags "$ldflags" -o "$out/bin.tmp/" \
  ./cmd/kube-apiserver ./cmd/kube-controller-manager ./cmd/kube-scheduler >&2 || die "go build failed"
t_end=$(date +%s)
for b in kube-apiserver kube-controller-manager kube-scheduler; do
  "$out/bin.tmp/$b" --version 2>/dev/null | grep -q "Kubernetes $K8S_VERSION" ||
    die "$b --version does not report $K8S_VERSION"
done
{
  echo "kubernetes $K8S_VERSION from Debian source package kubernetes=$DEB_VERSION"
  echo "go: $go_ver (GOPATH mode, CGO_ENABLED=0, -trimpath)"
  echo "reflect2: Debian golang-github-modern-go-reflect2-dev $(dpkg-query -W -f='${Version}' golang-github-modern-go-reflect2-dev 2>/dev/null || echo '?')"
  echo "openapi-gen packages: ${#openapi_dirs[@]}"
  echo "script hash: $script_hash"
  echo "built: $(date -u +%FT%TZ) in $((t_end - t_start)) s total, go build $((t_end - t_go)) s"
  [ -f "$work/go-build.time" ] && cat "$work/go-build.time"
  (cd "$out/bin.tmp" && sha256sum kube-apiserver kube-controller-manager kube-scheduler)
} >"$out/bin.tmp/BUILD-INFO"
mv "$out/bin.tmp" "$bin"
cat "$bin/BUILD-INFO" >&2

# The unpacked tree (~1 GB with generated files) is not needed again; the Go cache is.
cd /
rm -rf "$work" "$work.dpkg-source.log"
for old in "$cache"/k8s-*; do
  [ "$old" = "$out" ] || rm -rf "$old"
done
log "done in $((t_end - t_start)) s: $bin"
echo "$bin"
