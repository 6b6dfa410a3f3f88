-- SQL statements end to end: each statement kind, group windows, window TVFs, HAVING,
-- DISTINCT, NULLs, updates, sinks and the errors that name line and column.
-- Expected outputs are worked out by hand from the rules in docs/sql.md.
local h = require("helper")

-- Writes files into a fresh folder and runs `wmrun --sql job.sql` there.
local function run(sql, files)
  local dir = h.tmpdir()
  for name, text in pairs(files or {}) do
    local f = assert(io.open(dir .. "/" .. name, "w"))
    f:write(text)
    f:close()
  end
  local f = assert(io.open(dir .. "/job.sql", "w"))
  f:write(sql)
  f:close()
  local out, err, code = h.wmrun('--sql "' .. dir .. '/job.sql"')
  return out, err, code, dir
end

local function ok_run(sql, files)
  local out, err, code, dir = run(sql, files)
  assert.are.equal("", err)
  assert.are.equal(0, code)
  return out, dir
end

local function fail_run(sql, files)
  local out, err, code = run(sql, files)
  assert.are.equal(1, code)
  assert.are.equal("", out)
  return (err:gsub("^wmrun: [^:]*/job%.sql", "job.sql"))
end

-- sensor rows: id, ms, vc
local SENSORS = "a,1000,3\nb,2000,5\na,4000,2\na,6000,7\nb,11000,1\n"
local DDL = [[
SET 'pipeline.auto-watermark-interval' = '0';
CREATE TABLE s (id STRING, ms BIGINT, vc INT,
  rt AS TO_TIMESTAMP_LTZ(ms, 3),
  WATERMARK FOR rt AS rt - INTERVAL '1' SECOND
) WITH ('connector' = 'filesystem', 'path' = 's.csv', 'format' = 'csv');
]]

