--- Joins in FROM: `FROM a, b WHERE ...` and `FROM a [INNER] JOIN b ON ...`. An inner join whose
-- condition bounds one table's time attribute by the other's on both sides (Flink SQL's
-- interval join: `a.ts BETWEEN b.ts - INTERVAL '5' MINUTE AND b.ts + INTERVAL '5' MINUTE`, or
-- `>=`/`>`/`<=`/`<` pairs) runs on the DataStream interval join (wm.interval_join), keyed by
-- the equalities of the two tables' columns. The other joins are `not supported yet` at the
-- join's position (docs/sql.md, "Joins").
-- @module wm.sql.plan.join
local expr = require("wm.sql.expr")
local base = require("wm.sql.plan.base")
local from = require("wm.sql.plan.from")
local lower = require("wm.sql.plan.lower")

local Planner, rel_of = base.Planner, base.rel_of

local M = {}

-- The conjuncts of an AND tree, in order.
local function conjuncts(e, out)
  if e == nil then return out end
  if e.tag == "bin" and e.op == "AND" then
    conjuncts(e[1], out)
    conjuncts(e[2], out)
  else
    out[#out + 1] = e
  end
  return out
end

local function and_of(list)
  local e = list[1]
  for i = 2, #list do e = {tag = "bin", op = "AND", pos = list[i].pos, e, list[i]} end
  return e
end

local FLIP = {["<"] = ">", ["<="] = ">=", [">"] = "<", [">="] = "<="}

local function find_col(rel, name)
  for _, c in ipairs(rel.cols) do if c.name == name then return c end end
end

-- The side of the join: not updating, its window TVF made into rows, not ranked.
function Planner:join_input(f, what)
  local rel = self:plan_from(f)
  if rel.tvf then
    local alias = rel.alias
    rel = from.materialize_tvf(rel)
    rel.alias = alias
  end
  if rel.rank then self:check_no_rank(rel) end
  if rel.updating then
    self:err(f.pos, "not supported yet: joins of an updating input (the %s of the join is the result of a "
      .. "GROUP BY, a deduplication or a Top-N: regular joins with retractions)", what)
  end
  return rel
end

--- Plans `q.from` joined with `q.joins[1]`: the joined relation and the query with the
-- conditions left over (those of ON and WHERE that are not the join's keys and time bounds)
-- as its WHERE.
function Planner:plan_join(q)
  local j = q.joins[1]
  if #q.joins > 1 then
    self:err(q.joins[2].pos, "not supported yet: joins of more than two tables (join two in a view, "
      .. "then join the view with the third)")
  end
  local L = self:join_input(q.from, "left input")
  local R = self:join_input(j.item, "right input")
  local aL, aR = L.alias, R.alias
  if aL and aL == aR then
    self:err(j.item.pos, "both tables of the join are called '%s': give one another name (%s AS x)", aL, aR)
  end

  -- the joined row: the left columns, then the right ones; a right column whose name the left
  -- has is renamed as Flink does (id -> id0), and only its qualified name reaches it
  local cols, names, ambiguous = {}, {}, {}
  local lcopy, rcopy = {}, {}
  local lside = {map = {}, list = {}, rel = L}
  local rside = {map = {}, list = {}, rel = R}
  for _, c in ipairs(L.cols) do
    cols[#cols + 1] = {name = c.name, type = c.type, rowtime = c.rowtime and "join" or nil}
    names[c.name] = true
    lside.map[c.name] = c.name
    lside.list[#lside.list + 1] = {name = c.name, out = c.name}
    lcopy[#lcopy + 1] = {from = c.field or c.name, to = c.name}
  end
  for _, c in ipairs(R.cols) do
    local out, n = c.name, 0
    if names[out] then ambiguous[c.name] = true end
    while names[out] do out = c.name .. n; n = n + 1 end
    names[out] = true
    cols[#cols + 1] = {name = out, type = c.type, rowtime = c.rowtime and "join" or nil}
    rside.map[c.name] = out
    rside.list[#rside.list + 1] = {name = c.name, out = out}
    rcopy[#rcopy + 1] = {from = c.field or c.name, to = out}
  end
  local quals = {}
  if aL then quals[aL] = lside end
  if aR then quals[aR] = rside end

  -- what a column reference of the condition is: its side and column, or nil
  local function ref(e)
    if e.tag ~= "col" then return nil end
    if e.qual then
      local side = quals[e.qual]
      if not side then return nil end
      local c = find_col(side.rel, e.name)
      return c and side, c
    end
    local cl, cr = find_col(L, e.name), find_col(R, e.name)
    if cl and cr then return nil end
    if cl then return lside, cl end
    if cr then return rside, cr end
  end
  -- a time attribute plus a constant: `b.ts`, `b.ts - INTERVAL '5' MINUTE`, `b.ts + INTERVAL ...`
  local function time_term(e)
    local side, c = ref(e)
    if side then
      if c.rowtime then return side, c, 0 end
      return nil
    end
    if e.tag == "bin" and (e.op == "+" or e.op == "-") then
      local s, col, off = time_term(e[1])
      local iv = e[2]
      if s and iv.tag == "interval" and iv.ms then return s, col, off + (e.op == "+" and iv.ms or -iv.ms) end
      if e.op == "+" and e[1].tag == "interval" and e[1].ms then
        s, col, off = time_term(e[2])
        if s then return s, col, off + e[1].ms end
      end
    end
    return nil
  end

  -- (for an inner join a condition of ON and one of WHERE mean the same)
  local all = conjuncts(q.where, conjuncts(j.on, {}))
  local rest = {}
  local lkeys, rkeys, key_pos = {}, {}, {}
  local dlo, dhi -- bounds of left.ts - right.ts, in ms, inclusive
  local times = {} -- the time attribute of each side the bounds use
  local window_eq
  local function bound(pos, p, pc, poff, op, q_, qc, qoff)
    -- p.ts + poff  op  q.ts + qoff
    for _, x in ipairs{{p, pc}, {q_, qc}} do
      local prev = times[x[1]]
      if prev and prev ~= x[2] then
        self:err(pos, "not supported yet: an interval join on two time attributes of one table ('%s' and '%s')",
          prev.name, x[2].name)
      end
      times[x[1]] = x[2]
    end
    local v
    if p == lside then
      v = qoff - poff
    else
      op, v = FLIP[op], poff - qoff
    end
    if op == ">=" or op == ">" then
      if op == ">" then v = v + 1 end
      if not dlo or v > dlo then dlo = v end
    else
      if op == "<" then v = v - 1 end
      if not dhi or v < dhi then dhi = v end
    end
  end
  for _, c in ipairs(all) do
    local used = false
    if c.tag == "bin" and c.op == "=" then
      local s1, c1 = ref(c[1])
      local s2, c2 = ref(c[2])
      if s1 and s2 and s1 ~= s2 then
        if s1 == rside then c1, c2 = c2, c1 end
        if c1.name == "window_start" and c2.name == "window_start" then window_eq = c[1].pos end
        lkeys[#lkeys + 1], rkeys[#rkeys + 1], key_pos[#key_pos + 1] = c1, c2, c[1].pos
        used = true
      end
    elseif c.tag == "between" and not c.neg then
      local s, col, off = time_term(c[1])
      local s1, c1, o1 = time_term(c[2])
      local s2, c2, o2 = time_term(c[3])
      if s and s1 and s2 and s1 == s2 and s1 ~= s and c1 == c2 then
        bound(c.pos, s, col, off, ">=", s1, c1, o1)
        bound(c.pos, s, col, off, "<=", s2, c2, o2)
        used = true
      end
    elseif c.tag == "bin" and FLIP[c.op] then
      local s1, c1, o1 = time_term(c[1])
      local s2, c2, o2 = time_term(c[2])
      if s1 and s2 and s1 ~= s2 then
        bound(c.pos, s1, c1, o1, c.op, s2, c2, o2)
        used = true
      end
    end
    if not used then rest[#rest + 1] = c end
  end
  if window_eq then
    self:err(window_eq, "not supported yet: window joins (ON L.window_start = R.window_start AND "
      .. "L.window_end = R.window_end ...)")
  end
  if not dlo or not dhi then
    self:err(j.pos, "not supported yet: regular joins (this join has no time condition that bounds one "
      .. "table's time attribute by the other's on both sides; an interval join needs one: "
      .. "a.ts BETWEEN b.ts - INTERVAL '5' MINUTE AND b.ts + INTERVAL '5' MINUTE)")
  end
  if dlo > dhi then
    self:err(j.pos, "the interval join's time condition never holds: it asks for %d ms <= %s%s - %s%s <= %d ms",
      dlo, aL and aL .. "." or "", times[lside].name, aR and aR .. "." or "", times[rside].name, dhi)
  end

  -- keys: of one type on both sides (numbers of two types meet as floats)
  local lfns, rfns, kfields = {}, {}, {}
  for i, lc in ipairs(lkeys) do
    local rc = rkeys[i]
    local lt, rt = lc.type, rc.type
    local num = expr.NUMERIC[lt] and expr.NUMERIC[rt]
    if lt ~= rt and not num and not (lt:match("^TIMESTAMP") and rt:match("^TIMESTAMP")) then
      self:err(key_pos[i], "the join compares %s (%s) with %s (%s): the keys of a join must be of one type",
        lc.name, expr.show(lt), rc.name, expr.show(rt))
    end
    local lf, rf = lc.field or lc.name, rc.field or rc.name
    kfields[i] = {lf, rf}
    if num and lt ~= rt then
      lfns[i] = function(r) return r[lf] + 0.0 end
      rfns[i] = function(r) return r[rf] + 0.0 end
    else
      lfns[i] = function(r) return r[lf] end
      rfns[i] = function(r) return r[rf] end
    end
  end
  -- a NULL key equals nothing: such rows never meet (an inner join), so they go before the join
  local function no_null(k)
    return function(r)
      for i = 1, #kfields do if r[kfields[i][k]] == nil then return false end end
      return true
    end
  end
  local ls, rs = L.stream, R.stream
  if #kfields > 0 then
    ls = ls:filter(no_null(1)):name("join keys not NULL (left)")
    rs = rs:filter(no_null(2)):name("join keys not NULL (right)")
  end
  local nl, nr = #lcopy, #rcopy
  local joined = ls:key_by(lower.key_fn(lfns)):interval_join(rs:key_by(lower.key_fn(rfns)))
    -- the right row r meets the left row l when dlo <= l.ts - r.ts <= dhi
    :between(-dhi, -dlo)
    :process(function(l, r, _, out)
      local o = {}
      for i = 1, nl do local x = lcopy[i] o[x.to] = l[x.from] end
      for i = 1, nr do local x = rcopy[i] o[x.to] = r[x.from] end
      out(o)
    end)
  local rel = rel_of(joined, cols, false)

  local src = self.src
  local function resolve(n)
    if n.resolved then return n end -- a column of `*`: the joined row's
    if n.qual then
      local side = quals[n.qual]
      if not side then
        self:err(n.pos, "unknown table '%s' (in %s.%s; the join's tables are %s)", n.qual, n.qual, n.name,
          table.concat({aL or "?", aR or "?"}, " and "))
      end
      local out = side.map[n.name]
      if not out then self:err(n.pos, "unknown column '%s.%s'", n.qual, n.name) end
      return {tag = "col", name = out, pos = n.pos, resolved = true}
    end
    if ambiguous[n.name] then
      self:err(n.pos, "column '%s' is ambiguous: both tables of the join have it (write %s.%s or %s.%s)", n.name,
        aL or "?", n.name, aR or "?", n.name)
    end
    return n
  end
  local aliases = {["\0join"] = {resolve = resolve, quals = quals, src = src}}
  for a in pairs(quals) do aliases[a] = true end
  rel.join = {aliases = aliases, quals = quals}

  local q2 = {}
  for k, v in pairs(q) do q2[k] = v end
  q2.where, q2.joins = and_of(rest), nil
  return rel, q2
end

return M
