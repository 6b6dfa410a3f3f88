-- Checkpoints and the files around them (docs/checkpoints.md, issue 34 items 6 to 9): an
-- output that is not the file a checkpoint wrote, two jobs on one checkpoint directory, a
-- window function changed between a checkpoint and its resume, outputs that cannot seek.
--
-- No fixed sleeps: every wait is for an event (a line on stderr, a file, an exit status).
local h = require("helper")
local q = h.shell_quote

describe("checkpoint files", function()
  local dir
  before_each(function() dir = h.tmpdir() end)
  after_each(function() h.rmdir(dir) end)

  local function job(text, name)
    local p = dir .. "/" .. (name or "job.lua")
    local f = assert(io.open(p, "w"))
    f:write(text)
    f:close()
    return p
  end

  -- Starts `cat path > out` in the background (a FIFO's reader); returns a function that
  -- waits until it has ended (its writer closed the FIFO) and gives what it read.
  local function fifo_reader(path, out)
    local done = out .. ".done"
    os.execute(string.format("sh -c 'cat %s > %s; echo ok > %s' >/dev/null 2>&1 </dev/null &",
      q(path), q(out), q(done)))
    -- a test that failed before its job opened the FIFO must not leave the reader waiting in
    -- its open: a writer that opens and closes it ends it (timeout: when the reader is gone)
    h.finally(function()
      if h.read_or_empty(done) == "" then os.execute("timeout 5 sh -c " .. q(": > " .. q(path))) end
    end)
    return function()
      h.wait_for(function() return h.read_or_empty(done) ~= "" end, "the FIFO's reader to end", 60)
      return h.read(out)
    end
  end

  local function numbered(n)
    local t = {}
    for i = 1, n do t[i] = '"line ' .. i .. '"' end
    return table.concat(t, "\n") .. "\n"
  end

  -- A job writing "line 1" .. "line 3000" to `out` beside itself; with RATE set (the specs
  -- replace it) it says "started" on stderr at record `cue`.
  local function generator_job(cue, out)
    return string.format([[
local wm = require("wm")
local dir = arg[0]:match("^(.*)/")
local env = wm.env{}
env:generate(function(i)
    if i == %d and RATE then io.stderr:write("started\n") end
    return "line " .. i
  end, {count = 3000, rate = RATE}):write_lines(dir .. "/%s")
env:execute()
]], cue, out)
  end

  -- ---- item 6: the output file a checkpoint wrote ---------------------------------------------

  describe("a resumed write_lines", function()
    local text = generator_job(300, "out.txt")

    -- a run stopped by SIGTERM with a checkpoint (its file holds part of the output)
    local function stopped(ck)
      local p = h.bg_job(dir, (text:gsub("RATE", "1000")), ck)
      h.finally(p.kill)
      h.wait_for(function() return h.read_or_empty(p.err):find("started\n", 1, true) end, "the job to run", 60)
      p.signal("TERM")
      local rc = p.wait()
      assert.are.equal(0, rc, h.read_or_empty(p.err))
      local part = h.read(dir .. "/out.txt")
      assert.is_true(#part > 0)
      return part
    end

    it("refuses another file put at its path, naming it, and leaves that file as it was", function()
      local ck = "--checkpoint-dir " .. q(dir .. "/ck") .. " "
      local part = stopped(ck)
      -- an unrelated file, longer than the checkpoint's length, renamed into the output's
      -- place (made while the old one exists: another inode)
      local other = string.rep("somebody else's data\n", 2000)
      local f = assert(io.open(dir .. "/other.txt", "wb"))
      f:write(other)
      f:close()
      assert(os.rename(dir .. "/out.txt", dir .. "/saved.txt"))
      assert(os.rename(dir .. "/other.txt", dir .. "/out.txt"))
      local resume = ck .. q(job((text:gsub("RATE", "nil")), "resume.lua"))
      local _, err, code = h.wmrun(resume)
      assert.are_not.equal(0, code)
      assert.truthy(err:find("cannot restore '" .. dir .. "/out.txt': it is not the file the checkpoint wrote: "
        .. "another file is at its path (device ", 1, true), err)
      assert.truthy(err:find("start over with --fresh", 1, true), err)
      assert.are.equal(other, h.read(dir .. "/out.txt"))
      -- the file the job wrote, put back: resumed to the exact output
      assert.are.equal(part, h.read(dir .. "/saved.txt"))
      assert(os.rename(dir .. "/saved.txt", dir .. "/out.txt"))
      _, err, code = h.wmrun(resume)
      assert.are.equal(0, code, err)
      assert.are.equal(numbered(3000), h.read(dir .. "/out.txt"))
    end)

    it("refuses its file rewritten in place with other bytes", function()
      local ck = "--checkpoint-dir " .. q(dir .. "/ck") .. " "
      local part = stopped(ck)
      local f = assert(io.open(dir .. "/out.txt", "r+b")) -- the same inode, other bytes
      f:write((part:gsub("line", "LINE")) .. "and more")
      f:close()
      local _, err, code = h.wmrun(ck .. q(job((text:gsub("RATE", "nil")), "resume.lua")))
      assert.are_not.equal(0, code)
      assert.truthy(err:find("it is not the file the checkpoint wrote: its last", 1, true), err)
      assert.are.equal((part:gsub("line", "LINE")) .. "and more", h.read(dir .. "/out.txt"))
    end)
  end)

  -- ---- item 7: one job per checkpoint directory ----------------------------------------------

  describe("a checkpoint directory", function()
    local text = generator_job(100, "OUT.txt")

    it("is refused to a second job while a first one runs on it, naming the holder's pid and host", function()
      local ck = "--checkpoint-dir " .. q(dir .. "/ck") .. " --checkpoint-interval 20ms "
      local p = h.bg_job(dir, (text:gsub("RATE", "1000"):gsub("OUT", "a")), ck)
      h.finally(p.kill)
      h.wait_for(function() return h.read_or_empty(p.err):find("started\n", 1, true) end, "the job to run", 60)
      local host = h.lines("hostname")[1]
      -- the same job again, on the same output: it must neither write nor cut it
      local second = job((text:gsub("RATE", "nil"):gsub("OUT", "a")), "second.lua")
      for _, extra in ipairs{"", "--fresh "} do
        local _, err, code = h.wmrun(ck .. extra .. q(second))
        assert.are_not.equal(0, code)
        assert.truthy(err:find("checkpoint directory " .. dir .. "/ck is in use by another job (pid "
          .. p.pid() .. " host " .. host .. "; lock file " .. dir .. "/ck/LOCK)", 1, true), err)
        assert.truthy(err:find("--checkpoint-dir", 1, true), err)
      end
      assert.is_nil(p.done()) -- the first one runs on, undisturbed
      p.signal("TERM")
      local rc = p.wait()
      local perr = h.read_or_empty(p.err)
      assert.are.equal(0, rc, perr)
      assert.matches("stopped by SIGTERM with checkpoint", perr)
      -- the lock went with its process: the next job resumes the first one's checkpoint
      local _, err, code = h.wmrun(ck .. q(job((text:gsub("RATE", "nil"):gsub("OUT", "a")), "third.lua")))
      assert.are.equal(0, code, err)
      assert.matches("resuming from checkpoint", err)
      assert.are.equal(numbered(3000), h.read(dir .. "/a.txt"))
    end)

    it("is free again after its job was killed with SIGKILL", function()
      local ck = "--checkpoint-dir " .. q(dir .. "/ck") .. " --checkpoint-interval 20ms "
      local p = h.bg_job(dir, (text:gsub("RATE", "1000"):gsub("OUT", "a")), ck)
      h.finally(p.kill)
      h.wait_for(function() return h.read_or_empty(p.err):find("started\n", 1, true) end, "the job to run", 60)
      p.kill()
      p.wait()
      local _, err, code = h.wmrun(ck .. q(job((text:gsub("RATE", "nil"):gsub("OUT", "a")), "again.lua")))
      assert.are.equal(0, code, err)
      assert.are.equal(numbered(3000), h.read(dir .. "/a.txt"))
    end)
  end)

  -- ---- item 8: a window function changed between a checkpoint and its resume ----------------

  describe("a resumed window", function()
    -- FN: the window function; PAD: lines before it (moves a Lua function's definition)
    local text = [[
local wm = require("wm")
local dir = arg[0]:match("^(.*)/")
local env = wm.env{ watermark_interval = 0 }
env:generate(function(i)
    if i == 300 and RATE then io.stderr:write("started\n") end
    return {id = "k" .. i % 7, ts = i * 10, vc = i % 5}
  end, {count = 3000, rate = RATE}):set_parallelism(1)
  :assign_timestamps_and_watermarks(wm.watermarks.for_monotonous_timestamps():with_timestamp_field("ts", 1))
  :set_parallelism(1)
  :key_by("id")
  :window(wm.windows.tumbling("1s"))PAD
  FN
  :write_lines(dir .. "/out.txt"):set_parallelism(1)
env:execute()
]]
    local n = 0
    local rolling = false -- a rolling aggregation of the keyed stream instead of a window
    before_each(function() rolling = false end)
    local function make(fn, rate, pad)
      n = n + 1
      local t = text:gsub("RATE", rate or "nil"):gsub("PAD", function() return pad or "" end)
      if rolling then t = t:gsub(':window%(wm%.windows%.tumbling%("1s"%)%)', "") end
      return job((t:gsub("FN", function() return fn end)), "job" .. n .. ".lua")
    end
    local ck
    -- a run of fn stopped by SIGTERM with windows open (a window holds 100 records, the
    -- stop comes after 300)
    local function stopped(fn, pad)
      ck = "--checkpoint-dir " .. q(dir .. "/ck") .. " "
      local jp = make(fn, "1000", pad)
      local p = h.bg_job(dir, h.read(jp), ck)
      h.finally(p.kill)
      h.wait_for(function() return h.read_or_empty(p.err):find("started\n", 1, true) end, "the job to run", 60)
      p.signal("TERM")
      local rc = p.wait()
      assert.are.equal(0, rc, h.read_or_empty(p.err))
      assert.matches("stopped by SIGTERM with checkpoint", h.read_or_empty(p.err))
    end
    local function refused(fn, was, now, pad, extra)
      local before = h.read(dir .. "/out.txt")
      local _, err, code = h.wmrun(ck .. (extra or "") .. q(make(fn, nil, pad)))
      assert.are.equal(1, code, err)
      assert.truthy(err:find((rolling and "the rolling aggregation" or "the window function")
        .. " changed since the checkpoint: its state was made by\n    "
        .. was .. "\n  and this job's is\n    " .. now .. "\n", 1, true), err)
      assert.truthy(err:find("run with --allow-state-change", 1, true), err)
      assert.are.equal(before, h.read(dir .. "/out.txt")) -- nothing written, nothing cut
    end

    it("refuses a built-in function changed (sum to max, count, reduce) unless --allow-state-change", function()
      stopped(':sum("vc")')
      refused(':max("vc")', "sum(vc)", "max(vc)")
      refused(":count()", "sum(vc)", "count")
      local red = ":reduce(function(a, b) return {id = a.id, ts = a.ts, vc = a.vc + b.vc} end)"
      local _, err, code = h.wmrun(ck .. q(make(red)))
      assert.are.equal(1, code, err)
      assert.matches("its state was made by\n    sum%(vc%)\n  and this job's is\n    reduce %(function at "
        .. "line 12 of the job%)", err)
      -- allowed: resumed, with a warning
      local _, err2, code2 = h.wmrun(ck .. "--allow-state-change " .. q(make(':max("vc")')))
      assert.are.equal(0, code2, err2)
      assert.matches("resuming from checkpoint", err2)
      assert.matches("warning: %-%-allow%-state%-change: the function of 1 window operator changed since "
        .. "checkpoint %d+; the windows open then go on from the state the old function made", err2)
    end)

    it("refuses a reduce function defined elsewhere, unless its uid's version stands for it", function()
      local f = ":reduce(function(a, b) return {id = a.id, ts = a.ts, vc = a.vc + b.vc} end)"
      stopped(f)
      -- the same text two lines further down: another function for wmrun
      refused(f, "reduce (function at line 12 of the job)", "reduce (function at line 14 of the job)", "\n\n")
    end)

    it("refuses a rolling aggregation changed (sum to max, reduce) unless --allow-state-change", function()
      rolling = true
      stopped(':sum("vc")')
      refused(':max("vc")', "sum(vc)", "max(vc)")
      refused(":reduce(function(a, b) return {id = a.id, ts = a.ts, vc = a.vc + b.vc} end)", "sum(vc)",
        "reduce (function at line 12 of the job)")
      local _, err, code = h.wmrun(ck .. "--allow-state-change " .. q(make(':max("vc")')))
      assert.are.equal(0, code, err)
      assert.matches("warning: %-%-allow%-state%-change", err)
    end)

    it("checks a uid's version", function()
      for _, bad in ipairs{"{}", "''", "'a b'", "1.5"} do
        local _, err, code = h.run_job('local wm = require("wm")\nlocal env = wm.env{}\n'
          .. 'env:from_elements{1}:map(function(x) return x end):uid("m", ' .. bad .. ')\n')
        assert.are.equal(1, code, err)
        assert.matches("uid: bad version", err)
      end
    end)

    it("takes a uid's version for the function: moved is fine, another version is refused", function()
      local f = ':reduce(function(a, b) return {id = a.id, ts = a.ts, vc = a.vc + b.vc} end):uid("sums", 1)'
      stopped(f)
      refused(f:gsub('"sums", 1', '"sums", "2"'), "reduce (version 1 of uid sums)",
        "reduce (version 2 of uid sums)")
      local _, err, code = h.wmrun(ck .. q(make(f, nil, "\n\n")))
      assert.are.equal(0, code, err)
      assert.matches("resuming from checkpoint", err)
      assert.is_nil(err:find("warning", 1, true), err)
    end)
  end)

  -- ---- item 9: outputs that cannot seek -----------------------------------------------------

  describe("write_lines to an output that cannot seek", function()
    local gen = [[
local wm = require("wm")
local env = wm.env{}
env:generate(function(i) return "line " .. i end, {count = 2000}):write_lines(arg[1])
env:execute()
]]

    it("writes a FIFO (with and without checkpoints)", function()
      os.execute("mkfifo " .. q(dir .. "/fifo"))
      local jp = job(gen)
      for _, args in ipairs{"", "--checkpoint-dir " .. q(dir .. "/ck") .. " --checkpoint-interval 1ms "} do
        local got = fifo_reader(dir .. "/fifo", dir .. "/got")
        local _, err, code = h.wmrun(args .. q(jp) .. " " .. q(dir .. "/fifo"))
        assert.are.equal(0, code, err)
        assert.are.equal(numbered(2000), got())
      end
    end)

    it("writes /dev/stdout when it is a pipe", function()
      local jp = job(gen)
      for _, args in ipairs{"", "--checkpoint-dir " .. q(dir .. "/ck2") .. " "} do
        local _, err, code = h.sh(string.format("sh -c %s", q(h.wmrun_path() .. " " .. args .. q(jp)
          .. " /dev/stdout | cat > " .. q(dir .. "/got"))))
        assert.are.equal(0, code, err)
        assert.are.equal("", err)
        assert.are.equal(numbered(2000), h.read(dir .. "/got"))
      end
    end)

    it("is at-least-once across a stop with a checkpoint: nothing is cut, nothing is lost", function()
      os.execute("mkfifo " .. q(dir .. "/fifo"))
      local text = [[
local wm = require("wm")
local dir = arg[0]:match("^(.*)/")
local env = wm.env{}
env:generate(function(i)
    if i == 300 and RATE then io.stderr:write("started\n") end
    return "line " .. i
  end, {count = 3000, rate = RATE}):write_lines(dir .. "/fifo")
env:execute()
]]
      local ck = "--checkpoint-dir " .. q(dir .. "/ck") .. " "
      local first = fifo_reader(dir .. "/fifo", dir .. "/got1")
      local p = h.bg_job(dir, (text:gsub("RATE", "1000")), ck)
      h.finally(p.kill)
      h.wait_for(function() return h.read_or_empty(p.err):find("started\n", 1, true) end, "the job to run", 60)
      p.signal("TERM")
      local rc = p.wait()
      local perr = h.read_or_empty(p.err)
      assert.are.equal(0, rc, perr)
      assert.matches("stopped by SIGTERM with checkpoint", perr)
      local got1 = first()
      local second = fifo_reader(dir .. "/fifo", dir .. "/got2")
      local _, err, code = h.wmrun(ck .. q(job((text:gsub("RATE", "nil")), "job2.lua")))
      assert.are.equal(0, code, err)
      assert.matches("resuming from checkpoint", err)
      local got2 = second()
      -- the first run's lines are 1..k in order; the second's start at or before k + 1 and
      -- go on to the end in order: every line at least once
      local n1 = 0
      for l in got1:gmatch("[^\n]+") do
        n1 = n1 + 1
        assert.are.equal('"line ' .. n1 .. '"', l)
      end
      assert.is_true(n1 >= 300, "the first run wrote " .. n1 .. " lines")
      local from = tonumber(got2:match('^"line (%d+)"'))
      assert.is_true(from ~= nil and from <= n1 + 1, "the resumed run starts at line " .. tostring(from))
      local want = {}
      for i = from, 3000 do want[#want + 1] = '"line ' .. i .. '"' end
      assert.are.equal(table.concat(want, "\n") .. "\n", got2)
    end)
  end)
end)
