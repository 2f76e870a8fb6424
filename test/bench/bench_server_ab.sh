#!/usr/bin/env bash
# bench_server_ab.sh - is B cheaper than A per request? Interleaved pairs of wrk runs against
# two webhook setups (binaries, reviews or serve flags), with the mean difference and its
# standard error. On a shared VM the host's speed drifts by 20-40% within minutes, so one run
# of A followed by one of B says nothing about a change of a few microseconds; alternating
# them, pair after pair, puts the drift into the noise of the difference where it can be
# measured. Prints figures; it is not a timed test.
#
#   test/bench/bench_server_ab.sh [--a BIN] [--b BIN] [--review-a FILE] [--review-b FILE]
#                                 [--args-a "FLAGS"] [--args-b "FLAGS"] [--pairs N]
#                                 [--duration S] [--connections N] [--policies DIR] [--short]
#
# Each run starts a fresh `serve` (default flags plus --args-*), warms it up with 1 s of wrk,
# then measures DURATION seconds (default 5) of `wrk -t1 -cN` (default 32) POSTing the review
# (default test/bench/gpu-pod-review.json) to /mutate, and takes the server's CPU per request
# from /proc/PID/stat. Pairs alternate their order (A B, B A, ...) so a steady drift of the
# host weighs on both sides alike. A and B default to the same setup: an A/A run shows how
# large a difference this host produces by itself.
# --short (the ctest entry): two pairs of 1-second runs that only check the script works:
# every run answered, all 2xx, no socket errors. Never fails on the figures themselves.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
. "$here/bench_lib.sh"
bin_a="$root/build/gpu-admission"
bin_b=
review_a="$here/gpu-pod-review.json"
review_b=
args_a=
args_b=
pairs=10
duration=5
conns=32
policies="$root/policies"
while [ $# -gt 0 ]; do
  case "$1" in
    --a) bin_a=$2; shift 2 ;;
    --b) bin_b=$2; shift 2 ;;
    --review-a) review_a=$2; shift 2 ;;
    --review-b) review_b=$2; shift 2 ;;
    --args-a) args_a=$2; shift 2 ;;
    --args-b) args_b=$2; shift 2 ;;
    --pairs) pairs=$2; shift 2 ;;
    --duration) duration=$2; shift 2 ;;
    --connections) conns=$2; shift 2 ;;
    --policies) policies=$2; shift 2 ;;
    --short) pairs=2; duration=1; shift ;;
    *) echo "bench_server_ab: unknown argument $1" >&2; exit 1 ;;
  esac
done
bin_b=${bin_b:-$bin_a}
review_b=${review_b:-$review_a}
case "$pairs" in
  '' | *[!0-9]* | 0 | 1) echo "bench_server_ab: --pairs needs a whole number of at least 2" >&2; exit 1 ;;
esac
command -v wrk >/dev/null || { echo "bench_server_ab: wrk not installed (Debian package wrk)" >&2; exit 1; }
for f in "$bin_a" "$bin_b"; do
  [ -x "$f" ] || { echo "bench_server_ab: no binary at $f (--a/--b)" >&2; exit 1; }
done
for f in "$review_a" "$review_b"; do
  [ -r "$f" ] || { echo "bench_server_ab: cannot read review $f" >&2; exit 1; }
done

work=$(mktemp -d /tmp/gpa-bench-ab.XXXXXX)
bench_pid=
cleanup() {
  if [ -n "$bench_pid" ] && kill -0 "$bench_pid" 2>/dev/null; then
    kill -KILL "$bench_pid" 2>/dev/null || true
    wait "$bench_pid" 2>/dev/null || true
  fi
  rm -rf "$work"
}
trap cleanup EXIT INT TERM

bench_certs "$bin_a" "$work/certs"
bench_post_lua "$review_a" "$work/a.lua"
bench_post_lua "$review_b" "$work/b.lua"
tck=$(getconf CLK_TCK)

