-- The live view (wmrun --ui, wm.env{ui = {...}}; docs/metrics.md "Live view"): a job that stays
-- alive (listen_lines) gets four lines through its socket, then holds still; the spec reads
-- /api/job with curl, and the page in headless Chromium (`chromium --dump-dom`, polled until
-- the page shows the job's numbers, a bounded number of tries: never a fixed sleep), and
-- checks operators, edges, watermarks and counts worked out by hand from the job.
local h = require("helper")
local cjson = require("cjson")

-- tumbling 5 s windows counting per key, watermark = max ts - 1 ms after every record;
-- lines a,1 a,7 a,12 then a,2 (late: [0, 5) was cleaned up at watermark 11999). By hand:
-- the source emits 4; parse and stamps pass 4; the window gets 4, fires [0, 5) at 7 s's
-- watermark 6999 and [5, 10) at 11999 (2 out), drops a,2 (1 late dropped) and holds
-- [10, 15) (1 window); print gets 2. Watermarks: none at the source and parse, 11999 from
-- stamps on.
local JOB = [[
local wm = require("wm")
local env = wm.env{watermark_interval = 0%s}
env:listen_lines("127.0.0.1", 0)
  :parse_csv{"k", "ts:integer"}:name("parse")
  :assign_timestamps_and_watermarks(wm.watermarks.monotonous():with_timestamp_field("ts", 1000))
  :name("stamps")
  :key_by("k"):window(wm.windows.tumbling("5s")):count():name("win")
  :print()
env:execute("ui job")
]]

-- A keyed connect: lines s,ts go to input 1 (s = 1) or input 2 (s = 2), monotonous
-- watermarks (ts - 1 ms) on each. Lines 1,10 2,10 1,100 2,20: input 1 gets 2 records and
-- watermark 99, input 2 gets 2 and watermark 19; the operator's is the minimum, 19; one key
-- (with a timer at 1000, not fired).
local JOB2 = [[
local wm = require("wm")
local env = wm.env{watermark_interval = 0}
local src = env:listen_lines("127.0.0.1", 0):parse_csv{"s:integer", "ts:integer"}
local st = wm.watermarks.monotonous():with_timestamp_field("ts")
local a = src:filter(function(r) return r.s == 1 end):assign_timestamps_and_watermarks(st)
local b = src:filter(function(r) return r.s == 2 end):assign_timestamps_and_watermarks(st)
a:key_by(function() return 1 end):connect(b:key_by(function() return 1 end)):process{
  process_element1 = function(r, ctx, out)
    ctx.timer_service:register_event_time_timer(1000) -- the key holds a timer: 1 key
    out(r.ts)
  end,
  process_element2 = function(r, ctx, out) out(r.ts) end,
  on_timer = function(t, ctx, out) out("timer " .. t) end}:name("co")
  :print()
env:execute()
]]

-- On two threads at parallelism 2: the socket's lines go round robin (rebalance, from
-- instance 1) to parse's instances, instance k on thread k; parse, big and print are chained
-- (forward) on each. By hand, lines 1 20 3 40 50: parse 1/2 gets 1 3 50, parse 2/2 20 40;
-- big (v > 10) passes 50 on 1/2 and 20 40 on 2/2; print gets 1 and 2.
local JOB3 = [[
local wm = require("wm")
local env = wm.env{watermark_interval = 0}
env:listen_lines("127.0.0.1", 0):rebalance()
  :parse_csv{"v:integer"}:name("parse")
  :filter(function(r) return r.v > 10 end):name("big")
  :print()
env:execute("threads job")
]]
-- {records_in, records_out} of instance 1 and 2
local BY_HAND = {parse = {{3, 3}, {2, 2}}, big = {{3, 1}, {2, 2}}, print = {{1, 0}, {2, 0}}}

local function start(text, args)
  local dir = h.tmpdir()
  local job = h.bg_job(dir, text, args)
  local p = {dir = dir, job = job, pid = job.pid()}
  -- the ports wmrun prints on stderr: the view's and the source's
  for k, pat in pairs{ui = "live view on http://127%.0%.0%.1:(%d+)/\n", port = "listening on 127%.0%.0%.1:(%d+)"} do
    p[k] = tonumber(h.wait_for(function() return h.read_or_empty(job.err):match(pat) end, pat))
  end
  return p
end

local function send(p, lines)
  local _, err, code = h.sh_plain("nc -N 127.0.0.1 " .. p.port, lines)
  assert.are.equal(0, code, err)
end

local function get(port, path)
  local out, err, code = h.sh_plain("curl -s -i --max-time 30 http://127.0.0.1:" .. port .. path)
  assert.are.equal(0, code, err)
  return out:match("^(.-)\r\n\r\n(.*)$")
