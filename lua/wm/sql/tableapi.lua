--- SQL and the Table API from Lua (docs/sql.md, "From Lua"): `env:execute_sql`,
-- `env:sql_query`, `env:from_data_stream`, `env:create_temporary_view`,
-- `env:create_function`, and Table objects with `:print()`, `:to_append_stream()`,
-- `:to_retract_stream()`, `:execute_insert(name)`, `:filter`, `:select`, `:window`,
-- `:group_by`. Table API expressions are SQL strings.
--
-- Methods of the classes of wm.base, and `M.table` (wm.table). The SQL modules (LPeg grammar, planner) load
-- on the first call, so a job that uses no SQL does not pay for them.
--
-- Each env has one planner; every Table is a view in it (a generated name such as `_t3`,
-- also what `tostring(table)` gives, so a Table can be named in a query). Nothing runs
-- until `env:execute()`: `:print()`, `:execute_insert()` and `execute_sql("INSERT ...")`
-- add sinks to the job, like the statements of a Flink StatementSet.
-- @module wm.sql.tableapi
local base = require("wm.base")
local duration = require("wm.duration")

local Env, Stream = base.Env, base.Stream

local M = {}

local Table, GroupedTable, WindowedTable, Window = {}, {}, {}, {}
-- the classes, for spec/ldoc_spec.lua (which checks that their methods are documented)
M.Table, M.GroupedTable, M.WindowedTable, M.Window = Table, GroupedTable, WindowedTable, Window
Table.__index, GroupedTable.__index, WindowedTable.__index, Window.__index = Table, GroupedTable, WindowedTable, Window

local function sqlmods()
  return require("wm.sql.parser"), require("wm.sql.planner"), require("wm.sql.errors")
end

-- Runs fn(...) turning SQL errors into plain error strings raised at the user's call.
local function guarded(fn, ...)
  local ok, a, b = pcall(fn, ...)
  if ok then return a, b end
  local errors = require("wm.sql.errors")
  if errors.is(a) then error(a.message, 3) end
  error(a, 0)
end

-- The planner of an env, made on first use.
local function planner_of(env)
  local p = rawget(env, "_sql")
  if p then return p end
  local _, planner = sqlmods()
  p = planner.new({name = "sql", text = "", dir = "."}, {env = env})
  p.counter = 0
  p.where = base.where
  rawset(env, "_sql", p)
  return p
end

-- Parses `text` as statements named after the Lua caller (`job.lua:12: SQL:1:5: ...`).
local function parse(p, text, what)
  if type(text) ~= "string" then error(what .. ": expected a SQL string, got " .. type(text), 3) end
  local parser = sqlmods()
  p.src = {name = p.where() .. ": SQL", text = text, dir = "."}
  return parser.parse(text, p.src)
end

local function new_name(p)
  p.counter = p.counter + 1
  return "_t" .. p.counter
end

-- A Table over the query `qtext` (a SELECT): registered as a view named `_tN`.
local function table_of_query(p, qtext, what)
  local stmts = parse(p, qtext, what)
  if #stmts ~= 1 or stmts[1].tag ~= "select_stmt" then
    p:err(stmts[1] and stmts[1].pos or 1, "%s takes one SELECT query", what)
  end
  local name = new_name(p)
  p:create_view({tag = "create_view", name = name, name_pos = 1, pos = 1, query = stmts[1].query})
  return setmetatable({planner = p, name = name}, Table)
end

-- Plans the Table's query into the job: its relation (stream, cols, updating).
local function plan_rel(t)
  local p = t.planner
  local mark = #p.env.nodes
  p.src = {name = p.where() .. ": SQL", text = "", dir = "."}
  local rel = p:scan(t.name, 1)
  local w = p.where()
  for i = mark + 1, #p.env.nodes do p.env.nodes[i].where = w end
  return rel
end

local SQL_TYPES = {integer = "BIGINT", number = "DOUBLE", string = "STRING", boolean = "BOOLEAN"}

--- Runs SQL statements (`;`-separated): CREATE TABLE / VIEW, SET, INSERT INTO (adds a
-- sink to the job), SELECT (prints its changelog, as `wmrun --sql` does). Relative paths
-- resolve against the current folder. The job runs at `env:execute()`.
-- @tparam string text the statements
-- @usage env:execute_sql([[
--   CREATE TABLE words (word STRING) WITH ('connector' = 'filesystem', 'path' = 'words.txt',
--     'format' = 'csv');
--   SELECT word, COUNT(*) AS n FROM words GROUP BY word;
-- ]])
-- env:execute()
function Env:execute_sql(text)
  local p = planner_of(self)
  guarded(function()
    for _, st in ipairs(parse(p, text, "execute_sql")) do
      local mark = #self.nodes
      p:statement(st)
      local w = p.where()
      for i = mark + 1, #self.nodes do self.nodes[i].where = w end
    end
  end)
