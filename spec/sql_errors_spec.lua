-- SQL errors at run time (issue 13.14) and outputs checked before the job starts (defect
-- 12.7): the message names the script position, the table, the file and line, the record;
-- no Lua traceback and no path inside the library.
local sql_run = require("sql_run")

local function no_internals(err)
  assert.is_nil(err:find("traceback", 1, true))
  assert.is_nil(err:find("%.lua:%d"))
end

describe("SQL run-time errors", function()
  it("a failing CAST names its position in the query, the operator, the record and the input line", function()
    local out, err, code = sql_run.run([[
CREATE TABLE t (id STRING, v STRING)
  WITH ('connector' = 'filesystem', 'path' = 's.csv', 'format' = 'csv');
SELECT id,
  CAST(v AS INT) AS n FROM t;
]], {["s.csv"] = "a,1\nb,zz\n"})
    assert.are.equal(1, code)
    assert.are.equal("+I[a, 1]\n", out)
    assert.are.equal("job.sql:4:3: CAST('zz' AS INT) failed: not an integer\n"
      .. "  in operator 'map (job.sql:3)'\n"
      .. "  on record {\"id\":\"b\",\"v\":\"zz\"}\n"
      .. "  while reading s.csv:2\n", err)
  end)

  it("division by zero and a negative SUBSTRING length name their position", function()
    local ddl = "CREATE TABLE t (id STRING, v INT) WITH ('connector' = 'filesystem', 'path' = 'd.csv', "
      .. "'format' = 'csv');\n"
    local _, err, code = sql_run.run(ddl .. "SELECT 10 / v FROM t;\n", {["d.csv"] = "a,0\n"})
    assert.are.equal(1, code)
    assert.matches("^job%.sql:2:11: division by zero\n", err)
    no_internals(err)
    _, err = sql_run.run(ddl .. "SELECT MOD(10, v) FROM t;\n", {["d.csv"] = "a,0\n"})
    assert.matches("^job%.sql:2:8: division by zero\n", err)
    _, err = sql_run.run(ddl .. "SELECT SUBSTRING(id, 1, v - 1) FROM t;\n", {["d.csv"] = "a,0\n"})
    assert.matches("^job%.sql:2:8: SUBSTRING: negative length %-1\n", err)
    no_internals(err)
  end)

  it("a CAST in a CASE deep enough to be compiled apart still names its position", function()
    local e = "CAST(id AS INT)"
    for _ = 1, 30 do e = "CASE WHEN v > 0 THEN " .. e .. " ELSE 0 END" end
    local _, err, code = sql_run.run("CREATE TABLE t (id STRING, v INT) WITH ('connector' = 'filesystem', "
      .. "'path' = 'd.csv', 'format' = 'csv');\nSELECT " .. e .. " FROM t;\n", {["d.csv"] = "x,1\n"})
    assert.are.equal(1, code)
    assert.matches("^job%.sql:2:" .. (8 + 30 * #"CASE WHEN v > 0 THEN ") .. ": CAST%('x' AS INT%) failed", err)
    no_internals(err)
  end)

  it("a bad line of a table parsed in Lua names the file and line, the table and its DDL", function()
    local out, err, code = sql_run.run([[
SET 'parallelism.default' = '1';
CREATE TABLE t (id STRING, v INT)
  WITH ('connector' = 'filesystem', 'path' = 'bad.csv', 'format' = 'csv', 'csv.null-literal' = 'N');
SELECT id, v FROM t;
]], {["bad.csv"] = "a,1\nb,x\n"})
    assert.are.equal(1, code)
    assert.are.equal("+I[a, 1]\n", out)
    assert.are.equal("job.sql:2: cannot parse the line for table 't': column 'v' (INT): 'x' is not "
      .. "an integer (set 'csv.ignore-parse-errors' = 'true' to skip such lines)\n"
      .. "  in operator 'parse csv (t) (job.sql:4)'\n"
      .. "  on record b,x\n"
      .. "  while reading bad.csv:2\n", err)
    -- JSON likewise, with the JSON option
    out, err, code = sql_run.run([[
CREATE TABLE t (id STRING, v INT) WITH ('connector' = 'filesystem', 'path' = 'b.json', 'format' = 'json');
SELECT id FROM t;
]], {["b.json"] = '{"id":"a","v":1}\n{"id":"b","v":"q"}\n'})
    assert.are.equal(1, code)
    assert.are.equal("+I[a]\n", out)
    assert.matches("^job%.sql:1: cannot parse the line for table 't': field 'v' %(INT%): 'q' is not an "
      .. "integer %(set 'json%.ignore%-parse%-errors' = 'true' to skip such lines%)\n.*while reading b%.json:2\n", err)
    no_internals(err)
  end)

  it("the line of a bad line is the source's own position: right on two threads (issue 26.5)", function()
    -- a count kept in the parser's Lua closure was per Lua state (per thread) and restarted
    -- at a restore from a checkpoint: line 5 was reported as line 3 here
    local lines = {}
    for i = 1, 9 do lines[i] = "k" .. i .. "," .. i end
    lines[7] = "k7,x"
    local _, err, code = sql_run.run([[
SET 'parallelism.default' = '2';
CREATE TABLE t (id STRING, v INT)
  WITH ('connector' = 'filesystem', 'path' = 'bad.csv', 'format' = 'csv', 'csv.null-literal' = 'N');
SELECT id, v FROM t;
]], {["bad.csv"] = table.concat(lines, "\n") .. "\n"}, {args = "--threads 2"})
    assert.are.equal(1, code)
    assert.matches("^job%.sql:2: cannot parse the line for table 't': column 'v' %(INT%): 'x' is not an integer", err)
    assert.matches("\n  on record k7,x\n  while reading bad%.csv:7\n", err)
  end)
end)

describe("SQL filesystem sink (defect 12.7)", function()
  local DDL = [[
CREATE TABLE t (id STRING, v INT) WITH ('connector' = 'filesystem', 'path' = 'd.csv', 'format' = 'csv');
CREATE TABLE o (id STRING, v INT) WITH ('connector' = 'filesystem',
  'path' = '%s', 'format' = 'csv');
]]

  it("a missing folder fails before the job starts, naming the table, the path and the DDL's line", function()
    local out, err, code = sql_run.run(DDL:format("missing/out.csv") .. "INSERT INTO o SELECT * FROM t;\n",
      {["d.csv"] = "a,1\n"})
    assert.are.equal(1, code)
    assert.are.equal("", out)
    assert.are.equal("job.sql:3:3: table 'o' cannot be written to 'missing/out.csv': No such file or directory "
      .. "(the folder 'missing' does not exist) (INSERT INTO at job.sql:4)\n", err)
  end)

  it("a path that is a folder fails before the job starts", function()
    local _, err, code = sql_run.run(DDL:format("sub") .. "INSERT INTO o SELECT * FROM t;\n", {["d.csv"] = "a,1\n"},
      {prepare = function(dir) assert(os.execute("mkdir '" .. dir .. "/sub'")) end})
    assert.are.equal(1, code)
    assert.are.equal("job.sql:3:3: table 'o' cannot be written to 'sub': Is a directory (INSERT INTO at job.sql:4)\n",
      err)
  end)

  it("the check changes nothing: an existing file keeps its text and a missing one is not left behind", function()
    local old_text, new_file
    local _, err, code = sql_run.run(DDL:format("old.csv") .. "INSERT INTO o SELECT * FROM t;\n"
      .. "CREATE TABLE o2 (id STRING) WITH ('connector' = 'filesystem', 'path' = 'new.csv', 'format' = 'csv');\n"
      .. "INSERT INTO o2 SELECT id FROM t;\n"
      .. "SELECT nope FROM t;\n", {["d.csv"] = "a,1\n", ["old.csv"] = "kept\n"}, {after = function(dir)
        local f = assert(io.open(dir .. "/old.csv"))
        old_text = f:read("a")
        f:close()
        new_file = io.open(dir .. "/new.csv")
        if new_file then new_file:close() end
      end})
    assert.are.equal(1, code)
    assert.matches("^job%.sql:7:8: unknown column 'nope'", err)
    assert.are.equal("kept\n", old_text)
    assert.is_nil(new_file)
  end)
end)
