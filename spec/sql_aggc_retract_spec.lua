-- An unwindowed SQL GROUP BY in C over an updating input (core/ops/wm_sqlagg.h, the retracting
-- accumulators; docs/sql.md "Aggregates in C"): the changelog the Lua group aggregate gives
-- (WMRUN_SQL_AGG=lua forces it), row for row, on randomized inputs whose changes retract the
-- current MIN and MAX, empty groups, carry NULLs, DOUBLE and BIGINT values, from a C GROUP BY
-- (rows) and from Lua operators (tables); hand-worked changelogs; a job stopped and resumed
-- from its checkpoint; Nexmark q4 (both GROUP BYs in C).
local h = require("helper")
local sql_run = require("sql_run")

-- Runs job.sql (with files) in a folder of its own, with the C aggregates or (lua) not.
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

-- How many GROUP BYs of a run's plan are in C (its --metrics names them).
local function c_groups(err)
  return select(2, err:gsub("\nSQL group aggregate %(", ""))
end

-- The rows of a changelog applied (keyed by the first field): the final rows, sorted.
local function materialize(out)
  local rows = {}
  for l in out:gmatch("[^\n]+") do
    local kind, body = l:match("^([%+%-][IUD])%[(.*)%]$")
    local key = body:match("^([^,]*)")
    if kind == "-U" or kind == "-D" then rows[key] = nil else rows[key] = body end
  end
  local t = {}
  for _, v in pairs(rows) do t[#t + 1] = v end
  table.sort(t)
  return t
end

local DDL = [[
CREATE TABLE s (g BIGINT, k STRING NOT NULL, v BIGINT, d DOUBLE)
WITH ('connector' = 'filesystem', 'path' = 'd.csv', 'format' = 'csv');
]]

-- n rows of random data (seeded): g a small key (NULL at times), k one of 12 inner keys, v a
-- BIGINT of -20..20 (NULL at times; few values: duplicates), d a DOUBLE of halves (integral
-- ones too, NULL at times)
local function data(seed, n)
  local rnd = 0
  local function rand(m) -- (a small LCG: the same rows on every Lua)
    rnd = (rnd * 1103515245 + 12345 + seed) % 2147483648
    return rnd % m
  end
  local t = {}
  for i = 1, n do
    local g = rand(10) == 0 and "" or tostring(rand(3))
    local v = rand(8) == 0 and "" or tostring(rand(41) - 20)
    local d = rand(7) == 0 and "" or string.format("%.1f", (rand(21) - 10) / 2)
    t[i] = table.concat({g, "k" .. rand(12), v, d}, ",")
  end
  return table.concat(t, "\n") .. "\n"
end

local OUTER = "COUNT(*) AS n, COUNT(mv) AS c, SUM(mv) AS s, MIN(mv) AS mi, MAX(mv) AS ma, AVG(mv) AS av, "
  .. "MIN(md) AS mid, MAX(md) AS mad, SUM(md) AS sd, AVG(md) AS ad, COUNT(DISTINCT mv) AS dv, "
  .. "COUNT(DISTINCT md) AS dd, MAX(mv) FILTER (WHERE md > 0) AS fm, COUNT(*) FILTER (WHERE mv < 0) AS fc"
-- the inner GROUP BYs: in C (rows), and in Lua (HAVING: tables)
local INNER_C = "SELECT k, g, MAX(v) AS mv, MIN(d) AS md, COUNT(*) AS cnt FROM s GROUP BY k, g"
local INNER_LUA = "SELECT k, g, MAX(v) AS mv, MIN(d) AS md, COUNT(*) AS cnt FROM s GROUP BY k, g HAVING COUNT(*) > 0"

-- query, how many GROUP BYs run in C
local QUERIES = {
  -- groups by g (NULL included): the inner rows' changes retract the current MIN and MAX
  {"SELECT g, " .. OUTER .. " FROM (" .. INNER_C .. ") GROUP BY g;", 2},
  {"SELECT g, " .. OUTER .. " FROM (" .. INNER_LUA .. ") GROUP BY g;", 1},
  -- groups by the inner count: every inner row moves from group cnt to cnt + 1, the groups
  -- drop to no row (-D) and come back
  {"SELECT cnt, " .. OUTER .. " FROM (" .. INNER_C .. ") GROUP BY cnt;", 2},
  {"SELECT cnt, g, " .. OUTER .. " FROM (" .. INNER_LUA .. ") GROUP BY cnt, g;", 1},
  -- no GROUP BY: one group; SELECT DISTINCT (no aggregate): a group's +I and -D only
  {"SELECT " .. OUTER .. " FROM (" .. INNER_C .. ");", 2},
  {"SELECT DISTINCT cnt, g FROM (" .. INNER_C .. ");", 2},
  -- a GROUP BY over a GROUP BY over a GROUP BY
  {"SELECT n, COUNT(*) AS c, MAX(ma) AS m, MIN(mid) AS mi FROM (SELECT g, " .. OUTER .. " FROM (" .. INNER_C
    .. ") GROUP BY g) GROUP BY n;", 3},
  -- Lua over an updating input: an expression argument
  {"SELECT g, SUM(mv * 2) AS s FROM (" .. INNER_C .. ") GROUP BY g;", 1},
}

describe("SQL GROUP BY in C over an updating input", function()
  it("gives the Lua group aggregate's changelog on randomized inputs", function()
    for seed = 1, 3 do
      local files = {["d.csv"] = data(seed, 400)}
      for _, q in ipairs(QUERIES) do
        local c, cerr, ccode = run(DDL .. q[1], files, false, "--metrics")
        local l, lerr, lcode = run(DDL .. q[1], files, true, "--metrics")
        assert.are.equal(0, ccode, cerr)
        assert.are.equal(0, lcode, lerr)
        assert.is_true(#c > 0, q[1])
        assert.are.equal(l, c, "seed " .. seed .. ": " .. q[1])
        assert.are.equal(q[2], c_groups(cerr), q[1])
        assert.are.equal(0, c_groups(lerr), q[1])
        if q[1]:find("GROUP BY cnt") then assert.truthy(c:find("\n%-D%[")) end
      end
    end
  end)

  it("computes the hand-worked changelog: MAX retracted to the next one, to none, a group deleted", function()
    -- inner (k -> MAX(v)): a 5, b 7, a 9 (a: 5 -> 9), c 7, b 3 (b stays 7), a 1 (a stays 9);
    -- outer: MAX, MIN, COUNT(*), COUNT(DISTINCT) of the inner maxima over all k, and per max value
    local rows = "1,a,5,\n1,b,7,\n1,a,9,\n1,c,7,\n1,b,3,\n1,a,1,\n"
    local out = run(DDL .. "SELECT MAX(mv) AS ma, MIN(mv) AS mi, COUNT(*) AS n, COUNT(DISTINCT mv) AS dv "
      .. "FROM (SELECT k, MAX(v) AS mv FROM s GROUP BY k);", {["d.csv"] = rows}, false)
    -- a 5: {5}; b 7: {5, 7}; a 5 -> 9: -{5} {7} (max 7) +{9} {7, 9}; c 7: {7, 7, 9}
    assert.are.equal(table.concat({
      "+I[5, 5, 1, 1]",
      "-U[5, 5, 1, 1]", "+U[7, 5, 2, 2]",
      "-U[7, 5, 2, 2]", "+U[7, 7, 1, 1]", -- (a's 5 retracted: the max is still b's 7, the min 7)
      "-U[7, 7, 1, 1]", "+U[9, 7, 2, 2]",
      "-U[9, 7, 2, 2]", "+U[9, 7, 3, 2]", -- (c's 7: a duplicate, counted twice, distinct once)
    }, "\n") .. "\n", out)
    -- groups by the inner max: a's 5 -> 9 empties group 5 (-D), group 7 keeps b and then c
    out = run(DDL .. "SELECT mv, COUNT(*) AS n FROM (SELECT k, MAX(v) AS mv FROM s GROUP BY k) GROUP BY mv;",
      {["d.csv"] = rows}, false)
    assert.are.equal(table.concat({
      "+I[5, 1]", "+I[7, 1]", "-D[5, 1]", "+I[9, 1]", "-U[7, 1]", "+U[7, 2]",
    }, "\n") .. "\n", out)
    -- MAX of a DOUBLE: retracting 2.5 gives back the integral 2.0 as a DOUBLE
    out = run(DDL .. "SELECT MAX(md) AS m FROM (SELECT k, MAX(d) AS md FROM s GROUP BY k);",
      {["d.csv"] = "1,a,,2.0\n1,b,,2.5\n1,b,,-1.0\n1,b,,3\n"}, false)
    assert.are.equal("+I[2.0]\n-U[2.0]\n+U[2.5]\n-U[2.5]\n+U[2.0]\n-U[2.0]\n+U[3.0]\n", out)
  end)

  it("runs Nexmark q4's two GROUP BYs in C, with the Lua path's changelog", function()
    local sql = h.read("examples/nexmark/q4.sql"):gsub("'events.num' = '%d+'", "'events.num' = '20000'")
    local c, cerr, ccode = run(sql, {}, false, "--metrics")
    local l, lerr, lcode = run(sql, {}, true)
    assert.are.equal(0, ccode, cerr)
    assert.are.equal(0, lcode, lerr)
    assert.are.equal(2, c_groups(cerr))
    assert.is_true(#c > 1000)
    assert.are.equal(l, c)
    -- on two threads (changes crossing between them): the same final rows
    local t2, terr, tcode = run(sql, {}, false, "-p 2 --threads 2")
    assert.are.equal(0, tcode, terr)
    local fin = materialize(c)
    assert.is_true(#fin > 0)
    assert.are.same(fin, materialize((("\n" .. t2):gsub("\n%d+> ", "\n"))))
    local ex = run(sql:gsub("INSERT INTO nexmark_q4%s*\n", "EXPLAIN\n"), {}, false)
    local _, ngroups = ex:gsub("keyed_rolling SQL group aggregate", "")
    assert.are.equal(2, ngroups, ex)
    assert.is_nil(ex:find("keyed_process group aggregate", 1, true), ex)
  end)
end)

describe("SQL GROUP BY in C over an updating input, with checkpoints", function()
  local dir
  before_each(function() dir = h.tmpdir() end)
  after_each(function() h.rmdir(dir) end)

  -- A generator (checkpointed) at RATE records a second; the inner GROUP BY's changes move
  -- rows between the outer groups (MIN/MAX multisets, groups deleted and made again).
  local job = [[
local wm = require("wm")
local env = wm.env{watermark_interval = 0}
local s = env:generate(function(i)
    if i == 300 and RATE then io.stderr:write("started\n") end
    return {k = "k" .. (i * 7) % 13, v = (i * 37) % 101 - 50, d = ((i * 11) % 9) / 2, ts = i * 10}
  end, {count = 1500, rate = RATE}):set_parallelism(1)
  :assign_timestamps_and_watermarks(wm.watermarks.bounded_out_of_orderness("0ms"):with_timestamp_field("ts"))
env:create_temporary_view("t", s, {"k:STRING", "v:BIGINT", "d:DOUBLE", "rt:rowtime"})
env:execute_sql("SELECT n % 4 AS b, COUNT(*) AS c, MIN(mv) AS mi, MAX(mv) AS ma, SUM(sd) AS s, "
  .. "COUNT(DISTINCT mv) AS dv, MAX(sd) AS msd FROM "
  .. "(SELECT k, COUNT(*) AS n, MAX(v) AS mv, SUM(d) AS sd FROM t GROUP BY k) GROUP BY n % 4")
env:execute()
]]

  it("a job stopped by SIGTERM resumes where it stopped", function()
    local ref, part, rest = sql_run.stop_and_resume(dir, job)
    -- (the same job on the Lua path: the same changelog)
    local f = assert(io.open(dir .. "/lua.lua", "w"))
    f:write((job:gsub("RATE", "nil")))
    f:close()
    local l, lerr, lcode = h.sh("WMRUN_SQL_AGG=lua " .. h.wmrun_path() .. " " .. h.shell_quote(dir .. "/lua.lua"))
    assert.are.equal(0, lcode, lerr)
    assert.are.equal(l, ref)
    assert.truthy(ref:find("\n%-D%["))
    -- (every group's state and last row is in the checkpoint: nothing repeated nor lost)
    assert.are.equal(ref, part .. rest)
  end)

  it("refuses to resume the GROUP BY from a checkpoint of other aggregates", function()
    local ck = "--checkpoint-dir " .. h.shell_quote(dir .. "/ck") .. " "
    local p = h.bg_job(dir, (job:gsub("RATE", "1000")), ck)
    h.finally(p.kill)
    h.wait_for(function() return h.read_or_empty(p.err):find("started\n", 1, true) end, "the job to run", 60)
    p.signal("TERM")
    assert.are.equal(0, p.wait(), h.read_or_empty(p.err))
    local f = assert(io.open(p.job, "w"))
    f:write((job:gsub("RATE", "nil"):gsub("MAX%(sd%) AS msd", "MIN(sd) AS msd")))
    f:close()
    local _, err, code = h.wmrun(ck .. h.shell_quote(p.job))
    assert.are_not.equal(0, code)
    assert.matches("changed since the checkpoint", err)
  end)
end)
