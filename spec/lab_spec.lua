-- wm.lab and `wmrun lab` (docs/lab.md): figures checked against values worked out by hand.
local h = require("helper")
local wm = require("wm")

-- A temporary directory of the spec's own; removed by `rmdir(dir)`.
local function tmpdir()
  return h.tmpdir()
end
local function rmdir(d) os.execute("rm -rf '" .. d .. "'") end
local function write(path, text)
  local f = assert(io.open(path, "wb"))
  f:write(text)
  f:close()
end

-- In a describe block: every test gets a temporary directory of its own holding
-- events.csv (EVENTS, below), removed after the test; set(dir, path) receives them.
local with_events

-- key, ts, value, arrival; in arrival order. The record at 1700 (ts 700) is the one that
-- comes too late for window a [0, 1000).
local EVENTS = table.concat({
  "a,100,1,100",
  "a,900,1,950",
  "a,300,1,1000",
  "b,1200,1,1250",
  "a,1500,1,1600",
  "a,700,1,1700",
  "b,2100,1,2200",
  "a,2500,1,2600",
}, "\n") .. "\n"

local FIELDS = {"k", "ts:integer", "v:integer", "arrival:integer"}

function with_events(set)
  local dir
  before_each(function()
    dir = tmpdir()
    write(dir .. "/events.csv", EVENTS)
    set(dir, dir .. "/events.csv")
  end)
  after_each(function() rmdir(dir) end)
end

local function lab_on(path, extra)
  local spec = {
    input = {path = path, fields = FIELDS, timestamp = "ts", arrival = "arrival"},
    key = "k", window = wm.windows.tumbling("1s"), watermark_interval = "200ms",
    strategies = {
      bounded = {wm.watermarks.bounded_out_of_orderness(0), wm.watermarks.bounded_out_of_orderness("500ms")},
    },
  }
  for k, v in pairs(extra or {}) do spec[k] = v end
  return wm.lab(spec)
end

local function by_name(results)
  local t = {}
  for _, r in ipairs(results) do t[r.name] = r end
  return t
end

local function figures(r)
  return {r.records, r.late, r.dropped, r.late_firings, r.lag_p50, r.lag_p99, r.lag_max,
          r.latency_p50, r.latency_p99, r.latency_max}
end

