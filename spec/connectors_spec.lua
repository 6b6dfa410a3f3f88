-- The Kafka and NATS JetStream connectors (docs/connectors.md), each test on a server it
-- starts itself on 127.0.0.1 (spec/services.lua): librdkafka's mock cluster, nats-server.
local helper = require("helper")
local services = require("services")

local q = services.quote

-- Runs a job script given as text: wmrun [opts] script args; stdout, stderr, exit code.
local function job(text, args, opts)
  local p = helper.write_tmp(text, ".lua")
  local out, err, code = helper.wmrun((opts or "") .. " " .. q(p) .. " " .. args)
  os.remove(p)
  return out, err, code
end

local sorted_lines = helper.sorted_lines

-- A file of sensor readings, in order within the out-of-orderness bound (1 s), so that a
-- job reading it per partition and one reading the file see no late record.
local function readings()
  local lines = {}
  for i = 1, 60 do
    local id = "s" .. (i % 4)
    local ts = i * 700 + ((i % 3 == 0) and -500 or 0)
    lines[#lines + 1] = string.format("%s,%d,%d", id, ts, i)
  end
  return helper.write_tmp(table.concat(lines, "\n") .. "\n", ".csv")
end

local WINDOWED = [[
  :parse_csv{"id", "ts:integer", "vc:integer"}
  :assign_timestamps_and_watermarks(wm.watermarks.bounded_out_of_orderness("1s"):with_timestamp_field("ts"))
  :key_by("id"):window(wm.windows.tumbling("5s")):sum("vc"):print()
]]

local function file_job(path)
  local out, err, code = job([[
local wm = require("wm")
local env = wm.env{watermark_interval = 0}
env:read_lines(arg[1])]] .. WINDOWED .. [[
env:execute()]], q(path))
  assert.are.equal(0, code, err)
  return out
end

-- The input of the crash specs: 3000 readings on two keys (s0, s1), in order within 1 s.
local function crash_input(dir)
  local lines = {}
  for i = 1, 3000 do
    lines[i] = string.format("s%d,%d,%d", i % 2, i * 50 + ((i % 3 == 0) and -400 or 0), i % 7 + 1)
  end
  local inp = dir .. "/in.csv"
  local f = assert(io.open(inp, "w"))
  f:write(table.concat(lines, "\n"), "\n")
  f:close()
  return inp
end

-- What a job `<source>:print()` prints (arg[1]: addr), e.g. a bounded read of a whole topic.
local function read_all(source, addr)
  local out, err, code = job([[
local wm = require("wm")
local env = wm.env{}
env:]] .. source .. [[:print()
env:execute()]], q(addr))
  assert.are.equal(0, code, err)
  return out
end

-- crash_input(dir) written by a job `read_lines(file):<sink>` (arg[2]: addr); its path.
local function load_crash_input(dir, addr, sink)
  local inp = crash_input(dir)
  local _, err, code = job([[
local wm = require("wm")
local env = wm.env{}
env:read_lines(arg[1]):]] .. sink .. [[

env:execute()]], q(inp) .. " " .. q(addr))
  assert.are.equal(0, code, err)
  return inp
end

local function now_ms()
  local clock = io.popen("date +%s%N")
  local ns = clock:read("n")
  clock:close()
  return ns / 1e6
end

-- The reference run (tag "ref", timed), then runs with checkpoints (tag "run") crashed at
-- the crash points of their third checkpoint and killed with SIGKILL at random moments
-- within the reference's duration, then one to the end. run(tag): the job's arguments;
-- par: wmrun's options before them ("-p 2 --threads 2 "; default none). On two threads a
-- checkpoint waits for its barriers to cross: fewer of them complete in the same time, so
-- the runs crash at their second and are killed within the first half of the duration
-- (the runs before the last must not have read the whole input already).
local function crash_runs(dir, run, kills, seed, par)
  local plain = run
  run = function(tag) return (par or "") .. plain(tag) end
  local nth, window = par and 2 or 3, par and 0.5 or 1
  local t0 = now_ms()
  local _, e0, c0 = helper.wmrun(run("ref"))
  local took = math.max(now_ms() - t0, 50)
  assert.are.equal(0, c0, e0)
  local ck = "--checkpoint-dir " .. q(dir .. "/ck") .. " --checkpoint-interval 5ms "
  for _, point in ipairs{"after-parts", "before-manifest", "after-manifest"} do
    local _, e, c = helper.sh("WM_CKPT_CRASH=" .. point .. ":" .. nth .. " " .. helper.wmrun_bin .. " " .. ck
      .. run("run"))
    -- (each of them reaches its checkpoint before the input ends: on two threads too, where
    -- a checkpoint's barriers cross between the threads while the sources read on)
    assert.are.equal(99, c, point .. ": " .. e)
  end
  math.randomseed(tonumber(os.getenv("C15SEED")) or seed)
  for _ = 1, kills do
    local cmd = string.format("%s %s %s & p=$!; sleep %.3f; kill -KILL $p 2>/dev/null; wait $p",
      helper.wmrun_bin, ck, run("run"), math.random() * window * took / 1000)
    local _, e, c = helper.sh("sh -c " .. q(cmd))
    assert.is_true(c == 137 or c == 0, "exit status " .. tostring(c) .. ": " .. e)
  end
  local _, e, c = helper.wmrun(ck .. run("run"))
  assert.are.equal(0, c, e)
end

-- A mock cluster with `topics`, a directory of the test's own and the path of an output
-- file in it; the background job put in `.run` is killed at the end, if it still runs.
local function bg_fixture(topics)
  local f = {k = services.kafka(topics), dir = helper.tmpdir()}
  f.out = f.dir .. "/out.txt"
  helper.finally(function()
    if f.run then f.run.kill() end
    f.k:stop()
    helper.rmdir(f.dir)
  end)
  return f
end

-- A mock cluster with the topic "in" (2 partitions) holding crash_input's lines, s0's in
-- partition 0 and s1's in partition 1, and a directory of the test's own.
local function kafka_crash_input()
  local k = services.kafka{"in:2"}
  local dir = helper.tmpdir()
  helper.finally(function() k:stop(); helper.rmdir(dir) end)
  local inp = load_crash_input(dir, k.bootstrap, [[write_kafka{brokers = arg[2], topic = "in", format = "text",
  partition = function(line) return tonumber(line:match("^s(%d)")) end}]])
  return k, dir, inp
end

describe("kafka connector", function()
  it("a file written with write_kafka and read back by a windowed job gives the file job's results", function()
    local k = services.kafka{"readings:3"}
    local path = readings()
    helper.finally(function() k:stop(); os.remove(path) end)
    local _, err, code = job([[
local wm = require("wm")
local env = wm.env{}
env:read_lines(arg[1]):write_kafka{brokers = arg[2], topic = "readings", format = "text",
  key = function(line) return line:match("^[^,]+") end}
env:execute()]], q(path) .. " " .. q(k.bootstrap))
    assert.are.equal(0, code, err)
    local out
    out, err, code = job([[
local wm = require("wm")
local env = wm.env{watermark_interval = 0}
env:read_kafka{brokers = arg[1], topic = "readings", bounded = "latest"}]] .. WINDOWED .. [[
env:execute()]], q(k.bootstrap))
    assert.are.equal(0, code, err)
    local expected = file_job(path)
    assert.is_true(#expected > 0)
    assert.are.same(sorted_lines(expected), sorted_lines(out))
  end)

  it("at --threads 2 a partition's records keep their order: the windowed job gives the file job's results", function() -- luacheck: ignore 631
    local k, _, inp = kafka_crash_input()
    -- sum keeps the other fields of the window's first record: the output depends on the
    -- order in which one key's records arrive, which must be the partition's
    local out, err, code = job([[
local wm = require("wm")
local env = wm.env{watermark_interval = 0}
env:read_kafka{brokers = arg[1], topic = "in", bounded = "latest"}]] .. WINDOWED .. [[
env:execute()]], q(k.bootstrap), "-p 2 --threads 2")
    assert.are.equal(0, code, err)
    local expected = file_job(inp)
    assert.is_true(#expected > 0)
    assert.are.same(sorted_lines(expected), sorted_lines((out:gsub("%f[^\n%z]%d+> ", "")))) -- print's "1> "
  end)

  -- At --threads 2 (-p 2; the file sink has one instance) the files are compared as sorted
  -- lines: a sink fed by two threads interleaves them in no fixed order, even uninterrupted.
  for _, threads in ipairs{1, 2} do
  local at = threads == 1 and "" or " (--threads 2)"
  it("a checkpointing job killed at random moments gives the uninterrupted run's file, and commits the group's offsets" .. at, function() -- luacheck: ignore 631
    local k, dir = kafka_crash_input()
    local jp = dir .. "/job.lua"
    local f = assert(io.open(jp, "w"))
    f:write([[
local wm = require("wm")
local env = wm.env{watermark_interval = 0}
env:read_kafka{brokers = arg[1], topic = "in", group = arg[2], bounded = "latest"}
  :map(function(l) local x = 0; for i = 1, tonumber(arg[4]) do x = x + i end; return l end)
  :parse_csv{"id", "ts:integer", "vc:integer"}
  :assign_timestamps_and_watermarks(wm.watermarks.bounded_out_of_orderness("1s"):with_timestamp_field("ts"))
  :key_by("id"):window(wm.windows.tumbling("1s")):sum("vc")
  :write_lines(arg[3] .. "/" .. arg[2] .. ".txt", "json"):set_parallelism(1)
env:execute()]])
    f:close()
    -- (the map spends more time per record on two threads, so that the crash and kill runs
    -- land mid-input there too)
    local spin = threads == 1 and 20000 or 60000
    local function run(tag) return q(jp) .. " " .. q(k.bootstrap) .. " " .. tag .. " " .. q(dir) .. " " .. spin end
    crash_runs(dir, run, threads == 1 and 6 or 4, 11, threads == 2 and "-p 2 --threads 2 " or nil)
    local ref = helper.read(dir .. "/ref.txt")
    assert.is_true(#ref > 0)
    if threads == 1 then
      assert.are.equal(ref, helper.read(dir .. "/run.txt"))
    else
      assert.are.same(sorted_lines(ref), sorted_lines(helper.read(dir .. "/run.txt")))
    end
    -- the final checkpoint's positions are the group's offsets: nothing is left to read
    -- from them; the reference run (no checkpoints) committed none
    local count = [[
local wm = require("wm")
local env = wm.env{}
env:read_kafka{brokers = arg[1], topic = "in", group = arg[2], start = "committed", bounded = "latest"}:print()
env:execute()]]
    local out, e, c = job(count, q(k.bootstrap) .. " run")
    assert.are.equal(0, c, e)
    assert.are.equal("", out)
    out, e, c = job(count, q(k.bootstrap) .. " ref")
    assert.are.equal(0, c, e)
    assert.are.equal(3000, select(2, out:gsub("\n", "")))
  end)
  end

  -- The run that wrote the final checkpoint may die before Kafka has its (asynchronous)
  -- commit: the next start, which finds that checkpoint and has nothing to read, commits its
  -- positions (the intermittent failure of the kill spec above when a kill came just there).
  it("a start that finds the final checkpoint commits its positions to the group", function()
    local k, dir = kafka_crash_input()
    local jp = dir .. "/job.lua"
    local f = assert(io.open(jp, "w"))
    f:write([[
local wm = require("wm")
local env = wm.env{}
env:read_kafka{brokers = arg[1], topic = "in", group = "g1", bounded = "latest"}:write_lines(arg[2])
env:execute()]])
    f:close()
    local ck = "--checkpoint-dir " .. q(dir .. "/ck") .. " "
    -- every commit of the first run is refused: the final checkpoint is written, its
    -- positions never reach the group
    k:request_error("OffsetCommit", 1000, "GROUP_AUTHORIZATION_FAILED")
    local _, err, code = helper.wmrun(ck .. q(jp) .. " " .. q(k.bootstrap) .. " " .. q(dir .. "/a.txt"))
    assert.are.equal(0, code, err)
    assert.matches("cannot commit the offsets", err)
    k:request_error_clear("OffsetCommit") -- the broker accepts commits again
    _, err, code = helper.wmrun(ck .. q(jp) .. " " .. q(k.bootstrap) .. " " .. q(dir .. "/a.txt"))
    assert.are.equal(0, code, err)
    assert.matches("nothing new to do", err)
    local out, e, c = job([[
local wm = require("wm")
local env = wm.env{}
env:read_kafka{brokers = arg[1], topic = "in", group = "g1", start = "committed", bounded = "latest"}:print()
env:execute()]], q(k.bootstrap))
    assert.are.equal(0, c, e)
    assert.are.equal("", out)
  end)

  it("at --threads 2, group commits the broker refuses are one warning per source instance, and the output is the one of a run without checkpoints", function() -- luacheck: ignore 631
    local k = services.kafka{"in:2"}
    local dir = helper.tmpdir()
    helper.finally(function() k:stop(); helper.rmdir(dir) end)
    local _, err, code = job([[
local wm = require("wm")
local env = wm.env{}
local recs = {}
for i = 1, 400 do recs[i] = string.format("s%d,%d,%d", i % 2, i * 50, i % 7) end
env:from_elements(recs):write_kafka{brokers = arg[1], topic = "in", format = "text",
  partition = function(line) return tonumber(line:match("^s(%d)")) end}
env:execute()]], q(k.bootstrap))
    assert.are.equal(0, code, err)
    -- every commit of the group from now on is refused (the thread that completes a
    -- checkpoint commits the sources of both threads)
    k:request_error("OffsetCommit", 1000, "GROUP_AUTHORIZATION_FAILED")
    local jp = dir .. "/job.lua"
    local f = assert(io.open(jp, "w"))
    f:write([[
local wm = require("wm")
local env = wm.env{watermark_interval = 0, parallelism = 2}
env:read_kafka{brokers = arg[1], topic = "in", group = "g", bounded = "latest"}
  :parse_csv{"id", "ts:integer", "vc:integer"}
  :assign_timestamps_and_watermarks(wm.watermarks.bounded_out_of_orderness("1s"):with_timestamp_field("ts"))
  :key_by("id"):window(wm.windows.tumbling("1s")):sum("vc")
  :write_lines(arg[2], "json"):set_parallelism(1)
env:execute()]])
    f:close()
    local ref, run = dir .. "/ref.txt", dir .. "/run.txt"
    _, err, code = helper.wmrun("--threads 2 " .. q(jp) .. " " .. q(k.bootstrap) .. " " .. q(ref))
    assert.are.equal(0, code, err)
    _, err, code = helper.wmrun("--threads 2 --checkpoint-dir " .. q(dir .. "/ck") .. " --checkpoint-interval 5ms "
      .. q(jp) .. " " .. q(k.bootstrap) .. " " .. q(run))
    assert.are.equal(0, code, err)
    assert.are.same(sorted_lines(helper.read(ref)), sorted_lines(helper.read(run)))
    assert.is_true(#helper.read(ref) > 0)
    -- once per source instance, each reported on its own thread
    for i = 1, 2 do
      local _, warnings = err:gsub("wmrun: warning: read_kafka%(in@[^)]*%) %([^)]*%) " .. i .. "/2: cannot "
        .. "commit the offsets of the group at 127%.0%.0%.1:%d+: Broker: Group authorization failed %(the "
        .. "positions are in the checkpoint; only monitoring misses them%)\n", "")
      assert.are.equal(1, warnings, err)
    end
    assert.are.equal(2, select(2, err:gsub("warning", "")), err)
  end)

  -- Partition 0 holds a record far ahead of partition 1's. Read with one generator per
  -- partition, partition 1's records are not late (expected output written by hand); the
  -- control, one generator after a rebalance, drops them.
  local FAR = [[
local wm = require("wm")
local env = wm.env{watermark_interval = 0}
env:from_elements({p = 0, id = "b", ts = 100000, vc = 1}, {p = 0, id = "b", ts = 100500, vc = 1},
                  {p = 1, id = "a", ts = 1000, vc = 1}, {p = 1, id = "a", ts = 2000, vc = 2},
                  {p = 1, id = "a", ts = 3000, vc = 3})
  :write_kafka{brokers = arg[1], topic = "ev", partition = "p"}
env:execute()
local env2 = wm.env{watermark_interval = 0}
local s = env2:read_kafka{brokers = arg[1], topic = "ev", bounded = "latest"}:parse_json()
if arg[2] == "control" then s = s:rebalance() end
local strategy = wm.watermarks.monotonous()
if arg[2] == "custom" then -- a Lua generator: its state (the largest timestamp) is per partition
  strategy = wm.watermarks.for_generator(function()
    return {max = math.mininteger,
            on_event = function(self, _, ts) if ts > self.max then self.max = ts end end,
            on_periodic_emit = function(self, out)
              if self.max > math.mininteger then out:emit_watermark(self.max - 1) end
            end}
  end)
end
s:assign_timestamps_and_watermarks(strategy:with_timestamp_field("ts"))
  :key_by("id"):window(wm.windows.tumbling("10s")):sum("vc"):print()
env2:execute()]]

  it("a partition far ahead does not make another partition's records late", function()
    local k = services.kafka{"ev:2"}
    helper.finally(function() k:stop() end)
    local out, err, code = job(FAR, q(k.bootstrap) .. " per-partition", "--metrics")
    assert.are.equal(0, code, err)
    assert.are.equal('{"id":"a","p":1,"ts":1000,"vc":6}\n{"id":"b","p":0,"ts":100000,"vc":2}\n', out)
    assert.matches("timestamps/watermarks %[ev/0%]", err)
    assert.matches("timestamps/watermarks %[ev/1%]", err)
  end)

  it("a custom Lua generator runs once per partition, each with its own state", function()
    local k = services.kafka{"ev:2"}
    helper.finally(function() k:stop() end)
    local out, err, code = job(FAR, q(k.bootstrap) .. " custom")
    assert.are.equal(0, code, err)
    assert.are.equal('{"id":"a","p":1,"ts":1000,"vc":6}\n{"id":"b","p":0,"ts":100000,"vc":2}\n', out)
  end)

  it("(control) one generator over the merged partitions drops the records behind", function()
    local k = services.kafka{"ev:2"}
    helper.finally(function() k:stop() end)
    local out, err, code = job(FAR, q(k.bootstrap) .. " control")
    assert.are.equal(0, code, err)
    assert.are.equal('{"id":"b","p":0,"ts":100000,"vc":2}\n', out)
  end)

  it("an idle partition does not hold the watermark back after the idleness timeout", function()
    local fx = bg_fixture{"ev:2"}
    local k, dir, out = fx.k, fx.dir, fx.out
    local _, err, code = job([[
local wm = require("wm")
local env = wm.env{}
env:from_elements({p = 0, id = "a", ts = 1000}, {p = 0, id = "a", ts = 2000}, {p = 0, id = "a", ts = 12000})
  :write_kafka{brokers = arg[1], topic = "ev", partition = "p"}
env:execute()]], q(k.bootstrap))
    assert.are.equal(0, code, err)
    -- unbounded: partition 1 never gets a record; the window [0, 10 s) can only fire
    -- while the job runs once partition 1 has turned idle
    local run = helper.bg_job(dir, string.format("local brokers, out = %q, %q\n", k.bootstrap, out) .. [[
local wm = require("wm")
local env = wm.env{watermark_interval = 0}
env:read_kafka{brokers = brokers, topic = "ev",
  watermarks = wm.watermarks.monotonous():with_idleness("300ms")
    :with_timestamp_assigner(function(line) return tonumber(line:match('"ts":(%d+)')) end)}
  :map(function(line) return {id = line:match('"id":"(%w+)"'), ts = tonumber(line:match('"ts":(%d+)'))} end)
  :key_by("id"):window(wm.windows.tumbling("10s")):count()
  :sink(function(r) local f = io.open(out, "a"); f:write(r.key, " ", r.count, "\n"); f:close() end)
env:execute()]])
    fx.run = run
    local got = services.poll(function()
      local f = io.open(out)
      if not f then return nil end
      local s = f:read("a")
      f:close()
      return s ~= "" and s or nil
    end, 600)
    assert.are.equal("a 2\n", got, helper.read_or_empty(run.err))
  end)

  it("alignment pauses a partition that runs ahead (visible in --metrics)", function()
    local k = services.kafka{"ev:2"}
    helper.finally(function() k:stop() end)
    local out, err, code = job([[
local wm = require("wm")
local env = wm.env{}
local recs = {}
for i = 0, 9 do recs[#recs + 1] = {p = 0, id = "a", ts = i * 1000} end
recs[#recs + 1] = {p = 1, id = "b", ts = 1000000}
recs[#recs + 1] = {p = 1, id = "b", ts = 1001000}
env:from_elements(recs):write_kafka{brokers = arg[1], topic = "ev", partition = "p"}
env:execute()
local env2 = wm.env{watermark_interval = 0}
env2:read_kafka{brokers = arg[1], topic = "ev", bounded = "latest",
  watermarks = wm.watermarks.monotonous():with_watermark_alignment("g", "10s")
    :with_timestamp_assigner(function(line) return tonumber(line:match('"ts":(%d+)')) end)}
  :map(function(line) return {id = line:match('"id":"(%w+)"')} end)
  :key_by("id"):window(wm.windows.tumbling("1h")):count()
  :map(function(r) return r.key .. " " .. r.count end):print()
env2:execute()]], q(k.bootstrap), "--metrics")
    assert.are.equal(0, code, err)
    assert.are.equal("a 10\nb 2\n", out, err)
    assert.matches("alignment: 'read_kafka%(ev@[^']*' partition ev/1: paused 1 times "
      .. "%(group 'g', max drift 10000 ms%)", err)
    assert.matches("alignment: 'read_kafka%(ev@[^']*' partition ev/0: paused 0 times", err)
  end)

  it("an instance that owns no partition is idle", function()
    local k = services.kafka{"one:1"}
    helper.finally(function() k:stop() end)
    local _, err, code = job([[
local wm = require("wm")
local env = wm.env{parallelism = 2}
env:read_kafka{brokers = arg[1], topic = "one", bounded = "latest"}:map(function(s) return s end):print()
env:execute()]], q(k.bootstrap), "--trace-watermarks")
    assert.are.equal(0, code, err)
    assert.matches("%[watermark%] map %([^)]*%) 2/2: channel 1: idle %(watermark MIN%)", err)
    assert.not_matches("1/2: channel 1: idle", err)
  end)

  it("metadata = true gives tables with the message's topic, partition, offset and key", function()
    local k = services.kafka{"ev:1"}
    helper.finally(function() k:stop() end)
    local out, err, code = job([[
local wm = require("wm")
local env = wm.env{}
env:from_elements("x", "y"):write_kafka{brokers = arg[1], topic = "ev", format = "text",
  key = function(s) return "k" .. s end}
env:execute()
local env2 = wm.env{}
env2:read_kafka{brokers = arg[1], topic = "ev", bounded = "latest", metadata = true}
  :map(function(m) return table.concat({m.topic, m.partition, m.offset, m.key, m.value}, " ") end):print()
env2:execute()]], q(k.bootstrap))
    assert.are.equal(0, code, err)
    assert.are.equal("ev 0 0 kx x\nev 0 1 ky y\n", out)
  end)

  it("a broker that goes down while an unbounded job reads is reported once, and the job reads on after it comes back", function() -- luacheck: ignore 631
    local fx = bg_fixture{"ev:2"}
    local k, dir, out = fx.k, fx.dir, fx.out
    local write = [[
local wm = require("wm")
local env = wm.env{}
local recs = {}
for i = 1, 20 do recs[i] = arg[2] .. i end
env:from_elements(recs):write_kafka{brokers = arg[1], topic = "ev", format = "text",
  partition = function(s) return tonumber(s:match("%d+")) % 2 end}
env:execute()]]
    local _, err, code = job(write, q(k.bootstrap) .. " a")
    assert.are.equal(0, code, err)
    local run = helper.bg_job(dir, string.format("local brokers, out = %q, %q\n", k.bootstrap, out) .. [[
local wm = require("wm")
local env = wm.env{}
env:read_kafka{brokers = brokers, topic = "ev", properties = {["reconnect.backoff.max.ms"] = 200}}
  :sink(function(v) local o = io.open(out, "a"); o:write(v, "\n"); o:close() end)
env:execute()]])
    fx.run = run
    local function log() return helper.read_or_empty(run.err) end
    local function lines_in_file(n)
      return services.poll(function()
        local t = sorted_lines(helper.read_or_empty(out))
        return #t >= n and t or nil
      end, 600)
    end
    assert.is_truthy(lines_in_file(20), log())
    k:down(-1)
    assert.is_truthy(services.poll(function() return log():find("lost the connection", 1, true) end, 600), log())
    k:up(-1)
    _, err, code = job(write, q(k.bootstrap) .. " b")
    assert.are.equal(0, code, err)
    local got = lines_in_file(40)
    assert.is_truthy(got, log())
    assert.is_truthy(services.poll(function() return log():find("reconnected", 1, true) end, 600), log())
    -- the uninterrupted run: the topic read from its start to its end
    local ref = read_all([[read_kafka{brokers = arg[1], topic = "ev", bounded = "latest"}]], k.bootstrap)
    assert.are.equal(40, #sorted_lines(ref))
    assert.are.same(sorted_lines(ref), got)
    local e = log()
    local _, lost = e:gsub("lost the connection", "")
    assert.are.equal(1, lost, e)
    assert.matches("wmrun: read_kafka%(ev@127%.0%.0%.1:%d+%) %([^)]*%): lost the connection to the Kafka "
      .. "brokers at 127%.0%.0%.1:%d+: [^\n]* %(reconnecting%)\n", e)
    assert.matches("wmrun: read_kafka%(ev@127%.0%.0%.1:%d+%) %([^)]*%): reconnected to the Kafka brokers "
      .. "at 127%.0%.0%.1:%d+\n", e)
  end)

  it("while the brokers are down, checkpoints go on and SIGTERM stops with a checkpoint: group commits do not wait for the brokers", function() -- luacheck: ignore 631
    local fx = bg_fixture{"ev:2"}
    local k, dir, out = fx.k, fx.dir, fx.out
    local _, err, code = job([[
local wm = require("wm")
local env = wm.env{}
env:from_elements("a", "b", "c", "d"):write_kafka{brokers = arg[1], topic = "ev", format = "text"}
env:execute()]], q(k.bootstrap))
    assert.are.equal(0, code, err)
    local run = helper.bg_job(dir, string.format("local brokers, out = %q, %q\n", k.bootstrap, out) .. [[
local wm = require("wm")
local env = wm.env{}
env:read_kafka{brokers = brokers, topic = "ev", group = "g"}
  :sink(function(v) local o = io.open(out, "a"); o:write(v, "\n"); o:close() end)
env:execute()]], "--checkpoint-dir " .. q(dir .. "/ck") .. " --checkpoint-interval 20ms")
    fx.run = run
    local function log() return helper.read_or_empty(run.err) end
    assert.is_truthy(services.poll(function() return #sorted_lines(helper.read_or_empty(out)) == 4 end, 600), log())
    k:down(-1)
    assert.is_truthy(services.poll(function() return log():find("lost the connection", 1, true) end, 600), log())
    -- a synchronous commit would hold the loop (and the coordinator) until librdkafka gives
    -- the commit up; handed over, the checkpoint and the stop come at once
    run.signal("TERM")
    assert.is_truthy(services.poll(function() return log():find("stopped by SIGTERM with checkpoint", 1, true) end,
      300), log())
    k:up(-1) -- closing the consumer waits for the last commit (or read_kafka's timeout)
    assert.are.equal(0, services.poll(run.done, 1200), log())
  end)

  it("a topic that does not exist fails at the job line, naming the topic and the brokers", function()
    local k = services.kafka{"ev:1"}
    helper.finally(function() k:stop() end)
    -- (the mock cluster creates topics on demand: it is told to answer as a broker without them)
    k:topic_error("nope", "UNKNOWN_TOPIC_OR_PART")
    local _, err, code = job([[
local wm = require("wm")
local env = wm.env{}
env:read_kafka{brokers = arg[1], topic = "nope"}:print()
env:execute()]], q(k.bootstrap))
    assert.are.equal(1, code)
    assert.matches("%.lua:3: read_kafka: topic 'nope' does not exist on 127%.0%.0%.1:%d+\n", err)
  end)

  it("an unreachable broker fails at the job line, naming the connector and the address", function()
    local _, err, code = job([[
local wm = require("wm")
local env = wm.env{}
env:read_kafka{brokers = "127.0.0.1:1", topic = "ev", timeout = "500ms"}:print()
env:execute()]], "")
    assert.are.equal(1, code)
    assert.matches("%.lua:3: read_kafka: cannot reach the Kafka brokers at 127%.0%.0%.1:1", err)
  end)

  it("checks its options like the other sources", function()
    local _, err, code = job([[
local wm = require("wm")
wm.env{}:read_kafka{brokers = "127.0.0.1:1", topic = "ev", start = "oldest"}]], "")
    assert.are.equal(1, code)
    assert.matches("read_kafka: start must be one of 'committed', 'earliest', 'latest', {timestamp = n}, "
      .. "got oldest", err)
  end)
end)

describe("nats connector", function()
  it("a file written with write_nats and read back by a windowed job gives the file job's results", function()
    local n = services.nats()
    local path = readings()
    helper.finally(function() n:stop(); os.remove(path) end)
    local _, err, code = job([[
local wm = require("wm")
local env = wm.env{}
env:read_lines(arg[1]):write_nats{url = arg[2], stream = "READINGS", format = "text",
  subject = function(line) return "readings." .. line:match("^[^,]+") end}
env:execute()]], q(path) .. " " .. q(n.url))
    assert.are.equal(0, code, err)
    local out
    out, err, code = job([[
local wm = require("wm")
local env = wm.env{watermark_interval = 0}
env:read_nats{url = arg[1], stream = "READINGS", subject = "readings.>", bounded = "latest"}]] .. WINDOWED .. [[
env:execute()]], q(n.url), "--metrics")
    assert.are.equal(0, code, err)
    assert.matches("timestamps/watermarks %[readings%.s0%]", err) -- one generator per subject
    local expected = file_job(path)
    assert.is_true(#expected > 0)
    assert.are.same(sorted_lines(expected), sorted_lines(out))
  end)

  it("examples/connectors_nats.lua (docs/connectors.md's quick start) gives the sums worked out by hand", function()
    local n = services.nats()
    helper.finally(function() n:stop() end)
    local out, err, code = helper.wmrun(q(helper.root .. "/examples/connectors_nats.lua") .. " " .. q(n.url))
    assert.are.equal(0, code, err)
    assert.are.equal("", err)
    -- 5 s windows of examples/data/connectors_sensors.csv, per sensor (first record, vc summed)
    assert.are.same(sorted_lines([[
{"id":"s1","ts":1,"vc":3}
{"id":"s1","ts":7,"vc":1}
{"id":"s1","ts":11,"vc":3}
{"id":"s2","ts":2,"vc":1}
{"id":"s2","ts":6,"vc":2}
{"id":"s2","ts":12,"vc":1}
{"id":"s3","ts":4,"vc":5}
{"id":"s3","ts":8,"vc":1}
{"id":"s3","ts":13,"vc":2}
]]), sorted_lines(out))
  end)

  it("gives every message a deterministic Nats-Msg-Id: the same output again is de-duplicated", function()
    local n = services.nats()
    helper.finally(function() n:stop() end)
    local write = [[
local wm = require("wm")
local env = wm.env{}
env:from_elements("a", "b", "c"):write_nats{url = arg[1], stream = "OUT", subject = "out", format = "text",
  id_prefix = "job1"}
env:execute()]]
    for _ = 1, 2 do
      local _, err, code = job(write, q(n.url))
      assert.are.equal(0, code, err)
    end
    local out, err, code = job([[
local wm = require("wm")
local env = wm.env{}
env:read_nats{url = arg[1], stream = "OUT", bounded = "latest", metadata = true}
  :map(function(m) return m.sequence .. " " .. m.subject .. " " .. m.value end):print()
env:execute()]], q(n.url))
    assert.are.equal(0, code, err)
    assert.are.equal("1 out a\n2 out b\n3 out c\n", out)
  end)

  -- (at --threads 2 the files are compared as sorted lines, as for Kafka)
  for _, threads in ipairs{1, 2} do
  local at = threads == 1 and "" or " (--threads 2)"
  it("a checkpointing job killed at random moments and at the crash points gives the uninterrupted run's file and stream" .. at, function() -- luacheck: ignore 631
    local n = services.nats()
    local dir = helper.tmpdir()
    helper.finally(function() n:stop(); helper.rmdir(dir) end)
    load_crash_input(dir, n.url, [[write_nats{url = arg[2], stream = "IN", format = "text",
  subject = function(line) return "in." .. line:match("^[^,]+") end}]])
    -- arg[2]: "ref" or "run", the name of the output file and of the output stream
    local jp = dir .. "/job.lua"
    local f = assert(io.open(jp, "w"))
    f:write([[
local wm = require("wm")
local env = wm.env{watermark_interval = 0}
local tag = arg[2]
-- (the map spends a little time per record, so that checkpoints and kills land mid-input)
local sums = env:read_nats{url = arg[1], stream = "IN", subject = "in.>", bounded = "latest"}
  :map(function(l) local x = 0; for i = 1, tonumber(arg[4]) do x = x + i end; return l end)
  :parse_csv{"id", "ts:integer", "vc:integer"}
  :assign_timestamps_and_watermarks(wm.watermarks.bounded_out_of_orderness("1s"):with_timestamp_field("ts"))
  :key_by("id"):window(wm.windows.tumbling("1s")):sum("vc")
sums:write_lines(arg[3] .. "/" .. tag .. ".txt", "json"):set_parallelism(1)
sums:write_nats{url = arg[1], stream = tag:upper(), subject = "out." .. tag, format = "json", id_prefix = tag}
env:execute()]])
    f:close()
    -- (the map spends more time per record on two threads, so that the crash and kill runs
    -- land mid-input there too)
    local spin = threads == 1 and 20000 or 60000
    local function run(tag) return q(jp) .. " " .. q(n.url) .. " " .. tag .. " " .. q(dir) .. " " .. spin end
    local function count(stream)
      local out, e, c = job([[
local wm = require("wm")
local env = wm.env{}
env:read_nats{url = arg[1], stream = arg[2], bounded = "latest"}:print()
env:execute()]], q(n.url) .. " " .. stream)
      assert.are.equal(0, c, e)
      local k = 0
      for _ in out:gmatch("[^\n]+") do k = k + 1 end
      return k, out
    end
    crash_runs(dir, run, threads == 1 and 8 or 4, 7, threads == 2 and "-p 2 --threads 2 " or nil)
    local ref = helper.read(dir .. "/ref.txt")
    assert.is_true(#ref > 0)
    if threads == 1 then
      assert.are.equal(ref, helper.read(dir .. "/run.txt"))
    else
      if os.getenv("C15KEEP") then os.execute("rm -rf /tmp/c15keep; cp -r " .. dir .. " /tmp/c15keep") end
      assert.are.same(sorted_lines(ref), sorted_lines(helper.read(dir .. "/run.txt")))
    end
    local nref, outref = count("REF")
    local nrun, outrun = count("RUN")
    assert.is_true(nref > 0)
    assert.are.equal(nref, nrun) -- no duplicate (Nats-Msg-Id), none lost
    assert.are.same(sorted_lines(outref), sorted_lines(outrun))
  end)
  end

  it("a lost connection is reported once naming the connector and the server, and reading goes on after it", function() -- luacheck: ignore 631
    local n = services.nats()
    local dir = helper.tmpdir()
    local out = dir .. "/out.txt"
    local run
    helper.finally(function()
      if run then run.kill() end
      n:stop()
      helper.rmdir(dir)
    end)
    local write = [[
local wm = require("wm")
local env = wm.env{}
env:from_elements(arg[2]):write_nats{url = arg[1], stream = "EV", subject = "ev", format = "text",
  id_prefix = arg[2]}
env:execute()]]
    local _, err, code = job(write, q(n.url) .. " a")
    assert.are.equal(0, code, err)
    run = helper.bg_job(dir, string.format("local url, out = %q, %q\n", n.url, out) .. [[
local wm = require("wm")
local env = wm.env{}
env:read_nats{url = url, stream = "EV"}
  :sink(function(v) local o = io.open(out, "a"); o:write(v, "\n"); o:close() end)
env:execute()]])
    local function log() return helper.read_or_empty(run.err) end
    local function has(text)
      return services.poll(function()
        local h = io.open(out)
        local s = h and h:read("a") or ""
        if h then h:close() end
        return s == text
      end, 600)
    end
    assert.is_truthy(has("a\n"), log())
    n:kill()
    assert.is_truthy(services.poll(function() return log():find("lost the connection", 1, true) end, 600))
    n:start_again()
    assert.is_truthy(services.poll(function() return log():find("reconnected", 1, true) end, 600), log())
    _, err, code = job(write, q(n.url) .. " b")
    assert.are.equal(0, code, err)
    assert.is_truthy(has("a\nb\n"), log())
    assert.matches("wmrun: read_nats%(EV@nats://127%.0%.0%.1:%d+%) %([^)]*%): the NATS server at "
      .. "nats://127%.0%.0%.1:%d+: lost the connection %(reconnecting%)", log())
    local _, lost = log():gsub("lost the connection", "")
    assert.are.equal(1, lost, log())
    -- the uninterrupted run: the stream read from its start to its end
    assert.are.equal("a\nb\n", read_all([[read_nats{url = arg[1], stream = "EV", bounded = "latest"}]], n.url))
  end)

  it("a missing stream and an unreachable server fail at the job line, naming them", function()
    local n = services.nats()
    helper.finally(function() n:stop() end)
    local _, err, code = job([[
local wm = require("wm")
wm.env{}:read_nats{url = arg[1], stream = "NOPE"}]], q(n.url))
    assert.are.equal(1, code)
    assert.matches("%.lua:2: read_nats: stream 'NOPE' does not exist on nats://127%.0%.0%.1:%d+", err)
    _, err, code = job([[
local wm = require("wm")
wm.env{}:read_nats{url = "nats://127.0.0.1:1", stream = "X"}]], "")
    assert.are.equal(1, code)
    assert.matches("read_nats: cannot connect to nats://127%.0%.0%.1:1: No server available for connection", err)
  end)
end)

describe("SQL connectors", function()
  local csv = helper.root .. "/examples/sql/k_sql_tumble_count.csv"
  local expected = helper.root .. "/examples/sql/k_sql_tumble_count.expected"
  local WORDS = [[
SET 'pipeline.auto-watermark-interval' = '0';
CREATE TABLE words (word STRING, ts BIGINT, rt AS TO_TIMESTAMP_LTZ(ts, 3),
  WATERMARK FOR rt AS rt - INTERVAL '5' SECOND) WITH (%s);
]]
  local COUNT = [[
SELECT word, COUNT(*) AS cnt, TUMBLE_START(rt, INTERVAL '5' SECOND) AS wstart,
       TUMBLE_END(rt, INTERVAL '5' SECOND) AS wend
FROM words GROUP BY TUMBLE(rt, INTERVAL '5' SECOND), word;
]]
  local function sql(text)
    local p = helper.write_tmp(text, ".sql")
    local out, err, code = helper.wmrun("--sql " .. q(p))
    os.remove(p)
    return out, err, code
  end

  -- writes the example's file into the table `with`, then runs the example's query on it
  local function roundtrip(with)
    local _, err, code = sql(string.format(WORDS, "'connector' = 'filesystem', 'path' = '" .. csv
      .. "', 'format' = 'csv'") .. "CREATE TABLE sink (word STRING, ts BIGINT) WITH (" .. with
      .. ", 'format' = 'csv');\nINSERT INTO sink SELECT word, ts FROM words;\n")
    assert.are.equal(0, code, err)
    local out
    out, err, code = sql(string.format(WORDS, with .. ", 'format' = 'csv'") .. COUNT)
    assert.are.equal(0, code, err)
    assert.are.same(sorted_lines(helper.read(expected)), sorted_lines(out))
  end

  it("'connector' = 'kafka' with Flink's option names, as sink and bounded source", function()
    local k = services.kafka{"words:2"}
    helper.finally(function() k:stop() end)
    roundtrip("'connector' = 'kafka', 'topic' = 'words', 'properties.bootstrap.servers' = '" .. k.bootstrap
      .. "', 'properties.group.id' = 'sql', 'scan.startup.mode' = 'earliest-offset', "
      .. "'scan.bounded.mode' = 'latest-offset'")
  end)

  it("'connector' = 'nats' of the same shape", function()
    local n = services.nats()
    helper.finally(function() n:stop() end)
    roundtrip("'connector' = 'nats', 'url' = '" .. n.url .. "', 'stream' = 'WORDS', 'subject' = 'words', "
      .. "'scan.startup.mode' = 'earliest', 'scan.bounded.mode' = 'latest'")
  end)

  it("names a missing option and a bad mode", function()
    local _, err, code = sql(string.format(WORDS, "'connector' = 'kafka', 'topic' = 'w', 'format' = 'csv'") .. COUNT)
    assert.are.equal(1, code)
    assert.matches("the kafka connector needs 'properties.bootstrap.servers'", err)
    _, err, code = sql(string.format(WORDS, "'connector' = 'kafka', 'topic' = 'w', 'format' = 'csv', "
      .. "'properties.bootstrap.servers' = '127.0.0.1:1', 'scan.startup.mode' = 'oldest'") .. COUNT)
    assert.are.equal(1, code)
    assert.matches("option 'scan.startup.mode' must be one of 'earliest%-offset', 'group%-offsets', "
      .. "'latest%-offset', 'timestamp', got 'oldest'", err)
  end)
end)
