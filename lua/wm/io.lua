--- Sources, parsers and sinks (api.md: Environment, Streams, Sinks).
-- Installed into the classes of wm by wm/init.lua.
-- @module wm.io
local M = {}

function M.install(wm, c)
  local Env = c.Env

  --- A bounded source of the lines of a file ("-" for standard input).
  -- @tparam string path the file
  -- @tparam[opt] table opts `max_line` (bytes, default 1 MiB)
  function Env:read_lines(path, opts)
    if type(path) ~= "string" then error("read_lines: expected a path, got " .. type(path), 2) end
    opts = opts or {}
    return c.stream(self, self:_node("read_lines", {}, {path = path, follow = opts.follow,
      max_line = opts.max_line, name = "read_lines(" .. path .. ")", max_parallelism = 1}))
  end
  return wm
end

return M
