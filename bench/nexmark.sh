#!/bin/sh
# The Nexmark benchmark: the generator alone (bench/nexmark_gen.c: core/io/wm_nexmark.c making
# and releasing rows, one core), the nexmark source in wmrun into a C sink (write_lines to
# /dev/null, JSON formatted in C), and the Nexmark queries of examples/nexmark (q0, q1, q2, q11, with
# Flink's 'blackhole' sink) at -p 1 on one thread and at -p 2 --threads 2. Prints events per
# second: the events the source generated (all kinds) over the run's wall time, as Flink's
# nexmark reports throughput, and over its CPU time (user + system: what other work on a shared
# machine disturbs less). q11 runs with the examples' 'first-event.rate' = '100'.
# usage: bench/nexmark.sh [-n EVENTS] [-r REPEATS]     (default 2000000 events, best of 3)
# Outputs go to $BENCH_DIR (default /tmp/wmrun-bench). Run `make` first.
set -eu
cd "$(dirname "$0")/.."
N=2000000 REPEATS=3
while getopts n:r: o; do
  case $o in
    n) N=$OPTARG ;; r) REPEATS=$OPTARG ;;
    *) echo "usage: $0 [-n EVENTS] [-r REPEATS]" >&2; exit 2 ;;
  esac
done
D=${BENCH_DIR:-/tmp/wmrun-bench}
mkdir -p "$D"
WMRUN=${WMRUN:-build/wmrun}
[ -x "$WMRUN" ] || { echo "nexmark.sh: $WMRUN not found: run make first" >&2; exit 2; }
gcc -std=c11 -O2 -D_POSIX_C_SOURCE=200809L -Wall -Wextra -Werror -Icore -o "$D/nexmark_gen" \
  bench/nexmark_gen.c core/io/wm_nexmark.c core/base/wm_value.c core/base/wm_buf.c -lm

# "best_wall best_cpu" in seconds over REPEATS runs of "$@" (stdout discarded)
best() {
  bw="" bc=""
  i=0
  while [ $i -lt "$REPEATS" ]; do
    /usr/bin/time -f "%e %U %S" -o "$D/nexmark.time" "$@" > /dev/null
    read -r w u s < "$D/nexmark.time"
    c=$(echo "$u + $s" | bc -l)
    if [ -z "$bw" ] || [ "$(echo "$w < $bw" | bc -l)" = 1 ]; then bw=$w; fi
    if [ -z "$bc" ] || [ "$(echo "$c < $bc" | bc -l)" = 1 ]; then bc=$c; fi
    i=$((i + 1))
  done
  echo "$bw $bc"
}
row() {
  set -- "$1" $2
  printf '%-30s %10.0f events/s wall (%6.2f s) %10.0f events/s CPU (%6.2f s)\n' "$1" \
    "$(echo "$N / $2" | bc -l)" "$2" "$(echo "$N / $3" | bc -l)" "$3"
}

echo "nexmark: $N events, default options (1:3:46), best of $REPEATS"
"$D/nexmark_gen" "$N"
cat > "$D/nexmark_src.lua" <<LUA
local wm = require("wm")
local env = wm.env()
env:nexmark{events = $N, seed = 1}:write_lines("/dev/null")
env:execute()
LUA
row "source -> write_lines (1 core)" "$(best "$WMRUN" "$D/nexmark_src.lua")"
for q in q0 q1 q2 q11; do
  # the example with Flink's sink and N events
  sed -e "s/'events.num' = '[0-9]*'/'events.num' = '$N'/" -e "s/'connector' = 'print'/'connector' = 'blackhole'/" \
    "examples/nexmark/$q.sql" > "$D/nexmark_$q.sql"
  row "$q -p 1" "$(best "$WMRUN" --sql "$D/nexmark_$q.sql")"
  row "$q -p 2 --threads 2" "$(best "$WMRUN" -p 2 --threads 2 --sql "$D/nexmark_$q.sql")"
done
