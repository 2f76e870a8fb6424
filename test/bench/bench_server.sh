#!/usr/bin/env bash
# bench_server.sh - throughput, latency and cost of `gpu-admission serve` over keep-alive
# HTTPS, as the API server would drive it, on this machine (server and load generator share
# its cores). Prints figures for docs/performance.md; it is not a timed test.
#
#   test/bench/bench_server.sh [--bin PATH] [--policies DIR] [--duration S]
#                              [--connections N] [--handshakes N] [--short] [--reference]
#                              [--floor] [--floor-bin PATH] [--threads N] [--repeat N]
#
# Measures: requests/s and p99 latency (wrk -t1 -cN --latency, POSTing a 3.6 KB GPU pod
# AdmissionReview to /mutate), server CPU per request (utime+stime from /proc/PID/stat over
# the run / requests), the server threads' context switches per request, server RSS after
# the run (VmRSS), and the server CPU of one full TLS
# handshake with the default ECDSA P-256 certificate (openssl s_time -new: fresh handshakes,
# no resumption, as the API server does at rollout time). A second wrk run POSTs a DELETE
# review the codec answers without running the engine: the cost of the server path alone.
# It also prints wrk's own CPU per request: wrk shares the 2 cores, so its cost bounds what
# any server can reach here. --reference (needs nginx installed; not part of the test deps)
# runs the same wrk load against nginx answering every POST with a constant body of the same
# size as the webhook's answer, with the same certificate: the ceiling of this machine for a
# server that does no work at all. --floor (also part of --reference) runs the same load
# against bench_mhd_floor: libmicrohttpd + GnuTLS with the webhook listener's own settings,
# answering a constant of the same size - the floor of the mandated HTTP stack, so the
# webhook's figure minus this one is what the review work costs in place.
# --threads N starts the webhook with N worker threads (default: its own default); the floor
# always runs with as many as the webhook reported.
# --repeat N runs the whole bench N times back to back, prints each run, then a summary:
# min / median / max of every figure, the verdicts taken on the median. On a shared VM one
# 10-second window can land on a slow moment of the host; the median of several does not
# hinge on one.
# --short (the ctest entry): a 2-second run that only checks the bench works: every response
# 2xx, no socket errors, handshakes measured. Never fails on the figures themselves.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
. "$here/bench_lib.sh"
bin="$root/build/gpu-admission"
policies="$root/policies"
duration=10
conns=32
handshakes_time=5
short=0
reference=0
floor=0
floor_bin="$root/build/test/bench/bench_mhd_floor"
threads=()
repeat=1
orig=("$@")
while [ $# -gt 0 ]; do
  case "$1" in
    --bin) bin=$2; shift 2 ;;
    --policies) policies=$2; shift 2 ;;
    --duration) duration=$2; shift 2 ;;
    --connections) conns=$2; shift 2 ;;
    --handshakes) handshakes_time=$2; shift 2 ;;
    --short) short=1; duration=2; handshakes_time=1; shift ;;
    --reference) reference=1; floor=1; shift ;;
    --floor) floor=1; shift ;;
    --floor-bin) floor_bin=$2; shift 2 ;;
    --threads) threads=(--threads "$2"); shift 2 ;;
    --repeat) repeat=$2; shift 2 ;;
    *) echo "bench_server: unknown argument $1" >&2; exit 1 ;;
  esac
done
case "$repeat" in
  '' | *[!0-9]* | 0) echo "bench_server: --repeat needs a positive whole number" >&2; exit 1 ;;
