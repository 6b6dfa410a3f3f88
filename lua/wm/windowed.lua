--- Windows on keyed streams (api.md: Windows): `keyed:window(assigner)` and the methods of
-- the windowed stream (lateness, late side output, trigger, evictor, and the window
-- functions). Methods of the classes of wm.base.
-- @module wm.windowed
local base = require("wm.base")
local duration = require("wm.duration")
local windows = require("wm.windows")
local triggers = require("wm.triggers")
local evictors = require("wm.evictors")

local KeyedStream, WindowedStream = base.KeyedStream, base.WindowedStream
local check_fn = base.check_fn

local M = {}

--- Windows the keyed stream with an assigner from wm.windows.
-- @tparam table assigner e.g. `wm.windows.tumbling("5s")`
-- @treturn WindowedStream
-- @usage s:key_by("id"):window(wm.windows.sliding("10s", "5s")):max("vc")
function KeyedStream:window(assigner)
  if type(assigner) ~= "table" or not assigner.kind then
    error("window: expected a window assigner from wm.windows, got " .. type(assigner), 2)
  end
  return setmetatable({keyed = self, assigner = assigner, lateness = 0, where = base.where()}, WindowedStream)
end

--- Count windows: shorthand for `:window(wm.windows.count(n, slide))`.
-- @tparam integer n records per window
-- @tparam[opt] integer slide records between firings
-- @treturn WindowedStream
-- @usage s:key_by("id"):count_window(100):sum("vc")
function KeyedStream:count_window(n, slide)
  local ok, a = pcall(windows.count, n, slide)
  if not ok then error((a:gsub("^[^:]*:%d+: ", "")), 2) end
  return self:window(a)
end

--- Allowed lateness: windows are kept (and fire again for late records) until
-- the watermark passes their end plus this duration.
-- @tparam integer|string d a duration (>= 0)
-- @treturn WindowedStream this windowed stream
-- @usage keyed:window(wm.windows.tumbling("5s")):allowed_lateness("2s"):sum("vc")
function WindowedStream:allowed_lateness(d)
  local ms = duration.ms(d, "allowed_lateness", 2)
  if ms < 0 then error("allowed_lateness: must not be negative, got " .. tostring(d), 2) end
  if self.assigner.processing_time then
    error("allowed_lateness: has no meaning on a processing-time window (records are never late there)", 2)
  end
  self.lateness = ms
  return self
end

--- Sends records too late for any window to the side output `tag` (read it with
-- `:get_side_output(tag)` on the result); without it they are dropped and counted in the
-- `late_records_dropped` metric (`wmrun --metrics`, column "late").
-- @tparam string tag the side output's tag
-- @treturn WindowedStream this windowed stream
-- @usage local sums = keyed:window(wm.windows.tumbling("5s")):side_output_late_data("late"):sum("vc")
-- sums:get_side_output("late"):print("late")
function WindowedStream:side_output_late_data(tag)
  if type(tag) ~= "string" then error("side_output_late_data: expected a tag string, got " .. type(tag), 2) end
  self.late_tag = tag
  return self
end

--- Replaces the window's default trigger with one from wm.triggers.
-- @tparam table t a trigger
-- @treturn WindowedStream this windowed stream
-- @usage keyed:window(wm.windows.global()):trigger(wm.triggers.count(100)):sum("vc")
function WindowedStream:trigger(t)
  if getmetatable(t) ~= triggers.Trigger then
    error("trigger: expected a trigger from wm.triggers, got " .. type(t), 2)
  end
  if self.assigner.kind == "session" and t.mergeable == false then
    error("trigger: session windows merge, so a custom trigger needs an 'on_merge' callback", 2)
  end
  self.trigger_spec = t
  return self
end

