-- Shared helpers for the specs: where things are, and running wmrun as a user would.
local M = {}

M.root = (debug.getinfo(1, "S").source:match("^@(.*)/spec/helper%.lua$")) or "."
if M.root:sub(1, 1) ~= "/" then
  local pwd = os.getenv("PWD") or io.popen("pwd"):read("l")
  M.root = (M.root == "." and pwd) or (pwd .. "/" .. M.root:gsub("^%./", ""))
end
M.wmrun_bin = os.getenv("WMRUN") or (M.root .. "/build/wmrun")

local function tmpname()
  local n = os.tmpname()
  return n
end
M.tmpname = tmpname

--- Writes text to a new temporary file and returns its path.
function M.write_tmp(text, suffix)
  local p = tmpname() .. (suffix or "")
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
  local o, e = tmpname(), tmpname()
  local full = cmd .. " >" .. o .. " 2>" .. e
  if stdin then
    local i = M.write_tmp(stdin)
    full = full .. " <" .. i
  else
    full = full .. " </dev/null"
  end
  local ok, how, code = os.execute(full)
  local out, err = M.read(o), M.read(e)
  os.remove(o)
  os.remove(e)
  if how == "signal" then code = 128 + code end
  return out, err, ok and 0 or code
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

--- Waits until fn() returns a true value and returns it: up to 10 s, checking every 50 ms
--- (the deadline only matters when something is broken); then fails naming what.
function M.wait_for(fn, what)
  for _ = 1, 200 do
    local v = fn()
    if v then return v end
    os.execute("sleep 0.05")
  end
  error("timed out waiting for " .. what)
end

return M
