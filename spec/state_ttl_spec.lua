-- State that expires (api.md "State that expires", semantics.md §10 "State TTL"): keys whose
-- ctx.state is empty and that have no timers hold nothing, and state_ttl drops a key's state
-- that was not written (or read) for ttl. Processing time is wm.testing's virtual clock; every
-- expected output is worked out by hand in the comment above it.
local wm = require("wm")
local T = wm.testing
local h = require("helper")

-- dedup by id: "new id" the first time, "dup id" while the id's state lives
local function dedup(ttl)
  return function(input)
    return input:key_by("id"):process{
      state_ttl = ttl,
      process_element = function(r, ctx, out)
        if ctx.state.seen then
          out("dup " .. r.id)
        else
          ctx.state.seen = true
          out("new " .. r.id)
        end
      end}
  end
end

local function values(hn)
  local t = {}
  for i, r in ipairs(hn:output_records()) do t[i] = r.value end
  return t
end

describe("keys that hold nothing", function()
  it("go when ctx.state is emptied or set to nil, and stay while they have timers", function()
    local hn = T.harness(function(input)
      return input:key_by("id"):process{
        process_element = function(r, ctx, out)
          if r.op == "set" then ctx.state.v = r.v
          elseif r.op == "clear" then ctx.state.v = nil
          elseif r.op == "nil" then ctx.state = nil
          elseif r.op == "timer" then ctx.timer_service:register_event_time_timer(r.at)
          elseif r.op == "get" then out(tostring(ctx.state.v)) end
        end,
        on_timer = function(t, ctx, out) out("timer " .. ctx.key .. " " .. t) end}
    end)
    local keys = function() return hn:metrics()["keyed process"].keys end
    hn:push({id = "a", op = "set", v = 1}, 1)
    hn:push({id = "b", op = "set", v = 2}, 1)
    assert.are.equal(2, keys())
    hn:push({id = "a", op = "clear"}, 2) -- a's table is empty: a goes
    assert.are.equal(1, keys())
    hn:push({id = "b", op = "nil"}, 2) -- ctx.state = nil: b goes
    assert.are.equal(0, keys())
    hn:push({id = "a", op = "get"}, 3) -- a read of a key that went: an empty table
    assert.are.equal(0, keys())
    hn:push({id = "c", op = "timer", at = 10}, 3) -- no state, a timer: held until it fires
    assert.are.equal(1, keys())
    hn:watermark(10)
    assert.are.equal(0, keys())
    assert.are.same({"nil", "timer c 10"}, values(hn))
  end)

  it("ctx.state = another table replaces the key's state; anything else is an error", function()
    local hn = T.harness(function(input)
      return input:key_by("id"):process(function(r, ctx, out)
        if r.op == "replace" then ctx.state = {v = r.v} else out(ctx.state.v) end
      end)
    end)
    hn:push({id = "a", op = "replace", v = 7}, 1)
    hn:push({id = "a", op = "get"}, 2)
    assert.are.same({7}, values(hn))
    local _, err, code = h.run_job([[
      local wm = require("wm")
      local env = wm.env{}
      env:from_elements({id = 1}):key_by("id"):process(function(r, ctx, out)
        ctx.state = 5
      end):print()
      env:execute()
    ]])
    assert.are.equal(1, code)
    assert.matches("%.lua:3: ctx.state was set to a number: the key's state is a table", err)
  end)
end)

