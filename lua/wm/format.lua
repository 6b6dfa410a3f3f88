--- Formatting values as `print` shows them (api.md, Sinks).
-- @module wm.format
local core = require("wm.core")

local M = {}

--- The text `print` writes for a value: strings as they are, numbers as `tostring`,
-- tables with `__tostring` through it, other tables as compact JSON with sorted keys.
-- @param v any value
-- @treturn string
-- @usage wm.format.tostring({vc = 3, id = "a"}) --> '{"id":"a","vc":3}'
function M.tostring(v) return core.format(v, false) end

--- The value as JSON (strings quoted), as `write_lines` writes it.
-- @param v any value
-- @treturn string
-- @usage wm.format.json("a") --> '"a"'
function M.json(v) return core.format(v, true) end

return M
