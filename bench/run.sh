#!/bin/bash
# run.sh - the wmrun benchmark (`make bench`): builds everything, generates the input,
# runs every job and baseline BENCH_RUNS times, checks that they agree, and prints one
# table: events/s (median of the runs), peak RSS, and the target ratios (taken from the
# medians of this one run: never compare absolute figures across runs or machines).
#
#   bench/run.sh [--perf] [job ...]
#
#   BENCH_N      records in the input (default 10000000)
#   BENCH_KEYS   distinct keys (default 10000)
#   BENCH_RUNS   runs of each job and baseline (default 3; the median counts)
#   BENCH_DIR    build products, input and outputs (default /tmp/wmrun-bench)
#   BENCH_MEM_N  records of the memory row's input, one key each almost always: about
#                that many open (key, window) pairs at the end (default 1000000; 0 skips)
#   --perf       also `perf record` fast_path once and print its top functions
#   job          a subset of: handwritten fused framework fast_path lua_path csv_lua sliding
#                sliding60 session fast_path_p2 lua_path_p2 sliding_p2 session_p2
#                fast_path_t2 lua_path_t2 fast_path_1mk (default: all)
#
# Jobs: *_p2 is -p 2 on one thread (the exchange's cost), *_t2 is -p 2 --threads 2 (two
# cores), sliding60 is sliding.lua with 60 s windows every 5 s, fast_path_1mk is fast_path on
# an input of BENCH_N records and 10^6 keys (its CPU time per record against fast_path's).
# Checks (sorted compare, bench/compare.sh; the "i> " prefix of -p 2 output stripped):
# fast_path, lua_path, csv_lua, both plain.lua styles and the -p 2 and --threads 2 variants
# against handwritten, fast_path_1mk against handwritten on its input; sliding_p2 and
# session_p2 against their -p 1 output. Needs gcc, lua5.4, GNU time.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
dir=${BENCH_DIR:-/tmp/wmrun-bench}
n=${BENCH_N:-10000000}
keys=${BENCH_KEYS:-10000}
runs=${BENCH_RUNS:-3}
mem_n=${BENCH_MEM_N:-1000000}
perf_opt=0
jobs=()
for a in "$@"; do
    case $a in
    --perf) perf_opt=1 ;;
    -h | --help) sed -n '2,27p' "$0"; exit 0 ;;
    *) jobs+=("$a") ;;
    esac
done
[ ${#jobs[@]} -gt 0 ] || jobs=(handwritten fused framework fast_path lua_path csv_lua sliding
    sliding60 session fast_path_p2 lua_path_p2 sliding_p2 session_p2 fast_path_t2 lua_path_t2
    fast_path_1mk)

export LC_ALL=C
export LUA_PATH="$root/lua/?.lua;$root/lua/?/init.lua;;"
mkdir -p "$dir"
make -C "$root" --no-print-directory all > /dev/null
wmrun=$root/build/wmrun
CC=${CC:-gcc}
$CC -std=c11 -O2 -Wall -Wextra -Werror -o "$dir/gen" "$here/gen.c"
$CC -std=c11 -O2 -Wall -Wextra -Werror -o "$dir/handwritten" "$here/baseline/handwritten.c"

# gen's output is a pure function of its options: generate once per option set
input_for() { # N KEYS -> path
    local f="$dir/input_n$1_k$2.csv"
    if [ ! -s "$f" ]; then
        "$dir/gen" -n "$1" -k "$2" > "$f.tmp" 2> /dev/null
        mv "$f.tmp" "$f"
    fi
    echo "$f"
}
input=$(input_for "$n" "$keys")

command_for() { # JOB INPUT -> command line
    case $1 in
    handwritten) echo "$dir/handwritten $2" ;;
    fused | framework) echo "lua5.4 $here/baseline/plain.lua $1 $2" ;;
    *_mem | *_1mk | *_small) command_for "${1%_*}" "$2" ;;
    *_p2) echo "$wmrun -p 2 $here/${1%_p2}.lua $2" ;;
    *_t2) echo "$wmrun -p 2 --threads 2 $here/${1%_t2}.lua $2" ;;
    sliding60) echo "$wmrun $here/sliding.lua $2 60s 5s" ;;
    *) echo "$wmrun $here/$1.lua $2" ;;
    esac
}

