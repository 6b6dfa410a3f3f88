-- The SQL planner: which DSL operators a query becomes (the plan is built, not run).
local sql = require("wm.sql")

local DDL = [[
CREATE TABLE s (id STRING, ms BIGINT, vc INT, rt AS TO_TIMESTAMP_LTZ(ms, 3),
  WATERMARK FOR rt AS rt - INTERVAL '5' SECOND)
WITH ('connector' = 'filesystem', 'path' = 'spec/sql_planner_spec.lua', 'format' = 'csv');
]]

local function kinds(text)
  local p = sql.plan(DDL .. text, {name = "job.sql"})
  local t = {}
  for _, n in ipairs(p.env.nodes) do t[#t + 1] = n.kind end
  return t, p
end

describe("SQL planner", function()
  it("a filter query: read_lines, parse_csv, watermarks, filter, map, print", function()
    local k, p = kinds("SELECT id FROM s WHERE vc > 1;")
    -- the WHERE, the SELECT list and print's formatting in C (wm.sql.cexpr)
    assert.are.same({"read_lines", "parse_csv", "assign", "sql_rows", "sql_rows", "sql_format", "print"}, k)
    -- the CSV is parsed in C with the schema's types; NULL-able columns are optional
    local parse = p.env.nodes[2]
    assert.are.same({{name = "id", type = "string", optional = false}, {name = "ms", type = "integer", optional = true},
      {name = "vc", type = "integer", optional = true}}, parse.fields)
    assert.are.equal("fail", parse.on_error)
    -- the watermark runs in C: bounded out-of-orderness of 5 s - 1 ms on the field that
    -- holds rt (rt AS TO_TIMESTAMP_LTZ(ms, 3) is the value of ms)
    local assign = p.env.nodes[3]
    assert.are.equal("bounded", assign.strategy.kind)
    assert.are.equal(4999, assign.strategy.delay)
    assert.are.equal("ms", assign.strategy.ts_field)
    -- run-time errors name the SQL line
    assert.are.equal("job.sql:4", p.env.nodes[4].where)
  end)

  it("GROUP BY TUMBLE, k with COUNT(*) is key_by(field) and the C count() of a tumbling window", function()
    local k, p = kinds("SELECT id, COUNT(*) FROM s GROUP BY TUMBLE(rt, INTERVAL '5' SECOND), id;")
    -- (the result row shaped in C from the count record, formatted in C)
    assert.are.same({"read_lines", "parse_csv", "assign", "window", "sql_rows", "sql_format", "print"}, k)
    local w = p.env.nodes[4]
    assert.are.equal("tumbling", w.assigner.kind)
    assert.are.equal(5000, w.assigner.size)
    assert.are.same({"builtin", "count"}, {w.fn_kind, w.agg})
    assert.are.same({fields = {"id"}}, w.key)
  end)

  it("a single SUM of a NOT NULL column on a TUMBLE window is the C sum", function()
    local p = sql.plan([[CREATE TABLE n (id STRING, ms BIGINT NOT NULL, vc INT NOT NULL,
        rt AS TO_TIMESTAMP_LTZ(ms, 3), WATERMARK FOR rt AS rt - INTERVAL '1' SECOND)
      WITH ('connector' = 'filesystem', 'path' = 'spec/sql_planner_spec.lua', 'format' = 'csv');
      SELECT id, SUM(vc) FROM n GROUP BY TUMBLE(rt, INTERVAL '5' SECOND), id HAVING SUM(vc) > 2;]])
    local w = p.env.nodes[4]
    assert.are.same({"builtin", "sum", "vc"}, {w.fn_kind, w.agg, w.field})
    assert.are.equal("flat_map", p.env.nodes[5].kind)   -- shapes the row and applies HAVING
  end)

  it("aggregates the C built-ins cannot compute run as a Lua aggregate; a NULL-able key column is keyed in C",
    function()
    local _, p = kinds("SELECT id, COUNT(DISTINCT id), SUM(vc) FROM s GROUP BY TUMBLE(rt, INTERVAL '5' SECOND), id;")
    assert.are.equal("aggregate", p.env.nodes[4].fn_kind)
    assert.are.same({fields = {"id"}}, p.env.nodes[4].key)
    _, p = kinds("SELECT id, SUM(vc + 1) FROM s GROUP BY TUMBLE(rt, INTERVAL '5' SECOND), id;")
    assert.are.equal("aggregate", p.env.nodes[4].fn_kind)   -- an expression: Lua (until wm_rexpr)
    _, p = kinds("SELECT id, COUNT(*), SUM(vc) FROM s GROUP BY TUMBLE(rt, INTERVAL '5' SECOND), id;")
    assert.are.equal("sqlagg", p.env.nodes[4].fn_kind)   -- several built-ins: the C SQL aggregate
    -- a NULL-able key column: a C key_by field whose NULL is the Lua key's NULL_KEY
    _, p = kinds("SELECT vc, COUNT(*) FROM s GROUP BY TUMBLE(rt, INTERVAL '5' SECOND), vc;")
    assert.are.same({"builtin", "count"}, {p.env.nodes[4].fn_kind, p.env.nodes[4].agg})
    -- vc may be NULL: the C key of the field, NULL a key of its own (as the Lua key function's)
    assert.are.same({fields = {"vc"}, null_key = "\0<NULL>"}, p.env.nodes[4].key)
    assert.are.equal("sql_rows", p.env.nodes[5].kind)
    _, p = kinds("SELECT id, SUM(vc) FROM s GROUP BY TUMBLE(rt, INTERVAL '5' SECOND), id;")
    assert.are.equal("sqlagg", p.env.nodes[4].fn_kind)   -- vc may be NULL: not the C sum()
    _, p = kinds("SELECT vc, SUM(vc) FROM s GROUP BY TUMBLE(rt, INTERVAL '5' SECOND), vc;")
    assert.are.equal("sqlagg", p.env.nodes[4].fn_kind)   -- a NULL-able key column: in C too
    -- a NULL-able DOUBLE key stays a Lua key (C's key would give 4.0 back as 4)
    _, p = kinds("SELECT d, COUNT(*) FROM (SELECT vc * 0.5 AS d, rt FROM s) GROUP BY TUMBLE(rt, INTERVAL '5' SECOND), "
      .. "d;")
    assert.are.same({"window", "builtin"}, {p.env.nodes[5].kind, p.env.nodes[5].fn_kind})
    assert.is_function(p.env.nodes[5].key.fn)
  end)

  it("a CSV table with a computed column that is not an alias adds a step after parse_csv", function()
    local p = sql.plan([[CREATE TABLE c (a INT, d DOUBLE, b AS a * 2)
      WITH ('connector' = 'filesystem', 'path' = 'spec/sql_planner_spec.lua', 'format' = 'csv');
      SELECT b FROM c;]])
    -- in C (wm.sql.cexpr); a computed column that reads another, or a string function, in Lua
    assert.are.same({"parse_csv", "sql_rows"}, {p.env.nodes[2].kind, p.env.nodes[3].kind})
    p = sql.plan([[CREATE TABLE c (a INT, d DOUBLE, b AS a * 2, e AS b + 1)
      WITH ('connector' = 'filesystem', 'path' = 'spec/sql_planner_spec.lua', 'format' = 'csv');
      SELECT e FROM c;]])
    assert.are.same({"parse_csv", "map"}, {p.env.nodes[2].kind, p.env.nodes[3].kind})
    p = sql.plan([[CREATE TABLE c (a INT, t TIMESTAMP(3))
      WITH ('connector' = 'filesystem', 'path' = 'spec/sql_planner_spec.lua', 'format' = 'csv');
      SELECT a FROM c;]])
    assert.are.equal("flat_map", p.env.nodes[2].kind)   -- TIMESTAMP text is parsed in Lua
  end)

  it("GROUP BY HOP becomes a sliding window; SESSION a session window with merge", function()
    local _, p = kinds("SELECT id, COUNT(*) FROM s GROUP BY HOP(rt, INTERVAL '1' SECOND, INTERVAL '3' SECOND), id;")
    local w = p.env.nodes[4]
    assert.are.same({"sliding", 3000, 1000}, {w.assigner.kind, w.assigner.size, w.assigner.slide})
    assert.are.equal("count", w.agg)
    _, p = kinds("SELECT id, COUNT(*) FROM s GROUP BY SESSION(rt, INTERVAL '2' SECOND), id;")
    w = p.env.nodes[4]
    assert.are.same({"session", 2000}, {w.assigner.kind, w.assigner.gap})
    assert.are.equal("count", w.agg)
    _, p = kinds("SELECT id, MAX(vc + 0) FROM s GROUP BY SESSION(rt, INTERVAL '2' SECOND), id;")
    w = p.env.nodes[4]
    assert.is_function(w.agg.merge)
  end)

  it("a non-windowed GROUP BY becomes a keyed aggregation that emits a changelog: C's, or Lua's", function()
    local k, p = kinds("SELECT id, COUNT(*) FROM s GROUP BY id;")
    assert.are.same({"read_lines", "parse_csv", "assign", "keyed_rolling", "map", "print"}, k)
    assert.are.equal("sqlagg", p.env.nodes[4].agg)
    -- (HAVING: the Lua keyed process function)
    k = kinds("SELECT id, COUNT(*) FROM s GROUP BY id HAVING COUNT(*) > 1;")
    assert.are.same({"read_lines", "parse_csv", "assign", "keyed_process", "map", "print"}, k)
  end)

  it("a WATERMARK that is not `rt - INTERVAL` runs as a Lua generator", function()
    local p = sql.plan([[CREATE TABLE s (ms BIGINT, rt AS TO_TIMESTAMP_LTZ(ms, 3), WATERMARK FOR rt AS rt)
      WITH ('connector' = 'filesystem', 'path' = 'spec/sql_planner_spec.lua', 'format' = 'csv');
      SELECT ms FROM s;]])
    assert.are.equal("custom", p.env.nodes[3].strategy.kind)
  end)

  -- issue 13.12: each CREATE VIEW planned every view below it again (quadratic)
  local function chain(n)
    local t = {DDL, "CREATE VIEW v0 AS SELECT id, vc, rt FROM s;\n"}
    for i = 1, n do t[#t + 1] = string.format("CREATE VIEW v%d AS SELECT * FROM v%d;\n", i, i - 1) end
    return table.concat(t)
  end

  it("a chain of views plans each view's query once at its CREATE VIEW and once per use", function()
    local n = 200
    local p = sql.plan(chain(n) .. "SELECT id FROM v" .. n .. " WHERE vc > 1;", {name = "job.sql"})
    -- n + 1 CREATE VIEWs, then the query reads v_n, which reads v_(n-1), ... v0: once each
    assert.are.equal(2 * (n + 1), p.view_plans)
    -- the query is the whole chain: one projection per view (SELECT *), a filter, its
    -- projection, and print's formatting (all in C)
    local c, maps = 0, 0
    for _, node in ipairs(p.env.nodes) do
      if node.kind == "sql_rows" then c = c + 1 end
      if node.kind == "map" then maps = maps + 1 end
    end
    assert.are.equal(n + 1 + 2, c)
    assert.are.equal(0, maps)
    -- the rowtime stays a time attribute through the chain
    p = sql.plan(chain(3) .. "SELECT COUNT(*) FROM v3 GROUP BY TUMBLE(rt, INTERVAL '1' SECOND);", {name = "job.sql"})
    assert.are.equal(2 * 4, p.view_plans)
  end)

  it("a view checked against a view keeps its errors at its own CREATE VIEW", function()
    local ok, e = pcall(sql.plan, DDL .. "CREATE VIEW a AS SELECT id FROM s;\nCREATE VIEW b AS SELECT vc FROM a;",
      {name = "job.sql"})
    assert.is_false(ok)
    assert.are.equal("job.sql:5:25: unknown column 'vc'", tostring(e))
  end)

  it("2000 chained views plan", function()
    local p = sql.plan(chain(2000) .. "SELECT id FROM v2000;", {name = "job.sql"})
    assert.are.equal(2 * 2001, p.view_plans)
  end)

  it("a failure below the planner is an error at the statement, without the library's position", function()
    local env = setmetatable({nodes = {}}, {__index = function()
      return function() error("/somewhere/lua/wm/io.lua:12: boom", 0) end
    end})
    local ok, e = pcall(sql.plan, DDL .. "SELECT id FROM s;", {name = "job.sql", env = env})
    assert.is_false(ok)
    assert.are.equal("job.sql:4:1: cannot plan this statement: boom", tostring(e))
  end)
end)
