-- Which source makes records late? (docs/lab.md, "Which source is late"). 6 sources at 400
-- records/s; s02 stalls from 6 s to 9 s of event time and then catches up; s04's clock runs
-- 1.5 s behind. Made by disorder.lua:
--   lua5.4 examples/lab/disorder.lua --seed 5 --records 8000 --keys 6 --rate 400 --delay 20 \
--     --sigma 0.8 --spike 0 --stall 2:6000:9000 --skew 4:1500 > examples/lab/skew_stall.csv
-- Candidates: a bounded sweep, per-key watermarks combined by minimum (without and with
-- liveness: a source quiet for 1 s leaves the minimum) and a percentile-adaptive delay.
-- The breakdown below the table names the skewed s04 as the top offender of every bound
-- under 1.5 s, and the stalled s02 once the bound covers the skew.
--
-- Run: build/wmrun lab examples/lab/skew_stall.lua [--json] [--plot out.html]
local wm = require("wm")

return wm.lab{
  input = {path = "skew_stall.csv", fields = {"k", "ts:integer", "v:integer", "arrival:integer"},
           timestamp = "ts", arrival = "arrival"},
  key = "k", window = wm.windows.tumbling("1s"), watermark_interval = "200ms",
  strategies = {
    bounded = wm.lab.sweep(wm.watermarks.bounded_out_of_orderness, {"100ms", "500ms", "1s", "2s", "4s"}),
    ["per-key"] = {wm.watermarks.per_key_minimum("k", "100ms"), wm.watermarks.per_key_minimum("k", "100ms", "1s")},
    ["percentile p99"] = wm.watermarks.percentile_delay(0.99, 2000),
  },
}
