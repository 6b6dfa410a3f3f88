#!/bin/sh
# The writers of a partitioned log, through wm_transport.h: the repartitioning step
# (key_by{through = ...}) on Kafka and on NATS, write_kafka and write_nats, each on N
# records, against librdkafka's mock cluster (build/kafka_mock) and a nats-server started
# here. Prints per job the median wall and CPU time (user + system of wmrun alone; the
# servers are other processes) over RUNS runs, and records/s from the median wall time.
#
#   bench/transport.sh                          # build/wmrun, N=200000, RUNS=5
#   WMRUNS="/tmp/before/wmrun build/wmrun" bench/transport.sh   # two builds, runs interleaved
#   CALLGRIND=1 N=20000 RUNS=1 WMRUNS="..." bench/transport.sh   # instructions instead of times
#
# env: N, RUNS, WMRUNS (wmrun binaries to compare, run alternately so that a busy machine
# slows both alike), JOBS (a subset of through_kafka through_nats write_kafka write_nats), BENCH_DIR (default /tmp/wmrun-bench-transport), CALLGRIND=1: each run
# under callgrind, counting only the instructions executed inside the writing operator's
# record/watermark/status calls (what a transport does for them included; the client
# libraries' own threads not), which a shared machine does not disturb: the column "cpu s"
# is then millions of instructions (Ir) and "records/s" is Ir per record.
set -eu
cd "$(dirname "$0")/.."
N=${N:-200000}
RUNS=${RUNS:-5}
WMRUNS=${WMRUNS:-build/wmrun}
DIR=${BENCH_DIR:-/tmp/wmrun-bench-transport}
rm -rf "$DIR"
mkdir -p "$DIR"
export WMRUN_LUA_DIR="$PWD/lua"

# input: N readings on 1000 keys, timestamps in order
awk -v n="$N" 'BEGIN { for (i = 1; i <= n; i++) printf "k%04d,%.0f,%d\n", i % 1000, 1700000000000 + i * 10, i % 97 }' \
  >"$DIR/in.csv"

# servers (stopped by their pids at the end)
mkfifo "$DIR/ctl"
build/kafka_mock -t 3600 "by_id:4" "out:4" >"$DIR/kafka.out" 2>"$DIR/kafka.log" 0<>"$DIR/ctl" &
KPID=$!
NPORT=$(awk 'BEGIN { srand(); print 20000 + int(rand() * 20000) }')
NATS=$(command -v nats-server || echo /usr/sbin/nats-server)
"$NATS" -js -a 127.0.0.1 -p "$NPORT" -sd "$DIR/nats" >"$DIR/nats.log" 2>&1 &
NPID=$!
trap 'kill $KPID $NPID 2>/dev/null || true' EXIT INT TERM
for _ in $(seq 200); do [ -s "$DIR/kafka.out" ] && grep -q "Server is ready" "$DIR/nats.log" && break; sleep 0.05; done
BROKERS=$(head -1 "$DIR/kafka.out")
URL="nats://127.0.0.1:$NPORT"

job() { # name, target expression (through) or sink call
  cat >"$DIR/$1.lua" <<LUA
local wm = require("wm")
local env = wm.env{}
local s = env:read_lines(arg[1]):parse_csv{"id", "ts:integer", "vc:integer"}
  :assign_timestamps_and_watermarks(wm.watermarks.bounded_out_of_orderness("1s"):with_timestamp_field("ts"))
$2
env:execute()
LUA
}
job through_kafka 's:key_by("id", {through = {kafka = {brokers = arg[2], topic = "by_id", partitions = 4}}}):window(wm.windows.tumbling("1s")):sum("vc"):write_lines(arg[3])'
job through_nats 's:key_by("id", {through = {nats = {url = arg[2], stream = "BY_ID", subject = "by_id", partitions = 4}}}):window(wm.windows.tumbling("1s")):sum("vc"):write_lines(arg[3])'
job write_kafka 's:write_kafka{brokers = arg[2], topic = "out", key = "id"}'
job write_nats 's:write_nats{url = arg[2], stream = "OUT", subject = "out"}'

median() { sort -n | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }'; }

TOGGLE=""
for f in tw_record tw_watermark tw_status ksink_record ksink_watermark nsink_record nsink_watermark; do
  TOGGLE="$TOGGLE --toggle-collect=$f"
done

printf '%-14s %-28s %9s %9s %12s\n' job wmrun "wall s" "cpu s" "records/s"
for name in ${JOBS:-through_kafka through_nats write_kafka write_nats}; do
  case $name in *kafka) addr=$BROKERS ;; *) addr=$URL ;; esac
  for r in $(seq "$RUNS"); do
    i=0
    for w in $WMRUNS; do
      i=$((i + 1))
      if [ -n "${CALLGRIND:-}" ]; then
        valgrind --tool=callgrind --callgrind-out-file="$DIR/cg" $TOGGLE "$w" "$DIR/$name.lua" "$DIR/in.csv" \
          "$addr" "$DIR/out$i" >/dev/null 2>"$DIR/err" || { cat "$DIR/err" >&2; exit 1; }
        ir=$(awk '/^(summary|totals):/ { print $2; exit }' "$DIR/cg")
        echo "0 $(echo "$ir / 1000000" | bc -l)" >>"$DIR/$name.$i"
        echo "$ir" >"$DIR/$name.$i.ir"
      else
        /usr/bin/time -f "%e %U %S" -o "$DIR/t" "$w" "$DIR/$name.lua" "$DIR/in.csv" "$addr" "$DIR/out$i" \
          >/dev/null 2>"$DIR/err" || { cat "$DIR/err" >&2; exit 1; }
        tail -1 "$DIR/t" | awk '{ print $1, $2 + $3 }' >>"$DIR/$name.$i"
      fi
    done
    if [ "$i" -gt 1 ] && [ "${name#through}" != "$name" ]; then # the builds agree
      sort "$DIR/out1" >"$DIR/s1"
      sort "$DIR/out$i" >"$DIR/s2"
      cmp -s "$DIR/s1" "$DIR/s2" || { echo "$name: the builds' outputs differ" >&2; exit 1; }
    fi
  done
  i=0
  for w in $WMRUNS; do
    i=$((i + 1))
    wall=$(cut -d' ' -f1 "$DIR/$name.$i" | median)
    cpu=$(cut -d' ' -f2 "$DIR/$name.$i" | median)
    if [ -n "${CALLGRIND:-}" ]; then
      printf '%-14s %-28s %9s %9.2f %12.0f\n' "$name" "$w" - "$cpu" "$(echo "$cpu * 1000000 / $N" | bc -l)"
    else
      printf '%-14s %-28s %9s %9s %12.0f\n' "$name" "$w" "$wall" "$cpu" "$(echo "$N / $wall" | bc -l)"
    fi
  done
done
