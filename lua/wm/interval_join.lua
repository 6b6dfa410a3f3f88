--- The interval join (api.md "Two inputs"; semantics.md §10; Flink's `IntervalJoin`):
-- `a:key_by(k1):interval_join(b:key_by(k2)):between(lower, upper):process(fn)`. A right
-- record `r` meets a left record `l` of the same key when
-- `l.ts + lower <= r.ts <= l.ts + upper`; `fn(left, right, ctx, out)` runs once per pair,
-- and what it emits carries the larger of the two timestamps. Both sides' records are kept
-- in C until the watermark passes the last time they can meet (docs/joins.md).
-- @module wm.interval_join
local base = require("wm.base")
local duration = require("wm.duration")

local Stream, KeyedStream = base.Stream, base.KeyedStream

local M = {}

--- A keyed stream joined with another over an interval, waiting for `:between`.
-- @type IntervalJoin
local IntervalJoin = {}
IntervalJoin.__index = IntervalJoin
M.IntervalJoin = IntervalJoin

--- An interval join with its bounds: set the options, then `:process(fn)`.
-- @type IntervalJoined
local IntervalJoined = {}
IntervalJoined.__index = IntervalJoined
M.IntervalJoined = IntervalJoined

-- A method a stream has, called on a join that is not complete: say what is missing.
setmetatable(IntervalJoin, {__index = function(_, k)
  error("interval_join: '" .. tostring(k) .. "' is not a method of an interval join; give the bounds "
    .. "and the function first: :between(lower, upper):process(fn(left, right, ctx, out))", 2)
end})
setmetatable(IntervalJoined, {__index = function(_, k)
  error("interval_join: '" .. tostring(k) .. "' is not a method of an interval join; :process("
    .. "fn(left, right, ctx, out)) makes its stream", 2)
end})

--- Joins this keyed stream with `other` over an interval of event time (Flink's
-- `KeyedStream.intervalJoin`): equal keys meet, and `:between(lower, upper)` says which
-- timestamps.
-- @tparam KeyedStream other the right input, keyed
-- @treturn IntervalJoin
-- @usage impressions:key_by("ad"):interval_join(clicks:key_by("ad")):between(0, "10min")
--   :process(function(i, c, ctx, out) out({ad = i.ad, delay = c.t - i.t}) end)
function KeyedStream:interval_join(other)
  local s = self.stream
  local mt = getmetatable(other)
  if mt == Stream then
    error("interval_join: the other stream is not keyed; key both (a:key_by(k1):interval_join(b:key_by(k2)))", 2)
  end
  if mt ~= KeyedStream then
    error("interval_join: expected a keyed stream, got " .. (mt and "another object" or type(other)), 2)
  end
  if other.stream.env ~= s.env then
    error("interval_join: the other stream belongs to another environment (made by another wm.env); "
      .. "streams of one job come from one env", 2)
  end
  local j = setmetatable({env = s.env, a = s, b = other.stream, ka = self.key, kb = other.key,
    where = base.where()}, IntervalJoin)
  local pending = s.env._ijoins or {}
  s.env._ijoins = pending
  pending[#pending + 1] = j
  return j
end

--- An interval join needs a keyed stream on both sides: on a stream that is not keyed this is
-- an error that says so (key it first, `s:key_by(k):interval_join(...)`).
-- @usage a:key_by("id"):interval_join(b:key_by("id")) -- not a:interval_join(...)
function Stream.interval_join(_self)
  error("interval_join: key this stream first (a:key_by(k1):interval_join(b:key_by(k2)))", 2)
end

-- A bound: an integer (ms) or a duration string, which may start with '-'.
local function bound(v, what)
  if type(v) == "string" then
    local neg, rest = v:match("^%s*(%-?)%s*(.-)%s*$")
    local ms = duration.ms(rest, "between (" .. what .. ")", 3)
    return neg == "-" and -ms or ms
  end
  if v == nil then error("between: the " .. what .. " is missing (between(lower, upper))", 3) end
  return duration.ms(v, "between (" .. what .. ")", 3)
end

--- The interval, relative to a left record's timestamp: a right record `r` meets a left
-- record `l` when `l.ts + lower <= r.ts <= l.ts + upper` (both inclusive unless made
-- exclusive). Integers are ms; strings are durations ("10min", "-5s").
-- @param lower the lower bound (may be negative)
-- @param upper the upper bound, `>= lower`
-- @treturn IntervalJoined
-- @usage a:key_by("id"):interval_join(b:key_by("id")):between("-2s", "1s")
function IntervalJoin:between(lower, upper)
  local lo, hi = bound(lower, "lower bound"), bound(upper, "upper bound")
  if lo > hi then
    error(string.format("between: the lower bound (%d ms) is above the upper bound (%d ms); "
      .. "lower <= upper", lo, hi), 2)
  end
  self.lower, self.upper = lo, hi
  return setmetatable(self, IntervalJoined)
end

--- Makes the lower bound exclusive (`l.ts + lower < r.ts`).
-- @treturn IntervalJoined this join
-- @usage j:between(0, 10):lower_bound_exclusive() -- 0 < r.ts - l.ts <= 10
function IntervalJoined:lower_bound_exclusive()
  self.lower_exclusive = 1
  return self
end

--- Makes the upper bound exclusive (`r.ts < l.ts + upper`).
-- @treturn IntervalJoined this join
-- @usage j:between(0, 10):upper_bound_exclusive() -- 0 <= r.ts - l.ts < 10
function IntervalJoined:upper_bound_exclusive()
  self.upper_exclusive = 1
  return self
end

local function late_tag(self, tag, call, field)
  if type(tag) ~= "string" then error(call .. ": expected a tag string, got " .. type(tag), 3) end
  self[field] = tag
  return self
end

--- Sends the left records that come late (timestamp below the join's watermark) to the
-- side output `tag` of the joined stream (`joined:get_side_output(tag)`); without it they
-- are dropped and counted (`--metrics`: "late left").
-- @tparam string tag
-- @treturn IntervalJoined this join
-- @usage local j = a:key_by("id"):interval_join(b:key_by("id")):between(0, 10)
--   :side_output_left_late_data("late a"):process(fn)
-- j:get_side_output("late a"):print("late")
function IntervalJoined:side_output_left_late_data(tag)
  return late_tag(self, tag, "side_output_left_late_data", "late_left")
end

--- The same for late right records.
-- @tparam string tag
-- @treturn IntervalJoined this join
-- @usage j:between(0, "10min"):side_output_right_late_data("late clicks")
function IntervalJoined:side_output_right_late_data(tag)
  return late_tag(self, tag, "side_output_right_late_data", "late_right")
end

-- (wm.sql's outer interval joins, Flink SQL's TimeIntervalJoin; not a DataStream method, as
-- Flink's DataStream interval join has none): a kept record of an outer side that met nothing
-- goes to the function with the other side nil when the watermark lets it go, and the output
-- watermark is held back by `delay` ms (the SQL join's time attributes stay valid after it).
function IntervalJoined:_outer(left, right, delay)
  self.outer_left, self.outer_right = left and 1 or nil, right and 1 or nil
  self.watermark_delay = delay
  return self
end

--- The join function (Flink's `ProcessJoinFunction`): `fn(left, right, ctx, out)` once per
-- pair that meets, with `ctx.left_timestamp`, `ctx.right_timestamp`, `ctx.timestamp` (the
-- larger, the timestamp of what `out(v)` emits), `ctx.key`, and `ctx:output(tag, v)`.
-- For a new record, the other side's kept records come in ascending timestamp, equal
-- timestamps in arrival order.
-- @tparam function fn
-- @treturn Stream the results (and the late side outputs)
-- @usage joined = a:key_by("id"):interval_join(b:key_by("id")):between(0, 10)
--   :process(function(l, r, ctx, out) out({l = l, r = r}) end)
function IntervalJoined:process(fn)
  if type(fn) ~= "function" then
    error("process: expected a function fn(left, right, ctx, out), got " .. type(fn), 2)
  end
  self.done = true
  local g = function(k) return rawget(self, k) end -- (a missing field is no method)
  local node = self.env:_node("interval_join", {self.a.node, self.b.node}, {
    key = self.ka, key2 = self.kb, fn = fn, lower = self.lower, upper = self.upper,
    lower_exclusive = g("lower_exclusive"), upper_exclusive = g("upper_exclusive"),
    late_left = g("late_left"), late_right = g("late_right"), outer_left = g("outer_left"),
    outer_right = g("outer_right"), watermark_delay = g("watermark_delay"), name = "interval join"})
  return base.stream(self.env, node)
end

-- A join left without :between or :process would silently join nothing.
base.extend("prepare", "interval_join", function(env, level)
  for _, j in ipairs(env._ijoins or {}) do
    if not rawget(j, "done") then
      local what = rawget(j, "lower") and "" or ":between(lower, upper) and no "
      error("interval_join at " .. j.where .. " has no " .. what
        .. ":process(fn(left, right, ctx, out)): it would join nothing", level + 1)
    end
  end
end)

return M