esac
if [ "$repeat" -gt 1 ]; then
  [ "$short" = 0 ] || { echo "bench_server: --repeat does not go with --short" >&2; exit 1; }
  # Run this script N times without --repeat, then summarise the lines it printed.
  pass=()
  skip=0
  for a in "${orig[@]}"; do
    if [ "$skip" = 1 ]; then skip=0; continue; fi
    if [ "$a" = --repeat ]; then skip=1; continue; fi
    pass+=("$a")
  done
  runs=$(mktemp -d /tmp/gpa-bench-repeat.XXXXXX)
  trap 'rm -rf "$runs"' EXIT
  for i in $(seq 1 "$repeat"); do
    echo "--- run $i of $repeat ($(date -u +%H:%M:%S) UTC, load $(cut -d' ' -f1 /proc/loadavg))"
    "$0" "${pass[@]}" | tee "$runs/$i.txt"
  done
  echo "=== summary of $repeat runs: min / median / max (verdict on the median)"
  # Section-qualified keys: the same label appears under the webhook, DELETE, floor, nginx.
  cat "$runs"/*.txt | awk -v n="$repeat" '
    /^server path alone/ { sec = "DELETE: " ; next }
    /^floor:/ { sec = "floor: "; next }
    /^reference:/ { sec = "nginx: "; next }
    /^wrk -t1/ { sec = "" ; next }
    /^  [a-zA-Z]/ {
      line = substr($0, 3)
      if (!match(line, /  +/)) next
      label = substr(line, 1, RSTART - 1); rest = substr(line, RSTART + RLENGTH)
      split(rest, f, " "); v = f[1]
      if (v !~ /^[0-9.]+$/) next
      k = sec label
      if (!(k in cnt)) { order[++nk] = k; tgt[k] = "" }
      vals[k, ++cnt[k]] = v + 0
      if (f[2] == "target") tgt[k] = f[3] " " f[4]
    }
    END {
      for (i = 1; i <= nk; i++) {
        k = order[i]; m = cnt[k]
        for (a = 1; a <= m; a++) s[a] = vals[k, a]
        for (a = 1; a <= m; a++) for (b = a + 1; b <= m; b++) if (s[b] < s[a]) { t = s[a]; s[a] = s[b]; s[b] = t }
        med = (m % 2) ? s[(m + 1) / 2] : (s[m / 2] + s[m / 2 + 1]) / 2
        verdict = ""
        if (tgt[k] != "") {
          split(tgt[k], g, " ")
          ok = (g[1] == ">=") ? (med >= g[2]) : (med <= g[2])
          verdict = "target " g[1] " " g[2] "  " (ok ? "ok" : "MISSED")
        }
        printf "  %-42s %10g %10g %10g   %s\n", k, s[1], med, s[m], verdict
      }
    }'
  exit 0
fi

for tool in wrk openssl; do
  command -v $tool >/dev/null || { echo "bench_server: $tool not installed (Debian package $tool)" >&2; exit 1; }
done
[ -x "$bin" ] || { echo "bench_server: no binary at $bin (--bin)" >&2; exit 1; }

work=$(mktemp -d /tmp/gpa-bench-server.XXXXXX)
pid=
ngx=
fpid=
cleanup() {
  if [ -n "$fpid" ] && kill -0 "$fpid" 2>/dev/null; then kill -KILL "$fpid" 2>/dev/null || true; wait "$fpid" 2>/dev/null || true; fi
  if [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null; then kill -KILL "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; fi
  if [ -n "$ngx" ] && kill -0 "$ngx" 2>/dev/null; then kill -TERM "$ngx" 2>/dev/null || true; wait "$ngx" 2>/dev/null || true; fi
  rm -rf "$work"
}
trap cleanup EXIT INT TERM

bench_certs "$bin" "$work/certs"
review="$here/gpu-pod-review.json"

ok=1
bench_serve "$bin" "$policies" "$work/certs" "$work/server.log" "${threads[@]}" || ok=0
pid=$bench_pid
[ "$ok" = 1 ] || { echo "bench_server: server did not start" >&2; cat "$work/server.log" >&2; exit 1; }
port=$bench_port
mport=$bench_mport
bench_post_lua "$review" "$work/post.lua"

tck=$(getconf CLK_TCK)
cpu_ticks() { bench_cpu_ticks "$pid"; }
rss_kb() { awk '/^VmRSS:/ {print $2}' "/proc/$pid/status"; }
# Voluntary + involuntary context switches of all the server's threads: how often a worker
# went to sleep in poll() or was pushed off its core by wrk. Runs where the 32 connections
# land on both worker threads switch ~50 times more (~0.15 per request) than runs where one
# thread happens to hold them all (~0.003): printed so that two runs that differ in this can
# be told apart from two runs that differ in the host's speed.
ctx_switches() { cat /proc/"$pid"/task/*/status 2>/dev/null | awk '/ctxt_switches:/ {s += $2} END {print s + 0}'; }

