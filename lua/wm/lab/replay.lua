--- Arrival replay for ordinary jobs: `env:read_lines(path, {arrival = field_or_fn})`
-- (docs/lab.md, "Arrival replay in a job").
--
-- With `speed = x` the lines are paced on the real clock (libuv's), x times faster than
-- recorded. With `speed = "max"` (the default) the job runs on a virtual processing-time clock that
-- jumps to each line's arrival time: periodic watermarks, idleness and processing-time
-- timers and windows happen when they would have live, a periodic emission due at or before
-- a line's arrival comes before it, and the run is deterministic. The job is built into the
-- same core graph as `wmrun` builds, driven by the `wm.testing` harness's clock (the lab's
-- replay), with the read_lines sources replaced by their recorded lines.
-- @module wm.lab.replay
local core = require("wm.core")
local base = require("wm.base")

local M = {}

-- Raises a data error: its message names the file and line, so wmrun prints it without the
-- traceback of the execute call (as for core.execute's own data errors, which it keeps
-- under this registry key).
local function raise(msg)
  debug.getregistry()["wm.core.data_error"] = msg
  error(msg, 0)
end

local function fail(src, msg)
  raise(string.format("read_lines(%s) with arrival: %s", src and src.path or "?", msg))
end

-- The arrival times of the lines of path: a list, one per line in file order, from
-- read(line, n), which returns the time, or nil and why not. lenient (the parser skips bad
-- lines): a line without one arrives with the line before it (the first lines with the
-- first line that has one), and the parser deals with it when it is replayed.
local function arrivals_of(src, read, lenient)
  local f, err = io.open(src.path, "rb")
  if not f then fail(src, "cannot read " .. src.path .. ": " .. tostring(err)) end
  local list, n, unfilled = {}, 0, nil
  for line in f:lines() do
    n = n + 1
    line = line:gsub("\r$", "")
    local a, why = read(line, n)
    if math.type(a) ~= "integer" then
      if not lenient then
        f:close()
        fail(src, string.format("%s:%d: %s", src.path, n, why))
      end
      a = list[n - 1]
      if a == nil then unfilled, a = unfilled or n, 0 end
    elseif unfilled then
      for k = unfilled, n - 1 do list[k] = a end
      unfilled = nil
    end
    list[n] = a
  end
  f:close()
  return list
end

-- arrival = fn(line, n)
local function by_function(fn)
  return function(line, n)
    local ok, a = pcall(fn, line, n)
    if not ok then return nil, "the arrival function failed: " .. tostring(a) end
    if math.type(a) ~= "integer" then
      return nil, string.format("the arrival function returned %s, not an integer number of ms",
        a == nil and "nil" or tostring(a))
    end
    return a
  end
end

-- arrival = "field" of the parse_json reading the lines: each line decoded as parse_json
-- decodes it (lua-cjson, integers beyond 2^53 exact).
local function by_json_field(src, field)
  local ok, cjson = pcall(require, "cjson")
  if not ok then fail(src, "parse_json needs lua-cjson (the Debian package lua-cjson)") end
  local decode = require("wm.json").exact_decoder((cjson.new and cjson.new() or cjson).decode)
  return function(line)
    local okd, v = pcall(decode, line)
    if not okd then return nil, "not a JSON line: " .. tostring(v) end
    local a = type(v) == "table" and v[field] or nil
    if math.type(a) == "float" then a = math.tointeger(a) or a end
    if math.type(a) ~= "integer" then
      return nil, string.format("field '%s' is %s, not an integer number of ms (the arrival time)", field,
        a == nil and "missing" or string.format("%q", tostring(a)))
    end
    return a
  end
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
    if (n.kind == "parse_csv" or n.kind == "parse_json") and n.inputs[1] == src then parse = parse or n end
  end
  if type(src.arrival) == "string" and parse and parse.kind == "parse_json" then
    local ok, d = pcall(core.replay_data, src.path, nil, nil,
      arrivals_of(src, by_json_field(src, src.arrival), parse.on_error ~= "fail"))
    if not ok then fail(src, tostring(d)) end
    return d
  end
  if type(src.arrival) == "string" then
    if not parse then
      fail(src, "arrival = '" .. src.arrival .. "' names a column: parse the lines with parse_csv or parse_json")
    end
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
  local ok, d = pcall(core.replay_data, src.path, nil, nil, arrivals_of(src, by_function(src.arrival)))
  if not ok then fail(src, tostring(d)) end
  return d
