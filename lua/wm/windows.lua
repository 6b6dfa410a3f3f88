--- Window assigners (semantics.md §4): which windows a record belongs to.
--
-- Time windows are half-open intervals `[start, stop)` of milliseconds; their
-- `max_timestamp` is `stop - 1`. Durations are integers (ms) or strings such as `"5s"`.
-- @module wm.windows
local duration = require("wm.duration")

local M = {}

local function positive(d, what, call)
  local ms = duration.ms(d, call .. " " .. what, 3)
  if ms <= 0 then
    error(string.format("%s: %s must be positive, got %s", call, what, tostring(d)), 3)
  end
  return ms
end

--- Tumbling event-time windows: fixed `size`, not overlapping, aligned to `offset` (default 0).
-- A record at `ts` belongs to `[start, start + size)` with `start = ts - ((ts - offset) mod size)`.
-- @tparam integer|string size positive duration
-- @tparam[opt=0] integer|string offset alignment
-- @treturn table an assigner
-- @usage wm.windows.tumbling("5s")
function M.tumbling(size, offset)
  return {kind = "tumbling", size = positive(size, "size", "tumbling"),
          offset = offset and duration.ms(offset, "tumbling offset", 2) or 0}
end

--- Sliding event-time windows of `size`, one starting every `slide` (aligned to `offset`):
-- a record belongs to about `size / slide` windows, reported latest start first.
-- @tparam integer|string size positive duration
-- @tparam integer|string slide positive duration, at most `size`
-- @tparam[opt=0] integer|string offset alignment
-- @treturn table an assigner
-- @usage wm.windows.sliding("6s", "2s")
function M.sliding(size, slide, offset)
  local s, sl = positive(size, "size", "sliding"), positive(slide, "slide", "sliding")
  if sl > s then
    error(string.format("sliding: slide (%s) is larger than the size (%s): records between windows would be lost",
      tostring(slide), tostring(size)), 2)
  end
  return {kind = "sliding", size = s, slide = sl,
          offset = offset and duration.ms(offset, "sliding offset", 2) or 0}
end

--- Session windows: a record at `ts` opens `[ts, ts + gap)`, and the windows of a key that
-- overlap or touch merge into one. `gap` is a duration, or a function `fn(record) -> ms`
-- (a positive integer; anything else stops the job with an error naming the record).
-- @tparam integer|string|function gap
-- @treturn table an assigner
-- @usage wm.windows.session("5s")
-- @usage wm.windows.session(function(r) return r.vip and 10000 or 5000 end)
function M.session(gap)
  if type(gap) == "function" then return {kind = "session", gap_fn = gap} end
  return {kind = "session", gap = positive(gap, "gap", "session")}
end

--- One window per key that holds every record and never ends
-- (`start = math.mininteger`, `stop = max_timestamp = math.maxinteger`).
-- It fires only from a trigger given with `:trigger(t)`.
-- @treturn table an assigner
-- @usage keyed:window(wm.windows.global()):trigger(wm.triggers.count(100)):sum("vc")
function M.global()
  return {kind = "global"}
end

--- Count windows: a global window per key that fires every `n` records with those `n`
-- records and then forgets them; with `slide`, fires every `slide` records with the last
-- `n` records. Records that never make a full count are not emitted.
-- @tparam integer n records per window
-- @tparam[opt] integer slide records between firings (at most `n`)
-- @treturn table an assigner
-- @usage wm.windows.count(100)
-- @usage wm.windows.count(10, 2)
function M.count(n, slide)
  if math.type(n) ~= "integer" or n <= 0 then
    error("count: the window size must be a positive integer, got " .. tostring(n), 2)
  end
  if slide ~= nil and (math.type(slide) ~= "integer" or slide <= 0) then
    error("count: the slide must be a positive integer, got " .. tostring(slide), 2)
  end
  if slide ~= nil and slide > n then
    error(string.format("count: the slide (%d) is larger than the size (%d): records between windows would be lost",
      slide, n), 2)
  end
  return {kind = "count", size = n, slide = slide}
end

--- Processing-time version of `tumbling` (the same arguments): records are assigned by the
-- wall clock when the window operator sees them, and windows fire from wall-clock timers (at
-- the end of the input, the windows still open fire).
-- @function tumbling_processing
-- @tparam integer|string size positive duration
-- @tparam[opt=0] integer|string offset alignment
-- @treturn table an assigner
-- @usage wm.windows.tumbling_processing("1s")

--- Processing-time version of `sliding` (the same arguments; as `tumbling_processing`).
-- @function sliding_processing
-- @tparam integer|string size positive duration
-- @tparam integer|string slide positive duration, at most `size`
-- @tparam[opt=0] integer|string offset alignment
-- @treturn table an assigner
-- @usage wm.windows.sliding_processing("1min", "10s")

--- Processing-time version of `session` (the same arguments; as `tumbling_processing`):
-- the gap is wall-clock time between records.
-- @function session_processing
-- @tparam integer|string|function gap
-- @treturn table an assigner
-- @usage wm.windows.session_processing("30s")

-- The processing-time assigners above: the event-time ones with `processing_time` set.
for _, name in ipairs({"tumbling", "sliding", "session"}) do
  local f = M[name]
  M[name .. "_processing"] = function(...)
    local ok, w = pcall(f, ...)
    if not ok then
      w = w:gsub("^[^:]*:%d+: ", ""):gsub("^" .. name .. ":", name .. "_processing:")
        :gsub("^(bad duration for )" .. name .. " ", "%1" .. name .. "_processing ")
      error(w, 2)
    end
    w.processing_time = true
    return w
  end
end

return M
