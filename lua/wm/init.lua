--- wmrun's job API: an environment, streams, keyed and windowed streams, sinks.
-- The DSL only builds a plan (a list of nodes); `env:execute()` hands it to the C core.
-- @module wm
local core = require("wm.core")
local duration = require("wm.duration")
local watermarks = require("wm.watermarks")
local windows = require("wm.windows")
local format = require("wm.format")

local M = {
  watermarks = watermarks,
  windows = windows,
  format = format,
  duration = duration,
  core = core,
  MIN = math.mininteger,
  MAX = math.maxinteger,
  version = core.version,
  --- Settings forced by the command line (wmrun fills it; plain Lua leaves it empty).
  _overrides = {},
}

-- The job script's position that called into the library: the first stack frame whose
-- source is not a file of this library.
local lib_dir = debug.getinfo(1, "S").source:match("^@(.*[/\\])") or ""
local function where()
  for level = 3, 40 do
    local info = debug.getinfo(level, "Sl")
    if not info then break end
    local src = info.source
    if info.currentline > 0 and not (src:sub(1, 1) == "@" and src:sub(2, #lib_dir + 1) == lib_dir) then
      return info.short_src .. ":" .. info.currentline
    end
  end
  return "?"
end

local function check_fn(fn, call, level)
  if type(fn) ~= "function" then
    error(string.format("%s: expected a function, got %s", call, type(fn)), (level or 2) + 1)
  end
  return fn
end

---------------------------------------------------------------------------------------------
-- Environment

local Env = {}
Env.__index = Env

local Stream, KeyedStream, WindowedStream, Sink = {}, {}, {}, {}
Stream.__index, KeyedStream.__index, WindowedStream.__index, Sink.__index = Stream, KeyedStream, WindowedStream, Sink

--- Creates an execution environment.
-- @tparam[opt] table opts `parallelism` (default 1), `watermark_interval` (default "200ms";
--   0 = a periodic watermark after every record), `time` ("event", "ingestion", "processing"),
--   `threads` (default 1: every instance on one thread, a deterministic schedule; n: the
--   instances spread over n threads, 0 = one per core; needs wmrun, see docs/parallelism.md)
-- @usage local env = wm.env{ watermark_interval = 0 }
function M.env(opts)
  opts = opts or {}
  if type(opts) ~= "table" then error("env: expected a table of options, got " .. type(opts), 2) end
  for k in pairs(opts) do
    if k ~= "parallelism" and k ~= "watermark_interval" and k ~= "time" and k ~= "name"
      and k ~= "threads" then
      error("env: unknown option '" .. tostring(k) .. "' (parallelism, watermark_interval, time, threads)", 2)
    end
  end
  local threads = opts.threads or 1
  if math.type(threads) ~= "integer" or threads < 0 then
    error("env: threads must be a non-negative integer (0 = one per core), got " .. tostring(threads), 2)
  end
  local p = opts.parallelism or 1
  if math.type(p) ~= "integer" or p < 1 then
    error("env: parallelism must be a positive integer, got " .. tostring(p), 2)
  end
  local wi = opts.watermark_interval
  wi = wi == nil and 200 or duration.ms(wi, "env watermark_interval", 2)
  if wi < 0 then error("env: watermark_interval must not be negative", 2) end
  local time = opts.time or "event"
  if time ~= "event" and time ~= "ingestion" and time ~= "processing" then
    error("env: time must be 'event', 'ingestion' or 'processing', got " .. tostring(time), 2)
  end
  local o = M._overrides
  if o.watermark_interval then wi = o.watermark_interval end
  if o.parallelism then p = o.parallelism end
  if o.threads then threads = o.threads end
  return setmetatable({nodes = {}, parallelism = p, watermark_interval = wi, time = time, threads = threads,
                       metrics = o.metrics, trace_watermarks = o.trace_watermarks,
                       no_drain = o.no_drain, timeline = o.timeline}, Env)
end

-- Where a user function was defined ("job.lua:12"): more precise than the call's line,
-- since Lua gives every call of a method chain the line where the chain starts.
local function fn_where(fn)
  if type(fn) ~= "function" then return nil end
  local info = debug.getinfo(fn, "S")
  if info.what ~= "Lua" or info.linedefined <= 0 then return nil end
  return info.short_src .. ":" .. info.linedefined
end

function Env:_node(kind, inputs, t)
  t = t or {}
  local st = t.strategy
  t.kind, t.inputs = kind, inputs
  t.where = fn_where(t.fn) or fn_where(t.agg and t.agg.add) or fn_where(st and (st.ts_fn or st.factory))
    or where()
  t.id = #self.nodes + 1
  self.nodes[t.id] = t
  return t
end

local function stream(env, node) return setmetatable({env = env, node = node}, Stream) end

--- A bounded source of the given values, in order.
-- @usage env:from_elements({1, 2, 3}) or env:from_elements(1, 2, 3)
function Env:from_elements(...)
  local list
  if select("#", ...) == 1 and type((...)) == "table" and getmetatable((...)) == nil and #(...) > 0 then
    list = ...
  else
    list = table.pack(...)
    list.n = nil
  end
  local n = #list
  return stream(self, self:_node("from_elements", {}, {list = list, count = n, name = "from_elements",
    max_parallelism = 1}))
end

--- The thread (1-based) whose Lua state runs this code. With `threads = n` every thread
-- runs the job script (docs/parallelism.md); thread 1 is the one whose `execute()` returns
-- and whose `collect()` tables fill, so guard top-level side effects with
-- `if wm.thread() == 1 then ... end`.
-- @treturn integer
function M.thread() return core.thread() end

--- Runs the job until every source has ended. Raises the error of a failed job.
function Env:execute(name)
  if self.executed then error("execute: this environment has already run", 2) end
  self.executed = true
  return core.execute(self, name or "wmrun job")
end

---------------------------------------------------------------------------------------------
-- Streams

local function one_input(s, kind, t, name)
  t = t or {}
  t.name = t.name or name or kind
  return stream(s.env, s.env:_node(kind, {s.node}, t))
end

--- Applies fn to every record; the result replaces it.
function Stream:map(fn) return one_input(self, "map", {fn = check_fn(fn, "map")}) end
--- Keeps the records for which fn returns a true value.
function Stream:filter(fn) return one_input(self, "filter", {fn = check_fn(fn, "filter")}) end
--- fn(record, out) may call out(value) any number of times.
function Stream:flat_map(fn) return one_input(self, "flat_map", {fn = check_fn(fn, "flat_map")}) end

--- Names the operator that produced this stream (shown in errors, metrics and traces).
function Stream:name(text)
  if type(text) ~= "string" then error("name: expected a string, got " .. type(text), 2) end
  self.node.name = text
  return self
end

--- Sets the parallelism of the operator that produced this stream.
function Stream:set_parallelism(n)
  if math.type(n) ~= "integer" or n < 1 then
    error("set_parallelism: expected a positive integer, got " .. tostring(n), 2)
  end
  self.node.parallelism = n
  return self
end

--- Redistributes records round-robin to the next operator's instances.
function Stream:rebalance() return one_input(self, "rebalance", {}, "rebalance") end

--- Merges this stream with others (their watermarks are combined, semantics.md §3).
function Stream:union(...)
  local inputs = {self.node}
  for i = 1, select("#", ...) do
    local o = select(i, ...)
    if getmetatable(o) ~= Stream then error("union: argument " .. i .. " is not a stream", 2) end
    inputs[#inputs + 1] = o.node
  end
  return stream(self.env, self.env:_node("union", inputs, {name = "union"}))
end

--- Assigns event timestamps and generates watermarks with a strategy from wm.watermarks.
function Stream:assign_timestamps_and_watermarks(strategy)
  if getmetatable(strategy) ~= watermarks.Strategy then
    error("assign_timestamps_and_watermarks: expected a strategy from wm.watermarks, got " .. type(strategy), 2)
  end
  if strategy.kind == "custom" and not strategy.ts_fn and not strategy.ts_field then
    -- a custom generator may take timestamps the records already have
  end
  return one_input(self, "assign", {strategy = strategy}, "timestamps/watermarks")
end

local function key_spec(k, level)
  if type(k) == "function" then return {fn = k} end
  if type(k) == "string" then return {fields = {k}} end
  if type(k) == "table" and #k > 0 then
    for i, f in ipairs(k) do
      if type(f) ~= "string" then
        error("key_by: field " .. i .. " of the key list is not a string", level + 1)
      end
    end
    return {fields = {table.unpack(k)}}
  end
  error("key_by: expected a function, a field name or a list of field names, got " .. type(k), level + 1)
end

--- Partitions the stream by key: a function, a field name, or a list of field names.
function Stream:key_by(k)
  return setmetatable({stream = self, key = key_spec(k, 2), where = where()}, KeyedStream)
end

--- Records sent to a side output of the operator that produced this stream.
function Stream:get_side_output(tag)
  if type(tag) ~= "string" then error("get_side_output: expected a tag string, got " .. type(tag), 2) end
  return one_input(self, "side_output", {tag = tag}, "side output '" .. tag .. "'")
end

---------------------------------------------------------------------------------------------
-- Sinks

local function sink(s, kind, t)
  local n = s.env:_node(kind, {s.node}, t)
  return setmetatable({env = s.env, node = n}, Sink)
end
Sink.name = Stream.name
Sink.set_parallelism = Stream.set_parallelism

--- Prints every record on standard output in Flink's format (`prefix> value`).
function Stream:print(prefix)
  if prefix ~= nil and type(prefix) ~= "string" then
    error("print: the prefix must be a string, got " .. type(prefix), 2)
  end
  return sink(self, "print", {prefix = prefix, name = prefix and ("print(" .. prefix .. ")") or "print"})
end

--- Collects the records into a table that fills as the job runs (for tests).
-- @treturn table
function Stream:collect()
  local t = {}
  sink(self, "collect", {target = t, name = "collect"})
  return t
end

--- Calls fn(record, ctx) for every record.
function Stream:sink(fn)
  return sink(self, "sink", {fn = check_fn(fn, "sink"), name = "sink"})
end

---------------------------------------------------------------------------------------------
-- Keyed and windowed streams

--- Windows the keyed stream with an assigner from wm.windows.
-- @tparam table assigner e.g. `wm.windows.tumbling("5s")`
-- @treturn WindowedStream
function KeyedStream:window(assigner)
  if type(assigner) ~= "table" or not assigner.kind then
    error("window: expected a window assigner from wm.windows, got " .. type(assigner), 2)
  end
  return setmetatable({keyed = self, assigner = assigner, lateness = 0, where = where()}, WindowedStream)
end

--- Count windows: shorthand for `:window(wm.windows.count(n, slide))`.
-- @tparam integer n records per window
-- @tparam[opt] integer slide records between firings
-- @treturn WindowedStream
function KeyedStream:count_window(n, slide)
  local ok, a = pcall(windows.count, n, slide)
  if not ok then error((a:gsub("^[^:]*:%d+: ", "")), 2) end
  return self:window(a)
end

--- Allowed lateness: windows are kept (and fire again for late records) until
-- the watermark passes their end plus this duration.
-- @tparam integer|string d a duration (>= 0)
-- @treturn WindowedStream
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
-- @tparam string tag
-- @treturn WindowedStream
function WindowedStream:side_output_late_data(tag)
  if type(tag) ~= "string" then error("side_output_late_data: expected a tag string, got " .. type(tag), 2) end
  self.late_tag = tag
  return self
end

--- Replaces the window's default trigger with one from wm.triggers.
-- @tparam table t a trigger
-- @treturn WindowedStream
function WindowedStream:trigger(t)
  if getmetatable(t) ~= M.triggers.Trigger then
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
-- @treturn WindowedStream
function WindowedStream:evictor(e)
  if getmetatable(e) ~= M.evictors.Evictor then
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
  return stream(s.env, s.env:_node("window", {s.node}, t))
end

local function wname(ws, fn)
  return ws.assigner.kind .. (ws.assigner.processing_time and "_processing" or "") .. " window " .. fn
end

--- Reduces each window's records with `fn(acc, record) -> acc` (the first record starts);
-- with `process_fn`, that function receives the reduced value:
-- `process_fn(key, ctx, {reduced}, out)` (ctx as for `process`).
-- @tparam function fn
-- @tparam[opt] function process_fn
-- @treturn Stream
function WindowedStream:reduce(fn, process_fn)
  check_fn(fn, "reduce")
  if process_fn ~= nil then check_fn(process_fn, "reduce (process function)") end
  return window_node(self, {fn_kind = "reduce", fn = fn, process_fn = process_fn}, wname(self, "reduce"))
end

--- Aggregates with `{create = fn() -> acc, add = fn(acc, record) -> acc, result = fn(acc) -> out,
-- merge = fn(a, b) -> acc}` (`merge` is required for session windows); with `process_fn`,
-- that function receives the result: `process_fn(key, ctx, {result}, out)`.
-- @tparam table agg
-- @tparam[opt] function process_fn
-- @treturn Stream
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
-- @tparam function fn
-- @treturn Stream
function WindowedStream:process(fn)
  check_fn(fn, "process")
  return window_node(self, {fn_kind = "process", fn = fn}, wname(self, "process"))
end

for _, agg in ipairs({"sum", "min", "max", "min_by", "max_by"}) do
  WindowedStream[agg] = function(self, field)
    if type(field) ~= "string" then error(agg .. ": expected a field name, got " .. type(field), 2) end
    return window_node(self, {fn_kind = "builtin", agg = agg, field = field}, wname(self, agg .. "(" .. field .. ")"))
  end
end

--- Counts the records of each window: `{key = k, count = n, start = s, stop = e}`.
-- @treturn Stream
function WindowedStream:count()
  return window_node(self, {fn_kind = "builtin", agg = "count"}, wname(self, "count"))
end

M.Env, M.Stream, M.KeyedStream, M.WindowedStream = Env, Stream, KeyedStream, WindowedStream

-- The rest of the API lives in one module per area; each adds its methods to the classes.
local classes = {
  Env = Env, Stream = Stream, KeyedStream = KeyedStream, WindowedStream = WindowedStream,
  Sink = Sink, stream = stream, one_input = one_input, sink = sink, where = where,
  fn_where = fn_where, check_fn = check_fn,
}
require("wm.io").install(M, classes)        -- sources, parsers and sinks
require("wm.keyed").install(M, classes)     -- keyed process functions, rolling aggregations
require("wm.sql.tableapi").install(M, classes) -- SQL and the Table API from Lua (loads wm.sql on use)
M.triggers = require("wm.triggers")
M.evictors = require("wm.evictors")
-- wm.testing needs this module: load it on first use
setmetatable(M, {__index = function(t, k)
  if k == "testing" then
    local testing = require("wm.testing")
    rawset(t, "testing", testing)
    return testing
  end
end})
return M