median() { sort -g | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

declare -A rate rss walls cpus cpu maxkb
run_once() { # JOB INPUT: one timed run; appends to walls[JOB] and cpus[JOB], keeps maxkb[JOB]
    local j=$1 in=$2 cmd wall kb user sys
    cmd=$(command_for "$j" "$in")
    # shellcheck disable=SC2086  # cmd is a list of words
    /usr/bin/time -f '%e %M %U %S' -o "$dir/$j.time" $cmd > "$dir/$j.out" 2> "$dir/$j.err" || {
        echo "$j failed:" >&2; cat "$dir/$j.err" >&2; exit 1; }
    read -r wall kb user sys < <(tail -n 1 "$dir/$j.time")
    walls[$j]+="$wall"$'\n'
    cpus[$j]+="$(awk -v u="$user" -v s="$sys" 'BEGIN { print u + s }')"$'\n'
    [ "$kb" -gt "${maxkb[$j]:-0}" ] && maxkb[$j]=$kb
    return 0
}
summarise() { # JOB INPUT -> rate[JOB] (M events/s, median wall), cpu[JOB] (s, median), rss[JOB] (MB, max)
    local j=$1 in=$2 med
    med=$(printf '%s' "${walls[$j]}" | median)
    cpu[$j]=$(printf '%s' "${cpus[$j]}" | median)
    rate[$j]=$(awk -v n="$(wc -l < "$in")" -v t="$med" 'BEGIN { printf "%.2f", (t > 0 ? n / t / 1e6 : 0) }')
    rss[$j]=$(awk -v k="${maxkb[$j]}" 'BEGIN { printf "%.1f", k / 1024 }')
}
input_of() { # JOB -> its input
    case $1 in
    *_1mk) echo "$input_1mk" ;;
    *) echo "$input" ;;
    esac
}
run_job() { # JOB INPUT RUNS: all runs of one job in a row (for the memory row)
    for _ in $(seq "$3"); do run_once "$1" "$2"; done
    summarise "$1" "$2"
}

status=0
# On two threads, and with the file read in parts (fast_path and lua_path read it with
# parallel = true: at -p 2 two instances, each its half), records of one key reach its window
# in an order that depends on timing, so the Lua reduce's "first record" (its ts) may differ:
# those runs are compared with ts replaced by the start of its 5 s window (id, window and sum
# must still be equal). fast_path and lua_path pre-aggregate (docs/performance.md,
# "Pre-aggregation"): fast_path's window takes the file's first record, lua_path's reduce
# folds the parts' partials in file order, so their -p 2 runs are compared as they are.
window_of_ts() {
    awk '{ if (match($0, /"ts":[0-9]+/)) { t = substr($0, RSTART + 5, RLENGTH - 5) + 0
        $0 = substr($0, 1, RSTART + 4) sprintf("%.0f", t - t % 5000) substr($0, RSTART + RLENGTH) } print }'
}
check() { # JOB REFERENCE: same lines after sort, prefix "i> " of parallel print removed
    sed -E 's/^[0-9]+> //' "$dir/$1.out" > "$dir/$1.cmp"
    sed -E 's/^[0-9]+> //' "$dir/$2.out" > "$dir/$2.ref"
    case $1 in fast_path_t2 | fast_path_p2 | lua_path_t2 | lua_path_p2) ;;
    *_t2 | *_p2)
        window_of_ts < "$dir/$1.cmp" > "$dir/$1.cmp.w" && mv "$dir/$1.cmp.w" "$dir/$1.cmp"
        window_of_ts < "$dir/$2.ref" > "$dir/$2.ref.w" && mv "$dir/$2.ref.w" "$dir/$2.ref" ;;
    esac
    if ! "$here/compare.sh" "$dir/$2.ref" "$dir/$1.cmp" > "$dir/$1.check"; then
        echo "MISMATCH: $1 vs $2" >&2; cat "$dir/$1.check" >&2; status=1
    fi
}

echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'); load $(cut -d' ' -f1-3 /proc/loadavg)"
echo "input: $input ($n records, $keys keys), $runs interleaved runs each, median wall time (start-up and output included)"
has() { local x; for x in "${jobs[@]}"; do [ "$x" = "$1" ] && return 0; done; return 1; }
# Runs go round the jobs (job 1, job 2, ..., job 1, ...) rather than job by job: the VM's core
# speed drifts over minutes, and interleaving gives every job the same mix of fast and slow
# minutes, so the ratios of medians compare like with like.
input_1mk=
has fast_path_1mk && input_1mk=$(input_for "$n" 1000000)
for _ in $(seq "$runs"); do
    for j in "${jobs[@]}"; do run_once "$j" "$(input_of "$j")"; done
