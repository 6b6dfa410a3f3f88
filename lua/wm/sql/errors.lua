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
function M.line_col(text, pos)
  local line, start = 1, 1
  for nl in text:sub(1, pos - 1):gmatch("()\n") do
    line, start = line + 1, nl + 1
  end
  return line, pos - start + 1
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
