-- Parallel instances on the deterministic single-thread schedule (semantics.md §3, §9).
local wm = require("wm")
local h = require("helper")

describe("parallelism", function()
  it("key_by sends every record of a key to the same instance", function()
    local seen = {}
    local env2 = wm.env{parallelism = 3, watermark_interval = 0}
    local out = env2:from_elements({k = "a", t = 1}, {k = "b", t = 2}, {k = "a", t = 3}, {k = "c", t = 4})
      :assign_timestamps_and_watermarks(wm.watermarks.monotonous():with_timestamp_field("t"))
      :key_by("k"):window(wm.windows.tumbling("1s")):count()
      :sink(function(v) seen[#seen + 1] = v end)
    local _ = out
    env2:execute()
    local counts = {}
    for _, v in ipairs(seen) do counts[v.key] = v.count end
    assert.are.same({a = 2, b = 1, c = 1}, counts) -- one window per key: never split
  end)

  it("print prefixes lines with the 1-based instance, as Flink does", function()
    local out, err, code = h.run_job([[
local wm = require("wm")
local env = wm.env{parallelism = 2}
env:from_elements(1, 2, 3, 4):rebalance():map(function(x) return x end):print()
env:from_elements(5, 6):rebalance():map(function(x) return x end):print("tag")
env:execute()
]])
    assert.are.equal(0, code, err)
    local lines = {}
    for l in out:gmatch("[^\n]+") do lines[#lines + 1] = l end
    table.sort(lines)
    -- round robin starting at instance 1
    assert.are.same({"1> 1", "1> 3", "2> 2", "2> 4", "tag:1> 5", "tag:2> 6"}, lines)
  end)

  it("a window fires only when every parallel input has passed its end (minimum)", function()
    local env = wm.env{parallelism = 2, watermark_interval = 0}
    local out = env:from_elements({ts = 1000}, {ts = 9000}, {ts = 2000}, {ts = 12000})
      :rebalance()
      :assign_timestamps_and_watermarks(wm.watermarks.monotonous():with_timestamp_field("ts"))
      :set_parallelism(2)
      :key_by(function() return "all" end)
      :window(wm.windows.tumbling("5s"))
      :process(function(_, ctx, records, emit)
        emit({start = ctx.window.start, n = #records, wm = ctx.current_watermark})
      end)
      :collect()
    env:execute()
    -- instance 1 gets 1000 and 2000 (watermark 1999), instance 2 gets 9000 and 12000
    -- (11999): the window operator stays at the minimum, 1999, while records flow. At the
    -- end of input instance 1 ends first (MAX): the minimum becomes instance 2's 11999,
    -- which fires [0, 5 s) and [5 s, 10 s); [10 s, 15 s) waits for instance 2's MAX.
    assert.are.same({{start = 0, n = 2, wm = 11999},
                     {start = 5000, n = 1, wm = 11999},
                     {start = 10000, n = 1, wm = math.maxinteger}}, out)
  end)

  it("a union's watermark is the minimum of its inputs", function()
    local env = wm.env{watermark_interval = 0}
    local fast = env:from_elements({ts = 10000}, {ts = 20000})
      :assign_timestamps_and_watermarks(wm.watermarks.monotonous():with_timestamp_field("ts"))
    local slow = env:from_elements({ts = 1000})
      :assign_timestamps_and_watermarks(wm.watermarks.monotonous():with_timestamp_field("ts"))
    local seen = {}
    fast:union(slow):key_by(function() return 1 end):window(wm.windows.tumbling("5s"))
      :process(function(_, ctx, records, emit) emit({ctx.window.start, #records}) end)
      :sink(function(v) seen[#seen + 1] = v end)
    env:execute()
    assert.are.equal(3, #seen)
  end)

  it("a non-parallel source refuses an explicit parallelism, naming it", function()
    local env = wm.env()
    env:from_elements(1):set_parallelism(2):print()
    local ok, err = pcall(env.execute, env)
    assert.is_false(ok)
    assert.matches("from_elements cannot run in parallel: one list of elements %(set_parallelism%(2%)%)", err)
  end)

  it("wmrun -p overrides the job's parallelism", function()
    local out = h.run_job([[
local wm = require("wm")
local env = wm.env()
env:from_elements(1, 2):rebalance():map(function(x) return x end):print()
env:execute()
]], "-p 2")
    local lines = {}
    for l in out:gmatch("[^\n]+") do lines[#lines + 1] = l end
    table.sort(lines)
    assert.are.same({"1> 1", "2> 2"}, lines)
  end)
end)

describe("results do not depend on parallelism", function()
  local function multiset(out)
    local t = {}
    local function unnumbered(p) return p ~= "" and p .. "> " or "" end
    for l in out:gmatch("[^\n]+") do t[#t + 1] = (l:gsub("^(%a*):?%d+> ", unnumbered)) end
    table.sort(t)
    return t
  end
  -- c and h are left out on purpose: c's late firings and h's printed watermark depend on
  -- how far each parallel assigner's watermark has moved, which is what parallelism changes
  -- (each instance sees only part of the records; the window waits for the slowest).
  for _, name in ipairs({"a_tumbling_in_order", "b_tumbling_out_of_order", "d_sliding", "e_session",
                         "f_punctuated_generator", "i_parallel_min_watermark"}) do
    it(name .. " gives the same multiset of results at parallelism 1, 2 and 4", function()
      local job = h.root .. "/examples/" .. name .. ".lua"
      local base
      for _, p in ipairs({1, 2, 4}) do
        local out, err, code = h.wmrun("-p " .. p .. " " .. job)
        assert.are.equal(0, code, err)
        local got = multiset(out)
        assert.is_true(#got > 0)
        if base then assert.are.same(base, got) else base = got end
      end
    end)
  end
end)

describe("combining inputs", function()
  it("a union with one source far behind never makes that source's records late", function()
    local env = wm.env{watermark_interval = 0}
    local ahead, behind = {}, {}
    for i = 1, 50 do ahead[i] = {src = "ahead", ts = 100000 + i * 1000} end
    for i = 1, 50 do behind[i] = {src = "behind", ts = i * 100} end
    local function timed(list)
      return env:from_elements(list)
        :assign_timestamps_and_watermarks(wm.watermarks.monotonous():with_timestamp_field("ts"))
    end
    local counts = {}
    timed(ahead):union(timed(behind))
      :key_by("src"):window(wm.windows.tumbling("10s")):count()
      :sink(function(v) counts[v.key] = (counts[v.key] or 0) + v.count end)
    env:execute()
    -- every record of both sources is in some window: none was late
    assert.are.same({ahead = 50, behind = 50}, counts)
  end)

  it("a channel that ends first does not hold the others back, and does not end them", function()
    local h2 = wm.testing.harness(function(input)
      return input:key_by("id"):window(wm.windows.tumbling(1000)):count()
    end, {channels = 2})
    h2:push({id = "a"}, 100, 1)
    h2:push({id = "b"}, 200, 2)
    h2:watermark(math.maxinteger, 1)        -- channel 1 has ended
    assert.are.equal(math.mininteger, h2:current_watermark())
    assert.are.same({}, h2:output())
    h2:watermark(1500, 2)                   -- channel 2 alone now decides
    assert.are.equal(1500, h2:current_watermark())
    assert.are.same({{key = "a", count = 1, start = 0, stop = 1000},
                     {key = "b", count = 1, start = 0, stop = 1000}}, h2:output())
    h2:push({id = "b"}, 1600, 2)
    h2:finish()
    assert.are.same({{key = "b", count = 1, start = 1000, stop = 2000}}, h2:output())
  end)
end)

describe("non-parallel sources", function()
  it("run one instance at a higher parallelism and say so in the metrics", function()
    local _, err, code = h.wmrun("-p 2 --metrics " .. h.root .. "/examples/a_tumbling_in_order.lua")
    assert.are.equal(0, code, err)
    assert.matches("read_lines%([^\n]*%) %[one instance: one reader of one file; parallel = true reads it in parts%]",
      err)
  end)
end)
