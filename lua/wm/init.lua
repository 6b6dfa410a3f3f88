--- wmrun's job API: an environment, streams, keyed and windowed streams, sinks, SQL and the
-- Table API from Lua, and the test harness. The DSL only builds a plan (a list of nodes);
-- `env:execute()` hands it to the C core.
--
-- This module only assembles the public API: the classes live in wm.base, their methods in
-- one module per area (wm.stream, wm.io, wm.keyed, wm.windowed, wm.sql.tableapi), and
-- wm.datastream gathers all but SQL and testing (what the SQL planner builds on).
--
-- In this reference, the methods of each class are on the page of the module that defines
-- them: `wm.env` and `Env:execute` in wm.base; sources (`Env:read_lines`, ...), parsers and
-- sinks in wm.io; `Stream` transformations and `Sink:name` in wm.stream; `KeyedStream`
-- process functions and rolling aggregations in wm.keyed; `KeyedStream:window` and the
-- `WindowedStream` methods in wm.windowed; `Env:execute_sql`, `Table`, `wm.table` in
-- wm.sql.tableapi; `wm.thread` in wm.datastream. The helper modules (`wm.watermarks`,
-- `wm.windows`, `wm.triggers`, `wm.evictors`, `wm.format`, `wm.duration`, `wm.testing`,
-- `wm.sql`) have a page each.
-- @module wm
local datastream = require("wm.datastream")
local tableapi = require("wm.sql.tableapi") -- SQL and the Table API (loads wm.sql on use)
local testing = require("wm.testing")

local M = {}
for k, v in pairs(datastream) do M[k] = v end
M.table = tableapi.table
M.testing = testing
M.lab = require("wm.lab") -- the watermark strategy lab (docs/lab.md)
return M
