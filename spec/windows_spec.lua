-- The windowing API (wm.windows, wm.triggers, wm.evictors, WindowedStream): every public
-- name, run in-process through the real core with deterministic watermarks
-- (bounded_out_of_orderness(0) after every record: the watermark is the latest ts - 1).
local wm = require("wm")
local h = require("helper")

local function fmt(list)
  local r = {}
  for i, v in ipairs(list) do r[i] = wm.core.format(v) end
  return r
end

-- Runs records {k = key, t = ms, v = number} through build(keyed) and returns the result
-- (and the side output `late` when asked) as printed lines.
local function run(build, recs, opts)
  opts = opts or {}
  local env = wm.env{watermark_interval = 0}
  local s = env:from_elements(recs)
  if not opts.no_time then
    s = s:assign_timestamps_and_watermarks(
      wm.watermarks.bounded_out_of_orderness(opts.delay or 0):with_timestamp_field("t"))
  end
  local out = build(s:key_by("k"))
  local c = out:collect()
  local side = opts.side and out:get_side_output(opts.side):collect()
  env:execute()
  return fmt(c), side and fmt(side)
end

local function recs(...)
  local t = {}
  for i, ts in ipairs({...}) do t[i] = {k = "a", t = ts, v = i} end
  return t
end

local function errmsg(f)
  local ok, e = pcall(f)
  assert.is_false(ok)
  return tostring(e)
end

