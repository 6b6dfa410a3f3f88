-- Window join and co-group (api.md "Two inputs", semantics.md §10; Flink's JoinedStreams and
-- CoGroupedStreams). Every expected output below is worked out by hand from the rules: a
-- record goes to the windows of semantics.md §4, a window fires when the watermark (the
-- minimum of both inputs) reaches its max timestamp (§5), lateness as rule 6, and a firing
-- gives every (left, right) pair of the key and window, lefts in arrival order and for each
-- left the rights in arrival order, each at the window's max timestamp (§10).
--
-- Most tests use a wm.testing harness with two channels: channel 1 carries the first input's
-- records ({s = "L"}), channel 2 the second's ({s = "R"}); the build splits the input by `s`.
-- The watermark of each channel is then the watermark of one side, and the join's watermark
-- is their minimum, exactly as for two inputs.
local h = require("helper")
local wm = require("wm")

local function sides(input)
  return input:filter(function(r) return r.s == "L" end), input:filter(function(r) return r.s == "R" end)
end

local function pair(l, r) return l.v .. "+" .. r.v end

-- a co-group's call as one line: key [lefts] [rights]
local function cg(key, ls, rs, out)
  local a, b = {}, {}
  for i, l in ipairs(ls) do a[i] = l.v end
  for i, r in ipairs(rs) do b[i] = r.v end
  out(tostring(key) .. " [" .. table.concat(a, ",") .. "] [" .. table.concat(b, ",") .. "]")
end

-- A harness for `a:join(b)` (what = "join") or `a:co_group(b)` with the window settings
-- `with(joined)` applies.
local function harness(what, with, fn)
  return wm.testing.harness(function(input)
    local L, R = sides(input)
    local j = with(L[what](L, R))
    return j:apply(fn or (what == "join" and pair or cg))
  end, {channels = 2, watermark_interval = 0})
end

local function L(k, v) return {s = "L", k = k, v = v} end
local function R(k, v) return {s = "R", k = k, v = v} end

-- "value@timestamp" of each record the harness emitted since the last call
local function got(hh)
  local t = {}
  for i, o in ipairs(hh:output_records()) do t[i] = o.value .. "@" .. o.timestamp end
  return t
end

local function tumbling10(j) return j:where("k"):equal_to("k"):window(wm.windows.tumbling(10)) end

-- Tumbling windows of 10 ms, records (side key value ts): L a l1 1, R a r1 2, L a l2 5,
-- R a r2 8, L b l3 9 in [0, 10); R a r3 12, L a l4 15, R b r4 14 in [10, 20).
local function feed_tumbling(hh)
  hh:push(L("a", "l1"), 1, 1):push(R("a", "r1"), 2, 2):push(L("a", "l2"), 5, 1):push(R("a", "r2"), 8, 2)
  hh:push(L("b", "l3"), 9, 1)
  hh:watermark(9, 1)   -- only the first input has reached 9: nothing fires
end

