--- OVER aggregations (Flink's OverAggregate on event time): items
-- `agg(...) [FILTER (WHERE ...)] OVER (PARTITION BY k ORDER BY rt {ROWS|RANGE} BETWEEN
-- {n|INTERVAL ...|UNBOUNDED} PRECEDING AND CURRENT ROW)`.
--
-- Every row gets the aggregates of its frame: with ROWS the row and the n rows before it in
-- time order (rows of one time in their order of arrival), with RANGE every row whose time is
-- within the interval before its own, the rows of the same time (its peers) included, so that
-- peers get one result. A row is emitted when the watermark passes its time, the rows of a
-- key in time order (Flink's RowTime*PrecedingFunction); a row whose time is at or below the
-- operator's watermark when it arrives is late: dropped, and counted on the operator's side
-- output `late` (`wmrun_side_output_records_total{output="late"}`, the `side out` column of
-- `--metrics`). Without a frame the window is RANGE BETWEEN UNBOUNDED PRECEDING AND CURRENT
-- ROW, as in Flink. The rows waiting for the watermark, the aggregates' states and the rows
-- of a bounded frame are the keyed process function's `ctx.state` (checkpointed).
--
-- Over an updating input (a changelog), `ROWS BETWEEN n PRECEDING AND CURRENT ROW` is a
-- materialized view instead (M.over_changelog): ordered by any column, no watermark, each
-- row's aggregates kept exact as rows are inserted and retracted.
-- @module wm.sql.plan.over
local expr = require("wm.sql.expr")
local aggs = require("wm.sql.aggs")
local errors = require("wm.sql.errors")
local base = require("wm.sql.plan.base")
local lower = require("wm.sql.plan.lower")

local M = {}
local Planner, rel_of, compile_fn = base.Planner, base.rel_of, base.compile_fn

local NULL_KEY = "\0<NULL>"

-- Calls fn(node) on every OVER aggregate call (not ROW_NUMBER) in e.
local function each_over(e, fn)
  if type(e) ~= "table" then return end
  if e.tag == "call" and e.over and e.name ~= "ROW_NUMBER" then fn(e) end
  for i = 1, #e do each_over(e[i], fn) end
  for _, k in ipairs({"args", "list"}) do
    if e[k] then for _, a in ipairs(e[k]) do each_over(a, fn) end end
  end
  if e.whens then for _, w in ipairs(e.whens) do each_over(w[1], fn); each_over(w[2], fn) end end
  each_over(e.operand, fn)
  each_over(e.else_, fn)
end

--- True when the SELECT `q` has an OVER aggregate (in its items or, an error, its WHERE).
function M.has_over(q)
  if q.tag ~= "select" then return false end
  local found = false
  for _, it in ipairs(q.items) do
    if it.tag == "item" then each_over(it.expr, function() found = true end) end
  end
  if q.where then each_over(q.where, function() found = true end) end
  return found
end

-- A string equal for equal window specifications.
local function window_sig(w)
  local parts = {}
  for _, p in ipairs(w.partition or {}) do parts[#parts + 1] = expr.sig(p) end
  parts[#parts + 1] = "|"
  for _, o in ipairs(w.order or {}) do parts[#parts + 1] = expr.sig(o.expr) .. (o.desc and " desc" or "") end
  local f = w.frame
  if f then
    parts[#parts + 1] = f.unit .. (f.unbounded and "u" or f.current and "c" or expr.sig(f.preceding))
  end
  return table.concat(parts, " ")
end

local function copy_query(q, fields)
  local c = {}
  for k, v in pairs(q) do c[k] = v end
  for k, v in pairs(fields) do c[k] = v end
  return c
end

-- The frame of window `w`: {rows = bool, n = rows or ms before the current row, nil: unbounded}
function Planner:over_frame(w)
  local f = w.frame
  if not f then return {rows = false, n = nil} end
  local rows = f.unit == "ROWS"
  if f.unbounded then return {rows = rows, n = nil} end
  if f.current then return {rows = rows, n = 0} end
  local p = f.preceding
  if rows then
    if p.tag ~= "lit" or (p.type ~= "INT" and p.type ~= "BIGINT") or p.value < 0 then
      self:err(f.start_pos, "ROWS BETWEEN n PRECEDING takes a number of rows (an integer, 0 or more)")
    end
    return {rows = true, n = p.value}
  end
  if p.tag ~= "interval" or not p.ms or p.ms < 0 then
    self:err(f.start_pos, "RANGE BETWEEN ... PRECEDING takes an interval (INTERVAL '10' SECOND) over the time "
      .. "attribute")
  end
  return {rows = false, n = p.ms}
end

--- Plans a SELECT with OVER aggregates: the query without them (its FROM and WHERE, every
-- column, plus hidden columns for the window's keys, time, the aggregates' arguments), the
-- OVER operator adding the aggregates' values to each row, then the SELECT list over it.
function Planner:plan_over(q, rank_idx)
  local calls = {}
  for _, it in ipairs(q.items) do
    if it.tag == "item" then each_over(it.expr, function(c) calls[#calls + 1] = c end) end
  end
  -- OVER w: the window of `WINDOW w AS (...)`
  local named = {}
  for _, nw in ipairs(q.windows or {}) do
    if named[nw.name] then self:err(nw.pos, "the window '%s' is defined twice", nw.name) end
    nw.spec.pos = nw.pos
    named[nw.name] = nw.spec
  end
  for _, c in ipairs(calls) do
    if c.over.named then
      local w = named[c.over.named]
      if not w then self:err(c.over.pos, "unknown window '%s' (no WINDOW %s AS (...) in this query)", c.over.named,
        c.over.named) end
      c.over = w
    end
  end
  if q.where then
    each_over(q.where, function(c) self:err(c.pos, "OVER aggregates are not allowed in WHERE") end)
  end
  local first = calls[1]
  if rank_idx then
    self:err(q.items[rank_idx].pos, "not supported yet: ROW_NUMBER() and an OVER aggregate in one query")
  end
  if q.group_by or q.having or q.distinct then
    self:err(first.pos, "not supported yet: OVER aggregates in a query with GROUP BY, HAVING or DISTINCT")
  end
  if q.joins or q.lateral then
    self:err(first.pos, "not supported yet: OVER aggregates over a join (make the join a view, and query the view)")
  end
  local w = first.over
  local sig = window_sig(w)
  for _, c in ipairs(calls) do
    if window_sig(c.over) ~= sig then
      local l, col = errors.line_col(self.src.text, w.pos)
      self:err(c.over.pos, "not supported yet: OVER windows that differ in one query (this one and the one at "
        .. "%d:%d)", l, col)
    end
    if not expr.AGGS[c.name] and not expr.user_agg(c.name) then
      self:err(c.pos, "not supported yet: %s() OVER (OVER takes COUNT, SUM, MIN, MAX, AVG and aggregate "
        .. "functions)", c.name)
    end
  end
  if not w.order or #w.order ~= 1 then
    self:err(w.pos, "OVER (...) needs ORDER BY a time attribute (one column, ascending)")
  end
  if w.order[1].desc then
    self:err(w.order[1].expr.pos, "not supported yet: OVER windows ordered by time descending")
  end
  local frame = self:over_frame(w)
  -- the inner query: every column, and hidden ones
  local items = {{tag = "star", pos = q.pos}}
  local parts = {}
  local function hidden(name, e)
    items[#items + 1] = {tag = "item", pos = e.pos, expr = e, alias = name}
  end
  for i, e in ipairs(w.partition or {}) do
    parts[i] = "$p" .. i
    hidden(parts[i], e)
  end
  hidden("$o", w.order[1].expr)
  local inner = self:plan_select(copy_query(q, {items = items}))
  self:check_no_rank(inner)
  local updating = inner.updating
  if updating and (not frame.rows or frame.n == nil) then
    self:err(w.frame and w.frame.start_pos or w.pos, "not supported yet: OVER aggregates over an updating input "
      .. "(the result of a GROUP BY, a Top-N or a regular join) take ROWS BETWEEN n PRECEDING AND CURRENT ROW "
      .. "only")
  end
  local by = {}
  for _, c in ipairs(inner.cols) do by[c.name] = c end
  if not updating and not by["$o"].rowtime then
    self:err(w.order[1].expr.pos, "OVER windows are ordered by a time attribute (a rowtime column declared with "
      .. "WATERMARK, or one passed through from it); this is not one")
  end
  -- the aggregates, over the inner query's rows
  local f = q.from
  local aliases = {[f.alias or f.name or f.table or ""] = true}
  local scope = self:row_scope(inner.cols, nil, aliases)
  scope.agg_where = "inside an OVER aggregate"
  local made, argfns, conds, types, index = {}, {}, {}, {}, {}
  local bounded = frame.n ~= nil
  for j, c in ipairs(calls) do
    index[c] = j
    local udaf = expr.user_agg(c.name)
    local at
    if udaf then
      argfns[j] = self:udaf_args(udaf, c, scope)
      local l, col = errors.line_col(self.src.text, c.pos)
      made[j] = self:udaf_make({name = c.name, udaf = udaf, nargs = #c.args, pos = c.pos,
                                where = self.src.name .. ":" .. l .. ":" .. col}, bounded, nil)
      types[j] = udaf.returns
    else
      if c.star then
        if c.name ~= "COUNT" then self:err(c.pos, "%s(*) is not allowed; only COUNT(*)", c.name) end
        argfns[j] = function() return true end
      else
        if #c.args ~= 1 then self:err(c.pos, "%s takes one argument", c.name) end
        argfns[j], at = compile_fn(self, c.args[1], scope)
        if (c.name == "SUM" or c.name == "AVG") and not expr.NUMERIC[at] then
          self:err(c.args[1].pos, "%s needs a numeric argument, got %s", c.name, expr.show(at))
        end
      end
      made[j] = aggs.make(c.name, {star = c.star, distinct = c.distinct, type = at, retract = bounded})
      types[j] = aggs.result_type(c.name, at or "BIGINT")
    end
    if c.filter then
      local cond, ct = compile_fn(self, c.filter, scope, c.filter.pos)
      if ct ~= "BOOLEAN" and ct ~= "NULL" then
        self:err(c.filter_pos, "FILTER needs a BOOLEAN condition, got %s", expr.show(ct))
      end
      conds[j] = cond
    end
  end
  local mark = self.env and #self.env.nodes or 0
  local fields = {}
  for i, c in ipairs(inner.cols) do fields[i] = c.name end
  local stream = (updating and M.over_changelog or M.over_aggregate)(inner.stream, {parts = parts, time = "$o",
    rows = frame.rows, n = frame.n, aggs = made, argfns = argfns, conds = conds, fields = fields,
    ttl = updating and self:state_ttl() or nil})
  self:tag_nodes(mark, w.pos)
  -- the SELECT list over the rows with the aggregates ($w1, ...)
  local cols = {}
  for i, c in ipairs(inner.cols) do cols[i] = c end
  for j = 1, #calls do cols[#cols + 1] = {name = "$w" .. j, type = types[j]} end
  local out_scope = self:row_scope(cols, nil, aliases)
  out_scope.agg_where = "in a query with OVER"
  out_scope.match = function(e)
    local j = index[e]
    if j then return string.format("r[%q]", "$w" .. j), types[j] end
    return nil
  end
  local out_items = self:expand_items(copy_query(q, {}), inner.cols, f.alias or f.name)
  local shown = {}
  for _, it in ipairs(out_items) do
    if not (it.expr.tag == "col" and it.expr.resolved and it.name:sub(1, 1) == "$") then shown[#shown + 1] = it end
  end
  local body, out_cols = self:projection(shown, out_scope)
  for i, it in ipairs(shown) do
    if not updating and it.expr.tag == "col" and by[it.expr.name] and by[it.expr.name].rowtime then
      out_cols[i].rowtime = true
    end
  end
  local fn = expr.load("function(r) return " .. body .. " end", base.lineof(self, q.pos))
  return rel_of(lower.map_rows(stream, updating, fn), out_cols, updating)
end

-- The key of the partition fields: one string (type and value of each, NULL a key of its
-- own); no PARTITION BY is one key.
local function partition_key(parts)
  local n = #parts
  if n == 0 then return function() return "" end end
  return function(r)
    local t = {}
    for i = 1, n do
      local v = r[parts[i]]
      t[i] = v == nil and NULL_KEY or (type(v) .. ":" .. tostring(v))
    end
    return table.concat(t, "\1")
  end
end

--- The OVER operator: a keyed process function (key: the partition) that keeps each row until
-- the watermark passes its time (an event-time timer per time), then adds the rows of that
-- time to the aggregates, takes out those that left the frame, and emits each row with the
-- aggregates' values in fields `$w1`, `$w2`, ...
-- spec: parts (partition fields), time (the time field), rows (ROWS, else RANGE), n (rows or
-- ms before the current row; nil: unbounded), aggs, argfns, conds (FILTER per aggregate)
function M.over_aggregate(stream, spec)
  local tf, rows, n = spec.time, spec.rows, spec.n
  local list, argfns, conds = spec.aggs, spec.argfns, spec.conds
  local na = #list
  local outs = {}
  for j = 1, na do outs[j] = "$w" .. j end
  -- a row's part in the aggregates: {t = time, v = {args}, s = {[j] = true: FILTER left it out}}
  local function entry(r, t)
    local v, s = {}, nil
    for j = 1, na do
      local c = conds[j]
      if c and c(r) ~= true then
        s = s or {}
        s[j] = true
      else
        v[j] = argfns[j](r)
      end
    end
    return {t = t, v = v, s = s}
  end
  local function add(acc, e)
    local s = e.s
    for j = 1, na do if not (s and s[j]) then acc[j] = list[j].add(acc[j], e.v[j]) end end
  end
  local function retract(acc, e)
    local s = e.s
    for j = 1, na do if not (s and s[j]) then acc[j] = list[j].retract(acc[j], e.v[j]) end end
  end
  local function results(acc, r)
    for j = 1, na do r[outs[j]] = list[j].result(acc[j]) end
    return r
  end
  return stream:key_by(partition_key(spec.parts)):process{
    process_element = function(r, ctx)
      local t = r[tf]
      local w = ctx.timer_service:current_watermark()
      if t == nil or t <= w then
        ctx:output("late", r)
        return
      end
      local st = ctx.state
      local pending = st.pending
      if not pending then
        pending = {}
        st.pending = pending
      end
      local k = tostring(t)
      local at = pending[k]
      if not at then
        at = {}
        pending[k] = at
        ctx.timer_service:register_event_time_timer(t)
      end
      at[#at + 1] = r
    end,
    on_timer = function(t, ctx, out)
      local st = ctx.state
      local k = tostring(t)
      local at = st.pending and st.pending[k]
      if not at then return end
      st.pending[k] = nil
      if next(st.pending) == nil then st.pending = nil end
      local acc = st.acc
      if not acc then
        acc = {}
        for j = 1, na do acc[j] = list[j].init() end
        st.acc = acc
      end
      -- the frame's rows (bounded frames): a queue st.q[st.qh .. st.qt]
      local q, qh, qt = st.q, st.qh, st.qt
      if n and not q then
        q, qh, qt = {}, 1, 0
        st.q = q
      end
      if rows then
        for _, r in ipairs(at) do
          local e = entry(r, t)
          add(acc, e)
          if n then
            qt = qt + 1
            q[qt] = e
            if qt - qh + 1 > n + 1 then
              retract(acc, q[qh])
              q[qh] = nil
              qh = qh + 1
            end
          end
          out(results(acc, r))
        end
      else
        for _, r in ipairs(at) do
          local e = entry(r, t)
          add(acc, e)
          if n then
            qt = qt + 1
            q[qt] = e
          end
        end
        if n then
          local lo = t - n
          while qh <= qt and q[qh].t < lo do
            retract(acc, q[qh])
            q[qh] = nil
            qh = qh + 1
          end
        end
        for _, r in ipairs(at) do out(results(acc, r)) end
      end
      if n then
        if qh > qt then -- empty: start again from 1
          q, qh, qt = {}, 1, 0
          st.q = q
        end
        st.qh, st.qt = qh, qt
      end
    end,
  }:name(n and (rows and "over (rows)" or "over (range)") or (rows and "over (rows, unbounded)"
    or "over (range, unbounded)"))
end

-- a < b for ORDER BY values, ascending, NULL first (Flink's default for ASC)
local function order_lt(a, b)
  if a == b then return false end
  if a == nil then return true end
  if b == nil then return false end
  if type(a) == "boolean" then return (not a) and b end
  return a < b
end

--- The OVER operator over an updating input (a changelog of `{k = "+I"|"-U"|"+U"|"-D", r = row}`):
-- a materialized view. Per partition key, the rows now in the table sorted by the ORDER BY
-- value, rows of equal value in the order they were inserted (a row's -U/-D then +U/+I is a new
-- insertion: it goes after its peers); each row's aggregates are those of its frame, the row
-- and the n rows before it in that order. An insertion (+I/+U) emits +I of the row with its
-- aggregates, then -U/+U for each of the n rows after it whose aggregates change; a retraction
-- (-U/-D) takes out the first inserted of the rows equal to it in every field, emits -D of it
-- with the aggregates it had, then -U/+U for each of the n rows after its place whose
-- aggregates change. A retraction of a row that is not there changes nothing (as the GROUP
-- BY). The ORDER BY value need not be a time attribute; no watermark is involved. The rows,
-- their arguments and their last results are the keyed process function's `ctx.state`
-- (checkpointed), with `table.exec.state.ttl` (spec.ttl, ms) the key's state_ttl as for GROUP BY.
-- ROWS BETWEEN n PRECEDING AND CURRENT ROW only (spec.n a number).
-- spec: as over_aggregate, plus fields (the names of the input's columns), ttl
function M.over_changelog(stream, spec)
  local tf, n, fields = spec.time, spec.n, spec.fields
  local list, argfns, conds = spec.aggs, spec.argfns, spec.conds
  local na = #list
  local outs = {}
  for j = 1, na do outs[j] = "$w" .. j end
  local function entry(r)
    local v, s = {}, nil
    for j = 1, na do
      local c = conds[j]
      if c and c(r) ~= true then
        s = s or {}
        s[j] = true
      else
        v[j] = argfns[j](r)
      end
    end
    return {v = v, s = s}
  end
  -- the aggregates of the frame of rows[i]: rows[i - n .. i]
  local function compute(rows, i)
    local acc = {}
    for j = 1, na do acc[j] = list[j].init() end
    for k = math.max(1, i - n), i do
      local e = rows[k].e
      local s = e.s
      for j = 1, na do if not (s and s[j]) then acc[j] = list[j].add(acc[j], e.v[j]) end end
    end
    local w = {}
    for j = 1, na do w[j] = list[j].result(acc[j]) end
    return w
  end
  local function shape(x, w)
    local o = {}
    for _, f in ipairs(fields) do o[f] = x.r[f] end
    for j = 1, na do o[outs[j]] = w[j] end
    return o
  end
  local function same(a, b)
    for j = 1, na do if a[j] ~= b[j] then return false end end
    return true
  end
  -- the rows from..to get their new aggregates: -U/+U for those that change
  local function refresh(rows, from, to, emit)
    for i = from, math.min(#rows, to) do
      local x = rows[i]
      local w = compute(rows, i)
      if not same(x.w, w) then
        emit({k = "-U", r = shape(x, x.w)})
        emit({k = "+U", r = shape(x, w)})
        x.w = w
      end
    end
  end
  local key = partition_key(spec.parts)
  local function fn(c, ctx, emit)
    local r = c.r
    local o = r[tf]
    local st = ctx.state
    local rows = st.rows or {}
    if c.k == "+I" or c.k == "+U" then
      -- its place: after every row whose value is not above its own (binary search)
      local lo, hi = 1, #rows + 1
      while lo < hi do
        local mid = (lo + hi) // 2
        if order_lt(o, rows[mid].o) then hi = mid else lo = mid + 1 end
      end
      local x = {o = o, r = {}, e = entry(r)}
      for _, f in ipairs(fields) do x.r[f] = r[f] end
      table.insert(rows, lo, x)
      x.w = compute(rows, lo)
      st.rows = rows
      emit({k = "+I", r = shape(x, x.w)})
      refresh(rows, lo + 1, lo + n, emit)
      return
    end
    -- a retraction: the first of the rows equal to it (the first place of its value, then on)
    local lo, hi = 1, #rows + 1
    while lo < hi do
      local mid = (lo + hi) // 2
      if order_lt(rows[mid].o, o) then lo = mid + 1 else hi = mid end
    end
    local at
    for i = lo, #rows do
      local x = rows[i]
      if order_lt(o, x.o) then break end
      local eq = true
      for _, f in ipairs(fields) do
        if x.r[f] ~= r[f] then
          eq = false
          break
        end
      end
      if eq then
        at = i
        break
      end
    end
    if not at then return end
    local x = table.remove(rows, at)
    emit({k = "-D", r = shape(x, x.w)})
    refresh(rows, at, at + n - 1, emit)
    st.rows = rows[1] and rows or nil
  end
  local keyed = stream:key_by(function(c) return key(c.r) end)
  local op
  if spec.ttl then
    op = keyed:process{process_element = fn,
                       state_ttl = {ttl = spec.ttl, update = "on_create_and_write", time = "processing"}}
  else
    op = keyed:process(fn)
  end
  return op:name("over (rows, changelog)")
end

return M
