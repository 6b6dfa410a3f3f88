-- no_watermarks(): records get timestamps, but no watermark moves until the end of input
-- (MAX) fires every window at once. Useful for batch-like replays; on an unbounded
-- source windows would never fire, and wmrun warns about it after 10 000 records.
--
-- Run: build/wmrun examples/watermarks_no_watermarks.lua
local wm = require("wm")
local here = arg[0]:match("^(.*)/") or "."
local env = wm.env{ watermark_interval = 0 }

env:read_lines(arg[1] or (here .. "/data/b_tumbling_out_of_order.csv"))
  :map(function(line)
    local id, ts, vc = line:match("^([^,]+),(%d+),(%d+)$")
    return { id = id, ts = tonumber(ts), vc = tonumber(vc) }
  end)
  :assign_timestamps_and_watermarks(wm.watermarks.no_watermarks():with_timestamp_field("ts", 1000))
  :key_by("id")
  :window(wm.windows.tumbling("5s"))
  :sum("vc")
  :print()

env:execute()
