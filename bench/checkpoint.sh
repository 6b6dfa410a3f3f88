#!/bin/bash
# checkpoint.sh - what checkpoints cost (docs/checkpoints.md):
#  1. time and size of one checkpoint holding CK_WINDOWS open windows (default 1000000):
#     a followed file of that many distinct keys, all in one event-time window that never
#     fires; once every line is read, SIGTERM takes the checkpoint (--trace-watermarks
#     prints its size and time) and the restore is timed too
#  2. the throughput cost of checkpointing every second: bench/fast_path.lua on the bench
#     file (BENCH_N records, BENCH_KEYS keys) without and with --checkpoint-interval 1s,
#     interleaved, CK_RUNS runs each (default 5), medians
#   CK_DIR  work folder (default /tmp/wmrun-ckbench)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
dir=${CK_DIR:-/tmp/wmrun-ckbench}
nwin=${CK_WINDOWS:-1000000}
runs=${CK_RUNS:-5}
n=${BENCH_N:-10000000}
keys=${BENCH_KEYS:-10000}
export LC_ALL=C
export LUA_PATH="$root/lua/?.lua;$root/lua/?/init.lua;;"
mkdir -p "$dir"
make -C "$root" --no-print-directory all > /dev/null
wmrun=$root/build/wmrun
median() { sort -g | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

# ---- 1. a checkpoint of many open windows --------------------------------------------
win="$dir/windows_$nwin.csv"
[ -s "$win" ] || awk -v n="$nwin" 'BEGIN { for (i = 1; i <= n; i++) printf "key%09d,%d,%d\n", i, 1000 + i % 1000, i % 7 }' > "$win"
cat > "$dir/windows.lua" <<'LUA'
local wm = require("wm")
local env = wm.env{ watermark_interval = 0 }
env:read_lines(arg[1], {follow = true})
  :parse_csv{"id", "ts:integer", "vc:integer"}
  :assign_timestamps_and_watermarks(wm.watermarks.for_monotonous_timestamps():with_timestamp_field("ts", 1))
  :key_by("id")
  :window(wm.windows.tumbling("1h"))
  :sum("vc")
  :write_lines(arg[2])
env:execute()
LUA
rm -rf "$dir/ck1"
"$wmrun" --trace-watermarks --checkpoint-dir "$dir/ck1" --checkpoint-interval 0 "$dir/windows.lua" "$win" "$dir/windows.out" 2> "$dir/windows.err" &
pid=$!
# wait until every line is read: the process stops using CPU
prev=-1
while :; do
    sleep 1
    cur=$(awk '{ print $14 + $15 }' "/proc/$pid/stat")
    [ "$cur" = "$prev" ] && break
    prev=$cur
done
kill -TERM "$pid"
wait "$pid"
line=$(grep '^\[checkpoint\]' "$dir/windows.err" | tail -n 1)
du=$(du -sb "$dir/ck1" | awk '{ print $1 }')
start=$(date +%s%N)
"$wmrun" --checkpoint-dir "$dir/ck1" --checkpoint-interval 0 "$dir/windows.lua" "$win" "$dir/windows.out" 2> "$dir/restore.err" &
pid=$!
until grep -q 'resuming from' "$dir/restore.err" 2> /dev/null; do sleep 0.05; done
restored=$(( ($(date +%s%N) - start) / 1000000 ))
kill -TERM "$pid"; wait "$pid" || true
echo "open windows: $nwin"
echo "checkpoint:   $line"
echo "on disk:      $du bytes (the store keeps 3: the one before the first record is tiny)"
echo "restore:      ${restored} ms from start to 'resuming from' (process start included)"

# ---- 2. throughput cost of a checkpoint every second ------------------------------------
cc -std=c11 -O2 -o "$dir/gen" "$here/gen.c"
input="$dir/input_n${n}_k${keys}.csv"
[ -s "$input" ] || "$dir/gen" -n "$n" -k "$keys" > "$input" 2> /dev/null
off="" on=""
for _ in $(seq "$runs"); do
    s=$(date +%s%N); "$wmrun" "$here/fast_path.lua" "$input" > "$dir/off.out"; off+="$(( ($(date +%s%N) - s) / 1000000 ))"$'\n'
    rm -rf "$dir/ck2"
    s=$(date +%s%N); "$wmrun" --checkpoint-dir "$dir/ck2" --checkpoint-interval 1s --metrics "$here/fast_path.lua" "$input" > "$dir/on.out" 2> "$dir/on.err"; on+="$(( ($(date +%s%N) - s) / 1000000 ))"$'\n'
done
cmp -s "$dir/off.out" "$dir/on.out" || { echo "outputs differ" >&2; exit 1; }
moff=$(printf '%s' "$off" | median)
mon=$(printf '%s' "$on" | median)
echo "fast_path, $n records: ${moff} ms without, ${mon} ms with a checkpoint every second (medians of $runs interleaved runs)"
awk -v a="$moff" -v b="$mon" 'BEGIN { printf "cost: %.1f %%\n", (b - a) * 100 / a }'
grep '^checkpoints:' "$dir/on.err" | tail -n 1
