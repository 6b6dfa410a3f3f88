-- write_lines: JSON lines (default), text, or a Lua formatter; buffered, flushed at the end
-- (also after Ctrl-C, which drains the job).
--
-- Run: build/wmrun examples/io_write_lines.lua /tmp/out   (writes /tmp/out.jsonl, /tmp/out.txt)
local wm = require("wm")

local base = arg[1] or "/tmp/wmrun-example"
local here = arg[0]:match("^(.*)/") or "."
local env = wm.env{ watermark_interval = 0 }

local rows = env:read_lines(here .. "/data/a_tumbling_in_order.csv")
  :parse_csv{"id", "ts:integer", "vc:integer"}
rows:write_lines(base .. ".jsonl")                                   -- {"id":"ws_001","ts":1,"vc":3}
rows:write_lines(base .. ".txt", function(r) return r.id .. " " .. r.vc end)
env:execute("io: write_lines")
