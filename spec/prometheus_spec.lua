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
    -- 4 lines: the window's instances have seen 4 records between them, and the parse
    -- instances' counts are published (each thread publishes its own, at its own moment)
    local body = h.wait_for(function()
      local b = scrape(port)
      if sum(b, "wmrun_records_in_total", '^operator="win %(') == 4
        and sum(b, "wmrun_records_out_total", '^operator="parse %(') == 4 then return b end
    end, "the window's instances to see 4 records and parse's to publish 4", 60)
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

-- Source lag per partition (wmrun_source_lag_records): a Kafka topic / NATS stream filled
-- before the job starts, read by a job whose /metrics the spec polls. While records remain,
-- every scrape in which each partition's lag is known satisfies lag summed + the source's
-- records out = the records produced (one snapshot: both taken between two batches); once
-- all are read the lags are 0; records produced after a bounded Kafka source's end are
-- its lag (the consumer goes on fetching the high watermark).
local function produce(text)
  local _, err, code = h.run_job(text)
  assert.are.equal(0, code, err)
end

-- the lag samples {partition = value} of body and the source's records out
local function lags(body)
  local l = {}
  for part, v in body:gmatch('\nwmrun_source_lag_records{operator="read_[a-z]+%([^"]*%)",subtask="1",'
      .. 'partition="([^"]+)"} (%S+)') do
    l[part] = tonumber(v)
  end
  return l, sum(body, "wmrun_records_out_total", '^operator="read_[a-z]+%(')
end

-- polls /metrics until ok(lags, out) holds, checking on every scrape that the lags of parts
-- (when both known) and out add up to `total`; returns the last body
local function poll_lags(port, parts, total, ok, what)
  return h.wait_for(function()
    local b = scrape(port)
    local l, out = lags(b)
    local known, s = true, out
    for _, p in ipairs(parts) do
      if l[p] == nil then known = false else s = s + l[p] end
    end
    if known and total then assert.are.equal(total, s, b) end
    if ok(l, out) then return b end
  end, what, 60)
end

-- the job runs with the live view (--ui), whose server answers /metrics too
local function start_lag_job(text)
  local dir = h.tmpdir()
  local job = h.bg_job(dir, text, "--ui 0")
  h.finally(function() job.kill(); h.rmdir(dir) end)
  job.pid()
  local port = tonumber(h.wait_for(function()
    return h.read_or_empty(job.err):match("live view on http://127%.0%.0%.1:(%d+)/\n")
  end, "the live view's port on stderr", 60))
  return job, port
end

-- the page as headless Chromium has run it (up to 2 s of virtual time), until ok(dom) holds
-- (a bounded number of tries)
local function dom_when(port, ok)
  for _ = 1, 10 do
    local out, err, code = h.sh_plain("timeout 60 chromium --headless --no-sandbox --disable-gpu "
      .. "--virtual-time-budget=2000 --dump-dom http://127.0.0.1:" .. port .. "/ 2>/dev/null")
    assert.are.equal(0, code, err)
    if ok(out) then return out end
  end
  error("the page never showed what was expected")
end

describe("source lag", function()
  it("Kafka: lag per partition, 0 once read, then what was produced past a bounded end", function()
    local k = services.kafka{"ev:2"}
    h.finally(function() k:stop() end)
    -- lines "p,x" to partition p: 5 to ev/0 and 3 to ev/1
    local PRODUCE = [[
local env = require("wm").env{}
env:from_elements(%s):write_kafka{brokers = %q, topic = "ev", format = "text",
  partition = function(l) return tonumber(l:match("^(%%d)")) end}
env:execute()]]
    produce(PRODUCE:format('"0,a", "0,b", "1,c", "0,d", "1,e", "0,f", "1,g", "0,h"', k.bootstrap))
    -- bounded: reads the 8, then the socket keeps the job alive
    local job, port = start_lag_job(string.format([[
local env = require("wm").env{}
env:read_kafka{brokers = %q, topic = "ev", bounded = "latest"}:print()
env:listen_lines("127.0.0.1", 0):print()
env:execute()]], k.bootstrap))
    local body = poll_lags(port, {"ev/0", "ev/1"}, 8, function(l, out)
      return out == 8 and l["ev/0"] == 0 and l["ev/1"] == 0
    end, "both partitions read: lag 0")
    local out, err, code = h.sh_plain("promtool check metrics", body)
    assert.are.equal(0, code, out .. err)
    assert.matches("# TYPE wmrun_source_lag_records gauge\n", body, 1, true)
    -- 4 more to ev/0, 2 to ev/1: past the end the source read to, never read: its lag
    produce(PRODUCE:format('"0,i", "1,j", "0,k", "0,l", "1,m", "0,n"', k.bootstrap))
    poll_lags(port, {"ev/0", "ev/1"}, nil, function(l, o)
      return o == 8 and l["ev/0"] == 4 and l["ev/1"] == 2
    end, "the lag of the records produced past the end: 4 and 2")
    -- the live view shows the same, per partition and in the source's total
    local api = h.sh_plain("curl -s --max-time 30 http://127.0.0.1:" .. port .. "/api/job")
    local doc = cjson.decode(api)
    local src, total
    for _, op in ipairs(doc.operators) do if op.kind == "read_kafka" then src = op end end
    for _, t in ipairs(doc.totals) do if t.operator:match("^read_kafka") then total = t end end
    assert.are.same({{partition = "ev/0", records = 4}, {partition = "ev/1", records = 2}}, src.source_lag)
    assert.are.equal(6, total.source_lag)
    local d = dom_when(port, function(d) return d:find('data-f="lag:ev/1">partition ev/1: lag 2 records<', 1, true) end)
    assert.matches('data-f="lag:ev/0">partition ev/0: lag 4 records<', d, 1, true)
    job.signal("TERM")
    job.wait()
  end)

  it("NATS: lag per subject from the messages' pending counts, 0 once read", function()
    local n = services.nats()
    h.finally(function() n:stop() end)
    local PRODUCE = [[
local env = require("wm").env{}
env:from_elements(%s):write_nats{url = %q, stream = "EV", format = "text",
  subject = function(l) return "ev." .. l:match("^(%%a)") end}
env:execute()]]
    produce(PRODUCE:format('"a1", "a2", "b1", "a3", "b2", "a4", "a5"', n.url))
    local job, port = start_lag_job(string.format([[
local env = require("wm").env{}
env:read_nats{url = %q, stream = "EV", subject = "ev.>"}:print()
env:execute()]], n.url))
    poll_lags(port, {"ev.a", "ev.b"}, 7, function(l, out)
      return out == 7 and l["ev.a"] == 0 and l["ev.b"] == 0
    end, "both subjects read: lag 0")
    -- 3 more to ev.a: read as they come, the lag back at 0
    produce(PRODUCE:format('"a6", "a7", "a8"', n.url))
    local body = poll_lags(port, {"ev.a", "ev.b"}, nil, function(l, out)
      return out == 10 and l["ev.a"] == 0 and l["ev.b"] == 0
    end, "the 3 more read: lag 0")
    local out, err, code = h.sh_plain("promtool check metrics", body)
    assert.are.equal(0, code, out .. err)
    job.signal("TERM")
    job.wait()
  end)
end)
