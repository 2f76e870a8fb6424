# shellcheck shell=bash
# bench_lib.sh - shell helpers shared by the server benches (sourced, not run): make dev
# certificates, start `gpu-admission serve` on loopback ports, write wrk's POST script, read
# a process's CPU time. Each helper reports failure by its return status and leaves the caller
# to decide what to print, so each script keeps its own messages.

# bench_certs BIN DIR: a dev CA and an ECDSA P-256 serving pair for 127.0.0.1 in DIR
# (`gpu-admission certs`, quiet).
bench_certs() {
  "$1" certs --service gpu-admission --namespace gpu-admission --out "$2" \
    --san localhost --san 127.0.0.1 >/dev/null 2>&1
}

# bench_serve BIN POLICIES CERT_DIR LOG [serve args...]: start the webhook on ephemeral
# loopback ports and wait (up to 10 s) for its "server started" line. Sets bench_pid,
# bench_port and bench_mport; returns 1 if the server exited or never reported its port (its
# log is in LOG).
bench_serve() {
  local bin=$1 policies=$2 certs=$3 log=$4
  shift 4
  "$bin" serve --policies "$policies" --cert-dir "$certs" --listen 127.0.0.1:0 \
    --metrics-listen 127.0.0.1:0 "$@" 2>"$log" &
  bench_pid=$!
  bench_port=
  bench_mport=
  for _ in $(seq 1 200); do
    bench_port=$(grep -o '"listen_port":[0-9]*' "$log" 2>/dev/null | head -1 | cut -d: -f2 || true)
    [ -n "$bench_port" ] && break
    kill -0 "$bench_pid" 2>/dev/null || return 1
    sleep 0.05
  done
  [ -n "$bench_port" ] || return 1
  bench_mport=$(grep -o '"metrics_port":[0-9]*' "$log" | head -1 | cut -d: -f2)
}

# bench_post_lua REVIEW OUT: a wrk script that POSTs the file REVIEW as application/json.
bench_post_lua() {
  cat >"$2" <<LUA
wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"
local f = assert(io.open("$1", "rb"))
wrk.body = f:read("*a")
f:close()
LUA
}

# bench_cpu_ticks PID: utime + stime of the process so far, in clock ticks (getconf CLK_TCK).
bench_cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }
