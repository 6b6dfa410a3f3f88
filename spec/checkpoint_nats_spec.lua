-- Checkpoints in NATS JetStream (docs/checkpoints.md, "Checkpoints in NATS JetStream"):
-- `--checkpoint-dir nats://HOST:PORT/BUCKET`, each test on a nats-server it starts
-- (spec/services.lua). The crash procedure of spec/checkpoint_spec.lua (SIGKILLs at random
-- moments and at the WM_CKPT_CRASH points, output byte for byte an uninterrupted run's) with
-- the store in NATS; a resume from a fresh working directory; the fence; damaged and
-- foreign data in the store.
local h = require("helper")
local services = require("services")
local K = require("ckpt_kill")

local q = K.q

-- Runs wmrun in folder cwd: stdout, stderr, exit code (ended after 120 s if it hangs).
local function wmrun_in(cwd, args)
  return h.sh("cd " .. q(cwd) .. " && timeout 120 " .. h.wmrun_path() .. " " .. args)
end

-- Publishes one message with payload `text` on `subject` of `stream`, through write_nats
-- (which makes the stream, with `subjects`, when it is missing).
local function publish(url, stream, subject, text, subjects)
  local p = h.write_tmp(string.format([[
local wm = require("wm")
local env = wm.env{}
env:from_elements(%q):write_nats{url = %q, stream = %q, subject = %q, format = "text"%s}
env:execute()
]], text, url, stream, subject, subjects and string.format(", subjects = {%q}", subjects) or ""), ".lua")
  local _, err, code = h.sh(h.wmrun_path() .. " " .. q(p))
  os.remove(p)
  assert.are.equal(0, code, err)
end

-- A job of generated records (3000, 10 ms apart in event time; RATE a second when given,
-- printing "started" to stderr at record 300), 1 s tumbling sums, printed to stdout.
local gen_job = [[
local wm = require("wm")
local env = wm.env{ watermark_interval = 0 }
env:generate(function(i)
    if i == 300 and RATE then io.stderr:write("started\n") end
    return {id = "k" .. i % 7, ts = i * 10, vc = i % 5}
  end, {count = COUNT, rate = RATE}):set_parallelism(1)
  :assign_timestamps_and_watermarks(wm.watermarks.for_monotonous_timestamps():with_timestamp_field("ts", 1))
  :set_parallelism(1)
  :key_by("id")
  :window(wm.windows.tumbling("1s"))
  :sum("vc")
  :print()
env:execute()
]]

local function gen(rate, count)
  return (gen_job:gsub("RATE", rate or "nil"):gsub("COUNT", tostring(count or 3000)))
end

describe("checkpoints in NATS JetStream", function()
  local dir, nats, store
  before_each(function()
    dir = h.tmpdir()
    nats = services.nats()
    store = nats.url .. "/ck"
  end)
  after_each(function()
    nats:stop()
    h.rmdir(dir)
  end)

  -- nothing of the store is on the local disk: no folder ck, no folder "nats:"
  local function nothing_local(where)
    assert.is_nil(io.open(where .. "/ck", "r"))
    assert.is_nil(io.open(where .. "/nats:", "r"))
    assert.is_nil(io.open("nats:", "r"))
  end

  it("a declarative job (parse_csv, sum) killed 20 times writes the file of an uninterrupted run", function()
    K.gen_csv(dir .. "/in.csv", 60000, 1)
    local err = K.kill_and_compare(dir, K.csv_job("2s") .. [[
  :key_by("id")
  :window(wm.windows.tumbling("5s"))
  :sum("vc")
  :write_lines(dir .. "/" .. arg[1] .. ".txt"):set_parallelism(1)
env:execute()
]], {".txt"}, {store = store})
    -- the last run resumed, or found the run ended (a SIGKILL landed after the end)
    assert.matches("checkpoint %d+ in nats://127%.0%.0%.1:%d+/ck", err)
    nothing_local(dir)
  end)

  it("a session-window job killed 20 times (--threads 2) writes the file of an uninterrupted run", function()
    K.gen_csv(dir .. "/in.csv", 40000, 2, 400)
    K.kill_and_compare(dir, K.csv_job("1s") .. [[
  :key_by("id")
  :window(wm.windows.session("700ms"))
  :max("vc")
  :write_lines(dir .. "/" .. arg[1] .. ".txt", "text"):set_parallelism(1)
env:execute()
]], {".txt"}, {store = store, threads = 2})
    nothing_local(dir)
  end)

  -- Stopped with SIGTERM (a checkpoint, no drain) in one folder; resumed in another that holds
  -- only the job: its output and the first's, one after the other, are an uninterrupted run's.
  it("a job stopped in one working directory resumes from the store in a fresh one", function()
    local jr = h.write_tmp(gen(), ".lua")
    local ref, ref_err, ref_code = h.sh(h.wmrun_path() .. " " .. q(jr))
    os.remove(jr)
    assert.are.equal(0, ref_code, ref_err)
    local a, b = dir .. "/a", dir .. "/b"
    os.execute("mkdir " .. q(a) .. " " .. q(b))
    local p = h.bg_job(a, gen("1000"), "--checkpoint-dir " .. q(store))
    h.finally(function() p.kill() end)
    h.wait_for(function() return h.read_or_empty(p.err):find("started\n", 1, true) end, "the job to run", 60)
    p.signal("TERM")
    assert.are.equal(0, p.wait(), h.read_or_empty(p.err))
    assert.matches("stopped by SIGTERM with checkpoint %d+ in nats://", h.read_or_empty(p.err))
    local first = h.read(a .. "/out")
    assert.is_true(#first > 0 and #first < #ref, #first .. " bytes of " .. #ref)
    K.write(b .. "/job.lua", gen())
    local out, err, code = wmrun_in(b, "--checkpoint-dir " .. q(store) .. " job.lua")
    assert.are.equal(0, code, err)
    assert.matches("wmrun: resuming from checkpoint %d+ in nats://127%.0%.0%.1:%d+/ck", err)
    assert.are.equal(ref, first .. out)
    nothing_local(b)
  end)

  -- A runs (a checkpoint every 20 ms); B opens the same store (a process that took the
  -- partition over) and runs the job to its end. A's next checkpoint is refused: A fails
  -- naming the takeover, and B's final checkpoint stays the newest.
  it("a process that another one took over from cannot complete a checkpoint", function()
    local a = dir .. "/a"
    os.execute("mkdir " .. q(a))
    local p = h.bg_job(a, gen("1000", 1000000), "--checkpoint-dir " .. q(store) .. " --checkpoint-interval 20ms")
    h.finally(function() p.kill() end)
    h.wait_for(function() return h.read_or_empty(p.err):find("started\n", 1, true) end, "the job to run", 60)
    local jb = h.write_tmp(gen(nil, 1000000), ".lua")
    local _, err, code = h.sh(h.wmrun_path() .. " --checkpoint-dir " .. q(store) .. " " .. q(jb) .. " >/dev/null")
    assert.are.equal(0, code, err)
    assert.matches("resuming from checkpoint", err)
    local rc = p.wait()
    local perr = h.read_or_empty(p.err)
    assert.are_not.equal(0, rc, perr)
    assert.matches("checkpoint store nats://127%.0%.0%.1:%d+/ck was taken over by another process "
      .. "%(pid %d+ host [^,]+, epoch 2; this process holds epoch 1%): this process lost its claim and does "
      .. "not complete checkpoint %d+", perr)
    -- the store's newest checkpoint is B's final one
    local _, err3, code3 = h.sh(h.wmrun_path() .. " --checkpoint-dir " .. q(store) .. " " .. q(jb) .. " >/dev/null")
    assert.are.equal(0, code3, err3)
    assert.matches("is of a run that ended", err3)
    os.remove(jb)
  end)

  -- nats-server 2.9 writes a message to its file before it acknowledges it (and syncs every
  -- 60 s): its process killed with SIGKILL right after the job's final checkpoint keeps it
  it("a checkpoint survives the server killed with SIGKILL and started again", function()
    local jp = dir .. "/job.lua"
    K.write(jp, gen())
    local run = h.wmrun_path() .. " --checkpoint-dir " .. q(store) .. " " .. q(jp) .. " >/dev/null"
    local _, err, code = h.sh(run)
    assert.are.equal(0, code, err)
    os.execute("kill -KILL " .. nats.pid)
    h.wait_for(function() return nats:exited() end, "nats-server to end", 60)
    nats:start_again()
    local _, err2, code2 = h.sh(run)
    assert.are.equal(0, code2, err2)
    assert.matches("checkpoint %d+ in nats://127%.0%.0%.1:%d+/ck %([%d.]+ s old%) is of a run that ended", err2)
  end)

  it("--fresh removes the store's checkpoints and starts over", function()
    local jp = K.write(dir .. "/job.lua", gen())
    local run = h.wmrun_path() .. " --checkpoint-dir " .. q(store) .. " --checkpoint-interval 1ms "
    local ref, err, code = h.sh(run .. q(jp))
    assert.are.equal(0, code, err)
    assert.is_true(#ref > 0)
    local out2, err2, code2 = h.sh(run .. q(jp))
    assert.are.equal(0, code2, err2)
    assert.are.equal("", out2) -- the run had ended: nothing to do
    local out3, err3, code3 = h.sh(run .. "--fresh " .. q(jp))
    assert.are.equal(0, code3, err3)
    assert.is_nil(err3:find("resuming", 1, true), err3)
    assert.are.equal(ref, out3) -- the whole output again
  end)

  -- the ids of the checkpoints whose messages are in the store's stream, read with read_nats
  local function ids_in_stream()
    local p = h.write_tmp(string.format([[
local wm = require("wm")
local env = wm.env{}
env:read_nats{url = %q, stream = "WMCK_ck", subject = "wmck.ck.default.>", bounded = "latest", metadata = true}
  :map(function(m) return m.subject:match("^wmck%%.ck%%.default%%.(%%d+)%%.") end)
  :print()
env:execute()
]], nats.url), ".lua")
    local out, err, code = h.sh(h.wmrun_path() .. " " .. q(p))
    os.remove(p)
    assert.are.equal(0, code, err)
    local seen, ids = {}, {}
    for id in out:gmatch("%d+") do
      if not seen[id] then seen[id], ids[#ids + 1] = true, tonumber(id) end
    end
    table.sort(ids)
    return ids
  end

  it("takes a path with '.' inside its names (a task's name): its key as given, '~' in its subjects", function()
    local jp = K.write(dir .. "/job.lua", gen())
    local run = h.wmrun_path() .. " --checkpoint-dir " .. q(store .. "/x2.jobs/task-x2.events-3") .. " " .. q(jp)
    local ref, err, code = h.sh(run)
    assert.are.equal(0, code, err)
    assert.is_true(#ref > 0)
    local _, err2, code2 = h.sh(run)
    assert.are.equal(0, code2, err2)
    assert.is_truthy(err2:find(" in " .. store .. "/x2.jobs/task-x2.events-3 (", 1, true), err2)
    assert.matches("is of a run that ended", err2)
    local p = h.write_tmp(string.format([[
local wm = require("wm")
local env = wm.env{}
for _, s in ipairs{"KV_ck", "WMCK_ck"} do
  env:read_nats{url = %q, stream = s, bounded = "latest", metadata = true}
    :map(function(m) return (m.subject:gsub("%%.%%d+%%.%%d+%%..*$", "")) end):print()
end
env:execute()
]], nats.url), ".lua")
    local out, err3, code3 = h.sh(h.wmrun_path() .. " " .. q(p))
    os.remove(p)
    assert.are.equal(0, code3, err3)
    local seen = {}
    for l in out:gmatch("[^\n]+") do seen[l] = true end
    assert.is_true(seen["$KV.ck.x2.jobs/task-x2.events-3"], out)
    assert.is_true(seen["wmck.ck.x2~jobs=task-x2~events-3"], out)
  end)

  it("keeps the newest 3 complete checkpoints and purges the messages of the others", function()
    local jp = K.write(dir .. "/job.lua", gen())
    local run = h.wmrun_path() .. " --checkpoint-dir " .. q(store) .. " "
    local _, err, code = h.sh(run .. "--checkpoint-interval 1ms " .. q(jp) .. " >/dev/null")
    assert.are.equal(0, code, err)
    local _, err2 = h.sh(run .. q(jp))
    local final = tonumber(err2:match("checkpoint (%d+) in nats://%S+ %(.-%) is of a run that ended"))
    assert.is_true(final and final >= 5, err2) -- more than 3 were taken
    assert.are.same({final - 2, final - 1, final}, ids_in_stream())
  end)

  describe("damaged or foreign data", function()
    -- runs the generated job to its end with the store (3 checkpoints kept); stderr
    local function run_to_end(args)
      local jp = dir .. "/job.lua"
      K.write(jp, gen())
      local _, err, code = h.sh(h.wmrun_path() .. " --checkpoint-dir " .. q(store) .. " " .. (args or "")
        .. " " .. q(jp) .. " >/dev/null")
      return err, code
    end

    it("a damaged newest checkpoint is skipped with the reason, and the one before it is used", function()
      local err, code = run_to_end("--checkpoint-interval 1ms")
      assert.are.equal(0, code, err)
      local err2 = run_to_end()
      local final = tonumber(err2:match("checkpoint (%d+) in nats://%S+ %(.-%) is of a run that ended"))
      assert.is_not_nil(final, err2)
      -- a chunk of its MANIFEST written again with other bytes (the run was epoch 1; the
      -- second run claimed epoch 2 but wrote nothing)
      publish(nats.url, "WMCK_ck", "wmck.ck.default." .. final .. ".1.MANIFEST.0", "not the manifest")
      local err3, code3 = run_to_end()
      assert.are.equal(0, code3, err3)
      assert.is_truthy(err3:find("warning: checkpoint " .. final .. " in " .. store
        .. " is skipped: object MANIFEST of checkpoint " .. final .. " (epoch 1): its chunk 0 has 16 bytes, not ",
        1, true), err3)
      assert.matches("resuming from checkpoint " .. (final - 1) .. " ", err3)
    end)

    it("an object that is not wmrun's is refused by name", function()
      local err, code = run_to_end("--checkpoint-interval 1ms")
      assert.are.equal(0, code, err)
      local err2 = run_to_end()
      local final = tonumber(err2:match("checkpoint (%d+) in nats://%S+ %(.-%) is of a run that ended"))
      assert.is_not_nil(final, err2)
      publish(nats.url, "WMCK_ck", "wmck.ck.default." .. final .. ".1.MANIFEST.end", "{\"hello\": 1}")
      local err3 = run_to_end()
      assert.is_truthy(err3:find("checkpoint " .. final .. " in " .. store
        .. " is skipped: object MANIFEST of checkpoint "
        .. final .. " (epoch 1): its end marker is not a wmrun checkpoint object's", 1, true), err3)
    end)

    it("a key of the bucket that wmrun did not write is refused before anything is read or written", function()
      local err0, code0 = run_to_end() -- makes the bucket
      assert.are.equal(0, code0, err0)
      publish(nats.url, "KV_ck", "$KV.ck.default", "somebody else's value")
      local err, code = run_to_end("--fresh")
      assert.are.equal(1, code, err)
      assert.is_truthy(err:find("checkpoint store " .. store .. ": key 'default' of bucket 'ck' is not wmrun's: "
        .. "it holds something wmrun did not write (it begins 'somebody else's valu') (give the store another "
        .. "bucket or path)", 1, true), err)
    end)

    it("a stream of the store's name that is not wmrun's is refused", function()
      publish(nats.url, "WMCK_ck", "other.x", "y", "other.>")
      local err, code = run_to_end()
      assert.are.equal(1, code, err)
      assert.is_truthy(err:find("checkpoint store " .. store .. ": the stream 'WMCK_ck' on " .. nats.url
        .. " is not wmrun's checkpoint stream (its subjects are not just wmck.ck.>): give the store another bucket",
        1, true), err)
    end)

    it("a URL without a bucket, or with a bad one, is refused naming it", function()
      local jp = dir .. "/job.lua"
      K.write(jp, gen())
      local _, err, code = h.sh(h.wmrun_path() .. " --checkpoint-dir " .. q(nats.url) .. " " .. q(jp))
      assert.are.equal(1, code, err)
      assert.is_truthy(err:find(nats.url .. ": give it as nats://HOST:PORT/BUCKET", 1, true), err)
      _, err, code = h.sh(h.wmrun_path() .. " --checkpoint-dir " .. q(nats.url .. "/a.b") .. " " .. q(jp))
      assert.are.equal(1, code, err)
      assert.is_truthy(err:find("the bucket name may hold only letters, digits", 1, true), err)
      -- a path's names may hold '.' inside (a scale-out task's name, task-x2.events-3), never at an
      -- end of a name or twice in a row (a KV key's tokens)
      for _, path in ipairs{"/ck/.a", "/ck/a.", "/ck/a..b", "/ck/a/.b", "/ck/a./b", "/ck/a//b", "/ck/a/"} do
        _, err, code = h.sh(h.wmrun_path() .. " --checkpoint-dir " .. q(nats.url .. path) .. " " .. q(jp))
        assert.are.equal(1, code, path .. ": " .. err)
        assert.is_truthy(err:find("the path after the bucket may hold only letters, digits, '_', '-', '.' inside "
          .. "names and single '/' between names", 1, true), path .. ": " .. err)
      end
    end)
  end)

  describe("the store's URL", function()
    it("is taken by wm.env{checkpoint = {dir = ...}}", function()
      local jp = dir .. "/job.lua"
      K.write(jp, (gen():gsub("wm.env{ watermark_interval = 0 }", string.format(
        "wm.env{ watermark_interval = 0, checkpoint = {dir = %q, interval = \"10ms\"} }", store))))
      local _, err, code = h.sh(h.wmrun_path() .. " " .. q(jp) .. " >/dev/null")
      assert.are.equal(0, code, err)
      _, err, code = h.sh(h.wmrun_path() .. " " .. q(jp) .. " >/dev/null")
      assert.are.equal(0, code, err)
      assert.is_truthy(err:find(" in " .. store .. " (", 1, true), err)
      assert.matches("is of a run that ended", err)
      nothing_local(dir)
    end)

    it("is taken by wmrun --sql --checkpoint-dir", function()
      K.write(dir .. "/in.csv", "a,1000,1\nb,2000,2\na,7000,3\n")
      K.write(dir .. "/job.sql", [[
CREATE TABLE src (id STRING, ts BIGINT, vc INT) WITH ('connector' = 'filesystem', 'path' = 'in.csv', 'format' = 'csv');
CREATE TABLE out (id STRING, vc INT) WITH ('connector' = 'filesystem', 'path' = 'out.csv', 'format' = 'csv');
INSERT INTO out SELECT id, vc FROM src WHERE vc > 1;
]])
      local _, err, code = wmrun_in(dir, "--sql --checkpoint-dir " .. q(store) .. " job.sql")
      assert.are.equal(0, code, err)
      assert.are.equal("b,2\na,3\n", h.read(dir .. "/out.csv")) -- the rows with vc > 1
      _, err, code = wmrun_in(dir, "--sql --checkpoint-dir " .. q(store) .. " job.sql")
      assert.are.equal(0, code, err)
      assert.is_truthy(err:find(" in " .. store .. " (", 1, true), err)
      assert.matches("is of a run that ended", err)
      nothing_local(dir)
    end)

    it("is taken by scale_out (wm.env{checkpoint = {url = ...}}): the tasks' checkpoints and ENDED marks in the "
      .. "store, nothing in the working directory", function()
      publish(nats.url, "EV", "ev.0.x", "a", "ev.>")
      publish(nats.url, "EV", "ev.4.y", "b", "ev.>")
      local jp = dir .. "/job.lua"
      K.write(jp, string.format([[
local wm = require("wm")
local env = wm.env{checkpoint = {url = %q, interval = "10ms"}}
env:read_nats{url = %q, stream = "EV", subject = "ev.*.>", partition_count = 6, group = "g", scale_out = true,
  bounded = "latest"}:print()
env:execute()
]], store, nats.url))
      local out, err, code = wmrun_in(dir, "job.lua")
      assert.are.equal(0, code, err)
      assert.are.same({"a", "b"}, h.sorted_lines(out))
      nothing_local(dir)
      -- every task has its ENDED mark in the store: a second run has nothing to do
      out, err, code = wmrun_in(dir, "job.lua")
      assert.are.equal(0, code, err)
      assert.are.equal("", out)
      assert.is_nil(err:find("resuming", 1, true), err)
      -- the marks are keys of the bucket beside the tasks' keys
      local p = h.write_tmp(string.format([[
local wm = require("wm")
local env = wm.env{}
env:read_nats{url = %q, stream = "KV_ck", bounded = "latest", metadata = true}
  :map(function(m) return m.subject end):print()
env:execute()
]], nats.url), ".lua")
      local keys
      keys, err, code = h.sh(h.wmrun_path() .. " " .. q(p))
      os.remove(p)
      assert.are.equal(0, code, err)
      local want = {}
      for pn = 0, 5 do
        want[#want + 1] = "$KV.ck.task-EV-" .. pn
        want[#want + 1] = "$KV.ck.task-EV-" .. pn .. "=ENDED"
      end
      table.sort(want)
      assert.are.same(want, h.sorted_lines(keys))
    end)

    it("checkpoint = {url = ...} takes a store's URL only, and not with dir", function()
      local like = "url must be a checkpoint store's URL like nats://HOST:PORT/BUCKET, got "
      for opt, msg in pairs{['{url = "ck"}'] = like .. '"ck"', ['{url = 3}'] = like .. "number",
                            ['{url = "nats://h:1/b", dir = "ck"}'] = "give dir or url, not both"} do
        local jp = K.write(dir .. "/job.lua", "local wm = require('wm')\nlocal env = wm.env{checkpoint = " .. opt
          .. "}\n")
        local _, err, code = h.sh(h.wmrun_path() .. " " .. q(jp))
        assert.are_not.equal(0, code)
        assert.is_truthy(err:find("job.lua:2: env checkpoint: " .. msg, 1, true), err)
      end
    end)
  end)
end)