end

--- A Table over a SELECT query (nothing runs until a sink is added and `env:execute()`).
-- @tparam string query a SELECT query over the tables and views of the env
-- @treturn Table
-- @usage env:sql_query("SELECT word, COUNT(*) AS n FROM words GROUP BY word"):print()
function Env:sql_query(query)
  local p = planner_of(self)
  return guarded(table_of_query, p, query, "sql_query")
end

--- A Table over a stream. `fields` names the columns, as "name" (STRING), "name:TYPE"
-- (a SQL type: INT, BIGINT, DOUBLE, BOOLEAN, STRING, TIMESTAMP(3); or integer, number,
-- string, boolean) or "name:rowtime": that column is the record's event timestamp and the
-- table's time attribute, and the stream's watermarks are the table's. Records are tables
-- with those fields (a record that is not a table fills the first column).
-- @tparam Stream stream a stream of this env
-- @tparam table fields the column list
-- @treturn Table
-- @usage env:from_data_stream(words, {"word", "rt:rowtime"})
function Env:from_data_stream(stream, fields)
  if getmetatable(stream) ~= Stream then error("from_data_stream: expected a stream, got " .. type(stream), 2) end
  if stream.env ~= self then
    error("from_data_stream: the stream belongs to another environment (made by another wm.env)", 2)
  end
  if type(fields) ~= "table" or #fields == 0 then
    error("from_data_stream: expected a list of columns such as {\"word\", \"rt:rowtime\"}", 2)
  end
  local p = planner_of(self)
  local expr = require("wm.sql.expr")
  local cols, names, rowtime = {}, {}, nil
  for i, f in ipairs(fields) do
    if type(f) ~= "string" then error("from_data_stream: column " .. i .. " is not a string", 2) end
    local name, ty = f:match("^%s*([%a_][%w_]*)%s*:%s*(.-)%s*$")
    name = name or f:match("^%s*([%a_][%w_]*)%s*$")
    if not name then error("from_data_stream: bad column '" .. f .. "' (name or name:type)", 2) end
    if names[name] then error("from_data_stream: column '" .. name .. "' is named twice", 2) end
    names[name] = true
    local col = {name = name}
    if ty and ty:lower() == "rowtime" then
      if rowtime then error("from_data_stream: only one rowtime column", 2) end
      rowtime, col.type, col.rowtime = name, "TIMESTAMP_LTZ", true
    elseif ty then
      local ok, t = pcall(expr.type_name, {name = SQL_TYPES[ty] or ty:upper():gsub("%(.*%)", "")}, p.src)
      if not ok then error("from_data_stream: column '" .. name .. "' has unknown type '" .. ty .. "'", 2) end
      col.type = t
    else
      col.type = "STRING"
    end
    cols[i] = col
  end
  local name = new_name(p)
  local first = cols[1].name
  local n = #cols
  local converted
  local function from_stream()
    if converted then return converted end
    local function row_of(r)
      local o = {}
      if type(r) ~= "table" then
        o[first] = r
      else
        for i = 1, n do local k = cols[i].name if k ~= rowtime then o[k] = r[k] end end
      end
      return o
    end
    if rowtime then
      converted = stream:key_by(function() return 0 end):process(function(r, ctx, out)
        local ts = ctx.timestamp
        if ts == nil then
          error("from_data_stream: the record has no event timestamp, but column '" .. rowtime
            .. "' is a rowtime: assign_timestamps_and_watermarks on the stream first", 0)
        end
        local o = row_of(r)
        o[rowtime] = ts
        out(o)
      end):name("from_data_stream (" .. rowtime .. " = event time)")
    else
      converted = stream:map(row_of):name("from_data_stream")
    end
    return converted
  end
  p.tables[name] = {name = name, cols = cols, byname = names, env = self, from_stream = from_stream,
                    rowtime = rowtime}
  return setmetatable({planner = p, name = name}, Table)
end

