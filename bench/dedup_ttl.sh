#!/bin/bash
# dedup_ttl.sh - memory of a deduplication job with and without state_ttl (issue 28).
#
# The input: N distinct ids (default 3,000,000), each twice, the second 50 records after the
# first, one record per ms of event time (2N lines "id,ts", generated into $BENCH_DIR, never
# into the repository). The job (bench/dedup_ttl.lua) keeps an id the first time it comes:
#   ttl    state_ttl = {ttl = "10s", time = "event"}: an id's state is dropped 10 s of event
#          time after it was kept, and the key goes (about 20,000 keys live at any moment)
#   none   no TTL: every id stays held to the end (the job as written before state_ttl)
# Prints for each: the peak RSS (GNU time's maximum resident set size), the wall time, the
# CPU seconds (user + system: the figure to compare on a shared machine), and
# the "keys of ..." line of --metrics (keys held at the end, keys expired). Both must print
# the same number of kept ids (N). With TTL the peak is flat in N: try N = 1000000 too.
#
#   bench/dedup_ttl.sh [N]
#
# WMRUN names the wmrun to measure (default build/wmrun: run make first). Needs awk, GNU time.
#
# On a shared 2-core machine at load 20-30 (docs/performance.md, "Keys that expire"):
#   N = 3000000   ttl 22192 KB, 15.1 CPU s, 8918 keys held at the end (2991082 expired)
#                 none 1053328 KB, 15.6 CPU s, 3000000 held
#   N = 1000000   ttl 23708 KB, 4.4 CPU s, 13021 held; none 341316 KB, 3.9 CPU s, 1000000 held
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
root=$(dirname "$here")
out=${BENCH_DIR:-/tmp/wmrun-bench}
wmrun=${WMRUN:-$root/build/wmrun}
n=${1:-3000000}
mkdir -p "$out"
data="$out/dedup_$n.csv"
if [ ! -s "$data" ]; then
    awk -v n="$n" 'BEGIN { ts = 0
        for (i = 0; i < n + 50; i++) {
            if (i < n) printf "u%d,%d\n", i, ts++
            if (i >= 50) printf "u%d,%d\n", i - 50, ts++
        } }' >"$data"
fi
printf "%-5s %12s %10s %8s %s\n" job "peak RSS" "wall" "CPU s" "keys (--metrics)"
for mode in ttl none; do
    log="$out/dedup_$mode.time"
    /usr/bin/time -v "$wmrun" --metrics "$here/dedup_ttl.lua" "$data" "$mode" \
        >/dev/null 2>"$log"
    rss=$(awk -F': ' '/Maximum resident set size/ { print $2 }' "$log")
    wall=$(awk -F': ' '/Elapsed \(wall clock\)/ { print $2 }' "$log")
    cpu=$(awk -F': ' '/User time/ { u = $2 } /System time/ { s = $2 } END { print u + s }' "$log")
    keys=$(grep -o "keys of '[^']*': .*" "$log" | sed "s/keys of '[^']*': //")
    kept=$(awk '/^keyed process/ { print $(NF - 5) }' "$log")
    printf "%-5s %9s KB %10s %8s %s (records out %s)\n" "$mode" "$rss" "$wall" "$cpu" "$keys" "$kept"
done
