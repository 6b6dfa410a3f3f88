--- The watermark strategy lab (docs/lab.md): replays a recorded file with its arrival times
-- and scores candidate strategies against the perfect watermark.
--
-- Every candidate runs over the same replay: a `wm.testing` harness (the same core graph as
-- `wmrun`) whose virtual processing-time clock jumps to each record's arrival time, so that
-- periodic watermarks, idleness and processing-time timers happen when they would have
-- live. The figures are measured at the window operator (see docs/lab.md for their exact
-- definitions).
-- @module wm.lab
-- @usage
-- -- a lab file (wm is the library, loaded as usual)
-- return wm.lab{
--   input = {path = "events.csv", fields = {"k", "ts:integer", "v:integer", "arrival:integer"},
--            timestamp = "ts", arrival = "arrival"},
--   key = "k", window = wm.windows.tumbling("1s"), watermark_interval = "200ms",
--   strategies = {["bounded 1s"] = wm.watermarks.bounded_out_of_orderness("1s")},
-- }
local core = require("wm.core")
local duration = require("wm.duration")
local wm = require("wm.datastream") -- not the facade `wm`, which loads this module
local testing = require("wm.testing")

local M = {}

local Lab = {}
Lab.__index = Lab

--- The columns of a result row, in the order of the table and of the JSON lines.
M.COLUMNS = {"name", "records", "late", "dropped", "late_firings", "lag_p50", "lag_p99",
             "lag_max", "latency_p50", "latency_p99", "latency_max", "first_final", "admit_p99",
             "admit_p999", "admit_max", "top_late_key"}

-- The upper bounds (ms, exclusive) of the lateness histogram's buckets; the last bucket
-- holds the rest (`>= 10min`).
M.LATENESS_BUCKETS = {10, 100, 1000, 10000, 60000, 600000}

-- A key as the breakdown names it: a string or number as is, a composite key's fields joined
-- by ",", a missing key "?".
local function key_text(k)
  if k == false or k == nil then return "?" end
  if type(k) == "table" then
    local parts = {}
    for i, x in ipairs(k) do parts[i] = tostring(x) end
    return table.concat(parts, ",")
  end
  return tostring(k)
end

