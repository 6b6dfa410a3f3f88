-- Writes the demo's input into the topic `events`: 3000 readings of 12 sensors, one every
-- 100 ms of event time, keyed by sensor (so that a sensor's readings share a partition), and
-- half way through a cue in partition 0 that job.lua drops (run.sh kills a process there).
--   wmrun examples/scaleout/load.lua BROKERS
local wm = require("wm")
local brokers = assert(arg[1], "usage: wmrun load.lua BROKERS")

local function readings(from, to)
  local rows = {}
  for i = from, to do rows[#rows + 1] = {id = "s" .. (i % 12), ts = i * 100, v = i % 7} end
  local env = wm.env{}
  env:from_elements(table.unpack(rows)):write_kafka{brokers = brokers, topic = "events", key = "id"}
  env:execute("load")
end

readings(1, 1500)
local cue = wm.env{}
cue:from_elements({cue = true, p = 0}):write_kafka{brokers = brokers, topic = "events", partition = "p"}
cue:execute("cue")
readings(1501, 3000)
