--- SELECT: WHERE, projections, UNION ALL (the aggregations are in wm.sql.plan.aggregate).
-- @module wm.sql.plan.select
local expr = require("wm.sql.expr")
local lower = require("wm.sql.plan.lower")
local base = require("wm.sql.plan.base")
local from = require("wm.sql.plan.from")
local rank = require("wm.sql.plan.rank")
require("wm.sql.plan.lateral")
require("wm.sql.plan.join")
local over = require("wm.sql.plan.over")
local semi_join = require("wm.sql.plan.semi_join")
local cexpr = require("wm.sql.cexpr")

local Planner, rel_of, lineof, has_agg = base.Planner, base.rel_of, base.lineof, base.has_agg
local materialize_tvf = from.materialize_tvf

local function item_name(item, i)
  if item.alias then return item.alias end
  local e = item.expr
  if e.tag == "col" then return e.name end
  return "EXPR$" .. (i - 1)
end

-- The select list with stars expanded: {expr, name, pos}.
-- `alias`: the FROM's name, or the names of a join's tables (wm.sql.plan.join)
function Planner:expand_items(q, cols, alias)
  local out, used = {}, {}
  local function add(e, name, pos)
    local stem, n = name, 0
    while used[name] do name = stem .. n; n = n + 1 end
    used[name] = true
    out[#out + 1] = {expr = e, name = name, pos = pos}
  end
  for i, it in ipairs(q.items) do
    if it.tag == "star" and it.qual and type(alias) == "table" then
      local side = alias[it.qual]
      if not side then self:err(it.pos, "unknown table '%s'", it.qual) end
      for _, c in ipairs(side.list) do
        add({tag = "col", name = c.out, pos = it.pos, resolved = true}, c.name, it.pos)
      end
    elseif it.tag == "star" then
      if it.qual and it.qual ~= alias then self:err(it.pos, "unknown table '%s'", it.qual) end
      for _, c in ipairs(cols) do add({tag = "col", name = c.name, pos = it.pos, resolved = true}, c.name, it.pos) end
    else
      add(it.expr, item_name(it, i), it.pos)
    end
  end
  return out
end

-- Whether a projection's items are the columns `cols`, each under its own name, in their order
-- (`SELECT *`, or all columns named): the projection is then the identity.
local function same_columns(items, cols)
  if #items ~= #cols then return false end
  for i, it in ipairs(items) do
    local e = it.expr
    if e.tag ~= "col" or e.qual or e.name ~= cols[i].name or it.name ~= cols[i].name then return false end
  end
  return true
end

-- Builds `function(r) return {name = ..., ...} end` for a projection.
function Planner.projection(_self, items, scope, pos)
  local parts, cols = {}, {}
  for i, it in ipairs(items) do
    local s, t = expr.compile(it.expr, scope)
    parts[i] = string.format("[%q] = %s", it.name, s)
    cols[i] = {name = it.name, type = t}
  end
  return "{" .. table.concat(parts, ", ") .. "}", cols, pos
end

function Planner:plan_select(q)
  local ri = rank.rank_item(q)
  if over.has_over(q) then return self:plan_over(q, ri) end
  if ri then return self:plan_rank_input(q, ri) end
  local rel
  if q.joins then
    rel, q = self:plan_join(q)
  elseif q.where and semi_join.has_subquery(q.where) then -- EXISTS / IN (SELECT ...)
    rel, q = self:plan_semi_join(q)
  else
    rel = self:plan_from(q.from)
  end
  if rel.rank then q, rel = self:apply_rank(q, rel) end
  local aliases = rel.join and rel.join.aliases or {[rel.alias or ""] = true}
  if q.lateral then rel = self:plan_lateral(rel, q.lateral, aliases) end
  -- WHERE
  if q.where then
    if has_agg(q.where) then
      expr.each_agg(q.where, function(a)
        self:err(a.pos, "aggregate function %s is not allowed in WHERE (use HAVING)", a.name)
      end)
    end
    local cols = rel.tvf and rel.base_cols or rel.cols
    local scope = self:row_scope(cols, nil, aliases)
    scope.agg_where = "in WHERE"
    local s, t = expr.compile(q.where, scope)
    if t ~= "BOOLEAN" and t ~= "NULL" then
      self:err(q.where.pos, "WHERE needs a BOOLEAN condition, got %s", expr.show(t))
    end
    local f = expr.load("function(r) return " .. s .. " == true end", lineof(self, q.where.pos))
    if scope.uses_watermark then
      if rel.updating then self:err(q.where.pos, "CURRENT_WATERMARK over an updating input is not supported") end
      rel.stream = lower.with_watermark(rel.stream, f, true)
    elseif rel.updating then
      rel.stream = cexpr.try_filter(rel.stream, q.where, scope, self.src, true)
        or rel.stream:filter(function(e) return f(e.r) end)
    else
      rel.stream = cexpr.try_filter(rel.stream, q.where, scope, self.src) or rel.stream:filter(f)
    end
  end
  local items = self:expand_items(q, rel.cols, rel.join and rel.join.quals or rel.alias)
  local grouped = q.group_by or q.distinct or q.having
  if not grouped then
    for _, it in ipairs(items) do if has_agg(it.expr) then grouped = true end end
  end
  if grouped then return self:plan_aggregate(q, rel, items, aliases) end
  local tvf_window = rel.tvf and rel.tvf.window
  if rel.tvf then rel = materialize_tvf(rel) end
  -- plain projection
  local scope = self:row_scope(rel.cols, nil, aliases)
  scope.proctime_ok = not rel.updating
  local body, cols = self:projection(items, scope)
  -- a column passed through keeps its time attribute
  for i, it in ipairs(items) do
    if it.expr.tag == "col" and not rel.updating then
      for _, c in ipairs(rel.cols) do
        if c.name == it.expr.name and c.rowtime then cols[i].rowtime = c.rowtime end
        if c.name == it.expr.name and c.proctime then cols[i].proctime = true end
      end
    end
    if it.expr.tag == "call" and it.expr.name == "PROCTIME" then cols[i].proctime = true end
  end
  local f = expr.load("function(r) return " .. body .. " end", lineof(self, q.pos))
  local stream
  if scope.uses_proctime then
    if scope.uses_watermark then self:err(q.pos, "not supported yet: PROCTIME() with CURRENT_WATERMARK") end
    local proctime = require("wm.sql.plan.proctime")
    stream = proctime.c_enabled() and proctime.try_c(rel.stream, items, cols, scope, self.src)
      or proctime.with_proctime(rel.stream, f)
  elseif scope.uses_watermark then
    if rel.updating then self:err(q.pos, "CURRENT_WATERMARK over an updating input is not supported") end
    stream = lower.with_watermark(rel.stream, f, false)
  elseif rel.updating and same_columns(items, rel.cols) then
    stream = rel.stream -- (SELECT * of a changelog: its rows as they are, no Lua step per change)
  else
    stream = cexpr.try_project(rel.stream, items, cols, scope, self.src, rel.updating)
      or lower.map_rows(rel.stream, rel.updating, f)
  end
  local out = rel_of(stream, cols, rel.updating)
  -- the rows of a window TVF passed through with their window_start and window_end: a window
  -- join may join them (wm.sql.plan.join)
  local passed = {}
  for _, it in ipairs(items) do
    if it.expr.tag == "col" and it.expr.name == it.name then passed[it.name] = true end
  end
  if tvf_window and passed.window_start and passed.window_end then out.window = tvf_window end
  return out
end

-- `allow_rank`: the query may give a relation that still carries its rank (wm.sql.plan.rank),
-- when the caller is a FROM that an outer query filters.
function Planner:plan_query(q, allow_rank)
  expr.user_functions = self.udfs -- its aggregate functions are aggregates (every way in plans a query)
  if q.tag == "union" then
    local first = self:check_no_rank(self:plan_select(q[1]))
    local rels = {first}
    local updating = first.updating
    for i = 2, #q do
      local r = self:check_no_rank(self:plan_select(q[i]))
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
  local rel = self:plan_select(q)
  if not allow_rank then self:check_no_rank(rel) end
  return rel
end
