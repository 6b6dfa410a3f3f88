-- Scenario f: a custom, punctuated watermark generator written in Lua.
--
-- Lines are `id,seconds,vc`; the event time is `ts * 1000` ms. The generator below keeps
-- the highest timestamp it has seen and emits `max_ts - 2000` straight from `on_event`
-- (a *punctuated* generator: every record may move the watermark), with no `- 1` unlike
-- bounded_out_of_orderness, and emits nothing from `on_periodic_emit`.
--
-- Records at 1 s and 2 s fall into the window [0 s, 5 s) and move the watermark to 0 ms.
-- The record at 12 s moves it to 10 000 ms, past the window's last millisecond (4 999):
-- it fires with vc = 2. The end of input (MAX) fires [10 s, 15 s) with the record at 12 s.
--
-- Run: build/wmrun examples/f_punctuated_generator.lua [data.csv]
-- Add --trace-watermarks to see each watermark the generator emits.
local wm = require("wm")

local here = arg[0]:match("^(.*)/") or "."
local path = arg[1] or (here .. "/data/f_punctuated_generator.csv")

local env = wm.env{ watermark_interval = 0 }

-- One generator per parallel assigner instance: the factory returns a fresh table.
local function punctuated(_ctx)
  return {
    max_ts = math.mininteger,
    on_event = function(self, _record, ts, out)
      if ts > self.max_ts then self.max_ts = ts end
      out:emit_watermark(self.max_ts - 2000)
    end,
    on_periodic_emit = function(_self, _out) end,   -- punctuated: nothing periodic
  }
end

env:read_lines(path)
  :map(function(line)
    local id, ts, vc = line:match("^([^,]+),(%d+),(%d+)$")
    return { id = id, ts = tonumber(ts), vc = tonumber(vc) }
  end)
  :assign_timestamps_and_watermarks(
    wm.watermarks.for_generator(punctuated)
      :with_timestamp_assigner(function(e) return e.ts * 1000 end))
  :key_by("id")
  :window(wm.windows.tumbling("5s"))
  :reduce(function(a, b) return { id = a.id, ts = a.ts, vc = a.vc + b.vc } end)
  :print()

env:execute("scenario f")
