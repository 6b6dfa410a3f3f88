-- read_lines{follow = true}: tail a growing log file, and stdin with "-".
--
--   build/wmrun examples/io_follow.lua /tmp/sensors.csv &
--   echo ws_001,1,3 >> /tmp/sensors.csv      (and so on; Ctrl-C or kill -INT drains)
--   printf 'ws_001,1,3\n' | build/wmrun examples/io_follow.lua -     (standard input)
--
-- Following uses inotify, with a poll (1 s by default, `poll` option) as a fallback; a file
-- truncated by log rotation is read again from its start.
local wm = require("wm")

local path = arg[1] or "-"
local env = wm.env{}
env:read_lines(path, {follow = path ~= "-"})
  :parse_csv{"id", "ts:integer", "vc:integer", on_error = "skip"}
  :print()
env:execute("io: follow")
