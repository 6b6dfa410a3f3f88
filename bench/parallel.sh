#!/bin/sh
# The multi-core executor's benchmark: the scenario pipeline (bench/parallel_job.lua) at
# parallelism 1 on one thread and at parallelism 2 on two threads, over one generated file.
# Checks that both runs give the same lines, and prints events per second and the speed-up.
# usage: bench/parallel.sh [-n RECORDS] [-k KEYS] [-s lua|c] [-r REPEATS]
# Data and outputs go to $BENCH_DIR (default /tmp/wmrun-bench). Run `make` first.
set -eu
cd "$(dirname "$0")/.."
N=5000000 K=10000 STYLE=lua REPEATS=5
while getopts n:k:s:r: o; do
  case $o in
    n) N=$OPTARG ;; k) K=$OPTARG ;; s) STYLE=$OPTARG ;; r) REPEATS=$OPTARG ;;
    *) echo "usage: $0 [-n RECORDS] [-k KEYS] [-s lua|c] [-r REPEATS]" >&2; exit 2 ;;
  esac
done
D=${BENCH_DIR:-/tmp/wmrun-bench}
mkdir -p "$D"
WMRUN=${WMRUN:-build/wmrun}
[ -x "$D/gen" ] || gcc -std=c11 -O2 -Wall -Wextra -Werror -o "$D/gen" bench/gen.c
IN="$D/in_${N}_${K}.csv"
[ -s "$IN" ] || "$D/gen" -n "$N" -k "$K" > "$IN"

now() { date +%s.%N; }
# one timed run: once P T OUT -> wall seconds
once() {
  t0=$(now)
  "$WMRUN" -p "$1" --threads "$2" bench/parallel_job.lua "$IN" "$STYLE" > "$3.raw"
  t1=$(now)
  sed 's/^[0-9]*> //' "$3.raw" | sort > "$3"
  rm -f "$3.raw"
  echo "$t1 - $t0" | bc -l
}

# The runs alternate (1 thread, 2 threads, 1 thread, ...) so that both see the same host:
# on a shared VM the speed of a core drifts by 2x over minutes, and only ratios of
# neighbouring runs mean something. Reported: the best time of each, and the median of the
# per-pair speed-ups.
echo "input: $N records, $K keys ($IN); style $STYLE; $REPEATS alternating pairs"
best1="" best2="" ratios=""
i=0
while [ $i -lt "$REPEATS" ]; do
  a=$(once 1 1 "$D/out_p1.txt")
  b=$(once 2 2 "$D/out_p2.txt")
  if [ -z "$best1" ] || [ "$(echo "$a < $best1" | bc -l)" = 1 ]; then best1=$a; fi
  if [ -z "$best2" ] || [ "$(echo "$b < $best2" | bc -l)" = 1 ]; then best2=$b; fi
  ratios="$ratios $(echo "$a / $b" | bc -l)"
  i=$((i + 1))
done
t1=$best1
t2=$best2
median=$(for r in $ratios; do echo "$r"; done | sort -g | awk '{v[NR] = $1} END {print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2}')
if ! cmp -s "$D/out_p1.txt" "$D/out_p2.txt"; then
  echo "DIFFERENT RESULTS at parallelism 1 and 2:" >&2
  diff "$D/out_p1.txt" "$D/out_p2.txt" | head >&2
  exit 1
fi
lines=$(wc -l < "$D/out_p1.txt")
printf 'parallelism 1, 1 thread : %6.2f s  %5.2f M events/s (best)\n' "$t1" "$(echo "$N / $t1 / 1000000" | bc -l)"
printf 'parallelism 2, 2 threads: %6.2f s  %5.2f M events/s (best)\n' "$t2" "$(echo "$N / $t2 / 1000000" | bc -l)"
printf 'speed-up: %.2fx (median of %d alternating pairs: %s), the same %d windows\n' \
  "$median" "$REPEATS" "$(for r in $ratios; do printf '%.2f ' "$r"; done)" "$lines"
