-- Benchmark job for the multi-core executor (bench/parallel.sh): the scenario pipeline
-- (parse, bounded out-of-orderness 2 s, key_by, tumbling 5 s, reduce) over bench/gen lines
-- `id,ts_ms,vc`. One file is one source instance: at parallelism 2 its lines are dealt
-- round robin (rebalance) to two parsing instances, and key_by spreads the windows.
--   style "lua": map with string.match, Lua timestamp assigner, key function and reduce;
--   style "c":   parse_csv, with_timestamp_field, key_by("id"), count() (no Lua per record).
-- Both results are independent of the order in which a window receives its records (the
-- order between two parallel instances is not defined, semantics.md §9): the reduce keeps
-- the earliest timestamp instead of the first record's, and count() counts.
-- usage: wmrun -p P --threads T bench/parallel_job.lua data.csv [lua|c]
local wm = require("wm")

local path = assert(arg[1], "usage: wmrun bench/parallel_job.lua data.csv [lua|c]")
local style = arg[2] or "lua"
local env = wm.env()   -- periodic watermarks every 200 ms (Flink's default)
local lines = env:read_lines(path):rebalance()
local windows
if style == "c" then
  windows = lines
    :parse_csv{"id", "ts:integer", "vc:integer"}
    :assign_timestamps_and_watermarks(
      wm.watermarks.bounded_out_of_orderness("2s"):with_timestamp_field("ts"))
    :key_by("id")
    :window(wm.windows.tumbling("5s"))
    :count()
else
  windows = lines
    :map(function(line)
      local id, ts, vc = line:match("^([^,]+),(%d+),(%d+)$")
      return { id = id, ts = tonumber(ts), vc = tonumber(vc) }
    end)
    :assign_timestamps_and_watermarks(
      wm.watermarks.bounded_out_of_orderness("2s")
        :with_timestamp_assigner(function(e) return e.ts end))
    :key_by(function(e) return e.id end)
    :window(wm.windows.tumbling("5s"))
    :reduce(function(a, b) return { id = a.id, ts = math.min(a.ts, b.ts), vc = a.vc + b.vc } end)
end
windows:print() -- "k> " prefixes at parallelism 2: bench/parallel.sh strips them
env:execute("bench: parallel")
