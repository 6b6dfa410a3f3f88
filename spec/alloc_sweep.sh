#!/bin/sh
# Allocation-failure sweep (docs/testing.md): runs a small job with WM_FAIL_ALLOC=N for
# N = FIRST, FIRST+STEP, ... until the job no longer runs out of memory. Every run must either
# end with a clear error that says memory ran out (exit 1) or, when it got past the failure, print
# the expected output (exit 0); a crash, a sanitizer report or a leak (run it on the ASan build:
# `make alloc-sweep`), any other exit code or message fails the sweep.
# usage: spec/alloc_sweep.sh WMRUN [JOB EXPECTED] (env: FIRST=1 STEP=1 LAST=100000)
set -u
WMRUN=${1:?usage: alloc_sweep.sh WMRUN [JOB EXPECTED]}
JOB=${2:-examples/a_tumbling_in_order.lua}
EXPECTED=${3:-examples/expected/a_tumbling_in_order.expected}
FIRST=${FIRST:-1}
STEP=${STEP:-1}
LAST=${LAST:-100000}
# sanitizer reports (and leaks) exit 99, a code no run of wmrun uses
export ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=1}:exitcode=99"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:-}:halt_on_error=1:exitcode=99"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
n=$FIRST
runs=0
bad=0
while [ "$n" -le "$LAST" ]; do
  WM_FAIL_ALLOC=$n "$WMRUN" "$JOB" >"$tmp/out" 2>"$tmp/err"
  rc=$?
  runs=$((runs + 1))
  if [ "$rc" = 0 ]; then
    # every allocation from the Nth fails: a run that ends well did its last one before N
    # (or needed none after a failure it handled), so the sweep is complete
    if ! cmp -s "$tmp/out" "$EXPECTED"; then
      echo "N=$n: exit 0 but the output differs from $EXPECTED:"
      diff "$EXPECTED" "$tmp/out" | head -5
      bad=$((bad + 1))
    fi
    break
  elif [ "$rc" = 1 ] && head -1 "$tmp/err" | grep -Eq '^wmrun: .*(not enough memory|out of memory)'; then
    :
  else
    echo "N=$n: exit $rc"
    head -20 "$tmp/err"
    bad=$((bad + 1))
  fi
  n=$((n + STEP))
done
echo "alloc sweep: $runs runs (N = $FIRST..$n step $STEP) of $JOB, $bad failed"
[ "$bad" = 0 ]
