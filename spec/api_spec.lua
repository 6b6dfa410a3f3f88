-- The Lua API of the walking skeleton, run in plain lua5.4 with require("wm").
local wm = require("wm")

local function sensors(env, list)
  return env:from_elements(list)
    :assign_timestamps_and_watermarks(
      wm.watermarks.bounded_out_of_orderness("2s"):with_timestamp_field("ts", 1000))
end

local function r(id, ts, vc) return {id = id, ts = ts, vc = vc} end

-- Runs `body` as the job script "job.lua" (its first line is line 1), with `wm` and `v` in
-- scope, and returns the error it raises.
local function job_error(body, v)
  local chunk = assert(load("local wm, v = ... " .. body, "=job.lua", "t"))
  local ok, e = pcall(chunk, wm, v)
  assert.is_false(ok, body)
  return tostring(e)
end
-- The error of the expression `expr` on a job line (not a tail call, which has no line).
local function call_error(expr, v) return job_error("local r = " .. expr .. " return r", v) end
local function two_envs_error(code) return job_error("local e1, e2 = wm.env{}, wm.env{}\n" .. code) end

describe("wm.env", function()
  it("takes parallelism, watermark_interval and time", function()
    local env = wm.env{parallelism = 1, watermark_interval = "50ms", time = "event"}
    assert.are.equal(50, env.watermark_interval)
    assert.are.equal(200, wm.env().watermark_interval) -- Flink's default
  end)
  it("rejects unknown options and bad values with clear messages", function()
    assert.has_error(function() wm.env{paralelism = 2} end,
      "env: unknown option 'paralelism' (parallelism, watermark_interval, time, threads, metrics, ui, checkpoint, "
        .. "pre_aggregate, stall_timeout, backpressure, max_parallelism)")
    assert.has_error(function() wm.env{stall_timeout = -1} end, "env: stall_timeout must not be negative")
    assert.has_error(function() wm.env{backpressure = "1MiB"} end,
      "env: backpressure must be a table {high = BYTES, low = BYTES}, got string")
    assert.has_error(function() wm.env{backpressure = {high = 0}} end,
      "env backpressure: high must be a number of bytes (an integer of at least 1), got 0")
    assert.has_error(function() wm.env{backpressure = {high = 100, low = 100}} end,
      "env backpressure: low must be a number of bytes from 1 to high - 1 (99), got 100")
    assert.has_error(function() wm.env{backpressure = {high = 100, lo = 10}} end,
      "env backpressure: unknown option 'lo' (high, low)")
    assert.are.equal(25, wm.env{backpressure = {high = 100}}.pressure_low)
    assert.are.equal(60000, wm.env{stall_timeout = "1min"}.stall_timeout)
    assert.has_error(function() wm.env{pre_aggregate = "no"} end, "env: pre_aggregate must be a boolean, got string")
    assert.has_error(function() wm.env{parallelism = 0} end, "env: parallelism must be a positive integer, got 0")
    assert.error_matches(function() wm.env{watermark_interval = "2 parsecs"} end, "bad duration '2 parsecs'")
    assert.error_matches(function() wm.env{time = "wall"} end, "time must be 'event', 'ingestion' or 'processing'")
  end)
end)

describe("sizes out of range (issue 13.16)", function()
  -- Each would allocate for every instance or the whole read buffer up front: clear errors
  -- naming the option at the job line, not "out of memory".
  it("caps parallelism and threads as the command line does", function()
    assert.are.equal("job.lua:1: env: parallelism must be at most 1024, got " .. math.maxinteger,
      call_error("wm.env{parallelism = math.maxinteger}"))
    assert.are.equal("job.lua:1: env: parallelism must be at most 1024, got 1025",
      call_error("wm.env{parallelism = 1025}"))
    assert.are.equal(1024, wm.env{parallelism = 1024}.parallelism)
    assert.are.equal("job.lua:1: set_parallelism: the parallelism must be at most 1024, got " .. math.maxinteger,
      call_error("wm.env{}:from_elements(1):map(tostring):set_parallelism(math.maxinteger)"))
    assert.are.equal("job.lua:1: env: threads must be an integer from 0 (one per core) to 256, got 257",
      call_error("wm.env{threads = 257}"))
  end)
  it("caps the read size of line sources at 64 MiB", function()
    for _, call in ipairs({"read_lines('x', {chunk = %s})", "socket_lines('127.0.0.1', 1, {chunk = %s})",
                           "listen_lines('127.0.0.1', 0, {chunk = %s})"}) do
      local name = call:match("^[%w_]+")
      assert.are.equal("job.lua:1: " .. name .. ": chunk must be at most 67108864, got " .. math.maxinteger,
        call_error("wm.env{}:" .. call:format("math.maxinteger")))
      assert.are.equal(64 << 20, wm.env{}:read_lines("x", {chunk = 64 << 20}).node.chunk)
    end
  end)
end)

