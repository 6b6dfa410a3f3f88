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

  -- ---- item 6: the output file a checkpoint wrote ---------------------------------------------

  describe("a resumed write_lines", function()
    local text = [[
local wm = require("wm")
local dir = arg[0]:match("^(.*)/")
local env = wm.env{}
env:generate(function(i)
    if i == 300 and RATE then io.stderr:write("started\n") end
    return "line " .. i
  end, {count = 3000, rate = RATE}):write_lines(dir .. "/out.txt")
env:execute()
]]

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
    local text = [[
local wm = require("wm")
local dir = arg[0]:match("^(.*)/")
local env = wm.env{}
env:generate(function(i)
    if i == 100 and RATE then io.stderr:write("started\n") end
    return "line " .. i
  end, {count = 3000, rate = RATE}):write_lines(dir .. "/OUT.txt")
env:execute()
]]

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
