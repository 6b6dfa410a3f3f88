--- Stream transformations (api.md: Streams): map, filter, flat_map, union, timestamps and
-- watermarks, key_by, side outputs, names and parallelism. Methods of the classes of
-- wm.base; sources and sinks are in wm.io, windows in wm.windowed.
-- @module wm.stream
local base = require("wm.base")
local watermarks = require("wm.watermarks")

local Stream, KeyedStream, Sink = base.Stream, base.KeyedStream, base.Sink
local check_fn, one_input = base.check_fn, base.one_input

local M = {}

--- Applies `fn` to every record; the result replaces it.
-- @tparam function fn `fn(record) -> record`
-- @treturn Stream
-- @usage words:map(function(w) return {word = w, n = 1} end)
function Stream:map(fn) return one_input(self, "map", {fn = check_fn(fn, "map")}) end
--- Keeps the records for which `fn` returns a true value.
-- @tparam function fn `fn(record) -> boolean`
-- @treturn Stream
-- @usage readings:filter(function(r) return r.vc > 0 end)
function Stream:filter(fn) return one_input(self, "filter", {fn = check_fn(fn, "filter")}) end
--- Zero or more records per record: `fn(record, out)` may call `out(value)` any number of times.
-- @tparam function fn `fn(record, out)`
-- @treturn Stream
-- @usage lines:flat_map(function(l, out) for w in l:gmatch("%a+") do out(w) end end)
function Stream:flat_map(fn) return one_input(self, "flat_map", {fn = check_fn(fn, "flat_map")}) end

--- Names the operator that produced this stream (shown in errors, metrics and traces).
-- @tparam string text the name
-- @treturn Stream this stream
-- @usage s:map(parse):name("parse readings")
function Stream:name(text)
  if type(text) ~= "string" then error("name: expected a string, got " .. type(text), 2) end
  self.node.name = text
  return self
end

