--- A deterministic test harness for pipelines (api.md: wm.testing).
--
-- The harness builds the same core operator graph as `wmrun` and drives it directly: the
-- test pushes records, watermarks and channel statuses, and moves a virtual
-- processing-time clock that fires processing-time timers, idleness timeouts and
-- periodic watermarks in time order. Nothing sleeps and nothing depends on the wall clock.
-- @module wm.testing
-- @usage
-- local h = wm.testing.harness(function(input)
--   return input:key_by("id"):window(wm.windows.tumbling("5s")):sum("vc")
-- end)
-- h:push({id = "a", vc = 1}, 1000)
-- h:watermark(4999)
-- assert(#h:output() == 1)
local wm = require("wm.datastream") -- not the facade `wm`, which loads this module
local core = require("wm.core")

local M = {}

local Harness = {}
Harness.__index = Harness

local function check_int(v, what, fn)
  if math.type(v) ~= "integer" then
    error(string.format("%s: %s must be an integer number of ms, got %s", fn, what,
      math.type(v) or type(v)), 3)
  end
end

local function check_channel(self, ch, fn)
  if ch == nil then return 1 end
  if math.type(ch) ~= "integer" or ch < 1 or ch > self.channels then
    error(string.format("%s: no input channel %s (the harness has %d)", fn, tostring(ch),
      self.channels), 3)
  end
  return ch
end

-- Runs a core method; a pipeline error is raised as it is (it names the operator and the
-- job line already).
local function run(self, method, ...)
  local ok, err = pcall(self._h[method], self._h, ...)
  if not ok then error(err, 0) end
  return err
end

--- Creates a harness.
-- @tparam function build `build(input) -> stream`: builds the pipeline under test from the
--   input stream and returns the stream whose output the test reads
-- @tparam[opt] table opts `channels` (input channels, default 1), `processing_time` (the
--   virtual clock's start, ms, default 0), `watermark_interval` (periodic watermarks, default
--   200 ms as in env; 0 = after every record), `side_outputs` (tags the result stream may
--   send to with `ctx:output`; late-data tags are known already), `trace` (print the
--   watermark trace on stderr), `title` (the title of `h:timeline`'s picture)
-- @treturn Harness
-- @usage local h = wm.testing.harness(function(input)
--   return input:key_by("id"):window(wm.windows.tumbling("5s")):sum("vc")
-- end, {channels = 2})
function M.harness(build, opts)
  if type(build) ~= "function" then
    error("harness: expected a function(input) that returns a stream, got " .. type(build), 2)
  end
  opts = opts or {}
  if type(opts) ~= "table" then error("harness: options must be a table, got " .. type(opts), 2) end
  local known = {channels = true, processing_time = true, watermark_interval = true,
                 side_outputs = true, trace = true, time = true, title = true}
  for k in pairs(opts) do
    if not known[k] then error("harness: unknown option '" .. tostring(k) .. "'", 2) end
  end
  local channels = opts.channels or 1
  if math.type(channels) ~= "integer" or channels < 1 then
    error("harness: channels must be a positive integer, got " .. tostring(channels), 2)
  end
  local t0 = opts.processing_time or 0
  if math.type(t0) ~= "integer" then
    error("harness: processing_time must be an integer number of ms, got " .. tostring(t0), 2)
  end
  local wi = opts.watermark_interval
  wi = wi == nil and 200 or wm.duration.ms(wi, "harness watermark_interval", 2)
  if wi < 0 then error("harness: watermark_interval must not be negative", 2) end
  local env = wm.env{ time = opts.time }
  env.watermark_interval = wi          -- the harness decides, not the command line
  env.parallelism = 1
  local input_node = env:_node("harness_input", {}, {channels = channels, name = "harness input"})
  local input = setmetatable({env = env, node = input_node}, wm.Stream)
  local result = build(input)
  if getmetatable(result) ~= wm.Stream then
    error("harness: the build function must return a stream, got " .. type(result), 2)
  end
  for _, node in ipairs(env.nodes) do
    if #node.inputs == 0 and node ~= input_node then
      error("harness: the pipeline must read from its input, not from a source ('" ..
        node.kind .. "' at " .. node.where .. ")", 2)
    end
  end
  local tags = {}
  for i, t in ipairs(opts.side_outputs or {}) do
    if type(t) ~= "string" then error("harness: side_outputs[" .. i .. "] is not a string", 2) end
    tags[#tags + 1] = t
  end
  local h = core.harness(env, {input = input_node.id, result = result.node.id,
    channels = channels, processing_time = t0, side_outputs = tags, trace = opts.trace,
    title = opts.title})
  return setmetatable({_h = h, channels = channels, _env = env}, Harness)
end

--- Pushes a record with its event timestamp (nil: no timestamp) into a channel (default 1).
-- @param record the record
-- @tparam[opt] integer ts its event timestamp (ms)
-- @tparam[opt=1] integer channel the input channel
-- @usage h:push({id = "a", vc = 1}, 1000)
function Harness:push(record, ts, channel)
  if ts ~= nil then check_int(ts, "the timestamp", "push") end
  run(self, "push", record, ts, check_channel(self, channel, "push"))
  return self
end

--- Pushes a watermark into a channel (default 1). The result's watermark is the minimum
-- over the active channels (semantics.md §3).
-- @tparam integer t the watermark (ms)
-- @tparam[opt=1] integer channel the input channel
-- @usage h:watermark(4999)
function Harness:watermark(t, channel)
  check_int(t, "the watermark", "watermark")
  run(self, "watermark", t, check_channel(self, channel, "watermark"))
  return self
end

--- Marks a channel idle (semantics.md §3: it no longer holds the watermark back).
-- @tparam[opt=1] integer channel the input channel
-- @usage h:idle(2)
function Harness:idle(channel)
  run(self, "status", check_channel(self, channel, "idle"), true)
  return self
end

--- Marks a channel active again.
-- @tparam[opt=1] integer channel the input channel
-- @usage h:active(2)
function Harness:active(channel)
  run(self, "status", check_channel(self, channel, "active"), false)
  return self
end

--- Moves the virtual processing-time clock forward by `ms` (an integer or a duration
-- string), firing processing-time timers, idleness timeouts and periodic watermarks that
-- come due, in time order.
-- @tparam integer|string ms how far (>= 0)
-- @usage h:advance_processing_time("1s")
function Harness:advance_processing_time(ms)
  ms = wm.duration.ms(ms, "advance_processing_time", 2)
  if ms < 0 then error("advance_processing_time: the clock cannot go back", 2) end
  run(self, "advance_processing_time", ms)
  return self
end

--- The virtual processing time (ms).
-- @treturn integer
-- @usage assert(h:processing_time() == 1000)
function Harness:processing_time() return self._h:processing_time() end

--- Ends the input: the MAX watermark on every channel (every event-time timer fires).
-- @usage h:finish()
-- local all = h:output()
function Harness:finish()
  run(self, "finish")
  return self
end

--- The records the result stream emitted since the last call, in order.
-- @treturn table a list
-- @usage assert.are.same({{id = "a", vc = 3}}, h:output())
function Harness:output()
  local values = self._h:take("")
  return values or {}
end

--- The records emitted since the last call, each as `{value = v, timestamp = t}`
-- (timestamp nil when the record has none).
-- @treturn table a list
-- @usage assert(h:output_records()[1].timestamp == 4999)
function Harness:output_records()
  local values, ts = self._h:take("")
  local out = {}
  for i, v in ipairs(values or {}) do out[i] = {value = v, timestamp = ts[i] or nil} end
  return out
end

--- The records sent to a side output of the result stream since the last call.
-- @tparam string tag the side-output tag
-- @treturn table a list
-- @usage local late = h:side_output("late")
function Harness:side_output(tag)
  if type(tag) ~= "string" then error("side_output: expected a tag string, got " .. type(tag), 2) end
  local values = self._h:take(tag)
  return values or {}
end

--- The operators' counters: a list in creation order of `{name, kind, records_in,
-- records_out (the main output), late_records_dropped, late_records_side_output,
-- side_outputs = {tag = records}, watermark, idle, open_windows, keys, keys_expired,
-- event_timers, processing_timers}`, also indexed by name with and without the "(job.lua:N)" suffix.
-- @treturn table
-- @usage assert(h:metrics()[1].records_in == 2)
function Harness:metrics()
  local list = self._h:metrics()
  for _, m in ipairs(list) do
    list[m.name] = list[m.name] or m
    local short = m.name:match("^(.-) %(")
    if short and list[short] == nil then list[short] = m end
  end
  return list
end

--- The result stream's current watermark (math.mininteger before the first).
-- @treturn integer
-- @usage assert(h:current_watermark() == 4999)
function Harness:current_watermark() return self._h:current_watermark() end

--- Draws the run so far (records, watermarks, windows, firings, late records) as
-- `wmrun --timeline` does: an SVG file, or an HTML page when `path` ends in `.html`.
-- @tparam string path the file to write
-- @tparam[opt] table opts `x = "order"` (default: records in arrival order) or
--   `x = "time"` (the virtual processing time)
-- @usage h:finish(); h:timeline("late.svg")
function Harness:timeline(path, opts)
  if type(path) ~= "string" then
    error("timeline: expected a file name, got " .. type(path), 2)
  end
  opts = opts or {}
  local x = opts.x or "order"
  if x ~= "order" and x ~= "time" then
    error("timeline: x must be 'order' or 'time', got " .. tostring(x), 2)
  end
  local ok, err = pcall(function()
    require("wm.timeline").save(path, {self._h:recording()}, {x = x})
  end)
  if not ok then error(string.format("timeline: '%s': %s", path, tostring(err)), 2) end
  return self
end

local SNAP_MAGIC = "wm.testing snapshot 1\n"

--- Takes a checkpoint of the pipeline between two calls, as `wmrun --checkpoint-dir` does
-- (docs/checkpoints.md): every operator's state (windows, timers, watermarks, keyed state,
-- the state Lua parts give through their `snapshot` methods) and the virtual clock, as a
-- string. A Lua part whose state a checkpoint cannot hold (a custom watermark generator
-- without `snapshot`/`restore`) is refused with the message a checkpointing job gives at
-- start. The harness goes on unchanged.
-- @treturn string the checkpoint
-- @usage local cp = h:snapshot()
-- local h2 = wm.testing.harness(build); h2:restore(cp)
function Harness:snapshot()
  local ok, parts, now, periodic = pcall(self._h.snapshot, self._h)
  if not ok then error(parts, 0) end
  local names = {}
  for name in pairs(parts) do names[#names + 1] = name end
  table.sort(names)
  local out = {SNAP_MAGIC, string.pack("<i8I4", now, #periodic)}
  for _, t in ipairs(periodic) do out[#out + 1] = string.pack("<i8", t) end
  out[#out + 1] = string.pack("<I4", #names)
  for _, name in ipairs(names) do out[#out + 1] = string.pack("<s4s4", name, parts[name]) end
  return table.concat(out)
end

--- Restores a checkpoint taken by `h:snapshot()` of a harness of the same pipeline: call it
-- on a new harness before anything else. The harness then goes on as the one snapshot
-- would have (same outputs, watermarks and timers); the outputs taken before the snapshot
-- are not repeated.
-- @tparam string checkpoint what `h:snapshot()` returned
-- @usage local h2 = wm.testing.harness(build)
-- h2:restore(h:snapshot())
function Harness:restore(checkpoint)
  if type(checkpoint) ~= "string" then
    error("restore: expected the string h:snapshot() returned, got " .. type(checkpoint), 2)
  end
  if checkpoint:sub(1, #SNAP_MAGIC) ~= SNAP_MAGIC then
    error("restore: not a checkpoint of wm.testing (h:snapshot())", 2)
  end
  local ok, parts, now, periodic = pcall(function()
    local pos = #SNAP_MAGIC + 1
    local now, np
    now, np, pos = string.unpack("<i8I4", checkpoint, pos)
    local periodic = {}
    for i = 1, np do periodic[i], pos = string.unpack("<i8", checkpoint, pos) end
    local n
    n, pos = string.unpack("<I4", checkpoint, pos)
    local parts = {}
    for _ = 1, n do
      local name, data
      name, data, pos = string.unpack("<s4s4", checkpoint, pos)
      parts[name] = data
    end
    if pos ~= #checkpoint + 1 then error("bytes after the last part") end
    return parts, now, periodic
  end)
  if not ok then error("restore: damaged checkpoint: " .. tostring(parts):gsub("^.-:%d+: ", ""), 2) end
  run(self, "restore", parts, now, periodic)
  return self
end

--- Frees the harness now (otherwise the garbage collector does).
-- @usage h:close()
function Harness:close() self._h:close() end
Harness.__close = Harness.close

M.Harness = Harness
return M
