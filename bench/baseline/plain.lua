--[[
plain.lua - the benchmark job in plain Lua 5.4, without the wmrun engine.

  lua5.4 bench/baseline/plain.lua framework|fused file.csv > out.jsonl

Job: CSV lines "id,ts,vc"; event time = ts; watermark = bounded
out-of-orderness 2000 ms emitted after every record; key_by id; tumbling
event-time windows of 5000 ms; Flink sum("vc") (the window's first record
with vc replaced by the sum); one compact JSON line per window, keys sorted:
  {"id":"k000042","ts":1700000000123,"vc":57}
Windows closing at the same time come out in the order they were created,
times ascending; whatever is left fires at end of input (watermark = MAX).
The output is byte-for-byte that of handwritten.c.

Two styles:
  framework  the user functions (map, timestamp assigner, key selector,
             reduce) called per record through a small generic push-based
             stream framework written in pure Lua: what a pure-Lua stream
             library costs.
  fused      one hand-fused loop, no per-record tables or calls beyond the
             string functions: what an expert writes for this one job.

Garbage collector: fused switches Lua to generational GC (measured ~1.5x
faster for it: the expert tunes), framework keeps Lua's default incremental
GC (what a library user gets; generational does not help it). Set
PLAIN_LUA_GC=incremental|generational to force one mode for both styles.

A summary (records, late, windows, CPU time, rate) goes to stderr.
]]

local MININT, MAXINT = math.mininteger, math.maxinteger
local find, sub, gsub, format = string.find, string.sub, string.gsub, string.format
local concat = table.concat

local WINDOW_SIZE = 5000
local OUT_OF_ORDERNESS = 2000
local OUT_CHUNK = 4096 -- lines buffered before one io.write

-- JSON string escaping; the same rules as handwritten.c.
local ESCAPES = { ['"'] = '\\"', ['\\'] = '\\\\', ['\b'] = '\\b', ['\f'] = '\\f',
                  ['\n'] = '\\n', ['\r'] = '\\r', ['\t'] = '\\t' }
for c = 0, 31 do
  local ch = string.char(c)
  if not ESCAPES[ch] then ESCAPES[ch] = format("\\u%04x", c) end
end
local NEEDS_ESCAPE = '[%z\1-\31"\\]'

local function json_string(s)
  if find(s, NEEDS_ESCAPE) then s = gsub(s, NEEDS_ESCAPE, ESCAPES) end
  return '"' .. s .. '"'
end

local clock = os.clock -- CPU time of this (single-threaded) process

------------------------------------------------------------------------------
-- framework style
------------------------------------------------------------------------------

-- A minimal generic stream framework. Operators are objects with
-- process(value, ts) and watermark(wm) methods, chained by `out`; the
-- source pushes each line into the head of the chain and MAX at the end.
local Framework = {}

local function operator(class, out)
  local op = setmetatable({}, class)
  op.out = out
  return op
end

-- map(fn)
local MapOp = {}
MapOp.__index = MapOp
function MapOp:process(value, ts) self.out:process(self.fn(value), ts) end
function MapOp:watermark(wm) self.out:watermark(wm) end

-- Watermark generator: bounded out-of-orderness (semantics section 2).
local BoundedOutOfOrderness = {}
BoundedOutOfOrderness.__index = BoundedOutOfOrderness
function BoundedOutOfOrderness.new(bound)
  return setmetatable({ bound = bound, max_ts = MININT + bound + 1 }, BoundedOutOfOrderness)
end
function BoundedOutOfOrderness:on_event(_, ts)
  if ts > self.max_ts then self.max_ts = ts end
end
function BoundedOutOfOrderness:on_periodic_emit(emit)
  emit(self.max_ts - self.bound - 1)
end

-- assign_timestamps_and_watermarks(generator, assigner_fn), with
-- watermark_interval = 0: periodic emit right after every record; a
-- watermark goes on only if it is strictly greater than the last one.
local AssignerOp = {}
AssignerOp.__index = AssignerOp
function AssignerOp:process(value)
  local ts = self.fn(value)
  self.out:process(value, ts)
  self.gen:on_event(value, ts)
  self.gen:on_periodic_emit(self.emit)
end
function AssignerOp:watermark(wm)
  if wm == MAXINT then self.emit(wm) end -- end of input passes through
end

-- key_by(fn) + window(tumbling(size)) + reduce(fn), with the default
-- event-time trigger and allowed lateness 0.
local WindowOp = {}
WindowOp.__index = WindowOp
function WindowOp:process(value, ts)
  local key = self.key_fn(value)
  local start = ts - (ts - self.offset) % self.size -- Lua's % is a floor modulo
  local max_ts = start + self.size - 1
  if max_ts <= self.current_wm then
    self.late = self.late + 1
    return
  end
  local per_key = self.windows[key]
  if not per_key then
    per_key = {}
    self.windows[key] = per_key
  end
  local w = per_key[start]
  if w then
    w.acc = self.reduce_fn(w.acc, value)
  else
    w = { key = key, start = start, acc = value }
    per_key[start] = w
    self:register_timer(max_ts, w)
  end
