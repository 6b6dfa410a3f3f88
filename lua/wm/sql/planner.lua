--- The SQL planner: turns parsed statements into the same plan the Lua DSL builds
-- (read_lines, flat_map, assign_timestamps_and_watermarks, key_by, window, print, sink), so a
-- SQL job runs on the same C operators as a Lua job.
--
-- A relation (`rel`) is what a FROM clause or a query gives: a stream plus its columns
-- `{name, type, rowtime}`. Rows are Lua tables keyed by column name (NULL = absent).
-- An append-only relation carries rows; an updating one (after a non-windowed GROUP BY)
-- carries changelog entries `{k = "+I"|"-U"|"+U"|"-D", r = row}`.
--
-- The planner is in parts, one module each, that add methods to one class (wm.sql.plan.base):
-- ddl (CREATE TABLE/VIEW, SET), from (scans, views, window TVFs), select (WHERE, projections,
-- UNION ALL), aggregate (GROUP BY, windows, HAVING, DISTINCT), statements (SELECT, INSERT,
-- EXPLAIN). Every translation to DSL calls lives in wm.sql.plan.lower. This module is the
-- entry: the constructor and the env.
-- @module wm.sql.planner
local wm = require("wm.datastream") -- not the facade `wm`, which loads the Table API
local base = require("wm.sql.plan.base")
local functions = require("wm.sql.functions")
require("wm.sql.plan.ddl")
require("wm.sql.plan.from")
require("wm.sql.plan.select")
require("wm.sql.plan.aggregate")
require("wm.sql.plan.statements")

local M = {}
local Planner = base.Planner

--- The DSL calls the planner makes (wm.sql.plan.lower).
M.lower = require("wm.sql.plan.lower")

--- A planner over a script.
-- @tparam table src {name = "job.sql", text = script, dir = folder for relative paths}
-- @tparam[opt] table opts {env = an existing wm env}
-- `view_plans` counts how often a view's query was planned (at its CREATE VIEW, and once per
-- use in a query): linear in the script, never once per view per view that reads it.
-- `udfs` are the user functions the script sees (name -> definition, wm.sql.functions): its
-- own (CREATE FUNCTION, env:create_function), then those registered for every script
-- (wm.sql.register_function...); `functions` gives the scalar ones to wm.sql.expr.
function M.new(src, opts)
  opts = opts or {}
  local udfs = setmetatable({}, {__index = functions.global})
  local scalars = setmetatable({}, {__index = function(_, name)
    local d = udfs[name]
    if not d or d.kind ~= "scalar" then return nil end
    d.entry = d.entry or functions.scalar_entry(d)
    return d.entry
  end})
  return setmetatable({src = src, tables = {}, views = {}, settings = {}, env = opts.env,
                       queries = 0, view_plans = 0, functions = scalars, udfs = udfs}, Planner)
end

-- The env, created at the first query from the SET options seen so far.
function Planner:get_env(pos)
  if self.env then return self.env end
  local st = self.settings
  local opts = {}
  local wi = st["pipeline.auto-watermark-interval"]
  if wi then
    local ms = wm.core.duration(wi:gsub("^(%d+)$", "%1ms"))
    if not ms then self:err(st._pos["pipeline.auto-watermark-interval"], "bad duration '%s'", wi) end
    opts.watermark_interval = ms
  end
  local p = st["parallelism.default"]
  if p then
    local n = math.tointeger(tonumber(p))
    if not n or n < 1 or n > wm.MAX_PARALLELISM then
      self:err(st._pos["parallelism.default"], "bad parallelism '%s' (expected 1 to %d)", p, wm.MAX_PARALLELISM)
    end
    opts.parallelism = n
  end
  self.env = wm.env(opts)
  self.env_pos = pos
  return self.env
end

-- A scratch env: CREATE VIEW plans its query there once, so that errors show at the statement.
function Planner.scratch_env(_self)
  return wm.env{}
end

return M
