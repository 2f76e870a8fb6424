#!/usr/bin/env bash
# run.sh - build the libFuzzer targets (clang, ASan+UBSan) and run each for SECONDS.
#   test/fuzz/run.sh SECONDS [target...]      (targets: review policy quantity patch yamljson json objects)
# Builds in build-fuzz/ (or $GPA_FUZZ_BUILD_DIR; GPA_FUZZ_NO_BUILD=1 skips the build). Each
# target runs sequentially with -max_total_time=SECONDS over its seed corpus
# (test/fuzz/corpus/<target>, read-only) plus a work corpus that grows across runs
# (test/fuzz/corpus-work/<target>, git-ignored). Prints one line per target (execs, corpus,
# findings) and appends it to test/fuzz/corpus-work/ledger.tsv (running totals for
# docs/security.md). A finding (crash, leak, timeout, OOM) is copied to
# build-fuzz/fuzz-findings/<target>/; turn it into a regression by moving it to
# test/fuzz/regressions/<target>/. Exit status: 0 no findings, 1 findings, 2 build/usage error.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
secs=${1:-}
if ! [[ "$secs" =~ ^[0-9]+$ ]] || [ "$secs" -lt 1 ]; then
  echo "usage: test/fuzz/run.sh SECONDS [target...]" >&2
  exit 2
fi
shift
build=${GPA_FUZZ_BUILD_DIR:-$root/build-fuzz}
all=(review policy quantity patch yamljson json objects)
want=("$@")
[ ${#want[@]} -eq 0 ] && want=("${all[@]}")

if [ -z "${GPA_FUZZ_NO_BUILD:-}" ]; then
  command -v clang >/dev/null || { echo "run.sh: clang not found (apt-get install clang libclang-rt-14-dev)" >&2; exit 2; }
  CC=clang cmake -S "$root" -B "$build" -DGPA_FUZZ=ON -DGPA_WERROR=OFF \
    -DCMAKE_BUILD_TYPE=RelWithDebInfo >"$build.configure.log" 2>&1 ||
    { cat "$build.configure.log" >&2; echo "run.sh: configure failed" >&2; exit 2; }
  targets=()
  for t in "${want[@]}"; do
    grep -q "fuzz target '$t' skipped" "$build.configure.log" && continue
    targets+=("fuzz_$t")
  done
  if [ ${#targets[@]} -gt 0 ]; then
    cmake --build "$build" -j "${GPA_FUZZ_JOBS:-2}" --target "${targets[@]}" >"$build.build.log" 2>&1 ||
      { tail -40 "$build.build.log" >&2; echo "run.sh: build failed" >&2; exit 2; }
  fi
fi

work=$here/corpus-work
mkdir -p "$work"
ledger=$work/ledger.tsv
[ -f "$ledger" ] || printf 'date\ttarget\tseconds\texecs\tcorpus\tfindings\n' >"$ledger"
# seconds = wall time actually fuzzed (less than SECONDS when a finding stopped the run)
findings_total=0
ran=0
for t in "${want[@]}"; do
  bin=$build/test/fuzz/fuzz_$t
  if [ ! -x "$bin" ]; then
    echo "$t: not built (the core functions it needs are not there yet), skipped"
    continue
  fi
  mkdir -p "$work/$t" "$build/fuzz-findings/$t"
  art=$(mktemp -d)
  log=$build/fuzz-$t.log
  dict=()
  [ -f "$here/dict/$t.dict" ] && dict=(-dict="$here/dict/$t.dict")
  seeds=()
  [ -d "$here/corpus/$t" ] && seeds=("$here/corpus/$t")
  # -fork would survive a crash and keep fuzzing, but shares 2 cores badly: one process.
  t0=$(date +%s)
  "$bin" -max_total_time="$secs" -timeout=10 -rss_limit_mb=2048 -max_len=65536 \
    -print_final_stats=1 -error_exitcode=77 -artifact_prefix="$art/" "${dict[@]}" \
    "$work/$t" "${seeds[@]}" >"$log" 2>&1
  rc=$?
  elapsed=$(($(date +%s) - t0))
  execs=$(grep -E '^stat::number_of_executed_units' "$log" | awk '{print $2}' | tail -1)
  [ -z "$execs" ] && execs=$(grep -oE '^#[0-9]+' "$log" | tail -1 | tr -d '#')
  corpus=$(find "$work/$t" -type f | wc -l)
  n=0
  for f in "$art"/*; do
    [ -e "$f" ] || continue
    cp "$f" "$build/fuzz-findings/$t/"
    n=$((n + 1))
  done
  rm -rf "$art"
  if [ "$rc" -ne 0 ] && [ "$n" -eq 0 ]; then n=1; fi # died without an artifact: still a finding
  ran=$((ran + 1))
  findings_total=$((findings_total + n))
  printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$(date -u +%FT%TZ)" "$t" "$elapsed" "${execs:-0}" "$corpus" "$n" >>"$ledger"
  printf '%-9s %6ss  execs %-10s corpus %-6s findings %s\n' "$t" "$elapsed" "${execs:-0}" "$corpus" "$n"
  if [ "$n" -gt 0 ]; then
    echo "--- $t: finding(s) in $build/fuzz-findings/$t/, log $log:" >&2
    grep -E 'ERROR: |runtime error|fuzz property violated|SUMMARY' "$log" | head -5 >&2
  fi
done
[ "$ran" -eq 0 ] && { echo "run.sh: no fuzz target built" >&2; exit 2; }
[ "$findings_total" -eq 0 ]
