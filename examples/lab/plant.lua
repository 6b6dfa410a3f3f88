-- Built-in strategies against two custom ones on harder data (docs/lab.md): 8 sources that
-- send in batches every 250 ms, one (s03) that stalls from 8 s to 11 s of event time and then
-- catches up, one (s05) whose clock runs 400 ms behind. Made by disorder.lua:
--   lua5.4 examples/lab/disorder.lua --seed 11 --delay 15 --sigma 0.8 --burst 250 \
--     --stall 3:8000:11000 --skew 5:400 > examples/lab/plant.csv
-- Candidates: the built-ins, a bounded sweep, a generator whose delay is the p99 of the
-- out-of-orderness it has seen lately, and a per-key generator that holds the watermark at
-- the slowest source (each source's own maximum, minus a small delay).
--
-- Run: build/wmrun lab examples/lab/plant.lua [--json] [--plot out.html]
local wm = require("wm")

-- Delay = the p99 of (max_ts - ts) over the last 2 000 records, recomputed at every
-- periodic emission: it follows the disorder instead of being fixed in advance.
local function percentile_adaptive(pct)
  return wm.watermarks.for_generator(function()
    local SAMPLE = 2000
    return {
      max_ts = math.mininteger, ring = {}, next = 1,
      on_event = function(self, _, ts)
        if self.max_ts == math.mininteger then self.max_ts = ts end
        local behind = self.max_ts - ts
        self.ring[self.next] = behind > 0 and behind or 0
        self.next = self.next % SAMPLE + 1
        if ts > self.max_ts then self.max_ts = ts end
      end,
      on_periodic_emit = function(self, out)
        if self.max_ts == math.mininteger then return end
        local s = {table.unpack(self.ring)}
        table.sort(s)
        out:emit_watermark(self.max_ts - (s[math.max(1, math.ceil(#s * pct))] or 0) - 1)
      end,
    }
  end)
end

-- The watermark of the slowest source: min over sources of (its max_ts - delay - 1). A
-- skewed or stalled source holds everything back (nothing of its is late) at a latency cost.
local function per_key(delay)
  return wm.watermarks.for_generator(function()
    return {
      max = {},
      on_event = function(self, r, ts)
        local m = self.max[r.k]
        if not m or ts > m then self.max[r.k] = ts end
      end,
      on_periodic_emit = function(self, out)
        local low
        for _, m in pairs(self.max) do if not low or m < low then low = m end end
        if low then out:emit_watermark(low - delay - 1) end
      end,
    }
  end)
end

return wm.lab{
  input = {path = "plant.csv", fields = {"k", "ts:integer", "v:integer", "arrival:integer"},
           timestamp = "ts", arrival = "arrival"},
  key = "k", window = wm.windows.tumbling("1s"), allowed_lateness = "100ms",
  watermark_interval = "200ms",
  strategies = {
    monotonous = wm.watermarks.monotonous(),
    ["no watermarks"] = wm.watermarks.no_watermarks(),
    bounded = wm.lab.sweep(wm.watermarks.bounded_out_of_orderness, {"100ms", "300ms", "500ms", "1s"}),
    ["adaptive p99"] = percentile_adaptive(0.99),
    ["per-key 100ms"] = per_key(100),
  },
}
