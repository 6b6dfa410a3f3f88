-- Watermark strategies: custom generators (Flink's contract), bad input, and the
-- observability of wmrun (--trace-watermarks, --metrics, the no-watermark warning).
local wm = require("wm")
local T = wm.testing
local helper = require("helper")

local function window_sum(s)
  return s:key_by("id"):window(wm.windows.tumbling(5000)):sum("vc")
end

local function gen_harness(factory, opts)
  return T.harness(function(input)
    return window_sum(input:assign_timestamps_and_watermarks(wm.watermarks.for_generator(factory)))
  end, opts)
end

describe("custom watermark generators", function()
  it("punctuated: on_event runs after the record is forwarded, and its watermark counts at once", function()
    local seen = {}
    local h = gen_harness(function()
      return {
        on_event = function(_self, _r, ts, out)
          seen[#seen + 1] = ts
          out:emit_watermark(ts - 2000)
        end,
      }
    end, {watermark_interval = 200})
    h:push({id = "a", vc = 1}, 1000)
    h:push({id = "a", vc = 1}, 7000)
    assert.are.same({1000, 7000}, seen)
    assert.are.same({{id = "a", vc = 1}}, h:output())   -- W = 5000 >= 4999: the first record only
    assert.are.equal(5000, h:current_watermark())
  end)

  it("periodic: on_periodic_emit runs every watermark_interval of processing time", function()
    local calls = 0
    local h = gen_harness(function()
      return {
        max = math.mininteger,
        on_event = function(self, _r, ts) if ts > self.max then self.max = ts end end,
        on_periodic_emit = function(self, out)
          calls = calls + 1
          if self.max > math.mininteger then out:emit_watermark(self.max) end
        end,
      }
    end, {watermark_interval = 100})
    h:push({id = "a", vc = 1}, 6000)
    assert.are.equal(0, calls)
    h:advance_processing_time(250)
    assert.are.equal(2, calls)                          -- at 100 and 200
    assert.are.equal(6000, h:current_watermark())
  end)

  it("with watermark_interval = 0 calls on_periodic_emit after every record", function()
    local calls = 0
    local h = gen_harness(function()
      return {on_event = function() end, on_periodic_emit = function() calls = calls + 1 end}
    end, {watermark_interval = 0})
    h:push({id = "a", vc = 1}, 1)
    h:push({id = "a", vc = 1}, 2)
    assert.are.equal(2, calls)
  end)

  it("gets one last on_periodic_emit once the end of input has gone through (Flink's finish)", function()
    local log = {}
    local h = T.harness(function(input)
      local s = input:assign_timestamps_and_watermarks(wm.watermarks.for_generator(function()
        return {
          on_event = function() end,
          on_periodic_emit = function(_self, out)
            log[#log + 1] = "periodic"
            out:emit_watermark(1)                       -- after MAX: changes nothing
          end,
        }
      end))
      return window_sum(s):map(function(r) log[#log + 1] = "window " .. r.vc; return r end)
    end, {watermark_interval = "1h"})
    h:push({id = "a", vc = 1}, 1000)
    h:push({id = "a", vc = 2}, 2000)
    assert.are.same({}, log)
    h:finish()
    assert.are.same({"window 3", "periodic"}, log)     -- after the windows fired, once
    assert.are.equal(math.maxinteger, h:current_watermark())
  end)

  it("wmrun: a generator that prints in on_periodic_emit prints once at the end of a file", function()
    -- an interval of an hour: no periodic emission happens while the job runs
    local job = [[
      local wm = require("wm")
      local env = wm.env{watermark_interval = "1h"}
      env:from_elements({id = "a", vc = 1, ts = 1000}, {id = "a", vc = 2, ts = 2000})
        :assign_timestamps_and_watermarks(wm.watermarks.for_generator(function()
          return {
            on_event = function() end,
            on_periodic_emit = function(self, out) print("periodic emit") end,
          }
        end):with_timestamp_field("ts"))
        :key_by("id"):window(wm.windows.tumbling(5000)):sum("vc"):print()
      env:execute()
    ]]
    local out, err, code = helper.run_job(job)
    assert.are.equal(0, code, err)
    assert.are.equal('{"id":"a","ts":1000,"vc":3}\nperiodic emit\n', out)
  end)

  it("forwards only watermarks greater than the last one", function()
    local h = gen_harness(function()
      return {on_event = function(_self, r, _ts, out) out:emit_watermark(r.wm) end}
    end)
    h:push({id = "a", vc = 1, wm = 100}, 1)
    h:push({id = "a", vc = 1, wm = 50}, 1)
    assert.are.equal(100, h:current_watermark())
    h:push({id = "a", vc = 1, wm = 100}, 1)
    h:push({id = "a", vc = 1, wm = 101}, 1)
    assert.are.equal(101, h:current_watermark())
  end)

  it("makes one generator per assigner, and mark_idle/mark_active change the status", function()
    local made = 0
    local h = T.harness(function(input)
      return input:assign_timestamps_and_watermarks(wm.watermarks.for_generator(function(ctx)
        made = made + 1
        assert(ctx.subtask == 1 and ctx.parallelism == 1)
        return {on_event = function(_self, r, _ts, out)
          if r.idle then out:mark_idle() else out:mark_active() end
        end}
      end))
    end)
    assert.are.equal(1, made)
    h:push({idle = true}, 1)
    assert.is_true(h:metrics()["timestamps/watermarks"].idle)
    h:push({idle = false}, 2)
    assert.is_false(h:metrics()["timestamps/watermarks"].idle)
  end)

  it("rejects a factory that returns no generator, naming it and the line", function()
    local ok, err = pcall(gen_harness, function() return 42 end)
    assert.is_false(ok)
    assert.matches("generator factory %(for_generator at .*watermarks_spec.lua:%d+%) must return a table", err)
    assert.matches("got a number", err)
    ok, err = pcall(gen_harness, function() return {on_event = 1} end)
    assert.is_false(ok)
    assert.matches("on_event is not a function", err)
    ok, err = pcall(gen_harness, function() return {} end)
    assert.is_false(ok)
    assert.matches("neither on_event nor on_periodic_emit", err)
    ok, err = pcall(gen_harness, function() error("boom") end)
    assert.is_false(ok)
    assert.matches("factory .* failed: .*boom", err)
  end)

  it("reads a generator's methods through its metatable, and reports an __index that raises "
    .. "(it leaked the graph being built, issue 13.17)", function()
    local Gen = {}
    Gen.__index = Gen
    function Gen.on_event(_self, _r, ts, out) out:emit_watermark(ts) end
    local h = gen_harness(function() return setmetatable({}, Gen) end)
    h:push({id = "a", vc = 1}, 1000)
    assert.are.equal(1000, h:current_watermark())
    local boom = setmetatable({}, {__tostring = function() return "the generator's own error" end})
    local ok, err = pcall(gen_harness, function()
      return setmetatable({}, {__index = function() error(boom) end})
    end)
    assert.is_false(ok)
    assert.matches("the watermark generator of for_generator at [^\n]*watermarks_spec.lua:%d+: reading its "
      .. "on_event and on_periodic_emit failed: [^\n]*watermarks_spec.lua:%d+: the generator's own error", err)
  end)

  it("rejects a non-integer watermark with the generator's line", function()
    local h = gen_harness(function()
      return {on_event = function(_self, _r, ts, out) out:emit_watermark(ts + 0.5) end}
    end)
    local ok, err = pcall(h.push, h, {id = "a", vc = 1}, 1)
    assert.is_false(ok)
    assert.matches("watermarks_spec.lua:%d+: bad argument #1 to 'emit_watermark' "
      .. "%(an integer number of ms expected, got 1.5%)", err)
    assert.matches("in operator 'timestamps/watermarks", err)
  end)

  it("rejects a negative or zero idleness and a bad factory argument", function()
    assert.has_error(function() wm.watermarks.monotonous():with_idleness(-1) end,
                     "with_idleness: the timeout must be positive, got -1")
    assert.has_error(function() wm.watermarks.monotonous():with_idleness("x") end)
    assert.has_error(function() wm.watermarks.for_generator({}) end)
  end)
end)

describe("wmrun observability", function()
  local a = helper.root .. "/examples/a_tumbling_in_order.lua"

  it("--trace-watermarks prints one line per generated watermark and per input advance", function()
    local out, err, code = helper.wmrun('--trace-watermarks "' .. a .. '"')
    assert.are.equal(0, code)
    assert.are.equal(helper.read(helper.root .. "/examples/expected/a_tumbling_in_order.expected"), out)
    assert.matches("%[watermark%] timestamps/watermarks %(.-%): generated: MIN %-> 1577843998999\n", err)
    assert.matches("%[watermark%] tumbling window reduce %(.-%): channel 1: MIN %-> 1577843998999\n", err)
    assert.matches("generated: %d+ %-> MAX\n", err)
    for line in err:gmatch("[^\n]+") do
      assert.matches("^%[watermark%] .-: [a-z0-9 ]+: ", line)
    end
  end)

  it("--metrics prints per-operator counters at the end", function()
    local _, err, code = helper.wmrun('--metrics "' .. a .. '"')
    assert.are.equal(0, code)
    assert.matches("operator%s+records in%s+records out%s+side out%s+watermark%s+late dropped%s+late to side%s+windows",
      err)
    assert.matches("tumbling window reduce[^\n]-%s+%d+%s+%d+%s+0%s+MAX%s+0%s+0%s+0\n", err)
  end)

  it("traces idle and active status changes", function()
    local job = [[
      local wm = require("wm")
      local env = wm.env{watermark_interval = 0}
      env:from_elements(1, 2)
        :assign_timestamps_and_watermarks(wm.watermarks.for_generator(function()
          return {on_event = function(self, r, ts, out)
            if r == 1 then out:mark_idle() else out:emit_watermark(5) end
          end}
        end):with_timestamp_assigner(function(r) return r end))
        :print()
      env:execute()
    ]]
    local _, err, code = helper.run_job(job, "--trace-watermarks")
    assert.are.equal(0, code, err)
    assert.matches("generated: idle %(watermark MIN%)\n.-channel 1: idle %(watermark MIN%)\n", err)
    assert.matches("generated: active %(watermark MIN%)\n", err)
    assert.matches("generated: MIN %-> 5\n", err)
  end)

  it("warns once when many records came and no watermark at all", function()
    local job = [[
      local wm = require("wm")
      local env = wm.env{watermark_interval = 0}
      local list = {}
      for i = 1, 20000 do list[i] = {id = "a", vc = 1, ts = i} end
      env:from_elements(list)
        :assign_timestamps_and_watermarks(wm.watermarks.no_watermarks():with_timestamp_field("ts"))
        :key_by("id"):window(wm.windows.tumbling(5000)):sum("vc")
        :filter(function() return false end):print()
      env:execute()
    ]]
    local _, err, code = helper.run_job(job)
    assert.are.equal(0, code, err)
    local _, n = err:gsub("warning", "")
    assert.are.equal(1, n)
    assert.matches("no watermark at all: event%-time windows and timers cannot fire; '.-' uses no_watermarks%(%)", err)
  end)

  describe("a bounded input read faster than the watermark interval", function()
    -- an interval of an hour: the clock asks for no periodic emission during the run, so the
    -- outcome does not depend on the machine's speed
    local function job(interval, windows)
      return ([[
        local wm = require("wm")
        local env = wm.env{watermark_interval = %s}
        local s = env:from_elements({id = "a", vc = 1, ts = 1000}, {id = "a", vc = 2, ts = 7000})
          :assign_timestamps_and_watermarks(
            wm.watermarks.bounded_out_of_orderness(0):with_timestamp_field("ts"))
        %s
        env:execute()
      ]]):format(interval, windows and 's:key_by("id"):window(wm.windows.tumbling(5000)):sum("vc"):print()'
                                   or "s:print()")
    end

    it("warns once, naming the assigner, and suggests watermark_interval = 0 or arrival replay", function()
      local out, err, code = helper.run_job(job('"1h"', true))
      assert.are.equal(0, code, err)
      assert.are.equal('{"id":"a","ts":1000,"vc":1}\n{"id":"a","ts":7000,"vc":2}\n', out)
      local _, n = err:gsub("wmrun: warning:", "")
      assert.are.equal(1, n, err)
      assert.matches("wmrun: warning: the input of 'timestamps/watermarks (", err, 1, true)
      assert.matches("ended after 0 periodic watermark emissions (watermark_interval 3600000 ms), "
                     .. "so event-time windows fired only at the end of input; set watermark_interval = 0",
                     err, 1, true)
      assert.matches("arrival times", err, 1, true)
    end)

    it("does not warn with watermark_interval = 0, nor without windows or timers to fire", function()
      local _, err, code = helper.run_job(job(0, true))
      assert.are.equal(0, code, err)
      assert.are.equal("", err)
      _, err, code = helper.run_job(job('"1h"', false))
      assert.are.equal(0, code, err)
      assert.are.equal("", err)
    end)
  end)

  -- defect 12.5: the warning is about event-time parts only; 20000 records are past the
  -- warning's threshold of 10000, so no clock is involved
  local function many(body)
    return [[
      local wm = require("wm")
      local env = wm.env{watermark_interval = 0}
      local list = {}
      for i = 1, 20000 do list[i] = {id = "a", vc = 1, ts = i} end
      local s = env:from_elements(list)
      ]] .. body .. [[:filter(function() return false end):print()
      env:execute()
    ]]
  end

  it("does not warn for a job without event-time parts (processing time, counts, rolling)", function()
    for _, body in ipairs({
      's:key_by("id"):window(wm.windows.tumbling_processing("1h")):sum("vc")',
      's:key_by("id"):window(wm.windows.sliding_processing("1h", "30m")):count()',
      's:key_by("id"):window(wm.windows.count(10)):sum("vc")',
      's:key_by("id"):sum("vc")',
      [[s:key_by("id"):process{process_element = function(r, ctx)
          ctx.timer_service:register_processing_time_timer(ctx.timer_service:current_processing_time() + 3600000)
        end, on_timer = function() end}]],
    }) do
      local _, err, code = helper.run_job(many(body))
      assert.are.equal(0, code, err)
      assert.are.equal("", err, body)
    end
  end)

  it("warns for event-time parts: an event-time timer, an event-time trigger", function()
    for _, body in ipairs({
      [[s:key_by("id"):process{process_element = function(r, ctx)
          ctx.timer_service:register_event_time_timer(r.ts + 10)
        end, on_timer = function() end}]],
      's:key_by("id"):window(wm.windows.global()):trigger(wm.triggers.continuous_event_time(1000)):sum("vc")',
    }) do
      local _, err, code = helper.run_job(many(body))
      assert.are.equal(0, code, err)
      assert.matches("no watermark at all: event%-time windows and timers cannot fire; the job has no "
        .. "watermark strategy", err)
    end
  end)

  it("does not warn when watermarks flow", function()
    local _, err = helper.wmrun('"' .. a .. '"')
    assert.are.equal("", err)
  end)
end)

describe("ingestion time", function()
  it("stamps records at the source with the clock and makes watermarks follow it", function()
    local job = [[
      local wm = require("wm")
      local env = wm.env{time = "ingestion", watermark_interval = 0}
      local t0 = os.time() * 1000 - 60000
      env:from_elements("x", "y")
        :key_by(function() return 1 end)
        :process(function(r, ctx, out)
          local w = ctx.timer_service:current_watermark()
          out(r .. " " .. tostring(ctx.timestamp ~= nil and ctx.timestamp > t0) .. " " ..
              tostring(r == "x" or (w >= ctx.timestamp - 1000 and w < ctx.timestamp)))
        end)
        :print()
      env:execute()
    ]]
    local out, err, code = helper.run_job(job)
    assert.are.equal(0, code, err)
    assert.are.equal("x true true\ny true true\n", out)
  end)
end)

-- Flink's NO_TIMESTAMP (Long.MIN_VALUE; here math.mininteger): a record may carry it, the
-- generator sees it, and only an operator that needs the event time fails on it
-- (docs/watermarks.md, "Valid timestamps"; ../shared/design/semantics.md section 1).
describe("no timestamp (math.mininteger)", function()
  -- the common Flink pattern: marker records carry only a watermark, and are filtered out
  -- before the window
  local function markers_job(filter)
    local env = wm.env{watermark_interval = 0}
    local seen = {}
    local s = env:from_elements({
      {id = "a", t = 1000, vc = 1}, {id = "a", t = 2000, vc = 2},
      {marker = true, wm = 4999},                              -- fires [0, 5000)
      {id = "a", t = 6000, vc = 4},
      {marker = true, wm = 9999},
    }):assign_timestamps_and_watermarks(wm.watermarks.for_generator(function()
      return {
        on_event = function(_self, r, ts, out)
          seen[#seen + 1] = ts
          if r.marker then out:emit_watermark(r.wm) end
        end,
      }
    end):with_timestamp_assigner(function(r) return r.marker and math.mininteger or r.t end))
    if filter then s = s:filter(function(r) return not r.marker end) end
    local fired = {}
    s:key_by("id"):window(wm.windows.tumbling(5000)):sum("vc")
      :map(function(r) fired[#fired + 1] = r.vc; return r end):collect()
    return env, seen, fired
  end

  it("flows on from the assigner, the generator's on_event sees it, the window after a filter works", function()
    local env, seen, fired = markers_job(true)
    env:execute()
    assert.are.same({1000, 2000, math.mininteger, 6000, math.mininteger}, seen)
    assert.are.same({3, 4}, fired)
  end)

  it("an event-time window that gets such a record fails naming the record and the operator", function()
    local env = markers_job(false)
    local ok, e = pcall(env.execute, env)
    assert.is_false(ok)
    e = tostring(e)
    assert.matches("record has no timestamp (math.mininteger); did you forget "
                   .. "assign_timestamps_and_watermarks?", e, 1, true)
    assert.matches('{"marker":true,"wm":4999}', e, 1, true)
    assert.matches("in operator 'tumbling window", e, 1, true)
  end)

  it("an event-time timer at math.mininteger fails naming the record and the operator", function()
    local env = wm.env{watermark_interval = 0}
    env:from_elements({{id = "a", t = 1}})
      :key_by("id")
      :process{
        process_element = function(_r, ctx)
          ctx.timer_service:register_event_time_timer(math.mininteger)
        end,
        on_timer = function() end,
      }
      :collect()
    local ok, e = pcall(env.execute, env)
    assert.is_false(ok)
    e = tostring(e)
    assert.matches("register_event_time_timer", e, 1, true)
    assert.matches("record has no timestamp (math.mininteger); did you forget "
                   .. "assign_timestamps_and_watermarks?", e, 1, true)
    assert.matches('{"id":"a","t":1}', e, 1, true)
    assert.matches("in operator '", e, 1, true)
  end)

  it("math.maxinteger from an assigner stays an error", function()
    local env = wm.env{watermark_interval = 0}
    env:from_elements({{t = 1}}):assign_timestamps_and_watermarks(
      wm.watermarks.monotonous():with_timestamp_assigner(function() return math.maxinteger end)):collect()
    local ok, e = pcall(env.execute, env)
    assert.is_false(ok)
    assert.matches("that value is the end of input", tostring(e), 1, true)
  end)
end)

describe("processing time in generators: out:current_processing_time()", function()
  -- The harness's virtual clock starts at 1000; periodic emissions every 100 ms (1100, 1200).
  it("is the harness's virtual clock in on_event and on_periodic_emit", function()
    local seen = {}
    local h = gen_harness(function()
      return {
        on_event = function(_, _, _, out) seen[#seen + 1] = "event " .. out:current_processing_time() end,
        on_periodic_emit = function(_, out) seen[#seen + 1] = "periodic " .. out:current_processing_time() end,
      }
    end, {watermark_interval = 100, processing_time = 1000})
    h:push({id = "a", vc = 1}, 5)
    h:advance_processing_time(250)
    h:push({id = "a", vc = 1}, 6)
    assert.are.same({"event 1000", "periodic 1100", "periodic 1200", "event 1250"}, seen)
  end)

  -- A hand-written wall-clock-assisted generator: after 300 ms without a record the watermark
  -- follows the clock, now - 300. Clock from 0, interval 100; a record ts 50 at 0.
  --   100: quiet 100 -> max - 1 = 49;  200: 49;  300: quiet 300 -> 300 - 300 = 0, but 49 is
  --   higher: 49;  400: 100;  500: 200. A record ts 60 at 550: quiet again from 550 (600: 200,
  --   700: 200, 800: 800 - 550 = 250 < 300: 200, 900: 900 - 300 = 600).
  it("lets a generator advance with the clock while its input is quiet", function()
    local wms = {}
    local h = gen_harness(function()
      return {max = math.mininteger, last = 0,
        on_event = function(self, _, ts, out)
          self.max, self.last = math.max(self.max, ts), out:current_processing_time()
        end,
        on_periodic_emit = function(self, out)
          local now = out:current_processing_time()
          local w = self.max - 1
          if now - self.last >= 300 and now - 300 > w then w = now - 300 end
          out:emit_watermark(w)
        end}
    end, {watermark_interval = 100, processing_time = 0})
    h:push({id = "a", vc = 1}, 50)
    for _ = 1, 5 do
      h:advance_processing_time(100)
      wms[#wms + 1] = h:current_watermark()
    end
    h:advance_processing_time(50)
    h:push({id = "a", vc = 1}, 60)
    for _ = 1, 4 do
      h:advance_processing_time(100)
      wms[#wms + 1] = h:current_watermark()
    end
    assert.are.same({49, 49, 49, 100, 200, 200, 200, 200, 600}, wms)
  end)

  it("is the wall clock in a live job", function()
    local dir = helper.tmpdir()
    local job = dir .. "/job.lua"
    local f = assert(io.open(job, "w"))
    f:write([[
local wm = require("wm")
local env = wm.env{watermark_interval = 0}
env:from_elements({id = "a", t = 1})
  :assign_timestamps_and_watermarks(wm.watermarks.for_generator(function()
    return {on_event = function(_, _, _, out) print("now", out:current_processing_time()) end}
  end):with_timestamp_field("t"))
  :filter(function() return false end):print()
env:execute()
]])
    f:close()
    local before = os.time() * 1000
    local out, err, code = helper.wmrun("'" .. job .. "'")
    os.execute("rm -rf '" .. dir .. "'")
    assert.are.equal("", err)
    assert.are.equal(0, code)
    local now = assert(tonumber(out:match("now%s+(%-?%d+)")))
    -- the wall clock in ms: not before the job started (to the second), not a day after
    assert.is_true(now >= before - 1000 and now < before + 86400000, tostring(now))
  end)
end)

describe("bounded_out_of_orderness(d):with_idle_advance(d2)", function()
  local function harness(strategy)
    return T.harness(function(input)
      return input:assign_timestamps_and_watermarks(strategy):key_by("id"):window(wm.windows.tumbling(1000)):count()
    end, {watermark_interval = 200, processing_time = 10000})
  end

  -- Clock from 10000, emissions every 200 ms; bound 100, quiet time 500. A record ts 10050 at
  -- 10000: 10200: 10050 - 101 = 9949 (quiet 200); 10400: 9949 (quiet 400); 10600: quiet 600
  -- >= 500: 10600 - 501 = 10099; 10800: 10299; ... 11600: 11099 fires [10000, 11000).
  it("advances to now - d2 - 1 once no record came for d2", function()
    local h = harness(wm.watermarks.bounded_out_of_orderness(100):with_idle_advance(500))
    h:push({id = "a"}, 10050)
    local wms = {}
    for _ = 1, 4 do
      h:advance_processing_time(200)
      wms[#wms + 1] = h:current_watermark()
    end
    assert.are.same({9949, 9949, 10099, 10299}, wms)
    assert.are.same({}, h:output())
    h:advance_processing_time(800)
    assert.are.equal(11099, h:current_watermark())
    assert.are.same(1, #h:output())
  end)

  -- Without records nothing is emitted; with records flowing (one every 200 ms) it is the
  -- bounded strategy: ts 10000 at 10000, 10200 at 10200 (emission due at 10200 first: 9899).
  it("is the bounded strategy while records flow, and emits nothing before the first", function()
    local h = harness(wm.watermarks.bounded_out_of_orderness(100):with_idle_advance(500))
    h:advance_processing_time(2000)
    assert.are.equal(math.mininteger, h:current_watermark())
    h:push({id = "a"}, 12000)
    h:advance_processing_time(200)
    assert.are.equal(11899, h:current_watermark())
    h:push({id = "a"}, 12200)
    h:advance_processing_time(200)
    assert.are.equal(12099, h:current_watermark())
  end)

  it("checkpoints its state: a restored harness gives the same watermarks", function()
    local s = wm.watermarks.bounded_out_of_orderness(100):with_idle_advance(500)
    local h = harness(s)
    h:push({id = "a"}, 10050)
    local snap = h:snapshot()
    local r = harness(s)
    r:restore(snap)
    r:advance_processing_time(600) -- 10600: quiet 600 since the record (restored: last = 10000)
    assert.are.equal(10099, r:current_watermark())
  end)

  it("refuses what it cannot assist, naming it", function()
    assert.has_error(function() wm.watermarks.no_watermarks():with_idle_advance(500) end,
      "with_idle_advance: only for bounded_out_of_orderness(d) or monotonous(), got a strategy of kind 'none'")
    assert.has_error(function() wm.watermarks.monotonous():with_idle_advance(0) end,
      "with_idle_advance: the quiet time must be positive, got 0")
  end)
end)
