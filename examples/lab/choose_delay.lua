-- Choosing a bounded delay (docs/lab.md walks through it): 20 000 sensor readings from 8
-- sources that crossed a network with a long-tailed delay (median 20 ms, p99 about 225 ms,
-- a few retransmissions of 1 to 5 s), made by disorder.lua:
--   lua5.4 examples/lab/disorder.lua --seed 7 --spike 0.002 > examples/lab/network.csv
-- Counts per source and 1 s tumbling window, for a sweep of bounded_out_of_orderness.
--
-- Run: build/wmrun lab examples/lab/choose_delay.lua [--json] [--plot out.html]
local wm = require("wm")

return wm.lab{
  input = {path = "network.csv", fields = {"k", "ts:integer", "v:integer", "arrival:integer"},
           timestamp = "ts", arrival = "arrival"},   -- arrival: when the record came in (ms)
  key = "k", window = wm.windows.tumbling("1s"), allowed_lateness = 0,
  watermark_interval = "200ms",
  strategies = {
    bounded = wm.lab.sweep(wm.watermarks.bounded_out_of_orderness,
                           {0, "50ms", "100ms", "250ms", "500ms", "1s", "5s"}),
  },
}
