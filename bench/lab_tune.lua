-- lab:tune against an exhaustive grid (docs/lab.md, "Tuning"): the bound of
-- bounded_out_of_orderness over 0 to 5 s, the smallest latency p50 with at most a share of
-- the records late.
--   build/wmrun bench/lab_tune.lua [STEP_MS] [LAB.lua] [LATE_SHARE]
-- (defaults: 10, examples/lab/choose_delay.lua, 0.002; a step of 1 takes minutes).
-- Prints the tune's best and replay count, then the exhaustive grid's best and replay count.
local wm = require("wm")
local step = tonumber(arg and arg[1]) or 10
local file = arg and arg[2] or "examples/lab/choose_delay.lua"
local share = tonumber(arg and arg[3]) or 0.002
local lab = dofile(file)
lab.base_dir = file:match("^(.*)/[^/]*$") or "."
local function make(d) return wm.watermarks.bounded_out_of_orderness(d) end
local t = lab:tune{strategy = function(p) return make(p.d) end, params = {d = {0, "5s"}},
                   constraint = {late = share}, objective = "latency_p50"}
print(string.format("tune        d=%d latency_p50=%d replays=%d", t.best.params.d, t.best.value, t.replays))
local best, bv, n = nil, math.huge, 0
for d = 0, 5000, step do
  local r = lab:_replay({name = "d", strategy = make(d)}, {})
  n = n + 1
  if r.late <= share * r.records and r.latency_p50 and r.latency_p50 < bv then best, bv = d, r.latency_p50 end
end
print(string.format("exhaustive  d=%d latency_p50=%d replays=%d (step %d ms)", best, bv, n, step))