describe("SQL statements", function()
  it("SELECT with expressions prints an append-only changelog", function()
    local out = ok_run(DDL .. [[
      SELECT id, vc * 2 + 1 AS v, CASE WHEN vc > 3 THEN 'big' ELSE 'small' END AS size,
             CAST(vc AS DOUBLE) / 2 AS half, UPPER(id) || '!' AS u, vc / 2 AS q, rt
      FROM s WHERE vc <> 2 AND NOT (id = 'b' AND vc < 2);]], {["s.csv"] = SENSORS})
    assert.are.equal(
      "+I[a, 7, small, 1.5, A!, 1, 1970-01-01 00:00:01.000]\n" ..
      "+I[b, 11, big, 2.5, B!, 2, 1970-01-01 00:00:02.000]\n" ..
      "+I[a, 15, big, 3.5, A!, 3, 1970-01-01 00:00:06.000]\n", out)
  end)

  it("string functions, LIKE, IN, BETWEEN and NULLs follow SQL's three-valued logic", function()
    local out = ok_run([[
      CREATE TABLE p (name STRING, age INT) WITH ('connector' = 'filesystem', 'path' = 'p.csv', 'format' = 'csv');
      SELECT name, age + 1, age > 20, name LIKE 'z%', CHAR_LENGTH(name), SUBSTRING(name, 2, 3),
             LOWER(CONCAT(name, '-', 'X')), age IS NULL, age IN (18, 25), age BETWEEN 19 AND 30,
             COALESCE(age, -1), age > 20 OR name = 'lisi'
      FROM p;]], {["p.csv"] = "zhangsan,18\nlisi,\n"})
    assert.are.equal(
      "+I[zhangsan, 19, FALSE, TRUE, 8, han, zhangsan-x, FALSE, TRUE, FALSE, 18, FALSE]\n" ..
      "+I[lisi, <NULL>, <NULL>, FALSE, 4, isi, lisi-x, TRUE, <NULL>, <NULL>, -1, TRUE]\n", out)
  end)

  it("HOUR gives the hour of the day of a TIMESTAMP or TIMESTAMP_LTZ (UTC), NULL of NULL", function()
    -- by hand: 0 ms -> 0; 13 h + 5 ms -> 13; 1 ms before a day -> 23; -1 ms (1969-12-31
    -- 23:59:59.999) -> 23; an empty ms -> NULL; TO_TIMESTAMP('2016-04-27 11:34:20') -> 11
    local out = ok_run([[
      CREATE TABLE t (ms BIGINT) WITH ('connector' = 'filesystem', 'path' = 't.csv', 'format' = 'csv');
      SELECT ms, HOUR(TO_TIMESTAMP_LTZ(ms, 3)), HOUR(TO_TIMESTAMP('2016-04-27 11:34:20')) FROM t;]],
      {["t.csv"] = "0\n46800005\n86399999\n-1\n\n"})
    assert.are.equal(
      "+I[0, 0, 11]\n+I[46800005, 13, 11]\n+I[86399999, 23, 11]\n+I[-1, 23, 11]\n+I[<NULL>, <NULL>, 11]\n", out)
    local err = fail_run([[
      CREATE TABLE t (ms BIGINT) WITH ('connector' = 'filesystem', 'path' = 't.csv', 'format' = 'csv');
      SELECT HOUR(ms) FROM t;]], {["t.csv"] = "0\n"})
    assert.matches("job.sql:2:19: HOUR: argument 1 must be a TIMESTAMP, got BIGINT", err, 1, true)
  end)

  it("SPLIT_INDEX counts empty pieces, is NULL past the end, for a negative index and for ''", function()
    -- by hand, Flink's rule (commons-lang splitByWholeSeparatorPreserveAllTokens): a/b/c -> a b c;
    -- a//b -> a '' b; /a -> '' a; a/ -> a ''; '' -> no pieces; x::y::z at '::' -> x y z
    local out = ok_run([[
      CREATE TABLE t (s STRING, i INT) WITH ('connector' = 'filesystem', 'path' = 't.csv', 'format' = 'csv');
      SELECT s, i, SPLIT_INDEX(s, '/', i), SPLIT_INDEX('x::y::z', '::', i), SPLIT_INDEX('', '/', 0) FROM t;]],
      {["t.csv"] = "a/b/c,0\na/b/c,2\na/b/c,3\na//b,1\n/a,0\na/,1\na/b,-1\n"})
    assert.are.equal(
      "+I[a/b/c, 0, a, x, <NULL>]\n+I[a/b/c, 2, c, z, <NULL>]\n+I[a/b/c, 3, <NULL>, <NULL>, <NULL>]\n" ..
      "+I[a//b, 1, , y, <NULL>]\n+I[/a, 0, , x, <NULL>]\n+I[a/, 1, , y, <NULL>]\n" ..
      "+I[a/b, -1, <NULL>, <NULL>, <NULL>]\n", out)
  end)

  it("GROUP BY TUMBLE with TUMBLE_START/END/ROWTIME fires per window at the watermark", function()
    -- watermark = max(rt) - 1 s; windows of 5 s: [0,5) a:{3,2} b:{5}; [5,10) a:{7}; [10,15) b:{1}
    local out = ok_run(DDL .. [[
      SELECT id, COUNT(*) AS n, SUM(vc), TUMBLE_START(rt, INTERVAL '5' SECOND),
             TUMBLE_ROWTIME(rt, INTERVAL '5' SECOND)
      FROM s GROUP BY id, TUMBLE(rt, INTERVAL '5' SECOND);]], {["s.csv"] = SENSORS})
    assert.are.equal(
      "+I[a, 2, 5, 1970-01-01 00:00:00.000, 1970-01-01 00:00:04.999]\n" ..
      "+I[b, 1, 5, 1970-01-01 00:00:00.000, 1970-01-01 00:00:04.999]\n" ..
      "+I[a, 1, 7, 1970-01-01 00:00:05.000, 1970-01-01 00:00:09.999]\n" ..
      "+I[b, 1, 1, 1970-01-01 00:00:10.000, 1970-01-01 00:00:14.999]\n", out)
  end)

  it("the watermark is the expression's value: a window fires when max(rt) - d reaches its last ms", function()
    -- window [0,5) has max ts 4999: it needs a watermark >= 4999, i.e. a row at 5999 (not 5998)
    local out = ok_run([[
      SET 'pipeline.auto-watermark-interval' = '0';
      CREATE TABLE w (k STRING, ms BIGINT, rt AS TO_TIMESTAMP_LTZ(ms, 3), WATERMARK FOR rt AS rt - INTERVAL '1' SECOND)
        WITH ('connector' = 'filesystem', 'path' = 'w.csv', 'format' = 'csv');
      SELECT k, COUNT(*) FROM w GROUP BY TUMBLE(rt, INTERVAL '5' SECOND), k;]],
      {["w.csv"] = "x,1000\ny,5998\nx,4999\nz,5999\nx,4000\n"})
    -- x@4999 arrives at watermark 4998: still counted; z@5999 fires [0,5) with x:2;
    -- x@4000 is late (dropped); the end of input fires [5,10)
    assert.are.equal("+I[x, 2]\n+I[y, 1]\n+I[z, 1]\n", out)
  end)

  it("GROUP BY HOP with MIN, MAX, AVG (INT average truncates as in Flink)", function()
    local out = ok_run(DDL .. [[
      SELECT id, MIN(vc), MAX(vc), AVG(vc), HOP_END(rt, INTERVAL '2' SECOND, INTERVAL '4' SECOND) AS e
      FROM s WHERE id = 'a' GROUP BY HOP(rt, INTERVAL '2' SECOND, INTERVAL '4' SECOND), id;]], {["s.csv"] = SENSORS})
    assert.are.equal(
      "+I[a, 3, 3, 3, 1970-01-01 00:00:02.000]\n" ..
      "+I[a, 3, 3, 3, 1970-01-01 00:00:04.000]\n" ..
      "+I[a, 2, 2, 2, 1970-01-01 00:00:06.000]\n" ..
      "+I[a, 2, 7, 4, 1970-01-01 00:00:08.000]\n" ..
      "+I[a, 7, 7, 7, 1970-01-01 00:00:10.000]\n", out)
  end)

  it("window TVFs: TUMBLE with HAVING and COUNT(DISTINCT), CUMULATE, and TUMBLE without aggregation", function()
    local out = ok_run(DDL .. [[
      SELECT window_start, window_end, COUNT(DISTINCT id) AS ids, SUM(vc)
      FROM TABLE(TUMBLE(TABLE s, DESCRIPTOR(rt), INTERVAL '5' SECOND))
      GROUP BY window_start, window_end HAVING SUM(vc) > 7;]], {["s.csv"] = SENSORS})
    assert.are.equal("+I[1970-01-01 00:00:00.000, 1970-01-01 00:00:05.000, 2, 10]\n", out)
    out = ok_run(DDL .. [[
      SELECT window_end, SUM(vc)
      FROM TABLE(CUMULATE(TABLE s, DESCRIPTOR(rt), INTERVAL '2' SECOND, INTERVAL '6' SECOND))
      GROUP BY window_start, window_end;]], {["s.csv"] = SENSORS})
    assert.are.equal(
      "+I[1970-01-01 00:00:02.000, 3]\n+I[1970-01-01 00:00:04.000, 8]\n+I[1970-01-01 00:00:06.000, 10]\n" ..
      "+I[1970-01-01 00:00:08.000, 7]\n+I[1970-01-01 00:00:10.000, 7]\n+I[1970-01-01 00:00:12.000, 8]\n", out)
    out = ok_run(DDL .. [[
      SELECT id, window_start, window_end FROM TABLE(TUMBLE(TABLE s, DESCRIPTOR(rt), INTERVAL '5' SECOND))
      WHERE vc > 4;]], {["s.csv"] = SENSORS})
    assert.are.equal(
      "+I[b, 1970-01-01 00:00:00.000, 1970-01-01 00:00:05.000]\n" ..
      "+I[a, 1970-01-01 00:00:05.000, 1970-01-01 00:00:10.000]\n", out)
  end)

  it("a non-windowed GROUP BY emits updates; unchanged results emit nothing; HAVING filters each change", function()
    local out = ok_run(DDL .. "SELECT id, MAX(vc) AS m FROM s GROUP BY id HAVING MAX(vc) > 2;",
      {["s.csv"] = SENSORS})
    -- a:3 (+I), b:5 (+I), a:2 (max unchanged: nothing), a:7 (-U 3, +U 7), b:1 (unchanged)
    assert.are.equal("+I[a, 3]\n+I[b, 5]\n-U[a, 3]\n+U[a, 7]\n", out)
  end)

  it("SELECT DISTINCT, CREATE VIEW, and an aggregate over an updating view retracts exactly", function()
    local out = ok_run(DDL .. [[
      CREATE VIEW counts AS SELECT id, COUNT(*) AS n FROM s GROUP BY id;
      SELECT n, COUNT(*) AS ids FROM counts GROUP BY n;]], {["s.csv"] = SENSORS})
    -- counts: +I a1, +I b1, -U a1 +U a2, -U a2 +U a3, -U b1 +U b2; a group whose count
    -- drops to 0 is deleted (-D) and comes back as a new row (+I)
    assert.are.equal(
      "+I[1, 1]\n-U[1, 1]\n+U[1, 2]\n-U[1, 2]\n+U[1, 1]\n+I[2, 1]\n-D[2, 1]\n+I[3, 1]\n" ..
      "-D[1, 1]\n+I[2, 1]\n", out)
    out = ok_run(DDL .. "SELECT DISTINCT id FROM s;", {["s.csv"] = SENSORS})
    assert.are.equal("+I[a]\n+I[b]\n", out)
  end)

  it("INSERT INTO a print table and a filesystem table; UNION ALL", function()
    local out, dir = ok_run(DDL .. [[
      CREATE TABLE out (id STRING, total INT) WITH ('connector' = 'print', 'print-identifier' = 'sums');
      CREATE TABLE f (id STRING, v INT) WITH ('connector' = 'filesystem', 'path' = 'out.csv', 'format' = 'csv');
      INSERT INTO out SELECT id, SUM(vc) FROM s GROUP BY TUMBLE(rt, INTERVAL '10' SECOND), id;
      INSERT INTO f SELECT id, vc FROM s WHERE vc > 4 UNION ALL SELECT 'const', 0 FROM s WHERE vc = 1;]],
      {["s.csv"] = SENSORS})
    assert.are.equal("sums> +I[a, 12]\nsums> +I[b, 5]\nsums> +I[b, 1]\n", out)
    -- UNION ALL of two scans of the file: each branch keeps its order, but how the two
    -- sources interleave depends on when their reads complete
    local lines = {}
    for l in h.read(dir .. "/out.csv"):gmatch("[^\n]+") do lines[#lines + 1] = l end
    table.sort(lines)
    assert.are.same({"a,7", "b,5", "const,0"}, lines)
  end)

  it("a JSON filesystem sink writes UTF-8 JSON lines: invalid bytes become U+FFFD (issue 13.9)", function()
    local _, dir = ok_run([[
      CREATE TABLE c (id STRING, n INT) WITH ('connector' = 'filesystem', 'path' = 'c.csv', 'format' = 'csv');
      CREATE TABLE o (id STRING, n INT) WITH ('connector' = 'filesystem', 'path' = 'o.json', 'format' = 'json');
      INSERT INTO o SELECT id, n FROM c;]], {["c.csv"] = 'a\xffb,1\n"q""\\\xc3\xa9",2\n'})
    local cjson = require("cjson")
    local got = {}
    for line in h.read(dir .. "/o.json"):gmatch("[^\n]+") do
      assert.truthy(utf8.len(line), line)
      got[#got + 1] = cjson.decode(line)
    end
    assert.are.same({{id = "a\xef\xbf\xbdb", n = 1}, {id = 'q"\\\xc3\xa9', n = 2}}, got)
    os.execute("rm -rf '" .. dir .. "'")
  end)

  it("reads JSON lines and a custom CSV delimiter, and skips bad lines when asked", function()
    local out = ok_run([[
      CREATE TABLE j (id STRING, n BIGINT, ok BOOLEAN) WITH ('connector' = 'filesystem', 'path' = 'j.json',
        'format' = 'json');
      CREATE TABLE c (id STRING, n INT) WITH ('connector' = 'filesystem', 'path' = 'c.txt', 'format' = 'csv',
        'csv.field-delimiter' = ';', 'csv.ignore-parse-errors' = 'true');
      SELECT * FROM j;
    ]], {["j.json"] = '{"id": "x", "n": 5, "ok": true}\n{"id": "y", "n": null}\n',
         ["c.txt"] = "a;1\nbad;x\nb;2\n"})
    assert.are.equal("+I[x, 5, TRUE]\n+I[y, <NULL>, <NULL>]\n", out)
    out = ok_run([[
      CREATE TABLE c (id STRING, n INT) WITH ('connector' = 'filesystem', 'path' = 'c.txt', 'format' = 'csv',
        'csv.field-delimiter' = ';', 'csv.ignore-parse-errors' = 'true');
      SELECT * FROM c;]], {["c.txt"] = "a;1\nbad;x\nb;2\n"})
    assert.are.equal("+I[a, 1]\n+I[b, 2]\n", out)
  end)

  it("reads standard input with the stdin connector; EXPLAIN prints the plan without running it", function()
    local dir = h.tmpname()
    local f = assert(io.open(dir, "w"))
    f:write("CREATE TABLE i (w STRING, n INT) WITH ('connector' = 'stdin', 'format' = 'csv');\n"
      .. "EXPLAIN SELECT w FROM i WHERE n > 1;\nSELECT w, n * 10 FROM i WHERE n > 1;\n")
    f:close()
    local out, err, code = h.wmrun('--sql "' .. dir .. '"', "a,1\nb,2\nc,3\n")
    os.remove(dir)
    assert.are.equal("", err)
    assert.are.equal(0, code)
    assert.are.equal("read_lines read_lines(-)\nparse_csv parse csv (i)\nsql_rows filter\nsql_rows map\n"
      .. "+I[b, 20]\n+I[c, 30]\n", out)
  end)

  it("a line that does not fit the schema fails naming the file and line", function()
    local _, err, code = run([[
      CREATE TABLE c (id STRING, n INT) WITH ('connector' = 'filesystem', 'path' = 'c.csv', 'format' = 'csv');
      SELECT * FROM c;]], {["c.csv"] = "a,1\nb,x\n"})
    assert.are.equal(1, code)
    assert.matches("c%.csv:2: field 'n': 'x' is not an integer", err)
    assert.matches("in parse_csv 'parse csv %(c%)", err)
  end)
end)

describe("SQL errors name the statement's line and column", function()
  local T = "CREATE TABLE t (word STRING, ts BIGINT) WITH ('connector' = 'filesystem', 'path' = 't.csv', "
    .. "'format' = 'csv');\n"
  local files = {["t.csv"] = "a,1\n"}
  local cases = {
    {"SELECT wrod FROM t;", "job.sql:2:8: unknown column 'wrod'"},
    {"SELECT word FROM nope;", "job.sql:2:18: unknown table 'nope'"},
    {"SELECT FOO(word) FROM t;", "job.sql:2:8: unknown function 'FOO'"},
    {"SELECT word + 1 FROM t;", "job.sql:2:8: operator + needs numeric operands, got STRING"},
    {"SELECT word FROM t WHERE ts = 'x';", "job.sql:2:29: cannot compare BIGINT with STRING"},
    {"SELECT word, COUNT(*) FROM t GROUP BY ts;",
      "job.sql:2:8: column 'word' must appear in GROUP BY or be used in an aggregate function"},
    {"SELECT COUNT(*) FROM t GROUP BY TUMBLE(ts, INTERVAL '5' SECOND);",
      "job.sql:2:40: column 'ts' is not a time attribute: windows need a rowtime column declared with "
      .. "WATERMARK FOR ts AS ..."},
    {"SELECT word FROM t WHERE COUNT(*) > 1;",
     "job.sql:2:26: aggregate function COUNT is not allowed in WHERE (use HAVING)"},
    {"SELECT TUMBLE_START(ts, INTERVAL '5' SECOND) FROM t;", "job.sql:2:8: TUMBLE_START needs GROUP BY TUMBLE(...)"},
    {"CREATE TABLE u (a INT) WITH ('connector' = 'jdbc');", "job.sql:2:30: unknown connector 'jdbc'"},
    {"CREATE TABLE u (a INT) WITH ('connector' = 'kafka');", "job.sql:2:30: the kafka connector needs 'topic'"},
    {"CREATE TABLE u (a INT, WATERMARK FOR a AS a) WITH ('connector' = 'print');",
      "job.sql:2:24: the rowtime column 'a' must be TIMESTAMP(3) or TIMESTAMP_LTZ(3), got INT"},
    {"CREATE TABLE t (a INT) WITH ('connector' = 'print');", "job.sql:2:14: table 't' already exists"},
    {"INSERT INTO t SELECT word FROM t;", "job.sql:2:15: INSERT INTO t: the query gives 1 columns, the table takes 2"},
    {"SET 'parallelism.default' = '5000';\nSELECT word FROM t;",
     "job.sql:2:5: bad parallelism '5000' (expected 1 to 1024)"},
  }
  for _, c in ipairs(cases) do
    it(c[2], function()
      local err = fail_run(T .. c[1], files)
      assert.are.equal(c[2], err:sub(1, #c[2]))
    end)
  end

  it("an updating query cannot go to a filesystem sink", function()
    local err = fail_run(T .. "CREATE TABLE o (w STRING, n BIGINT) WITH ('connector' = 'filesystem', 'path' = 'o.csv', "
      .. "'format' = 'csv');\nINSERT INTO o SELECT word, COUNT(*) FROM t GROUP BY word;", files)
    assert.matches("^job.sql:3:15: table 'o' %(connector 'filesystem'%) only takes appended rows", err)
  end)
end)
