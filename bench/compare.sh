#!/bin/sh
# compare.sh A B - do two job outputs (one JSON line per window) agree?
#
# The rules let parallel instances interleave their output, so the check
# that counts is "same lines, any order" (equal after sort). Whether the
# files are also identical byte for byte is reported too.
#
# Exit status: 0 same lines (sorted equal), 1 different, 2 usage error.
set -eu

if [ $# -ne 2 ] || [ ! -r "$1" ] || [ ! -r "$2" ]; then
    echo "usage: $0 OUTPUT_A OUTPUT_B (two readable files)" >&2
    exit 2
fi
a=$1
b=$2
export LC_ALL=C # byte order for sort, and no locale surprises

la=$(wc -l < "$a" | tr -d ' ')
lb=$(wc -l < "$b" | tr -d ' ')

if cmp -s "$a" "$b"; then
    echo "identical: $a and $b ($la lines, same order)"
    exit 0
fi

tmp=$(mktemp -d "${TMPDIR:-/tmp}/compare.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
sort "$a" > "$tmp/a"
sort "$b" > "$tmp/b"
if cmp -s "$tmp/a" "$tmp/b"; then
    echo "same lines, different order: $a and $b ($la lines)"
    exit 0
fi

echo "DIFFERENT: $a ($la lines) vs $b ($lb lines)"
only_a=$(comm -23 "$tmp/a" "$tmp/b" | wc -l)
only_b=$(comm -13 "$tmp/a" "$tmp/b" | wc -l)
echo "  $only_a lines only in A ($a), $only_b lines only in B ($b); first few (sorted):"
comm -23 "$tmp/a" "$tmp/b" | head -n 5 | sed 's/^/  A: /'
comm -13 "$tmp/a" "$tmp/b" | head -n 5 | sed 's/^/  B: /'
exit 1