# Warm-up (connections, allocator, page cache), then the measured run.
wrk -t1 -c"$conns" -d1s -s "$work/post.lua" "https://127.0.0.1:$port/mutate" >/dev/null 2>&1 || true
# wrk_timed OUT URL LUA: one measured wrk run; wrk's own user+sys seconds go to OUT.cpu.
wrk_timed() {
  local TIMEFORMAT='%U %S'
  { time wrk -t1 -c"$conns" -d"${duration}s" --latency -s "$3" "$2" >"$1" 2>&1; } 2>"$1.cpu"
}
per_req_us() { awk -v f="$1" -v n="$2" 'BEGIN { getline l < f; split(l, t, " "); if (n > 0) printf "%.1f", (t[1] + t[2]) * 1e6 / n; else print "nan" }'; }
t0=$(cpu_ticks)
x0=$(ctx_switches)
wrk_timed "$work/wrk.txt" "https://127.0.0.1:$port/mutate" "$work/post.lua"
t1=$(cpu_ticks)
x1=$(ctx_switches)
rss=$(rss_kb)

requests=$(awk '/requests in/ {print $1}' "$work/wrk.txt")
rps=$(awk '/^Requests\/sec:/ {print $2}' "$work/wrk.txt")
p50=$(awk '$1 == "50%" {print $2}' "$work/wrk.txt")
p99=$(awk '$1 == "99%" {print $2}' "$work/wrk.txt")
non2xx=$(awk '/Non-2xx or 3xx responses:/ {print $5}' "$work/wrk.txt")
sockerr=$(grep -c 'Socket errors' "$work/wrk.txt" || true)
cpu_us=$(awk -v a="$t0" -v b="$t1" -v t="$tck" -v n="$requests" 'BEGIN { if (n > 0) printf "%.1f", (b - a) * 1e6 / t / n; else print "nan" }')
wrk_us=$(per_req_us "$work/wrk.txt.cpu" "$requests")
cs_per_req=$(awk -v a="$x0" -v b="$x1" -v n="$requests" 'BEGIN { if (n > 0) printf "%.3f", (b - a) / n; else print "nan" }')
answer_bytes=$(curl -sk -X POST -H 'Content-Type: application/json' --data-binary @"$review" \
  "https://127.0.0.1:$port/mutate" | wc -c)

# The same over a review the codec answers without the engine (DELETE, no object): what the
# server path itself (TLS, HTTP, glue, codec parse) costs per request.
sed "s#$review#$here/delete-pod-review.json#" "$work/post.lua" >"$work/delete.lua"
d0=$(cpu_ticks)
wrk_timed "$work/wrk-delete.txt" "https://127.0.0.1:$port/mutate" "$work/delete.lua"
d1=$(cpu_ticks)
drequests=$(awk '/requests in/ {print $1}' "$work/wrk-delete.txt")
drps=$(awk '/^Requests\/sec:/ {print $2}' "$work/wrk-delete.txt")
dp99=$(awk '$1 == "99%" {print $2}' "$work/wrk-delete.txt")
dnon2xx=$(awk '/Non-2xx or 3xx responses:/ {print $5}' "$work/wrk-delete.txt")
dcpu_us=$(awk -v a="$d0" -v b="$d1" -v t="$tck" -v n="$drequests" 'BEGIN { if (n > 0) printf "%.1f", (b - a) * 1e6 / t / n; else print "nan" }')
dwrk_us=$(per_req_us "$work/wrk-delete.txt.cpu" "$drequests")

