--- DDL: CREATE TABLE, CREATE VIEW, SET.
-- @module wm.sql.plan.ddl
local wm = require("wm.datastream") -- not the facade `wm`, which loads the Table API
local expr = require("wm.sql.expr")
local connectors = require("wm.sql.connectors")
local functions = require("wm.sql.functions")
local Planner = require("wm.sql.plan.base").Planner

local function props_of(self, list)
  local p, pos = {}, {}
  for _, kv in ipairs(list or {}) do
    if p[kv.key] ~= nil then self:err(kv.pos, "option '%s' is given twice", kv.key) end
    p[kv.key], pos[kv.key] = kv.value, kv.pos
  end
  return p, pos
end

-- The fields of a ROW<...> column: a list of {name, type} and by name (scalar types only).
local function row_fields(self, ty)
  local fields = {}
  for _, f in ipairs(ty.fields) do
    if f.type.name == "ROW" then self:err(f.type.pos, "not supported yet: a ROW inside a ROW") end
    if fields[f.name] then self:err(f.pos, "field '%s' is declared twice in the ROW", f.name) end
    local fd = {name = f.name, type = expr.type_name(f.type, self.src)}
    fields[#fields + 1] = fd
    fields[f.name] = fd
  end
  return fields
end

function Planner:create_table(st)
  if self.tables[st.name] or self.views[st.name] then
    if st.if_not_exists then return end
    self:err(st.name_pos, "table '%s' already exists", st.name)
  end
  local t = {name = st.name, pos = st.pos, cols = {}, byname = {}, physical = {}, computed = {}}
  for _, el in ipairs(st.elems) do
    if el.tag == "column" or el.tag == "computed" then
      if t.byname[el.name] then self:err(el.pos, "column '%s' is declared twice", el.name) end
      local c = {name = el.name, pos = el.pos}
      if el.tag == "column" and el.type.name == "ROW" then
        c.type, c.fields = "ROW", row_fields(self, el.type)
        c.not_null = el.not_null
        t.physical[#t.physical + 1] = c
      elseif el.tag == "column" then
        c.type = expr.type_name(el.type, self.src)
        c.not_null = el.not_null
        t.physical[#t.physical + 1] = c
      else
        c.expr = el.expr
        t.computed[#t.computed + 1] = c
        -- `pt AS PROCTIME()`: a processing-time attribute (a lookup join's AS OF)
        if el.expr.tag == "call" and el.expr.name == "PROCTIME" then c.proctime = true end
      end
      t.cols[#t.cols + 1] = c
      t.byname[el.name] = c
    elseif el.tag == "watermark" then
      if t.watermark then self:err(el.pos, "a table has at most one WATERMARK") end
      t.watermark = el
    elseif el.tag == "pkey" then -- (a versioned table's key: wm.sql.plan.temporal_join)
      t.pkey, t.pkey_pos = {table.unpack(el)}, el.pos
    end
  end
  -- type the computed columns (they see the physical ones and earlier computed ones)
  for _, c in ipairs(t.computed) do
    local scope = self:row_scope(t.cols, c.expr)
    scope.proctime_ok = true -- `pt AS PROCTIME()` (a lookup join's AS OF)
    local _, ty = expr.compile(c.expr, scope)
    c.type = ty
  end
  if t.watermark then
    local w = t.watermark
    local c = t.byname[w.column]
    if not c then self:err(w.pos, "WATERMARK FOR unknown column '%s'", w.column) end
    if c.type ~= "TIMESTAMP" and c.type ~= "TIMESTAMP_LTZ" then
      self:err(w.pos, "the rowtime column '%s' must be TIMESTAMP(3) or TIMESTAMP_LTZ(3), got %s (hint: a computed "
        .. "column %s_ts AS TO_TIMESTAMP_LTZ(%s, 3))", w.column, expr.show(c.type), w.column, w.column)
    end
    local _, ty = expr.compile(w.expr, self:row_scope(t.cols, w.expr))
    if ty ~= "TIMESTAMP" and ty ~= "TIMESTAMP_LTZ" then
      self:err(w.expr.pos, "the WATERMARK expression must give a timestamp, got %s", expr.show(ty))
    end
    c.rowtime = true
    t.rowtime = w.column
  end
  local props, ppos = props_of(self, st.with)
  if not st.with then self:err(st.pos, "CREATE TABLE needs WITH ('connector' = ...)") end
  t.props, t.props_pos = props, ppos
  if st.partitioned then
    t.partitioned = {pos = st.partitioned.pos}
    for i, c in ipairs(st.partitioned) do t.partitioned[i] = {pos = c[1], name = c[2]} end
  end
  connectors.check(self, t)
  self.tables[st.name] = t
end

--- CREATE FUNCTION name AS 'module.name' LANGUAGE LUA: `require(module)[name]` (the script's
-- folder first on the search path) is a function (a scalar function of any arguments giving
-- a STRING), or a table: `{eval = fn, args = {...}, returns = "T"}` (scalar),
-- `{eval = fn, args = {...}, returns = {"name TYPE", ...}}` (table function: eval(emit, ...)) or
-- `{create_accumulator = ..., accumulate = ..., get_value = ..., args = ..., returns = ...}`.
function Planner:create_function(st)
  local upper = st.name:upper()
  if rawget(self.udfs, upper) then
    if st.if_not_exists then return end
    self:err(st.name_pos, "function '%s' already exists", st.name)
  end
  local v, why = functions.load(st.class, self.src.dir)
  if v == nil then self:err(st.class_pos, "CREATE FUNCTION %s: cannot load '%s': %s", st.name, st.class, why) end
  local kind = "scalar"
  if type(v) == "table" and v.create_accumulator ~= nil then kind = "aggregate"
  elseif type(v) == "table" and type(v.returns) == "table" then kind = "table" end
  local ok, def = pcall(functions.define, kind, st.name, v, nil, "CREATE FUNCTION " .. st.name)
  if ok then ok, def = pcall(functions.add, self.udfs, def, "CREATE FUNCTION " .. st.name) end
  if not ok then self:err(st.class_pos, "%s", (tostring(def):gsub("^[^:\n]*%.lua:%d+: ", ""))) end
end

function Planner:create_view(st)
  if self.tables[st.name] or self.views[st.name] then
    if st.if_not_exists then return end
    self:err(st.name_pos, "table or view '%s' already exists", st.name)
  end
  -- plan it once into a scratch environment: errors show at the CREATE VIEW. The views it
  -- reads stand in by their schema (`checking`), so a chain of views plans in linear time.
  local saved, saved_checking = self.env, self.checking
  self.env, self.checking = self:scratch_env(), true
  self.view_plans = self.view_plans + 1
  local ok, e = pcall(self.plan_query, self, st.query, true)
  self.env, self.checking = saved, saved_checking
  if not ok then error(e, 0) end
  if st.columns and #st.columns ~= #e.cols then
    self:err(st.name_pos, "view '%s' names %d columns but its query gives %d", st.name, #st.columns, #e.cols)
  end
  local schema = {}
  for i, c in ipairs(e.cols) do
    schema[i] = {name = st.columns and st.columns[i] or c.name, type = c.type, rowtime = c.rowtime,
                 proctime = c.proctime}
  end
  self.views[st.name] = {query = st.query, columns = st.columns, schema = schema, updating = e.updating}
end

-- The SET keys wmrun implements (docs/sql.md, "Options"); any other key is an error, so that
-- a setting never looks applied when it is not.
local SET_KEYS = {"execution.runtime-mode", "parallelism.default", "pipeline.auto-watermark-interval",
  "table.exec.source.idle-timeout", "table.local-time-zone",
  "table.exec.state.ttl", "table.exec.mini-batch.enabled", "table.exec.mini-batch.allow-latency",
  "table.exec.mini-batch.size"}
local SET_KNOWN = {}
for _, k in ipairs(SET_KEYS) do SET_KNOWN[k] = true end

local function check_key(self, key, pos, what)
  if SET_KNOWN[key] then return end
  self:err(pos, "%s '%s': wmrun does not implement this option (it implements '%s')", what, key,
    table.concat(SET_KEYS, "', '"))
end

--- A duration option ('1 s', '500 ms', '1 min', '0'): its milliseconds, 0 or more.
function Planner:duration_option(key, value, pos)
  local ms = wm.core.duration((value:gsub("^%s*(%d+)%s*$", "%1ms")))
  if not ms or ms < 0 then
    self:err(pos, "bad duration '%s' for '%s' (e.g. '1 s', '500 ms', '1 min'; '0' turns it off)", value, key)
  end
  return ms
end

function Planner:set(st)
  local s = self.settings
  s._pos = s._pos or {}
  if not st.key then return end
  check_key(self, st.key, st.key_pos, "SET")
  if self.env and (st.key == "pipeline.auto-watermark-interval" or st.key == "parallelism.default") then
    self:err(st.key_pos, "SET '%s' must come before the first query", st.key)
  end
  if st.key == "table.local-time-zone" and st.value ~= "UTC" then
    self:err(st.key_pos, "only 'UTC' is supported for table.local-time-zone")
  end
  if st.key == "execution.runtime-mode" and st.value:lower() ~= "streaming" then
    self:err(st.key_pos, "only 'streaming' is supported for execution.runtime-mode (got '%s')", st.value)
  end
  if st.key == "table.exec.source.idle-timeout" then self:duration_option(st.key, st.value, st.key_pos) end
  if st.key == "table.exec.state.ttl" then self:duration_option(st.key, st.value, st.key_pos) end
  if st.key == "table.exec.mini-batch.allow-latency" then self:duration_option(st.key, st.value, st.key_pos) end
  if st.key == "table.exec.mini-batch.enabled" and not ({["true"] = 1, ["false"] = 1})[st.value:lower()] then
    self:err(st.key_pos, "'%s' is 'true' or 'false' (got '%s')", st.key, st.value)
  end
  if st.key == "table.exec.mini-batch.size" and not st.value:match("^%s*%-?%d+%s*$") then
    self:err(st.key_pos, "'%s' is a number of rows (got '%s')", st.key, st.value)
  end
  s[st.key] = st.value
  s._pos[st.key] = st.key_pos
end

--- `table.exec.state.ttl` as set so far: its milliseconds, or nil when it is not set or '0'
-- (the state of regular joins, GROUP BY without a window, deduplication and Top-N expires).
function Planner:state_ttl()
  local v = self.settings["table.exec.state.ttl"]
  if not v then return nil end
  local ms = self:duration_option("table.exec.state.ttl", v, self.settings._pos["table.exec.state.ttl"])
  if ms == 0 then return nil end
  return ms
end

--- The mini-batch as SET so far (`table.exec.mini-batch.*`, Flink's option names and checks):
-- nil when it is off, else {size = rows, latency = ms}. An unwindowed GROUP BY whose aggregates
-- run in C then emits a group's change once per batch instead of after every row
-- (core/ops/wm_keyedop.h, minibatch_size); the other operators are unchanged.
function Planner:minibatch()
  local s = self.settings
  local on = s["table.exec.mini-batch.enabled"]
  if not on or on:lower() ~= "true" then return nil end
  local pos = s._pos["table.exec.mini-batch.enabled"]
  local lat = s["table.exec.mini-batch.allow-latency"]
  local ms = lat and self:duration_option("table.exec.mini-batch.allow-latency", lat,
                                          s._pos["table.exec.mini-batch.allow-latency"]) or 0
  if ms <= 0 then
    self:err(pos, "MiniBatch Latency must be greater than 0 ms: SET 'table.exec.mini-batch.allow-latency' "
                  .. "(e.g. '2 s') with 'table.exec.mini-batch.enabled'")
  end
  local size = tonumber(s["table.exec.mini-batch.size"] or "-1")
  if size <= 0 then
    self:err(pos, "'table.exec.mini-batch.size' must be > 0 with 'table.exec.mini-batch.enabled' "
                  .. "(got %s; e.g. '5000')", s["table.exec.mini-batch.size"] or "no value")
  end
  return {size = math.min(size, 4294967295), latency = ms}
end

--- RESET 'key' (a key wmrun implements) or RESET (all).
function Planner:reset(st)
  if not st.key then
    self.settings = {}
    return
  end
  check_key(self, st.key, st.key_pos or st.pos, "RESET")
  self.settings[st.key] = nil
end
