-- Benchmark: session windows that keep many sessions of a key open (issue 34).
-- bench/session.lua's pipeline (parse_csv, with_timestamp_field, key_by("id"), sum("vc"),
-- print: no Lua per record), the file read with parallel = true (at -p 2 two instances,
-- each its half), a gap and an out-of-orderness bound given on the command line.
-- Input lines: id,ts_ms,vc (bench/gen, or bench/sessions.sh's one-key input).
-- usage: wmrun [-p N] bench/session_many.lua data.csv [GAP [BOUND]]   (default 5s 2s)
local wm = require("wm")

local path = assert(arg[1], "usage: wmrun bench/session_many.lua data.csv [GAP [BOUND]]")
local env = wm.env()
env:read_lines(path, {parallel = true})
  :parse_csv{"id", "ts:integer", "vc:integer"}
  :assign_timestamps_and_watermarks(
    wm.watermarks.bounded_out_of_orderness(arg[3] or "2s"):with_timestamp_field("ts"))
  :key_by("id")
  :window(wm.windows.session(arg[2] or "5s"))
  :sum("vc")
  :print()

env:execute("bench session_many")
