-- Shared helpers for the specs: where things are, and running wmrun as a user would.
local M = {}

M.root = (debug.getinfo(1, "S").source:match("^@(.*)/spec/helper%.lua$")) or "."
if M.root:sub(1, 1) ~= "/" then
  local pwd = os.getenv("PWD") or io.popen("pwd"):read("l")
  M.root = (M.root == "." and pwd) or (pwd .. "/" .. M.root:gsub("^%./", ""))
end
M.wmrun_bin = os.getenv("WMRUN") or (M.root .. "/build/wmrun")

-- Temporary files live in one directory of the suite's own: spec/run_all.sh makes it and
-- exports it as WM_TEST_TMP (and TMPDIR), and removes it at exit. A busted run without
-- run_all.sh makes its own (prefix "wmrun-test.") and removes it when Lua closes.
-- (os.tmpname always uses /tmp/lua_XXXXXX: specs call M.tmpname or M.tmpdir instead.)
M.TMP_PREFIX = "wmrun-test."
local tmp_base, tmp_count = nil, 0
local tmp_token = tostring({}):match("0x(%x+)") or tostring(os.time())

local function shell_quote(s)
  return "'" .. s:gsub("'", "'\\''") .. "'"
end
M.shell_quote = shell_quote

function M.tmp_base()
  if tmp_base then return tmp_base end
  local env = os.getenv("WM_TEST_TMP")
  if env and env ~= "" then
    tmp_base = env
  else
    local p = assert(io.popen('mktemp -d "${TMPDIR:-/tmp}/' .. M.TMP_PREFIX .. 'XXXXXX"'))
    tmp_base = assert(p:read("l"), "mktemp -d failed")
    p:close()
    local dir = tmp_base
    -- removed when the Lua state closes (the end of the busted run)
    M._tmp_cleanup = setmetatable({}, {__gc = function() os.execute("rm -rf " .. shell_quote(dir)) end})
  end
  return tmp_base
end

local function fresh_name()
  tmp_count = tmp_count + 1
  return string.format("%s/t%s_%d", M.tmp_base(), tmp_token, tmp_count)
end

--- Returns the path of a new empty file in the suite's temporary directory (as os.tmpname does).
local function tmpname()
  local n = fresh_name()
  assert(io.open(n, "wb")):close()
  return n
end
M.tmpname = tmpname

--- Makes a new empty directory in the suite's temporary directory and returns its path.
function M.tmpdir()
  local d = fresh_name() .. ".d"
  assert(os.execute("mkdir -p " .. shell_quote(d)))
  return d
end

--- Writes text to a new temporary file and returns its path.
function M.write_tmp(text, suffix)
  local p = fresh_name() .. (suffix or "")
  local f = assert(io.open(p, "wb"))
  f:write(text)
  f:close()
  return p
end

function M.read(path)
  local f = assert(io.open(path, "rb"))
  local s = f:read("a")
  f:close()
  return s
end

--- Runs a shell command; returns stdout, stderr and the exit code.
function M.sh(cmd, stdin)
  local o, e, i = tmpname(), tmpname(), nil
  local full = cmd .. " >" .. o .. " 2>" .. e
  if stdin then
    i = M.write_tmp(stdin)
    full = full .. " <" .. i
  else
    full = full .. " </dev/null"
  end
  local ok, how, code = os.execute(full)
  local out, err = M.read(o), M.read(e)
  os.remove(o)
  os.remove(e)
  if i then os.remove(i) end
  if how == "signal" then code = 128 + code end
  return out, err, ok and 0 or code
end

--- Runs a shell command line as M.sh does, without the sanitizer runtime `make asan` preloads
--- into every process (tools such as make, man, cp, curl and luarocks exit 1 at its leak check,
--- or hang, under it). For tools only: wmrun and lua5.4 loading wm.core keep the preload.
function M.sh_plain(cmd, stdin)
  return M.sh("env -u LD_PRELOAD sh -c " .. shell_quote(cmd), stdin)
end