end

local function job_json(port)
  local _, body = get(port, "/api/job")
  return cjson.decode(body)
end

local function op_named(job, prefix)
  for _, op in ipairs(job.operators) do
    if op.name:sub(1, #prefix) == prefix then return op end
  end
end

-- instance k of the operator whose name starts with "prefix "
local function instance(job, prefix, k)
  for _, op in ipairs(job.operators) do
    if op.operator:sub(1, #prefix + 1) == prefix .. " " and op.subtask == k then return op end
  end
end

local function total(job, prefix)
  for _, t in ipairs(job.totals) do
    if t.operator:sub(1, #prefix + 1) == prefix .. " " then return t end
  end
end

-- /api/job once the operator named prefix... has counted n records in
local function job_when(port, prefix, n)
  return h.wait_for(function()
    local j = job_json(port)
    if op_named(j, prefix).records_in == n then return j end
  end, prefix .. " to see " .. n .. " records")
end

-- the page as Chromium has run it: its DOM after up to 2 s of (virtual) time
local function cells(row)
  local r = {}
  for f, v in row:gmatch('<td data%-f="([%w_]+)"[^>]*>([^<]*)') do r[f] = v end
  return r
end

-- the totals row of the operator whose name starts with "prefix "
local function dom_total(d, prefix)
  local row = d:match('<tr data%-total="' .. prefix:gsub("%p", "%%%0") .. ' [^"]*">(.-)</tr>')
  return row and cells(row)
end

local function dom(port)
  local out, err, code = h.sh_plain("timeout 60 chromium --headless --no-sandbox --disable-gpu "
    .. "--virtual-time-budget=2000 --dump-dom http://127.0.0.1:" .. port .. "/ 2>/dev/null")
  assert.are.equal(0, code, err)
  return out
end

-- the row of the operator whose name starts with prefix (and runs on thread `thread`, when
-- given): {field = text, watermark_ms = ...}
local function dom_row(d, prefix, thread)
  local row = d:match('<tr data%-op="' .. prefix:gsub("%p", "%%%0") .. '[^"]*" data%-thread="'
    .. (thread or "%d+") .. '">(.-)</tr>')
  if not row then return nil end
  local r = cells(row)
  r.watermark_ms = row:match('data%-f="watermark" data%-ms="([^"]*)"')
  return r
end

describe("live view", function()
  it("/api/job shows the graph, watermarks and counts of the job; / is the page", function()
    local p = start(string.format(JOB, ""), "--ui 0")
    h.finally(p.job.kill)
    send(p, "a,1\na,7\na,12\na,2\n")
    local job = job_when(p.ui, "print", 2)
    local head, page = get(p.ui, "/")
    local mhead, metrics = get(p.ui, "/metrics") -- the same server serves Prometheus too
    local nhead = get(p.ui, "/nothing")
    assert.are.equal("ui job", job.name)
    assert.are.equal(1, job.parallelism)
    assert.are.equal(1, job.threads)
    assert.are.same({paused = false, paused_ms = 0, queued_bytes = 0}, job.backpressure)
    assert.are.equal(cjson.null, job.checkpoints)
    local names = {}
    for i, op in ipairs(job.operators) do names[i] = op.name:match("^[^ (]+") end
    assert.are.same({"listen_lines", "parse", "stamps", "win", "print"}, names)
    -- a chain: 0 -> 1 -> 2 -> 3 -> 4 on the main ports
    local edges = {}
    for _, e in ipairs(job.edges) do edges[#edges + 1] = ("%d>%d"):format(e.from, e.to) end
    table.sort(edges)
    assert.are.same({"0>1", "1>2", "2>3", "3>4"}, edges)
    local src, parse, win = job.operators[1], op_named(job, "parse"), op_named(job, "win")
    assert.are.equal(4, src.records_out)
    assert.are.equal(cjson.null, src.watermark)
    assert.are.same({}, src.channels) -- a source has no input channel
    assert.are.equal(4, parse.records_in)
    assert.are.equal(cjson.null, parse.watermark)
    assert.are.equal(cjson.null, parse.lag_ms)
    assert.are.equal("window", win.kind)
    assert.are.equal(4, win.records_in)
    assert.are.equal(2, win.records_out)
    assert.are.equal(1, win.late_dropped)
    assert.are.equal(0, win.late_side)
    assert.are.equal(1, win.windows)
    assert.are.equal(11999, win.watermark)
    assert.are.same({{watermark = 11999, idle = false}}, win.channels)
    assert.is_true(win.lag_ms == job.now - 11999)
    assert.is_nil(parse.windows) -- only window operators have it
    assert.matches("^HTTP/1%.1 200 OK\r\n", head)
    assert.matches("\r\nContent%-Type: text/html; charset=utf%-8\r\n", head)
    assert.matches("<title>wmrun live view</title>", page, 1, true)
    -- self-contained: nothing loaded from elsewhere
    assert.is_nil(page:match("<script[^>]* src="))
    assert.is_nil(page:match("<link"))
    assert.is_nil(page:match("@font%-face"))
    assert.is_nil(page:match("@import"))
    for url in page:gmatch("https?://[^\"' ]*") do -- only the SVG namespace's name
      assert.are.equal("http://www.w3.org/2000/svg", url)
    end
    assert.matches("^HTTP/1%.1 200 OK\r\n", mhead)
    assert.matches('\nwmrun_records_in_total{operator="win %([^"]*%)",subtask="1"} 4\n', metrics)
    assert.matches("^HTTP/1%.1 404 Not Found\r\n", nhead)
  end)

  it("headless Chromium shows the operators, their watermarks and counts", function()
    local p = start(string.format(JOB, ""), "--ui 0")
    h.finally(p.job.kill)
    send(p, "a,1\na,7\na,12\na,2\n")
    -- the page polls /api/job: wait until it shows the window's 4 records (bounded tries)
    local d
    for _ = 1, 10 do
      local got = dom(p.ui)
      local w = dom_row(got, "win")
      if w and w.records_in == "4" and w.watermark_ms == "11999" then
        d = got
        break
      end
    end
    assert.is_truthy(d, "the page never showed the window's 4 records")
    assert.matches('<span id="status" class="live" data%-polls="%d+">live</span>', d)
    local win, src, parse, pr = dom_row(d, "win"), dom_row(d, "listen_lines"), dom_row(d, "parse"),
      dom_row(d, "print")
    assert.are.same({"4", "2", "1", "0", "1"}, {win.records_in, win.records_out, win.late_dropped,
      win.late_side, win.windows})
    assert.are.equal("1970-01-01 00:00:11.999", win.watermark)
    assert.are.equal("4", src.records_out)
    assert.are.equal("none yet", src.watermark)
    assert.are.equal("none yet", parse.watermark)
    assert.are.equal("4", parse.records_out)
    assert.are.equal("2", pr.records_in)
    assert.are.equal("11999", pr.watermark_ms)
    -- the graph: a node per operator
    local nodes = 0
    for _ in d:gmatch('<g class="node[^"]*" data%-node=') do nodes = nodes + 1 end
    assert.are.equal(5, nodes)
    assert.matches('id="ck-taken">off<', d, 1, true) -- no checkpoints in this job
    assert.matches('id="bp-paused">running<', d, 1, true)
  end)

  it("a two-input operator shows both inputs' records and watermarks", function()
    local p = start(JOB2, "--ui 0")
    h.finally(p.job.kill)
    send(p, "1,10\n2,10\n1,100\n2,20\n")
    local job = job_when(p.ui, "co", 4)
    local co = op_named(job, "co")
    assert.are.equal(2, #co.inputs)
    assert.are.same({records = 2, late_dropped = 0, late_side = 0, watermark = 99, idle = false},
      co.inputs[1])
    assert.are.same({records = 2, late_dropped = 0, late_side = 0, watermark = 19, idle = false},
      co.inputs[2])
    assert.are.equal(19, co.watermark) -- the minimum of both inputs
    assert.are.same({{watermark = 99, idle = false}, {watermark = 19, idle = false}}, co.channels)
    assert.are.equal(1, co.keys)
  end)

  it("shows the checkpoints the run takes", function()
    -- a source paced at 5 records a second: checkpoints every 100 ms while it runs
    local dir = h.tmpdir()
    local job = h.bg_job(dir, 'local env = require("wm").env{}\n'
      .. 'env:generate(function(i) return i end, {count = 1000000, rate = 5}):print()\nenv:execute()\n',
      "--ui 0 --checkpoint-dir " .. dir .. "/ck --checkpoint-interval 100ms")
    h.finally(job.kill)
    local port = tonumber(h.wait_for(function()
      return h.read_or_empty(job.err):match("live view on http://127%.0%.0%.1:(%d+)/\n")
    end, "the live view's port"))
    local ck = h.wait_for(function()
      local c = job_json(port).checkpoints
      if c ~= cjson.null and c.taken >= 2 then return c end
    end, "two checkpoints", 60)
    -- a fresh run: checkpoint 1 is the one before the first record, each one numbered on
    assert.are.equal(ck.taken, ck.last_id)
    assert.are.equal(0, ck.restored_id)
    assert.is_true(ck.last_bytes > 0)
    assert.is_true(ck.last_ms > 0 and ck.max_ms >= ck.last_ms and ck.total_ms >= ck.max_ms)
  end)

  it("with --threads 2 it shows every thread's operators, per subtask and in total", function()
    local p = start(JOB3, "--ui 0 -p 2 --threads 2")
    h.finally(p.job.kill)
    send(p, "1\n20\n3\n40\n50\n")
    -- every thread publishes its snapshot every 100 ms: wait for both print instances' 3
    local job = h.wait_for(function()
      local j = job_json(p.ui)
      local n = 0
      for _, op in ipairs(j.operators) do
        if op.operator:match("^print ") then n = n + op.records_in end
      end
      if n == 3 then return j end
    end, "the print instances to see 3 records")
    assert.are.equal(2, job.threads)
    assert.is_nil(job.thread)
    -- each thread's backpressure, from its snapshot: 5 lines never pause a source
    assert.are.same({{thread = 1, paused = false, paused_ms = 0, queued_bytes = 0},
      {thread = 2, paused = false, paused_ms = 0, queued_bytes = 0}}, job.threads_backpressure)
    assert.are.same({paused = false, paused_ms = 0, queued_bytes = 0}, job.backpressure)
    for name, want in pairs(BY_HAND) do
      for k = 1, 2 do
        local op = instance(job, name, k)
        assert.is_truthy(op, name .. " " .. k .. "/2")
        assert.are.equal(k, op.subtask)
        assert.are.equal(k, op.thread) -- instance k on thread k
        assert.are.same(want[k], {op.records_in, op.records_out}, name .. " " .. k .. "/2")
      end
      local t = total(job, name)
      assert.are.same({2, want[1][1] + want[2][1], want[1][2] + want[2][2]},
        {t.subtasks, t.records_in, t.records_out}, name)
    end
    -- the source: one instance, on thread 1, its 5 lines
    local src = op_named(job, "listen_lines")
    assert.are.same({1, 5}, {src.thread, src.records_out})
    -- edges stay inside a thread: parse k -> filter k on thread k
    local pf = {}
    for _, e in ipairs(job.edges) do
      local a, b = job.operators[e.from + 1], job.operators[e.to + 1]
      assert.are.equal(a.thread, b.thread)
      if a.operator:match("^parse ") and b.operator:match("^big ") then
        pf[#pf + 1] = ("%d>%d"):format(a.subtask, b.subtask)
      end
    end
    table.sort(pf)
    assert.are.same({"1>1", "2>2"}, pf)
    -- the page: a row per instance (with its thread), a row per operator's total
    local d
    for _ = 1, 10 do
      local got = dom(p.ui)
      local r = dom_row(got, "print", 2)
      if r and r.records_in == "2" and dom_row(got, "print", 1) and dom_row(got, "print", 1).records_in == "1" then
        d = got
        break
      end
    end
    assert.is_truthy(d, "the page never showed both print instances' records")
    for name, want in pairs(BY_HAND) do
      for k = 1, 2 do
        local r = dom_row(d, name, k)
        assert.are.same({tostring(k), tostring(k), tostring(want[k][1]), tostring(want[k][2])},
          {r.subtask, r.thread, r.records_in, r.records_out}, name .. " " .. k)
      end
      local t = dom_total(d, name)
      assert.are.same({"2", tostring(want[1][1] + want[2][1]), tostring(want[1][2] + want[2][2])},
        {t.subtasks, t.records_in, t.records_out}, name)
    end
    assert.matches("every thread's operators are shown", d, 1, true)
  end)

  it("wm.env{ui = {...}} serves it too; bad options and ports are errors", function()
    local p = start(string.format(JOB, ", ui = {port = 0, host = '127.0.0.1'}"))
    h.finally(p.job.kill)
    local job = job_json(p.ui)
    assert.are.equal(0, op_named(job, "win").records_in)
    local _, err, code = h.wmrun("--ui 70000 x.lua")
    assert.are.equal(2, code)
    assert.matches("bad %-%-ui port '70000' %(expected 0 to 65535%)", err)
    _, err, code = h.run_job('require("wm").env{ui = {port = "x"}}')
    assert.are_not.equal(0, code)
    assert.matches('env: ui must be {port = 0 to 65535, host = "127.0.0.1"}', err, 1, true)
    -- the port taken: the error names the view, host and port
    _, err, code = h.run_job('local env = require("wm").env{ui = {port = ' .. p.ui
      .. '}}\nenv:from_elements(1):print()\nenv:execute()')
    assert.are_not.equal(0, code)
    assert.matches("the live view %(%-%-ui%): cannot serve metrics on 127%.0%.0%.1:" .. p.ui
      .. ": address already in use", err)
  end)
end)
