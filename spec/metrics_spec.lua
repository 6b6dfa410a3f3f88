-- Prometheus metrics (--metrics-port, wm.env{metrics = {...}}; docs/metrics.md): a job that
-- stays alive (listen_lines) gets four lines through its socket, the spec scrapes /metrics
-- with curl and checks names, labels and values worked out from the job, then stops the job
-- by its pid and waits for its exit status. Every wait is for a condition (h.wait_for), never
-- for a time.
local h = require("helper")

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

local function start(opts, args)
  local dir = h.tmpdir()
  -- (bg_job: its shell waits for wmrun and writes its exit status, which stop waits for)
  local job = h.bg_job(dir, string.format(JOB, opts or ""), args)
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
  local v = body:match("\n" .. metric .. "{operator=\"" .. op .. " %([^\"]*%)\"} (%S+)\n")
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
    assert.matches("# TYPE wmrun_watermark_lag_milliseconds gauge\n", body, 1, true)
    assert.are.equal("4", sample(body, "wmrun_records_out_total", "listen_lines%(127%.0%.0%.1:0%)"))
    assert.are.equal("4", sample(body, "wmrun_records_in_total", "parse"))
    assert.are.equal("4", sample(body, "wmrun_records_out_total", "stamps"))
    assert.are.equal("2", sample(body, "wmrun_records_out_total", "win")) -- [0, 5) and [5, 10)
    assert.are.equal("1", sample(body, "wmrun_late_records_dropped_total", "win")) -- a,2
    assert.are.equal("1", sample(body, "wmrun_open_windows", "win")) -- [10, 15)
    assert.are.equal("11999", sample(body, "wmrun_watermark_milliseconds", "win"))
    assert.are.equal("NaN", sample(body, "wmrun_watermark_milliseconds", "listen_lines%(127%.0%.0%.1:0%)"))
    local lag = tonumber(sample(body, "wmrun_watermark_lag_milliseconds", "win"))
    assert.is_true(lag >= before - 11999 - 86400000 and lag <= before - 11999 + 86400000)
    assert.is_nil(sample(body, "wmrun_open_windows", "parse")) -- only window operators have it
    -- the two firings, and the last window when the drain (kill) ends the input
    assert.are.equal('{"count":1,"key":"a","start":0,"stop":5000}\n'
      .. '{"count":1,"key":"a","start":5000,"stop":10000}\n'
      .. '{"count":1,"key":"a","start":10000,"stop":15000}\n', h.read(p.out))
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
