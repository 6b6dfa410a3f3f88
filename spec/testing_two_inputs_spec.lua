-- wm.testing with two inputs (issue 28): h:push / h:watermark / h:idle / h:active name the side,
-- the operator's watermark is the minimum over both sides' channels (semantics.md §10, rule 3),
-- idleness per side, timers on the virtual clocks, broadcast state, per-side metrics. Every
-- expected output below is worked out by hand in the comments beside it.
local wm = require("wm")
local T = wm.testing

local MIN, MAX = math.mininteger, math.maxinteger

-- Orders (left) priced at the newest rate of their currency (right) at or before the order's
-- time, once the operator's watermark has passed that time: "id@timer=rate". The key's state
-- holds its orders and rates by timestamp (no two at one time in these tests).
local function enrich(left, right)
  return left:key_by("cur"):connect(right:key_by("cur")):process{
    process_element1 = function(o, ctx, _out)
      ctx.state.orders = ctx.state.orders or {}
      ctx.state.orders[ctx.timestamp] = o.id
      ctx.timer_service:register_event_time_timer(ctx.timestamp)
    end,
    process_element2 = function(r, ctx, _out)
      ctx.state.rates = ctx.state.rates or {}
      ctx.state.rates[ctx.timestamp] = r.r
    end,
    on_timer = function(t, ctx, out)
      local newest
      for ts in pairs(ctx.state.rates or {}) do
        if ts <= t and (newest == nil or ts > newest) then newest = ts end
      end
      out(ctx.state.orders[t] .. "@" .. t .. "=" .. tostring(newest and ctx.state.rates[newest] or "none"))
      ctx.state.orders[t] = nil
    end}
end

local function op_metrics(h, kind)
  for _, m in ipairs(h:metrics()) do if m.name:find(kind, 1, true) then return m end end
  error("no operator " .. kind)
end

