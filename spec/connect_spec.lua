-- Connected streams (api.md "Two inputs", semantics.md §10): co-map and co-flat_map, and
-- keyed connected streams with one ctx.state and one timer service per key for both inputs.
local h = require("helper")

-- orders and rates; each order is priced at the newest rate of its currency at or before its
-- time, once the watermark (the minimum of both inputs) has passed the order's time
local ENRICH = [[
local wm = require("wm")
local env = wm.env{watermark_interval = 0}
local st = wm.watermarks.monotonous():with_timestamp_field("ts")
local orders = env:from_elements({id = "a", ts = 1, n = 1}, {id = "b", ts = 2, n = 2},
  {id = "a", ts = 5, n = 3}, {id = "c", ts = 6, n = 4}):assign_timestamps_and_watermarks(st)
local rates = env:from_elements({cur = "a", ts = 0, r = 10}, {cur = "b", ts = 3, r = 20},
  {cur = "a", ts = 4, r = 30}):assign_timestamps_and_watermarks(st)
orders:key_by("id"):connect(rates:key_by("cur")):process{
  process_element1 = function(o, ctx, out)
    local p = ctx.state.pending or {}
    p[#p + 1] = o
    ctx.state.pending = p
    ctx.timer_service:register_event_time_timer(o.ts)
  end,
  process_element2 = function(r, ctx, out)
    local rs = ctx.state.rates or {}
    rs[#rs + 1] = r
    ctx.state.rates = rs
  end,
  on_timer = function(t, ctx, out)
    local keep = {}
    for _, o in ipairs(ctx.state.pending) do
      if o.ts <= t then
        local rate = "none"
        for _, r in ipairs(ctx.state.rates or {}) do if r.ts <= o.ts then rate = r.r end end
        out(string.format("%s %d %d %s at %d", o.id, o.ts, o.n, tostring(rate), t))
      else
        keep[#keep + 1] = o
      end
    end
    ctx.state.pending = keep
  end}:print()
env:execute("enrich")
]]

-- worked out by hand: a@1 sees rate 10 (ts 0); b@2 has no rate yet (b's comes at 3); a@5
-- sees 30 (ts 4); c has none; each timer fires at the order's own time
local ENRICHED = {"a 1 1 10 at 1", "a 5 3 30 at 5", "b 2 2 none at 2", "c 6 4 none at 6"}

local function run(job, args, keep_prefix)
  local out, err, code = h.run_job(job, args)
  assert.are.equal(0, code, err)
  return h.sorted_lines(out, not keep_prefix)
end

-- Runs `job` (arg[1]: the record at which it stops itself with SIGTERM, 0: never; arg[2]:
-- its output file) once uninterrupted, then with checkpoints in dir stopped at `stop_at` and
-- resumed; checks that the resumed file is the uninterrupted one's and returns it.
local stop_and_resume = h.stop_and_resume

describe("connect", function()
  it("keyed connected streams: both inputs share one state and timer service per key", function()
    assert.are.same(ENRICHED, run(ENRICH))
  end)

  it("gives the same records at -p 3 and on two threads (keys meet in one instance)", function()
    assert.are.same(ENRICHED, run(ENRICH, "-p 3"))
    assert.are.same(ENRICHED, run(ENRICH, "-p 3 --threads 2"))
  end)

  it("a keyed connect's watermark is the minimum of both inputs (semantics.md §10)", function()
    -- one source split in two, so that the records of the inputs interleave as listed: input 1
    -- runs ahead to 100 while input 2 stays at 20, and a timer at 50 fires only at the end
    local out, err, code = h.run_job([[
      local wm = require("wm")
      local env = wm.env{watermark_interval = 0}
      local st = wm.watermarks.monotonous():with_timestamp_field("ts")
      local src = env:from_elements({s = 1, ts = 10}, {s = 2, ts = 10}, {s = 1, ts = 100}, {s = 2, ts = 20})
      local fast = src:filter(function(r) return r.s == 1 end):assign_timestamps_and_watermarks(st)
      local slow = src:filter(function(r) return r.s == 2 end):assign_timestamps_and_watermarks(st)
      fast:key_by(function() return 1 end):connect(slow:key_by(function() return 1 end)):process{
        process_element1 = function(r, ctx, out)
          ctx.timer_service:register_event_time_timer(50)
          out("1 " .. r.ts .. " wm " .. ctx.timer_service:current_watermark())
        end,
        process_element2 = function(r, ctx, out)
          out("2 " .. r.ts .. " wm " .. ctx.timer_service:current_watermark())
        end,
        on_timer = function(t, ctx, out) out("timer " .. t .. " wm " .. ctx.timer_service:current_watermark()) end}
        :print()
      env:execute()
    ]])
    assert.are.equal(0, code, err)
    -- a record sees the watermark from before its own assigner's advance: 2@10 still sees
    -- MIN (input 2 has none yet); then the minimum is 9, and input 1 at 99 does not move it
    assert.are.equal(table.concat({
      "1 10 wm " .. math.mininteger, "2 10 wm " .. math.mininteger, "1 100 wm 9", "2 20 wm 9",
      "timer 50 wm " .. math.maxinteger}, "\n") .. "\n", out)
  end)

  it("co-map and co-flat_map run one function per input into one stream", function()
    local job = [[
      local wm = require("wm")
      local env = wm.env{}
      local a = env:from_elements(1, 2, 3)
      local b = env:from_elements("x", "y")
      a:connect(b):map(function(n) return "n" .. n * 10 end, function(s) return "s" .. s end):print("m")
      a:connect(b):flat_map(function(n, out) for _ = 1, n do out(n) end end,
        function(s, out) out(s .. s) end):print("f")
      env:execute()
    ]]
    local want = {"f> 1", "f> 2", "f> 2", "f> 3", "f> 3", "f> 3", "f> xx", "f> yy",
                  "m> n10", "m> n20", "m> n30", "m> sx", "m> sy"}
    assert.are.same(want, run(job, nil, true))
    local par = {}
    for _, l in ipairs(run(job, "-p 2", true)) do par[#par + 1] = (l:gsub("^(%a):%d+>", "%1>")) end
    table.sort(par)
    assert.are.same(want, par)
  end)

  it("connect(b):key_by(k1, k2) is a:key_by(k1):connect(b:key_by(k2))", function()
    assert.are.same(ENRICHED, run((ENRICH:gsub('orders:key_by%("id"%):connect%(rates:key_by%("cur"%)%)',
      'orders:connect(rates):key_by("id", "cur")'))))
  end)

  it("checkpoints keep both inputs' state and timers: a resumed run gives the same records", function()
    local dir = h.tmpdir()
    h.finally(function() h.rmdir(dir) end)
    -- a generated stream of orders and one of rates, stopped by SIGTERM half way through (a
    -- checkpoint) and resumed: the output of both runs together is an uninterrupted run's
    local job = h.write_tmp([[
      local wm = require("wm")
      local stop_at = tonumber(arg[1])
      local env = wm.env{watermark_interval = 0}
      local st = wm.watermarks.monotonous():with_timestamp_field("ts")
      local function gen(kind)
        return env:source{
          open = function(ctx) ctx.i = ctx.i or 0 end,
          poll = function(ctx)
            ctx.i = ctx.i + 1
            if ctx.i > 400 then return false end
            if kind == "o" and ctx.i == stop_at then os.execute("kill -TERM $PPID") end
            ctx:emit({k = ctx.i % 7, ts = ctx.i * 10, v = ctx.i, kind = kind})
            return true
          end,
          snapshot = function(ctx) return {i = ctx.i} end,
          restore = function(ctx, t) ctx.i = t.i end}:assign_timestamps_and_watermarks(st)
      end
      gen("o"):key_by("k"):connect(gen("r"):key_by("k")):process{
        process_element1 = function(r, ctx, out)
          ctx.state.sum = (ctx.state.sum or 0) + r.v
          ctx.timer_service:register_event_time_timer(r.ts + 25)
        end,
        process_element2 = function(r, ctx, out) ctx.state.rates = (ctx.state.rates or 0) + 1 end,
        on_timer = function(t, ctx, out)
          out(string.format("%s %d %d %d", tostring(ctx.key), t, ctx.state.sum, ctx.state.rates or 0))
        end}:write_lines(arg[2], function(s) return s end)
      env:execute("ck")
    ]], ".lua")
    stop_and_resume(dir, job, 200)
  end)

  describe("errors at the user's line", function()
    local function fails(body, msg)
      local _, err, code = h.run_job("local wm = require('wm')\nlocal env = wm.env{}\n"
        .. "local a, b = env:from_elements(1), env:from_elements(2)\n" .. body .. "\n")
      assert.are.equal(1, code)
      assert.matches(msg, err, 1, true)
      assert.matches("%.lua:4:", err)
    end
    it("keyed with non-keyed", function()
      fails("a:key_by(function(x) return x end):connect(b)", "connect: key both streams or neither")
      fails("a:connect(b:key_by(function(x) return x end))", "connect: key both streams or neither")
    end)
    it("a stream of another environment", function()
      fails("a:connect(wm.env{}:from_elements(3))", "belongs to another environment")
    end)
    it("process on streams that are not keyed, map on keyed ones", function()
      fails("a:connect(b):process{process_element1 = print, process_element2 = print}",
        "process: connect keyed streams")
      fails("a:connect(b):key_by(function(x) return x end, function(x) return x end):map(print, print)",
        "map: keyed connected streams take :process")
    end)
    it("a missing function", function()
      fails("a:connect(b):map(print)", "map (second function): expected a function, got nil")
      fails("a:connect(b):key_by(function(x) return x end, function(x) return x end)"
        .. ":process{process_element1 = print}", "process: process_element2 must be a function, got nil")
    end)
  end)
end)

-- rules broadcast to every instance of a keyed stream of events; one source split in two,
-- so that on one thread the records arrive in the order listed
local RULES = [[
local wm = require("wm")
local env = wm.env{watermark_interval = 0}
local src = env:from_elements({kind = "rule", name = "big", min = 50}, {kind = "ev", user = "u1", v = 10},
  {kind = "ev", user = "u2", v = 60}, {kind = "rule", name = "small", max = 15},
  {kind = "ev", user = "u1", v = 70}, {kind = "ev", user = "u3", v = 5}, {kind = "ev", user = "u1", v = 12})
local rules = src:filter(function(r) return r.kind == "rule" end)
local events = src:filter(function(r) return r.kind == "ev" end)
events:key_by("user"):connect(rules:broadcast()):process{
  process_element = function(e, ctx, out)
    ctx.state.n = (ctx.state.n or 0) + 1
    local names = {}
    for name in pairs(ctx.broadcast_state) do names[#names + 1] = name end
    table.sort(names)
    for _, name in ipairs(names) do
      local r = ctx.broadcast_state[name]
      if (r.min and e.v >= r.min) or (r.max and e.v <= r.max) then
        out(string.format("%s #%d v=%d matches %s", e.user, ctx.state.n, e.v, name))
      end
    end
  end,
  process_broadcast_element = function(r, ctx, out)
    ctx.broadcast_state[r.name] = r
    out("rule " .. r.name)
  end}:print()
env:execute()
]]

describe("broadcast state", function()
  -- by hand: u1@10 comes after "big" only (no match); u2@60 matches big; "small" comes; u1@70
  -- (u1's 2nd) matches big; u3@5 matches small; u1@12 (3rd) matches small
  local MATCHES = {"u1 #2 v=70 matches big", "u1 #3 v=12 matches small", "u2 #1 v=60 matches big",
                   "u3 #1 v=5 matches small"}

  it("every instance gets every broadcast record; process_element reads the rules", function()
    local want = {"rule big", "rule small"}
    for _, m in ipairs(MATCHES) do want[#want + 1] = m end
    table.sort(want)
    assert.are.same(want, run(RULES))
    -- at -p 3 each of the 3 instances sees each rule once: 6 rule lines, the same matches
    local out = run(RULES, "-p 3", true)
    local rules, matches = {}, {}
    for _, l in ipairs(out) do
      if l:find("rule ", 1, true) then rules[#rules + 1] = l else matches[#matches + 1] = (l:gsub("^%d+> ", "")) end
    end
    assert.are.same({"1> rule big", "1> rule small", "2> rule big", "2> rule small", "3> rule big",
                     "3> rule small"}, rules)
    table.sort(matches)
    assert.are.same(MATCHES, matches)
  end)

  it("a write to the broadcast state in process_element is an error at its line", function()
    local _, err, code = h.run_job([[
      local wm = require("wm")
      local env = wm.env{}
      local a, b = env:from_elements({u = 1}), env:from_elements({r = 1})
      a:key_by("u"):connect(b:broadcast()):process{
        process_element = function(e, ctx, out)
          ctx.broadcast_state.x = 1
        end,
        process_broadcast_element = function(r, ctx, out) end}:print()
      env:execute()
    ]])
    assert.are.equal(1, code)
    assert.matches("%.lua:6: ctx.broadcast_state is read%-only in process_element %(setting x%)", err)
  end)

  it("process_broadcast_element has no key: no keyed state, no timers", function()
    local _, err, code = h.run_job([[
      local wm = require("wm")
      local env = wm.env{}
      local a, b = env:from_elements({u = 1}), env:from_elements({r = 1})
      a:key_by("u"):connect(b:broadcast()):process{
        process_element = function(e, ctx, out) end,
        process_broadcast_element = function(r, ctx, out)
          assert(ctx.state == nil and ctx.key == nil)
          ctx.timer_service:register_event_time_timer(5)
        end}:print()
      env:execute()
    ]])
    assert.are.equal(1, code)
    assert.matches("%.lua:8: register_event_time_timer: process_broadcast_element has no key", err)
  end)

  it("the broadcast state is in the checkpoint: a resumed run still knows the rules", function()
    local dir = h.tmpdir()
    h.finally(function() h.rmdir(dir) end)
    -- the rules come first; the job stops (SIGTERM: a checkpoint) in the middle of the
    -- events, and the events after the resume must still match the rules of before
    local job = h.write_tmp([[
      local wm = require("wm")
      local stop_at = tonumber(arg[1])
      local env = wm.env{watermark_interval = 0}
      local src = env:source{
        open = function(ctx) ctx.i = ctx.i or 0 end,
        poll = function(ctx)
          ctx.i = ctx.i + 1
          if ctx.i > 300 then return false end
          if ctx.i == stop_at then os.execute("kill -TERM $PPID") end
          if ctx.i <= 3 then ctx:emit({rule = ctx.i, div = ctx.i + 1}) else ctx:emit({v = ctx.i}) end
          return true
        end,
        snapshot = function(ctx) return {i = ctx.i} end,
        restore = function(ctx, t) ctx.i = t.i end}
      src:filter(function(r) return r.v ~= nil end):key_by(function(r) return r.v % 5 end)
        :connect(src:filter(function(r) return r.rule ~= nil end):broadcast()):process{
          process_element = function(e, ctx, out)
            local hits = {}
            for i = 1, 3 do
              local r = ctx.broadcast_state[i]
              if r and e.v % r.div == 0 then hits[#hits + 1] = i end
            end
            out(e.v .. ": " .. table.concat(hits, ","))
          end,
          process_broadcast_element = function(r, ctx, out) ctx.broadcast_state[r.rule] = r end}
        :write_lines(arg[2], function(s) return s end)
      env:execute("rules")
    ]], ".lua")
    local out = stop_and_resume(dir, job, 150)
    -- 300 is divisible by 2, 3 and 4: all three rules, which came before the checkpoint
    assert.truthy(out:find("\n300: 1,2,3\n", 1, true))
  end)
end)
