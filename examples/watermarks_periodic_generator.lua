-- A periodic custom generator (Flink's BoundedOutOfOrdernessWatermarks written in Lua):
-- on_event only remembers the highest timestamp, on_periodic_emit emits max_ts - 2000 - 1.
-- With the default watermark_interval (200 ms of wall clock) the watermark moves at most
-- five times a second whatever the record rate; try --watermark-interval 0 to get one
-- emit per record, which makes it behave exactly like bounded_out_of_orderness("2s").
-- A generator that also idles: after 3 periodic emits with no record it marks itself idle.
--
-- Run: build/wmrun --trace-watermarks examples/watermarks_periodic_generator.lua
local wm = require("wm")
local here = arg[0]:match("^(.*)/") or "."
local env = wm.env{}

local function bounded(_ctx)
  return {
    max_ts = math.mininteger + 2001,
    quiet = 0,
    on_event = function(self, _record, ts, _out)
      if ts > self.max_ts then self.max_ts = ts end
      self.quiet = 0
    end,
    on_periodic_emit = function(self, out)
      self.quiet = self.quiet + 1
      if self.quiet > 3 then out:mark_idle() return end
      out:emit_watermark(self.max_ts - 2000 - 1)
    end,
  }
end

env:read_lines(arg[1] or (here .. "/data/a_tumbling_in_order.csv"))
  :map(function(line)
    local id, ts, vc = line:match("^([^,]+),(%d+),(%d+)$")
    return { id = id, ts = tonumber(ts), vc = tonumber(vc) }
  end)
  :assign_timestamps_and_watermarks(
    wm.watermarks.for_generator(bounded):with_timestamp_field("ts", 1000))
  :key_by("id")
  :window(wm.windows.tumbling("5s"))
  :reduce(function(a, b) return { id = a.id, ts = a.ts, vc = a.vc + b.vc } end)
  :print()

env:execute()
