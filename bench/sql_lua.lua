-- Benchmark: the Lua fast-path job equivalent to bench/sql_tumble.sql, every step in C:
-- read_lines -> parse_csv -> with_timestamp_field("ts") -> key_by("id") -> tumbling 5 s
-- -> count() -> print. The SQL watermark `rt - INTERVAL '5' SECOND` is max(rt) - 5 s, which
-- is bounded_out_of_orderness(5 s - 1 ms) (the DataStream generator emits max - d - 1).
-- usage: wmrun bench/sql_lua.lua data.csv
local wm = require("wm")

local env = wm.env()
env:read_lines((assert(arg[1], "usage: wmrun bench/sql_lua.lua data.csv")))
  :parse_csv{"id", "ts:integer", "vc:integer"}
  :assign_timestamps_and_watermarks(
    wm.watermarks.bounded_out_of_orderness("4999ms"):with_timestamp_field("ts"))
  :key_by("id")
  :window(wm.windows.tumbling("5s"))
  :count()
  :print()

env:execute("bench sql_lua")
