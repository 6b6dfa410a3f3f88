-- SQL windowed GROUP BY aggregates in C (core/ops/wm_sqlagg.h, docs/sql.md "Aggregates in
-- C"): the same rows as the Lua aggregates (WMRUN_SQL_AGG=lua forces them) on SQL queries and
-- the windowed Nexmark queries, hand-worked results, and a checkpointed job stopped and resumed.
local h = require("helper")
local sql_run = require("sql_run")

-- Runs job.sql (with files) in a folder of its own, with the C aggregates or (lua) not:
-- stdout, stderr, exit code.
local function run(sql, files, lua, args)
  local dir = h.tmpdir()
  files["job.sql"] = sql
  for name, text in pairs(files) do
    local f = assert(io.open(dir .. "/" .. name, "w"))
    f:write(text)
    f:close()
  end
  local out, err, code = h.sh((lua and "WMRUN_SQL_AGG=lua " or "") .. h.wmrun_path() .. " " .. (args or "")
    .. " --sql " .. h.shell_quote(dir .. "/job.sql"))
  h.rmdir(dir)
  return out, err, code
end

-- id, ms, vc (NULL-able), d (NULL-able)
local DATA = table.concat({
  "a,1000,5,1.5", "a,2000,,2.5", "b,3000,7,", "a,4000,-4,0.5", "c,4500,-7,", "b,6000,10,4.0",
  "c,6500,-2,-1.5",
  "a,7000,12,1.0", "b,9000,,", "a,12000,8,3.0", "a,13000,8,3.0", "b,7000,7,4", "b,12500,2,2.0",
  "a,16000,1,", "c,30000,3,0.25",
}, "\n") .. "\n"
local DDL = [[
CREATE TABLE s (id STRING NOT NULL, ms BIGINT, vc BIGINT, d DOUBLE, rt AS TO_TIMESTAMP_LTZ(ms, 3),
  WATERMARK FOR rt AS rt - INTERVAL '1' SECOND)
WITH ('connector' = 'filesystem', 'path' = 'd.csv', 'format' = 'csv');
]]
local ALL = "COUNT(*) AS n, COUNT(vc) AS nv, SUM(vc) AS s, MIN(vc) AS mi, MAX(vc) AS ma, MIN(d) AS mid, "
  .. "MAX(d) AS mad, AVG(vc) AS av, AVG(d) AS ad, SUM(d) AS sd, COUNT(*) FILTER (WHERE vc > 4) AS big, "
  .. "SUM(vc) FILTER (WHERE vc < 0 AND d <= 0.5) AS neg, MAX(d) FILTER (WHERE 3 >= vc) AS lo"

-- query, whether it runs in C
local QUERIES = {
  {"SELECT id, window_start, window_end, " .. ALL
    .. " FROM TABLE(TUMBLE(TABLE s, DESCRIPTOR(rt), INTERVAL '5' SECOND))"
    .. " GROUP BY id, window_start, window_end;", true},
  {"SELECT window_start, window_end, window_time, id, " .. ALL
    .. " FROM TABLE(HOP(TABLE s, DESCRIPTOR(rt), INTERVAL '2' SECOND, INTERVAL '6' SECOND))"
    .. " GROUP BY window_start, window_end, id;", true},
  {"SELECT id, SESSION_START(rt, INTERVAL '2' SECOND) AS s0, SESSION_END(rt, INTERVAL '2' SECOND) AS s1, " .. ALL
    .. " FROM s GROUP BY SESSION(rt, INTERVAL '2' SECOND), id;", true},
  {"SELECT TUMBLE_START(rt, INTERVAL '10' SECOND) AS w, " .. ALL
    .. " FROM s GROUP BY TUMBLE(rt, INTERVAL '10' SECOND);", true},
  -- a Lua step shapes the C row: expressions of aggregates, HAVING
  {"SELECT id, COUNT(*) * 10 AS n10, SUM(vc) + 1 AS s1, AVG(d) AS ad FROM TABLE(TUMBLE(TABLE s, DESCRIPTOR(rt), "
    .. "INTERVAL '5' SECOND)) GROUP BY id, window_start, window_end HAVING COUNT(vc) >= 2;", true},
  -- COUNT(DISTINCT) of numbers: NULLs left out, an integral float is its integer
  {"SELECT id, COUNT(DISTINCT vc) AS dv, COUNT(DISTINCT d) AS dd,"
    .. " COUNT(DISTINCT vc) FILTER (WHERE vc > 0) AS dp, SUM(vc) AS s"
    .. " FROM TABLE(HOP(TABLE s, DESCRIPTOR(rt), INTERVAL '5' SECOND, INTERVAL '20' SECOND))"
    .. " GROUP BY id, window_start, window_end;", true},
  {"SELECT id, COUNT(DISTINCT vc) AS dv, COUNT(*) AS n FROM s GROUP BY SESSION(rt, INTERVAL '3' SECOND), id;", true},
  -- a NULL-able key column (keyed in C: its NULL is the Lua key's NULL_KEY, a NULL field in the row)
  {"SELECT vc, COUNT(*) AS n, MAX(d) AS m FROM TABLE(TUMBLE(TABLE s, DESCRIPTOR(rt), INTERVAL '5' SECOND))"
    .. " GROUP BY vc, window_start, window_end;", true},
  -- Lua: COUNT(DISTINCT) of strings, SUM(DISTINCT), an expression argument, CUMULATE
  {"SELECT window_start, COUNT(DISTINCT id) AS di, SUM(DISTINCT vc) AS sv"
    .. " FROM TABLE(TUMBLE(TABLE s, DESCRIPTOR(rt), INTERVAL '5' SECOND)) GROUP BY window_start, window_end;", false},
  {"SELECT id, SUM(vc * 2) AS s FROM TABLE(TUMBLE(TABLE s, DESCRIPTOR(rt), INTERVAL '5' SECOND))"
    .. " GROUP BY id, window_start, window_end;", false},
  {"SELECT id, window_end, COUNT(*) AS n, SUM(vc) AS s"
    .. " FROM TABLE(CUMULATE(TABLE s, DESCRIPTOR(rt), INTERVAL '2' SECOND,"
    .. " INTERVAL '6' SECOND)) GROUP BY id, window_start, window_end;", false},
}

describe("SQL aggregates in C", function()
  it("give the rows the Lua aggregates give, on every kind of window, with NULLs, FILTER and HAVING", function()
    for _, q in ipairs(QUERIES) do
      local c, cerr, ccode = run(DDL .. q[1], {["d.csv"] = DATA}, false, "--metrics --watermark-interval 0")
      local l, lerr, lcode = run(DDL .. q[1], {["d.csv"] = DATA}, true, "--metrics --watermark-interval 0")
      assert.are.equal(0, ccode, cerr)
      assert.are.equal(0, lcode, lerr)
      assert.is_true(#c > 0, q[1])
      assert.are.equal(l, c, q[1])
      assert.are.equal(q[2], cerr:find("SQL aggregate", 1, true) ~= nil, q[1])
      assert.is_nil(lerr:find("SQL aggregate", 1, true))
    end
  end)

  it("computes the hand-worked values", function()
    local out = run(DDL .. QUERIES[1][1], {["d.csv"] = DATA}, false, "--watermark-interval 0")
    local rows = {}
    for l in out:gmatch("[^\n]+") do rows[#rows + 1] = l end
    table.sort(rows)
    -- (a in [10 s, 15 s) and b in [5 s, 10 s) have a duplicate value each, for DISTINCT)
    -- a in [0, 5 s): vc 5, NULL, -4; d 1.5, 2.5, 0.5. n 3, nv 2, sum 1, min -4, max 5,
    -- min d 0.5, max d 2.5, avg 1 / 2 = 0 (toward zero), avg d 4.5 / 3 = 1.5, sum d 4.5,
    -- vc > 4: 1, vc < 0 and d <= 0.5: -4, 3 >= vc: max d of (-4, 0.5) = 0.5
    assert.are.equal("+I[a, 1970-01-01 00:00:00.000, 1970-01-01 00:00:05.000, 3, 2, 1, -4, 5, 0.5, 2.5, 0, 1.5, "
      .. "4.5, 1, -4, 0.5]", rows[1])
    -- (a has 4 windows, b 3) b in [10 s, 15 s): vc 2, d 2.0. c in [0, 5 s): vc -7, d NULL:
    -- the d aggregates NULL, avg -7, neg: d is NULL so not <= 0.5: NULL
    assert.are.equal(10, #rows)
    assert.are.equal("+I[b, 1970-01-01 00:00:10.000, 1970-01-01 00:00:15.000, 1, 1, 2, 2, 2, 2.0, 2.0, 2, 2.0, 2.0, "
      .. "0, <NULL>, 2.0]", rows[7])
    assert.are.equal("+I[c, 1970-01-01 00:00:00.000, 1970-01-01 00:00:05.000, 1, 1, -7, -7, -7, <NULL>, <NULL>, -7, "
      .. "<NULL>, <NULL>, 0, <NULL>, <NULL>]", rows[8])
  end)

  it("give the Lua aggregates' rows on the windowed Nexmark queries", function()
    for _, q in ipairs({"q5", "q7", "q8", "q11"}) do
      local sql = h.read("examples/nexmark/" .. q .. ".sql"):gsub("'events.num' = '%d+'", "'events.num' = '20000'")
      -- (a watermark after every record: periodic ones depend on the machine's speed)
      local c, cerr, ccode = run(sql, {}, false, "--watermark-interval 0")
      local l, lerr, lcode = run(sql, {}, true, "--watermark-interval 0")
      assert.are.equal(0, ccode, cerr)
      assert.are.equal(0, lcode, lerr)
      assert.is_true(#c > 100, q)
      assert.are.equal(l, c, q)
    end
  end)
end)

-- An unwindowed GROUP BY's changelog: no -U followed by a +U of the same row.
local function no_equal_pairs(out)
  local prev
  for l in out:gmatch("[^\n]+") do
    local body = l:match("^%+U(%[.*)")
    assert.is_false(body ~= nil and body == prev, "an unchanged row emitted: " .. l)
    prev = l:match("^%-U(%[.*)")
  end
end

-- The rows of a changelog applied (keyed by the first nk fields): the final rows, sorted.
local function materialize(out, nk)
  local rows = {}
  for l in out:gmatch("[^\n]+") do
    local kind, body = l:match("^([%+%-][IUD])%[(.*)%]$")
    local key = table.concat({body:match(("([^,]*), "):rep(nk))}, ",")
    if kind == "-U" or kind == "-D" then rows[key] = nil else rows[key] = body end
  end
  local t = {}
  for _, v in pairs(rows) do t[#t + 1] = v end
  table.sort(t)
  return t
end

-- query, how many of its GROUP BYs run in C (unwindowed GROUP BYs)
local GROUP_QUERIES = {
  {"SELECT id, " .. ALL .. " FROM s GROUP BY id;", 1},
  {"SELECT " .. ALL .. ", COUNT(DISTINCT vc) AS dv FROM s;", 1},
  -- keys that are expressions (a Lua key function), a NULL-able key
  {"SELECT UPPER(id) AS u, vc, COUNT(*) AS n, MAX(d) AS m, COUNT(DISTINCT vc) FILTER (WHERE d > 1) AS dv"
    .. " FROM s GROUP BY UPPER(id), vc;", 1},
  {"SELECT DISTINCT id, vc FROM s;", 1},
  -- keys computed in C (a projection): NULL a key of its own, DATE_FORMAT
  {"SELECT vc, COUNT(*) AS n, SUM(d) AS sd FROM s GROUP BY vc;", 1},
  {"SELECT DATE_FORMAT(rt, 'yyyy-MM-dd HH:mm:ss') AS t, COUNT(*) AS n, MAX(vc) AS m FROM s"
    .. " GROUP BY DATE_FORMAT(rt, 'yyyy-MM-dd HH:mm:ss');", 1},
  -- Lua: a DOUBLE key (C's key gives an integral double back as an integer)
  {"SELECT d, COUNT(*) AS n FROM s GROUP BY d;", 0},
  -- an expression argument: computed in C by the projection ($ga1)
  {"SELECT id, SUM(vc * 2) AS s FROM s GROUP BY id;", 1},
  -- Lua: HAVING, an expression of aggregates, a TTL
  {"SELECT id, COUNT(*) AS n FROM s GROUP BY id HAVING SUM(vc) > 0;", 0},
  {"SELECT id, COUNT(*) + 1 AS n FROM s GROUP BY id;", 0},
  {"SET 'table.exec.state.ttl' = '1 h';\nSELECT id, COUNT(*) AS n FROM s GROUP BY id;", 0},
  -- an updating input: both in C (spec/sql_aggc_retract_spec.lua has more)
  {"SELECT n, COUNT(*) AS c FROM (SELECT id, COUNT(*) AS n FROM s GROUP BY id) GROUP BY n;", 2},
}

describe("SQL aggregates in C without a window", function()
  it("give the changelog the Lua aggregates give, with no unchanged row", function()
    for _, q in ipairs(GROUP_QUERIES) do
      local c, cerr, ccode = run(DDL .. q[1], {["d.csv"] = DATA}, false, "--metrics")
      local l, lerr, lcode = run(DDL .. q[1], {["d.csv"] = DATA}, true, "--metrics")
      assert.are.equal(0, ccode, cerr)
      assert.are.equal(0, lcode, lerr)
      assert.is_true(#c > 0, q[1])
      -- (the Lua path skips unchanged rows too: the same changelog, and so the same final rows)
      assert.are.equal(l, c, q[1])
      no_equal_pairs(c)
      assert.are.equal(q[2], select(2, cerr:gsub("\nSQL group aggregate %(", "")), q[1])
      assert.is_nil(lerr:find("SQL group aggregate", 1, true))
    end
  end)

  it("compute keys that are expressions or NULL-able in C, NULL a key of its own; the same operators and rows "
    .. "with the C expressions off", function()
    local sqlmod = require("wm.sql")
    local cexpr = require("wm.sql.cexpr")
    local q = "SELECT UPPER(id) AS u, vc, COUNT(*) AS n FROM s GROUP BY UPPER(id), vc;"
    local function plan()
      local p = sqlmod.plan(DDL:gsub("'d.csv'", "'spec/sql_aggc_spec.lua'") .. q, {name = "job.sql"})
      local k = {}
      for _, n in ipairs(p.env.nodes) do k[#k + 1] = n.kind end
      return k, p.env.nodes
    end
    local k, nodes = plan()
    -- the projection into $gk1, $gk2 in C, then key_by on those fields in C
    assert.are.same({"sql_rows", "keyed_rolling"}, {k[#k - 3], k[#k - 2]})
    assert.are.same({fields = {"$gk1", "$gk2"}, null_key = "\0<NULL>"}, nodes[#nodes - 2].key)
    cexpr.force_lua = true
    local kl, lnodes = plan()
    cexpr.force_lua = false
    -- with the C expressions off: a Lua map in its place, the same operators otherwise
    assert.are.equal(#k, #kl)
    assert.are.same({"map", "keyed_rolling"}, {kl[#kl - 3], kl[#kl - 2]})
    assert.are.same(nodes[#nodes - 2].key, lnodes[#lnodes - 2].key)
    -- the rows: by hand, the groups of vc NULL (a's 2000 and b's 9000) are keys of their own
    local dir = h.tmpdir()
    local f = assert(io.open(dir .. "/d.csv", "w"))
    f:write(DATA)
    f:close()
    local job = dir .. "/job.sql"
    f = assert(io.open(job, "w"))
    f:write(DDL .. q)
    f:close()
    local out, err, code = h.sh(h.wmrun_path() .. " --sql " .. h.shell_quote(job))
    assert.are.equal(0, code, err)
    local lout, lerr, lcode = h.sh("WMRUN_SQL_EXPR=lua " .. h.wmrun_path() .. " --sql " .. h.shell_quote(job))
    h.rmdir(dir)
    assert.are.equal(0, lcode, lerr)
    assert.are.equal(lout, out)
    local fin = materialize(out, 2)
    assert.truthy(fin[1])
    local has = {}
    for _, r in ipairs(fin) do has[r] = true end
    assert.is_true(has["A, <NULL>, 1"], out)
    assert.is_true(has["B, <NULL>, 1"], out)
    assert.is_true(has["A, 8, 2"], out)
  end)

  it("an INSERT of a GROUP BY into a table of its own column names passes the changes on in C", function()
    local sqlmod = require("wm.sql")
    local p = sqlmod.plan(DDL:gsub("'d.csv'", "'spec/sql_aggc_spec.lua'")
      .. "CREATE TABLE o (id STRING, n BIGINT) WITH ('connector' = 'blackhole');\n"
      .. "INSERT INTO o SELECT id, COUNT(*) AS n FROM s GROUP BY id;", {name = "job.sql"})
    local k = {}
    for _, n in ipairs(p.env.nodes) do k[#k + 1] = n.kind end
    assert.are.same({"keyed_rolling", "sql_rows", "discard"}, {k[#k - 2], k[#k - 1], k[#k]})
    -- renamed: a projection of the changes' rows in C (the changes are C rows)
    p = sqlmod.plan(DDL:gsub("'d.csv'", "'spec/sql_aggc_spec.lua'")
      .. "CREATE TABLE o (id STRING, cnt BIGINT) WITH ('connector' = 'blackhole');\n"
      .. "INSERT INTO o SELECT id, COUNT(*) AS n FROM s GROUP BY id;", {name = "job.sql"})
    local last = p.env.nodes[#p.env.nodes - 1]
    assert.are.same({"sql_rows", true, {"id", "cnt"}}, {last.kind, last.changes, last.names})
  end)

  it("computes the hand-worked changelog and final rows", function()
    local out = run(DDL .. "SELECT id, COUNT(vc) AS n, MAX(vc) AS m, COUNT(DISTINCT vc) AS dv FROM s GROUP BY id;",
      {["d.csv"] = DATA}, false)
    -- a: vc 5 (+I 1, 5, 1), NULL (no change: nothing), -4 (2, 5, 2), 12 (3, 12, 3), 8 (4, 12, 4),
    -- 8 (5, 12, 4: COUNT changed), 1 (6, 12, 5)
    local a = {}
    for l in out:gmatch("[^\n]+") do if l:find("[a,", 3, true) then a[#a + 1] = l end end
    assert.are.same({"+I[a, 1, 5, 1]", "-U[a, 1, 5, 1]", "+U[a, 2, 5, 2]", "-U[a, 2, 5, 2]", "+U[a, 3, 12, 3]",
      "-U[a, 3, 12, 3]", "+U[a, 4, 12, 4]", "-U[a, 4, 12, 4]", "+U[a, 5, 12, 4]", "-U[a, 5, 12, 4]",
      "+U[a, 6, 12, 5]"}, a)
    -- b: vc 7, 10, NULL, 7, 2: 4 values, max 10, 3 distinct; c: -7, -2, 3
    assert.are.same({"a, 6, 12, 5", "b, 4, 10, 3", "c, 3, 3, 3"}, materialize(out, 1))
  end)

  it("give the Lua aggregates' final rows on Nexmark q15 and q17, on two threads too", function()
    for _, q in ipairs({"q15", "q17"}) do
      local sql = h.read("examples/nexmark/" .. q .. ".sql"):gsub("'events.num' = '%d+'", "'events.num' = '20000'")
      local nk = q == "q15" and 1 or 2
      local c, cerr, ccode = run(sql, {}, false, "--metrics")
      local l, lerr, lcode = run(sql, {}, true)
      local t2, terr, tcode = run(sql, {}, false, "-p 2 --threads 2")
      assert.are.equal(0, ccode, cerr)
      assert.are.equal(0, lcode, lerr)
      assert.are.equal(0, tcode, terr)
      assert.truthy(cerr:find("SQL group aggregate", 1, true))
      assert.is_true(#c > 1000, q)
      assert.are.equal(l, c, q)
      no_equal_pairs(c)
      local fin = materialize(c, nk)
      assert.is_true(#fin > 0)
      assert.are.same(fin, materialize((("\n" .. t2):gsub("\n%d+> ", "\n")), nk))
    end
  end)
end)

describe("SQL aggregates in C with checkpoints", function()
  local dir
  before_each(function() dir = h.tmpdir() end)
  after_each(function() h.rmdir(dir) end)

  -- A generator (checkpointed: its counter) at RATE records a second into a tumbling window
  -- of C aggregates: the open windows' states are in the checkpoint.
  local job = [[
local wm = require("wm")
local env = wm.env{watermark_interval = 0}
local s = env:generate(function(i)
    if i == 300 and RATE then io.stderr:write("started\n") end
    return {k = "k" .. i % 3, v = (i * 37) % 101, ts = i * 10}
  end, {count = 1500, rate = RATE}):set_parallelism(1)
  :assign_timestamps_and_watermarks(wm.watermarks.bounded_out_of_orderness("0ms"):with_timestamp_field("ts"))
env:create_temporary_view("t", s, {"k:STRING", "v:INT", "rt:rowtime"})
env:execute_sql("SELECT window_start, COUNT(*) AS n, SUM(v) AS s, MIN(v) AS mi, MAX(v) AS ma, AVG(v) AS av, "
  .. "COUNT(*) FILTER (WHERE v >= 50) AS hi, COUNT(DISTINCT v) AS dv "
  .. "FROM TABLE(TUMBLE(TABLE t, DESCRIPTOR(rt), INTERVAL '1' SECOND)) "
  .. "GROUP BY window_start, window_end")
env:execute()
]]

  it("a job stopped by SIGTERM resumes its windows' aggregates where it stopped", function()
    local ref, part, rest = sql_run.stop_and_resume(dir, job)
    -- hand-worked: the window [0, 1 s) holds i = 1..99 (ts = 10 i): n 99; v = 37 i mod 101 for
    -- i = 1..99 is every residue but 0 and 37 * 100 mod 101 = 64 (37 * 100 = 3700 = 36 * 101 + 64):
    -- sum 5050 - 64 = 4986, min 1, max 100, avg 4986 / 99 = 50; v >= 50: 51 values (50..100) less 64;
    -- 99 distinct values (37 i mod 101 differ for different i < 101)
    assert.matches("%+I%[1970%-01%-01 00:00:00%.000, 99, 4986, 1, 100, 50, 50, 99%]\n", ref)
    assert.are.equal(ref, part .. rest)
  end)

  it("a job stopped by SIGTERM resumes an unwindowed GROUP BY where it stopped", function()
    local gjob = job:gsub('env:execute_sql%b()', [[env:execute_sql("SELECT k, COUNT(*) AS n, SUM(v) AS s, "
  .. "MIN(v) AS mi, MAX(v) AS ma, AVG(v) AS av, COUNT(DISTINCT v) AS dv FROM t GROUP BY k")]])
    local ref, part, rest = sql_run.stop_and_resume(dir, gjob)
    -- (GROUP BY k over these columns runs in C: as the first query of GROUP_QUERIES)
    -- hand-worked, the last row of k0 (i = 0, 3, ..., 1497: 500 rows): v = 37 i mod 101 takes every
    -- residue (3 * 37 = 111 = 10 mod 101 steps through all of them): 101 distinct, min 0, max 100
    assert.matches("%+U%[k0, 500, %d+, 0, 100, %d+, 101%]\n$", ref)
    -- (the last result of every key is in the checkpoint: no row repeated, none unchanged)
    assert.are.equal(ref, part .. rest)
  end)
end)
