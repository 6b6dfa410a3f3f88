-- examples/lab/skew_stall.csv replayed on its arrival times as a job (docs/lab.md, "Which
-- source is late"), to draw its timeline: bounded_out_of_orderness(500 ms), tumbling 1 s
-- windows counted per source. s04's clock runs 1.5 s behind (its records come late); s02
-- stalls from 6 s to 9 s of event time, then catches up.
--
-- Run: build/wmrun --timeline timeline.html --timeline-x time examples/lab/skew_stall_replay.lua
local wm = require("wm")

local dir = debug.getinfo(1, "S").source:match("^@(.*)/[^/]*$") or "."
local env = wm.env{watermark_interval = "200ms"}
env:read_lines(dir .. "/skew_stall.csv", {arrival = "arrival"})
  :parse_csv{"k", "ts:integer", "v:integer", "arrival:integer"}
  :assign_timestamps_and_watermarks(wm.watermarks.bounded_out_of_orderness("500ms"):with_timestamp_field("ts"))
  :key_by("k"):window(wm.windows.tumbling("1s")):count()
  :sink(function() end)
env:execute("skew_stall replayed")
