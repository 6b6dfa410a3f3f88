-- Prometheus metrics (--metrics-port, wm.env{metrics = {...}}; docs/metrics.md): a job that
-- stays alive (listen_lines) gets four lines through its socket, the spec scrapes /metrics
-- with curl and checks names, labels and values worked out from the job, then stops the job
-- by its pid and waits for its exit status. Every wait is for a condition (h.wait_for), never
-- for a time.
local h = require("helper")
local q = h.shell_quote

-- tumbling 5 s windows counting per key, watermark = max ts - 1 ms after every record;
-- lines a,1 a,7 a,12 then a,2 (late: [0, 5) was cleaned up at watermark 11999)
local JOB = [[
local wm = require("wm")
local env = wm.env{watermark_interval = 0%s}
env:listen_lines("127.0.0.1", 0)
  :parse_csv{"k", "ts:integer"}:name("parse")
  :assign_timestamps_and_watermarks(wm.watermarks.monotonous():with_timestamp_field("ts", 1000))
  :name("stamps")
  :key_by("k"):window(wm.windows.tumbling("5s")):count():name("win")
  :print()
env:execute()
]]

-- the same with the late records sent to a side output (issue 26)
local JOB_SIDE = [[
local wm = require("wm")
local env = wm.env{watermark_interval = 0%s}
local w = env:listen_lines("127.0.0.1", 0)
  :parse_csv{"k", "ts:integer"}:name("parse")
  :assign_timestamps_and_watermarks(wm.watermarks.monotonous():with_timestamp_field("ts", 1000))
  :name("stamps")
  :key_by("k"):window(wm.windows.tumbling("5s")):side_output_late_data("late"):count():name("win")
w:print()
w:get_side_output("late"):print("late")
env:execute()
]]

local function start(opts, args, text)
  local dir = h.tmpdir()
  -- (bg_job: its shell waits for wmrun and writes its exit status, which stop waits for)
  local job = h.bg_job(dir, string.format(text or JOB, opts or ""), args)
  local p = {dir = dir, out = job.out, err = job.err, job = job}
  p.pid = job.pid()
  p.metrics_port = tonumber(h.wait_for(function()
    return h.read_or_empty(p.err):match("metrics on http://127%.0%.0%.1:(%d+)/metrics\n")
  end, "the metrics port on stderr"))
  p.port = tonumber(h.wait_for(function()
    return h.read_or_empty(p.err):match("listening on 127%.0%.0%.1:(%d+)")
  end, "the listening port on stderr"))
  return p
end

local function scrape(port, path)
  local out, err, code = h.sh_plain("curl -s -i --max-time 30 http://127.0.0.1:" .. port
    .. (path or "/metrics"))
  assert.are.equal(0, code, err)
  local head, body = out:match("^(.-)\r\n\r\n(.*)$")
  return head, body
end

local function sample(body, metric, op)
  local v = body:match("\n" .. metric .. "{operator=\"" .. op .. " %([^\"]*%)\",subtask=\"1\"} (%S+)\n")
  return v
end

local function stop(p)
  os.execute("kill " .. p.pid)
  p.job.wait()
end