end

--- Runs env, whose read_lines sources have an `arrival`: on the virtual clock (speed "max"),
-- or paced on the real clock (speed = x: x times the recorded pace).
--
-- On the virtual clock every source of the job must have arrival times: their lines are
-- merged in arrival order on the one clock (lines of the same millisecond in the order the
-- job created the sources, then in file order), each source ends right after its last
-- line, and the job's operators (any parallelism, on one thread), sinks (print, collect,
-- sink, write_lines, write_socket), `--metrics`, `--trace-watermarks` and `--timeline` run as
-- in a live job.
-- @param env the environment
-- @tparam[opt] string name the job's name (the real clock's run)
function M.execute(env, name)
  if env.checkpoint then -- refused at the start, at either speed
    for _, n in ipairs(env.nodes) do
      if n.kind == "read_lines" and n.arrival ~= nil then
        raise(string.format("read_lines(%s, {arrival = ...}) at %s: an arrival replay takes no checkpoints, "
          .. "and this job asks for them (--checkpoint-dir or wm.env{checkpoint = ...}); a replay is "
          .. "deterministic: run it again from the start, without checkpoints (docs/lab.md)",
          n.path, n.where or "?"))
      end
    end
  end
  local paced, virtual = {}, nil
  for _, n in ipairs(env.nodes) do
    if n.kind == "read_lines" and n.arrival ~= nil then
      if n.follow then fail(n, "follow = true reads forever: a replay needs a recorded file") end
      if type(n.speed) == "number" then paced[#paced + 1] = n else virtual = virtual or n end
    end
  end
  if #paced > 0 then
    if virtual then fail(virtual, "speed = 'max' (the virtual clock) and a paced replay cannot share a job") end
    for _, n in ipairs(paced) do realtime(n, load(env, n), n.speed) end
    return core.execute(env, name or "wmrun job")
  end
  local srcs = {}
  for _, n in ipairs(env.nodes) do
    if #n.inputs == 0 then
      if n.kind ~= "read_lines" or n.arrival == nil then
        fail(virtual, string.format("every source of a replayed job needs arrival times (%s at %s has none): "
          .. "record its arrival times too, or replay with speed = x on the real clock", n.name or n.kind,
          n.where or "?"))
      end
      srcs[#srcs + 1] = n
    end
  end
  if (env.threads or 1) ~= 1 then
    fail(virtual, "a replay runs every instance on one thread (threads = 1, the deterministic schedule); "
      .. "got threads = " .. tostring(env.threads))
  end
  local datas, ids, t0 = {}, {}, nil
  for k, src in ipairs(srcs) do
    datas[k], ids[k] = load(env, src), src.id
    local first = datas[k]:count() > 0 and select(3, datas[k]:get(1))
    if first and (t0 == nil or first < t0) then t0 = first end
  end
  -- the sources become the harness's inputs: the lines are pushed into them
  -- (replayed: with time = "ingestion" each gets its ingestion-time assigner, as a live source)
  for _, src in ipairs(srcs) do src.kind, src.channels, src.replayed = "harness_input", 1, 1 end
  local built, h = pcall(core.harness, env, {inputs = ids, result = 0, processing_time = t0 or 0,
    side_outputs = {}, trace = env.trace_watermarks, timeline = env.timeline, title = name or srcs[1].name})
  if not built then raise(h) end -- a sink that cannot open its file, ...
  local ok, err = pcall(h.replay_inputs, h, datas, {signals = true, no_drain = env.no_drain})
  if env.metrics then h:print_metrics() end
  h:close()
  if not ok then
    if tostring(err):find("\nstack traceback:", 1, true) then error(err, 0) end -- a user function's
    raise(err)
  end
end

-- Env:execute's hook (wm.base, "run"): a job with read_lines{arrival = ...} runs here.
base.extend("run", "replay", function(env, name)
  for _, n in ipairs(env.nodes) do
    if n.arrival ~= nil then
      M.execute(env, name)
      return true
    end
  end
  return false
end)

return M
