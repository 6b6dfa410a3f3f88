-- SQL's time-bounded and table joins (issue 29): outer interval joins with the output
-- watermark held back, window joins on HOP and CUMULATE, event-time temporal joins and lookup
-- joins. Every expected output is worked out by hand in the comments.
local h = require("helper")
local sql_run = require("sql_run")

local DDL = [[
SET 'pipeline.auto-watermark-interval' = '0';
CREATE TABLE A (id INT, name STRING, ms BIGINT, ts AS TO_TIMESTAMP_LTZ(ms, 3),
  WATERMARK FOR ts AS ts - INTERVAL '1' SECOND)
  WITH ('connector' = 'filesystem', 'path' = 'a.csv', 'format' = 'csv');
CREATE TABLE B (id INT, name STRING, ms BIGINT, ts AS TO_TIMESTAMP_LTZ(ms, 3),
  WATERMARK FOR ts AS ts - INTERVAL '1' SECOND)
  WITH ('connector' = 'filesystem', 'path' = 'b.csv', 'format' = 'csv');
]]
local L = 8 -- the line of the query (after DDL)

-- Each file in time order, so that no row is late whichever way the sources interleave:
--   a1 id 1 at 10 s; a2 id 2 at 20 s; a3 id 3 at 30 s; a4 a NULL id at 40 s
--   b2 id 1 at 4.999 s, b1 id 1 at 5 s, b3 id 1 at 15 s, b4 id 1 at 15.001 s, b5 id 2 at 20 s,
--   b6 a NULL id at 40 s
local A = "1,a1,10000\n2,a2,20000\n3,a3,30000\n,a4,40000\n"
local B = "1,b2,4999\n1,b1,5000\n1,b3,15000\n1,b4,15001\n2,b5,20000\n,b6,40000\n"

local function run(query, args, files)
  files = files or {}
  files["a.csv"], files["b.csv"] = files["a.csv"] or A, files["b.csv"] or B
  return sql_run.run(DDL .. query, files, {args = args})
end

