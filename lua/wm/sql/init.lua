--- Streaming SQL over wmrun's engine, following Flink SQL (see docs/sql.md).
-- A script is a list of `;`-separated statements: CREATE TABLE, CREATE VIEW, SET, INSERT INTO
-- and SELECT. The statements compile into one plan of the Lua DSL (the same C operators) that
-- runs when the script has been read: `wmrun --sql job.sql` calls `run_file`.
-- @module wm.sql
local parser = require("wm.sql.parser")
local planner = require("wm.sql.planner")
local errors = require("wm.sql.errors")
local functions = require("wm.sql.functions")

local M = {}

local function dirname(path)
  return path:match("^(.*)/[^/]*$") or "."
end

--- Plans a script without running it.
-- @tparam string text the script
-- @tparam[opt] table opts `name` (shown in errors, default "sql"), `dir` (for relative paths),
--   `env` (an existing wm env to add to)
-- @treturn table the planner (`.env` holds the plan: `env.nodes`)
-- @usage local f = assert(io.open("job.sql"))
-- local p = require("wm.sql").plan(f:read("a"), {name = "job.sql"})
-- print(#p.env.nodes .. " operators")
function M.plan(text, opts)
  opts = opts or {}
  local src = {name = opts.name or "sql", text = text, dir = opts.dir or "."}
  local stmts = parser.parse(text, src)
  local p = planner.new(src, {env = opts.env})
  for _, st in ipairs(stmts) do
    local ok, e = pcall(p.statement, p, st)
    if not ok then
      if errors.is(e) then error(e, 0) end
      -- not a planning error with a position of its own: name the statement, not the library
      errors.raise(src, st.pos, "cannot plan this statement: %s", (tostring(e):gsub("^[^:\n]*%.lua:%d+: ", "")))
    end
  end
  return p
end

--- Plans and runs a script; returns when every query has ended.
-- @tparam string text the script
-- @tparam[opt] table opts as for `plan`
-- @treturn table the planner
-- @usage require("wm.sql").run("SELECT ...", {name = "job.sql"})
function M.run(text, opts)
  local p = M.plan(text, opts)
  if p.queries > 0 then p.env:execute((opts and opts.name) or "sql job") end
  return p
end

--- Reads a script file and runs it; relative paths in it resolve against its folder.
-- @tparam string path the .sql file
-- @treturn table the planner
-- @usage require("wm.sql").run_file("jobs/word_count.sql")
function M.run_file(path)
  local f, err = io.open(path, "r")
  if not f then
    error(setmetatable({message = "cannot open " .. tostring(err)}, errors.Error), 0)
  end
  local text = f:read("a")
  f:close()
  return M.run(text, {name = path, dir = dirname(path)})
end

--- Registers a scalar function written in Lua for every script planned after it (Flink's
-- ScalarFunction): `NAME(args)` in SQL calls `fn(args...)` (nil for NULL) and takes its
-- result (nil for NULL). Calls are checked against the declared types when a script is
-- planned; an error raised by `fn` stops the job naming the function, the call's position
-- and the Lua traceback.
-- @tparam string name the name in SQL (letters, digits, _; case-insensitive as SQL names are)
-- @tparam function fn the function (or a table with `eval`)
-- @tparam[opt] table opts `args` (a list of SQL types: "INT", "BIGINT", "DOUBLE", "STRING",
--   "BOOLEAN", "TIMESTAMP(3)"; absent: any arguments, unchecked), `returns` (default "STRING")
-- @usage require("wm.sql").register_function("greet", function(s, n) return s:rep(n) end,
--   {args = {"STRING", "INT"}, returns = "STRING"})
function M.register_function(name, fn, opts)
  local d = functions.define("scalar", name, fn, opts or {}, "register_function", 2)
  functions.add(functions.global, d, "register_function", 2)
end

--- Registers an aggregate function written in Lua for every script planned after it (Flink's
-- AggregateFunction), usable in GROUP BY queries (with or without a window).
-- @tparam string name the name in SQL
-- @tparam table spec `create_accumulator()`, `accumulate(acc, args...)`, `get_value(acc)`;
--   optional `retract(acc, args...)` (an updating input needs it) and `merge(acc, other)`
--   (SESSION windows need it). `accumulate`, `retract` and `merge` return the new accumulator
--   or nothing (it was changed in place). The accumulator is checkpointed: plain values and
--   tables of them (docs/checkpoints.md).
-- @tparam[opt] table opts `args`, `returns` as for register_function (or fields of `spec`)
-- @usage require("wm.sql").register_aggregate_function("wsum", {
--   create_accumulator = function() return {s = 0, w = 0} end,
--   accumulate = function(acc, v, w) acc.s = acc.s + v * w; acc.w = acc.w + w end,
--   get_value = function(acc) if acc.w > 0 then return acc.s / acc.w end end,
-- }, {args = {"DOUBLE", "INT"}, returns = "DOUBLE"})
function M.register_aggregate_function(name, spec, opts)
  local d = functions.define("aggregate", name, spec, opts, "register_aggregate_function", 2)
  functions.add(functions.global, d, "register_aggregate_function", 2)
end

--- Registers a table function written in Lua for every script planned after it (Flink's
-- TableFunction), used as `FROM t, LATERAL TABLE(f(x)) AS T(a, b)` (or `CROSS JOIN LATERAL
-- TABLE(...)`, `LEFT JOIN LATERAL TABLE(...) ON TRUE`): each row of t is joined with every row
-- the function emits for it.
-- @tparam string name the name in SQL
-- @tparam function fn `fn(emit, args...)`; `emit(row)` for each row: a table by column name,
--   a list in the columns' order, or (one column) the value
-- @tparam[opt] table opts `args` as for register_function; `returns`: its columns, a list of
--   "name TYPE" (default one STRING column `f0`)
-- @usage require("wm.sql").register_table_function("split", function(emit, s)
--   for w in s:gmatch("%S+") do emit({w, #w}) end
-- end, {args = {"STRING"}, returns = {"word STRING", "len INT"}})
function M.register_table_function(name, fn, opts)
  local d = functions.define("table", name, fn, opts or {}, "register_table_function", 2)
  functions.add(functions.global, d, "register_table_function", 2)
end

--- Removes a function registered with register_function, register_aggregate_function or
-- register_table_function.
-- @tparam string name its name
-- @usage require("wm.sql").unregister_function("greet")
function M.unregister_function(name)
  functions.global[tostring(name):upper()] = nil
end

--- Parses a script of `;`-separated statements (wm.sql.parser), without planning it.
-- @function parse
-- @tparam string text the script
-- @tparam[opt] table src `{name = "job.sql"}` for error messages
-- @treturn table a list of statements; each has `tag`, `pos` and `end_pos`
-- @usage local stmts = require("wm.sql").parse("SELECT a FROM t; SELECT b FROM u")
-- assert(#stmts == 2)
M.parse = parser.parse

--- Parses one SQL expression (for the Table API and tests).
-- @function parse_expr
-- @tparam string text the expression
-- @tparam[opt] table src `{name = "expr"}` for error messages
-- @treturn table the expression tree
-- @usage local e = require("wm.sql").parse_expr("a + 1 > b")
M.parse_expr = parser.parse_expr
return M
