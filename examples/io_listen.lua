-- listen_lines: a TCP server taking lines from any number of clients.
--
--   build/wmrun examples/io_listen.lua            (announces "listening on 127.0.0.1:9998")
--   nc -N 127.0.0.1 9998 < examples/data/a_tumbling_in_order.csv
--
-- With max_clients = 1 the job ends once one client has sent its file and closed; without
-- it the server accepts clients until Ctrl-C (which drains the job).
local wm = require("wm")

local env = wm.env{ watermark_interval = 0 }
env:listen_lines("127.0.0.1", tonumber(arg[1] or "9998"), {max_clients = 1})
  :parse_csv{"id", "ts:integer", "vc:integer"}
  :assign_timestamps_and_watermarks(
    wm.watermarks.bounded_out_of_orderness("2s"):with_timestamp_field("ts", 1000))
  :key_by("id")
  :window(wm.windows.tumbling("5s"))
  :sum("vc")
  :print()
env:execute("io: listen_lines")
