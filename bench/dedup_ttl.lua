-- The deduplication job of bench/dedup_ttl.sh: ids in arg[1] (lines "id,ts"), kept the
-- first time; arg[2] = "ttl" gives each id's state a state_ttl of 10 s of event time, "none"
-- keeps every id for ever (the job as it had to be written before state_ttl).
local wm = require("wm")

local input, mode = arg[1], arg[2]
local env = wm.env{}
env:read_lines(input)
  :parse_csv{"id", "ts:integer"}
  :assign_timestamps_and_watermarks(wm.watermarks.monotonous():with_timestamp_field("ts"))
  :key_by("id")
  :process{
    state_ttl = mode == "ttl" and {ttl = "10s", time = "event"} or nil,
    process_element = function(r, ctx, out)
      if not ctx.state.seen then
        ctx.state.seen = true
        out(r.id)
      end
    end}
  :write_lines("/dev/null", function(s) return s end)
env:execute("dedup")
