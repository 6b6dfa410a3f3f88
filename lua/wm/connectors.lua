--- Connectors to partitioned logs: Kafka (`env:read_kafka`, `stream:write_kafka`) and NATS
-- JetStream (`env:read_nats`, `stream:write_nats`), with Flink's per-partition watermarks
-- and watermark alignment (`strategy:with_watermark_alignment`). Methods of the classes of
-- wm.base and wm.watermarks. See docs/connectors.md.
--
-- A partitioned source's partitions are asked of the server when the job is built (so a
-- missing topic or an unreachable broker fails at the job line). Given a watermark
-- strategy (`watermarks = s`, or `assign_timestamps_and_watermarks(s)` after forward
-- operators: map, filter, flat_map, parse_csv, parse_json), every partition gets its own
-- chain of those operators and its own generator; their watermarks meet again in a union,
-- whose watermark is the minimum over the partitions that are not idle.
-- @module wm.connectors
local core = require("wm.core")
local base = require("wm.base")
local duration = require("wm.duration")
local watermarks = require("wm.watermarks")

local Env, Stream, Strategy = base.Env, base.Stream, watermarks.Strategy
local stream, one_input, sink, opt_table = base.stream, base.one_input, base.sink, base.opt_table

local M = {}

--- Operators that keep a record in its partition (no exchange, one input): a strategy
-- after them still runs per partition.
M.FORWARD = {map = true, filter = true, flat_map = true, parse_csv = true, parse_json = true}

--- A non-empty string option, or an error naming the call and the option.
-- @local
local function check_string(v, call, what, level)
  if type(v) ~= "string" or v == "" then
    error(string.format("%s: %s must be a non-empty string, got %s", call, what, type(v)), level + 1)
  end
  return v
end
M.check_string = check_string

local function check_format(format, call, level)
  if format == nil then return "json" end
  if format == "json" or format == "text" or type(format) == "function" then return format end
  error(call .. ": format must be 'json', 'text' or a function returning a string, got "
    .. tostring(format), level + 1)
end

local function check_strategy(s, call, level)
  if s == nil then return nil end
  if getmetatable(s) ~= Strategy then
    error(call .. ": watermarks must be a strategy from wm.watermarks, got " .. type(s), level + 1)
  end
  return s
end

-- "latest" or false/nil.
local function check_bounded(v, call, level)
  if v == nil or v == false then return false end
  if v == "latest" then return true end
  error(call .. ": bounded must be false or 'latest', got " .. tostring(v), level + 1)
end