describe("wm.testing with two inputs: keyed connected streams", function()
  it("the operator's watermark is the minimum of both sides; timers fire at it", function()
    local h = T.harness(enrich, {inputs = 2})
    h:push({id = "o1", cur = "EUR"}, 1000, "left")
    h:push({cur = "EUR", r = 2}, 500, "right")
    h:watermark(1500, "left")
    -- the right side has no watermark yet: the operator stays at MIN, the timer at 1000 waits
    assert.are.same({}, h:output())
    assert.are.equal(MIN, h:current_watermark())
    h:watermark(999, "right")
    -- min(1500, 999) = 999 < 1000: still waiting
    assert.are.same({}, h:output())
    assert.are.equal(999, h:current_watermark())
    h:push({cur = "EUR", r = 3}, 1000, "right")
    h:watermark(1000, "right")
    -- min(1500, 1000) = 1000: the timer fires; the rate at 1000 is not later than the order
    assert.are.same({"o1@1000=3"}, h:output())
    assert.are.equal(1000, h:current_watermark())
    -- each side's own figures: 1 record and 1500 on the left, 2 records and 1000 on the right
    local m = op_metrics(h, "keyed co-process")
    assert.are.equal(3, m.records_in)
    assert.are.same({records_in = 1, watermark = 1500, idle = false, late_records_dropped = 0,
      late_records_side_output = 0}, m.inputs[1])
    assert.are.same({records_in = 2, watermark = 1000, idle = false, late_records_dropped = 0,
      late_records_side_output = 0}, m.inputs[2])
  end)

  it("a side that goes idle stops holding the watermark back, and may come back", function()
    local h = T.harness(enrich, {inputs = 2})
    h:push({id = "o2", cur = "USD"}, 3000, "left")
    h:watermark(5000, "left")
    h:watermark(1000, "right")
    assert.are.same({}, h:output())               -- held at 1000 by the right side
    assert.are.equal(1000, h:current_watermark())
    h:idle("right")
    -- only the left side counts: 5000, the timer at 3000 fires; USD has no rate
    assert.are.same({"o2@3000=none"}, h:output())
    assert.are.equal(5000, h:current_watermark())
    local m = op_metrics(h, "keyed co-process")
    assert.is_true(m.inputs[2].idle)
    assert.are.equal(1000, m.inputs[2].watermark) -- its last watermark, shown as idle
    assert.is_false(m.inputs[1].idle)
    -- back, ahead of the operator at 6000: the minimum again, min(5000, 6000)
    h:active("right")
    h:watermark(6000, "right")
    assert.are.equal(5000, h:current_watermark())
    h:watermark(7000, "left")
    assert.are.equal(6000, h:current_watermark())
    -- both idle: the operator forwards the highest of its inputs first (7000), then idle
    h:idle("right")
    assert.are.equal(7000, h:current_watermark())
    h:idle("left")
    assert.are.equal(7000, h:current_watermark())
    assert.is_true(op_metrics(h, "keyed co-process").idle)
  end)

  it("idleness of one side from the pipeline's own strategy, on the virtual clock", function()
    local h = T.harness(function(left, right)
      local st = wm.watermarks.monotonous()
      return enrich(left:assign_timestamps_and_watermarks(st),
        right:assign_timestamps_and_watermarks(st:with_idleness("1s")))
    end, {inputs = 2, watermark_interval = 0})
    h:push({cur = "EUR", r = 7}, 100, "right")    -- at processing time 0: right generates 99
    h:advance_processing_time(400)
    h:push({id = "o3", cur = "EUR"}, 2000, "left") -- left generates 1999
    h:push({id = "o4", cur = "EUR"}, 4000, "left") -- left generates 3999
    assert.are.same({}, h:output())
    assert.are.equal(99, h:current_watermark())   -- min(3999, 99)
    h:advance_processing_time(599)                 -- 999 ms: right not idle yet
    assert.are.same({}, h:output())
    h:advance_processing_time(1)                   -- 1000 ms after right's record: idle
    -- the operator follows the left side alone, 3999: o3's timer at 2000 fires, o4's waits
    assert.are.same({"o3@2000=7"}, h:output())
    assert.are.equal(3999, h:current_watermark())
    h:finish()                                     -- MAX on both: o4's timer fires
    assert.are.same({"o4@4000=7"}, h:output())
    assert.are.equal(MAX, h:current_watermark())
  end)

  it("processing-time timers and side outputs of a keyed co-process", function()
    local h = T.harness(function(left, right)
      return left:key_by("k"):connect(right:key_by("k")):process{
        process_element1 = function(r, ctx, _out)
          ctx.state.n = (ctx.state.n or 0) + r.n
          ctx.timer_service:register_processing_time_timer(ctx.timer_service:current_processing_time() + 100)
        end,
        process_element2 = function(r, ctx, out)
          if r.n < 0 then ctx:output("negative", r.n) else out(ctx.key .. " +" .. r.n) end
          ctx.state.n = (ctx.state.n or 0) + r.n
        end,
        on_timer = function(t, ctx, out) out(ctx.key .. " " .. ctx.state.n .. " at " .. t) end}
    end, {inputs = 2, processing_time = 1000, side_outputs = {"negative"}})
    h:push({k = "a", n = 1}, nil, "left")           -- a timer at 1100
    h:advance_processing_time(50)
    h:push({k = "a", n = 5}, nil, "right")          -- emits "a +5"; a's n is 6
    h:push({k = "a", n = -2}, nil, "right")         -- to the side output; a's n is 4
    h:push({k = "b", n = 3}, nil, "left")           -- b's timer at 1150
    assert.are.same({"a +5"}, h:output())
    assert.are.same({-2}, h:side_output("negative"))
    h:advance_processing_time(50)                   -- 1100: a's timer
    assert.are.same({"a 4 at 1100"}, h:output())
    h:advance_processing_time(50)                   -- 1150: b's timer
    assert.are.same({"b 3 at 1150"}, h:output())
    local m = op_metrics(h, "keyed co-process")
    assert.are.equal(2, m.inputs[1].records_in)
    assert.are.equal(2, m.inputs[2].records_in)
    assert.are.same({negative = 1}, m.side_outputs)
  end)

  it("channels per side: the minimum over every channel of both sides", function()
    local h = T.harness(enrich, {inputs = 2, channels = {left = 2}})
    h:watermark(10, "left", 1)
    h:watermark(20, "right")
    assert.are.equal(MIN, h:current_watermark())  -- left's channel 2 has none
    h:watermark(30, "left", 2)
    assert.are.equal(10, h:current_watermark())   -- min(10, 30, 20)
    local m = op_metrics(h, "keyed co-process")
    assert.are.equal(10, m.inputs[1].watermark)
    assert.are.equal(20, m.inputs[2].watermark)
    h:idle("left", 1)
    assert.are.equal(20, h:current_watermark())   -- min(30, 20)
    assert.are.equal(30, op_metrics(h, "keyed co-process").inputs[1].watermark)
    assert.has_error(function() h:watermark(1, "right", 2) end,
      "watermark: no input channel 2 on 'right' (the harness has 1)")
  end)

  it("inputs may be named; the harness inputs are named after them", function()
    local h = T.harness(enrich, {inputs = {"orders", "rates"}})
    h:push({cur = "EUR", r = 4}, 10, "rates")
    h:push({id = "o5", cur = "EUR"}, 20, "orders")
    h:finish()
    assert.are.same({"o5@20=4"}, h:output())
    assert.is_table(h:metrics()["harness input 'orders'"])
    assert.are.equal(1, h:metrics()["harness input 'rates'"].records_in)
    assert.has_error(function() h:push({}, 1, "left") end,
      'push: this harness has two inputs: say which, h:push(record, ts, "orders"|"rates") (got "left")')
  end)

  it("a checkpoint cut anywhere resumes both sides' state and timers", function()
    local steps = {
      {"push", {id = "x1", cur = "EUR"}, 100, "left"}, {"push", {cur = "EUR", r = 1}, 50, "right"},
      {"watermark", 120, "left"}, {"push", {id = "x2", cur = "USD"}, 150, "left"},
      {"watermark", 110, "right"}, {"push", {cur = "USD", r = 2}, 140, "right"},
      {"watermark", 200, "right"}, {"idle", "right"}, {"watermark", 300, "left"},
    }
    local function play(h, from, to)
      for i = from, to do
        local s = steps[i]
        h[s[1]](h, table.unpack(s, 2))
      end
    end
    local whole = T.harness(enrich, {inputs = 2})
    play(whole, 1, #steps)
    -- by hand: right's 110 makes it min(120, 110) = 110: x1's timer (100) fires with EUR's rate
    -- 1 (at 50); right's 200 gives min(120, 200) = 120 and right idle still 120, so x2's timer
    -- (150) waits for left's 300, and fires with USD's rate 2 (at 140)
    local want = whole:output()
    assert.are.same({"x1@100=1", "x2@150=2"}, want)
    for cut = 0, #steps do
      local h = T.harness(enrich, {inputs = 2})
      play(h, 1, cut)
      local got = h:output()
      local h2 = T.harness(enrich, {inputs = 2})
      h2:restore(h:snapshot())
      play(h2, cut + 1, #steps)
      for _, r in ipairs(h2:output()) do got[#got + 1] = r end
      assert.are.same(want, got, "cut after step " .. cut)
    end
  end)
end)

describe("wm.testing with two inputs: broadcast state", function()
  -- payments (keyed by user) checked against rules (broadcast): "user amount: rules broken"
  local function rules_job(events, rules)
    return events:key_by("user"):connect(rules:broadcast()):process{
      process_broadcast_element = function(r, ctx, out)
        ctx.broadcast_state[r.name] = r.limit
        out("rule " .. r.name)
      end,
      process_element = function(e, ctx, out)
        local broken = {}
        for name, limit in pairs(ctx.broadcast_state) do
          if e.amount > limit then broken[#broken + 1] = name end
        end
        table.sort(broken)
        out(e.user .. " " .. e.amount .. ": " .. table.concat(broken, ","))
        ctx.timer_service:register_event_time_timer(ctx.timestamp + 10)
      end,
      on_timer = function(t, ctx, out)
        -- the rules as they are when the timer fires, not when the payment came
        local names = {}
        for name in pairs(ctx.broadcast_state) do names[#names + 1] = name end
        table.sort(names)
        out(ctx.key .. " timer " .. t .. ": " .. table.concat(names, ","))
      end}
  end

  it("a broadcast record reaches the keyed side's view; timers see the rules of their time", function()
    local h = T.harness(rules_job, {inputs = {"payments", "rules"}})
    h:push({user = "ann", amount = 50}, 1, "payments")   -- no rules yet; timer at 11
    h:push({name = "big", limit = 100}, 2, "rules")
    h:push({user = "bob", amount = 150}, 3, "payments")  -- breaks big; timer at 13
    h:push({name = "any", limit = 0}, 4, "rules")
    h:push({user = "ann", amount = 150}, 5, "payments")  -- breaks any and big; ann's timer at 15
    assert.are.same({"ann 50: ", "rule big", "bob 150: big", "rule any", "ann 150: any,big"},
      h:output())
    h:watermark(12, "payments")
    h:watermark(20, "rules")
    -- min(12, 20) = 12: ann's timer at 11 fires and sees both rules, which came after her
    -- payment at 1; bob's (13) and ann's second (15) wait
    assert.are.same({"ann timer 11: any,big"}, h:output())
    h:idle("payments")
    -- only the rules side counts now: 20, the two other timers fire (13 then 15)
    assert.are.same({"bob timer 13: any,big", "ann timer 15: any,big"}, h:output())
    local m = op_metrics(h, "keyed broadcast process")
    assert.are.equal(5, m.records_in)
    assert.are.equal(3, m.inputs[1].records_in)
    assert.are.equal(2, m.inputs[2].records_in)
    assert.are.equal(12, m.inputs[1].watermark)
    assert.is_true(m.inputs[1].idle)
    assert.are.equal(20, m.inputs[2].watermark)
    -- ann and bob kept no ctx.state, and their timers have fired: keys that hold nothing are
    -- gone (docs/joins.md, "State that expires")
    assert.are.equal(0, m.keys)
  end)

  it("a write to the broadcast state from the keyed side fails at its line", function()
    local line
    local h = T.harness(function(events, rules)
      return events:key_by("k"):connect(rules:broadcast()):process{
        process_broadcast_element = function(r, ctx) ctx.broadcast_state.x = r end,
        process_element = function(_e, ctx)
          line = debug.getinfo(1, "l").currentline + 1
          ctx.broadcast_state.x = 1
        end}
    end, {inputs = 2})
    h:push(1, nil, "right")
    local ok, err = pcall(h.push, h, {k = 1}, nil, "left")
    assert.is_false(ok)
    assert.matches("ctx.broadcast_state is read-only in process_element (setting x)", err, 1, true)
    assert.matches("testing_two_inputs_spec.lua:" .. line, err, 1, true)
  end)
end)

describe("wm.testing with two inputs: any pipeline of two inputs", function()
  it("co-map, union and joins built from the two inputs need nothing of the harness", function()
    local h = T.harness(function(a, b)
      return a:connect(b):map(function(x) return "a" .. x end, function(x) return "b" .. x end)
    end, {inputs = 2})
    h:push(1, nil, "left")
    h:push(2, nil, "right")
    h:push(3, nil, "left")
    assert.are.same({"a1", "b2", "a3"}, h:output())
  end)

  it("says which side a call must name, and refuses sides in a one-input harness", function()
    local h = T.harness(enrich, {inputs = 2})
    assert.has_error(function() h:push({}, 1) end,
      'push: this harness has two inputs: say which, h:push(record, ts, "left"|"right") (got none)')
    assert.has_error(function() h:idle("middle") end,
      'idle: this harness has two inputs: say which, h:push(record, ts, "left"|"right") (got "middle")')
    assert.has_error(function() h:active(2) end,
      'active: this harness has two inputs: say which, h:push(record, ts, "left"|"right") (got "2")')
    local one = T.harness(function(input) return input end)
    assert.has_error(function() one:watermark(1, "left") end,
      "watermark: this harness has one input (no side 'left'); give a channel number, or create it "
      .. "with inputs = 2")
    assert.has_error(function() T.harness(enrich, {inputs = 3}) end)
    assert.has_error(function() T.harness(function(i) return i end, {channels = {left = 2}}) end,
      "harness: channels per input need inputs = 2")
    assert.has_error(function() T.harness(enrich, {inputs = 2, channels = {middle = 2}}) end,
      "harness: channels: no input 'middle' (the inputs are left and right)")
  end)
end)
