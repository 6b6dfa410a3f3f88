-- Deduplication with state that expires: a click whose id was kept less than 10 minutes of
-- event time ago is a duplicate; after that the id counts again. Each id's ctx.state
-- (the time it was kept) has a state_ttl, so the job holds only the ids of the last 10
-- minutes, not every id it ever saw (docs/joins.md, "State that expires").
--
-- clicks.csv: id,time (ms)
local wm = require("wm")

local here = arg[0]:match("^(.*)/") or "."
local env = wm.env{watermark_interval = 0}

env:read_lines(here .. "/data/clicks.csv")
  :parse_csv{"id", "ts:integer"}
  :assign_timestamps_and_watermarks(wm.watermarks.monotonous():with_timestamp_field("ts"))
  :key_by("id")
  :process{
    -- the state is gone once the watermark passes the time it was written + 10 min; only a
    -- write renews it (a duplicate reads it and leaves it as it is)
    state_ttl = {ttl = "10min", update = "on_create_and_write", time = "event"},
    process_element = function(click, ctx, out)
      local kept = ctx.state.kept
      if kept then
        out(string.format("drop %s at %d s (kept at %d s)", click.id, click.ts // 1000, kept // 1000))
      else
        ctx.state.kept = click.ts
        out(string.format("keep %s at %d s", click.id, click.ts // 1000))
      end
    end}
  :print()

env:execute("deduplicate clicks")
