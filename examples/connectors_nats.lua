-- The connectors' quick start (docs/connectors.md): writes a file of sensor readings into a
-- NATS JetStream stream, one subject per sensor, then reads the stream back with a windowed
-- job that runs one watermark generator per subject.
--   /usr/sbin/nats-server -js -sd /tmp/wm-js -a 127.0.0.1 -p 4222 &
--   wmrun examples/connectors_nats.lua [nats://127.0.0.1:4222]
local wm = require("wm")
local url = arg[1] or "nats://127.0.0.1:4222"
local dir = debug.getinfo(1, "S").source:match("^@(.*)/[^/]*$") or "."

-- 1. the file into the stream SENSORS (created on subjects sensors.>), as it is
local load = wm.env{}
load:read_lines(dir .. "/data/connectors_sensors.csv")
  :write_nats{url = url, stream = "SENSORS", format = "text",
              subject = function(line) return "sensors." .. line:match("^[^,]+") end}
load:execute("load")

-- 2. 5 s tumbling sums per sensor, read up to the end of the stream as it is now
local env = wm.env{watermark_interval = 0}
env:read_nats{url = url, stream = "SENSORS", subject = "sensors.>", bounded = "latest"}
  :parse_csv{"id", "ts:integer", "vc:integer"}
  :assign_timestamps_and_watermarks(
    wm.watermarks.bounded_out_of_orderness("2s"):with_timestamp_field("ts", 1000))
  :key_by("id")
  :window(wm.windows.tumbling("5s"))
  :sum("vc")
  :print()
env:execute("sensor sums")
