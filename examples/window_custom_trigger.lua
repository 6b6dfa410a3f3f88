-- A custom trigger written in Lua: fire early on an alarm, and at the window's end.
--
-- Windows are 10 s tumbling windows per sensor that sum vc. The trigger fires the window
-- as soon as a record with vc >= 9 arrives (an early, partial result), and again when the
-- watermark passes the window's end (the complete result), like the default trigger.
-- `on_element` registers an event-time timer at the window's end (registering the same time
-- again gives one timer); `on_event_time` fires on it.
--
-- ws_001's window [0 s, 10 s) fires early at its record at 4 s (vc 3 + 5 + 9 = 17) and
-- again at its end; the other windows fire only at their end.
--
-- Run: build/wmrun examples/window_custom_trigger.lua [data.csv]
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

local alarm_or_end = wm.triggers.custom{
  on_element = function(record, _ts, window, ctx)
    ctx:register_event_time_timer(window.max_timestamp)
    if record.vc >= 9 then return "fire" end
    return "continue"
  end,
  on_event_time = function(t, window, _ctx)
    if t == window.max_timestamp then return "fire" end
    return "continue"
  end,
}

sensors
  :key_by("id")
  :window(wm.windows.tumbling("10s"))
  :trigger(alarm_or_end)
  :sum("vc")
  :print()

env:execute("custom trigger")