--- Adds an evictor from wm.evictors.
-- @tparam table e an evictor
-- @treturn WindowedStream this windowed stream
-- @usage keyed:count_window(10, 2):evictor(wm.evictors.count(5)):sum("vc")
function WindowedStream:evictor(e)
  if getmetatable(e) ~= evictors.Evictor then
    error("evictor: expected an evictor from wm.evictors, got " .. type(e), 2)
  end
  self.evictor_spec = e
  return self
end

local function window_node(ws, t, name)
  local s = ws.keyed.stream
  t.key = ws.keyed.key
  t.assigner = ws.assigner
  t.lateness = ws.lateness
  t.late_tag = ws.late_tag
  t.trigger = ws.trigger_spec
  t.evictor = ws.evictor_spec
  t.name = name
  return base.stream(s.env, s.env:_node("window", {s.node}, t))
end

local function wname(ws, fn)
  return ws.assigner.kind .. (ws.assigner.processing_time and "_processing" or "") .. " window " .. fn
end

--- Reduces each window's records with `fn(acc, record) -> acc` (the first record starts);
-- with `process_fn`, that function receives the reduced value:
-- `process_fn(key, ctx, {reduced}, out)` (ctx as for `process`).
-- @tparam function fn `fn(acc, record) -> acc`
-- @tparam[opt] function process_fn `process_fn(key, ctx, {reduced}, out)`
-- @treturn Stream
-- @usage windowed:reduce(function(a, r) return {id = r.id, vc = math.max(a.vc, r.vc)} end)
function WindowedStream:reduce(fn, process_fn)
  check_fn(fn, "reduce")
  if process_fn ~= nil then check_fn(process_fn, "reduce (process function)") end
  return window_node(self, {fn_kind = "reduce", fn = fn, process_fn = process_fn}, wname(self, "reduce"))
end

--- Aggregates with `{create = fn() -> acc, add = fn(acc, record) -> acc, result = fn(acc) -> out,
-- merge = fn(a, b) -> acc}` (`merge` is required for session windows); with `process_fn`,
-- that function receives the result: `process_fn(key, ctx, {result}, out)`.
-- @tparam table agg `{create, add, result[, merge]}`
-- @tparam[opt] function process_fn `process_fn(key, ctx, {result}, out)`
-- @treturn Stream
-- @usage windowed:aggregate{
--   create = function() return {n = 0, sum = 0} end,
--   add = function(a, r) a.n, a.sum = a.n + 1, a.sum + r.vc; return a end,
--   result = function(a) return a.sum / a.n end,
--   merge = function(a, b) return {n = a.n + b.n, sum = a.sum + b.sum} end}
function WindowedStream:aggregate(agg, process_fn)
  if type(agg) ~= "table" then error("aggregate: expected a table {create, add, result, merge}", 2) end
  for _, f in ipairs({"create", "add", "result"}) do
    if type(agg[f]) ~= "function" then error("aggregate: '" .. f .. "' must be a function", 2) end
  end
  if agg.merge ~= nil and type(agg.merge) ~= "function" then error("aggregate: 'merge' must be a function", 2) end
  if self.assigner.kind == "session" and agg.merge == nil then
    error("aggregate: session windows merge, so the aggregate needs a 'merge' function", 2)
  end
  if process_fn ~= nil then check_fn(process_fn, "aggregate (process function)") end
  local a = {create = agg.create, add = agg.add, result = agg.result, merge = agg.merge}
  return window_node(self, {fn_kind = "aggregate", agg = a, process_fn = process_fn}, wname(self, "aggregate"))
end

