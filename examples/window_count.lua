-- Count windows: windows of a number of records instead of a span of time.
--
-- `count(2)` fires every 2 records of a sensor with those 2 records (then forgets them);
-- `count(3, 1)` fires at every record with the last 3 records of the sensor (a sliding count
-- window). Event time plays no part: the records a count window holds are the last ones
-- that arrived. Records that never complete a count are not emitted: ws_002 has 3 records,
-- so its third record never makes a pair in count(2).
--
-- Run: build/wmrun examples/window_count.lua [data.csv]
local wm = require("wm")

local here = arg[0]:match("^(.*)/") or "."
local path = arg[1] or (here .. "/data/sensors_mixed.csv")

local env = wm.env{ watermark_interval = 0 }

local sensors = env:read_lines(path)
  :map(function(line)
    local id, ts, vc = line:match("^([^,]+),(%d+),(%d+)$")
    return { id = id, ts = tonumber(ts), vc = tonumber(vc) }
  end)
  :assign_timestamps_and_watermarks(
    wm.watermarks.bounded_out_of_orderness("2s")
      :with_timestamp_assigner(function(e) return e.ts * 1000 end))

local by_id = sensors:key_by("id")

by_id:window(wm.windows.count(2)):sum("vc"):print("pairs")
by_id:window(wm.windows.count(3, 1))
  :process(function(id, _ctx, records, out)
    local vcs = {}
    for i, r in ipairs(records) do vcs[i] = r.vc end
    out({ id = id, last3 = vcs })
  end)
  :print("last3")

env:execute("count windows")
