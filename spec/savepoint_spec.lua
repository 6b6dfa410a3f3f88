-- Savepoints (docs/checkpoints.md, "Savepoints"): `wmrun savepoint CKDIR TARGET` against a
-- running job, `--stop-with-savepoint` on SIGTERM, `wmrun --from-savepoint PATH` into a changed
-- job (operators matched by uid, new ones empty, dropped state refused by uid unless
-- --allow-non-restored-state), damaged savepoints.
--
-- The job reads in.csv through a Lua source that stops at line HALF until the file `go`
-- exists (and says so by making `paused`): a savepoint taken while it waits holds exactly the
-- first HALF lines, whatever the machine's speed, so what a new operator sees is known.
local h = require("helper")
local K = require("ckpt_kill")

local q = K.q
local N, HALF, KEYS, SIZE = 400, 200, 5, 500

-- in.csv: id,ts,vc with increasing timestamps (no record is late anywhere)
local function gen_input(dir)
  math.randomseed(30)
  local lines, t = {}, 0
  for i = 1, N do
    t = t + math.random(1, 40)
    lines[i] = string.format("k%d,%d,%d", math.random(1, KEYS), t, math.random(1, 9))
  end
  K.write(dir .. "/in.csv", table.concat(lines, "\n") .. "\n")
  return lines
end

