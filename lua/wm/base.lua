--- The job API's internal base: its classes, the environment constructor, plan nodes and
-- the argument checkers every area shares. Not public: jobs use `wm` (wm/init.lua), which
-- assembles the API from this module and the area modules that define the classes' methods
-- (wm.stream, wm.io, wm.keyed, wm.windowed, wm.sql.tableapi).
--
-- This module requires no other module of the API's classes, so every area module (and the
-- SQL planner, through wm.datastream) can require it without a loop.
--
-- Every method of these classes is defined in exactly one module. A module that changes what
-- a method of another module does (wm.through, wm.connectors, wm.scaleout, wm.lab.replay)
-- registers a hook here (`extend`) that the method calls, instead of redefining the method;
-- so what a method does never depends on the order in which the modules were required.
-- @module wm.base
local core = require("wm.core")
local duration = require("wm.duration")

local M = {
  -- Settings forced by the command line (wmrun fills it; plain Lua leaves it empty).
  _overrides = {},
  --- The largest parallelism of an env or an operator (as `wmrun -p`): every instance is
  -- built up front, so an absurd number would only end in "out of memory".
  MAX_PARALLELISM = 1024,
  --- The largest `max_parallelism` (number of key groups) of an env, Flink's 2^15.
  MAX_KEY_GROUPS = 32768,
  --- The largest `threads` of an env (as `wmrun --threads`).
  MAX_THREADS = 256,
  --- The largest read size of a line source (`chunk`): the buffer is allocated at the start.
  MAX_CHUNK = 64 << 20,
}

-- The classes of the DSL. Each area module defines its methods on these tables.
local Env, Stream, KeyedStream, WindowedStream, Sink = {}, {}, {}, {}, {}
Env.__index, Stream.__index, KeyedStream.__index, WindowedStream.__index, Sink.__index =
  Env, Stream, KeyedStream, WindowedStream, Sink
M.Env, M.Stream, M.KeyedStream, M.WindowedStream, M.Sink = Env, Stream, KeyedStream, WindowedStream, Sink

-- Extension points ----------------------------------------------------------------------

