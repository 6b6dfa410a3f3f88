-- Scenario i: with parallelism, a window can only fire once EVERY input has passed its end.
--
-- Lines are `key,millis`. One source reads the file (one reader of one file, without parallel = true) and
-- rebalance() deals the lines round robin to two instances of the watermark assigner, each
-- with bounded out-of-orderness of 5 s: instance 1 gets the 1st, 3rd and 5th lines, instance
-- 2 the 2nd and 4th. key_by sends every record of a key to one instance of the window
-- operator, which combines the watermarks of its two input channels: its watermark is the
-- MINIMUM of the two assigners' watermarks.
--
-- After the 5th line (71 s) instance 1 is at 65.999 s but instance 2 only at 64.999 s (from
-- the 4th line, 70 s): the window [60 s, 65 s) fires with the combined watermark 64.999 s,
-- the minimum. The other windows fire at the end of input (MAX).
--
-- Output lines carry Flink's `k> ` prefix: the instance of the print sink, which depends on
-- the key's hash.
--
-- Run: build/wmrun examples/i_parallel_min_watermark.lua
local wm = require("wm")

local here = arg[0]:match("^(.*)/") or "."
local env = wm.env{ parallelism = 2, watermark_interval = 0 }

env:read_lines(arg[1] or (here .. "/data/i_parallel_min_watermark.csv"))
  :map(function(line)
    local key, ms = line:match("^([^,]+),(%d+)$")
    return { key = key, ts = tonumber(ms) }
  end)
  :set_parallelism(1)   -- parse next to the source, then deal the records out
  :rebalance()
  :assign_timestamps_and_watermarks(
    wm.watermarks.bounded_out_of_orderness("5s"):with_timestamp_field("ts"))
  :key_by("key")
  :window(wm.windows.tumbling("5s"))
  :process(function(key, ctx, records, out)
    out({ key = key, count = #records, start = ctx.window.start, stop = ctx.window.stop,
          watermark = ctx.current_watermark })
  end)
  :print()

env:execute("scenario i")
