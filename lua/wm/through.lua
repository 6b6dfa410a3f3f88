--- Repartitioning through a partitioned log (Kafka Streams' `repartition`):
-- `stream:key_by(key, {through = {kafka = {...}} | {nats = {...}}})`, and the cut of such a
-- plan into its write side and the read side of one intermediate partition, for the
-- scale-out supervisor (docs/connectors.md, "Repartitioning"; core/io/wm_through.h).
--
-- The plan of a through: the stream feeds a `through_write` sink (its instances are the
-- writers: writer i of W sends each record to partition fnv1a32(key) mod n, and watermark
-- markers to every partition), and the keyed stream that key_by returns reads a
-- read_kafka / read_nats node over the n intermediate partitions whose tap combines the
-- writers' markers (the minimum over the W writers, idle ones excluded; none before all
-- W have been heard of), drops records already seen (by writer and sequence number) and
-- ends once every writer has ended.
-- @module wm.through
local core = require("wm.core")
local base = require("wm.base")
local duration = require("wm.duration")
local connectors = require("wm.connectors")

local Env, KeyedStream = base.Env, base.KeyedStream
local check_string, props_list = connectors.check_string, connectors.props_list

local M = {}

--- The largest number of intermediate partitions.
M.MAX_PARTITIONS = 10000

local function check_partitions(v, call, level)
  if math.type(v) ~= "integer" or v < 1 or v > M.MAX_PARTITIONS then
    error(string.format("%s: partitions must be an integer from 1 to %d, got %s", call, M.MAX_PARTITIONS,
      tostring(v)), level + 1)
  end
  return v
end

-- The target of `through` ({kafka = {...}} or {nats = {...}}), checked.
local function check_through(th, level)
  local call = "key_by"
  if type(th) ~= "table" then error(call .. ": through must be a table {kafka = {...}} or {nats = {...}}, got "
    .. type(th), level + 1) end
  base.opt_table(th, call .. " through", {kafka = true, nats = true}, level + 1)
  if (th.kafka == nil) == (th.nats == nil) then
    error(call .. ": through takes one of kafka = {...} or nats = {...}", level + 1)
  end
  if th.kafka then
    local o = th.kafka
    local c = "key_by through.kafka"
    base.opt_table(o, c, {brokers = true, topic = true, partitions = true, properties = true,
      replication = true, timeout = true}, level + 1)
    local timeout = o.timeout and duration.ms(o.timeout, c .. " timeout", level + 1) or 10000
    if timeout <= 0 then error(c .. ": timeout must be positive", level + 1) end
    local r = o.replication
    if r ~= nil and (math.type(r) ~= "integer" or r < 1) then
      error(c .. ": replication must be a positive integer, got " .. tostring(r), level + 1)
    end
    return {kind = "kafka", brokers = check_string(o.brokers, c, "brokers", level + 1),
      topic = check_string(o.topic, c, "topic", level + 1),
      partitions = check_partitions(o.partitions, c, level + 1), props = props_list(o.properties, c, level + 1),
      replication = r or -1, timeout = timeout}
  end
  local o = th.nats
  local c = "key_by through.nats"
  base.opt_table(o, c, {url = true, stream = true, subject = true, partitions = true}, level + 1)
  local subject = check_string(o.subject, c, "subject", level + 1)
  if subject:find("[%s*>]") or subject:sub(-1) == "." then
    error(c .. ": subject must be a plain subject (partition p is <subject>.p), got '" .. subject .. "'", level + 1)
  end
  return {kind = "nats", url = check_string(o.url, c, "url", level + 1),
    stream = check_string(o.stream, c, "stream", level + 1), subject = subject,
    partitions = check_partitions(o.partitions, c, level + 1)}
end

