-- The timeline of a keyed job (docs/watermarks.md): five sensors, 2 s tumbling windows
-- summing `vc` per sensor, 500 ms of bounded out-of-orderness, 1 s of allowed lateness,
-- later records to the side output "late". Records are `id,millis,vc`.
--
-- Run: build/wmrun --timeline keys.html examples/timeline_keys.lua
local wm = require("wm")
local here = arg[0]:match("^(.*)/") or "."
local env = wm.env{ watermark_interval = 0 }

local sums = env:read_lines(arg[1] or (here .. "/data/timeline_keys.csv"))
  :map(function(line)
    local id, ts, vc = line:match("^([^,]+),(%d+),(%d+)$")
    return { id = id, ts = tonumber(ts), vc = tonumber(vc) }
  end)
  :assign_timestamps_and_watermarks(
    wm.watermarks.bounded_out_of_orderness("500ms"):with_timestamp_field("ts"))
  :key_by("id")
  :window(wm.windows.tumbling("2s"))
  :allowed_lateness("1s")
  :side_output_late_data("late")
  :sum("vc")

sums:print()
sums:get_side_output("late"):print("Side")
env:execute("five sensors, 2 s windows")
