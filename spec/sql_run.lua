-- Runs `wmrun --sql job.sql` in a folder of its own, removed afterwards (for the SQL specs).
local h = require("helper")

local M = {}

--- Writes `files` ({name = text}) and job.sql into a new folder, runs wmrun there.
-- `opts.prepare(dir)` runs before wmrun, `opts.after(dir)` after it; `opts.args` are more
-- options of wmrun. Returns stdout, stderr with the folder's path taken out of it, and the
-- exit code.
function M.run(sql, files, opts)
  opts = opts or {}
  local dir = h.tmpdir()
  files = files or {}
  files["job.sql"] = sql
  for name, text in pairs(files) do
    local f = assert(io.open(dir .. "/" .. name, "w"))
    f:write(text)
    f:close()
  end
  if opts.prepare then opts.prepare(dir) end
  local out, err, code = h.wmrun((opts.args and opts.args .. " " or "") .. "--sql '" .. dir .. "/job.sql'")
  if opts.after then opts.after(dir) end
  os.execute("rm -rf '" .. dir .. "'")
  local d = dir:gsub("%p", "%%%0")
  return (out:gsub(d .. "/", "")), (err:gsub("^wmrun: ", ""):gsub(d .. "/", "")), code
end

return M
