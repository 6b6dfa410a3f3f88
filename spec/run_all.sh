#!/bin/sh
# Runs every suite: the C core's unit tests and the busted specs (which include the
# end-to-end runs of the examples), in lanes beside each other. Ends with one line:
# "N passed, M failed".
# usage: spec/run_all.sh [build-dir] [--list | lane...]
#   --list  prints the lanes (name, seconds, command) and runs none
#   lane... runs only these lanes (names as --list prints them)
#   J=n     lanes at a time (default: 3 per CPU); J=1 runs them one after the other
#   WMRUN_VALGRIND=1  the C tests and every wmrun under valgrind (make valgrind)
#   WM_TEST_LOG=file  every lane's whole output goes into this file too
# A lane is one process: the C tests (build/test_core, all suites or some), or busted on one
# spec file (all of it, or the tests whose names a pattern of spec/lanes matches). Every
# spec/*_spec.lua runs; spec/lanes only splits the long files and says how long lanes take, so
# that the longest start first. docs/testing.md says more.
# (internal: spec/run_all.sh --lane DIR runs the lane described in DIR)
cd "$(dirname "$0")/.." || exit 2

if [ "$1" = "--lane" ]; then
  # One lane: DIR holds `name`, `kind` (c or busted) and `args` (one a line); the lane writes
  # `out` (everything it printed) and `result` ("passed failed rc ms cpu-ms"). Its temporary
  # directory is the one DIR/tmp names: the run's wmrun-test.NN (spec/tmp_spec.lua wants a
  # base named wmrun-test.*).
  d=$2
  name=$(cat "$d/name")
  kind=$(cat "$d/kind")
  set --
  while IFS= read -r a || [ -n "$a" ]; do set -- "$@" "$a"; done <"$d/args"
  tmp=$(cat "$d/tmp")
  mkdir -p "$tmp"
  export WM_TEST_TMP="$tmp" TMPDIR="$tmp"
  start=$(date +%s%N)
  if [ "$kind" = c ]; then
    if [ -n "$WMRUN_VALGRIND" ]; then
      env LD_PRELOAD="$LANE_PRELOAD" valgrind -q --error-exitcode=99 --leak-check=full \
        "$WM_BUILD/test_core" "$@" >"$d/out" 2>&1
    else
      env LD_PRELOAD="$LANE_PRELOAD" "$WM_BUILD/test_core" "$@" >"$d/out" 2>&1
    fi
    rc=$?
    line=$(grep -E '^C core: [0-9]+ passed, [0-9]+ failed' "$d/out")
    p=$(echo "$line" | sed -nE 's/.* ([0-9]+) passed.*/\1/p')
    f=$(echo "$line" | sed -nE 's/.* ([0-9]+) failed.*/\1/p')
    [ -n "$line" ] || { p=0; f=0; }
  else
    env LD_PRELOAD="$LANE_PRELOAD" lua5.4 /usr/bin/busted -o TAP "$@" >"$d/out" 2>&1
    rc=$?
    p=$(grep -cE '^ok ' "$d/out")
    f=$(grep -cE '^not ok ' "$d/out")
  fi
  # a lane that ended badly without a failed test (a crash, a load error, a leak report at
  # exit) is one failure of its own
  [ "$rc" -ne 0 ] && [ "$f" -eq 0 ] && f=1
  ms=$((($(date +%s%N) - start) / 1000000))
  # the CPU time of the lane's processes (user + system), from the shell's `times`
  times >"$d/times"
  cpu=$(sed -n 2p "$d/times" | awk '{ t = 0; for (i = 1; i <= 2; i++) { split($i, a, "m"); sub(/s$/, "", a[2])
    t += a[1] * 60 + a[2] }; printf "%d", t * 1000 }')
  echo "$p $f $rc $ms ${cpu:-0}" >"$d/result"
  status=ok
  [ "$f" -ne 0 ] && status=FAILED
  printf '%-7s %-18s %5d passed, %d failed %5d.%d s (cpu %d.%d s)\n' "$status" "$name" "$p" "$f" $((ms / 1000)) \
    $((ms % 1000 / 100)) $((${cpu:-0} / 1000)) $((${cpu:-0} % 1000 / 100))
  exit 0
fi

