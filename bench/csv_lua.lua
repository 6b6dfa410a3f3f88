-- Benchmark: parse_csv and a declarative timestamp field, with Lua functions for the rest:
-- a Lua map over each parsed row, key_by("id"), a Lua reduce; bounded out-of-orderness 2 s,
-- tumbling 5 s. The same result as lua_path.lua (make bench compares it with handwritten).
-- usage: wmrun bench/csv_lua.lua data.csv
local wm = require("wm")

local path = assert(arg[1], "usage: wmrun bench/csv_lua.lua data.csv")
local env = wm.env()
env:read_lines(path)
  :parse_csv{"id", "ts:integer", "vc:integer"}
  :map(function(r) return { id = r.id, ts = r.ts, vc = r.vc } end)
  :assign_timestamps_and_watermarks(
    wm.watermarks.bounded_out_of_orderness("2s"):with_timestamp_field("ts"))
  :key_by("id")
  :window(wm.windows.tumbling("5s"))
  :reduce(function(a, b) return { id = a.id, ts = a.ts, vc = a.vc + b.vc } end)
  :print()

env:execute("bench csv_lua")
