-- Changes in C and user functions called from C (issue 33): a window's count shaped into the
-- result row in C (a `sql_rows` projection of the count record), a regular join over an
-- updating input keyed in C (the fields of the change's row: wm_keysel_change), a WHERE and a
-- SELECT over changes {k, r} in C (wm_rproject_changes), and a Lua user function called by the
-- C expression evaluator with its arguments' values (WM_RX_UDF). Each compared with the Lua
-- path the environment switches force (WMRUN_SQL_CHANGES=lua, WMRUN_SQL_UDF=lua,
-- WMRUN_SQL_EXPR=lua), on hand-worked and randomized inputs; errors raised in a user function;
-- a checkpointed job stopped and resumed.
local h = require("helper")
local sql_run = require("sql_run")

-- Runs job.sql (with files) in a folder of its own, under the environment `envs` ("" or
-- "WMRUN_SQL_CHANGES=lua ..."): stdout, stderr (the folder's path taken out), exit code.
local function run(sql, files, envs, args)
  local dir = h.tmpdir()
  files = files or {}
  files["job.sql"] = sql
  for name, text in pairs(files) do
    local f = assert(io.open(dir .. "/" .. name, "w"))
    f:write(text)
    f:close()
  end
  local out, err, code = h.sh((envs or "") .. " " .. h.wmrun_path() .. " " .. (args or "")
    .. " --watermark-interval 0 --sql "
    .. h.shell_quote(dir .. "/job.sql"))
  os.execute("rm -rf '" .. dir .. "'")
  local d = dir:gsub("%p", "%%%0")
  return (out:gsub(d .. "/", "")), (err:gsub(d .. "/", "")), code
end

-- The rows a changelog leaves (+I/+U add, -U/-D take away), sorted, with their counts.
local function fold(text)
  local n, t = {}, {}
  for l in text:gmatch("[^\n]+") do
    l = l:gsub("^%d+> ", "") -- (a parallel run's instance)
    local r = l:sub(3)
    n[r] = (n[r] or 0) + (l:sub(1, 1) == "+" and 1 or -1)
  end
  for r, c in pairs(n) do if c ~= 0 then t[#t + 1] = r .. " x" .. c end end
  table.sort(t)
  return t
end

local LUA_PATHS = {"WMRUN_SQL_CHANGES=lua", "WMRUN_SQL_EXPR=lua", "WMRUN_SQL_JOIN=lua"}

-- Nexmark q5's shape: HOP windows counting bids per auction, joined with the maximum count
-- per window (a GROUP BY over the windows' rows: an updating input), `num >= maxn` a filter
-- of the join's changes, then a projection of them.
local BIDS_DDL = [[
CREATE TABLE bid (auction BIGINT, ms BIGINT, rt AS TO_TIMESTAMP_LTZ(ms, 3),
  WATERMARK FOR rt AS rt - INTERVAL '1' SECOND)
WITH ('connector' = 'filesystem', 'path' = 'bids.csv', 'format' = 'csv');
]]
local Q5 = BIDS_DDL .. [[
SELECT AuctionBids.auction, AuctionBids.num FROM (
  SELECT auction, count(*) AS num, window_start AS starttime, window_end AS endtime
  FROM TABLE(HOP(TABLE bid, DESCRIPTOR(rt), INTERVAL '2' SECOND, INTERVAL '4' SECOND))
  GROUP BY auction, window_start, window_end) AS AuctionBids
JOIN (
  SELECT max(CountBids.num) AS maxn, CountBids.starttime, CountBids.endtime FROM (
    SELECT count(*) AS num, window_start AS starttime, window_end AS endtime
    FROM TABLE(HOP(TABLE bid, DESCRIPTOR(rt), INTERVAL '2' SECOND, INTERVAL '4' SECOND))
    GROUP BY auction, window_start, window_end) AS CountBids
  GROUP BY CountBids.starttime, CountBids.endtime) AS MaxBids
ON AuctionBids.starttime = MaxBids.starttime AND AuctionBids.endtime = MaxBids.endtime
  AND AuctionBids.num >= MaxBids.maxn;
]]

describe("q5-like HOP windows joined over a changelog", function()
  -- (the query reads the file twice: the two readers' rows meet in the join in an order that
  -- may vary from run to run, so that the changelogs are compared by the rows they leave;
  -- line for line below, with one source)
  it("give the hand-worked rows, and the Lua paths' rows", function()
    -- windows of 4 s every 2 s: a bid at t is in [s, s + 4 s) for the two s of 2 s below t
    --   [-2, 2): 1 x2             max 2 -> (1, 2)
    --   [0, 4): 1 x2, 2 x2, NULL  max 2 -> (1, 2), (2, 2)
    --   [2, 6): 2 x3, NULL x1     max 3 -> (2, 3)
    --   [4, 8): 2 x1, NULL x2     max 2 -> (NULL, 2): a NULL auction is a group of its own
    --   [6, 10): NULL x2          max 2 -> (NULL, 2)
    local bids = "1,1000\n1,1500\n2,2500\n,2600\n2,3000\n2,5000\n,7000\n,7100\n"
    local out, err, code = run(Q5, {["bids.csv"] = bids})
    assert.are.equal(0, code, err)
    assert.are.same({"[1, 2] x2", "[2, 2] x1", "[2, 3] x1", "[<NULL>, 2] x2"}, fold(out))
    for _, e in ipairs(LUA_PATHS) do
      local l, lerr, lcode = run(Q5, {["bids.csv"] = bids}, e)
      assert.are.equal(0, lcode, lerr)
      assert.are.same(fold(l), fold(out), e)
    end
  end)

  it("run in C (EXPLAIN): the shaping, the join's keys, its WHERE and SELECT; Lua with the switches", function()
    local ex, err, code = run((Q5:gsub("SELECT AuctionBids", "EXPLAIN SELECT AuctionBids")), {["bids.csv"] = ""})
    assert.are.equal(0, code, err)
    local _, shaped = ex:gsub("sql_rows shape rows", "")
    assert.are.equal(2, shaped, ex)
    assert.matches("sql_join regular join\nsql_rows filter\nsql_rows map\n", ex)
    assert.is_nil(ex:find("\nmap ", 1, true), ex)
    assert.is_nil(ex:find("\nfilter ", 1, true), ex)
    ex = run((Q5:gsub("SELECT AuctionBids", "EXPLAIN SELECT AuctionBids")), {["bids.csv"] = ""},
      "WMRUN_SQL_CHANGES=lua")
    assert.matches("sql_join regular join\nfilter filter\nmap map\n", ex)
    ex = run((Q5:gsub("SELECT AuctionBids", "EXPLAIN SELECT AuctionBids")), {["bids.csv"] = ""}, "WMRUN_SQL_EXPR=lua")
    local _, lshaped = ex:gsub("map shape rows", "")
    assert.are.equal(2, lshaped, ex)
  end)

  it("give the Lua paths' rows on random bids (NULL auctions, ties, late-ish order)", function()
    for seed = 1, 3 do
      math.randomseed(seed)
      local t, ts = {}, 0
      for i = 1, 400 do
        ts = ts + math.random(0, 120)
        local a = math.random(12) == 1 and "" or tostring(math.random(1, 6))
        t[i] = a .. "," .. math.max(0, ts - math.random(0, 800))
      end
      local bids = table.concat(t, "\n") .. "\n"
      local out, err, code = run(Q5, {["bids.csv"] = bids})
      assert.are.equal(0, code, err)
      -- (whether retractions come out depends on the order the two readers' rows meet in; the
      -- one-source job below has them)
      assert.is_true(#fold(out) >= 5, out)
      for _, e in ipairs(LUA_PATHS) do
        local l, lerr, lcode = run(Q5, {["bids.csv"] = bids}, e)
        assert.are.equal(0, lcode, lerr)
        assert.are.same(fold(l), fold(out), e .. " seed " .. seed)
      end
      -- two instances on two threads: the join's sides keyed in C meet in the same instance
      local p2, perr, pcode = run(Q5, {["bids.csv"] = bids}, "", "-p 2 --threads 2")
      assert.are.equal(0, pcode, perr)
      assert.matches("^%d> ", p2)
      assert.are.same(fold(out), fold(p2), "-p 2 seed " .. seed)
    end
  end)

  it("over changes: WHERE and SELECT with expressions, a rename into a table, NULLs", function()
    -- k = 1: v 5, NULL; k = 2: v 3, 4; k = NULL: v 7
    local data = "1,5\n2,3\n,7\n1,\n2,4\n"
    local ddl = "CREATE TABLE s (k BIGINT, v BIGINT) WITH ('connector' = 'filesystem', 'path' = 'd.csv', "
      .. "'format' = 'csv');\n"
    local q = ddl .. "CREATE TABLE o (kk BIGINT, twice BIGINT, tag STRING) WITH ('connector' = 'print');\n"
      .. "INSERT INTO o SELECT k, m * 2, CASE WHEN c > 1 THEN 'many' ELSE 'one' END FROM "
      .. "(SELECT k, MAX(v) AS m, COUNT(*) AS c FROM s GROUP BY k) WHERE m IS NULL OR m > 3;\n"
    local out, err, code = run(q, {["d.csv"] = data})
    assert.are.equal(0, code, err)
    -- by hand: 1 -> +I(1, 10, one); 2 (max 3) filtered; NULL -> +I(NULL, 14, one);
    -- 1 again (v NULL: max stays 5, count 2) -> -U(1, 10, one) +U(1, 10, many);
    -- 2 (max 4, count 2): the change -U(2, 3) is filtered, +U(2, 8, many) passes
    assert.are.equal("+I[1, 10, one]\n+I[<NULL>, 14, one]\n-U[1, 10, one]\n+U[1, 10, many]\n+U[2, 8, many]\n", out)
    for _, e in ipairs(LUA_PATHS) do
      local l, lerr, lcode = run(q, {["d.csv"] = data}, e)
      assert.are.equal(0, lcode, lerr)
      assert.are.equal(l, out, e)
    end
  end)
end)

describe("q5-like joins over changes, with checkpoints", function()
  local dir
  before_each(function() dir = h.tmpdir() end)
  after_each(function() h.rmdir(dir) end)

  -- A generator (checkpointed) at RATE records a second, bids of 7 auctions and NULL ones, a
  -- bid now and then 1.5 s behind (the one source feeds both sides: one order of rows)
  local job = [[
local wm = require("wm")
local env = wm.env{watermark_interval = 0}
local s = env:generate(function(i)
    if i == 300 and RATE then io.stderr:write("started\n") end
    local a = (i * 7) % 11 % 8
    return {auction = a ~= 7 and a or nil, ts = i * 37 - (i % 9 == 0 and 1500 or 0)}
  end, {count = 1500, rate = RATE}):set_parallelism(1)
  :assign_timestamps_and_watermarks(wm.watermarks.bounded_out_of_orderness("0ms"):with_timestamp_field("ts"))
env:create_temporary_view("bid", s, {"auction:BIGINT", "rt:rowtime"})
env:execute_sql(QUERY)
env:execute()
]]
  local query = Q5:gsub("^.-\nSELECT AuctionBids", "SELECT AuctionBids"):gsub("DESCRIPTOR%(rt%)", "DESCRIPTOR(rt)")
  job = job:gsub("QUERY", function() return string.format("%q", query) end)

  it("a job stopped by SIGTERM resumes where it stopped; the Lua paths give its changelog line for line", function()
    local ref, part, rest = sql_run.stop_and_resume(dir, job)
    local f = assert(io.open(dir .. "/lua.lua", "w"))
    f:write((job:gsub("RATE", "nil")))
    f:close()
    for _, e in ipairs(LUA_PATHS) do
      local l, lerr, lcode = h.sh(e .. " " .. h.wmrun_path() .. " " .. h.shell_quote(dir .. "/lua.lua"))
      assert.are.equal(0, lcode, lerr)
      assert.are.equal(l, ref, e)
    end
    assert.truthy(ref:find("\n%-U%["))
    assert.truthy(ref:find("<NULL>", 1, true))
    assert.are.equal(ref, part .. rest)
  end)
end)

local UDFS = [[
local M = {}
-- show(s, n): its arguments as it got them (NULL as nil)
M.show = {args = {"STRING", "BIGINT"}, returns = "STRING", eval = function(s, n)
  return tostring(s) .. "/" .. tostring(n) .. "/" .. math.type(n or 0)
end}
-- half(n): n / 2 as a DOUBLE (NULL for NULL); raises for 3
M.half = {args = {"BIGINT"}, returns = "DOUBLE", eval = function(n)
  if n == 3 then error("three is odd") end
  if n == nil then return nil end
  return n / 2
end}
-- wrong(n): a string for a BIGINT
M.wrong = {args = {"BIGINT"}, returns = "BIGINT", eval = function(n) return "x" .. n end}
-- twice(n): 2 n; calls(n): how many times it has been called so far (not deterministic)
M.twice = {args = {"BIGINT"}, returns = "BIGINT", eval = function(n) return n and 2 * n end}
local ncalls = 0
M.calls = {args = {"BIGINT"}, returns = "BIGINT", eval = function() ncalls = ncalls + 1 return ncalls end}
return M
]]
local UDF_DDL = [[
CREATE TABLE t (s STRING, n BIGINT) WITH ('connector' = 'filesystem', 'path' = 't.csv', 'format' = 'csv');
CREATE FUNCTION show AS 'udfs.show' LANGUAGE LUA;
CREATE FUNCTION half AS 'udfs.half' LANGUAGE LUA;
CREATE FUNCTION wrong AS 'udfs.wrong' LANGUAGE LUA;
]]
local T = "a,1\n,2\nb,\nc,4\n"

-- A message without the (shortened) folder of each run's udfs.lua.
local function nodir(err) return (err:gsub("[^%s<]*/udfs%.lua", "udfs.lua")) end

describe("Lua user functions called from the C expressions", function()
  it("get NULL arguments, give NULL, in a projection that is C around them", function()
    local q = UDF_DDL .. "SELECT UPPER(show(s, n)) AS x, half(n) + 1 AS h, n * 2 AS d FROM t "
      .. "WHERE n IS NULL OR n <> 3;\n"
    local files = {["t.csv"] = T, ["udfs.lua"] = UDFS}
    local out, err, code = run(q, files)
    assert.are.equal(0, code, err)
    -- by hand: show gives "a/1/integer" ...; half(1) + 1 = 1.5; half(NULL) is NULL, + 1 NULL
    -- (an empty CSV field of a STRING column is the empty string, not NULL)
    assert.are.equal("+I[A/1/INTEGER, 1.5, 2]\n+I[/2/INTEGER, 2.0, 4]\n+I[B/NIL/INTEGER, <NULL>, <NULL>]\n"
      .. "+I[C/4/INTEGER, 3.0, 8]\n", out)
    local ex = run((q:gsub("\nSELECT", "\nEXPLAIN SELECT")), files)
    assert.matches("sql_rows filter\nsql_rows map\n", ex) -- (no Lua map: the functions are called from C)
    for _, e in ipairs({"WMRUN_SQL_UDF=lua", "WMRUN_SQL_EXPR=lua"}) do
      local l, lerr, lcode = run(q, files, e)
      assert.are.equal(0, lcode, lerr)
      assert.are.equal(out, l, e)
      local lex = run((q:gsub("\nSELECT", "\nEXPLAIN SELECT")), files, e)
      assert.matches("\nmap map\n", lex, e)
    end
  end)

  it("in a GROUP BY key: called from C in the keys' projection, the Lua key function's groups", function()
    local files = {["t.csv"] = "a,1\nb,\na,1\n", ["udfs.lua"] = UDFS}
    local q = UDF_DDL .. "SELECT show(s, n) AS g, COUNT(*) AS c FROM t GROUP BY show(s, n);\n"
    local out, err, code = run(q, files)
    assert.are.equal(0, code, err)
    assert.are.equal("+I[a/1/integer, 1]\n+I[b/nil/integer, 1]\n-U[a/1/integer, 1]\n+U[a/1/integer, 2]\n", out)
    local ex = run((q:gsub("\nSELECT", "\nEXPLAIN SELECT")), files)
    assert.matches("sql_rows map\nkeyed_rolling SQL group aggregate", ex)
    local l, lerr, lcode = run(q, files, "WMRUN_SQL_UDF=lua")
    assert.are.equal(0, lcode, lerr)
    assert.are.equal(out, l)
  end)

  it("are each called, however alike their calls (never one call's value for another)", function()
    -- half(n) and twice(n): the same arguments, other functions; calls(n) twice in a row: two
    -- calls (the C program keeps a repeated subexpression's value, not a user function's)
    local files = {["t.csv"] = "a,1\nb,4\n", ["udfs.lua"] = UDFS}
    local q = UDF_DDL .. "CREATE FUNCTION twice AS 'udfs.twice' LANGUAGE LUA;\n"
      .. "CREATE FUNCTION calls AS 'udfs.calls' LANGUAGE LUA;\n"
      .. "SELECT half(n) AS h, twice(n) AS t, calls(n) AS c1, calls(n) AS c2, half(n) + 1 AS h1, "
      .. "twice(n) + 1 AS t1 FROM t;\n"
    local out, err, code = run(q, files)
    assert.are.equal(0, code, err)
    assert.are.equal("+I[0.5, 2, 1, 2, 1.5, 3]\n+I[2.0, 8, 3, 4, 3.0, 9]\n", out)
    local l, lerr, lcode = run(q, files, "WMRUN_SQL_UDF=lua")
    assert.are.equal(0, lcode, lerr)
    assert.are.equal(out, l)
  end)

  it("is not called for the rows WHERE drops", function()
    -- half raises for 3: the WHERE drops n = 3 first, in C, so the job runs to its end
    local files = {["t.csv"] = "a,1\nx,3\nc,4\n", ["udfs.lua"] = UDFS}
    local out, err, code = run(UDF_DDL .. "SELECT s, half(n) AS h FROM t WHERE n <> 3;\n", files)
    assert.are.equal(0, code, err)
    assert.are.equal("+I[a, 0.5]\n+I[c, 2.0]\n", out)
  end)

  it("that raises stops the job with the SQL line, the Lua traceback and the record, as on the Lua path", function()
    local files = {["t.csv"] = "a,1\nx,3\nc,4\n", ["udfs.lua"] = UDFS}
    local q = UDF_DDL .. "SELECT s,\n  half(n) AS h FROM t;\n"
    local out, err, code = run(q, files)
    assert.are.equal(1, code)
    assert.are.equal("+I[a, 0.5]\n", out)
    -- (the DDL has 4 lines: the call is at line 6, column 3)
    assert.matches("job%.sql:6:3: function 'half' failed: [^\n]*udfs%.lua:8: three is odd\n", err)
    assert.matches("stack traceback:\n[^\n]*udfs%.lua:8: in ", err)
    assert.matches("in operator 'map %(job%.sql:5%)'", err)
    assert.matches("on record", err)
    local l, lerr, lcode = run(q, files, "WMRUN_SQL_UDF=lua")
    assert.are.equal(1, lcode)
    assert.are.equal(out, l)
    assert.are.equal(nodir(err), nodir(lerr))
    -- a result of the wrong type: the same message on both paths
    q = UDF_DDL .. "SELECT wrong(n) AS w FROM t;\n"
    out, err, code = run(q, files)
    assert.are.equal(1, code)
    assert.matches("job%.sql:5:8: function 'wrong' returned string \"x1\", but it is declared to return BIGINT", err)
    l, lerr, lcode = run(q, files, "WMRUN_SQL_UDF=lua")
    assert.are.equal(1, lcode)
    assert.are.equal(out, l)
    assert.are.equal(nodir(err), nodir(lerr))
  end)
end)