--- Extra client properties {name = value} as a flat sorted list name, value, ...
-- @local
local function props_list(t, call, level)
  if t == nil then return {} end
  if type(t) ~= "table" then error(call .. ": properties must be a table, got " .. type(t), level + 1) end
  local names = {}
  for k in pairs(t) do
    if type(k) ~= "string" then error(call .. ": property names must be strings", level + 1) end
    names[#names + 1] = k
  end
  table.sort(names)
  local l = {}
  for _, k in ipairs(names) do
    l[#l + 1] = k
    l[#l + 1] = tostring(t[k])
  end
  return l
end
M.props_list = props_list

-- start = a name from `names` or a table {key = integer} with key in `keys`.
local function check_start(v, call, names, keys, level)
  if v == nil then return names[1], 0 end
  if type(v) == "string" then
    for _, n in ipairs(names) do if v == n then return v, 0 end end
  elseif type(v) == "table" then
    for key, mode in pairs(keys) do
      if v[key] ~= nil then
        if math.type(v[key]) ~= "integer" or v[key] < 0 then
          error(string.format("%s: start.%s must be a non-negative integer, got %s", call, key,
            tostring(v[key])), level + 1)
        end
        return mode, v[key]
      end
    end
  end
  local forms = {}
  for _, n in ipairs(names) do forms[#forms + 1] = "'" .. n .. "'" end
  for key in pairs(keys) do forms[#forms + 1] = "{" .. key .. " = n}" end
  table.sort(forms)
  error(string.format("%s: start must be one of %s, got %s", call, table.concat(forms, ", "), tostring(v)),
    level + 1)
end

-- ---- Per-partition watermarks ------------------------------------------------------------

-- The consumers of node `n` in the plan.
local function consumers(env, n)
  local c = 0
  for _, m in ipairs(env.nodes) do
    for _, i in ipairs(m.inputs) do if i == n then c = c + 1 end end
  end
  return c
end

-- The partitioned source that `node` reads through forward operators only, each read by
-- nothing else, and that chain (source side first); or nil.
local function partitioned_upstream(env, node)
  local chain = {}
  local n = node
  while M.FORWARD[n.kind] and #n.inputs == 1 and consumers(env, n) == (n == node and 0 or 1) do
    table.insert(chain, 1, n)
    n = n.inputs[1]
  end
  if (n.kind == "read_kafka" or n.kind == "read_nats") and not n.split
    and consumers(env, n) == (#chain > 0 and 1 or 0) then
    return n, chain
  end
  return nil
end

-- Makes a plan node build no operator: a side output nobody emits on.
local function retire(n)
  n.kind, n.tag = "side_output", "\1retired " .. n.id
end

-- Gives every partition of `src` a copy of `chain` and its own assigner of `strategy`, and
-- returns their union. `level` as for error, counted from split's caller.
local function split(env, src, chain, strategy, where, level)
  src.split = true
  if strategy.align then
    src.align_group, src.align_drift = strategy.align.group, strategy.align.max_drift
    src.align_interval = strategy.align.interval
  end
  local outs = {}
  for j, p in ipairs(src.parts) do
    local s = one_input(stream(env, src), "side_output", {tag = p.tag}, "partition " .. p.name)
    p.nodes = {s.node} -- the partition's own nodes: a scale-out task keeps only its own (wm.scaleout)
    s.node.parallelism = src.parallelism
    for _, tmpl in ipairs(chain) do
      local t = {}
      for k, v in pairs(tmpl) do t[k] = v end
      t.id, t.inputs, t.kind = nil, nil, nil
      t.name = (tmpl.name or tmpl.kind) .. " [" .. p.name .. "]"
      s = one_input(s, tmpl.kind, t)
      s.node.where = tmpl.where
      p.nodes[#p.nodes + 1] = s.node
    end
    local a = one_input(s, "assign", {strategy = strategy}, "timestamps/watermarks [" .. p.name .. "]")
    p.nodes[#p.nodes + 1] = a.node
    a.node.where = where
    -- at the source's parallelism, read forward: the records of a partition stay on the path
    -- of the source instance that owns it, in their order (a single instance fed by every
    -- source instance, then spread round-robin over the union's instances, would mix the
    -- order of one key's records between two paths on several threads); the source marks
    -- the copies of the partitions other instances own idle (wm_partsrc.c)
    a.node.parallelism = src.parallelism
    -- (a restore at another parallelism gives every instance of these nodes the state of
    -- the instance that read the partition: exec/wm_rescale.c)
    for _, pn in ipairs(p.nodes) do pn.partition = j end
    outs[j] = a
  end
  for _, n in ipairs(chain) do retire(n) end
  if #outs == 0 then
    error("no partitions", level + 1)
  end
  local u = outs[1]:union(table.unpack(outs, 2))
  u.node.name = "partitions of " .. src.name
  u.node.where = where
  src.union = u.node
  u.node.parallelism = src.parallelism
  return u
end

-- The hook of Stream:assign_timestamps_and_watermarks (wm.stream, documented there) on a
-- stream that comes from read_kafka or read_nats through forward operators only: one
-- generator per partition (Flink's per-partition watermarks). nil: not such a stream.
base.extend("assign", "partitions", function(s, strategy, level)
  local src, chain = partitioned_upstream(s.env, s.node)
  if src then return split(s.env, src, chain, strategy, base.where(), level + 1) end
  if strategy.align then
    error("assign_timestamps_and_watermarks: with_watermark_alignment needs a read_kafka or read_nats "
      .. "source upstream, through forward operators only (map, filter, flat_map, parse_csv, parse_json)", level + 1)
  end
  return nil
end)

--- Watermark alignment (Flink's FLIP-182/217): partitions whose watermark runs more than
-- `max_drift` ahead of the lowest watermark of the group (over every aligned source of the
-- job on its thread) are paused until it catches up.
-- @tparam string group
-- @param max_drift a duration
-- @param[opt] update_interval a duration (default "1s"): how often paused partitions are
--   checked again while nothing else is read
-- @usage env:read_kafka{brokers = "127.0.0.1:9092", topic = "events",
--   watermarks = wm.watermarks.bounded_out_of_orderness("1s"):with_watermark_alignment("g", "10s")}
function Strategy:with_watermark_alignment(group, max_drift, update_interval)
  check_string(group, "with_watermark_alignment", "the group", 2)
  local drift = duration.ms(max_drift, "with_watermark_alignment max_drift", 2)
  if drift < 0 then error("with_watermark_alignment: max_drift must not be negative", 2) end
  local interval = update_interval and duration.ms(update_interval, "with_watermark_alignment update_interval", 2)
    or 1000
  if interval <= 0 then error("with_watermark_alignment: update_interval must be positive", 2) end
  local s = setmetatable({}, Strategy)
  for k, v in pairs(self) do s[k] = v end
  s.align = {group = group, max_drift = drift, interval = interval}
  return s
end

-- The source stream of a partitioned source node; with a strategy, already split.
local function partitioned(env, call, kind, t, parts, strategy, level)
  t.parts = parts
  t.max_parallelism = nil
  local n = env:_node(kind, {}, t)
  local s = stream(env, n)
  if strategy then
    if #parts == 0 then error(call .. ": no partitions to read", level + 1) end
    return split(env, n, {}, strategy, n.where, 2)
  end
  return s
end

-- ---- Kafka -----------------------------------------------------------------------------------

local kafka_read_opts = {brokers = true, topic = true, topics = true, group = true, start = true,
  bounded = true, metadata = true, watermarks = true, properties = true, name = true, timeout = true,
  scale_out = true}

-- scale_out = true: the checks of its needs, at the job line (docs/scaleout.md).
local function check_scale_out(env, call, opts, level)
  if opts.scale_out == nil or opts.scale_out == false then return false end
  if opts.scale_out ~= true then
    error(call .. ": scale_out must be true or false, got " .. tostring(opts.scale_out), level + 1)
  end
  if opts.group == nil then
    error(call .. ": scale_out needs a group (the name the processes that share the partitions have in "
      .. "common, e.g. group = \"job1\")", level + 1)
  end
  if not env.checkpoint then
    error(call .. ": scale_out needs --checkpoint-dir (or wm.env{checkpoint = {dir = ...}}): a folder "
      .. "that every process of the group reaches, or a NATS store nats://HOST:PORT/BUCKET, where each "
      .. "partition's task keeps its state", level + 1)
  end
  for _, n in ipairs(env.nodes) do
    if n.scale_out then
      error(call .. ": a job has one scale_out source; " .. n.name .. " (" .. n.where .. ") is one already",
        level + 1)
    end
  end
  return true
end

--- A source of the records of Kafka topics (librdkafka): the message values as strings, or
-- with `metadata = true` tables `{value, key, topic, partition, offset, timestamp}`. Records
-- carry the message timestamp.
-- @tparam table opts `brokers` ("host:port,..."), `topic` or `topics`, `group` (default
--   "wmrun"), `start` ("earliest" (default), "latest", "committed", `{timestamp = ms}`),
--   `bounded` (false, or "latest": read up to the end offsets found at the start, then end),
--   `metadata`, `watermarks` (a strategy run per partition), `properties` (librdkafka
--   settings, e.g. `{["fetch.wait.max.ms"] = 10}`), `timeout` (how long to wait for the brokers
--   when the job is built, and at its end for the last commits to the group; default "10s"),
--   `scale_out` (true: the processes of `group` share the partitions, one task per partition
--   with its own state; needs `group` and a checkpoint folder or store, docs/scaleout.md)
-- @usage env:read_kafka{brokers = "127.0.0.1:9092", topic = "events", bounded = "latest"}
function Env:read_kafka(opts)
  if type(opts) ~= "table" then error("read_kafka: expected a table of options, got " .. type(opts), 2) end
  opt_table(opts, "read_kafka", kafka_read_opts, 2)
  local brokers = check_string(opts.brokers, "read_kafka", "brokers", 2)
  local topics = opts.topics or {opts.topic}
  if opts.topic and opts.topics then error("read_kafka: give topic or topics, not both", 2) end
  if type(topics) ~= "table" or #topics == 0 then error("read_kafka: give a topic (or topics)", 2) end
  for i, t in ipairs(topics) do check_string(t, "read_kafka", "topic " .. i, 2) end
  local group = opts.group ~= nil and check_string(opts.group, "read_kafka", "group", 2) or nil
  local start, start_value = check_start(opts.start, "read_kafka", {"earliest", "latest", "committed"},
    {timestamp = "timestamp"}, 2)
  local strategy = check_strategy(opts.watermarks, "read_kafka", 2)
  local props = props_list(opts.properties, "read_kafka", 2)
  local timeout = opts.timeout and duration.ms(opts.timeout, "read_kafka timeout", 2) or 10000
  if timeout <= 0 then error("read_kafka: timeout must be positive", 2) end
  local scale_out = check_scale_out(self, "read_kafka", opts, 2)
  local parts = {}
  for _, topic in ipairs(topics) do
    local n, err = core.kafka_partitions(brokers, topic, props, timeout)
    if not n then error("read_kafka: " .. err, 2) end
    for p = 0, n - 1 do
      local name = topic .. "/" .. p
      parts[#parts + 1] = {topic = topic, partition = p, name = name, tag = "\1partition " .. name}
    end
  end
  return partitioned(self, "read_kafka", "read_kafka", {brokers = brokers, group = group, start = start,
    start_value = start_value, bounded = check_bounded(opts.bounded, "read_kafka", 2),
    metadata = opts.metadata and true or false, props = props, scale_out = scale_out or nil, topics = topics,
    timeout = timeout,
    name = opts.name or ("read_kafka(" .. table.concat(topics, ",") .. "@" .. brokers .. ")")},
    parts, strategy, 2)
end

--- Writes one Kafka message per record (at-least-once; the message timestamp is the
-- record's). The end of input waits until every message is delivered.
-- @tparam table opts `brokers`, `topic`, `key` (a field name or fn(record) -> string; default
--   no key), `partition` (an integer field or fn(record) -> integer, from 0; default:
--   librdkafka's partitioner, by key), `format` ("json" (default), "text", or fn(record) -> string, as write_lines),
--   `properties` (librdkafka settings)
-- @usage stream:write_kafka{brokers = "127.0.0.1:9092", topic = "sums", key = "id"}
function Stream:write_kafka(opts)
  if type(opts) ~= "table" then error("write_kafka: expected a table of options, got " .. type(opts), 2) end
  opt_table(opts, "write_kafka", {brokers = true, topic = true, key = true, partition = true, format = true,
    properties = true, name = true}, 2)
  local brokers = check_string(opts.brokers, "write_kafka", "brokers", 2)
  local topic = check_string(opts.topic, "write_kafka", "topic", 2)
  local key = opts.key
  if key ~= nil and type(key) ~= "string" and type(key) ~= "function" then
    error("write_kafka: key must be a field name or a function, got " .. type(key), 2)
  end
  local part = opts.partition
  if part ~= nil and type(part) ~= "string" and type(part) ~= "function" then
    error("write_kafka: partition must be a field name or a function, got " .. type(part), 2)
  end
  return sink(self, "write_kafka", {brokers = brokers, topic = topic, key = key, partition = part,
    format = check_format(opts.format, "write_kafka", 2), props = props_list(opts.properties, "write_kafka", 2),
    name = opts.name or ("write_kafka(" .. topic .. "@" .. brokers .. ")")})
end

-- ---- NATS JetStream --------------------------------------------------------------------------

--- The largest `partition_count` of read_nats.
M.MAX_PARTITIONS = 100000

local nats_read_opts = {url = true, stream = true, subject = true, durable = true, start = true,
  bounded = true, metadata = true, watermarks = true, name = true, partition_count = true, partitions = true,
  scale_out = true, group = true, lease = true}

--- The partition numbers of a `partitions` list ("0-3", "0,2,5", "0-2,7"), sorted, each once,
-- each in 0 .. count-1 (parsed by the C core, as the NATS membership backend parses it).
function M.parse_partitions(spec, count, call, level)
  if type(spec) ~= "string" then
    error(string.format("%s: partitions must be a string like \"0-3\" or \"0,2,5\", got %s", call, type(spec)),
      level + 1)
  end
  local list, err = core.parse_partitions(spec, count)
  if not list then error(call .. ": " .. err, level + 1) end
  return list
end

-- The subject of partition p of a partitioned filter: its first `*` token replaced by p.
function M.partition_subject(filter, p)
  local toks = {}
  local done = false
  for t in (filter .. "."):gmatch("([^.]*)%.") do
    if t == "*" and not done then t, done = tostring(p), true end
    toks[#toks + 1] = t
  end
  return table.concat(toks, ".")
end

-- read_nats{partition_count = n[, partitions = "..."]}: the partitions read, {subject, name, partition, tag}.
local function nats_partitions(opts, sname, filter, level)
  local n = opts.partition_count
  if math.type(n) ~= "integer" or n < 1 or n > M.MAX_PARTITIONS then
    error("read_nats: partition_count must be an integer 1 .. " .. M.MAX_PARTITIONS .. ", got " .. tostring(n),
      level + 1)
  end
  local has_star = false
  for t in (filter .. "."):gmatch("([^.]*)%.") do has_star = has_star or t == "*" end
  if not has_star then
    error(string.format("read_nats: with partition_count, subject must have a '*' token, the partition "
      .. "number (like \"ev.*.>\"), got \"%s\"", filter), level + 1)
  end
  local list
  if opts.partitions ~= nil then
    list = M.parse_partitions(opts.partitions, n, "read_nats", level + 1)
  else
    list = {}
    for p = 0, n - 1 do list[#list + 1] = p end
  end
  local parts = {}
  for i, p in ipairs(list) do
    local name = sname .. "/" .. p
    parts[i] = {subject = M.partition_subject(filter, p), name = name, stream = sname, partition = p,
      tag = "\1partition " .. name}
  end
  return parts
end

--- A source of the messages of a JetStream stream (libnats): the message data as strings, or
-- with `metadata = true` tables `{value, subject, stream, sequence, timestamp}`. Every
-- subject that holds messages at the start is a partition; records carry the message time.
-- @tparam table opts `url` ("nats://127.0.0.1:4222"), `stream`, `subject` (a filter, default
--   ">"), `durable` (a consumer name; default: ephemeral ordered consumers), `start` ("first"
--   (default), "new", `{sequence = n}`, `{time = ms}`), `bounded` (false or "latest": up to
--   the last message at the start), `metadata`, `watermarks`, `partition_count` (n: partition p
--   is the subject filter with its first '*' token made p, e.g. "ev.*.>" gives ev.p.>; records
--   are put there with wm.partition), `partitions` (only these: "0-3", "0,2,5"), `scale_out`
--   (true: the processes of `group` share the partitions, static share or leases; needs
--   `partition_count` and a checkpoint folder or store, docs/scaleout.md), `group`, `lease` (default
--   "10s": the leases' time in the KV bucket wm_<group>)
-- @usage env:read_nats{url = "nats://127.0.0.1:4222", stream = "EVENTS", subject = "events.>",
--   bounded = "latest"}:parse_csv{"id", "ts:integer"}
function Env:read_nats(opts)
  if type(opts) ~= "table" then error("read_nats: expected a table of options, got " .. type(opts), 2) end
  opt_table(opts, "read_nats", nats_read_opts, 2)
  local url = check_string(opts.url, "read_nats", "url", 2)
  local sname = check_string(opts.stream, "read_nats", "stream", 2)
  local filter = opts.subject ~= nil and check_string(opts.subject, "read_nats", "subject", 2) or ">"
  local durable = opts.durable ~= nil and check_string(opts.durable, "read_nats", "durable", 2) or nil
  local start, start_value = check_start(opts.start, "read_nats", {"first", "new"},
    {sequence = "sequence", time = "time"}, 2)
  local strategy = check_strategy(opts.watermarks, "read_nats", 2)
  local group = opts.group ~= nil and check_string(opts.group, "read_nats", "group", 2) or nil
  local scale_out = check_scale_out(self, "read_nats", opts, 2)
  if scale_out and opts.partition_count == nil then
    error("read_nats: scale_out needs partition_count (and a subject whose '*' token is the partition "
      .. "number, like \"ev.*.>\"): the partitions the processes of the group share", 2)
  end
  local lease
  if opts.lease ~= nil then
    lease = duration.ms(opts.lease, "read_nats lease", 2)
    if lease < 1000 then error("read_nats: lease must be at least 1s, got " .. tostring(opts.lease), 2) end
  end
  local parts
  if opts.partition_count ~= nil then
    parts = nats_partitions(opts, sname, filter, 2)
    local ok, err = core.nats_subjects(url, sname, nil) -- the stream exists
    if not ok then error("read_nats: " .. err, 2) end
  else
    if opts.partitions ~= nil then error("read_nats: partitions needs partition_count", 2) end
    local subjects, err = core.nats_subjects(url, sname, filter)
    if not subjects then error("read_nats: " .. err, 2) end
    parts = {}
    for i, subj in ipairs(subjects) do
      parts[i] = {subject = subj, name = subj, tag = "\1partition " .. subj}
    end
  end
  return partitioned(self, "read_nats", "read_nats", {url = url, stream = sname, durable = durable,
    start = start, start_value = start_value, bounded = check_bounded(opts.bounded, "read_nats", 2),
    metadata = opts.metadata and true or false, group = group, scale_out = scale_out or nil,
    subject = filter, partition_count = opts.partition_count, partitions = opts.partitions, lease = lease,
    name = opts.name or ("read_nats(" .. sname .. "@" .. url .. ")")}, parts, strategy, 2)
end

--- Publishes one JetStream message per record, with a deterministic Nats-Msg-Id
-- ("<id_prefix>/<instance>/<n>"), so the server drops a replayed message within the
-- stream's duplicate window. Creates the stream when missing, on `subjects` (default: the
-- subject, or with a subject function the wildcard of the first subject's first token).
-- @tparam table opts `url`, `stream`, `subject` (a string or fn(record) -> subject),
--   `subjects`, `format` (as write_lines), `id_prefix` (default: the job line and stream),
--   `timeout` (how long the sink waits without any acknowledgement from the server, through
--   pauses and restarts, before it fails the job; default "60s")
-- @usage stream:write_nats{url = "nats://127.0.0.1:4222", stream = "EVENTS",
--   subject = function(r) return "events." .. r.id end}
function Stream:write_nats(opts)
  if type(opts) ~= "table" then error("write_nats: expected a table of options, got " .. type(opts), 2) end
  opt_table(opts, "write_nats", {url = true, stream = true, subject = true, subjects = true, format = true,
    id_prefix = true, name = true, timeout = true}, 2)
  local url = check_string(opts.url, "write_nats", "url", 2)
  local timeout = opts.timeout ~= nil and duration.ms(opts.timeout, "write_nats timeout", 2) or 60000
  if timeout <= 0 then error("write_nats: timeout must be positive", 2) end
  local sname = check_string(opts.stream, "write_nats", "stream", 2)
  local subject = opts.subject
  if type(subject) ~= "string" and type(subject) ~= "function" then
    error("write_nats: subject must be a subject or a function returning one, got " .. type(subject), 2)
  end
  local subjects = opts.subjects
  if subjects ~= nil then
    if type(subjects) ~= "table" or #subjects == 0 then
      error("write_nats: subjects must be a list of subjects", 2)
    end
    for i, s in ipairs(subjects) do check_string(s, "write_nats", "subject " .. i, 2) end
  end
  local prefix = opts.id_prefix ~= nil and check_string(opts.id_prefix, "write_nats", "id_prefix", 2)
    or (base.where() .. "/" .. sname)
  return sink(self, "write_nats", {url = url, stream = sname, subject = subject, subjects = subjects,
    format = check_format(opts.format, "write_nats", 2), id_prefix = prefix, timeout = timeout,
    name = opts.name or ("write_nats(" .. sname .. "@" .. url .. ")")})
end

return M
