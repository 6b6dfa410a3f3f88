-- The Kafka quick start of docs/connectors.md: a windowed job on a Kafka topic that kcat
-- filled with examples/data/connectors_sensors.csv (id,seconds,vc). Give the brokers as the
-- first argument (build/wmrun-kafka-dev prints them).
local wm = require("wm")
local brokers = arg[1] or "127.0.0.1:9092"

local env = wm.env{watermark_interval = 0}
env:read_kafka{brokers = brokers, topic = "sensors", bounded = "latest"}
  :parse_csv{"id", "ts:integer", "vc:integer"}
  :assign_timestamps_and_watermarks(
    wm.watermarks.bounded_out_of_orderness("2s"):with_timestamp_field("ts", 1000))
  :key_by("id"):window(wm.windows.tumbling("5s")):sum("vc"):print()
env:execute("sensor sums from Kafka")