-- the lines of `out`, sorted, without a parallel print's "N> " prefix
local function sorted(out)
  local t = {}
  for l in out:gmatch("[^\n]+") do t[#t + 1] = (l:gsub("^%d+> ", "")) end
  table.sort(t)
  return t
end

local function ok_sorted(query, args, files)
  local out, err, code = run(query, args, files)
  assert.are.equal(0, code, err)
  return sorted(out)
end

local function err_of(query, files)
  local out, err, code = run(query, nil, files)
  assert.are_not.equal(0, code, out)
  return err
end

-- a Lua job in a folder of its own: its stdout, stderr and exit code
local function lua_job(text, args)
  local dir = h.tmpdir()
  local job = dir .. "/job.lua"
  local f = assert(io.open(job, "w"))
  f:write(text)
  f:close()
  local out, err, code = h.wmrun((args or "") .. " " .. h.shell_quote(job))
  h.rmdir(dir)
  return out, err, code
end

describe("SQL outer interval joins", function()
  local ON = " ON a.id = b.id AND a.ts BETWEEN b.ts - INTERVAL '5' SECOND AND b.ts + INTERVAL '5' SECOND;\n"
  -- -5 s <= a.ts - b.ts <= 5 s: a1-b1 (5 s), a1-b3 (-5 s), a2-b5 (0) meet; a3 (no b of id 3),
  -- a4 (NULL id), b2 (5.001 s), b4 (-5.001 s) and b6 (NULL id) meet nothing
  local PAIRS = {"+I[a1, b1]", "+I[a1, b3]", "+I[a2, b5]"}
  local function with(list)
    local t = {}
    for _, x in ipairs(PAIRS) do t[#t + 1] = x end
    for _, x in ipairs(list) do t[#t + 1] = x end
    table.sort(t)
    return t
  end

  it("LEFT JOIN adds the left rows that met nothing, padded with NULL", function()
    assert.are.same(with{"+I[a3, <NULL>]", "+I[a4, <NULL>]"},
      ok_sorted("SELECT a.name, b.name FROM A a LEFT JOIN B b" .. ON))
  end)

  it("RIGHT JOIN the right rows, FULL JOIN both", function()
    assert.are.same(with{"+I[<NULL>, b2]", "+I[<NULL>, b4]", "+I[<NULL>, b6]"},
      ok_sorted("SELECT a.name, b.name FROM A a RIGHT OUTER JOIN B b" .. ON))
    assert.are.same(with{"+I[a3, <NULL>]", "+I[a4, <NULL>]", "+I[<NULL>, b2]", "+I[<NULL>, b4]",
      "+I[<NULL>, b6]"}, ok_sorted("SELECT a.name, b.name FROM A a FULL JOIN B b" .. ON))
  end)

  it("WHERE filters the joined rows of an outer join (it is not part of the join)", function()
    -- the LEFT JOIN's rows, then b.name IS NULL: the two padded ones
    assert.are.same({"+I[a3, <NULL>]", "+I[a4, <NULL>]"},
      ok_sorted("SELECT a.name, b.name FROM A a LEFT JOIN B b" .. ON:sub(1, -3) .. " WHERE b.name IS NULL;\n"))
  end)

  it("gives the same rows at -p 2 --threads 2", function()
    assert.are.same(with{"+I[a3, <NULL>]", "+I[a4, <NULL>]", "+I[<NULL>, b2]", "+I[<NULL>, b4]",
      "+I[<NULL>, b6]"}, ok_sorted("SELECT a.name, b.name FROM A a FULL JOIN B b" .. ON, "-p 2 --threads 2"))
  end)

  it("pads a row when the watermark passes its bound, and holds the output watermark back", function()
    -- one source split in two, in this order; the watermark after each row is its time - 1 ms.
    -- a.rt BETWEEN b.rt - 5 s AND b.rt + 2 s: a left row is kept until W reaches a.rt + 5 s, a
    -- right one until b.rt + 2 s; the output watermark is W - max(5 s, 2 s) (Flink's rule).
    --   a1 id 1 at 10 s (W 9.999 s, out 4.999 s)
    --   b1 id 1 at 12 s: meets a1 (-2 s), seen downstream at 4.999 s; W 11.999 s, out 6.999 s
    --   a2 id 2 at 20 s: W 19.999 s: a1 and b1 go (met); out 14.999 s
    --   b2 id 3 at 21 s: W 20.999 s, out 15.999 s
    --   a3 id 1 at 40 s: W 39.999 s: b2 goes at 23 s, a2 at 25 s, both padded, seen at 15.999 s;
    --     out 34.999 s
    --   the end: a3 padded, seen at 34.999 s
    -- (without the hold-back the watermarks would be 9.999, 20.999, 20.999 and 39.999 s)
    local out, err, code = lua_job([=[
local wm = require("wm")
local env = wm.env{watermark_interval = 0}
local s = env:from_elements(
  {side = "a", id = 1, name = "a1", ts = 10000}, {side = "b", id = 1, name = "b1", ts = 12000},
  {side = "a", id = 2, name = "a2", ts = 20000}, {side = "b", id = 3, name = "b2", ts = 21000},
  {side = "a", id = 1, name = "a3", ts = 40000})
  :assign_timestamps_and_watermarks(wm.watermarks.bounded_out_of_orderness("0ms"):with_timestamp_field("ts"))
env:create_temporary_view("A", s:filter(function(r) return r.side == "a" end), {"id:INT", "name:STRING", "rt:rowtime"})
env:create_temporary_view("B", s:filter(function(r) return r.side == "b" end), {"id:INT", "name:STRING", "rt:rowtime"})
env:execute_sql([[SELECT a.name, b.name, CURRENT_WATERMARK(a.rt) AS w FROM A a FULL JOIN B b
  ON a.id = b.id AND a.rt BETWEEN b.rt - INTERVAL '5' SECOND AND b.rt + INTERVAL '2' SECOND]])
env:execute()
]=])
    assert.are.equal(0, code, err)
    assert.are.equal("+I[a1, b1, 1970-01-01 00:00:04.999]\n+I[<NULL>, b2, 1970-01-01 00:00:15.999]\n"
      .. "+I[a2, <NULL>, 1970-01-01 00:00:15.999]\n+I[a3, <NULL>, 1970-01-01 00:00:34.999]\n", out)
  end)

  it("a late row is dropped and counted, not padded", function()
    -- a1 at 10 s; b1 at 30 s (W 9.999 s); a2 at 5 s: W 29.999 s, late (a LEFT JOIN does not
    -- pad it); at the end a1 (met nothing) is padded
    local out, err, code = lua_job([=[
local wm = require("wm")
local env = wm.env{watermark_interval = 0}
local s = env:from_elements(
  {side = "a", id = 1, name = "a1", ts = 10000}, {side = "b", id = 1, name = "b1", ts = 30000},
  {side = "a", id = 1, name = "a2", ts = 5000})
  :assign_timestamps_and_watermarks(wm.watermarks.bounded_out_of_orderness("0ms"):with_timestamp_field("ts"))
env:create_temporary_view("A", s:filter(function(r) return r.side == "a" end), {"id:INT", "name:STRING", "rt:rowtime"})
env:create_temporary_view("B", s:filter(function(r) return r.side == "b" end), {"id:INT", "name:STRING", "rt:rowtime"})
env:execute_sql([[SELECT a.name, b.name FROM A a LEFT JOIN B b
  ON a.id = b.id AND a.rt BETWEEN b.rt - INTERVAL '5' SECOND AND b.rt + INTERVAL '5' SECOND]])
env:execute()
]=], "--metrics")
    assert.are.equal(0, code, err)
    assert.are.equal("+I[a1, <NULL>]\n", out)
    assert.matches("interval join 'left outer interval join[^']*': late left 1, late right 0;", err)
  end)

  it("a condition of ON beyond the keys and bounds is not supported yet, at its position", function()
    assert.are.equal(("job.sql:%d:55: not supported yet: a condition other than equalities and the time bounds "
      .. "in the ON of an outer interval join (put it in WHERE to filter the joined rows)\n"):format(L),
      err_of("SELECT a.id FROM A a LEFT JOIN B b ON a.id = b.id AND a.name <> b.name AND a.ts BETWEEN b.ts "
        .. "AND b.ts + INTERVAL '1' SECOND;\n"))
  end)
end)

describe("SQL window joins on HOP and CUMULATE", function()
  local function q(fn)
    return ([[
SELECT L.name, R.name, L.window_start, L.window_end
FROM (SELECT * FROM TABLE(FN(TABLE A, DESCRIPTOR(ts), INTERVAL '5' SECOND, INTERVAL '10' SECOND))) L
FULL JOIN (SELECT * FROM TABLE(FN(TABLE B, DESCRIPTOR(ts), INTERVAL '5' SECOND, INTERVAL '10' SECOND))) R
ON L.window_start = R.window_start AND L.window_end = R.window_end AND L.id = R.id;
]]):gsub("FN", fn), nil
  end
  local function t(s) return ("1970-01-01 00:00:%02d.000"):format(s) end
  local function row(a, b, s, e)
    if not s then return ("+I[%s, %s, <NULL>, <NULL>]"):format(a, b) end
    return ("+I[%s, %s, %s, %s]"):format(a, b, t(s), t(e))
  end
  local function sorted_list(list)
    table.sort(list)
    return list
  end
  -- HOP, slide 5 s, size 10 s: a row at t is in [s, s + 10) for s the multiple of 5 <= t and
  -- the one before. a1 (id 1, 10 s): [10, 20), [5, 15); b2 (4.999 s): [0, 10), [-5, 5);
  -- b1 (5 s): [5, 15), [0, 10); b3 (15 s), b4 (15.001 s): [15, 25), [10, 20); a2, b5 (id 2,
  -- 20 s): [20, 30), [15, 25); a3 (id 3, 30 s): [30, 40), [25, 35); a4, b6 (NULL, 40 s):
  -- [40, 50), [35, 45). Per window and id: a1-b1 in [5, 15), a1-b3 and a1-b4 in [10, 20), a2-b5
  -- in [15, 25) and [20, 30); every other row of a window alone (a NULL id meets nothing).
  local HOP = sorted_list{
    row("a1", "b1", 5, 15), row("a1", "b3", 10, 20), row("a1", "b4", 10, 20), row("a2", "b5", 15, 25),
    row("a2", "b5", 20, 30), row("a3", "<NULL>", 25, 35), row("a3", "<NULL>", 30, 40),
    row("a4", "<NULL>", 35, 45), row("a4", "<NULL>", 40, 50),
    row("<NULL>", "b2"), row("<NULL>", "b2"), row("<NULL>", "b1"), row("<NULL>", "b3"), row("<NULL>", "b4"),
    row("<NULL>", "b6"), row("<NULL>", "b6")}

  it("HOP: each window the rows belong to, FULL JOIN padding", function()
    assert.are.same(HOP, ok_sorted(q("HOP")))
  end)

  it("HOP gives the same rows at -p 2 --threads 2", function()
    assert.are.same(HOP, ok_sorted(q("HOP"), "-p 2 --threads 2"))
  end)

  it("CUMULATE: windows growing by the step within the size", function()
    -- step 5 s, size 10 s: a row at t is in [s, e) for s the multiple of 10 <= t and every e a
    -- multiple of 5 with t < e <= s + 10. a1: [10, 15), [10, 20); b2: [0, 5), [0, 10); b1:
    -- [0, 10); b3, b4: [10, 20); a2, b5: [20, 25), [20, 30); a3: [30, 35), [30, 40); a4, b6:
    -- [40, 45), [40, 50). a1 is alone in [10, 15), meets b3 and b4 in [10, 20)
    assert.are.same(sorted_list{
      row("a1", "<NULL>", 10, 15), row("a1", "b3", 10, 20), row("a1", "b4", 10, 20),
      row("a2", "b5", 20, 25), row("a2", "b5", 20, 30), row("a3", "<NULL>", 30, 35),
      row("a3", "<NULL>", 30, 40), row("a4", "<NULL>", 40, 45), row("a4", "<NULL>", 40, 50),
      row("<NULL>", "b2"), row("<NULL>", "b2"), row("<NULL>", "b1"), row("<NULL>", "b6"), row("<NULL>", "b6")},
      ok_sorted(q("CUMULATE")))
  end)

  it("a window aggregation's rows join on their window bounds, under any name (Nexmark q8)", function()
    -- 5 s windows: B's counts per id and window: id 1 [0, 5) 1 (b2), [5, 10) 1 (b1), [15, 20) 2
    -- (b3, b4); id 2 [20, 25) 1 (b5); NULL [40, 45) 1. A's rows: a1 (id 1) in [10, 15): no
    -- count; a2 (id 2) in [20, 25): 1; a3 (id 3): none; a4 (NULL) meets nothing
    assert.are.same({"+I[a2, 1]"}, ok_sorted([[
SELECT L.name, R.n FROM (SELECT * FROM TABLE(TUMBLE(TABLE A, DESCRIPTOR(ts), INTERVAL '5' SECOND))) L
JOIN (SELECT id, window_start AS s, window_end AS e, COUNT(*) AS n
  FROM TABLE(TUMBLE(TABLE B, DESCRIPTOR(ts), INTERVAL '5' SECOND)) GROUP BY id, window_start, window_end) R
ON L.window_start = R.s AND L.window_end = R.e AND L.id = R.id;
]]))
  end)

  it("the two inputs must have the same windows", function()
    assert.matches(("^job.sql:%d:%d: the two inputs of a window join must have the same windows"):format(L + 3, 4),
      err_of((q("HOP"):gsub("(JOIN %(SELECT %* FROM TABLE%()HOP", "%1CUMULATE"))))
  end)
end)

describe("SQL event-time temporal joins", function()
  local TDDL = [[
SET 'pipeline.auto-watermark-interval' = '0';
CREATE TABLE orders (id INT, cur STRING, ms BIGINT, ts AS TO_TIMESTAMP_LTZ(ms, 3), WATERMARK FOR ts AS ts)
  WITH ('connector' = 'filesystem', 'path' = 'orders.csv', 'format' = 'csv');
CREATE TABLE rates (cur STRING, rate DOUBLE, ms BIGINT, ts AS TO_TIMESTAMP_LTZ(ms, 3), WATERMARK FOR ts AS ts,
  PRIMARY KEY (cur) NOT ENFORCED)
  WITH ('connector' = 'filesystem', 'path' = 'rates.csv', 'format' = 'csv');
CREATE VIEW last_rates AS SELECT cur, rate, ts FROM (
  SELECT *, ROW_NUMBER() OVER (PARTITION BY cur ORDER BY ts DESC) AS rn FROM rates) WHERE rn = 1;
]]
  -- versions (each file in time order): EUR 1.0 from 1 s, GBP 2.0 from 2 s, EUR 1.1 from 5 s,
  -- EUR 1.2 from 9 s. Orders: 1 EUR at 0.5 s (before any EUR version), 2 EUR at 1 s (the
  -- version of 1 s: at or before), 3 GBP at 3 s, 4 EUR at 6 s (1.1), 5 EUR at 9 s (1.2), 6 USD
  -- at 9.5 s (no USD). The two files are read side by side in any interleaving: an order waits
  -- for the watermark (the minimum of both) to reach its time, so the result does not depend on it.
  local FILES = {["orders.csv"] = "1,EUR,500\n2,EUR,1000\n3,GBP,3000\n4,EUR,6000\n5,EUR,9000\n6,USD,9500\n",
                 ["rates.csv"] = "EUR,1.0,1000\nGBP,2.0,2000\nEUR,1.1,5000\nEUR,1.2,9000\n"}
  local function trun(query, args)
    local out, err, code = sql_run.run(TDDL .. query, {["orders.csv"] = FILES["orders.csv"],
      ["rates.csv"] = FILES["rates.csv"]}, {args = args})
    assert.are.equal(0, code, err)
    return sorted(out)
  end
  local INNER = {"+I[2, EUR, 1.0]", "+I[3, GBP, 2.0]", "+I[4, EUR, 1.1]", "+I[5, EUR, 1.2]"}

  it("a table with a PRIMARY KEY and a WATERMARK: the version valid at the order's time", function()
    assert.are.same(INNER, trun("SELECT o.id, o.cur, r.rate FROM orders o JOIN rates FOR SYSTEM_TIME AS OF o.ts "
      .. "AS r ON o.cur = r.cur;\n"))
  end)

  it("LEFT JOIN pads an order without a version at its time", function()
    local want = {"+I[1, EUR, <NULL>]", "+I[6, USD, <NULL>]"}
    for _, x in ipairs(INNER) do want[#want + 1] = x end
    table.sort(want)
    assert.are.same(want, trun("SELECT o.id, o.cur, r.rate FROM orders o LEFT JOIN rates FOR SYSTEM_TIME AS OF "
      .. "o.ts AS r ON o.cur = r.cur;\n"))
  end)

  it("a view keeping the last row per key is versioned, and -p 2 --threads 2 gives the same", function()
    local q = "SELECT o.id, o.cur, r.rate FROM orders o JOIN last_rates FOR SYSTEM_TIME AS OF o.ts AS r "
      .. "ON o.cur = r.cur;\n"
    assert.are.same(INNER, trun(q))
    assert.are.same(INNER, trun(q, "-p 2 --threads 2"))
  end)

  it("an ON condition beyond the keys decides which version meets (LEFT: padded otherwise)", function()
    -- r.rate > 1.05: orders 1 and 2 (EUR 1.0 or none) padded, 3 (2.0), 4 (1.1), 5 (1.2)
    assert.are.same({"+I[1, <NULL>]", "+I[2, <NULL>]", "+I[3, 2.0]", "+I[4, 1.1]", "+I[5, 1.2]", "+I[6, <NULL>]"},
      trun("SELECT o.id, r.rate FROM orders o LEFT JOIN rates FOR SYSTEM_TIME AS OF o.ts AS r "
        .. "ON o.cur = r.cur AND r.rate > 1.05;\n"))
  end)

  it("a probe row waits for the watermark: a version that comes after it, at an earlier time, meets it", function()
    -- one source split in two, watermarks 2 s behind the largest time (bounded out of
    -- orderness): order o1 EUR at 5 s (W 2.999 s); version EUR 1.5 at 4 s comes next (in time:
    -- 4 s > W); order o2 EUR at 3.5 s; then v at 8 s: W 5.999 s, o1 and o2 meet what is valid
    -- at their times: 1.5 (4 s <= 5 s) and nothing (LEFT: padded; 4 s > 3.5 s). Looked up at
    -- once, o1 would have met nothing.
    local out, err, code = lua_job([=[
local wm = require("wm")
local env = wm.env{watermark_interval = 0}
local s = env:from_elements(
  {side = "o", id = "o1", cur = "EUR", ts = 5000}, {side = "r", cur = "EUR", rate = 1.5, ts = 4000},
  {side = "o", id = "o2", cur = "EUR", ts = 3500}, {side = "r", cur = "GBP", rate = 9.0, ts = 8000})
  :assign_timestamps_and_watermarks(wm.watermarks.bounded_out_of_orderness("2s"):with_timestamp_field("ts"))
env:create_temporary_view("O", s:filter(function(r) return r.side == "o" end),
  {"id:STRING", "cur:STRING", "rt:rowtime"})
env:create_temporary_view("V", s:filter(function(r) return r.side == "r" end),
  {"cur:STRING", "rate:DOUBLE", "rt:rowtime"})
env:execute_sql([[CREATE VIEW rates AS SELECT cur, rate, rt FROM (
  SELECT *, ROW_NUMBER() OVER (PARTITION BY cur ORDER BY rt DESC) AS rn FROM V) WHERE rn = 1]])
env:execute_sql([[SELECT o.id, r.rate FROM O o LEFT JOIN rates FOR SYSTEM_TIME AS OF o.rt AS r ON o.cur = r.cur]])
env:execute()
]=])
    assert.are.equal(0, code, err)
    -- (the timers fire in time order: o2 at 3.5 s, then o1 at 5 s)
    assert.are.equal("+I[o2, <NULL>]\n+I[o1, 1.5]\n", out)
  end)

  it("says what is not a versioned table, and which joins are not temporal ones", function()
    local function terr(query)
      local out, err, code = sql_run.run(TDDL .. query, FILES)
      assert.are_not.equal(0, code, out)
      return err
    end
    local l = 9 -- the query's line
    assert.are.equal(("job.sql:%d:32: 'orders' is not a versioned table: an event-time temporal join needs a PRIMARY "
      .. "KEY (...) NOT ENFORCED and a WATERMARK on the table (or a view that keeps the last row per key)\n"):format(l),
      terr("SELECT o.id FROM orders o JOIN orders FOR SYSTEM_TIME AS OF o.ts AS x ON o.id = x.id;\n"))
    assert.are.equal(("job.sql:%d:27: a join FOR SYSTEM_TIME AS OF is INNER or LEFT (Flink's temporal and lookup "
      .. "joins), not FULL\n"):format(l),
      terr("SELECT o.id FROM orders o FULL JOIN rates FOR SYSTEM_TIME AS OF o.ts AS r ON o.cur = r.cur;\n"))
    assert.are.equal(("job.sql:%d:60: FOR SYSTEM_TIME AS OF needs a time attribute: 'ms' is neither a rowtime "
      .. "(WATERMARK FOR ...: an event-time temporal join) nor PROCTIME() (a lookup join)\n"):format(l),
      terr("SELECT o.id FROM orders o JOIN rates FOR SYSTEM_TIME AS OF o.ms AS r ON o.cur = r.cur;\n"))
    assert.are.equal(("job.sql:%d:27: an event-time temporal join's ON must compare the versioned table's key "
      .. "'r.cur' (its PRIMARY KEY: cur)\n"):format(l),
      terr("SELECT o.id FROM orders o JOIN rates FOR SYSTEM_TIME AS OF o.ts AS r ON o.ms = r.ms;\n"))
  end)
end)

describe("SQL lookup joins", function()
  local LDDL = [[
SET 'pipeline.auto-watermark-interval' = '0';
CREATE TABLE O (id INT, k BIGINT) WITH ('connector' = 'filesystem', 'path' = 'o.csv', 'format' = 'csv');
CREATE TABLE side (k BIGINT, v STRING) WITH ('connector' = 'filesystem', 'path' = 'side.csv', 'format' = 'csv');
]]
  local FILES = {["o.csv"] = "1,1\n2,2\n3,5\n4,\n5,11\n", ["side.csv"] = "1,one\n2,two\n2,deux\n3,three\n"}
  local function lrun(query, args)
    local out, err, code = sql_run.run(LDDL .. query, {["o.csv"] = FILES["o.csv"], ["side.csv"] = FILES["side.csv"]},
      {args = args})
    assert.are.equal(0, code, err)
    return sorted(out)
  end

  it("JOIN a filesystem table FOR SYSTEM_TIME AS OF PROCTIME(): every row of the key", function()
    -- k 1: one; k 2: two and deux (two rows of one key); k 5, NULL and 11: none
    assert.are.same({"+I[1, one]", "+I[2, deux]", "+I[2, two]"}, lrun("SELECT o.id, s.v FROM (SELECT *, "
      .. "PROCTIME() AS p FROM O) o JOIN side FOR SYSTEM_TIME AS OF o.p AS s ON o.k = s.k;\n"))
  end)

  it("a PROCTIME() column of the table's DDL is a processing-time attribute too", function()
    assert.are.same({"+I[1, one]", "+I[2, deux]", "+I[2, two]"}, lrun("CREATE TABLE O2 (id INT, k BIGINT, "
      .. "p AS PROCTIME()) WITH ('connector' = 'filesystem', 'path' = 'o.csv', 'format' = 'csv');\n"
      .. "SELECT o.id, s.v FROM O2 o JOIN side FOR SYSTEM_TIME AS OF o.p AS s ON o.k = s.k;\n"))
  end)

  it("LEFT JOIN pads the rows without a match; a key may be an expression (Nexmark q13's MOD)", function()
    -- MOD(k, 10): 1 -> one, 2 -> two, deux, 5 -> none, NULL -> none, 11 -> 1: one
    assert.are.same({"+I[1, one]", "+I[2, deux]", "+I[2, two]", "+I[3, <NULL>]", "+I[4, <NULL>]", "+I[5, one]"},
      lrun("SELECT o.id, s.v FROM (SELECT *, PROCTIME() AS p FROM O) o LEFT JOIN side FOR SYSTEM_TIME AS OF o.p "
        .. "AS s ON MOD(o.k, 10) = s.k;\n"))
    assert.are.same({"+I[1, one]", "+I[2, deux]", "+I[2, two]", "+I[3, <NULL>]", "+I[4, <NULL>]", "+I[5, one]"},
      lrun("SELECT o.id, s.v FROM (SELECT *, PROCTIME() AS p FROM O) o LEFT JOIN side FOR SYSTEM_TIME AS OF o.p "
        .. "AS s ON MOD(o.k, 10) = s.k;\n", "-p 2 --threads 2"))
  end)

  it("reads the file again once 'lookup.join.cache.ttl' has passed (driven by a test clock)", function()
    -- the lookup's clock (wm.sql.plan.temporal_join.clock, called once per probe) gives 1 s,
    -- 2 s, ...; at the second probe the file changes to "uno". ttl 2.5 s: probe 1 (1 s) reads
    -- the file (next read at 3.5 s), probes 2 and 3 use what it read, probe 4 (4 s) reads it
    -- again (next at 6.5 s), probe 5 uses that: one, one, one, uno, uno
    local dir = h.tmpdir()
    local side = dir .. "/side.csv"
    local f = assert(io.open(side, "w"))
    f:write("1,one\n")
    f:close()
    local out, err, code = lua_job(([=[
local wm = require("wm")
local tj = require("wm.sql.plan.temporal_join")
local n = 0
tj.clock = function(who)
  if who ~= "lookup" then return 0 end
  n = n + 1
  if n == 2 then
    local f = assert(io.open(SIDE, "w"))
    f:write("1,uno\n")
    f:close()
  end
  return n * 1000
end
local env = wm.env{watermark_interval = 0}
local s = env:from_elements({id = 1, k = 1}, {id = 2, k = 1}, {id = 3, k = 1}, {id = 4, k = 1}, {id = 5, k = 1})
env:create_temporary_view("O", s, {"id:INT", "k:BIGINT"})
env:execute_sql([[CREATE TABLE side (k BIGINT, v STRING) WITH ('connector' = 'filesystem', 'path' = ']] .. SIDE
  .. [[', 'format' = 'csv', 'lookup.join.cache.ttl' = '2500 ms')]])
env:execute_sql([[SELECT o.id, s.v FROM (SELECT *, PROCTIME() AS p FROM O) o
  JOIN side FOR SYSTEM_TIME AS OF o.p AS s ON o.k = s.k]])
env:execute()
]=]):gsub("SIDE", string.format("%q", side)), nil)
    h.rmdir(dir)
    assert.are.equal(0, code, err)
    assert.are.equal("+I[1, one]\n+I[2, one]\n+I[3, one]\n+I[4, uno]\n+I[5, uno]\n", out)
  end)

  it("says what it cannot look up, at its position", function()
    local function lerr(query)
      local out, err, code = sql_run.run(LDDL .. query, FILES)
      assert.are_not.equal(0, code, out)
      return err
    end
    assert.are.equal("job.sql:4:101: bad duration 'soon' for 'lookup.join.cache.ttl' (e.g. '1 s', '500 ms', '1 min'; "
      .. "'0' turns it off)\n", lerr("CREATE TABLE t2 (k BIGINT) WITH ('connector' = 'filesystem', 'path' = "
      .. "'side.csv', 'format' = 'csv', 'lookup.join.cache.ttl' = 'soon');\nSELECT o.id FROM (SELECT *, PROCTIME() "
      .. "AS p FROM O) o JOIN t2 FOR SYSTEM_TIME AS OF o.p AS s ON o.k = s.k;\n"))
    assert.are.equal("job.sql:4:17: not supported yet: FOR SYSTEM_TIME AS OF outside a join (temporal and lookup "
      .. "joins: JOIN t FOR SYSTEM_TIME AS OF x.ts)\n", lerr("SELECT * FROM O FOR SYSTEM_TIME AS OF "
      .. "TIMESTAMP '2020-01-01 00:00:00';\n"))
    assert.are.equal("job.sql:4:55: a join FOR SYSTEM_TIME AS OF needs an equality of the two tables in its ON "
      .. "(o.k = t.k)\n", lerr("SELECT o.id FROM (SELECT *, PROCTIME() AS p FROM O) o JOIN side FOR SYSTEM_TIME "
      .. "AS OF o.p AS s ON o.k > s.k;\n"))
  end)
end)

describe("a Lua key function giving a composite key", function()
  it("keys a window by its list of values (the key selector read the list at a moved index)", function()
    -- keys {1, "x"} (two rows) and {1, "y"} (one) in one 10 ms window; this crashed before
    local out, err, code = lua_job([=[
local wm = require("wm")
local env = wm.env{watermark_interval = 0}
env:from_elements({a = 1, b = "x", ts = 1}, {a = 1, b = "y", ts = 2}, {a = 1, b = "x", ts = 3})
  :assign_timestamps_and_watermarks(wm.watermarks.monotonous():with_timestamp_field("ts"))
  :key_by(function(r) return {r.a, r.b} end):window(wm.windows.tumbling(10))
  :process(function(key, ctx, records, out) out({a = key[1], b = key[2], n = #records}) end):print()
env:execute()
]=])
    assert.are.equal(0, code, err)
    assert.are.equal('{"a":1,"b":"x","n":2}\n{"a":1,"b":"y","n":1}\n', out)
  end)
end)

describe("SQL semi and anti window joins (IN / EXISTS subqueries)", function()
  local function tvf(t, fn)
    if fn == "HOP" then
      return ("(SELECT * FROM TABLE(HOP(TABLE %s, DESCRIPTOR(ts), INTERVAL '5' SECOND, INTERVAL '10' SECOND)))")
        :format(t)
    end
    return ("(SELECT * FROM TABLE(TUMBLE(TABLE %s, DESCRIPTOR(ts), INTERVAL '5' SECOND)))"):format(t)
  end
  local WIN = "L.window_start = R.window_start AND L.window_end = R.window_end"
  local function t(s) return ("1970-01-01 00:00:%02d.000"):format(s) end

  it("IN (SELECT ...): the left rows whose window holds a right row of their key, once", function()
    -- 5 s windows: a1 (id 1) in [10, 15): no b of id 1 there; a2 (id 2) in [20, 25): b5; a3
    -- (id 3): none; a4 (NULL): NULL is in nothing
    assert.are.same({"+I[a2, " .. t(20) .. "]"}, ok_sorted("SELECT L.name, L.window_start FROM " .. tvf("A")
      .. " L\nWHERE L.id IN (SELECT id FROM " .. tvf("B") .. " R WHERE " .. WIN .. ");\n"))
  end)

  it("EXISTS on HOP windows, with a condition of its own on the subquery's rows", function()
    -- HOP 5 s / 10 s (the windows as in the HOP join above): a1 meets b1 in [5, 15) and b3, b4
    -- in [10, 20); a2 meets b5 in [15, 25) and [20, 30). R.name <> 'b1' leaves [5, 15) empty
    assert.are.same({"+I[a1, " .. t(10) .. "]", "+I[a2, " .. t(15) .. "]", "+I[a2, " .. t(20) .. "]"},
      ok_sorted("SELECT L.name, L.window_start FROM " .. tvf("A", "HOP") .. " L\nWHERE EXISTS (SELECT * FROM "
        .. tvf("B", "HOP") .. " R WHERE " .. WIN .. " AND L.id = R.id AND R.name <> 'b1');\n"))
  end)

  it("NOT EXISTS (anti): the left rows whose window holds none; -p 2 --threads 2 the same", function()
    -- a3 (no b of id 3) in [25, 35) and [30, 40); a4 (NULL meets nothing) in [35, 45), [40, 50)
    local want = {"+I[a3, " .. t(25) .. "]", "+I[a3, " .. t(30) .. "]", "+I[a4, " .. t(35) .. "]",
      "+I[a4, " .. t(40) .. "]"}
    local q = "SELECT L.name, L.window_start FROM " .. tvf("A", "HOP") .. " L\nWHERE NOT EXISTS (SELECT * FROM "
      .. tvf("B", "HOP") .. " R WHERE " .. WIN .. " AND L.id = R.id);\n"
    assert.are.same(want, ok_sorted(q))
    assert.are.same(want, ok_sorted(q, "-p 2 --threads 2"))
  end)

  it("says what it does not take, at its position", function()
    assert.are.equal(("job.sql:%d:12: not supported yet: NOT IN (SELECT ...) (its rules for NULL; write NOT EXISTS "
      .. "(SELECT ... WHERE L.x = R.x AND ...))\n"):format(L + 1), err_of("SELECT L.name FROM " .. tvf("A")
      .. " L\nWHERE L.id NOT IN (SELECT id FROM " .. tvf("B") .. " R WHERE " .. WIN .. ");\n"))
    assert.are.equal(("job.sql:%d:7: a semi or anti window join needs both L.window_start = R.window_start and "
      .. "L.window_end = R.window_end in its subquery\n"):format(L + 1), err_of("SELECT L.name FROM " .. tvf("A")
      .. " L\nWHERE EXISTS (SELECT * FROM " .. tvf("B") .. " R WHERE L.id = R.id);\n"))
    assert.matches(("^job.sql:%d:%d: not supported yet: subqueries in expressions"):format(L, 35),
      err_of("SELECT a.name FROM A a, B b WHERE EXISTS (SELECT * FROM B) AND a.id = b.id AND a.ts BETWEEN "
        .. "b.ts AND b.ts;\n"))
  end)
end)
