#!/bin/sh
# The Nexmark benchmark, measured as Flink's nexmark suite measures it: each query of
# examples/nexmark/qN.sql (every one that exists and plans; the others are skipped with the
# planner's message) with its sink replaced by Flink's discarding 'blackhole' sink and
# 'events.num' set to the run's size, run by wmrun at -p 1 on
#   gen   the built-in nexmark generator (the examples' source), and
#   file  a pre-written flat CSV file of the same kind of events (bench/nexmark_gen.c csv: one
#         line of 24 columns per event), read by the 'filesystem' connector;
# beside the floor (bench/nexmark_gen.c: the generator alone in C with no engine, and for q0
# and q1 the same with each bid formatted to CSV text, discarded).
# For each run: events/s per core = events generated (all kinds, as Flink counts them) / CPU
# time (user + system, from /usr/bin/time: one process, so this is what one core does), events
# per wall second, CPU seconds, peak RSS; and the ratio to Flink 2.0's published per-core
# figure (nexmark's GUIDE_V2.md result table: throughput / cores). For q0, q1, q2 on the
# generator also wmrun / floor (the floor being generate + q0/q1 text for q0/q1, and generate
# alone for q2). Runs are interleaved (every job once, then again, REPEATS times) and the
# figures are medians over the repeats.
# usage: bench/nexmark.sh [-n EVENTS] [-r REPEATS] [-q "q0 q1 ..."] [-s gen|file|both] [-t]
#   default 1000000 events, 3 repeats, every query, both sources; -t adds -p 2 --threads 2
#   runs (the generator split between its instances, the file read in byte ranges by
#   'source.split-by-bytes') and a t2/t1 column: the wall-clock events/s of two threads over
#   one's. Wall time needs two idle cores (state the load: the script prints it); CPU time
#   is the robust figure. Outputs go to $BENCH_DIR (default /tmp/wmrun-bench). Run `make` first.
#   Every query runs with nexmark's mini-batch options, as Flink's figures were measured
#   (MINIBATCH=0: without them).
set -eu
cd "$(dirname "$0")/.."
N=1000000 REPEATS=3 QUERIES="" SOURCES=both THREADS=0
while getopts n:r:q:s:t o; do
  case $o in
    n) N=$OPTARG ;; r) REPEATS=$OPTARG ;; q) QUERIES=$OPTARG ;; s) SOURCES=$OPTARG ;; t) THREADS=1 ;;
    *) echo "usage: $0 [-n EVENTS] [-r REPEATS] [-q \"q0 q1 ...\"] [-s gen|file|both] [-t]" >&2; exit 2 ;;
  esac
done
D=${BENCH_DIR:-/tmp/wmrun-bench}
mkdir -p "$D"
WMRUN=${WMRUN:-build/wmrun}
[ -x "$WMRUN" ] || { echo "nexmark.sh: $WMRUN not found: run make first" >&2; exit 2; }
cp examples/nexmark/nexmark_udfs.lua examples/nexmark/side_input.txt "$D/" # q14's functions, q13's file, found beside the script
gcc -std=c11 -O2 -D_POSIX_C_SOURCE=200809L -Wall -Wextra -Werror -Icore -o "$D/nexmark_gen" \
  bench/nexmark_gen.c core/io/wm_nexmark.c core/base/wm_value.c core/base/wm_buf.c core/base/wm_error.c -lm

# Flink 2.0's per-core throughput, thousand events/s (GUIDE_V2.md: Throughput / Cores)
flink() {
  case $1 in
    q0) echo 379 ;; q1) echo 395 ;; q2) echo 414 ;; q3) echo 219 ;; q4) echo 28.2 ;; q5) echo 74.5 ;;
    q7) echo 22.9 ;; q8) echo 162 ;; q9) echo 13.8 ;; q10) echo 133 ;; q11) echo 46.1 ;; q12) echo 194 ;;
    q13) echo 188 ;; q14) echo 259 ;; q15) echo 168 ;; q16) echo 45.2 ;; q17) echo 161 ;; q18) echo 65.4 ;;
    q19) echo 42.7 ;; q20) echo 17.8 ;; q21) echo 147 ;; q22) echo 212 ;; *) echo "" ;;
  esac
}

if [ -z "$QUERIES" ]; then
  QUERIES=$(ls examples/nexmark/ | sed -n 's/^\(q[0-9]*\)\.sql$/\1/p' | sort -t q -k 2 -n | tr '\n' ' ')
