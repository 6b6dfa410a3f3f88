-- Runs `wmrun --sql job.sql` in a folder of its own, removed afterwards (for the SQL specs), and
-- a Lua job with SQL stopped by SIGTERM and resumed from its checkpoint.
local h = require("helper")
local assert = require("luassert") -- busted's assert (its global is the test files' own)

local M = {}

--- Writes `files` ({name = text}) and job.sql into a new folder, runs wmrun there.
-- `opts.prepare(dir)` runs before wmrun, `opts.after(dir)` after it; `opts.args` are more
-- options of wmrun, `opts.env` variables set for it ("WMRUN_SQL_FS_SINK=lua"). Returns
-- stdout, stderr with the folder's path taken out of it, and the exit code.
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
  local out, err, code = h.sh((opts.env and opts.env .. " " or "") .. h.wmrun_path() .. " "
    .. (opts.args and opts.args .. " " or "") .. "--sql '" .. dir .. "/job.sql'")
  if opts.after then opts.after(dir) end
  os.execute("rm -rf '" .. dir .. "'")
  local d = dir:gsub("%p", "%%%0")
  return (out:gsub(d .. "/", "")), (err:gsub("^wmrun: ", ""):gsub(d .. "/", "")), code
end

local function q(s) return "'" .. s:gsub("'", "'\\''") .. "'" end

--- A Lua job stopped by SIGTERM and resumed from its checkpoint. `job` is the job's text, in
-- which RATE stands for the rate of its source: nil (as fast as it can) for the uninterrupted
-- reference run and the resumed run, 1000 records a second for the run that is stopped; the
-- job writes "started" to stderr when it has run a while. `par` are more options of wmrun
-- ("-p 2 --threads 2 "). Returns the reference output, the stopped run's and the resumed run's.
function M.stop_and_resume(dir, job, par)
  par = par or ""
  local ref_job = dir .. "/ref.lua"
  local f = assert(io.open(ref_job, "w"))
  f:write((job:gsub("RATE", "nil")))
  f:close()
  local ref, err, code = h.wmrun(par .. q(ref_job))
  assert.are.equal(0, code, err)
  local ck = par .. "--checkpoint-dir " .. q(dir .. "/ck") .. " "
  local p = h.bg_job(dir, (job:gsub("RATE", "1000")), ck)
  h.finally(p.kill)
  h.wait_for(function() return h.read_or_empty(p.err):find("started\n", 1, true) end, "the job to run", 60)
  p.signal("TERM")
  local rc = p.wait()
  local perr = h.read_or_empty(p.err)
  assert.are.equal(0, rc, perr)
  assert.matches("stopped by SIGTERM with checkpoint %d+", perr)
  local part = h.read(p.out)
  assert.is_true(#part > 0 and #part < #ref)
  -- resumed, as fast as it can
  f = assert(io.open(p.job, "w"))
  f:write((job:gsub("RATE", "nil")))
  f:close()
  local rest, err2, code2 = h.wmrun(ck .. q(p.job))
  assert.are.equal(0, code2, err2)
  assert.matches("resuming from checkpoint", err2)
  return ref, part, rest
end

return M
