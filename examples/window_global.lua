-- Global windows: one window per key that never ends.
--
-- A global window holds every record of its key and has no end, so the default trigger
-- never fires it: it needs a trigger. Here `end_of_stream()` fires it once, when the input
-- ends (the MAX watermark), giving the total vc and the record count per sensor. The
-- window reports start = math.mininteger and stop = max_timestamp = math.maxinteger.
--
-- Run: build/wmrun examples/window_global.lua [data.csv]
local wm = require("wm")

local here = arg[0]:match("^(.*)/") or "."
local path = arg[1] or (here .. "/data/sensors_mixed.csv")

local env = wm.env{ watermark_interval = 0 }

local sensors = env:read_lines(path)
  :map(function(line)
    local id, ts, vc = line:match("^([^,]+),(%d+),(%d+)$")
    return { id = id, ts = tonumber(ts), vc = tonumber(vc) }
  end)
  :assign_timestamps_and_watermarks(
    wm.watermarks.bounded_out_of_orderness("2s")
      :with_timestamp_assigner(function(e) return e.ts * 1000 end))

sensors
  :key_by("id")
  :window(wm.windows.global())
  :trigger(wm.triggers.end_of_stream())
  :process(function(id, ctx, records, out)
    local total = 0
    for _, r in ipairs(records) do total = total + r.vc end
    out({ id = id, records = #records, vc = total,
          whole_time = ctx.window.start == math.mininteger and ctx.window.stop == math.maxinteger })
  end)
  :print()

env:execute("global windows")
