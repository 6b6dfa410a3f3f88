-- Scenario c: allowed lateness and a side output for late data.
--
-- The job of scenario a (5 s tumbling windows, 2 s bounded out-of-orderness, vc summed per
-- sensor) plus `allowed_lateness("2s")` and `side_output_late_data("late")`.
--
-- Records at 1, 2, 3 s fall into [0, 5). The record at 8 s moves the watermark to 5.999 s,
-- past the window's last millisecond (4.999 s): it fires with vc = 3. Allowed lateness keeps
-- the window until the watermark reaches 4.999 + 2 = 6.999 s, so the late records at 1, 2
-- and 3 s each fire it again with everything it holds (vc = 4, 5, 6: results accumulate).
-- The record at 9 s moves the watermark to 6.999 s: the window is deleted, and the records
-- at 1 and 2 s that follow are too late for any window: they go to the side output, printed
-- with the prefix "Side". The end of input fires [5, 10) with the records at 8 and 9 s.
--
-- Run: build/wmrun examples/c_lateness_side_output.lua [data.csv]
local wm = require("wm")

local here = arg[0]:match("^(.*)/") or "."
local path = arg[1] or (here .. "/data/c_lateness_side_output.csv")

local env = wm.env{ watermark_interval = 0 }

local sums = env:read_lines(path)
  :map(function(line)
    local id, ts, vc = line:match("^([^,]+),(%d+),(%d+)$")
    return { id = id, ts = tonumber(ts), vc = tonumber(vc) }
  end)
  :assign_timestamps_and_watermarks(
    wm.watermarks.bounded_out_of_orderness("2s")
      :with_timestamp_assigner(function(e) return e.ts * 1000 end))
  :key_by("id")
  :window(wm.windows.tumbling("5s"))
  :allowed_lateness("2s")
  :side_output_late_data("late")
  :reduce(function(a, b) return { id = a.id, ts = a.ts, vc = a.vc + b.vc } end)

sums:print()
sums:get_side_output("late"):print("Side")

env:execute("scenario c")
