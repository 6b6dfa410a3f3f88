-- Repartitioning through a log: key_by(key, {through = {kafka = ...} | {nats = ...}})
-- (docs/connectors.md, "Repartitioning"), on librdkafka's mock cluster and a nats-server
-- each test starts itself (spec/services.lua).
local helper = require("helper")
local services = require("services")

local q = services.quote

-- Runs a job script given as text: [env] wmrun [opts] script args; stdout, stderr, exit code.
local function job(text, args, opts, env)
  local p = helper.write_tmp(text, ".lua")
  local out, err, code = helper.sh((env or "") .. " " .. helper.wmrun_path() .. " " .. (opts or "") .. " "
    .. q(p) .. " " .. args)
  os.remove(p)
  return out, err, code
end

-- The lines of s without the instance prefixes of -p ("2> "), sorted: a multiset.
local function lines_of(s)
  local t = {}
  for l in s:gmatch("[^\n]+") do t[#t + 1] = (l:gsub("^%d+> ", "")) end
  table.sort(t)
  return t
end

-- The duplicates the --metrics lines of the readers say they dropped, summed.
local function dups(err)
  local n = 0
  for d in err:gmatch("repartition: [^\n]- (%d+) duplicates dropped") do n = n + tonumber(d) end
  return n
end

-- FNV-1a, 32 bits (NATS's partition() mapping): the partition of key k is fnv1a32(k) % n.
local function fnv1a32(s)
  local h = 2166136261
  for i = 1, #s do h = ((h ~ s:byte(i)) * 16777619) & 0xffffffff end
  return h
end

-- Readings on four keys whose timestamps are in order within the 1 s bound, so that no
-- record is late with or without the through; `p` spreads them over the input partitions
-- by position, not by key (the window key is `id`).
local function readings(n)
  local lines = {}
  for i = 1, n do
    local ts = i * 300 + ((i % 3 == 0) and -250 or 0)
    lines[i] = string.format("s%d,%d,%d,%d", i % 4, ts, i, i % 2)
  end
  return table.concat(lines, "\n") .. "\n"
end

-- The windowed part of every job: tumbling 2 s windows per id, with a result that does
-- not depend on the order of the records inside a window.
local WINDOW = [[
  :window(wm.windows.tumbling("2s"))
  :reduce(function(a, b) return {id = a.id, vc = a.vc + b.vc, ts = math.min(a.ts, b.ts)} end):print()
]]

local STRATEGY = [[wm.watermarks.bounded_out_of_orderness("1s"):with_timestamp_field("ts")]]

-- A through job with checkpoints (target: the through's table as Lua text, reading the
-- server's address from arg[1]; opts: wmrun's options) killed at the crash points of its
-- third checkpoint and with SIGKILL at random moments, then run to its end: its file is
-- the uninterrupted run's.
local function crash_runs(target, address, opts)
  local dir = helper.tmpdir()
  helper.finally(function() helper.rmdir(dir) end)
  -- paced, so that the writer still sends while checkpoints are taken: a run killed after
  -- one has records after it in the log, which the resumed writer sends again
  local script = helper.write_tmp([[
local wm = require("wm")
local env = wm.env{watermark_interval = 0}
env:generate(function(i)
  return {id = "s" .. i % 4, ts = i * 300 + ((i % 3 == 0) and -250 or 0), vc = i}
end, {count = 1500, rate = 3000})
  :assign_timestamps_and_watermarks(]] .. STRATEGY .. [[)
  :key_by("id", {through = ]] .. target .. [[})
  :window(wm.windows.tumbling("2s"))
  :reduce(function(a, b) return {id = a.id, vc = a.vc + b.vc, ts = math.min(a.ts, b.ts)} end)
  :write_lines(arg[2]):set_parallelism(1)
env:execute()]], ".lua")
  helper.finally(function() os.remove(script) end)
  local function run(out) return opts .. " " .. q(script) .. " " .. q(address) .. " " .. q(out) end
  local ref_out = dir .. "/ref.jsonl"
  local _, e0, c0 = helper.wmrun(run(ref_out))
  assert.are.equal(0, c0, e0)
  local ck = "--checkpoint-dir " .. q(dir .. "/ck") .. " --checkpoint-interval 20ms "
  local out = dir .. "/out.jsonl"
  for _, point in ipairs{"after-parts", "before-manifest", "after-manifest"} do
    local _, e, c = helper.sh("WM_CKPT_CRASH=" .. point .. ":3 " .. helper.wmrun_bin .. " " .. ck .. run(out))
    assert.is_true(c == 99 or c == 0, point .. ": " .. e)
  end
  math.randomseed(16)
  for _ = 1, 4 do
    local cmd = string.format("%s %s %s & p=$!; sleep %.3f; kill -KILL $p 2>/dev/null; wait $p",
      helper.wmrun_bin, ck, run(out), 0.05 + math.random() * 0.5)
    local _, e, c = helper.sh("sh -c " .. q(cmd))
    assert.is_true(c == 137 or c == 0, "exit status " .. tostring(c) .. ": " .. e)
  end
  local _, e, c = helper.wmrun(ck .. run(out))
  assert.are.equal(0, c, e)
  assert.are.same(lines_of(helper.read(ref_out)), lines_of(helper.read(out)))
  assert.are.equal(helper.read(ref_out):len(), helper.read(out):len())
end

describe("key_by through kafka", function()
  it("a job whose input is not partitioned by the window key gives the job's result without the through "
    .. "(one thread, -p 2, --threads 2)", function()
    local k = services.kafka{"in:2", "by_id:3"}
    helper.finally(function() k:stop() end)
    local input = helper.write_tmp(readings(200), ".csv")
    helper.finally(function() os.remove(input) end)
    local _, e0, c0 = job([[
local wm = require("wm")
local env = wm.env{}
env:read_lines(arg[1]):parse_csv{"id", "ts:integer", "vc:integer", "p:integer"}
  :write_kafka{brokers = arg[2], topic = "in", partition = "p"}
env:execute()]], q(input) .. " " .. q(k.bootstrap))
    assert.are.equal(0, c0, e0)
    -- the input topic's partitions hold every key: partitioned by position, not by id
    local text = [[
local wm = require("wm")
local env = wm.env{watermark_interval = 0}
local s = env:read_kafka{brokers = arg[1], topic = "in", bounded = "latest"}
  :parse_json():assign_timestamps_and_watermarks(]] .. STRATEGY .. [[)
local keyed = arg[2] == "through"
  and s:key_by("id", {through = {kafka = {brokers = arg[1], topic = "by_id", partitions = 3}}})
  or s:key_by("id")
keyed]] .. WINDOW .. [[
env:execute()]]
    local plain, e1, c1 = job(text, q(k.bootstrap) .. " plain")
    assert.are.equal(0, c1, e1)
    assert.is_true(#lines_of(plain) > 20, plain)
    -- three runs on the same intermediate topic: each reads what it writes (from where the
    -- topic was when it started), and the readers hear of every writer instance
    for _, opts in ipairs{"", "-p 2", "-p 2 --threads 2"} do
      local out, err, code = job(text, q(k.bootstrap) .. " through", opts .. " --metrics")
      assert.are.equal(0, code, err)
      assert.are.same(lines_of(plain), lines_of(out), opts)
      local w = opts == "" and 1 or 2
      assert.matches("partition by_id/2: watermark MAX, writers heard " .. w .. " of " .. w .. ", ended " .. w
        .. "; 0 duplicates dropped", err)
    end
  end)

  it("killed with SIGKILL at random moments and at the checkpoints' crash points, with checkpoints, "
    .. "gives the uninterrupted run's file (one thread, and -p 2 --threads 2)", function()
    local k = services.kafka{"by_id:2"}
    helper.finally(function() k:stop() end)
    crash_runs("{kafka = {brokers = arg[1], topic = 'by_id', partitions = 2}}", k.bootstrap, "")
    -- two writers and two readers on two threads (each side's instances checkpoint on
    -- their own thread; the log's sequence numbers need no common cut)
    crash_runs("{kafka = {brokers = arg[1], topic = 'by_id', partitions = 2}}", k.bootstrap, "-p 2 --threads 2")
  end)

  it("errors name the operator and the job line", function()
    local k = services.kafka{"two:2", "junk:1"}
    helper.finally(function() k:stop() end)
    local function fails(body, args)
      local out, err, code = job("local wm = require('wm')\nlocal env = wm.env{}\n" .. body, args or "")
      assert.are_not.equal(0, code, out)
      return err
    end
    assert.matches("%.lua:3: key_by: through: cannot reach the Kafka brokers at 127%.0%.0%.1:1",
      fails([[env:from_elements(1):key_by(function(x) return x end,
  {through = {kafka = {brokers = "127.0.0.1:1", topic = "t", partitions = 2, timeout = "500ms"}}})]]))
    assert.matches("%.lua:3: key_by: through: cannot connect to nats://127%.0%.0%.1:1",
      fails([[env:from_elements(1):key_by(function(x) return x end,
  {through = {nats = {url = "nats://127.0.0.1:1", stream = "S", subject = "s", partitions = 2}}})]]))
    assert.matches("%.lua:3: key_by through%.nats: subject must be a plain subject %(partition p is <subject>%.p%), "
      .. "got 's%.>'", fails([[env:from_elements(1):key_by("x",
  {through = {nats = {url = "nats://127.0.0.1:1", stream = "S", subject = "s.>", partitions = 2}}})]]))
    assert.matches("%.lua:3: key_by: through: topic 'two' on 127%.0%.0%.1:%d+ has 2 partitions, not 3",
      fails([[env:from_elements(1):key_by(function(x) return x end,
  {through = {kafka = {brokers = arg[1], topic = "two", partitions = 3}}})]], q(k.bootstrap)))
    assert.matches("%.lua:3: key_by through%.kafka: partitions must be an integer from 1 to 10000, got 0",
      fails([[env:from_elements(1):key_by("x", {through = {kafka = {brokers = "h:1", topic = "t", partitions = 0}}})]]))
    assert.matches("%.lua:3: key_by through%.kafka: brokers must be a non%-empty string, got nil",
      fails([[env:from_elements(1):key_by("x", {through = {kafka = {topic = "t", partitions = 2}}})]]))
    assert.matches("%.lua:3: key_by: through takes one of kafka = {...} or nats = {...}",
      fails([[env:from_elements(1):key_by("x", {through = {}})]]))
    assert.matches("%.lua:3: key_by: unknown option 'thru' %(through%)",
      fails([[env:from_elements(1):key_by("x", {thru = {}})]]))
    assert.matches("%.lua:3: key_by through%.kafka: unknown option 'partition'",
      fails([[env:from_elements(1):key_by("x", {through = {kafka = {brokers = "h:1", topic = "t", partition = 2}}})]]))
    -- at run time: a record the codec cannot write, a topic that holds other messages
    assert.matches("repartition to two@127%.0%.0%.1:%d+ %([^)]*%.lua:3%): cannot write record {[^\n]*}: "
      .. "[^\n]*function", fails([[env:from_elements(1):map(function(x) return {x = x, f = print} end)
  :key_by(function(r) return r.x end, {through = {kafka = {brokers = arg[1], topic = "two", partitions = 2}}})
  :process{process_element = function() end}
env:execute()]], q(k.bootstrap)))
    local _, e, c = job([[
local wm = require("wm")
local env = wm.env{}
env:from_elements("not a record of a writer"):write_kafka{brokers = arg[1], topic = "junk", format = "text"}
env:execute()]], q(k.bootstrap))
    assert.are.equal(0, c, e)
    assert.matches("repartition from junk@127%.0%.0%.1:%d+ %([^)]*%.lua:3%): offset 0 of junk/0: not a message "
      .. "of a repartitioning writer", fails([[env:from_elements(1):key_by(function(x) return x end,
  {through = {kafka = {brokers = arg[1], topic = "junk", partitions = 1}}}):process{process_element = function() end}
require("wm.through").cut(env, "read", 0, 1)
env:execute()]], q(k.bootstrap)))
  end)
end)

-- The job of the cut specs: readings from arg[1] through the stream arg[3] of the NATS
-- server at arg[2], summed per id in tumbling 5 s windows (timestamps in seconds).
local CUT_JOB = [[
local wm = require("wm")
local env = wm.env{watermark_interval = 0}
env:read_lines(arg[1]):parse_csv{"id", "ts:integer", "vc:integer"}
  :assign_timestamps_and_watermarks(wm.watermarks.bounded_out_of_orderness("1s"):with_timestamp_field("ts", 1000))
  :key_by("id", {through = {nats = {url = arg[2], stream = arg[3], subject = arg[3]:lower(), partitions = 2}}})
  :window(wm.windows.tumbling("5s"))
  :reduce(function(a, b) return {id = a.id, vc = a.vc + b.vc, ts = math.min(a.ts, b.ts)} end):print()
env:execute()]]

describe("key_by through nats", function()
  local n
  before_each(function() n = services.nats() end)
  after_each(function() n:stop() end)

  it("gives the results worked out by hand, and those of the job without the through", function()
    local input = helper.write_tmp(table.concat({"a,1,1", "b,2,2", "c,3,3", "a,4,4", "b,6,5", "a,7,6", "c,11,7",
      "b,12,8", "a,14,9", "c,16,10"}, "\n") .. "\n", ".csv")
    helper.finally(function() os.remove(input) end)
    local out, err, code = job(CUT_JOB, q(input) .. " " .. q(n.url) .. " REP")
    assert.are.equal(0, code, err)
    -- tumbling 5 s windows: a [0,5) 1+4, [5,10) 6, [10,15) 9; b [0,5) 2, [5,10) 5, [10,15) 8;
    -- c [0,5) 3, [10,15) 7, [15,20) 10
    assert.are.same(lines_of([[
{"id":"a","ts":1,"vc":5}
{"id":"a","ts":7,"vc":6}
{"id":"a","ts":14,"vc":9}
{"id":"b","ts":2,"vc":2}
{"id":"b","ts":6,"vc":5}
{"id":"b","ts":12,"vc":8}
{"id":"c","ts":3,"vc":3}
{"id":"c","ts":11,"vc":7}
{"id":"c","ts":16,"vc":10}
]]), lines_of(out))
    local plain, e2, c2 = job((CUT_JOB:gsub(':key_by%("id", {through = [^\n]*}%)', ':key_by("id")')),
      q(input) .. " " .. q(n.url) .. " REP")
    assert.are.equal(0, c2, e2)
    assert.are.same(lines_of(plain), lines_of(out))
    local again, e3, c3 = job(CUT_JOB, q(input) .. " " .. q(n.url) .. " REP", "-p 2 --threads 2")
    assert.are.equal(0, c3, e3)
    assert.are.same(lines_of(plain), lines_of(again))
  end)

  it("killed with SIGKILL at random moments and at the checkpoints' crash points, with checkpoints, "
    .. "gives the uninterrupted run's file", function()
    crash_runs("{nats = {url = arg[1], stream = 'BY_ID', subject = 'by_id', partitions = 2}}", n.url, "")
  end)

  it("cut: bad arguments, and plans it cannot cut, are errors at the line of the call", function()
    local function fails(body)
      local out, err, code = job([[
local wm = require("wm")
local through = require("wm.through")
local env = wm.env{}
local s = env:from_elements{{id = "a"}}
local sums = s:key_by("id", {through = {nats = {url = arg[1], stream = "C", subject = "c", partitions = 2}}})
  :process{process_element = function(_, r, out) out(r) end}
]] .. body, q(n.url))
      assert.are_not.equal(0, code, out)
      return err
    end
    assert.matches("%.lua:7: bad argument #2 to 'cut' %('write' or 'read' expected, got both%)",
      fails([[through.cut(env, "both", 0, 1)]]))
    assert.matches("%.lua:7: bad argument #3 to 'cut' %(partition 2 of 2%)", fails([[through.cut(env, "read", 2, 1)]]))
    assert.matches("%.lua:7: bad argument #3 to 'cut' %(writer 3 of 2%)", fails([[through.cut(env, "write", 3, 2)]]))
    assert.matches("%.lua:7: bad argument #4 to 'cut' %(the number of writers expected, got 0%)",
      fails([[through.cut(env, "write", 0, 0)]]))
    assert.matches("%.lua:8: cut: union %([^)]*%.lua:7%) reads both sides of the repartitioning",
      fails([[sums:union(s):print()
through.cut(env, "read", 0, 1)]]))
    assert.matches("%.lua:8: cut: the job has 2 repartitionings %(key_by with through%); a cut needs exactly one",
      fails([[s:key_by("id", {through = {nats = {url = arg[1], stream = "C", subject = "c", partitions = 2}}})
through.cut(env, "read", 0, 1)]]))
  end)

  it("the cut: writers and readers as separate processes; a reader's watermark waits for the slowest "
    .. "writer, and drops what a writer restored from a checkpoint sends again", function()
    local dir = helper.tmpdir()
    helper.finally(function() helper.rmdir(dir) end)
    local script = dir .. "/job.lua"
    local f = assert(io.open(script, "w"))
    f:write(CUT_JOB)
    f:close()
    local function file(name, text)
      local g = assert(io.open(dir .. "/" .. name, "w"))
      g:write(text)
      g:close()
      return dir .. "/" .. name
    end
    -- writer 0 is far ahead (100 s on) and ends first; writer 1's records come after its end
    local w0 = file("w0.csv", "a,100,1\nb,101,2\na,107,4\n")
    local w1 = file("w1.csv", "a,1,10\nb,2,20\na,3,30\nb,6,40\n")
    local function run(cut, path, extra)
      return helper.sh("WM_THROUGH_CUT=" .. cut .. " " .. helper.wmrun_path() .. " " .. (extra or "") .. " "
        .. q(script) .. " " .. q(path) .. " " .. q(n.url) .. " CUT")
    end
    -- writer 0 with checkpoints, crashed before its final checkpoint's MANIFEST: started
    -- again, it resumes from the first one and sends its three records again
    local ck = "--checkpoint-dir " .. q(dir .. "/ck") .. " --checkpoint-interval 0"
    local _, e, c = helper.sh("WM_CKPT_CRASH=before-manifest:2 WM_THROUGH_CUT=write:0:2 " .. helper.wmrun_bin
      .. " " .. ck .. " " .. q(script) .. " " .. q(w0) .. " " .. q(n.url) .. " CUT")
    assert.are.equal(99, c, e)
    _, e, c = run("write:0:2", w0, ck)
    assert.are.equal(0, c, e)
    assert.matches("resuming from checkpoint 1", e)
    _, e, c = run("write:1:2", w1)
    assert.are.equal(0, c, e)
    local out, errs = {}, ""
    for p = 0, 1 do
      local o, e2, c2 = run("read:" .. p .. ":2", w0, "--metrics")
      assert.are.equal(0, c2, e2)
      out[#out + 1] = o
      errs = errs .. e2
      for id in o:gmatch('"id":"(%w+)"') do -- every key in the partition of its hash
        assert.are.equal(p, fnv1a32(id) % 2, id .. " in partition " .. p)
      end
    end
    assert.are.equal(0, fnv1a32("a") % 2) -- (the two keys are in two partitions)
    assert.are.equal(1, fnv1a32("b") % 2)
    -- writer 1's records are not late: the readers had no watermark until it was heard of
    -- (writer 0's 106 s would have made them all late), and writer 0's records sent again
    -- were dropped once each
    assert.are.same(lines_of([[
{"id":"a","ts":100,"vc":1}
{"id":"b","ts":101,"vc":2}
{"id":"a","ts":107,"vc":4}
{"id":"a","ts":1,"vc":40}
{"id":"b","ts":2,"vc":20}
{"id":"b","ts":6,"vc":40}
]]), lines_of(table.concat(out)))
    assert.are.equal(3, dups(errs))
    assert.matches("writers heard 2 of 2, ended 2", errs)
  end)
end)
