-- A SIGTERM stop (with a checkpoint, or --stop-with-savepoint) on several threads, resumed:
-- every record is emitted exactly once across the two runs (docs/checkpoints.md, "--threads").
-- A thread that has taken its part of the stopping checkpoint emits nothing past its cut (its
-- sources pause, no timer fires, what the other threads send is kept, not processed): what it
-- would emit there the resumed run emits, from the checkpoint's sources, state and records in
-- flight. Before the fix a thread went on until the last one had cut, and print and Lua sinks
-- showed 3 to 42 ids twice per stop.
--
-- The job: ids 1..2000 from a generator, keyed by id % 17 into a Lua process function that
-- emits the id, into print or a Lua sink. The stopped run goes at 1000 records a second and
-- says "started" at id 300; SIGTERM then. Each id of 1..2000 must be printed once in all.
local h = require("helper")

local function q(s) return h.shell_quote(s) end

local JOB = [[
local wm = require("wm")
local env = wm.env{}
env:generate(function(i)
  if i == 300 and RATE then io.stderr:write("started\n") end
  return {id = i}
end, {count = 2000, rate = RATE})
  :key_by(function(r) return r.id % 17 end)
  :process{process_element = function(r, ctx, out) out(r.id) end}
  SINK
env:execute()
]]

local SINKS = {
  print = ":print()",
  sink = ':sink(function(r) io.write(r, "\\n") end)',
}

-- what an id was printed as, without print's "N> " prefix
local function ids(text, seen)
  for line in text:gmatch("[^\n]+") do
    local id = assert(tonumber((line:gsub("^%d+> ", ""))), "not an id: " .. line)
    seen[id] = (seen[id] or 0) + 1
  end
end

-- The ids printed twice or more, and the ids missing, across the two runs' outputs.
local function check_once(part, rest)
  local seen = {}
  ids(part, seen)
  ids(rest, seen)
  local twice, missing = {}, {}
  for id = 1, 2000 do
    if (seen[id] or 0) > 1 then twice[#twice + 1] = id .. "x" .. seen[id] end
    if not seen[id] then missing[#missing + 1] = id end
  end
  for id in pairs(seen) do assert.is_true(id >= 1 and id <= 2000, "unexpected id " .. id) end
  return twice, missing
end

-- Runs the job stopped by SIGTERM, then resumed (as fast as it can); args: wmrun's options
-- of both runs; stop_args: more of the stopped run; resume_args: instead of the checkpoint
-- directory, for the resumed run. Returns the stopped run's output and the resumed run's.
local function stop_and_resume(dir, sink, args, stop_args, resume_args)
  local job = JOB:gsub("SINK", SINKS[sink])
  local ck = "--checkpoint-dir " .. q(dir .. "/ck") .. " "
  local p = h.bg_job(dir, (job:gsub("RATE", "1000")), args .. " " .. ck .. (stop_args or ""))
  h.finally(p.kill)
  h.wait_for(function() return h.read_or_empty(p.err):find("started\n", 1, true) end, "the job to run", 60)
  p.signal("TERM")
  local rc = p.wait()
  local perr = h.read_or_empty(p.err)
  assert.are.equal(0, rc, perr)
  assert.matches("stopped by SIGTERM with checkpoint %d+", perr)
  local f = assert(io.open(p.job, "w"))
  f:write((job:gsub("RATE", "nil")))
  f:close()
  local rest, err, code = h.wmrun(args .. " " .. (resume_args or ck) .. q(p.job))
  assert.are.equal(0, code, err)
  assert.matches("resuming from", err)
  return h.read(p.out), rest
end

describe("a SIGTERM stop on several threads", function()
  local dir
  before_each(function() dir = h.tmpdir() end)
  after_each(function() os.execute("rm -rf " .. q(dir)) end)

  local cases = {
    {"print", "-p 2 --threads 2", 3},
    {"print", "-p 3 --threads 2", 3},
    {"sink", "-p 2 --threads 2", 3},
    {"sink", "-p 3 --threads 2", 2},
    -- checkpoints every 20 ms: the SIGTERM often comes while one is under way (given up for
    -- the stop's own)
    {"print", "-p 3 --threads 3 --checkpoint-interval 20ms", 3},
  }
  for _, c in ipairs(cases) do
    local sink, args, times = c[1], c[2], c[3]
    it("with " .. sink .. " at " .. args .. ": each id once across stop and resume (" .. times
      .. " runs)", function()
      for run = 1, times do
        local sub = dir .. "/" .. run
        assert(os.execute("mkdir " .. q(sub)))
        local part, rest = stop_and_resume(sub, sink, args)
        assert.is_true(#part > 0 and #rest > 0)
        local twice, missing = check_once(part, rest)
        assert.are.same({}, twice, "run " .. run .. ": ids emitted twice")
        assert.are.same({}, missing, "run " .. run .. ": ids missing")
      end
    end)
  end

  it("--stop-with-savepoint at -p 2 --threads 2, resumed from the savepoint", function()
    for run = 1, 2 do
      local sub = dir .. "/" .. run
      assert(os.execute("mkdir " .. q(sub)))
      local part, rest = stop_and_resume(sub, "print", "-p 2 --threads 2",
        "--checkpoint-interval 0 --stop-with-savepoint " .. q(sub .. "/sp") .. " ",
        "--checkpoint-dir " .. q(sub .. "/ck2") .. " --from-savepoint " .. q(sub .. "/sp") .. " ")
      local twice, missing = check_once(part, rest)
      assert.are.same({}, twice, "run " .. run .. ": ids emitted twice")
      assert.are.same({}, missing, "run " .. run .. ": ids missing")
    end
  end)
end)
