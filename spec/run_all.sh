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
out=$(mktemp)
trap 'rm -f "$out"' EXIT

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

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
