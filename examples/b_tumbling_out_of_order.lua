-- Scenario b: the same job as a, with records out of order.
--
-- Lines are `id,seconds,vc`. The event time is `ts * 1000` ms; watermarks trail the
-- highest timestamp by 2 s (bounded out-of-orderness); windows are 5 s tumbling windows
-- per sensor id, and each window reduces its records by adding their vc.
--
-- The records at 1 and 2 s that arrive after the one at 5 s are late relative to it, but
-- the watermark (5 - 2 - 0.001 = 2.999 s) has not passed the window's end (4.999 s), so
-- they still count: the first window sums five records. The record at 9 s moves the
-- watermark to 6.999 s and fires it; the end of input fires [5, 10).
--
-- Run: build/wmrun examples/b_tumbling_out_of_order.lua [data.csv]
local wm = require("wm")

local here = arg[0]:match("^(.*)/") or "."
local path = arg[1] or (here .. "/data/b_tumbling_out_of_order.csv")

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

env:execute("scenario b")
