--- The DataStream API (everything of `wm` but SQL, the Table API and wm.testing): the
-- classes of wm.base with the methods of every area module loaded, and the helper modules.
-- The SQL planner and wm.testing build on this module; `wm` (wm/init.lua) adds them to it.
-- @module wm.datastream
local core = require("wm.core")
local base = require("wm.base")
require("wm.stream")   -- transformations, key_by, side outputs
require("wm.io")       -- sources, parsers and sinks
require("wm.keyed")    -- keyed process functions, rolling aggregations
require("wm.windowed") -- windows on keyed streams
require("wm.connectors") -- Kafka and NATS JetStream (docs/connectors.md)
require("wm.through")    -- key_by(k, {through = ...}): repartitioning through a log

local M = {
  env = base.env,
  Env = base.Env, Stream = base.Stream, KeyedStream = base.KeyedStream,
  WindowedStream = base.WindowedStream, Sink = base.Sink,
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

return M
