-- Real I/O end to end: TCP clients and servers on 127.0.0.1 (ports chosen at run time),
-- followed files, standard input, generators, custom sources, sinks and shutdown.
-- Nothing here depends on machine speed: every wait is for a condition (with a generous
-- deadline that only matters when something is broken).
local h = require("helper")

local function sleep_a_bit() os.execute("sleep 0.02") end

--- Waits until fn() returns a true value (30 s at most, then fails naming what).
local function wait_for(fn, what)
  for _ = 1, 1500 do
    local v = fn()
    if v then return v end
    sleep_a_bit()
  end
  error("timed out waiting for " .. what)
end

local read_or_empty = h.read_or_empty

--- Whether something listens on 127.0.0.1:port (from /proc/net/tcp, no tools needed).
local function listening(port)
  local hex = string.format(":%04X ", port)
  for _, file in ipairs({"/proc/net/tcp", "/proc/net/tcp6"}) do
    local t = read_or_empty(file)
    for line in t:gmatch("[^\n]+") do
      local fields = {}
      for w in line:gmatch("%S+") do fields[#fields + 1] = w end
      if fields[2] and (fields[2] .. " "):find(hex, 1, true) and fields[4] == "0A" then return true end
    end
  end
  return false
end

local free_port = h.free_port

--- Starts a shell command in the background; returns a handle with pid, wait(), done().
local function bg(cmd)
  local pidf, rcf = h.tmpname(), h.tmpname()
  os.remove(rcf)
  os.execute(string.format("sh -c '%s; echo $? > %s' >/dev/null 2>&1 & echo $! > %s", cmd:gsub("'", "'\\''"),
    rcf, pidf))
  local p = {rcf = rcf}
  function p.done()
    local s = read_or_empty(rcf)
    if s ~= "" then return tonumber(s:match("%d+")) end
  end
  function p.wait() return wait_for(p.done, "the command to end: " .. cmd) end
  return p
end

--- Runs a job (text) in the background with stdout/stderr to files; p.pid() is wmrun's pid.
local function bg_job(text, args)
  local job = h.write_tmp(text, ".lua")
  local out, err, pidf = h.tmpname(), h.tmpname(), h.tmpname()
  os.remove(pidf)
  local p = bg(string.format("%s %s %s >%s 2>%s & echo $! > %s; wait $!", h.wmrun_path(), args or "", job,
    out, err, pidf))
  p.out, p.err = out, err
  function p.pid()
    return wait_for(function() return tonumber(read_or_empty(pidf):match("%d+")) end, "wmrun to start")
  end
  return p
end

local function job(body)
  return 'local wm = require("wm")\nlocal env = wm.env{ watermark_interval = 0 }\n' .. body ..
    '\nenv:execute()\n'
end

describe("socket_lines (TCP client)", function()
  it("reads lines until the peer closes, keeping a last line cut mid-way", function()
    local port = free_port()
    local data = h.write_tmp("one\r\ntwo\n\xff\xfebytes\npartial")
    local server = bg(string.format("nc -N -l 127.0.0.1 %d < %s", port, data))
    wait_for(function() return listening(port) end, "the test server")
    local out, err, code = h.run_job(job(([[env:socket_lines("127.0.0.1", %d):print()]]):format(port)))
    assert.are.equal("", err)
    assert.are.equal(0, code)
    assert.are.equal("one\ntwo\n\xff\xfebytes\npartial\n", out) -- invalid UTF-8 passes through
    server.wait()
    os.remove(data)
  end)

  it("fails clearly when the connection is refused", function()
    local port = free_port()
    local _, err, code = h.run_job(job(([[env:socket_lines("127.0.0.1", %d):print()]]):format(port)))
    assert.are.equal(1, code)
    assert.truthy(err:find("wmrun: cannot connect to 127.0.0.1:" .. port .. ": connection refused", 1, true), err)
  end)

  it("fails clearly when the name does not resolve", function()
    local _, err, code = h.run_job(job([[env:socket_lines("no-such-host.invalid", 9999):print()]]))
    assert.are.equal(1, code)
    assert.truthy(err:find("wmrun: cannot resolve no-such-host.invalid:9999", 1, true), err)
  end)
end)

describe("listen_lines (TCP server)", function()
  it("takes lines from every client, each framed on its own", function()
    local p = bg_job(job([[env:listen_lines("127.0.0.1", 0, {max_clients = 2}):print()]]))
    local port = wait_for(function() return tonumber(read_or_empty(p.err):match("listening on 127%.0%.0%.1:(%d+)")) end,
      "the announcement")
    local a = h.write_tmp("a1\na2\na3-without-newline")
    local b = h.write_tmp("b1\r\nb2\n")
    assert.is_true(os.execute(string.format("nc -N 127.0.0.1 %d < %s", port, a)))
    assert.is_true(os.execute(string.format("nc -N 127.0.0.1 %d < %s", port, b)))
    assert.are.equal(0, p.wait())
    local lines = {}
    for l in read_or_empty(p.out):gmatch("[^\n]+") do lines[#lines + 1] = l end
    table.sort(lines)
    assert.are.same({"a1", "a2", "a3-without-newline", "b1", "b2"}, lines)
    os.remove(a)
    os.remove(b)
  end)
end)

describe("write_socket", function()
  it("sends JSON lines to a server", function()
    local port = free_port()
    local got = h.tmpname()
    local server = bg(string.format("nc -l 127.0.0.1 %d > %s", port, got))
    wait_for(function() return listening(port) end, "the test server")
    local _, err, code = h.run_job(job(([[
env:from_elements({id = "a", n = 1}, {id = "b", n = 2}, "text"):write_socket("127.0.0.1", %d)]]):format(port)))
    assert.are.equal("", err)
    assert.are.equal(0, code)
    server.wait()
    assert.are.equal('{"id":"a","n":1}\n{"id":"b","n":2}\n"text"\n', read_or_empty(got))
    os.remove(got)
  end)

  it("fails clearly when nobody listens", function()
    local port = free_port()
    local _, err, code = h.run_job(job(([[env:from_elements(1):write_socket("127.0.0.1", %d)]]):format(port)))
    assert.are.equal(1, code)
    assert.truthy(err:find("cannot connect to 127.0.0.1:" .. port .. ": connection refused", 1, true), err)
  end)
end)

describe("read_lines", function()
  it("reads standard input through a pipe", function()
    local job_path = h.write_tmp(job([[env:read_lines("-"):map(function(l) return "[" .. l .. "]" end):print()]]),
      ".lua")
    local out, _, code = h.sh("sh -c \"printf 'x\\r\\ny\\nz' | " .. h.wmrun_path() .. " " .. job_path .. "\"")
    assert.are.equal(0, code)
    assert.are.equal("[x]\n[y]\n[z]\n", out)
    os.remove(job_path)
  end)

  it("frames lines longer than the read buffer, and rejects lines over max_line", function()
    local long = string.rep("x", 100)
    local data = h.write_tmp(long .. "\n" .. long .. "y\r\nshort")
    local out, _, code = h.run_job(job(([[
env:read_lines(%q, {chunk = 16}):map(function(l) return #l end):print()]]):format(data)))
    assert.are.equal(0, code)
    assert.are.equal("100\n101\n5\n", out)
    local _, err
    _, err, code = h.run_job(job(([[env:read_lines(%q, {chunk = 16, max_line = 100}):print()]]):format(data)))
    assert.are.equal(1, code)
    assert.truthy(err:find(data .. ":2: line longer than 100 bytes", 1, true), err)
    os.remove(data)
  end)

  it("follows a file that grows, and SIGINT drains the job (open windows fire, exit 0)", function()
    local data = h.write_tmp("a,1,1\n")
    local seen = h.tmpname()
    local p = bg_job(job(([[
local seen = assert(io.open(%q, "w"))
env:read_lines(%q, {follow = true, poll = "50ms"})
  :parse_csv{"id", "ts:integer", "vc:integer"}
  :map(function(r) seen:write(r.id, r.ts, "\n"); seen:flush(); return r end)
  :assign_timestamps_and_watermarks(wm.watermarks.bounded_out_of_orderness(0):with_timestamp_field("ts", 1000))
  :key_by("id")
  :window(wm.windows.tumbling("5s"))
  :sum("vc")
  :print()]]):format(seen, data)))
    wait_for(function() return read_or_empty(seen) == "a1\n" end, "the first line")
    local f = assert(io.open(data, "a"))
    f:write("a,2,2\na,6,4\n")
    f:close()
    wait_for(function() return read_or_empty(seen) == "a1\na2\na6\n" end, "the appended lines")
    -- the window [0,5) fired at ts 6 (watermark 5999); [5,10) is open until the drain
    os.execute("kill -INT " .. p.pid())
    assert.are.equal(0, p.wait())
    assert.are.equal('{"id":"a","ts":1,"vc":3}\n{"id":"a","ts":6,"vc":4}\n', read_or_empty(p.out))
    os.remove(data)
    os.remove(seen)
  end)

  it("stops at once without flushing with --no-drain (exit 130)", function()
    local seen = h.tmpname()
    local data = h.write_tmp("a,1,1\n")
    local p = bg_job(job(([[
local seen = assert(io.open(%q, "w"))
env:read_lines(%q, {follow = true})
  :parse_csv{"id", "ts:integer", "vc:integer"}
  :map(function(r) seen:write(r.id, "\n"); seen:flush(); return r end)
  :assign_timestamps_and_watermarks(wm.watermarks.bounded_out_of_orderness(0):with_timestamp_field("ts", 1000))
  :key_by("id"):window(wm.windows.tumbling("5s")):sum("vc"):print()]]):format(seen, data)), "--no-drain")
    wait_for(function() return read_or_empty(seen) == "a\n" end, "the first line")
    os.execute("kill -INT " .. p.pid())
    assert.are.equal(130, p.wait())
    assert.are.equal("", read_or_empty(p.out))
    os.remove(data)
    os.remove(seen)
  end)
end)

describe("write_lines", function()
  it("writes JSON lines by default, text, or a Lua formatter's lines", function()
    local a, b, c = h.tmpname(), h.tmpname(), h.tmpname()
    local _, err, code = h.run_job(job(([[
local s = env:from_elements({id = "x", n = 1}, "plain", 2.5)
s:write_lines(%q)
s:write_lines(%q, "text")
s:write_lines(%q, function(r) return type(r) == "table" and r.id or tostring(r) end)]]):format(a, b, c)))
    assert.are.equal("", err)
    assert.are.equal(0, code)
    assert.are.equal('{"id":"x","n":1}\n"plain"\n2.5\n', read_or_empty(a))
    assert.are.equal('{"id":"x","n":1}\nplain\n2.5\n', read_or_empty(b))
    assert.are.equal("x\nplain\n2.5\n", read_or_empty(c))
    os.remove(a); os.remove(b); os.remove(c)
  end)

  it("writes invalid UTF-8 as U+FFFD so that every JSON line parses (issue 13.9)", function()
    local a = h.tmpname()
    -- values and keys with a stray byte, a surrogate, an overlong form and a cut sequence,
    -- next to valid two-, three- and four-byte characters that must stay as they are
    local out, err, code = h.run_job(job(([[
local bad = {"a\xffb", "\xed\xa0\x80", "\xc0\xaf", "x\xe2\x82", "\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80"}
local s = env:from_elements({v = bad[1], ["k\xfe"] = 1}, {v = bad[2]}, {v = bad[3]}, {v = bad[4]}, {v = bad[5]},
  bad[1], {bad[4]})
s:write_lines(%q)
s:filter(function(r) return type(r) == "table" end):print()]]):format(a)))
    assert.are.equal("", err)
    assert.are.equal(0, code)
    local cjson = require("cjson")
    local R = "\xef\xbf\xbd"
    local want = {{v = "a" .. R .. "b", ["k" .. R] = 1}, {v = R .. R .. R}, {v = R .. R}, {v = "x" .. R .. R},
                  {v = "\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80"}, "a" .. R .. "b", {"x" .. R .. R}}
    local got = {}
    for line in read_or_empty(a):gmatch("[^\n]+") do
      assert.truthy(utf8.len(line), line) -- JSON text is UTF-8 (cjson itself does not check)
      got[#got + 1] = cjson.decode(line)
    end
    assert.are.same(want, got)
    got = {}
    for line in out:gmatch("[^\n]+") do -- print: tables as JSON
      assert.truthy(utf8.len(line), line)
      got[#got + 1] = cjson.decode(line)
    end
    assert.are.same({want[1], want[2], want[3], want[4], want[5], want[7]}, got)
    os.remove(a)
  end)

  it("writes many lines through its buffer", function()
    local a = h.tmpname()
    local _, _, code = h.run_job(job(([[
env:generate(function(i) return i end, {count = 100000}):write_lines(%q)]]):format(a)))
    assert.are.equal(0, code)
    local t = read_or_empty(a)
    local n = 0
    for _ in t:gmatch("\n") do n = n + 1 end
    assert.are.equal(100000, n)
    assert.truthy(t:find("^1\n2\n"))
    assert.truthy(t:find("\n100000\n$"))
    os.remove(a)
  end)
end)

describe("generate and custom sources", function()
  it("generates at a steady rate", function()
    local t0 = os.time()
    local t = io.popen("date +%s%N"):read("l")
    local out, _, code = h.run_job(job([[
env:generate(function(i) return i * 10 end, {count = 11, rate = 100}):print()]]))
    local t1 = io.popen("date +%s%N"):read("l")
    assert.are.equal(0, code)
    assert.are.equal("10\n20\n30\n40\n50\n60\n70\n80\n90\n100\n110\n", out)
    -- 11 records at 100/s: the last is due 100 ms after the first (a lower bound only)
    assert.truthy((tonumber(t1) - tonumber(t)) / 1e6 >= 100)
    assert.truthy(os.time() - t0 >= 0)
  end)

  it("takes rate = math.huge as 'as fast as possible' and rejects rates out of range (issue 13.11)", function()
    local wm = require("wm")
    local env = wm.env{}
    local s = env:generate(function(i) return i end, {count = 3, rate = math.huge})
    assert.is_nil(s.node.rate) -- not handed to the C pacing (inf there is undefined behaviour)
    local got = s:collect()
    env:execute()
    assert.are.same({1, 2, 3}, got)
    for _, rate in ipairs({0/0, 0, -1, -math.huge, 1e-300, 1e-7, 1e300, 2e9, "fast"}) do
      local chunk = assert(load("local wm, rate = ... local s = wm.env{}:generate(function(i) return i end, "
        .. "{rate = rate}) return s", "=job.lua", "t"))
      local ok, e = pcall(chunk, wm, rate)
      assert.is_false(ok, tostring(rate))
      assert.matches("^job%.lua:1: generate: rate must be a number of records per second from 1e%-06 to 1e%+09 "
        .. "%(or math.huge: as fast as possible%), got " .. tostring(rate):gsub("%p", "%%%0") .. "$", e)
    end
    assert.are.equal(1e-6, wm.env{}:generate(function() end, {rate = 1e-6}).node.rate)
    assert.are.equal(1e9, wm.env{}:generate(function() end, {rate = 1e9}).node.rate)
  end)

  it("polls a custom source that waits, with timestamps and watermarks", function()
    local out, err, code = h.run_job(job([[
local polls = 0
env:source{
  open = function(ctx) print("open", ctx.subtask, ctx.parallelism) end,
  poll = function(ctx)
    polls = polls + 1
    if polls % 2 == 1 then return 5 end          -- wait 5 ms, emit nothing
    local n = polls // 2
    ctx:emit({id = "k", n = n}, n * 1000)
    ctx:emit_watermark(n * 1000)
    return n < 6
  end,
  close = function() print("close", polls) end,
}
  :key_by("id")
  :window(wm.windows.tumbling("3s"))
  :sum("n")
  :print()]]))
    assert.are.equal("", err)
    assert.are.equal(0, code)
    -- records at 1..6 s; windows [0,3): 1+2 (fires at watermark 3000), [3,6): 3+4+5, [6,9): 6
    assert.are.equal('open\t1\t1\n{"id":"k","n":3}\n{"id":"k","n":12}\nclose\t12\n{"id":"k","n":6}\n', out)
  end)

  it("reports a failing poll with its line", function()
    local _, err, code = h.run_job(job([[
env:source{poll = function(ctx) error("boom") end}:print()]]))
    assert.are.equal(1, code)
    assert.truthy(err:find(":3: boom", 1, true), err)
  end)
end)

-- issue 26: a source that cannot be split runs one instance at any parallelism, and says
-- why in --metrics (docs/parallelism.md, docs/io.md)
describe("sources that cannot be split, at parallelism 2", function()
  local function pjob(body)
    return 'local wm = require("wm")\nlocal env = wm.env{ watermark_interval = 0, parallelism = 2 }\n'
      .. body .. '\nenv:execute()\n'
  end
  -- the lines of a print at parallelism 2 ("i> value"), without the prefix, sorted
  local function values(out)
    local l = {}
    for line in out:gmatch("[^\n]+") do l[#l + 1] = (line:gsub("^%d+> ", "")) end
    table.sort(l)
    return l
  end
  local function metrics_names(err)
    local l = {}
    for line in err:gmatch("[^\n]+") do l[#l + 1] = line end
    return table.concat(l, "\n")
  end

  it("socket_lines opens one connection (nc accepts one), each line once", function()
    local port = free_port()
    local data = h.write_tmp("one\ntwo\n")
    local server = bg(string.format("nc -N -l 127.0.0.1 %d < %s", port, data))
    wait_for(function() return listening(port) end, "the test server")
    local out, err, code = h.run_job(pjob(([[env:socket_lines("127.0.0.1", %d):print()]]):format(port)), "--metrics")
    assert.are.equal(0, code, err)
    assert.are.same({"one", "two"}, values(out))
    assert.matches("socket_lines(127.0.0.1:" .. port .. ") (", metrics_names(err), 1, true)
    assert.matches("[one instance: one connection]", err, 1, true)
    server.wait()
    os.remove(data)
  end)

  it("listen_lines listens once (one announcement), each line once", function()
    local p = bg_job(pjob([[env:listen_lines("127.0.0.1", 0, {max_clients = 1}):print()]]), "--metrics")
    local port = wait_for(function() return tonumber(read_or_empty(p.err):match("listening on 127%.0%.0%.1:(%d+)")) end,
      "the announcement")
    local a = h.write_tmp("a1\na2\n")
    assert.is_true(os.execute(string.format("nc -N 127.0.0.1 %d < %s", port, a)))
    assert.are.equal(0, p.wait())
    local err = read_or_empty(p.err)
    local _, announcements = err:gsub("listening on", "")
    assert.are.equal(1, announcements, err)
    assert.are.same({"a1", "a2"}, values(read_or_empty(p.out)))
    assert.matches("[one instance: one listening socket]", err, 1, true)
    os.remove(a)
  end)

  it("generate{count = 3} emits each record once", function()
    local out, err, code = h.run_job(pjob([[env:generate(function(i) return i end, {count = 3}):print()]]),
      "--metrics")
    assert.are.equal(0, code, err)
    assert.are.same({"1", "2", "3"}, values(out))
    assert.matches("[one instance: one sequence fn(1), fn(2), ...]", err, 1, true)
  end)

  it("read_lines of standard input reads it once", function()
    local out, err, code = h.run_job(pjob([[env:read_lines("-"):print()]]), "--metrics", "x\ny\n")
    assert.are.equal(0, code, err)
    assert.are.same({"x", "y"}, values(out))
    assert.matches("[one instance: standard input]", err, 1, true)
  end)

  it("env:source runs once unless it says parallel = true; then each instance has its ctx.subtask", function()
    local out, err, code = h.run_job(pjob([[
env:source{poll = function(ctx) ctx:emit("s" .. ctx.subtask .. "/" .. ctx.parallelism); return false end}:print()]]),
      "--metrics")
    assert.are.equal(0, code, err)
    assert.are.same({"s1/1"}, values(out))
    assert.matches("[one instance: a user source; parallel = true runs one per instance]", err, 1, true)
    out, err, code = h.run_job(pjob([[
env:source{parallel = true, poll = function(ctx)
  ctx:emit("s" .. ctx.subtask .. "/" .. ctx.parallelism); return false end}:print()]]))
    assert.are.equal(0, code, err)
    assert.are.same({"s1/2", "s2/2"}, values(out))
  end)

  it("set_parallelism(2) on such a source is an error that says why", function()
    local _, err, code = h.run_job(pjob([[env:socket_lines("127.0.0.1", 1):set_parallelism(2):print()]]))
    assert.are.equal(1, code)
    assert.matches("socket_lines(127.0.0.1:1) cannot run in parallel: one connection (set_parallelism(2))",
      err, 1, true)
  end)
end)
