-- Processing-time windows: windows of the wall clock, not of the records' timestamps.
--
-- `tumbling_processing("1s")` puts each record into the second of wall-clock time in which
-- the window operator sees it, and fires a window when the clock passes its end (a libuv
-- timer, not a watermark). Results depend on when records arrive, so this example has no
-- expected output file. At the end of the input the windows still open fire at once, so
-- reading a small file gives one line per sensor: its count for the second the file was read
-- in (two lines if the read happened to cross a second boundary).
--
-- Try it on a live stream: `nc -lk 9999` in one terminal, then replace read_lines(path)
-- with socket_lines("127.0.0.1", 9999) and type lines like ws_001,1577844001,3.
--
-- Run: build/wmrun examples/window_processing_time.lua [data.csv]
local wm = require("wm")

local here = arg[0]:match("^(.*)/") or "."
local path = arg[1] or (here .. "/data/sensors_mixed.csv")

local env = wm.env{ watermark_interval = 0 }

local sensors = env:read_lines(path)
  :map(function(line)
    local id, ts, vc = line:match("^([^,]+),(%d+),(%d+)$")
    return { id = id, ts = tonumber(ts), vc = tonumber(vc) }
  end)

sensors
  :key_by("id")
  :window(wm.windows.tumbling_processing("1s"))
  :count()
  :map(function(r) return { id = r.key, count = r.count } end)
  :print()

env:execute("processing-time windows")
