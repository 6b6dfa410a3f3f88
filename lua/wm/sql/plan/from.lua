--- FROM: table scans, views, window table functions.
-- @module wm.sql.plan.from
local connectors = require("wm.sql.connectors")
local lower = require("wm.sql.plan.lower")
local base = require("wm.sql.plan.base")
local cexpr = require("wm.sql.cexpr")
local prune = require("wm.sql.plan.prune")

local M = {}
local Planner, rel_of = base.Planner, base.rel_of

-- `needed`: the columns its reader uses (wm.sql.plan.prune: a set of lowercase names, false
-- for all); nil when the reader is not pruned (the relation is then read whole).
function Planner:scan(name, pos, needed)
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
    local stream = connectors.source(self, t, self:get_env(pos), needed)
    local cols = {}
    for i, c in ipairs(t.cols) do
      cols[i] = {name = c.name, type = c.type, rowtime = c.rowtime, field = c.field, nonnull = c.nonnull,
                 fields = c.fields, proctime = c.proctime}
    end
    return rel_of(stream, cols, false)
  end
  local v = self.views[name]
  if v and v.schema and self.checking then
    -- checking another view's query: this view was checked at its CREATE VIEW; an empty
    -- stream with its columns stands in for it
    local cols = {}
    for i, c in ipairs(v.schema) do
      cols[i] = {name = c.name, type = c.type, rowtime = c.rowtime, proctime = c.proctime}
    end
    return rel_of(self:get_env(pos):from_elements(), cols, v.updating)
  end
  if v then
    self.view_plans = self.view_plans + 1
    local q = v.query
    if needed ~= nil and prune.enabled() then q = prune.query(self, q, not v.columns and needed or nil, true) end
    local rel = self:plan_query(q, true)
    if v.columns then
      if rel.rank then self:err(pos, "not supported yet: a column list on a view of a ROW_NUMBER() query") end
      local ren = {}
      for i, c in ipairs(rel.cols) do ren[i] = {from = c.name, to = v.columns[i]} end
      return self:rename(rel, ren)
    end
    return rel
  end
  self:err(pos, "unknown table '%s'", name)
end

-- Renames columns (a map over rows).
function Planner.rename(_self, rel, ren)
  local cols = {}
  for i, c in ipairs(rel.cols) do
    cols[i] = {name = ren[i].to, type = c.type, rowtime = c.rowtime, proctime = c.proctime}
  end
  local function f(r)
    local o = {}
    for _, x in ipairs(ren) do o[x.to] = r[x.from] end
    return o
  end
  -- (a changelog whose names stay passes through C unchanged, as rows do: an INSERT into a
  -- table of the query's own column names; one of C rows is renamed in C, cexpr.c_changes)
  local c = cexpr.try_rename(rel.stream, ren, cols, rel.updating)
  if c then return rel_of(c, cols, rel.updating) end
  return rel_of(lower.map_rows(rel.stream, rel.updating, f), cols, rel.updating)
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
    if slide > size then
      self:err(args[1].pos, "the HOP slide is larger than its size: rows between windows would be lost")
    end
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

--- Checks that `name` is a time attribute of `rel`; returns its column.
function M.check_rowtime(self, rel, name, pos)
  local c
  for _, x in ipairs(rel.cols) do if x.name == name then c = x end end
  if not c then self:err(pos, "unknown column '%s'", name) end
  if c.rowtime == "join" then
    self:err(pos, "not supported yet: windows on the time attribute '%s' of an interval join's result (the "
      .. "join's rows carry the later of their two times, not this column's; docs/sql.md, \"Interval joins\")", name)
  end
  if not c.rowtime and not c.proctime then
    self:err(pos, "column '%s' is not a time attribute: windows need a rowtime column declared with "
      .. "WATERMARK FOR %s AS ...", name, name)
  end
  if rel.updating then self:err(pos, "windows cannot consume an updating input (the result of a GROUP BY)") end
  return c
end

-- Adds window_start, window_end, window_time to every row (a TVF not followed by an
-- aggregation): a map for tumbling windows, a flat_map for hopping and cumulating ones.
function M.materialize_tvf(rel)
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
  local out = rel_of(stream, cols, false)
  out.window = w -- (for a window join, wm.sql.plan.join)
  return out
end

local check_rowtime = M.check_rowtime
function Planner:plan_from(f)
  local rel
  if f.as_of then
    self:err(f.as_of_pos, "not supported yet: FOR SYSTEM_TIME AS OF outside a join (temporal and lookup joins: "
      .. "JOIN t FOR SYSTEM_TIME AS OF x.ts)")
  end
  if f.tag == "table" then
    rel = self:scan(f.name, f.pos, f.needed)
  elseif f.tag == "subquery" then
    rel = self:plan_query(f.query, true)
  elseif f.tag == "tvf" then
    local scanned = self:scan(f.table, f.table_pos, f.needed)
    local rc = check_rowtime(self, scanned, f.column, f.column_pos)
    if f.fn == "SESSION" then
      self:err(f.fn_pos, "the SESSION window table function is not supported: use GROUP BY SESSION(...)")
    end
    local w = self:window_spec(f.fn, f.args, f.fn_pos)
    w.processing = rc.proctime -- (PROCTIME(), wm.sql.plan.proctime)
    rel = rel_of(scanned.stream, {}, false)
    rel.base_cols = scanned.cols
    for i, c in ipairs(scanned.cols) do rel.cols[i] = {name = c.name, type = c.type} end
    rel.cols[#rel.cols + 1] = {name = "window_start", type = "TIMESTAMP", window = "start"}
    rel.cols[#rel.cols + 1] = {name = "window_end", type = "TIMESTAMP", window = "end"}
    rel.cols[#rel.cols + 1] = {name = "window_time", type = "TIMESTAMP", window = "time", rowtime = true}
    rel.tvf = {window = w, column = f.column, field = rc.field or f.column, pos = f.pos}
  end
  rel.alias = f.alias or f.name or f.table
  return rel
end

return M
