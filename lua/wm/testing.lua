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

-- The input and channel a call names: in a one-input harness `(channel)`; in a harness with
-- two inputs `(side[, channel])`, side one of its input names ("left", "right"). Returns
-- the channel and the input's index.
local function check_channel(self, a, b, fn)
  if not self.sides then
    if type(a) == "string" then
      error(string.format("%s: this harness has one input (no side '%s'); give a channel "
        .. "number, or create it with inputs = 2", fn, a), 3)
    end
    b, a = a, nil
  else
    local k = self.sides[a]
    if not k then
      error(string.format("%s: this harness has two inputs: say which, %s (got %s)", fn,
        self.sides_text, a == nil and "none" or string.format("%q", tostring(a))), 3)
    end
    a = k
  end
  local n = self.channels[a or 1]
  if b == nil then return 1, a end
  if math.type(b) ~= "integer" or b < 1 or b > n then
    error(string.format("%s: no input channel %s%s (the harness has %d)", fn, tostring(b),
      self.sides and " on '" .. self.names[a] .. "'" or "", n), 3)
  end
  return b, a
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
--   watermark trace on stderr: true, "json", or "json,records" with the keyed events),
--   `title` (the title of `h:timeline`'s picture), `inputs`
--   (2: the pipeline has two inputs, `build(left, right)`, and every call that feeds it says
--   which, `h:push(record, ts, "left"|"right")`; or the two inputs' names, `{"orders",
--   "rates"}`; `channels` may then be per input, `{left = 2}`)
-- @treturn Harness
-- @usage local h = wm.testing.harness(function(input)
--   return input:key_by("id"):window(wm.windows.tumbling("5s")):sum("vc")
-- end, {channels = 2})
-- local h2 = wm.testing.harness(function(left, right)
--   return left:key_by("k"):connect(right:key_by("k")):process{...}
-- end, {inputs = 2})
function M.harness(build, opts)
  if type(build) ~= "function" then
    error("harness: expected a function(input) that returns a stream, got " .. type(build), 2)
  end
  opts = opts or {}
  if type(opts) ~= "table" then error("harness: options must be a table, got " .. type(opts), 2) end
  local known = {channels = true, processing_time = true, watermark_interval = true,
                 side_outputs = true, trace = true, time = true, title = true, inputs = true}
  for k in pairs(opts) do
    if not known[k] then error("harness: unknown option '" .. tostring(k) .. "'", 2) end
  end
  -- inputs: 1 (default), 2 (sides "left" and "right") or two names of one's own
  local names = opts.inputs
  if names == nil or names == 1 then
    names = nil
  elseif names == 2 then
    names = {"left", "right"}
  elseif type(names) ~= "table" or #names ~= 2 or type(names[1]) ~= "string"
      or type(names[2]) ~= "string" or names[1] == names[2] then
    error("harness: inputs must be 1, 2 or the names of two inputs ({\"orders\", \"rates\"}), got "
      .. tostring(names), 2)
  end
  local nin = names and 2 or 1
  local channels = {}
  local ch = opts.channels or 1
  for k = 1, nin do
    local c = ch
    if type(ch) == "table" then
      if not names then error("harness: channels per input need inputs = 2", 2) end
      c = ch[names[k]] or 1
    end
    if math.type(c) ~= "integer" or c < 1 then
      error("harness: channels must be a positive integer" .. (names and " (or {" .. names[1]
        .. " = n, " .. names[2] .. " = m})" or "") .. ", got " .. tostring(c), 2)
    end
    channels[k] = c
  end
  if type(ch) == "table" then
    for k in pairs(ch) do
      if k ~= names[1] and k ~= names[2] then
        error("harness: channels: no input '" .. tostring(k) .. "' (the inputs are "
          .. names[1] .. " and " .. names[2] .. ")", 2)
      end
    end
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
  local inputs, ids, is_input = {}, {}, {}
  for k = 1, nin do
    local node = env:_node("harness_input", {}, {channels = channels[k],
      name = names and "harness input '" .. names[k] .. "'" or "harness input"})
    ids[k], is_input[node] = node.id, true
    inputs[k] = setmetatable({env = env, node = node}, wm.Stream)
  end
  local result = build(table.unpack(inputs))
  if getmetatable(result) ~= wm.Stream then
    error("harness: the build function must return a stream, got " .. type(result), 2)
  end
  for _, node in ipairs(env.nodes) do
    if #node.inputs == 0 and not is_input[node] then
      error("harness: the pipeline must read from its input, not from a source ('" ..
        node.kind .. "' at " .. node.where .. ")", 2)
    end
  end
  local tags = {}
  for i, t in ipairs(opts.side_outputs or {}) do
    if type(t) ~= "string" then error("harness: side_outputs[" .. i .. "] is not a string", 2) end
    tags[#tags + 1] = t
  end
  local h = core.harness(env, {input = ids[1], inputs = names and ids or nil, result = result.node.id,
    channels = channels[1], processing_time = t0, side_outputs = tags, trace = opts.trace,
    title = opts.title})
  local self = {_h = h, channels = channels, _env = env, names = names}
  if names then
    self.sides = {[names[1]] = 1, [names[2]] = 2}
    self.sides_text = string.format('h:push(record, ts, "%s"|"%s")', names[1], names[2])
  end
  return setmetatable(self, Harness)
end

--- Pushes a record with its event timestamp (nil: no timestamp) into a channel (default 1).
-- In a harness with two inputs (`inputs = 2`) the third argument says which:
-- `h:push(record, ts, "left"|"right"[, channel])`.
-- @param record the record
-- @tparam[opt] integer ts its event timestamp (ms)
-- @tparam[opt=1] integer|string channel the input channel; with two inputs the side, then
--   the channel
-- @tparam[opt=1] integer ch2 with two inputs: the channel of that side
-- @usage h:push({id = "a", vc = 1}, 1000)
-- h2:push({id = "a"}, 1000, "right")   -- a harness with inputs = 2
function Harness:push(record, ts, channel, ch2)
  if ts ~= nil then check_int(ts, "the timestamp", "push") end
  local c, k = check_channel(self, channel, ch2, "push")
  run(self, "push", record, ts, c, k)
  return self
end

--- Pushes a watermark into a channel (default 1). The result's watermark is the minimum
-- over the active channels (semantics.md §3); with two inputs, over both inputs' channels
-- (`h:watermark(t, "left"|"right"[, channel])`).
-- @tparam integer t the watermark (ms)
-- @tparam[opt=1] integer|string channel the input channel; with two inputs the side, then
--   the channel
-- @tparam[opt=1] integer ch2 with two inputs: the channel of that side
-- @usage h:watermark(4999)
-- h2:watermark(4999, "left")
function Harness:watermark(t, channel, ch2)
  check_int(t, "the watermark", "watermark")
  local c, k = check_channel(self, channel, ch2, "watermark")
  run(self, "watermark", t, c, k)
  return self
end

--- Marks a channel idle (semantics.md §3: it no longer holds the watermark back); with two
-- inputs `h:idle("left"|"right"[, channel])`.
-- @tparam[opt=1] integer|string channel the input channel; with two inputs the side, then
--   the channel
-- @tparam[opt=1] integer ch2 with two inputs: the channel of that side
-- @usage h:idle(2)
-- h2:idle("right")
function Harness:idle(channel, ch2)
  local c, k = check_channel(self, channel, ch2, "idle")
  run(self, "status", c, true, k)
  return self
end

--- Marks a channel active again; with two inputs `h:active("left"|"right"[, channel])`.
-- @tparam[opt=1] integer|string channel the input channel; with two inputs the side, then
--   the channel
-- @tparam[opt=1] integer ch2 with two inputs: the channel of that side
-- @usage h:active(2)
-- h2:active("right")
function Harness:active(channel, ch2)
  local c, k = check_channel(self, channel, ch2, "active")
  run(self, "status", c, false, k)
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
