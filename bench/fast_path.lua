-- Benchmark: the declarative fast path, tumbling 5 s.
-- parse_csv makes typed C rows; with_timestamp_field, key_by("id"), the window state, sum("vc") and
-- print all run in C: no Lua call per record. Bounded out-of-orderness 2 s.
-- Input lines: id,ts_ms,vc (bench/gen). usage: wmrun [-p N] bench/fast_path.lua data.csv
local wm = require("wm")

local env = wm.env()
env:read_lines((assert(arg[1], "usage: wmrun bench/fast_path.lua data.csv")), {parallel = true})
  :parse_csv{"id", "ts:integer", "vc:integer"}
  :assign_timestamps_and_watermarks(
    wm.watermarks.bounded_out_of_orderness("2s"):with_timestamp_field("ts"))
  :key_by("id")
  :window(wm.windows.tumbling("5s"))
  :sum("vc")
  :print()

env:execute("bench fast_path")
