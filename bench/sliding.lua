-- Benchmark: the declarative fast path, sliding windows of 10 s every 1 s (ten windows per record).
-- parse_csv makes typed C rows; with_timestamp_field, key_by("id"), the window state, sum("vc") and
-- print all run in C: no Lua call per record. Bounded out-of-orderness 2 s.
-- Input lines: id,ts_ms,vc (bench/gen). usage: wmrun [-p N] bench/sliding.lua data.csv [SIZE SLIDE]
-- (SIZE and SLIDE as durations, default 10s 1s; make bench's sliding60 passes 60s 5s)
local wm = require("wm")

local env = wm.env()
env:read_lines((assert(arg[1], "usage: wmrun bench/sliding.lua data.csv")))
  :parse_csv{"id", "ts:integer", "vc:integer"}
  :assign_timestamps_and_watermarks(
    wm.watermarks.bounded_out_of_orderness("2s"):with_timestamp_field("ts"))
  :key_by("id")
  :window(wm.windows.sliding(arg[2] or "10s", arg[3] or "1s"))
  :sum("vc")
  :print()

env:execute("bench sliding")
