-- Pre-aggregation before the key exchange (docs/performance.md, "Pre-aggregation"): a
-- built-in sum/min/max over a file read in parts aggregates each part locally; only partials
-- (and records late for the part's own watermark) cross to the window, which merges them.
local h = require("helper")

local sorted = h.sorted_lines

-- n lines id,ts,vc,tag: keys of 2 to 12 bytes (packed and retained first records), the
-- timestamps `disorder` ms out of order at most, every record's own tag (the first record
-- of a window shows which one it is)
local function gen(n, seed, disorder, keys)
  math.randomseed(seed)
  local t, out = 0, {}
  for i = 1, n do
    t = t + math.random(0, 40)
    local k = math.random(1, keys or 7)
    out[i] = string.format("%s,%d,%d,r%d", ("k"):rep(k) .. k, math.max(0, t - math.random(0, disorder)),
      math.random(-5, 9), i)
  end
  return table.concat(out, "\n") .. "\n"
end

-- A job on arg[1]: parse_csv, timestamps with a 1 s bound, the window of `win` (the lines
-- after key_by), printed; pre_aggregate from the environment (NOPRE=1: off).
local function job(win)
  return h.write_tmp([[
local wm = require("wm")
local env = wm.env{pre_aggregate = os.getenv("NOPRE") == nil}
local w = env:read_lines(arg[1], {parallel = true})
  :parse_csv{"id", "ts:integer", "vc:integer", "tag"}
  :assign_timestamps_and_watermarks(
    wm.watermarks.bounded_out_of_orderness("1s"):with_timestamp_field("ts"))
  :key_by("id")
]] .. win .. "\nenv:execute()\n", ".lua")
end

-- The Lua path (bench/lua_path.lua): a Lua map parses the line, a Lua timestamp assigner,
-- a Lua key function; the window of `win` (the lines after key_by), printed.
local function lua_job(win)
  return h.write_tmp([[
local wm = require("wm")
local env = wm.env{pre_aggregate = os.getenv("NOPRE") == nil}
local w = env:read_lines(arg[1], {parallel = true})
  :map(function(line)
    local id, ts, vc, tag = line:match("^([^,]+),(%d+),(%-?%d+),(.*)$")
    return {id = id, ts = tonumber(ts), vc = tonumber(vc), tag = tag}
  end)
  :assign_timestamps_and_watermarks(
    wm.watermarks.bounded_out_of_orderness("1s"):with_timestamp_assigner(function(e) return e.ts end))
  :key_by(function(e) return e.id end)
]] .. win .. "\nenv:execute()\n", ".lua")
end

-- a reduce that keeps the first record's ts and concatenates the tags (associative, not
-- commutative: the result shows the order the records were folded in)
local REDUCE = [[:window(wm.windows.tumbling("3s"))
  :reduce(function(a, b) return {id = a.id, ts = a.ts, vc = a.vc + b.vc, tag = a.tag .. "+" .. b.tag} end)
  :print()]]
