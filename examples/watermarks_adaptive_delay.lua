-- An advanced generator: an adaptive delay. Instead of a fixed bound, it measures how late
-- records actually are (max_ts - ts, 0 for in-order records) over the last 100 records
-- and emits `max_ts - p99(lateness) - 1`: a stream that becomes more disordered gets a
-- longer delay (fewer late records), an orderly one a shorter one (lower latency).
-- The delay never makes the watermark go back: the assigner forwards only increases.
--
-- Run: build/wmrun --trace-watermarks examples/watermarks_adaptive_delay.lua
local wm = require("wm")
local here = arg[0]:match("^(.*)/") or "."
local env = wm.env{ watermark_interval = 0 }

local function adaptive(_ctx)
  local SAMPLE, PCT = 100, 0.99
  return {
    max_ts = math.mininteger,
    lateness = {},   -- a ring of the last SAMPLE lateness values
    next = 1,
    on_event = function(self, _record, ts, _out)
      if self.max_ts == math.mininteger then self.max_ts = ts end
      local late = self.max_ts - ts
      if late < 0 then late = 0 end
      self.lateness[self.next] = late
      self.next = self.next % SAMPLE + 1
      if ts > self.max_ts then self.max_ts = ts end
    end,
    on_periodic_emit = function(self, out)
      if self.max_ts == math.mininteger then return end
      local sorted = { table.unpack(self.lateness) }
      table.sort(sorted)
      local p = sorted[math.max(1, math.ceil(#sorted * PCT))] or 0
      out:emit_watermark(self.max_ts - p - 1)
    end,
  }
end

env:read_lines(arg[1] or (here .. "/data/b_tumbling_out_of_order.csv"))
  :map(function(line)
    local id, ts, vc = line:match("^([^,]+),(%d+),(%d+)$")
    return { id = id, ts = tonumber(ts), vc = tonumber(vc) }
  end)
  :assign_timestamps_and_watermarks(
    wm.watermarks.for_generator(adaptive):with_timestamp_field("ts", 1000))
  :key_by("id")
  :window(wm.windows.tumbling("5s"))
  :reduce(function(a, b) return { id = a.id, ts = a.ts, vc = a.vc + b.vc } end)
  :print()

env:execute()
