#!/usr/bin/env bash
# bench_server_instr.sh - user-space instructions per webhook request, counted by callgrind.
#
#   test/bench/bench_server_instr.sh [--bin PATH] [--policies DIR] [--requests N]
#                                    [--floor-bin PATH] [--review FILE]
#
# bench_server.sh's CPU-time figures move by 20-40% with the load on the host (a shared VM);
# instruction counts do not. This runs `gpu-admission serve --threads 1` under callgrind with
# instrumentation off, warms one keep-alive connection up (handshake + 50 requests), counts
# exactly N more requests (default 500) on it, and prints instructions per request in total
# and per library for the 3.6 KB GPU pod review on /mutate (--review FILE: another review in
# its place, on the first and third lines) and for a DELETE review (the server path without
# the engine). Kernel time (syscalls, loopback TCP) is not in these
# counts. libc's share includes libmicrohttpd zeroing its per-connection
# memory pool after every request: callgrind counts each byte of that `rep stosb` as one
# instruction, so it weighs ~16,000 here and well under a microsecond in time.
# A third line counts the same GPU review against bench_mhd_floor (libmicrohttpd + GnuTLS with
# the webhook listener's settings, constant answer; default build/test/bench/bench_mhd_floor,
# skipped when absent): what the HTTP stack alone costs, the rest is the review work.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
. "$here/bench_lib.sh"
bin="$root/build/gpu-admission"
policies="$root/policies"
count=500
floor_bin="$root/build/test/bench/bench_mhd_floor"
review="$here/gpu-pod-review.json"
while [ $# -gt 0 ]; do
  case "$1" in
    --bin) bin=$2; shift 2 ;;
    --policies) policies=$2; shift 2 ;;
    --requests) count=$2; shift 2 ;;
    --floor-bin) floor_bin=$2; shift 2 ;;
    --review) review=$2; shift 2 ;;
    *) echo "bench_server_instr: unknown argument $1" >&2; exit 1 ;;
  esac
done
for tool in python3 valgrind callgrind_control callgrind_annotate; do
  command -v $tool >/dev/null || { echo "bench_server_instr: $tool not installed" >&2; exit 1; }
done
[ -x "$bin" ] || { echo "bench_server_instr: no binary at $bin (--bin)" >&2; exit 1; }
[ -r "$review" ] || { echo "bench_server_instr: cannot read review $review (--review)" >&2; exit 1; }

work=$(mktemp -d /tmp/gpa-bench-instr.XXXXXX)
vpid=
cleanup() {
  if [ -n "$vpid" ] && kill -0 "$vpid" 2>/dev/null; then kill -KILL "$vpid" 2>/dev/null || true; wait "$vpid" 2>/dev/null || true; fi
  rm -rf "$work"
}
trap cleanup EXIT INT TERM

bench_certs "$bin" "$work/certs"

# One keep-alive connection: the handshake and warm-up stay outside the counted window,
# which holds exactly $count requests, each checked for HTTP 200.
cat >"$work/client.py" <<'PY'
import http.client, ssl, subprocess, sys
port, body_file, pid, count = int(sys.argv[1]), sys.argv[2], sys.argv[3], int(sys.argv[4])
body = open(body_file, "rb").read()
ctx = ssl.create_default_context()
ctx.check_hostname, ctx.verify_mode = False, ssl.CERT_NONE
c = http.client.HTTPSConnection("127.0.0.1", port, context=ctx, timeout=60)
def one():
    c.request("POST", "/mutate", body, {"Content-Type": "application/json"})
    r = c.getresponse()
    r.read()
    if r.status != 200:
        sys.exit("HTTP %d" % r.status)
for _ in range(50):
    one()
subprocess.run(["callgrind_control", "-i", "on", pid], check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
for _ in range(count):
    one()
subprocess.run(["callgrind_control", "-i", "off", pid], check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
subprocess.run(["callgrind_control", "-d", pid], check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
PY

# measure NAME BODY: one server under callgrind, one counted window, one report line.
measure() {
  local name=$1 body=$2 out="$work/cg.$1"
  if [ "$name" = floor ]; then
    valgrind --tool=callgrind --instr-atstart=no --callgrind-out-file="$out" \
      "$floor_bin" --cert-dir "$work/certs" --threads 1 >"$work/server.$name.log" 2>&1 &
  else
    valgrind --tool=callgrind --instr-atstart=no --callgrind-out-file="$out" \
      "$bin" serve --threads 1 --policies "$policies" --cert-dir "$work/certs" \
      --listen 127.0.0.1:0 --metrics-listen 127.0.0.1:0 2>"$work/server.$name.log" &
  fi
  vpid=$!
  local port=
  for _ in $(seq 1 600); do
    port=$( (grep -o '"listen_port":[0-9]*' "$work/server.$name.log" 2>/dev/null | head -1 | cut -d: -f2
      awk '/^port / {print $2}' "$work/server.$name.log" 2>/dev/null) | head -1 || true)
    [ -n "$port" ] && break
    kill -0 "$vpid" 2>/dev/null || { cat "$work/server.$name.log" >&2; exit 1; }
    sleep 0.1
  done
  [ -n "$port" ] || { echo "bench_server_instr: server did not start" >&2; exit 1; }
  python3 "$work/client.py" "$port" "$body" "$vpid" "$count" ||
    { echo "bench_server_instr: the $name client failed" >&2; exit 1; }
  kill -TERM "$vpid" 2>/dev/null || true
  wait "$vpid" 2>/dev/null || true
  vpid=
  # The dump taken right after the counted window is the one with that window in it.
  local dump
  dump=$(ls -S "$out"* | head -1)
  callgrind_annotate --inclusive=no "$dump" 2>/dev/null | awk -v n="$count" -v name="$name" '
    /PROGRAM TOTALS/ { t = $1; gsub(",", "", t) }
    /^ *[0-9,]+ \(/ && /\]$/ {
      v = $1; gsub(",", "", v); match($0, /\[[^]]*\]$/); d = substr($0, RSTART + 1, RLENGTH - 2)
      sub(/.*\//, "", d); sub(/\.so.*/, "", d); s[d] += v
    }
    END {
      printf "  %-7s %8.0f instructions/request:", name, t / n
      for (k in s) if (s[k] / n >= 100) printf "  %s %.0f", k, s[k] / n
      printf "\n"
    }'
}

echo "gpu-admission serve --threads 1 under callgrind, $count requests over one keep-alive HTTPS connection to /mutate"
measure gpu "$review"
measure delete "$here/delete-pod-review.json"
if [ -x "$floor_bin" ]; then
  measure floor "$review"
else
  echo "  floor: no bench_mhd_floor at $floor_bin (--floor-bin); skipped"
fi
