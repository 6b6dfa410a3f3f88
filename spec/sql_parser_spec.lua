-- The SQL parser: every statement form, precedence, quoting, comments, case-insensitive
-- keywords, and syntax errors that name line and column.
local parser = require("wm.sql.parser")

local function parse(text) return parser.parse(text, {name = "job.sql"}) end
local function expr(text) return parser.parse_expr(text, {name = "e"}) end
local function err_of(text)
  local ok, e = pcall(parse, text)
  assert.is_false(ok)
  return tostring(e)
end

describe("SQL parser", function()
  it("parses CREATE TABLE with columns, a computed column, a watermark and options", function()
    local s = parse([[
      CREATE TABLE words (word STRING, ts BIGINT NOT NULL, rt AS TO_TIMESTAMP_LTZ(ts, 3),
        WATERMARK FOR rt AS rt - INTERVAL '5' SECOND)
      WITH ('connector' = 'filesystem', 'path' = 'w.csv', 'format' = 'csv');]])[1]
    assert.are.equal("create_table", s.tag)
    assert.are.equal("words", s.name)
    assert.are.equal("column", s.elems[1].tag)
    assert.are.equal("STRING", s.elems[1].type.name)
    assert.is_true(s.elems[2].not_null)
    assert.are.equal("computed", s.elems[3].tag)
    assert.are.equal("TO_TIMESTAMP_LTZ", s.elems[3].expr.name)
    assert.are.equal("watermark", s.elems[4].tag)
    assert.are.equal(5000, s.elems[4].expr[2].ms)
    assert.are.same({"connector", "filesystem"}, {s.with[1].key, s.with[1].value})
  end)

  it("parses types with parameters and WITH LOCAL TIME ZONE", function()
    local s = parse("CREATE TABLE t (a VARCHAR(10), b TIMESTAMP(3) WITH LOCAL TIME ZONE, c TIMESTAMP_LTZ(3), "
      .. "d DOUBLE) WITH ('connector' = 'print')")[1]
    assert.are.equal("VARCHAR", s.elems[1].type.name)
    assert.are.equal(10, s.elems[1].type.p1)
    assert.are.equal("TIMESTAMP_LTZ", s.elems[2].type.name)
    assert.are.equal("TIMESTAMP_LTZ", s.elems[3].type.name)
  end)

  it("parses CREATE VIEW, INSERT INTO, SET, RESET and several statements", function()
    local s = parse([[
      SET 'pipeline.auto-watermark-interval' = '0';
      CREATE VIEW v (w, n) AS SELECT word, COUNT(*) FROM t GROUP BY word;
      INSERT INTO out SELECT * FROM v;
      RESET 'x';
      SELECT 1 AS one FROM t]])
    assert.are.same({"set", "create_view", "insert", "reset", "select_stmt"},
      {s[1].tag, s[2].tag, s[3].tag, s[4].tag, s[5].tag})
    assert.are.equal("pipeline.auto-watermark-interval", s[1].key)
    assert.are.equal("0", s[1].value)
    assert.are.same({"w", "n"}, s[2].columns)
    assert.are.equal("out", s[3].name)
  end)

  it("parses SELECT with DISTINCT, WHERE, GROUP BY, HAVING, aliases and stars", function()
    local q = parse("select distinct t.a, b AS bb, c cc, * from t AS x where a > 1 group by a "
      .. "having count(*) > 2")[1].query
    assert.is_true(q.distinct)
    assert.are.equal("a", q.items[1].expr.name)
    assert.are.equal("t", q.items[1].expr.qual)
    assert.are.equal("bb", q.items[2].alias)
    assert.are.equal("cc", q.items[3].alias)
    assert.are.equal("star", q.items[4].tag)
    assert.are.equal("x", q.from.alias)
    assert.are.equal(">", q.where.op)
    assert.are.equal("COUNT", q.having[1].name)
    assert.is_true(q.having[1].star)
  end)

  it("parses window table functions and UNION ALL", function()
    local q = parse("SELECT * FROM TABLE(HOP(TABLE t, DESCRIPTOR(rt), INTERVAL '1' MINUTE, INTERVAL '5' MINUTE)) "
      .. "UNION ALL SELECT * FROM TABLE(TUMBLE(TABLE t, DESCRIPTOR(rt), INTERVAL '1' HOUR))")[1].query
    assert.are.equal("union", q.tag)
    assert.are.equal("tvf", q[1].from.tag)
    assert.are.equal("HOP", q[1].from.fn)
    assert.are.equal("rt", q[1].from.column)
    assert.are.equal(60000, q[1].from.args[1].ms)
    assert.are.equal(3600000, q[2].from.args[1].ms)
  end)

  it("gives arithmetic and logic the usual precedence", function()
    local e = expr("1 + 2 * 3")
    assert.are.equal("+", e.op)
    assert.are.equal("*", e[2].op)
    e = expr("a OR b AND NOT c")
    assert.are.equal("OR", e.op)
    assert.are.equal("AND", e[2].op)
    assert.are.equal("NOT", e[2][2].op)
    e = expr("a + 1 > b * 2 AND c = 'x'")
    assert.are.equal("AND", e.op)
    assert.are.equal(">", e[1].op)
    assert.are.equal("+", e[1][1].op)
    e = expr("(1 + 2) * 3")
    assert.are.equal("*", e.op)
    e = expr("1 - 2 - 3")  -- left associative
    assert.are.equal("-", e.op)
    assert.are.equal("-", e[1].op)
    e = expr("'a' || 'b' = 'ab'")
    assert.are.equal("=", e.op)
    assert.are.equal("||", e[1].op)
  end)

  it("parses predicates, CASE, CAST and function calls", function()
    assert.are.equal("isnull", expr("a IS NOT NULL").tag)
    assert.is_true(expr("a IS NOT NULL").neg)
    assert.are.equal("like", expr("a NOT LIKE 'x%'").tag)
    assert.are.equal("between", expr("a BETWEEN 1 AND 3").tag)
    assert.are.equal("in", expr("a IN (1, 2, 3)").tag)
    local c = expr("CASE WHEN a > 1 THEN 'x' WHEN a > 0 THEN 'y' ELSE 'z' END")
    assert.are.equal("case", c.tag)
    assert.are.equal(2, #c.whens)
    assert.are.equal("z", c.else_.value)
    c = expr("CASE a WHEN 1 THEN 'one' END")
    assert.are.equal("a", c.operand.name)
    local k = expr("CAST(a AS BIGINT)")
    assert.are.equal("cast", k.tag)
    assert.are.equal("BIGINT", k.type.name)
    local f = expr("COUNT(DISTINCT x)")
    assert.is_true(f.distinct)
    assert.are.equal("UPPER", expr("upper(a)").name)
  end)

  it("reads literals: numbers, strings with quotes, booleans, NULL, intervals, timestamps", function()
    assert.are.same({"INT", 42}, {expr("42").type, expr("42").value})
    assert.are.equal("BIGINT", expr("1461756862000").type)
    assert.are.equal("DOUBLE", expr("1.5").type)
    assert.are.equal(-3, expr("-3").value)
    assert.are.equal("it's", expr("'it''s'").value)
    assert.is_true(expr("TRUE").value)
    assert.are.equal("NULL", expr("NULL").type)
    assert.are.equal(300000, expr("INTERVAL '5' MINUTE").ms)
    assert.are.equal(500, expr("INTERVAL '0.5' SECOND").ms)
    assert.are.equal(86400000, expr("INTERVAL '1' DAY").ms)
    assert.are.equal("tslit", expr("TIMESTAMP '2016-04-27 11:34:20'").tag)
  end)

  it("accepts keywords in any case, quoted identifiers and comments", function()
    local s = parse([[
      -- a comment
      sElEcT `select`, `we``ird` /* inline */ FrOm `t` wHeRe x>1 -- trailing
    ]])[1].query
    assert.are.equal("select", s.items[1].expr.name)
    assert.are.equal("we`ird", s.items[2].expr.name)
    assert.are.equal("t", s.from.name)
  end)

  it("reports a syntax error with line, column, what was expected and the token", function()
    assert.are.equal("job.sql:3:14: expected ')' near 'FROM'",
      err_of("CREATE TABLE t (a INT) WITH ('connector' = 'print');\nSELECT a\n  , COUNT(a  FROM t"))
    assert.matches("^job.sql:1:8: expected .*identifier.* near 'FROM'", err_of("SELECT FROM t"))
    assert.matches("^job.sql:1:15: expected .* near end of input", err_of("SELECT a FROM "))
    assert.matches("^job.sql:2:1: expected .*';' near 'SELECT'", err_of("SELECT a FROM t\nSELECT b FROM t"))
    assert.matches("^job.sql:1:26: expected string near ';'", err_of("SET 'a' = 'b'; SET 'c' = ;"))
    assert.matches("^job.sql:1:40: expected time unit near 'WEEK'",
      err_of("SELECT a FROM t WHERE a > INTERVAL '1' WEEK"))
  end)

  it("does not take reserved words as identifiers", function()
    assert.matches("expected", err_of("SELECT a FROM select"))
  end)
end)
