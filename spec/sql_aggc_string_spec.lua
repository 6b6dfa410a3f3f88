-- MIN and MAX of strings in the C aggregates (core/ops/wm_sqlagg.c, docs/sql.md "Aggregates in
-- C"): the same rows as the Lua aggregates (WMRUN_SQL_AGG=lua) with NULLs, empty strings, equal
-- values, prefixes and non-ASCII text, in windows and without, arguments that are expressions
-- (Nexmark q16's MAX(DATE_FORMAT(...))), hand-worked values, and checkpointed jobs resumed.
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

-- id, ms, s (N is NULL: csv.null-literal): "" (empty), equal values, a prefix ("ab" < "abc"),
-- upper before lower case, "é" (C3 A9) after "z" (7A), U+FF21 "Ａ" (EF BC A1) before U+1D11E
-- "𝄞" (F0 9D 84 9E) by bytes (Java's String.compareTo, by UTF-16 units, has them the other
-- way: the surrogate D834 is below FF21)
local DATA = table.concat({
  "a,1000,b", "a,2000,N", "a,3000,abc", "a,4000,ab", "b,1500,", "b,2500,z", "b,3500,é", "b,4500,z",
  "c,1200,N", "c,5200,Z", "c,6000,b", "a,6500,", "a,7000,b", "b,8000,Ａ", "b,9000,𝄞", "b,9500,Ａ",
  "d,9900,N", "c,12000,zz", "a,13000,abd",
}, "\n") .. "\n"
local DDL = [[
CREATE TABLE t (id STRING NOT NULL, ms BIGINT, s STRING, rt AS TO_TIMESTAMP_LTZ(ms, 3),
  WATERMARK FOR rt AS rt - INTERVAL '1' SECOND)
WITH ('connector' = 'filesystem', 'path' = 'd.csv', 'format' = 'csv', 'csv.null-literal' = 'N');
]]
-- (the windows' C aggregates need a key column the planner knows is never NULL: the CSV decoder
-- in C, without csv.null-literal; N is then a string)
local WDDL = DDL:gsub(", 'csv.null%-literal' = 'N'", "")
local AGGS = "MIN(s) AS mi, MAX(s) AS ma, COUNT(s) AS n, MAX(s) FILTER (WHERE ms > 3000) AS late"

-- query, the C operators it has ("SQL aggregate" windows, "SQL group aggregate" GROUP BYs)
local QUERIES = {
  {"SELECT id, " .. AGGS .. " FROM t GROUP BY id;", "SQL group aggregate"},
  {"SELECT " .. AGGS .. " FROM t;", "SQL group aggregate"},
  -- arguments that are expressions, computed by the keys' C projection
  {"SELECT id, MAX(UPPER(s)) AS mu, MIN(CONCAT(s, '!')) AS mc, MAX(CASE WHEN ms > 5000 THEN s END) AS ml,"
    .. " MAX(DATE_FORMAT(rt, 'HH:mm:ss')) AS t FROM t GROUP BY id;", "SQL group aggregate"},
  {"SELECT DATE_FORMAT(rt, 'mm') AS m, MAX(DATE_FORMAT(rt, 'HH:mm:ss.SSS')) AS t, COUNT(*) AS n"
    .. " FROM t GROUP BY DATE_FORMAT(rt, 'mm');", "SQL group aggregate"},
  {"SELECT id, window_start, window_end, " .. AGGS
    .. " FROM TABLE(TUMBLE(TABLE t, DESCRIPTOR(rt), INTERVAL '5' SECOND)) GROUP BY id, window_start, window_end;",
    "SQL aggregate", WDDL},
  {"SELECT window_start, window_end, id, " .. AGGS
    .. " FROM TABLE(HOP(TABLE t, DESCRIPTOR(rt), INTERVAL '2' SECOND, INTERVAL '6' SECOND))"
    .. " GROUP BY window_start, window_end, id;", "SQL aggregate", WDDL},
  -- a session merges states: the strings of both
  {"SELECT id, SESSION_START(rt, INTERVAL '2' SECOND) AS s0, " .. AGGS
    .. " FROM t GROUP BY SESSION(rt, INTERVAL '2' SECOND), id;", "SQL aggregate", WDDL},
}

describe("SQL MIN and MAX of strings in C", function()
  it("give the rows the Lua aggregates give, in windows and without, arguments that are expressions", function()
    for _, q in ipairs(QUERIES) do
      local ddl = q[3] or DDL
      local c, cerr, ccode = run(ddl .. q[1], {["d.csv"] = DATA}, false, "--metrics --watermark-interval 0")
      local l, lerr, lcode = run(ddl .. q[1], {["d.csv"] = DATA}, true, "--metrics --watermark-interval 0")
      assert.are.equal(0, ccode, cerr)
      assert.are.equal(0, lcode, lerr)
      assert.is_true(#c > 0, q[1])
      assert.are.equal(l, c, q[1])
      assert.truthy(cerr:find(q[2] .. " (", 1, true), q[1] .. "\n" .. cerr)
      assert.is_nil(lerr:find("SQL aggregate", 1, true))
      assert.is_nil(lerr:find("SQL group aggregate", 1, true))
    end
  end)

  it("computes the hand-worked values: bytes' order, NULLs left out, the empty string a value", function()
    local out = run(DDL .. "SELECT id, " .. AGGS .. " FROM t GROUP BY id;", {["d.csv"] = DATA}, false)
    local last = {}
    for l in out:gmatch("[^\n]+") do last[l:match("^..%[(%a),")] = l end
    -- a: b, NULL, abc, ab, '' (6500), b, abd: min '', max b; 6 values; after 3 s: ab, '', b, abd
    -- (the last changes: 7000's b changes only COUNT, 13000's abd COUNT and late (b))
    assert.are.equal("+U[a, , b, 6, b]", last.a)
    -- b: '', z, é, z, Ａ, 𝄞, Ａ: by bytes 𝄞 (F0) is the largest, '' the smallest; after 3 s: é, z, Ａ, 𝄞
    assert.are.equal("+U[b, , 𝄞, 7, 𝄞]", last.b)
    -- c: NULL, Z, b, zz: min Z (5A), max zz; d: only NULL: NULLs and no count
    assert.are.equal("+U[c, Z, zz, 3, zz]", last.c)
    assert.are.equal("+I[d, <NULL>, <NULL>, 0, <NULL>]", last.d)
    -- no row for a change that changes nothing: a's 2000 (NULL) emits nothing after its +I
    local a = {}
    for l in out:gmatch("[^\n]+") do if l:find("[a,", 3, true) then a[#a + 1] = l end end
    assert.are.same({"+I[a, b, b, 1, <NULL>]", "-U[a, b, b, 1, <NULL>]", "+U[a, abc, b, 2, <NULL>]"},
      {a[1], a[2], a[3]})
  end)

  it("keeps MIN and MAX of strings over an updating input in Lua, with the Lua rows", function()
    -- (the C multiset of an updating input holds numbers: the planner keeps the Lua aggregates)
    local q = "SELECT n, MIN(id) AS mi, MAX(id) AS ma, COUNT(*) AS c FROM (SELECT id, COUNT(*) AS n FROM t"
      .. " GROUP BY id) GROUP BY n;"
    local c, cerr, ccode = run(DDL .. q, {["d.csv"] = DATA}, false, "--metrics")
    local l, lerr, lcode = run(DDL .. q, {["d.csv"] = DATA}, true)
    assert.are.equal(0, ccode, cerr)
    assert.are.equal(0, lcode, lerr)
    assert.are.equal(l, c)
    -- the inner GROUP BY in C, the outer in Lua
    assert.are.equal(1, select(2, cerr:gsub("\nSQL group aggregate %(", "")))
    -- final: a 7 rows, b 7, c 4, d 1: n 7 -> a, b; n 4 -> c; n 1 -> d
    local rows = {}
    for l2 in c:gmatch("[^\n]+") do
      local kind, body = l2:match("^([%+%-][IUD])%[(.*)%]$")
      local key = body:match("^([^,]*),")
      if kind == "-U" or kind == "-D" then rows[key] = nil else rows[key] = body end
    end
    assert.are.same({["1"] = "1, d, d, 1", ["4"] = "4, c, c, 1", ["7"] = "7, a, b, 2"}, rows)
  end)

  it("give the Lua aggregates' changelog on Nexmark q16, with no Lua per row", function()
    local sql = h.read("examples/nexmark/q16.sql"):gsub("'events.num' = '%d+'", "'events.num' = '20000'")
    local c, cerr, ccode = run(sql, {}, false, "--metrics")
    local l, lerr, lcode = run(sql, {}, true)
    assert.are.equal(0, ccode, cerr)
    assert.are.equal(0, lcode, lerr)
    assert.is_true(#c > 10000)
    assert.are.equal(l, c)
    -- the plan with Flink's sink (blackhole): C operators only, from the generator to the sink
    -- (the print sink formats a changelog in Lua)
    local p = require("wm.sql").plan((h.read("examples/nexmark/q16.sql"):gsub("'print'", "'blackhole'")),
      {name = "q16.sql"})
    local kinds = {}
    for _, n in ipairs(p.env.nodes) do kinds[#kinds + 1] = n.kind end
    for _, k in ipairs(kinds) do
      assert.is_nil(({map = 1, filter = 1, flat_map = 1, process = 1, keyed_process = 1})[k], table.concat(kinds, " "))
    end
    assert.truthy(cerr:find("SQL group aggregate (", 1, true))
  end)
end)

describe("SQL MIN and MAX of strings in C with checkpoints", function()
  local dir
  before_each(function() dir = h.tmpdir() end)
  after_each(function() h.rmdir(dir) end)

  -- s: "v" .. (37 i mod 101): strings of 2 to 4 bytes, so that a longer one grows the state
  local job = [[
local wm = require("wm")
local env = wm.env{watermark_interval = 0}
local s = env:generate(function(i)
    if i == 300 and RATE then io.stderr:write("started\n") end
    return {k = "k" .. i % 3, s = "v" .. (i * 37) % 101, v = i, ts = i * 10}
  end, {count = 1500, rate = RATE}):set_parallelism(1)
  :assign_timestamps_and_watermarks(wm.watermarks.bounded_out_of_orderness("0ms"):with_timestamp_field("ts"))
env:create_temporary_view("t", s, {"k:STRING", "s:STRING", "v:INT", "rt:rowtime"})
env:execute_sql(QUERY)
env:execute()
]]

  it("a window's strings are in its checkpoint", function()
    local q = '"SELECT window_start, MIN(s) AS mi, MAX(s) AS ma, COUNT(DISTINCT v) AS dv, MAX(k) AS mk '
      .. "FROM TABLE(TUMBLE(TABLE t, DESCRIPTOR(rt), INTERVAL '1' SECOND)) GROUP BY window_start, window_end\""
    local ref, part, rest = sql_run.stop_and_resume(dir, (job:gsub("QUERY", q)))
    -- [0, 1 s): i = 1..99, 37 i mod 101 every residue but 0 and 64: by bytes "v1" is the
    -- least ("v1" < "v10"), "v99" the largest; k0..k2
    assert.matches("%+I%[1970%-01%-01 00:00:00%.000, v1, v99, 99, k2%]\n", ref)
    assert.are.equal(ref, part .. rest)
  end)

  it("an unwindowed GROUP BY's strings and last rows are in its checkpoint", function()
    local q = '"SELECT k, MIN(s) AS mi, MAX(s) AS ma, COUNT(*) AS n FROM t GROUP BY k"'
    local ref, part, rest = sql_run.stop_and_resume(dir, (job:gsub("QUERY", q)))
    -- k0: i = 0, 3, ..., 1497 (500 rows), every residue: min "v0", max "v99"
    assert.matches("%+U%[k0, v0, v99, 500%]\n", ref)
    assert.are.equal(ref, part .. rest)
  end)
end)
