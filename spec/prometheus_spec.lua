-- Prometheus for real (docs/metrics.md): the /metrics of a job running on two threads passes
-- `promtool check metrics`, and a real `prometheus` server, started here on 127.0.0.1 with a
-- free port and a directory of its own, scrapes the job every second and answers a query
-- with the count worked out from the input. The job follows a file the spec appends to, so
-- it runs until the spec stops it; every wait is for an event (a bounded poll), never a time.
local h = require("helper")
local services = require("services")
local cjson = require("cjson")
local q = h.shell_quote

-- at parallelism 2 on 2 threads: parse, stamps and win have an instance on each thread;
-- every record reaches exactly one instance of win, so the sum over its subtasks is the
-- number of lines appended
local JOB = [[
local wm = require("wm")
local env = wm.env{watermark_interval = 0, parallelism = 2}
env:read_lines(%q, {follow = true})
  :parse_csv{"k", "ts:integer"}:name("parse")
  :assign_timestamps_and_watermarks(wm.watermarks.monotonous():with_timestamp_field("ts", 1000))
  :name("stamps")
  :key_by("k"):window(wm.windows.tumbling("5s")):count():name("win")
  :print()
env:execute()
]]

local function start_job()
  local dir = h.tmpdir()
  local input = dir .. "/in.csv"
  assert(io.open(input, "w")):close()
  local job = h.bg_job(dir, string.format(JOB, input), "--threads 2 --metrics-port 0 --checkpoint-dir "
    .. q(dir .. "/ck") .. " --checkpoint-interval 100ms")
  h.finally(function() job.kill(); h.rmdir(dir) end)
  job.pid()
  local port = tonumber(h.wait_for(function()
    return h.read_or_empty(job.err):match("metrics on http://127%.0%.0%.1:(%d+)/metrics\n")
  end, "the metrics port on stderr", 60))
  local function append(text)
    local f = assert(io.open(input, "a"))
    f:write(text)
    f:close()
  end
  return job, port, append
end

local function scrape(port)
  local out, err, code = h.sh_plain("curl -s --max-time 30 http://127.0.0.1:" .. port .. "/metrics")
  assert.are.equal(0, code, err)
  return out
end

-- the sum of a metric's samples whose labels match pattern (a Lua pattern on the label text)
local function sum(body, metric, pattern)
  local total, n = 0, 0
  for labels, v in body:gmatch("\n" .. metric .. "{([^}]*)} (%S+)") do
    if labels:match(pattern) then
      total = total + tonumber(v)
      n = n + 1
    end
  end
  return total, n
end


-- a prometheus server scraping 127.0.0.1:target every second; .port is its own
local function prometheus(target)
  local dir = h.tmpdir()
  local f = assert(io.open(dir .. "/prometheus.yml", "w"))
  f:write(string.format([[
global:
  scrape_interval: 1s
scrape_configs:
  - job_name: wmrun
    static_configs:
      - targets: ["127.0.0.1:%d"]
]], target))
  f:close()
  local port = h.free_port()
  local s = services.start("exec prometheus --config.file=" .. q(dir .. "/prometheus.yml")
    .. " --storage.tsdb.path=" .. q(dir .. "/data") .. " --web.listen-address=127.0.0.1:" .. port,
    dir, function(sv)
      return sv:log():find("Server is ready to receive web requests", 1, true) ~= nil
    end, "prometheus")
  s.port = port
  return s
end

-- the value of an instant query's single sample (a string), or nil while there is none
local function query(port, promql)
  local out, _, code = h.sh_plain("curl -s --max-time 30 -G --data-urlencode " .. q("query=" .. promql)
    .. " http://127.0.0.1:" .. port .. "/api/v1/query")
  if code ~= 0 then return nil end
  local ok, doc = pcall(cjson.decode, out)
  if not ok or doc.status ~= "success" then return nil end
  local r = doc.data.result
  if #r ~= 1 then return nil end
  return r[1].value[2]
end

describe("Prometheus for real", function()
  it("promtool check metrics passes on a scrape of a job on two threads, every thread's operators in it",
      function()
    local job, port, append = start_job()
    append("a,1\nb,2\nc,3\nd,7\n")
    -- 4 lines: the window's instances have seen 4 records between them
    local body = h.wait_for(function()
      local b = scrape(port)
      if sum(b, "wmrun_records_in_total", '^operator="win %(') == 4 then return b end
    end, "the window's instances to see 4 records", 60)
    job.signal("TERM")
    job.wait()
    local out, err, code = h.sh_plain("promtool check metrics", body)
    assert.are.equal(0, code, out .. err)
    assert.are.equal("", out .. err)
    -- each of the window's two instances, on its thread
    local _, n1 = sum(body, "wmrun_records_in_total", '^operator="win %([^"]*%)",subtask="1",thread="1"$')
    local _, n2 = sum(body, "wmrun_records_in_total", '^operator="win %([^"]*%)",subtask="2",thread="2"$')
    assert.are.same({1, 1}, {n1, n2})
    -- parse too: 4 lines parsed between its two instances, one per thread
    local parsed, np = sum(body, "wmrun_records_out_total", '^operator="parse %(')
    assert.are.same({4, 2}, {parsed, np})
    -- the checkpoints: at least the one taken before the first record, and its size
    assert.is_true(tonumber(body:match("\nwmrun_checkpoints_total (%d+)\n")) >= 1)
    assert.is_true(tonumber(body:match("\nwmrun_checkpoint_bytes (%d+)\n")) > 0)
    assert.matches("\nwmrun_checkpoint_duration_seconds [%d.]+\n", body)
    assert.matches("# TYPE wmrun_checkpoints_total counter\n", body, 1, true)
  end)

  it("a prometheus server scrapes the job and answers a query with the records summed over subtasks",
      function()
    local job, port, append = start_job()
    local prom = prometheus(port)
    h.finally(function() prom:stop() end)
    append("a,1\nb,2\nc,3\n")
    local q1 = 'sum(wmrun_records_in_total{job="wmrun",operator=~"win .*"})'
    -- 3 lines so far (the first scrapes may still see fewer: wait for 3)
    assert.are.equal("3", h.wait_for(function()
      local v = query(prom.port, q1)
      if v == "3" then return v end
    end, "prometheus to answer 3", 60))
    append("d,7\ne,8\n")
    assert.are.equal("5", h.wait_for(function()
      local v = query(prom.port, q1)
      if v == "5" then return v end
    end, "prometheus to answer 5", 60))
    -- two series for the window: one per subtask
    assert.are.equal("2", query(prom.port, 'count(wmrun_records_in_total{operator=~"win .*"})'))
    assert.are.equal("2", query(prom.port, 'count(count by (thread) (wmrun_records_in_total{operator=~"win .*"}))'))
    -- the target is up
    assert.are.equal("1", query(prom.port, 'up{job="wmrun"}'))
    job.signal("TERM")
    job.wait()
  end)
end)
