#!/bin/bash
# interval_join.sh - the interval join (docs/joins.md "Interval join"): records/s on one core
# and bytes per buffered record.
#
#  records/s  two bench/gen files of N records each (-k 10000 keys, -r 200 records per ms,
#             -d 500 ms out of order; seeds 1 and 2), read and parsed in C, keyed by id,
#             watermarks 1 s out of order, through bench/interval_join.lua at -p 1:
#               pairs      between(-20, 20): about one pair per left record, the Lua join
#                          function called per pair (it counts)
#               few pairs  between(1000, 1000): the same records kept about as long, few
#                          pairs: what keeping, finding and dropping records costs
#               no join    the inputs unioned into a Lua filter that keeps nothing: the
#                          pipeline around the join (reading, parsing, watermarks)
#             Prints the best wall and CPU (user + system) seconds of REPEATS runs and
#             records/s = 2N / CPU seconds (one core: the job runs on one thread).
#  bytes      the watermark held back (out-of-orderness 10^6 h) and between(0, 0) on
#             -r RATE -k 100000 files (RATE records per ms, default 50; -r 1 gives every
#             record a millisecond, so a cleanup timer, of its own): every record stays
#             buffered until the end of input.
#             Peak RSS (GNU time %M) at N1 and N2 records per side; the bytes per buffered
#             record are (RSS(N2) - RSS(N1)) / (2 (N2 - N1)): everything a kept record costs
#             (its parse_csv row of 3 fields with its id string, the join's 24-byte entry and
#             its array's spare room, the cleanup timer), with the fixed costs taken out.
#
#   bench/interval_join.sh [-r REPEATS] [-n RECORDS] [-m "N1 N2"] [-t RATE]
#                               (default: -r 3, -n 1000000, -m "250000 1000000", -t 50)
#
# Figures of one run only compare with each other: the machine and its load change between
# runs. WMRUN names the wmrun to measure (default build/wmrun: run make first); data go to
# $BENCH_DIR (default /tmp/wmrun-bench), never into the repository. Needs gcc, awk, GNU time.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
root=$(dirname "$here")
out=${BENCH_DIR:-/tmp/wmrun-bench}
wmrun=${WMRUN:-$root/build/wmrun}
repeats=3 records=1000000 mem="250000 1000000" rate=50
while getopts "r:n:m:t:" opt; do
    case $opt in
    r) repeats=$OPTARG ;;
    n) records=$OPTARG ;;
    m) mem=$OPTARG ;;
    t) rate=$OPTARG ;;
    *) sed -n '2,31p' "$0" >&2; exit 2 ;;
    esac
done
[ -x "$wmrun" ] || { echo "interval_join.sh: $wmrun not found: run make first" >&2; exit 2; }
export LC_ALL=C
export LUA_PATH="$root/lua/?.lua;$root/lua/?/init.lua;;"
mkdir -p "$out"
job=$here/interval_join.lua
gcc -std=c11 -O2 -Wall -Wextra -Werror -o "$out/gen" "$here/gen.c"
run_out=$out/interval_join.out

# "best_wall best_cpu peak_kb" over REPEATS runs of "$@"
best_time() {
    local bw="" bc="" bm="" w u s m c t0 t1
    for _ in $(seq "$repeats"); do
        t0=$EPOCHREALTIME
        /usr/bin/time -f "%U %S %M" -o "$run_out.time" "$@" > "$run_out" 2> "$run_out.err" \
            || { echo "interval_join.sh: failed: $*" >&2; cat "$run_out.err" >&2; return 1; }
        t1=$EPOCHREALTIME
        w=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.3f", b - a }')
        read -r u s m < <(tail -n 1 "$run_out.time")
        c=$(awk -v u="$u" -v s="$s" 'BEGIN { print u + s }')
        if [ -z "$bw" ] || awk -v a="$w" -v b="$bw" 'BEGIN { exit !(a < b) }'; then bw=$w; fi
        if [ -z "$bc" ] || awk -v a="$c" -v b="$bc" 'BEGIN { exit !(a < b) }'; then bc=$c; fi
        if [ -z "$bm" ] || [ "$m" -lt "$bm" ]; then bm=$m; fi
    done
    echo "$bw $bc $bm"
}

echo "wmrun: $wmrun; best of $repeats runs; load $(cut -d' ' -f1-3 /proc/loadavg)"
left=$out/ijoin_left_$records.csv right=$out/ijoin_right_$records.csv
[ -s "$left" ] || "$out/gen" -n "$records" -k 10000 -r 200 -d 500 -s 1 > "$left"
[ -s "$right" ] || "$out/gen" -n "$records" -k 10000 -r 200 -d 500 -s 2 > "$right"
printf '\n%-12s %9s %9s %12s %10s  %s\n' "$((2 * records)) records" "wall s" "CPU s" "records/s" "peak MB" "output"
for c in "pairs:-20 20 1s join" "few pairs:1000 1000 1s join" "no join:0 0 1s union"; do
    name=${c%%:*} args=${c#*:}
    # shellcheck disable=SC2086
    read -r wall cpu kb < <(best_time "$wmrun" "$job" "$left" "$right" $args) || exit 1
    printf '%-12s %9s %9s %12s %10s  %s\n' "$name" "$wall" "$cpu" \
        "$(awk -v n="$records" -v c="$cpu" 'BEGIN { printf "%.0f", (c > 0 ? 2 * n / c : 0) }')" \
        "$((kb / 1024))" "$(tail -n 1 "$run_out")"
done

read -r n1 n2 <<< "$mem"
printf '\n%-28s %10s\n' "all buffered, $rate per ms" "peak KB"
declare -A peak
for n in $n1 $n2; do
    l=$out/ijoin_mem_left_${n}_$rate.csv r=$out/ijoin_mem_right_${n}_$rate.csv
    [ -s "$l" ] || "$out/gen" -n "$n" -k 100000 -r "$rate" -d 0 -s 1 > "$l"
    [ -s "$r" ] || "$out/gen" -n "$n" -k 100000 -r "$rate" -d 0 -s 2 > "$r"
    read -r _ _ kb < <(best_time "$wmrun" "$job" "$l" "$r" 0 0 1000000h join) || exit 1
    peak[$n]=$kb
    printf '%-28s %10s\n' "$n per side" "$kb"
done
printf '\nbytes per buffered record: %s\n' \
    "$(awk -v a="${peak[$n1]}" -v b="${peak[$n2]}" -v n1="$n1" -v n2="$n2" \
        'BEGIN { printf "%.0f", (b - a) * 1024 / (2 * (n2 - n1)) }')"
