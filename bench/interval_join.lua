-- Benchmark: the interval join (docs/joins.md "Interval join"), two inputs read from two
-- files of bench/gen (id,ts_ms,vc), parsed to rows in C, keyed by id in C, joined with
-- between(LOWER, UPPER); the join function runs in Lua once per pair and only counts.
-- usage: wmrun bench/interval_join.lua left.csv right.csv [LOWER UPPER [BOUND [MODE]]]
--   BOUND: the watermark's out-of-orderness bound (default 2s; "1000000h" holds every
--   record until the end: bench/interval_join.sh's memory measure)
--   MODE: "join" (default) or "union": the same inputs unioned into a filter that keeps
--   nothing (one Lua call per record), the pipeline without the join, for comparison
-- Prints "pairs N" (join) or "records N" (union) at the end.
local wm = require("wm")

local usage = "usage: wmrun bench/interval_join.lua left.csv right.csv [LOWER UPPER [BOUND [MODE]]]"
local env = wm.env()
local function side(path)
  return env:read_lines((assert(path, usage)))
    :parse_csv{"id", "ts:integer", "vc:integer"}
    :assign_timestamps_and_watermarks(
      wm.watermarks.bounded_out_of_orderness(arg[5] or "2s"):with_timestamp_field("ts"))
end
local left, right = side(arg[1]), side(arg[2])
local n = 0
if (arg[6] or "join") == "join" then
  left:key_by("id"):interval_join(right:key_by("id"))
    :between(math.tointeger(tonumber(arg[3] or -20)), math.tointeger(tonumber(arg[4] or 20)))
    :process(function() n = n + 1 end)
else
  left:union(right):filter(function() n = n + 1 return false end):print()
end
env:execute("bench interval_join")
print(((arg[6] or "join") == "join" and "pairs " or "records ") .. n)
