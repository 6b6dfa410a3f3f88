-- The bounded strategy of the timeline comparison in docs/watermarks.md: a fixed 500 ms of
-- out-of-orderness over a stream whose disorder grows half-way through (stragglers 1.2 to
-- 2.2 s behind). Records are `id,millis,vc`; 1 s tumbling windows sum vc per id; late
-- records go to the side output "late".
--
-- Run: build/wmrun --timeline out.html --compare examples/timeline_bounded.lua \
--        examples/timeline_percentile.lua
local wm = require("wm")
local here = arg[0]:match("^(.*)/") or "."
local env = wm.env{ watermark_interval = 0 }

local sums = env:read_lines(arg[1] or (here .. "/data/timeline_disorder.csv"))
  :map(function(line)
    local id, ts, vc = line:match("^([^,]+),(%d+),(%d+)$")
    return { id = id, ts = tonumber(ts), vc = tonumber(vc) }
  end)
  :assign_timestamps_and_watermarks(
    wm.watermarks.bounded_out_of_orderness("500ms"):with_timestamp_field("ts"))
  :key_by("id")
  :window(wm.windows.tumbling("1s"))
  :side_output_late_data("late")
  :sum("vc")

sums:print()
sums:get_side_output("late"):print("Side")
env:execute("bounded 500 ms")
