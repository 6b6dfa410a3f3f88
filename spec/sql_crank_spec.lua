-- SQL deduplication and Top-N in C (core/ops/wm_sqlrank.h, docs/sql.md "Deduplication and
-- Top-N"): a ROW_NUMBER() ... WHERE rn = 1 on a time attribute (or rn <= N) over an append-only
-- input runs as a C rolling function of a keyed operator, and gives the changelog of the Lua path
-- (WMRUN_SQL_RANK=lua forces it), row for row: compared on randomized inputs with repeated keys,
-- equal and out-of-order times, keys of one and several columns (strings, integers, doubles,
-- NULLs; keyed by fields in C, NULL a key of its own, or by the Lua key for a double);
-- what stays in Lua (a state TTL, the switch, an ORDER BY on a BOOLEAN); a checkpointed job stopped and resumed.
local h = require("helper")
local sql_run = require("sql_run")

local DDL = [[
SET 'pipeline.auto-watermark-interval' = '0';
CREATE TABLE t (k STRING, j INT, d DOUBLE, v STRING, ts BIGINT, j2 INT NOT NULL, rt AS TO_TIMESTAMP_LTZ(ts, 3),
  WATERMARK FOR rt AS rt - INTERVAL '5' SECOND)
  WITH ('connector' = 'filesystem', 'path' = 's.csv', 'format' = 'csv');
]]

-- Runs the script (DDL first) over s.csv = data, in C or (lua) on the Lua path: stdout,
-- stderr, exit code.
local function run(sql, data, lua)
  local dir = h.tmpdir()
  local f = assert(io.open(dir .. "/s.csv", "w"))
  f:write(data)
  f:close()
  f = assert(io.open(dir .. "/job.sql", "w"))
  f:write(DDL .. sql)
  f:close()
  local out, err, code = h.sh("cd " .. h.shell_quote(dir) .. " && " .. (lua and "WMRUN_SQL_RANK=lua " or "")
    .. h.shell_quote(h.wmrun_path()) .. " --sql job.sql")
  h.rmdir(dir)
  return out, err, code
end

-- Random rows from small domains: keys repeat, times repeat (equal times) and come out of
-- order (by up to 3 s, within the watermark's 5 s bound); j, d and v are NULL now and then;
-- d has 0.0 and -0.0, 1.0 and 2.
local function random_rows(seed, count)
  math.randomseed(seed)
  local D = {"", "0.5", "1.0", "0.0", "-0.0", "2"}
  local t = {}
  local base = 0
  for i = 1, count do
    base = base + math.random(0, 1) * 100
    t[i] = table.concat({({"a", "b", "c", ""})[math.random(4)],
      math.random(6) == 1 and "" or tostring(math.random(0, 3)), D[math.random(#D)],
      ({"", "x", "yy"})[math.random(3)], tostring(math.max(0, base - math.random(0, 3) * 1000)),
      tostring(math.random(0, 2))}, ",")
  end
  return table.concat(t, "\n") .. "\n"
end

local function dedup(items, part, dir, where)
  return string.format("SELECT %s FROM (SELECT *, ROW_NUMBER() OVER (%sORDER BY rt %s) AS rn FROM t) WHERE %s",
    items, part and ("PARTITION BY " .. part .. " ") or "", dir, where or "rn = 1")
end

local QUERIES = {
  -- keyed by a field in C (a STRING of a CSV file is never NULL)
  dedup("k, j, d, v", "k", "DESC"),
  dedup("k, j, d, v", "k", "ASC"),
  -- two fields (j2 is NOT NULL)
  dedup("v, ts, d, j2", "k, j2", "DESC"),
  dedup("v, ts, d, k", "j2, k", "ASC"),
  -- by fields that may be NULL (a NULL j a key of its own)
  dedup("j, v, d", "j", "DESC"),
  dedup("k, v, d", "j, k", "ASC"),
  -- by the Lua key: d is a double (-0.0 and 0.0 two keys)
  dedup("j, d, v, ts", "j, d", "DESC"),
  dedup("k, d", "d", "ASC"),
  -- no PARTITION BY: one key
  dedup("k, j, v", nil, "DESC"),
  -- an expression as the key, another condition beside rn = 1 (applied to the results)
  dedup("k, v, j", "j2 + 1", "ASC", "rn = 1 AND j > 1"),
  -- the deduplicated rows into a GROUP BY (the retractions of the replaced rows)
  "SELECT k, SUM(j) AS s, COUNT(*) AS n FROM (" .. dedup("k, j, j2", "k, j2", "DESC") .. ") GROUP BY k",
}

local function top(items, inner, part, order, where)
  return string.format("SELECT %s FROM (SELECT %s, ROW_NUMBER() OVER (%sORDER BY %s) AS rn FROM t) WHERE %s",
    items, inner, part and ("PARTITION BY " .. part .. " ") or "", order, where)
end

local TOP_QUERIES = {
  -- without rn: +I and -D; NULL j last in DESC
  top("k, j, d, v", "*", "k", "j DESC", "rn <= 3"),
  -- reading rn: -U/+U of the ranks that shift; doubles (NULL first ascending), then a time
  top("*", "k, j, d, ts", "k, j2", "d ASC, ts DESC", "rn < 3"),
  top("*", "j, v, d", "j", "v DESC NULLS FIRST, d NULLS LAST", "rn <= 2"),
  -- rn = 1 read: a Top-1 on a time (not a deduplication)
  top("k, v, rn", "*", "d", "rt ASC", "rn = 1"),
  -- no PARTITION BY; strings by bytes
  top("k, v, j2, rn", "*", nil, "v ASC, k DESC, j2", "rn <= 5"),
  -- a top that grows past its first slots (4, 16, then N = 20)
  top("k, j, ts, rn", "*", "k", "ts DESC, j", "rn <= 20"),
  -- into a GROUP BY (its -D and -U retract)
  "SELECT k, COUNT(*) AS n, SUM(j) AS s FROM (" .. top("k, j", "*", "k", "j DESC, ts", "rn <= 2") .. ") GROUP BY k",
}

describe("SQL deduplication and Top-N in C", function()
  it("give the Lua path's changelog, row for row, on randomized inputs", function()
    local data = {}
    for seed = 1, 3 do data[seed] = random_rows(seed, 300) end
    local all = {}
    for _, q in ipairs(QUERIES) do all[#all + 1] = {q, "keyed_rolling SQL deduplicate"} end
    for _, q in ipairs(TOP_QUERIES) do all[#all + 1] = {q, "keyed_rolling SQL top-"} end
    for _, qe in ipairs(all) do
      local q = qe[1]
      local explain, e1, c1 = run("EXPLAIN " .. q .. ";\n", data[1])
      assert.are.equal(0, c1, e1)
      assert.matches(qe[2], explain, 1, true)
      for seed = 1, 3 do
        local c_out, err, code = run(q .. ";\n", data[seed])
        assert.are.equal(0, code, err)
        local lua_out, lerr, lcode = run(q .. ";\n", data[seed], true)
        assert.are.equal(0, lcode, lerr)
        assert.is_true(#c_out > 0)
        assert.are.equal(lua_out, c_out, q .. " (seed " .. seed .. ")")
      end
    end
  end)

  it("pass their changelog on without a Lua step when the SELECT above takes every column as it is", function()
    -- SELECT * of the rank (Nexmark q19): the top's rows go on as they are
    local out, err, code = run("EXPLAIN " .. top("*", "k, j, d, ts", "k", "d ASC", "rn < 3") .. ";\n", "")
    assert.are.equal(0, code, err)
    assert.matches("keyed_rolling SQL top%-2\n$", out)
    -- (Nexmark q18: the columns of the row kept, its time among them, in their order)
    out, err, code = run("EXPLAIN SELECT k, j, rt FROM (SELECT k, j, rt, ROW_NUMBER() OVER (PARTITION BY k "
      .. "ORDER BY rt DESC) AS rn FROM t) WHERE rn = 1;\n", "")
    assert.are.equal(0, code, err)
    assert.matches("keyed_rolling SQL deduplicate %(keep last row%)\n$", out)
    -- columns in another order, or renamed: a projection of each change (in C)
    for _, items in ipairs({"rn, k, j, d, ts", "k, j, d, ts, rn AS r"}) do
      out, err, code = run("EXPLAIN " .. top(items, "k, j, d, ts", "k", "d ASC", "rn < 3") .. ";\n", "")
      assert.are.equal(0, code, err)
      assert.matches("keyed_rolling SQL top%-2\nsql_rows map\n$", out)
    end
  end)

  it("a hand-worked keep-last and keep-first changelog (equal times, a NULL value)", function()
    -- a at 1 s, b at 2 s, a at 3 s, a (j NULL) at 0.5 s, b at 2 s again
    local data = "a,1,,x,1000,0\nb,2,,x,2000,0\na,3,,x,3000,0\na,,,x,500,0\nb,5,,x,2000,0\n"
    local out, err, code = run(dedup("k, j", "k", "DESC") .. ";\n", data)
    assert.are.equal(0, code, err)
    -- keep last: a 1 +I; b 2 +I; a 3 (3 s >= 1 s) replaces a 1; a NULL (0.5 s) does not;
    -- b 5 (2 s >= 2 s: of equal times the later row) replaces b 2
    assert.are.equal("+I[a, 1]\n+I[b, 2]\n-U[a, 1]\n+U[a, 3]\n-U[b, 2]\n+U[b, 5]\n", out)
    out, err, code = run(dedup("k, j", "k", "ASC") .. ";\n", data)
    assert.are.equal(0, code, err)
    -- keep first: a 1 +I; b 2 +I; a 3 (later) nothing; a NULL (0.5 s < 1 s) replaces a 1;
    -- b 5 (2 s, not earlier) nothing
    assert.are.equal("+I[a, 1]\n+I[b, 2]\n-U[a, 1]\n+U[a, <NULL>]\n", out)
  end)

  it("stay in Lua with a state TTL, with WMRUN_SQL_RANK=lua, and (Top-N) ordered by a BOOLEAN", function()
    local q = dedup("k, j", "k", "DESC")
    local tq = top("k, j", "*", "k", "j DESC", "rn <= 2")
    for _, c in ipairs({{q, "keyed_process deduplicate (keep last row)"}, {tq, "keyed_process top-2"}}) do
      local out, err, code = run("SET 'table.exec.state.ttl' = '1 h';\nEXPLAIN " .. c[1] .. ";\n", "")
      assert.are.equal(0, code, err)
      assert.matches("\n" .. c[2] .. "\n", out, 1, true)
      out, err, code = run("EXPLAIN " .. c[1] .. ";\n", "", true)
      assert.are.equal(0, code, err)
      assert.matches("\n" .. c[2] .. "\n", out, 1, true)
    end
    local out, err, code = run("EXPLAIN " .. top("k, j", "*", "k", "j > 1 DESC", "rn <= 2") .. ";\n", "")
    assert.are.equal(0, code, err)
    assert.matches("\nkeyed_process top-2\n", out, 1, true)
    -- rn read, or a bound above 1, or an order that is not a time: a Top-N (in C), not a
    -- deduplication
    for _, rq in ipairs({dedup("k, j, rn", "k", "DESC"), dedup("k, j", "k", "DESC", "rn <= 2"),
                         top("k, j", "*", "k", "j DESC", "rn = 1")}) do
      out, err, code = run("EXPLAIN " .. rq .. ";\n", "")
      assert.are.equal(0, code, err)
      assert.matches("\nkeyed_rolling SQL top%-%d+\n", out)
      assert.is_nil(out:find("deduplicate", 1, true))
    end
  end)
end)

describe("SQL deduplication and Top-N in C: checkpoints", function()
  local dir
  before_each(function() dir = h.tmpdir() end)
  after_each(function() h.rmdir(dir) end)

  it("a job stopped by SIGTERM and resumed from its checkpoint prints what one run (and Lua) prints", function()
    -- the kept row of every key and its time, and every key's top, are in the checkpoint: the
    -- resumed run replaces them, or not, as the uninterrupted run (times go back by up to 40 ms,
    -- and repeat)
    local job = [[
local wm = require("wm")
local env = wm.env{watermark_interval = 0}
local s = env:generate(function(i)
    if i == 300 and RATE then io.stderr:write("started\n") end
    return {k = "k" .. i % 7, n = i % 3, v = (i * 37) % 101, ts = 1000 + i * 10 - (i * 13) % 5 * 10}
  end, {count = 2000, rate = RATE}):set_parallelism(1)
  :assign_timestamps_and_watermarks(wm.watermarks.bounded_out_of_orderness("100ms"):with_timestamp_field("ts"))
env:create_temporary_view("t", s, {"k:STRING", "n:INT", "v:INT", "rt:rowtime"})
env:execute_sql("EXPLAIN_SELECT k, n, v FROM (SELECT *, ROW_NUMBER() OVER (PARTITION BY k, n ORDER BY rt DESC) AS rn "
  .. "FROM t) WHERE rn = 1")
env:execute_sql("SELECT k, v FROM (SELECT *, ROW_NUMBER() OVER (PARTITION BY k ORDER BY rt ASC) AS rn "
  .. "FROM t) WHERE rn = 1")
env:execute_sql("EXPLAIN_SELECT * FROM (SELECT k, v, n, ROW_NUMBER() OVER (PARTITION BY k ORDER BY v DESC, n) AS rn "
  .. "FROM t) WHERE rn <= 3")
env:execute_sql("SELECT k, v FROM (SELECT k, v, ROW_NUMBER() OVER (PARTITION BY n ORDER BY v) AS rn "
  .. "FROM t) WHERE rn <= 6")
env:execute()
]]
    local explain = h.run_job((job:gsub("EXPLAIN_", "EXPLAIN "):gsub("RATE", "nil")))
    assert.matches("keyed_rolling SQL deduplicate (keep last row)", explain, 1, true)
    assert.matches("keyed_rolling SQL top-3", explain, 1, true)
    job = job:gsub("EXPLAIN_", "")
    local ref, part, rest = sql_run.stop_and_resume(dir, job)
    assert.is_true(#part > 0 and #rest > 0)
    -- one instance, one order: exactly the uninterrupted changelog (a lost state would print
    -- +I rows again for keys already seen)
    assert.are.equal(ref, part .. rest)
    local p = dir .. "/lua.lua"
    local f = assert(io.open(p, "w"))
    f:write((job:gsub("RATE", "nil")))
    f:close()
    local lua_out, err, code = h.sh("WMRUN_SQL_RANK=lua " .. h.wmrun_path() .. " " .. h.shell_quote(p))
    assert.are.equal(0, code, err)
    assert.are.equal(lua_out, ref)
  end)

  it("state checkpointed at -p 2 --threads 2 resumes at -p 3 (by key group, NULL keys too)", function()
    -- a key's rows come in one order whatever the parallelism (one source instance): the
    -- changelog of each key is the uninterrupted run's; the lines of several instances
    -- interleave, so they are compared sorted, without the instances' "N> " prefixes. Stopped
    -- on two threads: a thread that has cut for the stop prints nothing past its cut, so no
    -- row is printed twice (docs/checkpoints.md, "--threads")
    local job = [[
local wm = require("wm")
local env = wm.env{watermark_interval = 0}
local s = env:generate(function(i)
    if i == 300 and RATE then io.stderr:write("started\n") end
    return {k = "k" .. i % 7, n = i % 4 ~= 0 and i % 3 or nil, v = (i * 37) % 101, ts = 1000 + i * 10}
  end, {count = 2000, rate = RATE}):set_parallelism(1)
  :assign_timestamps_and_watermarks(wm.watermarks.bounded_out_of_orderness("100ms"):with_timestamp_field("ts"))
  :set_parallelism(1)
env:create_temporary_view("t", s, {"k:STRING", "n:INT", "v:INT", "rt:rowtime"})
env:execute_sql("SELECT k, n, v FROM (SELECT *, ROW_NUMBER() OVER (PARTITION BY n, k ORDER BY rt DESC) AS rn "
  .. "FROM t) WHERE rn = 1")
env:execute_sql("SELECT * FROM (SELECT k, v, n, ROW_NUMBER() OVER (PARTITION BY n ORDER BY v DESC, k) AS rn "
  .. "FROM t) WHERE rn <= 5")
env:execute()
]]
    local function lines(text)
      local t = {}
      for l in text:gmatch("[^\n]+") do t[#t + 1] = (l:gsub("^%d+> ", "")) end
      table.sort(t)
      return table.concat(t, "\n")
    end
    local ref_job = dir .. "/ref.lua"
    local f = assert(io.open(ref_job, "w"))
    f:write((job:gsub("RATE", "nil")))
    f:close()
    local ref, err, code = h.wmrun(h.shell_quote(ref_job))
    assert.are.equal(0, code, err)
    assert.matches("%+U%[k%d, <NULL>, %d+%]", ref) -- (a NULL n is a key)
    local ck = "--checkpoint-dir " .. h.shell_quote(dir .. "/ck") .. " "
    local p = h.bg_job(dir, (job:gsub("RATE", "1000")), "-p 2 --threads 2 " .. ck)
    h.finally(p.kill)
    h.wait_for(function() return h.read_or_empty(p.err):find("started\n", 1, true) end, "the job to run", 60)
    p.signal("TERM")
    assert.are.equal(0, p.wait(), h.read_or_empty(p.err))
    local part = h.read(p.out)
    f = assert(io.open(p.job, "w"))
    f:write((job:gsub("RATE", "nil")))
    f:close()
    local rest, err2, code2 = h.wmrun("-p 3 " .. ck .. h.shell_quote(p.job))
    assert.are.equal(0, code2, err2)
    assert.matches("resuming from checkpoint", err2)
    assert.is_true(#part > 0 and #rest > 0)
    assert.are.equal(lines(ref), lines(part .. rest))
  end)
end)
