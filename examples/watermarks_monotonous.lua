-- monotonous() watermarks: for timestamps that never decrease. The watermark is
-- `max_ts - 1` after every record (watermark_interval = 0), so a 5 s window fires as soon
-- as a record at or after its end arrives. Data as in scenario h: lines `key,millis`.
--
-- Run: build/wmrun --trace-watermarks examples/watermarks_monotonous.lua
local wm = require("wm")
local here = arg[0]:match("^(.*)/") or "."
local env = wm.env{ watermark_interval = 0 }

env:read_lines(arg[1] or (here .. "/data/h_process_window_ordered.csv"))
  :map(function(line)
    local key, ms = line:match("^([^,]+),(%d+)$")
    return { key = key, ms = tonumber(ms) }
  end)
  :assign_timestamps_and_watermarks(wm.watermarks.monotonous():with_timestamp_field("ms"))
  :key_by("key")
  :window(wm.windows.tumbling("5s"))
  :process(function(key, ctx, records, out)
    out({ key = key, count = #records, start = ctx.window.start, watermark = ctx.current_watermark })
  end)
  :print()

env:execute()
