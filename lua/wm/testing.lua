--- A deterministic test harness for pipelines (api.md: wm.testing).
-- @module wm.testing
local M = {}

return M