--- Calls `fn(key, ctx, records, out)` with all of a window's records when it fires.
-- `ctx.window` has `start`, `stop`, `max_timestamp`; `ctx.current_watermark` (the watermark
-- that fired the window), `ctx.current_processing_time`, `ctx.key`, and
-- `ctx:output(tag, value)` for side outputs; `out(value)` emits a result (timestamp: the
-- window's `max_timestamp`).
-- @tparam function fn `fn(key, ctx, records, out)`
-- @treturn Stream
-- @usage windowed:process(function(key, ctx, records, out)
--   out({key = key, n = #records, stop = ctx.window.stop})
-- end)
function WindowedStream:process(fn)
  check_fn(fn, "process")
  return window_node(self, {fn_kind = "process", fn = fn}, wname(self, "process"))
end

--- The window's sum, computed in C: the window's first record with `field` replaced by
-- the sum of `field` over the window (Flink's rule).
-- @function WindowedStream:sum
-- @tparam string field a numeric field
-- @treturn Stream
-- @usage s:key_by("id"):window(wm.windows.tumbling("5s")):sum("vc")

--- The window's min, computed in C: the window's first record with `field` replaced by
-- its minimum in the window (Flink's rule).
-- @function WindowedStream:min
-- @tparam string field a numeric field
-- @treturn Stream
-- @usage s:key_by("id"):window(wm.windows.tumbling("5s")):min("vc")

--- The window's max, computed in C: the window's first record with `field` replaced by
-- its maximum in the window (Flink's rule).
-- @function WindowedStream:max
-- @tparam string field a numeric field
-- @treturn Stream
-- @usage s:key_by("id"):window(wm.windows.tumbling("5s")):max("vc")

--- The window's record with the lowest `field`, computed in C.
-- @function WindowedStream:min_by
-- @tparam string field a numeric field
-- @treturn Stream
-- @usage s:key_by("id"):window(wm.windows.tumbling("5s")):min_by("vc")

--- The window's record with the highest `field`, computed in C.
-- @function WindowedStream:max_by
-- @tparam string field a numeric field
-- @treturn Stream
-- @usage s:key_by("id"):window(wm.windows.tumbling("5s")):max_by("vc")

-- The built-in aggregations above, computed in C.
for _, agg in ipairs({"sum", "min", "max", "min_by", "max_by"}) do
  WindowedStream[agg] = function(self, field)
    if type(field) ~= "string" then error(agg .. ": expected a field name, got " .. type(field), 2) end
    return window_node(self, {fn_kind = "builtin", agg = agg, field = field}, wname(self, agg .. "(" .. field .. ")"))
  end
end

-- (The SQL planner's, not a public method) A SQL GROUP BY's built-in aggregates computed in
-- C (core/ops/wm_sqlagg.h), the result row built in C: `spec` as bindings/lwm_sqlagg.c reads it.
function WindowedStream:_sql_aggregate(spec)
  return window_node(self, {fn_kind = "sqlagg", sqlagg = spec}, wname(self, "SQL aggregate"))
end

--- Counts the records of each window: `{key = k, count = n, start = s, stop = e}`.
-- @treturn Stream
-- @usage s:key_by("id"):window(wm.windows.tumbling("1min")):count():print()
function WindowedStream:count()
  return window_node(self, {fn_kind = "builtin", agg = "count"}, wname(self, "count"))
end

-- The methods of a stream that Flink users call on a windowed stream by mistake (the window
-- function comes first): each raises at the caller's line with a hint instead of Lua's bare
-- "attempt to call a nil value". Flink's WindowedStream.apply is :process here.
local function misplaced(name)
  local what = name == "apply" and "apply (Flink's WindowFunction is :process here)" or name
  return function()
    error(name .. ": a windowed stream has no " .. what .. "; call it on the stream that "
          .. ":reduce/:aggregate/:process returns (or :sum/:min/:max/:min_by/:max_by/:count), e.g. "
          .. "keyed:window(w):side_output_late_data(\"late\"):sum(\"vc\"):get_side_output(\"late\") "
          .. "(docs/windows.md)", 2)
  end
end

-- (the class stays its own __index, as every class of wm.base; a method it lacks is looked
-- up in the class's own metatable, which answers the misplaced ones with a hint)
setmetatable(WindowedStream, {__index = function(_, k)
  if type(k) == "string" and (k == "apply" or type(base.Stream[k]) == "function"
      or type(KeyedStream[k]) == "function") then
    return misplaced(k)
  end
  return nil
end})

return M
