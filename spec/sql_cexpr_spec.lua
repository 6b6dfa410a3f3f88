-- SQL WHERE and SELECT in C (wm.sql.cexpr, core/ops/wm_rexpr.h): which queries get the C
-- path, and the same rows both ways (the C path, and the Lua closures forced with
-- WMRUN_SQL_EXPR=lua), on values worked out by hand and on the Nexmark examples.
local sql = require("wm.sql")
local cexpr = require("wm.sql.cexpr")
local sql_run = require("sql_run")
local h = require("helper")

-- the node kinds of a plan, without the source's
local function kinds(text, name)
  local p = sql.plan(text, {name = name or "job.sql"})
  local t = {}
  for _, n in ipairs(p.env.nodes) do t[#t + 1] = n.kind end
  return t
end
local function count(list, kind)
  local n = 0
  for _, k in ipairs(list) do if k == kind then n = n + 1 end end
  return n
end
local function read(path)
  local f = assert(io.open(path))
  local s = f:read("a")
  f:close()
  return s
end

local function table_at(path)
  return "CREATE TABLE t (a BIGINT, b INT, d DOUBLE, s STRING) WITH ('connector' = 'filesystem', "
    .. "'path' = '" .. path .. "', 'format' = 'csv');\n"
end
-- (planning checks that the file exists: a plan-only test reads this spec file)
local P = table_at("spec/sql_cexpr_spec.lua")
local T = "CREATE TABLE t (a BIGINT, b INT, d DOUBLE, s STRING) WITH ('connector' = 'filesystem', "
  .. "'path' = 'n.csv', 'format' = 'csv');\n"
local IN = {["n.csv"] = "1,10,2.5,abc\n,3,,\n-7,2,0.5,x\n4,,1.0,yy\n3,1,1,z\n"}
local Q = [[
SELECT a + b AS s1, a / b AS q, MOD(a, b) AS m, a * d AS p, d / 2 AS h, -a AS neg,
  CASE WHEN a > 0 THEN 'pos' WHEN a < 0 THEN 'neg' END AS sign,
  a IN (1, 4) AS i1, b BETWEEN 2 AND 10 AS bt, COALESCE(b, a, 0) AS co, s IS NULL AS sn,
  a > 0 AND b > 2 AS an, a > 0 OR b > 2 AS o, NOT (a > 0) AS nt, CAST(a AS DOUBLE) AS c,
  IF(a > 0, s, 'none') AS f
FROM t WHERE a IS NULL OR a <> 3;
]]
-- worked out by hand: row 2 has a and d NULL (s is '', not NULL), row 4 has b NULL; the row
-- with a = 3 is filtered out
local WANT = table.concat({
  "+I[11, 0, 1, 2.5, 1.25, -1, pos, TRUE, TRUE, 10, FALSE, TRUE, TRUE, FALSE, 1.0, abc]",
  "+I[<NULL>, <NULL>, <NULL>, <NULL>, <NULL>, <NULL>, <NULL>, <NULL>, TRUE, 3, FALSE, <NULL>, TRUE, <NULL>, "
    .. "<NULL>, none]",
  "+I[-5, -3, -1, -3.5, 0.25, 7, neg, FALSE, TRUE, 2, FALSE, FALSE, FALSE, TRUE, -7.0, none]",
  "+I[<NULL>, <NULL>, <NULL>, 4.0, 0.5, -4, pos, TRUE, <NULL>, 4, FALSE, <NULL>, TRUE, FALSE, 4.0, yy]",
  ""}, "\n")

-- sql_run.run with the Lua closures forced: stdout, stderr (as sql_run.run gives it), exit code
local function run_lua(text, files)
  local dir = h.tmpdir()
  files["job.sql"] = text
  for name, body in pairs(files) do
    local f = assert(io.open(dir .. "/" .. name, "w"))
    f:write(body)
    f:close()
  end
  files["job.sql"] = nil
  local out, err, code = h.sh("cd '" .. dir .. "' && WMRUN_SQL_EXPR=lua " .. h.wmrun_path() .. " --sql job.sql")
  h.rmdir(dir)
  return out, (err:gsub("^wmrun: ", "")), code
end

-- the C path and the Lua path on the same script and files
local function both(text, files)
  local cout, cerr, ccode = sql_run.run(text, files)
  local lout, lerr, lcode = run_lua(text, files)
  return cout, cerr, ccode, lout, lerr, lcode
end

describe("SQL expressions in C", function()
  after_each(function() cexpr.force_lua = false end)

  it("a WHERE and a SELECT of arithmetic, CASE, IN, BETWEEN, COALESCE, IF, CAST run in C", function()
    -- (the step after parse_csv makes the DOUBLE column's values floats: in C too)
    local k = kinds(P .. Q)
    assert.are.same({"read_lines", "parse_csv", "sql_rows", "sql_rows", "sql_rows", "sql_format", "print"}, k)
    cexpr.force_lua = true
    assert.are.same({"read_lines", "parse_csv", "map", "filter", "map", "map", "print"}, kinds(P .. Q))
  end)

  it("gives the hand-worked rows, with NULLs, both ways", function()
    local out, err, code = sql_run.run(T .. Q, IN)
    assert.are.equal(0, code, err)
    assert.are.equal(WANT, out)
    out, err, code = run_lua(T .. Q, IN)
    assert.are.equal(0, code, err)
    assert.are.equal(WANT, out)
  end)

  it("a division by zero fails the same way on both paths: position, operator, record", function()
    local q = T .. "SELECT a / (b - 10) AS x FROM t;\n"
    local want = "job.sql:2:10: division by zero\n  in operator 'map (job.sql:2)'\n  on record "
      .. '{"a":1,"b":10}\n  while reading n.csv:1\n'
    local _, err, code = sql_run.run(q, IN)
    assert.are.equal(1, code)
    assert.are.equal(want, err)
    _, err, code = run_lua(q, IN)
    assert.are.equal(1, code)
    assert.are.equal(want, err)
  end)

  it("what the C module does not do stays a Lua closure, per operator", function()
    -- a pattern that is not a literal in the WHERE: a Lua filter; the SELECT still in C
    local k = kinds(P .. "SELECT a + 1 AS x FROM t WHERE REGEXP_EXTRACT(s, s) IS NOT NULL;\n")
    assert.are.same({"read_lines", "parse_csv", "sql_rows", "filter", "sql_rows", "sql_format", "print"}, k)
    -- the same in the SELECT: a Lua map; the WHERE in C
    k = kinds(P .. "SELECT REGEXP_EXTRACT(s, s, 1) AS u FROM t WHERE a > 0;\n")
    assert.are.same({"read_lines", "parse_csv", "sql_rows", "sql_rows", "map", "sql_format", "print"}, k)
    -- a user function: C calls it with its arguments (WM_RX_UDF); the rest of the SELECT in C
    sql.register_function("twice", function(x) return x * 2 end, {args = {"BIGINT"}, returns = "BIGINT"})
    local p = sql.plan(P .. "SELECT twice(a) + 1 AS u FROM t;\n", {name = "job.sql"})
    k = {}
    for _, n in ipairs(p.env.nodes) do k[#k + 1] = n.kind end
    assert.are.same({"read_lines", "parse_csv", "sql_rows", "sql_rows", "sql_format", "print"}, k)
    local ops = {}
    for _, n in ipairs(p.env.nodes[4].prog) do ops[#ops + 1] = n.op end
    assert.are.same({"col", "udf", "lit", "add"}, ops)
    assert.is_function(p.env.nodes[4].prog[2].fn)
    -- (cexpr.force_lua: every step a Lua map, as many operators)
    cexpr.force_lua = true
    k = kinds(P .. "SELECT twice(a) + 1 AS u FROM t;\n")
    cexpr.force_lua = false
    sql.unregister_function("twice")
    assert.are.same({"read_lines", "parse_csv", "map", "map", "map", "print"}, k)
  end)
end)

-- Repeated subexpressions (core/ops/wm_rexpr.c computes each once per record) and a WHERE
-- joined with its SELECT in one C program (wm.sql.cexpr's try_project)
local QR = [[
SELECT UPPER(s) || UPPER(s) AS u2,
  CASE WHEN a + b > 5 THEN 'big' WHEN a + b > 0 THEN 'small' WHEN a + b IS NULL THEN 'null' ELSE 'neg' END AS k,
  COALESCE(a + b, -1) * 2 AS c2, REGEXP_EXTRACT(s, '(y+)', 1) AS r
FROM t WHERE a + b IS NULL OR REGEXP_EXTRACT(s, '(y+)', 1) IS NOT NULL OR a + b <> 4;
]]
-- by hand: a + b is 11, NULL, -5, NULL, 4 (dropped); row 2's s is ''
local WANT_R = "+I[ABCABC, big, 22, <NULL>]\n+I[, null, -2, <NULL>]\n+I[XX, neg, -10, <NULL>]\n+I[YYYY, null, -2, yy]\n"

describe("repeated subexpressions in C", function()
  after_each(function() cexpr.force_lua = false end)

  it("a WHERE and its SELECT become one program, the map after it passing the rows on", function()
    local p = sql.plan(P .. QR, {name = "job.sql"})
    local k = {}
    for _, n in ipairs(p.env.nodes) do k[#k + 1] = n.kind end
    assert.are.same({"read_lines", "parse_csv", "sql_rows", "sql_rows", "sql_rows", "sql_format", "print"}, k)
    local f, m = p.env.nodes[4], p.env.nodes[5]
    assert.is_truthy(f.filter)
    assert.are.equal(4, #f.out)
    assert.are.same({}, m.prog)
    assert.are.equal("map", f.proj_name)
    cexpr.force_lua = true
    assert.are.same({"read_lines", "parse_csv", "map", "filter", "map", "map", "print"}, kinds(P .. QR))
  end)

  it("give the hand-worked rows, with NULLs and CASE, both ways", function()
    local cout, cerr, ccode, lout, lerr, lcode = both(T .. QR, IN)
    assert.are.equal(0, ccode, cerr)
    assert.are.equal(0, lcode, lerr)
    assert.are.equal(WANT_R, cout)
    assert.are.equal(WANT_R, lout)
  end)

  it("an error names the occurrence that failed and the operator, as on the Lua path", function()
    -- the CASE's a / (b - 10) (column 33) is not computed for b = 10: the second (56) fails
    local q = T .. "SELECT CASE WHEN b <> 10 THEN a / (b - 10) END AS x, a / (b - 10) AS y FROM t\n"
      .. "WHERE a IS NOT NULL;\n"
    local want = "job.sql:2:56: division by zero\n  in operator 'map (job.sql:2)'\n  on record "
      .. '{"a":1,"b":10}\n  while reading n.csv:1\n'
    local _, cerr, ccode, _, lerr, lcode = both(q, IN)
    assert.are.equal(1, ccode)
    assert.are.equal(want, cerr)
    assert.are.equal(1, lcode)
    assert.are.equal(want, lerr)
    -- in the WHERE: the filter's
    q = T .. "SELECT a AS x FROM t WHERE a / (b - 10) > 0 OR a / (b - 10) < 0;\n"
    want = "job.sql:2:30: division by zero\n  in operator 'filter (job.sql:2)'\n  on record "
      .. '{"a":1,"b":10}\n  while reading n.csv:1\n'
    _, cerr, ccode, _, lerr, lcode = both(q, IN)
    assert.are.equal(1, ccode)
    assert.are.equal(want, cerr)
    assert.are.equal(1, lcode)
    assert.are.equal(want, lerr)
  end)
end)

-- The Nexmark examples that run without the processing-time clock or files of their own.
local QUERIES = {"q0", "q1", "q2", "q3", "q4", "q5", "q7", "q8", "q9", "q11", "q14", "q15", "q16", "q17", "q18",
                 "q19", "q20", "q21", "q22"}

describe("Nexmark queries with SQL expressions in C", function()
  after_each(function() cexpr.force_lua = false end)

  it("q0, q1 and q2 are all C from the source to the print sink", function()
    for _, q in ipairs({"q0", "q1", "q2"}) do
      local k = kinds(read("examples/nexmark/" .. q .. ".sql"), q .. ".sql")
      assert.are.equal(0, count(k, "filter"), q)
      assert.are.equal(0, count(k, "map"), q)
      assert.are.equal(1, count(k, "sql_format"), q) -- print's formatting
      -- the bid view's WHERE and SELECT, the query's (and q2's WHERE), INSERT INTO's rename
      assert.are.equal(q == "q2" and 5 or 4, count(k, "sql_rows"), q)
    end
    -- q14: its WHERE in C, its SELECT in C too, which calls the user function with its
    -- arguments (no Lua map)
    local saved = package.path
    package.path = "examples/nexmark/?.lua;" .. package.path -- (wmrun finds it beside the script)
    local k = kinds(read("examples/nexmark/q14.sql"), "examples/nexmark/q14.sql")
    assert.are.equal(5, count(k, "sql_rows"))
    assert.are.equal(0, count(k, "map"))
    -- both paths make as many operators, in the same places (checkpoints match them by place)
    cexpr.force_lua = true
    local kl = kinds(read("examples/nexmark/q14.sql"), "examples/nexmark/q14.sql")
    package.path = saved
    assert.are.equal(#kl, #k)
    for _, q in ipairs({"q0", "q1", "q2", "q5", "q8", "q18", "q22"}) do
      cexpr.force_lua = false
      local kc = kinds(read("examples/nexmark/" .. q .. ".sql"), q .. ".sql")
      cexpr.force_lua = true
      assert.are.equal(#kinds(read("examples/nexmark/" .. q .. ".sql"), q .. ".sql"), #kc, q)
    end
  end)

  it("q10's SELECT (DATE_FORMAT), q21 (LOWER, REGEXP_EXTRACT) and q22 (SPLIT_INDEX) are C", function()
    for _, q in ipairs({"q10", "q21", "q22"}) do
      local k = kinds(read("examples/nexmark/" .. q .. ".sql"), q .. ".sql")
      assert.are.equal(0, count(k, "map"), q)
      assert.are.equal(0, count(k, "filter"), q)
      assert.are.equal(q == "q10" and 4 or q == "q21" and 5 or 4, count(k, "sql_rows"), q)
      cexpr.force_lua = true
      local kl = kinds(read("examples/nexmark/" .. q .. ".sql"), q .. ".sql")
      cexpr.force_lua = false
      assert.are.equal(#kl, #k, q) -- the same operators in the same places (checkpoints)
      assert.is_true(count(kl, "map") > 0, q)
    end
  end)

  it("q10's rows (its filesystem sink made a print sink) are the same both ways", function()
    local text = read("examples/nexmark/q10.sql"):gsub("'events.num' = '%d+'", "'events.num' = '3000'")
    local a, b = text:find("CREATE TABLE nexmark_q10 %(.-%) WITH %(.-%);")
    assert.is_truthy(a)
    text = text:sub(1, a - 1) .. "CREATE TABLE nexmark_q10 (auction BIGINT, bidder BIGINT, price BIGINT, "
      .. "`dateTime` TIMESTAMP(3), extra VARCHAR, dt STRING, hm STRING) WITH ('connector' = 'print');"
      .. text:sub(b + 1)
    local cout, cerr, ccode, lout, lerr, lcode = both(text, {})
    assert.are.equal(0, ccode, cerr)
    assert.are.equal(0, lcode, lerr)
    assert.matches("2015%-07%-15, 00:00%]", cout)
    assert.are.equal(lout, cout)
  end)

  it("every example gives the same rows on the C path and on the Lua path", function()
    local dir = h.tmpdir()
    os.execute("cp examples/nexmark/nexmark_udfs.lua '" .. dir .. "/'")
    for _, q in ipairs(QUERIES) do
      local text = read("examples/nexmark/" .. q .. ".sql"):gsub("'events.num' = '%d+'", "'events.num' = '3000'")
      local f = assert(io.open(dir .. "/" .. q .. ".sql", "w"))
      f:write(text)
      f:close()
      local run = "cd '" .. dir .. "' && " .. h.wmrun_path() .. " --sql " .. q .. ".sql"
      local cout, cerr, ccode = h.sh(run)
      local lout, lerr, lcode = h.sh("cd '" .. dir .. "' && WMRUN_SQL_EXPR=lua " .. h.wmrun_path() .. " --sql "
        .. q .. ".sql")
      assert.are.equal(0, ccode, q .. ": " .. cerr)
      assert.are.equal(0, lcode, q .. ": " .. lerr)
      assert.is_true(#cout > 0, q)
      assert.are.equal(lout, cout, q)
    end
    h.rmdir(dir)
  end)
end)

-- String and time functions (issue 33): the same values in C as in values.lua's runtime, on
-- random rows and on edge cases (NULLs, '', multibyte and invalid UTF-8, white space,
-- negative and zero positions, times before 1970 and at millisecond boundaries).
local SCHEMA = "CREATE TABLE t (id BIGINT, ts BIGINT, i INT, k INT, s STRING, p STRING, sep STRING) WITH "
  .. "('connector' = 'filesystem', 'path' = 'r.csv', 'format' = 'csv');\n"
  -- every seventh row's strings NULL (an empty CSV field is '')
  .. "CREATE VIEW v AS SELECT id, ts, TO_TIMESTAMP_LTZ(ts, 3) AS t3, i, k,\n"
  .. "  CASE WHEN MOD(id, 7) = 0 THEN CAST(NULL AS STRING) ELSE s END AS s,\n"
  .. "  CASE WHEN MOD(id, 11) = 0 THEN CAST(NULL AS STRING) ELSE p END AS p,\n"
  .. "  CASE WHEN MOD(id, 13) = 0 THEN CAST(NULL AS STRING) ELSE sep END AS sep FROM t;\n"
local STRQ = [[
SELECT id, s || '|' || p AS c1, CONCAT(s, sep, p) AS c2, UPPER(s) AS u, LOWER(s) AS l, '[' || TRIM(s) || ']' AS tr,
  CHAR_LENGTH(s) AS n, CHARACTER_LENGTH(p) AS np, SUBSTRING(s, i) AS s1, SUBSTRING(s, i, ABS(k)) AS s2,
  SUBSTR(s, k, ABS(i)) AS s3, SUBSTRING(s, i, CAST(NULL AS INT)) AS s4, s LIKE p AS lk, s NOT LIKE 'a%' AS nlk,
  s LIKE '%_\%' AS lk2, SPLIT_INDEX(s, sep, i) AS sp, SPLIT_INDEX(s, '/', k) AS sp2, SPLIT_INDEX(s, '', i) AS sp3,
  UPPER(LOWER(s)) || SUBSTRING(p, 2, 3) AS mix,
  CASE WHEN LOWER(s) IN ('ab', 'x/y') THEN 'in' ELSE SPLIT_INDEX(p, 'a', 0) END AS cw
FROM v WHERE s IS NULL OR s <> 'zz' OR UPPER(p) LIKE '%A%';
]]
local PATTERNS = {"yyyy-MM-dd", "HH:mm", "yyyy-MM-dd HH:mm:ss.SSS", "yy/M/d h:m:s a", "S SS SSS", "'T'HH''mm'x'",
  "yyyyy ddd HHH mmm sss", "y", "dd.MM.yyyy'Z'", "hh a", ""}

-- deterministic random rows
local function random_rows(n)
  local rnd = 0x33
  local function r(m) -- 0 .. m - 1 (a linear congruential generator: the same rows on every run)
    rnd = (rnd * 1103515245 + 12345) % 2147483648
    return rnd % m
  end
  local pieces = {"a", "b", "A", "Z", "x/y", "/", "//", " ", "\t", "%", "_", "\\", "é", "日本", "\xff", "\xc3",
    "\xe6\x97", "\xed\xa0\x80", "\xf4\x90\x80\x80", "a%b", "zz", "", "-", "ab"}
  local function str(m)
    local t = {}
    for j = 1, r(m) do t[j] = pieces[r(#pieces) + 1] end
    return table.concat(t)
  end
  local edges = {0, -1, 1, 999, 1000, -999, -1000, -1001, 86399999, 86400000, -86400000, 951782400000,
    -62135596800000, -62135596800001, -62198755200000, -62167219200000, 253402300799999, 253402300800000,
    4102444800000, -30610224000000, 1000000000000000, -1000000000000000}
  local lines = {}
  for id = 1, n do
    local ts
    if id <= #edges then ts = edges[id]
    elseif r(10) == 0 then ts = ""
    else ts = (r(2) == 0 and -1 or 1) * (r(2147483647) * 65536 + r(65536)) // (r(3) == 0 and 1 or 1000) end
    local i = r(8) == 0 and "" or tostring(r(9) - 2)
    local k = r(8) == 0 and "" or tostring(r(8) - 1)
    local s = str(6)
    if r(5) == 0 then s = " " .. s .. "\t " end
    local p
    if r(3) == 0 then p = s:gsub("[^%%]", function(c) return r(3) == 0 and (r(2) == 0 and "%" or "_") or c end)
    else p = str(4) end
    local sep = ({"/", "a", "", "//", "日", "%", "ab"})[r(7) + 1]
    lines[id] = table.concat({id, tostring(ts), i, k, s, p, sep}, ",")
  end
  return table.concat(lines, "\n") .. "\n"
end

describe("string and time functions in C", function()
  after_each(function() cexpr.force_lua = false end)

  local P2 = SCHEMA:gsub("'r%.csv'", "'spec/sql_cexpr_spec.lua'")

  it("run in sql_rows operators: no Lua map or filter", function()
    local k = kinds(P2 .. STRQ)
    assert.are.equal(0, count(k, "map"))
    assert.are.equal(0, count(k, "filter"))
    local parts = {}
    for j, pat in ipairs(PATTERNS) do parts[j] = "DATE_FORMAT(t3, '" .. pat:gsub("'", "''") .. "') AS d" .. j end
    k = kinds(P2 .. "SELECT id, " .. table.concat(parts, ", ") .. ", CAST(t3 AS STRING) AS c, CAST(k AS STRING) "
      .. "AS c2 FROM v;\n")
    assert.are.equal(0, count(k, "map"))
    -- Lua closures for what C does not do: a pattern that is not a literal, text to a number
    k = kinds(P2 .. "SELECT DATE_FORMAT(t3, s) AS d FROM v;\n")
    assert.are.equal(1, count(k, "map"))
    k = kinds(P2 .. "SELECT CAST(s AS BIGINT) AS d FROM v;\n") -- (text to numbers: Lua)
    assert.are.equal(1, count(k, "map"))
  end)

  it("give the hand-worked values", function()
    local q = "CREATE TABLE t (id BIGINT, s STRING) WITH ('connector' = 'filesystem', 'path' = 'h.csv', "
      .. "'format' = 'csv');\n"
      .. "SELECT UPPER(s) AS u, CHAR_LENGTH(s) AS n, SUBSTRING(s, 2, 2) AS b, SPLIT_INDEX(s, '/', 1) AS x, "
      .. "s LIKE '_é%' AS l, DATE_FORMAT(TO_TIMESTAMP_LTZ(id, 3), 'yy-MM-dd hh:mm:ss.SS a') AS d, "
      .. "'<' || TRIM(s) || '>' AS t FROM t;\n"
    local files = {["h.csv"] = "-1,aé/日b \n86399999,\n1000, x\n"}
    local want = "+I[Aé/日B , 6, é/, 日b , TRUE, 69-12-31 11:59:59.99 PM, <aé/日b>]\n"
      .. "+I[, 0, , <NULL>, FALSE, 70-01-01 11:59:59.99 PM, <>]\n"
      .. "+I[ X, 2, x, <NULL>, FALSE, 70-01-01 12:00:01.00 AM, <x>]\n"
    local cout, cerr, ccode, lout, lerr, lcode = both(q, files)
    assert.are.equal(0, ccode, cerr)
    assert.are.equal(0, lcode, lerr)
    assert.are.equal(want, lout)
    assert.are.equal(want, cout)
  end)

  it("give the Lua path's rows on random strings, patterns, positions and times", function()
    local files = {["r.csv"] = random_rows(700)}
    local cout, cerr, ccode, lout, lerr, lcode = both(SCHEMA .. STRQ, files)
    assert.are.equal(0, lcode, lerr)
    assert.are.equal(0, ccode, cerr)
    assert.is_true(#lout > 10000)
    assert.are.equal(lout, cout)
    local parts = {}
    for j, pat in ipairs(PATTERNS) do parts[j] = "DATE_FORMAT(t3, '" .. pat:gsub("'", "''") .. "') AS d" .. j end
    local dq = SCHEMA .. "SELECT id, t3, " .. table.concat(parts, ", ") .. ", CAST(t3 AS STRING) AS ct, "
      .. "CAST(id AS STRING) || '/' || CAST(i AS STRING) AS ci, CAST(i > 0 AS STRING) AS cb, "
      .. "CAST(CAST(i AS DOUBLE) / k AS STRING) AS cd, CAST(ts * 0.001 AS STRING) AS cs, "
      .. "CAST(ts / 1e-9 AS STRING) AS ce, CAST(CAST(i AS DOUBLE) / 0 AS STRING) AS cz FROM v;\n"
    cout, cerr, ccode, lout, lerr, lcode = both(dq, files)
    assert.are.equal(0, lcode, lerr)
    assert.are.equal(0, ccode, cerr)
    assert.matches("0000%-12%-31", lout) -- a time before year 1 was in it
    assert.matches("Infinity", lout)     -- CAST of a double: 1 / 0.0
    assert.matches("NaN", lout)
    assert.are.equal(lout, cout)
  end)

  it("read text as timestamps and booleans as the Lua path does", function()
    local texts = {"2020-01-02", " 2020-1-2 3:04 ", "2020-01-02T03:04:05.6789", "2020-02-31 23:59:59.9",
      "2020-13-01", "2020-01-02 24:00", "2020-01-02 10:0", "2020-01-02 10:00:", "2020-01-02 10:00:00.",
      "0000-01-01", "0000-03-01 00:00:00.001", "9999-12-31 23:59:59.999", "20201-01-02", "2020-01-123",
      "2020-01-02\t", "2020-01-02 x", "2020-01-02  10:00", "2020-1-02 1:02:03.04", "202-01-02", "true",
      " FALSE ", "tRuE", "yes", "", "\ttrue\t", "truex", "1969-12-31 23:59:59.999"}
    local lines = {}
    for j, s in ipairs(texts) do lines[j] = j .. "," .. s:gsub("\\t", "\t") end
    local q = "CREATE TABLE t (id BIGINT, s STRING) WITH ('connector' = 'filesystem', 'path' = 'p.csv', "
      .. "'format' = 'csv');\nSELECT id, TRY_CAST(s AS TIMESTAMP) AS a, TRY_CAST(s AS TIMESTAMP_LTZ) AS b, "
      .. "TRY_CAST(s AS BOOLEAN) AS c, DATE_FORMAT(s, 'yyyy-MM-dd HH:mm:ss.SSS') AS d, "
      .. "CAST(TRY_CAST(s AS TIMESTAMP) AS STRING) AS e FROM t;\n"
    local k = kinds(q:gsub("'p%.csv'", "'spec/sql_cexpr_spec.lua'"))
    assert.are.equal(0, count(k, "map"))
    local files = {["p.csv"] = table.concat(lines, "\n") .. "\n"}
    local cout, cerr, ccode, lout, lerr, lcode = both(q, files)
    assert.are.equal(0, lcode, lerr)
    assert.are.equal(0, ccode, cerr)
    assert.matches("%+I%[3, 2020%-01%-02 03:04:05%.678, ", lout)
    assert.matches("%+I%[21, <NULL>, <NULL>, FALSE, <NULL>, <NULL>%]", lout)
    assert.are.equal(lout, cout)
    -- CAST and TO_TIMESTAMP of text that is no timestamp fail the same way
    for _, e in ipairs({"CAST(s AS TIMESTAMP)", "TO_TIMESTAMP(s)", "CAST(s AS BOOLEAN)"}) do
      local qe = q:gsub("SELECT .*", "SELECT " .. e .. " AS x FROM t WHERE id = 5;\n")
      _, cerr, ccode, _, lerr, lcode = both(qe, files)
      assert.are.equal(1, lcode)
      assert.are.equal(1, ccode)
      assert.matches("^job%.sql:2:%d+: CAST%('2020%-13%-01' AS %u+%) failed: not a ", lerr)
      assert.are.equal(lerr, cerr)
    end
  end)

  it("fail the same way as the Lua path: SUBSTRING's negative length", function()
    local q = "CREATE TABLE t (id BIGINT, s STRING) WITH ('connector' = 'filesystem', 'path' = 'e.csv', "
      .. "'format' = 'csv');\nSELECT SUBSTRING(s, 1, CAST(id AS INT)) AS x FROM t;\n"
    local files = {["e.csv"] = "2,abc\n-3,abc\n"}
    local cout, cerr, ccode, lout, lerr, lcode = both(q, files)
    assert.are.equal(1, lcode)
    assert.are.equal(1, ccode)
    assert.matches("^job%.sql:2:8: SUBSTRING: negative length %-3\n", lerr)
    assert.are.equal(lerr, cerr)
    assert.are.equal(lout, cout)
  end)
end)

-- REGEXP_EXTRACT (core/ops/wm_rregex.c, a port of wm.sql.regex): random patterns of the syntax
-- wm.sql.regex takes over random short strings, every group, both ways.
local function random_patterns(npat)
  local rnd = 0x21
  local function r(m)
    rnd = (rnd * 1103515245 + 12345) % 2147483648
    return (rnd >> 8) % m
  end
  local atoms = {"a", "b", "c", "1", "_", " ", "&", "=", "/", "é", ".", "[a-c]", "[^a&]", "[_1-2]", "[\\d&]",
    "[^\\w]", "\\d", "\\w", "\\s", "\\S", "\\W", "\\.", "\\&", "^", "$", "\\b", "\\B", "\\t"}
  local quants = {"*", "+", "?", "{2}", "{1,2}", "{0,}", "*?", "+?", "??", "{1,3}?"}
  local gen
  local function item(depth)
    local a
    if depth < 2 and r(4) == 0 then
      local alts = {gen(depth + 1)}
      if r(2) == 0 then alts[2] = gen(depth + 1) end
      a = (r(3) == 0 and "(?:" or "(") .. table.concat(alts, "|") .. ")"
    else
      a = atoms[r(#atoms) + 1]
    end
    -- (a group repeated but by `?` stays in Lua: cexpr's repeats_group)
    if r(3) == 0 then a = a .. (a:sub(-1) == ")" and (r(2) == 0 and "?" or "??") or quants[r(#quants) + 1]) end
    return a
  end
  gen = function(depth)
    local t = {}
    for j = 1, r(3) + 1 do t[j] = item(depth) end
    return table.concat(t)
  end
  local out = {"(&|^)channel_id=([^&]*)", "", "a|", "(a)|b", "(a|ab)(c|bcd)(d*)", "^$", ".*?(\\d+)", "(.*)(\\W)",
    "(.{1,3})([^a])", "[)]*(a)?", "\\)+", "(a)??b"}
  while #out < npat do out[#out + 1] = gen(0) end
  return out
end

local function groups_of(p)
  local n = 0
  for i = 1, #p do
    if p:sub(i, i) == "(" and p:sub(i - 1, i - 1) ~= "\\" and p:sub(i + 1, i + 1) ~= "?" then n = n + 1 end
  end
  return n
end

describe("REGEXP_EXTRACT in C", function()
  it("gives the Lua path's groups on random patterns and strings", function()
    local rnd = 0x77
    local function r(m)
      rnd = (rnd * 1103515245 + 12345) % 2147483648
      return (rnd >> 8) % m
    end
    local alphabet = {"a", "b", "c", "1", "2", "_", " ", "&", "=", "/", "é", "\t", "channel_id=", "ab", "\xff"}
    local lines = {}
    for id = 1, 300 do
      local t = {}
      for j = 1, r(9) do t[j] = alphabet[r(#alphabet) + 1] end
      lines[id] = id .. "," .. table.concat(t)
    end
    local files = {["x.csv"] = table.concat(lines, "\n") .. "\n"}
    local pats = random_patterns(60)
    local items = {}
    for j, p in ipairs(pats) do
      local lit = "'" .. p:gsub("'", "''") .. "'"
      for g = -1, groups_of(p) + 1 do
        items[#items + 1] = string.format("REGEXP_EXTRACT(s, %s%s) AS r%d_%d", lit, g == 0 and "" or ", " .. g, j,
          g + 1)
      end
    end
    local q = "CREATE TABLE x (id BIGINT, s STRING) WITH ('connector' = 'filesystem', 'path' = 'x.csv', "
      .. "'format' = 'csv');\nSELECT id, " .. table.concat(items, ", ") .. " FROM x "
      .. "WHERE REGEXP_EXTRACT(s, '(a|b)?[ab]+', 1) IS NULL OR id > 0;\n"
    local k = kinds(q:gsub("'x%.csv'", "'spec/sql_cexpr_spec.lua'"))
    assert.are.equal(0, count(k, "map"))
    assert.are.equal(0, count(k, "filter"))
    -- a repeated group stays in Lua (its rounds would nest C calls)
    for _, p in ipairs({"(?:ab)*", "(a|b)+c", "x(a){2}", "((a)?b){1,3}"}) do
      k = kinds("CREATE TABLE x (id BIGINT, s STRING) WITH ('connector' = 'filesystem', 'path' = "
        .. "'spec/sql_cexpr_spec.lua', 'format' = 'csv');\nSELECT REGEXP_EXTRACT(s, '" .. p .. "') AS r FROM x;\n")
      assert.are.equal(1, count(k, "map"), p)
    end
    local cout, cerr, ccode, lout, lerr, lcode = both(q, files)
    assert.are.equal(0, lcode, lerr)
    assert.are.equal(0, ccode, cerr)
    assert.are.equal(lout, cout)
    -- (some groups matched: not all NULL)
    local nonnull = 0
    for v in lout:gmatch("[%[,] ([^,%]]+)") do if v ~= "<NULL>" then nonnull = nonnull + 1 end end
    assert.is_true(nonnull > 2000, nonnull)
  end)
end)
