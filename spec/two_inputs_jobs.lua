-- Jobs that more than one spec runs (connect_spec: what the functions see; two_inputs_observe:
-- what --metrics, --trace-watermarks and --timeline show of the same run).
local M = {}

-- A keyed connect whose inputs interleave as listed: one source split in two, input 1 (s = 1)
-- gets 10 then 100, input 2 (s = 2) 10 then 20, monotonous watermarks after every record
-- (ts - 1); both functions print the watermark they see, a timer at 50 fires at the end.
M.fast_slow = [[
local wm = require("wm")
local env = wm.env{watermark_interval = 0}
local st = wm.watermarks.monotonous():with_timestamp_field("ts")
local src = env:from_elements({s = 1, ts = 10}, {s = 2, ts = 10}, {s = 1, ts = 100}, {s = 2, ts = 20})
local fast = src:filter(function(r) return r.s == 1 end):assign_timestamps_and_watermarks(st)
local slow = src:filter(function(r) return r.s == 2 end):assign_timestamps_and_watermarks(st)
fast:key_by(function() return 1 end):connect(slow:key_by(function() return 1 end)):process{
  process_element1 = function(r, ctx, out)
    ctx.timer_service:register_event_time_timer(50)
    out("1 " .. r.ts .. " wm " .. ctx.timer_service:current_watermark())
  end,
  process_element2 = function(r, ctx, out)
    out("2 " .. r.ts .. " wm " .. ctx.timer_service:current_watermark())
  end,
  on_timer = function(t, ctx, out) out("timer " .. t .. " wm " .. ctx.timer_service:current_watermark()) end}
  :print()
env:execute()
]]

return M