-- The hooks of each point, by name. The methods that call them (docs/architecture.md,
-- "Extensions"):
--   key_by      Stream:key_by(k, {NAME = v}) (wm.stream): fn(stream, keyed, v, level) -> the
--               keyed stream; NAME is an option of key_by (wm.through: `through`)
--   assign      Stream:assign_timestamps_and_watermarks(strategy) (wm.stream): fn(stream,
--               strategy, level) -> a stream, or nil to leave it to the next hook and then
--               to the plain assigner (wm.connectors: one assigner per partition)
--   prepare     Env:execute (below), before the env counts as executed: fn(env, level)
--               completes the plan (wm.through: the readers' writer counts)
--   run         Env:execute, after: fn(env, name) -> true when it ran the job or took the
--               run over (wm.scaleout, wm.lab.replay); none did: core.execute runs it
-- `level` is as for `error`, counted from the hook's caller (the method).
local points = {key_by = {}, assign = {}, prepare = {}, run = {}}
local ordered = {} -- point -> its hooks in order, made on first use after a change

--- Registers hook `fn` of extension point `point` under `name`, once: a second hook of the
-- same name is an error (a module loaded twice, or two modules claiming one name). Hooks
-- run in the order of `rank` (default 0), then of their names: never in load order.
-- @local
function M.extend(point, name, fn, rank)
  local hooks = points[point]
  if not hooks then error("extend: no extension point '" .. tostring(point) .. "'", 2) end
  if type(name) ~= "string" or type(fn) ~= "function" then
    error("extend: expected a name and a function", 2)
  end
  if hooks[name] then error("extend: " .. point .. " already has a hook named '" .. name .. "'", 2) end
  hooks[name] = {name = name, fn = fn, rank = rank or 0}
  ordered[point] = nil
end

--- The hooks of extension point `point`, in their order: a list of {name, fn, rank}.
-- @local
function M.hooks(point)
  local list = ordered[point]
  if list then return list end
  list = {}
  for _, h in pairs(points[point]) do list[#list + 1] = h end
  table.sort(list, function(a, b)
    if a.rank ~= b.rank then return a.rank < b.rank end
    return a.name < b.name
  end)
  ordered[point] = list
  return list
end

-- Positions in the job script -----------------------------------------------------------

-- The job script's position that called into the library: the first stack frame whose
-- source is not a file of this library (lua/wm/ and below).
local lib_dir = debug.getinfo(1, "S").source:match("^@(.*[/\\])") or ""
function M.where()
  for level = 3, 40 do
    local info = debug.getinfo(level, "Sl")
    if not info then break end
    local src = info.source
    if info.currentline > 0 and not (src:sub(1, 1) == "@" and src:sub(2, #lib_dir + 1) == lib_dir) then
      return info.short_src .. ":" .. info.currentline
    end
  end
  return "?"
end

-- Where a user function was defined ("job.lua:12"): more precise than the call's line,
-- since Lua gives every call of a method chain the line where the chain starts.
function M.fn_where(fn)
  if type(fn) ~= "function" then return nil end
  local info = debug.getinfo(fn, "S")
  if info.what ~= "Lua" or info.linedefined <= 0 then return nil end
  return info.short_src .. ":" .. info.linedefined
end

-- Argument checkers ----------------------------------------------------------------------
-- `level` is as for `error`, counted from the checker's caller.

function M.check_fn(fn, call, level)
  if type(fn) ~= "function" then
    error(string.format("%s: expected a function, got %s", call, type(fn)), (level or 2) + 1)
  end
  return fn
end

--- The optional checkpoint methods of a Lua part's table `t` (docs/checkpoints.md, "User
-- state in Lua"): `snapshot` and `restore`, both functions or both absent.
function M.check_hooks(t, call, level)
  local s, r = t.snapshot, t.restore
  for k, v in pairs{snapshot = s, restore = r} do
    if type(v) ~= "function" then
      error(string.format("%s: '%s' must be a function, got %s", call, k, type(v)), (level or 2) + 1)
    end
  end
  if (s == nil) ~= (r == nil) then
    error(string.format("%s: snapshot and restore go together (give both methods, or neither)", call),
      (level or 2) + 1)
  end
end

--- The `state_ttl` option of a keyed process function (api.md "State that expires"):
-- `{ttl = d, update = "on_create_and_write" | "on_read_and_write",
-- time = "processing" | "event"}`, as the fields of its plan node (`ttl` in ms,
-- `ttl_update` 0/1, `ttl_time` 0 event / 1 processing); nil when v is nil.
-- @local
function M.state_ttl(v, call, level)
  if v == nil then return nil end
  level = level + 1
  if type(v) ~= "table" then
    error(string.format("%s: state_ttl must be a table {ttl = d, update = ..., time = ...}, got %s",
      call, type(v)), level)
  end
  M.opt_table(v, call .. ": state_ttl", {ttl = true, update = true, time = true}, level)
  if v.ttl == nil then error(call .. ": state_ttl needs ttl (a duration, e.g. ttl = \"10min\")", level) end
  local ms = require("wm.duration").ms(v.ttl, call .. ": state_ttl.ttl", level)
  if ms <= 0 then
    error(string.format("%s: state_ttl.ttl must be a positive duration, got %s", call, tostring(v.ttl)), level)
  end
  local updates = {on_create_and_write = 0, on_read_and_write = 1}
  local times = {event = 0, processing = 1}
  local u, t = updates[v.update or "on_create_and_write"], times[v.time or "processing"]
  if u == nil then
    error(string.format("%s: state_ttl.update must be \"on_create_and_write\" or \"on_read_and_write\", got %s",
      call, tostring(v.update)), level)
  end
  if t == nil then
    error(string.format("%s: state_ttl.time must be \"processing\" or \"event\", got %s",
      call, tostring(v.time)), level)
  end
  return {ttl = ms, ttl_update = u, ttl_time = t}
end

--- A table of options whose keys are all in `known` (nil gives an empty table).
-- @local
function M.opt_table(opts, call, known, level)
  if opts == nil then return {} end
  if type(opts) ~= "table" then
    error(string.format("%s: expected a table of options, got %s", call, type(opts)), level + 1)
  end
  for k in pairs(opts) do
    if not known[k] then
      local names = {}
      for n in pairs(known) do names[#names + 1] = n end
      table.sort(names)
      error(string.format("%s: unknown option '%s' (%s)", call, tostring(k), table.concat(names, ", ")),
        level + 1)
    end
  end
  return opts
end

--- nil, or an integer from 1 to `max` (default: any positive integer).
-- @local
function M.positive_int(v, call, what, level, max)
  if v == nil then return nil end
  if math.type(v) ~= "integer" or v < 1 then
    error(string.format("%s: %s must be a positive integer, got %s", call, what, tostring(v)), level + 1)
  end
  if max and v > max then
    error(string.format("%s: %s must be at most %d, got %s", call, what, max, tostring(v)), level + 1)
  end
  return v
end

--- A parallelism: an integer from 1 to MAX_PARALLELISM.
-- @local
function M.parallelism(v, call, what, level)
  if math.type(v) ~= "integer" or v < 1 then
    error(string.format("%s: %s must be a positive integer, got %s", call, what, tostring(v)), level + 1)
  end
  if v > M.MAX_PARALLELISM then
    error(string.format("%s: %s must be at most %d, got %s", call, what, M.MAX_PARALLELISM, tostring(v)),
      level + 1)
  end
  return v
end

function M.check_on_error(v, call, level)
  if v == nil then return "fail" end
  if v ~= "fail" and v ~= "skip" and v ~= "side_output" then
    error(string.format("%s: on_error must be 'fail', 'skip' or 'side_output', got %s", call, tostring(v)),
      level + 1)
  end
  return v
end

function M.check_host_port(host, port, call, level)
  if type(host) ~= "string" or host == "" then
    error(string.format("%s: expected a host name or address, got %s", call, type(host)), level + 1)
  end
  if math.type(port) ~= "integer" or port < 0 or port > 65535 then
    error(string.format("%s: expected a port number (0 to 65535), got %s", call, tostring(port)), level + 1)
  end
end

-- The environment and the plan ---------------------------------------------------------

--- Creates an execution environment (`wm.env`).
-- @tparam[opt] table opts `parallelism` (default 1), `watermark_interval` (default "200ms";
--   0 = a periodic watermark after every record), `time` ("event", "ingestion", "processing"),
--   `threads` (default 1: every instance on one thread, a deterministic schedule; n: the
--   instances spread over n threads, 0 = one per core; needs wmrun, see docs/parallelism.md),
--   `metrics` ({port = PORT, host = "127.0.0.1"}: Prometheus metrics at /metrics while the job
--   runs, port 0 = any free one; see docs/metrics.md),
--   `ui` ({port = PORT, host = "127.0.0.1"}: a live view of the job at / and its JSON at
--   /api/job while the job runs; wmrun's --ui overrides the port; see docs/metrics.md "Live view"),
--   `checkpoint` (`{dir = DIR, interval = "10s"}`: checkpoints in DIR, resumed from at the next
--   start; `url = "nats://HOST:PORT/BUCKET"` instead of dir: in a NATS store; see
--   docs/checkpoints.md; wmrun's --checkpoint-dir overrides it),
--   `pre_aggregate` (default true: built-in sum/min/max windows over a file read in parts
--   aggregate each part locally before the key exchange; false: every record crosses, see
--   docs/performance.md "Pre-aggregation"),
--   `stall_timeout` (default "60s"; 0 = never: a job whose sources stay paused by backpressure
--   for this long while no sink reports progress and no write is in flight fails as stalled,
--   naming its sources, instead of hanging; wmrun's --stall-timeout overrides it),
--   `backpressure` (`{high = BYTES, low = BYTES}`, default 1 MiB and a quarter of high: the
--   bytes queued by asynchronous sinks and between threads above which every source pauses,
--   and under which they resume; see docs/io.md "Backpressure")
-- @treturn Env
-- @usage local env = wm.env{ watermark_interval = 0 }
function M.env(opts)
  opts = opts or {}
  if type(opts) ~= "table" then error("env: expected a table of options, got " .. type(opts), 2) end
  for k in pairs(opts) do
    if k ~= "parallelism" and k ~= "watermark_interval" and k ~= "time" and k ~= "name"
      and k ~= "threads" and k ~= "metrics" and k ~= "checkpoint" and k ~= "pre_aggregate"
      and k ~= "stall_timeout" and k ~= "backpressure" and k ~= "ui" and k ~= "max_parallelism" then
      error("env: unknown option '" .. tostring(k) .. "' (parallelism, watermark_interval, time, "
        .. "threads, metrics, ui, checkpoint, pre_aggregate, stall_timeout, backpressure, max_parallelism)", 2)
    end
  end
  local function endpoint(name, e)
    if e == nil then return nil end
    if type(e) ~= "table" or math.type(e.port) ~= "integer" or e.port < 0 or e.port > 65535
      or (e.host ~= nil and type(e.host) ~= "string") then
      error("env: " .. name .. " must be {port = 0 to 65535, host = \"127.0.0.1\"}, got " .. tostring(e), 3)
    end
    return {port = e.port, host = e.host or "127.0.0.1"}
  end
  local mh = endpoint("metrics", opts.metrics)
  local ui = endpoint("ui", opts.ui)
  local ck = opts.checkpoint
  if ck ~= nil then
    if type(ck) ~= "table" then
      error("env: checkpoint must be a table {dir = DIR, interval = D}, got " .. type(ck), 2)
    end
    for k in pairs(ck) do
      if k ~= "dir" and k ~= "url" and k ~= "interval" then
        error("env checkpoint: unknown option '" .. tostring(k) .. "' (dir, url, interval)", 2)
      end
    end
    local dir = ck.dir
    if ck.url ~= nil then -- a store's URL (nats://HOST:PORT/BUCKET[/PATH]), the same as dir = URL
      if dir ~= nil then error("env checkpoint: give dir or url, not both", 2) end
      if type(ck.url) ~= "string" or not ck.url:match("^%a[%w+.-]*://.") then
        error("env checkpoint: url must be a checkpoint store's URL like nats://HOST:PORT/BUCKET, got "
          .. (type(ck.url) == "string" and string.format("%q", ck.url) or type(ck.url)), 2)
      end
      dir = ck.url
    end
    if type(dir) ~= "string" or dir == "" then
      error("env checkpoint: dir must be a folder name or a store's URL (a string), got " .. type(dir), 2)
    end
    local iv = ck.interval == nil and 10000 or duration.ms(ck.interval, "env checkpoint interval", 2)
    if iv < 0 then error("env checkpoint: interval must not be negative", 2) end
    ck = {dir = dir, interval = iv}
  end
  local threads = opts.threads or 1
  if math.type(threads) ~= "integer" or threads < 0 or threads > M.MAX_THREADS then
    error(string.format("env: threads must be an integer from 0 (one per core) to %d, got %s",
      M.MAX_THREADS, tostring(threads)), 2)
  end
  local p = M.parallelism(opts.parallelism or 1, "env", "parallelism", 2)
  local maxp = opts.max_parallelism
  if maxp ~= nil and (math.type(maxp) ~= "integer" or maxp < 1 or maxp > M.MAX_KEY_GROUPS) then
    error(string.format("env: max_parallelism (the number of key groups) must be an integer from 1 "
      .. "to %d, got %s", M.MAX_KEY_GROUPS, tostring(maxp)), 2)
  end
  local wi = opts.watermark_interval
  wi = wi == nil and 200 or duration.ms(wi, "env watermark_interval", 2)
  if wi < 0 then error("env: watermark_interval must not be negative", 2) end
  local bp = opts.backpressure
  if bp ~= nil then
    if type(bp) ~= "table" then
      error("env: backpressure must be a table {high = BYTES, low = BYTES}, got " .. type(bp), 2)
    end
    for k in pairs(bp) do
      if k ~= "high" and k ~= "low" then
        error("env backpressure: unknown option '" .. tostring(k) .. "' (high, low)", 2)
      end
    end
    if math.type(bp.high) ~= "integer" or bp.high < 1 then
      error("env backpressure: high must be a number of bytes (an integer of at least 1), got "
        .. tostring(bp.high), 2)
    end
    if bp.low ~= nil and (math.type(bp.low) ~= "integer" or bp.low < 1 or bp.low >= bp.high) then
      error(("env backpressure: low must be a number of bytes from 1 to high - 1 (%d), got %s")
        :format(bp.high - 1, tostring(bp.low)), 2)
    end
  end
  local stall = opts.stall_timeout
  stall = stall ~= nil and duration.ms(stall, "env stall_timeout", 2) or nil
  if stall and stall < 0 then error("env: stall_timeout must not be negative", 2) end
  if opts.pre_aggregate ~= nil and type(opts.pre_aggregate) ~= "boolean" then
    error("env: pre_aggregate must be a boolean, got " .. type(opts.pre_aggregate), 2)
  end
  local time = opts.time or "event"
  if time ~= "event" and time ~= "ingestion" and time ~= "processing" then
    error("env: time must be 'event', 'ingestion' or 'processing', got " .. tostring(time), 2)
  end
  local o = M._overrides
  if o.watermark_interval then wi = o.watermark_interval end
  if o.parallelism then p = o.parallelism end
  if o.max_parallelism then maxp = o.max_parallelism end
  if o.threads then threads = o.threads end
  if o.stall_timeout then stall = o.stall_timeout end
  if o.metrics_port then mh = {port = o.metrics_port, host = mh and mh.host or "127.0.0.1"} end
  if o.ui_port then ui = {port = o.ui_port, host = ui and ui.host or "127.0.0.1"} end
  if ui then ui.page = require("wm.uipage") end -- only when asked: nothing is loaded otherwise
  if o.checkpoint_dir then
    ck = {dir = o.checkpoint_dir, interval = o.checkpoint_interval or (ck and ck.interval) or 10000}
  elseif ck and o.checkpoint_interval then
    ck.interval = o.checkpoint_interval
  end
  if ck then
    ck.fresh = o.fresh
    ck.allow_state_change = o.allow_state_change
    ck.from_savepoint, ck.stop_with_savepoint = o.from_savepoint, o.stop_with_savepoint
    ck.allow_non_restored_state = o.allow_non_restored_state
  elseif o.from_savepoint or o.stop_with_savepoint then
    error((o.from_savepoint and "--from-savepoint" or "--stop-with-savepoint")
      .. " needs checkpoints: give --checkpoint-dir (the resumed job's checkpoints go there)", 2)
  end
  return setmetatable({nodes = {}, parallelism = p, max_parallelism = maxp, watermark_interval = wi,
                       time = time, threads = threads,
                       checkpoint = ck, no_pre_aggregate = opts.pre_aggregate == false and 1 or nil,
                       metrics = o.metrics, trace_watermarks = o.trace_watermarks,
                       no_drain = o.no_drain, timeline = o.timeline, metrics_http = mh, ui_http = ui,
                       progress = o.progress, stall_timeout = stall, restart_backoff = o.restart_backoff,
                       pressure_high = bp and bp.high, pressure_low = bp and (bp.low or bp.high // 4)}, Env)
end

--- Adds a node to the env's plan; `t.where` is the job line it came from.
-- @local
function Env:_node(kind, inputs, t)
  t = t or {}
  local st = t.strategy
  t.kind, t.inputs = kind, inputs
  t.where = M.fn_where(t.fn) or M.fn_where(t.agg and t.agg.add) or M.fn_where(st and (st.ts_fn or st.factory))
    or M.where()
  t.id = #self.nodes + 1
  self.nodes[t.id] = t
  return t
end

--- Runs the job until every source has ended. Raises the error of a failed job.
-- An environment runs once.
-- @tparam[opt="wmrun job"] string name the job's name (in errors and `--metrics`)
-- @usage env:from_elements(1, 2, 3):map(function(x) return x * 2 end):print()
-- env:execute("doubling")
function Env:execute(name)
  if self.executed then error("execute: this environment has already run", 2) end
  for _, h in ipairs(M.hooks("prepare")) do h.fn(self, 2) end
  self.executed = true
  -- a hook may run the job its own way: scale_out = true on a source (wm.scaleout: this
  -- process supervises, or runs one partition's task), read_lines{arrival = ...}
  -- (wm.lab.replay: the recorded arrival times' clock)
  for _, h in ipairs(M.hooks("run")) do
    if h.fn(self, name) then return end
  end
  return core.execute(self, name or "wmrun job")
end

--- A stream over a node of `env`.
-- @local
function M.stream(env, node) return setmetatable({env = env, node = node}, Stream) end

--- A stream over a new node of kind `kind` that reads the stream `s`.
-- @local
function M.one_input(s, kind, t, name)
  t = t or {}
  t.name = t.name or name or kind
  return M.stream(s.env, s.env:_node(kind, {s.node}, t))
end

--- A sink node of kind `kind` that reads the stream `s`.
-- @local
function M.sink(s, kind, t)
  local n = s.env:_node(kind, {s.node}, t)
  return setmetatable({env = s.env, node = n}, Sink)
end

return M