fi

# The example with Flink's sink and K events, on the generator ($1 query, $2 events, $3 out),
# with the mini-batch options of nexmark's own configuration (nexmark-flink's
# conf/sql-client-defaults.yaml: enabled, allow-latency 2s, size 50000; docs/sql.md
# "Mini-batch"), unless MINIBATCH=0
gen_sql() {
  { if [ "${MINIBATCH:-1}" != 0 ]; then
      echo "SET 'table.exec.mini-batch.enabled' = 'true';"
      echo "SET 'table.exec.mini-batch.allow-latency' = '2 s';"
      echo "SET 'table.exec.mini-batch.size' = '50000';"
    fi
    sed -e "s/'events.num' = '[0-9]*'/'events.num' = '$2'/" -e "s/'connector' = 'print'/'connector' = 'blackhole'/" \
      "examples/nexmark/$1.sql"; } > "$3"
}
# The same query over the CSV file $4: the datagen table and its three views replaced by a
# flat 'filesystem' table and views of the same columns
file_sql() {
  gen_sql "$1" "$2" "$3.tmp"
  awk -v path="$4" '
    /^CREATE TABLE datagen/ { skip = 1
      print "CREATE TABLE datagen (event_type INT,"
      print "  p_id BIGINT, p_name STRING, p_email STRING, p_cc STRING, p_city STRING, p_state STRING, p_extra STRING,"
      print "  a_id BIGINT, a_item STRING, a_desc STRING, a_initial BIGINT, a_reserve BIGINT, a_expires_ms BIGINT,"
      print "  a_seller BIGINT, a_category BIGINT, a_extra STRING,"
      print "  b_auction BIGINT, b_bidder BIGINT, b_price BIGINT, b_channel STRING, b_url STRING, b_extra STRING,"
      print "  dt BIGINT, `dateTime` AS TO_TIMESTAMP_LTZ(dt, 3), a_expires AS TO_TIMESTAMP_LTZ(a_expires_ms, 3),"
      print "  WATERMARK FOR `dateTime` AS `dateTime` - INTERVAL '\''4'\'' SECOND"
      print ") WITH ('\''connector'\'' = '\''filesystem'\'', '\''path'\'' = '\''" path "'\'', '\''format'\'' = '\''csv'\'',"
      print "  '\''source.split-by-bytes'\'' = '\''true'\'');"
      print "CREATE VIEW person AS SELECT p_id AS id, p_name AS name, p_email AS emailAddress, p_cc AS creditCard,"
      print "  p_city AS city, p_state AS state, `dateTime`, p_extra AS extra FROM datagen WHERE event_type = 0;"
      print "CREATE VIEW auction AS SELECT a_id AS id, a_item AS itemName, a_desc AS description,"
      print "  a_initial AS initialBid, a_reserve AS reserve, `dateTime`, a_expires AS expires, a_seller AS seller,"
      print "  a_category AS category, a_extra AS extra FROM datagen WHERE event_type = 1;"
      print "CREATE VIEW bid AS SELECT b_auction AS auction, b_bidder AS bidder, b_price AS price,"
      print "  b_channel AS channel, b_url AS url, `dateTime`, b_extra AS extra FROM datagen WHERE event_type = 2;"
      next }
    skip && /^FROM datagen WHERE event_type = 2;/ { skip = 0; next }
    !skip { print }' "$3.tmp" > "$3"
  rm -f "$3.tmp"
}

echo "nexmark: $N events per run, default options (1:3:46, first-event.rate 100), median of $REPEATS interleaved runs"
echo "machine: $(nproc) cores, load average $(cut -d' ' -f1-3 /proc/loadavg) at the start"
CSV="$D/nexmark_$N.csv"
case $SOURCES in gen) ;; *)
  "$D/nexmark_gen" 1000 csv 100 > "$D/nexmark_1000.csv" 2> /dev/null
  if [ ! -s "$CSV" ]; then "$D/nexmark_gen" "$N" csv 100 > "$CSV.tmp" 2> /dev/null && mv "$CSV.tmp" "$CSV"; fi ;;
esac

