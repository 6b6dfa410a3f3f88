#!/bin/sh
# Runs every suite: the C core's unit tests and the busted specs (which include the
# end-to-end runs of the examples). Ends with one line: "N passed, M failed".
# usage: spec/run_all.sh [build-dir]
BUILD=${1:-build}
cd "$(dirname "$0")/.." || exit 2
: "${WMRUN:=$PWD/$BUILD/wmrun}"
export WMRUN
export WM_BUILD="$BUILD"
export LUA_PATH="$PWD/lua/?.lua;$PWD/lua/?/init.lua;$PWD/spec/?.lua;;"
: "${LUA_CPATH:=$PWD/$BUILD/?.so;;}"
export LUA_CPATH
passed=0
failed=0
# Every temporary file of the suite goes into one directory of its own (spec/helper.lua's
# tmpname/tmpdir/sh use it; so do tools that honour TMPDIR), removed at exit.
TMP_PREFIX=wmrun-test.
tmp_root=${TMPDIR:-/tmp}
before=$(ls -A "$tmp_root" | grep -F "$TMP_PREFIX")
# (without the sanitizers `make asan` preloads: under them mktemp exits 1 at its leak check)
WM_TEST_TMP=$(env -u LD_PRELOAD mktemp -d "$tmp_root/${TMP_PREFIX}XXXXXX")
[ -d "$WM_TEST_TMP" ] || { echo "run_all.sh: cannot make a temporary directory in $tmp_root"; exit 2; }
export WM_TEST_TMP
export TMPDIR="$WM_TEST_TMP"
trap 'rm -rf "$WM_TEST_TMP"' EXIT
out="$WM_TEST_TMP/run_all.out"

echo "== C core unit tests ($BUILD/test_core)"
if [ -n "$WMRUN_VALGRIND" ]; then
  valgrind -q --error-exitcode=99 --leak-check=full "$BUILD/test_core" >"$out" 2>&1
else
  "$BUILD/test_core" >"$out" 2>&1
fi
rc=$?
cat "$out"
line=$(grep -E '^C core: [0-9]+ passed, [0-9]+ failed' "$out")
if [ -n "$line" ]; then
  passed=$((passed + $(echo "$line" | sed -E 's/.* ([0-9]+) passed.*/\1/')))
  failed=$((failed + $(echo "$line" | sed -E 's/.* ([0-9]+) failed.*/\1/')))
fi
[ $rc -ne 0 ] && [ -z "$line" ] && failed=$((failed + 1)) && echo "C tests crashed (exit $rc)"

echo "== busted specs (spec/*_spec.lua)"
lua5.4 /usr/bin/busted -o TAP spec >"$out" 2>&1
rc=$?
grep -E '^not ok' -A 12 "$out"
p=$(grep -cE '^ok ' "$out")
f=$(grep -cE '^not ok ' "$out")
echo "busted: $p passed, $f failed"
if [ $rc -ne 0 ] && [ "$f" -eq 0 ]; then
  cat "$out"
  failed=$((failed + 1))
fi
passed=$((passed + p))
failed=$((failed + f))

# Nothing of the suite's own may stay in the temporary folder: only this run's directory is new.
left=$(ls -A "$tmp_root" | grep -F "$TMP_PREFIX" | grep -vxF "$(basename "$WM_TEST_TMP")" |
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

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