# Full handshakes: openssl s_time -new (no session reuse), server CPU / handshakes.
h0=$(cpu_ticks)
openssl s_time -connect "127.0.0.1:$port" -new -time "$handshakes_time" \
  -CAfile "$work/certs/ca.crt" >"$work/stime.txt" 2>&1 || true
h1=$(cpu_ticks)
hs=$(awk '/connections in [0-9.]+ real seconds/ {print $1; exit}' "$work/stime.txt")
hs=${hs:-0}
hs_us=$(awk -v a="$h0" -v b="$h1" -v t="$tck" -v n="$hs" 'BEGIN { if (n > 0) printf "%.0f", (b - a) * 1e6 / t / n; else print "nan" }')

mutated=$(curl -s "http://127.0.0.1:$mport/metrics" 2>/dev/null | awk '/^gpu_admission_requests_total\{webhook="mutate",operation="CREATE",result="mutated"\}/ {print $2}')

kill -TERM "$pid"
wait "$pid" 2>/dev/null || true
pid=

verdict() { awk -v v="$1" -v lim="$2" -v dir="$3" 'BEGIN { if (v == "nan" || v == "") print "?"; else if ((dir == "min" && v + 0 >= lim + 0) || (dir == "max" && v + 0 <= lim + 0)) print "ok"; else print "MISSED" }'; }
ms() { awk -v s="$1" 'BEGIN { if (s ~ /us$/) printf "%.3f", s / 1000; else if (s ~ /ms$/) printf "%.3f", s + 0; else if (s ~ /s$/) printf "%.3f", s * 1000; else print "nan" }'; }
p99ms=$(ms "$p99")
rss_mb=$(awk -v k="$rss" 'BEGIN { printf "%.1f", k / 1024 }')

echo "gpu-admission serve on $(nproc) cores, $(awk -F: '/model name/ {print $2; exit}' /proc/cpuinfo | sed 's/^ *//')"
nthreads=$(grep -o '"threads":[0-9]*' "$work/server.log" | head -1 | cut -d: -f2)
echo "wrk -t1 -c$conns -d${duration}s keep-alive HTTPS POST /mutate, $(wc -c <"$review") B review, server --threads $nthreads"
printf "  %-34s %12s   target %-10s %s\n" "requests/s" "$rps" ">= 30000" "$(verdict "$rps" 30000 min)"
printf "  %-34s %12s   target %-10s %s\n" "p99 latency (ms)" "$p99ms" "<= 5" "$(verdict "$p99ms" 5 max)"
printf "  %-34s %12s\n" "p50 latency" "$p50"
printf "  %-34s %12s   target %-10s %s\n" "server CPU per request (us)" "$cpu_us" "<= 30" "$(verdict "$cpu_us" 30 max)"
printf "  %-34s %12s   target %-10s %s\n" "server RSS after the run (MB)" "$rss_mb" "<= 16" "$(verdict "$rss_mb" 16 max)"
printf "  %-34s %12s   target %-10s %s\n" "full TLS handshake, server CPU (us)" "$hs_us" "<= 1000" "$(verdict "$hs_us" 1000 max)"
printf "  %-34s %12s\n" "handshakes measured" "$hs"
printf "  %-34s %12s\n" "wrk's own CPU per request (us)" "$wrk_us"
printf "  %-34s %12s\n" "server context switches / request" "$cs_per_req"
printf "  %-34s %12s\n" "answer size (B)" "$answer_bytes"
printf "  %-34s %12s\n" "requests (wrk)" "$requests"
printf "  %-34s %12s\n" "non-2xx responses" "${non2xx:-0}"
echo "server path alone (DELETE review: codec answers without the engine), same wrk settings"
printf "  %-34s %12s\n" "requests/s" "$drps"
printf "  %-34s %12s\n" "p99 latency (ms)" "$(ms "$dp99")"
printf "  %-34s %12s\n" "server CPU per request (us)" "$dcpu_us"
printf "  %-34s %12s\n" "wrk's own CPU per request (us)" "$dwrk_us"

