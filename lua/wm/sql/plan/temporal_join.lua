--- Joins with a table `FOR SYSTEM_TIME AS OF` a time attribute of the other (Flink SQL):
--
-- - **event-time temporal join** (`JOIN rates FOR SYSTEM_TIME AS OF o.rt AS r ON o.cur = r.cur`,
--   `o.rt` a rowtime): `rates` is a versioned table, a table with a `PRIMARY KEY` and a
--   `WATERMARK` (each row a new version of its key from its time on) or a view that keeps the
--   last row per key (`ROW_NUMBER() OVER (PARTITION BY k ORDER BY rt DESC) = 1`). Flink's
--   TemporalRowTimeJoinOperator: a probe row waits until the watermark reaches its time, then
--   meets the version of its key valid at its time (the latest at or before it); versions older
--   than the one valid at the watermark go. A keyed co-process function (both sides keyed by the
--   join's keys), the rows and versions in `ctx.state` (checkpointed).
-- - **lookup join** (`JOIN side FOR SYSTEM_TIME AS OF o.p AS s ON ...`, `o.p` a `PROCTIME()`):
--   `side` is a filesystem table read whole at the first probe and again when
--   'lookup.join.cache.ttl' (Flink's filesystem option, 60 min by default) has passed since.
--   In C when it can be (core/ops/wm_sqllookup.h: the table in a C hash table, the key
--   expressions in C, no Lua call per probe row; `c_lookup`), else a flat_map per probe row
--   (WMRUN_SQL_LOOKUP=lua forces it); the cache is not checkpointed (it is read again).
--
-- INNER and LEFT, as Flink. PROCTIME() (minimal: the wall clock when the row is computed, a
-- processing-time attribute for a lookup join) is defined here too.
-- @module wm.sql.plan.temporal_join
local core = require("wm.core")
local wmbase = require("wm.base")
local cexpr = require("wm.sql.cexpr")
local expr = require("wm.sql.expr")
local values = require("wm.sql.values")
local connectors = require("wm.sql.connectors")
local base = require("wm.sql.plan.base")

local Planner, rel_of = base.Planner, base.rel_of
local conjuncts, find_col, start_pos = base.conjuncts, base.find_col, base.start_pos

local M = {}

--- The clock (ms) of PROCTIME() and of a lookup join's cache: the wall clock. A job may put
-- another function here before it runs (the specs drive a lookup join's refresh with one): a
-- lookup join calls it with "lookup", once per probe row.
M.clock = core.wall_ms

values.runtime.proc_clock = function() return M.clock() end

local DEFAULT_TTL = 60 * 60 * 1000 -- Flink's 'lookup.join.cache.ttl' default: 60 min

-- The column references of an expression.
local function each_col(e, fn)
  if type(e) ~= "table" then return end
  if e.tag == "col" then fn(e) return end
  for k, v in pairs(e) do
    if k ~= "pos" and type(v) == "table" then each_col(v, fn) end
  end
end

-- A key value as a string: numbers of any type meet (1 = 1.0), NULL is nil.
local function key_part(v)
  if v == nil then return nil end
  if type(v) == "number" then v = math.tointeger(v) or v return "n:" .. tostring(v) end
  return type(v) .. ":" .. tostring(v)
end

local function key_fn(fns)
  local n = #fns
  return function(r)
    local t = {}
    for i = 1, n do
      local p = key_part(fns[i](r))
      if p == nil then return nil end
      t[i] = p
    end
    return table.concat(t, "\1")
  end
end

-- The joined row of L and R, as wm.sql.plan.join makes it: the left columns, then the right
-- ones (a name the left has renamed id -> id0, reached as r.id), `merge(l, r)` and what
-- resolves `a.x` in the query. The left's time attributes stay ones; the right's do not.
local function joined(self, L, R, aL, aR)
  local cols, names, ambiguous = {}, {}, {}
  local lcopy, rcopy = {}, {}
  local lside = {map = {}, list = {}, rel = L}
  local rside = {map = {}, list = {}, rel = R}
  for _, c in ipairs(L.cols) do
    cols[#cols + 1] = {name = c.name, type = c.type, rowtime = c.rowtime, proctime = c.proctime}
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
    cols[#cols + 1] = {name = out, type = c.type}
    rside.map[c.name] = out
    rside.list[#rside.list + 1] = {name = c.name, out = out}
    rcopy[#rcopy + 1] = {from = c.field or c.name, to = out}
  end
  local quals = {}
  if aL then quals[aL] = lside end
  if aR then quals[aR] = rside end
  local nl, nr = #lcopy, #rcopy
  local function merge(l, r)
    local o = {}
    if l then for i = 1, nl do local x = lcopy[i] o[x.to] = l[x.from] end end
    if r then for i = 1, nr do local x = rcopy[i] o[x.to] = r[x.from] end end
    return o
  end
  local function resolve(n)
    if n.resolved then return n end
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
  local aliases = {["\0join"] = {resolve = resolve, quals = quals, src = self.src}}
  for a in pairs(quals) do aliases[a] = true end
  return {cols = cols, merge = merge, aliases = aliases, quals = quals, lcopy = lcopy, rcopy = rcopy}
end

-- The dedup view `name` (SELECT ... FROM (SELECT ..., ROW_NUMBER() OVER (PARTITION BY k, ...
-- ORDER BY rt DESC) AS rn FROM t) WHERE rn = 1, keeping the last row per key): its keys and its
-- time column, or nil.
local function dedup_view(v)
  local q = v.query
  if not q or q.tag ~= "select" or q.joins or q.group_by or not q.from or q.from.tag ~= "subquery" then return nil end
  local inner = q.from.query
  if not inner or inner.tag ~= "select" then return nil end
  for _, it in ipairs(inner.items or {}) do
    local e = it.expr
    if e and e.tag == "call" and e.name == "ROW_NUMBER" and e.over then
      local o = e.over
      if not o.order or #o.order ~= 1 or not o.order[1].desc or o.order[1].expr.tag ~= "col" then return nil end
      local keys = {}
      for i, p in ipairs(o.partition or {}) do
        if p.tag ~= "col" then return nil end
        keys[i] = p.name
      end
      if #keys == 0 then return nil end
      return {keys = keys, time = o.order[1].expr.name, rn = it.alias}
    end
  end
  return nil
end

-- The keys of the join: the equalities `left expression = right column` of the ON (either
-- way round); the other conditions of the ON, a predicate on the joined row (nil: none).
local function split_on(self, j, L, R, aL, aR, row)
  local function side_of(n)
    if n.qual then
      if n.qual == aR then return "R" end
      if n.qual == aL then return "L" end
      return "L" -- (a ROW column's field, or an unknown table: the left scope says which)
    end
    if find_col(R, n.name) and not find_col(L, n.name) then return "R" end
    return "L"
  end
  local function reads(e)
    local s = {}
    each_col(e, function(n) s[side_of(n)] = true end)
    return s
  end
  local lscope = self:row_scope(L.cols, nil, aL and {[aL] = true} or nil)
  local lfns, rcols, rest, lexprs = {}, {}, {}, {}
  for _, c in ipairs(conjuncts(j.on, {})) do
    local used = false
    if c.tag == "bin" and c.op == "=" then
      for _, o in ipairs({{c[1], c[2]}, {c[2], c[1]}}) do
        local rc, le = o[1], o[2]
        if not used and rc.tag == "col" and side_of(rc) == "R" then
          local s = reads(le)
          if not s.R then
            local col = find_col(R, rc.name)
            if not col then self:err(rc.pos, "unknown column '%s.%s'", rc.qual or aR or "?", rc.name) end
            local f, lt = base.compile_fn(self, le, lscope, start_pos(le))
            local num = expr.NUMERIC[lt] and expr.NUMERIC[col.type]
            if lt ~= "NULL" and lt ~= col.type and not num
              and not (lt:match("^TIMESTAMP") and col.type:match("^TIMESTAMP")) then
              self:err(start_pos(c), "the join compares %s with %s (%s): the keys of a join must be of one type",
                expr.show(lt), col.name, expr.show(col.type))
            end
            lfns[#lfns + 1], rcols[#rcols + 1], lexprs[#lexprs + 1] = f, col, le
            used = true
          end
        end
      end
    end
    if not used then rest[#rest + 1] = c end
  end
  if #lfns == 0 then
    self:err(j.pos, "a join FOR SYSTEM_TIME AS OF needs an equality of the two tables in its ON (o.k = t.k)")
  end
  local cond
  if #rest > 0 then
    local e = rest[1]
    for i = 2, #rest do e = {tag = "bin", op = "AND", pos = rest[i].pos, e, rest[i]} end
    local f, t = base.compile_fn(self, e, self:row_scope(row.cols, nil, row.aliases), start_pos(e))
    if t ~= "BOOLEAN" and t ~= "NULL" then
      self:err(start_pos(e), "the ON condition must be a BOOLEAN, got %s", expr.show(t))
    end
    cond = f
  end
  local rfns = {}
  for i, c in ipairs(rcols) do
    local f = c.field or c.name
    rfns[i] = function(r) return r[f] end
  end
  return key_fn(lfns), key_fn(rfns), rcols, cond, {exprs = lexprs, scope = lscope}
end

--- Plans `q.from JOIN t FOR SYSTEM_TIME AS OF x ON ...` (from wm.sql.plan.join): the joined
-- relation and the query with its WHERE left to apply.
function Planner:plan_system_time_join(q)
  local j = q.joins[1]
  if #q.joins > 1 then
    self:err(q.joins[2].pos, "not supported yet: joins of more than two tables (join two in a view, "
      .. "then join the view with the third)")
  end
  local kind = j.kind
  if kind ~= "inner" and kind ~= "LEFT" then
    self:err(j.pos, "a join FOR SYSTEM_TIME AS OF is INNER or LEFT (Flink's temporal and lookup joins), not %s",
      kind == "comma" and "a comma join" or kind)
  end
  if not j.on then self:err(j.pos, "a join FOR SYSTEM_TIME AS OF needs ON (its keys)") end
  local L = self:join_input(q.from, "left input")
  local aL = L.alias
  local item = j.item
  local aR = item.alias or item.name
  if aL and aL == aR then
    self:err(item.pos, "both tables of the join are called '%s': give one another name (%s AS x)", aL, aR)
  end
  local as_of = item.as_of
  if as_of.tag ~= "col" or (as_of.qual and as_of.qual ~= aL) then
    self:err(as_of.pos, "FOR SYSTEM_TIME AS OF takes a time attribute of the left table (o.rt or o.proc_time)")
  end
  local tc = find_col(L, as_of.name)
  if not tc then self:err(as_of.pos, "unknown column '%s' (FOR SYSTEM_TIME AS OF)", as_of.name) end
  local rel
  if tc.proctime then
    rel = self:lookup_join(q, j, L, aL, aR)
  elseif tc.rowtime then
    if tc.rowtime == "join" then
      self:err(as_of.pos, "not supported yet: FOR SYSTEM_TIME AS OF the time attribute of an interval join's result")
    end
    rel = self:temporal_join(q, j, L, aL, aR, tc)
  else
    self:err(as_of.pos, "FOR SYSTEM_TIME AS OF needs a time attribute: '%s' is neither a rowtime (WATERMARK FOR "
      .. "...: an event-time temporal join) nor PROCTIME() (a lookup join)", as_of.name)
  end
  local q2 = {}
  for k, v in pairs(q) do q2[k] = v end
  q2.joins = nil
  return rel, q2
end

-- The joined relation's scope parts (for the query's items and WHERE).
local function finish(stream, row)
  local rel = rel_of(stream, row.cols, false)
  rel.join = {aliases = row.aliases, quals = row.quals}
  return rel
end

-- wm_ftype of base/wm_value.h (as wm.sql.cexpr's)
local FTYPE = {STRING = 0, INT = 1, BIGINT = 1, TIMESTAMP = 1, TIMESTAMP_LTZ = 1, DOUBLE = 2, BOOLEAN = 3}

-- The lookup join in C (core/ops/wm_sqllookup.h, docs/sql.md "Lookup joins"), or nil when the
-- Lua flat_map runs it: an append-only left input, its ON only equalities (no other
-- condition), every key expression one the C expressions do (wm.sql.cexpr), M.clock the wall
-- clock (a job or spec that replaced it keeps the Lua path: the C operator reads the
-- context's clock, wm_ctx_now).
-- WMRUN_SQL_LOOKUP=lua forces the Lua path. The C operator reads the table with `load` (one
-- Lua call per read) and keeps the Lua path's rows, order, keys (key_part) and refreshes.
local function c_lookup(self, L, R, row, lk, rcols, load, ttl, outer, tname, name)
  if M.force_lua or os.getenv("WMRUN_SQL_LOOKUP") == "lua" or M.clock ~= core.wall_ms or L.updating then
    return nil
  end
  local P = cexpr.program(L.stream, lk.scope, self.src)
  if not P then return nil end
  local lkey = {}
  for i, e in ipairs(lk.exprs) do
    lkey[i] = cexpr.compile(P, e)
    if not lkey[i] then return nil end
  end
  local fields, index = {}, {}
  for i, c in ipairs(R.cols) do
    local f = c.field or c.name
    if index[f] then return nil end
    fields[i], index[f] = f, i
  end
  local rkey = {}
  for i, c in ipairs(rcols) do rkey[i] = index[c.field or c.name] end
  local out, types, k = {}, {}, 0
  for _, x in ipairs(row.lcopy) do
    k = k + 1
    out[k] = {name = x.to, side = 0, from = x.from}
  end
  for _, x in ipairs(row.rcopy) do
    k = k + 1
    out[k] = {name = x.to, side = 1, field = index[x.from]}
  end
  for i, c in ipairs(row.cols) do types[i] = FTYPE[c.type] or 4 end
  if #types ~= k then return nil end
  return wmbase.one_input(L.stream, "sql_lookup", {prog = P.prog, lkey = lkey, fields = fields, rkey = rkey,
    out = out, types = types, outer = outer, ttl = ttl, table = tname, load = load}, name)
end

--- Set to true to force the Lua path of lookup joins in this process (the specs compare both).
M.force_lua = false

--- A lookup join against a filesystem table (Flink's lookup join; the table read whole, as
-- Flink's FileSystemLookupFunction does, again after 'lookup.join.cache.ttl').
function Planner:lookup_join(_q, j, L, aL, aR)
  local item = j.item
  local t = self.tables[item.name]
  if not t then
    if self.views[item.name] then
      self:err(item.pos, "not supported yet: a lookup join against a view ('%s'; a filesystem table is supported)",
        item.name)
    end
    self:err(item.pos, "unknown table '%s'", item.name)
  end
  if t.props.connector ~= "filesystem" or t.from_stream then
    self:err(item.pos, "not supported yet: lookup joins against connector '%s' (table '%s'; the filesystem "
      .. "connector is supported)", tostring(t.props and t.props.connector or "from a stream"), item.name)
  end
  local ttl = DEFAULT_TTL
  local v = t.props["lookup.join.cache.ttl"]
  if v then ttl = self:duration_option("lookup.join.cache.ttl", v, t.props_pos["lookup.join.cache.ttl"]) end
  local R = {cols = {}}
  for i, c in ipairs(t.cols) do R.cols[i] = {name = c.name, type = c.type, field = c.field} end
  local row = joined(self, L, R, aL, aR)
  local lkey, rkey, rcols, cond, lk = split_on(self, j, L, R, aL, aR, row)
  local load = connectors.read_all(self, t)
  local merge, outer = row.merge, j.kind == "LEFT"
  local name = (outer and "left " or "") .. "lookup join (" .. item.name .. ")"
  if not cond then
    local cs = c_lookup(self, L, R, row, lk, rcols, load, ttl, outer, item.name, name)
    if cs then return finish(cs, row) end
  end
  local clock = M -- (M.clock read per probe: a job may replace it)
  local idx, next_load
  local function lookup(k)
    local now = clock.clock("lookup")
    if not idx or now >= next_load then
      idx = {}
      for _, r in ipairs(load()) do
        local rk = rkey(r)
        if rk then
          local b = idx[rk]
          if not b then b = {} idx[rk] = b end
          b[#b + 1] = r
        end
      end
      next_load = now + ttl
    end
    return idx[k]
  end
  local stream = L.stream:flat_map(function(l, emit)
    local k = lkey(l)
    local list = k and lookup(k)
    local any = false
    if list then
      for i = 1, #list do
        local o = merge(l, list[i])
        if not cond or cond(o) == true then
          emit(o)
          any = true
        end
      end
    end
    if outer and not any then emit(merge(l, nil)) end
  end):name(name)
  return finish(stream, row)
end

--- An event-time temporal join against a versioned table (Flink's
-- TemporalRowTimeJoinOperator).
function Planner:temporal_join(_q, j, L, aL, aR, tc)
  local item = j.item
  local name = item.name
  local t, v = self.tables[name], self.views[name]
  local R, keys, time_col
  if t then
    if not t.pkey or not t.rowtime then
      self:err(item.pos, "'%s' is not a versioned table: an event-time temporal join needs a PRIMARY KEY "
        .. "(...) NOT ENFORCED and a WATERMARK on the table (or a view that keeps the last row per key)", name)
    end
    R = self:scan(name, item.pos)
    keys, time_col = t.pkey, t.rowtime
  elseif v then
    local d = dedup_view(v)
    if not d then
      self:err(item.pos, "not supported yet: an event-time temporal join against the view '%s' (a versioned view "
        .. "keeps the last row per key: SELECT ... FROM (SELECT ..., ROW_NUMBER() OVER (PARTITION BY k ORDER BY "
        .. "rt DESC) AS rn FROM t) WHERE rn = 1)", name)
    end
    R = self:scan(name, item.pos)
    keys, time_col = d.keys, d.time
    for _, k in ipairs(keys) do
      if not find_col(R, k) then
        self:err(item.pos, "the view '%s' must keep its key column '%s' (PARTITION BY) to be versioned", name, k)
      end
    end
    if not find_col(R, time_col) then
      self:err(item.pos, "the view '%s' must keep its time column '%s' (ORDER BY) to be versioned", name, time_col)
    end
  else
    self:err(item.pos, "unknown table '%s'", name)
  end
  local row = joined(self, L, R, aL, aR)
  local lkey, rkey, rcols, cond = split_on(self, j, L, R, aL, aR, row)
  -- Flink: the join's keys hold the versioned table's primary key
  local have = {}
  for _, c in ipairs(rcols) do have[c.name] = true end
  for _, k in ipairs(keys) do
    if not have[k] then
      self:err(j.pos, "an event-time temporal join's ON must compare the versioned table's key '%s.%s' (its "
        .. "PRIMARY KEY: %s)", aR, k, table.concat(keys, ", "))
    end
  end
  local rc = find_col(R, time_col)
  local rtime, ltime = rc.field or rc.name, tc.field or tc.name
  local merge, outer, updating = row.merge, j.kind == "LEFT", R.updating
  -- a left row whose key has a NULL meets nothing (LEFT: padded when its time comes); a right
  -- row with a NULL key is no version of anything
  local NOKEY = "\0NULL"
  local ls = L.stream:key_by(function(r) return lkey(r) or NOKEY end)
  local rs = R.stream
  if updating then
    rs = rs:filter(function(e) return e.k ~= "-U" and rkey(e.r) ~= nil end)
    rs = rs:key_by(function(e) return rkey(e.r) end)
  else
    rs = rs:filter(function(r) return rkey(r) ~= nil end):key_by(rkey)
  end
  local function emit_for(l, vs, out)
    -- the version valid at l's time: the latest at or before it (false: deleted)
    local lt, ver = l[ltime], nil
    for i = #vs, 1, -1 do
      if vs[i].t <= lt then ver = vs[i].r break end
    end
    if ver then
      local o = merge(l, ver)
      if not cond or cond(o) == true then out(o) return end
    end
    if outer then out(merge(l, nil)) end
  end
  local stream = ls:connect(rs):process{
    process_element1 = function(l, ctx)
      local st = ctx.state
      local lefts = st.lefts or {}
      lefts[#lefts + 1] = l
      st.lefts = lefts
      ctx.timer_service:register_event_time_timer(l[ltime])
    end,
    process_element2 = function(e, ctx)
      local r, del = e, false
      if updating then r, del = e.r, e.k == "-D" end
      local vt = r[rtime]
      local st = ctx.state
      local vs = st.versions or {}
      -- sorted by time; a version at the time of another replaces it
      local i = #vs
      while i > 0 and vs[i].t > vt do i = i - 1 end
      local ver = {t = vt, r = not del and r or false}
      if i > 0 and vs[i].t == vt then vs[i] = ver else table.insert(vs, i + 1, ver) end
      st.versions = vs
      ctx.timer_service:register_event_time_timer(vt)
    end,
    -- at time t (the watermark reached it): the left rows up to t meet their versions, in
    -- time order (equal times in arrival order); the versions before the one valid at t go
    on_timer = function(now, ctx, out)
      local st = ctx.state
      local vs = st.versions or {}
      local lefts = st.lefts
      if lefts then
        local due, keep = {}, {}
        for i = 1, #lefts do
          local l = lefts[i]
          if l[ltime] <= now then due[#due + 1] = {l = l, i = i} else keep[#keep + 1] = l end
        end
        if #due > 0 then
          table.sort(due, function(a, b)
            local x, y = a.l[ltime], b.l[ltime]
            if x ~= y then return x < y end
            return a.i < b.i
          end)
          for i = 1, #due do emit_for(due[i].l, vs, out) end
          st.lefts = #keep > 0 and keep or nil
        end
      end
      local last = 0
      for i = 1, #vs do if vs[i].t <= now then last = i end end
      if last > 1 then
        local nv = {}
        for i = last, #vs do nv[#nv + 1] = vs[i] end
        vs = nv
        st.versions = vs
      end
      -- a deleted key whose deletion is the only version left holds nothing
      if #vs == 1 and vs[1].r == false and vs[1].t <= now then st.versions = nil end
    end,
  }:name((outer and "left " or "") .. "temporal join (" .. name .. ")")
  return finish(stream, row)
end

return M
