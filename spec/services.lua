--- Servers for the connector specs: librdkafka's mock cluster (build/kafka_mock) and
-- nats-server with JetStream, each started by the spec on 127.0.0.1 on a free port, in a
-- temporary directory of its own, and stopped by its pid.
--
--   local services = require("services")
--   local k = services.kafka{"events:2"}       -- k.bootstrap = "127.0.0.1:PORT"
--   helper.finally(function() k:stop() end)
--   local n = services.nats()                  -- n.url = "nats://127.0.0.1:PORT"
--   services.nats{config = "mappings = {...}"} -- with a configuration file
--   helper.finally(function() n:stop() end)
--
-- The mock cluster takes commands while it runs (tools/kafka_mock.c), each waited for:
--   k:down(1) / k:up(1)                        -- a broker drops its connections / takes them again
--   k:topic_error("t", "UNKNOWN_TOPIC_OR_PART") -- its metadata requests answer that error
--   k:request_error("OffsetCommit", 3, "GROUP_AUTHORIZATION_FAILED")
--
-- Readiness is polled in a bounded loop (the server's own announcement), never assumed. A
-- server runs under a shell that waits for it and writes its exit status into its folder
-- (file `rc`): that file is how the spec learns that it has ended (`kill -0` on its pid
-- goes on succeeding until the zombie is reaped, by a process that is not the spec's).
local helper = require("helper")

local M = {}

local function sh_quote(s) return "'" .. tostring(s):gsub("'", "'\\''") .. "'" end
M.quote = sh_quote

local read_or_empty = helper.read_or_empty

--- Waits (50 ms steps, at most `tries` of them, default 200) until fn() returns a value;
-- returns it or nil (helper.wait_for, which raises, with a bound of one's own).
function M.poll(fn, tries)
  for _ = 1, tries or 200 do
    local v = fn()
    if v then return v end
    os.execute("sleep 0.05")
  end
  return nil
end

local tmpdir = helper.tmpdir

local Service = {}
Service.__index = Service

--- Stops the server (SIGTERM, then SIGKILL if it has not ended after 5 s) and removes its
-- directory. Safe to call twice.
function Service:stop()
  self:kill()
  if self.dir then helper.rmdir(self.dir) end
  self.dir = nil
end

--- The server's exit status once it has ended (its shell has written it), else nil.
function Service:exited()
  local s = read_or_empty(self.rc)
  if s:find("\n", 1, true) then return tonumber(s:match("%d+")) end
end

--- Stops the server (SIGTERM) but keeps its directory, so that `:start_again()` brings it
-- back with the same data on the same port (nats only). Returns when it has ended.
function Service:kill()
  if self.pid and not self:exited() then
    os.execute("kill -TERM " .. self.pid .. " 2>/dev/null")
    if not M.poll(function() return self:exited() end, 100) then
      os.execute("kill -KILL " .. self.pid .. " 2>/dev/null")
      M.poll(function() return self:exited() end, 40)
    end
  end
  self.pid = nil
end

--- The server's log so far (for failure messages).
function Service:log() return read_or_empty(self.dir .. "/log") end

-- stdin: a redirection of the server's standard input (default "</dev/null"). The server
-- runs under a shell of its own that writes its pid into dir/pid and, when it ends, its exit
-- status into dir/rc.
local function start(cmd, dir, ready, what, stdin)
  local pidf, rc = dir .. "/pid", dir .. "/rc"
  os.remove(pidf)
  os.remove(rc)
  local run = "cd " .. sh_quote(dir) .. " && { " .. cmd .. " >" .. sh_quote(dir .. "/out")
    .. " 2>" .. sh_quote(dir .. "/log") .. " " .. (stdin or "</dev/null") .. " & echo $! >" .. sh_quote(pidf)
    .. "; wait $!; echo $? >" .. sh_quote(rc .. ".tmp") .. " && mv " .. sh_quote(rc .. ".tmp") .. " "
    .. sh_quote(rc) .. "; }"
  assert(os.execute("sh -c " .. sh_quote(run) .. " >/dev/null 2>&1 </dev/null &"), "cannot start " .. what)
  local pid = M.poll(function() return tonumber(read_or_empty(pidf):match("^(%d+)\n")) end, 1200)
  local s = setmetatable({pid = assert(pid, "no pid for " .. what), dir = dir, rc = rc}, Service)
  local v
  for _ = 1, 1200 do -- (60 s: a bound for when something is broken)
    if s:exited() then break end -- it has ended: no use waiting
    v = ready(s)
    if v then break end
    os.execute("sleep 0.05")
  end
  if not v then
    local log = s:log() .. read_or_empty(dir .. "/out")
    local code = s:exited()
    s:stop()
    error(what .. (code and (" ended (exit status " .. code .. ")") or " did not start") .. ": " .. log, 3)
  end
  return s, v
end

-- start(cmd, dir, ready(service) -> value or nil, what[, stdin]) -> service, value: for a
-- server a spec starts itself (spec/prometheus_spec.lua)
M.start = start

--- Starts librdkafka's mock cluster with topics {"name:partitions", ...}; `.bootstrap` is
-- its address. It ends by itself after 10 minutes at the latest. Its standard input is a
-- FIFO of its directory, opened for reading and writing (so it never sees its end), where
-- `:command` writes.
function M.kafka(topics)
  local bin = helper.root .. "/" .. (os.getenv("WM_BUILD") or "build") .. "/kafka_mock"
  local args = {}
  for i, t in ipairs(topics) do args[i] = sh_quote(t) end
  local dir = tmpdir()
  local ctl = dir .. "/ctl"
  assert(os.execute("mkfifo " .. sh_quote(ctl)), "mkfifo " .. ctl)
  local s, addr = start(sh_quote(bin) .. " -t 600 " .. table.concat(args, " "), dir, function(sv)
    return read_or_empty(sv.dir .. "/out"):match("^(%S+)\n")
  end, "kafka_mock", "0<>" .. sh_quote(ctl))
  s.bootstrap = addr
  s.ctl = ctl
  s.commands = 0
  return s
end

--- Sends a command line to the mock cluster (tools/kafka_mock.c) and waits for its answer;
-- raises with the answer when the mock refuses it.
function Service:command(line)
  local f = assert(io.open(self.ctl, "w"))
  f:write(line, "\n")
  f:close()
  self.commands = self.commands + 1
  local n = self.commands
  local answer = M.poll(function()
    local out = read_or_empty(self.dir .. "/out")
    return out:match("\n(ok " .. n .. ": [^\n]*)\n") or out:match("\n(error " .. n .. ": [^\n]*)\n")
  end, 400)
  if not answer or not answer:match("^ok") then
    error("kafka_mock: " .. line .. ": " .. tostring(answer or "no answer") .. " " .. self:log(), 2)
  end
end

function Service:down(broker) self:command("down " .. broker) end
function Service:up(broker) self:command("up " .. broker) end
function Service:topic_error(topic, err) self:command("topic-error " .. topic .. " " .. err) end
function Service:request_error(api, count, err)
  self:command("request-error " .. api .. " " .. count .. " " .. err)
end
function Service:request_error_clear(api) self:command("request-error-clear " .. api) end

--- Starts nats-server with JetStream in a temporary directory, on 127.0.0.1 and a free port;
-- `.url` is "nats://127.0.0.1:PORT", `.port` the port.
-- Debian installs nats-server in /usr/sbin, which a user's PATH may lack.
local function nats_bin()
  if os.execute("command -v nats-server >/dev/null 2>&1") then return "nats-server" end
  return "/usr/sbin/nats-server"
end

local function nats_at(dir, port)
  os.remove(dir .. "/log")
  local conf = read_or_empty(dir .. "/nats.conf") ~= "" and (" -c " .. sh_quote(dir .. "/nats.conf")) or ""
  return start("exec " .. nats_bin() .. conf .. " -js -sd " .. sh_quote(dir .. "/js") .. " -a 127.0.0.1 -p " .. port,
    dir, function(sv)
      local log = sv:log()
      if not log:find("Server is ready", 1, true) then return nil end
      return log:match("Listening for client connections on 127%.0%.0%.1:(%d+)")
    end, "nats-server")
end

-- opts.config: the text of a configuration file for it (e.g. subject `mappings`).
function M.nats(opts)
  local dir = tmpdir()
  if opts and opts.config then
    local f = assert(io.open(dir .. "/nats.conf", "w"))
    f:write(opts.config)
    f:close()
  end
  local s, port = nats_at(dir, -1)
  s.port = tonumber(port)
  s.url = "nats://127.0.0.1:" .. port
  return s
end

--- After `:kill()`: the same server again (its data, its port).
function Service:start_again()
  local s = nats_at(self.dir, self.port)
  self.pid = s.pid
end

return M