local REDUCE_PROCESS = [[:window(wm.windows.tumbling("3s"))
  :reduce(function(a, b) return {id = a.id, ts = a.ts, vc = a.vc + b.vc, tag = a.tag .. "+" .. b.tag} end,
    function(key, ctx, rs, out)
      out({key = key, start = ctx.window.start, n = #rs, ts = rs[1].ts, tag = rs[1].tag})
    end)
  :print()]]
-- a reduce whose result has another key than its records (the partials carry their key)
local REDUCE_REKEY = [[:window(wm.windows.tumbling("3s"))
  :reduce(function(a, b) return {id = "all", ts = a.ts, vc = a.vc + b.vc, tag = a.tag .. "+" .. b.tag} end)
  :print()]]
-- the same with an aggregate: the accumulator is not a record (no id in it)
local AGGREGATE = [[:window(wm.windows.tumbling("3s"))
  :aggregate{
    create = function() return {n = 0, vc = 0} end,
    add = function(a, r) return {n = a.n + 1, vc = a.vc + r.vc, ts = a.ts or r.ts,
                                 tag = a.tag and a.tag .. "+" .. r.tag or r.tag} end,
    merge = function(a, b) return {n = a.n + b.n, vc = a.vc + b.vc, ts = a.ts or b.ts,
                                   tag = a.tag and b.tag and a.tag .. "+" .. b.tag or a.tag or b.tag} end,
    result = function(a) return {n = a.n, vc = a.vc, ts = a.ts, tag = a.tag} end}
  :print()]]

local function run(jp, data, args, nopre)
  local out, err, code = h.sh((nopre and "NOPRE=1 " or "") .. h.wmrun_bin .. " " .. args .. " "
    .. jp .. " " .. data)
  assert.are.equal(0, code, err)
  return out, err
end

-- the records-in column of the --metrics row whose name starts with prefix (summed)
local function metric_in(err, prefix)
  local sum, rows = 0, 0
  for l in err:gmatch("[^\n]+") do
    if l:sub(1, #prefix) == prefix then
      local a = l:sub(#prefix + 1):match("%s(%d+)%s+%d+%s")
      sum, rows = sum + tonumber(a), rows + 1
    end
  end
  return sum, rows
end

describe("pre-aggregation", function()
  local files = {}
  after_each(function()
    for _, f in ipairs(files) do os.remove(f) end
    files = {}
  end)
  local function tmp(text, suffix)
    local p = h.write_tmp(text, suffix)
    files[#files + 1] = p
    return p
  end

  it("sends partials across the key exchange, not records", function()
    local data = tmp(gen(4000, 1, 500, 5))
    local jp = job([[:window(wm.windows.tumbling("5s")):sum("vc"):print()]])
    files[#files + 1] = jp
    local _, err = run(jp, data, "-p 2 --metrics")
    local crossed, xs = metric_in(err, "key_by to ")
    local pre_in, ps = metric_in(err, "pre-aggregation of ")
    assert.are.equal(2, xs)
    assert.are.equal(2, ps)
    assert.are.equal(4000, pre_in)
    -- 4000 records over about 80 s of event time, 5 keys: some 16 windows per key, at most
    -- two partials each (one per part), and no record late for its own part
    assert.is_true(crossed <= 2 * 5 * 18, "crossed " .. crossed)
    local _, err2 = run(jp, data, "-p 2 --metrics", true)
    local crossed2 = metric_in(err2, "key_by to ")
    assert.are.equal(4000, crossed2)
    assert.are.equal(0, select(2, metric_in(err2, "pre-aggregation of ")))
  end)

  -- With records late for their part, what is late at the window depends on how far the
  -- other parts have got (on one thread too: the parts are read in the order their reads
  -- complete), with or without pre-aggregation; spec/c/test_snapshot.c ("pre-aggregated
  -- sum, interleaving n") runs both on the same interleavings and compares.

  it("on two threads gives the results of one reader: the first record of a window is the file's first", function()
    -- no record late for its part (disorder 900 ms, bound 1 s): nothing depends on timing,
    -- and one reader (-p 1) sees the same records in every window. Windows that span the two
    -- parts get records from both; the second part reaches them first, at its start.
    local data = tmp(gen(6000, 7, 900))
    for _, fn in ipairs{"sum", "min", "max", "count"} do
      local jp = job((":window(wm.windows.tumbling(\"3s\")):%s(%s):print()"):format(fn,
        fn == "count" and "" or "\"vc\""))
      files[#files + 1] = jp
      local one = sorted(run(jp, data, "-p 1"))
      assert.is_true(#one > 100)
      for _, args in ipairs{"-p 2 --threads 2", "-p 2 --threads 2 --watermark-interval 0",
                            "-p 3 --threads 2", "-p 2"} do
        assert.are.same(one, sorted(run(jp, data, args), true), fn .. " " .. args)
      end
    end
  end)

  it("sends partials of a Lua reduce and of an aggregate with merge across the key exchange, not records", function()
    local data = tmp(gen(4000, 1, 500, 5))
    for _, win in ipairs{REDUCE, REDUCE_PROCESS, AGGREGATE} do
      local jp = lua_job(win)
      files[#files + 1] = jp
      local _, err = run(jp, data, "-p 2 --metrics")
      local crossed, xs = metric_in(err, "key_by to ")
      assert.are.equal(2, xs)
      assert.are.equal(2, select(2, metric_in(err, "pre-aggregation of ")))
      -- about 27 windows per key of 3 s, 5 keys, at most two partials each
      assert.is_true(crossed <= 2 * 5 * 29, "crossed " .. crossed)
      local _, err2 = run(jp, data, "-p 2 --metrics", true)
      assert.are.equal(4000, (metric_in(err2, "key_by to ")))
      assert.are.equal(0, select(2, metric_in(err2, "pre-aggregation of ")))
    end
  end)

  it("folds a Lua reduce and an aggregate's merge in the file's order: two threads and three parts give "
     .. "one reader's results", function()
    -- no record late for its part (disorder 900 ms, bound 1 s): one reader (-p 1) sees the
    -- same records in every window; the windows that span two parts get partials of both,
    -- the second part's first (it reaches them at its start)
    local data = tmp(gen(6000, 7, 900))
    for _, win in ipairs{REDUCE, REDUCE_PROCESS, REDUCE_REKEY, AGGREGATE} do
      local jp = lua_job(win)
      files[#files + 1] = jp
      local one = sorted(run(jp, data, "-p 1"))
      assert.is_true(#one > 100)
      assert.is_truthy(one[1]:find("+", 1, true))
      for _, args in ipairs{"-p 2 --threads 2", "-p 2 --threads 2 --watermark-interval 0",
                            "-p 3 --threads 2", "-p 3"} do
        assert.are.same(one, sorted(run(jp, data, args), true), win .. " " .. args)
      end
    end
  end)

  it("keeps every record of a Lua reduce or aggregate once, in a firing or as late, with records late for "
     .. "their part", function()
    -- which records are late at the window depends on timing; that each one is in exactly
    -- one firing (its tag once in one result) or among the late drops does not
    local data = tmp(gen(3000, 5, 3000))
    local reduce = lua_job([[:window(wm.windows.tumbling("2s"))
  :reduce(function(a, b) return {id = a.id, ts = a.ts, vc = a.vc + b.vc, tag = a.tag .. "+" .. b.tag} end)
  :print()]])
    local aggregate = lua_job([[:window(wm.windows.tumbling("2s"))
  :aggregate{create = function() return "" end, add = function(a, r) return a .. "+" .. r.tag end,
             merge = function(a, b) return a .. b end, result = function(a) return {tag = a} end}
  :print()]])
    files[#files + 1] = reduce
    files[#files + 1] = aggregate
    for _, jp in ipairs{reduce, aggregate} do
      for _, args in ipairs{"-p 2", "-p 2 --threads 2", "-p 3 --threads 2"} do
        local out, err = run(jp, data, "--watermark-interval 0 --metrics " .. args)
        local seen, n = {}, 0
        for t in out:gmatch('"tag":"([^"]*)"') do
          for r in t:gmatch("[^+]+") do
            assert.is_nil(seen[r], r .. " twice")
            seen[r], n = true, n + 1
          end
        end
        local dropped = 0
        for l in err:gmatch("[^\n]+") do
          if l:match("^tumbling window ") then dropped = dropped + tonumber(l:match("(%d+)%s+%d+%s+%d+%s*$")) end
        end
        assert.is_true(dropped > 0, args .. ": no record late at the window")
        assert.are.equal(3000, n + dropped, args)
        assert.are.equal(args:match("-p (%d)") + 0, select(2, metric_in(err, "pre-aggregation of ")))
      end
    end
  end)

  it("a checkpoint of a pre-aggregated reduce is refused by the job without pre-aggregation, and back", function()
    local lines = {}
    for i = 1, 200 do lines[i] = ("k%d,%d,%d,r%d"):format(i % 3, i * 50, i % 7, i) end
    local data = tmp(table.concat(lines, "\n") .. "\n")
    local jp = lua_job([[:window(wm.windows.tumbling("1s")):reduce(function(a, b) return a end):print()]])
    files[#files + 1] = jp
    local dir = h.tmpdir()
    local ck = " -p 2 --checkpoint-dir " .. dir .. "/ck " .. jp .. " " .. data
    for _, case in ipairs{{"", "NOPRE=1 ", ", merges partials\n  and is now\n    [^\n]*event_time 0\n"},
                          {"NOPRE=1 ", "", "event_time 0\n  and is now\n    [^\n]*, merges partials\n"}} do
      os.execute("rm -rf " .. dir .. "/ck")
      -- the run's first checkpoint is taken before the first record; crash right after it
      local _, e1, c1 = h.sh(case[1] .. "WM_CKPT_CRASH=after-manifest:1 " .. h.wmrun_bin .. ck)
      assert.are.equal(99, c1, e1)
      local _, e2, c2 = h.sh(case[2] .. h.wmrun_bin .. ck)
      assert.are_not.equal(0, c2)
      assert.matches("the checkpoint's window operator differs from this job's", e2, 1, true)
      assert.matches(case[3], e2)
      assert.matches("(the job changed since the checkpoint)", e2, 1, true)
    end
    h.rmdir(dir)
  end)

  it("counts every record once, in a window or as late, with records late for their part", function()
    -- which records are late at the window depends on timing; that each is counted in
    -- exactly one firing or dropped as late (no lateness: one firing per window) does not
    local data = tmp(gen(3000, 5, 3000))
    local jp = job([[:window(wm.windows.tumbling("2s")):count():print()]])
    files[#files + 1] = jp
    for _, case in ipairs{{"-p 2", 2}, {"-p 2 --threads 2", 2}, {"-p 3 --threads 2", 3}} do
      local args = case[1]
      local out, err = run(jp, data, "--watermark-interval 0 --metrics " .. args)
      local counted = 0
      for c in out:gmatch('"count":(%d+)') do counted = counted + tonumber(c) end
      local late = 0
      for l in err:gmatch("[^\n]+") do
        if l:match("^tumbling window count") then late = late + tonumber(l:match("(%d+)%s+%d+%s+%d+%s*$")) end
      end
      assert.is_true(late > 0, args .. ": no record late at the window")
      assert.are.equal(3000, counted + late, args)
      assert.are.equal(case[2], select(2, metric_in(err, "pre-aggregation of ")))
    end
  end)

  it("does not apply where it could change results: a Lua map or a number column with sum, count, a "
     .. "reduce or an aggregate with a late side output, an aggregate without merge, process, a reduce over more than "
     .. "256 parts, sliding windows, a window at parallelism 1", function()
    local data = tmp(gen(500, 4, 500))
    for _, case in ipairs{
      {[[:window(wm.windows.tumbling("5s")):count():print()]], applies = true},
      {[[:window(wm.windows.tumbling("5s")):side_output_late_data("l"):count():print()]]},
      {[[:window(wm.windows.tumbling("5s")):min_by("vc"):print()]]},
      {[[:window(wm.windows.tumbling("5s")):reduce(function(a, b) return a end):print()]], applies = true},
      {[[:window(wm.windows.tumbling("5s")):side_output_late_data("l"):reduce(function(a, b) return a end)
           :print()]]},
      {[[:window(wm.windows.tumbling("5s")):aggregate{create = function() return 0 end,
           add = function(a) return a + 1 end, result = function(a) return {n = a} end}:print()]]},
      {[[:window(wm.windows.tumbling("5s")):side_output_late_data("l"):aggregate{create = function() return 0 end,
           add = function(a) return a + 1 end, result = function(a) return {n = a} end,
           merge = function(a, b) return a + b end}:print()]]},
      {[[:window(wm.windows.tumbling("5s")):aggregate{create = function() return 0 end,
           add = function(a) return a + 1 end, result = function(a) return {n = a} end,
           merge = function(a, b) return a + b end}:print()]], applies = true},
      {[[:window(wm.windows.tumbling("5s")):process(function(k, c, rs, out) out({n = #rs}) end):print()]]},
      {[[:window(wm.windows.sliding("4s", "2s")):sum("vc"):print()]]},
      {[[:window(wm.windows.tumbling("5s")):sum("ts"):print()]], applies = true},
      {[[:window(wm.windows.tumbling("5s")):max("vc"):print()]], applies = true},
      {[[:window(wm.windows.tumbling("5s")):count():set_parallelism(1):print()]]},
      {[[:window(wm.windows.tumbling("5s")):sum("vc"):set_parallelism(1):print()]]},
    } do
      local jp = job(case[1])
      files[#files + 1] = jp
      local _, err = run(jp, data, "-p 2 --metrics")
      assert.are.equal(case.applies and 2 or 0, select(2, metric_in(err, "pre-aggregation of ")), case[1])
    end
    -- a reduce over more parts than the window tells apart (256 channels): per record
    local jr = lua_job(REDUCE)
    files[#files + 1] = jr
    assert.are.equal(256, select(2, metric_in(select(2, run(jr, data, "-p 256 --metrics")), "pre-aggregation of ")))
    assert.are.equal(0, select(2, metric_in(select(2, run(jr, data, "-p 257 --metrics")), "pre-aggregation of ")))
    -- a map between the parse and the window, and a number column: per record
    for _, src in ipairs{
      [[:parse_csv{"id", "ts:integer", "vc:integer", "tag"}:map(function(r) return r end)]],
      [[:parse_csv{"id", "ts:integer", "vc:number", "tag"}]],
      [[:parse_csv{"id", "ts:integer", "vc:integer?", "tag"}]],
    } do
      local jp = tmp([[
local wm = require("wm")
local env = wm.env()
env:read_lines(arg[1], {parallel = true})]] .. src .. [[

  :assign_timestamps_and_watermarks(
    wm.watermarks.bounded_out_of_orderness("1s"):with_timestamp_field("ts"))
  :key_by("id"):window(wm.windows.tumbling("5s")):sum("vc"):print()
env:execute()
]], ".lua")
      local _, err = run(jp, data, "-p 2 --metrics")
      assert.are.equal(0, select(2, metric_in(err, "pre-aggregation of ")), src)
    end
  end)
end)
