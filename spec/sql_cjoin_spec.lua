-- SQL regular joins in C (core/ops/wm_sqljoin.h, docs/sql.md "Regular joins"): an INNER join of
-- two append-only inputs on equality keys runs in C, and gives the rows of the Lua path
-- (WMRUN_SQL_JOIN=lua forces it), row for row and in the same order: compared on randomized
-- inputs with duplicate rows, NULL keys, keys of one and several columns, of strings, integers
-- and doubles; a hand-worked changelog; the joins that stay in Lua; a checkpointed job stopped
-- and resumed; INNER joins of updating inputs (GROUP BY changelogs) against the Lua path too.
local h = require("helper")
local sql_run = require("sql_run")

-- One source (from_elements, -p 1): the rows reach the join in this order, L and R being
-- filters of it. `rows` is the text of the elements; `query` the SQL; lua: the Lua path. Runs
-- the job: stdout, stderr, exit code.
local JOB = [[
local wm = require("wm")
local env = wm.env{}
local s = env:from_elements(ROWS)
local cols = {"a:INT", "b:STRING", "d:DOUBLE", "n:BIGINT"}
env:create_temporary_view("L", s:filter(function(r) return r.side == "L" end), cols)
env:create_temporary_view("R", s:filter(function(r) return r.side == "R" end), cols)
env:execute_sql(QUERY)
env:execute()
]]

local function run(rows, query, lua, args, envs)
  local job = JOB:gsub("ROWS", function() return rows end)
    :gsub("QUERY", function() return string.format("%q", query) end)
  local p = h.write_tmp(job, ".lua")
  local out, err, code = h.sh((envs and envs .. " " or "") .. (lua and "WMRUN_SQL_JOIN=lua " or "") .. h.wmrun_path()
    .. " " .. (args or "") .. " " .. h.shell_quote(p))
  os.remove(p)
  return out, err, code
end

