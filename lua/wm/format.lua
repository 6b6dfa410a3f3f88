--- Formatting values as `print` shows them (api.md, Sinks).
-- @module wm.format
local core = require("wm.core")

local M = {}

--- The text `print` writes for a value: strings as they are, numbers as `tostring`,
-- tables with `__tostring` through it, other tables as compact JSON with sorted keys.
-- @param v any value
-- @treturn string
function M.tostring(v) return core.format(v, false) end

--- The value as JSON (strings quoted), as `write_lines` writes it.
function M.json(v) return core.format(v, true) end

return M
