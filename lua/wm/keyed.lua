--- Keyed streams beyond windows: keyed process functions with timers (semantics.md §8)
-- and rolling aggregations. Methods of the classes of wm.base.
-- @module wm.keyed
local base = require("wm.base")

local KeyedStream = base.KeyedStream

local M = {}

local function keyed_node(ks, kind, t, name)
  t.key = ks.key
  return base.one_input(ks.stream, kind, t, name)
end

local process_fields = {process_element = true, on_timer = true, name = true, snapshot = true,
                        restore = true, state_ttl = true}

--- A keyed process function, called for every record with the key's context.
--
-- Either `keyed:process(fn[, on_timer])` or
-- `keyed:process{process_element = fn, on_timer = fn}` (Flink's KeyedProcessFunction).
-- `fn(record, ctx, out)`: `ctx.key`, `ctx.timestamp` (nil if the record has none),
-- `ctx.state` (a table per key that persists between calls), `ctx:output(tag, value)`,
-- `ctx.timer_service` with `:register_event_time_timer(t)`,
-- `:register_processing_time_timer(t)`, `:delete_event_time_timer(t)`,
-- `:delete_processing_time_timer(t)`, `:current_watermark()`, `:current_processing_time()`.
-- `on_timer(t, ctx, out)` runs when a timer fires (`ctx.time_domain` is "event_time" or
-- "processing_time"); event-time timers fire when the watermark reaches `t`, and timers of
-- the same key and time coalesce into one. `out(value)` emits a record (with the input
-- record's timestamp, or the event-time timer's time).
--
-- Checkpoints (docs/checkpoints.md): `ctx.state` and the timers are the engine's and are
-- checkpointed with the operator. State the function keeps itself (fields of the table,
-- upvalues) goes through two optional methods of the table form, `snapshot(self)`, which
-- returns a plain table, and `restore(self, t)`, which puts it back (give both or neither);
-- `self` is the table, which may hold fields of its own (any field but a function).
--
-- State that expires (docs/joins.md, "State that expires"): the table form takes
-- `state_ttl = {ttl = d, update = "on_create_and_write" | "on_read_and_write",
-- time = "processing" | "event"}`: a key's `ctx.state` not written (or read, with
-- `on_read_and_write`) for `ttl` is dropped, and a read after that sees an empty table.
-- With or without it, a key whose `ctx.state` is empty (or nil) after a call and that has
-- no timers is removed, its memory freed.
-- @tparam function|table fn the function, or a table {process_element, on_timer[, snapshot,
--   restore, state_ttl]}
-- @tparam[opt] function on_timer the timer callback (with the function form)
-- @treturn Stream the records the function emits
-- @usage keyed:process{process_element = function(r, ctx, out) ... end,
--                      on_timer = function(t, ctx, out) ... end}
function KeyedStream:process(fn, on_timer)
  local obj, ttl
  if type(fn) == "table" then
    ttl = base.state_ttl(fn.state_ttl, "process", 2)
    if on_timer ~= nil then error("process: give on_timer inside the table", 2) end
    for k, v in pairs(fn) do -- other fields than functions: the object's own state
      if not process_fields[k] and type(v) == "function" then
        error("process: unknown field '" .. tostring(k) ..
          "' (process_element, on_timer, snapshot, restore, state_ttl)", 2)
      end
    end
    base.check_hooks(fn, "process")
    if fn.snapshot ~= nil then obj = fn end
    on_timer = fn.on_timer
    fn = fn.process_element
    if type(fn) ~= "function" then
      error("process: process_element must be a function, got " .. type(fn), 2)
    end
  elseif type(fn) ~= "function" then
    error("process: expected a function or a table {process_element, on_timer}, got " .. type(fn), 2)
  end
  if on_timer ~= nil and type(on_timer) ~= "function" then
    error("process: on_timer must be a function, got " .. type(on_timer), 2)
  end
  local t = {fn = fn, on_timer = on_timer, obj = obj}
  for k, v in pairs(ttl or {}) do t[k] = v end
  return keyed_node(self, "keyed_process", t, "keyed process")
