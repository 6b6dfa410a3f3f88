-- The percentile strategy of the timeline comparison in docs/watermarks.md: a custom
-- generator that measures how far behind the highest timestamp records arrive (max_ts - ts)
-- over the last 50 records and emits `max_ts - p95 - 1`. When the stragglers start, its
-- delay grows by itself: fewer late records than a fixed 500 ms, paid for with later
-- firings. Same input and windows as examples/timeline_bounded.lua.
--
-- Run: build/wmrun --timeline out.html --compare examples/timeline_bounded.lua \
--        examples/timeline_percentile.lua
local wm = require("wm")
local here = arg[0]:match("^(.*)/") or "."
local env = wm.env{ watermark_interval = 0 }

local function percentile(_ctx)
  local SAMPLE, PCT = 50, 0.95
  return {
    max_ts = math.mininteger,
    behind = {},   -- a ring of the last SAMPLE values of max_ts - ts
    next = 1,
    on_event = function(self, _record, ts, _out)
      if self.max_ts == math.mininteger then self.max_ts = ts end
      self.behind[self.next] = math.max(0, self.max_ts - ts)
      self.next = self.next % SAMPLE + 1
      if ts > self.max_ts then self.max_ts = ts end
    end,
    on_periodic_emit = function(self, out)
      if self.max_ts == math.mininteger then return end
      local sorted = { table.unpack(self.behind) }
      table.sort(sorted)
      out:emit_watermark(self.max_ts - sorted[math.max(1, math.ceil(#sorted * PCT))] - 1)
    end,
  }
end

local sums = env:read_lines(arg[1] or (here .. "/data/timeline_disorder.csv"))
  :map(function(line)
    local id, ts, vc = line:match("^([^,]+),(%d+),(%d+)$")
    return { id = id, ts = tonumber(ts), vc = tonumber(vc) }
  end)
  :assign_timestamps_and_watermarks(
    wm.watermarks.for_generator(percentile):with_timestamp_field("ts"))
  :key_by("id")
  :window(wm.windows.tumbling("1s"))
  :side_output_late_data("late")
  :sum("vc")

sums:print()
sums:get_side_output("late"):print("Side")
env:execute("p95 percentile")
