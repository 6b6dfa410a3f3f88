-- Arrival replay as a general feature (issue 17; docs/lab.md "Arrival replay in a job"):
-- jobs whose read_lines sources have arrival times run on the virtual clock with their file
-- and socket sinks, --metrics, parse_json columns, several sources and parallelism. Every
-- expected output is worked out by hand in the comment above it.
local h = require("helper")

-- A temporary directory of the test's own, removed after it.
local dir
before_each(function() dir = h.tmpdir() end)
after_each(function() h.rmdir(dir) end)

local function write(name, text)
  local f = assert(io.open(dir .. "/" .. name, "wb"))
  f:write(text)
  f:close()
end

local function read(name) return h.read_or_empty(dir .. "/" .. name) end

-- Runs a job (its text, with DIR standing for the test's directory) under wmrun.
local function run(text, args)
  write("job.lua", 'local wm = require("wm")\nlocal DIR = ' .. string.format("%q", dir) .. "\n" .. text)
  return h.wmrun((args and (args .. " ") or "") .. "'" .. dir .. "/job.lua'")
end

-- Sensor readings: key, event time, value, arrival (in arrival order but for the last line).
local SENSORS = table.concat({
  "a,100,1,100",
  "a,900,2,950",
  "b,1200,3,1250",
  "a,700,4,1700",
  "b,2100,5,2200",
}, "\n") .. "\n"

-- Clicks as JSON lines, with their arrival field.
local CLICKS = table.concat({
  '{"k":"a","ts":300,"v":10,"arrival":950}',
  '{"k":"b","ts":1500,"v":20,"arrival":1600}',
  '{"k":"a","ts":2500,"v":30,"arrival":2600}',
}, "\n") .. "\n"

local SENSOR_SOURCE = [[
local sensors = env:read_lines(DIR .. "/sensors.csv", {arrival = "arrival"})
  :parse_csv{"k", "ts:integer", "v:integer", "arrival:integer"}
]]

-- The window function of the windowed jobs here: "key@start n=records at processing time".
local LABEL = [[
  :process(function(key, ctx, records, out)
    out(key .. "@" .. ctx.window.start .. " n=" .. #records .. " at " .. ctx.current_processing_time)
  end)
]]

-- A job that succeeded, with nothing on stderr and `want` on stdout.
local function assert_ran(want, out, err, code)
  assert.are.equal("", err)
  assert.are.equal(0, code)
  assert.are.equal(want, out)
end

-- One source, bounded_out_of_orderness(500 ms), 1 s event-time windows, periodic emissions
-- every 200 ms from the first arrival (100): at 300, 500, ..., 1100 (max ts 900: W = 399),
-- 1300 (1200: W = 699), 1500, 1700 (W = 699: the emission due at 1700 comes before the
-- record arriving at 1700), ... The record a@700 arrives at 1700 with W = 699: on time,
-- a's [0,1000) holds 3 records. The file ends at 2200: MAX fires the rest in timer order
-- (999, then 1999: a and b in the order their windows were created, then 2999).
local WINDOWS = SENSOR_SOURCE .. [[
local counts = sensors
  :assign_timestamps_and_watermarks(wm.watermarks.bounded_out_of_orderness("500ms"):with_timestamp_field("ts"))
  :key_by("k"):window(wm.windows.tumbling("1s"))
]] .. LABEL
local WINDOWS_WANT = "a@0 n=3 at 2200\nb@1000 n=1 at 2200\nb@2000 n=1 at 2200\n"

-- bounded_out_of_orderness(0) on the same file: at 1100, W = 900 - 1 = 899; at 1300
-- (b1200 arrived at 1250), W = 1199 fires a's [0,1000) with 2 records at 1300; a700
-- (1700) is then late and dropped (--metrics: late 1); the file ends right after its last
-- line (2200), and MAX fires b's windows then.
local BOUNDED0 = SENSOR_SOURCE .. [[
sensors
  :assign_timestamps_and_watermarks(wm.watermarks.bounded_out_of_orderness(0):with_timestamp_field("ts"))
  :key_by("k"):window(wm.windows.tumbling("1s"))
]] .. LABEL
local BOUNDED0_WANT = "a@0 n=2 at 1300\nb@1000 n=1 at 2200\nb@2000 n=1 at 2200\n"

describe("a replayed job's sinks", function()
  before_each(function() write("sensors.csv", SENSORS) end)

  it("write_lines writes what print shows, flushed at the end (text and JSON)", function()
    local out, err, code = run("local env = wm.env{watermark_interval = '200ms'}\n" .. WINDOWS .. [[
counts:write_lines(DIR .. "/out.txt", "text")
counts:map(function(s) return {line = s} end):write_lines(DIR .. "/out.json")
counts:print()
env:execute()
]])
    assert_ran(WINDOWS_WANT, out, err, code)
    assert.are.equal(WINDOWS_WANT, read("out.txt"))
    assert.are.equal('{"line":"a@0 n=3 at 2200"}\n{"line":"b@1000 n=1 at 2200"}\n{"line":"b@2000 n=1 at 2200"}\n',
      read("out.json"))
  end)

  it("write_socket sends the lines to a server", function()
    os.execute("mkdir '" .. dir .. "/server'")
    local server = h.bg_job(dir .. "/server", string.format([[
local wm = require("wm")
local env = wm.env{}
env:listen_lines("127.0.0.1", 0, {max_clients = 1}):write_lines(%q, "text")
env:execute()
]], dir .. "/got.txt"))
    h.finally(function() server.kill() end) -- a failed test must not leave it running
    local port = h.wait_for(function()
      return h.read_or_empty(server.err):match("listening on 127%.0%.0%.1:(%d+)")
    end, "the server to listen", 60)
    local out, err, code = run("local env = wm.env{watermark_interval = '200ms'}\n" .. BOUNDED0 .. [[
  :write_socket("127.0.0.1", ]] .. port .. [[, "text")
env:execute()
]])
    assert_ran("", out, err, code)
    assert.are.equal(0, server.wait()) -- its one client came and went
    assert.are.equal(BOUNDED0_WANT, read("got.txt"))
  end)

  -- The same job into print, under --metrics: the counts of a live run (the source reads 5
  -- lines: none in, 5 out), every watermark MAX at the end, the one late record (a700).
  it("--metrics prints the replay's counts at the end", function()
    local out, err, code = run("local env = wm.env{watermark_interval = '200ms'}\n" .. BOUNDED0 .. [[
  :print()
env:execute()
]], "--metrics")
    assert.are.equal(0, code)
    assert.are.equal(BOUNDED0_WANT, out)
    -- operator, records in, records out, side out, watermark, late dropped, late to side, windows
    local rows = {}
    for line in err:gmatch("[^\n]+") do rows[#rows + 1] = line:gsub("%s+", " ") end
    assert.are.equal(6, #rows, err)
    assert.matches("^operator records in records out side out watermark late dropped late to side windows$", rows[1])
    -- (names: the job lines, counted from `local wm` at 1; a chain's is its first line)
    assert.matches("^read_lines%(.-sensors%.csv%) %(.-job%.lua:4%) 0 5 0 MAX 0 0 %-$", rows[2])
    assert.matches("^parse_csv %(.-job%.lua:4%) 5 5 0 MAX 0 0 %-$", rows[3])
    assert.matches("^timestamps/watermarks %(.-job%.lua:6%) 5 5 0 MAX 0 0 %-$", rows[4])
    assert.matches("^tumbling window process %(.-job%.lua:9%) 5 3 0 MAX 1 0 0$", rows[5])
    assert.matches("^print %(.-job%.lua:6%) 3 0 0 MAX 0 0 %-$", rows[6])
  end)

  -- --timeline draws the replayed run: its five records in arrival order (a700 fourth) and
  -- the firings with their results (WINDOWS_WANT)
  it("--timeline draws the replayed run", function()
    local out, err, code = run("local env = wm.env{watermark_interval = '200ms'}\n" .. WINDOWS ..
      "counts:print()\nenv:execute()\n", "--timeline '" .. dir .. "/t.svg'")
    assert_ran(WINDOWS_WANT, out, err, code)
    local svg = read("t.svg")
    local records = {}
    for n, ts, k in svg:gmatch("<title>record #(%d+): ts (%d+), key (%a)</title>") do
      records[#records + 1] = n .. ":" .. k .. ts
    end
    assert.are.same({"0:a100", "1:a900", "2:b1200", "3:a700", "4:b2100"}, records)
    local results = {}
    for r in svg:gmatch("Result: ([^<]+)</title>") do results[r] = true end
    assert.are.same({["a@0 n=3 at 2200"] = true, ["b@1000 n=1 at 2200"] = true, ["b@2000 n=1 at 2200"] = true},
      results)
  end)

  -- The Table API over the replayed stream: rows of the 1 s windows per key, written by a
  -- filesystem sink table. Windows fire as in WINDOWS above: a [0,1000) with 3 records at the
  -- end of input, b's two windows of 1 record each.
  it("a SQL filesystem sink table writes the windows' rows", function()
    local out, err, code = run("local env = wm.env{watermark_interval = '200ms'}\n" .. SENSOR_SOURCE .. [[
local rows = sensors:assign_timestamps_and_watermarks(
  wm.watermarks.bounded_out_of_orderness("500ms"):with_timestamp_field("ts"))
env:execute_sql("CREATE TABLE counts (k STRING, n BIGINT, s BIGINT) WITH ('connector' = 'filesystem', "
  .. "'path' = '" .. DIR .. "/counts.csv', 'format' = 'csv')")
env:from_data_stream(rows, {"k", "ts:BIGINT", "v:BIGINT", "rt:rowtime"})
  :window(wm.table.tumble("1s"):on("rt"):as("w"))
  :group_by("w, k")
  :select("k, COUNT(*) AS n, SUM(v) AS s")
  :execute_insert("counts")
env:execute()
]])
    assert_ran("", out, err, code)
    assert.are.equal("a,3,7\nb,1,3\nb,1,5\n", read("counts.csv"))
  end)
end)

describe("a replayed job's sources", function()
  before_each(function()
    write("sensors.csv", SENSORS)
    write("clicks.json", CLICKS)
  end)

  -- The lines in arrival order: 100 sensors; 950 sensors then clicks (a tie: the source
  -- created first goes first); 1250 sensors; 1600 clicks; 1700, 2200 sensors; 2600 clicks.
  it("parse_json fields are arrival columns; several sources merge on the one clock", function()
    local out, err, code = run("local env = wm.env{}\n" .. SENSOR_SOURCE .. [[
local clicks = env:read_lines(DIR .. "/clicks.json", {arrival = "arrival"}):parse_json()
sensors:map(function(r) return "sensor " .. r.k .. r.ts end)
  :union(clicks:map(function(r) return "click " .. r.k .. r.ts end))
  :key_by(function() return 0 end)
  :process(function(s, ctx, out) out(s .. " at " .. ctx.timer_service:current_processing_time()) end)
  :print()
env:execute()
]])
    assert.are.equal("", err)
    assert.are.equal(0, code)
    assert.are.equal("sensor a100 at 100\nsensor a900 at 950\nclick a300 at 950\nsensor b1200 at 1250\n" ..
      "click b1500 at 1600\nsensor a700 at 1700\nsensor b2100 at 2200\nclick a2500 at 2600\n", out)
  end)

  -- Processing-time windows of 1 s over both sources, by arrival:
  --   [0,1000): a 1 + 2 (sensors) + 10 (click) = 13, fires at 999 (the clock moving to 1250)
  --   [1000,2000): b 3 + 20 = 23 (b's window created first, at 1250), a 4; fire at 1999
  --   [2000,3000): b 5, a 30: the end of input (2600) fires them, in time order
  -- and a keyed process function's processing-time timer 300 ms after each of a's records:
  --   100 -> 400, 950 (two records: one timer) -> 1250, 1700 -> 2000; a2500's (2900) is
  --   still pending when the input ends at 2600: the end fires the pending processing-time
  --   windows, not a process function's timers (as a live job ends)
  it("processing-time windows and timers run on the merged arrival clock", function()
    local out, err, code = run("local env = wm.env{}\n" .. SENSOR_SOURCE .. [[
local clicks = env:read_lines(DIR .. "/clicks.json", {arrival = "arrival"}):parse_json()
local all = sensors:map(function(r) return {k = r.k, v = r.v} end)
  :union(clicks:map(function(r) return {k = r.k, v = r.v} end))
all:key_by("k"):window(wm.windows.tumbling_processing("1s"))
  :reduce(function(x, y) return {k = x.k, v = x.v + y.v} end, function(key, ctx, rs, out)
    out(string.format("window %s [%d,%d) sum %d at %d", key, ctx.window.start, ctx.window.stop, rs[1].v,
      ctx.current_processing_time))
  end)
  :write_lines(DIR .. "/windows.txt", "text")
all:filter(function(r) return r.k == "a" end):key_by("k")
  :process(function(r, ctx, out)
    ctx.timer_service:register_processing_time_timer(ctx.timer_service:current_processing_time() + 300)
  end, function(t, ctx, out) out("timer " .. t .. " at " .. ctx.timer_service:current_processing_time()) end)
  :print()
env:execute()
]])
    assert.are.equal("", err)
    assert.are.equal(0, code)
    assert.are.equal("window a [0,1000) sum 13 at 999\nwindow b [1000,2000) sum 23 at 1999\n" ..
      "window a [1000,2000) sum 4 at 1999\nwindow b [2000,3000) sum 5 at 2600\n" ..
      "window a [2000,3000) sum 30 at 2600\n", read("windows.txt"))
    assert.are.equal("timer 400 at 400\ntimer 1250 at 1250\ntimer 2000 at 2000\n", out)
  end)

  -- time = "ingestion": each record's timestamp is the clock when its source produced it,
  -- its arrival: a 100, 950 in [0,1000); b 1250, a 1700 in [1000,2000); b 2200. The
  -- watermark follows the clock (now - 1 at each emission: 300, 500, ...): 1099 at 1100
  -- fires a's [0,1000), 2099 at 2100 fires [1000,2000) (b's window created first); the end
  -- (2200) fires b's [2000,3000).
  it("ingestion time is the arrival clock", function()
    local out, err, code = run("local env = wm.env{time = 'ingestion', watermark_interval = '200ms'}\n" ..
      SENSOR_SOURCE .. [[
sensors:key_by("k"):window(wm.windows.tumbling("1s"))
]] .. LABEL .. [[
  :print()
env:execute()
]])
    assert_ran("a@0 n=2 at 1100\nb@1000 n=1 at 2100\na@1000 n=1 at 2100\nb@2000 n=1 at 2200\n", out, err, code)
  end)

  -- Two sources, each with bounded_out_of_orderness(0) and with_idleness(300 ms) (periodic
  -- emissions every 50 ms), into 1 s windows per key. The window operator's W is the
  -- minimum over the active sources (semantics.md rule 3):
  --   1000: sensors 899 (a900), clicks 299 (a300): W = 299
  --   1250: the clicks are idle (nothing since 950; the timeout, due at 1250, runs before
  --     the sensors' b1200 that arrives then): W = 899; at 1300 the sensors give 1199, which
  --     fires a's [0,1000) with a100, a900, a300: "a@0 n=3 at 1300"
  --   1550: the sensors idle too (nothing since 1250): all idle, W stays 1199
  --   1600: b1500 (clicks active again), 1650: W = 1499
  --   1700: a700 (sensors active again at 1199, below W: it does not pull W back) is late
  --     for [0,1000) (W 1499 >= 999): dropped
  --   1900, 2000: the clicks, then the sensors idle again
  --   2200: b2100, the sensors' last line: their MAX, with the clicks idle, is W = MAX:
  --     b's [1000,2000) (b1200, b1500) and [2000,3000) (b2100) fire at 2200
  --   2600: a2500 comes after W = MAX: late, dropped (as in Flink: an idle input does not
  --     hold back the end of the others)
  it("idleness on the merged clock: a silent source stops holding the watermark back", function()
    local out, err, code = run("local env = wm.env{watermark_interval = '50ms'}\n" .. SENSOR_SOURCE .. [[
local clicks = env:read_lines(DIR .. "/clicks.json", {arrival = "arrival"}):parse_json()
local function strategy()
  return wm.watermarks.bounded_out_of_orderness(0):with_timestamp_field("ts"):with_idleness("300ms")
end
sensors:assign_timestamps_and_watermarks(strategy())
  :union(clicks:assign_timestamps_and_watermarks(strategy()))
  :key_by("k"):window(wm.windows.tumbling("1s"))
]] .. LABEL .. [[
  :print()
env:execute()
]])
    assert_ran("a@0 n=3 at 1300\nb@1000 n=2 at 2200\nb@2000 n=1 at 2200\n", out, err, code)
  end)
end)

describe("a replayed job's sinks under pressure and signals", function()
  -- 3000 lines: ts = arrival = i, all of key k
  before_each(function()
    local t = {}
    for i = 1, 3000 do t[i] = "k," .. i .. ",1," .. i end
    write("long.csv", table.concat(t, "\n") .. "\n")
  end)

  local SOURCE = [[
local env = wm.env{}
local lines = env:read_lines(DIR .. "/long.csv", {arrival = "arrival"})
  :parse_csv{"k", "ts:integer", "v:integer", "arrival:integer"}
]]

  -- 3000 lines of 1 KiB: 3 MB through write_lines, past the 1 MiB mark where the replay waits
  -- for the sink: every line is written, in order
  it("write_lines under backpressure writes every line in order", function()
    local _, err, code = run(SOURCE .. [[
lines:map(function(r) return string.rep("x", 1019) .. string.format("%05d", r.ts) end)
  :write_lines(DIR .. "/big.txt", "text")
env:execute()
]])
    assert.are.equal("", err)
    assert.are.equal(0, code)
    local want = {}
    for i = 1, 3000 do want[i] = string.rep("x", 1019) .. string.format("%05d", i) end
    assert.are.equal(table.concat(want, "\n") .. "\n", read("big.txt"))
  end)

  -- The job sends itself SIGTERM at line 3 (os.execute's system() would ignore a SIGINT;
  -- the signal has come by the time os.execute returns): as a live job drains, the replay
  -- stops before the next line, the sources end, the open window [0,1000) fires with the 3
  -- lines replayed and the file is flushed; the script goes on after execute, exit 0.
  local KILL = [[
local pid = io.open("/proc/self/stat"):read("a"):match("^(%d+)")
lines:map(function(r) if r.ts == 3 then os.execute("kill -TERM " .. pid) end return r end)
  :assign_timestamps_and_watermarks(wm.watermarks.bounded_out_of_orderness(0):with_timestamp_field("ts"))
  :key_by("k"):window(wm.windows.tumbling("1s")):count():write_lines(DIR .. "/counts.txt")
env:execute()
print("after execute")
]]

  it("a signal drains it as a live job: the open windows fire, the sinks flush", function()
    local out, err, code = run(SOURCE .. KILL)
    assert_ran("after execute\n", out, err, code)
    assert.are.equal('{"count":3,"key":"k","start":0,"stop":1000}\n', read("counts.txt"))
  end)

  -- A function that never returns keeps the replay from its signal: the second signal ends
  -- the process at once (status 130), as for a live job. The job says when it loops.
  it("a second signal ends it at once, even inside a function that never returns", function()
    os.execute("mkdir '" .. dir .. "/bg'")
    local job = h.bg_job(dir .. "/bg", 'local wm = require("wm")\nlocal DIR = ' .. string.format("%q", dir) ..
      "\n" .. SOURCE .. [[
lines:map(function(r)
  if r.ts == 2 then
    io.open(DIR .. "/looping", "w"):close()
    while true do end
  end
  return r
end):print()
env:execute()
]])
    h.finally(function() job.kill() end)
    h.wait_for(function()
      local f = io.open(dir .. "/looping")
      if f then f:close() end
      return f ~= nil
    end, "the job to loop", 60)
    job.signal("TERM")
    job.signal("TERM")
    assert.are.equal(130, job.wait())
  end)

  it("--no-drain stops it at once: exit status 130", function()
    local out, err, code = run(SOURCE .. KILL, "--no-drain")
    assert.are.equal(130, code)
    assert.are.equal("", out) -- the script stops in execute
    assert.are.equal("", err) -- as a live job interrupted: no message
  end)
end)

describe("a replayed job's clock over long gaps (issue 34, item 10)", function()
  -- The clock jumps to what comes due next (a timer, an idleness timeout, a periodic
  -- emission that can change something, a line) instead of stepping through every
  -- periodic emission of the gap. The runs are bounded by bg_job's 60 s wait, never timed:
  -- before the jump the first took minutes, the second hours.
  local function run_bg(text)
    os.execute("mkdir '" .. dir .. "/bg'")
    local job = h.bg_job(dir .. "/bg", 'local wm = require("wm")\nlocal DIR = ' .. string.format("%q", dir) ..
      "\n" .. text)
    h.finally(function() job.kill() end)
    return job
  end
  local WIN = [[
local env = wm.env{watermark_interval = "200ms"}
env:read_lines(DIR .. "/gap.csv", {arrival = "arrival"})
  :parse_csv{"k", "ts:integer", "v:integer", "arrival:integer"}
  :assign_timestamps_and_watermarks(wm.watermarks.bounded_out_of_orderness("500ms"):with_timestamp_field("ts"))
  :key_by("k"):window(wm.windows.tumbling("1s"))
]] .. LABEL .. ":print()\nenv:execute()\n"

  -- 10^12 ms between the first two lines. Emissions every 200 ms from 100: at 300, W = 100
  -- - 500 - 1 = -401; the emission due at 10^12 + 100 (100 + 5 * 10^9 * 200) comes before
  -- the line arriving then (W stays -401); a1500 arrives; at 10^12 + 300, W = 1500 - 501 =
  -- 999 fires [0,1000) with 1 record; a2500 arrives at 10^12 + 450, the last line: the end
  -- of input fires the rest then.
  it("a gap of 10^12 ms: the periodic emissions keep their phase after it", function()
    write("gap.csv", "a,100,1,100\na,1500,2,1000000000100\na,2500,3,1000000000450\n")
    local job = run_bg(WIN)
    assert.are.equal(0, job.wait())
    assert.are.equal("", h.read_or_empty(job.err))
    assert.are.equal("a@0 n=1 at 1000000000300\na@1000 n=1 at 1000000000450\n" ..
      "a@2000 n=1 at 1000000000450\n", h.read_or_empty(job.out))
  end)

  -- Arrivals at math.mininteger, 0 and math.maxinteger: the clock starts at the first, the
  -- emission at MIN + 200 gives W = -401; emissions stay in phase with MIN: 0 - MIN = 2^63
  -- = 200 * 46116860184273879 + 8, so the last before a1500 (arriving at 0) is at -8 and
  -- the next at 192 gives W = 999, which fires a's [0,1000) then. b200 arrives at MAX, late
  -- for its [0,1000) (dropped); it ends the input: a's [1000,2000) fires at MAX.
  it("arrivals at the int64 extremes", function()
    write("gap.csv", "a,100,1,-9223372036854775808\na,1500,2,0\nb,200,3,9223372036854775807\n")
    local job = run_bg(WIN)
    assert.are.equal(0, job.wait())
    assert.are.equal("", h.read_or_empty(job.err))
    assert.are.equal("a@0 n=1 at 192\na@1000 n=1 at 9223372036854775807\n", h.read_or_empty(job.out))
  end)

  -- A Lua generator's periodic emit may do anything, so the clock calls it at every
  -- interval, gap or not: 10^15 ms at 1 ms is 10^15 calls. A SIGTERM there drains the job as
  -- between two lines: the second line is never replayed, the open window fires, exit 0.
  it("a signal stops the clock inside a gap", function()
    write("gap.csv", "a,100,1,100\na,1500,2,1000000000000100\n")
    local job = run_bg([[
local env = wm.env{watermark_interval = 1}
env:read_lines(DIR .. "/gap.csv", {arrival = "arrival"})
  :parse_csv{"k", "ts:integer", "v:integer", "arrival:integer"}
  :assign_timestamps_and_watermarks(wm.watermarks.for_generator(function()
    return {max = math.mininteger, calls = 0,
      on_event = function(self, _, ts) self.max = math.max(self.max, ts) end,
      on_periodic_emit = function(self, out)
        self.calls = self.calls + 1
        if self.calls == 1000 then io.open(DIR .. "/stepping", "w"):close() end
        if self.max > math.mininteger then out:emit_watermark(self.max - 1) end
      end}
  end):with_timestamp_field("ts"))
  :key_by("k"):window(wm.windows.tumbling("1s"))
]] .. LABEL .. ":print()\nenv:execute()\n")
    h.wait_for(function()
      local f = io.open(dir .. "/stepping")
      if f then f:close() end
      return f ~= nil
    end, "the job to step through the gap", 60)
    job.signal("TERM")
    assert.are.equal(0, job.wait())
    assert.are.equal("", h.read_or_empty(job.err))
    assert.are.match("^a@0 n=1 at %d+\n$", h.read_or_empty(job.out))
  end)
end)

describe("a replayed job's parsers", function()
  -- on_error = "side_output": a bad line (no arrival can be read from it) arrives with the
  -- line before it in its file, the parser sends it to "parse_errors" naming its line in the
  -- file (the header is line 1), as a live run does. Arrival order: 100 a100, then "oops"
  -- (line 3, with it); 950 a900; 1000 the JSON b300; 1000 "{" (JSON line 2, with it);
  -- 1250 b1200 (its line 6 follows the bad line 5, which arrives with a900 at 950).
  it("bad lines go to the side output with their file line, arriving with the line before", function()
    write("bad.csv", "k,ts,v,arrival\na,100,1,100\noops\na,900,2,950\nb,x,3,1250\nb,1200,3,1250\n")
    write("bad.json", '{"k":"b","ts":300,"arrival":1000}\n{\n')
    local out, err, code = run([[
local env = wm.env{}
local csv = env:read_lines(DIR .. "/bad.csv", {arrival = "arrival"})
  :parse_csv{"k", "ts:integer", "v:integer", "arrival:integer", header = true, on_error = "side_output"}
local json = env:read_lines(DIR .. "/bad.json", {arrival = "arrival"}):parse_json{on_error = "side_output"}
csv:map(function(r) return "csv " .. r.k .. r.ts end):union(json:map(function(r) return "json " .. r.k .. r.ts end))
  :print()
csv:get_side_output("parse_errors"):map(function(e) return "csv line " .. e.line .. ": " .. e.text end)
  :union(json:get_side_output("parse_errors"):map(function(e) return "json line " .. e.line .. ": " .. e.text end))
  :print()
env:execute()
]])
    assert.are.equal("", err)
    assert.are.equal(0, code)
    assert.are.equal("csv a100\ncsv line 3: oops\ncsv a900\ncsv line 5: b,x,3,1250\njson b300\n" ..
      "json line 2: {\ncsv b1200\n", out)
  end)

  -- arrival = fn: the header (line 1) gets arrival 5000 from this function, after every
  -- record; parse_csv still skips it, and only it (it is line 1 of the file)
  it("the header is the file's first line, whatever its arrival", function()
    write("h.csv", "k,ts\na,1\nb,2\n")
    local out, err, code = run([[
local env = wm.env{}
env:read_lines(DIR .. "/h.csv", {arrival = function(line, n) return n == 1 and 5000 or n end})
  :parse_csv{"k", "ts:integer", header = true}
  :map(function(r) return r.k .. r.ts end):print()
env:execute()
]])
    assert_ran("a1\nb2\n", out, err, code)
  end)
end)

describe("a replayed job in parallel", function()
  before_each(function() write("sensors.csv", SENSORS) end)

  -- parallelism 2: read_lines is one instance; its lines go round robin to the two
  -- parse_csv/assigner instances (1: a100, b1200, b2100; 2: a900, a700), and the one window
  -- instance (set_parallelism(1)) takes the minimum of their watermarks (bounded 500 ms):
  --   at 1100 instance 1 has 100 - 501, instance 2 900 - 501 = 399: W = -401
  --   at 1300 instance 1 has 1200 - 501 = 699, instance 2 399: W = 399
  --   at 1700 (before a700) W = 399; a700 on time; instance 2 stays at 399 until the end
  -- so every window fires at the end of input (2200): a [0,1000) with 3 records, b's two.
  -- The print after it (parallelism 2, round robin) prints them as 1>, 2>, 1>.
  it("runs every instance on one thread, as wmrun -p 2 does", function()
    local out, err, code = run("local env = wm.env{watermark_interval = '200ms', parallelism = 2}\n" ..
      WINDOWS:gsub("%)\n$", "):set_parallelism(1)\n") .. [[
counts:print()
env:execute()
]])
    assert_ran("1> a@0 n=3 at 2200\n2> b@1000 n=1 at 2200\n1> b@2000 n=1 at 2200\n", out, err, code)
  end)

  it("refuses threads: the replay's schedule is one thread", function()
    local _, err, code = run("local env = wm.env{watermark_interval = '200ms'}\n" .. WINDOWS ..
      "counts:print()\nenv:execute()\n", "--threads 2")
    assert.are.equal(1, code)
    assert.matches("a replay runs every instance on one thread (threads = 1, the deterministic schedule); "
      .. "got threads = 2", err, 1, true)
  end)
end)

describe("a replayed job's errors", function()
  before_each(function()
    write("sensors.csv", SENSORS)
    write("clicks.json", CLICKS .. '{"k":"b","ts":2700}\n')
  end)

  it("names a source without arrival times", function()
    local _, err, code = run("local env = wm.env{}\n" .. SENSOR_SOURCE ..
      "sensors:union(env:from_elements({k = 'x'})):print()\nenv:execute()\n")
    assert.are.equal(1, code)
    assert.matches("every source of a replayed job needs arrival times (from_elements at "
      .. h.chunkname(dir .. "/job.lua") .. ":6 has none)", err, 1, true)
  end)

  it("says which sink file cannot be written, before the replay starts", function()
    local out, err, code = run("local env = wm.env{}\n" .. SENSOR_SOURCE ..
      "sensors:write_lines(DIR .. '/no/such/dir/out.txt')\nenv:execute()\n")
    assert.are.equal(1, code)
    assert.are.equal("", out)
    assert.are.equal("wmrun: cannot open '" .. dir .. "/no/such/dir/out.txt' for writing: no such file or directory\n",
      err)
  end)

  -- issue 26: a replay takes no checkpoint; asked for one, it says so at the start, naming the
  -- user's read_lines(..., {arrival = ...}) and its line, on the virtual clock as paced
  it("refuses --checkpoint-dir, naming read_lines(..., {arrival = ...}) and its line, at both speeds", function()
    for _, speed in ipairs({"", ", speed = 100"}) do
      local out, err, code = run("local env = wm.env{}\n"
        .. "env:read_lines(DIR .. '/sensors.csv', {arrival = 'arrival'" .. speed .. "})\n"
        .. "  :parse_csv{'k', 'ts:integer', 'v:integer', 'arrival:integer'}:print()\nenv:execute()\n",
        "--checkpoint-dir '" .. dir .. "/ck'")
      assert.are.equal(1, code, speed)
      assert.are.equal("", out)
      assert.matches("{arrival = ...}) at " .. h.chunkname(dir .. "/job.lua") .. ":4: "
        .. "an arrival replay takes no checkpoints", err, 1, true)
      assert.matches("read_lines(", err, 1, true)
      assert.matches("--checkpoint-dir", err, 1, true)
      assert.is_nil(err:find("env:source", 1, true), err)
      assert.is_nil(io.open(dir .. "/ck"), "a checkpoint directory was made")
    end
    -- and from the job's own wm.env{checkpoint = ...}
    local _, err, code = run("local env = wm.env{checkpoint = {dir = DIR .. '/ck2'}}\n" .. SENSOR_SOURCE
      .. "sensors:print()\nenv:execute()\n")
    assert.are.equal(1, code)
    assert.matches("an arrival replay takes no checkpoints", err, 1, true)
  end)

  it("names the line of a JSON file without its arrival field", function()
    local _, err, code = run("local env = wm.env{}\n" ..
      "env:read_lines(DIR .. '/clicks.json', {arrival = 'arrival'}):parse_json():print()\nenv:execute()\n")
    assert.are.equal(1, code)
    assert.matches("clicks.json:4: field 'arrival' is missing, not an integer number of ms", err, 1, true)
  end)
end)

describe("wm.testing", function()
  -- the harness had no executor, so a pipeline ending in write_lines crashed the process
  it("a pipeline may end in write_lines: the file is written at finish", function()
    write("t.lua", string.format([[
local wm = require("wm")
local t = wm.testing.harness(function(input)
  input:map(function(r) return r.n * 2 end):write_lines(%q)
  return input
end)
t:push({n = 1}, 5):push({n = 21}, 6):finish()
t:close()
]], dir .. "/h.txt"))
    local out, err, code = h.sh("lua5.4 '" .. dir .. "/t.lua'")
    assert_ran("", out, err, code)
    assert.are.equal("2\n42\n", read("h.txt"))
  end)
end)
