#!/usr/bin/env bash
# fuzz.sh - build the libFuzzer targets with clang and run each for a bounded time.
#
#   scripts/fuzz.sh [SECONDS-PER-TARGET]     (default 20)
#
# Configures build-fuzz (-DMUSTER_FUZZ=ON, clang, ASan+UBSan, libraries instrumented), builds,
# replays test/fuzz/regressions/<target>/ (a kept reproducer fails until its bug is fixed), then fuzzes
# every target with -max_total_time=N on a scratch copy of test/fuzz/corpus/<target>/. A crash, leak,
# timeout or broken property keeps its input under build-fuzz/crashes/ and its path is printed.
# Last line: "fuzz: N passed, M failed"; the exit status is non-zero on any failure.
# FUZZ_TARGETS="fuzz_bind_args fuzz_settings" limits the run to those targets; FUZZ_SEED=N makes
# the mutations repeatable (the test command sets it under CI, so a landing is not a lottery).
set -uo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
seconds=${1:-20}
build=$root/build-fuzz
jobs=$(nproc 2>/dev/null || echo 2)

[[ $seconds =~ ^[0-9]+$ ]] || { echo "usage: scripts/fuzz.sh [seconds-per-target]" >&2; exit 2; }
command -v clang >/dev/null || { echo "fuzz: clang is not installed" >&2; exit 2; }

mkdir -p "$build"
targets=${FUZZ_TARGETS:-$(cd "$root/test/fuzz" && ls fuzz_*.c | sed 's/\.c$//')}
cmake -S "$root" -B "$build" -DCMAKE_C_COMPILER=clang -DMUSTER_FUZZ=ON -DBUILD_TESTING=OFF \
  -DCMAKE_BUILD_TYPE=RelWithDebInfo >"$build/configure.log" 2>&1 ||
  { cat "$build/configure.log" >&2; echo "fuzz: 0 passed, 1 failed"; exit 1; }
# shellcheck disable=SC2086 # one word per target
cmake --build "$build" -j"$jobs" --target $targets >"$build/build.log" 2>&1 ||
  { tail -40 "$build/build.log" >&2; echo "fuzz: 0 passed, 1 failed"; exit 1; }

export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1:symbolize=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
mkdir -p "$build/crashes" "$build/logs"
passed=0
failed=0

# Replays kept reproducers; prints nothing when there are none.
replay() {
  local t=$1 dir=$root/test/fuzz/regressions/$t
  [[ -d $dir ]] && compgen -G "$dir/*" >/dev/null || return 0
  "$build/test/fuzz/$t" -runs=0 "$dir"/* >"$build/logs/$t.regressions.log" 2>&1 && return 0
  echo "  $t: a kept reproducer still fails; log $build/logs/$t.regressions.log"
  grep -E "^(Running: |SUMMARY|fuzz: property|==[0-9]+==ERROR)|runtime error" \
    "$build/logs/$t.regressions.log" | head -6 | sed 's/^/    /'
  return 1
}

for t in $targets; do
  bin=$build/test/fuzz/$t
  work=$build/corpus/$t
  log=$build/logs/$t.log
  dict=()
  [[ $t != fuzz_yaml_docs && $t != fuzz_settings ]] && dict=(-dict="$root/test/fuzz/json.dict")
  mkdir -p "$work"
  [[ -d $root/test/fuzz/corpus/$t ]] && cp -n "$root/test/fuzz/corpus/$t"/* "$work"/ 2>/dev/null
  replayed=0
  replay "$t" || replayed=1
  "$bin" "$work" "${dict[@]}" -max_total_time="$seconds" -rss_limit_mb=2048 -timeout=5 \
    ${FUZZ_SEED:+-seed="$FUZZ_SEED"} \
    -max_len=8192 -print_final_stats=1 -artifact_prefix="$build/crashes/$t-" >"$log" 2>&1
  rc=$?
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  if ((rc == 0 && replayed == 0)); then
    passed=$((passed + 1))
    printf '  %-22s ok      %10s execs in %ss\n' "$t" "${execs:-?}" "$seconds"
  else
    failed=$((failed + 1))
    printf '  %-22s FAILED  %10s execs; log %s\n' "$t" "${execs:-?}" "$log"
    if ((rc != 0)); then
      crash=$(sed -n 's/.*Test unit written to \(.*\)$/\1/p' "$log" | tail -1)
      grep -E "^(SUMMARY|fuzz: property|==[0-9]+==ERROR)|runtime error" "$log" | head -5 |
        sed 's/^/    /'
      echo "    crash file: ${crash:-(none written; see the log)}"
    fi
  fi
done
echo "fuzz: $passed passed, $failed failed"
((failed == 0))
