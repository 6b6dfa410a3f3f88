#!/bin/sh
# The watermark lab on 1M records (docs/lab.md): generates 1 000 000 records with
# examples/lab/disorder.lua into a temporary file, then times `wmrun lab` over the two
# example labs' candidates. The file is removed at the end; nothing is committed.
# usage: bench/lab.sh [build-dir]
BUILD=${1:-build}
cd "$(dirname "$0")/.." || exit 2
dir=$(mktemp -d) || exit 1
trap 'rm -rf "$dir"' EXIT
echo "== generating 1M records"
lua5.4 examples/lab/disorder.lua --records 1000000 --keys 100 --rate 10000 --seed 7 --spike 0.002 \
  > "$dir/network.csv" || exit 1
lua5.4 examples/lab/disorder.lua --records 1000000 --keys 8 --seed 11 --delay 15 --sigma 0.8 \
  --burst 250 --stall 3:8000:11000 --skew 5:400 > "$dir/plant.csv" || exit 1
sed "s|\"network.csv\"|\"$dir/network.csv\"|" examples/lab/choose_delay.lua > "$dir/choose_delay.lua"
sed "s|\"plant.csv\"|\"$dir/plant.csv\"|" examples/lab/plant.lua > "$dir/plant.lua"
for lab in choose_delay plant; do
  echo "== $lab (1M records)"
  /usr/bin/time -f "$lab: %e s wall, %U s user, %M KB max RSS" "$BUILD/wmrun" lab "$dir/$lab.lua" || exit 1
done
