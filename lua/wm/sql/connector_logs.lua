--- SQL table connectors over partitioned logs: 'kafka' and 'nats' (docs/connectors.md),
-- with Flink's option names. Each gives wm.sql.connectors a stream of lines (the message
-- values) to parse with the table's format, and writes formatted lines as messages; a
-- table's WATERMARK then runs per partition (the strategy lands right after the parser,
-- through forward operators only: wm.connectors).
--
--   'connector' = 'kafka', 'topic' = 'events', 'properties.bootstrap.servers' = 'host:port',
--   'properties.group.id' = 'g', 'scan.startup.mode' = 'earliest-offset' | 'latest-offset' |
--   'group-offsets' | 'timestamp' (with 'scan.startup.timestamp-millis'),
--   'scan.bounded.mode' = 'unbounded' | 'latest-offset', 'properties.<librdkafka setting>'
--
--   'connector' = 'nats', 'url' = 'nats://host:port', 'stream' = 'EVENTS', 'subject' = 'ev.>',
--   'durable' = 'name', 'scan.startup.mode' = 'earliest' | 'latest' | 'sequence' (with
--   'scan.startup.sequence') | 'timestamp' (with 'scan.startup.timestamp-millis'),
--   'scan.bounded.mode' = 'unbounded' | 'latest'
-- @module wm.sql.connector_logs
local M = {}

local function opt(p, t, key, what)
  local v = t.props[key]
  if v == nil then p:err(t.props_pos.connector, "the %s connector needs '%s'", what, key) end
  return v
end

local function millis(p, t, key)
  local v = math.tointeger(tonumber(t.props[key] or ""))
  if not v or v < 0 then
    p:err(t.props_pos[key] or t.props_pos.connector, "'%s' must be a number of milliseconds", key)
  end
  return v
end

-- The value of an option that takes one of `modes` (name -> value for the DataStream API).
local function mode(p, t, key, modes, dflt)
  local v = t.props[key]
  if v == nil then return modes[dflt] end
  local m = modes[v]
  if m == nil then
    local names = {}
    for k in pairs(modes) do names[#names + 1] = "'" .. k .. "'" end
    table.sort(names)
    p:err(t.props_pos[key], "option '%s' must be one of %s, got '%s'", key, table.concat(names, ", "), v)
  end
  return m
end

-- The 'properties.*' options for librdkafka, but the two the connector sets itself.
local function kafka_properties(t)
  local extra = {}
  for k, v in pairs(t.props) do
    local name = k:match("^properties%.(.+)$")
    if name and name ~= "bootstrap.servers" and name ~= "group.id" then extra[name] = v end
  end
  return extra
end

M.kafka = {
  options = function(k)
    return k == "topic" or k == "scan.startup.mode" or k == "scan.startup.timestamp-millis"
      or k == "scan.bounded.mode" or k:match("^properties%.") ~= nil
  end,
  check = function(p, t)
    opt(p, t, "topic", "kafka")
    opt(p, t, "properties.bootstrap.servers", "kafka")
  end,
  source = function(p, t, env)
    local props = t.props
    local start = mode(p, t, "scan.startup.mode", {["earliest-offset"] = "earliest", ["latest-offset"] = "latest",
      ["group-offsets"] = "committed", timestamp = "timestamp"}, "earliest-offset")
    if start == "timestamp" then start = {timestamp = millis(p, t, "scan.startup.timestamp-millis")} end
    local bounded = mode(p, t, "scan.bounded.mode", {unbounded = false, ["latest-offset"] = "latest"}, "unbounded")
    return env:read_kafka{brokers = props["properties.bootstrap.servers"], topic = props.topic,
      group = props["properties.group.id"], start = start, bounded = bounded, properties = kafka_properties(t)},
      "kafka topic " .. props.topic
  end,
  sink = function(_, t, lines)
    lines:write_kafka{brokers = t.props["properties.bootstrap.servers"], topic = t.props.topic, format = "text",
      properties = kafka_properties(t)}
  end,
}

M.nats = {
  options = function(k)
    return k == "url" or k == "stream" or k == "subject" or k == "durable" or k == "scan.startup.mode"
      or k == "scan.startup.sequence" or k == "scan.startup.timestamp-millis" or k == "scan.bounded.mode"
  end,
  check = function(p, t)
    opt(p, t, "url", "nats")
    opt(p, t, "stream", "nats")
  end,
  source = function(p, t, env)
    local props = t.props
    local start = mode(p, t, "scan.startup.mode", {earliest = "first", latest = "new", sequence = "sequence",
      timestamp = "time"}, "earliest")
    if start == "sequence" then start = {sequence = millis(p, t, "scan.startup.sequence")}
    elseif start == "time" then start = {time = millis(p, t, "scan.startup.timestamp-millis")} end
    local bounded = mode(p, t, "scan.bounded.mode", {unbounded = false, latest = "latest"}, "unbounded")
    return env:read_nats{url = props.url, stream = props.stream, subject = props.subject, durable = props.durable,
      start = start, bounded = bounded}, "nats stream " .. props.stream
  end,
  sink = function(p, t, lines)
    lines:write_nats{url = t.props.url, stream = t.props.stream, subject = opt(p, t, "subject", "nats sink"),
      format = "text"}
  end,
}

return M
