--- Window evictors (api.md: Evictors).
-- @module wm.evictors
local M = {}

return M
