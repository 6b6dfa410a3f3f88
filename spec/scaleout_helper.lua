--- What the scale-out specs share (spec/scaleout_spec.lua on Kafka, spec/scaleout_nats_spec.lua
-- on NATS): supervisors started in the background, the union of the tasks' files, and the
-- cue at which a task stops itself so that the spec can kill its supervisor.
local helper = require("helper")

local q = helper.shell_quote

local M = {}

--- The lines of a file (none when it does not exist).
function M.lines_of(path)
  local t = {}
  for l in helper.read_or_empty(path):gmatch("[^\n]+") do t[#t + 1] = l end
  return t
end

--- The lines of every file of dir whose name starts with `prefix`, sorted (a multiset).
function M.union(dir, prefix)
  local t = {}
  for _, f in ipairs(helper.lines("ls " .. q(dir))) do
    if f:sub(1, #prefix) == prefix then
      for _, l in ipairs(M.lines_of(dir .. "/" .. f)) do t[#t + 1] = l end
    end
  end
  table.sort(t)
  return t
end

--- Starts `n` supervisors in the background, process i (first, default 1, .. first + n - 1)
-- as `wmrun <args(i)>`, its files in dir/pI (out, err, pid, rc), in the working directory
-- cwd(i) when given (else the spec's). Each handle has pid, done() (the exit status, or nil
-- while it runs), err() (its stderr so far) and kill().
function M.start(dir, n, args, first, cwd)
  local procs = {}
  first = first or 1
  for i = first, first + n - 1 do
    local pdir = dir .. "/p" .. i
    os.execute("mkdir -p " .. q(pdir))
    local cd = cwd and ("cd " .. q(cwd(i)) .. " || exit 1; ") or ""
    os.execute(string.format("sh -c %s >/dev/null 2>&1 </dev/null &", q(string.format(
      "%s%s %s >%s 2>%s & echo $! >%s; wait $!; echo $? >%s", cd, helper.wmrun_path(), args(i), q(pdir .. "/out"),
      q(pdir .. "/err"), q(pdir .. "/pid"), q(pdir .. "/rc")))))
    local p = {dir = pdir}
    p.pid = helper.wait_for(function() return tonumber(helper.read_or_empty(pdir .. "/pid"):match("%d+")) end,
      "wmrun to start", 60)
    function p.done()
      local s = helper.read_or_empty(pdir .. "/rc")
      if s ~= "" then return tonumber(s:match("%d+")) end
    end
    function p.err() return helper.read_or_empty(pdir .. "/err") end
    function p.kill() if not p.done() then os.execute("kill -KILL " .. p.pid .. " 2>/dev/null") end end
    procs[#procs + 1] = p
  end
  return procs
end

--- Whether every process has ended.
function M.all_done(procs)
  for _, p in ipairs(procs) do if not p.done() then return false end end
  return true
end

--- A job's filter (Lua text) that drops the records with `pause = true`; in a task, with the
-- global `flags` (a folder) set, the first task to meet one writes its pid into
-- flags/<task> and stops itself (SIGSTOP), once: the kill specs' cue.
M.CUE = [[
  :filter(function(r)
    if not r.pause then return true end
    local task = os.getenv("WM_TASK")
    if flags and task then -- the first task to meet the cue stops here, once: the spec kills its supervisor
      local flag = flags .. "/" .. task:match("(%S+)$")
      local h = io.open(flag)
      if h then h:close() else os.execute("echo $PPID > " .. flag .. ".tmp && mv " .. flag .. ".tmp " .. flag
        .. " && kill -STOP $PPID") end
    end
    return false
  end)
]]

local function state(pid) return helper.read_or_empty("/proc/" .. pid .. "/stat"):match("^%d+ %b() (%a)") end

--- Waits until the task `name` has stopped at the cue (M.CUE, flags folder `flags`) and
-- returns the supervisor among `procs` that runs it, and the task's pid.
function M.victim(flags, name, procs)
  local child = helper.wait_for(function() return tonumber(helper.read_or_empty(flags .. "/" .. name):match("%d+")) end,
    "the task " .. name .. " to reach its cue", 60)
  helper.wait_for(function() return state(child) == "T" end, "the task " .. name .. " to stop", 60)
  local ppid = tonumber(helper.read_or_empty("/proc/" .. child .. "/stat"):match("^%d+ %b() %a (%d+)"))
  for _, p in ipairs(procs) do if p.pid == ppid then return p, child end end
  error("the parent of task " .. name .. " is none of the processes")
end

--- Waits until the process `pid` is gone (or a zombie).
function M.wait_gone(pid, what)
  helper.wait_for(function() local s = state(pid); return s == nil or s == "Z" end, what, 30)
end

return M