--- Registers a stream (with its `fields`, as for from_data_stream) or a Table under a
-- name that SQL can use.
-- @tparam string name the view's name (letters, digits, _)
-- @tparam Stream|Table what the stream or Table
-- @tparam[opt] table fields for a stream: its columns, as for from_data_stream
-- @usage env:create_temporary_view("words", words, {"word", "rt:rowtime"})
-- env:sql_query("SELECT word FROM words WHERE CHAR_LENGTH(word) > 3"):print()
function Env:create_temporary_view(name, what, fields)
  if type(name) ~= "string" or not name:match("^[%a_][%w_]*$") then
    error("create_temporary_view: expected a name (letters, digits, _), got " .. tostring(name), 2)
  end
  local p = planner_of(self)
  if p.tables[name] or p.views[name] then error("create_temporary_view: '" .. name .. "' already exists", 2) end
  local t
  if getmetatable(what) == Stream then
    if not fields then error("create_temporary_view: a stream needs its columns: {\"word\", \"rt:rowtime\"}", 2) end
    if what.env ~= self then
      error("create_temporary_view: the stream belongs to another environment (made by another wm.env)", 2)
    end
    local ok, r = pcall(Env.from_data_stream, self, what, fields)
    if not ok then -- raised at the job line, not here
      error((tostring(r):gsub("^[^:]*:%d+: ", ""):gsub("^from_data_stream:", "create_temporary_view:")), 2)
    end
    t = r
  elseif getmetatable(what) == Table then
    if what.planner ~= p then
      error("create_temporary_view: the Table belongs to another environment (made by another wm.env)", 2)
    end
    t = what
  else
    error("create_temporary_view: expected a stream or a Table, got " .. type(what), 2)
  end
  guarded(function()
    p.views[name] = {query = parse(p, "SELECT * FROM " .. t.name, "create_temporary_view")[1].query}
  end)
end

