-- Scenario h: a process window function over in-order data.
--
-- Lines are `key,millis`. Watermarks are monotonous: each record moves the watermark to its
-- timestamp - 1 ms. Windows are 5 s tumbling windows per key; the process function sees all
-- of a window's records and its context, and emits the window's bounds, its record count
-- and the watermark that fired it.
--
-- The record at ...866000 moves the watermark to ...865999 and fires [860000, 865000); the
-- one at ...872000 (watermark ...871999) fires [865000, 870000); the one at ...875000
-- (watermark ...874999, exactly the window's last millisecond) fires [870000, 875000) with
-- three records. The end of input (watermark math.maxinteger) fires the last window.
--
-- Run: build/wmrun examples/h_process_window_ordered.lua [data.csv]
local wm = require("wm")

local here = arg[0]:match("^(.*)/") or "."
local path = arg[1] or (here .. "/data/h_process_window_ordered.csv")

local env = wm.env{ watermark_interval = 0 }

env:read_lines(path)
  :map(function(line)
    local key, ms = line:match("^([^,]+),(%d+)$")
    return { key = key, ts = math.tointeger(tonumber(ms)) }
  end)
  :assign_timestamps_and_watermarks(
    wm.watermarks.monotonous():with_timestamp_assigner(function(e) return e.ts end))
  :key_by("key")
  :window(wm.windows.tumbling("5s"))
  :process(function(key, ctx, records, out)
    out({ key = key, count = #records, start = ctx.window.start, stop = ctx.window.stop,
          watermark = ctx.current_watermark })
  end)
  :print()

env:execute("scenario h")
