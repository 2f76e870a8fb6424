#!/usr/bin/env bash
# run.sh - build the libFuzzer targets (clang, ASan+UBSan) and run each for SECONDS.
#   test/fuzz/run.sh SECONDS [target...]      (targets: review policy quantity patch yamljson json objects)
# Builds in build-fuzz/ (or $GPA_FUZZ_BUILD_DIR; GPA_FUZZ_NO_BUILD=1 skips the build). Each
# target runs (two at a time on 2+ CPUs; GPA_FUZZ_PARALLEL=1 for one) with
# -max_total_time=SECONDS over its seed corpus
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
# One libFuzzer process per target (-fork would survive a crash and keep fuzzing, but shares
# the cores badly); GPA_FUZZ_PARALLEL targets at a time (default: the CPUs, at most 2), so the
# CI run spends SECONDS per target on every core instead of one core idling. Each target
# writes its summary to a result file; they are printed and counted in the targets' order.
fuzz_one() {
  local t=$1 bin=$build/test/fuzz/fuzz_$1
  local res=$work/$t.result
  rm -f "$res"
  mkdir -p "$work/$t" "$build/fuzz-findings/$t"
  local art log dict=() seeds=()
  art=$(mktemp -d)
  log=$build/fuzz-$t.log
  [ -f "$here/dict/$t.dict" ] && dict=(-dict="$here/dict/$t.dict")
  [ -d "$here/corpus/$t" ] && seeds=("$here/corpus/$t")
  local t0 rc elapsed execs corpus n=0
  t0=$(date +%s)
  "$bin" -max_total_time="$secs" -timeout=10 -rss_limit_mb=2048 -max_len=65536 \
    -print_final_stats=1 -error_exitcode=77 -artifact_prefix="$art/" "${dict[@]}" \
    "$work/$t" "${seeds[@]}" >"$log" 2>&1
  rc=$?
  elapsed=$(($(date +%s) - t0))
  # -a: a target's log may hold bytes of the inputs it printed; grep would answer only
  # "binary file matches" and the line would read execs 0
  execs=$(grep -aE '^stat::number_of_executed_units' "$log" | awk '{print $2}' | tail -1)
  [ -z "$execs" ] && execs=$(grep -aoE '^#[0-9]+' "$log" | tail -1 | tr -d '#')
  corpus=$(find "$work/$t" -type f | wc -l)
  for f in "$art"/*; do
    [ -e "$f" ] || continue
    cp "$f" "$build/fuzz-findings/$t/"
    n=$((n + 1))
  done
  rm -rf "$art"
  if [ "$rc" -ne 0 ] && [ "$n" -eq 0 ]; then n=1; fi # died without an artifact: still a finding
  printf '%s\t%s\t%s\t%s\t%s\n' "$elapsed" "${execs:-0}" "$corpus" "$n" "$log" >"$res"
}

par=${GPA_FUZZ_PARALLEL:-$(nproc)}
[ "$par" -gt 2 ] && par=2
[ "$par" -lt 1 ] && par=1
running=0
ran_targets=()
for t in "${want[@]}"; do
  if [ ! -x "$build/test/fuzz/fuzz_$t" ]; then
    echo "$t: not built (the core functions it needs are not there yet), skipped"
    continue
  fi
  if [ "$running" -ge "$par" ]; then
    wait -n
    running=$((running - 1))
  fi
  fuzz_one "$t" &
  running=$((running + 1))
  ran_targets+=("$t")
done
wait

findings_total=0
ran=0
for t in "${ran_targets[@]}"; do
  res=$work/$t.result
  if [ ! -f "$res" ]; then
    echo "$t: the fuzz run left no result (killed?)" >&2
    findings_total=$((findings_total + 1))
    continue
  fi
  IFS=$'\t' read -r elapsed execs corpus n log <"$res"
  rm -f "$res"
  ran=$((ran + 1))
  findings_total=$((findings_total + n))
  printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$(date -u +%FT%TZ)" "$t" "$elapsed" "$execs" "$corpus" "$n" >>"$ledger"
  printf '%-9s %6ss  execs %-10s corpus %-6s findings %s\n' "$t" "$elapsed" "$execs" "$corpus" "$n"
  if [ "$n" -gt 0 ]; then
    echo "--- $t: finding(s) in $build/fuzz-findings/$t/, log $log:" >&2
    grep -E 'ERROR: |runtime error|fuzz property violated|SUMMARY' "$log" | head -5 >&2
  fi
done
[ "$ran" -eq 0 ] && { echo "run.sh: no fuzz target built" >&2; exit 2; }
[ "$findings_total" -eq 0 ]
