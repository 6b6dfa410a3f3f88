-- Benchmark: the seed-style job with Lua functions everywhere.
-- map with string.match, a Lua timestamp assigner, key_by with a function, a Lua reduce;
-- bounded out-of-orderness 2 s, tumbling 5 s. Input lines: id,ts_ms,vc (bench/gen).
-- usage: wmrun bench/lua_path.lua data.csv
local wm = require("wm")

local path = assert(arg[1], "usage: wmrun bench/lua_path.lua data.csv")
local env = wm.env()
env:read_lines(path, {parallel = true}) -- at -p n: n instances, each its part of the file
  :map(function(line)
    local id, ts, vc = line:match("^([^,]+),(%d+),(%d+)$")
    return { id = id, ts = tonumber(ts), vc = tonumber(vc) }
  end)
  :assign_timestamps_and_watermarks(
    wm.watermarks.bounded_out_of_orderness("2s")
      :with_timestamp_assigner(function(e) return e.ts end))
  :key_by(function(e) return e.id end)
  :window(wm.windows.tumbling("5s"))
  :reduce(function(a, b) return { id = a.id, ts = a.ts, vc = a.vc + b.vc } end)
  :print()

env:execute("bench lua_path")
