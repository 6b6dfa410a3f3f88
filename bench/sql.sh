#!/bin/bash
# sql.sh - the SQL benchmark: scenario k's query (bench/sql_tumble.sql) against the
# equivalent Lua fast-path job (bench/sql_lua.lua) on the benchmark file of bench/gen.c.
# Checks that both give the same counts, and prints the times and their ratio.
#
#   bench/sql.sh [-r REPEATS] [RECORDS ...]      (default: -r 5, 1000000 5000000)
#
# The fastest of REPEATS runs counts. Data, outputs and the copy of the script go to
# $BENCH_DIR (default /tmp/wmrun-bench), never into the repository. Needs build/wmrun
# (make), gcc, lua5.4, bc and GNU time (/usr/bin/time).
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
root=$(dirname "$here")
out=${BENCH_DIR:-/tmp/wmrun-bench}
wmrun=$root/build/wmrun
repeats=5
while getopts "r:" opt; do
    case $opt in
    r) repeats=$OPTARG ;;
    *) sed -n '2,10p' "$0" >&2; exit 2 ;;
    esac
done
shift $((OPTIND - 1))
sizes=("$@")
[ ${#sizes[@]} -gt 0 ] || sizes=(1000000 5000000)

[ -x "$wmrun" ] || { echo "sql.sh: $wmrun not found: run make first" >&2; exit 2; }
mkdir -p "$out"
gcc -std=c11 -O2 -Wall -Wextra -Werror -o "$out/gen" "$here/gen.c"

# "best_wall best_cpu" in seconds over REPEATS runs of "$@" (stdout to $run_out); cpu is
# user + system time, which other processes on a shared machine disturb less than wall time
best_time() {
    local bw="" bc="" w u s c
    for _ in $(seq "$repeats"); do
        /usr/bin/time -f "%e %U %S" -o "$run_out.time" "$@" > "$run_out" \
            || { echo "sql.sh: failed: $*" >&2; return 1; }
        read -r w u s < "$run_out.time"
        c=$(echo "$u + $s" | bc)
        if [ -z "$bw" ] || [ "$(echo "$w < $bw" | bc)" = 1 ]; then bw=$w; fi
        if [ -z "$bc" ] || [ "$(echo "$c < $bc" | bc)" = 1 ]; then bc=$c; fi
    done
    echo "$bw $bc"
}

printf '%-9s %9s %9s %8s %9s %9s %8s\n' records "lua wall" "sql wall" ratio "lua cpu" "sql cpu" ratio
status=0
for n in "${sizes[@]}"; do
    data=$out/sql_in_$n.csv
    [ -s "$data" ] || "$out/gen" -n "$n" > "$data"
    job=$out/sql_$n
    mkdir -p "$job"
    cp "$here/sql_tumble.sql" "$job/sql_tumble.sql"
    ln -sf "$data" "$job/sql_tumble.csv"
    run_out=$job/lua.out
    tl=$(best_time "$wmrun" "$here/sql_lua.lua" "$data") || exit 1
    run_out=$job/sql.out
    ts=$(best_time "$wmrun" --sql "$job/sql_tumble.sql") || exit 1
    if ! check=$(lua5.4 "$here/sql_check.lua" "$job/sql.out" "$job/lua.out"); then
        echo "$check" >&2
        status=1
    fi
    read -r lw lc <<< "$tl"
    read -r sw sc <<< "$ts"
    printf '%-9s %9s %9s %8s %9s %9s %8s   %s\n' "$n" "$lw" "$sw" "$(echo "scale=3; $sw / $lw" | bc)" \
        "$lc" "$sc" "$(echo "scale=3; $sc / $lc" | bc)" "$check"
done
exit $status