# reference_run NAME PID URL TITLE: the measured wrk load against another server process;
# prints its figures and leaves its CPU per request in ref_us_NAME.
reference_run() {
  local name=$1 rpid=$2 url=$3 title=$4
  wrk -t1 -c"$conns" -d1s -s "$work/post.lua" "$url" >/dev/null 2>&1 || true
  local r0 r1 nreq
  r0=$(bench_cpu_ticks "$rpid")
  wrk_timed "$work/wrk-$name.txt" "$url" "$work/post.lua"
  r1=$(bench_cpu_ticks "$rpid")
  nreq=$(awk '/requests in/ {print $1}' "$work/wrk-$name.txt")
  local us
  us=$(awk -v a="$r0" -v b="$r1" -v t="$tck" -v n="$nreq" 'BEGIN { if (n > 0) printf "%.1f", (b - a) * 1e6 / t / n; else print "nan" }')
  printf -v "ref_us_$name" '%s' "$us"
  printf -v "ref_req_$name" '%s' "${nreq:-0}"
  echo "$title"
  printf "  %-34s %12s\n" "requests/s" "$(awk '/^Requests\/sec:/ {print $2}' "$work/wrk-$name.txt")"
  printf "  %-34s %12s\n" "p99 latency (ms)" "$(ms "$(awk '$1 == "99%" {print $2}' "$work/wrk-$name.txt")")"
  printf "  %-34s %12s\n" "$name CPU per request (us)" "$us"
  printf "  %-34s %12s\n" "wrk's own CPU per request (us)" "$(per_req_us "$work/wrk-$name.txt.cpu" "$nreq")"
  printf "  %-34s %12s\n" "non-2xx responses" "$(awk '/Non-2xx or 3xx responses:/ {print $5}' "$work/wrk-$name.txt" | grep . || echo 0)"
}

# The mandated stack's floor: libmicrohttpd + GnuTLS with the webhook listener's settings,
# answering a constant body as large as the webhook's answer (it reads the request body
# into memory as the webhook does, then answers without looking at it).
ref_req_floor=0
if [ "$floor" = 1 ]; then
  if [ ! -x "$floor_bin" ]; then
    echo "floor: no bench_mhd_floor at $floor_bin (--floor-bin); skipped"
  else
    "$floor_bin" --cert-dir "$work/certs" --answer-bytes "${answer_bytes:-2104}" \
      --threads "${nthreads:-1}" >"$work/floor.out" 2>"$work/floor.err" &
    fpid=$!
    fport=
    for _ in $(seq 1 100); do
      fport=$(awk '/^port / {print $2}' "$work/floor.out" 2>/dev/null || true)
      [ -n "$fport" ] && break
      kill -0 "$fpid" 2>/dev/null || break
      sleep 0.05
    done
    if [ -z "$fport" ]; then
      echo "floor: bench_mhd_floor did not start"; cat "$work/floor.err" || true
    else
      reference_run floor "$fpid" "https://127.0.0.1:$fport/mutate" \
        "floor: libmicrohttpd + GnuTLS alone (bench_mhd_floor: the webhook listener's settings, ${nthreads} threads, constant ${answer_bytes}-byte answer), same wrk settings"
      printf "  %-34s %12s\n" "webhook minus floor (us)" "$(awk -v a="$cpu_us" -v b="$ref_us_floor" 'BEGIN { if (a == "nan" || b == "nan") print "nan"; else printf "%.1f", a - b }')"
    fi
    kill -TERM "$fpid" 2>/dev/null || true
    wait "$fpid" 2>/dev/null || true
    fpid=
  fi
