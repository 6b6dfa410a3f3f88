-- The Table API from Lua: scenario k's count per word per 5 s tumbling window, written with a
-- DataStream source and Table API calls whose expressions are SQL strings.
--
-- The stream's event timestamps (with_timestamp_field("ts")) and its watermarks become the
-- table's time attribute `rt` (from_data_stream with "rt:rowtime"). The watermark is
-- bounded_out_of_orderness(5 s - 1 ms): max(ts) - 5 s, the same as scenario k's
-- `WATERMARK FOR rt AS rt - INTERVAL '5' SECOND`, so the output is scenario k's
-- (k_sql_tumble_count.expected) with the columns in this select's order.
-- A Lua scalar function (create_function) upper-cases the word.
-- Run: build/wmrun examples/sql/table_api.lua (expected output: table_api.out, checked by spec/sql_lua_spec.lua)
local wm = require("wm")

local dir = arg[0]:match("^(.*)/[^/]*$") or "."
local env = wm.env{watermark_interval = 0}

local words = env:read_lines(dir .. "/k_sql_tumble_count.csv")
  :parse_csv{"word", "ts:integer"}
  :assign_timestamps_and_watermarks(
    wm.watermarks.bounded_out_of_orderness("4999ms"):with_timestamp_field("ts"))

env:create_function("shout", function(s) return s and s:upper() end, {returns = "STRING"})

local t = env:from_data_stream(words, {"word", "ts:BIGINT", "rt:rowtime"})
t:filter("word <> ''")
  :window(wm.table.tumble("5s"):on("rt"):as("w"))
  :group_by("w, word")
  :select("shout(word) AS word, COUNT(*) AS cnt, w.start AS wstart, w.end AS wend")
  :print()

env:execute("table api")
