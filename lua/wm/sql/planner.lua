--- The SQL planner: turns parsed statements into the same plan the Lua DSL builds
-- (read_lines, flat_map, assign_timestamps_and_watermarks, key_by, window, print, sink), so a
-- SQL job runs on the same C operators as a Lua job.
--
-- A relation (`rel`) is what a FROM clause or a query gives: a stream plus its columns
-- `{name, type, rowtime}`. Rows are Lua tables keyed by column name (NULL = absent).
-- An append-only relation carries rows; an updating one (after a non-windowed GROUP BY)
-- carries changelog entries `{k = "+I"|"-U"|"+U"|"-D", r = row}`.
--
-- Every translation to DSL calls lives in `lower` (below), so that switching a piece to a
-- faster or newer operator (parse_csv, session windows, aggregate with a window-aware
-- process function) is a change in one place.
-- @module wm.sql.planner
local wm = require("wm.datastream") -- not the facade `wm`, which loads the Table API
local errors = require("wm.sql.errors")
local expr = require("wm.sql.expr")
local values = require("wm.sql.values")
local aggs = require("wm.sql.aggs")
local connectors = require("wm.sql.connectors")

local M = {}
local raise = errors.raise

local NULL_KEY = "\0<NULL>"   -- stands for a NULL group key (keys must be scalars)

---------------------------------------------------------------------------------------------
-- Lowering: the DSL calls the planner makes, in one place

local lower = {}
M.lower = lower

--- Group key selector: a scalar for one key, a list for several, a constant for none.
function lower.key_fn(keyfns)
  local n = #keyfns
  if n == 0 then return function() return 0 end end
  if n == 1 then
    local f = keyfns[1]
    return function(r) local v = f(r) if v == nil then return NULL_KEY end return v end
  end
  return function(r)
    local t = {}
    for i = 1, n do
      local v = keyfns[i](r)
      if v == nil then v = NULL_KEY end
      t[i] = v
    end
    return t
  end
end

--- A window accumulator over rows: `{n, ts, min_ts, max_ts, keys, st}`.
local function window_acc(spec)
  local list, keyfns, argfns, rt = spec.aggs, spec.keyfns, spec.argfns, spec.rowtime
  local nk, na = #keyfns, #list
  local function create()
    local st = {}
    for i = 1, na do st[i] = list[i].init() end
    return {n = 0, st = st}
  end
  local function add(acc, r)
    local ts = r[rt]
    if acc.n == 0 then
      local keys = {}
      for i = 1, nk do keys[i] = keyfns[i](r) end
      acc.keys, acc.ts, acc.min_ts, acc.max_ts = keys, ts, ts, ts
    else
      if ts < acc.min_ts then acc.min_ts = ts end
      if ts > acc.max_ts then acc.max_ts = ts end
    end
    acc.n = acc.n + 1
    local st = acc.st
    for i = 1, na do st[i] = list[i].add(st[i], argfns[i](r)) end
    return acc
  end
  local function merge(a, b)
    if a.n == 0 then return b end
    if b.n == 0 then return a end
    if b.min_ts < a.min_ts then a.min_ts, a.keys = b.min_ts, b.keys end
    if b.max_ts > a.max_ts then a.max_ts = b.max_ts end
    a.n = a.n + b.n
    for i = 1, na do a.st[i] = list[i].merge(a.st[i], b.st[i]) end
    return a
  end
  local function results(acc)
    local a = {}
    for i = 1, na do a[i] = list[i].result(acc.st[i]) end
    return a
  end
  return create, add, merge, results
end

--- Windowed aggregation (group windows and window TVFs).
-- spec: kind ("tumble", "hop", "session", "cumulate"), size, slide, gap, rowtime (column),
-- keyfns, aggs, argfns, out(keys, aggs, start, stop) -> row or false (HAVING)
-- @return the stream of result rows
-- The window assigner of a spec (hop and cumulate both on sliding windows).
local function assigner_of(spec)
  if spec.kind == "tumble" then return wm.windows.tumbling(spec.size) end
  if spec.kind == "session" then return wm.windows.session(spec.gap) end
  return wm.windows.sliding(spec.size, spec.slide)
end

