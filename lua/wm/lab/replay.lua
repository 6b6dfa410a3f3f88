--- Arrival replay for ordinary jobs: `env:read_lines(path, {arrival = field_or_fn})`
-- (docs/lab.md, "Arrival replay in a job").
--
-- With `speed = x` the lines are paced on the real clock (libuv's), x times faster than
-- recorded. With `speed = "max"` (the default) the job runs on a virtual processing-time clock that
-- jumps to each line's arrival time: periodic watermarks, idleness and processing-time
-- timers and windows happen when they would have live, a periodic emission due at or before
-- a line's arrival comes before it, and the run is deterministic. The job is built into the
-- same core graph as `wmrun` builds, driven by the `wm.testing` harness's clock (the lab's
-- replay), with the read_lines source replaced by the recorded lines.
-- @module wm.lab.replay
local core = require("wm.core")

local M = {}

-- Sinks that need the libuv executor (files, sockets) cannot run on the virtual clock.
local NEEDS_EXECUTOR = {write_lines = true, write_socket = true}

local function fail(src, msg)
  error(string.format("read_lines(%s) with arrival: %s", src and src.path or "?", msg), 0)
end

-- The arrival times of the lines of path, from fn(line, n): a list, one per line.
local function arrivals_of(src, fn)
  local f, err = io.open(src.path, "rb")
  if not f then fail(src, "cannot read " .. src.path .. ": " .. tostring(err)) end
  local list, n = {}, 0
  for line in f:lines() do
    n = n + 1
    line = line:gsub("\r$", "")
    local ok, a = pcall(fn, line, n)
    if not ok then
      f:close()
      fail(src, string.format("%s:%d: the arrival function failed: %s", src.path, n, tostring(a)))
    end
    if math.type(a) ~= "integer" then
      f:close()
      fail(src, string.format("%s:%d: the arrival function returned %s, not an integer number of ms",
        src.path, n, a == nil and "nil" or tostring(a)))
    end
    list[n] = a
  end
  f:close()
  return list
end

-- The source at `speed` times the recorded pace on the real clock: a Lua source (env:source)
-- that emits the lines of each arrival time together, then waits for the next one.
local function realtime(src, data, speed)
  local i, n = 1, data:count()
  src.kind, src.ctx, src.open, src.close = "source", {}, nil, nil
  src.poll = function(ctx)
    if i > n then return false end
    local line, _, a = data:get(i)
    while true do
      ctx:emit(line)
      i = i + 1
      if i > n then return false end
      local next_line, _, b = data:get(i)
      if b ~= a then
        local wait = math.floor((b - a) / speed + 0.5)
        return wait > 0 and wait or true
      end
      line = next_line
    end
  end
end

-- The recorded lines of src, in arrival order (the parse_csv reading them, when arrival names
-- one of its columns, no longer skips a header: the loader has).
local function load(env, src)
  local parse
  for _, n in ipairs(env.nodes) do
    if n.kind == "parse_csv" and n.inputs[1] == src then parse = parse or n end
  end
  if type(src.arrival) == "string" then
    if not parse then fail(src, "arrival = '" .. src.arrival .. "' names a column: parse the lines with parse_csv") end
    local col
    for _, c in ipairs(parse.fields) do if c.name == src.arrival then col = c end end
    if not col or col.type ~= "integer" then
      fail(src, string.format("arrival = '%s' must be a column of the parse_csv declared '%s:integer' (ms)",
        src.arrival, src.arrival))
    end
    local ok, d = pcall(core.replay_data, src.path, parse, nil, src.arrival)
    if not ok then fail(src, tostring(d)) end
    parse.header = false
    return d
  end
  local ok, d = pcall(core.replay_data, src.path, nil, nil, arrivals_of(src, src.arrival))
  if not ok then fail(src, tostring(d)) end
  return d
end

--- Runs env, whose read_lines source has an `arrival`: on the virtual clock (speed "max"),
-- or paced on the real clock (speed = x: x times the recorded pace).
-- @param env the environment
-- @tparam[opt] string name the job's name (the real clock's run)
function M.execute(env, name)
  local paced, virtual = {}, nil
  for _, n in ipairs(env.nodes) do
    if n.kind == "read_lines" and n.arrival ~= nil then
      if n.follow then fail(n, "follow = true reads forever: a replay needs a recorded file") end
      if type(n.speed) == "number" then paced[#paced + 1] = n else virtual = n end
    end
  end
  if #paced > 0 then
    if virtual then fail(virtual, "speed = 'max' (the virtual clock) and a paced replay cannot share a job") end
    for _, n in ipairs(paced) do realtime(n, load(env, n), n.speed) end
    return core.execute(env, name or "wmrun job")
  end
  local src
  for _, n in ipairs(env.nodes) do
    if #n.inputs == 0 then
      if n.kind ~= "read_lines" or n.arrival == nil then
        fail(src, string.format("the replayed file must be the job's only source (found %s at %s)",
          n.name or n.kind, n.where or "?"))
      end
      if src then fail(src, "only one read_lines source may have arrival times") end
      src = n
    end
    if NEEDS_EXECUTOR[n.kind] then
      fail(src, string.format("%s (at %s) runs on the real clock; use print, collect or sink in a replay",
        n.kind, n.where or "?"))
    end
    if (n.parallelism or 1) > 1 then fail(src, "a replay runs one instance of each operator (parallelism 1)") end
  end
  if (env.parallelism or 1) > 1 or (env.threads or 1) > 1 then
    fail(src, "a replay runs one instance of each operator on one thread (parallelism 1)")
  end
  if src.follow then fail(src, "follow = true reads forever: a replay needs a recorded file") end
  local data = load(env, src)
  -- the source becomes the harness's input: the lines are pushed into it
  src.kind, src.channels = "harness_input", 1
  local overrides = package.loaded.wm and package.loaded.wm._overrides or {}
  local t0 = data:count() > 0 and select(3, data:get(1)) or 0
  local h = core.harness(env, {input = src.id, result = src.id, channels = 1, processing_time = t0,
    side_outputs = {}, trace = overrides.trace_watermarks, title = src.name})
  local ok, err = pcall(h.replay, h, data, {})
  h:close()
  if not ok then error(err, 0) end
end

return M