describe("wm.lab figures", function()
  local dir, path
  with_events(function(d, p) dir, path = d, p end)

  -- Worked out by hand (docs/lab.md has the definitions). The clock starts at the first
  -- arrival (100); periodic emissions at 300, 500, 700, ...
  --
  -- The perfect watermark before each arrival is min(ts still to come) - 1:
  --   99, 299, 299, 699, 699, 699, 2099, 2499.
  -- perfect: it emits 2099 after the record at 1700, which fires a [0,1000) (last on-time
  -- record at 1700: latency 0), a [1000,2000) (last at 1600: 100) and b [1000,2000) (last
  -- at 1250: 450); the windows of [2000,3000) fire at the end of the input (not sampled).
  -- latency {0, 100, 450}: p50 = 2nd = 100, p99 = 3rd = 450.
  --
  -- bounded 0 (emits max_ts - 1): watermark before each arrival (MIN counts as 99):
  --   99, 99, 99, 899 (at 1100), 1199 (at 1300), 1499 (at 1700), 1499, 2099 (at 2300);
  -- lag = perfect - watermark: 0, 200, 200, -200, -500, -800, 600, 400
  --   sorted -800 -500 -200 0 200 200 400 600: p50 = 4th = 0, p99 = 8th = 600, max 600.
  -- The record at 1700 (ts 700) finds W = 1499 >= 999: late, and dropped (lateness 0).
  -- a [0,1000) fires at 1300 (last on-time at 1000: 300); a and b [1000,2000) at 2300
  -- (last at 1600: 700; at 1250: 1050): latency {300, 700, 1050}.
  --
  -- bounded 500ms (emits max_ts - 501): watermark before each arrival:
  --   99, 99 (-401 counts as 99), 99, 399, 699, 999 (emitted at 1700, just before the
  --   record that arrives at 1700), 999, 1599;
  -- lag: 0, 200, 200, 300, 0, -300, 1100, 900: sorted -300 0 0 200 200 300 900 1100:
  --   p50 = 200, p99 = max = 1100. The record at 1700 is late and dropped.
  -- a [0,1000) fires at 1700 (last on-time at 1000: 700); after the last arrival the clock
  -- runs one interval more: at 2700 the watermark 1999 fires a and b [1000,2000) (last at
  -- 1600: 1100; at 1250: 1450): latency {700, 1100, 1450}.
  it("late, dropped, lag and latency of two strategies and the perfect watermark", function()
    local r = by_name(lab_on(path):run())
    assert.are.same({8, 0, 0, 0, 0, 0, 0, 100, 450, 450}, figures(r.perfect))
    assert.are.same({8, 1, 1, 0, 0, 600, 600, 700, 1050, 1050}, figures(r["bounded 0ms"]))
    assert.are.same({8, 1, 1, 0, 200, 1100, 1100, 1100, 1450, 1450}, figures(r["bounded 500ms"]))
    assert.are.equal(3, r.perfect.latency_windows)
  end)

  -- With 1 s of allowed lateness the record at 1700 (ts 700) still finds W = 1499 (bounded
  -- 0) or 999 (bounded 500ms) at or past 999, so it is late; but a [0,1000) is kept until
  -- 1999, so the record is not dropped: it fires the window again (a late firing). Lag and
  -- the latency of the first firings do not change.
  it("allowed lateness turns a dropped record into a late firing", function()
    local r = by_name(lab_on(path, {allowed_lateness = "1s"}):run())
    assert.are.same({8, 0, 0, 0, 0, 0, 0, 100, 450, 450}, figures(r.perfect))
    assert.are.same({8, 1, 0, 1, 0, 600, 600, 700, 1050, 1050}, figures(r["bounded 0ms"]))
    assert.are.same({8, 1, 0, 1, 200, 1100, 1100, 1100, 1450, 1450}, figures(r["bounded 500ms"]))
  end)

  -- The perfect watermark is ahead of every strategy: no strategy's lag can be negative
  -- while nothing is late; with no watermarks at all, the lag is the whole distance.
  -- no_watermarks: watermark 99 (MIN counts as 99) throughout: lag = perfect - 99:
  --   0, 200, 200, 600, 600, 600, 2000, 2400: p50 = 4th = 600, p99 = max = 2400;
  -- every window fires at the end of the input: no latency sample.
  it("no watermarks: nothing late, lag grows, no latency sample", function()
    local r = by_name(wm.lab{
      input = {path = path, fields = FIELDS, timestamp = "ts", arrival = "arrival"},
      key = "k", window = wm.windows.tumbling("1s"),
      strategies = {none = wm.watermarks.no_watermarks()},
    }:run())
    local n = r.none
    assert.are.same({8, 0, 0, 0, 600, 2400, 2400}, {n.records, n.late, n.dropped, n.late_firings,
      n.lag_p50, n.lag_p99, n.lag_max})
    assert.is_nil(n.latency_p50)
    assert.are.equal(0, n.latency_windows)
    assert.are.equal(5, n.end_firings)
  end)

  -- Sliding windows of 2 s every 1 s: a record is late when the watermark has passed the
  -- end of the first of its windows to end. ts 700 belongs to [-1000,1000) and [0,2000):
  -- bounded 0 has W = 1499 when it arrives: past 999, so late, but [0,2000) takes it (not
  -- dropped).
  it("sliding windows: late when the first of the record's windows has fired", function()
    local r = by_name(lab_on(path, {window = wm.windows.sliding("2s", "1s")}):run())
    assert.are.equal(1, r["bounded 0ms"].late)
    assert.are.equal(0, r["bounded 0ms"].dropped)
    assert.are.equal(0, r.perfect.late)
  end)

  -- The breakdown (docs/lab.md, "The breakdown of the late records"), on the same replay.
  -- bounded 0: the one late record (a, ts 700, at 1700) finds W = 1499; its window [0,1000)
  -- ends at 999: lateness 1499 - 999 = 500, admitted by an allowed lateness of 501 (p99,
  -- p99.9 and all: one sample). Windows fired first: a [0,1000), a and b [1000,2000) (on
  -- time), a and b [2000,3000) (at the end): 5; a [0,1000) fired before the record: 4 of 5
  -- are final. bounded 500ms: W = 999 at 1700: lateness 0, admitted by 1; 4 of 5 final.
  -- perfect: nothing late, all 5 final.
  it("breaks the late records down by key and lateness; first-firing completeness", function()
    local r = by_name(lab_on(path):run())
    local b0, b5 = r["bounded 0ms"], r["bounded 500ms"]
    assert.are.same({{key = "a", late = 1}}, b0.late_by_key)
    assert.are.equal("a 1", b0.top_late_key)
    assert.are.same({501, 501, 501}, {b0.admit_p99, b0.admit_p999, b0.admit_max})
    assert.are.same({0, 0, 1, 0, 0, 0, 0}, (function(t)
      local n = {}
      for i, x in ipairs(t) do n[i] = x.n end
      return n
    end)(b0.lateness_hist))
    assert.are.same({5, 1, 0.8}, {b0.first_firings, b0.damaged_windows, b0.first_final})
    assert.are.same({1, 1, 1}, {b5.admit_p99, b5.admit_p999, b5.admit_max})
    assert.are.same({5, 1, 0.8}, {b5.first_firings, b5.damaged_windows, b5.first_final})
    assert.are.same({5, 0, 1.0}, {r.perfect.first_firings, r.perfect.damaged_windows, r.perfect.first_final})
    assert.are.same({}, r.perfect.late_by_key)
    assert.is_nil(r.perfect.admit_max)
    -- with 1 s of allowed lateness the record fires a [0,1000) again: still not final
    local l = by_name(lab_on(path, {allowed_lateness = "1s"}):run())["bounded 0ms"]
    assert.are.same({5, 1, 0.8, 1}, {l.first_firings, l.damaged_windows, l.first_final, l.late_firings})
  end)

  -- Sliding 2 s / 1 s: key a's windows are [-1000,1000), [0,2000), [1000,3000), [2000,4000)
  -- (4), b's [0,2000), [1000,3000), [2000,4000) (3): 7 first firings. bounded 0: ts 700 at
  -- 1700 finds W = 1499: past [-1000,1000) (fired at 1300: damaged, lateness 500) but not
  -- [0,2000): 6 of 7 final.
  it("sliding windows: only the windows that had fired are damaged", function()
    local b0 = by_name(lab_on(path, {window = wm.windows.sliding("2s", "1s")}):run())["bounded 0ms"]
    assert.are.same({7, 1, 501}, {b0.first_firings, b0.damaged_windows, b0.admit_max})
  end)

  -- key, ts, value, arrival; bounded 0 with watermark_interval 0 (a watermark max_ts - 1
  -- after every record), tumbling 1 s. W before each record: MIN, 999, 1999, 1999, 1999,
  -- 3499, 3499, 3499.
  --   y,1500 finds 1999 >= 1999 (window [1000,2000)): late, lateness 0; y never fired there
  --   x,1200: late, lateness 0; x [1000,2000) fired at the second record: damaged
  --   x,500: [0,1000): lateness 3499 - 999 = 2500; x never had that window: not damaged
  --   y,2100: [2000,3000): lateness 500; x,2999: lateness 500, x [2000,3000) damaged
  -- late 5: x 3, y 2; lateness sorted 0 0 500 500 2500: <10ms 2, <1s 2, <10s 1; admit p99 =
  -- rank ceil(0.99 * 5) = 5th + 1 = 2501, p99.9 and all too. First firings: x [1000,2000),
  -- [2000,3000) (on time), [3000,4000) (end): 3, two damaged: 1/3 final.
  it("names the key with the most late records first", function()
    local f = dir .. "/keys.csv"
    write(f, "x,1000,1,1000\nx,2000,1,1001\ny,1500,1,1002\nx,1200,1,1003\nx,3500,1,1004\n"
      .. "x,500,1,1005\ny,2100,1,1006\nx,2999,1,1007\n")
    local r = by_name(lab_on(f, {watermark_interval = 0,
      strategies = {b = wm.watermarks.bounded_out_of_orderness(0)}}):run()).b
    assert.are.same({{key = "x", late = 3}, {key = "y", late = 2}}, r.late_by_key)
    assert.are.equal(5, r.late)
    local n = {}
    for i, x in ipairs(r.lateness_hist) do n[i] = x.n end
    assert.are.same({2, 0, 2, 1, 0, 0, 0}, n)
    assert.are.same({2501, 2501, 2501}, {r.admit_p99, r.admit_p999, r.admit_max})
    assert.are.same({3, 2}, {r.first_firings, r.damaged_windows})
    assert.are.equal(1 / 3, r.first_final)
    -- a composite key is named by its fields joined with ","
    local c = by_name(lab_on(f, {watermark_interval = 0, key = {"k", "v"},
      strategies = {b = wm.watermarks.bounded_out_of_orderness(0)}}):run()).b
    assert.are.equal("x,1 3", c.top_late_key)
  end)

  -- Nearest rank on 1000 latenesses 0..999: p99 = the 990th (989) + 1, p99.9 = the 999th
  -- (998) + 1, all = 999 + 1.
  it("admit p99 / p99.9 / all are nearest ranks of the lateness, plus 1", function()
    local lat, keys = {}, {}
    for i = 1, 1000 do lat[i], keys[i] = 1000 - i, "k" end
    local r = wm.lab.breakdown({late_lateness = lat, late_keys = keys, first_firings = 0})
    assert.are.same({990, 999, 1000}, {r.admit_p99, r.admit_p999, r.admit_max})
    assert.is_nil(r.first_final)
    local n = {}
    for i, x in ipairs(r.lateness_hist) do n[i] = x.n end
    assert.are.same({10, 90, 900, 0, 0, 0, 0}, n)
  end)

  -- Under the replay a generator's out:current_processing_time() is the arrival clock: the
  -- records' arrivals in on_event, and in on_periodic_emit the emissions due from t0 = 100
  -- every 200 ms up to the last arrival plus the drain (2600 + 200): 300, 500, ..., 2700, and
  -- once more when the input ends (at 2800, after the drain), as Flink's assigner does on finish.
  it("generators read the replay's virtual clock", function()
    local events, periodic = {}, {}
    local gen = wm.watermarks.for_generator(function()
      return {
        on_event = function(_, _, _, out) events[#events + 1] = out:current_processing_time() end,
        on_periodic_emit = function(_, out) periodic[#periodic + 1] = out:current_processing_time() end,
      }
    end)
    lab_on(path, {strategies = {g = gen}}):run()
    assert.are.same({100, 950, 1000, 1250, 1600, 1700, 2200, 2600}, events)
    local want = {}
    for t = 300, 2700, 200 do want[#want + 1] = t end
    want[#want + 1] = 2800
    assert.are.same(want, periodic)
  end)

  -- with_idle_advance scored by the lab. a,100 at 100; a,900 at 900; a,1100 at 3000 (a quiet
  -- gap). Emissions at 300, 500, ... (t0 = 100).
  -- bounded 0: W = 899 from 1100 until the record at 3000; at 3100 W = 1099 fires a [0,1000)
  --   (last on-time record at 900): latency 2200; nothing late.
  -- idle advance 500ms: quiet since 900; 1100: 899, 1300: 899 (quiet 400), 1500: quiet 600:
  --   1500 - 501 = 999 fires a [0,1000): latency 600. The clock runs on: at 2900 W = 2399, so
  --   the record ts 1100 at 3000 is late for [1000,2000) (1999 <= 2399), lateness 400, dropped
  --   (admitted by 401). [1000,2000) never fired: the one first firing stays final.
  it("scores bounded_out_of_orderness(d):with_idle_advance(d2)", function()
    local f = dir .. "/stall.csv"
    write(f, "a,100,1,100\na,900,1,900\na,1100,1,3000\n")
    local r = by_name(lab_on(f, {strategies = {
      bounded = wm.watermarks.bounded_out_of_orderness(0),
      idle = wm.watermarks.bounded_out_of_orderness(0):with_idle_advance("500ms"),
      sweep = {wm.watermarks.bounded_out_of_orderness(0):with_idle_advance("500ms")},
    }}):run())
    local b, i = r.bounded, r.idle
    assert.are.same({0, 0, 2200, 1}, {b.late, b.dropped, b.latency_p50, b.latency_windows})
    assert.are.same({1, 1, 600, 1}, {i.late, i.dropped, i.latency_p50, i.latency_windows})
    assert.are.same({401, "a 1", 1, 0, 1.0}, {i.admit_max, i.top_late_key, i.first_firings,
      i.damaged_windows, i.first_final})
    assert.are.equal(600, r["sweep 0ms idle 500ms"].latency_p50)
  end)

  -- tune: bounded d in [0, 1000], no late record allowed, minimise lag_max. By hand (the
  -- first test's reasoning): the record ts 700 at 1700 finds W = 1500 - d - 1 (the emission at
  -- 1700, after the record ts 1500 at 1600): late iff W >= 999 iff d <= 500. For d >= 501 the
  -- largest lag is at 2200: 2099 - (1500 - d - 1) = 600 + d (at 2600 it is 400 + d). So the
  -- grid 0, 250, 500 is infeasible, 750 gives 1350, 1000 gives 1600, and the optimum is d = 501
  -- (1101), found by golden section between 500 and 1000 in far fewer than 1001 replays.
  it("tune: a coarse grid, then golden section, to the best feasible parameter", function()
    local lab = lab_on(path)
    local t = lab:tune{strategy = function(p) return wm.watermarks.bounded_out_of_orderness(p.d) end,
      params = {d = {0, "1s"}}, constraint = {late = 0}, objective = "lag_max"}
    assert.are.same({d = 501}, t.best.params)
    assert.are.equal(1101, t.best.value)
    assert.are.equal(1101, t.best.row.lag_max)
    local grid = {}
    for _, st in ipairs(t.path) do
      if st.phase == "grid" then grid[#grid + 1] = {st.params.d, st.feasible, st.value} end
    end
    assert.are.same({{0, false, math.huge}, {250, false, math.huge}, {500, false, math.huge},
      {750, true, 1350}, {1000, true, 1600}}, grid)
    assert.is_true(t.replays <= 30, t.replays)
    assert.matches("^grid   d=0ms +infeasible %(late 1, dropped 1%)\n", t.report)
    assert.matches("best   d=501ms +1101 %(" .. t.replays .. " replays%)\n$", t.report)
    -- the same through wm.lab.tune, with a function as constraint and objective
    local u = wm.lab.tune{lab = lab, strategy = function(p) return wm.watermarks.bounded_out_of_orderness(p.d) end,
      params = {d = {0, 1000}}, constraint = function(r) return r.late == 0 end,
      objective = function(r) return r.lag_max end}
    assert.are.same({d = 501}, u.best.params)
    assert.has_error(function() lab:tune{strategy = 1, params = {d = {0, 1}}} end,
      "wm.lab: tune: strategy must be a function(params) that returns a strategy")
    assert.has_error(function() lab:tune{strategy = print, params = {d = {5, 1}}} end,
      "wm.lab: tune: params.d: min 5 > max 1")
  end)

  it("a file out of arrival order is replayed in arrival order", function()
    local lines = {}
    for l in EVENTS:gmatch("[^\n]+") do table.insert(lines, 1, l) end
    local rev = dir .. "/reversed.csv"
    write(rev, table.concat(lines, "\n") .. "\n")
    local a, b = lab_on(path):run(), lab_on(rev):run()
    for i = 1, #a do assert.are.same(figures(a[i]), figures(b[i])) end
  end)
end)

describe("wm.lab: session windows and any aggregate", function()
  local dir
  before_each(function() dir = tmpdir() end)
  after_each(function() rmdir(dir) end)

  -- key, ts, value, arrival; sessions with a gap of 500 ms; watermark_interval 0 (bounded 0
  -- emits max_ts - 1 after every record). docs/lab.md, "Session windows".
  local SESS = "a,100,1,100\na,300,2,200\nb,400,5,300\na,1000,3,400\na,750,4,500\n"
    .. "b,200,1,600\nb,2000,1,700\na,2100,1,800\n"

  local function sess_lab(path, over)
    local spec = {
      input = {path = path, fields = FIELDS, timestamp = "ts", arrival = "arrival"},
      key = "k", window = wm.windows.session("500ms"), watermark_interval = 0,
      strategies = {b = wm.watermarks.bounded_out_of_orderness(0)},
    }
    for k, v in pairs(over or {}) do spec[k] = v end
    return wm.lab(spec)
  end

  -- By hand. bounded 0: W before each record: MIN, 99, 299, 399, 999, 999, 999, 1999.
  --   1-3: a [100,600) then [100,800) (a,300), b [400,900).
  --   4 (a,1000 at 400): a [1000,1500); then W = 999 fires a [100,800) (its last record
  --     arrived at 200: latency 200) and b [400,900) (at 300: 100).
  --   5 (a,750 at 500): [750,1250) touches the fired a [100,800): late (not dropped: it
  --     merges with a [1000,1500) into [750,1500)); lateness max(0, 999 - 1249) = 0;
  --     a [100,800) damaged.
  --   6 (b,200 at 600): [200,700) touches the fired b [400,900), whose state is gone (no
  --     allowed lateness), and ends at 699 <= 999: dropped; lateness 999 - 699 = 300.
  --   7 (b,2000 at 700): W = 1999 fires a [750,1500) (last record at 500: latency 200).
  --   end: b [2000,2500) and a [2100,2600) fire (not sampled).
  -- late 2, dropped 1, no late firing; first firings 5 (2 at the end), 2 damaged: 60 %;
  -- latency {200, 100, 200}: p50 = 2nd = 200, p99 = max = 200; admit: lateness 0, 300 ->
  -- 301 (p99: rank ceil(1.98) = 2). Perfect (sessions: min(ts to come) - 2):
  --   98, 198, 198, 198, 198, 198, 1998, 2098; lag = P - max(W, 98):
  --   0, 99, -101, -201, -801, -801, 999, 99: sorted, p50 = 4th = -101, p99 = max = 999.
  -- perfect: after record 6 (at 600) W = 1998 fires a [100,1500) (last record, a,750, at
  -- 500: latency 100) and b [200,900) (b,200 at 600: 0): latency p50 0, p99 100; 4 first
  -- firings, nothing late.
  it("late, dropped, damaged sessions, latency and lag, by hand", function()
    write(dir .. "/s.csv", SESS)
    local r = by_name(sess_lab(dir .. "/s.csv"):run{keep_output = true})
    local b = r.b
    assert.are.same({8, 2, 1, 0, 200, 200, 200}, {b.records, b.late, b.dropped, b.late_firings,
      b.latency_p50, b.latency_p99, b.latency_max})
    assert.are.same({-101, 999, 999}, {b.lag_p50, b.lag_p99, b.lag_max})
    assert.are.same({5, 2, 2, 0.6}, {b.first_firings, b.end_firings, b.damaged_windows, b.first_final})
    assert.are.same({{key = "a", late = 1}, {key = "b", late = 1}}, b.late_by_key)
    assert.are.same({301, 301}, {b.admit_p99, b.admit_max})
    local p = r.perfect
    assert.are.same({0, 0, 0, 100, 100, 0, 0, 4, 1.0}, {p.late, p.dropped, p.latency_p50, p.latency_p99,
      p.latency_max, p.lag_p50, p.lag_max, p.first_firings, p.first_final})
    local got = {}
    for _, o in ipairs(b.output) do got[#got + 1] = o.key .. "[" .. o.start .. "," .. o.stop .. ")=" .. o.count end
    assert.are.same({"a[100,800)=2", "b[400,900)=1", "a[750,1500)=2", "b[2000,2500)=1", "a[2100,2600)=1"}, got)
  end)

  -- With 1 s of allowed lateness the fired sessions keep their state: a,750 merges a
  -- [100,800) and [1000,1500) into [100,1500), whose end (1499) the watermark has not
  -- passed: not a late firing, but a second result of the session (it fires at 700,
  -- latency 200). b,200 merges into b [400,900) (W 999 >= 899): a late firing of [200,900).
  -- late 2 (both touched a fired session), dropped 0, late firings 1; a [100,800) and
  -- b [400,900) damaged; first firings: a [100,800), b [400,900), a [100,1500), and the 2
  -- at the end: 5.
  it("allowed lateness: a late firing, and an extended session that fires again", function()
    write(dir .. "/s.csv", SESS)
    local b = by_name(sess_lab(dir .. "/s.csv", {allowed_lateness = "1s"}):run{keep_output = true}).b
    assert.are.same({2, 0, 1, 5, 2}, {b.late, b.dropped, b.late_firings, b.first_firings, b.damaged_windows})
    local got = {}
    for _, o in ipairs(b.output) do got[#got + 1] = o.key .. "[" .. o.start .. "," .. o.stop .. ")=" .. o.count end
    assert.are.same({"a[100,800)=2", "b[400,900)=1", "b[200,900)=2", "a[100,1500)=4", "b[2000,2500)=1",
      "a[2100,2600)=1"}, got)
  end)

  -- a,100 then a,600: [600,1100) touches [100,600), so they merge. The perfect watermark of
  -- sessions stays one below the next timestamp's - 1 (597 after the first record), so
  -- [100,600) (end 599) does not fire before a,600 arrives: nothing late.
  it("the perfect watermark of sessions waits for a record that touches the session", function()
    write(dir .. "/t.csv", "a,100,1,100\na,600,1,200\n")
    local r = by_name(sess_lab(dir .. "/t.csv"):run{keep_output = true})
    assert.are.same({0, 1, 1}, {r.perfect.late, r.perfect.first_firings, #r.perfect.output})
    assert.are.equal(2, r.perfect.output[1].count)
  end)

  -- The aggregate changes the results, not the figures (they are the window operator's).
  -- Tumbling 1 s over EVENTS (a,900 with value 3), bounded 0ms: a [0,1000) gets ts 100,
  -- 900 and 300 (values 1, 3, 1; ts 700 is dropped): sum 5, avg 5/3, max 3; the others one
  -- record of value 1 each.
  it("sum, avg and a function as the aggregate", function()
    write(dir .. "/e.csv", EVENTS:gsub("a,900,1,950", "a,900,3,950"))
    local base = {window = wm.windows.tumbling("1s"), watermark_interval = "200ms"}
    local function run(agg)
      base.aggregate = agg
      return by_name(sess_lab(dir .. "/e.csv", base):run{keep_output = true}).b
    end
    local c, s, a = run(nil), run("sum:v"), run("avg:v")
    local f = run(function(w) return w:reduce(function(x, y) return {k = x.k, v = math.max(x.v, y.v)} end) end)
    assert.are.same(figures(c), figures(s))
    assert.are.same(figures(c), figures(a))
    assert.are.same(figures(c), figures(f))
    assert.are.same({1, 1}, {s.late, s.dropped})
    local sums = {}
    for i, o in ipairs(s.output) do sums[i] = o.v end
    assert.are.same({5, 1, 1, 1, 1}, sums)
    assert.are.same({5 / 3, 1.0, 1.0, 1.0, 1.0}, a.output)
    assert.are.equal(3, f.output[1].v)
  end)

  it("refuses a session gap function, processing-time windows and a bad aggregate", function()
    local p = dir .. "/x.csv"
    local ok, err = pcall(sess_lab, p, {window = wm.windows.session(function() return 5 end)})
    assert.is_false(ok)
    assert.matches("a session window of the lab needs a fixed gap", err, 1, true)
    ok, err = pcall(sess_lab, p, {window = wm.windows.tumbling_processing("1s")})
    assert.is_false(ok)
    assert.matches("window must be an event-time", err, 1, true)
    ok, err = pcall(sess_lab, p, {aggregate = "median:v"})
    assert.is_false(ok)
    assert.matches('aggregate must be "count", "sum:field"', err, 1, true)
  end)
end)

describe("built-in strategies in the lab: per_key_minimum, percentile_delay", function()
  local dir
  before_each(function() dir = tmpdir() end)
  after_each(function() rmdir(dir) end)

  -- x sends every 500 ms (ts = arrival); y sends at 150, then stalls: its record ts 900
  -- arrives at 2200. Tumbling 1 s, interval 200 (emissions at 300, 500, ...).
  -- per_key_minimum("k", 0): min(max_x, max_y) - 1 stays at y's 149 until 2300 (then 899):
  --   no window fires before the end: nothing late, no latency sample.
  -- with quiet 500: y (last record at 150) is quiet from 650 on: at 700 the watermark is
  --   x's 600 - 1 = 599; the emission due at 1100 comes before x,1100 (599); at 1300 1099
  --   fires x [0,1000) (last record at 600: latency 700) and y [0,1000) (at 150: 1150); at
  --   1700 1599. y,900 arrives at 2200: y is back (min 899 < 1599: nothing emitted), and
  --   the record is late (W 1599 >= 999) and dropped, lateness 600 (admit 601). At 2700 y is
  --   quiet again (2700 - 2200 >= 500): 2599 fires x [1000,2000) (last at 1600: 1100).
  --   latency {700, 1150, 1100}: p50 = 2nd = 1100, max 1150.
  it("per_key_minimum holds at the slowest key; with quiet it drops a stalled one", function()
    write(dir .. "/pk.csv", "x,100,1,100\ny,150,1,150\nx,600,1,600\nx,1100,1,1100\nx,1600,1,1600\n"
      .. "x,2100,1,2100\ny,900,1,2200\nx,2600,1,2600\n")
    local r = by_name(wm.lab{
      input = {path = dir .. "/pk.csv", fields = FIELDS, timestamp = "ts", arrival = "arrival"},
      key = "k", window = wm.windows.tumbling("1s"), watermark_interval = 200,
      strategies = {pk = {wm.watermarks.per_key_minimum("k", 0), wm.watermarks.per_key_minimum("k", 0, 500)}},
    }:run())
    local a, b = r["pk 0ms"], r["pk 0ms quiet 500ms"]
    assert.are.same({0, 0, 0}, {a.late, a.dropped, a.latency_windows})
    assert.are.same({1, 1, 601, "y 1"}, {b.late, b.dropped, b.admit_max, b.top_late_key})
    assert.are.same({3, 1100, 1150}, {b.latency_windows, b.latency_p50, b.latency_max})
  end)

  -- percentile_delay(p, 4): records (ts at arrival) 1000 at 1000, 800 at 1050, 1500 at
  -- 1500, 1100 at 1550; out-of-orderness 0, 200, 0, 400. Emissions at 1200 and 1400: sample
  -- {0, 200}: p50 = 1st = 0, p99 = 2nd = 200: 1000 - 0 - 1 = 999, 1000 - 200 - 1 = 799. At
  -- 1600: {0, 200, 0, 400} sorted 0 0 200 400: p50 = 2nd = 0: 1499; p99 = 4th = 400: 1099.
  -- A fifth record (2000 at 1700, out-of-orderness 0) replaces the first (the sample holds 4):
  -- {200, 0, 400, 0} at 1800: p50 0 -> 1999, p99 400 -> 1599.
  it("percentile_delay trails the highest timestamp by a percentile of the disorder", function()
    local function wms(p)
      local th = wm.testing.harness(function(input)
        return input:assign_timestamps_and_watermarks(wm.watermarks.percentile_delay(p, 4):with_timestamp_field("ts"))
      end, {watermark_interval = 200, processing_time = 1000})
      local got = {}
      local function at(t)
        th:advance_processing_time(t - th:processing_time())
      end
      for _, e in ipairs({{1000, 1000}, {800, 1050}, {1200}, {1400}, {1500, 1500}, {1100, 1550}, {1600},
                          {2000, 1700}, {1800}}) do
        at(e[2] or e[1])
        if e[2] then th:push({ts = e[1]}, e[1]) else got[#got + 1] = th:current_watermark() end
      end
      th:close()
      return got
    end
    assert.are.same({999, 999, 1499, 1999}, wms(0.5))
    assert.are.same({799, 799, 1099, 1599}, wms(0.99))
    local ok, err = pcall(wm.watermarks.percentile_delay, 99)
    assert.is_false(ok)
    assert.matches("p must be a fraction in (0, 1]", err, 1, true)
  end)
end)

describe("arrival replay", function()
  local path
  with_events(function(_d, p) path = p end)

  -- The same pipeline in a wm.testing harness, driven by hand: the clock moved to each
  -- arrival, then the line pushed; after the last one the clock runs one interval more.
  local function by_hand(strategy)
    local th = wm.testing.harness(function(input)
      return input:parse_csv(FIELDS)
        :assign_timestamps_and_watermarks(strategy:with_timestamp_field("ts"))
        :key_by("k"):window(wm.windows.tumbling("1s")):count()
    end, {watermark_interval = 200, processing_time = 100})
    local fired = {}
    for line in EVENTS:gmatch("[^\n]+") do
      local ts, arrival = line:match("^[^,]*,(%d+),%d+,(%d+)$")
      th:advance_processing_time(tonumber(arrival) - th:processing_time())
      th:push(line, tonumber(ts))
      for _, o in ipairs(th:output()) do fired[#fired + 1] = o end
    end
    th:advance_processing_time(200)
    th:finish()
    for _, o in ipairs(th:output()) do fired[#fired + 1] = o end
    return fired
  end

  it("gives the same firings as a wm.testing harness driven by the same clock", function()
    -- a periodic custom generator too: its emissions depend on the clock alone
    local function trailing()
      return wm.watermarks.for_generator(function()
        return {max = math.mininteger,
                on_event = function(self, _, ts) if ts > self.max then self.max = ts end end,
                on_periodic_emit = function(self, out)
                  if self.max > math.mininteger then out:emit_watermark(self.max - 300) end
                end}
      end)
    end
    local lab = wm.lab{
      input = {path = path, fields = FIELDS, timestamp = "ts", arrival = "arrival"},
      key = "k", window = wm.windows.tumbling("1s"), watermark_interval = 200,
      strategies = {b = wm.watermarks.bounded_out_of_orderness("500ms"), custom = trailing()},
    }
    local r = by_name(lab:run{keep_output = true})
    local want_b = by_hand(wm.watermarks.bounded_out_of_orderness("500ms"))
    assert.are.same(want_b, r.b.output)
    assert.are.same(by_hand(trailing()), r.custom.output)
    -- and by hand: bounded 500ms fires a [0,1000) at 1700 with 3 records (the 4th, ts 700,
    -- is dropped), then b and a [1000,2000) at 2700, then [2000,3000) at the end (windows
    -- that fire together fire in the order they were created: b's first, at 1250 and 2200)
    local counts = {}
    for _, o in ipairs(want_b) do counts[#counts + 1] = o.key .. "@" .. o.start .. "=" .. o.count end
    assert.are.same({"a@0=3", "b@1000=1", "a@1000=1", "b@2000=1", "a@2000=1"}, counts)
  end)
end)

describe("wm.lab errors", function()
  local dir
  before_each(function() dir = tmpdir() end)
  after_each(function() rmdir(dir) end)

  local function spec(path, over)
    local s = {
      input = {path = path, fields = FIELDS, timestamp = "ts", arrival = "arrival"},
      key = "k", window = wm.windows.tumbling("1s"),
      strategies = {b = wm.watermarks.bounded_out_of_orderness(0)},
    }
    for k, v in pairs(over or {}) do s[k] = v end
    return s
  end

  it("names the file and line of a bad record", function()
    local p = dir .. "/bad.csv"
    write(p, "a,1,1,1\na,x,1,2\n")
    local ok, err = pcall(function() wm.lab(spec(p)):run() end)
    assert.is_false(ok)
    assert.matches("bad.csv:2: field 'ts': 'x' is not an integer", err, 1, true)
  end)

  it("needs integer timestamp and arrival columns", function()
    local s = spec(dir .. "/x.csv")
    s.input.fields = {"k", "ts", "v:integer", "arrival:integer"}
    local ok, err = pcall(wm.lab, s)
    assert.is_false(ok)
    assert.matches("input.timestamp: column 'ts' must be declared 'ts:integer'", err, 1, true)
    s.input.arrival = "when"
    s.input.fields[2] = "ts:integer"
    ok, err = pcall(wm.lab, s)
    assert.is_false(ok)
    assert.matches("input.arrival: no column 'when' in input.fields", err, 1, true)
  end)

  it("rejects other windows, a candidate named perfect and non-strategies", function()
    local ok, err = pcall(wm.lab, spec("x.csv", {window = wm.windows.global()}))
    assert.is_false(ok)
    assert.matches("window must be an event-time wm.windows.tumbling", err, 1, true)
    ok, err = pcall(wm.lab, spec("x.csv", {strategies = {perfect = wm.watermarks.monotonous()}}))
    assert.is_false(ok)
    assert.matches("two candidates are named 'perfect'", err, 1, true)
    ok, err = pcall(wm.lab, spec("x.csv", {strategies = {x = 5}}))
    assert.is_false(ok)
    assert.matches("strategies['x'] is not a strategy", err, 1, true)
  end)

  it("a failing generator stops the lab naming the candidate and the line being replayed", function()
    local p = dir .. "/ev.csv"
    write(p, EVENTS)
    local s = spec(p, {strategies = {broken = wm.watermarks.for_generator(function()
      return {on_event = function(_, _, ts) if ts > 1000 then error("boom at " .. ts) end end}
    end)}})
    local ok, err = pcall(function() wm.lab(s):run() end)
    assert.is_false(ok)
    assert.matches("wm.lab: candidate 'broken': .*boom at 1200", err)
    assert.matches("while replaying " .. p .. ":4", err, 1, true)
  end)

  it("says when the file cannot be read", function()
    local ok, err = pcall(function() wm.lab(spec(dir .. "/missing.csv")):run() end)
    assert.is_false(ok)
    assert.matches("cannot read .*missing.csv", err)
  end)
end)

describe("wmrun lab", function()
  local dir
  with_events(function(d) dir = d end)
  before_each(function()
    write(dir .. "/lab.lua", [[
local wm = require("wm")
return wm.lab{
  input = {path = "events.csv", fields = {"k", "ts:integer", "v:integer", "arrival:integer"},
           timestamp = "ts", arrival = "arrival"},
  key = "k", window = wm.windows.tumbling("1s"), allowed_lateness = 0,
  watermark_interval = "200ms",
  strategies = {
    ["bounded 0"] = wm.watermarks.bounded_out_of_orderness(0),
    sweep = wm.lab.sweep(wm.watermarks.bounded_out_of_orderness, {"500ms"}),
  },
}
]])
  end)

  it("prints one row per candidate, perfect first (the data file next to the lab file)", function()
    local out, err, code = h.wmrun("lab '" .. dir .. "/lab.lua'")
    assert.are.equal("", err)
    assert.are.equal(0, code)
    local rows = {}
    for l in out:gmatch("[^\n]+") do rows[#rows + 1] = l end
    assert.are.equal(8, #rows)
    assert.matches("^8 records, tumbling 1s windows", rows[1])
    assert.matches("^candidate +records +late +dropped +late firings +lag p50 .* latency max +first final "
      .. "+admit p99 +admit p99.9 +admit all +top late key$", rows[2])
    assert.are.same({"perfect", "8", "0", "0", "0", "0", "0", "0", "100", "450", "450", "100.00%", "-", "-",
      "-", "-"}, {rows[3]:match("^(%S+)" .. string.rep("%s+(%S+)", 15) .. "$")})
    -- the breakdown figures: see "breaks the late records down by key and lateness" above
    assert.matches("^bounded 0 +8 +1 +1 +0 +0 +600 +600 +700 +1050 +1050 +80.00%% +501 +501 +501 +a 1$", rows[4])
    assert.matches("^sweep 500ms +8 +1 +1 +0 +200 +1100 +1100 +1100 +1450 +1450 +80.00%% +1 +1 +1 +a 1$", rows[5])
    assert.matches("^late records by key", rows[6])
    assert.are.equal("bounded 0    by key: a 1;  lateness: <10ms 0 <100ms 0 <1s 1 <10s 0 <1min 0 <10min 0 >=10min 0",
      rows[7])
    assert.matches("^sweep 500ms  by key: a 1;  lateness: <10ms 1 <100ms 0", rows[8])
  end)

  it("--json prints one object per line with the documented fields", function()
    local out, err, code = h.wmrun("lab '" .. dir .. "/lab.lua' --json")
    assert.are.equal("", err)
    assert.are.equal(0, code)
    local cjson = require("cjson")
    local rows = {}
    for l in out:gmatch("[^\n]+") do rows[#rows + 1] = cjson.decode(l) end
    assert.are.equal(3, #rows)
    assert.are.same({name = "bounded 0", records = 8, late = 1, dropped = 1, late_firings = 0,
      lag_p50 = 0, lag_p99 = 600, lag_max = 600, latency_p50 = 700, latency_p99 = 1050,
      latency_max = 1050, latency_windows = 3, first_firings = 5, damaged_windows = 1, first_final = 0.8,
      admit_p99 = 501, admit_p999 = 501, admit_max = 501, top_late_key = "a 1", late_by_key = {{"a", 1}},
      lateness_hist = {{lt = 10, n = 0}, {lt = 100, n = 0}, {lt = 1000, n = 1}, {lt = 10000, n = 0},
        {lt = 60000, n = 0}, {lt = 600000, n = 0}, {n = 0}}}, rows[2])
    assert.are.equal("perfect", rows[1].name)
  end)

  it("bad usage exits 2; a lab file that returns no lab fails naming it", function()
    local _, err, code = h.wmrun("lab '" .. dir .. "/lab.lua' --bogus")
    assert.are.equal(2, code)
    assert.matches("unknown option '--bogus'", err, 1, true)
    _, err, code = h.wmrun("lab")
    assert.are.equal(2, code)
    assert.matches("no lab file given", err, 1, true)
    _, err, code = h.wmrun("lab '" .. dir .. "/lab.lua' --plot x.png")
    assert.are.equal(2, code)
    assert.matches("--plot writes an HTML page: name it .html (got 'x.png')", err, 1, true)
    write(dir .. "/nolab.lua", "return 42\n")
    _, err, code = h.wmrun("lab '" .. dir .. "/nolab.lua'")
    assert.are.equal(1, code)
    assert.matches("nolab.lua: a lab file must return wm.lab{...}, got number", err, 1, true)
  end)
end)

describe("wmrun lab stops cleanly (issue 34)", function()
  local dir
  before_each(function() dir = h.tmpdir() end)
  after_each(function() h.rmdir(dir) end)

  local LAB = [[
local wm = require("wm")
return wm.lab{
  input = {path = "%s", fields = {"k", "ts:integer", "v:integer", "arrival:integer"},
           timestamp = "ts", arrival = "arrival"},
  key = "k", window = wm.windows.tumbling("1s"), watermark_interval = 1,
  strategies = {%s},
}
]]

  -- a data error is one line naming the file, its line and what was wrong: no traceback of
  -- lab.lua's internals
  it("a bad data file: one clean message, exit 1", function()
    local lab = dir .. "/lab.lua"
    write(lab, LAB:format("bad.csv", "b = wm.watermarks.bounded_out_of_orderness(0)"))
    for _, case in ipairs({
      {"a,1,1,1\na,x,1,2\n", dir .. "/bad.csv:2: field 'ts': 'x' is not an integer"},
      {"a,1,1,1\na,2,1\n", dir .. "/bad.csv:2: expected 4 fields, got 3"},
      {"", dir .. "/bad.csv holds no records"},
    }) do
      write(dir .. "/bad.csv", case[1])
      local out, err, code = h.wmrun("lab '" .. lab .. "'")
      assert.are.equal(1, code)
      assert.are.equal("", out)
      assert.are.equal("wmrun: wm.lab: " .. case[2] .. "\n", err)
    end
    os.remove(dir .. "/bad.csv")
    local _, err, code = h.wmrun("lab '" .. lab .. "'")
    assert.are.equal(1, code)
    assert.are.equal("wmrun: wm.lab: cannot read " .. dir .. "/bad.csv: No such file or directory\n", err)
  end)

  -- A Lua generator is asked at every interval (1 ms) of a 10^15 ms gap: the lab would run
  -- for ages. It is started in the background from sh, as from a script: SIGINT comes in
  -- ignored (POSIX), as in the report where two SIGINTs left the lab running. The lab says
  -- it was interrupted, prints no table, and exits 130, as an interrupted job does.
  for _, sig in ipairs({"INT", "TERM"}) do
    it("SIG" .. sig .. " stops it with a message and exit status 130", function()
      os.execute("mkdir '" .. dir .. "/bg'")
      write(dir .. "/bg/gap.csv", "a,100,1,100\na,1500,2,1000000000000100\n")
      local job = h.bg_job(dir .. "/bg", LAB:format("gap.csv", string.format([=[
    stepper = wm.watermarks.for_generator(function()
      return {max = math.mininteger, calls = 0,
        on_event = function(self, _, ts) self.max = math.max(self.max, ts) end,
        on_periodic_emit = function(self, out)
          self.calls = self.calls + 1
          if self.calls == 1000 then io.open(%q, "w"):close() end
          if self.max > math.mininteger then out:emit_watermark(self.max - 1) end
        end}
    end)]=], dir .. "/stepping")), "lab")
      h.finally(function() job.kill() end)
      h.wait_for(function()
        local f = io.open(dir .. "/stepping")
        if f then f:close() end
        return f ~= nil
      end, "the lab to step through the gap", 60)
      job.signal(sig)
      assert.are.equal(130, job.wait())
      assert.are.equal("", h.read_or_empty(job.out))
      assert.are.equal("wmrun: lab: interrupted by SIG" .. sig .. " while replaying candidate 'stepper'\n",
        h.read_or_empty(job.err))
    end)
  end
end)

describe("wmrun lab --plot", function()
  local dir
  with_events(function(d) dir = d end)

  it("writes one self-contained page: both charts, the table, the Pareto front marked", function()
    local lab = lab_on(dir .. "/events.csv")
    local page = require("wm.lab.plot").html(lab, lab:run{curve = 100, marks = 100}, "t")
    assert.matches('<svg[^>]*id="pareto"', page)
    assert.matches('<svg[^>]*id="curves"', page)
    -- nothing loaded from elsewhere
    assert.is_nil(page:find("<script src", 1, true))
    assert.is_nil(page:find("<link", 1, true))
    for url in page:gmatch("https?://[^\"' ]*") do assert.are.equal("http://www.w3.org/2000/svg", url) end
    -- perfect (latency p50 100, all on time) beats both bounded rows (700 and 1100 ms, 7 of 8
    -- on time): it alone is on the front
    assert.matches("perfect &#9675;", page, 1, true)
    assert.is_nil(page:find("bounded 0ms &#9675;", 1, true))
    assert.is_nil(page:find("bounded 500ms &#9675;", 1, true))
    -- one late record per bounded candidate, marked on its curve
    local _, crosses = page:gsub('class="late"', "")
    assert.are.equal(2, crosses)
    -- the breakdown in the table (bounded 0: 80.00 % final, admitted by 501, key a) and tooltip
    assert.truthy(page:find("<td>80.00%</td><td>501</td><td>501</td><td>501</td><td>a 1</td>", 1, true))
    assert.truthy(page:find("most late records: a 1; allowed lateness admitting 99% / all: 501 / 501 ms", 1, true))
  end)

  it("refuses a file name that is not .html", function()
    write(dir .. "/lab.lua", "return 1\n")
    local _, err, code = h.wmrun("lab '" .. dir .. "/lab.lua' --plot out.png")
    assert.are.equal(2, code)
    assert.matches("--plot writes an HTML page", err, 1, true)
  end)

  it("writes the page given with --plot", function()
    write(dir .. "/lab.lua", [[
local wm = require("wm")
return wm.lab{input = {path = "events.csv", fields = {"k", "ts:integer", "v:integer", "arrival:integer"},
  timestamp = "ts", arrival = "arrival"}, key = "k", window = wm.windows.tumbling("1s"),
  strategies = {b = wm.watermarks.bounded_out_of_orderness(0)}}
]])
    local _, err, code = h.wmrun("lab '" .. dir .. "/lab.lua' --plot '" .. dir .. "/out.html'")
    assert.are.equal("", err)
    assert.are.equal(0, code)
    assert.matches("^<!DOCTYPE html>", h.read(dir .. "/out.html"))
  end)
end)

describe("read_lines with arrival times (a job on the recorded clock)", function()
  local dir
  with_events(function(d) dir = d end)

  local function job(source_opts, body)
    write(dir .. "/job.lua", string.format([[
local wm = require("wm")
local env = wm.env{watermark_interval = "200ms"}
local lines = env:read_lines(%q, %s)
%s
env:execute()
]], dir .. "/events.csv", source_opts, body))
    return h.wmrun("'" .. dir .. "/job.lua'")
  end

  local WINDOWS = [[
lines:parse_csv{"k", "ts:integer", "v:integer", "arrival:integer"}
  :assign_timestamps_and_watermarks(wm.watermarks.bounded_out_of_orderness("500ms"):with_timestamp_field("ts"))
  :key_by("k"):window(wm.windows.tumbling("1s"))
  :process(function(key, ctx, records, out)
    out(key .. "@" .. ctx.window.start .. " n=" .. #records .. " at " .. ctx.current_processing_time)
  end)
  :print()]]

  -- By hand (as in "wm.lab figures"): the clock starts at 100, emissions at 300, 500, ...;
  -- at 1700, just before the record that arrives then, the watermark 999 fires a [0,1000)
  -- with 3 records; the record (ts 700) is dropped; the file ends at the last arrival
  -- (2600): the end of input fires the rest, in the order the windows were created.
  local WANT = "a@0 n=3 at 1700\nb@1000 n=1 at 2600\na@1000 n=1 at 2600\n" ..
               "b@2000 n=1 at 2600\na@2000 n=1 at 2600\n"

  it("arrival = a parse_csv column: periodic watermarks on the arrival clock", function()
    local out, err, code = job('{arrival = "arrival"}', WINDOWS)
    assert.are.equal("", err)
    assert.are.equal(0, code)
    assert.are.equal(WANT, out)
  end)

  it("arrival = a function of the line gives the same", function()
    local out, err, code = job('{arrival = function(line) return tonumber(line:match("(%d+)$")) end}', WINDOWS)
    assert.are.equal("", err)
    assert.are.equal(0, code)
    assert.are.equal(WANT, out)
  end)

  -- arrivals 100 950 | 1000 1250 1600 1700 | 2200 2600: processing-time windows of 1 s
  -- count 2, 4 and 2 records
  it("processing-time windows run on the arrival clock", function()
    local out, err, code = job('{arrival = "arrival", speed = "max"}', [[
lines:parse_csv{"k", "ts:integer", "v:integer", "arrival:integer"}
  :key_by(function() return "all" end):window(wm.windows.tumbling_processing("1s")):count()
  :print()]])
    assert.are.equal("", err)
    assert.are.equal(0, code)
    assert.are.equal('{"count":2,"key":"all","start":0,"stop":1000}\n' ..
      '{"count":4,"key":"all","start":1000,"stop":2000}\n' ..
      '{"count":2,"key":"all","start":2000,"stop":3000}\n', out)
  end)

  -- speed = x paces the lines on the real clock: what comes out depends on when periodic
  -- emissions happen, so this job has a watermark after every record (interval 0), which
  -- does not depend on the clock. In arrival order (the file here is reversed): ts 1200
  -- brings W = 1199, which fires a [0,1000) with 3 records; ts 700 then comes too late
  -- (dropped); ts 2100 fires b and a [1000,2000); the end fires [2000,3000).
  it("speed = x replays in arrival order on the real clock", function()
    local lines = {}
    for l in EVENTS:gmatch("[^\n]+") do table.insert(lines, 1, l) end
    write(dir .. "/events.csv", table.concat(lines, "\n") .. "\n")
    write(dir .. "/job.lua", string.format([[
local wm = require("wm")
local env = wm.env{watermark_interval = 0}
local seen = {}
env:read_lines(%q, {arrival = "arrival", speed = 1000})
  :parse_csv{"k", "ts:integer", "v:integer", "arrival:integer"}
  :map(function(r) seen[#seen + 1] = r.arrival return r end)
  :assign_timestamps_and_watermarks(wm.watermarks.bounded_out_of_orderness(0):with_timestamp_field("ts"))
  :key_by("k"):window(wm.windows.tumbling("1s")):count()
  :print()
env:execute()
print(table.concat(seen, " "))
]], dir .. "/events.csv"))
    local out, err, code = h.wmrun("'" .. dir .. "/job.lua'")
    assert.are.equal("", err)
    assert.are.equal(0, code)
    assert.are.equal('{"count":3,"key":"a","start":0,"stop":1000}\n' ..
      '{"count":1,"key":"b","start":1000,"stop":2000}\n{"count":1,"key":"a","start":1000,"stop":2000}\n' ..
      '{"count":1,"key":"b","start":2000,"stop":3000}\n{"count":1,"key":"a","start":2000,"stop":3000}\n' ..
      "100 950 1000 1250 1600 1700 2200 2600\n", out)
  end)

  it("says what it cannot replay", function()
    local _, err, code = job('{arrival = "arrival", speed = 0}', WINDOWS)
    assert.are.equal(1, code)
    assert.matches("read_lines: speed must be 'max' or a positive number, got 0", err, 1, true)
    _, err, code = job('{arrival = "when"}', WINDOWS)
    assert.are.equal(1, code)
    assert.matches("arrival = 'when' must be a column of the parse_csv declared 'when:integer'", err, 1, true)
    _, err, code = job('{arrival = function() return nil end}', WINDOWS)
    assert.are.equal(1, code)
    assert.matches("events.csv:1: the arrival function returned nil", err, 1, true)
    _, err, code = job('{arrival = 5}', WINDOWS)
    assert.are.equal(1, code)
    assert.matches("read_lines: arrival must be a column name or a function", err, 1, true)
  end)
end)

describe("wm.lab with a recorded Kafka topic as input", function()
  -- (the jobs and the lab run in wmrun, as the connector specs' jobs do: librdkafka's threads
  -- end with their process)
  local services = require("services")
  local cjson = require("cjson")
  local k, dir
  before_each(function()
    k = services.kafka{"lab:1", "bad:1"}
    dir = tmpdir()
  end)
  after_each(function()
    k:stop()
    rmdir(dir)
  end)

  -- messages: the values of EVENTS without their arrival column, each produced with its
  -- arrival as its timestamp (the mock keeps the producer's CreateTime); read back, the
  -- timestamps are the arrivals, so the figures are those of EVENTS worked out by hand at the
  -- top of this file.
  local function produce(topic, lines)
    write(dir .. "/in.txt", table.concat(lines, "\n") .. "\n")
    write(dir .. "/produce.lua", [[
local wm = require("wm")
local env = wm.env{}
env:read_lines(arg[1])
  :assign_timestamps_and_watermarks(wm.watermarks.no_watermarks():with_timestamp_assigner(function(l)
    return tonumber(l:match("(%d+)$"))
  end))
  :map(function(l) return (l:gsub(",%d+$", "")) end)
  :write_kafka{brokers = arg[2], topic = arg[3], format = "text"}
env:execute()
]])
    local _, err, code = h.wmrun(string.format("'%s/produce.lua' '%s/in.txt' '%s' %s", dir, dir, k.bootstrap, topic))
    assert.are.equal(0, code, err)
  end

  local function lab(topic)
    write(dir .. "/lab.lua", string.format([[
local wm = require("wm")
return wm.lab{
  input = {kafka = {brokers = %q, topic = %q}, fields = {"k", "ts:integer", "v:integer"}, timestamp = "ts"},
  key = "k", window = wm.windows.tumbling("1s"), watermark_interval = "200ms",
  strategies = {bounded = {wm.watermarks.bounded_out_of_orderness(0), wm.watermarks.bounded_out_of_orderness("500ms")}},
}
]], k.bootstrap, topic))
    return h.wmrun("lab '" .. dir .. "/lab.lua' --json")
  end

  it("arrival = each message's timestamp: the figures of the recorded file", function()
    local lines = {}
    for l in EVENTS:gmatch("[^\n]+") do lines[#lines + 1] = l end
    produce("lab", lines)
    local out, err, code = lab("lab")
    assert.are.equal(0, code, err)
    local r = {}
    for l in out:gmatch("[^\n]+") do
      local row = cjson.decode(l)
      r[row.name] = row
    end
    assert.are.same({8, 0, 0, 0, 0, 0, 0, 100, 450, 450}, figures(r.perfect))
    assert.are.same({8, 1, 1, 0, 0, 600, 600, 700, 1050, 1050}, figures(r["bounded 0ms"]))
    assert.are.same({8, 1, 1, 0, 200, 1100, 1100, 1100, 1450, 1450}, figures(r["bounded 500ms"]))
  end)

  it("a bad message is named by its topic, partition and offset", function()
    produce("bad", {"a,100,1,100", "a,x,1,200"})
    local _, err, code = lab("bad")
    assert.are.equal(1, code)
    assert.matches("kafka topic 'bad' partition 0 offset 1: field 'ts': 'x' is not an integer", err, 1, true)
    local ok, e = pcall(wm.lab, {input = {kafka = {brokers = "x", topic = "t"}, path = "a.csv", fields = {"ts:integer"},
      timestamp = "ts"}, key = "k", window = wm.windows.tumbling("1s"), strategies = {m = wm.watermarks.monotonous()}})
    assert.is_false(ok)
    assert.matches("input.kafka replaces input.path and input.arrival", e, 1, true)
  end)
end)
