#!/bin/sh
# The scale-out demo (docs/scaleout.md): starts librdkafka's mock cluster with a 6-partition
# topic, three wmrun processes of one group on it, kills (SIGKILL) the one running partition
# events/0 half way through, shows its partitions and state moving to the other two, and checks
# that their combined output equals a single process's. Exit 0 when it does.
#   examples/scaleout/run.sh          (after `make`; WMRUN and KAFKA_MOCK may point elsewhere)
set -u
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
WMRUN=${WMRUN:-$root/build/wmrun}
KAFKA_MOCK=${KAFKA_MOCK:-$root/${WM_BUILD:-build}/kafka_mock}
T=$(mktemp -d "${TMPDIR:-/tmp}/wm-scaleout.XXXXXX")
pids=""
cleanup() {
  for p in $pids; do kill -KILL "$p" 2>/dev/null; done
  rm -rf "$T"
}
trap cleanup EXIT
trap 'exit 1' INT TERM

# waits (0.1 s steps, up to $2 tries) until the shell condition $1 holds
wait_until() {
  n=0
  until eval "$1"; do
    n=$((n + 1))
    [ "$n" -ge "$2" ] && { echo "run.sh: timed out waiting for: $1" >&2; return 1; }
    sleep 0.1
  done
}

"$KAFKA_MOCK" -d -t 300 events:6 >"$T/mock.out" 2>"$T/mock.err" &
pids="$!"
wait_until '[ -s "$T/mock.out" ]' 100 || exit 1
brokers=$(head -n 1 "$T/mock.out")
echo "== Kafka mock cluster at $brokers, topic events with 6 partitions"

"$WMRUN" "$here/load.lua" "$brokers" || exit 1
"$WMRUN" "$here/job.lua" "$brokers" "$T/single.txt" - single || exit 1
echo "== one process (no scale-out): $(wc -l <"$T/single.txt") window results"

mkdir -p "$T/out" "$T/cues"
for i in 1 2 3; do
  "$WMRUN" --checkpoint-dir "$T/ck" --checkpoint-interval 100ms "$here/job.lua" "$brokers" \
    "$T/out/sums.txt" "$T/cues" >"$T/p$i.out" 2>"$T/p$i.err" &
  eval "pid$i=$!"
  pids="$pids $!"
done
echo "== three processes started: $pid1 $pid2 $pid3"

# the task of events/0 stops itself at the cue, half way through its partition
wait_until '[ -s "$T/cues/events-0" ]' 600 || exit 1
child=$(cat "$T/cues/events-0")
wait_until '[ "$(cut -d" " -f3 /proc/$child/stat 2>/dev/null)" = T ]' 600 || exit 1
victim=$(cut -d" " -f4 "/proc/$child/stat")
for i in 1 2 3; do eval "[ \"\$pid$i\" = $victim ] && vi=$i"; done
echo "== process $vi (pid $victim) is half way through events/0; its rebalance lines:"
grep "group 'demo'" "$T/p$vi.err" | sed 's/^/   /'
echo "   its tasks' checkpoints: $(ls -d "$T"/ck/task-*/chk-* | wc -l) so far; killing it with SIGKILL"
kill -KILL "$victim"

# The survivors end once every partition has ended. librdkafka 2.0.2's mock cluster has been
# seen (about 1 run in 20 under load) to leave partitions assigned to nobody after the
# cooperative rebalance, for good: the survivors then wait with nothing to read. That is
# bounded here (2 minutes; the demo takes seconds) and reported with exit status 3.
survivors_done() {
  for i in 1 2 3; do
    [ "$i" = "$vi" ] && continue
    eval "kill -0 \$pid$i 2>/dev/null" && return 1
  done
  return 0
}
wait_until survivors_done 1200 || {
  echo "run.sh: the other two processes did not end within 2 minutes; their group lines:" >&2
  grep -h "group 'demo'" "$T"/p*.err >&2
  exit 3
}
status=0
for i in 1 2 3; do
  [ "$i" = "$vi" ] && continue
  eval "p=\$pid$i"
  wait "$p" || { echo "process $i failed:" >&2; cat "$T/p$i.err" >&2; status=1; }
  echo "== process $i (pid $p):"
  grep -E "group 'demo'|resuming from checkpoint" "$T/p$i.err" | sed 's/^/   /'
done
[ "$status" = 0 ] || exit 1

sort "$T"/out/sums.txt.* >"$T/union.txt"
sort "$T/single.txt" >"$T/single.sorted"
if cmp -s "$T/union.txt" "$T/single.sorted"; then
  echo "OK: the three processes' files together hold exactly the single run's $(wc -l <"$T/union.txt") results"
  exit 0
fi
echo "MISMATCH between the combined output and the single run:" >&2
diff "$T/single.sorted" "$T/union.txt" | head -20 >&2
exit 1
