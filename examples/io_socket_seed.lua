-- The classic socket job: sensor lines typed into `nc -lk 9999`.
--
--   terminal 1: nc -lk 9999
--   terminal 2: build/wmrun examples/io_socket_seed.lua [host] [port]
--   then type lines like `ws_001,1,3` into terminal 1.
--
-- socket_lines connects to the server and reads lines until it closes the connection (like
-- Flink's socketTextStream). Ctrl-C drains: the end-of-input watermark fires every open
-- window before wmrun exits (a second Ctrl-C aborts). Malformed lines go to a side output.
local wm = require("wm")

local host, port = arg[1] or "127.0.0.1", tonumber(arg[2] or "9999")
local env = wm.env{ watermark_interval = 0 }

local sensors = env:socket_lines(host, port)
  :parse_csv{"id", "ts:integer", "vc:integer", on_error = "side_output"}
sensors:get_side_output("parse_errors"):print("Bad")

local sums = sensors
  :assign_timestamps_and_watermarks(
    wm.watermarks.bounded_out_of_orderness("2s"):with_timestamp_field("ts", 1000))
  :key_by("id")
  :window(wm.windows.tumbling("5s"))
  :allowed_lateness("2s")
  :side_output_late_data("late")
  :reduce(function(a, b) return { id = a.id, ts = a.ts, vc = a.vc + b.vc } end)

sums:print()
sums:get_side_output("late"):print("Side")
env:execute("sensor sums")
