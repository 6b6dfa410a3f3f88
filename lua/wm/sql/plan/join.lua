--- Joins in FROM: `FROM a, b WHERE ...` and `FROM a [INNER] JOIN b ON ...`. An inner join whose
-- condition bounds one table's time attribute by the other's on both sides (Flink SQL's
-- interval join: `a.ts BETWEEN b.ts - INTERVAL '5' MINUTE AND b.ts + INTERVAL '5' MINUTE`, or
-- `>=`/`>`/`<=`/`<` pairs) runs on the DataStream interval join (wm.interval_join), keyed by
-- the equalities of the two tables' columns. A join without such bounds, or with an updating
-- input, is a regular join (wm.sql.plan.regular_join). The other joins are `not supported yet`
-- at the join's position (docs/sql.md, "Joins").
-- @module wm.sql.plan.join
local expr = require("wm.sql.expr")
local base = require("wm.sql.plan.base")
local from = require("wm.sql.plan.from")
local lower = require("wm.sql.plan.lower")
local regular_join = require("wm.sql.plan.regular_join")
local windows = require("wm.windows")
require("wm.sql.plan.temporal_join") -- (FOR SYSTEM_TIME AS OF: Planner:plan_system_time_join)

local Planner, rel_of = base.Planner, base.rel_of
local conjuncts, and_of, start_pos, find_col = base.conjuncts, base.and_of, base.start_pos, base.find_col

local M = {}

local FLIP = {["<"] = ">", ["<="] = ">=", [">"] = "<", [">="] = "<="}
local WBOUND = {window_start = "start", window_end = "end"}

-- The side of the join: not updating, its window TVF made into rows, not ranked.
function Planner:join_input(f, what)
  local rel = self:plan_from(f)
  if rel.tvf then
    local alias = rel.alias
    rel = from.materialize_tvf(rel)
    rel.alias = alias
  end
  if rel.rank then self:check_no_rank(rel) end
  rel.join_pos, rel.join_what = f.pos, what -- (an updating input: a regular join, wm.sql.plan.regular_join)
  return rel
end