describe("state_ttl in processing time", function()
  it("on_create_and_write: a read does not renew the state", function()
    -- ttl 1 s: "a" written at 0; read at 600 (dup, not renewed); at 1000 0 + 1000 <= 1000:
    -- gone, so "a" is new again (written at 1000); at 1999 still a dup
    local hn = T.harness(dedup{ttl = "1s"})
    hn:push({id = "a"}, 1)
    hn:advance_processing_time(600)
    hn:push({id = "a"}, 2)
    hn:advance_processing_time(400)
    hn:push({id = "a"}, 3)
    hn:advance_processing_time(999)
    hn:push({id = "a"}, 4)
    assert.are.same({"new a", "dup a", "new a", "dup a"}, values(hn))
    assert.are.equal(1, hn:metrics()["keyed process"].keys_expired)
  end)

  it("on_read_and_write: a read renews it", function()
    -- written at 0; read at 600 (renewed to 600); at 1000 600 + 1000 > 1000: dup, renewed
    -- to 1000; at 2000 1000 + 1000 <= 2000: gone, new
    local hn = T.harness(dedup{ttl = 1000, update = "on_read_and_write"})
    hn:push({id = "a"}, 1)
    hn:advance_processing_time(600)
    hn:push({id = "a"}, 2)
    hn:advance_processing_time(400)
    hn:push({id = "a"}, 3)
    hn:advance_processing_time(1000)
    hn:push({id = "a"}, 4)
    assert.are.same({"new a", "dup a", "dup a", "new a"}, values(hn))
  end)

  it("a change inside a table held in a field is a read; assigning the field is a write", function()
    -- at 0 both keys get a list; at 500 "x" appends in place (a read of ctx.state.list),
    -- "y" appends and assigns the list again (a write, renewing to 500); at 1000 x's state
    -- (written at 0) is gone, y's (500) is not
    local hn = T.harness(function(input)
      return input:key_by("id"):process{
        state_ttl = {ttl = 1000},
        process_element = function(r, ctx, out)
          if r.op == "init" then ctx.state.list = {}
          elseif r.op == "append" then table.insert(ctx.state.list, r.v)
          elseif r.op == "assign" then
            local l = ctx.state.list
            l[#l + 1] = r.v
            ctx.state.list = l
          else out(ctx.key .. " " .. #(ctx.state.list or {})) end
        end}
    end)
    hn:push({id = "x", op = "init"}, 1)
    hn:push({id = "y", op = "init"}, 1)
    hn:advance_processing_time(500)
    hn:push({id = "x", op = "append", v = 1}, 2)
    hn:push({id = "y", op = "assign", v = 1}, 2)
    hn:advance_processing_time(500)
    hn:push({id = "x", op = "count"}, 3)
    hn:push({id = "y", op = "count"}, 3)
    assert.are.same({"x 0", "y 1"}, values(hn))
  end)

  it("pairs and # read through ctx.state; timers stay when the state expires", function()
    -- "k" keeps {10, 20} and a processing-time timer at 5000; its state expires at 1000;
    -- the timer still fires (at 5000) and sees an empty state
    local hn = T.harness(function(input)
      return input:key_by("id"):process{
        state_ttl = {ttl = 1000},
        process_element = function(r, ctx, out)
          if r.op == "fill" then
            ctx.state[1], ctx.state[2] = 10, 20
            ctx.timer_service:register_processing_time_timer(5000)
          end
          local n = 0
          for _ in pairs(ctx.state) do n = n + 1 end
          out(string.format("%s: # %d, pairs %d", r.op, #ctx.state, n))
        end,
        on_timer = function(t, ctx, out) out("timer at " .. t .. ": # " .. #ctx.state) end}
    end)
    hn:push({id = "k", op = "fill"}, 1)
    hn:advance_processing_time(999)
    hn:push({id = "k", op = "look"}, 2)
    hn:advance_processing_time(4001)
    assert.are.same({"fill: # 2, pairs 2", "look: # 2, pairs 2", "timer at 5000: # 0"}, values(hn))
    assert.are.equal(0, hn:metrics()["keyed process"].keys)
  end)

  it("the cleanup pass frees keys nobody asks for again", function()
    -- 50 ids at 0, then 100 records of one other id at 2000: each examines a few keys, and
    -- every one of the 50 has expired (0 + 1000 <= 2000)
    local hn = T.harness(dedup{ttl = 1000})
    for i = 1, 50 do hn:push({id = "id" .. i}, 1) end
    assert.are.equal(50, hn:metrics()["keyed process"].keys)
    hn:advance_processing_time(2000)
    for _ = 1, 100 do hn:push({id = "other"}, 2) end
    local m = hn:metrics()["keyed process"]
    assert.are.equal(1, m.keys)
    assert.are.equal(50, m.keys_expired)
  end)

  it("a checkpoint keeps the state's age: a resumed harness expires it at the same time", function()
    -- "a" written at 0 and "b" at 500; checkpoint at 600; after the restore, at 1000 a is
    -- gone (new) and b is not (dup); at 1500 b is gone too
    local hn = T.harness(dedup{ttl = 1000})
    hn:push({id = "a"}, 1)
    hn:advance_processing_time(500)
    hn:push({id = "b"}, 2)
    hn:advance_processing_time(100)
    local cp = hn:snapshot()
    local h2 = T.harness(dedup{ttl = 1000})
    h2:restore(cp)
    h2:advance_processing_time(400)
    h2:push({id = "a"}, 3)
    h2:push({id = "b"}, 3)
    h2:advance_processing_time(500)
    h2:push({id = "b"}, 4)
    assert.are.same({"new a", "dup b", "new b"}, values(h2))
    -- a checkpoint without a TTL does not go into a job with one
    local h3 = T.harness(dedup(nil))
    h3:push({id = "a"}, 1)
    local h4 = T.harness(dedup{ttl = 1000})
    assert.has_error(function() h4:restore(h3:snapshot()) end)
  end)
end)

describe("state_ttl in event time", function()
  it("expires when the watermark passes the last write's record time + ttl", function()
    -- ttl 100: "a" written by the record at 1000, so gone once the watermark is 1100; the
    -- cleanup at that watermark frees it before any record asks
    local hn = T.harness(dedup{ttl = 100, time = "event"})
    hn:push({id = "a"}, 1000)
    hn:push({id = "a"}, 1050)
    hn:watermark(1099)
    hn:push({id = "a"}, 1099)
    assert.are.equal(1, hn:metrics()["keyed process"].keys)
    hn:watermark(1100)
    assert.are.equal(0, hn:metrics()["keyed process"].keys)
    hn:push({id = "a"}, 1100)
    assert.are.same({"new a", "dup a", "dup a", "new a"}, values(hn))
  end)

  it("a job stopped and resumed from its checkpoint expires the same states", function()
    -- records i = 1..200 at ts 10 i, id "k" .. i % 4, watermark ts - 1 after each record;
    -- ttl 45 ms of event time. A key comes every 40 ms: at its next record (ts t + 40) the
    -- watermark is t + 29 < t + 45: a dup, which does not renew; at t + 80 the watermark is
    -- t + 69 >= t + 45: new. So each key alternates: i is new when ceil(i / 4) is odd.
    local dir = h.tmpdir()
    h.finally(function() h.rmdir(dir) end)
    local job = h.write_tmp([[
      local wm = require("wm")
      local stop_at = tonumber(arg[1])
      local env = wm.env{watermark_interval = 0}
      env:source{
        open = function(ctx) ctx.i = ctx.i or 0 end,
        poll = function(ctx)
          ctx.i = ctx.i + 1
          if ctx.i > 200 then return false end
          if ctx.i == stop_at then os.execute("kill -TERM $PPID") end
          ctx:emit({i = ctx.i, id = "k" .. ctx.i % 4, ts = ctx.i * 10})
          return true
        end,
        snapshot = function(ctx) return {i = ctx.i} end,
        restore = function(ctx, t) ctx.i = t.i end}
        :assign_timestamps_and_watermarks(wm.watermarks.monotonous():with_timestamp_field("ts"))
        :key_by("id"):process{
          state_ttl = {ttl = 45, time = "event"},
          process_element = function(r, ctx, out)
            if ctx.state.seen then out(r.i .. " dup") return end
            ctx.state.seen = true
            out(r.i .. " new")
          end}
        :write_lines(arg[2], function(s) return s end)
      env:execute("dedup")
    ]], ".lua")
    local whole, part = dir .. "/whole.txt", dir .. "/part.txt"
    local _, err, code = h.wmrun(h.shell_quote(job) .. " 0 " .. h.shell_quote(whole))
    assert.are.equal(0, code, err)
    local want = {}
    for i = 1, 200 do want[i] = i .. (math.ceil(i / 4) % 2 == 1 and " new" or " dup") end
    assert.are.equal(table.concat(want, "\n") .. "\n", h.read(whole))
    local ck = "--checkpoint-dir " .. h.shell_quote(dir .. "/ck") .. " "
    _, err, code = h.wmrun(ck .. h.shell_quote(job) .. " 101 " .. h.shell_quote(part))
    assert.are.equal(0, code, err)
    assert.is_true(#h.read(part) < #h.read(whole), "the first run stopped early")
    _, err, code = h.wmrun(ck .. h.shell_quote(job) .. " 0 " .. h.shell_quote(part))
    assert.are.equal(0, code, err)
    assert.matches("resum", err)
    assert.are.equal(h.read(whole), h.read(part))
  end)
end)

describe("--metrics", function()
  it("prints the keys a keyed operator holds and how many states expired", function()
    -- examples/joins/dedup_ttl.lua keeps 8 clicks (8 states written); at the end of input the
    -- watermark is MAX and every one has expired: none held
    local _, err, code = h.wmrun('--metrics "' .. h.root .. '/examples/joins/dedup_ttl.lua"')
    assert.are.equal(0, code, err)
    assert.matches("\nkeys of 'keyed process %(.-dedup_ttl%.lua:20%)': 0 held, 8 expired %(state_ttl%)\n", err)
    -- without a TTL: the keys held only
    local _, err2, code2 = h.run_job([[
      local wm = require("wm")
      local env = wm.env{}
      env:from_elements({id = 1}, {id = 2}, {id = 1}):key_by("id"):process(function(r, ctx)
        ctx.state.n = (ctx.state.n or 0) + 1
      end):print()
      env:execute()
    ]], "--metrics")
    assert.are.equal(0, code2, err2)
    assert.matches("\nkeys of 'keyed process %(.-%.lua:3%)': 2 held\n", err2)
  end)
end)

describe("state_ttl on keyed connected streams", function()
  -- side "a" sets the key's value, side "b" reads it; both share one state per key
  local function build(ttl)
    return function(input)
      local a = input:filter(function(r) return r.side == "a" end)
      local b = input:filter(function(r) return r.side == "b" end)
      return a:key_by("k"):connect(b:key_by("k")):process{
        state_ttl = ttl,
        process_element1 = function(r, ctx) ctx.state.v = r.v end,
        process_element2 = function(_r, ctx, out) out(tostring(ctx.state.v)) end}
    end
  end

  it("a state written by one input expires for both", function()
    -- on_create_and_write: written at 0; read at 500 and 999: x; at 1000 gone: nil
    local hn = T.harness(build{ttl = 1000})
    hn:push({side = "a", k = 1, v = "x"}, 1)
    hn:advance_processing_time(500)
    hn:push({side = "b", k = 1}, 2)
    hn:advance_processing_time(499)
    hn:push({side = "b", k = 1}, 3)
    hn:advance_processing_time(1)
    hn:push({side = "b", k = 1}, 4)
    assert.are.same({"x", "x", "nil"}, values(hn))
    -- on_read_and_write: reads at 500, 1499, 2498 each renew (last + 1000 > now), at 3498
    -- the read of 2498 is 1000 old: gone
    hn = T.harness(build{ttl = 1000, update = "on_read_and_write"})
    hn:push({side = "a", k = 1, v = "x"}, 1)
    for _, step in ipairs({500, 999, 999, 1000}) do
      hn:advance_processing_time(step)
      hn:push({side = "b", k = 1}, 2)
    end
    assert.are.same({"x", "x", "x", "nil"}, values(hn))
  end)

  it("and with a broadcast input: the keyed side's state expires, the broadcast state does not", function()
    -- the rule (broadcast) and k's count are set at 0; at 1000 k's count (written at 0) is
    -- gone, the rule is not: "rule r, n 1" then "rule r, n 1" again (a fresh count)
    local hn = T.harness(function(input)
      local ev = input:filter(function(r) return r.k ~= nil end)
      local rules = input:filter(function(r) return r.rule ~= nil end)
      return ev:key_by("k"):connect(rules:broadcast()):process{
        state_ttl = {ttl = 1000},
        process_element = function(_r, ctx, out)
          ctx.state.n = (ctx.state.n or 0) + 1
          out(string.format("rule %s, n %d", tostring(ctx.broadcast_state.rule), ctx.state.n))
        end,
        process_broadcast_element = function(r, ctx) ctx.broadcast_state.rule = r.rule end}
    end)
    hn:push({rule = "r"}, 1)
    hn:push({k = 1}, 1)
    hn:advance_processing_time(1000)
    hn:push({k = 1}, 2)
    assert.are.same({"rule r, n 1", "rule r, n 1"}, values(hn))
  end)

  it("keys of two types on the two inputs are an error naming both", function()
    local _, err, code = h.run_job([[
      local wm = require("wm")
      local env = wm.env{}
      local a = env:from_elements({id = 1})
      local b = env:from_elements({id = "1"})
      local p = a:key_by("id"):connect(b:key_by("id")):process{process_element1 = function() end,
        process_element2 = function() end}
      p:print()
      env:execute()
    ]])
    assert.are.equal(1, code)
    -- which input comes first is open: either way both types and the record are named
    assert.matches("keyed connected streams: the %a+ input's key is a %a+ %(.-%) for record {\"id\":.-}, "
      .. "and the %a+ input's keys are a %a+: equal keys of the two inputs must be of one type", err)
    assert.matches("a number", err)
    assert.matches("a string", err)
    assert.matches("in operator 'keyed co%-process %(.-%.lua:5%)'", err)
  end)
end)

describe("state_ttl options", function()
  local function fails(opt, msg, prefix)
    local _, err, code = h.run_job(([[
      local wm = require("wm")
      local env = wm.env{}
      env:from_elements({id = 1}):key_by("id"):process{state_ttl = %s,
        process_element = function() end}:print()
      env:execute()
    ]]):format(opt))
    assert.are.equal(1, code)
    assert.matches("%.lua:3: " .. (prefix or "process: ") .. msg, err)
  end

  it("are errors at the user's line", function()
    fails("{ttl = 0}", "state_ttl.ttl must be a positive duration, got 0")
    fails("{ttl = '-5s'}", "state_ttl.ttl: bad duration '%-5s'")
    fails("{ttl = 'soon'}", "state_ttl.ttl: bad duration 'soon'")
    fails("{ttl = 1.5}", "bad duration for process: state_ttl.ttl: 1.5 is not a whole number", "")
    fails("{}", "state_ttl needs ttl")
    fails("{ttl = '1s', update = 'on_write'}", 'state_ttl.update must be "on_create_and_write" or')
    fails("{ttl = '1s', time = 'wall'}", 'state_ttl.time must be "processing" or "event", got wall')
    fails("{ttl = '1s', size = 3}", "state_ttl: unknown option 'size'")
    fails("'1s'", "state_ttl must be a table")
  end)

  it("on keyed connected streams too", function()
    local _, err, code = h.run_job([[
      local wm = require("wm")
      local env = wm.env{}
      local a, b = env:from_elements({id = 1}), env:from_elements({id = 2})
      a:key_by("id"):connect(b:key_by("id")):process{state_ttl = {ttl = "1s", time = "later"},
        process_element1 = function() end, process_element2 = function() end}:print()
      env:execute()
    ]])
    assert.are.equal(1, code)
    assert.matches("%.lua:4: process: state_ttl.time must be", err)
  end)
end)
