--- User-defined functions of the SQL layer, written in Lua (docs/sql.md, "User functions"):
-- scalar functions (Flink's ScalarFunction) and aggregate functions (AggregateFunction),
-- registered from Lua (`wm.sql.register_function`, `register_aggregate_function`,
-- `env:create_function`) or from a script (`CREATE FUNCTION f AS 'module.name' LANGUAGE LUA`).
--
-- A function declares its argument and result types (`{args = {"INT", "STRING"}, returns =
-- "STRING"}`): a call is checked when the script is planned. At run time a function that
-- raises stops the job with the function's name, the call's position in the script and the
-- Lua traceback; a result of the wrong Lua type is an error too, never a silently wrong value.
-- @module wm.sql.functions
local errors = require("wm.sql.errors")
local values = require("wm.sql.values")

local M = {}

--- The functions registered from Lua for every script of this process: upper-case name ->
-- definition (wm.sql.register_function and friends).
M.global = {}

local LUA_NAMES = {integer = "BIGINT", number = "DOUBLE", string = "STRING", boolean = "BOOLEAN"}
local TYPES = {STRING = "STRING", VARCHAR = "STRING", CHAR = "STRING", INT = "INT", INTEGER = "INT",
  SMALLINT = "INT", TINYINT = "INT", BIGINT = "BIGINT", DOUBLE = "DOUBLE", FLOAT = "DOUBLE",
  BOOLEAN = "BOOLEAN", TIMESTAMP = "TIMESTAMP", TIMESTAMP_LTZ = "TIMESTAMP_LTZ"}

--- The SQL type named by `s` ("INT", "VARCHAR(10)", "TIMESTAMP(3)", or a Lua name: "integer",
-- "number", "string", "boolean"); nil when it names none.
function M.type_of(s)
  if type(s) ~= "string" then return nil end
  if LUA_NAMES[s] then return LUA_NAMES[s] end
  local u = s:upper():gsub("%s+", " ")
  if u == "TIMESTAMP(3) WITH LOCAL TIME ZONE" or u == "TIMESTAMP_LTZ(3)" then return "TIMESTAMP_LTZ" end
  if u == "TIMESTAMP(3)" then return "TIMESTAMP" end
  return TYPES[(u:gsub("%(%d+%)$", ""))]
end

local function check_types(what, opts, level)
  local args
  if opts.args ~= nil then
    if type(opts.args) ~= "table" then error(what .. ": args must be a list of SQL types", level + 1) end
    args = {}
    for i, s in ipairs(opts.args) do
      args[i] = M.type_of(s)
      if not args[i] then
        error(string.format("%s: unknown type '%s' (argument %d)", what, tostring(s), i), level + 1)
      end
    end
  end
  local ret = opts.returns == nil and "STRING" or M.type_of(opts.returns)
  if not ret then error(string.format("%s: unknown result type '%s'", what, tostring(opts.returns)), level + 1) end
  return args, ret
end

local AGG_METHODS = {"create_accumulator", "accumulate", "get_value", "retract", "merge"}

--- Makes a function's definition, checking what was given (errors at the caller's `level`).
-- @tparam string kind "scalar" or "aggregate"
-- @tparam string name the name in SQL
-- @param impl a function (scalar), or a table (aggregate: `create_accumulator`,
--   `accumulate`, `get_value`, optional `retract` and `merge`; scalar: `eval`)
-- @tparam[opt] table opts `args` (list of SQL types; absent: any arguments, unchecked),
--   `returns` (default STRING); a table `impl` may hold them itself
-- @treturn table the definition
function M.define(kind, name, impl, opts, what, level)
  level = (level or 1) + 1
  if type(name) ~= "string" or not name:match("^[%a_][%w_]*$") then
    error(what .. ": expected a name (letters, digits, _), got " .. tostring(name), level)
  end
  opts = opts or (type(impl) == "table" and impl) or {}
  local def = {kind = kind, name = name, upper = name:upper()}
  if kind == "scalar" or kind == "table" then
    local fn = impl
    if type(impl) == "table" then fn = impl.eval end
    if type(fn) ~= "function" then
      error(string.format("%s: expected a function (or a table with eval), got %s", what, type(impl)), level)
    end
    def.fn = fn
  elseif kind == "aggregate" then
    if type(impl) ~= "table" then
      error(what .. ": expected a table {create_accumulator, accumulate, get_value[, retract, merge]}, got "
        .. type(impl), level)
    end
    for i, m in ipairs(AGG_METHODS) do
      local f = impl[m]
      if (i <= 3 or f ~= nil) and type(f) ~= "function" then
        error(string.format("%s: '%s' must be a function, got %s", what, m, type(f)), level)
      end
      def[m] = f
    end
  else
    error(what .. ": unknown kind " .. tostring(kind), level)
  end
  if kind == "table" then
    def.args = check_types(what, {args = opts.args}, level)
    def.columns = M.columns_of(opts.returns, what, level + 1)
  else
    def.args, def.returns = check_types(what, opts, level)
  end
  return def
end

