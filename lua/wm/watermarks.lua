--- Watermark strategies (semantics.md §2).
-- A strategy says how records get their event time and how watermarks are made from it.
-- @module wm.watermarks
local duration = require("wm.duration")

local M = {}

local Strategy = {}
Strategy.__index = Strategy

local function strategy(t) return setmetatable(t, Strategy) end

--- Takes the event time from a Lua function `fn(record, prev_ts) -> ts` (integer ms).
-- @tparam function fn the timestamp assigner
-- @treturn Strategy a new strategy
-- @usage wm.watermarks.monotonous():with_timestamp_assigner(function(r) return r.ts * 1000 end)
function Strategy:with_timestamp_assigner(fn)
  if type(fn) ~= "function" then
    error("with_timestamp_assigner: expected a function, got " .. type(fn), 2)
  end
  local s = strategy({})
  for k, v in pairs(self) do s[k] = v end
  s.ts_fn, s.ts_field, s.ts_scale = fn, nil, nil
  return s
end

--- Takes the event time from a numeric field, computed in C: ms = record[field] * scale.
-- @tparam string field the field name
-- @tparam[opt=1] integer scale multiplier to milliseconds (1000 for seconds)
-- @treturn Strategy a new strategy
-- @usage wm.watermarks.bounded_out_of_orderness("2s"):with_timestamp_field("ts", 1000)
function Strategy:with_timestamp_field(field, scale)
  if type(field) ~= "string" then
    error("with_timestamp_field: expected a field name, got " .. type(field), 2)
  end
  scale = scale or 1
  if math.type(scale) ~= "integer" or scale <= 0 then
    error("with_timestamp_field: scale must be a positive integer, got " .. tostring(scale), 2)
  end
  local s = strategy({})
  for k, v in pairs(self) do s[k] = v end
  s.ts_fn, s.ts_field, s.ts_scale = nil, field, scale
  return s
end

--- Marks the input idle after `d` of wall-clock time without records (semantics.md §2).
-- @tparam integer|string d the idle timeout
-- @treturn Strategy a new strategy
-- @usage wm.watermarks.bounded_out_of_orderness("2s"):with_timestamp_field("ts"):with_idleness("10s")
function Strategy:with_idleness(d)
  local ms = duration.ms(d, "with_idleness", 2)
  if ms <= 0 then error("with_idleness: the timeout must be positive, got " .. tostring(d), 2) end
  local s = strategy({})
  for k, v in pairs(self) do s[k] = v end
  s.idleness = ms
  return s
end