-- The keyed stream of a windowed aggregation: key_by("field") / key_by({fields}) in C when
-- the keys allow it, else a Lua key function.
local function keyed_of(stream, spec)
  local kf = spec.key_fields
  if kf then return stream:key_by(#kf == 1 and kf[1] or kf) end
  return stream:key_by(lower.key_fn(spec.keyfns))
end

-- A windowed aggregation computed by a C built-in (`count()`, `sum/min/max(field)`), with a
-- Lua step per result to shape the row (and apply HAVING).
local function builtin_window_aggregate(stream, spec)
  local ws = keyed_of(stream, spec):window(assigner_of(spec))
  local b, out, nk = spec.builtin, spec.out, #spec.keyfns
  local shape
  if b.agg == "count" then
    local res = ws:count()
    -- the count record's key: the key_by key (a scalar for one key, a list for several)
    local keys_of
    if nk == 0 then
      keys_of = function() return {} end
    elseif nk == 1 then
      keys_of = function(k) if k == NULL_KEY then k = nil end return {k} end
    else
      keys_of = function(k)
        local t = {}
        for i = 1, nk do local v = k[i] if v == NULL_KEY then v = nil end t[i] = v end
        return t
      end
    end
    shape = function(r) return out(keys_of(r.key), {r.count}, r.start, r.stop) end
    stream = res
  else
    local res = ws[b.agg](ws, b.field)
    local kf, field, rt, size = spec.key_fields, b.field, spec.rowtime, spec.size
    shape = function(r)
      local keys = {}
      for i = 1, nk do keys[i] = r[kf[i]] end
      local ts = r[rt]
      local start = ts - ts % size
      return out(keys, {r[field]}, start, start + size)
    end
    stream = res
  end
  local shaped
  if spec.having then
    shaped = stream:flat_map(function(r, emit)
      local row = shape(r)
      if row then emit(row) end
    end):name("shape rows, HAVING")
  else
    shaped = stream:map(shape):name("shape rows")
  end
  -- print_changelog may fuse the shaping and the formatting into one Lua step
  shaped.sql_shape = {input = stream, fn = shape, having = spec.having}
  return shaped
end

function lower.window_aggregate(stream, spec)
  if spec.builtin then return builtin_window_aggregate(stream, spec) end
  local keyed = keyed_of(stream, spec)
  local create, add, merge, results = window_acc(spec)
  local out = spec.out
  local result
  if spec.kind == "tumble" then
    local size = spec.size
    local s = keyed:window(wm.windows.tumbling(size)):aggregate({
      create = create, add = add,
      result = function(acc)
        local start = acc.ts - acc.ts % size
        return out(acc.keys, results(acc), start, start + size)
      end,
    })
    result = s
  elseif spec.kind == "session" then
    local gap = spec.gap
    result = keyed:window(wm.windows.session(gap)):aggregate({
      create = create, add = add, merge = merge,
      result = function(acc) return out(acc.keys, results(acc), acc.min_ts, acc.max_ts + gap) end,
    })
  else
    -- hop and cumulate need the window's bounds at firing: a process function over the
    -- window's rows (aggregate's result has no window). A cumulative window [s, e) is the
    -- part of the sliding window [e - size, e) from s = the size-aligned start before e.
    local size, slide = spec.size, spec.slide
    local cumulate = spec.kind == "cumulate"
    local rt = spec.rowtime
    result = keyed:window(wm.windows.sliding(size, slide)):process(function(_, ctx, records, emit)
      local w = ctx.window
      local start = w.start
      if cumulate then start = ((w.stop - 1) // size) * size end
      local acc = create()
      for _, r in ipairs(records) do
        if not cumulate or r[rt] >= start then acc = add(acc, r) end
      end
      if acc.n > 0 then
        local row = out(acc.keys, results(acc), start, w.stop)
        if row then emit(row) end
      end
    end)
    return result
  end
  if spec.having then result = result:filter(function(r) return r ~= false end) end
  return result
end

--- Evaluates `fn(row)` where it can see the watermark (for CURRENT_WATERMARK): a keyed
-- process function (one key: the watermark is the operator's, semantics.md §3) sets
-- `R.wm.now` before each call. As a filter (`is_filter`) it keeps the rows for which fn
-- gives true, else it emits fn's result. Rows keep their timestamps.
function lower.with_watermark(stream, fn, is_filter)
  local box = values.runtime.wm
  local MIN = math.mininteger
  return stream:key_by(function() return 0 end):process(function(r, ctx, out)
    local w = ctx.timer_service:current_watermark()
    if w == MIN then w = nil end
    box.now = w
    local ok, v = pcall(fn, r)
    box.now = nil
    if not ok then error(v, 0) end
    if is_filter then
      if v then out(r) end
    else
      out(v)
    end
  end):name(is_filter and "filter (CURRENT_WATERMARK)" or "map (CURRENT_WATERMARK)")
end

--- Non-windowed aggregation: a keyed rolling operator that emits a changelog. Written as a
-- flat_map holding a Lua table of state per key (one instance: the whole stream is keyed
-- inside it). Rules as Flink's GroupAggFunction: +I for a new key, -U/+U when the result
-- changes (nothing when it does not), -D when the last row of a key is retracted.
-- spec: keyfns, aggs, argfns, updating_input, out(keys, aggs) -> row or false
function lower.group_aggregate(stream, spec)
  local keyfns, list, argfns, out = spec.keyfns, spec.aggs, spec.argfns, spec.out
  local nk, na = #keyfns, #list
  local state = {}
  local updating = spec.updating_input
  local function keystr(keys)
    if nk == 1 then
      local v = keys[1]
      return v == nil and NULL_KEY or (type(v) .. ":" .. tostring(v))
    end
    local t = {}
    for i = 1, nk do
      local v = keys[i]
      t[i] = v == nil and NULL_KEY or (type(v) .. ":" .. tostring(v))
    end
    return table.concat(t, "\1")
  end
  local function emit_row(emit, kind, keys, a)
    local row = out(keys, a)
    if row then emit({k = kind, r = row}) end
  end
  local s = stream:flat_map(function(e, emit)
    local r, sign = e, 1
    if updating then
      r = e.r
      if e.k == "-U" or e.k == "-D" then sign = -1 end
    end
    local keys = {}
    for i = 1, nk do keys[i] = keyfns[i](r) end
    local ks = keystr(keys)
    local g = state[ks]
    if not g then
      if sign < 0 then return end -- retraction of a row never seen: nothing to undo
      local st = {}
      for i = 1, na do st[i] = list[i].init() end
      g = {keys = keys, st = st, rows = 0}
      state[ks] = g
    end
    g.rows = g.rows + sign
    local st = g.st
    for i = 1, na do
      if sign > 0 then st[i] = list[i].add(st[i], argfns[i](r))
      else st[i] = list[i].retract(st[i], argfns[i](r)) end
    end
    if g.rows <= 0 then
      if g.prev then emit_row(emit, "-D", g.keys, g.prev) end
      state[ks] = nil
      return
    end
    local a = {}
    for i = 1, na do a[i] = list[i].result(st[i]) end
    local prev = g.prev
    if prev == nil then
      emit_row(emit, "+I", g.keys, a)
    else
      local same = true
      for i = 1, na do if prev[i] ~= a[i] then same = false break end end
      if same then return end
      emit_row(emit, "-U", g.keys, prev)
      emit_row(emit, "+U", g.keys, a)
    end
    g.prev = a
  end)
  s:set_parallelism(1)
  return s
end

---------------------------------------------------------------------------------------------
-- Planning

local Planner = {}
Planner.__index = Planner

--- A planner over a script.
-- @tparam table src {name = "job.sql", text = script, dir = folder for relative paths}
-- @tparam[opt] table opts {env = an existing wm env}
function M.new(src, opts)
  opts = opts or {}
  return setmetatable({src = src, tables = {}, views = {}, settings = {}, env = opts.env,
                       queries = 0, functions = opts.functions or {}}, Planner)
end

function Planner:err(pos, fmt, ...) raise(self.src, pos, fmt, ...) end

local function lineof(self, pos)
  local l = errors.line_col(self.src.text, pos)
  return self.src.name .. ":" .. l
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

-- Gives the nodes created since `mark` the script position `pos`, so that run-time errors
-- and metrics name the SQL line.
function Planner:tag_nodes(mark, pos)
  local env = self.env
  if not env then return end
  local w = lineof(self, pos)
  for i = mark + 1, #env.nodes do env.nodes[i].where = w end
end

---------------------------------------------------------------------------------------------
-- DDL

local function props_of(self, list)
  local p, pos = {}, {}
  for _, kv in ipairs(list or {}) do
    if p[kv.key] ~= nil then self:err(kv.pos, "option '%s' is given twice", kv.key) end
    p[kv.key], pos[kv.key] = kv.value, kv.pos
  end
  return p, pos
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
      if el.tag == "column" then
        c.type = expr.type_name(el.type, self.src)
        c.not_null = el.not_null
        t.physical[#t.physical + 1] = c
      else
        c.expr = el.expr
        t.computed[#t.computed + 1] = c
      end
      t.cols[#t.cols + 1] = c
      t.byname[el.name] = c
    elseif el.tag == "watermark" then
      if t.watermark then self:err(el.pos, "a table has at most one WATERMARK") end
      t.watermark = el
    end
  end
  -- type the computed columns (they see the physical ones and earlier computed ones)
  for _, c in ipairs(t.computed) do
    local _, ty = expr.compile(c.expr, self:row_scope(t.cols, c.expr))
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
  connectors.check(self, t)
  self.tables[st.name] = t
end

function Planner:create_view(st)
  if self.tables[st.name] or self.views[st.name] then
    if st.if_not_exists then return end
    self:err(st.name_pos, "table or view '%s' already exists", st.name)
  end
  -- plan it once into a scratch environment: errors show at the CREATE VIEW
  local saved = self.env
  self.env = wm.env{}
  local ok, e = pcall(self.plan_query, self, st.query)
  self.env = saved
  if not ok then error(e, 0) end
  if st.columns and #st.columns ~= #e.cols then
    self:err(st.name_pos, "view '%s' names %d columns but its query gives %d", st.name, #st.columns, #e.cols)
  end
  self.views[st.name] = {query = st.query, columns = st.columns}
end

function Planner:set(st)
  local s = self.settings
  s._pos = s._pos or {}
  if not st.key then return end
  if self.env and (st.key == "pipeline.auto-watermark-interval" or st.key == "parallelism.default") then
    self:err(st.key_pos, "SET '%s' must come before the first query", st.key)
  end
  if st.key == "table.local-time-zone" and st.value ~= "UTC" then
    self:err(st.key_pos, "only 'UTC' is supported for table.local-time-zone")
  end
  s[st.key] = st.value
  s._pos[st.key] = st.key_pos
end

---------------------------------------------------------------------------------------------
-- Scopes: what column names mean while compiling an expression

-- A scope over rows `r` with the given columns.
function Planner:row_scope(cols, _, alias_names)
  local by = {}
  for _, c in ipairs(cols) do by[c.name] = c end
  local src = self.src
  local scope
  scope = {
    src = src,
    functions = self.functions,
    -- CURRENT_WATERMARK(rt): the watermark of the operator evaluating it (nil before the
    -- first one); the planner then evaluates the expression in an operator that knows it
    current_watermark = function(e)
      local a = e.args[1]
      if #e.args ~= 1 or a.tag ~= "col" then
        raise(src, e.pos, "CURRENT_WATERMARK takes one argument, a time attribute column")
      end
      local c = by[a.name]
      if not c then raise(src, a.pos, "unknown column '%s'", a.name) end
      if not c.rowtime then
        raise(src, a.pos, "CURRENT_WATERMARK needs a time attribute (a rowtime column declared with WATERMARK "
          .. "FOR ...), '%s' is not one", a.name)
      end
      scope.uses_watermark = true
      return "R_cur_wm()", c.type
    end,
    column = function(n)
      if n.qual and alias_names and not alias_names[n.qual] then
        raise(src, n.pos, "unknown table '%s' (in %s.%s)", n.qual, n.qual, n.name)
      end
      local c = by[n.name]
      if not c then
        local hint = ""
        for name in pairs(by) do
          if name:lower() == n.name:lower() then hint = " (did you mean '" .. name .. "'?)" end
        end
        raise(src, n.pos, "unknown column '%s'%s", n.name, hint)
      end
      if c.type == nil then raise(src, n.pos, "column '%s' is used before it is defined", n.name) end
      return string.format("r[%q]", c.field or c.name), c.type
    end,
  }
  return scope
end

local function compile_fn(self, e, scope, pos)
  local s, t = expr.compile(e, scope)
  return expr.load("function(r) return " .. s .. " end", lineof(self, pos or e.pos)), t
end

---------------------------------------------------------------------------------------------
-- FROM

local function rel_of(stream, cols, updating)
  return {stream = stream, cols = cols, updating = updating}
end

function Planner:scan(name, pos)
  local t = self.tables[name]
  if t and t.from_stream then
    -- a stream registered from Lua (env:from_data_stream); while a view is checked in a
    -- scratch environment, an empty stream of that environment stands in for it
    local env = self:get_env(pos)
    local stream = env == t.env and t.from_stream() or env:from_elements()
    local cols = {}
    for i, c in ipairs(t.cols) do cols[i] = {name = c.name, type = c.type, rowtime = c.rowtime} end
    return rel_of(stream, cols, false)
  end
  if t then
    if t.sink_only then self:err(pos, "table '%s' (connector '%s') can only be written to", name, t.props.connector) end
    local stream = connectors.source(self, t, self:get_env(pos))
    local cols = {}
    for i, c in ipairs(t.cols) do
      cols[i] = {name = c.name, type = c.type, rowtime = c.rowtime, field = c.field, nonnull = c.nonnull}
    end
    return rel_of(stream, cols, false)
  end
  local v = self.views[name]
  if v then
    local rel = self:plan_query(v.query)
    if v.columns then
      local ren = {}
      for i, c in ipairs(rel.cols) do ren[i] = {from = c.name, to = v.columns[i]} end
      return self:rename(rel, ren)
    end
    return rel
  end
  self:err(pos, "unknown table '%s'", name)
end

-- Renames columns (a map over rows).
function Planner:rename(rel, ren)
  local cols = {}
  for i, c in ipairs(rel.cols) do cols[i] = {name = ren[i].to, type = c.type, rowtime = c.rowtime} end
  local function f(r)
    local o = {}
    for _, x in ipairs(ren) do o[x.to] = r[x.from] end
    return o
  end
  local stream
  if rel.updating then
    stream = rel.stream:map(function(e) return {k = e.k, r = f(e.r)} end)
  else
    stream = rel.stream:map(f)
  end
  return rel_of(stream, cols, rel.updating)
end

local function interval_arg(self, e, what)
  if not e or e.tag ~= "interval" then
    self:err(e and e.pos or nil, "%s must be an INTERVAL literal (INTERVAL '5' SECOND)", what)
  end
  if not e.ms or e.ms <= 0 then self:err(e.pos, "%s must be a positive interval", what) end
  return e.ms
end

-- The window described by a group-window call or a TVF: {kind, size, slide, gap, step}.
function Planner:window_spec(fn, args, pos)
  if fn == "TUMBLE" then
    if #args ~= 1 then self:err(pos, "TUMBLE takes the time column and a size") end
    return {kind = "tumble", size = interval_arg(self, args[1], "the TUMBLE size")}
  elseif fn == "HOP" then
    if #args ~= 2 then self:err(pos, "HOP takes the time column, a slide and a size") end
    local slide = interval_arg(self, args[1], "the HOP slide")
    local size = interval_arg(self, args[2], "the HOP size")
    if slide > size then self:err(args[1].pos, "the HOP slide is larger than its size: rows between windows would be lost") end
    return {kind = "hop", size = size, slide = slide}
  elseif fn == "SESSION" then
    if #args ~= 1 then self:err(pos, "SESSION takes the time column and a gap") end
    return {kind = "session", gap = interval_arg(self, args[1], "the SESSION gap")}
  elseif fn == "CUMULATE" then
    if #args ~= 2 then self:err(pos, "CUMULATE takes the time column, a step and a size") end
    local step = interval_arg(self, args[1], "the CUMULATE step")
    local size = interval_arg(self, args[2], "the CUMULATE size")
    if size % step ~= 0 then self:err(args[2].pos, "the CUMULATE size must be a multiple of its step") end
    return {kind = "cumulate", size = size, slide = step}
  end
  self:err(pos, "unknown window function '%s' (TUMBLE, HOP, SESSION, CUMULATE)", fn)
end

local function check_rowtime(self, rel, name, pos)
  local c
  for _, x in ipairs(rel.cols) do if x.name == name then c = x end end
  if not c then self:err(pos, "unknown column '%s'", name) end
  if not c.rowtime then
    self:err(pos, "column '%s' is not a time attribute: windows need a rowtime column declared with "
      .. "WATERMARK FOR %s AS ...", name, name)
  end
  if rel.updating then self:err(pos, "windows cannot consume an updating input (the result of a GROUP BY)") end
  return c
end

-- Adds window_start, window_end, window_time to every row (a TVF not followed by an
-- aggregation): a map for tumbling windows, a flat_map for hopping and cumulating ones.
local function materialize_tvf(rel)
  local tv = rel.tvf
  local w, rt = tv.window, tv.field
  local aliases = {}
  for _, c in ipairs(rel.base_cols) do if c.field then aliases[#aliases + 1] = c end end
  local size, slide = w.size, w.slide
  local cols = {}
  for i, c in ipairs(rel.base_cols) do cols[i] = {name = c.name, type = c.type} end
  cols[#cols + 1] = {name = "window_start", type = "TIMESTAMP"}
  cols[#cols + 1] = {name = "window_end", type = "TIMESTAMP"}
  cols[#cols + 1] = {name = "window_time", type = "TIMESTAMP", rowtime = true}
  local function with(r, s, e)
    local o = {}
    for k, v in pairs(r) do o[k] = v end
    for _, c in ipairs(aliases) do o[c.name] = r[c.field] end
    o.window_start, o.window_end, o.window_time = s, e, e - 1
    return o
  end
  local stream
  if w.kind == "tumble" then
    stream = rel.stream:map(function(r)
      local ts = r[rt]
      local s = ts - ts % size
      return with(r, s, s + size)
    end)
  elseif w.kind == "hop" then
    stream = rel.stream:flat_map(function(r, emit)
      local ts = r[rt]
      local s = ts - ts % slide
      while s > ts - size do
        emit(with(r, s, s + size))
        s = s - slide
      end
    end)
  else -- cumulate
    stream = rel.stream:flat_map(function(r, emit)
      local ts = r[rt]
      local s = ts - ts % size
      local e = ts - ts % slide + slide
      while e <= s + size do
        emit(with(r, s, e))
        e = e + slide
      end
    end)
  end
  return rel_of(stream, cols, false)
end

function Planner:plan_from(f)
  local rel
  if f.tag == "table" then
    rel = self:scan(f.name, f.pos)
  elseif f.tag == "subquery" then
    rel = self:plan_query(f.query)
  elseif f.tag == "tvf" then
    local base = self:scan(f.table, f.table_pos)
    local rc = check_rowtime(self, base, f.column, f.column_pos)
    if f.fn == "SESSION" then self:err(f.fn_pos, "the SESSION window table function is not supported: use GROUP BY SESSION(...)") end
    local w = self:window_spec(f.fn, f.args, f.fn_pos)
    rel = rel_of(base.stream, {}, false)
    rel.base_cols = base.cols
    for i, c in ipairs(base.cols) do rel.cols[i] = {name = c.name, type = c.type} end
    rel.cols[#rel.cols + 1] = {name = "window_start", type = "TIMESTAMP", window = "start"}
    rel.cols[#rel.cols + 1] = {name = "window_end", type = "TIMESTAMP", window = "end"}
    rel.cols[#rel.cols + 1] = {name = "window_time", type = "TIMESTAMP", window = "time", rowtime = true}
    rel.tvf = {window = w, column = f.column, field = rc.field or f.column, pos = f.pos}
  end
  rel.alias = f.alias or f.name or f.table
  return rel
end

---------------------------------------------------------------------------------------------
-- SELECT

local function item_name(item, i)
  if item.alias then return item.alias end
  local e = item.expr
  if e.tag == "col" then return e.name end
  return "EXPR$" .. (i - 1)
end

-- The select list with stars expanded: {expr, name, pos}.
function Planner:expand_items(q, cols, alias)
  local out, used = {}, {}
  local function add(e, name, pos)
    local base, n = name, 0
    while used[name] do name = base .. n; n = n + 1 end
    used[name] = true
    out[#out + 1] = {expr = e, name = name, pos = pos}
  end
  for i, it in ipairs(q.items) do
    if it.tag == "star" then
      if it.qual and it.qual ~= alias then self:err(it.pos, "unknown table '%s'", it.qual) end
      for _, c in ipairs(cols) do add({tag = "col", name = c.name, pos = it.pos}, c.name, it.pos) end
    else
      add(it.expr, item_name(it, i), it.pos)
    end
  end
  return out
end

local function has_agg(e)
  local found = false
  expr.each_agg(e, function() found = true end)
  return found
end

-- Builds `function(r) return {name = ..., ...} end` for a projection.
function Planner:projection(items, scope, pos)
  local parts, cols = {}, {}
  for i, it in ipairs(items) do
    local s, t = expr.compile(it.expr, scope)
    parts[i] = string.format("[%q] = %s", it.name, s)
    cols[i] = {name = it.name, type = t}
  end
  return "{" .. table.concat(parts, ", ") .. "}", cols, pos
end

function Planner:plan_select(q)
  local rel = self:plan_from(q.from)
  local aliases = {[rel.alias or ""] = true}
  -- WHERE
  if q.where then
    if has_agg(q.where) then
      expr.each_agg(q.where, function(a) self:err(a.pos, "aggregate function %s is not allowed in WHERE (use HAVING)", a.name) end)
    end
    local cols = rel.tvf and rel.base_cols or rel.cols
    local scope = self:row_scope(cols, nil, aliases)
    scope.agg_where = "in WHERE"
    local s, t = expr.compile(q.where, scope)
    if t ~= "BOOLEAN" and t ~= "NULL" then self:err(q.where.pos, "WHERE needs a BOOLEAN condition, got %s", expr.show(t)) end
    local f = expr.load("function(r) return " .. s .. " == true end", lineof(self, q.where.pos))
    if scope.uses_watermark then
      if rel.updating then self:err(q.where.pos, "CURRENT_WATERMARK over an updating input is not supported") end
      rel.stream = lower.with_watermark(rel.stream, f, true)
    elseif rel.updating then
      rel.stream = rel.stream:filter(function(e) return f(e.r) end)
    else
      rel.stream = rel.stream:filter(f)
    end
  end
  local items = self:expand_items(q, rel.cols, rel.alias)
  local grouped = q.group_by or q.distinct or q.having
  if not grouped then
    for _, it in ipairs(items) do if has_agg(it.expr) then grouped = true end end
  end
  if grouped then return self:plan_aggregate(q, rel, items, aliases) end
  if rel.tvf then rel = materialize_tvf(rel) end
  -- plain projection
  local scope = self:row_scope(rel.cols, nil, aliases)
  local body, cols = self:projection(items, scope)
  -- a column passed through keeps its time attribute
  for i, it in ipairs(items) do
    if it.expr.tag == "col" and not rel.updating then
      for _, c in ipairs(rel.cols) do if c.name == it.expr.name and c.rowtime then cols[i].rowtime = true end end
    end
  end
  local f = expr.load("function(r) return " .. body .. " end", lineof(self, q.pos))
  local stream
  if scope.uses_watermark then
    if rel.updating then self:err(q.pos, "CURRENT_WATERMARK over an updating input is not supported") end
    stream = lower.with_watermark(rel.stream, f, false)
  elseif rel.updating then
    stream = rel.stream:map(function(e) return {k = e.k, r = f(e.r)} end)
  else
    stream = rel.stream:map(f)
  end
  return rel_of(stream, cols, rel.updating)
end

-- The row column a plain column reference reads, when it is never NULL: {field, type}.
local function nonnull_column(cols, e)
  if e.tag ~= "col" then return nil end
  for _, c in ipairs(cols) do
    if c.name == e.name then
      if c.nonnull then return c.field or c.name, c.type end
      return nil
    end
  end
  return nil
end

-- What of a windowed aggregation can run in C (architecture.md, hot path):
-- * key_fields: the GROUP BY keys as row fields for a field-based key_by, when every key is
--   a plain column that is never NULL (else a Lua key function, which maps NULL to a key);
-- * builtin: the window's C aggregation when the aggregate list allows: `count()` for a
--   single COUNT(*) (or COUNT(col) of a never-NULL column), on any window but CUMULATE;
--   `sum/min/max(field)` for a single SUM/MIN/MAX of a never-NULL numeric column on a
--   TUMBLE window (the result row is the window's first row: its rowtime gives the window).
-- A light Lua map then shapes the final row from the C result, once per window and key.
local function fast_window_agg(cols, keys, agg_list, q, window)
  local key_fields = {}
  for i, k in ipairs(keys) do
    local f = nonnull_column(cols, k)
    if not f then key_fields = nil break end
    key_fields[i] = f
  end
  if key_fields and #key_fields == 0 then key_fields = nil end
  if #agg_list ~= 1 or window.kind == "cumulate" then return key_fields, nil end
  local a = agg_list[1]
  if a.distinct then return key_fields, nil end
  local arg = not a.star and a.arg or nil
  local field, ftype
  if arg then field, ftype = nonnull_column(cols, arg) end
  if a.name == "COUNT" and (a.star or field) then return key_fields, {agg = "count"} end
  if (a.name == "SUM" or a.name == "MIN" or a.name == "MAX") and field and expr.NUMERIC[ftype]
      and window.kind == "tumble" and key_fields then
    for _, kf in ipairs(key_fields) do if kf == field then return key_fields, nil end end
    return key_fields, {agg = a.name:lower(), field = field}
  end
  return key_fields, nil
end

-- GROUP BY (with or without a window), HAVING, DISTINCT.
function Planner:plan_aggregate(q, rel, items, aliases)
  local src = self.src
  local group = q.group_by or {}
  if q.distinct then
    if q.group_by then self:err(q.pos, "SELECT DISTINCT with GROUP BY is not supported") end
    group = {}
    for _, it in ipairs(items) do group[#group + 1] = it.expr end
  end
  -- the window: a group-window call in GROUP BY, or window_start/window_end of a TVF
  local window, window_call, keys = nil, nil, {}
  local tvf_props = {}
  for _, g in ipairs(group) do
    if g.tag == "call" and expr.WINDOW_FNS[g.name] then
      if window then self:err(g.pos, "GROUP BY has more than one window") end
      if g.name == "CUMULATE" then self:err(g.pos, "CUMULATE is a window table function: FROM TABLE(CUMULATE(TABLE t, DESCRIPTOR(rt), step, size))") end
      local a1 = g.args[1]
      if not a1 or a1.tag ~= "col" then self:err(g.pos, "%s needs a time column as its first argument", g.name) end
      if rel.tvf then self:err(g.pos, "a group window over a window table function") end
      local rc = check_rowtime(self, rel, a1.name, a1.pos)
      local rest = {table.unpack(g.args, 2)}
      window = self:window_spec(g.name, rest, g.pos)
      window.rowtime, window.rowtime_field = a1.name, rc.field or a1.name
      window_call = g
    elseif rel.tvf and g.tag == "col" and (g.name == "window_start" or g.name == "window_end") then
      tvf_props[g.name] = true
    else
      if g.tag == "call" and expr.WINDOW_PROPS[g.name] then self:err(g.pos, "%s belongs in the SELECT list", g.name) end
      if has_agg(g) then self:err(g.pos, "aggregate functions are not allowed in GROUP BY") end
      keys[#keys + 1] = g
    end
  end
  if rel.tvf then
    if tvf_props.window_start and tvf_props.window_end then
      window = rel.tvf.window
      window.rowtime, window.rowtime_field = rel.tvf.column, rel.tvf.field
    else
      rel = materialize_tvf(rel)
    end
  end
  local base_cols = window and rel.tvf and rel.base_cols or rel.cols
  local row_scope = self:row_scope(base_cols, nil, aliases)
  row_scope.agg_where = "inside another aggregate"
  -- group keys
  local keyfns, key_sigs, key_types = {}, {}, {}
  for i, k in ipairs(keys) do
    local f, t = compile_fn(self, k, row_scope)
    keyfns[i], key_sigs[expr.sig(k)], key_types[i] = f, i, t
  end
  -- aggregate calls in SELECT and HAVING
  local agg_list, agg_sigs, argfns = {}, {}, {}
  local function collect(e)
    expr.each_agg(e, function(a)
      local sg = expr.sig(a)
      if agg_sigs[sg] then return end
      local argfn, at = function() return true end, nil
      if a.star then
        if a.name ~= "COUNT" then self:err(a.pos, "%s(*) is not allowed; only COUNT(*)", a.name) end
      else
        if #a.args ~= 1 then self:err(a.pos, "%s takes one argument", a.name) end
        argfn, at = compile_fn(self, a.args[1], row_scope)
        if (a.name == "SUM" or a.name == "AVG") and not expr.NUMERIC[at] then
          self:err(a.args[1].pos, "%s needs a numeric argument, got %s", a.name, expr.show(at))
        end
      end
      local i = #agg_list + 1
      agg_list[i] = {name = a.name, distinct = a.distinct, star = a.star, type = at, arg = a.args and a.args[1],
                     result_type = aggs.result_type(a.name, at or "BIGINT")}
      argfns[i] = argfn
      agg_sigs[sg] = i
    end)
  end
  for _, it in ipairs(items) do collect(it.expr) end
  if q.having then collect(q.having) end
  -- the scope after aggregation: keys, aggregates, window properties
  local scope = {src = src, functions = self.functions}
  scope.match = function(e)
    local ks = key_sigs[expr.sig(e)]
    if ks then return "k[" .. ks .. "]", key_types[ks] end
    if e.tag == "call" and expr.AGGS[e.name] then
      local i = agg_sigs[expr.sig(e)]
      return "a[" .. i .. "]", agg_list[i].result_type
    end
    if e.tag == "call" and expr.WINDOW_PROPS[e.name] then
      if not window_call then self:err(e.pos, "%s needs GROUP BY %s(...)", e.name, e.name:match("^(%u+)_")) end
      local fn, prop = e.name:match("^(%u+)_(%u+)$")
      local same = fn == window_call.name and #e.args == #window_call.args
      if same then
        for i = 1, #e.args do if expr.sig(e.args[i]) ~= expr.sig(window_call.args[i]) then same = false end end
      end
      if not same then self:err(e.pos, "%s does not match the window in GROUP BY", e.name) end
      local rtt
      for _, c in ipairs(base_cols) do if c.name == window.rowtime then rtt = c.type end end
      if prop == "START" then return "ws", rtt end
      if prop == "END" then return "we", rtt end
      if prop == "ROWTIME" then return "(we - 1)", rtt end
      self:err(e.pos, "%s is not supported (processing time)", e.name)
    end
    if e.tag == "col" and window and rel.tvf then
      if e.name == "window_start" then return "ws", "TIMESTAMP" end
      if e.name == "window_end" then return "we", "TIMESTAMP" end
      if e.name == "window_time" then return "(we - 1)", "TIMESTAMP" end
    end
    return nil
  end
  scope.column = function(n)
    for _, c in ipairs(rel.cols) do
      if c.name == n.name then
        raise(src, n.pos, "column '%s' must appear in GROUP BY or be used in an aggregate function", n.name)
      end
    end
    raise(src, n.pos, "unknown column '%s'", n.name)
  end
  scope.agg_where = "inside another aggregate"
  local body, cols = self:projection(items, scope)
  for i, it in ipairs(items) do
    local e = it.expr
    if e.tag == "call" and e.name:match("_ROWTIME$") then cols[i].rowtime = true end
    if e.tag == "col" and e.name == "window_time" and window then cols[i].rowtime = true end
  end
  local having_src = "true"
  if q.having then
    local s, t = expr.compile(q.having, scope)
    if t ~= "BOOLEAN" and t ~= "NULL" then self:err(q.having.pos, "HAVING needs a BOOLEAN condition, got %s", expr.show(t)) end
    having_src = s .. " == true"
  end
  local out = expr.load(string.format(
    "function(k, a, ws, we) if not (%s) then return false end return %s end", having_src, body),
    lineof(self, q.pos))
  local made = {}
  for i, a in ipairs(agg_list) do
    made[i] = aggs.make(a.name, {star = a.star, distinct = a.distinct, type = a.type, retract = rel.updating})
  end
  if window then
    if rel.updating then self:err(q.pos, "a windowed GROUP BY cannot consume an updating input") end
    local spec = {kind = window.kind, size = window.size, slide = window.slide, gap = window.gap,
                  rowtime = window.rowtime_field, keyfns = keyfns, aggs = made, argfns = argfns, out = out,
                  having = q.having ~= nil}
    spec.key_fields, spec.builtin = fast_window_agg(base_cols, keys, agg_list, q, window)
    return rel_of(lower.window_aggregate(rel.stream, spec), cols, false)
  end
  local spec = {keyfns = keyfns, aggs = made, argfns = argfns, updating_input = rel.updating,
                out = function(k, a) return out(k, a, nil, nil) end}
  return rel_of(lower.group_aggregate(rel.stream, spec), cols, true)
end

function Planner:plan_query(q)
  if q.tag == "union" then
    local first = self:plan_select(q[1])
    local rels = {first}
    local updating = first.updating
    for i = 2, #q do
      local r = self:plan_select(q[i])
      if #r.cols ~= #first.cols then
        self:err(q[i].pos, "UNION ALL: this query gives %d columns, the first gives %d", #r.cols, #first.cols)
      end
      for j, c in ipairs(r.cols) do
        local a, b = first.cols[j].type, c.type
        if a ~= b and not (expr.NUMERIC[a] and expr.NUMERIC[b]) and a ~= "NULL" and b ~= "NULL" then
          self:err(q[i].pos, "UNION ALL: column %d is %s here and %s in the first query", j, expr.show(b), expr.show(a))
        end
      end
      updating = updating or r.updating
      rels[i] = r
    end
    local streams = {}
    for i, r in ipairs(rels) do
      local ren = {}
      for j, c in ipairs(r.cols) do ren[j] = {from = c.name, to = first.cols[j].name} end
      local rr = i == 1 and r or self:rename(r, ren)
      local s = rr.stream
      if updating and not r.updating then s = s:map(function(row) return {k = "+I", r = row} end) end
      streams[i] = s
    end
    local cols = {}
    for j, c in ipairs(first.cols) do cols[j] = {name = c.name, type = c.type} end
    return rel_of(streams[1]:union(table.unpack(streams, 2)), cols, updating)
  end
  return self:plan_select(q)
end

---------------------------------------------------------------------------------------------
-- Statements that run

function Planner:select_stmt(st)
  local env = self:get_env(st.pos)
  local mark = #env.nodes
  local rel = self:plan_query(st.query)
  lower.print_changelog(rel, nil)
  self:tag_nodes(mark, st.pos)
  self.queries = self.queries + 1
  return rel
end

--- Prints a relation as Flink's print sink does: `+I[...]`, `-U[...]`, `+U[...]`, `-D[...]`.
function lower.print_changelog(rel, prefix)
  local fmt = values.row_formatter(rel.cols)
  local s
  local fuse = rel.stream.sql_shape
  local nodes = rel.stream.env.nodes
  if fuse and not rel.updating and nodes[#nodes] == rel.stream.node then
    -- the shaping step was just planned and nothing reads it yet: one Lua step per result
    -- (shape the row, format it) instead of two
    nodes[#nodes] = nil
    local shape = fuse.fn
    if fuse.having then
      s = fuse.input:flat_map(function(r, emit)
        local row = shape(r)
        if row then emit(fmt("+I", row)) end
      end)
    else
      s = fuse.input:map(function(r) return fmt("+I", shape(r)) end)
    end
    return s:name("shape and format rows"):print(prefix)
  end
  if rel.updating then
    s = rel.stream:map(function(e) return fmt(e.k, e.r) end)
  else
    s = rel.stream:map(function(r) return fmt("+I", r) end)
  end
  return s:print(prefix)
end

function Planner:insert(st)
  local t = self.tables[st.name]
  if not t then
    if self.views[st.name] then self:err(st.name_pos, "cannot INSERT INTO the view '%s'", st.name) end
    self:err(st.name_pos, "unknown table '%s'", st.name)
  end
  local env = self:get_env(st.pos)
  local mark = #env.nodes
  local rel = self:plan_query(st.query)
  local targets = {}
  if st.columns then
    for i, n in ipairs(st.columns) do
      if not t.byname[n] then self:err(st.name_pos, "table '%s' has no column '%s'", st.name, n) end
      targets[i] = t.byname[n]
    end
  else
    for _, c in ipairs(t.physical) do targets[#targets + 1] = c end
  end
  if #targets ~= #rel.cols then
    self:err(st.query.pos, "INSERT INTO %s: the query gives %d columns, the table takes %d", st.name, #rel.cols, #targets)
  end
  local ren = {}
  for i, c in ipairs(rel.cols) do
    local want = targets[i].type
    if c.type ~= want and c.type ~= "NULL" and not (expr.NUMERIC[c.type] and expr.NUMERIC[want] and
        expr.NUMERIC[c.type] <= expr.NUMERIC[want]) and not (want:match("^TIMESTAMP") and c.type:match("^TIMESTAMP")) then
      self:err(st.query.pos, "INSERT INTO %s: column '%s' is %s but the query gives %s", st.name, targets[i].name,
        expr.show(want), expr.show(c.type))
    end
    ren[i] = {from = c.name, to = targets[i].name}
  end
  local out = self:rename(rel, ren)
  out.cols = {}
  for i, c in ipairs(targets) do out.cols[i] = {name = c.name, type = c.type} end
  connectors.sink(self, t, out, st, lower.print_changelog)
  self:tag_nodes(mark, st.pos)
  self.queries = self.queries + 1
end

--- Runs (plans) one statement.
function Planner:statement(st)
  local tag = st.tag
  if tag == "create_table" then return self:create_table(st) end
  if tag == "create_view" then return self:create_view(st) end
  if tag == "set" then return self:set(st) end
  if tag == "reset" then
    if st.key then self.settings[st.key] = nil else self.settings = {} end
    return
  end
  if tag == "select_stmt" then return self:select_stmt(st) end
  if tag == "insert" then return self:insert(st) end
  if tag == "explain" then
    local env = self:get_env(st.pos)
    local mark = #env.nodes
    self:plan_query(st.query)
    local lines = {}
    for i = mark + 1, #env.nodes do lines[#lines + 1] = env.nodes[i].kind .. " " .. (env.nodes[i].name or "") end
    self.explained = table.concat(lines, "\n")
    -- the plan is not run: drop its nodes
    for i = #env.nodes, mark + 1, -1 do env.nodes[i] = nil end
    io.stdout:write(self.explained, "\n")
    return
  end
  self:err(st.pos, "unsupported statement")
end

return M
