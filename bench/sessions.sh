#!/bin/bash
# sessions.sh - session windows with many open sessions per key (issue 34), two measures:
#
#  one key   N records of one key, 10 s apart, session gap 5 s, the watermark held back (an
#            out-of-orderness bound of 10^6 h): all N sessions stay open until the end of
#            input, and every record lands after the last. Prints the wall time for each N
#            and its ratio to the first N's: about N / N1 when a record's cost does not
#            depend on the key's open sessions, about (N / N1)^2 when it grows with them.
#  two parts bench/gen -n RECORDS -k 100 -r 1 -d 0 (100 keys, a record per ms), session gap
#            50 ms (about 6 sessions per key and second), read with parallel = true at -p 1
#            and at -p 2 (two instances on one thread, each reading its half): at -p 2 the
#            window's watermark is the first half's, so the sessions the second half opens
#            stay open until the first half reaches them. Checks that both print the same
#            sessions: the same (id, sum) lines, sorted, with the "i> " prefix of -p 2 and the
#            first record's ts removed (a session across the halves' boundary that the second
#            half opened first keeps that half's first record at -p 2: sum keeps the state of
#            the earliest window that exists when they merge, and session windows do not
#            order first records by channel as tumbling ones do, first_by_chan).
#
#   bench/sessions.sh [-r REPEATS] [-n RECORDS] [N ...]     (default: -r 3, -n 1000000,
#                                                            10000 20000 40000)
#
# The fastest of REPEATS runs counts: wall seconds (bash's clock, to the ms) and user + system
# CPU seconds (GNU time, in 10 ms steps). Figures of one run only compare with each other:
# the machine and its load change between runs. WMRUN names the wmrun to measure (default
# build/wmrun: run make first); data and outputs go to $BENCH_DIR (default /tmp/wmrun-bench),
# never into the repository. Needs gcc, awk, GNU time.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
root=$(dirname "$here")
out=${BENCH_DIR:-/tmp/wmrun-bench}
wmrun=${WMRUN:-$root/build/wmrun}
repeats=3 records=1000000
while getopts "r:n:" opt; do
    case $opt in
    r) repeats=$OPTARG ;;
    n) records=$OPTARG ;;
    *) sed -n '2,27p' "$0" >&2; exit 2 ;;
    esac
done
shift $((OPTIND - 1))
sizes=("$@")
[ ${#sizes[@]} -gt 0 ] || sizes=(10000 20000 40000)

[ -x "$wmrun" ] || { echo "sessions.sh: $wmrun not found: run make first" >&2; exit 2; }
export LC_ALL=C
export LUA_PATH="$root/lua/?.lua;$root/lua/?/init.lua;;"
mkdir -p "$out"
job=$here/session_many.lua

# "best_wall best_cpu" over REPEATS runs of "$@", stdout to $run_out
best_time() {
    local bw="" bc="" w u s c t0 t1
    for _ in $(seq "$repeats"); do
        t0=$EPOCHREALTIME
        /usr/bin/time -f "%U %S" -o "$run_out.time" "$@" > "$run_out" 2> "$run_out.err" \
            || { echo "sessions.sh: failed: $*" >&2; cat "$run_out.err" >&2; return 1; }
        t1=$EPOCHREALTIME
        w=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.3f", b - a }')
        read -r u s < <(tail -n 1 "$run_out.time")
        c=$(awk -v u="$u" -v s="$s" 'BEGIN { print u + s }')
        if [ -z "$bw" ] || awk -v a="$w" -v b="$bw" 'BEGIN { exit !(a < b) }'; then bw=$w; fi
        if [ -z "$bc" ] || awk -v a="$c" -v b="$bc" 'BEGIN { exit !(a < b) }'; then bc=$c; fi
    done
    echo "$bw $bc"
}

status=0
echo "wmrun: $wmrun; best of $repeats runs; load $(cut -d' ' -f1-3 /proc/loadavg)"
printf '\n%-28s %9s %9s %14s\n' "one key, open sessions" "wall s" "CPU s" "wall / first"
first=
for n in "${sizes[@]}"; do
    data=$out/sessions_one_key_$n.csv
    [ -s "$data" ] || awk -v n="$n" 'BEGIN { for (i = 0; i < n; i++)
        printf "k1,%.0f,%d\n", 1700000000000 + i * 10000, i % 100 + 1 }' > "$data"
    run_out=$out/sessions_one_key_$n.out
    read -r wall cpu < <(best_time "$wmrun" "$job" "$data" 5s 1000000h) || exit 1
    lines=$(wc -l < "$run_out")
    if [ "$lines" -ne "$n" ]; then
        echo "MISMATCH: $n open sessions printed $lines windows" >&2; status=1
    fi
    [ -n "$first" ] || first=$wall
    printf '%-28s %9s %9s %14s\n' "$n" "$wall" "$cpu" \
        "$(awk -v a="$wall" -v b="$first" 'BEGIN { printf "%.1f", (b > 0 ? a / b : 0) }')"
done

gcc -std=c11 -O2 -Wall -Wextra -Werror -o "$out/gen" "$here/gen.c"
data=$out/sessions_parts_n$records.csv
[ -s "$data" ] || "$out/gen" -n "$records" -k 100 -r 1 -d 0 > "$data" 2> /dev/null
printf '\n%-28s %9s %9s\n' "two parts, $records records" "wall s" "CPU s"
for p in 1 2; do
    run_out=$out/sessions_parts_p$p.out
    read -r wall cpu < <(best_time "$wmrun" -p "$p" "$job" "$data" 50ms) || exit 1
    printf '%-28s %9s %9s\n' "-p $p" "$wall" "$cpu"
    sed -E 's/^[0-9]+> //; s/"ts":[0-9-]+,//' "$run_out" > "$run_out.cmp"
done
if ! "$here/compare.sh" "$out/sessions_parts_p1.out.cmp" "$out/sessions_parts_p2.out.cmp" > /dev/null; then
    echo "MISMATCH: the two-part job's -p 2 output differs from its -p 1 output" >&2; status=1
fi
firsts=$(sed -E 's/^[0-9]+> //' "$out/sessions_parts_p2.out" | sort | comm -13 <(sort "$out/sessions_parts_p1.out") - | wc -l)
[ $status = 0 ] && echo "outputs: checked (one window per open session; -p 2 = -p 1 as (id, sum), sorted;" \
    "$firsts of the -p 2 sessions kept another first record's ts)"
exit $status