BUILD=build
case $1 in -* | '') ;; *) BUILD=$1; shift ;; esac
list=
[ "$1" = --list ] && { list=1; shift; }
: "${WMRUN:=$PWD/$BUILD/wmrun}"
export WMRUN
export WM_BUILD="$BUILD"
export LUA_PATH="$PWD/lua/?.lua;$PWD/lua/?/init.lua;$PWD/spec/?.lua;;"
: "${LUA_CPATH:=$PWD/$BUILD/?.so;;}"
export LUA_CPATH
# The sanitizers `make asan` preloads are for the lanes' processes (wmrun, lua5.4 loading
# wm.core, test_core), not for this script's tools (mktemp, xargs, grep exit 1 at their
# leak check under them).
export LANE_PRELOAD="${LANE_PRELOAD:-$LD_PRELOAD}"
unset LD_PRELOAD
nproc=$(nproc 2>/dev/null || getconf _NPROCESSORS_ONLN 2>/dev/null || echo 1)
: "${J:=$((nproc * 3))}"
case $J in '' | *[!0-9]* | 0) echo "run_all.sh: J must be a number of lanes, got '$J'"; exit 2 ;; esac
[ -x "$BUILD/test_core" ] || { echo "run_all.sh: no $BUILD/test_core (make all builds it)"; exit 2; }

# Every temporary file of the suite goes into one directory of its own, one folder in it per
# lane (spec/helper.lua's tmpname/tmpdir/sh use WM_TEST_TMP; tools honour TMPDIR), removed at
# exit.
TMP_PREFIX=wmrun-test.
tmp_root=${TMPDIR:-/tmp}
before=$(ls -A "$tmp_root" | grep -F "$TMP_PREFIX")
run=$(mktemp -d "$tmp_root/${TMP_PREFIX}XXXXXX")
[ -d "$run" ] || { echo "run_all.sh: cannot make a temporary directory in $tmp_root"; exit 2; }
trap 'rm -rf "$run"' EXIT
trap 'exit 130' INT TERM
# (a suite running beside this one knows this directory by this file)
: >"$run/run_all.out"

