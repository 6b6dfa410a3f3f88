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

--- Per-key watermarks combined by minimum, with liveness: the watermark is the lowest of
-- every key's own highest timestamp, minus `d`, minus 1 (`min_k max_ts(k) - d - 1`), so a
-- slow or skewed source (a key: a source, a partition, a sensor) holds it back instead of
-- seeing its records late. With `quiet`, a key that has sent nothing for `quiet` ms of
-- processing time (`out:current_processing_time()`: virtual in a replay, the lab and
-- `wm.testing`) drops out of the minimum, so a stalled source stops holding the others;
-- its next record brings it back (records it held are then late when the others' watermark
-- has passed them). When every key is quiet the watermark holds. Emitted at each periodic
-- emission (docs/watermarks.md, "Per-key watermarks"); its state (per key: highest
-- timestamp, last arrival) is in checkpoints. A generator: keys must be strings or numbers.
-- @tparam string|function key a field of the record, or `fn(record) -> key`
-- @tparam[opt=0] integer|string d the bound on each key's own out-of-orderness
-- @tparam[opt] integer|string quiet drop a key from the minimum after this long without records
-- @treturn Strategy
-- @usage wm.watermarks.per_key_minimum("source", "100ms", "2s"):with_timestamp_field("ts")
function M.per_key_minimum(key, d, quiet)
  if type(key) ~= "string" and type(key) ~= "function" then
    error("per_key_minimum: key must be a field name or a function(record) -> key, got " .. type(key), 2)
  end
  local delay = duration.ms(d or 0, "per_key_minimum", 2)
  if delay < 0 then error("per_key_minimum: the bound must not be negative, got " .. tostring(d), 2) end
  local q = quiet ~= nil and duration.ms(quiet, "per_key_minimum quiet", 2) or nil
  if q and q <= 0 then error("per_key_minimum: the quiet time must be positive, got " .. tostring(quiet), 2) end
  local keyfn = type(key) == "function" and key or function(r) return r[key] end
  local info = debug.getinfo(2, "Sl")
  local s = strategy({kind = "custom", delay = 0,
    gen_where = info and info.currentline > 0 and (info.short_src .. ":" .. info.currentline) or "?",
    lab_name = M.describe_duration(delay) .. (q and (" quiet " .. M.describe_duration(q)) or "")})
  s.factory = function()
    return {
      max = {}, last = {},
      on_event = function(g, r, ts, out)
        local k = keyfn(r)
        if k == nil then return end
        local m = g.max[k]
        if not m or ts > m then g.max[k] = ts end
        g.last[k] = out:current_processing_time()
      end,
      on_periodic_emit = function(g, out)
        local now, low = q and out:current_processing_time(), nil
        for k, m in pairs(g.max) do
          if (not q or now - g.last[k] < q) and (not low or m < low) then low = m end
        end
        if low and low - delay - 1 > math.mininteger then out:emit_watermark(low - delay - 1) end
      end,
      snapshot = function(g) return {max = g.max, last = g.last} end,
      restore = function(g, t) g.max, g.last = t.max, t.last end,
    }
  end
  return s
end

--- A percentile-adaptive delay: the watermark trails the highest timestamp by the `p`-th
-- percentile (nearest rank) of the out-of-orderness of the last `sample` records, where a
-- record's out-of-orderness is how far it was behind the highest timestamp seen before it
-- (0 when it was the highest): `max_ts - q_p - 1`, recomputed at each periodic emission.
-- The delay follows the disorder instead of being fixed in advance; a burst of stragglers
-- raises it after they come (they are late first). Its state (the sample) is in checkpoints.
-- @tparam number p the percentile, a fraction in (0, 1] (0.99 for p99)
-- @tparam[opt=1000] integer sample how many of the latest records the percentile is taken over
-- @treturn Strategy
-- @usage wm.watermarks.percentile_delay(0.99, 2000):with_timestamp_field("ts")
function M.percentile_delay(p, sample)
  if type(p) ~= "number" or p <= 0 or p > 1 then
    error("percentile_delay: p must be a fraction in (0, 1] (0.99 for p99), got " .. tostring(p), 2)
  end
  sample = sample or 1000
  if math.type(sample) ~= "integer" or sample < 1 then
    error("percentile_delay: sample must be a positive integer, got " .. tostring(sample), 2)
  end
  local info = debug.getinfo(2, "Sl")
  local s = strategy({kind = "custom", delay = 0,
    gen_where = info and info.currentline > 0 and (info.short_src .. ":" .. info.currentline) or "?",
    lab_name = string.format("p%s of %d", (string.format("%.4g", p * 100)), sample)})
  s.factory = function()
    return {
      max = nil, ring = {}, at = 1,
      on_event = function(g, _, ts)
        local behind = g.max and g.max - ts or 0
        g.ring[g.at] = behind > 0 and behind or 0
        g.at = g.at % sample + 1
        if not g.max or ts > g.max then g.max = ts end
      end,
      on_periodic_emit = function(g, out)
        if not g.max then return end
        local sorted = {table.unpack(g.ring)}
        table.sort(sorted)
        local q = sorted[math.max(1, math.ceil(#sorted * p - 1e-9))]
        if g.max - q - 1 > math.mininteger then out:emit_watermark(g.max - q - 1) end
      end,
      snapshot = function(g) return {max = g.max, ring = g.ring, at = g.at} end,
      restore = function(g, t) g.max, g.ring, g.at = t.max, t.ring, t.at end,
    }
  end
  return s
end

--- A duration as a short label ("0ms", "250ms", "2s"), for candidate names.
-- @tparam integer ms
-- @treturn string
-- @usage wm.watermarks.describe_duration(2000) --> "2s"
function M.describe_duration(ms)
  if ms ~= 0 and ms % 60000 == 0 then return (ms // 60000) .. "min" end
  if ms ~= 0 and ms % 1000 == 0 then return (ms // 1000) .. "s" end
  return ms .. "ms"
end

M.Strategy = Strategy
return M
