-- A custom source in Lua: open, poll, close.
--
-- poll emits records with their timestamps and a watermark, and returns a number of ms to
-- wait before the next poll (here: one reading every 100 ms), false at the end.
--
-- Run: build/wmrun examples/io_custom_source.lua
local wm = require("wm")

local env = wm.env{}
local readings = { {"a", 1}, {"b", 2}, {"a", 3}, {"a", 6}, {"b", 7} }
local i

env:source{
  open = function(_ctx) i = 0 end,
  poll = function(ctx)
    i = i + 1
    local r = readings[i]
    if not r then return false end
    ctx:emit({ id = r[1], vc = r[2] }, r[2] * 1000)   -- the record and its event time
    ctx:emit_watermark(r[2] * 1000 - 1)               -- nothing older will come
    return 100
  end,
  close = function(_ctx) end,
}
  :key_by("id")
  :window(wm.windows.tumbling("5s"))
  :sum("vc")
  :print()
env:execute("io: custom source")