describe("streams of two environments (issue 13.1)", function()
  -- Mixing them used to crash (endless recursion in the core) or print e1's records twice.
  it("is an error at the job line that builds the union", function()
    assert.are.equal("job.lua:4: union: argument 1 is a stream of another environment (made by another wm.env); "
      .. "streams of one job come from one env",
      two_envs_error("e2:from_elements('x')\nlocal c = e2:from_elements('y')\ne1:from_elements('a'):union(c):print()"))
    assert.matches("^job%.lua:3: union: argument 2 is a stream of another environment",
      two_envs_error("local a = e1:from_elements(1)\na:union(e1:from_elements(2), e2:from_elements(3))"))
  end)
  it("is an error for the Table API too", function()
    assert.are.equal("job.lua:3: from_data_stream: the stream belongs to another environment (made by another wm.env)",
      two_envs_error("local s = e2:from_elements('x')\ne1:from_data_stream(s, {'w'})"))
    assert.are.equal("job.lua:3: create_temporary_view: the stream belongs to another environment (made by another "
      .. "wm.env)", two_envs_error("local s = e2:from_elements('x')\ne1:create_temporary_view('v', s, {'w'})"))
    assert.are.equal("job.lua:3: create_temporary_view: the Table belongs to another environment (made by another "
      .. "wm.env)", two_envs_error("local t = e2:from_data_stream(e2:from_elements('x'), {'w'})\n"
      .. "e1:create_temporary_view('v', t)"))
    assert.are.equal("job.lua:3: create_temporary_view: column 1 is not a string",
      two_envs_error("local s = e1:from_elements('x')\ne1:create_temporary_view('v', s, {1})"))
  end)
  it("still unions streams of one environment", function()
    local env = wm.env{}
    local got = env:from_elements(1):union(env:from_elements(2)):collect()
    env:execute()
    table.sort(got)
    assert.are.same({1, 2}, got)
  end)
end)

describe("durations", function()
  it("accepts integers and unit strings", function()
    assert.are.equal(2000, wm.duration.ms("2s"))
    assert.are.equal(250, wm.duration.ms("250ms"))
    assert.are.equal(300000, wm.duration.ms("5 min"))
    assert.are.equal(7, wm.duration.ms(7))
  end)
  it("names the bad text", function()
    assert.error_matches(function() wm.duration.ms("1 fortnight") end, "bad duration '1 fortnight'")
    assert.error_matches(function() wm.duration.ms(1.5) end, "1.5 is not a whole number")
  end)
end)