local common = [[
local wm = require("wm")
local dir = arg[0]:match("^(.*)/") or "."
local lines = {}
for l in io.lines(dir .. "/in.csv") do lines[#lines + 1] = l end
local function exists(p) local f = io.open(p) if f then f:close() return true end return false end
local env = wm.env{watermark_interval = 0}
local s = env:source{
  poll = function(ctx)
    ctx.i = ctx.i or 0
    if ctx.i == HALF and not exists(dir .. "/go") then
      if not ctx.told then io.open(dir .. "/paused", "w"):close() ctx.told = true end
      return 10
    end
    if ctx.i >= #lines then return false end
    ctx.i = ctx.i + 1
    ctx:emit(lines[ctx.i])
    return true
  end,
  snapshot = function(ctx) return {i = ctx.i or 0} end,
  restore = function(ctx, t) ctx.i = t.i end,
}:parse_csv{"id", "ts:integer", "vc:integer"}
  :assign_timestamps_and_watermarks(wm.watermarks.for_monotonous_timestamps():with_timestamp_field("ts"))
]]

-- v1: 500 ms sums per key into out.txt; v2: the same with a filter inserted before the window
-- (every operator after it moves) and a new branch, counts per key and window into counts.txt;
-- v3: drops the window, writing the lines it reads into raw.txt
local jobs = {
  v1 = [[
s:key_by("id"):window(wm.windows.tumbling(500)):sum("vc"):uid("sums")
  :write_lines(dir .. "/out.txt"):uid("out")
env:execute()
]],
  v2 = [[
s:filter(function(r) return r.vc > 0 end)
  :key_by("id"):window(wm.windows.tumbling(500)):sum("vc"):uid("sums")
  :write_lines(dir .. "/out.txt"):uid("out")
s:key_by("id"):window(wm.windows.tumbling(500)):count():uid("counts")
  :write_lines(dir .. "/counts.txt"):uid("counts-out")
env:execute()
]],
  v3 = [[
s:map(function(r) return r.id .. "," .. r.ts .. "," .. r.vc end):write_lines(dir .. "/raw.txt", "text"):uid("raw")
env:execute()
]],
}

local function write_jobs(dir)
  for name, text in pairs(jobs) do K.write(dir .. "/" .. name .. ".lua", (common:gsub("HALF", HALF)) .. text) end
end

local function wmrun(dir, args)
  return h.sh("cd " .. q(dir) .. " && timeout 120 " .. h.wmrun_path() .. " " .. args)
end

-- The counts a new count window sees from line HALF + 1 on, as write_lines prints them
-- (sorted): worked out here from the input, not by wmrun.
local function expected_counts(lines)
  local c = {}
  for i = HALF + 1, N do
    local k, ts = lines[i]:match("^([^,]+),(%d+)")
    local start = math.tointeger(tonumber(ts) // SIZE * SIZE)
    local key = k .. "|" .. start
    c[key] = (c[key] or 0) + 1
  end
  local out = {}
  for key, n in pairs(c) do
    local k, start = key:match("^(.-)|(%d+)$")
    out[#out + 1] = string.format('{"count":%d,"key":"%s","start":%s,"stop":%d}', n, k, start, tonumber(start) + SIZE)
  end
  table.sort(out)
  return table.concat(out, "\n")
end

-- Starts v1 with checkpoints in dir/ck (none at an interval) and waits until it holds at
-- line HALF; the background handle.
local function start_v1(dir, args)
  os.remove(dir .. "/go")
  os.remove(dir .. "/paused")
  local job = h.bg_job(dir, (common:gsub("HALF", HALF)) .. jobs.v1,
    (args or "") .. " --checkpoint-dir " .. q(dir .. "/ck") .. " --checkpoint-interval 0")
  h.finally(job.kill)
  h.wait_for(function() return io.open(dir .. "/paused") end, "the job to reach line " .. HALF, 60)
  return job
end

-- What an uninterrupted v1 writes (no checkpoints, nothing held).
local function reference(dir, args)
  K.write(dir .. "/go", "")
  local _, err, code = wmrun(dir, (args or "") .. " v1.lua")
  assert.are.equal(0, code, err)
  local ref = h.read(dir .. "/out.txt")
  os.remove(dir .. "/out.txt")
  return ref
end

describe("savepoints", function()
  local dir, lines
  before_each(function()
    dir = h.tmpdir()
    lines = gen_input(dir)
    write_jobs(dir)
  end)
  after_each(function() h.rmdir(dir) end)

  for _, p in ipairs{1, 2} do
    it("taken from a running job (-p " .. p .. "), resumed by a job with an added operator", function()
      local args = "-p " .. p
      local ref = reference(dir, args)
      local job = start_v1(dir, args)
      local out, err, code = wmrun(dir, "savepoint ck sp")
      assert.are.equal(0, code, err)
      assert.matches("savepoint of checkpoint %d+ of .*job%.lua written to " .. dir:gsub("%p", "%%%0") .. "/sp", out)
      assert.matches("savepoint of checkpoint %d+", h.read(job.err)) -- the job says so too
      job.kill()
      job.wait()
      -- the format: one checkpoint, its parts by uid, the MANIFEST's savepoint line
      local chk = h.lines("ls " .. q(dir .. "/sp") .. " | grep chk-")
      assert.are.equal(1, #chk)
      local parts = h.read_or_empty(dir .. "/sp/" .. chk[1] .. "/MANIFEST")
      assert.matches("uid%-sums", parts)
      assert.matches("\nsavepoint %d+ [^\n]*/ck\n", parts)
      -- the changed job from the savepoint, in a checkpoint folder of its own
      K.write(dir .. "/go", "")
      _, err, code = wmrun(dir, args .. " --checkpoint-dir ck2 --from-savepoint sp v2.lua")
      assert.are.equal(0, code, err)
      assert.matches("resuming from checkpoint %d+ in savepoint sp", err)
      assert.matches("savepoint sp holds no state of 'filter %(v2%.lua:%d+%)", err)
      assert.matches("'tumbling window count %(v2%.lua:", err)
      assert.not_matches("sum%(vc%)", err:match("holds no state of([^\n]*)"))
      -- the window with uid 'sums' went on from its state (its place moved): out.txt is the
      -- uninterrupted run's, byte for byte; the new count window saw the lines after the cut
      assert.are.equal(ref, h.read(dir .. "/out.txt"))
      assert.are.equal(expected_counts(lines), K.sorted(h.read(dir .. "/counts.txt")))
      -- started again, it goes on from its own (final) checkpoint, not from the savepoint
      _, err, code = wmrun(dir, args .. " --checkpoint-dir ck2 --from-savepoint sp v2.lua")
      assert.are.equal(0, code, err)
      assert.matches("is of a run that ended", err)
    end)
  end

  it("taken from a running job at -p 2, resumed at -p 3 and -p 1 (key groups); a changed job refused", function()
    local ref3, ref1 = K.sorted(reference(dir, "-p 3")), K.sorted(reference(dir, "-p 1"))
    local job = start_v1(dir, "-p 2")
    local _, err, code = wmrun(dir, "savepoint ck sp")
    assert.are.equal(0, code, err)
    job.kill()
    job.wait()
    K.write(dir .. "/go", "")
    -- the same job at another parallelism: its keyed state restored by key group, its
    -- output the uninterrupted run's at the new parallelism (the lines of its instances
    -- interleave: compared sorted). out.txt is the sink's: each resume cuts it back to the
    -- savepoint's length (the windows that fired before the cut) and goes on from there.
    for _, c in ipairs{{"-p 3", ref3, "ck3"}, {"-p 1", ref1, "ck1"}} do
      _, err, code = wmrun(dir, c[1] .. " --checkpoint-dir " .. c[3] .. " --from-savepoint sp v1.lua")
      assert.are.equal(0, code, err)
      assert.matches("resuming from checkpoint %d+ in savepoint sp", err)
      assert.matches("keyed state restored by key group", err)
      assert.are.equal(c[2], K.sorted(h.read(dir .. "/out.txt")), c[1])
    end
    -- a changed job at another parallelism: refused, saying what to do
    _, err, code = wmrun(dir, "-p 3 --checkpoint-dir ck4 --from-savepoint sp v2.lua")
    assert.are.equal(1, code, err)
    assert.matches("cannot resume from checkpoint %d+ in savepoint sp: it was taken at %-p 2 and this "
      .. "run is at %-p 3, and the job changed", err)
    assert.matches("Resume the changed job at %-p 2, then restore its next checkpoint at %-p 3", err)
  end)

  it("--stop-with-savepoint: SIGTERM writes one, and the changed job resumes from it", function()
    local ref = reference(dir)
    os.remove(dir .. "/go")
    local job = h.bg_job(dir, (common:gsub("HALF", HALF)) .. jobs.v1, "--checkpoint-dir " .. q(dir .. "/ck")
      .. " --checkpoint-interval 0 --stop-with-savepoint " .. q(dir .. "/sp"))
    h.finally(job.kill)
    os.remove(dir .. "/paused")
    h.wait_for(function() return io.open(dir .. "/paused") end, "the job to reach line " .. HALF, 60)
    job.signal("TERM")
    assert.are.equal(0, job.wait(), h.read(job.err))
    assert.matches("stopped by SIGTERM with checkpoint %d+ in .*/ck and savepoint .*/sp", h.read(job.err))
    K.write(dir .. "/go", "")
    local _, err, code = wmrun(dir, "--checkpoint-dir ck2 --from-savepoint sp v2.lua")
    assert.are.equal(0, code, err)
    assert.are.equal(ref, h.read(dir .. "/out.txt"))
    assert.are.equal(expected_counts(lines), K.sorted(h.read(dir .. "/counts.txt")))
  end)

  it("a job that drops a stateful operator is refused, naming its uid; --allow-non-restored-state", function()
    local job = start_v1(dir)
    local _, err, code = wmrun(dir, "savepoint ck sp")
    assert.are.equal(0, code, err)
    job.kill()
    job.wait()
    K.write(dir .. "/go", "")
    _, err, code = wmrun(dir, "--checkpoint-dir ck3 --from-savepoint sp v3.lua")
    assert.are.equal(1, code, err)
    assert.matches("cannot resume from checkpoint %d+ in savepoint sp: the savepoint holds the state of "
      .. "the operator with uid 'sums' %(tumbling window sum%(vc%) %([^)]*job%.lua:%d+%)%), which this job does "
      .. "not have %(part uid%-sums%.0%): run with %-%-allow%-non%-restored%-state to start without it", err)
    assert.are.equal("", h.read_or_empty(dir .. "/raw.txt"), "nothing was written")
    _, err, code = wmrun(dir, "--checkpoint-dir ck3 --from-savepoint sp --allow-non-restored-state v3.lua")
    assert.are.equal(0, code, err)
    -- the source went on from its position in the savepoint (matched by its place and kind)
    assert.are.equal(table.concat(lines, "\n", HALF + 1, N) .. "\n", h.read(dir .. "/raw.txt"))
  end)

  it("a damaged, missing or foreign savepoint gives a clear error", function()
    local job = start_v1(dir)
    local _, err, code = wmrun(dir, "savepoint ck sp")
    assert.are.equal(0, code, err)
    -- a second savepoint into the same place is refused by the job, which goes on
    _, err, code = wmrun(dir, "savepoint ck sp")
    assert.are.equal(1, code)
    assert.matches("wmrun: savepoint: savepoint to .*/sp failed: .*/sp already holds a checkpoint or a savepoint", err)
    assert.is_nil(job.done())
    job.kill()
    job.wait()
    K.write(dir .. "/go", "")
    local chk = h.lines("ls " .. q(dir .. "/sp") .. " | grep chk-")[1]
    -- a part with a flipped byte
    os.execute("cp -r " .. q(dir .. "/sp") .. " " .. q(dir .. "/bad"))
    local part = dir .. "/bad/" .. chk .. "/uid-sums.0"
    local bytes = h.read(part)
    local i = #bytes - 2
    K.write(part, bytes:sub(1, i - 1) .. string.char((bytes:byte(i) + 1) % 256) .. bytes:sub(i + 1))
    _, err, code = wmrun(dir, "--checkpoint-dir ck4 --from-savepoint bad v2.lua")
    assert.are.equal(1, code, err)
    assert.matches("wmrun: savepoint bad cannot be used: checkpoint %d+ in bad is skipped: part uid%-sums%.0: .*CRC",
      err)
    -- a MANIFEST cut in half
    os.execute("rm -rf " .. q(dir .. "/bad") .. " && cp -r " .. q(dir .. "/sp") .. " " .. q(dir .. "/bad"))
    local man = dir .. "/bad/" .. chk .. "/MANIFEST"
    local m = h.read(man)
    K.write(man, m:sub(1, #m // 2))
    _, err, code = wmrun(dir, "--checkpoint-dir ck4 --from-savepoint bad v2.lua")
    assert.are.equal(1, code, err)
    assert.matches("wmrun: savepoint bad cannot be used: checkpoint %d+ in bad is skipped: .*MANIFEST", err)
    -- an empty folder, and none at all
    os.execute("mkdir " .. q(dir .. "/empty"))
    _, err, code = wmrun(dir, "--checkpoint-dir ck4 --from-savepoint empty v2.lua")
    assert.are.equal(1, code, err)
    assert.matches("savepoint empty cannot be used: it holds no savepoint", err)
    _, err, code = wmrun(dir, "--checkpoint-dir ck4 --from-savepoint nosuch v2.lua")
    assert.are.equal(1, code, err)
    assert.matches("wmrun: savepoint nosuch: no such directory", err)
    -- a checkpoint folder that holds another run's checkpoints
    _, err, code = wmrun(dir, "--checkpoint-dir ck --from-savepoint sp v2.lua")
    assert.are.equal(1, code, err)
    assert.matches("ck holds checkpoint %d+ of a run that did not start from a savepoint: run with %-%-fresh", err)
    -- with --fresh it starts from the savepoint (and gives the same output as above)
    _, err, code = wmrun(dir, "--checkpoint-dir ck --fresh --from-savepoint sp v2.lua")
    assert.are.equal(0, code, err)
    assert.are.equal(expected_counts(lines), K.sorted(h.read(dir .. "/counts.txt")))
    -- no checkpoints asked for
    _, err, code = wmrun(dir, "--from-savepoint sp v2.lua")
    assert.are.equal(1, code, err)
    assert.matches("%-%-from%-savepoint needs checkpoints: give %-%-checkpoint%-dir", err)
  end)

  it("at --threads 2 a savepoint restores the job it was taken of, and refuses a changed one", function()
    local ref3 = K.sorted(reference(dir, "-p 3"):gsub('"ts":%d+,?', ""))
    local job = start_v1(dir, "-p 2 --threads 2")
    local _, err, code = wmrun(dir, "savepoint ck sp")
    assert.are.equal(0, code, err)
    job.kill()
    job.wait()
    K.write(dir .. "/go", "")
    _, err, code = wmrun(dir, "-p 2 --threads 2 --checkpoint-dir ck2 --from-savepoint sp v2.lua")
    assert.are.equal(1, code, err)
    assert.matches("with %-%-threads above 1 a savepoint restores only the job it was taken of", err)
    _, err, code = wmrun(dir, "-p 2 --threads 2 --checkpoint-dir ck3 --from-savepoint sp v1.lua")
    assert.are.equal(0, code, err)
    assert.matches("resuming from checkpoint %d+ in savepoint sp", err)
    -- every window of the input came out, each once, and the sums hold the records of both
    -- sides of the cut (their order and the "ts" kept from their first record depend on the
    -- threads' schedule)
    local n, total = 0, 0
    for l in h.read(dir .. "/out.txt"):gmatch("[^\n]+") do
      n = n + 1
      total = total + tonumber(l:match('"vc":(%d+)'))
    end
    local windows, want, want_total = {}, 0, 0
    for _, l in ipairs(lines) do
      local k, ts, vc = l:match("^([^,]+),(%d+),(%d+)")
      if not windows[k .. "|" .. tonumber(ts) // SIZE] then want = want + 1 end
      windows[k .. "|" .. tonumber(ts) // SIZE] = true
      want_total = want_total + tonumber(vc)
    end
    assert.are.equal(want, n)
    assert.are.equal(want_total, total)
    -- on one thread at -p 3: by key group, the records in flight between the threads at the
    -- cut replayed; the sums the uninterrupted run's at -p 3 (the "ts" a window keeps from its
    -- first record depends, before the cut, on the threads' schedule: left out)
    _, err, code = wmrun(dir, "-p 3 --checkpoint-dir ck5 --from-savepoint sp v1.lua")
    assert.are.equal(0, code, err)
    assert.matches("keyed state restored by key group", err)
    assert.are.equal(ref3, K.sorted(h.read(dir .. "/out.txt"):gsub('"ts":%d+,?', "")))
    -- a changed job on one thread from it: refused (its uid-less operators have no place)
    _, err, code = wmrun(dir, "-p 2 --checkpoint-dir ck6 --from-savepoint sp v2.lua")
    assert.are.equal(1, code, err)
    assert.matches("it was taken at %-p 2 %-%-threads 2 and this run is at %-p 2 %-%-threads 1, and the job "
      .. "changed %(operator 4 of the savepoint's job is tumbling window sum%(vc%) %([^)]*job%.lua:%d+%), of "
      .. "this job filter %(v2%.lua:%d+%)%)", err)
  end)

  it("wmrun savepoint without a running job says so", function()
    local _, err, code = wmrun(dir, "savepoint ck sp")
    assert.are.equal(1, code)
    assert.matches("no job has run on checkpoint directory ck %(it has no LOCK file%)", err)
    K.write(dir .. "/go", "")
    _, err, code = wmrun(dir, "--checkpoint-dir ck v1.lua")
    assert.are.equal(0, code, err)
    _, err, code = wmrun(dir, "savepoint ck sp")
    assert.are.equal(1, code)
    assert.matches("no job is running on checkpoint directory ck %(its last one was pid %d+%)", err)
    _, err, code = wmrun(dir, "savepoint ck")
    assert.are.equal(2, code)
    assert.matches("usage: wmrun savepoint CHECKPOINT_DIR TARGET", err)
  end)
end)