describe("Prometheus metrics", function()
  it("--metrics-port 0 serves every operator's counts, watermark, lag and open windows", function()
    local p = start(nil, "--metrics-port 0")
    h.finally(p.job.kill)
    local _, err, code = h.sh_plain("nc -N 127.0.0.1 " .. p.port, "a,1\na,7\na,12\na,2\n")
    assert.are.equal(0, code, err)
    local got = h.wait_for(function()
      local hd, b = scrape(p.metrics_port)
      if sample(b, "wmrun_records_in_total", "win") == "4" then return {hd, b} end
    end, "the window to see 4 records")
    local head, body = got[1], got[2]
    local before = os.time() * 1000
    stop(p)
    assert.matches("^HTTP/1%.1 200 OK\r\n", head)
    assert.matches("\r\nContent%-Type: text/plain; version=0%.0%.4", head)
    assert.matches("# TYPE wmrun_records_in_total counter\n", body, 1, true)
    assert.matches("# TYPE wmrun_watermark_lag_seconds gauge\n", body, 1, true)
    assert.are.equal("4", sample(body, "wmrun_records_out_total", "listen_lines%(127%.0%.0%.1:0%)"))
    assert.are.equal("4", sample(body, "wmrun_records_in_total", "parse"))
    assert.are.equal("4", sample(body, "wmrun_records_out_total", "stamps"))
    assert.are.equal("2", sample(body, "wmrun_records_out_total", "win")) -- [0, 5) and [5, 10)
    assert.are.equal("1", sample(body, "wmrun_late_records_dropped_total", "win")) -- a,2
    assert.are.equal("1", sample(body, "wmrun_open_windows", "win")) -- [10, 15)
    assert.are.equal("11.999", sample(body, "wmrun_watermark_seconds", "win"))
    assert.are.equal("NaN", sample(body, "wmrun_watermark_seconds", "listen_lines%(127%.0%.0%.1:0%)"))
    local lag = tonumber(sample(body, "wmrun_watermark_lag_seconds", "win"))
    assert.is_true(lag >= (before - 11999) / 1000 - 86400 and lag <= (before - 11999) / 1000 + 86400)
    assert.is_nil(sample(body, "wmrun_open_windows", "parse")) -- only window operators have it
    -- the two firings, and the last window when the drain (kill) ends the input
    assert.are.equal('{"count":1,"key":"a","start":0,"stop":5000}\n'
      .. '{"count":1,"key":"a","start":5000,"stop":10000}\n'
      .. '{"count":1,"key":"a","start":10000,"stop":15000}\n', h.read(p.out))
  end)

  it("late records sent to a side output count as such, apart from the results; outputs are per output",
      function()
    local p = start(nil, "--metrics-port 0", JOB_SIDE)
    h.finally(function() os.execute("kill " .. p.pid .. " 2>/dev/null") end)
    local _, err, code = h.sh_plain("nc -N 127.0.0.1 " .. p.port, "a,1\na,7\na,12\na,2\n")
    assert.are.equal(0, code, err)
    local body = h.wait_for(function()
      local _, b = scrape(p.metrics_port)
      if sample(b, "wmrun_records_in_total", "win") == "4" then return b end
    end, "the window to see 4 records")
    stop(p)
    assert.are.equal("2", sample(body, "wmrun_records_out_total", "win")) -- the results only
    assert.are.equal("0", sample(body, "wmrun_late_records_dropped_total", "win"))
    assert.are.equal("1", sample(body, "wmrun_late_records_side_output_total", "win")) -- a,2
    assert.matches('\nwmrun_side_output_records_total{operator="win %([^"]*%)",subtask="1",output="late"} 1\n', body)
    assert.matches("# TYPE wmrun_side_output_records_total counter\n", body, 1, true)
    assert.matches("# TYPE wmrun_late_records_side_output_total counter\n", body, 1, true)
  end)

  it("wm.env{metrics = {port = 0, host = '127.0.0.1'}} serves it too; other paths are 404", function()
    local p = start(", metrics = {port = 0, host = '127.0.0.1'}")
    h.finally(p.job.kill)
    local head = scrape(p.metrics_port, "/other")
    local head2, body = scrape(p.metrics_port, "/metrics")
    stop(p)
    assert.matches("^HTTP/1%.1 404 Not Found\r\n", head)
    assert.matches("^HTTP/1%.1 200 OK\r\n", head2)
    assert.are.equal("0", sample(body, "wmrun_records_in_total", "win"))
    assert.are.equal("0", sample(body, "wmrun_open_windows", "win"))
  end)

  it("bad ports are usage errors", function()
    local _, err, code = h.wmrun("--metrics-port 70000 x.lua")
    assert.are.equal(2, code)
    assert.matches("bad metrics port '70000' %(expected 0 to 65535%)", err)
    local _, err2, code2 = h.run_job('require("wm").env{metrics = {port = -1}}')
    assert.are.equal(1, code2)
    assert.matches(":1: env: metrics must be {port = 0 to 65535", err2)
  end)

  it("a port in use fails the job naming host and port", function()
    local p = start(nil, "--metrics-port 0")
    h.finally(p.job.kill)
    local _, err, code = h.run_job('local env = require("wm").env{metrics = {port = ' .. p.metrics_port
      .. '}}\nenv:from_elements(1):print()\nenv:execute()\n')
    stop(p)
    assert.are.equal(1, code)
    assert.matches("cannot serve metrics on 127%.0%.0%.1:" .. p.metrics_port .. ": address already in use", err)
  end)
end)

