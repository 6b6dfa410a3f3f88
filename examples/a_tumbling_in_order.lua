-- Scenario a: event-time tumbling windows over in-order sensor readings.
--
-- Lines are `id,seconds,vc`. The event time is `ts * 1000` ms; watermarks trail the
-- highest timestamp by 2 s (bounded out-of-orderness); windows are 5 s tumbling windows
-- per sensor id, and each window reduces its records by adding their vc.
--
-- The window [0 s, 5 s) fires when the watermark passes 4.999 s, i.e. once a record at
-- 7 s or later has been seen: here the record at 9 s (watermark 6.999 s). The end of input
-- (the MAX watermark) fires the window [5 s, 10 s) that is still open.
--
-- Run: build/wmrun examples/a_tumbling_in_order.lua [data.csv]
local wm = require("wm")

local here = arg[0]:match("^(.*)/") or "."
local path = arg[1] or (here .. "/data/a_tumbling_in_order.csv")

local env = wm.env{ watermark_interval = 0 }   -- a watermark after every record: deterministic

env:read_lines(path)
  :map(function(line)
    local id, ts, vc = line:match("^([^,]+),(%d+),(%d+)$")
    return { id = id, ts = tonumber(ts), vc = tonumber(vc) }
  end)
  :assign_timestamps_and_watermarks(
    wm.watermarks.bounded_out_of_orderness("2s")
      :with_timestamp_assigner(function(e) return e.ts * 1000 end))
  :key_by("id")
  :window(wm.windows.tumbling("5s"))
  :reduce(function(a, b) return { id = a.id, ts = a.ts, vc = a.vc + b.vc } end)
  :print()

env:execute("scenario a")
