-- Rescaling from a checkpoint (docs/checkpoints.md, "Key groups and rescaling"): a job's
-- checkpoint taken at one setting restores at another (-p 2 --threads 2 -> -p 3, -p 3 ->
-- -p 1, -p 2 --threads 2 -> --threads 1) and the job goes on with exactly the output an
-- uninterrupted run at the new setting gives.
--
-- "The same input position": the first run stops right after its 2nd checkpoint is
-- committed (WM_CKPT_CRASH=after-manifest:2, a test switch: _exit(99) there; the first
-- checkpoint is taken before the first record, so the 2nd is the first periodic one, asked
-- for 2 ms after the start and taken while windows, timers and, on two threads, records in
-- flight between the threads are open; the spec checks that it is not the final one). Its file then holds what
-- that checkpoint committed (write_lines is exactly-once: a resumed run cuts it back to the
-- checkpoint's length), and the run at the new setting resumes from the checkpoint's source
-- position and writes the rest. The union of both must equal an uninterrupted run at the new
-- setting, from the start, compared as sorted lines: these jobs' results do not depend on
-- the parallelism (every keyed instance has one input, the timestamps are assigned at
-- parallelism 1), so the uninterrupted run's lines before the position are the first run's.
-- Then the job is killed with SIGKILL at random moments, alternating the two settings, so
-- that state goes back and forth between them, and the comparison holds again. The shapes
-- cover keyed state of one input (windows, process functions), of two (a keyed connect with
-- broadcast state, an interval join, a window join, a SQL regular join in C); a read_kafka
-- job covers positions and per-partition watermarks redistributed by partition; what is still
-- refused is tested with its message.
local h = require("helper")
local K = require("ckpt_kill")
local q, gen_csv, sorted, csv_job = K.q, K.gen_csv, K.sorted, K.csv_job

local shapes = {
  {name = "a declarative job (parse_csv, a tumbling sum)", lines = 30000, seed = 1, outs = {".txt"},
   text = csv_job("2s") .. [[
  :key_by("id")
  :window(wm.windows.tumbling("5s"))
  :sum("vc")
  :write_lines(dir .. "/" .. arg[1] .. ".txt"):set_parallelism(1)
env:execute()
]]},
  {name = "a session-window job", lines = 20000, seed = 2, keys = 400, outs = {".txt"},
   text = csv_job("1s") .. [[
  :key_by("id")
  :window(wm.windows.session("700ms"))
  :max("vc")
  :write_lines(dir .. "/" .. arg[1] .. ".txt", "text"):set_parallelism(1)
env:execute()
]]},
  {name = "a Lua job (map, reduce, a custom generator, lateness, a late side output)", lines = 15000,
   seed = 6, outs = {".txt", ".late"}, text = [[
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
]]},
  {name = "a keyed process function with event-time timers", lines = 15000, seed = 7, keys = 200,
   outs = {".txt"}, text = csv_job("1s") .. [[
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
]]},
  -- keyed state and a broadcast state (copied to every instance, Flink's rule), timers
  {name = "a keyed connect with broadcast state and event-time timers", lines = 8000, seed = 9,
   keys = 100, rates = true, outs = {".txt"}, text = csv_job("1s") .. [[
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
      -- summed: a rate applied twice at an instance (a broadcast record in flight at the
      -- checkpoint, replayed) shows in the output
      ctx.broadcast_state[r.rts] = (ctx.broadcast_state[r.rts] or 0) + r.rate
    end,
    on_timer = function(t, ctx, out)
      local keep = {}
      for _, p in ipairs(ctx.state.pending) do
        if p.ts <= t then
          local best, rate = -1, 0
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
]]},
  -- two inputs keyed alike: an interval join's buffered records and cleanup timers by key group
  {name = "an interval join", lines = 15000, seed = 11, keys = 100, outs = {".txt"},
   text = csv_job("1s"):gsub("env:read_lines", "local src = env:read_lines", 1) .. [[
local l = src:filter(function(r) return r.vc % 2 == 0 end):set_parallelism(1)
local r = src:filter(function(r) return r.vc % 2 == 1 end):set_parallelism(1)
l:key_by("id"):interval_join(r:key_by("id")):between(-300, 200)
  :process(function(a, b, ctx, out) out(a.id .. " " .. a.ts .. " " .. b.ts .. " " .. a.vc * b.vc) end)
  :write_lines(dir .. "/" .. arg[1] .. ".txt", "text"):set_parallelism(1)
env:execute()
]]},
  -- the same join of inputs at the job's parallelism: its instances have a channel per
  -- feeding instance of each input, input 1's first, so input 2's first channel is another at
  -- each parallelism (channel 2 at -p 2, 3 at -p 3), and a record in flight at the checkpoint
  -- must be replayed on its own input. Several inputs' watermarks meet in no fixed order:
  -- the bound of 2 s (above the input's 1.5 s of disorder) leaves no record late.
  {name = "an interval join of inputs at the job's parallelism", lines = 15000, seed = 11,
   keys = 100, outs = {".txt"}, moves = {{from = "-p 2 --threads 2", to = "-p 3"}},
   text = csv_job("2s"):gsub("env:read_lines", "local src = env:read_lines", 1) .. [[
local l = src:filter(function(r) return r.vc % 2 == 0 end)
local r = src:filter(function(r) return r.vc % 2 == 1 end)
l:key_by("id"):interval_join(r:key_by("id")):between(-300, 200)
  :process(function(a, b, ctx, out) out(a.id .. " " .. a.ts .. " " .. b.ts .. " " .. a.vc * b.vc) end)
  :write_lines(dir .. "/" .. arg[1] .. ".txt", "text"):set_parallelism(1)
env:execute()
]]},
  -- a SQL regular join in C (core/ops/wm_sqljoin.c): both sides' rows and their counts by key
  -- group (an inner join's rows do not depend on the order its inputs meet in); the moves of
  -- the others, and from one instance to three
  {name = "a SQL regular join", lines = 15000, seed = 13, keys = 1000, outs = {".txt"},
   moves = {{from = "-p 2 --threads 2", to = "-p 3"}, {from = "-p 3", to = "-p 1"},
            {from = "-p 2 --threads 2", to = "-p 2 --threads 1"}, {from = "-p 1", to = "-p 3"}},
   text = csv_job("1s"):gsub("env:read_lines", "local src = env:read_lines", 1) .. [[
local cols = {"id:STRING", "ts:BIGINT", "vc:BIGINT"}
env:create_temporary_view("L", src:filter(function(r) return r.vc % 2 == 0 end):set_parallelism(1), cols)
env:create_temporary_view("R", src:filter(function(r) return r.vc % 2 == 1 end):set_parallelism(1), cols)
env:sql_query("SELECT L.id, L.ts, R.ts AS rts, L.vc * R.vc AS p FROM L JOIN R ON L.id = R.id"):to_append_stream()
  :map(function(x) return x.id .. " " .. x.ts .. " " .. x.rts .. " " .. x.p end)
  :write_lines(dir .. "/" .. arg[1] .. ".txt", "text"):set_parallelism(1)
env:execute()
]]},
  -- a window join (Flink's tagged union: both inputs' records in one keyed window operator).
  -- Its tagging steps run at the job's parallelism, so its window instances have several
  -- inputs, whose watermarks a run on two threads combines in no fixed order: the bound of
  -- 2 s (above the input's 1.5 s of disorder) leaves no record late, on any schedule.
  {name = "a window join", lines = 15000, seed = 12, keys = 100, outs = {".txt"},
   text = csv_job("2s"):gsub("env:read_lines", "local src = env:read_lines", 1) .. [[
local l = src:filter(function(r) return r.vc % 2 == 0 end):set_parallelism(1)
local r = src:filter(function(r) return r.vc % 2 == 1 end):set_parallelism(1)
l:join(r):where("id"):equal_to("id"):window(wm.windows.tumbling("1s"))
  :apply(function(a, b) return a.id .. " " .. a.ts .. " " .. b.ts .. " " .. a.vc * b.vc end)
  :write_lines(dir .. "/" .. arg[1] .. ".txt", "text"):set_parallelism(1)
env:execute()
]]},
}

local moves = {
  {from = "-p 2 --threads 2", to = "-p 3"},
  {from = "-p 3", to = "-p 1"},
  {from = "-p 2 --threads 2", to = "-p 2 --threads 1"},
}

describe("rescaling from a checkpoint", function()
  local dir
  before_each(function() dir = h.tmpdir() end)
  after_each(function() h.rmdir(dir) end)

  it("a checkpoint of another max_parallelism is refused, naming both; the same one resumes", function()
    gen_csv(dir .. "/in.csv", 40000, 3)
    local jp = K.job(dir, shapes[1].text)
    local ck = " --checkpoint-dir " .. q(dir .. "/ck") .. " --checkpoint-interval 2ms "
    local _, e1, c1 = h.sh("WM_CKPT_CRASH=after-manifest:2 " .. h.wmrun_bin .. " -p 2 --max-parallelism 64"
      .. ck .. q(jp) .. " run")
    assert.are.equal(99, c1, e1)
    local _, e2, c2 = h.wmrun("-p 2" .. ck .. q(jp) .. " run")
    assert.are.equal(1, c2)
    assert.matches("cannot resume from checkpoint 2 in [^\n]*: it was taken with max_parallelism 64 and "
      .. "this run has 128: the max parallelism is the number of key groups that keyed state is "
      .. "stored by, and cannot change for a job's state %(give this run %-%-max%-parallelism 64, or "
      .. "wm.env{max_parallelism = 64}%)", e2)
    -- at -p 3 with the checkpoint's 64 groups it resumes, and the file is whole
    local _, e3, c3 = h.wmrun("-p 3 --max-parallelism 64" .. ck .. q(jp) .. " run")
    assert.are.equal(0, c3, e3)
    local _, e4, c4 = h.wmrun(q(jp) .. " ref")
    assert.are.equal(0, c4, e4)
    assert.are.equal(sorted(h.read(dir .. "/ref.txt")), sorted(h.read(dir .. "/run.txt")))
  end)

  it("a parallelism above max_parallelism is refused at its line", function()
    local jp = K.job(dir, [[
local wm = require("wm")
local env = wm.env{max_parallelism = 4}
env:from_elements(1, 2, 3):key_by(function(x) return x end)
  :process(function(x, ctx, out) out(x) end):set_parallelism(8)
  :print()
env:execute()
]])
    local _, err, code = h.wmrun(q(jp))
    assert.are.equal(1, code)
    assert.matches("job.lua:4: parallelism 8 is more than the job's max_parallelism 4 %(its number "
      .. "of key groups, which no parallelism can exceed: raise it with wm.env{max_parallelism = ...} "
      .. "or %-%-max%-parallelism%)", err)
    jp = K.job(dir, [[
local wm = require("wm")
local env = wm.env{max_parallelism = 4}
env:from_elements(1, 2, 3):key_by(function(x) return x end)
  :process(function(x, ctx, out) out(x) end)
  :print()
env:execute()
]])
    local _, err2, code2 = h.wmrun("-p 5 " .. q(jp))
    assert.are.equal(1, code2)
    assert.matches("parallelism 5 is more than its max_parallelism 4", err2, 1, true)
    local _, err3, code3 = h.wmrun("--max-parallelism 0 " .. q(jp))
    assert.are.equal(2, code3)
    assert.matches("bad max parallelism '0' %(expected 1 to 32768", err3)
  end)

  it("a timestamp assigner of several instances at another parallelism starts at their lowest watermark", function()
    gen_csv(dir .. "/in.csv", 20000, 9)
    local jp = K.job(dir, csv_job("2s"):gsub("%)%):set_parallelism%(1%)\n$", "))\n") .. [[
  :key_by("id")
  :window(wm.windows.tumbling("1s"))
  :sum("vc")
  :write_lines(dir .. "/" .. arg[1] .. ".txt"):set_parallelism(1)
env:execute()
]])
    local ck = " --checkpoint-dir " .. q(dir .. "/ck") .. " --checkpoint-interval 2ms "
    local _, e1, c1 = h.sh("WM_CKPT_CRASH=after-manifest:2 " .. h.wmrun_bin .. " -p 2" .. ck .. q(jp) .. " run")
    assert.are.equal(99, c1, e1)
    -- each instance of 3 takes the lowest watermark and timestamp of the 2 (the records of any
    -- old instance may come to it now); no record is late in this input (its disorder, 1.5 s,
    -- is below the bound, 2 s), so the sums are the uninterrupted run's at -p 3 (the "ts" a
    -- sum keeps from its first record depends on the order records met: left out)
    local _, e2, c2 = h.wmrun("-p 3" .. ck .. q(jp) .. " run")
    assert.are.equal(0, c2, e2)
    assert.matches("keyed state restored by key group", e2)
    local _, e3, c3 = h.wmrun("-p 3 " .. q(jp) .. " ref")
    assert.are.equal(0, c3, e3)
    local function sums(f) return sorted(h.read(dir .. "/" .. f):gsub('"ts":%d+,?', "")) end
    assert.are.equal(sums("ref.txt"), sums("run.txt"))
  end)

  -- Source positions redistributed by partition: a broker source of 4 partitions (each key's
  -- records in one partition, in the file's order), its per-partition timestamp assigners
  -- (each partition's copy at every instance, the partition's instance reading it) and a
  -- window. The broker holds the input (written by `load`, a sink on arg[2]); `read` is the
  -- source on arg[1]. The cut is a checkpoint whose positions are inside the input.
  -- Partition 1 holds one key of 40 (k40; the others go to 0, 2 and 3): at -p 3 its
  -- instance, which reads it alone, has mostly read it to its end at the cut, so that an
  -- instance restored from an old one that had ended must go on forwarding what its
  -- partitions give (-p 3 -> -p 2).
  local function by_partition(addr, load, read)
    gen_csv(dir .. "/in.csv", 8000, 13, 40)
    local lp = K.write(dir .. "/load.lua", [[
local wm = require("wm")
local env = wm.env{}
env:read_lines(arg[1]):]] .. load .. [[

env:execute()
]])
    local _, el, cl = h.wmrun(q(lp) .. " " .. q(dir .. "/in.csv") .. " " .. q(addr))
    assert.are.equal(0, cl, el)
    local jp = K.job(dir, [[
local wm = require("wm")
local dir = arg[0]:match("^(.*)/")
local env = wm.env{watermark_interval = 0}
env:]] .. read .. [[

  :parse_csv{"id", "ts:integer", "vc:integer"}
  :assign_timestamps_and_watermarks(wm.watermarks.bounded_out_of_orderness("2s"):with_timestamp_field("ts"))
  :key_by("id"):window(wm.windows.tumbling("1s")):sum("vc")
  :write_lines(dir .. "/" .. arg[2] .. ".txt", "text"):set_parallelism(1)
env:execute()
]])
    local ck = " --checkpoint-dir " .. q(dir .. "/ck") .. " --checkpoint-interval 2ms "
    for _, mv in ipairs{{from = "-p 2 --threads 2", to = "-p 3"}, {from = "-p 3", to = "-p 2 --threads 2"},
                        {from = "-p 3", to = "-p 1"}} do
      h.rmdir(dir .. "/ck")
      local _, err, code = h.wmrun(mv.to .. " " .. q(jp) .. " " .. q(addr) .. " ref")
      assert.are.equal(0, code, err)
      local ref = sorted(h.read(dir .. "/ref.txt"))
      assert.is_true(#ref > 0, "the reference is empty")
      -- stopped right after its checkpoint N, the first N (1, 2, ...) whose sources had read
      -- some records and not all (the consumers' start takes a while: the cut is waited for,
      -- not timed). A run that read its whole input before checkpoint N ends (exit 0), and one
      -- whose checkpoint N holds all of it is past the input: then again from N = 1, the
      -- schedule differs from run to run
      local n, tries, got, c1, e1 = 0, 0
      repeat
        n, tries = n + 1, tries + 1
        h.rmdir(dir .. "/ck")
        _, e1, c1 = h.sh("WM_CKPT_CRASH=after-manifest:" .. n .. " " .. h.wmrun_bin .. " " .. mv.from
          .. ck .. q(jp) .. " " .. q(addr) .. " run")
        got = 0
        if c1 == 0 then
          n = 0
        else
          assert.are.equal(99, c1, e1)
          local man = h.read(string.format("%s/ck/chk-%020d/MANIFEST", dir, n))
          for nrec in man:gmatch("\nsource [^ ]+ (%d+) records") do got = got + tonumber(nrec) end
          if got >= 8000 then n = 0 end
        end
      until (c1 == 99 and got > 0 and got < 8000) or tries >= 60
      assert.is_true(got > 0 and got < 8000, "no cut inside the input (" .. got .. " records)")
      local _, e2, c2 = h.wmrun(mv.to .. ck .. q(jp) .. " " .. q(addr) .. " run")
      assert.are.equal(0, c2, e2)
      assert.matches("taken at another parallelism or thread count", e2)
      local run = sorted(h.read(dir .. "/run.txt"))
      assert.is_true(run == ref, string.format("%s -> %s: the output differs from the "
        .. "uninterrupted run's\n%s", mv.from, mv.to, K.line_diff(ref, run)))
    end
  end

  it("read_kafka: each partition's position and assigner go to the instance that reads it now", function()
    local k = require("services").kafka{"in:4"}
    h.finally(function() k:stop() end)
    by_partition(k.bootstrap, [[write_kafka{brokers = arg[2], topic = "in", format = "text",
  partition = function(line)
    local k = tonumber(line:match("^k(%d+)"))
    return k == 40 and 1 or ({0, 2, 3})[k % 3 + 1]
  end}]],
      [[read_kafka{brokers = arg[1], topic = "in", bounded = "latest"}]])
  end)

  it("read_nats: each subject partition's position and assigner go to the instance that reads it now", function()
    local n = require("services").nats()
    h.finally(function() n:stop() end)
    by_partition(n.url, [[write_nats{url = arg[2], stream = "EV", subjects = {"ev.>"}, format = "text",
  subject = function(line)
    local id = line:match("^[^,]+")
    local k = tonumber(id:sub(2))
    return "ev." .. (k == 40 and 1 or ({0, 2, 3})[k % 3 + 1]) .. "." .. id
  end}]],
      [[read_nats{url = arg[1], stream = "EV", subject = "ev.*.>", partition_count = 4, bounded = "latest"}]])
  end)

  it("a file read in parts at another parallelism is refused, naming it", function()
    gen_csv(dir .. "/in.csv", 20000, 14)
    local jp = K.job(dir, [[
local wm = require("wm")
local dir = arg[0]:match("^(.*)/")
local env = wm.env{watermark_interval = 0}
env:read_lines(dir .. "/in.csv", {parallel = true})
  :parse_csv{"id", "ts:integer", "vc:integer"}
  :assign_timestamps_and_watermarks(wm.watermarks.bounded_out_of_orderness("2s"):with_timestamp_field("ts"))
  :key_by("id"):window(wm.windows.tumbling("1s")):sum("vc")
  :write_lines(dir .. "/" .. arg[1] .. ".txt", "text"):set_parallelism(1)
env:execute()
]])
    local ck = " --checkpoint-dir " .. q(dir .. "/ck") .. " --checkpoint-interval 2ms "
    local _, e1, c1 = h.sh("WM_CKPT_CRASH=after-manifest:2 " .. h.wmrun_bin .. " -p 2" .. ck .. q(jp) .. " run")
    assert.are.equal(99, c1, e1)
    local _, e2, c2 = h.wmrun("-p 3" .. ck .. q(jp) .. " run")
    assert.are.equal(1, c2)
    assert.matches("cannot resume from checkpoint 2 in [^\n]*: source 'read_lines%([^']*job.lua:4%) 1/3' "
      .. "ran as 2 instances at the checkpoint and 3 now: its positions are not redistributed %(only "
      .. "read_kafka's and read_nats's are, by partition; give it the checkpoint's parallelism with "
      .. "set_parallelism%(2%)%)", e2)
    local _, e3, c3 = h.wmrun("-p 2" .. ck .. q(jp) .. " run")
    assert.are.equal(0, c3, e3)
  end)

  local function outputs(prefix, outs)
    local t = {}
    for i, o in ipairs(outs) do t[i] = sorted(h.read(dir .. "/" .. prefix .. o)) end
    return t
  end

  for _, shape in ipairs(shapes) do
    for _, mv in ipairs(shape.moves or moves) do
      it(shape.name .. ": checkpoint at " .. mv.from .. ", resumed at " .. mv.to, function()
        gen_csv(dir .. "/in.csv", shape.lines, shape.seed, shape.keys)
        if shape.rates then
          local f = assert(io.open(dir .. "/rates.csv", "w"))
          for i = 0, 59 do f:write(string.format("%d,%d\n", i * 1000, i % 7 + 1)) end
          f:close()
        end
        local jp = K.job(dir, shape.text)
        -- the uninterrupted run at the new setting
        local t0 = K.now_ms()
        local _, err, code = h.wmrun(mv.to .. " " .. q(jp) .. " ref")
        local took = math.max(K.now_ms() - t0, 20)
        assert.are.equal(0, code, err)
        local ref = outputs("ref", shape.outs)
        for i, o in ipairs(shape.outs) do
          if o == ".txt" then assert.is_true(#ref[i] > 0, "the reference is empty") end
        end
        local ck = " --checkpoint-dir " .. q(dir .. "/ck") .. " --checkpoint-interval 2ms "
        -- stopped right after its 2nd checkpoint, at the old setting
        local _, e1, c1 = h.sh("WM_CKPT_CRASH=after-manifest:2 " .. h.wmrun_bin .. " " .. mv.from .. ck
          .. q(jp) .. " run")
        assert.are.equal(99, c1, e1)
        local before = h.read(dir .. "/run.txt")
        assert.is_true(#before < #h.read(dir .. "/ref.txt"), "the cut is not inside the run")
        -- resumed at the new setting, to the end
        local _, e2, c2 = h.wmrun(mv.to .. ck .. q(jp) .. " run")
        assert.are.equal(0, c2, e2)
        assert.matches("resuming from checkpoint 2 in [^\n]*\n  taken at another parallelism or "
          .. "thread count", e2)
        local got = outputs("run", shape.outs)
        for i, o in ipairs(shape.outs) do
          assert.is_true(got[i] == ref[i], string.format("%s differs from the uninterrupted run's at "
            .. "%s (%d bytes, expected %d)", o, mv.to, #got[i], #ref[i]))
        end
        -- again, with SIGKILLs at random moments, the setting changing at every restart
        h.rmdir(dir .. "/ck")
        math.randomseed(shape.seed)
        for k = 1, 6 do
          local c = K.run_killed((k % 2 == 1 and mv.from or mv.to) .. ck .. q(jp) .. " run",
            math.random() * took / 1000)
          assert.is_true(c == 137 or c == 0, "exit status " .. tostring(c))
        end
        local _, e3, c3 = h.wmrun(mv.to .. ck .. q(jp) .. " run")
        assert.are.equal(0, c3, e3)
        got = outputs("run", shape.outs)
        for i, o in ipairs(shape.outs) do
          assert.is_true(got[i] == ref[i], string.format("after the kills, %s differs from the "
            .. "uninterrupted run's (%d bytes, expected %d)", o, #got[i], #ref[i]))
        end
      end)
    end
  end
end)
