-- SQL lookup joins and PROCTIME() in C (core/ops/wm_sqllookup.h, docs/sql.md "Lookup joins"
-- and "Processing time"): a lookup join whose ON is equalities runs in C, and a SELECT list
-- with PROCTIME() is computed in C, giving the rows of the Lua paths (WMRUN_SQL_LOOKUP=lua and
-- WMRUN_SQL_PROCTIME=lua force them, or the modules' force_lua), row for row and in the same
-- order: compared on randomized probe rows against a side table with duplicate keys, NULL
-- keys and keys that nothing probes, with keys of BIGINT, STRING, DOUBLE against BIGINT, an
-- expression (MOD) and two columns, INNER and LEFT; hand-worked rows; the refresh after
-- 'lookup.join.cache.ttl' on the harness's virtual clock; PROCTIME() values and a
-- processing-time window on that clock; errors that name the operator, the row and the line.
-- (The lookup join keeps no checkpointed state on either path: a resumed job reads the table
-- again at its first probe row.)
local h = require("helper")
local sql_run = require("sql_run")
local wm = require("wm")
local tj = require("wm.sql.plan.temporal_join")
local proctime = require("wm.sql.plan.proctime")

-- A harness whose input is the probe rows (the view O: id, k, s, d), `query` its SQL over O
-- and the filesystem table `side` (k BIGINT, name STRING, v STRING, at `side_path`,
-- 'lookup.join.cache.ttl' `ttl` or the default); lua: both Lua paths. Its output: the rows as
-- strings (NULL as "-").
local function harness(query, side_path, lua, ttl)
  tj.force_lua, proctime.force_lua = lua, lua
  local ok, hs = pcall(wm.testing.harness, function(input)
    local env = input.env
    env:create_temporary_view("O", input, {"id:INT", "k:BIGINT", "s:STRING", "d:DOUBLE"})
    env:execute_sql("CREATE TABLE side (k BIGINT, name STRING, v STRING) WITH ('connector' = 'filesystem', "
      .. "'path' = '" .. side_path .. "', 'format' = 'csv'" .. (ttl and ", 'lookup.join.cache.ttl' = '" .. ttl .. "'"
      or "") .. ")")
    env:execute_sql("CREATE VIEW OP AS SELECT *, PROCTIME() AS p FROM O")
    local t = env:sql_query(query)
    local names = {}
    for i, c in ipairs(t:columns()) do names[i] = c.name end
    return t:to_append_stream():map(function(r)
      local parts = {}
      for i, n in ipairs(names) do
        local v = r[n]
        parts[i] = v == nil and "-" or tostring(v)
      end
      return table.concat(parts, " ")
    end)
  end, {processing_time = 0})
  tj.force_lua, proctime.force_lua = false, false
  assert(ok, hs)
  return hs
end

local function kinds(hs)
  local t = {}
  for _, m in ipairs(hs:metrics()) do t[m.kind] = m end
  return t
end

local function write(path, text)
  local f = assert(io.open(path, "w"))
  f:write(text)
  f:close()
end

-- the side table: keys 0..5 (1 and 3 twice, 4 three times), a NULL key, names a..c repeated
local SIDE = "0,a,zero\n1,a,one\n1,b,uno\n2,c,two\n,a,nokey\n3,b,three\n3,b,tres\n4,a,four\n4,c,vier\n4,a,quatre\n"
  .. "5,,five\n"

-- random probe rows: k in -1..8 or NULL (some keys the side has not), s a..d or NULL, d an
-- integral or a fractional double or NULL, at processing times 0, 10, 20, ...
local function probes(seed, n)
  math.randomseed(seed)
  local rows = {}
  for i = 1, n do
    local k = math.random(8) == 1 and nil or math.random(-1, 8)
    local s = math.random(8) == 1 and nil or ({"a", "b", "c", "d"})[math.random(4)]
    local d = ({0.0, 1.0, 2.0, 2.5, 3.0, 4.0, -0.0, 7.0})[math.random(8)]
    if math.random(8) == 1 then d = nil end
    rows[i] = {id = i, k = k, s = s, d = d}
  end
  return rows
end

local function run_both(query, rows, side_path)
  local out = {}
  for _, lua in ipairs({false, true}) do
    local hs = harness(query, side_path, lua)
    for i, r in ipairs(rows) do
      hs:advance_processing_time(10)
      hs:push(r, i)
    end
    hs:finish()
    out[lua and "lua" or "c"] = {rows = hs:output(), kinds = kinds(hs)}
  end
  return out.c, out.lua
end

describe("SQL lookup joins in C", function()
  local dir, side
  setup(function()
    dir = h.tmpdir()
    side = dir .. "/side.csv"
    write(side, SIDE)
  end)
  teardown(function() h.rmdir(dir) end)

  local QUERIES = {
    "SELECT o.id, o.k, s.v FROM (SELECT *, PROCTIME() AS p FROM O) o JOIN side FOR SYSTEM_TIME AS OF o.p AS s "
      .. "ON o.k = s.k",
    "SELECT o.id, s.k, s.v, o.s FROM (SELECT *, PROCTIME() AS p FROM O) o LEFT JOIN side FOR SYSTEM_TIME AS OF o.p "
      .. "AS s ON o.k = s.k",
    -- a key expression (Nexmark q13's MOD), the side's key on the left of =
    "SELECT o.id, s.v FROM (SELECT *, PROCTIME() AS p FROM O) o JOIN side FOR SYSTEM_TIME AS OF o.p AS s "
      .. "ON s.k = MOD(o.k, 3)",
    -- a STRING key (NULL names: no key)
    "SELECT o.id, o.s, s.v FROM (SELECT *, PROCTIME() AS p FROM O) o LEFT JOIN side FOR SYSTEM_TIME AS OF o.p "
      .. "AS s ON o.s = s.name",
    -- a DOUBLE against the BIGINT key: 2.0 meets 2, -0.0 meets 0, 2.5 nothing
    "SELECT o.id, o.d, s.v FROM (SELECT *, PROCTIME() AS p FROM O) o JOIN side FOR SYSTEM_TIME AS OF o.p AS s "
      .. "ON o.d = s.k",
    -- two keys
    "SELECT o.id, s.name, s.v FROM (SELECT *, PROCTIME() AS p FROM O) o LEFT JOIN side FOR SYSTEM_TIME AS OF o.p "
      .. "AS s ON o.k = s.k AND s.name = o.s",
    -- the joined row's columns of both sides, named alike (k, k0)
    "SELECT * FROM (SELECT id, k, PROCTIME() AS p FROM O) o JOIN side FOR SYSTEM_TIME AS OF o.p AS s ON o.k = s.k",
  }

  for qi, q in ipairs(QUERIES) do
    it("gives the Lua path's rows in its order: query " .. qi, function()
      for seed = 1, 2 do
        local c, l = run_both(q, probes(seed * 10 + qi, 150), side)
        assert.is_table(c.kinds["sql lookup join"])
        assert.is_nil(l.kinds["sql lookup join"])
        assert.is_true(#c.rows > 20)
        -- (the * query has the PROCTIME() column: the same virtual times on both paths)
        assert.are.same(l.rows, c.rows)
      end
    end)
  end

  it("joins the rows worked out by hand", function()
    local hs = harness("SELECT o.id, s.v FROM (SELECT *, PROCTIME() AS p FROM O) o LEFT JOIN side FOR SYSTEM_TIME "
      .. "AS OF o.p AS s ON o.d = s.k", side, false)
    -- d 1.0: one, uno (the table's order); NULL: padded (the NULL key row meets nothing);
    -- 2.5: padded; 4.0: four, vier, quatre; -0.0: zero; 6.0: padded
    for i, d in ipairs({1.0, false, 2.5, 4.0, -0.0, 6.0}) do hs:push({id = i, d = d or nil}, i) end
    assert.are.same({"1 one", "1 uno", "2 -", "3 -", "4 four", "4 vier", "4 quatre", "5 zero", "6 -"}, hs:output())
    assert.are.equal(11, kinds(hs)["sql lookup join"].rows)
  end)

  it("reads the table again once 'lookup.join.cache.ttl' has passed on the processing-time clock", function()
    local path = dir .. "/side_ttl.csv"
    write(path, "1,a,one\n")
    local hs = harness("SELECT o.id, s.v FROM (SELECT *, PROCTIME() AS p FROM O) o JOIN side FOR SYSTEM_TIME "
      .. "AS OF o.p AS s ON o.k = s.k", path, false, "2500 ms")
    -- probe 1 at 1000 reads the table (the next read at 3500); the file changes; probes at 2000
    -- and 3499 use what was read, the probe at 3500 reads it again, the one at 4000 uses that
    hs:advance_processing_time(1000)
    hs:push({id = 1, k = 1}, 1)
    write(path, "1,a,uno\n1,b,eins\n")
    for i, t in ipairs({2000, 3499, 3500, 4000}) do
      hs:advance_processing_time(t - hs:processing_time())
      hs:push({id = i + 1, k = 1}, i + 1)
    end
    assert.are.same({"1 one", "2 one", "3 one", "4 uno", "4 eins", "5 uno", "5 eins"}, hs:output())
    local m = kinds(hs)["sql lookup join"]
    assert.are.equal(2, m.loads)
    assert.are.equal(2, m.rows)
    -- ttl '0': read at every probe row with a key, the clock standing still; on both paths
    for _, lua in ipairs({false, true}) do
      write(path, "1,a,one\n")
      local h0 = harness("SELECT o.id, s.v FROM (SELECT *, PROCTIME() AS p FROM O) o JOIN side FOR SYSTEM_TIME "
        .. "AS OF o.p AS s ON o.k = s.k", path, lua, "0")
      h0:push({id = 1, k = 1}, 1)
      write(path, "1,a,uno\n")
      h0:push({id = 2, k = 1}, 2)
      h0:push({id = 3}, 3)
      assert.are.same({"1 one", "2 uno"}, h0:output())
      if not lua then assert.are.equal(2, kinds(h0)["sql lookup join"].loads) end
    end
  end)

  it("stays in Lua with a condition beyond the keys, and with WMRUN_SQL_LOOKUP=lua", function()
    local hs = harness("SELECT o.id, s.v FROM (SELECT *, PROCTIME() AS p FROM O) o JOIN side FOR SYSTEM_TIME "
      .. "AS OF o.p AS s ON o.k = s.k AND s.v <> 'uno'", side, false)
    hs:push({id = 1, k = 1}, 1)
    assert.are.same({"1 one"}, hs:output())
    assert.is_nil(kinds(hs)["sql lookup join"])
    local files = {["o.csv"] = "1,1\n2,4\n", ["side.csv"] = SIDE}
    local q = "CREATE TABLE O2 (id INT, k BIGINT) WITH ('connector' = 'filesystem', 'path' = 'o.csv', "
      .. "'format' = 'csv');\nCREATE TABLE side (k BIGINT, name STRING, v STRING) WITH ('connector' = "
      .. "'filesystem', 'path' = 'side.csv', 'format' = 'csv');\nSELECT o.id, s.v FROM (SELECT *, PROCTIME() AS p "
      .. "FROM O2) o JOIN side FOR SYSTEM_TIME AS OF o.p AS s ON o.k = s.k;\n"
    local want = "+I[1, one]\n+I[1, uno]\n+I[2, four]\n+I[2, vier]\n+I[2, quatre]\n"
    local out, err, code = sql_run.run(q, files, {args = "--metrics"})
    assert.are.equal(0, code, err)
    assert.are.equal(want, out)
    local d = h.tmpdir()
    for name, text in pairs(files) do write(d .. "/" .. name, text) end
    write(d .. "/job.sql", q)
    local out2, err2, code2 = h.sh("WMRUN_SQL_LOOKUP=lua " .. h.wmrun_path() .. " --sql "
      .. h.shell_quote(d .. "/job.sql"))
    h.rmdir(d)
    assert.are.equal(0, code2, err2)
    assert.are.equal(want, out2)
  end)

  it("names the operator, the row and the line of a key that fails, and a table it cannot read", function()
    local files = {["o.csv"] = "1,1,1\n2,4,0\n", ["side.csv"] = SIDE}
    local q = "CREATE TABLE O2 (id INT, k BIGINT, z BIGINT) WITH ('connector' = 'filesystem', 'path' = 'o.csv', "
      .. "'format' = 'csv');\nCREATE TABLE side (k BIGINT, name STRING, v STRING) WITH ('connector' = "
      .. "'filesystem', 'path' = 'side.csv', 'format' = 'csv');\nSELECT o.id, s.v FROM (SELECT *, PROCTIME() AS p "
      .. "FROM O2) o\n  JOIN side FOR SYSTEM_TIME AS OF o.p AS s ON o.k / o.z = s.k;\n"
    local out, err, code = sql_run.run(q, files)
    assert.are_not.equal(0, code)
    assert.are.equal("+I[1, one]\n+I[1, uno]\n", out)
    assert.matches("job.sql:4:51: division by zero\n  in operator 'lookup join (side) (job.sql:3)'\n"
      .. "  on record {\"id\":2,\"k\":4,\"p\":", err, 1, true)
    -- the table is read at the first probe row: a missing file fails there
    local out2, err2, code2 = sql_run.run(q, {["o.csv"] = files["o.csv"]})
    assert.are_not.equal(0, code2)
    assert.are.equal("", out2)
    assert.matches("cannot read 'side.csv' (table 'side')", err2, 1, true)
    assert.matches("in operator 'lookup join (side) (job.sql:3)'", err2, 1, true)
    assert.matches("reading the table 'side' of the lookup join", err2, 1, true)
    assert.matches("on record {\"id\":1,", err2, 1, true)
  end)
end)

describe("PROCTIME() in C", function()
  it("is the operator's processing time, as on the Lua path", function()
    local dir = h.tmpdir()
    write(dir .. "/side.csv", SIDE)
    local q = "SELECT id, p FROM (SELECT id, k, PROCTIME() AS p FROM O)"
    local outs = {}
    for _, lua in ipairs({false, true}) do
      local hs = harness(q, dir .. "/side.csv", lua)
      for i, t in ipairs({5, 1000, 1000, 123456}) do
        hs:advance_processing_time(t - hs:processing_time())
        hs:push({id = i, k = i}, i)
      end
      outs[#outs + 1] = hs:output()
      -- (the projection with PROCTIME(): one sql_rows operator in C)
      local kind
      for _, m in ipairs(hs:metrics()) do if m.name:find("PROCTIME", 1, true) then kind = m.kind end end
      assert.are.equal(not lua, kind == "sql_rows", kind)
    end
    h.rmdir(dir)
    assert.are.same({"1 5", "2 1000", "3 1000", "4 123456"}, outs[1])
    assert.are.same(outs[2], outs[1])
  end)

  it("feeds a processing-time TUMBLE window (Nexmark q12's) as on the Lua path", function()
    local dir = h.tmpdir()
    write(dir .. "/side.csv", SIDE)
    local q = "SELECT k, COUNT(*) AS n, window_start, window_end FROM TABLE(TUMBLE(TABLE OP, "
      .. "DESCRIPTOR(p), INTERVAL '10' SECOND)) GROUP BY k, window_start, window_end"
    local outs = {}
    for _, lua in ipairs({false, true}) do
      local hs = harness(q, dir .. "/side.csv", lua)
      -- [0, 10 s): k 1 twice, k 2 once, NULL once; [10 s, 20 s): k 1 once
      for i, x in ipairs({{1000, 1}, {5000, 2}, {9000, 1}, {9998, false}, {12000, 1}}) do
        hs:advance_processing_time(x[1] - hs:processing_time())
        hs:push({id = i, k = x[2] or nil}, i)
      end
      hs:advance_processing_time(30000 - hs:processing_time())
      local rows = hs:output()
      table.sort(rows)
      outs[#outs + 1] = rows
    end
    h.rmdir(dir)
    assert.are.same({"- 1 0 10000", "1 1 10000 20000", "1 2 0 10000", "2 1 0 10000"}, outs[1])
    assert.are.same(outs[2], outs[1])
  end)
end)

describe("windowed GROUP BY keys that may be NULL, keyed in C", function()
  -- (Nexmark q12's bidder: a plain column that may be NULL is a C key_by field whose NULL is
  -- the Lua key function's NULL_KEY; before, a Lua key function ran per row)
  it("give the rows worked out by hand, and the Lua path's (WMRUN_SQL_AGG=lua)", function()
    local files = {["t.csv"] = "1,a,10,2020-01-01 00:00:01\n,a,5,2020-01-01 00:00:02\n1,,7,2020-01-01 00:00:03\n"
      .. ",,1,2020-01-01 00:00:04\n1,a,3,2020-01-01 00:00:12\n"}
    local ddl = [[
SET 'pipeline.auto-watermark-interval' = '0';
CREATE TABLE T (k INT, s STRING, x BIGINT, ts TIMESTAMP(3), WATERMARK FOR ts AS ts) WITH ('connector' = 'filesystem',
  'path' = 't.csv', 'format' = 'csv');
CREATE VIEW V AS SELECT k, CASE WHEN s = '' THEN NULL ELSE s END AS s, x, ts FROM T;
]]
    local queries = {
      "SELECT k, COUNT(*) AS n, window_start FROM TABLE(TUMBLE(TABLE V, DESCRIPTOR(ts), INTERVAL '10' SECOND))"
        .. " GROUP BY k, window_start, window_end;",
      "SELECT k, s, COUNT(*) AS n, SUM(x) AS t, window_end FROM TABLE(TUMBLE(TABLE V, DESCRIPTOR(ts), INTERVAL '10'"
        .. " SECOND)) GROUP BY k, s, window_start, window_end;",
      "SELECT s, SUM(x) + 1 AS t1, MAX(x) AS m FROM TABLE(TUMBLE(TABLE V, DESCRIPTOR(ts), INTERVAL '10' SECOND))"
        .. " GROUP BY s, window_start, window_end;",
    }
    -- COUNT(*) by k: [0 s, 10 s) k 1 twice, NULL twice; [10 s, 20 s) k 1 once. By k, s with
    -- SUM(x): each row of the first window its own group. By s: a 10 + 5 (+ 1), NULL 7 + 1.
    local want = {
      {"+I[1, 2, 2020-01-01 00:00:00.000]", "+I[<NULL>, 2, 2020-01-01 00:00:00.000]",
       "+I[1, 1, 2020-01-01 00:00:10.000]"},
      {"+I[1, a, 1, 10, 2020-01-01 00:00:10.000]", "+I[<NULL>, a, 1, 5, 2020-01-01 00:00:10.000]",
       "+I[1, <NULL>, 1, 7, 2020-01-01 00:00:10.000]", "+I[<NULL>, <NULL>, 1, 1, 2020-01-01 00:00:10.000]",
       "+I[1, a, 1, 3, 2020-01-01 00:00:20.000]"},
      {"+I[a, 16, 10]", "+I[<NULL>, 9, 7]", "+I[a, 4, 3]"},
    }
    for qi, q in ipairs(queries) do
      local out, err, code = sql_run.run(ddl .. q, {["t.csv"] = files["t.csv"]})
      assert.are.equal(0, code, err)
      local got = {}
      for l in out:gmatch("[^\n]+") do got[#got + 1] = l end
      table.sort(got)
      table.sort(want[qi])
      assert.are.same(want[qi], got)
      local d = h.tmpdir()
      write(d .. "/t.csv", files["t.csv"])
      write(d .. "/job.sql", ddl .. q)
      local lout, lerr, lcode = h.sh("WMRUN_SQL_AGG=lua " .. h.wmrun_path() .. " --sql "
        .. h.shell_quote(d .. "/job.sql"))
      h.rmdir(d)
      assert.are.equal(0, lcode, lerr)
      assert.are.equal(lout, out, q) -- (row for row, in the same order)
    end
  end)
end)

describe("SQL lookup joins in C: checkpoints", function()
  local dir
  before_each(function() dir = h.tmpdir() end)
  after_each(function() h.rmdir(dir) end)

  it("a job stopped by SIGTERM and resumed from its checkpoint prints what one run (and Lua) prints", function()
    -- the operator checkpoints nothing (as the Lua path): the resumed run reads the table again
    -- at its first probe row and goes on with the same rows
    write(dir .. "/side.csv", SIDE)
    local job = ([[
local wm = require("wm")
local env = wm.env{}
local s = env:generate(function(i)
    if i == 300 and RATE then io.stderr:write("started\n") end
    return {id = i, k = i % 9 - 1}
  end, {count = 2000, rate = RATE}):set_parallelism(1)
env:create_temporary_view("O", s, {"id:INT", "k:BIGINT"})
env:execute_sql("CREATE TABLE side (k BIGINT, name STRING, v STRING) WITH ('connector' = 'filesystem', "
  .. "'path' = 'SIDE', 'format' = 'csv')")
env:execute_sql("EXPLAIN_SELECT o.id, s.v FROM (SELECT *, PROCTIME() AS p FROM O) o JOIN side FOR SYSTEM_TIME AS OF "
  .. "o.p AS s ON MOD(o.k, 7) = s.k")
env:execute()
]]):gsub("SIDE", dir .. "/side.csv")
    local explain = h.run_job((job:gsub("EXPLAIN_", "EXPLAIN "):gsub("RATE", "nil")))
    assert.matches("sql_lookup lookup join (side)", explain, 1, true)
    job = job:gsub("EXPLAIN_", "")
    local ref, part, rest = sql_run.stop_and_resume(dir, job)
    assert.is_true(#rest > 0)
    assert.are.equal(ref, part .. rest)
    local p = dir .. "/lua.lua"
    write(p, (job:gsub("RATE", "nil")))
    local lua_out, err, code = h.sh("WMRUN_SQL_LOOKUP=lua WMRUN_SQL_PROCTIME=lua " .. h.wmrun_path() .. " "
      .. h.shell_quote(p))
    assert.are.equal(0, code, err)
    assert.are.equal(lua_out, ref)
  end)
end)