--- Gives the operator that produced this stream a stable id for checkpoints (Flink's `uid`):
-- its state is stored under the id rather than under its place in the job, so a checkpoint
-- still fits after operators are added or removed before it (docs/checkpoints.md). An id is
-- 1 to 100 letters, digits, `.`, `_` or `-`, unique in the job; with parallelism n > 1 the
-- instances are `id.1` ... `id.n`.
--
-- A window's `reduce` or `aggregate` function is checked on resume by where it is defined
-- (its file and line): a checkpoint made by another function is refused, as its open windows
-- would come out wrong (docs/checkpoints.md, "A changed window function"). A `version` given
-- here stands for the function instead: the state is taken whatever the function's line,
-- as long as the version is the same; change the version when the function's state changes
-- meaning.
-- @tparam string id the stable id
-- @tparam[opt] string|integer version the version of the operator's function (its state)
-- @treturn Stream this stream
-- @usage env:read_lines("in.csv"):parse_csv{...}:uid("parse")
-- @usage keyed:window(w):reduce(add):uid("sums", 2)
function Stream:uid(id, version)
  if type(id) ~= "string" then error("uid: expected a string, got " .. type(id), 2) end
  if #id < 1 or #id > 100 or id:find("[^%w._-]") then
    error(string.format("uid: bad id %q (1 to 100 letters, digits, '.', '_' or '-')", id), 2)
  end
  if version ~= nil then
    if math.type(version) == "integer" then version = tostring(version) end
    if type(version) ~= "string" or #version < 1 or #version > 100 or version:find("[^%w._-]") then
      error(string.format("uid: bad version %s (a string of 1 to 100 letters, digits, '.', '_' or '-', or an "
        .. "integer)", type(version) == "string" and string.format("%q", version) or tostring(version)), 2)
    end
  end
  local kind = self.node.kind
  if kind == "side_output" or kind == "rebalance" or kind == "harness_input" then
    error(string.format("uid: %s makes no operator of its own; give the uid to the operator "
      .. "before it", kind == "side_output" and "get_side_output" or kind), 2)
  end
  local uids = self.env._uids or {}
  self.env._uids = uids
  local other = uids[id]
  if other and other ~= self.node then
    error(string.format("uid: '%s' is already the uid of %s (%s)", id, other.name or other.kind,
      other.where), 2)
  end
  if self.node.uid and self.node.uid ~= id then uids[self.node.uid] = nil end
  uids[id] = self.node
  self.node.uid = id
  self.node.uid_version = version
  return self
end

--- Sets the parallelism of the operator that produced this stream.
-- @tparam integer n from 1 to `wm.MAX_PARALLELISM`
-- @treturn Stream this stream
-- @usage s:map(f):set_parallelism(4)
function Stream:set_parallelism(n)
  if math.type(n) ~= "integer" or n < 1 then
    error("set_parallelism: expected a positive integer, got " .. tostring(n), 2)
  end
  self.node.parallelism = base.parallelism(n, "set_parallelism", "the parallelism", 2)
  return self
end

--- Names the sink operator (as `Stream:name`).
-- @function Sink:name
-- @tparam string text the name
-- @treturn Sink this sink
-- @usage s:print():name("console")
Sink.name = Stream.name

--- Sets the parallelism of the sink operator (as `Stream:set_parallelism`).
-- @function Sink:set_parallelism
-- @tparam integer n from 1 to `wm.MAX_PARALLELISM`
-- @treturn Sink this sink
-- @usage s:write_lines("out.jsonl"):set_parallelism(1)
Sink.set_parallelism = Stream.set_parallelism

--- Gives the sink operator a stable id for checkpoints (as `Stream:uid`).
-- @function Sink:uid
-- @tparam string id 1 to 100 letters, digits, '.', '_' or '-'
-- @treturn Sink this sink
-- @usage s:write_lines("out.jsonl"):uid("out")
Sink.uid = Stream.uid

--- Redistributes records round-robin to the next operator's instances.
-- @treturn Stream
-- @usage s:rebalance():map(expensive):set_parallelism(4)
function Stream:rebalance() return one_input(self, "rebalance", {}, "rebalance") end

--- Merges this stream with others of the same env (their watermarks are combined: the
-- minimum over the inputs, semantics.md §3).
-- @tparam Stream ... the other streams
-- @treturn Stream
-- @usage a:union(b, c):print()
function Stream:union(...)
  local inputs = {self.node}
  for i = 1, select("#", ...) do
    local o = select(i, ...)
    if getmetatable(o) ~= Stream then error("union: argument " .. i .. " is not a stream", 2) end
    if o.env ~= self.env then
      error("union: argument " .. i .. " is a stream of another environment (made by another wm.env); "
        .. "streams of one job come from one env", 2)
    end
    inputs[#inputs + 1] = o.node
  end
  return base.stream(self.env, self.env:_node("union", inputs, {name = "union"}))
end

--- Assigns event timestamps and generates watermarks with a strategy from wm.watermarks.
-- @tparam Strategy strategy e.g. `wm.watermarks.bounded_out_of_orderness("2s"):with_timestamp_field("ts")`
-- @treturn Stream
-- @usage s:assign_timestamps_and_watermarks(
--   wm.watermarks.bounded_out_of_orderness("2s"):with_timestamp_field("ts", 1000))
function Stream:assign_timestamps_and_watermarks(strategy)
  if getmetatable(strategy) ~= watermarks.Strategy then
    error("assign_timestamps_and_watermarks: expected a strategy from wm.watermarks, got " .. type(strategy), 2)
  end
  for _, h in ipairs(base.hooks("assign")) do -- wm.connectors: a partitioned source upstream
    local s = h.fn(self, strategy, 2)
    if s then return s end
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

--- Partitions the stream by key: a function, a field name, or a list of field names
-- (a composite key). Field keys are read in C, with no Lua call per record.
-- With `{through = target}` the records go through an intermediate topic (Kafka) or stream
-- (NATS) of `partitions` partitions, partitioned by the key, and are read back from it: the
-- keyed stream goes on from there, with event time carried by watermark markers (the
-- minimum over the writers). In one process the job writes and reads in the same run. The
-- topic or stream is made when missing (wm.through, docs/connectors.md "Repartitioning").
-- @tparam function|string|table k `fn(record) -> key`, `"field"` or `{"f1", "f2"}`
-- @tparam[opt] table opts `through = {kafka = {brokers, topic, partitions = n, properties,
--   replication, timeout}}` (timeout: how long building the job waits for the brokers,
--   default "10s") or `through = {nats = {url, stream, subject, partitions = n}}` (partition
--   p of NATS is the subject `<subject>.p`)
-- @treturn KeyedStream
-- @usage s:key_by("id"):window(wm.windows.tumbling("5s")):sum("vc")
-- s:key_by("id", {through = {kafka = {brokers = "127.0.0.1:9092", topic = "by-id",
--   partitions = 4}}}):window(wm.windows.tumbling("5s")):sum("vc")
function Stream:key_by(k, opts)
  local hooks = base.hooks("key_by") -- the options' hooks (wm.through: through)
  if opts ~= nil then
    local known = {}
    for _, h in ipairs(hooks) do known[h.name] = true end
    base.opt_table(opts, "key_by", known, 2)
  end
  local keyed = setmetatable({stream = self, key = key_spec(k, 2), where = base.where()}, KeyedStream)
  if opts == nil then return keyed end
  for _, h in ipairs(hooks) do
    if opts[h.name] ~= nil then keyed = h.fn(self, keyed, opts[h.name], 2) end
  end
  return keyed
end

--- Records sent to a side output of the operator that produced this stream (late data
-- of a window, `ctx:output(tag, v)` of a process function, parse errors).
-- @tparam string tag the side output's tag
-- @treturn Stream
-- @usage local sums = windowed:side_output_late_data("late"):sum("vc")
-- sums:get_side_output("late"):print("late")
function Stream:get_side_output(tag)
  if type(tag) ~= "string" then error("get_side_output: expected a tag string, got " .. type(tag), 2) end
  return one_input(self, "side_output", {tag = tag}, "side output '" .. tag .. "'")
end

return M
