-- The interval join (semantics.md §10, api.md "Two inputs"; Flink's IntervalJoinOperator):
-- a:key_by(k1):interval_join(b:key_by(k2)):between(lower, upper)[:lower_bound_exclusive()]
-- [:upper_bound_exclusive()][:side_output_left_late_data(t)][:side_output_right_late_data(t)]
-- :process(fn(left, right, ctx, out)).
--
-- Every expected output below is worked out by hand from the rules of §10, written next to
-- the case: a right record r meets a left record l when l.ts + lower <= r.ts <= l.ts + upper
-- (an exclusive bound moves inwards by 1 ms); a record with ts < W (W not MIN) is late; a
-- left record goes when W reaches l.ts + upper (l.ts if upper <= 0), a right one at
-- r.ts - lower (r.ts if lower >= 0); the other side's records come in ascending ts, equal
-- ts in arrival order; results carry max(l.ts, r.ts).
local h = require("helper")
local wm = require("wm")

-- A harness whose input is split by the field s ("L" or "R") into the two sides, keyed by
-- k; the join emits "left.id+right.id@ts". W is what the test pushes with h:watermark.
local function harness(lower, upper, opts)
  opts = opts or {}
  return wm.testing.harness(function(input)
    local l = input:filter(function(r) return r.s == "L" end)
    local r = input:filter(function(r) return r.s == "R" end)
    local j = l:key_by("k"):interval_join(r:key_by("k")):between(lower, upper)
    if opts.lex then j = j:lower_bound_exclusive() end
    if opts.uex then j = j:upper_bound_exclusive() end
    if opts.late then
      j = j:side_output_left_late_data("lateL"):side_output_right_late_data("lateR")
    end
    return j:process(opts.fn or function(a, b, ctx, out)
      out(a.id .. "+" .. b.id .. "@" .. ctx.timestamp)
    end)
  end, {watermark_interval = 0, side_outputs = opts.side_outputs})
end

local function push(hn, side, id, ts, k)
  hn:push({s = side, id = id, k = k or 1}, ts)
end

local function join_metrics(hn)
  for _, m in ipairs(hn:metrics()) do
    if m.kind == "interval join" then return m end
  end
  error("no interval join in the metrics")
end

local stop_and_resume = h.stop_and_resume

describe("interval_join", function()
  it("bounds are inclusive at their exact edges", function()
    -- between(-2, 3): a@10 meets rights in [8, 13]; b@11 meets [9, 14]
    local hn = harness(-2, 3)
    push(hn, "L", "a", 10)
    push(hn, "R", "x", 8)  -- 10-2 = 8: the lower edge
    push(hn, "R", "y", 13) -- 10+3 = 13: the upper edge
    push(hn, "R", "z", 7)  -- below
    push(hn, "R", "w", 14) -- above
    assert.are.same({"a+x@10", "a+y@13"}, hn:output())
    -- b@11 against the kept rights in ascending ts: z@7, x@8, y@13, w@14 -> y and w
    push(hn, "L", "b", 11)
    assert.are.same({"b+y@13", "b+w@14"}, hn:output())
  end)

  it("exclusive bounds move inwards by 1 ms", function()
    -- between(-2, 3) with both exclusive is [-1, 2]: a@10 meets [9, 12], b@11 meets [10, 13]
    local hn = harness(-2, 3, {lex = true, uex = true})
    push(hn, "L", "a", 10)
    push(hn, "R", "x", 8)
    push(hn, "R", "v", 9)
    push(hn, "R", "y", 13)
    push(hn, "R", "u", 12)
    assert.are.same({"a+v@10", "a+u@12"}, hn:output())
    push(hn, "L", "b", 11)
    assert.are.same({"b+u@12", "b+y@13"}, hn:output())
    -- only the lower one: [-1, 3]: c@10 meets [9, 13]: v@9, u@12, y@13
    hn = harness(-2, 3, {lex = true})
    push(hn, "R", "x", 8)
    push(hn, "R", "v", 9)
    push(hn, "R", "u", 12)
    push(hn, "R", "y", 13)
    push(hn, "L", "c", 10)
    assert.are.same({"c+v@10", "c+u@12", "c+y@13"}, hn:output())
    -- only the upper one: [-2, 2]: c@10 meets [8, 12]: x@8, v@9, u@12
    hn = harness(-2, 3, {uex = true})
    push(hn, "R", "x", 8)
    push(hn, "R", "v", 9)
    push(hn, "R", "u", 12)
    push(hn, "R", "y", 13)
    push(hn, "L", "c", 10)
    assert.are.same({"c+x@10", "c+v@10", "c+u@12"}, hn:output())
  end)

  it("lower == upper meets one timestamp; both exclusive, none", function()
    local hn = harness(3, 3)
    push(hn, "L", "a", 10)
    push(hn, "R", "y", 12)
    push(hn, "R", "x", 13)
    push(hn, "R", "z", 14)
    assert.are.same({"a+x@13"}, hn:output())
    hn = harness(3, 3, {lex = true, uex = true}) -- [4, 2]: empty
    push(hn, "L", "a", 10)
    push(hn, "R", "x", 13)
    assert.are.same({}, hn:output())
    hn = harness(3, 3, {uex = true}) -- [3, 2]: empty
    push(hn, "L", "a", 10)
    push(hn, "R", "x", 13)
    assert.are.same({}, hn:output())
  end)

  it("equal timestamps come in arrival order, the other side ascending by timestamp", function()
    local hn = harness(-10, 10)
    push(hn, "L", "a", 5)
    push(hn, "L", "b", 5)
    push(hn, "L", "c", 3)
    push(hn, "R", "x", 5) -- lefts ascending: c@3, then a@5 and b@5 as they came
    assert.are.same({"c+x@5", "a+x@5", "b+x@5"}, hn:output())
    push(hn, "R", "y", 5)
    push(hn, "R", "z", 4)
    assert.are.same({"c+y@5", "a+y@5", "b+y@5", "c+z@4", "a+z@5", "b+z@5"}, hn:output())
    push(hn, "L", "d", 5) -- rights ascending: z@4, then x@5 and y@5 as they came
    assert.are.same({"d+z@5", "d+x@5", "d+y@5"}, hn:output())
  end)

  it("keys meet only their own key", function()
    local hn = harness(0, 5)
    push(hn, "L", "a", 10, 1)
    push(hn, "L", "b", 10, 2)
    push(hn, "R", "x", 12, 2)
    push(hn, "R", "y", 12, "1") -- the string "1" is another key than the integer 1
    assert.are.same({"b+x@12"}, hn:output())
  end)

  it("ctx has both timestamps, the larger, the key, and output(tag, v)", function()
    local hn = harness(-5, 5, {side_outputs = {"pairs"}, fn = function(a, b, ctx, out)
      out(string.format("%s %d %d %d", tostring(ctx.key), ctx.left_timestamp, ctx.right_timestamp,
        ctx.timestamp))
      ctx:output("pairs", a.id .. b.id)
    end})
    push(hn, "L", "a", 10, "k")
    push(hn, "R", "x", 7, "k")
    push(hn, "R", "y", 14, "k")
    local recs = hn:output_records()
    assert.are.same({{value = "k 10 7 10", timestamp = 10}, {value = "k 10 14 14", timestamp = 14}}, recs)
    assert.are.same({"ax", "ay"}, hn:side_output("pairs"))
  end)

  it("late records of each side go to their side output, and join nothing", function()
    -- between(0, 10); W = 20: a@19 and y@5 are late (ts < W); b@20 and x@20 are not (= W)
    local hn = harness(0, 10, {late = true})
    push(hn, "L", "early", 15) -- kept: cleanup at 25
    hn:watermark(20)
    push(hn, "L", "a", 19)
    push(hn, "R", "y", 5)
    push(hn, "R", "x", 20)     -- early@15 meets [15, 25]: x@20 yes; a@19 was not kept
    push(hn, "L", "b", 20)     -- b@20 meets [20, 30]: x@20
    assert.are.same({"early+x@20", "b+x@20"}, hn:output())
    assert.are.same({{s = "L", id = "a", k = 1}}, hn:side_output("lateL"))
    assert.are.same({{s = "R", id = "y", k = 1}}, hn:side_output("lateR"))
    local m = join_metrics(hn)
    assert.are.equal(1, m.late_left)
    assert.are.equal(1, m.late_right)
    assert.are.equal(2, m.late_records_side_output)
    assert.are.equal(0, m.late_records_dropped)
  end)

  it("late records without a side output are dropped and counted per side", function()
    local hn = harness(0, 10)
    hn:watermark(100)
    push(hn, "L", "a", 99)
    push(hn, "L", "b", 50)
    push(hn, "R", "x", 99)
    push(hn, "R", "y", 100) -- not late
    push(hn, "L", "c", 100) -- meets y
    assert.are.same({"c+y@100"}, hn:output())
    local m = join_metrics(hn)
    assert.are.equal(2, m.late_left)
    assert.are.equal(1, m.late_right)
    assert.are.equal(3, m.late_records_dropped)
  end)

  it("before the first watermark (MIN) nothing is late, however small its timestamp", function()
    local hn = harness(0, 0, {late = true})
    push(hn, "L", "a", math.mininteger + 1)
    push(hn, "R", "x", math.mininteger + 1)
    assert.are.same({"a+x@" .. (math.mininteger + 1)}, hn:output())
    assert.are.same({}, hn:side_output("lateL"))
  end)

  it("kept records go when the watermark reaches their cleanup time", function()
    -- between(0, 5): a left record goes at l.ts + 5, a right one at r.ts (lower >= 0)
    local hn = harness(0, 5)
    push(hn, "L", "a", 10) -- goes at W >= 15
    push(hn, "R", "p", 12) -- goes at W >= 12
    assert.are.same({"a+p@12"}, hn:output())
    hn:watermark(14)
    local m = join_metrics(hn)
    assert.are.equal(1, m.buffered_left)
    assert.are.equal(0, m.buffered_right)
    push(hn, "R", "x", 15) -- in [10, 15]
    assert.are.same({"a+x@15"}, hn:output())
    hn:watermark(15)       -- a goes, x (cleanup 15) goes
    m = join_metrics(hn)
    assert.are.equal(0, m.buffered_left)
    assert.are.equal(0, m.buffered_right)
    assert.are.equal(0, m.keys) -- a key with nothing kept holds no memory
    assert.are.equal(0, m.cleanup_timers)
    push(hn, "R", "y", 15) -- not late (15 = W), and a is gone
    push(hn, "L", "b", 15) -- meets y
    assert.are.same({"b+y@15"}, hn:output())
  end)

  it("negative bounds: cleanup at l.ts when upper <= 0, r.ts - lower for a right one", function()
    -- between(-5, -2): a left l meets rights in [l.ts-5, l.ts-2]; l goes at W >= l.ts,
    -- a right r at W >= r.ts + 5
    local hn = harness(-5, -2)
    push(hn, "R", "r1", 7)  -- kept until W >= 12
    hn:watermark(9)
    push(hn, "L", "a", 10)  -- [5, 8]: r1
    assert.are.same({"a+r1@10"}, hn:output())
    hn:watermark(10)        -- a goes (upper <= 0: at l.ts)
    local m = join_metrics(hn)
    assert.are.equal(0, m.buffered_left)
    assert.are.equal(1, m.buffered_right)
    push(hn, "L", "b", 11)  -- [6, 9]: r1
    assert.are.same({"b+r1@11"}, hn:output())
    hn:watermark(12)        -- r1 goes (at 7 + 5), b too (at 11)
    -- Flink's edge, kept on purpose: c@12 is not late (12 = W) and its interval [7, 10]
    -- holds r1@7, but r1 went at W = 12: they do not meet (IntervalJoinOperator does the same)
    push(hn, "L", "c", 12)
    assert.are.same({}, hn:output())
    m = join_metrics(hn)
    assert.are.equal(1, m.buffered_left)
    assert.are.equal(0, m.buffered_right)
  end)

  it("positive lower bound: a right record goes at r.ts", function()
    -- between(2, 4): l meets rights in [l.ts+2, l.ts+4]; a right r goes at W >= r.ts; a
    -- left one at l.ts + 4
    local hn = harness(2, 4)
    push(hn, "R", "x", 12)
    push(hn, "L", "a", 9)   -- [11, 13]: x
    assert.are.same({"a+x@12"}, hn:output())
    hn:watermark(12)        -- x goes; a stays until 13
    local m = join_metrics(hn)
    assert.are.equal(1, m.buffered_left)
    assert.are.equal(0, m.buffered_right)
    push(hn, "R", "y", 13)  -- a: [11, 13]
    assert.are.same({"a+y@13"}, hn:output())
  end)

  it("a record that arrives at W with its cleanup at W goes at the next watermark", function()
    -- between(-3, 0): a left record goes at l.ts; a@10 arrives at W = 10 (not late), its
    -- cleanup time 10 has passed already: it stays until the watermark advances again
    local hn = harness(-3, 0)
    hn:watermark(10)
    push(hn, "L", "a", 10)
    push(hn, "R", "x", 10) -- a: [7, 10]
    assert.are.same({"a+x@10"}, hn:output())
    assert.are.equal(1, join_metrics(hn).buffered_left)
    hn:watermark(11)
    assert.are.equal(0, join_metrics(hn).buffered_left)
  end)

  it("a record without a timestamp (MIN) is an error naming the record", function()
    local hn = harness(0, 5)
    local ok, err = pcall(function() hn:push({s = "L", id = "nots", k = 1}) end)
    assert.is_false(ok)
    assert.matches("record has no timestamp (math.mininteger)", err, 1, true)
    assert.matches("assign_timestamps_and_watermarks", err, 1, true)
    assert.matches('"id":"nots"', err, 1, true)
    assert.matches("interval join", err, 1, true)
  end)

  it("the watermark is the minimum of both sides; an idle side no longer holds it back", function()
    -- each side has its own assigner (monotonous, idle after 1 s without records): the join's
    -- W is the minimum of both, until the right side goes idle
    local hn = wm.testing.harness(function(input)
      local st = wm.watermarks.monotonous():with_timestamp_field("t"):with_idleness("1s")
      local l = input:filter(function(r) return r.s == "L" end):assign_timestamps_and_watermarks(st)
      local r = input:filter(function(r) return r.s == "R" end):assign_timestamps_and_watermarks(st)
      return l:key_by("k"):interval_join(r:key_by("k")):between(0, 10)
        :side_output_right_late_data("lateR")
        :process(function(a, b, ctx, out) out(a.id .. "+" .. b.id .. "@" .. ctx.timestamp) end)
    end, {watermark_interval = 0})
    hn:push({s = "R", id = "x", k = 1, t = 5}, 5)   -- right W 4
    hn:push({s = "L", id = "a", k = 1, t = 50}, 50) -- left W 49; join W = min = 4
    hn:push({s = "R", id = "y", k = 1, t = 20}, 20) -- 20 >= 4: not late; no left in [.., 20-0]
    assert.are.same({}, hn:output())
    hn:push({s = "R", id = "z", k = 1, t = 55}, 55) -- a: [50, 60]
    assert.are.same({"a+z@55"}, hn:output())
    -- the right side goes idle 1 s after its last record: the join's W is the left's (49...)
    hn:advance_processing_time(1000)
    hn:push({s = "L", id = "b", k = 1, t = 100}, 100) -- left W 99 = the join's W
    -- w@60 comes on the right (the side wakes up) with 60 < 99: late
    hn:push({s = "R", id = "w", k = 1, t = 60}, 60)
    assert.are.same({}, hn:output())
    assert.are.same({{s = "R", id = "w", k = 1, t = 60}}, hn:side_output("lateR"))
  end)

  it("h:snapshot / restore into a new harness goes on with the same output", function()
    local function feed(hn, from, to)
      for i = from, to do
        push(hn, i % 3 == 0 and "R" or "L", "n" .. i, i * 3 % 17 + i, i % 2)
        if i % 4 == 0 then hn:watermark(i - 3) end
      end
    end
    local whole = harness(-4, 6, {late = true})
    feed(whole, 1, 40)
    local want = whole:output()
    local first = harness(-4, 6, {late = true})
    feed(first, 1, 20)
    local got = first:output()
    local snap = first:snapshot()
    local second = harness(-4, 6, {late = true})
    second:restore(snap)
    feed(second, 21, 40)
    for _, v in ipairs(second:output()) do got[#got + 1] = v end
    assert.is_true(#want > 20)
    assert.are.same(want, got)
    -- a join with other bounds refuses the state
    local other = harness(-4, 7, {late = true})
    local ok, err = pcall(other.restore, other, snap)
    assert.is_false(ok)
    assert.matches("bounds changed since the checkpoint", err, 1, true)
  end)
end)

-- a job: impressions and clicks from one file (the order of the file is the order of
-- arrival at -p 1), clicks within 10 minutes of their impression
local JOB = [[
local wm = require("wm")
local env = wm.env{watermark_interval = 0}
local src = env:from_elements(
  {s = "i", ad = "a", t = 0}, {s = "c", ad = "a", t = 60000}, {s = "i", ad = "b", t = 100000},
  {s = "c", ad = "b", t = 699999}, {s = "c", ad = "a", t = 600000}, {s = "i", ad = "c", t = 700000},
  {s = "c", ad = "c", t = 700000}, {s = "c", ad = "b", t = 690000})
  :assign_timestamps_and_watermarks(wm.watermarks.bounded_out_of_orderness("100s"):with_timestamp_field("t"))
local imp = src:filter(function(r) return r.s == "i" end)
local clk = src:filter(function(r) return r.s == "c" end)
local j = imp:key_by("ad"):interval_join(clk:key_by("ad")):between(0, "10min")
  :side_output_right_late_data("late")
  :process(function(i, c, ctx, out) out(i.ad .. " " .. (c.t - i.t) .. " @" .. ctx.timestamp) end)
j:print("j")
j:get_side_output("late"):map(function(c) return c.ad .. " " .. c.t end):print("late")
env:execute()
]]
-- by hand: W after each record = max t - 100001, so W = 599998 from the fourth record on.
-- a: impression 0 meets clicks in [0, 600000]: 60000, and 600000 (600000 >= W: not late; the
-- impression is kept until W reaches 0 + 10 min = 600000). b: impression 100000 meets
-- [100000, 700000]: 699999 and 690000 (not late). c: 700000 with 700000. Every record is
-- above the watermark of the records before it in the list, so none can be late under any
-- interleaving at -p 3: the same pairs come out.
local JOB_OUT = {"a 60000 @60000", "a 600000 @600000", "b 590000 @690000", "b 599999 @699999",
  "c 0 @700000"}

describe("interval_join in wmrun", function()
  it("joins impressions and clicks, the same at -p 1, -p 3 and --threads 2", function()
    for _, args in ipairs({"", "-p 3", "-p 3 --threads 2"}) do
      local out, err, code = h.run_job(JOB, args)
      assert.are.equal(0, code, err)
      assert.are.same(JOB_OUT, h.sorted_lines(out, true), args)
    end
  end)

  it("--metrics shows the late records per side", function()
    local job = JOB:gsub('{s = "c", ad = "b", t = 690000}', '{s = "c", ad = "b", t = 590000}')
    -- 590000 < W = 599998: late, to the side output
    local out, err, code = h.run_job(job, "--metrics")
    assert.are.equal(0, code, err)
    assert.matches("late> b 590000", out, 1, true)
    assert.matches("late left 0, late right 1", err, 1, true)
  end)

  it("checkpoints keep both sides' records: a stopped and resumed run gives the same output", function()
    local dir = h.tmpdir()
    h.finally(function() h.rmdir(dir) end)
    -- one generated source of both sides (split by a field), so the join sees the records
    -- in the order generated and the output's order is fixed: the resumed file must be
    -- byte for byte the uninterrupted one; some records are late (to a side output, written
    -- too), so lateness survives the checkpoint as well
    local job = h.write_tmp([[
      local wm = require("wm")
      local stop_at = tonumber(arg[1])
      local env = wm.env{watermark_interval = 0}
      local st = wm.watermarks.bounded_out_of_orderness(30):with_timestamp_field("ts")
      local src = env:source{
        open = function(ctx) ctx.i = ctx.i or 0 end,
        poll = function(ctx)
          ctx.i = ctx.i + 1
          local i = ctx.i
          if i > 800 then return false end
          if i == stop_at then os.execute("kill -TERM $PPID") end
          local kind = i % 2 == 0 and "L" or "R"
          local ts = i * 5 + (i * 37 % 50) - (kind == "R" and 20 or 0)
          ctx:emit({k = i % 7, ts = ts, id = kind .. i, kind = kind})
          return true
        end,
        snapshot = function(ctx) return {i = ctx.i} end,
        restore = function(ctx, t) ctx.i = t.i end}:assign_timestamps_and_watermarks(st)
      local l = src:filter(function(r) return r.kind == "L" end)
      local r = src:filter(function(r) return r.kind == "R" end)
      local j = l:key_by("k"):interval_join(r:key_by("k")):between(-25, 40)
        :side_output_left_late_data("late"):side_output_right_late_data("late")
        :process(function(a, b, ctx, out) out(a.id .. "+" .. b.id .. "@" .. ctx.timestamp) end)
      j:union(j:get_side_output("late"):map(function(x) return "late " .. x.id end))
        :write_lines(arg[2], function(s) return s end)
      env:execute("ck")
    ]], ".lua")
    local text = stop_and_resume(dir, job, 400)
    assert.matches("late ", text, 1, true)
    local n = 0
    for _ in text:gmatch("@") do n = n + 1 end
    assert.is_true(n > 200, n)
  end)

  describe("errors at the user's line", function()
    local function fails(body, msg)
      local _, err, code = h.run_job("local wm = require('wm')\nlocal env = wm.env{}\n"
        .. "local a, b = env:from_elements(1), env:from_elements(2)\n" .. body .. "\nenv:execute()\n")
      assert.are.equal(1, code)
      assert.matches(msg, err, 1, true)
      assert.matches("%.lua:4:", err)
    end
    local K = "a:key_by(function(x) return x end)"
    local KB = "b:key_by(function(x) return x end)"
    it("lower > upper", function()
      fails(K .. ":interval_join(" .. KB .. "):between(5, 4)",
        "between: the lower bound (5 ms) is above the upper bound (4 ms)")
      fails(K .. ":interval_join(" .. KB .. "):between('1s', 999)", "the lower bound (1000 ms)")
    end)
    it("bounds that are no durations", function()
      fails(K .. ":interval_join(" .. KB .. "):between(1.5, 4)", "not a whole number of milliseconds")
      fails(K .. ":interval_join(" .. KB .. "):between(0, 'soon')", "bad duration 'soon'")
      fails(K .. ":interval_join(" .. KB .. "):between({}, 4)", "expected an integer (ms) or a string")
      fails(K .. ":interval_join(" .. KB .. "):between(0)", "the upper bound is missing")
    end)
    it("a stream that is not keyed, or of another env", function()
      fails("a:interval_join(" .. KB .. ")", "interval_join: key this stream first")
      fails(K .. ":interval_join(b)", "interval_join: the other stream is not keyed")
      fails(K .. ":interval_join(wm.env{}:from_elements(3):key_by(function(x) return x end))",
        "belongs to another environment")
    end)
    it("no :process", function()
      fails(K .. ":interval_join(" .. KB .. "):between(0, 1):print()",
        "'print' is not a method of an interval join; :process(")
      fails(K .. ":interval_join(" .. KB .. "):print()", "give the bounds and the function first")
      fails(K .. ":interval_join(" .. KB .. "):between(0, 1):process()",
        "process: expected a function fn(left, right, ctx, out), got nil")
      -- a join never finished fails at execute, naming its line
      local _, err, code = h.run_job("local wm = require('wm')\nlocal env = wm.env{}\n"
        .. "local a, b = env:from_elements(1), env:from_elements(2)\n"
        .. K .. ":interval_join(" .. KB .. "):between(0, 1)\na:print()\nenv:execute()\n")
      assert.are.equal(1, code)
      assert.matches("interval_join at [^\n]*%.lua:4 has no :process", err)
    end)
    it("keys of different types on the two sides", function()
      -- 1 and "1" never meet: the first key of each side decides the side's key type
      local _, err, code = h.run_job([[
        local wm = require('wm')
        local env = wm.env{}
        local st = wm.watermarks.monotonous():with_timestamp_field("t")
        local a = env:from_elements({k = 1, t = 1}):assign_timestamps_and_watermarks(st)
        local b = env:from_elements({k = "1", t = 1}):assign_timestamps_and_watermarks(st)
        a:key_by("k"):interval_join(b:key_by("k")):between(0, 1)
          :process(function(l, r, ctx, out) out(1) end):print()
        env:execute()
      ]])
      assert.are.equal(1, code)
      assert.matches("the keys of the interval join's two inputs have different types: the left "
        .. "input's are numbers (first 1), the right input's strings (first \"1\")", err, 1, true)
      assert.matches("interval join (", err, 1, true)
    end)
    it("negative bounds may be duration strings with a sign", function()
      local out, err, code = h.run_job([[
        local wm = require('wm')
        local env = wm.env{}
        local a = env:from_elements({t = 5000}):assign_timestamps_and_watermarks(
          wm.watermarks.monotonous():with_timestamp_field("t"))
        local b = env:from_elements({t = 3000}):assign_timestamps_and_watermarks(
          wm.watermarks.monotonous():with_timestamp_field("t"))
        a:key_by(function() return 1 end):interval_join(b:key_by(function() return 1 end))
          :between("-2s", "-2s"):process(function(l, r, ctx, out) out(l.t - r.t) end):print()
        env:execute()
      ]])
      assert.are.equal(0, code, err)
      assert.are.same({"2000"}, h.sorted_lines(out, true))
    end)
  end)
end)