describe("durations out of range (issue 13.15)", function()
  -- Each call as a job line: the error must be raised there ("job.lua:1: ..."), name the
  -- call and the value, and not be an internal error of the library.
  local calls = {
    {"wm.windows.tumbling(v)", "tumbling size"},
    {"wm.windows.tumbling('1s', v)", "tumbling offset"},
    {"wm.windows.sliding(v, '1s')", "sliding size"},
    {"wm.windows.sliding('10s', v)", "sliding slide"},
    {"wm.windows.sliding('10s', '1s', v)", "sliding offset"},
    {"wm.windows.session(v)", "session gap"},
    {"wm.windows.tumbling_processing(v)", "tumbling_processing size"},
    {"wm.windows.sliding_processing(v, '1s')", "sliding_processing size"},
    {"wm.windows.session_processing(v)", "session_processing gap"},
    {"wm.watermarks.bounded_out_of_orderness(v)", "bounded_out_of_orderness"},
    {"wm.watermarks.monotonous():with_idleness(v)", "with_idleness"},
    {"wm.env{watermark_interval = v}", "env watermark_interval"},
    {"wm.testing.harness(function(i) return i end, {watermark_interval = v})", "harness watermark_interval"},
    {"wm.testing.harness(function(i) return i end):advance_processing_time(v)", "advance_processing_time"},
    {"wm.env{}:from_elements(1):key_by(function() return 1 end)"
      .. ":window(wm.windows.tumbling('1s')):allowed_lateness(v)", "allowed_lateness"},
    {"wm.evictors.time(v)", "time keep"},
    {"wm.triggers.continuous_event_time(v)", "continuous_event_time interval"},
    {"wm.triggers.continuous_processing_time(v)", "continuous_processing_time interval"},
    {"wm.env{}:read_lines('x', {follow = true, poll = v})", "read_lines poll"},
    {"wm.table.tumble(v)", "tumble"},
    {"wm.table.slide(v)", "slide"},
    {"wm.table.session(v)", "session"},
    {"wm.table.slide('10s'):every(v)", "every"},
  }
  for _, value in ipairs({math.huge, -math.huge, 2^63, -2^64, 1e300}) do
    it("rejects " .. tostring(value) .. " at the job line, naming the call", function()
      for _, c in ipairs(calls) do
        local e = call_error(c[1], value)
        local want = "job.lua:1: bad duration for " .. c[2] .. ": " .. tostring(value) .. " is out of range"
        assert.are.equal(want, e:sub(1, #want), c[1] .. " -> " .. e)
      end
    end)
  end
  it("rejects NaN as not a whole number", function()
    for _, c in ipairs(calls) do
      local e = call_error(c[1], 0/0)
      assert.matches("^job%.lua:1: bad duration for " .. c[2]:gsub("%p", "%%%0") .. ": %-?nan is not a whole number", e)
    end
  end)
end)

describe("map, filter, flat_map and collect", function()
  it("transform records in order", function()
    local env = wm.env()
    local out = env:from_elements(1, 2, 3, 4)
      :map(function(x) return x * 10 end)
      :filter(function(x) return x ~= 20 end)
      :flat_map(function(x, emit) emit(x) emit(x + 1) end)
      :collect()
    env:execute()
    assert.are.same({10, 11, 30, 31, 40, 41}, out)
  end)
  it("keeps tables as they are", function()
    local env = wm.env()
    local out = env:from_elements({a = 1}, {a = 2}):map(function(t) return {a = t.a, b = t.a * 2} end):collect()
    env:execute()
    assert.are.same({{a = 1, b = 2}, {a = 2, b = 4}}, out)
  end)
  it("reject a non-function with the call's name", function()
    local env = wm.env()
    assert.has_error(function() env:from_elements(1):map(42) end, "map: expected a function, got number")
  end)
  it("a job that reaches a stream of another env fails at build time (issue 13.1), even "
    .. "past the Lua-side check", function()
    -- the plan as the C graph builder sees it: union's second input is e2's node 2, whose id
    -- means the union itself in e1 (it recursed between emit and pass_record until it crashed)
    local e1, e2 = wm.env(), wm.env()
    e2:from_elements("x")
    local c = e2:from_elements("y")
    local s = e1:from_elements("a")
    local u = s:union(s)
    u.node.inputs[2] = c.node
    u:collect()
    local ok, err = pcall(e1.execute, e1)
    assert.is_false(ok)
    assert.matches("api_spec.lua:%d+: union: input 2 is a stream of another environment %(wm.env%)", err)
  end)

  it("a coroutine.yield inside map names the job's line (issue 13.17)", function()
    local env = wm.env()
    env:from_elements(1):map(function(v)
      coroutine.yield(v)
      return v
    end):collect()
    local ok, err = pcall(env.execute, env)
    assert.is_false(ok)
    assert.matches("^[^\n]*api_spec.lua:%d+: attempt to yield from outside a coroutine\n  in operator 'map", err)
  end)

  it("flat_map's emit(nil) is an argument error, not a nil record", function()
    local env = wm.env()
    env:from_elements(1):flat_map(function(_x, emit) emit(nil) end):collect()
    local ok, err = pcall(env.execute, env)
    assert.is_false(ok)
    assert.matches("api_spec.lua:%d+: bad argument #1 to 'emit' %(record expected, got nil%)", err)
  end)
end)

describe("tumbling event-time windows", function()
  local data = {r("a", 1, 1), r("b", 2, 5), r("a", 3, 2), r("a", 6, 4), r("b", 12, 1)}

  it("reduce with a Lua function, firing on the watermark and at the end of input", function()
    local env = wm.env{watermark_interval = 0}
    local out = sensors(env, data):key_by("id"):window(wm.windows.tumbling("5s"))
      :reduce(function(a, b) return {id = a.id, ts = a.ts, vc = a.vc + b.vc} end):collect()
    env:execute()
    -- b at 12 s moves the watermark to 9.999 s: [0, 5) fires for a then b (creation order);
    -- [5, 10) for a fires too; [10, 15) for b at the end
    assert.are.same({r("a", 1, 3), r("b", 2, 5), r("a", 6, 4), r("b", 12, 1)}, out)
  end)

  it("sum, min, max keep the first record with the field replaced", function()
    for agg, want in pairs({sum = 7, min = 1, max = 4}) do
      local env = wm.env{watermark_interval = 0}
      local ws = sensors(env, {r("a", 1, 2), r("a", 2, 1), r("a", 3, 4)})
        :key_by("id"):window(wm.windows.tumbling("5s"))
      local out = ws[agg](ws, "vc"):collect()
      env:execute()
      assert.are.same({r("a", 1, want)}, out)
    end
  end)

  it("min_by / max_by give the whole record, first on ties", function()
    local env = wm.env{watermark_interval = 0}
    local s = sensors(env, {r("a", 1, 2), r("a", 2, 1), r("a", 3, 1), r("a", 4, 2)})
    local mn = s:key_by("id"):window(wm.windows.tumbling("5s")):min_by("vc"):collect()
    local mx = s:key_by("id"):window(wm.windows.tumbling("5s")):max_by("vc"):collect()
    env:execute()
    assert.are.same({r("a", 2, 1)}, mn)
    assert.are.same({r("a", 1, 2)}, mx)
  end)

  it("count() gives {key, count, start, stop}", function()
    local env = wm.env{watermark_interval = 0}
    local out = sensors(env, data):key_by("id"):window(wm.windows.tumbling("5s")):count():collect()
    env:execute()
    assert.are.same({
      {key = "a", count = 2, start = 0, stop = 5000},
      {key = "b", count = 1, start = 0, stop = 5000},
      {key = "a", count = 1, start = 5000, stop = 10000},
      {key = "b", count = 1, start = 10000, stop = 15000},
    }, out)
  end)

  it("keys by a function and by a list of fields", function()
    local env = wm.env{watermark_interval = 0}
    local s = sensors(env, {{id = "a", k = 1, ts = 1, vc = 1}, {id = "a", k = 2, ts = 2, vc = 1},
                            {id = "a", k = 1, ts = 3, vc = 1}})
    local byfn = s:key_by(function(e) return e.id .. e.k end):window(wm.windows.tumbling("5s")):count():collect()
    local bylist = s:key_by({"id", "k"}):window(wm.windows.tumbling("5s")):count():collect()
    env:execute()
    assert.are.same({{key = "a1", count = 2, start = 0, stop = 5000},
                     {key = "a2", count = 1, start = 0, stop = 5000}}, byfn)
    assert.are.same({{key = {"a", 1}, count = 2, start = 0, stop = 5000},
                     {key = {"a", 2}, count = 1, start = 0, stop = 5000}}, bylist)
  end)

  it("offsets and negative timestamps", function()
    local env = wm.env{watermark_interval = 0}
    local out = env:from_elements({id = "a", t = -1}, {id = "a", t = 1999}, {id = "a", t = 2000})
      :assign_timestamps_and_watermarks(wm.watermarks.monotonous():with_timestamp_field("t"))
      :key_by("id"):window(wm.windows.tumbling("5s", "2s")):count():collect()
    env:execute()
    assert.are.same({{key = "a", count = 2, start = -3000, stop = 2000},
                     {key = "a", count = 1, start = 2000, stop = 7000}}, out)
  end)

  it("no_watermarks fires only at the end of input", function()
    local env = wm.env{watermark_interval = 0}
    local seen = {}
    env:from_elements(r("a", 1, 1), r("a", 100, 1))
      :assign_timestamps_and_watermarks(wm.watermarks.no_watermarks():with_timestamp_field("ts", 1000))
      :key_by("id"):window(wm.windows.tumbling("5s")):count()
      :sink(function(v, ctx) seen[#seen + 1] = {v.start, ctx.timestamp, ctx.current_watermark} end)
    env:execute()
    -- results carry the window's max timestamp; they reach the sink before the watermark
    -- that fired them (as in Flink), so the sink still sees no watermark
    assert.are.same({{0, 4999, math.mininteger}, {100000, 104999, math.mininteger}}, seen)
  end)
end)

describe("bad input", function()
  it("a timestamp assigner returning a non-integer stops the job naming operator, record and line", function()
    local env = wm.env{watermark_interval = 0}
    env:from_elements({id = "a", ts = 1.5})
      :assign_timestamps_and_watermarks(wm.watermarks.monotonous()
        :with_timestamp_assigner(function(e) return e.ts end))
      :key_by("id"):window(wm.windows.tumbling("5s")):count():collect()
    local ok, err = pcall(env.execute, env)
    assert.is_false(ok)
    assert.matches("timestamp assigner returned 1.5 %(expected an integer number of ms%)", err)
    assert.matches("in operator 'timestamps/watermarks %(.-api_spec.lua:%d+%)'", err)
    assert.matches('on record {"id":"a","ts":1.5}', err, 1, true)
  end)
  it("a missing timestamp field is named", function()
    local env = wm.env{watermark_interval = 0}
    env:from_elements({id = "a"}):assign_timestamps_and_watermarks(
      wm.watermarks.monotonous():with_timestamp_field("ts")):collect()
    local ok, err = pcall(env.execute, env)
    assert.is_false(ok)
    assert.matches("timestamp field 'ts' is missing in record {\"id\":\"a\"}", err, 1, true)
  end)
  it("fields of Lua records are read with their metamethods, and a bad field or record is named", function()
    -- key_by("id") and with_timestamp_field("ts") on Lua tables (the bridge's field reads):
    -- an __index metamethod answers, a boolean and a float-valued integer key
    local env = wm.env{watermark_interval = 0}
    local proto = {__index = function(_, k) if k == "ts" then return 7 end end}
    local out = env:from_elements(setmetatable({id = true}, proto), {id = 2.0, ts = 8}, {id = 2, ts = 9})
      :assign_timestamps_and_watermarks(wm.watermarks.monotonous():with_timestamp_field("ts"))
      :key_by("id"):window(wm.windows.tumbling("5s")):count():collect()
    env:execute()
    assert.are.same({{key = true, count = 1, start = 0, stop = 5000},
                     {key = 2, count = 2, start = 0, stop = 5000}}, out)
    local function fails(records, what)
      local e = wm.env{watermark_interval = 0}
      e:from_elements(table.unpack(records)):map(function(x) return x.f or x end)
        :assign_timestamps_and_watermarks(wm.watermarks.monotonous():with_timestamp_field("ts"))
        :collect()
      local ok, err = pcall(e.execute, e)
      assert.is_false(ok)
      assert.matches(what, err, 1, true)
    end
    fails({{id = "a", ts = {}}}, "field 'ts' is a table, not a string, number or boolean")
    fails({{id = "a", ts = print}}, "field 'ts' is a function, not a string, number or boolean")
    fails({{f = print}}, "cannot read field 'ts' of a function (expected a table record)")
  end)
  it("a window without timestamps says what to add", function()
    local env = wm.env()
    env:from_elements({id = "a"}):key_by("id"):window(wm.windows.tumbling("1s")):count():collect()
    local ok, err = pcall(env.execute, env)
    assert.is_false(ok)
    assert.matches("record has no timestamp (math.mininteger); did you forget assign_timestamps_and_watermarks?",
                   err, 1, true)
  end)
  it("a sum over a non-number field names the field and record", function()
    local env = wm.env{watermark_interval = 0}
    sensors(env, {{id = "a", ts = 1, vc = "x"}}):key_by("id"):window(wm.windows.tumbling("5s")):sum("vc"):collect()
    local ok, err = pcall(env.execute, env)
    assert.is_false(ok)
    assert.matches("sum('vc'): field 'vc' is not a number in record {\"id\":\"a\",\"ts\":1,\"vc\":\"x\"}", err, 1, true)
  end)
  it("a user error keeps its message and traceback, and the job can be inspected after", function()
    local env = wm.env()
    local out = env:from_elements(1, 2, 3):map(function(x)
      if x == 3 then error("three!") end
      return x
    end):collect()
    local ok, err = pcall(env.execute, env)
    assert.is_false(ok)
    assert.matches("api_spec.lua:%d+: three!", err)
    assert.matches("stack traceback:", err)
    assert.are.same({1, 2}, out)
  end)
  it("an environment runs once", function()
    local env = wm.env()
    env:from_elements(1):collect()
    env:execute()
    assert.has_error(function() env:execute() end)
  end)
end)

describe("wm.format", function()
  it("prints like Flink's print(): JSON with sorted keys, sequences as arrays", function()
    assert.are.equal('{"id":"ws_001","ts":1577844001,"vc":3}',
      wm.format.tostring({vc = 3, id = "ws_001", ts = 1577844001}))
    assert.are.equal("[1,2,\"x\"]", wm.format.tostring({1, 2, "x"}))
    assert.are.equal("hello", wm.format.tostring("hello"))
    assert.are.equal("2.0", wm.format.tostring(2.0))
    assert.are.equal("{}", wm.format.tostring({}))
    assert.are.equal('{"a":{"b":[true,false]}}', wm.format.tostring({a = {b = {true, false}}}))
    assert.are.equal("P(1)", wm.format.tostring(setmetatable({}, {__tostring = function() return "P(1)" end})))
    assert.are.equal('"q\\"x"', wm.format.json('q"x'))
  end)

  it("sorts the keys of tables of one shape alike, whatever their insertion order (cached per shape)", function()
    local t1 = {}
    t1.vc = 1; t1.id = "a"; t1.ts = 2
    local t2 = {}
    t2.ts = 2; t2.vc = 1; t2.id = "a"
    for _ = 1, 3 do
      assert.are.equal('{"id":"a","ts":2,"vc":1}', wm.format.tostring(t1))
      assert.are.equal('{"id":"a","ts":2,"vc":1}', wm.format.tostring(t2))
    end
    t2.ts = nil -- another shape, then the first again
    assert.are.equal('{"id":"a","vc":1}', wm.format.tostring(t2))
    t2.ts = 2
    assert.are.equal('{"id":"a","ts":2,"vc":1}', wm.format.tostring(t2))
    -- byte order of prefixes and escapes; a key of more than 40 bytes; nested tables
    local long = string.rep("z", 41)
    local t = {ab = 3, a = 1, ["a\0"] = 2, ['q"'] = 4, [long] = 5, n = {ab = 3, a = 1}}
    local want = '{"a":1,"a\\u0000":2,"ab":3,"n":{"a":1,"ab":3},"q\\"":4,"' .. long .. '":5}'
    assert.are.equal(want, wm.format.tostring(t))
    assert.are.equal(want, wm.format.tostring(t))
    -- more shapes than the cache holds, twice round
    for _ = 1, 2 do
      for i = 1, 200 do
        local k = string.format("k%03d", i)
        assert.are.equal(string.format('{"a":%d,"%s":"v"}', i, k), wm.format.tostring({[k] = "v", a = i}))
      end
    end
    -- more than sixteen keys, and keys that are not strings
    local many, parts = {}, {}
    for i = 1, 20 do
      many[string.format("f%02d", i)] = i
      parts[#parts + 1] = string.format('"f%02d":%d', i, i)
    end
    assert.are.equal("{" .. table.concat(parts, ",") .. "}", wm.format.tostring(many))
    assert.are.equal('{"1":"x","b":true}', wm.format.tostring({[1] = "x", b = true}))
  end)
end)