--- Wall-clock assistance for a bounded strategy (`bounded_out_of_orderness(d)` or
-- `monotonous()`): at a periodic emission, when no record has arrived for `d2` ms of
-- processing time, the watermark advances with the clock to `now - d2 - 1` (when that is
-- higher than `max_ts - d - 1`); with records flowing it is the bounded strategy's. Before the
-- first record nothing is emitted. It runs as a generator (docs/watermarks.md, "Wall-clock
-- assistance"): asked at every interval, its state in checkpoints. It assumes event time
-- follows processing time (a source whose clock lags by more than `d2` sees its records
-- late after a pause).
-- @tparam integer|string d2 the quiet time, and how far the watermark trails the clock
-- @treturn Strategy a new strategy
-- @usage wm.watermarks.bounded_out_of_orderness("500ms"):with_idle_advance("5s"):with_timestamp_field("ts")
function Strategy:with_idle_advance(d2)
  if self.kind ~= "bounded" then
    error("with_idle_advance: only for bounded_out_of_orderness(d) or monotonous(), got a strategy of kind '"
      .. tostring(self.kind) .. "'", 2)
  end
  local quiet = duration.ms(d2, "with_idle_advance", 2)
  if quiet <= 0 then error("with_idle_advance: the quiet time must be positive, got " .. tostring(d2), 2) end
  local d, min = self.delay, math.mininteger
  local s = strategy({})
  for k, v in pairs(self) do s[k] = v end
  s.kind, s.delay, s.bound, s.idle_advance = "custom", 0, d, quiet
  local info = debug.getinfo(2, "Sl")
  s.gen_where = info and info.currentline > 0 and (info.short_src .. ":" .. info.currentline) or "?"
  s.factory = function()
    return {
      max = min, last = nil,
      on_event = function(g, _, ts, out)
        if ts > g.max then g.max = ts end
        g.last = out:current_processing_time()
      end,
      on_periodic_emit = function(g, out)
        if g.last == nil then return end
        if g.max - d - 1 > min then out:emit_watermark(g.max - d - 1) end
        local now = out:current_processing_time()
        if now - g.last >= quiet and now - quiet - 1 > min then out:emit_watermark(now - quiet - 1) end
      end,
      snapshot = function(g) return {max = g.max, last = g.last} end,
      restore = function(g, t) g.max, g.last = t.max, t.last end,
    }
  end
  return s
end

--- Watermarks that trail the highest timestamp seen by `d`: emits `max_ts - d - 1`.
-- @tparam integer|string d the bound on out-of-orderness
-- @treturn Strategy
-- @usage wm.watermarks.bounded_out_of_orderness("2s"):with_timestamp_field("ts", 1000)
function M.bounded_out_of_orderness(d)
  local ms = duration.ms(d, "bounded_out_of_orderness", 2)
  if ms < 0 then error("bounded_out_of_orderness: the bound must not be negative, got " .. tostring(d), 2) end
  return strategy({kind = "bounded", delay = ms})
end

--- Watermarks for timestamps that never decrease: emits `max_ts - 1`.
-- @treturn Strategy
-- @usage wm.watermarks.monotonous():with_timestamp_field("ts")
function M.monotonous()
  return strategy({kind = "bounded", delay = 0})
end

--- `monotonous` under Flink's name (`WatermarkStrategy.forMonotonousTimestamps`).
-- @function for_monotonous_timestamps
-- @treturn Strategy
-- @usage wm.watermarks.for_monotonous_timestamps():with_timestamp_field("ts")
M.for_monotonous_timestamps = M.monotonous

--- No watermarks at all (event-time windows fire only at the end of input).
-- @treturn Strategy
-- @usage wm.watermarks.no_watermarks():with_timestamp_field("ts")
function M.no_watermarks()
  return strategy({kind = "none", delay = 0})
end

--- A custom generator (Flink's WatermarkGenerator): `factory(ctx)` returns a table with
-- `on_event(self, record, ts, out)` (called after the record is forwarded) and/or
-- `on_periodic_emit(self, out)` (every watermark_interval; after every record when it is 0);
-- `out:emit_watermark(t)` (an integer; forwarded only when greater than the last one),
-- `out:mark_idle()`, `out:mark_active()`, `out:current_processing_time()` (the job's
-- processing-time clock in ms: virtual under an arrival replay, in `wmrun lab` and in
-- `wm.testing`, the wall clock otherwise). `ctx.subtask` and `ctx.parallelism` tell the
-- instance who it is. See docs/watermarks.md.
-- @tparam function factory called once per parallel assigner instance
-- @treturn Strategy
-- @usage wm.watermarks.for_generator(function(ctx)
--   return {max = math.mininteger,
--           on_event = function(self, r, ts, out) self.max = math.max(self.max, ts) end,
--           on_periodic_emit = function(self, out) out:emit_watermark(self.max - 1000) end}
-- end)
function M.for_generator(factory)
  if type(factory) ~= "function" then
    error("for_generator: expected a function that returns a generator, got " .. type(factory), 2)
  end
  local info = debug.getinfo(2, "Sl")
  local gen_where = info and info.currentline > 0 and (info.short_src .. ":" .. info.currentline) or "?"
  return strategy({kind = "custom", delay = 0, factory = factory, gen_where = gen_where})
end

M.Strategy = Strategy
return M
