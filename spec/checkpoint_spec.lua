-- Checkpoints (docs/checkpoints.md): a job killed with SIGKILL at random moments, and at the
-- injected crash points of a checkpoint (WM_CKPT_CRASH), restarted until it finishes, writes
-- exactly the file of an uninterrupted run, byte for byte.
--
-- No assumption about the machine's speed: the crash points are reached by every run that
-- takes a checkpoint, and the uninterrupted run is timed so that every SIGKILL lands at a
-- random moment within that duration (or after the job has already ended, or before it has
-- started, which is fine too): correctness must hold for any of them.
local h = require("helper")

local K = require("ckpt_kill")
local q, gen_csv, sorted, csv_job = K.q, K.gen_csv, K.sorted, K.csv_job

describe("checkpoints", function()
  local dir
  before_each(function() dir = h.tmpdir() end)
  after_each(function() h.rmdir(dir) end)

  local function job(text) return K.job(dir, text) end

  local function kill_and_compare(text, outs, opts)
    return K.kill_and_compare(dir, text, outs, opts)
  end

  for _, threads in ipairs{1, 2} do
  local at = threads == 1 and "" or " (--threads 2)"
  -- (the jobs set the parallelism of what precedes key_by to 1: every keyed instance then
  -- has one input and gives the same records on any schedule; the sinks have one instance)
  it("a declarative job (parse_csv, sum) killed 20 times" .. at
     .. " writes the file of an uninterrupted run", function()
    gen_csv(dir .. "/in.csv", 60000, 1)
    kill_and_compare(csv_job("2s") .. [[
  :key_by("id")
  :window(wm.windows.tumbling("5s"))
  :sum("vc")
  :write_lines(dir .. "/" .. arg[1] .. ".txt"):set_parallelism(1)
env:execute()
]], {".txt"}, {threads = threads})
  end)

  -- a file read in parts, pre-aggregated before the key exchange (docs/performance.md,
  -- "Pre-aggregation"): the local windows' partials are in the checkpoints. No record is late
  -- for its part (out of order by 1.5 s at most, a 2 s bound), so nothing depends on how far
  -- the parts have got; the parts' reads complete in no fixed order, so compare sorted.
  it("a pre-aggregated job (a file read in parts, sum) killed 20 times" .. at
     .. " writes the file of an uninterrupted run", function()
    gen_csv(dir .. "/in.csv", 60000, 3)
    local err = kill_and_compare([[
local wm = require("wm")
local dir = arg[0]:match("^(.*)/")
local env = wm.env{ watermark_interval = 0, parallelism = 2 }
env:read_lines(dir .. "/in.csv", {parallel = true})
  :parse_csv{"id", "ts:integer", "vc:integer"}
  :assign_timestamps_and_watermarks(
    wm.watermarks.bounded_out_of_orderness("2s"):with_timestamp_field("ts", 1))
  :key_by("id")
  :window(wm.windows.tumbling("5s"))
  :sum("vc")
  :write_lines(dir .. "/" .. arg[1] .. ".txt"):set_parallelism(1)
env:execute()
]], {".txt"}, {threads = threads, sorted = true, args = "--metrics"})
    assert.is_truthy(err:find("pre-aggregation of ", 1, true))
  end)

  -- the same with the Lua path (a Lua map, timestamp assigner and key function): a reduce
  -- that keeps the first record's ts and concatenates the values (the partials of each
  -- channel, kept apart until the window fires, are in the window's checkpoints) and an
  -- aggregate with merge (its partials are {key, acc})
  it("a pre-aggregated Lua job (a file read in parts, reduce and aggregate with merge) killed 20 times" .. at
     .. " writes the file of an uninterrupted run", function()
    gen_csv(dir .. "/in.csv", 40000, 4)
    local err = kill_and_compare([[
local wm = require("wm")
local dir = arg[0]:match("^(.*)/")
local env = wm.env{ watermark_interval = 0, parallelism = 2 }
local k = env:read_lines(dir .. "/in.csv", {parallel = true})
  :map(function(line)
    local id, ts, vc = line:match("^([^,]+),(%d+),(%d+)$")
    return {id = id, ts = tonumber(ts), vc = tonumber(vc), s = vc}
  end)
  :assign_timestamps_and_watermarks(
    wm.watermarks.bounded_out_of_orderness("2s"):with_timestamp_assigner(function(e) return e.ts end))
  :key_by(function(e) return e.id end)
  :window(wm.windows.tumbling("5s"))
local r = k:reduce(function(a, b) return {id = a.id, ts = a.ts, vc = a.vc + b.vc, s = a.s .. b.s} end)
local a = k:aggregate{create = function() return {n = 0, s = ""} end,
  add = function(acc, e) return {n = acc.n + 1, s = acc.s .. e.s, id = e.id} end,
  merge = function(x, y) return {n = x.n + y.n, s = x.s .. y.s, id = x.id or y.id} end,
  result = function(acc) return {agg = acc.id, n = acc.n, s = acc.s} end}
r:union(a):write_lines(dir .. "/" .. arg[1] .. ".txt"):set_parallelism(1)
env:execute()
]], {".txt"}, {threads = threads, sorted = true, args = "--metrics"})
    local pre = select(2, err:gsub("pre%-aggregation of ", ""))
    assert.is_true(pre >= 4, err)
  end)

  it("a session-window job killed 20 times" .. at .. " writes the file of an uninterrupted run", function()
    gen_csv(dir .. "/in.csv", 40000, 2, 400)
    kill_and_compare(csv_job("1s") .. [[
  :key_by("id")
  :window(wm.windows.session("700ms"))
  :max("vc")
  :write_lines(dir .. "/" .. arg[1] .. ".txt", "text"):set_parallelism(1)
env:execute()
]], {".txt"}, {threads = threads})
  end)


  it("a Lua job (map, reduce, a custom generator with snapshot hooks, lateness, a late side output) killed 20 times"
     .. at, function()
    gen_csv(dir .. "/in.csv", 20000, 6)
    kill_and_compare([[
local wm = require("wm")
local dir = arg[0]:match("^(.*)/")
local env = wm.env{ watermark_interval = 0 }
local function bounded()
  return {
    max_ts = math.mininteger + 801,
    on_event = function(self, record, ts, out)
      if ts > self.max_ts then self.max_ts = ts end
    end,
    on_periodic_emit = function(self, out) out:emit_watermark(self.max_ts - 800 - 1) end,
    snapshot = function(self) return {max_ts = self.max_ts} end,
    restore = function(self, t) self.max_ts = t.max_ts end,
  }
end
local w = env:read_lines(dir .. "/in.csv")
  :map(function(line)
    local id, ts, vc = line:match("^([^,]+),(%d+),(%d+)$")
    return {id = id, ts = tonumber(ts), vc = tonumber(vc), tags = {id, "x"}}
  end):set_parallelism(1)
  :assign_timestamps_and_watermarks(wm.watermarks.for_generator(bounded):with_timestamp_field("ts", 1))
  :set_parallelism(1)
  :key_by("id")
  :window(wm.windows.tumbling("2s"))
  :allowed_lateness("300ms")
  :side_output_late_data("late")
  :reduce(function(a, b) return {id = a.id, ts = a.ts, vc = a.vc + b.vc, tags = {a.tags[1], #a.tags + 1}} end)
w:write_lines(dir .. "/" .. arg[1] .. ".txt"):set_parallelism(1)
w:get_side_output("late"):write_lines(dir .. "/" .. arg[1] .. ".late"):set_parallelism(1)
env:execute()
]], {".txt", ".late"}, {threads = threads})
  end)

  it("a keyed process function with event-time timers killed 20 times" .. at .. "", function()
    gen_csv(dir .. "/in.csv", 20000, 7, 200)
    kill_and_compare(csv_job("1s") .. [[
  :key_by("id")
  :process{
    process_element = function(r, ctx, out)
      local st = ctx.state
      st.sum = (st.sum or 0) + r.vc
      st.n = (st.n or 0) + 1
      if st.timer then ctx.timer_service:delete_event_time_timer(st.timer) end
      st.timer = ctx.timestamp + 400
      ctx.timer_service:register_event_time_timer(st.timer)
    end,
    on_timer = function(t, ctx, out)
      out(string.format("%s %d sum=%d n=%d", ctx.key, t, ctx.state.sum, ctx.state.n))
      ctx.state.timer = nil
    end,
  }
  :write_lines(dir .. "/" .. arg[1] .. ".txt", "text"):set_parallelism(1)
env:execute()
]], {".txt"}, {threads = threads})
  end)

  -- Two inputs: keyed records and a broadcast stream of rate changes, both checkpointed
  -- (ctx.state, ctx.broadcast_state, the timers). Which rate a record gets must not depend on
  -- how the two inputs interleave, so each record waits for an event-time timer at its own
  -- timestamp: the rates' stream is in timestamp order, so once the operator's watermark (the
  -- minimum of both inputs) reaches t, every rate stamped <= t has arrived. Lines compared
  -- sorted (a late record's timer fires at the next watermark, in no fixed place).
  it("a keyed connect with broadcast state and event-time timers killed 20 times" .. at, function()
    gen_csv(dir .. "/in.csv", 12000, 9, 100)
    local f = assert(io.open(dir .. "/rates.csv", "w"))
    for i = 0, 59 do f:write(string.format("%d,%d\n", i * 1000, i % 7 + 1)) end
    f:close()
    kill_and_compare(csv_job("1s") .. [[
  :key_by("id")
  :connect(env:read_lines(dir .. "/rates.csv"):parse_csv{"rts:integer", "rate:integer"}:set_parallelism(1)
    :assign_timestamps_and_watermarks(wm.watermarks.monotonous():with_timestamp_field("rts", 1))
    :set_parallelism(1):broadcast())
  :process{
    process_element = function(r, ctx, out)
      local st = ctx.state
      st.n = (st.n or 0) + 1
      st.pending = st.pending or {}
      st.pending[#st.pending + 1] = {ts = ctx.timestamp, vc = r.vc, n = st.n}
      ctx.timer_service:register_event_time_timer(ctx.timestamp)
    end,
    process_broadcast_element = function(r, ctx)
      ctx.broadcast_state[r.rts] = r.rate
    end,
    on_timer = function(t, ctx, out)
      local keep = {}
      for _, p in ipairs(ctx.state.pending) do
        if p.ts <= t then
          local best, rate = -1, 0 -- the latest rate stamped at or before the record
          for rts, v in pairs(ctx.broadcast_state) do
            if rts <= p.ts and rts > best then best, rate = rts, v end
          end
          out(string.format("%s #%d ts=%d %d", ctx.key, p.n, p.ts, p.vc * rate))
        else
          keep[#keep + 1] = p
        end
      end
      ctx.state.pending = keep
    end,
  }
  :write_lines(dir .. "/" .. arg[1] .. ".txt", "text"):set_parallelism(1)
env:execute()
]], {".txt"}, {threads = threads, sorted = true})
  end)

  -- an interval join (two filters of one source, so at -p 1 the join sees the file's order):
  -- both sides' kept records and cleanup timers are in the checkpoints. No record is late (out
  -- of order by 1.5 s at most, a 2 s bound), so on two threads, where the two inputs
  -- interleave in no fixed order, every pair in bounds still meets: compare sorted there.
  it("an interval join killed 20 times" .. at .. " writes the file of an uninterrupted run", function()
    gen_csv(dir .. "/in.csv", 20000, 9)
    kill_and_compare(csv_job("2s"):gsub("env:read_lines", "local src = env:read_lines", 1) .. [[
local l = src:filter(function(r) return r.vc % 2 == 0 end):set_parallelism(1)
local r = src:filter(function(r) return r.vc % 2 == 1 end):set_parallelism(1)
l:key_by("id"):interval_join(r:key_by("id")):between(-300, 200):upper_bound_exclusive()
  :process(function(a, b, ctx, out)
    out(string.format("%s %d %d %d %d @%d", a.id, a.ts, a.vc, b.ts, b.vc, ctx.timestamp))
  end)
  :write_lines(dir .. "/" .. arg[1] .. ".txt", "text"):set_parallelism(1)
env:execute()
]], {".txt"}, {threads = threads})
  end)

  -- A window join and a co-group: both sides come from one source split by a field, each
  -- record out of order by 1.5 s at most against a 2 s bound, so no record is late at the join
  -- whatever the interleaving of its two inputs (its watermark is the minimum of both, never
  -- ahead of the source's when a record left it): the pairs and groups do not depend on the
  -- schedule, only their order on two threads does (compared sorted).
  it("a window join and a co-group killed 20 times" .. at, function()
    gen_csv(dir .. "/in.csv", 8000, 12, 50)
    kill_and_compare(csv_job("2s"):gsub("env:read_lines", "local both = env:read_lines", 1) .. [[
local left = both:filter(function(r) return r.vc % 2 == 1 end):set_parallelism(1)
local right = both:filter(function(r) return r.vc % 2 == 0 end):set_parallelism(1)
left:join(right):where("id"):equal_to("id"):window(wm.windows.tumbling("2s"))
  :apply(function(l, r) return string.format("j %s %d %d %d", l.id, l.ts, r.ts, l.vc + r.vc) end)
  :write_lines(dir .. "/" .. arg[1] .. ".txt", "text"):set_parallelism(1)
left:co_group(right):where("id"):equal_to("id"):window(wm.windows.sliding("3s", "1s"))
  :apply(function(key, ls, rs, out) out(string.format("g %s %d %d", key, #ls, #rs)) end)
  :write_lines(dir .. "/" .. arg[1] .. ".cg", "text"):set_parallelism(1)
env:execute()
]], {".txt", ".cg"}, {threads = threads, sorted = true})
  end)

  it("a SQL job (filesystem source and sink, a tumbling window) killed 20 times" .. at .. "", function()
    gen_csv(dir .. "/in.csv", 8000, 8)
    local sql = dir .. "/job.sql"
    local f = assert(io.open(sql, "w"))
    f:write([[
CREATE TABLE src (id STRING, ts BIGINT, vc INT, et AS TO_TIMESTAMP_LTZ(ts, 3),
  WATERMARK FOR et AS et - INTERVAL '2' SECOND)
  WITH ('connector' = 'filesystem', 'path' = 'in.csv', 'format' = 'csv');
CREATE TABLE out (id STRING, ws TIMESTAMP(3), s INT)
  WITH ('connector' = 'filesystem', 'path' = 'OUT', 'format' = 'csv');
INSERT INTO out SELECT id, window_start, SUM(vc) FROM TABLE(TUMBLE(TABLE src, DESCRIPTOR(et), INTERVAL '5' SECOND))
  GROUP BY id, window_start, window_end;
]])
    f:close()
    -- kill_and_compare runs a Lua job: this one runs the SQL script with its output named by arg[1]
    kill_and_compare([[
local dir = arg[0]:match("^(.*)/")
local text = io.open(dir .. "/job.sql"):read("a"):gsub("OUT", arg[1] .. ".txt")
require("wm.sql").run(text, {name = "job.sql", dir = dir})
]], {".txt"}, {args = "--watermark-interval 0", threads = threads})
  end)

  end

  for _, threads in ipairs{1, 2} do
  it("SIGTERM takes a checkpoint and exits 0 without draining; resuming completes the file"
     .. (threads == 2 and " (--threads 2)" or ""), function()
    local par = threads == 2 and "-p 2 --threads 2 " or ""
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
  :window(wm.windows.tumbling("1s"))
  :sum("vc")
  :write_lines(dir .. "/OUT.txt"):set_parallelism(1)
env:execute()
]]
    local fast = job((text:gsub("RATE", "nil"):gsub("OUT", "ref")))
    local _, err, code = h.wmrun(par .. q(fast))
    assert.are.equal(0, code, err)
    local ref = h.read(dir .. "/ref.txt")
    local ck = par .. "--checkpoint-dir " .. q(dir .. "/ck") .. " "
    -- 1000 records a second: SIGTERM comes once 300 have been made
    local p = h.bg_job(dir, (text:gsub("RATE", "1000"):gsub("OUT", "run")), ck)
    h.wait_for(function() return h.read_or_empty(p.err):find("started\n", 1, true) end, "the job to run", 60)
    p.signal("TERM")
    local rc = p.wait()
    local perr = h.read_or_empty(p.err)
    assert.are.equal(0, rc, perr)
    assert.matches("wmrun: stopped by SIGTERM with checkpoint %d+ in [^\n]*/ck", perr)
    -- not drained: only the windows that had fired are in the file (a drain would have fired
    -- the open ones too, with partial sums)
    local part = h.read(dir .. "/run.txt")
    assert.is_true(#part > 0 and #part < #ref)
    if threads == 1 then
      assert.are.equal(ref:sub(1, #part), part)
    else -- two windows' threads interleave in the file: every line is one of the reference's
      local want = {}
      for l in ref:gmatch("[^\n]+") do want[l] = true end
      for l in part:gmatch("[^\n]+") do assert.is_true(want[l], l) end
    end
    -- resumed (as fast as it goes): the rest, exactly
    local _, err2, code2 = h.wmrun(ck .. q(job((text:gsub("RATE", "nil"):gsub("OUT", "run")))))
    assert.are.equal(0, code2, err2)
    assert.matches("resuming from checkpoint", err2)
    if threads == 1 then
      assert.are.equal(ref, h.read(dir .. "/run.txt"))
    else
      assert.are.equal(sorted(ref), sorted(h.read(dir .. "/run.txt")))
    end
  end)
  end

  describe("on the command line", function()
    local function tumbling_job()
      gen_csv(dir .. "/in.csv", 3000, 3)
      return job([[
local wm = require("wm")
local dir = arg[0]:match("^(.*)/")
local env = wm.env{ watermark_interval = 0 }
env:read_lines(dir .. "/in.csv")
  :parse_csv{"id", "ts:integer", "vc:integer"}
  :assign_timestamps_and_watermarks(
    wm.watermarks.bounded_out_of_orderness("2s"):with_timestamp_field("ts", 1))
  :key_by("id")
  :window(wm.windows.tumbling("5s"))
  :sum("vc")
  :write_lines(dir .. "/out.txt")
env:execute()
]])
    end

    it("a job that ended leaves a final checkpoint: running it again does nothing and says why", function()
      local jp = tumbling_job()
      local ck = "--checkpoint-dir " .. q(dir .. "/ck") .. " "
      local _, err, code = h.wmrun(ck .. q(jp))
      assert.are.equal(0, code, err)
      local first = h.read(dir .. "/out.txt")
      assert.is_true(#first > 0)
      local _, err2, code2 = h.wmrun(ck .. q(jp))
      assert.are.equal(0, code2, err2)
      assert.matches("is of a run that ended: its input was read to the end, so there is nothing new to do", err2)
      assert.are.equal(first, h.read(dir .. "/out.txt"))
      -- --fresh starts over (and writes the same file again)
      local _, err3, code3 = h.wmrun(ck .. "--fresh " .. q(jp))
      assert.are.equal(0, code3, err3)
      assert.is_nil(err3:find("resuming", 1, true))
      assert.are.equal(first, h.read(dir .. "/out.txt"))
    end)

    it("resuming says which checkpoint, how old, and the sources' positions", function()
      local jp = tumbling_job()
      local ck = "--checkpoint-dir " .. q(dir .. "/ck") .. " "
      -- the run's first checkpoint is taken before the first record; crash right after it
      local _, _, code = h.sh("WM_CKPT_CRASH=after-manifest:1 " .. h.wmrun_bin .. " " .. ck .. q(jp))
      assert.are.equal(99, code)
      local _, err, code2 = h.wmrun(ck .. q(jp))
      assert.are.equal(0, code2, err)
      assert.matches("wmrun: resuming from checkpoint 1 in [^\n]*/ck, taken [%d.]+ s ago\n", err)
      assert.matches("  source at [^\n]*in%.csv after line 0 %(byte 0%) in 'read_lines", err)
    end)

    it("damaged, truncated and incomplete checkpoints are skipped with a warning naming them", function()
      local jp = tumbling_job()
      local ck = "--checkpoint-dir " .. q(dir .. "/ck") .. " "
      local _, _, code = h.sh("WM_CKPT_CRASH=after-manifest:1 " .. h.wmrun_bin .. " " .. ck .. q(jp))
      assert.are.equal(99, code)
      -- a newer one, damaged: a byte flipped in a part
      os.execute("cp -r " .. q(dir .. "/ck/chk-00000000000000000001") .. " "
        .. q(dir .. "/ck/chk-00000000000000000002"))
      local parts = io.popen("ls " .. q(dir .. "/ck/chk-00000000000000000002") .. " | grep op-"):read("a")
      local part = dir .. "/ck/chk-00000000000000000002/" .. parts:match("[^\n]+")
      local bytes = h.read(part)
      local f = assert(io.open(part, "wb"))
      f:write(bytes:sub(1, -2) .. string.char((bytes:byte(-1) + 1) % 256))
      f:close()
      -- a newer one still, with a truncated MANIFEST
      os.execute("cp -r " .. q(dir .. "/ck/chk-00000000000000000001") .. " "
        .. q(dir .. "/ck/chk-00000000000000000003"))
      local man = dir .. "/ck/chk-00000000000000000003/MANIFEST"
      local m = h.read(man)
      f = assert(io.open(man, "wb"))
      f:write(m:sub(1, math.floor(#m / 2)))
      f:close()
      -- and the newest without a MANIFEST at all (a crash before its rename)
      os.execute("mkdir " .. q(dir .. "/ck/chk-00000000000000000004"))
      local _, err, code2 = h.wmrun(ck .. q(jp))
      assert.are.equal(0, code2, err)
      assert.matches("warning: checkpoint 4 [^\n]* skipped: no MANIFEST", err)
      assert.matches("warning: checkpoint 3 [^\n]*MANIFEST", err)
      assert.matches("warning: checkpoint 2 [^\n]*", err)
      assert.matches("resuming from checkpoint 1 ", err)
    end)

    it("a checkpoint of another job is refused with the operator that does not match", function()
      local jp = tumbling_job()
      local ck = "--checkpoint-dir " .. q(dir .. "/ck") .. " "
      local _, _, code = h.sh("WM_CKPT_CRASH=after-manifest:1 " .. h.wmrun_bin .. " " .. ck .. q(jp))
      assert.are.equal(99, code)
      local other = job([[
local wm = require("wm")
local dir = arg[0]:match("^(.*)/")
local env = wm.env()
env:read_lines(dir .. "/in.csv"):map(function(l) return #l end):write_lines(dir .. "/out2.txt")
env:execute()
]])
      local _, err, code2 = h.wmrun(ck .. q(other))
      assert.are.equal(1, code2)
      assert.matches("cannot resume from checkpoint 1 in [^\n]*/ck: ", err)
      assert.matches("--fresh to start over", err)
    end)

    it("a checkpoint directory that cannot be made is an error naming it", function()
      local jp = tumbling_job()
      local f = assert(io.open(dir .. "/afile", "w"))
      f:close()
      local _, err, code = h.wmrun("--checkpoint-dir " .. q(dir .. "/afile") .. " " .. q(jp))
      assert.are.equal(1, code)
      assert.matches("checkpoint directory [^\n]*/afile: not a directory", err)
    end)

    it("a source that cannot be read again (standard input from a pipe) is refused before the first record", function()
      local jp = job([[
local wm = require("wm")
local env = wm.env()
env:read_lines("-"):map(function(l) io.stderr:write("record\n") return l end):print()
env:execute()
]])
      local out, err, code = h.sh("sh -c " .. q("echo hi | " .. h.wmrun_bin .. " --checkpoint-dir "
        .. q(dir .. "/ck") .. " " .. q(jp)))
      assert.are.equal(1, code)
      assert.are.equal("", out)
      assert.is_nil(err:find("record", 1, true))
      assert.matches("source 'read_lines%(%-%) %([^\n]*job%.lua:3%)' keeps no position a checkpoint could hold", err)
    end)

    it("a checkpoint taken on two threads resumes on one, saying so (rescaling: spec/rescale_spec.lua)", function()
      gen_csv(dir .. "/in.csv", 3000, 9)
      local jp = job([[
local wm = require("wm")
local dir = arg[0]:match("^(.*)/")
local env = wm.env{ watermark_interval = 0, parallelism = 2 }
env:read_lines(dir .. "/in.csv")
  :parse_csv{"id", "ts:integer", "vc:integer"}:set_parallelism(1)
  :assign_timestamps_and_watermarks(
    wm.watermarks.bounded_out_of_orderness("2s"):with_timestamp_field("ts", 1)):set_parallelism(1)
  :key_by("id")
  :window(wm.windows.tumbling("5s"))
  :sum("vc")
  :write_lines(dir .. "/out.txt"):set_parallelism(1)
env:execute()
]])
      local ck = "--checkpoint-dir " .. q(dir .. "/ck") .. " "
      local _, _, code = h.sh("WM_CKPT_CRASH=after-manifest " .. h.wmrun_bin .. " --threads 2 " .. ck .. q(jp))
      assert.are.equal(99, code)
      local _, err, code2 = h.wmrun("--threads 1 " .. ck .. q(jp))
      assert.are.equal(0, code2, err)
      assert.matches("resuming from checkpoint 1 in [^\n]*\n  taken at another parallelism or thread "
        .. "count %(%-%-threads 2 then%): keyed state restored by key group %(max_parallelism 128%)", err)
      local got = h.read(dir .. "/out.txt")
      local _, e4, c4 = h.wmrun(q(jp)) -- (no checkpoints: writes out.txt again)
      assert.are.equal(0, c4, e4)
      assert.are.equal(sorted(h.read(dir .. "/out.txt")), sorted(got))
    end)

    it("a bad --checkpoint-interval or a missing --checkpoint-dir folder is a usage error", function()
      local _, err, code = h.wmrun("--checkpoint-interval 2parsecs x.lua")
      assert.are.equal(2, code)
      assert.matches("^wmrun: %-%-checkpoint%-interval: bad duration '2parsecs'", err)
      local _, err2, code2 = h.wmrun("--checkpoint-dir")
      assert.are.equal(2, code2)
      assert.matches("^wmrun: %-%-checkpoint%-dir needs a folder\n", err2)
    end)

    it("--metrics and --trace-watermarks report the checkpoints", function()
      local jp = tumbling_job()
      local _, err, code = h.wmrun("--metrics --trace-watermarks --checkpoint-dir " .. q(dir .. "/ck") .. " " .. q(jp))
      assert.are.equal(0, code, err)
      assert.matches("%[checkpoint%] 1: %d+ bytes in [%d.]+ ms", err)
      assert.matches("%[checkpoint%] 2 %(final%): %d+ bytes", err)
      assert.matches("checkpoints: 2 taken, last 2 %(%d+ bytes, [%d.]+ ms%)", err)
    end)

    it("wm.env{checkpoint = ...} turns it on from the job, and checks its options", function()
      gen_csv(dir .. "/in.csv", 100, 5)
      local jp = job([[
local wm = require("wm")
local dir = arg[0]:match("^(.*)/")
local env = wm.env{ checkpoint = {dir = dir .. "/ck", interval = "1s"} }
env:read_lines(dir .. "/in.csv"):write_lines(dir .. "/out.txt")
env:execute()
]])
      local _, err, code = h.wmrun(q(jp))
      assert.are.equal(0, code, err)
      local _, err2 = h.wmrun(q(jp))
      assert.matches("nothing new to do", err2)
      local bad = job([[
local wm = require("wm")
wm.env{ checkpoint = {dir = "x", every = "1s"} }
]])
      local _, err3, code3 = h.wmrun(q(bad))
      assert.are.equal(1, code3)
      assert.matches("job%.lua:2: env checkpoint: unknown option 'every' %(dir, url, interval%)", err3)
    end)
  end)
end)
