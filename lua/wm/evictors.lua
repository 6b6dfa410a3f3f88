--- Window evictors (api.md: Evictors): which records a window keeps when it fires.
--
-- An evictor runs when the window fires, before the window function (default) or after it
-- (`{after = true}`), and removes records from the window for good. A window with an
-- evictor keeps all its records (a reduce or aggregate then runs over the kept records at
-- each firing instead of incrementally).
-- @module wm.evictors
local duration = require("wm.duration")

local M = {}

--- The metatable of every evictor (used to check arguments).
M.Evictor = {__name = "wm.Evictor"}
M.Evictor.__index = M.Evictor

local function opts_after(opts, call)
  if opts == nil then return false end
  if type(opts) ~= "table" then error(call .. ": options must be a table like {after = true}", 3) end
  for k in pairs(opts) do
    if k ~= "after" then error(call .. ": unknown option '" .. tostring(k) .. "' (after)", 3) end
  end
  return opts.after and true or false
end

--- Keeps the last `n` records (the earliest ones are evicted).
-- @tparam integer n a positive number of records
-- @tparam[opt] table opts `{after = true}` to evict after the function
-- @treturn table an evictor
-- @usage keyed:count_window(10, 2):evictor(wm.evictors.count(5)):sum("vc")
function M.count(n, opts)
  if math.type(n) ~= "integer" or n <= 0 then
    error("count: the number of records must be a positive integer, got " .. tostring(n), 2)
  end
  return setmetatable({kind = "count", n = n, after = opts_after(opts, "count")}, M.Evictor)
end

--- Keeps the records whose timestamp is within `keep` of the window's latest record
-- (records with `ts <= latest - keep` are evicted; records without a timestamp are kept).
-- @tparam integer|string keep a duration (>= 0)
-- @tparam[opt] table opts `{after = true}` to evict after the function
-- @treturn table an evictor
-- @usage keyed:window(wm.windows.tumbling("1min")):evictor(wm.evictors.time("10s", {after = true})):count()
function M.time(keep, opts)
  local ms = duration.ms(keep, "time keep", 2)
  if ms < 0 then error("time: the duration to keep must not be negative, got " .. tostring(keep), 2) end
  return setmetatable({kind = "time", n = ms, after = opts_after(opts, "time")}, M.Evictor)
end

--- An evictor written in Lua: `before(records, ctx)` and/or `after(records, ctx)` return the
-- records to keep (a list; `nil` keeps them all). They may drop and reorder records, not add
-- new ones. `ctx` has `window`, `key`, `current_watermark` and `timestamps` (the records'
-- timestamps, in the same order, `false` where a record has none).
-- @tparam table spec `{before = fn, after = fn}`
-- @treturn table an evictor
-- @usage wm.evictors.custom{before = function(records)
--   local keep = {}
--   for _, r in ipairs(records) do if r.vc >= 0 then keep[#keep + 1] = r end end
--   return keep
-- end}
function M.custom(spec)
  if type(spec) ~= "table" then error("custom: expected a table {before = fn, after = fn}", 2) end
  for k, v in pairs(spec) do
    if k ~= "before" and k ~= "after" then error("custom: unknown field '" .. tostring(k) .. "' (before, after)", 2) end
    if type(v) ~= "function" then error("custom: '" .. k .. "' must be a function, got " .. type(v), 2) end
  end
  if not spec.before and not spec.after then error("custom: give a 'before' or an 'after' function", 2) end
  return setmetatable({kind = "custom", before = spec.before, after_fn = spec.after}, M.Evictor)
end

return M