--- The lines a shell command line prints (run as M.sh_plain runs it), as a list.
function M.lines(cmd)
  local p = assert(io.popen("env -u LD_PRELOAD sh -c " .. shell_quote(cmd)))
  local t = {}
  for l in p:lines() do t[#t + 1] = l end
  p:close()
  return t
end

--- The lines of text, sorted (outputs of parallel runs, whose order is not fixed); strip:
--- without print's "i> " instance prefix.
function M.sorted_lines(text, strip)
  local t = {}
  for l in text:gmatch("[^\n]+") do t[#t + 1] = strip and l:gsub("^[^ ]*> ", "") or l end
  table.sort(t)
  return t
end

--- Runs wmrun with arguments (a string, shell-quoted by the caller).
function M.wmrun(args, stdin)
  return M.sh(M.wmrun_path() .. " " .. args, stdin)
end

function M.wmrun_path()
  local v = os.getenv("WMRUN_VALGRIND")
  if v and v ~= "" then
    return "valgrind -q --error-exitcode=99 --leak-check=full --errors-for-leak-kinds=definite " .. M.wmrun_bin
  end
  return M.wmrun_bin
end

--- The name Lua gives the script at `path` in its messages ("path:line: ..."): the path
--- itself, or "..." and its end when it is longer than Lua's LUA_IDSIZE allows (60 bytes). A
--- spec that expects a script's path in a message expects this, so that it passes whatever
--- the length of TMPDIR (the suite's folders are in it).
function M.chunkname(path)
  return debug.getinfo(assert(loadfile(path)), "S").short_src
end

--- Runs a job script given as text; returns stdout, stderr, exit code.
function M.run_job(text, args, stdin)
  local p = M.write_tmp(text, ".lua")
  local out, err, code = M.wmrun((args and (args .. " ") or "") .. p, stdin)
  os.remove(p)
  return out, err, code, p
end

--- The contents of a file, or "" when it does not exist (yet).
function M.read_or_empty(path)
  local f = io.open(path, "rb")
  if not f then return "" end
  local s = f:read("a")
  f:close()
  return s
end

--- Waits until fn() returns a true value and returns it: up to `seconds` (default 10),
--- checking every 50 ms (the deadline only matters when something is broken); then fails
--- naming what.
function M.wait_for(fn, what, seconds)
  for _ = 1, (seconds or 10) * 20 do
    local v = fn()
    if v then return v end
    os.execute("sleep 0.05")
  end
  error("timed out waiting for " .. what)
end

--- A TCP port nobody uses right now (none in /proc/net/tcp or tcp6), for a server a spec
--- starts that cannot pick its own.
function M.free_port()
  local function used(port)
    local hex = string.format(":%04X ", port)
    return (M.read_or_empty("/proc/net/tcp") .. M.read_or_empty("/proc/net/tcp6")):find(hex, 1, true) ~= nil
  end
  math.randomseed(os.time() + tonumber(tostring({}):match("0x(%x+)"), 16) % 100000)
  for _ = 1, 200 do
    local p = math.random(20000, 60000)
    if not used(p) then return p end
  end
  error("no free port")
end

--- Removes a directory made by M.tmpdir (and what is in it).
function M.rmdir(dir)
  assert(dir:sub(1, #M.tmp_base() + 1) == M.tmp_base() .. "/", dir)
  os.execute("rm -rf " .. shell_quote(dir))
end

--- Starts wmrun on a job (text) in the background, its files in dir: returns a handle with
-- pid() (wmrun's), signal(name), ask(name, complete) (a signal and the answer it prints),
-- done() (the exit status, or nil while it runs), wait(),
-- kill(), and the paths out and err of its standard output and error. Its waits allow 60 s
-- (valgrind runs are slow).
function M.bg_job(dir, text, args)
  local read_or_empty = M.read_or_empty
  local job, out, err = dir .. "/job.lua", dir .. "/out", dir .. "/err"
  local pidf, rcf = dir .. "/pid", dir .. "/rc"
  local f = assert(io.open(job, "w"))
  f:write(text)
  f:close()
  os.execute(string.format("sh -c '%s %s %s >%s 2>%s & echo $! >%s; wait $!; echo $? >%s' "
    .. ">/dev/null 2>&1 </dev/null &", M.wmrun_path(), args or "", job, out, err, pidf, rcf))
  local p = {out = out, err = err, job = job}
  function p.pid()
    return M.wait_for(function() return tonumber(read_or_empty(pidf):match("%d+")) end, "wmrun to start", 60)
  end
  -- sends the signal and waits until the process has taken it (two signals sent back to
  -- back would otherwise merge into one: signals are not queued)
  function p.signal(name)
    local pid = p.pid()
    os.execute("kill -" .. name .. " " .. pid)
    M.wait_for(function()
      local st = read_or_empty("/proc/" .. pid .. "/status")
      local pending = st:match("ShdPnd:%s*(%x+)")
      return not pending or tonumber(pending, 16) == 0
    end, "wmrun to take the signal", 60)
  end
  -- sends the signal and waits for wmrun's answer on stderr (wmrun --metrics prints a table on
  -- SIGUSR1): returns what it wrote after the signal once `complete(text)` holds for that text
  function p.ask(name, complete)
    local before = #read_or_empty(err)
    p.signal(name)
    return M.wait_for(function()
      local s = read_or_empty(err):sub(before + 1)
      return complete(s) and s
    end, "wmrun's answer to SIG" .. name, 60)
  end
  -- ends wmrun if it still runs (a failed test must not leave it spinning)
  function p.kill()
    if not p.done() then os.execute("kill -KILL " .. p.pid() .. " 2>/dev/null") end
  end
  function p.done()
    local s = read_or_empty(rcf)
    if s ~= "" then return tonumber(s:match("%d+")) end
  end
  function p.wait() return M.wait_for(p.done, "wmrun to end", 60) end
  return p
end

--- Runs fn when the current test ends, passed or failed, after every function given here
-- later in the same test (last given, first run). busted's own `finally` keeps only the
-- last function a test gives it, so a test that gave two (its own and a fixture's) left
-- the first undone: a server not stopped, a folder not removed. Call this, not `finally`.
local pending = setmetatable({}, {__mode = "k"}) -- busted's finally of a test -> its list
-- busted's environment of the spec files (a proxy whose `finally` is the running test's):
-- the _ENV of the spec file that first requires this module
local spec_env
for level = 2, 50 do
  local info = debug.getinfo(level, "f")
  if not info then break end
  for i = 1, 255 do
    local name, env = debug.getupvalue(info.func, i)
    if not name then break end
    if name == "_ENV" and type(env) == "table" and env ~= _G then spec_env = env end
  end
  if spec_env then break end
end
function M.finally(fn)
  local real = spec_env and spec_env.finally
  assert(real, "helper.finally: not called from a busted test")
  local list = pending[real]
  if not list then
    list = {}
    pending[real] = list
    real(function()
      pending[real] = nil
      local first_err
      for i = #list, 1, -1 do
        local ok, err = pcall(list[i])
        if not ok and first_err == nil then first_err = err end
      end
      if first_err ~= nil then error(first_err, 0) end
    end)
  end
  list[#list + 1] = fn
end

--- Runs the job file `job` (arg[1]: the record at which it stops itself with SIGTERM, 0:
--- never; arg[2]: its output file) once uninterrupted, then with checkpoints in `dir` stopped
--- at `stop_at` and resumed; checks that the resumed file is the uninterrupted one's and
--- returns it (connect, window join and interval join specs).
function M.stop_and_resume(dir, job, stop_at)
  local assert = require("luassert")
  local whole, part = dir .. "/whole.txt", dir .. "/part.txt"
  local _, err, code = M.wmrun(M.shell_quote(job) .. " 0 " .. M.shell_quote(whole))
  assert.are.equal(0, code, err)
  local ck = "--checkpoint-dir " .. M.shell_quote(dir .. "/ck") .. " "
  _, err, code = M.wmrun(ck .. M.shell_quote(job) .. " " .. stop_at .. " " .. M.shell_quote(part))
  assert.are.equal(0, code, err)
  assert.matches("checkpoint", err)
  assert.is_true(#M.read(part) < #M.read(whole), "the first run stopped early")
  _, err, code = M.wmrun(ck .. M.shell_quote(job) .. " 0 " .. M.shell_quote(part))
  assert.are.equal(0, code, err)
  assert.matches("resum", err)
  assert.are.equal(M.read(whole), M.read(part))
  return M.read(part)
end

--- A changelog applied to a table (the `N> ` of a parallel run's print taken off): +I/+U add a
-- row, -U/-D take one away, which must be there (else an error fails the test). Returns the
-- rows left,
-- sorted, and the count of each kind.
function M.apply_changelog(lines)
  local rows, kinds = {}, {}
  for _, l in ipairs(lines) do
    local kind, row = l:gsub("^%d+> ", ""):match("^([+-][IUD])(%[.*%])$")
    if not kind then error("not a changelog line: " .. l, 2) end
    kinds[kind] = (kinds[kind] or 0) + 1
    if kind == "+I" or kind == "+U" then
      rows[row] = (rows[row] or 0) + 1
    else
      if (rows[row] or 0) <= 0 then error("retracts a row that is not there: " .. l, 2) end
      rows[row] = rows[row] - 1
    end
  end
  local out = {}
  for row, n in pairs(rows) do for _ = 1, n do out[#out + 1] = row end end
  table.sort(out)
  return out, kinds
end

return M
