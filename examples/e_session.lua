-- Scenario e: session windows with a 5 s gap.
--
-- Each record opens [ts, ts + 5 s); windows of the same key that overlap or touch merge.
-- The record at 2 s opens [2, 7); the record at 7 s opens [7, 12), which touches it: they
-- merge into [2, 12) (the reduce runs across: vc = 2, keeping the first record's ts).
-- The record at 14 s opens [14, 19), 2 s after the session ended, and moves the watermark
-- to 11.999 s: the session [2, 12) fires. The end of input fires [14, 19).
--
-- Run: build/wmrun examples/e_session.lua [data.csv]
local wm = require("wm")

local here = arg[0]:match("^(.*)/") or "."
local path = arg[1] or (here .. "/data/e_session.csv")

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
  :window(wm.windows.session("5s"))
  :reduce(function(a, b) return { id = a.id, ts = a.ts, vc = a.vc + b.vc } end)
  :print()

env:execute("scenario e")
