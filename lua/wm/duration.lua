--- Durations: integers (ms) or strings such as "250ms", "2s", "5 s", "1min", "1h", "1d".
-- @module wm.duration
local core = require("wm.core")

local M = {}

--- Converts a duration to milliseconds. A float must be a whole number within the 64-bit
-- integer range (NaN, infinity and 2^63 are errors that name the value and `what`).
-- @tparam integer|string d an integer number of ms, or a string with a unit
-- @tparam[opt] string what the name of the argument, for the error message
-- @tparam[opt=2] integer level error level (as `error`)
-- @treturn integer milliseconds
-- @usage wm.duration.ms("2s") --> 2000
function M.ms(d, what, level)
  level = (level or 2) + 1
  if math.type(d) == "integer" then return d end
  if type(d) == "number" then
    if d ~= d or d ~= math.floor(d) then
      error(string.format("bad duration%s: %s is not a whole number of milliseconds",
        what and (" for " .. what) or "", tostring(d)), level)
    end
    local ms = math.tointeger(d) -- nil for inf and beyond the 64-bit range
    if not ms then
      error(string.format("bad duration%s: %s is out of range (durations are 64-bit integers of ms, "
        .. "at most %d)", what and (" for " .. what) or "", tostring(d), math.maxinteger), level)
    end
    return ms
  end
  if type(d) ~= "string" then
    error(string.format("bad duration%s: expected an integer (ms) or a string like '2s', got %s",
      what and (" for " .. what) or "", type(d)), level)
  end
  local ms, err = core.duration(d)
  if not ms then error((what and (what .. ": ") or "") .. err, level) end
  return ms
end

return M