-- The hook of key_by's `through` option (the method and its documentation: wm.stream):
-- `keyed` is the stream's keyed stream, `th` the option; `level` as for error, counted from
-- the hook's caller.
local function through(self, keyed, th, level)
  local t = check_through(th, level + 1)
  local last, err = core.through_ensure(t)
  if not last then error("key_by: through: " .. err, level + 1) end
  local env = self.env
  local at = t.kind == "kafka" and (t.topic .. "@" .. t.brokers) or (t.stream .. "@" .. t.url)
  local w = env:_node("through_write", {self.node}, {tkey = keyed.key, target = t,
    name = "repartition to " .. at, parallelism = self.node.parallelism})
  local parts = {}
  for p = 0, t.partitions - 1 do
    if t.kind == "kafka" then
      parts[#parts + 1] = {topic = t.topic, partition = p, name = t.topic .. "/" .. p}
    else
      parts[#parts + 1] = {subject = t.subject .. "." .. p, name = t.subject .. "." .. p}
    end
  end
  -- in one run the reader starts where the log is now (what an earlier run left there is
  -- not this run's); the read side of a cut reads from the start (cut below)
  local r
  if t.kind == "kafka" then
    r = env:_node("read_kafka", {}, {brokers = t.brokers, props = t.props, parts = parts, start = "latest",
      start_value = 0, bounded = false, metadata = false, name = "repartition from " .. at})
  else
    r = env:_node("read_nats", {}, {url = t.url, stream = t.stream, parts = parts, start = "sequence",
      start_value = last + 1, bounded = false, metadata = false, name = "repartition from " .. at})
  end
  r.through, w.reader = w, r
  env._throughs = env._throughs or {}
  table.insert(env._throughs, w)
  return setmetatable({stream = base.stream(env, r), key = keyed.key, where = keyed.where}, KeyedStream)
end
base.extend("key_by", "through", through)

-- The nodes of env that read `from` (directly or not), `from` included.
local function downstream(env, from)
  local down = {[from] = true}
  for _, n in ipairs(env.nodes) do
    for _, i in ipairs(n.inputs) do
      if down[i] then down[n] = true end
    end
  end
  return down
end

-- Keeps the nodes for which keep[n] is set, numbered again in their order.
local function keep_only(env, keep, level)
  local nodes = {}
  for _, n in ipairs(env.nodes) do
    if keep[n] then
      for _, i in ipairs(n.inputs) do
        if not keep[i] then
          error(string.format("cut: %s (%s) reads both sides of the repartitioning", n.name or n.kind,
            n.where or "?"), level + 1)
        end
      end
      nodes[#nodes + 1] = n
      n.id = #nodes
    end
  end
  env.nodes = nodes
end

--- Cuts a job with one `key_by(k, {through = ...})` at the through, for the scale-out
-- supervisor's tasks (docs/connectors.md, "Repartitioning"). Call it before
-- `env:execute()`.
-- @tparam Env env
-- @tparam string side `"write"`: keeps the nodes before the through and its writer (the
--   nodes that do not read the through's output); `"read"`: keeps the reader, restricted to
--   intermediate partition `partition`, and what reads it
-- @tparam integer partition write: the writer's index (from 0); read: the intermediate
--   partition (from 0)
-- @tparam integer writers the number of writers W (the write side's tasks), on both sides
-- @treturn Env env
-- @usage require("wm.through").cut(env, "read", 3, 6)
function M.cut(env, side, partition, writers)
  if getmetatable(env) ~= Env then error("bad argument #1 to 'cut' (an env expected)", 2) end
  if side ~= "write" and side ~= "read" then
    error("bad argument #2 to 'cut' ('write' or 'read' expected, got " .. tostring(side) .. ")", 2)
  end
  if math.type(partition) ~= "integer" or partition < 0 then
    error("bad argument #3 to 'cut' (a partition or writer index from 0 expected, got " .. tostring(partition)
      .. ")", 2)
  end
  if math.type(writers) ~= "integer" or writers < 1 then
    error("bad argument #4 to 'cut' (the number of writers expected, got " .. tostring(writers) .. ")", 2)
  end
  local th = env._throughs or {}
  if #th ~= 1 then
    error(string.format("cut: the job has %d repartitionings (key_by with through); a cut needs exactly one", #th), 2)
  end
  local w = th[1]
  local r = w.reader
  local down = downstream(env, r)
  if side == "write" then
    if partition >= writers then
      error(string.format("bad argument #3 to 'cut' (writer %d of %d)", partition, writers), 2)
    end
    local keep = {}
    for _, n in ipairs(env.nodes) do keep[n] = not down[n] end
    keep_only(env, keep, 2)
    w.writer_base, w.writer_count = partition, writers
  else
    if partition >= #r.parts then
      error(string.format("bad argument #3 to 'cut' (partition %d of %d)", partition, #r.parts), 2)
    end
    keep_only(env, down, 2)
    r.parts = {r.parts[partition + 1]}
    r.start = r.kind == "read_kafka" and "earliest" or "first"
    r.through_writers = writers
    r.cut = true
  end
  env._throughs = side == "write" and {} or {w}
  return env
end

-- WM_THROUGH_CUT=write:I:W | read:P:W (internal, for the specs of the cut): cut at execute.
-- `level` as for error, counted from env_cut's caller.
local function env_cut(env, level)
  local v = os.getenv("WM_THROUGH_CUT")
  if not v or v == "" or not env._throughs or #env._throughs == 0 then return end
  local side, a, b = v:match("^(%a+):(%d+):(%d+)$")
  if not side then error("WM_THROUGH_CUT must be write:I:W or read:P:W, got '" .. v .. "'", level + 1) end
  M.cut(env, side, math.tointeger(a), math.tointeger(b))
end

-- Env:execute's hook (wm.base): a job with a through sets the readers' writer count (the
-- writers' instances) first, and applies WM_THROUGH_CUT.
base.extend("prepare", "through", function(env, level)
  if not env._throughs then return end
  env_cut(env, level + 1)
  for _, w in ipairs(env._throughs) do
    local r = w.reader
    if not r.cut then
      local p = w.parallelism or env.parallelism
      r.through_writers = (w.writer_count or 1) * p
    end
  end
end)

return M
