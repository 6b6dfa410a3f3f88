--- The DataStream API (everything of `wm` but SQL, the Table API and wm.testing): the
-- classes of wm.base with the methods of every area module loaded, and the helper modules.
-- The SQL planner and wm.testing build on this module; `wm` (wm/init.lua) adds them to it.
-- @module wm.datastream
local core = require("wm.core")
local base = require("wm.base")
require("wm.stream")   -- transformations, key_by, side outputs
require("wm.io")       -- sources, parsers and sinks
require("wm.nexmark")  -- env:nexmark, the Nexmark event generator
require("wm.keyed")    -- keyed process functions, rolling aggregations
require("wm.windowed") -- windows on keyed streams
require("wm.connectors") -- Kafka and NATS JetStream (docs/connectors.md)
require("wm.through")    -- key_by(k, {through = ...}): repartitioning through a log
local connect = require("wm.connect") -- connected streams (two inputs)
local window_join = require("wm.window_join") -- window join and co-group
require("wm.interval_join") -- a:key_by(k1):interval_join(b:key_by(k2))
require("wm.scaleout")   -- execute() of a job with a scale_out source (docs/scaleout.md)
require("wm.lab.replay") -- execute() of a job with read_lines{arrival = ...} (docs/lab.md)
-- (wm.connectors, wm.through, wm.scaleout and wm.lab.replay add to methods of the modules
-- above through wm.base's hooks, `extend`: the order of these requires changes nothing)

local M = {
  env = base.env,
  Env = base.Env, Stream = base.Stream, KeyedStream = base.KeyedStream,
  WindowedStream = base.WindowedStream, Sink = base.Sink, ConnectedStreams = connect.ConnectedStreams,
  JoinedStreams = window_join.JoinedStreams,
  watermarks = require("wm.watermarks"),
  windows = require("wm.windows"),
  triggers = require("wm.triggers"),
  evictors = require("wm.evictors"),
  format = require("wm.format"),
  duration = require("wm.duration"),
  core = core,
  MIN = math.mininteger,
  MAX = math.maxinteger,
  version = core.version,
  _overrides = base._overrides,
  MAX_PARALLELISM = base.MAX_PARALLELISM, -- limits of env and source options (docs/api.md)
  MAX_THREADS = base.MAX_THREADS,
  MAX_CHUNK = base.MAX_CHUNK,
}

--- The thread (1-based) whose Lua state runs this code. With `threads = n` every thread
-- runs the job script (docs/parallelism.md); thread 1 is the one whose `execute()` returns
-- and whose `collect()` tables fill, so guard top-level side effects with
-- `if wm.thread() == 1 then ... end`.
-- @treturn integer
-- @usage if wm.thread() == 1 then print("job starts") end
function M.thread() return core.thread() end

--- The partition of `key` among `n` partitions, from 0 to n-1: NATS's own `partition(n, ...)`
-- subject-mapping function (FNV-1a 32 of the key's bytes, modulo n), so a writer that puts a
-- record on subject `"ev." .. wm.partition(key, 6) .. "." .. key` and a server mapping
-- `"in.*": "ev.{{partition(6,1)}}.{{wildcard(1)}}"` agree (docs/connectors.md).
-- @tparam string|number key a number counts as its text (`tostring`)
-- @tparam integer n the number of partitions, 1 .. 2^31-1
-- @treturn integer
-- @usage stream:write_nats{url = url, stream = "EV",
--   subject = function(r) return "ev." .. wm.partition(r.id, 6) .. "." .. r.id end}
function M.partition(key, n)
  local t = type(key)
  if t ~= "string" and t ~= "number" then
    error("bad argument #1 to 'partition' (string or number expected, got " .. t .. ")", 2)
  end
  if math.type(n) ~= "integer" or n < 1 or n > 0x7fffffff then
    error("bad argument #2 to 'partition' (the number of partitions must be an integer 1 .. 2147483647, got "
      .. tostring(n) .. ")", 2)
  end
  local p = core.partition(key, n)
  return p
end

return M
