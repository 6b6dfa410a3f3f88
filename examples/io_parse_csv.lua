-- parse_csv: scenario a's job without a Lua call per record.
--
-- Lines `id,seconds,vc` become typed C rows (parse_csv); the timestamp comes from the
-- `ts` field in C (with_timestamp_field, seconds * 1000), key_by("id") and sum("vc") read
-- the rows in C and print formats them in C. The output is scenario a's.
--
-- Run: build/wmrun examples/io_parse_csv.lua [data.csv]
local wm = require("wm")

local here = arg[0]:match("^(.*)/") or "."
local path = arg[1] or (here .. "/data/a_tumbling_in_order.csv")

local env = wm.env{ watermark_interval = 0 }

env:read_lines(path)
  :parse_csv{"id", "ts:integer", "vc:integer"}
  :assign_timestamps_and_watermarks(
    wm.watermarks.bounded_out_of_orderness("2s"):with_timestamp_field("ts", 1000))
  :key_by("id")
  :window(wm.windows.tumbling("5s"))
  :sum("vc")
  :print()

env:execute("io: parse_csv")
