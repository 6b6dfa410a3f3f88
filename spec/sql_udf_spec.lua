-- User functions in Lua (issue 29): scalar and aggregate functions registered from Lua
-- (wm.sql.register_function, register_aggregate_function) or declared in a script (CREATE
-- FUNCTION f AS 'module.name' LANGUAGE LUA); their types checked when the script is planned,
-- their run-time errors named; an aggregate's accumulators in the checkpoint.
-- Expected outputs are worked out by hand from the five rows of DATA (comments say how).
local h = require("helper")
local sql_run = require("sql_run")


-- k,v,ts: windows of 5 s hold [a 1, b 2, a 3] and [b 4, a 5]
local DATA = "a,1,1000\nb,2,2000\na,3,3000\nb,4,6000\na,5,7000\n"

local UDFS = [[
local M = {}
M.tag = {args = {"STRING", "INT"}, returns = "STRING", eval = function(k, v) return k .. "#" .. v end}
M.boom = {args = {"INT"}, returns = "INT", eval = function(v)
  if v == 3 then error("v is three") end
  return v * 10
end}
M.bad = {args = {"INT"}, returns = "INT", eval = function(v) return "x" .. v end}
M.sumsq = {args = {"INT"}, returns = "BIGINT",
  create_accumulator = function() return {s = 0} end,
  accumulate = function(acc, v) if v then acc.s = acc.s + v * v end end,
  retract = function(acc, v) if v then acc.s = acc.s - v * v end end,
  get_value = function(acc) return acc.s end}
M.joined = {args = {"STRING"}, returns = "STRING",
  create_accumulator = function() return "" end,
  accumulate = function(acc, s) if acc == "" then return s end return acc .. "|" .. s end,
  get_value = function(acc) return acc end}
M.fragile = {args = {"INT"}, returns = "BIGINT",
  create_accumulator = function() return {n = 0} end,
  accumulate = function(acc, v) if v == 4 then error("four!") end acc.n = acc.n + 1 end,
  get_value = function(acc) return acc.n end}
M.plain = function(s) return "<" .. tostring(s) .. ">" end
M.upto = {args = {"INT"}, returns = {"i INT", "sq BIGINT"}, eval = function(emit, n)
  for i = 1, n - 1 do emit({i = i, sq = i * i}) end
end}
M.letters = {args = {"STRING"}, returns = {"c STRING"}, eval = function(emit, s)
  for ch in s:gmatch(".") do emit(ch) end
end}
M.badrows = {returns = {"n INT"}, eval = function(emit) emit("x") end}
M.failing = {args = {"INT"}, returns = {"n INT"}, eval = function(emit, v)
  emit(v)
  if v == 2 then error("no two") end
end}
return M
]]

local DDL = [[
SET 'pipeline.auto-watermark-interval' = '0';
CREATE TABLE t (k STRING, v INT, ts BIGINT, rt AS TO_TIMESTAMP_LTZ(ts, 3),
  WATERMARK FOR rt AS rt - INTERVAL '1' SECOND)
  WITH ('connector' = 'filesystem', 'path' = 's.csv', 'format' = 'csv');
CREATE FUNCTION tag AS 'udfs.tag' LANGUAGE LUA;
CREATE FUNCTION boom AS 'udfs.boom' LANGUAGE LUA;
CREATE FUNCTION bad AS 'udfs.bad' LANGUAGE LUA;
CREATE FUNCTION sumsq AS 'udfs.sumsq' LANGUAGE LUA;
CREATE FUNCTION joined AS 'udfs.joined' LANGUAGE LUA;
CREATE FUNCTION fragile AS 'udfs.fragile' LANGUAGE LUA;
CREATE TEMPORARY SYSTEM FUNCTION IF NOT EXISTS plain AS 'udfs.plain' LANGUAGE LUA;
CREATE FUNCTION upto AS 'udfs.upto' LANGUAGE LUA;
CREATE FUNCTION letters AS 'udfs.letters' LANGUAGE LUA;
CREATE FUNCTION badrows AS 'udfs.badrows' LANGUAGE LUA;
CREATE FUNCTION failing AS 'udfs.failing' LANGUAGE LUA;
]]
-- the first line after DDL (it has 15)
local L = 16

