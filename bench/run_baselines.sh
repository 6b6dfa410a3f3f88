#!/bin/bash
# run_baselines.sh - build the generator and the baselines, generate input,
# run each baseline, check that all outputs agree, and print a table of
# wall time, records/s and peak RSS.
#
#   bench/run_baselines.sh [-n RECORDS] [-r REPEATS] [-s] [baseline ...]
#
#   -n RECORDS  input size (default 1000000); other gen options can be
#               passed through GEN_ARGS, e.g. GEN_ARGS="-k 100000"
#   -r REPEATS  runs per baseline, the fastest counts (default 3)
#   -s          skip the framework baseline (slow: ~0.3 M records/s)
#   baseline    any of: handwritten fused framework (default: all three)
#
# Build products, input and outputs go to $BENCH_DIR (default
# /tmp/wmrun-bench), never into the repository. Needs gcc, lua5.4 and
# GNU time (/usr/bin/time).
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
out_dir=${BENCH_DIR:-/tmp/wmrun-bench}
records=1000000
repeats=3
skip_framework=0
while getopts "n:r:s" opt; do
    case $opt in
    n) records=$OPTARG ;;
    r) repeats=$OPTARG ;;
    s) skip_framework=1 ;;
    *) sed -n '2,16p' "$0" >&2; exit 2 ;;
    esac
done
shift $((OPTIND - 1))
if [ $# -gt 0 ]; then
    baselines=("$@")
else
    baselines=(handwritten fused framework)
fi

CC=${CC:-gcc}
CFLAGS=${CFLAGS:--std=c11 -O2 -Wall -Wextra -Werror}
mkdir -p "$out_dir"
# shellcheck disable=SC2086  # CFLAGS is a list of words
$CC $CFLAGS -o "$out_dir/gen" "$here/gen.c"
# shellcheck disable=SC2086
$CC $CFLAGS -o "$out_dir/handwritten" "$here/baseline/handwritten.c"

gen_args="-n $records ${GEN_ARGS:-}"
input="$out_dir/input$(echo "$gen_args" | tr -d ' -').csv"
if [ ! -s "$input" ]; then
    # shellcheck disable=SC2086
    "$out_dir/gen" $gen_args > "$input.tmp"
    mv "$input.tmp" "$input"
fi
echo "input: $input ($gen_args, $(wc -c < "$input") bytes)"

command_for() {
    case $1 in
    handwritten) echo "$out_dir/handwritten $input" ;;
    fused) echo "lua5.4 $here/baseline/plain.lua fused $input" ;;
    framework) echo "lua5.4 $here/baseline/plain.lua framework $input" ;;
    *) echo "unknown baseline: $1" >&2; exit 2 ;;
    esac
}

printf '%-12s %10s %9s %12s %12s\n' baseline records "wall s" "M records/s" "peak RSS MB"
reference=
status=0
for b in "${baselines[@]}"; do
    if [ "$b" = framework ] && [ "$skip_framework" = 1 ]; then
        continue
    fi
    cmd=$(command_for "$b")
    best=
    rss=
    for _ in $(seq "$repeats"); do
        # %e wall seconds, %M peak RSS in KB
        # shellcheck disable=SC2086
        /usr/bin/time -f '%e %M' -o "$out_dir/$b.time" $cmd > "$out_dir/$b.out" 2> "$out_dir/$b.err"
        read -r wall kb < "$out_dir/$b.time"
        if [ -z "$best" ] || awk -v a="$wall" -v b="$best" 'BEGIN { exit !(a < b) }'; then
            best=$wall
            rss=$kb
        fi
    done
    rate=$(awk -v n="$records" -v t="$best" 'BEGIN { printf "%.2f", (t > 0 ? n / t / 1e6 : 0) }')
    printf '%-12s %10d %9.2f %12s %12.1f\n' "$b" "$records" "$best" "$rate" "$(awk -v k="$rss" 'BEGIN { print k / 1024 }')"
    if [ -z "$reference" ]; then
        reference=$b
    elif ! cmp -s "$out_dir/$reference.out" "$out_dir/$b.out"; then
        "$here/compare.sh" "$out_dir/$reference.out" "$out_dir/$b.out" || status=1
    fi
done
[ $status = 0 ] && echo "outputs: identical (byte for byte)"
exit $status