done
for j in "${jobs[@]}"; do summarise "$j" "$(input_of "$j")"; done
for j in fast_path lua_path csv_lua fused framework fast_path_p2 lua_path_p2 fast_path_t2 lua_path_t2; do
    has "$j" && has handwritten && check "$j" handwritten
done
if has fast_path_1mk; then
    run_job handwritten_1mk "$input_1mk" 1
    check fast_path_1mk handwritten_1mk
fi
for j in sliding session; do
    has "$j" && has "${j}_p2" && check "${j}_p2" "$j"
done

printf '\n%-14s %14s %14s %14s\n' job "M events/s" "CPU s" "peak RSS MB"
for j in "${jobs[@]}"; do
    printf '%-14s %14s %14s %14s\n' "$j" "${rate[$j]}" "${cpu[$j]}" "${rss[$j]}"
done
ratio() { # NAME A B [TARGET]: rate[A] / rate[B]
    if [ -n "${rate[$2]:-}" ] && [ -n "${rate[$3]:-}" ]; then
        awk -v a="${rate[$2]}" -v b="${rate[$3]}" -v name="$1" -v t="${4:-}" 'BEGIN {
            r = (b > 0 ? a / b : 0)
            verdict = (t == "" ? "" : sprintf("   (target >= %s: %s)", t, (r >= t + 0 ? "met" : "NOT met")))
            printf "%-34s %6.2f%s\n", name, r, verdict }'
    fi
}
echo
ratio "fast_path / handwritten" fast_path handwritten 0.5
ratio "lua_path / plain framework" lua_path framework 1.2
ratio "csv_lua / plain framework" csv_lua framework 2.5
ratio "lua_path / plain fused" lua_path fused 0.7
ratio "fast_path --threads 2 / fast_path" fast_path_t2 fast_path 1.6
ratio "lua_path --threads 2 / lua_path" lua_path_t2 lua_path 1.6
ratio "sliding60 (60 s / 5 s) / fast_path" sliding60 fast_path 0.5
ratio "sliding (10 s / 1 s) / fast_path" sliding fast_path 0.25
ratio "fast_path -p 2 / fast_path" fast_path_p2 fast_path
if [ -n "${cpu[fast_path_1mk]:-}" ] && [ -n "${cpu[fast_path]:-}" ]; then
    awk -v a="${cpu[fast_path_1mk]}" -v b="${cpu[fast_path]}" 'BEGIN { r = (b > 0 ? a / b : 0)
        printf "%-34s %6.2f   (target <= 2: %s)\n", "CPU/record 1M keys / 10k keys", r, (r <= 2 ? "met" : "NOT met") }'
fi

if [ "$mem_n" -gt 0 ] && has fast_path && has handwritten; then
    # ids drawn from 10^8 keys: almost every record opens its own (key, window) pair,
    # and all of them stay open until the end of input
    big=$(input_for "$mem_n" 100000000)
    run_job handwritten_mem "$big" 1
    run_job fast_path_mem "$big" 1
    # the same job on 1000 records: the process's size without window state
    run_job fast_path_small "$(input_for 1000 1000)" 1
    check fast_path_mem handwritten_mem
    pairs=$(wc -l < "$dir/fast_path_mem.out")
    awk -v a="${rss[fast_path_mem]}" -v b="${rss[handwritten_mem]}" -v p="$pairs" \
        'BEGIN { r = a / b; printf "peak RSS, %d open (key, window) pairs: fast_path %.1f MB, handwritten %.1f MB: %.2f x (target <= 2: %s)\n", p, a, b, r, (r <= 2 ? "met" : "NOT met") }'
    awk -v a="${maxkb[fast_path_mem]}" -v z="${maxkb[fast_path_small]}" -v p="$pairs" \
        'BEGIN { r = (a - z) * 1024 / p; printf "bytes per open (key, window) pair (peak RSS over a 1000-record run, / pairs): %.0f   (target <= 150: %s)\n", r, (r <= 150 ? "met" : "NOT met") }'
fi
[ $status = 0 ] && echo "outputs: all checked equal (sorted)"

if [ "$perf_opt" = 1 ] && command -v perf > /dev/null; then
    echo; echo "perf: fast_path, top functions (self time)"
    perf record -q -o "$dir/perf.data" -g "$wmrun" "$here/fast_path.lua" "$input" > /dev/null 2>&1
    perf report -i "$dir/perf.data" --no-children --stdio -g none 2> /dev/null | grep -E '^ +[0-9]' | head -15
fi
exit $status