describe("wm.windows", function()
  it("tumbling with an offset and negative timestamps", function()
    local out = run(function(k) return k:window(wm.windows.tumbling(1000, 300)):count() end, recs(-800, -700, 299, 300))
    assert.are.same({'{"count":1,"key":"a","start":-1700,"stop":-700}',
                     '{"count":2,"key":"a","start":-700,"stop":300}',
                     '{"count":1,"key":"a","start":300,"stop":1300}'}, out)
  end)

  it("sliding windows whose slide does not divide the size", function()
    local out = run(function(k) return k:window(wm.windows.sliding(5000, 2000)):count() end, recs(4500))
    -- starts 4000, 2000, 0 (every start > 4500 - 5000)
    assert.are.same({'{"count":1,"key":"a","start":0,"stop":5000}',
                     '{"count":1,"key":"a","start":2000,"stop":7000}',
                     '{"count":1,"key":"a","start":4000,"stop":9000}'}, out)
  end)

  it("sliding with an offset", function()
    local out = run(function(k) return k:window(wm.windows.sliding("4s", "2s", "1s")):count() end, recs(1000))
    assert.are.same({'{"count":1,"key":"a","start":-1000,"stop":3000}',
                     '{"count":1,"key":"a","start":1000,"stop":5000}'}, out)
  end)

  it("session windows merge when they touch", function()
    local out = run(function(k) return k:window(wm.windows.session("5s")):sum("v") end, recs(2000, 7000, 14000))
    assert.are.same({'{"k":"a","t":2000,"v":3}', '{"k":"a","t":14000,"v":3}'}, out)
  end)

  it("session with a dynamic gap", function()
    local out = run(function(k)
      return k:window(wm.windows.session(function(r) return r.v * 1000 end)):count()
    end, recs(0, 1500, 3400))
    -- [0,1000) alone; [1500,3500) and [3400,6400) merge
    assert.are.same({'{"count":1,"key":"a","start":0,"stop":1000}',
                     '{"count":2,"key":"a","start":1500,"stop":6400}'}, out)
  end)

  it("a dynamic gap that is not a positive integer stops the job naming record and line", function()
    local e = errmsg(function()
      run(function(k) return k:window(wm.windows.session(function(r) return r.v - 2 end)):count() end, recs(1, 2))
    end)
    assert.matches("session gap function returned %-1", e)
    assert.matches('on record {"k":"a","t":1,"v":1}', e, 1, true)
    assert.matches("windows_spec.lua:%d+", e)
    e = errmsg(function()
      run(function(k) return k:window(wm.windows.session(function() return 1.5 end)):count() end, recs(1))
    end)
    assert.matches("returned 1.5", e, 1, true)
  end)

  it("global windows never fire by default, and report MIN/MAX", function()
    assert.are.same({}, run(function(k) return k:window(wm.windows.global()):count() end, recs(1, 2)))
    local out = run(function(k)
      return k:window(wm.windows.global()):trigger(wm.triggers.end_of_stream())
        :process(function(key, ctx, rs, o)
          o({key, #rs, ctx.window.start, ctx.window.stop, ctx.window.max_timestamp})
        end)
    end, recs(1, 2), {no_time = true})
    assert.are.same({'["a",2,' .. math.mininteger .. ',' .. math.maxinteger .. ',' .. math.maxinteger .. ']'}, out)
  end)

  it("count windows, with and without slide", function()
    local r = recs(1, 2, 3, 4, 5, 6, 7)
    assert.are.same({'{"k":"a","t":1,"v":6}', '{"k":"a","t":4,"v":15}'},
      run(function(k) return k:window(wm.windows.count(3)):sum("v") end, r))
    assert.are.same({'{"k":"a","t":1,"v":3}', '{"k":"a","t":2,"v":9}', '{"k":"a","t":4,"v":15}'},
      run(function(k) return k:window(wm.windows.count(3, 2)):sum("v") end, r))
    assert.are.same({'{"k":"a","t":1,"v":3}', '{"k":"a","t":3,"v":7}', '{"k":"a","t":5,"v":11}'},
      run(function(k) return k:count_window(2):sum("v") end, r))
  end)

  it("processing-time windows flush at the end of the input", function()
    local out = run(function(k) return k:window(wm.windows.tumbling_processing("1h")):sum("v") end,
      recs(1, 2, 3), {no_time = true})
    assert.are.same({'{"k":"a","t":1,"v":6}'}, out)
    assert.are.same({'{"count":3,"key":"a"}'}, (function()
      local o = run(function(k) return k:window(wm.windows.session_processing("1h")):count() end,
        recs(1, 2, 3), {no_time = true})
      return {(o[1]:gsub(',"start":%d+,"stop":%d+', ""))}
    end)())
    assert.are.equal(1, #run(function(k) return k:window(wm.windows.sliding_processing("1h", "1h")):count() end,
      recs(1), {no_time = true}))
  end)

  it("refuses bad parameters naming the call and the line", function()
    local line = debug.getinfo(1, "l").currentline
    local e = errmsg(function() wm.windows.tumbling(0) end)
    assert.matches("tumbling: size must be positive", e)
    assert.matches("windows_spec.lua:" .. (line + 1), e, 1, true)
    assert.matches("slide must be positive", errmsg(function() wm.windows.sliding("5s", -1) end))
    assert.matches("larger than the size", errmsg(function() wm.windows.sliding("1s", "2s") end))
    assert.matches("gap must be positive", errmsg(function() wm.windows.session(0) end))
    assert.matches("count: the window size", errmsg(function() wm.windows.count(0) end))
    assert.matches("count: the slide %(3%) is larger", errmsg(function() wm.windows.count(2, 3) end))
    assert.matches("tumbling_processing: size must be positive",
      errmsg(function() wm.windows.tumbling_processing(-5) end))
    assert.matches("bad duration", errmsg(function() wm.windows.tumbling("5 parsecs") end))
  end)
end)

describe("lateness", function()
  it("late firings accumulate and late records go to the side output", function()
    local out, side = run(function(k)
      return k:window(wm.windows.tumbling(5000)):allowed_lateness("4s"):side_output_late_data("late"):sum("v")
    end, recs(1000, 8000, 2000, 9000, 3000), {side = "late"})
    assert.are.same({'{"k":"a","t":1000,"v":1}', '{"k":"a","t":1000,"v":4}', '{"k":"a","t":8000,"v":6}'}, out)
    assert.are.same({'{"k":"a","t":3000,"v":5}'}, side)
  end)

  it("lateness larger than the window, on sliding windows", function()
    local out = run(function(k)
      return k:window(wm.windows.sliding(2000, 1000)):allowed_lateness(10000):count()
    end, recs(500, 5000, 600))
    -- the late record re-fires both its windows, in assignment order (latest start first)
    assert.are.same({'{"count":1,"key":"a","start":-1000,"stop":1000}',
                     '{"count":1,"key":"a","start":0,"stop":2000}',
                     '{"count":2,"key":"a","start":0,"stop":2000}',
                     '{"count":2,"key":"a","start":-1000,"stop":1000}',
                     '{"count":1,"key":"a","start":4000,"stop":6000}',
                     '{"count":1,"key":"a","start":5000,"stop":7000}'}, out)
  end)

  it("max_ts + lateness saturates instead of overflowing", function()
    -- 9223372036854773990 is in the last complete window, [...774000, ...775000)
    local out = run(function(k)
      return k:window(wm.windows.tumbling(1000)):allowed_lateness(math.maxinteger):count()
    end, recs(500, 9223372036854773990, 600))
    assert.are.same(3, #out)
    assert.are.equal('{"count":2,"key":"a","start":0,"stop":1000}', out[2])
  end)

  describe("valid timestamps (docs/windows.md)", function()
    -- worked out by hand: math.mininteger is -9223372036854775808, so the first window of
    -- 1000 ms that starts at or after it starts at -9223372036854775000; sliding 10 s / 5 s
    -- needs a record's earliest window (10 s back) to start there or later
    local function err_of(build, list)
      local ok, e = pcall(run, build, list)
      assert.is_false(ok, "no error")
      return tostring(e)
    end

    it("sliding 10 s / 5 s: math.mininteger + 1 is an error naming the record, not a silent drop", function()
      local e = err_of(function(k) return k:window(wm.windows.sliding(10000, 5000)):count() end,
                       recs(math.mininteger + 1))
      assert.matches("record timestamp -9223372036854775807 is outside the range of these windows, "
                     .. "-9223372036854770000 to 9223372036854769999", e, 1, true)
      assert.matches('{"k":"a","t":-9223372036854775807,"v":1}', e, 1, true)
      assert.matches("in operator 'sliding window", e, 1, true)
    end)

    it("tumbling: the first complete window holds its start; one ms earlier is an error, not a clamped window",
        function()
      local out = run(function(k) return k:window(wm.windows.tumbling(1000)):count() end,
                      recs(-9223372036854775000))
      assert.are.same({'{"count":1,"key":"a","start":-9223372036854775000,"stop":-9223372036854774000}'}, out)
      local e = err_of(function(k) return k:window(wm.windows.tumbling(1000)):count() end,
                       recs(-9223372036854775001))
      assert.matches("outside the range of these windows, -9223372036854775000 to 9223372036854774999", e, 1, true)
      -- and at the top: the last complete window, then one past it
      out = run(function(k) return k:window(wm.windows.tumbling(1000)):count() end,
                recs(9223372036854774999))
      assert.are.same({'{"count":1,"key":"a","start":9223372036854774000,"stop":9223372036854775000}'}, out)
      e = err_of(function(k) return k:window(wm.windows.tumbling(1000)):count() end,
                 recs(9223372036854775000))
      assert.matches("record timestamp 9223372036854775000 is outside", e, 1, true)
    end)

    it("sessions: a window that would stop past math.maxinteger is an error", function()
      local e = err_of(function(k) return k:window(wm.windows.session(1000)):count() end,
                       recs(math.maxinteger - 999))
      assert.matches("outside the range of these windows, -9223372036854775807 to 9223372036854774807", e, 1, true)
      e = err_of(function(k)
        return k:window(wm.windows.session(function() return 2000 end)):count()
      end, recs(math.maxinteger - 1999))
      assert.matches("to 9223372036854773807", e, 1, true)
    end)

    it("a field that gives math.mininteger reaches the window as 'no timestamp'; math.maxinteger stops the assigner",
        function()
      local e = err_of(function(k) return k:window(wm.windows.tumbling(1000)):count() end,
                       recs(math.mininteger))
      assert.matches("record has no timestamp (math.mininteger); did you forget assign_timestamps_and_watermarks?",
                     e, 1, true)
      assert.matches('{"k":"a","t":' .. math.mininteger, e, 1, true)
      assert.matches("in operator 'tumbling window", e, 1, true)
      local env = wm.env{watermark_interval = 0}
      env:from_elements({t = 1}):assign_timestamps_and_watermarks(
        wm.watermarks.monotonous():with_timestamp_assigner(function() return math.maxinteger end)):collect()
      local ok, e2 = pcall(env.execute, env)
      assert.is_false(ok)
      assert.matches("the timestamp assigner returned math.maxinteger in record {\"t\":1}: "
                     .. "that value is the end of input", tostring(e2), 1, true)
    end)
  end)

  it("merging windows with lateness: a late record revives a fired session", function()
    local out = run(function(k)
      return k:window(wm.windows.session(1000)):allowed_lateness(5000):count()
    end, recs(0, 3000, 900))
    assert.are.same({'{"count":1,"key":"a","start":0,"stop":1000}',
                     '{"count":2,"key":"a","start":0,"stop":1900}',
                     '{"count":1,"key":"a","start":3000,"stop":4000}'}, out)
  end)

  it("records too late without a side output are counted in late_records_dropped", function()
    local out, err, code = h.run_job([[
      local wm = require("wm")
      local env = wm.env{watermark_interval = 0}
      env:from_elements({k = "a", t = 5000}, {k = "a", t = 1000})
        :assign_timestamps_and_watermarks(wm.watermarks.bounded_out_of_orderness(0):with_timestamp_field("t"))
        :key_by("k"):window(wm.windows.session(100)):count():print()
      env:execute()
    ]], "--metrics")
    assert.are.equal(0, code)
    -- columns: records in, records out, side out, watermark, late dropped, late to side, open windows
    assert.matches("session window count %b() +2 +1 +0 +MAX +1 +0 ", err)
    assert.are.equal('{"count":1,"key":"a","start":5000,"stop":5100}\n', out)
  end)

  it("allowed_lateness on a processing-time window is refused", function()
    local env = wm.env{}
    local k = env:from_elements(1):key_by(function() return 1 end)
    local e = errmsg(function() k:window(wm.windows.tumbling_processing(10)):allowed_lateness(5) end)
    assert.matches("allowed_lateness: has no meaning on a processing%-time window", e)
    assert.matches("windows_spec.lua:%d+", e)
  end)
end)

describe("window functions", function()
  local function add(a, b) return {k = a.k, t = a.t, v = a.v + b.v} end

  it("keeps every table a map made that a window holds (the map's result slot is reused only when free)", function()
    -- a map's result table goes downstream in a slot of the map's own, overwritten by the next
    -- result unless someone kept it: a list window keeps them all, a reduce its first record
    local env = wm.env{watermark_interval = 0}
    local src = env:from_elements(recs(1, 2, 3, 11, 12))
      :map(function(r) return {k = r.k, t = r.t, v = r.v * 10} end)
      :assign_timestamps_and_watermarks(
        wm.watermarks.bounded_out_of_orderness(0):with_timestamp_field("t"))
      :key_by("k"):window(wm.windows.tumbling(10))
    local listed = src:process(function(_, ctx, rs, o)
      local vs = {}
      for i, r in ipairs(rs) do vs[i] = r.v end
      o(ctx.window.start .. ":" .. table.concat(vs, ","))
    end):collect()
    local firsts = src:reduce(function(a, b) return {k = a.k, t = a.t, v = a.v .. "+" .. b.v} end)
      :collect()
    env:execute()
    assert.are.same({"0:10,20,30", "10:40,50"}, listed)
    assert.are.same({'{"k":"a","t":1,"v":"10+20+30"}', '{"k":"a","t":11,"v":"40+50"}'}, fmt(firsts))
  end)

  it("reduce with a process function", function()
    local out = run(function(k)
      return k:window(wm.windows.tumbling(10)):reduce(add, function(key, ctx, rs, o)
        o({key = key, n = #rs, v = rs[1].v, stop = ctx.window.stop, wm = ctx.current_watermark})
      end)
    end, recs(1, 2, 12))
    assert.are.same({'{"key":"a","n":1,"stop":10,"v":3,"wm":11}',
      '{"key":"a","n":1,"stop":20,"v":3,"wm":' .. math.maxinteger .. '}'}, out)
  end)

  local avg = {
    create = function() return {s = 0, n = 0} end,
    add = function(a, r) return {s = a.s + r.v, n = a.n + 1} end,
    result = function(a) return a.s / a.n end,
    merge = function(a, b) return {s = a.s + b.s, n = a.n + b.n} end,
  }

  it("aggregate, with merge on sessions and a process function", function()
    assert.are.same({"1.5", "3.0"},
      run(function(k) return k:window(wm.windows.tumbling(10)):aggregate(avg) end, recs(1, 2, 12)))
    local out = run(function(k)
      return k:window(wm.windows.session(5)):aggregate(avg, function(key, ctx, rs, o)
        o({key, rs[1], ctx.window.start, ctx.window.stop})
      end)
    end, recs(1, 10, 5, 30), {delay = 10})
    -- [5, 10) bridges [1, 6) and [10, 15) before the watermark passes them
    assert.are.same({'["a",2.0,1,15]', '["a",4.0,30,35]'}, out)
  end)

  it("aggregate without merge on session windows is refused at build time", function()
    local k = wm.env{}:from_elements(1):key_by(function() return 1 end)
    local e = errmsg(function()
      k:window(wm.windows.session(5)):aggregate{create = avg.create, add = avg.add, result = avg.result}
    end)
    assert.matches("needs a 'merge' function", e)
    assert.matches("windows_spec.lua:%d+", e)
  end)

  it("process sees all records in arrival order and can write side outputs", function()
    local env = wm.env{watermark_interval = 0}
    local res = env:from_elements(recs(3, 1, 2))
      :assign_timestamps_and_watermarks(wm.watermarks.bounded_out_of_orderness(5):with_timestamp_field("t"))
      :key_by("k"):window(wm.windows.tumbling(10))
      :process(function(_key, ctx, rs, out)
        local ts = {}
        for i, r in ipairs(rs) do ts[i] = r.t end
        out(ts)
        ctx:output("meta", {key = ctx.key, max = ctx.window.max_timestamp})
        assert(type(ctx.current_processing_time) == "number")
      end)
    local main, meta = res:collect(), res:get_side_output("meta"):collect()
    env:execute()
    assert.are.same({"[3,1,2]"}, fmt(main))
    assert.are.same({'{"key":"a","max":9}'}, fmt(meta))
  end)

  it("built-ins on every window type", function()
    local r = recs(1000, 2000, 3000)
    r[2].v = 9
    local kinds = {
      {wm.windows.tumbling(5000)}, {wm.windows.sliding(10000, 5000)}, {wm.windows.session(3000)},
      {wm.windows.global(), wm.triggers.end_of_stream()}, {wm.windows.count(3)},
    }
    local want = {
      sum = '{"k":"a","t":1000,"v":13}', min = '{"k":"a","t":1000,"v":1}', max = '{"k":"a","t":1000,"v":9}',
      min_by = '{"k":"a","t":1000,"v":1}', max_by = '{"k":"a","t":2000,"v":9}',
    }
    for _, kd in ipairs(kinds) do
      for agg, expect in pairs(want) do
        local out = run(function(k)
          local w = k:window(kd[1])
          if kd[2] then w = w:trigger(kd[2]) end
          return w[agg](w, "v")
        end, r)
        -- the window holding all three records gives the expected value
        local found = false
        for _, line in ipairs(out) do if line == expect then found = true end end
        assert.is_true(found, kd[1].kind .. " " .. agg .. ": " .. table.concat(out, " | "))
      end
    end
  end)
end)

describe("wm.triggers", function()
  local T = wm.triggers
  local r7 = recs(1000, 2000, 3000, 4000, 5000, 6000, 7000)

  it("event_time is the default; processing_time on event-time windows waits for the clock", function()
    assert.are.same(run(function(k) return k:window(wm.windows.tumbling(4000)):count() end, r7),
      run(function(k) return k:window(wm.windows.tumbling(4000)):trigger(T.event_time()):count() end, r7))
    -- the wall-clock timers are far away; the end of input flushes them
    local out = run(function(k) return k:window(wm.windows.tumbling(4000)):trigger(T.processing_time()):count() end,
      recs(1000, 2000))
    assert.are.same({}, out) -- the window is cleaned up at its end (event time) before the clock fires
  end)

  it("count and purging", function()
    assert.are.same({'{"k":"a","t":1000,"v":3}', '{"k":"a","t":4000,"v":9}', '{"k":"a","t":4000,"v":22}'},
      run(function(k) return k:window(wm.windows.tumbling(4000)):trigger(T.count(2)):sum("v") end, r7))
    assert.are.same({'{"k":"a","t":1000,"v":3}', '{"k":"a","t":4000,"v":9}', '{"k":"a","t":6000,"v":13}'},
      run(function(k) return k:window(wm.windows.tumbling(4000)):trigger(T.purging(T.count(2))):sum("v") end, r7))
  end)

  it("continuous_event_time and continuous_processing_time", function()
    assert.are.same({'{"k":"a","t":1000,"v":6}', '{"k":"a","t":1000,"v":15}', '{"k":"a","t":1000,"v":28}',
                     '{"k":"a","t":1000,"v":28}', '{"k":"a","t":1000,"v":28}'},
      run(function(k)
        return k:window(wm.windows.tumbling(10000)):trigger(T.continuous_event_time("2s")):sum("v")
      end, r7))
    -- on a global window the wall-clock timer is pending at the end: it fires once
    assert.are.same({'{"k":"a","t":1000,"v":28}'},
      run(function(k)
        return k:window(wm.windows.global()):trigger(T.continuous_processing_time("1h")):sum("v")
      end, r7))
  end)

  it("end_of_stream", function()
    assert.are.same({'{"count":7,"key":"a","start":' .. math.mininteger .. ',"stop":' .. math.maxinteger .. '}'},
      run(function(k) return k:window(wm.windows.global()):trigger(T.end_of_stream()):count() end, r7))
  end)

  it("custom triggers: results, timers, state, merge", function()
    local seen = {}
    local out = run(function(k)
      return k:window(wm.windows.tumbling(10000)):trigger(T.custom{
        on_element = function(r, _ts, w, ctx)
          ctx.state.n = (ctx.state.n or 0) + 1
          ctx:register_event_time_timer(w.max_timestamp)
          ctx:register_event_time_timer(w.max_timestamp) -- one timer
          if r.v % 3 == 0 then return "fire" end
        end,
        on_event_time = function(t, w, ctx)
          seen[#seen + 1] = ctx.state.n
          return t == w.max_timestamp and "fire_and_purge" or "continue"
        end,
        clear = function() seen[#seen + 1] = "clear" end,
      }):sum("v")
    end, r7)
    assert.are.same({'{"k":"a","t":1000,"v":6}', '{"k":"a","t":1000,"v":21}', '{"k":"a","t":1000,"v":28}'}, out)
    assert.are.same({7, "clear"}, seen)
    -- on sessions, on_merge re-registers the timer of the merged window
    out = run(function(k)
      return k:window(wm.windows.session(1000)):trigger(T.custom{
        on_element = function(_, _, w, ctx) ctx:register_event_time_timer(w.max_timestamp) end,
        on_event_time = function(t, w) return t == w.max_timestamp and "fire" or "continue" end,
        on_merge = function(w, ctx) ctx:register_event_time_timer(w.max_timestamp) end,
      }):count()
    end, recs(0, 1000, 5000))
    assert.are.same({'{"count":2,"key":"a","start":0,"stop":2000}',
      '{"count":1,"key":"a","start":5000,"stop":6000}'}, out)
  end)

  it("a custom trigger returning nonsense stops the job", function()
    local e = errmsg(function()
      run(function(k)
        return k:window(wm.windows.tumbling(10)):trigger(T.custom{on_element = function() return "boom" end}):count()
      end, recs(1))
    end)
    assert.matches('custom trigger returned "boom"', e, 1, true)
  end)

  it("bad trigger arguments", function()
    assert.matches("count: the number of records", errmsg(function() T.count(0) end))
    assert.matches("interval must be positive", errmsg(function() T.continuous_event_time(0) end))
    assert.matches("interval must be positive", errmsg(function() T.continuous_processing_time(-1) end))
    assert.matches("purging: expected a trigger", errmsg(function() T.purging({}) end))
    assert.matches("unknown callback 'on_elemnt'", errmsg(function() T.custom{on_elemnt = print} end))
    local k = wm.env{}:from_elements(1):key_by(function() return 1 end)
    assert.matches("trigger: expected a trigger", errmsg(function() k:window(wm.windows.global()):trigger({}) end))
    assert.matches("needs an 'on_merge'", errmsg(function() k:window(wm.windows.session(5)):trigger(T.custom{}) end))
  end)
end)

describe("wm.evictors", function()
  local E = wm.evictors
  local r4 = recs(1000, 2000, 3000, 4000)

  it("count before and after", function()
    assert.are.same({'{"k":"a","t":3000,"v":7}'},
      run(function(k) return k:window(wm.windows.tumbling(10000)):evictor(E.count(2)):sum("v") end, r4))
    assert.are.same({'{"count":2,"key":"a","start":0,"stop":10000}', '{"count":3,"key":"a","start":0,"stop":10000}'},
      run(function(k)
        return k:window(wm.windows.tumbling(10000)):trigger(wm.triggers.count(2))
          :evictor(E.count(1, {after = true})):count()
      end, r4))
  end)

  it("time keeps the records close to the latest", function()
    assert.are.same({'{"k":"a","t":3000,"v":7}'},
      run(function(k) return k:window(wm.windows.tumbling(10000)):evictor(E.time("1500ms")):sum("v") end, r4))
  end)

  it("custom evictors see records and timestamps", function()
    local got
    local out = run(function(k)
      return k:window(wm.windows.tumbling(10000)):evictor(E.custom{
        before = function(rs, ctx)
          got = ctx.timestamps
          local keep = {}
          for _, r in ipairs(rs) do if r.v % 2 == 0 then keep[#keep + 1] = r end end
          return keep
        end,
      }):process(function(_, _, rs, o) o(#rs) end)
    end, r4)
    assert.are.same({"2"}, out)
    assert.are.same({1000, 2000, 3000, 4000}, got)
  end)

  it("bad evictor arguments", function()
    assert.matches("positive integer", errmsg(function() E.count(-1) end))
    assert.matches("unknown option 'afterr'", errmsg(function() E.count(1, {afterr = true}) end))
    assert.matches("must not be negative", errmsg(function() E.time(-1) end))
    assert.matches("give a 'before' or an 'after'", errmsg(function() E.custom{} end))
    local k = wm.env{}:from_elements(1):key_by(function() return 1 end)
    assert.matches("evictor: expected an evictor", errmsg(function() k:window(wm.windows.global()):evictor({}) end))
  end)
end)

describe("a windowed stream's missing methods (issue 26)", function()
  local function windowed()
    local env = wm.env{watermark_interval = 0}
    return env:from_elements({{k = "a", t = 1}}):key_by("k"):window(wm.windows.tumbling(1000))
  end

  it("get_side_output says to call it on the stream the window function returns, at the user's line", function()
    local ws = windowed():side_output_late_data("late")
    local ok, e = pcall(function() local side = ws:get_side_output("late"); return side end)
    assert.is_false(ok)
    e = tostring(e)
    assert.matches("windows_spec.lua:%d+: get_side_output: a windowed stream has no get_side_output", e)
    assert.matches("call it on the stream that :reduce/:aggregate/:process returns", e, 1, true)
    assert.is_nil(e:find("attempt to call a nil value", 1, true))
  end)

  it("the stream methods Flink users reach for (print, map, apply, ...) get the same hint", function()
    for _, m in ipairs({"print", "collect", "map", "filter", "key_by", "sink", "write_lines", "union",
                        "set_parallelism", "name", "uid", "apply"}) do
      local ws = windowed()
      local ok, e = pcall(function() local r = ws[m](ws); return r end)
      assert.is_false(ok, m)
      assert.matches(m .. ": a windowed stream has no " .. m, tostring(e), 1, true)
      assert.matches(":reduce/:aggregate/:process", tostring(e), 1, true)
    end
  end)

  it("its own fields and methods still read as before (an unknown field is nil)", function()
    local ws = windowed()
    assert.is_nil(ws.late_tag)
    assert.is_nil(ws.no_such_thing)
    assert.are.equal("function", type(ws.reduce))
  end)
end)