fi

# The machine's ceiling: nginx, one worker, same certificate, same wrk load, answering each
# POST with a constant body as large as the webhook's answer (it reads and decrypts the
# request body but does nothing with it).
if [ "$reference" = 1 ]; then
  nginx_bin=$(command -v nginx || echo /usr/sbin/nginx)
  if [ ! -x "$nginx_bin" ]; then
    echo "reference: nginx not installed (apt-get install nginx-light); skipped"
  else
    nport=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
    mkdir -p "$work/nginx"
    body=$(head -c "${answer_bytes:-1500}" /dev/zero | tr '\0' x)
    cat >"$work/nginx/nginx.conf" <<NGX
worker_processes 1;
daemon off;
pid $work/nginx/nginx.pid;
error_log $work/nginx/error.log;
events { worker_connections 1024; }
http {
  access_log off;
  client_body_temp_path $work/nginx;
  keepalive_requests 100000000;
  client_body_buffer_size 16k;
  server {
    listen 127.0.0.1:$nport ssl;
    ssl_certificate $work/certs/tls.crt;
    ssl_certificate_key $work/certs/tls.key;
    ssl_protocols TLSv1.3;
    location / { default_type application/json; return 200 '$body'; }
  }
}
NGX
    "$nginx_bin" -e "$work/nginx/error.log" -c "$work/nginx/nginx.conf" &
    ngx=$!
    nw=
    for _ in $(seq 1 100); do
      nw=$(pgrep -P "$ngx" 2>/dev/null | head -1 || true)
      [ -n "$nw" ] && curl -sk -o /dev/null "https://127.0.0.1:$nport/" && break
      sleep 0.05
    done
    if [ -z "$nw" ]; then
      echo "reference: nginx did not start"; cat "$work/nginx/error.log" || true
    else
      reference_run nginx "$nw" "https://127.0.0.1:$nport/mutate" \
        "reference: nginx $("$nginx_bin" -v 2>&1 | sed 's#.*/##'), 1 worker, constant ${answer_bytes}-byte answer, same wrk settings"
    fi
    kill -TERM "$ngx" 2>/dev/null || true
    wait "$ngx" 2>/dev/null || true
    ngx=
  fi
fi

if [ "$short" = 1 ]; then
  fail=0
  [ "${requests:-0}" -gt 0 ] || { echo "bench_server: no requests completed" >&2; fail=1; }
  [ -z "$non2xx" ] || { echo "bench_server: $non2xx non-2xx responses" >&2; fail=1; }
  [ -z "$dnon2xx" ] && [ "${drequests:-0}" -gt 0 ] ||
    { echo "bench_server: DELETE run: ${drequests:-0} requests, ${dnon2xx:-0} non-2xx" >&2; fail=1; }
  [ "$sockerr" = 0 ] || { echo "bench_server: socket errors: $(grep 'Socket errors' "$work/wrk.txt")" >&2; fail=1; }
  [ "$hs" -gt 0 ] || { echo "bench_server: no handshakes measured" >&2; cat "$work/stime.txt" >&2; fail=1; }
  # the server counted (at least) what wrk says it got back
  awk -v m="${mutated:-0}" -v r="$requests" 'BEGIN { exit !(m + 0 >= r + 0) }' ||
    { echo "bench_server: server counted $mutated mutated requests, wrk $requests" >&2; fail=1; }
  if [ "$floor" = 1 ]; then
    [ "$ref_req_floor" -gt 0 ] || { echo "bench_server: the floor run completed no requests" >&2; fail=1; }
    ! grep -q 'Non-2xx' "$work/wrk-floor.txt" 2>/dev/null ||
      { echo "bench_server: floor run: $(grep 'Non-2xx' "$work/wrk-floor.txt")" >&2; fail=1; }
  fi
  exit $fail
fi
