--- Top-N and deduplication (Flink's Rank and Deduplicate): a query with the item
-- `ROW_NUMBER() OVER (PARTITION BY k ORDER BY c [ASC|DESC], ...) AS rn`, read by an outer query
-- that filters on it: `WHERE rn <= N` (or `rn < N`, `rn = 1`).
--
-- The inner query plans into a relation that carries the rank to make (`rel.rank`) instead of
-- a stream of rows; the outer query's plan_select makes it (apply_rank): it needs the bound
-- from the WHERE, and whether the outer query reads `rn` (Flink's outputRankNumber). With
-- `rn = 1`, ORDER BY a time attribute and no `rn` read, it is a deduplication (keep the first
-- row per key for ASC, the last for DESC); otherwise a Top-N.
-- @module wm.sql.plan.rank
local lower = require("wm.sql.plan.lower")
local base = require("wm.sql.plan.base")

local M = {}
local Planner, rel_of = base.Planner, base.rel_of

--- The index of the ROW_NUMBER() OVER item of a SELECT, if it has one.
function M.rank_item(q)
  if q.tag ~= "select" then return nil end
  for i, it in ipairs(q.items) do
    if it.tag == "item" and it.expr.tag == "call" and it.expr.over and it.expr.name == "ROW_NUMBER" then return i end
  end
  return nil
end

-- True when expression `e` reads the column `name`.
local function mentions(e, name)
  if type(e) ~= "table" then return false end
  if e.tag == "col" then return e.name == name end
  for i = 1, #e do if mentions(e[i], name) then return true end end
  for _, k in ipairs({"args", "list"}) do
    if e[k] then for _, a in ipairs(e[k]) do if mentions(a, name) then return true end end end
  end
  if e.whens then
    for _, w in ipairs(e.whens) do if mentions(w[1], name) or mentions(w[2], name) then return true end end
  end
  return mentions(e.operand, name) or mentions(e.else_, name)
end

local function copy_query(q, fields)
  local c = {}
  for k, v in pairs(q) do c[k] = v end
  for k, v in pairs(fields) do c[k] = v end
  return c
end

--- Plans the query with the ROW_NUMBER item at `idx`: its other items, plus the PARTITION BY
-- and ORDER BY expressions as hidden columns `$p1`, `$o1`, ...; returns a relation with
-- `rank` (what apply_rank needs) and its columns (the visible ones, then rn).
function Planner:plan_rank_input(q, idx)
  local it = q.items[idx]
  local call = it.expr
  local over = call.over
  for i, x in ipairs(q.items) do
    if i ~= idx and x.tag == "item" and x.expr.tag == "call" and x.expr.over and x.expr.name == "ROW_NUMBER" then
      self:err(x.expr.pos, "not supported yet: two ROW_NUMBER() items in one query")
    end
  end
  if q.group_by or q.distinct or q.having then
    self:err(call.pos, "not supported yet: ROW_NUMBER() in a query with GROUP BY (a Top-N over an updating input)")
  end
  if not over.order then
    self:err(over.pos, "ROW_NUMBER() OVER (...) needs ORDER BY (the order of the rows it numbers)")
  end
  local items, hidden = {}, {}
  for i, x in ipairs(q.items) do if i ~= idx then items[#items + 1] = x end end
  local parts, orders = {}, {}
  for i, e in ipairs(over.partition or {}) do
    parts[i] = "$p" .. i
    items[#items + 1] = {tag = "item", pos = e.pos, expr = e, alias = parts[i]}
    hidden[parts[i]] = true
  end
  for i, o in ipairs(over.order) do
    local f = "$o" .. i
    orders[i] = {field = f, desc = o.desc or false, nulls = o.nulls}
    items[#items + 1] = {tag = "item", pos = o.expr.pos, expr = o.expr, alias = f}
    hidden[f] = true
  end
  local rel = self:plan_select(copy_query(q, {items = items}))
  if rel.updating then
    self:err(call.pos, "not supported yet: ROW_NUMBER() over an updating input (the result of a GROUP BY)")
  end
  local visible, cols, by = {}, {}, {}
  for _, c in ipairs(rel.cols) do
    by[c.name] = c
    if not hidden[c.name] then
      visible[#visible + 1] = c.name
      cols[#cols + 1] = {name = c.name, type = c.type}
    end
  end
  local rn = it.alias or ("EXPR$" .. (idx - 1))
  cols[#cols + 1] = {name = rn, type = "BIGINT"}
  local out = rel_of(nil, cols, false)
  local part_cols, order_types = {}, {}
  for i, f in ipairs(parts) do part_cols[i] = by[f] end
  for i, o in ipairs(orders) do order_types[i] = by[o.field].type end
  out.rank = {stream = rel.stream, parts = parts, part_cols = part_cols, order_types = order_types, orders = orders,
              visible = visible, rn = rn, pos = call.pos,
              time_order = #orders == 1 and by[orders[1].field].rowtime or false}
  return out
end

-- Where an expression starts in the script (a binary node's position is its operator's).
local function start_pos(e)
  while e.tag == "bin" or e.tag == "like" or e.tag == "between" or e.tag == "in" or e.tag == "isnull"
      or e.tag == "isbool" do
    e = e[1]
  end
  return e.pos
end

-- The N of a condition `rn <= N`, `rn < N`, `rn = 1` (or with the sides swapped), else nil.
local FLIP = {["<="] = ">=", ["<"] = ">", [">="] = "<=", [">"] = "<", ["="] = "="}
local function rank_bound(self, c, rn)
  if c.tag ~= "bin" or not FLIP[c.op] then return nil end
  local col, lit, op = c[1], c[2], c.op
  if col.tag ~= "col" then col, lit, op = c[2], c[1], FLIP[c.op] end
  if col.tag ~= "col" or col.name ~= rn or lit.tag ~= "lit" or (lit.type ~= "INT" and lit.type ~= "BIGINT") then
    return nil
  end
  local n
  if op == "<=" then n = lit.value
  elseif op == "<" then n = lit.value - 1
  elseif op == "=" then
    if lit.value ~= 1 then
      self:err(start_pos(c), "not supported yet: %s = %d (a rank range that does not start at 1)", rn, lit.value)
    end
    n = 1
  else
    return nil
  end
  if n < 1 then self:err(start_pos(c), "this condition keeps no row: %s starts at 1", rn) end
  return n
end

-- Partition columns whose values the C key_by takes as the Lua key does (one type per column,
-- no -0.0 beside 0.0): integers, strings, booleans.
local C_KEY_TYPES = {INT = true, BIGINT = true, SMALLINT = true, TINYINT = true, STRING = true, VARCHAR = true,
                     CHAR = true, BOOLEAN = true}

-- A deduplication in C (core/ops/wm_sqlrank.h, lower.deduplicate's spec.c) unless a state TTL
-- is set (the keyed operator's rolling mode keeps no TTL) or WMRUN_SQL_RANK=lua: {key_fields =
-- the PARTITION BY fields when each is a column of a C_KEY_TYPES type, else nil (the Lua key);
-- key_nulls when one may be NULL (a NULL is a key of its own, as in the Lua key)}.
local function c_dedup(spec, lspec)
  if lspec.ttl or os.getenv("WMRUN_SQL_RANK") == "lua" then return nil end
  local kf, nulls = {}, false
  for i, c in ipairs(spec.part_cols) do
    if not C_KEY_TYPES[c.type] then kf = nil break end
    kf[i] = c.field or c.name
    if not c.nonnull then nulls = true end
  end
  if kf and #kf == 0 then kf = nil end
  return {key_fields = kf, key_nulls = kf and nulls}
end

-- A Top-N in C (lower.top_n's spec.c), as c_dedup, when every ORDER BY column compares in C as
-- in Lua (numbers, strings, times: not a BOOLEAN) and N is at most 100000.
local function c_topn(spec, lspec)
  if lspec.n > 100000 then return nil end
  for _, t in ipairs(spec.order_types) do if t == "BOOLEAN" then return nil end end
  return c_dedup(spec, lspec)
end

--- Makes the rank that `rel` (from plan_rank_input) carries, for the outer query `q`: its
-- WHERE gives N (the other conditions stay, applied to the result); returns the query
-- without that condition and the updating relation of the rank's results.
function Planner:apply_rank(q, rel)
  local spec = rel.rank
  local rn = spec.rn
  local conj = {}
  local function split(e)
    if e.tag == "bin" and e.op == "AND" then split(e[1]); split(e[2]) else conj[#conj + 1] = e end
  end
  if q.where then split(q.where) end
  local n, rest = nil, nil
  for _, c in ipairs(conj) do
    local b = not n and rank_bound(self, c, rn) or nil
    if b then
      n = b
    else
      if mentions(c, rn) then
        self:err(start_pos(c), "not supported yet: this condition on %s (a Top-N takes one: %s <= N, %s < N or "
          .. "%s = 1)", rn, rn, rn, rn)
      end
      rest = rest and {tag = "bin", op = "AND", pos = c.pos, rest, c} or c
    end
  end
  if not n then
    self:err(spec.pos, "not supported yet: ROW_NUMBER() without a filter on it: the query that reads it needs "
      .. "WHERE %s <= N (Top-N) or %s = 1 (deduplication)", rn, rn)
  end
  -- does the outer query read rn? (Flink's outputRankNumber)
  local with_rn = false
  for _, it in ipairs(q.items) do
    if it.tag == "star" or mentions(it.expr, rn) then with_rn = true end
  end
  for _, g in ipairs(q.group_by or {}) do if mentions(g, rn) then with_rn = true end end
  if q.having and mentions(q.having, rn) then with_rn = true end
  local cols = {}
  for i, c in ipairs(rel.cols) do if with_rn or c.name ~= rn then cols[#cols + 1] = rel.cols[i] end end
  local stream
  local lspec = {parts = spec.parts, orders = spec.orders, visible = spec.visible, n = n,
                 rn = with_rn and rn or nil, ttl = self:state_ttl()}
  if n == 1 and not with_rn and spec.time_order then
    lspec.keep_last = spec.orders[1].desc
    lspec.c = c_dedup(spec, lspec)
    stream = lower.deduplicate(spec.stream, lspec)
  else
    lspec.c = c_topn(spec, lspec)
    stream = lower.top_n(spec.stream, lspec)
  end
  return copy_query(q, {where = rest or false}), rel_of(stream, cols, true)
end

--- A relation that still carries its rank (a ROW_NUMBER query read without a filter on it).
function Planner:check_no_rank(rel)
  if rel.rank then
    self:err(rel.rank.pos, "not supported yet: ROW_NUMBER() without a filter on it: read this query from another "
      .. "one with WHERE %s <= N (Top-N) or %s = 1 (deduplication)", rel.rank.rn, rel.rank.rn)
  end
  return rel
end

return M
