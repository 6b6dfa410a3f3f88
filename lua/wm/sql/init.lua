--- Streaming SQL over wmrun's engine, following Flink SQL (see docs/sql.md).
-- A script is a list of `;`-separated statements: CREATE TABLE, CREATE VIEW, SET, INSERT INTO
-- and SELECT. The statements compile into one plan of the Lua DSL (the same C operators) that
-- runs when the script has been read: `wmrun --sql job.sql` calls `run_file`.
-- @module wm.sql
local parser = require("wm.sql.parser")
local planner = require("wm.sql.planner")
local errors = require("wm.sql.errors")

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
