#!/bin/bash
# window_join.sh - the window join and co-group (docs/joins.md), two measures:
#
#  speed   two CSV files id,ts,vc of RECORDS/2 records each (a record per ms, alternating
#          between the files; KEYS keys drawn at random), joined and co-grouped in tumbling
#          windows of 1 s (about RECORDS / KEYS / 1000 records per key and window, half per
#          side), on one core (-p 1, one thread). Also the plain window the join is built on
#          (both files united, key_by, a process window counting its records) for comparison.
#          Prints records/s: RECORDS over the best wall time and over the best CPU time (user
#          + system) of REPEATS runs, and the lines written; checks that the join wrote as
#          many pairs as the data hold (counted by awk from the files).
#  memory  the same files in one tumbling window of 1 h: every record stays buffered until
#          the end of input. Bytes per buffered record = (peak RSS of the job on RECORDS records
#          - its peak RSS on 1000 records) / (RECORDS - 1000), GNU time's maximum resident set
#          size: the window's state (the tag row that refers to each record, the record itself,
#          the window operator's list entry) plus what the allocator keeps. Measured with the
#          co-group (whose firing makes one line per key; the join's state is the same) and the
#          plain window, with records as C rows (parse_csv) and as Lua tables (a map after it).
#
#   bench/window_join.sh [-r REPEATS] [-n RECORDS] [-k KEYS]   (default: -r 3, -n 1000000,
#                                                                -k 500 (speed), 100000 (memory))
#
# WMRUN names the wmrun to measure (default build/wmrun: run make first); data and outputs go
# to $BENCH_DIR (default /tmp/wmrun-bench), never into the repository. Figures of one run only
# compare with each other: the machine and its load change between runs. Needs awk, GNU time.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
root=$(dirname "$here")
out=${BENCH_DIR:-/tmp/wmrun-bench}
wmrun=${WMRUN:-$root/build/wmrun}
repeats=3 records=1000000 keys=500 mem_keys=100000
while getopts "r:n:k:" opt; do
    case $opt in
    r) repeats=$OPTARG ;;
    n) records=$OPTARG ;;
    k) keys=$OPTARG ;;
    *) sed -n '2,28p' "$0" >&2; exit 2 ;;
    esac
done
[ -x "$wmrun" ] || { echo "window_join.sh: $wmrun not found: run make first" >&2; exit 2; }
export LC_ALL=C
export LUA_PATH="$root/lua/?.lua;$root/lua/?/init.lua;;"
mkdir -p "$out"
job=$here/window_join.lua

# LEFT RIGHT N K: N records of K keys, a record per ms, alternating between the two files
gen() {
    [ -s "$1" ] && [ -s "$2" ] && return
    awk -v n="$3" -v k="$4" -v l="$1" -v r="$2" 'BEGIN { srand(28); for (i = 0; i < n; i++)
        printf "k%06d,%.0f,%d\n", int(rand() * k), 1700000000000 + i, i % 100 > ((i % 2) ? r : l) }'
}

# "best_wall best_cpu peak_kb" over REPEATS runs of "$@" (peak: the largest)
best_time() {
    local bw="" bc="" pk=0 w u s m c t0 t1
    for _ in $(seq "$repeats"); do
        t0=$EPOCHREALTIME
        /usr/bin/time -f "%U %S %M" -o "$out/wj.time" "$@" > /dev/null 2> "$out/wj.err" \
            || { echo "window_join.sh: failed: $*" >&2; cat "$out/wj.err" >&2; return 1; }
        t1=$EPOCHREALTIME
        w=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.3f", b - a }')
        read -r u s m < <(tail -n 1 "$out/wj.time")
        c=$(awk -v u="$u" -v s="$s" 'BEGIN { print u + s }')
        if [ -z "$bw" ] || awk -v a="$w" -v b="$bw" 'BEGIN { exit !(a < b) }'; then bw=$w; fi
        if [ -z "$bc" ] || awk -v a="$c" -v b="$bc" 'BEGIN { exit !(a < b) }'; then bc=$c; fi
        [ "$m" -gt "$pk" ] && pk=$m
    done
    echo "$bw $bc $pk"
}

status=0
echo "wmrun: $wmrun; best of $repeats runs; load $(cut -d' ' -f1-3 /proc/loadavg)"

# ---- speed -----------------------------------------------------------------------------
l=$out/wj_left_${records}_$keys.csv r=$out/wj_right_${records}_$keys.csv
gen "$l" "$r" "$records" "$keys"
# the pairs the data hold: per key and 1 s window, lefts x rights
want=$(awk -F, 'FNR == 1 { side++ } { k = $1 SUBSEP int(($2 - 1700000000000) / 1000)
    if (side == 1) nl[k]++; else nr[k]++ } END { for (k in nl) p += nl[k] * nr[k]; print p + 0 }' "$l" "$r")
printf '\n%-34s %9s %9s %13s %13s %10s\n' "$records records, $keys keys, 1 s" "wall s" "CPU s" \
    "records/s" "rec/s (CPU)" "lines"
for what in join co_group window; do
    read -r wall cpu _ < <(best_time "$wmrun" "$job" "$l" "$r" "$what" 1s "$out/wj_$what.out") || exit 1
    lines=$(wc -l < "$out/wj_$what.out")
    printf '%-34s %9s %9s %13s %13s %10s\n' "$what" "$wall" "$cpu" \
        "$(awk -v n="$records" -v t="$wall" 'BEGIN { printf "%.0f", n / t }')" \
        "$(awk -v n="$records" -v t="$cpu" 'BEGIN { printf "%.0f", (t > 0 ? n / t : 0) }')" "$lines"
    if [ "$what" = join ] && [ "$lines" -ne "$want" ]; then
        echo "MISMATCH: the join wrote $lines pairs, the data hold $want" >&2; status=1
    fi
done

# ---- memory ----------------------------------------------------------------------------
ls_=$out/wj_left_1000_$mem_keys.csv rs_=$out/wj_right_1000_$mem_keys.csv
lb=$out/wj_left_${records}_$mem_keys.csv rb=$out/wj_right_${records}_$mem_keys.csv
gen "$ls_" "$rs_" 1000 "$mem_keys"
gen "$lb" "$rb" "$records" "$mem_keys"
printf '\n%-34s %12s %12s %16s\n' "one 1 h window, $mem_keys keys" "RSS 1000 KB" "RSS $records KB" \
    "bytes / record"
for what in co_group window; do
    for kind in rows tables; do
        read -r _ _ small < <(best_time "$wmrun" "$job" "$ls_" "$rs_" "$what" 1h /dev/null "$kind") || exit 1
        read -r _ _ big < <(best_time "$wmrun" "$job" "$lb" "$rb" "$what" 1h /dev/null "$kind") || exit 1
        printf '%-34s %12s %12s %16s\n' "$what ($kind)" "$small" "$big" \
            "$(awk -v a="$small" -v b="$big" -v n="$records" 'BEGIN { printf "%.0f", (b - a) * 1024 / (n - 1000) }')"
    done
done
exit $status