end
-- Timers: time -> list of windows (creation order), plus a sorted array of
-- the distinct times.
function WindowOp:register_timer(t, w)
  local list = self.timers[t]
  if list then
    list[#list + 1] = w
    return
  end
  self.timers[t] = { w }
  local times = self.timer_times
  local lo, hi = 1, #times + 1
  while lo < hi do
    local mid = (lo + hi) // 2
    if times[mid] < t then lo = mid + 1 else hi = mid end
  end
  table.insert(times, lo, t)
end
function WindowOp:watermark(wm)
  self.current_wm = wm
  local times = self.timer_times
  while times[1] and times[1] <= wm do
    local t = table.remove(times, 1)
    local list = self.timers[t]
    self.timers[t] = nil
    for i = 1, #list do
      local w = list[i]
      self.out:process(w.acc, t) -- results carry the window's max timestamp
      local per_key = self.windows[w.key]
      per_key[w.start] = nil
      if next(per_key) == nil then self.windows[w.key] = nil end
    end
  end
  self.out:watermark(wm)
end

-- Sink: JSON lines (keys sorted), buffered.
local function json_encode(v)
  local t = type(v)
  if t == "string" then
    return json_string(v)
  elseif t == "number" then
    if math.type(v) == "integer" then return tostring(v) end
    return format("%.17g", v)
  elseif t == "boolean" then
    return tostring(v)
  elseif t == "table" then
    local ks = {}
    for k in pairs(v) do ks[#ks + 1] = k end
    table.sort(ks)
    local parts = {}
    for i, k in ipairs(ks) do parts[i] = json_string(tostring(k)) .. ":" .. json_encode(v[k]) end
    return "{" .. concat(parts, ",") .. "}"
  end
  return "null"
end

local SinkOp = {}
SinkOp.__index = SinkOp
function SinkOp:process(value)
  local buf = self.buf
  buf[#buf + 1] = json_encode(value)
  if #buf >= OUT_CHUNK then self:flush() end
  self.count = self.count + 1
end
function SinkOp:flush()
  if #self.buf > 0 then
    io.write(concat(self.buf, "\n"), "\n")
    self.buf = {}
  end
end
function SinkOp:watermark(wm)
  if wm == MAXINT then self:flush() end
end

-- Builder: a list of stage descriptions, instantiated back to front.
local Stream = {}
Stream.__index = Stream
function Framework.read_lines(path)
  return setmetatable({ path = path, stages = {} }, Stream)
end
function Stream:add(stage)
  self.stages[#self.stages + 1] = stage
  return self
end
function Stream:map(fn)
  return self:add(function(out)
    local op = operator(MapOp, out); op.fn = fn; return op
  end)
end
function Stream:assign_timestamps_and_watermarks(gen, fn)
  return self:add(function(out)
    local op = operator(AssignerOp, out)
    op.fn, op.gen, op.last = fn, gen, MININT
    op.emit = function(wm)
      if wm > op.last then
        op.last = wm
        out:watermark(wm)
      end
    end
    return op
  end)
end
function Stream:key_by(fn) self.key_fn = fn; return self end
function Stream:tumbling_window(size, offset) self.size, self.offset = size, offset or 0; return self end
function Stream:reduce(fn)
  local key_fn, size, offset = self.key_fn, self.size, self.offset
  return self:add(function(out)
    local op = operator(WindowOp, out)
    op.key_fn, op.reduce_fn, op.size, op.offset = key_fn, fn, size, offset
    op.windows, op.timers, op.timer_times = {}, {}, {}
    op.current_wm, op.late = MININT, 0
    Framework.window_op = op -- for the stats line
    return op
  end)
end
function Stream:sink_json_lines()
  return self:add(function()
    local op = setmetatable({ buf = {}, count = 0 }, SinkOp)
    Framework.sink_op = op
    return op
  end)
end
function Stream:execute()
  local head
  for i = #self.stages, 1, -1 do head = self.stages[i](head) end
  local n = 0
  for line in io.lines(self.path) do
    n = n + 1
    head:process(line)
  end
  head:watermark(MAXINT)
  return n
end

local function run_framework(path)
  local n = Framework.read_lines(path)
    :map(function(line)
      local id, ts, vc = line:match("^([^,]+),(%d+),(%d+)$")
      return { id = id, ts = tonumber(ts), vc = tonumber(vc) }
    end)
    :assign_timestamps_and_watermarks(BoundedOutOfOrderness.new(OUT_OF_ORDERNESS),
                                      function(e) return e.ts end)
    :key_by(function(e) return e.id end)
    :tumbling_window(WINDOW_SIZE)
    :reduce(function(a, b) return { id = a.id, ts = a.ts, vc = a.vc + b.vc } end)
    :sink_json_lines()
    :execute()
  return n, Framework.window_op.late, 0, Framework.sink_op.count
end

------------------------------------------------------------------------------
-- fused style
------------------------------------------------------------------------------

local function run_fused(path)
  local size, size_m1 = WINDOW_SIZE, WINDOW_SIZE - 1
  local wm_lag = OUT_OF_ORDERNESS + 1
  local wm = MININT                      -- current watermark
  local max_ts = MININT + wm_lag         -- assigner state
  local next_timer = MAXINT              -- earliest pending firing time

  -- Open windows: open[id][start] = slot; per-slot state in parallel arrays
  -- (no table per window); freed slots are reused.
  local open = {}
  local w_id, w_start, w_ts, w_sum = {}, {}, {}, {}
  local nslots, free = 0, {}
  -- Timers: timers[t] = array of slots in creation order; times sorted.
  local timers, times = {}, {}

  local out, nout, fired = {}, 0, 0
  local records, late, bad = 0, 0, 0

  local function fire(upto)
    while times[1] and times[1] <= upto do
      local t = table.remove(times, 1)
      local list = timers[t]
      timers[t] = nil
      for i = 1, #list do
        local s = list[i]
        local id = w_id[s]
        if find(id, NEEDS_ESCAPE) then id = gsub(id, NEEDS_ESCAPE, ESCAPES) end
        nout = nout + 1
        out[nout] = format('{"id":"%s","ts":%d,"vc":%d}', id, w_ts[s], w_sum[s])
        if nout >= OUT_CHUNK then
          out[nout + 1] = ""
          io.write(concat(out, "\n", 1, nout + 1))
          nout = 0
        end
        local per_key = open[w_id[s]]
        per_key[w_start[s]] = nil
        w_id[s] = false
        free[#free + 1] = s
      end
      fired = fired + #list
    end
    next_timer = times[1] or MAXINT
  end

  for line in io.lines(path) do
    records = records + 1
    -- find/sub beats one match() with captures by ~25% here; tonumber
    -- skips a trailing '\r'.
    local c1 = find(line, ",", 1, true)
    local c2 = c1 and find(line, ",", c1 + 1, true)
    local ts = c2 and tonumber(sub(line, c1 + 1, c2 - 1))
    local vc = ts and tonumber(sub(line, c2 + 1))
    if not vc or c1 == 1 then
      bad = bad + 1
      records = records - 1
    else
      local id = sub(line, 1, c1 - 1)
      local start = ts - ts % size
      local wmax = start + size_m1
      if wmax <= wm then
        late = late + 1
      else
        local per_key = open[id]
        if not per_key then
          per_key = {}
          open[id] = per_key
        end
        local s = per_key[start]
        if s then
          w_sum[s] = w_sum[s] + vc
        else
          -- New window: take a slot, register its timer.
          local nf = #free
          if nf > 0 then
            s = free[nf]; free[nf] = nil
          else
            nslots = nslots + 1; s = nslots
          end
          w_id[s], w_start[s], w_ts[s], w_sum[s] = id, start, ts, vc
          per_key[start] = s
          local list = timers[wmax]
          if list then
            list[#list + 1] = s
          else
            timers[wmax] = { s }
            local i = #times + 1 -- new times are nearly always the latest
            while i > 1 and times[i - 1] > wmax do i = i - 1 end
            table.insert(times, i, wmax)
            next_timer = times[1]
          end
        end
      end
      if ts > max_ts then
        max_ts = ts
        local w = ts - wm_lag
        if w > wm then
          wm = w
          if w >= next_timer then fire(w) end
        end
      end
    end
  end
  fire(MAXINT)
  if nout > 0 then
    out[nout + 1] = ""
    io.write(concat(out, "\n", 1, nout + 1))
  end
  return records, late, bad, fired
end

------------------------------------------------------------------------------

local mode, path = arg[1], arg[2]
if (mode ~= "framework" and mode ~= "fused") or not path then
  io.stderr:write("usage: lua5.4 plain.lua framework|fused file.csv > out.jsonl\n")
  os.exit(2)
end
local gc = os.getenv("PLAIN_LUA_GC") or (mode == "fused" and "generational" or "incremental")
if gc ~= "incremental" and gc ~= "generational" then
  io.stderr:write("plain.lua: PLAIN_LUA_GC must be incremental or generational\n")
  os.exit(2)
end
collectgarbage(gc)
io.stdout:setvbuf("full", 1 << 20)
local t0 = clock()
local records, late, bad, fired
if mode == "framework" then
  records, late, bad, fired = run_framework(path)
else
  records, late, bad, fired = run_fused(path)
end
io.stdout:flush()
local dt = clock() - t0
io.stderr:write(format("plain.lua %s: records %d late %d bad_lines %d windows %d time %.3f s rate %.2f M records/s\n",
  mode .. " (" .. gc .. " gc)", records, late, bad, fired, dt, dt > 0 and records / dt / 1e6 or 0))
