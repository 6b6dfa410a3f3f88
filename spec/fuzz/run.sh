#!/bin/sh
# Runs one libFuzzer target for a number of seconds from its seed corpus and prints one line:
# "fuzz <name>: N executions in S s, corpus C inputs" (or the crash and exits 1).
# usage: spec/fuzz/run.sh build-dir name seconds
set -u
BUILD=$1 name=$2 secs=$3
cd "$(dirname "$0")/../.." || exit 2
bin=$BUILD/fuzz_$name
seeds=spec/fuzz/corpus/$name
work=$BUILD/corpus/$name
mkdir -p "$work" "$BUILD/crashes"
dict=""
[ -f "spec/fuzz/$name.dict" ] && dict="-dict=spec/fuzz/$name.dict"
log=$BUILD/fuzz_$name.log
# new inputs go to the work corpus (first directory), never into the repository's seeds
# shellcheck disable=SC2086
ASAN_OPTIONS=detect_leaks=1 "$bin" -max_total_time="$secs" -timeout=10 -rss_limit_mb=1024 \
  -print_final_stats=1 -artifact_prefix="$BUILD/crashes/$name-" $dict "$work" "$seeds" >"$log" 2>&1
rc=$?
execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log")
corpus=$(ls "$work" | wc -l)
if [ $rc -ne 0 ]; then
  echo "fuzz $name: FAILED (exit $rc) after ${execs:-?} executions; log: $log"
  grep -E "ERROR|invariant|fuzz_|SUMMARY|Test unit written" "$log" | head -20
  exit 1
fi
echo "fuzz $name: ${execs:-?} executions in $secs s, work corpus $corpus inputs"
