--- Window triggers (api.md: Triggers).
-- @module wm.triggers
local M = {}

--- The default trigger of event-time windows: fires when the watermark passes the window's end.
function M.event_time() return {kind = "event_time"} end

return M
