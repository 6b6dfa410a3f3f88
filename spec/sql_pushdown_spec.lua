-- Projection pushdown (issue 33, item 3): a CSV 'filesystem' table read by a query decodes only
-- the columns the query can use (connectors.unused -> parse_csv's skip). The rows are those
-- the used columns give; an unused column is not decoded, so text in it that its type
-- rejects is no error (as in Flink, whose CSV format deserializes only the projected
-- fields); a used one is still checked, and `*` uses every column.
local sql_run = require("sql_run")
local h = require("helper")

local function job(body)
  return 'local wm = require("wm")\nlocal env = wm.env()\n' .. body .. '\nenv:execute()\n'
end

local T = [[
CREATE TABLE t (a BIGINT, b STRING, c BIGINT, d STRING, e BIGINT)
  WITH ('connector' = 'filesystem', 'path' = 'in.csv', 'format' = 'csv');
]]
-- line 2 has text in c (BIGINT)
local IN = {["in.csv"] = "1,x,10,p,100\n2,y,zz,q,200\n3,\"z,w\",30,r,300\n"}

describe("SQL projection pushdown (CSV)", function()
  it("a query of 2 of 5 columns gives their rows; a malformed unused column is no error", function()
    local out, err, code = sql_run.run(T .. "SELECT a, e FROM t;\n", IN)
    assert.are.equal(0, code, err)
    assert.are.equal("+I[1, 100]\n+I[2, 200]\n+I[3, 300]\n", out)
    -- through a view, and with a filter on another used column
    out, err, code = sql_run.run(T .. "CREATE VIEW v AS SELECT a, d, e FROM t WHERE e > 100;\n"
      .. "CREATE VIEW unused AS SELECT c FROM t;\nSELECT d FROM v;\n", IN)
    assert.are.equal(0, code, err)
    assert.are.equal("+I[q]\n+I[r]\n", out)
  end)

  it("a used column is still checked, and * uses every column", function()
    local _, err, code = sql_run.run(T .. "SELECT a, c FROM t;\n", IN)
    assert.are.equal(1, code)
    assert.matches("field 'c': 'zz' is not an integer", err, 1, true)
    _, err, code = sql_run.run(T .. "SELECT a FROM t WHERE c > 0;\n", IN)
    assert.are.equal(1, code)
    assert.matches("field 'c': 'zz' is not an integer", err, 1, true)
    _, err, code = sql_run.run(T .. "SELECT * FROM t;\n", IN)
    assert.are.equal(1, code)
    assert.matches("field 'c': 'zz' is not an integer", err, 1, true)
  end)

  it("computed columns and the watermark keep the columns they read", function()
    local W = [[
CREATE TABLE w (k STRING, junk BIGINT, ts BIGINT, rt AS TO_TIMESTAMP_LTZ(ts, 3),
  WATERMARK FOR rt AS rt - INTERVAL '1' SECOND)
  WITH ('connector' = 'filesystem', 'path' = 'in.csv', 'format' = 'csv');
]]
    local out, err, code = sql_run.run(W .. "SELECT k, COUNT(*) FROM w GROUP BY TUMBLE(rt, INTERVAL '5' SECOND), k;\n",
      {["in.csv"] = "a,x,1000\nb,y,2000\na,z,3000\na,1,7000\n"})
    assert.are.equal(0, code, err)
    assert.are.equal("+I[a, 2]\n+I[b, 1]\n+I[a, 1]\n", out)
  end)

  it("parse_csv's skip: skipped columns are absent from the rows; a name that is no column is an error", function()
    local out, err, code = h.run_job(job('env:from_elements("1,zz,3", "4,5,6")'
      .. ':parse_csv{"a:integer", "b:integer", "c:integer", skip = {"b"}}:print()'))
    assert.are.equal(0, code, err)
    assert.are.equal('{"a":1,"c":3}\n{"a":4,"c":6}\n', out)
    local _
    _, err, code = h.run_job(job('env:from_elements("1"):parse_csv{"a:integer", skip = {"x"}}:print()'))
    assert.are.equal(1, code)
    assert.truthy(err:find("parse_csv: skip names 'x', which is no column", 1, true), err)
  end)
end)
