--- Keyed streams beyond windows: keyed process functions with timers, rolling aggregations.
-- Installed into the classes of wm by wm/init.lua.
-- @module wm.keyed
local M = {}

function M.install(wm, c)
  return wm, c
end

return M
