--- Lowering: every DSL call the SQL planner makes (read_lines aside), in one place, so that
-- switching a piece to a faster or newer operator (parse_csv, session windows, aggregate
-- with a window-aware process function) is a change in this file.
-- @module wm.sql.plan.lower
local windows = require("wm.windows")
local values = require("wm.sql.values")
local cexpr = require("wm.sql.cexpr")
local wmbase = require("wm.base")

local NULL_KEY = "\0<NULL>"   -- stands for a NULL group key (keys must be scalars)

local lower = {}

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
  local p = spec.processing and "_processing" or "" -- (PROCTIME(), wm.sql.plan.proctime)
  if spec.kind == "tumble" then return windows["tumbling" .. p](spec.size) end
  if spec.kind == "session" then return windows["session" .. p](spec.gap) end
  return windows["sliding" .. p](spec.size, spec.slide)
end

-- The keyed stream of a windowed aggregation: key_by("field") / key_by({fields}) in C when
-- the keys allow it, else a Lua key function.
local function keyed_of(stream, spec)
  local kf = spec.key_fields
  if kf then
    local keyed = stream:key_by(#kf == 1 and kf[1] or kf)
    -- (key fields computed in C that may be NULL: NULL is a key of its own, as key_fn's)
    if spec.key_null then keyed.key.null_key = NULL_KEY end
    return keyed
  end
  return stream:key_by(lower.key_fn(spec.keyfns))
end

-- The Lua step that turns a window's result into the output row (`shape` returns nil for a
-- row that HAVING drops). print_changelog may fuse it with the formatting into one Lua step.
local function shape_rows(stream, shape, having)
  local shaped
  if having then
    shaped = stream:flat_map(function(r, emit)
      local row = shape(r)
      if row then emit(row) end
    end):name("shape rows, HAVING")
  else
    shaped = stream:map(shape):name("shape rows")
  end
  shaped.sql_shape = {input = stream, fn = shape, having = having}
  return shaped
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
    if spec.count_shape then -- (the row shaped in C: wm.sql.plan.aggregate's count_shape)
      return wmbase.one_input(res, "sql_rows", spec.count_shape, "shape rows")
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
  return shape_rows(stream, shape, spec.having)
end

-- A windowed aggregation whose aggregates all run in C (spec.csql, wm.sql.plan.aggregate's
-- c_window_agg): the result row built in C, or (spec.csql_shape) a C row of the keys, the
-- aggregates and the window's bounds that a Lua step shapes (HAVING, expressions).
local function c_window_aggregate(stream, spec)
  local res = keyed_of(stream, spec):window(assigner_of(spec)):_sql_aggregate(spec.csql)
  if not spec.csql_shape then return res end
  local out, nk, na = spec.out, #spec.keyfns, #spec.aggs
  local function shape(r)
    local k, a = {}, {}
    for i = 1, nk do k[i] = r["$k" .. i] end
    for i = 1, na do a[i] = r["$a" .. i] end
    return out(k, a, r["$ws"], r["$we"])
  end
  return shape_rows(res, shape, spec.having)
end

function lower.window_aggregate(stream, spec)
  if spec.csql then return c_window_aggregate(stream, spec) end
  if spec.builtin then return builtin_window_aggregate(stream, spec) end
  local keyed = keyed_of(stream, spec)
  local create, add, merge, results = window_acc(spec)
  local out = spec.out
  local result
  if spec.kind == "tumble" and not spec.processing then
    local size = spec.size
    local s = keyed:window(windows.tumbling(size)):aggregate({
      create = create, add = add,
      result = function(acc)
        local start = acc.ts - acc.ts % size
        return out(acc.keys, results(acc), start, start + size)
      end,
    })
    result = s
  elseif spec.kind == "session" and not spec.processing then
    local gap = spec.gap
    result = keyed:window(windows.session(gap)):aggregate({
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
    -- (processing-time windows of any kind too: their bounds are the window's, not the rows')
    local assigner = spec.processing and assigner_of(spec) or windows.sliding(size, slide)
    result = keyed:window(assigner):process(function(_, ctx, records, emit)
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

--- Maps the rows of a stream with `f`: the rows themselves, or inside the changelog entries
-- of an updating relation.
function lower.map_rows(stream, updating, f)
  if updating then return stream:map(function(e) return {k = e.k, r = f(e.r)} end) end
  return stream:map(f)
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

-- `keyed:process(fn)`, with `table.exec.state.ttl` (`ttl` ms, or nil) as the key's state_ttl:
-- a key's state not written for ttl on the processing-time clock is gone (Flink's
-- OnCreateAndWrite for the state of its GROUP BY, deduplication and Top-N).
local function keyed_process(keyed, fn, ttl)
  if not ttl then return keyed:process(fn) end
  return keyed:process{process_element = fn,
                       state_ttl = {ttl = ttl, update = "on_create_and_write", time = "processing"}}
end

--- Non-windowed aggregation: a keyed process function that emits a changelog. Rules as
-- Flink's GroupAggFunction: +I for a new key, -U/+U when the result changes (nothing when it
-- does not), -D when the last row of a key is retracted. The stream is keyed by the group
-- keys (hash partitioned, as Flink does): every change of a key comes from one instance, in
-- order, and reaches the operators after it through forward edges. A group's state (its
-- keys, aggregate states, row count and last result) lives in `ctx.state`, which the engine
-- checkpoints (docs/checkpoints.md).
-- spec: keyfns, aggs, argfns, updating_input, out(keys, aggs) -> row or false, ttl (ms or nil)
function lower.group_aggregate(stream, spec)
  if spec.csql then -- in C: the changelog rows {k, r} made in C (wm.sql.plan.aggregate)
    return keyed_of(stream, spec):_sql_group_aggregate(spec.csql)
  end
  local keyfns, list, argfns, out = spec.keyfns, spec.aggs, spec.argfns, spec.out
  local nk, na = #keyfns, #list
  local updating = spec.updating_input
  -- the key: one string for the group keys (type and value of each, NULL a key of its own)
  local function keystr(r)
    if nk == 0 then return "" end
    if nk == 1 then
      local v = keyfns[1](r)
      return v == nil and NULL_KEY or (type(v) .. ":" .. tostring(v))
    end
    local t = {}
    for i = 1, nk do
      local v = keyfns[i](r)
      t[i] = v == nil and NULL_KEY or (type(v) .. ":" .. tostring(v))
    end
    return table.concat(t, "\1")
  end
  local key_of = keystr
  if updating then key_of = function(e) return keystr(e.r) end end
  local function emit_row(emit, kind, keys, a)
    local row = out(keys, a)
    if row then emit({k = kind, r = row}) end
  end
  return keyed_process(stream:key_by(key_of), function(e, ctx, emit)
    local r, sign = e, 1
    if updating then
      r = e.r
      if e.k == "-U" or e.k == "-D" then sign = -1 end
    end
    local g = ctx.state
    if g.rows == nil then
      if sign < 0 then return end -- retraction of a row never seen: nothing to undo
      local keys, st = {}, {}
      for i = 1, nk do keys[i] = keyfns[i](r) end
      for i = 1, na do st[i] = list[i].init() end
      g.keys, g.st, g.rows, g.prev = keys, st, 0, nil
    end
    g.rows = g.rows + sign
    local st = g.st
    for i = 1, na do
      if sign > 0 then st[i] = list[i].add(st[i], argfns[i](r))
      else st[i] = list[i].retract(st[i], argfns[i](r)) end
    end
    if g.rows <= 0 then
      if g.prev then emit_row(emit, "-D", g.keys, g.prev) end
      g.keys, g.st, g.rows, g.prev = nil, nil, nil, nil
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
  end, spec.ttl):name("group aggregate")
end

---------------------------------------------------------------------------------------------
-- Deduplication and Top-N (wm.sql.plan.rank). Rows come with hidden fields: `$p1`... the
-- PARTITION BY values, `$o1`... the ORDER BY values. The state of a partition key is the
-- keyed process function's `ctx.state` (checkpointed): the row kept (deduplication) or the
-- sorted list of the top N rows (Top-N), copies of their visible and ORDER BY fields.

-- The key_by key of the partition fields: one string (type and value of each, NULL a key of
-- its own); no PARTITION BY is one key.
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

-- keep(r): the row to keep in state; shape(kept[, rn]): the visible row (with rn if asked).
local function rank_rows(spec)
  local visible, orders, rn = spec.visible, spec.orders, spec.rn
  local function keep(r)
    local o = {}
    for _, f in ipairs(visible) do o[f] = r[f] end
    for _, x in ipairs(orders) do o[x.field] = r[x.field] end
    return o
  end
  local function shape(k, n)
    local o = {}
    for _, f in ipairs(visible) do o[f] = k[f] end
    if rn then o[rn] = n end
    return o
  end
  return keep, shape
end

--- Deduplication on a time attribute (Flink's RowTimeDeduplicateFunction): per key, the first
-- row (ORDER BY rt ASC: a row replaces the kept one when its time is strictly smaller) or the
-- last (DESC: when its time is larger or equal). The first row of a key is +I; a replacement
-- is -U of the kept row, +U of the new one.
-- spec: parts, orders (one, on the time attribute), visible, keep_last
-- The keyed stream of a rank in C: by the fields c.key_fields, read in C (a NULL one a key of
-- its own when c.key_nulls), else by the Lua partition key.
local function rank_keyed(stream, spec)
  local kf = spec.c.key_fields
  if not kf then return stream:key_by(partition_key(spec.parts)) end
  local keyed = stream:key_by(#kf == 1 and kf[1] or kf)
  if spec.c.key_nulls then keyed.key.nulls = true end -- (read by the bindings' key selector)
  return keyed
end

-- spec.c (wm.sql.plan.rank): in C (core/ops/wm_sqlrank.h), keyed by rank_keyed.
function lower.deduplicate(stream, spec)
  local keep, shape = rank_rows(spec)
  local tf, keep_last = spec.orders[1].field, spec.keep_last
  local name = keep_last and "deduplicate (keep last row)" or "deduplicate (keep first row)"
  if spec.c then
    local keyed = rank_keyed(stream, spec)
    return keyed:_sql_deduplicate({fields = spec.visible, time = tf, keep_last = keep_last or false,
                                   meaning = ("SQL " .. name .. " of " .. table.concat(spec.visible, ",")):sub(1, 190)},
                                  "SQL " .. name)
  end
  return keyed_process(stream:key_by(partition_key(spec.parts)), function(r, ctx, emit)
    local st = ctx.state
    local prev = st.row
    if prev ~= nil then
      local pt, t = prev[tf], r[tf]
      -- (times are never NULL nor NaN: a rowtime is an integer)
      if keep_last then
        if pt > t then return end
      elseif t >= pt then
        return
      end
    end
    local row = keep(r)
    st.row = row
    if prev == nil then
      emit({k = "+I", r = shape(row)})
    else
      emit({k = "-U", r = shape(prev)})
      emit({k = "+U", r = shape(row)})
    end
  end, spec.ttl):name(name)
end

-- a sorts before b under the ORDER BY (NULL first ascending, last descending, unless the
-- ORDER BY says NULLS FIRST/LAST)
local function order_less(orders)
  return function(a, b)
    for _, o in ipairs(orders) do
      local x, y = a[o.field], b[o.field]
      if x ~= y then
        local nulls_first = o.nulls == "FIRST" or (o.nulls == nil and not o.desc)
        if x == nil then return nulls_first end
        if y == nil then return not nulls_first end
        if o.desc then return y < x end
        return x < y
      end
    end
    return false
  end
end

--- Top-N over an append-only input (Flink's AppendOnlyTopNFunction): per key the N first rows
-- in the ORDER BY, rows of equal sort keys in their order of arrival. A row that does not sort
-- before the last of a full top N changes nothing. Without rn: a row that enters is +I, and
-- the row it pushes out -D (before it). With rn: the rows from the new one's place down
-- shift one rank, each rank's change a -U of the row that was there and a +U of the row now
-- there, and the last rank +I when the top was not full.
-- spec: parts, orders, visible, n, rn (the name of the rank column, when it is read)
-- spec.c: in C (core/ops/wm_sqlrank.h), as lower.deduplicate's.
function lower.top_n(stream, spec)
  if spec.c then
    local keyed = rank_keyed(stream, spec)
    local orders, desc = {}, {}
    for i, o in ipairs(spec.orders) do
      local nulls_first = o.nulls == "FIRST" or (o.nulls == nil and not o.desc)
      orders[i] = {field = o.field, desc = o.desc or false, nulls_first = nulls_first}
      desc[i] = o.field .. (o.desc and " DESC" or "") .. (orders[i].nulls_first and " NULLS FIRST" or "")
    end
    return keyed:_sql_top_n({fields = spec.visible, orders = orders, n = spec.n, rn = spec.rn,
                             meaning = ("SQL top-" .. spec.n .. (spec.rn and " rn" or "") .. " by "
                                        .. table.concat(desc, ",") .. " of " .. table.concat(spec.visible, ","))
                                        :sub(1, 190)},
                            "SQL top-" .. spec.n)
  end
  local keep, shape = rank_rows(spec)
  local less, n, with_rn, visible = order_less(spec.orders), spec.n, spec.rn ~= nil, spec.visible
  local function same(a, b)
    for _, f in ipairs(visible) do if a[f] ~= b[f] then return false end end
    return true
  end
  return keyed_process(stream:key_by(partition_key(spec.parts)), function(r, ctx, emit)
    local st = ctx.state
    local buf = st.buf
    if buf == nil then
      buf = {}
      st.buf = buf
    end
    local size = #buf
    if size >= n and not less(r, buf[size]) then return end
    -- its place: after every row that does not sort after it
    local p = size + 1
    while p > 1 and less(r, buf[p - 1]) do p = p - 1 end
    local row = keep(r)
    table.insert(buf, p, row)
    st.buf = buf -- (a write: with a TTL, renews the key's state)
    if not with_rn then
      if #buf > n then
        local last = table.remove(buf)
        if same(last, row) then return end
        emit({k = "-D", r = shape(last)})
      end
      emit({k = "+I", r = shape(row)})
      return
    end
    local m = math.min(#buf, n + 1)
    for j = p + 1, m do
      emit({k = "-U", r = shape(buf[j], j - 1)})
      emit({k = "+U", r = shape(buf[j - 1], j - 1)})
    end
    if m <= n then emit({k = "+I", r = shape(buf[m], m)}) end
    while #buf > n do table.remove(buf) end
  end, spec.ttl):name("top-" .. n)
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
    s = cexpr.try_format(rel.stream, rel.cols) or rel.stream:map(function(r) return fmt("+I", r) end)
  end
  return s:print(prefix)
end

return lower
