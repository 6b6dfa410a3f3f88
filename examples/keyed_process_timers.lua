-- A keyed process function with event-time timers: for each sensor, report when it has
-- been silent for 5 s of event time (Flink's classic "timeout" pattern). Every record
-- deletes the sensor's pending timer and registers a new one at ts + 5 s; the timer fires
-- when the watermark passes it. Timers of the same key and time coalesce.
--
-- Run: build/wmrun examples/keyed_process_timers.lua
local wm = require("wm")
local here = arg[0]:match("^(.*)/") or "."
local env = wm.env{ watermark_interval = 0 }

env:read_lines(arg[1] or (here .. "/data/a_tumbling_in_order.csv"))
  :map(function(line)
    local id, ts, vc = line:match("^([^,]+),(%d+),(%d+)$")
    return { id = id, ts = tonumber(ts), vc = tonumber(vc) }
  end)
  :assign_timestamps_and_watermarks(
    wm.watermarks.bounded_out_of_orderness("1s"):with_timestamp_field("ts", 1000))
  :key_by("id")
  :process{
    process_element = function(_r, ctx, _out)
      local ts = ctx.timer_service
      if ctx.state.timer then ts:delete_event_time_timer(ctx.state.timer) end
      ctx.state.timer = ctx.timestamp + 5000
      ts:register_event_time_timer(ctx.state.timer)
    end,
    on_timer = function(t, ctx, out)
      ctx.state.timer = nil
      out(string.format("%s silent since %d s", ctx.key, (t - 5000) // 1000))
    end,
  }
  :print()

env:execute()
