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
    assert.matches("from_elements cannot run in parallel %(set_parallelism%(2%)%)", err)
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