end

--- Rolling reduce: for every record, `fn(acc, record) -> acc` over all of the key's records
-- so far (the first record starts), and the new accumulator is emitted.
-- @tparam function fn `fn(acc, record) -> acc`
-- @treturn Stream
-- @usage s:key_by("id"):reduce(function(a, r) return {id = r.id, vc = a.vc + r.vc} end)
function KeyedStream:reduce(fn)
  base.check_fn(fn, "reduce")
  return keyed_node(self, "keyed_rolling", {agg = "reduce", fn = fn}, "rolling reduce")
end

--- Rolling sum: for every record, the key's first record with `field` replaced by
-- the running sum of `field` over the key's records so far (Flink's rule).
-- @function KeyedStream:sum
-- @tparam string field a numeric field
-- @treturn Stream
-- @usage s:key_by("id"):sum("vc")

--- Rolling min: for every record, the key's first record with `field` replaced by
-- the running minimum of `field` over the key's records so far (Flink's rule).
-- @function KeyedStream:min
-- @tparam string field a numeric field
-- @treturn Stream
-- @usage s:key_by("id"):min("vc")

--- Rolling max: for every record, the key's first record with `field` replaced by
-- the running maximum of `field` over the key's records so far (Flink's rule).
-- @function KeyedStream:max
-- @tparam string field a numeric field
-- @treturn Stream
-- @usage s:key_by("id"):max("vc")

--- Rolling min_by: for every record, the key's record so far with the lowest `field`.
-- @function KeyedStream:min_by
-- @tparam string field a numeric field
-- @treturn Stream
-- @usage s:key_by("id"):min_by("vc")

--- Rolling max_by: for every record, the key's record so far with the highest `field`.
-- @function KeyedStream:max_by
-- @tparam string field a numeric field
-- @treturn Stream
-- @usage s:key_by("id"):max_by("vc")

-- (The SQL planner's, not a public method) An unwindowed SQL GROUP BY's aggregates computed in
-- C (core/ops/wm_sqlagg.h, wm_keyedfn_sqlagg): a rolling aggregation whose results are the
-- changelog rows {k = "+I"|"-U"|"+U", r = row}, emitted only when the row changed.
function KeyedStream:_sql_group_aggregate(spec)
  return keyed_node(self, "keyed_rolling", {agg = "sqlagg", sqlagg = spec}, "SQL group aggregate")
end

-- (The SQL planner's, not a public method) A SQL deduplication in C (core/ops/wm_sqlrank.h,
-- wm_keyedfn_sqldedup): a rolling function whose results are the changelog rows
-- {k = "+I"|"-U"|"+U", r = row} of the row kept per key.
function KeyedStream:_sql_deduplicate(spec, name)
  return keyed_node(self, "keyed_rolling", {agg = "sqldedup", sqldedup = spec}, name)
end

-- (The SQL planner's, not a public method) A SQL Top-N in C (wm_keyedfn_sqltopn), as
-- _sql_deduplicate.
function KeyedStream:_sql_top_n(spec, name)
  return keyed_node(self, "keyed_rolling", {agg = "sqltopn", sqltopn = spec}, name)
end

-- Rolling built-in aggregations, computed in C: sum/min/max emit the key's first record
-- with the field replaced (Flink's rule); min_by/max_by the record holding the min/max.
for _, agg in ipairs({"sum", "min", "max", "min_by", "max_by"}) do
  KeyedStream[agg] = function(self, field)
    if type(field) ~= "string" then error(agg .. ": expected a field name, got " .. type(field), 2) end
    return keyed_node(self, "keyed_rolling", {agg = agg, field = field},
                      "rolling " .. agg .. "(" .. field .. ")")
  end
end

return M