describe("window join", function()
  it("tumbling: every pair of a key and window, lefts in arrival order, at the window's max timestamp", function()
    local hh = harness("join", tumbling10)
    feed_tumbling(hh)
    assert.are.same({}, got(hh))
    hh:watermark(9, 2) -- both at 9: [0, 10) fires; b has no right record: no pair
    assert.are.same({"l1+r1@9", "l1+r2@9", "l2+r1@9", "l2+r2@9"}, got(hh))
    hh:push(R("a", "r3"), 12, 2):push(L("a", "l4"), 15, 1):push(R("b", "r4"), 14, 2):finish()
    assert.are.same({"l4+r3@19"}, got(hh)) -- b's window [10, 20) has no left record
  end)

  it("co_group: once per key and window holding a record of either side (one side may be empty)", function()
    local hh = harness("co_group", tumbling10)
    feed_tumbling(hh)
    hh:watermark(9, 2)
    -- windows fire in the order their (key, window) was first created: a, then b
    assert.are.same({"a [l1,l2] [r1,r2]@9", "b [l3] []@9"}, got(hh))
    hh:push(R("a", "r3"), 12, 2):push(L("a", "l4"), 15, 1):push(R("b", "r4"), 14, 2):finish()
    assert.are.same({"a [l4] [r3]@19", "b [] [r4]@19"}, got(hh))
  end)

  it("sliding: a pair repeats in every window holding both", function()
    -- sliding(10, 5): ts 1 -> [0,10) and [-5,5); 7 and 8 -> [5,15), [0,10); 12 -> [10,20), [5,15).
    -- l1@1, r1@7, l3@8, l2@12: [-5,5) {l1}, [0,10) {l1, r1, l3}, [5,15) {r1, l3, l2}, [10,20) {l2}
    for _, what in ipairs({"join", "co_group"}) do
      local hh = harness(what, function(j)
        return j:where("k"):equal_to("k"):window(wm.windows.sliding(10, 5))
      end)
      hh:push(L("a", "l1"), 1, 1):push(R("a", "r1"), 7, 2):push(L("a", "l3"), 8, 1):push(L("a", "l2"), 12, 1)
      hh:finish()
      if what == "join" then
        assert.are.same({"l1+r1@9", "l3+r1@9", "l3+r1@14", "l2+r1@14"}, got(hh))
      else
        assert.are.same({"a [l1] []@4", "a [l1,l3] [r1]@9", "a [l3,l2] [r1]@14", "a [l2] []@19"}, got(hh))
      end
    end
  end)

  it("session windows merge across both sides", function()
    -- session(5): l1@1 [1,6) and r1@4 [4,9) merge into [1,9); l2@12 [12,17) and r2@10 [10,15)
    -- merge into [10,17) (not with [1,9): 10 > 9); l3@20 [20,25) and l4@30 [30,35) are apart
    -- until r3@25 [25,30) touches both (windows that touch merge): [20,35) holds l3, l4, r3.
    -- W = min(29, 23) = 23 fires [1,9) (max 8) and [10,17) (max 16), not [20,25) (max 24)
    for _, what in ipairs({"join", "co_group"}) do
      local hh = harness(what, function(j)
        return j:where("k"):equal_to("k"):window(wm.windows.session(5))
      end)
      hh:push(L("a", "l1"), 1, 1):push(R("a", "r1"), 4, 2):push(L("a", "l2"), 12, 1):push(R("a", "r2"), 10, 2)
      hh:push(L("a", "l3"), 20, 1):push(L("a", "l4"), 30, 1)
      hh:watermark(29, 1):watermark(23, 2)
      local first = got(hh)
      hh:push(R("a", "r3"), 25, 2):finish()
      if what == "join" then
        assert.are.same({"l1+r1@8", "l2+r2@16"}, first)
        assert.are.same({"l3+r3@34", "l4+r3@34"}, got(hh))
      else
        assert.are.same({"a [l1] [r1]@8", "a [l2] [r2]@16"}, first)
        assert.are.same({"a [l3,l4] [r3]@34"}, got(hh))
      end
    end
  end)

  it("a dynamic session gap is read from the record (not from its tag)", function()
    -- l1@1 gap 3 [1,4) and r1@3 gap 2 [3,5) merge into [1,5); l2@6 gap 3 [6,9) starts after 5;
    -- r2@7 gap 2 [7,9) joins it: [6,9)
    local hh = harness("join", function(j)
      return j:where("k"):equal_to("k"):window(wm.windows.session(function(r) return r.g end))
    end)
    local function g(r, gap) r.g = gap; return r end
    hh:push(g(L("a", "l1"), 3), 1, 1):push(g(R("a", "r1"), 2), 3, 2):push(g(L("a", "l2"), 3), 6, 1)
    hh:push(g(R("a", "r2"), 2), 7, 2):finish()
    assert.are.same({"l1+r1@4", "l2+r2@8"}, got(hh))
  end)

  it("late records on each side: within the lateness a late firing joins the whole window again; "
    .. "beyond, dropped and counted", function()
    -- tumbling(10), allowed_lateness(5): [0,10) fires at W = 10 and is deleted when W >= 14
    local hh = harness("join", function(j) return tumbling10(j):allowed_lateness(5) end)
    hh:push(L("a", "l1"), 1, 1):push(R("a", "r1"), 3, 2)
    hh:watermark(11, 1):watermark(10, 2)
    assert.are.same({"l1+r1@9"}, got(hh))
    hh:push(L("a", "l3"), 4, 1) -- late on the first side, within the lateness: fires at once
    assert.are.same({"l1+r1@9", "l3+r1@9"}, got(hh))
    hh:push(R("a", "r3"), 6, 2) -- late on the second side: every pair again
    assert.are.same({"l1+r1@9", "l1+r3@9", "l3+r1@9", "l3+r3@9"}, got(hh))
    hh:push(L("a", "l2"), 12, 1):push(R("a", "r2"), 11, 2)
    hh:watermark(15, 1):watermark(15, 2) -- W = 15 >= 14: [0,10) is gone
    hh:push(L("a", "l5"), 2, 1):push(R("a", "r5"), 7, 2) -- 2 + 5 <= 15, 7 + 5 <= 15: late
    hh:push(L("a", "l4"), 16, 1):finish()
    assert.are.same({"l2+r2@19", "l4+r2@19"}, got(hh))
    local m = hh:metrics()["tumbling window join"]
    assert.are.equal(2, m.late_records_dropped)
  end)

  it("co_group: late firings over the window's contents too", function()
    local hh = harness("co_group", function(j) return tumbling10(j):allowed_lateness(5) end)
    hh:push(L("a", "l1"), 1, 1):watermark(12, 1):watermark(12, 2)
    assert.are.same({"a [l1] []@9"}, got(hh))
    hh:push(R("a", "r1"), 8, 2)
    assert.are.same({"a [l1] [r1]@9"}, got(hh))
  end)

  it("equal timestamps, and the edges of a window", function()
    -- l1, r1, l2, r2 at 5; r3 at 9 (the window's last ms); l3 at 10 (the next window)
    local hh = harness("join", tumbling10)
    hh:push(L("a", "l1"), 5, 1):push(R("a", "r1"), 5, 2):push(L("a", "l2"), 5, 1):push(R("a", "r2"), 5, 2)
    hh:push(R("a", "r3"), 9, 2):push(L("a", "l3"), 10, 1)
    hh:watermark(8, 1):watermark(8, 2)
    assert.are.same({}, got(hh)) -- max timestamp 9 not reached
    hh:watermark(9, 1):watermark(9, 2)
    assert.are.same({"l1+r1@9", "l1+r2@9", "l1+r3@9", "l2+r1@9", "l2+r2@9", "l2+r3@9"}, got(hh))
    hh:finish()
    assert.are.same({}, got(hh)) -- [10,20) has l3 only
  end)

  it("an idle side does not hold the watermark back", function()
    local hh = harness("join", tumbling10)
    hh:push(L("a", "l1"), 1, 1):push(R("a", "r1"), 2, 2):watermark(5, 2)
    hh:watermark(12, 1)
    assert.are.same({}, got(hh)) -- W = min(12, 5)
    hh:idle(2)                   -- W = 12: [0,10) fires
    assert.are.same({"l1+r1@9"}, got(hh))
  end)

  it("a custom trigger: count(3) on a global window counts the records of both sides", function()
    local hh = harness("join", function(j)
      return j:where("k"):equal_to("k"):window(wm.windows.global()):trigger(wm.triggers.count(3))
    end)
    hh:push(L("a", "l1"), 1, 1):push(R("a", "r1"), 2, 2)
    assert.are.same({}, got(hh))
    hh:push(L("a", "l2"), 3, 1) -- third record: fires over l1, r1, l2
    assert.are.same({"l1+r1@" .. math.maxinteger, "l2+r1@" .. math.maxinteger}, got(hh))
    hh:push(R("a", "r2"), 4, 2):push(L("b", "x"), 5, 1):push(L("a", "l3"), 6, 1) -- a's 5th: no firing
    assert.are.same({}, got(hh))
    hh:push(R("a", "r3"), 7, 2) -- a's sixth: the count restarted at 3, the contents are kept
    local max = "@" .. math.maxinteger
    assert.are.same({"l1+r1" .. max, "l1+r2" .. max, "l1+r3" .. max, "l2+r1" .. max, "l2+r2" .. max,
      "l2+r3" .. max, "l3+r1" .. max, "l3+r2" .. max, "l3+r3" .. max}, got(hh))
    hh:finish()
    assert.are.same({}, got(hh)) -- a global window never fires from the watermark
  end)

  it("purging(count(2)): each firing sees only what came since the last", function()
    local hh = harness("co_group", function(j)
      return j:where("k"):equal_to("k"):window(wm.windows.global()):trigger(wm.triggers.purging(wm.triggers.count(2)))
    end)
    hh:push(L("a", "l1"), 1, 1):push(R("a", "r1"), 2, 2):push(R("a", "r2"), 3, 2):push(R("a", "r3"), 4, 2)
    assert.are.same({"a [l1] [r1]@" .. math.maxinteger, "a [] [r2,r3]@" .. math.maxinteger}, got(hh))
  end)

  it("an evictor: count(2) keeps the last two records of either side before each firing", function()
    local hh = harness("co_group", function(j)
      return j:where("k"):equal_to("k"):window(wm.windows.global()):trigger(wm.triggers.count(3))
        :evictor(wm.evictors.count(2))
    end)
    hh:push(L("a", "l1"), 1, 1):push(R("a", "r1"), 2, 2):push(L("a", "l2"), 3, 1)
    -- three records, the first evicted: r1 and l2 remain
    assert.are.same({"a [l2] [r1]@" .. math.maxinteger}, got(hh))
  end)

  it("keys: a list of fields (composite), a function, different field names per side", function()
    local hh = wm.testing.harness(function(input)
      local a, b = sides(input)
      return a:co_group(b):where({"k", "n"}):equal_to({"kk", "nn"}):window(wm.windows.tumbling(10))
        :apply(function(key, ls, rs, out) out(key[1] .. key[2] .. ":" .. #ls .. #rs) end)
    end, {channels = 2})
    hh:push({s = "L", k = "a", n = 1}, 1, 1):push({s = "R", kk = "a", nn = 1}, 2, 2)
    hh:push({s = "R", kk = "a", nn = 2}, 3, 2):finish()
    assert.are.same({"a1:11", "a2:01"}, hh:output())
    hh = wm.testing.harness(function(input)
      local a, b = sides(input)
      return a:join(b):where(function(r) return r.id % 3 end):equal_to("m"):window(wm.windows.tumbling(10))
        :apply(function(l, r) return l.id .. "/" .. r.m end)
    end, {channels = 2})
    hh:push({s = "L", id = 4}, 1, 1):push({s = "L", id = 5}, 1, 1):push({s = "R", m = 1}, 2, 2):finish()
    assert.are.same({"4/1"}, hh:output()) -- 4 % 3 == 1; 5 % 3 == 2 has no partner
  end)

  it("a nil result of the join function emits nothing", function()
    local hh = harness("join", tumbling10, function(l, r) if l.v ~= "l2" then return pair(l, r) end end)
    hh:push(L("a", "l1"), 1, 1):push(L("a", "l2"), 1, 1):push(R("a", "r1"), 1, 2):finish()
    assert.are.same({"l1+r1@9"}, got(hh))
  end)

  it("a record without a timestamp (MIN) is an error", function()
    local hh = harness("join", tumbling10)
    local ok, err = pcall(hh.push, hh, L("a", "l1"), nil, 1)
    assert.is_false(ok)
    assert.matches('join: record {"k":"a","s":"L","v":"l1"} of the first input has no timestamp',
      tostring(err), 1, true)
  end)
end)

-- the job of the parallel and checkpoint tests: one generated source split in two by i % 2;
-- each side's timestamps only grow (i * 10), so no record is late in any interleaving and the
-- results are the same at any parallelism (arg[1]: stop at that record with SIGTERM, 0 never)
local GEN = [[
local wm = require("wm")
local stop_at = tonumber(arg[1]) or 0
local env = wm.env{watermark_interval = 0}
local st = wm.watermarks.monotonous():with_timestamp_field("ts")
local src = env:source{
  open = function(ctx) ctx.i = ctx.i or 0 end,
  poll = function(ctx)
    ctx.i = ctx.i + 1
    if ctx.i > 600 then return false end
    if ctx.i == stop_at then os.execute("kill -TERM $PPID") end
    ctx:emit({k = (ctx.i * 7) % 5, ts = ctx.i * 10, v = ctx.i, side = ctx.i % 2})
    return true
  end,
  snapshot = function(ctx) return {i = ctx.i} end,
  restore = function(ctx, t) ctx.i = t.i end}
local a = src:filter(function(r) return r.side == 0 end):assign_timestamps_and_watermarks(st)
local b = src:filter(function(r) return r.side == 1 end):assign_timestamps_and_watermarks(st)
local j = a:join(b):where("k"):equal_to("k"):window(wm.windows.sliding(200, 100))
  :apply(function(l, r) return "j " .. l.k .. " " .. l.v .. " " .. r.v end):uid("pairs")
local c = a:co_group(b):where("k"):equal_to("k"):window(wm.windows.session(35))
  :apply(function(k, ls, rs, out) out("c " .. k .. " " .. #ls .. " " .. #rs .. " " .. (ls[1] or rs[1]).v) end)
  :name("sessions"):set_parallelism(2) -- the usual methods of a stream
local sink = arg[2]
if sink then
  j:union(c):write_lines(sink, function(s) return s end)
else
  j:print() c:print()
end
env:execute("wj")
]]

describe("window join jobs", function()
  it("gives the same results at -p 3 and on two threads", function()
    local function run(args)
      local out, err, code = h.run_job(GEN, args)
      assert.are.equal(0, code, err)
      return h.sorted_lines(out, true)
    end
    local one = run(nil)
    -- worked out by hand: left records are the even i, right the odd, at ts = 10 i, key i*7 % 5
    -- (equal for i and i + 5k). A pair (l, r) of one key repeats in every sliding(200, 100)
    -- window holding both: the windows whose start is a multiple of 100 in
    -- (max(ts) - 200, min(ts)]. The session gap 35 is shorter than the 50 ms between records of
    -- a key: every record is a session of its own, so co_group is called once per record.
    local pairs_n, cg_n = 0, 0
    for _, l in ipairs(one) do
      if l:sub(1, 2) == "j " then pairs_n = pairs_n + 1 else cg_n = cg_n + 1 end
    end
    local want = 0
    for li = 2, 600, 2 do
      for ri = 1, 599, 2 do
        if (li * 7) % 5 == (ri * 7) % 5 then
          local lo, hi = math.max(li, ri) * 10 - 199, math.min(li, ri) * 10
          if hi >= lo then want = want + hi // 100 - (lo - 1) // 100 end
        end
      end
    end
    assert.are.equal(want, pairs_n)
    assert.are.equal(600, cg_n)
    assert.are.same(one, run("-p 3"))
    assert.are.same(one, run("-p 3 --threads 2"))
  end)

  it("checkpoints: a run stopped half way and resumed gives the uninterrupted run's output", function()
    local dir = h.tmpdir()
    h.finally(function() h.rmdir(dir) end)
    h.stop_and_resume(dir, h.write_tmp(GEN, ".lua"), 300)
  end)
end)

describe("window join errors", function()
  local function fails(body, msg, line)
    local _, err, code = h.run_job("local wm = require('wm')\nlocal env = wm.env{}\n"
      .. "local a = env:from_elements({k = 'x', ts = 1}):assign_timestamps_and_watermarks("
      .. "wm.watermarks.monotonous():with_timestamp_field('ts'))\n"
      .. "local b = env:from_elements({k = 1, ts = 2}):assign_timestamps_and_watermarks("
      .. "wm.watermarks.monotonous():with_timestamp_field('ts'))\n" .. body .. "\nenv:execute()\n")
    assert.are.equal(1, code)
    assert.matches(msg, err, 1, true)
    assert.matches("%.lua:" .. (line or 5) .. ":", err)
    return err
  end
  local W = ":window(wm.windows.tumbling(10))"
  it("streams of two environments", function()
    fails("a:join(wm.env{}:from_elements(1))", "join: the other stream belongs to another environment")
    fails("a:co_group(wm.env{}:from_elements(1))", "co_group: the other stream belongs to another environment")
  end)
  it("apply without window, where or equal_to", function()
    fails("a:join(b):where('k'):equal_to('k'):apply(print)", "apply: a join needs its keys and a window first")
    fails("a:join(b):where('k'):apply(print)", "(:equal_to is missing)")
    fails("a:co_group(b):apply(print)", "(:where and :equal_to are missing)")
    fails("a:join(b):window(wm.windows.tumbling(10))", "window: call :where(key_a):equal_to(key_b) first")
    fails("a:join(b):equal_to('k')", "equal_to: call :where(key) first")
    fails("a:join(b):where('k'):equal_to('k'):allowed_lateness(5)", "allowed_lateness: call :window(assigner) first")
  end)
  it("keys of different types at runtime name both records and the line", function()
    local err = fails("a:join(b):where('k'):equal_to('k')" .. W .. ":apply(function(l, r) return 1 end):print()",
      "join: the keys of the two inputs have different types")
    assert.matches('key "x" (string) of record {"k":"x","ts":1}', err, 1, true)
    assert.matches('key 1 (number) of record {"k":1,"ts":2}', err, 1, true)
  end)
  it("a missing key field names the record and the side", function()
    fails("a:join(b):where('nope'):equal_to('k')" .. W .. ":apply(print):print()",
      "join: the first input's key: key field 'nope' is missing in record {\"k\":\"x\",\"ts\":1}")
  end)
  it("wrong argument types", function()
    fails("a:join(42)", "join: expected a stream, got number")
    fails("a:join(b:key_by('k'))", "join: expected a stream that is not keyed")
    fails("a:join(b):where(42)", "where: expected a function, a field name or a list of field names, got number")
    fails("a:join(b):where('k'):equal_to('k'):window('5s')", "window: expected a window assigner")
    fails("a:join(b):where('k'):equal_to('k'):window(wm.windows.count(3))", "window: count windows")
    fails("a:join(b):where('k'):equal_to('k')" .. W .. ":trigger(3)", "trigger: expected a trigger from wm.triggers")
    fails("a:join(b):where('k'):equal_to('k')" .. W .. ":allowed_lateness(-1)",
      "allowed_lateness: must not be negative")
    fails("a:join(b):where('k'):equal_to('k')" .. W .. ":apply(3)", "apply: expected a function, got number")
    fails("a:join(b):where('k'):equal_to('k')" .. W .. ":evictor(wm.evictors.custom{before = print})",
      "evictor: a join takes wm.evictors.count or wm.evictors.time")
    fails("a:join(b):where({'k', 'ts'}):equal_to('k')", "equal_to: the keys of the two inputs have different types")
    fails("a:join(b):where({'k', 'ts'}):equal_to({'k'})", "different types")
  end)
end)
