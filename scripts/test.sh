#!/usr/bin/env bash
# test.sh - install what the tests need, then run the whole suite: a normal build (every
# test, end-to-end included), an ASan+UBSan build (every test but the end-to-end, chart,
# benchmark and valgrind ones, which exercise no new C paths or cannot share a process with
# ASan), each libFuzzer target for 60 s (GPA_FUZZ_SECONDS overrides), and a slice of the
# mutation tests (test/mutation/README.md). Ends with one line "N passed, M failed" summing all
# four.
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
scripts/setup.sh test || { echo "setup failed"; echo "0 passed, 1 failed"; exit 1; }
export PATH="$root/.deps/bin:$PATH"
jobs=$(nproc)

passed=0 failed=0
run_suite() { # name, build dir, cmake flags..., then -- ctest flags
  local name=$1 dir=$2; shift 2
  local cm=() ct=()
  while [ $# -gt 0 ] && [ "$1" != -- ]; do cm+=("$1"); shift; done
  [ $# -gt 0 ] && shift
  ct=("$@")
  echo "=== $name: configure + build"
  if ! cmake -S . -B "$dir" "${cm[@]}" >/dev/null || ! cmake --build "$dir" -j "$jobs" >"$dir.build.log" 2>&1; then
    tail -50 "$dir.build.log" 2>/dev/null
    echo "=== $name: BUILD FAILED"
    failed=$((failed + 1))
    return
  fi
  echo "=== $name: ctest"
  local log="$dir/ctest.log"
  (cd "$dir" && ctest --output-on-failure "${ct[@]}") 2>&1 | tee "$log"
  local line p f
  line=$(grep -E '[0-9]+% tests passed, [0-9]+ tests? failed out of [0-9]+' "$log" | tail -1)
  if [ -z "$line" ]; then
    grep -q 'No tests were found' "$log" || failed=$((failed + 1))
    return
  fi
  f=$(sed -E 's/.* ([0-9]+) tests? failed out of ([0-9]+).*/\1/' <<<"$line")
  t=$(sed -E 's/.* failed out of ([0-9]+).*/\1/' <<<"$line")
  passed=$((passed + t - f)); failed=$((failed + f))
}

run_suite "release" build-test -DCMAKE_BUILD_TYPE=RelWithDebInfo -- -j "$jobs"
run_suite "asan+ubsan" build-asan -DCMAKE_BUILD_TYPE=Debug -DGPA_SANITIZE=ON -- -j "$jobs" -LE 'e2e|chart|bench|nosan'

# libFuzzer: every target for 60 s (clang, ASan+UBSan); each target counts as one test.
echo "=== fuzz: each target 60 s"
fuzz_log=build-fuzz.run.log
test/fuzz/run.sh "${GPA_FUZZ_SECONDS:-60}" 2>&1 | tee "$fuzz_log"
fuzz_rc=${PIPESTATUS[0]}
fp=$(grep -cE '^[a-z]+ +[0-9]+s +execs .* findings 0$' "$fuzz_log")
ff=$(grep -cE '^[a-z]+ +[0-9]+s +execs .* findings [1-9]' "$fuzz_log")
if [ "$fuzz_rc" -ne 0 ] && [ "$ff" -eq 0 ]; then ff=1; fi # build failure or no target ran
passed=$((passed + fp)); failed=$((failed + ff))

# Mutation slice (test/mutation, issue 23): GPA_MUTATION_SLICE mutants (default 10, 0 skips)
# chosen by the commit hash, each planted in a scratch copy under /tmp and run against its
# fast tiers; killed = passed, survived/stale/broken = failed. scripts/mutate.sh runs them all.
slice=${GPA_MUTATION_SLICE:-10}
if [ "$slice" -gt 0 ]; then
  echo "=== mutation: a slice of $slice mutants"
  key=$(git rev-parse HEAD 2>/dev/null || echo none)
  mut_log=build-mutation.run.log
  python3 test/mutation/mutate.py --slice "$slice" --key "$key" --jobs "$jobs" 2>&1 | tee "$mut_log"
  line=$(grep -E '^mutation: [0-9]+ passed, [0-9]+ failed$' "$mut_log" | tail -1)
  if [ -z "$line" ]; then
    failed=$((failed + 1))
  else
    mp=$(sed -E 's/^mutation: ([0-9]+) passed.*/\1/' <<<"$line")
    mf=$(sed -E 's/.* ([0-9]+) failed$/\1/' <<<"$line")
    passed=$((passed + mp)); failed=$((failed + mf))
  fi
fi

echo "${passed} passed, ${failed} failed"
[ "$failed" -eq 0 ]
