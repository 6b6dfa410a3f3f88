-- Tuning the bounded delay of choose_delay.lua automatically (docs/lab.md, "Tuning"): the
-- smallest latency p50 with at most 0.2 % of the records late. A coarse grid of 5 points over
-- 0 to 5 s, then a golden-section search around the best of them; every step is one replay.
--
-- Run: build/wmrun examples/lab/tune_delay.lua
local wm = require("wm")

local dir = debug.getinfo(1, "S").source:match("^@(.*)/[^/]*$") or "."
local lab = dofile(dir .. "/choose_delay.lua")
lab.base_dir = dir

local t = lab:tune{
  strategy = function(p) return wm.watermarks.bounded_out_of_orderness(p.d) end,
  params = {d = {0, "5s"}},
  constraint = {late = 0.002},      -- at most 0.2 % of the records late
  objective = "latency_p50",        -- then the fastest
}
io.write(t.report)
print(string.format("bounded_out_of_orderness(%d): %d late of %d, latency p50 %d ms", t.best.params.d,
  t.best.row.late, t.best.row.records, t.best.row.latency_p50))
