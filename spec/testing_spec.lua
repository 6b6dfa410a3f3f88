-- wm.testing: the harness itself, idleness and periodic watermarks on a virtual clock.
local wm = require("wm")
local T = wm.testing

local function sum_windows(input)
  return input:key_by("id"):window(wm.windows.tumbling(5000)):sum("vc")
end

describe("wm.testing harness", function()
  it("fires an event-time window when a pushed watermark passes its end", function()
    local h = T.harness(sum_windows)
    h:push({id = "a", vc = 1}, 1000)
    h:push({id = "a", vc = 2}, 4999)
    h:watermark(4998)
    assert.are.same({}, h:output())
    h:watermark(4999)
    assert.are.same({{id = "a", vc = 3}}, h:output())
    assert.are.same({}, h:output()) -- output() drains
    assert.are.equal(4999, h:current_watermark())
  end)

  it("gives results their window's max timestamp", function()
    local h = T.harness(sum_windows)
    h:push({id = "a", vc = 1}, 7000)
    h:finish()
    assert.are.same({{value = {id = "a", vc = 1}, timestamp = 9999}}, h:output_records())
    assert.are.equal(math.maxinteger, h:current_watermark())
  end)

  it("combines channels by the minimum over active channels (rule 3)", function()
    local h = T.harness(sum_windows, {channels = 2})
    h:push({id = "a", vc = 1}, 1000, 1)
    h:push({id = "a", vc = 5}, 2000, 2)
    h:watermark(6000, 1)
    assert.are.same({}, h:output())          -- channel 2 holds it back
    assert.are.equal(math.mininteger, h:current_watermark())
    h:idle(2)                                -- an idle channel does not
    assert.are.same({{id = "a", vc = 6}}, h:output())
    assert.are.equal(6000, h:current_watermark())
    -- back from idle below the current watermark: it does not pull the watermark back,
    -- and counts again once it has caught up
    h:active(2)
    h:watermark(3000, 2)
    assert.are.equal(6000, h:current_watermark())
    h:watermark(9000, 1)                     -- channel 2 does not count until it catches up
    assert.are.equal(9000, h:current_watermark())
    h:watermark(9500, 2)                     -- caught up: counts again
    h:watermark(12000, 1)
    assert.are.equal(9500, h:current_watermark())
  end)

  it("forwards idle when every channel is idle, and no watermark", function()
    local h = T.harness(function(input) return input:map(function(r) return r end) end, {channels = 2})
    h:idle(1)
    h:idle(2)
    local m = h:metrics()
    assert.is_true(m["map"].idle)
    assert.are.equal(math.mininteger, h:current_watermark())
    h:watermark(10, 1)                        -- a watermark makes channel 1 active again
    assert.is_false(h:metrics()["map"].idle)
    assert.are.equal(10, h:current_watermark())
  end)

  it("emits periodic watermarks only when the virtual clock passes the interval", function()
    local h = T.harness(function(input)
      return sum_windows(input:assign_timestamps_and_watermarks(
        wm.watermarks.bounded_out_of_orderness(1000)))
    end, {watermark_interval = 200})
    h:push({id = "a", vc = 1}, 1000)
    h:push({id = "a", vc = 1}, 7000)
    assert.are.same({}, h:output())
    h:advance_processing_time(199)
    assert.are.same({}, h:output())
    h:advance_processing_time(1)           -- t = 200: watermark 7000 - 1000 - 1 = 5999
    assert.are.same({{id = "a", vc = 1}}, h:output())
    assert.are.equal(5999, h:current_watermark())
  end)

  it("turns an assigner idle after its timeout so that the other input drives the windows", function()
    local h = T.harness(function(input)
      local strat = wm.watermarks.bounded_out_of_orderness(0):with_idleness("1s")
      local a = input:filter(function(r) return r.src == "a" end):assign_timestamps_and_watermarks(strat)
      local b = input:filter(function(r) return r.src == "b" end):assign_timestamps_and_watermarks(strat)
      return sum_windows(a:union(b))
    end, {watermark_interval = 0})
    h:push({src = "a", id = "x", vc = 1}, 1000)
    h:push({src = "b", id = "x", vc = 1}, 2000)
    h:advance_processing_time(500)
    h:push({src = "a", id = "x", vc = 1}, 8000)   -- a at 7999, b still at 1999
    assert.are.same({}, h:output())
    assert.are.equal(1999, h:current_watermark())
    h:advance_processing_time(499)               -- t = 999: b saw its record at 0
    assert.are.same({}, h:output())
    h:advance_processing_time(1)                 -- t = 1000 >= 0 + 1000: b is idle
    assert.are.same({{src = "a", id = "x", vc = 2}}, h:output())
    assert.are.equal(7999, h:current_watermark())
    h:advance_processing_time(499)               -- t = 1499: a saw a record at 500
    local m = h:metrics()
    local idle = 0
    for _, op in ipairs(m) do if op.kind == "timestamps/watermarks" and op.idle then idle = idle + 1 end end
    assert.are.equal(1, idle)                    -- a saw a record at 500: active until 1500
    h:advance_processing_time(1)
    idle = 0
    for _, op in ipairs(h:metrics()) do if op.kind == "timestamps/watermarks" and op.idle then idle = idle + 1 end end
    assert.are.equal(2, idle)
  end)

  it("runs the idleness recipe of docs/testing.md: both inputs idle at once, the window fires", function()
    -- both assigners saw their last record at processing time 0, so both turn idle at
    -- 1000; the last one to turn idle makes the union flush the maximum (Flink's
    -- StatusWatermarkValve), whichever order they go in
    local h = T.harness(function(input)
      local s = wm.watermarks.bounded_out_of_orderness(0):with_idleness("1s")
      local a = input:filter(function(r) return r.src == "a" end):assign_timestamps_and_watermarks(s)
      local b = input:filter(function(r) return r.src == "b" end):assign_timestamps_and_watermarks(s)
      return a:union(b):key_by("id"):window(wm.windows.tumbling("5s")):sum("vc")
    end, {watermark_interval = 0})
    h:push({src = "a", id = "x", vc = 1}, 1000)
    h:push({src = "b", id = "x", vc = 1}, 2000)
    h:push({src = "a", id = "x", vc = 1}, 8000)  -- b holds the watermark at 1999
    assert.are.same({}, h:output())
    assert.are.equal(1999, h:current_watermark())
    h:advance_processing_time("1s")              -- b idle: the window fires
    assert.are.same({{src = "a", id = "x", vc = 2}}, h:output())
    assert.are.equal(7999, h:current_watermark())
    local m = h:metrics()
    assert.are.equal("window", m[#m].kind)
    assert.is_true(m[#m].idle)                   -- and the idle status follows
  end)

  it("reads side outputs: late data and declared tags", function()
    local h = T.harness(function(input)
      return input:key_by("id"):window(wm.windows.tumbling(5000))
        :side_output_late_data("late"):sum("vc")
    end)
    h:push({id = "a", vc = 1}, 1000)
    h:watermark(5000)
    h:push({id = "a", vc = 7}, 2000)
    assert.are.same({{id = "a", vc = 1}}, h:output())
    assert.are.same({{id = "a", vc = 7}}, h:side_output("late"))
    assert.are.same({}, h:side_output("late"))
    assert.are.same({}, h:side_output("nothing"))
  end)

  it("counts late records dropped in the metrics", function()
    local h = T.harness(sum_windows)
    h:watermark(10000)
    h:push({id = "a", vc = 7}, 2000)
    local m = h:metrics()
    assert.are.equal(1, m["tumbling window sum(vc)"].late_records_dropped)
    assert.are.equal(0, m["tumbling window sum(vc)"].open_windows)
  end)

  it("raises the pipeline's errors naming the operator and the line", function()
    local h = T.harness(function(input)
      return input:map(function(r) return r.x + 1 end)
    end)
    local ok, err = pcall(h.push, h, {x = "no"}, 1)
    assert.is_false(ok)
    assert.matches("testing_spec.lua:%d+:", err)
    assert.matches("in operator 'map", err)
    assert.has_error(function() h:push({x = 1}, 1) end)   -- failed for good
  end)

  it("checks its arguments", function()
    assert.has_error(function() T.harness(42) end)
    assert.has_error(function() T.harness(sum_windows, {channels = 0}) end)
    assert.has_error(function()
      T.harness(function(input) return input.env:from_elements(1, 2) end)
    end, nil)
    local h = T.harness(sum_windows)
    assert.has_error(function() h:push({}, 1.5) end)
    assert.has_error(function() h:push({}, 1, 2) end)
    assert.has_error(function() h:advance_processing_time(-1) end)
  end)
end)

describe("wm.testing with processing-time windows", function()
  it("fires tumbling_processing windows from the virtual clock, not the wall clock", function()
    local h = wm.testing.harness(function(input)
      return input:key_by("k"):window(wm.windows.tumbling_processing("1s")):count()
    end, {processing_time = 0})
    h:push({k = "a"}, 5)
    h:push({k = "a"}, 6)
    h:advance_processing_time(500)
    assert.are.same({}, h:output())          -- [0, 1000) is still open at t = 500
    h:push({k = "b"}, 7)
    h:advance_processing_time(600)            -- t = 1100: the window has closed
    assert.are.same({{key = "a", count = 2, start = 0, stop = 1000},
                     {key = "b", count = 1, start = 0, stop = 1000}}, h:output())
    h:push({k = "a"}, 8)
    h:advance_processing_time(1000)           -- t = 2100: [1000, 2000) fires
    assert.are.same({{key = "a", count = 1, start = 1000, stop = 2000}}, h:output())
  end)
end)