# run SIDE: one fresh server, warm-up, one measured wrk run; writes "CPU_US RPS BAD" to
# $work/result.SIDE, BAD = non-2xx responses + socket errors. Not run in a subshell, so
# cleanup() always knows the live server.
run() {
  local side=$1 bin args
  if [ "$side" = a ]; then bin=$bin_a args=$args_a; else bin=$bin_b args=$args_b; fi
  # Word splitting of the flags string is the point: "--threads 1 --log-level warn".
  # shellcheck disable=SC2086
  if ! bench_serve "$bin" "$policies" "$work/certs" "$work/server.$side.log" $args; then
    echo "bench_server_ab: server $side did not start" >&2
    cat "$work/server.$side.log" >&2
    return 1
  fi
  local url="https://127.0.0.1:$bench_port/mutate"
  wrk -t1 -c"$conns" -d1s -s "$work/$side.lua" "$url" >/dev/null 2>&1 || true
  local t0 t1
  t0=$(bench_cpu_ticks "$bench_pid")
  wrk -t1 -c"$conns" -d"${duration}s" -s "$work/$side.lua" "$url" >"$work/wrk.$side.txt" 2>&1 || true
  t1=$(bench_cpu_ticks "$bench_pid")
  # KILL, not TERM: a graceful stop would hold each run for --shutdown-grace (5 s).
  kill -KILL "$bench_pid" 2>/dev/null || true
  wait "$bench_pid" 2>/dev/null || true
  bench_pid=
  awk -v a="$t0" -v b="$t1" -v t="$tck" '
    /requests in/ { n = $1 }
    /^Requests\/sec:/ { rps = $2 }
    /Non-2xx or 3xx responses:/ { bad += $5 }
    /Socket errors:/ { for (i = 3; i <= NF; i++) if ($i ~ /^[0-9]+,?$/) bad += $i + 0 }
    END { if (n > 0) printf "%.2f %.0f %d\n", (b - a) * 1e6 / t / n, rps, bad; else print "nan 0 0" }
  ' "$work/wrk.$side.txt" >"$work/result.$side"
}

describe() { # SIDE BIN REVIEW ARGS
  echo "  $1: $2, review $(basename "$3") ($(wc -c <"$3") B), serve flags: ${4:-(defaults)}"
}
echo "interleaved A/B: $pairs pairs of ${duration}s wrk runs, -t1 -c$conns keep-alive HTTPS POST /mutate"
describe A "$bin_a" "$review_a" "$args_a"
describe B "$bin_b" "$review_b" "$args_b"
: >"$work/pairs.txt"
failed=0
for i in $(seq 1 "$pairs"); do
  if [ $((i % 2)) = 1 ]; then order="a b"; else order="b a"; fi
  started=$(date -u +%H:%M:%S)
  for side in $order; do
    run "$side" || exit 1
  done
  read -r ua ra bad_a <"$work/result.a"
  read -r ub rb bad_b <"$work/result.b"
  [ "$ua" != nan ] && [ "$ub" != nan ] && [ "$bad_a" = 0 ] && [ "$bad_b" = 0 ] || failed=1
  printf "  pair %2d (%s first, %s UTC): A %6s us/request %6s req/s   B %6s us/request %6s req/s\n" \
    "$i" "$(echo "${order%% *}" | tr ab AB)" "$started" "$ua" "$ra" "$ub" "$rb"
  echo "$ua $ub $ra $rb" >>"$work/pairs.txt"
done
if [ "$failed" != 0 ]; then
  echo "bench_server_ab: a run served no requests, answered non-2xx or had socket errors" >&2
  exit 1
fi

# Mean of each side, mean of the per-pair differences B - A and its standard error
# (sample standard deviation / sqrt(pairs)); a difference under two standard errors is
# reported as not shown.
awk '
  { a[NR] = $1; b[NR] = $2; ra += $3; rb += $4; d = $2 - $1; sd += d; dd[NR] = d }
  END {
    n = NR; m = sd / n; v = 0
    for (i = 1; i <= n; i++) v += (dd[i] - m) ^ 2
    se = sqrt(v / (n - 1)) / sqrt(n)
    for (i = 1; i <= n; i++) { sa += a[i]; sb += b[i] }
    printf "  A mean %.1f us/request, %.0f req/s\n", sa / n, ra / n
    printf "  B mean %.1f us/request, %.0f req/s\n", sb / n, rb / n
    printf "  B - A: %+.2f us/request, standard error %.2f (%d pairs): ", m, se, n
    if (se > 0 && (m > 2 * se || m < -2 * se)) printf "B is %s\n", (m < 0 ? "cheaper" : "more expensive")
    else printf "no difference shown (within two standard errors)\n"
  }' "$work/pairs.txt"
