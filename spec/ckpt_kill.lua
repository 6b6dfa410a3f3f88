-- The crash procedure of spec/checkpoint_spec.lua, shared with spec/checkpoint_nats_spec.lua:
-- input files, a job killed with SIGKILL at random moments and at the injected crash points
-- (WM_CKPT_CRASH), restarted until it finishes, compared with an uninterrupted run.
local h = require("helper")
local assert = require("luassert")
local M = {}

local function q(s) return "'" .. s:gsub("'", "'\\''") .. "'" end

local function now_ms()
  local p = io.popen("date +%s%N")
  local ns = p:read("n")
  p:close()
  return math.floor(ns / 1000000)
end

-- id,ts_ms,vc lines, a little out of order (bounded by 1.5 s)
function M.gen_csv(path, n, seed, keys)
  math.randomseed(seed)
  local t, lines = 0, {}
  for i = 1, n do
    t = t + math.random(0, 30)
    lines[i] = string.format("k%d,%d,%d", math.random(1, keys or 50), math.max(0, t - math.random(0, 1500)),
      math.random(1, 9))
  end
  local f = assert(io.open(path, "w"))
  f:write(table.concat(lines, "\n"), "\n")
  f:close()
end

-- Runs wmrun in the background and kills it with SIGKILL after `delay` seconds (when it
-- still runs); the exit status (137 when it was killed).
function M.run_killed(args, delay, env)
  local cmd = string.format("%s %s %s & p=$!; sleep %.3f; kill -KILL $p 2>/dev/null; wait $p",
    env or "", h.wmrun_bin, args, delay)
  local _, err, code = h.sh("sh -c " .. q(cmd))
  return code, err
end

M.q, M.now_ms = q, now_ms

-- What lines of text b (one record a line) a lacks and has more of, the first `max` (10) of
-- each: which windows a restore lost (late, dropped) or counted twice.
function M.line_diff(a, b, max)
  max = max or 10
  local n = {}
  for l in a:gmatch("[^\n]+") do n[l] = (n[l] or 0) + 1 end
  for l in b:gmatch("[^\n]+") do n[l] = (n[l] or 0) - 1 end
  local missing, extra = {}, {}
  for l, c in pairs(n) do
    if c > 0 then missing[#missing + 1] = l elseif c < 0 then extra[#extra + 1] = l end
  end
  table.sort(missing)
  table.sort(extra)
  local out = {string.format("%d line(s) missing, %d more than the reference", #missing, #extra)}
  for i = 1, math.min(max, #missing) do out[#out + 1] = "  - " .. missing[i] end
  for i = 1, math.min(max, #extra) do out[#out + 1] = "  + " .. extra[i] end
  return table.concat(out, "\n")
end

-- Writes text to the file path; path.
function M.write(path, text)
  local f = assert(io.open(path, "w"))
  f:write(text)
  f:close()
  return path
end

-- Writes text to dir/job.lua; its path.
function M.job(dir, text) return M.write(dir .. "/job.lua", text) end

-- The reference run (no checkpoints), timed; then `kills` runs killed at random moments
-- and one run per crash point, each resuming where the last complete checkpoint left off;
-- then a last run to the end. Every output file equals the reference's.
function M.sorted(text)
  local t = {}
  for l in text:gmatch("[^\n]+") do t[#t + 1] = l end
  table.sort(t)
  return table.concat(t, "\n")
end

-- The start of a job on dir/in.csv: typed rows, timestamps with a bound; one instance each
-- (every keyed instance then has one input and gives the same records on any schedule).
function M.csv_job(bound)
  return [[
local wm = require("wm")
local dir = arg[0]:match("^(.*)/")
local env = wm.env{ watermark_interval = 0 }
env:read_lines(dir .. "/in.csv")
  :parse_csv{"id", "ts:integer", "vc:integer"}:set_parallelism(1)
  :assign_timestamps_and_watermarks(
    wm.watermarks.bounded_out_of_orderness("]] .. bound .. [["):with_timestamp_field("ts", 1)):set_parallelism(1)
]]
end

-- threads = 2: the job runs with -p 2 --threads 2; its files are compared as sorted lines
-- (a sink fed by two threads interleaves them in no fixed order, even uninterrupted).
-- opts.store: where the checkpoints go (default the folder dir/ck)
function M.kill_and_compare(dir, text, outs, opts)
  opts = opts or {}
  local jp = M.job(dir, text)
  local ref = {}
  local t0 = now_ms()
  local par = opts.threads == 2 and "-p 2 --threads 2 " or ""
  local _, err, code = h.wmrun(par .. (opts.args or "") .. " " .. q(jp) .. " ref")
  local took = math.max(now_ms() - t0, 20)
  assert.are.equal(0, code, err)
  for i, o in ipairs(outs) do
    ref[i] = h.read(dir .. "/ref" .. o)
    if opts.threads == 2 or opts.sorted then ref[i] = M.sorted(ref[i]) end
    assert.is_true(#ref[i] > 0, "the reference output " .. o .. " is empty")
  end
  local ck = par .. "--checkpoint-dir " .. q(opts.store or (dir .. "/ck")) .. " --checkpoint-interval "
    .. (opts.interval or "10ms") .. " " .. (opts.args or "")
  local run = ck .. " " .. q(jp) .. " run"
  -- the crash points, each at the first checkpoint of its run, so each one surely crashes:
  -- three at the checkpoint a fresh run takes before its first record, three at the first
  -- one a resumed run takes (a periodic one, or the final one when the run ends first)
  for round = 1, 2 do
    for _, point in ipairs{"after-parts", "before-manifest", "after-manifest"} do
      local _, e, c = h.sh("WM_CKPT_CRASH=" .. point .. " " .. h.wmrun_bin .. " " .. run)
      assert.are.equal(99, c, point .. " (round " .. round .. "): " .. e)
    end
  end
  -- SIGKILL at random moments within the uninterrupted run's duration (some land after a
  -- run has ended, or before it has started: any moment must do)
  math.randomseed(opts.seed or 42)
  for _ = 1, opts.kills or 20 do
    local c = M.run_killed(run, math.random() * took / 1000)
    assert.is_true(c == 137 or c == 0, "exit status " .. tostring(c))
  end
  local _, e, c = h.wmrun(run)
  assert.are.equal(0, c, e)
  for i, o in ipairs(outs) do
    local got = h.read(dir .. "/run" .. o)
    if opts.threads == 2 or opts.sorted then got = M.sorted(got) end
    assert.is_true(got == ref[i], string.format("%s differs from the uninterrupted run's (%d bytes, "
      .. "expected %d)", o, #got, #ref[i]))
  end
  return e
end

return M