-- Random rows from small domains, so that rows repeat (a side's identical rows are counted)
-- and keys have many rows; a is NULL now and then; d has 0.0, -0.0, and integers beside
-- floats (an integer is another value than the float it equals, on both paths).
local function random_rows(seed, count)
  math.randomseed(seed)
  local D = {"0.5", "1.0", "0.0", "-0.0", "2", "2.0", "3.25", "nil"}
  local t = {}
  for i = 1, count do
    local a = math.random(10) == 1 and "nil" or tostring(math.random(0, 4))
    t[i] = string.format("{side = %q, a = %s, b = %q, d = %s, n = %d}", math.random(2) == 1 and "L" or "R", a,
      ({"p", "q", "r"})[math.random(3)], D[math.random(#D)], math.random(0, 2))
  end
  return table.concat(t, ",\n")
end

local QUERIES = {
  "SELECT * FROM L JOIN R ON L.a = R.a",
  "SELECT L.b, R.b AS rb, L.n, R.d FROM L JOIN R ON L.a = R.a AND L.b = R.b",
  -- a string key and a condition beyond the keys (a filter after the join)
  "SELECT * FROM L, R WHERE L.b = R.b AND L.n < R.n",
  -- keys of two numeric types meet as floats: INT with DOUBLE, BIGINT with INT
  "SELECT L.a, R.a AS ra, R.d, L.b FROM L JOIN R ON L.a = R.d",
  "SELECT L.n, R.a, R.b FROM L JOIN R ON L.n = R.a",
  -- doubles: 0.0 and -0.0 are two keys, 2 and 2.0 too, as on the Lua path
  "SELECT L.d, R.d AS rd, L.b FROM L JOIN R ON L.d = R.d",
  "SELECT R.n, L.* FROM R JOIN L ON L.a = R.a AND L.b = R.b AND L.n = R.n",
  -- the join's rows into a GROUP BY
  "SELECT L.b, COUNT(*) AS c, SUM(R.n) AS s FROM L JOIN R ON L.a = R.a GROUP BY L.b",
}

describe("SQL regular joins in C", function()
  it("give the Lua path's rows in its order on random inputs, and EXPLAIN shows the C operator", function()
    for seed = 1, 3 do
      local rows = random_rows(seed, 240)
      for _, q in ipairs(QUERIES) do
        local c, cerr, ccode = run(rows, q, false)
        local l, lerr, lcode = run(rows, q, true)
        assert.are.equal(0, ccode, cerr)
        assert.are.equal(0, lcode, lerr)
        assert.is_true(select(2, c:gsub("\n", "")) >= 20, q)
        assert.are.equal(l, c, q)
        if seed == 1 then
          local ce = run(rows, "EXPLAIN " .. q, false)
          local le = run(rows, "EXPLAIN " .. q, true)
          assert.matches("\nsql_join regular join\n", ce, 1, true)
          assert.is_nil(ce:find("keyed_process regular join", 1, true))
          assert.matches("\nkeyed_process regular join\n", le, 1, true)
          assert.is_nil(le:find("sql_join", 1, true))
        end
      end
    end
  end)

  it("emits the hand-worked rows: the other side's rows in first-arrival order, each as often as it came",
     function()
    local rows = table.concat({
      '{side = "L", a = 1, b = "a", n = 0}', '{side = "L", a = 1, b = "a", n = 0}', -- one row of L, twice
      '{side = "R", a = 1, b = "x", n = 0}', -- meets a twice
      '{side = "L", a = 1, b = "b", n = 0}', -- meets x
      '{side = "L", b = "n", n = 0}', '{side = "R", b = "m", n = 0}', -- NULL keys: meet nothing
      '{side = "R", a = 1, b = "x", n = 0}', -- x again: meets a twice, then b
      '{side = "L", a = 1, b = "a", n = 0}', -- a third a: meets x twice (x came twice)
      '{side = "R", a = 2, b = "y", n = 0}', -- another key: nothing
      '{side = "L", a = 1, b = "a", n = 1}', -- another row (n differs): meets x twice
    }, ", ")
    local out, err, code = run(rows, "SELECT L.b, R.b AS rb, L.n FROM L JOIN R ON L.a = R.a", false, "--metrics")
    assert.are.equal(0, code, err)
    assert.are.equal(table.concat({"+I[a, x, 0]", "+I[a, x, 0]", "+I[b, x, 0]", "+I[a, x, 0]", "+I[a, x, 0]",
      "+I[b, x, 0]", "+I[a, x, 0]", "+I[a, x, 0]", "+I[a, x, 1]", "+I[a, x, 1]"}, "\n") .. "\n", out)
    -- kept: left a (3 times), b, a with n 1 (key 1); right x (twice) of key 1, y of key 2
    assert.matches("SQL join 'regular join [^\n]*': keys 2; rows kept left 5 %(3 distinct%), right 3 %(2 distinct%)\n",
      err)
  end)

  it("ends in the same rows at -p 2 --threads 2 (the key exchange routes by the key columns)", function()
    local rows = random_rows(5, 240)
    local sorted = function(text)
      local t = {}
      for l in text:gmatch("[^\n]+") do t[#t + 1] = (l:gsub("^%d+> ", "")) end
      table.sort(t)
      return t
    end
    for _, q in ipairs({QUERIES[2], QUERIES[4]}) do
      local one, err1, c1 = run(rows, q, false)
      local two, err2, c2 = run(rows, q, false, "-p 2 --threads 2")
      assert.are.equal(0, c1, err1)
      assert.are.equal(0, c2, err2)
      assert.is_true(#one > 0)
      assert.are.same(sorted(one), sorted(two))
    end
  end)

  it("leaves outer joins and joins without keys to the Lua path", function()
    local rows = '{side = "L", a = 1, b = "a", n = 0}, {side = "R", a = 1, b = "x", n = 0}'
    for _, q in ipairs({
      "SELECT * FROM L LEFT JOIN R ON L.a = R.a",
      "SELECT * FROM L FULL JOIN R ON L.a = R.a",
      "SELECT * FROM L LEFT JOIN (SELECT a, COUNT(*) AS c FROM R GROUP BY a) G ON L.a = G.a",
      "SELECT * FROM L, R WHERE L.n < R.n",
    }) do
      local e, err, code = run(rows, "EXPLAIN " .. q, false)
      assert.are.equal(0, code, err)
      assert.matches("regular join", e, 1, true)
      assert.is_nil(e:find("sql_join", 1, true), q)
    end
    local e = run(rows, "EXPLAIN SELECT * FROM L JOIN R ON L.a = R.a", false)
    assert.matches("sql_join regular join", e, 1, true)
    -- (a TTL: in C too, as an INNER join; an outer join with a TTL in Lua)
    local ttl = JOB:gsub("env:execute_sql%(QUERY%)", function()
      return "env:execute_sql(\"SET 'table.exec.state.ttl' = '1 h'\")\nenv:execute_sql(QUERY)" end)
    local p = h.write_tmp((ttl:gsub("ROWS", function() return rows end)
      :gsub("QUERY", function() return '"EXPLAIN SELECT * FROM L JOIN R ON L.a = R.a"' end)), ".lua")
    e = h.sh(h.wmrun_path() .. " " .. h.shell_quote(p))
    os.remove(p)
    assert.matches("\nsql_join regular join (state ttl 3600000 ms)\n", e, 1, true)
    p = h.write_tmp((ttl:gsub("ROWS", function() return rows end)
      :gsub("QUERY", function() return '"EXPLAIN SELECT * FROM L LEFT JOIN R ON L.a = R.a"' end)), ".lua")
    e = h.sh(h.wmrun_path() .. " " .. h.shell_quote(p))
    os.remove(p)
    assert.matches("\nkeyed_process LEFT regular join (state ttl 3600000 ms)\n", e, 1, true)
  end)
end)

-- Joins of updating inputs (GROUP BY results: changelogs), in C against WMRUN_SQL_JOIN=lua.
local UPD_QUERIES = {
  -- one side updating: a GROUP BY's +I, then -U/+U of rows that matched
  "SELECT L.b, G.c, G.a FROM L JOIN (SELECT a, COUNT(*) AS c FROM R GROUP BY a) G ON L.a = G.a",
  -- the updating side on the left, a condition beyond the keys (a filter after the join)
  "SELECT G.a, G.m, R.b FROM (SELECT a, MAX(n) AS m FROM L GROUP BY a) G JOIN R ON G.a = R.a AND G.m >= R.n",
  -- both sides updating
  "SELECT G.a, G.c, H.m FROM (SELECT a, COUNT(*) AS c FROM L GROUP BY a) G "
    .. "JOIN (SELECT a, MAX(d) AS m FROM R GROUP BY a) H ON G.a = H.a",
  -- duplicates on the updating side (groups of (a, b, n) shown without n: equal rows counted)
  "SELECT L.n, G.a, G.b, G.c FROM L JOIN (SELECT a, b, COUNT(*) AS c FROM R GROUP BY a, b, n) G ON L.a = G.a",
  -- a GROUP BY over a GROUP BY: -D (a count's group of rows emptied), counts to zero
  "SELECT L.a, L.b, H.c, H.k FROM L JOIN (SELECT c, COUNT(*) AS k FROM "
    .. "(SELECT a, COUNT(*) AS c FROM R GROUP BY a) X GROUP BY c) H ON L.n = H.c",
  -- the updating join's changes into a GROUP BY
  "SELECT G.c, COUNT(*) AS k, SUM(L.n) AS s FROM L JOIN (SELECT a, COUNT(*) AS c FROM R GROUP BY a) G "
    .. "ON L.a = G.a GROUP BY G.c",
}

-- A changelog folded: +I/+U add a row, -U/-D take it; what is left is the result (of a run at
-- -p 2, whose instances' changes interleave).
local function fold(text)
  local n, t = {}, {}
  for l in text:gmatch("[^\n]+") do
    l = l:gsub("^%d+> ", "")
    local r = l:sub(3)
    n[r] = (n[r] or 0) + (l:sub(1, 1) == "+" and 1 or -1)
  end
  for r, c in pairs(n) do if c ~= 0 then t[#t + 1] = r .. " x" .. c end end
  table.sort(t)
  return t
end

describe("SQL regular joins in C of updating inputs", function()
  it("give the Lua path's changes in its order on random inputs, and EXPLAIN shows the C operator", function()
    for seed = 11, 13 do
      local rows = random_rows(seed, 200)
      for qi, q in ipairs(UPD_QUERIES) do
        local c, cerr, ccode = run(rows, q, false)
        local l, lerr, lcode = run(rows, q, true)
        assert.are.equal(0, ccode, cerr)
        assert.are.equal(0, lcode, lerr)
        assert.is_true(select(2, c:gsub("\n", "")) >= 10, q)
        if qi ~= 6 then assert.matches("\n%-U%[", c) end -- (retractions came out)
        assert.are.equal(l, c, q)
        if seed == 11 then
          local ce = run(rows, "EXPLAIN " .. q, false)
          assert.matches("\nsql_join regular join\n", ce, 1, true)
          assert.is_nil(ce:find("keyed_process regular join", 1, true))
        end
      end
    end
    -- a GROUP BY on the Lua path gives changes that are Lua tables (read by the binding's hook)
    local rows = random_rows(14, 200)
    for _, q in ipairs({UPD_QUERIES[1], UPD_QUERIES[3], UPD_QUERIES[5]}) do
      local c, cerr, ccode = run(rows, q, false, nil, "WMRUN_SQL_AGG=lua")
      local l, lerr, lcode = run(rows, q, true, nil, "WMRUN_SQL_AGG=lua")
      assert.are.equal(0, ccode, cerr)
      assert.are.equal(0, lcode, lerr)
      assert.is_true(#c > 0)
      assert.are.equal(l, c, q)
    end
  end)

  it("ends in the same rows at -p 2 --threads 2 (both sides keyed by the key strings)", function()
    local rows = random_rows(21, 240)
    for _, q in ipairs({UPD_QUERIES[1], UPD_QUERIES[3], UPD_QUERIES[4]}) do
      local one, err1, c1 = run(rows, q, false)
      local two, err2, c2 = run(rows, q, false, "-p 2 --threads 2")
      assert.are.equal(0, c1, err1)
      assert.are.equal(0, c2, err2)
      assert.is_true(#fold(one) > 0, q)
      assert.are.same(fold(one), fold(two))
    end
  end)

  it("emits the hand-worked changes: a retraction takes one count, the pairs carry its kind", function()
    -- G: per a, COUNT(*) of R: +I[1, 1], then -U[1, 1] +U[1, 2]
    local rows = table.concat({
      '{side = "L", a = 1, b = "x", n = 0}', '{side = "L", a = 1, b = "x", n = 0}', -- x twice
      '{side = "R", a = 1, b = "r", n = 0}', -- G +I[1, 1]: meets x twice
      '{side = "L", a = 1, b = "y", n = 0}', -- y meets (1, 1): +I
      '{side = "R", a = 1, b = "r", n = 0}', -- G -U[1, 1] +U[1, 2]: each meets x, x, y
      '{side = "R", a = 2, b = "r", n = 0}', -- G +I[2, 1]: meets nothing
      '{side = "L", a = 2, b = "z", n = 0}', -- z meets (2, 1)
    }, ", ")
    local q = "SELECT L.b, G.c FROM L JOIN (SELECT a, COUNT(*) AS c FROM R GROUP BY a) G ON L.a = G.a"
    local out, err, code = run(rows, q, false, "--metrics")
    assert.are.equal(0, code, err)
    assert.are.equal(table.concat({"+I[x, 1]", "+I[x, 1]", "+I[y, 1]", "-U[x, 1]", "-U[x, 1]", "-U[y, 1]",
      "+U[x, 2]", "+U[x, 2]", "+U[y, 2]", "+I[z, 1]"}, "\n") .. "\n", out)
    -- kept: left x (twice), y, z; right (1, 2) and (2, 1): (1, 1) went at count 0
    assert.matches("SQL join 'regular join[^\n]*': keys 2; rows kept left 4 %(3 distinct%), right 2 %(2 distinct%)\n",
      err)
  end)
end)

describe("SQL regular joins in C: checkpoints", function()
  local dir
  before_each(function() dir = h.tmpdir() end)
  after_each(function() h.rmdir(dir) end)

  it("a job stopped by SIGTERM and resumed from its checkpoint prints what one run (and Lua) prints", function()
    -- the join's rows of both sides and their counts are in the checkpoint: the resumed run's
    -- rows meet those kept before the stop, as often as they came ((id, v) repeats every 350)
    local job = [[
local wm = require("wm")
local env = wm.env{}
local s = env:generate(function(i)
    if i == 300 and RATE then io.stderr:write("started\n") end
    return {side = i % 3, id = i % 50, v = i % 7, s = "s" .. (i % 5)}
  end, {count = 2000, rate = RATE}):set_parallelism(1)
env:create_temporary_view("L", s:filter(function(r) return r.side == 0 end), {"id:INT", "v:INT", "s:STRING"})
env:create_temporary_view("R", s:filter(function(r) return r.side ~= 0 end), {"id:INT", "v:INT", "s:STRING"})
env:execute_sql("EXPLAIN_SELECT L.v, R.v AS w, R.s FROM L JOIN R ON L.id = R.id AND L.s = R.s")
env:execute()
]]
    local explain = h.run_job((job:gsub("EXPLAIN_", "EXPLAIN "):gsub("RATE", "nil")))
    assert.matches("sql_join regular join", explain, 1, true)
    job = job:gsub("EXPLAIN_", "")
    local ref, part, rest = sql_run.stop_and_resume(dir, job)
    assert.is_true(#rest > 0)
    assert.are.equal(ref, part .. rest)
    local p = dir .. "/lua.lua"
    local f = assert(io.open(p, "w"))
    f:write((job:gsub("RATE", "nil")))
    f:close()
    local lua_out, err, code = h.sh("WMRUN_SQL_JOIN=lua " .. h.wmrun_path() .. " " .. h.shell_quote(p))
    assert.are.equal(0, code, err)
    assert.are.equal(lua_out, ref)
  end)
end)

describe("SQL regular joins in C of updating inputs: checkpoints and Nexmark q5", function()
  local dir
  before_each(function() dir = h.tmpdir() end)
  after_each(function() h.rmdir(dir) end)

  it("a job stopped by SIGTERM and resumed from its checkpoint prints what one run (and Lua) prints", function()
    -- R's side is a GROUP BY's changelog: its kept rows (retracted and added back as the
    -- counts move) are in the checkpoint; both sides updating in the second join
    for qi, q in ipairs({
      "SELECT L.v, G.c FROM L JOIN (SELECT id, COUNT(*) AS c FROM R GROUP BY id, s) G ON L.id = G.id",
      "SELECT G.c, H.m FROM (SELECT id, COUNT(*) AS c FROM L GROUP BY id) G "
        .. "JOIN (SELECT id, MAX(v) AS m FROM R GROUP BY id) H ON G.id = H.id",
    }) do
      local job = [[
local wm = require("wm")
local env = wm.env{}
local s = env:generate(function(i)
    if i == 300 and RATE then io.stderr:write("started\n") end
    return {side = i % 3, id = i % 50, v = i % 7, s = "s" .. (i % 5)}
  end, {count = 2000, rate = RATE}):set_parallelism(1)
env:create_temporary_view("L", s:filter(function(r) return r.side == 0 end), {"id:INT", "v:INT", "s:STRING"})
env:create_temporary_view("R", s:filter(function(r) return r.side ~= 0 end), {"id:INT", "v:INT", "s:STRING"})
env:execute_sql("EXPLAIN_QUERY")
env:execute()
]]
      job = job:gsub("QUERY", function() return q end)
      local explain = h.run_job((job:gsub("EXPLAIN_", "EXPLAIN "):gsub("RATE", "nil")))
      assert.matches("sql_join regular join", explain, 1, true)
      job = job:gsub("EXPLAIN_", "")
      local sub = dir .. "/q" .. qi -- (each query its own checkpoints)
      assert(os.execute("mkdir " .. h.shell_quote(sub)))
      local ref, part, rest = sql_run.stop_and_resume(sub, job)
      assert.is_true(#rest > 0)
      assert.matches("%-U%[", ref)
      assert.are.equal(ref, part .. rest)
      local p = dir .. "/lua.lua"
      local f = assert(io.open(p, "w"))
      f:write((job:gsub("RATE", "nil")))
      f:close()
      local lua_out, err, code = h.sh("WMRUN_SQL_JOIN=lua " .. h.wmrun_path() .. " " .. h.shell_quote(p))
      assert.are.equal(0, code, err)
      assert.are.equal(lua_out, ref)
      -- stopped at -p 1, resumed at -p 2: each instance takes its key groups' keys (the key
      -- function of an updating side reads a change: the kept row is given as {k = "+I", r =
      -- row}); the changelog folded ends where the uninterrupted run's does
      local sub2 = dir .. "/p" .. qi
      assert(os.execute("mkdir " .. h.shell_quote(sub2)))
      local ck = "--checkpoint-dir " .. h.shell_quote(sub2 .. "/ck") .. " "
      local bg = h.bg_job(sub2, (job:gsub("RATE", "1000")), ck)
      h.finally(bg.kill)
      h.wait_for(function() return h.read_or_empty(bg.err):find("started\n", 1, true) end, "the job to run", 60)
      bg.signal("TERM")
      assert.are.equal(0, bg.wait(), h.read_or_empty(bg.err))
      local part2 = h.read(bg.out)
      f = assert(io.open(bg.job, "w"))
      f:write((job:gsub("RATE", "nil")))
      f:close()
      local rest2, err2, code2 = h.wmrun("-p 2 --threads 2 " .. ck .. h.shell_quote(bg.job))
      assert.are.equal(0, code2, err2)
      assert.matches("restored by key group", err2, 1, true)
      assert.is_true(#rest2 > 0)
      assert.is_true(#fold(ref) > 0)
      assert.are.same(fold(ref), fold(part2 .. rest2))
    end
  end)

  it("runs Nexmark q5's join (a window's counts with the MAX per window, a changelog) in C", function()
    local f = assert(io.open(h.root .. "/examples/nexmark/q5.sql"))
    local text = f:read("a")
    f:close()
    local p = dir .. "/q5x.sql"
    f = assert(io.open(p, "w"))
    f:write((text:gsub("INSERT INTO nexmark_q5", "EXPLAIN")))
    f:close()
    local e, err, code = h.sh(h.wmrun_path() .. " --sql " .. h.shell_quote(p))
    assert.are.equal(0, code, err)
    assert.matches("\nsql_join regular join\n", e, 1, true)
    assert.is_nil(e:find("keyed_process regular join", 1, true))
    -- and prints what the Lua path prints
    local q = h.shell_quote(h.root .. "/examples/nexmark/q5.sql")
    local c, cerr, ccode = h.sh(h.wmrun_path() .. " --sql " .. q)
    local l, lerr, lcode = h.sh("WMRUN_SQL_JOIN=lua " .. h.wmrun_path() .. " --sql " .. q)
    assert.are.equal(0, ccode, cerr)
    assert.are.equal(0, lcode, lerr)
    assert.is_true(select(2, c:gsub("\n", "")) >= 20)
    assert.are.equal(l, c)
  end)
end)

describe("SQL regular joins in C with table.exec.state.ttl", function()
  local wm = require("wm")
  local rj = require("wm.sql.plan.regular_join")
  local QUERY = "SELECT L.a, L.b, L.n, R.b AS rb, R.n AS rn FROM L JOIN R ON L.a = R.a"

  -- A harness over L and R (filters of its one input) joined with a TTL of 10 s, in C or
  -- (lua) on the Lua path; its rows as strings.
  local function harness(lua)
    rj.force_lua = lua
    local ok, hs = pcall(wm.testing.harness, function(input)
      local env = input.env
      local cols = {"a:INT", "b:STRING", "n:BIGINT"}
      env:create_temporary_view("L", input:filter(function(r) return r.side == "L" end), cols)
      env:create_temporary_view("R", input:filter(function(r) return r.side == "R" end), cols)
      env:execute_sql("SET 'table.exec.state.ttl' = '10 s'")
      return env:sql_query(QUERY):to_append_stream()
        :map(function(r) return table.concat({r.a, r.b, r.n, r.rb, r.rn}, " ") end)
    end)
    rj.force_lua = false
    assert(ok, hs)
    return hs
  end

  -- Random rows at random processing times (0 to 1.5 s apart: rows expire all the time, and
  -- identical rows come again before and after theirs expired).
  local function events(seed, n)
    math.randomseed(seed)
    local t, ev = 0, {}
    for i = 1, n do
      t = t + math.random(0, 1500)
      ev[i] = {t = t, r = {side = math.random(2) == 1 and "L" or "R", a = math.random(0, 3),
                           b = ({"p", "q"})[math.random(2)], n = math.random(0, 1)}}
    end
    return ev
  end
  local function feed(hs, ev, from, to)
    for i = from, to do
      hs:advance_processing_time(ev[i].t - hs:processing_time())
      hs:push(ev[i].r, ev[i].t)
    end
  end
  local function kinds(hs)
    local t = {}
    for _, m in ipairs(hs:metrics()) do t[m.kind] = m end
    return t
  end

  it("expires kept rows as the Lua path does, row for row", function()
    for seed = 1, 3 do
      local ev = events(seed, 400)
      local c, l = harness(false), harness(true)
      feed(c, ev, 1, #ev)
      feed(l, ev, 1, #ev)
      local co, lo = c:output(), l:output()
      assert.is_true(#co > 100)
      assert.are.same(lo, co)
      -- (the C operator ran)
      assert.is_table(kinds(c)["sql join"])
      assert.is_nil(kinds(l)["sql join"])
      -- 20 s later rows of a new key only: the sweep (two keys a row) frees the old keys, whose
      -- rows all expired, though no row of theirs comes again
      local t = c:processing_time() + 20000
      for i = 1, 3 do
        c:advance_processing_time(t + i - c:processing_time())
        c:push({side = "L", a = 99, b = "p", n = i}, t + i)
      end
      local m = kinds(c)["sql join"]
      assert.are.equal(1, m.keys)
      assert.are.equal(3, m.rows_left)
      assert.are.equal(0, m.rows_right)
    end
  end)

  it("a snapshot taken mid-way and restored goes on as the uninterrupted run", function()
    local ev = events(7, 300)
    local whole = harness(false)
    feed(whole, ev, 1, #ev)
    local want = whole:output()
    local first = harness(false)
    feed(first, ev, 1, 150)
    local got = first:output()
    local cp = first:snapshot()
    local second = harness(false)
    second:restore(cp)
    feed(second, ev, 151, #ev)
    for _, x in ipairs(second:output()) do got[#got + 1] = x end
    assert.is_true(#want > 100)
    assert.are.same(want, got)
  end)
end)
