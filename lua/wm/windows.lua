--- Window assigners (semantics.md §4).
-- @module wm.windows
local duration = require("wm.duration")

local M = {}

local function positive(d, what, call)
  local ms = duration.ms(d, call .. " " .. what, 3)
  if ms <= 0 then
    error(string.format("%s: %s must be positive, got %s", call, what, tostring(d)), 3)
  end
  return ms
end

--- Tumbling event-time windows of `size`, aligned to `offset` (default 0).
-- @usage wm.windows.tumbling("5s")
function M.tumbling(size, offset)
  return {kind = "tumbling", size = positive(size, "size", "tumbling"),
          offset = offset and duration.ms(offset, "tumbling offset", 2) or 0}
end

--- Sliding event-time windows of `size` every `slide`.
function M.sliding(size, slide, offset)
  local s, sl = positive(size, "size", "sliding"), positive(slide, "slide", "sliding")
  if sl > s then
    error(string.format("sliding: slide (%s) is larger than the size (%s): records between windows would be lost",
      tostring(slide), tostring(size)), 2)
  end
  return {kind = "sliding", size = s, slide = sl,
          offset = offset and duration.ms(offset, "sliding offset", 2) or 0}
end

--- Session windows closed by a gap of inactivity (a duration, or `fn(record) -> gap_ms`).
function M.session(gap)
  if type(gap) == "function" then return {kind = "session", gap_fn = gap} end
  return {kind = "session", gap = positive(gap, "gap", "session")}
end

--- One window per key that never ends; it fires only from a trigger.
function M.global()
  return {kind = "global"}
end

--- Count windows of `n` records per key (sliding every `slide` records when given).
function M.count(n, slide)
  if math.type(n) ~= "integer" or n <= 0 then
    error("count: the window size must be a positive integer, got " .. tostring(n), 2)
  end
  if slide ~= nil and (math.type(slide) ~= "integer" or slide <= 0) then
    error("count: the slide must be a positive integer, got " .. tostring(slide), 2)
  end
  return {kind = "count", size = n, slide = slide}
end

for _, name in ipairs({"tumbling", "sliding", "session"}) do
  local f = M[name]
  M[name .. "_processing"] = function(...)
    local ok, w = pcall(f, ...)
    if not ok then error((w:gsub("^[^:]*:%d+: ", "")), 2) end
    w.processing_time = true
    return w
  end
end

return M
