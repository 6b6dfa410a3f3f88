-- Scenario d: sliding windows of 6 s every 2 s.
--
-- A record belongs to size / slide = 3 windows. The record at 1 s is in [-4, 2), [-2, 4)
-- and [0, 6); the record at 8 s (watermark 5.999 s) fires all three, each with vc = 1.
-- The record at 8 s is in [4, 10), [6, 12) and [8, 14); the record at 12 s (watermark
-- 9.999 s) fires [4, 10). At the end of input [6, 12) fires with the record at 8 s,
-- [8, 14) with the records at 8 and 12 s (vc = 2), then [10, 16) and [12, 18) with the
-- record at 12 s. A window result keeps the first record's id and ts (the reduce below).
--
-- Run: build/wmrun examples/d_sliding.lua [data.csv]
local wm = require("wm")

local here = arg[0]:match("^(.*)/") or "."
local path = arg[1] or (here .. "/data/d_sliding.csv")

local env = wm.env{ watermark_interval = 0 }

env:read_lines(path)
  :map(function(line)
    local id, ts, vc = line:match("^([^,]+),(%d+),(%d+)$")
    return { id = id, ts = tonumber(ts), vc = tonumber(vc) }
  end)
  :assign_timestamps_and_watermarks(
    wm.watermarks.bounded_out_of_orderness("2s")
      :with_timestamp_assigner(function(e) return e.ts * 1000 end))
  :key_by("id")
  :window(wm.windows.sliding("6s", "2s"))
  :reduce(function(a, b) return { id = a.id, ts = a.ts, vc = a.vc + b.vc } end)
  :print()

env:execute("scenario d")