--- The columns a table function declares: `returns = {"word STRING", "n INT"}` (absent: one
-- STRING column named f0, Flink's name).
function M.columns_of(returns, what, level)
  if returns == nil then return {{name = "f0", type = "STRING"}} end
  if type(returns) ~= "table" or #returns == 0 then
    error(what .. ": returns must be a list of columns {\"name TYPE\", ...}", level + 1)
  end
  local cols, seen = {}, {}
  for i, s in ipairs(returns) do
    local name, ty = tostring(s):match("^%s*([%a_][%w_]*)%s+(.-)%s*$")
    local t = name and M.type_of(ty)
    if not t then
      error(string.format("%s: column %d: expected \"name TYPE\", got '%s'", what, i, tostring(s)), level + 1)
    end
    if seen[name] then error(string.format("%s: column '%s' is declared twice", what, name), level + 1) end
    seen[name] = true
    cols[i] = {name = name, type = t}
  end
  return cols
end

local BUILTIN_AGGS = {COUNT = true, SUM = true, MIN = true, MAX = true, AVG = true}

--- Adds a definition to `into` (a name -> definition table), refusing built-in names.
function M.add(into, def, what, level)
  local expr = require("wm.sql.expr")
  if expr.FUNCS[def.upper] or BUILTIN_AGGS[def.upper] or expr.WINDOW_FNS[def.upper]
      or expr.WINDOW_PROPS[def.upper] or def.upper == "CURRENT_WATERMARK" or def.upper == "ROW_NUMBER" then
    error(what .. ": '" .. def.name .. "' is a built-in function", (level or 1) + 1)
  end
  into[def.upper] = def
end

---------------------------------------------------------------------------------------------
-- Type checks at planning time

local NUMERIC = {INT = 1, BIGINT = 2, DOUBLE = 3}
local TEMPORAL = {TIMESTAMP = true, TIMESTAMP_LTZ = true}

local function show(t)
  if t == "TIMESTAMP" then return "TIMESTAMP(3)" end
  if t == "TIMESTAMP_LTZ" then return "TIMESTAMP_LTZ(3)" end
  return t
end

-- True when a value of type `got` may be passed where `want` is declared (NULL anywhere,
-- numbers widened as Flink's implicit casts do, either timestamp for the other).
local function fits(got, want)
  if got == want or got == "NULL" then return true end
  if NUMERIC[got] and NUMERIC[want] then return NUMERIC[got] <= NUMERIC[want] end
  return TEMPORAL[got] and TEMPORAL[want] or false
end

--- Checks a call's arguments against the definition: count and types. `node` is the call
-- (its `args` carry the positions), `types` the compiled arguments' types.
function M.check_call(src, def, node, types)
  local want = def.args
  if not want then return end
  local sig = {}
  for i, t in ipairs(want) do sig[i] = show(t) end
  if #types ~= #want then
    errors.raise(src, node.pos, "function '%s' takes %d argument%s (%s), got %d", def.name, #want,
      #want == 1 and "" or "s", table.concat(sig, ", "), #types)
  end
  for i, t in ipairs(types) do
    if not fits(t, want[i]) then
      errors.raise(src, node.args[i].pos, "function '%s': argument %d must be %s, got %s (declared %s(%s))",
        def.name, i, show(want[i]), show(t), def.name, table.concat(sig, ", "))
    end
  end
end

---------------------------------------------------------------------------------------------
-- Run time

local R = values.runtime

-- The message of an error raised inside a user function, with the traceback of the user's
-- frames (up to the frame that called it from the SQL layer).
local function handler(e)
  if type(e) == "table" and errors.is(e) then return e end -- already an SQL error (with its place)
  local msg = type(e) == "table" and errors.is(e) and e.message or tostring(e)
  local tb = debug.traceback("", 2)
  local kept = {}
  for line in tb:gmatch("[^\n]+") do
    if line:find("wm/sql/functions.lua", 1, true) or line:find("in function 'xpcall'", 1, true) then break end
    if not line:match("^stack traceback:") and not line:find("[C]: in function 'error'", 1, true) then
      kept[#kept + 1] = line
    end
  end
  if #kept > 0 then msg = msg .. "\nstack traceback:\n" .. table.concat(kept, "\n") end
  return msg
end

local function failed(def, where, what, msg)
  if type(msg) == "table" and errors.is(msg) then error(msg, 0) end
  values.fail(where, string.format("function '%s' failed%s: %s", def.name, what, msg))
end

-- Checks the Lua type of a result against the declared SQL type; a DOUBLE may be given as
-- an integer (made a float). `col`: the value is one a table function emitted for it.
local function result_of(def, where, v, t, col)
  if v == nil then return nil end
  t = t or def.returns
  local lt = type(v)
  if t == "STRING" then
    if lt == "string" then return v end
  elseif t == "BOOLEAN" then
    if lt == "boolean" then return v end
  elseif t == "DOUBLE" then
    if lt == "number" then return v + 0.0 end
  elseif math.type(v) == "integer" then
    return v
  end
  local shown = (math.type(v) or lt) .. " " .. (lt == "string" and string.format("%q", v) or tostring(v))
  if col then
    values.fail(where, string.format("function '%s' emitted %s for column '%s', which is declared %s", def.name,
      shown, col, show(t)))
  end
  values.fail(where, string.format("function '%s' returned %s, but it is declared to return %s", def.name, shown,
    show(t)))
end

--- Calls a table function for one row: `fn(emit, args...)`; each `emit(v)` gives a row of its
-- columns, as a table (by column name, or a list in their order) or, for one column, the
-- value. `out(values)` takes each row as a list of the column values. `args` is a list.
function M.call_table(def, where, args, n, out)
  local cols = def.columns
  local nc = #cols
  local function emit(v)
    local row = {}
    if type(v) == "table" then
      for i = 1, nc do
        local x = v[cols[i].name]
        if x == nil then x = v[i] end
        row[i] = result_of(def, where, x, cols[i].type, cols[i].name)
      end
    elseif nc == 1 then
      row[1] = result_of(def, where, v, cols[1].type, cols[1].name)
    else
      values.fail(where, string.format("function '%s' emitted %s, but a row of its %d columns is a table",
        def.name, type(v), nc))
    end
    out(row)
  end
  local ok, e = xpcall(def.fn, handler, emit, table.unpack(args, 1, n))
  if not ok then failed(def, where, "", e) end
end

--- Calls scalar function `def` for the call at `where` ("job.sql:3:8").
function M.call_scalar(def, where, ...)
  local ok, v = xpcall(def.fn, handler, ...)
  if not ok then failed(def, where, "", v) end
  return result_of(def, where, v)
end
local call_scalar = M.call_scalar

--- The Lua source of a call of scalar function `def` (for expr.FUNCS-like entries): compiled
-- code calls `R_hoisted[i](where, args...)`, a closure over the definition.
-- @treturn table `{min, max, gen}`, as expr.FUNCS entries are
function M.scalar_entry(def)
  local ref
  -- any number of arguments for wm.sql.expr: check_call says what the declaration takes
  return {0, 254, function(src, node, a, t)
    M.check_call(src, def, node, t)
    if not ref then
      local h = R.hoisted
      h[#h + 1] = function(where, ...) return call_scalar(def, where, ...) end
      ref = "R_hoisted[" .. #h .. "]"
    end
    local l, c = errors.line_col(src.text or "", node.pos or 1)
    local where = string.format("%q", (src.name or "sql") .. ":" .. l .. ":" .. c)
    local args = #a > 0 and (", " .. require("wm.sql.expr").arglist(a)) or ""
    return ref .. "(" .. where .. args .. ")", def.returns
  end}
end

--- An aggregate of wm.sql.aggs' shape ({init, add, retract, merge, result}) over a user
-- aggregate function. `nargs` arguments reach `add` as one value (one argument) or a list.
-- `where` names the call in the script.
function M.make_aggregate(def, nargs, where)
  local create, acc_fn, get, ret, mrg = def.create_accumulator, def.accumulate, def.get_value, def.retract,
    def.merge
  local function call(what, f, ...)
    local ok, v = xpcall(f, handler, ...)
    if not ok then failed(def, where, " in " .. what, v) end
    return v
  end
  local function step(what, f, s, v)
    local r
    if nargs == 1 then r = call(what, f, s, v)
    elseif nargs == 0 then r = call(what, f, s)
    else r = call(what, f, s, table.unpack(v, 1, nargs)) end
    if r == nil then return s end
    return r
  end
  return {
    init = function() return call("create_accumulator", create) end,
    add = function(s, v) return step("accumulate", acc_fn, s, v) end,
    retract = function(s, v) return step("retract", ret, s, v) end,
    merge = function(a, b)
      local r = call("merge", mrg, a, b)
      if r == nil then return a end
      return r
    end,
    result = function(s) return result_of(def, where, call("get_value", get, s)) end,
  }
end

---------------------------------------------------------------------------------------------
-- CREATE FUNCTION name AS 'module.name' LANGUAGE LUA

--- Loads what `CREATE FUNCTION ... AS 'module.name'` names: `require(module)[name]`, with the
-- script's folder first on the search path. Returns the value, or nil and why.
function M.load(class, dir)
  local mod, field = class:match("^(.-)%.([%a_][%w_]*)$")
  if not mod or mod == "" then
    return nil, "expected 'module.name' (a Lua module and the name of the function in it)"
  end
  local path = (dir or ".") .. "/?.lua;" .. (dir or ".") .. "/?/init.lua;" .. package.path
  local file = package.searchpath(mod, path)
  local m
  if file and not package.loaded[mod] then
    local chunk, err = loadfile(file)
    if not chunk then return nil, err end
    local ok, v = pcall(chunk, mod, file)
    if not ok then return nil, "loading " .. file .. ": " .. tostring(v) end
    if v == nil then v = true end
    package.loaded[mod] = v
    m = v
  else
    local ok, v = pcall(require, mod)
    if not ok then return nil, (tostring(v):gsub("\n.*", "")) end
    m = v
  end
  if type(m) ~= "table" then return nil, "module '" .. mod .. "' does not return a table" end
  local v = m[field]
  if v == nil then return nil, "module '" .. mod .. "' has no '" .. field .. "'" end
  return v
end

return M