-- The endpoint against clients that misbehave (issue 34, item 12; docs/metrics.md "Limits").
-- Requests are sent raw with nc; every wait is for an event (a file, an exit), bounded by
-- h.wait_for's timeout, never timed.
describe("Prometheus metrics against misbehaving clients", function()
  -- sends `req` (printf format) and returns what came back; -N: then shuts its side
  local function raw(port, req)
    local out = h.sh_plain("printf '" .. req .. "' | timeout 60 nc -N 127.0.0.1 " .. port)
    return out
  end

  -- starts `printf req | nc` in the background (no -N: nc keeps the connection open after
  -- sending, until the server closes it): returns a function that gives the answer once nc
  -- has ended, nil before
  local function hold(dir, i, port, req)
    local out, rc = dir .. "/nc" .. i, dir .. "/nc" .. i .. ".rc"
    os.execute(string.format("sh -c %s >/dev/null 2>&1 </dev/null &", q(string.format(
      "printf '%s' | timeout 120 nc 127.0.0.1 %d >%s 2>&1; echo $? >%s", req, port, out, rc))))
    return function()
      if h.read_or_empty(rc) ~= "" then return h.read_or_empty(out) end
    end
  end

  it("answers 400 to what is not HTTP, at once; HEADX is not HEAD", function()
    local p = start(nil, "--metrics-port 0")
    h.finally(function() os.execute("kill " .. p.pid .. " 2>/dev/null") end)
    -- a NUL byte in the request line: 400 without waiting for the rest
    assert.matches("^HTTP/1%.1 400 Bad Request\r\n", raw(p.metrics_port, "GET /metrics\\000 HTTP/1.1\\r\\n\\r\\n"))
    assert.matches("^HTTP/1%.1 400 Bad Request\r\n", raw(p.metrics_port, "HEADX\\r\\n\\r\\n"))
    assert.matches("^HTTP/1%.1 400 Bad Request\r\n", raw(p.metrics_port, "GET /metrics\\r\\n\\r\\n"))
    -- a well-formed request with another method: 405 (it was taken for HEAD: 200)
    assert.matches("^HTTP/1%.1 405 Method Not Allowed\r\n", raw(p.metrics_port, "HEADX /metrics HTTP/1.1\\r\\n\\r\\n"))
    local head = raw(p.metrics_port, "HEAD /metrics HTTP/1.1\\r\\n\\r\\n")
    assert.matches("^HTTP/1%.1 200 OK\r\n", head)
    assert.matches("\r\n\r\n$", head) -- no body
    stop(p)
  end)

  it("a request not sent in full is answered 408 and closed", function()
    local p = start(nil, "--metrics-port 0")
    h.finally(function() os.execute("kill " .. p.pid .. " 2>/dev/null") end)
    local answer = hold(p.dir, 1, p.metrics_port, "GET /metr")
    local got = h.wait_for(answer, "the server to close the half-sent request", 60)
    assert.matches("^HTTP/1%.1 408 Request Timeout\r\n", got)
    local _, body = scrape(p.metrics_port)
    assert.are.equal("0", sample(body, "wmrun_records_in_total", "win"))
    stop(p)
  end)

  -- The report: 65 half-sent requests under ulimit -n 64 took every descriptor, and the job
  -- failed at its next checkpoint ("Too many open files"). Now at most 8 are held at once (each
  -- until its 408), the rest are refused (503, or reset) at once; the job goes on checkpointing,
  -- takes its lines, and stops on SIGTERM with a checkpoint, exit 0.
  it("65 half-sent requests under ulimit -n 64 leave the job its descriptors", function()
    local dir = h.tmpdir()
    h.finally(function() h.rmdir(dir) end)
    local f = assert(io.open(dir .. "/job.lua", "w"))
    f:write(string.format([[
local wm = require("wm")
local env = wm.env{watermark_interval = 0}
env:read_lines(%q, {follow = true})
  :parse_csv{"k", "ts:integer"}:name("parse")
  :assign_timestamps_and_watermarks(wm.watermarks.monotonous():with_timestamp_field("ts", 1000))
  :key_by("k"):window(wm.windows.tumbling("5s")):count():name("win")
  :print()
env:execute()
]], dir .. "/in.txt"))
    f:close()
    assert(io.open(dir .. "/in.txt", "w")):close()
    os.execute(string.format("sh -c %s >/dev/null 2>&1 </dev/null &", q(string.format(
      "ulimit -n 64 && %s --checkpoint-dir %s --checkpoint-interval 50ms --metrics-port 0 %s >%s 2>%s & " ..
      "echo $! >%s; wait $!; echo $? >%s", h.wmrun_path(), q(dir .. "/ck"), q(dir .. "/job.lua"),
      q(dir .. "/out"), q(dir .. "/err"), q(dir .. "/pid"), q(dir .. "/rc")))))
    local pid = h.wait_for(function() return tonumber(h.read_or_empty(dir .. "/pid"):match("%d+")) end, "the pid")
    h.finally(function() os.execute("kill -KILL " .. pid .. " 2>/dev/null") end)
    local port = tonumber(h.wait_for(function()
      return h.read_or_empty(dir .. "/err"):match("metrics on http://127%.0%.0%.1:(%d+)/metrics\n")
    end, "the metrics port on stderr"))
    local answers = {}
    for i = 1, 65 do answers[i] = hold(dir, i, port, "GET /metr") end
    local held = 0
    for i = 1, 65 do
      local got = h.wait_for(answers[i], "half-sent request " .. i .. " to be closed", 60)
      if got:match("^HTTP/1%.1 408 ") then held = held + 1
      elseif got ~= "" then assert.matches("^HTTP/1%.1 503 Service Unavailable\r\n", got) end
    end
    -- (at most 8 at once: later ones, retried by the kernel after a full backlog, may be
    -- held once the first have gone, so the total is not bounded)
    assert.is_true(held >= 1, "held " .. held)
    assert.is_truthy(os.execute("kill -0 " .. pid .. " 2>/dev/null"), h.read_or_empty(dir .. "/err"))
    -- the job takes lines and checkpoints after the storm
    local function last_ck()
      local n = 0
      for _, l in ipairs(h.lines("ls " .. q(dir .. "/ck"))) do
        local k = tonumber(l:match("^chk%-(%d+)$"))
        if k and k > n then n = k end
      end
      return n
    end
    local after = last_ck()
    f = assert(io.open(dir .. "/in.txt", "a"))
    f:write("a,1\na,7\na,12\n")
    f:close()
    h.wait_for(function()
      local hd, b = scrape(port)
      return hd:match("^HTTP/1%.1 200 ") and sample(b, "wmrun_records_in_total", "win") == "3"
    end, "the job to take 3 lines")
    h.wait_for(function() return last_ck() > after end, "a checkpoint after the storm")
    os.execute("kill -TERM " .. pid)
    local rc = h.wait_for(function() return tonumber(h.read_or_empty(dir .. "/rc"):match("%d+")) end,
      "wmrun to end", 60)
    local err = h.read_or_empty(dir .. "/err")
    assert.are.equal(0, rc, err)
    assert.is_nil(err:find("Too many open files", 1, true), err)
    assert.matches("stopped by SIGTERM with checkpoint %d+", err)
  end)
end)

