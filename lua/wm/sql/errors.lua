--- Errors of the SQL layer: positions in the script turned into `file:line:column`.
-- An error is raised as a table with a `__tostring`, so that wmrun prints the message alone
-- (no Lua traceback: the user's position is in the SQL script, not in the library).
-- @module wm.sql.errors
local M = {}

local Error = {}
Error.__index = Error
Error.__tostring = function(e) return e.message end
M.Error = Error

--- The 1-based line and column of byte offset `pos` in `text`.
-- @tparam string text the script
-- @tparam integer pos a byte offset
-- @treturn integer line
-- @treturn integer column
-- The start offsets of the lines of the last script asked about (planning asks about the
-- same script once per statement and query: one pass over it, then a binary search each).
local starts_text, starts = nil, nil

function M.line_col(text, pos)
  if text ~= starts_text then
    starts_text, starts = text, {1}
    for nl in text:gmatch("()\n") do starts[#starts + 1] = nl + 1 end
  end
  local lo, hi = 1, #starts
  while lo < hi do
    local mid = (lo + hi + 1) // 2
    if starts[mid] <= pos then lo = mid else hi = mid - 1 end
  end
  return lo, pos - starts[lo] + 1
end

--- Raises `chunk:line:col: message` for a position in a script.
-- @tparam table src {name = "job.sql", text = script}
-- @tparam integer pos byte offset (nil: no position)
-- @tparam string fmt message format, then its arguments
function M.raise(src, pos, fmt, ...)
  local msg = select("#", ...) > 0 and string.format(fmt, ...) or fmt
  local where = src and src.name or "sql"
  if pos and src and src.text then
    local l, c = M.line_col(src.text, pos)
    where = string.format("%s:%d:%d", where, l, c)
  end
  error(setmetatable({message = where .. ": " .. msg, pos = pos, text = msg}, Error), 0)
end

--- True when `e` is an error raised by M.raise.
function M.is(e) return getmetatable(e) == Error end

return M
