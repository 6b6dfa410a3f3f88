-- OVER aggregations, FILTER (WHERE ...) on aggregates, REGEXP_EXTRACT, DATE_FORMAT and
-- PROCTIME() in SQL (issue 29). Every expected output is worked out by hand in the comments.
local h = require("helper")
local sql_run = require("sql_run")
local wm = require("wm")

local DDL = [[
SET 'pipeline.auto-watermark-interval' = '0';
CREATE TABLE t (k STRING, ms BIGINT, v INT, rt AS TO_TIMESTAMP_LTZ(ms, 3),
  WATERMARK FOR rt AS rt - INTERVAL '1' SECOND)
  WITH ('connector' = 'filesystem', 'path' = 't.csv', 'format' = 'csv');
]]
local L = 5 -- the line of the query (after DDL)

-- The rows in the order the source reads them; the watermark after each is its largest time
-- so far - 1 s - 1 ms (Flink's bounded out-of-orderness):
--   a 1 s v1 (W 0 s - 1 ms), a 2 s v2, b 2 s v10, a 2 s v3 (W 0.999 s), a 5 s v4 (W 3.999 s),
--   a 3 s v5: late (3 s <= 3.999 s), a 9 s v6 (W 7.999 s), a 1 s v7: late, b 9.5 s v20
local T = "a,1000,1\na,2000,2\nb,2000,10\na,2000,3\na,5000,4\na,3000,5\na,9000,6\na,1000,7\nb,9500,20\n"

local function run(query, args, files)
  files = files or {}
  files["t.csv"] = files["t.csv"] or T
  return sql_run.run(DDL .. query, files, {args = args})
end

local function lines(out)
  local t = {}
  for l in out:gmatch("[^\n]+") do t[#t + 1] = l end
  return t
end

local function ok(query, args, files)
  local out, err, code = run(query, args, files)
  assert.are.equal(0, code, err)
  return lines(out), err
end

local function fails(query, files)
  local out, err, code = run(query, nil, files)
  assert.are.equal(1, code, out)
  return (err:gsub("\n$", ""))
end

describe("SQL OVER aggregations", function()
  it("ROWS BETWEEN 1 PRECEDING AND CURRENT ROW: the row and the one before, emitted at the watermark; late "
    .. "rows dropped and counted", function()
    -- per key in time order (rows of one time in arrival order), late a 3 s v5 and a 1 s v7 left
    -- out: a: v1 (1), v2 (1+2), v3 (2+3), v4 (3+4), v6 (4+6); b: v10 (10), v20 (10+20). Each key's
    -- rows come out in time order; the two keys interleave by the watermark: a 1 s at W 3.999,
    -- a 2 s and b 2 s at 3.999 too (timers of one watermark fire in time order), a 5 s at W 7.999
    local out, err = ok("SELECT k, v, SUM(v) OVER (PARTITION BY k ORDER BY rt ROWS BETWEEN 1 PRECEDING AND "
      .. "CURRENT ROW) AS s, COUNT(*) OVER (PARTITION BY k ORDER BY rt ROWS BETWEEN 1 PRECEDING AND CURRENT ROW) "
      .. "FROM t;\n", "--metrics")
    local a, b = {}, {}
    for _, l in ipairs(out) do table.insert(l:find("^%+I%[a") and a or b, l) end
    assert.are.same({"+I[a, 1, 1, 1]", "+I[a, 2, 3, 2]", "+I[a, 3, 5, 2]", "+I[a, 4, 7, 2]", "+I[a, 6, 10, 2]"}, a)
    assert.are.same({"+I[b, 10, 10, 1]", "+I[b, 20, 30, 2]"}, b)
    assert.matches("side output 'late' of 'over %(rows%) %(job.sql:" .. L .. "%)': 2 records", err)
    -- the operator's row of the --metrics table: 9 in, 7 out, 2 to the side output
    assert.matches("over %(rows%) %(job.sql:" .. L .. "%)%s+9%s+7%s+2%s", err)
  end)

  it("RANGE BETWEEN INTERVAL '3' SECOND PRECEDING: rows of the same time are peers, the bound is inclusive",
    function()
    -- a 1 s: {v1} -> sum 1, max 1, count(v > 1) 0; a 2 s (peers v2, v3): [-1 s, 2 s] = {1, 2, 3}
    -- -> 6, 3, 2 for both; a 5 s: [2 s, 5 s] = {2, 3, 4} (2 s on the edge is in) -> 9, 4, 3;
    -- a 9 s: [6 s, 9 s] = {6} -> 6, 6, 1; b 2 s: 10; b 9.5 s: [6.5 s, 9.5 s] = {20}
    local W = "OVER (PARTITION BY k ORDER BY rt RANGE BETWEEN INTERVAL '3' SECOND PRECEDING AND CURRENT ROW)"
    local out = ok("SELECT k, v, SUM(v) " .. W .. ", MAX(v) " .. W .. ", COUNT(*) FILTER (WHERE v > 1) "
      .. W .. " FROM t;\n")
    table.sort(out)
    assert.are.same({"+I[a, 1, 1, 1, 0]", "+I[a, 2, 6, 3, 2]", "+I[a, 3, 6, 3, 2]", "+I[a, 4, 9, 4, 3]",
      "+I[a, 6, 6, 6, 1]", "+I[b, 10, 10, 10, 1]", "+I[b, 20, 20, 20, 1]"}, out)
  end)

  it("without a frame: RANGE BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW; AVG of an INT is an INT", function()
    -- a: 1 -> 1; peers 2, 3 -> 6 both; 4 -> 10; 6 -> 16, AVG 16 / 5 = 3; b: 10, then 30 / 2 = 15
    local out = ok("SELECT k, v, SUM(v) OVER (PARTITION BY k ORDER BY rt) + 100 AS s, "
      .. "AVG(v) OVER (PARTITION BY k ORDER BY rt) FROM t;\n")
    table.sort(out)
    assert.are.same({"+I[a, 1, 101, 1]", "+I[a, 2, 106, 2]", "+I[a, 3, 106, 2]", "+I[a, 4, 110, 2]",
      "+I[a, 6, 116, 3]", "+I[b, 10, 110, 10]", "+I[b, 20, 130, 15]"}, out)
  end)

  it("ROWS BETWEEN UNBOUNDED PRECEDING without PARTITION BY: one running sum, ties in arrival order", function()
    -- times 1 s: a1; 2 s: a2, b10, a3 (arrival order); 5 s: a4; 9 s: a6; 9.5 s: b20
    local out = ok("SELECT k, v, SUM(v) OVER (ORDER BY rt ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) "
      .. "FROM t;\n")
    assert.are.same({"+I[a, 1, 1]", "+I[a, 2, 3]", "+I[b, 10, 13]", "+I[a, 3, 16]", "+I[a, 4, 20]",
      "+I[a, 6, 26]", "+I[b, 20, 46]"}, out)
  end)

  it("over a subquery with a WHERE, MIN over a bounded frame (retracting), at -p 2 --threads 2", function()
    -- rows v > 1 only, without the late ones (at -p 2 the watermark at the OVER is the least of
    -- two inputs': which rows are late depends on how they interleave): a: 2, 3, 4, 6; MIN over
    -- the row and the 2 before it: 2, 2, 2, 3; b: 10, 20: 10, 10
    local q = "SELECT k, v, MIN(v) OVER (PARTITION BY k ORDER BY rt ROWS 2 PRECEDING) FROM "
      .. "(SELECT * FROM t WHERE v > 1 AND v NOT IN (5, 7)) AS s;\n"
    local want = {"+I[a, 2, 2]", "+I[a, 3, 2]", "+I[a, 4, 2]", "+I[a, 6, 3]", "+I[b, 10, 10]", "+I[b, 20, 10]"}
    local one = ok(q)
    table.sort(one)
    assert.are.same(want, one)
    local two = ok(q, "-p 2 --threads 2")
    for i, l in ipairs(two) do two[i] = l:gsub("^%d+> ", "") end
    table.sort(two)
    assert.are.same(want, two)
  end)

  it("OVER w names a window of the query's WINDOW clause (after WHERE); an unknown name is an error", function()
    -- the same rows as ROWS BETWEEN 1 PRECEDING above (the first test), by name
    local out = ok("SELECT k, v, SUM(v) OVER w AS s, COUNT(*) OVER w FROM t WHERE v > 0 "
      .. "WINDOW w AS (PARTITION BY k ORDER BY rt ROWS BETWEEN 1 PRECEDING AND CURRENT ROW);\n")
    table.sort(out)
    assert.are.same({"+I[a, 1, 1, 1]", "+I[a, 2, 3, 2]", "+I[a, 3, 5, 2]", "+I[a, 4, 7, 2]", "+I[a, 6, 10, 2]",
      "+I[b, 10, 10, 1]", "+I[b, 20, 30, 2]"}, out)
    assert.are.equal(("job.sql:%d:18: unknown window 'x' (no WINDOW x AS (...) in this query)"):format(L),
      fails("SELECT k, SUM(v) OVER x FROM t AS tt WINDOW w AS (PARTITION BY k ORDER BY rt);\n"))
  end)

  it("says what it does not take, at its position", function()
    local function at(line, col, msg) return ("job.sql:%d:%d: %s"):format(L + line, col, msg) end
    assert.are.equal(at(0, 44, "not supported yet: OVER windows that differ in one query (this one and the one "
      .. "at 5:15)"), fails("SELECT SUM(v) OVER (ORDER BY rt), COUNT(*) OVER (ORDER BY rt ROWS 1 PRECEDING) FROM t;\n"))
    assert.are.equal(at(0, 30, "OVER windows are ordered by a time attribute (a rowtime column declared with "
      .. "WATERMARK, or one passed through from it); this is not one"),
      fails("SELECT SUM(v) OVER (ORDER BY ms) FROM t;\n"))
    assert.are.equal(at(0, 30, "not supported yet: OVER windows ordered by time descending"),
      fails("SELECT SUM(v) OVER (ORDER BY rt DESC) FROM t;\n"))
    assert.are.equal(at(0, 38, "ROWS BETWEEN n PRECEDING takes a number of rows (an integer, 0 or more)"),
      fails("SELECT SUM(v) OVER (ORDER BY rt ROWS INTERVAL '1' SECOND PRECEDING) FROM t;\n"))
    assert.are.equal(at(0, 39, "RANGE BETWEEN ... PRECEDING takes an interval (INTERVAL '10' SECOND) over the time "
      .. "attribute"), fails("SELECT SUM(v) OVER (ORDER BY rt RANGE 2 PRECEDING) FROM t;\n"))
    assert.are.equal(at(0, 8, "not supported yet: OVER aggregates in a query with GROUP BY, HAVING or DISTINCT"),
      fails("SELECT SUM(v) OVER (ORDER BY rt) FROM t GROUP BY v;\n"))
    assert.are.equal(at(0, 23, "OVER aggregates are not allowed in WHERE"),
      fails("SELECT k FROM t WHERE SUM(v) OVER (ORDER BY rt) > 1;\n"))
    assert.are.equal(at(0, 15, "OVER (...) needs ORDER BY a time attribute (one column, ascending)"),
      fails("SELECT SUM(v) OVER (PARTITION BY k) FROM t;\n"))
    assert.are.equal(at(0, 8, "not supported yet: LAG() OVER (OVER takes COUNT, SUM, MIN, MAX, AVG and aggregate "
      .. "functions)"), fails("SELECT LAG(v) OVER (ORDER BY rt) FROM t;\n"))
    -- (without a frame: RANGE BETWEEN UNBOUNDED PRECEDING, which an updating input does not take)
    assert.are.equal(at(0, 15, "not supported yet: OVER aggregates over an updating input (the result of a GROUP "
      .. "BY, a Top-N or a regular join) take ROWS BETWEEN n PRECEDING AND CURRENT ROW only"),
      fails("SELECT SUM(n) OVER (ORDER BY rt) FROM (SELECT k, COUNT(*) AS n, MAX(rt) AS rt FROM t GROUP BY k);\n"))
  end)
end)

describe("SQL FILTER (WHERE ...) on aggregates", function()
  it("in a GROUP BY without a window (updates): COUNT(*), SUM and COUNT(DISTINCT) each with their own filter",
    function()
    -- a: v 1, 2, 3, 4, 5, 6, 7 (a GROUP BY without a window drops no late row): count(v > 2) 5,
    -- sum(v < 5) 1+2+3+4 = 10, distinct v <> 2: {1, 3, 4, 5, 6, 7} 6, count 7;
    -- b: v 10, 20: 2, NULL (no row passes), 2, 2
    local out = ok("SELECT k, COUNT(*) FILTER (WHERE v > 2), SUM(v) FILTER (WHERE k = 'a' AND v < 5), "
      .. "COUNT(DISTINCT v) FILTER (WHERE v <> 2), COUNT(*) FROM t GROUP BY k;\n")
    assert.are.equal("+U[a, 5, 10, 6, 7]", out[#out - 2])
    assert.are.equal("+U[b, 2, <NULL>, 2, 2]", out[#out])
    -- the first row of a: count(v > 2) 0, sum 1, distinct {1} 1, count 1
    assert.are.equal("+I[a, 0, 1, 1, 1]", out[1])
  end)

  it("in a window aggregate (TUMBLE 5 s): the late row is out of its window, filters apply per window", function()
    -- a [0, 5): v 1, 2, 3, 5 (a 1 s v7 comes after W 7.999 s: late) -> count(v > 2) 2, sum(v < 5) 6,
    -- count 4; a [5, 10): 4, 6 -> 2, 4, 2; b [0, 5): 10 -> 1, NULL, 1; b [5, 10): 20 -> 1, NULL, 1
    local out = ok("SELECT k, window_start, COUNT(*) FILTER (WHERE v > 2), SUM(v) FILTER (WHERE v < 5), COUNT(*) "
      .. "FROM TABLE(TUMBLE(TABLE t, DESCRIPTOR(rt), INTERVAL '5' SECOND)) GROUP BY k, window_start, window_end;\n")
    table.sort(out)
    assert.are.same({"+I[a, 1970-01-01 00:00:00.000, 2, 6, 4]", "+I[a, 1970-01-01 00:00:05.000, 2, 4, 2]",
      "+I[b, 1970-01-01 00:00:00.000, 1, <NULL>, 1]", "+I[b, 1970-01-01 00:00:05.000, 1, <NULL>, 1]"}, out)
  end)

  it("says what is wrong with a FILTER", function()
    assert.are.equal(("job.sql:%d:17: FILTER needs a BOOLEAN condition, got INT"):format(L),
      fails("SELECT COUNT(*) FILTER (WHERE v) FROM t;\n"))
    assert.are.equal(("job.sql:%d:17: FILTER (WHERE ...) is for aggregate functions, not UPPER"):format(L),
      fails("SELECT UPPER(k) FILTER (WHERE v > 1) FROM t;\n"))
  end)
end)

describe("SQL REGEXP_EXTRACT and DATE_FORMAT", function()
  local S = "CREATE TABLE u (s STRING, ms BIGINT) WITH ('connector' = 'filesystem', 'path' = 'u.csv', "
    .. "'format' = 'csv');\n"

  it("REGEXP_EXTRACT gives the group of the first match, NULL when none (Java's rules)", function()
    -- (&|^)channel_id=([^&]*): group 2 of 'a=1&channel_id=12&x' is 12; at the start: 7; none: NULL;
    -- c(h) group 0 'ch'; a lazy (.*?) before 'b' in 'aab' takes 'aa'; index 3 of a pattern of 2
    -- groups: NULL; (x)|y: the first match in 'a=1&channel_id=12&x' is its x (group 1: x), in 'y'
    -- its y, where group 1 did not take part: NULL
    local out = ok(S .. "SELECT REGEXP_EXTRACT(s, '(&|^)channel_id=([^&]*)', 2), REGEXP_EXTRACT(s, 'c(h)'), "
      .. "REGEXP_EXTRACT(s, '^(.*?)b', 1), REGEXP_EXTRACT(s, '(&|^)channel_id=([^&]*)', 3), "
      .. "REGEXP_EXTRACT(s, '(x)|y', 1), REGEXP_EXTRACT(s, '\\d{2,}') FROM u;\n", nil,
      {["u.csv"] = "a=1&channel_id=12&x,0\nchannel_id=7,0\naab,0\ny,0\n"})
    assert.are.same({"+I[12, ch, <NULL>, <NULL>, x, 12]", "+I[7, ch, <NULL>, <NULL>, <NULL>, <NULL>]",
      "+I[<NULL>, <NULL>, aa, <NULL>, <NULL>, <NULL>]", "+I[<NULL>, <NULL>, <NULL>, <NULL>, <NULL>, <NULL>]"}, out)
  end)

  it("REGEXP_EXTRACT names what it does not take in a pattern, at the pattern", function()
    assert.are.equal(("job.sql:%d:26: REGEXP_EXTRACT: not supported yet: '(?=' is not supported (at character 2 "
      .. "of the pattern)"):format(L + 1), fails(S .. "SELECT REGEXP_EXTRACT(s, '(?=a)') FROM u;\n", {["u.csv"] = ""}))
  end)

  it("DATE_FORMAT writes Java's pattern letters, in UTC", function()
    -- 1436918400123 ms is 2015-07-15 00:00:00.123 UTC; 1436999999999 is 2015-07-15 22:39:59.999;
    -- in the pattern (an SQL string: '' is one quote) 'at' is quoted text, '' a quote
    local out = ok(S .. "SELECT DATE_FORMAT(TO_TIMESTAMP_LTZ(ms, 3), 'yyyy-MM-dd'), "
      .. "DATE_FORMAT(TO_TIMESTAMP_LTZ(ms, 3), 'HH:mm'), "
      .. "DATE_FORMAT(TO_TIMESTAMP_LTZ(ms, 3), 'yy/M/d h:mm:ss.SSS a ''at'' '''''), "
      .. "DATE_FORMAT(s, 'dd.MM.yyyy') FROM u;\n",
      nil, {["u.csv"] = "2020-02-29 10:11:12,1436918400123\nx,1436999999999\n"})
    assert.are.same({"+I[2015-07-15, 00:00, 15/7/15 12:00:00.123 AM at ', 29.02.2020]",
      "+I[2015-07-15, 22:39, 15/7/15 10:39:59.999 PM at ', <NULL>]"}, out)
  end)

  it("DATE_FORMAT names a pattern letter it does not take", function()
    assert.are.equal(("job.sql:%d:45: DATE_FORMAT: not supported yet: the pattern letters 'EEE' in 'EEE' (yyyy, "
      .. "yy, M, MM, d, dd, H, HH, h, hh, m, mm, s, ss, S, SS, SSS, a)"):format(L + 1),
      fails(S .. "SELECT DATE_FORMAT(TO_TIMESTAMP_LTZ(ms, 3), 'EEE') FROM u;\n", {["u.csv"] = ""}))
  end)
end)

describe("SQL PROCTIME()", function()
  it("gives processing-time windows: every row in one 10 s window of the clock, counted", function()
    -- the 9 rows of t, per k: a 7, b 2; each window a 10 s span of the wall clock, aligned
    local before = os.time()
    local out = ok("CREATE VIEW p AS SELECT *, PROCTIME() AS pt FROM t;\n"
      .. "SELECT k, COUNT(*), window_start, window_end FROM TABLE(TUMBLE(TABLE p, DESCRIPTOR(pt), "
      .. "INTERVAL '10' SECOND)) GROUP BY k, window_start, window_end;\n")
    local after = os.time()
    local per = {}
    for _, l in ipairs(out) do
      local TS = "%d+%-%d+%-%d+ %d+:%d+:(%d+)%.000"
      local k, n, s1, s2 = l:match("^%+I%[(%a), (%d+), " .. TS .. ", " .. TS .. "%]$")
      assert.is_not_nil(k, l)
      per[k] = (per[k] or 0) + tonumber(n)
      assert.are.equal(0, tonumber(s1) % 10, l)
      assert.are.equal((tonumber(s1) + 10) % 60, tonumber(s2), l)
    end
    assert.are.same({a = 7, b = 2}, per)
    assert.is_true(after - before < 600)
  end)

  it("is refused where it is neither a SELECT item nor a computed column", function()
    assert.are.equal(("job.sql:%d:23: not supported yet: PROCTIME() here (it is an item of a SELECT without GROUP "
      .. "BY, as in CREATE VIEW v AS SELECT *, PROCTIME() AS pt FROM t)"):format(L),
      fails("SELECT k FROM t WHERE PROCTIME() IS NOT NULL;\n"))
    -- (a computed column `pt AS PROCTIME()` is a processing-time attribute: sql_join_time_spec)
  end)
end)

-- OVER over an updating input: a materialized view of the changing table (docs/sql.md). The
-- input is the changelog of a GROUP BY over u.csv (no watermark: the ORDER BY column is no time
-- attribute); each row of u adds v to the group (k, id): +I for a new group, -U/+U for a change.
describe("SQL OVER over an updating input", function()
  local UDDL = "CREATE TABLE u (k STRING, id INT, v INT) WITH ('connector' = 'filesystem', 'path' = 'u.csv', "
    .. "'format' = 'csv');\n"
  local function view(query, csv, args)
    local out, err, code = sql_run.run(UDDL .. query, {["u.csv"] = csv}, {args = args})
    assert.are.equal(0, code, err)
    return lines(out)
  end
  -- the rows left (a retraction must find its row)
  local function apply(log) return (h.apply_changelog(log)) end

  it("ROWS 1 PRECEDING ordered by a column that is no time attribute: inserts and retractions in the middle "
    .. "of a partition update the rows after them", function()
    -- by hand, SUM(s) over the row and the one before it, per k by id:
    -- a,1,10: +I (a,1,10) -> [1:10]: +I[a, 1, 10, 10]
    -- a,3,30: +I (a,3,30) -> [1:10, 3:30]: +I[a, 3, 30, 40]
    -- a,2,20: +I (a,2,20) in the middle -> [1:10, 2:20, 3:30]: +I[a, 2, 20, 30], and 3's frame
    --   is now {20, 30}: -U[a, 3, 30, 40] +U[a, 3, 30, 50]
    -- a,2,5: the group's -U (a,2,20): -D[a, 2, 20, 30], 3's frame {10, 30}: -U[a, 3, 30, 50]
    --   +U[a, 3, 30, 40]; its +U (a,2,25): +I[a, 2, 25, 35], 3's frame {25, 30}: -U[a, 3, 30, 40]
    --   +U[a, 3, 30, 55]
    -- b,1,7: +I[b, 1, 7, 7]; a,1,0 changes no group (the GROUP BY emits nothing)
    local q = "SELECT k, id, s, SUM(s) OVER (PARTITION BY k ORDER BY id ROWS BETWEEN 1 PRECEDING AND CURRENT ROW) "
      .. "FROM (SELECT k, id, SUM(v) AS s FROM u GROUP BY k, id);\n"
    local csv = "a,1,10\na,3,30\na,2,20\na,2,5\nb,1,7\na,1,0\n"
    assert.are.same({"+I[a, 1, 10, 10]", "+I[a, 3, 30, 40]", "+I[a, 2, 20, 30]", "-U[a, 3, 30, 40]",
      "+U[a, 3, 30, 50]", "-D[a, 2, 20, 30]", "-U[a, 3, 30, 50]", "+U[a, 3, 30, 40]", "+I[a, 2, 25, 35]",
      "-U[a, 3, 30, 40]", "+U[a, 3, 30, 55]", "+I[b, 1, 7, 7]"}, view(q, csv))
    -- the same view at -p 2 --threads 2
    assert.are.same({"[a, 1, 10, 10]", "[a, 2, 25, 35]", "[a, 3, 30, 55]", "[b, 1, 7, 7]"},
      apply(view(q, csv, "-p 2 --threads 2")))
  end)

  it("rows of equal ORDER BY values are in the order they were inserted (an updated row goes after its "
    .. "peers); a row that does not change emits nothing", function()
    -- by hand, SUM(id) and COUNT(*) over the row and the one before it, ordered by s:
    -- a,1,5: [(1,5)]: +I[1, 5, 1, 1]
    -- a,2,5: a peer of (1,5), after it: [(1,5), (2,5)]: +I[2, 5, 3, 2]
    -- a,3,1: first: [(3,1), (1,5), (2,5)]: +I[3, 1, 3, 1]; (1,5)'s frame {3, 1}: -U[1, 5, 1, 1]
    --   +U[1, 5, 4, 2]; (2,5)'s frame {1, 2} is as it was: nothing
    -- a,3,4: -U (3,1): -D[3, 1, 3, 1], (1,5) first again: -U[1, 5, 4, 2] +U[1, 5, 1, 1]; +U (3,5):
    --   after its peers: [(1,5), (2,5), (3,5)]: +I[3, 5, 5, 2]
    -- a,1,1: -U (1,5): -D[1, 5, 1, 1], (2,5) first: -U[2, 5, 3, 2] +U[2, 5, 2, 1]; +U (1,6):
    --   [(2,5), (3,5), (1,6)]: +I[1, 6, 4, 2]
    local W = "OVER (PARTITION BY k ORDER BY s ROWS BETWEEN 1 PRECEDING AND CURRENT ROW)"
    local out = view("SELECT id, s, SUM(id) " .. W .. ", COUNT(*) " .. W
      .. " FROM (SELECT k, id, SUM(v) AS s FROM u GROUP BY k, id);\n", "a,1,5\na,2,5\na,3,1\na,3,4\na,1,1\n")
    assert.are.same({"+I[1, 5, 1, 1]", "+I[2, 5, 3, 2]", "+I[3, 1, 3, 1]", "-U[1, 5, 1, 1]", "+U[1, 5, 4, 2]",
      "-D[3, 1, 3, 1]", "-U[1, 5, 4, 2]", "+U[1, 5, 1, 1]", "+I[3, 5, 5, 2]", "-D[1, 5, 1, 1]",
      "-U[2, 5, 3, 2]", "+U[2, 5, 2, 1]", "+I[1, 6, 4, 2]"}, out)
  end)

  it("table.exec.state.ttl: a partition not written for the TTL (processing time) is forgotten", function()
    local hs = wm.testing.harness(function(input)
      local env = input.env
      env:create_temporary_view("T", input, {"k:STRING"})
      env:execute_sql("SET 'table.exec.state.ttl' = '10 s'")
      return env:sql_query("SELECT k, n, SUM(n) OVER (ORDER BY n ROWS 1 PRECEDING) AS s FROM (SELECT k, COUNT(*) "
        .. "AS n FROM T GROUP BY k)"):to_retract_stream()
        :map(function(e) return (e[1] and "+" or "-") .. "[" .. e[2].k .. ", " .. e[2].n .. ", " .. e[2].s .. "]" end)
    end)
    local function at(t, rec)
      hs:advance_processing_time(t - hs:processing_time())
      hs:push(rec, t)
    end
    at(0, {k = "a"})     -- [(a,1)]: +[a, 1, 1]; the one partition written at 0 s
    at(5000, {k = "b"})  -- [(a,1), (b,1)]: +[b, 1, 2]; written at 5 s
    at(16000, {k = "c"}) -- the partition is gone (5 s + 10 s <= 16 s): [(c,1)]: +[c, 1, 1], not 2
    assert.are.same({"+[a, 1, 1]", "+[b, 1, 2]", "+[c, 1, 1]"}, hs:output())
  end)

  it("takes ROWS BETWEEN n PRECEDING AND CURRENT ROW only", function()
    local sub = " FROM (SELECT k, id, SUM(v) AS s FROM u GROUP BY k, id);\n"
    local _, err, code = sql_run.run(UDDL .. "SELECT SUM(s) OVER (ORDER BY id RANGE BETWEEN UNBOUNDED PRECEDING "
      .. "AND CURRENT ROW)" .. sub, {["u.csv"] = "a,1,1\n"})
    assert.are.equal(1, code)
    assert.are.equal("job.sql:2:47: not supported yet: OVER aggregates over an updating input (the result of a "
      .. "GROUP BY, a Top-N or a regular join) take ROWS BETWEEN n PRECEDING AND CURRENT ROW only\n", err)
  end)
end)

describe("SQL OVER state in checkpoints", function()
  it("a job stopped and resumed gives the rows of an uninterrupted run", function()
    local dir = h.tmpdir()
    h.finally(function() h.rmdir(dir) end)
    -- 3000 rows over 4 keys, 1 ms apart; per key the sum of the value and the 3 before it
    local ref, part, rest = sql_run.stop_and_resume(dir, [=[
local wm = require("wm")
local env = wm.env{watermark_interval = 0}
local s = env:generate(function(i)
    if i == 500 and RATE then io.stderr:write("started\n") end
    return {k = i % 4, v = i, ts = i}
  end, {count = 3000, rate = RATE}):set_parallelism(1)
  :assign_timestamps_and_watermarks(wm.watermarks.bounded_out_of_orderness("0ms"):with_timestamp_field("ts"))
env:create_temporary_view("T", s, {"k:INT", "v:BIGINT", "rt:rowtime"})
env:execute_sql([[SELECT k, v, SUM(v) OVER (PARTITION BY k ORDER BY rt ROWS 3 PRECEDING) FROM T]])
env:execute()
]=])
    local a = lines(ref)
    local b = lines(part .. rest)
    assert.are.equal(3000, #a)
    -- the last row of key 3: 2999 + 2995 + 2991 + 2987
    assert.is_truthy(ref:find("+I[3, 2999, 11972]\n", 1, true))
    table.sort(a)
    table.sort(b)
    assert.are.same(a, b)
  end)

  it("over an updating input: a job stopped and resumed ends with the view of an uninterrupted run", function()
    local dir = h.tmpdir()
    h.finally(function() h.rmdir(dir) end)
    -- rows i = 1..3000 counted per k = i % 40 (a GROUP BY: -U/+U at every row); SUM(k) over the
    -- group and the 2 before it by count, ties in order of insertion
    local ref, part, rest = sql_run.stop_and_resume(dir, [=[
local wm = require("wm")
local env = wm.env{}
local s = env:generate(function(i)
    if i == 500 and RATE then io.stderr:write("started\n") end
    return {k = i % 40, v = i}
  end, {count = 3000, rate = RATE}):set_parallelism(1)
env:create_temporary_view("T", s, {"k:INT", "v:BIGINT"})
env:execute_sql([[SELECT k, n, SUM(k) OVER (ORDER BY n ROWS 2 PRECEDING) FROM (SELECT k, COUNT(*) AS n FROM T
  GROUP BY k)]])
env:execute()
]=])
    local function apply(text) return (h.apply_changelog(lines(text))) end
    -- by hand: every group ends at 75; the last updates (i = 2961..3000) insert k = 1, ..., 39, 0
    -- in that order: k = 1 -> 1, k = 2 -> 1 + 2, k = j -> (j - 2) + (j - 1) + j = 3j - 3,
    -- k = 0 -> 38 + 39 + 0
    local want = {"[0, 75, 77]", "[1, 75, 1]"}
    for j = 2, 39 do want[#want + 1] = string.format("[%d, 75, %d]", j, 3 * j - 3) end
    table.sort(want)
    assert.are.same(want, apply(ref))
    assert.are.same(want, apply(part .. rest))
  end)
end)

describe("SQL filesystem sink PARTITIONED BY", function()
  -- the files under `dir`: relative path -> text
  local function files_of(dir)
    local out = {}
    local p = io.popen("cd '" .. dir .. "' && find . -type f | sort")
    for f in p:lines() do
      local fh = assert(io.open(dir .. "/" .. f))
      out[f:sub(3)] = fh:read("a")
      fh:close()
    end
    p:close()
    return out
  end

  local SRC = [[
SET 'pipeline.auto-watermark-interval' = '0';
CREATE TABLE src (a INT, dt STRING, hm STRING, ts STRING, rt AS TO_TIMESTAMP(ts), WATERMARK FOR rt AS rt)
  WITH ('connector' = 'filesystem', 'path' = 'src.csv', 'format' = 'csv');
CREATE TABLE out (a INT, dt STRING, hm STRING) PARTITIONED BY (dt, hm) WITH (
  'connector' = 'filesystem', 'path' = 'file://out/', 'format' = 'csv',
  'sink.partition-commit.trigger' = 'partition-time', 'sink.partition-commit.delay' = '1 min',
  'sink.partition-commit.policy.kind' = 'success-file',
  'partition.time-extractor.timestamp-pattern' = '$dt $hm:00');
]]

  it("writes a folder per partition, commits it when the watermark passes its time + delay", function()
    -- the watermark is the last row's time - 1 ms:
    --   1 at 10:00:05 into hm=10:00; 2 at 10:01:10 (W 10:01:09.999): 10:00 + 1 min has passed:
    --   hm=10:00 commits (part-0-0: 1, _SUCCESS); 3 at 10:00:30 into the committed hm=10:00: a new
    --   file, committed at the next watermark (10:02:29.999, after 4): part-0-1: 3; hm=10:01
    --   (2 and 4) commits at 10:02:00 and at the end
    local src = "1,2020-01-01,10:00,2020-01-01 10:00:05\n2,2020-01-01,10:01,2020-01-01 10:01:10\n"
      .. "3,2020-01-01,10:00,2020-01-01 10:00:30\n4,2020-01-01,10:01,2020-01-01 10:02:30\n"
    -- (the sink in C, and the Lua sink: spec/sql_fspart_spec.lua compares them further)
    for _, env in ipairs({"", "WMRUN_SQL_FS_SINK=lua"}) do
      local got
      local out, err, code = sql_run.run(SRC .. "INSERT INTO out SELECT a, dt, hm FROM src;\n", {["src.csv"] = src},
        {after = function(dir) got = files_of(dir .. "/out") end, env = env})
      assert.are.equal(0, code, err)
      assert.are.equal("", out)
      assert.are.same({
        ["dt=2020-01-01/hm=10%3A00/part-0-0"] = "1\n", ["dt=2020-01-01/hm=10%3A00/part-0-1"] = "3\n",
        ["dt=2020-01-01/hm=10%3A00/_SUCCESS"] = "",
        ["dt=2020-01-01/hm=10%3A01/part-0-0"] = "2\n4\n", ["dt=2020-01-01/hm=10%3A01/_SUCCESS"] = "",
      }, got, env)
    end
  end)

  it("says what is wrong with a partitioned table, at its position", function()
    local function err_of(ddl)
      local _, err, code = sql_run.run("CREATE TABLE src (a INT) WITH ('connector' = 'filesystem', 'path' = 's.csv', "
        .. "'format' = 'csv');\n" .. ddl .. "\nINSERT INTO out SELECT a, 'x' FROM src;\n", {["s.csv"] = ""})
      assert.are.equal(1, code)
      return (err:gsub("\n$", ""))
    end
    assert.are.equal("job.sql:2:36: PARTITIONED BY is for the filesystem connector (this table's is 'print')",
      err_of("CREATE TABLE out (a INT, b STRING) PARTITIONED BY (b) WITH ('connector' = 'print');"))
    assert.are.equal("job.sql:2:52: PARTITIONED BY: the table has no column 'c'",
      err_of("CREATE TABLE out (a INT, b STRING) PARTITIONED BY (c) WITH ('connector' = 'filesystem', "
        .. "'path' = 'o', 'format' = 'csv');"))
    assert.are.equal("job.sql:2:102: unknown option 'sink.partition-commit.delay' for a table (it is an option of a "
      .. "table PARTITIONED BY (...))", err_of("CREATE TABLE out (a INT, b STRING) WITH ('connector' = 'filesystem', "
        .. "'path' = 'o', 'format' = 'csv', 'sink.partition-commit.delay' = '1 min');"))
    assert.are.equal("job.sql:2:121: not supported yet: 'sink.partition-commit.policy.kind' = 'metastore' (wmrun has "
      .. "'success-file')", err_of("CREATE TABLE out (a INT, b STRING) PARTITIONED BY (b) WITH ('connector' = "
        .. "'filesystem', 'path' = 'o', 'format' = 'csv', 'sink.partition-commit.policy.kind' = 'metastore');"))
  end)
end)