-- The --metrics table (issue 26): the results apart from the side outputs, late records
-- dropped or sent to the side output, one line per side output, every name once.
describe("--metrics", function()
  it("counts late records as dropped or side output, outputs per output, and names every operator once",
      function()
    local out, err, code = h.run_job([[
local wm = require("wm")
local env = wm.env{watermark_interval = 0}
local s = env:from_elements({k = "a", t = 1000}, {k = "a", t = 7000}, {k = "a", t = 12000}, {k = "a", t = 2000})
  :assign_timestamps_and_watermarks(wm.watermarks.bounded_out_of_orderness(0):with_timestamp_field("t"))
local counts = s:key_by("k"):window(wm.windows.tumbling(5000)):side_output_late_data("late"):count():name("side")
counts:map(function(r) return r end):map(function(r) return r end):print("c")
counts:get_side_output("late"):print("late")
s:key_by("k"):window(wm.windows.tumbling(5000)):count():name("drop"):print("d")
env:execute()
]], "--metrics")
    assert.are.equal(0, code, err)
    assert.matches("late> {\"k\":\"a\",\"t\":2000}", out, 1, true)
    local rows, names = {}, {}
    for line in err:gmatch("[^\n]+") do
      local r = line:gsub("%s+", " ")
      rows[#rows + 1] = r
    end
    assert.matches("^operator records in records out side out watermark late dropped late to side windows$",
      rows[1], nil, false)
    local function row(pat)
      for _, r in ipairs(rows) do if r:match(pat) then return r end end
      error("no row " .. pat .. " in:\n" .. err)
    end
    -- in, out (results), side out, watermark, late dropped, late to side, windows
    assert.matches(" 4 3 1 MAX 0 1 0$", row("^side %("))
    assert.matches(" 4 3 0 MAX 1 0 0$", row("^drop %("))
    assert.matches("^side output 'late' of 'side %(.-%.lua:5%)': 1 record$", row("^side output"))
    -- two maps on one line: the second is #2
    row("^map %(.-%.lua:6%) 3 3 0 ")
    row("^map %(.-%.lua:6%) #2 3 3 0 ")
    for i = 2, #rows do
      local name = rows[i]:match("^(.-%)[^%d]*) %d") -- up to the job line (and #k)
      if name and not rows[i]:match("^side output") then
        assert.is_nil(names[name], "twice: " .. name)
        names[name] = true
      end
    end
  end)
end)
