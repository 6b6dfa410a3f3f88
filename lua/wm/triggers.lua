--- Window triggers (api.md: Triggers): when a window's function runs.
--
-- A trigger decides, for every record added to a window and for every timer the window
-- registered, whether the window fires (emits its result), purges (drops its contents),
-- both, or neither. `:trigger(t)` on a windowed stream replaces the window's default
-- trigger (`event_time()` for event-time windows, `processing_time()` for processing-time
-- windows; global windows have none and never fire unless given one).
-- @module wm.triggers
local duration = require("wm.duration")

local M = {}

--- The metatable of every trigger (used to check arguments).
M.Trigger = {__name = "wm.Trigger"}
M.Trigger.__index = M.Trigger

local function trigger(t) return setmetatable(t, M.Trigger) end

local function positive_ms(d, call)
  local ms = duration.ms(d, call .. " interval", 3)
  if ms <= 0 then error(string.format("%s: the interval must be positive, got %s", call, tostring(d)), 3) end
  return ms
end

--- Fires when the watermark passes the window's end (`max_timestamp`); a record added to a
-- window the watermark has already passed fires it at once (a late firing).
-- The default of event-time windows.
-- @treturn table a trigger
-- @usage keyed:window(wm.windows.tumbling("5s")):trigger(wm.triggers.event_time())
function M.event_time() return trigger{kind = "event_time"} end

--- Fires when the wall clock reaches the window's end. The default of processing-time windows.
-- @treturn table a trigger
-- @usage keyed:window(wm.windows.tumbling("5s")):trigger(wm.triggers.processing_time())
function M.processing_time() return trigger{kind = "processing_time"} end

--- Fires every `n` records added to the window (the count restarts after each firing).
-- @tparam integer n a positive number of records
-- @treturn table a trigger
-- @usage :trigger(wm.triggers.count(100))
function M.count(n)
  if math.type(n) ~= "integer" or n <= 0 then
    error("count: the number of records must be a positive integer, got " .. tostring(n), 2)
  end
  return trigger{kind = "count", n = n}
end

--- Fires every `interval` of event time (aligned to multiples of it), and at the window's end.
-- @tparam integer|string interval a positive duration
-- @treturn table a trigger
-- @usage keyed:window(wm.windows.tumbling("1h")):trigger(wm.triggers.continuous_event_time("5min"))
function M.continuous_event_time(interval)
  return trigger{kind = "continuous_event_time", n = positive_ms(interval, "continuous_event_time")}
end

--- Fires every `interval` of wall-clock time (aligned to multiples of it) while the window has records.
-- @tparam integer|string interval a positive duration
-- @treturn table a trigger
-- @usage keyed:window(wm.windows.global()):trigger(wm.triggers.continuous_processing_time("10s"))
function M.continuous_processing_time(interval)
  return trigger{kind = "continuous_processing_time", n = positive_ms(interval, "continuous_processing_time")}
end

--- Fires once, at the end of the input (the `MAX` watermark). Meant for global windows.
-- @treturn table a trigger
-- @usage keyed:window(wm.windows.global()):trigger(wm.triggers.end_of_stream()):sum("vc")
function M.end_of_stream() return trigger{kind = "end_of_stream"} end

--- Wraps a trigger so that every firing also purges the window's contents.
-- @tparam table t a trigger
-- @treturn table a trigger
-- @usage :trigger(wm.triggers.purging(wm.triggers.count(3)))
function M.purging(t)
  if getmetatable(t) ~= M.Trigger then
    error("purging: expected a trigger from wm.triggers, got " .. type(t), 2)
  end
  return trigger{kind = "purging", inner = t, mergeable = t.mergeable}
end

local callbacks = {on_element = true, on_event_time = true, on_processing_time = true,
                   on_merge = true, clear = true, snapshot = true, restore = true}

--- A trigger written in Lua. Every callback is optional; those that decide return
-- `"continue"` (also `nil`), `"fire"`, `"purge"` or `"fire_and_purge"`.
--
-- - `on_element(record, ts, window, ctx)`: a record was added to `window`;
-- - `on_event_time(t, window, ctx)`: an event-time timer of the window fired
--   (also called at the window's cleanup time);
-- - `on_processing_time(t, window, ctx)`: a processing-time timer fired;
-- - `on_merge(window, ctx)`: session windows merged into `window` (needed for session windows;
--   the timers of the windows that merged are gone: register again here);
-- - `clear(window, ctx)`: the window is deleted.
--
-- `window` is `{start, stop, max_timestamp}`; `ctx` has `key`, `current_watermark`,
-- `current_processing_time`, `state` (a table kept per window: after a merge, the earliest
-- window's), and the methods `ctx:register_event_time_timer(t)`,
-- `ctx:register_processing_time_timer(t)`, `ctx:delete_event_time_timer(t)`,
-- `ctx:delete_processing_time_timer(t)` (registering the same time twice gives one timer).
--
-- Checkpoints (docs/checkpoints.md): `ctx.state` and the timers of every window are the
-- engine's and are checkpointed with the window operator. State kept elsewhere (fields of
-- `spec`, upvalues) goes through two optional methods: `snapshot(self)` returns a plain
-- table, `restore(self, t)` puts it back; `self` is `spec`, which may hold fields of its
-- own (any field but a function; give both methods or neither).
-- @tparam table spec the callbacks
-- @treturn table a trigger
-- @usage wm.triggers.custom{
--   on_element = function(r, ts, w, ctx)
--     ctx:register_event_time_timer(w.max_timestamp)
--     return r.alarm and "fire" or "continue"
--   end,
--   on_event_time = function(t, w) return t == w.max_timestamp and "fire" or "continue" end,
-- }
function M.custom(spec)
  if type(spec) ~= "table" then error("custom: expected a table of callbacks, got " .. type(spec), 2) end
  local t = {kind = "custom"}
  for k, v in pairs(spec) do
    -- a field that is not a callback nor a function is the trigger object's own state
    -- (for its snapshot methods)
    if callbacks[k] then
      if type(v) ~= "function" then error("custom: '" .. k .. "' must be a function, got " .. type(v), 2) end
      t[k] = v
    elseif type(v) == "function" then
      error("custom: unknown callback '" .. tostring(k) ..
        "' (on_element, on_event_time, on_processing_time, on_merge, clear, snapshot, restore)", 2)
    end
  end
  require("wm.base").check_hooks(spec, "custom")
  t.mergeable = spec.on_merge ~= nil
  if spec.snapshot then t.self = spec end
  return trigger(t)
end

return M
