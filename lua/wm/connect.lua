--- Connected streams (api.md "Two inputs"; semantics.md §10): two streams, possibly of
-- different types, processed by one operator with one function per input. Keyed connected
-- streams share one `ctx.state` and one timer service per key between both inputs (Flink's
-- `KeyedCoProcessFunction`). The operator's watermark is the minimum over every channel of
-- both inputs (rule 3). See docs/joins.md.
-- @module wm.connect
local base = require("wm.base")

local Stream, KeyedStream = base.Stream, base.KeyedStream

local M = {}

--- Two streams connected (`a:connect(b)`), not keyed: `:map`, `:flat_map`, `:key_by`.
-- Keyed (`a:key_by(k1):connect(b:key_by(k2))`): `:process`.
-- @type ConnectedStreams
local ConnectedStreams = {}
ConnectedStreams.__index = ConnectedStreams
M.ConnectedStreams = ConnectedStreams

--- A broadcast stream (`s:broadcast()`): connected to another stream, every instance of the
-- operator gets every one of its records (Flink's `BroadcastStream`).
-- @type BroadcastStream
local BroadcastStream = {}
BroadcastStream.__index = BroadcastStream
M.BroadcastStream = BroadcastStream

--- This stream, broadcast: connect it to a keyed stream, and every instance of the process
-- function gets every record of it, in this stream's order (semantics.md §10).
-- @treturn BroadcastStream
-- @usage events:key_by("user"):connect(rules:broadcast()):process{...}
function Stream:broadcast()
  return setmetatable({env = self.env, stream = self, where = base.where()}, BroadcastStream)
end

local function check_other(self, other, level)
  local mt = getmetatable(other)
  if mt == BroadcastStream then
    if other.env ~= self.env then
      error("connect: the other stream belongs to another environment (made by another wm.env); "
        .. "streams of one job come from one env", level + 1)
    end
    return
  end
  if mt ~= Stream and mt ~= KeyedStream then
    error("connect: expected a stream, got " .. (mt and "another object" or type(other)), level + 1)
  end
  local env = mt == KeyedStream and other.stream.env or other.env
  if env ~= self.env then
    error("connect: the other stream belongs to another environment (made by another wm.env); "
      .. "streams of one job come from one env", level + 1)
  end
end

--- Connects this stream with `other` (Flink's `DataStream.connect`): the two keep their
-- types, and the next operator gets one function per input.
-- @tparam Stream other the second input
-- @treturn ConnectedStreams
-- @usage orders:connect(rates):map(function(o) return o end, function(r) return r end)
function Stream:connect(other)
  check_other(self, other, 2)
  if getmetatable(other) == BroadcastStream then
    error("connect: a broadcast stream connects to a keyed stream here "
      .. "(a:key_by(k):connect(rules:broadcast())); key this stream first", 2)
  end
  if getmetatable(other) == KeyedStream then
    error("connect: key both streams or neither (this one is not keyed; "
      .. "use a:key_by(k1):connect(b:key_by(k2)))", 2)
  end
  return setmetatable({env = self.env, a = self, b = other, where = base.where()}, ConnectedStreams)
end

--- Connects this keyed stream with another keyed stream: both are partitioned by their own
-- key with the same hash, so equal keys meet in one instance and share one `ctx.state`
-- and timer service (semantics.md §10).
-- @tparam KeyedStream other the second input, keyed
-- @treturn ConnectedStreams
-- @usage orders:key_by("id"):connect(payments:key_by("order")):process{...}
function KeyedStream:connect(other)
  local s = self.stream
  check_other(s, other, 2)
  if getmetatable(other) == BroadcastStream then
    return setmetatable({env = s.env, a = s, b = other.stream, ka = self.key, broadcast = true,
      where = base.where()}, ConnectedStreams)
  end
  if getmetatable(other) ~= KeyedStream then
    error("connect: key both streams or neither (the other one is not keyed; "
      .. "use a:key_by(k1):connect(b:key_by(k2)))", 2)
  end
  return setmetatable({env = s.env, a = s, b = other.stream, ka = self.key, kb = other.key,
    where = base.where()}, ConnectedStreams)
end

local function not_keyed(self, call, level)
  if self.ka then
    error(call .. ": keyed connected streams take :process{process_element1, process_element2, "
      .. "on_timer} (a map of keyed streams is a process function that emits)", level + 1)
  end
end

--- Keys both inputs (Flink's `ConnectedStreams.keyBy(k1, k2)`): as
-- `a:key_by(k1):connect(b:key_by(k2))`.
-- @param k1 the first input's key (a field name, a list of fields, or a function)
-- @param k2 the second input's key
-- @treturn ConnectedStreams keyed
-- @usage a:connect(b):key_by("id", "id"):process{...}
function ConnectedStreams:key_by(k1, k2)
  if self.ka then error("key_by: these connected streams are keyed already", 2) end
  if k2 == nil then error("key_by: give the keys of both inputs, key_by(k1, k2)", 2) end
  return self.a:key_by(k1):connect(self.b:key_by(k2))
end

--- One function per input, each `fn(record) -> value` (Flink's `CoMapFunction`): the
-- result is one stream of both functions' values.
-- @tparam function fn1 for the records of the first input
-- @tparam function fn2 for the records of the second input
-- @treturn Stream
-- @usage a:connect(b):map(function(r) return r.x end, function(r) return r.y end)
function ConnectedStreams:map(fn1, fn2)
  not_keyed(self, "map", 2)
  base.check_fn(fn1, "map (first function)")
  base.check_fn(fn2, "map (second function)")
  -- a co-map keeps no state of its own: each input's function runs on its own records,
  -- and the union combines the watermarks as a two-input operator does (the minimum)
  return self.a:map(fn1):union(self.b:map(fn2)):name("co-map (" .. self.where .. ")")
end

--- One function per input, each `fn(record, out)` calling `out(value)` any number of times
-- (Flink's `CoFlatMapFunction`).
-- @tparam function fn1 for the records of the first input
-- @tparam function fn2 for the records of the second input
-- @treturn Stream
-- @usage a:connect(b):flat_map(function(r, out) out(r) end, function(r, out) end)
function ConnectedStreams:flat_map(fn1, fn2)
  not_keyed(self, "flat_map", 2)
  base.check_fn(fn1, "flat_map (first function)")
  base.check_fn(fn2, "flat_map (second function)")
  return self.a:flat_map(fn1):union(self.b:flat_map(fn2)):name("co-flat_map (" .. self.where .. ")")
end

local process_fields = {process_element1 = true, process_element2 = true, on_timer = true,
                        name = true, snapshot = true, restore = true, state_ttl = true}

local bcast_fields = {process_element = true, process_broadcast_element = true, on_timer = true,
                      name = true, snapshot = true, restore = true, state_ttl = true}

-- the plan node's fields, with the state_ttl's
local function with_ttl(fields, ttl)
  for k, v in pairs(ttl or {}) do fields[k] = v end
  return fields
end

-- keyed:connect(broadcast):process{...}
local function process_broadcast(self, t)
  if type(t) ~= "table" then
    error("process: expected a table {process_element, process_broadcast_element, on_timer}, got "
      .. type(t), 3)
  end
  for k, v in pairs(t) do
    if not bcast_fields[k] and type(v) == "function" then
      error("process: unknown field '" .. tostring(k)
        .. "' (process_element, process_broadcast_element, on_timer, snapshot, restore, state_ttl)", 3)
    end
  end
  for _, f in ipairs({"process_element", "process_broadcast_element"}) do
    if type(t[f]) ~= "function" then error("process: " .. f .. " must be a function, got " .. type(t[f]), 3) end
  end
  if t.on_timer ~= nil and type(t.on_timer) ~= "function" then
    error("process: on_timer must be a function, got " .. type(t.on_timer), 3)
  end
  base.check_hooks(t, "process", 2)
  local ttl = base.state_ttl(t.state_ttl, "process", 3)
  -- the broadcast edge: a node with no operator of its own (as rebalance), whose edges go to
  -- every instance of the next operator
  local b = self.env:_node("broadcast", {self.b.node}, {name = "broadcast"})
  local node = self.env:_node("keyed_process", {self.a.node, b}, with_ttl({
    key = self.ka, bcast = true, fn = t.process_element, fn2 = t.process_broadcast_element,
    on_timer = t.on_timer, obj = t.snapshot ~= nil and t or nil, name = "keyed broadcast process"}, ttl))
  return base.stream(self.env, node)
end

--- A keyed co-process function (Flink's `KeyedCoProcessFunction`):
-- `process_element1(record, ctx, out)` for the first input's records,
-- `process_element2(record, ctx, out)` for the second's, and `on_timer(t, ctx, out)`; the
-- `ctx` is a keyed process function's (`ctx.key`, `ctx.timestamp`, `ctx.state` shared by
-- both inputs for the key, `ctx.timer_service`, `ctx:output(tag, v)`), and `snapshot` /
-- `restore` work as for `keyed:process` (docs/checkpoints.md), and so does `state_ttl`
-- (docs/joins.md, "State that expires").
-- @tparam table t `{process_element1, process_element2[, on_timer, snapshot, restore,
--   state_ttl]}`
-- @treturn Stream the records the functions emit
-- With a broadcast stream (`keyed:connect(rules:broadcast())`) the table is
-- `{process_element, process_broadcast_element[, on_timer, snapshot, restore]}` (Flink's
-- `KeyedBroadcastProcessFunction`): `ctx.broadcast_state`, writable in
-- `process_broadcast_element` and read-only in `process_element` (docs/joins.md).
-- @usage orders:key_by("id"):connect(payments:key_by("order")):process{
--   process_element1 = function(o, ctx, out) ctx.state.order = o end,
--   process_element2 = function(p, ctx, out) if ctx.state.order then out(p) end end}
function ConnectedStreams:process(t)
  if self.broadcast then return process_broadcast(self, t) end
  if not self.ka then
    error("process: connect keyed streams for a process function "
      .. "(a:key_by(k1):connect(b:key_by(k2)) or a:connect(b):key_by(k1, k2))", 2)
  end
  if type(t) ~= "table" then
    error("process: expected a table {process_element1, process_element2, on_timer}, got " .. type(t), 2)
  end
  for k, v in pairs(t) do
    if not process_fields[k] and type(v) == "function" then
      error("process: unknown field '" .. tostring(k)
        .. "' (process_element1, process_element2, on_timer, snapshot, restore, state_ttl)", 2)
    end
  end
  for _, f in ipairs({"process_element1", "process_element2"}) do
    if type(t[f]) ~= "function" then error("process: " .. f .. " must be a function, got " .. type(t[f]), 2) end
  end
  if t.on_timer ~= nil and type(t.on_timer) ~= "function" then
    error("process: on_timer must be a function, got " .. type(t.on_timer), 2)
  end
  base.check_hooks(t, "process")
  local ttl = base.state_ttl(t.state_ttl, "process", 2)
  local env = self.env
  local node = env:_node("keyed_process", {self.a.node, self.b.node}, with_ttl({
    key = self.ka, key2 = self.kb, fn = t.process_element1, fn2 = t.process_element2,
    on_timer = t.on_timer, obj = t.snapshot ~= nil and t or nil,
    name = "keyed co-process"}, ttl))
  return base.stream(env, node)
end

-- (The SQL planner's, not a public method) A SQL regular join in C (core/ops/wm_sqljoin.h,
-- docs/sql.md "Regular joins"): the inner join of these keyed streams (keyed by fields, so that
-- the key exchange routes in C) with `spec` as bindings/lwm_join.c reads it; the joined rows
-- are C rows.
function ConnectedStreams:_sql_join(spec, name)
  local node = self.env:_node("sql_join", {self.a.node, self.b.node},
    {key = self.ka, key2 = self.kb, sqljoin = spec, name = name})
  return base.stream(self.env, node)
end

return M
