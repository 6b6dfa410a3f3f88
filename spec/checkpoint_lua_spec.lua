-- Checkpoints of the Lua parts (docs/checkpoints.md, "User state in Lua"): the codec of Lua
-- values, the snapshot/restore methods of custom generators, keyed process functions and
-- custom triggers, uid, and the refusal of Lua parts whose state a checkpoint cannot hold.
-- Most specs cut a harness run in two: feed, h:snapshot(), a fresh harness of the same job
-- restores it and gets the rest; its output must be the uninterrupted run's.
local wm = require("wm")
local T = wm.testing

-- events: {"push", record, ts} | {"wm", t} | {"advance", ms} | {"finish"}
local function feed(h, events, from, to)
  for i = from, to do
    local e = events[i]
    if e[1] == "push" then h:push(e[2], e[3])
    elseif e[1] == "wm" then h:watermark(e[2])
    elseif e[1] == "advance" then h:advance_processing_time(e[2])
    elseif e[1] == "finish" then h:finish() end
  end
end

local function drain(h, tags, into)
  into = into or {main = {}}
  for _, r in ipairs(h:output_records()) do into.main[#into.main + 1] = r end
  for _, tag in ipairs(tags or {}) do
    into[tag] = into[tag] or {}
    for _, r in ipairs(h:side_output(tag)) do into[tag][#into[tag] + 1] = r end
  end
  return into
end

-- The output of an uninterrupted run, and of runs cut by a checkpoint after each event.
local function check_every_cut(build, events, opts)
  opts = opts or {}
  local tags = opts.side_outputs
  local whole = T.harness(build, opts)
  feed(whole, events, 1, #events)
  local want = drain(whole, tags)
  want.watermark = whole:current_watermark()
  assert.is_true(#want.main > 0, "the job under test emits something")
  for cut = 0, #events do
    local h1 = T.harness(build, opts)
    feed(h1, events, 1, cut)
    local got = drain(h1, tags)
    local cp = h1:snapshot()
    local h2 = T.harness(build, opts)
    h2:restore(cp)
    feed(h2, events, cut + 1, #events)
    drain(h2, tags, got)
    got.watermark = h2:current_watermark()
    assert.are.same(want, got, "checkpoint after event " .. cut)
  end
  return want
end

describe("the codec of Lua values in checkpoints", function()
  local rt = wm.core._codec_roundtrip
  local function same_bits(a, b)
    return string.pack("<d", a) == string.pack("<d", b)
  end

  it("round-trips every plain Lua value bit for bit", function()
    assert.is_nil((rt(nil)))
    assert.are.equal(true, (rt(true)))
    assert.are.equal(false, (rt(false)))
    for _, i in ipairs({0, 1, -1, 63, -64, 64, math.maxinteger, math.mininteger}) do
      local c = rt(i)
      assert.are.equal("integer", math.type(c))
      assert.are.equal(i, c)
    end
    for _, f in ipairs({0.0, -0.0, 1.5, -1e308, 5e-324, math.huge, -math.huge, 0/0, 2^53}) do
      local c = rt(f)
      assert.are.equal("float", math.type(c))
      assert.is_true(same_bits(f, c), "float " .. tostring(f))
    end
    for _, s in ipairs({"", "a\0b\0", "\xff\xfe invalid \xc3", string.rep("x", 70000)}) do
      assert.are.equal(s, (rt(s)))
    end
  end)

  it("round-trips tables: nested, arrays with holes, float and boolean keys", function()
    local v = {1, nil, 3, [10] = "ten", [1.5] = "float key", [true] = "yes", [false] = 0,
               [-7] = "neg", nested = {deeper = {deepest = {-0.0, math.mininteger}}},
               [""] = "empty key", ["a\0b"] = "nul key"}
    local c = rt(v)
    assert.are.same(v, c)
    assert.is_nil(c[2])
    assert.are.equal(3, c[3])
    assert.are.equal("float key", c[1.5])
    assert.are.equal("yes", c[true])
    assert.is_true(same_bits(-0.0, c.nested.deeper.deepest[1]))
    local nan_inside = rt({x = 0/0})
    assert.is_true(nan_inside.x ~= nan_inside.x)
  end)

  it("refuses functions, coroutines, userdata and cycles, saying where they are", function()
    local function bad(x) local ok, msg = rt(x) return ok == nil and msg end
    assert.matches("it holds a function %(at record%.acc%.f%)", bad({acc = {f = print}}))
    assert.matches("it holds a thread %(at record%.co%)", bad({co = coroutine.create(print)}))
    assert.matches("it holds a userdata %(at record%[2%]%)", bad({1, io.stdout}))
    assert.matches("it is a function", bad(print))
    local cyc = {list = {}}
    cyc.list[1] = cyc
    assert.matches("cycle %(record%.list%[1%] contains itself%)", bad(cyc))
  end)
end)

describe("checkpoints of the Lua parts of a job", function()
  local function reduce_job(input)
    return input:key_by("k"):window(wm.windows.tumbling(10)):allowed_lateness(5)
      :side_output_late_data("late")
      :reduce(function(a, b) return {k = a.k, n = a.n + b.n, seen = {a.seen, b.n}} end)
  end
  local events = {
    {"push", {k = "a", n = 1, seen = 1}, 1}, {"push", {k = "b", n = 2, seen = 2}, 3},
    {"wm", 9}, {"push", {k = "a", n = 4, seen = 4}, 5}, {"push", {k = "a", n = 8, seen = 8}, 12},
    {"wm", 15}, {"push", {k = "a", n = 16, seen = 16}, 2}, {"wm", 25},
    {"push", {k = "b", n = 32, seen = 32}, 21}, {"finish"},
  }

  it("a Lua reduce with allowed lateness and a late side output resumes exactly", function()
    local want = check_every_cut(reduce_job, events, {side_outputs = {"late"}})
    assert.are.equal(1, #want.late) -- the record at 2 after the watermark 15 (lateness 5)
  end)

  it("windows holding C rows (parse_csv) resume exactly", function()
    local function job(input)
      return input:parse_csv{"k", "t:integer", "v:number"}
        :assign_timestamps_and_watermarks(
          wm.watermarks.bounded_out_of_orderness(2):with_timestamp_field("t"))
        :key_by("k"):window(wm.windows.sliding(10, 5))
        :process(function(key, w, records, out)
          local s = 0
          for _, r in ipairs(records) do s = s + r.v end
          out({k = key, start = w.start, n = #records, sum = s})
        end)
    end
    local ev = {}
    for i, line in ipairs({"a,1,0.5", "b,2,-0.0", "a,7,1e300", "a,3,2", "b,14,3", "a,22,1",
                           "b,9,4", "a,30,5"}) do
      ev[i] = {"push", line}
    end
    ev[#ev + 1] = {"finish"}
    check_every_cut(job, ev, {watermark_interval = 0})
  end)

  local function counting_generator(calls)
    return wm.watermarks.for_generator(function()
      return {max = math.mininteger, seen = 0,
        on_event = function(self, _r, ts, out)
          self.seen = self.seen + 1
          if ts > self.max then self.max = ts end
          -- a watermark every third record: depends on the count kept in self
          if self.seen % 3 == 0 then out:emit_watermark(self.max - 1) end
        end,
        snapshot = function(self)
          calls.snapshot = (calls.snapshot or 0) + 1
          return {max = self.max, seen = self.seen}
        end,
        restore = function(self, t)
          calls.restore = (calls.restore or 0) + 1
          self.max, self.seen = t.max, t.seen
        end}
    end):with_timestamp_field("t")
  end

  it("a custom watermark generator's own state goes through snapshot(self) / restore(self, t)", function()
    local calls = {}
    local function job(input)
      return input:assign_timestamps_and_watermarks(counting_generator(calls))
        :key_by("k"):window(wm.windows.tumbling(4)):sum("v")
    end
    -- the 20 early on makes the watermarks depend on the max kept in self; no end of input,
    -- so that which windows fired depends on the last watermark (a generator that restarted
    -- from nothing after the cut fires fewer: checked when this spec was written)
    local ts = {1, 2, 3, 20, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13}
    local ev = {}
    for i = 1, #ts do ev[i] = {"push", {k = "k" .. i % 2, t = ts[i], v = i}} end
    local want = check_every_cut(job, ev, {watermark_interval = 0})
    -- watermark 19 after the 6th record fires [0,4) and [4,8) of both keys; the rest is late
    assert.are.equal(4, #want.main)
    assert.is_true(calls.snapshot > 0 and calls.restore == calls.snapshot)
  end)

  it("a custom watermark generator without snapshot methods is refused, naming it, its line and the fix", function()
    local gen_line
    local function job(input)
      gen_line = debug.getinfo(1, "l").currentline + 1
      local strategy = wm.watermarks.for_generator(function()
        return {on_event = function(_self, _r, ts, out) out:emit_watermark(ts) end}
      end)
      return input:assign_timestamps_and_watermarks(strategy:with_timestamp_field("t"))
    end
    local h = T.harness(job)
    h:push({t = 1})
    local ok, err = pcall(h.snapshot, h)
    assert.is_false(ok)
    assert.matches("checkpointing is on, and one part of this job keeps state", err, 1, true)
    assert.matches("the watermark generator of for_generator at [^\n]*checkpoint_lua_spec.lua:" ..
      gen_line .. " cannot be checkpointed", err)
    assert.matches("give the generator snapshot(self)", err, 1, true)
    assert.matches("restore(self, t) methods", err, 1, true)
    h:push({t = 2}) -- the harness goes on
    assert.are.equal(2, #h:output())
  end)

  it("every part that cannot be checkpointed is named, once per part", function()
    local function gen()
      return wm.watermarks.for_generator(function() return {on_event = function() end} end)
    end
    local h = T.harness(function(input)
      local a = input:assign_timestamps_and_watermarks(gen())
      local b = input:assign_timestamps_and_watermarks(gen()):set_parallelism(2)
      return a:union(b)
    end)
    local ok, err = pcall(h.snapshot, h)
    assert.is_false(ok)
    assert.matches("and parts of this job keep state that a checkpoint cannot hold:", err, 1, true)
    local _, lines = err:gsub("cannot be checkpointed", "")
    assert.are.equal(2, lines) -- a's and b's generators; b's two instances once
  end)

  it("a generator with only one of the two methods is an error when the job is built", function()
    local strategy = wm.watermarks.for_generator(function()
      return {on_event = function() end, snapshot = function() return {} end}
    end):with_timestamp_field("t")
    local ok, err = pcall(T.harness, function(input) return input:assign_timestamps_and_watermarks(strategy) end)
    assert.is_false(ok)
    assert.matches("it has snapshot but no restore method %(give both%)", err)
  end)

  it("a keyed process function: ctx.state and timers by the engine, its own fields by its methods", function()
    local function job(input)
      local f = {calls = 0}
      f.process_element = function(r, ctx, _out)
        f.calls = f.calls + 1
        ctx.state.sum = (ctx.state.sum or 0) + r.v
        ctx.timer_service:register_event_time_timer(ctx.timestamp + 5)
      end
      f.on_timer = function(t, ctx, out)
        out({k = ctx.key, at = t, sum = ctx.state.sum, calls = f.calls})
      end
      f.snapshot = function(self) return {calls = self.calls} end
      f.restore = function(self, t) self.calls = t.calls end
      return input:key_by("k"):process(f)
    end
    local ev = {}
    for i = 1, 8 do ev[#ev + 1] = {"push", {k = "k" .. i % 3, v = i}, i * 2} end
    ev[#ev + 1] = {"wm", 9}
    ev[#ev + 1] = {"push", {k = "k0", v = 100}, 30}
    ev[#ev + 1] = {"finish"}
    local want = check_every_cut(job, ev)
    assert.are.equal(9, #want.main) -- one timer per record (distinct times) and the last one
  end)

  it("processing-time timers and the virtual clock resume exactly", function()
    local function job(input)
      return input:key_by("k"):process{
        process_element = function(r, ctx, _out)
          local now = ctx.timer_service:current_processing_time()
          ctx.timer_service:register_processing_time_timer(now + r.after)
        end,
        on_timer = function(t, ctx, out) out({k = ctx.key, at = t}) end,
      }
    end
    local ev = {{"push", {k = "a", after = 100}}, {"advance", 30}, {"push", {k = "b", after = 50}},
                {"advance", 60}, {"push", {k = "a", after = 10}}, {"advance", 100},
                {"push", {k = "c", after = 1}}, {"advance", 5}}
    local want = check_every_cut(job, ev, {processing_time = 1000})
    assert.are.same({{k = "b", at = 1080}, {k = "a", at = 1100}, {k = "c", at = 1191}},
      (function() local v = {} for i, r in ipairs(want.main) do v[i] = r.value end return v end)())
  end)

  it("a keyed process function with only engine state needs no methods", function()
    local function job(input)
      return input:key_by("k"):process(function(r, ctx, out)
        ctx.state.n = (ctx.state.n or 0) + 1
        out({k = r.k, n = ctx.state.n})
      end)
    end
    local ev = {}
    for i = 1, 6 do ev[i] = {"push", {k = "k" .. i % 2}, i} end
    check_every_cut(job, ev)
  end)

  it("a keyed process function's state that holds a function fails the checkpoint, naming the operator "
    .. "and where", function()
    local h = T.harness(function(input)
      return input:key_by("k"):process(function(_r, ctx, _out) ctx.state.cb = {fn = print} end)
    end)
    h:push({k = "a"}, 1)
    local ok, err = pcall(h.snapshot, h)
    assert.is_false(ok)
    assert.matches("cannot checkpoint a key's state: it holds a function (at value.cb.fn)", err, 1, true)
    assert.matches("keyed process (", err, 1, true)
  end)

  it("a custom trigger: per-window ctx.state by the engine, its own fields by its methods", function()
    local function job(input)
      local spec = {fired = 0}
      spec.on_element = function(_r, _ts, w, ctx)
        ctx.state.n = (ctx.state.n or 0) + 1
        ctx:register_event_time_timer(w.max_timestamp)
        if ctx.state.n % 2 == 0 then spec.fired = spec.fired + 1 return "fire" end
        return "continue"
      end
      spec.on_event_time = function(t, w) return t == w.max_timestamp and "fire_and_purge" or "continue" end
      spec.snapshot = function(self) return {fired = self.fired} end
      spec.restore = function(self, t) self.fired = t.fired end
      return input:key_by("k"):window(wm.windows.tumbling(10)):trigger(wm.triggers.custom(spec))
        :process(function(key, _w, records, out) out({k = key, n = #records, fired = spec.fired}) end)
    end
    local ev = {}
    for i = 1, 9 do ev[i] = {"push", {k = "k" .. i % 2}, i * 3} end
    ev[#ev + 1] = {"finish"}
    check_every_cut(job, ev)
  end)

  it("snapshot methods must come in pairs and be functions (process, trigger, source)", function()
    local env = wm.env()
    local s = env:from_elements({k = 1})
    assert.has_error(function()
      s:key_by("k"):process{process_element = function() end, snapshot = function() return {} end}
    end, "process: snapshot and restore go together (give both methods, or neither)")
    assert.has_error(function() wm.triggers.custom{restore = function() end} end,
      "custom: snapshot and restore go together (give both methods, or neither)")
    assert.has_error(function() wm.triggers.custom{snapshot = 1, restore = function() end} end,
      "custom: 'snapshot' must be a function, got number")
    assert.has_error(function() env:source{poll = function() end, snapshot = function() end} end,
      "source: snapshot and restore go together (give both methods, or neither)")
  end)

  it("every damaged byte of a checkpoint with Lua tables gives an error or a run, never a crash", function()
    local h = T.harness(reduce_job, {side_outputs = {"late"}})
    feed(h, events, 1, 6)
    local cp = h:snapshot()
    local errors = 0
    for i = 24, #cp do -- after the magic line
      for _, b in ipairs({0, 0xFF, cp:byte(i) ~ 1}) do
        local bad = cp:sub(1, i - 1) .. string.char(b) .. cp:sub(i + 1)
        local h2 = T.harness(reduce_job, {side_outputs = {"late"}})
        local ok, err = pcall(function()
          h2:restore(bad)
          feed(h2, events, 7, #events)
        end)
        if not ok then
          errors = errors + 1
          assert.is_string(err)
        end
        h2:close()
      end
    end
    assert.is_true(errors > 0)
  end)

  it("a restore method that fails names the part; a damaged checkpoint is an error, not a crash", function()
    local function job(input)
      local f = {process_element = function() end, snapshot = function() return {} end,
                 restore = function() error("cannot take it") end}
      return input:key_by("k"):process(f)
    end
    local h = T.harness(job)
    h:push({k = 1}, 1)
    local cp = h:snapshot()
    local ok, err = pcall(T.harness(job).restore, T.harness(job), cp)
    assert.is_false(ok)
    assert.matches("cannot take it", err, 1, true)
    assert.matches("in its restore method", err, 1, true)
    for _, bad in ipairs({cp:sub(1, #cp - 3), cp:sub(1, 30), "nonsense"}) do
      local h2 = T.harness(reduce_job)
      local ok2, err2 = pcall(h2.restore, h2, bad)
      assert.is_false(ok2)
      assert.matches("restore: ", err2, 1, true)
    end
    local h3 = T.harness(job)
    h3:push({k = 2}, 1)
    assert.has_error(function() h3:restore(cp) end,
      "restore: this harness has been fed already (restore into a new harness of the same job, before anything else)")
  end)
end)

describe("uid", function()
  it("names an operator's part, so that a job whose operators moved still restores", function()
    local function job(order)
      return function(input)
        local s = input
        for _, step in ipairs(order) do
          if step == "map" then s = s:map(function(r) return {k = r.k, v = r.v * 2} end):uid("double")
          else s = s:key_by("k"):window(wm.windows.tumbling(10)):sum("v"):uid("sums") end
        end
        return s
      end
    end
    -- the map before the window in the first job, after it in the second: without uids the
    -- window's part (its place) would be the map's in the other job
    local h1 = T.harness(job({"map", "window"}))
    h1:push({k = "a", v = 1}, 1):push({k = "a", v = 2}, 2)
    local cp = h1:snapshot()
    assert.truthy(cp:find("uid-sums.0", 1, true))
    assert.truthy(cp:find("uid-double.0", 1, true))
    local h2 = T.harness(job({"window", "map"}))
    h2:restore(cp)
    h2:push({k = "a", v = 4}, 3):finish()
    -- the restored window holds 1*2 + 2*2 = 6; 4 is added undoubled in this job (6 + 4),
    -- and the map after the window doubles the sum
    assert.are.same({{k = "a", v = 20}}, h2:output())
  end)

  it("checks the id and refuses one used twice, naming the first", function()
    local env = wm.env()
    local s = env:from_elements(1)
    local line = debug.getinfo(1, "l").currentline + 1
    s:map(function(x) return x end):uid("m")
    assert.has_error(function() s:map(function(x) return x end):uid("m") end,
      "uid: 'm' is already the uid of map (spec/checkpoint_lua_spec.lua:" .. line .. ")")
    assert.has_error(function() s:uid("has space") end,
      'uid: bad id "has space" (1 to 100 letters, digits, \'.\', \'_\' or \'-\')')
    assert.has_error(function() s:uid(3) end, "uid: expected a string, got number")
    assert.has_error(function() s:get_side_output("late"):uid("x") end,
      "uid: get_side_output makes no operator of its own; give the uid to the operator before it")
  end)

  it("gives the instances of a parallel operator the uids id.1 ... id.n", function()
    local h = T.harness(function(input)
      return input:map(function(r) return r end):set_parallelism(2):uid("m")
    end)
    local cp = h:snapshot()
    assert.truthy(cp:find("uid-m.1.0", 1, true))
    assert.truthy(cp:find("uid-m.2.0", 1, true))
    assert.falsy(cp:find("uid-m.0", 1, true))
  end)
end)

describe("checkpoints of Lua sources", function()
  local core = wm.core

  -- a job whose source stops at `limit`: run once to 5, then resume from its position to 10
  local function twice(make)
    local env1, got1 = make(5)
    local positions = core._checkpoint_sources(env1)
    local env2, got2 = make(10)
    core._checkpoint_sources(env2, positions)
    local fresh_env, fresh = make(10)
    core._checkpoint_sources(fresh_env)
    return got1, got2, fresh
  end

  it("generate goes on from its counter", function()
    local got1, got2, fresh = twice(function(limit)
      local env = wm.env()
      local got = env:generate(function(i) if i <= limit then return i end end):collect()
      return env, got
    end)
    assert.are.same({1, 2, 3, 4, 5}, got1)
    assert.are.same({6, 7, 8, 9, 10}, got2)
    assert.are.same({1, 2, 3, 4, 5, 6, 7, 8, 9, 10}, fresh)
  end)

  it("a custom source goes on from what its snapshot(ctx) returned, restored before open", function()
    local got1, got2 = twice(function(limit)
      local env = wm.env()
      local got = env:source{
        open = function(ctx) ctx.i = ctx.i or 0 end,
        poll = function(ctx)
          if ctx.i >= limit then return false end
          ctx.i = ctx.i + 1
          ctx:emit({i = ctx.i}, ctx.i)
          return true
        end,
        snapshot = function(ctx) return {i = ctx.i} end,
        restore = function(ctx, t) ctx.i = t.i end,
      }:collect()
      return env, got
    end)
    assert.are.equal(5, #got1)
    assert.are.same({{i = 6}, {i = 7}, {i = 8}, {i = 9}, {i = 10}}, got2)
  end)

  it("a custom source without snapshot methods is refused at start, naming it, its line and the fix", function()
    local env = wm.env()
    local line = debug.getinfo(1, "l").currentline + 1
    env:source{poll = function() return false end}:collect()
    local ok, err = pcall(core._checkpoint_sources, env)
    assert.is_false(ok)
    assert.matches("checkpoint_lua_spec.lua:" .. line .. ": the custom source (env:source) cannot be " ..
      "checkpointed: give it snapshot(ctx)", err, 1, true)
  end)

  it("a damaged position is an error naming the source", function()
    local function make()
      local env = wm.env()
      env:generate(function(i) if i < 3 then return i end end):collect()
      return env
    end
    local positions = core._checkpoint_sources(make())
    local name = next(positions)
    assert.matches("^generate %(", name)
    for _, bad in ipairs({"", "\1L", positions[name]:sub(1, -2), "\1L\7\0", "\1L\7\5\4next\3\0\0"}) do
      local ok, err = pcall(core._checkpoint_sources, make(), {[name] = bad})
      assert.is_false(ok)
      assert.matches("damaged checkpoint state: the position of 'generate (", err, 1, true)
    end
    assert.has_error(function() core._checkpoint_sources(make(), {nosuch = "x"}) end,
      "no source named 'nosuch' in this job")
  end)
end)
