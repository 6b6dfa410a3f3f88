-- write_socket: JSON lines to a TCP server.
--
--   terminal 1: nc -lk 9997
--   terminal 2: build/wmrun examples/io_write_socket.lua
--
-- A server that reads slowly slows the sources down (backpressure): memory stays bounded.
local wm = require("wm")

local here = arg[0]:match("^(.*)/") or "."
local env = wm.env{ watermark_interval = 0 }
env:read_lines(here .. "/data/a_tumbling_in_order.csv")
  :parse_csv{"id", "ts:integer", "vc:integer"}
  :write_socket("127.0.0.1", tonumber(arg[1] or "9997"))
env:execute("io: write_socket")