--- A scalar function written in Lua, usable in SQL as NAME(args): `fn` receives the
-- arguments (nil for NULL) and returns the value (nil for NULL).
-- @tparam string name the function's name in SQL (letters, digits, _)
-- @tparam function fn `fn(args...) -> value`
-- @tparam[opt] table opts `args` (the SQL types of the arguments, checked when a query is
--   planned; absent: any arguments), `returns` (the SQL type of the result, default "STRING")
-- @usage env:create_function("score", function(s) return #s * 2 end, {args = {"STRING"}, returns = "INT"})
function Env:create_function(name, fn, opts)
  local functions = require("wm.sql.functions")
  local def = functions.define("scalar", name, base.check_fn(fn, "create_function"), opts or {}, "create_function", 2)
  functions.add(planner_of(self).udfs, def, "create_function", 2)
end

--- An aggregate function written in Lua, usable in SQL as NAME(args) in GROUP BY queries and
-- windows (Flink's AggregateFunction): `spec` has `create_accumulator()`, `accumulate(acc,
-- args...)`, `get_value(acc)`, and optionally `retract(acc, args...)` (needed over an updating
-- input) and `merge(acc, other)` (needed by SESSION windows). `accumulate`, `retract` and
-- `merge` return the new accumulator, or nothing when they changed it in place.
-- @tparam string name the function's name in SQL
-- @tparam table spec the methods
-- @tparam[opt] table opts `args`, `returns` as for create_function
-- @usage env:create_aggregate_function("longest", {create_accumulator = function() return {} end,
--   accumulate = function(acc, s) if s and #s > #(acc.v or "") then acc.v = s end end,
--   get_value = function(acc) return acc.v end}, {args = {"STRING"}, returns = "STRING"})
function Env:create_aggregate_function(name, spec, opts)
  local functions = require("wm.sql.functions")
  local def = functions.define("aggregate", name, spec, opts, "create_aggregate_function", 2)
  functions.add(planner_of(self).udfs, def, "create_aggregate_function", 2)
end

-- Table API ---------------------------------------------------------------------------

Table.__tostring = function(t) return t.name end

local function derived(t, qtext, what)
  return guarded(table_of_query, t.planner, qtext, what)
end

--- Rows for which the SQL condition is TRUE.
-- @tparam string cond a SQL condition over the Table's columns
-- @treturn Table
-- @usage t:filter("age > 20")
function Table:filter(cond)
  if type(cond) ~= "string" then error("filter: expected a SQL condition string", 2) end
  return derived(self, "SELECT * FROM " .. self.name .. " WHERE " .. cond, "filter")
end

--- Rows for which the SQL condition is TRUE (the same as `filter`).
-- @function Table:where
-- @tparam string cond a SQL condition over the Table's columns
-- @treturn Table
-- @usage t:where("age > 20")
Table.where = Table.filter

--- A projection.
-- @tparam string list a SQL select list
-- @treturn Table
-- @usage t:select("id, name, age * 2 AS a2")
function Table:select(list)
  if type(list) ~= "string" then error("select: expected a SQL select list string", 2) end
  return derived(self, "SELECT " .. list .. " FROM " .. self.name, "select")
end

--- A non-windowed grouping (an updating result: see to_retract_stream).
-- @tparam string keys a SQL list of grouping columns
-- @treturn GroupedTable
-- @usage t:group_by("word"):select("word, COUNT(*) AS cnt")
function Table:group_by(keys)
  if type(keys) ~= "string" then error("group_by: expected a SQL key list string", 2) end
  return setmetatable({table = self, keys = keys}, GroupedTable)
end

--- A group window over the Table, to group by next.
-- @tparam Window w `wm.table.tumble/slide/session(...):on(time_column):as(alias)`
-- @treturn WindowedTable
-- @usage t:window(wm.table.tumble("5s"):on("rt"):as("w"))
--   :group_by("w, word"):select("word, w.start, w.end, COUNT(*) AS n")
function Table:window(w)
  if getmetatable(w) ~= Window or not w.time or not w.alias then
    error("window: expected wm.table.tumble/slide/session(...):on(\"rt\"):as(\"w\")", 2)
  end
  return setmetatable({table = self, window = w}, WindowedTable)
end

--- Groups the windowed Table by its window alias and other keys.
-- @tparam string keys a SQL list of grouping columns, with the window's alias
-- @treturn GroupedTable
-- @usage t:window(wm.table.tumble("5s"):on("rt"):as("w")):group_by("w, word")
function WindowedTable:group_by(keys)
  if type(keys) ~= "string" then error("group_by: expected a SQL key list string", 2) end
  return setmetatable({table = self.table, keys = keys, window = self.window}, GroupedTable)
end

-- Rewrites `w.start`, `w.end`, `w.rowtime` and the key `w` into the group window's SQL.
local function window_sql(w, text, is_keys)
  local a = w.alias:gsub("%p", "%%%0")
  local props = {start = "_START", ["end"] = "_END", rowtime = "_ROWTIME"}
  text = text:gsub("%f[%w_]" .. a .. "%.(%a+)%f[^%w_]", function(prop)
    local suffix = props[prop:lower()]
    if not suffix then return nil end
    return w.fn .. suffix .. "(" .. w.args .. ")"
  end)
  if is_keys then
    local found = false
    text = text:gsub("%f[%w_]" .. a .. "%f[^%w_%.]", function() found = true return w.fn .. "(" .. w.args .. ")" end)
    if not found then return nil end
  end
  return text
end

--- The aggregation of a grouped table (with a window: `w.start`, `w.end`, `w.rowtime`).
-- @tparam string list a SQL select list of keys and aggregates
-- @treturn Table
-- @usage t:group_by("word"):select("word, COUNT(*) AS cnt")
function GroupedTable:select(list)
  if type(list) ~= "string" then error("select: expected a SQL select list string", 2) end
  local keys = self.keys
  if self.window then
    local k = window_sql(self.window, keys, true)
    if not k then
      error("group_by: a windowed table must be grouped by its window alias '" .. self.window.alias .. "'", 2)
    end
    keys, list = k, window_sql(self.window, list, false)
  end
  return derived(self.table, "SELECT " .. list .. " FROM " .. self.table.name .. " GROUP BY " .. keys, "select")
end

--- Prints the Table's changelog (`+I[...]`, `-U[...]`, ...) when the job runs.
-- @tparam[opt] string prefix as for Stream:print
-- @treturn Sink
-- @usage env:sql_query("SELECT word, COUNT(*) AS n FROM words GROUP BY word"):print("counts")
function Table:print(prefix)
  local planner = require("wm.sql.planner")
  local rel = plan_rel(self)
  self.planner.queries = self.planner.queries + 1
  return planner.lower.print_changelog(rel, prefix)
end

--- The rows as a stream of Lua tables (column name = value, NULL absent), with their
-- timestamps. Only for append-only queries: an updating one (a GROUP BY without a
-- window) is an error that says to use to_retract_stream.
-- @treturn Stream
-- @usage t:filter("vc > 0"):to_append_stream():map(function(r) return r.id end):print()
function Table:to_append_stream()
  local rel = plan_rel(self)
  if rel.updating then
    error("to_append_stream: the query of Table " .. self.name .. " produces updates (a GROUP BY without a "
      .. "window retracts its earlier results): use to_retract_stream()", 2)
  end
  return rel.stream
end

--- The changelog as a stream of `{true, row}` (insert, update after) and `{false, row}`
-- (retraction: update before, delete).
-- @treturn Stream
-- @usage t:group_by("word"):select("word, COUNT(*) AS n"):to_retract_stream():print()
function Table:to_retract_stream()
  local rel = plan_rel(self)
  if rel.updating then
    return rel.stream:map(function(e) return {e.k == "+I" or e.k == "+U", e.r} end):name("to_retract_stream")
  end
  return rel.stream:map(function(r) return {true, r} end):name("to_retract_stream")
end

--- Writes the rows into a table declared with CREATE TABLE (a sink, when the job runs).
-- @tparam string name the sink table
-- @usage env:execute_sql("CREATE TABLE out (word STRING, n BIGINT) WITH ('connector' = 'print')")
-- counts:execute_insert("out")
function Table:execute_insert(name)
  if type(name) ~= "string" then error("execute_insert: expected a table name", 2) end
  local p = self.planner
  guarded(function()
    local stmts = parse(p, "INSERT INTO " .. name .. " SELECT * FROM " .. self.name, "execute_insert")
    local mark = #p.env.nodes
    p:statement(stmts[1])
    local w = p.where()
    for i = mark + 1, #p.env.nodes do p.env.nodes[i].where = w end
  end)
end

--- The column names and types: `{{name = "word", type = "STRING"}, ...}` (and
-- `rowtime = true` on the time attribute).
-- @treturn table
-- @usage for _, c in ipairs(t:columns()) do print(c.name, c.type) end
function Table:columns()
  local rel = guarded(function()
    local p = self.planner
    local saved = p.env
    p.env = base.env{}
    local ok, r = pcall(p.scan, p, self.name, 1)
    p.env = saved
    if not ok then error(r, 0) end
    return r
  end)
  local out = {}
  for i, col in ipairs(rel.cols) do out[i] = {name = col.name, type = col.type, rowtime = col.rowtime} end
  return out
end

-- wm.table: group windows for the Table API ---------------------------------------------
local function interval(ms) return "INTERVAL '" .. ms .. "' MILLISECOND" end
local function window(fn, sizes)
  return setmetatable({fn = fn, sizes = sizes}, Window)
end
--- The time column of the window.
-- @tparam string col a time attribute of the Table
-- @treturn Window this window
-- @usage wm.table.tumble("5s"):on("rt")
function Window:on(col)
  if type(col) ~= "string" then error("on: expected a column name", 2) end
  self.time = col
  local parts = {col}
  for _, ms in ipairs(self.sizes) do parts[#parts + 1] = interval(ms) end
  self.args = table.concat(parts, ", ")
  return self
end
--- The window's alias in group_by and select.
-- @tparam string alias a name (letters, digits, _)
-- @treturn Window this window
-- @usage wm.table.tumble("5s"):on("rt"):as("w")
function Window:as(alias)
  if type(alias) ~= "string" or not alias:match("^[%a_][%w_]*$") then error("as: expected an alias", 2) end
  self.alias = alias
  return self
end
--- The slide of a sliding window (default: its size).
-- @tparam integer|string d a duration
-- @treturn Window this window
-- @usage wm.table.slide("10s"):every("5s"):on("rt"):as("w")
function Window:every(d)
  if self.fn ~= "HOP" then error("every: only for wm.table.slide", 2) end
  self.sizes = {duration.ms(d, "every", 2), self.sizes[1]}
  return self
end
M.table = {
  --- A tumbling group window of the given size (`wm.table.tumble`).
  -- @function table.tumble
  -- @tparam integer|string size a duration
  -- @treturn Window
  -- @usage t:window(wm.table.tumble("5s"):on("rt"):as("w"))
  tumble = function(size) return window("TUMBLE", {duration.ms(size, "tumble", 2)}) end,
  --- A sliding group window of the given size (`wm.table.slide`); `:every(slide)` sets the slide.
  -- @function table.slide
  -- @tparam integer|string size a duration
  -- @treturn Window
  -- @usage t:window(wm.table.slide("10s"):every("5s"):on("rt"):as("w"))
  slide = function(size)
    local ms = duration.ms(size, "slide", 2)
    return window("HOP", {ms, ms})
  end,
  --- A session group window with the given gap (`wm.table.session`).
  -- @function table.session
  -- @tparam integer|string gap a duration
  -- @treturn Window
  -- @usage t:window(wm.table.session("30s"):on("rt"):as("s"))
  session = function(gap) return window("SESSION", {duration.ms(gap, "session", 2)}) end,
  Table = Table,
}

return M
