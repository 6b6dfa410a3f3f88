-- Keyed process functions with timers (semantics.md §8) and rolling aggregations,
-- driven by wm.testing (no sleeps: processing time is virtual).
local wm = require("wm")
local T = wm.testing

describe("keyed process functions", function()
  it("fires event-time timers when the watermark reaches them, coalesced per key and time", function()
    local h = T.harness(function(input)
      return input:key_by("k"):process{
        process_element = function(r, ctx, _out)
          ctx.timer_service:register_event_time_timer(r.at)
          ctx.timer_service:register_event_time_timer(r.at)   -- same key and time: one timer
        end,
        on_timer = function(t, ctx, out)
          out({key = ctx.key, t = t, domain = ctx.time_domain, ts = ctx.timestamp})
        end,
      }
    end)
    h:push({k = "a", at = 5000}, 1000)
    h:push({k = "b", at = 5000}, 1000)
    h:push({k = "a", at = 3000}, 1000)
    h:watermark(2999)
    assert.are.same({}, h:output())
    h:watermark(3000)
    assert.are.same({{key = "a", t = 3000, domain = "event_time", ts = 3000}}, h:output())
    h:watermark(6000)
    -- equal times fire in registration order; each key once
    assert.are.same({{key = "a", t = 5000, domain = "event_time", ts = 5000},
                     {key = "b", t = 5000, domain = "event_time", ts = 5000}}, h:output())
  end)

  it("deletes timers, and out() from on_timer carries the timer's time", function()
    local h = T.harness(function(input)
      return input:key_by("k"):process({
        process_element = function(r, ctx, _out)
          if r.cancel then ctx.timer_service:delete_event_time_timer(r.cancel)
          else ctx.timer_service:register_event_time_timer(r.at) end
        end,
        on_timer = function(t, _ctx, out) out(t) end,
      })
    end)
    h:push({k = 1, at = 100}, 1)
    h:push({k = 1, at = 200}, 1)
    h:push({k = 2, at = 100}, 1)
    h:push({k = 1, cancel = 100}, 1)
    h:finish()
    assert.are.same({{value = 100, timestamp = 100}, {value = 200, timestamp = 200}},
                    h:output_records())
  end)

  it("fires processing-time timers from the virtual clock, in time order", function()
    local h = T.harness(function(input)
      return input:key_by("k"):process(function(r, ctx, _out)
        local now = ctx.timer_service:current_processing_time()
        ctx.timer_service:register_processing_time_timer(now + r.after)
      end, function(t, ctx, out)
        out(ctx.key .. "@" .. t .. "/" .. ctx.timer_service:current_processing_time())
      end)
    end, {processing_time = 1000})
    h:push({k = "a", after = 300})
    h:push({k = "b", after = 100})
    h:push({k = "c", after = 100})
    h:advance_processing_time(99)
    assert.are.same({}, h:output())
    h:advance_processing_time(200)
    assert.are.same({"b@1100/1100", "c@1100/1100"}, h:output())
    h:advance_processing_time(1)
    assert.are.same({"a@1300/1300"}, h:output())
    assert.are.equal(1300, h:processing_time())
  end)

  it("does not fire processing-time timers on watermarks, nor event-time ones on the clock", function()
    local h = T.harness(function(input)
      return input:key_by("k"):process{
        process_element = function(_r, ctx)
          ctx.timer_service:register_processing_time_timer(50)
          ctx.timer_service:register_event_time_timer(50)
        end,
        on_timer = function(_t, ctx, out) out(ctx.time_domain) end,
      }
    end)
    h:push({k = 1}, 0)
    h:watermark(100)
    assert.are.same({"event_time"}, h:output())
    h:advance_processing_time(100)
    assert.are.same({"processing_time"}, h:output())
  end)

  it("keeps state per key in ctx.state and emits with the record's timestamp", function()
    local h = T.harness(function(input)
      return input:key_by(function(r) return r.id end):process(function(_r, ctx, out)
        ctx.state.n = (ctx.state.n or 0) + 1
        out({id = ctx.key, n = ctx.state.n, wm = ctx.timer_service:current_watermark()})
      end)
    end)
    h:push({id = "a"}, 10)
    h:push({id = "b"}, 11)
    h:watermark(20)
    h:push({id = "a"}, 30)
    local recs = h:output_records()
    assert.are.same({id = "a", n = 1, wm = math.mininteger}, recs[1].value)
    assert.are.same({id = "b", n = 1, wm = math.mininteger}, recs[2].value)
    assert.are.same({id = "a", n = 2, wm = 20}, recs[3].value)
    assert.are.equal(30, recs[3].timestamp)
    assert.are.equal(2, h:metrics()["keyed process"].keys)
  end)

  it("sends ctx:output(tag, v) to a side output", function()
    local h = T.harness(function(input)
      return input:key_by("k"):process(function(r, ctx, out)
        if r.v < 0 then ctx:output("negative", r) else out(r) end
      end)
    end, {side_outputs = {"negative"}})
    h:push({k = 1, v = 1}, 1)
    h:push({k = 1, v = -1}, 2)
    assert.are.same({{k = 1, v = 1}}, h:output())
    assert.are.same({{k = 1, v = -1}}, h:side_output("negative"))
  end)

  it("rejects a timer at a non-integer time, naming the function and the line", function()
    local h = T.harness(function(input)
      return input:key_by("k"):process{
        process_element = function(_r, ctx) ctx.timer_service:register_event_time_timer(1.5) end,
        on_timer = function() end,
      }
    end)
    local ok, err = pcall(h.push, h, {k = 1}, 1)
    assert.is_false(ok)
    assert.matches("keyed_spec.lua:%d+: bad argument #1 to 'register_event_time_timer' "
      .. "%(an integer number of ms expected, got 1.5%)", err, 1, false)
  end)

  it("rejects a timer time that is not a number (no string coercion), lauxlib style", function()
    local h = T.harness(function(input)
      return input:key_by("k"):process{
        process_element = function(_r, ctx) ctx.timer_service:register_processing_time_timer("10") end,
        on_timer = function() end,
      }
    end)
    local ok, err = pcall(h.push, h, {k = 1}, 1)
    assert.is_false(ok)
    assert.matches("bad argument #1 to 'register_processing_time_timer' "
      .. "(integer number of ms expected, got string)", err, 1, true)
  end)

  it("rejects out() and ctx:output(tag) without a record instead of emitting nil", function()
    local h = T.harness(function(input)
      return input:key_by("k"):process(function(_r, _ctx, out) out() end)
    end)
    local ok, err = pcall(h.push, h, {k = 1}, 1)
    assert.is_false(ok)
    assert.matches("keyed_spec.lua:%d+: bad argument #1 to 'out' %(record expected, got no value%)", err)
    h = T.harness(function(input)
      return input:key_by("k"):process(function(_r, ctx, _out) ctx:output("late", nil) end)
    end, {side_outputs = {"late"}})
    ok, err = pcall(h.push, h, {k = 1}, 1)
    assert.is_false(ok)
    assert.matches("bad argument #2 to 'output' (record expected, got nil)", err, 1, true)
  end)

  it("rejects timers without on_timer", function()
    local h = T.harness(function(input)
      return input:key_by("k"):process(function(_r, ctx) ctx.timer_service:register_event_time_timer(1) end)
    end)
    local ok, err = pcall(h.push, h, {k = 1}, 1)
    assert.is_false(ok)
    assert.matches("no on_timer", err)
  end)

  it("checks process's arguments", function()
    local env = wm.env()
    local k = env:from_elements(1):key_by(function(x) return x end)
    assert.has_error(function() k:process(42) end)
    assert.has_error(function() k:process{process_element = 1} end)
    assert.has_error(function() k:process{process_element = print, on_tick = print} end)
  end)
end)

