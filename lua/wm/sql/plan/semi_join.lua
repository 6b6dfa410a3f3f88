--- Semi and anti window joins (Flink SQL's, over window table functions): a query over a
-- window TVF's rows whose WHERE has `[NOT] EXISTS (SELECT ... FROM <window TVF> R WHERE
-- L.window_start = R.window_start AND L.window_end = R.window_end [AND L.k = R.k ...])` or
-- `L.k IN (SELECT R.k FROM ... WHERE <the same window equalities>)`. A left row is kept
-- (SEMI) or dropped (ANTI) when its window holds a row of the subquery with its keys; it
-- comes out when the window fires, as the window join's rows do (wm.sql.plan.join), once
-- per window it belongs to, with the left's columns only.
-- @module wm.sql.plan.semi_join
local expr = require("wm.sql.expr")
local base = require("wm.sql.plan.base")
local windows = require("wm.windows")

local Planner, rel_of = base.Planner, base.rel_of
local conjuncts, and_of, find_col = base.conjuncts, base.and_of, base.find_col

local M = {}

-- The subquery conjunct of a WHERE: the node, whether it is negated.
local function subquery_of(c)
  local node, neg = c, false
  if c.tag == "un" and c.op == "NOT" then node, neg = c[1], true end
  if node.tag == "exists" or node.tag == "in_query" then return node, neg end
  return nil
end

--- True when a WHERE has an EXISTS or IN (SELECT ...) conjunct (a semi or anti join).
function M.has_subquery(where)
  for _, c in ipairs(conjuncts(where, {})) do if subquery_of(c) then return true end end
  return false
end

local WBOUND = {window_start = "start", window_end = "end"}

--- Plans a query whose WHERE has an EXISTS / IN (SELECT ...) conjunct: the semi or anti window
-- join's relation and the query with the rest of its WHERE.
function Planner:plan_semi_join(q)
  local sub, anti, rest = nil, false, {}
  for _, c in ipairs(conjuncts(q.where, {})) do
    local node, neg = subquery_of(c)
    if node and not sub then
      sub = node
      anti = neg ~= (node.neg or false)
      if node.tag == "in_query" and anti then
        self:err(node.pos, "not supported yet: NOT IN (SELECT ...) (its rules for NULL; write NOT EXISTS (SELECT "
          .. "... WHERE L.x = R.x AND ...))")
      end
    else
      rest[#rest + 1] = c
    end
  end
  local sq = sub.query
  if sq.tag ~= "select" or sq.joins or sq.group_by or sq.lateral or sq.distinct or sq.having then
    self:err(sub.pos, "not supported yet: this subquery (a semi or anti window join takes SELECT ... FROM a "
      .. "window table function WHERE its window and keys equal the outer query's)")
  end
  local L = self:join_input(q.from, "left input")
  local R = self:join_input(sq.from, "right input")
  local aL, aR = L.alias, R.alias
  if aL and aL == aR then
    self:err(sq.from.pos, "both tables of the join are called '%s': give one another name (%s AS x)", aL, aR)
  end
  -- a column of the subquery's conditions: the subquery's table first (its scope is inner)
  local function side_of(n)
    if n.tag ~= "col" then return nil end
    if n.qual then
      if n.qual == aR then return "R", find_col(R, n.name) end
      if n.qual == aL then return "L", find_col(L, n.name) end
      return nil
    end
    local c = find_col(R, n.name)
    if c then return "R", c end
    c = find_col(L, n.name)
    if c then return "L", c end
  end
  local reads_L
  reads_L = function(e)
    if type(e) ~= "table" then return false end
    if e.tag == "col" then return (side_of(e)) == "L" end
    for k, v in pairs(e) do if k ~= "pos" and type(v) == "table" and reads_L(v) then return true end end
    return false
  end
  local lkeys, rkeys, rfilters = {}, {}, {}
  local ws_eq, we_eq
  local function key_pair(pos, lc, rc)
    local b1, b2 = lc.wbound or WBOUND[lc.name], rc.wbound or WBOUND[rc.name]
    if b1 == "start" and b2 == "start" then ws_eq = ws_eq or pos return end
    if b1 == "end" and b2 == "end" then we_eq = we_eq or pos return end
    local num = expr.NUMERIC[lc.type] and expr.NUMERIC[rc.type]
    if lc.type ~= rc.type and not num and not (lc.type:match("^TIMESTAMP") and rc.type:match("^TIMESTAMP")) then
      self:err(pos, "the join compares %s (%s) with %s (%s): the keys of a join must be of one type",
        lc.name, expr.show(lc.type), rc.name, expr.show(rc.type))
    end
    lkeys[#lkeys + 1], rkeys[#rkeys + 1] = lc, rc
  end
  for _, c in ipairs(conjuncts(sq.where, {})) do
    local s1, c1, s2, c2
    if c.tag == "bin" and c.op == "=" then
      s1, c1 = side_of(c[1])
      s2, c2 = side_of(c[2])
    end
    if s1 and s2 and s1 ~= s2 then
      if s1 == "R" then c1, c2 = c2, c1 end
      key_pair(c[1].pos, c1, c2)
    elseif reads_L(c) then
      self:err(c.pos, "not supported yet: a condition of the subquery on both tables other than an equality of "
        .. "their columns (a semi or anti window join)")
    else
      rfilters[#rfilters + 1] = c
    end
  end
  if sub.tag == "in_query" then
    local it = sq.items
    if #it ~= 1 or it[1].tag ~= "item" then
      self:err(sq.pos, "IN (SELECT ...) takes a query of one column")
    end
    local s1, lc = side_of(sub[1])
    local s2, rc = side_of(it[1].expr)
    if s1 ~= "L" or s2 ~= "R" then
      self:err(sub.pos, "not supported yet: IN (SELECT ...) other than a column of the outer table IN (SELECT a "
        .. "column of the subquery's ...)")
    end
    key_pair(sub.pos, lc, rc)
  end
  if not (ws_eq and we_eq) then
    self:err(sub.pos, "a semi or anti window join needs both L.window_start = R.window_start and L.window_end = "
      .. "R.window_end in its subquery")
  end
  local w1, w2 = L.window, R.window
  if not w1 or not w2 then
    self:err(sub.pos, "not supported yet: window joins of inputs that are not window table functions (the %s "
      .. "input is not TABLE(TUMBLE(...)) nor a query passing its window_start and window_end through)",
      w1 and "right" or "left")
  end
  if w1.kind ~= w2.kind or w1.size ~= w2.size or w1.slide ~= w2.slide then
    self:err(sub.pos, "the two inputs of a window join must have the same windows (here %s of %d ms and %s of %d ms)",
      w1.kind, w1.size, w2.kind, w2.size)
  end
  -- the subquery's own conditions filter its rows first
  local rs = R.stream
  if #rfilters > 0 then
    local e = and_of(rfilters)
    local f, t = base.compile_fn(self, e, self:row_scope(R.cols, nil, aR and {[aR] = true} or nil), e.pos)
    if t ~= "BOOLEAN" and t ~= "NULL" then self:err(e.pos, "WHERE needs a BOOLEAN condition, got %s", expr.show(t)) end
    rs = rs:filter(function(r) return f(r) == true end):name("subquery WHERE")
  end
  -- keys: one string (type and value of each; numbers of two types meet), NULL meets nothing
  local function key_of(list)
    local n, fields = #list, {}
    for i, c in ipairs(list) do fields[i] = c.field or c.name end
    return function(r)
      local t = {}
      for i = 1, n do
        local v = r[fields[i]]
        if v == nil then return "\0NULL" end
        if type(v) == "number" then v = math.tointeger(v) or v end
        t[i] = type(v) .. ":" .. tostring(v)
      end
      return table.concat(t, "\1")
    end
  end
  local assigner, lend, rend = windows.tumbling(w1.size), nil, nil
  if w1.kind ~= "tumble" then
    -- HOP, CUMULATE: as wm.sql.plan.join's window join, each sliding window keeps the rows
    -- of its own window
    assigner = windows.sliding(w1.size, w1.slide)
    local function end_field(rel)
      for _, c in ipairs(rel.cols) do if c.wbound == "end" then return c.field or c.name end end
      return (find_col(rel, "window_end") or {}).field or "window_end"
    end
    lend, rend = end_field(L), end_field(R)
  end
  local function count_in(list, field, stop)
    if not field then return #list end
    local n = 0
    for i = 1, #list do if list[i][field] == stop then n = n + 1 end end
    return n
  end
  local stream = L.stream:co_group(rs):where(key_of(lkeys)):equal_to(key_of(rkeys)):window(assigner)
    :apply(function(key, lefts, rights, out, win)
      local meet = key ~= "\0NULL" and count_in(rights, rend, win.stop) > 0
      if meet == anti then return end
      for i = 1, #lefts do
        local l = lefts[i]
        if not lend or l[lend] == win.stop then out(l) end
      end
    end):name((anti and "anti" or "semi") .. " window join")
  local cols = {}
  for i, c in ipairs(L.cols) do cols[i] = {name = c.name, type = c.type, field = c.field} end
  local rel = rel_of(stream, cols, false)
  rel.alias = aL
  local q2 = {}
  for k, v in pairs(q) do q2[k] = v end
  q2.where = and_of(rest)
  return rel, q2
end

return M
