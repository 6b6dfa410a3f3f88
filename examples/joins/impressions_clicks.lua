-- An interval join: every click within 10 minutes after an impression of the same ad
-- (Flink's KeyedStream.intervalJoin ... between(0, 10 min)). Both kinds of events come from
-- one file, in the order they arrived; the watermark trails the newest time by 1 minute,
-- and a click that comes later than that goes to a side output instead of being dropped
-- silently. docs/joins.md ("Interval join") walks through it.
--
-- data/ad_events.csv: kind (impression | click), id, ad, time (ms)
--
-- What it prints (impressions_clicks.expected, worked out by hand; W = newest time - 1 min
-- - 1 ms after each event): c1 (0:45) meets i1 (0:00); c2 (0:20) is before i2 (0:30): no
-- pair; c3 (2:10) meets i1 and i3 (1:40), older impression first; c4 (11:00) is 10:30
-- after i2: too late for the interval; c5 (10:00) arrives at W = 9:59.999, not late, and
-- meets i1 (exactly 10 min: the bound is inclusive, i1 is kept until W reaches 10:00) and
-- i3; c6 (9:50) arrives at W = 10:39.999: late, to the side output; c7 (11:45) meets i4;
-- c8 (23:20) meets i5 (13:20) at exactly 10 min; c9 (23:21) is 1 s too late for it.
local wm = require("wm")

local here = arg[0]:match("^(.*)/") or "."
local env = wm.env{watermark_interval = 0}

local events = env:read_lines(here .. "/data/ad_events.csv")
  :parse_csv{"kind", "id", "ad", "t:integer"}
  :assign_timestamps_and_watermarks(
    wm.watermarks.bounded_out_of_orderness("1min"):with_timestamp_field("t"))
local impressions = events:filter(function(e) return e.kind == "impression" end)
local clicks = events:filter(function(e) return e.kind == "click" end)

local function mmss(t) return string.format("%02d:%02d", t // 60000, t // 1000 % 60) end

-- a click c meets an impression i of its ad when i.t <= c.t <= i.t + 10 min
local joined = impressions:key_by("ad"):interval_join(clicks:key_by("ad"))
  :between(0, "10min")
  :side_output_right_late_data("late clicks")
  :process(function(i, c, ctx, out)
    out(string.format("%s: click %s at %s, %d s after impression %s", i.ad, c.id, mmss(c.t),
      (ctx.right_timestamp - ctx.left_timestamp) // 1000, i.id))
  end)

local late = joined:get_side_output("late clicks")
  :map(function(c) return string.format("late click %s (%s at %s)", c.id, c.ad, mmss(c.t)) end)
joined:union(late):print()
env:execute("impressions and clicks")