describe("rolling keyed aggregations", function()
  local function run(build, records)
    local h = T.harness(build)
    for i, r in ipairs(records) do h:push(r, i) end
    return h:output()
  end
  local data = {{k = "a", v = 3, n = 1}, {k = "b", v = 1, n = 2}, {k = "a", v = 5, n = 3},
                {k = "a", v = 2, n = 4}}

  it("sum keeps the first record with the field replaced", function()
    assert.are.same({{k = "a", v = 3, n = 1}, {k = "b", v = 1, n = 2}, {k = "a", v = 8, n = 1},
                     {k = "a", v = 10, n = 1}},
                    run(function(i) return i:key_by("k"):sum("v") end, data))
  end)

  it("min/max replace the field; min_by/max_by keep the whole record", function()
    assert.are.same({{k = "a", v = 3, n = 1}, {k = "b", v = 1, n = 2}, {k = "a", v = 5, n = 1},
                     {k = "a", v = 5, n = 1}},
                    run(function(i) return i:key_by("k"):max("v") end, data))
    assert.are.same({{k = "a", v = 3, n = 1}, {k = "b", v = 1, n = 2}, {k = "a", v = 3, n = 1},
                     {k = "a", v = 2, n = 4}},
                    run(function(i) return i:key_by("k"):min_by("v") end, data))
  end)

  it("reduce folds every record of the key", function()
    assert.are.same({{k = "a", v = 3, n = 1}, {k = "b", v = 1, n = 2}, {k = "a", v = 8, n = 1},
                     {k = "a", v = 10, n = 1}},
                    run(function(i)
                      return i:key_by("k"):reduce(function(a, b) return {k = a.k, v = a.v + b.v, n = a.n} end)
                    end, data))
  end)
end)

describe("composite keys from a key function", function()
  it("a key function giving a list of several values keys by all of them (no crash)", function()
    -- keys {1, "x"}, {1, "y"}, {1, "x"}: the third record folds into the first's key
    local h = require("wm").testing.harness(function(i)
      return i:key_by(function(r) return {r.a, r.b} end)
        :reduce(function(acc, r) return {a = r.a, b = r.b, v = acc.v + r.v} end)
    end)
    for i, r in ipairs({{a = 1, b = "x", v = 1}, {a = 1, b = "y", v = 2}, {a = 1, b = "x", v = 3}}) do
      h:push(r, i)
    end
    assert.are.same({{a = 1, b = "x", v = 1}, {a = 1, b = "y", v = 2}, {a = 1, b = "x", v = 4}}, h:output())
  end)
end)
