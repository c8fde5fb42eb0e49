#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Builds the libFuzzer targets (tests/fuzz, one per parser) with clang 14, AddressSanitizer and
# UndefinedBehaviorSanitizer (every report fatal) into build-fuzz/, and runs each from its
# committed seed corpus (tests/fuzz/corpus/<target>/) with its dictionary (tests/fuzz/dict/),
# for --seconds S of fuzzing each (default 10) or --runs N executions. What a run finds new goes
# to build-fuzz/corpus/<target>/, or with --merge into the committed corpus (minimised). A crash,
# leak, timeout, out-of-memory or broken property fails the run; its input is kept in
# build-fuzz/crashes/. Prints, per target, the executions, coverage (libFuzzer's cov: edges) and
# corpus size (--tap: as TAP, one test per target, for the `fuzz-targets` suite). docs/fuzzing.md
# says more.
# usage: scripts/fuzz.sh [--seconds S | --runs N] [--jobs J] [--merge] [--tap] [TARGET...]
set -euo pipefail
cd "$(dirname "$0")/.."
limit=(-max_total_time=10) merge=false jobs=1 tap=false
while [ $# -gt 0 ]; do
  case "$1" in
    --seconds) limit=(-max_total_time="$2"); shift 2 ;;
    --runs) limit=(-runs="$2"); shift 2 ;;
    --jobs) jobs=$2; shift 2 ;;
    --merge) merge=true; shift ;;
    --tap) tap=true; shift ;;
    *) break ;;
  esac
done
targets=("$@")
((${#targets[@]})) || targets=($(ls tests/fuzz/corpus))
dir=build-fuzz
[ -f "$dir/build.ninja" ] || CXX=clang++-14 CC=clang-14 meson setup "$dir" -Dfuzz=true -Dtests=false \
  -Db_sanitize=address,undefined -Db_lundef=false -Doptimization=1 -Ddebug=false -Dwerror=false \
  -Dcpp_args='-fno-sanitize-recover=all -gline-tables-only' >/dev/null
ninja -C "$dir" $(for t in "${targets[@]}"; do echo "tests/fuzz/fuzz-${t//_/-}"; done) >"$dir/fuzz-build.log" 2>&1 ||
  { cat "$dir/fuzz-build.log" >&2; exit 1; }
mkdir -p "$dir/crashes"
failed=0
run_one() {
  local t=$1 out=$dir/corpus/$1 log=$dir/fuzz-$1.log
  mkdir -p "$out"
  if UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 ASAN_OPTIONS=detect_leaks=1 \
      "$dir/tests/fuzz/fuzz-${t//_/-}" "${limit[@]}" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
      -dict="tests/fuzz/dict/$t.dict" -artifact_prefix="$dir/crashes/$t-" "$out" "tests/fuzz/corpus/$t" >"$log" 2>&1; then
    local runs cov
    runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
    cov=$(grep -o 'cov: [0-9]*' "$log" | tail -1 | cut -d' ' -f2)
    line=$(printf '%-16s %10s executions  %5s edges  %5s inputs' "$t" "$runs" "${cov:-?}" "$(ls "$out" "tests/fuzz/corpus/$t" | wc -l)")
    if $tap; then echo "ok - fuzz $line"; else echo "$line"; fi
  else
    if $tap; then echo "not ok - fuzz $t (log: $log)"; else echo "$t: FAILED (log: $log)"; fi
    grep -E "ERROR|property broken|runtime error|SUMMARY|Test unit written" "$log" | head -8 | sed 's/^/# /'
    return 1
  fi
}
$tap && echo "1..${#targets[@]}"
pids=()
for t in "${targets[@]}"; do
  run_one "$t" &
  pids+=($!)
  if ((${#pids[@]} >= jobs)); then wait "${pids[0]}" || failed=1; pids=("${pids[@]:1}"); fi
done
for p in "${pids[@]}"; do wait "$p" || failed=1; done
if $merge && [ $failed -eq 0 ]; then
  for t in "${targets[@]}"; do
    merged=$(mktemp -d)
    "$dir/tests/fuzz/fuzz-${t//_/-}" -merge=1 "$merged" "tests/fuzz/corpus/$t" "$dir/corpus/$t" >/dev/null 2>&1
    # the regression inputs of fixed bugs stay, under their names, whatever coverage they add
    cp tests/fuzz/corpus/"$t"/regress-* "$merged"/ 2>/dev/null || true
    rm -rf "tests/fuzz/corpus/$t" && mv "$merged" "tests/fuzz/corpus/$t" && chmod 755 "tests/fuzz/corpus/$t"
  done
fi
exit $failed
