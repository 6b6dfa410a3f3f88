-- generate: records from a Lua function, at a steady rate paced by a libuv timer.
--
-- fn(i) returns the i-th record (or nil to end); 20 records at 10 per second take 2 s.
-- Processing-time output: each line shows the generated record.
--
-- Run: build/wmrun examples/io_generate.lua
local wm = require("wm")

local env = wm.env{}
env:generate(function(i) return { id = "sensor_" .. (i % 3), ts = i, vc = i * 10 } end,
             { count = 20, rate = 10 })
  :print("gen")
env:execute("io: generate")