# the jobs: "name|command" lines; a query that does not plan (on a 1000-event run) is skipped
JOBS="$D/nexmark.jobs"
: > "$JOBS"
for m in gen q0 q1; do echo "floor-$m|$D/nexmark_gen $N $m" >> "$JOBS"; done
for q in $QUERIES; do
  for s in gen file; do
    [ "$SOURCES" = both ] || [ "$SOURCES" = $s ] || continue
    # the check plans the query and runs it on 1000 events
    if [ $s = gen ]; then gen_sql "$q" 1000 "$D/check.sql"; else file_sql "$q" 1000 "$D/check.sql" "$D/nexmark_1000.csv"; fi
    if ! "$WMRUN" --sql "$D/check.sql" > /dev/null 2> "$D/check.err"; then
      echo "skipped $q on $s: $(grep -v '^\s*$' "$D/check.err" | head -1)"
      continue
    fi
    if [ $s = gen ]; then gen_sql "$q" "$N" "$D/nexmark_${q}_$s.sql"; else file_sql "$q" "$N" "$D/nexmark_${q}_$s.sql" "$CSV"; fi
    echo "$q-$s|$WMRUN --sql $D/nexmark_${q}_$s.sql" >> "$JOBS"
    if [ $THREADS = 1 ]; then echo "$q-$s-t2|$WMRUN -p 2 --threads 2 --sql $D/nexmark_${q}_$s.sql" >> "$JOBS"; fi
  done
done

# interleaved runs: every job once per round; "name wall user sys rss_kb" lines
RES="$D/nexmark.results"
: > "$RES"
r=0
while [ $r -lt "$REPEATS" ]; do
  while IFS='|' read -r name cmd; do
    if /usr/bin/time -f "%e %U %S %M" -o "$D/nexmark.time" $cmd > /dev/null 2> "$D/nexmark.err" < /dev/null; then
      echo "$name $(tail -1 "$D/nexmark.time")" >> "$RES"
    else
      echo "run failed: $name: $(head -3 "$D/nexmark.err")" >&2
    fi
  done < "$JOBS"
  r=$((r + 1))
done
echo "load average $(cut -d' ' -f1-3 /proc/loadavg) at the end"

# median of column $2 (2 wall, 3 user+sys, 5 rss) of job $1
med() {
  awk -v j="$1" -v c="$2" '$1 == j { print (c == 3 ? $3 + $4 : $c) }' "$RES" | sort -g |
    awk '{ v[NR] = $1 } END { if (NR == 0) print ""; else if (NR % 2) print v[(NR + 1) / 2]; else print (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}
printf '\n%-16s %12s %12s %8s %8s %9s %9s %6s\n' job "events/s/core" "events/s wall" "CPU s" "RSS MB" "Flink/core" "ratio" \
  "t2/t1"
while IFS='|' read -r name cmd; do
  cpu=$(med "$name" 3) wall=$(med "$name" 2) rss=$(med "$name" 5)
  [ -n "$cpu" ] || continue
  q=${name%%-*}
  f=$(flink "$q")
  case $name in floor-*) f="" ;; esac
  per=$(echo "$N / $cpu" | bc -l)
  if [ -n "$f" ]; then ratio=$(printf '%.2f' "$(echo "$per / ($f * 1000)" | bc -l)"); fk=${f}k; else ratio="" fk=""; fi
  # two threads against one: wall-clock events/s of qN-gen-t2 over qN-gen's
  t21=""
  case $name in *-t2) w1=$(med "${name%-t2}" 2); [ -z "$w1" ] || t21=$(printf '%.2f' "$(echo "$w1 / $wall" | bc -l)") ;; esac
  printf '%-16s %12.0f %12.0f %8.2f %8.0f %9s %9s %6s\n' "$name" "$per" "$(echo "$N / $wall" | bc -l)" "$cpu" \
    "$(echo "$rss / 1024" | bc -l)" "$fk" "$ratio" "$t21"
done < "$JOBS"

# wmrun / floor on the generator, by CPU time: q0 and q1 against generate + their text, q2
# against generate alone
echo
for q in q0 q1 q2; do
  cpu=$(med "$q-gen" 3)
  case $q in q2) fl=floor-gen ;; *) fl=floor-$q ;; esac
  fc=$(med "$fl" 3)
  [ -n "$cpu" ] && [ -n "$fc" ] || continue
  printf '%s on the generator / %s: %.3f (CPU %.2f s against %.2f s)\n' "$q" "$fl" "$(echo "$fc / $cpu" | bc -l)" "$cpu" "$fc"
done