local function run(query)
  return sql_run.run(DDL .. query, {["s.csv"] = DATA, ["udfs.lua"] = UDFS})
end

local function lines(text)
  local t = {}
  for l in text:gmatch("[^\n]+") do t[#t + 1] = l end
  return t
end

-- Each {query, "line:col: message"} stops before anything runs, with that message.
local function planning_errors(cases)
  for _, c in ipairs(cases) do
    local out, err, code = run(c[1] .. "\n")
    assert.are.equal(1, code, c[1])
    assert.are.equal("", out, c[1])
    assert.are.equal("job.sql:" .. c[2] .. "\n", err, c[1])
  end
end

describe("SQL user functions", function()
  it("a scalar function from CREATE FUNCTION runs in SELECT and WHERE; an untyped one takes anything", function()
    local out, err, code = run("SELECT tag(k, v) AS t, plain(v) AS p FROM t WHERE tag(k, v) <> 'b#2';\n")
    assert.are.equal(0, code, err)
    -- every row but b,2 (its tag is 'b#2'); plain(v) is "<v>"
    assert.are.equal("+I[a#1, <1>]\n+I[a#3, <3>]\n+I[b#4, <4>]\n+I[a#5, <5>]\n", out)
  end)

  it("an aggregate function in a GROUP BY without a window: +I, then -U/+U per row of the key", function()
    local out, err, code = run("SELECT k, sumsq(v) AS s, joined(CAST(v AS STRING)) AS j FROM t GROUP BY k;\n")
    assert.are.equal(0, code, err)
    -- a: 1 -> 1; 1,3 -> 1+9 = 10; 1,3,5 -> 35. b: 2 -> 4; 2,4 -> 4+16 = 20
    assert.are.equal(table.concat({
      "+I[a, 1, 1]", "+I[b, 4, 2]",
      "-U[a, 1, 1]", "+U[a, 10, 1|3]",
      "-U[b, 4, 2]", "+U[b, 20, 2|4]",
      "-U[a, 10, 1|3]", "+U[a, 35, 1|3|5]"}, "\n") .. "\n", out)
  end)

  it("an aggregate function in a tumbling group window and in a TUMBLE window TVF", function()
    -- [0, 5 s): a 1, 3 -> 10, b 2 -> 4; [5, 10 s): b 4 -> 16, a 5 -> 25
    local want = {"+I[a, 10, 1970-01-01 00:00:00.000]", "+I[a, 25, 1970-01-01 00:00:05.000]",
                  "+I[b, 16, 1970-01-01 00:00:05.000]", "+I[b, 4, 1970-01-01 00:00:00.000]"}
    local out, err, code = run("SELECT k, sumsq(v), TUMBLE_START(rt, INTERVAL '5' SECOND) FROM t "
      .. "GROUP BY TUMBLE(rt, INTERVAL '5' SECOND), k;\n")
    assert.are.equal(0, code, err)
    assert.are.same(want, h.sorted_lines(out))
    out, err, code = run("SELECT k, sumsq(v), window_start FROM TABLE(TUMBLE(TABLE t, DESCRIPTOR(rt), "
      .. "INTERVAL '5' SECOND)) GROUP BY window_start, window_end, k;\n")
    assert.are.equal(0, code, err)
    assert.are.same(want, h.sorted_lines(out))
  end)

  it("over an updating input an aggregate function retracts (its retract method)", function()
    -- the view's changelog: +I[a, 1], +I[b, 1], -U[a, 1], +U[a, 2], -U[b, 1], +U[b, 2],
    -- -U[a, 2], +U[a, 3]; sumsq over it (one group): +1 = 1, +1 = 2, -1 = 1, +4 = 5, -1 = 4,
    -- +4 = 8, -4 = 4, +9 = 13, each change a -U of the previous sum and a +U of the new one
    local out, err, code = run("CREATE VIEW c AS SELECT k, CAST(COUNT(*) AS INT) AS n FROM t GROUP BY k;\n"
      .. "SELECT sumsq(n) AS s FROM c;\n")
    assert.are.equal(0, code, err)
    assert.are.equal(table.concat({"+I[1]", "-U[1]", "+U[2]",
      "-U[2]", "+U[1]", "-U[1]", "+U[5]",
      "-U[5]", "+U[4]", "-U[4]", "+U[8]",
      "-U[8]", "+U[4]", "-U[4]", "+U[13]"}, "\n") .. "\n", out)
    -- joined has no retract: refused when planned
    out, err, code = run("CREATE VIEW c AS SELECT k, COUNT(*) AS n FROM t GROUP BY k;\n"
      .. "SELECT joined(k) FROM c;\n")
    assert.are.equal(1, code)
    assert.are.equal("", out)
    assert.are.equal("job.sql:" .. (L + 1) .. ":8: aggregate function 'joined' has no retract method: over an "
      .. "updating input (the result of a GROUP BY) it needs retract(acc, ...)\n", err)
  end)

  it("a call with the wrong argument types or count is a planning error naming the function and the place",
    function()
    local cases = {
      {"SELECT tag(v, k) FROM t;", L .. ":12: function 'tag': argument 1 must be STRING, got INT "
        .. "(declared tag(STRING, INT))"},
      {"SELECT k, tag(k) FROM t;", L .. ":11: function 'tag' takes 2 arguments (STRING, INT), got 1"},
      {"SELECT k FROM t WHERE boom(rt) > 1;", L .. ":28: function 'boom': argument 1 must be INT, got "
        .. "TIMESTAMP_LTZ(3) (declared boom(INT))"},
      {"SELECT k, sumsq(k) FROM t GROUP BY k;", L .. ":17: function 'sumsq': argument 1 must be INT, got STRING "
        .. "(declared sumsq(INT))"},
      -- a BIGINT does not narrow to INT (a declared DOUBLE would take it)
      {"SELECT boom(ts) FROM t;", L .. ":13: function 'boom': argument 1 must be INT, got BIGINT (declared boom(INT))"},
      {"SELECT k, nosuch(v) FROM t;", L .. ":11: unknown function 'NOSUCH'"},
    }
    planning_errors(cases)
  end)

  it("CREATE FUNCTION errors: a missing module or name, a built-in name, a function defined twice", function()
    local cases = {
      {"CREATE FUNCTION f AS 'udfs.nope' LANGUAGE LUA;", L .. ":22: CREATE FUNCTION f: cannot load 'udfs.nope': "
        .. "module 'udfs' has no 'nope'"},
      {"CREATE FUNCTION f AS 'noudfs.x' LANGUAGE LUA;", L .. ":22: CREATE FUNCTION f: cannot load 'noudfs.x': "
        .. "module 'noudfs' not found:"},
      {"CREATE FUNCTION f AS 'tag' LANGUAGE LUA;", L .. ":22: CREATE FUNCTION f: cannot load 'tag': expected "
        .. "'module.name' (a Lua module and the name of the function in it)"},
      {"CREATE FUNCTION upper AS 'udfs.tag' LANGUAGE LUA;", L .. ":26: CREATE FUNCTION upper: 'upper' is a "
        .. "built-in function"},
      {"CREATE FUNCTION tag AS 'udfs.tag' LANGUAGE LUA;", L .. ":17: function 'tag' already exists"},
    }
    for _, c in ipairs(cases) do
      local out, err, code = run(c[1] .. "\nSELECT k FROM t;\n")
      assert.are.equal(1, code, c[1])
      assert.are.equal("", out, c[1])
      assert.are.equal("job.sql:" .. c[2], err:sub(1, #("job.sql:" .. c[2])), c[1])
    end
  end)

  it("a function that raises stops the job: its name, the call's place, the Lua traceback, the record", function()
    local out, err, code = run("SELECT k,\n  boom(v) FROM t;\n")
    assert.are.equal(1, code)
    -- a 1 -> 10, b 2 -> 20, then a 3 raises
    assert.are.equal("+I[a, 10]\n+I[b, 20]\n", out)
    assert.matches("^job%.sql:" .. (L + 1) .. ":3: function 'boom' failed: [^\n]*udfs%.lua:4: v is three\n", err)
    assert.matches("stack traceback:\n[^\n]*udfs%.lua:4: in ", err)
    assert.matches("in operator 'map %(job%.sql:" .. L .. "%)'", err)
    assert.matches("on record", err)
    assert.matches("while reading s%.csv:3", err)
    -- an aggregate function's method too
    out, err, code = run("SELECT k, fragile(v) FROM t GROUP BY k;\n")
    assert.are.equal(1, code)
    assert.are.equal("+I[a, 1]\n+I[b, 1]\n-U[a, 1]\n+U[a, 2]\n", out)
    assert.matches("^job%.sql:" .. L .. ":11: function 'fragile' failed in accumulate: [^\n]*udfs%.lua:%d+: four!\n",
      err)
    assert.matches("while reading s%.csv:4", err)
  end)

  it("a result of another type than declared stops the job", function()
    local out, err, code = run("SELECT bad(v) FROM t;\n")
    assert.are.equal(1, code)
    assert.are.equal("", out)
    assert.matches("^job%.sql:" .. L .. ":8: function 'bad' returned string \"x1\", but it is declared to return INT\n",
      err)
  end)

  it("register_function, register_aggregate_function, register_table_function: for the scripts planned after",
    function()
    local dir = h.tmpdir()
    h.finally(function() h.rmdir(dir) end)
    local f = assert(io.open(dir .. "/s.csv", "w"))
    f:write(DATA)
    f:close()
    local out, err, code = h.run_job(string.format([==[
local sql = require("wm.sql")
sql.register_function("shout", function(s, n) return s:upper() .. ("!"):rep(n) end,
  {args = {"STRING", "INT"}, returns = "STRING"})
sql.register_aggregate_function("span", {
  create_accumulator = function() return {} end,
  accumulate = function(acc, v)
    if acc.lo == nil or v < acc.lo then acc.lo = v end
    if acc.hi == nil or v > acc.hi then acc.hi = v end
  end,
  merge = function(a, b) a.lo = math.min(a.lo, b.lo); a.hi = math.max(a.hi, b.hi) end,
  get_value = function(acc) return acc.hi - acc.lo end,
}, {args = {"BIGINT"}, returns = "BIGINT"})
sql.register_table_function("chars", function(emit, s) for c in s:gmatch(".") do emit({c = c}) end end,
  {args = {"STRING"}, returns = {"c STRING"}})
for _, bad in ipairs{{"x", function() end, {args = {"NUMBERS"}}}, {"upper", function() end}, {"1x", function() end}} do
  local ok, e = pcall(sql.register_function, bad[1], bad[2], bad[3])
  io.stderr:write(tostring(e), "\n")
end
local ok, e = pcall(sql.register_aggregate_function, "agg", {accumulate = function() end})
io.stderr:write(tostring(e), "\n")
sql.run([[
SET 'pipeline.auto-watermark-interval' = '0';
CREATE TABLE t (k STRING, v INT, ts BIGINT, rt AS TO_TIMESTAMP_LTZ(ts, 3), WATERMARK FOR rt AS rt)
  WITH ('connector' = 'filesystem', 'path' = 's.csv', 'format' = 'csv');
SELECT shout(k, v) FROM t WHERE v < 3;
SELECT k, span(ts) FROM t GROUP BY SESSION(rt, INTERVAL '3' SECOND), k;
SELECT c || '?' FROM t, LATERAL TABLE(chars(CAST(v AS STRING) || k)) WHERE v = 1;
]], {name = "job.sql", dir = %q})
sql.unregister_function("shout")
ok, e = pcall(sql.plan,
  "CREATE TABLE u (k STRING) WITH ('connector' = 'stdin', 'format' = 'csv'); SELECT shout(k, 1) FROM u")
io.stderr:write(tostring(e), "\n")
]==], dir))
    assert.are.equal(0, code, err)
    -- the sessions (gap 3 s) per key: a at 1, 3 s -> [1, 6) span 2000; a at 7 s -> 0;
    -- b at 2 s -> 0, b at 6 s -> 0. Rows v < 3: a 1, b 2
    local first = {}
    for _, l in ipairs(lines(out)) do if l:match("!") then first[#first + 1] = l end end
    assert.are.same({"+I[A!]", "+I[B!!]"}, first)
    local spans, chars = {}, {}
    for _, l in ipairs(lines(out)) do
      if l:match("%?") then chars[#chars + 1] = l elseif not l:match("!") then spans[#spans + 1] = l end
    end
    -- chars('1a') emits 1 and a
    assert.are.same({"+I[1?]", "+I[a?]"}, chars)
    table.sort(spans)
    assert.are.same({"+I[a, 0]", "+I[a, 2000]", "+I[b, 0]", "+I[b, 0]"}, spans)
    local e = lines(err)
    assert.matches("register_function: unknown type 'NUMBERS' %(argument 1%)", e[1])
    assert.matches("register_function: 'upper' is a built%-in function", e[2])
    assert.matches("register_function: expected a name %(letters, digits, _%), got 1x", e[3])
    assert.matches("register_aggregate_function: 'create_accumulator' must be a function, got nil", e[4])
    assert.matches("sql:1:82: unknown function 'SHOUT'", e[5])
  end)

  it("a SESSION window needs the aggregate function's merge", function()
    local out, err, code = run("SELECT k, sumsq(v) FROM t GROUP BY SESSION(rt, INTERVAL '1' SECOND), k;\n")
    assert.are.equal(1, code)
    assert.are.equal("", out)
    assert.are.equal("job.sql:" .. L .. ":11: aggregate function 'sumsq' has no merge method: a SESSION window merges "
      .. "accumulators, it needs merge(acc, other)\n", err)
  end)
end)

describe("SQL user functions of one env (Table API)", function()
  it("env:create_aggregate_function and env:create_function in sql_query, with a Top-N over them", function()
    local wm = require("wm")
    local env = wm.env{watermark_interval = 0}
    local s = env:from_elements({k = "a", v = 1}, {k = "a", v = 3}, {k = "b", v = 2}, {k = "a", v = 2})
    env:create_temporary_view("t", s, {"k:STRING", "v:INT"})
    env:create_aggregate_function("total", {create_accumulator = function() return 0 end,
      accumulate = function(acc, v) return acc + v end, get_value = function(acc) return acc end},
      {args = {"INT"}, returns = "BIGINT"})
    env:create_function("twice", function(v) return 2 * v end, {args = {"BIGINT"}, returns = "BIGINT"})
    local tot = env:sql_query("SELECT k, twice(total(v)) AS s FROM t GROUP BY k"):to_retract_stream():collect()
    -- the highest v per key (Top-1 on v, not a time: AppendOnlyTopN, -D then +I)
    local top = env:sql_query("SELECT k, v FROM (SELECT k, v, ROW_NUMBER() OVER (PARTITION BY k ORDER BY v DESC) "
      .. "AS rn FROM t) WHERE rn <= 1"):to_retract_stream():collect()
    local ok, err = pcall(env.sql_query, env, "SELECT twice(k) FROM t")
    assert.is_false(ok)
    assert.matches("SQL:1:14: function 'twice': argument 1 must be BIGINT, got STRING", err)
    env:execute()
    -- a: 1, 1+3 = 4, 4+2 = 6, doubled; b: 2, doubled
    assert.are.same({{true, {k = "a", s = 2}}, {false, {k = "a", s = 2}}, {true, {k = "a", s = 8}},
      {true, {k = "b", s = 4}}, {false, {k = "a", s = 8}}, {true, {k = "a", s = 12}}}, tot)
    -- a 1 in; a 3 pushes it out; b 2 in; a 2 does not sort before a 3
    assert.are.same({{true, {k = "a", v = 1}}, {false, {k = "a", v = 1}}, {true, {k = "a", v = 3}},
      {true, {k = "b", v = 2}}}, top)
  end)
end)

describe("SQL table functions", function()
  it("FROM t, LATERAL TABLE(f(x)) AS T(a, b): each row joined with every row f emits; none drops the row",
    function()
    -- upto(v) emits (i, i * i) for i = 1 .. v - 1: a 1 none; b 2 (1, 1); a 3 (1, 1), (2, 4); the
    -- WHERE (after the join) drops b 4 and a 5
    local out, err, code = run("SELECT k, v, i, sq FROM t, LATERAL TABLE(upto(v)) AS T(i, sq) WHERE v <= 3;\n")
    assert.are.equal(0, code, err)
    assert.are.equal("+I[b, 2, 1, 1]\n+I[a, 3, 1, 1]\n+I[a, 3, 2, 4]\n", out)
    -- all the rows, summed per key, each joined row one update: b 2 gives 1 (b: 1); a 3 gives
    -- 1, 4 (a: 1, 5); b 4 gives 1, 4, 9 (b: 2, 6, 15); a 5 gives 1, 4, 9, 16 (a: 6, 10, 19, 35)
    out, err, code = run("SELECT k, SUM(sq) AS s FROM t CROSS JOIN LATERAL TABLE(upto(v)) AS T(i, sq) GROUP BY k;\n")
    assert.are.equal(0, code, err)
    assert.are.equal(table.concat({"+I[b, 1]", "+I[a, 1]", "-U[a, 1]", "+U[a, 5]",
      "-U[b, 1]", "+U[b, 2]", "-U[b, 2]", "+U[b, 6]", "-U[b, 6]", "+U[b, 15]",
      "-U[a, 5]", "+U[a, 6]", "-U[a, 6]", "+U[a, 10]", "-U[a, 10]", "+U[a, 19]", "-U[a, 19]", "+U[a, 35]"}, "\n")
      .. "\n", out)
  end)

  it("LEFT JOIN LATERAL TABLE(...) ON TRUE keeps a row f emits nothing for, with NULLs; one column by value",
    function()
    local out, err, code = run("SELECT k, v, T.i FROM t LEFT JOIN LATERAL TABLE(upto(v)) AS T(i, sq) ON TRUE "
      .. "WHERE v <= 2;\n")
    assert.are.equal(0, code, err)
    assert.are.equal("+I[a, 1, <NULL>]\n+I[b, 2, 1]\n", out)
    -- letters emits each character as a value; its column is c (no alias list)
    out, err, code = run("SELECT c FROM t JOIN LATERAL TABLE(letters(tag(k, v))) ON TRUE WHERE v = 1;\n")
    assert.are.equal(0, code, err)
    assert.are.equal("+I[a]\n+I[#]\n+I[1]\n", out)
  end)

  it("table function errors: planning (not a table function, types, columns, ON) and run time", function()
    local cases = {
      {"SELECT * FROM t, LATERAL TABLE(tag(k, v));", L .. ":32: 'tag' is not a table function (LATERAL TABLE takes "
        .. "one registered with register_table_function or CREATE FUNCTION)"},
      {"SELECT * FROM t, LATERAL TABLE(nope(k));", L .. ":32: unknown table function 'NOPE'"},
      {"SELECT * FROM t, LATERAL TABLE(upto(k));", L .. ":37: function 'upto': argument 1 must be INT, got STRING "
        .. "(declared upto(INT))"},
      {"SELECT * FROM t, LATERAL TABLE(upto(v)) AS T(i);", L .. ":44: T names 1 column, but function 'upto' gives 2"},
      {"SELECT * FROM t, LATERAL TABLE(upto(v)) AS T(k, s);", L .. ":44: column 'k' of function 'upto' is also a "
        .. "column of the table: rename it (AS T(a, ...))"},
      {"SELECT * FROM t LEFT JOIN LATERAL TABLE(upto(v)) AS T(i, s) ON v > 1;", L .. ":64: LEFT JOIN LATERAL "
        .. "TABLE(...) takes ON TRUE"},
    }
    planning_errors(cases)
    local out, err, code = run("SELECT n FROM t, LATERAL TABLE(failing(v));\n")
    assert.are.equal(1, code)
    -- a 1 emits 1; b 2 emits 2 (which reaches the sink before the error), then raises
    assert.are.equal("+I[1]\n+I[2]\n", out)
    assert.matches("^job%.sql:" .. L .. ":32: function 'failing' failed: [^\n]*udfs%.lua:%d+: no two\n", err)
    assert.matches("while reading s%.csv:2", err)
    out, err, code = run("SELECT n FROM t, LATERAL TABLE(badrows());\n")
    assert.are.equal(1, code)
    assert.are.equal("", out)
    assert.matches("^job%.sql:" .. L .. ":32: function 'badrows' emitted string \"x\" for column 'n', which is "
      .. "declared INT\n", err)
  end)
end)

describe("SQL user aggregate functions and checkpoints", function()
  local dir
  before_each(function() dir = h.tmpdir() end)
  after_each(function() h.rmdir(dir) end)

  -- A generator (checkpointed: its counter) at RATE records a second into a GROUP BY and a
  -- tumbling window that both aggregate with a Lua aggregate function whose accumulator is a
  -- table (the sum of squares and the count): both are in the checkpoint.
  local job = [[
local wm = require("wm")
local sql = require("wm.sql")
sql.register_aggregate_function("sq", {
  create_accumulator = function() return {s = 0, n = 0} end,
  accumulate = function(acc, v) acc.s = acc.s + v * v; acc.n = acc.n + 1 end,
  get_value = function(acc) return acc.s * 1000 + acc.n end,
}, {args = {"INT"}, returns = "BIGINT"})
local env = wm.env{watermark_interval = 0}
local s = env:generate(function(i)
    if i == 300 and RATE then io.stderr:write("started\n") end
    return {k = "k" .. i % 3, v = i % 5, ts = i * 10}
  end, {count = 1500, rate = RATE}):set_parallelism(1)
  :assign_timestamps_and_watermarks(wm.watermarks.bounded_out_of_orderness("0ms"):with_timestamp_field("ts"))
env:create_temporary_view("t", s, {"k:STRING", "v:INT", "rt:rowtime"})
env:execute_sql("SELECT k, sq(v) AS q FROM t GROUP BY k")
env:execute_sql("SELECT k, sq(v) AS w, TUMBLE_END(rt, INTERVAL '1' SECOND) AS e FROM t "
  .. "GROUP BY TUMBLE(rt, INTERVAL '1' SECOND), k")
env:execute()
]]

  it("a job with a Lua aggregate function stopped by SIGTERM resumes where it stopped", function()
    local ref, part, rest = sql_run.stop_and_resume(dir, job)
    -- the hand-worked figures (generate's i runs from 1): key k0 takes i = 3, 6, ..., 1500, i.e.
    -- i = 3j for j = 1..500; v = 3j % 5 cycles through 3, 1, 4, 2, 0 (squares 9+1+16+4+0 = 30):
    -- 100 cycles, 3000, so its last result is 3000 * 1000 + 500. Window [0, 1 s) (ts = 10 i):
    -- i <= 99, j = 1..33: 6 cycles (180) then j = 31, 32, 33: v = 3, 1, 4 (26): 206 * 1000 + 33
    assert.matches("%+U%[k0, 3000500%]\n", ref)
    assert.matches("%+I%[k0, 206033, 1970%-01%-01 00:00:01%.000%]\n", ref)
    -- one instance, one order: the two runs print exactly the uninterrupted changelog (an
    -- accumulator started again from zero would print +I rows again, and other sums)
    assert.are.equal(ref, part .. rest)
  end)
end)
