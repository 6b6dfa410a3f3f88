-- Scale-out over Kafka (docs/scaleout.md, issue 16): processes of one group share a
-- topic's partitions, one task per partition with its own state and checkpoints; their
-- output together is exactly a single process's, also after one of them is SIGKILLed.
-- Runs against librdkafka's mock cluster (spec/services.lua).
local helper = require("helper")
local services = require("services")
local sh = require("scaleout_helper")

local q = helper.shell_quote

-- Writes `text` to dir/name (default job.lua) and returns its path.
local function script(dir, text, name)
  local path = dir .. "/" .. (name or "job.lua")
  local f = assert(io.open(path, "w"))
  f:write(text)
  f:close()
  return path
end

-- Runs the job `text` (its arg[1]: the brokers of a mock cluster with `topics`) with wmrun's
-- options opts(dir) in a folder of its own; returns stdout, stderr and the exit code.
local function run_on_kafka(topics, text, opts)
  local k = services.kafka(topics)
  local dir = helper.tmpdir()
  helper.finally(function() k:stop(); helper.rmdir(dir) end)
  return helper.wmrun((opts and (opts(dir) .. " ") or "") .. q(script(dir, text)) .. " " .. q(k.bootstrap))
end

local function lines_of(path)
  local t = {}
  for l in helper.read_or_empty(path):gmatch("[^\n]+") do t[#t + 1] = l end
  return t
end

-- The lines of every file of dir whose name starts with `prefix`, sorted (a multiset).
local function union(dir, prefix)
  local t = {}
  for _, f in ipairs(helper.lines("ls " .. q(dir))) do
    if f:sub(1, #prefix) == prefix then
      for _, l in ipairs(lines_of(dir .. "/" .. f)) do t[#t + 1] = l end
    end
  end
  table.sort(t)
  return t
end

local function lines_of_text(s)
  local t = {}
  for l in s:gmatch("[^\n]+") do t[#t + 1] = l end
  return t
end

local function sorted(t)
  table.sort(t)
  return t
end

-- Writes 1200 records (12 keys, event time rising by 100 ms, no record late in its
-- partition) to the topic with write_kafka{key = "id"}; with `marker`, between the two
-- halves, a record {pause = true} in partition 0 that the job drops (the kill spec's cue).
local function load(dir, bootstrap, topic, marker)
  local jp = script(dir, [[
local wm = require("wm")
local brokers, topic, marker = arg[1], arg[2], arg[3] == "marker"
local function half(from, to)
  local rows = {}
  for i = from, to do rows[#rows + 1] = {id = "k" .. (i % 12), ts = i * 100, v = i} end
  local env = wm.env{}
  env:from_elements(table.unpack(rows)):write_kafka{brokers = brokers, topic = topic, key = "id"}
  env:execute("load")
end
half(1, 600)
if marker then
  local env = wm.env{}
  env:from_elements({pause = true, p = 0}):write_kafka{brokers = brokers, topic = topic, partition = "p"}
  env:execute("marker")
end
half(601, 1200)
]], "load.lua")
  local _, err, code = helper.wmrun(q(jp) .. " " .. q(bootstrap) .. " " .. topic .. (marker and " marker" or ""))
  assert.are.equal(0, code, err)
end

-- The windowed job: arg[1] brokers, arg[2] topic, arg[3] the output file, arg[4] "scale"
-- (scale_out) or "plain", arg[5] a folder for the pause flag (the kill spec).
local JOB = [[
local wm = require("wm")
local brokers, topic, out, mode, flags = arg[1], arg[2], arg[3], arg[4], arg[5]
local env = wm.env{watermark_interval = 0}
local task = os.getenv("WM_TASK")
env:read_kafka{brokers = brokers, topic = topic, group = "g-" .. topic, bounded = "latest",
    scale_out = mode == "scale",
    properties = {["session.timeout.ms"] = 3000, ["heartbeat.interval.ms"] = 200}}
  :parse_json()
  :filter(function(r)
    if not r.pause then return true end
    if flags and task then -- the first task to meet the cue stops here, once: the spec kills its supervisor
      local flag = flags .. "/" .. task:match("(%S+)$")
      local h = io.open(flag)
      if h then h:close() else os.execute("echo $PPID > " .. flag .. ".tmp && mv " .. flag .. ".tmp " .. flag
        .. " && kill -STOP $PPID") end
    end
    return false
  end)
  :assign_timestamps_and_watermarks(wm.watermarks.bounded_out_of_orderness("1s"):with_timestamp_field("ts"))
  :key_by("id"):window(wm.windows.tumbling("5s")):sum("v"):write_lines(out)
env:execute("scale-out spec")
]]

local function write_job(dir) return script(dir, JOB) end

-- Starts `n` supervisors of the job in the background (their stderr in dir/pI/err).
local function start(dir, n, bootstrap, topic, extra, first)
  local jp = write_job(dir)
  return sh.start(dir, n, function()
    return "--checkpoint-dir " .. q(dir .. "/ck") .. " --checkpoint-interval 50ms " .. q(jp) .. " "
      .. q(bootstrap) .. " " .. topic .. " " .. q(dir .. "/out/o.txt") .. " scale " .. (extra or "")
  end, first)
end

local function single(dir, bootstrap, topic, mode)
  local out = dir .. "/single-" .. mode .. ".txt"
  local args = q(write_job(dir)) .. " " .. q(bootstrap) .. " " .. topic .. " " .. q(out) .. " " .. mode
  if mode == "scale" then args = "--checkpoint-dir " .. q(dir .. "/ck1") .. " " .. args end
  local _, err, code = helper.wmrun(args)
  assert.are.equal(0, code, err)
  if mode == "plain" then return sorted(lines_of(out)) end
  return union(dir, "single-scale.txt.")
end

local all_done = sh.all_done

-- A mock cluster with a 6-partition `topic` loaded by load(), a folder, the plain job's
-- output; the processes the spec puts in `procs` are killed at its end.
local function setup(topic, marker)
  local k = services.kafka{topic .. ":6"}
  local s = {k = k, dir = helper.tmpdir(), procs = {}}
  helper.finally(function()
    for _, p in ipairs(s.procs) do p.kill() end
    k:stop()
    helper.rmdir(s.dir)
  end)
  os.execute("mkdir -p " .. q(s.dir .. "/out") .. " " .. q(s.dir .. "/flags"))
  load(s.dir, k.bootstrap, topic, marker)
  s.plain = single(s.dir, k.bootstrap, topic, "plain")
  assert.is_true(#s.plain >= 24 * 12) -- 12 keys in every 5 s window of 120 s
  return s
end

-- Waits until the supervisor p has joined `group` (its first "assigned" line): only then is
-- its SIGUSR1 handler sure to be in place (a signal sent between the shell's fork and
-- wmrun's start would end it).
-- The table a scale-out supervisor prints on SIGUSR1 (with --metrics), complete: its first
-- line says how many partitions it owns, and a row for each follows the header
local function usr1_table(p)
  return p.ask("USR1", function(s)
    local owned, rest = s:match("scale%-out: group '[^'\n]*', (%d+) partitions? owned by this process\n(.*)$")
    if not owned then return false end
    local rows = 0
    for _ in rest:gmatch("%S+ +%S+ +%S+ +%S+ +%S+  %a+\n") do rows = rows + 1 end
    return rows >= tonumber(owned) + 1 -- (the header row has six columns too)
  end)
end

local function joined(p, group)
  helper.wait_for(function()
    return helper.read_or_empty(p.err):match("wmrun: group '" .. group .. "': assigned")
  end, "the process to join group " .. group, 60)
end

describe("scale-out on Kafka", function()
  it("3 processes on a 6-partition topic give together exactly one process's output", function()
    local s = setup("ev")
    local k, dir, plain = s.k, s.dir, s.plain
    -- one process in scale-out mode owns all six partitions
    assert.are.same(plain, single(dir, k.bootstrap, "ev", "scale"))
    local procs = start(dir, 3, k.bootstrap, "ev")
    s.procs = procs
    helper.wait_for(function() return all_done(procs) end, "the three processes to end", 120)
    local assigned = {}
    for i, p in ipairs(procs) do
      assert.are.equal(0, p.done(), p.err())
      for l in p.err():gmatch("[^\n]+") do
        local list = l:match("^wmrun: group 'g%-ev': assigned ([^;]+)")
        if list then for part in list:gmatch("ev/%d") do assigned[part] = i end end
      end
    end
    for pn = 0, 5 do assert.is_not_nil(assigned["ev/" .. pn], "ev/" .. pn .. " was never assigned") end
    -- every task's own file, each ended
    for pn = 0, 5 do
      assert.is_true(helper.read_or_empty(dir .. "/ck/task-ev-" .. pn .. "/ENDED") ~= "", "task ev-" .. pn)
    end
    assert.are.same(plain, union(dir .. "/out", "o.txt."))
  end)

  it("a process killed with SIGKILL mid-run: the others take its partitions over from its tasks' checkpoints", function() -- luacheck: ignore 631
    local s = setup("kv", true)
    local dir, plain = s.dir, s.plain
    local procs = start(dir, 3, s.k.bootstrap, "kv", q(dir .. "/flags"))
    s.procs = procs
    -- the task of kv/0 stops itself at the cue, half way through its partition, after its
    -- first checkpoint: its process is the victim
    local flag = dir .. "/flags/kv-0"
    local child = helper.wait_for(function() return tonumber(helper.read_or_empty(flag):match("%d+")) end,
      "the task kv-0 to reach the middle of its partition", 60)
    helper.wait_for(function()
      return helper.read_or_empty("/proc/" .. child .. "/stat"):match("^%d+ %b() (%a)") == "T"
    end, "the task kv-0 to stop", 60)
    local ppid = tonumber(helper.read_or_empty("/proc/" .. child .. "/stat"):match("^%d+ %b() %a (%d+)"))
    local victim
    for _, p in ipairs(procs) do if p.pid == ppid then victim = p end end
    assert.is_not_nil(victim, "the task's parent is one of the three processes")
    assert.is_true(#helper.lines("ls " .. q(dir .. "/ck/task-kv-0") .. " | grep '^chk-'") > 0)
    assert.are.equal("", helper.read_or_empty(dir .. "/ck/task-kv-0/ENDED"))
    os.execute("kill -KILL " .. victim.pid)
    -- its children die with it (PR_SET_PDEATHSIG and the pipe they watch)
    helper.wait_for(function() return helper.read_or_empty("/proc/" .. child .. "/stat") == ""
      or helper.read_or_empty("/proc/" .. child .. "/stat"):match("^%d+ %b() (%a)") == "Z" end,
      "the victim's task to die with it", 30)
    helper.wait_for(function() return all_done(procs) end, "the two others to end", 120)
    local took = false
    for _, p in ipairs(procs) do
      if p ~= victim then
        assert.are.equal(0, p.done(), p.err())
        if p.err():match("assigned [^;]*kv/0") and p.err():match("resuming from checkpoint") then took = true end
      end
    end
    assert.is_true(took, "a survivor took kv/0 over from its checkpoint")
    assert.are.same(plain, union(dir .. "/out", "o.txt."))
  end)

  it("with the checkpoints in NATS: a supervisor killed mid-run, another started in an empty working directory "
    .. "resumes its tasks from the store, and a third finds them ENDED there", function()
    local s = setup("kn", true)
    local n = services.nats()
    helper.finally(function() n:stop() end)
    local store = n.url .. "/ck"
    local jp = write_job(s.dir)
    local function proc(i, wd)
      os.execute("mkdir -p " .. q(wd))
      local p = sh.start(s.dir, 1, function()
        return "--checkpoint-dir " .. q(store) .. " --checkpoint-interval 50ms " .. q(jp) .. " " .. q(s.k.bootstrap)
          .. " kn " .. q(s.dir .. "/out/o.txt") .. " scale " .. q(s.dir .. "/flags")
      end, i, function() return wd end)[1]
      s.procs[#s.procs + 1] = p
      return p
    end
    local a = proc(1, s.dir .. "/wa")
    local victim, child = sh.victim(s.dir .. "/flags", "kn-0", {a})
    assert.are.equal(a, victim)
    os.execute("kill -KILL " .. a.pid)
    sh.wait_gone(child, "the supervisor's task to die with it")
    helper.wait_for(a.done, "the killed supervisor's exit status", 30)
    local b = proc(2, s.dir .. "/wb")
    helper.wait_for(b.done, "the second supervisor to end", 120)
    assert.are.equal(0, b.done(), b.err())
    assert.is_truthy(b.err():find("resuming from checkpoint %d+ in " .. store:gsub("%p", "%%%0") .. "/task%-kn%-0, "),
      b.err())
    assert.are.same(s.plain, union(s.dir .. "/out", "o.txt."))
    -- every task ENDED in the store: a third process has nothing to do
    local c = proc(3, s.dir .. "/wc")
    helper.wait_for(c.done, "the third supervisor to end", 60)
    assert.are.equal(0, c.done(), c.err())
    assert.is_nil(c.err():find("resuming", 1, true), c.err())
    assert.are.same(s.plain, union(s.dir .. "/out", "o.txt."))
    for _, wd in ipairs{"wa", "wb", "wc"} do
      assert.are.same({}, helper.lines("ls -A " .. q(s.dir .. "/" .. wd)), wd .. " holds nothing")
    end
    assert.is_nil(io.open(s.dir .. "/ck"), "no checkpoint folder")
  end)

  it("a supervisor killed with SIGKILL and started again resumes every task from its checkpoints", function() -- luacheck: ignore 631
    -- (librdkafka 2.0.2, Debian's, once aborted a supervisor in its sticky assignor: what such
    -- a crash leaves must be resumable by a new supervisor; docs/scaleout.md)
    local s = setup("kr", true)
    local dir = s.dir
    local first = start(dir, 1, s.k.bootstrap, "kr", q(dir .. "/flags"))
    s.procs = first
    local victim, child = sh.victim(dir .. "/flags", "kr-0", first)
    assert.are.equal(first[1], victim)
    assert.is_true(#helper.lines("ls " .. q(dir .. "/ck/task-kr-0") .. " | grep '^chk-'") > 0)
    os.execute("kill -KILL " .. victim.pid)
    sh.wait_gone(child, "the supervisor's task to die with it")
    helper.wait_for(function() return victim.done() end, "the killed supervisor's exit status", 30)
    -- the new supervisor joins the same group; the dead member's partitions come to it once
    -- its session (3 s in the job) has timed out
    local again = start(dir, 1, s.k.bootstrap, "kr", q(dir .. "/flags"), 2)
    s.procs = {victim, again[1]}
    helper.wait_for(function() return again[1].done() end, "the restarted supervisor to end", 120)
    assert.are.equal(0, again[1].done(), again[1].err())
    assert.matches("resuming from checkpoint", again[1].err())
    assert.are.same(s.plain, union(dir .. "/out", "o.txt."))
  end)

  it("SIGTERM stops every task with its final checkpoint (exit 0); --metrics and SIGUSR1 list the partitions", function() -- luacheck: ignore 631
    local k = services.kafka{"un:2"}
    local dir = helper.tmpdir()
    local p
    helper.finally(function()
      if p then p.kill() end
      k:stop()
      helper.rmdir(dir)
    end)
    local jp = script(dir, [[
local wm = require("wm")
local rows = {}
for i = 1, 10 do rows[i] = {p = i <= 6 and 0 or 1, ts = i * 1000} end
local env = wm.env{}
env:from_elements(table.unpack(rows)):write_kafka{brokers = arg[1], topic = "un", partition = "p"}
env:execute()]], "load.lua")
    local _, err, code = helper.wmrun(q(jp) .. " " .. q(k.bootstrap))
    assert.are.equal(0, code, err)
    -- (bg_job puts the script last: the brokers are written into it)
    p = helper.bg_job(dir, string.format([[
local wm = require("wm")
local env = wm.env{watermark_interval = 0}
env:read_kafka{brokers = %q, topic = "un", group = "gu", scale_out = true,
  bounded = os.getenv("WM_SPEC_BOUNDED") and "latest" or false,
  properties = {["session.timeout.ms"] = 3000, ["heartbeat.interval.ms"] = 200}}
  :parse_json()
  :assign_timestamps_and_watermarks(wm.watermarks.for_monotonous_timestamps():with_timestamp_field("ts"))
  :key_by("p"):window(wm.windows.tumbling("1h")):count():print()
env:execute()]], k.bootstrap), "--metrics --checkpoint-dir " .. q(dir .. "/ck") .. " --checkpoint-interval 50ms")
    joined(p, "gu")
    -- every record read: the table that SIGUSR1 prints says so
    helper.wait_for(function()
      local e = usr1_table(p)
      return e:match("un%-0%s+un/0%s+6%s+0%s+5999%s+running") and e:match("un%-1%s+un/1%s+4%s+0%s+9999%s+running")
    end, "both tasks to have read their partition", 60)
    p.signal("TERM")
    assert.are.equal(0, p.wait(), helper.read_or_empty(p.err))
    local e = helper.read_or_empty(p.err)
    assert.matches("wmrun: group 'gu': assigned un/0, un/1", e)
    assert.matches("scale%-out: group 'gu', 2 partitions owned by this process", e)
    assert.is_nil(e:match("failed"))
    for _, t in ipairs({"un-0", "un-1"}) do
      assert.are.equal("", helper.read_or_empty(dir .. "/ck/task-" .. t .. "/ENDED"))
      assert.is_true(#helper.lines("ls " .. q(dir .. "/ck/task-" .. t) .. " | grep '^chk-'") > 0)
    end
    -- unbounded: the windows are still open (in the checkpoints), nothing was printed
    assert.are.equal("", helper.read_or_empty(p.out))
    -- another process takes both partitions over: their counts come from the checkpoints
    -- alone (it reads no record: the offsets are at the partitions' ends)
    local out
    out, err, code = helper.sh("WM_SPEC_BOUNDED=1 " .. helper.wmrun_path() .. " --checkpoint-dir " .. q(dir .. "/ck")
      .. " " .. q(p.job))
    assert.are.equal(0, code, err)
    assert.are.same({'{"count":4,"key":1,"start":0,"stop":3600000}', '{"count":6,"key":0,"start":0,"stop":3600000}'},
      sorted(lines_of_text(out)))
    local _, resumed = err:gsub("resuming from checkpoint %d+ in [^\n]*task%-un%-%d", "")
    assert.are.equal(2, resumed)
  end)

  it("a process that joins takes partitions over: the first stops their tasks with a checkpoint, the second resumes them", function() -- luacheck: ignore 631
    local k = services.kafka{"rj:4"}
    local dir = helper.tmpdir()
    local procs = {}
    helper.finally(function()
      for _, p in ipairs(procs) do p.kill() end
      k:stop()
      helper.rmdir(dir)
    end)
    -- 3 records in each partition, then the job: a count per partition, unbounded
    local _, err, code = helper.wmrun(q(script(dir, [[
local wm = require("wm")
local rows = {}
for i = 0, 11 do rows[#rows + 1] = {p = i % 4, ts = 1000 + i} end
local env = wm.env{}
env:from_elements(table.unpack(rows)):write_kafka{brokers = arg[1], topic = "rj", partition = "p"}
env:execute()]], "load.lua")) .. " " .. q(k.bootstrap))
    assert.are.equal(0, code, err)
    local job = string.format([[
local wm = require("wm")
local env = wm.env{watermark_interval = 0}
env:read_kafka{brokers = %q, topic = "rj", group = "gj", scale_out = true,
  bounded = os.getenv("WM_SPEC_BOUNDED") and "latest" or false,
  properties = {["session.timeout.ms"] = 3000, ["heartbeat.interval.ms"] = 200}}
  :parse_json()
  :assign_timestamps_and_watermarks(wm.watermarks.for_monotonous_timestamps():with_timestamp_field("ts"))
  :key_by("p"):window(wm.windows.tumbling("1h")):count():print()
env:execute()]], k.bootstrap)
    local opts = "--checkpoint-dir " .. q(dir .. "/ck") .. " --checkpoint-interval 50ms"
    os.execute("mkdir -p " .. q(dir .. "/a") .. " " .. q(dir .. "/b"))
    local a = helper.bg_job(dir .. "/a", job, opts)
    procs[1] = a
    local function read_all(p)
      joined(p, "gj")
      return helper.wait_for(function()
        local e = usr1_table(p)
        local n = 0
        for _ in e:gmatch("rj%-%d%s+rj/%d%s+3%s+0%s+%d+%s+running") do n = n + 1 end
        return n > 0 and e
      end, "the tasks to read their partitions", 60)
    end
    read_all(a)
    local b = helper.bg_job(dir .. "/b", job, opts)
    procs[2] = b
    local moved = helper.wait_for(function()
      return helper.read_or_empty(b.err):match("wmrun: group 'gj': assigned ([^\n]+)")
    end, "the second process to be assigned partitions", 60)
    local revoked = helper.wait_for(function()
      return helper.read_or_empty(a.err):match("wmrun: group 'gj': revoked ([^\n]+) %(to another process%)")
    end, "the first process to give partitions back", 60)
    local function set(list)
      local t = {}
      for part in list:gmatch("rj/%d") do t[#t + 1] = part end
      return sorted(t)
    end
    assert.are.same(set(moved), set(revoked))
    local n = #set(moved)
    assert.is_true(n >= 1 and n <= 3, moved)
    -- the second resumes each moved task from the checkpoint the first took when it gave it back
    helper.wait_for(function()
      local _, r = helper.read_or_empty(b.err):gsub("resuming from checkpoint", "")
      return r == n
    end, "the moved tasks to resume", 60)
    a.signal("TERM")
    b.signal("TERM")
    assert.are.equal(0, a.wait(), helper.read_or_empty(a.err))
    assert.are.equal(0, b.wait(), helper.read_or_empty(b.err))
    assert.is_nil((helper.read_or_empty(a.err) .. helper.read_or_empty(b.err)):match("failed"))
    -- every partition counted once: 3 records each, whoever held it
    local out
    out, err, code = helper.sh("WM_SPEC_BOUNDED=1 " .. helper.wmrun_path() .. " " .. opts .. " " .. q(a.job))
    assert.are.equal(0, code, err)
    assert.are.same({'{"count":3,"key":0,"start":0,"stop":3600000}', '{"count":3,"key":1,"start":0,"stop":3600000}',
      '{"count":3,"key":2,"start":0,"stop":3600000}', '{"count":3,"key":3,"start":0,"stop":3600000}'},
      sorted(lines_of_text(out)))
  end)

  it("a repartitioning step (key_by through Kafka): 3 processes give the single-process result", function() -- luacheck: ignore 631
    -- the input is partitioned by `src`, the windows by `id`: every window's records are in
    -- several source partitions, and meet again in one partition of the intermediate topic
    local k = services.kafka{"rin:6", "rp1:4", "rp3:4", "rpp:4"}
    local dir = helper.tmpdir()
    local procs = {}
    helper.finally(function()
      for _, p in ipairs(procs) do p.kill() end
      k:stop()
      helper.rmdir(dir)
    end)
    os.execute("mkdir -p " .. q(dir .. "/out"))
    local lp = script(dir, [[
local wm = require("wm")
local rows = {}
for i = 1, 1200 do rows[i] = {src = "s" .. (i % 6), id = "k" .. (i * 7 % 10), ts = i * 100, v = i} end
local env = wm.env{}
env:from_elements(table.unpack(rows)):write_kafka{brokers = arg[1], topic = "rin", key = "src"}
env:execute("load")]], "load.lua")
    local _, lerr, lcode = helper.wmrun(q(lp) .. " " .. q(k.bootstrap))
    assert.are.equal(0, lcode, lerr)
    -- arg[1] brokers, arg[2] the intermediate topic ("-": no through), arg[3] the output,
    -- arg[4] "scale" or "plain"
    local jp = script(dir, [[
local wm = require("wm")
local brokers, via, out, mode = arg[1], arg[2], arg[3], arg[4]
local env = wm.env{watermark_interval = 0}
local s = env:read_kafka{brokers = brokers, topic = "rin", group = "g-rin", bounded = "latest",
    scale_out = mode == "scale",
    properties = {["session.timeout.ms"] = 3000, ["heartbeat.interval.ms"] = 200}}
  :parse_json()
  :assign_timestamps_and_watermarks(wm.watermarks.bounded_out_of_orderness("1s"):with_timestamp_field("ts"))
local keyed = via == "-" and s:key_by("id")
  or s:key_by("id", {through = {kafka = {brokers = brokers, topic = via, partitions = 4}}})
-- (sum's record is its window's first: through the repartitioning, which is first depends on
-- how the writers' messages meet, so the window's start and the sum are what is compared)
keyed:window(wm.windows.tumbling("5s")):sum("v")
  :map(function(r) return {id = r.id, start = r.ts // 5000 * 5000, v = r.v} end):write_lines(out)
env:execute("repartition spec")
]], "rjob.lua")
    local function run(args)
      local _, err, code = helper.wmrun(args)
      assert.are.equal(0, code, err)
      return err
    end
    -- the plain job, without the through and with it (one process writes and reads it)
    run(q(jp) .. " " .. q(k.bootstrap) .. " - " .. q(dir .. "/plain.txt") .. " plain")
    local plain = sorted(lines_of(dir .. "/plain.txt"))
    assert.is_true(#plain >= 24 * 10) -- 10 keys in every 5 s window of 120 s
    run(q(jp) .. " " .. q(k.bootstrap) .. " rpp " .. q(dir .. "/via.txt") .. " plain")
    assert.are.same(plain, sorted(lines_of(dir .. "/via.txt")))
    -- one scale-out process: six writing tasks and four reading ones
    local err = run("--checkpoint-dir " .. q(dir .. "/ck1") .. " " .. q(jp) .. " " .. q(k.bootstrap) .. " rp1 "
      .. q(dir .. "/one.txt") .. " scale")
    assert.is_truthy(err:match("assigned [^\n]*rp1/0"), err)
    assert.are.same(plain, union(dir, "one.txt."))
    -- only the reading tasks write the windows' file: one per intermediate partition
    for pn = 0, 3 do assert.is_true(helper.read_or_empty(dir .. "/one.txt.rp1-" .. pn) ~= "", "rp1-" .. pn) end
    assert.are.equal("", helper.read_or_empty(dir .. "/one.txt.rin-0"))
    -- three processes
    for _, p in ipairs(sh.start(dir, 3, function()
      return "--checkpoint-dir " .. q(dir .. "/ck3") .. " --checkpoint-interval 50ms " .. q(jp) .. " "
        .. q(k.bootstrap) .. " rp3 " .. q(dir .. "/out/o.txt") .. " scale"
    end)) do procs[#procs + 1] = p end
    helper.wait_for(function() return all_done(procs) end, "the three processes to end", 180)
    for _, p in ipairs(procs) do assert.are.equal(0, p.done(), p.err()) end
    assert.are.same(plain, union(dir .. "/out", "o.txt."))
  end)

  it("examples/scaleout/run.sh: the demo's combined output equals a single run", function()
    local out, err, code = helper.sh(q(helper.root .. "/examples/scaleout/run.sh"))
    if code == 3 then
      -- the mock cluster left partitions assigned to nobody (run.sh's comment): a fault of
      -- librdkafka 2.0.2's mock, not of the demo; one more run, and it is said on stderr
      io.stderr:write("scaleout_spec: the demo's group got stuck in the mock cluster, running it again:\n", err)
      out, err, code = helper.sh(q(helper.root .. "/examples/scaleout/run.sh"))
    end
    assert.are.equal(0, code, out .. err)
    assert.matches("OK: the three processes' files together hold exactly the single run's %d+ results", out)
    assert.matches("resuming from checkpoint", out)
  end)

  it("a task's file sink writes its own file: {task} replaced, or the task's name appended", function()
    local so = require("wm.scaleout")
    assert.are.equal("out/sums-ev-3.txt", so.task_path("out/sums-{task}.txt", "ev-3"))
    assert.are.equal("out/sums.txt.ev-3", so.task_path("out/sums.txt", "ev-3"))
    assert.are.equal("a/x2.ev-1/b.x2.ev-1", so.task_path("a/{task}/b.{task}", "x2.ev-1"))
  end)

  describe("errors", function()
    local function job(text, args)
      return helper.run_job(text, args)
    end

    it("scale_out without a group names what is missing at the job line", function()
      local _, err, code = job([[
local wm = require("wm")
local env = wm.env{checkpoint = {dir = "ck"}}
env:read_kafka{brokers = "127.0.0.1:1", topic = "ev", scale_out = true}:print()
env:execute()]])
      assert.are.equal(1, code)
      assert.matches("%.lua:3: read_kafka: scale_out needs a group", err)
    end)

    it("scale_out without a checkpoint folder says so at the job line", function()
      local _, err, code = job([[
local wm = require("wm")
local env = wm.env{}
env:read_kafka{brokers = "127.0.0.1:1", topic = "ev", group = "g", scale_out = true}:print()
env:execute()]])
      assert.are.equal(1, code)
      assert.matches("%.lua:3: read_kafka: scale_out needs %-%-checkpoint%-dir", err)
    end)

    it("scale_out must be a boolean, and one source of a job has it", function()
      local _, err, code = job([[
local wm = require("wm")
local env = wm.env{checkpoint = {dir = "ck"}}
env:read_kafka{brokers = "127.0.0.1:1", topic = "ev", group = "g", scale_out = "yes"}:print()]])
      assert.are.equal(1, code)
      assert.matches("%.lua:3: read_kafka: scale_out must be true or false, got yes", err)
      _, err, code = run_on_kafka({"a:1", "b:1"}, [[
local wm = require("wm")
local env = wm.env{checkpoint = {dir = "ck"}}
env:read_kafka{brokers = arg[1], topic = "a", group = "g", scale_out = true}:print()
env:read_kafka{brokers = arg[1], topic = "b", group = "g", scale_out = true}:print()]])
      assert.are.equal(1, code)
      assert.matches("job%.lua:4: read_kafka: a job has one scale_out source; read_kafka%(a@[^)]*%) %(.-job%.lua:3%) "
        .. "is one already", err)
    end)

    it("a scale-out job repartitions once: a second through is refused, naming the source and its line", function()
      local _, err, code = run_on_kafka({"ev:2", "r1:2", "r2:2"}, [[
local wm = require("wm")
local env = wm.env{}
local b = arg[1]
local s = env:read_kafka{brokers = b, topic = "ev", group = "g", scale_out = true}:parse_json()
local a = s:key_by("a", {through = {kafka = {brokers = b, topic = "r1", partitions = 2}}}):count_window(2):count()
a:key_by("b", {through = {kafka = {brokers = b, topic = "r2", partitions = 2}}}):count_window(2):count():print()
env:execute()]], function(dir) return "--checkpoint-dir " .. q(dir .. "/ck") end)
      assert.are_not.equal(0, code)
      assert.matches("wmrun: scale_out: read_kafka%(ev@[^)]+%) %([^)]*job.lua:4%): a scale%-out job can repartition "
        .. "once %(key_by with through%), this one does 2 times", err)
    end)

    it("--restart-backoff takes a duration of at least 1 ms", function()
      for _, v in ipairs({"0ms", "soon"}) do
        local _, err, code = helper.wmrun("--restart-backoff " .. v .. " job.lua")
        assert.are.equal(2, code)
        assert.matches("^wmrun: %-%-restart%-backoff", err)
      end
      local _, err, code = helper.wmrun("--restart-backoff")
      assert.are.equal(2, code)
      assert.matches("^wmrun: %-%-restart%-backoff needs a duration", err)
    end)

    it("--fresh is refused: the folder is every process's", function()
      local _, err, code = run_on_kafka({"ev:1"}, [[
local wm = require("wm")
local env = wm.env{}
env:read_kafka{brokers = arg[1], topic = "ev", group = "g", scale_out = true}:print()
env:execute()]], function(dir) return "--checkpoint-dir " .. q(dir .. "/ck") .. " --fresh" end)
      assert.are.equal(1, code)
      assert.matches("scale_out: %-%-fresh cannot be used with scale_out", err)
    end)

    it("a task that fails 5 times in a row fails the supervisor, naming it and its last message", function()
      -- (--restart-backoff 10ms: the back-offs between the starts are 10, 20, 40 and 80 ms)
      local _, err, code = run_on_kafka({"ev:1"}, [[
local wm = require("wm")
local env = wm.env{}
env:read_kafka{brokers = arg[1], topic = "ev", group = "g", scale_out = true}
  :map(function(r) return r end):print()
if os.getenv("WM_TASK") then error("the task cannot start") end
env:execute()]], function(dir) return "--checkpoint-dir " .. q(dir .. "/ck") .. " --restart-backoff 10ms" end)
      assert.are.equal(1, code)
      local _, n = err:gsub("task ev%-0 %(ev/0%) failed %(exit status 1%)", "")
      assert.are.equal(5, n)
      local waits = {}
      for ms in err:gmatch("task ev%-0 %(ev/0%) failed %(exit status 1%); starting it again in (%d+) ms\n") do
        waits[#waits + 1] = tonumber(ms)
      end
      assert.are.same({10, 20, 40, 80}, waits)
      assert.matches("job%.lua:6: scale_out: task ev%-0 %(partition ev/0%) failed 5 times in a row, the last "
        .. "with exit status 1: wmrun: [^\n]*job%.lua:5: the task cannot start", err)
    end)

    -- Each start resumes from the checkpoint the first one took before its first record
    -- ("wmrun: resuming from checkpoint 1 ...") and then exits 3 without a word: the failure
    -- names that cause, not the resume notice, which was the task's last line (issue 34)
    it("a task that fails 5 times in a row without a message: the failure names the cause", function()
      local k = services.kafka({"ev:1"})
      local dir = helper.tmpdir()
      helper.finally(function() k:stop(); helper.rmdir(dir) end)
      local _, err, code = helper.wmrun(q(script(dir, [[
local env = require("wm").env{}
env:from_elements({v = 1}):write_kafka{brokers = arg[1], topic = "ev"}
env:execute("load")]], "load.lua")) .. " " .. q(k.bootstrap))
      assert.are.equal(0, code, err)
      _, err, code = helper.wmrun("--checkpoint-dir " .. q(dir .. "/ck") .. " --restart-backoff 10ms "
        .. q(script(dir, [[
local env = require("wm").env{}
env:read_kafka{brokers = arg[1], topic = "ev", group = "g", scale_out = true}
  :map(function() os.exit(3) end):print()
env:execute()]])) .. " " .. q(k.bootstrap))
      assert.are.equal(1, code)
      assert.matches("wmrun: resuming from checkpoint 1 ", err, 1, true) -- what it printed
      local last = err:match("[^\n]*failed 5 times in a row[^\n]*")
      assert.matches("job%.lua:4: scale_out: task ev%-0 %(partition ev/0%) failed 5 times in a row, the last "
        .. "with exit status 3 %(it printed no error%)$", last)
    end)
  end)
end)
