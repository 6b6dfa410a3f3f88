--- Stream transformations (api.md: Streams): map, filter, flat_map, union, timestamps and
-- watermarks, key_by, side outputs, names and parallelism. Methods of the classes of
-- wm.base; sources and sinks are in wm.io, windows in wm.windowed.
-- @module wm.stream
local base = require("wm.base")
local watermarks = require("wm.watermarks")

local Stream, KeyedStream, Sink = base.Stream, base.KeyedStream, base.Sink
local check_fn, one_input = base.check_fn, base.one_input

local M = {}

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

--- Gives the operator that produced this stream a stable id for checkpoints (Flink's `uid`):
-- its state is stored under the id rather than under its place in the job, so a checkpoint
-- still fits after operators are added or removed before it (docs/checkpoints.md). An id is
-- 1 to 100 letters, digits, `.`, `_` or `-`, unique in the job; with parallelism n > 1 the
-- instances are `id.1` ... `id.n`.
-- @tparam string id the stable id
-- @usage env:read_lines("in.csv"):parse_csv{...}:uid("parse")
function Stream:uid(id)
  if type(id) ~= "string" then error("uid: expected a string, got " .. type(id), 2) end
  if #id < 1 or #id > 100 or id:find("[^%w._-]") then
    error(string.format("uid: bad id %q (1 to 100 letters, digits, '.', '_' or '-')", id), 2)
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
  return self
end

--- Sets the parallelism of the operator that produced this stream.
function Stream:set_parallelism(n)
  if math.type(n) ~= "integer" or n < 1 then
    error("set_parallelism: expected a positive integer, got " .. tostring(n), 2)
  end
  self.node.parallelism = base.parallelism(n, "set_parallelism", "the parallelism", 2)
  return self
end

Sink.name = Stream.name
Sink.set_parallelism = Stream.set_parallelism
Sink.uid = Stream.uid

--- Redistributes records round-robin to the next operator's instances.
function Stream:rebalance() return one_input(self, "rebalance", {}, "rebalance") end

--- Merges this stream with others (their watermarks are combined, semantics.md §3).
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
function Stream:assign_timestamps_and_watermarks(strategy)
  if getmetatable(strategy) ~= watermarks.Strategy then
    error("assign_timestamps_and_watermarks: expected a strategy from wm.watermarks, got " .. type(strategy), 2)
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
  return setmetatable({stream = self, key = key_spec(k, 2), where = base.where()}, KeyedStream)
end

--- Records sent to a side output of the operator that produced this stream.
function Stream:get_side_output(tag)
  if type(tag) ~= "string" then error("get_side_output: expected a tag string, got " .. type(tag), 2) end
  return one_input(self, "side_output", {tag = tag}, "side output '" .. tag .. "'")
end

return M