# The lanes, "seconds name kind file-or-dash arg..." one a line in $run/plan, from spec/lanes:
# its lines "seconds name file pattern" split a spec file (or the C tests, file `c`) by a
# pattern (busted --filter; for `c`, suite names); pattern `-` is the rest of the file (every
# test no other lane of the file has), added with 2 s when spec/lanes has no such line. Each
# test thus runs in exactly one lane whatever its name. A spec file spec/lanes does not name
# is one lane of 2 s.
awk -v build="$BUILD" '
  /^[ \t]*(#|$)/ { next }
  {
    secs = $1; name = $2; file = $3
    pat = $0; sub(/^[ \t]*[^ \t]+[ \t]+[^ \t]+[ \t]+[^ \t]+[ \t]*/, "", pat)
    if (!(file in nf)) { order[++nfiles] = file; nf[file] = 0 }
    if (pat == "-") { rest_secs[file] = secs; rest_name[file] = name; next }
    n = ++nf[file]; lsecs[file, n] = secs; lname[file, n] = name; lpat[file, n] = pat
  }
  END {
    for (i = 1; i <= nfiles; i++) {
      file = order[i]
      if (file == "c") {
        # C suites: a lane runs the suites it names; the rest lane all the others (-x)
        excl = ""
        for (n = 1; n <= nf[file]; n++) {
          gsub(/[ \t]+/, "\t", lpat[file, n])
          printf "%s\t%s\tc\t-\t%s\n", lsecs[file, n], lname[file, n], lpat[file, n]
          excl = excl "\t" lpat[file, n]
        }
        printf "%s\t%s\tc\t-\t%s\n", (file in rest_secs) ? rest_secs[file] : 2,
          (file in rest_name) ? rest_name[file] : "c", (excl == "") ? "" : "-x" excl
        continue
      }
      outs = ""
      for (n = 1; n <= nf[file]; n++) {
        printf "%s\t%s\tbusted\t%s\t--filter=%s%s\n", lsecs[file, n], lname[file, n], file, lpat[file, n], outs
        outs = outs "\t--filter-out=" lpat[file, n]
      }
      rn = (file in rest_name) ? rest_name[file] : file
      sub(/^spec\//, "", rn); sub(/_spec\.lua$/, "", rn)
      printf "%s\t%s\tbusted\t%s\t%s\n", (file in rest_secs) ? rest_secs[file] : 2, rn, file, substr(outs, 2)
    }
  }' spec/lanes >"$run/table" || exit 2
# every spec file: those of the table that exist, then the others as whole-file lanes
for f in spec/*_spec.lua; do
  [ -f "$f" ] || continue
  awk -F '\t' -v f="$f" '$4 == f { found = 1 } END { exit !found }' "$run/table" && continue
  n=${f#spec/}
  printf '2\t%s\tbusted\t%s\t\n' "${n%_spec.lua}" "$f" >>"$run/table"
done
# (a file of spec/lanes that is gone is left out: its tests went with it)
awk -F '\t' '$4 == "-" || system("test -f \"" $4 "\"") == 0' "$run/table" |
  sort -t "$(printf '\t')" -k1,1nr -s >"$run/plan"

if [ -n "$list" ]; then
  awk -F '\t' '{ a = ""; for (i = 5; i <= NF; i++) if ($i != "") a = a " \x27" $i "\x27"
    printf "%-18s %3d s  %s\n", $2, $1, ($3 == "c" ? "test_core" a : "busted" a " " $4) }' "$run/plan"
  exit 0
fi
# the lanes asked for (names as --list prints them)
if [ $# -gt 0 ]; then
  for l in "$@"; do
    awk -F '\t' -v l="$l" '$2 == l { f = 1 } END { exit !f }' "$run/plan" ||
      { echo "run_all.sh: no lane '$l' (spec/run_all.sh --list names them)"; exit 2; }
  done
  awk -F '\t' -v want=" $* " 'index(want, " " $2 " ")' "$run/plan" >"$run/plan.some"
  mv "$run/plan.some" "$run/plan"
fi

# One folder per lane (lanes/NN), longest first.
mkdir "$run/lanes"
i=0
while IFS="$(printf '\t')" read -r secs name kind file args; do
  i=$((i + 1))
  d="$run/lanes/$(printf '%02d' $i)"
  mkdir "$d"
  echo "$name" >"$d/name"
  echo "$kind" >"$d/kind"
  echo "$secs" >"$d/secs"
  echo "$run/${TMP_PREFIX}$(printf '%02d' $i)" >"$d/tmp"
  # args: tab-separated in the plan, one a line in the lane's file; the spec file last
  printf '%s\n' "$args" | tr '\t' '\n' | sed '/^$/d' >"$d/args"
  [ "$kind" = busted ] && echo "$file" >>"$d/args"
done <"$run/plan"
lanes=$i

echo "== $lanes lanes ($BUILD/test_core and spec/*_spec.lua), $J at a time, in $run"
t0=$(date +%s%N)
export J
for d in "$run"/lanes/*; do printf '%s\0' "$d"; done | xargs -0 -n 1 -P "$J" sh spec/run_all.sh --lane
ms=$((($(date +%s%N) - t0) / 1000000))

passed=0
failed=0
cpu=0
for d in "$run"/lanes/*; do
  if [ ! -f "$d/result" ]; then
    echo "not ok: lane $(cat "$d/name") did not end"
    failed=$((failed + 1))
    continue
  fi
  read -r p f rc lms lcpu <"$d/result"
  cpu=$((cpu + lcpu))
  passed=$((passed + p))
  failed=$((failed + f))
  if [ "$f" -ne 0 ]; then
    echo "== lane $(cat "$d/name") failed (exit $rc; again: spec/run_all.sh $BUILD $(cat "$d/name")):" \
      "its whole output"
    cat "$d/out"
  elif [ "$p" -eq 0 ]; then
    # not a failure (the file's rest lane runs whatever the pattern no longer matches)
    echo "note: lane $(cat "$d/name") ran no test: its pattern in spec/lanes matches none"
  fi
  # (the sanitizers and valgrind make every lane slower: the seconds are those of a plain build)
  secs=$(cat "$d/secs")
  [ -z "$LANE_PRELOAD$WMRUN_VALGRIND" ] && [ "$lms" -gt $((secs * 2000 + 10000)) ] &&
    echo "note: lane $(cat "$d/name") took $((lms / 1000)) s, spec/lanes says $secs s: correct it there," \
      "so that the longest lanes start first"
done

if [ -n "$WM_TEST_LOG" ]; then
  for d in "$run"/lanes/*; do
    echo "== lane $(cat "$d/name"): $(tr '\n' ' ' <"$d/args" | sed 's/ $//')"
    cat "$d/out" 2>/dev/null
  done >"$WM_TEST_LOG"
fi

# Nothing of the suite's own may stay in the temporary folder: only this run's directory is new.
left=$(ls -A "$tmp_root" | grep -F "$TMP_PREFIX" | grep -vxF "$(basename "$run")" |
  while read -r e; do
    echo "$before" | grep -qxF "$e" && continue
    [ -e "$tmp_root/$e" ] || continue # gone meanwhile: a suite running beside this one
    [ -e "$tmp_root/$e/run_all.out" ] && continue # the directory of a suite running beside this one
    echo "$tmp_root/$e"
  done)
if [ -n "$left" ]; then
  echo "not ok: the suite left temporary files outside its own directory:"; echo "$left"
  failed=$((failed + 1))
fi

echo "== $lanes lanes in $((ms / 1000)).$((ms % 1000 / 100)) s (cpu $((cpu / 1000)) s)"
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