--- Plans `q.from` joined with `q.joins[1]`: the joined relation and the query with the
-- conditions left over (those of ON and WHERE that are not the join's keys and time bounds)
-- as its WHERE.
function Planner:plan_join(q)
  local j = q.joins[1]
  if j.item.as_of then return self:plan_system_time_join(q) end -- (wm.sql.plan.temporal_join)
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
      -- a window aggregate's window_end: the row's time + 1 ms (wm.sql.plan.aggregate)
      if c.ts_offset and not side.rel.updating then return side, c, c.ts_offset end
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

  -- (for an inner join a condition of ON and one of WHERE mean the same; an outer join takes
  -- only equalities in ON)
  local all = conjuncts(j.on, {})
  local on_n = #all
  conjuncts(q.where, all)
  local outer = j.kind ~= "comma" and j.kind ~= "inner" and j.kind
  local rest, rest_on = {}, nil
  local lkeys, rkeys, key_pos = {}, {}, {}
  local dlo, dhi -- bounds of left.ts - right.ts, in ms, inclusive
  local times = {} -- the time attribute of each side the bounds use
  local ws_eq, we_eq -- the positions of L.window_start = R.window_start, of ... window_end
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
  for i, c in ipairs(all) do
    local used = false
    -- (an outer join's WHERE filters its result: no keys, bounds nor windows there)
    local where_of_outer = outer and i > on_n
    if where_of_outer then
      used = false
    elseif c.tag == "bin" and c.op == "=" then
      local s1, c1 = ref(c[1])
      local s2, c2 = ref(c[2])
      if s1 and s2 and s1 ~= s2 then
        if s1 == rside then c1, c2 = c2, c1 end
        -- (a window's bounds: window_start and window_end, or a window aggregate's under other names)
        local b1, b2 = c1.wbound or WBOUND[c1.name], c2.wbound or WBOUND[c2.name]
        if b1 == "start" and b2 == "start" then
          ws_eq = ws_eq or c[1].pos
        elseif b1 == "end" and b2 == "end" then
          we_eq = we_eq or c[1].pos
        else
          lkeys[#lkeys + 1], rkeys[#rkeys + 1], key_pos[#key_pos + 1] = c1, c2, c[1].pos
        end
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
    if not used then
      rest[#rest + 1] = c
      if i <= on_n then rest_on = rest_on or c end
    end
  end
  local wjoin = ws_eq or we_eq
  -- a regular join (wm.sql.plan.regular_join): no time bounds on both sides, or an updating input
  local regular = not wjoin and (not dlo or not dhi or L.updating or R.updating) and true or false
  local on_rest
  if regular then
    lkeys, rkeys, key_pos, rest, on_rest = regular_join.classify(all, on_n, outer, ref, rside)
  end
  if wjoin then
    for _, x in ipairs{L, R} do
      if x.updating then
        self:err(x.join_pos, "not supported yet: window joins of an updating input (the %s of the join is the "
          .. "result of a GROUP BY, a deduplication or a Top-N)", x.join_what)
      end
    end
    local w1, w2 = L.window, R.window
    if not (ws_eq and we_eq) then
      self:err(wjoin, "a window join needs both L.window_start = R.window_start and L.window_end = R.window_end")
    end
    if not w1 or not w2 then
      self:err(wjoin, "not supported yet: window joins of inputs that are not window table functions (the %s "
        .. "input is not TABLE(TUMBLE(...)) nor a query passing its window_start and window_end through)",
        w1 and "right" or "left")
    end
    if w1.kind ~= w2.kind or w1.size ~= w2.size or w1.slide ~= w2.slide then
      self:err(wjoin, "the two inputs of a window join must have the same windows (here %s of %d ms and %s of %d ms)",
        w1.kind, w1.size, w2.kind, w2.size)
    end
    if dlo or dhi then
      self:err(j.pos, "not supported yet: a time condition beside the windows of a window join")
    end
    if outer and rest_on then
      self:err(start_pos(rest_on), "not supported yet: a condition other than equalities in the ON of an outer window "
        .. "join (put it in WHERE to filter the joined rows)")
    end
  elseif outer and not regular and rest_on then
    self:err(start_pos(rest_on), "not supported yet: a condition other than equalities and the time bounds in the "
      .. "ON of an outer interval join (put it in WHERE to filter the joined rows)")
  end
  if not wjoin and not regular and dlo > dhi then
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
  local keep_left = outer == "LEFT" or outer == "FULL"
  local keep_right = outer == "RIGHT" or outer == "FULL"
  local lnull, rnull -- an outer side's rows with a NULL key: they meet nothing, padded at once
  if #kfields > 0 and not wjoin and not regular then
    if keep_left then
      local ok = no_null(1)
      lnull = ls:filter(function(r) return not ok(r) end):name("join key NULL (left)")
    end
    if keep_right then
      local ok = no_null(2)
      rnull = rs:filter(function(r) return not ok(r) end):name("join key NULL (right)")
    end
    ls = ls:filter(no_null(1)):name("join keys not NULL (left)")
    rs = rs:filter(no_null(2)):name("join keys not NULL (right)")
  end
  local nl, nr = #lcopy, #rcopy
  local function merge(l, r)
    local o = {}
    if l then for i = 1, nl do local x = lcopy[i] o[x.to] = l[x.from] end end
    if r then for i = 1, nr do local x = rcopy[i] o[x.to] = r[x.from] end end
    return o
  end
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
  local joined
  local updating = false
  if regular then
    joined, updating = self:regular_join{L = L, R = R, lfns = lfns, rfns = rfns, kfields = kfields, merge = merge,
                                         outer = outer, on_rest = on_rest, cols = cols, aliases = aliases,
                                         lcopy = lcopy, rcopy = rcopy}
    for _, c in ipairs(cols) do c.rowtime = nil end -- (as in Flink: a regular join's result has no time attribute)
  elseif wjoin then
    joined = self:window_join(L, R, {lfns = lfns, rfns = rfns, kfields = kfields, merge = merge, outer = outer})
    for _, c in ipairs(cols) do c.rowtime = nil end
  else
    -- the right row r meets the left row l when dlo <= l.ts - r.ts <= dhi; the output
    -- watermark is held back by max(-dlo, dhi), as Flink SQL's interval join (its
    -- TimeIntervalJoin's getMaxOutputDelay: an outer side's row padded when the watermark
    -- passes its bound still comes before the watermark it is behind)
    local ij = ls:key_by(lower.key_fn(lfns)):interval_join(rs:key_by(lower.key_fn(rfns)))
      :between(-dhi, -dlo)
    ij:_outer(keep_left, keep_right, math.max(-dlo, dhi))
    joined = ij:process(function(l, r, _, out) out(merge(l, r)) end)
    if outer then joined:name(outer:lower() .. " outer interval join") end
    if lnull then joined = joined:union(lnull:map(function(l) return merge(l, nil) end)) end
    if rnull then joined = joined:union(rnull:map(function(r) return merge(nil, r) end)) end
  end
  local rel = rel_of(joined, cols, updating)

  rel.join = {aliases = aliases, quals = quals}

  local q2 = {}
  for k, v in pairs(q) do q2[k] = v end
  q2.where, q2.joins = and_of(rest), nil
  return rel, q2
end

--- A window join of two window TVFs' rows (TUMBLE: each row's window is the tumbling window of
-- its time; HOP, CUMULATE: sliding windows, below): a co-group per key and window, fired when
-- the watermark passes the window's end,
-- as Flink's WindowJoinOperator. Rows of a window that fired are late: dropped and counted by
-- the window operator. INNER gives every pair; LEFT/RIGHT/FULL also the rows of a side that
-- met nothing, the other side's columns NULL. A row with a NULL key meets nothing.
function Planner.window_join(_self, L, R, spec)
  local kfields, merge, outer = spec.kfields, spec.merge, spec.outer
  local keep_left = outer == "LEFT" or outer == "FULL"
  local keep_right = outer == "RIGHT" or outer == "FULL"
  local nk = #kfields
  local function null_key(row, side)
    for i = 1, nk do if row[kfields[i][side]] == nil then return true end end
    return false
  end
  -- the key: one string (type and value of each key column), so that a NULL key (a row of an
  -- outer join that meets nothing) is of the keys' type
  local function key_of(fns)
    return function(r)
      local t = {}
      for i = 1, nk do
        local v = fns[i](r)
        t[i] = v == nil and "\0NULL" or type(v) .. ":" .. tostring(v)
      end
      return table.concat(t, "\1")
    end
  end
  local w = L.window
  local assigner, only = windows.tumbling(w.size), nil
  if w.kind ~= "tumble" then
    -- HOP and CUMULATE: the rows come once per window they belong to (window_start,
    -- window_end); the sliding windows of the same slide (CUMULATE: of its step) that end
    -- where they end fire when Flink's window join fires them, and each keeps the copies of
    -- its own window: those whose window_end is its end
    assigner = windows.sliding(w.size, w.slide)
    local function end_field(rel)
      for _, c in ipairs(rel.cols) do if c.wbound == "end" then return c.field or c.name end end
      return (find_col(rel, "window_end") or {}).field or "window_end"
    end
    local lend, rend = end_field(L), end_field(R)
    only = function(list, field, stop)
      local t = {}
      for i = 1, #list do local r = list[i] if r[field] == stop then t[#t + 1] = r end end
      return t
    end
    only = {fn = only, l = lend, r = rend}
  end
  return L.stream:co_group(R.stream):where(key_of(spec.lfns)):equal_to(key_of(spec.rfns))
    :window(assigner)
    :apply(function(_, lefts, rights, out, win)
      if only then
        lefts, rights = only.fn(lefts, only.l, win.stop), only.fn(rights, only.r, win.stop)
      end
      local nl, nr = #lefts, #rights
      -- (rows of one group have equal keys: a NULL in one is a NULL in all)
      local meet = nl > 0 and nr > 0 and not null_key(lefts[1], 1)
      if meet then
        for i = 1, nl do
          local l = lefts[i]
          for k = 1, nr do out(merge(l, rights[k])) end
        end
        return
      end
      if keep_left then for i = 1, nl do out(merge(lefts[i], nil)) end end
      if keep_right then for i = 1, nr do out(merge(nil, rights[i])) end end
    end)
end

return M