--- Adds the breakdown of the late records to a result of the replay (`lab:run` does):
-- `late_by_key` (`{key, late}` per key, most late records first, then by key),
-- `top_late_key` ("key n"), `lateness_hist` (`{lt, n}` per bucket of M.LATENESS_BUCKETS;
-- `lt` nil for the last), `admit_p99`, `admit_p999`, `admit_max` (the smallest allowed
-- lateness that admits 99 %, 99.9 %, all of the late records: nearest rank of the lateness,
-- plus 1), `first_final` (the share of fired windows no record reached after their first
-- firing; nil when none fired).
-- @tparam table r a result with `late_lateness`, `late_keys`, `first_firings`, `damaged_windows`
-- @treturn table r
-- @usage local r = wm.lab.breakdown{late_lateness = {0, 500}, late_keys = {"a", "a"}}
-- print(r.top_late_key, r.admit_max) --> a 2   501
function M.breakdown(r)
  local lat, keys = r.late_lateness or {}, r.late_keys or {}
  local per, order = {}, {}
  for i = 1, #keys do
    local k = key_text(keys[i])
    if not per[k] then per[k] = 0; order[#order + 1] = k end
    per[k] = per[k] + 1
  end
  table.sort(order, function(a, b)
    if per[a] ~= per[b] then return per[a] > per[b] end
    return a < b
  end)
  local by_key = {}
  for i, k in ipairs(order) do by_key[i] = {key = k, late = per[k]} end
  r.late_by_key = by_key
  r.top_late_key = by_key[1] and (by_key[1].key .. " " .. by_key[1].late) or nil
  local hist = {}
  for i, b in ipairs(M.LATENESS_BUCKETS) do hist[i] = {lt = b, n = 0} end
  hist[#hist + 1] = {n = 0}
  for _, l in ipairs(lat) do
    local i = 1
    while M.LATENESS_BUCKETS[i] and l >= M.LATENESS_BUCKETS[i] do i = i + 1 end
    hist[i].n = hist[i].n + 1
  end
  r.lateness_hist = hist
  local sorted = {table.unpack(lat)}
  table.sort(sorted)
  local n = #sorted
  local function admit(per_mille) -- nearest rank, then + 1: the lateness is W - (end - 1)
    if n == 0 then return nil end
    local rank = math.max(1, (per_mille * n + 999) // 1000)
    return math.max(0, sorted[rank] + 1)
  end
  r.admit_p99, r.admit_p999, r.admit_max = admit(990), admit(999), admit(1000)
  local f = r.first_firings or 0
  r.first_final = f > 0 and (f - (r.damaged_windows or 0)) / f or nil
  return r
end

--- A duration as a short label: "0ms", "250ms", "2s", "1min".
-- @tparam integer ms
-- @treturn string
-- @usage wm.lab.label(2000) --> "2s"
function M.label(ms)
  if ms ~= 0 and ms % 60000 == 0 then return (ms // 60000) .. "min" end
  if ms ~= 0 and ms % 1000 == 0 then return (ms // 1000) .. "s" end
  return ms .. "ms"
end

local function fail(msg, level) error("wm.lab: " .. msg, level + 1) end

-- "avg:field" as an aggregate with a merge (sessions merge): {sum, n} -> sum / n.
local function avg_of(field)
  return {
    create = function() return {0, 0} end,
    add = function(a, r)
      local v = r[field]
      if type(v) ~= "number" then error("avg: field '" .. field .. "' is " .. tostring(v) .. ", not a number", 0) end
      a[1], a[2] = a[1] + v, a[2] + 1
      return a
    end,
    result = function(a) return a[1] / a[2] end,
    merge = function(a, b) return {a[1] + b[1], a[2] + b[2]} end,
  }
end

--- The window function of a lab spec's `aggregate`, as a function of the windowed stream.
-- `nil` or `"count"`: `count()`; `"sum:f"`, `"min:f"`, `"max:f"`, `"min_by:f"`, `"max_by:f"`
-- (computed in C), `"avg:f"` (the mean of field f); a function `fn(windowed) -> stream`
-- (`reduce`, `aggregate`, `process`, ...).
-- @param a the spec's `aggregate`
-- @tparam[opt=2] integer level the error level
-- @treturn function `fn(windowed) -> stream`
-- @usage local f = wm.lab.aggregate_fn("sum:v")
function M.aggregate_fn(a, level)
  level = level or 2
  if a == nil or a == "count" then return function(w) return w:count() end end
  if type(a) == "function" then
    return function(w)
      local s = a(w)
      if type(s) ~= "table" or not s.node or s.node.kind ~= "window" then
        error("wm.lab: aggregate: the function must return the windowed stream's result "
          .. "(e.g. w:reduce(fn)), got " .. tostring(s), 0)
      end
      return s
    end
  end
  if type(a) == "string" then
    local fn, field = a:match("^([%w_]+):([%w_]+)$")
    if fn == "avg" then return function(w) return w:aggregate(avg_of(field)) end end
    if fn == "sum" or fn == "min" or fn == "max" or fn == "min_by" or fn == "max_by" then
      return function(w) return w[fn](w, field) end
    end
  end
  fail("aggregate must be \"count\", \"sum:field\" (min, max, min_by, max_by, avg) or a function(windowed) "
    .. "-> stream, got " .. (type(a) == "string" and string.format("%q", a) or type(a)), level + 1)
end

--- A sweep: one strategy per value, `make(value)`, each labelled with its value (durations
-- as M.label writes them), for a list entry of `strategies`.
-- @tparam function make e.g. `wm.watermarks.bounded_out_of_orderness`
-- @tparam table values e.g. `{0, "100ms", "1s"}`
-- @treturn table a list of strategies
-- @usage strategies = {bounded = wm.lab.sweep(wm.watermarks.bounded_out_of_orderness, {0, "1s"})}
function M.sweep(make, values)
  if type(make) ~= "function" then error("sweep: expected a function that makes a strategy", 2) end
  if type(values) ~= "table" or #values == 0 then error("sweep: expected a list of values", 2) end
  local list = {}
  for i, v in ipairs(values) do
    local s = make(v)
    if getmetatable(s) ~= wm.watermarks.Strategy then
      error("sweep: make(" .. tostring(v) .. ") did not return a strategy", 2)
    end
    local copy = setmetatable({}, wm.watermarks.Strategy)
    for k, x in pairs(s) do copy[k] = x end
    copy.lab_label = (math.type(v) == "integer" or type(v) == "string")
      and M.label(duration.ms(v, "sweep", 2)) or tostring(v)
    list[i] = copy
  end
  return list
end

local function is_strategy(s) return getmetatable(s) == wm.watermarks.Strategy end

-- The candidates, sorted by name; the entries of a list keep their order.
local function candidates(strategies, level)
  if type(strategies) ~= "table" then fail("strategies must be a table of name = strategy", level + 1) end
  local names = {}
  for name in pairs(strategies) do
    if type(name) ~= "string" then
      fail("strategies: every key must be a name (a string), got " .. tostring(name), level + 1)
    end
    names[#names + 1] = name
  end
  if #names == 0 then fail("strategies: name at least one candidate", level + 1) end
  table.sort(names)
  local list, seen = {}, {perfect = true}
  local function add(name, s)
    if seen[name] then fail("strategies: two candidates are named '" .. name .. "'", level + 2) end
    seen[name] = true
    list[#list + 1] = {name = name, strategy = s}
  end
  for _, name in ipairs(names) do
    local s = strategies[name]
    if is_strategy(s) then
      add(name, s)
    elseif type(s) == "table" and #s > 0 then
      for i, x in ipairs(s) do
        if not is_strategy(x) then
          fail(string.format("strategies['%s'][%d] is not a strategy from wm.watermarks", name, i), level + 1)
        end
        local label = x.lab_label or x.lab_name or (x.kind == "bounded" and M.label(x.delay))
          or (x.idle_advance and (M.label(x.bound) .. " idle " .. M.label(x.idle_advance))) or ("#" .. i)
        add(name .. " " .. label, x)
      end
    else
      fail(string.format("strategies['%s'] is not a strategy from wm.watermarks (or a list of them)",
        name), level + 1)
    end
  end
  return list
end

--- Creates a lab (also `wm.lab{...}`). Nothing runs until `lab:run()`.
-- @tparam table spec `input = {path, fields, timestamp, arrival[, sep][, header]}` (fields as
--   `parse_csv`'s columns; timestamp and arrival name integer columns in ms; a relative path
--   is relative to the lab file under `wmrun lab`, to the current directory otherwise), `key`
--   (as `key_by`), `window` (a tumbling, sliding or session event-time assigner; a session
--   with a fixed gap), `aggregate` (M.aggregate_fn: "count" by default), `allowed_lateness`
--   (default 0), `watermark_interval` (default 200 ms; 0 = after every record), `drain` (how
--   long the clock runs on after the last arrival before the input ends; default the
--   watermark interval), `strategies` (name -> strategy, or a list of strategies: a sweep)
-- @tparam[opt=2] integer level the error level of a bad spec (as `error`)
-- @treturn Lab
-- @usage local lab = wm.lab.new{input = {path = "events.csv", fields = {"k", "ts:integer",
--   "arrival:integer"}, timestamp = "ts", arrival = "arrival"}, key = "k",
--   window = wm.windows.tumbling("1s"), strategies = {wm.watermarks.monotonous()}}
function M.new(spec, level)
  level = level or 2
  if type(spec) ~= "table" then fail("expected a table, got " .. type(spec), level) end
  local known = {input = true, key = true, window = true, allowed_lateness = true,
                 watermark_interval = true, strategies = true, drain = true, title = true,
                 aggregate = true}
  for k in pairs(spec) do
    if not known[k] then fail("unknown field '" .. tostring(k) .. "'", level) end
  end
  local input = spec.input
  if type(input) ~= "table" then fail("input must be a table {path = ..., fields = ...}", level) end
  for k in pairs(input) do
    if not ({path = true, fields = true, timestamp = true, arrival = true, sep = true, header = true,
             kafka = true})[k] then
      fail("input: unknown field '" .. tostring(k) .. "'", level)
    end
  end
  local kafka = input.kafka
  if kafka ~= nil then -- a recorded topic: arrival = each message's timestamp
    if type(kafka) ~= "table" or type(kafka.brokers) ~= "string" or type(kafka.topic) ~= "string" then
      fail("input.kafka must be {brokers = \"host:port\", topic = \"name\"[, properties][, timeout]}", level)
    end
    for k in pairs(kafka) do
      if not ({brokers = true, topic = true, properties = true, timeout = true})[k] then
        fail("input.kafka: unknown field '" .. tostring(k) .. "'", level)
      end
    end
    if input.path ~= nil or input.arrival ~= nil or input.header then
      fail("input.kafka replaces input.path and input.arrival (the arrival is each message's timestamp) "
        .. "and its values have no header", level)
    end
  elseif type(input.path) ~= "string" then
    fail("input.path must be a file name (or input.kafka a topic)", level)
  end
  if type(input.fields) ~= "table" then fail("input.fields must be a list of columns, as parse_csv's", level) end
  for _, f in ipairs(kafka and {"timestamp"} or {"timestamp", "arrival"}) do
    if type(input[f]) ~= "string" then fail("input." .. f .. " must name a column", level) end
  end
  -- the columns, checked by parse_csv itself
  local csv = {sep = input.sep}
  for i, f in ipairs(input.fields) do csv[i] = f end
  local ok, probe = pcall(function() return wm.env{}:from_elements(""):parse_csv(csv) end)
  if not ok then fail("input.fields: " .. tostring(probe):gsub("^[^:]*:%d+: ", ""), level) end
  local node = probe.node
  node.header = input.header and true or false
  for _, f in ipairs(kafka and {"timestamp"} or {"timestamp", "arrival"}) do
    local col
    for _, c in ipairs(node.fields) do if c.name == input[f] then col = c end end
    if not col then fail(string.format("input.%s: no column '%s' in input.fields", f, input[f]), level) end
    if col.type ~= "integer" then
      fail(string.format("input.%s: column '%s' must be declared '%s:integer' (ms)", f, input[f], input[f]), level)
    end
  end
  if spec.key == nil then fail("key is missing (a field name, a list of them, or a function)", level) end
  local w = spec.window
  if type(w) ~= "table" or (w.kind ~= "tumbling" and w.kind ~= "sliding" and w.kind ~= "session")
      or w.processing_time then
    fail("window must be an event-time wm.windows.tumbling(...), sliding(...) or session(...)", level)
  end
  if w.kind == "session" and not w.gap then
    fail("window: a session window of the lab needs a fixed gap (wm.windows.session(\"5s\")), "
      .. "not a function: its figures are defined by the gap (docs/lab.md)", level)
  end
  local aggregate = M.aggregate_fn(spec.aggregate, level)
  local L = duration.ms(spec.allowed_lateness or 0, "wm.lab allowed_lateness", level)
  if L < 0 then fail("allowed_lateness must not be negative", level) end
  local wi = duration.ms(spec.watermark_interval == nil and 200 or spec.watermark_interval,
    "wm.lab watermark_interval", level)
  if wi < 0 then fail("watermark_interval must not be negative", level) end
  local drain = duration.ms(spec.drain == nil and wi or spec.drain, "wm.lab drain", level)
  if drain < 0 then fail("drain must not be negative", level) end
  return setmetatable({
    path = input.path or ("kafka topic '" .. kafka.topic .. "'"), kafka = kafka, csv = csv, parse_node = node,
    timestamp = input.timestamp, arrival = input.arrival,
    key = spec.key, window = w, allowed_lateness = L, watermark_interval = wi, drain = drain,
    title = spec.title, aggregate = aggregate,
    aggregate_label = type(spec.aggregate) == "string" and spec.aggregate or
      (spec.aggregate == nil and "count" or "custom"),
    candidates = candidates(spec.strategies, level),
  }, Lab)
end

setmetatable(M, {__call = function(_, spec) return M.new(spec, 3) end})

--- The recorded data (loaded once, then shared by every run).
-- @treturn userdata the replay data (`:count()` records)
-- @usage print(lab:data():count() .. " records")
function Lab:data()
  if not self._data and self.kafka then self._data = self:_kafka_data() end
  if not self._data then
    local path = self.path
    if self.base_dir and path:sub(1, 1) ~= "/" then path = self.base_dir .. "/" .. path end
    local ok, d = pcall(core.replay_data, path, self.parse_node, self.timestamp, self.arrival, self._watch)
    if not ok then
      if self._watch and self._watch:pending() then error(tostring(d), 0) end -- interrupted by ...
      error("wm.lab: " .. tostring(d), 0)
    end
    if d:count() == 0 then error("wm.lab: " .. path .. " holds no records", 0) end
    self._data = d
  end
  return self._data
end

-- input.kafka: the topic read once, from the earliest offsets to the end offsets found at the
-- start (read_kafka{bounded = "latest", metadata = true}), each message's value a line and
-- its timestamp (the broker's LogAppendTime when the topic keeps one, else the producer's
-- CreateTime) its arrival; lines that arrived at the same millisecond keep the order read
-- (partition by partition). Errors name the topic, partition and offset of the message.
function Lab:_kafka_data()
  require("wm.connectors")
  local k = self.kafka
  local env = wm.env{}
  local got = env:read_kafka{brokers = k.brokers, topic = k.topic, start = "earliest", bounded = "latest",
    metadata = true, properties = k.properties, timeout = k.timeout}:collect()
  local ok, err = pcall(env.execute, env, "wm.lab input")
  if not ok then error("wm.lab: input.kafka: " .. tostring(err), 0) end
  if #got == 0 then error("wm.lab: kafka topic '" .. k.topic .. "' at " .. k.brokers .. " holds no messages", 0) end
  local tmp = os.tmpname()
  local f = assert(io.open(tmp, "wb"))
  local arrivals, where = {}, {}
  for i, m in ipairs(got) do
    where[i] = string.format("kafka topic '%s' partition %d offset %d", k.topic, m.partition, m.offset)
    local v = tostring(m.value)
    if v:find("[\r\n]") or math.type(m.timestamp) ~= "integer" then
      f:close()
      os.remove(tmp)
      error("wm.lab: " .. where[i] .. (math.type(m.timestamp) ~= "integer" and ": the message has no timestamp"
        or ": the value holds a line break (one record a message, as parse_csv reads it)"), 0)
    end
    f:write(v, "\n")
    arrivals[i] = m.timestamp
  end
  f:close()
  local okd, d = pcall(core.replay_data, tmp, self.parse_node, self.timestamp, arrivals, self._watch)
  os.remove(tmp)
  if not okd then
    local msg = tostring(d):gsub(tmp:gsub("%p", "%%%0") .. ":(%d+)", function(n) return where[tonumber(n)] end)
    error("wm.lab: " .. msg, 0)
  end
  return d
end

-- The pipeline of one candidate (strategy nil: the perfect watermark, pushed by the replay).
function Lab:_harness(cand)
  local lab = self
  return testing.harness(function(input)
    local s = input:parse_csv(lab.csv)
    if cand.strategy then
      s = s:assign_timestamps_and_watermarks(cand.strategy:with_timestamp_field(lab.timestamp))
    end
    return lab.aggregate(s:key_by(lab.key):window(lab.window):allowed_lateness(lab.allowed_lateness))
  end, {watermark_interval = self.watermark_interval, processing_time = select(3, self:data():get(1)),
        title = cand.name})
end

--- Runs the perfect watermark and every candidate over the replay.
-- @tparam[opt] table opts `keep_output` (each result gets `output`, the window counts in
--   firing order), `curve` (points of each watermark curve to keep), `marks` (late records
--   to keep at most, for the picture)
-- @treturn table one result per row, `perfect` first: the fields of M.COLUMNS, and
--   `latency_windows`, `end_firings` (windows first fired by the end of the input),
--   `curve`, `marks`, `output` when asked for
-- @usage local results = lab:run()
-- io.write(lab:table(results))
function Lab:run(opts)
  opts = opts or {}
  self:data()
  local rows = {{name = "perfect"}}
  for _, c in ipairs(self.candidates) do rows[#rows + 1] = c end
  local results = {}
  for i, cand in ipairs(rows) do results[i] = self:_replay(cand, opts) end
  return results
end

-- Replays one candidate ({name, strategy}; strategy nil: the perfect watermark): its row.
function Lab:_replay(cand, opts)
  local data, w = self:data(), self.window
  do
    local h = self:_harness(cand)
    local ok, r = pcall(h._h.replay, h._h, data, {
      perfect = cand.strategy == nil, keep_output = opts.keep_output,
      size = w.kind ~= "session" and w.size or 0, slide = w.slide or w.size or 0, offset = w.offset or 0,
      gap = w.kind == "session" and w.gap or nil,
      drain = self.drain, curve = opts.curve, marks = opts.marks, watch = self._watch})
    if not ok then
      h:close()
      local sig = self._watch and self._watch:pending()
      if sig then error(string.format("%s while replaying candidate '%s'", sig, cand.name), 0) end
      error(string.format("wm.lab: candidate '%s': %s", cand.name, tostring(r)), 0)
    end
    r.name = cand.name
    M.breakdown(r)
    if opts.keep_output then r.output = h:output() end
    h:close()
    return r
  end
end

-- ---- tuning ----------------------------------------------------------------------------

local PHI = (math.sqrt(5) - 1) / 2

-- The tune spec, checked: params in a fixed (sorted) order, each {name, lo, hi} in ms.
local function tune_spec(spec, level)
  if type(spec) ~= "table" then fail("tune: expected a table", level) end
  local known = {strategy = true, params = true, objective = true, constraint = true, grid = true,
                 tolerance = true, out = true, lab = true}
  for k in pairs(spec) do
    if not known[k] then fail("tune: unknown field '" .. tostring(k) .. "'", level) end
  end
  if type(spec.strategy) ~= "function" then
    fail("tune: strategy must be a function(params) that returns a strategy", level)
  end
  if type(spec.params) ~= "table" or next(spec.params) == nil then
    fail("tune: params must name at least one parameter: {d = {min, max}}", level)
  end
  local params = {}
  for name, range in pairs(spec.params) do
    if type(name) ~= "string" or type(range) ~= "table" or range[1] == nil or range[2] == nil then
      fail("tune: params." .. tostring(name) .. " must be {min, max}", level)
    end
    local lo = duration.ms(range[1], "tune params." .. name, level)
    local hi = duration.ms(range[2], "tune params." .. name, level)
    if lo > hi then fail(string.format("tune: params.%s: min %d > max %d", name, lo, hi), level) end
    params[#params + 1] = {name = name, lo = lo, hi = hi}
  end
  table.sort(params, function(a, b) return a.name < b.name end)
  local objective = spec.objective or "latency_p99"
  if type(objective) == "string" then
    local col = objective
    objective = function(r) return r[col] end
  elseif type(objective) ~= "function" then
    fail("tune: objective must be a column name (minimised) or a function(row) -> number", level)
  end
  local constraint = spec.constraint
  if type(constraint) == "table" then
    local c = constraint
    for k in pairs(c) do
      if k ~= "late" and k ~= "dropped" then
        fail("tune: constraint: unknown field '" .. tostring(k) .. "' (late, dropped: the largest share)", level)
      end
    end
    constraint = function(r)
      return (c.late == nil or r.late <= c.late * r.records) and
             (c.dropped == nil or r.dropped <= c.dropped * r.records)
    end
  elseif constraint ~= nil and type(constraint) ~= "function" then
    fail("tune: constraint must be a function(row) -> boolean or {late = share}", level)
  end
  local grid = spec.grid or 5
  if math.type(grid) ~= "integer" or grid < 2 then fail("tune: grid must be an integer >= 2", level) end
  local tol = duration.ms(spec.tolerance or 1, "tune tolerance", level)
  if tol < 1 then fail("tune: tolerance must be at least 1 ms", level) end
  return params, objective, constraint or function() return true end, grid, tol
end

--- Searches the parameters of a strategy for the best one under a constraint (also
-- `wm.lab.tune{lab = lab, ...}`): a coarse grid over every parameter, then a golden-section
-- search of each parameter in turn (the others fixed at their best) between the grid points
-- around the best one, down to `tolerance`. Each step is a replay of the lab's data; a
-- parameter vector already replayed is not replayed again.
-- @tparam table spec `strategy` (`function(params) -> strategy`, params by name in ms),
--   `params` (`{name = {min, max}}`, durations), `objective` (a column to minimise, default
--   `"latency_p99"`, or `function(row) -> number`), `constraint` (`function(row) -> boolean` or
--   `{late = share, dropped = share}`: at most that share of the records), `grid` (points per
--   parameter, default 5), `tolerance` (ms, default 1), `out` (a file to write each step to)
-- @treturn table `best` (`params`, `row`, `value`), `path` (every step: `phase` "grid" or
--   the parameter searched, `params`, `value`, `feasible`), `replays`, `report` (the path as text)
-- @usage local t = lab:tune{strategy = function(p) return wm.watermarks.bounded_out_of_orderness(p.d) end,
--   params = {d = {0, "5s"}}, constraint = {late = 0.001}}
-- io.write(t.report)
function Lab:tune(spec)
  local params, objective, constraint, grid, tol = tune_spec(spec, 3)
  local memo, path, replays = {}, {}, 0
  local lines = {}
  local function say(line)
    lines[#lines + 1] = line
    if spec.out then spec.out:write(line, "\n") end
  end
  local function describe(p)
    local parts = {}
    for i, q in ipairs(params) do parts[i] = q.name .. "=" .. M.label(p[q.name]) end
    return table.concat(parts, " ")
  end
  -- the value of p: the objective when feasible, else +inf (with the row)
  local function eval(p, phase)
    local key = describe(p)
    local m = memo[key]
    if not m then
      local s = spec.strategy(p)
      if not is_strategy(s) then fail("tune: strategy(" .. key .. ") did not return a strategy", 3) end
      local r = self:_replay({name = key, strategy = s}, {})
      replays = replays + 1
      local ok = constraint(r) and true or false
      local v = ok and objective(r) or math.huge
      if type(v) ~= "number" then v = math.huge end -- no sample (nothing fired on time)
      m = {row = r, value = v, feasible = ok}
      memo[key] = m
      local pc = {}
      for k, x in pairs(p) do pc[k] = x end
      path[#path + 1] = {phase = phase, params = pc, value = v, feasible = ok}
      say(string.format("%-6s %-28s %s", phase, key, ok and (v == math.huge and "no value" or tostring(v))
        or string.format("infeasible (late %d, dropped %d)", r.late, r.dropped)))
    end
    return m.value, m
  end
  local function copy(p) local c = {} for k, v in pairs(p) do c[k] = v end return c end
  local function points(q)
    local list = {}
    for i = 0, grid - 1 do
      local x = q.lo + (q.hi - q.lo) * i // (grid - 1)
      if list[#list] ~= x then list[#list + 1] = x end
    end
    return list
  end
  -- 1. the coarse grid (every combination)
  local best, bestv = nil, math.huge
  local function walk(i, p)
    if i > #params then
      local v = eval(p, "grid")
      if best == nil or v < bestv then best, bestv = copy(p), v end
      return
    end
    for _, x in ipairs(points(params[i])) do
      p[params[i].name] = x
      walk(i + 1, p)
    end
  end
  walk(1, {})
  -- 2. golden section per parameter, within one grid step of the best on either side
  for _, q in ipairs(params) do
    local step = (q.hi - q.lo) // (grid - 1)
    local a, b = math.max(q.lo, best[q.name] - step), math.min(q.hi, best[q.name] + step)
    local function f(x)
      local p = copy(best)
      p[q.name] = x
      return (eval(p, q.name)), p
    end
    local c, d = math.floor(b - PHI * (b - a) + 0.5), math.floor(a + PHI * (b - a) + 0.5)
    local fc, fd = f(c), f(d)
    while b - a > 4 * tol do
      if fc <= fd then
        b, d, fd = d, c, fc
        c = math.floor(b - PHI * (b - a) + 0.5)
        fc = f(c)
      else
        a, c, fc = c, d, fd
        d = math.floor(a + PHI * (b - a) + 0.5)
        fd = f(d)
      end
      if c >= d then break end
    end
    -- the last few points of the bracket, every tolerance (golden section rounds to whole ms)
    local xs = {}
    for x = a, b, tol do xs[#xs + 1] = x end
    if xs[#xs] ~= b then xs[#xs + 1] = b end
    for _, x in ipairs(xs) do
      local v, p = f(x)
      if v < bestv then best, bestv = p, v end
    end
  end
  local m = memo[describe(best)]
  say(string.format("best   %-28s %s (%d replays)", describe(best),
    m.feasible and tostring(m.value) or "none feasible", replays))
  return {best = {params = best, row = m.row, value = m.value, feasible = m.feasible}, path = path,
          replays = replays, report = table.concat(lines, "\n") .. "\n"}
end

--- `lab:tune(spec)` with the lab as `spec.lab`.
-- @tparam table spec as Lab:tune's, and `lab`
-- @treturn table as Lab:tune's
-- @usage local t = wm.lab.tune{lab = lab, strategy = make, params = {d = {0, "5s"}}}
function M.tune(spec)
  if type(spec) ~= "table" or getmetatable(spec.lab) ~= Lab then
    fail("tune: spec.lab must be a lab (wm.lab{...})", 2)
  end
  return spec.lab:tune(spec)
end

-- The table's text: a header line, then one row per result.
local HEAD = {"candidate", "records", "late", "dropped", "late firings", "lag p50", "lag p99",
              "lag max", "latency p50", "latency p99", "latency max", "first final", "admit p99",
              "admit p99.9", "admit all", "top late key"}

-- A share as the table prints it: "99.25%".
local function percent(x) return string.format("%.2f%%", 100 * x) end

-- A lateness bucket's label: "<10ms", "<1s", ">=10min".
local function bucket_label(i)
  local b = M.LATENESS_BUCKETS[i]
  if b then return "<" .. M.label(b) end
  return ">=" .. M.label(M.LATENESS_BUCKETS[#M.LATENESS_BUCKETS])
end

--- The results as the table `wmrun lab` prints (times in ms; "-" when there is no sample).
-- @tparam table results from `lab:run()`
-- @treturn string
-- @usage io.write(lab:table(lab:run()))
function Lab:table(results)
  local cells = {HEAD}
  for _, r in ipairs(results) do
    local row = {}
    for k, col in ipairs(M.COLUMNS) do
      local v = r[col]
      row[k] = v == nil and "-" or col == "first_final" and percent(v) or tostring(v)
    end
    cells[#cells + 1] = row
  end
  local width = {}
  for _, row in ipairs(cells) do
    for k, c in ipairs(row) do width[k] = math.max(width[k] or 0, #c) end
  end
  local out = {}
  local w = self.window
  out[1] = string.format("%d records, %s %s windows%s, allowed lateness %s, watermark interval %s (times in ms)",
    self:data():count(), w.kind,
    w.kind == "sliding" and (M.label(w.size) .. "/" .. M.label(w.slide))
      or w.kind == "session" and ("gap " .. M.label(w.gap)) or M.label(w.size),
    self.aggregate_label == "count" and "" or (", " .. self.aggregate_label),
    M.label(self.allowed_lateness), M.label(self.watermark_interval))
  for _, row in ipairs(cells) do
    local parts = {}
    for k, c in ipairs(row) do
      parts[k] = k == 1 and (c .. string.rep(" ", width[k] - #c)) or (string.rep(" ", width[k] - #c) .. c)
    end
    out[#out + 1] = table.concat(parts, "  ")
  end
  -- the breakdown of the late records: per key (top 3) and how late
  local lines = {}
  for _, r in ipairs(results) do
    if r.late_by_key and #r.late_by_key > 0 then
      local ks = {}
      for i = 1, math.min(3, #r.late_by_key) do
        ks[i] = r.late_by_key[i].key .. " " .. r.late_by_key[i].late
      end
      local more = #r.late_by_key - 3
      if more > 0 then ks[#ks + 1] = "(" .. more .. (more == 1 and " more key)" or " more keys)") end
      local hs = {}
      for i, b in ipairs(r.lateness_hist) do hs[i] = bucket_label(i) .. " " .. b.n end
      lines[#lines + 1] = string.format("%s%s  by key: %s;  lateness: %s", r.name,
        string.rep(" ", width[1] - #r.name), table.concat(ks, ", "), table.concat(hs, " "))
    end
  end
  if #lines > 0 then
    out[#out + 1] = "late records by key (most first) and lateness (how far the watermark was past "
      .. "the end of the record's window)"
    for _, l in ipairs(lines) do out[#out + 1] = l end
  end
  return table.concat(out, "\n") .. "\n"
end

local function json_string(s)
  return '"' .. s:gsub('[%c"\\]', function(c)
    local named = {['"'] = '\\"', ["\\"] = "\\\\", ["\n"] = "\\n", ["\t"] = "\\t", ["\r"] = "\\r"}
    return named[c] or string.format("\\u%04x", c:byte())
  end) .. '"'
end

--- The results as JSON lines: one object per row with the fields of M.COLUMNS (null when
-- there is no sample) and `latency_windows`.
-- @tparam Lab _self the lab (`lab:json(results)`; the results hold all it writes)
-- @tparam table results from `lab:run()`
-- @treturn string
-- @usage io.write(lab:json(lab:run()))
function Lab.json(_self, results)
  local out = {}
  for _, r in ipairs(results) do
    local parts = {}
    local cols = {table.unpack(M.COLUMNS)}
    cols[#cols + 1] = "latency_windows"
    cols[#cols + 1] = "first_firings"
    cols[#cols + 1] = "damaged_windows"
    for _, col in ipairs(cols) do
      local v = r[col]
      if math.type(v) == "float" then v = string.format("%.6g", v) end
      parts[#parts + 1] = json_string(col) .. ":" ..
        (v == nil and "null" or col ~= "first_final" and type(v) == "string" and json_string(v) or tostring(v))
    end
    local ks = {}
    for i, e in ipairs(r.late_by_key or {}) do ks[i] = "[" .. json_string(e.key) .. "," .. e.late .. "]" end
    parts[#parts + 1] = '"late_by_key":[' .. table.concat(ks, ",") .. "]"
    local hs = {}
    for i, b in ipairs(r.lateness_hist or {}) do
      hs[i] = "{" .. (b.lt and ('"lt":' .. b.lt .. ",") or "") .. '"n":' .. b.n .. "}" -- the last: no lt
    end
    parts[#parts + 1] = '"lateness_hist":[' .. table.concat(hs, ",") .. "]"
    out[#out + 1] = "{" .. table.concat(parts, ",") .. "}"
  end
  return table.concat(out, "\n") .. "\n"
end

local USAGE = "usage: wmrun lab LAB.lua [--json] [--plot out.html]"

--- Runs a lab as `wmrun lab LAB.lua` does: `lab` is what LAB.lua returned; the options
-- are `--json` and `--plot out.html`. Exits with status 2 on bad usage.
-- @tparam Lab lab the lab
-- @tparam string script the lab file's path (relative input paths resolve against its folder)
-- @param ... the command line's options
-- @usage wm.lab.main(dofile("lab.lua"), "lab.lua", "--json")
function M.main(lab, script, ...)
  local args = {...}
  local json, plot = false, nil
  local i = 1
  while i <= #args do
    local a = args[i]
    if a == "--json" then
      json = true
    elseif a == "--plot" then
      plot = args[i + 1]
      if not plot then
        io.stderr:write("wmrun: lab: --plot needs a file name\n", USAGE, "\n")
        os.exit(2)
      end
      i = i + 1
    elseif a == "-h" or a == "--help" then
      print(USAGE)
      return
    else
      io.stderr:write("wmrun: lab: unknown option '", a, "'\n", USAGE, "\n")
      os.exit(2)
    end
    i = i + 1
  end
  if plot and not plot:match("%.html?$") then
    io.stderr:write("wmrun: lab: --plot writes an HTML page: name it .html (got '", plot, "')\n")
    os.exit(2)
  end
  if getmetatable(lab) ~= Lab then
    error(script .. ": a lab file must return wm.lab{...}, got " .. type(lab), 0)
  end
  lab.base_dir = lab.base_dir or script:match("^(.*)/[^/]*$") -- paths are relative to the lab file
  -- SIGINT, SIGTERM, SIGHUP: the lab stops where it is (the data being read, the candidate
  -- being replayed), says so and exits 130, as an interrupted job; a second signal exits at
  -- once. An error in the lab's data is one line naming the file and line (no traceback of
  -- this module); a user function's error keeps its own traceback.
  local watch = core.signal_watch()
  lab._watch = watch
  local ok, err = pcall(function()
    local results = lab:run(plot and {curve = 1200, marks = 1500} or nil)
    if watch:pending() then error(watch:pending(), 0) end
    io.stdout:write(json and lab:json(results) or lab:table(results))
    if plot then
      require("wm.lab.plot").write(plot, lab, results, script)
    end
  end)
  lab._watch = nil
  local sig = watch:pending()
  watch:close()
  if sig then
    err = tostring(err)
    io.stderr:write("wmrun: lab: ", err:find("^interrupted by ") and err or sig, "\n")
    os.exit(130)
  end
  if not ok then
    err = tostring(err)
    if err:find("\nstack traceback:", 1, true) then error(err, 0) end
    io.stderr:write("wmrun: ", err, "\n")
    os.exit(1)
  end
end

M.Lab = Lab
return M
